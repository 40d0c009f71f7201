//! The filter step of queries: which leaf entries may satisfy a spatial predicate, judged
//! on MBRs alone, and best-first k-nearest-neighbour search on MBR distances (Hjaltason
//! and Samet's incremental algorithm). Exact answers need the refinement step on the
//! objects' geometries, done by the query layer above.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::Tree;
use crate::geom::Rect;
use crate::node::{Entry, PageId};
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

/// A neighbour found by [`Tree::nearest`]: squared MBR distance and the leaf entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbour<const D: usize> {
    /// Squared distance from the query point to the entry's MBR.
    pub dist2: f64,
    /// The leaf entry.
    pub entry: Entry<D>,
}

struct Item<const D: usize> {
    dist2: f64,
    // A node (page, level) or a leaf entry (level = u32::MAX marks an entry).
    ptr: PageId,
    level: u32,
    mbr: Rect<D>,
}

impl<const D: usize> PartialEq for Item<D> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<const D: usize> Eq for Item<D> {}
impl<const D: usize> PartialOrd for Item<D> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<const D: usize> Ord for Item<D> {
    // Min-heap on distance; entries before nodes at equal distance; then by pointer for
    // determinism.
    fn cmp(&self, o: &Self) -> Ordering {
        o.dist2
            .total_cmp(&self.dist2)
            .then_with(|| self.level.cmp(&o.level))
            .then_with(|| o.ptr.cmp(&self.ptr))
    }
}

/// Incremental best-first traversal state, yielding leaf entries by increasing distance.
pub struct NearestIter<const D: usize> {
    point: [f64; D],
    heap: BinaryHeap<Item<D>>,
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
    pub fn nearest_iter(&self, point: [f64; D]) -> Result<NearestIter<D>> {
        if let Some((d, c)) = point.iter().enumerate().find(|(_, c)| !c.is_finite()) {
            return Err(Error::invalid(
                "query point",
                format!("coordinate {d} is {c}; every coordinate must be a finite number"),
            ));
        }
        let mut heap = BinaryHeap::new();
        heap.push(Item {
            dist2: 0.0,
            ptr: self.meta.root,
            level: self.root_level(),
            mbr: Rect::point(point),
        });
        Ok(NearestIter { point, heap })
    }

    /// The next leaf entry of a nearest-neighbour traversal (by increasing MBR distance).
    pub fn nearest_next(&mut self, it: &mut NearestIter<D>) -> Result<Option<Neighbour<D>>> {
        while let Some(item) = it.heap.pop() {
            if item.level == u32::MAX {
                return Ok(Some(Neighbour {
                    dist2: item.dist2,
                    entry: Entry::new(item.mbr, item.ptr),
                }));
            }
            let level = if item.level == 0 {
                u32::MAX
            } else {
                item.level - 1
            };
            if self.strategy.pages.is_some() {
                for e in self.read_visited(item.ptr, item.level)?.entries {
                    it.heap.push(Item {
                        dist2: e.mbr.min_dist2(&it.point),
                        ptr: e.ptr,
                        level,
                        mbr: e.mbr,
                    });
                }
                continue;
            }
            let page = self.read(item.ptr, item.level)?;
            let v = page.view::<D>();
            for i in 0..v.len() {
                let m = v.mbr(i);
                it.heap.push(Item {
                    dist2: m.min_dist2(&it.point),
                    ptr: v.ptr(i),
                    level,
                    mbr: m,
                });
            }
        }
        Ok(None)
    }

    /// The `k` leaf entries nearest to `point` by MBR distance (ties in id order).
    pub fn nearest(&mut self, point: [f64; D], k: usize) -> Result<Vec<Neighbour<D>>> {
        let mut it = self.nearest_iter(point)?;
        let mut out = Vec::with_capacity(k);
        while out.len() < k {
            match self.nearest_next(&mut it)? {
                Some(n) => out.push(n),
                None => break,
            }
        }
        Ok(out)
    }
}
