//! FAST's flushing operations (Sarwat et al. 2013, section 4.2): which flushing unit to
//! write when the buffer is full, and how a unit reaches the device.
//!
//! A flushing unit is the fixed group of `flushing_unit` consecutive page ids
//! `[u·F, (u+1)·F)`. Policies, over the units holding buffered nodes:
//! * `flush-all`: every unit (the buffer is emptied);
//! * `random`: a unit chosen uniformly by a generator seeded with
//!   [`RANDOM_POLICY_SEED`](super::RANDOM_POLICY_SEED) (deterministic runs);
//! * `fast`: the unit whose buffered nodes have the most modifications (ties: lowest unit);
//! * `fast-star` (FAST*, the paper's intent: most modifications *and* least recently
//!   modified): the unit with the highest score
//!   `mods(u) / max_v mods(v) + (now − last(u)) / (now − min_v last(v))`, where `mods` is the
//!   modification count of the unit's buffered nodes, `last(u)` the operation number of its
//!   latest change and `now` the current operation number; each term lies in [0, 1] and a
//!   term whose denominator is 0 counts 0 (ties: lowest unit). Both criteria weigh equally;
//!   a raw `count − timestamp_ms` would let the timestamp dominate and degenerate into
//!   "oldest first".
//! * `fast-star-festival` (FESTIval's FAST*, the one the seeds measured): the unit
//!   `mods(u) − timestamp_ms(u)` ranks highest, which is in effect the least recently
//!   modified unit, modifications breaking ties (see [`UnitStandings::oldest_first`]).
//!
//! [`UnitStandings::oldest_first`]: super::standings::UnitStandings::oldest_first
//!
//! Writing a unit (the skeleton's [`Core::write_unit`] with
//! [`UnitDurability::WrittenRecord`]): the modified nodes whose recovery needs their old
//! page get their full image logged and made durable first (torn-write protection: one
//! sequential log write per flush carrying up to F pages); then each contiguous run of the
//! unit's live buffered nodes is written with one device request; the device is synced
//! (unless the log sync is `none`) and a `Written` record naming the unit's nodes is
//! committed. In-use pages of the unit with nothing to write are counted
//! (`unit_pages_not_buffered`).

use std::collections::BTreeMap;

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::standings::UnitInfo;
use super::{replayed_page, Buffer, FastPolicy};
use crate::node::PageId;
use crate::store::buffered::{Core, LoggedPolicy, NodeStatus, Parts, UnitDurability};
use crate::{Error, Result};

/// How the flushing unit to write is chosen. See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlushPolicy {
    /// Write every unit.
    FlushAll,
    /// A seeded random unit.
    Random,
    /// The unit with most modifications.
    Fast,
    /// Most modifications and least recently modified (FAST*).
    FastStar,
    /// FESTIval's FAST*: least recently modified first, modifications breaking ties.
    FastStarFestival,
}

impl std::fmt::Display for FlushPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FlushPolicy::FlushAll => "flush-all",
            FlushPolicy::Random => "random",
            FlushPolicy::Fast => "fast",
            FlushPolicy::FastStar => "fast-star",
            FlushPolicy::FastStarFestival => "fast-star-festival",
        })
    }
}

impl std::str::FromStr for FlushPolicy {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "flush-all" => Ok(FlushPolicy::FlushAll),
            "random" => Ok(FlushPolicy::Random),
            "fast" => Ok(FlushPolicy::Fast),
            "fast-star" => Ok(FlushPolicy::FastStar),
            "fast-star-festival" => Ok(FlushPolicy::FastStarFestival),
            other => Err(Error::invalid(
                "FAST flush policy",
                format!(
                    "'{other}'; choose flush-all, random, fast, fast-star or fast-star-festival"
                ),
            )),
        }
    }
}

impl FastPolicy {
    /// Every unit holding buffered nodes with its standing, from a scan of the buffer
    /// (`flush-all` and `random`, which take all units or any; the other policies read the
    /// buffer's kept standings).
    fn units(&self, lb: &Buffer) -> BTreeMap<u64, UnitInfo> {
        let f = u64::from(self.params.flushing_unit);
        let mut units: BTreeMap<u64, UnitInfo> = BTreeMap::new();
        for (id, n) in lb.buf.iter() {
            let u = units.entry(id / f).or_default();
            u.mods += n.mods;
            u.last = u.last.max(n.last_op);
        }
        units
    }

    /// Picks the unit to flush by the policy (`flush-all` is handled by the caller).
    fn choose_unit(&mut self, lb: &Buffer) -> Option<u64> {
        let standings = lb.buf.watch().standings();
        match self.params.flush_policy {
            FlushPolicy::FlushAll => self.units(lb).keys().next().copied(),
            FlushPolicy::Random => {
                let units = self.units(lb);
                if units.is_empty() {
                    return None;
                }
                let i = self.rng.gen_range(0..units.len());
                units.keys().nth(i).copied()
            }
            FlushPolicy::Fast => standings.most_modified(),
            FlushPolicy::FastStar => standings.fast_star(lb.op),
            FlushPolicy::FastStarFestival => standings.oldest_first(),
        }
    }

    /// Flushes units until the buffer fits its capacity again.
    pub(super) fn flush_chosen_units(&mut self, lb: &mut Buffer, core: &mut Core) -> Result<()> {
        if self.params.flush_policy == FlushPolicy::FlushAll {
            return self.flush_every_unit(lb, core);
        }
        while lb.buf.bytes() as u64 > lb.capacity {
            let Some(u) = self.choose_unit(lb) else { break };
            self.flush_unit(lb, core, u)?;
        }
        Ok(())
    }

    /// Flushes every unit holding buffered nodes.
    pub(super) fn flush_every_unit(&mut self, lb: &mut Buffer, core: &mut Core) -> Result<()> {
        let units: Vec<u64> = self.units(lb).keys().copied().collect();
        for u in units {
            self.flush_unit(lb, core, u)?;
        }
        Ok(())
    }

    /// Writes unit `u`'s buffered nodes to their pages. See the module documentation.
    pub(super) fn flush_unit(&mut self, lb: &mut Buffer, core: &mut Core, u: u64) -> Result<()> {
        let f = u64::from(self.params.flushing_unit);
        let range = u * f..(u + 1) * f;
        let members: Vec<(PageId, NodeStatus, u32, bool)> = lb
            .buf
            .range(range.clone())
            .map(|(id, n)| (id, n.status, n.level, n.image.is_some()))
            .collect();
        if members.is_empty() {
            return Ok(());
        }
        // Materialize the live nodes; log images of those built on their old page.
        let mut unit = core.unit(members.len());
        for &(id, status, level, has_image) in &members {
            if status == NodeStatus::Deleted {
                continue;
            }
            let (page, _) = replayed_page(lb, core, id, level)?;
            if status == NodeStatus::Modified && !has_image {
                core.log_image(id, level, &page)?;
            }
            unit.push(id, level, &page);
        }
        let written = unit.ids().len() as u64;
        let all: Vec<PageId> = members.iter().map(|m| m.0).collect();
        core.write_unit(&unit, UnitDurability::WrittenRecord { members: all })?;
        core.recycle_unit(unit);
        for &(id, status, _, _) in &members {
            lb.buf.remove(id);
            // Read from its page from now on: the replayed copy is not needed any more.
            lb.nodes.forget(id);
            if status == NodeStatus::Deleted {
                self.stats.flushed_deleted_nodes += 1;
            }
        }
        let in_use = range.filter(|p| core.header.in_use(*p)).count() as u64;
        self.stats.unit_pages_not_buffered += in_use.saturating_sub(written);
        // Images make flushes log much more than the buffer frees: compact between units.
        if core.log.needs_compaction() {
            self.compact_log(Parts { core, lb })?;
        }
        Ok(())
    }
}

/// The reference for the kept standings' choices: the best unit of a map built by a scan,
/// by `score` (the first in unit order among equals).
#[cfg(test)]
fn best(units: &BTreeMap<u64, UnitInfo>, score: impl Fn(&UnitInfo) -> f64) -> Option<u64> {
    let mut best: Option<(u64, f64)> = None;
    for (&u, info) in units {
        let s = score(info);
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((u, s));
        }
    }
    best.map(|(u, _)| u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Rect;
    use crate::node::Entry;
    use crate::store::buffered::tests::{layout, mem, open_on};
    use crate::store::fast::{FastOptions, FastStore};
    use crate::store::{NodeChange, NodeStore};

    fn store(policy: FlushPolicy) -> FastStore {
        store_with(policy, 2)
    }

    fn store_with(policy: FlushPolicy, flushing_unit: u32) -> FastStore {
        let params = FastOptions {
            log_size: Some(16 << 20),
            ..FastOptions::new(1 << 20, flushing_unit, policy)
        };
        let devices = (&mem(1 << 20), &mem(16 << 20));
        open_on(super::FastPolicy::new(params), layout(), devices, false)
    }

    fn entry(i: u64) -> Entry<2> {
        Entry {
            mbr: Rect {
                min: [i as f64, 0.0],
                max: [i as f64 + 1.0, 1.0],
            },
            ptr: i,
            aux: 0,
        }
    }

    /// Units (of 2 pages): A = pages 0-1 with 10 modifications, last changed at operation
    /// 9; B = pages 2-3 with 8, last changed at operation 1; C = pages 4-5 with 2 (their
    /// creations), at operation 0. Now = 10.
    fn scenario(policy: FlushPolicy) -> FastStore {
        let mut s = store(policy);
        let ids: Vec<PageId> = (0..6)
            .map(|_| NodeStore::<2>::create(&mut s, 0, &[]).unwrap())
            .collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4, 5]);
        // Each unit's two creations count 2 modifications.
        NodeStore::<2>::end_operation(&mut s).unwrap(); // op 0 -> 1
        let push = |s: &mut FastStore, id, n: u64| {
            for i in 0..n {
                NodeStore::<2>::modify(s, id, 0, &[NodeChange::Push(entry(i))]).unwrap();
            }
        };
        push(&mut s, 2, 6); // B: 2 creations + 6 = 8, last at op 1
        for _ in 1..9 {
            NodeStore::<2>::end_operation(&mut s).unwrap();
        }
        push(&mut s, 0, 8); // A: 2 creations + 8 = 10, last at op 9
        NodeStore::<2>::end_operation(&mut s).unwrap(); // now = 10
        s
    }

    #[test]
    fn fast_takes_the_most_modified_unit_and_fast_star_weighs_age_equally() {
        let choose = |p| {
            let mut s = scenario(p);
            let l = s.parts_mut().0;
            l.policy.choose_unit(&l.lb)
        };
        assert_eq!(choose(FlushPolicy::Fast), Some(0));
        // FAST*: A = 10/10 + (10-9)/10 = 1.1; B = 8/10 + (10-1)/10 = 1.7;
        // C = 2/10 + (10-0)/10 = 1.2 (C is the oldest: "oldest first" would take it).
        assert_eq!(choose(FlushPolicy::FastStar), Some(1));
        // FESTIval's FAST*: the oldest unit, C, whatever its few modifications.
        assert_eq!(choose(FlushPolicy::FastStarFestival), Some(2));
    }

    /// The standings kept as nodes change and leave equal those of a scan of the buffer,
    /// and so do the `fast` and `fast-star` choices read from them, whatever the unit size
    /// and the sequence of creations, changes, rewrites, deletions, operations and flushes;
    /// the log snapshot encoded from the borrowed buffer equals the owned records'.
    #[test]
    fn kept_standings_and_choices_equal_a_scan_of_the_buffer() {
        use super::super::standings::fast_star_score;
        use rand::{Rng, SeedableRng};
        for (seed, unit) in [(1u64, 1u32), (2, 2), (3, 3), (4, 5), (5, 7), (6, 16)] {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut s = store_with(FlushPolicy::FastStar, unit);
            let mut live: Vec<PageId> = Vec::new();
            for step in 0..1500u64 {
                let e = [entry(step)];
                match rng.gen_range(0..100) {
                    _ if live.is_empty() => {
                        live.push(NodeStore::<2>::create(&mut s, 0, &e).unwrap());
                    }
                    0..=39 => {
                        // Sparse ids too: some units hold one buffered node, some none.
                        let id = live[rng.gen_range(0..live.len()) / 3 * 3 % live.len()];
                        let c = [NodeChange::Set {
                            pos: 0,
                            entry: e[0],
                        }];
                        NodeStore::<2>::modify(&mut s, id, 0, &c).unwrap();
                    }
                    40..=49 => live.push(NodeStore::<2>::create(&mut s, 0, &e).unwrap()),
                    50..=57 => {
                        let id = live.swap_remove(rng.gen_range(0..live.len()));
                        NodeStore::<2>::delete(&mut s, id, 0).unwrap();
                    }
                    58..=65 => {
                        let id = live[rng.gen_range(0..live.len())];
                        NodeStore::<2>::rewrite(&mut s, id, 0, &[e[0], e[0]][..1]).unwrap();
                    }
                    66..=93 => NodeStore::<2>::end_operation(&mut s).unwrap(),
                    _ => {
                        let (p, core) = s.parts_mut();
                        let units = p.policy.units(&p.lb);
                        if !units.is_empty() {
                            let u = *units.keys().nth(rng.gen_range(0..units.len())).unwrap();
                            p.policy.flush_unit(&mut p.lb, core, u).unwrap();
                        }
                    }
                }
                let p = s.parts_mut().0;
                let built = p.policy.units(&p.lb);
                let kept = p.lb.buf.watch().standings();
                assert_eq!(kept.len(), built.len(), "units at step {step}");
                for (&u, info) in &built {
                    assert_eq!(kept.get(u), Some(*info), "unit {u} at step {step}");
                }
                let now = p.lb.op;
                let max_mods = built.values().map(|i| i.mods).max().unwrap_or(0);
                let oldest = built.values().map(|i| i.last).min().unwrap_or(0);
                let star = |i: &UnitInfo| fast_star_score(*i, max_mods, now, oldest);
                assert_eq!(kept.fast_star(now), best(&built, star), "step {step}");
                let by_mods = |i: &UnitInfo| i.mods as f64;
                assert_eq!(kept.most_modified(), best(&built, by_mods), "step {step}");
                // FESTIval's `mods − timestamp`, with a timestamp that dwarfs any count.
                let festival = |i: &UnitInfo| i.mods as f64 - (i.last as f64) * 1e9;
                assert_eq!(kept.oldest_first(), best(&built, festival), "step {step}");
                // The compacted log written from the borrowed buffer is the owned records'.
                if step % 25 == 0 {
                    let format = crate::store::buffered::RecordFormat::Fixed;
                    let encode = |rs: &mut dyn Iterator<Item = Vec<u8>>| rs.collect::<Vec<_>>();
                    let owned = encode(
                        &mut p
                            .lb
                            .buf
                            .snapshot_records()
                            .iter()
                            .map(|r| r.encode(format).unwrap()),
                    );
                    let borrowed = encode(&mut p.lb.buf.snapshot().map(|r| {
                        let mut out = Vec::new();
                        r.encode_into(format, &mut out).unwrap();
                        out
                    }));
                    assert_eq!(owned, borrowed, "snapshot at step {step}");
                }
            }
        }
    }

    #[test]
    fn random_is_deterministic_and_flush_all_empties_the_buffer() {
        let picks = |_| {
            let mut s = scenario(FlushPolicy::Random);
            (0..5)
                .map(|_| {
                    let l = s.parts_mut().0;
                    l.policy.choose_unit(&l.lb)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(0), picks(1));
        let mut s = scenario(FlushPolicy::FlushAll);
        let (p, core) = s.parts_mut();
        let lb = &mut p.lb;
        p.policy.flush_all(Parts { core, lb }).unwrap();
        assert!(p.lb.buf.is_empty());
        let r = &core.counts;
        assert_eq!((r.flushes, r.flushed_nodes), (3, 6));
        assert_eq!(
            r.flush_write_requests, 3,
            "each unit's 2 contiguous pages in one request"
        );
    }

    #[test]
    fn policies_parse_and_print() {
        for p in [
            "flush-all",
            "random",
            "fast",
            "fast-star",
            "fast-star-festival",
        ] {
            assert_eq!(p.parse::<FlushPolicy>().unwrap().to_string(), p);
        }
        let e = "fast*".parse::<FlushPolicy>().unwrap_err().to_string();
        assert!(
            e.contains("choose flush-all, random, fast, fast-star or fast-star-festival"),
            "{e}"
        );
    }
}
