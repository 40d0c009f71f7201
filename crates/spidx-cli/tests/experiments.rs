//! End-to-end tests of the experiment runner: `spidx run`, `spidx results`, `spidx report`
//! on small specs, checking the results database's contents, determinism on simulated
//! devices, a killed-and-resumed run, and the errors bad input must raise before any work.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{json_of, spidx};
use serde_json::Value;

/// A small spec: 2 indices × 2 page sizes × 2 simulated devices, every workload kind.
fn small_spec(count: u64) -> String {
    format!(
        r#"
name = "small"
[dataset]
generate = {{ distribution = "buildings", count = {count} }}
[protocol]
repetitions = 2
[matrix]
index = [{{ kind = "rtree", split = "linear" }}, {{ kind = "rstar", reinsert = "30%" }}]
page_size = ["2KB", "4KB"]
device = ["ssd-v300", "hdd-7200"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.5%"
queries = 4
[[workload]]
kind = "point"
queries = 3
[[workload]]
kind = "knn"
k = 3
queries = 3
[[workload]]
kind = "mixed"
operations = 60
insert = 40
delete = 20
update = 20
query = 20
"#
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn export(db: &str, extra: &[&str]) -> Vec<serde_json::Map<String, Value>> {
    let mut args = vec!["results", "export", "--format", "json", "--results", db];
    args.extend_from_slice(extra);
    let v = json_of(&args);
    v.as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_object().unwrap().clone())
        .collect()
}

#[test]
fn a_small_experiment_fills_the_database_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", &small_spec(1500));
    let db = dir.path().join("r.db").display().to_string();
    let out = json_of(&["run", &spec, "--results", &db, "--json", "--quiet"]);
    let runs = out["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8);
    assert!(runs.iter().all(|r| r["status"] == "finished"));
    assert_eq!(runs[7]["name"], "R*-tree 30% · 4KB · hdd-7200");

    let rows = export(&db, &[]);
    assert_eq!(rows.len(), 8 * 5, "one row per run and workload");
    for r in &rows {
        assert!(r["elapsed_s"].as_f64().unwrap() > 0.0, "{r:?}");
        match r["kind"].as_str().unwrap() {
            "construction" => {
                assert!(r["writes"].as_f64().unwrap() > 0.0);
                assert!(r["height"].as_f64().unwrap() >= 2.0);
                assert!(r["nodes"].as_f64().unwrap() > 1.0);
            }
            "range" | "point" | "knn" => {
                assert_eq!(r["repetitions"].as_f64(), Some(2.0));
                let (min, med, max) = (
                    r["elapsed_min_s"].as_f64().unwrap(),
                    r["elapsed_median_s"].as_f64().unwrap(),
                    r["elapsed_max_s"].as_f64().unwrap(),
                );
                assert!(min <= med && med <= max && max <= r["elapsed_s"].as_f64().unwrap());
                assert!(r["reads"].as_f64().unwrap() > 0.0);
            }
            _ => {}
        }
        // Flash counters only on the flash device.
        assert_eq!(
            r["device"] == "ssd-v300",
            !r["flash_writes"].is_null(),
            "{r:?}"
        );
    }
    // The long-format metrics hold every layer's statistics.
    let metrics = export(&db, &["--metrics"]);
    let names: std::collections::HashSet<&str> = metrics
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for n in [
        "device.host.read_ops",
        "device.host.seq_writes",
        "tree.splits",
        "tree.writes_per_level.0",
        "store.nodes.nodes_created",
        "store.cache.faults",
        "final_flush.elapsed_s",
        "load.device.host.write_ops",
        "shape.gauges.levels.0.fill",
        "filter.elapsed_s",
        "refinement.device.host.read_ops",
        "node_reads_per_level.0",
        "device.flash.erases",
        "device.hdd.seeks",
        "insert.count",
        "query.elapsed_s",
    ] {
        assert!(names.contains(n), "metric {n} missing");
    }
    // CSV export: a header and one line per row.
    let csv = spidx()
        .args(["results", "export", "--format", "csv", "--results", &db])
        .output()
        .unwrap();
    assert!(csv.status.success());
    let mut rdr = csv::Reader::from_reader(&csv.stdout[..]);
    assert_eq!(rdr.records().count(), 40);
    // Parquet export: a file with Parquet's magic at both ends; it needs --out.
    let pq = dir.path().join("r.parquet");
    spidx()
        .args([
            "results",
            "export",
            "--format",
            "parquet",
            "--results",
            &db,
            "--out",
        ])
        .arg(&pq)
        .assert()
        .success();
    let bytes = std::fs::read(&pq).unwrap();
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    let no_out = spidx()
        .args(["results", "export", "--format", "parquet", "--results", &db])
        .output()
        .unwrap();
    assert!(!no_out.status.success());
    assert!(String::from_utf8_lossy(&no_out.stderr).contains("--out"));
    // Listing and showing.
    let list = json_of(&["results", "list", "--results", &db, "--json"]);
    assert_eq!(list["experiments"][0]["finished"], 8);
    let show = json_of(&[
        "results",
        "show",
        "1",
        "--results",
        &db,
        "--json",
        "--metrics",
    ]);
    assert_eq!(show["results"].as_array().unwrap().len(), 5);
    assert!(show["run"]["machine_json"]
        .as_str()
        .unwrap()
        .contains("cpus"));

    // The report: per device and workload the seeds' chart and the CPU/device split (and
    // more for queries), inline in one page and as SVG files; context and tables.
    let rep = dir.path().join("report");
    let html = common::report_html(&db, &rep);
    for needle in [
        "<h2>Context</h2>",
        "buildings",
        "modelled time",
        "Best configuration per workload and device",
        "Performance gains over R-tree (linear)",
        "Tree shape after construction",
        "selectivity",
        "per query",
    ] {
        assert!(html.contains(needle), "{needle} not in the report");
    }
    let svgs: Vec<_> = std::fs::read_dir(&rep)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    for d in ["ssd-v300", "hdd-7200"] {
        for chart in ["elapsed", "cpu-device", "reads", "writes"] {
            let f = format!("{chart}_{d}_construction.svg");
            assert!(svgs.contains(&f), "{f} missing from {svgs:?}");
        }
        for chart in ["elapsed", "per-query", "filter-refinement"] {
            let f = format!("{chart}_{d}_range-0-5-.svg");
            assert!(svgs.contains(&f), "{f} missing from {svgs:?}");
        }
    }
    // Erases only where the flash device erased; no chart of writes for queries (all zero).
    let erased = rows
        .iter()
        .any(|r| r["kind"] == "construction" && r["erases"].as_f64().unwrap_or(0.0) > 0.0);
    assert_eq!(
        svgs.contains(&"erases_ssd-v300_construction.svg".to_string()),
        erased
    );
    assert!(!svgs.iter().any(|s| s.starts_with("erases_hdd")));
    assert!(!svgs
        .iter()
        .any(|s| s.starts_with("writes_") && s.contains("range")));
    for s in &svgs {
        let svg = std::fs::read_to_string(rep.join(s)).unwrap();
        assert!(
            // Bars, or dots with whiskers where a per-query spread is drawn on a log axis.
            svg.starts_with("<svg")
                && (svg.contains(r#"class="bar""#) || svg.contains(r#"class="point""#)),
            "{s}"
        );
        assert!(html.contains(&svg), "{s} not inline in the page");
    }
    assert!(
        std::fs::read_to_string(rep.join("elapsed_hdd-7200_construction.svg"))
            .unwrap()
            .contains("R*-tree 30%")
    );

    // Re-running appends: 16 runs, the report and export use the newest of each.
    json_of(&["run", &spec, "--results", &db, "--json", "--quiet"]);
    let list = json_of(&["results", "list", "--results", &db, "--json"]);
    assert_eq!(list["runs"].as_array().unwrap().len(), 16);
    assert_eq!(export(&db, &[]).len(), 40);
    assert_eq!(export(&db, &["--all"]).len(), 80);
}

/// Every metric that must not depend on the machine's speed: all but CPU and elapsed
/// (which includes CPU) times.
fn deterministic(db: &str) -> BTreeMap<(String, String, String), f64> {
    export(db, &["--metrics"])
        .into_iter()
        .filter(|m| {
            let n = m["name"].as_str().unwrap();
            !n.contains("cpu_s") && !n.contains("elapsed_s")
        })
        .map(|m| {
            (
                (
                    m["run"].as_str().unwrap().to_string(),
                    m["workload"].as_str().unwrap().to_string(),
                    m["name"].as_str().unwrap().to_string(),
                ),
                m["value"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn same_spec_same_counts_and_simulated_times() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", &small_spec(800));
    let a = dir.path().join("a.db").display().to_string();
    let b = dir.path().join("b.db").display().to_string();
    for db in [&a, &b] {
        spidx()
            .args(["run", &spec, "--results", db, "--quiet"])
            .assert()
            .success();
    }
    let (ma, mb) = (deterministic(&a), deterministic(&b));
    assert!(ma.len() > 1000, "{} metrics", ma.len());
    assert!(ma.keys().any(|k| k.2 == "device_s"));
    assert_eq!(ma, mb);
}

fn finished(db: &str) -> Vec<(String, String)> {
    let list = json_of(&["results", "list", "--results", db, "--json"]);
    list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_killed_run_resumes_without_repeating_finished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "small.toml", &small_spec(20000));
    let db = dir.path().join("r.db").display().to_string();
    let bin = assert_cmd::cargo::cargo_bin("spidx");
    let mut child = std::process::Command::new(&bin)
        .args(["run", &spec, "--results", &db, "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if Path::new(&db).exists() {
            let done = std::process::Command::new(&bin)
                .args(["results", "list", "--results", &db, "--json"])
                .output()
                .unwrap();
            if done.status.success() {
                let v: Value = serde_json::from_slice(&done.stdout).unwrap();
                if v["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["status"] == "finished")
                {
                    break;
                }
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "no run finished");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = finished(&db);
    let done_before = before.iter().filter(|r| r.1 == "finished").count();
    assert!((1..8).contains(&done_before), "{before:?}");

    spidx()
        .args(["run", &spec, "--results", &db, "--quiet", "--resume"])
        .assert()
        .success()
        .stdout(predicates::str::contains("already done"));
    let after = finished(&db);
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (name, status) in &after {
        if status == "finished" {
            *count.entry(name).or_default() += 1;
        }
    }
    assert_eq!(count.len(), 8, "{after:?}");
    assert!(count.values().all(|c| *c == 1), "{after:?}");
    // The interrupted run stays recorded, marked failed ("abandoned": its process is
    // gone), and was run again.
    assert!(after.len() <= 9);
    assert!(
        after.iter().all(|r| r.1 == "finished" || r.1 == "failed"),
        "{after:?}"
    );
}

fn fails(args: &[&str], needles: &[&str]) {
    let out = spidx().args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in {err}");
    }
}

#[test]
fn bad_input_fails_early_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let db = d.join("r.db").display().to_string();
    let good = small_spec(100);
    // A typo in a key: the key and its line.
    let typo = write(d, "typo.toml", &good.replace("queries = 4", "querys = 4"));
    fails(&["run", &typo, "--results", &db], &["line 16", "querys"]);
    // A bad value.
    let bad = write(d, "bad.toml", &good.replace("\"2KB\"", "\"3XB\""));
    fails(
        &["run", &bad, "--results", &db],
        &["line 9", "page_size", "3XB"],
    );
    // A missing dataset file.
    let missing = write(
        d,
        "missing.toml",
        &good.replace(
            "generate = { distribution = \"buildings\", count = 100 }",
            "file = \"nowhere.fgb\"",
        ),
    );
    fails(
        &["run", &missing, "--results", &db],
        &["line 4", "nowhere.fgb", "does not exist"],
    );
    // An unwritable results path.
    let spec = write(d, "good.toml", &good);
    fails(
        &["run", &spec, "--results", "/nonexistent-dir/r.db"],
        &["results database", "/nonexistent-dir/r.db"],
    );
    // A dataset with an invalid geometry (a self-intersecting polygon) fails, unless the
    // spec asks to skip such records.
    write(
        d,
        "bad.wkt",
        "POLYGON((0 0,10 0,10 10,0 10,0 0))\nPOLYGON((0 0,10 10,10 0,0 10,0 0))\nPOLYGON((20 20,30 20,30 30,20 30,20 20))\n",
    );
    let invalid = good.replace(
        "generate = { distribution = \"buildings\", count = 100 }",
        "file = \"bad.wkt\"",
    );
    let invalid = invalid.replace("area = \"0.5%\"", "area = \"5%\"");
    let p = write(d, "invalid.toml", &invalid);
    fails(
        &["run", &p, "--results", &db],
        &["bad.wkt", "invalid", "skip_invalid"],
    );
    let p = write(
        d,
        "skip.toml",
        &invalid.replace(
            "file = \"bad.wkt\"",
            "file = \"bad.wkt\"\nskip_invalid = true",
        ),
    );
    let out = json_of(&["run", &p, "--results", &db, "--json", "--quiet"]);
    assert_eq!(out["runs"].as_array().unwrap().len(), 8);
    // Nothing was recorded for the failed invocations: only the last experiment is there.
    let list = json_of(&["results", "list", "--results", &db, "--json"]);
    assert_eq!(list["experiments"].as_array().unwrap().len(), 1);
    // Reading a database that does not exist.
    fails(
        &["results", "list", "--results", "/nonexistent-dir/r.db"],
        &["does not exist"],
    );
}

#[test]
fn the_specs_results_key_is_the_default_and_the_flag_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = small_spec(40).replacen(
        "name = \"small\"",
        "name = \"small\"\nresults = \"out/spec.db\"",
        1,
    );
    // Only the construction: this test is about where results go.
    let text = text
        .split("[[workload]]\nkind = \"range\"")
        .next()
        .unwrap()
        .to_string();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let spec = write(dir.path(), "s.toml", &text);
    // Run from another folder: the key is resolved against the spec's folder.
    let out = spidx()
        .current_dir(std::env::temp_dir())
        .args(["run", &spec, "--json", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_spec = dir.path().join("out/spec.db");
    assert_eq!(v["results"], from_spec.display().to_string());
    let list = json_of(&[
        "results",
        "list",
        "--results",
        from_spec.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(list["runs"].as_array().unwrap().len(), 8);
    // --results wins over the key; the spec's database gets nothing more.
    let flag = dir.path().join("flag.db").display().to_string();
    let v = json_of(&["run", &spec, "--results", &flag, "--json", "--quiet"]);
    assert_eq!(v["results"], flag);
    let list = json_of(&["results", "list", "--results", &flag, "--json"]);
    assert_eq!(list["runs"].as_array().unwrap().len(), 8);
    let list = json_of(&[
        "results",
        "list",
        "--results",
        from_spec.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(list["runs"].as_array().unwrap().len(), 8);
    // A bad key fails before anything runs, naming the key.
    let bad = write(
        dir.path(),
        "bad.toml",
        &text.replacen("out/spec.db", "ftp://x/y", 1),
    );
    fails(&["run", &bad], &["results", "neither a file path nor"]);
}
