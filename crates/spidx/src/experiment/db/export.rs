//! The results export schema: one table of declared columns, each with a type fixed by its
//! name, whatever the values of a given database (`spidx results export` as CSV, JSON or
//! Parquet, and `spidx.results()` in Python, all come from [`results_table`]).
//!
//! Why declared and not inferred: a column whose type followed its values (an occupancy of
//! 1 an integer, of 0.9 a double; a count column that is all null a double) makes two
//! exports of different experiments impossible to read together. Here counts are always
//! 64-bit integers (null when not recorded), times and ratios always doubles, timestamps
//! always UTC instants, options always text.
//!
//! Every row also says where its figures come from: the time basis (`modelled` on a
//! simulated device, `wall` on a real one), the machine, the spidx version and the git
//! commit of the build that ran it.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::{ResultsDb, Table};
use crate::spatial::IndexOptions;
use crate::Result;

/// The type of an export column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A signed 64-bit integer (counts, ids, sizes in bytes).
    Int,
    /// A 64-bit float (times in seconds, ratios).
    Real,
    /// UTF-8 text (names, options).
    Text,
    /// An instant in UTC, millisecond precision; ISO 8601 text (`2026-11-23T09:50:49.098Z`)
    /// in CSV and JSON.
    Timestamp,
}

impl ColumnType {
    /// The name used in docs and in the schema handed to Python: `int64`, `float64`,
    /// `string`, `timestamp`.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Int => "int64",
            ColumnType::Real => "float64",
            ColumnType::Text => "string",
            ColumnType::Timestamp => "timestamp",
        }
    }
}

/// One declared column: its name, type and meaning.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Column name.
    pub name: &'static str,
    /// Its type, in every export.
    pub ty: ColumnType,
    /// What it holds (docs/results.md lists the same).
    pub doc: &'static str,
}

const fn col(name: &'static str, ty: ColumnType, doc: &'static str) -> Column {
    Column { name, ty, doc }
}

use ColumnType::{Int, Real, Text, Timestamp};

/// Version of the export schema; bumped when a column is added, removed or retyped.
pub const EXPORT_SCHEMA_VERSION: i64 = 2;

/// The columns of the export, in order.
pub const COLUMNS: &[Column] = &[
    col("experiment", Text, "experiment name"),
    col("experiment_id", Int, "experiment id in the database"),
    col("run_id", Int, "run id in the database"),
    col("run_key", Text, "the configuration's fingerprint"),
    col("ordinal", Int, "the run's position in the spec's matrix"),
    col("run", Text, "the run's name (index · store · page size · device ...)"),
    col("index_label", Text, "index and its options"),
    col("store", Text, "node store and all its options, as key=value text"),
    col("store_kind", Text, "node store: direct, fast, efind, rftl, lcr"),
    col("store_write_buffer", Int, "the store's write buffer, bytes (eFIND: its whole buffer); null for direct"),
    col("store_flushing_unit", Int, "nodes per flushing unit, where the store has one"),
    col("store_flush_policy", Text, "flushing policy, where the store has one"),
    col("page_size", Int, "node page size, bytes"),
    col("occupancy_leaf_min", Real, "minimum fill of leaves (share of max entries)"),
    col("occupancy_leaf_max", Real, "maximum fill of leaves (share of what fits)"),
    col("occupancy_internal_min", Real, "minimum fill of internal nodes"),
    col("occupancy_internal_max", Real, "maximum fill of internal nodes"),
    col("layout", Text, "node page layout: checked or seed"),
    col("buffer", Text, "page buffer (policy and size) or none"),
    col("device", Text, "device label"),
    col("time_basis", Text, "modelled (simulated device: modelled device time + the host profile's price of the counted work) or wall (real device)"),
    col("machine", Text, "host name of the machine that ran it"),
    col("machine_cpu", Text, "its CPU model"),
    col("spidx_version", Text, "spidx version that ran it"),
    col("git_commit", Text, "git commit spidx was built from (unknown when built outside a git checkout or before it was recorded)"),
    col("inputs_hash", Text, "fingerprint of the run's inputs by content (dataset, windows files, device); runs with the same one ran over the same data (null: recorded before inputs were fingerprinted)"),
    col("status", Text, "run status (finished)"),
    col("started_at", Timestamp, "run start, UTC"),
    col("finished_at", Timestamp, "run end, UTC"),
    col("workload", Text, "workload name"),
    col("kind", Text, "workload kind: construction, range, point, knn, ..."),
    col("workload_ordinal", Int, "workload position in the spec"),
    col("queries", Int, "queries in the workload"),
    col("repetitions", Int, "measured repetitions of each query"),
    col("elapsed_s", Real, "elapsed time, s (see time_basis)"),
    col("cpu_s", Real, "process CPU time, s"),
    col("device_s", Real, "device time, s (modelled or measured)"),
    col("filter_s", Real, "filter step, s"),
    col("refinement_s", Real, "refinement step, s"),
    col("elapsed_min_s", Real, "fastest query's mean, s"),
    col("elapsed_median_s", Real, "median query's mean, s"),
    col("elapsed_max_s", Real, "slowest query's mean, s"),
    col("rep_median_s", Real, "median over repetitions of the workload's total (every query once), s (null for one repetition)"),
    col("rep_sd_s", Real, "sample standard deviation of those totals, s (null for one repetition)"),
    col("rep_ci95_low_s", Real, "95 % t-interval of the mean total (= elapsed_s), lower end, s"),
    col("rep_ci95_high_s", Real, "95 % t-interval of the mean total, upper end, s"),
    col("reads", Int, "device page reads"),
    col("writes", Int, "device page writes"),
    col("seq_reads", Int, "sequential reads"),
    col("random_reads", Int, "random reads"),
    col("seq_writes", Int, "sequential writes"),
    col("random_writes", Int, "random writes"),
    col("flash_reads", Int, "flash page reads (simulated flash)"),
    col("flash_writes", Int, "flash page programs"),
    col("erases", Int, "flash block erases"),
    col("gc_copies", Int, "pages copied by garbage collection"),
    col("write_amplification", Real, "flash writes / host writes"),
    col("buffer_hits", Int, "page buffer hits"),
    col("buffer_faults", Int, "page buffer faults"),
    col("splits", Int, "node splits"),
    col("reinsertions", Int, "R*-tree forced reinsertions"),
    col("candidates", Int, "filter-step candidates"),
    col("answers", Int, "query answers"),
    col("height", Int, "tree height"),
    col("nodes", Int, "tree nodes"),
];

/// The type of export column `name`, if it is one.
pub fn column_type(name: &str) -> Option<ColumnType> {
    COLUMNS.iter().find(|c| c.name == name).map(|c| c.ty)
}

static GIT_COMMIT: OnceLock<&'static str> = OnceLock::new();

/// Records the git commit of the running program's build. The programs (the CLI, the
/// Python module) embed it at build time with their build scripts (`git rev-parse HEAD`)
/// and set it once at start; the library itself has no build script, so that a new commit
/// does not make every dependent crate compile again. A later call is ignored.
pub fn set_git_commit(commit: &'static str) {
    let _ = GIT_COMMIT.set(commit);
}

/// The git commit set by [`set_git_commit`], or `unknown`.
pub fn git_commit() -> &'static str {
    GIT_COMMIT.get().copied().unwrap_or("unknown")
}

/// The build's spidx version and git commit, as recorded in a run's `spidx_version`:
/// `0.1.0+<commit>` (semver build metadata), or `0.1.0` when the commit is unknown.
pub(crate) fn recorded_version() -> String {
    match git_commit() {
        "unknown" => crate::VERSION.to_string(),
        c => format!("{}+{c}", crate::VERSION),
    }
}

/// Splits a recorded `spidx_version` into the version and the commit (`unknown` when the
/// run recorded none).
pub fn split_version(recorded: &str) -> (String, String) {
    match recorded.split_once('+') {
        Some((v, c)) if !c.is_empty() => (v.to_string(), c.to_string()),
        _ => (recorded.to_string(), "unknown".to_string()),
    }
}

/// The export columns whose values come from the run alone (its options parsed, its
/// provenance), not from the workload's figures: [`run_values`] derives them from the run's
/// row, for the export and for the `run_columns` table behind the typed view
/// (see [`super::typed`]).
pub const RUN_COLUMNS: &[&str] = &[
    "store",
    "store_kind",
    "store_write_buffer",
    "store_flushing_unit",
    "store_flush_policy",
    "occupancy_leaf_min",
    "occupancy_leaf_max",
    "occupancy_internal_min",
    "occupancy_internal_max",
    "layout",
    "buffer",
    "time_basis",
    "machine",
    "machine_cpu",
    "spidx_version",
    "git_commit",
];

/// The values of [`RUN_COLUMNS`] (in that order, each of its declared type) for the run
/// whose `runs` row is `run` (as the database returns it).
pub(crate) fn run_values(run: &Map<String, Value>) -> Vec<Value> {
    let text = |k: &str| run.get(k).and_then(Value::as_str).unwrap_or_default();
    let raw = |k: &str| run.get(k).cloned().unwrap_or(Value::Null);
    let store = parse_json(&raw("store"));
    let occupancy = parse_json(&raw("occupancy"));
    let machine: Map<String, Value> =
        serde_json::from_str(text("machine_json")).unwrap_or_default();
    let field = |k: &str| match machine.get(k) {
        Some(Value::String(s)) if !s.is_empty() => Value::from(s.as_str()),
        _ => Value::Null,
    };
    let recorded = text("spidx_version");
    let (version, commit) = split_version(recorded);
    RUN_COLUMNS
        .iter()
        .map(|name| {
            let v = match *name {
                "store" => Value::from(option_text(&store)),
                "store_kind" => match &store {
                    Value::Object(m) => m.get("kind").cloned().unwrap_or(Value::Null),
                    Value::String(s) => Value::from(s.as_str()),
                    _ => Value::Null,
                },
                "store_write_buffer" => {
                    let m = store.as_object();
                    let v = m.and_then(|m| m.get("write_buffer").or_else(|| m.get("buffer")));
                    match v {
                        Some(Value::String(t)) => {
                            crate::units::parse_size("size", t).map_or(Value::Null, Value::from)
                        }
                        Some(v) => v.clone(),
                        None => Value::Null,
                    }
                }
                "store_flushing_unit" | "store_flush_policy" => store
                    .get(&name["store_".len()..])
                    .cloned()
                    .unwrap_or(Value::Null),
                "layout" | "buffer" => match parse_json(&raw(name)) {
                    Value::Null => Value::Null,
                    v => Value::from(option_text(&v)),
                },
                n if n.starts_with("occupancy_") => occupancy
                    .get(&n["occupancy_".len()..])
                    .cloned()
                    .unwrap_or(Value::Null),
                "time_basis" => match serde_json::from_str::<IndexOptions>(text("config_json")) {
                    Ok(o) if o.device.is_simulated() => Value::from("modelled"),
                    Ok(_) => Value::from("wall"),
                    Err(_) => Value::Null,
                },
                "machine" => field("host"),
                "machine_cpu" => field("cpu"),
                "spidx_version" if recorded.is_empty() => Value::Null,
                "spidx_version" => Value::from(version.as_str()),
                "git_commit" => Value::from(commit.as_str()),
                other => unreachable!("{other} is not a run column"),
            };
            typed(
                v,
                column_type(name).expect("a run column is an export column"),
            )
        })
        .collect()
}

/// The results of finished runs (of one experiment, or all; the newest run of each
/// configuration only when `latest`), one row per run and workload, in the declared
/// [`COLUMNS`] with values of their declared types.
pub fn results_table(db: &ResultsDb, experiment: Option<&str>, latest: bool) -> Result<Table> {
    let raw = db.results(experiment, latest)?;
    let at = |name: &str| raw.columns.iter().position(|c| c == name);
    let run_col = at("run_id");
    let mut runs: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    let mut rows = Vec::with_capacity(raw.rows.len());
    for r in &raw.rows {
        let run = run_col.and_then(|i| r[i].as_i64()).unwrap_or(-1);
        if let std::collections::btree_map::Entry::Vacant(slot) = runs.entry(run) {
            let row = db
                .run(run)?
                .objects()
                .into_iter()
                .next()
                .unwrap_or_default();
            slot.insert(run_values(&row));
        }
        let of_run = &runs[&run];
        let row = COLUMNS
            .iter()
            .map(|c| match RUN_COLUMNS.iter().position(|n| *n == c.name) {
                Some(i) => of_run[i].clone(),
                None => typed(
                    at(c.name).map(|i| r[i].clone()).unwrap_or(Value::Null),
                    c.ty,
                ),
            })
            .collect();
        rows.push(row);
    }
    Ok(Table {
        columns: COLUMNS.iter().map(|c| c.name.to_string()).collect(),
        rows,
    })
}

/// `v` as a value of type `ty`: integers from integral numbers (a non-integral count is
/// rounded, which a count never is), floats from any number, text from anything; null
/// stays null, and a value that cannot be one of `ty` becomes null.
pub fn typed(v: Value, ty: ColumnType) -> Value {
    match (ty, v) {
        (_, Value::Null) => Value::Null,
        (Int, Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(f)) if f.is_finite() && f.abs() < 9.2e18 => Value::from(f.round() as i64),
            _ => Value::Null,
        },
        (Real, Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        (Int | Real, Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .map_or(Value::Null, |f| typed(Value::from(f), ty)),
        (Text | Timestamp, Value::String(s)) => Value::String(s),
        (Text, other) => Value::String(option_text(&other)),
        _ => Value::Null,
    }
}

/// A JSON text cell parsed (a plain string when it is not JSON).
fn parse_json(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// Nested keys joined with `_`; arrays as JSON text.
fn flatten(m: &Map<String, Value>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (k, v) in m {
        match v {
            Value::Object(inner) => {
                for (k2, v2) in flatten(inner) {
                    out.insert(format!("{k}_{k2}"), v2);
                }
            }
            Value::Array(_) => {
                out.insert(k.clone(), Value::String(v.to_string()));
            }
            other => {
                out.insert(k.clone(), other.clone());
            }
        }
    }
    out
}

/// A plain cell as text: numbers without a trailing `.0` when integral, strings as they
/// are, nulls empty.
pub fn cell_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9e15 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// An option value for people and for the `store` column: `direct`,
/// `kind=fast write_buffer=524288` (keys sorted, nested keys joined with `_`, nulls left out).
pub fn option_text(v: &Value) -> String {
    match parse_json(v) {
        Value::Object(m) => flatten(&m)
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k}={}", cell_text(&v)))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => cell_text(&other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_take_the_declared_type() {
        assert_eq!(typed(json!(4512.0), Int), json!(4512));
        assert!(typed(json!(4512.0), Int).is_i64());
        assert!(
            typed(json!(1), Real).is_f64(),
            "an integral ratio stays a float"
        );
        assert_eq!(typed(json!(0.9), Real), json!(0.9));
        assert_eq!(typed(Value::Null, Int), Value::Null);
        assert_eq!(typed(json!("12"), Int), json!(12));
        assert_eq!(typed(json!("x"), Int), Value::Null);
        assert_eq!(typed(json!({"kind": "direct"}), Text), json!("kind=direct"));
        assert_eq!(
            typed(json!("2026-11-23T09:50:49.098Z"), Timestamp),
            json!("2026-11-23T09:50:49.098Z")
        );
    }

    #[test]
    fn names_are_unique_and_counts_are_integers() {
        let mut names: Vec<&str> = COLUMNS.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), COLUMNS.len());
        for c in COLUMNS {
            if c.name.ends_with("_s") || c.name.starts_with("occupancy_") {
                assert_eq!(c.ty, Real, "{}", c.name);
            }
            if ["reads", "writes", "erases", "nodes", "queries"].contains(&c.name) {
                assert_eq!(c.ty, Int, "{}", c.name);
            }
        }
        assert_eq!(column_type("started_at"), Some(Timestamp));
        assert_eq!(column_type("nope"), None);
    }

    #[test]
    fn versions_carry_the_commit() {
        assert_eq!(
            split_version("0.1.0+0123abc"),
            ("0.1.0".to_string(), "0123abc".to_string())
        );
        assert_eq!(
            split_version("0.1.0"),
            ("0.1.0".to_string(), "unknown".to_string())
        );
        let (v, c) = split_version(&recorded_version());
        assert_eq!(v, crate::VERSION);
        assert_eq!(c, git_commit());
    }

    #[test]
    fn options_as_text() {
        assert_eq!(
            option_text(&json!(r#"{"kind":"fast","write_buffer":524288}"#)),
            "kind=fast write_buffer=524288"
        );
        assert_eq!(option_text(&json!(r#""checked""#)), "checked");
        assert_eq!(cell_text(&json!(4512.0)), "4512");
    }
}
