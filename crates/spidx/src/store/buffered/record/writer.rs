//! Encoding records: the writer of the binary format, records that borrow what they hold
//! ([`NodeRecord`]) and what a log can be written from ([`EncodeRecord`]). See the parent
//! module for the format.

use crate::node::PageId;
use crate::store::{Change, TreeMeta};
use crate::{Error, Result};

use super::super::RawChange;
use super::{Record, RecordFormat, CREATE, DELETED, IMAGE, MODIFY, PUSH, REMOVE, SET};

/// A record about one buffered node that borrows what it holds, encoded exactly as the
/// [`Record`] of the same kind: a compacted log is written from the buffer without copying
/// the buffer first.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NodeRecord<'a> {
    /// As [`Record::Create`].
    Create {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Timestamp (formats with timestamps only).
        stamp: Option<u64>,
        /// Raw entries.
        entries: &'a [u8],
    },
    /// As [`Record::Modify`].
    Modify {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Timestamp (formats with timestamps only).
        stamp: Option<u64>,
        /// Changes in order.
        changes: &'a [RawChange],
    },
    /// As [`Record::Image`].
    Image {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
        /// Raw entries.
        entries: &'a [u8],
    },
    /// As [`Record::Deleted`].
    Deleted {
        /// Page.
        id: PageId,
        /// Level.
        level: u32,
    },
}

impl NodeRecord<'_> {
    /// The node the record is about.
    pub(crate) fn node(&self) -> PageId {
        match *self {
            NodeRecord::Create { id, .. }
            | NodeRecord::Modify { id, .. }
            | NodeRecord::Image { id, .. }
            | NodeRecord::Deleted { id, .. } => id,
        }
    }

    /// Encodes the record as a log payload in `format`, appended to `out`.
    pub(crate) fn encode_into(&self, format: RecordFormat, out: &mut Vec<u8>) -> Result<()> {
        let mut w = Writer { b: out, format };
        match *self {
            NodeRecord::Create {
                id,
                level,
                stamp,
                entries,
            } => {
                w.b.push(CREATE);
                w.id(id);
                w.small(level);
                w.stamp(stamp)?;
                w.bytes(entries);
            }
            NodeRecord::Modify {
                id,
                level,
                stamp,
                changes,
            } => {
                w.b.push(MODIFY);
                w.id(id);
                w.small(level);
                w.stamp(stamp)?;
                w.len(changes.len());
                for c in changes {
                    w.change(c)?;
                }
            }
            NodeRecord::Image { id, level, entries } => {
                w.b.push(IMAGE);
                w.id(id);
                w.small(level);
                w.bytes(entries);
            }
            NodeRecord::Deleted { id, level } => {
                w.b.push(DELETED);
                w.id(id);
                w.small(level);
            }
        }
        Ok(())
    }
}

/// What a compacted log can be written from: owned [`Record`]s or borrowed
/// [`NodeRecord`]s.
pub trait EncodeRecord {
    /// Appends the record's payload in `format` to `out`.
    fn encode_record(&self, format: RecordFormat, out: &mut Vec<u8>) -> Result<()>;
}

impl EncodeRecord for Record {
    fn encode_record(&self, format: RecordFormat, out: &mut Vec<u8>) -> Result<()> {
        self.encode_into(format, out)
    }
}

impl EncodeRecord for NodeRecord<'_> {
    fn encode_record(&self, format: RecordFormat, out: &mut Vec<u8>) -> Result<()> {
        self.encode_into(format, out)
    }
}

/// A record already encoded (in the store's format): a store that keeps the payloads of
/// its snapshot records reuses them at the next compaction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Encoded<'a>(pub &'a [u8]);

impl EncodeRecord for Encoded<'_> {
    fn encode_record(&self, _format: RecordFormat, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(self.0);
        Ok(())
    }
}

impl<T: EncodeRecord> EncodeRecord for &T {
    fn encode_record(&self, format: RecordFormat, out: &mut Vec<u8>) -> Result<()> {
        (**self).encode_record(format, out)
    }
}

/// Writes a record's fields in its format (a policy writes the body of its own records
/// with it: [`Record::own`]).
pub struct Writer<'a> {
    pub(super) b: &'a mut Vec<u8>,
    pub(super) format: RecordFormat,
}

impl Writer<'_> {
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.b.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.b.push(v as u8);
    }

    /// A page id, count or time: `u64`.
    pub fn id(&mut self, v: u64) {
        match self.format {
            RecordFormat::Fixed => self.b.extend_from_slice(&v.to_le_bytes()),
            RecordFormat::Compact => self.varint(v),
        }
    }

    /// A level or position: `u32`.
    pub fn small(&mut self, v: u32) {
        match self.format {
            RecordFormat::Fixed => self.b.extend_from_slice(&v.to_le_bytes()),
            RecordFormat::Compact => self.varint(u64::from(v)),
        }
    }

    /// The length of a list or byte string (the fixed format writes none: the record's
    /// end or the entry size delimits it).
    pub fn len(&mut self, n: usize) {
        if self.format == RecordFormat::Compact {
            self.varint(n as u64);
        }
    }

    /// A flag: one byte, 0 or 1.
    pub fn flag(&mut self, f: bool) {
        self.b.push(u8::from(f));
    }

    pub(super) fn stamp(&mut self, s: Option<u64>) -> Result<()> {
        match (self.format, s) {
            (RecordFormat::Fixed, None) => Ok(()),
            (RecordFormat::Compact, Some(v)) => {
                self.varint(v);
                Ok(())
            }
            (RecordFormat::Fixed, Some(_)) => Err(Error::invalid(
                "log record",
                "the fixed record format carries no timestamps",
            )),
            (RecordFormat::Compact, None) => Err(Error::invalid(
                "log record",
                "the compact record format needs a timestamp",
            )),
        }
    }

    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.b.extend_from_slice(b);
    }

    pub(super) fn entry(&mut self, e: &[u8]) {
        self.bytes(e);
    }

    pub(super) fn ids(&mut self, ids: &[PageId]) {
        self.len(ids.len());
        for id in ids {
            self.id(*id);
        }
    }

    pub(super) fn meta(&mut self, m: &TreeMeta) {
        self.id(m.root);
        self.small(m.height);
        self.id(m.objects);
    }

    pub(super) fn change(&mut self, c: &RawChange) -> Result<()> {
        let pos = |p: usize| {
            u32::try_from(p).map_err(|_| Error::invalid("log record", "entry position > 2^32"))
        };
        match c {
            Change::Set { pos: p, entry } => {
                self.b.push(SET);
                self.small(pos(*p)?);
                self.entry(entry);
            }
            Change::Push(entry) => {
                self.b.push(PUSH);
                self.entry(entry);
            }
            Change::Remove { pos: p } => {
                self.b.push(REMOVE);
                self.small(pos(*p)?);
            }
        }
        Ok(())
    }
}
