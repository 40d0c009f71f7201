//! spidx vs the `rstar` crate vs SQLite's R*Tree module, side by side in one run.
//!
//! ```text
//! cargo run --release -p spidx-bench --bin index_vs_libs -- [--n 1000000] [--queries 1000] [--seed S] [--json]
//! ```
//!
//! Every implementation runs in its own child process (this binary re-executed with
//! `--only NAME`), so that its peak RSS is its own. Each child builds its index by
//! inserting the same `n` rectangles one by one, runs the same window queries `reps` times
//! and writes the sorted ids of every answer to a file; the parent checks that every
//! implementation returns exactly the answers of a brute-force scan, prints the tables and
//! exits non-zero on any difference.
//!
//! With `--peers` (or peers named in `--impls`), the C++ peers built by
//! `scripts/build-peers` run in the same turns: Boost.Geometry's `rtree` (`linear<100>`,
//! `quadratic<100>`, `rstar<100>`, the packing constructor) and libspatialindex (linear,
//! quadratic, R*-tree, STR, capacity 100); `--ratios FILE` writes the spidx-vs-peer table
//! (per-round CPU ratios, median over rounds; see `spidx_bench::peers`).
//!
//! Memory runs: spidx R-tree (linear), R-tree (quadratic), R*-tree (30 % reinsertion) and
//! Hilbert R-tree (s = 2), 2-D, 4 KB `checked` pages, on the memory device behind an LRU buffer that holds every
//! node; `rstar` (insert one by one, `locate_in_envelope_intersecting`); SQLite (bundled)
//! R*Tree virtual table in an in-memory database, inserts in one transaction with a prepared
//! statement. Bulk loads (the build is one bulk load): spidx STR, Hilbert packing and OMT
//! into an R*-tree, Hilbert packing of the Hilbert R-tree (`spidx-hilbert-bulk`), and
//! `rstar::RTree::bulk_load`, compared with each other. Simulated runs: spidx R-tree linear and R*-tree 30 % on the `hdd-7200` preset
//! (and `ssd-v300` where this build has it) behind a small LRU buffer, with the device's
//! modelled time and request counts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::Parser;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use serde::Serialize;
use spidx::geom::Rect;
use spidx_bench::data;
use spidx_bench::peers;
use spidx_bench::runs::{self, RunParams, RunResult};
use spidx_bench::sys::Machine;

#[derive(Parser, Debug, Clone)]
#[command(about = "spidx vs rstar vs SQLite R*Tree: insertion and window-query throughput")]
struct Args {
    /// Rectangles inserted (memory runs).
    #[arg(long, default_value_t = 1_000_000)]
    n: usize,
    /// Query windows per repetition.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Repetitions of the query phase in each run (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Runs of each implementation (each in a fresh process, taken in turns): the build
    /// time reported is the median over runs, the query time the median over all
    /// repetitions of all runs.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Rectangles inserted on simulated devices (default: `--n`).
    #[arg(long)]
    sim_n: Option<usize>,
    /// Page buffer of spidx on simulated devices.
    #[arg(long, default_value = "lru:512KB")]
    sim_cache: String,
    /// Neighbours per kNN query (0: no kNN phase).
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// kNN query points per repetition.
    #[arg(long, default_value_t = 1000)]
    knn_queries: usize,
    /// Workload directory (see `spidx_bench::data::Files`): read the rectangles, windows
    /// and kNN points from it if it holds a workload (`--n`, `--queries`, `--knn-queries`,
    /// `--seed` and a `--k` above 0 are then taken from it; a `--k` above 0 over a workload
    /// written with `--k 0` is refused), else generate them and write them there, with
    /// the brute-force answers, for other implementations to run.
    #[arg(long)]
    workload_dir: Option<PathBuf>,
    /// Check another implementation's window answers (a file of id lists, the format of
    /// `answers.windows`) against brute force over `--workload-dir`, then exit.
    #[arg(long, requires = "workload_dir")]
    check_windows: Option<PathBuf>,
    /// Check another implementation's kNN answers (id lists, nearest first) against brute
    /// force over `--workload-dir`, then exit.
    #[arg(long, requires = "workload_dir")]
    check_knn: Option<PathBuf>,
    /// Directory of the file-device runs' files (default: the temporary directory).
    #[arg(long)]
    file_dir: Option<PathBuf>,
    /// Skip the file-device runs.
    #[arg(long)]
    no_file: bool,
    /// Skip the simulated-device runs.
    #[arg(long)]
    no_sim: bool,
    /// Only these implementations (comma-separated names, e.g. `rstar,spidx-linear`).
    #[arg(long)]
    impls: Option<String>,
    /// Node page size of spidx in bytes (1024 to 262144; every spidx variant).
    #[arg(long, default_value_t = runs::PAGE)]
    page_size: usize,
    /// Also run every C++ peer whose program is built (`scripts/build-peers`; the
    /// missing ones are skipped with a note).
    #[arg(long)]
    peers: bool,
    /// Directory of the peers' programs (default: `target/peers` of this binary's
    /// target directory).
    #[arg(long)]
    peers_dir: Option<PathBuf>,
    /// Write the spidx-vs-peer ratio table (Markdown) to this file.
    #[arg(long)]
    ratios: Option<PathBuf>,
    /// Print the results as JSON on stdout (the tables go to stderr).
    #[arg(long)]
    json: bool,
    /// Child mode: run one implementation and print its result as JSON.
    #[arg(long, hide = true)]
    only: Option<String>,
    /// Child mode: where to write the answers' ids.
    #[arg(long, hide = true)]
    ids_out: Option<PathBuf>,
}

#[derive(Serialize)]
struct Report {
    machine: Machine,
    command: String,
    workload: String,
    params: RunParams,
    rounds: usize,
    sim_n: usize,
    results: Vec<RunResult>,
    sim_results: Vec<RunResult>,
    notes: Vec<String>,
    /// Per implementation: whether every answer equals the brute-force scan's.
    matches: Vec<(String, bool)>,
    all_match: bool,
    /// spidx vs its peers (see `spidx_bench::peers::ratio_table`).
    ratios: Vec<peers::Ratio>,
    /// `/proc/loadavg` before and after the runs.
    load: [String; 2],
}

fn main() -> ExitCode {
    let args = Args::parse();
    let r = if let Some(name) = &args.only {
        child(&args, name)
    } else {
        parent(&args)
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn params(args: &Args, n: usize) -> RunParams {
    RunParams {
        n,
        queries: args.queries,
        seed: args.seed,
        reps: args.reps,
        sim_cache: args.sim_cache.clone(),
        page_size: args.page_size,
        k: args.k,
        knn_queries: args.knn_queries,
        file_dir: args.file_dir.clone(),
        workload_dir: args.workload_dir.clone(),
    }
}

fn child(args: &Args, name: &str) -> Result<ExitCode> {
    let ids = args.ids_out.as_deref().context("--only needs --ids-out")?;
    let res = runs::run(name, &params(args, args.n), ids)?;
    println!("{}", serde_json::to_string(&res)?);
    Ok(ExitCode::SUCCESS)
}

/// A child's answers: one id list per window, and per kNN point (empty without kNN).
struct Answers {
    windows: Vec<Vec<u64>>,
    knn: Vec<Vec<u64>>,
}

fn spawn(name: &str, p: &RunParams, dir: &Path, peers_dir: &Path) -> Result<(RunResult, Answers)> {
    let ids = dir.join(format!("{}.ids", name.replace(['@', '/'], "_")));
    let res = match peers::find(name) {
        Some(peer) => peers::spawn(peer, peers_dir, p, &ids)?,
        None => spawn_child(name, p, &ids)?,
    };
    let windows = runs::read_ids(&ids)?;
    let _ = std::fs::remove_file(&ids);
    let knn_path = runs::knn_ids_path(&ids);
    let knn = if res.knn_queries > 0 {
        let l = runs::read_ids(&knn_path)?;
        let _ = std::fs::remove_file(&knn_path);
        l
    } else {
        Vec::new()
    };
    Ok((res, Answers { windows, knn }))
}

/// Runs implementation `name` in a child process of this binary.
fn spawn_child(name: &str, p: &RunParams, ids: &Path) -> Result<RunResult> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .args(["--only", name, "--ids-out"])
        .arg(ids)
        .args(["--n", &p.n.to_string()])
        .args(["--queries", &p.queries.to_string()])
        .args(["--seed", &p.seed.to_string()])
        .args(["--reps", &p.reps.to_string()])
        .args(["--sim-cache", &p.sim_cache])
        .args(["--page-size", &p.page_size.to_string()])
        .args(["--k", &p.k.to_string()])
        .args(["--knn-queries", &p.knn_queries.to_string()])
        .args(
            p.file_dir
                .iter()
                .flat_map(|d| [std::ffi::OsStr::new("--file-dir"), d.as_os_str()]),
        )
        .args(
            p.workload_dir
                .iter()
                .flat_map(|d| [std::ffi::OsStr::new("--workload-dir"), d.as_os_str()]),
        )
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("running the child for {name}"))?;
    if !out.status.success() {
        bail!("the child for {name} failed ({})", out.status);
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("parsing the result of {name}"))
}

/// The squared distances of the `k` boxes nearest to each point, by brute force (the
/// ids are ambiguous where distances tie; the distances are not).
fn brute_force_knn(rects: &[Rect<2>], points: &[[f64; 2]], k: usize) -> Vec<Vec<f64>> {
    points
        .iter()
        .map(|p| {
            let mut best: std::collections::BinaryHeap<Dist> = Default::default();
            for r in rects {
                let d = Dist(r.min_dist2(p));
                if best.len() < k {
                    best.push(d);
                } else if d < *best.peek().expect("k > 0") {
                    best.pop();
                    best.push(d);
                }
            }
            best.into_sorted_vec().into_iter().map(|d| d.0).collect()
        })
        .collect()
}

/// A squared distance ordered by `total_cmp`.
#[derive(Clone, Copy, PartialEq)]
struct Dist(f64);
impl Eq for Dist {}
impl PartialOrd for Dist {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Dist {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// Checks kNN answers (ids, nearest first) against brute force's distances: the same
/// distances in the same order, no id twice; returns the first difference.
fn compare_knn(
    got: &[Vec<u64>],
    want: &[Vec<f64>],
    rects: &[Rect<2>],
    points: &[[f64; 2]],
) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!(
            "{} kNN answers, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = g.iter().find(|id| !seen.insert(**id)) {
            return Some(format!("kNN point {i}: id {dup} twice"));
        }
        let d: Vec<f64> = g
            .iter()
            .map(|&id| {
                rects
                    .get(id as usize)
                    .map_or(f64::NAN, |r| r.min_dist2(&points[i]))
            })
            .collect();
        if d.len() != w.len() || d.iter().zip(w).any(|(a, b)| a.to_bits() != b.to_bits()) {
            return Some(format!(
                "kNN point {i}: squared distances {d:?}, expected {w:?}"
            ));
        }
    }
    None
}

/// The answers of a brute-force scan.
fn brute_force(rects: &[Rect<2>], windows: &[Rect<2>]) -> Vec<Vec<u64>> {
    windows
        .iter()
        .map(|w| {
            rects
                .iter()
                .enumerate()
                .filter(|(_, r)| r.intersects(w))
                .map(|(i, _)| i as u64)
                .collect()
        })
        .collect()
}

/// Compares answers with the reference; returns a description of the first difference.
fn compare(got: &[Vec<u64>], want: &[Vec<u64>]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} answers, expected {}", got.len(), want.len()));
    }
    got.iter()
        .zip(want)
        .enumerate()
        .find(|(_, (g, w))| g != w)
        .map(|(i, (g, w))| {
            format!(
                "window {i}: {} ids, expected {} (first differing id: {:?} vs {:?})",
                g.len(),
                w.len(),
                g.iter().zip(w.iter()).find(|(a, b)| a != b).map(|p| *p.0),
                g.iter().zip(w.iter()).find(|(a, b)| a != b).map(|p| *p.1),
            )
        })
}

struct Group {
    results: Vec<RunResult>,
    matches: Vec<(String, bool)>,
    /// Every round's results, in the order of the names.
    rounds: Vec<Vec<RunResult>>,
}

/// The brute-force answers over `rects` (kNN with `k` neighbours, none for 0).
fn references<'a>(
    rects: &'a [Rect<2>],
    windows: &[Rect<2>],
    points: &'a [[f64; 2]],
    k: usize,
) -> Reference<'a> {
    Reference {
        windows: brute_force(rects, windows),
        knn: if k > 0 {
            brute_force_knn(rects, points, k)
        } else {
            Vec::new()
        },
        rects,
        points,
    }
}

/// The reference answers of a workload.
struct Reference<'a> {
    windows: Vec<Vec<u64>>,
    knn: Vec<Vec<f64>>,
    rects: &'a [Rect<2>],
    points: &'a [[f64; 2]],
}

fn run_group(
    names: &[String],
    p: &RunParams,
    rounds: usize,
    dir: &Path,
    peers_dir: &Path,
    reference: &Reference<'_>,
    log: &mut dyn Write,
) -> Result<Group> {
    let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); names.len()];
    let mut ok = vec![true; names.len()];
    let mut by_round = Vec::new();
    for round in 0..rounds.max(1) {
        let mut this = Vec::new();
        for (k, name) in names.iter().enumerate() {
            writeln!(
                log,
                "  running {name} (n = {}, round {}) ...",
                p.n,
                round + 1
            )?;
            let (res, answers) = spawn(name, p, dir, peers_dir)?;
            if let Some(d) = compare(&answers.windows, &reference.windows) {
                writeln!(log, "  MISMATCH {name}: {d}")?;
                ok[k] = false;
            }
            if res.knn_queries > 0 {
                if let Some(d) = compare_knn(
                    &answers.knn,
                    &reference.knn,
                    reference.rects,
                    reference.points,
                ) {
                    writeln!(log, "  MISMATCH {name}: {d}")?;
                    ok[k] = false;
                }
            }
            writeln!(
                log,
                "    build {:.2} s ({:.2} s CPU), queries {:.4} s CPU (median), kNN {:.4} s CPU (median), peak RSS {} MiB",
                res.insert_wall_s,
                res.insert_cpu_s,
                res.query_cpu_median(),
                res.knn_cpu_median(),
                res.peak_rss_kb / 1024
            )?;
            this.push(res.clone());
            runs[k].push(res);
        }
        by_round.push(this);
    }
    Ok(Group {
        results: runs.into_iter().map(|r| runs::combine(&r)).collect(),
        matches: names.iter().cloned().zip(ok).collect(),
        rounds: by_round,
    })
}

fn fmt_rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.1}")
    }
}

fn mib(kb: u64) -> String {
    format!("{:.0}", kb as f64 / 1024.0)
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn main_table(results: &[RunResult], matches: &[(String, bool)]) -> Table {
    let by_name = |n: &str| results.iter().find(|r| r.name == n);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "implementation",
        "build s",
        "inserts/s",
        "vs rstar",
        "build CPU s",
        "vs rstar (CPU)",
        "queries/s (median)",
        "vs rstar",
        "queries/s (best)",
        "vs rstar",
        "kNN/s (CPU, median)",
        "vs rstar",
        "kNN node reads/query",
        "kNN CPU ns/node read",
        "results",
        "peak RSS MiB",
        "RSS above workload MiB",
        "tree (height / nodes / leaf fill)",
        "answers = scan",
    ]);
    for r in results {
        // Bulk loads are compared with rstar's bulk load, the others with its inserts.
        // The file-device rows with SQLite's database file.
        let bulk = runs::BULK_VARIANTS.contains(&r.name.as_str())
            || peers::find(&r.name).is_some_and(|p| p.bulk);
        let rstar = if bulk {
            by_name("rstar-bulk")
        } else if runs::FILE_VARIANTS.contains(&r.name.as_str()) {
            by_name("sqlite-file")
        } else {
            by_name("rstar")
        };
        let ok = matches.iter().find(|m| m.0 == r.name).map(|m| m.1);
        let ratio = |a: f64, b: Option<f64>| match b {
            Some(b) => format!("{:.2}x", a / b),
            None => "-".into(),
        };
        let spread = if r.insert_wall_s_runs.len() > 1 {
            let lo = r
                .insert_wall_s_runs
                .iter()
                .cloned()
                .fold(f64::INFINITY, f64::min);
            let hi = r.insert_wall_s_runs.iter().cloned().fold(0.0, f64::max);
            format!(" ({lo:.2}-{hi:.2})")
        } else {
            String::new()
        };
        t.add_row(vec![
            Cell::new(&r.name),
            right(format!("{:.2}{spread}", r.insert_wall_s)),
            right(fmt_rate(r.insert_rate())),
            right(ratio(r.insert_rate(), rstar.map(|x| x.insert_rate()))),
            right(format!("{:.2}", r.insert_cpu_s)),
            right(ratio(
                r.insert_cpu_rate(),
                rstar.map(|x| x.insert_cpu_rate()),
            )),
            right(fmt_rate(r.query_rate())),
            right(ratio(r.query_rate(), rstar.map(|x| x.query_rate()))),
            right(fmt_rate(r.query_rate_best())),
            right(ratio(
                r.query_rate_best(),
                rstar.map(|x| x.query_rate_best()),
            )),
            right(if r.knn_queries > 0 {
                fmt_rate(r.knn_rate())
            } else {
                "-".into()
            }),
            right(if r.knn_queries > 0 {
                ratio(
                    r.knn_rate(),
                    rstar.filter(|x| x.knn_queries > 0).map(|x| x.knn_rate()),
                )
            } else {
                "-".into()
            }),
            right(
                r.knn_reads_per_query()
                    .map_or("-".into(), |v| format!("{v:.2}")),
            ),
            right(
                r.knn_ns_per_node_read()
                    .map_or("-".into(), |v| format!("{v:.0}")),
            ),
            right(r.results),
            right(mib(r.peak_rss_kb)),
            right(mib(r.peak_rss_kb.saturating_sub(r.rss_base_kb))),
            Cell::new(match &r.tree {
                Some(t) => format!("{} / {} / {:.0} %", t.height, t.nodes, t.leaf_fill * 100.0),
                None => "-".into(),
            }),
            Cell::new(match ok {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }),
        ]);
    }
    t
}

fn sim_table(results: &[RunResult], matches: &[(String, bool)]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "implementation",
        "buffer",
        "n",
        "build: device s",
        "reads",
        "writes",
        "wall s",
        "CPU s",
        "CPU + device s",
        "queries: device s",
        "reads",
        "writes",
        "wall s (median)",
        "CPU s (median)",
        "CPU + device s",
        "answers = scan",
    ]);
    for r in results {
        let ok = matches.iter().find(|m| m.0 == r.name).is_some_and(|m| m.1);
        let (bi, qi) = (
            r.insert_io.clone().unwrap_or_default(),
            r.query_io.clone().unwrap_or_default(),
        );
        t.add_row(vec![
            Cell::new(&r.name),
            Cell::new(&r.cache),
            right(r.n),
            right(format!("{:.1}", bi.device_ns as f64 * 1e-9)),
            right(bi.reads),
            right(bi.writes),
            right(format!("{:.2}", r.insert_wall_s)),
            right(format!("{:.2}", r.insert_cpu_s)),
            right(format!(
                "{:.1}",
                r.insert_cpu_s + bi.device_ns as f64 * 1e-9
            )),
            right(format!("{:.1}", qi.device_ns as f64 * 1e-9)),
            right(qi.reads),
            right(qi.writes),
            right(format!("{:.3}", r.query_wall_median())),
            right(format!("{:.3}", r.query_cpu_median())),
            right(format!(
                "{:.1}",
                r.query_cpu_median() + qi.device_ns as f64 * 1e-9
            )),
            Cell::new(if ok { "yes" } else { "NO" }),
        ]);
    }
    t
}

/// Checks another implementation's answer files against the reference (`--check-windows`,
/// `--check-knn`).
fn check_peer(args: &Args, reference: &Reference<'_>, out: &mut dyn Write) -> Result<ExitCode> {
    let mut ok = true;
    if let Some(f) = &args.check_windows {
        let got = runs::read_ids(f)?;
        match compare(&got, &reference.windows) {
            Some(d) => {
                ok = false;
                writeln!(out, "{}: MISMATCH: {d}", f.display())?;
            }
            None => writeln!(
                out,
                "{}: every window's answer equals brute force's ({} windows)",
                f.display(),
                got.len()
            )?,
        }
    }
    if let Some(f) = &args.check_knn {
        let got = runs::read_ids(f)?;
        match compare_knn(&got, &reference.knn, reference.rects, reference.points) {
            Some(d) => {
                ok = false;
                writeln!(out, "{}: MISMATCH: {d}", f.display())?;
            }
            None => writeln!(
                out,
                "{}: every kNN answer has brute force's distances ({} points, k = {})",
                f.display(),
                got.len(),
                args.k
            )?,
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn parent(args: &Args) -> Result<ExitCode> {
    let machine = Machine::detect();
    let load_before = spidx_bench::sys::loadavg();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut out: Box<dyn Write> = if args.json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let wanted: Option<Vec<String>> = args
        .impls
        .as_ref()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let keep = |name: &str| wanted.as_ref().is_none_or(|w| w.iter().any(|x| x == name));

    writeln!(
        out,
        "machine: {} CPUs ({}), {:.1} GiB RAM",
        machine.nproc, machine.cpu_model, machine.mem_gib
    )?;
    writeln!(out, "workload: {}", data::describe())?;
    writeln!(
        out,
        "n = {}, {} windows, seed {}, {} run(s) per implementation, {} query repetitions per run (medians reported)",
        args.n, args.queries, args.seed, args.rounds, args.reps
    )?;

    let dir = std::env::temp_dir().join(format!("spidx-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut notes = Vec::new();
    let peers_dir = args.peers_dir.clone().unwrap_or_else(peers::default_dir);
    // The peers to run: every built one with --peers, and those named in --impls.
    let mut peer_names = Vec::new();
    for peer in &peers::PEERS {
        let named = wanted
            .as_ref()
            .is_some_and(|w| w.iter().any(|x| x == peer.name));
        if named {
            peers::program(peer, &peers_dir)?;
            peer_names.push(peer.name.to_string());
        } else if args.peers && wanted.is_none() {
            match peers::program(peer, &peers_dir) {
                Ok(_) => peer_names.push(peer.name.to_string()),
                Err(e) => notes.push(format!("peer skipped: {e}")),
            }
        }
    }
    // The peers read the workload's files: write them when no directory was given.
    let mut args = args.clone();
    if !peer_names.is_empty() && args.workload_dir.is_none() {
        args.workload_dir = Some(dir.join("workload"));
    }
    let args = &args;

    // The workload: from the files of --workload-dir, or generated (and then written
    // there for other implementations).
    let (files, args) = match &args.workload_dir {
        Some(dir) if dir.join("workload.json").exists() => {
            let f = data::Files::read(dir)?;
            let m = &f.manifest;
            if args.k > 0 && m.k == 0 {
                bail!(
                    "--k {}: the workload in {} was written without kNN answers (k = 0); \
                     pass --k 0 to run it without kNN, or write a workload with kNN in \
                     another --workload-dir",
                    args.k,
                    dir.display()
                );
            }
            writeln!(out, "workload read from {}", dir.display())?;
            let args = Args {
                n: m.n,
                queries: m.queries,
                knn_queries: m.knn_queries,
                seed: m.seed,
                k: if args.k == 0 { 0 } else { m.k },
                ..args.clone()
            };
            (f, args)
        }
        _ => (
            data::Files::generate(args.n, args.queries, args.knn_queries, args.k, args.seed),
            args.clone(),
        ),
    };
    let args = &args;
    let windows = files.windows.clone();
    let p = params(args, args.n);
    let sim_n = args.sim_n.unwrap_or(args.n);
    let mut names: Vec<String> = runs::SPIDX_VARIANTS.iter().map(|s| s.to_string()).collect();
    names.extend(["rstar".to_string(), "sqlite".to_string()]);
    names.extend(runs::BULK_VARIANTS.iter().map(|s| s.to_string()));
    if !args.no_file {
        names.extend(runs::FILE_VARIANTS.iter().map(|s| s.to_string()));
    }
    names.retain(|n| keep(n));
    names.extend(peer_names);
    let mut main = Group {
        results: vec![],
        matches: vec![],
        rounds: vec![],
    };
    let points = files.points.clone();
    let rects = files.rects.clone();
    let reference = references(&rects, &windows, &points, args.k);
    if let Some(dir) = &args.workload_dir {
        if !dir.join("workload.json").exists() {
            files.write(dir)?;
            writeln!(out, "workload written to {}", dir.display())?;
        }
        data::write_lists(&dir.join("answers.windows"), &reference.windows)?;
        let knn: Vec<Vec<u64>> = reference
            .knn
            .iter()
            .map(|l| l.iter().map(|d| d.to_bits()).collect())
            .collect();
        data::write_lists(&dir.join("answers.knn"), &knn)?;
    }
    if args.check_windows.is_some() || args.check_knn.is_some() {
        return check_peer(args, &reference, &mut out);
    }
    if !names.is_empty() {
        main = run_group(
            &names,
            &p,
            args.rounds,
            &dir,
            &peers_dir,
            &reference,
            &mut out,
        )?;
    }

    let mut sim = Group {
        results: vec![],
        matches: vec![],
        rounds: vec![],
    };
    if !args.no_sim {
        let mut sim_names = Vec::new();
        for dev in runs::SIM_DEVICES {
            match runs::device_available(dev) {
                Ok(()) => sim_names.extend(
                    runs::SIM_VARIANTS
                        .iter()
                        .map(|v| format!("{v}@{dev}"))
                        .filter(|n| keep(n)),
                ),
                Err(e) => notes.push(format!("device {dev} skipped: {e}")),
            }
        }
        if !sim_names.is_empty() {
            let sp = params(args, sim_n);
            let sim_rects = data::rects(sim_n, args.seed);
            let sim_reference = if sim_n == args.n {
                reference
            } else {
                references(&sim_rects, &windows, &points, args.k)
            };
            sim = run_group(
                &sim_names,
                &sp,
                args.rounds,
                &dir,
                &peers_dir,
                &sim_reference,
                &mut out,
            )?;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let mut all: Vec<(String, bool)> = main.matches.clone();
    all.extend(sim.matches.iter().cloned());
    let all_match = all.iter().all(|m| m.1);

    writeln!(out)?;
    if !main.results.is_empty() {
        writeln!(
            out,
            "In memory (spidx: memory device, {} buffer holding every node, {} pages); n = {}:",
            runs::MEMORY_CACHE,
            runs::page_label(args.page_size),
            args.n
        )?;
        writeln!(out, "{}", main_table(&main.results, &main.matches))?;
        writeln!(
            out,
            "(\"vs rstar\": one-by-one rows over rstar, bulk rows over rstar-bulk, file-device rows over sqlite-file; build and kNN ratios by CPU where named)"
        )?;
    }
    if !sim.results.is_empty() {
        writeln!(
            out,
            "Simulated devices (spidx, {} buffer, caches dropped before each query repetition); n = {}:",
            args.sim_cache, sim_n
        )?;
        writeln!(out, "{}", sim_table(&sim.results, &sim.matches))?;
    }
    let ok: Vec<bool> = main.matches.iter().map(|m| m.1).collect();
    let ratios = peers::ratio_table(&names, &main.rounds, &ok);
    let load = [load_before, spidx_bench::sys::loadavg()];
    if !ratios.is_empty() {
        let table = peers::markdown(&ratios);
        writeln!(
            out,
            "spidx vs peer: CPU seconds, peer / spidx (> 1: spidx faster), per round, median \
             (min–max) over {} interleaved round(s); load average {} before, {} after:",
            args.rounds.max(1),
            load[0],
            load[1]
        )?;
        writeln!(out, "{table}")?;
        if let Some(f) = &args.ratios {
            std::fs::write(f, &table).with_context(|| format!("writing {}", f.display()))?;
        }
    }
    for n in &notes {
        writeln!(out, "note: {n}")?;
    }
    writeln!(
        out,
        "answers: {}",
        if all_match {
            "every implementation returned exactly the brute-force answers for every window"
                .to_string()
        } else {
            let bad: Vec<&str> = all.iter().filter(|m| !m.1).map(|m| m.0.as_str()).collect();
            format!("MISMATCH in {}", bad.join(", "))
        }
    )?;
    if args.json {
        let report = Report {
            machine,
            command,
            workload: data::describe(),
            params: p,
            rounds: args.rounds,
            sim_n,
            results: main.results,
            sim_results: sim.results,
            notes,
            matches: all,
            all_match,
            ratios,
            load,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(if all_match {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
