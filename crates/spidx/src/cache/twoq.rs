//! The 2Q policies of Johnson and Shasha ("2Q: a low overhead high performance buffer
//! management replacement algorithm", VLDB 1994), as eFIND offers them for its read
//! buffer: the simplified version [`S2q`] and the full version [`TwoQ`].
//!
//! Both filter out pages referenced only once (scans, one-off leaf reads): a first access
//! puts a page in a FIFO queue, and only pages that prove to be hot reach the main LRU
//! queue `Am`.

use super::policy::ReplacementPolicy;
use super::queues::Queues;

const A1: usize = 0;
const AM: usize = 1;
const A1OUT: usize = 2;

/// Pages of a percentage of a capacity, rounded down.
pub(crate) fn share(capacity: usize, percent: f64) -> usize {
    (capacity as f64 * percent / 100.0).floor() as usize
}

/// Simplified 2Q (Johnson & Shasha 1994, section 2.1).
///
/// Two queues of resident pages: `A1`, a FIFO, and `Am`, an LRU.
/// - access to a page in `Am`: move it to the front of `Am` (as LRU);
/// - access to a page in `A1` (its second access): move it from `A1` to the front of `Am`;
/// - access to any other page: make room if the buffer is full, then put the page at the
///   front of `A1`. Room is made by evicting the back of `A1` if `|A1| > threshold`,
///   otherwise the back of `Am` (or of `A1` if `Am` is empty).
///
/// The threshold is a number of pages (spidx's default: 25 % of the capacity, the same
/// share as full 2Q's `Kin`). Both queues hold data; nothing is remembered after eviction.
pub struct S2q {
    capacity: usize,
    threshold: usize,
    q: Queues,
}

impl S2q {
    /// A simplified 2Q policy of `capacity` pages whose `A1` may exceed `threshold` pages
    /// only while the buffer has free room.
    pub fn new(capacity: usize, threshold: usize) -> Self {
        S2q {
            capacity,
            threshold,
            q: Queues::new(2),
        }
    }

    /// Resident keys of `A1` (newest first) and of `Am` (most recent first); O(n).
    pub fn queues(&self) -> (Vec<u64>, Vec<u64>) {
        (self.q.keys(A1), self.q.keys(AM))
    }
}

impl ReplacementPolicy for S2q {
    fn name(&self) -> &'static str {
        "s2q"
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
        self.q.move_front(key, AM, 0)
    }
    fn admit(&mut self, key: u64, level: u32, evicted: &mut Vec<u64>) -> bool {
        if self.touch(key, level) {
            return true;
        }
        if self.capacity == 0 {
            return false;
        }
        if self.q.total() >= self.capacity {
            let from = if self.q.len(A1) > self.threshold || self.q.len(AM) == 0 {
                A1
            } else {
                AM
            };
            evicted.extend(self.q.pop_back(from));
        }
        self.q.push_front(A1, key, 0);
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        self.q.remove(key).is_some()
    }
    fn clear(&mut self) {
        self.q.clear();
    }
}

/// Full 2Q (Johnson & Shasha 1994, section 2.2).
///
/// Resident pages are split between `A1in`, a FIFO of pages accessed once, and `Am`, an
/// LRU of hot pages; `A1out` is a FIFO *ghost* queue remembering the ids (no data) of
/// pages recently evicted from `A1in`.
/// - access to a page in `Am`: move it to the front of `Am`;
/// - access to a page in `A1in`: nothing (correlated references do not make a page hot);
/// - access to a page in `A1out` (a miss): make room, put the page at the front of `Am`;
/// - access to any other page (a miss): make room, put the page at the front of `A1in`.
///
/// Making room when the buffer is full: if `|A1in| > Kin`, evict the back of `A1in` and
/// remember its id at the front of `A1out` (dropping the back of `A1out` beyond `Kout`
/// ids); otherwise evict the back of `Am` without remembering it (if `Am` is empty, the
/// back of `A1in` is evicted as above). The paper recommends `Kin` = 25 % of the buffer
/// pages and `Kout` = 50 % (in ids), spidx's defaults.
pub struct TwoQ {
    capacity: usize,
    kin: usize,
    kout: usize,
    q: Queues,
}

impl TwoQ {
    /// A full 2Q policy of `capacity` pages with `A1in` threshold `kin` pages and an
    /// `A1out` of at most `kout` ids.
    pub fn new(capacity: usize, kin: usize, kout: usize) -> Self {
        TwoQ {
            capacity,
            kin,
            kout,
            q: Queues::new(3),
        }
    }

    /// `A1in` (newest first), `Am` (most recent first) and `A1out` (newest first); O(n).
    pub fn queues(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        (self.q.keys(A1), self.q.keys(AM), self.q.keys(A1OUT))
    }

    /// `Kin` and `Kout` in pages.
    pub fn params(&self) -> (usize, usize) {
        (self.kin, self.kout)
    }

    fn resident(&self) -> usize {
        self.q.total() - self.q.len(A1OUT)
    }

    fn reclaim(&mut self, evicted: &mut Vec<u64>) {
        if self.resident() < self.capacity {
            return;
        }
        if self.q.len(A1) > self.kin || self.q.len(AM) == 0 {
            if let Some((key, _)) = self.q.back(A1) {
                evicted.push(key);
                if self.kout == 0 {
                    self.q.remove(key);
                } else {
                    self.q.move_front(key, A1OUT, 0);
                    if self.q.len(A1OUT) > self.kout {
                        self.q.pop_back(A1OUT);
                    }
                }
            }
        } else {
            evicted.extend(self.q.pop_back(AM));
        }
    }
}

impl ReplacementPolicy for TwoQ {
    fn name(&self) -> &'static str {
        "2q"
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn len(&self) -> usize {
        self.resident()
    }
    fn contains(&self, key: u64) -> bool {
        matches!(self.q.list_of(key), Some(A1 | AM))
    }
    fn touch(&mut self, key: u64, _level: u32) -> bool {
        match self.q.list_of(key) {
            Some(AM) => self.q.move_front(key, AM, 0),
            Some(A1) => true,
            _ => false,
        }
    }
    fn admit(&mut self, key: u64, level: u32, evicted: &mut Vec<u64>) -> bool {
        if self.touch(key, level) {
            return true;
        }
        if self.capacity == 0 {
            return false;
        }
        let ghost = self.q.list_of(key) == Some(A1OUT);
        if ghost {
            self.q.remove(key);
        }
        self.reclaim(evicted);
        self.q.push_front(if ghost { AM } else { A1 }, key, 0);
        true
    }
    fn remove(&mut self, key: u64) -> bool {
        matches!(self.q.remove(key), Some(A1 | AM))
    }
    fn clear(&mut self) {
        self.q.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s2q_promotes_on_second_access() {
        let mut p = S2q::new(3, 1);
        let mut ev = Vec::new();
        for k in [1, 2, 3] {
            assert!(p.admit(k, 0, &mut ev));
        }
        assert!(p.touch(2, 0));
        assert_eq!(p.queues(), (vec![3, 1], vec![2]));
        // |A1| = 2 > 1: the oldest of A1 leaves.
        p.admit(4, 0, &mut ev);
        assert_eq!(ev, [1]);
        p.touch(3, 0);
        // |A1| = 1, not above the threshold: Am's LRU page leaves.
        ev.clear();
        p.admit(5, 0, &mut ev);
        assert_eq!(ev, [2]);
        assert_eq!(p.queues(), (vec![5, 4], vec![3]));
    }

    #[test]
    fn two_q_ghosts_send_returning_pages_to_am() {
        let mut p = TwoQ::new(2, 0, 2);
        let mut ev = Vec::new();
        p.admit(1, 0, &mut ev);
        p.admit(2, 0, &mut ev);
        assert!(p.touch(1, 0), "a hit in A1in");
        assert_eq!(
            p.queues(),
            (vec![2, 1], vec![], vec![]),
            "A1in hits do nothing"
        );
        p.admit(3, 0, &mut ev);
        assert_eq!(ev, [1]);
        assert!(!p.contains(1));
        assert_eq!(p.queues(), (vec![3, 2], vec![], vec![1]));
        // 1 comes back while remembered: it goes to Am.
        ev.clear();
        assert!(p.admit(1, 0, &mut ev));
        assert_eq!(ev, [2]);
        assert_eq!(p.queues(), (vec![3], vec![1], vec![2]));
        assert_eq!(p.len(), 2);
        // Ghosts are bounded by Kout.
        for k in 10..20 {
            p.admit(k, 0, &mut ev);
        }
        assert_eq!(p.queues().2.len(), 2);
        assert!(!p.remove(18) && p.remove(19));
        p.clear();
        assert_eq!(p.queues(), (vec![], vec![], vec![]));
    }
}
