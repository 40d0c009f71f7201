//! Speed of the concurrent-streams simulation (`experiment::concurrent`): simulated
//! requests per second of wall time with 1, 10 and 100 streams on the disk and SSD models,
//! 2,000 queries of 50 single-page reads each (100,000 requests), own copies per stream, no
//! memory budget (every request reaches the device model); then 100 streams with a shared
//! memory budget of 1,000 pages (32 MB): every request is looked up in the LRU first, and its
//! hits reach no device; with 100 copies of 2,000 pages few hit, as in the Emrich specs at
//! 100 streams. Requests per second count every simulated request, hit or not.
//!
//! Run with `cargo run --release -p spidx --example bench_streams`.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use spidx::device::hdd::{HddConfig, SimHdd};
use spidx::device::ssd::{SimSsd, SsdConfig};
use spidx::device::tap::Request;
use spidx::device::Device;
use spidx::experiment::concurrent::{simulate, Instances, Latency, SimConfig};

const PS: usize = 32 << 10;
const SPAN: u64 = 2_000;

fn traces() -> Vec<Vec<Request>> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    (0..2_000)
        .map(|_| {
            (0..50)
                .map(|_| Request {
                    page: rng.gen_range(0..SPAN),
                    pages: 1,
                    write: false,
                })
                .collect()
        })
        .collect()
}

fn run(
    name: &str,
    dev: &mut dyn Device,
    traces: &[Vec<Request>],
    streams: usize,
    instances: Instances,
    memory_bytes: u64,
) {
    let cfg = SimConfig {
        streams,
        instances,
        memory_bytes,
    };
    let start = Instant::now();
    let r = simulate(dev, traces, &cfg).unwrap();
    let wall = start.elapsed().as_secs_f64();
    let requests = r.cache_hits + r.cache_misses;
    let lat = Latency::of(&r.latency_ns);
    println!(
        "{name:<5} {streams:>4} streams, memory {:>4} pages: {requests} requests ({} hits) in {wall:.3} s wall = {:>9.0} simulated requests/s; mean latency {:.2} ms, p99 {:.2} ms, throughput {:.0} queries/s (virtual)",
        memory_bytes / PS as u64,
        r.cache_hits,
        requests as f64 / wall,
        lat.mean_s * 1e3,
        lat.p99_s * 1e3,
        traces.len() as f64 / (r.makespan_ns as f64 * 1e-9),
    );
}

fn main() {
    let t = traces();
    let memory = 1_000 * PS as u64;
    for (n, m) in [(1, 0), (10, 0), (100, 0), (100, memory)] {
        let mut hdd = SimHdd::open(&HddConfig::wd2500aajs(), PS, None).unwrap();
        run("hdd", &mut hdd, &t, n, Instances::Own, m);
    }
    for (n, m) in [(1, 0), (10, 0), (100, 0), (100, memory)] {
        let mut ssd = SimSsd::open(&SsdConfig::v300(), PS, None).unwrap();
        let buf = vec![1u8; PS * 100];
        for p in (0..SPAN).step_by(100) {
            ssd.write(p, &buf).unwrap();
        }
        ssd.sync().unwrap();
        run("ssd", &mut ssd, &t, n, Instances::Own, m);
    }
}
