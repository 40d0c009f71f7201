//! Replacement policies: which keys a buffer keeps. They hold keys only, never data, so
//! any buffer (the [`PageCache`](super::PageCache) over a device, eFIND's read buffer over
//! node ids) keeps its values in its own map and asks the policy what to evict.
//!
//! Every key comes with a *level* hint: the height of the node stored under it (leaf = 0,
//! larger = nearer the root). Only [`Hlru`] uses it.
//!
//! Protocol, for a buffer holding a map `key -> value` in step with the policy:
//! - on an access to a key the policy [`contains`](ReplacementPolicy::contains): call
//!   [`touch`](ReplacementPolicy::touch);
//! - on an access to any other key: call [`admit`](ReplacementPolicy::admit); remove the
//!   keys it reports as evicted from the map, then store the value if it returns `true`;
//! - [`remove`](ReplacementPolicy::remove) and [`clear`](ReplacementPolicy::clear) follow
//!   removals from the map.

use super::queues::Queues;

/// Levels above this are treated as this level by [`Hlru`] (trees are never this tall).
pub const MAX_LEVEL: u32 = 63;

/// A buffer replacement policy over `u64` keys with a capacity in entries (pages).
pub trait ReplacementPolicy: Send {
    /// Short name, as written in a cache specification (`lru`, `hlru`, `s2q`, `2q`, `none`).
    fn name(&self) -> &'static str;

    /// Maximum number of resident keys.
    fn capacity(&self) -> usize;

    /// Number of resident keys (never more than the capacity). Keys the policy only
    /// remembers (2Q's ghost queue) do not count.
    fn len(&self) -> usize;

    /// Whether no key is resident.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `key` is resident.
    fn contains(&self, key: u64) -> bool;

    /// Records an access to a resident key (a hit), with its current level; returns false
    /// (and does nothing) if the key is not resident.
    fn touch(&mut self, key: u64, level: u32) -> bool;

    /// Records an access to a key that is not resident (a miss) and decides whether it
    /// becomes resident. Keys that must leave to make room are appended to `evicted`.
    /// Returns whether `key` is now resident. Calling it for a resident key is a `touch`.
    fn admit(&mut self, key: u64, level: u32, evicted: &mut Vec<u64>) -> bool;

    /// Forgets a key (resident or only remembered); returns whether it was resident.
    fn remove(&mut self, key: u64) -> bool;

    /// Forgets every key, as if the policy were new (a cold buffer).
    fn clear(&mut self);
}

/// The policy that caches nothing: every access is a miss and nothing is admitted.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

impl ReplacementPolicy for NoCache {
    fn name(&self) -> &'static str {
        "none"
    }
    fn capacity(&self) -> usize {
        0
    }
    fn len(&self) -> usize {
        0
    }
    fn contains(&self, _key: u64) -> bool {
        false
    }
    fn touch(&mut self, _key: u64, _level: u32) -> bool {
        false
    }
    fn admit(&mut self, _key: u64, _level: u32, _evicted: &mut Vec<u64>) -> bool {
        false
    }
    fn remove(&mut self, _key: u64) -> bool {
        false
    }
    fn clear(&mut self) {}
}

/// Least recently used: on a miss with a full buffer the key accessed longest ago leaves.
pub struct Lru {
    capacity: usize,
    q: Queues,
}

impl Lru {
    /// An LRU policy keeping at most `capacity` keys (0 admits nothing).
    pub fn new(capacity: usize) -> Self {
        Lru {
            capacity,
            q: Queues::new(1),
        }
    }

    /// Resident keys from most to least recently used; O(n), for tests and debugging.
    pub fn keys(&self) -> Vec<u64> {
        self.q.keys(0)
    }
}

impl ReplacementPolicy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn len(&self) -> usize {
        self.q.total()
    }
    fn contains(&self, key: u64) -> bool {
        self.q.list_of(key).is_some()
    }
    fn touch(&mut self, key: u64, _level: u32) -> bool {
        self.q.move_front(key, 0, 0)
    }
    fn admit(&mut self, key: u64, level: u32, evicted: &mut Vec<u64>) -> bool {
        if self.touch(key, level) {
            return true;
        }
        if self.capacity == 0 {
            return false;
        }
        if self.q.total() >= self.capacity {
            if let Some(victim) = self.q.pop_back(0) {
                evicted.push(victim);
            }
        }
        self.q.push_front(0, key, 0);
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        self.q.remove(key).is_some()
    }
    fn clear(&mut self) {
        self.q.clear();
    }
}

/// Hierarchical LRU (eFIND's HLRU): LRU that protects the upper levels of a tree.
///
/// On a miss with a full buffer, the victim is the least recently used resident key whose
/// level is at most the incoming key's level; a key is never evicted for a key of a lower
/// level. If every resident key is higher than the incoming one, the incoming key is not
/// admitted. With free room every key is admitted.
///
/// Implementation: one LRU list per level, every entry stamped with a global access
/// counter; the victim is the oldest of the backs of the lists of levels `0..=level`, so a
/// miss costs O(height) and a hit O(1). Levels above [`MAX_LEVEL`] count as `MAX_LEVEL`.
pub struct Hlru {
    capacity: usize,
    clock: u64,
    q: Queues,
}

impl Hlru {
    /// An HLRU policy keeping at most `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        Hlru {
            capacity,
            clock: 0,
            q: Queues::new(1),
        }
    }

    fn list(&mut self, level: u32) -> usize {
        let l = level.min(MAX_LEVEL) as usize;
        self.q.ensure_lists(l + 1);
        l
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The key that would be evicted to admit a key of `level` into a full buffer.
    fn victim(&self, level: u32) -> Option<u64> {
        let top = (level.min(MAX_LEVEL) as usize).min(self.q.list_count() - 1);
        (0..=top)
            .filter_map(|l| self.q.back(l))
            .min_by_key(|&(_, stamp)| stamp)
            .map(|(key, _)| key)
    }

    /// Level (clamped) of a resident key.
    pub fn level_of(&self, key: u64) -> Option<u32> {
        self.q.list_of(key).map(|l| l as u32)
    }
}

impl ReplacementPolicy for Hlru {
    fn name(&self) -> &'static str {
        "hlru"
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn len(&self) -> usize {
        self.q.total()
    }
    fn contains(&self, key: u64) -> bool {
        self.q.list_of(key).is_some()
    }
    fn touch(&mut self, key: u64, level: u32) -> bool {
        if self.q.list_of(key).is_none() {
            return false;
        }
        let (list, stamp) = (self.list(level), self.tick());
        self.q.move_front(key, list, stamp)
    }
    fn admit(&mut self, key: u64, level: u32, evicted: &mut Vec<u64>) -> bool {
        if self.touch(key, level) {
            return true;
        }
        if self.capacity == 0 {
            return false;
        }
        if self.q.total() >= self.capacity {
            let Some(victim) = self.victim(level) else {
                return false;
            };
            self.q.remove(victim);
            evicted.push(victim);
        }
        let (list, stamp) = (self.list(level), self.tick());
        self.q.push_front(list, key, stamp);
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        self.q.remove(key).is_some()
    }
    fn clear(&mut self) {
        self.q.clear();
        self.clock = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recently_used() {
        let mut p = Lru::new(3);
        let mut ev = Vec::new();
        for k in [1, 2, 3] {
            assert!(p.admit(k, 0, &mut ev));
        }
        assert!(p.touch(1, 0));
        assert!(p.admit(4, 0, &mut ev));
        assert_eq!(ev, [2]);
        assert_eq!(p.keys(), [4, 1, 3]);
        assert!(p.remove(3) && !p.remove(3) && !p.touch(3, 0));
        assert_eq!(p.len(), 2);
        p.clear();
        assert!(p.is_empty());
        assert!(!Lru::new(0).admit(1, 0, &mut ev));
    }

    #[test]
    fn hlru_protects_upper_levels() {
        let mut p = Hlru::new(3);
        let mut ev = Vec::new();
        assert!(p.admit(10, 2, &mut ev)); // root, oldest
        assert!(p.admit(20, 1, &mut ev));
        assert!(p.admit(30, 0, &mut ev));
        // A leaf may only replace the leaf.
        assert!(p.admit(31, 0, &mut ev));
        assert_eq!(ev, [30]);
        // A level-1 node replaces the oldest of levels 0 and 1: node 20.
        ev.clear();
        assert!(p.admit(21, 1, &mut ev));
        assert_eq!(ev, [20]);
        // With only higher-level keys resident, a leaf is refused.
        let mut q = Hlru::new(2);
        q.admit(1, 3, &mut ev);
        q.admit(2, 1, &mut ev);
        ev.clear();
        assert!(!q.admit(3, 0, &mut ev));
        assert!(ev.is_empty() && !q.contains(3));
        // A root-level key replaces the oldest key of any level.
        assert!(q.admit(4, 5, &mut ev));
        assert_eq!(ev, [1]);
        assert_eq!(q.level_of(4), Some(5));
        // A touch with a new level moves the key to that level.
        assert!(q.touch(2, 7));
        assert_eq!(q.level_of(2), Some(7));
        assert!(q.touch(2, 1000));
        assert_eq!(q.level_of(2), Some(MAX_LEVEL));
    }

    #[test]
    fn none_caches_nothing() {
        let mut p = NoCache;
        let mut ev = Vec::new();
        assert!(!p.admit(1, 0, &mut ev));
        assert!(!p.contains(1) && p.is_empty() && p.capacity() == 0);
    }
}
