//! `spidx results list|show|export|merge`: reading the results database that `spidx run` writes,
//! as tables (at most 120 columns wide unless `--wide`), JSON, or CSV/Parquet with plain
//! columns of declared types for analysis elsewhere (see `export_table`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand, ValueEnum};
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
use serde_json::Value;
use spidx::experiment::db::{ResultsDb, Table as Rows};
use spidx::experiment::protocol::MetricKind;
use spidx::spatial::IndexOptions;

use crate::export_table::{self, csv_cell, option_text};
use crate::numfmt::{count, secs};
use crate::results_path::{check_experiment, resolve};
use crate::term;

/// Width every table fits unless `--wide` is given.
pub const TABLE_WIDTH: u16 = 120;

/// `spidx results` subcommands.
#[derive(Subcommand, Debug)]
pub enum ResultsCmd {
    /// List experiments and their runs.
    List(ListArgs),
    /// Show one run: its configuration and every workload's figures.
    Show(ShowArgs),
    /// Export results (one row per run and workload) or every metric (long format).
    Export(ExportArgs),
    /// Merge results databases (e.g. the shards of `spidx run --shard K/N`) into one.
    Merge(MergeArgs),
    /// The runs' inputs by content (dataset, windows files, device, spec, spidx build):
    /// which runs share each version of each input.
    Inputs(InputsArgs),
}

/// Arguments of `spidx results inputs`.
#[derive(Args, Debug)]
pub struct InputsArgs {
    /// Results database (default: the newest `*.db` or `*/results.db` here).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Only this experiment's runs.
    #[arg(long)]
    experiment: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `spidx results merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The databases to merge.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The merged database (created if missing; an existing one is appended to).
    #[arg(long)]
    out: PathBuf,
    /// Print what was merged as JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `spidx results list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Results database (default: the newest `*.db` or `*/results.db` here).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Only this experiment and its runs.
    #[arg(long)]
    experiment: Option<String>,
    /// Every column, full width.
    #[arg(long)]
    wide: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `spidx results show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// Run id (see `spidx results list`).
    run: i64,
    /// Results database (default: the newest `*.db` or `*/results.db` here).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Also every metric of every layer (counters, gauges and settings apart).
    #[arg(long)]
    metrics: bool,
    /// Every column and the full configuration, full width.
    #[arg(long)]
    wide: bool,
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
    /// A Parquet file (needs --out): the declared column types (docs/results.md), nulls
    /// for missing values.
    Parquet,
}

/// Arguments of `spidx results export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Output format.
    #[arg(long, value_enum)]
    format: Format,
    /// Results database (default: the newest `*.db` or `*/results.db` here).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Only this experiment.
    #[arg(long)]
    experiment: Option<String>,
    /// Every metric in long format (experiment, run_id, run, workload, name, kind, value;
    /// kind: counter, gauge or setting) instead of one row of headline figures per run and
    /// workload.
    #[arg(long)]
    metrics: bool,
    /// Every finished run, not only the newest of each configuration.
    #[arg(long)]
    all: bool,
    /// Output file (default: standard output); must be new unless --force.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace --out if it exists.
    #[arg(long)]
    force: bool,
}

pub fn run(cmd: ResultsCmd) -> Result<()> {
    match cmd {
        ResultsCmd::List(a) => list(a),
        ResultsCmd::Show(a) => show(a),
        ResultsCmd::Export(a) => export(a),
        ResultsCmd::Merge(a) => merge(a),
        ResultsCmd::Inputs(a) => inputs(a),
    }
}

/// `spidx results inputs`: every version of every input (role, file, content hash) with
/// the runs that used it; an input with several versions is flagged.
fn inputs(a: InputsArgs) -> Result<()> {
    use spidx::experiment::fingerprint::RunInputs;
    use std::collections::BTreeMap;
    let path = resolve(a.results.as_deref())?;
    let db = ResultsDb::open_existing(&path)?;
    if let Some(e) = &a.experiment {
        check_experiment(&db, &path, e)?;
    }
    let t = db.run_inputs(a.experiment.as_deref())?;
    // (role, path) → hash → (bytes, records, run ids)
    type Versions = BTreeMap<String, (Option<u64>, Option<u64>, Vec<i64>)>;
    let mut by: BTreeMap<(String, String), Versions> = BTreeMap::new();
    let mut unprinted = Vec::new();
    for r in t.objects() {
        let id = r["run_id"].as_i64().unwrap_or_default();
        let items = RunInputs::parse(r["inputs_json"].as_str().unwrap_or_default());
        if items.is_empty() {
            unprinted.push(id);
        }
        for p in items {
            by.entry((p.role, p.path))
                .or_default()
                .entry(p.hash)
                .or_insert((p.bytes, p.records, Vec::new()))
                .2
                .push(id);
        }
    }
    if a.json {
        let list: Vec<Value> = by
            .iter()
            .flat_map(|((role, file), versions)| {
                versions.iter().map(move |(hash, (bytes, records, runs))| {
                    serde_json::json!({
                        "role": role, "path": file, "hash": hash, "bytes": bytes,
                        "records": records, "runs": runs, "versions_of_this_input": versions.len(),
                    })
                })
            })
            .collect();
        let v = serde_json::json!({"inputs": list, "runs_without_fingerprints": unprinted});
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut table = new_table(
        ["input", "file", "content (xxh3)", "size", "records", "runs"]
            .map(String::from)
            .to_vec(),
        false,
    );
    let mut mixed = Vec::new();
    for ((role, file), versions) in &by {
        if versions.len() > 1 {
            mixed.push(format!("{role} {file}"));
        }
        for (hash, (bytes, records, runs)) in versions {
            let flag = if versions.len() > 1 { " (!)" } else { "" };
            table.add_row(vec![
                format!("{role}{flag}"),
                file.clone(),
                hash.chars().take(12).collect(),
                bytes.map(spidx::units::format_size).unwrap_or_default(),
                records.map(|n| count(n as f64)).unwrap_or_default(),
                id_ranges(runs),
            ]);
        }
    }
    println!("{table}");
    for m in mixed {
        println!(
            "(!) {m}: runs over different contents of one input; their figures do not compare"
        );
    }
    if !unprinted.is_empty() {
        println!(
            "runs {} were recorded before inputs were fingerprinted",
            id_ranges(&unprinted)
        );
    }
    Ok(())
}

/// `1, 2, 3, 5` → `1–3, 5`.
fn id_ranges(ids: &[i64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}–{}", ids[i], ids[j])
        } else {
            ids[i].to_string()
        });
        i = j + 1;
    }
    out.join(", ")
}

fn merge(a: MergeArgs) -> Result<()> {
    let r = spidx::experiment::db::merge(&a.out, &a.inputs)?;
    if a.json {
        let v = serde_json::json!({
            "out": a.out.display().to_string(),
            "inputs": a.inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            "experiments_added": r.experiments_added,
            "finished": r.finished,
            "failed": r.failed,
            "duplicates": r.duplicates,
            "unfinished": r.unfinished,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "merged {} databases into {}: {} finished and {} failed runs copied, {} new experiments",
        a.inputs.len(),
        term::safe(&spidx::experiment::db::Location::of(&a.out).display()),
        r.finished,
        r.failed,
        r.experiments_added
    );
    if r.duplicates > 0 {
        println!(
            "{} finished runs were already present (same experiment and run key) and were not copied again",
            r.duplicates
        );
    }
    if r.unfinished > 0 {
        println!(
            "{} runs were still marked running (interrupted, or in progress) and were left out; finish them with `spidx run SPEC --resume` on their database and merge again",
            r.unfinished
        );
    }
    Ok(())
}

/// A table that fits [`TABLE_WIDTH`] columns (cells wrap) unless `wide`.
pub fn new_table(header: Vec<String>, wide: bool) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header);
    if wide {
        t.set_content_arrangement(ContentArrangement::Disabled);
    } else {
        t.set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(TABLE_WIDTH);
    }
    t
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A table cell of text from the database: escaped, masked and cut ([`term::cell`]).
fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => term::cell(s),
        other => text(other),
    }
}

/// `2026-11-23T09:01:02.123Z` → `2026-11-23 09:01:02`.
fn timestamp(v: &Value) -> String {
    let s = text(v);
    s.get(..19).map_or(s.clone(), |t| t.replace('T', " "))
}

fn seconds(v: &Value) -> String {
    v.as_f64().map(secs).unwrap_or_default()
}

fn list(a: ListArgs) -> Result<()> {
    let path = resolve(a.results.as_deref())?;
    let db = ResultsDb::open_existing(&path)?;
    if let Some(e) = &a.experiment {
        check_experiment(&db, &path, e)?;
    }
    let mut exps = db.experiments()?;
    if let Some(e) = &a.experiment {
        let i = exps.columns.iter().position(|c| c == "name");
        exps.rows
            .retain(|r| i.is_some_and(|i| r[i].as_str() == Some(e)));
    }
    let runs = db.runs(a.experiment.as_deref())?;
    if a.json {
        let v = serde_json::json!({ "experiments": exps.objects(), "runs": runs.objects() });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if a.wide {
        print_raw(&exps);
        print_raw(&runs);
        return Ok(());
    }
    let mut t = new_table(
        [
            "id",
            "experiment",
            "spec",
            "fingerprint",
            "created (UTC)",
            "runs",
            "finished",
            "failed",
        ]
        .map(String::from)
        .to_vec(),
        false,
    );
    for e in exps.objects() {
        t.add_row(vec![
            text(&e["id"]),
            cell(&e["name"]),
            cell(&e["spec_path"]),
            term::cell(&text(&e["spec_hash"]).chars().take(12).collect::<String>()),
            term::cell(&timestamp(&e["created_at"])),
            text(&e["runs"]),
            text(&e["finished"]),
            text(&e["failed"]),
        ]);
    }
    println!("{t}");
    let mut t = new_table(
        [
            "run",
            "experiment",
            "name",
            "status",
            "started (UTC)",
            "wall",
            "in index",
            "error",
        ]
        .map(String::from)
        .to_vec(),
        false,
    );
    for r in runs.objects() {
        t.add_row(vec![
            text(&r["id"]),
            cell(&r["experiment"]),
            cell(&r["name"]),
            cell(&r["status"]),
            term::cell(&timestamp(&r["started_at"])),
            seconds(&r["wall_s"]),
            seconds(&r["index_s"]),
            cell(&r["error"]),
        ]);
    }
    println!("{t}");
    println!(
        "wall: wall-clock time of the whole run; in index: wall time inside index and device calls"
    );
    println!("the workloads' own times (modelled on simulated devices): spidx results show RUN");
    Ok(())
}

/// Every column of `rows`, full width (text escaped and masked; cut only past
/// [`term::WIDE_CELL_CHARS`]).
fn print_raw(rows: &Rows) {
    let header = rows.columns.iter().map(|c| term::wide_cell(c)).collect();
    let mut t = new_table(header, true);
    for r in &rows.rows {
        t.add_row(
            r.iter()
                .map(|v| term::wide_cell(&csv_cell(v)))
                .collect::<Vec<_>>(),
        );
    }
    println!("{t}");
}

/// The headline figures `show` prints, in order: (column, label, is a time).
const FIGURES: [(&str, &str, bool); 26] = [
    ("elapsed_s", "elapsed", true),
    ("cpu_s", "CPU", true),
    ("device_s", "device time", true),
    ("filter_s", "filter", true),
    ("refinement_s", "refinement", true),
    ("elapsed_min_s", "per query: min", true),
    ("elapsed_median_s", "per query: median", true),
    ("elapsed_max_s", "per query: max", true),
    ("rep_median_s", "repetitions: median", true),
    ("rep_sd_s", "repetitions: σ", true),
    ("rep_ci95_low_s", "95 % interval: low", true),
    ("rep_ci95_high_s", "95 % interval: high", true),
    ("queries", "queries", false),
    ("repetitions", "repetitions", false),
    ("candidates", "candidates", false),
    ("answers", "answers", false),
    ("reads", "reads", false),
    ("writes", "writes", false),
    ("random_reads", "random reads", false),
    ("random_writes", "random writes", false),
    ("erases", "flash erases", false),
    ("write_amplification", "write amplification", false),
    ("buffer_hits", "page buffer hits", false),
    ("splits", "splits", false),
    ("height", "tree height", false),
    ("nodes", "tree nodes", false),
];

fn show(a: ShowArgs) -> Result<()> {
    let path = resolve(a.results.as_deref())?;
    let db = ResultsDb::open_existing(&path)?;
    let run = db.run(a.run)?;
    let Some(row) = run.objects().into_iter().next() else {
        bail!("no run {} in {}", a.run, path.display());
    };
    let all = db.results(None, false)?;
    let mut results = all.clone();
    let id_col = all.columns.iter().position(|c| c == "run_id");
    results
        .rows
        .retain(|r| id_col.is_some_and(|i| r[i] == serde_json::json!(a.run)));
    let metrics = if a.metrics {
        Some(db.metrics(None, Some(a.run))?)
    } else {
        None
    };
    if a.json {
        // Counts as integers: each column of its declared export type.
        let typed: Vec<serde_json::Map<String, Value>> = results
            .objects()
            .into_iter()
            .map(|o| {
                o.into_iter()
                    .map(
                        |(k, v)| match spidx::experiment::db::export::column_type(&k) {
                            Some(ty @ spidx::experiment::db::export::ColumnType::Int) => {
                                (k, spidx::experiment::db::export::typed(v, ty))
                            }
                            _ => (k, v),
                        },
                    )
                    .collect()
            })
            .collect();
        let mut v = serde_json::json!({ "run": row, "results": typed });
        if let Some(m) = &metrics {
            v["metrics"] = serde_json::json!(m.objects());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let simulated = row
        .get("config_json")
        .and_then(Value::as_str)
        .and_then(|c| serde_json::from_str::<IndexOptions>(c).ok())
        .is_none_or(|o| o.device.is_simulated());
    let clock = if simulated { "modelled" } else { "wall" };
    let mut keys = vec![
        ("run", text(&row["id"])),
        ("experiment", text(&row["experiment"])),
        ("name", text(&row["name"])),
        ("status", text(&row["status"])),
        ("index", text(&row["index_label"])),
        ("store", option_text(&row["store"])),
        (
            "page size",
            row["page_size"]
                .as_u64()
                .map(spidx::units::format_size)
                .unwrap_or_default(),
        ),
        ("occupancy", option_text(&row["occupancy"])),
        ("layout", option_text(&row["layout"])),
        ("buffer", text(&row["buffer"])),
        (
            "device",
            format!("{} ({clock} times)", text(&row["device"])),
        ),
        (
            "objects",
            row["objects"].as_f64().map(count).unwrap_or_default(),
        ),
        ("started (UTC)", timestamp(&row["started_at"])),
        ("finished (UTC)", timestamp(&row["finished_at"])),
        ("wall", seconds(&row["wall_s"])),
        ("in index (wall)", seconds(&row["index_s"])),
        ("error", text(&row["error"])),
        ("spidx", text(&row["spidx_version"])),
        ("machine", option_text(&row["machine_json"])),
        ("dataset", option_text(&row["dataset_json"])),
    ];
    if a.wide {
        keys.push(("config", text(&row["config_json"])));
    }
    for (k, v) in keys {
        if !v.is_empty() {
            // Cut (a crafted name of megabytes is not printed whole), longer with --wide.
            let v = if a.wide {
                term::wide_cell(&v)
            } else {
                term::cell(&v)
            };
            print_wrapped(k, &v, a.wide);
        }
    }
    if !a.wide {
        println!(
            "{:<16} (the full configuration: --wide or --json)",
            "config"
        );
    }
    if a.wide {
        print_raw(&results);
    } else {
        print_figures(&results, clock);
    }
    if let Some(m) = &metrics {
        print_metrics(m, a.wide);
    }
    Ok(())
}

/// Every metric of a run, counters, gauges and settings in tables of their own (each:
/// workload, name, value).
fn print_metrics(m: &Rows, wide: bool) {
    let col = |name: &str| m.columns.iter().position(|c| c == name);
    let (Some(w), Some(n), Some(k), Some(v)) =
        (col("workload"), col("name"), col("kind"), col("value"))
    else {
        return;
    };
    for (kind, title) in [
        (
            MetricKind::Counter,
            "counters (summed over queries, averaged over repetitions)",
        ),
        (
            MetricKind::Gauge,
            "gauges (levels and ratios: the latest value)",
        ),
        (MetricKind::Setting, "settings (configured values)"),
    ] {
        let rows: Vec<&Vec<Value>> = m
            .rows
            .iter()
            .filter(|r| r[k].as_str() == Some(kind.as_str()))
            .collect();
        if rows.is_empty() {
            continue;
        }
        println!("{title}:");
        let mut t = new_table(
            ["workload", "name", "value"].map(String::from).to_vec(),
            wide,
        );
        for r in rows {
            t.add_row(vec![
                term::cell(&csv_cell(&r[w])),
                term::cell(&csv_cell(&r[n])),
                term::cell(&csv_cell(&r[v])),
            ]);
        }
        println!("{t}");
    }
}

/// `key   value`, the value wrapped at spaces to fit [`TABLE_WIDTH`] (unless `wide`) with
/// continuation lines indented under it.
fn print_wrapped(key: &str, value: &str, wide: bool) {
    let indent = 17;
    let room = TABLE_WIDTH as usize - indent;
    let mut line = String::new();
    let mut first = true;
    let emit = |line: &str, first: &mut bool| {
        if *first {
            println!("{key:<16} {line}");
            *first = false;
        } else {
            println!("{:indent$}{line}", "");
        }
    };
    for word in value.split(' ') {
        if !wide && !line.is_empty() && line.chars().count() + 1 + word.chars().count() > room {
            emit(&line, &mut first);
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    emit(&line, &mut first);
}

/// The workloads' headline figures, one column per workload, in tables that each fit
/// [`TABLE_WIDTH`].
fn print_figures(results: &Rows, clock: &str) {
    let objs = results.objects();
    let label_w = 24;
    let mut start = 0;
    while start < objs.len() {
        let mut width = label_w + 4;
        let mut end = start;
        while end < objs.len() {
            let w = cell(&objs[end]["workload"]).chars().count().max(12) + 3;
            if end > start && width + w > TABLE_WIDTH as usize {
                break;
            }
            width += w;
            end += 1;
        }
        let mut header = vec!["figure".to_string()];
        header.extend(objs[start..end].iter().map(|o| cell(&o["workload"])));
        let mut t = new_table(header, false);
        for (col, label, time) in FIGURES {
            let cells: Vec<String> = objs[start..end]
                .iter()
                .map(|o| match o.get(col).and_then(Value::as_f64) {
                    Some(v) if time => secs(v),
                    Some(v) if col == "write_amplification" => format!("{v:.2}"),
                    Some(v) => count(v),
                    None => String::new(),
                })
                .collect();
            if cells.iter().all(String::is_empty) {
                continue;
            }
            let label = if col == "cpu_s" {
                format!("{label} (process)")
            } else if time {
                format!("{label} ({clock})")
            } else {
                label.to_string()
            };
            let mut row = vec![label];
            row.extend(cells);
            t.add_row(row);
        }
        println!("{t}");
        start = end;
    }
    println!("query workloads: sums over queries of each query's mean over its repetitions;");
    println!("per query: the minimum, median and maximum of those means;");
    println!("repetitions: the workload's total in each repetition (every query once): median, σ");
    println!("(sample standard deviation) and the 95 % t-interval of their mean (the sum above)");
}

fn export(a: ExportArgs) -> Result<()> {
    let path = resolve(a.results.as_deref())?;
    let db = ResultsDb::open_existing(&path)?;
    if let Some(e) = &a.experiment {
        check_experiment(&db, &path, e)?;
    }
    let columns = if a.metrics {
        export_table::metric_columns()
    } else {
        export_table::results_columns()
    };
    if a.format == Format::Parquet && a.out.is_none() {
        bail!("--format parquet writes a binary file: give it with --out FILE");
    }
    // A file this export creates is removed again if the export fails part way.
    let created = a
        .out
        .as_ref()
        .filter(|p| std::fs::symlink_metadata(p).is_err());
    let result = export_to(&a, &db, &columns);
    if let (Err(_), Some(p)) = (&result, created) {
        let _ = std::fs::remove_file(p);
    }
    result
}

/// Streams the table `a` asks for to its output, row by row (see [`export_table`]).
fn export_to(a: &ExportArgs, db: &ResultsDb, columns: &export_table::Columns) -> Result<()> {
    use export_table::RowSink;
    // Data written to a file or a pipe stays byte for byte; on a terminal, CSV's text cells
    // are escaped as every other listing is, so a crafted run name cannot drive the terminal
    // (JSON escapes control characters itself).
    let to_terminal = a.out.is_none() && std::io::stdout().is_terminal();
    let mut sink: Box<dyn RowSink> = match (&a.format, &a.out) {
        (Format::Parquet, Some(p)) => Box::new(crate::parquet_export::ParquetSink::create(
            p, a.force, columns,
        )?),
        (Format::Parquet, None) => unreachable!("refused by the caller"),
        (format, out) => {
            let out: Box<dyn Write> = match out {
                Some(p) => Box::new(std::io::BufWriter::new(crate::own::create_out(p, a.force)?)),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            if *format == Format::Json {
                Box::new(export_table::JsonSink::new(out, columns))
            } else {
                Box::new(export_table::CsvSink::new(out, columns, to_terminal)?)
            }
        }
    };
    if a.metrics {
        export_table::metrics_each(db, a.experiment.as_deref(), |r| sink.row(r))?;
    } else {
        export_table::results_each(db, a.experiment.as_deref(), !a.all, |r| sink.row(r))?;
    }
    sink.finish()
}
