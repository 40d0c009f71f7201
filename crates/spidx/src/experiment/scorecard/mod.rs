//! The reproduction scorecard: each finding of the seeds ([`findings`]) decided from a
//! results database — reproduced in direction and magnitude, in direction only, not
//! reproduced, or not measured (no runs) — with the measured value beside the paper's.
//!
//! It sits on top of the results database ([`super::db`]) like the report: it reads the
//! latest finished run of each configuration and the metrics every layer recorded, and
//! computes; no verdict or number is typed anywhere. `spidx reproduce` prints it; a
//! [`summary::Summary`] keeps what the findings read from a database, and
//! `docs/reproduction.md`'s scorecard is generated from the summary checked in beside the
//! findings ([`doc_section`]).

mod decide;
pub(crate) mod findings;
pub mod summary;
pub mod sweep;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

pub use findings::{Direction, Finding, Findings, OneOrMany, Selector, Test};

use super::db::ResultsDb;
use crate::Result;

/// A finding's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Direction and magnitude as the paper's (or direction, where the paper gives no
    /// magnitude).
    Reproduced,
    /// The direction holds, the magnitude is outside the paper's range.
    DirectionOnly,
    /// The direction does not hold.
    NotReproduced,
    /// The database holds no run that measures it.
    NotMeasured,
}

impl Verdict {
    /// As the scorecard prints it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::DirectionOnly => "direction only",
            Verdict::NotReproduced => "not reproduced",
            Verdict::NotMeasured => "not measured",
        }
    }

    /// Whether the direction holds.
    pub fn in_direction(self) -> bool {
        matches!(self, Verdict::Reproduced | Verdict::DirectionOnly)
    }
}

/// A decision on one metric: the verdict, what was measured, why.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// The measured value, in the finding's terms.
    pub measured: String,
    /// Why this verdict (counts of pairs or groups, the exceptions).
    pub reason: String,
}

/// One row of the scorecard.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The finding's id.
    pub id: String,
    /// The paper.
    pub paper: String,
    /// Where in the paper.
    #[serde(rename = "where")]
    pub place: String,
    /// The claim.
    pub claim: String,
    /// The paper's value.
    pub paper_value: String,
    /// The metric decided on.
    pub metric: String,
    /// The decision on the finding's metric.
    pub decision: Decision,
    /// For time metrics that include CPU time: the decision on modelled device time alone.
    pub device_time: Option<Decision>,
    /// Which setting spidx used where the paper is silent.
    pub setting: Option<String>,
}

/// The scorecard of a findings file over a results database.
#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    /// One row per finding, in the file's order.
    pub rows: Vec<Row>,
}

impl Scorecard {
    /// Rows whose direction holds.
    pub fn in_direction(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.decision.verdict.in_direction())
            .count()
    }

    /// Rows with `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.rows
            .iter()
            .filter(|r| r.decision.verdict == verdict)
            .count()
    }

    /// A Markdown table (and a one-line summary above it).
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "{} findings: {} reproduced, {} in direction only, {} not reproduced, {} not measured.\n\n",
            self.rows.len(),
            self.count(Verdict::Reproduced),
            self.count(Verdict::DirectionOnly),
            self.count(Verdict::NotReproduced),
            self.count(Verdict::NotMeasured),
        );
        out.push_str("| # | paper, where | finding | paper | spidx | verdict |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        for r in &self.rows {
            let mut verdict = format!("**{}**: {}", r.decision.verdict.label(), r.decision.reason);
            if let Some(d) = &r.device_time {
                verdict.push_str(&format!(
                    "<br>device time only: **{}**: {} ({})",
                    d.verdict.label(),
                    d.measured,
                    d.reason
                ));
            }
            if let Some(s) = &r.setting {
                verdict.push_str(&format!("<br>setting: {s}"));
            }
            out.push_str(&format!(
                "| {} | {} {} | {} | {} | {} | {} |\n",
                cell(&r.id),
                cell(&r.paper),
                cell(&r.place),
                cell(&r.claim),
                cell(&r.paper_value),
                cell(&r.decision.measured),
                cell(&verdict)
            ));
        }
        out
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// One workload of one run: its attributes and metrics.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// `experiment`, `run`, `index`, `store`, `store.<key>`, `page_size`, `device`,
    /// `buffer`, `layout`, `workload`, `dims`.
    pub attrs: BTreeMap<String, String>,
    /// Every metric of the workload.
    pub metrics: HashMap<String, f64>,
}

impl Observation {
    /// The value of `metric`, or of a sum written `a + b + c` (every term present).
    pub fn value(&self, metric: &str) -> Option<f64> {
        metric
            .split(" + ")
            .map(|m| self.metrics.get(m.trim()).copied())
            .sum()
    }

    fn matches(&self, s: &Selector) -> bool {
        s.iter()
            .all(|(k, v)| self.attrs.get(k).is_some_and(|a| v.accepts(a)))
    }

    fn key(&self, attrs: &[String]) -> Vec<String> {
        attrs
            .iter()
            .map(|a| self.attrs.get(a).cloned().unwrap_or_default())
            .collect()
    }

    fn label(&self) -> String {
        format!(
            "{} / {}",
            self.attrs.get("run").map_or("", String::as_str),
            self.attrs.get("workload").map_or("", String::as_str)
        )
    }
}

/// Reads the observations of `experiments` (the latest finished run of each
/// configuration).
pub(crate) fn observations(db: &ResultsDb, experiments: &[String]) -> Result<Vec<Observation>> {
    let mut out = Vec::new();
    for exp in experiments {
        let results = db.results(Some(exp), true)?;
        let device_names: HashMap<i64, String> = db
            .run_devices(exp)?
            .objects()
            .iter()
            .filter_map(|r| {
                Some((
                    r.get("run_id")?.as_i64()?,
                    r.get("device_name")?.as_str()?.to_string(),
                ))
            })
            .collect();
        let mut index: HashMap<(i64, String), usize> = HashMap::new();
        for row in results.objects() {
            let s = |k: &str| match row.get(k) {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            let run_id = row
                .get("run_id")
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(-1);
            let mut attrs = BTreeMap::new();
            attrs.insert("experiment".into(), exp.clone());
            attrs.insert("run".into(), s("run"));
            attrs.insert("index".into(), s("index_label"));
            attrs.insert("device".into(), s("device"));
            if let Some(n) = device_names.get(&run_id) {
                attrs.insert(sweep::DEVICE_NAME.into(), n.clone());
            }
            attrs.insert("buffer".into(), s("buffer"));
            attrs.insert("layout".into(), s("layout"));
            attrs.insert("workload".into(), s("workload"));
            let ps = row.get("page_size").and_then(serde_json::Value::as_u64);
            attrs.insert("page_size".into(), ps.map(size_label).unwrap_or_default());
            if let Ok(serde_json::Value::Object(store)) =
                serde_json::from_str::<serde_json::Value>(&s("store"))
            {
                flatten_store(
                    "store",
                    &serde_json::Value::Object(store.clone()),
                    &mut attrs,
                );
                if let Some(k) = store.get("kind").and_then(|k| k.as_str()) {
                    attrs.insert("store".into(), k.to_string());
                }
            }
            if let Some(d) = s("run").split(" · ").find_map(|p| p.strip_prefix("d=")) {
                attrs.insert("dims".into(), d.to_string());
            }
            index.insert((run_id, s("workload")), out.len());
            out.push(Observation {
                attrs,
                metrics: HashMap::new(),
            });
        }
        let metrics = db.metrics(Some(exp), None)?;
        for row in metrics.objects() {
            let run_id = row
                .get("run_id")
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(-1);
            let workload = row
                .get("workload")
                .and_then(|w| w.as_str())
                .unwrap_or_default()
                .to_string();
            let (Some(name), Some(value)) = (
                row.get("name").and_then(|n| n.as_str()),
                row.get("value").and_then(serde_json::Value::as_f64),
            ) else {
                continue;
            };
            if let Some(&i) = index.get(&(run_id, workload)) {
                out[i].metrics.insert(name.to_string(), value);
            }
        }
    }
    Ok(out)
}

fn flatten_store(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                flatten_store(&format!("{prefix}.{k}"), x, out);
            }
        }
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

fn size_label(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}KB", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

/// The scorecard of `findings` over the database `db`.
pub fn compute(findings: &Findings, db: &ResultsDb) -> Result<Scorecard> {
    compute_with(findings, |exp| {
        observations(db, std::slice::from_ref(&exp.to_string()))
    })
}

/// The scorecard of `findings` over a results summary (the same as over the database the
/// summary was written from).
pub fn compute_from_summary(findings: &Findings, summary: &summary::Summary) -> Scorecard {
    compute_with(findings, |exp| Ok(summary.observations(exp)))
        .expect("reading a summary cannot fail")
}

/// The Markdown section `docs/reproduction.md` shows between its scorecard markers: where
/// the numbers come from (the summary's note and each experiment's newest run), then the
/// scorecard.
pub fn doc_section(card: &Scorecard, summary: &summary::Summary) -> String {
    let mut out = String::new();
    if let Some(n) = &summary.note {
        out.push_str(&format!("{}\n\n", n.trim()));
    }
    out.push_str("| experiment | observations | newest run finished |\n|---|---|---|\n");
    for (name, e) in &summary.experiments {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            name,
            e.observations.len(),
            cell(&e.finished)
        ));
    }
    out.push('\n');
    out.push_str(&card.markdown());
    out
}

fn compute_with(
    findings: &Findings,
    mut read: impl FnMut(&str) -> Result<Vec<Observation>>,
) -> Result<Scorecard> {
    let mut cache: HashMap<String, Vec<Observation>> = HashMap::new();
    let mut rows = Vec::new();
    for f in &findings.finding {
        let mut obs: Vec<&Observation> = Vec::new();
        for exp in &f.experiments {
            if !cache.contains_key(exp) {
                cache.insert(exp.clone(), read(exp)?);
            }
        }
        for exp in &f.experiments {
            obs.extend(cache[exp].iter());
        }
        rows.push(evaluate(f, &obs));
    }
    Ok(Scorecard { rows })
}

/// Decides one finding over its experiments' observations.
pub(crate) fn evaluate(f: &Finding, obs: &[&Observation]) -> Row {
    let decision = decide::decide(&f.test, &f.metric, obs);
    let device_time = (f.device_time_too && decision.verdict != Verdict::NotMeasured)
        .then(|| decide::decide(&f.test, "device_s", obs));
    Row {
        id: f.id.clone(),
        paper: f.paper.clone(),
        place: f.place.clone(),
        claim: f.claim.clone(),
        paper_value: f.paper_value.clone(),
        metric: f.metric.clone(),
        decision,
        device_time,
        setting: f.setting.clone(),
    }
}

#[cfg(test)]
mod tests;
