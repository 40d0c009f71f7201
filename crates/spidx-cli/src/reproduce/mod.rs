//! `spidx reproduce`: the reproduction scorecard of a findings file (the seeds' findings as
//! data, `examples/seeds/findings.toml`) over a results database, computed by
//! [`spidx::experiment::scorecard`]: each finding's measured value and verdict, as Markdown,
//! CSV or JSON. `--summary` writes what the findings read from the database to a small JSON
//! file; `--from-summary` computes the scorecard from such a file instead of a database, and
//! `--update-doc` / `--check-doc` write or check the generated section of a Markdown page
//! (`docs/reproduction.md`, between its `<!-- scorecard:begin ... -->` and
//! `<!-- scorecard:end -->` markers).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use spidx::experiment::scorecard::summary::{self, Summary};
use spidx::experiment::scorecard::{self, Findings, Scorecard};
use spidx::experiment::ResultsDb;

mod sweep;

#[derive(Args)]
pub struct ReproduceArgs {
    /// Results database holding the seed specs' runs (default: the newest results database
    /// in the current directory or a direct subdirectory).
    #[arg(long, conflicts_with = "from_summary")]
    results: Option<PathBuf>,
    /// Compute the scorecard from a results summary (written by `--summary`) instead of a
    /// database.
    #[arg(long, value_name = "FILE")]
    from_summary: Option<PathBuf>,
    /// Also write a results summary of the database: every observation the findings read,
    /// with only the metrics they read (JSON).
    #[arg(long, value_name = "FILE", conflicts_with = "from_summary")]
    summary: Option<PathBuf>,
    /// With `--summary`: what the database holds (scale, commit, machine), kept in the
    /// summary and shown above the generated scorecard.
    #[arg(long, requires = "summary")]
    note: Option<String>,
    /// Rewrite the scorecard section of this Markdown page (between its
    /// `<!-- scorecard:begin ... -->` and `<!-- scorecard:end -->` lines); needs
    /// `--from-summary`.
    #[arg(
        long,
        value_name = "PAGE",
        requires = "from_summary",
        conflicts_with = "check_doc"
    )]
    update_doc: Option<PathBuf>,
    /// Exit with status 1 when the scorecard section of this Markdown page differs from
    /// what `--update-doc` would write; needs `--from-summary`.
    #[arg(long, value_name = "PAGE", requires = "from_summary")]
    check_doc: Option<PathBuf>,
    /// The findings file.
    #[arg(long, default_value = "examples/seeds/findings.toml")]
    findings: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    format: Format,
    /// Write to this file instead of standard output (a new file unless --force).
    #[arg(long, conflicts_with_all = ["update_doc", "check_doc"])]
    out: Option<PathBuf>,
    /// Replace --out if it exists.
    #[arg(long)]
    force: bool,
    /// Exit with status 1 when fewer findings than this are reproduced in direction.
    #[arg(long, conflicts_with = "sweep")]
    min_in_direction: Option<usize>,
    /// Sensitivity instead of the scorecard: every finding that reads a preset this
    /// experiment ran under overridden parameters, decided at each value of each parameter
    /// swept (the specs in `examples/seeds/sensitivity/`); `EXPERIMENT=SEED` decides only
    /// the findings of the seed experiment SEED the sweep repeats. Repeatable. With `--summary`,
    /// `--update-doc` and `--check-doc` the summary and the page's
    /// `<!-- sensitivity:begin ... -->` section are the sweeps'.
    #[arg(long, value_name = "EXPERIMENT[=SEED]")]
    sweep: Vec<String>,
    /// With `--sweep`: write one chart (SVG) per finding and parameter into this directory
    /// (created if missing); with `--check-doc`, check the charts there are current.
    #[arg(long, value_name = "DIR", requires = "sweep")]
    charts: Option<PathBuf>,
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
    if !a.sweep.is_empty() {
        return sweep::run(&a, &findings);
    }
    let (card, source, loaded) = match &a.from_summary {
        Some(p) => {
            let s = Summary::load(p)?;
            (
                scorecard::compute_from_summary(&findings, &s),
                p.clone(),
                Some(s),
            )
        }
        None => {
            let path = crate::results_path::resolve(a.results.as_deref())?;
            let db = ResultsDb::open_existing(&path)?;
            if let Some(out) = &a.summary {
                let s = Summary::from_db(&findings, &db, a.note.clone())?;
                crate::own::write_out(out, s.to_json().as_bytes(), a.force)?;
                eprintln!(
                    "summary of {} experiments written to {}",
                    s.experiments.len(),
                    out.display()
                );
            }
            (scorecard::compute(&findings, &db)?, path, None)
        }
    };
    if let (Some(page), Some(s)) = (a.update_doc.as_ref().or(a.check_doc.as_ref()), &loaded) {
        let text =
            std::fs::read_to_string(page).with_context(|| format!("reading {}", page.display()))?;
        let section = scorecard::doc_section(&card, s);
        let new = summary::replace_doc_section(&text, &section, &page.display().to_string())?;
        if a.update_doc.is_some() {
            if new != text {
                write_page(page, &new)?;
            }
            eprintln!("{}: scorecard section written", page.display());
        } else if new != text {
            bail!(
                "{}: the scorecard section differs from the one generated from {} with {}; regenerate it: spidx reproduce --from-summary {} --findings {} --update-doc {}",
                page.display(),
                source.display(),
                a.findings.display(),
                source.display(),
                a.findings.display(),
                page.display()
            );
        } else {
            eprintln!("{}: the scorecard section is current", page.display());
        }
    } else {
        let text = match a.format {
            Format::Markdown => card.markdown(),
            Format::Json => serde_json::to_string_pretty(&card)? + "\n",
            Format::Csv => csv(&card),
        };
        match &a.out {
            Some(p) => crate::own::write_out(p, text.as_bytes(), a.force)?,
            None => std::io::stdout().write_all(text.as_bytes())?,
        }
    }
    eprintln!(
        "{} findings from {}: {} in direction ({} reproduced, {} direction only), {} not reproduced, {} not measured",
        card.rows.len(),
        crate::term::safe(&spidx::experiment::db::Location::of(&source).display()),
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

/// Rewrites a Markdown page in place (it is the user's own: it was just read), never
/// through a symbolic link.
fn write_page(page: &std::path::Path, text: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(page)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .with_context(|| {
            format!(
                "writing {} (spidx does not write through a symbolic link)",
                page.display()
            )
        })
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
