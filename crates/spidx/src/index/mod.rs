//! The index layer (architecture §5): R-tree family trees whose nodes are pages
//! reached through a [`NodeStore`]. The algorithms never ask which store they run on, so
//! the same code runs plain, under FAST or under eFIND.
//!
//! * [`Tree`] with [`IndexKind::RTree`] (Guttman 1984, with the splits of [`split`]) or
//!   [`IndexKind::RStar`] (Beckmann et al. 1990: overlap-minimising subtree choice with the
//!   p-candidate optimisation, forced reinsertion, the R*-tree split).
//! * [`IndexKind::Hilbert`]: the Hilbert R-tree (Kamel and Faloutsos 1994, [`hilbert`]).
//! * [`IndexKind::ForTree`]: the FOR-tree (Jin et al. 2015, [`fortree`]): overflow nodes
//!   instead of splits, merged back by access counts.
//! * insert ([`insert`]), delete with condense and reinsertion ([`delete`]), update;
//! * filter-step searches on MBRs and best-first k nearest neighbours ([`search`]);
//! * an invariant checker that also measures the tree's shape ([`check`]).

pub mod bulk;
pub mod changes;
pub mod check;
pub mod curve;
pub mod delete;
pub mod fortree;
pub mod hilbert;
pub mod insert;
pub mod rstar;
mod rtree;
pub mod search;
pub mod split;
pub mod strategy;
pub mod written;

use serde::{Deserialize, Serialize};

pub use check::{CheckReport, LevelShape};
pub use fortree::ForTreeOptions;
pub use hilbert::HilbertOptions;
pub use rstar::{RStarOptions, ReinsertPolicy};
pub use search::MbrPredicate;
pub use split::SplitAlgorithm;

use crate::geom::Rect;
use crate::node::{Capacity, Entry, LayoutKind, Node, NodeLayout, NodeView, PageId};
use crate::store::{NodeChange, NodePage, NodeStore, TreeMeta, TreeState};
use crate::{Error, Result};
use strategy::{NodeAccess, Spanned, Strategy};

/// Which tree algorithm to run, with its options: one struct (or struct variant) per
/// variant, each option a field whose default is the struct's `Default` (serde fills in
/// what is not written). This serde form is what `index.json` stores; users write the same
/// keys ([`written`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "index", rename_all = "lowercase", deny_unknown_fields)]
pub enum IndexKind {
    /// Guttman's R-tree with a split algorithm.
    RTree {
        /// The split algorithm.
        #[serde(default)]
        split: SplitAlgorithm,
    },
    /// The R*-tree.
    RStar(RStarOptions),
    /// The Hilbert R-tree.
    Hilbert(HilbertOptions),
    /// The FOR-tree (overflow nodes instead of splits, merged back by access counts).
    #[serde(rename = "fortree")]
    ForTree(ForTreeOptions),
}

impl IndexKind {
    /// Every variant with its default options: the registry the written forms (spec keys,
    /// `--index-opt`, their names and defaults) are derived from, one entry per variant.
    pub fn registered() -> [IndexKind; 4] {
        [
            IndexKind::RTree {
                split: SplitAlgorithm::default(),
            },
            IndexKind::RStar(RStarOptions::default()),
            IndexKind::Hilbert(HilbertOptions::default()),
            IndexKind::ForTree(ForTreeOptions::default()),
        ]
    }

    /// Checks the options that do not depend on the node capacities (keys named as users
    /// write them).
    pub fn check_options(&self) -> Result<()> {
        match self {
            IndexKind::RTree {
                split: SplitAlgorithm::RStar,
            } => Err(Error::invalid(
                "split",
                "rstar is the R*-tree's split: use the R*-tree (index rstar)",
            )),
            IndexKind::RTree { .. } => Ok(()),
            IndexKind::RStar(o) => {
                for (name, v) in [
                    ("reinsert", o.reinsert_leaf),
                    ("reinsert_internal", o.reinsert_internal),
                ] {
                    if !(0.0..=0.5).contains(&v) {
                        return Err(Error::invalid(
                            name,
                            format!("{} % is outside 0-50 %", v * 100.0),
                        ));
                    }
                }
                if o.candidates == 0 {
                    return Err(Error::invalid("candidates", "p must be at least 1"));
                }
                Ok(())
            }
            IndexKind::Hilbert(o) => o.check(),
            IndexKind::ForTree(o) => o.check(),
        }
    }

    /// Checks options, also against the node capacities.
    pub fn validate(&self, cap: &Capacity) -> Result<()> {
        self.check_options()?;
        if let IndexKind::Hilbert(o) = self {
            o.check_capacity(cap)?;
        }
        if let IndexKind::RTree {
            split: SplitAlgorithm::Exponential,
        } = self
        {
            let m = cap.leaf_max.max(cap.internal_max) + 1;
            if m > split::EXPONENTIAL_MAX_ENTRIES {
                return Err(Error::invalid(
                    "split",
                    format!(
                        "the exponential split examines 2^(M+1) partitions; M = {} is too large (at most {}): use a smaller page or max fill",
                        m - 1,
                        split::EXPONENTIAL_MAX_ENTRIES - 1
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Bytes of auxiliary key per entry the variant's node layout holds (see
    /// [`NodeLayout::with_aux`]).
    pub(crate) fn aux_bytes(&self) -> usize {
        match self {
            IndexKind::RTree { .. } | IndexKind::RStar(_) => 0,
            // Hilbert: the key; FOR-tree: the slots naming a node's further pages.
            IndexKind::Hilbert(_) | IndexKind::ForTree(_) => 8,
        }
    }

    /// Checks the options against the dimensions (the Hilbert R-tree's keys limit them).
    pub(crate) fn check_dims(&self, dims: usize) -> Result<()> {
        match self {
            IndexKind::Hilbert(o) => o.check_dims(dims),
            IndexKind::RTree { .. } | IndexKind::RStar(_) | IndexKind::ForTree(_) => Ok(()),
        }
    }

    /// The node layout of this variant: `kind` pages of `page_size` bytes in `dims`
    /// dimensions, with the variant's auxiliary key per entry if it has one (the options
    /// are checked against `dims` first).
    pub fn layout(&self, kind: LayoutKind, page_size: usize, dims: usize) -> Result<NodeLayout> {
        self.check_dims(dims)?;
        NodeLayout::new(kind, page_size, dims)?.with_aux(self.aux_bytes())
    }

    /// The strategy parts of the variant (its registration: one arm per variant).
    fn strategy<const D: usize>(&self) -> Strategy<D> {
        match self {
            IndexKind::RTree { split } => rtree::strategy(*split),
            IndexKind::RStar(o) => rstar::strategy(o),
            IndexKind::Hilbert(o) => hilbert::strategy(o),
            IndexKind::ForTree(o) => fortree::strategy(o),
        }
    }

    /// A readable name, e.g. `R-tree (quadratic)` or `R*-tree 30%`.
    pub fn label(&self) -> String {
        match self {
            IndexKind::RTree { split } => format!("R-tree ({})", split.name()),
            IndexKind::RStar(o) if o.reinsert_leaf == o.reinsert_internal => {
                format!("R*-tree {}%", (o.reinsert_leaf * 100.0).round())
            }
            IndexKind::RStar(o) => format!(
                "R*-tree {}%/{}%",
                (o.reinsert_leaf * 100.0).round(),
                (o.reinsert_internal * 100.0).round()
            ),
            IndexKind::Hilbert(o) => o.label(),
            IndexKind::ForTree(o) => o.label(),
        }
    }
}

/// Validates `r` (finite coordinates, not inverted) with an error naming it as `what`
/// ("query window", "box of object 7") and the offending coordinate, e.g. `invalid query
/// window: coordinate 0 of the lower corner is NaN; ...` (never a debug dump of the box).
pub(crate) fn check_named<const D: usize>(
    r: &Rect<D>,
    what: impl FnOnce() -> String,
) -> Result<()> {
    r.validate().map_err(|e| match e {
        Error::InvalidOption { message, .. } => Error::invalid(what(), message),
        other => other,
    })
}

/// Chains of pages of a node up to this length are checked for loops by a scan, longer
/// ones with a set (see [`Tree::read_spanned`]).
const SHORT_CHAIN: usize = 32;

/// Counters the tree keeps about its own work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeStats {
    /// Node reads per level (index 0 = leaves).
    pub reads_per_level: Vec<u64>,
    /// Entries held by the nodes read (what the traversals scanned).
    #[serde(default)]
    pub entries_read: u64,
    /// Node writes (modifications, rewrites, creations) per level.
    pub writes_per_level: Vec<u64>,
    /// Node splits.
    pub splits: u64,
    /// Forced-reinsertion events (R*-tree).
    pub forced_reinserts: u64,
    /// Entries reinserted (forced reinsertion and condensed nodes).
    pub reinserted_entries: u64,
    /// Nodes removed by condensation after deletes.
    pub condensed_nodes: u64,
}

impl TreeStats {
    fn bump(v: &mut Vec<u64>, level: u32) {
        let l = level as usize;
        if v.len() <= l {
            v.resize(l + 1, 0);
        }
        v[l] += 1;
    }
}

/// An R-tree family index over a node store. See the module documentation.
pub struct Tree<S, const D: usize> {
    store: S,
    cap: Capacity,
    kind: IndexKind,
    meta: TreeMeta,
    stats: TreeStats,
    /// The variant's insertion and deletion parts, made from `kind`.
    strategy: Strategy<D>,
    /// The traversal stack of [`Tree::search`], kept between calls to save allocations.
    search_stack: Vec<(PageId, u32)>,
    /// The queue of the last nearest-neighbour traversal, kept for the next one.
    nearest_spare: search::NearestSpare<D>,
}

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Creates an empty tree (a root leaf with no entries) in `store`.
    pub fn create(mut store: S, cap: Capacity, kind: IndexKind) -> Result<Self> {
        kind.validate(&cap)?;
        Self::check_layout(&store, &kind)?;
        if store.meta().is_some() {
            return Err(Error::invalid("index", "the store already holds a tree"));
        }
        let root = store.create(0, &[])?;
        let meta = TreeMeta {
            root,
            height: 1,
            objects: 0,
        };
        store.set_meta(meta)?;
        store.end_operation()?;
        let mut stats = TreeStats::default();
        TreeStats::bump(&mut stats.writes_per_level, 0);
        Ok(Tree {
            store,
            cap,
            kind,
            meta,
            stats,
            strategy: kind.strategy(),
            search_stack: Vec::new(),
            nearest_spare: Default::default(),
        })
    }

    /// Opens the tree stored in `store`.
    pub fn open(store: S, cap: Capacity, kind: IndexKind) -> Result<Self> {
        kind.validate(&cap)?;
        Self::check_layout(&store, &kind)?;
        let meta = store
            .meta()
            .ok_or_else(|| Error::corrupted("index", "the store holds no tree metadata"))?;
        meta.check("index tree metadata", None)?;
        let strategy: Strategy<D> = kind.strategy();
        Self::restore_state(&store, &strategy, &kind)?;
        Ok(Tree {
            store,
            cap,
            kind,
            meta,
            stats: TreeStats::default(),
            strategy,
            search_stack: Vec::new(),
            nearest_spare: Default::default(),
        })
    }

    /// Gives the variant the state the store saved for it. A store without saved state
    /// (a tree never checkpointed with state, or written before state was kept) starts
    /// the variant afresh; state of another format, or damaged state, is refused.
    fn restore_state(store: &S, strategy: &Strategy<D>, kind: &IndexKind) -> Result<()> {
        let saved = store.tree_state();
        match (&strategy.state, saved) {
            (_, None) => Ok(()),
            (Some(part), Some(s)) if s.format == part.format() => {
                part.load(&s.bytes).map_err(|e| {
                    Error::corrupted("tree state", format!("{} ({}): {e}", s.format, kind.label()))
                })
            }
            (Some(part), Some(s)) => Err(Error::corrupted(
                "tree state",
                format!(
                    "the store holds tree state of format '{}', {} keeps '{}'",
                    s.format,
                    kind.label(),
                    part.format()
                ),
            )),
            (None, Some(s)) => Err(Error::invalid(
                "index",
                format!(
                    "the store holds tree state of format '{}' that {} does not keep (opened as another index kind?)",
                    s.format,
                    kind.label()
                ),
            )),
        }
    }

    /// Hands the variant's state to the store (saved with its header at the next
    /// checkpoint); nothing for variants without state.
    fn save_state(&mut self) {
        if let Some(part) = &self.strategy.state {
            self.store.set_tree_state(Some(TreeState {
                format: part.format().to_string(),
                bytes: part.save(),
            }));
        }
    }

    /// Saves the variant's state and makes everything durable ([`NodeStore::flush`]).
    /// Use it rather than flushing the store directly, which would checkpoint the state
    /// last saved.
    pub fn flush(&mut self) -> Result<()> {
        self.save_state();
        self.store.flush()
    }

    /// Refuses a store whose node layout does not hold the variant's auxiliary keys (or
    /// holds keys the variant does not use): see [`IndexKind::layout`].
    fn check_layout(store: &S, kind: &IndexKind) -> Result<()> {
        kind.check_dims(D)?;
        let (has, wants) = (store.layout().aux_bytes(), kind.aux_bytes());
        if has != wants {
            return Err(Error::invalid(
                "layout",
                format!(
                    "the node layout holds {has} bytes of auxiliary key per entry, {} needs {wants} (make the layout with IndexKind::layout)",
                    kind.label()
                ),
            ));
        }
        Ok(())
    }

    /// The tree's metadata (root, height, object count).
    pub fn meta(&self) -> TreeMeta {
        self.meta
    }

    /// Node capacities.
    pub fn capacity(&self) -> &Capacity {
        &self.cap
    }

    /// The algorithm.
    pub fn kind(&self) -> &IndexKind {
        &self.kind
    }

    /// The tree's own counters.
    pub fn stats(&self) -> &TreeStats {
        &self.stats
    }

    /// The node store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The node store, mutably (e.g. to flush or reach the device).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Flushes the store (with the variant's state) and gives it back.
    pub fn into_store(mut self) -> Result<S> {
        self.flush()?;
        Ok(self.store)
    }

    fn root_level(&self) -> u32 {
        self.meta.height - 1
    }

    fn read(&mut self, id: PageId, level: u32) -> Result<NodePage> {
        TreeStats::bump(&mut self.stats.reads_per_level, level);
        let page = self.store.read(id, level)?;
        let view = page.view::<D>();
        self.stats.entries_read += view.len() as u64;
        let got = view.level();
        if got != level {
            return Err(Error::corrupted(
                format!("node page {id}"),
                format!("found a node of level {got} where level {level} was expected"),
            ));
        }
        Ok(page)
    }

    /// Reads node `id` (expected at `level`) as [`Self::read`] does and calls `f` with a
    /// view of it, without sharing the page (see [`NodeStore::with_node`]).
    fn with_node<R>(
        &mut self,
        id: PageId,
        level: u32,
        f: impl FnOnce(NodeView<'_, D>) -> R,
    ) -> Result<R> {
        TreeStats::bump(&mut self.stats.reads_per_level, level);
        let entries = &mut self.stats.entries_read;
        self.store
            .with_node(id, level, |v| {
                *entries += v.len() as u64;
                let got = v.level();
                if got == level {
                    Ok(f(v))
                } else {
                    Err(Error::corrupted(
                        format!("node page {id}"),
                        format!("found a node of level {got} where level {level} was expected"),
                    ))
                }
            })
            .and_then(|r| r)
    }

    /// Reads node `id` at `level`: all its pages for a variant whose nodes may span several
    /// ([`strategy::NodePages`]), else its page.
    fn read_node(&mut self, id: PageId, level: u32) -> Result<Node<D>> {
        if self.strategy.pages.is_some() {
            return Ok(self.read_spanned(id, level)?.0);
        }
        let page = self.read(id, level)?;
        let v = page.view::<D>();
        Ok(Node {
            level,
            entries: (0..v.len()).map(|i| v.entry(i)).collect(),
        })
    }

    /// Reads node `id` at `level` of a variant with [`strategy::NodePages`]: its entries
    /// in page order and what is stored where. A page named twice (a cycle) or more pages
    /// than the tree has room for are refused as corruption. Without `NodePages` the node
    /// is its one page.
    fn read_spanned(&mut self, id: PageId, level: u32) -> Result<(Node<D>, Spanned<D>)> {
        let Some(np) = self.strategy.pages.clone() else {
            let page = self.read(id, level)?;
            let v = page.view::<D>();
            let entries: Vec<Entry<D>> = (0..v.len()).map(|i| v.entry(i)).collect();
            let stored = Spanned {
                pages: Vec::new(),
                entries: entries.clone(),
            };
            return Ok((Node { level, entries }, stored));
        };
        let mut pages = Vec::new();
        let mut entries = Vec::new();
        // Lent, not shared: no page reference or copy per page (the same reads).
        self.with_node(id, level, |v| {
            np.extend_entries(v, &mut entries);
            np.further_pages(v, &mut pages);
        })?;
        self.read_further_pages(&*np, id, level, pages, entries)
    }

    /// The rest of [`Self::read_spanned`] once node `id`'s first page is read: its
    /// further `pages` as that page names them, and its `entries`.
    fn read_further_pages(
        &mut self,
        np: &dyn strategy::NodePages<D>,
        id: PageId,
        level: u32,
        mut pages: Vec<PageId>,
        mut entries: Vec<Entry<D>>,
    ) -> Result<(Node<D>, Spanned<D>)> {
        // Lent, not shared: no page reference or copy per page (the same reads).
        self.walk_further_pages(id, &mut pages, |t, p, pages| {
            t.with_node(p, level, |v| {
                np.extend_entries(v, &mut entries);
                np.further_pages(v, pages);
            })
        })?;
        let stored = Spanned {
            pages,
            entries: entries.clone(),
        };
        Ok((Node { level, entries }, stored))
    }

    /// Reads the further pages of node `id` in order: `pages` holds those its first page
    /// names, and `read(tree, p, pages)` reads page `p` and appends the pages it names.
    /// A page named twice (a loop in the chain, or the first page) is refused as
    /// corruption before it is read.
    fn walk_further_pages(
        &mut self,
        id: PageId,
        pages: &mut Vec<PageId>,
        mut read: impl FnMut(&mut Self, PageId, &mut Vec<PageId>) -> Result<()>,
    ) -> Result<()> {
        // Pages already read, for the loop check: the chain itself while it is short
        // (a scan of a few ids), a set beyond.
        let mut seen: Option<std::collections::HashSet<PageId>> = None;
        let mut next = 0;
        while let Some(&p) = pages.get(next) {
            let looped = match &mut seen {
                Some(set) => !set.insert(p),
                None if next < SHORT_CHAIN => p == id || pages[..next].contains(&p),
                None => {
                    let mut set: std::collections::HashSet<PageId> =
                        pages[..next].iter().copied().collect();
                    set.insert(id);
                    let looped = !set.insert(p);
                    seen = Some(set);
                    looped
                }
            };
            if looped {
                return Err(Error::corrupted(
                    format!("node page {id}"),
                    format!("its pages name page {p} twice (the chain of pages of a node must not loop)"),
                ));
            }
            next += 1;
            read(self, p, pages)?;
        }
        Ok(())
    }

    fn set_meta(&mut self, meta: TreeMeta) -> Result<()> {
        self.meta = meta;
        self.store.set_meta(meta)
    }

    fn note_write(&mut self, level: u32) {
        TreeStats::bump(&mut self.stats.writes_per_level, level);
    }

    /// Validates object `id`'s box before it enters (or is looked up in) the tree; the
    /// error names the object and the coordinate.
    #[inline]
    fn check_box(mbr: &Rect<D>, id: u64) -> Result<()> {
        check_named(mbr, || format!("box of object {id}"))
    }
}

impl<S: NodeStore<D>, const D: usize> NodeAccess<D> for Tree<S, D> {
    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId> {
        let id = self.store.create(level, entries)?;
        self.note_write(level);
        Ok(id)
    }

    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()> {
        self.store.modify(id, level, changes)?;
        self.note_write(level);
        Ok(())
    }

    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()> {
        self.store.rewrite(id, level, entries)?;
        self.note_write(level);
        Ok(())
    }

    fn delete(&mut self, id: PageId, level: u32) -> Result<()> {
        self.store.delete(id, level)
    }

    fn read(&mut self, id: PageId, level: u32) -> Result<Node<D>> {
        self.read_node(id, level)
    }

    fn capacity(&self) -> &Capacity {
        &self.cap
    }

    fn stats_mut(&mut self) -> &mut TreeStats {
        &mut self.stats
    }
}
