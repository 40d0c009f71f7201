//! End-to-end tests of `spidx build --store fast` and `spidx recover` through the binary:
//! FAST statistics in the output, answers equal to the direct store's, bad options.

use std::path::Path;

use predicates::prelude::*;
use predicates::str::contains;

mod common;

use common::{json_of, spidx};

fn dataset(dir: &Path) -> String {
    let p = dir.join("b.fgb");
    spidx()
        .args([
            "dataset",
            "generate",
            "--distribution",
            "buildings",
            "--count",
            "3000",
            "--out",
        ])
        .arg(&p)
        .assert()
        .success();
    p.to_str().unwrap().to_string()
}

const FAST: [&str; 8] = [
    "--store",
    "fast",
    "--write-buffer",
    "64KB",
    "--flushing-unit",
    "3",
    "--flush-policy",
    "fast-star",
];

#[test]
fn fast_builds_report_flushes_and_answer_like_the_direct_store() {
    let tmp = tempfile::tempdir().unwrap();
    let data = dataset(tmp.path());
    let out = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    let base = [
        "build",
        "--data",
        &data,
        "--index",
        "rstar",
        "--page-size",
        "2KB",
        "--device",
        "seed-table2",
        "--json",
    ];
    let direct = json_of(&[&base[..], &["--out", &out("direct")]].concat());
    let fast = json_of(&[&base[..], &FAST[..], &["--out", &out("fast")]].concat());
    let f = &fast["store"]["fast"];
    assert!(f["flushes"].as_u64().unwrap() > 0, "{f}");
    assert!(f["log"]["commits"].as_u64().unwrap() >= 3000, "{f}");
    assert_eq!(fast["store"]["kind"], "fast");
    assert!(direct["store"]["fast"].is_null());
    assert_eq!(fast["objects"], direct["objects"]);
    for dir in ["direct", "fast"] {
        spidx().args(["check", &out(dir)]).assert().success();
    }
    let q = |dir: &str| {
        json_of(&[
            "query",
            &out(dir),
            "--window",
            "100000,100000,400000,500000",
            "--json",
        ])["ids"]
            .clone()
    };
    assert_eq!(q("direct"), q("fast"));
    let rec = json_of(&["recover", &out("fast"), "--json"]);
    assert_eq!(rec["store"], "fast");
    assert!(rec["recovery"]["records_replayed"].as_u64().unwrap() >= 1);
    assert_eq!(rec["recovery"]["records_dropped"], 0);
    spidx()
        .args(["recover", &out("direct")])
        .assert()
        .success()
        .stdout(contains(
            "no log or journal: the index reopened at its last checkpoint",
        ));
    spidx()
        .args(["build", "--data", &data, "--index", "rtree", "--out"])
        .arg(out("human"))
        .args(FAST)
        .assert()
        .success()
        .stdout(contains("FAST").and(contains("compactions")));
}

#[test]
fn bad_fast_options_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let data = dataset(tmp.path());
    let cases: [(&[&str], &str); 8] = [
        (
            &["--store", "direct", "--flush-policy", "fast"],
            "--flush-policy applies to --store fast or efind only",
        ),
        (
            &["--store", "fast", "--write-buffer", "64KB"],
            "needs --flushing-unit, --flush-policy",
        ),
        (
            &fast_with("--flushing-unit", "40"),
            "more than the 65536-byte write buffer can ever hold",
        ),
        (&fast_with("--write-buffer", "0"), "0 bytes"),
        (&fast_with("--flushing-unit", "0"), "at least 1 node"),
        (
            &fast_with("--flush-policy", "lru"),
            "choose flush-all, random, fast or fast-star",
        ),
        (
            &[&FAST[..], &["--log-sync", "group:0"]].concat(),
            "each-op, group:N",
        ),
        (
            &[&FAST[..], &["--log-size", "16KB"]].concat(),
            "log size: 16384 bytes is too small",
        ),
    ];
    for (i, (args, want)) in cases.iter().enumerate() {
        let out = tmp.path().join(format!("bad{i}"));
        spidx()
            .args(["build", "--data", &data, "--index", "rtree", "--out"])
            .arg(&out)
            .args(*args)
            .assert()
            .failure()
            .stderr(contains(*want));
    }
}

/// FAST's flags with one value replaced.
fn fast_with(flag: &str, value: &'static str) -> Vec<&'static str> {
    let mut v = FAST.to_vec();
    let i = v.iter().position(|a| *a == flag).unwrap();
    v[i + 1] = value;
    v
}
