//! Results-insert throughput of the two results backends (docs/benchmarks.md): records
//! runs (one `running` row, then one transaction with the workloads' headline rows and
//! every metric) into a fresh SQLite file and into a fresh database on a temporary local
//! PostgreSQL server, side by side, and prints the median time per run and runs/s.
//!
//! Usage: results_insert [RUNS (200)] [WORKLOADS (2)] [METRICS PER WORKLOAD (600)] [URL]
//!
//! With URL (`postgres://…`, an empty database of a running server) the PostgreSQL side
//! uses that server as it is configured; without it, a temporary server
//! ([`TempPostgres`], which turns fsync and synchronous commit off for speed).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use spidx::experiment::db::pg_server::TempPostgres;
use spidx::experiment::db::{Invocation, Owner};
use spidx::experiment::protocol::Metrics;
use spidx::experiment::{matrix, spec, ResultsDb, RunResult, WorkloadResult};

fn arg(i: usize, default: usize) -> Result<usize> {
    match std::env::args().nth(i) {
        Some(a) => a
            .parse()
            .with_context(|| format!("argument {i}: {a} is not a count")),
        None => Ok(default),
    }
}

/// A run's figures with `workloads` workloads of `metrics` metrics each (names like the
/// runner's: counters, gauges and settings).
fn result(workloads: usize, metrics: usize) -> RunResult {
    RunResult {
        workloads: (0..workloads)
            .map(|w| {
                let mut m = Metrics::new();
                for i in 0..metrics {
                    let name = match i % 10 {
                        0 => format!("layer{}.gauges.level_{i}", i % 7),
                        1 => format!("layer{}.settings.size_{i}", i % 7),
                        _ => format!("layer{}.counter_{i}", i % 7),
                    };
                    m.insert(name, i as f64 * 1.5);
                }
                m.insert("elapsed_s".into(), 0.25);
                WorkloadResult {
                    name: format!("workload {w}"),
                    kind: "range".into(),
                    metrics: m,
                    details: serde_json::json!({}),
                }
            })
            .collect(),
        wall_s: 1.0,
        index_s: 0.5,
    }
}

/// Seconds per run of recording `runs` runs into the database at `path`.
fn time_backend(path: &Path, runs: usize, r: &RunResult) -> Result<Vec<f64>> {
    let text = r#"
name = "bench"
[dataset]
generate = { distribution = "uniform", count = 10 }
[matrix]
index = [{ kind = "rtree" }]
[[workload]]
kind = "construction"
"#;
    let s = spec::parse(text, "bench.toml", Path::new("."))?;
    let run = matrix::expand(&s, 2)?.remove(0);
    let inv = Invocation {
        dataset_json: "{}".into(),
        objects: 10,
        machine_json: "{}".into(),
        owner: Owner::this_process(),
        inputs: Default::default(),
    };
    let mut db = ResultsDb::open(path)?;
    let exp = db.experiment("bench", "h", "{}", "", "bench.toml")?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let id = db.start_run(exp, &run, &inv)?;
        db.finish_run(id, r, 0.0)?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(times)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> Result<()> {
    let (runs, workloads, metrics) = (arg(1, 200)?, arg(2, 2)?, arg(3, 600)?);
    let given = std::env::args().nth(4);
    let temp = match given {
        Some(_) => None,
        None => Some(TempPostgres::start()?.context(
            "no PostgreSQL server binary (initdb) found: install Debian's postgresql package",
        )?),
    };
    let r = result(workloads, metrics);
    let dir = std::env::temp_dir().join(format!("spidx-results-insert-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let sqlite = dir.join("bench.db");
    let url = match (&given, &temp) {
        (Some(u), _) => u.clone(),
        (None, Some(pg)) => pg.create_database("bench")?,
        (None, None) => bail!("no PostgreSQL server"),
    };
    println!(
        "{runs} runs of {workloads} workloads × {} metrics each",
        r.workloads[0].metrics.len()
    );
    println!("| backend | median per run | runs/s | metric rows/s |");
    println!("|---|---|---|---|");
    // Interleaved rounds, so both backends see the same machine load.
    let mut all: Vec<(&str, Vec<f64>)> = vec![("SQLite", Vec::new()), ("PostgreSQL", Vec::new())];
    let rounds = 4;
    for _ in 0..rounds {
        all[0].1.extend(time_backend(&sqlite, runs / rounds, &r)?);
        all[1]
            .1
            .extend(time_backend(Path::new(&url), runs / rounds, &r)?);
    }
    let rows = (workloads * r.workloads[0].metrics.len()) as f64;
    for (name, mut t) in all {
        let m = median(&mut t);
        println!(
            "| {name} | {:.2} ms | {:.0} | {:.0} |",
            m * 1e3,
            1.0 / m,
            rows / m
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
