//! Line charts over a numeric x axis (the dimensionality of Emrich et al.'s Fig. 5): one
//! polyline with point marks per series, solid or dashed, and vertical markers at given x
//! values (a break-even) with their labels. Shares the bar charts' width, fonts, value
//! axes and title (`svg`); the legend draws each series' line style.

use std::fmt::Write as _;

use super::svg::{
    esc, open, text_w, x_axis_close, y_axis, Axis, Quantity, FONT, PALETTE, PLOT_HEIGHT, WIDTH,
};

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend name.
    pub name: String,
    /// Index into [`PALETTE`].
    pub colour: usize,
    /// Drawn dashed (else solid).
    pub dashed: bool,
    /// `(x, y)` points, in increasing x.
    pub points: Vec<(f64, f64)>,
}

/// A vertical mark at `x` with a label.
#[derive(Debug, Clone)]
pub struct Marker {
    /// Where, on the x axis.
    pub x: f64,
    /// Index into [`PALETTE`].
    pub colour: usize,
    /// The text written beside the mark.
    pub label: String,
}

/// A line chart: times (y) against a numeric x.
pub struct Lines<'a> {
    /// Chart title.
    pub title: &'a str,
    /// What the y axis measures (the unit is added).
    pub y_label: &'a str,
    /// What the x axis shows.
    pub x_label: &'a str,
    /// The lines.
    pub lines: &'a [Line],
    /// Vertical marks.
    pub markers: &'a [Marker],
    /// A logarithmic y axis, for values spanning several decades.
    pub log: bool,
}

fn dash(dashed: bool) -> &'static str {
    if dashed {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    }
}

/// An x value as written on the axis: whole numbers without decimals.
pub(super) fn x_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        crate::numfmt::sig3(v)
    }
}

/// The legend: a short stroke in each line's colour and style, then its name, in rows
/// across the chart's width under the title; returns its SVG and where the plot may start.
pub(super) fn legend(lines: &[Line]) -> (String, f64) {
    const Y: f64 = 30.0;
    let mut svg = String::new();
    let (mut x, mut row) = (12.0, 0usize);
    for l in lines {
        let w = 26.0 + text_w(&l.name, FONT) + 14.0;
        if x + w > WIDTH - 8.0 && x > 12.0 {
            x = 12.0;
            row += 1;
        }
        let mid = Y + row as f64 * 18.0 + 6.5;
        let _ = write!(
            svg,
            r#"<line class="swatch" x1="{x:.1}" x2="{:.1}" y1="{mid:.1}" y2="{mid:.1}" stroke="{}" stroke-width="2.5"{}/><text x="{:.1}" y="{:.1}" font-size="{FONT}">{}</text>"#,
            x + 20.0,
            PALETTE[l.colour % PALETTE.len()],
            dash(l.dashed),
            x + 26.0,
            mid + 4.0,
            esc(&l.name)
        );
        x += w;
    }
    let h = if lines.is_empty() {
        0.0
    } else {
        (row + 1) as f64 * 18.0
    };
    (svg, Y + h + 10.0)
}

/// x ticks at the values `xs` under a plot whose bottom edge is at `bottom`, each label only
/// where it clears the previous one.
pub(super) fn x_ticks(svg: &mut String, xs: &[f64], x: impl Fn(f64) -> f64, bottom: f64) {
    let mut last_end = f64::NEG_INFINITY;
    for v in xs {
        let label = x_text(*v);
        let w = text_w(&label, FONT);
        let _ = write!(
            svg,
            r#"<line x1="{xx:.1}" x2="{xx:.1}" y1="{bottom:.1}" y2="{:.1}" stroke="black"/>"#,
            bottom + 4.0,
            xx = x(*v)
        );
        if x(*v) - w / 2.0 > last_end + 4.0 {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">{label}</text>"#,
                x(*v),
                bottom + FONT + 6.0
            );
            last_end = x(*v) + w / 2.0;
        }
    }
}

/// Each line as a polyline with a mark per point whose tooltip writes its y with `value`.
pub(super) fn draw_lines(
    svg: &mut String,
    lines: &[Line],
    x: impl Fn(f64) -> f64,
    y: impl Fn(f64) -> f64,
    value: impl Fn(f64) -> String,
) {
    for l in lines {
        let colour = PALETTE[l.colour % PALETTE.len()];
        let path: Vec<String> = l
            .points
            .iter()
            .map(|(px, py)| format!("{:.1},{:.1}", x(*px), y(*py)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="line" fill="none" stroke="{colour}" stroke-width="2"{} points="{}"/>"#,
            dash(l.dashed),
            path.join(" ")
        );
        for (px, py) in &l.points {
            let _ = write!(
                svg,
                r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>{}, {}: {}</title></circle>"#,
                x(*px),
                y(*py),
                esc(&l.name),
                x_text(*px),
                value(*py)
            );
        }
    }
}

impl Lines<'_> {
    /// The chart as an SVG element.
    pub fn svg(&self) -> String {
        let ys = self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
        let max = ys.clone().fold(0f64, f64::max);
        let min = ys.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let axis = if self.log && min.is_finite() {
            Axis::log_time(min, max, self.y_label)
        } else {
            Axis::new(max, Quantity::Time, self.y_label)
        };
        let mut xs: Vec<f64> = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let (x_lo, x_hi) = match (xs.first(), xs.last()) {
            (Some(a), Some(b)) if b > a => (*a, *b),
            (Some(a), _) => (*a - 1.0, *a + 1.0),
            _ => (0.0, 1.0),
        };
        let (legend_svg, top) = legend(self.lines);
        let left = 30.0 + axis.widest_tick() + 8.0;
        let right = 20.0;
        let plot_w = WIDTH - left - right;
        let bottom = top + PLOT_HEIGHT;
        let height = bottom + FONT + 8.0 + 26.0;
        let x = |v: f64| left + (v - x_lo) / (x_hi - x_lo) * plot_w;
        let y = |v: f64| bottom - axis.frac(v) * PLOT_HEIGHT;
        let mut svg = String::new();
        open(&mut svg, height, self.title);
        svg.push_str(&legend_svg);
        y_axis(&mut svg, &axis, left, right, top, bottom);
        x_ticks(&mut svg, &xs, x, bottom);
        draw_lines(&mut svg, self.lines, x, y, |v| axis.value(v));
        // Markers: a dotted vertical line; labels stacked from the plot's top, on the side
        // with more room.
        for (i, m) in self.markers.iter().enumerate() {
            let colour = PALETTE[m.colour % PALETTE.len()];
            let mx = x(m.x.clamp(x_lo, x_hi));
            let ly = top + 14.0 + i as f64 * (FONT + 4.0);
            let (tx, anchor) = if mx - left > WIDTH - right - mx {
                (mx - 4.0, "end")
            } else {
                (mx + 4.0, "start")
            };
            let _ = write!(
                svg,
                r#"<g class="marker"><line x1="{mx:.1}" x2="{mx:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="{colour}" stroke-width="1.5" stroke-dasharray="2 3"/><text x="{tx:.1}" y="{ly:.1}" font-size="{FONT}" fill="{colour}" text-anchor="{anchor}">{}</text></g>"#,
                esc(&m.label)
            );
        }
        x_axis_close(&mut svg, left, right, bottom, height, self.x_label);
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_points_and_markers_are_drawn() {
        let lines = vec![
            Line {
                name: "hdd · index".into(),
                colour: 0,
                dashed: false,
                points: vec![(2.0, 0.001), (8.0, 0.004), (16.0, 0.02)],
            },
            Line {
                name: "hdd · scan".into(),
                colour: 0,
                dashed: true,
                points: vec![(2.0, 0.005), (8.0, 0.006), (16.0, 0.008)],
            },
        ];
        let markers = vec![Marker {
            x: 10.5,
            colour: 0,
            label: "hdd: break-even 10.5 d".into(),
        }];
        let svg = Lines {
            title: "t",
            y_label: "mean latency",
            x_label: "dimensions",
            lines: &lines,
            markers: &markers,
            log: false,
        }
        .svg();
        assert_eq!(svg.matches(r#"class="line""#).count(), 2);
        assert_eq!(svg.matches(r#"class="point""#).count(), 6);
        assert_eq!(
            svg.matches(r#"stroke-dasharray="6 4""#).count(),
            2,
            "line and swatch"
        );
        assert!(svg.contains("hdd: break-even 10.5 d"));
        assert!(svg.contains("mean latency (ms)"), "{svg}");
        for t in [">2<", ">8<", ">16<"] {
            assert!(svg.contains(t), "x tick {t}");
        }
        assert!(svg.contains(r#"width="600""#));
    }
}
