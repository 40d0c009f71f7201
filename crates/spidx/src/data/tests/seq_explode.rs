//! GeoJSON text sequences (newline-delimited and RFC 8142), exploding multi-part geometries,
//! and FlatGeobuf ids as other tools read them.

use super::*;
use flatgeobuf::{ColumnType, FgbReader};

#[test]
fn newline_delimited_features_and_geometries() {
    let dir = tmp();
    let path = file(&dir, "x.geojsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"type":"Feature","id":4611686018427387905,"properties":{"name":"a"},"geometry":{"type":"Point","coordinates":[1,2]}}"#,
            "\n\n",
            r#"{"type":"Feature","properties":{"id":"17"},"geometry":{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]]]}}"#,
            "\r\n",
            r#"{"type":"LineString","coordinates":[[0,0],[1,1]]}"#,
            "\n",
            r#"{"type":"FeatureCollection","features":[]}"#,
            "\n",
            r#"{"type":"Feature","geometry":null,"properties":{}}"#,
            "\n",
            // A truncated last record (RFC 8142: skip it, keep the rest).
            r#"{"type":"Feature","id":9,"geometry":{"type":"Point","coordi"#,
        ),
    )
    .unwrap();
    let (recs, report) = read_report(&path);
    assert_eq!(report.format, "geojsonseq");
    let ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    // The ordinal of a record without id counts every record met (as in GeoJSON).
    assert_eq!(ids, vec![(1 << 62) + 1, 17, 2]);
    assert_eq!(report.records_read, 6);
    assert_eq!(report.count(Issue::Unparsable), 2, "{report}");
    assert_eq!(report.count(Issue::MissingGeometry), 1, "{report}");
    assert!(
        report
            .examples
            .iter()
            .any(|e| e.starts_with("line 7:") && e.contains("not a JSON text")),
        "the bad record is named by its line: {:?}",
        report.examples
    );
    assert!(report
        .examples
        .iter()
        .any(|e| e.contains("FeatureCollection")));
}

#[test]
fn record_separated_sequences_may_span_lines() {
    let dir = tmp();
    let path = file(&dir, "x.geojsons");
    let text = "\u{1e}{\"type\":\"Feature\",\"id\":3,\n \"geometry\":{\"type\":\"Point\",\n\"coordinates\":[5,6]}}\n\
                \u{1e}{\"type\":\"Point\",\"coordinates\":[7,8]}\n\
                \u{1e}{\"type\":\"Point\",\"coord\n";
    std::fs::write(&path, text).unwrap();
    let (recs, report) = read_report(&path);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].id, 3);
    assert_eq!(recs[1].geometry, Geometry::Point(Point::new(7.0, 8.0)));
    assert_eq!(report.count(Issue::Unparsable), 1);
    assert!(report.examples.iter().any(|e| e.starts_with("record 2:")));
    // The format can also be named, whatever the extension.
    let other = file(&dir, "x.txt");
    std::fs::copy(&path, &other).unwrap();
    let opts = ReadOptions {
        format: Some(Format::GeoJsonSeq),
        ..Default::default()
    };
    assert_eq!(read(&other, &opts).unwrap().dataset.len(), 2);
    // A FeatureCollection read as a sequence: its one (multi-line) record is refused by line.
    let fc = file(&dir, "fc.ndjson");
    std::fs::write(&fc, "{\"type\":\"FeatureCollection\",\"features\":[]}\n").unwrap();
    let l = read(&fc, &ReadOptions::default()).unwrap();
    assert!(l.dataset.is_empty());
    assert_eq!(l.report.count(Issue::Unparsable), 1);
}

#[test]
fn explode_makes_each_part_an_object_with_dense_ids() {
    let dir = tmp();
    let path = file(&dir, "m.geojson");
    write(&path, &Dataset::Geo(mixed())).unwrap();
    let opts = ReadOptions {
        explode: true,
        ..Default::default()
    };
    let l = read(&path, &opts).unwrap();
    let recs = geo(l.dataset);
    // point, line, polygon, 2 polygons, 2 points, 2 lines, point + polygon.
    let kinds: Vec<&str> = recs.iter().map(|r| kind_name(&r.geometry)).collect();
    assert_eq!(
        kinds,
        [
            "point",
            "linestring",
            "polygon",
            "polygon",
            "polygon",
            "point",
            "point",
            "linestring",
            "linestring",
            "point",
            "polygon"
        ]
    );
    let ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    assert_eq!(ids, (0..11).collect::<Vec<u64>>());
    assert_eq!(l.report.records_read, 7);
    assert_eq!(l.report.records_kept, 11);
    assert_eq!(l.report.exploded, 4);
    assert_eq!(l.report.kinds["polygon"], 4);
    // Each part is exactly the part of the source geometry, with its own bounding box.
    let Geometry::MultiPolygon(m) = &mixed()[3].geometry else {
        panic!("mixed()[3] is the multipolygon")
    };
    assert_eq!(recs[3].geometry, Geometry::Polygon(m.0[0].clone()));
    assert_eq!(recs[4].geometry, Geometry::Polygon(m.0[1].clone()));
    assert_eq!(recs[4].bbox, bounding_rect(&recs[4].geometry).unwrap());
    // Duplicate source ids do not matter once exploded (every part gets a new id).
    let dup = file(&dir, "dup.wkt");
    std::fs::write(&dup, "5\tPOINT(1 1)\n5\tMULTIPOINT((2 2),(3 3))\n").unwrap();
    assert!(read(&dup, &ReadOptions::default()).is_err());
    let l = read(&dup, &opts).unwrap();
    assert_eq!(geo(l.dataset).len(), 3);
}

#[test]
fn explode_nested_collections_flatten() {
    let g = Geometry::GeometryCollection(geo_types::GeometryCollection(vec![
        Geometry::GeometryCollection(geo_types::GeometryCollection(vec![Geometry::MultiPoint(
            vec![(1.0, 1.0), (2.0, 2.0)].into(),
        )])),
        Geometry::Point(Point::new(3.0, 3.0)),
    ]));
    let parts = explode(g);
    assert_eq!(
        parts,
        vec![
            Geometry::Point(Point::new(1.0, 1.0)),
            Geometry::Point(Point::new(2.0, 2.0)),
            Geometry::Point(Point::new(3.0, 3.0)),
        ]
    );
    let single = Geometry::Point(Point::new(0.0, 0.0));
    assert_eq!(explode(single.clone()), vec![single]);
}

fn id_column_type(path: &std::path::Path) -> ColumnType {
    let mut f = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let r = FgbReader::open(&mut f).unwrap();
    let cols = r.header().columns().unwrap();
    let col = cols.iter().find(|c| c.name() == "id").unwrap();
    col.type_()
}

#[test]
fn flatgeobuf_ids_are_signed_64_bit_when_they_fit() {
    // GDAL reads an unsigned 64-bit column as float64 (losing bits beyond 2^53) and a
    // signed one as Integer64: ids below 2^63 are written signed.
    let dir = tmp();
    let path = file(&dir, "ids.fgb");
    let big = (1u64 << 62) + 1;
    let recs = vec![
        GeoRecord::new(big, Geometry::Point(Point::new(0.0, 0.0))).unwrap(),
        GeoRecord::new((1 << 53) + 1, Geometry::Point(Point::new(1.0, 0.0))).unwrap(),
        GeoRecord::new(0, Geometry::Point(Point::new(2.0, 0.0))).unwrap(),
    ];
    write(&path, &Dataset::Geo(recs.clone())).unwrap();
    assert_eq!(id_column_type(&path), ColumnType::Long);
    assert_eq!(read_report(&path).0, recs);
    // An id of 2^63 or more only fits unsigned; spidx still reads it back exactly.
    let huge = vec![GeoRecord::new(u64::MAX, Geometry::Point(Point::new(0.0, 0.0))).unwrap()];
    std::fs::remove_file(&path).unwrap(); // A writer creates only new files.
    write(&path, &Dataset::Geo(huge.clone())).unwrap();
    assert_eq!(id_column_type(&path), ColumnType::ULong);
    assert_eq!(read_report(&path).0, huge);
}
