//! The `NodeStore` seam (architecture §2): how node changes reach storage.
//!
//! Tree code reads nodes and expresses every change at entry level (create a node, set,
//! push or remove an entry, rewrite or delete a node) through [`NodeStore`] and never asks
//! which store it runs on; the runner drives every store through [`StoreControl`] (drop
//! caches, write back, report). The plain [`direct::DirectStore`] writes each change in
//! place through a page cache; flash-aware stores are policies ([`fast`], [`efind`], [`lcr`], [`rftl`]) over
//! one buffered-store skeleton ([`buffered`]) that buffers the same changes and makes them
//! durable through the shared [`log::Log`].

pub(crate) mod any;
pub(crate) mod buffered;
pub mod direct;
pub mod efind;
pub mod fast;
pub mod header;
pub mod journal;
pub mod lcr;
#[cfg(test)]
mod lcr_rftl_tests;
pub mod log;
pub(crate) mod report;
pub mod rftl;
pub mod written;

pub use any::{AnyStore, StoreConfig};
pub use header::StoreHeader;
pub use report::{StoreFiles, StoreGauges, StoreReport, StoreSettings};

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::node::{Entry, NodeLayout, NodeView, PageId};
use crate::Result;

/// A node as read from a store: an immutable page image, cheap to clone and keep.
#[derive(Clone)]
pub struct NodePage {
    bytes: Arc<[u8]>,
    layout: NodeLayout,
}

impl NodePage {
    /// Wraps a verified page image.
    pub fn new(bytes: Arc<[u8]>, layout: NodeLayout) -> Self {
        NodePage { bytes, layout }
    }

    /// An in-place view of the node.
    #[inline]
    pub fn view<const D: usize>(&self) -> NodeView<'_, D> {
        self.layout.view(&self.bytes)
    }

    /// The raw page bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// One entry-level change to a node, the unit flash-aware stores account and log. The
/// entry type `E` says how the entry is held: the tree's [`Entry`] ([`NodeChange`]), or its
/// encoded bytes inside buffered stores, their write buffers and their log records
/// ([`buffered::RawChange`]); it is the one change type of every store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Change<E> {
    /// Replace the entry at `pos`.
    Set { pos: usize, entry: E },
    /// Append an entry.
    Push(E),
    /// Remove the entry at `pos`; later entries shift down by one.
    Remove { pos: usize },
}

/// A change as trees express it.
pub type NodeChange<const D: usize> = Change<Entry<D>>;

impl<E> Change<E> {
    /// The same change with its entry converted by `f`.
    pub(crate) fn try_map<F, Err>(
        &self,
        f: impl FnOnce(&E) -> std::result::Result<F, Err>,
    ) -> std::result::Result<Change<F>, Err> {
        Ok(match self {
            Change::Set { pos, entry } => Change::Set {
                pos: *pos,
                entry: f(entry)?,
            },
            Change::Push(entry) => Change::Push(f(entry)?),
            Change::Remove { pos } => Change::Remove { pos: *pos },
        })
    }

    /// The same change borrowing its entry.
    pub fn as_ref(&self) -> Change<&E> {
        match self {
            Change::Set { pos, entry } => Change::Set { pos: *pos, entry },
            Change::Push(entry) => Change::Push(entry),
            Change::Remove { pos } => Change::Remove { pos: *pos },
        }
    }
}

/// Applies `changes` in order to an entry list (what every store must do on read).
pub(crate) fn apply_changes<const D: usize>(
    entries: &mut Vec<Entry<D>>,
    changes: &[NodeChange<D>],
) -> Result<()> {
    for c in changes {
        match *c {
            Change::Set { pos, entry } => {
                let slot = entries.get_mut(pos).ok_or_else(|| bad_pos(pos))?;
                *slot = entry;
            }
            Change::Push(e) => entries.push(e),
            Change::Remove { pos } => {
                if pos >= entries.len() {
                    return Err(bad_pos(pos));
                }
                entries.remove(pos);
            }
        }
    }
    Ok(())
}

fn bad_pos(pos: usize) -> crate::Error {
    crate::Error::invalid(
        "node change",
        format!("entry position {pos} does not exist"),
    )
}

/// What a tree keeps about itself: the root and its height, persisted by the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeMeta {
    /// Page of the root node.
    pub root: PageId,
    /// Number of levels (a lone leaf root has height 1).
    pub height: u32,
    /// Number of indexed objects.
    pub objects: u64,
}

/// Where a store's allocated pages are: every page below `next_page` is reached by the
/// tree, on the free list, or one of the store's own pages (the LCR-tree's log pages,
/// RFTL's unit pages), exactly one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageAccounting {
    /// The first never-allocated page.
    pub next_page: PageId,
    /// The free list.
    pub free: Vec<PageId>,
    /// The store's own pages in use, with what they are (`"log page"`).
    pub own: Vec<(PageId, &'static str)>,
}

impl PageAccounting {
    /// The violations of "every page accounted for exactly once", given the pages the
    /// tree's walk `reached` (each once; the checker reports pages reached twice): a page
    /// never allocated, a page with two roles, or an allocated page with none (leaked). At
    /// most `limit` messages, then their count.
    pub fn violations(&self, reached: &[PageId], limit: usize) -> Vec<String> {
        const TREE: u8 = 1;
        const FREE: u8 = 2;
        const OWN: u8 = 4;
        let n = self.next_page;
        let mut role = vec![0u8; usize::try_from(n).unwrap_or(usize::MAX).min(1 << 32)];
        let mut out = Vec::new();
        let mut more = 0u64;
        let mut say = |out: &mut Vec<String>, m: String| {
            if out.len() < limit {
                out.push(m);
            } else {
                more += 1;
            }
        };
        let mut mark = |out: &mut Vec<String>, p: PageId, r: u8, what: &str| match role
            .get_mut(p as usize)
            .filter(|_| p < n)
        {
            None => say(
                out,
                format!("page {p} ({what}) was never allocated (next_page = {n})"),
            ),
            Some(x) if *x & r != 0 => say(out, format!("page {p} is listed twice as {what}")),
            Some(x) if *x != 0 => {
                say(out, format!("page {p} is {what} and also {}", name(*x)));
                *x |= r;
            }
            Some(x) => *x |= r,
        };
        fn name(r: u8) -> &'static str {
            match r {
                r if r & 1 != 0 => "a tree page",
                r if r & 2 != 0 => "free",
                _ => "one of the store's own pages",
            }
        }
        for &p in reached {
            mark(&mut out, p, TREE, "a tree page");
        }
        for &p in &self.free {
            mark(&mut out, p, FREE, "free");
        }
        for &(p, what) in &self.own {
            mark(&mut out, p, OWN, what);
        }
        for (p, r) in role.iter().enumerate() {
            if *r == 0 {
                say(
                    &mut out,
                    format!(
                        "page {p} is allocated but neither reached by the tree, free, nor one \
                         of the store's own pages"
                    ),
                );
            }
        }
        if more > 0 {
            out.push(format!("... and {more} more page accounting violations"));
        }
        out
    }
}

/// The greatest tree height a store reads (a tree of height 64 with two entries per node
/// already holds 2^63 objects): a larger one is damage, refused before anything is sized
/// by it.
pub const MAX_TREE_HEIGHT: u32 = 64;

impl TreeMeta {
    /// Checks the metadata read from `what` (a file or a log record): a height from 1 to
    /// [`MAX_TREE_HEIGHT`], and the root below `next_page`, the first never-used page
    /// (when known).
    pub fn check(&self, what: &str, next_page: Option<PageId>) -> crate::Result<()> {
        if self.height == 0 || self.height > MAX_TREE_HEIGHT {
            return Err(crate::Error::corrupted(
                what.to_string(),
                format!(
                    "field height = {} is outside 1 to {MAX_TREE_HEIGHT}",
                    self.height
                ),
            ));
        }
        if let Some(next) = next_page.filter(|n| self.root >= *n) {
            return Err(crate::Error::corrupted(
                what.to_string(),
                format!(
                    "field root = {} is not an allocated page (next_page = {next})",
                    self.root
                ),
            ));
        }
        Ok(())
    }
}

/// State a tree variant keeps about itself beyond [`TreeMeta`] (e.g. the FOR-tree's access
/// counts), as the variant encoded it. Stores keep it opaque and save it the same way, with
/// their header at every checkpoint ([`NodeStore::flush`]): it is advice the variant may
/// lose without losing entries (after a crash the last checkpoint's state comes back with the
/// recovered tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeState {
    /// Which variant wrote it and in which format (e.g. `fortree-access-counts/1`); a
    /// variant refuses state it did not write.
    pub format: String,
    /// The encoded state (base64 in `store.json`).
    #[serde(with = "base64_bytes")]
    pub bytes: Vec<u8>,
}

/// Serialises bytes as one base64 string (standard alphabet, padded).
mod base64_bytes {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

/// Counters every store keeps (flash-aware stores add their own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStats {
    /// Node reads requested by the tree.
    pub node_reads: u64,
    /// Nodes created.
    pub nodes_created: u64,
    /// Node modifications requested (one `modify` or `rewrite` call each).
    pub node_updates: u64,
    /// Entry-level changes within those modifications.
    pub entry_changes: u64,
    /// Nodes deleted.
    pub nodes_deleted: u64,
    /// Node pages written to the page cache / device.
    pub page_writes: u64,
}

/// Where a tree's nodes live. See the module documentation.
pub trait NodeStore<const D: usize> {
    /// The page layout of nodes.
    fn layout(&self) -> &NodeLayout;

    /// Reads node `id`, which the tree expects at `level` (a hint for level-aware buffers).
    fn read(&mut self, id: PageId, level: u32) -> Result<NodePage>;

    /// Reads node `id` like [`read`](Self::read) (the same counters and I/O) and calls `f`
    /// with a view of it, returning what `f` returns. Stores may override it to lend the
    /// page without sharing it (no reference counting on the hot path of searches); the
    /// default calls `read`.
    fn with_node<R>(
        &mut self,
        id: PageId,
        level: u32,
        f: impl FnOnce(NodeView<'_, D>) -> R,
    ) -> Result<R>
    where
        Self: Sized,
    {
        let page = self.read(id, level)?;
        Ok(f(page.view::<D>()))
    }

    /// Creates a node at `level` holding `entries`; returns its page id.
    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId>;

    /// Applies entry-level `changes`, in order, to node `id` as one update.
    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()>;

    /// Replaces all entries of node `id` (after a split or a reinsertion).
    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()>;

    /// Deletes node `id` and frees its page.
    fn delete(&mut self, id: PageId, level: u32) -> Result<()>;

    /// The tree's metadata, if a tree was stored before.
    fn meta(&self) -> Option<TreeMeta>;

    /// Records new tree metadata (root, height, object count).
    fn set_meta(&mut self, meta: TreeMeta) -> Result<()>;

    /// The tree variant's own state saved at the last checkpoint (or set since), if any.
    fn tree_state(&self) -> Option<&TreeState>;

    /// Records the tree variant's own state (`None`: it keeps none); saved with the
    /// store's header at the next checkpoint. Not logged: see [`TreeState`].
    fn set_tree_state(&mut self, state: Option<TreeState>);

    /// The tree finished one operation (creating the tree, an insert, a delete, an update).
    /// Logging stores make the operation durable here; flash-aware stores flush their
    /// buffers only at this point, so no page on the device ever holds half an operation.
    /// The direct store does nothing.
    fn end_operation(&mut self) -> Result<()> {
        Ok(())
    }

    /// Makes everything written so far durable and saves the store's header.
    fn flush(&mut self) -> Result<()>;

    /// The store's counters.
    fn stats(&self) -> StoreStats;
}

/// What the runner and the CLI need of any store besides node access: its device, the
/// cache and buffer controls of the measurement protocol, and its report. Every store
/// implements it, so a store can plug in beside [`AnyStore`]'s.
pub trait StoreControl {
    /// The device under the store (its statistics cover every partition of it).
    fn device(&self) -> &dyn Device;

    /// Empties the store's read caches and the device's (between query repetitions).
    /// Buffered changes not yet written stay: they are part of the index, not a cache.
    fn drop_caches(&mut self) -> Result<()>;

    /// Writes every buffered change to the device (at the end of a workload), so the cost
    /// of emptying a write buffer can be measured apart from the workload's.
    fn write_back(&mut self) -> Result<()>;

    /// Node pages allocated and not freed.
    fn pages_in_use(&self) -> u64;

    /// Where every allocated page is (for the complete consistency check, `spidx check
    /// --deep`): see [`PageAccounting`].
    fn page_accounting(&self) -> PageAccounting;

    /// The store's statistics.
    fn report(&self) -> StoreReport;

    /// Saves the store's header file as it is, without device I/O: a new store does it
    /// before its first operation, so a crash before the first checkpoint reopens it
    /// (empty) instead of leaving an index without `store.json`.
    fn save_header(&mut self) -> Result<()>;

    /// Saves a simulated device's state (syncs a real one), without other I/O.
    fn persist_device(&mut self) -> Result<()>;

    /// The log's own device, when the store writes its log to a second device
    /// (`log_device = "separate:..."`): its counters and time are reported apart from
    /// [`device`](Self::device)'s. `None` when the log is on the device (or uncounted).
    fn log_device(&self) -> Option<&dyn Device> {
        None
    }
}
