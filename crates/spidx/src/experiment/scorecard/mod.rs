//! The reproduction scorecard: each finding of the seeds ([`findings`]) decided from a
//! results database — reproduced in direction and magnitude, in direction only, not
//! reproduced, or not measured (no runs) — with the measured value beside the paper's.
//!
//! It sits on top of the results database ([`super::db`]) like the report: it reads the
//! latest finished run of each configuration and the metrics every layer recorded, and
//! computes; no verdict or number is typed anywhere. `spidx reproduce` prints it and
//! `docs/reproduction.md` quotes it.

pub(crate) mod findings;

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
    let mut cache: HashMap<String, Vec<Observation>> = HashMap::new();
    let mut rows = Vec::new();
    for f in &findings.finding {
        let mut obs: Vec<&Observation> = Vec::new();
        for exp in &f.experiments {
            if !cache.contains_key(exp) {
                cache.insert(exp.clone(), observations(db, std::slice::from_ref(exp))?);
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
    let decision = decide(&f.test, &f.metric, obs);
    let device_time = (f.device_time_too && decision.verdict != Verdict::NotMeasured)
        .then(|| decide(&f.test, "device_s", obs));
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

fn not_measured(why: impl Into<String>) -> Decision {
    Decision {
        verdict: Verdict::NotMeasured,
        measured: "—".into(),
        reason: why.into(),
    }
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

/// Pairs of observations of `a` and `b` that agree on `pair_by`, with both metrics.
fn pairs<'o>(
    obs: &[&'o Observation],
    a: &Selector,
    b: &Selector,
    pair_by: &[String],
    metric: &str,
) -> Vec<(&'o Observation, f64, f64)> {
    let mut bs: HashMap<Vec<String>, f64> = HashMap::new();
    for o in obs.iter().filter(|o| o.matches(b)) {
        if let Some(v) = o.value(metric) {
            bs.insert(o.key(pair_by), v);
        }
    }
    obs.iter()
        .filter(|o| o.matches(a))
        .filter_map(|o| {
            let va = o.value(metric)?;
            let vb = *bs.get(&o.key(pair_by))?;
            Some((*o, va, vb))
        })
        .collect()
}

/// The last number in `s` (e.g. 10 in `knn streams=10`).
fn number_in(s: &str) -> Option<f64> {
    let mut end = None;
    let bytes = s.as_bytes();
    for i in (0..bytes.len()).rev() {
        if bytes[i].is_ascii_digit() {
            end = Some(i + 1);
            break;
        }
    }
    let end = end?;
    let mut start = end;
    while start > 0 && (bytes[start - 1].is_ascii_digit() || bytes[start - 1] == b'.') {
        start -= 1;
    }
    s[start..end].parse().ok()
}

fn decide(test: &Test, metric: &str, obs: &[&Observation]) -> Decision {
    match test {
        Test::Change {
            a,
            b,
            pair_by,
            direction,
            range,
            tolerance,
        } => {
            let ps = pairs(obs, a, b, pair_by, metric);
            if ps.is_empty() {
                return not_measured("no paired runs");
            }
            let changes: Vec<(&Observation, f64)> = ps
                .iter()
                .map(|(o, va, vb)| {
                    let c = if *vb == 0.0 {
                        if *va == 0.0 {
                            0.0
                        } else {
                            f64::INFINITY * va.signum()
                        }
                    } else {
                        (va - vb) / vb
                    };
                    (*o, c)
                })
                .collect();
            let lo = changes.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
            let hi = changes
                .iter()
                .map(|c| c.1)
                .fold(f64::NEG_INFINITY, f64::max);
            let measured = if lo == hi {
                pct(lo)
            } else {
                format!("{} … {}", pct(lo), pct(hi))
            };
            let measured = format!("{measured} ({} pairs)", changes.len());
            let wrong: Vec<&(&Observation, f64)> = changes
                .iter()
                .filter(|(_, c)| match direction {
                    Direction::Decrease => *c >= 0.0,
                    Direction::Increase => *c <= 0.0,
                })
                .collect();
            if !wrong.is_empty() {
                let (o, c) = wrong[0];
                return Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: format!(
                        "{} of {} pairs move the other way or not at all (e.g. {}: {})",
                        wrong.len(),
                        changes.len(),
                        o.label(),
                        pct(*c)
                    ),
                };
            }
            match range {
                None => Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!(
                        "all {} pairs in the paper's direction; the paper gives no magnitude",
                        changes.len()
                    ),
                },
                Some([rlo, rhi]) => {
                    let out: Vec<_> = changes
                        .iter()
                        .filter(|(_, c)| *c < rlo - tolerance || *c > rhi + tolerance)
                        .collect();
                    if out.is_empty() {
                        Decision {
                            verdict: Verdict::Reproduced,
                            measured,
                            reason: format!(
                                "all {} pairs in the paper's range ± {:.0} points",
                                changes.len(),
                                tolerance * 100.0
                            ),
                        }
                    } else {
                        Decision {
                            verdict: Verdict::DirectionOnly,
                            measured,
                            reason: format!(
                                "all {} pairs in the paper's direction, {} outside its range {} … {} (± {:.0} points)",
                                changes.len(),
                                out.len(),
                                pct(*rlo),
                                pct(*rhi),
                                tolerance * 100.0
                            ),
                        }
                    }
                }
            }
        }
        Test::ZeroVsPositive { zero, positive } => {
            let z: Vec<(&Observation, f64)> = obs
                .iter()
                .filter(|o| o.matches(zero))
                .filter_map(|o| Some((*o, o.value(metric)?)))
                .collect();
            let p: Vec<(&Observation, f64)> = obs
                .iter()
                .filter(|o| o.matches(positive))
                .filter_map(|o| Some((*o, o.value(metric)?)))
                .collect();
            if z.is_empty() || p.is_empty() {
                return not_measured("no runs on one side");
            }
            let z_bad: Vec<_> = z.iter().filter(|(_, v)| *v != 0.0).collect();
            let p_bad: Vec<_> = p.iter().filter(|(_, v)| *v <= 0.0).collect();
            let zmax = z.iter().map(|x| x.1).fold(0.0, f64::max);
            let (pmin, pmax) = p.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                (lo.min(x.1), hi.max(x.1))
            });
            let measured = format!("{} vs {} … {}", num(zmax), num(pmin), num(pmax));
            if z_bad.is_empty() && p_bad.is_empty() {
                Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!("0 in all {} runs, > 0 in all {}", z.len(), p.len()),
                }
            } else {
                let mut why = Vec::new();
                if let Some((o, v)) = z_bad.first() {
                    why.push(format!(
                        "{} of {} runs count more than 0 (e.g. {}: {})",
                        z_bad.len(),
                        z.len(),
                        o.label(),
                        num(*v)
                    ));
                }
                if let Some((o, _)) = p_bad.first() {
                    why.push(format!(
                        "{} of {} runs count 0 (e.g. {})",
                        p_bad.len(),
                        p.len(),
                        o.label()
                    ));
                }
                Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: why.join("; "),
                }
            }
        }
        Test::Best {
            select,
            within,
            over,
            expect,
            highest,
        } => {
            let mut groups: BTreeMap<Vec<String>, Vec<(&Observation, f64)>> = BTreeMap::new();
            for o in obs.iter().filter(|o| o.matches(select)) {
                if let Some(v) = o.value(metric) {
                    groups.entry(o.key(within)).or_default().push((*o, v));
                }
            }
            if groups.is_empty() {
                return not_measured("no runs");
            }
            let mut winners: BTreeMap<String, usize> = BTreeMap::new();
            let mut misses = Vec::new();
            for (key, members) in &groups {
                let best = members
                    .iter()
                    .fold(None::<(&Observation, f64)>, |acc, &(o, v)| match acc {
                        Some((_, bv)) if (*highest && v <= bv) || (!*highest && v >= bv) => acc,
                        _ => Some((o, v)),
                    })
                    .expect("groups are not empty");
                let w = best.0.key(over).join(" · ");
                *winners.entry(w.clone()).or_default() += 1;
                if !expect.accepts(&w) {
                    misses.push(format!("{}: {w}", key.join(" · ")));
                }
            }
            let measured = winners
                .iter()
                .map(|(w, n)| format!("{w} in {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            let measured = format!("{measured} of {} groups", groups.len());
            if misses.is_empty() {
                Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!("{} in every group", expect.values().join(" or ")),
                }
            } else {
                Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: format!(
                        "{} of {} groups differ: {}",
                        misses.len(),
                        groups.len(),
                        misses.join("; ")
                    ),
                }
            }
        }
        Test::RatioGrows {
            a,
            b,
            pair_by,
            along,
            range,
        } => {
            let mut key_by: Vec<String> = pair_by.clone();
            key_by.push(along.clone());
            let ps = pairs(obs, a, b, &key_by, metric);
            let mut by_along: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
            for (o, va, vb) in &ps {
                let Some(x) = o.attrs.get(along).and_then(|s| number_in(s)) else {
                    continue;
                };
                if *va > 0.0 {
                    by_along
                        .entry((x * 1000.0) as i64)
                        .or_default()
                        .push(vb / va);
                }
            }
            if by_along.len() < 2 {
                return not_measured(format!("fewer than two values of {along}"));
            }
            let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
            let points: Vec<(f64, f64)> = by_along
                .iter()
                .map(|(x, v)| (*x as f64 / 1000.0, mean(v)))
                .collect();
            let measured = points
                .iter()
                .map(|(x, r)| format!("{x}: {r:.2}×"))
                .collect::<Vec<_>>()
                .join(", ");
            let (first, last) = (points[0].1, points[points.len() - 1].1);
            if last <= first {
                return Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: format!("the ratio does not grow ({first:.2}× → {last:.2}×)"),
                };
            }
            match range {
                Some([lo, hi]) if last < *lo || last > *hi => Decision {
                    verdict: Verdict::DirectionOnly,
                    measured,
                    reason: format!(
                        "grows {first:.2}× → {last:.2}×, outside the paper's {lo}× … {hi}×"
                    ),
                },
                _ => Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!("grows {first:.2}× → {last:.2}×"),
                },
            }
        }
        Test::Crossover {
            a,
            b,
            pair_by,
            along,
            within,
            range,
        } => {
            let mut key_by: Vec<String> = pair_by.clone();
            key_by.push(along.clone());
            let ps = pairs(obs, a, b, &key_by, metric);
            let mut groups: BTreeMap<Vec<String>, Vec<(f64, f64, f64)>> = BTreeMap::new();
            for (o, va, vb) in &ps {
                if let Some(x) = o.attrs.get(along).and_then(|s| number_in(s)) {
                    groups.entry(o.key(within)).or_default().push((x, *va, *vb));
                }
            }
            if groups.is_empty() {
                return not_measured("no paired runs");
            }
            let mut found = Vec::new();
            let mut missing = Vec::new();
            let mut outside = Vec::new();
            for (key, mut pts) in groups {
                pts.sort_by(|p, q| p.0.total_cmp(&q.0));
                let name = key.join(" · ");
                match pts.iter().find(|p| p.1 > p.2) {
                    Some(p) => {
                        if let Some([lo, hi]) = range {
                            if p.0 < *lo || p.0 > *hi {
                                outside.push(name.clone());
                            }
                        }
                        found.push(format!("{name}: {}", p.0));
                    }
                    None => missing.push(format!(
                        "{name}: none up to {}",
                        pts.last().map_or(0.0, |p| p.0)
                    )),
                }
            }
            let measured = found
                .iter()
                .chain(missing.iter())
                .cloned()
                .collect::<Vec<_>>()
                .join("; ");
            if !missing.is_empty() {
                Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: format!("{} group(s) without a break-even", missing.len()),
                }
            } else if !outside.is_empty() {
                Decision {
                    verdict: Verdict::DirectionOnly,
                    measured,
                    reason: format!(
                        "break-even outside the paper's range in {}",
                        outside.join(", ")
                    ),
                }
            } else {
                Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: "a break-even in every group, in the paper's range".into(),
                }
            }
        }
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests;
