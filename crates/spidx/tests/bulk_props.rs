//! Bulk loading against one-by-one insertion and brute force: for random object sets, every
//! method (STR, Hilbert packing, OMT), several fill factors, every tree variant and every
//! node store (direct, FAST, eFIND, LCR-tree, RFTL), the bulk-loaded tree passes the
//! checker and its fill check, answers every window and kNN query exactly like the tree
//! built by one-by-one insertion and like a scan, also after reopening; later inserts,
//! deletes and updates keep it sound (checker after every operation), also with coordinates
//! near the ends of `f64`'s range. The Hilbert R-tree is bulk loaded by Hilbert packing in its
//! own key order (STR and OMT are refused for it).

mod model;
mod stores;

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use spidx::geom::Rect;
use spidx::index::bulk::{BulkMethod, BulkOptions};
use spidx::index::{HilbertOptions, IndexKind, MbrPredicate, RStarOptions, SplitAlgorithm, Tree};
use spidx::node::Occupancy;
use spidx::store::{AnyStore, StoreConfig};
use stores::{long_cases, store_configs};

type T = Tree<AnyStore, 2>;

fn open_tree(cfg: &StoreConfig, kind: IndexKind, min_fill: f64, dir: &Path, create: bool) -> T {
    let occ = Occupancy {
        leaf_min: min_fill,
        internal_min: min_fill,
        ..Occupancy::default()
    };
    model::open_tree_with(cfg, kind, &occ, dir, create)
}

fn rect() -> impl Strategy<Value = Rect<2>> {
    (0.0..1000.0f64, 0.0..1000.0f64, 0.0..40.0f64, 0.0..40.0f64).prop_map(|(x, y, w, h)| Rect {
        min: [x.round(), y.round()],
        max: [(x + w).round(), (y + h).round()],
    })
}

/// Every answer the tests compare: windows (intersects) and kNN distances from a few
/// points.
/// The 12 query windows (and their corners, the kNN points) of [`answers`] and [`brute`],
/// scaled by `scale` like the objects.
fn queries(scale: f64) -> impl Iterator<Item = Rect<2>> {
    (0..12u32).map(move |i| {
        let (x, y, s) = (
            f64::from(i * 83 % 900) * scale,
            f64::from(i * 157 % 900) * scale,
            f64::from(20 + i * 37) * scale,
        );
        Rect {
            min: [x, y],
            max: [x + s, y + s],
        }
    })
}

fn answers(t: &mut T, scale: f64) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for q in queries(scale) {
        let mut got = Vec::new();
        t.search(MbrPredicate::Intersects, &q, |e| got.push(e.ptr))
            .unwrap();
        got.sort();
        out.push(got);
        let knn: Vec<u64> = t
            .nearest(q.min, 7)
            .unwrap()
            .iter()
            .map(|n| n.dist.bits())
            .collect();
        out.push(knn);
    }
    out
}

fn brute(live: &BTreeMap<u64, Rect<2>>, scale: f64) -> Vec<Vec<u64>> {
    let mut out = Vec::new();
    for q in queries(scale) {
        out.push(
            live.iter()
                .filter(|(_, r)| r.intersects(&q))
                .map(|(id, _)| *id)
                .collect(),
        );
        let mut d: Vec<u64> = live.values().map(|r| r.min_dist(&q.min).bits()).collect();
        d.sort();
        d.truncate(7);
        out.push(d);
    }
    out
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

fn run(cfg: &StoreConfig, kind: IndexKind, opts: &BulkOptions, min_fill: f64, objs: &[Rect<2>]) {
    run_scaled(cfg, kind, opts, min_fill, objs, 1.0);
}

/// [`run`] on `objs` scaled by `scale` (queries scaled alike).
fn run_scaled(
    cfg: &StoreConfig,
    kind: IndexKind,
    opts: &BulkOptions,
    min_fill: f64,
    objs: &[Rect<2>],
    scale: f64,
) {
    let what = format!("{cfg:?} {kind:?} {opts:?} min {min_fill} scale {scale:e}");
    let scaled: Vec<Rect<2>> = objs
        .iter()
        .map(|r| Rect {
            min: r.min.map(|c| c * scale),
            max: r.max.map(|c| c * scale),
        })
        .collect();
    let objs = &scaled[..];
    let live: BTreeMap<u64, Rect<2>> = objs
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u64 * 3 + 1, *r))
        .collect();
    let want = brute(&live, scale);

    // One by one.
    let dir1 = tempfile::tempdir().unwrap();
    let mut one = open_tree(cfg, kind, min_fill, dir1.path(), true);
    for (&id, r) in &live {
        one.insert(*r, id).unwrap();
    }
    assert_eq!(answers(&mut one, scale), want, "{what}: one-by-one tree");

    // Bulk loaded.
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(cfg, kind, min_fill, dir.path(), true);
    let items: Vec<(Rect<2>, u64)> = live.iter().map(|(id, r)| (*r, *id)).collect();
    let report = t.bulk_load(items, opts).unwrap();
    assert_eq!(
        report.nodes_per_level.len() as u32,
        if live.is_empty() { 0 } else { t.meta().height },
        "{what}"
    );
    let rep = t.check_bulk(opts).unwrap();
    assert!(rep.ok(), "{what}: {:?}", rep.violations);
    assert_eq!(rep.leaf_entries, live.len() as u64, "{what}");
    assert_eq!(answers(&mut t, scale), want, "{what}: bulk-loaded tree");

    // Reopened as another process would.
    t.store_mut().write_back().unwrap();
    t.into_store().unwrap();
    let mut t = open_tree(cfg, kind, min_fill, dir.path(), false);
    let rep = t.check_bulk(opts).unwrap();
    assert!(rep.ok(), "{what} after reopen: {:?}", rep.violations);
    assert_eq!(answers(&mut t, scale), want, "{what}: reopened");

    // The variant's own algorithms maintain it from here.
    let mut live = live;
    let mut next = 1_000_000u64;
    for (i, r) in objs.iter().enumerate().take(60) {
        match i % 3 {
            0 => {
                t.insert(*r, next).unwrap();
                live.insert(next, *r);
                next += 1;
            }
            1 => {
                let (&id, &old) = live.iter().nth(i * 7 % live.len()).unwrap();
                assert!(t.delete(&old, id).unwrap(), "{what}: delete {id}");
                live.remove(&id);
            }
            _ => {
                let (&id, &old) = live.iter().nth(i * 5 % live.len()).unwrap();
                assert!(t.update(&old, *r, id).unwrap(), "{what}: update {id}");
                live.insert(id, *r);
            }
        }
        let rep = t.check().unwrap();
        assert!(rep.ok(), "{what} after op {i}: {:?}", rep.violations);
        if live.is_empty() {
            break;
        }
    }
    assert_eq!(
        answers(&mut t, scale),
        brute(&live, scale),
        "{what}: after updates"
    );
}

const METHODS: [BulkMethod; 3] = [BulkMethod::Str, BulkMethod::Hilbert, BulkMethod::Omt];

/// Hilbert R-trees: the default (bit-pattern grid, 32 bits per axis, s = 2), and a coarse
/// grid over an extent (many equal keys) with s = 3.
fn hilbert_kinds() -> [IndexKind; 2] {
    [
        IndexKind::Hilbert(HilbertOptions::default()),
        IndexKind::Hilbert(HilbertOptions {
            order: Some(3),
            siblings: 3,
            extent: Some([0.0, 1040.0]),
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(8, 64), ..ProptestConfig::default() })]

    /// Every method, under every store (each store with one variant and one method in
    /// turn), with fill factors from the lowest allowed to 100 % and minimum fills of 30 % and 50 %.
    #[test]
    fn bulk_loaded_trees_answer_like_one_by_one_trees(
        objs in prop::collection::vec(rect(), 0..700),
        fill_raw in 0u32..=100,
        low_min in any::<bool>(),
    ) {
        // Fill factors from the lowest one the minimum fill allows (1 KB pages: 25 entries
        // per node, minimum 8 or 13) to 100 %.
        let (min_fill, lo) = if low_min { (0.3, 35) } else { (0.5, 55) };
        let fill = lo + fill_raw % (101 - lo);
        for (i, cfg) in store_configs().iter().enumerate() {
            let opts = BulkOptions { method: METHODS[i % 3], fill: f64::from(fill) / 100.0 };
            run(cfg, kinds()[(i / 3) % 3], &opts, min_fill, &objs);
        }
    }

    /// The Hilbert R-tree packed by Hilbert packing in its own key order, under every
    /// store, with the same fill factors.
    #[test]
    fn bulk_loaded_hilbert_trees_answer_like_one_by_one_trees(
        objs in prop::collection::vec(rect(), 0..700),
        fill_raw in 0u32..=100,
        low_min in any::<bool>(),
    ) {
        let (min_fill, lo) = if low_min { (0.3, 35) } else { (0.5, 55) };
        let fill = lo + fill_raw % (101 - lo);
        for (i, cfg) in store_configs().iter().enumerate() {
            let opts = BulkOptions { method: BulkMethod::Hilbert, fill: f64::from(fill) / 100.0 };
            run(cfg, hilbert_kinds()[i % 2], &opts, min_fill, &objs);
        }
    }

    /// Coordinates near the ends of `f64`'s range (areas, margins and the packing's sort
    /// keys overflow to infinity or underflow to zero): every method with every variant
    /// (and Hilbert packing of the Hilbert R-tree) still packs a sound tree that answers
    /// like brute force and like the tree built one by one, on the direct store.
    #[test]
    fn bulk_loads_at_extreme_magnitudes(
        objs in prop::collection::vec(rect(), 0..300),
        fill_raw in 0u32..=45,
        scale in prop::sample::select(vec![1e300, 1e154, 1e-150, 1e-300]),
    ) {
        let opts = |method| BulkOptions { method, fill: f64::from(55 + fill_raw) / 100.0 };
        let direct = StoreConfig::direct();
        for method in METHODS {
            for kind in kinds() {
                run_scaled(&direct, kind, &opts(method), 0.5, &objs, scale);
            }
        }
        let hilbert = hilbert_kinds()[0];
        run_scaled(&direct, hilbert, &opts(BulkMethod::Hilbert), 0.5, &objs, scale);
    }
}

#[test]
fn every_method_with_every_variant_on_many_objects() {
    let objs: Vec<Rect<2>> = (0..5000u64)
        .map(|i| {
            let x = (i * 7919 % 997) as f64;
            let y = (i * 104_729 % 991) as f64;
            Rect {
                min: [x, y],
                max: [x + (i % 13) as f64, y + (i % 7) as f64],
            }
        })
        .collect();
    for method in METHODS {
        for kind in kinds() {
            for fill in [0.6, 1.0] {
                run(
                    &StoreConfig::direct(),
                    kind,
                    &BulkOptions { method, fill },
                    0.5,
                    &objs,
                );
            }
        }
    }
    for kind in hilbert_kinds() {
        for fill in [0.6, 1.0] {
            let opts = BulkOptions {
                method: BulkMethod::Hilbert,
                fill,
            };
            run(&StoreConfig::direct(), kind, &opts, 0.5, &objs);
        }
    }
}

#[test]
fn a_hilbert_tree_refuses_str_and_omt_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let kind = hilbert_kinds()[0];
    let mut t = open_tree(&StoreConfig::direct(), kind, 0.5, dir.path(), true);
    let objs = vec![(Rect::point([1.0, 1.0]), 1), (Rect::point([5.0, 2.0]), 2)];
    for (method, name) in [(BulkMethod::Str, "STR"), (BulkMethod::Omt, "OMT")] {
        let e = t
            .bulk_load(objs.clone(), &BulkOptions { method, fill: 1.0 })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "which {name} (cutting by coordinates) does not follow"
            )) && e.contains("bulk load it by hilbert"),
            "{e}"
        );
        let rep = t.check().unwrap();
        assert!(rep.ok() && rep.leaf_entries == 0, "{:?}", rep.violations);
    }
    let opts = BulkOptions {
        method: BulkMethod::Hilbert,
        fill: 1.0,
    };
    t.bulk_load(objs, &opts).unwrap();
    let rep = t.check_bulk(&opts).unwrap();
    assert!(rep.ok() && rep.leaf_entries == 2, "{:?}", rep.violations);
}

#[test]
fn bad_bulk_loads_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(&StoreConfig::direct(), kinds()[0], 0.5, dir.path(), true);
    let one = vec![(Rect::point([1.0, 1.0]), 1)];
    for fill in [0.0, 0.2, 1.5, f64::NAN] {
        let e = t
            .bulk_load(
                one.clone(),
                &BulkOptions {
                    method: BulkMethod::Str,
                    fill,
                },
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("fill"), "{e}");
    }
    let bad = vec![(
        Rect {
            min: [2.0, 0.0],
            max: [1.0, 1.0],
        },
        1,
    )];
    let opts = BulkOptions {
        method: BulkMethod::Omt,
        fill: 1.0,
    };
    assert!(t.bulk_load(bad, &opts).is_err());
    t.insert(Rect::point([3.0, 3.0]), 9).unwrap();
    let e = t.bulk_load(one, &opts).unwrap_err().to_string();
    assert!(e.contains("already holds"), "{e}");
    let rep = t.check().unwrap();
    assert!(rep.ok() && rep.leaf_entries == 1, "{:?}", rep.violations);
}
