//! The Hilbert R-tree (Kamel and Faloutsos, "Hilbert R-tree: an improved R-tree using
//! fractals", VLDB 1994) as a [`Strategy`]:
//!
//! * every object's leaf entry holds the Hilbert value `h` of its box's centre on a grid of
//!   `order` bits per axis ([`super::curve`]); every internal entry holds the largest
//!   Hilbert value below it (the LHV). Both travel as the entry's auxiliary key
//!   ([`Entry::aux`], 8 bytes per entry in this variant's node layout only), so
//!   `D · order <= 64`;
//! * ChooseLeaf: the entry with the least LHV greater than `h` (the last entry if none);
//! * overflow, deferred splitting: the node and `s − 1` cooperating siblings (adjacent in
//!   the parent) share their entries in Hilbert order if they have room; when all `s` are
//!   full they become `s + 1` nodes (s = 2 is the paper's 2-to-3 split);
//! * underflow: the node borrows from `s` cooperating siblings (entries spread evenly over
//!   the `s + 1` nodes in Hilbert order); when they cannot lend, the `s + 1` merge into `s`.
//!
//! The insertion engine appends a new object at the end of its leaf, so entries inside a
//! leaf are kept in arrival order; what the algorithms rely on is kept exactly: internal
//! entries are in LHV order, and the leaves, left to right, follow the curve (every key of
//! a subtree is at least the LHV of its left sibling). Each treatment sorts the entries it
//! redistributes by key. The checker verifies both invariants and every LHV.
//!
//! The grid: by default each axis is cut into `2^order` cells by the order of the
//! coordinates' IEEE-754 bit patterns (no extent needed, any finite data; cells are finer
//! near 0, uniform within each power of two); with `extent = [lo, hi]` it is a uniform
//! grid over `[lo, hi]` on every axis (centres outside are clamped to the border cells).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::changes::{write_entries, EntryOrder};
use super::curve::{hilbert_index, HilbertGrid};
use super::strategy::InsertCtx;
use super::strategy::{
    mbr_of, ChooseSubtree, NodeAccess, OverflowTreatment, Overflowing, Strategy, Treated,
    UnderflowTreatment, Underfull,
};
use crate::geom::Rect;
use crate::node::{aux_max, Capacity, Entry, NodeView, PageId};
use crate::store::NodeChange;
use crate::{Error, Result};

/// The most cooperating siblings (`s`) accepted.
pub const MAX_SIBLINGS: usize = 16;

/// Options of the Hilbert R-tree (defaults: [`Default`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HilbertOptions {
    /// Grid bits per axis; `None`: `min(32, 64 / D)`.
    pub order: Option<u32>,
    /// Cooperating siblings `s` (the node itself included): overflow shares among `s`
    /// nodes and splits `s` into `s + 1`; underflow borrows from `s` siblings.
    pub siblings: usize,
    /// A uniform grid over `[lo, hi]` on every axis; `None`: the grid of the coordinates'
    /// bit patterns (see the module documentation).
    pub extent: Option<[f64; 2]>,
}

impl Default for HilbertOptions {
    /// The per-dimension default order, s = 2 (Kamel and Faloutsos's 2-to-3 split), the
    /// bit-pattern grid.
    fn default() -> Self {
        HilbertOptions {
            order: None,
            siblings: 2,
            extent: None,
        }
    }
}

impl HilbertOptions {
    /// The grid order in `dims` dimensions.
    pub(crate) fn order_for(&self, dims: usize) -> u32 {
        self.order
            .unwrap_or_else(|| (64 / dims.max(1) as u32).min(32))
    }

    /// Checks the options that do not depend on the dimensions or capacities.
    pub fn check(&self) -> Result<()> {
        if !(1..=MAX_SIBLINGS).contains(&self.siblings) {
            return Err(Error::invalid(
                "siblings",
                format!(
                    "{} cooperating siblings; use 1 to {MAX_SIBLINGS} (2: the 2-to-3 split)",
                    self.siblings
                ),
            ));
        }
        if self.order == Some(0) {
            return Err(Error::invalid(
                "order",
                "the grid needs at least 1 bit per axis",
            ));
        }
        if let Some([lo, hi]) = self.extent {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(Error::invalid(
                    "extent",
                    format!("[{lo}, {hi}] is not a finite interval with lo < hi"),
                ));
            }
        }
        Ok(())
    }

    /// Checks the options and the grid against the dimensions: the key holds
    /// `D · order <= 64` bits.
    pub(crate) fn check_dims(&self, dims: usize) -> Result<()> {
        self.check()?;
        let order = self.order_for(dims);
        if order == 0 || dims as u64 * order as u64 > 64 {
            return Err(Error::invalid(
                "order",
                format!(
                    "{order} bits per axis in {dims} dimensions; the Hilbert R-tree keeps 64-bit keys, so D × order must be at most 64 (order 1 to {})",
                    64 / dims.max(1)
                ),
            ));
        }
        Ok(())
    }

    /// Checks the options against the node capacities: redistribution among siblings
    /// needs internal nodes of at least 2 entries minimum (so every non-root node has a
    /// sibling).
    pub(crate) fn check_capacity(&self, cap: &Capacity) -> Result<()> {
        if cap.internal_min < 2 {
            return Err(Error::invalid(
                "min fill",
                format!(
                    "internal nodes may hold {} entry; the Hilbert R-tree needs a minimum of at least 2 (raise the minimum fill)",
                    cap.internal_min
                ),
            ));
        }
        Ok(())
    }

    /// A readable name, e.g. `Hilbert R-tree s=2`.
    pub fn label(&self) -> String {
        let mut s = format!("Hilbert R-tree s={}", self.siblings);
        if let Some(o) = self.order {
            s.push_str(&format!(" order={o}"));
        }
        if let Some([lo, hi]) = self.extent {
            s.push_str(&format!(" extent=[{lo},{hi}]"));
        }
        s
    }
}

/// The Hilbert R-tree's parts with options `o` (checked, also against `D`).
pub(crate) fn strategy<const D: usize>(o: &HilbertOptions) -> Strategy<D> {
    Strategy {
        choose: Box::new(ByLhv(HilbertKey::new(o))),
        overflow: Arc::new(Cooperative {
            siblings: o.siblings,
        }),
        underflow: Arc::new(BorrowOrMerge {
            siblings: o.siblings,
        }),
        pages: None,
        state: None,
    }
}

/// How boxes map to Hilbert values.
#[derive(Debug, Clone, Copy)]
enum HilbertKey<const D: usize> {
    /// A uniform grid over an extent.
    Extent(HilbertGrid<D>),
    /// The bit-pattern grid of `order` bits per axis.
    Bits(u32),
}

impl<const D: usize> HilbertKey<D> {
    fn new(o: &HilbertOptions) -> Self {
        let order = o.order_for(D).clamp(1, (64 / D.max(1)) as u32);
        match o.extent {
            Some([lo, hi]) => {
                let extent = Rect {
                    min: [lo; D],
                    max: [hi; D],
                };
                match HilbertGrid::new(order, &extent) {
                    Ok(g) => HilbertKey::Extent(g),
                    // Unreachable once the options are checked; the bit grid is still a
                    // consistent key.
                    Err(_) => HilbertKey::Bits(order),
                }
            }
            None => HilbertKey::Bits(order),
        }
    }

    /// The Hilbert value of the centre of `r`.
    fn of(&self, r: &Rect<D>) -> u64 {
        match self {
            HilbertKey::Extent(g) => g.value(r) as u64,
            HilbertKey::Bits(order) => {
                let mut cell = [0u64; D];
                for d in 0..D {
                    let c = r.min[d] * 0.5 + r.max[d] * 0.5;
                    cell[d] = ordered_bits(c) >> (64 - order);
                }
                hilbert_index(cell, *order) as u64
            }
        }
    }
}

/// The bits of `x` as an unsigned number in the order of the values (negative values
/// below positive ones).
fn ordered_bits(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// Subtree choice by LHV (the paper's ChooseLeaf).
struct ByLhv<const D: usize>(HilbertKey<D>);

/// The position of the entry with the least key greater than `key` (the last if none);
/// the entries are in key order.
fn by_key<const D: usize>(v: NodeView<'_, D>, key: u64) -> usize {
    (0..v.len())
        .find(|&i| v.aux(i) > key)
        .unwrap_or(v.len().saturating_sub(1))
}

impl<const D: usize> ChooseSubtree<D> for ByLhv<D> {
    fn choose(&mut self, v: NodeView<'_, D>, _level: u32, mbr: &Rect<D>) -> usize {
        by_key(v, self.0.of(mbr))
    }

    fn choose_entry(&mut self, v: NodeView<'_, D>, _level: u32, e: &Entry<D>) -> usize {
        by_key(v, e.aux)
    }

    fn object_key(&self, mbr: &Rect<D>) -> u64 {
        self.0.of(mbr)
    }

    fn orders_by_key(&self) -> bool {
        true
    }
}

/// `n` entries spread over `groups` nodes as evenly as possible (larger groups first).
fn even_sizes(n: usize, groups: usize) -> Vec<usize> {
    (0..groups)
        .map(|g| n / groups + usize::from(g < n % groups))
        .collect()
}

/// The window of `w` consecutive parent positions holding `pos`: `pos` and the siblings
/// after it, or the last `w` positions near the end.
fn window(pos: usize, w: usize, len: usize) -> std::ops::Range<usize> {
    let start = pos.min(len - w);
    start..start + w
}

/// Sorts `all` by key and writes it, spread evenly, into the nodes `ids` (in order) and,
/// with `new_node`, into one more node created after them; returns their new parent
/// entries. `stored[g]` is what node `ids[g]`'s page holds, when known: the node is then
/// written as the entries that move (in a leaf, entries stay in arrival order; internal
/// nodes stay in LHV order), so a store that logs changes logs those, not whole nodes.
fn distribute<const D: usize>(
    tree: &mut dyn NodeAccess<D>,
    level: u32,
    mut all: Vec<Entry<D>>,
    ids: &[PageId],
    stored: &[Option<Vec<Entry<D>>>],
    new_node: bool,
) -> Result<Vec<Entry<D>>> {
    all.sort_by_key(|e| e.aux);
    let order = if level == 0 {
        EntryOrder::Free
    } else {
        EntryOrder::Kept
    };
    let groups = ids.len() + usize::from(new_node);
    let mut out = Vec::with_capacity(groups);
    let mut at = 0;
    for (g, k) in even_sizes(all.len(), groups).into_iter().enumerate() {
        let group = &all[at..at + k];
        at += k;
        let id = match ids.get(g) {
            Some(&id) => {
                let before = stored.get(g).and_then(|s| s.as_deref());
                write_entries(tree, id, level, before, group, order)?;
                id
            }
            None => tree.create(level, group)?,
        };
        out.push(Entry {
            mbr: mbr_of(group),
            ptr: id,
            aux: aux_max(group),
        });
    }
    Ok(out)
}

/// Deferred splitting with `siblings` cooperating nodes.
struct Cooperative {
    siblings: usize,
}

impl<const D: usize> OverflowTreatment<D> for Cooperative {
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        at: Overflowing<'_, D>,
        _ctx: &mut InsertCtx<D>,
    ) -> Result<Treated<D>> {
        let level = at.node.level;
        let max = tree.capacity().max(level);
        let n = at.parent.len();
        let w = self.siblings.min(n).max(1);
        let win = window(at.pos, w, n);
        let mut all = Vec::with_capacity(w * max + 1);
        let mut ids = Vec::with_capacity(w + 1);
        let mut stored = Vec::with_capacity(w);
        let mut own = at.stored().map(<[Entry<D>]>::to_vec);
        let mut node = Some(at.node);
        for j in win.clone() {
            let id = at.parent[j].ptr;
            ids.push(id);
            if j == at.pos {
                all.extend(node.take().map(|n| n.entries).unwrap_or_default());
                stored.push(own.take());
            } else {
                let entries = tree.read(id, level)?.entries;
                all.extend_from_slice(&entries);
                stored.push(Some(entries));
            }
        }
        if all.len() <= w * max {
            // Some sibling has room: share, no split.
            let entries = distribute(tree, level, all, &ids, &stored, false)?;
            return Ok(Treated::Parent(
                win.zip(entries)
                    .map(|(pos, entry)| NodeChange::Set { pos, entry })
                    .collect(),
            ));
        }
        // All `w` are full: they become `w + 1`, the new node after them, and the parent's
        // later entries move up one place (the parent stays in LHV order).
        tree.stats_mut().splits += 1;
        let mut tail = distribute(tree, level, all, &ids, &stored, true)?;
        tail.extend_from_slice(&at.parent[win.end..]);
        let last = tail.pop().expect("a split yields at least two nodes");
        let mut changes: Vec<NodeChange<D>> = tail
            .into_iter()
            .enumerate()
            .map(|(k, entry)| NodeChange::Set {
                pos: win.start + k,
                entry,
            })
            .collect();
        changes.push(NodeChange::Push(last));
        Ok(Treated::Parent(changes))
    }
}

/// Borrowing from, or merging with, `siblings` cooperating siblings.
struct BorrowOrMerge {
    siblings: usize,
}

impl<const D: usize> UnderflowTreatment<D> for BorrowOrMerge {
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        at: Underfull<'_, D>,
        _ctx: &mut InsertCtx<D>,
    ) -> Result<Vec<NodeChange<D>>> {
        let level = at.node.level;
        let min = tree.capacity().min(level);
        let n = at.parent.len();
        let w = (self.siblings + 1).min(n);
        if w < 2 {
            // The only child of the root: it stays as it is, and the engine makes it the
            // root once the delete is done.
            tree.rewrite(at.id, level, &at.node.entries)?;
            return Ok(vec![NodeChange::Set {
                pos: at.pos,
                entry: Entry {
                    mbr: at.node.mbr(),
                    ptr: at.id,
                    aux: at.node.aux_max(),
                },
            }]);
        }
        let win = window(at.pos, w, n);
        let ids: Vec<PageId> = win.clone().map(|j| at.parent[j].ptr).collect();
        let mut all = Vec::new();
        // The underfull node's page is not known here: it is rewritten; its siblings are
        // written as the entries they lend.
        let mut stored = Vec::with_capacity(w);
        let mut node = Some(at.node);
        for (j, &id) in win.clone().zip(&ids) {
            if j == at.pos {
                all.extend(node.take().map(|n| n.entries).unwrap_or_default());
                stored.push(None);
            } else {
                let entries = tree.read(id, level)?.entries;
                all.extend_from_slice(&entries);
                stored.push(Some(entries));
            }
        }
        if all.len() >= w * min {
            // Borrow: the underfull node keeps its place among its siblings.
            let entries = distribute(tree, level, all, &ids, &stored, false)?;
            return Ok(win
                .zip(entries)
                .map(|(pos, entry)| NodeChange::Set { pos, entry })
                .collect());
        }
        // Merge `w` nodes into `w - 1`: the underfull node's page goes.
        tree.stats_mut().condensed_nodes += 1;
        let (others, stored): (Vec<PageId>, Vec<_>) = ids
            .iter()
            .copied()
            .zip(stored)
            .filter(|&(id, _)| id != at.id)
            .unzip();
        let entries = distribute(tree, level, all, &others, &stored, false)?;
        tree.delete(at.id, level)?;
        let mut changes: Vec<NodeChange<D>> = win
            .clone()
            .zip(entries)
            .map(|(pos, entry)| NodeChange::Set { pos, entry })
            .collect();
        changes.push(NodeChange::Remove { pos: win.end - 1 });
        Ok(changes)
    }
}
