//! Shards of one matrix run at once by separate processes into one PostgreSQL results
//! database (`spidx run SPEC --shard K/N --results postgres://…`) give the same runs and
//! the same simulated counts as the whole matrix run into an SQLite file; `spidx results`
//! and `results merge` work against the PostgreSQL database. Needs a PostgreSQL server
//! binary (skipped with a message without one, unless SPIDX_REQUIRE_POSTGRES is set).

mod common;

use std::path::Path;
use std::process::Command;

use common::{json_of, spidx};
use spidx::experiment::db::pg_server::{self, TempPostgres};

const SPEC: &str = r#"
name = "sharded-pg"
[dataset]
generate = { distribution = "buildings", count = 600, seed = 11 }
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

/// Every finished run's key and workload with its simulated figures (CPU and elapsed
/// times left out: measured, not modelled), sorted.
fn figures(results: &str) -> Vec<String> {
    let rows = json_of(&[
        "results",
        "export",
        "--format",
        "json",
        "--all",
        "--results",
        results,
    ]);
    let mut out: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let f = |k: &str| {
                r[k].as_f64()
                    .map_or("-".to_string(), |v| format!("{v:.9e}"))
            };
            format!(
                "{} {} {} {} {} {} {} {} {} {} {}",
                r["run_key"].as_str().unwrap(),
                r["run"].as_str().unwrap(),
                r["workload"].as_str().unwrap(),
                f("reads"),
                f("writes"),
                f("erases"),
                f("device_s"),
                f("nodes"),
                f("height"),
                f("answers"),
                f("candidates"),
            )
        })
        .collect();
    out.sort();
    out
}

fn metric_rows(results: &str) -> Vec<String> {
    let rows = json_of(&[
        "results",
        "export",
        "--format",
        "json",
        "--metrics",
        "--results",
        results,
    ]);
    let mut out: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            let n = m["name"].as_str().unwrap();
            !n.contains("cpu_s") && !n.contains("elapsed_s")
        })
        .map(|m| {
            format!(
                "{} {} {} {} {}",
                m["run"], m["workload"], m["name"], m["kind"], m["value"]
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn shard_processes_into_one_postgres_database_equal_the_whole_run() {
    let Some(pg) = TempPostgres::start().unwrap() else {
        pg_server::skip(pg_server::NO_SERVER);
        return;
    };
    let url = pg.create_database("shards").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.toml"), SPEC).unwrap();
    let whole = d.join("whole.db").display().to_string();
    spidx()
        .current_dir(d)
        .args(["run", "spec.toml", "--results", &whole, "--quiet"])
        .assert()
        .success();
    // Three shard processes at once, all appending to the one PostgreSQL database.
    let bin = assert_cmd::cargo::cargo_bin("spidx");
    let children: Vec<_> = (0..3)
        .map(|k| {
            Command::new(&bin)
                .current_dir(d)
                .args(["run", "spec.toml", "--results", &url, "--quiet", "--shard"])
                .arg(format!("{k}/3"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let want = figures(&whole);
    assert_eq!(want.len(), 24);
    assert_eq!(figures(&url), want);
    assert_eq!(metric_rows(&url), metric_rows(&whole));
    let list = json_of(&["results", "list", "--results", &url, "--json"]);
    assert_eq!(list["experiments"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["experiments"][0]["finished"], 12, "{list}");
    // `--resume` against it finds everything done.
    let out = spidx()
        .current_dir(d)
        .args([
            "run",
            "spec.toml",
            "--results",
            &url,
            "--resume",
            "--json",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skipped"], 12, "{v}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 0, "{v}");
    // `results show` reads it; the merge copies it into one SQLite file like any input.
    let show = spidx()
        .args(["results", "show", "1", "--results", &url])
        .output()
        .unwrap();
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let merged = d.join("merged.db").display().to_string();
    let v = json_of(&["results", "merge", &url, "--out", &merged, "--json"]);
    assert_eq!(v["finished"], 12, "{v}");
    assert_eq!(figures(&merged), want);
    assert!(Path::new(&merged).is_file());
}

#[test]
fn a_spec_names_its_postgres_database_and_the_password_comes_from_pgpassword() {
    let Some(pg) = TempPostgres::start().unwrap() else {
        pg_server::skip(pg_server::NO_SERVER);
        return;
    };
    pg.create_database("keyed").unwrap();
    pg.add_password_role("worker", "s3cret").unwrap();
    let url = format!("postgres://worker@127.0.0.1:{}/keyed", pg.port());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = SPEC
        .replacen(
            "name = \"sharded-pg\"",
            &format!("name = \"keyed\"\nresults = \"{url}\""),
            1,
        )
        .replacen("count = 600", "count = 200", 1);
    std::fs::write(d.join("spec.toml"), spec).unwrap();
    let run = |password: Option<&str>| {
        let mut c = spidx();
        c.current_dir(d)
            .args(["run", "spec.toml", "--json", "--quiet"])
            .env_remove("PGPASSWORD");
        if let Some(p) = password {
            c.env("PGPASSWORD", p);
        }
        c.output().unwrap()
    };
    // No password, or a wrong one: refused before anything runs, the server named.
    for pw in [None, Some("wrong")] {
        let out = run(pw);
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{pw:?}");
        assert!(
            e.contains("cannot connect") && e.contains("127.0.0.1"),
            "{pw:?}: {e}"
        );
    }
    let out = run(Some("s3cret"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results"], url.as_str(), "{v}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 12, "{v}");
    // The report reads the PostgreSQL database like a file.
    let mut cmd = spidx();
    cmd.env("PGPASSWORD", "s3cret");
    let html = common::report_html_with(cmd, &url, &d.join("report"));
    assert!(html.contains("keyed"), "the report names the experiment");
}
