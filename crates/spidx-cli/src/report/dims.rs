//! The report's view of Emrich et al.'s (2010) Fig. 5: mean kNN latency of the index and
//! of the sequential scan against the data's dimensionality, per device, with the
//! break-even marked: the dimensionality where the two curves cross (scan faster beyond
//! it), interpolated linearly between the two measured dimensionalities that bracket the
//! change of sign of their difference.
//!
//! It reads runs of a `matrix.dims` axis (each run's dataset description carries its
//! dimensionality, see `data`) and pairs a kNN workload of the index with a scan workload
//! (`access = "scan"`, told apart by the spec) of the same k and number of streams. Stream
//! workloads (`<name> streams=N`) give their mean latency per query (modelled device time,
//! queueing included, or the wall time of real threads); classic ones the sum of
//! per-query means over the queries.
//!
//! Layers: a view over the report's rows and metrics (`data`), drawn with `lines`.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::data::{Data, Row};
use super::html::{esc, slug};
use super::lines::{Line, Lines, Marker};
use crate::numfmt::secs;

/// Which of two curves is lower (faster) just beyond a crossing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lower {
    /// The first curve (the index).
    A,
    /// The second curve (the scan).
    B,
}

/// A point where two sampled curves cross.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crossing {
    /// Where, on the x axis.
    pub x: f64,
    /// The curve that is lower beyond `x`.
    pub lower_after: Lower,
}

/// Where curves `a` and `b`, sampled at the same increasing x values as `(x, a, b)`, cross:
/// wherever the sign of `a − b` changes between two measured points, at the x where the
/// straight line between them is zero. Points where the curves are equal (ties) do not
/// count by themselves: a tie between opposite signs is the crossing (the first tie of a
/// run of them), a tie with the same sign on both sides (touching) or at an end of the
/// range (no change observed) is none. In order of x.
pub fn crossings(points: &[(f64, f64, f64)]) -> Vec<Crossing> {
    let mut out = Vec::new();
    // The last point with a non-zero difference: (its position, x, difference).
    let mut prev: Option<(usize, f64, f64)> = None;
    for (i, &(x, a, b)) in points.iter().enumerate() {
        let d = a - b;
        if d == 0.0 || d.is_nan() {
            continue;
        }
        if let Some((j, xj, dj)) = prev {
            if dj.signum() != d.signum() {
                let at = if j + 1 == i {
                    xj + (x - xj) * dj / (dj - d)
                } else {
                    points[j + 1].0
                };
                out.push(Crossing {
                    x: at,
                    lower_after: if d > 0.0 { Lower::B } else { Lower::A },
                });
            }
        }
        prev = Some((i, x, d));
    }
    out
}

/// The break-even as the report writes it: each crossing with the faster side beyond it,
/// or that there is none and which side is faster throughout.
fn break_even_text(points: &[(f64, f64, f64)], cs: &[Crossing]) -> String {
    if cs.is_empty() {
        let range = match (points.first(), points.last()) {
            (Some(f), Some(l)) => format!("{}–{} d", f.0, l.0),
            _ => String::new(),
        };
        let (lt, gt) = points.iter().fold((0, 0), |(lt, gt), p| {
            (lt + usize::from(p.1 < p.2), gt + usize::from(p.1 > p.2))
        });
        let who = match (lt, gt) {
            (0, 0) => "equal",
            (_, 0) => "index faster",
            (0, _) => "scan faster",
            _ => "ties only between",
        };
        return format!("no crossing in the measured range ({who} throughout {range})");
    }
    cs.iter()
        .map(|c| {
            format!(
                "{:.1} d ({} faster beyond)",
                c.x,
                match c.lower_after {
                    Lower::A => "index",
                    Lower::B => "scan",
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A kNN row of a dims run: its workload's name in the spec, k, scan or not, streams.
struct Point<'a> {
    row: &'a Row,
    dims: usize,
    family: String,
    k: usize,
    scan: bool,
    streams: Option<usize>,
    /// The run's configuration without its `d=N` part.
    config: String,
}

fn points(data: &Data) -> Vec<Point<'_>> {
    data.rows
        .iter()
        .filter_map(|r| {
            let dims = r.dims?;
            let (family, streams) = match r.workload.rsplit_once(" streams=") {
                Some((f, n)) => (f, Some(n.parse().ok()?)),
                None => (r.workload.as_str(), None),
            };
            let spec = data.context.knn.get(family)?;
            let config = r
                .config
                .split(" · ")
                .filter(|p| {
                    p.strip_prefix("d=")
                        .is_none_or(|n| n.parse::<usize>().is_err())
                })
                .collect::<Vec<_>>()
                .join(" · ");
            Some(Point {
                row: r,
                dims,
                family: family.to_string(),
                k: spec.k,
                scan: spec.scan,
                streams,
                config,
            })
        })
        .collect()
}

/// Mean latency per query of a row: the streams' mean, or the classic protocol's sum of
/// per-query means over the queries.
fn latency(data: &Data, p: &Point) -> Option<f64> {
    let v = match p.streams {
        Some(_) => data.metric(p.row, "latency.mean_s"),
        None => p.row.get("elapsed_s")? / p.row.get("queries").filter(|q| *q > 0.0)?,
    };
    (v > 0.0).then_some(v)
}

/// One chart's key: the paired workloads, configuration, page size and streams.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    streams: Option<usize>,
    index: String,
    scan: String,
    config: String,
    page: (i64, String),
}

/// The section's HTML (charts inline) and the charts as files; nothing when no index and
/// scan workload were run over at least two dimensionalities.
pub fn section(data: &Data) -> (String, Vec<(String, String)>) {
    let pts = points(data);
    let mut keys: BTreeSet<Key> = BTreeSet::new();
    for i in pts.iter().filter(|p| !p.scan) {
        for s in pts.iter().filter(|s| {
            s.scan
                && s.k == i.k
                && s.streams == i.streams
                && s.config == i.config
                && s.row.page_size == i.row.page_size
        }) {
            keys.insert(Key {
                streams: i.streams,
                index: i.family.clone(),
                scan: s.family.clone(),
                config: i.config.clone(),
                page: (i.row.page_size, i.row.page.clone()),
            });
        }
    }
    let several = keys
        .iter()
        .map(|k| (&k.config, &k.page))
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let mut devices: Vec<&str> = Vec::new();
    for p in &pts {
        if !devices.contains(&p.row.device.as_str()) {
            devices.push(&p.row.device);
        }
    }
    let mut html = String::new();
    let mut charts = Vec::new();
    for key in keys {
        let curve = |family: &str, device: &str| -> Vec<(f64, f64)> {
            let mut c: Vec<(f64, f64)> = pts
                .iter()
                .filter(|p| {
                    p.family == family
                        && p.row.device == device
                        && p.streams == key.streams
                        && p.config == key.config
                        && p.row.page_size == key.page.0
                })
                .filter_map(|p| Some((p.dims as f64, latency(data, p)?)))
                .collect();
            c.sort_by(|a, b| a.0.total_cmp(&b.0));
            c.dedup_by(|a, b| a.0 == b.0);
            c
        };
        let mut lines = Vec::new();
        let mut markers = Vec::new();
        let mut table = Vec::new();
        for (colour, device) in devices.iter().enumerate() {
            let (ix, sc) = (curve(&key.index, device), curve(&key.scan, device));
            // The dimensionalities both were measured at.
            let both: Vec<(f64, f64, f64)> = ix
                .iter()
                .filter_map(|(d, a)| sc.iter().find(|s| s.0 == *d).map(|s| (*d, *a, s.1)))
                .collect();
            if both.len() < 2 {
                continue;
            }
            let cs = crossings(&both);
            for c in &cs {
                markers.push(Marker {
                    x: c.x,
                    colour,
                    label: format!("{device}: {:.1} d", c.x),
                });
            }
            table.push((device.to_string(), break_even_text(&both, &cs), both));
            lines.push(Line {
                name: format!("{device} · {}", key.index),
                colour,
                dashed: false,
                points: ix,
            });
            lines.push(Line {
                name: format!("{device} · {}", key.scan),
                colour,
                dashed: true,
                points: sc,
            });
        }
        if table.is_empty() {
            continue;
        }
        let at = key
            .streams
            .map(|n| format!(" at {n} streams"))
            .unwrap_or_default();
        let what = if several {
            format!(" ({} · {})", key.config, key.page.1)
        } else {
            String::new()
        };
        let title = format!(
            "{} vs {}{at}: latency against dimensionality",
            key.index, key.scan
        );
        let (lo, hi) = lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let clock = match key.streams {
            Some(_) => format!(
                "mean latency per query, {}",
                super::html::clock(pts.iter().map(|p| p.row))
            ),
            None => "mean time per query".to_string(),
        };
        let svg = Lines {
            title: &title,
            y_label: &clock,
            x_label: "dimensions",
            lines: &lines,
            markers: &markers,
            log: hi / lo > 100.0,
        }
        .svg();
        let n = key.streams.map(|n| n.to_string()).unwrap_or_default();
        let parts = ["dims", &key.index, &key.scan, &n, &key.config, &key.page.1];
        let parts: Vec<&str> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        let name = slug(&parts);
        let _ = write!(
            html,
            "<section id=\"{name}\"><h2>{}{}: latency against dimensionality, break-even</h2>\
             <p>Mean latency per query of the index workload (solid) and of the sequential-scan \
             baseline (dashed) at each dimensionality that was run, one colour per device. \
             The break-even is where the curves cross: interpolated linearly between the two \
             measured dimensionalities whose difference changes sign.</p><div class=\"charts\">{svg}</div>\
             <table><tr><th>device</th><th class=\"l\">break-even (dimensions)</th></tr>",
            esc(&format!("{} vs {}{at}", key.index, key.scan)),
            esc(&what),
        );
        for (device, text, _) in &table {
            let _ = write!(
                html,
                "<tr><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(device),
                esc(text)
            );
        }
        html.push_str("</table><div class=\"wide\"><table><tr><th>device</th><th>dimensions</th><th>index</th><th>scan</th><th>index / scan</th></tr>");
        for (device, _, both) in &table {
            for (d, a, b) in both {
                let _ = write!(
                    html,
                    "<tr><td>{}</td><td>{d}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>",
                    esc(device),
                    secs(*a),
                    secs(*b),
                    a / b
                );
            }
        }
        html.push_str("</table></div></section>");
        charts.push((format!("{name}.svg"), svg));
    }
    (html, charts)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;
    use crate::report::data::{Context, KnnSpec};

    fn at(xs: &[(f64, f64, f64)]) -> Vec<(f64, Lower)> {
        crossings(xs)
            .into_iter()
            .map(|c| (c.x, c.lower_after))
            .collect()
    }

    #[test]
    fn one_crossing_is_interpolated_between_its_bracketing_points() {
        // index − scan: −4, −2, +2, +6: zero halfway between 8 and 12.
        let p = [
            (4.0, 1.0, 5.0),
            (8.0, 3.0, 5.0),
            (12.0, 7.0, 5.0),
            (16.0, 11.0, 5.0),
        ];
        assert_eq!(at(&p), [(10.0, Lower::B)]);
        // Unequal steps: −1 at 10, +3 at 20 → 10 + 10·1/4.
        assert_eq!(
            at(&[(10.0, 1.0, 2.0), (20.0, 5.0, 2.0)]),
            [(12.5, Lower::B)]
        );
        assert_eq!(
            break_even_text(&p, &crossings(&p)),
            "10.0 d (scan faster beyond)"
        );
    }

    #[test]
    fn no_crossing_says_which_side_is_faster() {
        let p = [(2.0, 1.0, 5.0), (4.0, 2.0, 5.0), (8.0, 4.9, 5.0)];
        assert!(crossings(&p).is_empty());
        assert_eq!(
            break_even_text(&p, &[]),
            "no crossing in the measured range (index faster throughout 2–8 d)"
        );
        let q = [(2.0, 6.0, 5.0), (4.0, 7.0, 5.0)];
        assert!(crossings(&q).is_empty());
        assert!(break_even_text(&q, &[]).contains("scan faster throughout"));
        assert!(crossings(&[]).is_empty());
        assert!(crossings(&[(2.0, 1.0, 2.0)]).is_empty());
    }

    #[test]
    fn several_crossings_are_all_reported_in_order() {
        let p = [
            (2.0, 1.0, 2.0), // −1
            (4.0, 3.0, 2.0), // +1 → crossing at 3
            (6.0, 1.0, 4.0), // −3 → crossing at 4 + 2·1/4 = 4.5
            (8.0, 6.0, 4.0), // +2 → crossing at 6 + 2·3/5 = 7.2
        ];
        let c = at(&p);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0], (3.0, Lower::B));
        assert_eq!(c[1], (4.5, Lower::A));
        assert!((c[2].0 - 7.2).abs() < 1e-12 && c[2].1 == Lower::B);
        assert_eq!(
            break_even_text(&p, &crossings(&p)),
            "3.0 d (scan faster beyond); 4.5 d (index faster beyond); 7.2 d (scan faster beyond)"
        );
    }

    #[test]
    fn ties_cross_only_between_opposite_signs() {
        // A tie between opposite signs is the crossing itself.
        assert_eq!(
            at(&[(2.0, 1.0, 2.0), (4.0, 2.0, 2.0), (6.0, 3.0, 2.0)]),
            [(4.0, Lower::B)]
        );
        // A run of ties: the first.
        assert_eq!(
            at(&[
                (2.0, 3.0, 2.0),
                (4.0, 2.0, 2.0),
                (6.0, 2.0, 2.0),
                (8.0, 1.0, 2.0)
            ]),
            [(4.0, Lower::A)]
        );
        // Touching (same sign both sides) and ties at the ends are no crossing.
        assert!(at(&[(2.0, 1.0, 2.0), (4.0, 2.0, 2.0), (6.0, 1.0, 2.0)]).is_empty());
        assert!(at(&[(2.0, 2.0, 2.0), (4.0, 1.0, 2.0), (6.0, 2.0, 2.0)]).is_empty());
        let equal = [(2.0, 2.0, 2.0), (4.0, 3.0, 3.0)];
        assert!(at(&equal).is_empty());
        assert!(break_even_text(&equal, &[]).contains("equal throughout"));
    }

    fn row(id: i64, workload: &str, device: &str, dims: usize, elapsed: f64) -> Row {
        Row {
            run_id: id,
            ordinal: id,
            config: format!("R*-tree · d={dims}"),
            page: "32KB".into(),
            page_size: 32768,
            simulated: true,
            device: device.into(),
            workload: workload.into(),
            kind: "knn".into(),
            workload_ordinal: 0,
            figures: BTreeMap::from([
                ("elapsed_s".to_string(), elapsed),
                ("queries".to_string(), 10.0),
            ]),
            direct: true,
            plain_key: String::new(),
            durability: String::new(),
            dims: Some(dims),
        }
    }

    /// Two devices over four dimensionalities, streams and classic rows: one chart per
    /// number of streams (and one for the classic rows), each device's break-even in its
    /// table and on the chart.
    #[test]
    fn a_chart_per_pairing_with_each_devices_break_even() {
        let mut rows = Vec::new();
        let mut metrics = HashMap::new();
        let mut id = 0;
        for device in ["hdd", "ssd"] {
            for dims in [2, 4, 8, 16] {
                id += 1;
                // hdd: index − scan = d − 6 (crossing at 6); ssd: d − 12 (at 12).
                let shift = if device == "hdd" { 6.0 } else { 12.0 };
                let ix = 0.001 * (20.0 + dims as f64 - shift);
                let sc = 0.020;
                for (w, v) in [("index streams=10", ix), ("scan streams=10", sc)] {
                    rows.push(row(id, w, device, dims, 0.0));
                    metrics.insert(
                        (id, w.to_string()),
                        BTreeMap::from([("gauges.latency.mean_s".to_string(), v)]),
                    );
                }
                rows.push(row(id, "index", device, dims, ix * 10.0));
                rows.push(row(id, "scan", device, dims, sc * 10.0));
            }
        }
        rows.push(row(99, "construction", "hdd", 2, 1.0));
        let context = Context {
            knn: BTreeMap::from([
                ("index".to_string(), KnnSpec { k: 10, scan: false }),
                ("scan".to_string(), KnnSpec { k: 10, scan: true }),
            ]),
            ..Context::default()
        };
        let data = Data {
            rows,
            metrics,
            context,
            common: Vec::new(),
        };
        let (html, charts) = section(&data);
        assert_eq!(charts.len(), 2, "{html}");
        assert!(html.contains(
            "<h2>index vs scan at 10 streams: latency against dimensionality, break-even"
        ));
        assert!(html.contains("<h2>index vs scan: latency against dimensionality, break-even"));
        assert!(charts[0]
            .1
            .contains("index vs scan: latency against dimensionality"));
        for svg in charts.iter().map(|c| &c.1) {
            assert!(
                svg.contains("hdd: 6.0 d") && svg.contains("ssd: 12.0 d"),
                "{svg}"
            );
            assert_eq!(svg.matches(r#"class="line""#).count(), 4);
        }
        assert_eq!(html.matches("6.0 d (scan faster beyond)").count(), 2);
        assert_eq!(html.matches("12.0 d (scan faster beyond)").count(), 2);
        // Without a scan workload in the spec: nothing.
        let data = Data {
            context: Context::default(),
            ..data
        };
        assert_eq!(section(&data).0, "");
    }
}
