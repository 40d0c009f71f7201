//! Speed of the simulators themselves: how many simulated 4 KB operations per second of
//! wall time SimHdd and Throttled sustain, next to the simulated device's own IOPS.
//!
//! Run with `cargo run --release -p spidx --example bench_hdd`.

use std::time::Instant;

use spidx::device::hdd::{HddConfig, SimHdd};
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::device::throttled::{ThrottleConfig, Throttled};
use spidx::device::Device;

const PS: usize = 4096;

/// A small xorshift generator: no allocation, no dependency on the RNG's speed.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn bench(name: &str, dev: &mut dyn Device, ops: u64, write: bool, mut page: impl FnMut() -> u64) {
    let mut buf = vec![0x5Au8; PS];
    let ns0 = dev.device_ns();
    let start = Instant::now();
    for _ in 0..ops {
        let p = page();
        if write {
            dev.write(p, &buf).unwrap();
        } else {
            dev.read(p, &mut buf).unwrap();
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let sim_s = (dev.device_ns() - ns0) as f64 * 1e-9;
    println!(
        "{name:<34} {:>12.0} simulated ops/s of wall time   device: {:>10.0} IOPS",
        ops as f64 / wall,
        ops as f64 / sim_s
    );
}

fn main() {
    let hdd = || SimHdd::open(&HddConfig::desktop_7200(), PS, None).unwrap();
    let mut rng = XorShift(0x1234_5678_9abc_def1);

    let mut d = hdd();
    let cap = d.capacity_pages();
    bench(
        "SimHdd random 4KB reads (2 TB)",
        &mut d,
        2_000_000,
        false,
        || rng.below(cap),
    );
    let mut d = hdd();
    let mut p = 0;
    bench(
        "SimHdd sequential 4KB reads",
        &mut d,
        2_000_000,
        false,
        || {
            p += 1;
            p
        },
    );
    // Writes keep their data in memory: bound the span (256 MB) to bound memory.
    let span = (256 << 20) / PS as u64;
    let mut d = hdd();
    bench(
        "SimHdd random 4KB writes (256 MB)",
        &mut d,
        2_000_000,
        true,
        || rng.below(span),
    );
    let mut d = hdd();
    let mut p = 0;
    bench(
        "SimHdd sequential 4KB writes",
        &mut d,
        2_000_000,
        true,
        || {
            p = (p + 1) % span;
            p
        },
    );

    let mem = MemoryDevice::open(&MemoryConfig::default(), PS, None).unwrap();
    let mut t = Throttled::new(Box::new(mem), &ThrottleConfig::azure_premium_ssd()).unwrap();
    let cap = t.capacity_pages();
    bench(
        "Throttled(memory) random 4KB reads",
        &mut t,
        5_000_000,
        false,
        || rng.below(cap),
    );
    let mut t = Throttled::new(Box::new(hdd()), &ThrottleConfig::azure_standard_hdd()).unwrap();
    let mut p = 0;
    bench(
        "Throttled(SimHdd) seq 4KB reads",
        &mut t,
        2_000_000,
        false,
        || {
            p += 1;
            p
        },
    );
}
