//! Property tests of the R-tree family against brute force: random sequences of inserts,
//! deletes and updates; after every step the checker must pass, and every query kind must
//! return exactly what a scan of the live objects returns, also after reopening.

mod stores;
use stores::check_queries;

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use spidx::cache::{CacheConfig, PageCache};
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::geom::Rect;
use spidx::index::{IndexKind, MbrPredicate, RStarOptions, ReinsertPolicy, SplitAlgorithm, Tree};
use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
use spidx::store::direct::DirectStore;

type T = Tree<DirectStore, 2>;

/// Property-test cases: `short` normally, `long` with `SPIDX_LONG_TESTS` set.
fn long_cases(short: u32, long: u32) -> u32 {
    if std::env::var_os("SPIDX_LONG_TESTS").is_some() {
        long
    } else {
        short
    }
}

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

#[derive(Debug, Clone)]
enum Op {
    Insert(Rect<2>),
    Delete(usize),
    Update(usize, Rect<2>),
    Window(Rect<2>),
    Knn([f64; 2], usize),
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
        1 => (0.0..1000.0f64, 0.0..1000.0f64, 1usize..20).prop_map(|(x, y, k)| Op::Knn([x, y], k)),
    ]
}

fn check_knn(t: &mut T, live: &BTreeMap<u64, Rect<2>>, p: [f64; 2], k: usize) {
    let got: Vec<f64> = t.nearest(p, k).unwrap().iter().map(|n| n.dist2).collect();
    let mut all: Vec<f64> = live.values().map(|r| r.min_dist2(&p)).collect();
    all.sort_by(f64::total_cmp);
    all.truncate(k);
    assert_eq!(got, all, "kNN distances from {p:?}");
}

fn run_ops(kind: IndexKind, max_fill: f64, page: usize, cache: &str, ops: &[Op]) {
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(kind, max_fill, page, cache, dir.path(), true);
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
                    assert!(!t
                        .delete(
                            &Rect {
                                min: [1.0, 1.0],
                                max: [2.0, 2.0]
                            },
                            999_999
                        )
                        .unwrap());
                    continue;
                }
                let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
                assert!(t.delete(&r, id).unwrap(), "delete {id}");
                live.remove(&id);
                assert!(!t.delete(&r, id).unwrap(), "second delete of {id}");
            }
            Op::Update(i, new) => {
                if live.is_empty() {
                    continue;
                }
                let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
                assert!(t.update(&r, *new, id).unwrap());
                live.insert(id, *new);
            }
            Op::Window(q) => check_queries(&mut t, &live, q),
            Op::Knn(p, k) => check_knn(&mut t, &live, *p, *k),
        }
        let rep = t.check().unwrap();
        assert!(rep.ok(), "{kind:?} after {op:?}: {:?}", rep.violations);
        assert_eq!(rep.leaf_entries, live.len() as u64);
    }
    // Reopen in a fresh store and device, as another process would.
    t.into_store().unwrap();
    let mut t = open_tree(kind, max_fill, page, cache, dir.path(), false);
    let rep = t.check().unwrap();
    assert!(rep.ok(), "after reopen: {:?}", rep.violations);
    assert_eq!(rep.leaf_entries, live.len() as u64);
    check_queries(
        &mut t,
        &live,
        &Rect {
            min: [100.0, 100.0],
            max: [700.0, 600.0],
        },
    );
    check_knn(&mut t, &live, [500.0, 500.0], 7);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(32, 300), ..ProptestConfig::default() })]

    #[test]
    fn every_variant_matches_brute_force(ops in prop::collection::vec(op(), 1..400), page_kb in 1usize..3) {
        for (kind, fill) in kinds() {
            run_ops(kind, fill, page_kb * 1024, "lru:16KB", &ops);
        }
    }

    #[test]
    fn buffers_do_not_change_answers(ops in prop::collection::vec(op(), 1..300)) {
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
