//! FAST (Sarwat, Mokbel, Zhou, Nath: "Generic and efficient framework for search trees on
//! flash memory storage systems", GeoInformatica 17(3), 2013): a [`NodeStore`] that turns
//! any disk-based tree into a flash-aware one by changing only how node changes reach the
//! device (`DESIGN.md` section 6). The trees above are unchanged.
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
//! * **Log** ([`record`] over the shared [`Log`]): every change is appended before the
//!   operation returns and committed at [`NodeStore::end_operation`]; flush records say which
//!   nodes became durable. Page allocation and tree metadata are logged too. Before nodes
//!   are written in place, the full images of the modified ones (those whose recovery would
//!   need their old page) are logged and made durable, so a torn page write loses nothing.
//! * **Recovery**: opening the store replays the log (a snapshot of metadata and allocation,
//!   then the records in order, dropping nodes a later flush record made durable) and
//!   rebuilds the buffer: the index is exactly as at the last acknowledged operation.
//! * **Checkpoints** ([`NodeStore::flush`]): flush the whole buffer, then compact the log
//!   into a snapshot (atomically, see [`Log::compact`]), persist the device, and write
//!   `store.json` for people to read. The log is the source of truth: a crash between any
//!   two of these steps reopens from the old log or the new one, both consistent.

pub mod buffer;
pub mod flush;
pub mod record;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use self::buffer::{page_from_entries, BufferContents, Status, WriteBuffer};
use self::record::{RawChange, Record};
use super::direct::check_page_size;
use super::log::{Log, LogConfig, LogStats, LogSync, Recovered, ScanEnd};
use super::{NodeChange, NodePage, NodeStore, StoreStats, TreeMeta};
use crate::cache::PageCache;
use crate::node::{Entry, NodeLayout, PageId};
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
        if self.log_size < min {
            return Err(Error::invalid(
                "FAST log size",
                format!(
                    "{} bytes is too small for this write buffer and flushing unit; give at \
                     least {min} bytes ({})",
                    self.log_size,
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

/// What a recovery did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Wall time of the recovery (log scan, replay, new log generation) in seconds.
    pub seconds: f64,
    /// Committed operations found in the log.
    pub operations: u64,
    /// Records replayed.
    pub records_replayed: u64,
    /// Records describing nodes that a later flush record made durable (not kept).
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

/// FAST's counters, reported beside the common store counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FastReport {
    /// The flushing policy.
    pub flush_policy: String,
    /// Nodes per flushing unit.
    pub flushing_unit: u32,
    /// Write buffer capacity in bytes.
    pub write_buffer: u64,
    /// Log durability setting.
    pub log_sync: String,
    /// Flushing operations (units written).
    pub flushes: u64,
    /// Nodes written by flushes.
    pub flushed_nodes: u64,
    /// Deleted nodes dropped from the buffer by flushes (nothing written).
    pub flushed_deleted_nodes: u64,
    /// In-use pages of flushed units that had nothing to write.
    pub unnecessary_flushed_nodes: u64,
    /// Device write requests of flushes.
    pub flush_write_requests: u64,
    /// Node images logged before in-place writes (torn-write protection).
    pub image_records: u64,
    /// Bytes of those images.
    pub image_bytes: u64,
    /// The buffer now.
    pub buffer: BufferContents,
    /// Largest number of bytes the buffer held (at an operation's end, before flushing).
    pub buffer_peak_bytes: u64,
    /// The log's counters.
    pub log: LogStats,
    /// What the last recovery did (when the store was opened).
    pub recovery: Option<RecoveryReport>,
}

/// Informational header (`store.json`) written at checkpoints.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FastHeader {
    kind: String,
    log_generation: u64,
    meta: Option<TreeMeta>,
    next_page: PageId,
    free_pages: u64,
}

/// The FAST node store. See the module documentation.
pub struct FastStore {
    cache: PageCache,
    log: Log,
    layout: NodeLayout,
    params: FastParams,
    buf: WriteBuffer,
    meta: Option<TreeMeta>,
    next_page: PageId,
    free: Vec<PageId>,
    /// Operations ended so far (FAST*'s clock).
    op: u64,
    rng: ChaCha8Rng,
    stats: StoreStats,
    report: FastReport,
    header_path: Option<PathBuf>,
    scratch: Vec<u8>,
}

impl FastStore {
    /// A new, empty store: nodes through `cache`, the log on `log_device`.
    pub fn create(
        cache: PageCache,
        log_device: Box<dyn crate::device::Device>,
        layout: NodeLayout,
        params: FastParams,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        let log = Log::create(
            log_device,
            LogConfig {
                sync: params.log_sync,
            },
        )?;
        Self::new(cache, log, layout, params, header_path)
    }

    /// Reopens a store, recovering its buffer from the log.
    pub fn open(
        cache: PageCache,
        log_device: Box<dyn crate::device::Device>,
        layout: NodeLayout,
        params: FastParams,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        let start = Instant::now();
        let (log, recovered) = Log::open(
            log_device,
            LogConfig {
                sync: params.log_sync,
            },
        )?;
        let mut s = Self::new(cache, log, layout, params, header_path)?;
        let mut rep = s.replay(&recovered)?;
        rep.seconds = start.elapsed().as_secs_f64();
        s.report.recovery = Some(rep);
        Ok(s)
    }

    fn new(
        cache: PageCache,
        log: Log,
        layout: NodeLayout,
        params: FastParams,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        check_page_size(cache.page_size(), &layout)?;
        params.validate(layout.page_size())?;
        Ok(FastStore {
            scratch: vec![0u8; layout.page_size()],
            cache,
            log,
            layout,
            params,
            buf: WriteBuffer::default(),
            meta: None,
            next_page: 0,
            free: Vec::new(),
            op: 0,
            rng: ChaCha8Rng::seed_from_u64(RANDOM_POLICY_SEED),
            stats: StoreStats::default(),
            report: FastReport {
                flush_policy: params.flush_policy.to_string(),
                flushing_unit: params.flushing_unit,
                write_buffer: params.write_buffer,
                log_sync: params.log_sync.to_string(),
                ..Default::default()
            },
            header_path: header_path.map(Path::to_path_buf),
        })
    }

    /// The page cache (and through it the node partition of the device).
    pub fn cache(&self) -> &PageCache {
        &self.cache
    }

    /// The page cache, mutably.
    pub fn cache_mut(&mut self) -> &mut PageCache {
        &mut self.cache
    }

    /// The options.
    pub fn params(&self) -> &FastParams {
        &self.params
    }

    /// Pages in use (allocated and not freed).
    pub fn pages_in_use(&self) -> u64 {
        self.next_page - self.free.len() as u64
    }

    /// FAST's counters.
    pub fn report(&self) -> FastReport {
        FastReport {
            buffer: self.buf.contents(),
            log: self.log.stats(),
            ..self.report.clone()
        }
    }

    /// Writes every buffered node to its page (the end of a workload); the log keeps its
    /// records until the next checkpoint.
    pub fn write_back(&mut self) -> Result<()> {
        self.log.commit()?;
        self.flush_all()
    }

    fn allocate(&mut self) -> Result<PageId> {
        if let Some(p) = self.free.pop() {
            return Ok(p);
        }
        let p = self.next_page;
        let cap = self.cache.device().capacity_pages();
        if p >= cap {
            return Err(Error::DeviceFull(format!(
                "the index needs page {p} but the node partition holds {cap} pages \
                 (besides the FAST log)"
            )));
        }
        self.next_page += 1;
        Ok(p)
    }

    /// Replays an allocation of `id` (recovery mirrors [`Self::allocate`]).
    fn replay_allocate(&mut self, id: PageId) {
        if let Some(i) = self.free.iter().rposition(|p| *p == id) {
            self.free.remove(i);
        } else if id >= self.next_page {
            self.next_page = id + 1;
        }
    }

    fn log_record(&mut self, rec: &Record) -> Result<()> {
        self.log.append(&rec.encode())
    }

    fn check_page(&self, id: PageId) -> Result<()> {
        if id >= self.next_page {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "points past the last allocated page",
            ));
        }
        Ok(())
    }

    /// The current content of node `id`: its page with the buffered changes replayed.
    fn node_page(&mut self, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        self.check_page(id)?;
        let layout = self.layout;
        let Some(n) = self.buf.get(id) else {
            return self.cache.read_checked(id, level, |b| layout.verify(b, id));
        };
        if n.status == Status::Deleted {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "the node was deleted",
            ));
        }
        let mut page = vec![0u8; layout.page_size()];
        let count = match &n.image {
            Some(entries) => {
                page_from_entries(&layout, id, n.level, entries, &mut page)?;
                entries.len() / layout.entry_size()
            }
            None => {
                let base = self
                    .cache
                    .read_checked_ref(id, level, |b| layout.verify(b, id))?;
                page.copy_from_slice(base);
                layout.entry_count(&page)
            }
        };
        let n = self.buf.get(id).expect("still buffered");
        buffer::apply_raw(&layout, id, &mut page, n.level, count, &n.changes)?;
        Ok(page.into())
    }

    fn raw_entry<const D: usize>(&mut self, e: &Entry<D>) -> Result<Box<[u8]>> {
        self.layout.put_entry(&mut self.scratch, 0, e)?;
        let o = self.layout.entry_offset(0);
        Ok(self.scratch[o..o + self.layout.entry_size()].into())
    }

    fn raw_entries<const D: usize>(&mut self, entries: &[Entry<D>]) -> Result<Vec<u8>> {
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
            out.extend_from_slice(&self.raw_entry(e)?);
        }
        Ok(out)
    }

    /// Rebuilds metadata, allocation and buffer from recovered log records.
    fn replay(&mut self, rec: &Recovered) -> Result<RecoveryReport> {
        let mut rep = RecoveryReport {
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
        };
        let es = self.layout.entry_size();
        for op in &rec.operations {
            self.op += 1;
            for p in op {
                rep.records_replayed += 1;
                match Record::decode(p, es)? {
                    Record::Snapshot {
                        meta,
                        next_page,
                        free,
                    } => {
                        self.meta = meta;
                        self.next_page = next_page;
                        self.free = free;
                    }
                    Record::Create { id, level, entries } => {
                        self.replay_allocate(id);
                        self.buf.create(id, level, entries, self.op);
                    }
                    Record::Modify { id, level, changes } => {
                        self.buf.modify(id, level, changes, self.op)
                    }
                    Record::Image { id, level, entries } => {
                        self.buf.image(id, level, entries, 0, self.op)
                    }
                    Record::Delete { id } => {
                        let level = self.buf.get(id).map_or(0, |n| n.level);
                        self.buf.delete(id, level, self.op);
                        self.free.push(id);
                    }
                    Record::Deleted { id, level } => self.buf.delete(id, level, self.op),
                    Record::Meta(m) => self.meta = Some(m),
                    Record::Flushed(ids) => {
                        for id in ids {
                            if let Some(n) = self.buf.remove(id) {
                                rep.records_skipped += n.records;
                            }
                        }
                    }
                }
            }
        }
        rep.buffered_nodes = self.buf.iter().count() as u64;
        Ok(rep)
    }

    /// The records that rebuild the current state from nothing (a compaction).
    fn snapshot_records(&self) -> Vec<Vec<u8>> {
        let mut out = vec![Record::Snapshot {
            meta: self.meta,
            next_page: self.next_page,
            free: self.free.clone(),
        }
        .encode()];
        for (&id, n) in self.buf.iter() {
            let level = n.level;
            match (n.status, &n.image) {
                (Status::Deleted, _) => out.push(Record::Deleted { id, level }.encode()),
                (Status::New, Some(entries)) => out.push(
                    Record::Create {
                        id,
                        level,
                        entries: entries.clone(),
                    }
                    .encode(),
                ),
                (_, Some(entries)) => out.push(
                    Record::Image {
                        id,
                        level,
                        entries: entries.clone(),
                    }
                    .encode(),
                ),
                (_, None) => {}
            }
            if n.status != Status::Deleted && !n.changes.is_empty() {
                out.push(
                    Record::Modify {
                        id,
                        level,
                        changes: n.changes.clone(),
                    }
                    .encode(),
                );
            }
        }
        out
    }

    /// Rewrites the log as a snapshot of the current state.
    fn compact_log(&mut self) -> Result<()> {
        let records = self.snapshot_records();
        self.log.compact(records.iter().map(Vec::as_slice))
    }

    fn write_header(&mut self) -> Result<()> {
        let Some(path) = &self.header_path else {
            return Ok(());
        };
        let h = FastHeader {
            kind: "fast".into(),
            log_generation: self.log.generation(),
            meta: self.meta,
            next_page: self.next_page,
            free_pages: self.free.len() as u64,
        };
        let json = serde_json::to_vec_pretty(&h)
            .map_err(|e| Error::invalid("store header", e.to_string()))?;
        super::direct::write_atomically(path, &json)
    }
}

impl<const D: usize> NodeStore<D> for FastStore {
    fn layout(&self) -> &NodeLayout {
        &self.layout
    }

    fn read(&mut self, id: PageId, level: u32) -> Result<NodePage> {
        self.stats.node_reads += 1;
        Ok(NodePage::new(self.node_page(id, level)?, self.layout))
    }

    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId> {
        let raw = self.raw_entries(entries)?;
        let id = self.allocate()?;
        self.log_record(&Record::Create {
            id,
            level,
            entries: raw.clone(),
        })?;
        self.buf.create(id, level, raw, self.op);
        self.stats.nodes_created += 1;
        Ok(id)
    }

    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()> {
        self.check_page(id)?;
        let mut raw = Vec::with_capacity(changes.len());
        for c in changes {
            raw.push(match c {
                NodeChange::Set { pos, entry } => RawChange::Set {
                    pos: *pos as u32,
                    entry: self.raw_entry(entry)?,
                },
                NodeChange::Push(entry) => RawChange::Push(self.raw_entry(entry)?),
                NodeChange::Remove { pos } => RawChange::Remove { pos: *pos as u32 },
            });
        }
        self.log_record(&Record::Modify {
            id,
            level,
            changes: raw.clone(),
        })?;
        self.buf.modify(id, level, raw, self.op);
        self.stats.node_updates += 1;
        self.stats.entry_changes += changes.len() as u64;
        Ok(())
    }

    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()> {
        self.check_page(id)?;
        let raw = self.raw_entries(entries)?;
        self.log_record(&Record::Image {
            id,
            level,
            entries: raw.clone(),
        })?;
        self.buf
            .image(id, level, raw, entries.len() as u64, self.op);
        self.stats.node_updates += 1;
        self.stats.entry_changes += entries.len() as u64;
        Ok(())
    }

    fn delete(&mut self, id: PageId, level: u32) -> Result<()> {
        self.check_page(id)?;
        self.log_record(&Record::Delete { id })?;
        self.buf.delete(id, level, self.op);
        self.cache.invalidate(id);
        self.free.push(id);
        self.stats.nodes_deleted += 1;
        Ok(())
    }

    fn meta(&self) -> Option<TreeMeta> {
        self.meta
    }

    fn set_meta(&mut self, meta: TreeMeta) -> Result<()> {
        self.log_record(&Record::Meta(meta))?;
        self.meta = Some(meta);
        Ok(())
    }

    fn end_operation(&mut self) -> Result<()> {
        self.log.commit()?;
        self.op += 1;
        let bytes = self.buf.bytes() as u64;
        self.report.buffer_peak_bytes = self.report.buffer_peak_bytes.max(bytes);
        if bytes > self.params.write_buffer {
            self.flush_for_space()?;
        }
        if self.log.needs_compaction() {
            self.compact_log()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.log.commit()?;
        self.flush_all()?;
        self.compact_log()?;
        self.cache.device_mut().persist()?;
        self.write_header()
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }
}
