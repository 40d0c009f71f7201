//! Importing every readable format from small fixtures written here.

use super::*;
use crate::data::formats::osm::pbf_writer::{Member, PbfBuilder};
use crate::data::formats::osm::RELATION_ID_FLAG;
use geozero::{CoordDimensions, ToWkb};

fn write_text(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn geojson_feature_collection_with_ids_and_kinds() {
    let dir = tmp();
    let path = file(&dir, "in.geojson");
    write_text(
        &path,
        r#"{"type":"FeatureCollection","bbox":[0,0,10,10],"name":"x","features":[
        {"type":"Feature","id":7,"properties":{"id":99},"geometry":{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]],[[1,1],[1,2],[2,2],[2,1],[1,1]]]}},
        {"type":"Feature","id":"12","properties":{},"geometry":{"type":"Point","coordinates":[1.5,2.5,100]}},
        {"type":"Feature","properties":{"id":13},"geometry":{"type":"LineString","coordinates":[[0,0],[1,1]]}},
        {"type":"Feature","properties":null,"geometry":{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]]}},
        {"type":"Feature","id":"way/5","properties":{},"geometry":{"type":"Point","coordinates":[3,3]}}
        ]}"#,
    );
    let (recs, report) = read_report(&path);
    let ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    // feature id wins over properties.id; string ids parse; unusable ids fall back to ordinals
    assert_eq!(ids, vec![7, 12, 13, 3, 4]);
    assert!(matches!(&recs[0].geometry, Geometry::Polygon(p) if p.interiors().len() == 1));
    assert_eq!(recs[1].geometry, Geometry::Point(Point::new(1.5, 2.5)));
    assert_eq!(report.kinds["multipolygon"], 1);
    assert_eq!(report.kinds["point"], 2);
    assert_eq!(report.count(Issue::MissingId), 1);
    assert_eq!(report.records_read, 5);
    assert_eq!(report.records_kept, 5);
}

#[test]
fn geojson_single_feature_and_bare_geometry() {
    let dir = tmp();
    let path = file(&dir, "f.json");
    write_text(
        &path,
        r#"{"geometry":{"type":"Point","coordinates":[1,2]},"type":"Feature","id":5,"properties":{}}"#,
    );
    let (recs, _) = read_report(&path);
    assert_eq!((recs.len(), recs[0].id), (1, 5));
    write_text(
        &path,
        r#"{"type":"LineString","coordinates":[[1,2],[3,4]]}"#,
    );
    let (recs, _) = read_report(&path);
    assert!(matches!(recs[0].geometry, Geometry::LineString(_)));
    write_text(&path, r#"{"type":"Topology","objects":{}}"#);
    let e = open(&path).unwrap_err().to_string();
    assert!(e.contains("Topology") && e.contains("f.json"), "{e}");
    write_text(&path, "[1,2,3]");
    assert!(open(&path).is_err());
}

#[test]
fn wkt_lines_with_comments_srid_and_ids() {
    let dir = tmp();
    let path = file(&dir, "in.wkt");
    write_text(
        &path,
        "# buildings\n\
         POLYGON((0 0,10 0,10 10,0 10,0 0),(2 2,2 3,3 3,3 2,2 2))\n\
         \n\
         SRID=4326;POINT(1 2)\n\
         42\tMULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))\n\
         LINESTRING Z (0 0 1,1 1 2)\n\
         GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))\n",
    );
    let (recs, report) = read_report(&path);
    let ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![1, 3, 42, 5, 6]); // line number - 1, or the id prefix
    assert_eq!(recs[1].geometry, Geometry::Point(Point::new(1.0, 2.0)));
    assert!(matches!(&recs[2].geometry, Geometry::MultiPolygon(m) if m.0.len() == 2));
    assert_eq!(report.kinds["geometrycollection"], 1);
    assert_eq!(report.skipped_total(), 0);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[test]
fn wkb_hex_ewkb_and_binary() {
    let dir = tmp();
    let poly = Geometry::Polygon(Polygon::new(
        square(0.0, 0.0, 2.0),
        vec![square(0.5, 0.5, 0.5)],
    ));
    let point = Geometry::Point(Point::new(3.0, 4.0));
    let wkb = poly.to_wkb(CoordDimensions::xy()).unwrap();
    let ewkb = point.to_ewkb(CoordDimensions::xy(), Some(4326)).unwrap();
    let z = Geometry::Point(Point::new(7.0, 8.0))
        .to_ewkb(CoordDimensions::xyz(), None)
        .unwrap();
    let path = file(&dir, "in.wkb");
    write_text(
        &path,
        &format!(
            "{}\n# comment\n\\x{}\n9\t{}\n",
            hex(&wkb),
            hex(&ewkb),
            hex(&z)
        ),
    );
    let (recs, report) = read_report(&path);
    assert_eq!(report.skipped_total(), 0, "{report}");
    assert_eq!(recs[0].geometry, poly);
    assert_eq!(recs[1].geometry, point);
    assert_eq!((recs[1].id, recs[2].id), (2, 9));
    assert_eq!(recs[2].geometry, Geometry::Point(Point::new(7.0, 8.0)));
    // Binary: geometries back to back.
    let bin = file(&dir, "bin.wkb");
    let mut bytes = wkb.clone();
    bytes.extend_from_slice(&point.to_wkb(CoordDimensions::xy()).unwrap());
    std::fs::write(&bin, &bytes).unwrap();
    let (recs, _) = read_report(&bin);
    assert_eq!(recs.len(), 2);
    assert_eq!((recs[0].id, recs[1].id), (0, 1));
    assert_eq!(recs[1].geometry, point);
    // Truncated binary WKB is an error naming the record.
    std::fs::write(&bin, &bytes[..bytes.len() - 3]).unwrap();
    let e = open(&bin).unwrap_err().to_string();
    assert!(e.contains("bin.wkb") && e.contains("record 1"), "{e}");
}

#[test]
fn shapefile_polygons_with_holes_multipolygons_and_dbf_ids() {
    use shapefile::dbase::{FieldName, FieldValue, Record, TableWriterBuilder};
    use shapefile::{Point as SPoint, Polygon as SPolygon, PolygonRing};
    let dir = tmp();
    let path = file(&dir, "b.shp");
    let pts = |r: &LineString| {
        r.0.iter()
            .map(|c| SPoint::new(c.x, c.y))
            .collect::<Vec<_>>()
    };
    let table = TableWriterBuilder::new()
        .add_numeric_field(FieldName::try_from("ID").unwrap(), 10, 0)
        .add_character_field(FieldName::try_from("name").unwrap(), 20);
    let mut w = shapefile::Writer::from_path(&path, table).unwrap();
    let shapes = [
        SPolygon::with_rings(vec![
            PolygonRing::Outer(pts(&square(0.0, 0.0, 10.0))),
            PolygonRing::Inner(pts(&square(2.0, 2.0, 2.0))),
        ]),
        SPolygon::with_rings(vec![
            PolygonRing::Outer(pts(&square(20.0, 0.0, 5.0))),
            PolygonRing::Outer(pts(&square(40.0, 0.0, 5.0))),
            PolygonRing::Inner(pts(&square(41.0, 1.0, 1.0))),
        ]),
    ];
    for (i, s) in shapes.iter().enumerate() {
        let mut rec = Record::default();
        rec.insert("ID".into(), FieldValue::Numeric(Some(500.0 + i as f64)));
        rec.insert("name".into(), FieldValue::Character(Some("x".into())));
        w.write_shape_and_record(s, &rec).unwrap();
    }
    drop(w);
    let (recs, report) = read_report(&path);
    assert_eq!(report.skipped_total(), 0, "{report}");
    assert_eq!((recs[0].id, recs[1].id), (500, 501));
    match &recs[0].geometry {
        Geometry::Polygon(p) => assert_eq!(p.interiors().len(), 1),
        other => panic!("{other:?}"),
    }
    match &recs[1].geometry {
        Geometry::MultiPolygon(m) => {
            assert_eq!(m.0.len(), 2);
            // the hole went to the shell that contains it
            assert_eq!((m.0[0].interiors().len(), m.0[1].interiors().len()), (0, 1));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        recs[0].bbox,
        geo_types::Rect::new(coord! {x: 0., y: 0.}, coord! {x: 10., y: 10.})
    );
    // Without the .dbf the shapes are still read, numbered 0, 1, ...
    std::fs::remove_file(path.with_extension("dbf")).unwrap();
    let (recs, _) = read_report(&path);
    assert_eq!((recs[0].id, recs[1].id), (0, 1));
    // A truncated .shp is an error naming the file.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 20]).unwrap();
    std::fs::remove_file(path.with_extension("shx")).unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(e.contains("b.shp"), "{e}");
}

/// A small town: buildings as ways and relations, plus the usual mess.
fn osm_fixture(path: &std::path::Path) {
    let mut b = PbfBuilder::new();
    let grid = |b: &mut PbfBuilder, base: i64, x0: f64, y0: f64, s: f64| {
        b.node(base, x0, y0)
            .node(base + 1, x0 + s, y0)
            .node(base + 2, x0 + s, y0 + s)
            .node(base + 3, x0, y0 + s);
    };
    grid(&mut b, 1, -47.0, -22.0, 0.001); // way 100: a closed building
    grid(&mut b, 11, -47.01, -22.0, 0.001); // way 101: open building way
    grid(&mut b, 21, -47.02, -22.0, 0.01); // relation 900 outer (split in two ways)
    grid(&mut b, 31, -47.018, -21.998, 0.002); // relation 900 inner
    grid(&mut b, 41, -47.03, -22.0, 0.001); // way 103: highway, not a building
    b.way(100, &[("building", "yes")], &[1, 2, 3, 4, 1])
        .way(101, &[("building", "house")], &[11, 12, 13, 14])
        .way(102, &[("building", "yes")], &[1, 2, 999, 1]) // node 999 is missing
        .way(103, &[("highway", "residential")], &[41, 42, 43, 44, 41])
        .way(104, &[("building", "no")], &[41, 42, 43, 41])
        .way(200, &[], &[21, 22, 23])
        .way(201, &[], &[21, 24, 23]) // reversed direction: must still join
        .way(202, &[], &[31, 32, 33, 34, 31])
        .relation(
            900,
            &[("type", "multipolygon"), ("building", "yes")],
            &[
                (Member::Way, 200, "outer"),
                (Member::Way, 201, ""),
                (Member::Way, 202, "inner"),
            ],
        )
        .relation(
            901,
            &[("type", "multipolygon"), ("building", "yes")],
            &[(Member::Way, 777, "outer")], // member way missing from the extract
        )
        .relation(
            902,
            &[("type", "multipolygon"), ("landuse", "forest")],
            &[(Member::Way, 200, "outer")],
        );
    b.write(path).unwrap();
}

#[test]
fn osm_pbf_buildings_from_ways_and_relations() {
    let dir = tmp();
    let path = file(&dir, "town.osm.pbf");
    osm_fixture(&path);
    let (recs, report) = read_report(&path);
    let ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![100, 900 | RELATION_ID_FLAG], "{report}");
    match &recs[0].geometry {
        Geometry::Polygon(p) => {
            assert_eq!(p.exterior().0.len(), 5);
            assert!((p.exterior().0[0].x - -47.0).abs() < 1e-9);
            assert!((p.exterior().0[0].y - -22.0).abs() < 1e-9);
        }
        other => panic!("{other:?}"),
    }
    match &recs[1].geometry {
        Geometry::MultiPolygon(m) => {
            assert_eq!(m.0.len(), 1);
            assert_eq!(m.0[0].exterior().0.len(), 5);
            assert_eq!(m.0[0].interiors().len(), 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(report.records_read, 5); // ways 100, 101, 102 and relations 900, 901
    assert_eq!(report.count(Issue::OpenWay), 1);
    assert_eq!(report.count(Issue::MissingReferences), 2);
    assert!(
        report.examples.iter().any(|e| e.starts_with("way 101")),
        "{report}"
    );
    // A truncated file is an error naming the file.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 30]).unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(e.contains("town.osm.pbf"), "{e}");
}

#[test]
fn flatgeobuf_from_other_writers_and_truncation() {
    let dir = tmp();
    let path = file(&dir, "x.fgb");
    write(&path, &Dataset::Geo(mixed_fgb())).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for cut in [bytes.len() - 1, bytes.len() / 2, 20, 4] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let e = open(&path).unwrap_err().to_string();
        assert!(e.contains("x.fgb"), "cut {cut}: {e}");
    }
    std::fs::write(&path, b"not a flatgeobuf at all").unwrap();
    assert!(open(&path).unwrap_err().to_string().contains("x.fgb"));
}

#[test]
fn npy_of_other_types_and_orders() {
    use npyz::WriterBuilder;
    let dir = tmp();
    let path = file(&dir, "f32.npy");
    let mut out = std::fs::File::create(&path).unwrap();
    let mut w = npyz::WriteOptions::<f32>::new()
        .default_dtype()
        .shape(&[3, 2])
        .writer(&mut out)
        .begin_nd()
        .unwrap();
    w.extend([1.0f32, 2.0, 3.0, f32::NAN, 5.0, 6.0]).unwrap();
    w.finish().unwrap();
    let l = read(&path, &ReadOptions::default()).unwrap();
    let v = l.dataset.as_vectors().unwrap();
    assert_eq!(v.as_slice(), &[1.0, 2.0, 5.0, 6.0]);
    assert_eq!(l.report.count(Issue::NonFiniteVector), 1);
    assert!(l.report.examples[0].starts_with("row 1"));
    // Fortran order is transposed to rows.
    let path = file(&dir, "fortran.npy");
    let mut out = std::fs::File::create(&path).unwrap();
    let mut w = npyz::WriteOptions::<i32>::new()
        .default_dtype()
        .shape(&[2, 3])
        .order(npyz::Order::Fortran)
        .writer(&mut out)
        .begin_nd()
        .unwrap();
    w.extend([1, 4, 2, 5, 3, 6]).unwrap();
    w.finish().unwrap();
    let v = open(&path).unwrap();
    assert_eq!(
        v.as_vectors().unwrap().as_slice(),
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    // Truncated data is an error.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(e.contains("fortran.npy") && e.contains("truncated"), "{e}");
}
