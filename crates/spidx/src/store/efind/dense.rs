//! eFIND's write buffer as a table by page id: the same contents, byte counts and gauges as
//! the skeleton's [`NodeBuffer`](crate::store::buffered::NodeBuffer) (which the reference
//! test below runs beside it), but a node is found, put and taken by indexing rather than by
//! a search of an ordered map.
//!
//! eFIND looks its write buffer up at every read of a node (is it buffered?), at every
//! change and at every flushed node (Carniel et al. 2019, section 4.1: the write buffer is a
//! hash of nodes); page ids are dense (allocated from 0 upwards), so a table indexed by
//! them is small, and the buffered pages, kept as a [`Bits`] set, come out in page order
//! as the ordered map's keys do.

use super::bits::Bits;
use crate::node::PageId;
use crate::store::buffered::{BufferGauges, BufferedNode, NodeStatus};

/// A buffered node with the bytes it was counted at.
#[derive(Debug)]
struct Slot<N> {
    node: N,
    bytes: usize,
}

/// The write buffer: nodes by page id. See the module documentation.
#[derive(Debug)]
pub struct DenseBuffer<N> {
    /// By page id: the buffered node, if any.
    slots: Vec<Option<Slot<N>>>,
    /// Buffered pages.
    ids: Bits,
    len: usize,
    bytes: usize,
    peak: usize,
}

impl<N> Default for DenseBuffer<N> {
    fn default() -> Self {
        DenseBuffer {
            slots: Vec::new(),
            ids: Bits::default(),
            len: 0,
            bytes: 0,
            peak: 0,
        }
    }
}

impl<N: BufferedNode> DenseBuffer<N> {
    /// Bytes of the buffered nodes (as each counted when put).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Buffered nodes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no node is buffered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether node `id` is buffered.
    #[inline]
    pub fn contains(&self, id: PageId) -> bool {
        self.ids.contains(id)
    }

    /// Buffered node `id`.
    #[inline]
    pub fn get(&self, id: PageId) -> Option<&N> {
        match self.slots.get(usize::try_from(id).ok()?) {
            Some(Some(s)) => Some(&s.node),
            _ => None,
        }
    }

    /// Puts node `id` (replacing and returning the older version).
    pub fn insert(&mut self, id: PageId, node: N) -> Option<N> {
        let i = usize::try_from(id).expect("page ids fit in memory");
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        let bytes = node.bytes();
        self.bytes += bytes;
        let old = self.slots[i].replace(Slot { node, bytes });
        match &old {
            Some(o) => self.bytes -= o.bytes,
            None => {
                self.len += 1;
                self.ids.insert(id);
            }
        }
        self.peak = self.peak.max(self.bytes);
        old.map(|s| s.node)
    }

    /// Takes node `id` out.
    #[inline]
    pub fn remove(&mut self, id: PageId) -> Option<N> {
        if !self.ids.contains(id) {
            return None;
        }
        let s = self.slots[id as usize].take().expect("a member has a slot");
        self.ids.remove(id);
        self.len -= 1;
        self.bytes -= s.bytes;
        Some(s.node)
    }

    /// Calls `f` with every buffered node, in page order.
    pub fn each(&self, mut f: impl FnMut(PageId, &N)) {
        let slots = &self.slots;
        self.ids.each(|id| {
            let s = slots[id as usize].as_ref().expect("a member has a slot");
            f(id, &s.node);
        });
    }

    /// The buffered nodes, in page order.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, &N)> + '_ {
        self.ids.iter().map(|id| {
            let s = self.slots[id as usize]
                .as_ref()
                .expect("a member has a slot");
            (id, &s.node)
        })
    }

    /// The buffered pages, in order (reading none of their nodes).
    pub fn ids_iter(&self) -> impl Iterator<Item = PageId> + '_ {
        self.ids.iter()
    }

    /// The buffered pages, in order.
    pub fn ids(&self) -> Vec<PageId> {
        let mut v = Vec::with_capacity(self.len);
        self.ids.each(|id| v.push(id));
        v
    }

    /// Nodes by status, bytes and peak bytes.
    pub fn gauges(&self) -> BufferGauges {
        let mut g = BufferGauges {
            bytes: self.bytes as u64,
            peak_bytes: self.peak as u64,
            ..Default::default()
        };
        self.each(|_, n| match n.status() {
            NodeStatus::New => g.new_nodes += 1,
            NodeStatus::Modified => g.modified_nodes += 1,
            NodeStatus::Deleted => g.deleted_nodes += 1,
        });
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::buffered::NodeBuffer;

    #[derive(Debug, Clone, PartialEq)]
    struct N(NodeStatus, usize);

    impl BufferedNode for N {
        fn status(&self) -> NodeStatus {
            self.0
        }
        fn bytes(&self) -> usize {
            self.1
        }
    }

    /// Random puts and takes leave the table as the ordered map (contents, order, bytes,
    /// gauges).
    #[test]
    fn dense_buffer_equals_the_node_buffer() {
        let mut dense = DenseBuffer::default();
        let mut map = NodeBuffer::default();
        let mut seed = 99u64;
        for step in 0..20_000u64 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = (seed >> 33) % 300;
            if (seed >> 20).is_multiple_of(3) {
                assert_eq!(dense.remove(id), map.remove(id), "step {step}");
            } else {
                let status = match (seed >> 24) % 3 {
                    0 => NodeStatus::New,
                    1 => NodeStatus::Modified,
                    _ => NodeStatus::Deleted,
                };
                let n = N(status, ((seed >> 40) % 500) as usize);
                assert_eq!(
                    dense.insert(id, n.clone()),
                    map.insert(id, n),
                    "step {step}"
                );
            }
            assert_eq!(dense.get(id), map.get(id));
            assert_eq!(dense.contains(id + 1), map.contains(id + 1));
            assert_eq!(dense.len(), map.len());
            assert_eq!(dense.bytes(), map.bytes());
            if step % 500 == 0 {
                assert_eq!(dense.ids(), map.ids());
                assert_eq!(dense.ids_iter().collect::<Vec<_>>(), map.ids());
                assert_eq!(dense.gauges(), map.gauges());
                let mut all = Vec::new();
                dense.each(|id, n| all.push((id, n.clone())));
                let want: Vec<_> = map.iter().map(|(id, n)| (id, n.clone())).collect();
                assert_eq!(all, want);
                let iterated: Vec<_> = dense.iter().map(|(id, n)| (id, n.clone())).collect();
                assert_eq!(iterated, want);
            }
        }
    }
}
