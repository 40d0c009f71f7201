//! The eFIND node store (Carniel, Ciferri, Ciferri: ADBIS 2017 and Information Systems
//! 2019; `shared/seeds/carniel-2018-vldb-phd-efind.txt`): a [`NodeStore`] that wraps the
//! unchanged trees ("eFIND R-tree", "eFIND R*-tree") and follows eFIND's design goals:
//!
//! 1. avoid random writes: node changes go to an in-memory **write buffer**
//!    ([`write_buffer`]) at entry granularity instead of being written in place;
//! 2. flush dynamically chosen sequential units: when the write buffer exceeds its
//!    capacity, the **flushing manager** ([`flushing`]) picks a unit of nodes by a policy
//!    (`m`, `mt`, `mth`, `mtha`, `mthao`) and writes it as one batch;
//! 3. avoid excessive random reads: a **read buffer** of stored pages, a share of the total
//!    buffer, managed by a replacement policy of [`crate::cache`] (LRU, HLRU, S2Q, 2Q);
//! 4. avoid interleaved reads and writes: **temporal control** of reads (a node flushed
//!    while in the FIFO of recently read pages is put into the read buffer) and of writes
//!    (flushing candidates sequential to, or strided from, recently flushed pages);
//! 5. durability: the **log manager** ([`log_manager`]) logs every change at entry
//!    granularity on the shared [`Log`] (a partition carved from the end of the node
//!    device), commits each tree operation at `end_operation`, compacts the log to a
//!    snapshot of the write buffer, and rebuilds the write buffer on restart.
//!
//! Flushes happen only in [`NodeStore::end_operation`], so no page on the device ever holds
//! half a tree operation. Within one operation the write buffer may therefore exceed its
//! capacity by that operation's changes; at the end of it, units are flushed until it fits.
//!
//! Layers: the tree calls this store; this store reads and writes pages through a
//! [`PageCache`] (normally `none`, eFIND having its own read buffer) over the device. Its
//! statistics ([`EfindStats`]) are its own.

pub mod config;
pub mod flushing;
pub mod log_manager;
pub mod write_buffer;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use config::Resolved;
pub use config::{EfindConfig, FlushPolicy, Size, TemporalControl};
use flushing::{Candidate, WriteTcCounts};
use log_manager::{LoggedChange, Record};
use write_buffer::{BufNode, EncodedChange, Status};

use super::direct::{check_page_size, StoreHeader};
use super::log::{Log, LogConfig, LogStats, LogSync};
use super::{NodeChange, NodePage, NodeStore, StoreStats, TreeMeta};
use crate::cache::{Buffer, BufferStats, CacheConfig, PageCache};
use crate::device::partition::Partition;
use crate::device::Device;
use crate::node::{Entry, NodeLayout, PageId};
use crate::{Error, Result};

/// eFIND's own counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct EfindStats {
    /// Flushing operations (one unit each; `write_back` counts one).
    pub flushes: u64,
    /// Nodes written by flushes.
    pub flushed_nodes: u64,
    /// Flushed modified nodes whose merged page equalled the stored one (changes that
    /// cancelled out): writes that were not needed.
    pub unnecessary_flushes: u64,
    /// Device write requests made by flushes (one per run of consecutive pages).
    pub write_requests: u64,
    /// Buffered nodes with status new, now.
    pub buffered_new: u64,
    /// Buffered nodes with status modified, now.
    pub buffered_modified: u64,
    /// Bytes held by the write buffer, now.
    pub buffered_bytes: u64,
    /// Largest number of bytes the write buffer held (at an operation's end or within it).
    pub peak_buffered_bytes: u64,
    /// Capacity of the write buffer in bytes.
    pub write_buffer_bytes: u64,
    /// Capacity of the read buffer in pages.
    pub read_buffer_pages: u64,
    /// Read-buffer counters (hits, misses = faults, admissions, evictions).
    pub read_buffer: BufferStats,
    /// Stored pages read only to learn how many entries a node holds before its first
    /// buffered change (when neither the read buffer nor recent reads knew it).
    pub length_reads: u64,
    /// Flushed nodes put into the read buffer by the temporal control of reads.
    pub forced_into_read_buffer: u64,
    /// Flushed nodes that were in the FIFO of recent reads (whether or not admitted).
    pub read_tc_hits: u64,
    /// Cases of the temporal control of writes.
    pub write_tc: WriteTcCounts,
    /// The log's counters (records, bytes, commits, syncs, compactions).
    pub log: LogStats,
    /// Log operations replayed by the last restart.
    pub recovered_operations: u64,
    /// Log records of an unfinished operation (or a torn tail) dropped by the last restart.
    pub recovery_dropped_records: u64,
    /// Wall time of the last restart's recovery (log scan, replay, compaction), seconds.
    pub recovery_s: f64,
}

/// Stored-page entry counts remembered from recent reads (so that the first buffered
/// change of a node need not read its page again).
const LENGTH_MEMO: usize = 256;

/// The eFIND store. See the module documentation.
pub struct EfindStore {
    cache: PageCache,
    layout: NodeLayout,
    header: StoreHeader,
    header_path: Option<PathBuf>,
    config: EfindConfig,
    cfg: Resolved,
    wb: HashMap<PageId, BufNode>,
    wb_bytes: usize,
    rb: Buffer<Arc<[u8]>>,
    read_fifo: VecDeque<PageId>,
    write_fifo: VecDeque<PageId>,
    lengths: VecDeque<(PageId, u32)>,
    clock: u64,
    log: Log,
    stats: StoreStats,
    estats: EfindStats,
    scratch: Vec<u8>,
}

impl EfindStore {
    /// A new, empty store over the node partition `device` (its last pages become the log)
    /// with the page buffer `buffer` and the options `config`; with `header_path`,
    /// [`NodeStore::flush`] also saves the header there.
    pub fn create(
        device: Box<dyn Device>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        config: &EfindConfig,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        let cfg = config.resolve(layout.page_size())?;
        let (nodes, log_dev) = split_log(device, &cfg)?;
        let cache = PageCache::new(Box::new(nodes), buffer)?;
        let log = Log::create(Box::new(log_dev), LogConfig { sync: cfg.log_sync })?;
        let mut s = Self::assemble(
            cache,
            layout,
            config,
            cfg,
            StoreHeader::default(),
            log,
            header_path,
        )?;
        s.compact()?;
        Ok(s)
    }

    /// Reopens a store: replays its log (recovering what a crash left buffered) over the
    /// header saved at `header_path` (if any), then compacts the log.
    pub fn open(
        device: Box<dyn Device>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        config: &EfindConfig,
        header_path: &Path,
    ) -> Result<Self> {
        let started = std::time::Instant::now();
        let cfg = config.resolve(layout.page_size())?;
        let header = match std::fs::read_to_string(header_path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                Error::corrupted(
                    format!("store header {}", header_path.display()),
                    e.to_string(),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => StoreHeader::default(),
            Err(e) => return Err(Error::io(header_path, e)),
        };
        let (nodes, log_dev) = split_log(device, &cfg)?;
        let mut cache = PageCache::new(Box::new(nodes), buffer)?;
        let (log, recovered) = Log::open(Box::new(log_dev), LogConfig { sync: cfg.log_sync })?;
        let records = recovered
            .payloads()
            .map(Record::decode)
            .collect::<Result<Vec<_>>>()?;
        let replayed = log_manager::replay(&records, header, layout.entry_size(), |id, level| {
            let page = cache.read_checked(id, level, |b| layout.verify(b, id))?;
            Ok(layout.entry_count(&page) as u32)
        })?;
        let mut s = Self::assemble(
            cache,
            layout,
            config,
            cfg,
            replayed.header,
            log,
            Some(header_path),
        )?;
        s.clock = replayed.clock;
        for (id, node) in replayed.nodes {
            s.put_node(id, node);
        }
        s.compact()?;
        s.estats.recovered_operations = recovered.operations.len() as u64;
        s.estats.recovery_dropped_records = recovered.dropped_records;
        s.estats.recovery_s = started.elapsed().as_secs_f64();
        Ok(s)
    }

    fn assemble(
        cache: PageCache,
        layout: NodeLayout,
        config: &EfindConfig,
        cfg: Resolved,
        header: StoreHeader,
        log: Log,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        check_page_size(cache.page_size(), &layout)?;
        let rb = Buffer::new(cfg.read_policy.build(cfg.read_pages, cfg.kin, cfg.kout));
        let estats = EfindStats {
            write_buffer_bytes: cfg.write_bytes,
            read_buffer_pages: cfg.read_pages as u64,
            ..EfindStats::default()
        };
        Ok(EfindStore {
            scratch: vec![0u8; layout.page_size()],
            cache,
            layout,
            header,
            header_path: header_path.map(Path::to_path_buf),
            config: config.clone(),
            cfg,
            wb: HashMap::new(),
            wb_bytes: 0,
            rb,
            read_fifo: VecDeque::new(),
            write_fifo: VecDeque::new(),
            lengths: VecDeque::new(),
            clock: 0,
            log,
            stats: StoreStats::default(),
            estats,
        })
    }

    fn append(&mut self, r: &Record) -> Result<()> {
        self.log.append(&r.encode()?)
    }

    /// Makes the in-place pages durable, then replaces the log by a checkpoint and the
    /// state of every buffered node.
    fn compact(&mut self) -> Result<()> {
        self.cache.sync()?;
        let mut payloads = vec![Record::Checkpoint {
            meta: self.header.meta,
            next_page: self.header.next_page,
            free: self.header.free.clone(),
            clock: self.clock,
        }
        .encode()?];
        let mut ids: Vec<PageId> = self.wb.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            payloads.push(
                Record::State {
                    id,
                    state: self.wb[&id].state(),
                }
                .encode()?,
            );
        }
        self.log.compact(payloads.iter().map(Vec::as_slice))
    }

    fn compact_if_needed(&mut self) -> Result<()> {
        if self.log.needs_compaction() {
            self.compact()?;
        }
        Ok(())
    }

    /// The options.
    pub fn config(&self) -> &EfindConfig {
        &self.config
    }

    /// The page cache under the store (and through it the device).
    pub fn cache(&self) -> &PageCache {
        &self.cache
    }

    /// Pages in use (allocated and not freed).
    pub fn pages_in_use(&self) -> u64 {
        self.header.next_page - self.header.free.len() as u64
    }

    /// eFIND's counters.
    pub fn efind_stats(&self) -> EfindStats {
        let mut s = self.estats;
        s.read_buffer = self.rb.stats();
        s.buffered_bytes = self.wb_bytes as u64;
        s.buffered_new = self.wb.values().filter(|n| n.status == Status::New).count() as u64;
        s.buffered_modified = self.wb.len() as u64 - s.buffered_new;
        s.log = self.log.stats();
        s
    }

    /// Empties the read buffer, the page cache and the device's caches (between query
    /// repetitions). The write buffer stays: it is part of the index.
    pub fn drop_caches(&mut self) -> Result<()> {
        self.rb.clear();
        self.read_fifo.clear();
        self.lengths.clear();
        self.cache.drop_caches()
    }

    /// Writes every buffered node, sorted by page in groups of `flushing_unit` nodes
    /// (consecutive pages in one request), syncs the device and compacts the log.
    pub fn write_back(&mut self) -> Result<()> {
        let mut ids: Vec<PageId> = self.wb.keys().copied().collect();
        ids.sort_unstable();
        for group in ids.chunks(self.cfg.unit) {
            self.compact_if_needed()?;
            self.write_unit(group)?;
        }
        self.compact()
    }

    fn allocate(&mut self) -> Result<PageId> {
        let cap = self.cache.device().capacity_pages();
        self.header.allocate(cap)
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn remember_len(&mut self, id: PageId, len: u32) {
        if let Some(slot) = self.lengths.iter_mut().find(|(p, _)| *p == id) {
            slot.1 = len;
            return;
        }
        if self.lengths.len() == LENGTH_MEMO {
            self.lengths.pop_front();
        }
        self.lengths.push_back((id, len));
    }

    fn forget(&mut self, id: PageId) {
        self.lengths.retain(|(p, _)| *p != id);
    }

    /// The page stored on the device for `id`, through the read buffer.
    fn stored_page(&mut self, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        self.header.check_page(id)?;
        if self.rb.touch(id, level) {
            return Ok(self.rb.peek(id).expect("resident").clone());
        }
        let layout = self.layout;
        let page = self
            .cache
            .read_checked(id, level, |bytes| layout.verify(bytes, id))?;
        let len = layout.entry_count(&page) as u32;
        self.remember_len(id, len);
        let _ = self.rb.insert(id, level, page.clone());
        Ok(page)
    }

    /// The node as the tree sees it: the stored page merged with buffered changes.
    fn node_page(&mut self, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        self.stats.node_reads += 1;
        if self.cfg.tc.reads() && self.read_fifo.back() != Some(&id) {
            if self.read_fifo.len() == self.cfg.read_tc_size {
                self.read_fifo.pop_front();
            }
            self.read_fifo.push_back(id);
        }
        let (status, lvl) = match self.wb.get(&id) {
            None => return self.stored_page(id, level),
            Some(n) => (n.status, n.level),
        };
        let base = match status {
            Status::Modified => Some(self.stored_page(id, lvl)?),
            Status::New => None,
        };
        let node = &self.wb[&id];
        let mut out = vec![0u8; self.layout.page_size()];
        node.merge_into(&self.layout, base.as_deref(), &mut out)?;
        Ok(out.into())
    }

    fn encode_entry<const D: usize>(&mut self, e: &Entry<D>) -> Result<Box<[u8]>> {
        let o = self.layout.entry_offset(0);
        self.layout.put_entry(&mut self.scratch, 0, e)?;
        Ok(self.scratch[o..o + self.layout.entry_size()].into())
    }

    /// Puts `node` into the write buffer under `id`, keeping the byte count.
    fn put_node(&mut self, id: PageId, node: BufNode) {
        let es = self.layout.entry_size();
        self.wb_bytes += node.bytes(es);
        if let Some(old) = self.wb.insert(id, node) {
            self.wb_bytes -= old.bytes(es);
        }
        self.estats.peak_buffered_bytes = self.estats.peak_buffered_bytes.max(self.wb_bytes as u64);
    }

    /// Takes node `id` out of the write buffer for a change (a stored node enters it).
    fn take_node(&mut self, id: PageId, level: u32) -> Result<BufNode> {
        let es = self.layout.entry_size();
        if let Some(n) = self.wb.remove(&id) {
            self.wb_bytes -= n.bytes(es);
            return Ok(n);
        }
        self.header.check_page(id)?;
        let known = self
            .lengths
            .iter()
            .rev()
            .find(|(p, _)| *p == id)
            .map(|(_, l)| *l);
        let len = match known {
            Some(l) => l,
            None => {
                if !self.rb.contains(id) {
                    self.estats.length_reads += 1;
                }
                let page = self.stored_page(id, level)?;
                self.layout.entry_count(&page) as u32
            }
        };
        Ok(BufNode::modified(level, 0, len))
    }

    /// One flushing operation: choose a unit by the policy and write it.
    fn flush_one(&mut self) -> Result<()> {
        let need_geometry = matches!(self.cfg.policy, FlushPolicy::Mtha | FlushPolicy::Mthao);
        let all: Vec<Candidate> = self
            .wb
            .iter()
            .map(|(&id, n)| Candidate {
                id,
                mods: n.mods,
                level: n.level,
                stamp: n.stamp,
                area: None,
                overlap: None,
            })
            .collect();
        let mut cands = flushing::candidates(all, &self.cfg);
        if self.cfg.tc.writes() {
            cands = flushing::filter_writes(
                cands,
                &self.write_fifo,
                &self.cfg,
                &mut self.estats.write_tc,
            );
        }
        if need_geometry {
            let dims = self.layout.dims();
            for c in &mut cands {
                let boxes: Vec<Vec<f64>> = self.wb[&c.id]
                    .live_versions()
                    .map(|b| mbr_of(b, dims))
                    .collect();
                if !boxes.is_empty() {
                    c.area = Some(union_area(&boxes, dims));
                    if self.cfg.policy == FlushPolicy::Mthao {
                        c.overlap = Some(pairwise_overlap(&boxes, dims));
                    }
                }
            }
        }
        let unit = flushing::best_unit(cands, &self.cfg);
        self.write_unit(&unit)
    }

    /// Writes the buffered nodes `ids` (sorted) and takes them out of the write buffer.
    fn write_unit(&mut self, ids: &[PageId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let ps = self.layout.page_size();
        let es = self.layout.entry_size();
        let mut data = vec![0u8; ids.len() * ps];
        let mut levels = Vec::with_capacity(ids.len());
        for (i, &id) in ids.iter().enumerate() {
            let node = self.wb.remove(&id).ok_or_else(|| {
                Error::invalid("eFIND flush", format!("node {id} is not buffered"))
            })?;
            self.wb_bytes -= node.bytes(es);
            let base = match node.status {
                Status::Modified => Some(self.stored_page(id, node.level)?),
                Status::New => None,
            };
            let out = &mut data[i * ps..(i + 1) * ps];
            node.merge_into(&self.layout, base.as_deref(), out)?;
            if node.status == Status::Modified {
                let n = node.len();
                let from = self.layout.entry_offset(0);
                let entries = out[from..from + n * es].to_vec();
                self.log.append(
                    &Record::Flushed {
                        id,
                        level: node.level,
                        entries,
                    }
                    .encode()?,
                )?;
            }
            if base.as_deref() == Some(&*out) {
                self.estats.unnecessary_flushes += 1;
            }
            levels.push(node.level);
            self.remember_len(id, node.len() as u32);
            let page: Arc<[u8]> = Arc::from(&*out);
            if self.rb.remove(id).is_some() {
                // Replace the stored copy (never leave a stale one if re-admission fails).
                let _ = self.rb.insert(id, node.level, page);
            } else if self.cfg.tc.reads() && self.read_fifo.contains(&id) {
                self.estats.read_tc_hits += 1;
                if self.rb.insert(id, node.level, page) {
                    self.estats.forced_into_read_buffer += 1;
                }
            }
        }
        // The log first: a torn in-place write must find the node's entries in the log.
        self.log.commit()?;
        match self.cfg.log_sync {
            LogSync::None => self.log.write_out()?,
            _ if self.log.stats().unsynced_commits > 0 => self.log.sync()?,
            _ => {}
        }
        // One device request per run of consecutive pages.
        let mut start = 0;
        while start < ids.len() {
            let mut end = start + 1;
            while end < ids.len() && ids[end] == ids[end - 1] + 1 {
                end += 1;
            }
            self.cache
                .write_run(ids[start], &data[start * ps..end * ps], &levels[start..end])?;
            self.estats.write_requests += 1;
            start = end;
        }
        self.stats.page_writes += ids.len() as u64;
        self.estats.flushes += 1;
        self.estats.flushed_nodes += ids.len() as u64;
        if self.cfg.tc.writes() {
            for &id in ids {
                if self.write_fifo.len() == self.cfg.write_tc_size {
                    self.write_fifo.pop_front();
                }
                self.write_fifo.push_back(id);
            }
        }
        Ok(())
    }
}

/// Splits the node device: the last `log_pages` pages hold the log.
fn split_log(device: Box<dyn Device>, cfg: &Resolved) -> Result<(Partition, Partition)> {
    let cap = device.capacity_pages();
    if cfg.log_pages + 1 >= cap {
        return Err(Error::invalid(
            "eFIND store",
            format!(
                "a log of {} pages does not fit on a device of {cap} pages",
                cfg.log_pages
            ),
        ));
    }
    Partition::split(device, cap - cfg.log_pages)
}

/// The MBR (min then max per dimension) of an encoded entry.
fn mbr_of(entry: &[u8], dims: usize) -> Vec<f64> {
    (0..2 * dims)
        .map(|k| f64::from_le_bytes(entry[8 * k..8 * k + 8].try_into().expect("8 bytes")))
        .collect()
}

fn area(b: &[f64], dims: usize) -> f64 {
    (0..dims).map(|k| (b[dims + k] - b[k]).max(0.0)).product()
}

fn union_area(boxes: &[Vec<f64>], dims: usize) -> f64 {
    let mut u = boxes[0].clone();
    for b in &boxes[1..] {
        for k in 0..dims {
            u[k] = u[k].min(b[k]);
            u[dims + k] = u[dims + k].max(b[dims + k]);
        }
    }
    area(&u, dims)
}

fn pairwise_overlap(boxes: &[Vec<f64>], dims: usize) -> f64 {
    let mut sum = 0.0;
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let mut v = 1.0;
            for k in 0..dims {
                let w = a[dims + k].min(b[dims + k]) - a[k].max(b[k]);
                if w <= 0.0 {
                    v = 0.0;
                    break;
                }
                v *= w;
            }
            sum += v;
        }
    }
    sum
}

impl<const D: usize> NodeStore<D> for EfindStore {
    fn layout(&self) -> &NodeLayout {
        &self.layout
    }

    fn read(&mut self, id: PageId, level: u32) -> Result<NodePage> {
        let bytes = self.node_page(id, level)?;
        Ok(NodePage::new(bytes, self.layout))
    }

    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId> {
        if entries.len() > self.layout.fits() {
            return Err(Error::invalid(
                "node",
                format!(
                    "{} entries do not fit in a page ({} fit)",
                    entries.len(),
                    self.layout.fits()
                ),
            ));
        }
        let id = self.allocate()?;
        let enc = entries
            .iter()
            .map(|e| self.encode_entry(e))
            .collect::<Result<Vec<_>>>()?;
        // A reused page: whatever was stored or cached for it is stale.
        self.rb.remove(id);
        self.cache.invalidate(id);
        self.forget(id);
        let stamp = self.tick();
        self.append(&Record::Alloc(id))?;
        self.append(&Record::Create {
            id,
            level,
            stamp,
            entries: enc.concat(),
        })?;
        self.put_node(id, BufNode::new_node(level, stamp, enc));
        self.stats.nodes_created += 1;
        Ok(id)
    }

    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()> {
        let encoded = changes
            .iter()
            .map(|c| match c {
                NodeChange::Set { entry, .. } | NodeChange::Push(entry) => {
                    self.encode_entry(entry).map(Some)
                }
                NodeChange::Remove { .. } => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let was_buffered = self.wb.contains_key(&id);
        let mut node = self.take_node(id, level)?;
        let before = node.clone();
        let mut result = Ok(());
        for (c, e) in changes.iter().zip(&encoded) {
            let ec = match (c, e) {
                (NodeChange::Set { pos, .. }, Some(b)) => EncodedChange::Set {
                    pos: *pos,
                    entry: b,
                },
                (NodeChange::Push(_), Some(b)) => EncodedChange::Push(b),
                (_, _) => match c {
                    NodeChange::Remove { pos } => EncodedChange::Remove { pos: *pos },
                    _ => unreachable!("set and push carry an entry"),
                },
            };
            if matches!(ec, EncodedChange::Push(_)) && node.len() >= self.layout.fits() {
                result = Err(Error::invalid(
                    "node change",
                    format!("node {id} is full ({} entries)", node.len()),
                ));
                break;
            }
            if let Err(e) = node.apply(id, ec) {
                result = Err(e);
                break;
            }
        }
        if result.is_err() {
            // Nothing of a failed modification stays.
            if was_buffered {
                self.put_node(id, before);
            }
            return result;
        }
        node.stamp = self.tick();
        let stamp = node.stamp;
        self.put_node(id, node);
        for (c, e) in changes.iter().zip(encoded) {
            let change = match (c, e) {
                (NodeChange::Set { pos, .. }, Some(b)) => LoggedChange::Set {
                    pos: *pos as u32,
                    entry: b.into_vec(),
                },
                (NodeChange::Push(_), Some(b)) => LoggedChange::Push(b.into_vec()),
                (NodeChange::Remove { pos }, _) => LoggedChange::Remove { pos: *pos as u32 },
                _ => unreachable!("set and push carry an entry"),
            };
            self.append(&Record::Change {
                id,
                level,
                stamp,
                change,
            })?;
        }
        self.stats.node_updates += 1;
        self.stats.entry_changes += changes.len() as u64;
        Ok(())
    }

    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()> {
        if entries.len() > self.layout.fits() {
            return Err(Error::invalid(
                "node",
                format!(
                    "{} entries do not fit in a page ({} fit)",
                    entries.len(),
                    self.layout.fits()
                ),
            ));
        }
        let enc = entries
            .iter()
            .map(|e| self.encode_entry(e))
            .collect::<Result<Vec<_>>>()?;
        let mut node = self.take_node(id, level)?;
        node.level = level;
        let stamp = self.tick();
        self.append(&Record::Rewrite {
            id,
            level,
            stamp,
            entries: enc.concat(),
        })?;
        node.rewrite(enc);
        node.stamp = stamp;
        self.put_node(id, node);
        self.stats.node_updates += 1;
        self.stats.entry_changes += entries.len() as u64;
        Ok(())
    }

    fn delete(&mut self, id: PageId, _level: u32) -> Result<()> {
        self.header.check_page(id)?;
        // A deleted node needs no write: its page is freed; what was buffered or cached
        // for it goes.
        if let Some(n) = self.wb.remove(&id) {
            self.wb_bytes -= n.bytes(self.layout.entry_size());
        }
        self.rb.remove(id);
        self.cache.invalidate(id);
        self.forget(id);
        self.read_fifo.retain(|p| *p != id);
        self.header.free.push(id);
        self.append(&Record::Free(id))?;
        self.stats.nodes_deleted += 1;
        Ok(())
    }

    fn meta(&self) -> Option<TreeMeta> {
        self.header.meta
    }

    fn set_meta(&mut self, meta: TreeMeta) -> Result<()> {
        self.header.meta = Some(meta);
        self.append(&Record::Meta(meta))
    }

    fn end_operation(&mut self) -> Result<()> {
        self.log.commit()?;
        while self.wb_bytes as u64 > self.cfg.write_bytes && !self.wb.is_empty() {
            self.compact_if_needed()?;
            self.flush_one()?;
        }
        self.compact_if_needed()
    }

    fn flush(&mut self) -> Result<()> {
        self.log.commit()?;
        self.write_back()?;
        self.cache.device_mut().persist()?;
        if let Some(path) = &self.header_path {
            self.header.save(path)?;
        }
        Ok(())
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }
}
