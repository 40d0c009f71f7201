//! `spidx results list|show|export`: reading the results database that `spidx run` writes,
//! as tables, JSON, or CSV for analysis elsewhere.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use spidx::experiment::db::{ResultsDb, Table as Rows};

/// `spidx results` subcommands.
#[derive(Subcommand, Debug)]
pub enum ResultsCmd {
    /// List experiments and their runs.
    List(ListArgs),
    /// Show one run: its configuration and every workload's figures.
    Show(ShowArgs),
    /// Export results (one row per run and workload) or every metric (long format).
    Export(ExportArgs),
}

/// Arguments of `spidx results list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Results database.
    #[arg(long, default_value = "results.db")]
    results: PathBuf,
    /// Only this experiment's runs.
    #[arg(long)]
    experiment: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `spidx results show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id (see `spidx results list`).
    run: i64,
    /// Results database.
    #[arg(long, default_value = "results.db")]
    results: PathBuf,
    /// Also every metric of every layer (long format).
    #[arg(long)]
    metrics: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Export formats.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values with a header row.
    Csv,
    /// A JSON array of objects.
    Json,
    /// A Parquet file (needs --out): typed columns, nulls for missing values.
    Parquet,
}

/// Arguments of `spidx results export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Output format.
    #[arg(long, value_enum)]
    format: Format,
    /// Results database.
    #[arg(long, default_value = "results.db")]
    results: PathBuf,
    /// Only this experiment.
    #[arg(long)]
    experiment: Option<String>,
    /// Every metric in long format (experiment, run_id, run, workload, name, value)
    /// instead of one row of headline figures per run and workload.
    #[arg(long)]
    metrics: bool,
    /// Every finished run, not only the newest of each configuration.
    #[arg(long)]
    all: bool,
    /// Output file (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(cmd: ResultsCmd) -> Result<()> {
    match cmd {
        ResultsCmd::List(a) => list(a),
        ResultsCmd::Show(a) => show(a),
        ResultsCmd::Export(a) => export(a),
    }
}

fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => {
                if f.abs() >= 1000.0 || f == f.trunc() {
                    format!("{f:.0}")
                } else {
                    format!("{f:.6}")
                }
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn print_table(rows: &Rows) {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(rows.columns.clone());
    for r in &rows.rows {
        t.add_row(r.iter().map(cell).collect::<Vec<_>>());
    }
    println!("{t}");
}

fn list(a: ListArgs) -> Result<()> {
    let db = ResultsDb::open_existing(&a.results)?;
    let exps = db.experiments()?;
    let runs = db.runs(a.experiment.as_deref())?;
    if a.json {
        let v = serde_json::json!({ "experiments": exps.objects(), "runs": runs.objects() });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_table(&exps);
        print_table(&runs);
    }
    Ok(())
}

fn show(a: ShowArgs) -> Result<()> {
    let db = ResultsDb::open_existing(&a.results)?;
    let run = db.run(a.run)?;
    let Some(row) = run.objects().into_iter().next() else {
        bail!("no run {} in {}", a.run, a.results.display());
    };
    let all = db.results(None, false)?;
    let mut results = all.clone();
    results.rows.retain(|r| {
        all.columns
            .iter()
            .position(|c| c == "run_id")
            .is_some_and(|i| r[i] == serde_json::json!(a.run))
    });
    let metrics = if a.metrics {
        Some(db.metrics(None, Some(a.run))?)
    } else {
        None
    };
    if a.json {
        let mut v = serde_json::json!({ "run": row, "results": results.objects() });
        if let Some(m) = &metrics {
            v["metrics"] = serde_json::json!(m.objects());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    for key in [
        "id",
        "experiment",
        "name",
        "status",
        "started_at",
        "finished_at",
        "wall_s",
        "index_s",
        "overhead_s",
        "error",
        "spidx_version",
        "machine_json",
        "config_json",
        "dataset_json",
    ] {
        if let Some(v) = row.get(key) {
            if !v.is_null() {
                println!("{key:<14} {}", cell(v));
            }
        }
    }
    // Workloads as rows, the columns that hold values.
    let keep: Vec<usize> = (0..results.columns.len())
        .filter(|&i| {
            i >= results
                .columns
                .iter()
                .position(|c| c == "workload")
                .unwrap_or(0)
        })
        .filter(|&i| results.rows.iter().any(|r| !r[i].is_null()))
        .filter(|&i| !["kind", "workload_ordinal"].contains(&results.columns[i].as_str()))
        .collect();
    let narrowed = Rows {
        columns: keep.iter().map(|&i| results.columns[i].clone()).collect(),
        rows: results
            .rows
            .iter()
            .map(|r| keep.iter().map(|&i| r[i].clone()).collect())
            .collect(),
    };
    print_table(&narrowed);
    if let Some(m) = &metrics {
        print_table(m);
    }
    Ok(())
}

fn export(a: ExportArgs) -> Result<()> {
    let db = ResultsDb::open_existing(&a.results)?;
    let rows = if a.metrics {
        db.metrics(a.experiment.as_deref(), None)?
    } else {
        db.results(a.experiment.as_deref(), !a.all)?
    };
    if a.format == Format::Parquet {
        let Some(path) = &a.out else {
            bail!("--format parquet writes a binary file: give it with --out FILE");
        };
        return crate::parquet_export::write(path, &rows.columns, &rows.rows);
    }
    let mut out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    match a.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &rows.objects())?;
            writeln!(out)?;
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            w.write_record(&rows.columns)?;
            for r in &rows.rows {
                w.write_record(r.iter().map(|v| match v {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                }))?;
            }
            w.flush()?;
        }
        Format::Parquet => unreachable!("written above"),
    }
    out.flush()?;
    Ok(())
}
