//! The typed results view, `typed_results`: the export's table ([`super::export::COLUMNS`],
//! same names, same order, same values) inside the database, so that a PostgreSQL user
//! (SQL, BI tools, pandas `read_sql`) gets counts as `BIGINT`, times as `DOUBLE PRECISION`
//! and the run's start and end as `timestamptz`, with the provenance columns (time basis,
//! machine, spidx version, git commit), instead of the storage tables' `REAL` counts and
//! text timestamps.
//!
//! The columns derived from a run's options and provenance ([`export::RUN_COLUMNS`]) are
//! not computed in SQL: [`fill`] stores them once per run in the table `run_columns`, with
//! the very function the export uses ([`export::run_values`]), when the run finishes, when
//! runs are merged in, and when an older database is upgraded (schema version 4). The view
//! joins them to `run_results` and casts every column to its declared type. SQLite gets the
//! same table and view (its types are affinities: the values are the export's all the same).

use serde_json::Value;

use super::backend::{Conn, DbResult, Dialect, Param};
use super::export::{self, ColumnType, COLUMNS, RUN_COLUMNS};

/// The SQL type of export type `ty` in `dialect`.
fn sql_type(ty: ColumnType, dialect: Dialect) -> &'static str {
    match (ty, dialect) {
        (ColumnType::Int, Dialect::Sqlite) => "INTEGER",
        (ColumnType::Int, Dialect::Postgres) => "BIGINT",
        (ColumnType::Real, Dialect::Sqlite) => "REAL",
        (ColumnType::Real, Dialect::Postgres) => "DOUBLE PRECISION",
        (ColumnType::Text, _) => "TEXT",
        (ColumnType::Timestamp, Dialect::Sqlite) => "TEXT",
        (ColumnType::Timestamp, Dialect::Postgres) => "TIMESTAMPTZ",
    }
}

/// `source` cast to export type `ty`: integers rounded (a count stored as `REAL` is
/// integral; the export rounds the same way), timestamps parsed from their ISO 8601 text
/// (PostgreSQL; SQLite keeps the text).
fn cast(source: &str, ty: ColumnType, dialect: Dialect) -> String {
    match (ty, dialect) {
        (ColumnType::Int, _) => format!("CAST(ROUND({source}) AS BIGINT)"),
        (ColumnType::Real, _) => format!("CAST({source} AS {})", sql_type(ty, dialect)),
        (ColumnType::Text, _) | (ColumnType::Timestamp, Dialect::Sqlite) => source.to_string(),
        (ColumnType::Timestamp, Dialect::Postgres) => format!("CAST({source} AS TIMESTAMPTZ)"),
    }
}

/// The table `run_columns` and the view `typed_results` in `dialect` (part of the schema
/// from version 4 on).
pub(crate) fn schema_sql(dialect: Dialect) -> String {
    let key = match dialect {
        Dialect::Sqlite => "INTEGER",
        Dialect::Postgres => "BIGINT",
    };
    let mut columns = vec![format!("run_id {key} PRIMARY KEY REFERENCES runs(id)")];
    for name in RUN_COLUMNS {
        let ty = export::column_type(name).expect("a run column is an export column");
        columns.push(format!("\"{name}\" {}", sql_type(ty, dialect)));
    }
    let select: Vec<String> = COLUMNS
        .iter()
        .map(|c| {
            let source = if RUN_COLUMNS.contains(&c.name) {
                format!("c.\"{}\"", c.name)
            } else {
                format!("v.\"{}\"", c.name)
            };
            // Run columns are stored typed already.
            let expr = if RUN_COLUMNS.contains(&c.name) {
                source
            } else {
                cast(&source, c.ty, dialect)
            };
            format!("{expr} AS \"{}\"", c.name)
        })
        .collect();
    let view = match dialect {
        Dialect::Sqlite => "CREATE VIEW IF NOT EXISTS",
        Dialect::Postgres => "CREATE OR REPLACE VIEW",
    };
    format!(
        "CREATE TABLE IF NOT EXISTS run_columns (\n  {}\n);\n\
         {view} typed_results AS\n  SELECT {}\n  FROM run_results v JOIN run_columns c ON c.run_id = v.run_id\n  WHERE v.status = 'finished';\n",
        columns.join(",\n  "),
        select.join(",\n         ")
    )
}

/// Stores the [`RUN_COLUMNS`] of run `run` (or of every run) that has none yet.
pub(super) fn fill(conn: &mut Conn, run: Option<i64>) -> DbResult<()> {
    let missing = conn.query(
        "SELECT r.* FROM runs r WHERE (CAST(?1 AS BIGINT) IS NULL OR r.id = ?1)
           AND NOT EXISTS (SELECT 1 FROM run_columns c WHERE c.run_id = r.id)",
        &[run.into()],
    )?;
    if missing.rows.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = RUN_COLUMNS.iter().map(|n| format!("\"{n}\"")).collect();
    let marks: Vec<String> = (2..=RUN_COLUMNS.len() + 1)
        .map(|i| format!("?{i}"))
        .collect();
    let sql = format!(
        "INSERT INTO run_columns (run_id, {}) VALUES (?1, {})",
        names.join(", "),
        marks.join(", ")
    );
    for row in missing.objects() {
        let id = row.get("id").and_then(Value::as_i64).unwrap_or(-1);
        let mut params = vec![Param::Int(id)];
        params.extend(export::run_values(&row).iter().map(Param::of_json));
        conn.execute(&sql, &params)?;
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use std::path::Path;

    use rusqlite::Connection;
    use serde_json::json;

    use super::super::pg_tests::record_all;
    use super::super::{export, ResultsDb, SCHEMA_VERSION};
    use crate::experiment::matrix::{self, RunConfig};
    use crate::experiment::spec;

    /// Eight runs whose run columns differ: two stores (one with a write buffer given as
    /// a size), two page sizes, two simulated devices.
    pub(in super::super) fn varied_runs() -> Vec<RunConfig> {
        let text = r#"
name = "typed"
[dataset]
generate = { distribution = "uniform", count = 10 }
[matrix]
index = [{ kind = "rtree" }]
store = [{ kind = "direct" }, { kind = "fast", write_buffer = "64KB", flushing_unit = 2, flush_policy = "fast-star", log_sync = "none" }]
page_size = ["1KB", "2KB"]
device = ["ssd-v300", "hdd-7200"]
[[workload]]
kind = "construction"
"#;
        let s = spec::parse(text, "typed.toml", Path::new(".")).unwrap();
        matrix::expand(&s, 2).unwrap()
    }

    fn view(db: &ResultsDb) -> super::super::Table {
        db.with(|c| {
            c.query(
                "SELECT * FROM typed_results ORDER BY run_id, workload_ordinal",
                &[],
            )
        })
        .unwrap()
    }

    #[test]
    fn the_typed_view_is_the_export() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        let mut db = ResultsDb::open(&p).unwrap();
        record_all(&mut db, &varied_runs());
        let export = export::results_table(&db, None, false).unwrap();
        let got = view(&db);
        assert_eq!(got.columns, export.columns);
        assert_eq!(got.rows.len(), 8);
        assert_eq!(got.rows, export.rows);
        // The derived columns hold what the options say.
        let objects = got.objects();
        let fast: Vec<_> = objects
            .iter()
            .filter(|o| o["store_kind"] == "fast")
            .collect();
        assert_eq!(fast.len(), 4);
        for o in &fast {
            assert_eq!(o["store_write_buffer"], json!(65536));
            assert_eq!(o["store_flushing_unit"], json!(2));
            assert_eq!(o["time_basis"], "modelled");
            assert!(o["reads"].is_i64(), "{o:?}");
        }
        drop(db);
        // A database of version 3 (without what versions 4 and 5 added): the upgrade adds the
        // columns and views and fills the run columns.
        let c = Connection::open(&p).unwrap();
        c.execute_batch(
            "DROP VIEW typed_results; DROP VIEW run_results; DROP TABLE run_columns;
             ALTER TABLE runs DROP COLUMN inputs_hash; ALTER TABLE runs DROP COLUMN inputs_json;
             ALTER TABLE results DROP COLUMN rep_median_s; ALTER TABLE results DROP COLUMN rep_sd_s;
             ALTER TABLE results DROP COLUMN rep_ci95_low_s;
             ALTER TABLE results DROP COLUMN rep_ci95_high_s;
             UPDATE meta SET value = '3' WHERE key = 'schema_version';",
        )
        .unwrap();
        drop(c);
        let db = ResultsDb::open(&p).unwrap();
        assert_eq!(view(&db).rows, export.rows);
        let v: String = Connection::open(&p)
            .unwrap()
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION.to_string());
        drop(db);
        // Merged into another database: the copied runs get their run columns.
        let merged = dir.path().join("merged.db");
        super::super::merge(&merged, std::slice::from_ref(&p)).unwrap();
        let m = ResultsDb::open_existing(&merged).unwrap();
        let want = export::results_table(&m, None, false).unwrap();
        assert_eq!(want.rows.len(), 8);
        assert_eq!(view(&m).rows, want.rows);
    }
}
