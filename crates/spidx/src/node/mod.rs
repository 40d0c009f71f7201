//! Tree nodes as pages (architecture §4): a node is a page (the FOR-tree's a primary page
//! plus overflow pages) holding a small header
//! and entries of (MBR, pointer). [`NodeLayout`] encodes and decodes nodes, [`NodeView`]
//! reads a page in place (no decoding, for fast queries), [`Resealer`] updates a page's
//! checksum after a small change without reading the whole page, and [`Capacity`] derives the
//! maximum and minimum entries per node from the page size and the occupancy options.

mod capacity;
mod crc;
mod layout;

pub use capacity::{Capacity, Occupancy};
pub(crate) use crc::Resealer;
pub use layout::{LayoutKind, NodeLayout, NodeView};

use crate::geom::Rect;

/// Address of a node page on the device.
pub type PageId = u64;

/// One entry of a node: the MBR of a child (or object), its pointer (a child page id in
/// internal nodes, an object id in leaves) and the variant's per-entry auxiliary key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry<const D: usize> {
    /// Bounding box of what the pointer leads to.
    pub mbr: Rect<D>,
    /// Child page id (internal nodes) or object id (leaves).
    pub ptr: u64,
    /// Per-entry auxiliary key of variants that order their entries (the Hilbert R-tree:
    /// an object's Hilbert value in leaves, the largest Hilbert value below in internal
    /// nodes); 0 for the others. Stored only by layouts made [`NodeLayout::with_aux`];
    /// a parent entry always holds the largest key of its child's entries.
    pub aux: u64,
}

impl<const D: usize> Entry<D> {
    /// An entry without auxiliary key.
    #[inline]
    pub const fn new(mbr: Rect<D>, ptr: u64) -> Self {
        Entry { mbr, ptr, aux: 0 }
    }
}

/// A decoded node: its level (0 = leaf) and its entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Node<const D: usize> {
    /// Height above the leaves: 0 for leaves.
    pub level: u32,
    /// The entries, in stored order.
    pub entries: Vec<Entry<D>>,
}

impl<const D: usize> Node<D> {
    /// An empty node at `level`.
    pub fn new(level: u32) -> Self {
        Node {
            level,
            entries: Vec::new(),
        }
    }

    /// The largest auxiliary key of the entries (0 for an empty node): what the node's
    /// entry in its parent holds.
    pub(crate) fn aux_max(&self) -> u64 {
        aux_max(&self.entries)
    }

    /// The union of the entries' MBRs (the empty box for an empty node).
    pub fn mbr(&self) -> Rect<D> {
        let mut r = Rect::empty();
        for e in &self.entries {
            r.expand(&e.mbr);
        }
        r
    }
}

/// The largest auxiliary key of `entries` (0 if none).
#[inline]
pub(crate) fn aux_max<const D: usize>(entries: &[Entry<D>]) -> u64 {
    entries.iter().map(|e| e.aux).max().unwrap_or(0)
}
