//! CSV (and TSV) tables with a geometry column or point coordinates: how GIS users ship data
//! out of spreadsheets, QGIS ("Export as CSV, GEOMETRY=AS_WKT") and `ogr2ogr -f CSV`.
//!
//! - The first row is the header. The delimiter is a tab for `.tsv` files; otherwise the
//!   one of `,`, `;` and tab that the header uses most (outside quotes), `,` by default.
//! - The geometry is a WKT (or EWKT) column, or a hex (E)WKB column (decided per cell: hex
//!   digits starting with a byte-order byte `00` or `01`), or a pair of x/y (lon/lat)
//!   columns holding numbers, each row then a point. The columns are named by
//!   [`Columns`](crate::data::Columns) or found by header name (see there); a named column
//!   that is not in the header is an error listing the header.
//! - The id is an `id` (or `fid`) column of non-negative integers when present; without
//!   one, the row's 0-based number (data rows only). A cell that is not such an integer
//!   is counted as `missing_id` and the row number is used.
//! - A row that cannot be used (too few fields, not UTF-8, an empty or unparsable geometry,
//!   a coordinate that is not a finite number) is skipped and counted with its line number.
//! - CSV carries no CRS; give one with `--crs` when the data has one.
//!
//! The `csv` crate parses the quoting (RFC 4180; quoted fields may hold delimiters,
//! quotes and newlines). A line longer than [`MAX_RECORD_BYTES`] is an error, so a file
//! without line breaks is never read whole into memory.

use super::text::{decode_hex, parse_wkb_record, parse_wkt_record};
use super::{corrupted, open_file, Format, MAX_RECORD_BYTES};
use crate::data::raw::{RawBuilder, RawGeom};
use crate::data::{Columns, GeoSink, Issue, Loc};
use crate::{Error, Result};
use geo_types::Coord;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Header names taken for a geometry column, in order of preference.
const GEOMETRY_NAMES: [&str; 7] = [
    "wkt",
    "geometry",
    "geom",
    "the_geom",
    "wkb",
    "shape",
    "geometry_wkt",
];
/// Header name pairs taken for point coordinates, in order of preference.
const XY_NAMES: [(&str, &str); 6] = [
    ("x", "y"),
    ("lon", "lat"),
    ("lng", "lat"),
    ("long", "lat"),
    ("longitude", "latitude"),
    ("easting", "northing"),
];
/// Header names taken for the id column.
const ID_NAMES: [&str; 2] = ["id", "fid"];

/// Where the geometry of a row is.
enum Geom {
    /// One column of WKT or hex WKB.
    Text(usize),
    /// Two number columns.
    Xy(usize, usize),
}

/// Limits a line to [`MAX_RECORD_BYTES`]: an error once more bytes than that pass without
/// a line break.
struct LineLimit<R> {
    inner: R,
    since_newline: u64,
}

impl<R: Read> Read for LineLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for &b in &buf[..n] {
            if b == b'\n' {
                self.since_newline = 0;
            } else {
                self.since_newline += 1;
            }
        }
        if self.since_newline > MAX_RECORD_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "a line is longer than {} MiB (the limit for one record)",
                    MAX_RECORD_BYTES >> 20
                ),
            ));
        }
        Ok(n)
    }
}

/// The delimiter of a file: tab for `.tsv`, else the most frequent of `,` `;` tab in the
/// header line (outside quotes), `,` when none occurs.
fn delimiter(path: &Path, head: &[u8]) -> u8 {
    let tsv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tsv"));
    if tsv {
        return b'\t';
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or(&[]);
    let mut counts = [(b',', 0usize), (b';', 0), (b'\t', 0)];
    let mut quoted = false;
    for &b in line {
        if b == b'"' {
            quoted = !quoted;
        } else if !quoted {
            for c in counts.iter_mut() {
                if c.0 == b {
                    c.1 += 1;
                }
            }
        }
    }
    counts
        .iter()
        .filter(|c| c.1 > 0)
        .max_by_key(|c| c.1)
        .map_or(b',', |c| c.0)
}

/// Finds a column by its given name (an error when absent) or by the first of `names`.
fn find(
    header: &[String],
    given: Option<&str>,
    names: &[&str],
    option: &str,
    path: &Path,
) -> Result<Option<usize>> {
    let pos = |n: &str| header.iter().position(|h| h.eq_ignore_ascii_case(n));
    match given {
        Some(n) => pos(n).map(Some).ok_or_else(|| {
            Error::invalid(
                option,
                format!(
                    "{} has no column '{n}'; its columns: {}",
                    path.display(),
                    header.join(", ")
                ),
            )
        }),
        None => Ok(names.iter().find_map(|n| pos(n))),
    }
}

/// The geometry columns of `header` (see the module documentation).
fn geometry_columns(header: &[String], c: &Columns, path: &Path) -> Result<Geom> {
    if c.geometry.is_some() && (c.x.is_some() || c.y.is_some()) {
        return Err(Error::invalid(
            "geometry column",
            "give either a geometry column or x/y columns, not both",
        ));
    }
    if let Some(g) = find(header, c.geometry.as_deref(), &[], "geometry column", path)? {
        return Ok(Geom::Text(g));
    }
    if c.x.is_some() || c.y.is_some() {
        let (Some(x), Some(y)) = (c.x.as_deref(), c.y.as_deref()) else {
            return Err(Error::invalid(
                "x/y columns",
                "point columns need both an x and a y column",
            ));
        };
        let x = find(header, Some(x), &[], "x column", path)?.expect("given");
        let y = find(header, Some(y), &[], "y column", path)?.expect("given");
        return Ok(Geom::Xy(x, y));
    }
    if let Some(g) = find(header, None, &GEOMETRY_NAMES, "", path)? {
        return Ok(Geom::Text(g));
    }
    for (x, y) in XY_NAMES {
        if let (Some(x), Some(y)) = (
            find(header, None, &[x], "", path)?,
            find(header, None, &[y], "", path)?,
        ) {
            return Ok(Geom::Xy(x, y));
        }
    }
    Err(Error::invalid(
        "geometry column",
        format!(
            "{} has no geometry column: none of its columns ({}) is named {} or is a pair \
             such as x/y or lon/lat; name it with --geometry-column, or --x-column and \
             --y-column",
            path.display(),
            header.join(", "),
            GEOMETRY_NAMES.join(", ")
        ),
    ))
}

/// Whether a cell holds hex WKB rather than WKT.
fn is_hex_wkb(cell: &str) -> bool {
    let t = cell.strip_prefix("\\x").unwrap_or(cell);
    (t.starts_with("00") || t.starts_with("01")) && t.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Parses a coordinate cell.
fn number(cell: &str, what: &str) -> std::result::Result<f64, (Issue, String)> {
    match cell.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(v) => Err((
            Issue::NonFiniteCoordinate,
            format!("{what} is {v}; NaN and infinity cannot be indexed"),
        )),
        Err(_) if cell.trim().is_empty() => {
            Err((Issue::MissingGeometry, format!("{what} is empty")))
        }
        Err(_) => Err((
            Issue::Unparsable,
            format!("{what} '{cell}' is not a number"),
        )),
    }
}

/// Reads a CSV or TSV file into `sink`.
pub(crate) fn read(path: &Path, columns: &Columns, sink: &mut GeoSink) -> Result<()> {
    let mut file = BufReader::with_capacity(1 << 20, open_file(path)?);
    let head = file.fill_buf().map_err(|e| Error::io(path, e))?;
    let delim = delimiter(path, head);
    let limited = LineLimit {
        inner: file,
        since_newline: 0,
    };
    let mut reader = ::csv::ReaderBuilder::new()
        .delimiter(delim)
        .flexible(true)
        .has_headers(true)
        .from_reader(limited);
    let csv_err = |e: ::csv::Error| match e.into_kind() {
        ::csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::InvalidData => {
            corrupted(path, Format::Csv, io)
        }
        ::csv::ErrorKind::Io(io) => Error::io(path, io),
        other => corrupted(path, Format::Csv, format!("{other:?}")),
    };
    let header: Vec<String> = reader
        .byte_headers()
        .map_err(csv_err)?
        .iter()
        .map(|h| {
            String::from_utf8_lossy(h)
                .trim()
                .trim_start_matches('\u{feff}')
                .to_string()
        })
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(corrupted(path, Format::Csv, "no header row"));
    }
    let geom = geometry_columns(&header, columns, path)?;
    let id_col = find(&header, columns.id.as_deref(), &ID_NAMES, "id column", path)?;
    let mut builder = RawBuilder::new();
    let mut scratch = Vec::new();
    let mut record = ::csv::ByteRecord::new();
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(csv_err(e)),
        }
        let line = record.position().map_or(0, |p| p.line());
        let loc = Loc::Line(line);
        let cell = |i: usize| -> std::result::Result<&str, (Issue, String)> {
            let bytes = record.get(i).ok_or_else(|| {
                (
                    Issue::Unparsable,
                    format!(
                        "the row has {} fields, the header {}",
                        record.len(),
                        header.len()
                    ),
                )
            })?;
            std::str::from_utf8(bytes).map(str::trim).map_err(|e| {
                (
                    Issue::Unparsable,
                    format!("column {}: not UTF-8: {e}", header[i]),
                )
            })
        };
        let raw = match &geom {
            Geom::Text(g) => cell(*g).and_then(|t| {
                if t.is_empty() {
                    Err((Issue::MissingGeometry, "empty geometry cell".to_string()))
                } else if is_hex_wkb(t) {
                    let wkb = decode_hex(t).map_err(|m| (Issue::Unparsable, m))?;
                    parse_wkb_record(&wkb, &mut scratch, &mut builder)
                } else {
                    parse_wkt_record(t)
                }
            }),
            Geom::Xy(x, y) => cell(*x).and_then(|xs| {
                let x = number(xs, &header[*x])?;
                let y = number(cell(*y)?, &header[*y])?;
                Ok(RawGeom::Point(Some(Coord { x, y })))
            }),
        };
        let id = match id_col.map(cell) {
            None => None,
            Some(Ok(t)) => match t.parse::<u64>() {
                Ok(id) => Some(id),
                Err(_) => {
                    let detail = format!(
                        "id '{t}' is not a non-negative integer; using row number {}",
                        sink.next_ordinal()
                    );
                    sink.note(Issue::MissingId, loc, &detail);
                    None
                }
            },
            Some(Err(_)) => None,
        };
        match raw {
            Ok(raw) => sink.push(loc, id, raw),
            Err((issue, msg)) => sink.reject(loc, issue, &msg),
        }
    }
}
