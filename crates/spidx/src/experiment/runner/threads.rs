//! kNN workloads run as concurrent query streams of real OS threads on a real (`file:`)
//! device, measured with the wall clock (Emrich et al. 2010 ran one thread per stream).
//!
//! "One index handle each": after construction the runner's own handle is closed; every
//! stream then opens the index read-only, with its own file descriptor on the device file,
//! its own node store and object store, and runs its queries on its own thread (query `i`
//! belongs to stream `i mod N`, as in the simulation), all threads released together. The
//! handles read one file: the streams share one index (`instances = "shared"`); own copies
//! per stream would need one device file per stream and are refused. The memory budget
//! (`memory = ...`) is one page cache shared by the handles ([`super::super::budget`]);
//! before each number of streams the OS cache of the file is dropped. Afterwards the index
//! is reopened for writing for the workloads that follow.
//!
//! Each query's latency is the wall time of its `nearest` call on its thread (CPU, device
//! and waiting for the other threads alike); throughput is queries / the wall time from the
//! first query's start to the last one's end; the device counters are the sum of every
//! handle's. CPU time is the process's over the whole concurrent phase.

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use super::streams::{check_store, finish_row, Queries, Row, Timing};
use super::{Progress, Work};
use crate::clock::process_cpu_ns;
use crate::experiment::budget::Budget;
use crate::experiment::concurrent::Instances;
use crate::experiment::matrix::RunConfig;
use crate::experiment::protocol::{self, Metrics};
use crate::experiment::spec::Concurrency;
use crate::spatial::query::QueryReport;
use crate::spatial::{OpenMode, SpatialIndex};
use crate::{Error, Result};

/// Refuses what real threads on one index file cannot do.
fn check_run(run: &RunConfig, c: &Concurrency) -> Result<()> {
    check_store(run)?;
    if c.instances == Instances::Own {
        return Err(Error::invalid(
            "streams",
            format!(
                "own index copies on a real device would need one copy of the device file per stream; on {} every stream opens the one index read-only with its own handle: use instances = \"shared\"",
                run.options.device_name
            ),
        ));
    }
    Ok(())
}

/// What one number of streams measured: its row and every query's answer, in query order.
pub(in crate::experiment) struct Measured {
    pub row: Row,
    /// Read by the tests (the runner keeps the row only).
    #[cfg_attr(not(test), allow(dead_code))]
    pub reports: Vec<QueryReport>,
}

/// Concurrent streams over the index built in `dir` (`idx`, closed here and reopened for
/// writing when done): one result row per listed number of streams.
pub(in crate::experiment) fn index<const D: usize>(
    mut idx: SpatialIndex<D>,
    dir: &Path,
    q: &Queries<D>,
    c: &Concurrency,
    run: &RunConfig,
    work: &mut Work,
    progress: &mut dyn FnMut(Progress),
) -> Result<(SpatialIndex<D>, Vec<Measured>)> {
    check_run(run, c)?;
    work.time(|| {
        idx.write_back()?;
        idx.flush()
    })?;
    drop(idx);
    let mut out = Vec::with_capacity(c.streams.len());
    for (i, &n) in c.streams.iter().enumerate() {
        out.push(work.time(|| streams(dir, q, c, n))?);
        if i == 0 {
            progress(Progress::Step(q.points.len() as u64));
        }
    }
    let idx = work.time(|| SpatialIndex::open(dir))?;
    Ok((idx, out))
}

/// What one thread did: per query (its number, answer, wall latency in ns), and when the
/// thread's first query started and its last ended.
struct Stream {
    done: Vec<(usize, QueryReport, u64)>,
    span: Option<(Instant, Instant)>,
}

/// `n` threads, each with its own read-only handle, over the queries.
fn streams<const D: usize>(
    dir: &Path,
    q: &Queries<D>,
    c: &Concurrency,
    n: usize,
) -> Result<Measured> {
    let page_size = crate::spatial::read_manifest(dir)?.options.page_size;
    let budget = match c.memory {
        0 => None,
        b => Some(Budget::new(b, page_size)?),
    };
    let mut handles = (0..n)
        .map(|_| {
            SpatialIndex::<D>::open_wrapped(dir, OpenMode::ReadOnly, |d| match &budget {
                Some(b) => b.wrap(d),
                None => d,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    for h in &mut handles {
        h.drop_caches()?;
    }
    let before: Vec<_> = handles.iter().map(|h| h.device().stats()).collect();
    let barrier = Arc::new(Barrier::new(n));
    let cpu0 = process_cpu_ns();
    let results: Vec<Result<(Stream, SpatialIndex<D>)>> = std::thread::scope(|scope| {
        let threads: Vec<_> = handles
            .into_iter()
            .enumerate()
            .map(|(s, mut h)| {
                let barrier = barrier.clone();
                scope.spawn(move || -> Result<(Stream, SpatialIndex<D>)> {
                    barrier.wait();
                    let mut st = Stream {
                        done: Vec::new(),
                        span: None,
                    };
                    for i in (s..q.points.len()).step_by(n) {
                        let t = Instant::now();
                        let rep = h.nearest(q.points[i], q.k, q.refine)?;
                        let end = Instant::now();
                        st.done.push((i, rep, (end - t).as_nanos() as u64));
                        st.span = Some((st.span.map_or(t, |s| s.0), end));
                    }
                    Ok((st, h))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(Error::invalid("streams", "a query thread panicked")))
            })
            .collect()
    });
    let cpu_s = process_cpu_ns().saturating_sub(cpu0) as f64 * 1e-9;
    let mut reports: Vec<Option<QueryReport>> = (0..q.points.len()).map(|_| None).collect();
    let mut latency_ns = vec![0u64; q.points.len()];
    let mut device = Vec::with_capacity(n);
    let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
    for (r, b) in results.into_iter().zip(&before) {
        let (st, h) = r?;
        device.push(protocol::flatten("device", &h.device().stats().since(b)));
        if let Some((a, z)) = st.span {
            first = Some(first.map_or(a, |f| f.min(a)));
            last = Some(last.map_or(z, |l| l.max(z)));
        }
        for (i, rep, ns) in st.done {
            latency_ns[i] = ns;
            reports[i] = Some(rep);
        }
    }
    let reports: Vec<QueryReport> = reports
        .into_iter()
        .map(|r| r.ok_or_else(|| Error::invalid("streams", "a query was not run")))
        .collect::<Result<_>>()?;
    let makespan_ns = match (first, last) {
        (Some(a), Some(z)) => (z - a).as_nanos() as u64,
        _ => 0,
    };
    let row = row(
        n,
        c,
        &reports,
        &latency_ns,
        makespan_ns,
        cpu_s,
        &device,
        budget.as_deref(),
    );
    Ok(Measured { row, reports })
}

/// Counters summed over the handles; settings (the page size) as the first handle's.
fn sum(parts: &[Metrics]) -> Metrics {
    let mut out = Metrics::new();
    for m in parts {
        for (k, v) in m {
            if k.contains("settings.") {
                out.entry(k.clone()).or_insert(*v);
            } else {
                *out.entry(k.clone()).or_insert(0.0) += v;
            }
        }
    }
    out
}

/// The figures of one number of streams, under the simulated rows' names.
#[allow(clippy::too_many_arguments)]
fn row(
    n: usize,
    c: &Concurrency,
    reports: &[QueryReport],
    latency_ns: &[u64],
    makespan_ns: u64,
    cpu_s: f64,
    device: &[Metrics],
    budget: Option<&Budget>,
) -> Row {
    let mut m = Metrics::new();
    let device = sum(device);
    m.insert(
        "elapsed_s".into(),
        latency_ns.iter().sum::<u64>() as f64 * 1e-9,
    );
    m.insert("cpu_s".into(), cpu_s);
    m.insert(
        "device_s".into(),
        device.get("device.device_ns").copied().unwrap_or(0.0) * 1e-9,
    );
    m.extend(device);
    if let Some(b) = budget {
        m.insert("memory.hits".into(), b.hits() as f64);
        m.insert("memory.misses".into(), b.misses() as f64);
    }
    let timing = Timing {
        latency_ns,
        makespan_ns,
    };
    finish_row(
        n,
        c,
        reports,
        &timing,
        m,
        serde_json::json!({ "threads": "real" }),
    )
}

#[cfg(test)]
mod tests {
    use super::super::streams::tests::{brute, points, prepare, run_first, SPEC};
    use super::*;
    use crate::geom::Rect;

    /// Real threads on a `file:` device: every stream's answers equal brute force, with
    /// and without the memory budget; one stream without it reads exactly what the
    /// single-stream path reads and answers the same; the index reopens for writing.
    #[test]
    fn every_threads_answers_equal_brute_force_and_one_stream_is_the_plain_path() {
        let tmp = tempfile::tempdir().unwrap();
        let device = format!("file:{}", tmp.path().join("dev.bin").display());
        let exp = prepare(&device, tmp.path());
        let run = &exp.runs[0];
        let ds = &exp.dataset;
        let dir = tmp.path().join("idx");
        let mut idx = SpatialIndex::<4>::create(&dir, run.options.clone(), false).unwrap();
        for i in 0..ds.len() {
            let (id, r) = ds.object::<4>(i).unwrap();
            idx.insert(r, id).unwrap();
        }
        let ps = points(30);
        let q = Queries {
            points: &ps,
            k: 7,
            refine: false,
        };
        let want: Vec<Vec<u64>> = ps.iter().map(|p| brute(ds, p, 7)).collect();
        let mut work = Work { index_s: 0.0 };
        let mut steps = 0;
        for memory in [0, 64 << 10] {
            let c = Concurrency {
                streams: vec![1, 4, 7],
                instances: Instances::Shared,
                memory,
            };
            let (next, measured) = index(idx, &dir, &q, &c, run, &mut work, &mut |p| {
                if let Progress::Step(n) = p {
                    steps += n;
                }
            })
            .unwrap();
            idx = next;
            assert_eq!(measured.len(), 3);
            for m in &measured {
                let n = m.row.streams;
                for (i, rep) in m.reports.iter().enumerate() {
                    assert_eq!(rep.ids, want[i], "{n} streams, memory {memory}, query {i}");
                }
                let lat = &m.row.metrics;
                assert_eq!(lat["queries"], 30.0);
                assert!(lat["gauges.latency.mean_s"] > 0.0);
                assert!(lat["gauges.latency.p99_s"] >= lat["gauges.latency.p50_s"]);
                assert!(lat["gauges.throughput_qps"] > 0.0);
                assert_eq!(m.row.details["concurrency"]["threads"], "real");
                if memory > 0 {
                    assert!(lat["memory.hits"] > 0.0, "the upper levels are hit");
                    assert_eq!(lat["memory.misses"], lat["device.host.read_ops"]);
                }
            }
            if memory == 0 {
                // The plain path on the reopened handle: same answers, same reads.
                idx.drop_caches().unwrap();
                let before = idx.device().stats().host.read_ops;
                for (i, p) in ps.iter().enumerate() {
                    assert_eq!(idx.nearest(*p, 7, false).unwrap().ids, want[i]);
                }
                let reads = idx.device().stats().host.read_ops - before;
                assert!(reads > 0);
                for m in &measured {
                    assert_eq!(m.row.metrics["device.host.read_ops"], reads as f64);
                }
            }
        }
        assert_eq!(steps, 2 * 30, "one step per query per workload");
        // Reopened for writing: the index takes another object.
        let r = Rect::new([0.5; 4], [0.5; 4]).unwrap();
        idx.insert(r, 1 << 40).unwrap();
    }

    #[test]
    fn own_copies_on_a_file_device_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let device = format!("file:{}", tmp.path().join("dev.bin").display());
        let exp = prepare(&device, tmp.path());
        let c = Concurrency {
            streams: vec![2],
            instances: Instances::Own,
            memory: 0,
        };
        let e = check_run(&exp.runs[0], &c).unwrap_err().to_string();
        assert!(e.contains("use instances = \"shared\""), "{e}");
    }

    /// Through the runner: the rows are named by N like the simulated ones, and a
    /// workload after the streams runs on the reopened index.
    #[test]
    fn a_run_on_a_file_device_gives_one_row_per_number_of_streams() {
        let tmp = tempfile::tempdir().unwrap();
        let device = format!("file:{}", tmp.path().join("dev.bin").display());
        let spec = SPEC.replace("DEVICE", &device)
            + r#"
[[workload]]
kind = "knn"
name = "load"
k = 5
queries = 12
streams = [1, 3]
instances = "shared"
memory = "64KB"
[[workload]]
kind = "knn"
k = 5
queries = 12
"#;
        let r = run_first(tmp.path(), &spec);
        let names: Vec<&str> = r.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "construction",
                "load streams=1",
                "load streams=3",
                "knn k=5"
            ]
        );
        // As many answers in every row as the classic protocol's run (k per query).
        for w in &r.workloads[1..] {
            assert_eq!(w.get("results"), 12.0 * 5.0, "{}", w.name);
        }
        assert!(r.workloads[2].get("gauges.latency.mean_s") > 0.0);
    }
}
