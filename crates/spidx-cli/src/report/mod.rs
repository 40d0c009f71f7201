//! `spidx report`: one self-contained HTML page (`index.html`, charts inline as SVG, each
//! chart also written as its own `.svg` file for papers) that explains one experiment:
//! its context (spec, dataset, protocol, machine, version, dates), per workload and device
//! the seeds' figure (elapsed time per configuration and page size), the per-query mean
//! with its min/median/max, CPU vs device and filter vs refinement splits, device
//! operations, tree shapes, answer counts and selectivity, notes derived from the metrics,
//! the best configuration and the gains over a baseline, (time_B − time_A) / time_B, and
//! the gains of each flash-aware store over its plain tree (`pairs`), and, when two devices
//! ran the same configurations, how one's counts rank them against the other's times
//! (`correlation`); when a real device ran the same configurations as simulated ones, each
//! model's predicted elapsed time against the measured one, with its error and rank
//! correlation (`validation`, also written as `validation.json`); concurrent query streams
//! get latency and throughput against the number of streams (`streams`), and against k (a
//! k list) and the page size (`axes`); index and scan run over a `matrix.dims` axis get
//! their latency against the dimensionality with the break-even marked (`dims`, drawn by
//! `lines`).
//!
//! Layers: reads the results database (`data`), draws charts (`svg`, `lines`), writes HTML
//! (`page`); it never runs anything.

mod axes;
pub(crate) mod bands;
mod correlation;
mod data;
mod dims;
mod html;
mod lines;
mod notes;
mod page;
mod pairs;
mod streams;
mod svg;
mod validation;

use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};

use crate::own;
use clap::Args;
use spidx::experiment::db::Location;
use spidx::experiment::ResultsDb;

/// Arguments of `spidx report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results database (default: the newest results database in the current directory,
    /// `quickstart/` or another direct subdirectory).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Output directory (created; index.html and the charts as SVG files go there). An
    /// existing one must be empty or hold an earlier report (whose files are replaced).
    #[arg(long)]
    out: PathBuf,
    /// Write into an existing directory that holds no earlier report (nothing in it is
    /// removed; files of the report's names are replaced).
    #[arg(long)]
    force: bool,
    /// Experiment to report (default: the one with the newest run).
    #[arg(long)]
    experiment: Option<String>,
}

pub fn run(a: ReportArgs) -> Result<()> {
    let path = crate::results_path::resolve(a.results.as_deref())?;
    let db = ResultsDb::open_existing(&path)?;
    let exp = match &a.experiment {
        Some(e) => {
            crate::results_path::check_experiment(&db, &path, e)?;
            e.clone()
        }
        None => db
            .latest_experiment()?
            .ok_or_else(|| anyhow!("{} holds no run yet", Location::of(&path).display()))?,
    };
    let data = data::load(&path, &exp)?;
    if data.rows.is_empty() {
        bail!(
            "experiment '{exp}' has no finished run in {}",
            Location::of(&path).display()
        );
    }
    let page = page::Page::write(&data, &exp, &path);
    // A fresh directory, or one an earlier report marked (its files removed first).
    own::prepare_report_dir(&a.out, a.force)?;
    let mut written = Vec::new();
    for (file, svg) in &page.charts {
        own::write_report_file(&a.out, file, svg.as_bytes())?;
        written.push(file.clone());
    }
    if let Some(json) = &page.validation {
        own::write_report_file(&a.out, "validation.json", json.as_bytes())?;
        written.push("validation.json".to_string());
    }
    own::write_report_file(&a.out, "index.html", page.html.as_bytes())?;
    written.push("index.html".to_string());
    own::mark_report_dir(&a.out, &written)?;
    let index = a.out.join("index.html");
    println!(
        "report of experiment '{}' from {}: {} ({} charts)",
        crate::term::safe(&exp),
        crate::term::safe(&Location::of(&path).display()),
        crate::term::safe(&index.display().to_string()),
        page.charts.len()
    );
    Ok(())
}
