//! Writers of small exchange-format files for tests (compiled for tests and the
//! `test-fixtures` feature only): a CSV with a WKT column, a GeoPackage and a GeoParquet
//! file, each made the way GIS tools make them, so the readers are tested on files made in
//! the test rather than on stored binaries. spidx itself does not write these formats.

use super::GeoRecord;
use geo_types::Geometry;
use geozero::{CoordDimensions, ToWkb};
use std::path::Path;
use std::sync::Arc;

/// The WKT of `g`.
pub fn wkt(g: &Geometry<f64>) -> String {
    let mut s = String::new();
    super::formats::text::wkt_text(g, &mut s);
    s
}

/// The little-endian 2-D WKB of `g`.
pub fn wkb(g: &Geometry<f64>) -> Vec<u8> {
    g.to_wkb(CoordDimensions::xy()).expect("WKB of a geometry")
}

/// Writes `records` as CSV with columns `id`, `name` and `wkt` (quoted: WKT holds commas).
pub fn write_csv_wkt(path: &Path, records: &[GeoRecord]) {
    let mut w = csv::Writer::from_path(path).expect("create csv");
    w.write_record(["id", "name", "wkt"]).expect("header");
    for r in records {
        w.write_record([
            r.id.to_string(),
            format!("feature, {}", r.id),
            wkt(&r.geometry),
        ])
        .expect("row");
    }
    w.flush().expect("flush");
}

/// A CRS row of `gpkg_spatial_ref_sys`: srs id, organisation, code, WKT definition.
pub type GpkgSrs<'a> = (i64, &'a str, i64, &'a str);

/// Writes a GeoPackage with one feature table per layer (name, records): the
/// `gpkg_spatial_ref_sys`, `gpkg_contents` and `gpkg_geometry_columns` tables as GDAL
/// writes them, a `fid` integer primary key holding the record ids, and a `geom` column
/// of GeoPackage blobs (`GP` header with an envelope, then WKB).
pub fn write_gpkg(path: &Path, layers: &[(&str, &[GeoRecord])], srs: Option<GpkgSrs>) {
    let db = rusqlite::Connection::open(path).expect("create gpkg");
    db.execute_batch(
        "PRAGMA application_id = 1196444487;
         CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT NOT NULL, srs_id INTEGER PRIMARY KEY,
           organization TEXT NOT NULL, organization_coordsys_id INTEGER NOT NULL,
           definition TEXT NOT NULL, description TEXT);
         INSERT INTO gpkg_spatial_ref_sys VALUES
           ('Undefined cartesian SRS', -1, 'NONE', -1, 'undefined', NULL),
           ('Undefined geographic SRS', 0, 'NONE', 0, 'undefined', NULL);
         CREATE TABLE gpkg_contents (table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL,
           identifier TEXT, description TEXT DEFAULT '', last_change DATETIME,
           min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE, srs_id INTEGER);
         CREATE TABLE gpkg_geometry_columns (table_name TEXT NOT NULL, column_name TEXT NOT NULL,
           geometry_type_name TEXT NOT NULL, srs_id INTEGER NOT NULL, z TINYINT NOT NULL,
           m TINYINT NOT NULL);",
    )
    .expect("gpkg tables");
    let srs_id = match srs {
        Some((id, org, code, def)) => {
            db.execute(
                "INSERT INTO gpkg_spatial_ref_sys VALUES ('test', ?1, ?2, ?3, ?4, NULL)",
                rusqlite::params![id, org, code, def],
            )
            .expect("srs");
            id
        }
        None => 0,
    };
    for (name, records) in layers {
        db.execute(
            &format!(
                "CREATE TABLE \"{name}\" (fid INTEGER PRIMARY KEY AUTOINCREMENT, geom GEOMETRY, label TEXT)"
            ),
            [],
        )
        .expect("feature table");
        db.execute(
            "INSERT INTO gpkg_contents (table_name, data_type, srs_id) VALUES (?1, 'features', ?2)",
            rusqlite::params![name, srs_id],
        )
        .expect("contents");
        db.execute(
            "INSERT INTO gpkg_geometry_columns VALUES (?1, 'geom', 'GEOMETRY', ?2, 0, 0)",
            rusqlite::params![name, srs_id],
        )
        .expect("geometry columns");
        for r in records.iter() {
            db.execute(
                &format!("INSERT INTO \"{name}\" (fid, geom, label) VALUES (?1, ?2, 'x')"),
                rusqlite::params![r.id as i64, gpkg_blob(r, srs_id as i32)],
            )
            .expect("feature");
        }
    }
}

/// A GeoPackage geometry blob: `GP`, version 0, flags (little-endian, xy envelope), the
/// SRS id, the envelope, then WKB.
pub fn gpkg_blob(r: &GeoRecord, srs_id: i32) -> Vec<u8> {
    let mut b = vec![b'G', b'P', 0, 0b0000_0011];
    b.extend_from_slice(&srs_id.to_le_bytes());
    for v in [
        r.bbox.min().x,
        r.bbox.max().x,
        r.bbox.min().y,
        r.bbox.max().y,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&wkb(&r.geometry));
    b
}

/// How [`write_geoparquet`] writes the geometry column's `crs`.
pub enum ParquetCrs {
    /// No `crs` key (the specification's default, OGC:CRS84).
    Absent,
    /// `"crs": null` (unknown).
    Null,
    /// This PROJJSON (or other JSON) value.
    Json(serde_json::Value),
}

/// Writes `records` as GeoParquet 1.1 (Snappy-compressed): an `id` INT64 column and a
/// `geometry` BYTE_ARRAY column of WKB, with `geo` metadata naming `geometry` as the primary
/// column with the given encoding and CRS.
pub fn write_geoparquet(path: &Path, records: &[GeoRecord], encoding: &str, crs: ParquetCrs) {
    use parquet::basic::{Compression, Repetition, Type as Physical};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::Type;
    let mut column = serde_json::json!({ "encoding": encoding, "geometry_types": [] });
    match crs {
        ParquetCrs::Absent => {}
        ParquetCrs::Null => column["crs"] = serde_json::Value::Null,
        ParquetCrs::Json(v) => column["crs"] = v,
    }
    let geo = serde_json::json!({
        "version": "1.1.0",
        "primary_column": "geometry",
        "columns": { "geometry": column },
    });
    let fields = vec![
        Arc::new(
            Type::primitive_type_builder("id", Physical::INT64)
                .with_repetition(Repetition::REQUIRED)
                .build()
                .expect("id"),
        ),
        Arc::new(
            Type::primitive_type_builder("geometry", Physical::BYTE_ARRAY)
                .with_repetition(Repetition::OPTIONAL)
                .build()
                .expect("geometry"),
        ),
    ];
    let schema = Arc::new(
        Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .expect("schema"),
    );
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(vec![KeyValue::new("geo".into(), geo.to_string())]))
        .build();
    let file = std::fs::File::create(path).expect("create parquet");
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(props)).expect("writer");
    let mut group = w.next_row_group().expect("row group");
    let ids: Vec<i64> = records.iter().map(|r| r.id as i64).collect();
    let geoms: Vec<ByteArray> = records
        .iter()
        .map(|r| ByteArray::from(wkb(&r.geometry)))
        .collect();
    let defs = vec![1i16; records.len()];
    let mut col = group.next_column().expect("column").expect("id column");
    col.typed::<Int64Type>()
        .write_batch(&ids, None, None)
        .expect("ids");
    col.close().expect("close");
    let mut col = group
        .next_column()
        .expect("column")
        .expect("geometry column");
    col.typed::<ByteArrayType>()
        .write_batch(&geoms, Some(&defs), None)
        .expect("geometries");
    col.close().expect("close");
    group.close().expect("close group");
    w.close().expect("close file");
}
