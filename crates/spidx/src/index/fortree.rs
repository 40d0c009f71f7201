//! The FOR-tree (Jin, Cui, Wang, Huang, Xiao: "FOR-tree: a flash-optimized R-tree", and
//! its journal version "Optimizing R-tree for flash memory", Expert Systems with
//! Applications 42, 2015) as a [`Strategy`] with multi-page nodes ([`NodePages`]):
//!
//! * no splits: a node that overflows gets an overflow node (O-node), a further page of
//!   the same node; its parent's entry points at the first page (the primary node) and
//!   covers all of them. Searches, nearest neighbours and deletes read a node whole;
//! * every access to a node with `k >= 1` O-nodes is counted; once its count reaches
//!   `⌊(5k − 1) / 2⌋ × (write cost / read cost)` the node is *merged back*: its entries
//!   and its O-nodes' entries are re-packed into `⌈n / M⌉` regular nodes (sort-tile
//!   grouping), which replace it in its parent (a parent that then overflows gets an
//!   O-node itself; a root that merges back grows the tree by one level). The merge is
//!   done by the next insertion that reaches the node (searches only count);
//! * subtree choice: Guttman's least area enlargement, among all entries of a node;
//! * underflow after a delete: Guttman's condense and reinsert.
//!
//! The published defect: the paper counts accesses of reads, so an insert-only build never
//! counts any, never merges back, and the root collects an unbounded chain of O-nodes
//! (every insertion then reads the whole chain: construction degenerates to quadratic
//! time). `root_fix = false` reproduces it; the default (`root_fix = true`) also counts the
//! nodes an insertion's descent reads, so every node merges back after a bounded number of
//! insertions (see `docs/indexes.md`).
//!
//! Where the O-nodes are recorded: the paper keeps the table of O-nodes in memory. Here
//! each page of a node names the node's further pages in its entries' 8-byte auxiliary
//! slots (page `q` of a node with `M` entries per page names pages `qM + 1 ..= qM + M`,
//! slot `j` page `qM + j + 1`: the links fill the first slots, and the first slot naming
//! no page ends them), so
//! the chain is part of the stored tree: it survives reopening and crash recovery under
//! every store, and costs one page write more when an O-node is added or freed. The
//! access counts are held in memory (as in the paper) and saved as the tree's state
//! ([`VariantState`]) at every checkpoint, so a reopened tree merges back when one never
//! closed would; after a crash, the counts of the last checkpoint come back (they decide
//! only when a node is merged back, never what the tree holds). The paper's own buffer of
//! dirty nodes is a store concern and not part of this module.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::rtree::{least_enlargement, LeastEnlargement};
use super::strategy::InsertCtx;
use super::strategy::{
    mbr_of, CondenseReinsert, NodeAccess, NodePages, OnePageChange, OverflowTreatment, Overflowing,
    Spanned, Strategy, Treated, VariantState,
};
use crate::node::{Entry, NodeView, PageId};
use crate::store::{NodeChange, NodePage};
use crate::{Error, Result};

/// Options of the FOR-tree (defaults: [`Default`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ForTreeOptions {
    /// Cost of a page write over the cost of a page read, the factor of the merge-back
    /// threshold. Default 10: the program/read latency ratio of the seeds' flash chip
    /// (300 µs / 30 µs, `seed-table2`; the Flash-DBSim example chip gives 8).
    pub write_read_ratio: f64,
    /// Count the nodes an insertion's descent reads (the fix of the published defect);
    /// `false` counts only searches' and deletes' reads, as the paper does.
    pub root_fix: bool,
}

impl Default for ForTreeOptions {
    /// Ratio 10, the fix on.
    fn default() -> Self {
        ForTreeOptions {
            write_read_ratio: 10.0,
            root_fix: true,
        }
    }
}

impl ForTreeOptions {
    /// Checks the options.
    pub fn check(&self) -> Result<()> {
        let r = self.write_read_ratio;
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::invalid(
                "write_read_ratio",
                format!("{r} is not a number > 0 (the cost of a page write over a page read)"),
            ));
        }
        Ok(())
    }

    /// The access count at which a node with `k >= 1` O-nodes merges back.
    pub fn threshold(&self, k: usize) -> f64 {
        ((5 * k as u64).saturating_sub(1) / 2) as f64 * self.write_read_ratio
    }

    /// A readable name, e.g. `FOR-tree w/r=10`.
    pub fn label(&self) -> String {
        let mut s = format!("FOR-tree w/r={}", self.write_read_ratio);
        if !self.root_fix {
            s.push_str(" root_fix=false");
        }
        s
    }
}

/// The FOR-tree's parts with options `o` (checked).
pub(crate) fn strategy<const D: usize>(o: &ForTreeOptions) -> Strategy<D> {
    let parts = Arc::new(ForTree {
        opts: *o,
        accesses: Mutex::new(HashMap::new()),
    });
    Strategy {
        choose: Box::new(LeastEnlargement),
        overflow: Arc::clone(&parts) as Arc<dyn OverflowTreatment<D>>,
        underflow: Arc::new(CondenseReinsert),
        pages: Some(Arc::clone(&parts) as Arc<dyn NodePages<D>>),
        state: Some(parts),
    }
}

/// The overflow treatment and the multi-page nodes, sharing the access counts.
struct ForTree {
    opts: ForTreeOptions,
    /// Accesses of every node with O-nodes since it got its first one.
    accesses: Mutex<HashMap<PageId, u64>>,
}

impl ForTree {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<PageId, u64>> {
        // A poisoned lock only means a panic elsewhere; the counts stay usable.
        self.accesses.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn merge_due(&self, id: PageId, k: usize) -> bool {
        k >= 1 && self.counts().get(&id).copied().unwrap_or(0) as f64 >= self.opts.threshold(k)
    }
}

/// The access counts as tree state: `(node, accesses)` pairs in node order, postcard.
impl VariantState for ForTree {
    fn format(&self) -> &'static str {
        "fortree-access-counts/1"
    }

    fn save(&self) -> Vec<u8> {
        let mut pairs: Vec<(PageId, u64)> = self.counts().iter().map(|(k, v)| (*k, *v)).collect();
        pairs.sort_unstable();
        // Encoding a list of integer pairs into a Vec cannot fail.
        postcard::to_stdvec(&pairs).expect("access counts encode")
    }

    fn load(&self, bytes: &[u8]) -> Result<()> {
        let pairs: Vec<(PageId, u64)> = postcard::from_bytes(bytes)
            .map_err(|e| Error::corrupted("FOR-tree access counts", e.to_string()))?;
        let mut counts = self.counts();
        counts.clear();
        for (id, n) in pairs {
            if counts.insert(id, n).is_some() {
                return Err(Error::corrupted(
                    "FOR-tree access counts",
                    format!("node {id} is counted twice"),
                ));
            }
        }
        Ok(())
    }
}

/// The entries page `q` of a node stores: its slice of `entries` (`m` per page), each slot
/// naming the page `qm + j + 1` of `ids` (page id + 1; 0 for none).
#[cfg(test)]
fn page_entries<const D: usize>(
    entries: &[Entry<D>],
    ids: &[PageId],
    m: usize,
    q: usize,
) -> Vec<Entry<D>> {
    let mut out = Vec::new();
    page_entries_into(entries, ids, m, q, &mut out);
    out
}

/// [`page_entries`] into `out` (cleared first), so that one buffer serves every page.
fn page_entries_into<const D: usize>(
    entries: &[Entry<D>],
    ids: &[PageId],
    m: usize,
    q: usize,
    out: &mut Vec<Entry<D>>,
) {
    out.clear();
    let end = ((q + 1) * m).min(entries.len());
    out.extend(entries[q * m..end].iter().enumerate().map(|(j, e)| Entry {
        aux: ids.get(q * m + j + 1).map_or(0, |p| p + 1),
        ..*e
    }));
}

/// The fewest entry-level changes turning page contents `old` into `new`: `None` if a
/// rewrite is simpler (entries removed).
fn page_changes<const D: usize>(old: &[Entry<D>], new: &[Entry<D>]) -> Option<Vec<NodeChange<D>>> {
    if new.len() < old.len() {
        return None;
    }
    let mut changes: Vec<NodeChange<D>> = old
        .iter()
        .zip(new)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(pos, (_, b))| NodeChange::Set { pos, entry: *b })
        .collect();
    changes.extend(new[old.len()..].iter().map(|e| NodeChange::Push(*e)));
    Some(changes)
}

/// [`page_changes`] of a node that stays on its one page, from its stored entries `old`
/// to `new` (at least as many): entries compare without their auxiliary slots, which
/// name no page on a one-page node and are written as 0.
fn one_page_changes<const D: usize>(old: &[Entry<D>], new: &[Entry<D>]) -> Vec<NodeChange<D>> {
    let slotless = |e: &Entry<D>| Entry { aux: 0, ..*e };
    let mut changes = Vec::new();
    for (pos, (a, b)) in old.iter().zip(new).enumerate() {
        if a.mbr != b.mbr || a.ptr != b.ptr {
            changes.push(NodeChange::Set {
                pos,
                entry: slotless(b),
            });
        }
    }
    changes.extend(
        new[old.len()..]
            .iter()
            .map(|e| NodeChange::Push(slotless(e))),
    );
    changes
}

/// Groups `entries` into `⌈n / m⌉` groups of even sizes by sort-tile (slabs along the
/// first axis, groups along the second within each slab).
fn pack<const D: usize>(mut entries: Vec<Entry<D>>, m: usize) -> Vec<Vec<Entry<D>>> {
    let n = entries.len();
    let g = n.div_ceil(m).max(1);
    if g == 1 {
        return vec![entries];
    }
    let even = |n: usize, parts: usize| -> Vec<usize> {
        (0..parts)
            .map(|i| n / parts + usize::from(i < n % parts))
            .collect()
    };
    let sizes = even(n, g);
    let slabs = (g as f64).sqrt().ceil() as usize;
    let centre = |e: &Entry<D>, d: usize| e.mbr.min[d] * 0.5 + e.mbr.max[d] * 0.5;
    // Slabs across the axis along which the centres spread most, groups within a slab
    // along the next: always cutting along x first would leave a node merged into few
    // groups (two or three: one slab each) as thin strips spanning the whole y range,
    // and every later window would cross many of them.
    let mut axes: Vec<(f64, usize)> = (0..D)
        .map(|d| {
            let (lo, hi) =
                entries
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
                        let c = centre(e, d);
                        (lo.min(c), hi.max(c))
                    });
            (hi - lo, d)
        })
        .collect();
    axes.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let (first, second) = (axes[0].1, axes.get(1).map(|a| a.1));
    entries.sort_by(|a, b| {
        centre(a, first)
            .total_cmp(&centre(b, first))
            .then(a.ptr.cmp(&b.ptr))
    });
    let mut out = Vec::with_capacity(g);
    let (mut at, mut gi) = (0, 0);
    for per_slab in even(g, slabs) {
        let count: usize = sizes[gi..gi + per_slab].iter().sum();
        let slab = &mut entries[at..at + count];
        if let Some(second) = second {
            slab.sort_by(|a, b| {
                centre(a, second)
                    .total_cmp(&centre(b, second))
                    .then(a.ptr.cmp(&b.ptr))
            });
        }
        let mut from = 0;
        for &s in &sizes[gi..gi + per_slab] {
            out.push(slab[from..from + s].to_vec());
            from += s;
        }
        at += count;
        gi += per_slab;
    }
    out
}

impl<const D: usize> NodePages<D> for ForTree {
    fn choose(&self, entries: &[Entry<D>], _level: u32, e: &Entry<D>) -> usize {
        least_enlargement(entries.iter().map(|x| x.mbr), &e.mbr)
    }

    fn further_pages(&self, v: NodeView<'_, D>, out: &mut Vec<PageId>) {
        // The links fill a page's first slots (`page_entries_into`): the first slot that
        // names no page ends them, and a one-page node is told by its first slot alone
        // (an insertion into a leaf reads no more of the page than the one-page
        // variants' do).
        for i in 0..v.len() {
            match v.aux(i) {
                0 => break,
                p => out.push(p - 1),
            }
        }
    }

    fn entry(&self, v: NodeView<'_, D>, i: usize) -> Entry<D> {
        Entry::new(v.mbr(i), v.ptr(i))
    }

    fn extend_entries(&self, v: NodeView<'_, D>, out: &mut Vec<Entry<D>>) {
        // The boxes read in one pass, without the slots (they name pages).
        out.extend(
            v.mbrs()
                .enumerate()
                .map(|(i, mbr)| Entry::new(mbr, v.ptr(i))),
        );
    }

    fn visited(&self, id: PageId, _level: u32, pages: usize, insert: bool) {
        if pages > 1 && (!insert || self.opts.root_fix) {
            *self.counts().entry(id).or_insert(0) += 1;
        }
    }

    fn treat_anyway(&self, id: PageId, _level: u32, pages: usize) -> bool {
        self.merge_due(id, pages - 1)
    }

    fn write(
        &self,
        tree: &mut dyn NodeAccess<D>,
        id: PageId,
        level: u32,
        stored: Option<&Spanned<D>>,
        entries: &[Entry<D>],
    ) -> Result<()> {
        let m = tree.capacity().max(level);
        if let Some(s) = stored {
            if s.pages.is_empty()
                && s.entries.len() <= m
                && (s.entries.len()..=m).contains(&entries.len())
            {
                // One page before and after, no entry removed (the common write of an
                // insertion): the changed and added entries, without the copies of
                // both page images below (the page's slots name no further page).
                let changes = one_page_changes(&s.entries, entries);
                if !changes.is_empty() {
                    tree.modify(id, level, &changes)?;
                }
                self.counts().remove(&id);
                return Ok(());
            }
        }
        let need = entries.len().div_ceil(m).max(1);
        let mut old_ids = vec![id];
        if let Some(s) = stored {
            old_ids.extend_from_slice(&s.pages);
        }
        let mut ids: Vec<PageId> = old_ids.iter().copied().take(need).collect();
        ids.resize(need, 0);
        // One buffer for the new contents of every page, one for the old.
        let (mut new, mut old) = (Vec::with_capacity(m), Vec::with_capacity(m));
        // New O-nodes from the last: each names only pages after it, already created.
        for q in (old_ids.len()..need).rev() {
            page_entries_into(entries, &ids, m, q, &mut new);
            ids[q] = tree.create(level, &new)?;
        }
        for &p in old_ids.iter().skip(need) {
            tree.delete(p, level)?;
        }
        for q in 0..need.min(old_ids.len()) {
            page_entries_into(entries, &ids, m, q, &mut new);
            let Some(s) = stored else {
                tree.rewrite(ids[q], level, &new)?;
                continue;
            };
            page_entries_into(&s.entries, &old_ids, m, q, &mut old);
            if old == new {
                continue;
            }
            match page_changes(&old, &new) {
                Some(changes) => tree.modify(ids[q], level, &changes)?,
                None => tree.rewrite(ids[q], level, &new)?,
            }
        }
        if need == 1 {
            self.counts().remove(&id);
        }
        Ok(())
    }

    fn choose_on_page(&self, v: NodeView<'_, D>, _level: u32, e: &Entry<D>) -> usize {
        least_enlargement(v.mbrs(), &e.mbr)
    }

    fn choose_on_pages(&self, pages: &[NodePage], _level: u32, e: &Entry<D>) -> usize {
        least_enlargement(pages.iter().flat_map(|p| p.view::<D>().mbrs()), &e.mbr)
    }

    fn write_in_place(
        &self,
        tree: &mut dyn NodeAccess<D>,
        pages: &[PageId],
        level: u32,
        q: usize,
        change: OnePageChange<D>,
    ) -> Result<()> {
        // As `write` with the node on the same pages: only page `q` differs, and its
        // entries compare with their slots as `page_entries_into` writes them (entry `g`
        // of the node names page `g + 1`, so an entry appended to the last page names
        // none); on a one-page node the slots are 0 (as `write`'s one-page case).
        let m = tree.capacity().max(level);
        let change = match change {
            OnePageChange::Set { pos, old, new } => (old.mbr != new.mbr || old.ptr != new.ptr)
                .then(|| NodeChange::Set {
                    pos,
                    entry: Entry {
                        mbr: new.mbr,
                        ptr: new.ptr,
                        aux: pages.get(q * m + pos + 1).map_or(0, |p| p + 1),
                    },
                }),
            OnePageChange::Push(e) => Some(NodeChange::Push(Entry::new(e.mbr, e.ptr))),
        };
        if let Some(c) = change {
            tree.modify(pages[q], level, &[c])?;
        }
        if pages.len() == 1 {
            self.counts().remove(&pages[0]);
        }
        Ok(())
    }
}

impl<const D: usize> OverflowTreatment<D> for ForTree {
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        at: Overflowing<'_, D>,
        _ctx: &mut InsertCtx<D>,
    ) -> Result<Treated<D>> {
        let level = at.node.level;
        let m = tree.capacity().max(level);
        let k = at.spanned.as_ref().map_or(0, |s| s.pages.len());
        if !self.merge_due(at.id, k) {
            // No split: the node keeps its place and grows by an O-node if it needs one.
            self.write(tree, at.id, level, at.spanned.as_ref(), &at.node.entries)?;
            return Ok(Treated::Resized(mbr_of(&at.node.entries)));
        }
        // Merge back: the node's pages become regular nodes (the first keeps its page,
        // further pages are reused, then new ones), which replace it in the parent.
        self.counts().remove(&at.id);
        let mut pages = vec![at.id];
        pages.extend(at.spanned.iter().flat_map(|s| s.pages.iter().copied()));
        let groups = pack(at.node.entries, m);
        let mut changes = Vec::with_capacity(groups.len());
        for (g, group) in groups.iter().enumerate() {
            let id = match pages.get(g) {
                Some(&p) => {
                    tree.rewrite(p, level, group)?;
                    p
                }
                None => tree.create(level, group)?,
            };
            let entry = Entry {
                mbr: mbr_of(group),
                ptr: id,
                aux: 0,
            };
            changes.push(if g == 0 {
                NodeChange::Set { pos: at.pos, entry }
            } else {
                NodeChange::Push(entry)
            });
        }
        for &p in pages.iter().skip(groups.len()) {
            tree.delete(p, level)?;
        }
        Ok(Treated::Parent(changes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Rect;

    fn e(i: u64) -> Entry<2> {
        let x = (i % 7) as f64;
        let y = (i / 7) as f64;
        Entry::new(
            Rect {
                min: [x, y],
                max: [x + 0.5, y + 0.5],
            },
            i,
        )
    }

    #[test]
    fn threshold_follows_the_paper() {
        let o = ForTreeOptions {
            write_read_ratio: 2.0,
            root_fix: true,
        };
        // ⌊(5k − 1)/2⌋ = 2, 4, 7, 9 for k = 1..4.
        let t: Vec<f64> = (1..=4).map(|k| o.threshold(k)).collect();
        assert_eq!(t, vec![4.0, 8.0, 14.0, 18.0]);
        assert!(ForTreeOptions {
            write_read_ratio: 0.0,
            root_fix: true
        }
        .check()
        .is_err());
        assert!(ForTreeOptions {
            write_read_ratio: f64::NAN,
            root_fix: true
        }
        .check()
        .is_err());
    }

    #[test]
    fn pack_makes_even_groups_of_all_entries() {
        for n in [1usize, 5, 10, 11, 37, 100] {
            let es: Vec<Entry<2>> = (0..n as u64).map(e).collect();
            let groups = pack(es.clone(), 10);
            assert_eq!(groups.len(), n.div_ceil(10).max(1), "n = {n}");
            let sizes: Vec<usize> = groups.iter().map(|g| g.len()).collect();
            assert!(sizes.iter().all(|&s| s <= 10), "{sizes:?}");
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
            let mut ids: Vec<u64> = groups.iter().flatten().map(|x| x.ptr).collect();
            ids.sort();
            assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
        }
    }

    #[test]
    fn pack_cuts_across_the_axis_of_widest_spread() {
        // 20 boxes in a tall column (x spread 1, y spread 19): two groups must be a lower
        // and an upper half, not two thin strips side by side.
        let es: Vec<Entry<2>> = (0..20u64)
            .map(|i| {
                let (x, y) = ((i % 2) as f64, i as f64);
                Entry::new(
                    Rect {
                        min: [x, y],
                        max: [x + 0.5, y + 0.5],
                    },
                    i,
                )
            })
            .collect();
        let groups = pack(es, 10);
        assert_eq!(groups.len(), 2);
        let top = |g: &Vec<Entry<2>>| g.iter().map(|x| x.mbr.max[1]).fold(f64::MIN, f64::max);
        let bottom = |g: &Vec<Entry<2>>| g.iter().map(|x| x.mbr.min[1]).fold(f64::MAX, f64::min);
        assert!(top(&groups[0]) <= bottom(&groups[1]), "{groups:?}");
    }

    #[test]
    fn one_page_changes_are_the_page_images_changes() {
        // Stored entries with stale slots, a changed box, a changed pointer, additions.
        let old: Vec<Entry<2>> = (0..8u64).map(|i| Entry { aux: i % 3, ..e(i) }).collect();
        for (changed, added) in [(vec![], 0), (vec![2], 0), (vec![0, 7], 3), (vec![], 2)] {
            let mut new: Vec<Entry<2>> = old.iter().map(|x| Entry { aux: 5, ..*x }).collect();
            for &i in &changed {
                new[i].mbr.max[0] += 1.0;
            }
            if changed == [0, 7] {
                new[3].ptr = 99;
            }
            new.extend((100..100 + added).map(e));
            let ids = [42];
            let want = page_changes(
                &page_entries(&old, &ids, 16, 0),
                &page_entries(&new, &ids, 16, 0),
            )
            .unwrap();
            assert_eq!(one_page_changes(&old, &new), want, "{changed:?} + {added}");
        }
    }

    #[test]
    fn pages_name_their_further_pages() {
        let es: Vec<Entry<2>> = (0..25).map(e).collect();
        let ids = [100, 101, 102];
        let p0 = page_entries(&es, &ids, 10, 0);
        assert_eq!(p0.len(), 10);
        assert_eq!((p0[0].aux, p0[1].aux, p0[2].aux), (102, 103, 0));
        let p2 = page_entries(&es, &ids, 10, 2);
        assert_eq!(p2.len(), 5);
        assert!(p2.iter().all(|x| x.aux == 0));
        assert_eq!(
            page_changes(&p0[..3], &p0),
            Some((3..10).map(|i| NodeChange::Push(p0[i])).collect())
        );
        assert_eq!(page_changes(&p0, &p0[..3]), None);
    }
}
