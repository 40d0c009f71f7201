//! Property tests of the eFIND store under the unchanged trees: random inserts, deletes and
//! updates with small buffers (so flushes happen constantly), for every flushing policy,
//! read policy and temporal control. After every step the checker passes and queries equal
//! brute force; a twin tree on the direct store receives the same operations and every
//! node read through eFIND equals the direct store's node, entry for entry; after a flush
//! the store reopens with the same contents.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use spidx::cache::{CacheConfig, CachePolicy};
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::geom::Rect;
use spidx::index::{IndexKind, MbrPredicate, RStarOptions, SplitAlgorithm, Tree};
use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy, PageId};
use spidx::store::efind::{EfindConfig, EfindStats, FlushPolicy, TemporalControl};
use spidx::store::{AnyStore, NodeStore, StoreConfig};

type T = Tree<AnyStore, 2>;

const PAGE: usize = 1024;

fn open(kind: IndexKind, store: &StoreConfig, dir: &Path, create: bool) -> T {
    let layout = NodeLayout::new(LayoutKind::Checked, PAGE, 2).unwrap();
    let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
    let state = dir.join("device.state");
    let dev = MemoryDevice::open(&MemoryConfig { capacity: 1 << 28 }, PAGE, Some(&state)).unwrap();
    if create {
        let s = store
            .create(Box::new(dev), &CacheConfig::none(), layout, Some(dir))
            .unwrap();
        Tree::create(s, cap, kind).unwrap()
    } else {
        let s = store
            .open(Box::new(dev), &CacheConfig::none(), layout, dir)
            .unwrap();
        Tree::open(s, cap, kind).unwrap()
    }
}

/// Every node reachable from the root, read through both stores, is the same.
fn same_nodes(a: &mut T, b: &mut T) {
    assert_eq!(a.meta(), b.meta());
    let mut stack: Vec<(PageId, u32)> = vec![(a.meta().root, a.meta().height - 1)];
    while let Some((id, level)) = stack.pop() {
        let na = NodeStore::<2>::read(a.store_mut(), id, level).unwrap();
        let nb = NodeStore::<2>::read(b.store_mut(), id, level).unwrap();
        let (va, vb) = (na.view::<2>(), nb.view::<2>());
        assert_eq!(va.level(), vb.level(), "node {id}");
        let ea: Vec<_> = (0..va.len()).map(|i| va.entry(i)).collect();
        let eb: Vec<_> = (0..vb.len()).map(|i| vb.entry(i)).collect();
        assert_eq!(ea, eb, "node {id} differs from the direct store's");
        if level > 0 {
            stack.extend(ea.iter().map(|e| (e.ptr, level - 1)));
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Rect<2>),
    Delete(usize),
    Update(usize, Rect<2>),
}

fn rect() -> impl Strategy<Value = Rect<2>> {
    (0.0..1000.0f64, 0.0..1000.0f64, 0.0..60.0f64, 0.0..60.0f64).prop_map(|(x, y, w, h)| Rect {
        min: [x.round(), y.round()],
        max: [(x + w).round(), (y + h).round()],
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => rect().prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => (any::<usize>(), rect()).prop_map(|(i, r)| Op::Update(i, r)),
    ]
}

fn check(t: &mut T, live: &BTreeMap<u64, Rect<2>>, what: &str) {
    let rep = t.check().unwrap();
    assert!(rep.ok(), "{what}: {:?}", rep.violations);
    assert_eq!(rep.leaf_entries, live.len() as u64, "{what}");
    let q = Rect {
        min: [200.0, 100.0],
        max: [700.0, 650.0],
    };
    let mut got = Vec::new();
    t.search(MbrPredicate::Intersects, &q, |e| got.push(e.ptr))
        .unwrap();
    got.sort();
    let want: Vec<u64> = live
        .iter()
        .filter(|(_, r)| r.intersects(&q))
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(got, want, "{what}: window query");
}

fn run(kind: IndexKind, cfg: EfindConfig, ops: &[Op]) {
    let store = StoreConfig::Efind(cfg);
    let (de, dd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut t = open(kind, &store, de.path(), true);
    let mut twin = open(kind, &StoreConfig::direct(), dd.path(), true);
    let mut live: BTreeMap<u64, Rect<2>> = BTreeMap::new();
    let mut next = 0u64;
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Insert(r) => {
                t.insert(*r, next).unwrap();
                twin.insert(*r, next).unwrap();
                live.insert(next, *r);
                next += 1;
            }
            Op::Delete(i) => {
                if live.is_empty() {
                    continue;
                }
                let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
                assert!(t.delete(&r, id).unwrap());
                assert!(twin.delete(&r, id).unwrap());
                live.remove(&id);
            }
            Op::Update(i, new) => {
                if live.is_empty() {
                    continue;
                }
                let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
                assert!(t.update(&r, *new, id).unwrap());
                assert!(twin.update(&r, *new, id).unwrap());
                live.insert(id, *new);
            }
        }
        check(&mut t, &live, &format!("step {step} {op:?}"));
        let s = t.store().report().buffered.expect("buffered statistics");
        assert!(
            s.gauges.bytes <= s.settings.write_buffer,
            "over capacity after an operation"
        );
        if step % 16 == 0 {
            same_nodes(&mut t, &mut twin);
        }
    }
    same_nodes(&mut t, &mut twin);
    t.into_store().unwrap();
    let mut t = open(kind, &store, de.path(), false);
    check(&mut t, &live, "after reopen");
    same_nodes(&mut t, &mut twin);
}

fn configs() -> Vec<EfindConfig> {
    let mut out = Vec::new();
    for (i, policy) in FlushPolicy::ALL.into_iter().enumerate() {
        for (j, (read, tc)) in [
            (CachePolicy::Lru, TemporalControl::Both),
            (CachePolicy::None, TemporalControl::Writes),
            (CachePolicy::Hlru, TemporalControl::Reads),
            (CachePolicy::S2q, TemporalControl::None),
            (CachePolicy::TwoQ, TemporalControl::Both),
        ]
        .into_iter()
        .enumerate()
        {
            let mut c = EfindConfig::with_buffer(8 << 10);
            c.flush_policy = policy;
            c.read_policy = read;
            c.temporal_control = tc;
            c.flushing_unit = 1 + (i + j) % 4;
            if read != CachePolicy::None {
                c.read_buffer_perc = Some(25.0);
            }
            if policy != FlushPolicy::M {
                c.timestamp_perc = Some([10.0, 50.0, 100.0][(i + j) % 3]);
            }
            if tc.writes() {
                c.min_distance = Some(2);
                c.stride = Some(8);
                c.write_tc_size = Some(4);
            }
            out.push(c);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn every_policy_combination_matches_brute_force_and_the_direct_store(
        ops in prop::collection::vec(op(), 1..250),
    ) {
        for (n, cfg) in configs().into_iter().enumerate() {
            let kind = if n % 2 == 0 {
                IndexKind::RStar(RStarOptions::default())
            } else {
                IndexKind::RTree { split: SplitAlgorithm::Quadratic }
            };
            run(kind, cfg, &ops);
        }
    }
}

#[test]
fn spec_files_can_configure_efind() {
    let text = r#"
        kind = "efind"
        buffer = "512KB"
        read_buffer_perc = 20
        read_policy = "2q"
        read_kin = 30
        temporal_control = "both"
        timestamp_perc = 60
        flushing_unit = 4
        flush_policy = "mthao"
        log_size = "8MB"
        log_sync = "group:16"
    "#;
    let cfg: StoreConfig = toml::from_str(text).unwrap();
    let StoreConfig::Efind(c) = &cfg else {
        panic!("not eFIND: {cfg:?}")
    };
    assert_eq!(c.buffer.0, 512 << 10);
    assert_eq!(c.read_policy, CachePolicy::TwoQ);
    cfg.validate(4096).unwrap();
    let back: StoreConfig = serde_json::from_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
    assert_eq!(back, cfg);
    let bad = text.replace("flushing_unit = 4", "flushing_units = 4");
    let err = toml::from_str::<StoreConfig>(&bad).unwrap_err().to_string();
    assert!(err.contains("flushing_units"), "{err}");
    let bad = text.replace("\"mthao\"", "\"mthx\"");
    assert!(toml::from_str::<StoreConfig>(&bad).is_err());
    let bad = text.replace("read_buffer_perc = 20", "read_buffer_perc = 150");
    let cfg: StoreConfig = toml::from_str(&bad).unwrap();
    let err = cfg.validate(4096).unwrap_err().to_string();
    assert!(err.contains("outside 0-100"), "{err}");
}

/// The temporal control of reads puts recently read nodes that get flushed into the read
/// buffer, and the counters say so.
#[test]
fn statistics_count_what_happened() {
    let mut c = EfindConfig::with_buffer(16 << 10);
    c.read_buffer_perc = Some(50.0);
    let dir = tempfile::tempdir().unwrap();
    let mut t = open(
        IndexKind::RStar(RStarOptions::default()),
        &StoreConfig::Efind(c),
        dir.path(),
        true,
    );
    for i in 0..3000u64 {
        let x = (i * 7919 % 1000) as f64;
        let y = (i * 104729 % 1000) as f64;
        t.insert(
            Rect {
                min: [x, y],
                max: [x + 2.0, y + 3.0],
            },
            i,
        )
        .unwrap();
    }
    let rep = t.store().report();
    let e = rep.policy_report::<EfindStats>().unwrap();
    let s = rep.buffered.unwrap();
    assert!(s.flushes > 0 && s.flushed_nodes >= s.flushes, "{s:?}");
    assert!(
        s.image_records > 0 && s.image_records <= s.flushed_nodes,
        "{s:?}"
    );
    assert!(e.read_buffer.hits > 0 && e.read_buffer.misses > 0, "{e:?}");
    assert!(e.forced_into_read_buffer > 0, "{e:?}");
    assert!(e.write_tc.sequential + e.write_tc.strided > 0, "{e:?}");
    assert!(s.gauges.peak_bytes >= s.gauges.bytes);
    assert!(
        s.gauges.bytes <= s.settings.write_buffer,
        "fits after the operation: {s:?}"
    );
    t.store_mut().write_back().unwrap();
    let g = t.store().report().buffered.unwrap().gauges;
    assert_eq!(
        (g.new_nodes, g.modified_nodes, g.deleted_nodes, g.bytes),
        (0, 0, 0, 0)
    );
}
