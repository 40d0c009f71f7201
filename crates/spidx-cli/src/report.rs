//! `spidx report`: an HTML page with the seeds' charts (SVG, drawn with plotters' SVG
//! backend, which needs no system font library) and tables, from the results database:
//! elapsed time per configuration and page size (one panel per device and workload),
//! reads/writes/erases per configuration, the best configuration per workload and
//! device, and performance gains over a baseline, (time_B − time_A) / time_B.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;
use serde_json::{Map, Value};
use spidx::experiment::ResultsDb;
use spidx::units::format_size;

/// Arguments of `spidx report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results database.
    #[arg(long, default_value = "results.db")]
    results: PathBuf,
    /// Output directory (created; index.html and the SVG charts go there).
    #[arg(long)]
    out: PathBuf,
    /// Experiment to report (default: the one with the newest run).
    #[arg(long)]
    experiment: Option<String>,
}

/// One finished run × workload.
struct Row {
    ordinal: i64,
    config: String,
    page: String,
    page_size: i64,
    device: String,
    workload: String,
    workload_ordinal: i64,
    elapsed: f64,
    reads: f64,
    writes: f64,
    erases: Option<f64>,
}

fn num(m: &Map<String, Value>, k: &str) -> Option<f64> {
    m.get(k).and_then(Value::as_f64)
}

fn text(m: &Map<String, Value>, k: &str) -> String {
    m.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn rows(objs: &[Map<String, Value>]) -> Vec<Row> {
    objs.iter()
        .map(|m| {
            let page_size = num(m, "page_size").unwrap_or(0.0) as i64;
            let page = format_size(page_size as u64);
            let device = text(m, "device");
            // The configuration: the run's name without its page size and device parts.
            let config = text(m, "run")
                .split(" · ")
                .filter(|p| *p != page && *p != device)
                .collect::<Vec<_>>()
                .join(" · ");
            Row {
                ordinal: num(m, "ordinal").unwrap_or(0.0) as i64,
                config,
                page,
                page_size,
                device,
                workload: text(m, "workload"),
                workload_ordinal: num(m, "workload_ordinal").unwrap_or(0.0) as i64,
                elapsed: num(m, "elapsed_s").unwrap_or(0.0),
                reads: num(m, "reads").unwrap_or(0.0),
                writes: num(m, "writes").unwrap_or(0.0),
                erases: num(m, "erases"),
            }
        })
        .collect()
}

/// Distinct values in order of first appearance after sorting by `key`.
fn ordered<K: Ord + Clone>(rows: &[&Row], key: impl Fn(&Row) -> (K, String)) -> Vec<String> {
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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A grouped bar chart: one group per `groups` entry, one bar per `series` entry.
fn bars(
    path: &Path,
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[String],
    values: &[Vec<f64>],
) -> Result<()> {
    let n = groups.len().max(1);
    let width = (160 + n * (40 + 22 * series.len())).clamp(520, 1400) as u32;
    let root = SVGBackend::new(path, (width, 420)).into_drawing_area();
    let draw = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let ymax = values.iter().flatten().cloned().fold(0.0, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((0..n).into_segmented(), 0f64..ymax)
        .map_err(|e| draw(&e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .y_label_formatter(&|v| {
            if ymax >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.3}")
            }
        })
        .x_labels(n + 1)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => groups.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(|e| draw(&e))?;
    // The width of one group in pixels, from the coordinate mapping itself.
    let seg_px = (chart.backend_coord(&(SegmentValue::Exact(1), 0.0)).0
        - chart.backend_coord(&(SegmentValue::Exact(0), 0.0)).0)
        .max(1) as f64;
    let k = series.len().max(1) as f64;
    let slot = seg_px * 0.8 / k;
    for (j, name) in series.iter().enumerate() {
        let color = Palette99::pick(j).mix(0.9);
        let left = (seg_px * 0.1 + j as f64 * slot).round() as u32;
        let right = (seg_px - seg_px * 0.1 - (j as f64 + 1.0) * slot)
            .max(0.0)
            .round() as u32;
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v[j]),
                    ],
                    color.filled(),
                );
                r.set_margin(0, 0, left, right);
                r
            }))
            .map_err(|e| draw(&e))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| draw(&e))?;
    root.present().map_err(|e| draw(&e))?;
    Ok(())
}

fn slug(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("_")
}

pub fn run(a: ReportArgs) -> Result<()> {
    let db = ResultsDb::open_existing(&a.results)?;
    let exp = match &a.experiment {
        Some(e) => e.clone(),
        None => db
            .latest_experiment()?
            .ok_or_else(|| anyhow!("{} holds no run", a.results.display()))?,
    };
    let objs = db.results(Some(&exp), true)?.objects();
    if objs.is_empty() {
        bail!(
            "experiment '{exp}' has no finished run in {}",
            a.results.display()
        );
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let all = rows(&objs);
    let refs: Vec<&Row> = all.iter().collect();
    let devices = ordered(&refs, |r| (r.ordinal, r.device.clone()));
    let workloads = ordered(&refs, |r| (r.workload_ordinal, r.workload.clone()));
    let configs = ordered(&refs, |r| (r.ordinal, r.config.clone()));
    let pages = ordered(&refs, |r| (r.page_size, r.page.clone()));
    let find = |w: &str, d: &str, c: &str, p: &str| {
        all.iter()
            .find(|r| r.workload == w && r.device == d && r.config == c && r.page == p)
    };
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>spidx report: {t}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #bbb;padding:3px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}\
         img{{max-width:100%;border:1px solid #eee;margin:4px}}</style></head><body>\
         <h1>spidx report: {t}</h1><p>Source: {db}. Elapsed time: construction = one-by-one insertion; \
         query workloads = sum over queries of each query's mean over its repetitions. Simulated devices: \
         elapsed = CPU + modelled device time.</p>",
        t = esc(&exp),
        db = esc(&a.results.display().to_string())
    );
    html.push_str("<h2>Elapsed time per configuration and page size</h2>");
    let mut charts = 0;
    for d in &devices {
        for w in &workloads {
            let values: Vec<Vec<f64>> = configs
                .iter()
                .map(|c| {
                    pages
                        .iter()
                        .map(|p| find(w, d, c, p).map_or(0.0, |r| r.elapsed))
                        .collect()
                })
                .collect();
            let file = format!("elapsed_{}.svg", slug(&[d, w]));
            bars(
                &a.out.join(&file),
                &format!("{w} on {d}"),
                "elapsed (s)",
                &configs,
                &pages,
                &values,
            )?;
            let _ = write!(
                html,
                "<img src=\"{file}\" alt=\"{}\">",
                esc(&format!("{w} on {d}"))
            );
            charts += 1;
        }
    }
    html.push_str("<h2>Reads, writes and erases per configuration</h2>");
    for d in &devices {
        for w in &workloads {
            let mut groups = Vec::new();
            let mut values = Vec::new();
            let flash = all.iter().any(|r| &r.device == d && r.erases.is_some());
            for c in &configs {
                for p in &pages {
                    if let Some(r) = find(w, d, c, p) {
                        groups.push(format!("{c} {p}"));
                        let mut v = vec![r.reads, r.writes];
                        if flash {
                            v.push(r.erases.unwrap_or(0.0));
                        }
                        values.push(v);
                    }
                }
            }
            let mut series = vec!["reads".to_string(), "writes".to_string()];
            if flash {
                series.push("erases".into());
            }
            let file = format!("io_{}.svg", slug(&[d, w]));
            bars(
                &a.out.join(&file),
                &format!("{w} on {d}: device operations"),
                "operations",
                &groups,
                &series,
                &values,
            )?;
            let _ = write!(
                html,
                "<img src=\"{file}\" alt=\"{}\">",
                esc(&format!("{w} on {d} I/O"))
            );
            charts += 1;
        }
    }
    html.push_str("<h2>Best configuration per workload and device</h2><table><tr><th>workload</th><th>device</th><th>best</th><th>elapsed s</th><th>runner-up</th><th>elapsed s</th><th>gain over runner-up</th></tr>");
    for w in &workloads {
        for d in &devices {
            let mut cands: Vec<&Row> = all
                .iter()
                .filter(|r| &r.workload == w && &r.device == d)
                .collect();
            cands.sort_by(|x, y| x.elapsed.total_cmp(&y.elapsed));
            let Some(best) = cands.first() else { continue };
            let (second, st, gain) = match cands.get(1) {
                Some(s) => (
                    format!("{} · {}", s.config, s.page),
                    format!("{:.6}", s.elapsed),
                    gain(best.elapsed, s.elapsed),
                ),
                None => ("—".into(), String::new(), String::new()),
            };
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{} · {}</td><td>{:.6}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(w), esc(d), esc(&best.config), esc(&best.page), best.elapsed, esc(&second), st, gain
            );
        }
    }
    html.push_str("</table>");
    if let Some(base) = configs.first() {
        let _ = write!(
            html,
            "<h2>Performance gains over {b}</h2><p>Gain of configuration A over the baseline B = {b} \
             (the first index configuration of the spec), same workload, device and page size: \
             (time_B − time_A) / time_B. Positive: A is faster.</p><table><tr><th>workload</th><th>device</th><th>page</th>",
            b = esc(base)
        );
        for c in &configs[1..] {
            let _ = write!(html, "<th>{}</th>", esc(c));
        }
        html.push_str("</tr>");
        for w in &workloads {
            for d in &devices {
                for p in &pages {
                    let Some(b) = find(w, d, base, p) else {
                        continue;
                    };
                    let _ = write!(
                        html,
                        "<tr><td>{}</td><td>{}</td><td>{}</td>",
                        esc(w),
                        esc(d),
                        esc(p)
                    );
                    for c in &configs[1..] {
                        let g = find(w, d, c, p)
                            .map(|r| gain(r.elapsed, b.elapsed))
                            .unwrap_or_default();
                        let _ = write!(html, "<td>{g}</td>");
                    }
                    html.push_str("</tr>");
                }
            }
        }
        html.push_str("</table>");
    }
    html.push_str("<h2>All results</h2><table><tr><th>run</th><th>workload</th><th>elapsed s</th><th>reads</th><th>writes</th><th>erases</th></tr>");
    for r in &all {
        let _ = write!(
            html,
            "<tr><td>{} · {} · {}</td><td>{}</td><td>{:.6}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.config), esc(&r.page), esc(&r.device), esc(&r.workload), r.elapsed, r.reads, r.writes,
            r.erases.map(|e| e.to_string()).unwrap_or_default()
        );
    }
    html.push_str("</table></body></html>\n");
    let index = a.out.join("index.html");
    std::fs::write(&index, html).with_context(|| format!("writing {}", index.display()))?;
    println!("report of '{exp}': {} ({charts} charts)", index.display());
    Ok(())
}

/// (time_B − time_A) / time_B as a percentage.
fn gain(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:+.1}%", (b - a) / b * 100.0)
    } else {
        String::new()
    }
}
