//! The R*-tree (Beckmann, Kriegel, Schneider and Seeger 1990) as a [`Strategy`]: above
//! the leaves the child of least overlap enlargement among the `p` of least area
//! enlargement (the paper's p = 32 optimisation), higher up least area enlargement; the
//! first overflow of a non-root level during one insertion removes a share of the node's
//! entries (those farthest from its centre) and reinserts them ("forced reinsertion"),
//! later overflows split with the R*-tree split; underflow condenses and reinserts.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::insert::InsertCtx;
use super::rtree::least_enlargement;
use super::split::{split, SplitAlgorithm};
use super::strategy::{
    mbr_of, split_in_two, ChooseSubtree, CondenseReinsert, NodeAccess, OverflowTreatment,
    Overflowing, Strategy, Treated,
};
use crate::geom::Rect;
use crate::node::{Entry, NodeView};
use crate::{Error, Result};

/// Order in which the R*-tree reinserts the entries it removed from an overflowing node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReinsertPolicy {
    /// Nearest to the node's centre first (Beckmann et al.'s recommended "close reinsert").
    Close,
    /// Farthest first.
    Far,
}

impl ReinsertPolicy {
    /// Parses `close` or `far`.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "close" => Ok(Self::Close),
            "far" => Ok(Self::Far),
            o => Err(Error::invalid(
                "reinsert policy",
                format!("unknown policy '{o}'; use close or far"),
            )),
        }
    }
}

/// Options of the R*-tree.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
            scratch: Vec::new(),
        }),
        overflow: Arc::new(ForcedReinsert(*o)),
        underflow: Arc::new(CondenseReinsert),
    }
}

/// The R*-tree's subtree choice (see the module documentation).
struct LeastOverlap<const D: usize> {
    candidates: usize,
    /// Decoded entries of the node, kept between calls to save allocations.
    scratch: Vec<Entry<D>>,
}

impl<const D: usize> ChooseSubtree<D> for LeastOverlap<D> {
    fn choose(&mut self, v: NodeView<'_, D>, level: u32, mbr: &Rect<D>) -> usize {
        if level == 1 {
            self.scratch.clear();
            self.scratch.extend((0..v.len()).map(|i| v.entry(i)));
            choose_least_overlap(&self.scratch, mbr, self.candidates)
        } else {
            least_enlargement((0..v.len()).map(|i| v.mbr(i)), mbr)
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

/// The R*-tree's choice above the leaves: least overlap enlargement among the `p` entries
/// of least area enlargement (ties: least area enlargement, then smallest area, then the
/// first candidate in the order [`least_overlap_candidates`] leaves them).
///
/// This gives exactly the answer of the plain algorithm ([`choose_least_overlap_plain`],
/// which computes every candidate's overlap enlargement in full) but prunes: the
/// candidates are examined by increasing (area enlargement, area, position), so a later
/// candidate wins only with a strictly smaller overlap enlargement; every term of that sum
/// is >= 0, so its computation stops as soon as it reaches the best one, and nothing can
/// beat an overlap enlargement of 0. When areas are so large that the sums could overflow
/// (non-finite values would compare differently), the plain algorithm runs instead.
fn choose_least_overlap<const D: usize>(es: &[Entry<D>], mbr: &Rect<D>, p: usize) -> usize {
    let mut cands = enlargements(es, mbr);
    let bound = es.iter().fold(*mbr, |r, e| r.union(&e.mbr)).area() * (es.len() as f64 + 1.0);
    if !bound.is_finite() {
        keep_least(&mut cands, p);
        return pick_least_overlap(es, mbr, &cands);
    }
    // The common case: the entry of least (enlargement, area) is unique and already
    // contains `mbr`. It is among the candidates, its overlap enlargement is 0 (the
    // least possible) and every other candidate has a larger (enlargement, area), so it
    // wins whatever the candidates' order.
    let mut least = 0;
    let mut unique = true;
    for k in 1..cands.len() {
        match enl_area_cmp(&cands[k], &cands[least]) {
            std::cmp::Ordering::Less => (least, unique) = (k, true),
            std::cmp::Ordering::Equal => unique = false,
            std::cmp::Ordering::Greater => {}
        }
    }
    if unique && es[cands[least].2].mbr.contains(mbr) {
        return cands[least].2;
    }
    keep_least(&mut cands, p);
    let mut order: Vec<(f64, f64, usize, usize)> = cands
        .iter()
        .enumerate()
        .map(|(k, &(enl, area, i))| (enl, area, k, i))
        .collect();
    order.sort_unstable_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then(a.2.cmp(&b.2))
    });
    let mut best: Option<(f64, usize)> = None;
    for &(_, _, _, i) in &order {
        let limit = match best {
            Some((0.0, _)) => break,
            Some((d, _)) => d,
            None => f64::INFINITY,
        };
        let own = es[i].mbr;
        let grown = own.union(mbr);
        // delta = sum over the other entries o of overlap(grown, o) - overlap(own, o);
        // every term is >= +0 (own lies inside grown), and a term is +0 whenever grown
        // does not overlap o. With grown == own every term is 0.
        let mut delta = 0.0;
        if grown != own {
            for (j, o) in es.iter().enumerate() {
                if j == i {
                    continue;
                }
                let g = grown.overlap(&o.mbr);
                if g != 0.0 {
                    delta += g - own.overlap(&o.mbr);
                    if delta >= limit {
                        break;
                    }
                }
            }
        }
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
    es: &[Entry<D>],
    mbr: &Rect<D>,
    cands: &[(f64, f64, usize)],
) -> usize {
    let mut best = (f64::INFINITY, f64::INFINITY, f64::INFINITY, 0);
    for &(enl, area, i) in cands {
        let grown = es[i].mbr.union(mbr);
        let mut delta = 0.0;
        for (j, o) in es.iter().enumerate() {
            if j != i {
                delta += grown.overlap(&o.mbr) - es[i].mbr.overlap(&o.mbr);
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
    pick_least_overlap(es, mbr, &least_overlap_candidates(es, mbr, p))
}

/// Removes the `count` entries whose centres are farthest from the centre of the node's
/// MBR; returns them farthest first.
fn take_farthest<const D: usize>(es: &mut Vec<Entry<D>>, count: usize) -> Vec<Entry<D>> {
    let centre = es.iter().fold(Rect::empty(), |r, e| r.union(&e.mbr));
    // A stable sort by descending distance, each distance computed once (a stable sort's
    // result depends only on the keys and the original order).
    let mut keyed: Vec<(f64, Entry<D>)> = es
        .iter()
        .map(|e| (e.mbr.center_dist2(&centre), *e))
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    es.clear();
    es.extend(keyed.iter().map(|k| k.1));
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
