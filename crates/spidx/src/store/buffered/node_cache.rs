//! A per-store cache of assembled node images: CPU only, never I/O.
//!
//! The LCR-tree, RFTL and eFIND build a node's page on every read of a node that is not
//! wholly on one page (its page plus its log page's delta; its units from several unit
//! pages; its stored page merged with its buffered entry versions), and then apply the
//! buffered changes. A node's *content* changes only when the tree changes it (create,
//! modify, rewrite, delete); flushes, merges, compactions and the log move where the
//! content is kept, never what it is. [`NodeCache`] keeps the assembled, sealed pages of
//! recently read nodes so that a store can serve the bytes without assembling them again.
//!
//! **What it must not change**: every count. A store that serves a node from the cache
//! still issues exactly the page reads the assembly would have issued (through the page
//! cache, the same requests to the device, in every counter, clock and trace), and counts
//! its own counters as before; the cache only saves the copies, the parsing, the applying
//! and the checksum of the assembly. Since the bytes of those reads are not used, they are
//! issued as [`PageCache::read_unused`](crate::cache::PageCache::read_unused): without a
//! page cache, a device that keeps its pages in memory copies nothing and nothing is
//! verified (a page the page cache may keep is read and verified as any other; a file
//! device reads it). Every page is verified when a node is assembled from it, so a
//! corrupted page is found at the latest when its node leaves this cache, and always after
//! a reopen. It is not a buffer of the modelled system: its memory is not counted against
//! any buffer and it is not reported.
//!
//! **Keeping it exact**: the store forgets a node whenever the tree creates, rewrites or
//! deletes it, and passes every modification to [`NodeCache::modify`], which applies the
//! positional changes to the cached page in place (as the direct store applies them) and
//! reseals it — exactly the bytes an assembly from scratch gives (tested in the stores'
//! property tests). Reopening a store starts with an empty cache.
//!
//! **Bounded**: at most [`NODE_CACHE_BYTES`] of pages (at least 16 pages); a new node
//! that finds it full empties it (no bookkeeping per read: a least-recently-used list cost
//! more than it saved, and the nodes read most, the upper levels, come back at their next
//! read).

use std::ops::Range;
use std::sync::Arc;

use crate::cache::KeyMap;
use crate::node::{NodeLayout, PageId, Resealer};
use crate::store::buffered::page::apply_raw_unsealed;
use crate::store::Change;

use super::RawChange;

/// Memory a [`NodeCache`] may hold, in bytes of pages.
pub(crate) const NODE_CACHE_BYTES: usize = 64 << 20;

/// Assembled node pages by node id. See the module documentation.
pub struct NodeCache {
    pages: KeyMap<Arc<[u8]>>,
    capacity: usize,
    layout: NodeLayout,
    resealer: Option<Resealer>,
}

impl NodeCache {
    /// An empty cache for pages of `layout`.
    pub fn new(layout: NodeLayout) -> Self {
        let capacity = (NODE_CACHE_BYTES / layout.page_size()).max(16);
        NodeCache {
            pages: KeyMap::default(),
            capacity,
            layout,
            resealer: Resealer::new(layout),
        }
    }

    /// The cached page of node `id`, if any.
    #[inline]
    pub fn get(&mut self, id: PageId) -> Option<Arc<[u8]>> {
        self.pages.get(&id).map(Arc::clone)
    }

    /// Keeps `page`, the current (sealed) content of node `id`.
    pub fn put(&mut self, id: PageId, page: Arc<[u8]>) {
        if self.pages.len() >= self.capacity && !self.pages.contains_key(&id) {
            self.pages.clear();
        }
        self.pages.insert(id, page);
    }

    /// Forgets node `id` (its content was replaced, or it is gone).
    #[inline]
    pub fn forget(&mut self, id: PageId) {
        self.pages.remove(&id);
    }

    /// Forgets every node.
    pub fn clear(&mut self) {
        self.pages.clear();
    }

    /// Nodes cached.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Applies `changes` (the tree's positional changes of node `id`, now at `level`) to
    /// its cached page, if it is cached: the bytes an assembly with these changes gives.
    /// A change that does not apply forgets the node (the next read assembles it and
    /// reports the error).
    pub fn modify(&mut self, id: PageId, level: u32, changes: &[RawChange]) {
        let layout = self.layout;
        let Some(slot) = self.pages.get_mut(&id) else {
            return;
        };
        if Arc::get_mut(slot).is_none() {
            // Someone (the tree) still holds the page: edit a copy.
            *slot = Arc::from(&slot[..]);
        }
        let page = Arc::get_mut(slot).expect("the cached page was just made unshared");
        let count = layout.entry_count(page);
        let ok = match &self.resealer {
            Some(r) => {
                let before = r.before(page, touched(&layout, count, changes));
                let ok = apply_raw_unsealed(&layout, id, page, level, count, changes).is_ok();
                if ok {
                    r.seal(page, before);
                }
                ok
            }
            None => apply_raw_unsealed(&layout, id, page, level, count, changes).is_ok(),
        };
        if !ok {
            self.forget(id);
        }
    }
}

/// A [`NodeCache`] made at its first use, when the store's layout is known (a policy is
/// built before its store). Forgetting, modifying and clearing a cache not made yet do
/// nothing.
#[derive(Default)]
pub struct LazyNodeCache(Option<NodeCache>);

impl LazyNodeCache {
    /// The cache, made for `layout` if it was not yet.
    #[inline]
    pub fn of(&mut self, layout: NodeLayout) -> &mut NodeCache {
        self.0.get_or_insert_with(|| NodeCache::new(layout))
    }

    /// See [`NodeCache::forget`].
    #[inline]
    pub fn forget(&mut self, id: PageId) {
        if let Some(c) = &mut self.0 {
            c.forget(id);
        }
    }

    /// See [`NodeCache::modify`].
    #[inline]
    pub fn modify(&mut self, id: PageId, level: u32, changes: &[RawChange]) {
        if let Some(c) = &mut self.0 {
            c.modify(id, level, changes);
        }
    }

    /// See [`NodeCache::clear`].
    pub fn clear(&mut self) {
        if let Some(c) = &mut self.0 {
            c.clear();
        }
    }
}

/// The entry bytes that `changes`, applied to a page of `count` entries, touch (page
/// offsets; empty when they touch none).
fn touched(layout: &NodeLayout, mut count: usize, changes: &[RawChange]) -> Range<usize> {
    let (mut lo, mut hi) = (usize::MAX, 0usize);
    let es = layout.entry_size();
    let mut cover = |a: usize, b: usize| {
        lo = lo.min(a);
        hi = hi.max(b);
    };
    for c in changes {
        match c {
            Change::Set { pos, .. } => {
                let o = layout.entry_offset((*pos).min(count));
                cover(o, o + es);
            }
            Change::Push(_) => {
                let o = layout.entry_offset(count);
                cover(o, o + es);
                count += 1;
            }
            Change::Remove { pos } => {
                let end = layout.entry_offset(count.max(*pos + 1));
                cover(layout.entry_offset(*pos), end);
                count = count.saturating_sub(1);
            }
        }
    }
    let end = layout.page_size();
    if lo >= hi {
        return 0..0;
    }
    lo.min(end)..hi.min(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::LayoutKind;
    use crate::store::buffered::page::{apply_raw, page_from_entries};
    use proptest::prelude::*;

    fn layout(kind: LayoutKind) -> NodeLayout {
        NodeLayout::new(kind, 1024, 2).unwrap()
    }

    fn change(layout: &NodeLayout, op: u8, pos: usize, fill: u8) -> RawChange {
        let entry: Box<[u8]> = vec![fill; layout.entry_size()].into();
        match op % 3 {
            0 => Change::Set { pos, entry },
            1 => Change::Push(entry),
            _ => Change::Remove { pos },
        }
    }

    proptest! {
        /// A cached page edited by `modify` after any sequence of change lists is byte for
        /// byte the page applying every list to the original gives (header and checksum
        /// included), or the cache forgot it because a list did not apply.
        #[test]
        fn modify_equals_applying_from_scratch(
            checked in any::<bool>(),
            start in 0usize..20,
            lists in prop::collection::vec(
                prop::collection::vec((any::<u8>(), 0usize..24, any::<u8>()), 0..5), 0..12),
            share in any::<bool>(),
        ) {
            let kind = if checked { LayoutKind::Checked } else { LayoutKind::Seed };
            let l = layout(kind);
            let es = l.entry_size();
            let entries: Vec<u8> = (0..start * es).map(|i| (i % 251) as u8).collect();
            let mut page = vec![0u8; l.page_size()];
            page_from_entries(&l, 7, 1, &entries, &mut page).unwrap();
            let mut cache = NodeCache::new(l);
            cache.put(7, Arc::from(&page[..]));
            let mut reference = page.clone();
            for (i, list) in lists.iter().enumerate() {
                let changes: Vec<RawChange> = list
                    .iter()
                    .map(|&(op, pos, fill)| change(&l, op, pos, fill))
                    .collect();
                let held = share.then(|| cache.get(7)).flatten();
                let before = reference.clone();
                let level = (i % 3) as u32;
                let count = l.entry_count(&reference);
                let mut next = reference.clone();
                let applies = apply_raw(&l, 7, &mut next, level, count, &changes).is_ok();
                cache.modify(7, level, &changes);
                if !applies {
                    // Forgotten: the store's next read assembles the node (and fails).
                    prop_assert!(cache.get(7).is_none());
                    break;
                }
                reference = next;
                let got = cache.get(7).expect("still cached");
                prop_assert_eq!(&got[..], &reference[..]);
                if let Some(h) = held {
                    // A page handed out before is never changed behind its holder's back.
                    prop_assert_eq!(&h[..], &before[..]);
                }
            }
        }
    }

    #[test]
    fn forgotten_and_cleared_nodes_are_gone_and_the_cache_is_bounded() {
        let l = layout(LayoutKind::Checked);
        let mut c = NodeCache::new(l);
        let page: Arc<[u8]> = Arc::from(vec![0u8; l.page_size()]);
        let cap = NODE_CACHE_BYTES / l.page_size();
        for id in 0..(cap as u64 + 10) {
            c.put(id, page.clone());
        }
        assert!(c.len() <= cap);
        assert_eq!(c.len(), 10, "full: emptied, then the 10 later ones");
        assert!(c.get(0).is_none());
        assert!(c.get(cap as u64 + 9).is_some());
        c.forget(cap as u64 + 9);
        assert!(c.get(cap as u64 + 9).is_none());
        c.clear();
        assert!(c.is_empty());
        // Modifying a node that is not cached does nothing.
        c.modify(3, 0, &[Change::Remove { pos: 0 }]);
        assert!(c.get(3).is_none());
    }
}
