//! Slices of an expanded matrix for running one experiment on many machines
//! (`spidx run SPEC --shard K/N`, e.g. one slice per task of a Slurm job array or per pod of
//! a Kubernetes Indexed Job). Part of the experiment layer: it only chooses which of the
//! matrix's runs a process runs; the runs themselves are unchanged.
//!
//! Assignment: the runs are ordered by a hash of their run key (then the key itself) and
//! dealt out in turn, run `i` of that order going to shard `i mod N`. So the N shards are
//! disjoint, together cover the matrix, differ in size by at most one run, and every
//! process that expands the same spec computes the same assignment without talking to the
//! others. The key hash (CRC-32 of the run key) spreads neighbouring configurations (which
//! often cost alike) over the shards.

use std::fmt;
use std::str::FromStr;

use super::matrix::RunConfig;
use crate::{Error, Result};

/// Shard `index` of `count` (0-based: `0/4` … `3/4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Shard {
    /// Shard `index` (0-based) of `count`; `index < count` and `count ≥ 1`.
    pub fn new(index: u32, count: u32) -> Result<Shard> {
        if count == 0 {
            return Err(Error::invalid(
                "shard",
                "the number of shards (N in K/N) must be at least 1",
            ));
        }
        if index >= count {
            return Err(Error::invalid(
                "shard",
                format!(
                    "shard {index}/{count} does not exist: K in K/N counts from 0 to N-1 (0/{count} … {}/{count}); with a 1-based task id write $((ID-1))/{count}",
                    count - 1
                ),
            ));
        }
        Ok(Shard { index, count })
    }

    /// Which shard this is (0-based).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// How many shards there are.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The runs of `runs` that belong to this shard, in their matrix order.
    pub fn select(&self, runs: &[RunConfig]) -> Vec<RunConfig> {
        let mut order: Vec<(u32, &str, usize)> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (crc32fast::hash(r.key.as_bytes()), r.key.as_str(), i))
            .collect();
        order.sort_unstable();
        let mut mine: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(pos, _)| *pos as u64 % self.count as u64 == self.index as u64)
            .map(|(_, (_, _, i))| *i)
            .collect();
        mine.sort_unstable();
        mine.into_iter().map(|i| runs[i].clone()).collect()
    }
}

impl FromStr for Shard {
    type Err = Error;

    /// Parses `K/N`, e.g. `0/4`.
    fn from_str(s: &str) -> Result<Shard> {
        let bad = || {
            Error::invalid(
                "shard",
                format!(
                    "'{s}' is not K/N (two whole numbers, e.g. 0/4 for the first of four shards)"
                ),
            )
        };
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(k, n)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::spec;

    fn runs() -> Vec<RunConfig> {
        let text = r#"
name = "shards"
[dataset]
generate = { distribution = "uniform", count = 10, seed = 1 }
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rtree", split = "quadratic" }, { kind = "rstar" }]
page_size = ["1KB", "2KB", "4KB", "8KB"]
device = ["memory"]
[[workload]]
kind = "construction"
"#;
        let s = spec::parse(text, "shards.toml", std::path::Path::new(".")).expect("spec");
        crate::experiment::matrix::expand(&s, 2).expect("runs")
    }

    #[test]
    fn shards_are_disjoint_cover_the_matrix_and_are_balanced() {
        let all = runs();
        assert_eq!(all.len(), 12);
        for n in 1..=13u32 {
            let mut seen: Vec<String> = Vec::new();
            let mut sizes = Vec::new();
            for k in 0..n {
                let part = Shard::new(k, n).unwrap().select(&all);
                // Matrix order is kept inside a shard.
                assert!(part.windows(2).all(|w| w[0].ordinal < w[1].ordinal));
                sizes.push(part.len());
                seen.extend(part.into_iter().map(|r| r.key));
            }
            let mut want: Vec<String> = all.iter().map(|r| r.key.clone()).collect();
            seen.sort();
            want.sort();
            assert_eq!(seen, want, "N = {n}: every run in exactly one shard");
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "N = {n}: sizes {sizes:?}");
        }
    }

    #[test]
    fn assignment_is_the_same_in_every_process() {
        let a = Shard::new(1, 3).unwrap().select(&runs());
        let b = Shard::new(1, 3).unwrap().select(&runs());
        assert_eq!(
            a.iter().map(|r| &r.key).collect::<Vec<_>>(),
            b.iter().map(|r| &r.key).collect::<Vec<_>>()
        );
    }

    #[test]
    fn bad_shards_are_refused_with_the_rule() {
        for (text, needle) in [
            ("4/4", "counts from 0 to N-1"),
            ("0/0", "at least 1"),
            ("1", "is not K/N"),
            ("a/2", "is not K/N"),
            ("-1/2", "is not K/N"),
            ("1/2/3", "is not K/N"),
        ] {
            let e = text.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
        assert_eq!("2/5".parse::<Shard>().unwrap().to_string(), "2/5");
    }
}
