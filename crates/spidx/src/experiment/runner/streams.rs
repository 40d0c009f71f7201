//! kNN workloads run as concurrent query streams (Emrich et al. 2010): every query runs
//! once on the index (or the scan) with its device requests recorded, then the requests
//! are replayed as N streams on a second instance of the device in the same state, once
//! per listed N (see [`crate::experiment::concurrent`]). Each N gives one result row.

use super::{scan_table, Progress, Work};
use crate::cache::CachePolicy;
use crate::data::Dataset;
use crate::device::tap::{Request, TapLog};
use crate::experiment::concurrent::{simulate, Latency, SimConfig, SimResult};
use crate::experiment::matrix::RunConfig;
use crate::experiment::protocol::{self, Metrics};
use crate::experiment::spec::Concurrency;
use crate::spatial::query::QueryReport;
use crate::spatial::HostProfile;
use crate::spatial::SpatialIndex;
use crate::store::StoreConfig;
use crate::{Error, Result};

/// The queries of a kNN workload.
pub(in crate::experiment) struct Queries<'a, const D: usize> {
    pub points: &'a [[f64; D]],
    pub k: usize,
    pub refine: bool,
}

/// One result row: the figures of one number of streams.
pub(in crate::experiment) struct Row {
    pub streams: usize,
    pub metrics: Metrics,
    pub details: serde_json::Value,
}

/// The recording run: per query its answer, its device requests and its device time.
pub(in crate::experiment) struct Recorded {
    pub reports: Vec<QueryReport>,
    pub traces: Vec<Vec<Request>>,
    pub device_ns: Vec<u64>,
}

/// Refuses what the replay cannot reproduce: a real device (no virtual clock; the index's
/// streams run as real threads there, see [`super::threads`], but the scan keeps its
/// records on a fresh simulated device), and what [`check_store`] refuses.
fn check_run(run: &RunConfig) -> Result<()> {
    let o = &run.options;
    if !o.device.is_simulated() {
        return Err(Error::invalid(
            "streams",
            format!(
                "the scan's concurrent streams are simulated on simulated devices only; {} is a real device (real threads run the index's streams there, not the scan's)",
                o.device_name
            ),
        ));
    }
    check_store(run)
}

/// Refuses a page buffer of the index (one buffer would be seen by every stream: the
/// recording run's in a replay, every handle's own with real threads) and a flash-aware
/// store (its buffers likewise).
pub(super) fn check_store(run: &RunConfig) -> Result<()> {
    let o = &run.options;
    let what = "streams";
    if o.buffer.policy != CachePolicy::None {
        return Err(Error::invalid(
            what,
            format!(
                "the index's page buffer ({}) would be one buffer seen by every stream; use buffer = \"none\" and the workload's shared memory budget (memory = ...)",
                o.buffer
            ),
        ));
    }
    if !matches!(o.store, StoreConfig::Direct { .. }) {
        return Err(Error::invalid(
            what,
            format!(
                "the {} store keeps its own buffers, which the replay cannot split by stream; use the direct store",
                o.store.label()
            ),
        ));
    }
    Ok(())
}

/// Concurrent streams over the index `idx` (created with `tap` on its device).
pub(in crate::experiment) fn index<const D: usize>(
    idx: &mut SpatialIndex<D>,
    tap: &TapLog,
    q: &Queries<D>,
    c: &Concurrency,
    run: &RunConfig,
    work: &mut Work,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<Row>, Recorded)> {
    check_run(run)?;
    // The state both the recording and the replays start from.
    work.time(|| {
        idx.write_back()?;
        idx.drop_caches()?;
        idx.flush()
    })?;
    let state = idx
        .device_state()
        .ok_or_else(|| Error::invalid("streams", "the device keeps no state to replay on"))?;
    let copy = state.with_file_name("replay.state");
    std::fs::copy(&state, &copy).map_err(|e| Error::io(&copy, e))?;
    let rec = work.time(|| {
        record(q.points.len(), tap, progress, |i| {
            let a = idx.device().device_ns();
            let rep = idx.nearest(q.points[i], q.k, q.refine)?;
            Ok((rep, idx.device().device_ns() - a))
        })
    })?;
    let o = &run.options;
    let rows = c
        .streams
        .iter()
        .map(|&n| {
            let sim = work.time(|| {
                let mut dev = o.device.open(o.page_size, Some(&copy))?;
                simulate(dev.as_mut(), &rec.traces, &config(n, c))
            })?;
            Ok(row(n, c, &rec, &sim))
        })
        .collect::<Result<Vec<_>>>();
    std::fs::remove_file(&copy).map_err(|e| Error::io(&copy, e))?;
    Ok((rows?, rec))
}

/// Concurrent streams over the scan baseline.
#[allow(clippy::too_many_arguments)]
pub(in crate::experiment) fn scan<const D: usize>(
    run: &RunConfig,
    ds: &Dataset,
    request: usize,
    host: &HostProfile,
    q: &Queries<D>,
    c: &Concurrency,
    work: &mut Work,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Vec<Row>, Recorded)> {
    check_run(run)?;
    let tap = TapLog::new();
    let mut table = work.time(|| scan_table::<D>(run, ds, request, host, Some(&tap)))?;
    let rec = work.time(|| {
        record(q.points.len(), &tap, progress, |i| {
            let a = table.device().device_ns();
            let rep = table.nearest(q.points[i], q.k)?;
            Ok((rep, table.device().device_ns() - a))
        })
    })?;
    let rows = c
        .streams
        .iter()
        .map(|&n| {
            // A second table written the same way is a device in the same state.
            let sim = work.time(|| {
                let mut dev = scan_table::<D>(run, ds, request, host, None)?.into_device();
                simulate(dev.as_mut(), &rec.traces, &config(n, c))
            })?;
            Ok(row(n, c, &rec, &sim))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((rows, rec))
}

/// Runs `n` queries once each, back to back, recording each one's device requests.
fn record(
    n: usize,
    tap: &TapLog,
    progress: &mut dyn FnMut(Progress),
    mut query: impl FnMut(usize) -> Result<(QueryReport, u64)>,
) -> Result<Recorded> {
    let mut rec = Recorded {
        reports: Vec::with_capacity(n),
        traces: Vec::with_capacity(n),
        device_ns: Vec::with_capacity(n),
    };
    tap.start();
    for i in 0..n {
        let (rep, ns) = query(i)?;
        rec.traces.push(tap.take());
        rec.reports.push(rep);
        rec.device_ns.push(ns);
        progress(Progress::Step(1));
    }
    tap.stop();
    Ok(rec)
}

fn config(streams: usize, c: &Concurrency) -> SimConfig {
    SimConfig {
        streams,
        instances: c.instances,
        memory_bytes: c.memory,
    }
}

/// The figures of one simulation. Settings (streams, instances, memory) go to the
/// details, measured values to the metrics.
fn row(n: usize, c: &Concurrency, rec: &Recorded, sim: &SimResult) -> Row {
    let mut m = Metrics::new();
    let device_ns: u64 = sim.latency_ns.iter().sum();
    let cpu_s: f64 = rec.reports.iter().map(|r| r.total().cpu_s).sum();
    // Modelled host time of the queries (each ran once, recorded); the replay's device time.
    let host_s: f64 = rec.reports.iter().map(|r| r.total().host_s).sum();
    m.insert("device_s".into(), device_ns as f64 * 1e-9);
    m.insert("cpu_s".into(), cpu_s);
    m.insert("host_s".into(), host_s);
    m.insert("elapsed_s".into(), host_s + device_ns as f64 * 1e-9);
    m.insert("device_ns".into(), device_ns as f64);
    m.insert(
        "sequential.device_ns".into(),
        rec.device_ns.iter().sum::<u64>() as f64,
    );
    m.extend(protocol::flatten("device", &sim.device));
    m.insert("memory.hits".into(), sim.cache_hits as f64);
    m.insert("memory.misses".into(), sim.cache_misses as f64);
    m.insert("gauges.max_outstanding".into(), sim.max_outstanding as f64);
    let timing = Timing {
        latency_ns: &sim.latency_ns,
        makespan_ns: sim.makespan_ns,
    };
    finish_row(n, c, &rec.reports, &timing, m, serde_json::json!({}))
}

/// Every query's latency and the time from the first query's start to the last one's end,
/// in ns (virtual in a replay, wall time with real threads).
pub(super) struct Timing<'a> {
    pub latency_ns: &'a [u64],
    pub makespan_ns: u64,
}

/// Completes the metrics `m` of one number of streams with what every stream row has
/// (queries, latency statistics, makespan and throughput, candidates, results) and makes
/// the row: settings (streams, instances, memory, and `extra`) in the details.
pub(super) fn finish_row(
    n: usize,
    c: &Concurrency,
    reports: &[QueryReport],
    t: &Timing,
    mut m: Metrics,
    extra: serde_json::Value,
) -> Row {
    let queries = reports.len();
    m.insert("queries".into(), queries as f64);
    m.insert("settings.repetitions".into(), 1.0);
    m.extend(protocol::flatten(
        "gauges.latency",
        &Latency::of(t.latency_ns),
    ));
    m.insert("makespan_s".into(), t.makespan_ns as f64 * 1e-9);
    if t.makespan_ns > 0 {
        m.insert(
            "gauges.throughput_qps".into(),
            queries as f64 / (t.makespan_ns as f64 * 1e-9),
        );
    }
    m.insert(
        "candidates".into(),
        reports.iter().map(|r| r.candidates as f64).sum(),
    );
    m.insert(
        "results".into(),
        reports.iter().map(|r| r.results as f64).sum(),
    );
    protocol::finish(&mut m);
    let mut concurrency = serde_json::json!({
        "streams": n,
        "instances": c.instances.name(),
        "memory": c.memory,
    });
    if let (Some(o), Some(x)) = (concurrency.as_object_mut(), extra.as_object()) {
        o.extend(x.clone());
    }
    Row {
        streams: n,
        metrics: m,
        details: serde_json::json!({ "concurrency": concurrency }),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::path::Path;

    use super::super::{RunResult, Work};
    use super::*;
    use crate::device::tap::Tap;
    use crate::experiment::concurrent::Instances;
    use crate::experiment::Experiment;

    pub(in crate::experiment::runner) const SPEC: &str = r#"
name = "streams"
[dataset]
generate = { distribution = "uniform", count = 4000, dims = 4, vectors = true, seed = 5 }
[matrix]
index = [{ kind = "rstar" }]
page_size = ["2KB"]
device = ["DEVICE"]
[[workload]]
kind = "construction"
"#;

    pub(in crate::experiment::runner) fn prepare(device: &str, dir: &Path) -> Experiment {
        let path = dir.join("spec.toml");
        std::fs::write(&path, SPEC.replace("DEVICE", device)).unwrap();
        Experiment::prepare(&path).unwrap()
    }

    /// Writes `spec` into `dir`, prepares it and runs its first run.
    pub(in crate::experiment::runner) fn run_first(dir: &Path, spec: &str) -> RunResult {
        let path = dir.join("spec.toml");
        std::fs::write(&path, spec).unwrap();
        let exp = Experiment::prepare(&path).unwrap();
        exp.run(&exp.runs[0], &dir.join("run"), &mut |_| {})
            .unwrap()
    }

    /// The ids of the `k` objects nearest to `p`, ties by distance then id.
    pub(in crate::experiment::runner) fn brute(ds: &Dataset, p: &[f64; 4], k: usize) -> Vec<u64> {
        let mut all: Vec<(f64, u64)> = (0..ds.len())
            .map(|i| {
                let (id, r) = ds.object::<4>(i).unwrap();
                (r.min_dist2(p).sqrt(), id)
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        all.into_iter().take(k).map(|x| x.1).collect()
    }

    pub(in crate::experiment::runner) fn points(n: usize) -> Vec<[f64; 4]> {
        (0..n)
            .map(|i| {
                let f = i as f64 / n as f64;
                [f, 1.0 - f, (f * 7.0).fract(), (f * 13.0).fract()]
            })
            .collect()
    }

    /// Index and scan, on the disk and the SSD: one stream reproduces the recording run's
    /// device time and reads exactly; every query's answer equals brute force; more
    /// streams wait longer per query.
    #[test]
    fn one_stream_is_the_sequential_run_and_answers_equal_brute_force() {
        for (device, instances) in [
            ("hdd-wd2500aajs", Instances::Own),
            ("ssd-v300", Instances::Shared),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let exp = prepare(device, tmp.path());
            let run = &exp.runs[0];
            let ds = &exp.dataset;
            let dir = tmp.path().join("idx");
            let tap = TapLog::new();
            let mut idx =
                SpatialIndex::<4>::create_wrapped(&dir, run.options.clone(), false, |d| {
                    Box::new(Tap::new(d, tap.clone()))
                })
                .unwrap();
            for i in 0..ds.len() {
                let (id, r) = ds.object(i).unwrap();
                idx.insert(r, id).unwrap();
            }
            let ps = points(40);
            let q = Queries {
                points: &ps,
                k: 7,
                refine: false,
            };
            let c = Concurrency {
                streams: vec![1, 8],
                instances,
                memory: 0,
            };
            let mut work = Work { index_s: 0.0 };
            let (rows, rec) = index(&mut idx, &tap, &q, &c, run, &mut work, &mut |_| {}).unwrap();
            let (srows, srec) = scan(
                run,
                ds,
                64 << 10,
                &HostProfile::default(),
                &q,
                &c,
                &mut work,
                &mut |_| {},
            )
            .unwrap();
            for (i, p) in ps.iter().enumerate() {
                let want = brute(ds, p, 7);
                assert_eq!(rec.reports[i].ids, want, "{device} index query {i}");
                assert_eq!(srec.reports[i].ids, want, "{device} scan query {i}");
            }
            for (rows, rec) in [(&rows, &rec), (&srows, &srec)] {
                let one = &rows[0].metrics;
                assert_eq!(one["device_ns"], one["sequential.device_ns"], "{device}");
                assert!(one["device_ns"] > 0.0);
                let reads: u64 = rec
                    .reports
                    .iter()
                    .map(|r| r.filter.device.host.read_ops)
                    .sum();
                assert_eq!(one["device.host.read_ops"], reads as f64, "{device}");
                let eight = &rows[1].metrics;
                assert_eq!(eight["device.host.read_ops"], reads as f64, "{device}");
                assert!(
                    eight["gauges.latency.mean_s"] > one["gauges.latency.mean_s"],
                    "{device}"
                );
                assert!(eight["gauges.latency.p99_s"] >= eight["gauges.latency.p50_s"]);
            }
        }
    }

    #[test]
    fn real_devices_buffers_and_flash_stores_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let exp = prepare("hdd-7200", tmp.path());
        let mut run = exp.runs[0].clone();
        run.options.buffer = "lru:64KB".parse().unwrap();
        let e = check_run(&run).unwrap_err().to_string();
        assert!(e.contains("memory = ..."), "{e}");
        let mut file = exp.runs[0].clone();
        file.options.device = crate::device::DeviceConfig::File(
            crate::device::file::FileConfig::new(tmp.path().join("dev")),
        );
        let e = check_run(&file).unwrap_err().to_string();
        assert!(e.contains("not the scan's"), "{e}");
        let mut fast = exp.runs[0].clone();
        fast.options.store = serde_json::from_value(serde_json::json!({
            "kind": "fast", "write_buffer": 524288, "flushing_unit": 2, "flush_policy": "flush-all"
        }))
        .unwrap();
        let e = check_run(&fast).unwrap_err().to_string();
        assert!(e.contains("use the direct store"), "{e}");
    }

    /// A whole run through the runner: a classic index kNN, the scan under the classic
    /// protocol, and both as streams, with the rows named by N.
    #[test]
    fn a_run_gives_one_row_per_number_of_streams() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = SPEC.replace("DEVICE", "hdd-wd2500aajs")
            + r#"
[[workload]]
kind = "knn"
k = 5
queries = 12
[[workload]]
kind = "knn"
k = 5
queries = 12
access = "scan"
request = "16KB"
[[workload]]
kind = "knn"
name = "load"
k = 5
queries = 12
streams = [1, 3]
memory = "64KB"
[[workload]]
kind = "knn"
name = "scan load"
k = 5
queries = 12
streams = [1, 3]
access = "scan"
"#;
        let r = run_first(tmp.path(), &spec);
        let names: Vec<&str> = r.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "construction",
                "knn k=5",
                "scan k=5",
                "load streams=1",
                "load streams=3",
                "scan load streams=1",
                "scan load streams=3"
            ]
        );
        let (knn, scan) = (&r.workloads[1], &r.workloads[2]);
        // Same answers: as many results; the scan reads every record of every query.
        assert_eq!(knn.get("results"), scan.get("results"));
        assert_eq!(scan.get("candidates"), 12.0 * 4000.0);
        assert!(scan.get("device.host.read_ops") > 0.0);
        for w in &r.workloads[3..] {
            assert!(
                w.get("gauges.latency.p95_s") >= w.get("gauges.latency.p50_s"),
                "{}",
                w.name
            );
            assert_eq!(w.get("queries"), 12.0);
            assert_eq!(
                w.details["concurrency"]["streams"],
                if w.name.ends_with('1') { 1 } else { 3 }
            );
        }
        // With the memory budget the upper levels are hit; every miss is one device read.
        let one = &r.workloads[3];
        assert!(one.get("memory.hits") > 0.0);
        assert_eq!(one.get("device.host.read_ops"), one.get("memory.misses"));
        // Without it, one stream is the recording run.
        let scan_one = &r.workloads[5];
        assert_eq!(
            scan_one.get("device_ns"),
            scan_one.get("sequential.device_ns")
        );
        assert_eq!(scan_one.get("memory.hits"), 0.0);
    }

    const BUILDINGS: &str = r#"
name = "streams-buildings"
[dataset]
generate = { distribution = "buildings", count = 3000, seed = 11 }
[matrix]
index = [{ kind = "rstar" }]
page_size = ["4KB"]
device = ["DEVICE"]
[[workload]]
kind = "construction"
"#;

    /// Own index copies with polygon data (index nodes and object records far apart on the
    /// device) fit the disk: each copy's partition holds only the pages its queries touch.
    /// Answers equal a brute-force kNN over the exact geometries; one stream is the
    /// recording run exactly; every number of streams reads the same pages.
    #[test]
    fn own_copies_of_polygon_data_fit_and_answer_exactly() {
        use geo::{Distance, Euclidean, Geometry, Point};
        for device in ["hdd-7200", "ssd-v300"] {
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("spec.toml");
            std::fs::write(&path, BUILDINGS.replace("DEVICE", device)).unwrap();
            let exp = Experiment::prepare(&path).unwrap();
            let run = &exp.runs[0];
            let recs = exp.dataset.as_geo().expect("polygons");
            let tap = TapLog::new();
            let mut idx = SpatialIndex::<2>::create_wrapped(
                &tmp.path().join("idx"),
                run.options.clone(),
                true,
                |d| Box::new(Tap::new(d, tap.clone())),
            )
            .unwrap();
            for r in recs {
                idx.put_object(r.id, &r.geometry).unwrap();
            }
            for i in 0..recs.len() {
                let (id, r) = exp.dataset.object(i).unwrap();
                idx.insert(r, id).unwrap();
            }
            let ext = recs
                .iter()
                .fold([f64::MAX, f64::MAX, f64::MIN, f64::MIN], |e, r| {
                    [
                        e[0].min(r.bbox.min().x),
                        e[1].min(r.bbox.min().y),
                        e[2].max(r.bbox.max().x),
                        e[3].max(r.bbox.max().y),
                    ]
                });
            let ps: Vec<[f64; 2]> = (0..30)
                .map(|i| {
                    let f = (i as f64 + 0.5) / 30.0;
                    [
                        ext[0] + f * (ext[2] - ext[0]),
                        ext[1] + (f * 7.0).fract() * (ext[3] - ext[1]),
                    ]
                })
                .collect();
            let k = 6;
            let q = Queries {
                points: &ps,
                k,
                refine: true,
            };
            let c = Concurrency {
                streams: vec![1, 4, 16],
                instances: Instances::Own,
                memory: 0,
            };
            let mut work = Work { index_s: 0.0 };
            let (rows, rec) = index(&mut idx, &tap, &q, &c, run, &mut work, &mut |_| {})
                .unwrap_or_else(|e| panic!("{device}: {e}"));
            // The object records lie far up the device: 16 copies spaced by the highest
            // touched page (the layout that overflowed) would not fit.
            let top = rec.traces.iter().flatten().map(|r| r.page + r.pages).max();
            assert!(
                top.unwrap() * 16 > idx.device().capacity_pages(),
                "{device}"
            );
            for (i, p) in ps.iter().enumerate() {
                let qp = Geometry::Point(Point::new(p[0], p[1]));
                let mut all: Vec<(f64, u64)> = recs
                    .iter()
                    .map(|r| (Euclidean.distance(&qp, &r.geometry), r.id))
                    .collect();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let want: Vec<u64> = all.iter().take(k).map(|x| x.1).collect();
                assert_eq!(rec.reports[i].ids, want, "{device} query {i}");
            }
            let reads: u64 = rec
                .reports
                .iter()
                .map(|r| r.filter.device.host.read_ops + r.refinement.device.host.read_ops)
                .sum();
            assert!(reads > 0);
            let one = &rows[0].metrics;
            assert_eq!(one["device_ns"], one["sequential.device_ns"], "{device}");
            assert_eq!(
                one["device_ns"],
                rec.device_ns.iter().sum::<u64>() as f64,
                "{device}"
            );
            for row in &rows {
                assert_eq!(
                    row.metrics["device.host.read_ops"], reads as f64,
                    "{device}"
                );
                assert_eq!(row.metrics["queries"], 30.0);
            }
            assert!(
                rows[2].metrics["gauges.latency.mean_s"] > one["gauges.latency.mean_s"],
                "{device}"
            );
        }
    }
}
