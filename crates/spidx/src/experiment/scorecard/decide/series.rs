//! The tests of a finding that read a series along a numeric attribute (page size, k,
//! dimensions, window size): where two curves cross and how that crossing shifts, a trend,
//! the spread of a side, and where pairs most often move the paper's way. A child of
//! `decide`, whose shared helpers it uses.

use std::collections::BTreeMap;

use super::super::{Decision, Direction, Observation, Selector, Verdict};
use super::*;

/// Where `a` stops being cheaper than `b`, interpolated: the paired points of one group
/// sorted by `x`, the first point where `a > b` and the point before it; the zero of the
/// straight line through their differences. `Err` with the largest `x` when `a` never
/// costs more; `Ok((x, exact))`, `exact` false when `a` already costs more at the first
/// point (the break-even is at or below it).
fn break_even(mut pts: Vec<(f64, f64, f64)>) -> Result<(f64, bool), f64> {
    pts.sort_by(|p, q| p.0.total_cmp(&q.0));
    let Some(i) = pts.iter().position(|p| p.1 > p.2) else {
        return Err(pts.last().map_or(0.0, |p| p.0));
    };
    if i == 0 {
        return Ok((pts[0].0, false));
    }
    let (x0, d0) = (pts[i - 1].0, pts[i - 1].1 - pts[i - 1].2);
    let (x1, d1) = (pts[i].0, pts[i].1 - pts[i].2);
    // d0 <= 0 < d1: the line crosses zero in (x0, x1].
    Ok((x0 + (x1 - x0) * (-d0) / (d1 - d0), true))
}

fn fmt_break_even(x: f64, exact: bool) -> String {
    if exact {
        format!("{x:.1}")
    } else {
        format!("≤ {x}")
    }
}

/// The paired points `(x, a, b)` of `a` and `b` along `along`, per group of `within`.
fn crossover_points(
    obs: &[&Observation],
    metric: &str,
    a: &Selector,
    b: &Selector,
    pair_by: &[String],
    along: &str,
    within: &[String],
) -> BTreeMap<Vec<String>, Vec<(f64, f64, f64)>> {
    let mut key_by: Vec<String> = pair_by.to_vec();
    key_by.push(along_attr(along).to_string());
    let mut groups: BTreeMap<Vec<String>, Vec<(f64, f64, f64)>> = BTreeMap::new();
    for (o, va, vb) in pairs(obs, a, b, &key_by, metric) {
        if let Some(x) = along_value(o, along) {
            groups.entry(o.key(within)).or_default().push((x, va, vb));
        }
    }
    groups
}

#[allow(clippy::too_many_arguments)]
pub(super) fn crossover(
    obs: &[&Observation],
    metric: &str,
    a: &Selector,
    b: &Selector,
    pair_by: &[String],
    along: &str,
    within: &[String],
    range: Option<&[f64; 2]>,
) -> Decision {
    let groups = crossover_points(obs, metric, a, b, pair_by, along, within);
    if groups.is_empty() {
        return not_measured("no paired runs");
    }
    let mut found = Vec::new();
    let mut missing = Vec::new();
    let mut outside = Vec::new();
    for (key, pts) in groups {
        let name = key.join(" · ");
        match break_even(pts) {
            Ok((x, exact)) => {
                if range.is_some_and(|r| !in_range(x, r)) {
                    outside.push(name.clone());
                }
                found.push(format!("{name}: {}", fmt_break_even(x, exact)));
            }
            Err(last) => missing.push(format!("{name}: none up to {last}")),
        }
    }
    let measured = found
        .iter()
        .chain(missing.iter())
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    let how = "interpolated linearly between the two grid points around it";
    if !missing.is_empty() {
        Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: format!("{} group(s) without a break-even", missing.len()),
        }
    } else if !outside.is_empty() {
        let [lo, hi] = range.expect("outside a range");
        Decision {
            verdict: Verdict::DirectionOnly,
            measured,
            reason: format!(
                "break-even ({how}) outside the paper's {lo} … {hi} in {}",
                outside.join(", ")
            ),
        }
    } else {
        Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: match range {
                Some([lo, hi]) => {
                    format!("a break-even in every group ({how}), in the paper's {lo} … {hi}")
                }
                None => {
                    format!("a break-even in every group ({how}); the paper gives no magnitude")
                }
            },
        }
    }
}

pub(super) fn crossover_shift(
    obs: &[&Observation],
    metric: &str,
    (a, b): (&Selector, &Selector),
    pair_by: &[String],
    along: &str,
    (earlier, later): (&Selector, &Selector),
    range: Option<&[f64; 2]>,
) -> Decision {
    let side = |sel: &Selector| {
        let mut a2 = a.clone();
        let mut b2 = b.clone();
        a2.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
        b2.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
        let pts: Vec<(f64, f64, f64)> =
            crossover_points(obs, metric, &a2, &b2, pair_by, along, &[])
                .into_values()
                .flatten()
                .collect();
        if pts.is_empty() {
            None
        } else {
            Some(break_even(pts))
        }
    };
    let (Some(e), Some(l)) = (side(earlier), side(later)) else {
        return not_measured("no paired runs on one side");
    };
    let show = |r: &Result<(f64, bool), f64>| match r {
        Ok((x, exact)) => fmt_break_even(*x, *exact),
        Err(last) => format!("none up to {last}"),
    };
    let measured = format!("break-even {} → {}", show(&e), show(&l));
    let (Ok((xe, _)), Ok((xl, _))) = (e, l) else {
        return Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: "a side without a break-even: no shift to measure".into(),
        };
    };
    let shift = xl - xe;
    let measured = format!("{measured}: {shift:+.1}");
    if shift <= 0.0 {
        return Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: format!("the break-even does not come later ({shift:+.1})"),
        };
    }
    match range {
        Some(r) if !in_range(shift, r) => Decision {
            verdict: Verdict::DirectionOnly,
            measured,
            reason: format!(
                "later by {shift:.1}, outside the paper's {} … {} (break-evens interpolated linearly)",
                r[0], r[1]
            ),
        },
        Some(r) => Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: format!(
                "later by {shift:.1}, in the paper's {} … {} (break-evens interpolated linearly)",
                r[0], r[1]
            ),
        },
        None => Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: format!("later by {shift:.1}; the paper gives no magnitude"),
        },
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn trend(
    obs: &[&Observation],
    metric: &str,
    a: &Selector,
    minus: Option<&Selector>,
    pair_by: &[String],
    along: &str,
    within: &[String],
    direction: Direction,
) -> Decision {
    let mut groups: BTreeMap<Vec<String>, Vec<(f64, f64)>> = BTreeMap::new();
    match minus {
        Some(m) => {
            let mut key_by: Vec<String> = pair_by.to_vec();
            key_by.push(along_attr(along).to_string());
            for (o, va, vb) in pairs(obs, a, m, &key_by, metric) {
                if let Some(x) = along_value(o, along) {
                    groups.entry(o.key(within)).or_default().push((x, va - vb));
                }
            }
        }
        None => {
            for o in obs.iter().filter(|o| o.matches(a)) {
                if let (Some(x), Some(v)) = (along_value(o, along), o.value(metric)) {
                    groups.entry(o.key(within)).or_default().push((x, v));
                }
            }
        }
    }
    groups.retain(|_, pts| pts.len() >= 2);
    if groups.is_empty() {
        return not_measured(format!("no group with two values of {along}"));
    }
    let mut shown = Vec::new();
    let mut breaks = Vec::new();
    for (key, mut pts) in groups.clone() {
        pts.sort_by(|p, q| p.0.total_cmp(&q.0));
        let name = key.join(" · ");
        let values = pts
            .iter()
            .map(|(x, v)| format!("{x}: {}", short(*v)))
            .collect::<Vec<_>>()
            .join(", ");
        shown.push(if name.is_empty() {
            values
        } else {
            format!("{name}: {values}")
        });
        for w in pts.windows(2) {
            if !moves(direction, w[1].1, w[0].1) {
                breaks.push(format!("{name} {} → {}", w[0].0, w[1].0));
            }
        }
    }
    let measured = shown.join("; ");
    let way = match direction {
        Direction::Increase => "grows",
        Direction::Decrease => "falls",
    };
    if breaks.is_empty() {
        Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: format!(
                "{way} at every step in all {} groups; the paper gives a trend, no magnitude",
                groups.len()
            ),
        }
    } else {
        Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: format!(
                "does not {} at {}",
                &way[..way.len() - 1],
                breaks.join("; ")
            ),
        }
    }
}

pub(super) fn spread(
    obs: &[&Observation],
    metric: &str,
    a: &Selector,
    b: &Selector,
    range_a: Option<&[f64; 2]>,
    range_b: Option<&[f64; 2]>,
) -> Decision {
    let side = |sel: &Selector| {
        let vs: Vec<(&Observation, f64)> = obs
            .iter()
            .filter(|o| o.matches(sel))
            .filter_map(|o| Some((*o, o.value(metric)?)))
            .collect();
        if vs.len() < 2 {
            return None;
        }
        let min = vs.iter().fold(vs[0], |m, x| if x.1 < m.1 { *x } else { m });
        let max = vs.iter().fold(vs[0], |m, x| if x.1 > m.1 { *x } else { m });
        let s = if min.1 > 0.0 {
            max.1 / min.1
        } else {
            f64::INFINITY
        };
        Some((s, min.0.label(), max.0.label()))
    };
    let (Some((sa, a_min, a_max)), Some((sb, b_min, b_max))) = (side(a), side(b)) else {
        return not_measured("fewer than two runs on one side");
    };
    let measured = format!(
        "{} (worst {a_max} / best {a_min}) vs {} (worst {b_max} / best {b_min})",
        times(sa),
        times(sb)
    );
    if sa >= sb {
        return Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: format!(
                "the first side's spread {} is not smaller than the second's {}",
                times(sa),
                times(sb)
            ),
        };
    }
    let mut outside = Vec::new();
    for (name, s, r) in [("first", sa, range_a), ("second", sb, range_b)] {
        if let Some(r) = r {
            if !in_range(s, r) {
                outside.push(format!(
                    "the {name} side's {} outside the paper's {} … {}",
                    times(s),
                    times(r[0]),
                    times(r[1])
                ));
            }
        }
    }
    if outside.is_empty() {
        Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: if range_a.is_some() || range_b.is_some() {
                "smaller spread, each in the paper's range".into()
            } else {
                "smaller spread; the paper gives no magnitude".into()
            },
        }
    } else {
        Decision {
            verdict: Verdict::DirectionOnly,
            measured,
            reason: format!("smaller spread; {}", outside.join("; ")),
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn most_often(
    obs: &[&Observation],
    metric: &str,
    a: &Selector,
    b: &Selector,
    pair_by: &[String],
    along: &str,
    direction: Direction,
    expect: &str,
) -> Decision {
    let mut key_by: Vec<String> = pair_by.to_vec();
    key_by.push(along_attr(along).to_string());
    let ps = pairs(obs, a, b, &key_by, metric);
    if ps.is_empty() {
        return not_measured("no paired runs");
    }
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (o, va, vb) in &ps {
        let e = counts
            .entry(o.attrs.get(along).cloned().unwrap_or_default())
            .or_default();
        e.1 += 1;
        if moves(direction, *va, *vb) {
            e.0 += 1;
        }
    }
    let measured = counts
        .iter()
        .map(|(k, (n, of))| format!("{k}: {n} of {of}"))
        .collect::<Vec<_>>()
        .join(", ");
    let at = counts.get(expect).map_or(0, |c| c.0);
    let others = counts
        .iter()
        .filter(|(k, _)| k.as_str() != expect)
        .map(|(_, c)| c.0)
        .max()
        .unwrap_or(0);
    if at > 0 && at > others {
        Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: format!(
                "most often at {expect} ({at} pairs; at most {others} elsewhere); the paper gives no counts"
            ),
        }
    } else {
        Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: if at == 0 && others == 0 {
                "no pair moves the paper's way".into()
            } else {
                format!("{at} pairs at {expect}, {others} at another value")
            },
        }
    }
}

/// A value in four significant figures (times, counts).
fn short(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}
