//! Property tests of the FOR-tree (Jin et al. 2015) against brute force: random inserts,
//! deletes, updates and queries under every node store (direct, FAST, eFIND), with merge
//! thresholds from "merge at once" to "almost never" and with the published defect on and
//! off; after every operation the checker passes (multi-page nodes included: no page
//! reached twice, parent entries cover all pages, no page more than the entries need) and
//! every query kind answers like a scan of the live objects, also after reopening. Also:
//! the defect (an insert-only build grows the root's chain of overflow nodes without bound
//! when insertions are not counted) and its fix, the chain surviving a reopen, and a
//! corrupted chain refused.

mod model;
mod stores;

use model::{op, open_tree, Mix, Model, Op, MIX, PAGE};
use proptest::prelude::*;
use spidx::geom::Rect;
use spidx::index::{ForTreeOptions, IndexKind, MbrPredicate};
use spidx::node::{Capacity, Entry, LayoutKind, Occupancy};
use spidx::store::{NodeChange, NodeStore, StoreConfig};
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

#[test]
fn options_are_validated() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let kind = IndexKind::ForTree(options(bad, true));
        let err = kind.check_options().unwrap_err().to_string();
        assert!(err.contains("write_read_ratio"), "{err}");
    }
}
