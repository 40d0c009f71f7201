//! FlatGeobuf: the canonical file format for 2-D geometries.
//!
//! Written with one non-nullable `id` column (ulong) and *without* the optional packed
//! Hilbert R-tree: the index would reorder the features by Hilbert value, and the order of
//! objects is an experiment variable (one-by-one insertion). Files written by other tools
//! (with an index, other columns) read fine; the id comes from a column named `id` (or
//! `fid`) of any integer type, else the feature's ordinal.
//!
//! Limitation: the `flatgeobuf` 6 writer mis-encodes a geometry collection in a file of
//! mixed geometry types (the collection's type is overwritten by its members'), so writing
//! such a dataset is refused with an error; files of only collections, or without
//! collections, are fine.

use super::{corrupted, create_file, open_file, Format};
use crate::data::raw::RawBuilder;
use crate::data::{GeoRecord, GeoSink, Issue, Loc};
use crate::{Error, Result};
use flatgeobuf::{
    ColumnType, FallibleStreamingIterator, FeatureProperties, FgbReader, FgbWriter,
    FgbWriterOptions, GeometryType,
};
use geo_types::Geometry;
use geozero::{ColumnValue, GeozeroGeometry, PropertyProcessor};
use std::io::{BufReader, Write};
use std::path::Path;

/// Writes `records` to a FlatGeobuf file at `path`.
pub fn write(path: &Path, records: &[GeoRecord]) -> Result<()> {
    let gz = |e: geozero::error::GeozeroError| Error::io(path, std::io::Error::other(e));
    let fgb_err = |e: flatgeobuf::Error| match e {
        flatgeobuf::Error::IO(io) => Error::io(path, io),
        other => Error::io(path, std::io::Error::other(other)),
    };
    let kind = common_type(records);
    if kind == GeometryType::Unknown {
        if let Some(r) = records
            .iter()
            .find(|r| matches!(r.geometry, Geometry::GeometryCollection(_)))
        {
            return Err(Error::invalid(
                "output format",
                format!(
                    "{}: the FlatGeobuf writer cannot store geometry collections mixed with \
                     other geometry types (record id {}); write .geojson, .wkt or .wkb instead",
                    path.display(),
                    r.id
                ),
            ));
        }
    }
    let options = FgbWriterOptions {
        write_index: false,
        detect_type: false,
        promote_to_multi: false,
        description: Some("spidx dataset"),
        ..Default::default()
    };
    let mut fgb = FgbWriter::create_with_options("spidx", kind, options).map_err(fgb_err)?;
    fgb.add_column("id", ColumnType::ULong, |_, col| col.nullable = false);
    for r in records {
        fgb.add_feature_geom(GeomRef(&r.geometry), |feat| {
            // Cannot fail for a declared column of the value's type.
            let _ = feat.property(0, "id", &ColumnValue::ULong(r.id));
        })
        .map_err(gz)?;
    }
    let mut out = create_file(path)?;
    fgb.write(&mut out).map_err(fgb_err)?;
    out.flush().map_err(|e| Error::io(path, e))
}

/// Feeds a borrowed geometry to the writer (geozero implements its trait for owned ones).
struct GeomRef<'a>(&'a Geometry);

impl GeozeroGeometry for GeomRef<'_> {
    fn process_geom<P: geozero::GeomProcessor>(&self, p: &mut P) -> geozero::error::Result<()> {
        geozero::geo_types::process_geom(self.0, p)
    }
}

/// The header geometry type: the common type of all records, or `Unknown` when mixed.
fn common_type(records: &[GeoRecord]) -> GeometryType {
    let of = |g: &Geometry| match g {
        Geometry::Point(_) => GeometryType::Point,
        Geometry::LineString(_) | Geometry::Line(_) => GeometryType::LineString,
        Geometry::Polygon(_) | Geometry::Rect(_) | Geometry::Triangle(_) => GeometryType::Polygon,
        Geometry::MultiPoint(_) => GeometryType::MultiPoint,
        Geometry::MultiLineString(_) => GeometryType::MultiLineString,
        Geometry::MultiPolygon(_) => GeometryType::MultiPolygon,
        Geometry::GeometryCollection(_) => GeometryType::GeometryCollection,
    };
    let mut it = records.iter().map(|r| of(&r.geometry));
    let Some(first) = it.next() else {
        return GeometryType::Unknown;
    };
    if it.all(|t| t == first) {
        first
    } else {
        GeometryType::Unknown
    }
}

/// Captures the integer value of one column.
struct IdColumn {
    index: usize,
    value: Option<u64>,
    bad: Option<String>,
}

impl PropertyProcessor for IdColumn {
    fn property(&mut self, i: usize, _name: &str, v: &ColumnValue) -> geozero::error::Result<bool> {
        if i != self.index {
            return Ok(false);
        }
        let signed = |x: i64| u64::try_from(x).ok();
        self.value = match *v {
            ColumnValue::ULong(x) => Some(x),
            ColumnValue::UInt(x) => Some(x.into()),
            ColumnValue::UShort(x) => Some(x.into()),
            ColumnValue::UByte(x) => Some(x.into()),
            ColumnValue::Long(x) => signed(x),
            ColumnValue::Int(x) => signed(x.into()),
            ColumnValue::Short(x) => signed(x.into()),
            ColumnValue::Byte(x) => signed(x.into()),
            ColumnValue::Double(x) if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 => Some(x as u64),
            ColumnValue::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        if self.value.is_none() {
            self.bad = Some(format!("id value {v} is not a non-negative integer"));
        }
        Ok(true)
    }
}

/// Reads a FlatGeobuf file into `sink`.
pub(crate) fn read(path: &Path, sink: &mut GeoSink) -> Result<()> {
    let bad = |e: &dyn std::fmt::Display| corrupted(path, Format::FlatGeobuf, e);
    let file = open_file(path)?;
    let mut input = BufReader::with_capacity(1 << 20, file);
    let reader = FgbReader::open(&mut input).map_err(|e| bad(&e))?;
    let header = reader.header();
    let expected = header.features_count();
    let id_index = header.columns().and_then(|cols| {
        let names: Vec<String> = cols.iter().map(|c| c.name().to_ascii_lowercase()).collect();
        names
            .iter()
            .position(|n| n == "id")
            .or_else(|| names.iter().position(|n| n == "fid"))
    });
    sink.reserve(expected as usize);
    let mut features = reader.select_all_seq().map_err(|e| bad(&e))?;
    let mut builder = RawBuilder::new();
    let mut n: u64 = 0;
    loop {
        let feature = match features.next() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                return Err(bad(&format_args!(
                    "feature {n} cannot be read ({e}); the file may be truncated"
                )))
            }
        };
        let loc = Loc::Feature(n);
        n += 1;
        let id = match id_index {
            Some(index) => {
                let mut col = IdColumn {
                    index,
                    value: None,
                    bad: None,
                };
                if let Err(e) = feature.process_properties(&mut col) {
                    col.bad = Some(format!("properties cannot be read: {e}"));
                }
                if col.value.is_none() {
                    let detail = col.bad.unwrap_or_else(|| "id is null".into());
                    sink.note(
                        Issue::MissingId,
                        loc,
                        &format!("{detail}; using ordinal {}", sink.next_ordinal()),
                    );
                }
                col.value
            }
            None => None,
        };
        if feature.geometry().is_none() {
            sink.reject(loc, Issue::MissingGeometry, "");
            continue;
        }
        match feature.process_geom(&mut builder) {
            Ok(()) => match builder.take() {
                Ok(raw) => sink.push(loc, id, raw),
                Err((issue, detail)) => sink.reject(loc, issue, &detail),
            },
            Err(e) => {
                let _ = builder.take();
                sink.reject(loc, Issue::Unparsable, &e.to_string());
            }
        }
    }
    if expected > 0 && n < expected {
        return Err(bad(&format_args!(
            "the header announces {expected} features but the file ends after {n}; it is truncated"
        )));
    }
    Ok(())
}
