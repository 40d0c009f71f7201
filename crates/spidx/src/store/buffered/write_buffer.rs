//! The logged write buffer of the flush-by-node policies (FAST, Sarwat et al. 2013,
//! section 4; the LCR-tree; RFTL), held in the skeleton's [`NodeBuffer`]: per node a status
//! (new, modified, deleted) and the ordered list of its entry-level modifications since it
//! last reached its page. A node that is new, or whose content was replaced as a whole,
//! keeps its full entry list (an *image*) instead of a base page. Sizes are bytes of what is
//! held: 16 bytes of bookkeeping per node, plus its image's entries, plus 8 bytes per change
//! and the changed entry.
//!
//! Every change is logged before it is buffered (the fixed-format records `Create`,
//! `Modify`, `Rewrite`, `Free`), the buffer lends the records that rebuild it in a compacted
//! log ([`WriteBuffer::snapshot`]) and replays recovered records ([`WriteBuffer::replay`]).
//! A policy that ranks its buffered nodes by their modifications (FAST's flushing units)
//! watches the buffer through a [`BufferWatch`].

use crate::node::PageId;
use crate::store::buffered::{
    BufferGauges, BufferedNode, Core, NodeBuffer, NodeRecord, NodeStatus, RawChange, Record,
    RecoveryReport,
};
use crate::store::StoreHeader;
use crate::Result;

/// One buffered node.
#[derive(Debug, Clone)]
pub struct BufNode {
    /// Its status.
    pub status: NodeStatus,
    /// Its level.
    pub level: u32,
    /// The raw entries the changes apply to, if the page is not their base.
    pub image: Option<Vec<u8>>,
    /// Changes in order.
    pub changes: Vec<RawChange>,
    /// Modifications counted for the FAST policies (entry changes, a creation, a deletion).
    pub mods: u64,
    /// Operation number of the latest change (FAST*'s recency).
    pub last_op: u64,
    /// Log records describing this node since it was last written (for recovery counts).
    pub records: u64,
}

impl BufNode {
    fn new(status: NodeStatus, level: u32) -> Self {
        BufNode {
            status,
            level,
            image: None,
            changes: Vec::new(),
            mods: 0,
            last_op: 0,
            records: 0,
        }
    }
}

impl BufferedNode for BufNode {
    fn status(&self) -> NodeStatus {
        self.status
    }

    fn bytes(&self) -> usize {
        16 + self.image.as_ref().map_or(0, Vec::len)
            + self
                .changes
                .iter()
                .map(RawChange::buffer_bytes)
                .sum::<usize>()
    }
}

/// Told of every change of a buffered node's modification count, so a policy can keep
/// its own ranking of what is buffered (FAST's flushing-unit standings) without scanning
/// the buffer. `()` watches nothing.
pub trait BufferWatch {
    /// Node `id` went from `old_mods` modifications (0 if it was not buffered) to
    /// `new_mods` at operation `op` (operation numbers never decrease).
    fn changed(&mut self, _id: PageId, _old_mods: u64, _new_mods: u64, _op: u64) {}

    /// Node `id`, which held `mods` modifications, left `nodes` (the buffer after it).
    fn removed(&mut self, _id: PageId, _mods: u64, _nodes: &NodeBuffer<BufNode>) {}
}

impl BufferWatch for () {}

/// The logged write buffer: the skeleton's [`NodeBuffer`] with the bookkeeping of changes,
/// watched by `W`. See the module documentation.
#[derive(Default)]
pub struct WriteBuffer<W = ()> {
    nodes: NodeBuffer<BufNode>,
    watch: W,
}

impl<W: BufferWatch> WriteBuffer<W> {
    /// An empty buffer watched by `watch`.
    pub(crate) fn with_watch(watch: W) -> Self {
        WriteBuffer {
            nodes: NodeBuffer::default(),
            watch,
        }
    }

    /// What watches the buffer.
    pub fn watch(&self) -> &W {
        &self.watch
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.nodes.bytes()
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Buffered nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The buffered node `id`.
    pub fn get(&self, id: PageId) -> Option<&BufNode> {
        self.nodes.get(id)
    }

    /// The buffered node `id` for a read: an error if it was deleted (a tree that reads a
    /// deleted node is damaged).
    pub fn live(&self, id: PageId) -> Result<Option<&BufNode>> {
        match self.nodes.get(id) {
            Some(n) if n.status == NodeStatus::Deleted => Err(crate::Error::corrupted(
                format!("node page {id}"),
                "the node was deleted",
            )),
            n => Ok(n),
        }
    }

    /// Buffered nodes in page order.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, &BufNode)> {
        self.nodes.iter()
    }

    /// Buffered nodes with ids in `range`, in page order.
    pub fn range(
        &self,
        range: std::ops::Range<PageId>,
    ) -> impl Iterator<Item = (PageId, &BufNode)> {
        self.nodes.range(range)
    }

    /// The buffer now.
    pub fn gauges(&self) -> BufferGauges {
        self.nodes.gauges()
    }

    /// Changes node `id` in place by `f` (a fresh node of `status` at `level` if none is
    /// buffered), stamping it with operation `op` and counting one more record.
    fn update(
        &mut self,
        id: PageId,
        op: u64,
        status: NodeStatus,
        level: u32,
        f: impl FnOnce(&mut BufNode),
    ) {
        let (mut old_mods, mut new_mods) = (0, 0);
        self.nodes.upsert(
            id,
            || BufNode::new(status, level),
            |n| {
                old_mods = n.mods;
                f(n);
                n.last_op = op;
                n.records += 1;
                new_mods = n.mods;
            },
        );
        self.watch.changed(id, old_mods, new_mods, op);
    }

    /// A node created with `entries` (raw).
    pub fn create(&mut self, id: PageId, level: u32, entries: Vec<u8>, op: u64) {
        self.update(id, op, NodeStatus::New, level, |n| {
            // A new node: only the modification count carries over.
            let mods = n.mods + 1;
            *n = BufNode::new(NodeStatus::New, level);
            n.mods = mods;
            n.image = Some(entries);
        });
    }

    /// Entry-level changes to node `id`.
    pub fn modify(&mut self, id: PageId, level: u32, changes: Vec<RawChange>, op: u64) {
        self.update(id, op, NodeStatus::Modified, level, |n| {
            n.level = level;
            n.mods += changes.len() as u64;
            n.changes.extend(changes);
        });
    }

    /// Node `id`'s content replaced by `entries`; `mods` modifications are counted (the
    /// entries of a rewrite; none for a replayed image).
    pub fn image(&mut self, id: PageId, level: u32, entries: Vec<u8>, mods: u64, op: u64) {
        self.update(id, op, NodeStatus::Modified, level, |n| {
            if n.status == NodeStatus::Deleted {
                n.status = NodeStatus::Modified;
            }
            n.level = level;
            n.mods += mods;
            n.image = Some(entries);
            n.changes.clear();
        });
    }

    /// Node `id` deleted. A node created since its page was last written leaves the buffer
    /// (it never reached its page); the others become "deleted".
    pub fn delete(&mut self, id: PageId, level: u32, op: u64) {
        if self
            .nodes
            .get(id)
            .is_some_and(|n| n.status == NodeStatus::New)
        {
            self.remove(id);
            return;
        }
        self.update(id, op, NodeStatus::Deleted, level, |n| {
            n.status = NodeStatus::Deleted;
            n.mods += 1;
            n.image = None;
            n.changes.clear();
        });
    }

    /// Logs (in `core`'s log) and buffers a node created with `entries` at operation `op`
    /// (a `Create` record).
    pub(crate) fn logged_create(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        entries: Vec<u8>,
        op: u64,
    ) -> Result<()> {
        let stamp = None;
        core.append(NodeRecord::Create {
            id,
            level,
            stamp,
            entries: &entries,
        })?;
        self.create(id, level, entries, op);
        Ok(())
    }

    /// Logs and buffers a node update's `changes` (a `Modify` record).
    pub(crate) fn logged_modify(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        changes: Vec<RawChange>,
        op: u64,
    ) -> Result<()> {
        let stamp = None;
        core.append(NodeRecord::Modify {
            id,
            level,
            stamp,
            changes: &changes,
        })?;
        self.modify(id, level, changes, op);
        Ok(())
    }

    /// Logs and buffers a rewrite of node `id` with `entries` (a `Rewrite` record; its
    /// entries count as modifications).
    pub(crate) fn logged_rewrite(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        entries: Vec<u8>,
        op: u64,
    ) -> Result<()> {
        let rec = Record::Rewrite {
            id,
            level,
            stamp: None,
            entries,
        };
        core.append(&rec)?;
        let Record::Rewrite { entries, .. } = rec else {
            unreachable!("just built")
        };
        let n = (entries.len() / core.layout.entry_size()) as u64;
        self.image(id, level, entries, n, op);
        Ok(())
    }

    /// Logs and buffers the deletion of node `id` (a `Free` record).
    pub(crate) fn logged_delete(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        op: u64,
    ) -> Result<()> {
        core.append(Record::Free(id))?;
        self.delete(id, level, op);
        Ok(())
    }

    /// Drops node `id` (its changes reached its page); returns it.
    pub fn remove(&mut self, id: PageId) -> Option<BufNode> {
        let n = self.nodes.remove(id)?;
        self.watch.removed(id, n.mods, &self.nodes);
        Some(n)
    }

    /// The records that rebuild the buffered nodes in a compacted log (after its snapshot
    /// of allocation and metadata).
    pub(crate) fn snapshot_records(&self) -> Vec<Record> {
        let mut out = Vec::new();
        for (id, n) in self.iter() {
            let level = n.level;
            match (n.status, &n.image) {
                (NodeStatus::Deleted, _) => out.push(Record::Deleted { id, level }),
                (NodeStatus::New, Some(entries)) => out.push(Record::Create {
                    id,
                    level,
                    stamp: None,
                    entries: entries.clone(),
                }),
                (_, Some(entries)) => out.push(Record::Image {
                    id,
                    level,
                    entries: entries.clone(),
                }),
                (_, None) => {}
            }
            if n.status != NodeStatus::Deleted && !n.changes.is_empty() {
                out.push(Record::Modify {
                    id,
                    level,
                    stamp: None,
                    changes: n.changes.clone(),
                });
            }
        }
        out
    }

    /// The records of [`Self::snapshot_records`], borrowing the buffer (what FAST
    /// compacts its log from, at every compaction: no copy of the buffer).
    pub(crate) fn snapshot(&self) -> impl Iterator<Item = NodeRecord<'_>> {
        self.iter().flat_map(|(id, n)| {
            let level = n.level;
            let head = match (n.status, &n.image) {
                (NodeStatus::Deleted, _) => Some(NodeRecord::Deleted { id, level }),
                (NodeStatus::New, Some(entries)) => Some(NodeRecord::Create {
                    id,
                    level,
                    stamp: None,
                    entries,
                }),
                (_, Some(entries)) => Some(NodeRecord::Image { id, level, entries }),
                (_, None) => None,
            };
            let changes = (n.status != NodeStatus::Deleted && !n.changes.is_empty()).then(|| {
                NodeRecord::Modify {
                    id,
                    level,
                    stamp: None,
                    changes: &n.changes,
                }
            });
            head.into_iter().chain(changes)
        })
    }

    /// Replays one recovered record of operation `op` onto the buffer and `header` (the
    /// records the buffer logs, and snapshots, metadata and `Written`); returns a record of
    /// another kind untouched, for the policy.
    pub fn replay(
        &mut self,
        header: &mut StoreHeader,
        r: Record,
        op: u64,
        rep: &mut RecoveryReport,
    ) -> Option<Record> {
        match r {
            Record::Snapshot {
                meta,
                next_page,
                free,
                ..
            } => {
                header.meta = meta;
                header.next_page = next_page;
                header.free = free;
            }
            Record::Create {
                id, level, entries, ..
            } => {
                header.replay_allocate(id);
                self.create(id, level, entries, op);
            }
            Record::Modify {
                id, level, changes, ..
            } => self.modify(id, level, changes, op),
            // A rewrite replays as an image (log format 1 logged rewrites as images);
            // modification counts restart at recovery.
            Record::Rewrite {
                id, level, entries, ..
            }
            | Record::Image { id, level, entries } => self.image(id, level, entries, 0, op),
            Record::Free(id) => {
                let level = self.get(id).map_or(0, |n| n.level);
                self.delete(id, level, op);
                header.free.push(id);
            }
            Record::Deleted { id, level } => self.delete(id, level, op),
            Record::Meta(m) => header.meta = Some(m),
            Record::Written(ids) => {
                for id in ids {
                    if let Some(n) = self.remove(id) {
                        rep.records_skipped += n.records;
                    }
                }
            }
            other => return Some(other),
        }
        None
    }
}
