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
//!
//! Nothing here is logged: recovery rebuilds the write buffer and then the standings from
//! it.

use std::collections::VecDeque;

use super::bits::Bits;
use super::config::{FlushPolicy, Resolved};
use super::flushing::WriteTcCounts;
use super::write_buffer::Scores;
use crate::node::PageId;

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
    /// The area/overlap scores, once computed since the node last changed.
    scores: Option<Scores>,
}

/// A kept candidate as step 4 scores it.
#[derive(Debug, Clone, Copy)]
struct Kept {
    id: PageId,
    /// Modifications.
    m: f64,
    /// Level + 1.
    h: f64,
    area: Option<f64>,
    overlap: Option<f64>,
}

/// The buffered nodes' standings. See the module documentation.
#[derive(Debug, Default)]
pub struct Standings {
    /// By page id (dense); meaningful for buffered pages only.
    slots: Vec<Slot>,
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
    kept: Vec<Kept>,
    /// Scratch: the candidates dropped by the temporal control of writes, in page order.
    dropped: Vec<PageId>,
    /// Scratch: the reach of the recently flushed pages.
    zones: Vec<(PageId, PageId)>,
}

impl Standings {
    /// Buffered nodes.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no node is buffered.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Node `id` entered the buffer or changed: it now has `mods` modifications, level
    /// `level` and last changed at `stamp`; its cached scores are forgotten.
    pub fn put(&mut self, id: PageId, stamp: u64, mods: u64, level: u32) {
        if self.buffered.contains(id) {
            self.remove(id);
        }
        let i = usize::try_from(id).expect("page ids fit in memory");
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Slot::default());
        }
        let key = (stamp, id);
        self.slots[i] = Slot {
            pos: self.head + self.age.len() as u64,
            stamp,
            mods,
            level,
            scores: None,
        };
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
    pub fn remove(&mut self, id: PageId) {
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

    /// Forgets every node.
    pub fn clear(&mut self) {
        *self = Standings::default();
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
    pub fn choose(
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
                let dropped = &mut self.dropped;
                self.cand.each_in(lo, hi, |p| {
                    let nearest = recent.iter().map(|&f| f.abs_diff(p)).min();
                    let nearest = nearest.unwrap_or(u64::MAX);
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
        // One pass over the kept candidates in page order: what step 4 scores of each (its
        // area and overlap computed if it changed since), and the largest area and overlap
        // its ratios divide by.
        let geometry = matches!(cfg.policy, FlushPolicy::Mtha | FlushPolicy::Mthao);
        let (mut max_area, mut max_overlap) = (0.0f64, 0.0f64);
        self.kept.clear();
        let (kept, slots) = (&mut self.kept, &mut self.slots);
        let mut next_drop = self.dropped.iter().peekable();
        self.cand.each(|id| {
            if next_drop.next_if_eq(&&id).is_some() {
                return;
            }
            let slot = &mut slots[id as usize];
            let s = if geometry {
                let s = *slot.scores.get_or_insert_with(|| score_of(id));
                if let Some(a) = s.area {
                    max_area = max_area.max(a);
                }
                if let Some(o) = s.overlap {
                    max_overlap = max_overlap.max(o);
                }
                s
            } else {
                Scores {
                    area: None,
                    overlap: None,
                }
            };
            kept.push(Kept {
                id,
                m: slot.mods as f64,
                h: f64::from(slot.level) + 1.0,
                area: s.area,
                overlap: s.overlap,
            });
        });
        let ratio = |v: Option<f64>, max: f64| match v {
            Some(v) if max > 0.0 => v / max,
            _ => 1.0,
        };
        let score = |k: &Kept| -> f64 {
            let (m, h) = (k.m, k.h);
            match cfg.policy {
                FlushPolicy::M | FlushPolicy::Mt => m,
                FlushPolicy::Mth => m * h,
                FlushPolicy::Mtha => m * h * ratio(k.area, max_area),
                FlushPolicy::Mthao => {
                    m * h * ratio(k.area, max_area) * ratio(k.overlap, max_overlap)
                }
            }
        };
        // Steps 3 and 4: units cut in page order, the first best one wins.
        let mut best: Option<(f64, &[Kept])> = None;
        for unit in self.kept.chunks(cfg.unit) {
            let s: f64 = unit.iter().map(score).sum();
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, unit));
            }
        }
        if let Some((_, unit)) = best {
            out.extend(unit.iter().map(|k| k.id));
        }
    }
}
