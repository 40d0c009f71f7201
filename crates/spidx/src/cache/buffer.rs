//! [`Buffer`]: a map of values kept in step with a [`ReplacementPolicy`], with hit/miss
//! counters. The [`PageCache`](super::PageCache) is a `Buffer` of page copies over a
//! device; eFIND's read buffer can be a `Buffer` of nodes keyed by node id.

use serde::{Deserialize, Serialize};

use super::policy::ReplacementPolicy;
use super::queues::KeyMap;

/// Counters of a [`Buffer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferStats {
    /// Lookups ([`Buffer::get`]) that found the key.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Keys that became resident.
    pub admissions: u64,
    /// Keys the policy refused to keep.
    pub refused: u64,
    /// Keys evicted to make room (not counting explicit removals).
    pub evictions: u64,
}

impl BufferStats {
    /// Counter-wise difference `self - earlier`.
    pub fn since(&self, earlier: &BufferStats) -> BufferStats {
        BufferStats {
            hits: self.hits - earlier.hits,
            misses: self.misses - earlier.misses,
            admissions: self.admissions - earlier.admissions,
            refused: self.refused - earlier.refused,
            evictions: self.evictions - earlier.evictions,
        }
    }
}

/// Values keyed by `u64` ids, at most `policy.capacity()` of them, the policy choosing
/// which stay.
pub struct Buffer<V> {
    policy: Box<dyn ReplacementPolicy>,
    map: KeyMap<V>,
    evicted: Vec<u64>,
    stats: BufferStats,
}

impl<V> Buffer<V> {
    /// An empty buffer managed by `policy`.
    pub fn new(policy: Box<dyn ReplacementPolicy>) -> Self {
        Buffer {
            policy,
            map: KeyMap::default(),
            evicted: Vec::new(),
            stats: BufferStats::default(),
        }
    }

    /// The replacement policy.
    pub fn policy(&self) -> &dyn ReplacementPolicy {
        self.policy.as_ref()
    }

    /// Maximum number of resident values.
    pub fn capacity(&self) -> usize {
        self.policy.capacity()
    }

    /// Number of resident values.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is resident.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether `key` is resident (no effect on the policy or the counters).
    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    /// The resident value of `key`, without counting an access.
    pub fn peek(&self, key: u64) -> Option<&V> {
        self.map.get(&key)
    }

    /// Looks `key` up as an access: a hit (counted, reported to the policy) returns the
    /// value; a miss is counted and returns `None` (the caller then usually loads the value
    /// and calls [`insert`](Self::insert)).
    pub fn get(&mut self, key: u64, level: u32) -> Option<&V> {
        if self.touch(key, level) {
            self.map.get(&key)
        } else {
            None
        }
    }

    /// The access half of [`get`](Self::get): counts a hit (and reports it to the policy)
    /// or a miss, and returns whether `key` is resident; [`peek`](Self::peek) then gives
    /// the value. For callers that must not hold the borrow `get` returns.
    pub fn touch(&mut self, key: u64, level: u32) -> bool {
        if self.policy.touch(key, level) {
            self.stats.hits += 1;
            true
        } else {
            self.stats.misses += 1;
            false
        }
    }

    /// The resident value of `key` for modification, reported to the policy as an access
    /// but not counted as a hit (a write to a cached page).
    pub fn get_mut(&mut self, key: u64, level: u32) -> Option<&mut V> {
        if self.policy.touch(key, level) {
            self.map.get_mut(&key)
        } else {
            None
        }
    }

    /// Stores `value` under `key`: replaces it if resident (an access), otherwise asks the
    /// policy to admit it. Values evicted to make room are handed to `on_evict`. Returns
    /// `Err(value)` if the policy refused it.
    pub(crate) fn insert_with(
        &mut self,
        key: u64,
        level: u32,
        value: V,
        mut on_evict: impl FnMut(u64, V),
    ) -> Result<(), V> {
        if let Some(slot) = self.get_mut(key, level) {
            *slot = value;
            return Ok(());
        }
        self.evicted.clear();
        let admitted = self.policy.admit(key, level, &mut self.evicted);
        self.stats.evictions += self.evicted.len() as u64;
        for k in self.evicted.drain(..) {
            if let Some(v) = self.map.remove(&k) {
                on_evict(k, v);
            }
        }
        if admitted {
            self.stats.admissions += 1;
            self.map.insert(key, value);
            Ok(())
        } else {
            self.stats.refused += 1;
            Err(value)
        }
    }

    /// [`insert_with`](Self::insert_with) dropping evicted values; returns whether the
    /// value was kept.
    pub fn insert(&mut self, key: u64, level: u32, value: V) -> bool {
        self.insert_with(key, level, value, |_, _| {}).is_ok()
    }

    /// Removes `key` (and the policy's memory of it); returns its value if resident.
    pub fn remove(&mut self, key: u64) -> Option<V> {
        self.policy.remove(key);
        self.map.remove(&key)
    }

    /// Empties the buffer and the policy's memory (the counters are kept).
    pub fn clear(&mut self) {
        self.policy.clear();
        self.map.clear();
    }

    /// The counters so far.
    pub fn stats(&self) -> BufferStats {
        self.stats
    }

    /// Resident keys in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.map.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::policy::{Lru, NoCache};

    #[test]
    fn buffer_follows_its_policy() {
        let mut b: Buffer<String> = Buffer::new(Box::new(Lru::new(2)));
        assert!(b.get(1, 0).is_none());
        assert!(b.insert(1, 0, "one".into()));
        assert!(b.insert(2, 0, "two".into()));
        assert_eq!(b.get(1, 0).map(String::as_str), Some("one"));
        let mut gone = Vec::new();
        b.insert_with(3, 0, "three".into(), |k, v| gone.push((k, v)))
            .unwrap();
        assert_eq!(gone, [(2, "two".to_string())]);
        assert!(b.insert(1, 0, "uno".into()), "replacing a resident value");
        assert_eq!(b.peek(1).map(String::as_str), Some("uno"));
        *b.get_mut(3, 0).unwrap() = "tres".into();
        assert_eq!(b.remove(3).as_deref(), Some("tres"));
        assert_eq!(b.len(), 1);
        let s = b.stats();
        assert_eq!((s.hits, s.misses, s.admissions, s.evictions), (1, 1, 3, 1));
        b.clear();
        assert!(b.is_empty() && !b.contains(1));

        let mut n: Buffer<u8> = Buffer::new(Box::new(NoCache));
        assert_eq!(n.insert_with(1, 0, 7, |_, _| {}), Err(7));
        assert_eq!(n.stats().refused, 1);
    }
}
