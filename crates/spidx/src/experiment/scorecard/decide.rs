//! The tests that decide a finding ([`Test`]): each computes, over the observations of a
//! finding's experiments, the measured value in the finding's terms and its verdict. Pure
//! functions of the observations: no database, no I/O.

use std::collections::{BTreeMap, HashMap};

use super::{Decision, Direction, Observation, Selector, Test, Verdict};

fn not_measured(why: impl Into<String>) -> Decision {
    Decision {
        verdict: Verdict::NotMeasured,
        measured: "—".into(),
        reason: why.into(),
    }
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

/// Pairs of observations of `a` and `b` that agree on `pair_by`, with both metrics.
fn pairs<'o>(
    obs: &[&'o Observation],
    a: &Selector,
    b: &Selector,
    pair_by: &[String],
    metric: &str,
) -> Vec<(&'o Observation, f64, f64)> {
    let mut bs: HashMap<Vec<String>, f64> = HashMap::new();
    for o in obs.iter().filter(|o| o.matches(b)) {
        if let Some(v) = o.value(metric) {
            bs.insert(o.key(pair_by), v);
        }
    }
    obs.iter()
        .filter(|o| o.matches(a))
        .filter_map(|o| {
            let va = o.value(metric)?;
            let vb = *bs.get(&o.key(pair_by))?;
            Some((*o, va, vb))
        })
        .collect()
}

/// The last number in `s` (e.g. 10 in `knn streams=10`).
fn number_in(s: &str) -> Option<f64> {
    let mut end = None;
    let bytes = s.as_bytes();
    for i in (0..bytes.len()).rev() {
        if bytes[i].is_ascii_digit() {
            end = Some(i + 1);
            break;
        }
    }
    let end = end?;
    let mut start = end;
    while start > 0 && (bytes[start - 1].is_ascii_digit() || bytes[start - 1] == b'.') {
        start -= 1;
    }
    s[start..end].parse().ok()
}

/// The numeric value of the attribute `along` of `o`: the last number in it, or with
/// `attr:key` (e.g. `workload:k`) the number after `key=` in the attribute (the `k` of
/// `knn k=10 streams=100`).
fn along_value(o: &Observation, along: &str) -> Option<f64> {
    match along.split_once(':') {
        Some((attr, key)) => {
            let v = o.attrs.get(attr)?;
            let tag = format!("{key}=");
            let rest = v
                .split_whitespace()
                .find_map(|w| w.strip_prefix(tag.as_str()))?;
            rest.trim_end_matches('%').parse().ok()
        }
        None => o.attrs.get(along).and_then(|s| number_in(s)),
    }
}

/// The attribute `along` names (`workload` of `workload:k`).
fn along_attr(along: &str) -> &str {
    along.split_once(':').map_or(along, |(attr, _)| attr)
}

/// `a` moved from `b` in `direction` (strictly).
fn moves(direction: Direction, a: f64, b: f64) -> bool {
    match direction {
        Direction::Decrease => a < b,
        Direction::Increase => a > b,
    }
}

fn in_range(x: f64, r: &[f64; 2]) -> bool {
    x >= r[0] && x <= r[1]
}

/// A ratio as the scorecard prints it (`12.30×`, `∞` for an open range's end).
fn times(x: f64) -> String {
    if x.is_infinite() {
        "∞".into()
    } else {
        format!("{x:.2}×")
    }
}

pub(super) fn decide(test: &Test, metric: &str, obs: &[&Observation]) -> Decision {
    match test {
        Test::Change {
            a,
            b,
            pair_by,
            direction,
            range,
            tolerance,
        } => {
            let ps = pairs(obs, a, b, pair_by, metric);
            if ps.is_empty() {
                return not_measured("no paired runs");
            }
            let changes: Vec<(&Observation, f64)> = ps
                .iter()
                .map(|(o, va, vb)| {
                    let c = if *vb == 0.0 {
                        if *va == 0.0 {
                            0.0
                        } else {
                            f64::INFINITY * va.signum()
                        }
                    } else {
                        (va - vb) / vb
                    };
                    (*o, c)
                })
                .collect();
            let lo = changes.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
            let hi = changes
                .iter()
                .map(|c| c.1)
                .fold(f64::NEG_INFINITY, f64::max);
            let measured = if lo == hi {
                pct(lo)
            } else {
                format!("{} … {}", pct(lo), pct(hi))
            };
            let measured = format!("{measured} ({} pairs)", changes.len());
            let wrong: Vec<&(&Observation, f64)> = changes
                .iter()
                .filter(|(_, c)| match direction {
                    Direction::Decrease => *c >= 0.0,
                    Direction::Increase => *c <= 0.0,
                })
                .collect();
            if !wrong.is_empty() {
                let (o, c) = wrong[0];
                return Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: format!(
                        "{} of {} pairs move the other way or not at all (e.g. {}: {})",
                        wrong.len(),
                        changes.len(),
                        o.label(),
                        pct(*c)
                    ),
                };
            }
            match range {
                None => Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!(
                        "all {} pairs in the paper's direction; the paper gives no magnitude",
                        changes.len()
                    ),
                },
                Some([rlo, rhi]) => {
                    let out: Vec<_> = changes
                        .iter()
                        .filter(|(_, c)| *c < rlo - tolerance || *c > rhi + tolerance)
                        .collect();
                    if out.is_empty() {
                        Decision {
                            verdict: Verdict::Reproduced,
                            measured,
                            reason: format!(
                                "all {} pairs in the paper's range ± {:.0} points",
                                changes.len(),
                                tolerance * 100.0
                            ),
                        }
                    } else {
                        Decision {
                            verdict: Verdict::DirectionOnly,
                            measured,
                            reason: format!(
                                "all {} pairs in the paper's direction, {} outside its range {} … {} (± {:.0} points)",
                                changes.len(),
                                out.len(),
                                pct(*rlo),
                                pct(*rhi),
                                tolerance * 100.0
                            ),
                        }
                    }
                }
            }
        }
        Test::ZeroVsPositive { zero, positive } => {
            let z: Vec<(&Observation, f64)> = obs
                .iter()
                .filter(|o| o.matches(zero))
                .filter_map(|o| Some((*o, o.value(metric)?)))
                .collect();
            let p: Vec<(&Observation, f64)> = obs
                .iter()
                .filter(|o| o.matches(positive))
                .filter_map(|o| Some((*o, o.value(metric)?)))
                .collect();
            if z.is_empty() || p.is_empty() {
                return not_measured("no runs on one side");
            }
            let z_bad: Vec<_> = z.iter().filter(|(_, v)| *v != 0.0).collect();
            let p_bad: Vec<_> = p.iter().filter(|(_, v)| *v <= 0.0).collect();
            let zmax = z.iter().map(|x| x.1).fold(0.0, f64::max);
            let (pmin, pmax) = p.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                (lo.min(x.1), hi.max(x.1))
            });
            let measured = format!("{} vs {} … {}", num(zmax), num(pmin), num(pmax));
            if z_bad.is_empty() && p_bad.is_empty() {
                Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!("0 in all {} runs, > 0 in all {}", z.len(), p.len()),
                }
            } else {
                let mut why = Vec::new();
                if let Some((o, v)) = z_bad.first() {
                    why.push(format!(
                        "{} of {} runs count more than 0 (e.g. {}: {})",
                        z_bad.len(),
                        z.len(),
                        o.label(),
                        num(*v)
                    ));
                }
                if let Some((o, _)) = p_bad.first() {
                    why.push(format!(
                        "{} of {} runs count 0 (e.g. {})",
                        p_bad.len(),
                        p.len(),
                        o.label()
                    ));
                }
                Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: why.join("; "),
                }
            }
        }
        Test::Best {
            select,
            within,
            over,
            expect,
            highest,
            majority,
        } => best(
            obs, metric, select, within, over, expect, *highest, *majority,
        ),
        Test::RatioGrows {
            a,
            b,
            pair_by,
            along,
            range,
        } => {
            let mut key_by: Vec<String> = pair_by.clone();
            key_by.push(along_attr(along).to_string());
            let ps = pairs(obs, a, b, &key_by, metric);
            let mut by_along: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
            for (o, va, vb) in &ps {
                let Some(x) = along_value(o, along) else {
                    continue;
                };
                if *va > 0.0 {
                    by_along
                        .entry((x * 1000.0) as i64)
                        .or_default()
                        .push(vb / va);
                }
            }
            if by_along.len() < 2 {
                return not_measured(format!("fewer than two values of {along}"));
            }
            let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
            let points: Vec<(f64, f64)> = by_along
                .iter()
                .map(|(x, v)| (*x as f64 / 1000.0, mean(v)))
                .collect();
            let measured = points
                .iter()
                .map(|(x, r)| format!("{x}: {r:.2}×"))
                .collect::<Vec<_>>()
                .join(", ");
            let (first, last) = (points[0].1, points[points.len() - 1].1);
            if last <= first {
                return Decision {
                    verdict: Verdict::NotReproduced,
                    measured,
                    reason: format!("the ratio does not grow ({first:.2}× → {last:.2}×)"),
                };
            }
            match range {
                Some([lo, hi]) if last < *lo || last > *hi => Decision {
                    verdict: Verdict::DirectionOnly,
                    measured,
                    reason: format!(
                        "grows {first:.2}× → {last:.2}×, outside the paper's {lo}× … {hi}×"
                    ),
                },
                Some(_) => Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!("grows {first:.2}× → {last:.2}×, in the paper's range"),
                },
                None => Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!("grows {first:.2}× → {last:.2}×; the paper gives no magnitude"),
                },
            }
        }
        Test::Crossover {
            a,
            b,
            pair_by,
            along,
            within,
            range,
        } => crossover(obs, metric, a, b, pair_by, along, within, range.as_ref()),
        Test::CrossoverShift {
            a,
            b,
            pair_by,
            along,
            earlier,
            later,
            range,
        } => crossover_shift(
            obs,
            metric,
            (a, b),
            pair_by,
            along,
            (earlier, later),
            range.as_ref(),
        ),
        Test::Ratio {
            a,
            b,
            pair_by,
            range,
        } => ratio(obs, metric, a, b, pair_by, range.as_ref()),
        Test::Trend {
            a,
            minus,
            pair_by,
            along,
            within,
            direction,
        } => trend(
            obs,
            metric,
            a,
            minus.as_ref(),
            pair_by,
            along,
            within,
            *direction,
        ),
        Test::Spread {
            a,
            b,
            range_a,
            range_b,
        } => spread(obs, metric, a, b, range_a.as_ref(), range_b.as_ref()),
        Test::MostOften {
            a,
            b,
            pair_by,
            along,
            direction,
            expect,
        } => most_often(obs, metric, a, b, pair_by, along, *direction, expect),
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.4}")
    }
}

/// The `best` test: per group, every configuration with the best value (ties included)
/// must be one the paper names.
#[allow(clippy::too_many_arguments)]
fn best(
    obs: &[&Observation],
    metric: &str,
    select: &Selector,
    within: &[String],
    over: &[String],
    expect: &super::OneOrMany,
    highest: bool,
    majority: bool,
) -> Decision {
    let mut groups: BTreeMap<Vec<String>, Vec<(&Observation, f64)>> = BTreeMap::new();
    for o in obs.iter().filter(|o| o.matches(select)) {
        if let Some(v) = o.value(metric) {
            groups.entry(o.key(within)).or_default().push((*o, v));
        }
    }
    if groups.is_empty() {
        return not_measured("no runs");
    }
    let mut winners: BTreeMap<String, usize> = BTreeMap::new();
    let mut misses = Vec::new();
    for (key, members) in &groups {
        let best = members
            .iter()
            .map(|m| m.1)
            .fold(None::<f64>, |acc, v| match acc {
                Some(b) if (highest && v <= b) || (!highest && v >= b) => Some(b),
                _ => Some(v),
            })
            .expect("groups are not empty");
        // Every configuration that ties for the best: a tie with one the paper does not
        // name is not the paper's winner.
        let mut tied: Vec<String> = members
            .iter()
            .filter(|m| m.1 == best)
            .map(|m| m.0.key(over).join(" · "))
            .collect();
        tied.sort();
        tied.dedup();
        let w = tied.join(" = ");
        *winners.entry(w.clone()).or_default() += 1;
        if !tied.iter().all(|t| expect.accepts(t)) {
            misses.push(format!("{}: {w}", key.join(" · ")));
        }
    }
    let measured = winners
        .iter()
        .map(|(w, n)| format!("{w} in {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let measured = format!("{measured} of {} groups", groups.len());
    let hits = groups.len() - misses.len();
    let named = expect.values().join(" or ");
    if misses.is_empty() {
        Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: format!("{named} in every group (a ranking: no magnitude to compare)"),
        }
    } else if majority && 2 * hits > groups.len() {
        Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: format!(
                "{named} in {hits} of {} groups, the majority the paper states (a ranking: no magnitude to compare); the others: {}",
                groups.len(),
                misses.join("; ")
            ),
        }
    } else {
        Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: format!(
                "{} of {} groups differ{}: {}",
                misses.len(),
                groups.len(),
                if majority {
                    " (the paper states a majority)"
                } else {
                    ""
                },
                misses.join("; ")
            ),
        }
    }
}

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
fn crossover(
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

fn crossover_shift(
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

fn ratio(
    obs: &[&Observation],
    metric: &str,
    a: &Selector,
    b: &Selector,
    pair_by: &[String],
    range: Option<&[f64; 2]>,
) -> Decision {
    let ps = pairs(obs, a, b, pair_by, metric);
    if ps.is_empty() {
        return not_measured("no paired runs");
    }
    let rs: Vec<(&Observation, f64)> = ps
        .iter()
        .map(|(o, va, vb)| {
            let r = if *va > 0.0 {
                vb / va
            } else if *vb > 0.0 {
                f64::INFINITY
            } else {
                1.0
            };
            (*o, r)
        })
        .collect();
    let lo = rs.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let hi = rs.iter().map(|r| r.1).fold(f64::NEG_INFINITY, f64::max);
    let measured = if lo == hi {
        times(lo)
    } else {
        format!("{} … {}", times(lo), times(hi))
    };
    let measured = format!("{measured} ({} pairs)", rs.len());
    let wrong: Vec<_> = rs.iter().filter(|r| r.1 <= 1.0).collect();
    if let Some((o, r)) = wrong.first() {
        return Decision {
            verdict: Verdict::NotReproduced,
            measured,
            reason: format!(
                "{} of {} pairs at or below 1× (e.g. {}: {})",
                wrong.len(),
                rs.len(),
                o.label(),
                times(*r)
            ),
        };
    }
    match range {
        None => Decision {
            verdict: Verdict::Reproduced,
            measured,
            reason: format!(
                "all {} pairs above 1×; the paper gives no magnitude",
                rs.len()
            ),
        },
        Some(r) => {
            let out: Vec<_> = rs.iter().filter(|x| !in_range(x.1, r)).collect();
            if out.is_empty() {
                Decision {
                    verdict: Verdict::Reproduced,
                    measured,
                    reason: format!(
                        "all {} pairs in the paper's {} … {}",
                        rs.len(),
                        times(r[0]),
                        times(r[1])
                    ),
                }
            } else {
                Decision {
                    verdict: Verdict::DirectionOnly,
                    measured,
                    reason: format!(
                        "all {} pairs above 1×, {} outside the paper's {} … {} (e.g. {}: {})",
                        rs.len(),
                        out.len(),
                        times(r[0]),
                        times(r[1]),
                        out[0].0.label(),
                        times(out[0].1)
                    ),
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn trend(
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

fn spread(
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
fn most_often(
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
