//! Runs are traceable to their inputs by content: `spidx run --resume` does not take a
//! finished run for done when its dataset file was replaced under the same name (it runs it
//! again and names the file and what changed), `--dry-run` shows that plan without running
//! anything, `spidx results inputs` and the report show which runs used which data, counts
//! are integers in `run --json`, and query workloads record the spread of their repetitions.

mod common;

use std::path::Path;

use common::{generate, json_of, spidx};
use serde_json::Value;

fn spec(dir: &Path) -> String {
    let text = r#"
name = "fingerprints"
[dataset]
file = "data.fgb"
[protocol]
repetitions = 3
[matrix]
index = [{ kind = "rtree", split = "quadratic" }]
page_size = ["2KB", "4KB"]
device = ["memory"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "1%"
queries = 4
"#;
    let p = dir.join("e.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn data(dir: &Path, count: u64, seed: u64) {
    let p = dir.join("data.fgb");
    let _ = std::fs::remove_file(&p);
    generate(
        dir,
        "data.fgb",
        &[
            "--distribution",
            "buildings",
            "--count",
            &count.to_string(),
            "--seed",
            &seed.to_string(),
        ],
    );
}

/// `spidx ARGS` with the input hash cache in `dir`; stdout, asserted to succeed.
fn run_in(dir: &Path, args: &[&str]) -> String {
    let out = spidx()
        .env("SPIDX_CACHE_DIR", dir.join("cache"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json_in(dir: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&run_in(dir, args)).unwrap()
}

#[test]
fn a_replaced_dataset_is_run_again_and_named() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    data(dir, 300, 1);
    let spec = spec(dir);
    let db = dir.join("r.db").display().to_string();

    // Before anything ran: a dry run lists both runs, runs nothing, creates nothing.
    let plan = json_in(
        dir,
        &[
            "run",
            &spec,
            "--results",
            &db,
            "--resume",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(plan["to_run"], 2, "{plan}");
    assert!(plan["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["action"] == "run"));
    assert!(!Path::new(&db).exists(), "a dry run writes nothing");

    let first = json_in(dir, &["run", &spec, "--results", &db, "--quiet", "--json"]);
    let runs = first["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        for w in r["workloads"].as_array().unwrap() {
            // Counts are integers in JSON, times floats.
            assert!(w["reads"].is_u64() && w["writes"].is_u64(), "{w}");
            assert!(w["elapsed_s"].is_f64(), "{w}");
            if w["kind"] == "range" {
                assert_eq!(w["repetitions"], 3, "{w}");
                let sd = w["rep_sd_s"].as_f64().unwrap();
                let ci = w["rep_ci95_s"].as_array().unwrap();
                let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
                // The mean of the totals is the sum of per-query means (up to rounding).
                let mean = w["elapsed_s"].as_f64().unwrap();
                let eps = 1e-9 * mean.abs() + 1e-12;
                assert!(sd >= 0.0 && lo <= mean + eps && mean <= hi + eps, "{w}");
            }
        }
    }

    // Same data: everything is done.
    let again = json_in(
        dir,
        &[
            "run",
            &spec,
            "--results",
            &db,
            "--quiet",
            "--json",
            "--resume",
        ],
    );
    assert_eq!(again["skipped"], 2, "{again}");
    assert!(again["runs"].as_array().unwrap().is_empty());
    let plan = json_in(
        dir,
        &[
            "run",
            &spec,
            "--results",
            &db,
            "--resume",
            "--dry-run",
            "--json",
        ],
    );
    for r in plan["runs"].as_array().unwrap() {
        assert_eq!(r["action"], "skip", "{r}");
        assert!(r["why"].as_str().unwrap().contains("same inputs"), "{r}");
    }

    // Another dataset under the same name.
    data(dir, 500, 2);
    let plan = json_in(
        dir,
        &[
            "run",
            &spec,
            "--results",
            &db,
            "--resume",
            "--dry-run",
            "--json",
        ],
    );
    assert_eq!(plan["skipped"], 0, "{plan}");
    for r in plan["runs"].as_array().unwrap() {
        assert_eq!(r["action"], "run again", "{r}");
        let why = r["why"].as_str().unwrap();
        assert!(
            why.contains("dataset data.fgb changed: 300 → 500 objects"),
            "{why}"
        );
    }
    let text = run_in(
        dir,
        &["run", &spec, "--results", &db, "--quiet", "--resume"],
    );
    assert!(
        text.contains("2 runs were done before and ran again (--resume): dataset data.fgb changed: 300 → 500 objects"),
        "{text}"
    );
    assert!(!text.contains("skipped"), "{text}");
    // Now done over the new data.
    let again = json_in(
        dir,
        &[
            "run",
            &spec,
            "--results",
            &db,
            "--quiet",
            "--json",
            "--resume",
        ],
    );
    assert_eq!(again["skipped"], 2, "{again}");

    // Which runs used which data.
    let inputs = json_in(dir, &["results", "inputs", "--results", &db, "--json"]);
    let datasets: Vec<&Value> = inputs["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["role"] == "dataset")
        .collect();
    assert_eq!(datasets.len(), 2, "{inputs}");
    let mut records: Vec<u64> = datasets
        .iter()
        .map(|i| i["records"].as_u64().unwrap())
        .collect();
    records.sort_unstable();
    assert_eq!(records, [300, 500]);
    for i in &datasets {
        assert_eq!(i["runs"].as_array().unwrap().len(), 2, "{i}");
        assert_eq!(i["versions_of_this_input"], 2);
    }
    // The export names each run's inputs; every finished run is there with --all.
    let rows = json_of(&[
        "results",
        "export",
        "--format",
        "json",
        "--results",
        &db,
        "--all",
    ]);
    let hashes: std::collections::BTreeSet<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["inputs_hash"].as_str().unwrap())
        .collect();
    // One hash per version of the data (both page sizes run on the same device and data).
    assert_eq!(hashes.len(), 2, "{hashes:?}");
    for r in rows.as_array().unwrap() {
        if r["kind"] == "range" {
            assert!(
                r["rep_sd_s"].is_f64() && r["rep_ci95_low_s"].is_f64(),
                "{r}"
            );
            assert!(r["rep_median_s"].is_f64(), "{r}");
        }
    }

    // The report says the database mixes data.
    let out = dir.join("report");
    run_in(
        dir,
        &[
            "report",
            "--results",
            &db,
            "--out",
            &out.display().to_string(),
        ],
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("mixed data"), "no mixed-data notice");
    assert!(
        html.contains("2 different contents of dataset"),
        "no mixed-data notice naming the dataset"
    );
    assert!(html.contains("σ over repetitions"), "no σ column");
}

#[test]
fn a_spec_without_changes_reuses_the_hash_cache() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    data(dir, 200, 3);
    let spec = spec(dir);
    let db = dir.join("r.db").display().to_string();
    run_in(dir, &["run", &spec, "--results", &db, "--dry-run"]);
    let cache = dir.join("cache/input-hashes.json");
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(text.contains("data.fgb"), "{text}");
    // A planted hash for the unchanged file is what the next invocation uses: the file
    // was not read again.
    let v: Value = serde_json::from_str(&text).unwrap();
    let real = v.as_object().unwrap().values().next().unwrap()["hash"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(&cache, text.replace(&real, &"f".repeat(32))).unwrap();
    let plan = json_in(
        dir,
        &["run", &spec, "--results", &db, "--dry-run", "--json"],
    );
    let key = plan["runs"][0]["inputs_hash"].as_str().unwrap().to_string();
    std::fs::remove_file(&cache).unwrap();
    let plan = json_in(
        dir,
        &["run", &spec, "--results", &db, "--dry-run", "--json"],
    );
    assert_ne!(
        plan["runs"][0]["inputs_hash"].as_str().unwrap(),
        key,
        "the cached (planted) hash was used while the file was unchanged"
    );
}
