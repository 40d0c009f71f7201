//! The tests that decide a finding ([`Test`]): each computes, over the observations of a
//! finding's experiments, the measured value in the finding's terms and its verdict. Pure
//! functions of the observations: no database, no I/O.

use std::collections::{BTreeMap, HashMap};

use super::{Decision, Direction, Observation, Selector, Test, Verdict};

mod series;
use series::{crossover, crossover_shift, most_often, spread, trend};

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
pub(super) fn pairs<'o>(
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
