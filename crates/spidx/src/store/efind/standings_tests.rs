//! The incremental flushing choice ([`Standings`]) against the reference scan of
//! [`flushing`](super::flushing), after random sequences of nodes entering, changing and
//! leaving the buffer, with every policy, unit size, candidate share and temporal control.

use std::collections::{BTreeMap, VecDeque};

use proptest::prelude::*;

use super::config::{EfindConfig, FlushPolicy, Resolved, TemporalControl};
use super::flushing::{self, Candidate, WriteTcCounts};
use super::standings::Standings;
use super::write_buffer::Scores;
use crate::node::PageId;

/// A buffered node of the model: stamp, modifications, level, scores.
type Model = BTreeMap<PageId, (u64, u64, u32, Scores)>;

fn cfg(policy: FlushPolicy, unit: usize, perc: f64, tc: TemporalControl) -> Resolved {
    let mut c = EfindConfig::with_buffer(1 << 20);
    c.flush_policy = policy;
    c.flushing_unit = unit;
    c.temporal_control = tc;
    if policy != FlushPolicy::M {
        c.timestamp_perc = Some(perc);
    }
    if tc.writes() {
        c.min_distance = Some(2);
        c.stride = Some(7);
        c.write_tc_size = Some(4);
    }
    c.resolve(4096).unwrap()
}

/// The reference: the scan over the whole buffer, as the store made it before the
/// standings.
fn reference(
    model: &Model,
    cfg: &Resolved,
    recent: &VecDeque<PageId>,
    counts: &mut WriteTcCounts,
) -> Vec<PageId> {
    let geometry = matches!(cfg.policy, FlushPolicy::Mtha | FlushPolicy::Mthao);
    let all = model
        .iter()
        .map(|(&id, &(stamp, mods, level, s))| Candidate {
            id,
            mods,
            level,
            stamp,
            area: if geometry { s.area } else { None },
            overlap: if geometry { s.overlap } else { None },
        })
        .collect();
    let mut cands = flushing::candidates(all, cfg);
    if cfg.tc.writes() {
        cands = flushing::filter_writes(cands, recent, cfg, counts);
    }
    flushing::best_unit(cands, cfg)
}

/// One change to the buffer.
#[derive(Debug, Clone)]
enum Op {
    /// A node enters or changes (a new stamp, the newest unless `old`).
    Put {
        id: PageId,
        mods: u64,
        level: u32,
        area: u8,
        overlap: u8,
        old: bool,
    },
    /// A node leaves.
    Remove(PageId),
    /// A flushing choice, compared; its unit leaves the buffer.
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..120, 0u64..6, 0u32..3, 0u8..5, 0u8..5, prop::bool::weighted(0.03)).prop_map(
            |(id, mods, level, area, overlap, old)| Op::Put { id, mods, level, area, overlap, old }
        ),
        1 => (0u64..120).prop_map(Op::Remove),
        3 => Just(Op::Flush),
    ]
}

/// Scores with ties, zeros and missing versions (`None`).
fn score(v: u8) -> Option<f64> {
    match v {
        0 => None,
        v => Some(f64::from(v - 1) * 0.5),
    }
}

fn run(ops: &[Op], cfg: &Resolved) {
    let mut s = Standings::default();
    let mut model = Model::new();
    let mut recent = VecDeque::new();
    let (mut got_counts, mut want_counts) = (WriteTcCounts::default(), WriteTcCounts::default());
    let mut clock = 10u64;
    let mut unit = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Put {
                id,
                mods,
                level,
                area,
                overlap,
                old,
            } => {
                clock += 1;
                // An old stamp (as recovery gives) may tie with another node's.
                let stamp = if old { clock % 4 } else { clock };
                let area = score(area);
                let overlap = if cfg.policy == FlushPolicy::Mthao {
                    score(overlap)
                } else {
                    None
                };
                model.insert(id, (stamp, mods, level, Scores { area, overlap }));
                s.put(id, stamp, mods, level);
            }
            Op::Remove(id) => {
                model.remove(&id);
                s.remove(id);
            }
            Op::Flush if model.is_empty() => {}
            Op::Flush => {
                let want = reference(&model, cfg, &recent, &mut want_counts);
                s.choose(cfg, &recent, &mut got_counts, |id| model[&id].3, &mut unit);
                assert_eq!(unit, want, "op {i}");
                assert_eq!(got_counts, want_counts, "op {i}");
                for id in want {
                    model.remove(&id);
                    s.remove(id);
                    if recent.len() == cfg.write_tc_size {
                        recent.pop_front();
                    }
                    recent.push_back(id);
                }
            }
        }
        assert_eq!(s.len(), model.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the changes, the standings choose the unit the reference scan chooses
    /// and count the same cases of the temporal control of writes.
    #[test]
    fn incremental_choice_equals_the_scan(
        ops in prop::collection::vec(op(), 1..400),
        policy in prop::sample::select(FlushPolicy::ALL.to_vec()),
        unit in 1usize..7,
        perc in prop::sample::select(vec![1.0, 10.0, 33.3, 50.0, 100.0]),
        tc in prop::sample::select(vec![TemporalControl::None, TemporalControl::Both]),
    ) {
        run(&ops, &cfg(policy, unit, perc, tc));
    }
}

/// Many changes between choices (the age queue is compacted) and a buffer emptied and
/// filled again.
#[test]
fn long_runs_and_emptied_buffers_choose_as_the_scan() {
    let c = cfg(FlushPolicy::Mthao, 5, 50.0, TemporalControl::Both);
    let mut ops = Vec::new();
    for round in 0..6u64 {
        for k in 0..500u64 {
            let id = (k * 7 + round) % 90;
            ops.push(Op::Put {
                id,
                mods: k % 4,
                level: (k % 3) as u32,
                area: (k % 5) as u8,
                overlap: (k % 4) as u8,
                old: false,
            });
            if k % 50 == 0 {
                ops.push(Op::Flush);
            }
        }
        ops.extend(std::iter::repeat_n(Op::Flush, 25));
    }
    run(&ops, &c);
}

/// The store itself: trees built on eFIND stores with small buffers (flushing at nearly
/// every operation), every policy and temporal control, deletions and a restart (which
/// rebuilds the standings from the recovered buffer). Under test, every flush of the
/// store checks its choice against the reference scan of its write buffer
/// (`EfindPolicy::check_choice`).
#[test]
fn the_store_chooses_as_the_scan_through_a_restart() {
    use crate::cache::CacheConfig;
    use crate::device::memory::{MemoryConfig, MemoryDevice};
    use crate::device::shared::SharedDevice;
    use crate::geom::Rect;
    use crate::index::{IndexKind, SplitAlgorithm, Tree};
    use crate::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
    use crate::store::{AnyStore, StoreConfig};

    const PAGE: usize = 1024;
    let open = |store: &StoreConfig, dev: &SharedDevice, dir: &std::path::Path, create: bool| {
        let layout = NodeLayout::new(LayoutKind::Checked, PAGE, 2).unwrap();
        let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
        let kind = IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        };
        let (dev, none) = (Box::new(dev.clone()), CacheConfig::none());
        if create {
            let s = store.create(dev, &none, layout, Some(dir)).unwrap();
            Tree::<AnyStore, 2>::create(s, cap, kind).unwrap()
        } else {
            let s = store.open(dev, &none, layout, dir).unwrap();
            Tree::<AnyStore, 2>::open(s, cap, kind).unwrap()
        }
    };
    let rect = |i: u64| {
        let x = (i * 7919 % 1000) as f64;
        let y = (i * 104_729 % 997) as f64;
        Rect::new([x, y], [x + (i % 13) as f64, y + (i % 7) as f64]).unwrap()
    };
    for (i, policy) in FlushPolicy::ALL.into_iter().enumerate() {
        for tc in [TemporalControl::Both, TemporalControl::None] {
            let mut c = EfindConfig::with_buffer(8 << 10);
            c.flush_policy = policy;
            c.temporal_control = tc;
            c.flushing_unit = 1 + i % 4;
            if policy != FlushPolicy::M {
                c.timestamp_perc = Some([10.0, 50.0, 100.0][i % 3]);
            }
            if tc.writes() {
                c.min_distance = Some(2);
                c.stride = Some(8);
                c.write_tc_size = Some(4);
            }
            let store = StoreConfig::Efind(c);
            let dir = tempfile::tempdir().unwrap();
            let config = MemoryConfig { capacity: 1 << 26 };
            let dev = SharedDevice::new(Box::new(MemoryDevice::open(&config, PAGE, None).unwrap()));
            let mut t = open(&store, &dev, dir.path(), true);
            for k in 0..800 {
                t.insert(rect(k), k).unwrap();
            }
            for k in (0..800).step_by(3) {
                assert!(t.delete(&rect(k), k).unwrap());
            }
            // A crash: no write-back; the log rebuilds the buffer.
            drop(t);
            let mut t = open(&store, &dev, dir.path(), false);
            for k in 800..1200 {
                t.insert(rect(k), k).unwrap();
            }
            assert!(t.check().unwrap().ok(), "{policy:?} {tc:?}");
        }
    }
}
