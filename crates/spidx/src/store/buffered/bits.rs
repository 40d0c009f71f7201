//! A set of page ids as bits: the buffered pages of the write buffer
//! ([`NodeBuffer`](super::NodeBuffer)) and eFIND's bookkeeping of them (its standings, the
//! compacted log's reusable node states). Page ids are dense (allocated from 0 upwards), so
//! the words are few, membership is one bit test and members come out in page order.

use crate::node::PageId;

/// A set of page ids as bits (page ids are dense, so the words are few).
#[derive(Debug, Default, Clone)]
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    fn word(id: PageId) -> (usize, u64) {
        ((id / 64) as usize, 1u64 << (id % 64))
    }

    /// Whether `id` is a member.
    pub(crate) fn contains(&self, id: PageId) -> bool {
        let (w, b) = Self::word(id);
        self.0.get(w).is_some_and(|x| x & b != 0)
    }

    /// Adds `id`.
    pub(crate) fn insert(&mut self, id: PageId) {
        let (w, b) = Self::word(id);
        if w >= self.0.len() {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= b;
    }

    /// Removes `id`.
    pub(crate) fn remove(&mut self, id: PageId) {
        let (w, b) = Self::word(id);
        if let Some(x) = self.0.get_mut(w) {
            *x &= !b;
        }
    }

    /// Removes every member.
    pub(crate) fn clear(&mut self) {
        self.0.fill(0);
    }

    /// Calls `f` with every member in `lo..=hi`, in order.
    pub(crate) fn each_in(&self, lo: PageId, hi: PageId, mut f: impl FnMut(PageId)) {
        if lo > hi || self.0.is_empty() {
            return;
        }
        let last = self.0.len() as u64 * 64 - 1;
        let hi = hi.min(last);
        let mut w = (lo / 64) as usize;
        let end = (hi / 64) as usize;
        while w <= end {
            let mut x = self.0[w];
            if w == (lo / 64) as usize {
                x &= u64::MAX << (lo % 64);
            }
            if w == end && hi % 64 != 63 {
                x &= (1u64 << (hi % 64 + 1)) - 1;
            }
            while x != 0 {
                f(w as u64 * 64 + u64::from(x.trailing_zeros()));
                x &= x - 1;
            }
            w += 1;
        }
    }

    /// The members, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = PageId> + '_ {
        self.iter_from(0)
    }

    /// The members from `lo` on, in order.
    pub(crate) fn iter_from(&self, lo: PageId) -> impl Iterator<Item = PageId> + '_ {
        let first = usize::try_from(lo / 64).unwrap_or(usize::MAX);
        let words = self.0.get(first..).unwrap_or(&[]);
        words.iter().enumerate().flat_map(move |(i, &x)| {
            let w = first + i;
            let mut x = match i {
                0 => x & (u64::MAX << (lo % 64)),
                _ => x,
            };
            std::iter::from_fn(move || {
                if x == 0 {
                    return None;
                }
                let id = w as u64 * 64 + u64::from(x.trailing_zeros());
                x &= x - 1;
                Some(id)
            })
        })
    }

    /// Calls `f` with every member, in order.
    pub(crate) fn each(&self, f: impl FnMut(PageId)) {
        self.each_in(0, PageId::MAX, f);
    }
}
