//! The entry counts of recently read stored pages that eFIND remembers, so that the first
//! buffered change of a node need not read its page again (a FIFO of the last
//! [`LENGTH_MEMO`] pages, an entry updated in place when its page is read again).
//!
//! Kept as the FIFO of page ids plus the counts by page id (dense: page ids are allocated
//! from 0 upwards), so remembering and looking up a count costs no scan of the FIFO; a
//! page is forgotten (freed or reused) with one scan, which is rare.

use std::collections::VecDeque;

use crate::node::PageId;

/// Pages whose entry counts are remembered.
pub(crate) const LENGTH_MEMO: usize = 256;

/// Remembered entry counts. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Lengths {
    /// Remembered pages, oldest first (each once).
    order: VecDeque<PageId>,
    /// By page id: the entry count + 1 of a remembered page, 0 for others.
    counts: Vec<u32>,
}

impl Lengths {
    /// The remembered entry count of page `id`.
    pub(crate) fn get(&self, id: PageId) -> Option<u32> {
        match self.counts.get(id as usize) {
            Some(&c) if c > 0 => Some(c - 1),
            _ => None,
        }
    }

    /// Remembers that page `id` holds `len` entries (the oldest page is forgotten if the
    /// memo is full and `id` is not in it).
    pub(crate) fn remember(&mut self, id: PageId, len: u32) {
        let i = usize::try_from(id).expect("page ids fit in memory");
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        if self.counts[i] == 0 {
            if self.order.len() == LENGTH_MEMO {
                let old = self.order.pop_front().expect("full");
                self.counts[old as usize] = 0;
            }
            self.order.push_back(id);
        }
        self.counts[i] = len + 1;
    }

    /// Forgets page `id`.
    pub(crate) fn forget(&mut self, id: PageId) {
        if self.get(id).is_some() {
            self.counts[id as usize] = 0;
            self.order.retain(|&p| p != id);
        }
    }

    /// Forgets every page.
    pub(crate) fn clear(&mut self) {
        self.order.clear();
        self.counts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The memo behaves as the FIFO of `(page, count)` pairs it replaces.
    #[test]
    fn lengths_equal_a_scanned_fifo() {
        let mut memo = Lengths::default();
        let mut fifo: VecDeque<(PageId, u32)> = VecDeque::new();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for step in 0..20_000u32 {
            let id = rng.gen_range(0..400);
            match rng.gen_range(0..10) {
                0 => {
                    memo.forget(id);
                    fifo.retain(|(p, _)| *p != id);
                }
                1 if step % 5000 == 0 => {
                    memo.clear();
                    fifo.clear();
                }
                _ => {
                    memo.remember(id, step);
                    if let Some(slot) = fifo.iter_mut().find(|(p, _)| *p == id) {
                        slot.1 = step;
                    } else {
                        if fifo.len() == LENGTH_MEMO {
                            fifo.pop_front();
                        }
                        fifo.push_back((id, step));
                    }
                }
            }
            for p in [id, id / 2, id + 1] {
                let want = fifo.iter().find(|(q, _)| *q == p).map(|(_, l)| *l);
                assert_eq!(memo.get(p), want, "step {step} page {p}");
            }
        }
    }
}
