//! The results database (schema in `docs/results.md`): experiments, runs, per run and
//! workload the headline figures as typed columns (`results`) and every statistic of every
//! layer in long format with its kind (`metrics`). Two backends with the same schema: one
//! SQLite file (the default, zero setup) or a PostgreSQL database (`postgres://…`, shared
//! by many workers on many machines). Runs are appended, never overwritten: a run is
//! recorded as `running` when it starts and completed with all its figures in one
//! transaction when it ends, so an interrupted invocation loses nothing already recorded
//! and `--resume` knows what is done.
//!
//! * [`backend`]: the two connections behind one interface (dialect, parameters, rows);
//! * [`schema`]: the tables, migrations, and the checks on open (integrity, version);
//! * [`claim`]: runs are claimed under a transaction with a lease, so concurrent
//!   `--resume`s split the matrix instead of each running all of it;
//! * [`merge`]: several databases (e.g. the shards of one matrix) into one;
//! * [`typed`]: the view `typed_results`, the export's typed table inside the database.

pub(crate) mod backend;
mod claim;
pub mod export;
pub(crate) mod merge;
#[cfg(any(test, feature = "test-fixtures"))]
pub mod pg_server;
#[cfg(test)]
mod pg_tests;
pub(crate) mod schema;
mod secrets;
pub(crate) mod typed;

pub use backend::Location;
pub use claim::{Claim, Heartbeat, Owner, LEASE};
pub use merge::{merge, MergeReport};
pub use schema::SCHEMA_VERSION;
pub use secrets::{mask_secrets, MASK};

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use backend::{Conn, DbResult, Param};
use rusqlite::Connection;

use super::fingerprint::RunInputs;
use super::matrix::RunConfig;
use super::protocol;
use super::runner::RunResult;
use crate::{Error, Result};

/// Typed columns of `results` and the metric each one copies (NULL when absent).
const COLUMNS: [(&str, &str); 33] = [
    ("queries", "queries"),
    ("repetitions", "settings.repetitions"),
    ("elapsed_s", "elapsed_s"),
    ("cpu_s", "cpu_s"),
    ("device_s", "device_s"),
    ("filter_s", "filter.elapsed_s"),
    ("refinement_s", "refinement.elapsed_s"),
    ("elapsed_min_s", "gauges.elapsed_s_min"),
    ("elapsed_median_s", "gauges.elapsed_s_median"),
    ("elapsed_max_s", "gauges.elapsed_s_max"),
    ("reads", "device.host.read_ops"),
    ("writes", "device.host.write_ops"),
    ("seq_reads", "device.host.seq_reads"),
    ("random_reads", "device.host.random_reads"),
    ("seq_writes", "device.host.seq_writes"),
    ("random_writes", "device.host.random_writes"),
    ("flash_reads", "device.flash.flash_reads"),
    ("flash_writes", "device.flash.flash_writes"),
    ("erases", "device.flash.erases"),
    ("gc_copies", "device.flash.gc_copies"),
    (
        "write_amplification",
        "device.flash.gauges.write_amplification",
    ),
    ("buffer_hits", "store.cache.hits"),
    ("buffer_faults", "store.cache.faults"),
    ("splits", "tree.splits"),
    ("reinsertions", "tree.forced_reinserts"),
    ("candidates", "candidates"),
    ("answers", "results"),
    ("height", "shape.gauges.height"),
    ("nodes", "shape.gauges.nodes"),
    ("rep_median_s", "gauges.elapsed_s_rep_median"),
    ("rep_sd_s", "gauges.elapsed_s_rep_sd"),
    ("rep_ci95_low_s", "gauges.elapsed_s_rep_ci95_low"),
    ("rep_ci95_high_s", "gauges.elapsed_s_rep_ci95_high"),
];

/// Metric rows per `INSERT` statement (5 parameters each).
const METRIC_ROWS_PER_INSERT: usize = 100;

/// Rows read back: column names and JSON values.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, one value per column.
    pub rows: Vec<Vec<serde_json::Value>>,
}

impl Table {
    /// The rows as JSON objects.
    pub fn objects(&self) -> Vec<serde_json::Map<String, serde_json::Value>> {
        self.rows
            .iter()
            .map(|r| {
                self.columns
                    .iter()
                    .cloned()
                    .zip(r.iter().cloned())
                    .collect()
            })
            .collect()
    }
}

/// How long an SQLite statement waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open results database.
pub struct ResultsDb {
    conn: RefCell<Conn>,
    /// The `--results` argument as given: a file path or a PostgreSQL URL.
    path: PathBuf,
    /// Whether `metrics` has its `kind` column (schema version 3 on; an older database
    /// opened read-only has not, and kinds are told from the names).
    kinds_stored: bool,
}

/// An error about the results database at `path` (a PostgreSQL URL is named without its
/// password).
pub(crate) fn db_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::invalid(
        format!("results database {}", Location::of(path).display()),
        mask_secrets(&e.to_string()).into_owned(),
    )
}

/// Opens a connection to the database `path` names, without any check (the checks are
/// [`ResultsDb::open`]'s): an SQLite file (created if missing) or a PostgreSQL server.
pub(crate) fn connect(path: &Path) -> Result<Conn> {
    match Location::of(path) {
        Location::File(p) => {
            // SQLite's own message for a missing directory is "unable to open database
            // file"; name the directory instead.
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                if !dir.is_dir() {
                    return Err(db_err(
                        path,
                        format!(
                            "cannot be created: directory {} does not exist (create it first, e.g. `mkdir -p {}`, or give another --results path)",
                            dir.display(),
                            dir.display()
                        ),
                    ));
                }
            }
            let c = Connection::open(&p).map_err(|e| db_err(path, e))?;
            c.busy_timeout(BUSY_TIMEOUT).map_err(|e| db_err(path, e))?;
            Ok(Conn::Sqlite(c))
        }
        Location::Postgres(url) => Conn::postgres(&url).map_err(|e| {
            db_err(
                path,
                format!(
                    "cannot connect to the PostgreSQL server: {e}{}",
                    refused_hint(&url, &e.to_string())
                ),
            )
        }),
    }
}

/// When `message` tells of a refused connection: which server was tried and that nothing
/// listens there (the client's own message, "error connecting to server: Connection
/// refused", names neither).
fn refused_hint(url: &str, message: &str) -> String {
    let refused = message.to_ascii_lowercase().contains("connection refused");
    if !refused {
        return String::new();
    }
    let Ok(config) = url.parse::<postgres::Config>() else {
        return String::new();
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    let ports = config.get_ports();
    let servers: Vec<String> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            format!("{h}:{port}")
        })
        .collect();
    let at = if servers.is_empty() {
        "localhost:5432".to_string()
    } else {
        servers.join(", ")
    };
    format!(" (connection refused: nothing listens at {at}; start the server there or give the URL of a running one)")
}

impl ResultsDb {
    /// Opens (creating if needed) the database at `path` — an SQLite file, or a PostgreSQL
    /// database given as a `postgres://` URL — for appending runs. Refuses a file that is
    /// not SQLite or fails SQLite's `PRAGMA integrity_check`, a database of some other
    /// program, or a `schema_version` this spidx does not know; an older version is
    /// upgraded in place (see [`schema`]).
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = connect(path)?;
        schema::prepare_for_writing(&mut conn, path)?;
        Ok(ResultsDb {
            conn: RefCell::new(conn),
            path: path.to_path_buf(),
            kinds_stored: true,
        })
    }

    /// Opens an existing database read-only (an error if it does not exist, fails its
    /// integrity check, or has an unknown schema version).
    pub fn open_existing(path: &Path) -> Result<Self> {
        let mut conn = match Location::of(path) {
            Location::File(p) => {
                if !p.is_file() {
                    return Err(db_err(path, "does not exist (run `spidx run SPEC` first)"));
                }
                let c = Connection::open_with_flags(&p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                    .map_err(|e| db_err(path, e))?;
                c.busy_timeout(BUSY_TIMEOUT).map_err(|e| db_err(path, e))?;
                Conn::Sqlite(c)
            }
            Location::Postgres(_) => {
                let mut c = connect(path)?;
                c.batch("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                    .map_err(|e| db_err(path, e))?;
                c
            }
        };
        schema::check_for_reading(&mut conn, path)?;
        let kinds_stored = schema::has_metric_kinds(&mut conn).map_err(|e| db_err(path, e))?;
        Ok(ResultsDb {
            conn: RefCell::new(conn),
            path: path.to_path_buf(),
            kinds_stored,
        })
    }

    /// The `--results` argument it was opened with (a file, or a PostgreSQL URL).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where it is, for messages (a URL without its password).
    pub(crate) fn location(&self) -> String {
        Location::of(&self.path).display()
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        db_err(&self.path, e)
    }

    /// Runs `f` on the connection, naming the database in its error.
    fn with<T>(&self, f: impl FnOnce(&mut Conn) -> DbResult<T>) -> Result<T> {
        f(&mut self.conn.borrow_mut()).map_err(|e| self.err(e))
    }

    /// The experiment named `name` with spec fingerprint `hash`, created if new. The spec's
    /// JSON and text are stored with their passwords masked ([`mask_secrets`]).
    pub fn experiment(
        &mut self,
        name: &str,
        hash: &str,
        spec_json: &str,
        spec_text: &str,
        spec_path: &str,
    ) -> Result<i64> {
        self.with(|c| {
            c.execute(
                "INSERT INTO experiments (name, spec_hash, spec_json, spec_text, spec_path, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, @NOW) ON CONFLICT (name, spec_hash) DO NOTHING",
                &[
                    name.into(),
                    hash.into(),
                    mask_secrets(spec_json).as_ref().into(),
                    mask_secrets(spec_text).as_ref().into(),
                    spec_path.into(),
                ],
            )?;
            c.int(
                "SELECT id FROM experiments WHERE name = ?1 AND spec_hash = ?2",
                &[name.into(), hash.into()],
            )
        })
    }

    /// The id of the experiment named `name` with spec fingerprint `hash`, if recorded
    /// (nothing is created: `spidx run --dry-run` reads only).
    pub(crate) fn find_experiment(&self, name: &str, hash: &str) -> Result<Option<i64>> {
        let v = self.with(|c| {
            c.value(
                "SELECT id FROM experiments WHERE name = ?1 AND spec_hash = ?2",
                &[name.into(), hash.into()],
            )
        })?;
        Ok(v.and_then(|v| v.as_i64()))
    }

    /// The newest finished run of each configuration (run key) of experiment `id`: what
    /// `--resume` compares the inputs of now with.
    pub(crate) fn finished_runs(&self, id: i64) -> Result<HashMap<String, Finished>> {
        let t = self.with(|c| {
            c.query(
                "SELECT run_key, inputs_hash, inputs_json, spidx_version, id FROM runs
                 WHERE experiment_id = ?1 AND status = 'finished' ORDER BY id",
                &[id.into()],
            )
        })?;
        let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
        Ok(t.rows
            .into_iter()
            .filter_map(|r| {
                let key = text(&r[0])?;
                Some((
                    key,
                    Finished {
                        inputs_hash: text(&r[1]),
                        inputs_json: text(&r[2]),
                        version: text(&r[3]).unwrap_or_default(),
                        run_id: r[4].as_i64().unwrap_or_default(),
                    },
                ))
            })
            .collect())
    }

    /// Every run's recorded inputs (runs recorded before inputs were fingerprinted have
    /// none): run id, experiment, run name, status, inputs JSON; of one experiment or all.
    pub fn run_inputs(&self, experiment: Option<&str>) -> Result<Table> {
        self.table(
            "SELECT r.id AS run_id, e.name AS experiment, r.name AS run, r.status, r.inputs_hash,
               r.inputs_json
             FROM runs r JOIN experiments e ON e.id = r.experiment_id
             WHERE CAST(?1 AS TEXT) IS NULL OR e.name = ?1 ORDER BY r.id",
            &[experiment.into()],
        )
    }

    /// Records that run `run` of experiment `exp` starts (status `running`, leased to
    /// `inv.owner`, see [`claim`]); returns its id. Used without `--resume`, where every run
    /// of the matrix is run again; [`ResultsDb::claim_next`] is the `--resume` form.
    pub fn start_run(&mut self, exp: i64, run: &RunConfig, inv: &Invocation) -> Result<i64> {
        self.with(|c| insert_run(c, exp, run, inv))
    }

    /// Records everything run `id` measured and marks it finished, in one transaction.
    pub fn finish_run(&mut self, id: i64, r: &RunResult, overhead_s: f64) -> Result<()> {
        self.with(|c| c.transaction(false, |c| record_run(c, id, r, overhead_s)))
    }

    /// Marks run `id` failed with `error` (its passwords masked).
    pub(crate) fn fail_run(&mut self, id: i64, error: &str) -> Result<()> {
        let error = mask_secrets(error);
        self.with(|c| {
            c.execute(
                "UPDATE runs SET status = 'failed', error = ?2, finished_at = @NOW,
                   lease_until = NULL WHERE id = ?1",
                &[id.into(), error.as_ref().into()],
            )
        })?;
        Ok(())
    }

    /// Runs a query and returns its rows.
    fn table(&self, sql: &str, params: &[Param]) -> Result<Table> {
        self.with(|c| c.query(sql, params))
    }

    /// Experiments with their run counts.
    pub fn experiments(&self) -> Result<Table> {
        self.table(
            "SELECT e.id, e.name, e.spec_hash, e.spec_path, e.created_at,
               (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id) AS runs,
               (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'finished') AS finished,
               (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'failed') AS failed
             FROM experiments e ORDER BY e.id",
            &[],
        )
    }

    /// Runs, of one experiment (by name) or all.
    pub fn runs(&self, experiment: Option<&str>) -> Result<Table> {
        self.table(
            "SELECT r.id, e.name AS experiment, r.name, r.status, r.started_at, r.finished_at,
               r.wall_s, r.index_s, r.overhead_s, r.error
             FROM runs r JOIN experiments e ON e.id = r.experiment_id
             WHERE CAST(?1 AS TEXT) IS NULL OR e.name = ?1 ORDER BY r.id",
            &[experiment.into()],
        )
    }

    /// The specs an experiment (by name) was run with, oldest first: path, fingerprint,
    /// the validated spec as JSON and the file's text (passwords masked, also in a
    /// database written before they were masked on the way in).
    pub fn experiment_specs(&self, name: &str) -> Result<Table> {
        let mut t = self.table(
            "SELECT spec_path, spec_hash, spec_json, spec_text FROM experiments WHERE name = ?1 ORDER BY id",
            &[name.into()],
        )?;
        for row in &mut t.rows {
            for v in row.iter_mut() {
                if let serde_json::Value::String(s) = v {
                    if let std::borrow::Cow::Owned(m) = mask_secrets(s) {
                        *s = m;
                    }
                }
            }
        }
        Ok(t)
    }

    /// One run's row.
    pub fn run(&self, id: i64) -> Result<Table> {
        self.table(
            "SELECT r.*, e.name AS experiment FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE r.id = ?1",
            &[id.into()],
        )
    }

    /// The results of finished runs (view `run_results`), of one experiment or all; with
    /// `latest`, only the newest finished run of each configuration of each experiment.
    pub fn results(&self, experiment: Option<&str>, latest: bool) -> Result<Table> {
        self.table(
            "SELECT * FROM run_results v WHERE v.status = 'finished' AND (CAST(?1 AS TEXT) IS NULL OR v.experiment = ?1)
               AND (?2 = 0 OR v.run_id = (SELECT max(r2.id) FROM runs r2 WHERE r2.experiment_id = v.experiment_id
                                           AND r2.run_key = v.run_key AND r2.status = 'finished'))
             ORDER BY v.run_id, v.workload_ordinal",
            &[experiment.into(), i64::from(latest).into()],
        )
    }

    /// The resolved device name (`preset{key=value,...}`) of every run of `experiment`, by
    /// run id: what a sensitivity sweep reads to tell a preset's overridden parameters.
    pub fn run_devices(&self, experiment: &str) -> Result<Table> {
        self.table(
            "SELECT r.id AS run_id, r.device_name FROM runs r JOIN experiments e ON e.id = r.experiment_id
             WHERE e.name = ?1 ORDER BY r.id",
            &[experiment.into()],
        )
    }

    /// Every metric (long format) of finished runs, of one experiment or of one run, with
    /// its kind (`counter`, `gauge`, `setting`; told from the name by
    /// [`schema::legacy_kind`] in a database older than schema version 3).
    pub fn metrics(&self, experiment: Option<&str>, run: Option<i64>) -> Result<Table> {
        let kind = if self.kinds_stored {
            "m.kind"
        } else {
            "NULL AS kind"
        };
        let mut t = self.table(
            &format!(
                "SELECT e.name AS experiment, m.run_id, r.name AS run, m.workload, m.name, {kind}, m.value
                 FROM metrics m JOIN runs r ON r.id = m.run_id JOIN experiments e ON e.id = r.experiment_id
                 WHERE (CAST(?1 AS TEXT) IS NULL OR e.name = ?1) AND (CAST(?2 AS BIGINT) IS NULL OR m.run_id = ?2)
                 ORDER BY m.run_id, m.workload, m.name"
            ),
            &[experiment.into(), run.into()],
        )?;
        if !self.kinds_stored {
            let (name, kind) = (4, 5);
            for row in &mut t.rows {
                let k = schema::legacy_kind(row[name].as_str().unwrap_or_default());
                row[kind] = k.as_str().into();
            }
        }
        Ok(t)
    }

    /// The rows of [`ResultsDb::metrics`] (same columns, same order, same values), handed to
    /// `f` one at a time instead of collected: what `spidx results export --metrics` writes.
    /// Memory is bounded by one run's names and one metric, not by the result: the long
    /// format repeats the run's name on every row, and a crafted multi-megabyte name over a
    /// few thousand metrics would otherwise take gigabytes. Each run's experiment and name
    /// are read once, then its metrics are streamed from the database (SQLite or
    /// PostgreSQL alike) in the order `metrics` gives them.
    pub fn metrics_each<E: From<Error>>(
        &self,
        experiment: Option<&str>,
        run: Option<i64>,
        mut f: impl FnMut(&[serde_json::Value]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let runs = self.table(
            "SELECT r.id FROM runs r JOIN experiments e ON e.id = r.experiment_id
             WHERE (CAST(?1 AS TEXT) IS NULL OR e.name = ?1) AND (CAST(?2 AS BIGINT) IS NULL OR r.id = ?2)
             ORDER BY r.id",
            &[experiment.into(), run.into()],
        )?;
        let kind = if self.kinds_stored {
            "m.kind"
        } else {
            "NULL AS kind"
        };
        let sql = format!(
            "SELECT m.workload, m.name, {kind}, m.value FROM metrics m WHERE m.run_id = ?1
             ORDER BY m.workload, m.name"
        );
        // The row handed to `f`: experiment, run id, run name (set once per run), then
        // workload, name, kind and value (set for every metric).
        let mut row = vec![serde_json::Value::Null; 7];
        for id in runs.rows.iter().filter_map(|r| r.first()?.as_i64()) {
            let names = self.table(
                "SELECT e.name, r.name FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE r.id = ?1",
                &[id.into()],
            )?;
            let Some(mut names) = names.rows.into_iter().next() else {
                continue; // Gone since the list was read.
            };
            row[2] = std::mem::take(&mut names[1]);
            row[0] = std::mem::take(&mut names[0]);
            row[1] = id.into();
            let kinds_stored = self.kinds_stored;
            let done = self.with(|c| {
                c.query_each(&sql, &[id.into()], |m| {
                    row[3..7].clone_from_slice(&m[..4]);
                    if !kinds_stored {
                        let k = schema::legacy_kind(row[4].as_str().unwrap_or_default());
                        row[5] = k.as_str().into();
                    }
                    f(&row)
                })
            })?;
            done?;
        }
        Ok(())
    }

    /// Every metric value of the runs of experiment `experiment`: run id, workload, name and
    /// value only. What a report reads: unlike [`ResultsDb::metrics`] no run name is
    /// repeated on every row, so the memory it takes is bounded by the metrics, not by the
    /// length of a (crafted, multi-megabyte) run name.
    pub fn metric_values(&self, experiment: &str) -> Result<Table> {
        self.table(
            "SELECT m.run_id, m.workload, m.name, m.value
             FROM metrics m JOIN runs r ON r.id = m.run_id JOIN experiments e ON e.id = r.experiment_id
             WHERE e.name = ?1 ORDER BY m.run_id, m.workload, m.name",
            &[experiment.into()],
        )
    }

    /// The name of the experiment with the newest run, if any.
    pub fn latest_experiment(&self) -> Result<Option<String>> {
        let v = self.with(|c| {
            c.value(
                "SELECT e.name FROM runs r JOIN experiments e ON e.id = r.experiment_id ORDER BY r.id DESC LIMIT 1",
                &[],
            )
        })?;
        Ok(v.and_then(|v| v.as_str().map(str::to_string)))
    }
}

/// The `results` rows, the metrics and the finished state of run `id` (inside the
/// caller's transaction).
fn record_run(c: &mut Conn, id: i64, r: &RunResult, overhead_s: f64) -> DbResult<()> {
    let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
    let sql = format!(
        "INSERT INTO results (run_id, workload, kind, ordinal, details_json, {}) VALUES (?1, ?2, ?3, ?4, ?5, {})",
        names.join(", "),
        (0..names.len())
            .map(|j| format!("?{}", j + 6))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (i, w) in r.workloads.iter().enumerate() {
        let mut values: Vec<Param> = vec![
            id.into(),
            w.name.as_str().into(),
            w.kind.as_str().into(),
            (i as i64).into(),
            w.details.to_string().into(),
        ];
        values.extend(
            COLUMNS
                .iter()
                .map(|(_, m)| w.metrics.get(*m).copied().into()),
        );
        c.execute(&sql, &values)?;
        let rows: Vec<(&str, protocol::MetricKind, f64)> = protocol::kinds(&w.metrics).collect();
        for chunk in rows.chunks(METRIC_ROWS_PER_INSERT) {
            let marks: Vec<String> = (0..chunk.len())
                .map(|j| {
                    let b = j * 5;
                    format!(
                        "(?{}, ?{}, ?{}, ?{}, ?{})",
                        b + 1,
                        b + 2,
                        b + 3,
                        b + 4,
                        b + 5
                    )
                })
                .collect();
            let mut params = Vec::with_capacity(chunk.len() * 5);
            for (name, kind, value) in chunk {
                params.extend([
                    Param::Int(id),
                    w.name.as_str().into(),
                    (*name).into(),
                    Param::Real(*value),
                    kind.as_str().into(),
                ]);
            }
            c.execute(
                &format!(
                    "INSERT INTO metrics (run_id, workload, name, value, kind) VALUES {}",
                    marks.join(", ")
                ),
                &params,
            )?;
        }
    }
    c.execute(
        "UPDATE runs SET status = 'finished', finished_at = @NOW,
           wall_s = ?2, index_s = ?3, overhead_s = ?4, lease_until = NULL WHERE id = ?1",
        &[
            id.into(),
            (r.wall_s + overhead_s).into(),
            r.index_s.into(),
            (r.wall_s + overhead_s - r.index_s).into(),
        ],
    )?;
    typed::fill(c, Some(id))
}

/// A finished run as `--resume` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finished {
    /// The hash of the inputs that decided what it measured (`None`: recorded before
    /// inputs were fingerprinted, schema version 4 or older).
    pub inputs_hash: Option<String>,
    /// Its inputs (see [`crate::experiment::fingerprint::InputPrint`]).
    pub inputs_json: Option<String>,
    /// The spidx build that ran it (`0.1.0+commit`).
    pub version: String,
    /// Its row id.
    pub run_id: i64,
}

/// What every run row of one invocation records besides the run's configuration.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The dataset spec, as JSON.
    pub dataset_json: String,
    /// Objects in the dataset.
    pub objects: u64,
    /// The machine (see [`super::Machine`]), as JSON.
    pub machine_json: String,
    /// This process, which holds the lease of the runs it starts.
    pub owner: Owner,
    /// Each run's inputs, by run key (a run without an entry is recorded without them).
    pub inputs: BTreeMap<String, RunInputs>,
}

impl Invocation {
    /// The dataset spec of `run` as JSON: the invocation's, with the run's own
    /// dimensionality when the spec has a `matrix.dims` axis (`generate.dims`).
    pub(crate) fn dataset_json_of(&self, run: &RunConfig) -> String {
        let Some(d) = run.dims else {
            return self.dataset_json.clone();
        };
        match serde_json::from_str::<serde_json::Value>(&self.dataset_json) {
            Ok(mut v) => match v.pointer_mut("/generate/dims") {
                Some(slot) => {
                    *slot = d.into();
                    v.to_string()
                }
                None => self.dataset_json.clone(),
            },
            Err(_) => self.dataset_json.clone(),
        }
    }
}

/// Inserts the `running` row of `run`, leased to `inv.owner` for [`LEASE`].
fn insert_run(c: &mut Conn, exp: i64, run: &RunConfig, inv: &Invocation) -> DbResult<i64> {
    let o = &run.options;
    let dataset_json = inv.dataset_json_of(run);
    let inputs = inv.inputs.get(&run.key);
    let json = |v: &dyn erased::Json| Param::Text(v.json());
    c.int(
        "INSERT INTO runs (experiment_id, run_key, ordinal, name, index_label, store, page_size,
           occupancy, layout, buffer, device, device_name, config_json, dataset_json, objects,
           spidx_version, machine_json, started_at, status, lease_until, owner, inputs_hash,
           inputs_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
           @NOW, 'running', ?18, ?19, ?20, ?21)
         RETURNING id",
        &[
            exp.into(),
            run.key.as_str().into(),
            (run.ordinal as i64).into(),
            run.name.as_str().into(),
            run.index_label.as_str().into(),
            json(&o.store),
            (o.page_size as i64).into(),
            json(&o.occupancy),
            json(&o.layout),
            o.buffer.to_string().into(),
            run.device_label.as_str().into(),
            o.device_name.as_str().into(),
            json(o),
            dataset_json.as_str().into(),
            (inv.objects as i64).into(),
            export::recorded_version().into(),
            inv.machine_json.as_str().into(),
            claim::lease_end().into(),
            inv.owner.as_str().into(),
            inputs.map(|i| i.hash.clone()).into(),
            inputs.map(RunInputs::json).into(),
        ],
    )
}

mod erased {
    /// Serializes to a JSON string (a small object-safe wrapper for `start_run`).
    pub(super) trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}
