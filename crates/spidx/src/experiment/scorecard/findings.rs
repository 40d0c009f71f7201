//! The seeds' findings as data: a findings file (TOML, `examples/seeds/findings.toml`)
//! lists each measurable claim of a paper, which runs of which experiments measure it,
//! the metric, the test that decides it and the paper's value. Parsed once with serde,
//! unknown keys refused.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::{Error, Result};

/// A findings file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Findings {
    /// The findings, in the order the scorecard lists them.
    pub finding: Vec<Finding>,
}

/// Runs are chosen by their attributes: `experiment`, `run` (the run's name), `index` (its
/// label), `store` (the store's kind), `store.<key>` (a store option as the results
/// database records it, e.g. `store.flushing_unit`), `page_size` (`4KB`), `device` (its
/// label), `buffer`, `layout`, `workload` (its name), `dims` (the `d=N` of a run with a
/// dimensionality axis). A value is one string or a list of accepted strings.
pub type Selector = BTreeMap<String, OneOrMany>;

/// One accepted value or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One value.
    One(String),
    /// Any of these.
    Many(Vec<String>),
}

impl OneOrMany {
    /// Whether `v` is accepted.
    pub fn accepts(&self, v: &str) -> bool {
        match self {
            OneOrMany::One(s) => s == v,
            OneOrMany::Many(l) => l.iter().any(|s| s == v),
        }
    }

    /// The accepted values.
    pub fn values(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(l) => l.iter().map(String::as_str).collect(),
        }
    }
}

/// Which way a compared metric must move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// `a` below `b` (a gain when the metric is a cost).
    Decrease,
    /// `a` above `b`.
    Increase,
}

/// The test that decides a finding.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "test", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Test {
    /// The relative change `(a − b) / b` of the metric between paired runs (runs of `a` and
    /// `b` that agree on every attribute in `pair_by`): every pair must move in
    /// `direction`; the magnitude holds when every pair lies in `range` widened by
    /// `tolerance` (fractions: −0.98 is −98 %).
    Change {
        /// The runs whose change is measured.
        a: Selector,
        /// The runs they are compared with.
        b: Selector,
        /// Attributes a pair agrees on.
        pair_by: Vec<String>,
        /// Which way the metric moves from `b` to `a`.
        direction: Direction,
        /// The paper's range of the change, if it gives one.
        #[serde(default)]
        range: Option<[f64; 2]>,
        /// Absolute slack around `range` (default 0.05, five percentage points).
        #[serde(default = "default_tolerance")]
        tolerance: f64,
    },
    /// The metric is 0 on every run of `zero` and above 0 on every run of `positive`.
    ZeroVsPositive {
        /// Runs that must count 0.
        zero: Selector,
        /// Runs that must count more.
        positive: Selector,
    },
    /// Among runs that agree on `within`, the one with the lowest metric (the highest with
    /// `highest = true`) has the attributes `over` (their values joined by ` · `, e.g.
    /// `Linear R-tree · 2KB`) equal to one of `expect`, in every group.
    Best {
        /// The runs considered.
        select: Selector,
        /// Attributes a group agrees on.
        within: Vec<String>,
        /// The attributes that tell the winner.
        over: Vec<String>,
        /// The paper's winner(s).
        expect: OneOrMany,
        /// The highest value wins instead of the lowest.
        #[serde(default)]
        highest: bool,
        /// The paper says "for the majority": the paper's winner must win in more than
        /// half of the groups, not in every one.
        #[serde(default)]
        majority: bool,
    },
    /// The ratio `metric(b) / metric(a)` of paired runs (e.g. HDD time over SSD time):
    /// every pair must be above 1 (direction); the magnitude holds when every pair lies
    /// in `range`.
    Ratio {
        /// The runs in the denominator (the faster ones, if the paper's claim holds).
        a: Selector,
        /// The runs in the numerator.
        b: Selector,
        /// Attributes a pair agrees on.
        pair_by: Vec<String>,
        /// The paper's range of the ratio.
        #[serde(default)]
        range: Option<[f64; 2]>,
    },
    /// Along the numeric attribute `along`, per group of `within`, the metric of the runs
    /// of `a` (or, with `minus`, its difference to the paired run of `minus`) must move
    /// in `direction` at every step: a monotone trend, decided on direction alone (the
    /// papers give trends without a magnitude).
    Trend {
        /// The runs followed.
        a: Selector,
        /// Runs subtracted from `a`'s, paired by `pair_by` and `along`.
        #[serde(default)]
        minus: Option<Selector>,
        /// Attributes a pair agrees on (with `minus`).
        #[serde(default)]
        pair_by: Vec<String>,
        /// The numeric attribute.
        along: String,
        /// Attributes a group agrees on.
        within: Vec<String>,
        /// Which way the value moves as `along` grows.
        direction: Direction,
    },
    /// How sensitive each side is to a setting: per side, the spread `max / min` of the
    /// metric over its runs (e.g. the worst over the best page size). The spread of `a`
    /// must be smaller than that of `b` (direction); the magnitude holds when each lies
    /// in its range.
    Spread {
        /// The side that must be less sensitive.
        a: Selector,
        /// The side that must be more sensitive.
        b: Selector,
        /// The paper's spread of `a`.
        #[serde(default)]
        range_a: Option<[f64; 2]>,
        /// The paper's spread of `b`.
        #[serde(default)]
        range_b: Option<[f64; 2]>,
    },
    /// Per value of the attribute `along` (e.g. the workload), the number of pairs in
    /// which `a` moves in `direction` from `b`: there must be such pairs, and most of them
    /// at `expect` (strictly more than at any other value).
    MostOften {
        /// The runs whose change is counted.
        a: Selector,
        /// The runs they are compared with.
        b: Selector,
        /// Attributes a pair agrees on (besides `along`).
        pair_by: Vec<String>,
        /// The attribute the pairs are counted by.
        along: String,
        /// Which way a counted pair moves.
        direction: Direction,
        /// The value of `along` with the most such pairs, as the paper says.
        expect: String,
    },
    /// How much later one group's break-even (as in `crossover`) comes than another's:
    /// `break-even(later) − break-even(earlier)` must be positive (direction) and lie in
    /// `range` (magnitude).
    CrossoverShift {
        /// The runs that are cheaper first (the index).
        a: Selector,
        /// The runs they are compared with (the scan).
        b: Selector,
        /// Attributes a pair agrees on (besides `along`).
        pair_by: Vec<String>,
        /// The numeric attribute.
        along: String,
        /// The group whose break-even comes first (a selector on the runs of `a`).
        earlier: Selector,
        /// The group whose break-even comes later.
        later: Selector,
        /// The paper's range of the shift.
        #[serde(default)]
        range: Option<[f64; 2]>,
    },
    /// The ratio `metric(b) / metric(a)` between paired runs, along the numeric attribute
    /// `along` (e.g. the streams of a workload name): it must grow from the smallest to
    /// the largest value of `along` (direction), and its value at the largest must lie in
    /// `range` (magnitude).
    RatioGrows {
        /// The runs in the denominator.
        a: Selector,
        /// The runs in the numerator.
        b: Selector,
        /// Attributes a pair agrees on.
        pair_by: Vec<String>,
        /// The numeric attribute the ratio is followed along.
        along: String,
        /// The paper's range of the ratio at the largest `along`.
        #[serde(default)]
        range: Option<[f64; 2]>,
    },
    /// Where `a` stops being cheaper than `b` along the numeric attribute `along` (the
    /// index/scan break-even), per group of `within`: between the last value at which
    /// `metric(a) <= metric(b)` and the first at which `metric(a) > metric(b)`, the point
    /// where the straight line through the two differences crosses zero (linear
    /// interpolation between the grid's points). The direction holds when every group has
    /// one, the magnitude when it lies in `range`.
    Crossover {
        /// The runs that are cheaper first (the index).
        a: Selector,
        /// The runs they are compared with (the scan).
        b: Selector,
        /// Attributes a pair agrees on (besides `along`).
        pair_by: Vec<String>,
        /// The numeric attribute.
        along: String,
        /// Attributes a group agrees on (a break-even is found per group).
        within: Vec<String>,
        /// The paper's range of the break-even.
        #[serde(default)]
        range: Option<[f64; 2]>,
    },
}

impl Test {
    /// Every selector of the test (which observations it reads), e.g. to tell whether a
    /// finding reads a given device.
    pub fn selectors(&self) -> Vec<&Selector> {
        match self {
            Test::Change { a, b, .. }
            | Test::Ratio { a, b, .. }
            | Test::Spread { a, b, .. }
            | Test::MostOften { a, b, .. }
            | Test::RatioGrows { a, b, .. }
            | Test::Crossover { a, b, .. } => vec![a, b],
            Test::CrossoverShift {
                a,
                b,
                earlier,
                later,
                ..
            } => vec![a, b, earlier, later],
            Test::ZeroVsPositive { zero, positive } => vec![zero, positive],
            Test::Best { select, .. } => vec![select],
            Test::Trend { a, minus, .. } => std::iter::once(a).chain(minus.iter()).collect(),
        }
    }

    /// Whether some selector of the test reads runs on `device` (a device label).
    pub fn reads_device(&self, device: &str) -> bool {
        self.selectors()
            .iter()
            .any(|s| s.get("device").is_some_and(|d| d.accepts(device)))
    }
}

fn default_tolerance() -> f64 {
    0.05
}

/// One measurable claim of a paper. (Unknown keys are refused by the test's table, into
/// which every key that is not the finding's own is flattened.)
#[derive(Debug, Clone, Deserialize)]
pub struct Finding {
    /// A short unique id, e.g. `flashsim-1`.
    pub id: String,
    /// The paper (`flashsim`, `jidm`, `geoinfo`, `efind`, `emrich`).
    pub paper: String,
    /// Where in the paper (section, figure).
    #[serde(rename = "where")]
    pub place: String,
    /// The claim, in a sentence.
    pub claim: String,
    /// The paper's value, as the paper gives it.
    pub paper_value: String,
    /// The experiments (by name) whose runs measure it.
    pub experiments: Vec<String>,
    /// The metric compared (a metric name of the results database, e.g.
    /// `device.flash.flash_writes`, `elapsed_s`, or a sum of them written `a + b`).
    pub metric: String,
    /// For a time metric that includes CPU time (`elapsed_s` on a simulated device): also
    /// decide the finding on the modelled device time alone (`device_s`).
    #[serde(default)]
    pub device_time_too: bool,
    /// Which setting spidx used where the paper is silent, and why.
    #[serde(default)]
    pub setting: Option<String>,
    /// The test.
    #[serde(flatten)]
    pub test: Test,
}

impl Findings {
    /// Reads and checks a findings file.
    pub fn load(path: &Path) -> Result<Findings> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Findings::parse(&text, &path.display().to_string())
    }

    /// Parses a findings file's text (`file` names it in errors).
    pub fn parse(text: &str, file: &str) -> Result<Findings> {
        let f: Findings =
            toml::from_str(text).map_err(|e| Error::invalid(file.to_string(), e.to_string()))?;
        let mut seen = std::collections::HashSet::new();
        for x in &f.finding {
            if !seen.insert(x.id.as_str()) {
                return Err(Error::invalid(
                    file.to_string(),
                    format!("finding id '{}' appears twice", x.id),
                ));
            }
            if x.experiments.is_empty() {
                return Err(Error::invalid(
                    format!("{file}: finding {}", x.id),
                    "names no experiment",
                ));
            }
            let ranges = match &x.test {
                Test::Change { range, .. }
                | Test::RatioGrows { range, .. }
                | Test::Ratio { range, .. }
                | Test::CrossoverShift { range, .. }
                | Test::Crossover { range, .. } => range.iter().collect::<Vec<_>>(),
                Test::Spread {
                    range_a, range_b, ..
                } => range_a.iter().chain(range_b.iter()).collect(),
                _ => Vec::new(),
            };
            for r in ranges {
                if r[0].is_nan() || r[1].is_nan() || r[0] > r[1] {
                    return Err(Error::invalid(
                        format!("{file}: finding {}", x.id),
                        format!("range [{}, {}] is not ordered", r[0], r[1]),
                    ));
                }
            }
        }
        Ok(f)
    }
}
