//! FlatGeobuf: the canonical file format for 2-D geometries.
//!
//! Written with one non-nullable `id` column and *without* the optional packed
//! Hilbert R-tree: the index would reorder the features by Hilbert value, and the order of
//! objects is an experiment variable (one-by-one insertion).
//!
//! The `id` column is a signed 64-bit integer (`long`) whenever every id fits one (below
//! 2^63; OSM relation ids with their flag, 2^62 + n, do): GDAL reads a `long` column as an
//! Integer64 field, exactly, while it reads an unsigned `ulong` column as a Real (float64),
//! which loses the low bits of ids beyond 2^53. Only a dataset with an id of 2^63 or more
//! is written with a `ulong` column (which spidx reads back exactly; GDAL would not).
//!
//! Files written by other tools
//! (with an index, other columns) read fine; the id comes from a column named `id` (or
//! `fid`) of any integer type, else the feature's ordinal.
//!
//! Limitation: the `flatgeobuf` 6 writer mis-encodes a geometry collection in a file of
//! mixed geometry types (the collection's type is overwritten by its members'), so writing
//! such a dataset is refused with an error; files of only collections, or without
//! collections, are fine.
//!
//! The `flatgeobuf` 6 decoders index a feature's property bytes and coordinate arrays
//! without bounds checks, so a damaged file can make them panic. Properties are therefore
//! decoded here with checked reads, and a geometry's arrays are checked for consistency
//! (even `xy`, ring ends within the coordinates) before the crate's decoder sees them;
//! an inconsistent feature is rejected with a message instead.

use super::{corrupted, create_file, open_file, Format};
use crate::data::raw::RawBuilder;
use crate::data::{GeoRecord, GeoSink, Issue, Loc};
use crate::{Error, Result};
use flatgeobuf::{
    ColumnType, FallibleStreamingIterator, FgbReader, FgbWriter, FgbWriterOptions, GeometryType,
};
use geo_types::Geometry;
use geozero::{ColumnValue, GeozeroGeometry, PropertyProcessor};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Writes `records` to a FlatGeobuf file at `path`.
pub(crate) fn write(path: &Path, records: &[GeoRecord]) -> Result<()> {
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
    let signed = records.iter().all(|r| i64::try_from(r.id).is_ok());
    let id_type = if signed {
        ColumnType::Long
    } else {
        ColumnType::ULong
    };
    fgb.add_column("id", id_type, |_, col| col.nullable = false);
    for r in records {
        fgb.add_feature_geom(GeomRef(&r.geometry), |feat| {
            let value = match i64::try_from(r.id) {
                Ok(id) if signed => ColumnValue::Long(id),
                _ => ColumnValue::ULong(r.id),
            };
            // Cannot fail for a declared column of the value's type.
            let _ = feat.property(0, "id", &value);
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
    let header_type = header.geometry_type();
    let types: Vec<ColumnType> = header
        .columns()
        .map(|cols| cols.iter().map(|c| c.type_()).collect())
        .unwrap_or_default();
    let id_index = header.columns().and_then(|cols| {
        let names: Vec<String> = cols.iter().map(|c| c.name().to_ascii_lowercase()).collect();
        names
            .iter()
            .position(|n| n == "id")
            .or_else(|| names.iter().position(|n| n == "fid"))
    });
    let index_node_size = header.index_node_size();
    let counted = check_sizes(path, expected, index_node_size)?;
    sink.reserve(counted as usize);
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
                let props = feature.fbs_feature().properties();
                match id_property(props.map(|v| v.bytes()).unwrap_or(&[]), &types, index) {
                    Ok(Some(value)) => {
                        let _ = col.property(index, "", &value);
                    }
                    Ok(None) => {}
                    Err(e) => col.bad = Some(format!("properties cannot be read: {e}")),
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
        let Some(geometry) = feature.fbs_feature().geometry() else {
            sink.reject(loc, Issue::MissingGeometry, "");
            continue;
        };
        if let Err(detail) = check_arrays(&geometry, header_type, 0) {
            sink.reject(loc, Issue::Unparsable, &detail);
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

/// The fewest bytes a feature takes: its 4-byte size prefix and a FlatBuffers table
/// (root offset, vtable offset, the vtable's two sizes).
const MIN_FEATURE_BYTES: u64 = 4 + 12;

/// Checks the sizes a FlatGeobuf file at `path` declares against the bytes it holds,
/// before the `flatgeobuf` crate allocates or skips by them (it sizes a feature's buffer
/// by the feature's 4-byte length and the index by the header's feature count, unchecked):
/// the header's `features_count` (`expected`, 0 = not stated) at most what the file can
/// hold, the packed index (`index_node_size`, 0 = none) computed with checked arithmetic
/// and within the file, and every feature's length within the bytes left. Returns the
/// number of features the file holds.
fn check_sizes(path: &Path, expected: u64, index_node_size: u16) -> Result<u64> {
    let bad = |e: &dyn std::fmt::Display| corrupted(path, Format::FlatGeobuf, e);
    let io = |e| Error::io(path, e);
    let file = open_file(path)?;
    let len = file.metadata().map_err(io)?.len();
    let mut input = BufReader::with_capacity(1 << 16, file);
    let mut word = [0u8; 4];
    input.seek(SeekFrom::Start(8)).map_err(io)?;
    input.read_exact(&mut word).map_err(io)?;
    let mut at = 12 + u64::from(u32::from_le_bytes(word));
    let room = len.saturating_sub(at);
    if expected > room / MIN_FEATURE_BYTES {
        return Err(bad(&format_args!(
            "header field features_count = {expected} exceeds the {} features the {room} bytes \
             after the header can hold ({MIN_FEATURE_BYTES} bytes each at least)",
            room / MIN_FEATURE_BYTES
        )));
    }
    if index_node_size > 0 && expected > 0 {
        if index_node_size < 2 {
            return Err(bad(&format_args!(
                "header field index_node_size = {index_node_size} (at least 2, or 0 for no index)"
            )));
        }
        // The packed R-tree's node count: every level's nodes, up to the root.
        let node = u64::from(index_node_size);
        let (mut n, mut nodes) = (expected, expected);
        while n > 1 {
            n = n.div_ceil(node);
            nodes += n;
        }
        // 40 bytes per node (a box of 4 doubles and an offset).
        let index = nodes
            .checked_mul(40)
            .filter(|b| *b <= room)
            .ok_or_else(|| {
                bad(&format_args!(
                    "the packed index of {expected} features (node size {index_node_size}) runs \
                 past the end of the file ({room} bytes after the header)"
                ))
            })?;
        at += index;
    }
    let mut count = 0u64;
    input.seek(SeekFrom::Start(at)).map_err(io)?;
    while at < len {
        if len - at < 4 {
            break; // a truncated size prefix: the reader reports the file as truncated
        }
        input.read_exact(&mut word).map_err(io)?;
        let size = u64::from(u32::from_le_bytes(word));
        if size > len - at - 4 {
            return Err(bad(&format_args!(
                "feature {count} at byte {at} has a length of {size} bytes, but only {} bytes \
                 follow it; the file is truncated or damaged",
                len - at - 4
            )));
        }
        input.seek_relative(size as i64).map_err(io)?;
        at += 4 + size;
        count += 1;
    }
    Ok(count)
}

/// Byte width of a fixed-size property value of type `t`; `None` for the
/// length-prefixed types (string, JSON, date-time, binary).
fn fixed_width(t: ColumnType) -> Option<usize> {
    match t {
        ColumnType::Byte | ColumnType::UByte | ColumnType::Bool => Some(1),
        ColumnType::Short | ColumnType::UShort => Some(2),
        ColumnType::Int | ColumnType::UInt | ColumnType::Float => Some(4),
        ColumnType::Long | ColumnType::ULong | ColumnType::Double => Some(8),
        _ => None,
    }
}

/// Finds the value of column `wanted` in a feature's property bytes (pairs of a
/// little-endian `u16` column index and the value), checking every read against the
/// buffer's end. `Ok(None)`: the column is absent (null).
fn id_property<'a>(
    bytes: &'a [u8],
    types: &[ColumnType],
    wanted: usize,
) -> std::result::Result<Option<ColumnValue<'a>>, String> {
    let take = |at: usize, n: usize| bytes.get(at..at.checked_add(n)?);
    let mut at = 0;
    // A single trailing byte is tolerated, as the flatgeobuf reader does.
    while at + 1 < bytes.len() {
        let column = u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
        at += 2;
        let Some(&t) = types.get(column) else {
            return Err(format!(
                "property of column {column}, but the header has {} columns",
                types.len()
            ));
        };
        let (start, len) = match fixed_width(t) {
            Some(w) => (at, w),
            None => {
                let prefix = take(at, 4).ok_or("a value length runs past the properties")?;
                let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
                (at + 4, len)
            }
        };
        let value = take(start, len)
            .ok_or_else(|| format!("the value of column {column} runs past the properties"))?;
        at = start + len;
        if column != wanted {
            continue;
        }
        let array = |v: &[u8]| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..v.len()].copy_from_slice(v);
            a
        };
        let raw = u64::from_le_bytes(array(value));
        let value = match t {
            ColumnType::Byte => ColumnValue::Byte(raw as u8 as i8),
            ColumnType::UByte => ColumnValue::UByte(raw as u8),
            ColumnType::Bool => ColumnValue::Bool(raw != 0),
            ColumnType::Short => ColumnValue::Short(raw as u16 as i16),
            ColumnType::UShort => ColumnValue::UShort(raw as u16),
            ColumnType::Int => ColumnValue::Int(raw as u32 as i32),
            ColumnType::UInt => ColumnValue::UInt(raw as u32),
            ColumnType::Long => ColumnValue::Long(raw as i64),
            ColumnType::ULong => ColumnValue::ULong(raw),
            ColumnType::Float => ColumnValue::Float(f32::from_bits(raw as u32)),
            ColumnType::Double => ColumnValue::Double(f64::from_bits(raw)),
            ColumnType::String => ColumnValue::String(
                std::str::from_utf8(value).map_err(|_| "the id is not valid UTF-8")?,
            ),
            _ => return Err(format!("the id column has a non-numeric type ({t:?})")),
        };
        return Ok(Some(value));
    }
    Ok(None)
}

/// Deepest nesting of geometry parts accepted (collections of collections ...).
const MAX_PART_DEPTH: usize = 32;

/// Checks that a geometry's arrays are consistent before the crate's decoder (which
/// indexes them unchecked) reads it: `xy` holds whole pairs (at least one for a point),
/// ring/part `ends` rise and stay within the coordinates, extra ordinates cover every
/// coordinate, parts likewise. `header_type` is the file's geometry type (`Unknown` when
/// each feature has its own, as the decoder reads it).
fn check_arrays(
    g: &flatgeobuf::Geometry<'_>,
    header_type: GeometryType,
    depth: usize,
) -> std::result::Result<(), String> {
    if depth > MAX_PART_DEPTH {
        return Err(format!(
            "geometry parts nested deeper than {MAX_PART_DEPTH}"
        ));
    }
    let own_type = if depth == 0 && header_type != GeometryType::Unknown {
        header_type
    } else {
        g.type_()
    };
    let points = match g.xy() {
        Some(xy) if xy.len() % 2 != 0 => {
            return Err(format!("{} coordinates in xy, not whole pairs", xy.len()))
        }
        Some(xy) => xy.len() / 2,
        None => 0,
    };
    if own_type == GeometryType::Point && points == 0 {
        return Err("a point without coordinates".into());
    }
    for (name, len) in [
        ("z", g.z().map(|v| v.len())),
        ("m", g.m().map(|v| v.len())),
        ("t", g.t().map(|v| v.len())),
        ("tm", g.tm().map(|v| v.len())),
    ] {
        if len.is_some_and(|n| n < points) {
            return Err(format!(
                "{name} has fewer values than the {points} coordinates"
            ));
        }
    }
    if let Some(ends) = g.ends() {
        let mut last = 0u32;
        for end in ends.iter() {
            if end < last || end as usize > points {
                return Err(format!(
                    "part end {end} out of order or past the {points} coordinates"
                ));
            }
            last = end;
        }
    }
    if let Some(parts) = g.parts() {
        for part in parts.iter() {
            check_arrays(&part, header_type, depth + 1)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(column: u16, value: &[u8]) -> Vec<u8> {
        let mut b = column.to_le_bytes().to_vec();
        b.extend_from_slice(value);
        b
    }

    #[test]
    fn id_property_reads_the_wanted_column_after_others() {
        let types = [ColumnType::String, ColumnType::ULong];
        let mut bytes = prop(0, &[3, 0, 0, 0]);
        bytes.extend_from_slice(b"abc");
        bytes.extend(prop(1, &42u64.to_le_bytes()));
        let value = id_property(&bytes, &types, 1).unwrap();
        assert!(matches!(value, Some(ColumnValue::ULong(42))));
        assert!(matches!(
            id_property(&bytes, &types, 0).unwrap(),
            Some(ColumnValue::String("abc"))
        ));
    }

    #[test]
    fn id_property_absent_column_is_null_and_a_trailing_byte_is_tolerated() {
        let types = [ColumnType::Int, ColumnType::Long];
        let mut bytes = prop(0, &7i32.to_le_bytes());
        bytes.push(0);
        assert!(id_property(&bytes, &types, 1).unwrap().is_none());
        assert!(id_property(&[], &types, 1).unwrap().is_none());
    }

    #[test]
    fn id_property_refuses_values_past_the_end_instead_of_panicking() {
        let types = [ColumnType::Long, ColumnType::String];
        // A long with two of its eight bytes.
        let err = id_property(&prop(0, &[1, 2]), &types, 0).unwrap_err();
        assert!(err.contains("column 0 runs past"), "{err}");
        // A string whose length prefix claims more bytes than there are.
        let err = id_property(&prop(1, &[200, 0, 0, 0, b'x']), &types, 1).unwrap_err();
        assert!(err.contains("column 1 runs past"), "{err}");
        // A length prefix cut short, and a huge length that would overflow.
        assert!(id_property(&prop(1, &[1, 0]), &types, 1).is_err());
        assert!(id_property(&prop(1, &[255, 255, 255, 255]), &types, 1).is_err());
        // A column the header does not have.
        let err = id_property(&prop(9, &[0; 8]), &types, 0).unwrap_err();
        assert!(err.contains("header has 2 columns"), "{err}");
    }
}
