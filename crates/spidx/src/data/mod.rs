//! Datasets: the objects the spatial indices are built on and queried with.
//!
//! This module sits beside the storage stack of the architecture (it knows nothing of devices,
//! stores or trees): it *feeds* the index layer (`build --data`) and the experiment runner
//! (workloads, query windows sized from a dataset's extent). It provides
//!
//! - a small in-memory model, [`Dataset`]: either 2-D geometries ([`GeoRecord`]: an id, a
//!   `geo_types::Geometry<f64>` and its bounding box) or d-dimensional point vectors
//!   ([`Vectors`], row `i` has id `i`), for the kNN experiments;
//! - readers for every importable [`Format`] behind one call, [`open`] / [`read`], which
//!   never stop at a bad record: they repair or skip it and count it in an [`ImportReport`]
//!   (see [`repair`](Policy) for the rules);
//! - writers for the canonical formats, [`write`]: FlatGeobuf (`.fgb`) for geometries and
//!   NumPy (`.npy`, float64, shape N×D) for vectors, plus GeoJSON, WKT and hex WKB;
//! - synthetic data, [`generate`]: uniform / gaussian / clustered rectangles or vectors and
//!   city-like building footprints;
//! - dataset statistics, [`info`];
//! - coordinate reference systems, [`crs`]: read from the formats that carry one, compared
//!   (spidx does not reproject), and what an index keeps of its dataset, [`provenance`]
//!   (file, CRS, extent, the source ids of renumbered or exploded objects);
//! - insertion orders, [`order`]: as stored, shuffled, Hilbert, by x, or clustered
//!   (spatially local runs, like an OpenStreetMap extract).
//!
//! Coordinates are kept as read: OSM and GeoJSON data stay in longitude/latitude degrees,
//! generated data lives in the square [`generate::EXTENT`] (think metres). Z and M values are
//! dropped on import (the indices are 2-D for geometries).

pub mod crs;
#[cfg(any(test, feature = "test-fixtures"))]
pub mod fixtures;
pub(crate) mod formats;
pub mod generate;
pub mod info;
pub(crate) mod order;
pub mod provenance;
mod raw;
mod repair;
pub(crate) mod report;

pub use crs::Crs;
pub use formats::Format;
pub use geo_types;
pub use order::InsertionOrder;
pub use repair::Policy;
pub(crate) use repair::{kind_name, vertex_count};
pub use report::{ImportReport, Issue, Loc, Severity};

use crate::{Error, Result};
use geo_types::{Coord, Geometry, Rect};
use serde::Serialize;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::Path;

/// One 2-D spatial object: an id, its exact geometry, and its bounding box (the MBR an index
/// stores).
#[derive(Debug, Clone, PartialEq)]
pub struct GeoRecord {
    /// The object's id (from the source's `id` when it has one, see [`read`]).
    pub id: u64,
    /// The exact geometry, used by the refinement step.
    pub geometry: Geometry<f64>,
    /// The minimum bounding rectangle of `geometry`.
    pub bbox: Rect<f64>,
    /// Where the object came from when its id is not the source's (the read gave new ids:
    /// [`ReadOptions::renumber`] or [`ReadOptions::explode`]); `None` when `id` is the
    /// source's id (see [`GeoRecord::source_id`]).
    pub source: Option<SourceId>,
}

impl GeoRecord {
    /// A record with its bounding box computed; `None` if the geometry has no coordinates.
    pub fn new(id: u64, geometry: Geometry<f64>) -> Option<Self> {
        let bbox = bounding_rect(&geometry)?;
        Some(GeoRecord {
            id,
            geometry,
            bbox,
            source: None,
        })
    }

    /// The id of the source record this object came from, and its part number under
    /// [`ReadOptions::explode`].
    pub fn source_id(&self) -> SourceId {
        self.source.unwrap_or(SourceId {
            id: self.id,
            part: None,
        })
    }
}

/// Where an object came from in its source file: the record's id (its feature id, `id`
/// column or field, or its 0-based ordinal: row, line or feature number, see [`read`]),
/// and, for one part of an exploded multi-part record, the part's 0-based number within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct SourceId {
    /// The source record's id.
    pub id: u64,
    /// The part's number within the record (exploded reads only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<u32>,
}

impl std::fmt::Display for SourceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.part {
            Some(p) => write!(f, "{}#{p}", self.id),
            None => write!(f, "{}", self.id),
        }
    }
}

/// Calls `f` on every coordinate of `g`.
pub(crate) fn for_each_coord(g: &Geometry<f64>, f: &mut impl FnMut(Coord<f64>)) {
    use geo_types::LineString;
    let ls = |l: &LineString<f64>, f: &mut dyn FnMut(Coord<f64>)| l.0.iter().for_each(|c| f(*c));
    match g {
        Geometry::Point(p) => f(p.0),
        Geometry::Line(l) => {
            f(l.start);
            f(l.end)
        }
        Geometry::LineString(l) => ls(l, f),
        Geometry::Polygon(p) => {
            ls(p.exterior(), f);
            p.interiors().iter().for_each(|r| ls(r, f));
        }
        Geometry::MultiPoint(m) => m.0.iter().for_each(|p| f(p.0)),
        Geometry::MultiLineString(m) => m.0.iter().for_each(|l| ls(l, f)),
        Geometry::MultiPolygon(m) => m.0.iter().for_each(|p| {
            ls(p.exterior(), f);
            p.interiors().iter().for_each(|r| ls(r, f));
        }),
        Geometry::GeometryCollection(c) => c.0.iter().for_each(|g| for_each_coord(g, f)),
        Geometry::Rect(r) => {
            f(r.min());
            f(r.max())
        }
        Geometry::Triangle(t) => {
            f(t.v1());
            f(t.v2());
            f(t.v3())
        }
    }
}

/// The minimum bounding rectangle of `g`, or `None` if it has no coordinates.
pub(crate) fn bounding_rect(g: &Geometry<f64>) -> Option<Rect<f64>> {
    let mut b: Option<(Coord<f64>, Coord<f64>)> = None;
    for_each_coord(g, &mut |c| match &mut b {
        None => b = Some((c, c)),
        Some((lo, hi)) => {
            lo.x = lo.x.min(c.x);
            lo.y = lo.y.min(c.y);
            hi.x = hi.x.max(c.x);
            hi.y = hi.y.max(c.y);
        }
    });
    b.map(|(lo, hi)| Rect::new(lo, hi))
}

/// A set of d-dimensional point vectors stored row-major; row `i` has id `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Vectors {
    dims: usize,
    data: Vec<f64>,
}

impl Vectors {
    /// Vectors of `dims` dimensions from row-major `data` (its length must be a multiple of
    /// `dims`, which must be at least 1).
    pub fn new(dims: usize, data: Vec<f64>) -> Result<Self> {
        if dims == 0 {
            return Err(Error::invalid("dimensions", "must be at least 1"));
        }
        if !data.len().is_multiple_of(dims) {
            return Err(Error::invalid(
                "vector data",
                format!(
                    "{} values are not a whole number of {dims}-d rows",
                    data.len()
                ),
            ));
        }
        Ok(Vectors { dims, data })
    }

    /// Number of dimensions of each vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.data.len() / self.dims
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Vector `i` (panics if `i >= len()`, like slice indexing).
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.dims..(i + 1) * self.dims]
    }

    /// All vectors in id order.
    pub fn rows(&self) -> std::slice::ChunksExact<'_, f64> {
        self.data.chunks_exact(self.dims)
    }

    /// The row-major values.
    pub(crate) fn as_slice(&self) -> &[f64] {
        &self.data
    }
}

/// An axis-aligned box in any number of dimensions (a dataset's extent).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Extent {
    /// Lower corner.
    pub min: Vec<f64>,
    /// Upper corner.
    pub max: Vec<f64>,
}

impl Extent {
    /// The extent of a 2-D rectangle.
    pub(crate) fn from_rect(r: &Rect<f64>) -> Self {
        Extent {
            min: vec![r.min().x, r.min().y],
            max: vec![r.max().x, r.max().y],
        }
    }

    /// Number of dimensions.
    pub fn dims(&self) -> usize {
        self.min.len()
    }

    /// Area (2-D) or volume: the product of the side lengths.
    pub fn volume(&self) -> f64 {
        self.min.iter().zip(&self.max).map(|(a, b)| b - a).product()
    }

    fn grow(&mut self, p: &[f64]) {
        for (i, v) in p.iter().enumerate() {
            self.min[i] = self.min[i].min(*v);
            self.max[i] = self.max[i].max(*v);
        }
    }
}

/// A whole dataset in memory: what the index layer builds from.
#[derive(Debug, Clone, PartialEq)]
pub enum Dataset {
    /// 2-D geometries with ids and bounding boxes, in source order (insertion order matters
    /// to one-by-one index construction, so it is preserved).
    Geo(Vec<GeoRecord>),
    /// d-dimensional point vectors.
    Vectors(Vectors),
}

impl Dataset {
    /// Number of objects.
    pub fn len(&self) -> usize {
        match self {
            Dataset::Geo(r) => r.len(),
            Dataset::Vectors(v) => v.len(),
        }
    }

    /// Whether there are no objects.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of dimensions (2 for geometries).
    pub fn dims(&self) -> usize {
        match self {
            Dataset::Geo(_) => 2,
            Dataset::Vectors(v) => v.dims(),
        }
    }

    /// The bounding box of all objects, `None` when empty.
    pub fn extent(&self) -> Option<Extent> {
        match self {
            Dataset::Geo(recs) => geo_extent(recs),
            Dataset::Vectors(v) => {
                let first = v.rows().next()?;
                let mut e = Extent {
                    min: first.to_vec(),
                    max: first.to_vec(),
                };
                v.rows().for_each(|r| e.grow(r));
                Some(e)
            }
        }
    }

    /// Object `i`'s id and box in `D` dimensions (a geometry's bounding box, a vector as a
    /// point): the one conversion of a dataset into what the index layer inserts, used by
    /// `spidx build`, the experiment runner and its workloads. An error when `D` is not the
    /// dataset's dimension.
    pub fn object<const D: usize>(&self, i: usize) -> Result<(u64, crate::geom::Rect<D>)> {
        let wrong = || {
            Error::invalid(
                "dataset",
                format!("{}-D objects for a {D}-D index", self.dims()),
            )
        };
        match self {
            Dataset::Geo(recs) => {
                if D != 2 {
                    return Err(wrong());
                }
                let r = &recs[i];
                let (lo, hi) = (r.bbox.min(), r.bbox.max());
                let (mut min, mut max) = ([0.0; D], [0.0; D]);
                min[..2].copy_from_slice(&[lo.x, lo.y]);
                max[..2].copy_from_slice(&[hi.x, hi.y]);
                Ok((r.id, crate::geom::Rect { min, max }))
            }
            Dataset::Vectors(v) => {
                let p: [f64; D] = v.row(i).try_into().map_err(|_| wrong())?;
                Ok((i as u64, crate::geom::Rect::point(p)))
            }
        }
    }

    /// Every object's box and id, in dataset order (what a bulk load takes).
    pub fn boxes<const D: usize>(&self) -> Result<Vec<(crate::geom::Rect<D>, u64)>> {
        // Allocated once at its size: collecting through `Result` loses the length, and
        // growing a million-entry vector by doubling took more CPU than the bulk load it
        // feeds (fresh memory faulted in at every reallocation; bench/cli_bulk.sh).
        let mut boxes = Vec::with_capacity(self.len());
        for i in 0..self.len() {
            let (id, r) = self.object::<D>(i)?;
            boxes.push((r, id));
        }
        Ok(boxes)
    }

    /// The geometries, if this is a 2-D dataset.
    pub fn as_geo(&self) -> Option<&[GeoRecord]> {
        match self {
            Dataset::Geo(r) => Some(r),
            Dataset::Vectors(_) => None,
        }
    }

    /// The vectors, if this is a vector dataset.
    pub fn as_vectors(&self) -> Option<&Vectors> {
        match self {
            Dataset::Vectors(v) => Some(v),
            Dataset::Geo(_) => None,
        }
    }
}

/// The bounding box of all records' boxes, `None` when there are none.
pub(crate) fn geo_extent(recs: &[GeoRecord]) -> Option<Extent> {
    let first = recs.first()?;
    let mut e = Extent::from_rect(&first.bbox);
    for r in &recs[1..] {
        e.grow(&[r.bbox.min().x, r.bbox.min().y]);
        e.grow(&[r.bbox.max().x, r.bbox.max().y]);
    }
    Some(e)
}

/// How [`read`] reads a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// The format; `None` picks it from the file name (see [`Format::from_path`]).
    pub format: Option<Format>,
    /// What to do with questionable geometries.
    pub policy: Policy,
    /// Replace the source's ids by 0, 1, 2, ... in kept order (for unique, dense ids).
    pub renumber: bool,
    /// Keep records whose id an earlier record already has, with a `duplicate_id` warning
    /// (for inspection: `dataset info`, query windows). Otherwise such a file is an error
    /// (see [`read`]), since an index keeps one geometry per id.
    pub allow_duplicate_ids: bool,
    /// Make every part of a multi-part geometry an object of its own (see [`explode`]);
    /// the objects get new ids 0, 1, 2, ... in kept order, as with `renumber`.
    pub explode: bool,
    /// Which columns or table hold the geometry and id (CSV, GeoPackage, GeoParquet); by
    /// default they are found by name.
    pub columns: Columns,
    /// The CRS of a file that does not name one (CSV, WKT, WKB); a file that names a
    /// different one is refused.
    pub crs: Option<Crs>,
}

/// Where the geometry and id of a table-like file are (see [`ReadOptions::columns`]).
///
/// Unset fields are found by name: a CSV geometry column named `wkt`, `geometry`, `geom`,
/// `the_geom`, `wkb` or `shape` (any case), else a pair of point columns `x`/`y`,
/// `lon`/`lat`, `lng`/`lat`, `long`/`lat` or `longitude`/`latitude`; an id column `id` or
/// `fid`; GeoParquet's primary geometry column from its `geo` metadata; a GeoPackage's only
/// feature table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns {
    /// The geometry column (WKT or WKB, hex in CSV).
    pub geometry: Option<String>,
    /// The x (longitude) column of point data.
    pub x: Option<String>,
    /// The y (latitude) column of point data.
    pub y: Option<String>,
    /// The id column (non-negative integers); without one the row number is the id.
    pub id: Option<String>,
    /// The GeoPackage feature table (layer).
    pub layer: Option<String>,
}

/// A dataset read from a file together with the report of what the reader did.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The usable records.
    pub dataset: Dataset,
    /// Counts of records read, kept, skipped and repaired, by reason.
    pub report: ImportReport,
}

/// Reads any importable file with default options, repairing or skipping bad records.
///
/// This is what `build --data` uses: every format `spidx dataset import` accepts can be used
/// directly. Use [`read`] to get the [`ImportReport`] as well.
pub fn open(path: impl AsRef<Path>) -> Result<Dataset> {
    Ok(read(path.as_ref(), &ReadOptions::default())?.dataset)
}

/// Reads any importable file (GeoJSON, GeoJSON text sequences, WKT, WKB, Shapefile,
/// FlatGeobuf, OSM PBF, NPY, CSV, GeoPackage, GeoParquet).
///
/// Bad records are repaired or skipped and counted in the report (never an error); a file
/// that cannot be read at all (missing, truncated, not of its format) is an error naming the
/// file and the problem.
///
/// Ids: the source's own id when it has one (GeoJSON feature `id` or property `id`,
/// FlatGeobuf and Shapefile `id` column, OSM way id; OSM relation ids have
/// [`formats::osm::RELATION_ID_FLAG`] set; CSV and GeoParquet `id` column, GeoPackage
/// `fid`), otherwise the record's 0-based ordinal in the source (WKT/WKB: line number − 1;
/// CSV, GeoParquet: row number). Each record keeps that source id
/// ([`GeoRecord::source_id`]) when the read gives it a new one (renumber, explode).
///
/// CRS: the one the file names (see [`crs`]) is in the report ([`ImportReport::crs`]);
/// [`ReadOptions::crs`] gives one to a file that names none, and is an error naming both
/// when the file names another.
///
/// Duplicate ids are an error naming the first duplicate, its two records and the count:
/// an index keeps one geometry per id, so a second record with the same id would silently
/// replace the first one's geometry. Set [`ReadOptions::renumber`] to give every record a
/// new dense id (0, 1, 2, ... in kept order), or [`ReadOptions::allow_duplicate_ids`] to
/// keep them with a warning (inspection only).
///
/// With [`ReadOptions::explode`] every part of a multi-part geometry becomes an object (see
/// [`explode`] for the parts and the id scheme); asking it of an NPY file (vectors, each
/// row a single point) is an error, not ignored.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Loaded> {
    let format = match opts.format {
        Some(f) => f,
        None => Format::from_path(path)?,
    };
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if meta.is_dir() {
        return Err(Error::invalid(
            "dataset",
            format!("{} is a directory, not a dataset file", path.display()),
        ));
    }
    let report = ImportReport::new(path.display().to_string(), format.name());
    if format == Format::Npy {
        if opts.explode {
            // Silently ignoring the option would index something other than what was asked.
            return Err(Error::invalid(
                "explode",
                format!(
                    "{} holds NPY vectors: every row is one single-part object, there are no parts \
                     to explode; leave out --explode (dataset.explode in a spec)",
                    path.display()
                ),
            ));
        }
        return formats::npy::read(path, report);
    }
    let mut sink = GeoSink::new(opts, report);
    if !matches!(
        format,
        Format::Csv | Format::GeoPackage | Format::GeoParquet
    ) && opts.columns != Columns::default()
    {
        return Err(Error::invalid(
            "columns",
            format!(
                "{} is {}: geometry, x/y, id columns and layers are options of CSV, GeoPackage \
                 and GeoParquet files only",
                path.display(),
                format.name()
            ),
        ));
    }
    match format {
        Format::FlatGeobuf => formats::fgb::read(path, &mut sink)?,
        Format::GeoJson => formats::geojson::read(path, &mut sink)?,
        Format::GeoJsonSeq => formats::geojsonseq::read(path, &mut sink)?,
        Format::Wkt => formats::text::read_wkt(path, &mut sink)?,
        Format::Wkb => formats::text::read_wkb(path, &mut sink)?,
        Format::Shapefile => formats::shp::read(path, &mut sink)?,
        Format::OsmPbf => formats::osm::read(path, &mut sink)?,
        Format::Csv => formats::csv::read(path, &opts.columns, &mut sink)?,
        Format::GeoPackage => formats::gpkg::read(path, &opts.columns, &mut sink)?,
        Format::GeoParquet => formats::geoparquet::read(path, &opts.columns, &mut sink)?,
        Format::Npy => unreachable!("handled above"),
    }
    if let Some(crs) = formats::crs_of(path, format)? {
        sink.set_crs(crs)?;
    }
    sink.finish()
}

/// Writes `dataset` to `path` in the format its extension names (see [`Format::for_output`]).
pub fn write(path: &Path, dataset: &Dataset) -> Result<Format> {
    let format = Format::for_output(path)?;
    write_as(path, dataset, format)?;
    Ok(format)
}

/// Writes `dataset` to `path` in `format`.
///
/// Geometries can be written as FlatGeobuf, GeoJSON, a GeoJSON text sequence, WKT or hex
/// WKB; vectors only as NPY.
pub fn write_as(path: &Path, dataset: &Dataset, format: Format) -> Result<()> {
    match (dataset, format) {
        (Dataset::Vectors(v), Format::Npy) => formats::npy::write(path, v),
        (Dataset::Vectors(v), f) => Err(Error::invalid(
            "output format",
            format!(
                "{}-dimensional vectors can only be written as .npy, not {} ({})",
                v.dims(),
                f.name(),
                path.display()
            ),
        )),
        (Dataset::Geo(r), Format::FlatGeobuf) => formats::fgb::write(path, r),
        (Dataset::Geo(r), Format::GeoJson) => formats::geojson::write(path, r),
        (Dataset::Geo(r), Format::GeoJsonSeq) => formats::geojsonseq::write(path, r),
        (Dataset::Geo(r), Format::Wkt) => formats::text::write_wkt(path, r),
        (Dataset::Geo(r), Format::Wkb) => formats::text::write_wkb(path, r),
        (Dataset::Geo(_), f) => Err(Error::invalid(
            "output format",
            format!(
                "geometries cannot be written as {} ({}); use .fgb, .geojson, .geojsonl, .wkt or .wkb",
                f.name(),
                path.display()
            ),
        )),
    }
}

/// The parts of `g`, each an object of its own for [`ReadOptions::explode`].
///
/// A MultiPoint gives its points, a MultiLineString its lines, a MultiPolygon its polygons,
/// and a GeometryCollection the parts of each member in turn (nested collections are
/// flattened); any other geometry is its own single part. Parts come in the order they have
/// in the geometry.
///
/// The id scheme of an exploded read: objects are numbered 0, 1, 2, ... in the order they
/// are kept, the parts of one source record consecutive in their order within it. So the
/// objects of a file of one MultiPolygon of n parts have ids 0..n, part i having id i.
pub fn explode(g: Geometry<f64>) -> Vec<Geometry<f64>> {
    let mut out = Vec::new();
    explode_into(g, &mut out);
    out
}

fn explode_into(g: Geometry<f64>, out: &mut Vec<Geometry<f64>>) {
    match g {
        Geometry::MultiPoint(m) => out.extend(m.0.into_iter().map(Geometry::Point)),
        Geometry::MultiLineString(m) => out.extend(m.0.into_iter().map(Geometry::LineString)),
        Geometry::MultiPolygon(m) => out.extend(m.0.into_iter().map(Geometry::Polygon)),
        Geometry::GeometryCollection(c) => c.0.into_iter().for_each(|g| explode_into(g, out)),
        other => out.push(other),
    }
}

/// Collects the records a geometry reader produces: repairs each one, counts everything in
/// the report, and assigns ids.
pub(crate) struct GeoSink<'a> {
    opts: &'a ReadOptions,
    report: ImportReport,
    records: Vec<GeoRecord>,
    /// Where each id was first seen (unless renumbering).
    seen: HashMap<u64, Loc>,
    /// Records whose id an earlier record has, and the first such (id, its loc, first loc).
    duplicates: u64,
    first_duplicate: Option<(u64, Loc, Loc)>,
    ordinal: u64,
    notes: repair::Notes,
}

impl<'a> GeoSink<'a> {
    fn new(opts: &'a ReadOptions, report: ImportReport) -> Self {
        GeoSink {
            opts,
            report,
            records: Vec::new(),
            seen: HashMap::new(),
            duplicates: 0,
            first_duplicate: None,
            ordinal: 0,
            notes: Vec::new(),
        }
    }

    /// Room for `n` more records.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.records.reserve(n.min(1 << 26));
    }

    /// Counts a record that could not even be decoded, with the reason.
    pub(crate) fn reject(&mut self, loc: Loc, issue: Issue, detail: &str) {
        self.report.records_read += 1;
        self.ordinal += 1;
        self.report.note(issue, loc, detail);
    }

    /// Adds one decoded record: `id` is the source's id if it has one.
    pub(crate) fn push(&mut self, loc: Loc, id: Option<u64>, raw: raw::RawGeom) {
        let ordinal = self.ordinal;
        self.ordinal += 1;
        self.report.records_read += 1;
        self.notes.clear();
        let geometry = match repair::finish(raw, &self.opts.policy, &mut self.notes) {
            Ok(g) => g,
            Err((issue, detail)) => {
                self.report.note(issue, loc, &detail);
                return;
            }
        };
        if self.opts.explode {
            // Judged per part below: a land mask of many small parts is not one huge object.
            self.notes.retain(|n| n.0 != Issue::ManyVertices);
        }
        self.notes.sort_by_key(|n| n.0);
        self.notes.dedup_by_key(|n| n.0);
        for (issue, detail) in &self.notes {
            self.report.note(*issue, loc, detail);
        }
        if self.opts.explode {
            let parts = explode(geometry);
            if parts.len() > 1 {
                self.report.exploded += 1;
            }
            let source = id.unwrap_or(ordinal);
            for (k, part) in parts.into_iter().enumerate() {
                let n = vertex_count(&part);
                if n > report::MANY_VERTICES {
                    self.report
                        .note(Issue::ManyVertices, loc, &format!("a part of {n} vertices"));
                }
                if let Some(mut rec) = GeoRecord::new(0, part) {
                    rec.source = Some(SourceId {
                        id: source,
                        part: Some(u32::try_from(k).unwrap_or(u32::MAX)),
                    });
                    self.report.kept(kind_name(&rec.geometry));
                    self.records.push(rec);
                }
            }
            return;
        }
        let id = id.unwrap_or(ordinal);
        if !self.opts.renumber {
            match self.seen.entry(id) {
                Entry::Vacant(v) => {
                    v.insert(loc);
                }
                Entry::Occupied(o) => {
                    let first = *o.get();
                    self.duplicates += 1;
                    self.first_duplicate.get_or_insert((id, loc, first));
                    self.report.note(
                        Issue::DuplicateId,
                        loc,
                        &format!("id {id} occurs before, at {first}"),
                    );
                }
            }
        }
        self.report.kept(kind_name(&geometry));
        let mut rec = GeoRecord::new(id, geometry).expect("repair keeps only non-empty geometries");
        if self.opts.renumber {
            rec.source = Some(SourceId { id, part: None });
        }
        self.records.push(rec);
    }

    /// Counts a record whose source id was missing or unusable (the ordinal is used).
    pub(crate) fn note(&mut self, issue: Issue, loc: Loc, detail: &str) {
        self.report.note(issue, loc, detail);
    }

    /// The ordinal the next record will get if it has no id of its own.
    pub(crate) fn next_ordinal(&self) -> u64 {
        self.ordinal
    }

    /// Records the CRS the file names. A CRS given in [`ReadOptions::crs`] that differs is
    /// an error naming both.
    pub(crate) fn set_crs(&mut self, crs: Crs) -> Result<()> {
        let what = format!("{} ({} says so)", self.report.source, self.report.format);
        crs::check_same(
            Some(&crs),
            &what,
            self.opts.crs.as_ref(),
            "the CRS given (--crs)",
        )?;
        self.report.crs = Some(crs);
        Ok(())
    }

    fn finish(mut self) -> Result<Loaded> {
        if self.report.crs.is_none() {
            self.report.crs = self.opts.crs.clone();
        }
        if let (Some((id, loc, first)), false) =
            (self.first_duplicate, self.opts.allow_duplicate_ids)
        {
            return Err(Error::invalid(
                format!("dataset {}", self.report.source),
                format!(
                    "{} records reuse the id of an earlier record (the first: id {id} at {loc}, already at {first}); \
                     an index keeps one geometry per id, so ids must be unique. Give the records new ids with \
                     `spidx dataset import SRC --out OUT.fgb --renumber` (in a spec: renumber = true under [dataset])",
                    self.duplicates
                ),
            ));
        }
        let mut recs = std::mem::take(&mut self.records);
        if self.opts.renumber || self.opts.explode {
            for (i, r) in recs.iter_mut().enumerate() {
                r.id = i as u64;
            }
        }
        // Huge objects only make sense relative to a dataset of some size.
        if recs.len() >= 100 {
            if let Some(ext) = geo_extent(&recs) {
                let total = ext.volume();
                for r in &recs {
                    let a = r.bbox.width() * r.bbox.height();
                    if a > total * 0.01 {
                        let pct = 100.0 * a / total;
                        self.report.note(
                            Issue::HugeExtent,
                            Loc::Id(r.id),
                            &format!("bounding box covers {pct:.1}% of the dataset extent"),
                        );
                    }
                }
            }
        }
        Ok(Loaded {
            dataset: Dataset::Geo(recs),
            report: self.report,
        })
    }
}

#[cfg(test)]
mod tests;
