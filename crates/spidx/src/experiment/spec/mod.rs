//! Experiment spec files (TOML, see `docs/experiments.md`): parsing and validation.
//!
//! The file is first deserialized into raw structures that keep the span of every value
//! (`toml::Spanned`) and reject unknown keys (`deny_unknown_fields`); every value is then
//! checked and turned into the typed [`Spec`]. Every error names the file, the line and the
//! key, so a typo fails at once, before any dataset is read or any index built.
//!
//! This file holds the typed spec and the parse; `raw` the spanned structures as written;
//! `src` the file's text and its error helpers; `tables` the checks of the dataset, protocol
//! and matrix tables; `workloads` the checks of `[[workload]]` tables.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cache::CacheConfig;
use crate::data::generate::{Distribution, GenerateOptions};
use crate::data::InsertionOrder;
use crate::device::DeviceConfig;
use crate::index::bulk::BulkOptions;
use crate::index::IndexKind;
use crate::node::{LayoutKind, Occupancy};
use crate::query::Predicate;
use crate::spatial::HostChoice;
use crate::store::StoreConfig;
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
        /// Make every part of a multi-part geometry an object of its own, with ids 0, 1, 2,
        /// ... (see [`crate::data::explode`]). Left out of the fingerprint when false.
        #[serde(skip_serializing_if = "is_false")]
        explode: bool,
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
    /// The host profile that prices the host's work on simulated devices (modelled
    /// elapsed time = device time + host time; see [`crate::spatial::host`]). Left out of
    /// the fingerprint when it is the default, so specs without it keep theirs.
    #[serde(skip_serializing_if = "HostChoice::is_default")]
    pub host: HostChoice,
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol {
            repetitions: 10,
            warmup: 0,
            drop_caches: true,
            check: true,
            host: HostChoice::default(),
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

/// The most runs one experiment may expand to (checked here, where the matrix is read, and
/// by [`super::matrix::expand`]). Every run builds an index, so a matrix
/// beyond this is almost certainly a mistake in a list (and would take days); split such
/// an experiment into several specs.
pub const MAX_RUNS: usize = 10_000;

/// Number of runs `m` expands to (the product of its list lengths), `None` on overflow.
pub(crate) fn run_count(m: &Matrix) -> Option<usize> {
    [
        m.index.len(),
        m.store.len(),
        m.page_size.len(),
        m.occupancy.len(),
        m.layout.len(),
        m.buffer.len(),
        m.device.len(),
        m.dims.len().max(1),
    ]
    .into_iter()
    .try_fold(1usize, |n, l| n.checked_mul(l))
}

/// Checks that `m` expands to at most [`MAX_RUNS`] runs, naming the list lengths otherwise.
pub(crate) fn check_size(m: &Matrix) -> std::result::Result<usize, String> {
    match run_count(m) {
        Some(n) if n <= MAX_RUNS => Ok(n),
        n => Err(format!(
            "expands to {} runs ({} index × {} store × {} page_size × {} occupancy × {} layout × {} buffer × {} device{}), more than the limit of {MAX_RUNS}; split the experiment into several specs",
            n.map_or("more than 2^64".to_string(), |n| n.to_string()),
            m.index.len(),
            m.store.len(),
            m.page_size.len(),
            m.occupancy.len(),
            m.layout.len(),
            m.buffer.len(),
            m.device.len(),
            if m.dims.is_empty() {
                String::new()
            } else {
                format!(" × {} dims", m.dims.len())
            }
        )),
    }
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
mod src;
mod tables;
mod workloads;

use raw::*;
use src::Src;
use tables::{dataset, dims_axis, matrix, protocol, results_location};
use workloads::workloads;

fn is_false(b: &bool) -> bool {
    !*b
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

#[cfg(test)]
mod tests;
