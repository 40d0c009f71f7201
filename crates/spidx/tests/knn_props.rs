//! k-nearest-neighbour search against brute force over the whole range of `f64`: boxes
//! and query points whose coordinates mix magnitudes from 1e-300 to 1e300 (where squared
//! distances overflow or underflow), in every tree variant built one by one and by every
//! bulk load, through the tree ([`Tree::nearest`]) and through an index
//! ([`SpatialIndex::nearest`], ties by id), with and without refinement on the exact
//! geometries.

use geo::Geometry;
use proptest::prelude::*;
use spidx::cache::{CacheConfig, PageCache};
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::device::DeviceConfig;
use spidx::geom::{Distance, Rect};
use spidx::index::bulk::{BulkMethod, BulkOptions};
use spidx::index::{ForTreeOptions, HilbertOptions, IndexKind, RStarOptions, SplitAlgorithm, Tree};
use spidx::node::{Capacity, LayoutKind, Occupancy};
use spidx::spatial::{IndexOptions, SpatialIndex};
use spidx::store::direct::DirectStore;
use spidx::store::StoreConfig;

const PAGE: usize = 1024;

fn cases(short: u32, long: u32) -> u32 {
    if std::env::var_os("SPIDX_LONG_TESTS").is_some() {
        long
    } else {
        short
    }
}

/// The variants built one by one at every magnitude (the R*-tree's split keeps a legal
/// partition when its keys overflow: `index/split.rs`).
fn kinds() -> Vec<IndexKind> {
    vec![
        IndexKind::RTree {
            split: SplitAlgorithm::Linear,
        },
        IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        },
        IndexKind::Hilbert(HilbertOptions::default()),
        IndexKind::ForTree(ForTreeOptions::default()),
        IndexKind::RStar(RStarOptions::default()),
    ]
}

fn tree(kind: IndexKind) -> Tree<DirectStore, 2> {
    let layout = kind.layout(LayoutKind::Checked, PAGE, 2).unwrap();
    let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
    let dev = MemoryDevice::open(&MemoryConfig::default(), PAGE, None).unwrap();
    let cache = PageCache::new(Box::new(dev), &CacheConfig::none()).unwrap();
    Tree::create(DirectStore::create(cache, layout, None).unwrap(), cap, kind).unwrap()
}

/// Magnitudes of coordinates: ordinary, around the overflow of squares (1e154), far
/// beyond it, and their tiny counterparts (squares underflow below 1e-162).
const SCALES: [f64; 8] = [1.0, 1e150, 1e154, 1e160, 1e300, 1e-160, 1e-300, 1e-10];

/// A coordinate `m × scale`.
fn coord() -> impl Strategy<Value = f64> {
    (-1.0f64..1.0, 0..SCALES.len()).prop_map(|(m, s)| m * SCALES[s])
}

/// A box: a corner and sides up to 1 % of the corner's magnitude (or of 1e-300).
fn rect() -> impl Strategy<Value = Rect<2>> {
    (coord(), coord(), 0.0f64..0.01, 0.0f64..0.01).prop_map(|(x, y, w, h)| {
        let side = |c: f64, f: f64| (c.abs().max(1e-300) * f).min(1e300);
        Rect::new([x, y], [x + side(x, w), y + side(y, h)]).unwrap()
    })
}

/// The `k` nearest of `boxes` (id = position) to `p` by distance, ties by id.
fn brute(boxes: &[Rect<2>], p: &[f64; 2], k: usize) -> Vec<(Distance, u64)> {
    let mut all: Vec<(Distance, u64)> = boxes
        .iter()
        .enumerate()
        .map(|(i, r)| (r.min_dist(p), i as u64))
        .collect();
    all.sort();
    all.truncate(k);
    all
}

fn check_tree(t: &mut Tree<DirectStore, 2>, boxes: &[Rect<2>], points: &[[f64; 2]], what: &str) {
    for p in points {
        for k in [1, 7, boxes.len() + 1] {
            let got = t.nearest(*p, k).unwrap();
            let want = brute(boxes, p, k);
            // Ties make the ids ambiguous; every found box must be the one of its id at
            // its own distance, and the distances must be brute force's.
            for n in &got {
                assert_eq!(n.entry.mbr, boxes[n.entry.ptr as usize], "{what}");
                assert_eq!(n.dist, n.entry.mbr.min_dist(p), "{what}");
            }
            let got: Vec<Distance> = got.iter().map(|n| n.dist).collect();
            let want: Vec<Distance> = want.iter().map(|w| w.0).collect();
            assert_eq!(got, want, "{what}: k = {k} from {p:?}");
        }
    }
}

fn options(kind: IndexKind) -> IndexOptions {
    IndexOptions {
        kind,
        page_size: PAGE,
        layout: LayoutKind::Checked,
        occupancy: Occupancy::default(),
        buffer: CacheConfig::none(),
        store: StoreConfig::direct(),
        device_name: "memory".into(),
        device: DeviceConfig::Memory(MemoryConfig { capacity: 1 << 26 }),
    }
}

fn polygon(r: &Rect<2>) -> Geometry<f64> {
    Geometry::Polygon(geo::Rect::new((r.min[0], r.min[1]), (r.max[0], r.max[1])).to_polygon())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24, 300), ..ProptestConfig::default() })]

    /// Every variant, built one by one and (R*-tree, Hilbert R-tree) by every bulk load,
    /// finds the distances of brute force.
    #[test]
    fn trees_find_the_nearest_at_every_magnitude(
        boxes in prop::collection::vec(rect(), 1..250),
        points in prop::collection::vec((coord(), coord()), 1..4),
    ) {
        let points: Vec<[f64; 2]> = points.into_iter().map(|(x, y)| [x, y]).collect();
        for kind in kinds() {
            let mut t = tree(kind);
            for (i, r) in boxes.iter().enumerate() {
                t.insert(*r, i as u64).unwrap_or_else(|e| panic!("{}: {e}", kind.label()));
            }
            check_tree(&mut t, &boxes, &points, &kind.label());
        }
        // The Hilbert R-tree packs only in its own key order.
        let bulk = [
            (IndexKind::RStar(RStarOptions::default()), BulkMethod::Str),
            (IndexKind::RStar(RStarOptions::default()), BulkMethod::Hilbert),
            (IndexKind::RStar(RStarOptions::default()), BulkMethod::Omt),
            (IndexKind::Hilbert(HilbertOptions::default()), BulkMethod::Hilbert),
        ];
        for (kind, method) in bulk {
            {
                let mut t = tree(kind);
                let objects = boxes.iter().enumerate().map(|(i, r)| (*r, i as u64)).collect();
                let opts = BulkOptions { method, fill: BulkOptions::DEFAULT_FILL };
                t.bulk_load(objects, &opts).unwrap();
                check_tree(&mut t, &boxes, &points, &format!("{} {}", kind.label(), method.name()));
            }
        }
    }

    /// Through an index: exactly brute force's ids (ties by id) and distances, by MBR and
    /// refined on the exact geometries (boxes stored as polygons, whose distance is the
    /// box's).
    #[test]
    fn an_index_answers_brute_force_at_every_magnitude(
        boxes in prop::collection::vec(rect(), 1..150),
        points in prop::collection::vec((coord(), coord()), 1..4),
    ) {
        let quadratic = IndexKind::RTree { split: SplitAlgorithm::Quadratic };
        for kind in [quadratic, IndexKind::Hilbert(HilbertOptions::default())] {
            let dir = tempfile::tempdir().unwrap();
            let mut idx = SpatialIndex::<2>::create(dir.path(), options(kind), true).unwrap();
            for (i, r) in boxes.iter().enumerate() {
                idx.put_object(i as u64, &polygon(r)).unwrap();
                idx.insert(*r, i as u64).unwrap();
            }
            for (x, y) in &points {
                let p = [*x, *y];
                for k in [1, 5, boxes.len()] {
                    let want = brute(&boxes, &p, k);
                    let rep = idx.nearest(p, k, false).unwrap();
                    prop_assert_eq!(&rep.ids, &want.iter().map(|w| w.1).collect::<Vec<_>>());
                    prop_assert_eq!(&rep.distances, &want.iter().map(|w| w.0.get()).collect::<Vec<_>>());
                    let rep = idx.nearest(p, k, true).unwrap();
                    prop_assert_eq!(rep.ids.len(), want.len());
                    for (got, w) in rep.distances.iter().zip(&want) {
                        let w = w.0.get();
                        prop_assert!(got.is_finite(), "refined distance {} (want {})", got, w);
                        prop_assert!(
                            (got - w).abs() <= w * 1e-12,
                            "refined distance {} vs box distance {}", got, w
                        );
                    }
                }
            }
        }
    }
}

/// The case: points a few 1e300 apart. The squared distances overflow, so before
/// the fix every distance was `inf` (printed as `inf` or 1.797e308) and the order was the
/// ids'.
#[test]
fn distances_beyond_1e154_are_finite_and_ordered() {
    let boxes: Vec<Rect<2>> = [5e300, 1e300, 3e300, 2e300, 4e300]
        .iter()
        .map(|&x| Rect::point([x, -x]))
        .collect();
    for kind in kinds() {
        let mut t = tree(kind);
        for (i, r) in boxes.iter().enumerate() {
            t.insert(*r, i as u64).unwrap();
        }
        let got = t.nearest([0.0, 0.0], 5).unwrap();
        let ids: Vec<u64> = got.iter().map(|n| n.entry.ptr).collect();
        assert_eq!(ids, vec![1, 3, 2, 4, 0], "{}", kind.label());
        let d = got[0].dist.get();
        assert!((d / (2f64.sqrt() * 1e300) - 1.0).abs() < 1e-15, "{d}");
    }
}

/// `Rect::min_dist` is `min_dist2(p).sqrt()` where that is exact enough, and keeps its
/// value and order where the squares overflow or underflow.
#[test]
fn distances_keep_value_and_order_across_the_range() {
    let r = Rect::new([0.0, 0.0], [2.0, 1.0]).unwrap();
    for p in [
        [3.0, 5.0],
        [1.0, 0.5],
        [-1.5, 0.25],
        [0.1, -7.0],
        [2.0, 1.0],
    ] {
        assert_eq!(r.min_dist(&p).get(), r.min_dist2(&p).sqrt(), "{p:?}");
    }
    assert_eq!(r.min_dist(&[1.0, 1.0]), Distance::ZERO);
    let o = Rect::point([0.0, 0.0]);
    let d = o.min_dist(&[3e200, 4e200]).get();
    assert!((d / 5e200 - 1.0).abs() < 1e-15, "{d}");
    assert!(o.min_dist(&[3e200, 4e200]) < o.min_dist(&[3e200, 4.000001e200]));
    // Beyond f64::MAX: the value is +inf, the order still right.
    let a = Rect::point([-1.7e308, -1.7e308]);
    let (x, y) = (
        a.min_dist(&[1.7e308, 1.0e308]),
        a.min_dist(&[1.7e308, 1.1e308]),
    );
    assert!(x < y && x.get() == f64::INFINITY);
    assert!(o.min_dist(&[1e300, 1e300]) < x);
    // Tiny: the squares of 3e-170 underflow to zero.
    let t = o.min_dist(&[3e-170, 4e-170]);
    assert!((t.get() / 5e-170 - 1.0).abs() < 1e-15, "{}", t.get());
    assert!(o.min_dist(&[3e-170, 3e-170]) < t);
    assert!(Distance::ZERO < o.min_dist(&[5e-324, 0.0]));
    assert!(t < o.min_dist(&[1e-100, 0.0]));
    for w in [0.0, 1e-320, 1e-200, 1.0, 1e200, f64::MAX, f64::INFINITY].windows(2) {
        assert!(Distance::from_f64(w[0]) < Distance::from_f64(w[1]), "{w:?}");
    }
    assert_eq!(Distance::from_f64(-0.0), Distance::ZERO);
    // A distance measured on inputs scaled down by 2^-1000, beyond f64::MAX unscaled.
    let s = 2f64.powi(-1000);
    assert!(Distance::from_scaled(1e10 * s * 1e300, s) > Distance::from_f64(f64::MAX));
    assert!(
        Distance::from_scaled(1e10 * s * 1e300, s) < Distance::from_scaled(2e10 * s * 1e300, s)
    );
}
