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

/// An item of the best-first queue: a node (`level` its level) or a leaf entry
/// (`level == ENTRY`, its MBR at `slot` of [`NearestIter::boxes`]). 24 bytes in every
/// dimension: the boxes stay out of the heap, so sifting moves little.
#[derive(Clone, Copy)]
struct Item {
    key: u64,
    level: u32,
    slot: u32,
    ptr: PageId,
}

/// The level that marks a leaf entry in the queue.
const ENTRY: u32 = u32::MAX;

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

/// Incremental best-first traversal state, yielding leaf entries by increasing distance
/// (Hjaltason and Samet): one queue of nodes and leaf entries keyed by their MBR's
/// distance, each node read once, when it comes first. Give it back with
/// [`Tree::nearest_done`] so that the next traversal reuses its memory.
pub struct NearestIter<const D: usize> {
    point: [f64; D],
    heap: BinaryHeap<Item>,
    /// MBRs of the leaf entries in the queue (an entry's item names its slot).
    boxes: Vec<Rect<D>>,
    /// For a caller that takes at most the first `first` entries (and those tied with
    /// the last of them): the keys of the `first` nearest entries queued so far (a
    /// max-heap). Nothing farther than the largest of them, once there are `first`, can
    /// be among the entries taken, so it is not queued.
    first: usize,
    nearest: BinaryHeap<u64>,
}

/// The memory of a finished traversal, kept by the tree for the next one.
pub(crate) struct NearestSpare<const D: usize> {
    heap: BinaryHeap<Item>,
    boxes: Vec<Rect<D>>,
    nearest: BinaryHeap<u64>,
}

impl<const D: usize> Default for NearestSpare<D> {
    fn default() -> Self {
        NearestSpare {
            heap: BinaryHeap::new(),
            boxes: Vec::new(),
            nearest: BinaryHeap::new(),
        }
    }
}

impl<const D: usize> NearestIter<D> {
    /// The largest key that can still be among the entries taken (`u64::MAX` without a
    /// limit or before `first` entries were queued).
    #[inline]
    fn bound(&self) -> u64 {
        if self.nearest.len() < self.first {
            u64::MAX
        } else {
            self.nearest.peek().copied().unwrap_or(u64::MAX)
        }
    }

    /// Queues the entries of a node at `level` (read as `v`).
    #[inline]
    fn push_view(&mut self, v: NodeView<'_, D>, level: u32) {
        if level == 0 {
            for (i, m) in v.mbrs().enumerate() {
                self.push_entry(m, v.ptr(i));
            }
        } else {
            for (i, m) in v.mbrs().enumerate() {
                self.push_node(&m, v.ptr(i), level - 1);
            }
        }
    }

    /// Queues child `ptr` (at `level`) whose MBR is `m`.
    #[inline]
    fn push_node(&mut self, m: &Rect<D>, ptr: PageId, level: u32) {
        let key = m.min_dist(&self.point).bits();
        if key <= self.bound() {
            self.heap.push(Item {
                key,
                level,
                slot: 0,
                ptr,
            });
        }
    }

    /// Queues leaf entry `ptr` whose MBR is `m`.
    #[inline]
    fn push_entry(&mut self, m: Rect<D>, ptr: PageId) {
        let key = m.min_dist(&self.point).bits();
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
    /// queued (no node is read for them either).
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
            mut nearest,
        } = std::mem::take(&mut self.nearest_spare);
        heap.clear();
        boxes.clear();
        nearest.clear();
        heap.push(Item {
            key: Distance::ZERO.bits(),
            level: self.root_level(),
            slot: 0,
            ptr: self.meta.root,
        });
        Ok(NearestIter {
            point,
            heap,
            boxes,
            first,
            nearest,
        })
    }

    /// Ends a traversal, keeping its memory for the next one.
    pub fn nearest_done(&mut self, it: NearestIter<D>) {
        self.nearest_spare = NearestSpare {
            heap: it.heap,
            boxes: it.boxes,
            nearest: it.nearest,
        };
    }

    /// The next leaf entry of a nearest-neighbour traversal (by increasing MBR distance,
    /// ties by id).
    pub fn nearest_next(&mut self, it: &mut NearestIter<D>) -> Result<Option<Neighbour<D>>> {
        while let Some(item) = it.heap.pop() {
            if item.level == ENTRY {
                return Ok(Some(Neighbour {
                    dist: Distance::from_bits(item.key),
                    entry: Entry::new(it.boxes[item.slot as usize], item.ptr),
                }));
            }
            if item.key > it.bound() {
                // Farther than the entries the caller will take: never read.
                continue;
            }
            if self.strategy.pages.is_some() {
                let node = self.read_visited(item.ptr, item.level)?;
                for e in node.entries {
                    if item.level == 0 {
                        it.push_entry(e.mbr, e.ptr);
                    } else {
                        it.push_node(&e.mbr, e.ptr, item.level - 1);
                    }
                }
                continue;
            }
            self.with_node(item.ptr, item.level, |v| it.push_view(v, item.level))?;
        }
        Ok(None)
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
