//! The standing of every flushing unit in FAST's write buffer (Sarwat et al. 2013, section
//! 4.2: a unit's modification count and the time of its latest change), kept up to date as
//! buffered nodes change and leave, so that the `fast` and `fast-star` flush policies choose a
//! unit without scanning the buffer.
//!
//! Once the buffer is full nearly every operation flushes, and the buffer holds thousands
//! of nodes in a 1 M-object tree: a scan per flush made the choice the largest CPU cost of a
//! FAST build. Here a change costs a few ordered-set updates, and a choice reads the units
//! in two orders (most modified first, least recently changed first) only as far as a unit
//! further down either order could still score higher: the threshold algorithm of Fagin,
//! Lotem and Naor (2003) over the two criteria of FAST*'s score, which grows with each.
//! The choices are exactly those of the scan (same scores, same tie-breaking: the lowest
//! unit among equals), tested against it in [`flush`](super::flush).

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::cache::KeyMap;
use crate::node::PageId;
use crate::store::buffered::write_buffer::{BufNode, BufferWatch};
use crate::store::buffered::NodeBuffer;

/// A unit's standing for the flush policies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UnitInfo {
    /// Modifications counted on the unit's buffered nodes.
    pub mods: u64,
    /// Operation number of the unit's latest change.
    pub last: u64,
}

/// Standings of the units holding buffered nodes, by unit number (page id / unit size),
/// with the units ordered by modifications and by last change. See the module
/// documentation.
#[derive(Debug, Default)]
pub(crate) struct UnitStandings {
    units: KeyMap<UnitInfo>,
    /// (most modifications first, lowest unit first)
    by_mods: BTreeSet<(Reverse<u64>, u64)>,
    /// (oldest latest change first, lowest unit first)
    by_last: BTreeSet<(u64, u64)>,
}

impl UnitStandings {
    /// Units holding buffered nodes.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.units.len()
    }

    /// The standing of unit `u`, if it holds buffered nodes.
    pub(crate) fn get(&self, u: u64) -> Option<UnitInfo> {
        self.units.get(&u).copied()
    }

    /// Sets unit `u`'s standing (`None`: it holds no buffered node any more).
    pub(crate) fn set(&mut self, u: u64, info: Option<UnitInfo>) {
        let old = match info {
            Some(new) => self.units.insert(u, new),
            None => self.units.remove(&u),
        };
        if old == info {
            return;
        }
        let (old_mods, old_last) = (old.map(|o| o.mods), old.map(|o| o.last));
        let (new_mods, new_last) = (info.map(|o| o.mods), info.map(|o| o.last));
        if old_mods != new_mods {
            if let Some(m) = old_mods {
                self.by_mods.remove(&(Reverse(m), u));
            }
            if let Some(m) = new_mods {
                self.by_mods.insert((Reverse(m), u));
            }
        }
        if old_last != new_last {
            if let Some(l) = old_last {
                self.by_last.remove(&(l, u));
            }
            if let Some(l) = new_last {
                self.by_last.insert((l, u));
            }
        }
    }

    /// The unit with most modifications (the lowest among equals): FAST's choice.
    pub(crate) fn most_modified(&self) -> Option<u64> {
        self.by_mods.first().map(|&(_, u)| u)
    }

    /// The least recently changed unit, the most modified among those changed last at the
    /// same operation (the lowest among equals): FESTIval's FAST* (`fast-star-festival`).
    /// FESTIval scores a unit `mods − timestamp_ms`; millisecond timestamps dwarf any
    /// modification count, so its ranking is "oldest first", modifications breaking ties
    /// within one millisecond. spidx's clock is the operation number, so ties are the
    /// units one operation changed together (a split's nodes).
    pub(crate) fn oldest_first(&self) -> Option<u64> {
        let &(oldest, _) = self.by_last.first()?;
        let mut best: Option<(u64, u64)> = None;
        for &(last, u) in &self.by_last {
            if last != oldest {
                break;
            }
            let mods = self.units[&u].mods;
            if best.is_none_or(|(bm, _)| mods > bm) {
                best = Some((mods, u));
            }
        }
        best.map(|(_, u)| u)
    }

    /// The unit with the highest FAST* score at operation `now` (the lowest among equals).
    /// The score is `fast_star_score(info, max_mods, now, oldest)` over the units, where
    /// `max_mods` is the largest modification count and `oldest` the earliest latest
    /// change; units are read in both orders until neither can hold a better one.
    pub(crate) fn fast_star(&self, now: u64) -> Option<u64> {
        let &(Reverse(max_mods), _) = self.by_mods.first()?;
        let &(oldest, _) = self.by_last.first()?;
        let score = |info: UnitInfo| fast_star_score(info, max_mods, now, oldest);
        let mut best: Option<(f64, u64)> = None;
        let consider = |u: u64, best: &mut Option<(f64, u64)>| {
            let s = score(self.units[&u]);
            if best.is_none_or(|(bs, bu)| s > bs || (s == bs && u < bu)) {
                *best = Some((s, u));
            }
        };
        let (mut by_mods, mut by_last) = (self.by_mods.iter(), self.by_last.iter());
        loop {
            // The frontier of each order: no unit not yet read has more modifications or an
            // older latest change, so none scores above `bound` (the score grows with both,
            // and so does its floating-point evaluation).
            let m = by_mods.next();
            let l = by_last.next();
            let (Some(&(Reverse(fm), um)), Some(&(fl, ul))) = (m, l) else {
                // Both orders hold every unit: one ended, so all were read.
                break;
            };
            consider(um, &mut best);
            consider(ul, &mut best);
            let bound = score(UnitInfo { mods: fm, last: fl });
            // Equal scores continue: an unread unit could tie with a lower unit number.
            if best.is_some_and(|(bs, _)| bs > bound) {
                break;
            }
        }
        best.map(|(_, u)| u)
    }
}

/// FAST*'s score of a unit (see [`flush`](super::flush)): `mods / max_mods + (now − last) /
/// (now − oldest)`, a term whose denominator is 0 counting 0.
pub(crate) fn fast_star_score(info: UnitInfo, max_mods: u64, now: u64, oldest: u64) -> f64 {
    let max_mods = max_mods as f64;
    let span = now.saturating_sub(oldest) as f64;
    let m = if max_mods > 0.0 {
        info.mods as f64 / max_mods
    } else {
        0.0
    };
    let a = if span > 0.0 {
        now.saturating_sub(info.last) as f64 / span
    } else {
        0.0
    };
    m + a
}

/// FAST's watch over the write buffer: the standing of every flushing unit of `unit`
/// pages, brought up to date as buffered nodes change and leave.
#[derive(Debug)]
pub struct UnitWatch {
    unit: u64,
    standings: UnitStandings,
}

impl UnitWatch {
    /// Standings of the flushing units of `unit` pages (at least 1).
    pub fn new(unit: u32) -> Self {
        UnitWatch {
            unit: u64::from(unit.max(1)),
            standings: UnitStandings::default(),
        }
    }

    /// The units' standings.
    pub(crate) fn standings(&self) -> &UnitStandings {
        &self.standings
    }
}

impl BufferWatch for UnitWatch {
    fn changed(&mut self, id: PageId, old_mods: u64, new_mods: u64, op: u64) {
        let u = id / self.unit;
        let mut info = self.standings.get(u).unwrap_or_default();
        info.mods = info.mods - old_mods + new_mods;
        info.last = info.last.max(op);
        self.standings.set(u, Some(info));
    }

    fn removed(&mut self, id: PageId, mods: u64, nodes: &NodeBuffer<BufNode>) {
        let (f, u) = (self.unit, id / self.unit);
        let mut rest = nodes.range(u * f..(u + 1) * f).peekable();
        if rest.peek().is_none() {
            self.standings.set(u, None);
            return;
        }
        let last = rest.map(|(_, n)| n.last_op).max().unwrap_or(0);
        let mut info = self.standings.get(u).unwrap_or_default();
        info.mods -= mods;
        info.last = last;
        self.standings.set(u, Some(info));
    }
}
