//! The LCR-tree (Lv, Li, He, Zhang: "LCR-tree: a Logging-based, Compact R-tree for flash",
//! 2011) as a policy over the buffered-store skeleton ([`crate::store::buffered`]): the
//! trees above are unchanged; only how their node changes reach the device differs
//! (architecture §6).
//!
//! * **Nodes stay in place**: a node's page is written when the node is created and when
//!   it is merged, never for a small change.
//! * **One log page per node** ([`log_page`]): a node's changes since its page was written
//!   are kept, compacted (newest version of each entry wins), on at most one log page of
//!   its own; reading a node costs at most two page reads (its page and its log page),
//!   then the buffered changes are applied. The node → log page mapping table is the
//!   policy's state ([`LcrState`]), saved in `store.json` at checkpoints (the header's
//!   opaque `policy_state`) and logged (its own `LogPage` records) in between.
//! * **Write buffer, flush-all**: changes are buffered in memory (the skeleton's logged
//!   write buffer, [`crate::store::buffered::write_buffer`]: per node its ordered changes or
//!   its image); at the end
//!   of an operation that leaves more than `write_buffer` bytes buffered, the *whole* buffer
//!   is flushed as one batch: a new node's page is written; a modified node's changes are
//!   merged with its log page into its compacted delta, written to its log page (one is
//!   allocated on the first flush of the node); a delta that no longer fits one log page
//!   **merges** the node: its page is rewritten with the changes applied and its log page
//!   freed. A deleted node's log page is freed at once.
//! * **Durability** (ours, not the paper's: the paper keeps the buffer in memory only and
//!   loses it on a crash): the skeleton's write-ahead log, as FAST logs it (the fixed
//!   record format; `Create`, `Modify`, `Rewrite`, `Free`, `Meta`, `Written` after a flush,
//!   `LogPage` for the mapping table, images of the modified nodes before a flush writes
//!   their pages). With `log_device = "uncounted"` the log is outside the device under test
//!   and never synced, which is the paper's behaviour (the buffer is lost by a crash, no log
//!   I/O is counted); the report's `store.settings.durability` says which mode ran.
//!
//! Counters of its own: [`LcrStats`] (`store.lcr.*`).

pub(crate) mod log_page;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use self::log_page::{DeltaView, Encoded, NodeDelta};
use std::collections::BTreeMap;

use super::buffered::logged::foreign_record;
use super::buffered::options::{logged_options, PolicyOptions};
use super::buffered::page::{apply_raw, page_from_entries_unsealed};
use super::buffered::placement::LogPlacement;
use super::buffered::snapshot::{self, EncodedRecords, EncodedTable};
use super::buffered::{
    policy_report, sizing, BufferPolicy, BufferedStore, Core, Logged, LoggedBuffer, LoggedPolicy,
    NodeStatus, Parts, PolicyReport, Reader, Record, RecordFormat, UnitDurability, OWN_FIRST,
};
use super::log::LogSync;
use crate::cache::KeyMap;
use crate::node::PageId;
use crate::{Error, Result};

logged_options! {
    /// The LCR-tree's options: what users write (`kind = "lcr"`, `--store-opt KEY=VALUE`), with
    /// one default per option, and what the policy is built from.
    pub struct LcrOptions {
    }
}

impl LcrOptions {
    /// A write buffer of `write_buffer` bytes, every other option at its default.
    pub fn new(write_buffer: u64) -> Self {
        LcrOptions {
            write_buffer,
            log_size: None,
            log_sync: LogSync::default(),
            log_device: LogPlacement::default(),
        }
    }
}

impl PolicyOptions for LcrOptions {
    fn name(&self) -> &'static str {
        "LCR-tree"
    }

    fn validate(&self, page_size: usize) -> Result<()> {
        let log = sizing::flush_all_log_size(self.write_buffer, self.log_size);
        sizing::check_write_buffer("LCR-tree", self.write_buffer, 1)?;
        sizing::check_log("LCR-tree", (self.write_buffer, 1), log, page_size)
    }

    fn log_pages(&self, page_size: usize) -> Result<u64> {
        let log = sizing::flush_all_log_size(self.write_buffer, self.log_size);
        Ok(log / page_size as u64)
    }

    fn label(&self) -> String {
        "LCR".into()
    }

    fn policy(&self, _page_size: usize) -> Result<Box<dyn BufferPolicy>> {
        Ok(Box::new(LcrPolicy::new(self.clone())))
    }
}

/// The LCR-tree's own counters, gauges and settings, reported as `store.lcr.*` beside the
/// shared ones (`store.buffered.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LcrStats {
    /// Log pages written by flushes (a node's compacted delta).
    pub log_page_writes: u64,
    /// Node pages written by flushes: new nodes and merged nodes.
    pub node_page_writes: u64,
    /// Nodes merged because their delta overflowed their log page.
    pub merges: u64,
    /// Log pages freed (merges, deleted nodes, deltas that became empty).
    pub log_pages_freed: u64,
    /// Log pages read by node reads (from the page cache or the device).
    pub log_page_reads: u64,
    /// The mapping table now.
    pub gauges: LcrGauges,
    /// The log page's shape.
    pub settings: LcrSettings,
}

/// The LCR-tree's levels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LcrGauges {
    /// Nodes with a log page (entries of the mapping table).
    pub log_pages: u64,
    /// Memory of the mapping table: 16 bytes (two page ids) per entry.
    pub mapping_bytes: u64,
}

/// The LCR-tree's settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LcrSettings {
    /// Changed entries one log page holds (a larger delta merges the node).
    pub log_page_slots: u64,
}

/// A node as on the device: its page, and the page with its log page's delta applied.
struct DiskNode {
    /// Its page as read, if the caller keeps it.
    base: Option<Arc<[u8]>>,
    /// Its page with its log page's delta applied (then `logged`: not shared, and not
    /// sealed: its header's fields are written but not its checksum; the caller seals it
    /// once any buffered changes are applied too), or its page itself (no log page).
    now: Arc<[u8]>,
    logged: bool,
}

/// A node's current content and its page on the device, when that was read.
struct Current {
    base: Option<Arc<[u8]>>,
    now: Arc<[u8]>,
}

/// The kind of the LCR-tree's own log record: node `id`'s log page is now `page` (none:
/// it has none).
const LOG_PAGE: u8 = OWN_FIRST;

/// The `LogPage` record of node `id`'s log page `page`.
fn log_page_record(id: PageId, page: Option<PageId>, format: RecordFormat) -> Record {
    Record::own(LOG_PAGE, format, |w| {
        w.id(id);
        w.flag(page.is_some());
        if let Some(p) = page {
            w.id(p);
        }
    })
}

/// The LCR-tree's state saved with the store header: the mapping table, node page -> its
/// log page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LcrState {
    /// Node page -> its log page.
    pub log_pages: BTreeMap<PageId, PageId>,
}

/// The LCR-tree store: the buffered-store skeleton with the LCR policy.
pub type LcrStore = BufferedStore<Logged<LcrPolicy>>;

/// The LCR-tree's flush and mapping table. See the module documentation. Its write buffer
/// and assembled nodes (CPU only: every read still reads its pages, unused; see
/// [`node_cache`](super::buffered::node_cache)) are the skeleton's `lb`.
pub struct LcrPolicy {
    stats: LcrStats,
    /// The mapping table, node page -> its log page.
    log_pages: BTreeMap<PageId, PageId>,
    /// The mapping table's `LogPage` records, encoded (kept with `log_pages`; see
    /// [`snapshot`]).
    table: EncodedTable,
    /// The mapping table hashed (kept with it): every node read looks its node up.
    lps: KeyMap<PageId>,
    /// The buffered nodes' records of the current flush-all's compactions (see
    /// [`snapshot`]).
    snap: EncodedRecords,
    /// The pages of a flush batch, one after another (reused: CPU only).
    scratch: Vec<u8>,
    /// Page, level and offset in `scratch` of each page of a flush batch.
    placed: Vec<(PageId, u32, usize)>,
}

impl LcrPolicy {
    /// The policy with options `params` (validated by the store configuration) over its
    /// write buffer, as the skeleton holds it.
    pub fn new(params: LcrOptions) -> Logged<Self> {
        let policy = LcrPolicy {
            stats: LcrStats::default(),
            log_pages: BTreeMap::new(),
            table: EncodedTable::default(),
            lps: KeyMap::default(),
            snap: EncodedRecords::default(),
            scratch: Vec::new(),
            placed: Vec::new(),
        };
        Logged::new(params.write_buffer, (), policy)
    }

    #[cfg(test)]
    /// The LCR-tree's own counters.
    pub(crate) fn lcr_stats(&self) -> LcrStats {
        self.stats
    }

    /// The mapping table, node page -> its log page.
    pub fn log_pages(&self) -> &BTreeMap<PageId, PageId> {
        &self.log_pages
    }

    /// Node `id` as on the device: its page (kept if `keep`) and, if it has a log
    /// page, the page with its delta applied, its checksum not yet computed (see
    /// [`DiskNode::now`]). A page not kept, that nobody else holds (the page cache did not
    /// keep it), is edited in place instead of copied.
    fn disk_node(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        keep: bool,
    ) -> Result<DiskNode> {
        let layout = core.layout;
        let mut base = core
            .cache
            .read_checked(id, level, |b| layout.verify(b, id))?;
        let Some(lp) = self.lps.get(&id).copied() else {
            return Ok(DiskNode {
                base: keep.then(|| Arc::clone(&base)),
                now: base,
                logged: false,
            });
        };
        let es = layout.entry_size();
        let raw = core
            .cache
            .read_checked_ref(lp, level, |b| NodeDelta::verify(b, lp, id, es))?;
        let delta = DeltaView::of_verified(raw, lp, id, es)?;
        self.stats.log_page_reads += 1;
        let (base, mut now) = match keep || Arc::get_mut(&mut base).is_none() {
            true => {
                let copy: Arc<[u8]> = Arc::from(&base[..]);
                (keep.then_some(base), copy)
            }
            false => (None, base),
        };
        let page = Arc::get_mut(&mut now).expect("a new copy or an unshared page");
        delta.apply_unsealed(&layout, id, level, page)?;
        Ok(DiskNode {
            base,
            now,
            logged: true,
        })
    }

    /// The current content of node `id` and its page on the device, when it was read
    /// (always when `need_base` and the node is not new): from the cache of assembled
    /// nodes after the same page reads ([`Self::read_pages`]), or assembled (and cached).
    fn current(
        &mut self,
        lb: &mut LoggedBuffer,
        core: &mut Core,
        id: PageId,
        level: u32,
        need_base: bool,
    ) -> Result<Current> {
        if let Some(now) = lb.nodes.of(core.layout).get(id) {
            let base = self.read_pages(lb, core, id, level, need_base)?;
            return Ok(Current { base, now });
        }
        let c = self.assemble(lb, core, id, level, need_base)?;
        lb.nodes.of(core.layout).put(id, Arc::clone(&c.now));
        Ok(c)
    }

    /// [`Self::current`] assembled from the pages and the buffer.
    fn assemble(
        &mut self,
        lb: &LoggedBuffer,
        core: &mut Core,
        id: PageId,
        level: u32,
        need_base: bool,
    ) -> Result<Current> {
        let layout = core.layout;
        let Some(n) = lb.buf.live(id)? else {
            let d = self.disk_node(core, id, level, need_base)?;
            let mut now = d.now;
            if d.logged {
                layout.seal(Arc::get_mut(&mut now).expect("not shared"));
            }
            return Ok(Current { base: d.base, now });
        };
        let (base, count, mut now) = match &n.image {
            Some(entries) => {
                let mut now: Arc<[u8]> = std::iter::repeat_n(0u8, layout.page_size()).collect();
                let page = Arc::get_mut(&mut now).expect("not shared");
                page_from_entries_unsealed(&layout, id, n.level, entries, page)?;
                let base = match n.status {
                    NodeStatus::Modified if need_base => Some(core.cache.read_checked(
                        id,
                        level,
                        |b| layout.verify(b, id),
                    )?),
                    _ => None,
                };
                (base, entries.len() / layout.entry_size(), now)
            }
            None => {
                let d = self.disk_node(core, id, level, need_base)?;
                let mut now = d.now;
                if Arc::get_mut(&mut now).is_none() {
                    // Its page, kept by the caller or the page cache: edit a copy.
                    now = Arc::from(&now[..]);
                }
                let count = layout.entry_count(&now);
                (d.base, count, now)
            }
        };
        let page = Arc::get_mut(&mut now).expect("not shared");
        apply_raw(&layout, id, page, n.level, count, &n.changes)?;
        Ok(Current { base, now })
    }

    /// The page reads (through the page cache, counted) that [`Self::current`] issues for
    /// node `id`, and the node's page if `need_base` and they read it: a node buffered with
    /// its whole content reads its page only if `need_base` and it is modified, any other
    /// its page and its log page if it has one. A deleted node is an error, as there. The
    /// assembled node is cached, so the bytes of the pages not returned are not used: they
    /// are read as [`PageCache::read_unused`](crate::cache::PageCache::read_unused) reads.
    fn read_pages(
        &mut self,
        lb: &LoggedBuffer,
        core: &mut Core,
        id: PageId,
        level: u32,
        need_base: bool,
    ) -> Result<Option<Arc<[u8]>>> {
        let layout = core.layout;
        if let Some(n) = lb.buf.live(id)? {
            if n.image.is_some() {
                if n.status == NodeStatus::Modified && need_base {
                    let base = core
                        .cache
                        .read_checked(id, level, |b| layout.verify(b, id))?;
                    return Ok(Some(base));
                }
                return Ok(None);
            }
        }
        let verify = |b: &[u8]| layout.verify(b, id);
        let base = match need_base {
            true => Some(core.cache.read_checked(id, level, verify)?),
            false => {
                core.cache.read_unused(id, level, verify)?;
                None
            }
        };
        if let Some(lp) = self.lps.get(&id).copied() {
            let es = layout.entry_size();
            core.cache
                .read_unused(lp, level, |b| NodeDelta::verify(b, lp, id, es))?;
            self.stats.log_page_reads += 1;
        }
        Ok(base)
    }

    /// Frees node `id`'s log page, if it has one (logged).
    fn drop_log_page(&mut self, core: &mut Core, id: PageId) -> Result<()> {
        if let Some(lp) = self.log_pages.remove(&id) {
            self.table.set(id, None);
            self.lps.remove(&id);
            core.append(log_page_record(id, None, core.format))?;
            core.cache.invalidate(lp);
            core.header.free.push(lp);
            self.stats.log_pages_freed += 1;
        }
        Ok(())
    }

    /// Node `id`'s log page: the one it has, or one allocated now (logged).
    fn log_page(&mut self, core: &mut Core, id: PageId) -> Result<PageId> {
        if let Some(lp) = self.lps.get(&id).copied() {
            return Ok(lp);
        }
        let lp = core.allocate()?;
        self.log_pages.insert(id, lp);
        self.lps.insert(id, lp);
        let rec = log_page_record(id, Some(lp), core.format);
        core.append(&rec)?;
        self.table.set(id, Some(rec.encode(core.format)?));
        Ok(lp)
    }

    /// The mapping table's records.
    fn table_records(&self, format: RecordFormat) -> impl Iterator<Item = (PageId, Record)> + '_ {
        let rec = move |(&id, &lp)| (id, log_page_record(id, Some(lp), format));
        self.log_pages.iter().map(rec)
    }

    /// Adds a page of `ps` bytes to the flush batch: page `id` at `level` (its content
    /// written by the caller into the returned bytes).
    fn add_page(&mut self, id: PageId, level: u32, ps: usize) -> &mut [u8] {
        let at = self.scratch.len();
        self.scratch.resize(at + ps, 0);
        self.placed.push((id, level, at));
        &mut self.scratch[at..]
    }

    /// Flushes the whole buffer. See the module documentation. The nodes are written in
    /// page order in batches whose logged images reach at most half the write buffer
    /// (each batch one `write_unit`, counted as a flush), compacting the log between
    /// batches when it is half full: the images of a flush-all are not bounded by the
    /// buffer's bytes (a buffered change of a few bytes logs its node's whole page).
    fn flush_batches(&mut self, lb: &mut LoggedBuffer, core: &mut Core) -> Result<()> {
        let members: Vec<(PageId, NodeStatus, u32)> = lb
            .buf
            .iter()
            .map(|(id, n)| (id, n.status, n.level))
            .collect();
        let cap = (lb.capacity / 2).max(1);
        let ps = core.layout.page_size();
        // The records of the nodes still buffered, encoded at the first compaction (see
        // [`snapshot`]).
        let mut snapped = false;
        let mut start = 0;
        while start < members.len() {
            let images_before = core.counts.image_bytes;
            self.scratch.clear();
            self.placed.clear();
            let mut end = start;
            while end < members.len() && core.counts.image_bytes - images_before < cap {
                let (id, status, level) = members[end];
                self.flush_node(lb, core, id, status, level)?;
                end += 1;
            }
            self.placed.sort_by_key(|p| p.0);
            let mut unit = core.unit(self.placed.len());
            for &(id, level, at) in &self.placed {
                unit.push(id, level, &self.scratch[at..at + ps]);
            }
            let batch: Vec<PageId> = members[start..end].iter().map(|m| m.0).collect();
            core.write_unit(&unit, UnitDurability::WrittenRecord { members: batch })?;
            core.recycle_unit(unit);
            for (id, _, _) in &members[start..end] {
                lb.buf.remove(*id);
            }
            if core.log.needs_compaction() {
                if !snapped {
                    self.snap.set(lb.buf.snapshot(), core.format)?;
                    snapped = true;
                }
                // The nodes still buffered are those after this batch.
                let first = members.get(end).map(|m| m.0);
                self.check_snapshot(lb, core, first);
                let nodes = self.snap.payloads_from(first);
                snapshot::compact(core, self.table.payloads(), nodes)?;
            }
            start = end;
        }
        Ok(())
    }

    /// Adds what flushing node `id` writes to the batch ([`Self::placed`]): a new node's
    /// page; a modified node's log page with its delta, or its merged page (logging its
    /// image first).
    fn flush_node(
        &mut self,
        lb: &mut LoggedBuffer,
        core: &mut Core,
        id: PageId,
        status: NodeStatus,
        level: u32,
    ) -> Result<()> {
        if status == NodeStatus::Deleted {
            return Ok(());
        }
        let layout = core.layout;
        let ps = layout.page_size();
        let Current { base, now: cur } = self.current(lb, core, id, level, true)?;
        let Some(base) = base.filter(|_| status == NodeStatus::Modified) else {
            self.add_page(id, level, ps).copy_from_slice(&cur);
            self.stats.node_page_writes += 1;
            return Ok(());
        };
        // Its page or log page is rewritten in place: log its content first.
        core.log_image(id, level, &cur)?;
        // The delta is encoded where its log page goes in the batch (the page id is
        // filled in once the delta is known to fit).
        let page = self.add_page(id, level, ps);
        match log_page::encode_between(&layout, &base, &cur, id, level, page) {
            Encoded::Written => {
                let lp = self.log_page(core, id)?;
                self.placed.last_mut().expect("just added").0 = lp;
                self.stats.log_page_writes += 1;
            }
            Encoded::Empty => {
                self.drop_last_page();
                self.drop_log_page(core, id)?;
            }
            Encoded::Overflows => {
                // Merged: its page with the changes applied (Lv et al. 2011, section 3).
                self.drop_last_page();
                self.drop_log_page(core, id)?;
                self.add_page(id, level, ps).copy_from_slice(&cur);
                self.stats.node_page_writes += 1;
                self.stats.merges += 1;
            }
        }
        Ok(())
    }

    /// Takes the last page added ([`Self::add_page`]) out of the batch.
    fn drop_last_page(&mut self) {
        if let Some((_, _, at)) = self.placed.pop() {
            self.scratch.truncate(at);
        }
    }

    /// Checks (in debug builds) that the snapshot a compaction writes from the encoded
    /// table and the nodes' records from node `first` on is the one encoded from scratch:
    /// the mapping table and the buffer's records.
    fn check_snapshot(&self, lb: &LoggedBuffer, core: &Core, first: Option<PageId>) {
        if cfg!(debug_assertions) {
            let mut records: Vec<Record> =
                self.table_records(core.format).map(|(_, r)| r).collect();
            records.extend(lb.buf.snapshot_records());
            let cached = self.table.payloads().chain(self.snap.payloads_from(first));
            snapshot::assert_encodes(&records, core.format, cached);
            let lps = self.log_pages.iter().map(|(&k, &v)| (k, v)).collect();
            assert!(self.lps == lps, "the hashed mapping table went out of step");
        }
    }
}

impl LoggedPolicy for LcrPolicy {
    fn own_pages(&self) -> Vec<(PageId, &'static str)> {
        self.log_pages
            .values()
            .map(|p| (*p, "an LCR-tree log page"))
            .collect()
    }

    const KIND: &'static str = "lcr";
    const NAME: &'static str = "LCR-tree";
    /// The LCR-tree's records exist since log format 2.
    const OLDEST_LOG_FORMAT: u32 = 2;
    type Watch = ();

    /// A log page holds at least one changed entry.
    fn min_page_size(&self, entry_size: usize) -> Option<(usize, &'static str)> {
        Some((log_page::min_page_size(entry_size), "log page"))
    }

    /// The node's assembled page from the cache of assembled nodes after the page reads
    /// its assembly issues, or assembled (and cached).
    fn node_page(&mut self, cx: Parts<'_>, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        self.current(cx.lb, cx.core, id, level, false)
            .map(|c| c.now)
    }

    /// The node's log page is freed first: recovery frees pages in the order freed here.
    fn before_delete(&mut self, core: &mut Core, id: PageId) -> Result<()> {
        self.drop_log_page(core, id)
    }

    fn flush_all(&mut self, cx: Parts<'_>) -> Result<()> {
        self.flush_batches(cx.lb, cx.core)
    }

    /// Rewrites the log as a snapshot: allocation and metadata, the mapping table, the
    /// buffered nodes (as [`Core::compact_log`] would from those records).
    fn compact_log(&mut self, cx: Parts<'_>) -> Result<()> {
        let Parts { core, lb } = cx;
        self.snap.set(lb.buf.snapshot(), core.format)?;
        self.check_snapshot(lb, core, Some(0));
        snapshot::compact(
            core,
            self.table.payloads(),
            self.snap.payloads_from(Some(0)),
        )
    }

    /// Starts from the mapping table the header holds.
    fn begin_recovery(&mut self, core: &mut Core) -> Result<()> {
        let state: LcrState = core.policy_state(Self::NAME)?;
        self.log_pages = state.log_pages;
        Ok(())
    }

    fn snapshot_replayed(&mut self, _core: &mut Core) {
        self.log_pages.clear();
    }

    /// Replays the mapping table's `LogPage` records.
    fn replay_own(&mut self, core: &mut Core, record: Record) -> Result<()> {
        let read = |r: &mut Reader<'_>| {
            let id = r.id()?;
            Ok((id, if r.flag()? { Some(r.id()?) } else { None }))
        };
        let Some(decoded) = record.read_own(LOG_PAGE, core.format, read) else {
            return Err(foreign_record(Self::NAME, &record));
        };
        match decoded? {
            (id, Some(lp)) => {
                core.header.replay_allocate(lp);
                self.log_pages.insert(id, lp);
            }
            (id, None) => {
                let lp = self.log_pages.remove(&id).ok_or_else(|| {
                    Error::corrupted(
                        "LCR-tree log",
                        format!("frees the log page of node {id}, which has none"),
                    )
                })?;
                core.header.free.push(lp);
            }
        }
        Ok(())
    }

    /// Rebuilds the encoded and hashed copies of the recovered mapping table.
    fn recovered(&mut self, core: &mut Core) -> Result<()> {
        self.table = EncodedTable::of(self.table_records(core.format), core.format)?;
        self.lps = self.log_pages.iter().map(|(&k, &v)| (k, v)).collect();
        Ok(())
    }

    fn saved_state(&self) -> Option<serde_json::Value> {
        let state = LcrState {
            log_pages: self.log_pages.clone(),
        };
        (!state.log_pages.is_empty()).then(|| serde_json::to_value(state).ok())?
    }

    fn own_report(&self, core: &Core) -> PolicyReport {
        let n = self.log_pages.len() as u64;
        let slots = log_page::capacity(core.layout.page_size(), core.layout.entry_size());
        policy_report(&LcrStats {
            gauges: LcrGauges {
                log_pages: n,
                mapping_bytes: 16 * n,
            },
            settings: LcrSettings {
                log_page_slots: slots as u64,
            },
            ..self.stats
        })
    }
}

#[cfg(test)]
pub(super) mod tests;
