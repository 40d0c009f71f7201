//! The policies over the logged write buffer ([`WriteBuffer`]: FAST, the LCR-tree, RFTL).
//! The skeleton holds a [`LoggedPolicy`] as [`Logged`]: the policy beside its
//! [`LoggedBuffer`] (the buffer, its capacity, its clock and its node cache), and implements
//! every [`BufferPolicy`] hook for it once, here: changes logged then buffered (the node
//! cache kept exact), new metadata logged, a flush when an operation leaves the buffer over
//! its capacity ([`LoggedPolicy::flush_for_space`]), compaction when the log is half full,
//! write-backs and checkpoints that flush everything, the recovery loop (records not the
//! buffer's go to [`LoggedPolicy::replay_own`]), the check of the page size against the
//! policy's own pages ([`LoggedPolicy::min_page_size`]) and the buffer's gauges. The buffer
//! is handed to the hooks that read or write it; a policy holds only its own state and
//! writes only what its paper defines: how a node is read, what a flush writes, its own
//! records and report.

use std::sync::Arc;

use super::node_cache::LazyNodeCache;
use super::write_buffer::{BufferWatch, WriteBuffer};
use super::{
    BufferGauges, BufferPolicy, BufferSettings, Core, PolicyReport, RawChange, Record,
    RecordFormat, RecoveryReport,
};
use crate::node::PageId;
use crate::store::TreeMeta;
use crate::{Error, Result};

/// What every policy over the logged write buffer works on, held for it by the skeleton
/// ([`Logged`]) and handed to the hooks that read or flush the buffer.
pub struct LoggedBuffer<W = ()> {
    /// The buffered nodes.
    pub buf: WriteBuffer<W>,
    /// Capacity in bytes: an operation that leaves more buffered ends with a flush.
    pub capacity: u64,
    /// Operations ended so far (the buffer's clock: FAST*'s recency).
    pub op: u64,
    /// Assembled nodes (CPU only: every read still issues its page reads; see
    /// [`node_cache`](super::node_cache)), kept exact by every hook that changes a node.
    pub nodes: LazyNodeCache,
}

/// What the hooks that read or write the buffer work on: the skeleton's [`Core`] and the
/// policy's [`LoggedBuffer`], both held by the skeleton.
pub struct Parts<'a, W = ()> {
    /// The shared state (cache, log, header, counters).
    pub core: &'a mut Core,
    /// The buffer.
    pub lb: &'a mut LoggedBuffer<W>,
}

/// A policy over the logged write buffer with its buffer: the [`BufferPolicy`] the skeleton
/// holds for every [`LoggedPolicy`] (see the module documentation).
pub struct Logged<P: LoggedPolicy> {
    /// The buffer, its capacity, clock and node cache.
    pub(crate) lb: LoggedBuffer<P::Watch>,
    /// The policy's own state.
    pub(crate) policy: P,
}

impl<P: LoggedPolicy> Logged<P> {
    /// `policy` over an empty buffer of `capacity` bytes watched by `watch`.
    pub fn new(capacity: u64, watch: P::Watch, policy: P) -> Self {
        let lb = LoggedBuffer {
            buf: WriteBuffer::with_watch(watch),
            capacity,
            op: 0,
            nodes: LazyNodeCache::default(),
        };
        Logged { lb, policy }
    }
}

/// The error for a recovered `record` that policy `name` (`"LCR-tree"`) does not log.
pub(crate) fn foreign_record(name: &str, record: &Record) -> Error {
    Error::corrupted(
        format!("{name} log"),
        format!("{record:?} is not a {name} record"),
    )
}

/// A policy over the logged write buffer. See the module documentation; the skeleton
/// drives it as [`Logged`], a [`BufferPolicy`]. The hooks that read or flush the buffer
/// receive it with the core ([`Parts`]).
pub trait LoggedPolicy: Send {
    /// The store's kind as reported (`fast`, `lcr`, `rftl`).
    const KIND: &'static str;

    /// The policy's name in errors (`FAST`, `LCR-tree`).
    const NAME: &'static str;

    /// The oldest log format (see [`crate::store::log::LOG_FORMAT`]) whose records this
    /// policy reads.
    const OLDEST_LOG_FORMAT: u32;

    /// What watches the buffer (`()`: nothing).
    type Watch: BufferWatch + Send;

    /// The smallest node page the policy's own pages work with for entries of
    /// `entry_size` bytes, and what those pages are (`"log page"`); checked when a store
    /// is created and before a recovery. `None` (the default): any node page does.
    fn min_page_size(&self, _entry_size: usize) -> Option<(usize, &'static str)> {
        None
    }

    /// The node's current content: its pages with the buffered changes applied.
    fn node_page(
        &mut self,
        cx: Parts<'_, Self::Watch>,
        id: PageId,
        level: u32,
    ) -> Result<Arc<[u8]>>;

    /// The policy's own bookkeeping of node `id`'s deletion, before the node leaves the
    /// buffer (logged before its `Free` record: recovery frees pages in the order freed).
    fn before_delete(&mut self, _core: &mut Core, _id: PageId) -> Result<()> {
        Ok(())
    }

    /// Writes the whole buffer (write-backs, checkpoints, a full buffer by default).
    fn flush_all(&mut self, cx: Parts<'_, Self::Watch>) -> Result<()>;

    /// Makes room at the end of an operation that left the buffer over its capacity (by
    /// default: [`flush_all`](Self::flush_all)).
    fn flush_for_space(&mut self, cx: Parts<'_, Self::Watch>) -> Result<()> {
        self.flush_all(cx)
    }

    /// Rewrites the log as a snapshot: allocation and metadata, then the records that
    /// rebuild the buffer (a policy with records of its own adds them).
    fn compact_log(&mut self, cx: Parts<'_, Self::Watch>) -> Result<()> {
        cx.core.compact_log(None, cx.lb.buf.snapshot())
    }

    /// Starts a recovery from the header the last checkpoint saved (after the page size
    /// is checked).
    fn begin_recovery(&mut self, _core: &mut Core) -> Result<()> {
        Ok(())
    }

    /// A snapshot record is about to be replayed: it starts the policy's state afresh.
    fn snapshot_replayed(&mut self, _core: &mut Core) {}

    /// Replays a recovered record that is not the buffer's (by default: refused, naming
    /// the policy).
    fn replay_own(&mut self, _core: &mut Core, record: Record) -> Result<()> {
        Err(foreign_record(Self::NAME, &record))
    }

    /// Every recovered record was replayed.
    fn recovered(&mut self, _core: &mut Core) -> Result<()> {
        Ok(())
    }

    /// The options behind the statistics (the skeleton fills in the write buffer's
    /// capacity; by default a flush-all buffer's).
    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings {
            flush_policy: "flush-all".into(),
            ..Default::default()
        }
    }

    /// The policy's own report (see [`BufferPolicy::report`]).
    fn own_report(&self, core: &Core) -> PolicyReport;

    /// The policy's own state saved with the header (see [`BufferPolicy::saved_state`]).
    fn saved_state(&self) -> Option<serde_json::Value> {
        None
    }

    /// The pages the policy holds for itself (see [`BufferPolicy::own_pages`]).
    fn own_pages(&self) -> Vec<(PageId, &'static str)> {
        Vec::new()
    }
}

impl<P: LoggedPolicy> Logged<P> {
    /// Refuses a node page too small for the policy's own pages
    /// ([`LoggedPolicy::min_page_size`]).
    fn check_page_size(&self, core: &Core) -> Result<()> {
        let (ps, es) = (core.layout.page_size(), core.layout.entry_size());
        match self.policy.min_page_size(es) {
            Some((min, what)) if ps < min => Err(Error::invalid(
                format!("{} page size", P::NAME),
                format!(
                    "a {ps}-byte {what} has no room for a {es}-byte entry ({min} bytes at least)"
                ),
            )),
            _ => Ok(()),
        }
    }
}

impl<P: LoggedPolicy> BufferPolicy for Logged<P> {
    fn own_pages(&self) -> Vec<(PageId, &'static str)> {
        self.policy.own_pages()
    }

    fn kind(&self) -> &'static str {
        P::KIND
    }

    /// The logged write buffer's records carry no timestamps.
    fn format(&self) -> RecordFormat {
        RecordFormat::Fixed
    }

    fn oldest_log_format(&self) -> u32 {
        P::OLDEST_LOG_FORMAT
    }

    fn created(&mut self, core: &mut Core) -> Result<()> {
        self.check_page_size(core)
    }

    /// Rebuilds the buffer (and through the policy its own state) from recovered records.
    fn recover(
        &mut self,
        core: &mut Core,
        operations: &[Vec<Record>],
        rep: &mut RecoveryReport,
    ) -> Result<()> {
        self.check_page_size(core)?;
        let (l, p) = (&mut self.lb, &mut self.policy);
        p.begin_recovery(core)?;
        for op in operations {
            l.op += 1;
            for r in op {
                rep.records_replayed += 1;
                if matches!(r, Record::Snapshot { .. }) {
                    p.snapshot_replayed(core);
                }
                if let Some(own) = l.buf.replay(&mut core.header, r.clone(), l.op, rep) {
                    p.replay_own(core, own)?;
                }
            }
        }
        rep.buffered_nodes = l.buf.len() as u64;
        p.recovered(core)
    }

    fn node_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        let lb = &mut self.lb;
        self.policy.node_page(Parts { core, lb }, id, level)
    }

    fn create(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()> {
        let l = &mut self.lb;
        l.nodes.forget(id);
        l.buf.logged_create(core, id, level, entries, l.op)
    }

    fn modify(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        changes: Vec<RawChange>,
    ) -> Result<()> {
        let l = &mut self.lb;
        l.nodes.modify(id, level, &changes);
        let done = l.buf.logged_modify(core, id, level, changes, l.op);
        if done.is_err() {
            l.nodes.forget(id);
        }
        done
    }

    fn rewrite(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()> {
        let l = &mut self.lb;
        l.nodes.forget(id);
        l.buf.logged_rewrite(core, id, level, entries, l.op)
    }

    fn delete(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<()> {
        let l = &mut self.lb;
        l.nodes.forget(id);
        self.policy.before_delete(core, id)?;
        l.buf.logged_delete(core, id, level, l.op)
    }

    fn log_meta(&mut self, core: &mut Core, meta: TreeMeta) -> Result<()> {
        core.append(Record::Meta(meta))
    }

    fn end_operation(&mut self, core: &mut Core) -> Result<()> {
        let lb = &mut self.lb;
        lb.op += 1;
        if lb.buf.bytes() as u64 > lb.capacity {
            self.policy.flush_for_space(Parts { core, lb })?;
        }
        if core.log.needs_compaction() {
            self.policy.compact_log(Parts { core, lb })?;
        }
        Ok(())
    }

    fn write_back(&mut self, core: &mut Core) -> Result<()> {
        let lb = &mut self.lb;
        self.policy.flush_all(Parts { core, lb })
    }

    fn checkpoint(&mut self, core: &mut Core) -> Result<()> {
        let lb = &mut self.lb;
        self.policy.flush_all(Parts { core, lb })?;
        self.policy.compact_log(Parts { core, lb })
    }

    fn drop_caches(&mut self, _core: &mut Core) {
        self.lb.nodes.clear();
    }

    fn buffer_gauges(&self) -> BufferGauges {
        self.lb.buf.gauges()
    }

    fn settings(&self) -> BufferSettings {
        BufferSettings {
            write_buffer: self.lb.capacity,
            ..self.policy.buffer_settings()
        }
    }

    fn report(&self, core: &Core) -> PolicyReport {
        self.policy.own_report(core)
    }

    fn saved_state(&self) -> Option<serde_json::Value> {
        self.policy.saved_state()
    }
}
