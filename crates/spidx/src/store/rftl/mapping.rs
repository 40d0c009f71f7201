//! RFTL's node translation table (Wu, Chang, Kuo 2003: each node maps to the list of pages
//! holding its index units) and the live units of every unit page.
//!
//! The table itself is [`StoreHeader::unit_pages`] (node -> `(page, units)` in the order
//! written), so it is saved in `store.json` at checkpoints like the rest of the header and
//! logged (`UnitPages` records) in between. A page holds units of several nodes, so a page
//! is freed only when no node's entry names it any more: [`LiveUnits`] counts the live
//! units of every page, derived from the table (rebuilt when a store opens) and updated by
//! [`LiveUnits::set`], the one way the table changes, live and in recovery alike (so both
//! free pages in the same order). [`LiveUnits`] also keeps a hashed copy of the table,
//! which node reads look their lists up in ([`LiveUnits::pages_of`]: the header's table is
//! ordered, for saving and compacting in page order, and an ordered lookup per read cost
//! more CPU than the rest of a cached read).

use crate::cache::KeyMap;
use crate::node::PageId;
use crate::store::StoreHeader;
use crate::{Error, Result};

/// Live units per unit page, and the table's lists by node. See the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveUnits {
    /// Hashed, not ordered: nothing iterates it in an order that matters (pages are freed
    /// in the order of a node's old list).
    live: KeyMap<u64>,
    /// The header's table, hashed (the same lists; nodes without pages absent).
    lists: KeyMap<Vec<(PageId, u32)>>,
}

impl LiveUnits {
    /// The live units of the table `header.unit_pages`.
    pub fn of(header: &StoreHeader) -> Self {
        let mut l = LiveUnits::default();
        for (id, pages) in &header.unit_pages {
            for (p, n) in pages {
                *l.live.entry(*p).or_default() += u64::from(*n);
            }
            l.lists.insert(*id, pages.clone());
        }
        l
    }

    /// Forgets every page (a compacted log's snapshot restarts the table).
    pub fn clear(&mut self) {
        self.live.clear();
        self.lists.clear();
    }

    /// Node `id`'s unit pages and its units on each, in the order written (as
    /// `header.unit_pages` names them; `None`: the node has none).
    #[inline]
    pub fn pages_of(&self, id: PageId) -> Option<&Vec<(PageId, u32)>> {
        self.lists.get(&id)
    }

    /// Sets node `id`'s unit pages to `pages` (empty: the node has none) in `header`'s
    /// table: the new pages' units become live and the old ones' dead; pages left without a
    /// live unit are freed (pushed on `header.free`) and returned, in the order freed.
    pub fn set(
        &mut self,
        header: &mut StoreHeader,
        id: PageId,
        pages: Vec<(PageId, u32)>,
    ) -> Result<Vec<PageId>> {
        for (p, n) in &pages {
            *self.live.entry(*p).or_default() += u64::from(*n);
        }
        let old = if pages.is_empty() {
            self.lists.remove(&id);
            header.unit_pages.remove(&id)
        } else {
            self.lists.insert(id, pages.clone());
            header.unit_pages.insert(id, pages)
        };
        let mut freed = Vec::new();
        for (p, n) in old.unwrap_or_default() {
            let live = self.live.get_mut(&p).filter(|l| **l >= u64::from(n));
            let Some(live) = live else {
                return Err(Error::corrupted(
                    "RFTL node translation table",
                    format!("node {id} names {n} units on page {p}, which holds fewer"),
                ));
            };
            *live -= u64::from(n);
            if *live == 0 {
                self.live.remove(&p);
                header.free.push(p);
                freed.push(p);
            }
        }
        Ok(freed)
    }

    /// Pages holding live units.
    pub fn pages(&self) -> u64 {
        self.live.len() as u64
    }

    /// Live units on all pages.
    pub fn units(&self) -> u64 {
        self.live.values().sum()
    }

    /// Live units on page `p`.
    pub fn on(&self, p: PageId) -> u64 {
        self.live.get(&p).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_freed_when_its_last_live_unit_dies() {
        let mut h = StoreHeader::new("rftl");
        h.next_page = 100;
        let mut l = LiveUnits::default();
        // Nodes 1 and 2 share page 50; node 1 also has page 51.
        assert!(l.set(&mut h, 1, vec![(50, 2), (51, 1)]).unwrap().is_empty());
        assert!(l.set(&mut h, 2, vec![(50, 3)]).unwrap().is_empty());
        assert_eq!((l.pages(), l.units(), l.on(50)), (2, 6, 5));
        assert_eq!(LiveUnits::of(&h), l, "derived from the table");
        // Node 1 compacted onto page 52: page 51 is dead, page 50 still holds node 2's.
        assert_eq!(l.set(&mut h, 1, vec![(52, 1)]).unwrap(), vec![51]);
        assert_eq!(l.on(50), 3);
        // Node 2 deleted: page 50 is freed.
        assert_eq!(l.set(&mut h, 2, vec![]).unwrap(), vec![50]);
        assert_eq!(h.free, vec![51, 50]);
        assert_eq!(h.unit_pages.len(), 1);
        assert_eq!(LiveUnits::of(&h), l);
        assert_eq!(l.pages_of(1), Some(&vec![(52, 1)]));
        assert_eq!(l.pages_of(2), None);
        // A table naming more units than a page holds is damage, not a panic.
        h.unit_pages.insert(3, vec![(52, 9)]);
        let e = l.set(&mut h, 3, vec![]).unwrap_err().to_string();
        assert!(e.contains("node 3 names 9 units on page 52"), "{e}");
    }

    #[test]
    fn the_table_round_trips_through_the_saved_header() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = StoreHeader::new("rftl");
        h.next_page = 10;
        let mut l = LiveUnits::default();
        l.set(&mut h, 4, vec![(7, 2), (9, 1)]).unwrap();
        l.set(&mut h, 5, vec![(9, 4)]).unwrap();
        let p = dir.path().join("store.json");
        h.save(&p).unwrap();
        let back = StoreHeader::load(&p).unwrap();
        assert_eq!(back, h);
        assert_eq!(LiveUnits::of(&back), l);
        // Other stores' headers do not carry the table.
        let text = serde_json::to_string(&StoreHeader::new("fast")).unwrap();
        assert!(!text.contains("unit_pages"), "{text}");
    }
}
