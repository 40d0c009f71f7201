//! The report's small HTML and text helpers, a leaf below the page ([`super::page`]) and
//! every section it assembles: escaping, anchors, gains and the name of the clock that took
//! the times. The sections import these from here, never from the page that imports them.

use super::data::Row;

/// `s` escaped for HTML text and attribute values.
pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An anchor made of `parts`: every character but ASCII letters and digits becomes `-`,
/// parts joined by `_`.
pub(super) fn slug(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("_")
}

/// (time_B − time_A) / time_B as a percentage.
pub(super) fn gain(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:+.1} %", (b - a) / b * 100.0)
    } else {
        String::new()
    }
}

/// How the rows' times were taken: `modelled` (simulated devices), `wall` (real threads on
/// real devices), or both.
pub(super) fn clock<'a>(rows: impl Iterator<Item = &'a Row>) -> &'static str {
    let (mut sim, mut real) = (false, false);
    for r in rows {
        sim |= r.simulated;
        real |= !r.simulated;
    }
    match (sim, real) {
        (true, true) => "modelled or wall",
        (false, true) => "wall",
        _ => "modelled",
    }
}
