//! The entry-level difference between what a node's page holds and what a treatment wants
//! it to hold, so that a redistribution reaches the store as the few entries it moves
//! rather than as whole nodes.
//!
//! Part of the index layer: a treatment (e.g. the Hilbert R-tree's cooperative overflow,
//! [`super::hilbert`]) computes the new contents of nodes it already read and writes them
//! with [`write_entries`], which picks [`NodeAccess::modify`] with the difference when that
//! is shorter than [`NodeAccess::rewrite`]. The choice depends only on the two entry lists,
//! never on the store: every store receives the same calls. Stores that log changes
//! (FAST, eFIND, the LCR-tree, RFTL) log a handful of entries instead of full node images;
//! a store that writes pages whole (the direct store) writes the same page either way.

use std::collections::HashMap;

use super::strategy::NodeAccess;
use crate::node::{Entry, PageId};
use crate::store::NodeChange;
use crate::Result;

/// Whether the order of a node's entries matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryOrder {
    /// The node must hold the entries in exactly the order given (e.g. the Hilbert
    /// R-tree's internal nodes, in LHV order).
    Kept,
    /// Any order holds the same node (e.g. leaves kept in arrival order).
    Free,
}

/// The changes that turn a node holding `before` into one holding `after` (in `after`'s
/// order with [`EntryOrder::Kept`], in some order with [`EntryOrder::Free`]), or `None`
/// when they would be at least as many as `after`'s entries (a rewrite is then no longer).
pub(crate) fn changes_between<const D: usize>(
    before: &[Entry<D>],
    after: &[Entry<D>],
    order: EntryOrder,
) -> Option<Vec<NodeChange<D>>> {
    let changes = match order {
        EntryOrder::Kept => ordered(before, after),
        EntryOrder::Free => unordered(before, after),
    };
    (changes.len() < after.len()).then_some(changes)
}

/// Writes `after` as node `id`'s entries: as the changes from `before` (what the page holds,
/// when the caller knows it) where they are shorter, as a rewrite otherwise.
pub(crate) fn write_entries<const D: usize>(
    tree: &mut dyn NodeAccess<D>,
    id: PageId,
    level: u32,
    before: Option<&[Entry<D>]>,
    after: &[Entry<D>],
    order: EntryOrder,
) -> Result<()> {
    match before.and_then(|b| changes_between(b, after, order)) {
        Some(changes) if changes.is_empty() => Ok(()),
        Some(changes) => tree.modify(id, level, &changes),
        None => tree.rewrite(id, level, after),
    }
}

/// Order kept: the common head and tail stay; the middle is set in place, with removals
/// (entries shift down) or appends for the difference in length. An insertion before a
/// kept tail has no change of its own: the tail is then set again.
fn ordered<const D: usize>(before: &[Entry<D>], after: &[Entry<D>]) -> Vec<NodeChange<D>> {
    let (nb, na) = (before.len(), after.len());
    let head = before.iter().zip(after).take_while(|(b, a)| b == a).count();
    let tail = before[head..]
        .iter()
        .rev()
        .zip(after[head..].iter().rev())
        .take_while(|(b, a)| b == a)
        .count();
    let (mid_b, mid_a) = (nb - head - tail, na - head - tail);
    let mut out = Vec::new();
    if mid_a <= mid_b {
        out.extend((head..head + mid_a).map(|pos| NodeChange::Set {
            pos,
            entry: after[pos],
        }));
        out.extend((mid_a..mid_b).map(|_| NodeChange::Remove { pos: head + mid_a }));
    } else {
        // Longer: everything from the head to the end of `before` is set, the rest pushed.
        out.extend((head..nb).map(|pos| NodeChange::Set {
            pos,
            entry: after[pos],
        }));
        out.extend(after[nb..].iter().map(|&e| NodeChange::Push(e)));
    }
    out
}

/// Order free: entries in both stay where they are; each slot of an entry that goes takes
/// an entry that comes; leftover slots are removed (from the highest position down, so
/// the positions named stay valid), leftover entries appended.
fn unordered<const D: usize>(before: &[Entry<D>], after: &[Entry<D>]) -> Vec<NodeChange<D>> {
    // Candidates by pointer (unique in a node in practice; equal pointers are compared
    // whole).
    let mut waiting: HashMap<PageId, Vec<usize>> = HashMap::with_capacity(after.len());
    for (j, a) in after.iter().enumerate().rev() {
        waiting.entry(a.ptr).or_default().push(j);
    }
    let mut taken = vec![false; after.len()];
    let mut freed = Vec::new();
    for (i, b) in before.iter().enumerate() {
        let hit = waiting.get_mut(&b.ptr).and_then(|js| {
            let k = js.iter().rposition(|&j| after[j] == *b)?;
            Some(js.remove(k))
        });
        match hit {
            Some(j) => taken[j] = true,
            None => freed.push(i),
        }
    }
    let mut coming = (0..after.len()).filter(|&j| !taken[j]);
    let mut out = Vec::new();
    let mut left = Vec::new();
    for &pos in &freed {
        match coming.next() {
            Some(j) => out.push(NodeChange::Set {
                pos,
                entry: after[j],
            }),
            None => left.push(pos),
        }
    }
    out.extend(left.iter().rev().map(|&pos| NodeChange::Remove { pos }));
    out.extend(coming.map(|j| NodeChange::Push(after[j])));
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::geom::Rect;
    use crate::store::apply_changes;

    fn e(ptr: u64, aux: u64) -> Entry<2> {
        Entry {
            mbr: Rect {
                min: [ptr as f64, 0.0],
                max: [ptr as f64 + 1.0, 1.0],
            },
            ptr,
            aux,
        }
    }

    fn applied(before: &[Entry<2>], changes: &[NodeChange<2>]) -> Vec<Entry<2>> {
        let mut v = before.to_vec();
        apply_changes(&mut v, changes).expect("valid positions");
        v
    }

    fn sorted(mut v: Vec<Entry<2>>) -> Vec<(u64, u64)> {
        let mut k: Vec<(u64, u64)> = v.drain(..).map(|e| (e.ptr, e.aux)).collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn a_node_losing_its_tail_is_a_few_removals() {
        let before: Vec<_> = (0..10).map(|i| e(i, i)).collect();
        let after = before[..7].to_vec();
        for order in [EntryOrder::Kept, EntryOrder::Free] {
            let c = changes_between(&before, &after, order).expect("shorter than a rewrite");
            assert_eq!(c.len(), 3, "{order:?}: {c:?}");
            assert_eq!(applied(&before, &c), after);
        }
    }

    #[test]
    fn a_node_losing_its_head_keeps_its_tail() {
        let before: Vec<_> = (0..10).map(|i| e(i, i)).collect();
        let after = before[4..].to_vec();
        let c = changes_between(&before, &after, EntryOrder::Kept).expect("shorter");
        assert_eq!(c.len(), 4);
        assert_eq!(applied(&before, &c), after);
        let c = changes_between(&before, &after, EntryOrder::Free).expect("shorter");
        assert_eq!(c.len(), 4);
        assert_eq!(sorted(applied(&before, &c)), sorted(after));
    }

    #[test]
    fn gaining_at_the_head_in_order_is_a_rewrite_but_free_order_appends() {
        let before: Vec<_> = (3..10).map(|i| e(i, i)).collect();
        let after: Vec<_> = (0..10).map(|i| e(i, i)).collect();
        assert!(changes_between(&before, &after, EntryOrder::Kept).is_none());
        let c = changes_between(&before, &after, EntryOrder::Free).expect("shorter");
        assert_eq!(c.len(), 3);
        assert_eq!(sorted(applied(&before, &c)), sorted(after));
    }

    #[test]
    fn an_unchanged_node_needs_no_change() {
        let v: Vec<_> = (0..5).map(|i| e(i, i)).collect();
        for order in [EntryOrder::Kept, EntryOrder::Free] {
            assert_eq!(changes_between(&v, &v, order), Some(vec![]));
        }
    }

    proptest! {
        /// Whatever the two lists, the changes (when offered) produce `after` exactly
        /// (order kept) or its entries (order free), and are fewer than `after`'s entries.
        #[test]
        fn the_changes_produce_the_target(
            before in proptest::collection::vec((0u64..40, 0u64..3), 0..30),
            after in proptest::collection::vec((0u64..40, 0u64..3), 1..30),
        ) {
            let before: Vec<_> = before.into_iter().map(|(p, a)| e(p, a)).collect();
            let after: Vec<_> = after.into_iter().map(|(p, a)| e(p, a)).collect();
            if let Some(c) = changes_between(&before, &after, EntryOrder::Kept) {
                prop_assert!(c.len() < after.len());
                prop_assert_eq!(applied(&before, &c), after.clone());
            }
            if let Some(c) = changes_between(&before, &after, EntryOrder::Free) {
                prop_assert!(c.len() < after.len());
                prop_assert_eq!(sorted(applied(&before, &c)), sorted(after.clone()));
            }
        }
    }
}
