//! Line-oriented WKT and WKB files (the way geometries leave a database: `COPY (SELECT
//! ST_AsText(geom) ...)` or `ST_AsEWKB`), plus binary WKB.
//!
//! - **WKT** (`.wkt`): one geometry per line; an optional `SRID=n;` prefix is ignored.
//! - **WKB** (`.wkb`): either text, one hex-encoded WKB or PostGIS EWKB geometry per line, or
//!   binary, WKB geometries back to back (each is self-delimiting). The first byte decides:
//!   binary WKB starts with its byte-order byte 0x00 or 0x01, text does not. Z and M values
//!   are dropped. Binary WKB has no record boundaries, so a bad record there ends the read
//!   with an error; in text files a bad line is skipped and counted.
//!
//! In both text forms blank lines and lines starting with `#` are ignored, and a line may
//! start with an id and a tab (`17<TAB>POLYGON(...)`); otherwise a record's id is its line
//! number − 1. Writers emit plain lines when the ids are 0, 1, 2, ... in order and
//! `id<TAB>geometry` lines otherwise, so ids survive a round trip.

use super::wkb_scan;
use super::{corrupted, create_file, open_file, Format, MAX_NESTING, MAX_RECORD_BYTES};
use crate::data::raw::{Path as RawPath, RawBuilder, RawGeom};
use crate::data::{GeoRecord, GeoSink, Issue, Loc};
use crate::{Error, Result};
use geo_types::{Coord, Geometry, Polygon};
use geozero::wkb::{process_ewkb_geom, process_wkb_geom};
use geozero::{CoordDimensions, ToWkb};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::str::FromStr;

/// Splits an optional `id<TAB>` prefix off a line.
fn split_id(line: &str) -> (Option<u64>, &str) {
    if let Some((head, rest)) = line.split_once('\t') {
        if let Ok(id) = head.trim().parse::<u64>() {
            return (Some(id), rest.trim());
        }
    }
    (None, line)
}

/// Calls `f(line_number, id, text)` for every non-blank, non-comment line of `path`,
/// reading it line by line (a file is never read whole; a line longer than
/// [`MAX_RECORD_BYTES`] is an error naming it).
fn for_each_line(
    path: &Path,
    format: Format,
    mut reader: impl BufRead,
    mut f: impl FnMut(u64, Option<u64>, Result<&str, String>),
) -> Result<()> {
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = reader
            .by_ref()
            .take(MAX_RECORD_BYTES + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        if buf.len() as u64 > MAX_RECORD_BYTES {
            return Err(corrupted(
                path,
                format,
                format!(
                    "line {line_no} is longer than {} MiB (the limit for one record); one geometry per line is expected",
                    MAX_RECORD_BYTES >> 20
                ),
            ));
        }
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t.trim(),
            Err(e) => {
                f(line_no, None, Err(format!("not UTF-8 text: {e}")));
                continue;
            }
        };
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let (id, rest) = split_id(text);
        f(line_no, Some(id.unwrap_or(line_no - 1)), Ok(rest));
    }
}

/// The deepest nesting of parentheses in WKT `text`.
pub(crate) fn wkt_nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Parses one WKT geometry, refusing nesting beyond [`MAX_NESTING`] before the (recursive)
/// parser sees it.
pub(crate) fn parse_wkt_text(body: &str) -> std::result::Result<wkt::Wkt<f64>, String> {
    let depth = wkt_nesting(body);
    if depth > MAX_NESTING {
        return Err(format!(
            "parentheses are nested {depth} levels deep, more than the limit of {MAX_NESTING}"
        ));
    }
    wkt::Wkt::<f64>::from_str(body).map_err(|e| match non_finite_word(body) {
        Some(word) => format!(
            "invalid WKT: the coordinate `{word}` is not a finite number (NaN and infinity \
             cannot be indexed)"
        ),
        None => format!("invalid WKT: {e}"),
    })
}

/// The first word of `body` that spells a non-finite number (`NaN`, `inf`, `-Infinity`),
/// which the WKT parser rejects with a message about parentheses.
fn non_finite_word(body: &str) -> Option<&str> {
    body.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .find(|w| {
            let t = w.trim_start_matches(['+', '-']).to_ascii_lowercase();
            t == "nan" || t == "inf" || t == "infinity"
        })
}

/// Reads a WKT file (one geometry per line) into `sink`.
pub(crate) fn read_wkt(path: &Path, sink: &mut GeoSink) -> Result<()> {
    let reader = BufReader::with_capacity(1 << 20, open_file(path)?);
    for_each_line(path, Format::Wkt, reader, |line, id, text| {
        let loc = Loc::Line(line);
        let text = match text {
            Ok(t) => t,
            Err(msg) => return sink.reject(loc, Issue::Unparsable, &msg),
        };
        match parse_wkt_record(text) {
            Ok(raw) => sink.push(loc, id, raw),
            Err((issue, e)) => sink.reject(loc, issue, &e),
        }
    })
}

/// Parses one WKT (or EWKT, whose `SRID=n;` prefix is ignored) record of a text file or
/// table cell, with the issue to count when it fails.
pub(crate) fn parse_wkt_record(text: &str) -> std::result::Result<RawGeom, (Issue, String)> {
    let body = strip_srid(text.trim()).trim_end_matches(';');
    match parse_wkt_text(body) {
        Ok(w) => Ok(from_wkt(w)),
        Err(e) if non_finite_word(body).is_some() => Err((Issue::NonFiniteCoordinate, e)),
        Err(e) => Err((Issue::Unparsable, e)),
    }
}

/// Parses one whole WKB (or EWKB) geometry held in `wkb` (a table cell, a GeoPackage blob
/// after its header): its structure is checked by [`wkb_scan`] before the decoder sees it,
/// and bytes left over are an error. `scratch` is reused between calls.
pub(crate) fn parse_wkb_record(
    wkb: &[u8],
    scratch: &mut Vec<u8>,
    builder: &mut RawBuilder,
) -> std::result::Result<RawGeom, (Issue, String)> {
    let mut input = wkb;
    match wkb_scan::read_geometry(&mut input, scratch) {
        Ok(true) if input.is_empty() => parse_wkb(scratch, builder),
        Ok(true) => Err((
            Issue::Unparsable,
            format!("{} bytes left after the geometry", input.len()),
        )),
        Ok(false) => Err((Issue::MissingGeometry, "no bytes".to_string())),
        Err(e) => Err((Issue::Unparsable, format!("invalid WKB: {e}"))),
    }
}

fn strip_srid(text: &str) -> &str {
    if text.len() > 5 && text[..5].eq_ignore_ascii_case("SRID=") {
        if let Some((_, rest)) = text.split_once(';') {
            return rest.trim();
        }
    }
    text
}

fn wkt_path(l: wkt::types::LineString<f64>) -> RawPath {
    l.into_inner()
        .0
        .into_iter()
        .map(|c| Coord { x: c.x, y: c.y })
        .collect()
}

fn wkt_polygon(p: wkt::types::Polygon<f64>) -> Vec<RawPath> {
    p.into_inner().0.into_iter().map(wkt_path).collect()
}

fn from_wkt(w: wkt::Wkt<f64>) -> RawGeom {
    use wkt::Wkt as W;
    match w {
        W::Point(p) => RawGeom::Point(p.into_inner().0.map(|c| Coord { x: c.x, y: c.y })),
        W::LineString(l) => RawGeom::Line(wkt_path(l)),
        W::Polygon(p) => RawGeom::Polygon(wkt_polygon(p)),
        W::MultiPoint(m) => RawGeom::MultiPoint(
            m.into_inner()
                .0
                .into_iter()
                .filter_map(|p| p.into_inner().0.map(|c| Coord { x: c.x, y: c.y }))
                .collect(),
        ),
        W::MultiLineString(m) => {
            RawGeom::MultiLine(m.into_inner().0.into_iter().map(wkt_path).collect())
        }
        W::MultiPolygon(m) => {
            RawGeom::MultiPolygon(m.into_inner().0.into_iter().map(wkt_polygon).collect())
        }
        W::GeometryCollection(c) => {
            RawGeom::Collection(c.into_inner().0.into_iter().map(from_wkt).collect())
        }
    }
}

/// Whether WKB bytes start with an EWKB (PostGIS) type word rather than OGC/ISO WKB.
fn is_ewkb(bytes: &[u8]) -> bool {
    if bytes.len() < 5 {
        return false;
    }
    let word = [bytes[1], bytes[2], bytes[3], bytes[4]];
    let t = if bytes[0] == 0 {
        u32::from_be_bytes(word)
    } else {
        u32::from_le_bytes(word)
    };
    t & 0xE000_0000 != 0
}

/// Parses one whole WKB geometry (bytes [`wkb_scan::read_geometry`] delimited and
/// checked); bytes left over are an error.
fn parse_wkb(
    wkb: &[u8],
    builder: &mut RawBuilder,
) -> std::result::Result<RawGeom, (Issue, String)> {
    let mut input = wkb;
    let r = if is_ewkb(input) {
        process_ewkb_geom(&mut input, builder)
    } else {
        process_wkb_geom(&mut input, builder)
    };
    match r {
        Ok(()) if input.is_empty() => builder.take(),
        Ok(()) => {
            let _ = builder.take();
            Err((
                Issue::Unparsable,
                format!("{} bytes left after the geometry", input.len()),
            ))
        }
        Err(e) => {
            let _ = builder.take();
            Err((Issue::Unparsable, format!("invalid WKB: {e}")))
        }
    }
}

pub(crate) fn decode_hex(text: &str) -> std::result::Result<Vec<u8>, String> {
    let t = text.strip_prefix("\\x").unwrap_or(text);
    if !t.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", t.len()));
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(format!("'{}' is not a hex digit", c as char)),
    };
    t.as_bytes()
        .chunks_exact(2)
        .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

/// Reads a WKB file (hex lines or binary) into `sink`, streaming (never whole).
pub(crate) fn read_wkb(path: &Path, sink: &mut GeoSink) -> Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, open_file(path)?);
    let mut builder = RawBuilder::new();
    let head = reader.fill_buf().map_err(|e| Error::io(path, e))?;
    let binary = matches!(head.iter().find(|b| !b.is_ascii_whitespace()), Some(0 | 1));
    if !binary {
        let mut record = Vec::new();
        return for_each_line(path, Format::Wkb, reader, |line, id, text| {
            let loc = Loc::Line(line);
            let parsed = text
                .and_then(decode_hex)
                .map_err(|m| (Issue::Unparsable, m));
            let parsed = parsed.and_then(|wkb| {
                parse_wkb_record(&wkb, &mut record, &mut builder).map_err(|(i, m)| match i {
                    Issue::MissingGeometry => (Issue::Unparsable, m),
                    other => (other, m),
                })
            });
            match parsed {
                Ok(raw) => sink.push(loc, id, raw),
                Err((issue, msg)) => sink.reject(loc, issue, &msg),
            }
        });
    }
    let mut record = Vec::new();
    let mut offset = 0u64;
    for n in 0u64.. {
        let fatal = |msg: String| {
            corrupted(
                path,
                Format::Wkb,
                format!("record {n} at byte {offset}: {msg} (truncated or not WKB)"),
            )
        };
        match wkb_scan::read_geometry(&mut reader, &mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(fatal(e.to_string())),
        }
        match parse_wkb(&record, &mut builder) {
            Ok(raw) => sink.push(Loc::Record(n), None, raw),
            Err((Issue::Unparsable, msg)) => return Err(fatal(msg)),
            Err((issue, msg)) => sink.reject(Loc::Record(n), issue, &msg),
        }
        offset += record.len() as u64;
    }
    Ok(())
}

/// Whether ids are 0, 1, 2, ... so that line numbers carry them.
fn ids_are_ordinals(records: &[GeoRecord]) -> bool {
    records.iter().enumerate().all(|(i, r)| r.id == i as u64)
}

fn write_lines(
    path: &Path,
    records: &[GeoRecord],
    mut text: impl FnMut(&Geometry, &mut String) -> std::result::Result<(), String>,
) -> Result<()> {
    let mut out = create_file(path)?;
    let with_ids = !ids_are_ordinals(records);
    let mut line = String::with_capacity(1024);
    for r in records {
        line.clear();
        if with_ids {
            line.push_str(&format!("{}\t", r.id));
        }
        text(&r.geometry, &mut line)
            .map_err(|m| Error::invalid("geometry", format!("record id {}: {m}", r.id)))?;
        line.push('\n');
        out.write_all(line.as_bytes())
            .map_err(|e| Error::io(path, e))?;
    }
    out.flush().map_err(|e| Error::io(path, e))
}

/// Writes one WKT geometry per line.
pub(crate) fn write_wkt(path: &Path, records: &[GeoRecord]) -> Result<()> {
    write_lines(path, records, |g, s| {
        wkt_text(g, s);
        Ok(())
    })
}

/// Writes one hex-encoded WKB geometry per line (upper case, little-endian, 2-D).
pub(crate) fn write_wkb(path: &Path, records: &[GeoRecord]) -> Result<()> {
    write_lines(path, records, |g, s| {
        let wkb = g.to_wkb(CoordDimensions::xy()).map_err(|e| e.to_string())?;
        for b in wkb {
            s.push(char::from_digit((b >> 4) as u32, 16).unwrap_or('0'));
            s.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
        }
        s.make_ascii_uppercase();
        Ok(())
    })
}

fn wkt_coords<'a>(cs: impl IntoIterator<Item = &'a Coord>, s: &mut String) {
    use std::fmt::Write as _;
    s.push('(');
    for (i, c) in cs.into_iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{} {}", c.x, c.y);
    }
    s.push(')');
}

fn wkt_polygon_body(p: &Polygon, s: &mut String) {
    s.push('(');
    wkt_coords(&p.exterior().0, s);
    for r in p.interiors() {
        s.push(',');
        wkt_coords(&r.0, s);
    }
    s.push(')');
}

/// Appends the WKT of `g` to `s`.
pub(crate) fn wkt_text(g: &Geometry, s: &mut String) {
    use std::fmt::Write as _;
    let parts = |s: &mut String, n: usize, f: &mut dyn FnMut(usize, &mut String)| {
        s.push('(');
        for i in 0..n {
            if i > 0 {
                s.push(',');
            }
            f(i, s);
        }
        s.push(')');
    };
    match g {
        Geometry::Point(p) => {
            let _ = write!(s, "POINT({} {})", p.x(), p.y());
        }
        Geometry::Line(l) => {
            s.push_str("LINESTRING");
            wkt_coords(&[l.start, l.end], s);
        }
        Geometry::LineString(l) => {
            s.push_str("LINESTRING");
            wkt_coords(&l.0, s);
        }
        Geometry::Polygon(p) => {
            s.push_str("POLYGON");
            wkt_polygon_body(p, s);
        }
        Geometry::Rect(r) => wkt_text(&Geometry::Polygon(r.to_polygon()), s),
        Geometry::Triangle(t) => wkt_text(&Geometry::Polygon(t.to_polygon()), s),
        Geometry::MultiPoint(m) => {
            s.push_str("MULTIPOINT");
            parts(s, m.0.len(), &mut |i, s| wkt_coords([&m.0[i].0], s));
        }
        Geometry::MultiLineString(m) => {
            s.push_str("MULTILINESTRING");
            parts(s, m.0.len(), &mut |i, s| wkt_coords(&m.0[i].0, s));
        }
        Geometry::MultiPolygon(m) => {
            s.push_str("MULTIPOLYGON");
            parts(s, m.0.len(), &mut |i, s| wkt_polygon_body(&m.0[i], s));
        }
        Geometry::GeometryCollection(c) => {
            s.push_str("GEOMETRYCOLLECTION");
            parts(s, c.0.len(), &mut |i, s| wkt_text(&c.0[i], s));
        }
    }
}
