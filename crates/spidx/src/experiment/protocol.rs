//! The measurement protocol's arithmetic (architecture §8, the seeds' protocol):
//! each query runs `repetitions` times; its cost is the mean over its repetitions; a query
//! set is reported as the **sum over queries of each query's mean**, with the minimum,
//! median and maximum of the per-query means. The spread over repetitions ([`Repeated`]):
//! the workload's total of each repetition (every query once), whose mean is that sum,
//! with their median, sample standard deviation and a 95 % t-interval of the mean.
//!
//! Statistics are handled generically: a report (any `Serialize` value: phase reports,
//! device, store and cache statistics) is flattened into dotted names → numbers
//! ([`flatten`]), so statistics added later by any layer are averaged, summed and recorded
//! without changes here. Every leaf has a [`MetricKind`], told by its name: a leaf whose
//! dotted name passes through a `gauges` segment is a gauge (a level, ratio, peak or size
//! in use: `device.flash.gauges.erase_max`), one passing through `settings` is a setting (a
//! configured value: `device.settings.page_size`), every other leaf is a counter (an amount
//! that adds up over operations). Only counters are summed, averaged or subtracted; gauges
//! and settings keep their latest value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Flat metrics: dotted names (`filter.device.host.read_ops`) → values. The kind of each
/// is [`MetricKind::of`] its name.
pub type Metrics = BTreeMap<String, f64>;

/// What a metric is, which decides how it combines over repetitions, queries and phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// An amount that adds up over operations (reads, writes, flushes, bytes, seconds):
    /// summed over queries, averaged over repetitions, subtracted between snapshots.
    Counter,
    /// A level, ratio, peak or size in use (resident pages, erase spread, write
    /// amplification): never summed or subtracted; the latest value is kept.
    Gauge,
    /// A configured value (page size, buffer capacity, flushing unit): never summed or
    /// subtracted; the latest value is kept.
    Setting,
}

impl MetricKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [MetricKind; 3] = [MetricKind::Counter, MetricKind::Gauge, MetricKind::Setting];

    /// The kind of the metric named `name`: the first `gauges` or `settings` segment of its
    /// dotted name decides; a name with neither is a counter.
    pub fn of(name: &str) -> MetricKind {
        for segment in name.split('.') {
            match segment {
                "gauges" => return MetricKind::Gauge,
                "settings" => return MetricKind::Setting,
                _ => {}
            }
        }
        MetricKind::Counter
    }

    /// The name stored in the results database (`counter`, `gauge`, `setting`).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Setting => "setting",
        }
    }

    /// The kind named `s` (as [`MetricKind::as_str`] writes it).
    pub fn parse(s: &str) -> Option<MetricKind> {
        MetricKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether values of this kind add up (only counters do).
    pub(crate) fn is_counter(self) -> bool {
        self == MetricKind::Counter
    }
}

impl std::fmt::Display for MetricKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serializes `T` as `{"gauges": T}`: wraps a report whose every leaf is a gauge (a tree's
/// shape after construction), so that [`flatten`] types its leaves.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AllGauges<T> {
    /// The report.
    pub gauges: T,
}

/// Every numeric (and boolean) leaf of `v`'s JSON form, with dotted names under `prefix`;
/// array elements are named by their index (`node_reads_per_level.0` = leaves). The names
/// keep the `gauges`/`settings` segments of the report's shape, which type every leaf
/// ([`MetricKind::of`], [`kinds`]).
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

/// The kind of every metric of `m`, by name.
pub fn kinds(m: &Metrics) -> impl Iterator<Item = (&str, MetricKind, f64)> {
    m.iter().map(|(k, v)| (k.as_str(), MetricKind::of(k), *v))
}

/// Adds `b` into `a`: counters are summed; a gauge's or setting's value in `b` replaces
/// `a`'s.
pub(crate) fn accumulate(a: &mut Metrics, b: &Metrics) {
    for (k, v) in b {
        if MetricKind::of(k).is_counter() {
            *a.entry(k.clone()).or_insert(0.0) += v;
        } else {
            a.insert(k.clone(), *v);
        }
    }
}

/// The mean of several repetitions' metrics: counters averaged; gauges and settings take
/// the last repetition's value.
pub fn mean(reps: &[Metrics]) -> Metrics {
    let mut sum = Metrics::new();
    for r in reps {
        accumulate(&mut sum, r);
    }
    let n = reps.len().max(1) as f64;
    for (k, v) in sum.iter_mut() {
        if MetricKind::of(k).is_counter() {
            *v /= n;
        }
    }
    sum
}

/// What happened between two snapshots of one report, divided by `n` (e.g. over `n`
/// repetitions): counters are `(after - before) / n`; gauges and settings are `after`'s
/// value as it is (the difference of two levels or two configured values means nothing).
pub(crate) fn delta(before: &Metrics, after: &Metrics, n: f64) -> Metrics {
    after
        .iter()
        .map(|(k, a)| {
            let v = if MetricKind::of(k).is_counter() {
                (a - before.get(k).copied().unwrap_or(0.0)) / n
            } else {
                *a
            };
            (k.clone(), v)
        })
        .collect()
}

/// Recomputes write amplification (a gauge: `PREFIX.gauges.write_amplification`) wherever
/// flash writes and host flash writes (counters: `PREFIX.flash_writes`,
/// `PREFIX.host_flash_writes`) were summed.
pub fn finish(m: &mut Metrics) {
    let prefixes: Vec<String> = m
        .keys()
        .filter_map(|k| k.strip_suffix(".host_flash_writes").map(str::to_string))
        .collect();
    for p in prefixes {
        let host = m[&format!("{p}.host_flash_writes")];
        let writes = m.get(&format!("{p}.flash_writes")).copied().unwrap_or(0.0);
        m.insert(
            format!("{p}.gauges.write_amplification"),
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

/// The spread of a workload's totals over its repetitions (repetition r's total is the
/// sum over queries of their r-th measured time; the totals' mean is the sum of per-query
/// means the seeds report): median, σ (sample standard deviation, n − 1) and the 95 %
/// confidence interval of the mean, Student's t-interval `mean ± t(0.975, n−1)·σ/√n`
/// (it assumes roughly normal totals; with the seeds' 10 repetitions, t = 2.262).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Repeated {
    /// Repetitions.
    pub n: usize,
    /// Mean total.
    pub mean: f64,
    /// Median total.
    pub median: f64,
    /// Sample standard deviation of the totals (`None` for fewer than 2 repetitions).
    pub sd: Option<f64>,
    /// 95 % t-interval of the mean (`None` for fewer than 2 repetitions).
    pub ci95: Option<(f64, f64)>,
}

impl Repeated {
    /// The spread of `totals` (`None` when empty).
    pub fn of(totals: &[f64]) -> Option<Repeated> {
        let n = totals.len();
        if n == 0 {
            return None;
        }
        let mean = totals.iter().sum::<f64>() / n as f64;
        let median = Spread::of(totals).median;
        let (sd, ci95) = if n >= 2 {
            let var = totals.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let sd = var.sqrt();
            let half = t_975(n - 1) * sd / (n as f64).sqrt();
            (Some(sd), Some((mean - half, mean + half)))
        } else {
            (None, None)
        };
        Some(Repeated {
            n,
            mean,
            median,
            sd,
            ci95,
        })
    }

    /// As metrics (gauges) of `name`: `gauges.NAME_rep_median`, `_rep_sd`,
    /// `_rep_ci95_low`, `_rep_ci95_high`, from 2 repetitions on. One repetition has no
    /// spread, and its median is the total itself (the workload's `elapsed_s`), so nothing
    /// is added: a run of one repetition records exactly the metrics it did before these
    /// statistics existed.
    pub fn metrics(&self, name: &str) -> Metrics {
        let mut m = Metrics::new();
        if let (Some(sd), Some((lo, hi))) = (self.sd, self.ci95) {
            m.insert(format!("gauges.{name}_rep_median"), self.median);
            m.insert(format!("gauges.{name}_rep_sd"), sd);
            m.insert(format!("gauges.{name}_rep_ci95_low"), lo);
            m.insert(format!("gauges.{name}_rep_ci95_high"), hi);
        }
        m
    }
}

/// The 0.975 quantile of Student's t distribution with `df` degrees of freedom: from the
/// table for 1–30, beyond by the Cornish–Fisher expansion around the normal quantile
/// (within 0.001 of the exact value from 30 on).
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if (1..=30).contains(&df) {
        return TABLE[df - 1];
    }
    let z: f64 = 1.959_964;
    let n = df.max(1) as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * n)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
}

/// The arithmetic mean (0 when empty).
#[cfg(test)]
fn mean_of(values: &[f64]) -> f64 {
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
    fn repetitions_give_median_sd_and_a_t_interval() {
        // Totals 10, 12, 14, 16, 18: mean 14, sample σ = √10, t(0.975, 4) = 2.776.
        let r = Repeated::of(&[12.0, 10.0, 18.0, 14.0, 16.0]).unwrap();
        assert_eq!((r.n, r.mean, r.median), (5, 14.0, 14.0));
        let sd = 10f64.sqrt();
        assert!((r.sd.unwrap() - sd).abs() < 1e-12);
        let half = 2.776 * sd / 5f64.sqrt();
        let (lo, hi) = r.ci95.unwrap();
        assert!((lo - (14.0 - half)).abs() < 1e-12 && (hi - (14.0 + half)).abs() < 1e-12);
        let m = r.metrics("elapsed_s");
        assert_eq!(m["gauges.elapsed_s_rep_median"], 14.0);
        assert!(kinds(&m).all(|(_, k, _)| k == MetricKind::Gauge));
        assert_eq!(m.len(), 4);
        // One repetition: no σ, no interval, and no metrics (its median is the total).
        let one = Repeated::of(&[3.0]).unwrap();
        assert_eq!((one.sd, one.ci95), (None, None));
        assert!(one.metrics("elapsed_s").is_empty());
        assert_eq!(Repeated::of(&[]), None);
        // The t quantiles: table values, and the expansion joins them smoothly.
        assert_eq!(t_975(9), 2.262);
        assert!((t_975(31) - 2.0395).abs() < 1e-3, "{}", t_975(31));
        assert!((t_975(60) - 2.0003).abs() < 1e-3, "{}", t_975(60));
        assert!((t_975(1000) - 1.9623).abs() < 1e-3, "{}", t_975(1000));
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
            ("flash.gauges.erase_max".into(), 7.0),
        ]);
        let r2 = Metrics::from([
            ("host.read_ops".into(), 6.0),
            ("flash.gauges.erase_max".into(), 9.0),
        ]);
        let m = mean(&[r1, r2]);
        assert_eq!(m["host.read_ops"], 5.0);
        assert_eq!(m["flash.gauges.erase_max"], 9.0);
        let mut total = Metrics::new();
        accumulate(&mut total, &m);
        accumulate(&mut total, &m);
        assert_eq!(total["host.read_ops"], 10.0);
        assert_eq!(total["flash.gauges.erase_max"], 9.0);
    }

    #[test]
    fn write_amplification_is_recomputed_from_sums() {
        let mut m = Metrics::from([
            ("d.flash.flash_writes".into(), 30.0),
            ("d.flash.host_flash_writes".into(), 20.0),
            ("d.flash.gauges.write_amplification".into(), 9.0),
        ]);
        finish(&mut m);
        assert_eq!(m["d.flash.gauges.write_amplification"], 1.5);
    }

    #[test]
    fn kinds_come_from_gauges_and_settings_segments() {
        assert_eq!(MetricKind::of("device.host.read_ops"), MetricKind::Counter);
        assert_eq!(
            MetricKind::of("device.settings.page_size"),
            MetricKind::Setting
        );
        assert_eq!(
            MetricKind::of("store.fast.settings.flushing_unit"),
            MetricKind::Setting
        );
        assert_eq!(
            MetricKind::of("filter.device.flash.gauges.erase_max"),
            MetricKind::Gauge
        );
        assert_eq!(MetricKind::of("gauges.elapsed_s_min"), MetricKind::Gauge);
        assert_eq!(MetricKind::of("settings"), MetricKind::Setting);
        // Only whole segments count, and the first one decides.
        assert_eq!(MetricKind::of("store.my_gauges.x"), MetricKind::Counter);
        assert_eq!(MetricKind::of("settingsx.y"), MetricKind::Counter);
        assert_eq!(MetricKind::of("a.gauges.settings.b"), MetricKind::Gauge);
        for k in MetricKind::ALL {
            assert_eq!(MetricKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(MetricKind::parse("level"), None);
    }

    #[test]
    fn flatten_types_every_leaf_by_the_report_shape() {
        #[derive(Serialize)]
        struct Cache {
            hits: u64,
            gauges: CacheGauges,
            settings: CacheSettings,
        }
        #[derive(Serialize)]
        struct CacheGauges {
            resident_pages: u64,
        }
        #[derive(Serialize)]
        struct CacheSettings {
            capacity_pages: u64,
        }
        let c = Cache {
            hits: 3,
            gauges: CacheGauges { resident_pages: 5 },
            settings: CacheSettings { capacity_pages: 64 },
        };
        let m = flatten("store.cache", &c);
        let typed: Vec<(&str, MetricKind, f64)> = kinds(&m).collect();
        assert_eq!(
            typed,
            vec![
                ("store.cache.gauges.resident_pages", MetricKind::Gauge, 5.0),
                ("store.cache.hits", MetricKind::Counter, 3.0),
                (
                    "store.cache.settings.capacity_pages",
                    MetricKind::Setting,
                    64.0
                ),
            ]
        );
        let shape = flatten(
            "shape",
            &AllGauges {
                gauges: &serde_json::json!({"height": 3, "levels": [{"fill": 0.7}]}),
            },
        );
        assert!(
            kinds(&shape).all(|(_, k, _)| k == MetricKind::Gauge),
            "{shape:?}"
        );
        assert_eq!(shape["shape.gauges.levels.0.fill"], 0.7);
    }

    #[test]
    fn settings_and_gauges_are_never_summed_averaged_or_subtracted() {
        // 100 queries × 10 repetitions of a 4 KB page device: the page size stays 4096.
        let one = |reads: f64, resident: f64| {
            Metrics::from([
                ("device.host.read_ops".into(), reads),
                ("device.settings.page_size".into(), 4096.0),
                ("store.cache.gauges.resident_pages".into(), resident),
            ])
        };
        let mut total = Metrics::new();
        for q in 0..100 {
            let reps: Vec<Metrics> = (0..10).map(|r| one(2.0, (q * 10 + r) as f64)).collect();
            accumulate(&mut total, &mean(&reps));
        }
        assert_eq!(total["device.host.read_ops"], 200.0);
        assert_eq!(total["device.settings.page_size"], 4096.0);
        assert_eq!(total["store.cache.gauges.resident_pages"], 999.0);
        // Between two snapshots: counters differ, the others are the later value.
        let d = delta(&one(10.0, 7.0), &one(16.0, 3.0), 2.0);
        assert_eq!(d["device.host.read_ops"], 3.0);
        assert_eq!(d["device.settings.page_size"], 4096.0);
        assert_eq!(d["store.cache.gauges.resident_pages"], 3.0);
    }
}
