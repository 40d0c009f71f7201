//! A results summary: what a findings file reads from a results database, and nothing more —
//! per experiment its observations' attributes and the metrics its findings decide on. It is
//! small enough to check into the repository (`examples/seeds/scorecard-summary.json`), so the
//! scorecard that `docs/reproduction.md` shows is regenerated from it by one command, and a
//! test fails when the page and the command's output differ.
//!
//! The file is JSON, one observation per line (diffs stay readable); numbers are written in
//! serde_json's shortest form that reads back to the same `f64`, so a scorecard computed from
//! the summary is the one computed from the database.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{observations, Findings, Observation};
use crate::experiment::db::ResultsDb;
use crate::{Error, Result};

/// The summary format this build writes and reads.
pub const SUMMARY_FORMAT: u32 = 1;

/// A results summary (see the module's documentation).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// [`SUMMARY_FORMAT`].
    pub format: u32,
    /// What the database held (scale, commit, machine), as its writer said.
    #[serde(default)]
    pub note: Option<String>,
    /// Per experiment (by name), what its findings read.
    pub experiments: BTreeMap<String, ExperimentSummary>,
}

/// One experiment of a [`Summary`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSummary {
    /// When its newest run finished (the database's timestamp).
    pub finished: String,
    /// Its observations (one workload of one run each), in the database's order.
    pub observations: Vec<SummaryObservation>,
}

/// One observation of an [`ExperimentSummary`]: its attributes and the metrics read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryObservation {
    /// The attributes findings select on (see [`Observation::attrs`]).
    pub attrs: BTreeMap<String, String>,
    /// The metrics the findings read.
    pub metrics: BTreeMap<String, f64>,
}

/// The metric names each experiment's findings read (the terms of a sum, and `device_s`
/// where a finding is decided on device time too).
fn metrics_read(findings: &Findings) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &findings.finding {
        for exp in &f.experiments {
            let set = out.entry(exp.clone()).or_default();
            set.extend(f.metric.split(" + ").map(|m| m.trim().to_string()));
            if f.device_time_too {
                set.insert("device_s".into());
            }
        }
    }
    out
}

impl Summary {
    /// The summary of what `findings` read from `db`. Experiments without runs are left
    /// out (their findings read "not measured" from the summary as from the database).
    pub fn from_db(findings: &Findings, db: &ResultsDb, note: Option<String>) -> Result<Summary> {
        Summary::build(db, metrics_read(findings), note)
    }

    /// The summary of the named experiments (sensitivity sweeps, which no finding names),
    /// keeping every metric any finding reads.
    pub fn of_experiments(
        findings: &Findings,
        db: &ResultsDb,
        names: &[String],
        note: Option<String>,
    ) -> Result<Summary> {
        let all: BTreeSet<String> = metrics_read(findings).into_values().flatten().collect();
        let wanted = names.iter().map(|n| (n.clone(), all.clone())).collect();
        let s = Summary::build(db, wanted, note)?;
        if let Some(missing) = names.iter().find(|n| !s.experiments.contains_key(*n)) {
            return Err(Error::invalid(
                "--sweep",
                format!("the database holds no finished run of experiment '{missing}' with a metric the findings read"),
            ));
        }
        Ok(s)
    }

    fn build(
        db: &ResultsDb,
        wanted: BTreeMap<String, BTreeSet<String>>,
        note: Option<String>,
    ) -> Result<Summary> {
        let mut experiments = BTreeMap::new();
        for (exp, names) in wanted {
            let obs = observations(db, std::slice::from_ref(&exp))?;
            let kept: Vec<SummaryObservation> = obs
                .into_iter()
                .filter_map(|o| {
                    let metrics: BTreeMap<String, f64> = names
                        .iter()
                        .filter_map(|n| Some((n.clone(), *o.metrics.get(n)?)))
                        .collect();
                    (!metrics.is_empty()).then_some(SummaryObservation {
                        attrs: o.attrs,
                        metrics,
                    })
                })
                .collect();
            if kept.is_empty() {
                continue;
            }
            let finished = db
                .results(Some(&exp), true)?
                .objects()
                .iter()
                .filter_map(|r| r.get("finished_at")?.as_str().map(str::to_string))
                .max()
                .unwrap_or_default();
            experiments.insert(
                exp,
                ExperimentSummary {
                    finished,
                    observations: kept,
                },
            );
        }
        Ok(Summary {
            format: SUMMARY_FORMAT,
            note,
            experiments,
        })
    }

    /// The summary as its file holds it: JSON, one observation per line.
    pub fn to_json(&self) -> String {
        let mut out = format!("{{\n  \"format\": {},\n", self.format);
        if let Some(n) = &self.note {
            out.push_str(&format!("  \"note\": {},\n", j(n)));
        }
        out.push_str("  \"experiments\": {");
        for (i, (name, e)) in self.experiments.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&format!(
                "    {}: {{\n      \"finished\": {},\n      \"observations\": [",
                j(name),
                j(&e.finished)
            ));
            for (k, o) in e.observations.iter().enumerate() {
                out.push_str(if k == 0 { "\n" } else { ",\n" });
                out.push_str("        ");
                out.push_str(&j(o));
            }
            out.push_str("\n      ]\n    }");
        }
        out.push_str("\n  }\n}\n");
        out
    }

    /// Reads a summary file, refusing another format.
    pub fn load(path: &Path) -> Result<Summary> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let s: Summary = serde_json::from_str(&text)
            .map_err(|e| Error::invalid(path.display().to_string(), e.to_string()))?;
        if s.format != SUMMARY_FORMAT {
            return Err(Error::invalid(
                format!("{}: format", path.display()),
                format!(
                    "summary format {} is not {SUMMARY_FORMAT}, the one this spidx reads",
                    s.format
                ),
            ));
        }
        Ok(s)
    }

    /// The observations of `experiment` (none when the summary does not hold it).
    pub(crate) fn observations(&self, experiment: &str) -> Vec<Observation> {
        self.experiments
            .get(experiment)
            .map(|e| {
                e.observations
                    .iter()
                    .map(|o| Observation {
                        attrs: o.attrs.clone(),
                        metrics: o.metrics.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// One-line JSON of a serialisable value (serde_json cannot fail on these types: strings,
/// maps of strings, finite numbers).
fn j<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("strings, maps and finite numbers serialise")
}

/// The marker that opens the generated scorecard in a Markdown page.
pub const DOC_BEGIN: &str = "<!-- scorecard:begin";
/// The marker that closes it.
pub const DOC_END: &str = "<!-- scorecard:end -->";

/// `page` with the text between its scorecard markers replaced by `section` (the markers
/// kept). Errors when the page lacks either marker or has them out of order.
pub fn replace_doc_section(page: &str, section: &str, file: &str) -> Result<String> {
    replace_marked_section(page, "scorecard", section, file)
}

/// `page` with the text between its `<!-- NAME:begin ... -->` line and its
/// `<!-- NAME:end -->` marker replaced by `section` (the markers kept).
pub fn replace_marked_section(page: &str, name: &str, section: &str, file: &str) -> Result<String> {
    let (open, close) = (format!("<!-- {name}:begin"), format!("<!-- {name}:end -->"));
    let begin = page.find(&open).ok_or_else(|| {
        Error::invalid(file.to_string(), format!("no '{open} ... -->' marker line"))
    })?;
    let body = begin
        + page[begin..]
            .find('\n')
            .ok_or_else(|| Error::invalid(file.to_string(), "the begin marker ends the file"))?
        + 1;
    let end = page[body..].find(&close).map(|e| body + e).ok_or_else(|| {
        Error::invalid(
            file.to_string(),
            format!("no '{close}' marker after the begin marker"),
        )
    })?;
    Ok(format!("{}{}{}", &page[..body], section, &page[end..]))
}
