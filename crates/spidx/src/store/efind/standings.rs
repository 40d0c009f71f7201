//! The write buffer's standings for eFIND's flushing manager (Carniel et al. 2019, Goal 2 and
//! Goal 4; the rules are in [`flushing`](super::flushing)), kept up to date as nodes enter,
//! change and leave the buffer, so that a flushing operation chooses its unit without
//! scanning, sorting or looking up every buffered node.
//!
//! Once the write buffer is full nearly every tree operation flushes, and a scan of the whole
//! buffer per flush made the choice the store's main CPU cost at 1 M objects. The
//! standings keep, per buffered node, what the policies score (modifications, level, time of
//! the last change, and the cached area/overlap scores of its entry versions) and, as
//! ordered structures:
//!
//! * the buffered nodes by age (`(stamp, id)`, oldest first), with a boundary after the
//!   oldest ones: the candidates of step 1 are the nodes before the boundary, which moves
//!   by the few nodes that changed since the last flush;
//! * the candidates as a set of page ids (a bit set: page ids are dense, allocated from 0
//!   upwards), read in page order to cut the units of step 3 with no sort.
//!
//! The temporal control of writes (step 2) only looks at the candidates within reach of the
//! few recently flushed pages; every other candidate is strided. The scores of step 4 are
//! computed over the kept candidates in page order exactly as the reference scan does (same
//! floating-point operations in the same order), so the choice (and its tie-breaking, the
//! lowest page ids) is the scan's; `tests` compares the two after random change sequences.
//! What those passes read of a candidate is kept apart (32 bytes a node): its area/overlap
//! scores and its step-4 score as last computed, with the *epoch* of the largest area and
//! overlap it divided by. A first, light pass finds the largest values; the second scores
//! the candidates and adds up the unit sums. Under `m`, `mt` and `mth` (no largest values)
//! a candidate's score is computed again only when it changed; under `mtha` and `mthao`
//! also when the largest values changed, which at 1 M objects is nearly every choice (the
//! best units hold the largest nodes, and they are the ones flushed).
//!
//! Nothing here is logged: recovery rebuilds the write buffer and then the standings from
//! it.

use std::collections::VecDeque;

use super::config::{FlushPolicy, Resolved};
use super::flushing::WriteTcCounts;
use super::write_buffer::Scores;
use crate::node::PageId;
use crate::store::buffered::bits::Bits;

/// What the flushing policies score of one buffered node.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Position of the node's entry in the age queue (absolute: see `Standings::head`).
    pos: u64,
    /// Logical time of the last change.
    stamp: u64,
    /// Modification count.
    mods: u64,
    /// Level (0 = leaf).
    level: u32,
}

/// What the pass over the candidates of a flushing choice reads of a node, apart from the
/// rest of its [`Slot`] so that the pass reads little memory per candidate.
#[derive(Debug, Clone, Copy, Default)]
struct Hot {
    /// The area score (if `flags` has `AREA`).
    area: f64,
    /// The overlap score (if `flags` has `OVERLAP`).
    overlap: f64,
    /// The node's step-4 score, computed with the largest area and overlap of epoch
    /// `epoch` (0: none; see `Standings::epoch`).
    score: f64,
    /// The epoch `score` belongs to.
    epoch: u32,
    /// `SCORED` (the area/overlap scores were computed since the node last changed),
    /// `AREA`, `OVERLAP` (they are `Some`).
    flags: u8,
}

const SCORED: u8 = 1;
const AREA: u8 = 2;
const OVERLAP: u8 = 4;

impl Hot {
    fn set_scores(&mut self, s: Scores) {
        self.flags = SCORED;
        if let Some(a) = s.area {
            self.area = a;
            self.flags |= AREA;
        }
        if let Some(o) = s.overlap {
            self.overlap = o;
            self.flags |= OVERLAP;
        }
    }

    fn scores(&self) -> Scores {
        Scores {
            area: (self.flags & AREA != 0).then_some(self.area),
            overlap: (self.flags & OVERLAP != 0).then_some(self.overlap),
        }
    }
}

/// The buffered nodes' standings. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Standings {
    /// By page id (dense); meaningful for buffered pages only.
    slots: Vec<Slot>,
    /// By page id, beside `slots`.
    hot: Vec<Hot>,
    /// Buffered pages.
    buffered: Bits,
    /// Buffered pages before the age boundary: the candidates.
    cand: Bits,
    /// `(stamp, id)` of buffered nodes in increasing order, with dead entries (of nodes
    /// that changed or left since): the entry at position `p` is live if its node is
    /// buffered and its slot's `pos` is `p`.
    age: VecDeque<(u64, PageId)>,
    /// Absolute position of `age[0]` (positions survive popping the front).
    head: u64,
    /// Absolute position of the first entry after the candidates.
    boundary: u64,
    /// Buffered nodes.
    live: usize,
    /// Candidates.
    ncand: usize,
    /// `age` is out of order (a node re-entered with an old stamp, e.g. at recovery): it
    /// is rebuilt before the next choice.
    stale: bool,
    /// Scratch: the kept candidates, in page order.
    kept: Vec<PageId>,
    /// The largest area and overlap (as bits) the cached scores of epoch `epoch` divide
    /// by: a node's score only changes with them or with the node (which resets it).
    maxes: (u64, u64),
    /// The current epoch of cached scores (starts at 1 once a choice has been made).
    epoch: u32,
    /// Scratch: the candidates dropped by the temporal control of writes, in page order.
    dropped: Vec<PageId>,
    /// Scratch: the reach of the recently flushed pages.
    zones: Vec<(PageId, PageId)>,
    /// Scratch: the recently flushed pages, sorted.
    sorted: Vec<PageId>,
}

impl Standings {
    /// Buffered nodes.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Node `id` entered the buffer or changed: it now has `mods` modifications, level
    /// `level` and last changed at `stamp`; its cached scores are forgotten.
    pub(crate) fn put(&mut self, id: PageId, stamp: u64, mods: u64, level: u32) {
        if self.buffered.contains(id) {
            self.remove(id);
        }
        let i = usize::try_from(id).expect("page ids fit in memory");
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Slot::default());
            self.hot.resize(i + 1, Hot::default());
        }
        let key = (stamp, id);
        self.slots[i] = Slot {
            pos: self.head + self.age.len() as u64,
            stamp,
            mods,
            level,
        };
        self.hot[i] = Hot::default();
        self.buffered.insert(id);
        self.live += 1;
        if self.stale {
            return;
        }
        if self.age.back().is_some_and(|&b| b >= key) {
            self.stale = true;
            return;
        }
        self.age.push_back(key);
        if self.age.len() > 2 * self.live + 64 {
            self.compact();
        }
    }

    /// Node `id` left the buffer (flushed or deleted).
    pub(crate) fn remove(&mut self, id: PageId) {
        if !self.buffered.contains(id) {
            return;
        }
        if !self.stale && self.slots[id as usize].pos < self.boundary {
            self.cand.remove(id);
            self.ncand -= 1;
        }
        self.buffered.remove(id);
        self.live -= 1;
    }

    fn is_live(&self, pos: u64, id: PageId) -> bool {
        self.buffered.contains(id) && self.slots[id as usize].pos == pos
    }

    /// Drops the dead entries of the age queue, keeping the candidates.
    fn compact(&mut self) {
        let mut age = VecDeque::with_capacity(2 * self.live + 64);
        let mut boundary = None;
        for (i, &(stamp, id)) in self.age.iter().enumerate() {
            let pos = self.head + i as u64;
            if pos == self.boundary {
                boundary = Some(age.len() as u64);
            }
            if self.is_live(pos, id) {
                self.slots[id as usize].pos = age.len() as u64;
                age.push_back((stamp, id));
            }
        }
        self.boundary = boundary.unwrap_or(age.len() as u64);
        self.head = 0;
        self.age = age;
    }

    /// Rebuilds the age queue from the slots (no candidates yet).
    fn rebuild(&mut self) {
        let mut keys = Vec::with_capacity(self.live);
        let slots = &self.slots;
        self.buffered
            .each(|id| keys.push((slots[id as usize].stamp, id)));
        keys.sort_unstable();
        self.age.clear();
        for (i, &(_, id)) in keys.iter().enumerate() {
            self.slots[id as usize].pos = i as u64;
        }
        self.age.extend(keys);
        self.head = 0;
        self.boundary = 0;
        self.ncand = 0;
        self.cand.clear();
        self.stale = false;
    }

    /// Moves the age boundary so that the `want` oldest nodes are the candidates.
    fn settle(&mut self, want: usize) {
        if self.stale {
            self.rebuild();
        }
        while let Some(&(_, id)) = self.age.front() {
            if self.is_live(self.head, id) {
                break;
            }
            self.age.pop_front();
            self.head += 1;
        }
        self.boundary = self.boundary.max(self.head);
        while self.ncand < want {
            let (_, id) = self.age[(self.boundary - self.head) as usize];
            if self.is_live(self.boundary, id) {
                self.cand.insert(id);
                self.ncand += 1;
            }
            self.boundary += 1;
        }
        while self.ncand > want {
            self.boundary -= 1;
            let (_, id) = self.age[(self.boundary - self.head) as usize];
            if self.is_live(self.boundary, id) {
                self.cand.remove(id);
                self.ncand -= 1;
            }
        }
    }

    /// One flushing choice (steps 1 to 4 of [`flushing`](super::flushing)): the best
    /// unit's pages, in page order, into `out`. `recent` is the FIFO of recently flushed
    /// pages (used if the temporal control of writes is on, whose cases are counted in
    /// `counts`); `score_of(id)` computes a buffered node's area/overlap scores (asked only
    /// by policies `mtha` and `mthao`, once per node change).
    pub(crate) fn choose(
        &mut self,
        cfg: &Resolved,
        recent: &VecDeque<PageId>,
        counts: &mut WriteTcCounts,
        mut score_of: impl FnMut(PageId) -> Scores,
        out: &mut Vec<PageId>,
    ) {
        out.clear();
        // Step 1: the `want` oldest nodes.
        let n = self.live;
        let want = if cfg.policy == FlushPolicy::M {
            n
        } else {
            ((n as f64 * cfg.timestamp_perc / 100.0).ceil() as usize)
                .max(cfg.unit)
                .min(n)
        };
        self.settle(want);
        // Step 2: only candidates within reach of a recent flush can be sequential or
        // dropped; the others are strided.
        self.dropped.clear();
        if cfg.tc.writes() && !recent.is_empty() {
            let reach = cfg.min_distance.max(cfg.stride.saturating_sub(1));
            self.zones.clear();
            self.sorted.clear();
            self.sorted.extend(recent.iter().copied());
            self.sorted.sort_unstable();
            for &f in recent {
                let (lo, hi) = (f.saturating_sub(reach), f.saturating_add(reach));
                self.zones.push((lo, hi));
            }
            self.zones.sort_unstable();
            let mut seq = 0usize;
            // The zones in page order, each page visited once: `from` is the first page
            // not yet visited.
            let mut from: PageId = 0;
            for &(lo, hi) in &self.zones {
                let lo = lo.max(from);
                if lo > hi {
                    continue;
                }
                let (dropped, sorted) = (&mut self.dropped, &self.sorted);
                self.cand.each_in(lo, hi, |p| {
                    // The nearest recent flush: the closest below or above `p`.
                    let i = sorted.partition_point(|&f| f < p);
                    let below = i.checked_sub(1).map(|j| p - sorted[j]);
                    let above = sorted.get(i).map(|&f| f - p);
                    let nearest = match (below, above) {
                        (Some(b), Some(a)) => b.min(a),
                        (b, a) => b.or(a).unwrap_or(u64::MAX),
                    };
                    debug_assert_eq!(
                        Some(nearest),
                        recent.iter().map(|&f| f.abs_diff(p)).min(),
                        "nearest recent flush of page {p}"
                    );
                    if nearest <= cfg.min_distance {
                        seq += 1;
                    } else if nearest < cfg.stride {
                        dropped.push(p);
                    }
                });
                if hi == PageId::MAX {
                    break;
                }
                from = hi + 1;
            }
            if self.dropped.len() == self.ncand {
                counts.fallbacks += 1;
                self.dropped.clear();
            } else {
                counts.sequential += seq as u64;
                counts.strided += (self.ncand - seq - self.dropped.len()) as u64;
                counts.dropped += self.dropped.len() as u64;
            }
        }
        // Steps 3 and 4 in two passes over the kept candidates in page order. The first
        // collects them, computes the area and overlap of those that changed since and finds
        // the largest area and overlap the ratios divide by. The second scores them and sums
        // the units cut in page order (the first best one wins). A score is kept with the
        // largest area and overlap it was computed with (its epoch): if this choice's are
        // the last one's, only the candidates that changed since are scored again.
        let geometry = matches!(cfg.policy, FlushPolicy::Mtha | FlushPolicy::Mthao);
        let (mut max_area, mut max_overlap) = (0.0f64, 0.0f64);
        if self.epoch == 0 || self.epoch == u32::MAX {
            // (Epochs start again before they wrap: no cached score is of epoch 0.)
            self.hot.iter_mut().for_each(|h| h.epoch = 0);
            self.epoch = 1;
        }
        self.kept.clear();
        let (kept, hot) = (&mut self.kept, &mut self.hot);
        let mut next_drop = self.dropped.iter().peekable();
        self.cand.each(|id| {
            if next_drop.next_if_eq(&&id).is_some() {
                return;
            }
            kept.push(id);
            if geometry {
                let h = &mut hot[id as usize];
                if h.flags & SCORED == 0 {
                    h.set_scores(score_of(id));
                }
                if h.flags & AREA != 0 {
                    max_area = max_area.max(h.area);
                }
                if h.flags & OVERLAP != 0 {
                    max_overlap = max_overlap.max(h.overlap);
                }
            }
        });
        let maxes = (max_area.to_bits(), max_overlap.to_bits());
        if maxes != self.maxes {
            // Other largest values: a new epoch, every kept candidate is scored again.
            self.maxes = maxes;
            self.epoch += 1;
        }
        let epoch = self.epoch;
        let mut units = UnitSums::new(cfg.unit);
        for &id in &self.kept {
            let h = &mut self.hot[id as usize];
            if h.epoch != epoch {
                h.score = score(
                    cfg.policy,
                    &self.slots[id as usize],
                    h,
                    max_area,
                    max_overlap,
                );
                h.epoch = epoch;
            }
            units.add(h.score);
        }
        let best = units.finish();
        if let Some(start) = best {
            let end = (start + cfg.unit).min(self.kept.len());
            out.extend_from_slice(&self.kept[start..end]);
        }
    }
}

/// A kept candidate's step-4 score (its ratios dividing by `max_area` and `max_overlap`):
/// the same floating-point operations, in the same order, as the reference scan.
fn score(policy: FlushPolicy, slot: &Slot, hot: &Hot, max_area: f64, max_overlap: f64) -> f64 {
    let ratio = |v: Option<f64>, max: f64| match v {
        Some(v) if max > 0.0 => v / max,
        _ => 1.0,
    };
    let m = slot.mods as f64;
    let h = f64::from(slot.level) + 1.0;
    let s = hot.scores();
    match policy {
        FlushPolicy::M | FlushPolicy::Mt => m,
        FlushPolicy::Mth => m * h,
        FlushPolicy::Mtha => m * h * ratio(s.area, max_area),
        FlushPolicy::Mthao => m * h * ratio(s.area, max_area) * ratio(s.overlap, max_overlap),
    }
}

/// The sums of the scores of consecutive units of `unit` kept candidates (the last one
/// possibly shorter), each summed in order as `Iterator::sum` does, and the first unit
/// with the highest sum.
struct UnitSums {
    unit: usize,
    /// Candidates added.
    n: usize,
    /// Candidates in the current unit so far.
    filled: usize,
    /// The sum of the current unit so far.
    sum: f64,
    /// The best complete unit so far: its sum and the position of its first candidate.
    best: Option<(f64, usize)>,
}

impl UnitSums {
    fn new(unit: usize) -> Self {
        UnitSums {
            unit,
            n: 0,
            filled: 0,
            sum: -0.0,
            best: None,
        }
    }

    /// Adds the next candidate's score.
    #[inline]
    fn add(&mut self, score: f64) {
        self.sum += score;
        self.n += 1;
        self.filled += 1;
        if self.filled == self.unit {
            self.close(self.n - self.unit);
        }
    }

    fn close(&mut self, start: usize) {
        if self.best.is_none_or(|(b, _)| self.sum > b) {
            self.best = Some((self.sum, start));
        }
        self.sum = -0.0;
        self.filled = 0;
    }

    /// The position of the best unit's first candidate (`None`: no candidate).
    fn finish(mut self) -> Option<usize> {
        if self.filled > 0 {
            self.close(self.n - self.filled);
        }
        self.best.map(|(_, start)| start)
    }
}
