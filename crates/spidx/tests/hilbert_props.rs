//! Property tests of the Hilbert R-tree (Kamel and Faloutsos 1994) against brute force:
//! random inserts, deletes and updates under every node store (direct, FAST, eFIND,
//! LCR-tree, RFTL), with s = 1 to 4 cooperating siblings, coarse and fine grids (coarse
//! ones give many equal keys), the bit-pattern and the extent grid; after every operation
//! the checker passes (its LHV-correctness and LHV-order invariants included) and every
//! query kind answers like a scan of the live objects, also after reopening. Also in 3
//! dimensions, and the options the variant refuses.

mod model;
mod stores;

use model::{op, open_tree, Mix, Model, Op, MIX, PAGE};
use proptest::prelude::*;
use spidx::cache::CacheConfig;
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::geom::Rect;
use spidx::index::bulk::{BulkMethod, BulkOptions};
use spidx::index::{HilbertOptions, IndexKind, Tree};
use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
use spidx::store::StoreConfig;
use stores::{long_cases, store_configs};

/// More deletes than the default mix (borrowing and merging among siblings), smaller boxes.
const HILBERT_MIX: Mix = Mix {
    delete: 3,
    side: 50.0,
    max_k: 15,
    ..MIX
};

fn run_ops<const D: usize>(cfg: &StoreConfig, o: HilbertOptions, ops: &[Op<D>]) {
    let kind = IndexKind::Hilbert(o);
    let what = format!("{cfg:?} {o:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut t = open_tree::<D>(cfg, kind, dir.path(), true);
    let mut m = Model::new();
    m.apply_all(&mut t, ops, &what);
    // Reopened in a fresh store and device, as another process would.
    t.store_mut().write_back().unwrap();
    t.into_store().unwrap();
    let mut t = open_tree::<D>(cfg, kind, dir.path(), false);
    m.check(&mut t, &what, "reopen");
    m.check_answers(&mut t);
    // And it goes on growing and shrinking after the reopen.
    for i in 0..40 {
        m.apply(&mut t, &Op::Delete(i * 7), &what);
    }
    m.check_answers(&mut t);
}

fn options(siblings: usize, order: Option<u32>, extent: bool) -> HilbertOptions {
    HilbertOptions {
        order,
        siblings,
        extent: extent.then_some([0.0, 1050.0]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: long_cases(24, 200), ..ProptestConfig::default() })]

    /// Each case runs under one store configuration (cycling through direct, FAST and
    /// eFIND) and one option set.
    #[test]
    fn hilbert_rtree_matches_brute_force_under_every_store(
        ops in prop::collection::vec(op::<2>(HILBERT_MIX), 1..500),
        cfg in 0usize..64,
        siblings in 1usize..=4,
        order in prop::option::of(1u32..=32),
        extent in any::<bool>(),
    ) {
        let cfgs = store_configs();
        run_ops(&cfgs[cfg % cfgs.len()], options(siblings, order, extent), &ops);
    }

    /// Coordinates near the ends of `f64`'s range (the curve's extent, areas and
    /// distances overflow or underflow); the extent is taken from the data.
    #[test]
    fn hilbert_rtree_at_extreme_magnitudes(
        ops in prop::collection::vec(op::<2>(HILBERT_MIX), 1..300),
        siblings in 1usize..=3,
        order in prop::option::of(1u32..=32),
        scale in prop::sample::select(vec![1e300, 1e150, 1e-150, 1e-300]),
    ) {
        let ops: Vec<Op<2>> = ops.iter().map(|o| o.scaled(scale)).collect();
        run_ops(&StoreConfig::direct(), options(siblings, order, false), &ops);
    }

    #[test]
    fn hilbert_rtree_in_three_dimensions(
        ops in prop::collection::vec(op::<3>(HILBERT_MIX), 1..300),
        siblings in 1usize..=3,
        order in prop::option::of(1u32..=21),
    ) {
        run_ops(&StoreConfig::direct(), options(siblings, order, false), &ops);
    }
}

/// A fixed, long sequence under every store configuration (deep trees: many cooperative
/// splits, borrows and merges at every level).
#[test]
fn every_store_on_a_long_sequence() {
    let mut ops: Vec<Op<2>> = Vec::new();
    for i in 0..900u64 {
        let x = (i * 7919 % 997) as f64;
        let y = (i * 104_729 % 991) as f64;
        ops.push(Op::Insert(Rect {
            min: [x, y],
            max: [x + (i % 13) as f64, y + (i % 7) as f64],
        }));
        if i % 3 == 2 {
            ops.push(Op::Delete((i * 31) as usize));
        }
    }
    for i in 0..500usize {
        ops.push(Op::Delete(i * 17));
    }
    for (i, cfg) in store_configs().iter().enumerate() {
        run_ops(cfg, options(1 + i % 3, None, i % 2 == 0), &ops);
    }
}

#[test]
fn refused_options_name_the_problem() {
    let hilbert = |o: HilbertOptions| IndexKind::Hilbert(o);
    let err = |k: IndexKind, dims: usize| {
        k.layout(LayoutKind::Checked, 4096, dims)
            .unwrap_err()
            .to_string()
    };
    let s = err(hilbert(options(2, Some(22), false)), 3);
    assert!(s.contains("order") && s.contains("at most 64"), "{s}");
    let s = err(hilbert(options(0, None, false)), 2);
    assert!(s.contains("siblings"), "{s}");
    let s = err(hilbert(options(17, None, false)), 2);
    assert!(s.contains("siblings"), "{s}");
    let s = err(
        hilbert(HilbertOptions {
            extent: Some([1.0, f64::NAN]),
            ..HilbertOptions::default()
        }),
        2,
    );
    assert!(s.contains("extent"), "{s}");
    // The default order fits every supported dimension count.
    for dims in [1, 2, 3, 8, 64] {
        hilbert(HilbertOptions::default())
            .layout(LayoutKind::Checked, 256 * 1024, dims)
            .unwrap();
    }
    // The layout grows by the 8-byte key for this variant only.
    let plain = IndexKind::RStar(Default::default())
        .layout(LayoutKind::Seed, 2048, 2)
        .unwrap();
    let h = hilbert(HilbertOptions::default())
        .layout(LayoutKind::Seed, 2048, 2)
        .unwrap();
    assert_eq!((plain.entry_size(), h.entry_size()), (36, 44));

    let dir = tempfile::tempdir().unwrap();
    let dev = || {
        let d = MemoryDevice::open(&MemoryConfig { capacity: 1 << 20 }, PAGE, None).unwrap();
        Box::new(d)
    };
    let cache: CacheConfig = "none".parse().unwrap();
    // A layout without keys is refused (and one with keys for the other variants).
    let plain = NodeLayout::new(LayoutKind::Checked, PAGE, 2).unwrap();
    let cap = Capacity::new(&plain, &Occupancy::default()).unwrap();
    let store = StoreConfig::direct()
        .create(dev(), &cache, plain, Some(dir.path()))
        .unwrap();
    let s = Tree::<_, 2>::create(store, cap, hilbert(HilbertOptions::default()))
        .err()
        .unwrap()
        .to_string();
    assert!(s.contains("auxiliary key"), "{s}");
    // A minimum fill that would leave internal nodes without siblings to share with.
    let keyed = plain.with_aux(8).unwrap();
    let low = Capacity::new(
        &keyed,
        &Occupancy {
            internal_min: 0.01,
            ..Occupancy::default()
        },
    )
    .unwrap();
    let store = StoreConfig::direct()
        .create(dev(), &cache, keyed, Some(&dir.path().join("b")))
        .unwrap();
    let s = Tree::<_, 2>::create(store, low, hilbert(HilbertOptions::default()))
        .err()
        .unwrap()
        .to_string();
    assert!(s.contains("min fill"), "{s}");
    // A bulk load that cuts by coordinates would break the Hilbert order: refused,
    // nothing written (Hilbert packing is the tree's own order: tests/bulk_props.rs).
    let d2 = tempfile::tempdir().unwrap();
    let mut t = open_tree::<2>(
        &StoreConfig::direct(),
        hilbert(HilbertOptions::default()),
        d2.path(),
        true,
    );
    let objs = vec![(
        Rect {
            min: [1.0, 1.0],
            max: [2.0, 2.0],
        },
        1u64,
    )];
    let s = t
        .bulk_load(
            objs,
            &BulkOptions {
                method: BulkMethod::Str,
                fill: 1.0,
            },
        )
        .unwrap_err()
        .to_string();
    assert!(s.contains("STR (cutting by coordinates)"), "{s}");
    assert_eq!(t.meta().objects, 0);
    assert!(t.check().unwrap().ok());
}
