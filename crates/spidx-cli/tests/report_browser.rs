//! The report in a real browser: runs a small experiment shaped like the quickstart (two
//! trees, three page sizes, the simulated SSD and HDD, construction and two query sets),
//! writes its report, and has headless Chromium render it with `report_check.js` appended:
//! every chart must show bars, and no text may overlap another text or a bar or leave its
//! chart. A copy with a deliberately broken chart shows the check catches both faults.
//!
//! Needs Chromium (`apt-get install chromium`; `.ci/run` installs it) or the browser named
//! by `SPIDX_BROWSER`. Without one the test fails, unless `SPIDX_SKIP_BROWSER_TEST=1` says
//! to skip it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::json_of;

const CHECK_JS: &str = include_str!("report_check.js");

fn browser() -> Option<PathBuf> {
    if let Some(b) = std::env::var_os("SPIDX_BROWSER") {
        return Some(PathBuf::from(b));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Problems found by `report_check.js` in `html` (the number of charts, the problems).
fn check(browser: &Path, dir: &Path, name: &str, html: &str) -> (u64, Vec<String>) {
    let page = dir.join(name);
    let script = format!("<script>{CHECK_JS}</script></body>");
    std::fs::write(&page, html.replacen("</body>", &script, 1)).unwrap();
    let profile = dir.join(format!("{name}.profile"));
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("starting the browser");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"spidx-check\">").unwrap_or_else(|| {
        panic!(
            "the check did not run: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let body = &dom[start + "<pre id=\"spidx-check\">".len()..];
    let json = body[..body.find("</pre>").unwrap()]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let problems = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    (v["charts"].as_u64().unwrap(), problems)
}

#[test]
fn the_report_renders_without_overlapping_labels_or_empty_charts() {
    let Some(browser) = browser() else {
        if std::env::var_os("SPIDX_SKIP_BROWSER_TEST").is_some() {
            spidx::experiment::db::pg_server::skip(
                "no browser (Chromium) found and SPIDX_SKIP_BROWSER_TEST is set",
            );
            return;
        }
        panic!(
            "this test renders the report in Chromium: install it (apt-get install chromium), \
             name another with SPIDX_BROWSER, or set SPIDX_SKIP_BROWSER_TEST=1 to skip"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("small.toml");
    std::fs::write(
        &spec,
        r#"
name = "browser"
[dataset]
generate = { distribution = "buildings", count = 2000, seed = 42 }
[protocol]
repetitions = 2
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rstar", reinsert = "30%" }]
page_size = ["2KB", "4KB", "16KB"]
device = ["ssd-v300", "hdd-7200"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.01%"
queries = 10
[[workload]]
kind = "range"
area = "1%"
queries = 10
[[workload]]
kind = "knn"
name = "knn"
k = 5
queries = 10
streams = [1, 4]
instances = "shared"
memory = "256KB"
"#,
    )
    .unwrap();
    let db = dir.path().join("r.db");
    let out = json_of(&[
        "run",
        spec.to_str().unwrap(),
        "--results",
        db.to_str().unwrap(),
        "--json",
        "--quiet",
    ]);
    assert_eq!(out["runs"].as_array().unwrap().len(), 12);
    let rep = dir.path().join("report");
    json_of(&[
        "results",
        "list",
        "--json",
        "--results",
        db.to_str().unwrap(),
    ]);
    common::spidx()
        .args(["report", "--results", db.to_str().unwrap(), "--out"])
        .arg(&rep)
        .assert()
        .success();
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    // The stream workload's rows come back together: one table row per stream count and
    // run (2 × 12), and its latency and throughput charts.
    // (The section's heading; the navigation names it too.)
    assert!(html.contains("<h2>knn: latency against concurrent streams"));
    let streams = html
        .split("<h2>knn: latency against concurrent streams")
        .nth(1)
        .unwrap();
    let streams = streams.split("</section>").next().unwrap();
    assert_eq!(streams.matches("<tr><td>").count(), 2 * 12, "{streams}");
    // 12 series are more than the palette's colours: one panel per device.
    for d in ["ssd-v300", "hdd-7200"] {
        assert!(streams.contains(&format!("knn on {d}: mean latency per query")));
        assert!(streams.contains(&format!("knn on {d}: throughput")));
    }
    // Three page sizes: the stream workload's latency against page size, per stream count.
    for n in [1, 4] {
        assert!(html.contains(&format!(
            "knn at {n} streams: mean latency against page size"
        )));
    }

    let (charts, problems) = check(&browser, dir.path(), "check.html", &html);
    // Per device: construction 1 elapsed + 1 CPU/device + reads + writes (+ erases on the
    // SSD); each query set 1 sum + 1 per query + 2 splits + reads.
    assert!(charts >= 2 * (4 + 2 * 5), "{charts} charts");
    assert!(problems.is_empty(), "{problems:#?}");

    // The check finds what it is there to find.
    let broken = html.replacen(
        "<h2>Context</h2>",
        r#"<svg class="chart" width="200" height="100" viewBox="0 0 200 100" data-title="broken"><text x="10" y="20" font-size="12">first label</text><text x="14" y="22" font-size="12">second label</text></svg><h2>Context</h2>"#,
        1,
    );
    let (_, problems) = check(&browser, dir.path(), "broken.html", &broken);
    assert!(
        problems.iter().any(|p| p == "empty chart: broken"),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("overlapping texts in broken")),
        "{problems:?}"
    );
}
