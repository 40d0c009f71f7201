//! The report's HTML: the context block, one section per workload (per device: the seeds'
//! figure, the per-query spread, CPU vs device and filter vs refinement splits, device
//! operations, derived notes; then a table of every run), tree shapes, the best
//! configuration per workload and device, and the gains over the baseline configuration.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::data::{Data, Row};
use super::html::{esc, gain, slug};
use super::notes::notes;
use super::svg::{Grouped, Quantity, Stacked, Whisker};
use crate::export_table::option_text;
use crate::numfmt::{count, percent, secs};

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;max-width:1320px;color:#222}\
h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:2em}\
table{border-collapse:collapse;margin:0.8em 0;font-size:13px}\
td,th{border:1px solid #bbb;padding:3px 7px;text-align:right;white-space:nowrap}\
td:first-child,th:first-child,td.l,th.l{text-align:left}th{background:#f2f2f2}\
th{white-space:normal;vertical-align:bottom;min-width:4em}\
td.l{white-space:normal;min-width:7em;max-width:24em}\
.charts{display:flex;flex-wrap:wrap;gap:10px}.charts svg{border:1px solid #e5e5e5}\
.tag{font-size:12px;font-weight:normal;padding:1px 6px;border-radius:3px;background:#eef}\
.note{background:#fff8e1;border-left:4px solid #E69F00;padding:6px 10px;margin:6px 0}\
dl{display:grid;grid-template-columns:max-content auto;gap:3px 14px}dt{font-weight:bold}\
dd{margin:0}pre{background:#f6f6f6;padding:8px;overflow-x:auto}.wide{overflow-x:auto}";

/// Distinct values in order of first appearance after sorting by `key`.
fn ordered<K: Ord + Clone>(rows: &[Row], key: impl Fn(&Row) -> (K, String)) -> Vec<String> {
    let mut seen: BTreeMap<K, Vec<String>> = BTreeMap::new();
    for r in rows {
        let (k, v) = key(r);
        let e = seen.entry(k).or_default();
        if !e.contains(&v) {
            e.push(v);
        }
    }
    let mut out: Vec<String> = Vec::new();
    for v in seen.into_values().flatten() {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// "modelled" for simulated devices, "wall" for real ones.
fn clock(simulated: bool) -> &'static str {
    if simulated {
        "modelled"
    } else {
        "wall"
    }
}

/// `2026-11-23T09:50:49.098Z` → `2026-11-23 09:50 UTC`.
fn short_time(t: &str) -> String {
    match t.get(..16) {
        Some(s) => format!("{} UTC", s.replace('T', " ")),
        None => t.to_string(),
    }
}

/// `part / whole` as a percentage; empty when `whole` is zero.
fn share(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        percent(part / whole)
    } else {
        String::new()
    }
}

/// The written report: its HTML and its charts (file name, SVG).
pub struct Page {
    /// `index.html`.
    pub html: String,
    /// Every chart, also inline in the HTML.
    pub charts: Vec<(String, String)>,
    /// `validation.json`: the models-vs-real-device comparisons, when there are any.
    pub validation: Option<String>,
}

struct Writer<'a> {
    data: &'a Data,
    devices: Vec<String>,
    workloads: Vec<String>,
    configs: Vec<String>,
    pages: Vec<String>,
    html: String,
    charts: Vec<(String, String)>,
}

impl Page {
    /// Lays out the report of experiment `exp` read from `db`.
    pub fn write(data: &Data, exp: &str, db: &Path) -> Page {
        let rows = &data.rows;
        let mut w = Writer {
            data,
            devices: ordered(rows, |r| (r.ordinal, r.device.clone())),
            workloads: ordered(rows, |r| (r.workload_ordinal, r.workload.clone())),
            configs: ordered(rows, |r| (r.ordinal, r.config.clone())),
            pages: ordered(rows, |r| (r.page_size, r.page.clone())),
            html: String::new(),
            charts: Vec::new(),
        };
        let _ = write!(
            w.html,
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>spidx report: {t}</title>\
             <style>{STYLE}</style></head><body><h1>spidx report: {t}</h1>",
            t = esc(exp)
        );
        w.context(exp, db);
        for wl in w.workloads.clone() {
            w.workload(&wl);
        }
        let (streams, charts) = super::streams::section(data, &w.workloads);
        w.html.push_str(&streams);
        w.charts.extend(charts);
        let (axes, charts) = super::axes::section(data);
        w.html.push_str(&axes);
        w.charts.extend(charts);
        let (dims, charts) = super::dims::section(data);
        w.html.push_str(&dims);
        w.charts.extend(charts);
        w.shapes();
        w.best();
        w.gains();
        let pairs = super::pairs::store_gains(data, &w.workloads, &w.devices, &w.pages);
        w.html.push_str(&pairs);
        let corr = super::correlation::section(data, &w.workloads, &w.devices);
        w.html.push_str(&corr);
        let validation = super::validation::comparisons(data, &w.workloads, &w.devices);
        w.html.push_str(&super::validation::section(&validation));
        w.html.push_str("</body></html>\n");
        let nav = navigation(&w.html);
        w.html = w.html.replacen(SECTIONS_MARK, &nav, 1);
        Page {
            html: w.html,
            charts: w.charts,
            validation: (!validation.is_empty()).then(|| super::validation::json(exp, &validation)),
        }
    }
}

/// Where the context section lists the sections, until they are all written.
const SECTIONS_MARK: &str = "<!--sections-->";

/// "Sections: A · B · ...": a link to every section of `html` after the context, named by
/// its heading, in page order (so a section that only some experiments get is listed when
/// it is there, and never when it is not).
fn navigation(html: &str) -> String {
    let mut links = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<section id=\"") {
        rest = &rest[i + "<section id=\"".len()..];
        let Some(end) = rest.find('"') else { break };
        let id = &rest[..end];
        let Some(h) = rest.find("<h2>") else { break };
        let Some(h_end) = rest[h..].find("</h2>") else {
            break;
        };
        if id != "context" {
            let heading = strip_tags(&rest[h + 4..h + h_end]);
            links.push(format!("<a href=\"#{id}\">{heading}</a>"));
        }
    }
    format!("<p class=\"sections\">Sections: {}</p>", links.join(" · "))
}

/// `html` without its tags (headings are escaped text with at most a few inline tags).
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

impl<'a> Writer<'a> {
    fn find(&self, w: &str, d: &str, c: &str, p: &str) -> Option<&'a Row> {
        let data: &'a Data = self.data;
        data.rows
            .iter()
            .find(|r| r.workload == w && r.device == d && r.config == c && r.page == p)
    }

    fn chart(&mut self, name: &str, svg: String) {
        self.html.push_str(&svg);
        self.charts.push((format!("{name}.svg"), svg));
    }

    fn context(&mut self, exp: &str, db: &Path) {
        let c = &self.data.context;
        let mut dl = String::new();
        let mut item = |k: &str, v: String| {
            let _ = write!(dl, "<dt>{k}</dt><dd>{v}</dd>");
        };
        item("experiment", esc(exp));
        if !c.description.is_empty() {
            item("description", esc(&c.description));
        }
        let specs: Vec<String> = c
            .specs
            .iter()
            .map(|(p, h)| format!("{} (fingerprint {})", esc(p), esc(&h[..h.len().min(12)])))
            .collect();
        item("spec", specs.join("<br>"));
        let datasets: Vec<String> = c
            .datasets
            .iter()
            .map(|(d, n)| {
                let d = serde_json::Value::String(d.clone());
                format!("{} objects ({})", count(*n as f64), esc(&option_text(&d)))
            })
            .collect();
        item("dataset", datasets.join("<br>"));
        for note in &c.mixed_data {
            item("mixed data", format!("<strong>{}</strong>", esc(note)));
        }
        if !self.data.common.is_empty() {
            item(
                "every configuration",
                format!(
                    "{} (left out of the charts' labels)",
                    esc(&self.data.common.join(" · "))
                ),
            );
        }
        let p = |k: &str| {
            c.protocol
                .get(k)
                .map(|v| v.to_string())
                .unwrap_or_else(|| "?".into())
        };
        let dropped = match c.protocol.get("drop_caches").and_then(|v| v.as_bool()) {
            Some(false) => "caches kept between repetitions",
            _ => "page buffers and device caches dropped before every measured repetition",
        };
        item(
            "protocol",
            format!(
                "each query run {} times after {} unmeasured warm-up runs; {dropped}; \
                 a query's figure is the mean over its repetitions",
                p("repetitions"),
                p("warmup"),
            ),
        );
        let sim: Vec<&str> = self.devices_where(true);
        let real: Vec<&str> = self.devices_where(false);
        let mut times = String::new();
        if !sim.is_empty() {
            let _ = write!(
                times,
                "simulated devices ({}): <b>modelled</b> time, elapsed = CPU time of the process + the device model's service time. ",
                esc(&sim.join(", "))
            );
        }
        if !real.is_empty() {
            let _ = write!(
                times,
                "real devices ({}): <b>wall</b>-clock time, device time measured. ",
                esc(&real.join(", "))
            );
        }
        times.push_str(
            "Construction: one-by-one insertion of every object. Query workloads: the sum over queries of each \
             query's mean (the seeds' figure), with the per-query mean, minimum, median and maximum beside it.",
        );
        item("times", times);
        item(
            "runs",
            format!(
                "{} configurations (the newest finished run of each), {} to {}",
                self.data
                    .rows
                    .iter()
                    .map(|r| r.run_id)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                esc(&short_time(&c.started)),
                esc(&short_time(&c.finished))
            ),
        );
        let joined = |set: &std::collections::BTreeSet<String>, sep: &str| {
            set.iter().map(|m| esc(m)).collect::<Vec<_>>().join(sep)
        };
        // Each configuration's unit of durability and log placement (stores compared side
        // by side should share them; the charts' notes warn where they do not).
        let mut durability: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for r in &self.data.rows {
            let configs = durability.entry(r.durability.as_str()).or_default();
            if !configs.contains(&r.config.as_str()) {
                configs.push(&r.config);
            }
        }
        if !durability.keys().all(|d| d.is_empty()) {
            let lines = durability
                .iter()
                .filter(|(d, _)| !d.is_empty())
                .map(|(d, configs)| format!("{}: {}", esc(d), esc(&configs.join(", "))))
                .collect::<Vec<_>>()
                .join("<br>");
            item("durability", lines);
        }
        item("machine", joined(&c.machines, "<br>"));
        item("spidx", joined(&c.versions, ", "));
        // A PostgreSQL URL without its password.
        item(
            "results",
            esc(&spidx::experiment::db::Location::of(db).display()),
        );
        item("report written", esc(&c.now));
        let _ = write!(
            self.html,
            "<section id=\"context\"><h2>Context</h2><dl>{dl}</dl><details><summary>The spec as written</summary><pre>{}</pre></details>",
            esc(&spidx::experiment::db::mask_secrets(&c.spec_text))
        );
        // Filled in once every section is written (see `navigation`).
        self.html.push_str(SECTIONS_MARK);
        self.html.push_str("</section>");
    }

    fn devices_where(&self, simulated: bool) -> Vec<&str> {
        self.devices
            .iter()
            .filter(|d| {
                self.data
                    .rows
                    .iter()
                    .any(|r| &r.device == *d && r.simulated == simulated)
            })
            .map(String::as_str)
            .collect()
    }

    fn workload(&mut self, wl: &str) {
        let rows: Vec<&Row> = self.data.rows.iter().filter(|r| r.workload == wl).collect();
        let Some(first) = rows.first() else { return };
        let query = ["range", "point", "knn"].contains(&first.kind.as_str());
        let queries = first.val("queries");
        let _ = write!(
            self.html,
            "<section id=\"{}\"><h2>{}</h2><p>",
            slug(&["w", wl]),
            esc(wl)
        );
        match first.kind.as_str() {
            "construction" => self.html.push_str("One-by-one insertion of every object."),
            "mixed" => self.html.push_str(
                "A stream of inserts, deletes, updates and window queries, each measured once; totals over the stream.",
            ),
            _ => {
                let _ = write!(
                    self.html,
                    "{} queries, each run {} times; elapsed = the sum over queries of each query's mean (the seeds' figure). \
                     Per-query chart (a log axis): a dot marks the mean per query; whiskers: the fastest and slowest query; thick mark: the median query.",
                    count(queries),
                    count(first.val("repetitions"))
                );
            }
        }
        self.html.push_str("</p>");
        for d in self.devices.clone() {
            let on: Vec<&Row> = rows.iter().copied().filter(|r| r.device == d).collect();
            let Some(f) = on.first() else { continue };
            let clk = clock(f.simulated);
            let _ = write!(
                self.html,
                "<h3>{} on {} <span class=\"tag\">{clk} time</span></h3><div class=\"charts\">",
                esc(wl),
                esc(&d)
            );
            self.device_charts(wl, &d, &on, query, clk);
            self.html.push_str("</div>");
            for n in notes(self.data, &on, &rows) {
                let _ = write!(self.html, "<p class=\"note\">{}</p>", esc(&n));
            }
        }
        self.workload_table(&rows, query);
        self.html.push_str("</section>");
    }

    /// Values per page size (groups) and configuration (series), hiding configurations
    /// and page sizes without a non-zero value.
    fn grid(
        &self,
        wl: &str,
        d: &str,
        value: impl Fn(&Row) -> Option<f64>,
    ) -> (Vec<String>, Vec<String>, Vec<Vec<Option<f64>>>) {
        let has = |c: &str, p: &str| {
            self.find(wl, d, c, p)
                .and_then(&value)
                .is_some_and(|v| v > 0.0)
        };
        let series: Vec<String> = self
            .configs
            .iter()
            .filter(|c| self.pages.iter().any(|p| has(c, p)))
            .cloned()
            .collect();
        let groups: Vec<String> = self
            .pages
            .iter()
            .filter(|p| series.iter().any(|c| has(c, p)))
            .cloned()
            .collect();
        let values = groups
            .iter()
            .map(|p| {
                series
                    .iter()
                    .map(|c| self.find(wl, d, c, p).and_then(&value))
                    .collect()
            })
            .collect();
        (groups, series, values)
    }

    fn device_charts(&mut self, wl: &str, d: &str, on: &[&Row], query: bool, clk: &str) {
        let queries = on.first().map_or(0.0, |r| r.val("queries"));
        // The seeds' figure.
        let (groups, series, values) = self.grid(wl, d, |r| r.get("elapsed_s"));
        if !series.is_empty() {
            let title = if query {
                format!("{wl} on {d}: sum over {} queries", count(queries))
            } else {
                format!("{wl} on {d}: elapsed time")
            };
            let svg = Grouped {
                title: &title,
                y_label: &format!("elapsed, {clk}"),
                x_label: "page size",
                quantity: Quantity::Time,
                groups: &groups,
                series: &series,
                values: &values,
                whiskers: None,
                log: false,
            }
            .svg();
            self.chart(&slug(&["elapsed", d, wl]), svg);
        }
        if query {
            let per_query = |r: &Row| {
                let q = r.get("queries").filter(|q| *q > 0.0)?;
                r.get("elapsed_s").map(|e| e / q)
            };
            let (groups, series, values) = self.grid(wl, d, per_query);
            let whiskers: Vec<Vec<Option<Whisker>>> = groups
                .iter()
                .map(|p| {
                    series
                        .iter()
                        .map(|c| {
                            let r = self.find(wl, d, c, p)?;
                            Some(Whisker {
                                min: r.get("elapsed_min_s")?,
                                median: r.get("elapsed_median_s")?,
                                max: r.get("elapsed_max_s")?,
                            })
                        })
                        .collect()
                })
                .collect();
            if !series.is_empty() {
                let svg = Grouped {
                    title: &format!("{wl} on {d}: per query"),
                    y_label: &format!("elapsed per query, {clk}"),
                    x_label: "page size (dot: mean; whiskers: min–max; thick mark: median)",
                    quantity: Quantity::Time,
                    groups: &groups,
                    series: &series,
                    values: &values,
                    whiskers: Some(&whiskers),
                    log: true,
                }
                .svg();
                self.chart(&slug(&["per-query", d, wl]), svg);
            }
        }
        let device_part = if clk == "modelled" {
            "device (modelled)"
        } else {
            "device (measured)"
        };
        self.stacked(
            &format!("{wl} on {d}: CPU and device time"),
            &format!("time, {clk}"),
            &slug(&["cpu-device", d, wl]),
            on,
            &[("CPU", "cpu_s"), (device_part, "device_s")],
        );
        if query {
            self.stacked(
                &format!("{wl} on {d}: filter and refinement"),
                &format!("time, {clk}"),
                &slug(&["filter-refinement", d, wl]),
                on,
                &[
                    ("filter (index, MBRs)", "filter_s"),
                    ("refinement (exact geometries)", "refinement_s"),
                ],
            );
        }
        for (col, label) in [
            ("reads", "read requests"),
            ("writes", "write requests"),
            ("erases", "flash block erases"),
        ] {
            let (groups, series, values) = self.grid(wl, d, |r| r.get(col));
            if series.is_empty() {
                continue;
            }
            let svg = Grouped {
                title: &format!("{wl} on {d}: {label}"),
                y_label: label,
                x_label: "page size",
                quantity: Quantity::Count,
                groups: &groups,
                series: &series,
                values: &values,
                whiskers: None,
                log: false,
            }
            .svg();
            self.chart(&slug(&[col, d, wl]), svg);
        }
    }

    /// A horizontal stacked chart of `parts` (label, column) per run of `on`, leaving out
    /// parts that are zero everywhere; nothing when all are.
    fn stacked(
        &mut self,
        title: &str,
        x_label: &str,
        file: &str,
        on: &[&Row],
        parts: &[(&str, &str)],
    ) {
        let mut on: Vec<&Row> = on.to_vec();
        on.sort_by_key(|r| {
            (
                self.configs.iter().position(|c| *c == r.config),
                r.page_size,
            )
        });
        let kept: Vec<&(&str, &str)> = parts
            .iter()
            .filter(|(_, col)| on.iter().any(|r| r.val(col) > 0.0))
            .collect();
        if kept.is_empty() {
            return;
        }
        let rows: Vec<String> = on.iter().map(|r| r.config_page()).collect();
        let names: Vec<String> = kept.iter().map(|(n, _)| n.to_string()).collect();
        let values: Vec<Vec<f64>> = on
            .iter()
            .map(|r| kept.iter().map(|(_, col)| r.val(col)).collect())
            .collect();
        let svg = Stacked {
            title,
            x_label,
            quantity: Quantity::Time,
            rows: &rows,
            parts: &names,
            values: &values,
        }
        .svg();
        self.chart(file, svg);
    }

    /// The workload's figures per device, configuration and page size. A query workload
    /// gets two tables, times then counts, so that neither is wider than a laptop's window
    /// (one table of every column scrolled sideways at 1366 px); construction and mixed
    /// workloads get one.
    fn workload_table(&mut self, rows: &[&Row], query: bool) {
        let objects = self.data.context.datasets.iter().next().map(|d| d.1 as f64);
        let flash = rows.iter().any(|r| r.val("erases") > 0.0);
        let mut sorted = rows.to_vec();
        sorted.sort_by_key(|r| {
            (
                self.devices.iter().position(|d| *d == r.device),
                self.configs.iter().position(|c| *c == r.config),
                r.page_size,
            )
        });
        type Cell<'r> = Box<dyn Fn(&Row) -> String + 'r>;
        let times: Vec<(&str, Cell)> = {
            let mut t: Vec<(&str, Cell)> = vec![
                ("elapsed", Box::new(|r: &Row| secs(r.val("elapsed_s")))),
                ("CPU", Box::new(|r: &Row| secs(r.val("cpu_s")))),
                ("device time", Box::new(|r: &Row| secs(r.val("device_s")))),
            ];
            if query {
                // The spread over repetitions of the workload's total (σ and the 95 %
                // t-interval of the mean; none for one repetition).
                t.extend([
                    (
                        "σ over repetitions",
                        Box::new(|r: &Row| r.get("rep_sd_s").map(secs).unwrap_or_default()) as Cell,
                    ),
                    (
                        "95 % interval",
                        Box::new(|r: &Row| {
                            match (r.get("rep_ci95_low_s"), r.get("rep_ci95_high_s")) {
                                (Some(lo), Some(hi)) => format!("{} – {}", secs(lo), secs(hi)),
                                _ => String::new(),
                            }
                        }),
                    ),
                ]);
                t.extend([
                    (
                        "filter",
                        Box::new(|r: &Row| secs(r.val("filter_s"))) as Cell,
                    ),
                    (
                        "refinement",
                        Box::new(|r: &Row| secs(r.val("refinement_s"))),
                    ),
                    (
                        "per query: mean",
                        Box::new(|r: &Row| secs(r.val("elapsed_s") / r.val("queries").max(1.0))),
                    ),
                    ("min", Box::new(|r: &Row| secs(r.val("elapsed_min_s")))),
                    (
                        "median",
                        Box::new(|r: &Row| secs(r.val("elapsed_median_s"))),
                    ),
                    ("max", Box::new(|r: &Row| secs(r.val("elapsed_max_s")))),
                ]);
            }
            t
        };
        let mut counts: Vec<(&str, Cell)> = Vec::new();
        if query {
            let per_query = |r: &Row, k: &str| r.val(k) / r.val("queries").max(1.0);
            counts.extend([
                (
                    "candidates / query",
                    Box::new(move |r: &Row| count(per_query(r, "candidates"))) as Cell,
                ),
                (
                    "answers / query",
                    Box::new(move |r: &Row| count(per_query(r, "answers"))),
                ),
                (
                    "selectivity",
                    Box::new(move |r: &Row| {
                        objects.map_or(String::new(), |n| percent(per_query(r, "answers") / n))
                    }),
                ),
            ]);
        }
        counts.push(("reads", Box::new(|r: &Row| count(r.val("reads")))));
        counts.push(("writes", Box::new(|r: &Row| count(r.val("writes")))));
        if flash {
            counts.push((
                "erases",
                Box::new(|r: &Row| r.get("erases").map(count).unwrap_or_default()),
            ));
        }
        let tables: Vec<Vec<(&str, Cell)>> = if query {
            vec![times, counts]
        } else {
            vec![times.into_iter().chain(counts).collect()]
        };
        for columns in tables {
            self.html.push_str(
                "<div class=\"wide\"><table><tr><th>device</th><th>configuration</th><th>page</th>",
            );
            for (h, _) in &columns {
                let _ = write!(self.html, "<th>{h}</th>");
            }
            self.html.push_str("</tr>");
            for r in &sorted {
                let _ = write!(
                    self.html,
                    "<tr><td class=\"l\">{} ({})</td><td class=\"l\">{}</td><td class=\"l\">{}</td>",
                    esc(&r.device),
                    clock(r.simulated),
                    esc(&r.config),
                    esc(&r.page)
                );
                for (_, cell) in &columns {
                    let _ = write!(self.html, "<td>{}</td>", cell(r));
                }
                self.html.push_str("</tr>");
            }
            self.html.push_str("</table></div>");
        }
    }

    /// The tree after construction, per configuration and page size (the shape does not
    /// depend on the device; a device whose tree differs gets its own row).
    fn shapes(&mut self) {
        let mut rows: Vec<&Row> = self
            .data
            .rows
            .iter()
            .filter(|r| r.kind == "construction" && r.get("height").is_some())
            .collect();
        if rows.is_empty() {
            return;
        }
        rows.sort_by_key(|r| {
            (
                self.configs.iter().position(|c| *c == r.config),
                r.page_size,
                self.devices.iter().position(|d| *d == r.device),
            )
        });
        self.html.push_str(
            "<section id=\"shape\"><h2>Tree shape after construction</h2><p>Per level from the leaves (level 0). \
             Fill: entries / capacity (internal levels from the leaves up). Leaf overlap: the pairwise \
             overlap areas of sibling leaves summed, divided by the leaves' summed MBR areas (can exceed 100 %).</p>\
             <div class=\"wide\"><table><tr><th>configuration</th><th>page</th><th>devices</th><th>height</th><th>nodes</th>\
             <th>leaves</th><th>leaf fill</th><th>internal fill</th><th>leaf overlap</th></tr>",
        );
        let mut done: Vec<(String, String, String)> = Vec::new();
        for r in &rows {
            let shape = self.shape_key(r);
            let key = (r.config.clone(), r.page.clone(), shape.clone());
            if done.contains(&key) {
                continue;
            }
            done.push(key);
            let devices: Vec<&str> = rows
                .iter()
                .filter(|x| x.config == r.config && x.page == r.page && self.shape_key(x) == shape)
                .map(|x| x.device.as_str())
                .collect();
            let m = |name: &str| self.data.metric(r, name);
            let height = r.val("height") as usize;
            let area = m("shape.levels.0.coverage");
            let internal_fill: Vec<String> = (1..height)
                .map(|l| percent(m(&format!("shape.levels.{l}.fill"))))
                .collect();
            let _ = write!(
                self.html,
                "<tr><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.config),
                esc(&r.page),
                esc(&devices.join(", ")),
                height,
                count(r.val("nodes")),
                count(m("shape.levels.0.nodes")),
                percent(m("shape.levels.0.fill")),
                esc(&internal_fill.join(" / ")),
                share(m("shape.levels.0.overlap"), area),
            );
        }
        self.html.push_str("</table></div></section>");
    }

    fn shape_key(&self, r: &Row) -> String {
        self.data
            .metrics_of(r)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| k.starts_with("shape."))
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    }

    fn best(&mut self) {
        self.html.push_str(
            "<section id=\"best\"><h2>Best configuration per workload and device</h2><div class=\"wide\"><table><tr>\
             <th>workload</th><th>device</th><th>best</th><th>elapsed</th><th>runner-up</th><th>elapsed</th>\
             <th>gain over runner-up</th></tr>",
        );
        for w in &self.workloads {
            for d in &self.devices {
                let mut cands: Vec<&Row> = self
                    .data
                    .rows
                    .iter()
                    .filter(|r| &r.workload == w && &r.device == d)
                    .collect();
                cands.sort_by(|x, y| x.val("elapsed_s").total_cmp(&y.val("elapsed_s")));
                let Some(best) = cands.first() else { continue };
                let clk = clock(best.simulated);
                let (second, st, g) = match cands.get(1) {
                    Some(s) => (
                        esc(&s.config_page()),
                        format!("{} ({clk})", secs(s.val("elapsed_s"))),
                        gain(best.val("elapsed_s"), s.val("elapsed_s")),
                    ),
                    None => ("—".into(), String::new(), String::new()),
                };
                let _ = write!(
                    self.html,
                    "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{} ({clk})</td><td class=\"l\">{second}</td><td>{st}</td><td>{g}</td></tr>",
                    esc(w),
                    esc(d),
                    esc(&best.config_page()),
                    secs(best.val("elapsed_s")),
                );
            }
        }
        self.html.push_str("</table></div></section>");
    }

    fn gains(&mut self) {
        let Some(base) = self.configs.first().cloned() else {
            return;
        };
        if self.configs.len() < 2 {
            return;
        }
        let _ = write!(
            self.html,
            "<section id=\"gains\"><h2>Performance gains over {b}</h2><p>Gain of configuration A over the baseline B = {b} \
             (the first index configuration of the spec), same workload, device and page size: \
             (time_B − time_A) / time_B. Positive: A is faster.</p><div class=\"wide\"><table><tr><th>workload</th><th>device</th><th>page</th>",
            b = esc(&base)
        );
        for c in &self.configs[1..] {
            let _ = write!(self.html, "<th>{}</th>", esc(c));
        }
        self.html.push_str("</tr>");
        for w in &self.workloads {
            for d in &self.devices {
                for p in &self.pages {
                    let Some(b) = self.find(w, d, &base, p) else {
                        continue;
                    };
                    let _ = write!(
                        self.html,
                        "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td>",
                        esc(w),
                        esc(d),
                        esc(p)
                    );
                    for c in &self.configs[1..] {
                        let g = self
                            .find(w, d, c, p)
                            .map(|r| gain(r.val("elapsed_s"), b.val("elapsed_s")))
                            .unwrap_or_default();
                        let _ = write!(self.html, "<td>{g}</td>");
                    }
                    self.html.push_str("</tr>");
                }
            }
        }
        self.html.push_str("</table></div></section>");
    }
}
