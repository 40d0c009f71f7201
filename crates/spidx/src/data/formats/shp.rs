//! ESRI Shapefile (`.shp` with its `.dbf`; the `.shx` index is used when present).
//!
//! Shapefile polygons are a flat list of rings: shells run clockwise, holes
//! counter-clockwise. Each hole is given to the smallest shell containing its first point
//! (a hole no shell contains is kept as a hole of the previous shell, and reported by the
//! repair step as lying outside it). A file whose rings are *all* counter-clockwise (a
//! common export mistake) is read as shells. One shell gives a polygon, several a
//! multipolygon; polylines give (multi)linestrings; multipatches are unsupported.
//! The id is a numeric `id` field of the `.dbf` (any case) when present; without a `.dbf`
//! the shapes are read alone and numbered.

use super::{corrupted, Format};
use crate::data::raw::{Path as RawPath, RawGeom};
use crate::data::repair::{point_in_ring, signed_area};
use crate::data::{GeoSink, Issue, Loc};
use crate::{Error, Result};
use geo_types::Coord;
use shapefile::dbase::{FieldValue, Record};
use shapefile::record::traits::HasXY;
use shapefile::{PolygonRing, Shape};
use std::path::Path;

fn coords<P: HasXY>(ps: &[P]) -> RawPath {
    ps.iter().map(|p| Coord { x: p.x(), y: p.y() }).collect()
}

fn polyline<P: HasXY>(parts: &[Vec<P>]) -> RawGeom {
    match parts {
        [one] => RawGeom::Line(coords(one)),
        many => RawGeom::MultiLine(many.iter().map(|p| coords(p)).collect()),
    }
}

/// Groups shapefile rings into polygons (see the module documentation).
fn polygon<P: HasXY>(rings: &[PolygonRing<P>]) -> RawGeom {
    let all_inner = rings.iter().all(|r| matches!(r, PolygonRing::Inner(_)));
    let mut shells: Vec<Vec<RawPath>> = Vec::new();
    let mut holes: Vec<RawPath> = Vec::new();
    for r in rings {
        match r {
            PolygonRing::Outer(ps) => shells.push(vec![coords(ps)]),
            PolygonRing::Inner(ps) if all_inner => shells.push(vec![coords(ps)]),
            PolygonRing::Inner(ps) => holes.push(coords(ps)),
        }
    }
    for h in holes {
        let target = h.first().and_then(|p| {
            shells
                .iter()
                .enumerate()
                .filter(|(_, s)| s[0].len() >= 3 && point_in_ring(*p, &closed(&s[0])))
                .min_by(|a, b| {
                    let area = |s: &Vec<RawPath>| signed_area(&closed(&s[0])).abs();
                    area(a.1).total_cmp(&area(b.1))
                })
                .map(|(i, _)| i)
        });
        let i = target.unwrap_or(shells.len().saturating_sub(1));
        match shells.get_mut(i) {
            Some(s) => s.push(h),
            None => shells.push(vec![h]),
        }
    }
    if shells.len() == 1 {
        RawGeom::Polygon(shells.pop().unwrap_or_default())
    } else {
        RawGeom::MultiPolygon(shells)
    }
}

fn closed(r: &RawPath) -> RawPath {
    let mut r = r.clone();
    if r.first() != r.last() {
        if let Some(p) = r.first().copied() {
            r.push(p);
        }
    }
    r
}

fn shape_to_raw(shape: Shape) -> Result<RawGeom, (Issue, String)> {
    let pt = |x: f64, y: f64| RawGeom::Point(Some(Coord { x, y }));
    Ok(match shape {
        Shape::NullShape => return Err((Issue::MissingGeometry, "null shape".into())),
        Shape::Point(p) => pt(p.x, p.y),
        Shape::PointM(p) => pt(p.x, p.y),
        Shape::PointZ(p) => pt(p.x, p.y),
        Shape::Polyline(l) => polyline(l.parts()),
        Shape::PolylineM(l) => polyline(l.parts()),
        Shape::PolylineZ(l) => polyline(l.parts()),
        Shape::Polygon(p) => polygon(p.rings()),
        Shape::PolygonM(p) => polygon(p.rings()),
        Shape::PolygonZ(p) => polygon(p.rings()),
        Shape::Multipoint(m) => RawGeom::MultiPoint(coords(m.points())),
        Shape::MultipointM(m) => RawGeom::MultiPoint(coords(m.points())),
        Shape::MultipointZ(m) => RawGeom::MultiPoint(coords(m.points())),
        Shape::Multipatch(_) => {
            return Err((
                Issue::UnsupportedGeometry,
                "multipatch shapes are not supported".into(),
            ))
        }
    })
}

/// The record's id field (`id` in any case), if the record has one.
fn record_id(record: &Record) -> Option<Result<u64, String>> {
    let map: &std::collections::HashMap<String, FieldValue> = record.as_ref();
    let (_, v) = map.iter().find(|(k, _)| k.eq_ignore_ascii_case("id"))?;
    let num = |f: f64| {
        if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 {
            Ok(f as u64)
        } else {
            Err(format!("id {f} is not a non-negative integer"))
        }
    };
    Some(match v {
        FieldValue::Numeric(Some(f)) | FieldValue::Double(f) | FieldValue::Currency(f) => num(*f),
        FieldValue::Float(Some(f)) => num(f64::from(*f)),
        FieldValue::Integer(i) => num(f64::from(*i)),
        FieldValue::Character(Some(s)) => s
            .trim()
            .parse()
            .map_err(|_| format!("id '{s}' is not a non-negative integer")),
        other => Err(format!("id {other:?} is not usable")),
    })
}

fn shp_error(path: &Path, e: shapefile::Error) -> Error {
    match e {
        shapefile::Error::IoError(io) if io.kind() != std::io::ErrorKind::UnexpectedEof => {
            Error::io(path, io)
        }
        shapefile::Error::IoError(_) => corrupted(
            path,
            Format::Shapefile,
            "unexpected end of file; it is truncated",
        ),
        other => corrupted(path, Format::Shapefile, other),
    }
}

/// Reads a Shapefile into `sink`.
pub(crate) fn read(path: &Path, sink: &mut GeoSink) -> Result<()> {
    let dbf = path.with_extension("dbf");
    if !dbf.exists() {
        let mut reader = shapefile::ShapeReader::from_path(path).map_err(|e| shp_error(path, e))?;
        for (n, shape) in reader.iter_shapes().enumerate() {
            let loc = Loc::Record(n as u64);
            let shape = shape.map_err(|e| at_record(path, n, e))?;
            match shape_to_raw(shape) {
                Ok(raw) => sink.push(loc, None, raw),
                Err((issue, msg)) => sink.reject(loc, issue, &msg),
            }
        }
        return Ok(());
    }
    let mut reader = shapefile::Reader::from_path(path).map_err(|e| shp_error(path, e))?;
    if let Ok(n) = reader.shape_count() {
        sink.reserve(n);
    }
    for (n, item) in reader.iter_shapes_and_records().enumerate() {
        let loc = Loc::Record(n as u64);
        let (shape, record) = item.map_err(|e| at_record(path, n, e))?;
        let id = match record_id(&record) {
            Some(Ok(id)) => Some(id),
            Some(Err(msg)) => {
                let detail = format!("{msg}; using ordinal {}", sink.next_ordinal());
                sink.note(Issue::MissingId, loc, &detail);
                None
            }
            None => None,
        };
        match shape_to_raw(shape) {
            Ok(raw) => sink.push(loc, id, raw),
            Err((issue, msg)) => sink.reject(loc, issue, &msg),
        }
    }
    Ok(())
}

fn at_record(path: &Path, n: usize, e: shapefile::Error) -> Error {
    let what = match &e {
        shapefile::Error::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "unexpected end of file; it is truncated".to_string()
        }
        other => other.to_string(),
    };
    corrupted(path, Format::Shapefile, format!("record {n}: {what}"))
}
