//! The report's simulator-vs-device view (flash-simulator paper, Sect. 5 and Table 3): a small
//! experiment run on the simulated flash chip and the simulated SSD, its report, and every
//! rank correlation of the flash chip's counts with the SSD's elapsed time recomputed from
//! the exported results with an independent (quadratic, by definition) Spearman.

mod common;

use std::collections::HashMap;

use common::{export_rows, json_of, num, ExportRow};

/// Rank of each value: 1 + how many are smaller + half of the others equal to it.
fn ranks(v: &[f64]) -> Vec<f64> {
    v.iter()
        .map(|x| {
            let less = v.iter().filter(|y| *y < x).count() as f64;
            let equal = v.iter().filter(|y| *y == x).count() as f64;
            1.0 + less + (equal - 1.0) / 2.0
        })
        .collect()
}

/// As the report writes it: two decimals with a sign, a dash when there is no ranking.
fn rho(x: &[f64], y: &[f64]) -> String {
    let (rx, ry) = (ranks(x), ranks(y));
    let n = rx.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let cov: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = rx.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = ry.iter().map(|b| (b - my).powi(2)).sum();
    if vx == 0.0 || vy == 0.0 {
        "—".into()
    } else {
        format!("{:+.2}", cov / (vx * vy).sqrt())
    }
}

#[test]
fn counts_on_the_flash_chip_are_ranked_against_the_ssds_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let spec = dir.path().join("corr.toml");
    std::fs::write(
        &spec,
        r#"
name = "corr"
[dataset]
generate = { distribution = "buildings", count = 3000, seed = 7 }
[protocol]
repetitions = 1
drop_caches = false
check = false
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rtree", split = "quadratic" }, { kind = "rstar", reinsert = "30%" }]
page_size = ["2KB", "8KB"]
buffer = ["lru:32KB:write-back"]
device = ["seed-table2", "ssd-v300"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.1%"
queries = 5
"#,
    )
    .unwrap();
    json_of(&[
        "run",
        spec.to_str().unwrap(),
        "--results",
        db,
        "--json",
        "--quiet",
    ]);
    let rep = dir.path().join("report");
    let html = common::report_html(db, &rep);
    assert!(html.contains("Counts on one device vs time on another"));

    let rows = export_rows(db);
    let key = |r: &ExportRow| (r["index_label"].clone(), r["page_size"].clone());
    let mut checked = 0;
    for w in ["construction", "range"] {
        let on = |dev: &str| -> HashMap<_, _> {
            rows.iter()
                .filter(|r| r["device"] == dev && r["workload"].starts_with(w))
                .map(|r| (key(r), r))
                .collect()
        };
        let (flash, ssd) = (on("seed-table2"), on("ssd-v300"));
        assert_eq!(flash.len(), 6, "{w}");
        let keys: Vec<_> = flash.keys().cloned().collect();
        let a = |n: &str| -> Vec<f64> { keys.iter().map(|k| num(flash[k], n)).collect() };
        let time_b: Vec<f64> = keys.iter().map(|k| num(ssd[k], "elapsed_s")).collect();
        let row = format!(
            "<td class=\"l\">seed-table2</td><td class=\"l\">ssd-v300</td><td>6</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            rho(&a("flash_reads"), &time_b),
            rho(&a("flash_writes"), &time_b),
            rho(&a("erases"), &time_b),
            rho(&a("elapsed_s"), &time_b),
        );
        assert!(html.contains(&row), "{row} not in the report");
        checked += 1;
    }
    assert_eq!(checked, 2);
    // Table 3's counterpart lists the best configuration by each count and by time.
    assert!(html.contains("<th>fewest reads</th>"));
}
