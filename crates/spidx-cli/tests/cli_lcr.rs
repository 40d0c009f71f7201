//! End-to-end tests of `spidx build --store lcr` (the LCR-tree) through the binary: its
//! statistics in the output, answers equal to the direct store's, `check`, `query` and
//! `recover` on the index, and clear errors for flags of other stores.

use predicates::prelude::*;
use predicates::str::contains;

mod common;

use common::{assert_build_refused, buildings, spidx, window_ids, BesideDirect};

#[test]
fn lcr_builds_report_log_pages_and_answer_like_the_direct_store() {
    let lcr = ["--store", "lcr", "--write-buffer", "32KB"];
    let t = BesideDirect::new(
        "lcr",
        &["--index", "rtree", "--index-opt=split=quadratic"],
        &lcr,
    );
    let j = &t.built;
    let l = &j["store"]["lcr"];
    assert!(l["log_page_writes"].as_u64().unwrap() > 0, "{l}");
    assert!(l["settings"]["log_page_slots"].as_u64().unwrap() > 0, "{l}");
    let b = &j["store"]["buffered"];
    assert!(b["flushes"].as_u64().unwrap() > 0, "{b}");
    assert_eq!(b["settings"]["flush_policy"], "flush-all", "{b}");
    assert!(j["store"]["settings"]["durability"]
        .as_str()
        .unwrap()
        .contains("checkpoint"));
    t.assert_answers_like_direct();
    // The paper's behaviour: the log outside the device, not crash-safe, and said so.
    spidx()
        .args(["build", "--data", &t.data, "--index", "rtree", "--out"])
        .arg(t.out("paper"))
        .args(lcr)
        .args(["--log-device", "uncounted"])
        .assert()
        .success()
        .stdout(contains("\nlcr ").and(contains("NOT crash-safe")));
    let q = |dir: &str| window_ids(&t.out(dir), "100000,100000,400000,500000");
    assert_eq!(q("direct"), q("paper"));
}

#[test]
fn bad_lcr_options_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let data = buildings(tmp.path(), "3000");
    let o = tmp.path().join("x");
    let o = o.to_str().unwrap();
    let lcr = ["--index", "rtree", "--store", "lcr"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (lcr.to_vec(), "--store lcr: missing field `write_buffer`"),
        (
            [
                &lcr[..],
                &["--write-buffer", "64KB", "--store-opt", "flushing_unit=3"],
            ]
            .concat(),
            "--store-opt flushing_unit: unknown field",
        ),
        (
            [
                &lcr[..],
                &["--write-buffer", "64KB", "--store-opt", "flush_policy=fast"],
            ]
            .concat(),
            "--store-opt flush_policy: unknown field",
        ),
        (
            [
                &lcr[..],
                &["--write-buffer", "64KB", "--store-opt", "read_policy=lru"],
            ]
            .concat(),
            "--store-opt read_policy: unknown field",
        ),
        (
            [&lcr[..], &["--write-buffer", "0"]].concat(),
            "LCR-tree write_buffer",
        ),
        (
            [&lcr[..], &["--write-buffer", "64KB", "--log-size", "64KB"]].concat(),
            "LCR-tree log_size",
        ),
        (
            [&lcr[..], &["--write-buffer", "64KB", "--log-sync", "often"]].concat(),
            "each-op, group:N",
        ),
        (
            vec![
                "--index",
                "rtree",
                "--store",
                "lcr",
                "--store-opt",
                "journal=false",
            ],
            "--store-opt journal: unknown field",
        ),
    ];
    for (extra, needle) in cases {
        assert_build_refused(&data, o, &extra, needle);
    }
}
