//! The write buffer every buffered store keeps: buffered nodes by page id, in page order,
//! with the bytes they hold counted against the store's capacity (architecture §6: "buffer
//! sizes are counted in bytes of what is actually held").
//!
//! The buffer is the skeleton's; what a buffered node holds is the policy's, as its paper
//! describes it: FAST keeps a node's ordered list of changes (or its image), eFIND its
//! entry versions keyed by entry identity. A policy's node type implements
//! [`BufferedNode`] (its status and its size in bytes), and [`NodeBuffer`] keeps the byte
//! total, the peak and the counts by status that every store reports (see
//! [`BufferGauges`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::node::PageId;

/// What a buffered node is with respect to its page on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeStatus {
    /// Created since its page was last written: the page on the device means nothing.
    New,
    /// Stored on the device, with buffered changes on top.
    Modified,
    /// Deleted since its page was last written (FAST keeps such nodes until a flush).
    Deleted,
}

/// A policy's buffered node.
pub trait BufferedNode {
    /// Its status.
    fn status(&self) -> NodeStatus;

    /// Bytes it holds, as counted against the buffer's capacity (the policy's accounting).
    fn bytes(&self) -> usize;
}

/// The buffer now (gauges: levels, not amounts; reported under `gauges`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferGauges {
    /// Buffered nodes with status new.
    pub new_nodes: u64,
    /// Buffered nodes with status modified.
    pub modified_nodes: u64,
    /// Buffered nodes with status deleted.
    pub deleted_nodes: u64,
    /// Bytes held.
    pub bytes: u64,
    /// Largest number of bytes held since the store was opened (after any change).
    pub peak_bytes: u64,
}

struct Slot<N> {
    node: N,
    bytes: usize,
}

/// Buffered nodes by page id. See the module documentation.
pub struct NodeBuffer<N> {
    nodes: BTreeMap<PageId, Slot<N>>,
    bytes: usize,
    peak: usize,
}

impl<N> Default for NodeBuffer<N> {
    fn default() -> Self {
        NodeBuffer {
            nodes: BTreeMap::new(),
            bytes: 0,
            peak: 0,
        }
    }
}

impl<N: BufferedNode> NodeBuffer<N> {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Buffered nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether node `id` is buffered.
    pub fn contains(&self, id: PageId) -> bool {
        self.nodes.contains_key(&id)
    }

    /// The buffered node `id`.
    pub fn get(&self, id: PageId) -> Option<&N> {
        self.nodes.get(&id).map(|s| &s.node)
    }

    /// Puts `node` in the buffer under `id` (replacing what was there, returned), counting
    /// its bytes.
    pub fn insert(&mut self, id: PageId, node: N) -> Option<N> {
        let bytes = node.bytes();
        self.bytes += bytes;
        let old = self.nodes.insert(id, Slot { node, bytes });
        if let Some(o) = &old {
            self.bytes -= o.bytes;
        }
        self.peak = self.peak.max(self.bytes);
        old.map(|s| s.node)
    }

    /// Changes node `id` in place by `f` (a node `make` gives is put first if none is
    /// buffered), then recounts its bytes: the totals and the peak as if the node had
    /// been taken out and put back changed.
    pub fn upsert(&mut self, id: PageId, make: impl FnOnce() -> N, f: impl FnOnce(&mut N)) {
        let slot = self.nodes.entry(id).or_insert_with(|| Slot {
            node: make(),
            bytes: 0,
        });
        f(&mut slot.node);
        let bytes = slot.node.bytes();
        self.bytes = self.bytes - slot.bytes + bytes;
        slot.bytes = bytes;
        self.peak = self.peak.max(self.bytes);
    }

    /// Takes node `id` out of the buffer.
    pub fn remove(&mut self, id: PageId) -> Option<N> {
        let s = self.nodes.remove(&id)?;
        self.bytes -= s.bytes;
        Some(s.node)
    }

    /// Buffered nodes in page order.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, &N)> {
        self.nodes.iter().map(|(id, s)| (*id, &s.node))
    }

    /// Buffered page ids in order.
    pub fn ids(&self) -> Vec<PageId> {
        self.nodes.keys().copied().collect()
    }

    /// Buffered nodes with ids in `range`, in page order.
    pub fn range(&self, range: std::ops::Range<PageId>) -> impl Iterator<Item = (PageId, &N)> {
        self.nodes.range(range).map(|(id, s)| (*id, &s.node))
    }

    /// The buffer now, by status, with its peak.
    pub fn gauges(&self) -> BufferGauges {
        let mut g = BufferGauges {
            bytes: self.bytes as u64,
            peak_bytes: self.peak as u64,
            ..Default::default()
        };
        for s in self.nodes.values() {
            match s.node.status() {
                NodeStatus::New => g.new_nodes += 1,
                NodeStatus::Modified => g.modified_nodes += 1,
                NodeStatus::Deleted => g.deleted_nodes += 1,
            }
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct N(NodeStatus, usize);

    impl BufferedNode for N {
        fn status(&self) -> NodeStatus {
            self.0
        }
        fn bytes(&self) -> usize {
            self.1
        }
    }

    #[test]
    fn bytes_peak_and_statuses_follow_every_change() {
        let mut b = NodeBuffer::default();
        assert!(b.insert(4, N(NodeStatus::New, 100)).is_none());
        b.insert(2, N(NodeStatus::Modified, 50));
        assert_eq!(b.bytes(), 150);
        // A replaced node's bytes are no longer counted.
        let old = b.insert(4, N(NodeStatus::Deleted, 10)).unwrap();
        assert_eq!(old.1, 100);
        assert_eq!(b.bytes(), 60);
        assert_eq!(b.ids(), vec![2, 4]);
        let g = b.gauges();
        assert_eq!((g.new_nodes, g.modified_nodes, g.deleted_nodes), (0, 1, 1));
        assert_eq!((g.bytes, g.peak_bytes), (60, 150));
        assert_eq!(b.remove(2).unwrap().1, 50);
        assert!(b.remove(2).is_none());
        assert_eq!(b.bytes(), 10);
        assert_eq!(b.range(0..4).count(), 0);
        assert_eq!(b.range(0..5).count(), 1);
        assert_eq!(b.gauges().peak_bytes, 150);
    }
}
