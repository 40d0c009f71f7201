//! The buffered store (architecture §6): [`BufferedStore`], the skeleton's [`Core`] over a
//! policy, and the seam it serves: [`NodeStore`] and [`StoreControl`] for every policy
//! (checking page ids, encoding entries and changes, counting [`StoreStats`]), creating and
//! reopening (recovery from the log), checkpoints and reports. Split from `mod.rs`, which
//! keeps the [`Core`] and the [`BufferPolicy`] hooks this file calls.

use std::path::Path;
use std::time::Instant;

use super::placement::{LogDevices, LogPlacement};
use super::{BufferPolicy, BufferedStats, Core, Record, RecoveryReport};
use crate::cache::{CacheConfig, PageCache};
use crate::device::Device;
use crate::node::{Entry, NodeLayout, PageId};
use crate::store::header::{check_page_size, StoreHeader};
use crate::store::log::{Log, LogConfig, LogSync};
use crate::store::report::{StoreGauges, StoreReport, StoreSettings};
use crate::store::{
    NodeChange, NodePage, NodeStore, StoreControl, StoreStats, TreeMeta, TreeState,
};
use crate::{Error, Result};

/// A buffered store: the skeleton over policy `P` (`dyn BufferPolicy` in
/// [`AnyStore`](crate::store::AnyStore)). See the module documentation.
pub struct BufferedStore<P: ?Sized = dyn BufferPolicy> {
    pub(super) core: Core,
    pub(super) policy: Box<P>,
}

impl<P: BufferPolicy> BufferedStore<P> {
    /// A new, empty store over `policy` (see [`create_boxed`](Self::create_boxed)).
    pub fn create(
        devs: LogDevices,
        buffer: &CacheConfig,
        layout: NodeLayout,
        log: LogConfig,
        policy: P,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        Self::create_boxed(devs, buffer, layout, log, Box::new(policy), header_path)
    }

    /// Reopens a store over `policy` (see [`open_boxed`](Self::open_boxed)).
    pub fn open(
        devs: LogDevices,
        buffer: &CacheConfig,
        layout: NodeLayout,
        log: LogConfig,
        policy: P,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        Self::open_boxed(devs, buffer, layout, log, Box::new(policy), header_path)
    }
}

impl<P: BufferPolicy + 'static> BufferedStore<P> {
    /// The same store over its policy as an object (what [`AnyStore`](crate::store::AnyStore)
    /// holds).
    pub(crate) fn into_dyn(self) -> BufferedStore {
        BufferedStore {
            core: self.core,
            policy: self.policy,
        }
    }
}

impl<P: BufferPolicy + ?Sized> BufferedStore<P> {
    /// A new, empty store: nodes on `devs.nodes` through a page cache `buffer`, the log on
    /// `devs.log` with `log`, header saved at `header_path` (none: in memory).
    pub(crate) fn create_boxed(
        devs: LogDevices,
        buffer: &CacheConfig,
        layout: NodeLayout,
        log: LogConfig,
        policy: Box<P>,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        let cache = PageCache::new(devs.nodes, buffer)?;
        check_page_size(cache.page_size(), &layout)?;
        let log = Log::create(devs.log, log)?;
        let header = StoreHeader::new(policy.kind());
        let parts = (cache, log, devs.placement);
        let mut s = Self::assemble(parts, layout, header, policy, header_path);
        s.policy.created(&mut s.core)?;
        Ok(s)
    }

    /// Reopens a store: the header its last checkpoint saved (if any), then the log
    /// replayed by the policy (recovering what a crash left buffered).
    pub(crate) fn open_boxed(
        devs: LogDevices,
        buffer: &CacheConfig,
        layout: NodeLayout,
        log: LogConfig,
        policy: Box<P>,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        let start = Instant::now();
        let cache = PageCache::new(devs.nodes, buffer)?;
        check_page_size(cache.page_size(), &layout)?;
        let header = match header_path {
            Some(p) => StoreHeader::load_or_new(p, policy.kind())?,
            None => StoreHeader::new(policy.kind()),
        };
        if let Some(p) = header_path {
            let what = format!("store header {}", p.display());
            header.check_capacity(&what, cache.device().capacity_pages())?;
            header.check_kind(&what, policy.kind())?;
        }
        let log = LogConfig {
            oldest_format: policy.oldest_log_format(),
            checkpoint: header.log_generation.zip(header.log_operations),
            ..log
        };
        let (log, recovered) = Log::open(devs.log, log)?;
        let es = layout.entry_size();
        let operations = recovered
            .operations
            .iter()
            .map(|op| {
                op.iter()
                    .map(|p| Record::decode(p, policy.format(), es))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let saved = header.clone();
        let parts = (cache, log, devs.placement);
        let mut s = Self::assemble(parts, layout, header, policy, header_path);
        let h = &s.core.header;
        let mut report = RecoveryReport::of(&recovered, h.log_generation, h.log_operations);
        s.policy.recover(&mut s.core, &operations, &mut report)?;
        if let (Some(p), None) = (header_path, &report.after_checkpoint) {
            // Closed at a checkpoint: the log rebuilt exactly what the header saved.
            s.agrees_with(&saved, p)?;
        }
        report.seconds = start.elapsed().as_secs_f64();
        s.core.recovery = Some(report);
        Ok(s)
    }

    /// Checks that the state the log rebuilt is the one the header `saved` (at `path`)
    /// recorded at the same checkpoint: allocation, tree metadata and the policy's own
    /// state. A difference is damage to one of them (both are sealed, so an edit with a
    /// recomputed checksum), named by field.
    fn agrees_with(&self, saved: &StoreHeader, path: &Path) -> Result<()> {
        let h = &self.core.header;
        let sorted = |v: &[PageId]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        let state = self.policy.saved_state();
        let field = if h.meta != saved.meta {
            Some(("meta", format!("{:?}", saved.meta), format!("{:?}", h.meta)))
        } else if h.next_page != saved.next_page {
            Some((
                "next_page",
                saved.next_page.to_string(),
                h.next_page.to_string(),
            ))
        } else if sorted(&h.free) != sorted(&saved.free) {
            Some((
                "free",
                format!("{} pages", saved.free.len()),
                format!("{} pages", h.free.len()),
            ))
        } else if state.is_some() && state != saved.policy_state {
            Some((
                "policy_state",
                "its saved table".to_string(),
                "another".to_string(),
            ))
        } else {
            None
        };
        match field {
            None => Ok(()),
            Some((name, header, log)) => Err(Error::corrupted(
                format!("store header {}", path.display()),
                format!(
                    "field {name} = {header}, but the log of the same checkpoint rebuilds \
                     {log}: the header or the log was altered"
                ),
            )),
        }
    }

    fn assemble(
        (cache, log, placement): (PageCache, Log, LogPlacement),
        layout: NodeLayout,
        header: StoreHeader,
        policy: Box<P>,
        header_path: Option<&Path>,
    ) -> Self {
        BufferedStore {
            core: Core {
                scratch: vec![0u8; layout.page_size()],
                spare_unit: None,
                cache,
                log,
                placement,
                layout,
                header,
                stats: StoreStats::default(),
                recovery: None,
                format: policy.format(),
                counts: BufferedStats::default(),
                unit_images: 0,
                header_path: header_path.map(Path::to_path_buf),
            },
            policy,
        }
    }

    #[cfg(test)]
    /// The shared state (cache, log, header, counters).
    pub(crate) fn core(&self) -> &Core {
        &self.core
    }

    /// The policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    #[cfg(test)]
    /// The policy and the shared state, mutably (tests drive a policy's hooks directly).
    pub(crate) fn parts_mut(&mut self) -> (&mut P, &mut Core) {
        (&mut *self.policy, &mut self.core)
    }

    /// The page cache (and through it the node partition of the device).
    pub fn cache(&self) -> &PageCache {
        &self.core.cache
    }
}

impl<P: BufferPolicy + ?Sized, const D: usize> NodeStore<D> for BufferedStore<P> {
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

    fn tree_state(&self) -> Option<&TreeState> {
        self.core.header.tree_state.as_ref()
    }

    fn set_tree_state(&mut self, state: Option<TreeState>) {
        self.core.header.tree_state = state;
    }

    fn end_operation(&mut self) -> Result<()> {
        self.core.log.commit()?;
        self.policy.end_operation(&mut self.core)
    }

    fn flush(&mut self) -> Result<()> {
        self.core.log.commit()?;
        self.policy.checkpoint(&mut self.core)?;
        self.core.persist_devices()?;
        self.core.header.policy_state = self.policy.saved_state();
        self.core.save_header()
    }

    fn stats(&self) -> StoreStats {
        self.core.stats
    }
}

impl<P: BufferPolicy + ?Sized> StoreControl for BufferedStore<P> {
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

    fn page_accounting(&self) -> crate::store::PageAccounting {
        crate::store::PageAccounting {
            next_page: self.core.header.next_page,
            free: self.core.header.free.clone(),
            own: self.policy.own_pages(),
        }
    }

    fn save_header(&mut self) -> Result<()> {
        self.core.header.policy_state = self.policy.saved_state();
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
        let core = &self.core;
        let log = core.log.config().sync;
        let mut settings = self.policy.settings();
        settings.log_sync = log.to_string();
        settings.log_pages = core.log.device().capacity_pages();
        let mut r = StoreReport {
            kind: self.policy.kind().into(),
            nodes: core.stats,
            cache: core.cache.stats(),
            buffered: Some(BufferedStats {
                log: core.log.stats(),
                gauges: self.policy.buffer_gauges(),
                settings,
                ..core.counts.clone()
            }),
            recovery: core.recovery.clone(),
            gauges: StoreGauges {
                pages_in_use: core.header.pages_in_use(),
            },
            settings: StoreSettings {
                durability: match (core.placement.durability(), log) {
                    (Some(d), _) => d.into(),
                    (None, LogSync::EachOp) => "each operation (log synced at every commit)".into(),
                    (None, LogSync::Group(n)) => {
                        format!("groups of {n} operations (log group commit)")
                    }
                    (None, LogSync::None) => "checkpoint (log never synced)".into(),
                },
                log_device: core.placement.describe(),
            },
            ..Default::default()
        };
        if let Some(own) = self.policy.report(core) {
            r.policy.insert(r.kind.clone(), own);
        }
        r
    }
}
