//! FAST's buffered nodes (Sarwat et al. 2013, section 4), held in the skeleton's
//! [`NodeBuffer`]: per node a status (new, modified, deleted) and the ordered list of its
//! entry-level modifications since it last reached its page. A node that is new, or whose
//! content was replaced as a whole, keeps its full entry list (an *image*) instead of a
//! base page. Sizes are bytes of what is held: 16 bytes of bookkeeping per node, plus its
//! image's entries, plus 8 bytes per change and the changed entry.

use crate::node::{NodeLayout, PageId};
use crate::store::buffered::{
    BufferGauges, BufferedNode, Core, NodeBuffer, NodeRecord, NodeStatus, RawChange, Record,
    RecoveryReport,
};
use crate::store::{Change, StoreHeader};

use super::standings::UnitStandings;
use crate::{Error, Result};

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

/// FAST's write buffer: the skeleton's [`NodeBuffer`] with FAST's bookkeeping of changes,
/// and (for FAST's flush policies) the standing of every flushing unit.
#[derive(Default)]
pub struct WriteBuffer {
    nodes: NodeBuffer<BufNode>,
    /// The unit size and the units' standings, kept if asked for ([`Self::with_units`]).
    units: Option<(u64, UnitStandings)>,
}

impl WriteBuffer {
    /// An empty buffer that keeps the standing of every flushing unit of `unit` pages
    /// (FAST's policies choose by it; the flush-all stores need none).
    pub fn with_units(unit: u32) -> Self {
        WriteBuffer {
            nodes: NodeBuffer::default(),
            units: Some((u64::from(unit.max(1)), UnitStandings::default())),
        }
    }

    /// The flushing units' standings, if kept.
    pub fn standings(&self) -> Option<&UnitStandings> {
        self.units.as_ref().map(|(_, s)| s)
    }

    /// Brings the standing of node `id`'s unit up to date after the node changed from
    /// `old_mods` modifications (0 if it was not buffered) to `new_mods` at operation `op`; operation
    /// numbers never decrease, so the unit's latest change is now `op`.
    fn restand_changed(&mut self, id: PageId, old_mods: u64, new_mods: u64, op: u64) {
        let Some((f, st)) = &mut self.units else {
            return;
        };
        let u = id / *f;
        let mut info = st.get(u).unwrap_or_default();
        info.mods = info.mods - old_mods + new_mods;
        info.last = info.last.max(op);
        st.set(u, Some(info));
    }

    /// Brings the standing of node `id`'s unit up to date after the node, which held
    /// `mods` modifications, left the buffer.
    fn restand_removed(&mut self, id: PageId, mods: u64) {
        let Some((f, st)) = &mut self.units else {
            return;
        };
        let u = id / *f;
        let mut rest = self.nodes.range(u * *f..(u + 1) * *f).peekable();
        if rest.peek().is_none() {
            st.set(u, None);
            return;
        }
        let last = rest.map(|(_, n)| n.last_op).max().unwrap_or(0);
        let mut info = st.get(u).unwrap_or_default();
        info.mods -= mods;
        info.last = last;
        st.set(u, Some(info));
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
        self.restand_changed(id, old_mods, new_mods, op);
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
    /// (FAST's and the LCR-tree's `Create` record).
    pub fn logged_create(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        entries: Vec<u8>,
        op: u64,
    ) -> Result<()> {
        let rec = Record::Create {
            id,
            level,
            stamp: None,
            entries,
        };
        core.append(&rec)?;
        let Record::Create { entries, .. } = rec else {
            unreachable!("just built")
        };
        self.create(id, level, entries, op);
        Ok(())
    }

    /// Logs and buffers a node update's `changes` (a `Modify` record).
    pub fn logged_modify(
        &mut self,
        core: &mut Core,
        id: PageId,
        level: u32,
        changes: Vec<RawChange>,
        op: u64,
    ) -> Result<()> {
        let rec = Record::Modify {
            id,
            level,
            stamp: None,
            changes,
        };
        core.append(&rec)?;
        let Record::Modify { changes, .. } = rec else {
            unreachable!("just built")
        };
        self.modify(id, level, changes, op);
        Ok(())
    }

    /// Logs and buffers a rewrite of node `id` with `entries` (a `Rewrite` record; its
    /// entries count as modifications).
    pub fn logged_rewrite(
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
    pub fn logged_delete(
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
        self.restand_removed(id, n.mods);
        Some(n)
    }

    /// The records that rebuild the buffered nodes in a compacted log (after its snapshot
    /// of allocation and metadata).
    pub fn snapshot_records(&self) -> Vec<Record> {
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
    pub fn snapshot(&self) -> impl Iterator<Item = NodeRecord<'_>> {
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
    /// records FAST logs, which the LCR-tree logs too); returns a record of another kind
    /// untouched, for the caller.
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
            other @ (Record::Alloc(_)
            | Record::Change { .. }
            | Record::State { .. }
            | Record::LogPage { .. }
            | Record::UnitPages { .. }) => return Some(other),
        }
        None
    }
}

/// The [`BufferPolicy`](crate::store::buffered::BufferPolicy) hooks of a policy whose buffer
/// is a [`WriteBuffer`] in its field `buf`, with its operation count in its field `op`
/// (FAST, the LCR-tree, RFTL): created, changed and rewritten nodes are logged and buffered
/// as FAST logs and buffers them, new metadata is logged, the gauges are the buffer's.
///
/// The hooks also keep the policy's assembled nodes (a
/// [`LazyNodeCache`](crate::store::buffered::node_cache::LazyNodeCache) in its field
/// `nodes`) exact: a created or rewritten node is forgotten, a modification is applied to
/// the cached page (forgotten if the modification fails).
macro_rules! logged_write_buffer_hooks {
    () => {
        fn create(
            &mut self,
            core: &mut $crate::store::buffered::Core,
            id: $crate::node::PageId,
            level: u32,
            entries: Vec<u8>,
        ) -> $crate::Result<()> {
            self.nodes.forget(id);
            self.buf.logged_create(core, id, level, entries, self.op)
        }

        fn modify(
            &mut self,
            core: &mut $crate::store::buffered::Core,
            id: $crate::node::PageId,
            level: u32,
            changes: Vec<$crate::store::buffered::RawChange>,
        ) -> $crate::Result<()> {
            self.nodes.modify(id, level, &changes);
            let done = self.buf.logged_modify(core, id, level, changes, self.op);
            if done.is_err() {
                self.nodes.forget(id);
            }
            done
        }

        fn rewrite(
            &mut self,
            core: &mut $crate::store::buffered::Core,
            id: $crate::node::PageId,
            level: u32,
            entries: Vec<u8>,
        ) -> $crate::Result<()> {
            self.nodes.forget(id);
            self.buf.logged_rewrite(core, id, level, entries, self.op)
        }

        fn log_meta(
            &mut self,
            core: &mut $crate::store::buffered::Core,
            meta: $crate::store::TreeMeta,
        ) -> $crate::Result<()> {
            core.append(&$crate::store::buffered::Record::Meta(meta))
        }

        fn buffer_gauges(&self) -> $crate::store::buffered::BufferGauges {
            self.buf.gauges()
        }
    };
}
pub(crate) use logged_write_buffer_hooks;

/// The [`BufferPolicy`](crate::store::buffered::BufferPolicy) hooks of a flush-all policy
/// over a [`WriteBuffer`] (the LCR-tree, RFTL; see [`logged_write_buffer_hooks`]): at the
/// end of an operation that leaves more than `params.write_buffer` bytes buffered the whole
/// buffer is flushed (its `flush_all`), and the log is compacted (its `compact_log`) when
/// half full; write-backs and checkpoints flush everything.
macro_rules! flush_all_hooks {
    () => {
        fn end_operation(
            &mut self,
            core: &mut $crate::store::buffered::Core,
        ) -> $crate::Result<()> {
            self.op += 1;
            if self.buf.bytes() as u64 > self.params.write_buffer {
                self.flush_all(core)?;
            }
            if core.log.needs_compaction() {
                self.compact_log(core)?;
            }
            Ok(())
        }

        fn write_back(&mut self, core: &mut $crate::store::buffered::Core) -> $crate::Result<()> {
            self.flush_all(core)
        }

        fn checkpoint(&mut self, core: &mut $crate::store::buffered::Core) -> $crate::Result<()> {
            self.flush_all(core)?;
            self.compact_log(core)
        }

        fn settings(&self) -> $crate::store::buffered::BufferSettings {
            $crate::store::buffered::BufferSettings {
                write_buffer: self.params.write_buffer,
                flush_policy: "flush-all".into(),
                ..Default::default()
            }
        }
    };
}
pub(crate) use flush_all_hooks;

/// Applies raw `changes` to `page` (a node page holding `count` entries, whose header is
/// rewritten for `level`), as the direct store applies them in place.
pub fn apply_raw(
    layout: &NodeLayout,
    id: PageId,
    page: &mut [u8],
    level: u32,
    count: usize,
    changes: &[RawChange],
) -> Result<()> {
    apply_raw_unsealed(layout, id, page, level, count, changes)?;
    layout.seal(page);
    Ok(())
}

/// [`apply_raw`] without the checksum: only the header's fields are written; the caller
/// seals the page ([`NodeLayout::seal`]) once it is complete.
pub fn apply_raw_unsealed(
    layout: &NodeLayout,
    id: PageId,
    page: &mut [u8],
    level: u32,
    mut count: usize,
    changes: &[RawChange],
) -> Result<()> {
    for c in changes {
        let c = match c {
            Change::Set { pos, entry } => Change::Set {
                pos: *pos,
                entry: &entry[..],
            },
            Change::Push(entry) => Change::Push(&entry[..]),
            Change::Remove { pos } => Change::Remove { pos: *pos },
        };
        apply_one(layout, id, page, &mut count, c)?;
    }
    layout.put_header_fields(page, level, count);
    Ok(())
}

/// Applies one raw change to `page`, a node page holding `*count` entries (updated); the
/// header is not written (see [`apply_raw`]).
pub fn apply_one(
    layout: &NodeLayout,
    id: PageId,
    page: &mut [u8],
    count: &mut usize,
    change: Change<&[u8]>,
) -> Result<()> {
    let es = layout.entry_size();
    let bad = |pos: usize, count: usize| {
        Error::corrupted(
            format!("write buffer of node {id}"),
            format!("entry {pos} does not exist ({count} entries)"),
        )
    };
    match change {
        Change::Set { pos, entry } => {
            if pos >= *count {
                return Err(bad(pos, *count));
            }
            let o = layout.entry_offset(pos);
            page[o..o + es].copy_from_slice(entry);
        }
        Change::Push(entry) => {
            if *count >= layout.fits() {
                return Err(Error::corrupted(
                    format!("write buffer of node {id}"),
                    format!("node is full ({count} entries)"),
                ));
            }
            let o = layout.entry_offset(*count);
            page[o..o + es].copy_from_slice(entry);
            *count += 1;
        }
        Change::Remove { pos } => {
            if pos >= *count {
                return Err(bad(pos, *count));
            }
            let start = layout.entry_offset(pos);
            let end = layout.entry_offset(*count);
            page.copy_within(start + es..end, start);
            page[end - es..end].fill(0);
            *count -= 1;
        }
    }
    Ok(())
}

/// Builds a page from raw `entries` at `level`.
pub fn page_from_entries(
    layout: &NodeLayout,
    id: PageId,
    level: u32,
    entries: &[u8],
    page: &mut [u8],
) -> Result<()> {
    page_from_entries_unsealed(layout, id, level, entries, page)?;
    layout.seal(page);
    Ok(())
}

/// [`page_from_entries`] without the checksum: only the header's fields are written; the
/// caller seals the page ([`NodeLayout::seal`]) once it is complete.
pub fn page_from_entries_unsealed(
    layout: &NodeLayout,
    id: PageId,
    level: u32,
    entries: &[u8],
    page: &mut [u8],
) -> Result<()> {
    let es = layout.entry_size();
    let count = entries.len() / es;
    if count > layout.fits() {
        return Err(Error::corrupted(
            format!("write buffer of node {id}"),
            format!("{count} entries do not fit a page"),
        ));
    }
    page.fill(0);
    let o = layout.entry_offset(0);
    page[o..o + entries.len()].copy_from_slice(entries);
    layout.put_header_fields(page, level, count);
    Ok(())
}
