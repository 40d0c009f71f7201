//! `Device::read_unused` (a read whose bytes the caller does not use) is the same request
//! as `Device::read` in every count, clock and trace, on every device preset and through
//! every wrapper, and changes nothing stored.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spidx::device::crash::{CrashDevice, Tear};
use spidx::device::overlay::ReadOnlyOverlay;
use spidx::device::partition::Partition;
use spidx::device::preset;
use spidx::device::shared::SharedDevice;
use spidx::device::tap::{Tap, TapLog};
use spidx::device::Device;

const PS: usize = 4096;
/// Pages the test touches (near the start of every device).
const SPAN: u64 = 64;

/// The device stacks tested over `base`: the device itself and each wrapper around it.
fn stacks(name: &str) -> Vec<(String, Box<dyn Device>, Option<TapLog>)> {
    let open = || {
        preset::find(name)
            .unwrap_or_else(|| panic!("preset {name}"))
            .config
            .open(PS, None)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let log = TapLog::new();
    log.start();
    let (_, second) = Partition::split(open(), 8).unwrap();
    vec![
        (name.to_string(), open(), None),
        (
            format!("tap({name})"),
            Box::new(Tap::new(open(), log.clone())),
            Some(log),
        ),
        (format!("partition({name})"), Box::new(second), None),
        (
            format!("crash({name})"),
            Box::new(CrashDevice::new(open(), 40, Tear::Sectors(3))),
            None,
        ),
        (
            format!("overlay({name})"),
            Box::new(ReadOnlyOverlay::new(open())),
            None,
        ),
        (
            format!("shared({name})"),
            Box::new(SharedDevice::new(open())),
            None,
        ),
    ]
}

#[test]
fn unused_reads_are_the_same_requests_as_reads_on_every_device() {
    for p in preset::names() {
        let twins = stacks(p).into_iter().zip(stacks(p));
        for ((what, mut read, log_a), (_, mut unused, log_b)) in twins {
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let mut buf = vec![0u8; PS * 4];
            let mut unused_reads = 0;
            for step in 0..300 {
                let page = rng.gen_range(0..SPAN);
                let pages = rng.gen_range(1..=4u64);
                let len = pages as usize * PS;
                if rng.gen_bool(0.4) {
                    let data: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    read.write(page, &data).unwrap();
                    unused.write(page, &data).unwrap();
                } else {
                    read.read(page, &mut buf[..len]).unwrap();
                    unused.read_unused(page, pages).unwrap();
                    unused_reads += 1;
                }
                assert_eq!(read.stats(), unused.stats(), "{what}, step {step}");
                assert_eq!(read.device_ns(), unused.device_ns(), "{what}, step {step}");
            }
            assert!(unused_reads > 100, "{what}");
            if let (Some(a), Some(b)) = (log_a, log_b) {
                assert_eq!(a.take(), b.take(), "{what}: traced requests");
            }
            // Nothing stored changed.
            let mut other = vec![0u8; PS];
            for page in 0..SPAN {
                read.read(page, &mut buf[..PS]).unwrap();
                unused.read(page, &mut other).unwrap();
                assert_eq!(buf[..PS], other[..], "{what}, page {page}");
            }
        }
    }
}

#[test]
fn unused_reads_out_of_range_are_errors_and_count_nothing() {
    for p in preset::names() {
        let mut d = preset::find(p).unwrap().config.open(PS, None).unwrap();
        let before = d.stats();
        let cap = d.capacity_pages();
        assert!(d.read_unused(cap, 1).is_err(), "{p}");
        assert!(d.read_unused(cap - 1, 2).is_err(), "{p}");
        assert!(d.read_unused(0, 0).is_err(), "{p}: an empty request");
        assert!(d.read_unused(0, u64::MAX).is_err(), "{p}");
        assert_eq!(before, d.stats(), "{p}");
    }
}
