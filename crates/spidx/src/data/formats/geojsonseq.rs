//! GeoJSON text sequences: newline-delimited GeoJSON (GDAL's GeoJSONSeq, `.geojsonl`,
//! `.ndjson`, `.jsonl`) and RFC 8142 sequences whose records each start with an ASCII record
//! separator (RS, 0x1E; `.geojsons`).
//!
//! This is how large GIS extracts are shipped (one feature per line, any size of file), so
//! the file is streamed: one record is held in memory at a time, and a record longer than
//! [`MAX_RECORD_BYTES`] is an error naming it.
//!
//! Each record is a GeoJSON Feature or a bare Geometry; ids are read as in
//! [`super::geojson`] (the feature's `id`, else its `id` property, else the record's ordinal).
//! Following RFC 8142, a record that is not valid JSON (a truncated last line, a stray
//! character) is skipped and counted (`unparsable`) rather than ending the read; blank
//! records are ignored.
//!
//! Which separator a file uses is decided by its first non-blank byte: RS means RFC 8142
//! (records are split at RS, so a record may span several lines), anything else means one
//! record per line (a leading RS on a line is still accepted).
//!
//! Writing produces one Feature per line; a `.geojsons` file gets the RS before each record.

use super::geojson::{feature, feature_json, geometry};
use super::{corrupted, create_file, open_file, Format, MAX_RECORD_BYTES};
use crate::data::{GeoRecord, GeoSink, Issue, Loc};
use crate::{Error, Result};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

/// The RFC 8142 record separator.
pub(crate) const RS: u8 = 0x1E;

/// Reads a GeoJSON text sequence into `sink`.
pub(crate) fn read(path: &Path, sink: &mut GeoSink) -> Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, open_file(path)?);
    let first = reader
        .fill_buf()
        .map_err(|e| Error::io(path, e))?
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace());
    let rs_mode = first == Some(RS);
    let delimiter = if rs_mode { RS } else { b'\n' };
    let mut buf = Vec::new();
    let (mut line, mut records) = (1u64, 0u64);
    loop {
        buf.clear();
        let n = reader
            .by_ref()
            .take(MAX_RECORD_BYTES + 1)
            .read_until(delimiter, &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(());
        }
        // Where this record starts: its line, or (RS mode) its 0-based record number.
        let start_line = line;
        line += buf.iter().filter(|b| **b == b'\n').count() as u64;
        if buf.len() as u64 > MAX_RECORD_BYTES {
            return Err(corrupted(
                path,
                Format::GeoJsonSeq,
                format!(
                    "the record starting at line {start_line} is longer than {} MiB (the limit for one record)",
                    MAX_RECORD_BYTES >> 20
                ),
            ));
        }
        let body = trim(&buf);
        if body.is_empty() {
            continue;
        }
        let loc = if rs_mode {
            Loc::Record(records)
        } else {
            Loc::Line(start_line)
        };
        records += 1;
        record(sink, body, loc);
    }
}

/// `bytes` without surrounding whitespace and record separators.
fn trim(bytes: &[u8]) -> &[u8] {
    let keep = |b: &u8| !(b.is_ascii_whitespace() || *b == RS);
    let Some(start) = bytes.iter().position(keep) else {
        return &[];
    };
    let end = bytes.iter().rposition(keep).map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// Decodes one record (a Feature or a Geometry) into `sink`.
fn record(sink: &mut GeoSink, body: &[u8], loc: Loc) {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let msg = if e.to_string().contains("recursion limit") {
                format!(
                    "JSON nested more than {} levels deep",
                    super::MAX_JSON_NESTING
                )
            } else {
                format!("not a JSON text: {e}")
            };
            return sink.reject(loc, Issue::Unparsable, &msg);
        }
    };
    let kind = v.get("type").and_then(Value::as_str).map(str::to_string);
    match kind.as_deref() {
        Some("Feature") => feature(sink, v, loc),
        Some(
            "Point" | "MultiPoint" | "LineString" | "MultiLineString" | "Polygon" | "MultiPolygon"
            | "GeometryCollection",
        ) => match geometry(v) {
            Ok(raw) => sink.push(loc, None, raw),
            Err((issue, msg)) => sink.reject(loc, issue, &msg),
        },
        Some("FeatureCollection") => sink.reject(
            loc,
            Issue::Unparsable,
            "a FeatureCollection inside a text sequence; each record must be one Feature \
             (read a FeatureCollection file as .geojson)",
        ),
        Some(other) => sink.reject(
            loc,
            Issue::Unparsable,
            &format!("type '{other}' is not a GeoJSON Feature or Geometry"),
        ),
        None => sink.reject(
            loc,
            Issue::Unparsable,
            "the record has no \"type\" member; not a GeoJSON Feature or Geometry",
        ),
    }
}

/// Writes `records` as a GeoJSON text sequence: one Feature per line, each led by an RS when
/// `path` ends with `.geojsons` (RFC 8142).
pub(crate) fn write(path: &Path, records: &[GeoRecord]) -> Result<()> {
    let rs = path.file_name().is_some_and(|n| {
        n.to_string_lossy()
            .to_ascii_lowercase()
            .ends_with(".geojsons")
    });
    let mut out = create_file(path)?;
    let io = |e| Error::io(path, e);
    let mut buf = String::with_capacity(4096);
    for r in records {
        buf.clear();
        if rs {
            buf.push(RS as char);
        }
        feature_json(r, &mut buf)?;
        buf.push('\n');
        out.write_all(buf.as_bytes()).map_err(io)?;
    }
    out.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::trim;

    #[test]
    fn trim_strips_separators_and_blanks() {
        assert_eq!(trim(b"\x1e{\"a\":1}\n"), b"{\"a\":1}");
        assert_eq!(trim(b"  \r\n"), b"");
        assert_eq!(trim(b"\x1e\x1e"), b"");
        assert_eq!(trim(b"{}"), b"{}");
    }
}
