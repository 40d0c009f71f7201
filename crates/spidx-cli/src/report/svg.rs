//! The report's charts as inline SVG: grouped vertical bars (the seeds' figures: one group
//! per page size, one bar per configuration, optionally with min–max whiskers and a median
//! mark) and horizontal stacked bars (a run's time split into parts). Every chart has the
//! same width; the layout is computed here (text widths estimated generously), so labels
//! rotate when they would not fit side by side, legends sit outside the plot, and no slot
//! is left empty. A browser test (`tests/report_browser.rs`) checks the result in
//! Chromium: no overlapping or clipped text, no chart without bars.
//!
//! Hand-written rather than drawn with a plotting crate because the layout (legend outside
//! the plot, rotation decided from the labels, stacked bars with whiskers) is the product.

use std::fmt::Write as _;

use crate::numfmt::{decimals_for, sig3, ticks, CountAxis, TimeUnit};

/// Width of every chart, in pixels.
pub const WIDTH: f64 = 600.0;

/// Okabe & Ito's colour-blind-safe palette (yellow last: weak on white).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#000000", "#F0E442",
];

pub(super) const FONT: f64 = 12.0;
const TITLE_FONT: f64 = 14.0;
/// Estimated advance of one character, as a share of the font size (generous, so that the
/// estimate is wider than what DejaVu or Liberation Sans draw).
const CHAR_EM: f64 = 0.64;
pub(super) const PLOT_HEIGHT: f64 = 240.0;
const ROTATION_DEG: f64 = 40.0;

/// What an axis measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// Seconds (shown in s, ms or µs).
    Time,
    /// Operations, nodes, objects.
    Count,
}

/// Estimated width in pixels of `s` at `size`.
pub(super) fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * CHAR_EM
}

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A value axis from 0: ticks, their labels and the axis title with its unit.
pub(super) struct Axis {
    /// Raw value at the axis end.
    end: f64,
    /// Tick values and labels.
    pub(super) ticks: Vec<(f64, String)>,
    /// The axis title with its unit.
    pub(super) title: String,
    /// Formats a raw value the way the ticks do (with the unit for times).
    unit: Option<TimeUnit>,
    /// A logarithmic axis from the first to the second value (times only).
    log: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis from 0 to a round value at or above `max`.
    pub(super) fn new(max: f64, quantity: Quantity, what: &str) -> Axis {
        match quantity {
            Quantity::Time => {
                let unit = TimeUnit::for_max(max);
                let (step, t) = ticks(max / unit.scale(), 5);
                let d = decimals_for(step);
                Axis {
                    end: t.last().copied().unwrap_or(1.0) * unit.scale(),
                    ticks: t
                        .iter()
                        .map(|v| (v * unit.scale(), format!("{v:.d$}")))
                        .collect(),
                    title: format!("{what} ({})", unit.symbol()),
                    unit: Some(unit),
                    log: None,
                }
            }
            Quantity::Count => {
                let (step, t) = ticks(max, 5);
                let labels = CountAxis::new(step, *t.last().unwrap_or(&1.0));
                Axis {
                    end: t.last().copied().unwrap_or(1.0),
                    ticks: t.iter().map(|v| (*v, labels.label(*v))).collect(),
                    title: what.to_string(),
                    unit: None,
                    log: None,
                }
            }
        }
    }

    /// A logarithmic time axis covering `min`..`max` (both > 0), from the 1-2-5 value at or
    /// below `min` to the one at or above `max`. Ticks at every 1-2-5 value in that range
    /// (`200 µs`, `500 µs`, `1 ms`, `2 ms`, ...) when there are at most eight of them, so an
    /// axis within one decade still has at least three labels; over a wider range one tick
    /// per decade. Each label has its own unit.
    pub(super) fn log_time(min: f64, max: f64, what: &str) -> Axis {
        let steps = |v: f64| {
            let d = 10f64.powf(v.log10().floor());
            [d, 2.0 * d, 5.0 * d, 10.0 * d]
        };
        // Tolerate rounding: 0.001 must stay 1 ms, not fall to the step below.
        let lo = steps(min)
            .into_iter()
            .rev()
            .find(|s| *s <= min * (1.0 + 1e-9))
            .unwrap_or(min);
        let next = |v: f64| {
            steps(v * 1.000_001)
                .into_iter()
                .find(|s| *s > v * 1.000_001)
                .unwrap_or(v * 2.0)
        };
        let mut hi = steps(max)
            .into_iter()
            .find(|s| *s >= max * (1.0 - 1e-9))
            .unwrap_or(max);
        if hi <= lo * (1.0 + 1e-9) {
            hi = next(lo);
        }
        // The 1-2-5 values within lo..=hi.
        let values = |lo: f64, hi: f64| {
            let mut all = Vec::new();
            let mut d = 10f64.powf(lo.log10().floor());
            while d <= hi * 1.000_001 {
                for m in [1.0, 2.0, 5.0] {
                    let v = m * d;
                    if v >= lo * 0.999_999 && v <= hi * 1.000_001 {
                        all.push(v);
                    }
                }
                d *= 10.0;
            }
            all
        };
        let mut all = values(lo, hi);
        // Fewer than three labels cannot show a scale: widen the axis upwards.
        while all.len() < 3 {
            hi = next(hi);
            all = values(lo, hi);
        }
        let label = |v: f64| {
            let u = TimeUnit::for_max(v * 1.000_001);
            (v, format!("{:.0} {}", v / u.scale(), u.symbol()))
        };
        let decades: Vec<f64> = all
            .iter()
            .copied()
            .filter(|v| (v.log10() - v.log10().round()).abs() < 1e-9)
            .collect();
        let ticks = if all.len() <= 8 || decades.len() < 3 {
            all
        } else {
            decades
        };
        Axis {
            end: hi,
            ticks: ticks.into_iter().map(label).collect(),
            title: format!("{what} (log scale)"),
            unit: None,
            log: Some((lo, hi)),
        }
    }

    /// Where `v` lies on the axis, from 0 (origin) to 1 (end).
    pub(super) fn frac(&self, v: f64) -> f64 {
        match self.log {
            Some((lo, hi)) => ((v.max(lo) / lo).log10() / (hi / lo).log10()).clamp(0.0, 1.0),
            None => v / self.end,
        }
    }

    /// `v` formatted the way the ticks are (with its unit).
    pub(super) fn value(&self, v: f64) -> String {
        if self.log.is_some() {
            return crate::numfmt::secs(v);
        }
        match self.unit {
            Some(u) => format!("{} {}", sig3(v / u.scale()), u.symbol()),
            None => crate::numfmt::count(v),
        }
    }

    /// Estimated width of the widest tick label.
    pub(super) fn widest_tick(&self) -> f64 {
        self.ticks
            .iter()
            .map(|(_, l)| text_w(l, FONT))
            .fold(0.0, f64::max)
    }
}

/// A legend of `names` in the palette's colours, laid out in rows across the chart's width
/// under the title; returns its SVG and where the plot may start below it.
fn legend(names: &[String]) -> (String, f64) {
    const Y: f64 = 30.0;
    let mut svg = String::new();
    let (mut x, mut row) = (12.0, 0usize);
    for (i, name) in names.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let w = 16.0 + text_w(name, FONT) + 14.0;
        if x + w > WIDTH - 8.0 && x > 12.0 {
            x = 12.0;
            row += 1;
        }
        let top = Y + row as f64 * 18.0;
        let _ = write!(
            svg,
            r#"<rect class="swatch" x="{x:.1}" y="{:.1}" width="11" height="11" fill="{colour}"/><text x="{:.1}" y="{:.1}" font-size="{FONT}">{}</text>"#,
            top + 1.0,
            x + 16.0,
            top + 10.5,
            esc(name)
        );
        x += w;
    }
    let h = if names.is_empty() {
        0.0
    } else {
        (row + 1) as f64 * 18.0
    };
    (svg, Y + h + 10.0)
}

/// Opens a chart's `<svg>` of [`WIDTH`] × `height` with a white background and `title`.
pub(super) fn open(svg: &mut String, height: f64, title: &str) {
    let _ = write!(
        svg,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" data-title="{t}"><title>{t}</title><rect width="100%" height="100%" fill="white"/><text x="{:.1}" y="18" font-size="{TITLE_FONT}" font-weight="bold" text-anchor="middle">{t}</text>"#,
        WIDTH / 2.0,
        t = esc(title)
    );
}

/// A vertical value axis of a chart whose plot spans `left`..`WIDTH - right` and
/// `top`..`bottom` (`bottom - top` = [`PLOT_HEIGHT`]): a grid line and label per tick, and
/// the axis title turned along the left edge.
pub(super) fn y_axis(svg: &mut String, axis: &Axis, left: f64, right: f64, top: f64, bottom: f64) {
    let y = |v: f64| bottom - axis.frac(v) * PLOT_HEIGHT;
    for (v, label) in &axis.ticks {
        let _ = write!(
            svg,
            r##"<line x1="{left:.1}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="end">{label}</text>"##,
            WIDTH - right,
            left - 6.0,
            y(*v) + 4.0,
            yy = y(*v)
        );
    }
    let _ = write!(
        svg,
        r#"<text transform="translate(14 {:.1}) rotate(-90)" font-size="{FONT}" text-anchor="middle">{}</text>"#,
        (top + bottom) / 2.0,
        esc(&axis.title)
    );
}

/// The horizontal axis line under the plot, the x axis title centred under it, and the
/// end of the chart's `<svg>`.
pub(super) fn x_axis_close(
    svg: &mut String,
    left: f64,
    right: f64,
    bottom: f64,
    height: f64,
    x_label: &str,
) {
    let _ = write!(
        svg,
        r#"<line x1="{left:.1}" x2="{:.1}" y1="{bottom:.1}" y2="{bottom:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">{}</text></svg>"#,
        WIDTH - right,
        (left + WIDTH - right) / 2.0,
        height - 8.0,
        esc(x_label)
    );
}

/// The min / median / max of per-query means drawn over a bar of their mean.
#[derive(Debug, Clone, Copy)]
pub struct Whisker {
    /// Smallest value.
    pub min: f64,
    /// Median value.
    pub median: f64,
    /// Largest value.
    pub max: f64,
}

/// Grouped vertical bars: `groups` along the x axis (page sizes), one bar per `series`
/// entry in each group (configurations); `values[g][s]`, `None` where a combination was not
/// run. Series whose values are all zero or missing must be left out by the caller.
pub struct Grouped<'a> {
    /// Chart title.
    pub title: &'a str,
    /// What the y axis measures (the unit is added).
    pub y_label: &'a str,
    /// What the x axis shows.
    pub x_label: &'a str,
    /// Time or count.
    pub quantity: Quantity,
    /// Group labels.
    pub groups: &'a [String],
    /// Series names (the legend).
    pub series: &'a [String],
    /// Bar heights, `[group][series]`.
    pub values: &'a [Vec<Option<f64>>],
    /// Optional whiskers, `[group][series]`.
    pub whiskers: Option<&'a [Vec<Option<Whisker>>]>,
    /// A logarithmic y axis (times only), for values spanning several decades.
    pub log: bool,
}

impl Grouped<'_> {
    /// The chart as an SVG element.
    pub fn svg(&self) -> String {
        let mut max = 0f64;
        for (g, row) in self.values.iter().enumerate() {
            for (s, v) in row.iter().enumerate() {
                max = max.max(v.unwrap_or(0.0));
                if let Some(w) = self.whiskers.and_then(|w| w[g][s]) {
                    max = max.max(w.max);
                }
            }
        }
        let min = self
            .values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .chain(
                self.whiskers
                    .into_iter()
                    .flatten()
                    .flatten()
                    .flatten()
                    .map(|w| w.min),
            )
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let axis = if self.log && self.quantity == Quantity::Time && min.is_finite() {
            Axis::log_time(min, max, self.y_label)
        } else {
            Axis::new(max, self.quantity, self.y_label)
        };
        let (legend_svg, top) = legend(self.series);
        let n = self.groups.len().max(1) as f64;
        let widest = self
            .groups
            .iter()
            .map(|g| text_w(g, FONT))
            .fold(0.0, f64::max);
        let mut left = 30.0 + axis.widest_tick() + 8.0;
        let right = 16.0;
        let mut gw = (WIDTH - left - right) / n;
        let rotate = widest > gw - 8.0;
        let (sin, cos) = ROTATION_DEG.to_radians().sin_cos();
        if rotate {
            // The first label extends left of its group's centre.
            let first = self.groups.first().map_or(0.0, |g| text_w(g, FONT));
            left = left.max(first * cos - gw / 2.0 + 8.0);
            gw = (WIDTH - left - right) / n;
        }
        let label_h = if rotate {
            widest * sin + FONT * cos + 8.0
        } else {
            FONT + 8.0
        };
        let bottom = top + PLOT_HEIGHT;
        let height = bottom + label_h + 26.0;
        let y = |v: f64| bottom - axis.frac(v) * PLOT_HEIGHT;
        let mut svg = String::new();
        open(&mut svg, height, self.title);
        svg.push_str(&legend_svg);
        y_axis(&mut svg, &axis, left, right, top, bottom);
        // Bars, whiskers, group labels.
        let k = self.series.len().max(1) as f64;
        let bw = gw * 0.8 / k;
        for (g, name) in self.groups.iter().enumerate() {
            let x0 = left + g as f64 * gw + gw * 0.1;
            for (s, v) in self.values[g].iter().enumerate() {
                let Some(v) = v else { continue };
                let x = x0 + s as f64 * bw;
                if axis.log.is_some() {
                    // On a log axis a bar's height would depend on where the axis happens
                    // to start: a dot marks the value instead.
                    let _ = write!(
                        svg,
                        r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="{:.1}" fill="{}" stroke="black" stroke-width="0.5"><title>{}, {}: {}</title></circle>"#,
                        x + bw / 2.0,
                        y(*v),
                        (bw * 0.3).clamp(2.5, 5.0),
                        PALETTE[s % PALETTE.len()],
                        esc(&self.series[s]),
                        esc(name),
                        axis.value(*v)
                    );
                } else {
                    let _ = write!(
                        svg,
                        r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}, {}: {}</title></rect>"#,
                        x + 0.5,
                        y(*v),
                        (bw - 1.0).max(1.0),
                        (bottom - y(*v)).max(0.0),
                        PALETTE[s % PALETTE.len()],
                        esc(&self.series[s]),
                        esc(name),
                        axis.value(*v)
                    );
                }
                if let Some(w) = self.whiskers.and_then(|w| w[g][s]) {
                    let cx = x + bw / 2.0;
                    let cap = (bw * 0.25).max(2.0);
                    let _ = write!(
                        svg,
                        r#"<g class="whisker" stroke="black"><title>{}, {}: min {}, median {}, max {}</title><line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/><line stroke-width="2.5" x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/></g>"#,
                        esc(&self.series[s]),
                        esc(name),
                        axis.value(w.min),
                        axis.value(w.median),
                        axis.value(w.max),
                        y(w.min),
                        y(w.max),
                        cx - cap,
                        cx + cap,
                        y(w.min),
                        y(w.min),
                        cx - cap,
                        cx + cap,
                        y(w.max),
                        y(w.max),
                        cx - bw * 0.4,
                        cx + bw * 0.4,
                        y(w.median),
                        y(w.median),
                    );
                }
            }
            let cx = left + (g as f64 + 0.5) * gw;
            if rotate {
                let _ = write!(
                    svg,
                    r#"<text transform="translate({:.1} {:.1}) rotate(-{ROTATION_DEG})" font-size="{FONT}" text-anchor="end">{}</text>"#,
                    cx + 4.0,
                    bottom + 12.0,
                    esc(name)
                );
            } else {
                let _ = write!(
                    svg,
                    r#"<text x="{cx:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">{}</text>"#,
                    bottom + FONT + 4.0,
                    esc(name)
                );
            }
        }
        x_axis_close(&mut svg, left, right, bottom, height, self.x_label);
        svg
    }
}

/// Horizontal stacked bars: one row per `rows` entry (a configuration and page size), its
/// bar split into `parts` (e.g. filter and refinement); `values[row][part]`. Parts that are
/// zero in every row must be left out by the caller. Each bar's total is written after it.
pub struct Stacked<'a> {
    /// Chart title.
    pub title: &'a str,
    /// What the x axis measures (the unit is added).
    pub x_label: &'a str,
    /// Time or count.
    pub quantity: Quantity,
    /// Row labels.
    pub rows: &'a [String],
    /// Part names (the legend).
    pub parts: &'a [String],
    /// Segment lengths, `[row][part]`.
    pub values: &'a [Vec<f64>],
}

impl Stacked<'_> {
    /// The chart as an SVG element.
    pub fn svg(&self) -> String {
        const ROW: f64 = 22.0;
        const LINE: f64 = 14.0;
        let totals: Vec<f64> = self.values.iter().map(|r| r.iter().sum()).collect();
        let max = totals.iter().copied().fold(0.0, f64::max);
        let axis = Axis::new(max, self.quantity, self.x_label);
        let (legend_svg, top) = legend(self.parts);
        // Labels take at most this share of the width; longer ones wrap at their parts.
        let lines: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| wrap_label(r, WIDTH * MAX_LABEL_SHARE))
            .collect();
        let label_w = lines
            .iter()
            .flatten()
            .map(|l| text_w(l, FONT))
            .fold(0.0, f64::max);
        let left = 12.0 + label_w + 8.0;
        let total_w = totals
            .iter()
            .map(|t| text_w(&axis.value(*t), FONT))
            .fold(0.0, f64::max);
        // Room for the totals after the longest bar and for the last tick label.
        let right = (total_w + 14.0).max(axis.widest_tick() / 2.0 + 8.0);
        let plot_w = WIDTH - left - right;
        let row_h: Vec<f64> = lines
            .iter()
            .map(|l| ROW + (l.len().max(1) - 1) as f64 * LINE)
            .collect();
        let bottom = top + row_h.iter().sum::<f64>();
        let height = bottom + FONT + 8.0 + 26.0;
        let x = |v: f64| left + axis.frac(v) * plot_w;
        let mut svg = String::new();
        open(&mut svg, height, self.title);
        svg.push_str(&legend_svg);
        for (v, label) in &axis.ticks {
            let _ = write!(
                svg,
                r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="#ddd"/><text x="{xx:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">{label}</text>"##,
                bottom + FONT + 4.0,
                xx = x(*v)
            );
        }
        let mut row_top = top;
        for (r, name) in self.rows.iter().enumerate() {
            let y0 = row_top + (row_h[r] - 16.0) / 2.0;
            let first_line =
                row_top + (row_h[r] - (lines[r].len() as f64 - 1.0) * LINE) / 2.0 + 4.0;
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{first_line:.1}" font-size="{FONT}" text-anchor="end"><title>{}</title>"#,
                left - 6.0,
                esc(name)
            );
            for (i, l) in lines[r].iter().enumerate() {
                let _ = write!(
                    svg,
                    r#"<tspan x="{:.1}" dy="{}">{}</tspan>"#,
                    left - 6.0,
                    if i == 0 { 0.0 } else { LINE },
                    esc(l)
                );
            }
            svg.push_str("</text>");
            let mut at = 0.0;
            for (p, v) in self.values[r].iter().enumerate() {
                if *v > 0.0 {
                    let _ = write!(
                        svg,
                        r#"<rect class="bar" x="{:.1}" y="{y0:.1}" width="{:.1}" height="16" fill="{}"><title>{}, {}: {}</title></rect>"#,
                        x(at),
                        x(at + v) - x(at),
                        PALETTE[p % PALETTE.len()],
                        esc(name),
                        esc(&self.parts[p]),
                        axis.value(*v)
                    );
                }
                at += v;
            }
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="{FONT}">{}</text>"#,
                x(at) + 5.0,
                y0 + 12.0,
                axis.value(at)
            );
            row_top += row_h[r];
        }
        let _ = write!(
            svg,
            r#"<line x1="{left:.1}" x2="{left:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">{}</text></svg>"#,
            left + plot_w / 2.0,
            height - 8.0,
            esc(&axis.title)
        );
        svg
    }
}

/// The widest a stacked chart's row labels may be, as a share of [`WIDTH`].
const MAX_LABEL_SHARE: f64 = 0.42;

/// Splits `label` into lines no wider than `max_w` at its ` · ` separators; a part wider
/// than `max_w` on its own is cut with an ellipsis (the chart keeps the whole label in a
/// tooltip).
fn wrap_label(label: &str, max_w: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for part in label.split(" · ") {
        let part = if text_w(part, FONT) > max_w {
            let keep = ((max_w / (FONT * CHAR_EM)) as usize)
                .saturating_sub(1)
                .max(1);
            format!("{}…", part.chars().take(keep).collect::<String>())
        } else {
            part.to_string()
        };
        match lines.last_mut() {
            Some(last) if text_w(&format!("{last} · {part}"), FONT) <= max_w => {
                last.push_str(" · ");
                last.push_str(&part);
            }
            _ => lines.push(part),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn grouped_chart_has_one_bar_per_value_and_the_width() {
        let groups = names(&["2KB", "4KB"]);
        let series = names(&["R-tree", "R*-tree"]);
        let values = vec![vec![Some(0.5), Some(0.25)], vec![Some(0.125), None]];
        let svg = Grouped {
            title: "t",
            y_label: "elapsed",
            x_label: "page size",
            quantity: Quantity::Time,
            groups: &groups,
            series: &series,
            values: &values,
            whiskers: None,
            log: false,
        }
        .svg();
        assert_eq!(svg.matches(r#"class="bar""#).count(), 3);
        assert!(svg.contains(r#"width="600""#));
        assert!(svg.contains("elapsed (ms)"), "{svg}");
        assert!(!svg.contains("rotate(-40)"), "short labels stay horizontal");
    }

    #[test]
    fn long_group_labels_rotate() {
        let groups: Vec<String> = (0..12)
            .map(|i| format!("R*-tree 30% · {i}KB · ssd"))
            .collect();
        let series = names(&["reads"]);
        let values: Vec<Vec<Option<f64>>> = (0..12).map(|i| vec![Some(i as f64)]).collect();
        let svg = Grouped {
            title: "t",
            y_label: "reads",
            x_label: "run",
            quantity: Quantity::Count,
            groups: &groups,
            series: &series,
            values: &values,
            whiskers: None,
            log: false,
        }
        .svg();
        assert_eq!(svg.matches("rotate(-40)").count(), 12);
    }

    #[test]
    fn a_log_axis_has_one_tick_per_decade_over_many() {
        let axis = Axis::log_time(0.000_3, 4.7, "per query");
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1 ms", "10 ms", "100 ms", "1 s"]);
        // From 200 µs to 5 s.
        assert!((axis.frac(0.000_2)).abs() < 1e-9);
        assert!((axis.frac(5.0) - 1.0).abs() < 1e-9);
        assert_eq!(axis.frac(1e-9), 0.0);
    }

    #[test]
    fn a_log_axis_within_one_decade_has_at_least_three_labels() {
        // 1.5 and 1.9 ms: 1-2 ms would have two labels, so the axis goes on to 5 ms.
        let axis = Axis::log_time(0.001_5, 0.001_9, "per query");
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1 ms", "2 ms", "5 ms"]);
        let axis = Axis::log_time(0.001_2, 0.004, "per query");
        let labels: Vec<&str> = axis.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1 ms", "2 ms", "5 ms"]);
        for (min, max) in [(0.001_5, 0.001_9), (3e-5, 4e-5), (0.9, 1.1), (1e-4, 1e-4)] {
            let a = Axis::log_time(min, max, "q");
            assert!(a.ticks.len() >= 3, "{min}..{max}: {:?}", a.ticks);
            assert!(a.frac(min) >= 0.0 && a.frac(max) <= 1.0);
        }
    }

    #[test]
    fn a_log_chart_draws_dots_not_bars() {
        let values = vec![vec![Some(0.001_9), Some(0.001_5)]];
        let svg = Grouped {
            title: "t",
            y_label: "per query",
            x_label: "x",
            quantity: Quantity::Time,
            groups: &names(&["a"]),
            series: &names(&["s1", "s2"]),
            values: &values,
            whiskers: None,
            log: true,
        }
        .svg();
        assert_eq!(svg.matches("class=\"point\"").count(), 2);
        assert_eq!(svg.matches("class=\"bar\"").count(), 0);
    }

    #[test]
    fn stacked_chart_skips_zero_segments_and_writes_totals() {
        let rows = names(&["a", "b"]);
        let parts = names(&["filter", "refinement"]);
        let values = vec![vec![1.0, 2.0], vec![0.0, 4.0]];
        let svg = Stacked {
            title: "t",
            x_label: "time",
            quantity: Quantity::Time,
            rows: &rows,
            parts: &parts,
            values: &values,
        }
        .svg();
        assert_eq!(svg.matches(r#"class="bar""#).count(), 3);
        assert!(
            svg.contains(">3.00 s<") && svg.contains(">4.00 s<"),
            "{svg}"
        );
    }

    #[test]
    fn long_row_labels_wrap_at_their_parts_and_leave_the_plot_its_room() {
        let label =
            "Quadratic R-tree · buffer lru:512KB:write-back · order clustered:4096:42 · 16KB";
        let lines = wrap_label(label, WIDTH * MAX_LABEL_SHARE);
        assert!(lines.len() > 1, "{lines:?}");
        assert!(lines
            .iter()
            .all(|l| text_w(l, FONT) <= WIDTH * MAX_LABEL_SHARE));
        assert_eq!(lines.join(" · "), label);
        let cut = wrap_label(&"x".repeat(200), 100.0);
        assert_eq!(cut.len(), 1);
        assert!(cut[0].ends_with('…') && text_w(&cut[0], FONT) <= 100.0);
        let rows = vec![label.to_string(), "short".to_string()];
        let svg = Stacked {
            title: "t",
            x_label: "time",
            quantity: Quantity::Time,
            rows: &rows,
            parts: &["CPU".to_string()],
            values: &[vec![1.0], vec![2.0]],
        }
        .svg();
        assert!(svg.contains("<tspan"), "{svg}");
        assert!(svg.contains(&format!("<title>{}</title>", esc(label))));
    }
}
