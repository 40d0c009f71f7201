//! The report's table of gains of each flash-aware store over its plain tree (the seeds'
//! Figs. 3-4 of the flash-simulator paper): a small experiment with the direct store (with
//! a write-back LRU buffer) and FAST (without one) on the simulated flash, its report, and
//! every gain in the table recomputed from the exported results.

mod common;

use std::collections::HashMap;

use common::{export_rows, json_of, num, ExportRow};

/// As the report writes it: empty when B is zero.
fn gain(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:+.1} %", (b - a) / b * 100.0)
    } else {
        String::new()
    }
}

#[test]
fn each_store_is_paired_with_its_plain_tree_and_the_gains_are_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let body = |store: &str, buffer: &str| {
        format!(
            r#"
name = "pairs"
[dataset]
generate = {{ distribution = "buildings", count = 3000, seed = 1 }}
order = "clustered:256"
[protocol]
repetitions = 1
drop_caches = false
check = false
[matrix]
index = [{{ kind = "rtree", split = "linear" }}, {{ kind = "rstar", reinsert = "30%" }}]
store = [{store}]
page_size = ["2KB", "4KB"]
buffer = ["{buffer}"]
device = ["seed-table2"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.1%"
queries = 5
"#
        )
    };
    for (name, store, buffer) in [
        (
            "plain.toml",
            r#"{ kind = "direct" }"#,
            "lru:64KB:write-back",
        ),
        (
            "fast.toml",
            r#"{ kind = "fast", write_buffer = "64KB", flushing_unit = 1, flush_policy = "fast-star", log_sync = "none" }"#,
            "none",
        ),
    ] {
        let spec = dir.path().join(name);
        std::fs::write(&spec, body(store, buffer)).unwrap();
        json_of(&[
            "run",
            spec.to_str().unwrap(),
            "--results",
            db,
            "--json",
            "--quiet",
        ]);
    }
    let rep = dir.path().join("report");
    let html = common::report_html(db, &rep);
    assert!(html.contains("Gains of each flash-aware store over its plain tree"));

    // Every FAST run × workload, paired by hand with the plain run of the same tree and page.
    let rows = export_rows(db);
    let key = |r: &ExportRow| {
        (
            r["index_label"].clone(),
            r["page_size"].clone(),
            r["workload"].clone(),
        )
    };
    let plain: HashMap<_, _> = rows
        .iter()
        .filter(|r| r["store_kind"] == "direct")
        .map(|r| (key(r), r))
        .collect();
    let mut checked = 0;
    for a in rows.iter().filter(|r| r["store_kind"] != "direct") {
        let b = plain[&key(a)];
        let row = format!(
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            gain(num(a, "elapsed_s"), num(b, "elapsed_s")),
            gain(num(a, "flash_reads"), num(b, "flash_reads")),
            gain(num(a, "flash_writes"), num(b, "flash_writes")),
            gain(num(a, "erases"), num(b, "erases")),
        );
        assert!(html.contains(&row), "{row} not in the report");
        checked += 1;
    }
    assert_eq!(checked, 2 * 2 * 2);
}
