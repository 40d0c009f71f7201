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
