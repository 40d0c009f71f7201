//! The report in a real browser: runs a small experiment shaped like the quickstart (two
//! trees, three page sizes, the simulated SSD and HDD, construction and two query sets),
//! writes its report, and has headless Chromium render it with `report_check.js` appended:
//! every chart must show bars, and no text may overlap another text or a bar or leave its
//! chart; in a 1366 px wide window (a common laptop's) no table may scroll sideways, also
//! with the long configuration labels of node stores with their options. A copy with a
//! deliberately broken chart and an over-wide table shows the check catches each fault.
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

/// The window's width, px: the check runs in a window this wide.
const WINDOW_WIDTH: u64 = 1366;

/// What `report_check.js` found in `html`.
struct Checked {
    charts: u64,
    tables: u64,
    problems: Vec<String>,
}

/// Renders `html` with `report_check.js` in a [`WINDOW_WIDTH`] px window.
fn check(browser: &Path, dir: &Path, name: &str, html: &str) -> Checked {
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
        .arg(format!("--window-size={WINDOW_WIDTH},900"))
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
    assert_eq!(
        v["width"].as_u64(),
        Some(WINDOW_WIDTH),
        "the window's width"
    );
    Checked {
        charts: v["charts"].as_u64().unwrap(),
        tables: v["tables"].as_u64().unwrap(),
        problems,
    }
}

/// The browser to render with; `None` (the test skips) only when none is found and
/// `SPIDX_SKIP_BROWSER_TEST` says to skip.
fn browser_or_skip() -> Option<PathBuf> {
    let Some(browser) = browser() else {
        if std::env::var_os("SPIDX_SKIP_BROWSER_TEST").is_some() {
            spidx::test_support::skip(
                "no browser (Chromium) found and SPIDX_SKIP_BROWSER_TEST is set",
            );
            return None;
        }
        panic!(
            "this test renders the report in Chromium: install it (apt-get install chromium), \
             name another with SPIDX_BROWSER, or set SPIDX_SKIP_BROWSER_TEST=1 to skip"
        );
    };
    Some(browser)
}

/// The dataset, protocol and index lines of the report tests' specs.
const SPEC_HEAD: &str = r#"[dataset]
generate = { distribution = "buildings", count = 2000, seed = 42 }
[protocol]
repetitions = 2
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rstar", reinsert = "30%" }]
"#;

/// A report test's spec: its name, [`SPEC_HEAD`], then `rest` (page sizes, devices, workloads).
fn spec(name: &str, rest: &str) -> String {
    format!("name = \"{name}\"\n{SPEC_HEAD}{rest}")
}

/// Runs the spec `text` (named `name`) in `dir`, checks it made `runs` runs, writes its
/// report and returns the report's HTML (its navigation checked complete).
fn report_of(dir: &Path, name: &str, text: &str, runs: usize) -> String {
    let spec = dir.join(format!("{name}.toml"));
    std::fs::write(&spec, text).unwrap();
    let db = dir.join("r.db");
    let out = json_of(&[
        "run",
        spec.to_str().unwrap(),
        "--results",
        db.to_str().unwrap(),
        "--json",
        "--quiet",
    ]);
    assert_eq!(out["runs"].as_array().unwrap().len(), runs);
    let rep = dir.join("report");
    common::report_html(db.to_str().unwrap(), &rep)
}

#[test]
fn the_report_renders_without_overlapping_labels_or_empty_charts() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = report_of(
        dir.path(),
        "small",
        &spec(
            "browser",
            r#"page_size = ["2KB", "4KB", "16KB"]
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
        ),
        12,
    );
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

    // The per-query charts (a log axis) draw dots with whiskers, and say so.
    let per_query: Vec<&str> = html
        .split("<svg")
        .filter(|c| c.contains(": per query\""))
        .map(|c| c.split("</svg>").next().unwrap())
        .collect();
    assert!(!per_query.is_empty());
    for c in &per_query {
        assert!(
            c.contains("class=\"point\"") && !c.contains("class=\"bar\""),
            "{c}"
        );
        assert!(c.contains("dot: mean"), "{c}");
    }
    assert!(html.contains("a dot marks the mean per query"));
    assert!(!html.contains("Bars of the per-query chart"));
    let Checked {
        charts,
        tables,
        problems,
    } = check(&browser, dir.path(), "check.html", &html);
    // Per device: construction 1 elapsed + 1 CPU/device + reads + writes (+ erases on the
    // SSD); each query set 1 sum + 1 per query + 2 splits + reads.
    assert!(charts >= 2 * (4 + 2 * 5), "{charts} charts");
    // At least one table per workload.
    assert!(tables >= 4, "{tables} tables");
    assert!(problems.is_empty(), "{problems:#?}");

    // The check finds what it is there to find.
    let wide_row: String = (0..40)
        .map(|i| format!("<td>column number {i}</td>"))
        .collect();
    let broken = html.replacen(
        "<h2>Context</h2>",
        &format!(
            r#"<svg class="chart" width="200" height="100" viewBox="0 0 200 100" data-title="broken"><text x="10" y="20" font-size="12">first label</text><text x="14" y="22" font-size="12">second label</text></svg><div class="wide"><table><tr>{wide_row}</tr></table></div><h2>Context</h2>"#
        ),
        1,
    );
    let problems = check(&browser, dir.path(), "broken.html", &broken).problems;
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
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("table scrolls horizontally in context")),
        "{problems:?}"
    );
}

/// Per-workload tables of long configuration labels (three node stores with their options,
/// on flash: an erases column) fit a 1366 px window: none scrolls sideways.
#[test]
fn wide_workload_tables_fit_a_laptop_window() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = report_of(
        dir.path(),
        "stores",
        &spec(
            "stores",
            r#"store = [
  { kind = "direct" },
  { kind = "fast", write_buffer = "512KB", flushing_unit = 5, flush_policy = "fast-star", log_sync = "each-op" },
  { kind = "efind", buffer = "512KB", read_buffer_perc = 20, read_policy = "lru", temporal_control = "both", timestamp_perc = 50, flushing_unit = 5, flush_policy = "mthao", log_sync = "each-op" },
]
page_size = ["2KB", "16KB"]
device = ["ssd-v300", "hdd-7200"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.01%"
queries = 10
[[workload]]
kind = "knn"
k = 5
queries = 10
"#,
        ),
        24,
    );
    assert!(html.contains("<th>erases</th>"));
    let checked = check(&browser, dir.path(), "stores.html", &html);
    assert!(checked.tables >= 5, "{} tables", checked.tables);
    assert!(checked.problems.is_empty(), "{:#?}", checked.problems);
}
