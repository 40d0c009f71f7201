//! End-to-end tests of `spidx build --store rftl` (RFTL) through the binary: its
//! statistics in the output, answers equal to the direct store's, `check`, `query` and
//! `recover` on the index, and clear errors for flags of other stores (and RFTL's own flag
//! on other stores).

use predicates::prelude::*;
use predicates::str::contains;

mod common;

use common::{assert_build_refused, buildings, spidx, window_ids, BesideDirect};

#[test]
fn rftl_builds_report_unit_pages_and_answer_like_the_direct_store() {
    let rftl = [
        "--store",
        "rftl",
        "--write-buffer",
        "32KB",
        "--store-opt",
        "max_pages=3",
    ];
    let t = BesideDirect::new("rftl", &["--index", "rstar"], &rftl);
    let j = &t.built;
    let r = &j["store"]["rftl"];
    assert!(r["unit_pages_written"].as_u64().unwrap() > 0, "{r}");
    assert!(r["compactions"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["settings"]["max_pages"], 3, "{r}");
    assert!(r["gauges"]["max_node_pages"].as_u64().unwrap() <= 3, "{r}");
    let b = &j["store"]["buffered"];
    assert!(b["flushes"].as_u64().unwrap() > 0, "{b}");
    assert_eq!(b["settings"]["flush_policy"], "flush-all", "{b}");
    assert_eq!(
        b["image_records"], 0,
        "out-of-place writes log no images: {b}"
    );
    assert!(j["store"]["settings"]["durability"]
        .as_str()
        .unwrap()
        .contains("checkpoint"));
    t.assert_answers_like_direct();
    // The paper's behaviour: the log outside the device, not crash-safe, and said so.
    spidx()
        .args(["build", "--data", &t.data, "--index", "rstar", "--out"])
        .arg(t.out("paper"))
        .args(&rftl[..4])
        .args(["--log-device", "uncounted"])
        .assert()
        .success()
        .stdout(contains("\nrftl ").and(contains("NOT crash-safe")));
    let q = |dir: &str| window_ids(&t.out(dir), "100000,100000,400000,500000");
    assert_eq!(q("direct"), q("paper"));
}

#[test]
fn bad_rftl_options_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let data = buildings(tmp.path(), "3000");
    let o = tmp.path().join("x");
    let o = o.to_str().unwrap();
    let rftl = ["--index", "rtree", "--store", "rftl"];
    let with = |extra: &[&'static str]| [&rftl[..], extra].concat();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (rftl.to_vec(), "--store rftl: missing field `write_buffer`"),
        (
            with(&["--write-buffer", "64KB", "--store-opt", "flushing_unit=3"]),
            "--store-opt flushing_unit: unknown field",
        ),
        (
            with(&["--write-buffer", "64KB", "--store-opt", "flush_policy=fast"]),
            "--store-opt flush_policy: unknown field",
        ),
        (
            with(&["--write-buffer", "64KB", "--store-opt", "read_policy=lru"]),
            "--store-opt read_policy: unknown field",
        ),
        (with(&["--write-buffer", "0"]), "RFTL write_buffer"),
        (
            with(&["--write-buffer", "1KB"]),
            "less than one 4096-byte unit page",
        ),
        (
            with(&["--write-buffer", "64KB", "--store-opt", "max_pages=0"]),
            "RFTL max_pages",
        ),
        (
            with(&["--write-buffer", "64KB", "--store-opt", "max_pages=many"]),
            "--store-opt max_pages",
        ),
        (
            with(&["--write-buffer", "64KB", "--log-size", "64KB"]),
            "RFTL log_size",
        ),
        (
            with(&["--write-buffer", "64KB", "--log-sync", "often"]),
            "each-op, group:N",
        ),
        (
            with(&["--store-opt", "journal=false"]),
            "--store-opt journal: unknown field",
        ),
        // RFTL's own flag on other stores.
        (
            vec!["--index", "rtree", "--store-opt", "max_pages=3"],
            "--store-opt max_pages: unknown field",
        ),
        (
            vec![
                "--index",
                "rtree",
                "--store",
                "lcr",
                "--write-buffer",
                "64KB",
                "--store-opt",
                "max_pages=3",
            ],
            "--store-opt max_pages: unknown field",
        ),
        (
            vec![
                "--index",
                "rtree",
                "--store",
                "fast",
                "--write-buffer",
                "64KB",
                "--store-opt",
                "flushing_unit=2",
                "--store-opt",
                "flush_policy=fast",
                "--store-opt",
                "max_pages=3",
            ],
            "--store-opt max_pages: unknown field",
        ),
    ];
    for (extra, needle) in cases {
        assert_build_refused(&data, o, &extra, needle);
    }
}
