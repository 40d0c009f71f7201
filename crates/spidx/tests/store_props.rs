//! The index property tests (brute force, checker after every step, reopen) over every node
//! store configuration through `AnyStore` (`tests/stores`: the direct store, FAST with every
//! flushing policy and flushing units 1 to 5, eFIND, the LCR-tree, RFTL, with buffers small enough
//! that flushes really happen) and every log placement (same, uncounted, separate).
//! The trees are the same code whatever the store.

mod model;
mod stores;

use std::collections::BTreeMap;

use model::{op, open_tree, Model, Op, MIX};
use proptest::prelude::*;
use spidx::geom::Rect;
use spidx::index::{IndexKind, RStarOptions, SplitAlgorithm};
use spidx::store::efind::EfindStats;
use spidx::store::fast::FastStats;
use spidx::store::lcr::LcrStats;
use spidx::store::rftl::RftlStats;
use spidx::store::StoreConfig;
use stores::{long_cases, placement_configs, store_configs};

fn run_ops(cfg: &StoreConfig, kind: IndexKind, ops: &[Op<2>]) {
    let what = format!("{cfg:?} {kind:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), true);
    let mut m = Model::new();
    m.apply_all(&mut t, ops, &what);
    m.check_answers(&mut t);
    // The buffer's flush at the end of a workload changes nothing visible.
    t.store_mut().write_back().unwrap();
    m.check_answers(&mut t);
    let rep = t.store().report();
    if let Some(b) = &rep.buffered {
        assert_eq!(b.gauges.bytes, 0, "{what}: write_back empties the buffer");
        assert_eq!(b.gauges.new_nodes + b.gauges.modified_nodes, 0, "{what}");
    }
    // Reopen in a fresh store and device, as another process would.
    t.into_store().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), false);
    m.check(&mut t, &what, "reopen");
    m.check_answers(&mut t);
}

fn kinds() -> [IndexKind; 3] {
    [
        IndexKind::RTree {
            split: SplitAlgorithm::Linear,
        },
        IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        },
        IndexKind::RStar(RStarOptions::default()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(6, 64), ..ProptestConfig::default() })]

    #[test]
    fn every_store_matches_brute_force(ops in prop::collection::vec(op::<2>(MIX), 1..250)) {
        for (i, cfg) in store_configs().iter().enumerate() {
            // Every store with one tree kind in turn, so each kind meets each policy.
            let kind = kinds()[i % 3];
            run_ops(cfg, kind, &ops);
        }
    }

    #[test]
    fn every_log_placement_matches_brute_force(ops in prop::collection::vec(op::<2>(MIX), 1..250)) {
        // Uncounted and separate logs, in memory-backed index directories: answers, the
        // checker after every step, and the reopen (from `log.uncounted`, from the
        // separate device's saved state) as for the default placement.
        for (i, cfg) in placement_configs().iter().enumerate() {
            run_ops(cfg, kinds()[(i + 1) % 3], &ops);
        }
    }
}

#[test]
fn fast_flushes_happen_and_are_counted() {
    // A fixed workload large enough to overflow an 8 KB buffer many times.
    let ops: Vec<Op<2>> = (0..600)
        .map(|i| {
            let x = (i * 7919 % 1000) as f64;
            let y = (i * 104_729 % 1000) as f64;
            if i % 7 == 6 {
                Op::Delete(i * 31)
            } else {
                Op::Insert(Rect {
                    min: [x, y],
                    max: [x + 5.0, y + 5.0],
                })
            }
        })
        .collect();
    for cfg in store_configs().iter().skip(1) {
        let dir = tempfile::tempdir().unwrap();
        let mut t = open_tree(cfg, kinds()[2], dir.path(), true);
        let mut live = BTreeMap::new();
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Insert(r) => {
                    t.insert(*r, i as u64).unwrap();
                    live.insert(i as u64, *r);
                }
                Op::Delete(k) => {
                    let (&id, &r) = live.iter().nth(k % live.len()).unwrap();
                    assert!(t.delete(&r, id).unwrap());
                    live.remove(&id);
                }
                _ => unreachable!(),
            }
        }
        let report = t.store().report();
        // The shared statistics, whatever the policy.
        let b = report.buffered.clone().unwrap();
        assert!(b.flushes > 0 && b.flushed_nodes > 0, "{cfg:?}: {b:?}");
        assert!(b.flush_write_requests > 0 && b.flush_write_requests <= b.flushed_nodes);
        assert!(
            b.gauges.bytes <= b.settings.write_buffer,
            "{cfg:?}: the buffer fits after the operation's flushes: {b:?}"
        );
        assert!(b.gauges.peak_bytes >= b.gauges.bytes, "{cfg:?}: {b:?}");
        assert!(b.log.commits >= ops.len() as u64, "{cfg:?}");
        assert!(b.image_bytes >= b.image_records, "{cfg:?}: {b:?}");
        // The policy's own report is under its kind, and only there.
        assert_eq!(report.policy.keys().collect::<Vec<_>>(), vec![&report.kind]);
        let fast = report.policy_report::<FastStats>();
        assert_eq!(fast.is_some(), report.kind == "fast");
        let efind = report.policy_report::<EfindStats>();
        assert_eq!(efind.is_some(), report.kind == "efind");
        let lcr = report.policy_report::<LcrStats>();
        assert_eq!(lcr.is_some(), report.kind == "lcr");
        if let Some(l) = lcr {
            // Modified nodes went to their log pages; reads of them read those pages.
            assert!(
                l.log_page_writes > 0 && l.log_page_reads > 0,
                "{cfg:?}: {l:?}"
            );
            assert_eq!(b.settings.flush_policy, "flush-all");
            assert_eq!(l.gauges.mapping_bytes, 16 * l.gauges.log_pages);
            assert!(
                report.gauges.pages_in_use > l.gauges.log_pages,
                "{cfg:?}: log pages are allocated pages: {l:?}"
            );
        }
        let rftl = report.policy_report::<RftlStats>();
        assert_eq!(rftl.is_some(), report.kind == "rftl");
        if let Some(r) = rftl {
            // Units reached shared pages, nodes were assembled from them, nodes spanning
            // too many pages were compacted, and out-of-place writes logged no images.
            assert!(
                r.units_written > r.unit_pages_written && r.unit_page_reads > 0,
                "{cfg:?}: {r:?}"
            );
            assert!(
                r.compactions > 0 && r.unit_pages_freed > 0,
                "{cfg:?}: {r:?}"
            );
            assert_eq!(b.image_records, 0, "{cfg:?}: {b:?}");
            assert_eq!(b.settings.flush_policy, "flush-all");
            let g = r.gauges;
            assert!(
                g.max_node_pages <= r.settings.max_pages.max(2),
                "{cfg:?}: {r:?}"
            );
            assert!(g.live_units >= g.mapped_nodes && g.unit_pages > 0, "{r:?}");
            assert!(
                report.gauges.pages_in_use > g.unit_pages,
                "{cfg:?}: unit pages are allocated pages: {r:?}"
            );
        }
        if fast.is_some() {
            assert_eq!(b.settings.write_buffer, 8 << 10);
            assert!(b.log.compactions > 0 || b.log.bytes < (1 << 19), "{cfg:?}");
        }
        assert!(t.check().unwrap().ok());
    }
}
