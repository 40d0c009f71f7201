//! The workload every index property test replays and the brute-force model it is checked
//! against: random inserts, deletes, updates, windows and kNN queries ([`Op`], [`op`]),
//! applied to a tree and to a map of the live objects ([`Model`]), with every query kind
//! compared to a scan of the map and the tree checker run after every step. One generator for
//! every variant and store (rstar keeps its test generators in one file the same way).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use spidx::cache::CacheConfig;
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::geom::{Distance, Rect};
use spidx::index::{IndexKind, MbrPredicate, Tree};
use spidx::node::{Capacity, LayoutKind, Occupancy};
use spidx::store::{AnyStore, NodeStore, StoreConfig};

/// One step of a property test.
#[derive(Debug, Clone)]
pub enum Op<const D: usize> {
    /// Insert this box under the next id.
    Insert(Rect<D>),
    /// Delete the live object at this index (modulo their number) of the id order.
    Delete(usize),
    /// Move the live object at this index to the box.
    Update(usize, Rect<D>),
    /// Query this window with every MBR predicate.
    Window(Rect<D>),
    /// The k nearest objects to this point.
    Knn([f64; D], usize),
}

impl<const D: usize> Op<D> {
    /// The same step with every coordinate multiplied by `scale`: a workload at magnitudes
    /// whose areas and squared distances overflow (1e300) or underflow (1e-300) `f64`.
    pub fn scaled(&self, scale: f64) -> Self {
        let r = |b: &Rect<D>| Rect {
            min: b.min.map(|c| c * scale),
            max: b.max.map(|c| c * scale),
        };
        match self {
            Op::Insert(b) => Op::Insert(r(b)),
            Op::Delete(i) => Op::Delete(*i),
            Op::Update(i, b) => Op::Update(*i, r(b)),
            Op::Window(q) => Op::Window(r(q)),
            Op::Knn(p, k) => Op::Knn(p.map(|c| c * scale), *k),
        }
    }
}

/// Relative weights of the operations and the sizes of the boxes, windows and k.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    pub insert: u32,
    pub delete: u32,
    pub update: u32,
    pub window: u32,
    pub knn: u32,
    /// Boxes have sides in `[0, side)` before rounding.
    pub side: f64,
    /// Windows have sides in `[0, window_side)`.
    pub window_side: f64,
    /// kNN queries ask for 1 to `max_k - 1` neighbours.
    pub max_k: usize,
}

/// The default mix: mostly inserts, enough deletes to shrink the tree.
pub const MIX: Mix = Mix {
    insert: 6,
    delete: 2,
    update: 1,
    window: 1,
    knn: 1,
    side: 60.0,
    window_side: 300.0,
    max_k: 20,
};

/// A box with integer corners in `[0, 1000]^D` and sides below `side`: integer corners make
/// ties (equal boxes, shared edges) that exercise the predicates' boundaries.
pub fn rect<const D: usize>(side: f64) -> impl Strategy<Value = Rect<D>> {
    (
        prop::array::uniform::<_, D>(0.0..1000.0f64),
        prop::array::uniform::<_, D>(0.0..side),
    )
        .prop_map(|(lo, w)| {
            let mut r = Rect {
                min: [0.0; D],
                max: [0.0; D],
            };
            for d in 0..D {
                r.min[d] = lo[d].round();
                r.max[d] = (lo[d] + w[d]).round();
            }
            r
        })
}

/// One operation drawn with the weights of `m`.
pub fn op<const D: usize>(m: Mix) -> impl Strategy<Value = Op<D>> {
    let window = (
        prop::array::uniform::<_, D>(0.0..1000.0f64),
        0.0..m.window_side,
    )
        .prop_map(|(lo, s)| {
            let mut q = Rect { min: lo, max: lo };
            for d in 0..D {
                q.max[d] += s;
            }
            Op::Window(q)
        });
    prop_oneof![
        m.insert => rect::<D>(m.side).prop_map(Op::Insert),
        m.delete => any::<usize>().prop_map(Op::Delete),
        m.update => (any::<usize>(), rect::<D>(m.side)).prop_map(|(i, r)| Op::Update(i, r)),
        m.window => window,
        m.knn => (prop::array::uniform::<_, D>(0.0..1000.0f64), 1..m.max_k).prop_map(|(p, k)| Op::Knn(p, k)),
    ]
}

/// Checks every MBR predicate's answer for window `q` against brute force over `live`
/// (id -> box), for a tree under any store.
pub fn check_queries<S: NodeStore<D>, const D: usize>(
    t: &mut Tree<S, D>,
    live: &BTreeMap<u64, Rect<D>>,
    q: &Rect<D>,
) {
    for pred in [
        MbrPredicate::Intersects,
        MbrPredicate::Within,
        MbrPredicate::Contains,
        MbrPredicate::Equals,
        MbrPredicate::All,
    ] {
        let mut got = Vec::new();
        t.search(pred, q, |e| got.push(e.ptr)).unwrap();
        got.sort();
        let want: Vec<u64> = live
            .iter()
            .filter(|(_, r)| match pred {
                MbrPredicate::Intersects => r.intersects(q),
                MbrPredicate::Within => q.contains(r),
                MbrPredicate::Contains => r.contains(q),
                MbrPredicate::Equals => *r == q,
                MbrPredicate::All => true,
            })
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(got, want, "{pred:?} {q:?}");
    }
}

/// Checks the distances of the `k` nearest objects to `p` against brute force (ties make
/// the ids ambiguous, the distances are not).
pub fn check_knn<S: NodeStore<D>, const D: usize>(
    t: &mut Tree<S, D>,
    live: &BTreeMap<u64, Rect<D>>,
    p: [f64; D],
    k: usize,
) {
    let found = t.nearest(p, k).unwrap();
    for n in &found {
        assert_eq!(
            Some(n.entry.mbr),
            live.get(&n.entry.ptr).copied(),
            "kNN from {p:?} found {n:?}, not a live object"
        );
        assert_eq!(n.dist, n.entry.mbr.min_dist(&p), "{n:?}");
    }
    let got: Vec<Distance> = found.iter().map(|n| n.dist).collect();
    let mut all: Vec<Distance> = live.values().map(|r| r.min_dist(&p)).collect();
    all.sort();
    all.truncate(k);
    assert_eq!(got, all, "kNN distances from {p:?}");
}

/// The live objects a tree should hold, by id.
#[derive(Debug, Default)]
pub struct Model<const D: usize> {
    /// Live objects: id -> box.
    pub live: BTreeMap<u64, Rect<D>>,
    /// The id the next insert gets.
    pub next_id: u64,
}

impl<const D: usize> Model<D> {
    /// An empty model.
    pub fn new() -> Self {
        Model {
            live: BTreeMap::new(),
            next_id: 0,
        }
    }

    /// Applies `op` to the tree and to the model (queries are compared with brute force),
    /// then runs the checker; `what` names the configuration in failure messages.
    pub fn apply<S: NodeStore<D>>(&mut self, t: &mut Tree<S, D>, op: &Op<D>, what: &str) {
        match op {
            Op::Insert(r) => {
                t.insert(*r, self.next_id).unwrap();
                self.live.insert(self.next_id, *r);
                self.next_id += 1;
            }
            Op::Delete(i) => {
                let Some((&id, &r)) = self.nth(*i) else {
                    let absent = Rect {
                        min: [1.0; D],
                        max: [2.0; D],
                    };
                    assert!(
                        !t.delete(&absent, u64::MAX).unwrap(),
                        "{what}: empty delete"
                    );
                    return self.check(t, what, op);
                };
                assert!(t.delete(&r, id).unwrap(), "{what}: delete {id}");
                self.live.remove(&id);
                assert!(!t.delete(&r, id).unwrap(), "{what}: second delete of {id}");
            }
            Op::Update(i, new) => {
                if let Some((&id, &r)) = self.nth(*i) {
                    assert!(t.update(&r, *new, id).unwrap(), "{what}: update {id}");
                    self.live.insert(id, *new);
                }
            }
            Op::Window(q) => check_queries(t, &self.live, q),
            Op::Knn(p, k) => check_knn(t, &self.live, *p, *k),
        }
        self.check(t, what, op);
    }

    /// Applies every operation of `ops` (see [`apply`](Self::apply)).
    pub fn apply_all<S: NodeStore<D>>(&mut self, t: &mut Tree<S, D>, ops: &[Op<D>], what: &str) {
        for op in ops {
            self.apply(t, op, what);
        }
    }

    /// The checker passes and the tree holds exactly the live objects.
    pub fn check<S: NodeStore<D>>(
        &self,
        t: &mut Tree<S, D>,
        what: &str,
        after: impl std::fmt::Debug,
    ) {
        let rep = t.check().unwrap();
        assert!(rep.ok(), "{what} after {after:?}: {:?}", rep.violations);
        assert_eq!(
            rep.leaf_entries,
            self.live.len() as u64,
            "{what} after {after:?}"
        );
    }

    /// Every query kind over the whole space and a part of it, and one kNN query.
    pub fn check_answers<S: NodeStore<D>>(&self, t: &mut Tree<S, D>) {
        let mut q = Rect {
            min: [-1.0; D],
            max: [2000.0; D],
        };
        check_queries(t, &self.live, &q);
        q.min = [100.0; D];
        q.max = [600.0; D];
        check_queries(t, &self.live, &q);
        check_knn(t, &self.live, [500.0; D], 9);
    }

    fn nth(&self, i: usize) -> Option<(&u64, &Rect<D>)> {
        if self.live.is_empty() {
            return None;
        }
        self.live.iter().nth(i % self.live.len())
    }
}

/// Node page size of the trees [`open_tree`] opens.
pub const PAGE: usize = 1024;

/// A `kind` tree under store `cfg` on a 16 MB memory device whose state (and the store's
/// files) live in `dir`: created, or reopened as another process would.
pub fn open_tree<const D: usize>(
    cfg: &StoreConfig,
    kind: IndexKind,
    dir: &Path,
    create: bool,
) -> Tree<AnyStore, D> {
    open_tree_with(cfg, kind, &Occupancy::default(), dir, create)
}

/// [`open_tree`] with node fill bounds `occ`.
pub fn open_tree_with<const D: usize>(
    cfg: &StoreConfig,
    kind: IndexKind,
    occ: &Occupancy,
    dir: &Path,
    create: bool,
) -> Tree<AnyStore, D> {
    let layout = kind.layout(LayoutKind::Checked, PAGE, D).unwrap();
    let cap = Capacity::new(&layout, occ).unwrap();
    let state = dir.join("device.state");
    let dev = MemoryDevice::open(&MemoryConfig { capacity: 16 << 20 }, PAGE, Some(&state)).unwrap();
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
