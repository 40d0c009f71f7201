//! Property tests of the FOR-tree (Jin et al. 2015) against brute force: random inserts,
//! deletes, updates and queries under every node store (direct, FAST, eFIND, LCR-tree,
//! RFTL), with merge thresholds from "merge at once" to "almost never" and with the
//! published defect on and off; after every operation the checker passes (multi-page nodes
//! included: no page reached twice, parent entries cover all pages, no page more than the
//! entries need) and every query kind answers like a scan of the live objects, also after
//! reopening. Also: the defect (an insert-only build grows the root's chain of overflow
//! nodes without bound when insertions are not counted) and its fix, the chain surviving a
//! reopen, and a corrupted chain refused.

mod model;
mod stores;

use model::{op, open_tree, Mix, Model, Op, MIX, PAGE};
use proptest::prelude::*;
use spidx::geom::Rect;
use spidx::index::Tree;
use spidx::index::{ForTreeOptions, IndexKind, MbrPredicate};
use spidx::node::{Capacity, Entry, LayoutKind, Occupancy};
use spidx::store::{AnyStore, NodeChange, NodeStore, StoreConfig};
use stores::{long_cases, store_configs};

/// Mostly inserts (chains of overflow nodes grow), more windows than the default mix.
const FORTREE_MIX: Mix = Mix {
    insert: 8,
    window: 2,
    side: 50.0,
    max_k: 15,
    ..MIX
};

fn run_ops(cfg: &StoreConfig, o: ForTreeOptions, ops: &[Op<2>]) {
    let kind = IndexKind::ForTree(o);
    let what = format!("{cfg:?} {o:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), true);
    let mut m = Model::new();
    m.apply_all(&mut t, ops, &what);
    let span = t.max_node_pages().unwrap();
    // Reopened in a fresh store and device, as another process would.
    t.store_mut().write_back().unwrap();
    t.into_store().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), false);
    m.check(&mut t, &what, "reopen");
    assert_eq!(
        t.max_node_pages().unwrap(),
        span,
        "{what}: chains after reopen"
    );
    m.check_answers(&mut t);
    // And it goes on growing and shrinking after the reopen.
    for i in 0..40u64 {
        let x = (i * 97 % 1000) as f64;
        let r = Rect {
            min: [x, 1000.0 - x],
            max: [x + 5.0, 1005.0 - x],
        };
        m.apply(&mut t, &Op::Insert(r), &what);
    }
    for i in 0..40 {
        m.apply(&mut t, &Op::Delete(i * 3), &what);
    }
    m.check_answers(&mut t);
}

/// The tree's structure as far as it decides answers and costs: every leaf entry in the
/// order a full search visits them (the order follows the nodes), the shape per level and
/// the pages of the root and of the longest node. Runs a search, so call it last.
fn structure(t: &mut Tree<AnyStore, 2>) -> String {
    let rep = t.check().unwrap();
    assert!(rep.ok(), "{:?}", rep.violations);
    let mut leaves = Vec::new();
    let all = Rect {
        min: [f64::MIN; 2],
        max: [f64::MAX; 2],
    };
    t.search(MbrPredicate::All, &all, |e| leaves.push((e.ptr, e.mbr)))
        .unwrap();
    format!(
        "levels {:?} root pages {} longest node {} leaves {leaves:?}",
        rep.levels,
        t.root_pages().unwrap(),
        t.max_node_pages().unwrap()
    )
}

/// Runs `ops` on a tree that stays open and on one closed and reopened (as another
/// process would) after the first `cut` of them; the two structures.
fn closed_midway(
    cfg: &StoreConfig,
    o: ForTreeOptions,
    ops: &[Op<2>],
    cut: usize,
) -> (String, String) {
    let kind = IndexKind::ForTree(o);
    let what = format!("{cfg:?} {o:?}");
    let open_dir = tempfile::tempdir().unwrap();
    let mut open = open_tree(cfg, kind, open_dir.path(), true);
    Model::new().apply_all(&mut open, ops, &what);

    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), true);
    let mut m = Model::new();
    m.apply_all(&mut t, &ops[..cut], &what);
    t.store_mut().write_back().unwrap();
    t.into_store().unwrap();
    let mut t = open_tree(cfg, kind, dir.path(), false);
    m.apply_all(&mut t, &ops[cut..], &what);
    (structure(&mut open), structure(&mut t))
}

fn options(ratio: f64, root_fix: bool) -> ForTreeOptions {
    ForTreeOptions {
        write_read_ratio: ratio,
        root_fix,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(24, 200), ..ProptestConfig::default() })]

    /// Each case runs under one store configuration (cycling through direct, FAST and
    /// eFIND) and one option set: ratios from 0.2 (merge back at the first access) to
    /// 1000 (chains grow long), the defect's fix on or off.
    #[test]
    fn fortree_matches_brute_force_under_every_store(
        ops in prop::collection::vec(op::<2>(FORTREE_MIX), 1..500),
        cfg in 0usize..64,
        ratio in prop_oneof![Just(0.2), Just(1.0), Just(10.0), Just(1000.0)],
        root_fix in any::<bool>(),
    ) {
        let cfgs = store_configs();
        run_ops(&cfgs[cfg % cfgs.len()], options(ratio, root_fix), &ops);
    }

    /// Coordinates near the ends of `f64`'s range: areas and enlargements overflow to
    /// infinity or underflow to zero.
    #[test]
    fn fortree_at_extreme_magnitudes(
        ops in prop::collection::vec(op::<2>(FORTREE_MIX), 1..300),
        ratio in prop_oneof![Just(0.2), Just(1.0), Just(1000.0)],
        scale in prop::sample::select(vec![1e300, 1e150, 1e-150, 1e-300]),
    ) {
        let ops: Vec<Op<2>> = ops.iter().map(|o| o.scaled(scale)).collect();
        run_ops(&StoreConfig::direct(), options(ratio, true), &ops);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(16, 200), ..ProptestConfig::default() })]

    /// The access counts are saved with the tree (its state blob) at the checkpoint that
    /// closes it: a tree reopened midway merges nodes back exactly when one never closed
    /// does, under every store.
    #[test]
    fn a_reopened_fortree_goes_on_like_one_never_closed(
        ops in prop::collection::vec(op::<2>(FORTREE_MIX), 2..300),
        cut in 0.0..1.0f64,
        cfg in 0usize..64,
        ratio in prop_oneof![Just(1.0), Just(2.0), Just(10.0)],
        root_fix in any::<bool>(),
    ) {
        let cfgs = store_configs();
        let cut = ((ops.len() as f64 * cut) as usize).max(1);
        let (open, reopened) = closed_midway(&cfgs[cfg % cfgs.len()], options(ratio, root_fix), &ops, cut);
        prop_assert_eq!(open, reopened);
    }
}

fn point(i: u64) -> Rect<2> {
    // A scrambled grid: every insert lands somewhere else.
    let x = (i * 7919 % 1000) as f64;
    let y = (i * 104_729 % 997) as f64;
    Rect {
        min: [x, y],
        max: [x + 1.0, y + 1.0],
    }
}

/// Insert-only builds of `n` objects; the root's pages after 1/3, 2/3 and all of them.
fn root_growth(o: ForTreeOptions, n: u64) -> Vec<usize> {
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree(
        &StoreConfig::direct(),
        IndexKind::ForTree(o),
        dir.path(),
        true,
    );
    let mut out = Vec::new();
    for i in 0..n {
        t.insert(point(i), i).unwrap();
        if (i + 1) % (n / 3) == 0 {
            out.push(t.root_pages().unwrap());
        }
    }
    let rep = t.check().unwrap();
    assert!(rep.ok(), "{:?}", rep.violations);
    out
}

#[test]
fn the_published_defect_grows_the_root_without_bound_and_the_fix_bounds_it() {
    let n = 3000;
    let m = {
        let layout = IndexKind::ForTree(ForTreeOptions::default())
            .layout(LayoutKind::Checked, PAGE, 2)
            .unwrap();
        Capacity::new(&layout, &Occupancy::default())
            .unwrap()
            .leaf_max
    };
    // Without counting insertions nothing ever merges back: the root leaf holds every
    // object, and its chain grows linearly with the inserts.
    let broken = root_growth(options(10.0, false), n);
    assert_eq!(
        broken,
        (1..=3)
            .map(|k| (k * n as usize / 3).div_ceil(m))
            .collect::<Vec<_>>(),
        "root pages after 1000, 2000, 3000 inserts (M = {m})"
    );
    // Counting them, every node merges back after a bounded number of accesses.
    let fixed = root_growth(options(10.0, true), n);
    assert!(
        fixed.iter().all(|&p| p <= 3),
        "root pages with the fix: {fixed:?}"
    );
}

#[test]
fn chains_survive_a_reopen_and_a_looping_chain_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let kind = IndexKind::ForTree(options(1000.0, true));
    let cfg = StoreConfig::direct();
    let mut t = open_tree(&cfg, kind, dir.path(), true);
    for i in 0..400 {
        t.insert(point(i), i).unwrap();
    }
    let span = t.max_node_pages().unwrap();
    assert!(span > 1, "ratio 1000 keeps overflow nodes: {span}");
    let root_pages = t.root_pages().unwrap();
    let q = Rect {
        min: [100.0, 100.0],
        max: [600.0, 500.0],
    };
    let mut before = Vec::new();
    t.search(MbrPredicate::Intersects, &q, |e| before.push(e.ptr))
        .unwrap();
    before.sort();
    t.into_store().unwrap();

    let mut t = open_tree(&cfg, kind, dir.path(), false);
    assert_eq!(t.max_node_pages().unwrap(), span);
    assert_eq!(t.root_pages().unwrap(), root_pages);
    let mut after = Vec::new();
    t.search(MbrPredicate::Intersects, &q, |e| after.push(e.ptr))
        .unwrap();
    after.sort();
    assert_eq!(before, after);
    assert!(t.check().unwrap().ok());

    // Make the root's first page name itself as a further page.
    let meta = t.meta();
    let (id, level) = (meta.root, meta.height - 1);
    let entry = NodeStore::<2>::read(t.store_mut(), id, level)
        .unwrap()
        .view::<2>()
        .entry(0);
    let looped = Entry {
        aux: id + 1,
        ..entry
    };
    t.store_mut()
        .modify(
            id,
            level,
            &[NodeChange::Set {
                pos: 0,
                entry: looped,
            }],
        )
        .unwrap();
    let err = t
        .search(MbrPredicate::Intersects, &q, |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("twice") && err.contains("loop"), "{err}");
    let rep = t.check().unwrap();
    assert!(!rep.ok());
    assert!(
        rep.violations.iter().any(|v| v.contains("loop")),
        "{:?}",
        rep.violations
    );
}

/// A FOR-tree of 60 objects without the fix (inserts not counted), ratio 1.
fn counted_tree(dir: &std::path::Path, cfg: &StoreConfig) -> Tree<AnyStore, 2> {
    // Ratio 1: a node with one O-node merges back at its 2nd access, with two at its 4th.
    let kind = IndexKind::ForTree(options(1.0, false));
    let mut t = open_tree(cfg, kind, dir, true);
    for i in 0..60 {
        t.insert(point(i), i).unwrap();
    }
    t
}

#[test]
fn the_access_counts_survive_a_reopen_and_damaged_counts_are_refused() {
    let cfg = StoreConfig::direct();
    let kind = IndexKind::ForTree(options(1.0, false));
    let q = Rect {
        min: [0.0, 0.0],
        max: [10.0, 10.0],
    };
    // Without the fix, inserts are not counted: the root leaf spans several pages, and
    // searches count its accesses towards the merge-back.
    let run = |reopen: bool, forget: bool| -> usize {
        let dir = tempfile::tempdir().unwrap();
        let mut t = counted_tree(dir.path(), &cfg);
        let pages = t.root_pages().unwrap();
        assert!(pages > 1, "the root leaf has O-nodes: {pages}");
        // One access fewer than the merge needs: ⌊(5k − 1) / 2⌋ × 1 with k = pages − 1.
        let due = (5 * (pages - 1) - 1) / 2;
        for _ in 0..due - 1 {
            t.search(MbrPredicate::Intersects, &q, |_| {}).unwrap();
        }
        if reopen {
            t.into_store().unwrap();
            if forget {
                let path = dir.path().join("store.json");
                let mut header: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                header.as_object_mut().unwrap().remove("tree_state");
                std::fs::write(&path, header.to_string()).unwrap();
                spidx::store::header::reseal_file(&path).unwrap();
            }
            t = open_tree(&cfg, kind, dir.path(), false);
        }
        // The last counted access, then an insert that reaches the root merges it back.
        t.search(MbrPredicate::Intersects, &q, |_| {}).unwrap();
        t.insert(point(1000), 1000).unwrap();
        t.root_pages().unwrap()
    };
    let never_closed = run(false, false);
    assert_eq!(never_closed, 1, "merged back at the threshold");
    assert_eq!(run(true, false), never_closed, "reopened with its counts");
    assert!(
        run(true, true) > 1,
        "a tree that lost its counts merges later"
    );

    // Damaged state and another variant's state are refused with the reason.
    let dir = tempfile::tempdir().unwrap();
    counted_tree(dir.path(), &cfg).into_store().unwrap();
    let path = dir.path().join("store.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let header: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(header["tree_state"]["format"], "fortree-access-counts/1");
    let open_with = |state: serde_json::Value| -> String {
        let mut h = header.clone();
        h["tree_state"] = state;
        std::fs::write(&path, h.to_string()).unwrap();
        spidx::store::header::reseal_file(&path).unwrap();
        let layout = kind.layout(LayoutKind::Checked, PAGE, 2).unwrap();
        let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
        let dev = spidx::device::memory::MemoryDevice::open(
            &spidx::device::memory::MemoryConfig { capacity: 16 << 20 },
            PAGE,
            Some(&dir.path().join("device.state")),
        )
        .unwrap();
        let cache = "lru:4KB".parse().unwrap();
        match cfg
            .open(Box::new(dev), &cache, layout, dir.path())
            .and_then(|store| Tree::<_, 2>::open(store, cap, kind))
        {
            Ok(_) => "opened".into(),
            Err(e) => e.to_string(),
        }
    };
    let err = open_with(serde_json::json!({"format": "fortree-access-counts/1", "bytes": "/w=="}));
    assert!(
        err.contains("tree state") && err.contains("access counts"),
        "{err}"
    );
    let err = open_with(serde_json::json!({"format": "something-else/1", "bytes": ""}));
    assert!(err.contains("something-else/1"), "{err}");
    let err =
        open_with(serde_json::json!({"format": "fortree-access-counts/1", "bytes": "not base64!"}));
    assert!(err.contains("store header"), "{err}");
    assert_eq!(open_with(header["tree_state"].clone()), "opened");
}

#[test]
fn options_are_validated() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let kind = IndexKind::ForTree(options(bad, true));
        let err = kind.check_options().unwrap_err().to_string();
        assert!(err.contains("write_read_ratio"), "{err}");
    }
}
