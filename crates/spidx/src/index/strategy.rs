//! Insertion and deletion as strategies, in the spirit of rstar's `InsertionStrategy` and
//! Boost.Geometry's independent choose/split/redistribute options: a tree variant is the
//! three parts below, chosen once when the tree is opened; the engines of [`super::insert`]
//! and [`super::delete`] descend, apply entry-level changes and call the parts where a
//! variant differs. None of them ever sees the store.
//!
//! * [`ChooseSubtree`]: which child of an internal node receives a new entry;
//! * [`OverflowTreatment`]: what happens to a node holding one entry too many. It runs at
//!   the parent, so it sees the parent's entries and may change them (a split adds a
//!   sibling; a cooperative split, e.g. the Hilbert R-tree's, redistributes among the
//!   overflowing node's siblings); at the root it sees a one-entry parent, and whatever
//!   that parent ends up holding beyond one entry becomes the new root;
//! * [`UnderflowTreatment`]: what happens to a non-root node left with fewer entries than
//!   its minimum after a delete (condense and reinsert, or borrow and merge).
//!
//! The parts reach nodes through [`NodeAccess`], which the tree implements for every store
//! (an object-safe view, so the parts are plain trait objects).
//!
//! A variant whose nodes may span more than one page (the FOR-tree's overflow nodes) adds
//! a fourth part, [`NodePages`]: the engines (insert, delete, search, nearest neighbours,
//! the checker) then read such a node as all its pages and write it through the part.
//! Variants without it never reach that code.
//!
//! A variant that keeps state about the tree beyond its nodes (the FOR-tree's access
//! counts) adds [`VariantState`]; the tree saves it through the store's [`TreeState`]
//! blob, which every store keeps in its header.
//!
//! [`TreeState`]: crate::store::TreeState

use std::collections::VecDeque;

use crate::geom::Rect;
use crate::node::{aux_max, Capacity, Entry, Node, NodeView, PageId};
use crate::store::{NodeChange, NodePage};
use crate::Result;

use super::TreeStats;

/// State of one top-level insertion (shared by the reinsertions it causes), handed to the
/// strategy parts: the entries they ask to insert again and the levels already treated by
/// reinsertion. It is the strategy's vocabulary, so the insertion engine
/// ([`super::insert`]) takes the strategy as a parameter and nothing of the engine leaks
/// back into the parts.
pub struct InsertCtx<const D: usize> {
    /// Levels that already had an overflow treated by reinsertion (bit per level).
    pub(crate) overflowed: u64,
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

/// What the strategy parts may do to the tree's nodes. Every call goes to the store as the
/// tree's own calls do and is counted in the tree's statistics.
pub trait NodeAccess<const D: usize> {
    /// Creates a node at `level` holding `entries`.
    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId>;
    /// Applies entry-level `changes`, in order, to node `id` as one update.
    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()>;
    /// Replaces all entries of node `id`.
    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()>;
    /// Deletes node `id`.
    fn delete(&mut self, id: PageId, level: u32) -> Result<()>;
    /// Reads node `id` at `level` (e.g. a sibling a cooperative treatment works with).
    fn read(&mut self, id: PageId, level: u32) -> Result<Node<D>>;
    /// Node capacities.
    fn capacity(&self) -> &Capacity;
    /// The tree's own counters.
    fn stats_mut(&mut self) -> &mut TreeStats;
}

/// Chooses the child of an internal node that receives a new entry.
pub trait ChooseSubtree<const D: usize>: Send {
    /// The position in `node` (at `level` >= 1) of the child whose subtree should receive
    /// an entry with box `mbr`.
    fn choose(&mut self, node: NodeView<'_, D>, level: u32, mbr: &Rect<D>) -> usize;

    /// The position of the child that should receive entry `e` (which may be an internal
    /// entry being reinserted). By default the choice by its box ([`Self::choose`]);
    /// variants that order entries by their auxiliary key choose by that.
    #[inline]
    fn choose_entry(&mut self, node: NodeView<'_, D>, level: u32, e: &Entry<D>) -> usize {
        self.choose(node, level, &e.mbr)
    }

    /// The auxiliary key a new object with box `mbr` gets in its leaf entry (see
    /// [`Entry::aux`]); 0 unless the variant orders entries by a key.
    #[inline]
    fn object_key(&self, _mbr: &Rect<D>) -> u64 {
        0
    }

    /// Whether the variant keeps its entries ordered by their auxiliary key (then the
    /// checker verifies that order, Hilbert packing sorts by that key, and the bulk loads
    /// that would break it, STR and OMT, are refused).
    fn orders_by_key(&self) -> bool {
        false
    }
}

/// A node holding one entry more than its maximum, as its parent sees it.
pub struct Overflowing<'a, const D: usize> {
    /// The node's page.
    pub id: PageId,
    /// Its entries, the new one included (not yet written).
    pub node: Node<D>,
    /// The parent's entries before the treatment (a single entry for the root).
    pub parent: &'a [Entry<D>],
    /// The node's position in `parent`.
    pub pos: usize,
    /// Whether the node is the root.
    pub is_root: bool,
    /// For a node spanning several pages ([`NodePages`]): its pages after the first and
    /// its entries as they are written there; `None` for a one-page node.
    pub spanned: Option<Spanned<D>>,
    /// What the node's page holds now (before the treatment writes it).
    pub on_page: OnPage<D>,
}

impl<const D: usize> Overflowing<'_, D> {
    /// The entries the node's page holds now, when the engine knows them (so a treatment
    /// can write the node as changes from them, [`super::changes::write_entries`]).
    pub fn stored(&self) -> Option<&[Entry<D>]> {
        match &self.on_page {
            OnPage::AllButLast => self.node.entries.split_last().map(|(_, rest)| rest),
            OnPage::Entries(v) => Some(v),
            OnPage::Unknown => None,
        }
    }
}

/// What the page of a node holds while the engine has the node's new entries in memory.
#[derive(Debug, Clone)]
pub enum OnPage<const D: usize> {
    /// All the node's entries but the last (a new entry appended in memory).
    AllButLast,
    /// These entries.
    Entries(Vec<Entry<D>>),
    /// Not tracked (nodes spanning pages: see [`Overflowing::spanned`]).
    Unknown,
}

/// A node spanning several pages as it is stored (see [`NodePages`]).
#[derive(Debug, Clone)]
pub struct Spanned<const D: usize> {
    /// Its pages after the first, in order.
    pub pages: Vec<PageId>,
    /// Its entries as they are stored (before the pending change).
    pub entries: Vec<Entry<D>>,
}

/// What an overflow treatment did.
pub enum Treated<const D: usize> {
    /// The node was rewritten in place and keeps its place in the parent with this MBR
    /// (and its entry's auxiliary key unchanged: variants with keys answer with
    /// [`Treated::Parent`]).
    Resized(Rect<D>),
    /// The parent's entries change so (positions as in [`Overflowing::parent`]).
    Parent(Vec<NodeChange<D>>),
}

/// Treats an overflowing node (split, forced reinsertion, cooperative split).
pub trait OverflowTreatment<const D: usize>: Send + Sync {
    /// Writes what the node becomes and says how its parent changes. Entries that must be
    /// inserted again go to `ctx`.
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        at: Overflowing<'_, D>,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Treated<D>>;
}

/// A non-root node left with fewer entries than its minimum, as its parent sees it.
pub struct Underfull<'a, const D: usize> {
    /// The node's page.
    pub id: PageId,
    /// Its remaining entries (not yet written).
    pub node: Node<D>,
    /// The parent's entries.
    pub parent: &'a [Entry<D>],
    /// The node's position in `parent`.
    pub pos: usize,
}

/// Treats an underfull node after a delete.
pub trait UnderflowTreatment<const D: usize>: Send + Sync {
    /// Writes what becomes of the node (and its siblings) and returns the changes of the
    /// parent's entries. Entries that must be inserted again go to `ctx`.
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        at: Underfull<'_, D>,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Vec<NodeChange<D>>>;
}

/// Nodes spanning several pages: a first page (the one its parent entry points at) and
/// further pages the variant names from the stored pages themselves. The engines read such
/// a node as the concatenation of its pages' entries (positions run on across pages) and
/// write it back through [`NodePages::write`]; one-page nodes take the engines' usual path.
pub trait NodePages<const D: usize>: Send + Sync {
    /// The position among a node's `entries` (at `level` >= 1) of the child that should
    /// receive entry `e` (the variant's subtree choice on a decoded node).
    fn choose(&self, entries: &[Entry<D>], level: u32, e: &Entry<D>) -> usize;

    /// Appends to `out` the further pages named by page `v` of a node (none for a page
    /// that names no further page). Called on every page of a node, in page order.
    fn further_pages(&self, v: NodeView<'_, D>, out: &mut Vec<PageId>);

    /// The entry of a stored page as the tree sees it (without what the variant keeps in
    /// the page for itself, e.g. page links in auxiliary slots).
    fn entry(&self, v: NodeView<'_, D>, i: usize) -> Entry<D>;

    /// Appends every entry of page `v` as [`Self::entry`] gives it (variants may read a
    /// whole page faster).
    fn extend_entries(&self, v: NodeView<'_, D>, out: &mut Vec<Entry<D>>) {
        out.extend((0..v.len()).map(|i| self.entry(v, i)));
    }

    /// A traversal read node `id` spanning `pages` pages (1 for a one-page node).
    /// `insert` tells an insertion's descent from other reads (searches, deletes).
    fn visited(&self, id: PageId, level: u32, pages: usize, insert: bool);

    /// Whether node `id` (spanning `pages` pages) should be handed to the overflow
    /// treatment even though it does not overflow (e.g. to be restructured).
    fn treat_anyway(&self, id: PageId, level: u32, pages: usize) -> bool;

    /// Writes node `id` (first page) at `level` with `entries` (positions as the engine
    /// sees them): `stored` is what it held, or `None` if it was a one-page node whose
    /// stored entries the caller does not know. Pages are added or freed as needed.
    fn write(
        &self,
        tree: &mut dyn NodeAccess<D>,
        id: PageId,
        level: u32,
        stored: Option<&Spanned<D>>,
        entries: &[Entry<D>],
    ) -> Result<()>;

    /// [`Self::choose`] on the page `v` of a one-page node: the same choice, without
    /// decoding the node (an insertion's descent through one-page nodes stays on their
    /// pages, as the one-page variants' does).
    fn choose_on_page(&self, v: NodeView<'_, D>, level: u32, e: &Entry<D>) -> usize;

    /// [`Self::choose`] on the pages of a node spanning several (`pages`, in order;
    /// positions run on across pages), without decoding the node.
    fn choose_on_pages(&self, pages: &[NodePage], level: u32, e: &Entry<D>) -> usize;

    /// What [`Self::write`] does for node `pages[0]`, stored on `pages` (in order, every
    /// page but the last holding the level's maximum of entries, the last at least one),
    /// when one `change` to its page `q` leaves it on the same pages: an entry of page `q`
    /// set, or an entry appended to the last page. The node's stored entries are not
    /// decoded; only page `q` is written (if the change changes it).
    fn write_in_place(
        &self,
        tree: &mut dyn NodeAccess<D>,
        pages: &[PageId],
        level: u32,
        q: usize,
        change: OnePageChange<D>,
    ) -> Result<()>;
}

/// One change to one page of a node that stays on its pages ([`NodePages::write_in_place`]).
#[derive(Debug, Clone, Copy)]
pub enum OnePageChange<const D: usize> {
    /// The entry at `pos` of the page (`old`, as [`NodePages::entry`] read it) becomes
    /// `new`.
    Set {
        /// Its position.
        pos: usize,
        /// The entry it held.
        old: Entry<D>,
        /// The entry it holds now.
        new: Entry<D>,
    },
    /// An entry appended (to the node's last page).
    Push(Entry<D>),
}

impl<const D: usize> OnePageChange<D> {
    /// Entry `pos` (`child`) takes the box and key `changed` gave its subtree: `None` when
    /// nothing changed or they are the ones it holds.
    pub(crate) fn child_set(
        pos: usize,
        child: Entry<D>,
        changed: Option<(Rect<D>, u64)>,
    ) -> Option<Self> {
        let (m, a) = changed.filter(|&(m, a)| m != child.mbr || a != child.aux)?;
        let new = Entry {
            mbr: m,
            ptr: child.ptr,
            aux: a,
        };
        Some(OnePageChange::Set {
            pos,
            old: child,
            new,
        })
    }
}

/// State a variant keeps about the tree beyond its nodes (e.g. the FOR-tree's access
/// counts), saved through the store at every checkpoint ([`crate::store::TreeState`]) and
/// restored when the tree is reopened, so a reopened tree goes on as one never closed.
pub trait VariantState: Send + Sync {
    /// The format tag of the encoded state (e.g. `fortree-access-counts/1`).
    fn format(&self) -> &'static str;
    /// The state, encoded.
    fn save(&self) -> Vec<u8>;
    /// Replaces the state by the one `bytes` encode (written by [`Self::save`] of the same
    /// format); damaged bytes are refused.
    fn load(&self, bytes: &[u8]) -> Result<()>;
}

/// The parts of one tree variant.
pub struct Strategy<const D: usize> {
    /// Subtree choice.
    pub choose: Box<dyn ChooseSubtree<D>>,
    /// Overflow treatment.
    pub overflow: std::sync::Arc<dyn OverflowTreatment<D>>,
    /// Underflow treatment.
    pub underflow: std::sync::Arc<dyn UnderflowTreatment<D>>,
    /// Nodes spanning several pages; `None` for the variants whose nodes are one page.
    pub pages: Option<std::sync::Arc<dyn NodePages<D>>>,
    /// The variant's own state; `None` for the variants that keep none.
    pub state: Option<std::sync::Arc<dyn VariantState>>,
}

/// The MBR of a list of entries, folded in order.
pub fn mbr_of<const D: usize>(es: &[Entry<D>]) -> Rect<D> {
    let mut r = Rect::empty();
    for e in es {
        r.expand(&e.mbr);
    }
    r
}

/// Splits `node` into two by `split` (it returns the two groups), rewriting the node with
/// the first group and creating a sibling with the second; returns the parent's changes
/// (the node's entry updated, the sibling's appended). Shared by the split-based
/// treatments.
pub(crate) fn split_in_two<const D: usize>(
    tree: &mut dyn NodeAccess<D>,
    at: Overflowing<'_, D>,
    split: impl FnOnce(Vec<Entry<D>>, usize) -> (Vec<Entry<D>>, Vec<Entry<D>>),
) -> Result<Treated<D>> {
    let level = at.node.level;
    let min = tree.capacity().min(level);
    let (a, b) = split(at.node.entries, min);
    tree.stats_mut().splits += 1;
    tree.rewrite(at.id, level, &a)?;
    let sibling = tree.create(level, &b)?;
    Ok(Treated::Parent(vec![
        NodeChange::Set {
            pos: at.pos,
            entry: Entry {
                mbr: mbr_of(&a),
                ptr: at.id,
                aux: aux_max(&a),
            },
        },
        NodeChange::Push(Entry {
            mbr: mbr_of(&b),
            ptr: sibling,
            aux: aux_max(&b),
        }),
    ]))
}

/// Guttman's condense step (1984): the underfull node leaves the tree and its entries are
/// reinserted at their own level. Used by the R-tree and the R*-tree.
pub struct CondenseReinsert;

impl<const D: usize> UnderflowTreatment<D> for CondenseReinsert {
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        at: Underfull<'_, D>,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Vec<NodeChange<D>>> {
        let level = at.node.level;
        tree.stats_mut().condensed_nodes += 1;
        ctx.pending
            .extend(at.node.entries.iter().map(|e| (*e, level)));
        tree.delete(at.id, level)?;
        Ok(vec![NodeChange::Remove { pos: at.pos }])
    }
}
