//! RFTL (Wu, Chang, Kuo: "An efficient R-tree implementation over flash-memory storage
//! systems", ACM GIS 2003) as a policy over the buffered-store skeleton
//! ([`crate::store::buffered`]): the trees above are unchanged; only how their node changes
//! reach the device differs (architecture §6).
//!
//! * **Index units** ([`unit_page`]): every entry-level change the trees make (set, push or
//!   remove an entry; a node created or rewritten: its whole content) is one *index unit*
//!   of one node. Units are held in a **reservation buffer** in memory (the skeleton's
//!   logged write buffer, [`crate::store::buffered::write_buffer`]: a node's ordered
//!   changes, or its full entry list; bytes counted as FAST counts them).
//! * **Flush-all**: at the end of an operation that leaves more than `write_buffer` bytes
//!   buffered, the *whole* buffer is flushed: every buffered node's units are packed into
//!   **new unit pages** (a page holds units of several nodes; a node's units of one flush
//!   share one page, first fit, unless they need more than a page), written in page order
//!   with one request per run of consecutive pages. Pages are never rewritten in place.
//! * **Node translation table** ([`mapping`]): node -> the pages holding its units, in the
//!   order written. **Reading a node assembles it** from its units on all those pages (one
//!   read per page, in order; a reset starts it, later units win), then applies what is
//!   still buffered.
//! * **Compaction**: a flush that would leave a node's units on more than `max_pages` pages
//!   writes the node's current content instead, as one fresh unit set (a reset), and the
//!   units of the node on its old pages become garbage. A page's units belong to several
//!   nodes, so live units are counted per page; a page whose units are all dead is freed
//!   (also when a node is deleted or rewritten).
//! * **Node ids**: trees address nodes by page id, so a node's id is allocated from the
//!   page space as in every store; in RFTL that page is never written (a node lives only in
//!   its units), so `store.gauges.pages_in_use` counts node ids and unit pages
//!   (`store.rftl.gauges.unit_pages`).
//! * **Durability** (ours, not the paper's: the paper keeps the reservation buffer in
//!   memory and loses it on a crash): the skeleton's write-ahead log, as FAST logs it
//!   (the fixed record format: `Create`, `Modify`, `Rewrite`, `Free`, `Meta`, `Written`
//!   after a flush) plus its own `UnitPages` records for the translation table, which is
//!   also saved with the header (`store.json`'s opaque `policy_state`) at checkpoints. Unit pages are written out of place, so
//!   no images are logged; before a flush writes pages the log is made durable (pages
//!   freed by earlier operations are reused only once their freeing is durable), and the
//!   flush's table changes commit with its `Written` record after its pages are written
//!   (and synced). With `log_device = "uncounted"` the log is outside the device under test
//!   and never synced: the paper's behaviour (the buffer is lost by a crash, no log I/O is
//!   counted); `store.settings.durability` says which mode ran.
//!
//! Counters of its own: [`RftlStats`] (`store.rftl.*`).

pub(crate) mod mapping;
pub(crate) mod unit_page;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use self::mapping::LiveUnits;
use self::unit_page::{IndexUnit, PageAssembly};
use super::buffered::logged::foreign_record;
use super::buffered::options::{logged_options, PolicyOptions};
use super::buffered::page::{apply_raw, page_from_entries_unsealed};
use super::buffered::placement::LogPlacement;
use super::buffered::snapshot::{self, EncodedRecords, EncodedTable};
use super::buffered::write_buffer::WriteBuffer;
use super::buffered::{
    policy_report, sizing, BufferPolicy, BufferedStore, Core, Encoded, Logged, LoggedBuffer,
    LoggedPolicy, NodeStatus, Parts, PolicyReport, Reader, Record, RecordFormat, UnitDurability,
    OWN_FIRST,
};
use super::log::LogSync;
use crate::node::PageId;
use crate::{Error, Result};

logged_options! {
    /// RFTL's options: what users write (`kind = "rftl"`, `--store-opt KEY=VALUE`), with one
    /// default per option, and what the policy is built from. Its `write_buffer` is the
    /// paper's reservation buffer.
    pub struct RftlOptions {
        /// Most unit pages a node may span before a flush compacts it (default
        /// [`RftlOptions::DEFAULT_MAX_PAGES`]).
        #[serde(default = "RftlOptions::default_max_pages")]
        pub max_pages: u32,
    }
}

impl RftlOptions {
    /// The compaction threshold used when none is given: 4 pages per node, the bound on
    /// the lengths of the node translation table's lists in the evaluation of BFTL, RFTL's
    /// B-tree twin by the same authors (the RFTL paper's own text was not available to us).
    pub const DEFAULT_MAX_PAGES: u32 = 4;

    fn default_max_pages() -> u32 {
        Self::DEFAULT_MAX_PAGES
    }

    /// A reservation buffer of `write_buffer` bytes, every other option at its default.
    pub fn new(write_buffer: u64) -> Self {
        RftlOptions {
            write_buffer,
            max_pages: Self::DEFAULT_MAX_PAGES,
            log_size: None,
            log_sync: LogSync::default(),
            log_device: LogPlacement::default(),
        }
    }
}

impl PolicyOptions for RftlOptions {
    fn name(&self) -> &'static str {
        "RFTL"
    }

    fn validate(&self, page_size: usize) -> Result<()> {
        if self.max_pages == 0 {
            return Err(Error::invalid(
                "RFTL max_pages",
                "0 pages; a node's units span at least 1 page (default 4)",
            ));
        }
        let log = sizing::flush_all_log_size(self.write_buffer, self.log_size);
        sizing::check_write_buffer("RFTL", self.write_buffer, page_size as u64)?;
        sizing::check_log("RFTL", (self.write_buffer, 1), log, page_size)
    }

    fn log_pages(&self, page_size: usize) -> Result<u64> {
        let log = sizing::flush_all_log_size(self.write_buffer, self.log_size);
        Ok(log / page_size as u64)
    }

    fn label(&self) -> String {
        match self.max_pages {
            Self::DEFAULT_MAX_PAGES => "RFTL".into(),
            n => format!("RFTL(max_pages={n})"),
        }
    }

    fn policy(&self, _page_size: usize) -> Result<Box<dyn BufferPolicy>> {
        Ok(Box::new(RftlPolicy::new(self.clone())))
    }
}

/// RFTL's own counters, gauges and settings, reported as `store.rftl.*` beside the shared
/// ones (`store.buffered.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RftlStats {
    /// Unit pages written by flushes.
    pub unit_pages_written: u64,
    /// Index units written by flushes.
    pub units_written: u64,
    /// Bytes of those units (page headers and unused page tails excluded).
    pub unit_bytes_written: u64,
    /// Nodes compacted: their current content written as one unit set because their units
    /// would have spanned more than `max_pages` pages.
    pub compactions: u64,
    /// Unit pages freed because none of their units was live any more.
    pub unit_pages_freed: u64,
    /// Unit pages read to assemble nodes (from the page cache or the device).
    pub unit_page_reads: u64,
    /// Nodes assembled from their unit pages (node reads and compactions not served by the
    /// buffer alone).
    pub nodes_assembled: u64,
    /// The translation table and unit pages now.
    pub gauges: RftlGauges,
    /// The options behind the numbers.
    pub settings: RftlSettings,
}

/// RFTL's levels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RftlGauges {
    /// Pages holding live units.
    pub unit_pages: u64,
    /// Live units on them.
    pub live_units: u64,
    /// Nodes in the node translation table.
    pub mapped_nodes: u64,
    /// Memory of the table: 8 bytes per node plus 12 per (page, units) pair.
    pub mapping_bytes: u64,
    /// Most pages any node's units span.
    pub max_node_pages: u64,
}

/// RFTL's settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RftlSettings {
    /// The compaction threshold (pages per node).
    pub max_pages: u64,
    /// Bytes of units a page holds.
    pub unit_page_bytes: u64,
}

/// The kind of RFTL's own log record: node `id`'s index units are on these pages (in the
/// order written, each with the number of the node's units on it; none: the node has
/// none).
const UNIT_PAGES: u8 = OWN_FIRST + 1;

/// The `UnitPages` record of node `id`'s unit pages `pages`.
fn unit_pages_record(id: PageId, pages: &[(PageId, u32)], format: RecordFormat) -> Record {
    Record::own(UNIT_PAGES, format, |w| {
        w.id(id);
        w.len(pages.len());
        for (p, n) in pages {
            w.id(*p);
            w.small(*n);
        }
    })
}

/// The error for node `id`, which the translation table does not list.
fn unlisted(id: PageId) -> Error {
    let what = "the node translation table names no unit page for it";
    Error::corrupted(format!("RFTL node {id}"), what)
}

/// The RFTL store: the buffered-store skeleton with the RFTL policy.
pub type RftlStore = BufferedStore<Logged<RftlPolicy>>;

/// RFTL's flush, translation table and compaction. See the module documentation. Its
/// reservation buffer and assembled nodes (CPU only: every read still reads its unit pages,
/// unused; see [`node_cache`](super::buffered::node_cache)) are the skeleton's `lb`. A
/// node's content changes only through the tree (create, modify, rewrite, delete: each
/// keeps the cache exact); flushes and compactions move it to other unit pages without
/// changing it, so a cached node stays valid across them (its reads follow the table's list
/// of the time).
pub struct RftlPolicy {
    params: RftlOptions,
    live: LiveUnits,
    stats: RftlStats,
    /// The translation table's `UnitPages` records, encoded (kept with the table in
    /// `live`; see [`snapshot`](super::buffered::snapshot)).
    table: EncodedTable,
    /// The buffered nodes' records of a compaction (reused: CPU only).
    snap: EncodedRecords,
    /// The unit pages of a flush (reused: CPU only; fresh memory per flush was
    /// page-faulted in each time).
    packing: Packing,
    /// Where a flush put each node's units (reused, as `packing`).
    placed: Vec<Placed>,
}

/// What one node's flush writes: its units, cut into page-sized chunks.
struct Batch {
    id: PageId,
    chunks: Vec<Vec<IndexUnit>>,
    /// The units start with the node's whole content: its old pages' units are dead.
    replace: bool,
}

/// Where a flush put one node's units.
struct Placed {
    id: PageId,
    /// See [`Batch::replace`].
    replace: bool,
    /// Pages (indices into the [`Packing`]) and the node's units on each, in order.
    at: Vec<(usize, u32)>,
}

/// Unit pages being filled by a flush.
#[derive(Default)]
struct Packing {
    /// Units of each page, with their nodes (the first [`len`](Self::len) in use; the
    /// rest are empty, kept for their memory).
    pages: Vec<Vec<(PageId, IndexUnit)>>,
    /// Bytes left on each page.
    left: Vec<usize>,
    /// Highest level of a node on each page (the page cache's level hint).
    levels: Vec<u32>,
}

impl Packing {
    /// Pages in use.
    fn len(&self) -> usize {
        self.left.len()
    }

    /// No pages in use (their vectors kept, emptied).
    fn clear(&mut self) {
        for p in &mut self.pages {
            p.clear();
        }
        self.left.clear();
        self.levels.clear();
    }

    /// Places `chunk` of node `id` at `level` on a page: the first one with room if
    /// `first_fit`, else a new one; returns the page's index.
    fn place(
        &mut self,
        id: PageId,
        level: u32,
        chunk: Vec<IndexUnit>,
        room: usize,
        first_fit: bool,
    ) -> usize {
        let size: usize = chunk.iter().map(IndexUnit::size).sum();
        let fit = match first_fit {
            true => self.left.iter().position(|l| *l >= size),
            false => None,
        };
        let at = match fit {
            Some(i) => i,
            None => {
                let i = self.len();
                if i == self.pages.len() {
                    self.pages.push(Vec::new());
                }
                self.left.push(room);
                self.levels.push(level);
                i
            }
        };
        self.left[at] -= size;
        self.levels[at] = self.levels[at].max(level);
        self.pages[at].extend(chunk.into_iter().map(|u| (id, u)));
        at
    }
}

impl RftlPolicy {
    /// The policy with options `params` (validated by the store configuration) over its
    /// reservation buffer, as the skeleton holds it.
    pub fn new(params: RftlOptions) -> Logged<Self> {
        let capacity = params.write_buffer;
        let policy = RftlPolicy {
            params,
            live: LiveUnits::default(),
            stats: RftlStats::default(),
            table: EncodedTable::default(),
            snap: EncodedRecords::default(),
            packing: Packing::default(),
            placed: Vec::new(),
        };
        Logged::new(capacity, (), policy)
    }

    #[cfg(test)]
    /// RFTL's own counters (gauges and settings are filled in by the report).
    pub(crate) fn rftl_stats(&self) -> RftlStats {
        self.stats
    }

    /// Live units per unit page.
    pub fn live_units(&self) -> &LiveUnits {
        &self.live
    }

    /// Node `id` assembled from its units on the pages the translation table names, into
    /// `page` (a node page's worth of bytes), sealed.
    fn disk_node(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        page: &mut [u8],
    ) -> Result<()> {
        let layout = core.layout;
        let es = layout.entry_size();
        let pages = self.live.pages_of(id).ok_or_else(|| unlisted(id))?;
        let mut a = PageAssembly::new(page);
        for &(p, n) in pages {
            let mut units = Vec::with_capacity(n as usize);
            let raw = core
                .cache
                .read_checked_ref(p, level, |b| unit_page::verify(b, p))?;
            unit_page::units_in(raw, p, id, es, &mut units)?;
            if units.len() != n as usize {
                return Err(Error::corrupted(
                    format!("RFTL unit page {p}"),
                    format!(
                        "holds {} units of node {id}; the table says {n}",
                        units.len()
                    ),
                ));
            }
            self.stats.unit_page_reads += 1;
            for u in units {
                a.apply(&layout, id, u)?;
            }
        }
        self.stats.nodes_assembled += 1;
        a.finish(&layout, id).map(|_| ())
    }

    /// The current content of node `id`: its buffered image or its assembled units, with
    /// its buffered changes applied.
    fn current(
        &mut self,
        lb: &LoggedBuffer,
        core: &mut Core,
        id: PageId,
        level: u32,
    ) -> Result<Arc<[u8]>> {
        let layout = core.layout;
        let mut now: Arc<[u8]> = std::iter::repeat_n(0u8, layout.page_size()).collect();
        let page = Arc::get_mut(&mut now).expect("a new page is not shared");
        let Some(n) = lb.buf.live(id)? else {
            self.disk_node(core, id, level, page)?;
            return Ok(now);
        };
        match &n.image {
            Some(entries) => page_from_entries_unsealed(&layout, id, n.level, entries, page)?,
            None => self.disk_node(core, id, level, page)?,
        }
        let count = layout.entry_count(page);
        apply_raw(&layout, id, page, n.level, count, &n.changes)?;
        Ok(now)
    }

    /// The current content of node `id` as [`current`](Self::current) gives it, from the
    /// cache of assembled nodes when it holds the node: then the unit page reads (and
    /// counts) of the assembly are issued just the same ([`read_listed`](Self::read_listed)).
    fn cached_current(
        &mut self,
        lb: &mut LoggedBuffer,
        core: &mut Core,
        id: PageId,
        level: u32,
    ) -> Result<Arc<[u8]>> {
        if let Some(page) = lb.nodes.of(core.layout).get(id) {
            self.read_listed(&lb.buf, core, id, level)?;
            return Ok(page);
        }
        let page = self.current(lb, core, id, level)?;
        lb.nodes.of(core.layout).put(id, Arc::clone(&page));
        Ok(page)
    }

    /// The page reads (through the page cache, counted) that assembling node `id` issues,
    /// for a node already assembled (so their bytes are not used: read as
    /// [`PageCache::read_unused`](crate::cache::PageCache::read_unused) reads): none for a
    /// node buffered with its whole content, else each page of its list in the translation
    /// table. A deleted node is an error, as for an assembly.
    fn read_listed(
        &mut self,
        buf: &WriteBuffer,
        core: &mut Core,
        id: PageId,
        level: u32,
    ) -> Result<()> {
        if let Some(n) = buf.live(id)? {
            if n.image.is_some() {
                return Ok(());
            }
        }
        let pages = self.live.pages_of(id).ok_or_else(|| unlisted(id))?;
        for &(p, _) in pages {
            core.cache
                .read_unused(p, level, |b| unit_page::verify(b, p))?;
            self.stats.unit_page_reads += 1;
        }
        self.stats.nodes_assembled += 1;
        Ok(())
    }

    /// What flushing buffered node `id` writes (`None`: nothing): its units, or its
    /// current content if they would leave it on more than `max_pages` pages.
    fn batch(
        &mut self,
        lb: &mut LoggedBuffer,
        core: &mut Core,
        id: PageId,
        level: u32,
    ) -> Result<Option<Batch>> {
        let layout = core.layout;
        let (room, es) = (unit_page::capacity(layout.page_size()), layout.entry_size());
        let n = lb.buf.get(id).expect("a buffered node");
        if n.status == NodeStatus::Deleted {
            return Ok(None);
        }
        let mut units = Vec::with_capacity(n.changes.len() + 1);
        if let Some(entries) = &n.image {
            units.push(IndexUnit::Reset {
                level: n.level,
                entries: entries.clone(),
            });
        }
        units.extend(n.changes.iter().cloned().map(IndexUnit::Change));
        if units.is_empty() {
            return Ok(None);
        }
        let replace = n.image.is_some();
        let only_content = replace && n.changes.is_empty();
        let node_level = n.level;
        let chunks = unit_page::split(units, room, es);
        // Pages the node keeps: none if its units start with its whole content.
        let kept = match replace {
            true => 0,
            false => self.live.pages_of(id).map_or(0, Vec::len),
        };
        if only_content || kept + chunks.len() <= self.params.max_pages as usize {
            return Ok(Some(Batch {
                id,
                chunks,
                replace,
            }));
        }
        // Compaction: the node's current content as one fresh unit set.
        let page = self.cached_current(lb, core, id, level)?;
        let count = layout.entry_count(&page);
        let entries = page[layout.entry_offset(0)..layout.entry_offset(count)].to_vec();
        self.stats.compactions += 1;
        let reset = IndexUnit::Reset {
            level: node_level,
            entries,
        };
        Ok(Some(Batch {
            id,
            chunks: unit_page::split(vec![reset], room, es),
            replace: true,
        }))
    }

    /// Flushes the whole buffer as new unit pages. See the module documentation.
    fn flush_to_unit_pages(&mut self, lb: &mut LoggedBuffer, core: &mut Core) -> Result<()> {
        if lb.buf.is_empty() {
            return Ok(());
        }
        if core.log.needs_compaction() {
            // Room for the flush's records in the log.
            self.compact_log(Parts { core, lb })?;
        }
        // Pages freed by earlier operations are reused below: their freeing must be durable
        // before they are overwritten.
        core.make_log_durable()?;
        let members: Vec<(PageId, u32)> = lb.buf.iter().map(|(id, n)| (id, n.level)).collect();
        let ps = core.layout.page_size();
        let room = unit_page::capacity(ps);
        let mut packing = std::mem::take(&mut self.packing);
        packing.clear();
        let mut placed = std::mem::take(&mut self.placed);
        placed.clear();
        for &(id, level) in &members {
            let Some(b) = self.batch(lb, core, id, level)? else {
                continue;
            };
            let first_fit = b.chunks.len() == 1;
            let mut at = Vec::with_capacity(b.chunks.len());
            for chunk in b.chunks {
                let n = chunk.len() as u32;
                self.stats.units_written += u64::from(n);
                self.stats.unit_bytes_written +=
                    chunk.iter().map(IndexUnit::size).sum::<usize>() as u64;
                at.push((packing.place(b.id, level, chunk, room, first_fit), n));
            }
            placed.push(Placed {
                id: b.id,
                replace: b.replace,
                at,
            });
        }
        // Every page is allocated before any is freed below, so no page this flush writes
        // was named by the table a crash would recover.
        let ids = (0..packing.len())
            .map(|_| core.allocate())
            .collect::<Result<Vec<PageId>>>()?;
        for Placed { id, replace, at } in placed.drain(..) {
            let mut pages = match (replace, self.live.pages_of(id)) {
                (false, Some(old)) => old.clone(),
                _ => Vec::new(),
            };
            pages.extend(at.into_iter().map(|(i, n)| (ids[i], n)));
            self.set_pages(core, id, pages)?;
        }
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i]);
        let mut unit = core.unit(ids.len());
        let mut page = vec![0u8; ps];
        for i in order {
            unit_page::encode(&packing.pages[i], &mut page);
            unit.push(ids[i], packing.levels[i], &page);
        }
        self.stats.unit_pages_written += ids.len() as u64;
        let members: Vec<PageId> = members.iter().map(|m| m.0).collect();
        core.write_unit(
            &unit,
            UnitDurability::WrittenRecord {
                members: members.clone(),
            },
        )?;
        core.recycle_unit(unit);
        for id in members {
            lb.buf.remove(id);
        }
        packing.clear();
        self.packing = packing;
        self.placed = placed;
        Ok(())
    }

    /// Sets node `id`'s unit pages in the table (logged: a `UnitPages` record), freeing
    /// pages left without live units.
    fn set_pages(&mut self, core: &mut Core, id: PageId, pages: Vec<(PageId, u32)>) -> Result<()> {
        // Encoded once, for the log and the kept table.
        let encoded = unit_pages_record(id, &pages, core.format).encode(core.format)?;
        core.append(Encoded(&encoded))?;
        self.table.set(id, (!pages.is_empty()).then_some(encoded));
        for p in self.live.set(&mut core.header.free, id, pages)? {
            core.cache.invalidate(p);
            self.stats.unit_pages_freed += 1;
        }
        Ok(())
    }

    /// The translation table's records, one per node in page order.
    fn table_records(&self, format: RecordFormat) -> impl Iterator<Item = (PageId, Record)> + '_ {
        let table = &self.live.table().unit_pages;
        table
            .iter()
            .map(move |(&id, pages)| (id, unit_pages_record(id, pages, format)))
    }
}

impl LoggedPolicy for RftlPolicy {
    fn own_pages(&self) -> Vec<(PageId, &'static str)> {
        self.live
            .unit_pages()
            .map(|p| (p, "an RFTL unit page"))
            .collect()
    }

    const KIND: &'static str = "rftl";
    const NAME: &'static str = "RFTL";
    /// RFTL's records exist since log format 2.
    const OLDEST_LOG_FORMAT: u32 = 2;
    type Watch = ();

    /// A unit page holds at least a reset of one entry.
    fn min_page_size(&self, entry_size: usize) -> Option<(usize, &'static str)> {
        Some((unit_page::min_page_size(entry_size), "unit page"))
    }

    fn node_page(&mut self, cx: Parts<'_>, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        self.cached_current(cx.lb, cx.core, id, level)
    }

    /// The node's units die at once (recovery frees pages in the order freed here).
    fn before_delete(&mut self, core: &mut Core, id: PageId) -> Result<()> {
        if self.live.pages_of(id).is_some() {
            self.set_pages(core, id, vec![])?;
        }
        Ok(())
    }

    fn flush_all(&mut self, cx: Parts<'_>) -> Result<()> {
        self.flush_to_unit_pages(cx.lb, cx.core)
    }

    /// Rewrites the log as a snapshot: allocation and metadata, the translation table, the
    /// buffered nodes (as [`Core::compact_log`] would from those records; the table's
    /// records are kept encoded, see [`snapshot`]).
    fn compact_log(&mut self, cx: Parts<'_>) -> Result<()> {
        let Parts { core, lb } = cx;
        self.snap.set(lb.buf.snapshot(), core.format)?;
        if cfg!(debug_assertions) {
            // The hashed table and live units are the ones derived from the table.
            assert!(
                self.live == LiveUnits::of(self.live.table().clone()),
                "the hashed translation table went out of step"
            );
            // The table kept encoded is the one encoded from scratch.
            let mut records: Vec<Record> = self.table_records(core.format).map(|r| r.1).collect();
            records.extend(lb.buf.snapshot_records());
            let cached = self
                .table
                .payloads()
                .chain(self.snap.payloads_from(Some(0)));
            snapshot::assert_encodes(&records, core.format, cached);
        }
        snapshot::compact(
            core,
            self.table.payloads(),
            self.snap.payloads_from(Some(0)),
        )
    }

    /// Starts from the translation table the header holds (and its live units per page).
    fn begin_recovery(&mut self, core: &mut Core) -> Result<()> {
        self.live = LiveUnits::of(core.policy_state(Self::NAME)?);
        Ok(())
    }

    fn snapshot_replayed(&mut self, _core: &mut Core) {
        self.live.clear();
    }

    /// Replays the translation table's `UnitPages` records.
    fn replay_own(&mut self, core: &mut Core, record: Record) -> Result<()> {
        let read = |r: &mut Reader<'_>| Ok((r.id()?, r.list(|r| Ok((r.id()?, r.small()?)))?));
        let Some(decoded) = record.read_own(UNIT_PAGES, core.format, read) else {
            return Err(foreign_record(Self::NAME, &record));
        };
        let (id, pages) = decoded?;
        for (p, _) in &pages {
            core.header.replay_allocate(*p);
        }
        self.live.set(&mut core.header.free, id, pages)?;
        Ok(())
    }

    /// Encodes the recovered translation table.
    fn recovered(&mut self, core: &mut Core) -> Result<()> {
        self.table = EncodedTable::of(self.table_records(core.format), core.format)?;
        Ok(())
    }

    fn saved_state(&self) -> Option<serde_json::Value> {
        let state = self.live.table();
        (!state.unit_pages.is_empty()).then(|| serde_json::to_value(state).ok())?
    }

    fn own_report(&self, core: &Core) -> PolicyReport {
        let table = &self.live.table().unit_pages;
        let pairs: usize = table.values().map(Vec::len).sum();
        policy_report(&RftlStats {
            gauges: RftlGauges {
                unit_pages: self.live.pages(),
                live_units: self.live.units(),
                mapped_nodes: table.len() as u64,
                mapping_bytes: 8 * table.len() as u64 + 12 * pairs as u64,
                max_node_pages: table.values().map(Vec::len).max().unwrap_or(0) as u64,
            },
            settings: RftlSettings {
                max_pages: u64::from(self.params.max_pages),
                unit_page_bytes: unit_page::capacity(core.layout.page_size()) as u64,
            },
            ..self.stats
        })
    }
}

#[cfg(test)]
pub(super) mod tests;
