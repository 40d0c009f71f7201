//! GeoParquet 1.0 and 1.1 (`.parquet`, `.geoparquet`): a Parquet file whose `geo` metadata
//! names its geometry columns, read with the `parquet` crate (its row reader; no Arrow).
//!
//! - The geometry column is the metadata's `primary_column` (or [`Columns::geometry`], which
//!   must be one of its columns). Its encoding must be `WKB` (binary values, each checked by
//!   the WKB scanner before it is decoded); GeoParquet 1.1's native GeoArrow encodings
//!   (`point`, `polygon`, ...) are refused with a message naming the encoding. A file
//!   without `geo` metadata (plain Parquet) is read when [`Columns::geometry`] names a
//!   binary WKB column, without a CRS.
//! - The id is an integer `id` (or `fid`) column, or [`Columns::id`]; without one the row's
//!   0-based number. A NULL or negative id is counted as `missing_id` and the row number
//!   is used.
//! - The CRS is the column's `crs` (PROJJSON, or a string such as `EPSG:3857`); an absent
//!   `crs` means `OGC:CRS84` (the specification's default), a `null` one an unknown CRS.
//! - Compression: uncompressed and Snappy (the default of GDAL, geopandas and pyarrow);
//!   other codecs are refused by the Parquet reader with its own message.
//!
//! The Parquet decoder is not written for hostile input; a panic inside it is caught and
//! reported as a damaged file.

use super::text::parse_wkb_record;
use super::{corrupted, open_file, Format};
use crate::data::raw::RawBuilder;
use crate::data::{Columns, Crs, GeoSink, Issue, Loc};
use crate::{Error, Result};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;

/// Header names taken for the id column.
const ID_NAMES: [&str; 2] = ["id", "fid"];

/// What the `geo` metadata says about the geometry column used.
struct GeoColumn {
    name: String,
    crs: Option<Crs>,
}

/// Reads the `geo` metadata: the geometry column to use and its CRS.
fn geo_column(path: &Path, geo: Option<&str>, columns: &Columns) -> Result<GeoColumn> {
    let bad = |m: String| corrupted(path, Format::GeoParquet, m);
    let Some(geo) = geo else {
        return match &columns.geometry {
            Some(g) => Ok(GeoColumn {
                name: g.clone(),
                crs: None,
            }),
            None => Err(Error::invalid(
                "geometry column",
                format!(
                    "{} has no GeoParquet `geo` metadata (a plain Parquet file); name its WKB \
                     column with --geometry-column",
                    path.display()
                ),
            )),
        };
    };
    let meta: serde_json::Value = serde_json::from_str(geo)
        .map_err(|e| bad(format!("its `geo` metadata is not JSON: {e}")))?;
    let cols = meta
        .get("columns")
        .and_then(|c| c.as_object())
        .ok_or_else(|| bad("its `geo` metadata has no `columns` object".to_string()))?;
    let name = match &columns.geometry {
        Some(g) => g.clone(),
        None => meta
            .get("primary_column")
            .and_then(|p| p.as_str())
            .ok_or_else(|| bad("its `geo` metadata has no `primary_column`".to_string()))?
            .to_string(),
    };
    let col = cols.get(&name).ok_or_else(|| {
        Error::invalid(
            "geometry column",
            format!(
                "{}: '{name}' is not a geometry column of its `geo` metadata (those: {})",
                path.display(),
                cols.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    let encoding = col.get("encoding").and_then(|e| e.as_str()).unwrap_or("");
    if !encoding.eq_ignore_ascii_case("wkb") {
        return Err(Error::invalid(
            "geoparquet encoding",
            format!(
                "{}: column '{name}' is encoded as '{encoding}'; spidx reads WKB-encoded \
                 GeoParquet (geopandas: to_parquet(..., geometry_encoding='WKB'); GDAL: \
                 -lco GEOMETRY_ENCODING=WKB)",
                path.display()
            ),
        ));
    }
    let crs = match col.get("crs") {
        None => Some(Crs::code("OGC", "CRS84")),
        Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(Crs::parse(s)?),
        Some(v) => Some(
            Crs::from_projjson(v)
                .ok_or_else(|| bad(format!("the `crs` of column '{name}' names no CRS")))?,
        ),
    };
    Ok(GeoColumn { name, crs })
}

/// Reads a GeoParquet file into `sink`.
pub(crate) fn read(path: &Path, columns: &Columns, sink: &mut GeoSink) -> Result<()> {
    if columns.x.is_some() || columns.y.is_some() || columns.layer.is_some() {
        return Err(Error::invalid(
            "columns",
            format!(
                "{} is GeoParquet: x/y columns apply to CSV files, layers to GeoPackage",
                path.display()
            ),
        ));
    }
    let file = open_file(path)?;
    let run = std::panic::AssertUnwindSafe(|| read_file(path, file, columns, sink));
    match std::panic::catch_unwind(run) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(corrupted(
                path,
                Format::GeoParquet,
                format!("the Parquet decoder failed on it (damaged file): {msg}"),
            ))
        }
    }
}

fn read_file(
    path: &Path,
    file: std::fs::File,
    columns: &Columns,
    sink: &mut GeoSink,
) -> Result<()> {
    let pq = |e: parquet::errors::ParquetError| corrupted(path, Format::GeoParquet, e);
    let reader = SerializedFileReader::new(file).map_err(pq)?;
    let meta = reader.metadata().file_metadata();
    let geo = meta
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == "geo"))
        .and_then(|k| k.value.as_deref());
    let gc = geo_column(path, geo, columns)?;
    if let Some(c) = gc.crs.clone() {
        sink.set_crs(c)?;
    }
    let schema = meta.schema();
    let fields = schema.get_fields();
    let field = |name: &str| fields.iter().find(|f| f.name() == name).cloned();
    let all = || {
        fields
            .iter()
            .map(|f| f.name().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let geom = field(&gc.name).ok_or_else(|| {
        Error::invalid(
            "geometry column",
            format!(
                "{} has no column '{}'; its columns: {}",
                path.display(),
                gc.name,
                all()
            ),
        )
    })?;
    let id = match &columns.id {
        Some(i) => Some(field(i).ok_or_else(|| {
            Error::invalid(
                "id column",
                format!(
                    "{} has no column '{i}'; its columns: {}",
                    path.display(),
                    all()
                ),
            )
        })?),
        None => ID_NAMES.iter().find_map(|n| {
            fields
                .iter()
                .find(|f| f.name().eq_ignore_ascii_case(n) && f.is_primitive())
                .cloned()
        }),
    };
    if !geom.is_primitive() {
        return Err(corrupted(
            path,
            Format::GeoParquet,
            format!("geometry column '{}' is not a binary column", gc.name),
        ));
    }
    let id_name = id.as_ref().map(|f| f.name().to_string());
    let mut projected: Vec<Arc<Type>> = vec![geom];
    projected.extend(id);
    let projection = Type::group_type_builder(schema.name())
        .with_fields(projected)
        .build()
        .map_err(pq)?;
    let rows = reader.get_row_iter(Some(projection)).map_err(pq)?;
    // No room reserved by the footer's `num_rows`: it is a count from the file, and rows
    // encoded by dictionary or run length cost far fewer bytes than the records they make.
    let mut builder = RawBuilder::new();
    let mut scratch = Vec::new();
    for (n, row) in rows.enumerate() {
        let n = n as u64;
        let row = row.map_err(|e| corrupted(path, Format::GeoParquet, format!("row {n}: {e}")))?;
        let loc = Loc::Row(n);
        let (mut raw, mut rid) = (
            Err((Issue::MissingGeometry, "no geometry value".to_string())),
            None,
        );
        for (name, value) in row.get_column_iter() {
            if *name == gc.name {
                raw = match value {
                    Field::Bytes(b) => parse_wkb_record(b.data(), &mut scratch, &mut builder),
                    Field::Null => Err((Issue::MissingGeometry, "NULL geometry".to_string())),
                    other => Err((
                        Issue::Unparsable,
                        format!("the geometry is {other}, not WKB bytes"),
                    )),
                };
            } else if Some(name) == id_name.as_ref() {
                let v = match *value {
                    Field::Long(v) => u64::try_from(v).ok(),
                    Field::Int(v) => u64::try_from(v).ok(),
                    Field::Short(v) => u64::try_from(v).ok(),
                    Field::Byte(v) => u64::try_from(v).ok(),
                    Field::ULong(v) => Some(v),
                    Field::UInt(v) => Some(u64::from(v)),
                    Field::UShort(v) => Some(u64::from(v)),
                    Field::UByte(v) => Some(u64::from(v)),
                    _ => None,
                };
                if v.is_none() {
                    let detail = format!(
                        "{name} {value} is not a non-negative integer; using row number {}",
                        sink.next_ordinal()
                    );
                    sink.note(Issue::MissingId, loc, &detail);
                }
                rid = v;
            }
        }
        match raw {
            Ok(raw) => sink.push(loc, rid, raw),
            Err((issue, msg)) => sink.reject(loc, issue, &msg),
        }
    }
    Ok(())
}
