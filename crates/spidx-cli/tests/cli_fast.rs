//! End-to-end tests of `spidx build --store fast` and `spidx recover` through the binary:
//! FAST statistics in the output, answers equal to the direct store's, bad options.

use predicates::prelude::*;
use predicates::str::contains;

mod common;

use common::{buildings, json_of, spidx, BesideDirect};

const FAST: [&str; 8] = [
    "--store",
    "fast",
    "--write-buffer",
    "64KB",
    "--store-opt",
    "flushing_unit=3",
    "--store-opt",
    "flush_policy=fast-star",
];

#[test]
fn fast_builds_report_flushes_and_answer_like_the_direct_store() {
    let t = BesideDirect::new("fast", &["--index", "rstar"], &FAST);
    let (fast, direct) = (&t.built, &t.direct);
    assert!(fast["store"]["fast"].is_object());
    let f = &fast["store"]["buffered"];
    assert!(f["flushes"].as_u64().unwrap() > 0, "{f}");
    assert!(f["log"]["commits"].as_u64().unwrap() >= 3000, "{f}");
    assert_eq!(f["settings"]["flush_policy"], "fast-star", "{f}");
    assert!(direct["store"]["fast"].is_null() && direct["store"]["buffered"].is_null());
    let rec = t.assert_answers_like_direct();
    assert!(rec["recovery"]["records_replayed"].as_u64().unwrap() >= 1);
    spidx()
        .args(["recover", &t.out("direct")])
        .assert()
        .success()
        .stdout(contains(
            "no log or journal: the index reopened at its last checkpoint",
        ));
    spidx()
        .args(["build", "--data", &t.data, "--index", "rtree", "--out"])
        .arg(t.out("human"))
        .args(FAST)
        .assert()
        .success()
        // Every section of the store's report, named as in `--json`.
        .stdout(contains("\nfast ").and(contains("log.compactions")));
}

#[test]
fn bad_fast_options_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let data = buildings(tmp.path(), "3000");
    let cases: [(&[&str], &str); 8] = [
        (
            &["--store", "direct", "--store-opt", "flush_policy=fast"],
            "--store-opt flush_policy: unknown field",
        ),
        (
            &["--store", "fast", "--write-buffer", "64KB"],
            "--store fast: missing field `flushing_unit`",
        ),
        (
            &fast_with("--store-opt", "flushing_unit=40"),
            "more than the 65536-byte write buffer can ever hold",
        ),
        (&fast_with("--write-buffer", "0"), "0 bytes"),
        (
            &fast_with("--store-opt", "flushing_unit=0"),
            "at least 1 node",
        ),
        (
            &fast_with("--store-opt", "flush_policy=lru"),
            "--store-opt flush_policy",
        ),
        (
            &[&FAST[..], &["--log-sync", "group:0"]].concat(),
            "each-op, group:N",
        ),
        (
            &[&FAST[..], &["--log-size", "16KB"]].concat(),
            "FAST log_size: 16384 bytes is too small",
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
    // A flag, or a `--store-opt KEY=VALUE` of the same key.
    let key = |a: &str| a.split('=').next().unwrap().to_string();
    let i = match flag {
        "--store-opt" => v.iter().position(|a| key(a) == key(value)).unwrap() - 1,
        _ => v.iter().position(|a| *a == flag).unwrap(),
    };
    v[i + 1] = value;
    v
}

#[test]
fn log_placements_are_named_measured_and_validated() {
    let tmp = tempfile::tempdir().unwrap();
    let data = buildings(tmp.path(), "3000");
    let out = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    let build = |name: &str, extra: &[&str]| {
        let base = [
            "build",
            "--data",
            &data,
            "--index",
            "rtree",
            "--page-size",
            "2KB",
            "--device",
            "seed-table2",
            "--json",
            "--out",
        ];
        json_of(&[&base[..], &[&out(name)], &FAST[..], extra].concat())
    };
    let same = build("same", &[]);
    let unc = build("unc", &["--log-device", "uncounted"]);
    let sep = build("sep", &["--log-device", "separate:seed-table2"]);
    // The node device sees the same writes whatever the placement; the log's are on the
    // device under test only with `same`, on the separate device's counters otherwise.
    let w = |v: &serde_json::Value| v["writes"].as_u64().unwrap();
    assert_eq!(w(&unc), w(&sep));
    let log_writes = sep["log_device"]["host"]["write_ops"].as_u64().unwrap();
    assert!(log_writes > 0);
    assert_eq!(w(&same), w(&sep) + log_writes);
    assert!(unc["log_device"].is_null() && same["log_device"].is_null());
    assert!(unc["store"]["settings"]["durability"]
        .as_str()
        .unwrap()
        .starts_with("NOT crash-safe"));
    assert_eq!(unc["store_kind"]["log_device"], "uncounted");
    assert!(
        same["store_kind"]["log_device"].is_null(),
        "the default is left out"
    );
    for dir in ["unc", "sep"] {
        spidx().args(["check", &out(dir)]).assert().success();
        spidx().args(["recover", &out(dir)]).assert().success();
    }
    // The human output says how the time is composed, and warns for an uncounted log.
    spidx()
        .args([
            "build",
            "--data",
            &data,
            "--index",
            "rtree",
            "--device",
            "seed-table2",
        ])
        .args(["--out", &out("human-sep")])
        .args(FAST)
        .args(["--log-device", "separate:seed-table2"])
        .assert()
        .success()
        .stdout(contains("+ simulated log device").and(contains("on the log device")));
    spidx()
        .args([
            "build",
            "--data",
            &data,
            "--index",
            "rtree",
            "--device",
            "seed-table2",
        ])
        .args(["--out", &out("human-unc")])
        .args(FAST)
        .args(["--log-device", "uncounted"])
        .assert()
        .success()
        .stdout(contains("WARNING   this index is NOT crash-safe"));
    let log_file = format!("separate:file:{}", out("log.bin"));
    let cases: [(&[&str], &str); 5] = [
        (
            &["--store", "direct", "--log-device", "uncounted"],
            "--log-device (--store-opt log_device): unknown field",
        ),
        (
            &[&FAST[..], &["--log-device", "nowhere"]].concat(),
            "choose same, uncounted or separate:<device>",
        ),
        (
            &[&FAST[..], &["--log-device", "separate:floppy"]].concat(),
            "unknown device 'floppy'",
        ),
        (
            &[&FAST[..], &["--log-device", &log_file]].concat(),
            "would not match",
        ),
        (
            &[
                &FAST[..],
                &["--log-device", "separate:seed-table2{capacity=512KB}"],
            ]
            .concat(),
            "log device has only",
        ),
    ];
    for (i, (args, want)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("bad{i}"));
        spidx()
            .args(["build", "--data", &data, "--index", "rtree", "--out"])
            .arg(&dir)
            .args(["--device", "seed-table2"])
            .args(*args)
            .assert()
            .failure()
            .stderr(contains(*want));
        assert!(!dir.join("index.json").exists());
    }
}
