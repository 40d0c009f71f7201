//! The measurement protocol's arithmetic (architecture §8, the seeds' protocol):
//! each query runs `repetitions` times; its cost is the mean over its repetitions; a query
//! set is reported as the **sum over queries of each query's mean**, with the minimum,
//! median and maximum of the per-query means.
//!
//! Counters are handled generically: a report (any `Serialize` value: phase reports,
//! device, store and cache statistics) is flattened into dotted names → numbers
//! ([`flatten`]), so statistics added later by any layer are averaged, summed and recorded
//! without changes here.

use std::collections::BTreeMap;

use serde::Serialize;

/// Flat metrics: dotted names (`filter.device.host.read_ops`) → values.
pub type Metrics = BTreeMap<String, f64>;

/// Leaves that are levels or ratios, not amounts: never summed, the last value is kept
/// (write amplification is recomputed from the summed flash writes, see [`finish`]).
const GAUGES: [&str; 8] = [
    "write_amplification",
    "erase_min",
    "erase_max",
    "erase_mean",
    "retired_blocks",
    "resident_pages",
    "capacity_pages",
    "pages_in_use",
];

fn is_gauge(name: &str) -> bool {
    let leaf = name.rsplit('.').next().unwrap_or(name);
    GAUGES.contains(&leaf)
}

/// Every numeric (and boolean) leaf of `v`'s JSON form, with dotted names under `prefix`;
/// array elements are named by their index (`node_reads_per_level.0` = leaves).
pub fn flatten<T: Serialize>(prefix: &str, v: &T) -> Metrics {
    let mut out = Metrics::new();
    if let Ok(j) = serde_json::to_value(v) {
        walk(prefix, &j, &mut out);
    }
    out
}

fn walk(name: &str, v: &serde_json::Value, out: &mut Metrics) {
    let join = |k: &str| {
        if name.is_empty() {
            k.to_string()
        } else {
            format!("{name}.{k}")
        }
    };
    match v {
        serde_json::Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                out.insert(name.to_string(), f);
            }
        }
        serde_json::Value::Bool(b) => {
            out.insert(name.to_string(), if *b { 1.0 } else { 0.0 });
        }
        serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| walk(&join(k), x, out)),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| walk(&join(&i.to_string()), x, out)),
        _ => {}
    }
}

/// Adds `b` into `a` (gauges: `b`'s value replaces `a`'s).
pub fn accumulate(a: &mut Metrics, b: &Metrics) {
    for (k, v) in b {
        if is_gauge(k) {
            a.insert(k.clone(), *v);
        } else {
            *a.entry(k.clone()).or_insert(0.0) += v;
        }
    }
}

/// The mean of several repetitions' metrics (gauges: the last repetition's value).
pub fn mean(reps: &[Metrics]) -> Metrics {
    let mut sum = Metrics::new();
    for r in reps {
        accumulate(&mut sum, r);
    }
    let n = reps.len().max(1) as f64;
    for (k, v) in sum.iter_mut() {
        if !is_gauge(k) {
            *v /= n;
        }
    }
    sum
}

/// Recomputes write amplification wherever flash writes and host flash writes were summed.
pub fn finish(m: &mut Metrics) {
    let prefixes: Vec<String> = m
        .keys()
        .filter_map(|k| k.strip_suffix(".host_flash_writes").map(str::to_string))
        .collect();
    for p in prefixes {
        let host = m[&format!("{p}.host_flash_writes")];
        let writes = m.get(&format!("{p}.flash_writes")).copied().unwrap_or(0.0);
        m.insert(
            format!("{p}.write_amplification"),
            if host == 0.0 { 1.0 } else { writes / host },
        );
    }
}

/// Sum, minimum, median and maximum of per-query means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Sum over queries (what the seeds report).
    pub sum: f64,
    /// Smallest per-query mean.
    pub min: f64,
    /// Median per-query mean (mean of the two middle values for an even count).
    pub median: f64,
    /// Largest per-query mean.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (all zeros when empty).
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            sum: v.iter().sum(),
            min: v[0],
            median,
            max: v[n - 1],
        }
    }
}

/// The arithmetic mean (0 when empty).
pub fn mean_of(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_odd_and_even_counts() {
        let s = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!(
            s,
            Spread {
                sum: 6.0,
                min: 1.0,
                median: 2.0,
                max: 3.0
            }
        );
        let s = Spread::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            s,
            Spread {
                sum: 10.0,
                min: 1.0,
                median: 2.5,
                max: 4.0
            }
        );
        assert_eq!(Spread::of(&[]), Spread::default());
        assert_eq!(Spread::of(&[5.0]).median, 5.0);
    }

    #[test]
    fn sum_of_means_is_the_seeds_figure() {
        // Two queries, three repetitions each: means 2 and 10, reported as 12.
        let q1 = [1.0, 2.0, 3.0];
        let q2 = [9.0, 10.0, 11.0];
        let means = [mean_of(&q1), mean_of(&q2)];
        assert_eq!(means, [2.0, 10.0]);
        let s = Spread::of(&means);
        assert_eq!((s.sum, s.min, s.median, s.max), (12.0, 2.0, 6.0, 10.0));
    }

    #[test]
    fn flatten_names_every_numeric_leaf() {
        let v = serde_json::json!({"a": 1, "b": {"c": 2.5, "d": [3, 4]}, "e": "text", "f": true});
        let m = flatten("x", &v);
        let want: Vec<(&str, f64)> = vec![
            ("x.a", 1.0),
            ("x.b.c", 2.5),
            ("x.b.d.0", 3.0),
            ("x.b.d.1", 4.0),
            ("x.f", 1.0),
        ];
        assert_eq!(
            m.iter().map(|(k, v)| (k.as_str(), *v)).collect::<Vec<_>>(),
            want
        );
    }

    #[test]
    fn means_sum_counts_but_keep_gauges() {
        let r1 = Metrics::from([
            ("host.read_ops".into(), 4.0),
            ("flash.erase_max".into(), 7.0),
        ]);
        let r2 = Metrics::from([
            ("host.read_ops".into(), 6.0),
            ("flash.erase_max".into(), 9.0),
        ]);
        let m = mean(&[r1, r2]);
        assert_eq!(m["host.read_ops"], 5.0);
        assert_eq!(m["flash.erase_max"], 9.0);
        let mut total = Metrics::new();
        accumulate(&mut total, &m);
        accumulate(&mut total, &m);
        assert_eq!(total["host.read_ops"], 10.0);
        assert_eq!(total["flash.erase_max"], 9.0);
    }

    #[test]
    fn write_amplification_is_recomputed_from_sums() {
        let mut m = Metrics::from([
            ("d.flash.flash_writes".into(), 30.0),
            ("d.flash.host_flash_writes".into(), 20.0),
            ("d.flash.write_amplification".into(), 9.0),
        ]);
        finish(&mut m);
        assert_eq!(m["d.flash.write_amplification"], 1.5);
    }
}
