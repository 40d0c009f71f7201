//! OGC GeoPackage (`.gpkg`, version 1.x): an SQLite database, read through SQLite itself
//! (`rusqlite`, already linked for the results database), read-only.
//!
//! - The feature table (layer) is the one named by [`Columns::layer`], or the only table
//!   of `gpkg_contents` whose `data_type` is `features`; several are an error listing them.
//! - Its geometry column is the one `gpkg_geometry_columns` names (or
//!   [`Columns::geometry`]). Each value is a GeoPackage geometry blob: the `GP` header
//!   (version, flags, SRS id, optional envelope) followed by standard WKB, which is checked
//!   by the WKB scanner before it is decoded. Extended (non-standard) geometry types are
//!   refused per row; an empty-geometry flag or a NULL skips the row.
//! - The id is the table's integer primary key (`fid` as written by GDAL and QGIS), or
//!   [`Columns::id`]; rows are read in primary-key order.
//! - The CRS is the table's `srs_id` looked up in `gpkg_spatial_ref_sys` (organisation and
//!   code, else its WKT definition); the undefined systems 0 and -1 give none.

use super::text::parse_wkb_record;
use super::{corrupted, Format};
use crate::data::raw::RawBuilder;
use crate::data::{Columns, Crs, GeoSink, Issue, Loc};
use crate::{Error, Result};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// `"name"` quoted as an SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Strips the GeoPackage binary header off a geometry blob, giving the WKB after it.
pub(crate) fn strip_header(blob: &[u8]) -> std::result::Result<&[u8], (Issue, String)> {
    let bad = |m: String| Err((Issue::Unparsable, m));
    if blob.len() < 8 || &blob[..2] != b"GP" {
        return bad("not a GeoPackage geometry blob (no 'GP' header)".to_string());
    }
    let flags = blob[3];
    if flags & 0x20 != 0 {
        return Err((
            Issue::UnsupportedGeometry,
            "an extended (non-standard) GeoPackage geometry type".to_string(),
        ));
    }
    if flags & 0x10 != 0 {
        return Err((
            Issue::EmptyGeometry,
            "the empty-geometry flag is set".to_string(),
        ));
    }
    let envelope = match (flags >> 1) & 0x07 {
        0 => 0,
        1 => 32,
        2 | 3 => 48,
        4 => 64,
        n => return bad(format!("envelope indicator {n} is not defined")),
    };
    let start = 8 + envelope;
    if blob.len() < start {
        return bad(format!(
            "the blob of {} bytes is shorter than its {start}-byte header",
            blob.len()
        ));
    }
    Ok(&blob[start..])
}

/// The CRS of SRS `srs_id`, from `gpkg_spatial_ref_sys`.
fn crs(db: &Connection, srs_id: i64) -> rusqlite::Result<Option<Crs>> {
    if srs_id == 0 || srs_id == -1 {
        return Ok(None);
    }
    let mut q = db.prepare(
        "SELECT organization, organization_coordsys_id, srs_name, definition \
         FROM gpkg_spatial_ref_sys WHERE srs_id = ?1",
    )?;
    let mut rows = q.query([srs_id])?;
    let Some(row) = rows.next()? else {
        return Ok(None);
    };
    let org: Option<String> = row.get(0).ok();
    let code: Option<i64> = row.get(1).ok();
    let name: Option<String> = row.get(2).ok();
    let def: Option<String> = row.get(3).ok();
    Ok(match (org, code) {
        (Some(org), Some(code)) if code > 0 && !org.eq_ignore_ascii_case("none") => Some(Crs {
            name,
            ..Crs::code(&org, code)
        }),
        _ => def
            .as_deref()
            .and_then(Crs::from_wkt)
            .or_else(|| name.map(|n| Crs { id: n, name: None })),
    })
}

/// Reads the feature table of a GeoPackage into `sink`.
pub(crate) fn read(path: &Path, columns: &Columns, sink: &mut GeoSink) -> Result<()> {
    let bad = |m: String| corrupted(path, Format::GeoPackage, m);
    let sql = |e: rusqlite::Error| bad(format!("SQLite: {e}"));
    if columns.x.is_some() || columns.y.is_some() {
        return Err(Error::invalid(
            "x/y columns",
            format!(
                "{} is a GeoPackage: its geometries are in its geometry column; x/y columns \
                 apply to CSV files",
                path.display()
            ),
        ));
    }
    let db = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    let layers: Vec<(String, String, i64)> = {
        let q = db.prepare(
            "SELECT c.table_name, g.column_name, g.srs_id FROM gpkg_contents c \
             JOIN gpkg_geometry_columns g ON c.table_name = g.table_name \
             WHERE c.data_type = 'features' ORDER BY c.table_name",
        );
        let mut q = match q {
            Ok(q) => q,
            Err(e) => {
                return Err(bad(format!(
                    "not a GeoPackage, or one without its gpkg_contents and \
                     gpkg_geometry_columns tables ({e})"
                )))
            }
        };
        let rows = q
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)?
    };
    let names = || {
        layers
            .iter()
            .map(|l| l.0.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (table, geom_col, srs_id) = match &columns.layer {
        Some(want) => layers
            .iter()
            .find(|l| l.0.eq_ignore_ascii_case(want))
            .cloned()
            .ok_or_else(|| {
                Error::invalid(
                    "layer",
                    format!(
                        "{} has no feature table '{want}'; its feature tables: {}",
                        path.display(),
                        names()
                    ),
                )
            })?,
        None => match layers.as_slice() {
            [one] => one.clone(),
            [] => return Err(bad("holds no feature table".to_string())),
            _ => {
                return Err(Error::invalid(
                    "layer",
                    format!(
                        "{} holds several feature tables ({}); choose one with --layer",
                        path.display(),
                        names()
                    ),
                ))
            }
        },
    };
    if let Some(c) = crs(&db, srs_id).map_err(sql)? {
        sink.set_crs(c)?;
    }
    // The table's columns: the integer primary key, and the names asked for.
    let table_cols: Vec<(String, String, i64)> = {
        let mut q = db
            .prepare(&format!("PRAGMA table_info({})", ident(&table)))
            .map_err(sql)?;
        let rows = q
            .query_map([], |r| Ok((r.get(1)?, r.get(2)?, r.get(5)?)))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)?
    };
    let column = |name: &str, option: &str| -> Result<String> {
        table_cols
            .iter()
            .find(|c| c.0.eq_ignore_ascii_case(name))
            .map(|c| c.0.clone())
            .ok_or_else(|| {
                Error::invalid(
                    option,
                    format!(
                        "table '{table}' of {} has no column '{name}'; its columns: {}",
                        path.display(),
                        table_cols
                            .iter()
                            .map(|c| c.0.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    };
    let geom_col = match &columns.geometry {
        Some(g) => column(g, "geometry column")?,
        None => geom_col,
    };
    let id_col = match &columns.id {
        Some(i) => Some(column(i, "id column")?),
        None => table_cols
            .iter()
            .find(|c| c.2 == 1 && c.1.eq_ignore_ascii_case("integer"))
            .map(|c| c.0.clone()),
    };
    let query = match &id_col {
        Some(id) => format!(
            "SELECT {}, {} FROM {} ORDER BY {}",
            ident(id),
            ident(&geom_col),
            ident(&table),
            ident(id)
        ),
        None => format!(
            "SELECT NULL, {} FROM {} ORDER BY rowid",
            ident(&geom_col),
            ident(&table)
        ),
    };
    let mut q = db.prepare(&query).map_err(sql)?;
    let mut rows = q.query([]).map_err(sql)?;
    let mut builder = RawBuilder::new();
    let mut scratch = Vec::new();
    let mut n = 0u64;
    while let Some(row) = rows.next().map_err(sql)? {
        let (id, loc) = match row.get_ref(0).map_err(sql)? {
            ValueRef::Integer(fid) if fid >= 0 => (Some(fid as u64), Loc::Id(fid as u64)),
            ValueRef::Null if id_col.is_none() => (None, Loc::Record(n)),
            other => {
                let detail = format!(
                    "{} is {other:?}, not a non-negative integer; using ordinal {}",
                    id_col.as_deref().unwrap_or("id"),
                    sink.next_ordinal()
                );
                sink.note(Issue::MissingId, Loc::Record(n), &detail);
                (None, Loc::Record(n))
            }
        };
        n += 1;
        let raw = match row.get_ref(1).map_err(sql)? {
            ValueRef::Blob(b) => {
                strip_header(b).and_then(|wkb| parse_wkb_record(wkb, &mut scratch, &mut builder))
            }
            ValueRef::Null => Err((Issue::MissingGeometry, "NULL geometry".to_string())),
            other => Err((
                Issue::Unparsable,
                format!(
                    "the geometry is {:?}, not a GeoPackage geometry blob",
                    other.data_type()
                ),
            )),
        };
        match raw {
            Ok(raw) => sink.push(loc, id, raw),
            Err((issue, msg)) => sink.reject(loc, issue, &msg),
        }
    }
    Ok(())
}
