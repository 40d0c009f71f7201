//! A finding's sensitivity chart: the value a finding decides on (a relative change in %, or
//! a ratio) against one device parameter, one line per pair of runs, the paper's range as a
//! shaded band and the preset's value as a dotted vertical mark — how far the parameter must
//! move for the verdict to change. Drawn by `spidx reproduce --sweep`; shares the report's
//! width, fonts, palette and legend (`svg`, `lines`), with a signed value axis of its own.

use std::fmt::Write as _;

pub(crate) use super::lines::Line;
use super::lines::{draw_lines, legend, x_text, x_ticks};
use super::svg::{esc, open, text_w, x_axis_close, FONT, PLOT_HEIGHT, WIDTH};

/// A sensitivity chart.
pub struct Bands<'a> {
    /// Chart title.
    pub title: &'a str,
    /// What the y axis shows, with its unit.
    pub y_label: &'a str,
    /// What the x axis shows (the parameter).
    pub x_label: &'a str,
    /// One line per pair of runs, `(parameter value, y)`.
    pub lines: &'a [Line],
    /// The paper's range on the y axis, shaded.
    pub band: Option<[f64; 2]>,
    /// The preset's parameter value, marked.
    pub preset: Option<f64>,
    /// How y values are written on the axis and in tooltips.
    pub fmt: fn(f64) -> String,
}

/// A round step (1, 2 or 5 times a power of ten) of at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

/// Tick values covering `lo..=hi` with about six round steps.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let step = nice_step((hi - lo) / 6.0);
    let first = (lo / step).floor() as i64;
    let last = (hi / step).ceil() as i64;
    // Rounded so that 4 × 0.2 is 0.8, not 0.8000000000000002.
    (first..=last)
        .map(|i| (i as f64 * step * 1e9).round() / 1e9)
        .collect()
}

impl Bands<'_> {
    /// The chart as an SVG element.
    pub fn svg(&self) -> String {
        let mut ys: Vec<f64> = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite())
            .collect();
        if let Some([a, b]) = self.band {
            ys.extend([a, b].into_iter().filter(|v| v.is_finite()));
        }
        let lo = ys.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
        let hi = ys
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
            .max(0.0);
        let ticks = ticks(lo, hi);
        let (y_lo, y_hi) = (ticks[0], ticks[ticks.len() - 1]);
        let labels: Vec<String> = ticks.iter().map(|v| (self.fmt)(*v)).collect();
        let widest = labels.iter().map(|l| text_w(l, FONT)).fold(0.0, f64::max);
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
        let left = 30.0 + widest + 8.0;
        let right = 20.0;
        let plot_w = WIDTH - left - right;
        let bottom = top + PLOT_HEIGHT;
        let height = bottom + FONT + 8.0 + 26.0;
        let x = |v: f64| left + (v - x_lo) / (x_hi - x_lo) * plot_w;
        let y = |v: f64| bottom - (v.clamp(y_lo, y_hi) - y_lo) / (y_hi - y_lo) * PLOT_HEIGHT;
        let mut svg = String::new();
        open(&mut svg, height, self.title);
        svg.push_str(&legend_svg);
        if let Some([a, b]) = self.band {
            let (ya, yb) = (y(b), y(a));
            let _ = write!(
                svg,
                r##"<rect class="band" x="{left:.1}" y="{ya:.1}" width="{plot_w:.1}" height="{:.1}" fill="#009E73" fill-opacity="0.15"><title>the paper's range: {} … {}</title></rect>"##,
                (yb - ya).max(1.0),
                esc(&(self.fmt)(a)),
                esc(&(self.fmt)(b))
            );
        }
        for (v, label) in ticks.iter().zip(&labels) {
            let stroke = if *v == 0.0 { "#888" } else { "#ddd" };
            let _ = write!(
                svg,
                r#"<line x1="{left:.1}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="{stroke}"/><text x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="end">{}</text>"#,
                WIDTH - right,
                left - 6.0,
                y(*v) + 4.0,
                esc(label),
                yy = y(*v)
            );
        }
        let _ = write!(
            svg,
            r#"<text transform="translate(14 {:.1}) rotate(-90)" font-size="{FONT}" text-anchor="middle">{}</text>"#,
            (top + bottom) / 2.0,
            esc(self.y_label)
        );
        x_ticks(&mut svg, &xs, x, bottom);
        if let Some(p) = self.preset {
            let px = x(p.clamp(x_lo, x_hi));
            let (tx, anchor) = if px - left > WIDTH - right - px {
                (px - 4.0, "end")
            } else {
                (px + 4.0, "start")
            };
            let _ = write!(
                svg,
                r#"<g class="marker"><line x1="{px:.1}" x2="{px:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="black" stroke-width="1.5" stroke-dasharray="2 3"/><text x="{tx:.1}" y="{:.1}" font-size="{FONT}" text-anchor="{anchor}">preset {}</text></g>"#,
                top + 14.0,
                x_text(p)
            );
        }
        draw_lines(&mut svg, self.lines, x, y, |v| esc(&(self.fmt)(v)));
        x_axis_close(&mut svg, left, right, bottom, height, self.x_label);
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(v: f64) -> String {
        format!("{:+.0} %", v * 100.0)
    }

    #[test]
    fn lines_band_zero_and_preset_are_drawn_on_a_signed_axis() {
        let lines = vec![Line {
            name: "Linear R-tree · 4KB".into(),
            colour: 0,
            dashed: false,
            points: vec![(66.0, 0.45), (100.0, 0.09), (374.0, -0.64)],
        }];
        let svg = Bands {
            title: "jidm-2",
            y_label: "change (%)",
            x_label: "hit_overhead_us",
            lines: &lines,
            band: Some([-0.16, -0.04]),
            preset: Some(100.0),
            fmt: pct,
        }
        .svg();
        assert_eq!(svg.matches(r#"class="line""#).count(), 1);
        assert_eq!(svg.matches(r#"class="point""#).count(), 3);
        assert_eq!(svg.matches(r#"class="band""#).count(), 1);
        assert!(svg.contains("preset 100"), "{svg}");
        assert!(svg.contains(">-60 %<") || svg.contains(">-80 %<"), "{svg}");
        assert!(svg.contains(">+40 %<") || svg.contains(">+60 %<"), "{svg}");
        assert!(svg.contains(r##"stroke="#888""##), "a zero line: {svg}");
        for t in [">66<", ">100<", ">374<"] {
            assert!(svg.contains(t), "x tick {t}");
        }
        assert!(svg.contains("the paper&#x27;s range") || svg.contains("the paper's range"));
    }

    #[test]
    fn ticks_cover_the_values_with_round_steps() {
        assert_eq!(
            ticks(-0.64, 0.45),
            vec![-0.8, -0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6]
        );
        let t = ticks(0.0, 7.0);
        assert_eq!((t[0], *t.last().unwrap()), (0.0, 8.0));
        assert_eq!(nice_step(0.3), 0.5);
    }
}
