//! Digests of the trees spidx builds, to check that a change of the index code keeps its
//! behaviour exactly (the same trees, the same node work).
//!
//! ```text
//! cargo run --release -p spidx-bench --bin tree_digest -- [--n 20000] [--seed 1]
//! ```
//!
//! For each configuration (every R-tree split, several R*-tree settings, 1 KB and 4 KB
//! pages) it inserts the benchmark's rectangles one by one, deletes every third object and
//! moves every fifth, and prints one line: the FNV-1a digest of the leaf entries in the
//! order a full-extent search visits them after the inserts and again after the deletes
//! and updates, the tree's own counters and the store's counters. Two builds of spidx that
//! print the same lines made the same trees with the same node reads and writes.

use anyhow::{bail, Result};
use clap::Parser;
use spidx::cache::{CacheConfig, PageCache};
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::geom::Rect;
use spidx::index::{IndexKind, MbrPredicate, Tree};
use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
use spidx::store::direct::DirectStore;
use spidx::store::NodeStore;
use spidx_bench::{data, runs};

#[derive(Parser, Debug)]
#[command(about = "Digests of spidx trees (checks that refactors keep the trees)")]
struct Args {
    /// Rectangles inserted per configuration.
    #[arg(long, default_value_t = 20_000)]
    n: usize,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// The configurations: name, index (as `spidx build --index-opt` writes it), max fill.
fn kinds() -> Vec<(String, IndexKind, f64)> {
    let configs: [(&str, &str, &[&str], f64); 8] = [
        ("linear", "rtree", &["split=linear"], 1.0),
        ("quadratic", "rtree", &["split=quadratic"], 1.0),
        ("greene", "rtree", &["split=greene"], 1.0),
        ("angtan", "rtree", &["split=angtan"], 1.0),
        ("exponential", "rtree", &["split=exponential"], 0.0),
        ("rstar30", "rstar", &[], 1.0),
        (
            "rstar20/40far",
            "rstar",
            &["reinsert=20", "reinsert_internal=40", "reinsert_policy=far"],
            1.0,
        ),
        (
            "rstar40/0p2",
            "rstar",
            &["reinsert=40", "reinsert_internal=0", "candidates=2"],
            1.0,
        ),
    ];
    configs
        .into_iter()
        .map(|(name, kind, opts, fill)| (name.to_string(), runs::written_kind(kind, opts), fill))
        .collect()
}

fn digest(t: &mut Tree<DirectStore, 2>) -> Result<String> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |v: u64| {
        for b in v.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let all = Rect {
        min: [f64::MIN; 2],
        max: [f64::MAX; 2],
    };
    t.search(MbrPredicate::All, &all, |e| {
        eat(e.ptr);
        for v in e.mbr.min.iter().chain(e.mbr.max.iter()) {
            eat(v.to_bits());
        }
    })?;
    Ok(format!("{h:016x}"))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let rects = data::rects(args.n, args.seed);
    for page in [1024usize, 4096] {
        for (name, kind, max_fill) in kinds() {
            // The exhaustive split needs small nodes: 1 KB pages at 70 % (17 entries).
            let max_fill = if max_fill == 0.0 {
                if page != 1024 {
                    continue;
                }
                0.7
            } else {
                max_fill
            };
            let layout = NodeLayout::new(LayoutKind::Checked, page, 2)?;
            let occ = Occupancy {
                leaf_max: max_fill,
                internal_max: max_fill,
                ..Occupancy::default()
            };
            let cap = Capacity::new(&layout, &occ)?;
            let dev = MemoryDevice::open(&MemoryConfig { capacity: 1 << 32 }, page, None)?;
            let cache = PageCache::new(Box::new(dev), &"lru:1GB".parse::<CacheConfig>()?)?;
            let store = DirectStore::create(cache, layout, None)?;
            let mut t = Tree::create(store, cap, kind)?;
            for (i, r) in rects.iter().enumerate() {
                t.insert(*r, i as u64)?;
            }
            let built = digest(&mut t)?;
            for (i, r) in rects.iter().enumerate() {
                if i % 3 == 0 {
                    if !t.delete(r, i as u64)? {
                        bail!("{name}: object {i} not found");
                    }
                } else if i % 5 == 0 {
                    let moved = Rect {
                        min: [r.min[0] + 1000.0, r.min[1]],
                        max: [r.max[0] + 1000.0, r.max[1]],
                    };
                    if !t.update(r, moved, i as u64)? {
                        bail!("{name}: object {i} not found for update");
                    }
                }
            }
            let after = digest(&mut t)?;
            let rep = t.check()?;
            if !rep.ok() {
                bail!("{name}: checker failed: {:?}", rep.violations);
            }
            let s = t.stats().clone();
            let st = NodeStore::<2>::stats(t.store());
            println!(
                "page={page} {name:<14} built={built} after={after} height={} nodes={} splits={} forced={} reinserted={} condensed={} reads={} writes={} store={:?}",
                rep.height,
                rep.nodes,
                s.splits,
                s.forced_reinserts,
                s.reinserted_entries,
                s.condensed_nodes,
                s.reads_per_level.iter().sum::<u64>(),
                s.writes_per_level.iter().sum::<u64>(),
                st
            );
        }
    }
    Ok(())
}
