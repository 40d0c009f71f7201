//! The buffered-store skeleton every flash-aware store is a policy over (architecture
//! §6), in the spirit of libspatialindex's `Buffer` decorator: the skeleton does what
//! all of them share and a [`BufferPolicy`] writes only its own buffer, eviction and
//! flushing-unit choice.
//!
//! The skeleton ([`BufferedStore`] over a [`Core`]) owns:
//! * **the seam**: it implements [`NodeStore`] and [`StoreControl`] for every policy, counts
//!   the node-level [`StoreStats`], checks page ids and encodes the trees' entries (one
//!   function, [`Core::encode_entry`]) and changes ([`RawChange`], the one change type)
//!   before a policy sees them;
//! * **allocation and metadata**: one [`StoreHeader`] (allocation through
//!   [`StoreHeader::allocate`], [`TreeMeta`]), saved as `store.json` at every checkpoint
//!   exactly as the direct store saves it;
//! * **the log**: the shared [`Log`] on the device its placement gives it ([`placement`]:
//!   a partition carved from the end of the node device by default, a second device, or
//!   an uncounted file), its commit at every operation's end, and the wall time and
//!   counts of recovery;
//! * **flushing-unit writes**: a unit's pages reach the device with one request per run of
//!   consecutive pages ([`Core::write_runs`]);
//! * **checkpoints**: the policy empties its buffer and compacts the log, then the skeleton
//!   persists the device and saves the header.
//!
//! Policies: [`crate::store::fast`] (FAST, Sarwat et al. 2013) and [`crate::store::efind`]
//! (eFIND, Carniel et al. 2017/2019). Each keeps its own log record vocabulary, encoded by
//! its own record module; both frame, checksum and commit them through the one [`Log`].

pub mod placement;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::header::{check_page_size, StoreHeader};
use super::log::{Log, LogConfig, LogSync, Recovered, ScanEnd};
use super::{
    Change, NodeChange, NodePage, NodeStore, StoreControl, StoreReport, StoreStats, TreeMeta,
};
use crate::cache::{CacheConfig, PageCache};
use crate::device::Device;
use crate::node::{Entry, NodeLayout, PageId};
use crate::{Error, Result};
use placement::{LogDevices, LogPlacement};

/// A change with its entry encoded as the node layout stores it in a page (what buffers
/// hold and logs record).
pub type RawChange = Change<Box<[u8]>>;

impl RawChange {
    /// Bytes this change occupies in a write buffer (position + entry).
    pub fn buffer_bytes(&self) -> usize {
        match self {
            Change::Set { entry, .. } | Change::Push(entry) => 8 + entry.len(),
            Change::Remove { .. } => 8,
        }
    }
}

/// What the last recovery (opening a store that holds a log) did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Wall time of the recovery (log scan, replay, new log generation) in seconds.
    pub seconds: f64,
    /// Committed operations found in the log.
    pub operations: u64,
    /// Records replayed.
    pub records_replayed: u64,
    /// Records describing nodes that a later flush made durable (not kept).
    pub records_skipped: u64,
    /// Records of an unfinished operation, dropped.
    pub records_dropped: u64,
    /// Bytes of an unfinished operation, dropped.
    pub bytes_dropped: u64,
    /// Why the log scan stopped (`end of log`, or what was invalid where).
    pub log_end: String,
    /// Nodes in the rebuilt buffer.
    pub buffered_nodes: u64,
}

impl RecoveryReport {
    fn of(rec: &Recovered) -> Self {
        RecoveryReport {
            operations: rec.operations.len() as u64,
            records_dropped: rec.dropped_records,
            bytes_dropped: rec.dropped_bytes,
            log_end: match &rec.end {
                ScanEnd::End => "end of log".into(),
                ScanEnd::Invalid { offset, reason } => {
                    format!("invalid record at log byte {offset}: {reason}")
                }
            },
            ..Default::default()
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
    /// What the last recovery did (stores opened from a log).
    pub recovery: Option<RecoveryReport>,
    header_path: Option<PathBuf>,
    scratch: Vec<u8>,
}

impl Core {
    /// Encodes one entry as the layout stores it in a page: the one place where buffered
    /// stores turn a tree entry into bytes.
    pub fn encode_entry<const D: usize>(&mut self, e: &Entry<D>) -> Result<Box<[u8]>> {
        self.layout.put_entry(&mut self.scratch, 0, e)?;
        let o = self.layout.entry_offset(0);
        Ok(self.scratch[o..o + self.layout.entry_size()].into())
    }

    /// Encodes a node's entries, concatenated; they must fit a page.
    pub fn encode_entries<const D: usize>(&mut self, entries: &[Entry<D>]) -> Result<Vec<u8>> {
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
    pub fn encode_changes<const D: usize>(
        &mut self,
        changes: &[NodeChange<D>],
    ) -> Result<Vec<RawChange>> {
        changes
            .iter()
            .map(|c| c.try_map(|e| self.encode_entry(e)))
            .collect()
    }

    /// Allocates a node page through the header.
    pub fn allocate(&mut self) -> Result<PageId> {
        let cap = self.cache.device().capacity_pages();
        self.header.allocate(cap)
    }

    /// Writes the pages `ids` (ascending), whose images are the consecutive pages of `data`
    /// with levels `levels`, with one device request per run of consecutive page ids.
    /// Counts the page writes; returns the number of requests.
    pub fn write_runs(&mut self, ids: &[PageId], data: &[u8], levels: &[u32]) -> Result<u64> {
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
    pub fn persist_devices(&mut self) -> Result<()> {
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
        self.header.save(path)
    }
}

/// What a flash-aware store writes itself: its buffer (add), the choice of what to flush
/// and when (evict, choose), its log records and their replay. The skeleton calls the hooks
/// with the [`Core`]; entries and changes arrive encoded, page ids checked and allocated.
pub trait BufferPolicy {
    /// The store's kind as reported (`fast`, `efind`).
    const KIND: &'static str;

    /// Called once a new store is assembled (before any operation).
    fn created(&mut self, _core: &mut Core) -> Result<()> {
        Ok(())
    }

    /// Rebuilds the buffer from the records of a recovered log (the header holds what the
    /// last checkpoint saved); fills in the policy's part of `report`.
    fn recover(
        &mut self,
        core: &mut Core,
        recovered: &Recovered,
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

    /// Fills in the policy's part of the store's report.
    fn report(&self, core: &Core, report: &mut StoreReport);
}

/// A buffered store: the skeleton over policy `P`. See the module documentation.
pub struct BufferedStore<P> {
    core: Core,
    policy: P,
}

impl<P: BufferPolicy> BufferedStore<P> {
    /// A new, empty store: nodes on `devs.nodes` through a page cache `buffer`, the log on
    /// `devs.log` with `log`, header saved at `header_path` (none: in memory).
    pub fn create(
        devs: LogDevices,
        buffer: &CacheConfig,
        layout: NodeLayout,
        log: LogConfig,
        policy: P,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        let cache = PageCache::new(devs.nodes, buffer)?;
        check_page_size(cache.page_size(), &layout)?;
        let log = Log::create(devs.log, log)?;
        let header = StoreHeader::new(P::KIND);
        let parts = (cache, log, devs.placement);
        let mut s = Self::assemble(parts, layout, header, policy, header_path);
        s.policy.created(&mut s.core)?;
        Ok(s)
    }

    /// Reopens a store: the header its last checkpoint saved (if any), then the log
    /// replayed by the policy (recovering what a crash left buffered).
    pub fn open(
        devs: LogDevices,
        buffer: &CacheConfig,
        layout: NodeLayout,
        log: LogConfig,
        policy: P,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        let start = Instant::now();
        let cache = PageCache::new(devs.nodes, buffer)?;
        check_page_size(cache.page_size(), &layout)?;
        let header = match header_path {
            Some(p) => StoreHeader::load_or_new(p, P::KIND)?,
            None => StoreHeader::new(P::KIND),
        };
        let (log, recovered) = Log::open(devs.log, log)?;
        let parts = (cache, log, devs.placement);
        let mut s = Self::assemble(parts, layout, header, policy, header_path);
        let mut report = RecoveryReport::of(&recovered);
        s.policy.recover(&mut s.core, &recovered, &mut report)?;
        report.seconds = start.elapsed().as_secs_f64();
        s.core.recovery = Some(report);
        Ok(s)
    }

    fn assemble(
        (cache, log, placement): (PageCache, Log, LogPlacement),
        layout: NodeLayout,
        header: StoreHeader,
        policy: P,
        header_path: Option<&Path>,
    ) -> Self {
        BufferedStore {
            core: Core {
                scratch: vec![0u8; layout.page_size()],
                cache,
                log,
                placement,
                layout,
                header,
                stats: StoreStats::default(),
                recovery: None,
                header_path: header_path.map(Path::to_path_buf),
            },
            policy,
        }
    }

    /// The shared state (cache, log, header, counters).
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// The policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The policy and the shared state, mutably (tests drive a policy's hooks directly).
    pub fn parts_mut(&mut self) -> (&mut P, &mut Core) {
        (&mut self.policy, &mut self.core)
    }

    /// The page cache (and through it the node partition of the device).
    pub fn cache(&self) -> &PageCache {
        &self.core.cache
    }
}

impl<P: BufferPolicy, const D: usize> NodeStore<D> for BufferedStore<P> {
    fn layout(&self) -> &NodeLayout {
        &self.core.layout
    }

    fn read(&mut self, id: PageId, level: u32) -> Result<NodePage> {
        self.core.stats.node_reads += 1;
        self.core.header.check_page(id)?;
        let page = self.policy.node_page(&mut self.core, id, level)?;
        Ok(NodePage::new(page, self.core.layout))
    }

    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId> {
        let raw = self.core.encode_entries(entries)?;
        let id = self.core.allocate()?;
        self.policy.create(&mut self.core, id, level, raw)?;
        self.core.stats.nodes_created += 1;
        Ok(id)
    }

    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()> {
        self.core.header.check_page(id)?;
        let raw = self.core.encode_changes(changes)?;
        self.policy.modify(&mut self.core, id, level, raw)?;
        self.core.stats.node_updates += 1;
        self.core.stats.entry_changes += changes.len() as u64;
        Ok(())
    }

    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()> {
        self.core.header.check_page(id)?;
        let raw = self.core.encode_entries(entries)?;
        self.policy.rewrite(&mut self.core, id, level, raw)?;
        self.core.stats.node_updates += 1;
        self.core.stats.entry_changes += entries.len() as u64;
        Ok(())
    }

    fn delete(&mut self, id: PageId, level: u32) -> Result<()> {
        self.core.header.check_page(id)?;
        self.policy.delete(&mut self.core, id, level)?;
        self.core.cache.invalidate(id);
        self.core.header.free.push(id);
        self.core.stats.nodes_deleted += 1;
        Ok(())
    }

    fn meta(&self) -> Option<TreeMeta> {
        self.core.header.meta
    }

    fn set_meta(&mut self, meta: TreeMeta) -> Result<()> {
        self.policy.log_meta(&mut self.core, meta)?;
        self.core.header.meta = Some(meta);
        Ok(())
    }

    fn end_operation(&mut self) -> Result<()> {
        self.core.log.commit()?;
        self.policy.end_operation(&mut self.core)
    }

    fn flush(&mut self) -> Result<()> {
        self.core.log.commit()?;
        self.policy.checkpoint(&mut self.core)?;
        self.core.persist_devices()?;
        self.core.save_header()
    }

    fn stats(&self) -> StoreStats {
        self.core.stats
    }
}

impl<P: BufferPolicy> StoreControl for BufferedStore<P> {
    fn device(&self) -> &dyn Device {
        self.core.cache.device()
    }

    fn drop_caches(&mut self) -> Result<()> {
        self.policy.drop_caches(&mut self.core);
        self.core.cache.drop_caches()
    }

    fn write_back(&mut self) -> Result<()> {
        self.core.log.commit()?;
        self.policy.write_back(&mut self.core)
    }

    fn pages_in_use(&self) -> u64 {
        self.core.header.pages_in_use()
    }

    fn save_header(&mut self) -> Result<()> {
        self.core.save_header()
    }

    fn persist_device(&mut self) -> Result<()> {
        self.core.persist_devices()
    }

    fn log_device(&self) -> Option<&dyn Device> {
        match self.core.placement {
            LogPlacement::Separate { .. } => Some(self.core.log.device()),
            LogPlacement::Same | LogPlacement::Uncounted => None,
        }
    }

    fn report(&self) -> StoreReport {
        let mut r = StoreReport {
            kind: P::KIND.into(),
            nodes: self.core.stats,
            pages_in_use: self.core.header.pages_in_use(),
            cache: self.core.cache.stats(),
            durability: match (
                self.core.placement.durability(),
                self.core.log.config().sync,
            ) {
                (Some(d), _) => d.into(),
                (None, LogSync::EachOp) => "each operation (log synced at every commit)".into(),
                (None, LogSync::Group(n)) => {
                    format!("groups of {n} operations (log group commit)")
                }
                (None, LogSync::None) => "checkpoint (log never synced)".into(),
            },
            log_device: self.core.placement.describe(),
            recovery: self.core.recovery.clone(),
            ..Default::default()
        };
        self.policy.report(&self.core, &mut r);
        r
    }
}
