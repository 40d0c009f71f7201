//! FAST (Sarwat, Mokbel, Zhou, Nath: "Generic and efficient framework for search trees on
//! flash memory storage systems", GeoInformatica 17(3), 2013): a policy over the
//! buffered-store skeleton ([`crate::store::buffered`]) that turns any disk-based tree into
//! a flash-aware one by changing only how node changes reach the device (architecture
//! §6). The trees above are unchanged.
//!
//! * **Write buffer** (the skeleton's logged write buffer,
//!   [`crate::store::buffered::write_buffer`], watched by FAST's unit standings
//!   ([`standings`])): every node change is kept in memory per node (status
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

pub(crate) mod flush;
pub(crate) mod standings;

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use self::standings::UnitWatch;
use super::buffered::options::{logged_options, PolicyOptions};
use super::buffered::page::{apply_raw, page_from_entries};
use super::buffered::placement::LogPlacement;
use super::buffered::sizing;
use super::buffered::{
    policy_report, BufferPolicy, BufferSettings, BufferedStore, Core, Logged, LoggedBuffer,
    LoggedPolicy, Parts, PolicyReport,
};
use super::log::LogSync;
use crate::node::PageId;
use crate::{Error, Result};

pub use flush::FlushPolicy;

/// Seed of the `random` flushing policy's generator (deterministic runs).
pub const RANDOM_POLICY_SEED: u64 = 0x5EED_FA57;

logged_options! {
    /// FAST's options: what users write (`kind = "fast"`, `--store-opt KEY=VALUE`), with one
    /// default per option, and what the policy is built from.
    pub struct FastOptions {
        /// Nodes per flushing unit.
        pub flushing_unit: u32,
        /// `flush-all`, `random`, `fast`, `fast-star` or `fast-star-festival`.
        pub flush_policy: FlushPolicy,
    }
}

impl FastOptions {
    /// The required options, every other at its default.
    pub fn new(write_buffer: u64, flushing_unit: u32, flush_policy: FlushPolicy) -> Self {
        FastOptions {
            write_buffer,
            flushing_unit,
            flush_policy,
            log_size: None,
            log_sync: LogSync::default(),
            log_device: LogPlacement::default(),
        }
    }

    /// Bytes of the log: as given, or 16 times the write buffer, at least 1MB.
    pub fn log_size(&self) -> u64 {
        (self.log_size).unwrap_or_else(|| sizing::default_log_size(self.write_buffer, 1 << 20))
    }
}

impl PolicyOptions for FastOptions {
    fn name(&self) -> &'static str {
        "FAST"
    }

    fn validate(&self, page_size: usize) -> Result<()> {
        sizing::check_write_buffer("FAST", self.write_buffer, 1)?;
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
        let sizes = (self.write_buffer, self.flushing_unit);
        sizing::check_log("FAST", sizes, self.log_size(), page_size)
    }

    fn log_pages(&self, page_size: usize) -> Result<u64> {
        Ok(self.log_size() / page_size as u64)
    }

    /// FESTIval's FAST* is named: it is the seeds' setting, not the FAST paper's.
    fn label(&self) -> String {
        match self.flush_policy {
            FlushPolicy::FastStarFestival => "FAST festival".into(),
            _ => "FAST".into(),
        }
    }

    fn policy(&self, _page_size: usize) -> Result<Box<dyn BufferPolicy>> {
        Ok(Box::new(FastPolicy::new(self.clone())))
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
pub type FastStore = BufferedStore<Logged<FastPolicy>>;

/// FAST's write buffer (its clock is FAST*'s), watched by the units' standings.
type Buffer = LoggedBuffer<UnitWatch>;

/// FAST's flushing-unit choice and counters. See the module documentation.
pub struct FastPolicy {
    params: FastOptions,
    rng: ChaCha8Rng,
    stats: FastStats,
}

impl FastPolicy {
    /// The policy with options `params` (validated against the node page size by the
    /// store configuration) over its write buffer, as the skeleton holds it.
    pub fn new(params: FastOptions) -> Logged<Self> {
        let watch = UnitWatch::new(params.flushing_unit);
        let policy = FastPolicy {
            params,
            rng: ChaCha8Rng::seed_from_u64(RANDOM_POLICY_SEED),
            stats: FastStats::default(),
        };
        Logged::new(policy.params.write_buffer, watch, policy)
    }
}

/// Node `id`'s current content as [`LoggedPolicy::node_page`] finds it, without keeping a
/// page it assembles (`true` with the page then): a flush writes and forgets it.
fn replayed_page(
    lb: &mut Buffer,
    core: &mut Core,
    id: PageId,
    level: u32,
) -> Result<(Arc<[u8]>, bool)> {
    core.header.check_page(id)?;
    let layout = core.layout;
    let Some(n) = lb.buf.live(id)? else {
        let page = core
            .cache
            .read_checked(id, level, |b| layout.verify(b, id))?;
        return Ok((page, false));
    };
    if let Some(page) = lb.nodes.of(layout).get(id) {
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
    apply_raw(&layout, id, buf, n.level, count, &n.changes)?;
    Ok((page, true))
}

impl LoggedPolicy for FastPolicy {
    const KIND: &'static str = "fast";
    const NAME: &'static str = "FAST";
    /// FAST's records are unchanged since log format 1.
    const OLDEST_LOG_FORMAT: u32 = 1;
    type Watch = UnitWatch;

    /// The current content of node `id`: its page with the buffered changes replayed.
    /// A buffered node's page comes from the cache of replayed nodes when it holds it
    /// (after the read of the node's page that replaying its changes issues).
    fn node_page(&mut self, cx: Parts<'_, UnitWatch>, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        let Parts { core, lb } = cx;
        let (page, assembled) = replayed_page(lb, core, id, level)?;
        if assembled {
            lb.nodes.of(core.layout).put(id, Arc::clone(&page));
        }
        Ok(page)
    }

    fn flush_all(&mut self, cx: Parts<'_, UnitWatch>) -> Result<()> {
        self.flush_every_unit(cx.lb, cx.core)
    }

    fn flush_for_space(&mut self, cx: Parts<'_, UnitWatch>) -> Result<()> {
        self.flush_chosen_units(cx.lb, cx.core)
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings {
            flushing_unit: u64::from(self.params.flushing_unit),
            flush_policy: self.params.flush_policy.to_string(),
            ..Default::default()
        }
    }

    fn own_report(&self, _core: &Core) -> PolicyReport {
        policy_report(&self.stats)
    }
}
