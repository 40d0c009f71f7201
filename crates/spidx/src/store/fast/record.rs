//! FAST's log records (Sarwat et al. 2013, section 5: new node, modification, delete and
//! flush records), as payloads of the shared [`Log`](crate::store::log::Log). Entries are
//! kept in the node layout's raw entry encoding, so records do not depend on the tree's
//! dimensions. All integers are little-endian.

use crate::node::PageId;
use crate::store::buffered::RawChange;
use crate::store::{Change, TreeMeta};
use crate::{Error, Result};

/// A FAST log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A new node (allocates its page) with its raw entries.
    Create {
        id: PageId,
        level: u32,
        entries: Vec<u8>,
    },
    /// Entry-level changes to a node.
    Modify {
        id: PageId,
        level: u32,
        changes: Vec<RawChange>,
    },
    /// A node's full content replaced (a rewrite by the tree, or the image of a node about
    /// to be written in place, logged so a torn page write loses nothing).
    Image {
        id: PageId,
        level: u32,
        entries: Vec<u8>,
    },
    /// A node deleted (frees its page).
    Delete { id: PageId },
    /// A buffered node is in state "deleted" (compaction only: its page is already free in
    /// the snapshot).
    Deleted { id: PageId, level: u32 },
    /// New tree metadata.
    Meta(TreeMeta),
    /// These nodes' buffered changes reached their pages (durable).
    Flushed(Vec<PageId>),
    /// Tree metadata and page allocation at a checkpoint or compaction.
    Snapshot {
        meta: Option<TreeMeta>,
        next_page: PageId,
        free: Vec<PageId>,
    },
}

const CREATE: u8 = 1;
const MODIFY: u8 = 2;
const IMAGE: u8 = 3;
const DELETE: u8 = 4;
const DELETED: u8 = 5;
const META: u8 = 6;
const FLUSHED: u8 = 7;
const SNAPSHOT: u8 = 8;

impl Record {
    /// Encodes the record as a log payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Record::Create { id, level, entries } | Record::Image { id, level, entries } => {
                b.push(if matches!(self, Record::Create { .. }) {
                    CREATE
                } else {
                    IMAGE
                });
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&level.to_le_bytes());
                b.extend_from_slice(entries);
            }
            Record::Modify { id, level, changes } => {
                b.push(MODIFY);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&level.to_le_bytes());
                for c in changes {
                    match c {
                        Change::Set { pos, entry } => {
                            b.push(1);
                            b.extend_from_slice(&(*pos as u32).to_le_bytes());
                            b.extend_from_slice(entry);
                        }
                        Change::Push(entry) => {
                            b.push(2);
                            b.extend_from_slice(entry);
                        }
                        Change::Remove { pos } => {
                            b.push(3);
                            b.extend_from_slice(&(*pos as u32).to_le_bytes());
                        }
                    }
                }
            }
            Record::Delete { id } => {
                b.push(DELETE);
                b.extend_from_slice(&id.to_le_bytes());
            }
            Record::Deleted { id, level } => {
                b.push(DELETED);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&level.to_le_bytes());
            }
            Record::Meta(m) => {
                b.push(META);
                put_meta(&mut b, m);
            }
            Record::Flushed(ids) => {
                b.push(FLUSHED);
                for id in ids {
                    b.extend_from_slice(&id.to_le_bytes());
                }
            }
            Record::Snapshot {
                meta,
                next_page,
                free,
            } => {
                b.push(SNAPSHOT);
                match meta {
                    Some(m) => {
                        b.push(1);
                        put_meta(&mut b, m);
                    }
                    None => b.push(0),
                }
                b.extend_from_slice(&next_page.to_le_bytes());
                for id in free {
                    b.extend_from_slice(&id.to_le_bytes());
                }
            }
        }
        b
    }

    /// Decodes a payload; `entry_size` is the layout's raw entry size.
    pub fn decode(p: &[u8], entry_size: usize) -> Result<Record> {
        let mut r = Reader { p, at: 1 };
        let bad = |why: &str| Error::corrupted("FAST log record", why.to_string());
        let kind = *p.first().ok_or_else(|| bad("empty record"))?;
        let rec = match kind {
            CREATE | IMAGE => {
                let id = r.u64()?;
                let level = r.u32()?;
                let entries = r.rest().to_vec();
                if !entries.len().is_multiple_of(entry_size) {
                    return Err(bad("entries are not whole entries of this layout"));
                }
                if kind == CREATE {
                    Record::Create { id, level, entries }
                } else {
                    Record::Image { id, level, entries }
                }
            }
            MODIFY => {
                let id = r.u64()?;
                let level = r.u32()?;
                let mut changes = Vec::new();
                while !r.done() {
                    changes.push(match r.u8()? {
                        1 => Change::Set {
                            pos: r.u32()? as usize,
                            entry: r.bytes(entry_size)?.into(),
                        },
                        2 => Change::Push(r.bytes(entry_size)?.into()),
                        3 => Change::Remove {
                            pos: r.u32()? as usize,
                        },
                        _ => return Err(bad("unknown change kind")),
                    });
                }
                Record::Modify { id, level, changes }
            }
            DELETE => Record::Delete { id: r.u64()? },
            DELETED => Record::Deleted {
                id: r.u64()?,
                level: r.u32()?,
            },
            META => Record::Meta(r.meta()?),
            FLUSHED => {
                let mut ids = Vec::new();
                while !r.done() {
                    ids.push(r.u64()?);
                }
                Record::Flushed(ids)
            }
            SNAPSHOT => {
                let meta = match r.u8()? {
                    0 => None,
                    _ => Some(r.meta()?),
                };
                let next_page = r.u64()?;
                let mut free = Vec::new();
                while !r.done() {
                    free.push(r.u64()?);
                }
                Record::Snapshot {
                    meta,
                    next_page,
                    free,
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

fn put_meta(b: &mut Vec<u8>, m: &TreeMeta) {
    b.extend_from_slice(&m.root.to_le_bytes());
    b.extend_from_slice(&m.height.to_le_bytes());
    b.extend_from_slice(&m.objects.to_le_bytes());
}

struct Reader<'a> {
    p: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .p
            .get(self.at..self.at + n)
            .ok_or_else(|| Error::corrupted("FAST log record", "truncated"))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().expect("8")))
    }
    fn meta(&mut self) -> Result<TreeMeta> {
        Ok(TreeMeta {
            root: self.u64()?,
            height: self.u32()?,
            objects: self.u64()?,
        })
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.p[self.at..];
        self.at = self.p.len();
        s
    }
    fn done(&self) -> bool {
        self.at >= self.p.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let e: Box<[u8]> = vec![7u8; 40].into();
        let meta = TreeMeta {
            root: 3,
            height: 2,
            objects: 99,
        };
        for rec in [
            Record::Create {
                id: 5,
                level: 1,
                entries: vec![1u8; 80],
            },
            Record::Image {
                id: 5,
                level: 0,
                entries: vec![],
            },
            Record::Modify {
                id: 9,
                level: 0,
                changes: vec![
                    Change::Set {
                        pos: 3,
                        entry: e.clone(),
                    },
                    Change::Push(e.clone()),
                    Change::Remove { pos: 0 },
                ],
            },
            Record::Delete { id: 4 },
            Record::Deleted { id: 4, level: 2 },
            Record::Meta(meta),
            Record::Flushed(vec![1, 2, 3]),
            Record::Snapshot {
                meta: Some(meta),
                next_page: 10,
                free: vec![2, 7],
            },
            Record::Snapshot {
                meta: None,
                next_page: 0,
                free: vec![],
            },
        ] {
            assert_eq!(Record::decode(&rec.encode(), 40).unwrap(), rec);
        }
        assert!(Record::decode(&[99], 40).is_err());
        assert!(Record::decode(&[MODIFY, 1, 2], 40).is_err());
    }
}
