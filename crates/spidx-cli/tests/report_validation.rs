//! The report's models-vs-real-device section ("Models vs the real device",
//! `validation.json`): a small experiment run on a real `file:` device and on two simulated
//! ones, whose elapsed times are then set to known values in the results database, so the
//! errors, the rank correlations and the pairs a model orders differently are known
//! exactly. The measured device must be told from what the runs recorded, not from the
//! labels: here the real device is labelled `drive` and a simulated one `file:looks-real`.

mod common;

use common::{export_rows, json_of};
use serde_json::Value;

/// The configurations (index label fragment, page size) and the elapsed times set for
/// them: measured on the real device, predicted by model A (every error +-10 %, the same
/// order) and by model B (+140 %, -30 %, 0, 0: the first two the other way round).
const CONSTRUCTION: [(&str, i64, f64, f64, f64); 4] = [
    ("linear", 2048, 1.0, 1.1, 2.4),
    ("linear", 4096, 2.0, 2.2, 1.4),
    ("quadratic", 2048, 3.0, 2.7, 3.0),
    ("quadratic", 4096, 4.0, 4.4, 4.0),
];

/// The range workload's times: both models within 10 % and in the device's order.
const RANGE: [(&str, i64, f64, f64, f64); 4] = [
    ("linear", 2048, 0.10, 0.105, 0.11),
    ("linear", 4096, 0.20, 0.21, 0.19),
    ("quadratic", 2048, 0.30, 0.31, 0.29),
    ("quadratic", 4096, 0.40, 0.41, 0.42),
];

fn write_spec(dir: &std::path::Path, name: &str, devices: &str) -> String {
    let spec = dir.join(format!("{name}.toml"));
    std::fs::write(
        &spec,
        format!(
            r#"
name = "{name}"
[dataset]
generate = {{ distribution = "buildings", count = 400, seed = 3 }}
[protocol]
repetitions = 1
drop_caches = false
check = false
[matrix]
index = [{{ kind = "rtree", split = "linear" }}, {{ kind = "rtree", split = "quadratic" }}]
page_size = ["2KB", "4KB"]
device = [{devices}]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "1%"
queries = 3
"#
        ),
    )
    .unwrap();
    spec.to_str().unwrap().to_string()
}

/// Sets the elapsed time of `workload` for every configuration of `table` on the three
/// devices.
fn set_times(db: &str, workload: &str, table: &[(&str, i64, f64, f64, f64)]) {
    let c = rusqlite::Connection::open(db).unwrap();
    for (split, page, real, a, b) in table {
        for (device, t) in [("drive", real), ("file:looks-real", a), ("B", b)] {
            let n = c
                .execute(
                    "UPDATE results SET elapsed_s = ?1 WHERE workload = ?2 AND run_id IN \
                     (SELECT id FROM runs WHERE device = ?3 AND page_size = ?4 \
                      AND lower(index_label) LIKE '%' || ?5 || '%')",
                    rusqlite::params![t, workload, device, page, split],
                )
                .unwrap();
            assert_eq!(n, 1, "{workload} {device} {split} {page}");
        }
    }
}

fn comparison<'a>(v: &'a Value, workload: &str, model: &str) -> &'a Value {
    v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["workload"] == workload && c["model_device"] == model)
        .unwrap_or_else(|| panic!("no comparison of {workload} on {model}"))
}

/// The configuration whose measured time in `c` is `t`.
fn config_measured(c: &Value, t: f64) -> String {
    c["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["measured_s"].as_f64() == Some(t))
        .unwrap()["configuration"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn predicted_beside_measured_with_errors_ranks_and_reversed_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    // direct=false: the test's temporary directory may be on a file system without
    // O_DIRECT; the device is real (times measured) either way.
    let dev = dir.path().join("dev.bin");
    let devices = format!(
        r#"{{ device = "file:{}", params = {{ direct = false, capacity = "64MB" }}, label = "drive" }},
           {{ device = "ssd-v300", label = "file:looks-real" }},
           {{ device = "flashdbsim", label = "B" }}"#,
        dev.display()
    );
    let spec = write_spec(dir.path(), "val", &devices);
    json_of(&["run", &spec, "--results", db, "--json", "--quiet"]);
    set_times(db, "construction", &CONSTRUCTION);
    let range_name = export_rows(db)
        .into_iter()
        .find(|r| r["kind"] == "range")
        .unwrap()["workload"]
        .clone();
    set_times(db, &range_name, &RANGE);

    let rep = dir.path().join("report");
    let html = common::report_html(db, &rep);
    assert!(html.contains("<h2>Models vs the real device</h2>"));

    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(rep.join("validation.json")).unwrap())
            .unwrap();
    assert_eq!(v["tolerance"], 0.25);
    let all = v["comparisons"].as_array().unwrap();
    assert_eq!(all.len(), 4, "2 workloads x 2 models: {v:#}");
    // Measured is the file device whatever its label; both simulated devices are models.
    assert!(all.iter().all(|c| c["measured_device"] == "drive"));

    // Model A: every error +-10 %, the device's order.
    let a = comparison(&v, "construction", "file:looks-real");
    assert_eq!(a["points"].as_array().unwrap().len(), 4);
    for p in a["points"].as_array().unwrap() {
        let e = p["error"].as_f64().unwrap();
        assert!((e.abs() - 0.1).abs() < 1e-9, "{p}");
    }
    assert_eq!(a["within_tolerance"], 4);
    assert_eq!(a["spearman"].as_f64(), Some(1.0));
    assert!(a["differences"].as_array().unwrap().is_empty());

    // Model B: +140 %, -30 %, 0, 0; the two fastest configurations reversed.
    let b = comparison(&v, "construction", "B");
    assert_eq!(b["within_tolerance"], 2);
    assert!((b["mean_abs_error"].as_f64().unwrap() - 0.425).abs() < 1e-9);
    assert!((b["max_abs_error"].as_f64().unwrap() - 1.4).abs() < 1e-9);
    assert!((b["spearman"].as_f64().unwrap() - 0.8).abs() < 1e-9);
    let diffs = b["differences"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    let (c1, c2) = (config_measured(b, 1.0), config_measured(b, 2.0));
    assert_eq!(diffs[0]["faster_on_device"], c1.as_str());
    assert_eq!(diffs[0]["slower_on_device"], c2.as_str());
    assert_eq!(diffs[0]["kind"], "reversed");
    assert_eq!(diffs[0]["predicted_faster_s"].as_f64(), Some(2.4));
    assert_eq!(diffs[0]["predicted_slower_s"].as_f64(), Some(1.4));

    // The range workload: both models in the device's order.
    for m in ["file:looks-real", "B"] {
        let c = comparison(&v, &range_name, m);
        assert!(c["differences"].as_array().unwrap().is_empty(), "{c}");
        assert_eq!(c["within_tolerance"], 4);
    }

    // The HTML says the same: B's summary row, its bold error, the reversed pair.
    let row = "<td class=\"l\">drive</td><td class=\"l\">B</td><td>4</td><td>2</td>\
               <td>42.5 %</td><td>140.0 %</td><td>+0.80</td><td>1</td>";
    assert!(html.contains(row), "{row} not in the report");
    assert!(html.contains("<b>+140.0 %</b>"));
    assert!(html.contains("<b>-30.0 %</b>"));
    let pair = format!(
        "<td class=\"l\">B</td><td class=\"l\">{}</td><td>1.00 s</td><td class=\"l\">{}</td>\
         <td>2.00 s</td><td>2.40 s</td><td>1.40 s</td><td class=\"l\">reversed</td>",
        c1.replace('&', "&amp;"),
        c2.replace('&', "&amp;")
    );
    assert!(html.contains(&pair), "{pair} not in the report");
}

#[test]
fn no_real_device_no_section() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let spec = write_spec(dir.path(), "sim", "\"ssd-v300\", \"flashdbsim\"");
    json_of(&["run", &spec, "--results", db, "--json", "--quiet"]);
    let rep = dir.path().join("report");
    let html = common::report_html(db, &rep);
    assert!(!html.contains("Models vs the real device"));
    assert!(!rep.join("validation.json").exists());
}
