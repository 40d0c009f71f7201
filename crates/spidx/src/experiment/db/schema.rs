//! The results database's tables, and the checks every open makes before anything is read
//! or appended: the file is SQLite and passes `PRAGMA integrity_check`, and it is a spidx
//! results database of a schema version this build knows. An unknown version (written by
//! a newer spidx) or a damaged file is refused with a clear error, never appended to.
//!
//! Versions: 1 (the first), 2 (`runs.lease_until` and `runs.owner`, for claiming runs; see
//! [`super::claim`]). A version-1 database is upgraded in place when opened for writing
//! (two added columns) and read as it is.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::db_err;
use crate::{Error, Result};

/// Version of the schema below (kept in `meta`).
pub const SCHEMA_VERSION: i64 = 2;

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
  owner TEXT
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
  PRIMARY KEY (run_id, workload)
);
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  workload TEXT NOT NULL,
  name TEXT NOT NULL,
  value REAL NOT NULL,
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
         x.reinsertions, x.candidates, x.answers, x.height, x.nodes
  FROM results x JOIN runs r ON r.id = x.run_id JOIN experiments e ON e.id = r.experiment_id;
"#;

/// The oldest version this build reads (and upgrades when writing).
const OLDEST_VERSION: i64 = 1;

/// Runs SQLite's integrity check; a file that is not SQLite fails here too.
fn check_integrity(conn: &Connection, path: &Path) -> Result<()> {
    let problems: Vec<String> = {
        let mut st = conn
            .prepare("PRAGMA integrity_check(10)")
            .map_err(|e| not_sqlite(path, e))?;
        let rows = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| not_sqlite(path, e))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(|e| not_sqlite(path, e))?
    };
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

fn not_sqlite(path: &Path, e: rusqlite::Error) -> Error {
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

/// The `schema_version` recorded in `meta`: `Ok(None)` for a file without spidx tables.
fn recorded_version(conn: &Connection, path: &Path) -> Result<Option<String>> {
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| not_sqlite(path, e))?
        > 0;
    if !has_meta {
        return Ok(None);
    }
    conn.query_row(
        "SELECT value FROM meta WHERE key = 'schema_version'",
        [],
        |r| r.get::<_, String>(0),
    )
    .optional()
    .map_err(|e| db_err(path, e))
}

/// The version as a number this build knows, or the error naming what was found.
fn known_version(path: &Path, v: Option<String>, tables: i64) -> Result<Option<i64>> {
    match v {
        None if tables == 0 => Ok(None),
        None => Err(db_err(
            path,
            "is an SQLite database, but not a spidx results database (it has other tables and no schema_version); give another --results path",
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

fn table_count(conn: &Connection, path: &Path) -> Result<i64> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
        [],
        |r| r.get(0),
    )
    .map_err(|e| not_sqlite(path, e))
}

/// Checks a database opened for appending and brings it to [`SCHEMA_VERSION`]: creates
/// the tables in an empty file, upgrades version 1, refuses anything else.
pub(super) fn prepare_for_writing(conn: &Connection, path: &Path) -> Result<()> {
    check_integrity(conn, path)?;
    // One immediate transaction: two processes creating the same new file do it in turn.
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(|e| not_sqlite(path, e))?;
    let tables = table_count(&tx, path)?;
    let version = known_version(path, recorded_version(&tx, path)?, tables)?;
    match version {
        None => {
            tx.execute_batch(SCHEMA).map_err(|e| db_err(path, e))?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                params![SCHEMA_VERSION.to_string()],
            )
            .map_err(|e| db_err(path, e))?;
        }
        Some(1) => {
            tx.execute_batch(
                "ALTER TABLE runs ADD COLUMN lease_until REAL;
                 ALTER TABLE runs ADD COLUMN owner TEXT;",
            )
            .map_err(|e| db_err(path, format!("cannot upgrade from schema version 1: {e}")))?;
            tx.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                params![SCHEMA_VERSION.to_string()],
            )
            .map_err(|e| db_err(path, e))?;
        }
        Some(_) => {}
    }
    tx.commit().map_err(|e| db_err(path, e))
}

/// Checks a database opened read-only: SQLite, intact, spidx, a known version.
pub(super) fn check_for_reading(conn: &Connection, path: &Path) -> Result<()> {
    check_integrity(conn, path)?;
    let tables = table_count(conn, path)?;
    match known_version(path, recorded_version(conn, path)?, tables)? {
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
            let db = ResultsDb::open(&p).unwrap();
            // Enough rows for several pages of table and index.
            let c = &db.conn;
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
        let v1 = SCHEMA
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
    }
}
