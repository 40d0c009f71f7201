//! The report's simulator-vs-device view, the flash-simulator seed's question (Carniel et
//! al., Sect. 5 and Table 3): do the operation counts of one environment (a simulated
//! flash chip: reads, writes, erases) rank the configurations as the elapsed time of
//! another (an SSD) does? For every workload and every ordered pair of devices that ran
//! the same configurations (index configuration × page size), it gives Spearman's rank
//! correlation of device A's counts with device B's elapsed time, and the best
//! configuration by each count on A beside the best by time on B (the paper's Table 3).
//!
//! Layers: a view over the report's rows (`data`); it computes only ranks.

use std::fmt::Write;

use super::data::{Data, Row};
use super::html::esc;
use super::pairs::ops;

/// Fewest shared configurations for a correlation (a rank correlation of two points is ±1
/// whatever the data).
const MIN_SHARED: usize = 3;

/// More tied best configurations than this are shown as a count, as the paper's Table 3
/// shows "-" when more than five configurations tie.
const MAX_TIED_SHOWN: usize = 5;

/// Spearman's rank correlation of two samples of equal length (ties get their average
/// rank); `None` for fewer than [`MIN_SHARED`] pairs or when a sample is constant (no
/// ranking to compare).
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < MIN_SHARED {
        return None;
    }
    pearson(&ranks(x), &ranks(y))
}

/// 1-based ranks of `v`, ties sharing the mean of the ranks they span.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut out = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// The configurations (run name · page size) with the smallest `value`; several when they
/// tie, a count when more than [`MAX_TIED_SHOWN`] do.
fn best(pairs: &[(&Row, &Row)], value: impl Fn(&Row, &Row) -> f64) -> String {
    let Some(min) = pairs
        .iter()
        .map(|(a, b)| value(a, b))
        .min_by(f64::total_cmp)
    else {
        return String::new();
    };
    let tied: Vec<String> = pairs
        .iter()
        .filter(|(a, b)| value(a, b) == min)
        .map(|(a, _)| a.config_page())
        .collect();
    if tied.len() > MAX_TIED_SHOWN {
        format!("{} configurations tie", tied.len())
    } else {
        tied.join("; ")
    }
}

fn rho(v: Option<f64>) -> String {
    v.map(|r| format!("{r:+.2}")).unwrap_or_else(|| "—".into())
}

/// The section's HTML; empty unless two devices ran at least [`MIN_SHARED`] of the same
/// configurations of a workload.
pub fn section(data: &Data, workloads: &[String], devices: &[String]) -> String {
    let mut corr = String::new();
    let mut table3 = String::new();
    for w in workloads {
        for a in devices {
            for b in devices.iter().filter(|b| *b != a) {
                // The same configuration on both devices: (A's row, B's row).
                let pairs: Vec<(&Row, &Row)> = data
                    .rows
                    .iter()
                    .filter(|r| &r.workload == w && &r.device == a)
                    .filter_map(|ra| {
                        data.rows
                            .iter()
                            .find(|rb| {
                                &rb.device == b
                                    && rb.workload == ra.workload
                                    && rb.config == ra.config
                                    && rb.page == ra.page
                            })
                            .map(|rb| (ra, rb))
                    })
                    .collect();
                if pairs.len() < MIN_SHARED {
                    continue;
                }
                let time_b: Vec<f64> = pairs.iter().map(|(_, rb)| rb.val("elapsed_s")).collect();
                let of = |f: &dyn Fn(&Row) -> f64| -> Vec<f64> {
                    pairs.iter().map(|(ra, _)| f(ra)).collect()
                };
                let erases = pairs.iter().any(|(ra, _)| ra.get("erases").is_some());
                let _ = write!(
                    corr,
                    "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(w),
                    esc(a),
                    esc(b),
                    pairs.len(),
                    rho(spearman(&of(&|r| ops(r, "reads")), &time_b)),
                    rho(spearman(&of(&|r| ops(r, "writes")), &time_b)),
                    if erases {
                        rho(spearman(&of(&|r| r.val("erases")), &time_b))
                    } else {
                        "—".into()
                    },
                    rho(spearman(&of(&|r| r.val("elapsed_s")), &time_b)),
                );
                let _ = write!(
                    table3,
                    "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                    esc(w),
                    esc(a),
                    esc(&best(&pairs, |ra, _| ops(ra, "reads"))),
                    esc(&best(&pairs, |ra, _| ops(ra, "writes"))),
                    if erases {
                        esc(&best(&pairs, |ra, _| ra.val("erases")))
                    } else {
                        "—".into()
                    },
                    esc(b),
                    esc(&best(&pairs, |_, rb| rb.val("elapsed_s"))),
                );
            }
        }
    }
    if corr.is_empty() {
        return String::new();
    }
    format!(
        "<section id=\"correlation\"><h2>Counts on one device vs time on another</h2>\
         <p>For the configurations (index configuration · page size) that ran on both devices: \
         Spearman's rank correlation ρ of device A's operation counts (flash page operations on \
         a flash device, else requests) with device B's elapsed time, as the flash-simulator \
         paper relates a simulator's counts to an SSD's times. ρ = +1: A's count ranks the \
         configurations exactly as B's time does; 0: no relation; −1: the reverse. — : fewer \
         than {MIN_SHARED} shared configurations, or a count that is the same for all of them.</p>\
         <div class=\"wide\"><table><tr><th>workload</th><th>counts on A</th><th>time on B</th>\
         <th>configurations</th><th>ρ(reads A, time B)</th><th>ρ(writes A, time B)</th>\
         <th>ρ(erases A, time B)</th><th>ρ(time A, time B)</th></tr>{corr}</table></div>\
         <h3>Best configurations in both environments</h3><p>The configuration with the fewest \
         reads, writes and erases on A beside the fastest on B (the paper's Table 3); ties are \
         listed, more than {MAX_TIED_SHOWN} are counted.</p><div class=\"wide\"><table><tr>\
         <th>workload</th><th>A</th><th>fewest reads</th><th>fewest writes</th>\
         <th>fewest erases</th><th>B</th><th>fastest</th></tr>{table3}</table></div></section>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_ranks_not_values() {
        // Any increasing function of x correlates perfectly, a decreasing one at -1.
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let y = [1.0, 10.0, 100.0, 1000.0, 1e9];
        assert_eq!(spearman(&x, &y), Some(1.0));
        let rev: Vec<f64> = y.iter().rev().copied().collect();
        assert_eq!(spearman(&x, &rev), Some(-1.0));
        // Ties share their average rank: y's ranks are 1, 2, 3.5, 5, 3.5, and the Pearson
        // correlation of (1..5) with those ranks is 0.82078... (computed apart).
        let r = spearman(&x, &[5.0, 6.0, 7.0, 8.0, 7.0]).unwrap();
        assert!((r - 0.820_782_681_668_123_3).abs() < 1e-12, "{r}");
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn spearman_needs_three_pairs_and_a_ranking() {
        assert_eq!(spearman(&[1.0, 2.0], &[2.0, 1.0]), None);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]), None);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[1.0, 2.0]), None);
    }
}
