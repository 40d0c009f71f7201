//! End-to-end: the benchmark runs every implementation in child processes on a small
//! workload, every answer matches the brute-force scan, and the JSON report is complete.

use std::process::Command;

#[test]
fn small_run_matches_and_reports_json() {
    let out = Command::new(env!("CARGO_BIN_EXE_index_vs_libs"))
        .args([
            "--n",
            "3000",
            "--queries",
            "40",
            "--reps",
            "1",
            "--seed",
            "5",
            "--json",
        ])
        .output()
        .expect("run the benchmark");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "benchmark failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["all_match"], true, "{stderr}");
    let names: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "spidx-linear",
            "spidx-quadratic",
            "spidx-rstar30",
            "spidx-hilbert",
            "spidx-fortree",
            "rstar",
            "sqlite",
            "spidx-bulk-str",
            "spidx-bulk-hilbert",
            "spidx-bulk-omt",
            "spidx-hilbert-bulk",
            "rstar-bulk",
            "spidx-rstar30@file",
            "sqlite-file"
        ]
    );
    let results: Vec<u64> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["results"].as_u64().unwrap())
        .collect();
    assert!(results.iter().all(|&r| r == results[0]));
    for r in report["results"].as_array().unwrap() {
        assert!(r["peak_rss_kb"].as_u64().unwrap() > 0, "{r}");
        assert!(r["insert_wall_s"].as_f64().unwrap() > 0.0);
    }
    let sim = report["sim_results"].as_array().unwrap();
    assert!(sim.iter().any(|r| r["name"] == "spidx-linear@hdd-7200"));
    for r in sim {
        assert!(r["insert_io"]["device_ns"].as_u64().unwrap() > 0, "{r}");
        assert!(r["query_io"]["reads"].as_u64().unwrap() > 0, "{r}");
    }
    assert!(stderr.contains("answers = scan"), "the tables go to stderr");
}

#[test]
fn unknown_implementation_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_index_vs_libs"))
        .args(["--only", "btree", "--ids-out", "/dev/null", "--n", "10"])
        .output()
        .expect("run the benchmark");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown implementation"));
}

/// The C++ peers, built here by `scripts/build-peers` into a temporary directory: each one
/// runs beside the spidx variant it is paired with, its answers equal brute force's, and
/// the ratio table names the pair. Skipped (with a message) where no peer can be built.
#[test]
fn peers_run_beside_spidx_and_their_answers_are_checked() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let dir = std::env::temp_dir().join(format!("spidx-peers-test-{}", std::process::id()));
    let built = Command::new(format!("{root}/scripts/build-peers"))
        .arg(&dir)
        .output()
        .expect("run scripts/build-peers");
    assert!(built.status.success(), "{built:?}");
    let mut impls = vec!["spidx-linear", "spidx-bulk-str"];
    if dir.join("boost_peer").is_file() {
        impls.extend(["boost-linear102", "boost-pack102"]);
    }
    if dir.join("lsi_peer").is_file() {
        impls.push("lsi-linear100");
    }
    if impls.len() == 2 {
        eprintln!(
            "no peer built (no Boost.Geometry or libspatialindex headers): {}",
            String::from_utf8_lossy(&built.stderr)
        );
        return;
    }
    let ratios = dir.join("ratios.md");
    let out = Command::new(env!("CARGO_BIN_EXE_index_vs_libs"))
        .args(["--n", "3000", "--queries", "40", "--knn-queries", "30"])
        .args([
            "--reps",
            "1",
            "--rounds",
            "2",
            "--no-file",
            "--no-sim",
            "--json",
        ])
        .args(["--impls", &impls.join(",")])
        .arg("--peers-dir")
        .arg(&dir)
        .arg("--ratios")
        .arg(&ratios)
        .output()
        .expect("run the benchmark");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "benchmark failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["all_match"], true, "{stderr}");
    let names: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, impls);
    let table = std::fs::read_to_string(&ratios).expect("the ratio table");
    let _ = std::fs::remove_dir_all(&dir);
    if impls.contains(&"boost-linear102") {
        assert!(
            table.contains("| spidx-linear | boost-linear102 |"),
            "{table}"
        );
        assert!(
            table.contains("| spidx-bulk-str | boost-pack102 |"),
            "{table}"
        );
    }
    assert_eq!(
        table.lines().count(),
        2 + impls.len() - 2,
        "one row per pair: {table}"
    );
}

#[test]
fn a_named_peer_that_is_not_built_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_index_vs_libs"))
        .args([
            "--n",
            "100",
            "--impls",
            "boost-linear102",
            "--no-sim",
            "--no-file",
        ])
        .args(["--peers-dir", "/nonexistent-peers"])
        .output()
        .expect("run the benchmark");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("scripts/build-peers"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
