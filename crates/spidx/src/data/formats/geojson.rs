//! GeoJSON (RFC 7946).
//!
//! Reading accepts a FeatureCollection, a single Feature or a bare Geometry. The
//! `features` array is walked one feature at a time (a JSON syntax error, e.g. a truncated
//! file, stops the read with its line and column); each feature's geometry is decoded with
//! the `geojson` crate, so a malformed feature is skipped and counted instead of failing the
//! whole file. Ids: the feature's `id` member, else its `id` property, if it is a
//! non-negative integer (or a string holding one). A top-level `crs` member (GeoJSON 2008,
//! still written by GDAL) gives the CRS.
//!
//! Writing produces a FeatureCollection whose features carry the id both as `id` member and
//! as `properties.id`. Numbers are printed in Rust's shortest round-trip form, so reading a
//! written file gives back exactly the same coordinates.

use super::{corrupted, create_file, open_file, Format, MAX_JSON_NESTING};
use crate::data::raw::{Path as RawPath, RawGeom};
use crate::data::{GeoRecord, GeoSink, Issue, Loc};
use crate::{Error, Result};
use geo_types::{Coord, Geometry, LineString, Polygon};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::fmt;
use std::io::Write;
use std::path::Path;

/// Reads a GeoJSON file into `sink`.
pub(crate) fn read(path: &Path, sink: &mut GeoSink) -> Result<()> {
    // Streamed: the file is never read whole (features are decoded one at a time).
    let reader = std::io::BufReader::with_capacity(1 << 20, open_file(path)?);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let mut top = TopLevel {
        sink,
        features: 0,
        kind: None,
        rest: serde_json::Map::new(),
    };
    (&mut top)
        .deserialize(&mut de)
        .and_then(|_| de.end())
        .map_err(|e| json_error(path, e))?;
    let TopLevel {
        sink,
        kind,
        mut rest,
        ..
    } = top;
    if let Some(crs) = rest.remove("crs").as_ref().and_then(crs_member) {
        sink.set_crs(crs)?;
    }
    match kind.as_deref() {
        Some("FeatureCollection") => Ok(()),
        Some("Feature") => {
            let mut obj = rest;
            obj.insert("type".into(), Value::String("Feature".into()));
            feature(sink, Value::Object(obj), Loc::Feature(0));
            Ok(())
        }
        Some(
            "Point" | "MultiPoint" | "LineString" | "MultiLineString" | "Polygon" | "MultiPolygon"
            | "GeometryCollection",
        ) => {
            let mut obj = rest;
            obj.insert("type".into(), Value::String(kind.unwrap_or_default()));
            let loc = Loc::Feature(0);
            match geometry(Value::Object(obj)) {
                Ok(raw) => sink.push(loc, None, raw),
                Err((issue, msg)) => sink.reject(loc, issue, &msg),
            }
            Ok(())
        }
        Some(other) => Err(corrupted(
            path,
            Format::GeoJson,
            format!("top-level type '{other}' is not a GeoJSON object type"),
        )),
        None => Err(corrupted(
            path,
            Format::GeoJson,
            "the top-level object has no \"type\" member; not GeoJSON",
        )),
    }
}

/// The CRS of a (2008 GeoJSON) `crs` member: a named CRS
/// (`{"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::3857"}}`) or an
/// `EPSG` code (`{"type": "EPSG", "properties": {"code": 3857}}`). RFC 7946 dropped the
/// member (its coordinates are WGS 84 longitude/latitude), but GDAL and older tools still
/// write it for other CRSs. A linked CRS or a null member names none.
fn crs_member(v: &Value) -> Option<crate::data::Crs> {
    let props = v.get("properties")?;
    if let Some(name) = props.get("name").and_then(Value::as_str) {
        return Some(crate::data::Crs::parse(name).unwrap_or(crate::data::Crs {
            id: name.to_string(),
            name: None,
        }));
    }
    let code = props.get("code")?;
    Some(crate::data::Crs::code("EPSG", code.as_u64()?))
}

/// A JSON error as a clear message: nesting beyond `serde_json`'s limit is named as such.
fn json_error(path: &Path, e: serde_json::Error) -> Error {
    if e.is_io() {
        return corrupted(path, Format::GeoJson, format!("read error: {e}"));
    }
    let msg = e.to_string();
    if msg.contains("recursion limit exceeded") {
        return corrupted(
            path,
            Format::GeoJson,
            format!(
                "JSON is nested more than {MAX_JSON_NESTING} levels deep at line {} column {} (the limit)",
                e.line(),
                e.column()
            ),
        );
    }
    corrupted(path, Format::GeoJson, msg)
}

/// The top-level object: streams `features`, keeps the other members for single objects.
struct TopLevel<'s, 'a> {
    sink: &'s mut GeoSink<'a>,
    features: u64,
    kind: Option<String>,
    rest: serde_json::Map<String, Value>,
}

impl<'de> DeserializeSeed<'de> for &mut TopLevel<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &mut TopLevel<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a GeoJSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" => self.kind = Some(map.next_value()?),
                "features" => map.next_value_seed(Features(self))?,
                "geometry" | "geometries" | "coordinates" | "properties" | "id" | "crs" => {
                    let v: Value = map.next_value()?;
                    self.rest.insert(key, v);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `features` array, handled one element at a time.
struct Features<'t, 's, 'a>(&'t mut TopLevel<'s, 'a>);

impl<'de> DeserializeSeed<'de> for Features<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Features<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of features")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if let Some(n) = seq.size_hint() {
            self.0.sink.reserve(n);
        }
        while let Some(v) = seq.next_element::<Value>()? {
            let n = self.0.features;
            self.0.features += 1;
            feature(self.0.sink, v, Loc::Feature(n));
        }
        Ok(())
    }
}

/// Reads an id from a JSON value: a non-negative integer, or a string holding one.
fn id_of(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Decodes one Feature object into `sink` (a malformed one is counted and skipped).
pub(crate) fn feature(sink: &mut GeoSink, v: Value, loc: Loc) {
    let Value::Object(mut obj) = v else {
        sink.reject(loc, Issue::Unparsable, "a feature must be a JSON object");
        return;
    };
    let raw_id = obj.get("id").cloned().or_else(|| {
        obj.get("properties")
            .and_then(|p| p.get("id"))
            .filter(|v| !v.is_null())
            .cloned()
    });
    let id = raw_id.as_ref().and_then(id_of);
    if let (Some(v), None) = (&raw_id, id) {
        let detail = format!(
            "id {v} is not a non-negative integer; using ordinal {}",
            sink.next_ordinal()
        );
        sink.note(Issue::MissingId, loc, &detail);
    }
    match obj.remove("geometry") {
        None | Some(Value::Null) => sink.reject(loc, Issue::MissingGeometry, ""),
        Some(g) => match geometry(g) {
            Ok(raw) => sink.push(loc, id, raw),
            Err((issue, msg)) => sink.reject(loc, issue, &msg),
        },
    }
}

pub(crate) type Bad = (Issue, String);

/// Decodes a geometry object with the `geojson` crate and turns it into a raw geometry.
pub(crate) fn geometry(v: Value) -> Result<RawGeom, Bad> {
    let g: geojson::Geometry = serde_json::from_value(v)
        .map_err(|e| (Issue::Unparsable, format!("invalid GeoJSON geometry: {e}")))?;
    convert(g.value)
}

fn pos(p: &geojson::Position) -> Result<Coord, Bad> {
    match p.as_slice() {
        [x, y, ..] => Ok(Coord { x: *x, y: *y }),
        other => Err((
            Issue::Unparsable,
            format!("a position needs 2 numbers, found {}", other.len()),
        )),
    }
}

fn path(ps: &[geojson::Position]) -> Result<RawPath, Bad> {
    ps.iter().map(pos).collect()
}

fn rings(rs: &[Vec<geojson::Position>]) -> Result<Vec<RawPath>, Bad> {
    rs.iter().map(|r| path(r)).collect()
}

fn convert(v: geojson::GeometryValue) -> Result<RawGeom, Bad> {
    use geojson::GeometryValue as G;
    Ok(match v {
        G::Point { coordinates } => RawGeom::Point(Some(pos(&coordinates)?)),
        G::MultiPoint { coordinates } => RawGeom::MultiPoint(path(&coordinates)?),
        G::LineString { coordinates } => RawGeom::Line(path(&coordinates)?),
        G::MultiLineString { coordinates } => RawGeom::MultiLine(rings(&coordinates)?),
        G::Polygon { coordinates } => RawGeom::Polygon(rings(&coordinates)?),
        G::MultiPolygon { coordinates } => RawGeom::MultiPolygon(
            coordinates
                .iter()
                .map(|p| rings(p))
                .collect::<Result<_, _>>()?,
        ),
        G::GeometryCollection { geometries } => RawGeom::Collection(
            geometries
                .into_iter()
                .map(|g| convert(g.value))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// Writes `records` as a GeoJSON FeatureCollection.
pub(crate) fn write(path: &Path, records: &[GeoRecord]) -> Result<()> {
    let mut out = create_file(path)?;
    let io = |e| Error::io(path, e);
    out.write_all(b"{\"type\":\"FeatureCollection\",\"features\":[\n")
        .map_err(io)?;
    let mut buf = String::with_capacity(4096);
    for (i, r) in records.iter().enumerate() {
        buf.clear();
        if i > 0 {
            buf.push_str(",\n");
        }
        feature_json(r, &mut buf)?;
        out.write_all(buf.as_bytes()).map_err(io)?;
    }
    out.write_all(b"\n]}\n").map_err(io)?;
    out.flush().map_err(io)
}

/// Appends record `r` as one GeoJSON Feature (its id both as `id` and `properties.id`).
pub(crate) fn feature_json(r: &GeoRecord, buf: &mut String) -> Result<()> {
    let id = r.id;
    buf.push_str(&format!(
        "{{\"type\":\"Feature\",\"id\":{id},\"properties\":{{\"id\":{id}}},\"geometry\":"
    ));
    geometry_json(&r.geometry, buf).map_err(|msg| {
        Error::invalid(
            "geometry",
            format!("record id {id}: {msg}; cannot write GeoJSON"),
        )
    })?;
    buf.push('}');
    Ok(())
}

fn num(v: f64, buf: &mut String) -> std::result::Result<(), String> {
    use fmt::Write as _;
    if !v.is_finite() {
        return Err(format!("coordinate {v} is not finite"));
    }
    let _ = write!(buf, "{v}");
    Ok(())
}

fn coords_json<'c>(
    cs: impl IntoIterator<Item = &'c Coord>,
    buf: &mut String,
) -> std::result::Result<(), String> {
    buf.push('[');
    for (i, c) in cs.into_iter().enumerate() {
        if i > 0 {
            buf.push(',');
        }
        buf.push('[');
        num(c.x, buf)?;
        buf.push(',');
        num(c.y, buf)?;
        buf.push(']');
    }
    buf.push(']');
    Ok(())
}

fn polygon_json(p: &Polygon, buf: &mut String) -> std::result::Result<(), String> {
    buf.push('[');
    coords_json(&p.exterior().0, buf)?;
    for r in p.interiors() {
        buf.push(',');
        coords_json(&r.0, buf)?;
    }
    buf.push(']');
    Ok(())
}

fn list<T>(
    items: &[T],
    buf: &mut String,
    mut each: impl FnMut(&T, &mut String) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    buf.push('[');
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            buf.push(',');
        }
        each(it, buf)?;
    }
    buf.push(']');
    Ok(())
}

/// Appends the GeoJSON geometry object of `g` to `buf`.
pub(crate) fn geometry_json(g: &Geometry, buf: &mut String) -> std::result::Result<(), String> {
    let head = |buf: &mut String, t: &str| {
        buf.push_str("{\"type\":\"");
        buf.push_str(t);
        buf.push_str("\",\"coordinates\":");
    };
    match g {
        Geometry::Point(p) => {
            head(buf, "Point");
            buf.push('[');
            num(p.x(), buf)?;
            buf.push(',');
            num(p.y(), buf)?;
            buf.push(']');
        }
        Geometry::Line(l) => {
            head(buf, "LineString");
            coords_json(&[l.start, l.end], buf)?;
        }
        Geometry::LineString(l) => {
            head(buf, "LineString");
            coords_json(&l.0, buf)?;
        }
        Geometry::Polygon(p) => {
            head(buf, "Polygon");
            polygon_json(p, buf)?;
        }
        Geometry::Rect(r) => {
            head(buf, "Polygon");
            polygon_json(&r.to_polygon(), buf)?;
        }
        Geometry::Triangle(t) => {
            head(buf, "Polygon");
            polygon_json(&t.to_polygon(), buf)?;
        }
        Geometry::MultiPoint(m) => {
            head(buf, "MultiPoint");
            coords_json(m.0.iter().map(|p| &p.0), buf)?;
        }
        Geometry::MultiLineString(m) => {
            head(buf, "MultiLineString");
            list(&m.0, buf, |l: &LineString, b| coords_json(&l.0, b))?;
        }
        Geometry::MultiPolygon(m) => {
            head(buf, "MultiPolygon");
            list(&m.0, buf, polygon_json)?;
        }
        Geometry::GeometryCollection(c) => {
            buf.push_str("{\"type\":\"GeometryCollection\",\"geometries\":");
            list(&c.0, buf, geometry_json)?;
        }
    }
    buf.push('}');
    Ok(())
}
