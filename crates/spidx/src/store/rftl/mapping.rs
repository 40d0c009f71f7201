//! RFTL's node translation table (Wu, Chang, Kuo 2003: each node maps to the list of pages
//! holding its index units) and the live units of every unit page.
//!
//! The table itself ([`RftlState`]: node -> `(page, units)` in the order written) is the
//! policy's state, saved in `store.json` at checkpoints (the header's opaque
//! `policy_state`) and logged (RFTL's own `UnitPages` records) in between. A page holds units of several nodes, so a page
//! is freed only when no node's entry names it any more: [`LiveUnits`] counts the live
//! units of every page, derived from the table (rebuilt when a store opens) and updated by
//! [`LiveUnits::set`], the one way the table changes, live and in recovery alike (so both
//! free pages in the same order). [`LiveUnits`] also keeps a hashed copy of the table,
//! which node reads look their lists up in ([`LiveUnits::pages_of`]: the header's table is
//! ordered, for saving and compacting in page order, and an ordered lookup per read cost
//! more CPU than the rest of a cached read).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cache::KeyMap;
use crate::node::PageId;
use crate::{Error, Result};

/// RFTL's state saved with the store header: the node translation table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RftlState {
    /// Node page -> the unit pages holding its index units, in the order they were
    /// written, each with the number of the node's units on it.
    pub unit_pages: BTreeMap<PageId, Vec<(PageId, u32)>>,
}

/// Live units per unit page, and the table's lists by node. See the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveUnits {
    /// Hashed, not ordered: nothing iterates it in an order that matters (pages are freed
    /// in the order of a node's old list).
    live: KeyMap<u64>,
    /// The table, hashed (the same lists; nodes without pages absent).
    lists: KeyMap<Vec<(PageId, u32)>>,
    /// The table, ordered (for saving and compacting in page order).
    table: RftlState,
}

impl LiveUnits {
    /// The live units of the table `state`.
    pub fn of(state: RftlState) -> Self {
        let mut l = LiveUnits::default();
        for (id, pages) in &state.unit_pages {
            for (p, n) in pages {
                *l.live.entry(*p).or_default() += u64::from(*n);
            }
            l.lists.insert(*id, pages.clone());
        }
        l.table = state;
        l
    }

    /// The unit pages holding live units (each once).
    pub fn unit_pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.live.iter().filter(|(_, n)| **n > 0).map(|(p, _)| *p)
    }

    /// The table, ordered by node.
    pub fn table(&self) -> &RftlState {
        &self.table
    }

    /// Forgets every page (a compacted log's snapshot restarts the table).
    pub fn clear(&mut self) {
        *self = LiveUnits::default();
    }

    /// Node `id`'s unit pages and its units on each, in the order written (`None`: the
    /// node has none).
    #[inline]
    pub(crate) fn pages_of(&self, id: PageId) -> Option<&Vec<(PageId, u32)>> {
        self.lists.get(&id)
    }

    /// Sets node `id`'s unit pages to `pages` (empty: the node has none) in the table: the
    /// new pages' units become live and the old ones' dead; pages left without a live unit
    /// are freed (pushed on `free`, the header's free list) and returned, in the order
    /// freed.
    pub fn set(
        &mut self,
        free: &mut Vec<PageId>,
        id: PageId,
        pages: Vec<(PageId, u32)>,
    ) -> Result<Vec<PageId>> {
        for (p, n) in &pages {
            *self.live.entry(*p).or_default() += u64::from(*n);
        }
        let old = if pages.is_empty() {
            self.lists.remove(&id);
            self.table.unit_pages.remove(&id)
        } else {
            self.lists.insert(id, pages.clone());
            self.table.unit_pages.insert(id, pages)
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
                free.push(p);
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
        let mut free = Vec::new();
        let mut l = LiveUnits::default();
        // Nodes 1 and 2 share page 50; node 1 also has page 51.
        assert!(l
            .set(&mut free, 1, vec![(50, 2), (51, 1)])
            .unwrap()
            .is_empty());
        assert!(l.set(&mut free, 2, vec![(50, 3)]).unwrap().is_empty());
        assert_eq!((l.pages(), l.units(), l.on(50)), (2, 6, 5));
        assert_eq!(
            LiveUnits::of(l.table().clone()),
            l,
            "derived from the table"
        );
        // Node 1 compacted onto page 52: page 51 is dead, page 50 still holds node 2's.
        assert_eq!(l.set(&mut free, 1, vec![(52, 1)]).unwrap(), vec![51]);
        assert_eq!(l.on(50), 3);
        // Node 2 deleted: page 50 is freed.
        assert_eq!(l.set(&mut free, 2, vec![]).unwrap(), vec![50]);
        assert_eq!(free, vec![51, 50]);
        assert_eq!(l.table().unit_pages.len(), 1);
        assert_eq!(LiveUnits::of(l.table().clone()), l);
        assert_eq!(l.pages_of(1), Some(&vec![(52, 1)]));
        assert_eq!(l.pages_of(2), None);
        // A table naming more units than a page holds is damage, not a panic.
        l.table.unit_pages.insert(3, vec![(52, 9)]);
        let e = l.set(&mut free, 3, vec![]).unwrap_err().to_string();
        assert!(e.contains("names 9 units on page 52"), "{e}");
    }

    #[test]
    fn the_table_round_trips_through_the_saved_header() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = crate::store::StoreHeader::new("rftl");
        h.next_page = 10;
        let mut l = LiveUnits::default();
        l.set(&mut h.free, 4, vec![(7, 2), (9, 1)]).unwrap();
        l.set(&mut h.free, 5, vec![(9, 4)]).unwrap();
        h.policy_state = Some(serde_json::to_value(l.table()).unwrap());
        let p = dir.path().join("store.json");
        h.save(&p).unwrap();
        let back = crate::store::StoreHeader::load(&p).unwrap();
        assert_eq!(back, h);
        let state: RftlState = serde_json::from_value(back.policy_state.unwrap()).unwrap();
        assert_eq!(LiveUnits::of(state), l);
        // Other stores' headers carry no policy state.
        let text = serde_json::to_string(&crate::store::StoreHeader::new("fast")).unwrap();
        assert!(!text.contains("policy_state"), "{text}");
    }
}
