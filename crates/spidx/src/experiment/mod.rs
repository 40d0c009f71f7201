//! The experiment runner (architecture §8): the top of the stack, beside the CLI.
//! It drives the index layer ([`SpatialIndex`](crate::spatial::SpatialIndex)) and reads
//! the statistics every layer keeps (tree, store, page cache, device); it never reaches
//! below that API.
//!
//! * [`spec`]: spec files (TOML) → a validated [`Spec`];
//! * [`matrix`]: the cross product of the spec's lists → [`RunConfig`]s;
//! * [`workload`]: query windows, points and update streams, generated once per experiment;
//! * [`protocol`]: the seeds' measurement arithmetic (sum of per-query means, spread);
//! * [`runner`]: one run — build, then the workloads in order — measured;
//! * [`scan`]: the sequential-scan baseline (Emrich et al. 2010) beside the index;
//! * [`concurrent`]: concurrent query streams as a discrete-event simulation on a device;
//!   on a real (`file:`) device they run as real threads (`runner`), with [`budget`] as
//!   their shared memory budget;
//! * [`shard`]: the K-th of N disjoint slices of a matrix, for runs on many machines;
//! * [`db`]: the results database (an SQLite file, or a PostgreSQL database);
//! * [`fingerprint`]: every input of a run identified by its bytes, for `--resume`.
//!
//! [`Experiment::prepare`] does every check that can fail (spec, dataset, combinations,
//! query files) before the first run starts.

pub(crate) mod budget;
pub mod concurrent;
pub mod db;
pub mod fingerprint;
pub mod matrix;
pub mod protocol;
pub(crate) mod runner;
pub(crate) mod scan;
pub mod scorecard;
pub mod session;
pub(crate) mod shard;
pub mod spec;
pub(crate) mod workload;

#[cfg(test)]
mod dims_tests;

use std::path::Path;

use serde::Serialize;

pub use db::ResultsDb;
pub use matrix::RunConfig;
pub use runner::{Progress, RunResult, WorkloadResult};
pub use shard::Shard;
pub use spec::{Spec, Workload};

use crate::data::{self, generate, Dataset, Policy, ReadOptions};
use crate::{Error, Result};
use spec::DatasetSpec;
use workload::Inputs;

/// An experiment ready to run: its spec, data, runs and workload inputs.
pub struct Experiment {
    /// The validated spec.
    pub spec: Spec,
    /// The spec file as written.
    pub spec_text: String,
    /// Fingerprint of the normalized spec (identifies the experiment with its name).
    pub hash: String,
    /// The objects (with a `matrix.dims` axis: those of its first dimensionality).
    pub dataset: Dataset,
    /// The runs of the matrix, in order.
    pub runs: Vec<RunConfig>,
    /// Inputs of each workload (same order as `spec.workloads`), on `dataset`.
    pub inputs: Vec<Inputs>,
    /// With a `matrix.dims` axis, the dataset and workload inputs of every further
    /// dimensionality (after the first), each generated from the spec's seed.
    pub other_dims: Vec<DimsData>,
    /// Seconds spent reading or generating the dataset(s).
    pub load_s: f64,
    /// Every input fingerprinted by its content (files hashed, or taken from the user's
    /// hash cache).
    pub prints: fingerprint::ExperimentInputs,
}

/// The data of one further dimensionality of a `matrix.dims` axis.
pub struct DimsData {
    /// The dimensionality.
    pub dims: usize,
    /// The generated objects.
    pub dataset: Dataset,
    /// Inputs of each workload on them.
    pub inputs: Vec<Inputs>,
}

impl Experiment {
    /// Reads the spec file at `path`, loads or generates the dataset, expands the matrix
    /// and builds every workload's inputs; every error surfaces here.
    pub fn prepare(path: &Path) -> Result<Experiment> {
        let spec_text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let spec = spec::load(path)?;
        let t = std::time::Instant::now();
        let dataset = load_dataset(&spec.dataset)?;
        let mut other_dims = Vec::new();
        for &dims in spec.matrix.dims.iter().skip(1) {
            let DatasetSpec::Generate(g) = &spec.dataset else {
                return Err(Error::invalid(
                    "matrix.dims",
                    "applies to generated datasets only",
                ));
            };
            let g = spec::GenerateSpec { dims, ..g.clone() };
            let dataset = load_dataset(&DatasetSpec::Generate(g))?;
            other_dims.push(DimsData {
                dims,
                inputs: workload_inputs(&spec, &dataset)?,
                dataset,
            });
        }
        let load_s = t.elapsed().as_secs_f64();
        let runs = matrix::expand(&spec, dataset.dims())?;
        let inputs = workload_inputs(&spec, &dataset)?;
        let mut objects = vec![(spec.matrix.dims.first().copied(), dataset.len() as u64)];
        objects.extend(
            other_dims
                .iter()
                .map(|o| (Some(o.dims), o.dataset.len() as u64)),
        );
        let mut cache = fingerprint::HashCache::user();
        let prints = fingerprint::ExperimentInputs::of(
            fingerprint::Sources {
                dataset: &spec.dataset,
                objects,
                workloads: &spec.workloads,
                inputs: &inputs,
                devices: &spec.matrix.device,
                spec: (path, &spec_text),
            },
            &mut cache,
        )?;
        cache.save();
        Ok(Experiment {
            prints,
            hash: matrix::fingerprint(&spec),
            spec,
            spec_text,
            dataset,
            runs,
            inputs,
            other_dims,
            load_s,
        })
    }

    /// The dataset and workload inputs `run` runs on (its dimensionality's).
    pub fn data(&self, run: &RunConfig) -> Result<(&Dataset, &[Inputs])> {
        match run.dims {
            Some(d) if d != self.dataset.dims() => self
                .other_dims
                .iter()
                .find(|o| o.dims == d)
                .map(|o| (&o.dataset, o.inputs.as_slice()))
                .ok_or_else(|| {
                    Error::invalid(
                        format!("run '{}'", run.name),
                        format!("no dataset of {d} dimensions was prepared"),
                    )
                }),
            _ => Ok((&self.dataset, &self.inputs)),
        }
    }

    /// Runs `run` in scratch directory `dir`.
    pub fn run(
        &self,
        run: &RunConfig,
        dir: &Path,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<RunResult> {
        let (dataset, inputs) = self.data(run)?;
        runner::run(
            run,
            dataset,
            &self.spec.workloads,
            inputs,
            &self.spec.protocol,
            dir,
            progress,
        )
    }
}

/// Every workload's inputs on `dataset`.
fn workload_inputs(spec: &Spec, dataset: &Dataset) -> Result<Vec<Inputs>> {
    let ext = dataset
        .extent()
        .ok_or_else(|| Error::invalid("dataset", "holds no object"))?;
    spec.workloads
        .iter()
        .map(|w| workload::inputs(w, dataset, &ext))
        .collect()
}

/// The spec's dataset, in the spec's insertion order.
fn load_dataset(d: &DatasetSpec) -> Result<Dataset> {
    let mut dataset = load_stored(d)?;
    d.order().apply(&mut dataset)?;
    Ok(dataset)
}

fn load_stored(d: &DatasetSpec) -> Result<Dataset> {
    match d {
        DatasetSpec::Generate(g) => generate::generate(&g.options()?),
        DatasetSpec::File {
            path,
            skip_invalid,
            renumber,
            explode,
            ..
        } => {
            let opts = ReadOptions {
                policy: Policy {
                    skip_invalid: true,
                    polygons_only: false,
                },
                renumber: *renumber,
                explode: *explode,
                ..ReadOptions::default()
            };
            let loaded = data::read(path, &opts)?;
            if loaded.report.skipped_total() > 0 && !skip_invalid {
                return Err(Error::invalid(
                    format!("dataset {}", path.display()),
                    format!(
                        "{} records are invalid or unusable (set dataset.skip_invalid = true to leave them out, or repair the file with `spidx dataset import`):\n{}",
                        loaded.report.skipped_total(),
                        loaded.report
                    ),
                ));
            }
            if loaded.dataset.is_empty() {
                return Err(Error::invalid(
                    format!("dataset {}", path.display()),
                    "holds no usable object",
                ));
            }
            Ok(loaded.dataset)
        }
    }
}

/// The machine a run ran on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Host name.
    pub host: String,
    /// CPU model.
    pub cpu: String,
    /// Logical CPUs available.
    pub cpus: usize,
    /// Memory, GiB.
    pub mem_gib: f64,
    /// Kernel (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
}

impl Machine {
    /// Reads what Linux tells about this machine (fields are empty where it says nothing).
    pub fn detect() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        let mem_kb: f64 = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        Machine {
            host: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mem_gib: (mem_kb / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        }
    }
}
