//! The R*-tree (Beckmann, Kriegel, Schneider and Seeger 1990) as a [`Strategy`]: above
//! the leaves the child of least overlap enlargement among the `p` of least area
//! enlargement (the paper's p = 32 optimisation), higher up least area enlargement; the
//! first overflow of a non-root level during one insertion removes a share of the node's
//! entries (those farthest from its centre) and reinserts them ("forced reinsertion"),
//! later overflows split with the R*-tree split; underflow condenses and reinserts.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::rtree::{least_enlargement, plain_union_applies, union_plain};
use super::split::{split, SplitAlgorithm};
use super::strategy::InsertCtx;
use super::strategy::{
    mbr_of, split_in_two, ChooseSubtree, CondenseReinsert, NodeAccess, OverflowTreatment,
    Overflowing, Strategy, Treated,
};
use crate::geom::Rect;
use crate::node::{Entry, NodeView};
use crate::Result;

/// Order in which the R*-tree reinserts the entries it removed from an overflowing node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReinsertPolicy {
    /// Nearest to the node's centre first (Beckmann et al.'s recommended "close reinsert").
    Close,
    /// Farthest first.
    Far,
}

/// Options of the R*-tree (defaults: [`Default`]). Users write `reinsert`,
/// `reinsert_internal` (percentages) and `reinsert_policy` for the first three
/// (see [`super::written`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RStarOptions {
    /// Share of a leaf's max entries removed and reinserted on its first overflow (0 disables).
    pub reinsert_leaf: f64,
    /// The same for internal nodes.
    pub reinsert_internal: f64,
    /// Reinsertion order.
    pub policy: ReinsertPolicy,
    /// Candidates examined for least overlap enlargement (Beckmann et al.'s p = 32).
    pub candidates: usize,
}

impl Default for RStarOptions {
    /// 30 % reinsertion, close reinsert, p = 32 (Beckmann et al.).
    fn default() -> Self {
        RStarOptions {
            reinsert_leaf: 0.3,
            reinsert_internal: 0.3,
            policy: ReinsertPolicy::Close,
            candidates: 32,
        }
    }
}

/// The R*-tree's parts with options `o`.
pub(crate) fn strategy<const D: usize>(o: &RStarOptions) -> Strategy<D> {
    Strategy {
        choose: Box::new(LeastOverlap {
            candidates: o.candidates,
            scratch: Scratch::default(),
        }),
        overflow: Arc::new(ForcedReinsert(*o)),
        underflow: Arc::new(CondenseReinsert),
        pages: None,
        state: None,
    }
}

/// The R*-tree's subtree choice (see the module documentation).
struct LeastOverlap<const D: usize> {
    candidates: usize,
    /// Buffers of [`least_overlap`], kept between calls to save allocations.
    scratch: Scratch<D>,
}

impl<const D: usize> ChooseSubtree<D> for LeastOverlap<D> {
    fn choose(&mut self, v: NodeView<'_, D>, level: u32, mbr: &Rect<D>) -> usize {
        if level == 1 {
            least_overlap(|| v.mbrs(), mbr, self.candidates, &mut self.scratch)
        } else {
            least_enlargement(v.mbrs(), mbr)
        }
    }
}

/// Forced reinsertion on the first overflow of a non-root level during one insertion,
/// the R*-tree split otherwise.
struct ForcedReinsert(RStarOptions);

impl<const D: usize> OverflowTreatment<D> for ForcedReinsert {
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        mut at: Overflowing<'_, D>,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Treated<D>> {
        let o = &self.0;
        let level = at.node.level;
        let share = if level == 0 {
            o.reinsert_leaf
        } else {
            o.reinsert_internal
        };
        let count = (tree.capacity().max(level) as f64 * share).round() as usize;
        let first = level < 64 && ctx.overflowed & (1 << level) == 0;
        if !at.is_root && first && count > 0 {
            ctx.overflowed |= 1 << level;
            let removed = take_farthest(&mut at.node.entries, count);
            let ordered: Vec<Entry<D>> = match o.policy {
                ReinsertPolicy::Far => removed,
                ReinsertPolicy::Close => removed.into_iter().rev().collect(),
            };
            ctx.pending.extend(ordered.into_iter().map(|e| (e, level)));
            tree.stats_mut().forced_reinserts += 1;
            tree.rewrite(at.id, level, &at.node.entries)?;
            return Ok(Treated::Resized(mbr_of(&at.node.entries)));
        }
        split_in_two(tree, at, |es, min| split(SplitAlgorithm::RStar, es, min))
    }
}

/// The R*-tree's choice above the leaves over the entries of a slice (see
/// [`least_overlap`]).
#[cfg(test)]
fn choose_least_overlap<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>, p: usize) -> usize {
    least_overlap(|| es.iter().map(|e| e.mbr), mbr, p, &mut Scratch::default())
}

/// Buffers of [`least_overlap`].
struct Scratch<const D: usize> {
    /// The entries' boxes, read when the quick answer does not apply.
    boxes: Vec<Rect<D>>,
    /// (area enlargement, area, entry index) of every entry.
    cands: Vec<(f64, f64, usize)>,
    /// The candidates in the order they are examined.
    order: Vec<(f64, f64, usize, usize)>,
}

impl<const D: usize> Default for Scratch<D> {
    fn default() -> Self {
        Scratch {
            boxes: Vec::new(),
            cands: Vec::new(),
            order: Vec::new(),
        }
    }
}

impl<const D: usize> Scratch<D> {
    /// Copies the boxes of `boxes` out of the page.
    fn load(&mut self, boxes: impl Iterator<Item = Rect<D>>) {
        self.boxes.clear();
        self.boxes.extend(boxes);
    }

    /// The overlap enlargement of entry `i` (box `own`, grown to `grown`) against the
    /// other entries: the sum over them, in entry order, of `overlap(grown, o) -
    /// overlap(own, o)`, skipping the entries `grown` does not overlap (their term is +0).
    /// Stops as soon as the sum reaches `limit` (when `stop_above` is false) or exceeds it
    /// (when true).
    fn overlap_growth(
        &self,
        i: usize,
        own: &Rect<D>,
        grown: &Rect<D>,
        limit: f64,
        stop_above: bool,
    ) -> f64 {
        let mut delta = 0.0;
        for (j, o) in self.boxes.iter().enumerate() {
            if j == i {
                continue;
            }
            let g = grown.overlap(o);
            if g != 0.0 {
                delta += g - own.overlap(o);
                if delta > limit || (!stop_above && delta >= limit) {
                    break;
                }
            }
        }
        delta
    }
}

/// The R*-tree's choice above the leaves among the entries whose boxes `boxes` gives in
/// entry order: least overlap enlargement among the `p` entries of least area enlargement
/// (ties: least area enlargement, then smallest area, then the first candidate in the
/// order [`least_overlap_candidates`] leaves them).
///
/// This gives exactly the answer of the plain algorithm ([`choose_least_overlap_plain`],
/// which computes every candidate's overlap enlargement in full) but prunes: the
/// candidates are examined by increasing (area enlargement, area, position), so a later
/// candidate wins only with a strictly smaller overlap enlargement; every term of that sum
/// is >= 0, so its computation stops as soon as it reaches the best one, and nothing can
/// beat an overlap enlargement of 0. When areas are so large that the sums could overflow
/// (non-finite values would compare differently), or a box is malformed, the plain
/// algorithm runs instead.
/// `boxes` gives a fresh iterator over the boxes on every call (a node page is scanned in
/// place): one pass computes the enlargements and finds the entry of least (enlargement,
/// area); the boxes are copied out only when the common case below does not answer
/// ([`Scratch::overlap_growth`]).
fn least_overlap<const D: usize, I: ExactSizeIterator<Item = Rect<D>>>(
    boxes: impl Fn() -> I,
    mbr: &Rect<D>,
    p: usize,
    s: &mut Scratch<D>,
) -> usize {
    let n = boxes().len();
    if n == 0 {
        return 0;
    }
    // The enlargements, the union of every box with `mbr` (for the overflow bound) and
    // the entry of least (enlargement, area), in one pass; the least one's (enlargement,
    // area) is kept in `best`, its box in `least_box`.
    s.cands.clear();
    s.cands.resize(n, (0.0, 0.0, 0));
    let cands = &mut s.cands[..];
    let mut all = *mbr;
    let mut least = 0;
    let mut best = (0.0, 0.0);
    let mut least_box = *mbr;
    let mut unique = true;
    let mut wellformed = true;
    let plain = plain_union_applies(mbr);
    let numbers = (0..D).all(|d| !mbr.min[d].is_nan() && !mbr.max[d].is_nan());
    for ((i, b), c) in boxes().enumerate().zip(cands.iter_mut()) {
        if numbers {
            // Plain comparisons suffice for `all`: it serves the finiteness test only,
            // which they answer as `Rect::expand` would (`all` starts from `mbr`, so it
            // is never NaN, and differs at most in the sign of a zero).
            all = union_plain(&b, &all);
        } else {
            all.expand(&b);
        }
        for d in 0..D {
            // False for NaN too.
            wellformed &= b.min[d] <= b.max[d];
        }
        let area = b.area();
        let grown = if plain {
            union_plain(&b, mbr)
        } else {
            b.union(mbr)
        };
        let enl = grown.area() - area;
        *c = (enl, area, i);
        if i == 0 {
            (best, least_box) = ((enl, area), b);
        } else if enl.partial_cmp(&best.0) != Some(std::cmp::Ordering::Greater) {
            // A larger enlargement (a plain comparison: NaN goes on to `total_cmp`)
            // settled it at once.
            match enl.total_cmp(&best.0).then(area.total_cmp(&best.1)) {
                std::cmp::Ordering::Less => {
                    (least, unique, best, least_box) = (i, true, (enl, area), b);
                }
                std::cmp::Ordering::Equal => unique = false,
                std::cmp::Ordering::Greater => {}
            }
        }
    }
    let bound = all.area() * (n as f64 + 1.0);
    if !bound.is_finite() || !wellformed {
        s.load(boxes());
        keep_least(&mut s.cands, p);
        return pick_least_overlap(&s.boxes, mbr, &s.cands);
    }
    // The common case: the entry of least (enlargement, area) is unique and already
    // contains `mbr`. It is among the candidates, its overlap enlargement is 0 (the
    // least possible) and every other candidate has a larger (enlargement, area), so it
    // wins whatever the candidates' order.
    let loaded = if unique {
        let own = least_box;
        if own.contains(mbr) {
            return least;
        }
        // The same entry, when growing it to include `mbr` overlaps no other entry more
        // than before: it is examined first below and its overlap enlargement, 0, ends
        // the search. The sum is computed as below, term by term in entry order (stopping
        // once it is above 0).
        let grown = own.union(mbr);
        s.load(boxes());
        if s.overlap_growth(least, &own, &grown, 0.0, true) == 0.0 {
            return least;
        }
        true
    } else {
        false
    };
    if !loaded {
        s.load(boxes());
    }
    keep_least(&mut s.cands, p);
    s.order.clear();
    s.order.extend(
        s.cands
            .iter()
            .enumerate()
            .map(|(k, &(enl, area, i))| (enl, area, k, i)),
    );
    s.order.sort_unstable_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let mut best: Option<(f64, usize)> = None;
    for k in 0..s.order.len() {
        let i = s.order[k].3;
        let limit = match best {
            Some((0.0, _)) => break,
            Some((d, _)) => d,
            None => f64::INFINITY,
        };
        let own = s.boxes[i];
        let grown = own.union(mbr);
        // delta = sum over the other entries o of overlap(grown, o) - overlap(own, o);
        // every term is >= +0 (own lies inside grown), and a term is +0 whenever grown
        // does not overlap o. With grown == own every term is 0.
        let delta = if grown != own {
            s.overlap_growth(i, &own, &grown, limit, false)
        } else {
            0.0
        };
        if delta < limit {
            best = Some((delta, i));
        }
    }
    best.map_or(0, |b| b.1)
}

/// The `p` entries of least area enlargement (all if there are at most `p`), as
/// (enlargement, area, entry index), in the order the plain algorithm examines them.
#[cfg(test)]
fn least_overlap_candidates<const D: usize>(
    es: &[Entry<D>],
    mbr: &Rect<D>,
    p: usize,
) -> Vec<(f64, f64, usize)> {
    let mut cands = enlargements(es, mbr);
    keep_least(&mut cands, p);
    cands
}

/// (area enlargement to include `mbr`, area, index) of every entry.
#[cfg(test)]
fn enlargements<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>) -> Vec<(f64, f64, usize)> {
    es.iter()
        .enumerate()
        .map(|(i, e)| {
            let area = e.mbr.area();
            (e.mbr.union(mbr).area() - area, area, i)
        })
        .collect()
}

fn enl_area_cmp(a: &(f64, f64, usize), b: &(f64, f64, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// Keeps the `p` least (enlargement, area) of `cands` (all of them if at most `p`).
fn keep_least(cands: &mut Vec<(f64, f64, usize)>, p: usize) {
    if cands.len() > p {
        cands.select_nth_unstable_by(p - 1, enl_area_cmp);
        cands.truncate(p);
    }
}

/// The plain R*-tree choice over the candidates: every candidate's overlap enlargement in
/// full, the least (delta, enlargement, area) winning, the first one on ties.
fn pick_least_overlap<const D: usize>(
    es: &[Rect<D>],
    mbr: &Rect<D>,
    cands: &[(f64, f64, usize)],
) -> usize {
    let mut best = (f64::INFINITY, f64::INFINITY, f64::INFINITY, 0);
    for &(enl, area, i) in cands {
        let grown = es[i].union(mbr);
        let mut delta = 0.0;
        for (j, o) in es.iter().enumerate() {
            if j != i {
                delta += grown.overlap(o) - es[i].overlap(o);
            }
        }
        let key = (delta, enl, area);
        if key < (best.0, best.1, best.2) {
            best = (delta, enl, area, i);
        }
    }
    best.3
}

/// The R*-tree choice computed without pruning (the reference for
/// [`choose_least_overlap`]).
#[cfg(test)]
fn choose_least_overlap_plain<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>, p: usize) -> usize {
    let boxes: Vec<Rect<D>> = es.iter().map(|e| e.mbr).collect();
    pick_least_overlap(&boxes, mbr, &least_overlap_candidates(es, mbr, p))
}

/// Removes the `count` entries whose centres are farthest from the centre of the node's
/// MBR; returns them farthest first.
fn take_farthest<const D: usize>(es: &mut Vec<Entry<D>>, count: usize) -> Vec<Entry<D>> {
    let centre = es.iter().fold(Rect::empty(), |r, e| r.union(&e.mbr));
    // The order of a stable sort by descending distance (equal distances in their
    // original order), each distance computed once, by an unstable sort of (distance,
    // position).
    let mut keyed: Vec<(f64, usize)> = es
        .iter()
        .enumerate()
        .map(|(i, e)| (e.mbr.center_dist2(&centre), i))
        .collect();
    keyed.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let old = std::mem::take(es);
    es.extend(keyed.iter().map(|k| old[k.1]));
    let rest = es.split_off(count.min(es.len()));
    std::mem::replace(es, rest)
}

#[cfg(test)]
mod tests {
    use super::{choose_least_overlap, choose_least_overlap_plain, Entry, Rect};
    use proptest::prelude::*;

    fn boxes(grid: f64) -> impl Strategy<Value = Vec<Entry<2>>> {
        prop::collection::vec(
            (0.0..grid, 0.0..grid, 0.0..grid / 4.0, 0.0..grid / 4.0),
            1..120,
        )
        .prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (x, y, w, h))| Entry {
                    mbr: Rect {
                        min: [x.round(), y.round()],
                        max: [(x + w).round(), (y + h).round()],
                    },
                    ptr: i as u64,
                    aux: 0,
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// The pruned choice is exactly the plain one, also with many ties (coarse grids,
        /// duplicate boxes, zero-area boxes) and with few candidates.
        #[test]
        fn pruned_least_overlap_is_the_plain_one(
            es in prop_oneof![boxes(8.0), boxes(1000.0)],
            x in 0.0..1000.0f64, y in 0.0..1000.0f64, w in 0.0..40.0f64, h in 0.0..40.0f64,
            p in 1usize..40,
        ) {
            let q = Rect { min: [x.round(), y.round()], max: [(x + w).round(), (y + h).round()] };
            prop_assert_eq!(choose_least_overlap(&es, &q, p), choose_least_overlap_plain(&es, &q, p));
            let inside = es[0].mbr;
            prop_assert_eq!(choose_least_overlap(&es, &inside, p), choose_least_overlap_plain(&es, &inside, p));
        }
    }

    #[test]
    fn huge_boxes_take_the_plain_path() {
        let big = f64::MAX / 2.0;
        let es: Vec<Entry<2>> = (0..5)
            .map(|i| Entry {
                mbr: Rect {
                    min: [-big + i as f64, -big],
                    max: [big, big - i as f64],
                },
                ptr: i,
                aux: 0,
            })
            .collect();
        let q = Rect::point([0.0, 0.0]);
        assert_eq!(
            choose_least_overlap(&es, &q, 3),
            choose_least_overlap_plain(&es, &q, 3)
        );
    }
}
