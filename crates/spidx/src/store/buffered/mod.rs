//! The buffered-store skeleton every flash-aware store is a policy over (architecture
//! §6), in the spirit of libspatialindex's `Buffer` decorator: the skeleton does what
//! all of them share and a [`BufferPolicy`] writes only what its paper defines: what a
//! buffered node holds, when to flush and which unit, and which records rebuild it.
//!
//! The skeleton ([`BufferedStore`] over a [`Core`]) owns:
//! * **the seam**: it implements [`NodeStore`] and [`StoreControl`] for every policy, counts
//!   the node-level [`StoreStats`], checks page ids and encodes the trees' entries (one
//!   function, [`Core::encode_entry`]) and changes ([`RawChange`], the one change type:
//!   [`Change`] over encoded entries) before a policy sees them;
//! * **the write buffer** ([`buffer::NodeBuffer`]): buffered nodes in page order with their
//!   bytes, peak and statuses; the node type inside is the policy's;
//! * **allocation and metadata**: one [`StoreHeader`] (allocation through
//!   [`StoreHeader::allocate`], [`TreeMeta`]), saved as `store.json` at every checkpoint
//!   exactly as the direct store saves it;
//! * **the log**: the shared [`Log`] on the device its placement gives it ([`placement`]:
//!   a partition carved from the end of the node device by default, a second device, or
//!   an uncounted file), written in the one record vocabulary and codec ([`record`]; each
//!   policy names its [`RecordFormat`]), committed at every operation's end, compacted
//!   into a snapshot ([`Core::compact_log`]), and decoded for the policy at recovery (with
//!   the wall time and counts of recovery);
//! * **flushing-unit writes** ([`Core::write_unit`]): the images that protect a unit's
//!   in-place writes are logged ([`Core::log_image`]), the log is made durable as the
//!   policy's [`UnitDurability`] says, and the unit's pages reach the device with one request
//!   per run of consecutive pages;
//! * **statistics** ([`BufferedStats`]): one vocabulary of flush, image, buffer and log
//!   counters, gauges and settings, reported as `store.buffered.*` by every buffered store;
//!   a policy reports only its extras (`store.<kind>.*`);
//! * **checkpoints**: the policy empties its buffer and compacts the log, then the skeleton
//!   persists the device and saves the header.
//!
//! Policies: [`crate::store::fast`] (FAST, Sarwat et al. 2013), [`crate::store::efind`]
//! (eFIND, Carniel et al. 2017/2019), [`crate::store::lcr`] (the LCR-tree, Lv et al. 2011)
//! and [`crate::store::rftl`] (RFTL, Wu, Chang, Kuo 2003).

pub(crate) mod bits;
pub(crate) mod buffer;
pub(crate) mod logged;
pub(crate) mod node_cache;
pub(crate) mod options;
pub(crate) mod page;
pub(crate) mod placement;
pub(crate) mod record;
mod seam;
pub(crate) mod sizing;
pub(crate) mod snapshot;
pub(crate) mod stats;
pub(crate) mod write_buffer;

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::header::StoreHeader;
use super::log::{Log, LogSync};
use super::{Change, NodeChange, StoreStats, TreeMeta};
use crate::cache::PageCache;
use crate::node::{Entry, NodeLayout, PageId};
use crate::{Error, Result};
pub(crate) use buffer::{BufferGauges, BufferedNode, NodeBuffer, NodeStatus};
pub(crate) use logged::{Logged, LoggedBuffer, LoggedPolicy, Parts};
use placement::LogPlacement;
pub(crate) use record::{
    EncodeRecord, Encoded, NodeRecord, Reader, Record, RecordFormat, OWN_FIRST,
};
pub(crate) use seam::BufferedStore;
pub(crate) use stats::{BufferSettings, BufferedStats, RecoveryReport};

/// A change with its entry encoded as the node layout stores it in a page (what buffers
/// hold and logs record).
pub(crate) type RawChange = Change<Box<[u8]>>;

impl RawChange {
    /// Bytes this change occupies in a write buffer (position + entry).
    pub(crate) fn buffer_bytes(&self) -> usize {
        match self {
            Change::Set { entry, .. } | Change::Push(entry) => 8 + entry.len(),
            Change::Remove { .. } => 8,
        }
    }
}

/// What every buffered store holds: the page cache over the node partition, the log, the
/// header, the node-level counters. Policies reach them through the `&mut Core` every hook
/// receives.
pub struct Core {
    /// Node pages (the device's node partition) through a page cache.
    pub cache: PageCache,
    /// The write-ahead log (on the device its placement gives it).
    pub log: Log,
    /// Where the log is.
    pub placement: LogPlacement,
    /// The node page layout.
    pub layout: NodeLayout,
    /// Allocation and tree metadata.
    pub header: StoreHeader,
    /// Node-level counters.
    pub stats: StoreStats,
    /// What the last recovery (opening a store that holds a log) did.
    pub recovery: Option<RecoveryReport>,
    /// How the policy's log records are encoded.
    pub format: RecordFormat,
    /// The shared flush and image counters (the rest of [`BufferedStats`] is filled in
    /// when reporting).
    pub counts: BufferedStats,
    /// Images logged for the unit being built (see [`Core::write_unit`]).
    unit_images: u64,
    header_path: Option<PathBuf>,
    scratch: Vec<u8>,
    /// A written unit's buffers, for the next unit ([`Core::unit`], [`Core::recycle_unit`]).
    spare_unit: Option<Unit>,
}

impl Core {
    /// An empty unit with room for `n` pages, in the buffers of the last unit recycled
    /// ([`Core::recycle_unit`]): a flush's pages are written through one buffer reused
    /// flush after flush instead of memory newly taken from the system each time (CPU
    /// only).
    pub fn unit(&mut self, n: usize) -> Unit {
        let ps = self.layout.page_size();
        match self.spare_unit.take() {
            Some(mut u) => {
                u.ids.reserve(n);
                u.levels.reserve(n);
                u.data.reserve(n * ps);
                u
            }
            None => Unit::with_capacity(n, ps),
        }
    }

    /// Keeps `unit`'s buffers (emptied) for the next [`Core::unit`].
    pub(crate) fn recycle_unit(&mut self, mut unit: Unit) {
        unit.ids.clear();
        unit.levels.clear();
        unit.data.clear();
        self.spare_unit = Some(unit);
    }

    /// Encodes one entry as the layout stores it in a page: the one place where buffered
    /// stores turn a tree entry into bytes.
    pub(crate) fn encode_entry<const D: usize>(&mut self, e: &Entry<D>) -> Result<Box<[u8]>> {
        self.layout.put_entry(&mut self.scratch, 0, e)?;
        let o = self.layout.entry_offset(0);
        Ok(self.scratch[o..o + self.layout.entry_size()].into())
    }

    /// Encodes a node's entries, concatenated; they must fit a page.
    pub(crate) fn encode_entries<const D: usize>(
        &mut self,
        entries: &[Entry<D>],
    ) -> Result<Vec<u8>> {
        if entries.len() > self.layout.fits() {
            return Err(Error::invalid(
                "node",
                format!(
                    "{} entries do not fit a page ({} at most)",
                    entries.len(),
                    self.layout.fits()
                ),
            ));
        }
        let mut out = Vec::with_capacity(entries.len() * self.layout.entry_size());
        for e in entries {
            out.extend_from_slice(&self.encode_entry(e)?);
        }
        Ok(out)
    }

    /// Encodes entry-level changes.
    pub(crate) fn encode_changes<const D: usize>(
        &mut self,
        changes: &[NodeChange<D>],
    ) -> Result<Vec<RawChange>> {
        changes
            .iter()
            .map(|c| c.try_map(|e| self.encode_entry(e)))
            .collect()
    }

    /// Appends `rec` to the current log operation, in the policy's format.
    pub fn append(&mut self, rec: impl EncodeRecord) -> Result<()> {
        let format = self.format;
        self.log.append_with(|b| rec.encode_record(format, b))
    }

    /// Replaces the log by a snapshot: allocation and metadata (and `clock`, for formats
    /// with timestamps), then `nodes`, the records that rebuild the buffer.
    pub(crate) fn compact_log<R: EncodeRecord>(
        &mut self,
        clock: Option<u64>,
        nodes: impl IntoIterator<Item = R>,
    ) -> Result<()> {
        // Each record is encoded straight into the log's tail: the snapshot first, then
        // the nodes.
        let snapshot = Record::Snapshot {
            meta: self.header.meta,
            next_page: self.header.next_page,
            free: self.header.free.clone(),
            clock,
        };
        let format = self.format;
        let records = std::iter::once(None).chain(nodes.into_iter().map(Some));
        self.log.compact_with(records, |r, out| match r {
            None => snapshot.encode_into(format, out),
            Some(r) => r.encode_record(format, out),
        })
    }

    /// Logs the full content of node `id` (its `page`) before the page is written in
    /// place, so a torn write loses nothing; counted as an image.
    pub fn log_image(&mut self, id: PageId, level: u32, page: &[u8]) -> Result<()> {
        let count = self.layout.entry_count(page);
        let from = self.layout.entry_offset(0);
        let entries = &page[from..self.layout.entry_offset(count)];
        self.counts.image_records += 1;
        self.counts.image_bytes += entries.len() as u64;
        self.unit_images += 1;
        self.append(NodeRecord::Image { id, level, entries })
    }

    /// Writes a flushing unit: makes the log durable as `durability` says, writes the
    /// unit's pages with one request per run of consecutive pages, and counts the flush.
    pub(crate) fn write_unit(&mut self, unit: &Unit, durability: UnitDurability) -> Result<()> {
        let images = std::mem::take(&mut self.unit_images);
        let sync = self.log.config().sync != LogSync::None;
        match &durability {
            UnitDurability::WrittenRecord { .. } => {
                // Write-ahead: the pages below hold states that committed records describe
                // (a rewrite kept as an image in the buffer logs no new image), so every
                // committed record must be durable before they are overwritten; under
                // group commit some may not be synced yet.
                if images > 0 || (sync && self.log.unsynced_commits() > 0) {
                    self.log.commit()?;
                    if sync {
                        self.log.sync()?;
                    } else {
                        self.log.write_out()?;
                    }
                }
            }
            UnitDurability::Images => self.make_log_durable()?,
        }
        let requests = self.write_runs(&unit.ids, &unit.data, &unit.levels)?;
        if let UnitDurability::WrittenRecord { members } = durability {
            if sync && !unit.ids.is_empty() {
                self.cache.device_mut().sync()?;
            }
            self.append(Record::Written(members))?;
            self.log.commit()?;
        }
        self.counts.flushes += 1;
        self.counts.flushed_nodes += unit.ids.len() as u64;
        self.counts.flush_write_requests += requests;
        Ok(())
    }

    /// Commits the open operation and makes every committed record durable: synced (if
    /// commits are unsynced), or written out under log sync `none` (the device keeps the
    /// order of writes). Policies call it before pages reach the device that a crash must
    /// not find half-described (eFIND's images; RFTL's reuse of freed unit pages).
    pub(crate) fn make_log_durable(&mut self) -> Result<()> {
        self.log.commit()?;
        if self.log.config().sync == LogSync::None {
            self.log.write_out()
        } else if self.log.unsynced_commits() > 0 {
            self.log.sync()
        } else {
            Ok(())
        }
    }

    /// The policy's own state the header holds ([`StoreHeader::policy_state`]; none: `T`'s
    /// default), decoded as policy `name` saved it ([`BufferPolicy::saved_state`]).
    pub(crate) fn policy_state<T: serde::de::DeserializeOwned + Default>(
        &self,
        name: &str,
    ) -> Result<T> {
        match &self.header.policy_state {
            None => Ok(T::default()),
            Some(v) => T::deserialize(v).map_err(|e| {
                Error::corrupted(format!("{name} state in the store header"), e.to_string())
            }),
        }
    }

    /// Allocates a node page through the header.
    pub fn allocate(&mut self) -> Result<PageId> {
        let cap = self.cache.device().capacity_pages();
        self.header.allocate(cap)
    }

    /// Writes the pages `ids` (ascending), whose images are the consecutive pages of `data`
    /// with levels `levels`, with one device request per run of consecutive page ids.
    /// Counts the page writes; returns the number of requests.
    fn write_runs(&mut self, ids: &[PageId], data: &[u8], levels: &[u32]) -> Result<u64> {
        let ps = self.layout.page_size();
        let mut requests = 0;
        let mut start = 0;
        while start < ids.len() {
            let mut end = start + 1;
            while end < ids.len() && ids[end] == ids[end - 1] + 1 {
                end += 1;
            }
            self.cache
                .write_run(ids[start], &data[start * ps..end * ps], &levels[start..end])?;
            requests += 1;
            start = end;
        }
        self.stats.page_writes += ids.len() as u64;
        Ok(requests)
    }

    /// Persists the node device and, when the log has a device of its own, the log's (a
    /// log partition of the node device is persisted with it).
    pub(crate) fn persist_devices(&mut self) -> Result<()> {
        self.cache.device_mut().persist()?;
        if !self.placement.is_same() {
            self.log.device_mut().persist()?;
        }
        Ok(())
    }

    /// Saves the header (`store.json`) with the log's generation, if the store has a
    /// directory.
    pub fn save_header(&mut self) -> Result<()> {
        let Some(path) = &self.header_path else {
            return Ok(());
        };
        self.header.log_generation = Some(self.log.generation());
        self.header.log_operations = Some(self.log.generation_commits());
        self.header.save(path)
    }
}

/// The pages of one flushing unit, in ascending page order, as a policy hands them to
/// [`Core::write_unit`].
#[derive(Debug, Default)]
pub struct Unit {
    ids: Vec<PageId>,
    levels: Vec<u32>,
    data: Vec<u8>,
}

impl Unit {
    /// An empty unit with room for `n` pages of `page_size` bytes.
    pub fn with_capacity(n: usize, page_size: usize) -> Self {
        Unit {
            ids: Vec::with_capacity(n),
            levels: Vec::with_capacity(n),
            data: Vec::with_capacity(n * page_size),
        }
    }

    /// Adds page `id` (above the last one added) at `level` with content `page`.
    pub fn push(&mut self, id: PageId, level: u32, page: &[u8]) {
        debug_assert!(self.ids.last().is_none_or(|l| *l < id));
        self.ids.push(id);
        self.levels.push(level);
        self.data.extend_from_slice(page);
    }

    /// The pages to write.
    pub fn ids(&self) -> &[PageId] {
        &self.ids
    }
}

/// How a policy makes a flushed unit recoverable (its paper's log protocol), in
/// [`Core::write_unit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UnitDurability {
    /// The unit's nodes are recorded as written once their pages are durable (FAST): if
    /// the unit logged images, or commits are not synced yet (group commit), the log is
    /// committed and synced (written out under log sync `none` when it logged images)
    /// before the in-place writes; the device is synced after them (except under
    /// `none`) and a [`Record::Written`] naming `members` is committed, so recovery drops
    /// their earlier records.
    WrittenRecord {
        /// Every buffered node the flush takes out of the buffer (deleted ones included).
        members: Vec<PageId>,
    },
    /// Every committed record, the unit's images included, is durable before the in-place
    /// writes (synced, or written out under `none`); recovery rebuilds the written nodes
    /// from their images (eFIND).
    Images,
}

/// What a flash-aware store writes itself: its buffer (add), the choice of what to flush
/// and when (evict, choose), its log records and their replay. The skeleton calls the hooks
/// with the [`Core`]; entries and changes arrive encoded, page ids checked and allocated.
///
/// The trait is object safe: the skeleton holds its policy as a `Box<dyn BufferPolicy>` in
/// [`AnyStore`](crate::store::AnyStore), so a new policy needs no new store type. Policies
/// whose buffer is the logged write buffer implement [`LoggedPolicy`] instead and get these
/// hooks from [`Logged`], which holds the buffer beside them.
pub trait BufferPolicy: Send {
    /// The store's kind as reported (`fast`, `efind`, ...): `store.kind`, and the key of
    /// the policy's own report (`store.<kind>.*`).
    fn kind(&self) -> &'static str;

    /// How the policy's log records are encoded (see [`record`]).
    fn format(&self) -> RecordFormat;

    /// The oldest log format (see [`crate::store::log::LOG_FORMAT`]) whose records this
    /// policy reads.
    fn oldest_log_format(&self) -> u32;

    /// Called once a new store is assembled (before any operation).
    fn created(&mut self, _core: &mut Core) -> Result<()> {
        Ok(())
    }

    /// Rebuilds the buffer from the records of a recovered log, by committed operation
    /// (the header holds what the last checkpoint saved); fills in the policy's part of
    /// `report`.
    fn recover(
        &mut self,
        core: &mut Core,
        operations: &[Vec<Record>],
        report: &mut RecoveryReport,
    ) -> Result<()>;

    /// The node's current content: its page with the buffered changes applied.
    fn node_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>>;

    /// A node created on the newly allocated page `id` with `entries` (encoded).
    fn create(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()>;

    /// Entry-level changes to node `id`.
    fn modify(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        changes: Vec<RawChange>,
    ) -> Result<()>;

    /// Node `id`'s entries replaced by `entries` (encoded).
    fn rewrite(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()>;

    /// Node `id` deleted; the skeleton frees its page afterwards.
    fn delete(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<()>;

    /// Logs new tree metadata (the skeleton records it in the header).
    fn log_meta(&mut self, core: &mut Core, meta: TreeMeta) -> Result<()>;

    /// The operation's records were committed: flush what the buffer cannot hold.
    fn end_operation(&mut self, core: &mut Core) -> Result<()>;

    /// Writes every buffered node to its page (the end of a workload).
    fn write_back(&mut self, core: &mut Core) -> Result<()>;

    /// A checkpoint: empties the buffer and compacts the log (the skeleton then persists
    /// the device and saves the header).
    fn checkpoint(&mut self, core: &mut Core) -> Result<()>;

    /// Empties the policy's read caches (the skeleton empties the page cache's).
    fn drop_caches(&mut self, _core: &mut Core) {}

    /// The write buffer now.
    fn buffer_gauges(&self) -> BufferGauges;

    /// The options behind the statistics (the skeleton fills in the log's).
    fn settings(&self) -> BufferSettings;

    /// The policy's own counters, gauges and settings, reported as `store.<kind>` beside
    /// the skeleton's [`BufferedStats`] (`store.buffered`); opaque to the skeleton.
    fn report(&self, core: &Core) -> PolicyReport;

    /// The pages the policy allocated for itself and holds now (not tree nodes), with
    /// what they are: see [`crate::store::PageAccounting`]. None by default.
    fn own_pages(&self) -> Vec<(PageId, &'static str)> {
        Vec::new()
    }

    /// The policy's own state to save with the header ([`StoreHeader::policy_state`]),
    /// opaque to the skeleton and every other policy; the policy reads it back from the
    /// header when it recovers. `None`: it keeps none.
    fn saved_state(&self) -> Option<serde_json::Value> {
        None
    }
}

/// A policy's own report: its counters, gauges and settings as a JSON object (see
/// [`BufferPolicy::report`]), or nothing.
pub(crate) type PolicyReport = Option<serde_json::Value>;

/// A policy's statistics as its report (the one serialisation every policy uses).
pub(crate) fn policy_report<T: Serialize>(stats: &T) -> PolicyReport {
    serde_json::to_value(stats).ok()
}

#[cfg(test)]
#[path = "skeleton_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "toy_policy_tests.rs"]
mod toy_policy_tests;
