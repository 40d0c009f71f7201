//! How a finding's verdict moves with one device parameter: a sensitivity experiment runs a
//! seed spec's matrix with one preset repeated under overridden parameters (`hdd-wd2tb`,
//! `hdd-wd2tb{hit_overhead_us=66.0}`, ...); for each parameter swept, each finding that reads
//! that preset is decided once per value, with the runs of that value standing in for the
//! preset and every other device's runs as they are. The preset's own runs are the point at
//! the preset's value (read from the preset, not assumed).
//!
//! Sits beside [`super::decide`]: the same tests, over a re-labelled subset of one
//! experiment's observations; no database access of its own (the caller reads the
//! observations from a database or a summary). `spidx reproduce --sweep` prints the result
//! and draws one chart per finding and parameter.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::decide::pairs;
use super::summary::Summary;
use super::{evaluate, Decision, Findings, Observation, Selector, Test};
use crate::device::DeviceSpec;
use crate::experiment::db::ResultsDb;

/// The attribute holding a run's resolved device name (`preset{key=value,...}`).
pub(crate) const DEVICE_NAME: &str = "device_name";

/// One value of a swept parameter and the finding's decision there.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// The parameter's value.
    pub value: f64,
    /// The device as the spec labelled it (e.g. `hdd-wd2tb hit 66us`).
    pub device: String,
    /// Whether this is the preset's own value.
    pub preset: bool,
    /// The finding decided over this value's runs.
    pub decision: Decision,
    /// Per pair of runs (labelled by the finding's `pair_by` attributes), the value the test
    /// decides on: the relative change of `a` from `b` (change tests) or `b / a` (ratio
    /// tests); empty for other tests.
    pub pairs: Vec<(String, f64)>,
}

/// One finding swept over one parameter of one preset.
#[derive(Debug, Clone, Serialize)]
pub struct FindingSweep {
    /// The finding's id.
    pub id: String,
    /// The claim.
    pub claim: String,
    /// The paper's value, as the findings file writes it.
    pub paper_value: String,
    /// The preset whose parameter is swept.
    pub device: String,
    /// The parameter (a device parameter key, e.g. `hit_overhead_us`).
    pub parameter: String,
    /// What the pairs' values are: `change` (relative change) or `ratio`; `None` for tests
    /// without per-pair values.
    pub quantity: Option<&'static str>,
    /// What the pairs' values compare, `a` against `b` (e.g. `ssd-v300 vs
    /// hdd-wd2tb`): the selector values that differ.
    pub contrast: Option<String>,
    /// The paper's range for the pairs' values, where the finding gives one.
    pub range: Option<[f64; 2]>,
    /// The values, in increasing order.
    pub points: Vec<SweepPoint>,
}

/// `preset{k=v,...}` split into the preset and its overrides; a name without overrides has
/// none.
fn split_name(name: &str) -> (&str, BTreeMap<String, String>) {
    match name.strip_suffix('}').and_then(|n| n.split_once('{')) {
        Some((base, list)) => (
            base,
            list.split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect(),
        ),
        None => (name, BTreeMap::new()),
    }
}

/// The value of the (dotted) parameter `key` of preset `base`, as a number.
fn preset_value(base: &str, key: &str) -> Option<f64> {
    let config = DeviceSpec::new(base).resolve().ok()?.config;
    let mut v = serde_json::to_value(config).ok()?;
    for part in key.split('.') {
        v = v.get(part)?.clone();
    }
    v.as_f64()
}

fn device_name(o: &Observation) -> &str {
    o.attrs
        .get(DEVICE_NAME)
        .or_else(|| o.attrs.get("device"))
        .map_or("", String::as_str)
}

/// `a against b` in the values where two selectors differ.
fn contrast(a: &Selector, b: &Selector) -> String {
    let side = |s: &Selector, other: &Selector| -> String {
        s.iter()
            .filter(|(k, v)| other.get(*k).map(|o| o.values()) != Some(v.values()))
            .map(|(_, v)| v.values().join("/"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!("{} vs {}", side(a, b), side(b, a))
}

/// The per-pair values a change or ratio test decides on.
fn pair_values(test: &Test, metric: &str, obs: &[&Observation]) -> Vec<(String, f64)> {
    let (a, b, pair_by, change) = match test {
        Test::Change { a, b, pair_by, .. } => (a, b, pair_by, true),
        Test::Ratio { a, b, pair_by, .. } => (a, b, pair_by, false),
        _ => return Vec::new(),
    };
    pairs(obs, a, b, pair_by, metric)
        .into_iter()
        .filter(|(_, va, vb)| if change { *vb != 0.0 } else { *va > 0.0 })
        .map(|(o, va, vb)| {
            let v = if change { (va - vb) / vb } else { vb / va };
            (o.key(pair_by).join(" · "), v)
        })
        .collect()
}

/// Every finding that reads a swept preset, decided at each value of each parameter swept
/// in `obs` (the observations of one experiment, with their [`DEVICE_NAME`]s). A parameter
/// counts as swept when at least two values of it ran (the preset's own runs being one).
/// Findings the experiment cannot decide at any value (other workloads, other page sizes)
/// are left out; with `stands_for`, so is every finding that does not name that experiment
/// (the seed experiment the sweep repeats: a construction finding is not decided over a
/// queries sweep's runs).
pub fn sweep(
    findings: &Findings,
    obs: &[Observation],
    stands_for: Option<&str>,
) -> Vec<FindingSweep> {
    // preset -> parameter -> (value, resolved name) of each run device overriding only it.
    let mut names: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for o in obs {
        let name = device_name(o);
        names.entry(split_name(name).0).or_default().insert(name);
    }
    let mut out = Vec::new();
    for (base, variants) in &names {
        let mut by_param: BTreeMap<String, Vec<(f64, &str)>> = BTreeMap::new();
        for name in variants {
            let (_, params) = split_name(name);
            if params.len() == 1 {
                let (k, v) = params.iter().next().expect("one parameter");
                if let Ok(x) = v.parse::<f64>() {
                    by_param.entry(k.clone()).or_default().push((x, name));
                }
            }
        }
        for (param, mut points) in by_param {
            if variants.contains(base) {
                if let Some(x) = preset_value(base, &param) {
                    points.push((x, base));
                }
            }
            if points.len() < 2 {
                continue;
            }
            points.sort_by(|p, q| p.0.total_cmp(&q.0));
            let decided = findings.finding.iter().filter(|f| {
                f.test.reads_device(base)
                    && stands_for.is_none_or(|e| f.experiments.iter().any(|x| x == e))
            });
            for f in decided {
                let experiment = f.experiments.first().cloned().unwrap_or_default();
                let mut swept = Vec::new();
                for (value, name) in &points {
                    let chosen: Vec<Observation> = obs
                        .iter()
                        .filter(|o| {
                            let n = device_name(o);
                            split_name(n).0 != *base || n == *name
                        })
                        .map(|o| {
                            let mut o = o.clone();
                            let label = o.attrs.get("device").cloned().unwrap_or_default();
                            if device_name(&o) == *name {
                                o.attrs.insert("device".into(), base.to_string());
                            }
                            o.attrs.insert("experiment".into(), experiment.clone());
                            o.attrs.insert("label".into(), label);
                            o
                        })
                        .collect();
                    let refs: Vec<&Observation> = chosen.iter().collect();
                    let row = evaluate(f, &refs);
                    let device = chosen
                        .iter()
                        .find(|o| device_name(o) == *name)
                        .and_then(|o| o.attrs.get("label").cloned())
                        .unwrap_or_else(|| name.to_string());
                    swept.push(SweepPoint {
                        value: *value,
                        device,
                        preset: name == base,
                        pairs: pair_values(&f.test, &f.metric, &refs),
                        decision: row.decision,
                    });
                }
                if swept
                    .iter()
                    .all(|p| p.decision.verdict == super::Verdict::NotMeasured)
                {
                    continue;
                }
                let (quantity, range, contrast) = match &f.test {
                    Test::Change { range, a, b, .. } => {
                        (Some("change"), *range, Some(contrast(a, b)))
                    }
                    Test::Ratio { range, a, b, .. } => {
                        (Some("ratio"), *range, Some(contrast(b, a)))
                    }
                    _ => (None, None, None),
                };
                out.push(FindingSweep {
                    id: f.id.clone(),
                    claim: f.claim.clone(),
                    paper_value: f.paper_value.clone(),
                    device: base.to_string(),
                    parameter: param.clone(),
                    quantity,
                    contrast,
                    range,
                    points: swept,
                });
            }
        }
    }
    out
}

/// [`sweep`] over the latest finished runs of `experiment` in `db`.
pub fn from_db(
    findings: &Findings,
    db: &ResultsDb,
    experiment: &str,
    stands_for: Option<&str>,
) -> crate::Result<Vec<FindingSweep>> {
    let obs = super::observations(db, &[experiment.to_string()])?;
    Ok(sweep(findings, &obs, stands_for))
}

/// [`sweep`] over the observations a results summary kept of `experiment`.
pub fn from_summary(
    findings: &Findings,
    s: &Summary,
    experiment: &str,
    stands_for: Option<&str>,
) -> Vec<FindingSweep> {
    sweep(findings, &s.observations(experiment), stands_for)
}

/// A value of a swept parameter as a table writes it: whole numbers without decimals.
pub fn value_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The sweeps as Markdown: per preset and parameter, one table with a column per value
/// (the preset's marked) and a row per finding, each cell the verdict and measured value.
pub fn markdown(sweeps: &[FindingSweep]) -> String {
    let mut out = String::new();
    let mut groups: Vec<(&str, &str)> = sweeps
        .iter()
        .map(|s| (s.device.as_str(), s.parameter.as_str()))
        .collect();
    groups.dedup();
    for (device, parameter) in groups {
        let rows: Vec<&FindingSweep> = sweeps
            .iter()
            .filter(|s| s.device == device && s.parameter == parameter)
            .collect();
        let head = &rows[0].points;
        out.push_str(&format!(
            "`{device}`, `{parameter}`:\n\n| finding | paper |"
        ));
        for p in head {
            let mark = if p.preset { " (preset)" } else { "" };
            out.push_str(&format!(" {}{mark} |", value_text(p.value)));
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---|".repeat(head.len()));
        out.push('\n');
        for s in rows {
            out.push_str(&format!("| {} | {} |", s.id, super::cell(&s.paper_value)));
            for p in &s.points {
                out.push_str(&format!(
                    " {}: {} |",
                    p.decision.verdict.label(),
                    super::cell(&p.decision.measured)
                ));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Verdict;
    use super::*;

    fn obs(device: &str, name: &str, index: &str, elapsed: f64) -> Observation {
        let mut o = Observation::default();
        for (k, v) in [
            ("experiment", "sweep"),
            ("device", device),
            (DEVICE_NAME, name),
            ("index", index),
            ("page_size", "4KB"),
            ("store", "direct"),
            ("workload", "construction"),
        ] {
            o.attrs.insert(k.into(), v.into());
        }
        o.metrics.insert("elapsed_s".into(), elapsed);
        o
    }

    const FINDINGS: &str = r#"
[[finding]]
id = "f"
paper = "p"
where = "w"
claim = "the SSD builds faster"
paper_value = "+4 … +16 %"
experiments = ["seeds-x"]
metric = "elapsed_s"
test = "change"
a = { page_size = "4KB", device = "ssd-v300" }
b = { page_size = "4KB", device = "hdd-wd2tb" }
pair_by = ["index"]
direction = "decrease"
range = [-0.16, -0.04]
tolerance = 0.0

[[finding]]
id = "other"
paper = "p"
where = "w"
claim = "reads no HDD"
paper_value = "x"
experiments = ["seeds-x"]
metric = "elapsed_s"
test = "change"
a = { device = "ssd-v300", index = "A" }
b = { device = "ssd-v300", index = "B" }
pair_by = ["page_size"]
direction = "decrease"
"#;

    #[test]
    fn each_value_stands_in_for_the_preset_and_the_preset_value_comes_from_the_preset() {
        let findings = Findings::parse(FINDINGS, "t").unwrap();
        let preset_hit = preset_value("hdd-wd2tb", "hit_overhead_us").unwrap();
        let obs = vec![
            obs("ssd-v300", "ssd-v300", "A", 90.0),
            obs("ssd-v300", "ssd-v300", "B", 95.0),
            // The preset: the SSD 10 % faster (reproduced).
            obs("hdd-wd2tb", "hdd-wd2tb", "A", 100.0),
            // Cheaper hits: the HDD faster (not reproduced).
            obs("hdd hit 50", "hdd-wd2tb{hit_overhead_us=50.0}", "A", 80.0),
            // Dearer hits: the SSD 40 % faster (direction only).
            obs(
                "hdd hit 400",
                "hdd-wd2tb{hit_overhead_us=400.0}",
                "A",
                150.0,
            ),
            // Two overrides at once: not a one-parameter sweep, ignored.
            obs(
                "both",
                "hdd-wd2tb{hit_overhead_us=1.0,cache_kb=10}",
                "A",
                1.0,
            ),
        ];
        assert!(
            sweep(&findings, &obs, Some("seeds-other")).is_empty(),
            "no finding names that experiment"
        );
        let s = sweep(&findings, &obs, Some("seeds-x"));
        assert_eq!(s.len(), 1, "only the finding that reads the HDD: {s:#?}");
        let f = &s[0];
        assert_eq!(
            (f.id.as_str(), f.parameter.as_str()),
            ("f", "hit_overhead_us")
        );
        assert_eq!(f.quantity, Some("change"));
        assert_eq!(f.contrast.as_deref(), Some("ssd-v300 vs hdd-wd2tb"));
        let values: Vec<f64> = f.points.iter().map(|p| p.value).collect();
        assert_eq!(values, vec![50.0, preset_hit, 400.0]);
        let verdicts: Vec<Verdict> = f.points.iter().map(|p| p.decision.verdict).collect();
        assert_eq!(
            verdicts,
            vec![
                Verdict::NotReproduced,
                Verdict::Reproduced,
                Verdict::DirectionOnly
            ]
        );
        assert!(f.points[1].preset && !f.points[0].preset);
        assert_eq!(f.points[0].device, "hdd hit 50");
        let changes: Vec<f64> = f.points.iter().map(|p| p.pairs[0].1).collect();
        for (got, want) in changes.iter().zip([0.125, -0.1, -0.4]) {
            assert!((got - want).abs() < 1e-12, "{changes:?}");
        }
        assert_eq!(f.points[0].pairs[0].0, "A");
        let md = markdown(&s);
        assert!(md.contains("`hdd-wd2tb`, `hit_overhead_us`"), "{md}");
        assert!(
            md.contains(&format!("{} (preset)", value_text(preset_hit))),
            "{md}"
        );
        assert!(
            md.contains("| f | +4 … +16 % | not reproduced: +12.5 % (1 pairs) |"),
            "{md}"
        );
    }

    #[test]
    fn a_parameter_with_one_value_is_no_sweep() {
        let findings = Findings::parse(FINDINGS, "t").unwrap();
        let obs = vec![
            obs("ssd-v300", "ssd-v300", "A", 90.0),
            obs("hdd hit 50", "hdd-wd2tb{hit_overhead_us=50.0}", "A", 80.0),
        ];
        assert!(sweep(&findings, &obs, None).is_empty());
    }

    #[test]
    fn names_split_into_preset_and_overrides() {
        let (b, p) = split_name("ssd-v300{queue_depth=32,flash.read_us=40}");
        assert_eq!(b, "ssd-v300");
        assert_eq!(p["queue_depth"], "32");
        assert_eq!(p["flash.read_us"], "40");
        assert_eq!(split_name("hdd-wd2tb"), ("hdd-wd2tb", BTreeMap::new()));
    }
}
