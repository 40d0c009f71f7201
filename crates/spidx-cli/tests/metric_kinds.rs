//! Counters, gauges and settings end to end (issue 11): a results database written by
//! `spidx run` records every metric's kind, a setting is never summed or averaged over the
//! queries and repetitions of a workload, and `spidx results show/export` keep the kinds
//! apart.

mod common;

use std::collections::BTreeMap;

use common::{json_of, spidx};

/// 100 range queries × 3 repetitions on a 2 KB-page SSD behind a 64 KB LRU page buffer.
const SPEC: &str = r#"
name = "kinds"
[dataset]
generate = { distribution = "uniform", count = 1500 }
[protocol]
repetitions = 3
[matrix]
index = [{ kind = "rtree", split = "quadratic" }]
page_size = ["2KB"]
device = ["ssd-v300"]
buffer = ["lru:64KB"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
name = "range"
area = "0.1%"
queries = 100
[[workload]]
kind = "mixed"
operations = 40
insert = 50
delete = 20
update = 20
query = 10
"#;

/// `(workload, name)` → `(kind, value)` of every metric in the database.
fn metrics(db: &str) -> BTreeMap<(String, String), (String, f64)> {
    let rows = json_of(&[
        "results",
        "export",
        "--format",
        "json",
        "--metrics",
        "--results",
        db,
    ]);
    rows.as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                (
                    m["workload"].as_str().unwrap().to_string(),
                    m["name"].as_str().unwrap().to_string(),
                ),
                (
                    m["kind"].as_str().unwrap().to_string(),
                    m["value"].as_f64().unwrap(),
                ),
            )
        })
        .collect()
}

#[test]
fn settings_keep_their_configured_value_after_100_queries_with_repetitions() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("kinds.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let db = dir.path().join("r.db").display().to_string();
    spidx()
        .args(["run", spec.to_str().unwrap(), "--results", &db, "--quiet"])
        .assert()
        .success();
    let m = metrics(&db);
    let get = |w: &str, n: &str| -> (String, f64) {
        m.get(&(w.to_string(), n.to_string()))
            .cloned()
            .unwrap_or_else(|| panic!("metric {w} / {n} missing"))
    };
    let setting = |v: f64| ("setting".to_string(), v);
    for w in ["construction", "range", "mixed"] {
        assert_eq!(get(w, "device.settings.page_size"), setting(2048.0), "{w}");
        // 64 KB of 2 KB pages.
        assert_eq!(
            get(w, "store.cache.settings.capacity_pages"),
            setting(32.0),
            "{w}"
        );
    }
    for phase in ["filter", "refinement"] {
        assert_eq!(
            get("range", &format!("{phase}.device.settings.page_size")),
            setting(2048.0)
        );
    }
    for op in ["insert", "delete", "update", "query"] {
        assert_eq!(
            get("mixed", &format!("{op}.device.settings.page_size")),
            setting(2048.0),
            "{op}"
        );
    }
    assert_eq!(get("range", "settings.repetitions"), setting(3.0));
    assert_eq!(get("range", "queries"), ("counter".to_string(), 100.0));
    // Gauges: levels and ratios, never summed (a resident page count cannot exceed the
    // buffer's capacity, as a sum over 100 queries would).
    let (kind, resident) = get("range", "store.cache.gauges.resident_pages");
    assert_eq!(kind, "gauge");
    assert!(resident <= 32.0, "{resident}");
    let (kind, wa) = get("range", "device.flash.gauges.write_amplification");
    assert_eq!(kind, "gauge");
    assert!(wa >= 1.0, "{wa}");
    assert_eq!(get("construction", "shape.gauges.height").0, "gauge");
    assert_eq!(get("construction", "tree.settings.leaf_max").0, "setting");
    assert_eq!(
        get("construction", "tree.gauges.objects"),
        ("gauge".into(), 1500.0)
    );
    // Counters are the sum over queries of each query's mean.
    let (kind, reads) = get("range", "device.host.read_ops");
    assert_eq!(kind, "counter");
    assert!(reads > 100.0, "{reads}");
    // Every name carries its kind: gauges and settings by their segment, nothing else.
    for ((w, n), (kind, _)) in &m {
        let segs: Vec<&str> = n.split('.').collect();
        let want = match segs.iter().find(|s| **s == "gauges" || **s == "settings") {
            Some(&"gauges") => "gauge",
            Some(_) => "setting",
            None => "counter",
        };
        assert_eq!(kind, want, "{w} / {n}");
    }

    // `show --metrics` prints the kinds apart; the headline columns read the typed names.
    let out = spidx()
        .args(["results", "show", "1", "--metrics", "--results", &db])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let (c, g, s) = (
        text.find("counters (").unwrap(),
        text.find("gauges (").unwrap(),
        text.find("settings (").unwrap(),
    );
    assert!(c < g && g < s, "{text}");
    assert!(text[s..].contains("device.settings.page_size"), "{text}");
    assert!(!text[c..g].contains("settings.page_size"), "{text}");
    let rows = json_of(&["results", "export", "--format", "json", "--results", &db]);
    let range = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload"] == "range")
        .unwrap();
    assert_eq!(range["repetitions"], 3);
    assert_eq!(range["queries"], 100);
    assert!(range["elapsed_min_s"].as_f64().unwrap() <= range["elapsed_max_s"].as_f64().unwrap());
    let construction = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload"] == "construction")
        .unwrap();
    assert!(construction["height"].as_f64().unwrap() >= 2.0);

    // CSV long format: a kind column.
    let csv = spidx()
        .args([
            "results",
            "export",
            "--format",
            "csv",
            "--metrics",
            "--results",
            &db,
        ])
        .output()
        .unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(
        csv.lines().next().unwrap().split(',').any(|c| c == "kind"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.contains(",device.settings.page_size,setting,2048")),
        "{}",
        &csv[..2000.min(csv.len())]
    );
}
