//! Property tests of the R-tree family against brute force: random sequences of inserts,
//! deletes and updates; after every step the checker must pass, and every query kind must
//! return exactly what a scan of the live objects returns, also after reopening.

mod model;
mod stores;

use std::path::Path;

use model::{op, Model, Op, MIX};
use proptest::prelude::*;
use spidx::cache::{CacheConfig, PageCache};
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::geom::Rect;
use spidx::index::{IndexKind, MbrPredicate, RStarOptions, ReinsertPolicy, SplitAlgorithm, Tree};
use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
use spidx::store::direct::DirectStore;
use stores::long_cases;

type T = Tree<DirectStore, 2>;

fn kinds() -> Vec<(IndexKind, f64)> {
    let rstar = |leaf: f64, internal: f64, policy| RStarOptions {
        reinsert_leaf: leaf,
        reinsert_internal: internal,
        policy,
        candidates: 32,
    };
    vec![
        (
            IndexKind::RTree {
                split: SplitAlgorithm::Linear,
            },
            1.0,
        ),
        (
            IndexKind::RTree {
                split: SplitAlgorithm::Quadratic,
            },
            1.0,
        ),
        (
            IndexKind::RTree {
                split: SplitAlgorithm::Exponential,
            },
            0.3,
        ),
        (
            IndexKind::RTree {
                split: SplitAlgorithm::Greene,
            },
            1.0,
        ),
        (
            IndexKind::RTree {
                split: SplitAlgorithm::AngTan,
            },
            1.0,
        ),
        (
            IndexKind::RStar(rstar(0.3, 0.3, ReinsertPolicy::Close)),
            1.0,
        ),
        (IndexKind::RStar(rstar(0.2, 0.4, ReinsertPolicy::Far)), 1.0),
        (
            IndexKind::RStar(RStarOptions {
                candidates: 2,
                ..rstar(0.4, 0.0, ReinsertPolicy::Close)
            }),
            1.0,
        ),
    ]
}

fn open_tree(
    kind: IndexKind,
    max_fill: f64,
    page: usize,
    cache: &str,
    dir: &Path,
    create: bool,
) -> T {
    let layout = NodeLayout::new(LayoutKind::Checked, page, 2).unwrap();
    let occ = Occupancy {
        leaf_max: max_fill,
        internal_max: max_fill,
        ..Default::default()
    };
    let cap = Capacity::new(&layout, &occ).unwrap();
    let state = dir.join("device.state");
    let dev = MemoryDevice::open(&MemoryConfig { capacity: 1 << 30 }, page, Some(&state)).unwrap();
    let cache = PageCache::new(Box::new(dev), &cache.parse::<CacheConfig>().unwrap()).unwrap();
    let header = dir.join("store.json");
    if create {
        let store = DirectStore::create(cache, layout, Some(&header)).unwrap();
        Tree::create(store, cap, kind).unwrap()
    } else {
        let store = DirectStore::open(cache, layout, &header).unwrap();
        Tree::open(store, cap, kind).unwrap()
    }
}

fn run_ops(kind: IndexKind, max_fill: f64, page: usize, cache: &str, ops: &[Op<2>]) {
    let what = format!("{kind:?} fill {max_fill} page {page} {cache}");
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(kind, max_fill, page, cache, dir.path(), true);
    let mut m = Model::new();
    m.apply_all(&mut t, ops, &what);
    // Reopen in a fresh store and device, as another process would.
    t.into_store().unwrap();
    let mut t = open_tree(kind, max_fill, page, cache, dir.path(), false);
    m.check(&mut t, &what, "reopen");
    m.check_answers(&mut t);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(32, 300), ..ProptestConfig::default() })]

    #[test]
    fn every_variant_matches_brute_force(ops in prop::collection::vec(op::<2>(MIX), 1..400), page_kb in 1usize..3) {
        for (kind, fill) in kinds() {
            run_ops(kind, fill, page_kb * 1024, "lru:16KB", &ops);
        }
    }

    /// Boxes whose coordinates are near the ends of `f64`'s range: areas, margins and
    /// enlargements overflow to infinity (or underflow to zero), and every variant must
    /// still choose, split, reinsert and answer exactly.
    #[test]
    fn every_variant_matches_brute_force_at_extreme_magnitudes(
        ops in prop::collection::vec(op::<2>(MIX), 1..300),
        scale in prop::sample::select(vec![1e300, 1e150, 1e-150, 1e-300]),
    ) {
        let ops: Vec<Op<2>> = ops.iter().map(|o| o.scaled(scale)).collect();
        for (kind, fill) in kinds() {
            run_ops(kind, fill, 1024, "lru:16KB", &ops);
        }
    }

    #[test]
    fn buffers_do_not_change_answers(ops in prop::collection::vec(op::<2>(MIX), 1..300)) {
        for cache in ["none", "lru:4KB", "hlru:8KB", "s2q:8KB", "2q:16KB"] {
            run_ops(IndexKind::RStar(RStarOptions::default()), 1.0, 1024, cache, &ops);
        }
    }
}

#[test]
fn bad_boxes_are_rejected_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(
        IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        },
        1.0,
        1024,
        "lru:64KB",
        dir.path(),
        true,
    );
    for i in 0..200 {
        let x = (i * 37 % 1000) as f64;
        t.insert(
            Rect {
                min: [x, x / 2.0],
                max: [x + 3.0, x / 2.0 + 3.0],
            },
            i,
        )
        .unwrap();
    }
    let bad = [
        Rect {
            min: [f64::NAN, 0.0],
            max: [1.0, 1.0],
        },
        Rect {
            min: [5.0, 0.0],
            max: [1.0, 1.0],
        },
        Rect {
            min: [0.0, 0.0],
            max: [f64::INFINITY, 1.0],
        },
    ];
    // Each error names what was wrong and where, never a debug dump of the box.
    let problems = [
        "coordinate 0 of the lower corner is NaN",
        "inverted on axis 0",
        "coordinate 0 of the upper corner is inf",
    ];
    for (b, problem) in bad.into_iter().zip(problems) {
        let errors = [
            (
                t.insert(b, 1000).unwrap_err().to_string(),
                "box of object 1000",
            ),
            (t.delete(&b, 1).unwrap_err().to_string(), "box of object 1"),
            (
                t.search(MbrPredicate::Intersects, &b, |_| {})
                    .unwrap_err()
                    .to_string(),
                "query window",
            ),
        ];
        for (e, what) in errors {
            assert!(
                e.contains(&format!("invalid {what}: {problem}")) && !e.contains("Rect"),
                "{e}"
            );
        }
    }
    let e = t.nearest([0.0, f64::NAN], 3).unwrap_err().to_string();
    assert!(
        e.contains("invalid query point: coordinate 1 is NaN") && !e.contains('['),
        "{e}"
    );
    let rep = t.check().unwrap();
    assert!(rep.ok(), "{:?}", rep.violations);
    assert_eq!(rep.leaf_entries, 200);
}
