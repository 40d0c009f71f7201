//! Experiment spec files (TOML, see `docs/experiments.md`): parsing and validation.
//!
//! The file is first deserialized into raw structures that keep the span of every value
//! (`toml::Spanned`) and reject unknown keys (`deny_unknown_fields`); every value is then
//! checked and turned into the typed [`Spec`]. Every error names the file, the line and the
//! key, so a typo fails at once, before any dataset is read or any index built.
//!
//! This file holds the typed spec and the checks of the dataset, protocol and matrix tables;
//! `raw` the spanned structures as written; `workloads` the checks of `[[workload]]` tables.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml::Spanned;

use crate::cache::CacheConfig;
use crate::data::generate::{self, Distribution, GenerateOptions};
use crate::data::InsertionOrder;
use crate::device::DeviceConfig;
use crate::device::DeviceSpec;
use crate::index::bulk::BulkOptions;
use crate::index::written::{parse_index, SPEC_NAMING};
use crate::index::IndexKind;
use crate::node::{LayoutKind, Occupancy};
use crate::query::Predicate;
use crate::spatial::SUPPORTED_DIMS;
use crate::store::StoreConfig;
use crate::units::{parse_percent, parse_size};
use crate::{Error, Result};

/// A validated experiment spec.
#[derive(Debug, Clone, Serialize)]
pub struct Spec {
    /// The experiment's name (results are grouped by it).
    pub name: String,
    /// Free text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where `spidx run` appends the results when `--results` is not given: an SQLite file
    /// (relative paths resolved against the spec's folder) or a `postgres://` URL. Not part
    /// of the spec's fingerprint: where results go does not change what is measured.
    #[serde(skip)]
    pub results: Option<PathBuf>,
    /// The objects the indices are built on.
    pub dataset: DatasetSpec,
    /// How queries are measured.
    pub protocol: Protocol,
    /// The configurations whose cross product gives the runs.
    pub matrix: Matrix,
    /// What every run does, in order (construction first).
    pub workloads: Vec<Workload>,
}

/// Where the objects come from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetSpec {
    /// A dataset file (any format `spidx dataset import` reads).
    File {
        /// The file (relative paths are relative to the spec file).
        path: PathBuf,
        /// Skip records the reader cannot use instead of failing.
        skip_invalid: bool,
        /// Give the objects new ids 0, 1, 2, ... (a file whose ids repeat is an error
        /// otherwise). Left out of the spec's fingerprint when false.
        #[serde(skip_serializing_if = "is_false")]
        renumber: bool,
        /// Insertion order. Left out of the fingerprint when `as-stored`.
        #[serde(skip_serializing_if = "InsertionOrder::is_as_stored")]
        order: InsertionOrder,
    },
    /// Synthetic data.
    Generate(GenerateSpec),
}

/// The generator's parameters (see [`crate::data::generate`]).
#[derive(Debug, Clone, Serialize)]
pub struct GenerateSpec {
    /// uniform, gaussian, clustered or buildings.
    pub distribution: String,
    /// Number of objects.
    pub count: u64,
    /// Dimensions.
    pub dims: usize,
    /// Seed.
    pub seed: u64,
    /// Largest rectangle side as a fraction of the extent's side.
    pub max_side: f64,
    /// Clusters of `clustered`.
    pub clusters: Option<usize>,
    /// Point vectors even in 2-D.
    pub vectors: bool,
    /// Insertion order of the generated objects. Left out of the fingerprint when
    /// `as-stored` (the generator's own order).
    #[serde(skip_serializing_if = "InsertionOrder::is_as_stored")]
    pub order: InsertionOrder,
}

impl DatasetSpec {
    /// The insertion order of the objects.
    pub fn order(&self) -> InsertionOrder {
        match self {
            DatasetSpec::File { order, .. } => *order,
            DatasetSpec::Generate(g) => g.order,
        }
    }
}

impl GenerateSpec {
    /// The generator's options.
    pub fn options(&self) -> Result<GenerateOptions> {
        Ok(GenerateOptions {
            distribution: self.distribution.parse::<Distribution>()?,
            count: self.count,
            dims: self.dims,
            seed: self.seed,
            max_side: self.max_side,
            clusters: self.clusters,
            vectors: self.vectors,
        })
    }
}

/// The measurement protocol of query workloads.
#[derive(Debug, Clone, Serialize)]
pub struct Protocol {
    /// Measured repetitions of each query (the seeds: 10).
    pub repetitions: u32,
    /// Unmeasured runs of each query before its measured repetitions.
    pub warmup: u32,
    /// Drop page buffers and device caches (and the OS cache of `file:` devices) before
    /// every measured repetition.
    pub drop_caches: bool,
    /// Check every invariant of the tree after construction and record its shape.
    pub check: bool,
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            repetitions: 10,
            warmup: 0,
            drop_caches: true,
            check: true,
        }
    }
}

/// One index configuration of the matrix.
#[derive(Debug, Clone, Serialize)]
pub struct IndexChoice {
    /// Name in run names, e.g. `R*-tree 30%`.
    pub label: String,
    /// The tree and its options.
    pub kind: IndexKind,
}

/// One device of the matrix.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceChoice {
    /// Name in run names, e.g. `hdd-7200`.
    pub label: String,
    /// The device's resolved name (with overrides).
    pub name: String,
    /// The device.
    pub config: DeviceConfig,
}

/// Lists of values; every combination is a run.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    /// Trees.
    pub index: Vec<IndexChoice>,
    /// Node page sizes in bytes.
    pub page_size: Vec<usize>,
    /// Devices.
    pub device: Vec<DeviceChoice>,
    /// Page buffers.
    pub buffer: Vec<CacheConfig>,
    /// Node stores.
    pub store: Vec<StoreConfig>,
    /// Node occupancies.
    pub occupancy: Vec<Occupancy>,
    /// Page layouts.
    pub layout: Vec<LayoutKind>,
    /// Dimensionalities of a generated dataset, one dataset per value (empty: the
    /// dataset's own `dims`, one dataset). Left out of the fingerprint when empty, so
    /// specs without the axis keep theirs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<usize>,
}

/// Where query points are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// At the centre of a randomly chosen object.
    Objects,
    /// Uniformly at random inside the dataset's extent.
    Uniform,
}

/// The windows of a range workload.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Windows {
    /// `queries` windows of `area` × the extent's area, placed uniformly at random inside
    /// the extent, width/height = `aspect`.
    Generated {
        /// Fraction of the extent's area (or volume).
        area: f64,
        /// Number of windows.
        queries: u64,
        /// Width / height (2-D).
        aspect: f64,
        /// Seed.
        seed: u64,
    },
    /// Query geometries read from a dataset file: each record's box is a window and its
    /// geometry the refinement's query geometry.
    File {
        /// The file.
        path: PathBuf,
    },
}

/// Concurrent query streams of a kNN workload (Emrich et al. 2010).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Concurrency {
    /// Numbers of streams; each gives one result row.
    pub streams: Vec<usize>,
    /// Own index copies per stream, or one shared index.
    pub instances: crate::experiment::concurrent::Instances,
    /// Shared page cache standing in for the OS cache, bytes (0 = none).
    pub memory: u64,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// One workload of a run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Workload {
    /// One-by-one insertion of every object, then the store's final write-back.
    Construction {
        /// Name.
        name: String,
        /// Whether the construction ends by writing back what the store and the page
        /// buffer still hold (default). `false` leaves them dirty for the next workload, as
        /// the seeds ran construction and queries as one sequence (the flash-simulator
        /// paper's Fig. 2: the plain trees' LRU writes during the queries).
        #[serde(skip_serializing_if = "is_true")]
        final_flush: bool,
    },
    /// A bulk load of every object (STR, Hilbert packing or OMT), then the store's final
    /// write-back.
    Bulk {
        /// Name.
        name: String,
        /// The algorithm and fill factor.
        bulk: BulkOptions,
        /// As for [`Workload::Construction`].
        #[serde(skip_serializing_if = "is_true")]
        final_flush: bool,
    },
    /// Window queries.
    Range {
        /// Name.
        name: String,
        /// The windows.
        windows: Windows,
        /// Predicate.
        predicate: Predicate,
        /// Refinement on exact geometries after the filter step.
        refine: bool,
    },
    /// Point queries.
    Point {
        /// Name.
        name: String,
        /// Number of points.
        queries: u64,
        /// Placement.
        place: Placement,
        /// Seed.
        seed: u64,
        /// Predicate.
        predicate: Predicate,
        /// Refinement.
        refine: bool,
    },
    /// k nearest neighbour queries.
    Knn {
        /// Name.
        name: String,
        /// Neighbours per query.
        k: usize,
        /// Number of queries.
        queries: u64,
        /// Placement.
        place: Placement,
        /// Seed.
        seed: u64,
        /// Exact distances on geometries (else MBR distances).
        refine: bool,
        /// The sequential-scan baseline instead of the index: its request size in bytes
        /// (see [`crate::experiment::scan`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        scan: Option<usize>,
        /// Concurrent query streams, simulated (see [`crate::experiment::concurrent`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        concurrency: Option<Concurrency>,
    },
    /// A stream of inserts, deletes, updates and window queries.
    Mixed {
        /// Name.
        name: String,
        /// Length of the stream.
        operations: u64,
        /// Shares of inserts, deletes, updates and queries (sum 1).
        shares: [f64; 4],
        /// Area of the query windows as a fraction of the extent's.
        area: f64,
        /// Seed.
        seed: u64,
    },
}

impl Workload {
    /// The workload's name (unique in a spec).
    pub fn name(&self) -> &str {
        match self {
            Workload::Construction { name, .. }
            | Workload::Bulk { name, .. }
            | Workload::Range { name, .. }
            | Workload::Point { name, .. }
            | Workload::Knn { name, .. }
            | Workload::Mixed { name, .. } => name,
        }
    }

    /// `construction`, `bulk`, `range`, `point`, `knn` or `mixed`.
    /// Whether a construction or bulk load ends with the final write-back (true for the
    /// other kinds, which have none).
    pub fn final_flush(&self) -> bool {
        match self {
            Workload::Construction { final_flush, .. } | Workload::Bulk { final_flush, .. } => {
                *final_flush
            }
            _ => true,
        }
    }

    /// The workload's kind as spec files write it.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Construction { .. } => "construction",
            Workload::Bulk { .. } => "bulk",
            Workload::Range { .. } => "range",
            Workload::Point { .. } => "point",
            Workload::Knn { .. } => "knn",
            Workload::Mixed { .. } => "mixed",
        }
    }
}

mod raw;
mod workloads;

use raw::*;
use workloads::workloads;

/// The spec file's text, to turn spans into line numbers.
struct Src<'a> {
    file: String,
    text: &'a str,
    dir: PathBuf,
}

impl Src<'_> {
    fn line(&self, span: &Range<usize>) -> usize {
        let at = span.start.min(self.text.len());
        self.text[..at].matches('\n').count() + 1
    }

    fn err(&self, span: Range<usize>, key: &str, message: impl std::fmt::Display) -> Error {
        Error::invalid(
            format!("spec {} line {}", self.file, self.line(&span)),
            format!("{key}: {message}"),
        )
    }

    fn at<T>(&self, v: &Spanned<T>, key: &str, message: impl std::fmt::Display) -> Error {
        self.err(v.span(), key, message)
    }

    fn path(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// Converts a library error about a value into a spec error at its line.
    fn wrap<T, U>(&self, v: &Spanned<U>, key: &str, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.at(v, key, strip_invalid(&e)))
    }

    fn count(&self, v: &Spanned<i64>, key: &str, min: i64) -> Result<u64> {
        if *v.get_ref() < min {
            return Err(self.at(v, key, format!("{} is less than {min}", v.get_ref())));
        }
        Ok(*v.get_ref() as u64)
    }

    fn seed(&self, v: &Opt<i64>, key: &str, default: u64) -> Result<u64> {
        match v {
            Some(s) => self.count(s, key, 0),
            None => Ok(default),
        }
    }

    fn percent(&self, v: &Spanned<Text>, key: &str) -> Result<f64> {
        self.wrap(v, key, parse_percent(key, &v.get_ref().0))
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The message of an `InvalidOption` without its "invalid WHAT:" prefix.
fn strip_invalid(e: &Error) -> String {
    match e {
        Error::InvalidOption { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Reads and validates a spec file.
pub fn load(path: &Path) -> Result<Spec> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let dir = path
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| PathBuf::from("."));
    parse(&text, &path.display().to_string(), &dir)
}

/// Parses and validates spec `text` (read from `file`; relative paths are resolved
/// against `dir`).
pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Spec> {
    let src = Src {
        file: file.to_string(),
        text,
        dir: dir.to_path_buf(),
    };
    let raw: RawSpec = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| src.line(&s)).unwrap_or(1);
        Error::invalid(
            format!("spec {file} line {line}"),
            e.message().trim().to_string(),
        )
    })?;
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(src.at(&raw.name, "name", "must not be empty"));
    }
    let results = match &raw.results {
        None => None,
        Some(r) => Some(results_location(&src, r)?),
    };
    let dataset = dataset(&src, &raw.dataset)?;
    let protocol = protocol(&src, &raw.protocol)?;
    let mut matrix = matrix(&src, &raw.matrix)?;
    let dataset = dims_axis(&src, &raw, dataset, &mut matrix)?;
    let workloads = workloads(&src, &raw)?;
    Ok(Spec {
        name,
        description: raw.description,
        results,
        dataset,
        protocol,
        matrix,
        workloads,
    })
}

/// The spec's `results` key: a PostgreSQL URL as written, or a file path resolved against
/// the spec's folder.
fn results_location(src: &Src, raw: &Spanned<String>) -> Result<PathBuf> {
    let text = raw.get_ref().trim();
    if text.is_empty() {
        return Err(src.at(
            raw,
            "results",
            "must not be empty (an SQLite file or a postgres:// URL)",
        ));
    }
    if crate::experiment::db::backend::is_postgres_url(text) {
        return Ok(PathBuf::from(text));
    }
    if text.contains("://") {
        return Err(src.at(
            raw,
            "results",
            format!("'{text}' is neither a file path nor a postgres:// or postgresql:// URL"),
        ));
    }
    let path = src.path(text);
    if path.is_dir() {
        return Err(src.at(
            raw,
            "results",
            format!("{} is a folder; name the SQLite file", path.display()),
        ));
    }
    Ok(path)
}

fn dataset(src: &Src, raw: &Spanned<RawDataset>) -> Result<DatasetSpec> {
    let d = raw.get_ref();
    let order = match &d.order {
        Some(o) => src.wrap(o, "dataset.order", o.get_ref().parse::<InsertionOrder>())?,
        None => InsertionOrder::AsStored,
    };
    match (&d.file, &d.generate) {
        (Some(f), None) => {
            let path = src.path(f.get_ref());
            if !path.is_file() {
                return Err(src.at(
                    f,
                    "dataset.file",
                    format!("{} does not exist or is not a file", path.display()),
                ));
            }
            Ok(DatasetSpec::File {
                path,
                skip_invalid: d.skip_invalid.as_ref().is_some_and(|s| *s.get_ref()),
                renumber: d.renumber.as_ref().is_some_and(|s| *s.get_ref()),
                order,
            })
        }
        (None, Some(g)) => {
            if let Some(s) = &d.skip_invalid {
                return Err(src.at(s, "dataset.skip_invalid", "applies to dataset files only"));
            }
            if let Some(s) = &d.renumber {
                return Err(src.at(
                    s,
                    "dataset.renumber",
                    "applies to dataset files only (generated objects have ids 0, 1, 2, ...)",
                ));
            }
            let r = g.get_ref();
            let spec = GenerateSpec {
                distribution: r.distribution.get_ref().clone(),
                count: src.count(&r.count, "dataset.generate.count", 1)?,
                dims: match &r.dims {
                    Some(v) => src.count(v, "dataset.generate.dims", 1)? as usize,
                    None => 2,
                },
                seed: src.seed(&r.seed, "dataset.generate.seed", generate::DEFAULT_SEED)?,
                max_side: r
                    .max_side
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .unwrap_or(generate::DEFAULT_MAX_SIDE),
                clusters: match &r.clusters {
                    Some(v) => Some(src.count(v, "dataset.generate.clusters", 1)? as usize),
                    None => None,
                },
                vectors: r.vectors.unwrap_or(false),
                order,
            };
            let opts = src.wrap(&r.distribution, "dataset.generate", spec.options())?;
            // The generator validates its options before generating anything.
            if opts.count > 0 {
                src.wrap(
                    g,
                    "dataset.generate",
                    generate::generate(&GenerateOptions { count: 1, ..opts }).map(|_| ()),
                )?;
            }
            Ok(DatasetSpec::Generate(spec))
        }
        (Some(_), Some(_)) => Err(src.at(raw, "dataset", "give either file or generate, not both")),
        (None, None) => Err(src.at(
            raw,
            "dataset",
            "give file = \"PATH\" or generate = { distribution = ..., count = ... }",
        )),
    }
}

/// Checks the `matrix.dims` axis against the dataset: it needs a generated dataset
/// without its own `dims` (one place says what the dimensionality is), and every value
/// must suit the generator. The dataset's `dims` becomes the axis' first value (the one
/// [`crate::experiment::Experiment::dataset`] holds).
fn dims_axis(
    src: &Src,
    raw: &RawSpec,
    mut dataset: DatasetSpec,
    matrix: &mut Matrix,
) -> Result<DatasetSpec> {
    let Some(list) = &raw.matrix.get_ref().dims else {
        return Ok(dataset);
    };
    let DatasetSpec::Generate(g) = &mut dataset else {
        return Err(src.at(
            list,
            "matrix.dims",
            "applies to generated datasets only (a dataset file has the dimensionality it has)",
        ));
    };
    let generate = raw.dataset.get_ref().generate.as_ref();
    if let Some(d) = generate.and_then(|g| g.get_ref().dims.as_ref()) {
        return Err(src.at(
            d,
            "dataset.generate.dims",
            "the spec also has matrix.dims; give the dimensionality in one place (the axis)",
        ));
    }
    for (i, &d) in matrix.dims.iter().enumerate() {
        let opts = GenerateOptions {
            count: 1,
            dims: d,
            ..src.wrap(list, "matrix.dims", g.options())?
        };
        src.wrap(
            &list.get_ref()[i],
            "matrix.dims",
            generate::generate(&opts).map(|_| ()),
        )?;
    }
    g.dims = matrix.dims[0];
    Ok(dataset)
}

fn protocol(src: &Src, raw: &RawProtocol) -> Result<Protocol> {
    let d = Protocol::default();
    Ok(Protocol {
        repetitions: match &raw.repetitions {
            Some(v) => src.count(v, "protocol.repetitions", 1)? as u32,
            None => d.repetitions,
        },
        warmup: match &raw.warmup {
            Some(v) => src.count(v, "protocol.warmup", 0)? as u32,
            None => d.warmup,
        },
        drop_caches: raw.drop_caches.unwrap_or(d.drop_caches),
        check: raw.check.unwrap_or(d.check),
    })
}

fn nonempty<T, U>(src: &Src, v: &Spanned<Vec<T>>, key: &str, f: impl FnOnce() -> U) -> Result<U> {
    if v.get_ref().is_empty() {
        return Err(src.at(v, key, "needs at least one value"));
    }
    Ok(f())
}

fn matrix(src: &Src, raw: &Spanned<RawMatrix>) -> Result<Matrix> {
    let m = raw.get_ref();
    nonempty(src, &m.index, "matrix.index", || ())?;
    let index = m
        .index
        .get_ref()
        .iter()
        .map(|i| index_choice(src, i))
        .collect::<Result<Vec<_>>>()?;
    let page_size = match &m.page_size {
        None => vec![4096],
        Some(list) => {
            nonempty(src, list, "matrix.page_size", || ())?;
            list.get_ref()
                .iter()
                .map(|p| {
                    let b = src.wrap(
                        p,
                        "matrix.page_size",
                        parse_size("page size", &p.get_ref().0),
                    )?;
                    usize::try_from(b).map_err(|_| src.at(p, "matrix.page_size", "too large"))
                })
                .collect::<Result<Vec<_>>>()?
        }
    };
    let device = match &m.device {
        None => vec![device_choice(
            src,
            0,
            &Spanned::new(
                0..0,
                RawDevice {
                    device: "memory".into(),
                    params: toml::Table::new(),
                    label: None,
                },
            ),
        )?],
        Some(list) => {
            nonempty(src, list, "matrix.device", || ())?;
            list.get_ref()
                .iter()
                .enumerate()
                .map(|(i, d)| device_choice(src, i, d))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let buffer = match &m.buffer {
        None => vec![CacheConfig::none()],
        Some(list) => {
            nonempty(src, list, "matrix.buffer", || ())?;
            list.get_ref()
                .iter()
                .map(|b| src.wrap(b, "matrix.buffer", b.get_ref().parse::<CacheConfig>()))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let store = match &m.store {
        None => vec![StoreConfig::default()],
        Some(list) => {
            nonempty(src, list, "matrix.store", || ())?;
            list.get_ref().iter().map(|s| s.get_ref().clone()).collect()
        }
    };
    let occupancy = match &m.occupancy {
        None => vec![Occupancy::default()],
        Some(list) => {
            nonempty(src, list, "matrix.occupancy", || ())?;
            list.get_ref()
                .iter()
                .map(|o| occupancy(src, o.get_ref()))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let layout = match &m.layout {
        None => vec![LayoutKind::Checked],
        Some(list) => {
            nonempty(src, list, "matrix.layout", || ())?;
            list.get_ref()
                .iter()
                .map(|l| src.wrap(l, "matrix.layout", LayoutKind::parse(l.get_ref())))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let dims = match &m.dims {
        None => Vec::new(),
        Some(list) => {
            nonempty(src, list, "matrix.dims", || ())?;
            let mut seen = Vec::new();
            for d in list.get_ref() {
                let v = *d.get_ref();
                if !SUPPORTED_DIMS.iter().any(|s| *s as i64 == v) {
                    return Err(src.at(
                        d,
                        "matrix.dims",
                        format!("{v} dimensions are not supported; supported: {SUPPORTED_DIMS:?}"),
                    ));
                }
                if seen.contains(&(v as usize)) {
                    return Err(src.at(d, "matrix.dims", format!("{v} is listed twice")));
                }
                seen.push(v as usize);
            }
            seen
        }
    };
    let matrix = Matrix {
        index,
        page_size,
        device,
        buffer,
        store,
        occupancy,
        layout,
        dims,
    };
    super::matrix::check_size(&matrix).map_err(|e| src.at(raw, "matrix", e))?;
    Ok(matrix)
}

/// One `[[matrix.index]]` entry: an optional `label`, the rest parsed by
/// [`crate::index::written`] (the one parser of index options, shared with the CLI).
fn index_choice(src: &Src, raw: &Spanned<toml::Table>) -> Result<IndexChoice> {
    let mut table = raw.get_ref().clone();
    let label = match table.remove("label") {
        None => None,
        Some(toml::Value::String(s)) => Some(s),
        Some(other) => {
            return Err(src.at(
                raw,
                "matrix.index.label",
                format!("{other} is not a string"),
            ))
        }
    };
    let kind = parse_index(&table, &SPEC_NAMING).map_err(|e| match e {
        Error::InvalidOption { what, message } => {
            src.at(raw, &format!("matrix.index.{what}"), message)
        }
        other => other,
    })?;
    Ok(IndexChoice {
        label: label.unwrap_or_else(|| kind.label()),
        kind,
    })
}

fn device_choice(src: &Src, i: usize, raw: &Spanned<RawDevice>) -> Result<DeviceChoice> {
    let d = raw.get_ref();
    let key = format!("matrix.device[{i}]");
    let base = if d.device.ends_with(".toml") {
        src.path(&d.device).display().to_string()
    } else {
        d.device.clone()
    };
    // The device itself first, so its errors name `device`, not a parameter.
    src.wrap(
        raw,
        &format!("{key}.device"),
        DeviceSpec::new(base.clone()).resolve(),
    )?;
    let mut spec = DeviceSpec::new(base.clone());
    for (k, v) in flatten_params("", &d.params) {
        spec.params.push((k, v));
    }
    let resolved = spec.resolve().map_err(|e| {
        // Name the parameter that is wrong on its own; if each is fine alone, the
        // combination is what fails.
        let culprit = spec.params.iter().find(|p| {
            DeviceSpec {
                base: base.clone(),
                params: vec![(*p).clone()],
            }
            .resolve()
            .is_err()
        });
        match culprit {
            Some((k, _)) => src.at(raw, &format!("{key}.params.{k}"), strip_invalid(&e)),
            None => src.at(raw, &format!("{key}.params"), strip_invalid(&e)),
        }
    })?;
    let label = d.label.clone().unwrap_or_else(|| {
        if d.params.is_empty() {
            d.device.clone()
        } else {
            resolved.name.clone()
        }
    });
    Ok(DeviceChoice {
        label,
        name: resolved.name,
        config: resolved.config,
    })
}

/// `{ flash = { read_us = 40 } }` → `flash.read_us=40` (the form device overrides take).
fn flatten_params(prefix: &str, t: &toml::Table) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => out.extend(flatten_params(&key, inner)),
            toml::Value::String(s) => out.push((key, s.clone())),
            other => out.push((key, other.to_string())),
        }
    }
    out
}

fn occupancy(src: &Src, r: &RawOccupancy) -> Result<Occupancy> {
    let d = Occupancy::default();
    let get = |v: &Opt<Text>, key: &str, default: f64| -> Result<f64> {
        match v {
            Some(p) => src.percent(p, &format!("matrix.occupancy.{key}")),
            None => Ok(default),
        }
    };
    let min = get(&r.min_fill, "min_fill", d.internal_min)?;
    let max = get(&r.max_fill, "max_fill", d.internal_max)?;
    Ok(Occupancy {
        leaf_min: get(&r.leaf_min_fill, "leaf_min_fill", min)?,
        leaf_max: get(&r.leaf_max_fill, "leaf_max_fill", max)?,
        internal_min: min,
        internal_max: max,
    })
}

#[cfg(test)]
mod tests;
