//! FAST (Sarwat, Mokbel, Zhou, Nath: "Generic and efficient framework for search trees on
//! flash memory storage systems", GeoInformatica 17(3), 2013): a policy over the
//! buffered-store skeleton ([`crate::store::buffered`]) that turns any disk-based tree into
//! a flash-aware one by changing only how node changes reach the device (architecture
//! §6). The trees above are unchanged.
//!
//! * **Write buffer** ([`buffer`]): every node change is kept in memory per node (status
//!   new / modified / deleted plus the ordered entry-level changes); reading a node replays
//!   its changes over its page (or builds it from the buffered image of a new node).
//! * **Flushing** ([`flush`]): at the end of an operation whose changes made the buffer hold
//!   more than `write_buffer` bytes, flushing operations write chosen *flushing units* until
//!   it fits again. A unit is a fixed group of `flushing_unit` consecutive page ids (pages
//!   are allocated sequentially, so a unit's pages are contiguous) and its buffered nodes
//!   are written with one device request per contiguous run. Flushing happens only between
//!   operations, so no page ever holds half an operation; the buffer may therefore exceed
//!   its capacity by one operation's changes.
//! * **Log** (the skeleton's records in the fixed format,
//!   [`RecordFormat::Fixed`], over the shared [`Log`](crate::store::log::Log)): every change
//!   is appended before the operation returns and committed at the operation's end;
//!   `Written` records say which nodes became durable. Page allocation and tree metadata
//!   are logged too. Before nodes are written in place, the full images of the modified
//!   ones (those whose recovery would need their old page) are logged and made durable, so
//!   a torn page write loses nothing ([`UnitDurability::WrittenRecord`]).
//! * **Recovery**: opening the store replays the log (a snapshot of metadata and allocation,
//!   then the records in order, dropping nodes a later flush record made durable) and
//!   rebuilds the buffer: the index is exactly as at the last acknowledged operation.
//! * **Checkpoints** (`NodeStore::flush`): flush the whole buffer, then compact the log
//!   into a snapshot (atomically, see [`crate::store::log::Log::compact`]), persist the device, and write
//!   `store.json` for people to read. The log is the source of truth: a crash between any
//!   two of these steps reopens from the old log or the new one, both consistent.

pub mod buffer;
pub mod flush;
pub mod standings;

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use self::buffer::{logged_write_buffer_hooks, page_from_entries, WriteBuffer};
use super::buffered::node_cache::LazyNodeCache;
use super::buffered::{
    BufferPolicy, BufferSettings, BufferedStore, Core, NodeStatus, Record, RecordFormat,
    RecoveryReport,
};
use super::log::LogSync;
use super::StoreReport;
use crate::node::PageId;
use crate::{Error, Result};

pub use flush::FlushPolicy;

/// Seed of the `random` flushing policy's generator (deterministic runs).
pub const RANDOM_POLICY_SEED: u64 = 0x5EED_FA57;

/// FAST's options, resolved (sizes in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastParams {
    /// Capacity of the write buffer in bytes.
    pub write_buffer: u64,
    /// Nodes per flushing unit.
    pub flushing_unit: u32,
    /// How the unit to flush is chosen.
    pub flush_policy: FlushPolicy,
    /// Bytes of the device given to the log.
    pub log_size: u64,
    /// Durability of the log.
    pub log_sync: LogSync,
}

impl FastParams {
    /// The log size used when none is given: 16 times the write buffer, at least 1MB.
    pub fn default_log_size(write_buffer: u64) -> u64 {
        (write_buffer.saturating_mul(16)).max(1 << 20)
    }

    /// The smallest log that always has room: each of its two regions must hold the
    /// compacted buffer (about twice its bytes, with record headers) twice over, plus the
    /// images of a flushing unit and a few pages for one operation's records.
    pub fn min_log_size(write_buffer: u64, flushing_unit: u32, page_size: usize) -> u64 {
        let ps = page_size as u64;
        2 * (4 * write_buffer + 2 * u64::from(flushing_unit) * ps + 16 * ps) + 2 * ps
    }

    /// Checks the options against the node page size.
    pub fn validate(&self, page_size: usize) -> Result<()> {
        if self.write_buffer == 0 {
            return Err(Error::invalid(
                "FAST write buffer",
                "0 bytes; give a size such as 512KB",
            ));
        }
        if self.flushing_unit == 0 {
            return Err(Error::invalid(
                "FAST flushing unit",
                "0 nodes; a flushing unit holds at least 1 node",
            ));
        }
        let unit_bytes = u64::from(self.flushing_unit) * page_size as u64;
        if unit_bytes > self.write_buffer {
            return Err(Error::invalid(
                "FAST flushing unit",
                format!(
                    "{} nodes of {page_size} bytes ({unit_bytes} bytes) is more than the \
                     {}-byte write buffer can ever hold; use a smaller unit or a larger buffer",
                    self.flushing_unit, self.write_buffer
                ),
            ));
        }
        let min = Self::min_log_size(self.write_buffer, self.flushing_unit, page_size);
        Self::check_log_size(
            "FAST log size",
            self.log_size,
            min,
            "this write buffer and flushing unit",
        )
    }

    /// Refuses a log of `log_size` bytes smaller than `min`, naming the option `key` and
    /// what the minimum depends on (`of`); FAST's, the LCR-tree's and RFTL's check.
    pub fn check_log_size(key: &str, log_size: u64, min: u64, of: &str) -> Result<()> {
        if log_size < min {
            return Err(Error::invalid(
                key,
                format!(
                    "{log_size} bytes is too small for {of}; give at least {min} bytes ({})",
                    crate::units::format_size(min)
                ),
            ));
        }
        Ok(())
    }

    /// Pages of the log region on a device of `page_size`-byte pages.
    pub fn log_pages(&self, page_size: usize) -> u64 {
        self.log_size / page_size as u64
    }
}

/// FAST's own counters, reported as `store.fast.*` beside the shared ones
/// (`store.buffered.*`, see [`crate::store::buffered::BufferedStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FastStats {
    /// Deleted nodes dropped from the buffer by flushes (nothing written).
    pub flushed_deleted_nodes: u64,
    /// In-use pages of flushed units that had no buffered change (so were not written).
    pub unit_pages_not_buffered: u64,
}

/// The FAST store: the buffered-store skeleton with the FAST policy.
pub type FastStore = BufferedStore<FastPolicy>;

/// FAST's buffer, flushing-unit choice and log records. See the module documentation.
pub struct FastPolicy {
    params: FastParams,
    buf: WriteBuffer,
    /// Operations ended so far (FAST*'s clock).
    op: u64,
    rng: ChaCha8Rng,
    stats: FastStats,
    /// Pages of buffered nodes with their changes replayed (CPU only: a read still reads
    /// the node's page as before; see [`node_cache`](super::buffered::node_cache)).
    nodes: LazyNodeCache,
}

impl FastPolicy {
    /// The policy with options `params` (validated against the node page size by the
    /// store configuration).
    pub fn new(params: FastParams) -> Self {
        FastPolicy {
            params,
            buf: WriteBuffer::with_units(params.flushing_unit),
            op: 0,
            rng: ChaCha8Rng::seed_from_u64(RANDOM_POLICY_SEED),
            stats: FastStats::default(),
            nodes: LazyNodeCache::default(),
        }
    }

    /// The options.
    pub fn params(&self) -> &FastParams {
        &self.params
    }

    /// The current content of node `id`: its page with the buffered changes replayed.
    /// A buffered node's page comes from the cache of replayed nodes when it holds it
    /// (after the read of the node's page that replaying its changes issues).
    fn node_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        let (page, assembled) = self.replayed_page(core, id, level)?;
        if assembled {
            self.nodes.of(core.layout).put(id, Arc::clone(&page));
        }
        Ok(page)
    }

    /// Node `id`'s current content as [`Self::node_page`] finds it, without keeping a page
    /// it assembles (`true` with the page then): a flush writes and forgets it.
    fn replayed_page(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
    ) -> Result<(Arc<[u8]>, bool)> {
        core.header.check_page(id)?;
        let layout = core.layout;
        let Some(n) = self.buf.get(id) else {
            let page = core
                .cache
                .read_checked(id, level, |b| layout.verify(b, id))?;
            return Ok((page, false));
        };
        if n.status == NodeStatus::Deleted {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "the node was deleted",
            ));
        }
        if let Some(page) = self.nodes.of(layout).get(id) {
            if n.image.is_none() {
                // The read its assembly issues; its bytes are not used.
                core.cache
                    .read_unused(id, level, |b| layout.verify(b, id))?;
            }
            return Ok((page, false));
        }
        // Built in its final allocation: one copy of the base page, none afterwards.
        let (mut page, count): (Arc<[u8]>, usize) = match &n.image {
            Some(entries) => {
                let mut page: Arc<[u8]> = std::iter::repeat_n(0u8, layout.page_size()).collect();
                let buf = Arc::get_mut(&mut page).expect("a new page is not shared");
                page_from_entries(&layout, id, n.level, entries, buf)?;
                (page, entries.len() / layout.entry_size())
            }
            None => {
                let base = core
                    .cache
                    .read_checked_ref(id, level, |b| layout.verify(b, id))?;
                let page: Arc<[u8]> = Arc::from(base);
                let count = layout.entry_count(&page);
                (page, count)
            }
        };
        let buf = Arc::get_mut(&mut page).expect("a new page is not shared");
        buffer::apply_raw(&layout, id, buf, n.level, count, &n.changes)?;
        Ok((page, true))
    }

    /// Rewrites the log as a snapshot of the current state.
    fn compact_log(&self, core: &mut Core) -> Result<()> {
        core.compact_log(None, self.buf.snapshot())
    }
}

impl BufferPolicy for FastPolicy {
    const KIND: &'static str = "fast";
    const FORMAT: RecordFormat = RecordFormat::Fixed;
    /// FAST's records are unchanged since log format 1.
    const OLDEST_LOG_FORMAT: u32 = 1;

    logged_write_buffer_hooks!();

    fn drop_caches(&mut self, _core: &mut Core) {
        self.nodes.clear();
    }

    /// Rebuilds metadata, allocation and buffer from recovered log records.
    fn recover(
        &mut self,
        core: &mut Core,
        operations: &[Vec<Record>],
        rep: &mut RecoveryReport,
    ) -> Result<()> {
        for op in operations {
            self.op += 1;
            for r in op {
                rep.records_replayed += 1;
                if let Some(other) = self.buf.replay(&mut core.header, r.clone(), self.op, rep) {
                    return Err(crate::Error::corrupted(
                        "FAST log",
                        format!("{other:?} is not a FAST record"),
                    ));
                }
            }
        }
        rep.buffered_nodes = self.buf.len() as u64;
        Ok(())
    }

    fn node_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        FastPolicy::node_page(self, core, id, level)
    }

    fn delete(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<()> {
        self.nodes.forget(id);
        self.buf.logged_delete(core, id, level, self.op)
    }

    fn end_operation(&mut self, core: &mut Core) -> Result<()> {
        self.op += 1;
        if self.buf.bytes() as u64 > self.params.write_buffer {
            self.flush_for_space(core)?;
        }
        if core.log.needs_compaction() {
            self.compact_log(core)?;
        }
        Ok(())
    }

    fn write_back(&mut self, core: &mut Core) -> Result<()> {
        self.flush_all(core)
    }

    fn checkpoint(&mut self, core: &mut Core) -> Result<()> {
        self.flush_all(core)?;
        self.compact_log(core)
    }

    fn settings(&self) -> BufferSettings {
        BufferSettings {
            write_buffer: self.params.write_buffer,
            flushing_unit: u64::from(self.params.flushing_unit),
            flush_policy: self.params.flush_policy.to_string(),
            ..Default::default()
        }
    }

    fn report(&self, _core: &Core, report: &mut StoreReport) {
        report.fast = Some(self.stats);
    }
}
