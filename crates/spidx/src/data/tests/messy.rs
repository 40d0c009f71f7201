//! Real data is messy: every skip and repair is counted, and nothing crashes.

use super::*;
use geozero::{CoordDimensions, ToWkb};

#[test]
fn messy_wkt_is_repaired_or_skipped_and_counted() {
    let dir = tmp();
    let path = file(&dir, "messy.wkt");
    std::fs::write(
        &path,
        "POLYGON((0 0,10 0,10 10,0 10))\n\
         POLYGON((0 0,1 1,0 0))\n\
         POLYGON((0 0,1e999 0,1 1,0 0))\n\
         POLYGON EMPTY\n\
         POINT EMPTY\n\
         POLYGON((0 0,2 2,2 0,0 2,0 0))\n\
         this is not wkt\n\
         POLYGON((0 0,0 0,5 0,5 5,0 5,0 0),(1 1,1 2,1 1))\n\
         MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((3 3,4 4,3 3)))\n\
         POLYGON((0 0,1 1,2 2,0 0))\n\
         LINESTRING(1 1,1 1)\n",
    )
    .unwrap();
    let (recs, report) = read_report(&path);
    let ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![0, 5, 7, 8], "{report}");
    assert_eq!(report.records_read, 11);
    assert_eq!(report.records_kept, 4);
    assert_eq!(report.count(Issue::ClosedRing), 1);
    assert_eq!(report.count(Issue::RingTooShort), 1);
    assert_eq!(report.count(Issue::NonFiniteCoordinate), 1);
    assert_eq!(report.count(Issue::EmptyGeometry), 2);
    assert_eq!(report.count(Issue::SelfIntersection), 1);
    assert_eq!(report.count(Issue::Unparsable), 1);
    assert_eq!(report.count(Issue::RepeatedVertices), 1);
    assert_eq!(report.count(Issue::DroppedHole), 1);
    assert_eq!(report.count(Issue::DroppedPart), 1);
    assert_eq!(report.count(Issue::ZeroAreaRing), 1);
    assert_eq!(report.count(Issue::DegenerateLine), 1);
    assert_eq!(report.skipped_total(), 7);
    // the unclosed ring came back closed
    match &recs[0].geometry {
        Geometry::Polygon(p) => assert_eq!(p.exterior().0.len(), 5),
        other => panic!("{other:?}"),
    }
    // examples name the line and the problem
    assert!(report
        .examples
        .iter()
        .any(|e| e.starts_with("line 7: skipped: unparsable")));
    assert!(report
        .examples
        .iter()
        .any(|e| e.starts_with("line 3: skipped: non finite")));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["skipped"]["empty_geometry"], 2);
    assert_eq!(json["repaired"]["closed_ring"], 1);
    assert_eq!(json["warnings"]["self_intersection"], 1);
    // Skipping invalid geometries is an option.
    let opts = ReadOptions {
        policy: Policy {
            skip_invalid: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let l = read(&path, &opts).unwrap();
    assert_eq!(l.report.count(Issue::Invalid), 1);
    assert_eq!(l.dataset.len(), 3);
}

/// `NaN` and `inf` spelled in WKT are named as non-finite coordinates (the WKT parser
/// itself only says a parenthesis is missing).
#[test]
fn nan_spelled_in_wkt_is_named() {
    let dir = tmp();
    let path = file(&dir, "nan.wkt");
    std::fs::write(
        &path,
        "POLYGON((0 0, 1 NaN, 1 1, 0 0))\nPOINT(-inf 3)\nPOLYGON((0 0,1 0,1 1,0 0))\n",
    )
    .unwrap();
    let (recs, report) = read_report(&path);
    assert_eq!(recs.len(), 1, "{report}");
    assert_eq!(report.count(Issue::NonFiniteCoordinate), 2, "{report}");
    assert!(
        report
            .examples
            .iter()
            .any(|e| e.starts_with("line 1:") && e.contains("`NaN` is not a finite number")),
        "{:?}",
        report.examples
    );
}

#[test]
fn nan_coordinates_in_binary_formats_are_skipped() {
    let dir = tmp();
    let mut recs = mixed_fgb();
    let mut bad = Polygon::new(square(0.0, 0.0, 1.0), vec![]);
    bad.exterior_mut(|r| r.0[2].x = f64::NAN);
    recs.push(GeoRecord {
        id: 1,
        geometry: Geometry::Polygon(bad.clone()),
        bbox: recs[0].bbox,
        source: None,
    });
    let fgb = file(&dir, "nan.fgb");
    write(&fgb, &Dataset::Geo(recs.clone())).unwrap();
    let (back, report) = read_report(&fgb);
    assert_eq!(back.len(), recs.len() - 1);
    assert_eq!(report.count(Issue::NonFiniteCoordinate), 1);
    let wkb = Geometry::Polygon(bad)
        .to_wkb(CoordDimensions::xy())
        .unwrap();
    let path = file(&dir, "nan.wkb");
    let hex: String = wkb.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(&path, format!("{hex}\nzz\n01\n")).unwrap();
    let (back, report) = read_report(&path);
    assert!(back.is_empty());
    assert_eq!(report.count(Issue::NonFiniteCoordinate), 1);
    assert_eq!(report.count(Issue::Unparsable), 2);
}

#[test]
fn messy_geojson_features() {
    let dir = tmp();
    let path = file(&dir, "messy.geojson");
    std::fs::write(
        &path,
        r#"{"type":"FeatureCollection","features":[
        {"type":"Feature","properties":{},"geometry":null},
        {"type":"Feature","properties":{}},
        {"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1]]]}},
        {"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[]}},
        {"type":"Feature","properties":{},"geometry":{"type":"Circle","coordinates":[0,0]}},
        {"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1]}},
        {"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":"x"}},
        "not a feature",
        {"type":"Feature","id":3,"properties":{},"geometry":{"type":"Point","coordinates":[1,1]}},
        {"type":"Feature","id":3,"properties":{},"geometry":{"type":"Point","coordinates":[2,2]}}
        ]}"#,
    )
    .unwrap();
    // Two features share id 3: an error naming both (an index would keep only one).
    let e = read(&path, &ReadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("id 3 at feature 9, already at feature 8")
            && e.contains("messy.geojson")
            && e.contains("--renumber"),
        "{e}"
    );
    // Inspection keeps them, with a warning.
    let inspect = ReadOptions {
        allow_duplicate_ids: true,
        ..Default::default()
    };
    let l = read(&path, &inspect).unwrap();
    let (recs, report) = (geo(l.dataset), l.report);
    assert_eq!(recs.len(), 3, "{report}");
    assert_eq!(report.count(Issue::MissingGeometry), 2);
    assert_eq!(report.count(Issue::ClosedRing), 1);
    assert_eq!(report.count(Issue::EmptyGeometry), 1);
    assert_eq!(report.count(Issue::Unparsable), 4);
    assert_eq!(report.count(Issue::DuplicateId), 1);
    // Renumbering gives unique dense ids and no duplicate warnings.
    let opts = ReadOptions {
        renumber: true,
        ..Default::default()
    };
    let l = read(&path, &opts).unwrap();
    let ids: Vec<u64> = geo(l.dataset).iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![0, 1, 2]);
    assert_eq!(l.report.count(Issue::DuplicateId), 0);
    // A truncated file is an error with the position.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(e.contains("messy.geojson") && e.contains("line"), "{e}");
}

#[test]
fn mixed_types_can_be_restricted_to_polygons() {
    let dir = tmp();
    let path = file(&dir, "mixed.geojson");
    write(&path, &Dataset::Geo(mixed())).unwrap();
    let opts = ReadOptions {
        policy: Policy {
            polygons_only: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let l = read(&path, &opts).unwrap();
    assert_eq!(l.dataset.len(), 2);
    assert_eq!(l.report.count(Issue::NotPolygonal), 5);
    assert_eq!(l.report.kinds.len(), 2);
}

#[test]
fn huge_and_very_detailed_objects_are_kept_with_warnings() {
    let mut recs: Vec<GeoRecord> = (0..200)
        .map(|i| {
            let g = Geometry::Polygon(Polygon::new(square(i as f64 * 10.0, 0.0, 1.0), vec![]));
            GeoRecord::new(i, g).unwrap()
        })
        .collect();
    let big = Polygon::new(square(0.0, 0.0, 1000.0), vec![]);
    recs.push(GeoRecord::new(1000, Geometry::Polygon(big)).unwrap());
    let n = 12_000;
    let ring: Vec<_> = (0..n)
        .map(|i| {
            let a = i as f64 / n as f64 * std::f64::consts::TAU;
            coord! { x: 5.0 + a.cos(), y: 5.0 + a.sin() }
        })
        .collect();
    let detailed = Polygon::new(LineString(ring), vec![]);
    recs.push(GeoRecord::new(1001, Geometry::Polygon(detailed)).unwrap());
    let dir = tmp();
    let path = file(&dir, "big.fgb");
    write(&path, &Dataset::Geo(recs)).unwrap();
    let (back, report) = read_report(&path);
    assert_eq!(back.len(), 202);
    assert_eq!(report.count(Issue::HugeExtent), 1, "{report}");
    assert_eq!(report.count(Issue::ManyVertices), 1);
    assert!(report.examples.iter().any(|e| e.starts_with("id 1000")));
}

#[test]
fn unreadable_files_are_clear_errors() {
    let dir = tmp();
    let e = open(file(&dir, "missing.fgb")).unwrap_err().to_string();
    assert!(e.contains("missing.fgb"), "{e}");
    let e = open(file(&dir, "data.xyz")).unwrap_err().to_string();
    assert!(
        e.contains("data.xyz") && e.contains(".geojson") && e.contains(".osm.pbf"),
        "{e}"
    );
    let sub = file(&dir, "sub.fgb");
    std::fs::create_dir(&sub).unwrap();
    assert!(open(&sub).unwrap_err().to_string().contains("directory"));
    let empty = file(&dir, "empty.geojson");
    std::fs::write(&empty, "").unwrap();
    assert!(open(&empty)
        .unwrap_err()
        .to_string()
        .contains("empty.geojson"));
    let npy = file(&dir, "bad.npy");
    std::fs::write(&npy, b"\x93NUMPY garbage").unwrap();
    assert!(open(&npy).unwrap_err().to_string().contains("bad.npy"));
    // Binary garbage as WKT is counted per line, not a crash.
    let wkt = file(&dir, "garbage.wkt");
    std::fs::write(&wkt, [0xff, 0xfe, b'\n', b'(', b'\n']).unwrap();
    let (recs, report) = read_report(&wkt);
    assert!(recs.is_empty());
    assert_eq!(report.count(Issue::Unparsable), 2);
}
