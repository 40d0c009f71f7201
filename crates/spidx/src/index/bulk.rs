//! Bulk loading: builds a whole tree bottom-up from a list of objects, for every R-tree
//! variant (the result is a valid tree of the variant, which later inserts and deletes
//! maintain with its own algorithms).
//!
//! * **STR** (Leutenegger, Lopez and Edgington 1997, Sort-Tile-Recursive): on every level,
//!   the entries are ordered by the centre's first coordinate and cut into `⌈P^(1/D)⌉`
//!   slabs of whole nodes, each slab is tiled the same way on the next axis, and the last
//!   axis is sorted and cut into nodes. A slab only needs the right entries, not their
//!   order, so the cuts are found by selection (`select_nth_unstable`) rather than a full
//!   sort; the order is total (centre, pointer, then the rest of the entry), so selection
//!   puts exactly the entries a sort would on each side of every cut.
//! * **Hilbert packing** (Kamel and Faloutsos 1993): the objects sorted by the Hilbert
//!   value of their centres (grid of [`HILBERT_ORDER`] bits per axis over the data's
//!   extent) are cut into leaves; every upper level packs the nodes below in their order.
//!   A variant that orders its entries by its own key (the Hilbert R-tree) is packed by
//!   that key instead (its own grid and order), every internal entry holding the largest
//!   key below it (the LHV), so the result is exactly a Hilbert R-tree that its own
//!   inserts and deletes maintain; STR and OMT, which cut by coordinates, are refused for
//!   it.
//! * **OMT** (Lee and Lee 2003, Overlap Minimising Top-down): the tree's height is fixed
//!   first; each node's entries are partitioned top-down into as many subtrees as a
//!   full-to-the-fill-factor subtree needs, by slabs along each axis in turn (as rstar's
//!   `bulk_load` does, also by selection); a leaf's entries are sorted on the first axis;
//!   the nodes are then written bottom-up.
//!
//! Every node holds at most `⌊fill · M⌋` entries (at least the minimum `m`; STR and
//! Hilbert fill every node but the last few of a level exactly, and the last few are
//! evened out so that none falls below `m`). Nodes are created level by level, left to
//! right, so pages are allocated — and, through a write-through store, written — in
//! sequence. The old (empty) root stays the root until the new tree is complete; each
//! created node ends one store operation, so buffered stores flush as they go and a crash
//! leaves the empty tree.

use serde::{Deserialize, Serialize};

use super::curve::HilbertGrid;
use super::strategy::mbr_of;
use super::{CheckReport, Tree};
use crate::geom::Rect;
use crate::node::{aux_max, Capacity, Entry, LayoutKind};
use crate::store::{NodeStore, TreeMeta};
use crate::{Error, Result};

/// Bits per axis of the Hilbert grid used by Hilbert packing (limited so that
/// `D · order <= 128`, see [`super::curve`]).
pub const HILBERT_ORDER: u32 = 32;

/// A bulk-loading algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BulkMethod {
    /// Sort-Tile-Recursive.
    Str,
    /// Hilbert packing.
    Hilbert,
    /// Overlap Minimising Top-down.
    Omt,
}

impl BulkMethod {
    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            BulkMethod::Str => "str",
            BulkMethod::Hilbert => "hilbert",
            BulkMethod::Omt => "omt",
        }
    }
}

impl std::str::FromStr for BulkMethod {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "str" => Ok(BulkMethod::Str),
            "hilbert" => Ok(BulkMethod::Hilbert),
            "omt" => Ok(BulkMethod::Omt),
            o => Err(Error::invalid(
                "bulk method",
                format!("unknown bulk-loading method '{o}'; use str, hilbert or omt"),
            )),
        }
    }
}

/// How to bulk load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BulkOptions {
    /// The algorithm.
    pub method: BulkMethod,
    /// Entries per node relative to the node's maximum, in (0, 1]; must leave at least the
    /// minimum fill.
    pub fill: f64,
}

/// Entries per packed node of each kind of node.
#[derive(Debug, Clone, Copy)]
struct Targets {
    leaf: usize,
    internal: usize,
}

impl BulkOptions {
    /// The fill factor when none is given: full nodes, as the packing papers build them.
    pub const DEFAULT_FILL: f64 = 1.0;

    /// The entries per packed node of leaves and internal nodes; errors when the fill
    /// factor is out of range or would leave nodes below their minimum.
    fn targets(&self, cap: &Capacity) -> Result<Targets> {
        if !(self.fill > 0.0 && self.fill <= 1.0) {
            return Err(Error::invalid(
                "fill",
                format!(
                    "{} % is outside the bulk-load fill factor's range (0, 100 %]",
                    self.fill * 100.0
                ),
            ));
        }
        let one = |what: &str, max: usize, min: usize| -> Result<usize> {
            let b = (self.fill * max as f64).floor() as usize;
            if b < min.max(2) {
                return Err(Error::invalid(
                    "fill",
                    format!(
                        "{} % of {max} entries is {b} per {what}, below the minimum of {}",
                        self.fill * 100.0,
                        min.max(2)
                    ),
                ));
            }
            Ok(b)
        };
        Ok(Targets {
            leaf: one("leaf", cap.leaf_max, cap.leaf_min)?,
            internal: one("internal node", cap.internal_max, cap.internal_min)?,
        })
    }
}

/// Where a bulk load ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BulkReport {
    /// Nodes created per level (index 0 = leaves).
    pub nodes_per_level: Vec<u64>,
}

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Builds the tree over `objects` (box, object id) by `opts`; the tree must be empty.
    /// See the module documentation.
    pub fn bulk_load(
        &mut self,
        objects: Vec<(Rect<D>, u64)>,
        opts: &BulkOptions,
    ) -> Result<BulkReport> {
        let t = opts.targets(&self.cap)?;
        if self.meta.objects != 0 || self.meta.height != 1 {
            return Err(Error::invalid(
                "bulk load",
                "the tree already holds objects; bulk loading builds a new tree",
            ));
        }
        // A variant that orders its entries by its own key (the Hilbert R-tree) is packed
        // in that order: Hilbert packing on the tree's own curve and grid. STR and OMT
        // cut by coordinates and would break that order, so they are refused.
        let keyed = self.strategy.choose.orders_by_key();
        if keyed && opts.method != BulkMethod::Hilbert {
            return Err(Error::invalid(
                "bulk load",
                format!(
                    "{} keeps its entries in the order of its own Hilbert key, which {} (cutting by coordinates) does not follow; bulk load it by hilbert (packing in the tree's own key order) or build it by insertion",
                    self.kind.label(),
                    opts.method.name().to_uppercase()
                ),
            ));
        }
        let seed = self.store.layout().kind() == LayoutKind::Seed;
        let mut entries = Vec::with_capacity(objects.len());
        for (mbr, id) in objects {
            Self::check_box(&mbr, id)?;
            if seed && id > u64::from(u32::MAX) {
                return Err(Error::invalid(
                    "object id",
                    format!("{id} does not fit the seed layout's 32-bit pointers"),
                ));
            }
            let aux = self.strategy.choose.object_key(&mbr);
            entries.push(Entry { mbr, ptr: id, aux });
        }
        let n = entries.len() as u64;
        let mut report = BulkReport::default();
        if n == 0 {
            return Ok(report);
        }
        let target = |level: u32| if level == 0 { t.leaf } else { t.internal };
        let mut plan = match opts.method {
            BulkMethod::Omt => Some(omt_plan(&mut entries, &self.cap, t)),
            BulkMethod::Hilbert if keyed => {
                // The tree's own keys (ties in the given order).
                entries.sort_by_key(|e| e.aux);
                None
            }
            BulkMethod::Hilbert => {
                let grid = HilbertGrid::new(HILBERT_ORDER.min(128 / D as u32), &mbr_of(&entries))?;
                let mut keyed: Vec<(u128, Entry<D>)> =
                    entries.iter().map(|e| (grid.value(&e.mbr), *e)).collect();
                keyed.sort_by_key(|k| k.0);
                entries = keyed.into_iter().map(|k| k.1).collect();
                None
            }
            BulkMethod::Str => None,
        };
        let old_root = self.meta.root;
        let mut level = 0u32;
        loop {
            let sizes = match &mut plan {
                Some(levels) => levels.remove(0),
                None => group_sizes(entries.len(), target(level), self.cap.min(level)),
            };
            if opts.method == BulkMethod::Str {
                tile(&mut entries, &sizes, 0, true);
            }
            let mut parents = Vec::with_capacity(sizes.len());
            let mut at = 0;
            for &k in &sizes {
                let group = &entries[at..at + k];
                at += k;
                let id = self.store.create(level, group)?;
                self.note_write(level);
                self.store.end_operation()?;
                // The largest key below (the LHV of a Hilbert R-tree; 0 without keys).
                parents.push(Entry {
                    mbr: mbr_of(group),
                    ptr: id,
                    aux: aux_max(group),
                });
            }
            report.nodes_per_level.push(sizes.len() as u64);
            if parents.len() == 1 {
                let meta = TreeMeta {
                    root: parents[0].ptr,
                    height: level + 1,
                    objects: n,
                };
                self.set_meta(meta)?;
                self.store.delete(old_root, 0)?;
                self.store.end_operation()?;
                return Ok(report);
            }
            entries = parents;
            level += 1;
        }
    }
}

/// Sizes of the nodes packing `k` entries `b` per node, each between `min` and `max`:
/// `⌈k/b⌉` nodes of `b` entries but the last; if the last would hold fewer than `min`, the
/// last few nodes share their entries evenly. Only when `b < 2·min - 1` can that fail;
/// then all `k` entries are spread evenly over `⌊k/min⌋` nodes (each at most `max`, as
/// `max >= 2·min`). One node when `k <= b` (the root of the packed tree).
fn group_sizes(k: usize, b: usize, min: usize) -> Vec<usize> {
    let g = k.div_ceil(b).max(1);
    let mut sizes = vec![b; g - 1];
    sizes.push(k - b * (g - 1));
    if g == 1 || sizes[g - 1] >= min {
        return sizes;
    }
    let even = |total: usize, j: usize| (0..j).map(move |i| total / j + usize::from(i < total % j));
    for j in 2..=g {
        let total = b * (j - 1) + sizes[g - 1];
        if total / j >= min {
            sizes.truncate(g - j);
            sizes.extend(even(total, j));
            return sizes;
        }
    }
    let j = (k / min).max(1);
    even(k, j).collect()
}

/// The centre coordinate of an entry on `axis` (times two; only the order matters).
#[inline]
fn centre<const D: usize>(e: &Entry<D>, axis: usize) -> f64 {
    e.mbr.min[axis] + e.mbr.max[axis]
}

/// The order of entries on `axis`: by centre, ties by pointer, then by the rest of the
/// entry (coordinates and key, by their total order), so that distinct entries never tie
/// and sorting and selecting put the same entries on each side of every cut.
#[inline]
fn axis_order<const D: usize>(a: &Entry<D>, b: &Entry<D>, axis: usize) -> std::cmp::Ordering {
    centre(a, axis)
        .total_cmp(&centre(b, axis))
        .then_with(|| a.ptr.cmp(&b.ptr))
        .then_with(|| {
            let coords = |e: &Entry<D>| {
                let (min, max) = (e.mbr.min, e.mbr.max);
                min.into_iter().chain(max).map(f64::to_bits)
            };
            coords(a).cmp(coords(b)).then(a.aux.cmp(&b.aux))
        })
}

/// Sorts `es` on `axis` (see [`axis_order`]).
fn sort_on<const D: usize>(es: &mut [Entry<D>], axis: usize) {
    es.sort_unstable_by(|a, b| axis_order(a, b, axis));
}

/// Reorders `es` so that, for every position `c` of `cuts` (increasing, inside `es`), the
/// entries before `c` are the `c` first in the order on `axis` (see [`axis_order`]): the
/// runs between cuts hold what a sort would put there, each in no particular order.
/// Selection instead of a sort: about `n·log2(cuts)` comparisons instead of `n·log2(n)`.
fn cut_on<const D: usize>(es: &mut [Entry<D>], cuts: &[usize], axis: usize) {
    if cuts.is_empty() {
        return;
    }
    let mid = cuts.len() / 2;
    let c = cuts[mid];
    if c == 0 || c >= es.len() {
        // Not inside: nothing to separate at this cut.
        cut_on(es, &cuts[..mid], axis);
        return;
    }
    es.select_nth_unstable_by(c, |a, b| axis_order(a, b, axis));
    let (left, right) = es.split_at_mut(c);
    cut_on(left, &cuts[..mid], axis);
    let rest: Vec<usize> = cuts[mid + 1..].iter().map(|&x| x - c).collect();
    cut_on(right, &rest, axis);
}

/// The positions where the runs of `sizes` end, but the last.
fn ends(sizes: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut at = 0;
    let mut v: Vec<usize> = sizes
        .map(|k| {
            at += k;
            at
        })
        .collect();
    v.pop();
    v
}

/// STR's tiling: orders `es` so that consecutive runs of `sizes` form the nodes. Cut on
/// `axis` into `⌈P^(1/(D-axis))⌉` slabs of whole nodes and tile each slab on the next
/// axis; on the last axis the nodes are cut. With `ordered`, every node's entries end
/// sorted on the last axis (STR stores them so); without, the runs hold the same entries
/// in no particular order (OMT, which tiles each run again below).
fn tile<const D: usize>(es: &mut [Entry<D>], sizes: &[usize], axis: usize, ordered: bool) {
    if axis + 1 >= D || sizes.len() <= 1 {
        if ordered {
            sort_on(es, axis);
        } else {
            cut_on(es, &ends(sizes.iter().copied()), axis);
        }
        return;
    }
    let p = sizes.len();
    let slabs = (p as f64).powf(1.0 / (D - axis) as f64).ceil().max(1.0) as usize;
    let per = p.div_ceil(slabs);
    // The slabs hold the entries a sort on `axis` would give them; the order inside a
    // slab does not matter, the slab is tiled on the next axis.
    cut_on(es, &ends(sizes.chunks(per).map(|c| c.iter().sum())), axis);
    let mut at = 0;
    for chunk in sizes.chunks(per) {
        let k: usize = chunk.iter().sum();
        tile(&mut es[at..at + k], chunk, axis + 1, ordered);
        at += k;
    }
}

/// OMT: reorders `es` so that the nodes of every level are consecutive runs, and returns
/// the node sizes of every level, leaves first.
fn omt_plan<const D: usize>(es: &mut [Entry<D>], cap: &Capacity, t: Targets) -> Vec<Vec<usize>> {
    // Entries a subtree rooted at level l holds when packed full (`full[l]`), at most
    // (`most[l]`) and at least (`least[l]`, non-root nodes at their minimum).
    let n = es.len();
    let (mut full, mut most, mut least) =
        (vec![t.leaf], vec![cap.leaf_max], vec![cap.leaf_min.max(1)]);
    while *full.last().expect("one level") < n {
        full.push(full.last().unwrap().saturating_mul(t.internal));
        most.push(most.last().unwrap().saturating_mul(cap.internal_max));
        least.push(
            least
                .last()
                .unwrap()
                .saturating_mul(cap.internal_min.max(1)),
        );
    }
    // A root needs two children of at least their minimum; with fewer entries a lower
    // tree holds them (its root is exempt from the minimum and below its maximum).
    let mut height = full.len();
    while height > 1 && n < 2 * least[height - 2] {
        height -= 1;
    }
    let mut levels = vec![Vec::new(); height];
    omt_node(es, height - 1, true, cap, &full, &most, &least, &mut levels);
    levels
}

/// Plans the subtree of one node at `level` holding `es`.
#[allow(clippy::too_many_arguments)]
fn omt_node<const D: usize>(
    es: &mut [Entry<D>],
    level: usize,
    root: bool,
    cap: &Capacity,
    full: &[usize],
    most: &[usize],
    least: &[usize],
    levels: &mut [Vec<usize>],
) {
    let k = es.len();
    if level == 0 {
        sort_on(es, 0);
        levels[0].push(k);
        return;
    }
    // Children: as many as full subtrees need, within what the children's sizes and the
    // node's own minimum and maximum (two children for the root) allow.
    let own_min = if root { 2 } else { cap.min(level as u32) };
    let lo = k.div_ceil(most[level - 1]).max(own_min);
    let hi = (k / least[level - 1]).min(cap.max(level as u32)).max(lo);
    let c = k.div_ceil(full[level - 1]).clamp(lo, hi);
    levels[level].push(c);
    let sizes: Vec<usize> = (0..c).map(|i| k / c + usize::from(i < k % c)).collect();
    // Each child's run is planned again below (a leaf's is sorted there): only which
    // entries it holds matters here.
    tile(es, &sizes, 0, false);
    let mut at = 0;
    for &s in &sizes {
        omt_node(
            &mut es[at..at + s],
            level - 1,
            false,
            cap,
            full,
            most,
            least,
            levels,
        );
        at += s;
    }
}

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Checks a tree just bulk loaded with `opts`: every invariant of [`Tree::check`], and
    /// the fill the load promises: no node holds more than `b = ⌊fill · M⌋` entries (or
    /// `2m` when `b < 2m - 1`, where packing to `b` cannot keep every node at its minimum),
    /// and, for STR and Hilbert packing, no level has more nodes than `⌈entries / b⌉` (OMT
    /// evens out each subtree and keeps each node at its minimum, so it promises only the
    /// first). Violations are added to the report.
    pub fn check_bulk(&mut self, opts: &BulkOptions) -> Result<CheckReport> {
        let t = opts.targets(&self.cap)?;
        let mut rep = self.check()?;
        let meta = self.meta;
        let mut stack = vec![(meta.root, meta.height - 1)];
        let mut per_level = vec![(0u64, 0u64); meta.height as usize];
        while let Some((id, level)) = stack.pop() {
            let node = self.read_node(id, level)?;
            let (b, min) = if level == 0 {
                (t.leaf, self.cap.leaf_min)
            } else {
                (t.internal, self.cap.internal_min)
            };
            let most = if b + 1 >= 2 * min && opts.method != BulkMethod::Omt {
                b
            } else {
                b.max(2 * min)
            };
            if node.entries.len() > most {
                rep.violations.push(format!(
                    "bulk-loaded node {id} (level {level}) holds {} entries, more than the fill factor's {most}",
                    node.entries.len()
                ));
            }
            per_level[level as usize].0 += 1;
            per_level[level as usize].1 += node.entries.len() as u64;
            if level > 0 {
                stack.extend(node.entries.iter().map(|e| (e.ptr, level - 1)));
            }
        }
        // OMT evens out every subtree (and keeps each node at its own minimum), so only STR
        // and Hilbert packing promise the fewest nodes per level.
        if opts.method != BulkMethod::Omt {
            for (level, &(nodes, entries)) in per_level.iter().enumerate() {
                let b = if level == 0 { t.leaf } else { t.internal } as u64;
                let allowed = entries.div_ceil(b).max(1);
                if nodes > allowed {
                    rep.violations.push(format!(
                        "level {level} of the bulk-loaded tree has {nodes} nodes for {entries} entries; packing {b} per node needs at most {allowed}"
                    ));
                }
            }
        }
        Ok(rep)
    }
}

#[cfg(test)]
mod tests {
    use super::{cut_on, ends, group_sizes, sort_on, tile};
    use crate::geom::Rect;
    use crate::node::Entry;
    use rand::{Rng, SeedableRng};

    /// Entries on a coarse grid (many equal centres), some with equal pointers.
    fn entries(n: usize, seed: u64) -> Vec<Entry<2>> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (x, y) = (rng.gen_range(0..6) as f64, rng.gen_range(0..6) as f64);
                let (w, h) = (rng.gen_range(0..3) as f64, rng.gen_range(0..3) as f64);
                Entry {
                    mbr: Rect {
                        min: [x - w, y - h],
                        max: [x + w, y + h],
                    },
                    ptr: rng.gen_range(0..(n as u64 / 2).max(1)),
                    aux: rng.gen_range(0..2),
                }
            })
            .collect()
    }

    fn sorted_runs(es: &[Entry<2>], cuts: &[usize], axis: usize) -> Vec<Vec<Entry<2>>> {
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(es.len());
        bounds
            .windows(2)
            .map(|w| {
                let mut run = es[w[0]..w[1]].to_vec();
                sort_on(&mut run, axis);
                run
            })
            .collect()
    }

    /// Selection puts exactly the entries of a full sort between every two cuts, also with
    /// equal centres and equal pointers.
    #[test]
    fn cuts_hold_what_a_sort_gives() {
        for seed in 0..40u64 {
            let n = 1 + (seed as usize * 37) % 300;
            let es = entries(n, seed);
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed + 1000);
            let mut cuts: Vec<usize> = (0..rng.gen_range(0..12))
                .map(|_| rng.gen_range(0..=n))
                .collect();
            cuts.sort_unstable();
            cuts.dedup();
            for axis in 0..2 {
                let mut sorted = es.clone();
                sort_on(&mut sorted, axis);
                let mut cut = es.clone();
                cut_on(&mut cut, &cuts, axis);
                assert_eq!(
                    sorted_runs(&cut, &cuts, axis),
                    sorted_runs(&sorted, &cuts, axis),
                    "seed {seed}, axis {axis}, cuts {cuts:?}"
                );
            }
        }
    }

    /// STR's ordered tiling equals the tiling by full sorts on every axis: the same nodes,
    /// each sorted on the last axis.
    #[test]
    fn ordered_tiling_is_the_sorted_one() {
        for seed in 0..20u64 {
            let es = entries(500 + seed as usize * 13, seed);
            let sizes: Vec<usize> = {
                let mut left = es.len();
                let mut v = Vec::new();
                while left > 0 {
                    let k = left.min(7);
                    v.push(k);
                    left -= k;
                }
                v
            };
            // The reference: sort the slab axis fully, then each slab on the last axis.
            let mut reference = es.clone();
            sort_on(&mut reference, 0);
            let per = sizes
                .len()
                .div_ceil((sizes.len() as f64).sqrt().ceil() as usize);
            let mut at = 0;
            for chunk in sizes.chunks(per) {
                let k: usize = chunk.iter().sum();
                sort_on(&mut reference[at..at + k], 1);
                at += k;
            }
            let mut tiled = es.clone();
            tile(&mut tiled, &sizes, 0, true);
            assert_eq!(tiled, reference, "seed {seed}");
            let mut unordered = es.clone();
            tile(&mut unordered, &sizes, 0, false);
            let cuts = ends(sizes.iter().copied());
            assert_eq!(
                sorted_runs(&unordered, &cuts, 1),
                sorted_runs(&reference, &cuts, 1)
            );
        }
    }

    #[test]
    fn group_sizes_keep_the_minimum() {
        assert_eq!(group_sizes(10, 4, 2), vec![4, 4, 2]);
        assert_eq!(group_sizes(9, 4, 2), vec![4, 3, 2]);
        assert_eq!(group_sizes(3, 4, 2), vec![3]);
        // 13 entries, 6 per node, at least 5: two nodes of 7 (above 6, at most 2·min).
        assert_eq!(group_sizes(13, 6, 5), vec![7, 6]);
        for k in 1..300 {
            for b in 2..20 {
                for min in 1..=b.min(k) {
                    let s = group_sizes(k, b, min);
                    assert_eq!(s.iter().sum::<usize>(), k);
                    assert!(s.len() <= k.div_ceil(b));
                    if b + 1 >= 2 * min {
                        assert!(s.iter().all(|&x| x <= b), "{k} {b} {min}: {s:?}");
                    } else {
                        assert!(s.iter().all(|&x| x <= 2 * min), "{k} {b} {min}: {s:?}");
                    }
                    if s.len() > 1 || k >= min {
                        assert!(s.iter().all(|&x| x >= min), "{k} {b} {min}: {s:?}");
                    }
                }
            }
        }
    }
}
