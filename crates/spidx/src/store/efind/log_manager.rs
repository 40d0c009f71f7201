//! eFIND's log manager (Carniel et al. 2019, Goal 5) on the shared [`Log`](crate::store::log):
//! what the eFIND store logs and how a restart rebuilds the write buffer from it.
//!
//! Records (the skeleton's [`Record`]s in the compact format, [`RecordFormat::Compact`]:
//! every change carries its logical time; the shared log frames, checksums and commits them):
//! - at entry granularity, one per change: `Create` (a new node with its entries), `Change`
//!   (one positional set / push / remove), `Rewrite` (all entries), `Alloc` / `Free` (page
//!   allocation; `Free` is a node deletion) and `Meta` (the tree's root, height, count);
//! - `Image`: written for every *modified* node of a flushing unit, before the unit's pages
//!   are written in place (the log is synced first): the node's full entry list;
//! - `Snapshot` and `State`: a compacted log is one `Snapshot` (allocation, metadata,
//!   logical clock) followed by the `State` of every buffered node.
//!
//! [`RecordFormat::Compact`]: crate::store::buffered::RecordFormat::Compact
//!
//! Each tree operation's records are one committed log operation (appended during the
//! operation, committed at `end_operation`), so recovery never replays half an operation.
//!
//! **Torn in-place writes.** A flush overwrites pages in place; a power cut can tear them. A
//! restart therefore never trusts a page written since the last checkpoint: replaying an
//! `Image` record makes the node a *new* buffered node holding all its entries (a new
//! node's merged content ignores the page on the device), so a torn page is simply written
//! again by a later flush. New nodes need no `Image` record: their `Create` and later
//! records already rebuild them completely. The only pages recovery reads are those of
//! nodes neither flushed nor freed since the checkpoint, which compaction made durable (it
//! syncs the device first). The cost: the entries of every flushed modified node are logged once more
//! (at most one page per node, a sequential write), and a restart re-flushes those nodes.
//!
//! Recovery replays in log order with one precaution: records of a node before its last
//! `Image` or `Free` record are skipped (an `Image` record holds their combined effect; a
//! freed node is gone; in both cases the page may since have been overwritten or torn, e.g.
//! by a new node reusing it).

use std::collections::HashMap;

use super::write_buffer::BufNode;
use crate::node::PageId;
use crate::store::buffered::Record;
use crate::store::StoreHeader;
use crate::{Error, Result};

fn stamp_of(stamp: Option<u64>) -> Result<u64> {
    stamp.ok_or_else(|| Error::corrupted("eFIND log", "a change without its logical time"))
}

/// Splits concatenated entries.
pub(crate) fn split_entries(bytes: &[u8], entry_size: usize) -> Result<Vec<Box<[u8]>>> {
    if !bytes.len().is_multiple_of(entry_size) {
        return Err(Error::corrupted(
            "eFIND log record",
            format!(
                "{} entry bytes are not whole {entry_size}-byte entries",
                bytes.len()
            ),
        ));
    }
    Ok(bytes.chunks_exact(entry_size).map(Box::from).collect())
}

/// The entries of node `id` in a log record, at most `fits` of them.
fn node_entries(
    id: PageId,
    bytes: &[u8],
    entry_size: usize,
    fits: usize,
) -> Result<Vec<Box<[u8]>>> {
    let e = split_entries(bytes, entry_size)?;
    if e.len() > fits {
        return Err(Error::corrupted(
            "eFIND log",
            format!(
                "node {id} logged with {} entries ({fits} fit in a page)",
                e.len()
            ),
        ));
    }
    Ok(e)
}

/// What a restart rebuilt.
pub(crate) struct Replayed {
    /// Allocation and metadata.
    pub header: StoreHeader,
    /// Logical clock.
    pub clock: u64,
    /// The write buffer.
    pub nodes: HashMap<PageId, BufNode>,
}

/// Replays `records` in order over `header` (the saved header, used when the log holds no
/// checkpoint). `stored_len(id, level)` reads the entry count of a node's page on the
/// device (only for nodes not flushed since the checkpoint). Every record is validated
/// before it is applied (a node never holds more than `fits` entries, changes name
/// existing entries, pages are allocated and freed once): a log that breaks any of it is
/// damage, an error.
pub(crate) fn replay(
    records: &[Record],
    mut header: StoreHeader,
    entry_size: usize,
    fits: usize,
    mut stored_len: impl FnMut(PageId, u32) -> Result<u32>,
) -> Result<Replayed> {
    // Index of the last record after which a node's earlier records no longer matter: its
    // last `Image` (holds their effect) or `Free` (the node is gone; a later node on the
    // same page may have overwritten the page in place).
    let mut last_reset: HashMap<u64, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        if let Record::Image { id, .. } | Record::Free(id) = r {
            last_reset.insert(*id, i);
        }
    }
    let mut clock = 0u64;
    let mut nodes: HashMap<PageId, BufNode> = HashMap::new();
    let bad = |m: String| Error::corrupted("eFIND log", m);
    for (i, r) in records.iter().enumerate() {
        if let Some(id) = r.node() {
            if last_reset.get(&id).is_some_and(|&j| i < j) {
                continue;
            }
        }
        match r {
            Record::Snapshot {
                meta,
                next_page,
                free,
                clock: c,
            } => {
                header.meta = *meta;
                header.next_page = *next_page;
                header.free = free.clone();
                clock = c.ok_or_else(|| bad("a snapshot without its clock".into()))?;
                nodes.clear();
            }
            Record::Meta(m) => header.meta = Some(*m),
            Record::Alloc(id) => {
                if *id != header.next_page && !header.free.contains(id) {
                    return Err(bad(format!(
                        "page {id} allocated but neither free nor next"
                    )));
                }
                header.replay_allocate(*id);
            }
            Record::Free(id) => {
                if *id >= header.next_page || header.free.contains(id) {
                    return Err(bad(format!(
                        "page {id} freed but not in use ({} pages allocated)",
                        header.next_page
                    )));
                }
                nodes.remove(id);
                header.free.push(*id);
            }
            Record::Create {
                id,
                level,
                stamp,
                entries,
            } => {
                let stamp = stamp_of(*stamp)?;
                let e = node_entries(*id, entries, entry_size, fits)?;
                nodes.insert(*id, BufNode::new_node(*level, stamp, e));
                clock = clock.max(stamp);
            }
            Record::Image { id, level, entries } => {
                let e = node_entries(*id, entries, entry_size, fits)?;
                let keep = nodes.get(id).map(|n| (n.mods, n.stamp));
                let mut n = BufNode::new_node(*level, 0, e);
                if let Some((mods, stamp)) = keep {
                    n.mods = mods;
                    n.stamp = stamp;
                }
                nodes.insert(*id, n);
            }
            Record::Change {
                id,
                level,
                stamp,
                change,
            } => {
                let stamp = &stamp_of(*stamp)?;
                let mut n = match nodes.remove(id) {
                    Some(n) => n,
                    None => BufNode::modified(*level, *stamp, stored_len(*id, *level)?),
                };
                n.validate(*id, std::slice::from_ref(change), fits)
                    .map_err(|e| bad(format!("change of node {id}: {e}")))?;
                n.apply(*id, change)?;
                n.stamp = *stamp;
                clock = clock.max(*stamp);
                nodes.insert(*id, n);
            }
            Record::Rewrite {
                id,
                level,
                stamp,
                entries,
            } => {
                let stamp = &stamp_of(*stamp)?;
                let mut n = match nodes.remove(id) {
                    Some(n) => n,
                    None => BufNode::modified(*level, *stamp, stored_len(*id, *level)?),
                };
                n.level = *level;
                n.rewrite(node_entries(*id, entries, entry_size, fits)?);
                n.stamp = *stamp;
                clock = clock.max(*stamp);
                nodes.insert(*id, n);
            }
            Record::State { id, state } => {
                clock = clock.max(state.stamp);
                nodes.insert(
                    *id,
                    BufNode::from_state(*id, state.clone(), entry_size, fits)?,
                );
            }
            other => return Err(bad(format!("{other:?} is not an eFIND record"))),
        }
    }
    Ok(Replayed {
        header,
        clock,
        nodes,
    })
}
