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
//! Flushes happen only at the end of a tree operation (`NodeStore::end_operation`), so no page on the device ever holds
//! half a tree operation. Within one operation the write buffer may therefore exceed its
//! capacity by that operation's changes; at the end of it, units are flushed until it fits.
//!
//! Layers: eFIND is a policy over the buffered-store skeleton ([`crate::store::buffered`]):
//! the tree calls the skeleton, which hands eFIND's hooks the encoded changes; pages are
//! read and written through a page cache (normally `none`, eFIND having its own read
//! buffer) over the device. eFIND holds its write buffer (the skeleton's
//! [`NodeBuffer`](super::buffered::NodeBuffer) of [`BufNode`]s, by page id); the skeleton
//! writes its flushing
//! units ([`UnitDurability::Images`]) and reports the statistics every buffered store shares
//! (`store.buffered.*`); [`EfindStats`] are eFIND's own.

pub(crate) mod config;
pub(crate) mod flushing;
pub(crate) mod lengths;
pub(crate) mod log_manager;
pub(crate) mod standings;
#[cfg(test)]
mod standings_tests;
pub(crate) mod write_buffer;

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::buffered::bits::Bits;
use config::Resolved;
pub use config::{EfindConfig, FlushPolicy, Size, TemporalControl};
use flushing::WriteTcCounts;
use lengths::Lengths;
use standings::Standings;
use write_buffer::{BufNode, Scores};

use super::buffered::node_cache::LazyNodeCache;
use super::buffered::{
    policy_report, BufferGauges, BufferPolicy, BufferSettings, BufferedStore, Core, Encoded,
    NodeBuffer, NodeStatus, PolicyReport, RawChange, Record, RecordFormat, RecoveryReport,
    UnitDurability,
};
use super::log::LOG_FORMAT;
use super::TreeMeta;
use crate::cache::{Buffer, BufferStats};
use crate::node::PageId;
use crate::{Error, Result};

/// eFIND's own counters, reported as `store.efind.*` beside the shared ones
/// (`store.buffered.*`, see [`crate::store::buffered::BufferedStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct EfindStats {
    /// Flushed modified nodes whose merged page equalled the stored one (changes that
    /// cancelled out): page writes that changed nothing.
    pub unchanged_pages_written: u64,
    /// Stored pages read only to learn how many entries a node holds before its first
    /// buffered change (when neither the read buffer nor recent reads knew it).
    pub length_reads: u64,
    /// Flushed nodes put into the read buffer by the temporal control of reads.
    pub forced_into_read_buffer: u64,
    /// Flushed nodes that were in the FIFO of recent reads (whether or not admitted).
    pub read_tc_hits: u64,
    /// Cases of the temporal control of writes.
    pub write_tc: WriteTcCounts,
    /// Read-buffer counters (hits, misses = faults, admissions, evictions).
    pub read_buffer: BufferStats,
    /// eFIND's own settings.
    pub settings: EfindSettings,
}

/// eFIND's options beside the shared ones (`store.buffered.settings`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EfindSettings {
    /// Capacity of the read buffer in pages.
    pub read_buffer_pages: u64,
}

/// The eFIND store: the buffered-store skeleton with the eFIND policy.
pub type EfindStore = BufferedStore<EfindPolicy>;

/// eFIND's buffers, flushing manager and log records. See the module documentation.
pub struct EfindPolicy {
    config: EfindConfig,
    cfg: Resolved,
    wb: NodeBuffer<BufNode>,
    /// What the flushing policies score of the write buffer's nodes, kept in step with
    /// `wb` (every node entering, changing or leaving it goes through
    /// [`buffer`](Self::buffer) or [`unbuffer`](Self::unbuffer)).
    standings: Standings,
    /// Scratch: the unit a flush writes.
    unit: Vec<PageId>,
    /// The encoded `State` records of the last log compaction, in page order: a node not
    /// put into the write buffer since (not in `changed`) has the same state, so the next
    /// compaction reuses its payload instead of collecting and encoding the state again.
    snapshot: Vec<(PageId, Vec<u8>)>,
    /// Nodes put into the write buffer since the last compaction.
    changed: Bits,
    rb: Buffer<Arc<[u8]>>,
    read_fifo: VecDeque<PageId>,
    write_fifo: VecDeque<PageId>,
    /// Stored-page entry counts remembered from recent reads.
    lengths: Lengths,
    clock: u64,
    estats: EfindStats,
    /// Merged pages of buffered nodes (CPU only: a read still reads the stored page as
    /// before; see [`node_cache`](super::buffered::node_cache)). A node leaves it when it
    /// leaves the write buffer.
    merged: LazyNodeCache,
}

impl EfindPolicy {
    /// The policy with options `config`, resolved for `page_size`-byte nodes.
    pub fn new(config: &EfindConfig, page_size: usize) -> Result<Self> {
        let cfg = config.resolve(page_size)?;
        let rb = Buffer::new(cfg.read_policy.build(cfg.read_pages, cfg.kin, cfg.kout));
        let estats = EfindStats {
            settings: EfindSettings {
                read_buffer_pages: cfg.read_pages as u64,
            },
            ..EfindStats::default()
        };
        Ok(EfindPolicy {
            config: config.clone(),
            cfg,
            wb: NodeBuffer::default(),
            standings: Standings::default(),
            unit: Vec::new(),
            snapshot: Vec::new(),
            changed: Bits::default(),
            rb,
            read_fifo: VecDeque::new(),
            write_fifo: VecDeque::new(),
            lengths: Lengths::default(),
            clock: 0,
            estats,
            merged: LazyNodeCache::default(),
        })
    }

    /// The log pages the options ask for.
    pub fn log_pages(&self) -> u64 {
        self.cfg.log_pages
    }

    /// The options.
    pub fn config(&self) -> &EfindConfig {
        &self.config
    }

    /// Puts node `id` into the write buffer (replacing its older version), in step with the
    /// flushing standings.
    fn buffer(&mut self, id: PageId, node: BufNode) {
        self.standings.put(id, node.stamp, node.mods, node.level);
        self.changed.insert(id);
        self.wb.insert(id, node);
    }

    /// Takes node `id` out of the write buffer, in step with the flushing standings.
    fn unbuffer(&mut self, id: PageId) -> Option<BufNode> {
        let node = self.wb.remove(id)?;
        self.standings.remove(id);
        Some(node)
    }

    /// Makes the in-place pages durable, then replaces the log by a snapshot (with the
    /// logical clock) and the state of every buffered node.
    /// (The records of nodes unchanged since the last compaction are reused.)
    fn compact(&mut self, core: &mut Core) -> Result<()> {
        core.cache.sync()?;
        let format = core.format;
        let mut last = std::mem::take(&mut self.snapshot).into_iter().peekable();
        let mut states: Vec<(PageId, Vec<u8>)> = Vec::with_capacity(self.wb.len());
        // (Only a node that changed is read: the others' payloads are kept.)
        for id in self.wb.ids_iter() {
            while last.peek().is_some_and(|(l, _)| *l < id) {
                last.next();
            }
            let same = !self.changed.contains(id) && last.peek().map(|(l, _)| *l) == Some(id);
            match last.next_if(|_| same) {
                Some(kept) => {
                    debug_assert!(
                        Record::State {
                            id,
                            state: self.wb.get(id).expect("buffered").state()
                        }
                        .encode(format)
                        .is_ok_and(|p| p == kept.1),
                        "node {id} changed since the last compaction"
                    );
                    states.push(kept);
                }
                None => {
                    let n = self.wb.get(id).expect("buffered");
                    let mut payload = Vec::new();
                    if format == RecordFormat::Compact {
                        n.encode_state(id, &mut payload);
                    } else {
                        Record::State {
                            id,
                            state: n.state(),
                        }
                        .encode_into(format, &mut payload)?;
                    }
                    states.push((id, payload));
                }
            }
        }
        drop(last);
        self.changed.clear();
        let result = core.compact_log(Some(self.clock), states.iter().map(|(_, p)| Encoded(p)));
        self.snapshot = states;
        result
    }

    fn compact_if_needed(&mut self, core: &mut Core) -> Result<()> {
        if core.log.needs_compaction() {
            self.compact(core)?;
        }
        Ok(())
    }

    /// eFIND's own counters.
    pub(crate) fn efind_stats(&self) -> EfindStats {
        EfindStats {
            read_buffer: self.rb.stats(),
            ..self.estats
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The page stored on the device for `id`, through the read buffer.
    fn stored_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        core.header.check_page(id)?;
        if self.rb.touch(id, level) {
            return Ok(self.rb.peek(id).expect("resident").clone());
        }
        let layout = core.layout;
        let page = core
            .cache
            .read_checked(id, level, |bytes| layout.verify(bytes, id))?;
        let len = layout.entry_count(&page) as u32;
        self.lengths.remember(id, len);
        let cache = &mut core.cache;
        let _ = self
            .rb
            .insert_with(id, level, page.clone(), |_, old| cache.reuse(old));
        Ok(page)
    }

    /// Takes node `id` out of the write buffer for a change (a stored node enters it).
    fn take_node(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<BufNode> {
        if let Some(n) = self.unbuffer(id) {
            return Ok(n);
        }
        let known = self.lengths.get(id);
        let len = match known {
            Some(l) => l,
            None => {
                if !self.rb.contains(id) {
                    self.estats.length_reads += 1;
                }
                let page = self.stored_page(core, id, level)?;
                core.layout.entry_count(&page) as u32
            }
        };
        Ok(BufNode::modified(level, 0, len))
    }

    /// One flushing operation: choose a unit by the policy (from the standings, see
    /// [`standings`]) and write it.
    fn flush_one(&mut self, core: &mut Core) -> Result<()> {
        debug_assert_eq!(self.standings.len(), self.wb.len());
        let dims = core.layout.dims();
        let overlap = self.cfg.policy == FlushPolicy::Mthao;
        let mut flat = Vec::new();
        let wb = &self.wb;
        let mut unit = std::mem::take(&mut self.unit);
        #[cfg(test)]
        let before = self.estats.write_tc;
        self.standings.choose(
            &self.cfg,
            &self.write_fifo,
            &mut self.estats.write_tc,
            |id| {
                let n = wb.get(id).expect("candidates are buffered");
                scores(n, dims, overlap, &mut flat)
            },
            &mut unit,
        );
        #[cfg(test)]
        self.check_choice(dims, before, &unit);
        let result = self.write_unit(core, &unit);
        self.unit = unit;
        result
    }

    /// Checks a flushing choice (`unit`, with the write-control counts before it) against
    /// the reference scan of the whole write buffer ([`flushing`]).
    #[cfg(test)]
    fn check_choice(&self, dims: usize, before: WriteTcCounts, unit: &[PageId]) {
        let geometry = matches!(self.cfg.policy, FlushPolicy::Mtha | FlushPolicy::Mthao);
        let overlap = self.cfg.policy == FlushPolicy::Mthao;
        let mut flat = Vec::new();
        let all = self
            .wb
            .iter()
            .map(|(id, n)| {
                let s = if geometry {
                    scores(n, dims, overlap, &mut flat)
                } else {
                    Scores {
                        area: None,
                        overlap: None,
                    }
                };
                flushing::Candidate {
                    id,
                    mods: n.mods,
                    level: n.level,
                    stamp: n.stamp,
                    area: s.area,
                    overlap: s.overlap,
                }
            })
            .collect();
        let mut counts = before;
        let mut cands = flushing::candidates(all, &self.cfg);
        if self.cfg.tc.writes() {
            cands = flushing::filter_writes(cands, &self.write_fifo, &self.cfg, &mut counts);
        }
        assert_eq!(
            unit,
            flushing::best_unit(cands, &self.cfg),
            "flushing choice"
        );
        assert_eq!(self.estats.write_tc, counts, "write-control counts");
    }

    /// Writes the buffered nodes `ids` (sorted) and takes them out of the write buffer.
    ///
    /// Each node's merged page is built once (or taken from the merged-page cache, which
    /// it leaves) and that one copy is logged, added to the unit and, if the read buffer
    /// takes it, shared with it: no page is copied besides into the log and the unit.
    fn write_unit(&mut self, core: &mut Core, ids: &[PageId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut unit = core.unit(ids.len());
        for &id in ids {
            let node = self.unbuffer(id).ok_or_else(|| {
                Error::invalid("eFIND flush", format!("node {id} is not buffered"))
            })?;
            let base = match node.status {
                NodeStatus::Modified => Some(self.stored_page(core, id, node.level)?),
                NodeStatus::New | NodeStatus::Deleted => None,
            };
            let cached = self.merged.of(core.layout).get(id);
            self.merged.forget(id);
            let page: Arc<[u8]> = match cached {
                Some(page) => page,
                None => {
                    // (`merge_into` writes every byte: a recycled buffer will do.)
                    let mut out = core.cache.fresh_page();
                    let buf = Arc::get_mut(&mut out).expect("a fresh page is not shared");
                    node.merge_into(&core.layout, base.as_deref(), buf)?;
                    out
                }
            };
            if node.status == NodeStatus::Modified {
                // The log first: a torn in-place write must find the node's entries there.
                core.log_image(id, node.level, &page)?;
            }
            if base.as_deref() == Some(&*page) {
                self.estats.unchanged_pages_written += 1;
            }
            unit.push(id, node.level, &page);
            self.lengths.remember(id, node.len() as u32);
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
        core.write_unit(&unit, UnitDurability::Images)?;
        core.recycle_unit(unit);
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

    /// Writes every buffered node, sorted by page in groups of `flushing_unit` nodes
    /// (consecutive pages in one request), syncs the device and compacts the log.
    fn write_all(&mut self, core: &mut Core) -> Result<()> {
        let ids = self.wb.ids();
        for group in ids.chunks(self.cfg.unit) {
            self.compact_if_needed(core)?;
            self.write_unit(core, group)?;
        }
        self.compact(core)
    }
}

/// Node `n`'s flushing scores: the union area of its live versions' boxes and, if
/// `overlap`, their pairwise overlaps (`flat`: scratch space for the boxes).
fn scores(n: &BufNode, dims: usize, overlap: bool, flat: &mut Vec<f64>) -> Scores {
    flat.clear();
    for e in n.live_versions() {
        flat.extend(
            (0..2 * dims).map(|k| f64::from_le_bytes(e[8 * k..8 * k + 8].try_into().expect("8"))),
        );
    }
    if flat.is_empty() {
        return Scores {
            area: None,
            overlap: None,
        };
    }
    Scores {
        area: Some(union_area(flat, dims)),
        overlap: overlap.then(|| pairwise_overlap(flat, dims)),
    }
}

fn area(b: &[f64], dims: usize) -> f64 {
    (0..dims).map(|k| (b[dims + k] - b[k]).max(0.0)).product()
}

/// The area of the union of the boxes in `flat` (each min then max per dimension).
fn union_area(flat: &[f64], dims: usize) -> f64 {
    let mut boxes = flat.chunks_exact(2 * dims);
    let mut u = boxes.next().expect("a box").to_vec();
    for b in boxes {
        for k in 0..dims {
            u[k] = u[k].min(b[k]);
            u[dims + k] = u[dims + k].max(b[dims + k]);
        }
    }
    area(&u, dims)
}

/// The sum of the pairwise overlaps of the boxes in `flat`.
fn pairwise_overlap(flat: &[f64], dims: usize) -> f64 {
    let step = 2 * dims;
    let mut sum = 0.0;
    for (i, a) in flat.chunks_exact(step).enumerate() {
        for b in flat[(i + 1) * step..].chunks_exact(step) {
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

impl BufferPolicy for EfindPolicy {
    fn kind(&self) -> &'static str {
        "efind"
    }

    fn format(&self) -> RecordFormat {
        RecordFormat::Compact
    }

    /// Log format 1 held eFIND's postcard records, which the shared codec does not read.
    fn oldest_log_format(&self) -> u32 {
        LOG_FORMAT
    }

    fn created(&mut self, core: &mut Core) -> Result<()> {
        self.compact(core)
    }

    /// Replays the log over the header the last checkpoint saved, then compacts the log.
    fn recover(
        &mut self,
        core: &mut Core,
        operations: &[Vec<Record>],
        report: &mut RecoveryReport,
    ) -> Result<()> {
        let records = operations.concat();
        report.records_replayed = records.len() as u64;
        let layout = core.layout;
        let cache = &mut core.cache;
        let header = std::mem::take(&mut core.header);
        let replayed = log_manager::replay(
            &records,
            header,
            layout.entry_size(),
            layout.fits(),
            |id, level| {
                let page = cache.read_checked(id, level, |b| layout.verify(b, id))?;
                Ok(layout.entry_count(&page) as u32)
            },
        )?;
        core.header = replayed.header;
        self.clock = replayed.clock;
        for (id, node) in replayed.nodes {
            self.buffer(id, node);
        }
        report.buffered_nodes = self.wb.len() as u64;
        self.compact(core)
    }

    /// The node as the tree sees it: the stored page merged with buffered changes.
    fn node_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        if self.cfg.tc.reads() && self.read_fifo.back() != Some(&id) {
            if self.read_fifo.len() == self.cfg.read_tc_size {
                self.read_fifo.pop_front();
            }
            self.read_fifo.push_back(id);
        }
        let (status, lvl) = match self.wb.get(id) {
            None => return self.stored_page(core, id, level),
            Some(n) => (n.status, n.level),
        };
        let base = match status {
            NodeStatus::Modified => Some(self.stored_page(core, id, lvl)?),
            NodeStatus::New | NodeStatus::Deleted => None,
        };
        if let Some(page) = self.merged.of(core.layout).get(id) {
            return Ok(page);
        }
        let node = self.wb.get(id).expect("buffered");
        let mut out = core.cache.fresh_page();
        let page = Arc::get_mut(&mut out).expect("a fresh page is not shared");
        node.merge_into(&core.layout, base.as_deref(), page)?;
        self.merged.of(core.layout).put(id, Arc::clone(&out));
        Ok(out)
    }

    fn create(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()> {
        let es = core.layout.entry_size();
        // A reused page: whatever was stored or cached for it is stale.
        self.rb.remove(id);
        self.merged.forget(id);
        core.cache.invalidate(id);
        self.lengths.forget(id);
        let stamp = self.tick();
        core.append(Record::Alloc(id))?;
        let enc = log_manager::split_entries(&entries, es)?;
        core.append(&Record::Create {
            id,
            level,
            stamp: Some(stamp),
            entries,
        })?;
        self.buffer(id, BufNode::new_node(level, stamp, enc));
        Ok(())
    }

    fn modify(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        changes: Vec<RawChange>,
    ) -> Result<()> {
        let was_buffered = self.wb.contains(id);
        let mut node = self.take_node(core, id, level)?;
        // Nothing of a failed modification stays: check every change before applying any.
        if let Err(e) = node.validate(id, &changes, core.layout.fits()) {
            if was_buffered {
                self.buffer(id, node);
            }
            return Err(e);
        }
        for c in &changes {
            node.apply(id, c)?;
        }
        node.stamp = self.tick();
        let stamp = Some(node.stamp);
        // The merged page (if cached) gets the same changes: merging equals applying
        // them in place (see `write_buffer`).
        self.merged.modify(id, node.level, &changes);
        self.buffer(id, node);
        for change in changes {
            core.append(&Record::Change {
                id,
                level,
                stamp,
                change,
            })?;
        }
        Ok(())
    }

    fn rewrite(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()> {
        let es = core.layout.entry_size();
        let enc = log_manager::split_entries(&entries, es)?;
        self.merged.forget(id);
        let mut node = self.take_node(core, id, level)?;
        node.level = level;
        let stamp = self.tick();
        core.append(&Record::Rewrite {
            id,
            level,
            stamp: Some(stamp),
            entries,
        })?;
        node.rewrite(enc);
        node.stamp = stamp;
        self.buffer(id, node);
        Ok(())
    }

    fn delete(&mut self, core: &mut Core, id: PageId, _level: u32) -> Result<()> {
        // A deleted node needs no write: its page is freed; what was buffered or cached
        // for it goes.
        self.unbuffer(id);
        self.rb.remove(id);
        self.merged.forget(id);
        self.lengths.forget(id);
        self.read_fifo.retain(|p| *p != id);
        core.append(Record::Free(id))
    }

    fn log_meta(&mut self, core: &mut Core, meta: TreeMeta) -> Result<()> {
        core.append(Record::Meta(meta))
    }

    fn end_operation(&mut self, core: &mut Core) -> Result<()> {
        while self.wb.bytes() as u64 > self.cfg.write_bytes && !self.wb.is_empty() {
            self.compact_if_needed(core)?;
            self.flush_one(core)?;
        }
        self.compact_if_needed(core)
    }

    fn write_back(&mut self, core: &mut Core) -> Result<()> {
        self.write_all(core)
    }

    fn checkpoint(&mut self, core: &mut Core) -> Result<()> {
        self.write_all(core)
    }

    fn drop_caches(&mut self, _core: &mut Core) {
        self.merged.clear();
        self.rb.clear();
        self.read_fifo.clear();
        self.lengths.clear();
    }

    fn buffer_gauges(&self) -> BufferGauges {
        self.wb.gauges()
    }

    fn settings(&self) -> BufferSettings {
        BufferSettings {
            write_buffer: self.cfg.write_bytes,
            flushing_unit: self.cfg.unit as u64,
            flush_policy: self.cfg.policy.name().to_string(),
            ..Default::default()
        }
    }

    fn report(&self, _core: &Core) -> PolicyReport {
        policy_report(&self.efind_stats())
    }
}
