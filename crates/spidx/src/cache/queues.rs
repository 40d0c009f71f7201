//! The data structure under every replacement policy: several intrusive doubly linked
//! lists of keys sharing one slab of nodes, with a hash index from key to node.
//!
//! A key is in at most one list at a time. Every operation (insert at the front, move to
//! the front of any list, look at or remove the back, remove by key) is O(1) expected.
//! Each node carries a *stamp* the caller sets on insertion and on every move; HLRU uses
//! it to compare the ages of the backs of its per-level lists.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast hasher for `u64` keys (page and node ids): one 64×64→128-bit multiply folded
/// to 64 bits, so that every input bit reaches both the low bits (bucket index) and the
/// high bits (control byte) of the hash. Not DoS-resistant; keys come from the program.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let p = u128::from(self.0 ^ n) * u128::from(MUL);
        self.0 = (p as u64) ^ ((p >> 64) as u64);
    }
}

/// A `HashMap` keyed by page/node ids with [`KeyHasher`].
pub type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Node {
    key: u64,
    stamp: u64,
    prev: u32,
    next: u32,
    list: u32,
}

/// Head (newest) and tail (oldest) of one list.
#[derive(Clone, Copy)]
struct Ends {
    head: u32,
    tail: u32,
    len: usize,
}

const EMPTY: Ends = Ends {
    head: NIL,
    tail: NIL,
    len: 0,
};

/// Several linked lists of `u64` keys over one slab. The *front* of a list is its newest
/// (most recently used) end, the *back* its oldest.
pub(crate) struct Queues {
    nodes: Vec<Node>,
    free: Vec<u32>,
    index: KeyMap<u32>,
    lists: Vec<Ends>,
}

impl Queues {
    /// `lists` empty lists.
    pub(super) fn new(lists: usize) -> Self {
        Queues {
            nodes: Vec::new(),
            free: Vec::new(),
            index: KeyMap::default(),
            lists: vec![EMPTY; lists],
        }
    }

    /// Number of lists.
    pub(super) fn list_count(&self) -> usize {
        self.lists.len()
    }

    /// Adds empty lists until there are at least `n`.
    pub(super) fn ensure_lists(&mut self, n: usize) {
        if self.lists.len() < n {
            self.lists.resize(n, EMPTY);
        }
    }

    /// The list holding `key`, if any.
    pub(super) fn list_of(&self, key: u64) -> Option<usize> {
        self.index
            .get(&key)
            .map(|&i| self.nodes[i as usize].list as usize)
    }

    /// Length of one list.
    pub(super) fn len(&self, list: usize) -> usize {
        self.lists[list].len
    }

    /// Keys in all lists.
    pub(super) fn total(&self) -> usize {
        self.index.len()
    }

    /// Inserts a key that is in no list at the front of `list`.
    pub(super) fn push_front(&mut self, list: usize, key: u64, stamp: u64) {
        let node = Node {
            key,
            stamp,
            prev: NIL,
            next: NIL,
            list: list as u32,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                assert!(self.nodes.len() < NIL as usize, "too many cached keys");
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let old = self.index.insert(key, i);
        debug_assert!(old.is_none(), "key {key} pushed twice");
        self.link_front(i, list);
    }

    /// Moves a present key to the front of `list` (its own or another) with a new stamp;
    /// returns false if the key is in no list.
    pub(super) fn move_front(&mut self, key: u64, list: usize, stamp: u64) -> bool {
        let Some(&i) = self.index.get(&key) else {
            return false;
        };
        let n = &mut self.nodes[i as usize];
        if n.list as usize == list && self.lists[list].head == i {
            // Already the newest of `list`: unlinking and linking it again would leave
            // the list as it is.
            n.stamp = stamp;
            return true;
        }
        self.unlink(i);
        self.nodes[i as usize].stamp = stamp;
        self.nodes[i as usize].list = list as u32;
        self.link_front(i, list);
        true
    }

    /// The oldest key of `list` and its stamp.
    pub(super) fn back(&self, list: usize) -> Option<(u64, u64)> {
        let t = self.lists[list].tail;
        (t != NIL).then(|| {
            let n = &self.nodes[t as usize];
            (n.key, n.stamp)
        })
    }

    /// Removes and returns the oldest key of `list`.
    pub(super) fn pop_back(&mut self, list: usize) -> Option<u64> {
        let (key, _) = self.back(list)?;
        self.remove(key);
        Some(key)
    }

    /// Removes a key from whichever list holds it; returns that list.
    pub(super) fn remove(&mut self, key: u64) -> Option<usize> {
        let i = self.index.remove(&key)?;
        let list = self.nodes[i as usize].list as usize;
        self.unlink(i);
        self.free.push(i);
        Some(list)
    }

    /// Empties every list (the number of lists is kept).
    pub(super) fn clear(&mut self) {
        self.nodes.clear();
        self.free.clear();
        self.index.clear();
        self.lists.fill(EMPTY);
    }

    /// Keys of one list from front (newest) to back (oldest); O(n), for tests and debugging.
    pub(super) fn keys(&self, list: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.lists[list].len);
        let mut i = self.lists[list].head;
        while i != NIL {
            out.push(self.nodes[i as usize].key);
            i = self.nodes[i as usize].next;
        }
        out
    }

    fn link_front(&mut self, i: u32, list: usize) {
        let ends = &mut self.lists[list];
        let old_head = ends.head;
        ends.head = i;
        if old_head == NIL {
            ends.tail = i;
        }
        ends.len += 1;
        let n = &mut self.nodes[i as usize];
        n.prev = NIL;
        n.next = old_head;
        if old_head != NIL {
            self.nodes[old_head as usize].prev = i;
        }
    }

    fn unlink(&mut self, i: u32) {
        let Node {
            prev, next, list, ..
        } = self.nodes[i as usize];
        let ends = &mut self.lists[list as usize];
        ends.len -= 1;
        if prev == NIL {
            ends.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            ends.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_order_and_move_between_lists() {
        let mut q = Queues::new(2);
        for k in 1..=4 {
            q.push_front(0, k, k);
        }
        assert_eq!(q.keys(0), [4, 3, 2, 1]);
        assert_eq!(q.back(0), Some((1, 1)));
        assert!(q.move_front(2, 0, 10));
        assert_eq!(q.keys(0), [2, 4, 3, 1]);
        // The newest key moved to its own list's front again: order kept, stamp renewed.
        assert!(q.move_front(2, 0, 13));
        assert_eq!(q.keys(0), [2, 4, 3, 1]);
        assert_eq!(q.len(0), 4);
        // The newest key of one list moved to the front of another.
        q.push_front(1, 9, 14);
        assert!(q.move_front(9, 0, 15));
        assert_eq!((q.keys(0), q.keys(1)), (vec![9, 2, 4, 3, 1], vec![]));
        assert_eq!(q.remove(9), Some(0));
        q.push_front(1, 8, 16);
        assert!(q.move_front(8, 1, 17));
        assert_eq!((q.keys(1), q.back(1)), (vec![8], Some((8, 17))));
        assert_eq!(q.remove(8), Some(1));
        assert!(q.move_front(3, 1, 11));
        assert_eq!((q.keys(0), q.keys(1)), (vec![2, 4, 1], vec![3]));
        assert_eq!(q.list_of(3), Some(1));
        assert_eq!(q.pop_back(0), Some(1));
        assert_eq!(q.remove(2), Some(0));
        assert_eq!(q.remove(2), None);
        assert!(!q.move_front(99, 0, 0));
        assert_eq!((q.len(0), q.len(1), q.total()), (1, 1, 2));
        q.push_front(1, 7, 12); // reuses a freed slot
        assert_eq!(q.keys(1), [7, 3]);
        assert_eq!(q.pop_back(1), Some(3));
        assert_eq!(q.pop_back(1), Some(7));
        assert_eq!(q.pop_back(1), None);
        q.clear();
        assert_eq!((q.total(), q.back(0)), (0, None));
    }

    #[test]
    fn hasher_spreads_high_bits_into_low_bits() {
        let h = |k: u64| {
            let mut s = KeyHasher::default();
            s.write_u64(k);
            s.finish()
        };
        let low: std::collections::HashSet<u64> = (0..64u64).map(|i| h(i << 40) & 63).collect();
        assert!(low.len() > 30, "only {} distinct buckets", low.len());
    }
}
