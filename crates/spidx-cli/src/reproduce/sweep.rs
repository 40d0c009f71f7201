//! `spidx reproduce --sweep EXPERIMENT`: how each finding's verdict moves across a device
//! parameter that no source fixes for the seeds' drive ([`spidx::experiment::scorecard::sweep`]):
//! a table per preset and parameter (the verdict and measured value at each value swept),
//! one chart per finding and parameter (`--charts`, drawn by `report::bands`), and the
//! generated `<!-- sensitivity:begin ... -->` section of `docs/reproduction.md`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use spidx::experiment::scorecard::summary::{self, Summary};
use spidx::experiment::scorecard::sweep::{self, FindingSweep};
use spidx::experiment::scorecard::Findings;
use spidx::experiment::ResultsDb;

use super::{Format, ReproduceArgs};
use crate::report::bands::{Bands, Line};

/// The marker name of the generated section in a Markdown page.
const SECTION: &str = "sensitivity";

/// Each experiment's sweeps, in the order given.
type Sweeps = Vec<(String, Vec<FindingSweep>)>;

pub fn run(a: &ReproduceArgs, findings: &Findings) -> Result<()> {
    if let Some(p) = &a.out {
        crate::own::check_out(p, a.force)?;
    }
    // EXPERIMENT or EXPERIMENT=SEED: the sweep and the seed experiment it stands for.
    let named: Vec<(&str, Option<&str>)> = a
        .sweep
        .iter()
        .map(|s| match s.split_once('=') {
            Some((e, seed)) => (e, Some(seed)),
            None => (s.as_str(), None),
        })
        .collect();
    if let Some((e, _)) = named.iter().find(|(e, s)| e.is_empty() || *s == Some("")) {
        bail!("invalid --sweep '{e}': write EXPERIMENT or EXPERIMENT=SEED_EXPERIMENT");
    }
    let names: Vec<String> = named.iter().map(|(e, _)| e.to_string()).collect();
    let (sweeps, source): (Sweeps, PathBuf) = match &a.from_summary {
        Some(p) => {
            let s = Summary::load(p)?;
            let mut out = Vec::new();
            for (exp, seed) in &named {
                if !s.experiments.contains_key(*exp) {
                    bail!(
                        "invalid --sweep {exp}: the summary {} holds no such experiment",
                        p.display()
                    );
                }
                out.push((
                    exp.to_string(),
                    sweep::from_summary(findings, &s, exp, *seed),
                ));
            }
            (out, p.clone())
        }
        None => {
            let path = crate::results_path::resolve(a.results.as_deref())?;
            let db = ResultsDb::open_existing(&path)?;
            if let Some(out) = &a.summary {
                let s = Summary::of_experiments(findings, &db, &names, a.note.clone())?;
                crate::own::write_out(out, s.to_json().as_bytes(), a.force)?;
                eprintln!(
                    "summary of {} experiments written to {}",
                    s.experiments.len(),
                    out.display()
                );
            }
            let mut out = Vec::new();
            for (exp, seed) in &named {
                out.push((exp.to_string(), sweep::from_db(findings, &db, exp, *seed)?));
            }
            (out, path)
        }
    };
    for (exp, s) in &sweeps {
        if s.is_empty() {
            bail!(
                "--sweep {exp}: no finding reads a preset that experiment ran with one parameter overridden at two or more values (in {})",
                source.display()
            );
        }
    }
    let charts = charts(&sweeps);
    if let Some(page) = a.update_doc.as_ref().or(a.check_doc.as_ref()) {
        let text =
            std::fs::read_to_string(page).with_context(|| format!("reading {}", page.display()))?;
        let link = a.charts.as_deref().map(|d| relative_to_page(d, page));
        let section = doc_section(&sweeps, link.as_deref());
        let new =
            summary::replace_marked_section(&text, SECTION, &section, &page.display().to_string())?;
        if a.update_doc.is_some() {
            if let Some(dir) = &a.charts {
                write_charts(dir, &charts, true)?;
            }
            if new != text {
                super::write_page(page, &new)?;
            }
            eprintln!("{}: sensitivity section written", page.display());
        } else {
            let stale = match &a.charts {
                Some(dir) => stale_charts(dir, &charts),
                None => Vec::new(),
            };
            if new != text || !stale.is_empty() {
                bail!(
                    "{}: the sensitivity section{} differs from the one generated from {}; regenerate it with --update-doc instead of --check-doc",
                    page.display(),
                    if stale.is_empty() {
                        String::new()
                    } else {
                        format!(" or its charts ({})", stale.join(", "))
                    },
                    source.display()
                );
            }
            eprintln!("{}: the sensitivity section is current", page.display());
        }
    } else {
        if let Some(dir) = &a.charts {
            write_charts(dir, &charts, a.force)?;
        }
        let text = match a.format {
            Format::Markdown => sweeps
                .iter()
                .map(|(exp, s)| format!("#### {exp}\n\n{}", sweep::markdown(s)))
                .collect::<String>(),
            Format::Json => serde_json::to_string_pretty(&sweeps)? + "\n",
            Format::Csv => csv(&sweeps),
        };
        match &a.out {
            Some(p) => crate::own::write_out(p, text.as_bytes(), a.force)?,
            None => std::io::stdout().write_all(text.as_bytes())?,
        }
    }
    let n: usize = sweeps.iter().map(|(_, s)| s.len()).sum();
    eprintln!(
        "{n} finding sweeps from {} experiments in {}",
        sweeps.len(),
        crate::term::safe(&spidx::experiment::db::Location::of(&source).display())
    );
    Ok(())
}

/// The page's generated section: per experiment its tables and, with charts, their images.
fn doc_section(sweeps: &Sweeps, charts: Option<&str>) -> String {
    let mut out = String::new();
    for (exp, s) in sweeps {
        out.push_str(&format!("#### `{exp}`\n\n{}", sweep::markdown(s)));
        if let Some(dir) = charts {
            for f in s {
                out.push_str(&format!(
                    "![{} against {}]({dir}/{})\n",
                    f.id,
                    f.parameter,
                    chart_name(exp, f)
                ));
            }
            out.push('\n');
        }
    }
    out
}

/// Where `dir` lies as seen from the page's directory (as given when it is not below it).
fn relative_to_page(dir: &Path, page: &Path) -> String {
    let base = page.parent().unwrap_or(Path::new(""));
    dir.strip_prefix(base)
        .unwrap_or(dir)
        .display()
        .to_string()
        .trim_end_matches('/')
        .to_string()
}

fn chart_name(exp: &str, f: &FindingSweep) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    format!(
        "{}--{}--{}--{}.svg",
        clean(exp),
        clean(&f.id),
        clean(&f.device),
        clean(&f.parameter)
    )
}

fn pct(v: f64) -> String {
    if v.abs() < 5e-4 {
        "0 %".into()
    } else {
        format!("{:+.0} %", v * 100.0)
    }
}

fn ratio(v: f64) -> String {
    format!("{v:.1}×")
}

/// One chart per finding sweep that has per-pair values: `(file name, SVG)`.
fn charts(sweeps: &Sweeps) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (exp, s) in sweeps {
        for f in s {
            let Some(quantity) = f.quantity else { continue };
            let mut lines: Vec<Line> = Vec::new();
            for p in &f.points {
                for (label, v) in &p.pairs {
                    let i = match lines.iter().position(|l| &l.name == label) {
                        Some(i) => i,
                        None => {
                            lines.push(Line {
                                name: label.clone(),
                                colour: lines.len(),
                                dashed: lines.len() >= 8,
                                points: Vec::new(),
                            });
                            lines.len() - 1
                        }
                    };
                    lines[i].points.push((p.value, *v));
                }
            }
            if lines.is_empty() {
                continue;
            }
            let title = format!("{} against {} ({})", f.id, f.parameter, f.device);
            let (unit, fmt): (&str, fn(f64) -> String) = if quantity == "change" {
                ("change (%)", pct)
            } else {
                ("ratio (×)", ratio)
            };
            // The comparison named on the axis where it fits the plot's height.
            let y_label = match f.contrast.as_deref() {
                Some(what) if what.chars().count() + unit.len() <= 38 => {
                    format!("{what}: {unit}")
                }
                _ => unit.to_string(),
            };
            let svg = Bands {
                title: &title,
                y_label: &y_label,
                x_label: &f.parameter,
                lines: &lines,
                band: f.range,
                preset: f.points.iter().find(|p| p.preset).map(|p| p.value),
                fmt,
            }
            .svg();
            out.push((chart_name(exp, f), svg + "\n"));
        }
    }
    out
}

fn write_charts(dir: &Path, charts: &[(String, String)], force: bool) -> Result<()> {
    crate::own::prepare_report_dir(dir, force)?;
    for (name, svg) in charts {
        crate::own::write_report_file(dir, name, svg.as_bytes())?;
    }
    let names: Vec<String> = charts.iter().map(|(n, _)| n.clone()).collect();
    crate::own::mark_report_dir(dir, &names)?;
    eprintln!("{} charts written to {}", charts.len(), dir.display());
    Ok(())
}

/// The charts that are missing from `dir` or differ from the generated ones.
fn stale_charts(dir: &Path, charts: &[(String, String)]) -> Vec<String> {
    charts
        .iter()
        .filter(|(name, svg)| {
            std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(svg.as_str())
        })
        .map(|(name, _)| name.clone())
        .collect()
}

fn csv(sweeps: &Sweeps) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut out =
        String::from("experiment,id,device,parameter,value,preset,verdict,measured,reason\n");
    for (exp, s) in sweeps {
        for f in s {
            for p in &f.points {
                let fields = [
                    exp.as_str(),
                    &f.id,
                    &f.device,
                    &f.parameter,
                    &sweep::value_text(p.value),
                    if p.preset { "true" } else { "false" },
                    p.decision.verdict.label(),
                    &p.decision.measured,
                    &p.decision.reason,
                ];
                out.push_str(&fields.iter().map(|f| q(f)).collect::<Vec<_>>().join(","));
                out.push('\n');
            }
        }
    }
    out
}
