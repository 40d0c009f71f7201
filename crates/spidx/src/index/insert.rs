//! Insertion: choose the subtree, add the entry, and treat overflows bottom-up by splitting
//! (R-tree) or, on the first overflow of a level during one insertion, by forced
//! reinsertion (R*-tree, Beckmann et al. 1990). Every node change goes to the store as one
//! entry-level update per node.

use std::collections::VecDeque;

use super::split::{split, SplitAlgorithm};
use super::{IndexKind, ReinsertPolicy, Tree};
use crate::geom::Rect;
use crate::node::{Entry, Node, NodeView, PageId};
use crate::store::{NodeChange, NodeStore, TreeMeta};
use crate::{Error, Result};

/// What an insertion did to a subtree, reported to its parent.
enum Outcome<const D: usize> {
    /// Nothing the parent stores changed.
    Unchanged,
    /// The subtree's MBR is now this.
    Changed(Rect<D>),
    /// The node split: its MBR is now `mbr` and `sibling` must be added to the parent.
    Split { mbr: Rect<D>, sibling: Entry<D> },
}

/// State of one top-level insertion (shared by the reinsertions it causes).
pub(crate) struct InsertCtx<const D: usize> {
    /// Levels that already had a forced reinsertion (bit per level).
    overflowed: u64,
    /// Entries waiting to be (re)inserted, with the level of the node that must hold them.
    pub(crate) pending: VecDeque<(Entry<D>, u32)>,
}

impl<const D: usize> InsertCtx<D> {
    pub(crate) fn new() -> Self {
        InsertCtx {
            overflowed: 0,
            pending: VecDeque::new(),
        }
    }
}

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Inserts object `id` with bounding box `mbr` (one store operation).
    pub fn insert(&mut self, mbr: Rect<D>, id: u64) -> Result<()> {
        self.insert_object(mbr, id)?;
        self.store.end_operation()
    }

    /// Inserts an object without ending the store operation (shared by insert and update).
    pub(crate) fn insert_object(&mut self, mbr: Rect<D>, id: u64) -> Result<()> {
        Self::check_box(&mbr)?;
        if self.kind_is_seed_layout_limited(id) {
            return Err(Error::invalid(
                "object id",
                format!("{id} does not fit the seed layout's 32-bit pointers"),
            ));
        }
        let mut ctx = InsertCtx::new();
        self.insert_at(Entry { mbr, ptr: id }, 0, &mut ctx)?;
        self.drain(&mut ctx)?;
        let meta = TreeMeta {
            objects: self.meta.objects + 1,
            ..self.meta
        };
        self.set_meta(meta)
    }

    fn kind_is_seed_layout_limited(&self, id: u64) -> bool {
        self.store.layout().kind() == crate::node::LayoutKind::Seed && id > u32::MAX as u64
    }

    /// Inserts every pending entry (forced reinsertion, condensed nodes).
    pub(crate) fn drain(&mut self, ctx: &mut InsertCtx<D>) -> Result<()> {
        while let Some((e, level)) = ctx.pending.pop_front() {
            self.stats.reinserted_entries += 1;
            self.insert_at(e, level, ctx)?;
        }
        Ok(())
    }

    /// Inserts `e` into a node at `level` (0 = leaf), growing the tree on a root split.
    pub(crate) fn insert_at(
        &mut self,
        e: Entry<D>,
        level: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<()> {
        let root_level = self.root_level();
        if level > root_level {
            return Err(Error::invalid(
                "insert",
                format!("level {level} is above the root (level {root_level})"),
            ));
        }
        let root = self.meta.root;
        if let Outcome::Split { mbr, sibling } = self.insert_rec(root, root_level, e, level, ctx)? {
            let new_root = self
                .store
                .create(root_level + 1, &[Entry { mbr, ptr: root }, sibling])?;
            self.note_write(root_level + 1);
            let meta = TreeMeta {
                root: new_root,
                height: self.meta.height + 1,
                ..self.meta
            };
            self.set_meta(meta)?;
        }
        Ok(())
    }

    /// Inserts `e` into the subtree of node `id` (at `level`), at `target`.
    ///
    /// The node is read once and kept as a page image (not decoded) while the insertion
    /// goes down: the subtree choice, the new MBR and the entry-level change are computed
    /// on the page; the entries are decoded only when the node overflows. (Nothing below
    /// a node changes the node itself during the descent, so the image stays current.)
    fn insert_rec(
        &mut self,
        id: PageId,
        level: u32,
        e: Entry<D>,
        target: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        let max = self.cap.max(level);
        if level == target {
            // Nothing to keep across a descent here: look at the page without sharing it.
            let full = self.with_node(id, level, |v| {
                if v.len() + 1 > max {
                    let mut node = decode(v, level);
                    node.entries.push(e);
                    Err(node)
                } else {
                    Ok(v.mbr_all().union(&e.mbr))
                }
            })?;
            return match full {
                Err(node) => self.overflow(id, node, ctx),
                Ok(mbr) => {
                    self.store.modify(id, level, &[NodeChange::Push(e)])?;
                    self.note_write(level);
                    Ok(Outcome::Changed(mbr))
                }
            };
        }
        let page = self.read(id, level)?;
        if page.view::<D>().is_empty() {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "internal node without entries",
            ));
        }
        let i = self.choose_subtree(page.view::<D>(), level, &e.mbr);
        let child = page.view::<D>().entry(i);
        // The node's MBR with entry `i`'s box replaced by `m` (entries in order, as
        // `Node::mbr` folds them).
        let mbr_with = |v: NodeView<'_, D>, m: &Rect<D>| {
            let mut r = Rect::empty();
            for j in 0..v.len() {
                if j == i {
                    r.expand(m);
                } else {
                    r.expand(&v.mbr(j));
                }
            }
            r
        };
        match self.insert_rec(child.ptr, level - 1, e, target, ctx)? {
            Outcome::Unchanged => Ok(Outcome::Unchanged),
            Outcome::Changed(m) => {
                if m == child.mbr {
                    return Ok(Outcome::Unchanged);
                }
                let mbr = mbr_with(page.view::<D>(), &m);
                drop(page);
                let set = NodeChange::Set {
                    pos: i,
                    entry: Entry {
                        mbr: m,
                        ptr: child.ptr,
                    },
                };
                self.store.modify(id, level, &[set])?;
                self.note_write(level);
                Ok(Outcome::Changed(mbr))
            }
            Outcome::Split { mbr: m, sibling } => {
                let v = page.view::<D>();
                let updated = Entry {
                    mbr: m,
                    ptr: child.ptr,
                };
                if v.len() + 1 > max {
                    let mut node = decode(v, level);
                    node.entries[i] = updated;
                    node.entries.push(sibling);
                    drop(page);
                    return self.overflow(id, node, ctx);
                }
                let mut mbr = mbr_with(v, &m);
                mbr.expand(&sibling.mbr);
                drop(page);
                let changes = [
                    NodeChange::Set {
                        pos: i,
                        entry: updated,
                    },
                    NodeChange::Push(sibling),
                ];
                self.store.modify(id, level, &changes)?;
                self.note_write(level);
                Ok(Outcome::Changed(mbr))
            }
        }
    }

    /// Picks the entry of node `v` (at `level`) whose subtree should receive `mbr`.
    fn choose_subtree(&mut self, v: NodeView<'_, D>, level: u32, mbr: &Rect<D>) -> usize {
        match self.kind {
            IndexKind::RStar(o) if level == 1 => {
                let mut es = std::mem::take(&mut self.entry_scratch);
                es.clear();
                es.extend((0..v.len()).map(|i| v.entry(i)));
                let i = choose_least_overlap(&es, mbr, o.candidates);
                self.entry_scratch = es;
                i
            }
            _ => choose_least_enlargement((0..v.len()).map(|i| v.mbr(i)), mbr),
        }
    }

    /// Overflow treatment: forced reinsertion (R*-tree, first overflow of a non-root level
    /// during this insertion) or a split.
    fn overflow(
        &mut self,
        id: PageId,
        mut node: Node<D>,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        let level = node.level;
        if let IndexKind::RStar(o) = self.kind {
            let share = if level == 0 {
                o.reinsert_leaf
            } else {
                o.reinsert_internal
            };
            let count = (self.cap.max(level) as f64 * share).round() as usize;
            let first = level < 64 && ctx.overflowed & (1 << level) == 0;
            if level != self.root_level() && first && count > 0 {
                ctx.overflowed |= 1 << level;
                let removed = take_farthest(&mut node.entries, count);
                let ordered: Vec<Entry<D>> = match o.policy {
                    ReinsertPolicy::Far => removed,
                    ReinsertPolicy::Close => removed.into_iter().rev().collect(),
                };
                ctx.pending.extend(ordered.into_iter().map(|e| (e, level)));
                self.stats.forced_reinserts += 1;
                self.store.rewrite(id, level, &node.entries)?;
                self.note_write(level);
                return Ok(Outcome::Changed(node.mbr()));
            }
        }
        let algo = match self.kind {
            IndexKind::RTree { split } => split,
            IndexKind::RStar(_) => SplitAlgorithm::RStar,
        };
        let (a, b) = split(algo, std::mem::take(&mut node.entries), self.cap.min(level));
        self.stats.splits += 1;
        self.store.rewrite(id, level, &a)?;
        let sibling = self.store.create(level, &b)?;
        self.note_write(level);
        self.note_write(level);
        let mbr_of = |es: &[Entry<D>]| es.iter().fold(Rect::empty(), |r, e| r.union(&e.mbr));
        Ok(Outcome::Split {
            mbr: mbr_of(&a),
            sibling: Entry {
                mbr: mbr_of(&b),
                ptr: sibling,
            },
        })
    }
}

/// The node of a page image, decoded.
fn decode<const D: usize>(v: NodeView<'_, D>, level: u32) -> Node<D> {
    Node {
        level,
        entries: (0..v.len()).map(|i| v.entry(i)).collect(),
    }
}

/// Guttman's ChooseLeaf step over the entries' boxes: least area enlargement, ties by
/// smallest area.
fn choose_least_enlargement<const D: usize>(
    boxes: impl Iterator<Item = Rect<D>>,
    mbr: &Rect<D>,
) -> usize {
    let mut best = (f64::INFINITY, f64::INFINITY, 0);
    for (i, b) in boxes.enumerate() {
        let area = b.area();
        let enl = b.union(mbr).area() - area;
        if enl < best.0 || (enl == best.0 && area < best.1) {
            best = (enl, area, i);
        }
    }
    best.2
}

/// The R*-tree's choice above the leaves: least overlap enlargement among the `p` entries
/// of least area enlargement (ties: least area enlargement, then smallest area, then the
/// first candidate in the order [`least_overlap_candidates`] leaves them).
///
/// This gives exactly the answer of the plain algorithm ([`choose_least_overlap_plain`],
/// which computes every candidate's overlap enlargement in full) but prunes: the
/// candidates are examined by increasing (area enlargement, area, position), so a later
/// candidate wins only with a strictly smaller overlap enlargement; every term of that sum
/// is >= 0, so its computation stops as soon as it reaches the best one, and nothing can
/// beat an overlap enlargement of 0. When areas are so large that the sums could overflow
/// (non-finite values would compare differently), the plain algorithm runs instead.
fn choose_least_overlap<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>, p: usize) -> usize {
    let mut cands = enlargements(es, mbr);
    let bound = es.iter().fold(*mbr, |r, e| r.union(&e.mbr)).area() * (es.len() as f64 + 1.0);
    if !bound.is_finite() {
        keep_least(&mut cands, p);
        return pick_least_overlap(es, mbr, &cands);
    }
    // The common case: the entry of least (enlargement, area) is unique and already
    // contains `mbr`. It is among the candidates, its overlap enlargement is 0 (the
    // least possible) and every other candidate has a larger (enlargement, area), so it
    // wins whatever the candidates' order.
    let mut least = 0;
    let mut unique = true;
    for k in 1..cands.len() {
        match enl_area_cmp(&cands[k], &cands[least]) {
            std::cmp::Ordering::Less => (least, unique) = (k, true),
            std::cmp::Ordering::Equal => unique = false,
            std::cmp::Ordering::Greater => {}
        }
    }
    if unique && es[cands[least].2].mbr.contains(mbr) {
        return cands[least].2;
    }
    keep_least(&mut cands, p);
    let mut order: Vec<(f64, f64, usize, usize)> = cands
        .iter()
        .enumerate()
        .map(|(k, &(enl, area, i))| (enl, area, k, i))
        .collect();
    order.sort_unstable_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let mut best: Option<(f64, usize)> = None;
    for &(_, _, _, i) in &order {
        let limit = match best {
            Some((0.0, _)) => break,
            Some((d, _)) => d,
            None => f64::INFINITY,
        };
        let own = es[i].mbr;
        let grown = own.union(mbr);
        // delta = sum over the other entries o of overlap(grown, o) - overlap(own, o);
        // every term is >= +0 (own lies inside grown), and a term is +0 whenever grown
        // does not overlap o. With grown == own every term is 0.
        let mut delta = 0.0;
        if grown != own {
            for (j, o) in es.iter().enumerate() {
                if j == i {
                    continue;
                }
                let g = grown.overlap(&o.mbr);
                if g != 0.0 {
                    delta += g - own.overlap(&o.mbr);
                    if delta >= limit {
                        break;
                    }
                }
            }
        }
        if delta < limit {
            best = Some((delta, i));
        }
    }
    best.map_or(0, |b| b.1)
}

/// The `p` entries of least area enlargement (all if there are at most `p`), as
/// (enlargement, area, entry index), in the order the plain algorithm examines them.
#[cfg(test)]
fn least_overlap_candidates<const D: usize>(
    es: &[Entry<D>],
    mbr: &Rect<D>,
    p: usize,
) -> Vec<(f64, f64, usize)> {
    let mut cands = enlargements(es, mbr);
    keep_least(&mut cands, p);
    cands
}

/// (area enlargement to include `mbr`, area, index) of every entry.
fn enlargements<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>) -> Vec<(f64, f64, usize)> {
    es.iter()
        .enumerate()
        .map(|(i, e)| {
            let area = e.mbr.area();
            (e.mbr.union(mbr).area() - area, area, i)
        })
        .collect()
}

fn enl_area_cmp(a: &(f64, f64, usize), b: &(f64, f64, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// Keeps the `p` least (enlargement, area) of `cands` (all of them if at most `p`).
fn keep_least(cands: &mut Vec<(f64, f64, usize)>, p: usize) {
    if cands.len() > p {
        cands.select_nth_unstable_by(p - 1, enl_area_cmp);
        cands.truncate(p);
    }
}

/// The plain R*-tree choice over the candidates: every candidate's overlap enlargement in
/// full, the least (delta, enlargement, area) winning, the first one on ties.
fn pick_least_overlap<const D: usize>(
    es: &[Entry<D>],
    mbr: &Rect<D>,
    cands: &[(f64, f64, usize)],
) -> usize {
    let mut best = (f64::INFINITY, f64::INFINITY, f64::INFINITY, 0);
    for &(enl, area, i) in cands {
        let grown = es[i].mbr.union(mbr);
        let mut delta = 0.0;
        for (j, o) in es.iter().enumerate() {
            if j != i {
                delta += grown.overlap(&o.mbr) - es[i].mbr.overlap(&o.mbr);
            }
        }
        let key = (delta, enl, area);
        if key < (best.0, best.1, best.2) {
            best = (delta, enl, area, i);
        }
    }
    best.3
}

/// The R*-tree choice computed without pruning (the reference for
/// [`choose_least_overlap`]).
#[cfg(test)]
fn choose_least_overlap_plain<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>, p: usize) -> usize {
    pick_least_overlap(es, mbr, &least_overlap_candidates(es, mbr, p))
}

/// Removes the `count` entries whose centres are farthest from the centre of the node's
/// MBR; returns them farthest first.
fn take_farthest<const D: usize>(es: &mut Vec<Entry<D>>, count: usize) -> Vec<Entry<D>> {
    let centre = es.iter().fold(Rect::empty(), |r, e| r.union(&e.mbr));
    // A stable sort by descending distance, each distance computed once (a stable sort's
    // result depends only on the keys and the original order).
    let mut keyed: Vec<(f64, Entry<D>)> = es
        .iter()
        .map(|e| (e.mbr.center_dist2(&centre), *e))
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    es.clear();
    es.extend(keyed.iter().map(|k| k.1));
    let rest = es.split_off(count.min(es.len()));
    std::mem::replace(es, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn boxes(grid: f64) -> impl Strategy<Value = Vec<Entry<2>>> {
        prop::collection::vec(
            (0.0..grid, 0.0..grid, 0.0..grid / 4.0, 0.0..grid / 4.0),
            1..120,
        )
        .prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (x, y, w, h))| Entry {
                    mbr: Rect {
                        min: [x.round(), y.round()],
                        max: [(x + w).round(), (y + h).round()],
                    },
                    ptr: i as u64,
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// The pruned choice is exactly the plain one, also with many ties (coarse grids,
        /// duplicate boxes, zero-area boxes) and with few candidates.
        #[test]
        fn pruned_least_overlap_is_the_plain_one(
            es in prop_oneof![boxes(8.0), boxes(1000.0)],
            x in 0.0..1000.0f64, y in 0.0..1000.0f64, w in 0.0..40.0f64, h in 0.0..40.0f64,
            p in 1usize..40,
        ) {
            let q = Rect { min: [x.round(), y.round()], max: [(x + w).round(), (y + h).round()] };
            prop_assert_eq!(choose_least_overlap(&es, &q, p), choose_least_overlap_plain(&es, &q, p));
            let inside = es[0].mbr;
            prop_assert_eq!(choose_least_overlap(&es, &inside, p), choose_least_overlap_plain(&es, &inside, p));
        }
    }

    #[test]
    fn huge_boxes_take_the_plain_path() {
        let big = f64::MAX / 2.0;
        let es: Vec<Entry<2>> = (0..5)
            .map(|i| Entry {
                mbr: Rect {
                    min: [-big + i as f64, -big],
                    max: [big, big - i as f64],
                },
                ptr: i,
            })
            .collect();
        let q = Rect::point([0.0, 0.0]);
        assert_eq!(
            choose_least_overlap(&es, &q, 3),
            choose_least_overlap_plain(&es, &q, 3)
        );
    }
}
