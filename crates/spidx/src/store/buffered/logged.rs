//! The policies over the logged write buffer ([`WriteBuffer`]: FAST, the LCR-tree, RFTL).
//! A [`LoggedPolicy`] holds a [`LoggedBuffer`] and gets every [`BufferPolicy`] hook from it,
//! written once here: changes logged then buffered (the node cache kept exact), new metadata
//! logged, a flush when an operation leaves the buffer over its capacity
//! ([`LoggedPolicy::flush_for_space`]), compaction when the log is half full, write-backs
//! and checkpoints that flush everything, the recovery loop (records not the buffer's go to
//! [`LoggedPolicy::replay_own`]) and the buffer's gauges. A policy writes only what its
//! paper defines: how a node is read, what a flush writes, its own records and report.

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

/// What every policy over the logged write buffer holds. See the module documentation.
#[derive(Default)]
pub struct LoggedBuffer<W = ()> {
    /// The buffered nodes.
    pub buf: WriteBuffer<W>,
    /// Operations ended so far (the buffer's clock: FAST*'s recency).
    pub op: u64,
    /// Assembled nodes (CPU only: every read still issues its page reads; see
    /// [`node_cache`](super::node_cache)), kept exact by every hook that changes a node.
    pub nodes: LazyNodeCache,
}

impl<W: BufferWatch> LoggedBuffer<W> {
    /// An empty buffer watched by `watch`.
    pub(crate) fn with_watch(watch: W) -> Self {
        LoggedBuffer {
            buf: WriteBuffer::with_watch(watch),
            op: 0,
            nodes: LazyNodeCache::default(),
        }
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
/// drives it as a [`BufferPolicy`] (implemented for every `LoggedPolicy`).
pub trait LoggedPolicy: Send {
    /// The store's kind as reported (`fast`, `lcr`, `rftl`).
    const KIND: &'static str;

    /// The policy's name in errors (`FAST`, `LCR-tree`).
    const NAME: &'static str;

    /// The oldest log format (see [`crate::store::log::LOG_FORMAT`]) whose records this
    /// policy reads.
    const OLDEST_LOG_FORMAT: u32;

    /// What watches the buffer (`()`: nothing).
    type Watch: BufferWatch;

    /// The buffer.
    fn logged(&self) -> &LoggedBuffer<Self::Watch>;

    /// The buffer, mutably.
    fn logged_mut(&mut self) -> &mut LoggedBuffer<Self::Watch>;

    /// Capacity of the write buffer in bytes.
    fn write_buffer(&self) -> u64;

    /// Checks what the policy needs of the store (its page layout), when a store is created
    /// and before a recovery.
    fn check(&self, _core: &Core) -> Result<()> {
        Ok(())
    }

    /// The node's current content: its pages with the buffered changes applied.
    fn node_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>>;

    /// The policy's own bookkeeping of node `id`'s deletion, before the node leaves the
    /// buffer (logged before its `Free` record: recovery frees pages in the order freed).
    fn before_delete(&mut self, _core: &mut Core, _id: PageId) -> Result<()> {
        Ok(())
    }

    /// Writes the whole buffer (write-backs, checkpoints, a full buffer by default).
    fn flush_all(&mut self, core: &mut Core) -> Result<()>;

    /// Makes room at the end of an operation that left the buffer over its capacity (by
    /// default: [`flush_all`](Self::flush_all)).
    fn flush_for_space(&mut self, core: &mut Core) -> Result<()> {
        self.flush_all(core)
    }

    /// Rewrites the log as a snapshot: allocation and metadata, then the records that
    /// rebuild the buffer (a policy with records of its own adds them).
    fn compact_log(&mut self, core: &mut Core) -> Result<()> {
        core.compact_log(None, self.logged().buf.snapshot())
    }

    /// Starts a recovery from the header the last checkpoint saved (after
    /// [`check`](Self::check)).
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

    /// The options behind the statistics (by default a flush-all buffer's).
    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings {
            write_buffer: self.write_buffer(),
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
}

impl<P: LoggedPolicy> BufferPolicy for P {
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
        self.check(core)
    }

    /// Rebuilds the buffer (and through the policy its own state) from recovered records.
    fn recover(
        &mut self,
        core: &mut Core,
        operations: &[Vec<Record>],
        rep: &mut RecoveryReport,
    ) -> Result<()> {
        self.check(core)?;
        self.begin_recovery(core)?;
        for op in operations {
            self.logged_mut().op += 1;
            for r in op {
                rep.records_replayed += 1;
                if matches!(r, Record::Snapshot { .. }) {
                    self.snapshot_replayed(core);
                }
                let l = self.logged_mut();
                if let Some(own) = l.buf.replay(&mut core.header, r.clone(), l.op, rep) {
                    self.replay_own(core, own)?;
                }
            }
        }
        rep.buffered_nodes = self.logged().buf.len() as u64;
        self.recovered(core)
    }

    fn node_page(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        LoggedPolicy::node_page(self, core, id, level)
    }

    fn create(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()> {
        let l = self.logged_mut();
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
        let l = self.logged_mut();
        l.nodes.modify(id, level, &changes);
        let done = l.buf.logged_modify(core, id, level, changes, l.op);
        if done.is_err() {
            l.nodes.forget(id);
        }
        done
    }

    fn rewrite(&mut self, core: &mut Core, id: PageId, level: u32, entries: Vec<u8>) -> Result<()> {
        let l = self.logged_mut();
        l.nodes.forget(id);
        l.buf.logged_rewrite(core, id, level, entries, l.op)
    }

    fn delete(&mut self, core: &mut Core, id: PageId, level: u32) -> Result<()> {
        self.logged_mut().nodes.forget(id);
        self.before_delete(core, id)?;
        let l = self.logged_mut();
        l.buf.logged_delete(core, id, level, l.op)
    }

    fn log_meta(&mut self, core: &mut Core, meta: TreeMeta) -> Result<()> {
        core.append(Record::Meta(meta))
    }

    fn end_operation(&mut self, core: &mut Core) -> Result<()> {
        self.logged_mut().op += 1;
        if self.logged().buf.bytes() as u64 > self.write_buffer() {
            self.flush_for_space(core)?;
        }
        if core.log.needs_compaction() {
            self.compact_log(core)?;
        }
        Ok(())
    }

    fn write_back(&mut self, core: &mut Core) -> Result<()> {
        self.flush_all(core)
    }

    fn checkpoint(&mut self, core: &mut Core) -> Result<()> {
        self.flush_all(core)?;
        self.compact_log(core)
    }

    fn drop_caches(&mut self, _core: &mut Core) {
        self.logged_mut().nodes.clear();
    }

    fn buffer_gauges(&self) -> BufferGauges {
        self.logged().buf.gauges()
    }

    fn settings(&self) -> BufferSettings {
        self.buffer_settings()
    }

    fn report(&self, core: &Core) -> PolicyReport {
        self.own_report(core)
    }

    fn saved_state(&self) -> Option<serde_json::Value> {
        LoggedPolicy::saved_state(self)
    }
}
