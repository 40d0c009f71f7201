//! Choosing a node store at run time: [`StoreConfig`] is what users write (`--store`, the
//! `store` table of an experiment spec, the index manifest) and [`AnyStore`] is the store it
//! opens, dispatching every [`NodeStore`] call to the chosen implementation. The trees are
//! compiled once over `AnyStore` and never learn which store it holds.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::buffered::options::PolicyOptions;
use super::buffered::placement::{attach, LogPlacement};
use super::buffered::{BufferPolicy, BufferedStore};
use super::direct::{DirectStore, Journaling};
use super::efind::EfindConfig;
use super::fast::FastOptions;
use super::journal::JOURNAL_FILE;
use super::lcr::LcrOptions;
use super::log::{LogConfig, LogSync};
use super::report::{RecoveryState, StoreFiles, StoreReport};
use super::rftl::RftlOptions;
use super::{NodeChange, NodePage, NodeStore, StoreControl, StoreStats, TreeMeta, TreeState};
use crate::cache::{CacheConfig, PageCache};
use crate::device::{Device, DeviceConfig};
use crate::node::{Entry, NodeLayout, NodeView, PageId};
use crate::Result;

/// File of an index directory holding the node store's header.
pub(crate) const STORE_HEADER: &str = "store.json";

/// Which node store an index uses, with its options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum StoreConfig {
    /// Every change written in place at once (the plain disk-based tree).
    Direct {
        /// Keep a rollback journal on `file:` devices (default true): a crash rolls the
        /// index back to its last checkpoint. `false` is the seeds' plain tree, which a
        /// crash between checkpoints can leave damaged (labelled `nojournal` in run names).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        journal: bool,
        /// When operations become durable between checkpoints: `none` (default: at
        /// checkpoints), `group:N` or `each-op` (the dirty pages written, the device synced
        /// and, on a `file:` device, the header saved and the journal restarted after every
        /// N-th or every operation): the per-operation durability the logging stores offer,
        /// at the plain tree's price.
        #[serde(default, skip_serializing_if = "LogSync::is_none")]
        log_sync: LogSync,
    },
    /// eFIND: write buffer, read buffer, flushing policies, temporal control
    /// (see [`super::efind`]).
    Efind(EfindConfig),
    /// FAST (Sarwat et al. 2013): a write buffer flushed in units, with a log (see
    /// [`super::fast`]).
    Fast(FastOptions),
    /// The LCR-tree (Lv et al. 2011): nodes in place, one log page of compacted changes
    /// per node, a flush-all write buffer (see [`super::lcr`]).
    Lcr(LcrOptions),
    /// RFTL (Wu, Chang, Kuo 2003): index units buffered and flushed (flush-all) into new
    /// pages shared by several nodes, a node -> pages translation table, nodes assembled
    /// from their units, compaction beyond `max_pages` (see [`super::rftl`]).
    Rftl(RftlOptions),
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig::direct()
    }
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl StoreConfig {
    /// The buffered stores' registration: each one's options (`None` for the direct
    /// store). One arm per store; everything else is written once, over [`PolicyOptions`].
    pub fn buffered_options(&self) -> Option<&dyn PolicyOptions> {
        match self {
            StoreConfig::Direct { .. } => None,
            StoreConfig::Efind(o) => Some(o),
            StoreConfig::Fast(o) => Some(o),
            StoreConfig::Lcr(o) => Some(o),
            StoreConfig::Rftl(o) => Some(o),
        }
    }

    /// Checks the options against the node page size.
    pub fn validate(&self, page_size: usize) -> Result<()> {
        match self.buffered_options() {
            None => Ok(()),
            Some(o) => o.validate(page_size),
        }
    }

    /// Where a buffered store writes its log (`None` for the direct store).
    pub fn log_placement(&self) -> Option<&LogPlacement> {
        self.buffered_options().map(|o| o.log_device())
    }

    /// The unit of durability, named for reports: `checkpoint` (the direct store, and the
    /// buffered stores' default `log_sync = none`), `each operation` or `N operations`
    /// (group commit); `none` for a log that is not crash-safe (`log_device = uncounted`).
    /// Configurations compared side by side should share it.
    pub fn durability_unit(&self) -> String {
        match (self, self.buffered_options()) {
            (_, Some(o)) if *o.log_device() == LogPlacement::Uncounted => {
                "checkpoint (log not crash-safe)".into()
            }
            (_, Some(o)) => sync_unit(o.log_sync()),
            (
                StoreConfig::Direct {
                    journal: true,
                    log_sync,
                },
                None,
            ) => sync_unit(*log_sync),
            (&StoreConfig::Direct { log_sync, .. }, None) => match log_sync {
                LogSync::None => "none between checkpoints".into(),
                s => format!("{} (no journal: not crash-safe)", sync_unit(s)),
            },
            (_, None) => unreachable!("every store but the direct one is buffered"),
        }
    }

    /// Where the store's log is written, named for reports: `no log` (direct), `same
    /// device` (counted with the device under test), `separate:NAME` or `uncounted`.
    pub fn log_placement_name(&self) -> String {
        match self.log_placement() {
            None => "no log".into(),
            Some(LogPlacement::Same) => "same device".into(),
            Some(LogPlacement::Separate { name, .. }) => format!("separate:{name}"),
            Some(LogPlacement::Uncounted) => "uncounted".into(),
        }
    }

    /// Checks the options that depend on the device under test `device` (a separate log
    /// device must persist like it; see [`LogPlacement::check_device`]).
    pub(crate) fn check_device(&self, device: &DeviceConfig) -> Result<()> {
        match self.log_placement() {
            Some(p) => p.check_device(device),
            None => Ok(()),
        }
    }

    /// The direct store with its defaults (journaled on `file:` devices).
    pub fn direct() -> Self {
        StoreConfig::Direct {
            journal: true,
            log_sync: LogSync::None,
        }
    }

    /// A short prefix for run and index names ("" for the direct store, e.g. "FAST";
    /// "nojournal" for a direct store without its rollback journal).
    /// A FAST or eFIND log not on the device under test is always named (`FAST
    /// log=uncounted`): its figures must never be mistaken for the default's.
    pub fn label(&self) -> String {
        let base = match self {
            StoreConfig::Direct { journal, log_sync } => {
                let mut parts = Vec::new();
                if !journal {
                    parts.push("nojournal".to_string());
                }
                if *log_sync != LogSync::None {
                    parts.push(format!("sync={log_sync}"));
                }
                parts.join(" ")
            }
            _ => self
                .buffered_options()
                .map(|o| o.label())
                .unwrap_or_default(),
        };
        match self.log_placement().map(LogPlacement::label) {
            Some(l) if !l.is_empty() => format!("{base} {l}"),
            _ => base,
        }
    }

    /// Creates an empty store over `device` (a node partition), with the page buffer
    /// `buffer`, keeping its header files in the index directory `dir` (none: in memory).
    pub fn create(
        &self,
        device: Box<dyn Device>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        dir: Option<&Path>,
    ) -> Result<AnyStore> {
        self.create_in(device, buffer, layout, StoreFiles::writable(dir))
    }

    /// Reopens the store an index directory `dir` holds (recovering what a crash left).
    pub fn open(
        &self,
        device: Box<dyn Device>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        dir: &Path,
    ) -> Result<AnyStore> {
        self.open_in(device, buffer, layout, StoreFiles::writable(Some(dir)))
    }

    /// Creates an empty store as [`create`](Self::create) does, with `files` saying where
    /// its files are and whether the device is persistent.
    pub fn create_in(
        &self,
        device: Box<dyn Device>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        files: StoreFiles<'_>,
    ) -> Result<AnyStore> {
        self.build(device, None, buffer, layout, files, false)
    }

    /// Creates or reopens (`reopen`) a FAST or eFIND store whose log, placed `separate` or
    /// `uncounted`, is written to `log_device` instead of the device the placement names
    /// (tests put both on one crash-simulating medium, so one power cut hits both).
    pub fn with_log_device(
        &self,
        device: Box<dyn Device>,
        log_device: Box<dyn Device>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        files: StoreFiles<'_>,
        reopen: bool,
    ) -> Result<AnyStore> {
        self.build(device, Some(log_device), buffer, layout, files, reopen)
    }

    /// Reopens a store as [`open`](Self::open) does, with `files` (read-only opens never
    /// write a file; their recovery happens on the device they are given).
    pub fn open_in(
        &self,
        device: Box<dyn Device>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        files: StoreFiles<'_>,
    ) -> Result<AnyStore> {
        self.build(device, None, buffer, layout, files, true)
    }

    fn build(
        &self,
        device: Box<dyn Device>,
        log_device: Option<Box<dyn Device>>,
        buffer: &CacheConfig,
        layout: NodeLayout,
        files: StoreFiles<'_>,
        reopen: bool,
    ) -> Result<AnyStore> {
        self.validate(layout.page_size())?;
        let header = files.dir.map(|d| d.join(STORE_HEADER));
        let header = header.as_deref();
        match self {
            StoreConfig::Direct { journal, log_sync } => {
                if log_device.is_some() {
                    return Err(crate::Error::invalid(
                        "direct store",
                        "the direct store keeps no log: a log device does not apply",
                    ));
                }
                let cache = PageCache::new(device, buffer)?;
                let journaling = match files.dir {
                    Some(d) if *journal && files.persistent_device => {
                        let p = d.join(JOURNAL_FILE);
                        if files.read_only {
                            Journaling::ReadOnly(p)
                        } else {
                            Journaling::On(p)
                        }
                    }
                    _ => Journaling::Off,
                };
                Ok(AnyStore::Direct(
                    match (reopen, header) {
                        (true, Some(h)) => DirectStore::open_accepting(
                            cache,
                            layout,
                            h,
                            journaling,
                            files.accept_loss,
                        )?,
                        _ => DirectStore::create_with(cache, layout, header, journaling)?,
                    }
                    .with_sync(*log_sync),
                ))
            }
            _ => {
                let o = self.buffered_options().expect("not the direct store");
                let ps = layout.page_size();
                let (pages, policy) = (o.log_pages(ps)?, o.policy(ps)?);
                let devs = attach(
                    o.log_device(),
                    device,
                    log_device,
                    pages,
                    o.name(),
                    files,
                    !reopen,
                )?;
                let log = LogConfig {
                    accept_loss: files.accept_loss,
                    ..LogConfig::new(o.log_sync())
                };
                Ok(AnyStore::Buffered(Box::new(if reopen {
                    BufferedStore::open_boxed(devs, buffer, layout, log, policy, header)?
                } else {
                    BufferedStore::create_boxed(devs, buffer, layout, log, policy, header)?
                })))
            }
        }
    }
}

/// A node store chosen at run time. See the module documentation.
// One AnyStore per open index: the direct store stays unboxed on the baseline's hot path.
#[allow(clippy::large_enum_variant)]
pub enum AnyStore {
    /// The direct store.
    Direct(DirectStore),
    /// A buffered store: the skeleton over a policy object (FAST, eFIND, the LCR-tree,
    /// RFTL, or any other [`BufferPolicy`]).
    Buffered(Box<BufferedStore>),
}

impl<P: BufferPolicy + 'static> From<BufferedStore<P>> for AnyStore {
    /// A buffered store over any policy, as [`StoreConfig`] opens the registered ones.
    fn from(store: BufferedStore<P>) -> Self {
        AnyStore::Buffered(Box::new(store.into_dyn()))
    }
}

/// Calls `$body` with `$s` bound to the store inside `$self`, whatever its kind.
macro_rules! dispatch {
    ($self:expr, ref $s:ident => $body:expr) => {
        match $self {
            AnyStore::Direct($s) => $body,
            AnyStore::Buffered(b) => {
                let $s: &BufferedStore = b;
                $body
            }
        }
    };
    ($self:expr, mut $s:ident => $body:expr) => {
        match $self {
            AnyStore::Direct($s) => $body,
            AnyStore::Buffered(b) => {
                let $s: &mut BufferedStore = b;
                $body
            }
        }
    };
}

impl AnyStore {
    /// The device under the store (its statistics cover every partition of it).
    pub fn device(&self) -> &dyn Device {
        StoreControl::device(self)
    }

    /// See [`StoreControl::drop_caches`].
    pub fn drop_caches(&mut self) -> Result<()> {
        StoreControl::drop_caches(self)
    }

    /// See [`StoreControl::write_back`].
    pub fn write_back(&mut self) -> Result<()> {
        StoreControl::write_back(self)
    }

    /// Node pages allocated and not freed.
    pub fn pages_in_use(&self) -> u64 {
        StoreControl::pages_in_use(self)
    }

    /// The store's counters.
    pub fn report(&self) -> StoreReport {
        StoreControl::report(self)
    }

    /// What opening found about a crash before it, and any damage accepted.
    pub fn recovery_state(&self) -> RecoveryState {
        match self {
            AnyStore::Direct(s) => RecoveryState {
                crashed: (s.restored_pages() > 0).then(|| {
                    format!(
                        "its rollback journal holds {} page images of changes made since its \
                         last checkpoint",
                        s.restored_pages()
                    )
                }),
                accepted_loss: s.accepted_loss().map(str::to_string),
            },
            other => {
                let rec = other.report().recovery.unwrap_or_default();
                RecoveryState {
                    crashed: rec.after_checkpoint.clone(),
                    accepted_loss: rec.accepted_loss,
                }
            }
        }
    }
}

impl StoreControl for AnyStore {
    fn device(&self) -> &dyn Device {
        dispatch!(self, ref s => StoreControl::device(s))
    }

    fn drop_caches(&mut self) -> Result<()> {
        dispatch!(self, mut s => StoreControl::drop_caches(s))
    }

    fn write_back(&mut self) -> Result<()> {
        dispatch!(self, mut s => StoreControl::write_back(s))
    }

    fn pages_in_use(&self) -> u64 {
        dispatch!(self, ref s => StoreControl::pages_in_use(s))
    }

    fn page_accounting(&self) -> super::PageAccounting {
        dispatch!(self, ref s => StoreControl::page_accounting(s))
    }

    fn report(&self) -> StoreReport {
        dispatch!(self, ref s => StoreControl::report(s))
    }

    fn save_header(&mut self) -> Result<()> {
        dispatch!(self, mut s => StoreControl::save_header(s))
    }

    fn persist_device(&mut self) -> Result<()> {
        dispatch!(self, mut s => StoreControl::persist_device(s))
    }

    fn log_device(&self) -> Option<&dyn Device> {
        dispatch!(self, ref s => StoreControl::log_device(s))
    }
}

impl<const D: usize> NodeStore<D> for AnyStore {
    fn layout(&self) -> &NodeLayout {
        dispatch!(self, ref s => NodeStore::<D>::layout(s))
    }

    fn read(&mut self, id: PageId, level: u32) -> Result<NodePage> {
        dispatch!(self, mut s => NodeStore::<D>::read(s, id, level))
    }

    fn with_node<R>(
        &mut self,
        id: PageId,
        level: u32,
        f: impl FnOnce(NodeView<'_, D>) -> R,
    ) -> Result<R> {
        dispatch!(self, mut s => s.with_node(id, level, f))
    }

    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId> {
        dispatch!(self, mut s => s.create(level, entries))
    }

    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()> {
        dispatch!(self, mut s => s.modify(id, level, changes))
    }

    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()> {
        dispatch!(self, mut s => s.rewrite(id, level, entries))
    }

    fn delete(&mut self, id: PageId, level: u32) -> Result<()> {
        dispatch!(self, mut s => NodeStore::<D>::delete(s, id, level))
    }

    fn meta(&self) -> Option<TreeMeta> {
        dispatch!(self, ref s => NodeStore::<D>::meta(s))
    }

    fn set_meta(&mut self, meta: TreeMeta) -> Result<()> {
        dispatch!(self, mut s => NodeStore::<D>::set_meta(s, meta))
    }

    fn tree_state(&self) -> Option<&TreeState> {
        dispatch!(self, ref s => NodeStore::<D>::tree_state(s))
    }

    fn set_tree_state(&mut self, state: Option<TreeState>) {
        dispatch!(self, mut s => NodeStore::<D>::set_tree_state(s, state))
    }

    fn end_operation(&mut self) -> Result<()> {
        dispatch!(self, mut s => NodeStore::<D>::end_operation(s))
    }

    fn flush(&mut self) -> Result<()> {
        dispatch!(self, mut s => NodeStore::<D>::flush(s))
    }

    fn stats(&self) -> StoreStats {
        dispatch!(self, ref s => NodeStore::<D>::stats(s))
    }
}

#[cfg(test)]
#[path = "any_tests.rs"]
mod tests;

/// A sync mode's unit of durability, named for reports.
fn sync_unit(sync: LogSync) -> String {
    match sync {
        LogSync::None => "checkpoint".into(),
        LogSync::EachOp => "each operation".into(),
        LogSync::Group(n) => format!("{n} operations"),
    }
}
