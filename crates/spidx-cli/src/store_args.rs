//! Options of the flash-aware node stores (`--store efind`): parsed into a
//! [`StoreConfig`]. Every flag is validated; a flag given for a store it does not apply to
//! is an error, never silently ignored.

use anyhow::{bail, Result};
use clap::Args;
use spidx::cache::CachePolicy;
use spidx::store::efind::{EfindConfig, FlushPolicy, Size, TemporalControl};
use spidx::store::log::LogSync;
use spidx::store::StoreConfig;
use spidx::units::parse_size;

/// Flags of the flash-aware stores.
#[derive(Args, Debug, Default)]
pub struct StoreArgs {
    /// eFIND: total buffer, write plus read buffer (e.g. 512KB). Not the page cache of --buffer.
    #[arg(long)]
    pub write_buffer: Option<String>,
    /// eFIND: share of --write-buffer given to the read buffer, 0-100 (default 20).
    #[arg(long)]
    pub read_buffer_perc: Option<f64>,
    /// eFIND: read-buffer policy: none, lru, hlru, s2q or 2q (default lru).
    #[arg(long)]
    pub read_policy: Option<String>,
    /// eFIND: 2Q's Kin / S2Q's A1 threshold, percent of the read buffer (default 25).
    #[arg(long)]
    pub read_kin: Option<f64>,
    /// eFIND: 2Q's Kout, percent of the read buffer (default 50).
    #[arg(long)]
    pub read_kout: Option<f64>,
    /// eFIND: temporal control: none, reads, writes or both (default both).
    #[arg(long)]
    pub temporal_control: Option<String>,
    /// eFIND: FIFO length of recently read pages (default 64).
    #[arg(long)]
    pub read_tc_size: Option<usize>,
    /// eFIND: FIFO length of recently flushed pages (default 16).
    #[arg(long)]
    pub write_tc_size: Option<usize>,
    /// eFIND: pages within which a candidate is sequential to a recent flush (default 4).
    #[arg(long)]
    pub min_distance: Option<u64>,
    /// eFIND: pages beyond which a candidate is strided from recent flushes (default 64).
    #[arg(long)]
    pub stride: Option<u64>,
    /// eFIND: share of the oldest buffered nodes that are flushing candidates (default 50).
    #[arg(long)]
    pub timestamp_perc: Option<f64>,
    /// eFIND: nodes per flushing unit (default 5).
    #[arg(long)]
    pub flushing_unit: Option<usize>,
    /// eFIND: flushing policy: m, mt, mth, mtha or mthao (default mthao).
    #[arg(long)]
    pub flush_policy: Option<String>,
    /// eFIND: log size, carved from the end of the node device (default max(1MB, minimum)).
    #[arg(long)]
    pub log_size: Option<String>,
    /// eFIND: log durability: each-op, group:N or none (default each-op).
    #[arg(long)]
    pub log_sync: Option<String>,
}

impl StoreArgs {
    fn given(&self) -> Vec<&'static str> {
        [
            (self.write_buffer.is_some(), "--write-buffer"),
            (self.read_buffer_perc.is_some(), "--read-buffer-perc"),
            (self.read_policy.is_some(), "--read-policy"),
            (self.read_kin.is_some(), "--read-kin"),
            (self.read_kout.is_some(), "--read-kout"),
            (self.temporal_control.is_some(), "--temporal-control"),
            (self.read_tc_size.is_some(), "--read-tc-size"),
            (self.write_tc_size.is_some(), "--write-tc-size"),
            (self.min_distance.is_some(), "--min-distance"),
            (self.stride.is_some(), "--stride"),
            (self.timestamp_perc.is_some(), "--timestamp-perc"),
            (self.flushing_unit.is_some(), "--flushing-unit"),
            (self.flush_policy.is_some(), "--flush-policy"),
            (self.log_size.is_some(), "--log-size"),
            (self.log_sync.is_some(), "--log-sync"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect()
    }

    /// The store `--store NAME` with these flags.
    pub fn store(&self, name: &str) -> Result<StoreConfig> {
        match name {
            "direct" => {
                if let Some(flag) = self.given().first() {
                    bail!("{flag} applies to --store efind, not direct");
                }
                Ok(StoreConfig::Direct)
            }
            "efind" => {
                let Some(total) = &self.write_buffer else {
                    bail!("--store efind needs --write-buffer SIZE (the total buffer, e.g. 512KB)");
                };
                let mut c = EfindConfig::with_buffer(parse_size("--write-buffer", total)?);
                c.read_buffer_perc = self.read_buffer_perc;
                if let Some(p) = &self.read_policy {
                    c.read_policy = CachePolicy::from_name(p)?;
                }
                c.read_kin = self.read_kin;
                c.read_kout = self.read_kout;
                if let Some(t) = &self.temporal_control {
                    c.temporal_control = TemporalControl::parse(t)?;
                }
                c.read_tc_size = self.read_tc_size;
                c.write_tc_size = self.write_tc_size;
                c.min_distance = self.min_distance;
                c.stride = self.stride;
                c.timestamp_perc = self.timestamp_perc;
                if let Some(u) = self.flushing_unit {
                    c.flushing_unit = u;
                }
                if let Some(p) = &self.flush_policy {
                    c.flush_policy = FlushPolicy::parse(p)?;
                }
                if let Some(l) = &self.log_size {
                    c.log_size = Some(Size(parse_size("--log-size", l)?));
                }
                if let Some(l) = &self.log_sync {
                    c.log_sync = l.parse::<LogSync>()?;
                }
                Ok(StoreConfig::Efind(c))
            }
            other => bail!("unknown store '{other}'; use direct or efind"),
        }
    }
}
