//! The host's share of a simulated run's elapsed time (architecture §3): a **modelled**
//! cost per operation, never the measured CPU time, so that one spec gives the same elapsed
//! time on any machine and under any load.
//!
//! A phase of work on a [`SpatialIndex`](super::SpatialIndex) counts what the host did
//! ([`HostOps`]: tree operations, node reads and the entries they held, node writes,
//! filter candidates, object records read or written, results, device requests); a
//! [`HostProfile`] prices each count. On a simulated device
//! `elapsed_s = device_s (+ log_device_s) + host_s` with `host_s = profile · ops`; the
//! measured CPU time stays in the results as `cpu_s`, beside it. On a real device the
//! elapsed time is the wall clock and `host_s` is not computed.
//!
//! The counts come from the layers that own them: node reads, entries read and node writes
//! from the tree's own statistics, device requests from the device's counters, the rest
//! from the spatial layer (which runs the operations). Profiles are named presets
//! ([`HostProfile::preset`]) or a TOML table of the same fields; `spidx calibrate --host`
//! fits one to the machine it runs on (see `docs/devices.md`, "Host profiles").

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// What the host did during a phase: counts, summed over the phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostOps {
    /// Operations on the index: insertions (one per object, also in a bulk load),
    /// deletions, updates and queries.
    pub operations: u64,
    /// Nodes the tree read (through the store: a buffer hit counts as well).
    pub node_reads: u64,
    /// Entries held by the nodes read (what a traversal scans).
    pub entries_read: u64,
    /// Nodes the tree wrote (modifications, rewrites, creations).
    pub node_writes: u64,
    /// Entries that passed the filter step.
    pub candidates: u64,
    /// Object records read (refinement) or written (a geometry stored).
    pub records: u64,
    /// Objects in the answers.
    pub results: u64,
    /// Requests issued to the devices (reads, writes and syncs).
    pub requests: u64,
}

impl HostOps {
    /// The counts from `before` to `self` (saturating: counts never go back).
    pub fn since(&self, before: &HostOps) -> HostOps {
        HostOps {
            operations: self.operations.saturating_sub(before.operations),
            node_reads: self.node_reads.saturating_sub(before.node_reads),
            entries_read: self.entries_read.saturating_sub(before.entries_read),
            node_writes: self.node_writes.saturating_sub(before.node_writes),
            candidates: self.candidates.saturating_sub(before.candidates),
            records: self.records.saturating_sub(before.records),
            results: self.results.saturating_sub(before.results),
            requests: self.requests.saturating_sub(before.requests),
        }
    }

    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &HostOps) {
        self.operations += o.operations;
        self.node_reads += o.node_reads;
        self.entries_read += o.entries_read;
        self.node_writes += o.node_writes;
        self.candidates += o.candidates;
        self.records += o.records;
        self.results += o.results;
        self.requests += o.requests;
    }
}

/// The price of each count of [`HostOps`], in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostProfile {
    /// Per operation on the index (the fixed cost of an insertion, deletion or query).
    pub operation_us: f64,
    /// Per node read (locating and decoding a page).
    pub node_read_us: f64,
    /// Per entry of a node read (testing it).
    pub entry_us: f64,
    /// Per node written (encoding a page and handing it to the store).
    pub node_write_us: f64,
    /// Per filter candidate.
    pub candidate_us: f64,
    /// Per object record read or written (decoding or encoding a geometry, testing it).
    pub record_us: f64,
    /// Per object in an answer.
    pub result_us: f64,
    /// Per device request: the host's I/O path (system calls, submission, completion).
    pub request_us: f64,
}

/// The names [`HostProfile::preset`] knows, with what each one is.
pub const HOST_PRESETS: &[(&str, &str)] = &[
    (
        "none",
        "no host cost: elapsed time is the device time (the default)",
    ),
    (
        "festival-i7-4770",
        "the seeds' host: the software cost of each direct I/O request FESTIval issues; the papers give no per-operation CPU figures, so operations are not priced",
    ),
];

/// The default profile's name: no host cost until a profile is chosen or fitted
/// (`spidx calibrate --host`), so that no unmeasured price enters a default result.
pub const DEFAULT_HOST: &str = "none";

/// The software cost of one direct 4 KB request on a stock Linux I/O stack of the seeds'
/// years, µs: the Moneta project (Caulfield, Swanson et al., UCSD, 2010) cut a 4 KB read
/// from 25.5 µs to 7.9 µs by removing the operating system's I/O software from its path.
pub const STOCK_LINUX_REQUEST_US: f64 = 25.5 - 7.9;

impl HostProfile {
    /// The profile that prices nothing (elapsed time = device time).
    pub fn none() -> HostProfile {
        HostProfile {
            operation_us: 0.0,
            node_read_us: 0.0,
            entry_us: 0.0,
            node_write_us: 0.0,
            candidate_us: 0.0,
            record_us: 0.0,
            result_us: 0.0,
            request_us: 0.0,
        }
    }

    /// The seeds' host as far as sources give it: FESTIval opens the index file with
    /// `O_DIRECT`, seeks, reads or writes, and closes it for every request
    /// (accarniel/FESTIval, `main/io_handler.c`), so every request pays the kernel's I/O
    /// software: [`STOCK_LINUX_REQUEST_US`]. The open and close themselves have no
    /// published figure for the seeds' CPU and are left out; so are the per-operation
    /// costs of FESTIval and PostgreSQL, which the papers do not give (fitting them to the
    /// papers' times would fit the findings the scorecard scores).
    pub fn festival_i7_4770() -> HostProfile {
        HostProfile {
            request_us: STOCK_LINUX_REQUEST_US,
            ..HostProfile::none()
        }
    }

    /// The named preset (see [`HOST_PRESETS`]).
    pub fn preset(name: &str) -> Result<HostProfile> {
        match name {
            "festival-i7-4770" => Ok(HostProfile::festival_i7_4770()),
            "none" => Ok(HostProfile::none()),
            _ => Err(Error::invalid(
                "host",
                format!(
                    "unknown host profile {name:?}; known: {}",
                    HOST_PRESETS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// The fields with their values, in declaration order (for listings and checks).
    pub fn fields(&self) -> [(&'static str, f64); 8] {
        [
            ("operation_us", self.operation_us),
            ("node_read_us", self.node_read_us),
            ("entry_us", self.entry_us),
            ("node_write_us", self.node_write_us),
            ("candidate_us", self.candidate_us),
            ("record_us", self.record_us),
            ("result_us", self.result_us),
            ("request_us", self.request_us),
        ]
    }

    /// Checks every price: finite, not negative, at most one second.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in self.fields() {
            if !(v.is_finite() && (0.0..=1e6).contains(&v)) {
                return Err(Error::invalid(
                    format!("host {name}"),
                    format!("{name} = {v} µs; must be between 0 and 1000000 µs"),
                ));
            }
        }
        Ok(())
    }

    /// The modelled host time of `ops`, in seconds.
    pub fn cost_s(&self, ops: &HostOps) -> f64 {
        let us = ops.operations as f64 * self.operation_us
            + ops.node_reads as f64 * self.node_read_us
            + ops.entries_read as f64 * self.entry_us
            + ops.node_writes as f64 * self.node_write_us
            + ops.candidates as f64 * self.candidate_us
            + ops.records as f64 * self.record_us
            + ops.results as f64 * self.result_us
            + ops.requests as f64 * self.request_us;
        us * 1e-6
    }
}

impl Default for HostProfile {
    fn default() -> Self {
        HostProfile::none()
    }
}

/// A host profile as a spec or the command line gives it: a preset's name or a table of
/// every field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HostChoice {
    /// A preset (see [`HOST_PRESETS`]).
    Named(String),
    /// Every price given.
    Custom(HostProfile),
}

impl HostChoice {
    /// The profile chosen, checked.
    pub fn profile(&self) -> Result<HostProfile> {
        let p = match self {
            HostChoice::Named(n) => HostProfile::preset(n)?,
            HostChoice::Custom(p) => p.clone(),
        };
        p.validate()?;
        Ok(p)
    }

    /// Whether this is the default profile (by name).
    pub fn is_default(&self) -> bool {
        matches!(self, HostChoice::Named(n) if n == DEFAULT_HOST)
    }

    /// How run names and reports show it.
    pub fn label(&self) -> String {
        match self {
            HostChoice::Named(n) => n.clone(),
            HostChoice::Custom(_) => "custom".into(),
        }
    }
}

impl Default for HostChoice {
    fn default() -> Self {
        HostChoice::Named(DEFAULT_HOST.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> HostOps {
        HostOps {
            operations: 10,
            node_reads: 30,
            entries_read: 3000,
            node_writes: 4,
            candidates: 50,
            records: 20,
            results: 7,
            requests: 9,
        }
    }

    #[test]
    fn cost_is_the_sum_of_counts_times_prices() {
        let p = HostProfile {
            operation_us: 1.0,
            node_read_us: 2.0,
            entry_us: 0.5,
            node_write_us: 3.0,
            candidate_us: 0.25,
            record_us: 4.0,
            result_us: 1.5,
            request_us: 10.0,
        };
        let us = 10.0 + 60.0 + 1500.0 + 12.0 + 12.5 + 80.0 + 10.5 + 90.0;
        assert!((p.cost_s(&ops()) - us * 1e-6).abs() < 1e-15);
        assert_eq!(HostProfile::none().cost_s(&ops()), 0.0);
    }

    #[test]
    fn since_and_add_are_inverse() {
        let a = ops();
        let mut b = a;
        b.add(&a);
        assert_eq!(b.since(&a), a);
        assert_eq!(a.since(&b), HostOps::default());
    }

    #[test]
    fn presets_are_known_and_valid_and_bad_prices_are_refused_by_name() {
        for (name, _) in HOST_PRESETS {
            HostChoice::Named(name.to_string()).profile().unwrap();
        }
        let e = HostProfile::preset("pentium").unwrap_err().to_string();
        assert!(
            e.contains("pentium") && e.contains("festival-i7-4770"),
            "{e}"
        );
        let bad = HostProfile {
            entry_us: -1.0,
            ..HostProfile::none()
        };
        let e = HostChoice::Custom(bad).profile().unwrap_err().to_string();
        assert!(e.contains("entry_us"), "{e}");
        let nan = HostProfile {
            request_us: f64::NAN,
            ..HostProfile::none()
        };
        assert!(nan.validate().is_err());
    }

    #[test]
    fn a_table_with_an_unknown_or_missing_field_is_refused() {
        assert!(toml::from_str::<HostProfile>("operation_us = 1.0\n").is_err());
        let full = "operation_us = 1.0\nnode_read_us = 0.0\nentry_us = 0.0\nnode_write_us = 0.0\ncandidate_us = 0.0\nrecord_us = 0.0\nresult_us = 0.0\nrequest_us = 0.0\n";
        let p: HostProfile = toml::from_str(full).unwrap();
        assert_eq!(p.operation_us, 1.0);
        assert!(toml::from_str::<HostProfile>(&format!("{full}typo_us = 1.0\n")).is_err());
    }
}
