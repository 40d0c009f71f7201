//! The results database (SQLite, one file, schema in `docs/experiments.md`): experiments,
//! runs, per run and workload the headline figures as typed columns (`results`) and every
//! statistic of every layer in long format (`metrics`). Runs are appended, never
//! overwritten: a run is recorded as `running` when it starts and completed with all its
//! figures in one transaction when it ends, so an interrupted invocation loses nothing
//! already recorded and `--resume` knows what is done.
//!
//! * [`schema`]: the tables, and the checks on open (integrity, schema version);
//! * [`claim`]: runs are claimed under a transaction with a lease, so concurrent
//!   `--resume`s split the matrix instead of each running all of it;
//! * [`merge`]: several databases (e.g. the shards of one matrix) into one.

mod claim;
pub mod merge;
pub mod schema;

pub use claim::{Claim, Heartbeat, Owner, LEASE};
pub use merge::{merge, MergeReport};
pub use schema::SCHEMA_VERSION;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension};

use super::matrix::RunConfig;
use super::protocol;
use super::runner::RunResult;
use crate::{Error, Result};

/// Typed columns of `results` and the metric each one copies (NULL when absent).
const COLUMNS: [(&str, &str); 29] = [
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
];

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

/// How long a statement waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open results database.
pub struct ResultsDb {
    conn: Connection,
    path: PathBuf,
    /// Whether `metrics` has its `kind` column (schema version 3 on; an older database
    /// opened read-only has not, and kinds are told from the names).
    kinds_stored: bool,
}

pub(crate) fn db_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::invalid(
        format!("results database {}", path.display()),
        e.to_string(),
    )
}

impl ResultsDb {
    /// Opens (creating if needed) the database at `path` for appending runs. Refuses a file
    /// that is not SQLite, fails SQLite's `PRAGMA integrity_check`, is some other program's
    /// database, or has a `schema_version` this spidx does not know (a version-1 database is
    /// upgraded in place); see [`schema`].
    pub fn open(path: &Path) -> Result<Self> {
        let conn = Connection::open(path).map_err(|e| db_err(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| db_err(path, e))?;
        schema::prepare_for_writing(&conn, path)?;
        Ok(ResultsDb {
            conn,
            path: path.to_path_buf(),
            kinds_stored: true,
        })
    }

    /// Opens an existing database read-only (an error if it does not exist, fails its
    /// integrity check, or has an unknown schema version).
    pub fn open_existing(path: &Path) -> Result<Self> {
        if !path.is_file() {
            return Err(db_err(path, "does not exist (run `spidx run SPEC` first)"));
        }
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| db_err(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| db_err(path, e))?;
        schema::check_for_reading(&conn, path)?;
        let kinds_stored = schema::has_metric_kinds(&conn).map_err(|e| db_err(path, e))?;
        Ok(ResultsDb {
            conn,
            path: path.to_path_buf(),
            kinds_stored,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        db_err(&self.path, e)
    }

    /// The experiment named `name` with spec fingerprint `hash`, created if new.
    pub fn experiment(
        &mut self,
        name: &str,
        hash: &str,
        spec_json: &str,
        spec_text: &str,
        spec_path: &str,
    ) -> Result<i64> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO experiments (name, spec_hash, spec_json, spec_text, spec_path, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                params![name, hash, spec_json, spec_text, spec_path],
            )
            .map_err(|e| self.err(e))?;
        self.conn
            .query_row(
                "SELECT id FROM experiments WHERE name = ?1 AND spec_hash = ?2",
                params![name, hash],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Keys of the runs of experiment `id` that finished.
    pub fn finished_keys(&self, id: i64) -> Result<HashSet<String>> {
        let mut st = self
            .conn
            .prepare("SELECT run_key FROM runs WHERE experiment_id = ?1 AND status = 'finished'")
            .map_err(|e| self.err(e))?;
        let keys = st
            .query_map(params![id], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<std::result::Result<HashSet<_>, _>>()
            .map_err(|e| self.err(e))?;
        Ok(keys)
    }

    /// Records that run `run` of experiment `exp` starts (status `running`, leased to
    /// `inv.owner`, see [`claim`]); returns its id. Used without `--resume`, where every run
    /// of the matrix is run again; [`ResultsDb::claim_next`] is the `--resume` form.
    pub fn start_run(&mut self, exp: i64, run: &RunConfig, inv: &Invocation) -> Result<i64> {
        insert_run(&self.conn, exp, run, inv).map_err(|e| self.err(e))
    }

    /// Records everything run `id` measured and marks it finished, in one transaction.
    pub fn finish_run(&mut self, id: i64, r: &RunResult, overhead_s: f64) -> Result<()> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| db_err(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        for (i, w) in r.workloads.iter().enumerate() {
            let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
            let sql = format!(
                "INSERT INTO results (run_id, workload, kind, ordinal, details_json, {}) VALUES (?1, ?2, ?3, ?4, ?5, {})",
                names.join(", "),
                (0..names.len()).map(|j| format!("?{}", j + 6)).collect::<Vec<_>>().join(", ")
            );
            let mut values: Vec<rusqlite::types::Value> = vec![
                id.into(),
                w.name.clone().into(),
                w.kind.clone().into(),
                (i as i64).into(),
                w.details.to_string().into(),
            ];
            for (_, metric) in COLUMNS {
                values.push(match w.metrics.get(metric) {
                    Some(v) => (*v).into(),
                    None => rusqlite::types::Value::Null,
                });
            }
            tx.execute(&sql, rusqlite::params_from_iter(values))
                .map_err(err)?;
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO metrics (run_id, workload, name, value, kind) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(err)?;
            for (k, kind, v) in protocol::kinds(&w.metrics) {
                st.execute(params![id, w.name, k, v, kind.as_str()])
                    .map_err(err)?;
            }
        }
        tx.execute(
            "UPDATE runs SET status = 'finished', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
               wall_s = ?2, index_s = ?3, overhead_s = ?4, lease_until = NULL WHERE id = ?1",
            params![id, r.wall_s + overhead_s, r.index_s, r.wall_s + overhead_s - r.index_s],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Marks run `id` failed with `error`.
    pub fn fail_run(&mut self, id: i64, error: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'failed', error = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                   lease_until = NULL WHERE id = ?1",
                params![id, error],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Runs a query and returns its rows.
    fn table(&self, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<Table> {
        let mut st = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let columns: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
        let n = columns.len();
        let mut rows = Vec::new();
        let mut q = st.query(args).map_err(|e| self.err(e))?;
        while let Some(row) = q.next().map_err(|e| self.err(e))? {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                out.push(match row.get_ref(i).map_err(|e| self.err(e))? {
                    ValueRef::Null => serde_json::Value::Null,
                    ValueRef::Integer(v) => v.into(),
                    ValueRef::Real(v) => serde_json::Number::from_f64(v)
                        .map(serde_json::Value::Number)
                        .unwrap_or(serde_json::Value::Null),
                    ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
                    ValueRef::Blob(b) => format!("<{} bytes>", b.len()).into(),
                });
            }
            rows.push(out);
        }
        Ok(Table { columns, rows })
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
             WHERE ?1 IS NULL OR e.name = ?1 ORDER BY r.id",
            &[&experiment],
        )
    }

    /// One run's row.
    pub fn run(&self, id: i64) -> Result<Table> {
        self.table(
            "SELECT r.*, e.name AS experiment FROM runs r JOIN experiments e ON e.id = r.experiment_id WHERE r.id = ?1",
            &[&id],
        )
    }

    /// The results of finished runs (view `run_results`), of one experiment or all; with
    /// `latest`, only the newest finished run of each configuration of each experiment.
    pub fn results(&self, experiment: Option<&str>, latest: bool) -> Result<Table> {
        self.table(
            "SELECT * FROM run_results v WHERE v.status = 'finished' AND (?1 IS NULL OR v.experiment = ?1)
               AND (?2 = 0 OR v.run_id = (SELECT max(r2.id) FROM runs r2 WHERE r2.experiment_id = v.experiment_id
                                           AND r2.run_key = v.run_key AND r2.status = 'finished'))
             ORDER BY v.run_id, v.workload_ordinal",
            &[&experiment, &(latest as i64)],
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
                 WHERE (?1 IS NULL OR e.name = ?1) AND (?2 IS NULL OR m.run_id = ?2)
                 ORDER BY m.run_id, m.workload, m.name"
            ),
            &[&experiment, &run],
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

    /// The name of the experiment with the newest run, if any.
    pub fn latest_experiment(&self) -> Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT e.name FROM runs r JOIN experiments e ON e.id = r.experiment_id ORDER BY r.id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }
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
}

/// Inserts the `running` row of `run`, leased to `inv.owner` for [`LEASE`].
fn insert_run(
    conn: &Connection,
    exp: i64,
    run: &RunConfig,
    inv: &Invocation,
) -> rusqlite::Result<i64> {
    let o = &run.options;
    let json = |v: &dyn erased::Json| v.json();
    conn.execute(
        "INSERT INTO runs (experiment_id, run_key, ordinal, name, index_label, store, page_size,
           occupancy, layout, buffer, device, device_name, config_json, dataset_json, objects,
           spidx_version, machine_json, started_at, status, lease_until, owner)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
           strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'running', ?18, ?19)",
        params![
            exp,
            run.key,
            run.ordinal as i64,
            run.name,
            run.index_label,
            json(&o.store),
            o.page_size as i64,
            json(&o.occupancy),
            json(&o.layout),
            o.buffer.to_string(),
            run.device_label,
            o.device_name,
            json(o),
            inv.dataset_json,
            inv.objects as i64,
            env!("CARGO_PKG_VERSION"),
            inv.machine_json,
            claim::lease_end(),
            inv.owner.as_str(),
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

mod erased {
    /// Serializes to a JSON string (a small object-safe wrapper for `start_run`).
    pub trait Json {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}
