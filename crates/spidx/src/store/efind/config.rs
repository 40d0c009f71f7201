//! [`EfindConfig`]: the options of the eFIND store as users write them (the `store` table of
//! a spec, `--store efind` flags), with their validation. Every option is checked with a
//! clear error; an option that does not apply to the others chosen (e.g. `kin` with an LRU
//! read buffer, a read buffer share with policy `none`) is an error, never ignored.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::cache::{CachePolicy, DEFAULT_KIN_PCT, DEFAULT_KOUT_PCT, MAX_KOUT_PCT};
use crate::store::buffered::options::{LogOptions, PolicyOptions};
use crate::store::buffered::placement::LogPlacement;
use crate::store::buffered::BufferPolicy;
use crate::store::log::LogSync;
use crate::units::{format_size, parse_size};
use crate::{Error, Result};

/// Largest accepted flushing unit, in nodes.
pub(crate) const MAX_FLUSHING_UNIT: usize = 1024;

/// eFIND's flushing policies (Carniel et al. 2019; see `docs/efind.md` for the formulas).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushPolicy {
    /// Modifications, over all buffered nodes.
    M,
    /// Modifications, over the oldest `timestamp_perc` % of buffered nodes.
    Mt,
    /// Modifications × (height + 1), over the oldest nodes.
    Mth,
    /// MTH × modified-area ratio.
    Mtha,
    /// MTHA × overlap ratio.
    Mthao,
}

impl FlushPolicy {
    /// Every policy.
    pub const ALL: [FlushPolicy; 5] = [
        FlushPolicy::M,
        FlushPolicy::Mt,
        FlushPolicy::Mth,
        FlushPolicy::Mtha,
        FlushPolicy::Mthao,
    ];

    /// The name users write.
    pub fn name(self) -> &'static str {
        match self {
            FlushPolicy::M => "m",
            FlushPolicy::Mt => "mt",
            FlushPolicy::Mth => "mth",
            FlushPolicy::Mtha => "mtha",
            FlushPolicy::Mthao => "mthao",
        }
    }

    /// Parses a policy name (case-insensitive).
    pub fn parse(text: &str) -> Result<FlushPolicy> {
        let t = text.trim().to_ascii_lowercase();
        FlushPolicy::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                Error::invalid(
                    "eFIND flush policy",
                    format!("'{text}' is not a policy; use m, mt, mth, mtha or mthao"),
                )
            })
    }
}

/// Which temporal controls are on (Carniel et al. 2019, Goal 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TemporalControl {
    /// Neither.
    None,
    /// Nodes flushed while recently read are kept in the read buffer.
    Reads,
    /// Flushing units are chosen sequential to, or strided from, recent flushes.
    Writes,
    /// Both.
    Both,
}

impl TemporalControl {
    /// Parses `none`, `reads`, `writes` or `both`.
    pub fn parse(text: &str) -> Result<TemporalControl> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(TemporalControl::None),
            "reads" => Ok(TemporalControl::Reads),
            "writes" => Ok(TemporalControl::Writes),
            "both" => Ok(TemporalControl::Both),
            _ => Err(Error::invalid(
                "eFIND temporal control",
                format!("'{text}' is not one of none, reads, writes, both"),
            )),
        }
    }

    /// Whether the read control is on.
    pub fn reads(self) -> bool {
        matches!(self, TemporalControl::Reads | TemporalControl::Both)
    }

    /// Whether the write control is on.
    pub fn writes(self) -> bool {
        matches!(self, TemporalControl::Writes | TemporalControl::Both)
    }
}

/// A byte size written as a string (`"512KB"`) or a number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(self.0))
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Size, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Size(n)),
            Raw::S(s) => parse_size("eFIND buffer", &s)
                .map(Size)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

/// The eFIND store's options. Optional fields take the defaults listed in `docs/efind.md`
/// when they apply; given where they do not apply, they are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EfindConfig {
    /// Total buffer (write buffer plus read buffer), in bytes; also read as `write_buffer`,
    /// the key (and `spidx build --write-buffer`) every buffered store shares.
    #[serde(alias = "write_buffer")]
    pub buffer: Size,
    /// Share of `buffer` given to the read buffer, in percent (default 20 with a read
    /// policy, 0 with `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_buffer_perc: Option<f64>,
    /// Read-buffer replacement policy: none, lru, hlru, s2q, 2q (default lru).
    #[serde(default = "default_read_policy")]
    pub read_policy: CachePolicy,
    /// 2Q's `Kin` / S2Q's `A1` threshold in percent of the read buffer (default 25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_kin: Option<f64>,
    /// 2Q's `Kout` in percent of the read buffer (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_kout: Option<f64>,
    /// Temporal control: none, reads, writes, both (default both).
    #[serde(default = "default_tc")]
    pub temporal_control: TemporalControl,
    /// Length of the FIFO of recently read pages (default 64; temporal control of reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_tc_size: Option<usize>,
    /// Length of the FIFO of recently flushed pages (default 16; temporal control of writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_tc_size: Option<usize>,
    /// A candidate page at most this many pages from a recently flushed one is sequential
    /// to it (default 4; temporal control of writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_distance: Option<u64>,
    /// A candidate page at least this many pages from every recently flushed one is
    /// strided (default 64; temporal control of writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stride: Option<u64>,
    /// Share of the buffered nodes, oldest first, that are flushing candidates (default 50;
    /// not used by policy `m`, which considers all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_perc: Option<f64>,
    /// Nodes per flushing unit (default 5).
    #[serde(default = "default_unit")]
    pub flushing_unit: usize,
    /// Flushing policy (default mthao).
    #[serde(default = "default_policy")]
    pub flush_policy: FlushPolicy,
    /// Size of the log, carved from the end of the node partition (default: the larger of
    /// 1 MB and the minimum, see `docs/efind.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_size: Option<Size>,
    /// When logged operations reach stable storage: each-op, group:N or none (default each-op).
    #[serde(default)]
    pub log_sync: LogSync,
    /// Where the log is written: `same` (default), `separate:<device>` or `uncounted`
    /// (see [`LogPlacement`]).
    #[serde(default, skip_serializing_if = "LogPlacement::is_same")]
    pub log_device: LogPlacement,
}

fn default_read_policy() -> CachePolicy {
    CachePolicy::Lru
}
fn default_tc() -> TemporalControl {
    TemporalControl::Both
}
fn default_unit() -> usize {
    5
}
fn default_policy() -> FlushPolicy {
    FlushPolicy::Mthao
}

/// The options with every default filled in and checked against a page size.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Write-buffer capacity in bytes.
    pub write_bytes: u64,
    /// Read-buffer capacity in pages.
    pub read_pages: usize,
    /// Read policy.
    pub read_policy: CachePolicy,
    /// `Kin` percent.
    pub kin: f64,
    /// `Kout` percent.
    pub kout: f64,
    /// Temporal control.
    pub tc: TemporalControl,
    /// Read FIFO length.
    pub read_tc_size: usize,
    /// Write FIFO length.
    pub write_tc_size: usize,
    /// Sequential distance.
    pub min_distance: u64,
    /// Stride.
    pub stride: u64,
    /// Candidate share (0-100).
    pub timestamp_perc: f64,
    /// Flushing unit in nodes.
    pub unit: usize,
    /// Flushing policy.
    pub policy: FlushPolicy,
    /// Log pages.
    pub log_pages: u64,
    /// Log durability.
    pub log_sync: LogSync,
}

impl EfindConfig {
    /// A configuration with `buffer` bytes and every other option at its default.
    pub fn with_buffer(buffer: u64) -> EfindConfig {
        EfindConfig {
            buffer: Size(buffer),
            read_buffer_perc: None,
            read_policy: default_read_policy(),
            read_kin: None,
            read_kout: None,
            temporal_control: default_tc(),
            read_tc_size: None,
            write_tc_size: None,
            min_distance: None,
            stride: None,
            timestamp_perc: None,
            flushing_unit: default_unit(),
            flush_policy: default_policy(),
            log_size: None,
            log_sync: LogSync::default(),
            log_device: LogPlacement::Same,
        }
    }

    /// Checks every option against the node page size and fills in the defaults.
    pub fn resolve(&self, page_size: usize) -> Result<Resolved> {
        let bad = |m: String| Err(Error::invalid("eFIND store", m));
        let pct = |name: &str, v: f64| -> Result<f64> {
            if v.is_finite() && (0.0..=100.0).contains(&v) {
                Ok(v)
            } else {
                Err(Error::invalid(
                    "eFIND store",
                    format!("{name} = {v} is outside 0-100 %"),
                ))
            }
        };
        let total = self.buffer.0;
        if total == 0 {
            return bad("buffer = 0: give the total buffer, e.g. buffer = \"512KB\"".into());
        }
        let policy = self.read_policy;
        let perc = match (policy, self.read_buffer_perc) {
            (CachePolicy::None, Some(p)) if p != 0.0 => {
                pct("read_buffer_perc", p)?;
                return bad(format!(
                    "read_buffer_perc = {p} with read_policy none: choose a read policy or drop the share"
                ));
            }
            (CachePolicy::None, _) => 0.0,
            (_, Some(p)) => pct("read_buffer_perc", p)?,
            (_, None) => 20.0,
        };
        if policy != CachePolicy::None && perc == 0.0 {
            return bad(format!(
                "read_policy {policy} with read_buffer_perc = 0: give the read buffer a share or use read_policy none"
            ));
        }
        let read_bytes = (total as f64 * perc / 100.0).floor() as u64;
        let read_pages = (read_bytes / page_size as u64) as usize;
        if policy != CachePolicy::None && read_pages == 0 {
            return bad(format!(
                "the read buffer ({perc} % of {}) holds less than one {} page",
                format_size(total),
                format_size(page_size as u64)
            ));
        }
        let write_bytes = total - read_bytes;
        if write_bytes == 0 {
            return bad(format!(
                "read_buffer_perc = {perc} leaves no write buffer out of {}",
                format_size(total)
            ));
        }
        let kin_ok = matches!(policy, CachePolicy::S2q | CachePolicy::TwoQ);
        if self.read_kin.is_some() && !kin_ok {
            return bad(format!(
                "read_kin applies to read_policy s2q or 2q, not {policy}"
            ));
        }
        if self.read_kout.is_some() && policy != CachePolicy::TwoQ {
            return bad(format!("read_kout applies to read_policy 2q, not {policy}"));
        }
        let kin = pct("read_kin", self.read_kin.unwrap_or(DEFAULT_KIN_PCT))?;
        let kout = self.read_kout.unwrap_or(DEFAULT_KOUT_PCT);
        if !(0.0..=MAX_KOUT_PCT).contains(&kout) {
            return bad(format!("read_kout = {kout} is outside 0-{MAX_KOUT_PCT} %"));
        }
        let tc = self.temporal_control;
        if self.read_tc_size.is_some() && !tc.reads() {
            return bad("read_tc_size applies to temporal_control reads or both".into());
        }
        if tc.reads() && policy == CachePolicy::None {
            return bad(
                "temporal control of reads keeps nodes in the read buffer: it needs a read policy (or use temporal_control writes/none)"
                    .into(),
            );
        }
        for (set, name) in [
            (self.write_tc_size.is_some(), "write_tc_size"),
            (self.min_distance.is_some(), "min_distance"),
            (self.stride.is_some(), "stride"),
        ] {
            if set && !tc.writes() {
                return bad(format!("{name} applies to temporal_control writes or both"));
            }
        }
        let read_tc_size = self.read_tc_size.unwrap_or(64);
        let write_tc_size = self.write_tc_size.unwrap_or(16);
        if tc.reads() && read_tc_size == 0 {
            return bad("read_tc_size = 0: the FIFO of read pages needs at least one".into());
        }
        if tc.writes() && write_tc_size == 0 {
            return bad("write_tc_size = 0: the FIFO of flushed pages needs at least one".into());
        }
        let min_distance = self.min_distance.unwrap_or(4);
        let stride = self.stride.unwrap_or(64);
        if tc.writes() && stride <= min_distance {
            return bad(format!(
                "stride = {stride} must exceed min_distance = {min_distance}"
            ));
        }
        if self.timestamp_perc.is_some() && self.flush_policy == FlushPolicy::M {
            return bad(
                "timestamp_perc does not apply to flush_policy m (it considers every buffered node)"
                    .into(),
            );
        }
        let timestamp_perc = self.timestamp_perc.unwrap_or(50.0);
        pct("timestamp_perc", timestamp_perc)?;
        if timestamp_perc == 0.0 {
            return bad("timestamp_perc = 0 leaves no flushing candidates".into());
        }
        let unit = self.flushing_unit;
        if unit == 0 || unit > MAX_FLUSHING_UNIT {
            return bad(format!(
                "flushing_unit = {unit} is outside 1-{MAX_FLUSHING_UNIT} nodes"
            ));
        }
        // The log is compacted when half of a region is used; a region must hold the snapshot
        // of the write buffer, one operation's records and one flushing unit's entries twice.
        let ps = page_size as u64;
        let min_log = 2 * ps + 4 * (2 * write_bytes + (unit as u64 + 8) * ps);
        let min_log = min_log.div_ceil(ps) * ps;
        let log_bytes = match self.log_size {
            Some(Size(b)) if b < min_log => {
                return bad(format!(
                    "log_size = {} is too small for a {} buffer, flushing units of {unit} and {} pages: give at least {}",
                    format_size(b),
                    format_size(total),
                    format_size(ps),
                    format_size(min_log)
                ))
            }
            Some(Size(b)) => b,
            None => min_log.max(1 << 20),
        };
        Ok(Resolved {
            log_pages: log_bytes / ps,
            log_sync: self.log_sync,
            write_bytes,
            read_pages,
            read_policy: policy,
            kin,
            kout,
            tc,
            read_tc_size,
            write_tc_size,
            min_distance,
            stride,
            timestamp_perc,
            unit,
            policy: self.flush_policy,
        })
    }
}

impl LogOptions for EfindConfig {
    fn log_sync(&self) -> LogSync {
        self.log_sync
    }

    fn log_device(&self) -> &LogPlacement {
        &self.log_device
    }
}

impl PolicyOptions for EfindConfig {
    fn name(&self) -> &'static str {
        "eFIND"
    }

    fn validate(&self, page_size: usize) -> Result<()> {
        self.resolve(page_size).map(|_| ())
    }

    fn log_pages(&self, page_size: usize) -> Result<u64> {
        Ok(self.resolve(page_size)?.log_pages)
    }

    /// e.g. `eFIND(512KB,mthao)`.
    fn label(&self) -> String {
        format!("eFIND({},{})", self.buffer, self.flush_policy.name())
    }

    fn policy(&self, page_size: usize) -> Result<Box<dyn BufferPolicy>> {
        Ok(Box::new(super::EfindPolicy::new(self, page_size)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_options_are_clear_errors() {
        let base = EfindConfig::with_buffer(512 << 10);
        base.resolve(4096).unwrap();
        let cases: Vec<(EfindConfig, &str)> = vec![
            (
                EfindConfig {
                    read_buffer_perc: Some(120.0),
                    ..base.clone()
                },
                "outside 0-100",
            ),
            (
                EfindConfig {
                    read_buffer_perc: Some(-1.0),
                    ..base.clone()
                },
                "outside 0-100",
            ),
            (
                EfindConfig {
                    read_buffer_perc: Some(100.0),
                    ..base.clone()
                },
                "no write buffer",
            ),
            (
                EfindConfig {
                    timestamp_perc: Some(101.0),
                    ..base.clone()
                },
                "timestamp_perc",
            ),
            (
                EfindConfig {
                    flushing_unit: 0,
                    ..base.clone()
                },
                "flushing_unit",
            ),
            (
                EfindConfig {
                    flushing_unit: 5000,
                    ..base.clone()
                },
                "flushing_unit",
            ),
            (
                EfindConfig {
                    read_kin: Some(10.0),
                    ..base.clone()
                },
                "read_kin",
            ),
            (
                EfindConfig {
                    read_policy: CachePolicy::None,
                    read_buffer_perc: Some(10.0),
                    ..base.clone()
                },
                "read_policy none",
            ),
            (
                EfindConfig {
                    read_policy: CachePolicy::None,
                    ..base.clone()
                },
                "needs a read policy",
            ),
            (
                EfindConfig {
                    temporal_control: TemporalControl::Reads,
                    stride: Some(9),
                    ..base.clone()
                },
                "stride applies",
            ),
            (
                EfindConfig {
                    buffer: Size(8192),
                    ..base.clone()
                },
                "less than one",
            ),
        ];
        for (cfg, want) in cases {
            let err = cfg.resolve(4096).unwrap_err().to_string();
            assert!(err.contains(want), "{err} should mention {want}");
        }
        assert!(FlushPolicy::parse("mthx").is_err());
        assert!(TemporalControl::parse("sometimes").is_err());
    }
}
