//! The report's view of concurrent query streams (Emrich et al. 2010, Fig. 2: query time
//! against the number of concurrent query threads, HDD vs SSD). A stream workload records
//! one result row per stream count (`knn streams=10`); this view gathers them back into one
//! axis: mean and 95th-percentile latency per query and throughput against the number of
//! streams, one bar per device and configuration (a dot on a log axis, where the latencies
//! span more than two decades), and a table with every percentile and
//! the share of page requests the shared memory budget served.
//!
//! Layers: a view over the report's rows and metrics (`data`), drawn with `svg`.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::data::{Data, Row};
use super::html::{clock, esc, slug};
use super::svg::{Grouped, Quantity, PALETTE};
use crate::numfmt::{count, percent, secs};

/// A workload name split into the stream workload's own name and its stream count.
fn split(workload: &str) -> Option<(&str, usize)> {
    let (base, n) = workload.rsplit_once(" streams=")?;
    Some((base, n.parse().ok()?))
}

/// One line of a chart: a device, configuration and page size.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Series {
    device: String,
    config: String,
    page: String,
}

/// The section's HTML (charts inline) and the charts as files; nothing when no workload
/// ran concurrent streams.
pub fn section(data: &Data, workloads: &[String]) -> (String, Vec<(String, String)>) {
    let mut html = String::new();
    let mut charts = Vec::new();
    let mut bases: Vec<&str> = Vec::new();
    for w in workloads {
        if let Some((b, _)) = split(w) {
            if !bases.contains(&b) {
                bases.push(b);
            }
        }
    }
    for base in bases {
        let rows: Vec<(usize, &Row)> = data
            .rows
            .iter()
            .filter_map(|r| match split(&r.workload) {
                Some((b, n)) if b == base => Some((n, r)),
                _ => None,
            })
            .collect();
        let ns: Vec<usize> = rows
            .iter()
            .map(|(n, _)| *n)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut series: Vec<Series> = Vec::new();
        for (_, r) in &rows {
            let s = Series {
                device: r.device.clone(),
                config: r.config.clone(),
                page: r.page.clone(),
            };
            if !series.contains(&s) {
                series.push(s);
            }
        }
        let names = labels(&series);
        let find = |n: usize, s: &Series| {
            rows.iter()
                .find(|(m, r)| {
                    *m == n && r.device == s.device && r.config == s.config && r.page == s.page
                })
                .map(|(_, r)| *r)
        };
        let groups: Vec<String> = ns.iter().map(|n| n.to_string()).collect();
        let grid = |metric: &str| -> Vec<Vec<Option<f64>>> {
            ns.iter()
                .map(|n| {
                    series
                        .iter()
                        .map(|s| find(*n, s).map(|r| data.metric(r, metric)))
                        .collect()
                })
                .collect()
        };
        let clock = clock(rows.iter().map(|(_, r)| *r));
        let real = if rows.iter().any(|(_, r)| !r.simulated) {
            " On real (<code>file:</code>) devices the streams are real threads, one read-only \
             index handle each: latency = a query's wall time on its thread (CPU, device and \
             waiting alike); throughput = queries / the wall time from the first query's start \
             to the last one's end."
        } else {
            ""
        };
        let _ = write!(
            html,
            "<section id=\"{}\"><h2>{}: latency against concurrent streams</h2><p>Each stream issues \
             its queries back to back; the streams' page requests interleave on the one device \
             (on simulated devices in virtual time: modelled latency, queueing included). Latency = a \
             query's device time from its first request to its last; throughput = queries / \
             the time until the last stream finished.{real}</p><div class=\"charts\">",
            slug(&["streams", base]),
            esc(base)
        );
        for (title, members) in panels(&series) {
            // A device's own panel names its series without the device.
            let names: Vec<String> = members
                .iter()
                .map(|i| {
                    let prefix = format!("{} · ", series[*i].device);
                    match names[*i].strip_prefix(&prefix) {
                        Some(rest) if !title.is_empty() => rest.to_string(),
                        _ => names[*i].clone(),
                    }
                })
                .collect();
            let grid = |metric: &str| -> Vec<Vec<Option<f64>>> {
                grid(metric)
                    .into_iter()
                    .map(|row| members.iter().map(|i| row[*i]).collect())
                    .collect()
            };
            let head = if title.is_empty() {
                base.to_string()
            } else {
                format!("{base} on {title}")
            };
            for (metric, what, file) in [
                ("latency.mean_s", "mean latency per query", "latency-mean"),
                ("latency.p95_s", "95th percentile latency", "latency-p95"),
            ] {
                let values = grid(metric);
                let (lo, hi) = values
                    .iter()
                    .flatten()
                    .flatten()
                    .filter(|v| **v > 0.0)
                    .fold((f64::INFINITY, 0f64), |(lo, hi), v| {
                        (lo.min(*v), hi.max(*v))
                    });
                if hi <= 0.0 {
                    continue;
                }
                let svg = Grouped {
                    title: &format!("{head}: {what}"),
                    y_label: &format!("{what}, {clock}"),
                    x_label: "concurrent streams",
                    quantity: Quantity::Time,
                    groups: &groups,
                    series: &names,
                    values: &values,
                    whiskers: None,
                    log: hi / lo > 100.0,
                }
                .svg();
                html.push_str(&svg);
                charts.push((format!("{}.svg", slug(&[file, base, &title])), svg));
            }
            let values = grid("throughput_qps");
            if values.iter().flatten().flatten().any(|v| *v > 0.0) {
                let svg = Grouped {
                    title: &format!("{head}: throughput"),
                    y_label: &format!("queries per second, {clock}"),
                    x_label: "concurrent streams",
                    quantity: Quantity::Count,
                    groups: &groups,
                    series: &names,
                    values: &values,
                    whiskers: None,
                    log: false,
                }
                .svg();
                html.push_str(&svg);
                charts.push((format!("{}.svg", slug(&["throughput", base, &title])), svg));
            }
        }
        html.push_str(
            "</div><div class=\"wide\"><table><tr><th>streams</th><th>device · configuration</th>\
             <th>mean</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>throughput (queries/s)</th>\
             <th>memory hits</th></tr>",
        );
        for n in &ns {
            for (s, name) in series.iter().zip(&names) {
                let Some(r) = find(*n, s) else { continue };
                let m = |k: &str| data.metric(r, k);
                let (hits, misses) = (m("memory.hits"), m("memory.misses"));
                let hit_share = if hits + misses > 0.0 {
                    percent(hits / (hits + misses))
                } else {
                    "—".into()
                };
                let _ = write!(
                    html,
                    "<tr><td>{n}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{hit_share}</td></tr>",
                    esc(name),
                    secs(m("latency.mean_s")),
                    secs(m("latency.p50_s")),
                    secs(m("latency.p95_s")),
                    secs(m("latency.p99_s")),
                    secs(m("latency.max_s")),
                    count(m("throughput_qps")),
                );
            }
        }
        html.push_str("</table></div></section>");
    }
    (html, charts)
}

/// The charts' panels: every series in one chart while the palette tells them apart, else
/// one chart per device (in chunks of the palette's size): (device or "", series indices).
fn panels(series: &[Series]) -> Vec<(String, Vec<usize>)> {
    if series.len() <= PALETTE.len() {
        return vec![(String::new(), (0..series.len()).collect())];
    }
    let mut devices: Vec<&str> = Vec::new();
    for s in series {
        if !devices.contains(&s.device.as_str()) {
            devices.push(&s.device);
        }
    }
    let mut out = Vec::new();
    for d in devices {
        let members: Vec<usize> = (0..series.len())
            .filter(|i| series[*i].device == d)
            .collect();
        let chunks = members.chunks(PALETTE.len()).count();
        for (k, chunk) in members.chunks(PALETTE.len()).enumerate() {
            let title = if chunks > 1 {
                format!("{d} ({}/{chunks})", k + 1)
            } else {
                d.to_string()
            };
            out.push((title, chunk.to_vec()));
        }
    }
    out
}

/// Legend names: the device, with the configuration and page size only where they vary.
fn labels(series: &[Series]) -> Vec<String> {
    let varies = |f: fn(&Series) -> &str| series.iter().any(|s| f(s) != f(&series[0]));
    let (config, page) = (varies(|s| &s.config), varies(|s| &s.page));
    series
        .iter()
        .map(|s| {
            let mut parts = vec![s.device.as_str()];
            if config {
                parts.push(&s.config);
            }
            if page {
                parts.push(&s.page);
            }
            parts.join(" · ")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_rows_are_recognised_by_their_name() {
        assert_eq!(split("knn streams=10"), Some(("knn", 10)));
        assert_eq!(split("knn k=5 streams=1"), Some(("knn k=5", 1)));
        assert_eq!(split("knn"), None);
        assert_eq!(split("knn streams=x"), None);
    }

    #[test]
    fn too_many_series_for_the_palette_are_split_by_device() {
        let s = |d: &str, p: usize| Series {
            device: d.into(),
            config: "R*".into(),
            page: format!("{p}KB"),
        };
        let few: Vec<Series> = (0..4).map(|p| s("hdd", p)).collect();
        assert_eq!(panels(&few), [(String::new(), vec![0, 1, 2, 3])]);
        let many: Vec<Series> = (0..10)
            .map(|p| s("hdd", p))
            .chain((0..3).map(|p| s("ssd", p)))
            .collect();
        let p = panels(&many);
        assert_eq!(p.len(), 3);
        assert_eq!(p[0], ("hdd (1/2)".to_string(), (0..8).collect::<Vec<_>>()));
        assert_eq!(p[1], ("hdd (2/2)".to_string(), vec![8, 9]));
        assert_eq!(p[2], ("ssd".to_string(), vec![10, 11, 12]));
    }

    #[test]
    fn legends_name_only_what_varies() {
        let s = |d: &str, c: &str, p: &str| Series {
            device: d.into(),
            config: c.into(),
            page: p.into(),
        };
        assert_eq!(
            labels(&[s("hdd", "R*", "32KB"), s("ssd", "R*", "32KB")]),
            ["hdd", "ssd"]
        );
        assert_eq!(
            labels(&[s("hdd", "R*", "4KB"), s("hdd", "R*", "32KB")]),
            ["hdd · 4KB", "hdd · 32KB"]
        );
    }
}
