//! Insertion: choose the subtree, add the entry, and treat overflows bottom-up by splitting
//! (R-tree) or, on the first overflow of a level during one insertion, by forced
//! reinsertion (R*-tree, Beckmann et al. 1990). Every node change goes to the store as one
//! entry-level update per node.

use std::collections::VecDeque;

use super::split::{split, SplitAlgorithm};
use super::{IndexKind, ReinsertPolicy, Tree};
use crate::geom::Rect;
use crate::node::{Entry, Node, PageId};
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
    /// Inserts object `id` with bounding box `mbr`.
    pub fn insert(&mut self, mbr: Rect<D>, id: u64) -> Result<()> {
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

    fn insert_rec(
        &mut self,
        id: PageId,
        level: u32,
        e: Entry<D>,
        target: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        let mut node = self.read_node(id, level)?;
        let mut changes: Vec<NodeChange<D>> = Vec::with_capacity(2);
        if level == target {
            node.entries.push(e);
            changes.push(NodeChange::Push(e));
        } else {
            if node.entries.is_empty() {
                return Err(Error::corrupted(
                    format!("node page {id}"),
                    "internal node without entries",
                ));
            }
            let i = self.choose_subtree(&node, &e.mbr);
            let child = node.entries[i];
            match self.insert_rec(child.ptr, level - 1, e, target, ctx)? {
                Outcome::Unchanged => return Ok(Outcome::Unchanged),
                Outcome::Changed(m) => {
                    if m == child.mbr {
                        return Ok(Outcome::Unchanged);
                    }
                    node.entries[i].mbr = m;
                    changes.push(NodeChange::Set {
                        pos: i,
                        entry: node.entries[i],
                    });
                }
                Outcome::Split { mbr, sibling } => {
                    node.entries[i].mbr = mbr;
                    changes.push(NodeChange::Set {
                        pos: i,
                        entry: node.entries[i],
                    });
                    node.entries.push(sibling);
                    changes.push(NodeChange::Push(sibling));
                }
            }
        }
        if node.entries.len() > self.cap.max(level) {
            return self.overflow(id, node, ctx);
        }
        self.store.modify(id, level, &changes)?;
        self.note_write(level);
        Ok(Outcome::Changed(node.mbr()))
    }

    /// Picks the entry of `node` whose subtree should receive `mbr`.
    fn choose_subtree(&self, node: &Node<D>, mbr: &Rect<D>) -> usize {
        match self.kind {
            IndexKind::RStar(o) if node.level == 1 => {
                choose_least_overlap(&node.entries, mbr, o.candidates)
            }
            _ => choose_least_enlargement(&node.entries, mbr),
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

/// Guttman's ChooseLeaf step: least area enlargement, ties by smallest area.
fn choose_least_enlargement<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>) -> usize {
    let mut best = (f64::INFINITY, f64::INFINITY, 0);
    for (i, e) in es.iter().enumerate() {
        let area = e.mbr.area();
        let enl = e.mbr.union(mbr).area() - area;
        if enl < best.0 || (enl == best.0 && area < best.1) {
            best = (enl, area, i);
        }
    }
    best.2
}

/// The R*-tree's choice above the leaves: least overlap enlargement among the `p` entries
/// of least area enlargement (ties: least area enlargement, then smallest area).
fn choose_least_overlap<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>, p: usize) -> usize {
    let mut cands: Vec<(f64, f64, usize)> = es
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let area = e.mbr.area();
            (e.mbr.union(mbr).area() - area, area, i)
        })
        .collect();
    if cands.len() > p {
        cands.select_nth_unstable_by(p - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        cands.truncate(p);
    }
    let mut best = (f64::INFINITY, f64::INFINITY, f64::INFINITY, 0);
    for &(enl, area, i) in &cands {
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

/// Removes the `count` entries whose centres are farthest from the centre of the node's
/// MBR; returns them farthest first.
fn take_farthest<const D: usize>(es: &mut Vec<Entry<D>>, count: usize) -> Vec<Entry<D>> {
    let centre = es.iter().fold(Rect::empty(), |r, e| r.union(&e.mbr));
    es.sort_by(|a, b| {
        b.mbr
            .center_dist2(&centre)
            .total_cmp(&a.mbr.center_dist2(&centre))
    });
    let rest = es.split_off(count.min(es.len()));
    std::mem::replace(es, rest)
}
