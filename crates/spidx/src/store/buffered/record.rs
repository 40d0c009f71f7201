//! The one log record vocabulary and codec of every buffered store, written
//! as payloads of the shared [`Log`](crate::store::log::Log) (which frames, checksums and
//! commits them without looking inside).
//!
//! # Vocabulary
//! One [`Record`] type names every fact a buffered store logs; each policy logs the subset
//! its paper describes:
//!
//! | record | meaning | FAST | eFIND |
//! |---|---|---|---|
//! | `Create` | a node created with its entries (allocates its page) | ✓ | ✓ |
//! | `Modify` | a node update: its entry-level changes | ✓ | |
//! | `Change` | one entry-level change (eFIND logs at entry granularity) | | ✓ |
//! | `Rewrite` | all entries of a node replaced by the tree | ✓ | ✓ |
//! | `Image` | a node's full content before it is written in place (torn-write protection), or a buffered image in a compacted log | ✓ | ✓ |
//! | `Free` | a node deleted, its page freed | ✓ | ✓ |
//! | `Alloc` | a page allocated | | ✓ |
//! | `Deleted` | a buffered node in state "deleted" (compacted log) | ✓ | |
//! | `Meta` | new tree metadata | ✓ | ✓ |
//! | `Written` | these buffered nodes reached their pages | ✓ | |
//! | `Snapshot` | allocation, metadata (and the logical clock) at a compaction | ✓ | ✓ |
//! | `State` | a buffered node's entry versions (compacted log) | | ✓ |
//! | `Own` | a record of one policy's own, opaque to the others (the LCR-tree's mapping table, RFTL's node translation table) | | |
//!
//! # Formats
//! The codec is one; the [`RecordFormat`] says how integers, lengths and timestamps are
//! written, as each policy's paper stores them:
//! * [`RecordFormat::Fixed`] (FAST, Sarwat et al. 2013: records of fixed-size fields and no
//!   timestamps; FAST's recency is the operation count, rebuilt by replay): little-endian
//!   `u64` page ids and counts, `u32` levels and positions, entries in the layout's raw
//!   encoding delimited by the entry size, and a record's one variable-length field (its
//!   entries, changes or page list) running to the end of the record; no timestamps.
//! * [`RecordFormat::Compact`] (eFIND, Carniel et al. 2019: every buffered change carries
//!   the logical time of the change): LEB128 variable-length integers, byte strings and
//!   lists prefixed by their length, timestamps on changes and the clock in snapshots.
//!
//! A policy's own records ([`Record::Own`]) take kinds from [`OWN_FIRST`] on; the policy
//! writes and reads their body with the same codec ([`Writer`], [`Reader`]) and refuses a
//! kind it does not log. Every record starts with a one-byte kind; changes carry a one-byte change kind (1 set,
//! 2 push, 3 remove). The formats keep the record sizes of the two codecs they replace
//! (FAST's hand-written one byte for byte; eFIND's postcard encoding size for size), so the
//! log volumes, and every count derived from them, are unchanged. Logs of the old eFIND
//! codec (log format 1) are refused with a clear error; FAST's old records are read as
//! they are (see [`crate::store::log`]'s format versions).

use crate::node::PageId;
use crate::store::{Change, TreeMeta};
use crate::{Error, Result};

use super::RawChange;

mod writer;

pub(crate) use self::writer::{EncodeRecord, Encoded, NodeRecord, Writer};

/// How a policy's records are encoded. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordFormat {
    /// Fixed-width integers, entries delimited by the entry size, no timestamps (FAST).
    Fixed,
    /// Variable-length integers, length-prefixed strings and lists, timestamps (eFIND).
    Compact,
}

/// A buffered node's entry versions, as eFIND keeps it in a compacted log (see
/// [`crate::store::efind::write_buffer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    /// Status new (else modified).
    pub new: bool,
    /// Modification count.
    pub mods: u64,
    /// Level.
    pub level: u32,
    /// Time of the last change.
    pub stamp: u64,
    /// Entries of the stored page the versions apply to.
    pub base_len: u32,
    /// Next appended-entry number.
    pub next_new: u64,
    /// Entry versions by key (`None`: a removed stored entry).
    pub versions: Vec<(u64, Option<Vec<u8>>)>,
}

/// One log record of a buffered store. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A node created with `entries` (concatenated raw entries); allocates its page.
    Create {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Logical time (formats with timestamps only).
        stamp: Option<u64>,
        /// Entries.
        entries: Vec<u8>,
    },
    /// A node update: entry-level changes in order.
    Modify {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Logical time (formats with timestamps only).
        stamp: Option<u64>,
        /// The changes.
        changes: Vec<RawChange>,
    },
    /// One entry-level change.
    Change {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Logical time (formats with timestamps only).
        stamp: Option<u64>,
        /// The change.
        change: RawChange,
    },
    /// All entries of a node replaced by the tree.
    Rewrite {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Logical time (formats with timestamps only).
        stamp: Option<u64>,
        /// Entries.
        entries: Vec<u8>,
    },
    /// A node's full content: logged before it is written in place, or a buffered image in
    /// a compacted log.
    Image {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Entries.
        entries: Vec<u8>,
    },
    /// A node deleted, its page freed.
    Free(PageId),
    /// A page allocated (from the free list or the end).
    Alloc(PageId),
    /// A buffered node in state "deleted" (compacted log: its page is already free there).
    Deleted {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
    },
    /// New tree metadata.
    Meta(TreeMeta),
    /// These buffered nodes reached their pages (durable).
    Written(Vec<PageId>),
    /// Allocation and metadata at a compaction (and the logical clock, in formats with
    /// timestamps).
    Snapshot {
        /// Tree metadata.
        meta: Option<TreeMeta>,
        /// First never-used page.
        next_page: PageId,
        /// Freed pages.
        free: Vec<PageId>,
        /// Logical clock (formats with timestamps only).
        clock: Option<u64>,
    },
    /// A buffered node's entry versions (compacted log).
    State {
        /// Page.
        id: PageId,
        /// The node.
        state: NodeState,
    },
    /// A record of one policy's own (kind [`OWN_FIRST`] or later), its body written and
    /// read by the policy ([`Record::own`], [`Record::read_own`]).
    Own {
        /// The record kind.
        kind: u8,
        /// The body, in the policy's format.
        body: Vec<u8>,
    },
}

const CREATE: u8 = 1;
const MODIFY: u8 = 2;
const IMAGE: u8 = 3;
const FREE: u8 = 4;
const DELETED: u8 = 5;
const META: u8 = 6;
const WRITTEN: u8 = 7;
const SNAPSHOT: u8 = 8;
const ALLOC: u8 = 9;
const CHANGE: u8 = 10;
const REWRITE: u8 = 11;
/// The tag of a `State` record (eFIND encodes its states straight from its write buffer).
pub(crate) const STATE: u8 = 12;
/// The first record kind a policy may give a record of its own ([`Record::Own`]).
pub(crate) const OWN_FIRST: u8 = 13;

const SET: u8 = 1;
const PUSH: u8 = 2;
const REMOVE: u8 = 3;

impl Record {
    /// The page of the node the record describes (none for allocation, metadata and
    /// snapshot records).
    pub fn node(&self) -> Option<PageId> {
        match self {
            Record::Create { id, .. }
            | Record::Modify { id, .. }
            | Record::Change { id, .. }
            | Record::Rewrite { id, .. }
            | Record::Image { id, .. }
            | Record::Deleted { id, .. }
            | Record::State { id, .. } => Some(*id),
            _ => None,
        }
    }

    /// The record as a [`NodeRecord`] (borrowing its contents), for the kinds that have
    /// one; they are encoded by it, so both encode alike.
    pub(crate) fn as_node_record(&self) -> Option<NodeRecord<'_>> {
        Some(match self {
            Record::Create {
                id,
                level,
                stamp,
                entries,
            } => NodeRecord::Create {
                id: *id,
                level: *level,
                stamp: *stamp,
                entries,
            },
            Record::Modify {
                id,
                level,
                stamp,
                changes,
            } => NodeRecord::Modify {
                id: *id,
                level: *level,
                stamp: *stamp,
                changes,
            },
            Record::Image { id, level, entries } => NodeRecord::Image {
                id: *id,
                level: *level,
                entries,
            },
            Record::Deleted { id, level } => NodeRecord::Deleted {
                id: *id,
                level: *level,
            },
            _ => return None,
        })
    }

    /// A record of a policy's own of `kind` ([`OWN_FIRST`] or later), its body written by
    /// `body` in `format`.
    pub fn own(kind: u8, format: RecordFormat, body: impl FnOnce(&mut Writer<'_>)) -> Record {
        let mut b = Vec::new();
        body(&mut Writer { b: &mut b, format });
        Record::Own { kind, body: b }
    }

    /// Reads the body of a policy's own record of `kind` with `read` (which must read all
    /// of it); `None` for any other record.
    pub(crate) fn read_own<T>(
        &self,
        kind: u8,
        format: RecordFormat,
        read: impl FnOnce(&mut Reader<'_>) -> Result<T>,
    ) -> Option<Result<T>> {
        let Record::Own { kind: k, body } = self else {
            return None;
        };
        if *k != kind {
            return None;
        }
        let mut r = Reader {
            p: body,
            at: 0,
            format,
            entry_size: 0,
        };
        Some(read(&mut r).and_then(|v| match r.done() {
            true => Ok(v),
            false => Err(bad("trailing bytes")),
        }))
    }

    /// Encodes the record as a log payload in `format`.
    pub(crate) fn encode(&self, format: RecordFormat) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.encode_into(format, &mut out)?;
        Ok(out)
    }

    /// Encodes the record as a log payload in `format`, appended to `out` (a buffer the
    /// caller reuses: records are encoded at every change of a buffered store). On an
    /// error `out` may hold part of the record.
    pub(crate) fn encode_into(&self, format: RecordFormat, out: &mut Vec<u8>) -> Result<()> {
        if let Some(r) = self.as_node_record() {
            return r.encode_into(format, out);
        }
        let mut w = Writer { b: out, format };
        match self {
            Record::Create { .. }
            | Record::Modify { .. }
            | Record::Image { .. }
            | Record::Deleted { .. } => unreachable!("encoded as a node record above"),
            Record::Rewrite {
                id,
                level,
                stamp,
                entries,
            } => {
                w.b.push(REWRITE);
                w.id(*id);
                w.small(*level);
                w.stamp(*stamp)?;
                w.bytes(entries);
            }
            Record::Change {
                id,
                level,
                stamp,
                change,
            } => {
                w.b.push(CHANGE);
                w.id(*id);
                w.small(*level);
                w.stamp(*stamp)?;
                w.change(change)?;
            }
            Record::Free(id) | Record::Alloc(id) => {
                w.b.push(if matches!(self, Record::Free(_)) {
                    FREE
                } else {
                    ALLOC
                });
                w.id(*id);
            }
            Record::Meta(m) => {
                w.b.push(META);
                w.meta(m);
            }
            Record::Written(ids) => {
                w.b.push(WRITTEN);
                w.ids(ids);
            }
            Record::Snapshot {
                meta,
                next_page,
                free,
                clock,
            } => {
                w.b.push(SNAPSHOT);
                match meta {
                    Some(m) => {
                        w.b.push(1);
                        w.meta(m);
                    }
                    None => w.b.push(0),
                }
                w.id(*next_page);
                w.ids(free);
                w.stamp(*clock)?;
            }
            Record::Own { kind, body } => {
                if *kind < OWN_FIRST {
                    return Err(Error::invalid(
                        "log record",
                        format!("a policy's own record kind {kind} is below {OWN_FIRST}"),
                    ));
                }
                w.b.push(*kind);
                w.b.extend_from_slice(body);
            }
            Record::State { id, state } => {
                w.b.push(STATE);
                w.id(*id);
                w.b.push(u8::from(state.new));
                w.id(state.mods);
                w.small(state.level);
                w.id(state.stamp);
                w.small(state.base_len);
                w.id(state.next_new);
                w.len(state.versions.len());
                for (key, v) in &state.versions {
                    w.id(*key);
                    match v {
                        Some(e) => {
                            w.b.push(1);
                            w.entry(e);
                        }
                        None => w.b.push(0),
                    }
                }
            }
        }
        Ok(())
    }

    /// Decodes a payload written in `format`; `entry_size` is the layout's raw entry size.
    pub(crate) fn decode(p: &[u8], format: RecordFormat, entry_size: usize) -> Result<Record> {
        let mut r = Reader {
            p,
            at: 1,
            format,
            entry_size,
        };
        let kind = *p.first().ok_or_else(|| bad("empty record"))?;
        let rec = match kind {
            CREATE | REWRITE => {
                let id = r.id()?;
                let level = r.small()?;
                let stamp = r.stamp()?;
                let entries = r.entries()?;
                if kind == CREATE {
                    Record::Create {
                        id,
                        level,
                        stamp,
                        entries,
                    }
                } else {
                    Record::Rewrite {
                        id,
                        level,
                        stamp,
                        entries,
                    }
                }
            }
            MODIFY => {
                let id = r.id()?;
                let level = r.small()?;
                let stamp = r.stamp()?;
                let changes = r.list(Reader::change)?;
                Record::Modify {
                    id,
                    level,
                    stamp,
                    changes,
                }
            }
            CHANGE => Record::Change {
                id: r.id()?,
                level: r.small()?,
                stamp: r.stamp()?,
                change: r.change()?,
            },
            IMAGE => Record::Image {
                id: r.id()?,
                level: r.small()?,
                entries: r.entries()?,
            },
            FREE => Record::Free(r.id()?),
            ALLOC => Record::Alloc(r.id()?),
            DELETED => Record::Deleted {
                id: r.id()?,
                level: r.small()?,
            },
            META => Record::Meta(r.meta()?),
            WRITTEN => Record::Written(r.list(Reader::id)?),
            SNAPSHOT => {
                let meta = match r.u8()? {
                    0 => None,
                    1 => Some(r.meta()?),
                    k => return Err(bad(&format!("metadata flag {k} is neither 0 nor 1"))),
                };
                let next_page = r.id()?;
                let free = r.list(Reader::id)?;
                let clock = r.stamp()?;
                Record::Snapshot {
                    meta,
                    next_page,
                    free,
                    clock,
                }
            }
            STATE => {
                let id = r.id()?;
                let new = r.flag()?;
                let mods = r.id()?;
                let level = r.small()?;
                let stamp = r.id()?;
                let base_len = r.small()?;
                let next_new = r.id()?;
                let versions = r.list(|r| {
                    let key = r.id()?;
                    let v = if r.flag()? { Some(r.entry()?) } else { None };
                    Ok((key, v))
                })?;
                Record::State {
                    id,
                    state: NodeState {
                        new,
                        mods,
                        level,
                        stamp,
                        base_len,
                        next_new,
                        versions,
                    },
                }
            }
            k if k >= OWN_FIRST => {
                r.at = p.len();
                Record::Own {
                    kind: k,
                    body: p[1..].to_vec(),
                }
            }
            k => return Err(bad(&format!("unknown record kind {k}"))),
        };
        if !r.done() {
            return Err(bad("trailing bytes"));
        }
        Ok(rec)
    }
}

fn bad(why: &str) -> Error {
    Error::corrupted("log record", why.to_string())
}

/// Reads a record's fields in its format (a policy reads the body of its own records with
/// it: [`Record::read_own`]).
pub(crate) struct Reader<'a> {
    p: &'a [u8],
    at: usize,
    format: RecordFormat,
    entry_size: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .p
            .get(self.at..self.at.saturating_add(n))
            .ok_or_else(|| bad("truncated"))?;
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    /// A flag: one byte, 0 or 1.
    pub(crate) fn flag(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            k => Err(bad(&format!("flag {k} is neither 0 nor 1"))),
        }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("integer longer than 64 bits"))
    }

    pub(crate) fn id(&mut self) -> Result<u64> {
        match self.format {
            RecordFormat::Fixed => Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8"))),
            RecordFormat::Compact => self.varint(),
        }
    }

    /// A level or position.
    pub(crate) fn small(&mut self) -> Result<u32> {
        match self.format {
            RecordFormat::Fixed => Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4"))),
            RecordFormat::Compact => {
                u32::try_from(self.varint()?).map_err(|_| bad("32-bit field out of range"))
            }
        }
    }

    fn stamp(&mut self) -> Result<Option<u64>> {
        match self.format {
            RecordFormat::Fixed => Ok(None),
            RecordFormat::Compact => Ok(Some(self.varint()?)),
        }
    }

    fn count(&mut self) -> Result<usize> {
        let n = self.varint()?;
        // Every item takes at least one byte: a count beyond the record is damage.
        if n > (self.p.len() - self.at) as u64 {
            return Err(bad(&format!("count {n} runs past the record")));
        }
        Ok(n as usize)
    }

    /// A list: counted (compact) or running to the end of the record (fixed).
    pub(crate) fn list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        match self.format {
            RecordFormat::Fixed => {
                while !self.done() {
                    out.push(item(self)?);
                }
            }
            RecordFormat::Compact => {
                for _ in 0..self.count()? {
                    out.push(item(self)?);
                }
            }
        }
        Ok(out)
    }

    /// A node's concatenated entries: counted (compact) or the rest of the record (fixed).
    fn entries(&mut self) -> Result<Vec<u8>> {
        let e = match self.format {
            RecordFormat::Fixed => {
                let s = &self.p[self.at.min(self.p.len())..];
                self.at = self.p.len();
                s
            }
            RecordFormat::Compact => {
                let n = self.count()?;
                self.take(n)?
            }
        };
        if !e.len().is_multiple_of(self.entry_size) {
            return Err(bad(&format!(
                "{} entry bytes are not whole {}-byte entries of this layout",
                e.len(),
                self.entry_size
            )));
        }
        Ok(e.to_vec())
    }

    /// One entry: the layout's entry size (fixed) or counted (compact).
    fn entry(&mut self) -> Result<Vec<u8>> {
        let n = match self.format {
            RecordFormat::Fixed => self.entry_size,
            RecordFormat::Compact => self.count()?,
        };
        if n != self.entry_size {
            return Err(bad(&format!(
                "a {n}-byte entry in a layout of {}-byte entries",
                self.entry_size
            )));
        }
        Ok(self.take(n)?.to_vec())
    }

    fn meta(&mut self) -> Result<TreeMeta> {
        let m = TreeMeta {
            root: self.id()?,
            height: self.small()?,
            objects: self.id()?,
        };
        if m.height > crate::store::MAX_TREE_HEIGHT {
            return Err(bad(&format!(
                "tree height {} (at most {})",
                m.height,
                crate::store::MAX_TREE_HEIGHT
            )));
        }
        Ok(m)
    }

    fn change(&mut self) -> Result<RawChange> {
        Ok(match self.u8()? {
            SET => Change::Set {
                pos: self.small()? as usize,
                entry: self.entry()?.into(),
            },
            PUSH => Change::Push(self.entry()?.into()),
            REMOVE => Change::Remove {
                pos: self.small()? as usize,
            },
            k => return Err(bad(&format!("unknown change kind {k}"))),
        })
    }

    fn done(&self) -> bool {
        self.at >= self.p.len()
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
