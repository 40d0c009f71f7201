//! `spidx run SPEC`: runs an experiment (see `docs/experiments.md`) and records every run
//! in the results database, one transaction per finished run; `--resume` skips the runs
//! of the same experiment (name and spec fingerprint) that already finished, and claims
//! each run it starts in the database (with a lease), so several `--resume`s at once split
//! the remaining runs between them. A finished run counts as done only while its inputs
//! (dataset, windows files, device) have the content they had, by their fingerprints; one
//! whose inputs changed runs again, and the output names the file and what changed.
//! `--dry-run` prints what an invocation would do with every run, and runs nothing.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use spidx::experiment::db::Location;
use spidx::experiment::session::{self, Action, Event, Plan};
use spidx::experiment::{spec, Experiment, Progress, ResultsDb, RunResult, Shard};

use crate::numfmt::{count, secs};
use crate::results::new_table;

/// Arguments of `spidx run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The experiment spec (TOML).
    spec: PathBuf,
    /// Results database, created if missing; runs are appended: an SQLite file or a
    /// `postgres://` URL. Default: the spec's `results` key, else `results.db`.
    #[arg(long)]
    results: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// No progress output (the summary is still printed).
    #[arg(long)]
    quiet: bool,
    /// Skip runs of this experiment that already finished in the database.
    #[arg(long)]
    resume: bool,
    /// Run only the K-th of N disjoint slices of the matrix (K from 0 to N-1), e.g. one
    /// per task of a Slurm job array; merge the slices' databases with `spidx results merge`.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Use device files (`file:` devices of the matrix) that exist and that spidx did not
    /// create: their contents are overwritten and they are grown to the devices' capacity.
    #[arg(long)]
    force: bool,
    /// List the runs the spec expands to and what this invocation would do with each
    /// (with --resume: which are skipped, which run again, and why); run nothing and
    /// write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// A count in JSON: an integer when it is integral (every count but a mean over
/// repetitions that differ), else a float.
pub fn count_json(v: f64) -> serde_json::Value {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// How progress is shown: bars on a terminal, plain lines otherwise, or nothing.
enum Shown {
    Bars {
        overall: ProgressBar,
        run: ProgressBar,
        _multi: MultiProgress,
    },
    Lines,
    Quiet,
}

impl Shown {
    fn new(quiet: bool, runs: u64) -> Shown {
        if quiet {
            return Shown::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            return Shown::Lines;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(runs));
        overall.set_style(
            ProgressStyle::with_template(
                "runs {bar:30} {pos}/{len} {elapsed_precise} (eta {eta}) {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        overall.enable_steady_tick(std::time::Duration::from_millis(500));
        let run = multi.add(ProgressBar::new(1));
        run.set_style(
            ProgressStyle::with_template("  {msg:<22} {bar:30} {pos}/{len} ({per_sec})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        Shown::Bars {
            overall,
            run,
            _multi: multi,
        }
    }

    fn line(&self, text: &str) {
        // Names and errors come from the spec: escaped and masked before the terminal.
        let text = crate::term::safe_lines(text);
        match self {
            Shown::Bars { overall, .. } => overall.println(text),
            Shown::Lines => eprintln!("{text}"),
            Shown::Quiet => {}
        }
    }
}

pub fn run(a: RunArgs) -> Result<()> {
    // Cheap checks first: the spec (typos, values, files), then the results database.
    let parsed = spec::load(&a.spec)?;
    let results = a
        .results
        .clone()
        .or(parsed.results)
        .unwrap_or_else(|| PathBuf::from("results.db"));
    // Named without a PostgreSQL URL's password wherever it is shown.
    let results_shown = Location::of(&results).display();
    if a.dry_run {
        return dry_run(&a, &results);
    }
    let mut db = ResultsDb::open(&results)?;
    let t = Instant::now();
    let mut exp = Experiment::prepare(&a.spec)?;
    let prepare_s = t.elapsed().as_secs_f64();
    for r in &exp.runs {
        crate::own::check_devices(&r.options, a.force)?;
    }
    let matrix_runs = exp.runs.len();
    if let Some(shard) = a.shard {
        exp.runs = shard.select(&exp.runs);
    }
    let shown = Shown::new(a.quiet, exp.runs.len() as u64);
    let runs_text = match a.shard {
        Some(shard) => format!(
            "{} runs (shard {shard} of a {matrix_runs}-run matrix)",
            exp.runs.len()
        ),
        None => format!("{} runs", exp.runs.len()),
    };
    shown.line(&format!(
        "experiment '{}': {} objects ({} to load), {runs_text}, {} workloads each; results in {}",
        exp.spec.name,
        count(exp.dataset.len() as f64),
        secs(prepare_s),
        exp.spec.workloads.len(),
        results_shown
    ));
    let mut on_event = |e: Event| match e {
        Event::Started {
            position,
            todo,
            run,
        } => {
            if let Shown::Bars { overall, .. } = &shown {
                if position == 0 {
                    overall.set_length(todo as u64);
                }
                overall.set_message(crate::term::cell(&run.name));
            } else {
                shown.line(&format!("[{}/{todo}] {}", position + 1, run.name));
            }
        }
        Event::Planned(plan) => {
            for line in plan_lines(plan) {
                shown.line(&line);
            }
        }
        Event::Progress(p) => match (&shown, p) {
            (Shown::Bars { run, .. }, Progress::Workload { name, steps }) => {
                run.reset();
                run.set_length(steps);
                run.set_message(crate::term::cell(name));
            }
            (Shown::Bars { run, .. }, Progress::Step(n)) => run.inc(n),
            (Shown::Lines, Progress::Workload { name, steps }) => {
                eprintln!("  {} ({steps} steps)", crate::term::cell(name))
            }
            _ => {}
        },
        Event::Ended(o) => {
            match &o.result {
                Ok(r) => {
                    let simulated = exp
                        .runs
                        .iter()
                        .find(|x| x.name == o.name)
                        .is_none_or(|x| x.options.device.is_simulated());
                    let times: Vec<String> = r
                        .workloads
                        .iter()
                        .map(|w| format!("{} {}", w.name, secs(w.get("elapsed_s"))))
                        .collect();
                    shown.line(&format!(
                        "  {}: run took {} wall (runner overhead {}); {} elapsed: {}",
                        o.name,
                        secs(r.wall_s + o.outside_s),
                        secs(r.wall_s + o.outside_s - r.index_s),
                        clock(simulated),
                        times.join(", ")
                    ));
                }
                Err(msg) => shown.line(&format!("  {} FAILED: {msg}", o.name)),
            }
            if let Shown::Bars { overall, .. } = &shown {
                overall.inc(1);
            }
        }
    };
    let summary = session::execute(&exp, &mut db, &a.spec, a.resume, &mut on_event)?;
    if let Shown::Bars { overall, run, .. } = &shown {
        run.finish_and_clear();
        overall.finish_and_clear();
    }
    let failed = summary.failed();
    let outcomes: Vec<(String, i64, std::result::Result<RunResult, String>)> = summary
        .outcomes
        .into_iter()
        .map(|o| (o.name, o.run_id, o.result))
        .collect();
    if a.json {
        let runs: Vec<_> = outcomes
            .iter()
            .map(|(name, id, r)| match r {
                Ok(r) => json!({
                    "run_id": id, "name": name, "status": "finished",
                    "wall_s": r.wall_s, "index_s": r.index_s,
                    "workloads": r.workloads.iter().map(|w| json!({
                        "name": w.name, "kind": w.kind,
                        "elapsed_s": w.get("elapsed_s"), "cpu_s": w.get("cpu_s"), "device_s": w.get("device_s"),
                        "reads": count_json(w.get("device.host.read_ops")),
                        "writes": count_json(w.get("device.host.write_ops")),
                        "repetitions": w.metrics.get("settings.repetitions").copied().map(count_json),
                        "rep_median_s": w.metrics.get("gauges.elapsed_s_rep_median"),
                        "rep_sd_s": w.metrics.get("gauges.elapsed_s_rep_sd"),
                        "rep_ci95_s": w.metrics.get("gauges.elapsed_s_rep_ci95_low").zip(
                            w.metrics.get("gauges.elapsed_s_rep_ci95_high")).map(|(l, h)| [l, h]),
                    })).collect::<Vec<_>>(),
                }),
                Err(e) => json!({"run_id": id, "name": name, "status": "failed", "error": e}),
            })
            .collect();
        let v = json!({
            "experiment": exp.spec.name, "spec_hash": exp.hash, "results": results_shown,
            "skipped": summary.skipped, "run_elsewhere": summary.run_elsewhere,
            "shard": a.shard.map(|s| s.to_string()), "matrix_runs": matrix_runs,
            "rerun": summary.plan.rerun_reasons().iter()
                .map(|(why, n)| json!({"runs": n, "why": why})).collect::<Vec<_>>(),
            "runs": runs,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_summary(&exp, &outcomes);
        if summary.skipped > 0 {
            println!(
                "{} runs were already done over the same inputs and were skipped (--resume)",
                summary.skipped
            );
        }
        for (why, n) in summary.plan.rerun_reasons() {
            println!("{n} runs were done before and ran again (--resume): {why}");
        }
        if summary.run_elsewhere > 0 {
            println!(
                "{} runs were claimed by another spidx process on {} and run there (--resume)",
                summary.run_elsewhere, results_shown
            );
        }
    }
    if failed > 0 {
        bail!(
            "{failed} of {} runs failed (recorded as failed in {})",
            outcomes.len(),
            results_shown
        );
    }
    Ok(())
}

/// What `--resume` decided, for the progress output: runs that run again and why, runs
/// kept that cannot be compared or that another build ran.
fn plan_lines(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    for (why, n) in plan.rerun_reasons() {
        out.push(format!("{n} finished runs run again: {why}"));
    }
    if plan.unfingerprinted > 0 {
        out.push(format!(
            "{} finished runs are kept as done although their inputs were not fingerprinted when they ran (run without --resume to redo them)",
            plan.unfingerprinted
        ));
    }
    for (build, n) in &plan.other_builds {
        out.push(format!(
            "{n} finished runs are kept as done that spidx {build} ran (this is spidx {})",
            this_build()
        ));
    }
    out
}

/// This build as runs record it: `0.1.0+<commit>`, or `0.1.0` when the commit is unknown.
fn this_build() -> String {
    match spidx::experiment::db::export::git_commit() {
        "unknown" => spidx::VERSION.to_string(),
        c => format!("{}+{c}", spidx::VERSION),
    }
}

/// `spidx run --dry-run`: the plan of an invocation, read from the database if it exists,
/// printed as a table (or JSON); nothing is run, created or written.
fn dry_run(a: &RunArgs, results: &std::path::Path) -> Result<()> {
    let mut exp = Experiment::prepare(&a.spec)?;
    let matrix_runs = exp.runs.len();
    if let Some(shard) = a.shard {
        exp.runs = shard.select(&exp.runs);
    }
    let exists = match Location::of(results) {
        Location::File(p) => p.exists(),
        Location::Postgres(_) => true,
    };
    let db = if exists && a.resume {
        Some(ResultsDb::open_existing(results)?)
    } else {
        None
    };
    let plan = session::plan(&exp, db.as_ref(), a.resume)?;
    let word = |act: &Action| match act {
        Action::Run => ("run", String::new()),
        Action::Skip { why } => ("skip", why.clone()),
        Action::Rerun { why } => ("run again", why.join("; ")),
    };
    if a.json {
        let runs: Vec<_> = exp
            .runs
            .iter()
            .zip(&plan.actions)
            .map(|(r, act)| {
                let (what, why) = word(act);
                json!({"ordinal": r.ordinal, "name": r.name, "key": r.key,
                       "inputs_hash": exp.prints.run(r).hash, "action": what, "why": why})
            })
            .collect();
        let v = json!({
            "experiment": exp.spec.name, "spec_hash": exp.hash,
            "results": Location::of(results).display(), "matrix_runs": matrix_runs,
            "to_run": exp.runs.len() - plan.skipped(), "skipped": plan.skipped(),
            "runs": runs,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut t = new_table(
        ["#", "run", "action", "why"].map(String::from).to_vec(),
        false,
    );
    for (r, act) in exp.runs.iter().zip(&plan.actions) {
        let (what, why) = word(act);
        t.add_row(vec![
            r.ordinal.to_string(),
            r.name.clone(),
            what.to_string(),
            why,
        ]);
    }
    println!("{t}");
    println!(
        "experiment '{}': {} runs, {} to run, {} skipped (dry run: nothing was run or written{})",
        exp.spec.name,
        exp.runs.len(),
        exp.runs.len() - plan.skipped(),
        plan.skipped(),
        if a.resume {
            String::new()
        } else {
            "; without --resume every run runs".to_string()
        }
    );
    for line in plan_lines(&plan) {
        println!("{line}");
    }
    Ok(())
}

/// "modelled" for simulated devices (elapsed = the model's device time + the host profile's
/// price of the counted work), "wall"
/// for real ones.
fn clock(simulated: bool) -> &'static str {
    if simulated {
        "modelled"
    } else {
        "wall"
    }
}

fn print_summary(
    exp: &Experiment,
    outcomes: &[(String, i64, std::result::Result<RunResult, String>)],
) {
    if outcomes.is_empty() {
        return;
    }
    let simulated = |name: &str| {
        exp.runs
            .iter()
            .find(|x| x.name == name)
            .is_none_or(|x| x.options.device.is_simulated())
    };
    let kinds: std::collections::BTreeSet<bool> = outcomes
        .iter()
        .map(|(name, _, _)| simulated(name))
        .collect();
    // A column saying modelled or wall only when the runs differ; the notes below say it.
    let mixed = kinds.len() > 1;
    let mut header = vec!["run".to_string()];
    if mixed {
        header.push("times".to_string());
    }
    // One column per result row name: a workload can give several rows (a stream
    // workload one per stream count, `NAME streams=N`), so the names come from the results.
    let mut names: Vec<String> = exp
        .spec
        .workloads
        .iter()
        .map(|w| w.name().to_string())
        .collect();
    for (_, _, r) in outcomes {
        if let Ok(r) = r {
            let produced: Vec<String> = r.workloads.iter().map(|w| w.name.clone()).collect();
            if produced.len() > names.len() || !produced.iter().all(|n| names.contains(n)) {
                names = produced;
            }
            break;
        }
    }
    for name in &names {
        header.push(format!("{}\nelapsed", crate::term::cell(name)));
    }
    header.push("construction\nreads / writes".into());
    header.push("runner\noverhead".into());
    let mut t = new_table(header, false);
    for (name, _, r) in outcomes {
        let mut row = vec![crate::term::cell(name)];
        if mixed {
            row.push(clock(simulated(name)).to_string());
        }
        match r {
            Ok(r) => {
                for name in &names {
                    match r.workloads.iter().find(|w| &w.name == name) {
                        Some(w) => row.push(secs(w.get("elapsed_s"))),
                        None => row.push("-".into()),
                    }
                }
                let c = &r.workloads[0];
                row.push(format!(
                    "{} / {}",
                    count(c.get("device.host.read_ops")),
                    count(c.get("device.host.write_ops"))
                ));
                row.push(secs(r.wall_s - r.index_s));
            }
            Err(e) => {
                row.push(crate::term::cell(&format!("failed: {e}")));
            }
        }
        t.add_row(row);
    }
    println!("{t}");
    println!(
        "elapsed: construction = one-by-one insertion; queries = sum over queries of each query's mean over {} repetitions",
        exp.spec.protocol.repetitions
    );
    if kinds.contains(&true) {
        println!(
            "{}: elapsed = simulated device time + the host profile (not CPU or wall time)",
            if mixed {
                "modelled"
            } else {
                "all times modelled"
            }
        );
    }
    if kinds.contains(&false) {
        println!("wall: real device, elapsed = wall-clock time");
    }
    println!("runner overhead: wall time of the run outside index and device calls");
}
