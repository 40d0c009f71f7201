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

use serde::{Deserialize, Serialize};

use super::bits::Bits;
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
///
/// A table indexed by page id with the buffered pages as a [`Bits`] set (page ids are dense,
/// allocated from 0 upwards): every read of a node asks whether it is buffered, so finding
/// one is an index, not a search, and the pages still come out in page order.
pub struct NodeBuffer<N> {
    /// By page id: the buffered node, if any.
    slots: Vec<Option<Slot<N>>>,
    /// Buffered pages.
    ids: Bits,
    len: usize,
    bytes: usize,
    peak: usize,
}

impl<N> Default for NodeBuffer<N> {
    fn default() -> Self {
        NodeBuffer {
            slots: Vec::new(),
            ids: Bits::default(),
            len: 0,
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
        self.len
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether node `id` is buffered.
    #[inline]
    pub fn contains(&self, id: PageId) -> bool {
        self.ids.contains(id)
    }

    /// The buffered node `id`.
    #[inline]
    pub fn get(&self, id: PageId) -> Option<&N> {
        // The bit set first: it is small and most nodes asked for are not buffered, while
        // the table's slots are large and far apart.
        if !self.ids.contains(id) {
            return None;
        }
        match self.slots.get(usize::try_from(id).ok()?) {
            Some(Some(s)) => Some(&s.node),
            _ => None,
        }
    }

    /// The slot of page `id`, made if the table is shorter.
    fn slot(&mut self, id: PageId) -> &mut Option<Slot<N>> {
        let i = usize::try_from(id).expect("page ids fit in memory");
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        &mut self.slots[i]
    }

    /// Puts `node` in the buffer under `id` (replacing what was there, returned), counting
    /// its bytes.
    pub fn insert(&mut self, id: PageId, node: N) -> Option<N> {
        let bytes = node.bytes();
        let old = self.slot(id).replace(Slot { node, bytes });
        self.bytes += bytes;
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

    /// Changes node `id` in place by `f` (a node `make` gives is put first if none is
    /// buffered), then recounts its bytes: the totals and the peak as if the node had
    /// been taken out and put back changed.
    pub(crate) fn upsert(&mut self, id: PageId, make: impl FnOnce() -> N, f: impl FnOnce(&mut N)) {
        let fresh = !self.ids.contains(id);
        let slot = self.slot(id).get_or_insert_with(|| Slot {
            node: make(),
            bytes: 0,
        });
        f(&mut slot.node);
        let bytes = slot.node.bytes();
        let before = std::mem::replace(&mut slot.bytes, bytes);
        if fresh {
            self.len += 1;
            self.ids.insert(id);
        }
        self.bytes = self.bytes - before + bytes;
        self.peak = self.peak.max(self.bytes);
    }

    /// Takes node `id` out of the buffer.
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

    fn member(&self, id: PageId) -> (PageId, &N) {
        let s = self.slots[id as usize]
            .as_ref()
            .expect("a member has a slot");
        (id, &s.node)
    }

    /// Calls `f` with every buffered node, in page order.
    pub fn each(&self, mut f: impl FnMut(PageId, &N)) {
        self.ids.each(|id| {
            let (id, n) = self.member(id);
            f(id, n)
        });
    }

    /// Buffered nodes in page order.
    pub fn iter(&self) -> impl Iterator<Item = (PageId, &N)> + '_ {
        self.ids.iter().map(|id| self.member(id))
    }

    /// Buffered page ids in order (reading none of their nodes).
    pub(crate) fn ids_iter(&self) -> impl Iterator<Item = PageId> + '_ {
        self.ids.iter()
    }

    /// Buffered page ids in order.
    pub fn ids(&self) -> Vec<PageId> {
        let mut v = Vec::with_capacity(self.len);
        self.ids.each(|id| v.push(id));
        v
    }

    /// Buffered nodes with ids in `range`, in page order.
    pub fn range(&self, range: std::ops::Range<PageId>) -> impl Iterator<Item = (PageId, &N)> + '_ {
        let end = range.end;
        self.ids
            .iter_from(range.start)
            .take_while(move |&id| id < end)
            .map(|id| self.member(id))
    }

    /// The buffer now, by status, with its peak.
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

    /// Random puts, in-place changes and takes leave the buffer as an ordered map of the
    /// same nodes: contents, page order, ranges, bytes, peak and gauges.
    #[test]
    fn the_buffer_equals_an_ordered_map_of_its_nodes() {
        use rand::{Rng, SeedableRng};
        use rand_chacha::ChaCha8Rng;
        use std::collections::BTreeMap;
        let mut b: NodeBuffer<N> = NodeBuffer::default();
        let mut model: BTreeMap<PageId, (NodeStatus, usize)> = BTreeMap::new();
        let mut peak = 0;
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        for step in 0..20_000u64 {
            let id = rng.gen_range(0..300);
            let status = match rng.gen_range(0..3) {
                0 => NodeStatus::New,
                1 => NodeStatus::Modified,
                _ => NodeStatus::Deleted,
            };
            let bytes = rng.gen_range(0..500);
            match rng.gen_range(0..4) {
                0 => {
                    let got = b.remove(id).map(|n| (n.0, n.1));
                    assert_eq!(got, model.remove(&id), "step {step}");
                }
                1 => {
                    b.upsert(id, || N(status, 0), |n| n.1 = bytes);
                    model.entry(id).or_insert((status, 0)).1 = bytes;
                }
                _ => {
                    let got = b.insert(id, N(status, bytes)).map(|n| (n.0, n.1));
                    assert_eq!(got, model.insert(id, (status, bytes)), "step {step}");
                }
            }
            let total: usize = model.values().map(|v| v.1).sum();
            peak = peak.max(total);
            assert_eq!(b.get(id).map(|n| (n.0, n.1)), model.get(&id).copied());
            assert_eq!(b.contains(id + 1), model.contains_key(&(id + 1)));
            assert_eq!((b.len(), b.bytes()), (model.len(), total), "step {step}");
            if step % 250 == 0 {
                let want: Vec<_> = model.iter().map(|(&k, &v)| (k, v)).collect();
                let got: Vec<_> = b.iter().map(|(k, n)| (k, (n.0, n.1))).collect();
                assert_eq!(got, want, "step {step}");
                let mut each = Vec::new();
                b.each(|k, n| each.push((k, (n.0, n.1))));
                assert_eq!(each, want);
                assert_eq!(b.ids(), model.keys().copied().collect::<Vec<_>>());
                assert_eq!(b.ids_iter().collect::<Vec<_>>(), b.ids());
                let (lo, hi) = (id / 2, id + 70);
                let ranged: Vec<_> = b.range(lo..hi).map(|(k, n)| (k, (n.0, n.1))).collect();
                let want: Vec<_> = model.range(lo..hi).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(ranged, want, "range {lo}..{hi}");
                let g = b.gauges();
                let count = |s| model.values().filter(|v| v.0 == s).count() as u64;
                assert_eq!(
                    (g.new_nodes, g.modified_nodes, g.deleted_nodes),
                    (
                        count(NodeStatus::New),
                        count(NodeStatus::Modified),
                        count(NodeStatus::Deleted)
                    )
                );
                assert_eq!((g.bytes, g.peak_bytes), (total as u64, peak as u64));
            }
        }
    }
}
