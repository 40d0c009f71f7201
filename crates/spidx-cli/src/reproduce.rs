//! `spidx reproduce`: the reproduction scorecard of a findings file (the seeds' findings as
//! data, `examples/seeds/findings.toml`) over a results database, computed by
//! [`spidx::experiment::scorecard`]: each finding's measured value and verdict, as a table,
//! Markdown (what `docs/reproduction.md` quotes), CSV or JSON.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use spidx::experiment::scorecard::{self, Findings, Scorecard};
use spidx::experiment::ResultsDb;

#[derive(Args)]
pub struct ReproduceArgs {
    /// Results database holding the seed specs' runs (default: the newest results database
    /// in the current directory or a direct subdirectory).
    #[arg(long)]
    results: Option<PathBuf>,
    /// The findings file.
    #[arg(long, default_value = "examples/seeds/findings.toml")]
    findings: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    format: Format,
    /// Write to this file instead of standard output (a new file unless --force).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace --out if it exists.
    #[arg(long)]
    force: bool,
    /// Exit with status 1 when fewer findings than this are reproduced in direction.
    #[arg(long)]
    min_in_direction: Option<usize>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// A Markdown table with a summary line.
    Markdown,
    /// One row per finding, comma-separated.
    Csv,
    /// The scorecard as JSON.
    Json,
}

pub fn run(a: ReproduceArgs) -> Result<()> {
    if let Some(p) = &a.out {
        crate::own::check_out(p, a.force)?;
    }
    let findings = Findings::load(&a.findings)?;
    let path = crate::results_path::resolve(a.results.as_deref())?;
    let db = ResultsDb::open_existing(&path)?;
    let card = scorecard::compute(&findings, &db)?;
    let text = match a.format {
        Format::Markdown => card.markdown(),
        Format::Json => serde_json::to_string_pretty(&card)? + "\n",
        Format::Csv => csv(&card),
    };
    match &a.out {
        Some(p) => crate::own::write_out(p, text.as_bytes(), a.force)?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    eprintln!(
        "{} findings from {}: {} in direction ({} reproduced, {} direction only), {} not reproduced, {} not measured",
        card.rows.len(),
        crate::term::safe(&spidx::experiment::db::Location::of(&path).display()),
        card.in_direction(),
        card.count(scorecard::Verdict::Reproduced),
        card.count(scorecard::Verdict::DirectionOnly),
        card.count(scorecard::Verdict::NotReproduced),
        card.count(scorecard::Verdict::NotMeasured),
    );
    if let Some(min) = a.min_in_direction {
        if card.in_direction() < min {
            bail!(
                "{} findings reproduced in direction, fewer than --min-in-direction {min}",
                card.in_direction()
            );
        }
    }
    Ok(())
}

fn csv(card: &Scorecard) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut out = String::from(
        "id,paper,where,claim,paper_value,metric,verdict,measured,reason,device_time_verdict,device_time_measured\n",
    );
    for r in &card.rows {
        let (dv, dm) = match &r.device_time {
            Some(d) => (d.verdict.label(), d.measured.as_str()),
            None => ("", ""),
        };
        let fields = [
            r.id.as_str(),
            &r.paper,
            &r.place,
            &r.claim,
            &r.paper_value,
            &r.metric,
            r.decision.verdict.label(),
            &r.decision.measured,
            &r.decision.reason,
            dv,
            dm,
        ];
        out.push_str(&fields.iter().map(|f| q(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}
