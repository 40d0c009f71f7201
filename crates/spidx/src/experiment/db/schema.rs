//! The results database's tables, their migrations, and the checks every open makes before
//! anything is read or appended: an SQLite file must be SQLite and pass `PRAGMA
//! integrity_check`; either backend must hold a spidx results database of a schema version
//! this build knows. An unknown version (written by a newer spidx) or a damaged file is
//! refused with a clear error, never appended to.
//!
//! One schema, one version number for both backends: the statements below are SQLite's;
//! PostgreSQL gets the same tables with its own type names ([`schema_sql`]).
//!
//! Versions: 1 (the first), 2 (`runs.lease_until` and `runs.owner`, for claiming runs; see
//! [`super::claim`]), 3 (`metrics.kind`: counter, gauge or setting, see [`MetricKind`];
//! the first version a PostgreSQL database can have), 4 (the table `run_columns` and the
//! view `typed_results`, the export's typed table; see [`super::typed`]), 5 (`runs.inputs_hash`
//! and `runs.inputs_json`, every input of a run fingerprinted by its content, see
//! [`crate::experiment::fingerprint`]; the spread of query workloads' repetitions in
//! `results`: `rep_median_s`, `rep_sd_s`, `rep_ci95_low_s`, `rep_ci95_high_s`). An older
//! database is upgraded in place when opened for writing ([`upgrade`]: added columns; the
//! kinds of its metrics told from their names by [`legacy_kind`]; the run columns of its
//! runs computed) and read as it is (kinds told the same way on reading).

use std::path::Path;

use serde_json::Value;

use super::backend::{Conn, DbResult, Dialect, Param};
use super::db_err;
use super::typed;
use crate::experiment::protocol::MetricKind;
use crate::{Error, Result};

/// Version of the schema below (kept in `meta`).
pub const SCHEMA_VERSION: i64 = 5;

pub(super) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  spec_text TEXT NOT NULL,
  spec_path TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (name, spec_hash)
);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id),
  run_key TEXT NOT NULL,
  ordinal INTEGER NOT NULL,
  name TEXT NOT NULL,
  index_label TEXT NOT NULL,
  store TEXT NOT NULL,
  page_size INTEGER NOT NULL,
  occupancy TEXT NOT NULL,
  layout TEXT NOT NULL,
  buffer TEXT NOT NULL,
  device TEXT NOT NULL,
  device_name TEXT NOT NULL,
  config_json TEXT NOT NULL,
  dataset_json TEXT NOT NULL,
  objects INTEGER NOT NULL,
  spidx_version TEXT NOT NULL,
  machine_json TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed')),
  error TEXT,
  wall_s REAL,
  index_s REAL,
  overhead_s REAL,
  lease_until REAL,
  owner TEXT,
  inputs_hash TEXT,
  inputs_json TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_experiment ON runs (experiment_id, run_key);
CREATE TABLE IF NOT EXISTS results (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  workload TEXT NOT NULL,
  kind TEXT NOT NULL,
  ordinal INTEGER NOT NULL,
  queries REAL, repetitions REAL,
  elapsed_s REAL, cpu_s REAL, device_s REAL, filter_s REAL, refinement_s REAL,
  elapsed_min_s REAL, elapsed_median_s REAL, elapsed_max_s REAL,
  reads REAL, writes REAL, seq_reads REAL, random_reads REAL, seq_writes REAL, random_writes REAL,
  flash_reads REAL, flash_writes REAL, erases REAL, gc_copies REAL, write_amplification REAL,
  buffer_hits REAL, buffer_faults REAL, splits REAL, reinsertions REAL,
  candidates REAL, answers REAL, height REAL, nodes REAL,
  details_json TEXT NOT NULL,
  rep_median_s REAL, rep_sd_s REAL, rep_ci95_low_s REAL, rep_ci95_high_s REAL,
  PRIMARY KEY (run_id, workload)
);
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  workload TEXT NOT NULL,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  kind TEXT NOT NULL DEFAULT 'counter' CHECK (kind IN ('counter', 'gauge', 'setting')),
  PRIMARY KEY (run_id, workload, name)
);
CREATE VIEW IF NOT EXISTS run_results AS
  SELECT e.name AS experiment, r.experiment_id, r.id AS run_id, r.run_key, r.ordinal, r.name AS run,
         r.index_label, r.store, r.page_size, r.occupancy, r.layout, r.buffer, r.device,
         r.status, r.started_at, r.finished_at, x.workload, x.kind, x.ordinal AS workload_ordinal,
         x.queries, x.repetitions, x.elapsed_s, x.cpu_s, x.device_s, x.filter_s, x.refinement_s,
         x.elapsed_min_s, x.elapsed_median_s, x.elapsed_max_s, x.reads, x.writes, x.seq_reads,
         x.random_reads, x.seq_writes, x.random_writes, x.flash_reads, x.flash_writes, x.erases,
         x.gc_copies, x.write_amplification, x.buffer_hits, x.buffer_faults, x.splits,
         x.reinsertions, x.candidates, x.answers, x.height, x.nodes, x.rep_median_s, x.rep_sd_s,
         x.rep_ci95_low_s, x.rep_ci95_high_s, r.inputs_hash
  FROM results x JOIN runs r ON r.id = x.run_id JOIN experiments e ON e.id = r.experiment_id;
"#;

/// The schema in `dialect`: SQLite's as written; PostgreSQL's with 64-bit integers, an
/// identity column for row ids, double-precision reals and a replaceable view; then the
/// typed view and its run columns ([`typed::schema_sql`]).
pub(crate) fn schema_sql(dialect: Dialect) -> String {
    let tables = match dialect {
        Dialect::Sqlite => SCHEMA.to_string(),
        Dialect::Postgres => SCHEMA
            .replace(
                "INTEGER PRIMARY KEY",
                "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
            )
            .replace(" INTEGER", " BIGINT")
            .replace(" REAL", " DOUBLE PRECISION")
            .replace("CREATE VIEW IF NOT EXISTS", "CREATE OR REPLACE VIEW"),
    };
    tables + &typed::schema_sql(dialect)
}

/// The oldest version this build reads (and upgrades when writing).
const OLDEST_VERSION: i64 = 1;

/// The key of the PostgreSQL advisory lock under which a database's tables are created or
/// upgraded (so that workers starting together do it once).
const SCHEMA_LOCK: i64 = 0x5350_4944_5852;

/// Runs SQLite's integrity check; a file that is not SQLite fails here too.
fn check_integrity(conn: &mut Conn, path: &Path) -> Result<()> {
    if conn.dialect() != Dialect::Sqlite {
        return Ok(());
    }
    let t = conn
        .query("PRAGMA integrity_check(10)", &[])
        .map_err(|e| not_sqlite(path, e))?;
    let problems: Vec<String> = t
        .rows
        .iter()
        .filter_map(|r| r.first().and_then(Value::as_str).map(str::to_string))
        .collect();
    if problems.len() == 1 && problems[0] == "ok" {
        return Ok(());
    }
    Err(Error::corrupted(
        format!("results database {}", path.display()),
        format!(
            "SQLite's integrity check fails ({}); nothing was read or appended. Keep the file for inspection and write new results to another --results file",
            problems.join("; ")
        ),
    ))
}

fn not_sqlite(path: &Path, e: impl std::fmt::Display) -> Error {
    let msg = e.to_string();
    if msg.contains("not a database") {
        db_err(
            path,
            "is not an SQLite database (a results database is one SQLite file); give another --results path",
        )
    } else {
        db_err(path, msg)
    }
}

/// The `schema_version` recorded in `meta`: `Ok(None)` for a database without spidx tables.
fn recorded_version(conn: &mut Conn, tables: &[String], path: &Path) -> Result<Option<String>> {
    if !tables.iter().any(|t| t == "meta") {
        return Ok(None);
    }
    let v = conn
        .value("SELECT value FROM meta WHERE key = 'schema_version'", &[])
        .map_err(|e| db_err(path, e))?;
    Ok(v.and_then(|v| v.as_str().map(str::to_string)))
}

/// The version as a number this build knows, or the error naming what was found.
fn known_version(path: &Path, v: Option<String>, tables: usize) -> Result<Option<i64>> {
    match v {
        None if tables == 0 => Ok(None),
        None => Err(db_err(
            path,
            "is a database, but not a spidx results database (it has other tables and no schema_version); give another --results path (or, for PostgreSQL, another database or schema)",
        )),
        Some(text) => match text.trim().parse::<i64>() {
            Ok(n) if (OLDEST_VERSION..=SCHEMA_VERSION).contains(&n) => Ok(Some(n)),
            _ => Err(db_err(
                path,
                format!(
                    "has schema_version '{text}', which this spidx (schema version {SCHEMA_VERSION}) does not know; it was written by another spidx version. Use that version, or write to another --results file"
                ),
            )),
        },
    }
}

/// Checks a database opened for appending and brings it to [`SCHEMA_VERSION`]: creates
/// the tables in an empty database, upgrades an older version, refuses anything else.
pub(super) fn prepare_for_writing(conn: &mut Conn, path: &Path) -> Result<()> {
    check_integrity(conn, path)?;
    // One exclusive transaction (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock):
    // two processes creating the same new database do it in turn.
    conn.begin(true).map_err(|e| not_sqlite(path, e))?;
    let r = prepare_in_transaction(conn, path);
    match r {
        Ok(()) => conn.commit().map_err(|e| db_err(path, e)),
        Err(e) => {
            conn.rollback();
            Err(e)
        }
    }
}

fn prepare_in_transaction(conn: &mut Conn, path: &Path) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        conn.query("SELECT pg_advisory_xact_lock(?1)", &[SCHEMA_LOCK.into()])
            .map_err(|e| db_err(path, e))?;
    }
    let tables = conn.tables().map_err(|e| not_sqlite(path, e))?;
    let version = known_version(path, recorded_version(conn, &tables, path)?, tables.len())?;
    match version {
        None => {
            let ddl = schema_sql(conn.dialect());
            conn.batch(&ddl).map_err(|e| db_err(path, e))?;
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                &[SCHEMA_VERSION.to_string().into()],
            )
            .map_err(|e| db_err(path, e))?;
        }
        Some(v) if v < SCHEMA_VERSION => {
            upgrade(conn, v).map_err(|e| {
                db_err(path, format!("cannot upgrade from schema version {v}: {e}"))
            })?;
            conn.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                &[SCHEMA_VERSION.to_string().into()],
            )
            .map_err(|e| db_err(path, e))?;
        }
        Some(_) => {}
    }
    Ok(())
}

/// Brings a database of schema version `from` to [`SCHEMA_VERSION`], one step at a time
/// (the same statements for both backends).
fn upgrade(conn: &mut Conn, from: i64) -> DbResult<()> {
    if from < 2 {
        conn.batch(
            "ALTER TABLE runs ADD COLUMN lease_until @REAL;
             ALTER TABLE runs ADD COLUMN owner TEXT;",
        )?;
    }
    if from < 3 {
        conn.batch(
            "ALTER TABLE metrics ADD COLUMN kind TEXT NOT NULL DEFAULT 'counter'
               CHECK (kind IN ('counter', 'gauge', 'setting'));",
        )?;
        type_legacy_metrics(conn, None)?;
    }
    if from < 5 {
        // New columns, then both views made again over them (a view's columns are fixed
        // when it is created); the tables of the full schema exist already, except
        // `run_columns` before version 4, which is created here.
        conn.batch(
            "ALTER TABLE runs ADD COLUMN inputs_hash TEXT;
             ALTER TABLE runs ADD COLUMN inputs_json TEXT;
             ALTER TABLE results ADD COLUMN rep_median_s @REAL;
             ALTER TABLE results ADD COLUMN rep_sd_s @REAL;
             ALTER TABLE results ADD COLUMN rep_ci95_low_s @REAL;
             ALTER TABLE results ADD COLUMN rep_ci95_high_s @REAL;
             DROP VIEW IF EXISTS typed_results;
             DROP VIEW IF EXISTS run_results;",
        )?;
        let ddl = schema_sql(conn.dialect());
        conn.batch(&ddl)?;
    }
    if from < 4 {
        typed::fill(conn, None)?;
    }
    Ok(())
}

/// Sets `metrics.kind` from the names (by [`legacy_kind`]) of the rows of run `run` (or
/// of every run), rows written before version 3 (or copied from such a database).
pub(super) fn type_legacy_metrics(conn: &mut Conn, run: Option<i64>) -> DbResult<()> {
    let names: Vec<String> = conn
        .query(
            "SELECT DISTINCT name FROM metrics WHERE CAST(?1 AS BIGINT) IS NULL OR run_id = ?1",
            &[run.into()],
        )?
        .rows
        .into_iter()
        .filter_map(|r| r.into_iter().next())
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    for name in names {
        let kind = legacy_kind(&name);
        if kind != MetricKind::Counter {
            conn.execute(
                "UPDATE metrics SET kind = ?1 WHERE name = ?2 AND (CAST(?3 AS BIGINT) IS NULL OR run_id = ?3)",
                &[kind.as_str().into(), name.into(), Param::from(run)],
            )?;
        }
    }
    Ok(())
}

/// Leaf names that were settings before reports kept them apart (schema versions 1–2).
const LEGACY_SETTINGS: [&str; 6] = [
    "page_size",
    "capacity_pages",
    "flushing_unit",
    "write_buffer",
    "write_buffer_bytes",
    "read_buffer_pages",
];

/// Leaf names that were gauges before reports kept them apart (schema versions 1–2).
const LEGACY_GAUGES: [&str; 20] = [
    "write_amplification",
    "erase_min",
    "erase_max",
    "erase_mean",
    "retired_blocks",
    "resident_pages",
    "dirty_pages",
    "pages_in_use",
    "buffered_bytes",
    "buffered_modified",
    "buffered_new",
    "peak_buffered_bytes",
    "buffer_peak_bytes",
    "elapsed_s_min",
    "elapsed_s_median",
    "elapsed_s_max",
    "device_s_min",
    "device_s_median",
    "device_s_max",
    "throughput_qps",
];

/// The kind of a metric named as spidx named them before schema version 3, when reports
/// did not yet type their leaves: settings and gauges by their leaf name (page size,
/// capacities, flushing unit; levels, ratios, peaks, the per-query spread), the tree's
/// shape, latencies, the current content of FAST's buffer and the peak of concurrent
/// requests as gauges, `repetitions` as a setting; everything else a counter. A name that
/// already carries a `gauges`/`settings` segment is typed by it ([`MetricKind::of`]).
pub(crate) fn legacy_kind(name: &str) -> MetricKind {
    let typed = MetricKind::of(name);
    if typed != MetricKind::Counter {
        return typed;
    }
    let leaf = name.rsplit('.').next().unwrap_or(name);
    if name == "repetitions" || LEGACY_SETTINGS.contains(&leaf) {
        return MetricKind::Setting;
    }
    let gauge = LEGACY_GAUGES.contains(&leaf)
        || name == "max_outstanding"
        || name.starts_with("shape.")
        || name.starts_with("latency.")
        || name.contains("store.fast.buffer.");
    if gauge {
        MetricKind::Gauge
    } else {
        MetricKind::Counter
    }
}

/// Whether the database's `metrics` table has the `kind` column (version 3 on).
pub(super) fn has_metric_kinds(conn: &mut Conn) -> DbResult<bool> {
    Ok(conn.columns("metrics")?.iter().any(|c| c == "kind"))
}

/// Checks a database opened read-only: SQLite and intact (a file), spidx, a known version.
pub(super) fn check_for_reading(conn: &mut Conn, path: &Path) -> Result<()> {
    check_integrity(conn, path)?;
    let tables = conn.tables().map_err(|e| not_sqlite(path, e))?;
    match known_version(path, recorded_version(conn, &tables, path)?, tables.len())? {
        Some(_) => Ok(()),
        None => Err(db_err(
            path,
            "is not a spidx results database (it is empty)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::ResultsDb;
    use super::*;
    use rusqlite::{params, Connection};

    #[test]
    fn unknown_versions_damaged_and_foreign_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        drop(ResultsDb::open(&p).unwrap());
        // Reopening is fine, for writing and for reading.
        drop(ResultsDb::open(&p).unwrap());
        drop(ResultsDb::open_existing(&p).unwrap());
        // A newer spidx's database: refused for appending and for reading, untouched.
        let c = Connection::open(&p).unwrap();
        c.execute(
            "UPDATE meta SET value = '7' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
        drop(c);
        for e in [
            ResultsDb::open(&p).err().unwrap().to_string(),
            ResultsDb::open_existing(&p).err().unwrap().to_string(),
        ] {
            assert!(
                e.contains("schema_version '7'") && e.contains("r.db"),
                "{e}"
            );
        }
        let c = Connection::open(&p).unwrap();
        let v: String = c
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(v, "7");
        // Another program's database: refused, and no spidx table is added to it.
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
        let e = ResultsDb::open(&other).err().unwrap().to_string();
        assert!(e.contains("not a spidx results database"), "{e}");
        let n: i64 = Connection::open(&other)
            .unwrap()
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        // Not SQLite at all.
        let text = dir.path().join("notes.db");
        std::fs::write(
            &text,
            "these are not results, just some text long enough to be a header",
        )
        .unwrap();
        let e = ResultsDb::open(&text).err().unwrap().to_string();
        assert!(e.contains("not an SQLite database"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&text).unwrap(),
            "these are not results, just some text long enough to be a header"
        );
    }

    #[test]
    fn a_damaged_database_fails_its_integrity_check() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        {
            drop(ResultsDb::open(&p).unwrap());
            // Enough rows for several pages of table and index.
            let c = Connection::open(&p).unwrap();
            for i in 0..2000 {
                c.execute(
                    "INSERT INTO experiments (name, spec_hash, spec_json, spec_text, spec_path, created_at)
                     VALUES (?1, 'h', '{}', 'text', 'p', 'now')",
                    params![format!("experiment number {i} with a longish name")],
                )
                .unwrap();
            }
        }
        // Flip bytes in the middle of the file (inside b-tree pages, past the header).
        let mut bytes = std::fs::read(&p).unwrap();
        let page = 4096;
        let pages = bytes.len() / page;
        assert!(pages > 8, "{pages}");
        for pg in (2..pages).step_by(3) {
            for b in &mut bytes[pg * page + 8..pg * page + 40] {
                *b ^= 0x5a;
            }
        }
        std::fs::write(&p, &bytes).unwrap();
        let e = ResultsDb::open(&p).err().unwrap().to_string();
        assert!(e.contains("integrity") || e.contains("malformed"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "nothing appended");
    }

    #[test]
    fn version_1_is_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v1.db");
        let v1 = version_2_schema()
            .replace("  lease_until REAL,\n  owner TEXT\n", "")
            .replace("  overhead_s REAL,\n", "  overhead_s REAL\n");
        let c = Connection::open(&p).unwrap();
        c.execute_batch(&v1).unwrap();
        c.execute("INSERT INTO meta VALUES ('schema_version', '1')", [])
            .unwrap();
        drop(c);
        drop(ResultsDb::open_existing(&p).unwrap());
        drop(ResultsDb::open(&p).unwrap());
        let c = Connection::open(&p).unwrap();
        let v: String = c
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION.to_string());
        c.prepare("SELECT lease_until, owner FROM runs").unwrap();
        c.prepare("SELECT kind FROM metrics").unwrap();
    }

    /// The schema of version 2: no `metrics.kind` (nor what version 5 added).
    fn version_2_schema() -> String {
        let v2 = version_4_tables().replace(
            "  kind TEXT NOT NULL DEFAULT 'counter' CHECK (kind IN ('counter', 'gauge', 'setting')),\n",
            "",
        );
        assert_ne!(v2, SCHEMA);
        v2
    }

    /// The tables of version 4: no input fingerprints, no spread of repetitions.
    fn version_4_tables() -> String {
        let v4 = SCHEMA
            .replace(
                "  owner TEXT,\n  inputs_hash TEXT,\n  inputs_json TEXT\n",
                "  owner TEXT\n",
            )
            .replace(
                "  rep_median_s REAL, rep_sd_s REAL, rep_ci95_low_s REAL, rep_ci95_high_s REAL,\n",
                "",
            )
            .replace(
                ", x.rep_median_s, x.rep_sd_s,\n         x.rep_ci95_low_s, x.rep_ci95_high_s, r.inputs_hash\n",
                "\n",
            );
        assert!(!v4.contains("inputs_hash") && !v4.contains("rep_sd_s"));
        v4
    }

    #[test]
    fn version_4_is_upgraded_with_its_runs_readable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v4.db");
        let c = Connection::open(&p).unwrap();
        c.execute_batch(&(version_4_tables() + &typed_schema_v4()))
            .unwrap();
        c.execute("INSERT INTO meta VALUES ('schema_version', '4')", [])
            .unwrap();
        drop(c);
        drop(ResultsDb::open(&p).unwrap());
        let c = Connection::open(&p).unwrap();
        c.prepare("SELECT inputs_hash, inputs_json FROM runs")
            .unwrap();
        c.prepare("SELECT rep_sd_s, inputs_hash FROM run_results")
            .unwrap();
        c.prepare("SELECT rep_sd_s, rep_ci95_low_s FROM typed_results")
            .unwrap();
    }

    /// The typed view as version 4 made it (without the columns version 5 added).
    fn typed_schema_v4() -> String {
        let full = typed::schema_sql(Dialect::Sqlite);
        let start = full.find("CREATE VIEW").unwrap();
        // The table as it is; the view over the old `run_results` columns only.
        full[..start].to_string()
            + "CREATE VIEW IF NOT EXISTS typed_results AS SELECT v.run_id FROM run_results v;\n"
    }

    #[test]
    fn version_2_metrics_get_kinds_on_reading_and_on_upgrade() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v2.db");
        let c = Connection::open(&p).unwrap();
        c.execute_batch(&version_2_schema()).unwrap();
        c.execute("INSERT INTO meta VALUES ('schema_version', '2')", [])
            .unwrap();
        c.execute_batch(
            "INSERT INTO experiments VALUES (1, 'e', 'h', '{}', '', 'e.toml', 'now');
             INSERT INTO runs (id, experiment_id, run_key, ordinal, name, index_label, store,
               page_size, occupancy, layout, buffer, device, device_name, config_json,
               dataset_json, objects, spidx_version, machine_json, started_at, status)
             VALUES (1, 1, 'k', 0, 'r', 'R-tree', '{}', 4096, '{}', '\"checked\"', 'none',
               'memory', 'memory', '{}', '{}', 10, '0', '{}', 'now', 'finished');
             INSERT INTO metrics VALUES (1, 'q', 'device.host.read_ops', 200);
             INSERT INTO metrics VALUES (1, 'q', 'device.page_size', 4096);
             INSERT INTO metrics VALUES (1, 'q', 'filter.device.flash.erase_max', 3);
             INSERT INTO metrics VALUES (1, 'q', 'store.fast.flushing_unit', 2);
             INSERT INTO metrics VALUES (1, 'q', 'shape.levels.0.fill', 0.7);
             INSERT INTO metrics VALUES (1, 'q', 'repetitions', 10);",
        )
        .unwrap();
        drop(c);
        let want = [
            ("device.host.read_ops", "counter"),
            ("device.page_size", "setting"),
            ("filter.device.flash.erase_max", "gauge"),
            ("repetitions", "setting"),
            ("shape.levels.0.fill", "gauge"),
            ("store.fast.flushing_unit", "setting"),
        ];
        let kinds = |db: &ResultsDb| -> Vec<(String, String)> {
            let t = db.metrics(None, Some(1)).unwrap();
            // Streamed, the same rows (kinds told from the names too).
            let mut streamed = Vec::new();
            db.metrics_each::<crate::Error>(None, Some(1), |r| {
                streamed.push(r.to_vec());
                Ok(())
            })
            .unwrap();
            assert_eq!(streamed, t.rows);
            t.objects()
                .into_iter()
                .map(|o| {
                    (
                        o["name"].as_str().unwrap().to_string(),
                        o["kind"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        };
        let owned = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        // Read as it is (read-only: not upgraded), kinds told from the names.
        assert_eq!(kinds(&ResultsDb::open_existing(&p).unwrap()), owned(&want));
        let v: String = Connection::open(&p)
            .unwrap()
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(v, "2", "reading does not upgrade");
        // Upgraded for writing: the column is added and filled.
        assert_eq!(kinds(&ResultsDb::open(&p).unwrap()), owned(&want));
        let stored: Vec<(String, String)> = {
            let c = Connection::open(&p).unwrap();
            let mut st = c
                .prepare("SELECT name, kind FROM metrics ORDER BY name")
                .unwrap();
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            rows.collect::<rusqlite::Result<_>>().unwrap()
        };
        assert_eq!(stored, owned(&want));
    }
}
