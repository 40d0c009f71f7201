//! Simulation speed of the flash devices: host operations per second of wall time and of
//! CPU time (the steadier figure on a shared machine) for random 4 KB writes and reads on
//! SimFlash and on the SSD model, with the simulated throughput and write amplification
//! alongside.
//!
//! Run with `cargo run --release --example bench_flash [ops]` (default 1 000 000 ops).
//! The first write phase that fills a fresh span also pays for the process touching new
//! memory (the simulators store every written page); later devices reuse freed memory,
//! so compare write rates of runs in the same position.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spidx::clock::process_cpu_ns;
use spidx::device::flash::{FlashConfig, SimFlash};
use spidx::device::ssd::{SimSsd, SsdConfig};
use spidx::device::Device;

const PAGE: usize = 4096;

/// Runs `ops` random 4 KB requests over `span` pages; prints one line.
fn bench(name: &str, dev: &mut dyn Device, write: bool, ops: usize, span: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let pages: Vec<u64> = (0..ops).map(|_| rng.gen_range(0..span)).collect();
    let mut buf = vec![0x3Cu8; PAGE];
    let before = dev.stats();
    let cpu0 = process_cpu_ns();
    let start = Instant::now();
    for (i, &p) in pages.iter().enumerate() {
        if write {
            buf[0] = i as u8;
            dev.write(p, &buf).expect("write");
        } else {
            dev.read(p, &mut buf).expect("read");
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = (process_cpu_ns() - cpu0) as f64 * 1e-9;
    let s = dev.stats().since(&before);
    let f = s.flash.unwrap_or_default();
    println!(
        "{name:<34} {:>6} {ops:>9} ops {wall:>7.3} s wall {:>11.0} ops/s, {cpu:>7.3} s CPU \
         {:>11.0} ops/s | simulated {:>8.1} MB/s, WA {:.2}, {} erases",
        if write { "write" } else { "read" },
        ops as f64 / wall,
        ops as f64 / cpu.max(1e-9),
        (ops * PAGE) as f64 * 1e3 / s.device_ns.max(1) as f64,
        f.write_amplification,
        f.erases,
    );
}

fn main() {
    let ops: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("ops must be a number"))
        .unwrap_or(1_000_000);

    // SimFlash, 2 KB flash pages (each 4 KB write = 2 programs), 256 MB so that the
    // random writes overwrite the device several times and GC runs in steady state.
    let cfg = FlashConfig {
        capacity: 256 << 20,
        ..FlashConfig::flashdbsim()
    };
    let mut d = SimFlash::open(&cfg, PAGE, None).expect("open");
    let span = d.capacity_pages();
    bench("simflash flashdbsim 256MB", &mut d, true, ops, span);
    bench("simflash flashdbsim 256MB", &mut d, false, ops, span);

    let cfg = FlashConfig {
        capacity: 256 << 20,
        ..FlashConfig::x25m()
    };
    let mut d = SimFlash::open(&cfg, PAGE, None).expect("open");
    bench("simflash x25m 256MB", &mut d, true, ops, span);
    bench("simflash x25m 256MB", &mut d, false, ops, span);

    // The SSD model at queue depth 32 and 1 over a 1 GB span of the 480 GB V300.
    for qd in [32, 1] {
        let cfg = SsdConfig {
            queue_depth: qd,
            ..SsdConfig::v300()
        };
        let mut d = SimSsd::open(&cfg, PAGE, None).expect("open");
        let name = format!("ssd v300 QD{qd} 1GB span");
        bench(&name, &mut d, true, ops, (1 << 30) / PAGE as u64);
        d.sync().expect("sync");
        bench(&name, &mut d, false, ops, (1 << 30) / PAGE as u64);
    }
}
