//! The report's validation of device models against a real device: when an experiment ran
//! the same configurations on a real device (a `file:` device, whose times are measured)
//! and on one or more simulated devices (a model calibrated from it with `spidx
//! calibrate`, the presets), it puts each model's predicted elapsed time beside the
//! measured one, per workload and configuration (index configuration · page size), with
//! the relative error, and per model Spearman's rank correlation over the configurations
//! and every pair of configurations the model orders differently from the device: the
//! seeds' question ("does the simulator rank configurations as the SSD does?") answered
//! for the device at hand, and how far off its times are.
//!
//! Which device is measured comes from what the runs recorded (`Row::simulated`, from the
//! run's device configuration), never from its name. The same comparisons are written as
//! `validation.json` next to the report for scripts.
//!
//! Layers: a view over the report's rows (`data`); it computes only errors and ranks.

use std::fmt::Write;

use serde::Serialize;

use super::correlation::spearman;
use super::data::{Data, Row};
use super::html::esc;
use crate::numfmt::secs;

/// The relative error within which a prediction counts as close (issue 34's criterion:
/// predicted elapsed time within ±25 % of the measured one per configuration).
pub const TOLERANCE: f64 = 0.25;

/// One configuration of one workload on the measured device and on one model.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// `configuration · page size`, as the report labels runs.
    pub configuration: String,
    /// The page size as written (`4KB`).
    pub page_size: String,
    /// Elapsed time on the real device (wall clock), s.
    pub measured_s: f64,
    /// Elapsed time the model predicts (device time + host time), s.
    pub predicted_s: f64,
    /// (predicted − measured) / measured.
    pub error: f64,
    /// CPU time of the run on the real device, s.
    pub measured_cpu_s: Option<f64>,
    /// Time inside device calls on the real device, s.
    pub measured_device_s: Option<f64>,
    /// CPU time of the run on the model, s.
    pub predicted_cpu_s: Option<f64>,
    /// The model's device time, s.
    pub predicted_device_s: Option<f64>,
}

/// Two configurations the model orders differently from the device.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Difference {
    /// The configuration the device ran faster (the first of the two when the device tied
    /// them).
    pub faster_on_device: String,
    /// The other one.
    pub slower_on_device: String,
    /// Measured elapsed time of `faster_on_device`, s.
    pub measured_faster_s: f64,
    /// Measured elapsed time of `slower_on_device`, s.
    pub measured_slower_s: f64,
    /// Predicted elapsed time of `faster_on_device`, s.
    pub predicted_faster_s: f64,
    /// Predicted elapsed time of `slower_on_device`, s.
    pub predicted_slower_s: f64,
    /// `reversed` (the model has them the other way round), `tied by the model` or `tied
    /// on the device`.
    pub kind: &'static str,
}

/// One workload, one measured device, one model.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Workload name.
    pub workload: String,
    /// The real device (label).
    pub measured_device: String,
    /// The simulated device (label).
    pub model_device: String,
    /// Every configuration that ran on both, in the report's order.
    pub points: Vec<Point>,
    /// How many points are within ±[`TOLERANCE`].
    pub within_tolerance: usize,
    /// Mean |error| over the points.
    pub mean_abs_error: f64,
    /// Largest |error|.
    pub max_abs_error: f64,
    /// Spearman's ρ of predicted with measured elapsed time over the points (`None` for
    /// fewer than three, or when one side ties them all).
    pub spearman: Option<f64>,
    /// Every pair of configurations ordered differently by the model (empty: the model
    /// ranks the configurations exactly as the device does).
    pub differences: Vec<Difference>,
}

/// The pairs of `points` whose order by predicted time differs from their order by
/// measured time (a strict order on one side and a tie or the opposite order on the
/// other), each oriented from the device's faster configuration.
pub fn differences(points: &[Point]) -> Vec<Difference> {
    let mut out = Vec::new();
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            let m = a.measured_s.total_cmp(&b.measured_s);
            let p = a.predicted_s.total_cmp(&b.predicted_s);
            if m == p {
                continue;
            }
            let (f, s) = if m.is_gt() { (b, a) } else { (a, b) };
            let kind = if m.is_eq() {
                "tied on the device"
            } else if p.is_eq() {
                "tied by the model"
            } else {
                "reversed"
            };
            out.push(Difference {
                faster_on_device: f.configuration.clone(),
                slower_on_device: s.configuration.clone(),
                measured_faster_s: f.measured_s,
                measured_slower_s: s.measured_s,
                predicted_faster_s: f.predicted_s,
                predicted_slower_s: s.predicted_s,
                kind,
            });
        }
    }
    out
}

/// A comparison of `points` (one workload, one measured device, one model).
pub fn compare(workload: &str, measured: &str, model: &str, points: Vec<Point>) -> Comparison {
    let errs: Vec<f64> = points.iter().map(|p| p.error.abs()).collect();
    let n = errs.len().max(1) as f64;
    let m: Vec<f64> = points.iter().map(|p| p.measured_s).collect();
    let p: Vec<f64> = points.iter().map(|p| p.predicted_s).collect();
    Comparison {
        workload: workload.to_string(),
        measured_device: measured.to_string(),
        model_device: model.to_string(),
        within_tolerance: errs.iter().filter(|e| **e <= TOLERANCE).count(),
        mean_abs_error: errs.iter().sum::<f64>() / n,
        max_abs_error: errs.iter().copied().fold(0.0, f64::max),
        spearman: spearman(&p, &m),
        differences: differences(&points),
        points,
    }
}

fn point(measured: &Row, model: &Row) -> Option<Point> {
    let m = measured.get("elapsed_s")?;
    let p = model.get("elapsed_s")?;
    (m > 0.0).then(|| Point {
        configuration: measured.config_page(),
        page_size: measured.page.clone(),
        measured_s: m,
        predicted_s: p,
        error: (p - m) / m,
        measured_cpu_s: measured.get("cpu_s"),
        measured_device_s: measured.get("device_s"),
        predicted_cpu_s: model.get("cpu_s"),
        predicted_device_s: model.get("device_s"),
    })
}

/// Every comparison of `data`: per workload (in `workloads`' order), per real device and
/// per simulated device (in `devices`' order) that share at least one configuration.
pub fn comparisons(data: &Data, workloads: &[String], devices: &[String]) -> Vec<Comparison> {
    let real = |d: &String| data.rows.iter().any(|r| &r.device == d && !r.simulated);
    let measured: Vec<&String> = devices.iter().filter(|d| real(d)).collect();
    let models: Vec<&String> = devices.iter().filter(|d| !real(d)).collect();
    let mut out = Vec::new();
    for w in workloads {
        for d in &measured {
            for m in &models {
                let points: Vec<Point> = data
                    .rows
                    .iter()
                    .filter(|r| &r.workload == w && &r.device == *d)
                    .filter_map(|ra| {
                        let rb = data.rows.iter().find(|rb| {
                            &rb.device == *m
                                && rb.workload == ra.workload
                                && rb.config == ra.config
                                && rb.page == ra.page
                        })?;
                        point(ra, rb)
                    })
                    .collect();
                if !points.is_empty() {
                    out.push(compare(w, d, m, points));
                }
            }
        }
    }
    out
}

fn err_cell(e: f64) -> String {
    let text = format!("{:+.1} %", e * 100.0);
    if e.abs() <= TOLERANCE {
        text
    } else {
        format!("<b>{text}</b>")
    }
}

fn rho(v: Option<f64>) -> String {
    v.map(|r| format!("{r:+.2}")).unwrap_or_else(|| "—".into())
}

/// The section's HTML; empty without a comparison.
pub fn section(cmps: &[Comparison]) -> String {
    if cmps.is_empty() {
        return String::new();
    }
    let pct = TOLERANCE * 100.0;
    let mut html = format!(
        "<section id=\"validation\"><h2>Models vs the real device</h2>\
         <p>For every configuration (index configuration · page size) that ran on a real \
         device (times measured, wall clock) and on a simulated one (times predicted: the model's device time + \
         the host profile's price of the counted work): the predicted elapsed time beside the measured one and the \
         error (predicted − measured) / measured; errors beyond ±{pct:.0} % in bold. Per model, \
         Spearman's rank correlation ρ of predicted with measured time over the configurations \
         (+1: the model ranks them exactly as the device does) and every pair of configurations \
         it orders differently. Also in <code>validation.json</code>.</p>"
    );
    // One table per workload and measured device, a column pair per model.
    let mut i = 0;
    while i < cmps.len() {
        let (w, d) = (&cmps[i].workload, &cmps[i].measured_device);
        let group: Vec<&Comparison> = cmps[i..]
            .iter()
            .take_while(|c| &c.workload == w && &c.measured_device == d)
            .collect();
        i += group.len();
        let _ = write!(
            html,
            "<h3>{} on {} <span class=\"tag\">wall time</span></h3><div class=\"wide\"><table><tr>\
             <th>configuration</th><th>measured</th>",
            esc(w),
            esc(d)
        );
        for c in &group {
            let _ = write!(
                html,
                "<th>{m} predicted</th><th>{m} error</th>",
                m = esc(&c.model_device)
            );
        }
        html.push_str("</tr>");
        // The measured device's configurations, in its order; a model without one shows —.
        let mut configs: Vec<(&str, f64)> = Vec::new();
        for c in &group {
            for p in &c.points {
                if !configs.iter().any(|(k, _)| *k == p.configuration) {
                    configs.push((&p.configuration, p.measured_s));
                }
            }
        }
        for (k, m) in configs {
            let _ = write!(html, "<tr><td>{}</td><td>{}</td>", esc(k), secs(m));
            for c in &group {
                match c.points.iter().find(|p| p.configuration == k) {
                    Some(p) => {
                        let _ = write!(
                            html,
                            "<td>{}</td><td>{}</td>",
                            secs(p.predicted_s),
                            err_cell(p.error)
                        );
                    }
                    None => html.push_str("<td>—</td><td>—</td>"),
                }
            }
            html.push_str("</tr>");
        }
        html.push_str("</table></div>");
    }
    html.push_str(
        "<h3>Per model</h3><div class=\"wide\"><table><tr><th>workload</th><th>measured on</th>\
         <th>model</th><th>configurations</th>",
    );
    let _ = write!(
        html,
        "<th>within ±{pct:.0} %</th><th>mean |error|</th><th>max |error|</th>\
         <th>ρ(predicted, measured)</th><th>pairs ordered differently</th></tr>"
    );
    for c in cmps {
        let _ = write!(
            html,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td>\
             <td>{:.1} %</td><td>{:.1} %</td><td>{}</td><td>{}</td></tr>",
            esc(&c.workload),
            esc(&c.measured_device),
            esc(&c.model_device),
            c.points.len(),
            c.within_tolerance,
            c.mean_abs_error * 100.0,
            c.max_abs_error * 100.0,
            rho(c.spearman),
            c.differences.len(),
        );
    }
    html.push_str("</table></div>");
    let mut diffs = String::new();
    for c in cmps {
        for x in &c.differences {
            let _ = write!(
                diffs,
                "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td>\
                 <td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(&c.workload),
                esc(&c.model_device),
                esc(&x.faster_on_device),
                secs(x.measured_faster_s),
                esc(&x.slower_on_device),
                secs(x.measured_slower_s),
                secs(x.predicted_faster_s),
                secs(x.predicted_slower_s),
                x.kind,
            );
        }
    }
    if diffs.is_empty() {
        html.push_str(
            "<p>Every model ranks the configurations exactly as the real device does.</p>",
        );
    } else {
        let _ = write!(
            html,
            "<h3>Configurations a model orders differently</h3><p>A before B: A ran faster on the \
             real device (or, when the device tied them, A is listed first). A gap of a few per \
             cent on the device may be its own variation from run to run.</p><div class=\"wide\">\
             <table><tr><th>workload</th><th>model</th><th>A</th><th>A measured</th><th>B</th>\
             <th>B measured</th><th>A predicted</th><th>B predicted</th><th>how</th></tr>{diffs}\
             </table></div>"
        );
    }
    html.push_str("</section>");
    html
}

/// The comparisons as JSON (`validation.json`): the tolerance and every comparison with its
/// points and differences.
pub fn json(experiment: &str, cmps: &[Comparison]) -> String {
    let v = serde_json::json!({
        "experiment": experiment,
        "tolerance": TOLERANCE,
        "comparisons": cmps,
    });
    serde_json::to_string_pretty(&v).expect("plain data serialises") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(k: &str, m: f64, p: f64) -> Point {
        Point {
            configuration: k.into(),
            page_size: "4KB".into(),
            measured_s: m,
            predicted_s: p,
            error: (p - m) / m,
            measured_cpu_s: None,
            measured_device_s: None,
            predicted_cpu_s: None,
            predicted_device_s: None,
        }
    }

    #[test]
    fn same_order_has_no_difference_and_rho_one() {
        let c = compare(
            "w",
            "file:x",
            "m",
            vec![pt("a", 1.0, 1.2), pt("b", 2.0, 2.1), pt("c", 4.0, 3.0)],
        );
        assert!(c.differences.is_empty());
        assert_eq!(c.spearman, Some(1.0));
        assert_eq!(c.within_tolerance, 3);
        assert!((c.max_abs_error - 0.25).abs() < 1e-12);
        assert!((c.mean_abs_error - (0.2 + 0.05 + 0.25) / 3.0).abs() < 1e-12);
    }

    #[test]
    fn reversed_and_tied_pairs_are_listed_from_the_devices_faster() {
        // The device: b < a < c. The model: a < b (reversed), a == c (tied by the model).
        let pts = vec![pt("a", 2.0, 1.0), pt("b", 1.0, 3.0), pt("c", 5.0, 1.0)];
        let d = differences(&pts);
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!(
            (
                d[0].faster_on_device.as_str(),
                d[0].slower_on_device.as_str(),
                d[0].kind
            ),
            ("b", "a", "reversed")
        );
        assert_eq!(
            (d[0].measured_faster_s, d[0].predicted_faster_s),
            (1.0, 3.0)
        );
        assert_eq!(
            (
                d[1].faster_on_device.as_str(),
                d[1].slower_on_device.as_str(),
                d[1].kind
            ),
            ("a", "c", "tied by the model")
        );
        assert_eq!(
            (
                d[2].faster_on_device.as_str(),
                d[2].slower_on_device.as_str(),
                d[2].kind
            ),
            ("b", "c", "reversed")
        );
        // A tie on the device that the model breaks is a difference too.
        let d = differences(&[pt("x", 1.0, 2.0), pt("y", 1.0, 1.0)]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, "tied on the device");
        assert_eq!(d[0].faster_on_device, "x");
    }

    #[test]
    fn every_discordant_pair_and_only_those_brute_force() {
        // Against a direct count: for many small samples, the listed pairs are exactly the
        // pairs whose signs differ.
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % 5) as f64 + 1.0
        };
        for _ in 0..200 {
            let pts: Vec<Point> = (0..5)
                .map(|i| {
                    let (m, p) = (next(), next());
                    pt(&format!("c{i}"), m, p)
                })
                .collect();
            let mut expect = 0;
            for i in 0..pts.len() {
                for j in i + 1..pts.len() {
                    let sm = (pts[i].measured_s - pts[j].measured_s).signum()
                        * ((pts[i].measured_s != pts[j].measured_s) as i32 as f64);
                    let sp = (pts[i].predicted_s - pts[j].predicted_s).signum()
                        * ((pts[i].predicted_s != pts[j].predicted_s) as i32 as f64);
                    if sm != sp {
                        expect += 1;
                    }
                }
            }
            let d = differences(&pts);
            assert_eq!(d.len(), expect);
            for x in &d {
                assert!(x.measured_faster_s <= x.measured_slower_s);
                assert!(
                    x.predicted_faster_s >= x.predicted_slower_s || x.kind == "tied on the device"
                );
            }
        }
    }
}
