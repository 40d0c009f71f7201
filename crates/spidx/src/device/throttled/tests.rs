use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::device::hdd::{HddConfig, SimHdd};
use crate::device::memory::{MemoryConfig, MemoryDevice};

const PS: usize = 4096;

fn memory() -> Box<dyn Device> {
    Box::new(MemoryDevice::open(&MemoryConfig { capacity: 1 << 30 }, PS, None).unwrap())
}

fn hdd() -> Box<dyn Device> {
    Box::new(SimHdd::open(&HddConfig::desktop_7200(), PS, None).unwrap())
}

/// Runs `ops` random requests of `pages` pages (alternating reads and writes); returns the
/// completion time of every request.
fn drive(d: &mut Throttled, ops: usize, pages: usize, span: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut buf = vec![3u8; pages * PS];
    let mut done = Vec::with_capacity(ops);
    for i in 0..ops {
        let p = rng.gen_range(0..span - pages as u64);
        if i % 2 == 0 {
            d.read(p, &mut buf).unwrap();
        } else {
            d.write(p, &buf).unwrap();
        }
        done.push(d.device_ns());
    }
    done
}

/// Largest number of completions in any window of `window_ns`.
fn max_in_window(done: &[u64], window_ns: u64) -> usize {
    let mut best = 0;
    let mut lo = 0;
    for hi in 0..done.len() {
        while done[hi] - done[lo] >= window_ns {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best
}

#[test]
fn presets_and_validation() {
    let hdd = ThrottleConfig::azure_standard_hdd();
    assert_eq!((hdd.iops, hdd.mb_s, hdd.io_unit), (500, 60.0, 256 * 1024));
    let ssd = ThrottleConfig::azure_premium_ssd();
    assert_eq!((ssd.iops, ssd.mb_s, ssd.burst), (5000, 200.0, 1));
    hdd.validate().unwrap();
    ssd.validate().unwrap();
    let parsed: ThrottleConfig =
        toml::from_str("iops = 100\nmb_s = 10.5\nio_unit = 262144\nlatency_us = 0").unwrap();
    assert_eq!(parsed.burst, 1);
    assert!(toml::from_str::<ThrottleConfig>("iops = 1\nmbs = 1").is_err());
    for (cfg, name) in [
        (
            ThrottleConfig {
                iops: 0,
                ..ssd.clone()
            },
            "iops",
        ),
        (
            ThrottleConfig {
                mb_s: -1.0,
                ..ssd.clone()
            },
            "mb_s",
        ),
        (
            ThrottleConfig {
                io_unit: 0,
                ..ssd.clone()
            },
            "io_unit",
        ),
        (
            ThrottleConfig {
                latency_us: f64::INFINITY,
                ..ssd.clone()
            },
            "latency_us",
        ),
        (
            ThrottleConfig {
                burst: 0,
                ..ssd.clone()
            },
            "burst",
        ),
    ] {
        let msg = Throttled::new(memory(), &cfg).err().unwrap().to_string();
        assert!(msg.contains(name), "{name}: {msg}");
    }
}

#[test]
fn iops_cap_holds_over_a_fast_device() {
    for latency_us in [0.0, 150.0, 5000.0] {
        let cfg = ThrottleConfig {
            latency_us,
            ..ThrottleConfig::azure_premium_ssd()
        };
        let mut d = Throttled::new(memory(), &cfg).unwrap();
        let done = drive(&mut d, 20_000, 1, 200_000);
        let s = d.stats();
        let iops = 20_000.0 / s.device_s();
        assert!(iops <= 5000.0, "{iops} IOPS with latency {latency_us}");
        let expect = 5000f64.min(1e6 / latency_us);
        assert!(iops > 0.97 * expect, "{iops} IOPS, expected about {expect}");
        assert!(max_in_window(&done, 100_000_000) <= 500, "100 ms window");
        let t = s.throttle.unwrap();
        assert_eq!(t.io_units, 20_000);
        assert_eq!(s.kind, "throttled");
        assert_eq!(s.host.read_ops + s.host.write_ops, 20_000);
    }
}

#[test]
fn throughput_cap_and_large_requests() {
    let cfg = ThrottleConfig::azure_standard_hdd();
    let mut d = Throttled::new(memory(), &cfg).unwrap();
    // 1 MiB requests: 4 I/O units each; the 60 MB/s cap binds (about 57 requests/s).
    let done = drive(&mut d, 600, 256, 200_000);
    let s = d.stats();
    let mb_s = (s.host.bytes_read + s.host.bytes_written) as f64 / 1e6 / s.device_s();
    assert!(mb_s <= 60.0 && mb_s > 58.0, "{mb_s} MB/s");
    let units = s.throttle.unwrap().io_units;
    assert_eq!(units, 2400);
    assert!(units as f64 / s.device_s() <= 500.0);
    // Any one-second window moves at most 60 MB (plus one request at its edge).
    let per_s = max_in_window(&done, 1_000_000_000) as f64 * (1 << 20) as f64 / 1e6;
    assert!(per_s <= 60.0 + 1.05, "{per_s} MB in one second");
    assert!(s.throttle.unwrap().throttled_requests > 590);
}

#[test]
fn slow_inner_device_is_not_sped_up() {
    let cfg = ThrottleConfig::azure_standard_hdd();
    let mut d = Throttled::new(hdd(), &cfg).unwrap();
    let cap = d.capacity_pages();
    drive(&mut d, 300, 1, cap);
    let s = d.stats();
    let inner_ns = d.inner().device_ns();
    // Random HDD requests (~13 ms) are far below the 500 IOPS cap: only latency is added.
    assert_eq!(s.device_ns, inner_ns + 300 * 1_000_000);
    assert_eq!(s.throttle.unwrap().throttled_requests, 0);
    assert!(s.hdd.is_some(), "inner HDD counters are kept");
    assert!(300.0 / s.device_s() <= 500.0);
    // Sequential HDD reads are fast enough for the cap to bind.
    let mut d = Throttled::new(hdd(), &cfg).unwrap();
    let mut buf = vec![0u8; PS];
    for p in 0..5000 {
        d.read(p, &mut buf).unwrap();
    }
    let s = d.stats();
    assert!(s.device_ns >= d.inner().device_ns());
    let iops = 5000.0 / s.device_s();
    assert!(iops <= 500.0 && iops > 480.0, "{iops}");
}

#[test]
fn burst_lets_saved_up_ios_through_but_keeps_the_average() {
    // Each cycle: one slow random HDD read (~13 ms, the bucket refills meanwhile), then
    // three fast cached writes. Without burst the writes are paced at 5 ms each; with a
    // bucket of 4 they go through at once. The average never exceeds the cap.
    let base = ThrottleConfig {
        iops: 200,
        mb_s: 1000.0,
        io_unit: 256 * 1024,
        latency_us: 0.0,
        burst: 1,
    };
    let run = |cfg: &ThrottleConfig| {
        let mut d = Throttled::new(hdd(), cfg).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut buf = vec![0u8; PS];
        for _ in 0..200 {
            d.read(rng.gen_range(0..d.capacity_pages()), &mut buf)
                .unwrap();
            for p in 0..3 {
                d.write(p, &buf).unwrap();
            }
        }
        800.0 / d.stats().device_s()
    };
    let plain = run(&base);
    let burst = run(&ThrottleConfig { burst: 4, ..base });
    assert!(plain <= 200.0 && burst <= 200.0, "{plain} {burst}");
    assert!(burst > 1.1 * plain, "burst {burst}/s vs {plain}/s");
}

#[test]
fn persist_keeps_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let inner_state = dir.path().join("mem.state");
    let state = dir.path().join("throttle.state");
    let cfg = ThrottleConfig::azure_premium_ssd();
    let mem = |p: &Path| -> Box<dyn Device> {
        Box::new(MemoryDevice::open(&MemoryConfig { capacity: 1 << 30 }, PS, Some(p)).unwrap())
    };
    let mut d = Throttled::new_with_state(mem(&inner_state), &cfg, Some(&state)).unwrap();
    d.write(3, &[9u8; PS]).unwrap();
    d.sync().unwrap();
    d.drop_caches().unwrap();
    let (ns, t) = (d.device_ns(), d.stats().throttle);
    d.persist().unwrap();
    let mut e = Throttled::new_with_state(mem(&inner_state), &cfg, Some(&state)).unwrap();
    assert_eq!(e.device_ns(), ns);
    assert_eq!(e.stats().throttle, t);
    let mut buf = vec![0u8; PS];
    e.read(3, &mut buf).unwrap();
    assert_eq!(buf, vec![9u8; PS]);
    let mut bytes = std::fs::read(&state).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&state, &bytes).unwrap();
    assert!(Throttled::new_with_state(mem(&inner_state), &cfg, Some(&state)).is_err());
}

#[test]
fn errors_from_the_inner_device_cost_nothing() {
    let mut d = Throttled::new(memory(), &ThrottleConfig::azure_premium_ssd()).unwrap();
    let cap = d.capacity_pages();
    let mut buf = vec![0u8; PS];
    assert!(d.read(cap, &mut buf).is_err());
    assert!(d.write(0, &buf[..10]).is_err());
    assert_eq!(d.device_ns(), 0);
    assert_eq!(d.stats().throttle.unwrap().io_units, 0);
}
