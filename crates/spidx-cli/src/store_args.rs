//! eFIND's own options (`--store efind`); the flags it shares with FAST (`--write-buffer`,
//! `--flushing-unit`, `--flush-policy`, `--log-size`, `--log-sync`, `--log-device`) live in `IndexArgs`.
//! Parsed into a [`StoreConfig`]. Every flag is validated; a flag given for a store it does not apply to
//! is an error, never silently ignored.

use anyhow::{bail, Result};
use clap::Args;
use spidx::cache::CachePolicy;
use spidx::store::buffered::placement::LogPlacement;
use spidx::store::efind::{EfindConfig, FlushPolicy, Size, TemporalControl};
use spidx::store::log::LogSync;
use spidx::store::rftl::RftlOptions;
use spidx::store::StoreConfig;
use spidx::units::parse_size;

/// eFIND-only flags.
#[derive(Args, Debug, Default)]
pub struct StoreArgs {
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
}

impl StoreArgs {
    fn given(&self) -> Vec<&'static str> {
        [
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
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect()
    }

    /// The eFIND-only flags given (errors with another store).
    pub fn first_given(&self) -> Option<&'static str> {
        self.given().first().copied()
    }

    /// `--store efind` from these flags and the flags it shares with FAST.
    pub fn efind(&self, shared: &Shared<'_>) -> Result<StoreConfig> {
        let Some(total) = shared.write_buffer else {
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
        if let Some(u) = shared.flushing_unit {
            c.flushing_unit = u as usize;
        }
        if let Some(p) = shared.flush_policy {
            c.flush_policy = FlushPolicy::parse(p)?;
        }
        if let Some(l) = shared.log_size {
            c.log_size = Some(Size(parse_size("--log-size", l)?));
        }
        if let Some(l) = shared.log_sync {
            c.log_sync = l.parse::<LogSync>()?;
        }
        if let Some(l) = shared.log_device {
            c.log_device = l.parse()?;
        }
        Ok(StoreConfig::Efind(c))
    }
}

/// What the flush-all stores (the LCR-tree, RFTL) take from the flags they share with FAST:
/// `--write-buffer` (required), `--log-size`, `--log-sync`, `--log-device`. They flush their
/// whole buffer, so `--flushing-unit` and `--flush-policy` are errors; `store` is the
/// `--store` value and `who` the store's name in messages.
struct FlushAllFlags {
    write_buffer: u64,
    log_size: Option<u64>,
    log_sync: LogSync,
    log_device: LogPlacement,
}

fn flush_all_flags(shared: &Shared<'_>, store: &str, who: &str) -> Result<FlushAllFlags> {
    if shared.flushing_unit.is_some() {
        bail!("--flushing-unit applies to --store fast or efind only ({who} flushes its whole buffer)");
    }
    if shared.flush_policy.is_some() {
        bail!(
            "--flush-policy applies to --store fast or efind only ({who} flushes its whole buffer)"
        );
    }
    let Some(buffer) = shared.write_buffer else {
        bail!("--store {store} needs --write-buffer SIZE (e.g. 512KB)");
    };
    Ok(FlushAllFlags {
        write_buffer: parse_size("--write-buffer", buffer)?,
        log_size: shared
            .log_size
            .map(|s| parse_size("--log-size", s))
            .transpose()?,
        log_sync: match shared.log_sync {
            Some(s) => s.parse()?,
            None => LogSync::default(),
        },
        log_device: match shared.log_device {
            Some(s) => s.parse()?,
            None => Default::default(),
        },
    })
}

/// `--store lcr` (the LCR-tree, Lv et al. 2011) from the shared flags (see
/// [`flush_all_flags`]).
pub fn lcr(shared: &Shared<'_>) -> Result<StoreConfig> {
    let f = flush_all_flags(shared, "lcr", "the LCR-tree")?;
    Ok(StoreConfig::Lcr(spidx::store::lcr::LcrOptions {
        write_buffer: f.write_buffer,
        log_size: f.log_size,
        log_sync: f.log_sync,
        log_device: f.log_device,
    }))
}

/// `--store rftl` (RFTL, Wu, Chang, Kuo 2003) from the shared flags (see
/// [`flush_all_flags`]) and its own `--max-pages` (default 4).
pub fn rftl(shared: &Shared<'_>, max_pages: Option<u32>) -> Result<StoreConfig> {
    let f = flush_all_flags(shared, "rftl", "RFTL")?;
    Ok(StoreConfig::Rftl(RftlOptions {
        write_buffer: f.write_buffer,
        max_pages: max_pages.unwrap_or(RftlOptions::DEFAULT_MAX_PAGES),
        log_size: f.log_size,
        log_sync: f.log_sync,
        log_device: f.log_device,
    }))
}

/// The flags FAST, eFIND, the LCR-tree and RFTL share (defined once, in `IndexArgs`).
pub struct Shared<'a> {
    /// `--write-buffer` (eFIND: the total buffer, write plus read).
    pub write_buffer: Option<&'a str>,
    /// `--flushing-unit`.
    pub flushing_unit: Option<u32>,
    /// `--flush-policy`.
    pub flush_policy: Option<&'a str>,
    /// `--log-size`.
    pub log_size: Option<&'a str>,
    /// `--log-sync`.
    pub log_sync: Option<&'a str>,
    /// `--log-device`.
    pub log_device: Option<&'a str>,
}
