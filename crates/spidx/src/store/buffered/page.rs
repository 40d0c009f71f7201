//! Node pages built from encoded entries and changes: what every buffered policy does to
//! turn a buffered node (an image of its entries, entry-level changes) into the page the
//! tree reads, as the direct store applies the same changes in place.

use crate::node::{NodeLayout, PageId};
use crate::store::Change;
use crate::{Error, Result};

use super::RawChange;

/// Applies raw `changes` to `page` (a node page holding `count` entries, whose header is
/// rewritten for `level`), as the direct store applies them in place.
pub(crate) fn apply_raw(
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
pub(crate) fn apply_raw_unsealed(
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
pub(crate) fn apply_one(
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
pub(crate) fn page_from_entries(
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
pub(crate) fn page_from_entries_unsealed(
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
