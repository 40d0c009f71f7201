//! Running one run of an experiment on the index layer: create the index in a scratch
//! directory, run the workloads in order on it (construction first, then queries or
//! update streams, as in the seeds), measure every phase through [`SpatialIndex::phase`]
//! and the protocol of [`super::protocol`], and return the figures of every layer.
//!
//! The runner also accounts its own cost: `index_s` is the wall time spent inside index
//! and device calls; everything else a run takes (generating nothing — inputs are
//! prepared once per experiment — but flattening reports, progress, bookkeeping) is the
//! runner's overhead, recorded with the run.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::matrix::RunConfig;
use super::protocol::{self, AllGauges, Metrics, Repeated, Spread};
use super::scan::ScanTable;
use super::spec::{Protocol, Workload};
use super::workload::{Inputs, MixedOp, QueryInput};
use crate::data::Dataset;
use crate::device::tap::{Tap, TapLog};
use crate::device::Device;
use crate::geom::Rect;
use crate::index::bulk::BulkOptions;
use crate::index::{Tree, TreeStats};
use crate::node::Capacity;
use crate::spatial::construct::{Construction, Step};
use crate::spatial::query::QueryReport;
use crate::spatial::{HostProfile, SpatialIndex};
use crate::store::AnyStore;
use crate::{with_dims, Error, Result};

mod streams;
mod threads;
use streams::Queries;

/// What a run reports as it goes.
pub enum Progress<'a> {
    /// A workload starts with this many steps.
    Workload {
        /// Its name.
        name: &'a str,
        /// Objects, queries or operations.
        steps: u64,
    },
    /// Steps done since the last report.
    Step(u64),
}

/// The figures of one workload of a run.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadResult {
    /// The workload's name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Every statistic, flattened (see [`protocol::flatten`]).
    pub metrics: Metrics,
    /// Details that are not numbers (the tree check's report, the workload's spec).
    pub details: serde_json::Value,
}

impl WorkloadResult {
    /// A metric, 0 when absent.
    pub fn get(&self, name: &str) -> f64 {
        self.metrics.get(name).copied().unwrap_or(0.0)
    }
}

/// The figures of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// Per workload, in order.
    pub workloads: Vec<WorkloadResult>,
    /// Wall time of the whole run.
    pub wall_s: f64,
    /// Wall time inside index and device calls.
    pub index_s: f64,
}

/// Wall-time accounting of index work.
struct Work {
    index_s: f64,
}

impl Work {
    fn time<T>(&mut self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let t = Instant::now();
        let r = f();
        self.index_s += t.elapsed().as_secs_f64();
        r
    }
}

/// Runs `run` over `ds` with the workloads' `inputs`, in scratch directory `dir` (created,
/// and removed at the end).
pub(crate) fn run(
    run: &RunConfig,
    ds: &Dataset,
    workloads: &[Workload],
    inputs: &[Inputs],
    protocol: &Protocol,
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunResult> {
    let t0 = Instant::now();
    let mut work = Work { index_s: 0.0 };
    let out = with_dims!(ds.dims(), D => run_dims::<D>(run, ds, workloads, inputs, protocol, dir, &mut work, progress));
    let cleanup = std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e));
    let workloads = out?;
    cleanup?;
    Ok(RunResult {
        workloads,
        wall_s: t0.elapsed().as_secs_f64(),
        index_s: work.index_s,
    })
}

fn rect<const D: usize>(min: &[f64], max: &[f64]) -> Result<Rect<D>> {
    let mut r = Rect {
        min: [0.0; D],
        max: [0.0; D],
    };
    r.min.copy_from_slice(&min[..D]);
    r.max.copy_from_slice(&max[..D]);
    r.validate()?;
    Ok(r)
}

#[allow(clippy::too_many_arguments)]
fn run_dims<const D: usize>(
    run: &RunConfig,
    ds: &Dataset,
    workloads: &[Workload],
    inputs: &[Inputs],
    protocol: &Protocol,
    dir: &Path,
    work: &mut Work,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<WorkloadResult>> {
    let geo = ds.as_geo();
    // The tap records the device requests of queries replayed as concurrent streams; it
    // records nothing otherwise and changes no count or time.
    let tap = TapLog::new();
    let wrap = |d: Box<dyn Device>| -> Box<dyn Device> { Box::new(Tap::new(d, tap.clone())) };
    let mut idx = SpatialIndex::<D>::create_wrapped(dir, run.options.clone(), geo.is_some(), wrap)?;
    let host = protocol.host.profile()?;
    idx.set_host_profile(host.clone())?;
    let mut results = Vec::new();
    for (w, inp) in workloads.iter().zip(inputs) {
        progress(Progress::Workload {
            name: w.name(),
            steps: inp.steps(ds.len()),
        });
        let (metrics, details) = match inp {
            Inputs::Construction(bulk) => construct(
                &mut idx,
                ds,
                bulk.as_ref(),
                w.final_flush(),
                protocol,
                work,
                progress,
            )?,
            Inputs::Select {
                queries,
                predicate,
                refine,
            } => {
                let qs = queries
                    .iter()
                    .map(|q| Ok((rect::<D>(&q.min, &q.max)?, q.geometry.clone())))
                    .collect::<Result<Vec<_>>>()?;
                let m = measure(&mut idx, protocol, work, progress, qs.len(), |idx, i| {
                    idx.select(&qs[i].0, qs[i].1.as_ref(), *predicate, *refine)
                })?;
                (m, serde_json::json!({}))
            }
            Inputs::Knn {
                points,
                k,
                refine,
                scan,
                concurrency,
            } => {
                let ps = points
                    .iter()
                    .map(|p| <[f64; D]>::try_from(&p[..D]).expect("D coordinates"))
                    .collect::<Vec<_>>();
                if let Some(c) = concurrency {
                    let q = Queries {
                        points: &ps,
                        k: *k,
                        refine: *refine,
                    };
                    let rows = match scan {
                        None if !run.options.device.is_simulated() => {
                            let (next, measured) =
                                threads::index(idx, dir, &q, c, run, work, progress)?;
                            idx = next;
                            measured.into_iter().map(|m| m.row).collect()
                        }
                        None => streams::index(&mut idx, &tap, &q, c, run, work, progress)?.0,
                        Some(req) => streams::scan(run, ds, *req, &host, &q, c, work, progress)?.0,
                    };
                    for row in rows {
                        let mut details = row.details;
                        details["workload"] = serde_json::to_value(w).unwrap_or_default();
                        results.push(WorkloadResult {
                            name: format!("{} streams={}", w.name(), row.streams),
                            kind: w.kind().to_string(),
                            metrics: row.metrics,
                            details,
                        });
                    }
                    continue;
                }
                let m = match scan {
                    None => measure(&mut idx, protocol, work, progress, ps.len(), |idx, i| {
                        idx.nearest(ps[i], *k, *refine)
                    })?,
                    Some(req) => {
                        let mut table =
                            work.time(|| scan_table::<D>(run, ds, *req, &host, None))?;
                        measure(&mut table, protocol, work, progress, ps.len(), |t, i| {
                            t.nearest(ps[i], *k)
                        })?
                    }
                };
                (m, serde_json::json!({}))
            }
            Inputs::Mixed(ops) => (mixed(&mut idx, ops, work, progress)?, serde_json::json!({})),
        };
        let mut details = details;
        details["workload"] = serde_json::to_value(w).unwrap_or_default();
        results.push(WorkloadResult {
            name: w.name().to_string(),
            kind: w.kind().to_string(),
            metrics,
            details,
        });
    }
    Ok(results)
}

/// One-by-one insertion or a bulk load (objects first go to the object store, measured
/// apart as `load`), then the store's final write-back (`final_flush`, unless the spec
/// leaves the buffers dirty for the next workload), then the optional check (for a bulk
/// load also of the fill it promises).
fn construct<const D: usize>(
    idx: &mut SpatialIndex<D>,
    ds: &Dataset,
    bulk: Option<&BulkOptions>,
    final_flush: bool,
    protocol: &Protocol,
    work: &mut Work,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Metrics, serde_json::Value)> {
    let mut m = Metrics::new();
    let step = (ds.len() / 200).max(1) as u64;
    let how = Construction { bulk, final_flush };
    let report = work.time(|| {
        idx.construct(ds, how, &mut |_, s| {
            match s {
                Step::Inserted(n) if n % step == 0 => progress(Progress::Step(step)),
                Step::BulkLoaded(n) => progress(Progress::Step(n)),
                _ => {}
            }
            Ok(())
        })
    })?;
    if bulk.is_none() {
        progress(Progress::Step(ds.len() as u64 % step));
    }
    if let Some(load) = &report.load {
        m.extend(protocol::flatten("load", load));
    }
    m.extend(protocol::flatten("", &report.construction));
    if let Some(flush) = &report.final_flush {
        m.extend(protocol::flatten("final_flush", flush));
    }
    m.extend(protocol::flatten("tree", &TreeReport::of(idx.tree())));
    m.extend(protocol::flatten("store", &idx.tree().store().report()));
    m.insert("objects".into(), ds.len() as f64);
    let mut details = serde_json::json!({});
    if protocol.check {
        let rep = work.time(|| match bulk {
            Some(opts) => idx.tree_mut().check_bulk(opts),
            None => idx.tree_mut().check(),
        })?;
        m.insert("shape.gauges.ok".into(), if rep.ok() { 1.0 } else { 0.0 });
        m.extend(protocol::flatten("shape", &AllGauges { gauges: &rep }));
        if !rep.ok() {
            return Err(Error::corrupted(
                "index after construction",
                rep.violations.join("; "),
            ));
        }
        details["shape"] = serde_json::to_value(&rep).unwrap_or_default();
    }
    protocol::finish(&mut m);
    Ok((m, details))
}

/// The metrics of one query execution.
fn query_metrics(rep: &QueryReport) -> Metrics {
    let total = {
        let mut t = rep.filter.clone();
        t.add(&rep.refinement);
        t
    };
    let mut m = Metrics::from([
        ("elapsed_s".to_string(), total.elapsed_s),
        ("cpu_s".to_string(), total.cpu_s),
        ("device_s".to_string(), total.device_s),
        ("host_s".to_string(), total.host_s),
        ("candidates".to_string(), rep.candidates as f64),
        ("results".to_string(), rep.results as f64),
    ]);
    m.extend(protocol::flatten("filter", &rep.filter));
    m.extend(protocol::flatten("refinement", &rep.refinement));
    m.extend(protocol::flatten(
        "node_reads_per_level",
        &rep.node_reads_per_level,
    ));
    m
}

/// What [`measure`] measures: an index or the scan baseline.
trait Measured {
    /// Empties page buffers and device caches.
    fn drop_caches(&mut self) -> Result<()>;
    /// The node store's counters (none for a scan).
    fn store_report(&self) -> Metrics;
}

impl<const D: usize> Measured for SpatialIndex<D> {
    fn drop_caches(&mut self) -> Result<()> {
        SpatialIndex::drop_caches(self)
    }
    fn store_report(&self) -> Metrics {
        protocol::flatten("store", &self.tree().store().report())
    }
}

impl<const D: usize> Measured for ScanTable<D> {
    fn drop_caches(&mut self) -> Result<()> {
        ScanTable::drop_caches(self)
    }
    fn store_report(&self) -> Metrics {
        Metrics::new()
    }
}

/// The scan baseline's table on a fresh device of the run's model and page size (through
/// `tap` when given, to record its requests).
fn scan_table<const D: usize>(
    run: &RunConfig,
    ds: &Dataset,
    request: usize,
    host: &HostProfile,
    tap: Option<&TapLog>,
) -> Result<ScanTable<D>> {
    let o = &run.options;
    if !o.device.is_simulated() {
        return Err(Error::invalid(
            "access = \"scan\"",
            format!(
                "the scan keeps its records on a fresh device of the run's model; {} is a real device, whose file holds the index",
                run.options.device_name
            ),
        ));
    }
    let mut dev = o.device.open(o.page_size, None)?;
    if let Some(t) = tap {
        dev = Box::new(Tap::new(dev, t.clone()));
    }
    ScanTable::create(dev, ds, request, Some(host.clone()))
}

/// The protocol over `n` queries: per query, `warmup` unmeasured runs, then
/// `repetitions` measured ones, each after dropping caches; reported as the sum over
/// queries of each query's mean, with the spread of the per-query mean elapsed times and
/// the spread over repetitions of the workload's total ([`Repeated`]).
fn measure<T: Measured>(
    idx: &mut T,
    protocol: &Protocol,
    work: &mut Work,
    progress: &mut dyn FnMut(Progress),
    n: usize,
    mut query: impl FnMut(&mut T, usize) -> Result<QueryReport>,
) -> Result<Metrics> {
    let mut total = Metrics::new();
    let mut means = Vec::with_capacity(n);
    let mut device_means = Vec::with_capacity(n);
    // Repetition r's total over all queries.
    let mut rep_totals = vec![0.0; protocol.repetitions as usize];
    for i in 0..n {
        for _ in 0..protocol.warmup {
            work.time(|| query(idx, i))?;
        }
        let mut reps = Vec::with_capacity(protocol.repetitions as usize);
        // The store's counters are read around all repetitions (dropping caches does not
        // count as store work) and averaged: one report per query, not two per repetition.
        let before = idx.store_report();
        for _ in 0..protocol.repetitions {
            if protocol.drop_caches {
                work.time(|| idx.drop_caches())?;
            }
            let rep = work.time(|| query(idx, i))?;
            reps.push(query_metrics(&rep));
        }
        let after = idx.store_report();
        for (total, rep) in rep_totals.iter_mut().zip(&reps) {
            *total += rep.get("elapsed_s").copied().unwrap_or(0.0);
        }
        let mut mean = protocol::mean(&reps);
        // The device counters of both phases together, from the phases' own (once per query).
        let both: Vec<Metrics> = ["filter.device.", "refinement.device."]
            .iter()
            .map(|p| {
                mean.iter()
                    .filter_map(|(k, v)| k.strip_prefix(p).map(|r| (format!("device.{r}"), *v)))
                    .collect()
            })
            .collect();
        for d in &both {
            protocol::accumulate(&mut mean, d);
        }
        mean.extend(protocol::delta(
            &before,
            &after,
            protocol.repetitions as f64,
        ));
        means.push(mean.get("elapsed_s").copied().unwrap_or(0.0));
        device_means.push(mean.get("device_s").copied().unwrap_or(0.0));
        protocol::accumulate(&mut total, &mean);
        progress(Progress::Step(1));
    }
    protocol::finish(&mut total);
    let spread = Spread::of(&means);
    total.insert("queries".into(), n as f64);
    total.insert("settings.repetitions".into(), protocol.repetitions as f64);
    total.insert("gauges.elapsed_s_min".into(), spread.min);
    total.insert("gauges.elapsed_s_median".into(), spread.median);
    total.insert("gauges.elapsed_s_max".into(), spread.max);
    let d = Spread::of(&device_means);
    total.insert("gauges.device_s_min".into(), d.min);
    total.insert("gauges.device_s_median".into(), d.median);
    total.insert("gauges.device_s_max".into(), d.max);
    if n > 0 {
        if let Some(r) = Repeated::of(&rep_totals) {
            total.extend(r.metrics("elapsed_s"));
        }
    }
    Ok(total)
}

/// A mixed stream: each operation measured, totals per operation kind and overall.
fn mixed<const D: usize>(
    idx: &mut SpatialIndex<D>,
    ops: &[MixedOp],
    work: &mut Work,
    progress: &mut dyn FnMut(Progress),
) -> Result<Metrics> {
    let boxed = |q: &QueryInput| rect::<D>(&q.min, &q.max);
    let mut total = Metrics::new();
    let mut missing = 0u64;
    let store_before = protocol::flatten("store", &idx.tree().store().report());
    let step = (ops.len() / 200).max(1);
    for (i, op) in ops.iter().enumerate() {
        let (kind, m) = match op {
            MixedOp::Insert { id, mbr } => {
                let r = boxed(mbr)?;
                let p = work.time(|| {
                    let clock = idx.phase();
                    if let Some(g) = &mbr.geometry {
                        if idx.objects().is_some() {
                            idx.put_object(*id, g)?;
                        }
                    }
                    idx.insert(r, *id)?;
                    Ok(idx.stop_phase(clock))
                })?;
                ("insert", protocol::flatten("", &p))
            }
            MixedOp::Delete { id, mbr } => {
                let r = boxed(mbr)?;
                let (p, found) = work.time(|| {
                    let clock = idx.phase();
                    let found = idx.delete(&r, *id)?;
                    Ok((idx.stop_phase(clock), found))
                })?;
                missing += u64::from(!found);
                ("delete", protocol::flatten("", &p))
            }
            MixedOp::Update { id, old, new } => {
                let (o, n) = (boxed(old)?, boxed(new)?);
                let (p, found) = work.time(|| {
                    let clock = idx.phase();
                    let found = idx.update(&o, n, *id, new.geometry.as_ref())?;
                    Ok((idx.stop_phase(clock), found))
                })?;
                missing += u64::from(!found);
                ("update", protocol::flatten("", &p))
            }
            MixedOp::Query(q) => {
                let r = boxed(q)?;
                let rep =
                    work.time(|| idx.select(&r, None, crate::query::Predicate::Intersects, true))?;
                let mut m = protocol::flatten("", &rep.filter);
                protocol::accumulate(&mut m, &protocol::flatten("", &rep.refinement));
                m.insert("results".into(), rep.results as f64);
                ("query", m)
            }
        };
        let mut m = m;
        let per_kind: Metrics = m.iter().map(|(k, v)| (format!("{kind}.{k}"), *v)).collect();
        m.extend(per_kind);
        m.insert(format!("{kind}.count"), 1.0);
        protocol::accumulate(&mut total, &m);
        if (i + 1) % step == 0 {
            progress(Progress::Step(step as u64));
        }
    }
    progress(Progress::Step((ops.len() % step) as u64));
    if missing > 0 {
        return Err(Error::corrupted(
            "mixed workload",
            format!("{missing} deletes or updates did not find their object in the index"),
        ));
    }
    let flush = work.time(|| {
        let clock = idx.phase();
        idx.write_back()?;
        Ok(idx.stop_phase(clock))
    })?;
    total.extend(protocol::flatten("final_flush", &flush));
    let store_after = protocol::flatten("store", &idx.tree().store().report());
    total.extend(protocol::delta(&store_before, &store_after, 1.0));
    total.insert("operations".into(), ops.len() as f64);
    protocol::finish(&mut total);
    Ok(total)
}

/// The tree's figures after construction, as the runner records them under `tree.`: the
/// tree's counters ([`TreeStats`], since the index was created), its size now (gauges)
/// and its node capacities (settings).
#[derive(Serialize)]
struct TreeReport<'a> {
    #[serde(flatten)]
    counters: &'a TreeStats,
    gauges: TreeGauges,
    settings: &'a Capacity,
}

/// The tree's size now.
#[derive(Serialize)]
struct TreeGauges {
    /// Levels.
    height: u32,
    /// Objects indexed.
    objects: u64,
}

impl<'a> TreeReport<'a> {
    fn of<const D: usize>(tree: &'a Tree<AnyStore, D>) -> Self {
        let meta = tree.meta();
        TreeReport {
            counters: tree.stats(),
            gauges: TreeGauges {
                height: meta.height,
                objects: meta.objects,
            },
            settings: tree.capacity(),
        }
    }
}
