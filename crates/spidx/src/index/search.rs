//! The filter step of queries: which leaf entries may satisfy a spatial predicate, judged
//! on MBRs alone, and best-first k-nearest-neighbour search on MBR distances (Hjaltason
//! and Samet's incremental algorithm). Exact answers need the refinement step on the
//! objects' geometries, done by the query layer above.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::Tree;
use crate::geom::{Distance, Rect};
use crate::node::{Entry, NodeView, PageId};
use crate::store::NodeStore;
use crate::{Error, Result};

/// A spatial predicate between an object `o` and a query box `q`, as the filter step
/// applies it on MBRs. Each object predicate (`o` contains `q`, ...) implies the MBR test
/// used here, so no true result is ever filtered out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MbrPredicate {
    /// MBR(o) intersects q (intersects, overlaps, touches).
    Intersects,
    /// MBR(o) contains q (o contains or covers q).
    Contains,
    /// MBR(o) lies within q (o within or covered by q).
    Within,
    /// MBR(o) equals q (o equals q).
    Equals,
    /// Every object (disjoint cannot prune on MBRs; refinement decides).
    All,
}

impl MbrPredicate {
    /// Whether a subtree whose MBR is `node` can hold a qualifying object.
    #[inline]
    fn descend<const D: usize>(self, node: &Rect<D>, q: &Rect<D>) -> bool {
        match self {
            MbrPredicate::Intersects | MbrPredicate::Within => node.intersects(q),
            MbrPredicate::Contains | MbrPredicate::Equals => node.contains(q),
            MbrPredicate::All => true,
        }
    }

    /// Whether a leaf entry's MBR qualifies.
    #[inline]
    fn accept<const D: usize>(self, mbr: &Rect<D>, q: &Rect<D>) -> bool {
        match self {
            MbrPredicate::Intersects => mbr.intersects(q),
            MbrPredicate::Within => q.contains(mbr),
            MbrPredicate::Contains => mbr.contains(q),
            MbrPredicate::Equals => mbr == q,
            MbrPredicate::All => true,
        }
    }
}

/// A neighbour found by [`Tree::nearest`]: MBR distance and the leaf entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbour<const D: usize> {
    /// Distance from the query point to the entry's MBR ([`Rect::min_dist`]).
    pub dist: Distance,
    /// The leaf entry.
    pub entry: Entry<D>,
}

/// An item of the best-first queue: a leaf entry (`level == ENTRY`, its MBR at `slot` of
/// [`NearestIter::boxes`]) or a node at `level`, the nearest waiting child of the inner
/// node whose group is `slot` (see [`Group`]; `ROOT` for the root). 24 bytes in every
/// dimension: the boxes stay out of the heap, so sifting moves little.
#[derive(Clone, Copy)]
struct Item {
    key: u64,
    level: u32,
    slot: u32,
    ptr: PageId,
}

/// A leaf entry waiting in the top-k buffer of a traversal limited to the first few
/// entries ([`TOP_MAX`]): its key, id and MBR.
#[derive(Clone, Copy)]
struct Cand<const D: usize> {
    key: u64,
    ptr: PageId,
    mbr: Rect<D>,
}

/// The largest limit ([`Tree::nearest_iter_first`]) for which leaf entries wait in a
/// sorted buffer of about that many instead of the best-first queue: a k-nearest query
/// queues a few hundred entries, most of them soon beyond the k-th nearest; a buffer of
/// k sorted entries keeps them out of the heap, and an insertion moves at most k of them.
const TOP_MAX: usize = 64;

/// The level that marks a leaf entry in the queue.
const ENTRY: u32 = u32::MAX;

/// The slot of the root's item: it belongs to no group.
const ROOT: u32 = u32::MAX;

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    // Min-heap on distance; entries before nodes at equal distance (and higher nodes
    // before lower ones); then by pointer for determinism.
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        o.key
            .cmp(&self.key)
            .then_with(|| self.level.cmp(&o.level))
            .then_with(|| o.ptr.cmp(&self.ptr))
    }
}

/// A child of an inner node that the traversal read: the sum of squared gaps between
/// its box and the point ([`gaps2`]), its key ([`key_of`]) where already known, and its
/// page. Where the sum is in the plain range the key is its square root, taken only when
/// the child may be the nearest waiting one of its group ([`NearestIter::select`]); most
/// children of a node read are never queued, so most roots are never taken.
#[derive(Clone, Copy)]
struct Child {
    sq: f64,
    /// [`UNKNOWN`] until taken.
    key: u64,
    ptr: PageId,
}

/// A key not yet computed: never a key (keys are the bits of numbers from 0 to `+inf`).
const UNKNOWN: u64 = u64::MAX;

/// Above `min_dist`'s lower limit of the plain computation (2^-1000): a sum of squares
/// from here to `+inf` (excluded) has its square root as key.
const PLAIN_MIN: f64 = 1e-300;

/// Whether a sum of squared gaps is in the plain range ([`PLAIN_MIN`]).
#[inline(always)]
fn is_plain(s: f64) -> bool {
    (PLAIN_MIN..f64::INFINITY).contains(&s)
}

impl Child {
    /// The child `ptr` whose box `m` is at sum of squares `s` from `p`: its key computed
    /// now only outside the plain range (it needs the box).
    #[inline(always)]
    fn new<const D: usize>(s: f64, m: &Rect<D>, p: &[f64; D], ptr: PageId) -> Self {
        let key = if is_plain(s) {
            UNKNOWN
        } else {
            key_of(s, m, p)
        };
        Child { sq: s, key, ptr }
    }

    /// The child's key ([`key_of`]).
    #[inline(always)]
    fn key(&self) -> u64 {
        if self.key == UNKNOWN {
            self.sq.sqrt().to_bits()
        } else {
            self.key
        }
    }
}

/// The children that may share the least key of a group whose least sum of squares is
/// `s0`: those whose sum is at most this. Keys are square roots of sums in the plain
/// range (so they grow with the sum, and two sums with the same root differ by less
/// than 2^-51 relatively), sums below it belong to keys at most `sqrt(PLAIN_MIN)` (a few
/// roundings aside) and overflowed sums to distances of at least `sqrt(f64::MAX)`: a
/// relative band of 2^-40 above the larger of `s0` and [`PLAIN_MIN`] holds every child
/// whose key can be the least, and the band of a sum near `f64::MAX` overflows to `+inf`.
#[inline]
fn tie_band(s0: f64) -> f64 {
    const BAND: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;
    s0.max(PLAIN_MIN) * BAND
}

/// The children of one inner node read by the traversal that are still waiting:
/// `children[start..end]` of [`NearestIter`], in no order. The queue holds one item for
/// the group, its nearest child (by key, then page, the queue's own order among nodes of
/// one level), at position `at`; when that item comes first the child is taken out and
/// the group's next nearest queued. The queue thus pops nodes in exactly the order it
/// would with every child queued, while holding one item per node read instead of one
/// per child (the children of a 4 KB node are about a hundred, of which a k-nearest
/// search reads a few).
#[derive(Clone, Copy)]
struct Group {
    start: u32,
    end: u32,
    at: u32,
}

/// [`Rect::min_dist`] of `m` from `p` as a key ([`Distance::bits`]), the same value,
/// computed without a branch on which side of the box the point lies (an unpredictable
/// branch per axis and entry, otherwise): see [`gaps2`] and [`key_of`].
#[cfg(test)]
#[inline(always)]
fn dist_key<const D: usize>(m: &Rect<D>, p: &[f64; D]) -> u64 {
    key_of(gaps2(m, p), m, p)
}

/// The sum of squared gaps between `m` and `p` that [`Rect::min_dist2`] computes, the
/// same number: per axis the gap is the largest of `min - p`, `p - max` and 0, which is
/// `min_dist2`'s gap (at most one of the differences is positive).
#[inline(always)]
fn gaps2<const D: usize>(m: &Rect<D>, p: &[f64; D]) -> f64 {
    let mut s = 0.0;
    for d in 0..D {
        let below = m.min[d] - p[d];
        let above = p[d] - m.max[d];
        let g = if below > above { below } else { above };
        let g = if g > 0.0 { g } else { 0.0 };
        s += g * g;
    }
    s
}

/// The key of `m`'s distance from `p` given `s = gaps2(m, p)`: its square root where
/// [`Rect::min_dist`] takes it; sums outside the plain range (overflowed, or small enough
/// to have underflowed) are left to `min_dist`'s scaled computation.
#[inline(always)]
fn key_of<const D: usize>(s: f64, m: &Rect<D>, p: &[f64; D]) -> u64 {
    if is_plain(s) {
        s.sqrt().to_bits()
    } else {
        m.min_dist(p).bits()
    }
}

/// A sum of squared gaps ([`gaps2`]) above which the key is certainly above `bound`, so
/// that an entry beyond the bound is dropped without its square root: `bound`'s distance
/// `b` squared with a relative margin of 1e-12 (far above the few roundings of `b * b`
/// and of the square root, 2^-53 each), for `b` between 1e-140 and 1e140 (squares far
/// from overflow and underflow); `+inf` (nothing dropped early) otherwise. A sum above
/// it is either plain, with a square root above `b`, or infinite, a distance beyond
/// 1e154.
#[inline]
fn reject_above(bound: u64) -> f64 {
    let b = f64::from_bits(bound);
    if bound < Distance::from_f64(f64::INFINITY).bits() && (1e-140..=1e140).contains(&b) {
        b * b * (1.0 + 1e-12)
    } else {
        f64::INFINITY
    }
}

/// Incremental best-first traversal state, yielding leaf entries by increasing distance
/// (Hjaltason and Samet): one queue of nodes and leaf entries keyed by their MBR's
/// distance, each node read once, when it comes first. Give it back with
/// [`Tree::nearest_done`] so that the next traversal reuses its memory.
pub struct NearestIter<const D: usize> {
    point: [f64; D],
    heap: BinaryHeap<Item>,
    /// MBRs of the leaf entries in the queue (an entry's item names its slot).
    boxes: Vec<Rect<D>>,
    /// The waiting children of the inner nodes read, by group.
    children: Vec<Child>,
    groups: Vec<Group>,
    /// For a caller that takes at most the first `first` entries (and those tied with
    /// the last of them): the keys of the `first` nearest entries queued so far (a
    /// max-heap). Nothing farther than the largest of them, once there are `first`, can
    /// be among the entries taken, so it is not queued.
    first: usize,
    nearest: BinaryHeap<u64>,
    /// With `first` at most [`TOP_MAX`], the leaf entries queued instead of the heap:
    /// sorted by key then id, `top[..head]` already yielded; those beyond the bound are
    /// dropped, so it holds the `first` nearest queued so far and their ties.
    top: Vec<Cand<D>>,
    head: usize,
    /// The largest key that can still be among the entries taken (`u64::MAX` without a
    /// limit or before `first` entries were queued).
    limit: u64,
    /// [`reject_above`] of the current bound.
    reject: f64,
}

/// The memory of a finished traversal, kept by the tree for the next one.
pub(crate) struct NearestSpare<const D: usize> {
    heap: BinaryHeap<Item>,
    boxes: Vec<Rect<D>>,
    children: Vec<Child>,
    groups: Vec<Group>,
    nearest: BinaryHeap<u64>,
    top: Vec<Cand<D>>,
}

impl<const D: usize> Default for NearestSpare<D> {
    fn default() -> Self {
        NearestSpare {
            heap: BinaryHeap::new(),
            boxes: Vec::new(),
            children: Vec::new(),
            groups: Vec::new(),
            nearest: BinaryHeap::new(),
            top: Vec::new(),
        }
    }
}

impl<const D: usize> NearestIter<D> {
    /// The largest key that can still be among the entries taken (`u64::MAX` without a
    /// limit or before `first` entries were queued).
    #[inline(always)]
    fn bound(&self) -> u64 {
        self.limit
    }

    /// Whether leaf entries wait in the top-k buffer ([`TOP_MAX`]).
    #[inline(always)]
    fn buffered(&self) -> bool {
        self.first <= TOP_MAX
    }

    /// Queues the entries of a node at `level` (read as `v`).
    #[inline]
    fn push_view(&mut self, v: NodeView<'_, D>, level: u32) {
        if level == 0 {
            for (i, m) in v.mbrs().enumerate() {
                let s = gaps2(&m, &self.point);
                if s > self.reject {
                    continue;
                }
                let key = key_of(s, &m, &self.point);
                if key <= self.bound() {
                    self.push_entry(key, m, v.ptr(i));
                }
            }
        } else {
            // No entry is queued while the node is scanned: one bound for all. A child
            // within the margin of `reject` but beyond the bound waits in the group
            // without being queued ([`Self::select`] compares the bound).
            let (reject, p) = (self.reject, self.point);
            let start = self.children.len();
            self.children.reserve(v.len());
            let (mut at, mut s0) = (start, f64::INFINITY);
            for (i, m) in v.mbrs().enumerate() {
                let s = gaps2(&m, &p);
                if s > reject {
                    continue;
                }
                if s < s0 {
                    (at, s0) = (self.children.len(), s);
                }
                self.children.push(Child::new(s, &m, &p, v.ptr(i)));
            }
            self.push_group(start, at, level - 1);
        }
    }

    /// Queues the entries of `node` (read whole), at `level`.
    fn push_node(&mut self, node: &crate::node::Node<D>, level: u32) {
        let start = self.children.len();
        let (mut at, mut s0) = (start, f64::INFINITY);
        for e in &node.entries {
            let s = gaps2(&e.mbr, &self.point);
            if s > self.reject {
                continue;
            }
            if level == 0 {
                let key = key_of(s, &e.mbr, &self.point);
                if key <= self.bound() {
                    self.push_entry(key, e.mbr, e.ptr);
                }
            } else {
                if s < s0 {
                    (at, s0) = (self.children.len(), s);
                }
                self.children
                    .push(Child::new(s, &e.mbr, &self.point, e.ptr));
            }
        }
        if level > 0 {
            self.push_group(start, at, level - 1);
        }
    }

    /// Makes `children[start..]` (nodes at `level`) a group and queues its nearest;
    /// `at` is the first of its least sums of squares (or `start` if all are `+inf`).
    #[inline]
    fn push_group(&mut self, start: usize, at: usize, level: u32) {
        let end = self.children.len();
        if end == start {
            return;
        }
        let g = self.groups.len() as u32;
        self.groups.push(Group {
            start: start as u32,
            end: end as u32,
            at: at as u32,
        });
        self.select(g, level);
    }

    /// Queues the nearest waiting child of group `g` (nodes at `level`), unless there is
    /// none or it is farther than the entries taken. Children certainly beyond the bound
    /// (`reject`) leave the group on the way, so that later scans are shorter.
    #[inline]
    fn queue_group(&mut self, g: u32, level: u32) {
        let reject = self.reject;
        let Group { start, mut end, .. } = self.groups[g as usize];
        let (mut i, mut at, mut s0) = (start, start, f64::INFINITY);
        while i < end {
            let s = self.children[i as usize].sq;
            if s > reject {
                end -= 1;
                self.children[i as usize] = self.children[end as usize];
                continue;
            }
            if s < s0 {
                (at, s0) = (i, s);
            }
            i += 1;
        }
        let grp = &mut self.groups[g as usize];
        grp.end = end;
        grp.at = at;
        if end > start {
            self.select(g, level);
        }
    }

    /// Queues the nearest waiting child of group `g` (nodes at `level`; not empty),
    /// whose `at` is a child of least sum of squares: the child of least key, then page
    /// (the queue's order among nodes of one level), is among those within
    /// [`tie_band`] of it, the only ones whose key is computed. Not queued if farther
    /// than the entries taken.
    #[inline]
    fn select(&mut self, g: u32, level: u32) {
        let Group { start, end, at } = self.groups[g as usize];
        let first = at;
        let mut best = self.children[at as usize];
        let hi = tie_band(best.sq);
        let (mut at, mut best_key) = (at, best.key());
        for i in start..end {
            let c = self.children[i as usize];
            if c.sq <= hi && i != first {
                let k = c.key();
                if (k, c.ptr) < (best_key, best.ptr) {
                    (at, best, best_key) = (i, c, k);
                }
            }
        }
        if best_key > self.bound() {
            // Nothing of the group can be among the entries taken.
            return;
        }
        self.groups[g as usize].at = at;
        self.heap.push(Item {
            key: best_key,
            level,
            slot: g,
            ptr: best.ptr,
        });
    }

    /// Takes the child that `item` stands for out of its group and queues the group's
    /// next nearest.
    #[inline]
    fn take(&mut self, item: &Item) {
        if item.slot == ROOT {
            return;
        }
        let grp = &mut self.groups[item.slot as usize];
        grp.end -= 1;
        self.children[grp.at as usize] = self.children[grp.end as usize];
        self.queue_group(item.slot, item.level);
    }

    /// Queues leaf entry `ptr` whose MBR is `m` and key `key` (not beyond the bound).
    #[inline]
    fn push_entry(&mut self, key: u64, m: Rect<D>, ptr: PageId) {
        if self.buffered() {
            self.push_top(key, m, ptr);
            return;
        }
        if self.first != usize::MAX {
            if self.nearest.len() < self.first {
                self.nearest.push(key);
            } else {
                let worst = *self.nearest.peek().expect("first >= 1");
                if key > worst {
                    return;
                }
                if key < worst {
                    self.nearest.pop();
                    self.nearest.push(key);
                }
            }
            if self.nearest.len() == self.first {
                self.limit = *self.nearest.peek().expect("first >= 1");
                self.reject = reject_above(self.limit);
            }
        }
        let slot = self.boxes.len() as u32;
        self.boxes.push(m);
        self.heap.push(Item {
            key,
            level: ENTRY,
            slot,
            ptr,
        });
    }

    /// Puts leaf entry `ptr` (MBR `m`, key `key`, not beyond the bound) into the top-k
    /// buffer at its place by key then id, after the entries already yielded (a
    /// well-formed tree queues none nearer than those: a box is no nearer than its
    /// node's), and drops what the new bound leaves beyond it.
    #[inline]
    fn push_top(&mut self, key: u64, m: Rect<D>, ptr: PageId) {
        let mut at = self.top.len();
        while at > self.head {
            let c = &self.top[at - 1];
            if (c.key, c.ptr) <= (key, ptr) {
                break;
            }
            at -= 1;
        }
        self.top.insert(at, Cand { key, ptr, mbr: m });
        if self.top.len() >= self.first {
            let b = self.top[self.first - 1].key;
            if b != self.limit {
                self.limit = b;
                self.reject = reject_above(b);
            }
            while self.top.last().is_some_and(|c| c.key > b) {
                self.top.pop();
            }
        }
    }

    /// The buffered entry to yield next, if it comes before the queue's first node
    /// (entries before nodes at equal distance, as in the queue).
    #[inline(always)]
    fn next_top(&mut self) -> Option<Neighbour<D>> {
        let c = self.top.get(self.head)?;
        if self.heap.peek().is_some_and(|n| n.key < c.key) {
            return None;
        }
        self.head += 1;
        Some(Neighbour {
            dist: Distance::from_bits(c.key),
            entry: Entry::new(c.mbr, c.ptr),
        })
    }
}

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Calls `visit` for every leaf entry whose MBR satisfies `pred` against `q`.
    pub fn search(
        &mut self,
        pred: MbrPredicate,
        q: &Rect<D>,
        mut visit: impl FnMut(Entry<D>),
    ) -> Result<()> {
        super::check_named(q, || "query window".into())?;
        let mut stack = std::mem::take(&mut self.search_stack);
        stack.clear();
        stack.push((self.meta.root, self.root_level()));
        let r = if self.strategy.pages.is_some() {
            self.search_spanned(&mut stack, pred, q, &mut visit)
        } else {
            self.search_from(&mut stack, pred, q, &mut visit)
        };
        self.search_stack = stack;
        r
    }

    fn search_from(
        &mut self,
        stack: &mut Vec<(PageId, u32)>,
        pred: MbrPredicate,
        q: &Rect<D>,
        visit: &mut impl FnMut(Entry<D>),
    ) -> Result<()> {
        while let Some((id, level)) = stack.pop() {
            self.with_node(id, level, |v| {
                let n = v.len();
                match (pred, level) {
                    // The common case, specialised: a branch-free test per entry.
                    (MbrPredicate::Intersects | MbrPredicate::Within, 1..) => {
                        v.for_each_intersecting(q, |i| stack.push((v.ptr(i), level - 1)));
                    }
                    (MbrPredicate::Intersects, 0) => {
                        v.for_each_intersecting(q, |i| visit(v.entry(i)));
                    }
                    (_, 0) => {
                        for i in 0..n {
                            let m = v.mbr(i);
                            if pred.accept(&m, q) {
                                visit(Entry::new(m, v.ptr(i)));
                            }
                        }
                    }
                    (_, _) => {
                        for i in 0..n {
                            if pred.descend(&v.mbr(i), q) {
                                stack.push((v.ptr(i), level - 1));
                            }
                        }
                    }
                }
            })?;
        }
        Ok(())
    }

    /// [`Self::search_from`] for a variant whose nodes may span several pages
    /// ([`super::strategy::NodePages`]): every node is read whole.
    fn search_spanned(
        &mut self,
        stack: &mut Vec<(PageId, u32)>,
        pred: MbrPredicate,
        q: &Rect<D>,
        visit: &mut impl FnMut(Entry<D>),
    ) -> Result<()> {
        while let Some((id, level)) = stack.pop() {
            let node = self.read_visited(id, level)?;
            for e in &node.entries {
                if level == 0 {
                    if pred.accept(&e.mbr, q) {
                        visit(Entry::new(e.mbr, e.ptr));
                    }
                } else if pred.descend(&e.mbr, q) {
                    stack.push((e.ptr, level - 1));
                }
            }
        }
        Ok(())
    }

    /// Reads node `id` whole for a query of a variant with
    /// [`super::strategy::NodePages`], telling the variant of the access.
    fn read_visited(&mut self, id: PageId, level: u32) -> Result<crate::node::Node<D>> {
        let (node, stored) = self.read_spanned(id, level)?;
        if let Some(np) = &self.strategy.pages {
            np.visited(id, level, 1 + stored.pages.len(), false);
        }
        Ok(node)
    }

    /// Starts a best-first nearest-neighbour traversal from `point`.
    pub fn nearest_iter(&mut self, point: [f64; D]) -> Result<NearestIter<D>> {
        self.nearest_iter_first(point, usize::MAX)
    }

    /// Starts a best-first nearest-neighbour traversal from `point` for a caller that
    /// takes at most the first `first` entries, and those at the same distance as the
    /// last of them (as ties broken by id need): the same entries in the same order as
    /// [`Self::nearest_iter`] up to there, but nothing that cannot be among them is
    /// queued (no node is read for them either). With `first` at most 64 the
    /// traversal ends there; above, some farther entries may follow.
    pub fn nearest_iter_first(&mut self, point: [f64; D], first: usize) -> Result<NearestIter<D>> {
        if let Some((d, c)) = point.iter().enumerate().find(|(_, c)| !c.is_finite()) {
            return Err(Error::invalid(
                "query point",
                format!("coordinate {d} is {c}; every coordinate must be a finite number"),
            ));
        }
        if first == 0 {
            return Err(Error::invalid("k", "must be at least 1"));
        }
        let NearestSpare {
            mut heap,
            mut boxes,
            mut children,
            mut groups,
            mut nearest,
            mut top,
        } = std::mem::take(&mut self.nearest_spare);
        heap.clear();
        boxes.clear();
        children.clear();
        groups.clear();
        nearest.clear();
        top.clear();
        heap.push(Item {
            key: Distance::ZERO.bits(),
            level: self.root_level(),
            slot: ROOT,
            ptr: self.meta.root,
        });
        Ok(NearestIter {
            point,
            heap,
            boxes,
            children,
            groups,
            first,
            nearest,
            top,
            head: 0,
            limit: u64::MAX,
            reject: f64::INFINITY,
        })
    }

    /// Ends a traversal, keeping its memory for the next one.
    pub fn nearest_done(&mut self, it: NearestIter<D>) {
        self.nearest_spare = NearestSpare {
            heap: it.heap,
            boxes: it.boxes,
            children: it.children,
            groups: it.groups,
            nearest: it.nearest,
            top: it.top,
        };
    }

    /// The next leaf entry of a nearest-neighbour traversal (by increasing MBR distance,
    /// ties by id).
    pub fn nearest_next(&mut self, it: &mut NearestIter<D>) -> Result<Option<Neighbour<D>>> {
        loop {
            if let Some(n) = it.next_top() {
                return Ok(Some(n));
            }
            let Some(item) = it.heap.pop() else {
                return Ok(None);
            };
            if item.level == ENTRY {
                return Ok(Some(Neighbour {
                    dist: Distance::from_bits(item.key),
                    entry: Entry::new(it.boxes[item.slot as usize], item.ptr),
                }));
            }
            if item.key > it.bound() {
                // Farther than the entries the caller will take: never read, nor the
                // rest of its group (no nearer than it).
                continue;
            }
            it.take(&item);
            if self.strategy.pages.is_some() {
                let node = self.read_visited(item.ptr, item.level)?;
                it.push_node(&node, item.level);
                continue;
            }
            self.with_node(item.ptr, item.level, |v| it.push_view(v, item.level))?;
        }
    }

    /// The `k` leaf entries nearest to `point` by MBR distance (ties in id order).
    pub fn nearest(&mut self, point: [f64; D], k: usize) -> Result<Vec<Neighbour<D>>> {
        let mut it = self.nearest_iter_first(point, k.max(1))?;
        let mut out = Vec::with_capacity(k);
        while out.len() < k {
            match self.nearest_next(&mut it)? {
                Some(n) => out.push(n),
                None => break,
            }
        }
        self.nearest_done(it);
        Ok(out)
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
