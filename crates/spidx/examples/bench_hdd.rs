//! Speed of the simulators themselves: how many simulated 4 KB operations per second of
//! wall time and of CPU time SimHdd and Throttled sustain, next to the simulated device's
//! own IOPS.
//!
//! Run with `cargo run --release -p spidx --example bench_hdd`.

use std::time::Instant;

use spidx::clock::process_cpu_ns;
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
    let cpu0 = process_cpu_ns();
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
    let cpu = (process_cpu_ns() - cpu0) as f64 * 1e-9;
    let sim_s = (dev.device_ns() - ns0) as f64 * 1e-9;
    println!(
        "{name:<34} {:>12.0} simulated ops/s of wall time {:>12.0} of CPU time   device: {:>10.0} IOPS",
        ops as f64 / wall,
        ops as f64 / cpu.max(1e-9),
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

    model_figures(&mut rng);
}

/// The modelled drive's behaviour (what the tests check), for the report.
fn model_figures(rng: &mut XorShift) {
    let d = SimHdd::open(&HddConfig::desktop_7200(), PS, None).unwrap();
    let cap = d.capacity_pages();
    let n = 1_000_000;
    let sum: u64 = (0..n)
        .map(|_| {
            let (a, b) = (rng.below(cap), rng.below(cap));
            let dist = d.cylinder_of_page(a).abs_diff(d.cylinder_of_page(b));
            d.seek_curve().time_ns(dist)
        })
        .sum();
    println!(
        "\ndesktop_7200: {} cylinders, seek boundary {:.0} cylinders, mean seek over random positions {:.3} ms",
        d.cylinders(),
        d.seek_curve().boundary_cylinders(),
        sum as f64 / n as f64 / 1e6
    );
    let mut buf = vec![0u8; PS];
    let mut rate = |span: u64, seq: bool, write: bool| {
        let mut d = SimHdd::open(&HddConfig::desktop_7200(), PS, None).unwrap();
        let ops = 5000;
        for i in 0..ops {
            let p = if seq { 1000 + i } else { rng.below(span) };
            if write {
                d.write(p, &buf).unwrap();
            } else {
                d.read(p, &mut buf).unwrap();
            }
        }
        d.sync().unwrap();
        ops as f64 / (d.device_ns() as f64 * 1e-9)
    };
    let gb2 = (2 << 30) / PS as u64;
    let (rnd_full, rnd_2g, seq) = (
        rate(cap, false, false),
        rate(gb2, false, false),
        rate(0, true, false),
    );
    let (wr_full, wr_seq) = (rate(cap, false, true), rate(0, true, true));
    println!("random 4KB reads: {rnd_full:.1} IOPS over 2 TB, {rnd_2g:.1} IOPS over 2 GB");
    println!(
        "sequential 4KB reads: {seq:.0} IOPS = {:.1} MB/s, {:.0}x random over 2 GB",
        seq * PS as f64 / 1e6,
        seq / rnd_2g
    );
    println!(
        "random 4KB writes (write cache, incl. final sync): {wr_full:.1} IOPS; sequential: {:.1} MB/s",
        wr_seq * PS as f64 / 1e6
    );
}
