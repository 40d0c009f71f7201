//! Number formats shared by every human-readable output of the CLI (tables, summaries,
//! the HTML report and its chart axes), so that one quantity always looks the same:
//! times with three significant digits in the unit that suits them (`13.1 s`, `4.52 ms`,
//! `87.0 µs`), counts as integers with thousands separators (`447,053`), ratios as
//! percentages with one decimal.

/// A time unit for a set of values that share an axis or a table column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds.
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
}

impl TimeUnit {
    /// The unit that shows `largest` (seconds) with one to three digits before the point.
    pub fn for_max(largest: f64) -> TimeUnit {
        if largest >= 1.0 {
            TimeUnit::S
        } else if largest >= 1e-3 {
            TimeUnit::Ms
        } else {
            TimeUnit::Us
        }
    }

    /// Seconds per unit.
    pub fn scale(self) -> f64 {
        match self {
            TimeUnit::S => 1.0,
            TimeUnit::Ms => 1e-3,
            TimeUnit::Us => 1e-6,
        }
    }

    /// The unit's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::S => "s",
            TimeUnit::Ms => "ms",
            TimeUnit::Us => "µs",
        }
    }
}

/// `v` with three significant digits (fewer only when the integer part is longer).
pub fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v:.0}");
    }
    let digits = v.abs().log10().floor() as i32 + 1;
    let decimals = (3 - digits).clamp(0, 6) as usize;
    format!("{v:.decimals$}")
}

/// A time in seconds, in the unit that suits it: `13.1 s`, `4.52 ms`, `87.0 µs`.
pub fn secs(v: f64) -> String {
    let u = TimeUnit::for_max(v.abs());
    format!("{} {}", sig3(v / u.scale()), u.symbol())
}

/// A count with thousands separators; non-integral values (means) keep one decimal.
pub fn count(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let whole = v.round();
    if (v - whole).abs() < 1e-9 {
        group(whole as i64)
    } else {
        let tenths = (v * 10.0).round() as i64;
        format!("{}.{}", group(tenths / 10), (tenths % 10).abs())
    }
}

fn group(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// A share (0.25) as a percentage with one decimal (`25.0 %`); below 0.1 % with three
/// significant digits (`0.00420 %`), as selectivities are.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p != 0.0 && p.abs() < 0.1 {
        format!("{} %", sig3(p))
    } else {
        format!("{p:.1} %")
    }
}

/// Tick values for an axis from 0 to at least `max`: a 1-2-5 step giving about `target`
/// ticks. Returns the step and the tick values (the last one ≥ `max`).
pub fn ticks(max: f64, target: usize) -> (f64, Vec<f64>) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let raw = max / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (max / step - 1e-9).ceil().max(1.0) as usize;
    (step, (0..=n).map(|i| i as f64 * step).collect())
}

/// Decimals needed to write multiples of `step` exactly (0 for 1, 2, 5, 10, ...).
pub fn decimals_for(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

/// Labels of a count axis: one divisor for every tick (`k` from 10,000 up, `M` from
/// 1,000,000 up) and the decimals the step needs, so ticks read `0`, `0.2M`, `0.4M`.
#[derive(Debug, Clone, Copy)]
pub struct CountAxis {
    div: f64,
    suffix: &'static str,
    decimals: usize,
}

impl CountAxis {
    /// The labels of an axis from 0 to `max` in steps of `step`.
    pub fn new(step: f64, max: f64) -> CountAxis {
        let (div, suffix) = if max >= 1e6 {
            (1e6, "M")
        } else if max >= 1e4 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        CountAxis {
            div,
            suffix,
            decimals: decimals_for(step / div),
        }
    }

    /// The label of tick `v`.
    pub fn label(&self, v: f64) -> String {
        if v == 0.0 {
            return "0".into();
        }
        let d = self.decimals;
        format!("{:.d$}{}", v / self.div, self.suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_pick_their_unit() {
        assert_eq!(secs(13.1234), "13.1 s");
        assert_eq!(secs(0.869), "869 ms");
        assert_eq!(secs(0.00452), "4.52 ms");
        assert_eq!(secs(0.000087), "87.0 µs");
        assert_eq!(secs(145.2), "145 s");
        assert_eq!(secs(0.0), "0 µs");
    }

    #[test]
    fn counts_group_thousands() {
        assert_eq!(count(447053.0), "447,053");
        assert_eq!(count(12.0), "12");
        assert_eq!(count(1234.56), "1,234.6");
        assert_eq!(count(-1000.0), "-1,000");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(0.25), "25.0 %");
        assert_eq!(percent(0.0000420), "0.00420 %");
        assert_eq!(percent(0.0), "0.0 %");
    }

    #[test]
    fn ticks_cover_the_maximum_with_a_round_step() {
        let (step, t) = ticks(0.869, 5);
        assert_eq!(step, 0.2);
        assert!(*t.last().unwrap() >= 0.869 && t.len() == 6);
        let (step, t) = ticks(900_000.0, 5);
        assert_eq!(step, 200_000.0);
        assert_eq!(t.last().copied(), Some(1_000_000.0));
        let axis = CountAxis::new(step, 1_000_000.0);
        assert_eq!(axis.label(400_000.0), "0.4M");
        assert_eq!(axis.label(1_000_000.0), "1.0M");
        assert_eq!(CountAxis::new(20_000.0, 80_000.0).label(60_000.0), "60k");
        assert_eq!(CountAxis::new(50.0, 300.0).label(250.0), "250");
        assert_eq!(decimals_for(0.05), 2);
        assert_eq!(decimals_for(2.0), 0);
    }
}
