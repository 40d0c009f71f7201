//! Tree nodes as pages (architecture §4): a node is one page holding a small header
//! and entries of (MBR, pointer). [`NodeLayout`] encodes and decodes nodes, [`NodeView`]
//! reads a page in place (no decoding, for fast queries), and [`Capacity`] derives the
//! maximum and minimum entries per node from the page size and the occupancy options.

mod capacity;
mod layout;

pub use capacity::{Capacity, Occupancy};
pub use layout::{LayoutKind, NodeLayout, NodeView};

use crate::geom::Rect;

/// Address of a node page on the device.
pub type PageId = u64;

/// One entry of a node: the MBR of a child (or object) and its pointer (a child page id
/// in internal nodes, an object id in leaves).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry<const D: usize> {
    /// Bounding box of what the pointer leads to.
    pub mbr: Rect<D>,
    /// Child page id (internal nodes) or object id (leaves).
    pub ptr: u64,
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

    /// Whether the node is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.level == 0
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
