//! Behaviour tests of the flash devices: timing of single operations, page-size mapping,
//! write amplification under random and sequential rewriting, wear-out, the SSD's
//! parallelism and read/write interference, validation errors and state-file handling.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spidx::device::flash::{FlashConfig, FlashOp, Ftl, FtlParams, OpCause, OpKind, SimFlash};
use spidx::device::ssd::{SimSsd, SsdConfig};
use spidx::device::Device;
use spidx::Error;

fn small(page_size: usize, pages_per_block: u32, capacity: u64) -> FlashConfig {
    FlashConfig {
        page_size,
        pages_per_block,
        capacity,
        ..FlashConfig::flashdbsim()
    }
}

#[test]
fn presets_are_valid_and_named() {
    for c in [
        FlashConfig::flashdbsim(),
        FlashConfig::seed_table2(),
        FlashConfig::x25m(),
        FlashConfig::mlc(),
    ] {
        c.validate().unwrap();
        SimFlash::open(&c, 4096, None).unwrap();
    }
    let t2 = FlashConfig::seed_table2();
    assert_eq!((t2.page_size, t2.pages_per_block), (2048, 64));
    assert_eq!(
        (t2.read_us, t2.program_us, t2.erase_us),
        (30.0, 300.0, 2500.0)
    );
    assert_eq!(FlashConfig::x25m().pages_per_block, 256);
    assert_eq!(FlashConfig::mlc().page_size, 8192);
    let v = SsdConfig::v300();
    v.validate().unwrap();
    let d = SimSsd::open(&v, 4096, None).unwrap();
    assert_eq!(d.capacity_pages(), 480_000_000_000 / 4096);
}

#[test]
fn simflash_timing_and_page_mapping() {
    // flashdbsim: 2 KB flash pages, 25/200/1500 us, no transfer time.
    let cfg = FlashConfig::flashdbsim();
    let mut d = SimFlash::open(&cfg, 4096, None).unwrap();
    let mut buf = vec![0u8; 4096];
    d.read(0, &mut buf).unwrap();
    assert_eq!(d.device_ns(), 0, "never-written pages cost nothing");
    d.write(0, &[1u8; 4096]).unwrap();
    assert_eq!(d.device_ns(), 400_000, "a 4 KB page = 2 programs of 200 us");
    d.read(0, &mut buf).unwrap();
    assert_eq!(d.device_ns(), 450_000, "2 reads of 25 us");
    let f = d.stats().flash.unwrap();
    assert_eq!(
        (f.flash_writes, f.flash_reads, f.host_flash_writes),
        (2, 2, 2)
    );

    // 1 KB index pages on 2 KB flash pages: the second half costs a read-modify-write.
    let mut d = SimFlash::open(&cfg, 1024, None).unwrap();
    d.write(0, &[1u8; 1024]).unwrap();
    assert_eq!(d.device_ns(), 200_000, "first write: nothing to read");
    d.write(1, &[2u8; 1024]).unwrap();
    assert_eq!(d.device_ns(), 425_000, "read old page + program");
    d.write(0, &[3u8; 2048]).unwrap();
    assert_eq!(d.device_ns(), 625_000, "a full flash page needs no read");
    let mut two = vec![0u8; 2048];
    d.read(0, &mut two).unwrap();
    assert!(two.iter().all(|&b| b == 3));

    // x25m charges the transfer: 4096 B at 40 MB/s = 102.4 us.
    let mut d = SimFlash::open(&FlashConfig::x25m(), 4096, None).unwrap();
    d.write(5, &[9u8; 4096]).unwrap();
    assert_eq!(d.device_ns(), 1_002_400);
    d.read(5, &mut buf).unwrap();
    assert_eq!(d.device_ns(), 1_002_400 + 152_400);
}

#[test]
fn ftl_reports_physical_operations() {
    let mut ftl = Ftl::new(&FtlParams {
        flash_page_size: 2048,
        pages_per_block: 4,
        dies: 2,
        logical_bytes: 64 << 10,
        overprovisioning: 0.0,
        gc_reserved_blocks: 1,
        wear_level_threshold: 0,
        erase_limit: 0,
    })
    .unwrap();
    let g = ftl.geometry().clone();
    assert_eq!(g.logical_pages, 32);
    assert!(g.blocks_per_die > 4 + 1, "{g:?}");
    let mut ops: Vec<FlashOp> = Vec::new();
    ftl.write(0, &[7u8; 8192], &mut ops).unwrap();
    let dies: Vec<u32> = ops.iter().map(|o| o.die).collect();
    assert_eq!(dies, [0, 1, 0, 1], "host writes go round-robin over dies");
    assert!(ops
        .iter()
        .all(|o| o.kind == OpKind::Program && o.cause == OpCause::Host));
    ops.clear();
    ftl.write(1024, &[8u8; 512], &mut ops).unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!((ops[0].kind, ops[1].kind), (OpKind::Read, OpKind::Program));
    ops.clear();
    let mut buf = vec![0u8; 4096];
    ftl.read(0, &mut buf, &mut ops).unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(&buf[1024..1536], &[8u8; 512][..]);
    assert_eq!(buf[0], 7);
    // Rewriting everything many times makes GC erase blocks; invariants hold throughout.
    for round in 0..20u8 {
        for p in 0..32u64 {
            ops.clear();
            ftl.write(p * 2048, &[round; 2048], &mut ops).unwrap();
        }
        ftl.check_invariants().unwrap();
    }
    let s = ftl.stats();
    assert!(s.erases > 0 && s.gc_runs > 0, "{s:?}");
    assert!(
        ftl.write(64 << 10, &[0u8; 512], &mut ops).is_err(),
        "past the end"
    );
}

/// Write amplification (flash programs / host programs) of a phase.
fn phase_wa(d: &mut SimFlash, pages: impl Iterator<Item = u64>) -> (f64, u64) {
    let before = d.stats();
    let data = vec![0x5Au8; 4096];
    for p in pages {
        d.write(p, &data).unwrap();
    }
    let s = d.stats().since(&before).flash.unwrap();
    (s.write_amplification, s.erases)
}

#[test]
fn random_rewrites_amplify_sequential_do_not() {
    let cfg = FlashConfig {
        overprovisioning: 0.07,
        ..small(4096, 64, 16 << 20)
    };
    let n = (16u64 << 20) / 4096;
    let mut d = SimFlash::open(&cfg, 4096, None).unwrap();
    let (wa, _) = phase_wa(&mut d, 0..n);
    assert!((wa - 1.0).abs() < 1e-9, "first fill {wa}");
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let (wa, erases) = phase_wa(&mut d, (0..4 * n).map(|_| rng.gen_range(0..n)));
    eprintln!("random rewrites: WA {wa:.2}, {erases} erases");
    assert!(
        wa > 1.5 && erases > 0,
        "random rewrites: WA {wa}, {erases} erases"
    );
    d.check_invariants().unwrap();

    let mut d = SimFlash::open(&cfg, 4096, None).unwrap();
    phase_wa(&mut d, 0..n);
    let (wa, erases) = phase_wa(&mut d, (0..4 * n).map(|i| i % n));
    assert!(
        wa < 1.1 && erases > 0,
        "sequential rewrites: WA {wa}, {erases} erases"
    );
    d.check_invariants().unwrap();
}

#[test]
fn wearing_out_returns_device_full_and_keeps_data() {
    for dies in [1u32, 3] {
        let flash = FlashConfig {
            erase_limit: 6,
            overprovisioning: 0.5,
            wear_level_threshold: 1,
            gc_reserved_blocks: 1,
            ..small(512, 4, 16 * 512)
        };
        let ssd = SsdConfig {
            flash: flash.clone(),
            channels: dies,
            dies_per_channel: 1,
            ..SsdConfig::v300()
        };
        let mut dev: Box<dyn Device> = if dies == 1 {
            Box::new(SimFlash::open(&flash, 512, None).unwrap())
        } else {
            Box::new(SimSsd::open(&ssd, 512, None).unwrap())
        };
        let cap = dev.capacity_pages();
        let mut model = vec![vec![0u8; 512]; cap as usize];
        let mut rng = ChaCha8Rng::seed_from_u64(dies as u64);
        let mut failure = None;
        for i in 0..100_000u32 {
            let p = rng.gen_range(0..cap);
            let data = vec![(i % 251) as u8 + 1; 512];
            match dev.write(p, &data) {
                Ok(()) => model[p as usize] = data,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let err = failure.expect("the flash never wore out");
        assert!(matches!(err, Error::DeviceFull(_)), "{err}");
        assert!(err.to_string().contains("worn out"), "{err}");
        assert!(dev.write(0, &[1u8; 512]).is_err(), "still full");
        let mut buf = vec![0u8; 512];
        for p in 0..cap {
            dev.read(p, &mut buf).unwrap();
            assert_eq!(
                buf, model[p as usize],
                "page {p} after wear-out ({dies} dies)"
            );
        }
        let f = dev.stats().flash.unwrap();
        assert!(f.retired_blocks > 0 && f.erase_max <= 6, "{f:?}");
    }
}

#[test]
fn ssd_parallelism_and_interference() {
    let cfg = SsdConfig::v300();
    let mut d = SimSsd::open(&cfg, 4096, None).unwrap();
    let data = vec![1u8; 32 * 4096];
    d.write(0, &data).unwrap();
    d.sync().unwrap();
    // An idle single-page read: command + sense + channel + link.
    let t = d.device_ns();
    let mut one = vec![0u8; 4096];
    d.read(0, &mut one).unwrap();
    let single = d.device_ns() - t;
    assert!((80_000..110_000).contains(&single), "{single} ns");
    // 32 pages written in one request are spread over the 32 dies: read in parallel.
    let t = d.device_ns();
    let mut all = vec![0u8; 32 * 4096];
    d.read(0, &mut all).unwrap();
    let parallel = d.device_ns() - t;
    assert!(
        parallel < 8 * single,
        "32-page read {parallel} ns vs {single}"
    );
    assert_eq!(all, data);
    // A read behind a program on its die waits for the program.
    d.write(100, &one).unwrap(); // goes to the next die in turn: die 0 (page 0's die)
    let t = d.device_ns();
    d.read(0, &mut one).unwrap();
    let behind = d.device_ns() - t;
    assert!(behind > single + 1_000_000, "{behind} ns behind a program");
    // Reading a page still in the write cache costs no flash read (once its program
    // has finished, it does).
    d.write(101, &[5u8; 4096]).unwrap();
    let reads = d.stats().flash.unwrap().flash_reads;
    d.read(101, &mut one).unwrap();
    assert_eq!(d.stats().flash.unwrap().flash_reads, reads);
    assert!(one.iter().all(|&b| b == 5));
    d.read(100, &mut one).unwrap();
    assert_eq!(d.stats().flash.unwrap().flash_reads, reads + 1);
    // Sync drains everything: the clock passes the last program.
    d.sync().unwrap();
    let s = d.stats();
    assert_eq!((s.kind.as_str(), s.host.syncs), ("ssd", 2));
}

#[test]
fn ssd_without_cache_writes_through() {
    let cached = SsdConfig::v300();
    let through = SsdConfig {
        write_cache: 0,
        ..SsdConfig::v300()
    };
    let mut a = SimSsd::open(&cached, 4096, None).unwrap();
    let mut b = SimSsd::open(&through, 4096, None).unwrap();
    a.write(0, &[1u8; 4096]).unwrap();
    b.write(0, &[1u8; 4096]).unwrap();
    assert!(a.device_ns() < 50_000, "{}", a.device_ns());
    assert!(b.device_ns() > 1_000_000, "{}", b.device_ns());
}

/// Opens the SSD state fixture `tests/fixtures/NAME` (the files `files` of a 64 MB
/// `ssd-v300` drive written by an older version in format `format`) with `cfg`: `other` is
/// refused as a different configuration; `cfg` opens with the saved clock `clock` and 8
/// writes, reads, writes, saves in format 5 and reopens with the same clock and data.
fn reopen_ssd_fixture(
    name: &str,
    files: &[&str],
    format: u32,
    cfg: &SsdConfig,
    other: &SsdConfig,
    clock: u64,
) {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let path = dir.path().join("dev.state");
    let version = |path: &std::path::Path| {
        let head = std::fs::read(path).unwrap();
        u32::from_le_bytes(head[8..12].try_into().unwrap())
    };
    assert_eq!(version(&path), format);
    let e = SimSsd::open(other, 4096, Some(&path))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("different configuration"), "{e}");
    let mut d = SimSsd::open(cfg, 4096, Some(&path)).unwrap();
    assert_eq!(d.device_ns(), clock);
    assert_eq!(d.stats().host.write_ops, 8);
    let mut buf = vec![0u8; 4096];
    for p in 0..64 {
        d.read(p, &mut buf).unwrap();
    }
    d.write(3, &[7u8; 4096]).unwrap();
    d.persist().unwrap();
    let clock = d.device_ns();
    drop(d);
    assert_eq!(version(&path), 5);
    let mut d = SimSsd::open(cfg, 4096, Some(&path)).unwrap();
    assert_eq!(d.device_ns(), clock);
    d.read(3, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 7));
}

/// The 64 MB `ssd-v300` of the fixtures.
fn fixture_ssd() -> SsdConfig {
    SsdConfig {
        flash: FlashConfig {
            capacity: 64 << 20,
            ..SsdConfig::v300().flash
        },
        ..SsdConfig::v300()
    }
}

/// An SSD state saved before `flush_us` existed (format 3, `tests/fixtures/ssd-format3`:
/// `spidx iotest --device ssd-v300 --device-param flash.capacity=64MB --state dev.state
/// --pattern randwrite --ops 8 --span 256KB --no-prefill --seed 3` by that version) opens
/// with a flush of 0, its clock and counters as saved, is saved in the current format and
/// reopens; a drive with another flush is a different configuration.
#[test]
fn ssd_states_saved_before_flush_us_still_open() {
    let cfg = fixture_ssd();
    let other = SsdConfig {
        flush_us: 5.0,
        ..cfg.clone()
    };
    let files = ["dev.state", "dev.state.pages-1", "dev.state.ftl-1"];
    reopen_ssd_fixture("ssd-format3", &files, 3, &cfg, &other, 1_377_256);
}

/// An SSD state saved before the sequential requests' savings existed (format 4,
/// `tests/fixtures/ssd-format4`: `spidx iotest --device ssd-v300 --device-param
/// flash.capacity=64MB --device-param flush_us=30 --state dev.state --pattern randwrite
/// --ops 8 --span 256KB --no-prefill --seed 3` by that version) opens with both savings 0,
/// its flush, clock and counters as saved, is saved in the current format and reopens; a
/// drive with a saving is a different configuration.
#[test]
fn ssd_states_saved_before_seq_savings_still_open() {
    let cfg = SsdConfig {
        flush_us: 30.0,
        ..fixture_ssd()
    };
    let other = SsdConfig {
        seq_read_saving_us: 5.0,
        ..cfg.clone()
    };
    let files = [
        "dev.state",
        "dev.state.pages-1",
        "dev.state.idx-1",
        "dev.state.ftl-1",
    ];
    reopen_ssd_fixture("ssd-format4", &files, 4, &cfg, &other, 1_407_256);
}

/// A write that starts where the previous request ended saves `seq_write_saving_us` of
/// its command, a read `seq_read_saving_us`; a request elsewhere and a drive without the
/// savings do not.
#[test]
fn ssd_sequential_requests_save_part_of_their_command() {
    let plain = SsdConfig {
        write_cache: 0,
        ..SsdConfig::v300()
    };
    let merging = SsdConfig {
        seq_read_saving_us: 4.0,
        seq_write_saving_us: 10.0,
        ..plain.clone()
    };
    // Per request: the time it added to the device clock.
    let run = |cfg: &SsdConfig| -> Vec<u64> {
        let mut d = SimSsd::open(cfg, 4096, None).unwrap();
        let mut buf = vec![3u8; 4096];
        let mut out = Vec::new();
        for (page, write) in [
            (10, true),  // first: random
            (11, true),  // continues the write
            (20, true),  // random
            (21, false), // a read continuing it
            (22, true),  // a write continuing the read
            (5, true),   // random
            (40, false), // a random read
        ] {
            let t = d.device_ns();
            if write {
                d.write(page, &buf).unwrap();
            } else {
                d.read(page, &mut buf).unwrap();
            }
            out.push(d.device_ns() - t);
        }
        out
    };
    let (a, b) = (run(&plain), run(&merging));
    let saved: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    assert_eq!(saved, [0, 10_000, 0, 4_000, 10_000, 0, 0], "{a:?} vs {b:?}");
}

/// A sync pays `flush_us` after the drain, on top of its command; nothing else does.
#[test]
fn ssd_sync_pays_the_flush_round_trip() {
    let plain = SsdConfig {
        write_cache: 0,
        ..SsdConfig::v300()
    };
    let flushing = SsdConfig {
        flush_us: 250.0,
        ..plain.clone()
    };
    let mut times = Vec::new();
    for cfg in [&plain, &flushing] {
        let mut d = SimSsd::open(cfg, 4096, None).unwrap();
        d.write(0, &[1u8; 4096]).unwrap();
        let written = d.device_ns();
        d.sync().unwrap();
        times.push((written, d.device_ns() - written));
    }
    assert_eq!(times[0].0, times[1].0, "writes do not pay the flush");
    assert_eq!(times[1].1, times[0].1 + 250_000, "{times:?}");
}

#[test]
fn bad_page_sizes_and_requests_are_errors() {
    let cfg = small(2048, 4, 64 << 10);
    for ps in [0, 1000, 100 << 20] {
        assert!(SimFlash::open(&cfg, ps, None).is_err(), "page size {ps}");
        assert!(SimSsd::open(&SsdConfig::v300(), ps, None).is_err());
    }
    assert!(SimFlash::open(&cfg, 128 << 10, None)
        .unwrap_err()
        .to_string()
        .contains("larger than"));
    let mut d = SimFlash::open(&cfg, 4096, None).unwrap();
    let mut buf = vec![0u8; 4096];
    assert!(matches!(
        d.read(16, &mut buf),
        Err(Error::OutOfRange { .. })
    ));
    assert!(d.write(15, &[0u8; 8192]).is_err());
    assert!(d.write(0, &[0u8; 100]).is_err());
    assert!(d.read(0, &mut []).is_err());
    let mut s = SimSsd::open(&SsdConfig::v300(), 4096, None).unwrap();
    assert!(s.read(u64::MAX, &mut buf).is_err());
}

#[test]
fn invalid_configs_name_the_parameter() {
    let ok = small(2048, 64, 1 << 30);
    let cases: Vec<(&str, FlashConfig)> = vec![
        (
            "page_size",
            FlashConfig {
                page_size: 0,
                ..ok.clone()
            },
        ),
        (
            "page_size",
            FlashConfig {
                page_size: 1000,
                ..ok.clone()
            },
        ),
        (
            "pages_per_block",
            FlashConfig {
                pages_per_block: 0,
                ..ok.clone()
            },
        ),
        (
            "read_us",
            FlashConfig {
                read_us: f64::NAN,
                ..ok.clone()
            },
        ),
        (
            "program_us",
            FlashConfig {
                program_us: -1.0,
                ..ok.clone()
            },
        ),
        (
            "erase_us",
            FlashConfig {
                erase_us: f64::INFINITY,
                ..ok.clone()
            },
        ),
        (
            "transfer_mb_s",
            FlashConfig {
                transfer_mb_s: -5.0,
                ..ok.clone()
            },
        ),
        (
            "overprovisioning",
            FlashConfig {
                overprovisioning: -0.1,
                ..ok.clone()
            },
        ),
        (
            "overprovisioning",
            FlashConfig {
                overprovisioning: 11.0,
                ..ok.clone()
            },
        ),
        (
            "capacity",
            FlashConfig {
                capacity: 4096,
                ..ok.clone()
            },
        ),
        (
            "gc_reserved_blocks",
            FlashConfig {
                gc_reserved_blocks: 0,
                ..ok.clone()
            },
        ),
        (
            "capacity",
            FlashConfig {
                capacity: 1 << 50,
                page_size: 512,
                ..ok.clone()
            },
        ),
    ];
    for (name, c) in cases {
        let e = SimFlash::open(&c, 2048, None).expect_err(name).to_string();
        assert!(e.contains(name), "{name}: {e}");
    }
    let v = SsdConfig::v300();
    let cases: Vec<(&str, SsdConfig)> = vec![
        (
            "channels",
            SsdConfig {
                channels: 0,
                ..v.clone()
            },
        ),
        (
            "dies_per_channel",
            SsdConfig {
                dies_per_channel: 0,
                ..v.clone()
            },
        ),
        (
            "queue_depth",
            SsdConfig {
                queue_depth: 0,
                ..v.clone()
            },
        ),
        (
            "host_mb_s",
            SsdConfig {
                host_mb_s: f64::NAN,
                ..v.clone()
            },
        ),
        (
            "channel_mb_s",
            SsdConfig {
                channel_mb_s: -1.0,
                ..v.clone()
            },
        ),
        (
            "command_overhead_us",
            SsdConfig {
                command_overhead_us: 1e300,
                ..v.clone()
            },
        ),
        (
            "write_cache",
            SsdConfig {
                write_cache: 100,
                ..v.clone()
            },
        ),
        (
            "flush_us",
            SsdConfig {
                flush_us: f64::NAN,
                ..v.clone()
            },
        ),
        (
            "seq_write_saving_us",
            SsdConfig {
                seq_write_saving_us: v.command_overhead_us + 1.0,
                ..v.clone()
            },
        ),
        (
            "seq_write_saving_us",
            SsdConfig {
                seq_write_saving_us: -1.0,
                ..v.clone()
            },
        ),
        (
            "seq_read_saving_us",
            SsdConfig {
                seq_read_saving_us: f64::INFINITY,
                ..v.clone()
            },
        ),
        (
            "read_us",
            SsdConfig {
                flash: FlashConfig {
                    read_us: -1.0,
                    ..v.flash.clone()
                },
                ..v.clone()
            },
        ),
    ];
    for (name, c) in cases {
        let e = SimSsd::open(&c, 4096, None).expect_err(name).to_string();
        assert!(e.contains(name), "{name}: {e}");
    }
    // Unknown fields in a configuration file are rejected.
    let mut json = serde_json::to_value(FlashConfig::x25m()).unwrap();
    json["pagesize"] = 4096.into();
    assert!(serde_json::from_value::<FlashConfig>(json).is_err());
    let mut json = serde_json::to_value(SsdConfig::v300()).unwrap();
    json["flash"]["bogus"] = 1.into();
    assert!(serde_json::from_value::<SsdConfig>(json).is_err());
}

#[test]
fn state_files_reopen_and_reject_mismatch_and_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flash.state");
    let cfg = small(2048, 8, 1 << 20);
    let mut d = SimFlash::open(&cfg, 4096, Some(&path)).unwrap();
    for p in 0..200u64 {
        d.write(p % 100, &vec![p as u8; 4096]).unwrap();
    }
    d.persist().unwrap();
    let (stats, clock) = (d.stats(), d.device_ns());
    drop(d);
    let mut e = SimFlash::open(&cfg, 4096, Some(&path)).unwrap();
    assert_eq!((e.stats().flash, e.device_ns()), (stats.flash, clock));
    let mut buf = vec![0u8; 4096];
    e.read(42, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 142));

    let other = FlashConfig {
        read_us: 26.0,
        ..cfg.clone()
    };
    let err = SimFlash::open(&other, 4096, Some(&path)).err().unwrap();
    assert!(err.to_string().contains("different configuration"), "{err}");
    assert!(SimFlash::open(&cfg, 2048, Some(&path)).is_err());
    let ssd = SsdConfig {
        flash: cfg.clone(),
        ..SsdConfig::v300()
    };
    assert!(
        SimSsd::open(&ssd, 4096, Some(&path)).is_err(),
        "a simflash state"
    );

    let bytes = std::fs::read(&path).unwrap();
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    std::fs::write(&path, &flipped).unwrap();
    let err = SimFlash::open(&cfg, 4096, Some(&path)).err().unwrap();
    assert!(err.to_string().contains("checksum"), "{err}");
    std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
    let err = SimFlash::open(&cfg, 4096, Some(&path)).err().unwrap();
    assert!(err.to_string().contains("truncated"), "{err}");
    std::fs::write(&path, b"not a state").unwrap();
    assert!(SimFlash::open(&cfg, 4096, Some(&path)).is_err());

    // The SSD reopens with its timing state: continuing gives the same clock.
    let spath = dir.path().join("ssd.state");
    let mut a = SimSsd::open(&ssd, 4096, Some(&spath)).unwrap();
    let mut b = SimSsd::open(&ssd, 4096, None).unwrap();
    for p in 0..50u64 {
        a.write(p * 3 % 200, &[p as u8; 4096]).unwrap();
        b.write(p * 3 % 200, &[p as u8; 4096]).unwrap();
    }
    a.persist().unwrap();
    let mut a = SimSsd::open(&ssd, 4096, Some(&spath)).unwrap();
    for p in 0..50u64 {
        a.read(p, &mut buf).unwrap();
        b.read(p, &mut buf).unwrap();
    }
    assert_eq!(a.device_ns(), b.device_ns());
    assert_eq!(a.stats().flash, b.stats().flash);
}
