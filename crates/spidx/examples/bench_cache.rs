//! Throughput of the replacement policies and of the page cache on a skewed trace.
//!
//! ```sh
//! cargo run --release -p spidx --example bench_cache [-- ACCESSES]
//! ```
//!
//! The trace mimics tree traversals: page ids are drawn with a strong skew towards small
//! ids, and small ids are the upper levels of a tree (level 3 for the 16 hottest pages,
//! then 2, 1, and leaves), so HLRU has levels to protect. Two measurements per policy:
//! the policy alone (touch/admit on `u64` keys) and a `PageCache` of 4 KB pages over a
//! memory device (reads only: the device stays empty, so the figure is the cost of the
//! cache plus one page copy per fault).

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spidx::cache::{CacheConfig, CachePolicy, PageCache};
use spidx::clock::process_cpu_ns;
use spidx::device::memory::{MemoryConfig, MemoryDevice};

const PAGES: u64 = 200_000;
const PAGE_SIZE: usize = 4096;
const CACHE_PAGES: u64 = 4096;

fn level_of(page: u64) -> u32 {
    match page {
        0..16 => 3,
        16..512 => 2,
        512..16_384 => 1,
        _ => 0,
    }
}

fn trace(n: usize) -> Vec<(u64, u32)> {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    (0..n)
        .map(|_| {
            let u: f64 = rng.gen();
            let page = ((u.powi(4) * PAGES as f64) as u64).min(PAGES - 1);
            (page, level_of(page))
        })
        .collect()
}

/// CPU seconds of the process since `cpu0` (from [`process_cpu_ns`]).
fn cpu_s(cpu0: u64) -> f64 {
    ((process_cpu_ns() - cpu0) as f64 * 1e-9).max(1e-9)
}

fn main() -> spidx::Result<()> {
    let n: usize = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|_| spidx::Error::invalid("accesses", format!("'{a}' is not a count")))?,
        None => 2_000_000,
    };
    let accesses = trace(n);
    println!(
        "{n} accesses over {PAGES} pages, cache of {CACHE_PAGES} pages ({} KB pages)",
        PAGE_SIZE / 1024
    );
    println!(
        "{:<6} {:>14} {:>14} {:>9} {:>16} {:>16} {:>9}",
        "policy", "policy ops/s", "(CPU)", "hit %", "PageCache ops/s", "(CPU)", "hit %"
    );
    for kind in CachePolicy::ALL {
        // The policy alone.
        let mut p = kind.build(CACHE_PAGES as usize, 25.0, 50.0);
        let mut evicted = Vec::new();
        let mut hits = 0u64;
        let (start, cpu0) = (Instant::now(), process_cpu_ns());
        for &(page, level) in &accesses {
            if p.contains(page) {
                p.touch(page, level);
                hits += 1;
            } else {
                evicted.clear();
                p.admit(page, level, &mut evicted);
            }
        }
        let policy_rate = n as f64 / start.elapsed().as_secs_f64();
        let policy_cpu_rate = n as f64 / cpu_s(cpu0);
        let policy_hits = 100.0 * hits as f64 / n as f64;

        // The page cache over a memory device.
        let dev = MemoryDevice::open(
            &MemoryConfig {
                capacity: PAGES * PAGE_SIZE as u64,
            },
            PAGE_SIZE,
            None,
        )?;
        let config = if kind == CachePolicy::None {
            CacheConfig::none()
        } else {
            CacheConfig::new(kind, CACHE_PAGES * PAGE_SIZE as u64)
        };
        let mut cache = PageCache::new(Box::new(dev), &config)?;
        let (start, cpu0) = (Instant::now(), process_cpu_ns());
        for &(p, level) in &accesses {
            let data = cache.read(p, level)?;
            std::hint::black_box(&data);
        }
        let cache_rate = n as f64 / start.elapsed().as_secs_f64();
        let cache_cpu_rate = n as f64 / cpu_s(cpu0);
        let s = cache.stats();
        println!(
            "{:<6} {:>14.0} {:>14.0} {:>9.2} {:>16.0} {:>16.0} {:>9.2}",
            kind.name(),
            policy_rate,
            policy_cpu_rate,
            policy_hits,
            cache_rate,
            cache_cpu_rate,
            100.0 * s.hit_ratio()
        );
    }
    Ok(())
}
