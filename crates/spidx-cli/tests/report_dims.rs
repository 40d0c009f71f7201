//! The report's index-vs-scan chart against the dimensionality (Emrich et al. 2010,
//! Fig. 5): a tiny spec over a `matrix.dims` axis with an index and a scan kNN workload
//! as concurrent streams on the simulated disk and SSD, its report, and each device's
//! break-even in the report recomputed from the exported metrics (linear interpolation
//! between the two dimensionalities where index − scan changes sign).

mod common;

use std::collections::BTreeMap;

use common::{export_metric_rows, json_of};

const SPEC: &str = r#"
name = "dims-break-even"
[dataset]
generate = { distribution = "uniform", count = 3000, vectors = true, seed = 3 }
[protocol]
check = false
[matrix]
index = [{ kind = "rstar", reinsert = "30%" }]
page_size = ["4KB"]
dims = [2, 6, 12, 20]
device = ["hdd-wd2500aajs", "ssd-v300"]
[[workload]]
kind = "construction"
[[workload]]
kind = "knn"
name = "index"
k = 10
queries = 20
streams = 4
[[workload]]
kind = "knn"
name = "scan"
k = 10
queries = 20
access = "scan"
request = "64KB"
streams = 4
"#;

#[test]
fn the_report_marks_each_devices_break_even_from_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("dims.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let out = json_of(&[
        "run",
        spec.to_str().unwrap(),
        "--results",
        db,
        "--json",
        "--quiet",
    ]);
    assert_eq!(out["runs"].as_array().unwrap().len(), 4 * 2);
    let rep = dir.path().join("report");
    let html = common::report_html(db, &rep);
    let title = "index vs scan at 4 streams: latency against dimensionality";
    assert!(html.contains(title), "no dims chart");
    assert!(rep.read_dir().unwrap().any(|f| f
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("dims_")));

    // (device, workload) → dims → mean latency, from the exported metrics.
    let mut curves: BTreeMap<(String, String), BTreeMap<u32, f64>> = BTreeMap::new();
    for r in export_metric_rows(db) {
        if !r["name"].ends_with("latency.mean_s") {
            continue;
        }
        // Run names: `R*-tree · 4KB · d=N · device`.
        let parts: Vec<&str> = r["run"].split(" · ").collect();
        let d: u32 = parts
            .iter()
            .find_map(|p| p.strip_prefix("d="))
            .unwrap()
            .parse()
            .unwrap();
        let device = parts.last().unwrap().to_string();
        let w = r["workload"].split(' ').next().unwrap().to_string();
        curves
            .entry((device, w))
            .or_default()
            .insert(d, r["value"].parse().unwrap());
    }
    assert_eq!(curves.len(), 2 * 2, "{curves:?}");
    let mut crossed = 0;
    for device in ["hdd-wd2500aajs", "ssd-v300"] {
        let ix = &curves[&(device.to_string(), "index".to_string())];
        let sc = &curves[&(device.to_string(), "scan".to_string())];
        let diff: Vec<(f64, f64)> = ix.iter().map(|(d, v)| (*d as f64, v - sc[d])).collect();
        assert_eq!(diff.len(), 4);
        let mut found = Vec::new();
        for w in diff.windows(2) {
            let ((x0, d0), (x1, d1)) = (w[0], w[1]);
            assert!(d0 != 0.0 && d1 != 0.0, "an exact tie: pick other sizes");
            if (d0 < 0.0) != (d1 < 0.0) {
                found.push(x0 + (x1 - x0) * d0 / (d0 - d1));
            }
        }
        if found.is_empty() {
            assert!(
                html.contains("no crossing in the measured range"),
                "{device}: no crossing, not said"
            );
        }
        for x in found {
            let mark = format!("{device}: {x:.1} d");
            assert!(html.contains(&mark), "{mark} not on the chart");
            assert!(
                html.contains(&format!("{x:.1} d (")),
                "{x:.1} not in the table"
            );
            crossed += 1;
        }
    }
    assert!(
        crossed > 0,
        "the spec should cross on some device: {curves:?}"
    );
}
