//! Property tests of the flash devices (SimFlash and the SSD model) on tiny geometries
//! where garbage collection and wear levelling happen all the time: random sequences of
//! writes, reads, syncs, cache drops and reopenings are checked against a plain model of
//! the last written bytes, with the FTL invariants checked after every step.

use std::path::Path;

use proptest::prelude::*;
use spidx::device::flash::{FlashConfig, SimFlash};
use spidx::device::ssd::{SimSsd, SsdConfig};
use spidx::device::{Device, DeviceStats};
use spidx::Result;

/// A flash device under test: the Device interface plus the invariant checker.
trait Checked: Device {
    fn check(&self) -> Result<()>;
}

impl Checked for SimFlash {
    fn check(&self) -> Result<()> {
        self.check_invariants()
    }
}

impl Checked for SimSsd {
    fn check(&self) -> Result<()> {
        self.check_invariants()
    }
}

/// 1 KB flash pages, 4 pages per block, 16 KB visible: a handful of blocks.
fn tiny_flash() -> FlashConfig {
    FlashConfig {
        page_size: 1024,
        pages_per_block: 4,
        read_us: 10.0,
        program_us: 100.0,
        erase_us: 1000.0,
        transfer_mb_s: 100.0,
        capacity: 16 << 10,
        overprovisioning: 0.25,
        gc_reserved_blocks: 1,
        wear_level_threshold: 2,
        erase_limit: 0,
        seed: 1,
    }
}

fn tiny_ssd() -> SsdConfig {
    SsdConfig {
        flash: tiny_flash(),
        channels: 2,
        dies_per_channel: 1,
        channel_mb_s: 200.0,
        host_mb_s: 500.0,
        command_overhead_us: 5.0,
        write_cache: 3 << 10,
        queue_depth: 2,
        flush_us: 0.0,
        seq_read_saving_us: 0.0,
        seq_write_saving_us: 0.0,
    }
}

#[derive(Debug, Clone)]
enum Op {
    Write { page: u64, pages: u64, fill: u8 },
    Read { page: u64, pages: u64 },
    Sync,
    DropCaches,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..64, 1u64..5, any::<u8>()).prop_map(|(page, pages, fill)| Op::Write { page, pages, fill }),
        3 => (0u64..64, 1u64..5).prop_map(|(page, pages)| Op::Read { page, pages }),
        1 => Just(Op::Sync),
        1 => Just(Op::DropCaches),
        1 => Just(Op::Reopen),
    ]
}

/// Bytes of a write: differ per request and per position.
fn pattern(fill: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| fill.wrapping_add((i / 7) as u8) ^ (i as u8))
        .collect()
}

/// Runs `ops` on a device opened by `open` (which reopens from the state file), comparing
/// every read with the model and checking invariants after every step.
fn run<D: Checked>(
    ops: &[Op],
    page_size: usize,
    open: impl Fn(&Path) -> Result<D>,
) -> std::result::Result<DeviceStats, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut dev = open(&state).unwrap();
    let cap = dev.capacity_pages();
    let mut model = vec![0u8; cap as usize * page_size];
    for op in ops {
        match *op {
            Op::Write { page, pages, fill } => {
                let page = page % cap;
                let pages = pages.min(cap - page);
                let data = pattern(fill, pages as usize * page_size);
                dev.write(page, &data).unwrap();
                let at = page as usize * page_size;
                model[at..at + data.len()].copy_from_slice(&data);
            }
            Op::Read { page, pages } => {
                let page = page % cap;
                let pages = pages.min(cap - page);
                let mut buf = vec![0xEEu8; pages as usize * page_size];
                dev.read(page, &mut buf).unwrap();
                let at = page as usize * page_size;
                prop_assert!(
                    buf == model[at..at + buf.len()],
                    "read of page {page} differs"
                );
            }
            Op::Sync => dev.sync().unwrap(),
            Op::DropCaches => dev.drop_caches().unwrap(),
            Op::Reopen => {
                let before = dev.stats();
                dev.persist().unwrap();
                drop(dev);
                dev = open(&state).unwrap();
                let after = dev.stats();
                prop_assert_eq!(before.flash, after.flash);
                prop_assert_eq!(before.device_ns, after.device_ns);
            }
        }
        if let Err(e) = dev.check() {
            return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
        }
    }
    // Everything written reads back at the end, page by page.
    let mut buf = vec![0u8; page_size];
    for p in 0..cap {
        dev.read(p, &mut buf).unwrap();
        let at = p as usize * page_size;
        prop_assert!(buf == model[at..at + page_size], "final read of page {p}");
    }
    Ok(dev.stats())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn simflash_matches_model(
        page_size in prop::sample::select(vec![512usize, 1024, 1536, 2048, 4096]),
        ops in prop::collection::vec(op(), 1..160),
    ) {
        let cfg = tiny_flash();
        let stats = run(&ops, page_size, |p| SimFlash::open(&cfg, page_size, Some(p)))?;
        prop_assert_eq!(stats.kind, "simflash");
    }

    #[test]
    fn ssd_matches_model(
        page_size in prop::sample::select(vec![512usize, 1024, 1536, 2048, 4096]),
        queue_depth in 1u32..4,
        ops in prop::collection::vec(op(), 1..160),
    ) {
        let cfg = SsdConfig { queue_depth, ..tiny_ssd() };
        let stats = run(&ops, page_size, |p| SimSsd::open(&cfg, page_size, Some(p)))?;
        prop_assert_eq!(stats.kind, "ssd");
    }

    /// The same seed and operations give identical statistics and clocks.
    #[test]
    fn deterministic(ops in prop::collection::vec(op(), 1..80)) {
        let flash = tiny_flash();
        let a = run(&ops, 1024, |p| SimFlash::open(&flash, 1024, Some(p)))?;
        let b = run(&ops, 1024, |p| SimFlash::open(&flash, 1024, Some(p)))?;
        prop_assert_eq!(a, b);
        let ssd = tiny_ssd();
        let a = run(&ops, 2048, |p| SimSsd::open(&ssd, 2048, Some(p)))?;
        let b = run(&ops, 2048, |p| SimSsd::open(&ssd, 2048, Some(p)))?;
        prop_assert_eq!(a, b);
    }
}

/// Long random runs really exercise GC and static wear levelling on the tiny geometry.
#[test]
fn gc_and_wear_levelling_happen() {
    let ops: Vec<Op> = (0..3000u64)
        .map(|i| Op::Write {
            page: (i * 7919) % 13 + if i % 5 == 0 { 13 } else { 0 },
            pages: 1,
            fill: i as u8,
        })
        .collect();
    let cfg = tiny_flash();
    let stats = run(&ops, 1024, |p| SimFlash::open(&cfg, 1024, Some(p))).unwrap();
    let f = stats.flash.unwrap();
    assert!(f.gc_runs > 100 && f.erases > 100, "{f:?}");
    assert!(f.wl_copies > 0, "static wear levelling never ran: {f:?}");
    assert!(f.erase_max - f.erase_min <= 2 * 2 + 2, "erase spread {f:?}");
}
