//! The best-first traversal against the plain one it replaces (every child of every read
//! node queued on its own): the same entries in the same order, ties included (limited
//! to a few, those within the last one's distance: the top-k buffer), and the same nodes
//! read; and the branch-free distance key against [`Rect::min_dist`].

use std::collections::BinaryHeap;

use proptest::prelude::*;

use super::{dist_key, gaps2, reject_above, Item, ENTRY, TOP_MAX};
use crate::cache::{CacheConfig, PageCache};
use crate::device::memory::{MemoryConfig, MemoryDevice};
use crate::geom::Rect;
use crate::index::{ForTreeOptions, HilbertOptions, IndexKind, RStarOptions, SplitAlgorithm, Tree};
use crate::node::{Capacity, LayoutKind, Occupancy};
use crate::store::direct::DirectStore;

const PAGE: usize = 1024;

fn kinds() -> Vec<IndexKind> {
    vec![
        IndexKind::RTree {
            split: SplitAlgorithm::Linear,
        },
        IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        },
        IndexKind::RStar(RStarOptions::default()),
        IndexKind::Hilbert(HilbertOptions::default()),
        IndexKind::ForTree(ForTreeOptions::default()),
    ]
}

fn tree(kind: IndexKind) -> Tree<DirectStore, 2> {
    let layout = kind.layout(LayoutKind::Checked, PAGE, 2).unwrap();
    let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
    let dev = MemoryDevice::open(&MemoryConfig::default(), PAGE, None).unwrap();
    let cache = PageCache::new(Box::new(dev), &CacheConfig::none()).unwrap();
    Tree::create(DirectStore::create(cache, layout, None).unwrap(), cap, kind).unwrap()
}

/// The plain best-first traversal (every child queued on its own, keys by
/// [`Rect::min_dist`]), limited to the first `first` entries as
/// [`Tree::nearest_iter_first`] is: every entry it yields as (key, id), and the pages it
/// read per level.
fn plain(t: &mut Tree<DirectStore, 2>, p: [f64; 2], first: usize) -> (Vec<(u64, u64)>, Vec<u64>) {
    let before = t.stats().reads_per_level.clone();
    let mut heap = BinaryHeap::new();
    let mut nearest: BinaryHeap<u64> = BinaryHeap::new();
    let bound = |nearest: &BinaryHeap<u64>| {
        if nearest.len() < first {
            u64::MAX
        } else {
            *nearest.peek().unwrap()
        }
    };
    heap.push(Item {
        key: 0,
        level: t.root_level(),
        slot: 0,
        ptr: t.meta.root,
    });
    let mut out = Vec::new();
    while let Some(item) = heap.pop() {
        if item.level == ENTRY {
            out.push((item.key, item.ptr));
            continue;
        }
        if item.key > bound(&nearest) {
            continue;
        }
        let node = t.read_node(item.ptr, item.level).unwrap();
        for e in node.entries {
            let key = e.mbr.min_dist(&p).bits();
            if key > bound(&nearest) {
                continue;
            }
            if item.level == 0 && first != usize::MAX {
                if nearest.len() < first {
                    nearest.push(key);
                } else if key < *nearest.peek().unwrap() {
                    nearest.pop();
                    nearest.push(key);
                }
            }
            heap.push(Item {
                key,
                level: if item.level == 0 {
                    ENTRY
                } else {
                    item.level - 1
                },
                slot: 0,
                ptr: e.ptr,
            });
        }
    }
    (out, reads_since(t, &before))
}

/// The pages read per level since the counts were `before`.
fn reads_since(t: &Tree<DirectStore, 2>, before: &[u64]) -> Vec<u64> {
    let mut reads = t.stats().reads_per_level.clone();
    for (r, b) in reads.iter_mut().zip(before) {
        *r -= b;
    }
    while reads.last() == Some(&0) {
        reads.pop();
    }
    reads
}

/// The traversal under test, run to its end: (key, id) of every entry, pages read per
/// level.
fn grouped(t: &mut Tree<DirectStore, 2>, p: [f64; 2], first: usize) -> (Vec<(u64, u64)>, Vec<u64>) {
    let before = t.stats().reads_per_level.clone();
    let mut it = t.nearest_iter_first(p, first).unwrap();
    let mut out = Vec::new();
    while let Some(n) = t.nearest_next(&mut it).unwrap() {
        out.push((n.dist.bits(), n.entry.ptr));
    }
    t.nearest_done(it);
    (out, reads_since(t, &before))
}

/// What the traversal limited to the first `first` entries yields of the plain one's
/// `want`: every entry with a limit up to [`TOP_MAX`] (the best-first queue), only those
/// within the distance of the `first`-th above it (the top-k buffer drops the others).
fn expected(want: &(Vec<(u64, u64)>, Vec<u64>), first: usize) -> (Vec<(u64, u64)>, Vec<u64>) {
    let (entries, reads) = want;
    if first > TOP_MAX || entries.len() <= first {
        return want.clone();
    }
    let bound = entries[first - 1].0;
    let within = entries
        .iter()
        .take_while(|e| e.0 <= bound)
        .copied()
        .collect();
    (within, reads.clone())
}

/// Magnitudes of coordinates: ordinary, around the overflow and underflow of squares.
const SCALES: [f64; 7] = [1.0, 1e150, 1e160, 1e300, 1e-160, 1e-300, 1e-10];

fn coord() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-1.0f64..1.0, 0..SCALES.len()).prop_map(|(m, s)| m * SCALES[s]),
        (-3i32..4).prop_map(f64::from),
        Just(-0.0),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// The branch-free key is `Rect::min_dist`'s at every magnitude, inside, on the
    /// edges and outside the box.
    #[test]
    fn dist_key_is_min_dist(a in coord(), b in coord(), c in coord(), d in coord(),
                            x in coord(), y in coord()) {
        let r = Rect::new([a.min(c), b.min(d)], [a.max(c), b.max(d)]).unwrap();
        for p in [[x, y], [a, y], [x, d], [a, b], [c, d]] {
            prop_assert_eq!(dist_key(&r, &p), r.min_dist(&p).bits(), "{:?} from {:?}", r, p);
        }
    }

    /// The early drop on squares never drops an entry within the bound: not the one whose
    /// key is the bound, nor any other (keys of boxes around one point).
    #[test]
    fn the_early_drop_keeps_what_is_within_the_bound(
        a in coord(), b in coord(), w in 0.0f64..1.0, h in 0.0f64..1.0,
        c in coord(), d in coord(), x in coord(), y in coord(), nudge in -3i64..4,
    ) {
        let p = [x, y];
        let r1 = Rect::new([a, b], [a + w * a.abs(), b + h * b.abs()]).unwrap();
        let r2 = Rect::new([c.min(d), c.min(d)], [c.max(d), c.max(d)]).unwrap();
        let own = dist_key(&r1, &p);
        // Never rejected: not greater (NaN compares as not greater too).
        let rejected = gaps2(&r1, &p).partial_cmp(&reject_above(own))
            == Some(std::cmp::Ordering::Greater);
        prop_assert!(!rejected, "{:?} from {:?}", r1, p);
        for bound in [own, own.saturating_add_signed(nudge)] {
            if gaps2(&r2, &p) > reject_above(bound) {
                prop_assert!(dist_key(&r2, &p) > bound, "{:?} from {:?}, bound {}", r2, p, bound);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Boxes on a small grid (many equal distances, points inside several boxes): every
    /// variant's traversal yields the plain traversal's entries in its order and reads
    /// the same nodes, unlimited and limited to the first k.
    #[test]
    fn groups_keep_the_plain_order_and_reads(
        boxes in prop::collection::vec((0i32..30, 0i32..30, 0i32..4, 0i32..4), 1..400),
        points in prop::collection::vec((-3i32..33, -3i32..33), 1..4),
    ) {
        for kind in kinds() {
            let mut t = tree(kind);
            for (i, &(x, y, w, h)) in boxes.iter().enumerate() {
                let (x, y) = (f64::from(x), f64::from(y));
                let r = Rect::new([x, y], [x + f64::from(w), y + f64::from(h)]).unwrap();
                t.insert(r, i as u64).unwrap();
            }
            for &(x, y) in &points {
                let p = [f64::from(x), f64::from(y)];
                for first in [1, 3, 10, TOP_MAX, TOP_MAX + 1, usize::MAX] {
                    let want = expected(&plain(&mut t, p, first), first);
                    let got = grouped(&mut t, p, first);
                    prop_assert_eq!(&got, &want, "{} from {:?}, first {}", kind.label(), p, first);
                    if first == usize::MAX {
                        prop_assert_eq!(got.0.len(), boxes.len());
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Boxes on a grid scaled so that squared distances sit around the plain range's
    /// lower end (1e-150: squares near 1e-300) or underflow (1e-160), and points on the
    /// grid or far beyond it (squares that overflow): the grouped traversal, which takes
    /// the square root of a child's sum of squares only near its group's least, yields
    /// the plain traversal's entries in its order and reads the same nodes.
    #[test]
    fn groups_keep_the_plain_order_at_every_magnitude(
        scale in prop::sample::select(vec![1.0, 1e-150, 1e-151, 1e-155, 1e-160]),
        boxes in prop::collection::vec((0i32..20, 0i32..20, 0i32..3, 0i32..3), 1..300),
        points in prop::collection::vec((-3i32..23, -3i32..23, prop::bool::ANY), 1..3),
    ) {
        for kind in [
            IndexKind::RStar(RStarOptions::default()),
            IndexKind::Hilbert(HilbertOptions::default()),
            IndexKind::ForTree(ForTreeOptions::default()),
        ] {
            let mut t = tree(kind);
            for (i, &(x, y, w, h)) in boxes.iter().enumerate() {
                let (x, y) = (f64::from(x) * scale, f64::from(y) * scale);
                let r = Rect::new([x, y], [x + f64::from(w) * scale, y + f64::from(h) * scale])
                    .unwrap();
                t.insert(r, i as u64).unwrap_or_else(|e| panic!("{}: {e}", kind.label()));
            }
            for &(x, y, far) in &points {
                let (x, y) = (f64::from(x) * scale, f64::from(y) * scale);
                // Far: every square overflows (gaps near 1e160).
                let p = if far { [x + 1e160, y - 1e160] } else { [x, y] };
                for first in [1, 5, TOP_MAX + 1, usize::MAX] {
                    let want = expected(&plain(&mut t, p, first), first);
                    let got = grouped(&mut t, p, first);
                    prop_assert_eq!(&got, &want, "{} from {:?}, first {}", kind.label(), p, first);
                }
            }
        }
    }
}
