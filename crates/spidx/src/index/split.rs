//! Node split algorithms. Each takes the `M + 1` entries of an overflowing node and the
//! minimum fill `m`, and returns two groups of at least `m` entries each.
//!
//! * Guttman 1984: `linear`, `quadratic` and `exponential` (exhaustive, small `M` only).
//! * Greene 1989: split along the axis of greatest normalised seed separation, by sorting.
//! * Ang & Tan 1997: a linear split that distributes entries to the nearer border on each
//!   axis and keeps the most even axis (ties: least overlap, then least total area).
//! * Beckmann et al. 1990 (R*-tree): axis of least total margin, then the distribution of
//!   least overlap, then least area.

use serde::{Deserialize, Serialize};

use crate::geom::Rect;
use crate::node::Entry;

/// The largest `M + 1` the exhaustive split accepts (2^(M+1) partitions are examined).
pub const EXPONENTIAL_MAX_ENTRIES: usize = 20;

/// Split algorithms of the R-tree family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitAlgorithm {
    /// Guttman's linear split.
    Linear,
    /// Guttman's quadratic split (the R-tree's default).
    #[default]
    Quadratic,
    /// Guttman's exhaustive split (minimum total area).
    Exponential,
    /// Greene's split.
    Greene,
    /// Ang and Tan's linear split.
    AngTan,
    /// The R*-tree split.
    RStar,
}

impl SplitAlgorithm {
    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Self::Linear => "linear",
            Self::Quadratic => "quadratic",
            Self::Exponential => "exponential",
            Self::Greene => "greene",
            Self::AngTan => "angtan",
            Self::RStar => "rstar",
        }
    }
}

/// Splits `entries` (more than `2·min - 1` of them) into two groups of at least `min`.
pub fn split<const D: usize>(
    algo: SplitAlgorithm,
    entries: Vec<Entry<D>>,
    min: usize,
) -> (Vec<Entry<D>>, Vec<Entry<D>>) {
    debug_assert!(entries.len() >= 2 * min && min >= 1);
    match algo {
        SplitAlgorithm::Linear => {
            let (a, b) = linear_seeds(&entries);
            distribute(entries, a, b, min, false)
        }
        SplitAlgorithm::Quadratic => {
            let (a, b) = quadratic_seeds(&entries);
            distribute(entries, a, b, min, true)
        }
        SplitAlgorithm::Exponential if entries.len() <= EXPONENTIAL_MAX_ENTRIES => {
            exponential(entries, min)
        }
        SplitAlgorithm::Exponential => {
            let (a, b) = quadratic_seeds(&entries);
            distribute(entries, a, b, min, true)
        }
        SplitAlgorithm::Greene => greene(entries, min),
        SplitAlgorithm::AngTan => ang_tan(entries, min),
        SplitAlgorithm::RStar => rstar(entries, min),
    }
}

fn mbr_of<const D: usize>(es: &[Entry<D>]) -> Rect<D> {
    let mut r = Rect::empty();
    for e in es {
        r.expand(&e.mbr);
    }
    r
}

/// Guttman's LinearPickSeeds: on each axis the entry with the highest low side and the one
/// with the lowest high side; keep the pair with the greatest separation normalised by the
/// width of the whole set.
fn linear_seeds<const D: usize>(es: &[Entry<D>]) -> (usize, usize) {
    let all = mbr_of(es);
    let mut best = (f64::NEG_INFINITY, 0, 1);
    for d in 0..D {
        let (mut hi_low, mut lo_high) = (0, 0);
        for (i, e) in es.iter().enumerate() {
            if e.mbr.min[d] > es[hi_low].mbr.min[d] {
                hi_low = i;
            }
            if e.mbr.max[d] < es[lo_high].mbr.max[d] {
                lo_high = i;
            }
        }
        if hi_low == lo_high {
            continue;
        }
        let width = (all.max[d] - all.min[d]).max(f64::MIN_POSITIVE);
        let sep = (es[hi_low].mbr.min[d] - es[lo_high].mbr.max[d]) / width;
        if sep > best.0 {
            best = (sep, lo_high, hi_low);
        }
    }
    (best.1, best.2)
}

/// Guttman's PickSeeds: the pair whose covering box wastes the most area.
fn quadratic_seeds<const D: usize>(es: &[Entry<D>]) -> (usize, usize) {
    let areas: Vec<f64> = es.iter().map(|e| e.mbr.area()).collect();
    let mut best = (f64::NEG_INFINITY, 0, 1);
    for i in 0..es.len() {
        for j in i + 1..es.len() {
            let d = es[i].mbr.union(&es[j].mbr).area() - areas[i] - areas[j];
            if d > best.0 {
                best = (d, i, j);
            }
        }
    }
    (best.1, best.2)
}

/// Guttman's distribution from two seeds. With `pick_next` (quadratic) the next entry is
/// the one with the strongest preference for one group; otherwise entries go in order.
/// Ties go to the group of smaller area, then fewer entries; when one group needs all the
/// remaining entries to reach `min`, it gets them.
fn distribute<const D: usize>(
    mut es: Vec<Entry<D>>,
    a: usize,
    b: usize,
    min: usize,
    pick_next: bool,
) -> (Vec<Entry<D>>, Vec<Entry<D>>) {
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    let eh = es.swap_remove(hi);
    let el = es.swap_remove(lo);
    let (mut g1, mut g2) = (vec![el], vec![eh]);
    let (mut r1, mut r2) = (el.mbr, eh.mbr);
    // PickNext's enlargements of each remaining entry for both groups, kept in step with
    // `es` and recomputed only for a group whose box changed (the same values as computing
    // them afresh every round).
    let enlargements = |r: &Rect<D>, es: &[Entry<D>]| -> Vec<f64> {
        if pick_next {
            es.iter().map(|e| r.enlargement(&e.mbr)).collect()
        } else {
            Vec::new()
        }
    };
    let (mut enl1, mut enl2) = (enlargements(&r1, &es), enlargements(&r2, &es));
    while !es.is_empty() {
        if g1.len() + es.len() == min {
            g1.append(&mut es);
            break;
        }
        if g2.len() + es.len() == min {
            g2.append(&mut es);
            break;
        }
        let idx = if pick_next {
            let mut best = (f64::NEG_INFINITY, 0);
            for (i, (a, b)) in enl1.iter().zip(&enl2).enumerate() {
                let diff = (a - b).abs();
                if diff > best.0 {
                    best = (diff, i);
                }
            }
            best.1
        } else {
            es.len() - 1
        };
        let e = es.swap_remove(idx);
        let (d1, d2) = if pick_next {
            (enl1.swap_remove(idx), enl2.swap_remove(idx))
        } else {
            (r1.enlargement(&e.mbr), r2.enlargement(&e.mbr))
        };
        let to_first = if d1 != d2 {
            d1 < d2
        } else if r1.area() != r2.area() {
            r1.area() < r2.area()
        } else {
            g1.len() <= g2.len()
        };
        if to_first {
            let before = r1;
            r1.expand(&e.mbr);
            g1.push(e);
            if pick_next && r1 != before {
                enl1 = enlargements(&r1, &es);
            }
        } else {
            let before = r2;
            r2.expand(&e.mbr);
            g2.push(e);
            if pick_next && r2 != before {
                enl2 = enlargements(&r2, &es);
            }
        }
    }
    (g1, g2)
}

/// Exhaustive split: the legal partition of least total area (ties: least overlap).
fn exponential<const D: usize>(es: Vec<Entry<D>>, min: usize) -> (Vec<Entry<D>>, Vec<Entry<D>>) {
    let n = es.len();
    // The first legal partition stands until one is strictly better, so that keys which
    // overflow to infinity (or are NaN) still leave a legal partition.
    let mut best: Option<(f64, f64, u32)> = None;
    // Entry 0 always goes to the first group, so each partition is seen once.
    for mask in 0u32..(1 << (n - 1)) {
        let m = (mask << 1) | 1;
        let k = m.count_ones() as usize;
        if k < min || n - k < min {
            continue;
        }
        let (mut r1, mut r2) = (Rect::empty(), Rect::empty());
        for (i, e) in es.iter().enumerate() {
            if m >> i & 1 == 1 {
                r1.expand(&e.mbr);
            } else {
                r2.expand(&e.mbr);
            }
        }
        let key = (r1.area() + r2.area(), r1.overlap(&r2));
        if best.is_none_or(|b| key.0 < b.0 || (key.0 == b.0 && key.1 < b.1)) {
            best = Some((key.0, key.1, m));
        }
    }
    let (_, _, mask) = best.expect("n >= 2 min leaves a legal partition");
    let (mut g1, mut g2) = (Vec::new(), Vec::new());
    for (i, e) in es.into_iter().enumerate() {
        if mask >> i & 1 == 1 {
            g1.push(e);
        } else {
            g2.push(e);
        }
    }
    (g1, g2)
}

/// Greene's split: choose the axis where the quadratic seeds are farthest apart
/// (normalised), sort by the low side on it and cut in the middle; an odd middle entry
/// goes to the group it enlarges least.
fn greene<const D: usize>(mut es: Vec<Entry<D>>, min: usize) -> (Vec<Entry<D>>, Vec<Entry<D>>) {
    let (a, b) = quadratic_seeds(&es);
    let all = mbr_of(&es);
    let mut axis = 0;
    let mut best = f64::NEG_INFINITY;
    for d in 0..D {
        let (ea, eb) = (&es[a].mbr, &es[b].mbr);
        let sep = (ea.min[d].max(eb.min[d]) - ea.max[d].min(eb.max[d]))
            / (all.max[d] - all.min[d]).max(f64::MIN_POSITIVE);
        if sep > best {
            best = sep;
            axis = d;
        }
    }
    es.sort_by(|x, y| x.mbr.min[axis].total_cmp(&y.mbr.min[axis]));
    let n = es.len();
    let half = n / 2;
    if n.is_multiple_of(2) {
        let g2 = es.split_off(half);
        return (es, g2);
    }
    let mut g2 = es.split_off(half + 1);
    let mid = es.pop().expect("odd split has a middle entry");
    let (r1, r2) = (mbr_of(&es), mbr_of(&g2));
    if r1.enlargement(&mid.mbr) <= r2.enlargement(&mid.mbr) {
        es.push(mid);
    } else {
        g2.push(mid);
    }
    debug_assert!(es.len() >= min && g2.len() >= min);
    (es, g2)
}

/// Ang and Tan's linear split: on every axis an entry goes to the side whose border of the
/// node's MBR is nearer; the axis with the most even division wins (ties: least overlap,
/// then least total area). A group short of `min` takes the entries of the other group
/// nearest to the dividing line.
fn ang_tan<const D: usize>(es: Vec<Entry<D>>, min: usize) -> (Vec<Entry<D>>, Vec<Entry<D>>) {
    let all = mbr_of(&es);
    let mut best: Option<((usize, f64, f64), usize)> = None;
    for d in 0..D {
        let left = es
            .iter()
            .filter(|e| e.mbr.min[d] - all.min[d] < all.max[d] - e.mbr.max[d])
            .count();
        let worst = left.max(es.len() - left);
        let (l, r) = side_split(&es, d, &all);
        let (rl, rr) = (mbr_of(&l), mbr_of(&r));
        let key = (worst, rl.overlap(&rr), rl.area() + rr.area());
        if best
            .as_ref()
            .is_none_or(|(k, _)| key.0 < k.0 || (key.0 == k.0 && (key.1, key.2) < (k.1, k.2)))
        {
            best = Some((key, d));
        }
    }
    let axis = best.map(|(_, d)| d).unwrap_or(0);
    let (mut l, mut r) = side_split(&es, axis, &all);
    let centre = |e: &Entry<D>| 0.5 * (e.mbr.min[axis] + e.mbr.max[axis]);
    // Rebalance: move the entries nearest the middle from the larger group.
    l.sort_by(|a, b| centre(a).total_cmp(&centre(b)));
    r.sort_by(|a, b| centre(a).total_cmp(&centre(b)));
    while l.len() < min {
        l.push(r.remove(0));
    }
    while r.len() < min {
        r.insert(0, l.pop().expect("left group is large enough"));
    }
    (l, r)
}

fn side_split<const D: usize>(
    es: &[Entry<D>],
    d: usize,
    all: &Rect<D>,
) -> (Vec<Entry<D>>, Vec<Entry<D>>) {
    es.iter()
        .partition(|e| e.mbr.min[d] - all.min[d] < all.max[d] - e.mbr.max[d])
}

/// The R*-tree split (Beckmann et al. 1990, ChooseSplitAxis and ChooseSplitIndex).
fn rstar<const D: usize>(es: Vec<Entry<D>>, min: usize) -> (Vec<Entry<D>>, Vec<Entry<D>>) {
    let n = es.len();
    let ks = n - 2 * min + 1; // distributions per sort: first group has min-1+k entries, k = 1..=ks
    let mut sorted: Vec<Vec<Entry<D>>> = Vec::with_capacity(2 * D);
    let mut best_axis = (f64::INFINITY, 0);
    let mut prefix = vec![Rect::empty(); n];
    let mut suffix = vec![Rect::empty(); n];
    for d in 0..D {
        let mut margin = 0.0;
        for upper in [false, true] {
            let s = if upper {
                sorted_by_keys(&es, |e| (e.mbr.max[d], e.mbr.min[d]))
            } else {
                sorted_by_keys(&es, |e| (e.mbr.min[d], e.mbr.max[d]))
            };
            fill_prefix_suffix(&s, &mut prefix, &mut suffix);
            for k in 1..=ks {
                let cut = min - 1 + k;
                margin += prefix[cut - 1].margin() + suffix[cut].margin();
            }
            sorted.push(s);
        }
        if margin < best_axis.0 {
            best_axis = (margin, d);
        }
    }
    let d = best_axis.1;
    // The first distribution stands until one is strictly better (keys that overflow to
    // infinity or are NaN must still give a legal cut).
    let mut best: Option<(f64, f64, usize, usize)> = None;
    for which in 0..2 {
        let s = &sorted[2 * d + which];
        fill_prefix_suffix(s, &mut prefix, &mut suffix);
        for k in 1..=ks {
            let cut = min - 1 + k;
            let (a, b) = (&prefix[cut - 1], &suffix[cut]);
            let key = (a.overlap(b), a.area() + b.area());
            if best.is_none_or(|b| key.0 < b.0 || (key.0 == b.0 && key.1 < b.1)) {
                best = Some((key.0, key.1, which, cut));
            }
        }
    }
    let (_, _, which, cut) = best.expect("n >= 2 min leaves a distribution");
    let mut s = std::mem::take(&mut sorted[2 * d + which]);
    let g2 = s.split_off(cut);
    (s, g2)
}

/// `es` sorted by `key` (compared with `total_cmp`), equal keys in their order in `es`:
/// what a stable sort gives, by an unstable sort of the keys and positions (no merge
/// buffer, the entries moved once).
fn sorted_by_keys<const D: usize>(
    es: &[Entry<D>],
    key: impl Fn(&Entry<D>) -> (f64, f64),
) -> Vec<Entry<D>> {
    let mut keyed: Vec<(f64, f64, usize)> = es
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (a, b) = key(e);
            (a, b, i)
        })
        .collect();
    keyed.sort_unstable_by(|x, y| {
        x.0.total_cmp(&y.0)
            .then(x.1.total_cmp(&y.1))
            .then(x.2.cmp(&y.2))
    });
    keyed.iter().map(|k| es[k.2]).collect()
}

fn fill_prefix_suffix<const D: usize>(
    s: &[Entry<D>],
    prefix: &mut [Rect<D>],
    suffix: &mut [Rect<D>],
) {
    let n = s.len();
    let mut acc = Rect::empty();
    for i in 0..n {
        acc.expand(&s[i].mbr);
        prefix[i] = acc;
    }
    let mut acc = Rect::empty();
    for i in (0..n).rev() {
        acc.expand(&s[i].mbr);
        suffix[i] = acc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entries(v: &[(f64, f64, f64, f64)]) -> Vec<Entry<2>> {
        v.iter()
            .enumerate()
            .map(|(i, &(x, y, w, h))| Entry {
                mbr: Rect {
                    min: [x, y],
                    max: [x + w, y + h],
                },
                ptr: i as u64,
                aux: 0,
            })
            .collect()
    }

    const ALL: [SplitAlgorithm; 6] = [
        SplitAlgorithm::Linear,
        SplitAlgorithm::Quadratic,
        SplitAlgorithm::Exponential,
        SplitAlgorithm::Greene,
        SplitAlgorithm::AngTan,
        SplitAlgorithm::RStar,
    ];

    proptest! {
        #[test]
        fn every_split_is_a_legal_partition(
            raw in prop::collection::vec((0.0..100.0f64, 0.0..100.0f64, 0.0..10.0f64, 0.0..10.0f64), 4..18),
            min_frac in 0.1f64..0.5,
            scale in prop::sample::select(vec![1.0, 1e300, 1e-300]),
        ) {
            // At 1e300 every area, margin and overlap overflows to infinity (their sums
            // and differences to NaN); at 1e-300 they underflow to zero.
            let raw: Vec<_> = raw.iter().map(|&(x, y, w, h)| (x * scale, y * scale, w * scale, h * scale)).collect();
            let es = entries(&raw);
            let min = ((es.len() - 1) as f64 * min_frac).ceil().max(1.0) as usize;
            let min = min.min(es.len() / 2);
            for algo in ALL {
                let (a, b) = split(algo, es.clone(), min);
                prop_assert!(a.len() >= min && b.len() >= min, "{algo:?}: {} / {} (min {min})", a.len(), b.len());
                let mut ids: Vec<u64> = a.iter().chain(b.iter()).map(|e| e.ptr).collect();
                ids.sort();
                prop_assert_eq!(ids, (0..es.len() as u64).collect::<Vec<_>>());
            }
        }

        #[test]
        fn identical_entries_still_split(n in 4usize..30) {
            let es = entries(&vec![(1.0, 1.0, 0.0, 0.0); n]);
            for algo in ALL {
                let (a, b) = split(algo, es.clone(), n / 2);
                prop_assert_eq!(a.len() + b.len(), n);
                prop_assert!(a.len() >= n / 2 && b.len() >= n / 2, "{:?}", algo);
            }
        }
    }

    #[test]
    fn splits_separate_two_clusters() {
        let mut raw = vec![];
        for i in 0..5 {
            raw.push((i as f64, 0.0, 1.0, 1.0));
            raw.push((1000.0 + i as f64, 1000.0, 1.0, 1.0));
        }
        for algo in ALL {
            let (a, b) = split(algo, entries(&raw), 3);
            let near = |g: &Vec<Entry<2>>| {
                g.iter().all(|e| e.mbr.min[0] < 500.0) || g.iter().all(|e| e.mbr.min[0] > 500.0)
            };
            assert!(near(&a) && near(&b), "{algo:?} mixed the clusters");
        }
    }

    #[test]
    fn exponential_finds_the_minimum_area() {
        let es = entries(&[
            (0.0, 0.0, 1.0, 1.0),
            (10.0, 10.0, 1.0, 1.0),
            (0.5, 0.5, 1.0, 1.0),
            (10.5, 9.0, 1.0, 1.0),
        ]);
        let (a, b) = split(SplitAlgorithm::Exponential, es, 1);
        let area = mbr_of(&a).area() + mbr_of(&b).area();
        assert!((area - (2.25 + 3.0)).abs() < 1e-9, "{area}");
    }
}
