//! eFIND's flushing manager (Carniel et al. 2019, Goal 2 and Goal 4): which buffered nodes
//! a flushing operation writes.
//!
//! 1. **Candidates**: the oldest `timestamp_perc` % of the buffered nodes by time of last
//!    change (at least `flushing_unit` of them, or all if fewer); policy `m` takes them all.
//! 2. **Temporal control of writes** (optional): a candidate page `p` is *sequential* if
//!    some recently flushed page `f` has `|p − f| ≤ min_distance`, *strided* if every
//!    recently flushed page is at least `stride` pages away; other candidates (close enough
//!    to a recent write to interfere, too far to be sequential) are dropped. If that drops
//!    every candidate, the unfiltered candidates are used (a *fallback*, counted).
//! 3. **Units**: the candidates sorted by page id, cut into groups of `flushing_unit`.
//! 4. **Scores** (summed over a unit's nodes `n`; `mods(n)` modifications, `h(n)` level, 0
//!    for leaves):
//!    - `m`, `mt`: `mods(n)` (they differ in the candidates of step 1);
//!    - `mth`: `mods(n) · (h(n) + 1)`;
//!    - `mtha`: `mods(n) · (h(n) + 1) · a(n)`, `a(n)` = area of the union of the MBRs of
//!      `n`'s buffered entry versions divided by the largest such area among the candidates;
//!    - `mthao`: `mtha · o(n)`, `o(n)` = sum of the pairwise overlap areas of those MBRs
//!      divided by the largest such sum among the candidates.
//!
//!    A ratio whose largest value is 0 (no candidate has any area or overlap), and the ratio
//!    of a node with no buffered entry version, is 1, so a policy never scores everything 0.
//!    The unit with the highest score is written (the lowest page ids among equal scores).
//!
//! The store makes these choices with [`Standings`](super::standings::Standings), kept up
//! to date as nodes change so that a choice scans nothing. The functions here are the rules
//! written as a scan of the whole buffer, kept (in tests) as the reference the standings
//! are checked against.

#[cfg(test)]
use std::collections::VecDeque;

#[cfg(test)]
use super::config::{FlushPolicy, Resolved};
#[cfg(test)]
use crate::node::PageId;

/// What the flushing manager needs to know of a buffered node (the reference scan's input).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate {
    /// Node page.
    pub id: PageId,
    /// Modification count.
    pub mods: u64,
    /// Level (0 = leaf).
    pub level: u32,
    /// Logical time of the last change.
    pub stamp: u64,
    /// Area of the union of the buffered versions' MBRs (`None`: no version).
    pub area: Option<f64>,
    /// Pairwise overlap of the buffered versions' MBRs (`None`: no version).
    pub overlap: Option<f64>,
}

/// How often each case of the temporal control of writes applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WriteTcCounts {
    /// Candidates kept as sequential to a recent flush.
    pub sequential: u64,
    /// Candidates kept as strided from every recent flush.
    pub strided: u64,
    /// Candidates dropped.
    pub dropped: u64,
    /// Flushes in which the filter dropped every candidate and all were used.
    pub fallbacks: u64,
}

/// Step 1: the candidates: the oldest buffered nodes, in no particular order.
#[cfg(test)]
pub(crate) fn candidates(mut all: Vec<Candidate>, cfg: &Resolved) -> Vec<Candidate> {
    if cfg.policy == FlushPolicy::M {
        return all;
    }
    let n = all.len();
    let want = ((n as f64 * cfg.timestamp_perc / 100.0).ceil() as usize)
        .max(cfg.unit)
        .min(n);
    // The `want` oldest (keys are unique: no ties), not sorted: every later step is
    // independent of their order (the units are cut in page order).
    if want > 0 && want < n {
        all.select_nth_unstable_by_key(want - 1, |c| (c.stamp, c.id));
    }
    all.truncate(want);
    all
}

/// Step 2: the temporal control of writes against the FIFO `recent` of flushed pages.
#[cfg(test)]
pub(crate) fn filter_writes(
    cands: Vec<Candidate>,
    recent: &VecDeque<PageId>,
    cfg: &Resolved,
    counts: &mut WriteTcCounts,
) -> Vec<Candidate> {
    if recent.is_empty() {
        return cands;
    }
    let mut kept = Vec::with_capacity(cands.len());
    let (mut seq, mut strided) = (0, 0);
    for c in &cands {
        let nearest = recent
            .iter()
            .map(|&f| f.abs_diff(c.id))
            .min()
            .unwrap_or(u64::MAX);
        if nearest <= cfg.min_distance {
            seq += 1;
            kept.push(*c);
        } else if nearest >= cfg.stride {
            strided += 1;
            kept.push(*c);
        }
    }
    if kept.is_empty() {
        counts.fallbacks += 1;
        return cands;
    }
    counts.sequential += seq;
    counts.strided += strided;
    counts.dropped += (cands.len() - kept.len()) as u64;
    kept
}

/// Steps 3 and 4: the best unit's pages, in page order.
#[cfg(test)]
pub(crate) fn best_unit(mut cands: Vec<Candidate>, cfg: &Resolved) -> Vec<PageId> {
    cands.sort_by_key(|c| c.id);
    let max_of =
        |f: fn(&Candidate) -> Option<f64>| cands.iter().filter_map(f).fold(0.0f64, f64::max);
    let max_area = max_of(|c| c.area);
    let max_overlap = max_of(|c| c.overlap);
    let ratio = |v: Option<f64>, max: f64| match v {
        Some(v) if max > 0.0 => v / max,
        _ => 1.0,
    };
    let score = |c: &Candidate| -> f64 {
        let m = c.mods as f64;
        let h = f64::from(c.level) + 1.0;
        match cfg.policy {
            FlushPolicy::M | FlushPolicy::Mt => m,
            FlushPolicy::Mth => m * h,
            FlushPolicy::Mtha => m * h * ratio(c.area, max_area),
            FlushPolicy::Mthao => m * h * ratio(c.area, max_area) * ratio(c.overlap, max_overlap),
        }
    };
    let mut best: Option<(f64, &[Candidate])> = None;
    for unit in cands.chunks(cfg.unit) {
        let s: f64 = unit.iter().map(score).sum();
        if best.is_none_or(|(b, _)| s > b) {
            best = Some((s, unit));
        }
    }
    best.map(|(_, u)| u.iter().map(|c| c.id).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::efind::config::EfindConfig;

    fn cfg(policy: FlushPolicy, unit: usize, perc: f64) -> Resolved {
        let mut c = EfindConfig::with_buffer(1 << 20);
        c.flush_policy = policy;
        c.flushing_unit = unit;
        if policy != FlushPolicy::M {
            c.timestamp_perc = Some(perc);
        }
        c.resolve(4096).unwrap()
    }

    fn cand(id: u64, mods: u64, level: u32, stamp: u64, area: f64, overlap: f64) -> Candidate {
        Candidate {
            id,
            mods,
            level,
            stamp,
            area: Some(area),
            overlap: Some(overlap),
        }
    }

    /// A crafted buffer on which each policy picks a different unit (unit size 1).
    #[test]
    fn every_policy_scores_and_they_differ() {
        let buffer = vec![
            // page, mods, level, stamp, area, overlap
            cand(10, 50, 0, 100, 1.0, 1.0), // most modified, but young: only `m` takes it
            cand(20, 10, 0, 1, 0.5, 1.0),   // old, most modified of the old: `mt`; half area
            cand(30, 6, 1, 2, 0.1, 1.0),    // internal: `mth` (12), small area kills `mtha`
            cand(40, 5, 1, 3, 1.0, 0.05),   // `mtha` (10 > 5, 1.2, 9), tiny overlap kills `mthao`
            cand(50, 9, 0, 4, 1.0, 1.0),    // `mthao`: 9 against 5, 1.2, 0.5
        ];
        let mut picks = Vec::new();
        for p in FlushPolicy::ALL {
            let c = cfg(p, 1, 80.0);
            let unit = best_unit(candidates(buffer.clone(), &c), &c);
            picks.push((p, unit));
        }
        let got: Vec<u64> = picks.iter().map(|(_, u)| u[0]).collect();
        assert_eq!(got, [10, 20, 30, 40, 50], "{picks:?}");
    }

    #[test]
    fn units_are_cut_in_page_order_and_candidates_are_the_oldest() {
        let buffer: Vec<Candidate> = (0..10)
            .map(|i| cand(100 - i, i + 1, 0, i, 1.0, 1.0))
            .collect();
        let c = cfg(FlushPolicy::Mt, 3, 50.0);
        let cands = candidates(buffer.clone(), &c);
        assert_eq!(cands.len(), 5, "the oldest half");
        assert_eq!(best_unit(cands, &c), vec![96, 97, 98]);
        let c = cfg(FlushPolicy::M, 3, 50.0);
        assert_eq!(best_unit(candidates(buffer, &c), &c), vec![91, 92, 93]);
    }

    #[test]
    fn write_temporal_control_keeps_sequential_and_strided_pages() {
        let mut c = EfindConfig::with_buffer(1 << 20);
        c.min_distance = Some(2);
        c.stride = Some(10);
        let c = c.resolve(4096).unwrap();
        let cands: Vec<Candidate> = [50, 52, 55, 70]
            .iter()
            .map(|&i| cand(i, 1, 0, 0, 1.0, 1.0))
            .collect();
        let recent: VecDeque<PageId> = [50].into_iter().collect();
        let mut counts = WriteTcCounts::default();
        let kept = filter_writes(cands.clone(), &recent, &c, &mut counts);
        let ids: Vec<u64> = kept.iter().map(|c| c.id).collect();
        assert_eq!(ids, [50, 52, 70]);
        assert_eq!(
            (counts.sequential, counts.strided, counts.dropped),
            (2, 1, 1)
        );
        let recent: VecDeque<PageId> = [60].into_iter().collect();
        let only = vec![cand(55, 1, 0, 0, 1.0, 1.0)];
        assert_eq!(filter_writes(only, &recent, &c, &mut counts).len(), 1);
        assert_eq!(counts.fallbacks, 1);
    }
}
