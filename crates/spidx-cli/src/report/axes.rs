//! The report's views of Emrich et al.'s (2010) other axes under load: kNN latency against
//! `k` (their Fig. 4) and against the index's page size (their Fig. 3), at each number of
//! concurrent streams. Both read the stream workloads' rows (`<name> streams=N`, see
//! `streams.rs`): a k list names its workloads `<name> k=K`, and the page size is a matrix
//! axis, so a chart appears wherever at least two values of its axis were run.
//!
//! Layers: a view over the report's rows and metrics (`data`), drawn with `svg`.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::data::{Data, Row};
use super::html::{esc, slug};
use super::svg::{Grouped, Quantity};

/// A stream workload's row split into its family (the name without `k=` and `streams=`),
/// its k (when the name carries one) and its stream count.
fn split(workload: &str) -> Option<(&str, Option<usize>, usize)> {
    let (base, n) = workload.rsplit_once(" streams=")?;
    let n = n.parse().ok()?;
    match base.rsplit_once(" k=").map(|(f, k)| (f, k.parse().ok())) {
        Some((family, Some(k))) => Some((family, Some(k), n)),
        _ => Some((base, None, n)),
    }
}

/// One chart's series: the rows it draws, labelled, in first-seen order.
fn series<'a>(rows: &[&'a Row], key: impl Fn(&Row) -> String) -> Vec<(String, Vec<&'a Row>)> {
    let mut out: Vec<(String, Vec<&'a Row>)> = Vec::new();
    for r in rows {
        let k = key(r);
        match out.iter_mut().find(|(s, _)| *s == k) {
            Some((_, v)) => v.push(r),
            None => out.push((k, vec![r])),
        }
    }
    out
}

/// A mean-latency chart: `groups` on the x axis, one bar per series; `at` picks a series'
/// row for a group. `None` when nothing was measured.
fn chart(
    title: &str,
    x_label: &str,
    groups: &[String],
    series: &[(String, Vec<&Row>)],
    at: impl Fn(&[&Row], usize) -> Option<f64>,
) -> Option<String> {
    let values: Vec<Vec<Option<f64>>> = (0..groups.len())
        .map(|g| series.iter().map(|(_, rows)| at(rows, g)).collect())
        .collect();
    let (lo, hi) = values
        .iter()
        .flatten()
        .flatten()
        .filter(|v| **v > 0.0)
        .fold((f64::INFINITY, 0f64), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
    if hi <= 0.0 {
        return None;
    }
    let names: Vec<String> = series.iter().map(|(s, _)| s.clone()).collect();
    Some(
        Grouped {
            title,
            y_label: &format!(
                "mean latency per query, {}",
                super::html::clock(series.iter().flat_map(|(_, r)| r.iter().copied()))
            ),
            x_label,
            quantity: Quantity::Time,
            groups,
            series: &names,
            values: &values,
            whiskers: None,
            log: hi / lo > 100.0,
        }
        .svg(),
    )
}

/// The section's HTML (charts inline) and the charts as files; nothing when no stream
/// workload varies k or the page size.
pub fn section(data: &Data) -> (String, Vec<(String, String)>) {
    let mut html = String::new();
    let mut charts = Vec::new();
    // (family, streams) in first-seen order.
    let mut keys: Vec<(&str, usize)> = Vec::new();
    for r in &data.rows {
        if let Some((f, _, n)) = split(&r.workload) {
            if !keys.contains(&(f, n)) {
                keys.push((f, n));
            }
        }
    }
    let mean = |r: &Row| data.metric(r, "latency.mean_s");
    for (family, n) in keys {
        let rows: Vec<&Row> = data
            .rows
            .iter()
            .filter(|r| split(&r.workload).is_some_and(|(f, _, m)| f == family && m == n))
            .collect();
        let k_of = |r: &Row| split(&r.workload).and_then(|(_, k, _)| k);
        let ks: Vec<usize> = rows
            .iter()
            .filter_map(|r| k_of(r))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut pages: Vec<(i64, String)> = rows
            .iter()
            .map(|r| (r.page_size, r.page.clone()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        pages.dedup_by(|a, b| a.0 == b.0);
        let mut parts = Vec::new();
        if ks.len() > 1 {
            let groups: Vec<String> = ks.iter().map(|k| k.to_string()).collect();
            let s = series(&rows, |r| {
                format!("{} · {} · {}", r.device, r.config, r.page)
            });
            let title = format!("{family} at {n} streams: mean latency against k");
            if let Some(svg) = chart(&title, "k (neighbours)", &groups, &s, |rs, g| {
                rs.iter().find(|r| k_of(r) == Some(ks[g])).map(|r| mean(r))
            }) {
                charts.push((
                    format!("{}.svg", slug(&["latency-k", family, &n.to_string()])),
                    svg.clone(),
                ));
                parts.push(svg);
            }
        }
        if pages.len() > 1 {
            // One chart per k (or one, without a k axis).
            let kvals: Vec<Option<usize>> = if ks.is_empty() {
                vec![None]
            } else {
                ks.iter().map(|k| Some(*k)).collect()
            };
            for k in kvals {
                let at_k: Vec<&Row> = rows.iter().copied().filter(|r| k_of(r) == k).collect();
                let groups: Vec<String> = pages.iter().map(|p| p.1.clone()).collect();
                let s = series(&at_k, |r| format!("{} · {}", r.device, r.config));
                let what = k.map(|k| format!(" k={k}")).unwrap_or_default();
                let title =
                    format!("{family}{what} at {n} streams: mean latency against page size");
                if let Some(svg) = chart(&title, "page size", &groups, &s, |rs, g| {
                    rs.iter()
                        .find(|r| r.page_size == pages[g].0)
                        .map(|r| mean(r))
                }) {
                    let name = slug(&["latency-page", &format!("{family}{what}"), &n.to_string()]);
                    charts.push((format!("{name}.svg"), svg.clone()));
                    parts.push(svg);
                }
            }
        }
        if parts.is_empty() {
            continue;
        }
        let _ = write!(
            html,
            "<section id=\"{}\"><h2>{}: latency against k and page size ({n} streams)</h2>\
             <p>Mean latency per query of the concurrent streams (modelled on simulated devices, \
             queueing included; wall time of real threads on real ones), \
             one bar per device and configuration (a dot where the values span more than two decades \
             and the axis is logarithmic), for each value of k (a k list) and each page \
             size (a matrix axis) that was run.</p><div class=\"charts\">",
            slug(&["axes", family, &n.to_string()]),
            esc(family)
        );
        for p in parts {
            html.push_str(&p);
        }
        html.push_str("</div></section>");
    }
    (html, charts)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;
    use crate::report::data::Context;

    #[test]
    fn stream_rows_split_into_family_k_and_streams() {
        assert_eq!(split("knn k=5 streams=10"), Some(("knn", Some(5), 10)));
        assert_eq!(split("knn streams=1"), Some(("knn", None, 1)));
        assert_eq!(split("idx k=x streams=1"), Some(("idx k=x", None, 1)));
        assert_eq!(split("knn k=5"), None);
    }

    fn row(id: i64, workload: &str, device: &str, page_size: i64) -> Row {
        Row {
            run_id: id,
            ordinal: id,
            config: "R*-tree".into(),
            page: format!("{}KB", page_size / 1024),
            page_size,
            simulated: true,
            device: device.into(),
            workload: workload.into(),
            kind: "knn".into(),
            workload_ordinal: 0,
            figures: BTreeMap::new(),
            direct: true,
            plain_key: String::new(),
            durability: String::new(),
            dims: None,
        }
    }

    /// Two devices × two page sizes × three k at 100 streams: one chart against k, one
    /// against page size per k, each bar the row's mean latency.
    #[test]
    fn charts_against_k_and_page_size() {
        let mut rows = Vec::new();
        let mut metrics = HashMap::new();
        let mut id = 0;
        for device in ["hdd", "ssd"] {
            for page in [4096, 32768] {
                id += 1;
                for k in [1, 10, 100] {
                    let w = format!("knn k={k} streams=100");
                    rows.push(row(id, &w, device, page));
                    let v = k as f64 * if device == "hdd" { 10.0 } else { 1.0 };
                    metrics.insert(
                        (id, w),
                        BTreeMap::from([("gauges.latency.mean_s".to_string(), v)]),
                    );
                }
            }
        }
        rows.push(row(9, "knn k=1", "hdd", 4096));
        let data = Data {
            rows,
            metrics,
            context: Context::default(),
            common: Vec::new(),
        };
        let (html, charts) = section(&data);
        let names: Vec<&str> = charts.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names.len(), 1 + 3, "{names:?}");
        assert!(html.contains("knn at 100 streams: mean latency against k"));
        for k in [1, 10, 100] {
            assert!(html.contains(&format!(
                "knn k={k} at 100 streams: mean latency against page size"
            )));
        }
        // Four series (device · configuration · page) against k; two against page size.
        assert!(
            charts[0].1.contains("hdd · R*-tree · 32KB"),
            "{}",
            charts[0].1
        );
        assert!(charts[1].1.contains("ssd · R*-tree"));
        // No stream rows: no section.
        let none = Data {
            rows: vec![row(1, "knn k=1", "hdd", 4096)],
            metrics: HashMap::new(),
            context: Context::default(),
            common: Vec::new(),
        };
        assert_eq!(section(&none).0, "");
    }
}
