//! Table pages: a table of fixed-size entries saved as 4 KB pages, only the pages that
//! changed.
//!
//! Shared by the FTL's tables (`crate::device::flash::ftl::persist`) and the page index of
//! a [`PageStore`] (`super::index`). The owner keeps its table decoded in memory and marks
//! the page of every entry it changes ([`TablePages::mark`], a bit per page); a save
//! encodes the marked pages ([`TablePages::take_dirty`], [`TablePages::put`]) and appends
//! them to a second pages file of the state file (`<state file>.<suffix>-<generation>`,
//! the same append-only, CRC-checked, generation-compacted [`PageStore`] as the data's,
//! whose own small index stays in the state file): a save of an unchanged table writes
//! nothing, a save after N changed entries at most N pages. A page holding only zeros that
//! was never saved is not written, so a table of which only a corner was used costs only
//! that corner's pages.

use std::path::Path;

use super::{PageStore, SaveReport};
use crate::Result;

/// Bytes of a table page.
pub(crate) const TABLE_PAGE: usize = 4096;

/// The saved pages of a table and which of them changed since the last save.
#[derive(Debug, Default)]
pub(crate) struct TablePages {
    store: PageStore,
    /// One bit per page: changed since the last save (grown as pages are marked).
    dirty: Vec<u64>,
}

impl TablePages {
    /// Table pages never saved.
    pub(crate) fn new() -> TablePages {
        TablePages::with_store(PageStore::new(TABLE_PAGE))
    }

    /// The table pages saved in `store` (its index loaded from a state file), none changed.
    pub(crate) fn with_store(store: PageStore) -> TablePages {
        TablePages {
            store,
            dirty: Vec::new(),
        }
    }

    /// Reserves the dirty bits of `pages` pages (so that marking them never allocates).
    pub(crate) fn reserve(&mut self, pages: u64) {
        let words = pages.div_ceil(64) as usize;
        if self.dirty.len() < words {
            self.dirty.resize(words, 0);
        }
    }

    /// Marks page `p` changed.
    #[inline]
    pub(crate) fn mark(&mut self, p: u64) {
        let w = (p >> 6) as usize;
        if w >= self.dirty.len() {
            self.dirty.resize(w + 1, 0);
        }
        self.dirty[w] |= 1 << (p & 63);
    }

    /// Pages changed since the last save.
    pub(crate) fn dirty_pages(&self) -> u64 {
        self.dirty.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// The pages changed since the last save, ascending, and clears their marks.
    pub(crate) fn take_dirty(&mut self) -> Vec<u64> {
        let mut out = Vec::new();
        for (w, bits) in self.dirty.iter_mut().enumerate() {
            let mut b = std::mem::take(bits);
            while b != 0 {
                out.push(w as u64 * 64 + b.trailing_zeros() as u64);
                b &= b - 1;
            }
        }
        out
    }

    /// Stores the encoded image of page `p` (one [`TABLE_PAGE`]); an image of zeros of a
    /// page never saved is dropped (it reads as zeros anyway).
    pub(crate) fn put(&mut self, p: u64, image: &[u8]) {
        if image.iter().all(|&b| b == 0) && !self.store.is_written(p) {
            return;
        }
        self.store.write(p, image);
    }

    /// Writes the pages [`TablePages::put`] since the last save to the pages file
    /// `<state>.<suffix>-<generation>` (`peek` names the generation the checkpoint backup
    /// `<state>.bak` holds, which a compaction keeps; see [`PageStore::save_named`]) and
    /// forgets their in-memory images.
    pub(crate) fn commit(
        &mut self,
        state: &Path,
        suffix: &str,
        peek: fn(&Path) -> Option<String>,
    ) -> Result<SaveReport> {
        let report = self.store.save_named(state, suffix, peek)?;
        self.store.drop_clean();
        Ok(report)
    }

    /// The pages store (its index is what the state file saves).
    pub(crate) fn store(&self) -> &PageStore {
        &self.store
    }

    /// The pages store, to attach or read.
    pub(crate) fn store_mut(&mut self) -> &mut PageStore {
        &mut self.store
    }
}
