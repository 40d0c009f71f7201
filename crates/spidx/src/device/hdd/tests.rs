use std::collections::HashMap;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::device::pages::{save_state_as, HDD_WRITE_OVERHEAD_FORMAT, INDEX_PAGED_FORMAT};

const PS: usize = 4096;

fn open(cfg: &HddConfig) -> SimHdd {
    SimHdd::open(cfg, PS, None).unwrap()
}

/// Runs `ops` single-page reads at the pages `next` yields; returns ops per device second.
fn read_rate(d: &mut SimHdd, ops: usize, mut next: impl FnMut() -> u64) -> f64 {
    let mut buf = vec![0u8; PS];
    let t0 = d.device_ns();
    for _ in 0..ops {
        d.read(next(), &mut buf).unwrap();
    }
    ops as f64 / ((d.device_ns() - t0) as f64 * 1e-9)
}

fn random_reads(d: &mut SimHdd, span_pages: u64, ops: usize, seed: u64) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    read_rate(d, ops, || rng.gen_range(0..span_pages))
}

fn small_zoned() -> HddConfig {
    HddConfig {
        capacity: 256 << 20,
        heads: 2,
        zones: 4,
        outer_mb_s: 100.0,
        inner_mb_s: 50.0,
        cache_kb: 1024,
        segments: 4,
        read_ahead_kb: 128,
        ..HddConfig::desktop_7200()
    }
}

#[test]
fn preset_is_valid_and_serde_round_trips() {
    let cfg = HddConfig::desktop_7200();
    cfg.validate().unwrap();
    let text = toml::to_string(&cfg).unwrap();
    let back: HddConfig = toml::from_str(&text).unwrap();
    assert_eq!(back, cfg);
    let partial: HddConfig = toml::from_str("rpm = 5400\nwrite_cache = false").unwrap();
    assert_eq!(partial.rpm, 5400);
    assert_eq!(partial.avg_seek_ms, 8.9);
    assert!(toml::from_str::<HddConfig>("rmp = 5400").is_err());
    let d = open(&cfg);
    assert_eq!(d.capacity_pages(), 3_907_029_168 * 512 / 4096);
    assert_eq!(d.revolution_ns(), 8_333_333);
    assert!(d.cylinders() > 100_000, "{} cylinders", d.cylinders());
}

#[test]
fn invalid_parameters_are_named() {
    let base = HddConfig::desktop_7200();
    let cases: Vec<(HddConfig, &str)> = vec![
        (
            HddConfig {
                rpm: 0,
                ..base.clone()
            },
            "rpm",
        ),
        (
            HddConfig {
                heads: 0,
                ..base.clone()
            },
            "heads",
        ),
        (
            HddConfig {
                capacity: 1000,
                ..base.clone()
            },
            "capacity",
        ),
        (
            HddConfig {
                inner_mb_s: 200.0,
                ..base.clone()
            },
            "inner_mb_s",
        ),
        (
            HddConfig {
                outer_mb_s: f64::NAN,
                ..base.clone()
            },
            "outer_mb_s",
        ),
        (
            HddConfig {
                avg_seek_ms: 30.0,
                ..base.clone()
            },
            "avg_seek_ms",
        ),
        (
            HddConfig {
                avg_seek_ms: 2.5,
                ..base.clone()
            },
            "avg_seek_ms",
        ),
        (
            HddConfig {
                avg_seek_ms: 18.0,
                ..base.clone()
            },
            "avg_seek_ms",
        ),
        (
            HddConfig {
                track_to_track_ms: -1.0,
                ..base.clone()
            },
            "track_to_track_ms",
        ),
        (
            HddConfig {
                segments: 0,
                ..base.clone()
            },
            "segments",
        ),
        (
            HddConfig {
                read_ahead_kb: 4096,
                ..base.clone()
            },
            "read_ahead_kb",
        ),
        (
            HddConfig {
                interface_mb_s: 0.0,
                ..base.clone()
            },
            "interface_mb_s",
        ),
        (
            HddConfig {
                hit_overhead_us: -3.0,
                ..base.clone()
            },
            "hit_overhead_us",
        ),
    ];
    for (cfg, name) in cases {
        let msg = cfg.validate().unwrap_err().to_string();
        assert!(msg.contains(name), "{name}: {msg}");
        assert!(SimHdd::open(&cfg, PS, None).is_err());
    }
    assert!(SimHdd::open(&base, 1000, None).is_err(), "bad page size");
}

#[test]
fn seek_curve_fits_datasheet_points() {
    let d = open(&HddConfig::desktop_7200());
    let c = *d.seek_curve();
    let n = d.cylinders();
    assert_eq!(c.time_ns(0), 0);
    assert_eq!(c.time_ns(1), 2_000_000);
    assert!(c.time_ns(n - 1).abs_diff(21_000_000) <= 1);
    assert!((c.mean_ns() - 8.9e6).abs() < 1.0, "{}", c.mean_ns());
    let b = c.boundary_cylinders();
    assert!(b > 1.0 && b < (n - 1) as f64, "boundary {b}");
    // Monotone everywhere (dense near the start and the boundary, strided elsewhere).
    let mut prev = 0;
    let mut d_ = 0u64;
    while d_ < n {
        let t = c.time_ns(d_);
        assert!(t >= prev, "seek({d_}) = {t} < {prev}");
        prev = t;
        d_ += if d_ < 5000 || (d_ as f64 - b).abs() < 2000.0 {
            1
        } else {
            97
        };
    }
    // Continuous at the boundary: neighbouring distances differ by at most the slope.
    let k = b.floor() as u64;
    let jump = c.time_ns(k + 1) - c.time_ns(k);
    assert!(jump < 1_000, "jump of {jump} ns at the boundary");
}

#[test]
fn average_seek_over_random_positions_matches_config() {
    let d = open(&HddConfig::desktop_7200());
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let pages = d.capacity_pages();
    let n = 200_000;
    let mut sum = 0u64;
    for _ in 0..n {
        let a = d.cylinder_of_page(rng.gen_range(0..pages));
        let b = d.cylinder_of_page(rng.gen_range(0..pages));
        sum += d.seek_curve().time_ns(a.abs_diff(b));
    }
    let avg_ms = sum as f64 / n as f64 / 1e6;
    assert!((avg_ms - 8.9).abs() < 0.1, "average seek {avg_ms} ms");
}

#[test]
fn random_iops_and_sequential_speedup() {
    let cfg = HddConfig::desktop_7200();
    let mut d = open(&cfg);
    let cap = d.capacity_pages();
    let full = random_reads(&mut d, cap, 2000, 1);
    assert!(
        (70.0..=200.0).contains(&full),
        "full-disk random IOPS {full}"
    );
    let st = d.stats().hdd.unwrap();
    let avg_rot = st.rotation_ns as f64 / 2000.0 / 1e6;
    assert!(
        (avg_rot - 4.17).abs() < 0.3,
        "average rotational latency {avg_rot} ms"
    );

    let span = (2u64 << 30) / PS as u64; // 2 GB
    let mut d = open(&cfg);
    let random = random_reads(&mut d, span, 2000, 2);
    assert!(
        (70.0..=200.0).contains(&random),
        "2 GB-span random IOPS {random}"
    );
    let mut d = open(&cfg);
    let mut p = 1000;
    let seq = read_rate(&mut d, 2000, || {
        p += 1;
        p
    });
    assert!(
        seq >= 20.0 * random,
        "sequential {seq}/s vs random {random}/s"
    );
    let hits = d.stats().hdd.unwrap().buffer_hits;
    assert!(hits >= 1990, "{hits} buffer hits");
    // One 4 KB request at a time, sequential reads are bound by the command overhead of a
    // buffer hit (0.1 ms, the Deskstar 7K3000's), not the media rate: about 4096 B /
    // (100 µs + the interface transfer) = 38 MB/s.
    let mb_s = seq * PS as f64 / 1e6;
    assert!((30.0..=40.0).contains(&mb_s), "sequential {mb_s} MB/s");
}

#[test]
fn large_transfers_run_at_media_rate_and_zones_differ() {
    let mut d = open(&small_zoned());
    let mut buf = vec![0u8; 8 << 20];
    let rate = |d: &mut SimHdd, page: u64, buf: &mut [u8]| {
        d.drop_caches().unwrap();
        let t0 = d.device_ns();
        d.read(page, buf).unwrap();
        buf.len() as f64 / ((d.device_ns() - t0) as f64 * 1e-3)
    };
    let outer = rate(&mut d, 0, &mut buf);
    let last = d.capacity_pages() - 2048;
    let inner = rate(&mut d, last, &mut buf);
    assert!(outer > 85.0 && outer <= 100.0, "outer {outer} MB/s");
    assert!(inner > 40.0 && inner <= 56.0, "inner {inner} MB/s");
}

#[test]
fn write_cache_and_sync() {
    let span = HddConfig::desktop_7200().capacity / PS as u64;
    let page = vec![7u8; PS];
    let run = |write_cache: bool| {
        let cfg = HddConfig {
            write_cache,
            ..HddConfig::desktop_7200()
        };
        let mut d = open(&cfg);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..3000 {
            d.write(rng.gen_range(0..span), &page).unwrap();
        }
        let before = d.device_ns();
        d.sync().unwrap();
        let sync_ns = d.device_ns() - before;
        (d, sync_ns)
    };
    let (cached, sync_cached) = run(true);
    let (through, sync_through) = run(false);
    assert!(sync_cached > 1_000_000, "sync must flush the dirty buffer");
    assert!(sync_through < 1_000_000, "nothing to flush: {sync_through}");
    let iops = |d: &SimHdd| 3000.0 / (d.device_ns() as f64 * 1e-9);
    let (c, t) = (iops(&cached), iops(&through));
    assert!(c > 1.3 * t, "cached {c}/s vs write-through {t}/s");
    assert!((60.0..=250.0).contains(&c), "cached random writes {c}/s");
    // A second sync has nothing left to write: one command's overhead (0.1 ms).
    let mut cached = cached;
    let before = cached.device_ns();
    cached.sync().unwrap();
    assert!(cached.device_ns() - before < 150_000);
}

#[test]
fn sequential_writes_stream_and_reads_wait_for_write_back() {
    let page = vec![1u8; PS];
    let mut d = open(&HddConfig::desktop_7200());
    for p in 0..20_000 {
        d.write(p, &page).unwrap();
    }
    d.sync().unwrap();
    let mb_s = 20_000.0 * PS as f64 / 1e6 / (d.device_ns() as f64 * 1e-9);
    // Near the media rate (93.5 MB/s): each write pays its 15 µs command overhead and
    // waits for room once the buffer is full.
    assert!(
        (70.0..=95.0).contains(&mb_s),
        "cached sequential writes {mb_s} MB/s"
    );
    let cfg = HddConfig {
        write_cache: false,
        ..HddConfig::desktop_7200()
    };
    let mut d = open(&cfg);
    for p in 0..500 {
        d.write(p, &page).unwrap();
    }
    let through = 500.0 * PS as f64 / 1e6 / (d.device_ns() as f64 * 1e-9);
    assert!(
        through < 2.0,
        "write-through loses a revolution per write: {through} MB/s"
    );

    // Fill the buffer past the write-back threshold, then read elsewhere: the read waits
    // for the write-back run in progress.
    let mut d = open(&HddConfig::desktop_7200());
    let stride = d.capacity_pages() / 2000;
    for i in 0..1100 {
        d.write(i * stride, &page).unwrap();
    }
    let seeks = d.stats().hdd.unwrap().seeks;
    let t = d.device_ns();
    let mut buf = vec![0u8; PS];
    d.read(d.capacity_pages() - 7, &mut buf).unwrap();
    // Write-back ran (a seek of its own, during the last writes or before the read), then
    // the read seeked, waiting for the run in progress.
    let after = d.stats().hdd.unwrap().seeks;
    assert!(after > seeks && after >= 2, "write-back ran, then the read");
    assert!(d.device_ns() - t > 3_000_000);
}

#[test]
fn buffer_hits_and_drop_caches() {
    let mut d = open(&HddConfig::desktop_7200());
    let mut buf = vec![0u8; PS];
    d.read(5000, &mut buf).unwrap();
    let t = d.device_ns();
    d.read(5000, &mut buf).unwrap();
    // A buffer hit: the hit overhead (0.1 ms) and the interface transfer.
    assert!(d.device_ns() - t < 150_000, "re-read is a buffer hit");
    assert_eq!(d.stats().hdd.unwrap().buffer_hits, 1);
    d.drop_caches().unwrap();
    let t = d.device_ns();
    d.read(5000, &mut buf).unwrap();
    assert!(d.device_ns() - t > 300_000, "cold after drop_caches");
    // A cached write is readable from the buffer.
    d.write(9_000_000, &buf).unwrap();
    let t = d.device_ns();
    d.read(9_000_000, &mut buf).unwrap();
    assert!(d.device_ns() - t < 150_000);
}

#[test]
fn deterministic_for_a_seed() {
    let run = |seed: u64| {
        let cfg = HddConfig {
            seed,
            ..HddConfig::desktop_7200()
        };
        let mut d = open(&cfg);
        random_reads(&mut d, 1 << 20, 300, 9);
        d.write(17, &[1u8; PS]).unwrap();
        d.sync().unwrap();
        (d.device_ns(), d.stats())
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1).0, run(2).0);
}

#[test]
fn request_errors() {
    let mut d = open(&small_zoned());
    let mut buf = vec![0u8; PS];
    let cap = d.capacity_pages();
    assert!(d.read(cap, &mut buf).is_err());
    assert!(d.write(cap - 1, &[0u8; 2 * PS]).is_err());
    assert!(d.read(0, &mut buf[..100]).is_err());
    assert!(d.write(u64::MAX, &buf).is_err());
    d.read(cap - 1, &mut buf).unwrap();
    assert!(d.device_ns() > 0);
}

#[test]
fn persisted_state_round_trips_and_corruption_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("hdd.state");
    let cfg = small_zoned();
    let ops = |d: &mut SimHdd, seed: u64| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut buf = vec![0u8; PS];
        for i in 0..200u64 {
            let p = rng.gen_range(0..d.capacity_pages() - 4);
            if i % 3 == 0 {
                d.write(p, &vec![i as u8; 2 * PS]).unwrap();
            } else {
                d.read(p, &mut buf).unwrap();
            }
        }
    };
    // One uninterrupted run vs. the same run split by persist + reopen.
    let mut whole = open(&cfg);
    ops(&mut whole, 1);
    ops(&mut whole, 2);
    let mut a = SimHdd::open(&cfg, PS, Some(&state)).unwrap();
    ops(&mut a, 1);
    a.persist().unwrap();
    let mut b = SimHdd::open(&cfg, PS, Some(&state)).unwrap();
    assert_eq!(b.device_ns(), a.device_ns());
    ops(&mut b, 2);
    assert_eq!(b.device_ns(), whole.device_ns());
    assert_eq!(b.stats().hdd, whole.stats().hdd);

    let other = HddConfig {
        seed: 99,
        ..cfg.clone()
    };
    assert!(SimHdd::open(&other, PS, Some(&state)).is_err());
    assert!(SimHdd::open(&cfg, 8192, Some(&state)).is_err());
    let mut bytes = std::fs::read(&state).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(&state, &bytes).unwrap();
    let err = SimHdd::open(&cfg, PS, Some(&state)).err().unwrap();
    assert!(err.to_string().contains("corrupted"), "{err}");
    std::fs::write(&state, &bytes[..bytes.len() / 3]).unwrap();
    assert!(SimHdd::open(&cfg, PS, Some(&state)).is_err());
}

#[test]
fn inconsistent_state_with_valid_checksum_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("hdd.state");
    let cfg = small_zoned();
    let mut d = SimHdd::open(&cfg, PS, Some(&state)).unwrap();
    d.write(1, &[1u8; PS]).unwrap();
    d.persist().unwrap();
    let save = |d: &SimHdd, mech: &Mech| {
        let saved = SavedRef {
            pages: crate::device::paged::Indexed(&d.data),
            config: &d.config,
            page_size: PS,
            mech,
            host: &d.host,
            stats: &d.stats,
        };
        save_state_as(&state, "hdd", HDD_WRITE_OVERHEAD_FORMAT, &saved).unwrap();
    };
    let mut bad = d.mech.clone();
    bad.stream = Some(Stream {
        seg_start: 10,
        s0: 5,
        t0: 0,
        limit: 1,
        spt: 0,
    });
    save(&d, &bad);
    assert!(SimHdd::open(&cfg, PS, Some(&state)).is_err());
    let mut bad = d.mech.clone();
    bad.cyl = u64::MAX;
    save(&d, &bad);
    assert!(SimHdd::open(&cfg, PS, Some(&state)).is_err());
    let mut bad = d.mech.clone();
    bad.dirty.insert(u64::MAX - 1);
    save(&d, &bad);
    assert!(SimHdd::open(&cfg, PS, Some(&state)).is_err());
    save(&d, &d.mech);
    SimHdd::open(&cfg, PS, Some(&state)).unwrap();
}

#[test]
fn cached_writes_pay_the_write_overhead_and_read_hits_the_hit_overhead() {
    let cfg = HddConfig {
        hit_overhead_us: 100.0,
        write_overhead_us: Some(15.0),
        ..small_zoned()
    };
    let mut d = open(&cfg);
    let t0 = d.device_ns();
    d.write(7, &[3u8; PS]).unwrap();
    let write = d.device_ns() - t0;
    let mut buf = vec![0u8; PS];
    let t1 = d.device_ns();
    d.read(7, &mut buf).unwrap();
    let read = d.device_ns() - t1;
    assert_eq!(buf, vec![3u8; PS]);
    // Both move one page over the interface; they differ by the two overheads exactly.
    assert_eq!(
        read - write,
        85_000,
        "read hit {read} ns, cached write {write} ns"
    );
    // Without a write overhead, a cached write costs a read hit's overhead (the model
    // before the two were told apart).
    let mut old = open(&HddConfig {
        write_overhead_us: None,
        ..cfg.clone()
    });
    old.write(7, &[3u8; PS]).unwrap();
    assert_eq!(old.device_ns(), read);
    let e = HddConfig {
        write_overhead_us: Some(-1.0),
        ..cfg
    }
    .validate()
    .unwrap_err()
    .to_string();
    assert!(e.contains("write_overhead_us"), "{e}");
}

/// A format-4 state (no `write_overhead_us` in its configuration), as the versions before
/// it wrote: the same layout, written here with the old configuration's fields.
#[test]
fn a_format_4_state_opens_with_writes_at_the_hit_overhead() {
    #[derive(serde::Serialize)]
    struct ConfigV4 {
        capacity: u64,
        rpm: u32,
        heads: u32,
        zones: u32,
        outer_mb_s: f64,
        inner_mb_s: f64,
        track_to_track_ms: f64,
        avg_seek_ms: f64,
        full_stroke_ms: f64,
        write_settle_ms: f64,
        hit_overhead_us: f64,
        miss_overhead_us: f64,
        interface_mb_s: f64,
        cache_kb: u64,
        segments: u32,
        read_ahead_kb: u64,
        write_cache: bool,
        seed: u64,
    }
    #[derive(serde::Serialize)]
    struct SavedV4<'a> {
        pages: crate::device::paged::Indexed<&'a PageStore>,
        config: ConfigV4,
        page_size: usize,
        mech: &'a Mech,
        host: &'a HostCounters,
        stats: &'a HddStats,
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("hdd.state");
    let cfg = HddConfig {
        write_overhead_us: None,
        ..small_zoned()
    };
    let mut d = SimHdd::open(&cfg, PS, Some(&state)).unwrap();
    d.write(1, &[9u8; PS]).unwrap();
    d.persist().unwrap();
    let c = &d.config;
    let old = SavedV4 {
        pages: crate::device::paged::Indexed(&d.data),
        config: ConfigV4 {
            capacity: c.capacity,
            rpm: c.rpm,
            heads: c.heads,
            zones: c.zones,
            outer_mb_s: c.outer_mb_s,
            inner_mb_s: c.inner_mb_s,
            track_to_track_ms: c.track_to_track_ms,
            avg_seek_ms: c.avg_seek_ms,
            full_stroke_ms: c.full_stroke_ms,
            write_settle_ms: c.write_settle_ms,
            hit_overhead_us: c.hit_overhead_us,
            miss_overhead_us: c.miss_overhead_us,
            interface_mb_s: c.interface_mb_s,
            cache_kb: c.cache_kb,
            segments: c.segments,
            read_ahead_kb: c.read_ahead_kb,
            write_cache: c.write_cache,
            seed: c.seed,
        },
        page_size: PS,
        mech: &d.mech,
        host: &d.host,
        stats: &d.stats,
    };
    save_state_as(&state, "hdd", INDEX_PAGED_FORMAT, &old).unwrap();
    let clock = d.device_ns();
    drop(d);
    let mut back = SimHdd::open(&cfg, PS, Some(&state)).unwrap();
    assert_eq!(back.device_ns(), clock);
    let mut buf = vec![0u8; PS];
    back.read(1, &mut buf).unwrap();
    assert_eq!(buf, vec![9u8; PS]);
    assert_eq!(back.write_ns, back.hit_ns);
    // It saves in the current format and reopens.
    back.persist().unwrap();
    drop(back);
    SimHdd::open(&cfg, PS, Some(&state)).unwrap();
    // A configuration with a write overhead is another drive.
    let other = HddConfig {
        write_overhead_us: Some(15.0),
        ..cfg
    };
    let e = SimHdd::open(&other, PS, Some(&state))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("configuration"), "{e}");
}

#[derive(Debug, Clone)]
enum Op {
    Write(u64, u8, u8),
    Read(u64, u8),
    Sync,
    Drop,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..300, 1u8..4, any::<u8>()).prop_map(|(p, n, v)| Op::Write(p, n, v)),
        4 => (0u64..300, 1u8..4).prop_map(|(p, n)| Op::Read(p, n)),
        1 => Just(Op::Sync),
        1 => Just(Op::Drop),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Reads return what was last written, across syncs, cache drops and reopening.
    #[test]
    fn reads_return_last_written(ops in proptest::collection::vec(op(), 1..60), zoned: bool) {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("hdd.state");
        let cfg = if zoned { small_zoned() } else { HddConfig::desktop_7200() };
        // Spread the small page numbers over the disk to exercise seeks.
        let stride = SimHdd::open(&cfg, PS, None).unwrap().capacity_pages() / 400;
        let mut d = SimHdd::open(&cfg, PS, Some(&state)).unwrap();
        let mut model: HashMap<u64, u8> = HashMap::new();
        let mut last_ns = 0;
        for op in ops {
            match op {
                Op::Write(p, n, v) => {
                    let base = p * stride;
                    let data: Vec<u8> = (0..n as usize * PS).map(|i| v ^ (i / PS) as u8).collect();
                    d.write(base, &data).unwrap();
                    for i in 0..n as u64 {
                        model.insert(base + i, v ^ i as u8);
                    }
                }
                Op::Read(p, n) => {
                    let base = p * stride;
                    let mut buf = vec![0xAAu8; n as usize * PS];
                    d.read(base, &mut buf).unwrap();
                    for i in 0..n as u64 {
                        let want = model.get(&(base + i)).copied().unwrap_or(0);
                        let got = &buf[i as usize * PS..(i as usize + 1) * PS];
                        prop_assert!(got.iter().all(|&b| b == want), "page {}", base + i);
                    }
                }
                Op::Sync => d.sync().unwrap(),
                Op::Drop => d.drop_caches().unwrap(),
                Op::Reopen => {
                    d.persist().unwrap();
                    d = SimHdd::open(&cfg, PS, Some(&state)).unwrap();
                }
            }
            prop_assert!(d.device_ns() >= last_ns, "the clock never goes back");
            last_ns = d.device_ns();
        }
    }
}
