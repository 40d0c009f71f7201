//! RFTL's index units and the pages that hold them (Wu, Chang, Kuo 2003, section 3: an
//! *index unit* records one change of one node; units of many nodes are packed into one
//! page when the reservation buffer is flushed).
//!
//! A unit names its node and is one of:
//! * `Reset`: the node's content is these entries (a node created or rewritten by the tree,
//!   or the node's compacted content); it carries the node's level;
//! * `Extend`: these entries appended (the rest of a `Reset` too large for one page);
//! * a `Change` (set entry *i*, push an entry, remove entry *i*), as the trees express it.
//!
//! A node's content is its units applied in order, page after page as its mapping lists
//! them; a `Reset` discards what came before, later changes win.
//!
//! Page format (little-endian): `magic "RFTU"`, CRC-32 of bytes 8.., the number of units
//! (`u32`), then the units: the node's page id (`u64`), a kind byte (1 reset, 2 extend,
//! 3 set, 4 push, 5 remove), then for a reset its level (`u32`) and entry count (`u32`) and
//! the entries, for an extend the count and entries, for a set the position (`u32`) and
//! the entry, for a push the entry, for a remove the position; entries in the node
//! layout's raw encoding. A page that fails any check is refused with an error naming it.

use crate::node::{NodeLayout, PageId};
use crate::store::buffered::page::{apply_one, page_from_entries_unsealed};
#[cfg(test)]
use crate::store::buffered::page::{apply_raw, page_from_entries};
use crate::store::buffered::RawChange;
use crate::store::Change;
use crate::{Error, Result};

const MAGIC: &[u8; 4] = b"RFTU";
/// Bytes before the first unit of a page.
pub(crate) const HEADER: usize = 12;
/// Bytes of a unit before its payload (node id and kind).
const UNIT_HEAD: usize = 9;

const RESET: u8 = 1;
const EXTEND: u8 = 2;
const SET: u8 = 3;
const PUSH: u8 = 4;
const REMOVE: u8 = 5;

/// One index unit (without its node). See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexUnit {
    /// The node's content is `entries` (concatenated raw entries) at `level`.
    Reset {
        /// The node's level.
        level: u32,
        /// Its entries.
        entries: Vec<u8>,
    },
    /// Entries appended (concatenated raw entries).
    Extend(Vec<u8>),
    /// One entry-level change.
    Change(RawChange),
}

impl IndexUnit {
    /// Bytes the unit takes on a page (its node id and kind included).
    pub(crate) fn size(&self) -> usize {
        UNIT_HEAD
            + match self {
                IndexUnit::Reset { entries, .. } => 8 + entries.len(),
                IndexUnit::Extend(entries) => 4 + entries.len(),
                IndexUnit::Change(Change::Set { entry, .. }) => 4 + entry.len(),
                IndexUnit::Change(Change::Push(entry)) => entry.len(),
                IndexUnit::Change(Change::Remove { .. }) => 4,
            }
    }
}

/// Bytes of units one page of `page_size` bytes holds.
pub(crate) fn capacity(page_size: usize) -> usize {
    page_size.saturating_sub(HEADER)
}

/// The smallest page that holds any unit of `entry_size`-byte entries (a reset of one
/// entry; larger resets are split into a reset and extends).
pub(crate) fn min_page_size(entry_size: usize) -> usize {
    HEADER + UNIT_HEAD + 8 + entry_size
}

/// Cuts a node's units, in order, into chunks of at most `room` bytes each (one page's
/// worth), splitting resets and extends between entries where a page boundary falls.
/// Every chunk but the last fills its page as far as units allow.
pub(crate) fn split(units: Vec<IndexUnit>, room: usize, entry_size: usize) -> Vec<Vec<IndexUnit>> {
    let mut chunks = vec![Vec::new()];
    let mut left = room;
    for mut u in units {
        loop {
            let size = u.size();
            if size <= left {
                left -= size;
                chunks.last_mut().expect("a chunk").push(u);
                break;
            }
            // An entry list is split where the page ends, if one entry still fits.
            let head = match &u {
                IndexUnit::Reset { .. } => Some(UNIT_HEAD + 8),
                IndexUnit::Extend(_) => Some(UNIT_HEAD + 4),
                IndexUnit::Change(_) => None,
            };
            if let Some(head) = head.filter(|h| left >= h + entry_size) {
                let k = (left - head) / entry_size;
                let rest = match &mut u {
                    IndexUnit::Reset { entries, .. } | IndexUnit::Extend(entries) => {
                        entries.split_off(k * entry_size)
                    }
                    IndexUnit::Change(_) => unreachable!("only entry lists are split"),
                };
                chunks.last_mut().expect("a chunk").push(u);
                u = IndexUnit::Extend(rest);
            } else {
                debug_assert!(left < room, "a unit larger than a page ({size} bytes)");
            }
            chunks.push(Vec::new());
            left = room;
        }
    }
    chunks.retain(|c| !c.is_empty());
    chunks
}

/// Writes `units` (each with its node) as a unit page into `page`. They must fit
/// ([`capacity`]).
pub(crate) fn encode(units: &[(PageId, IndexUnit)], page: &mut [u8]) {
    page.fill(0);
    page[0..4].copy_from_slice(MAGIC);
    page[8..12].copy_from_slice(&(units.len() as u32).to_le_bytes());
    let mut o = HEADER;
    let mut put = |b: &[u8]| {
        page[o..o + b.len()].copy_from_slice(b);
        o += b.len();
    };
    for (node, u) in units {
        put(&node.to_le_bytes());
        match u {
            IndexUnit::Reset { level, entries } => {
                put(&[RESET]);
                put(&level.to_le_bytes());
                put(&(entries.len() as u32).to_le_bytes());
                put(entries);
            }
            IndexUnit::Extend(entries) => {
                put(&[EXTEND]);
                put(&(entries.len() as u32).to_le_bytes());
                put(entries);
            }
            IndexUnit::Change(Change::Set { pos, entry }) => {
                put(&[SET]);
                put(&(*pos as u32).to_le_bytes());
                put(entry);
            }
            IndexUnit::Change(Change::Push(entry)) => {
                put(&[PUSH]);
                put(entry);
            }
            IndexUnit::Change(Change::Remove { pos }) => {
                put(&[REMOVE]);
                put(&(*pos as u32).to_le_bytes());
            }
        }
    }
    let crc = crc32fast::hash(&page[8..]);
    page[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Checks unit page `at` as read from the device: its magic and checksum (a torn or
/// damaged page). Its units are checked as they are read ([`units_of`]).
pub(crate) fn verify(page: &[u8], at: PageId) -> Result<()> {
    if page.len() < HEADER || &page[0..4] != MAGIC {
        return Err(bad(at, "not a unit page (bad magic)".into()));
    }
    let crc = u32::from_le_bytes(page[4..8].try_into().expect("4 bytes"));
    if crc32fast::hash(&page[8..]) != crc {
        return Err(bad(at, "checksum mismatch (torn write or bit flip)".into()));
    }
    Ok(())
}

#[cfg(test)]
/// The units of node `node` on unit page `at` (a page that passed [`verify`]), in order
/// (at least one: a page the translation table names holds units of the node). Every unit
/// is checked; only the node's are copied out.
pub(crate) fn units_of(
    page: &[u8],
    at: PageId,
    node: PageId,
    entry_size: usize,
) -> Result<Vec<IndexUnit>> {
    if page.len() < HEADER || &page[0..4] != MAGIC {
        return Err(bad(at, "not a unit page (bad magic)".into()));
    }
    let out = decode(page, at, node, entry_size)?;
    if out.is_empty() {
        return Err(bad(at, format!("holds no unit of node {node}")));
    }
    Ok(out)
}

fn bad(at: PageId, why: String) -> Error {
    Error::corrupted(format!("RFTL unit page {at}"), why)
}

#[cfg(test)]
/// Walks every unit of page `at`, checking it, and returns those of node `want`.
fn decode(page: &[u8], at: PageId, want: PageId, es: usize) -> Result<Vec<IndexUnit>> {
    let mut out = Vec::new();
    walk(page, at, want, es, |u| out.push(u.to_owned()))?;
    Ok(out)
}

/// One index unit read in place from a unit page (see [`IndexUnit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnitRef<'a> {
    /// The node's content is `entries` at `level`.
    Reset {
        /// The node's level.
        level: u32,
        /// Its entries (concatenated raw entries).
        entries: &'a [u8],
    },
    /// Entries appended (concatenated raw entries).
    Extend(&'a [u8]),
    /// One entry-level change.
    Change(Change<&'a [u8]>),
}

impl UnitRef<'_> {
    #[cfg(test)]
    /// The unit, copied.
    pub(crate) fn to_owned(self) -> IndexUnit {
        match self {
            UnitRef::Reset { level, entries } => IndexUnit::Reset {
                level,
                entries: entries.to_vec(),
            },
            UnitRef::Extend(entries) => IndexUnit::Extend(entries.to_vec()),
            UnitRef::Change(Change::Set { pos, entry }) => IndexUnit::Change(Change::Set {
                pos,
                entry: entry.into(),
            }),
            UnitRef::Change(Change::Push(entry)) => IndexUnit::Change(Change::Push(entry.into())),
            UnitRef::Change(Change::Remove { pos }) => IndexUnit::Change(Change::Remove { pos }),
        }
    }
}

/// The units of node `node` on unit page `at` (a page that passed [`verify`]), in order,
/// read in place into `out` (cleared first), with the checks of [`units_of`].
pub(crate) fn units_in<'a>(
    page: &'a [u8],
    at: PageId,
    node: PageId,
    entry_size: usize,
    out: &mut Vec<UnitRef<'a>>,
) -> Result<()> {
    out.clear();
    if page.len() < HEADER || &page[0..4] != MAGIC {
        return Err(bad(at, "not a unit page (bad magic)".into()));
    }
    walk(page, at, node, entry_size, |u| out.push(u))?;
    if out.is_empty() {
        return Err(bad(at, format!("holds no unit of node {node}")));
    }
    Ok(())
}

/// Walks every unit of page `at`, checking it, and hands those of node `want` to `f`.
fn walk<'a>(
    page: &'a [u8],
    at: PageId,
    want: PageId,
    es: usize,
    mut f: impl FnMut(UnitRef<'a>),
) -> Result<()> {
    let n = u32::from_le_bytes(page[8..12].try_into().expect("4 bytes"));
    let mut o = HEADER;
    let take = |o: &mut usize, len: usize| -> Result<&'a [u8]> {
        let s = page
            .get(*o..o.saturating_add(len))
            .ok_or_else(|| bad(at, format!("a unit runs past the page end (byte {})", *o)))?;
        *o += len;
        Ok(s)
    };
    let word = |o: &mut usize| -> Result<u32> {
        Ok(u32::from_le_bytes(take(o, 4)?.try_into().expect("4")))
    };
    for _ in 0..n {
        let node = u64::from_le_bytes(take(&mut o, 8)?.try_into().expect("8"));
        let mine = node == want;
        let kind = take(&mut o, 1)?[0];
        let unit = match kind {
            RESET | EXTEND => {
                let level = if kind == RESET { word(&mut o)? } else { 0 };
                let len = word(&mut o)? as usize;
                if !len.is_multiple_of(es) {
                    return Err(bad(at, format!("{len} entry bytes are not whole entries")));
                }
                let entries = take(&mut o, len)?;
                match kind {
                    RESET => UnitRef::Reset { level, entries },
                    _ => UnitRef::Extend(entries),
                }
            }
            SET => {
                let pos = word(&mut o)? as usize;
                let entry = take(&mut o, es)?;
                UnitRef::Change(Change::Set { pos, entry })
            }
            PUSH => UnitRef::Change(Change::Push(take(&mut o, es)?)),
            REMOVE => {
                let pos = word(&mut o)? as usize;
                UnitRef::Change(Change::Remove { pos })
            }
            k => return Err(bad(at, format!("unknown unit kind {k}"))),
        };
        if mine {
            f(unit);
        }
    }
    Ok(())
}

/// A node page assembled in place from units read in place: [`PageAssembly::apply`] each
/// unit in order, then [`PageAssembly::finish`]. The same node page as [`Assembly`] (a
/// reset restarts the page, later changes win), without copying units: each unit is
/// applied to the page as it comes, and the page is sealed once.
pub(crate) struct PageAssembly<'p> {
    page: &'p mut [u8],
    /// The latest reset's level (`None`: no reset yet).
    level: Option<u32>,
    count: usize,
}

impl<'p> PageAssembly<'p> {
    /// An assembly into `page` (a node page's worth of bytes).
    pub(crate) fn new(page: &'p mut [u8]) -> Self {
        PageAssembly {
            page,
            level: None,
            count: 0,
        }
    }

    /// Applies unit `u` of node `id`: the first must be a reset.
    pub(crate) fn apply(&mut self, layout: &NodeLayout, id: PageId, u: UnitRef<'_>) -> Result<()> {
        match u {
            UnitRef::Reset { level, entries } => {
                page_from_entries_unsealed(layout, id, level, entries, self.page)?;
                self.level = Some(level);
                self.count = entries.len() / layout.entry_size();
            }
            _ if self.level.is_none() => {
                return Err(Error::corrupted(
                    format!("RFTL units of node {id}"),
                    "the first unit is not the node's content (reset)",
                ))
            }
            UnitRef::Extend(entries) => {
                for e in entries.chunks_exact(layout.entry_size()) {
                    apply_one(layout, id, self.page, &mut self.count, Change::Push(e))?;
                }
            }
            UnitRef::Change(c) => apply_one(layout, id, self.page, &mut self.count, c)?,
        }
        Ok(())
    }

    /// Writes the assembled node page's header and checksum; returns its level.
    pub(crate) fn finish(self, layout: &NodeLayout, id: PageId) -> Result<u32> {
        let Some(level) = self.level else {
            return Err(Error::corrupted(
                format!("RFTL node {id}"),
                "no unit holds the node's content",
            ));
        };
        layout.put_header(self.page, level, self.count);
        Ok(level)
    }
}

#[cfg(test)]
/// A node page being assembled from units: [`Assembly::apply`] each unit in order, then
/// [`Assembly::finish`]. The latest reset is the base; the changes after it are applied in
/// one pass (the node page is sealed once, not once per unit).
#[derive(Default)]
pub(crate) struct Assembly {
    /// The latest reset: level and entries.
    base: Option<(u32, Vec<u8>)>,
    /// The changes after it, in order.
    changes: Vec<RawChange>,
}

#[cfg(test)]
impl Assembly {
    /// An empty assembly.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Applies unit `u` of node `id`: the first must be a reset.
    pub(crate) fn apply(&mut self, layout: &NodeLayout, id: PageId, u: IndexUnit) -> Result<()> {
        match u {
            IndexUnit::Reset { level, entries } => {
                self.base = Some((level, entries));
                self.changes.clear();
            }
            _ if self.base.is_none() => {
                return Err(Error::corrupted(
                    format!("RFTL units of node {id}"),
                    "the first unit is not the node's content (reset)",
                ))
            }
            IndexUnit::Extend(entries) => self.changes.extend(
                entries
                    .chunks_exact(layout.entry_size())
                    .map(|e| Change::Push(e.into())),
            ),
            IndexUnit::Change(c) => self.changes.push(c),
        }
        Ok(())
    }

    /// The assembled node page and its level.
    pub(crate) fn finish(self, layout: &NodeLayout, id: PageId) -> Result<(Vec<u8>, u32)> {
        let Some((level, entries)) = self.base else {
            return Err(Error::corrupted(
                format!("RFTL node {id}"),
                "no unit holds the node's content",
            ));
        };
        let mut page = vec![0u8; layout.page_size()];
        page_from_entries(layout, id, level, &entries, &mut page)?;
        if !self.changes.is_empty() {
            let count = entries.len() / layout.entry_size();
            apply_raw(layout, id, &mut page, level, count, &self.changes)?;
        }
        Ok((page, level))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Rect;
    use crate::node::{Entry, LayoutKind};

    fn layout() -> NodeLayout {
        NodeLayout::new(LayoutKind::Checked, 1024, 2).unwrap()
    }

    fn raw(l: &NodeLayout, i: u64) -> Vec<u8> {
        let x = i as f64;
        let e = Entry::<2> {
            mbr: Rect {
                min: [x, x],
                max: [x + 1.0, x + 1.0],
            },
            ptr: i,
            aux: 0,
        };
        let mut p = vec![0u8; l.page_size()];
        l.put_entry(&mut p, 0, &e).unwrap();
        let o = l.entry_offset(0);
        p[o..o + l.entry_size()].to_vec()
    }

    fn entries(l: &NodeLayout, ids: &[u64]) -> Vec<u8> {
        ids.iter().flat_map(|i| raw(l, *i)).collect()
    }

    #[test]
    fn units_of_several_nodes_round_trip_through_a_page() {
        let l = layout();
        let es = l.entry_size();
        let units = vec![
            (
                7,
                IndexUnit::Reset {
                    level: 1,
                    entries: entries(&l, &[1, 2]),
                },
            ),
            (9, IndexUnit::Change(Change::Push(raw(&l, 5).into()))),
            (
                7,
                IndexUnit::Change(Change::Set {
                    pos: 1,
                    entry: raw(&l, 3).into(),
                }),
            ),
            (7, IndexUnit::Change(Change::Remove { pos: 0 })),
            (9, IndexUnit::Extend(entries(&l, &[6]))),
        ];
        let used: usize = units.iter().map(|(_, u)| u.size()).sum();
        assert!(used <= capacity(1024));
        let mut page = vec![0u8; 1024];
        encode(&units, &mut page);
        verify(&page, 40).unwrap();
        let of7 = units_of(&page, 40, 7, es).unwrap();
        assert_eq!(of7.len(), 3);
        assert_eq!(of7[2], IndexUnit::Change(Change::Remove { pos: 0 }));
        assert_eq!(units_of(&page, 40, 9, es).unwrap().len(), 2);
        let e = units_of(&page, 40, 8, es).unwrap_err().to_string();
        assert!(
            e.contains("unit page 40") && e.contains("no unit of node 8"),
            "{e}"
        );
        // Node 7 assembled: [1, 2] -> [1, 3] -> [3].
        let mut a = Assembly::new();
        for u in of7 {
            a.apply(&l, 7, u).unwrap();
        }
        let (p, level) = a.finish(&l, 7).unwrap();
        assert_eq!(level, 1);
        assert_eq!(l.entry_count(&p), 1);
        let o = l.entry_offset(0);
        assert_eq!(p[o..o + es], raw(&l, 3)[..]);
    }

    #[test]
    fn a_large_reset_is_split_between_entries_across_pages() {
        let l = layout();
        let es = l.entry_size();
        let room = capacity(1024);
        let ids: Vec<u64> = (0..l.fits() as u64).collect();
        let units = vec![
            IndexUnit::Reset {
                level: 0,
                entries: entries(&l, &ids),
            },
            IndexUnit::Change(Change::Set {
                pos: 0,
                entry: raw(&l, 99).into(),
            }),
        ];
        let total: usize = units.iter().map(IndexUnit::size).sum();
        assert!(total > room);
        let chunks = split(units, room, es);
        assert_eq!(chunks.len(), 2);
        assert!(matches!(chunks[0][0], IndexUnit::Reset { .. }));
        assert!(matches!(chunks[1][0], IndexUnit::Extend(_)));
        for c in &chunks {
            assert!(c.iter().map(IndexUnit::size).sum::<usize>() <= room);
        }
        // Pages in order rebuild the whole node.
        let mut a = Assembly::new();
        for c in chunks {
            let tagged: Vec<(PageId, IndexUnit)> = c.into_iter().map(|u| (3, u)).collect();
            let mut page = vec![0u8; 1024];
            encode(&tagged, &mut page);
            for u in units_of(&page, 1, 3, es).unwrap() {
                a.apply(&l, 3, u).unwrap();
            }
        }
        let (p, _) = a.finish(&l, 3).unwrap();
        assert_eq!(l.entry_count(&p), l.fits());
        let (o, last) = (l.entry_offset(0), l.entry_offset(l.fits() - 1));
        assert_eq!(p[o..o + es], raw(&l, 99)[..]);
        assert_eq!(p[last..last + es], raw(&l, l.fits() as u64 - 1)[..]);
        // Small units stay whole: one chunk.
        let small = vec![IndexUnit::Change(Change::Remove { pos: 0 }); 3];
        assert_eq!(split(small, room, es).len(), 1);
    }

    #[test]
    fn damaged_truncated_or_foreign_pages_are_errors_naming_the_page() {
        let l = layout();
        let es = l.entry_size();
        let units = vec![(
            7,
            IndexUnit::Reset {
                level: 0,
                entries: entries(&l, &[1, 2, 3]),
            },
        )];
        let mut page = vec![0u8; 1024];
        encode(&units, &mut page);
        let err = |p: &[u8]| verify(p, 12).unwrap_err().to_string();
        let mut torn = page.clone();
        torn[HEADER + 20] ^= 1;
        let e = err(&torn);
        assert!(e.contains("unit page 12") && e.contains("checksum"), "{e}");
        assert!(err(&vec![0u8; 1024]).contains("bad magic"));
        assert!(err(&page[..6]).contains("bad magic"));
        // Units are checked as they are read: a truncated page (its units run past its
        // end) and an unknown unit kind, checksums consistent.
        let units = |p: &[u8]| units_of(p, 12, 7, es).unwrap_err().to_string();
        let mut short = page[..HEADER + 30].to_vec();
        let crc = crc32fast::hash(&short[8..]);
        short[4..8].copy_from_slice(&crc.to_le_bytes());
        verify(&short, 12).unwrap();
        let e = units(&short);
        assert!(
            e.contains("unit page 12") && e.contains("past the page end"),
            "{e}"
        );
        let mut odd = page.clone();
        odd[HEADER + 8] = 77;
        let crc = crc32fast::hash(&odd[8..]);
        odd[4..8].copy_from_slice(&crc.to_le_bytes());
        assert!(units(&odd).contains("unknown unit kind 77"));
        assert!(units(&page[..6]).contains("bad magic"));
        // A change before any content is refused on assembly.
        let mut a = Assembly::new();
        let e = a
            .apply(&l, 7, IndexUnit::Change(Change::Remove { pos: 0 }))
            .unwrap_err()
            .to_string();
        assert!(e.contains("RFTL units of node 7"), "{e}");
        assert!(Assembly::new().finish(&l, 7).is_err());
    }
}
