//! Running one matrix in shards (`spidx run --shard K/N`) into separate databases and
//! merging them (`spidx results merge`) gives the same runs and the same simulated counts
//! as running it whole; bad shards and mismatched specs are refused.

mod common;

use std::path::Path;

use common::{json_of, spidx};
use rusqlite::Connection;

const SPEC: &str = r#"
name = "sharded"
[dataset]
generate = { distribution = "buildings", count = 800, seed = 7 }
[protocol]
repetitions = 2
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rtree", split = "quadratic" }, { kind = "rstar", reinsert = "30%" }]
page_size = ["1KB", "2KB"]
device = ["ssd-v300", "seed-table2"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "1%"
queries = 5
"#;

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = spidx().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(dir: &Path, args: &[&str]) -> String {
    let out = spidx().current_dir(dir).args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

/// Every finished run's key with its workloads' simulated figures (CPU times left out:
/// they are measured, not modelled), sorted.
fn figures(db: &Path) -> Vec<String> {
    let conn = Connection::open(db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT r.run_key, r.name, x.workload, x.reads, x.writes, x.erases, x.device_s,
                    x.nodes, x.height, x.answers, x.candidates
             FROM results x JOIN runs r ON r.id = x.run_id WHERE r.status = 'finished'",
        )
        .unwrap();
    let mut rows: Vec<String> = st
        .query_map([], |r| {
            Ok(format!(
                "{} {} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<f64>>(3)?,
                r.get::<_, Option<f64>>(4)?,
                r.get::<_, Option<f64>>(5)?,
                r.get::<_, Option<f64>>(6)?,
                r.get::<_, Option<f64>>(7)?,
                r.get::<_, Option<f64>>(8)?,
                r.get::<_, Option<f64>>(9)?,
                r.get::<_, Option<f64>>(10)?,
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    rows.sort();
    rows
}

fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

#[test]
fn shards_merged_equal_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.toml"), SPEC).unwrap();
    ok(d, &["run", "spec.toml", "--results", "whole.db", "--quiet"]);
    let mut sizes = Vec::new();
    for k in 0..3 {
        let shard = format!("{k}/3");
        let db = format!("s{k}.db");
        let summary = ok(
            d,
            &[
                "run",
                "spec.toml",
                "--results",
                &db,
                "--shard",
                &shard,
                "--json",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(v["shard"], shard.as_str());
        assert_eq!(v["matrix_runs"], 12);
        sizes.push(v["runs"].as_array().unwrap().len());
    }
    // Disjoint, covering, balanced: 12 runs in three shards of 4.
    assert_eq!(sizes, vec![4, 4, 4]);
    let p = |f: &str| d.join(f).display().to_string();
    let v = json_of(&[
        "results",
        "merge",
        &p("s0.db"),
        &p("s1.db"),
        &p("s2.db"),
        "--out",
        &p("all.db"),
        "--json",
    ]);
    let out = v.to_string();
    assert_eq!(v["finished"], 12, "{out}");
    assert_eq!(v["duplicates"], 0, "{out}");
    assert_eq!(v["experiments_added"], 1, "{out}");
    let whole = figures(&d.join("whole.db"));
    assert_eq!(whole.len(), 24);
    assert_eq!(figures(&d.join("all.db")), whole);
    // Every metric row came along.
    let metrics = "SELECT count(*) FROM metrics";
    assert_eq!(
        count(&d.join("all.db"), metrics),
        count(&d.join("whole.db"), metrics)
    );
    // Merging a shard again copies nothing and says so.
    let again = ok(d, &["results", "merge", "s1.db", "--out", "all.db"]);
    assert!(
        again.contains("4 finished runs were already present"),
        "{again}"
    );
    assert_eq!(figures(&d.join("all.db")), whole);
    // The merged database is usable by the other results commands.
    let list = ok(d, &["results", "list", "--results", "all.db"]);
    assert!(list.contains("sharded"), "{list}");
}

#[test]
fn bad_shards_and_mismatched_specs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.toml"), SPEC).unwrap();
    for (shard, needle) in [
        ("3/3", "counts from 0 to N-1"),
        ("0/0", "at least 1"),
        ("x", "is not K/N"),
    ] {
        let e = fails(
            d,
            &["run", "spec.toml", "--results", "r.db", "--shard", shard],
        );
        assert!(e.contains(needle), "{shard}: {e}");
    }
    assert!(
        !d.join("r.db").exists(),
        "a refused run created its database"
    );
    // Two "shards" of different specs under the same experiment name.
    ok(
        d,
        &[
            "run",
            "spec.toml",
            "--results",
            "a.db",
            "--shard",
            "0/6",
            "--quiet",
        ],
    );
    std::fs::write(
        d.join("spec.toml"),
        SPEC.replace("count = 800", "count = 900"),
    )
    .unwrap();
    ok(
        d,
        &[
            "run",
            "spec.toml",
            "--results",
            "b.db",
            "--shard",
            "1/6",
            "--quiet",
        ],
    );
    let e = fails(d, &["results", "merge", "a.db", "b.db", "--out", "m.db"]);
    assert!(e.contains("ran different specs"), "{e}");
    assert!(!d.join("m.db").exists(), "a refused merge left its output");
    // An input that is not a results database.
    std::fs::write(d.join("junk.db"), b"not sqlite at all, just text").unwrap();
    let e = fails(d, &["results", "merge", "a.db", "junk.db", "--out", "m.db"]);
    assert!(e.contains("junk.db"), "{e}");
    assert!(!d.join("m.db").exists());
    let e = fails(d, &["results", "merge", "a.db", "--out", "a.db"]);
    assert!(e.contains("both an input and the output"), "{e}");
}
