//! Tests of the PostgreSQL backend against a real server ([`TempPostgres`]): the schema
//! and its version, runs and metrics with their kinds, claims split between connections,
//! and merges between the two backends. Skipped (with a message) only when no server
//! binary is installed and `SPIDX_REQUIRE_POSTGRES` is unset.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::claim::Owner;
use super::pg_server::{self, TempPostgres};
use super::*;
use crate::experiment::protocol::Metrics;
use crate::experiment::runner::WorkloadResult;
use crate::experiment::{matrix, spec};

pub(super) fn server() -> Option<TempPostgres> {
    let s = TempPostgres::start().expect("temporary PostgreSQL server");
    if s.is_none() {
        pg_server::skip(pg_server::NO_SERVER);
    }
    s
}

fn runs() -> Vec<RunConfig> {
    let text = r#"
name = "pg"
[dataset]
generate = { distribution = "uniform", count = 10 }
[matrix]
index = [{ kind = "rtree" }]
page_size = ["1KB", "2KB", "4KB", "8KB"]
[[workload]]
kind = "construction"
"#;
    let s = spec::parse(text, "pg.toml", Path::new(".")).unwrap();
    matrix::expand(&s, 2).unwrap()
}

pub(super) fn me() -> Invocation {
    Invocation {
        dataset_json: "{}".into(),
        objects: 10,
        machine_json: "{}".into(),
        owner: Owner::this_process(),
        inputs: Default::default(),
    }
}

pub(super) fn result(page: f64, reads: f64) -> RunResult {
    let metrics = Metrics::from([
        ("device.host.read_ops".to_string(), reads),
        ("device.settings.page_size".to_string(), page),
        ("device.flash.gauges.write_amplification".to_string(), 1.25),
        ("settings.repetitions".to_string(), 3.0),
        ("elapsed_s".to_string(), 0.5),
    ]);
    RunResult {
        workloads: vec![WorkloadResult {
            name: "construction".into(),
            kind: "construction".into(),
            metrics,
            details: serde_json::json!({"x": 1}),
        }],
        wall_s: 1.0,
        index_s: 0.75,
    }
}

/// Records every run of `runs` as finished into `db` (experiment "pg", fingerprint "h").
pub(super) fn record_all(db: &mut ResultsDb, runs: &[RunConfig]) -> i64 {
    let exp = db
        .experiment("pg", "h", "{}", "spec text", "pg.toml")
        .unwrap();
    for (i, r) in runs.iter().enumerate() {
        let id = db.start_run(exp, r, &me()).unwrap();
        db.finish_run(id, &result(r.options.page_size as f64, i as f64), 0.25)
            .unwrap();
    }
    exp
}

#[test]
fn postgres_holds_the_same_schema_runs_and_kinds() {
    let Some(pg) = server() else { return };
    let url = pg.create_database("schema").unwrap();
    let p = PathBuf::from(&url);
    let runs = runs();
    {
        let mut db = ResultsDb::open(&p).unwrap();
        record_all(&mut db, &runs);
    }
    // Reopened by another connection, for writing and read-only: one schema version.
    drop(ResultsDb::open(&p).unwrap());
    let db = ResultsDb::open_existing(&p).unwrap();
    let v = db
        .with(|c| c.value("SELECT value FROM meta WHERE key = 'schema_version'", &[]))
        .unwrap()
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION.to_string());
    let exps = db.experiments().unwrap().objects();
    assert_eq!(exps.len(), 1);
    assert_eq!(exps[0]["finished"], 4);
    let results = db.results(Some("pg"), true).unwrap().objects();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0]["repetitions"], 3.0);
    assert_eq!(results[0]["write_amplification"], 1.25);
    let collected = db.metrics(Some("pg"), None).unwrap();
    let mut streamed = Vec::new();
    db.metrics_each::<crate::Error>(Some("pg"), None, |r| {
        streamed.push(r.to_vec());
        Ok(())
    })
    .unwrap();
    assert_eq!(
        streamed, collected.rows,
        "streamed from the server, the same rows"
    );
    let m = collected.objects();
    assert_eq!(m.len(), 4 * 5);
    for row in &m {
        let name = row["name"].as_str().unwrap();
        let kind = row["kind"].as_str().unwrap();
        assert_eq!(kind, protocol::MetricKind::of(name).as_str(), "{name}");
        if name == "device.settings.page_size" {
            assert!([1024.0, 2048.0, 4096.0, 8192.0].contains(&row["value"].as_f64().unwrap()));
        }
    }
    assert_eq!(db.latest_experiment().unwrap().as_deref(), Some("pg"));
    // Read-only: nothing can be appended through it.
    assert!(db.with(|c| c.execute("DELETE FROM metrics", &[])).is_err());
    // Not a results database: refused.
    let other = pg.create_database("other").unwrap();
    postgres::Client::connect(&other, postgres::NoTls)
        .unwrap()
        .batch_execute("CREATE TABLE t (x INT)")
        .unwrap();
    let e = ResultsDb::open(Path::new(&other))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a spidx results database"), "{e}");
    // A newer version: refused for reading and writing.
    postgres::Client::connect(&url, postgres::NoTls)
        .unwrap()
        .batch_execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
        .unwrap();
    for e in [
        ResultsDb::open(&p).err().unwrap().to_string(),
        ResultsDb::open_existing(&p).err().unwrap().to_string(),
    ] {
        assert!(e.contains("schema_version '9'"), "{e}");
    }
    // A server that is not there: a clear error naming it, the password hidden.
    let gone = format!("postgres://spidx:secret@127.0.0.1:{}/x", pg.port() ^ 1);
    let e = ResultsDb::open(Path::new(&gone)).err().unwrap().to_string();
    assert!(
        e.contains("cannot connect") && e.contains("spidx:***@"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
}

#[test]
fn postgres_claims_split_the_runs_between_connections() {
    let Some(pg) = server() else { return };
    let url = pg.create_database("claims").unwrap();
    let p = PathBuf::from(&url);
    let runs = runs();
    let mut a = ResultsDb::open(&p).unwrap();
    let mut b = ResultsDb::open(&p).unwrap();
    let exp = a.experiment("claims", "h", "{}", "", "c.toml").unwrap();
    assert_eq!(
        b.experiment("claims", "h", "{}", "", "c.toml").unwrap(),
        exp
    );
    let since = a.session_start().unwrap();
    assert!(since.ends_with('Z') && since.contains('T'), "{since}");
    let none = HashSet::new();
    let mut got = Vec::new();
    for i in 0..runs.len() {
        let db = if i % 2 == 0 { &mut a } else { &mut b };
        got.push(
            db.claim_next(exp, &runs, &none, &since, &me())
                .unwrap()
                .unwrap()
                .index,
        );
    }
    assert_eq!(got, vec![0, 1, 2, 3]);
    assert_eq!(
        a.claim_next(exp, &runs, &none, &since, &me()).unwrap(),
        None
    );
    // Many threads claiming at once, each with its own connection: every run once.
    let exp2 = a.experiment("claims", "h2", "{}", "", "c.toml").unwrap();
    let claimed: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (p, runs, since) = (&p, &runs, &since);
                s.spawn(move || {
                    let mut db = ResultsDb::open(p).unwrap();
                    let mut mine = Vec::new();
                    while let Some(c) = db
                        .claim_next(exp2, runs, &HashSet::new(), since, &me())
                        .unwrap()
                    {
                        mine.push(c.index);
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut sorted = claimed.clone();
    sorted.sort();
    assert_eq!(sorted, vec![0, 1, 2, 3], "{claimed:?}");
}

#[test]
fn merges_between_sqlite_and_postgres_keep_runs_and_kinds() {
    let Some(pg) = server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let runs = runs();
    // Two SQLite shards of the same experiment.
    let shards: Vec<PathBuf> = (0..2)
        .map(|k| dir.path().join(format!("s{k}.db")))
        .collect();
    for (k, s) in shards.iter().enumerate() {
        let mut db = ResultsDb::open(s).unwrap();
        let mine: Vec<RunConfig> = runs.iter().skip(k).step_by(2).cloned().collect();
        record_all(&mut db, &mine);
    }
    let url = PathBuf::from(pg.create_database("merged").unwrap());
    let r = merge(&url, &shards).unwrap();
    assert_eq!((r.finished, r.duplicates, r.experiments_added), (4, 0, 1));
    // Merging again finds every run present.
    let again = merge(&url, &shards).unwrap();
    assert_eq!((again.finished, again.duplicates), (0, 4));
    // And back into one SQLite file.
    let back = dir.path().join("back.db");
    let r = merge(&back, std::slice::from_ref(&url)).unwrap();
    assert_eq!(r.finished, 4);
    let rows = |p: &Path| {
        let db = ResultsDb::open_existing(p).unwrap();
        let mut m: Vec<String> = db
            .metrics(Some("pg"), None)
            .unwrap()
            .objects()
            .iter()
            .map(|o| format!("{} {} {} {}", o["run"], o["name"], o["kind"], o["value"]))
            .collect();
        m.sort();
        m
    };
    let mut want = rows(&shards[0]);
    want.extend(rows(&shards[1]));
    want.sort();
    assert_eq!(rows(&url), want);
    assert_eq!(rows(&back), want);
    // The same database as input and output is refused.
    let e = merge(&url, std::slice::from_ref(&url))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("both an input and the output"), "{e}");
}

/// The typed view in PostgreSQL: its columns are the export's, in order, each of the SQL
/// type of its declared type (information_schema), and its rows are the export's values;
/// a database of schema version 3 gets it on opening for writing.
#[test]
fn postgres_typed_results_are_the_export_typed() {
    use super::export::{ColumnType, COLUMNS};
    let Some(pg) = server() else { return };
    let url = pg.create_database("typed").unwrap();
    let p = PathBuf::from(&url);
    let mut db = ResultsDb::open(&p).unwrap();
    record_all(&mut db, &super::typed::tests::varied_runs());
    let types = db
        .with(|c| {
            c.query(
                "SELECT column_name, data_type FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = 'typed_results'
                 ORDER BY ordinal_position",
                &[],
            )
        })
        .unwrap();
    let got: Vec<(String, String)> = types
        .rows
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = COLUMNS
        .iter()
        .map(|c| {
            let ty = match c.ty {
                ColumnType::Int => "bigint",
                ColumnType::Real => "double precision",
                ColumnType::Text => "text",
                ColumnType::Timestamp => "timestamp with time zone",
            };
            (c.name.to_string(), ty.to_string())
        })
        .collect();
    assert_eq!(got, want);
    let same_as_export = |db: &ResultsDb| {
        // Timestamps back as the export's text, to compare.
        let select: Vec<String> = COLUMNS
            .iter()
            .map(|c| match c.ty {
                ColumnType::Timestamp => format!(
                    "to_char(\"{0}\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS \"{0}\"",
                    c.name
                ),
                _ => format!("\"{}\"", c.name),
            })
            .collect();
        let view = db
            .with(|c| {
                c.query(
                    &format!(
                        "SELECT {} FROM typed_results ORDER BY run_id, workload_ordinal",
                        select.join(", ")
                    ),
                    &[],
                )
            })
            .unwrap();
        let export = super::export::results_table(db, None, false).unwrap();
        assert_eq!(view.columns, export.columns);
        assert_eq!(view.rows.len(), 8);
        assert_eq!(view.rows, export.rows);
    };
    same_as_export(&db);
    drop(db);
    // A version 3 database: upgraded on opening for writing, its runs' columns computed.
    postgres::Client::connect(&url, postgres::NoTls)
        .unwrap()
        .batch_execute(
            "DROP VIEW typed_results; DROP VIEW run_results; DROP TABLE run_columns;
             ALTER TABLE runs DROP COLUMN inputs_hash, DROP COLUMN inputs_json;
             ALTER TABLE results DROP COLUMN rep_median_s, DROP COLUMN rep_sd_s,
               DROP COLUMN rep_ci95_low_s, DROP COLUMN rep_ci95_high_s;
             UPDATE meta SET value = '3' WHERE key = 'schema_version'",
        )
        .unwrap();
    let db = ResultsDb::open(&p).unwrap();
    let v = db
        .with(|c| c.value("SELECT value FROM meta WHERE key = 'schema_version'", &[]))
        .unwrap()
        .unwrap();
    assert_eq!(v, super::schema::SCHEMA_VERSION.to_string());
    same_as_export(&db);
}
