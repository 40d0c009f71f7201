//! The exchange formats GIS users ship: CSV (WKT, hex WKB, x/y), GeoPackage and GeoParquet,
//! each made here, read back with their ids, source ids and CRS; and the CRS of the formats
//! that carry one (Shapefile `.prj`, FlatGeobuf header, GeoJSON `crs`).

use super::*;
use crate::data::fixtures::{self, ParquetCrs};

fn opts() -> ReadOptions {
    ReadOptions::default()
}

fn read_with(path: &std::path::Path, o: &ReadOptions) -> (Vec<GeoRecord>, ImportReport) {
    let l = read(path, o).unwrap();
    (geo(l.dataset), l.report)
}

/// Same ids and the same geometries (compared as WKT: exact coordinates).
fn assert_same(got: &[GeoRecord], want: &[GeoRecord]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.id, w.id);
        assert_eq!(
            fixtures::wkt(&g.geometry),
            fixtures::wkt(&w.geometry),
            "id {}",
            g.id
        );
    }
}

#[test]
fn csv_with_a_wkt_column_reads_ids_and_geometries() {
    let dir = tmp();
    let path = file(&dir, "a.csv");
    let recs = mixed();
    fixtures::write_csv_wkt(&path, &recs);
    let (got, rep) = read_report(&path);
    assert_eq!(rep.format, "csv");
    assert_eq!(rep.crs, None);
    assert_same(&got, &recs);
    assert!(got
        .iter()
        .all(|r| r.source.is_none() && r.source_id().id == r.id));

    // Exploded: every part an object, each tracing back to its feature id and part.
    let o = ReadOptions {
        explode: true,
        ..opts()
    };
    let (parts, _) = read_with(&path, &o);
    let multi = &recs[3]; // a MultiPolygon of 2 polygons
    let of_multi: Vec<_> = parts
        .iter()
        .filter(|r| r.source_id().id == multi.id)
        .collect();
    assert_eq!(of_multi.len(), 2);
    assert_eq!(of_multi[0].source_id().part, Some(0));
    assert_eq!(of_multi[1].source_id().part, Some(1));
    assert_eq!(
        of_multi[1].source_id().to_string(),
        format!("{}#1", multi.id)
    );
    // Renumbered: the source's id is kept beside the new one.
    let o = ReadOptions {
        renumber: true,
        ..opts()
    };
    let (renum, _) = read_with(&path, &o);
    assert_eq!(renum[2].id, 2);
    assert_eq!(
        renum[2].source_id(),
        SourceId {
            id: recs[2].id,
            part: None
        }
    );
}

#[test]
fn csv_points_from_xy_columns_any_delimiter_and_named_columns() {
    let dir = tmp();
    // Semicolons, lon/lat found by name, no id column: ids are row numbers; a bad row is
    // skipped with its line and does not shift the others' numbers.
    let path = file(&dir, "p.csv");
    std::fs::write(&path, "name;lon;lat\na;1.5;2.5\nb;oops;3\n\"c;d\";-4;5e1\n").unwrap();
    let (got, rep) = read_report(&path);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].id, got[1].id), (0, 2));
    assert_eq!(got[1].bbox.min(), geo_types::coord! {x: -4.0, y: 50.0});
    assert_eq!(rep.skipped["unparsable"], 1);
    assert!(rep.examples[0].starts_with("line 3:"), "{:?}", rep.examples);

    // A TSV with columns named by option, and an `fid` id column.
    let tsv = file(&dir, "p.tsv");
    std::fs::write(&tsv, "fid\tE\tN\n7\t10\t20\n9\t11\tNaN\n").unwrap();
    let o = ReadOptions {
        columns: Columns {
            x: Some("e".into()),
            y: Some("n".into()),
            ..Columns::default()
        },
        ..opts()
    };
    let (got, rep) = read_with(&tsv, &o);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, 7);
    assert_eq!(rep.skipped["non_finite_coordinate"], 1);

    // A named column that is not there: an error listing the header.
    let o = ReadOptions {
        columns: Columns {
            geometry: Some("shape_wkt".into()),
            ..Columns::default()
        },
        ..opts()
    };
    let e = read(&tsv, &o).unwrap_err().to_string();
    assert!(e.contains("shape_wkt") && e.contains("fid, E, N"), "{e}");
    // No geometry column at all.
    let none = file(&dir, "n.csv");
    std::fs::write(&none, "a,b\n1,2\n").unwrap();
    let e = read(&none, &opts()).unwrap_err().to_string();
    assert!(
        e.contains("no geometry column") && e.contains("--geometry-column"),
        "{e}"
    );
    // Column options on a format without columns are refused, not ignored.
    let wkt = file(&dir, "x.wkt");
    std::fs::write(&wkt, "POINT(1 2)\n").unwrap();
    assert!(read(&wkt, &o).is_err());
}

#[test]
fn csv_hex_wkb_column_and_given_crs() {
    let dir = tmp();
    let path = file(&dir, "w.csv");
    let recs = mixed();
    let mut text = String::from("id,geom\n");
    for r in &recs {
        let hex: String = fixtures::wkb(&r.geometry)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        text.push_str(&format!("{},{hex}\n", r.id));
    }
    text.push_str("999,0102\n");
    std::fs::write(&path, text).unwrap();
    let o = ReadOptions {
        crs: Some(Crs::parse("EPSG:3857").unwrap()),
        ..opts()
    };
    let (got, rep) = read_with(&path, &o);
    assert_same(&got, &recs);
    assert_eq!(rep.skipped_total(), 1);
    assert_eq!(rep.crs.as_ref().unwrap().id, "EPSG:3857");
    assert!(rep.to_string().contains("crs EPSG:3857"), "{rep}");
}

#[test]
fn geopackage_reads_fids_crs_and_layers() {
    let dir = tmp();
    let path = file(&dir, "a.gpkg");
    let recs = mixed();
    let wkt = r#"PROJCS["WGS 84 / Pseudo-Mercator",AUTHORITY["EPSG","3857"]]"#;
    fixtures::write_gpkg(
        &path,
        &[("buildings", &recs)],
        Some((3857, "EPSG", 3857, wkt)),
    );
    let (got, rep) = read_report(&path);
    assert_eq!(rep.format, "geopackage");
    assert_same(&got, &recs);
    assert_eq!(rep.crs.as_ref().unwrap().id, "EPSG:3857");
    // A damaged blob and a NULL geometry are skipped and counted.
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute(
        "INSERT INTO buildings (fid, geom) VALUES (5000, X'47500003'), (5001, NULL)",
        [],
    )
    .unwrap();
    drop(db);
    let (got, rep) = read_report(&path);
    assert_eq!(got.len(), recs.len());
    assert_eq!(rep.skipped_total(), 2);

    // Two layers: an error listing them, unless one is chosen.
    let two = file(&dir, "b.gpkg");
    let few = &recs[..2];
    fixtures::write_gpkg(&two, &[("roads", few), ("parcels", &recs)], None);
    let e = read(&two, &opts()).unwrap_err().to_string();
    assert!(e.contains("parcels, roads") && e.contains("--layer"), "{e}");
    let o = ReadOptions {
        columns: Columns {
            layer: Some("roads".into()),
            ..Columns::default()
        },
        ..opts()
    };
    let (got, rep) = read_with(&two, &o);
    assert_same(&got, few);
    assert_eq!(rep.crs, None, "srs_id 0 is the undefined geographic SRS");
    // Not a GeoPackage at all.
    let junk = file(&dir, "junk.gpkg");
    std::fs::write(&junk, b"this is not sqlite").unwrap();
    let e = read(&junk, &opts()).unwrap_err().to_string();
    assert!(e.contains("junk.gpkg"), "{e}");
}

#[test]
fn geoparquet_reads_wkb_ids_and_crs() {
    let dir = tmp();
    let path = file(&dir, "a.parquet");
    let recs = mixed();
    let pj = serde_json::json!({
        "type": "ProjectedCRS", "name": "WGS 84 / UTM zone 31N",
        "id": {"authority": "EPSG", "code": 32631}
    });
    fixtures::write_geoparquet(&path, &recs, "WKB", ParquetCrs::Json(pj));
    let (got, rep) = read_report(&path);
    assert_eq!(rep.format, "geoparquet");
    assert_same(&got, &recs);
    assert_eq!(rep.crs.as_ref().unwrap().id, "EPSG:32631");

    // No `crs` key: OGC:CRS84, the same as EPSG:4326; `null`: unknown.
    fixtures::write_geoparquet(&path, &recs, "WKB", ParquetCrs::Absent);
    let (_, rep) = read_report(&path);
    assert!(rep.crs.unwrap().same_as(&Crs::code("EPSG", 4326)));
    fixtures::write_geoparquet(&path, &recs, "WKB", ParquetCrs::Null);
    assert_eq!(read_report(&path).1.crs, None);
    // A given CRS that differs from the file's: an error naming both.
    fixtures::write_geoparquet(&path, &recs, "WKB", ParquetCrs::Absent);
    let o = ReadOptions {
        crs: Some(Crs::code("EPSG", 3857)),
        ..opts()
    };
    let e = read(&path, &o).unwrap_err().to_string();
    assert!(e.contains("EPSG:3857") && e.contains("EPSG:4326"), "{e}");

    // Native GeoArrow encodings are refused by name.
    fixtures::write_geoparquet(&path, &recs, "polygon", ParquetCrs::Absent);
    let e = read(&path, &opts()).unwrap_err().to_string();
    assert!(e.contains("'polygon'") && e.contains("WKB"), "{e}");
    // A truncated file is an error naming it, not a panic.
    fixtures::write_geoparquet(&path, &recs, "WKB", ParquetCrs::Absent);
    let bytes = std::fs::read(&path).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 3, 10] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let e = read(&path, &opts()).unwrap_err().to_string();
        assert!(e.contains("a.parquet"), "{e}");
    }
}

#[test]
fn crs_of_shapefile_flatgeobuf_and_geojson() {
    let dir = tmp();
    // GeoJSON (2008) crs member.
    let gj = file(&dir, "a.geojson");
    std::fs::write(
        &gj,
        r#"{"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::3857"}},
            "features":[{"type":"Feature","id":4,"geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}]}"#,
    )
    .unwrap();
    let (got, rep) = read_report(&gj);
    assert_eq!(got[0].id, 4);
    assert_eq!(rep.crs.unwrap().id, "EPSG:3857");
    // Without one: none (RFC 7946 files are not assumed to be anything).
    write(&file(&dir, "b.geojson"), &Dataset::Geo(mixed())).unwrap();
    assert_eq!(read_report(&file(&dir, "b.geojson")).1.crs, None);

    // FlatGeobuf header.
    let fgb = file(&dir, "a.fgb");
    {
        use flatgeobuf::{FgbCrs, FgbWriter, FgbWriterOptions, GeometryType};
        let options = FgbWriterOptions {
            write_index: false,
            crs: FgbCrs {
                code: 25832,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut w = FgbWriter::create_with_options("t", GeometryType::Point, options).unwrap();
        let p = Geometry::Point(geo_types::Point::new(3.0, 4.0));
        w.add_feature_geom(p, |_| {}).unwrap();
        let mut out = std::fs::File::create(&fgb).unwrap();
        w.write(&mut out).unwrap();
    }
    assert_eq!(read_report(&fgb).1.crs.unwrap().id, "EPSG:25832");

    // Shapefile .prj beside the .shp.
    let shp = file(&dir, "a.shp");
    {
        let pt = shapefile::Point::new(1.0, 2.0);
        let mut w = shapefile::ShapeWriter::from_path(&shp).unwrap();
        w.write_shape(&pt).unwrap();
    }
    assert_eq!(read_report(&shp).1.crs, None);
    std::fs::write(
        file(&dir, "a.prj"),
        r#"GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]"#,
    )
    .unwrap();
    assert_eq!(read_report(&shp).1.crs.unwrap().id, "EPSG:4326");
}
