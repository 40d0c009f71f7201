use super::*;
use crate::data::repair::{point_in_ring, ring_self_intersects, signed_area};
use crate::data::{bounding_rect, info, Dataset};
use proptest::prelude::*;

fn geo(d: Dataset) -> Vec<GeoRecord> {
    match d {
        Dataset::Geo(r) => r,
        Dataset::Vectors(_) => panic!("expected geometries"),
    }
}

fn vecs(d: Dataset) -> Vectors {
    match d {
        Dataset::Vectors(v) => v,
        Dataset::Geo(_) => panic!("expected vectors"),
    }
}

fn inside_extent(r: &Rect<f64>) -> bool {
    r.min().x >= 0.0 && r.min().y >= 0.0 && r.max().x <= SIDE && r.max().y <= SIDE
}

#[test]
fn same_seed_same_data_other_seed_other_data() {
    for d in Distribution::ALL {
        let mut o = GenerateOptions::new(d, 500);
        let a = generate(&o).unwrap();
        let b = generate(&o).unwrap();
        assert_eq!(a, b, "{d}");
        o.seed = 7;
        let c = generate(&o).unwrap();
        assert_ne!(a, c, "{d}");
    }
    let mut o = GenerateOptions::new(Distribution::Clustered, 300);
    o.dims = 16;
    assert_eq!(generate(&o).unwrap(), generate(&o).unwrap());
}

#[test]
fn rectangles_are_small_closed_ccw_and_inside_the_extent() {
    for d in [
        Distribution::Uniform,
        Distribution::Gaussian,
        Distribution::Clustered,
    ] {
        let recs = geo(generate(&GenerateOptions::new(d, 5000)).unwrap());
        assert_eq!(recs.len(), 5000);
        let max = DEFAULT_MAX_SIDE * SIDE;
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.id, i as u64);
            assert!(inside_extent(&r.bbox), "{d} {:?}", r.bbox);
            assert!(r.bbox.width() <= max && r.bbox.height() <= max);
            assert_eq!(Some(r.bbox), bounding_rect(&r.geometry));
            let Geometry::Polygon(p) = &r.geometry else {
                panic!("not a polygon")
            };
            assert_eq!(p.exterior().0.len(), 5);
            assert!(signed_area(&p.exterior().0) > 0.0);
        }
    }
}

/// Fraction of objects in the busiest 1 % of the cells of a 100×100 grid.
fn top_cell_share(recs: &[GeoRecord]) -> f64 {
    let mut cells = vec![0u64; 100 * 100];
    for r in recs {
        let c = r.bbox.center();
        let i = ((c.x / SIDE * 100.0) as usize).min(99);
        let j = ((c.y / SIDE * 100.0) as usize).min(99);
        cells[j * 100 + i] += 1;
    }
    cells.sort_unstable_by(|a, b| b.cmp(a));
    cells[..100].iter().sum::<u64>() as f64 / recs.len() as f64
}

#[test]
fn distributions_differ_in_clustering() {
    let share = |d| top_cell_share(&geo(generate(&GenerateOptions::new(d, 20_000)).unwrap()));
    let uniform = share(Distribution::Uniform);
    let gaussian = share(Distribution::Gaussian);
    let clustered = share(Distribution::Clustered);
    let buildings = share(Distribution::Buildings);
    assert!(uniform < 0.05, "uniform {uniform}");
    assert!(gaussian > uniform * 2.0, "gaussian {gaussian}");
    assert!(clustered > gaussian, "clustered {clustered}");
    assert!(buildings > 0.5, "buildings {buildings}");
}

#[test]
fn buildings_are_valid_varied_and_include_holes_and_multipolygons() {
    let recs = geo(generate(&GenerateOptions::new(Distribution::Buildings, 20_000)).unwrap());
    assert_eq!(recs.len(), 20_000);
    let mut check = |p: &Polygon| {
        let shell = &p.exterior().0;
        assert!(shell.len() >= 5 && shell.first() == shell.last());
        assert!(signed_area(shell) > 0.0, "shell not counter-clockwise");
        assert!(!ring_self_intersects(shell));
        for h in p.interiors() {
            assert!(signed_area(&h.0) < 0.0, "hole not clockwise");
            assert!(h.0.iter().all(|c| point_in_ring(*c, shell)));
        }
    };
    for r in &recs {
        assert!(inside_extent(&r.bbox), "{:?}", r.bbox);
        match &r.geometry {
            Geometry::Polygon(p) => check(p),
            Geometry::MultiPolygon(m) => {
                assert!(m.0.len() >= 2);
                m.0.iter().for_each(&mut check);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // Most footprints are rotated with their street grid, not axis-aligned.
    let axis_aligned = recs
        .iter()
        .filter(|r| match &r.geometry {
            Geometry::Polygon(p) => p
                .exterior()
                .0
                .windows(2)
                .all(|w| w[0].x == w[1].x || w[0].y == w[1].y),
            _ => false,
        })
        .count();
    assert!(
        axis_aligned < recs.len() / 10,
        "{axis_aligned} axis-aligned"
    );
    let i = info::info(&Dataset::Geo(recs));
    let g = i.geometry.unwrap();
    let multi = g.kinds["multipolygon"];
    assert!((300..=900).contains(&multi), "{multi} multipolygons");
    assert!(
        g.records_with_holes > 800,
        "{} with holes",
        g.records_with_holes
    );
    assert!(g.vertices.min <= 5.0 && g.vertices.max >= 30.0);
    assert!(
        g.vertices.mean > 6.0 && g.vertices.mean < 12.0,
        "{:?}",
        g.vertices
    );
    // Small objects, with a heavy tail.
    assert!(
        g.bbox_area.mean < 2_000.0 && g.bbox_area.max > 3_000.0,
        "{:?}",
        g.bbox_area
    );
}

#[test]
fn buildings_avoid_streets() {
    // Within a city, building centres (in grid coordinates) keep off the street bands,
    // so a fine grid of the densest area shows empty cells between full ones.
    let recs = geo(generate(&GenerateOptions::new(Distribution::Buildings, 60_000)).unwrap());
    let share = top_cell_share(&recs);
    assert!(share > 0.5, "{share}");
}

#[test]
fn vectors_fill_the_unit_cube_as_asked() {
    let mut o = GenerateOptions::new(Distribution::Uniform, 10_000);
    o.dims = 10;
    let v = vecs(generate(&o).unwrap());
    assert_eq!((v.len(), v.dims()), (10_000, 10));
    assert!(v.as_slice().iter().all(|x| (0.0..1.0).contains(x)));
    let stats = info::info(&Dataset::Vectors(v)).vectors.unwrap();
    for i in 0..10 {
        assert!(stats.min[i] < 0.01 && stats.max[i] > 0.99);
        assert!((stats.mean[i] - 0.5).abs() < 0.02);
    }
    o.distribution = Distribution::Gaussian;
    o.dims = 32;
    let v = vecs(generate(&o).unwrap());
    assert_eq!(v.dims(), 32);
    assert!(v.as_slice().iter().all(|x| (0.0..=1.0).contains(x)));
    let near = v
        .as_slice()
        .iter()
        .filter(|x| (**x - 0.5).abs() < 0.125)
        .count();
    assert!(near as f64 / v.as_slice().len() as f64 > 0.6);
    o.distribution = Distribution::Clustered;
    o.clusters = Some(5);
    let v = vecs(generate(&o).unwrap());
    assert!(v.as_slice().iter().all(|x| (0.0..=1.0).contains(x)));
    // 2-D vectors on request.
    let mut o = GenerateOptions::new(Distribution::Uniform, 100);
    o.vectors = true;
    assert_eq!(vecs(generate(&o).unwrap()).dims(), 2);
}

#[test]
fn bad_options_are_clear_errors() {
    let bad = |f: &dyn Fn(&mut GenerateOptions)| {
        let mut o = GenerateOptions::new(Distribution::Uniform, 10);
        f(&mut o);
        generate(&o).unwrap_err().to_string()
    };
    assert!(bad(&|o| o.count = 0).contains("count"));
    assert!(bad(&|o| o.dims = 0).contains("dims"));
    assert!(bad(&|o| o.dims = 5000).contains("dims"));
    assert!(bad(&|o| o.max_side = 0.0).contains("max-side"));
    assert!(bad(&|o| o.max_side = f64::NAN).contains("max-side"));
    assert!(bad(&|o| o.clusters = Some(0)).contains("clusters"));
    assert!(bad(&|o| o.count = u64::MAX).contains("exceed"));
    assert!(bad(&|o| {
        o.distribution = Distribution::Buildings;
        o.dims = 3
    })
    .contains("buildings"));
    assert!("zipf"
        .parse::<Distribution>()
        .unwrap_err()
        .to_string()
        .contains("uniform"));
    assert_eq!(
        "Buildings".parse::<Distribution>().unwrap(),
        Distribution::Buildings
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn any_seed_gives_objects_inside_the_extent(
        seed in any::<u64>(),
        count in 1u64..300,
        side in 0.00001f64..0.5,
        which in 0usize..4,
    ) {
        let mut o = GenerateOptions::new(Distribution::ALL[which], count);
        o.seed = seed;
        o.max_side = side;
        let recs = geo(generate(&o).unwrap());
        prop_assert_eq!(recs.len() as u64, count);
        for r in &recs {
            prop_assert!(inside_extent(&r.bbox));
            prop_assert_eq!(Some(r.bbox), bounding_rect(&r.geometry));
        }
    }
}

#[test]
fn counts_that_cannot_fit_in_memory_are_clear_errors() {
    // The case: 900 million rectangles (about 90 GiB and more) on an ordinary machine.
    let o = GenerateOptions::new(Distribution::Uniform, 900_000_000);
    let e = generate(&o).unwrap_err().to_string();
    assert!(
        e.contains("900000000") && e.contains("GiB of memory") && e.contains("lower the count"),
        "{e}"
    );
    // The check itself, with the available memory given.
    let small = GenerateOptions::new(Distribution::Buildings, 1_000);
    assert!(check_memory(&small, Some(1 << 30)).is_ok());
    assert!(check_memory(&small, None).is_ok());
    let e = check_memory(&small, Some(1000)).unwrap_err().to_string();
    assert!(e.contains("available") && e.contains("buildings"), "{e}");
    let mut v = GenerateOptions::new(Distribution::Uniform, 1_000_000);
    v.dims = 10;
    assert_eq!(memory_needed(&v), 80_000_000);
    assert!(check_memory(&v, Some(79_999_999)).is_err());
    assert!(check_memory(&v, Some(80_000_000)).is_ok());
}
