//! File formats: which ones exist, how a file name selects one, and one reader/writer module
//! per format. Readers feed a [`GeoSink`](super::GeoSink) (which repairs and counts);
//! writers take finished records.
//!
//! | format | extensions | read | write | notes |
//! |---|---|---|---|---|
//! | FlatGeobuf | `.fgb` | yes | yes | canonical for geometries; `id` column (ulong); no spatial index, so source order is kept |
//! | GeoJSON | `.geojson`, `.json` | yes | yes | FeatureCollection (streamed), Feature or bare Geometry |
//! | GeoJSON text sequence | `.geojsonl`, `.geojsons`, `.ndjson`, `.jsonl` | yes | yes | one Feature (or Geometry) per line, or RFC 8142 records each led by an RS (0x1E) byte; streamed |
//! | WKT | `.wkt` | yes | yes | one geometry per line; blank lines and `#` comments ignored |
//! | WKB | `.wkb` | yes | yes (hex) | hex (E)WKB one per line *or* binary WKB geometries back to back, detected from the first byte |
//! | Shapefile | `.shp` (+ `.dbf`, `.shx`) | yes | no | ids from a numeric `id` field of the `.dbf` when present |
//! | OSM PBF | `.osm.pbf`, `.pbf` | yes | no | building ways and building multipolygon relations |
//! | NumPy | `.npy` | yes | yes | canonical for vectors: float64, shape N×D, C order |
//! | CSV | `.csv`, `.tsv` | yes | no | a WKT or hex WKB column, or x/y (lon/lat) columns; `id` column or row number |
//! | GeoPackage | `.gpkg` | yes | no | one feature table (SQLite); its `fid`; CRS from `gpkg_spatial_ref_sys` |
//! | GeoParquet | `.parquet`, `.geoparquet` | yes | no | 1.0/1.1 `geo` metadata, WKB geometry column; CRS from its `crs` |
//!
//! The CRS a file names is kept in the import report ([`crate::data::Crs`]); see
//! [`crs_of`] for the formats whose readers do not find it themselves.

pub(crate) mod csv;
pub(crate) mod fgb;
pub(crate) mod geojson;
pub(crate) mod geojsonseq;
pub(crate) mod geoparquet;
pub(crate) mod gpkg;
pub(crate) mod npy;
pub(crate) mod osm;
pub(crate) mod shp;
pub(crate) mod text;
mod wkb_scan;

/// How deeply geometries may nest: levels of parentheses in WKT, of collections in WKB.
/// Real data needs a handful (a multipolygon is 3 parentheses deep); the limit keeps the
/// recursive parsers far from a stack overflow on hostile input.
pub(crate) const MAX_NESTING: usize = 32;

/// The largest single record (one line of a text format, one binary WKB geometry): 256 MiB,
/// some ten million vertices. Larger is taken for a broken file, with a clear error,
/// instead of reading it whole into memory.
pub(crate) const MAX_RECORD_BYTES: u64 = 256 << 20;

/// How deeply JSON may nest in GeoJSON (`serde_json`'s own limit, which it enforces).
pub(crate) const MAX_JSON_NESTING: usize = 128;

use crate::{Error, Result};
use serde::Serialize;
use std::path::Path;

/// A dataset file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// FlatGeobuf: the canonical format for 2-D geometries.
    FlatGeobuf,
    /// GeoJSON (RFC 7946).
    GeoJson,
    /// GeoJSON text sequences: newline-delimited GeoJSON (GeoJSONSeq, `ndjson`) and
    /// RFC 8142 record-separated sequences.
    GeoJsonSeq,
    /// Well-known text, one geometry per line.
    Wkt,
    /// Well-known binary: hex lines or concatenated binary.
    Wkb,
    /// ESRI Shapefile (`.shp` with `.dbf`).
    Shapefile,
    /// OpenStreetMap protocol-buffer extract.
    OsmPbf,
    /// NumPy array file: the canonical format for d-dimensional vectors.
    Npy,
    /// CSV or TSV with a WKT/WKB geometry column or x/y columns.
    Csv,
    /// OGC GeoPackage (an SQLite database): one feature table.
    GeoPackage,
    /// GeoParquet 1.0/1.1 with a WKB geometry column.
    GeoParquet,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 11] = [
        Format::FlatGeobuf,
        Format::GeoJson,
        Format::GeoJsonSeq,
        Format::Wkt,
        Format::Wkb,
        Format::Shapefile,
        Format::OsmPbf,
        Format::Npy,
        Format::Csv,
        Format::GeoPackage,
        Format::GeoParquet,
    ];

    /// Short name, as accepted by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::FlatGeobuf => "flatgeobuf",
            Format::GeoJson => "geojson",
            Format::GeoJsonSeq => "geojsonseq",
            Format::Wkt => "wkt",
            Format::Wkb => "wkb",
            Format::Shapefile => "shapefile",
            Format::OsmPbf => "osm-pbf",
            Format::Npy => "npy",
            Format::Csv => "csv",
            Format::GeoPackage => "geopackage",
            Format::GeoParquet => "geoparquet",
        }
    }

    /// File-name endings that select this format (lower case, with the dot).
    pub(crate) fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::FlatGeobuf => &[".fgb"],
            Format::GeoJson => &[".geojson", ".json"],
            Format::GeoJsonSeq => &[".geojsonl", ".geojsons", ".ndjson", ".jsonl"],
            Format::Wkt => &[".wkt"],
            Format::Wkb => &[".wkb"],
            Format::Shapefile => &[".shp"],
            Format::OsmPbf => &[".osm.pbf", ".pbf"],
            Format::Npy => &[".npy"],
            Format::Csv => &[".csv", ".tsv"],
            Format::GeoPackage => &[".gpkg"],
            Format::GeoParquet => &[".parquet", ".geoparquet"],
        }
    }

    /// Whether spidx can write this format.
    pub(crate) fn can_write(self) -> bool {
        !matches!(
            self,
            Format::Shapefile
                | Format::OsmPbf
                | Format::Csv
                | Format::GeoPackage
                | Format::GeoParquet
        )
    }

    /// Whether the format holds d-dimensional vectors (rather than 2-D geometries).
    pub fn holds_vectors(self) -> bool {
        self == Format::Npy
    }

    /// Parses a `--format` name (or one of the extensions without the dot).
    pub fn from_name(name: &str) -> Result<Format> {
        let n = name.trim().to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| {
                f.name() == n
                    || f.extensions().iter().any(|e| e[1..] == n)
                    || (n == "osm" && *f == Format::OsmPbf)
                    || (n == "shp" && *f == Format::Shapefile)
            })
            .ok_or_else(|| {
                Error::invalid(
                    "format",
                    format!("unknown format '{name}'; supported: {}", names(Format::ALL)),
                )
            })
    }

    /// The format a file name selects, for reading.
    pub(crate) fn from_path(path: &Path) -> Result<Format> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        // Longest ending first, so `.osm.pbf` wins over `.pbf`.
        let mut best: Option<(usize, Format)> = None;
        for f in Format::ALL {
            for e in f.extensions() {
                if name.ends_with(e) && best.is_none_or(|(l, _)| e.len() > l) {
                    best = Some((e.len(), f));
                }
            }
        }
        best.map(|(_, f)| f).ok_or_else(|| {
            Error::invalid(
                "dataset file",
                format!(
                    "cannot tell the format of {} from its extension; supported: {}",
                    path.display(),
                    extensions(Format::ALL)
                ),
            )
        })
    }

    /// The format a file name selects, for writing (only writable formats).
    pub fn for_output(path: &Path) -> Result<Format> {
        let writable: Vec<Format> = Format::ALL.into_iter().filter(|f| f.can_write()).collect();
        match Format::from_path(path) {
            Ok(f) if f.can_write() => Ok(f),
            Ok(f) => Err(Error::invalid(
                "output file",
                format!(
                    "{} would be {}, which spidx can read but not write; writable: {}",
                    path.display(),
                    f.name(),
                    extensions(writable)
                ),
            )),
            Err(_) => Err(Error::invalid(
                "output file",
                format!(
                    "cannot tell the output format of {} from its extension; writable: {}",
                    path.display(),
                    extensions(writable)
                ),
            )),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn names(formats: impl IntoIterator<Item = Format>) -> String {
    formats
        .into_iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn extensions(formats: impl IntoIterator<Item = Format>) -> String {
    formats
        .into_iter()
        .flat_map(|f| f.extensions().iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Opens `path` for reading, naming it in the error.
pub(crate) fn open_file(path: &Path) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|e| Error::io(path, e))
}

/// Creates `path` for writing, naming it in the error. Only a new file: an existing file
/// or a symbolic link at `path` is refused (`O_CREAT | O_EXCL | O_NOFOLLOW`), so a writer
/// never replaces a file spidx did not create nor writes through a link planted at the
/// name (callers that replace a file write a new one beside it and rename it).
pub(crate) fn create_file(path: &Path) -> Result<std::io::BufWriter<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => Error::invalid(
                "output file",
                format!(
                    "{} already exists (a file, or a link, spidx did not just create); spidx writes datasets only to new files: remove it or name another",
                    path.display()
                ),
            ),
            _ => Error::io(path, e),
        })?;
    Ok(std::io::BufWriter::with_capacity(1 << 20, f))
}

/// Shorthand for "file X is corrupted: message".
pub(crate) fn corrupted(path: &Path, format: Format, message: impl std::fmt::Display) -> Error {
    Error::corrupted(
        format!("{} file {}", format.name(), path.display()),
        message.to_string(),
    )
}

/// The longest `.prj` file read (bytes).
const MAX_PRJ_BYTES: u64 = 1 << 20;

/// The CRS named beside or inside a file whose reader does not report it itself: a
/// Shapefile's `.prj` (WKT) and a FlatGeobuf header (authority code or WKT). `None` when
/// the file names none; called after a successful read, so the file is known to be whole.
pub(crate) fn crs_of(path: &Path, format: Format) -> Result<Option<crate::data::Crs>> {
    use crate::data::Crs;
    match format {
        Format::Shapefile => {
            use std::io::Read;
            let prj = path.with_extension("prj");
            let file = match std::fs::File::open(&prj) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(Error::io(&prj, e)),
            };
            // A .prj is one WKT of a few KB; a larger one is not read whole.
            let mut bytes = Vec::new();
            file.take(MAX_PRJ_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(&prj, e))?;
            if bytes.len() as u64 > MAX_PRJ_BYTES {
                return Err(corrupted(
                    &prj,
                    format,
                    format!(
                        "its .prj is longer than {} KiB (a CRS's WKT is a few KB)",
                        MAX_PRJ_BYTES >> 10
                    ),
                ));
            }
            Ok(Crs::from_wkt(&String::from_utf8_lossy(&bytes)))
        }
        Format::FlatGeobuf => {
            let mut input = std::io::BufReader::new(open_file(path)?);
            let reader =
                flatgeobuf::FgbReader::open(&mut input).map_err(|e| corrupted(path, format, e))?;
            let Some(c) = reader.header().crs() else {
                return Ok(None);
            };
            let name = c.name().map(str::to_string);
            let crs = match (c.org(), c.code(), c.code_string(), c.wkt()) {
                (org, code, _, _) if code > 0 => Some(Crs {
                    name,
                    ..Crs::code(org.unwrap_or("EPSG"), code)
                }),
                (Some(org), _, Some(code), _) if !code.is_empty() => Some(Crs {
                    name,
                    ..Crs::code(org, code)
                }),
                (_, _, _, Some(wkt)) => Crs::from_wkt(wkt),
                _ => name.map(|n| Crs { id: n, name: None }),
            };
            Ok(crs)
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_selects_format() {
        let f = |p: &str| Format::from_path(Path::new(p)).unwrap();
        assert_eq!(f("a/b.FGB"), Format::FlatGeobuf);
        assert_eq!(f("x.osm.pbf"), Format::OsmPbf);
        assert_eq!(f("x.geojson"), Format::GeoJson);
        assert_eq!(f("x.json"), Format::GeoJson);
        for e in ["x.geojsonl", "x.GEOJSONS", "x.ndjson", "x.jsonl"] {
            assert_eq!(f(e), Format::GeoJsonSeq, "{e}");
        }
        assert_eq!(Format::from_name("geojsonseq").unwrap(), Format::GeoJsonSeq);
        assert_eq!(Format::from_name("ndjson").unwrap(), Format::GeoJsonSeq);
        assert_eq!(f("x.shp"), Format::Shapefile);
        assert_eq!(f("x.npy"), Format::Npy);
        let e = Format::from_path(Path::new("x.gdb"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.gdb") && e.contains(".fgb") && e.contains(".npy"),
            "{e}"
        );
        assert_eq!(f("x.gpkg"), Format::GeoPackage);
        assert_eq!(f("x.csv"), Format::Csv);
        assert_eq!(f("x.TSV"), Format::Csv);
        assert_eq!(f("x.parquet"), Format::GeoParquet);
        let e = Format::for_output(Path::new("x.shp"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("can read but not write"), "{e}");
        assert_eq!(Format::from_name("OSM").unwrap(), Format::OsmPbf);
        assert_eq!(Format::from_name("fgb").unwrap(), Format::FlatGeobuf);
        assert_eq!(Format::from_name("gpkg").unwrap(), Format::GeoPackage);
        assert_eq!(Format::from_name("parquet").unwrap(), Format::GeoParquet);
    }
}
