//! Tests of the dataset layer across modules: round trips through every writable format,
//! imports of every readable format from fixtures made here, and messy data.

mod import;
mod limits;
mod messy;
mod roundtrip;
mod seq_explode;
mod tables;

use super::*;
use geo_types::{coord, Geometry, LineString, MultiPolygon, Point, Polygon};
use std::path::PathBuf;

pub(super) fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub(super) fn file(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

pub(super) fn square(x0: f64, y0: f64, s: f64) -> LineString {
    LineString(vec![
        coord! { x: x0, y: y0 },
        coord! { x: x0 + s, y: y0 },
        coord! { x: x0 + s, y: y0 + s },
        coord! { x: x0, y: y0 + s },
        coord! { x: x0, y: y0 },
    ])
}

/// One record of every geometry kind spidx keeps.
pub(super) fn mixed() -> Vec<GeoRecord> {
    let with_hole = Polygon::new(square(0.0, 0.0, 10.0), vec![square(2.0, 2.0, 3.0)]);
    let geoms: Vec<Geometry> = vec![
        Geometry::Point(Point::new(1.5, -2.25)),
        Geometry::LineString(LineString::from(vec![(0.0, 0.0), (1.0, 1.0), (2.0, 0.5)])),
        Geometry::Polygon(with_hole.clone()),
        Geometry::MultiPolygon(MultiPolygon(vec![
            with_hole,
            Polygon::new(square(20.0, 20.0, 1.0), vec![]),
        ])),
        Geometry::MultiPoint(vec![(1.0, 2.0), (3.0, 4.0)].into()),
        Geometry::MultiLineString(geo_types::MultiLineString(vec![
            LineString::from(vec![(0.0, 0.0), (1.0, 0.0)]),
            LineString::from(vec![(5.0, 5.0), (6.0, 7.0)]),
        ])),
        Geometry::GeometryCollection(geo_types::GeometryCollection(vec![
            Geometry::Point(Point::new(9.0, 9.0)),
            Geometry::Polygon(Polygon::new(square(0.1, 0.2, 0.3), vec![])),
        ])),
    ];
    geoms
        .into_iter()
        .enumerate()
        .map(|(i, g)| GeoRecord::new(100 + 3 * i as u64, g).unwrap())
        .collect()
}

/// [`mixed`] without the geometry collection (which FlatGeobuf cannot mix with other kinds).
pub(super) fn mixed_fgb() -> Vec<GeoRecord> {
    let mut m = mixed();
    m.retain(|r| !matches!(r.geometry, Geometry::GeometryCollection(_)));
    m
}

pub(super) fn geo(d: Dataset) -> Vec<GeoRecord> {
    match d {
        Dataset::Geo(r) => r,
        Dataset::Vectors(_) => panic!("expected geometries"),
    }
}

pub(super) fn read_report(path: &std::path::Path) -> (Vec<GeoRecord>, ImportReport) {
    let l = read(path, &ReadOptions::default()).unwrap();
    (geo(l.dataset), l.report)
}

/// A geometry becomes its bounding box, a vector a point box, in dataset order with the
/// dataset's ids; asking for the wrong dimension is an error naming both.
#[test]
fn objects_become_boxes_of_the_index_dimension() {
    let poly = Geometry::Polygon(Polygon::new(square(2.0, 3.0, 4.0), vec![]));
    let ds = Dataset::Geo(vec![GeoRecord::new(7, poly).unwrap()]);
    let (id, r) = ds.object::<2>(0).unwrap();
    assert_eq!((id, r.min, r.max), (7, [2.0, 3.0], [6.0, 7.0]));
    assert_eq!(ds.boxes::<2>().unwrap(), vec![(r, 7)]);
    let e = ds.object::<3>(0).unwrap_err().to_string();
    assert!(e.contains("2-D objects for a 3-D index"), "{e}");

    let v = Dataset::Vectors(Vectors::new(3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap());
    let (id, r) = v.object::<3>(1).unwrap();
    assert_eq!((id, r.min, r.max), (1, [4.0, 5.0, 6.0], [4.0, 5.0, 6.0]));
    assert_eq!(v.boxes::<3>().unwrap().len(), 2);
    assert!(v.object::<2>(0).is_err());
}
