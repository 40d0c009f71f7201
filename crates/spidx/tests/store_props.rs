//! The index property tests (brute force, checker after every step, reopen) over every node
//! store configuration through `AnyStore`: the direct store and FAST with every flushing
//! policy and flushing units 1 to 5, with buffers small enough that flushes really happen,
//! and every log placement (same, uncounted, separate).
//! The trees are the same code whatever the store.

mod stores;

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use spidx::cache::CacheConfig;
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::geom::Rect;
use spidx::index::{IndexKind, MbrPredicate, RStarOptions, SplitAlgorithm, Tree};
use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
use spidx::store::{AnyStore, StoreConfig};
use stores::{long_cases, placement_configs, store_configs, PAGE};

type T = Tree<AnyStore, 2>;

fn open_tree(cfg: &StoreConfig, kind: IndexKind, dir: &Path, create: bool) -> T {
    let layout = NodeLayout::new(LayoutKind::Checked, PAGE, 2).unwrap();
    let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
    let state = dir.join("device.state");
    let dev = MemoryDevice::open(&MemoryConfig { capacity: 8 << 20 }, PAGE, Some(&state)).unwrap();
    let cache: CacheConfig = "lru:4KB".parse().unwrap();
    if create {
        let store = cfg
            .create(Box::new(dev), &cache, layout, Some(dir))
            .unwrap();
        Tree::create(store, cap, kind).unwrap()
    } else {
        let store = cfg.open(Box::new(dev), &cache, layout, dir).unwrap();
        Tree::open(store, cap, kind).unwrap()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Rect<2>),
    Delete(usize),
    Update(usize, Rect<2>),
    Window(Rect<2>),
}

fn rect() -> impl Strategy<Value = Rect<2>> {
    (0.0..1000.0f64, 0.0..1000.0f64, 0.0..60.0f64, 0.0..60.0f64).prop_map(|(x, y, w, h)| Rect {
        min: [x.round(), y.round()],
        max: [(x + w).round(), (y + h).round()],
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => rect().prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => (any::<usize>(), rect()).prop_map(|(i, r)| Op::Update(i, r)),
        1 => (0.0..1000.0f64, 0.0..1000.0f64, 0.0..300.0f64).prop_map(|(x, y, s)| Op::Window(Rect { min: [x, y], max: [x + s, y + s] })),
    ]
}

fn check_window(t: &mut T, live: &BTreeMap<u64, Rect<2>>, q: &Rect<2>, what: &str) {
    let mut got = Vec::new();
    t.search(MbrPredicate::Intersects, q, |e| got.push(e.ptr))
        .unwrap();
    got.sort();
    let want: Vec<u64> = live
        .iter()
        .filter(|(_, r)| r.intersects(q))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(got, want, "{what}: window {q:?}");
    let knn: Vec<f64> = t
        .nearest([500.0, 500.0], 5)
        .unwrap()
        .iter()
        .map(|n| n.dist2)
        .collect();
    let mut all: Vec<f64> = live
        .values()
        .map(|r| r.min_dist2(&[500.0, 500.0]))
        .collect();
    all.sort_by(f64::total_cmp);
    all.truncate(5);
    assert_eq!(knn, all, "{what}: kNN");
}

fn run_ops(cfg: &StoreConfig, kind: IndexKind, ops: &[Op]) {
    let what = format!("{cfg:?} {kind:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), true);
    let mut live: BTreeMap<u64, Rect<2>> = BTreeMap::new();
    let mut next_id = 0u64;
    for op in ops {
        match op {
            Op::Insert(r) => {
                t.insert(*r, next_id).unwrap();
                live.insert(next_id, *r);
                next_id += 1;
            }
            Op::Delete(i) => {
                if live.is_empty() {
                    continue;
                }
                let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
                assert!(t.delete(&r, id).unwrap(), "{what}: delete {id}");
                live.remove(&id);
            }
            Op::Update(i, new) => {
                if live.is_empty() {
                    continue;
                }
                let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
                assert!(t.update(&r, *new, id).unwrap());
                live.insert(id, *new);
            }
            Op::Window(q) => check_window(&mut t, &live, q, &what),
        }
        let rep = t.check().unwrap();
        assert!(rep.ok(), "{what} after {op:?}: {:?}", rep.violations);
        assert_eq!(rep.leaf_entries, live.len() as u64, "{what}");
    }
    let q = Rect {
        min: [100.0, 100.0],
        max: [700.0, 600.0],
    };
    check_window(&mut t, &live, &q, &what);
    // The buffer's flush at the end of a workload changes nothing visible.
    t.store_mut().write_back().unwrap();
    check_window(&mut t, &live, &q, &what);
    let rep = t.store().report();
    if let Some(b) = &rep.buffered {
        assert_eq!(b.gauges.bytes, 0, "{what}: write_back empties the buffer");
        assert_eq!(b.gauges.new_nodes + b.gauges.modified_nodes, 0, "{what}");
    }
    // Reopen in a fresh store and device, as another process would.
    t.into_store().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), false);
    let rep = t.check().unwrap();
    assert!(rep.ok(), "{what} after reopen: {:?}", rep.violations);
    assert_eq!(rep.leaf_entries, live.len() as u64);
    check_window(&mut t, &live, &q, &what);
}

fn kinds() -> [IndexKind; 3] {
    [
        IndexKind::RTree {
            split: SplitAlgorithm::Linear,
        },
        IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        },
        IndexKind::RStar(RStarOptions::default()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(6, 64), ..ProptestConfig::default() })]

    #[test]
    fn every_store_matches_brute_force(ops in prop::collection::vec(op(), 1..250)) {
        for (i, cfg) in store_configs().iter().enumerate() {
            // Every store with one tree kind in turn, so each kind meets each policy.
            let kind = kinds()[i % 3];
            run_ops(cfg, kind, &ops);
        }
    }

    #[test]
    fn every_log_placement_matches_brute_force(ops in prop::collection::vec(op(), 1..250)) {
        // Uncounted and separate logs, in memory-backed index directories: answers, the
        // checker after every step, and the reopen (from `log.uncounted`, from the
        // separate device's saved state) as for the default placement.
        for (i, cfg) in placement_configs().iter().enumerate() {
            run_ops(cfg, kinds()[(i + 1) % 3], &ops);
        }
    }
}

#[test]
fn fast_flushes_happen_and_are_counted() {
    // A fixed workload large enough to overflow an 8 KB buffer many times.
    let ops: Vec<Op> = (0..600)
        .map(|i| {
            let x = (i * 7919 % 1000) as f64;
            let y = (i * 104_729 % 1000) as f64;
            if i % 7 == 6 {
                Op::Delete(i * 31)
            } else {
                Op::Insert(Rect {
                    min: [x, y],
                    max: [x + 5.0, y + 5.0],
                })
            }
        })
        .collect();
    for cfg in store_configs().iter().skip(1) {
        let dir = tempfile::tempdir().unwrap();
        let mut t = open_tree(cfg, kinds()[2], dir.path(), true);
        let mut live = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Insert(r) => {
                    t.insert(*r, i as u64).unwrap();
                    live.insert(i as u64, *r);
                }
                Op::Delete(k) => {
                    let (&id, &r) = live.iter().nth(k % live.len()).unwrap();
                    assert!(t.delete(&r, id).unwrap());
                    live.remove(&id);
                }
                _ => unreachable!(),
            }
        }
        let report = t.store().report();
        // The shared statistics, whatever the policy.
        let b = report.buffered.clone().unwrap();
        assert!(b.flushes > 0 && b.flushed_nodes > 0, "{cfg:?}: {b:?}");
        assert!(b.flush_write_requests > 0 && b.flush_write_requests <= b.flushed_nodes);
        assert!(
            b.gauges.bytes <= b.settings.write_buffer,
            "{cfg:?}: the buffer fits after the operation's flushes: {b:?}"
        );
        assert!(b.gauges.peak_bytes >= b.gauges.bytes, "{cfg:?}: {b:?}");
        assert!(b.log.commits >= ops.len() as u64, "{cfg:?}");
        assert!(b.image_bytes >= b.image_records, "{cfg:?}: {b:?}");
        assert_eq!(report.fast.is_some(), report.kind == "fast");
        assert_eq!(report.efind.is_some(), report.kind == "efind");
        assert_eq!(report.lcr.is_some(), report.kind == "lcr");
        if let Some(l) = report.lcr {
            // Modified nodes went to their log pages; reads of them read those pages.
            assert!(
                l.log_page_writes > 0 && l.log_page_reads > 0,
                "{cfg:?}: {l:?}"
            );
            assert_eq!(b.settings.flush_policy, "flush-all");
            assert_eq!(l.gauges.mapping_bytes, 16 * l.gauges.log_pages);
            assert!(
                report.gauges.pages_in_use > l.gauges.log_pages,
                "{cfg:?}: log pages are allocated pages: {l:?}"
            );
        }
        if report.fast.is_some() {
            assert_eq!(b.settings.write_buffer, 8 << 10);
            assert!(b.log.compactions > 0 || b.log.bytes < (1 << 19), "{cfg:?}");
        }
        assert!(t.check().unwrap().ok());
    }
}
