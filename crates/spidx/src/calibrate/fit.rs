//! Fitting a device model to probe figures: a pure, deterministic function
//! ([`fit`]) of the [`ProbeFigures`].
//!
//! **Which model.** Seeks dominate when a random 4 KB read takes at least 1 ms (no SSD's
//! does at queue depth 1; a rotating disk's takes 5-15 ms) *and* at least 4 times a
//! sequential one ([`seeks_dominate`]): then the hard-disk model is fitted, else the SSD
//! model.
//!
//! **SSD** (parameters named as in [`SsdConfig`]; means of the queue-depth-1 probes):
//! - `host_mb_s` from how much longer a page-size random write takes than a 4 KB one (the
//!   extra bytes cross the link): (page − 4 KB) / (w_page − w_4k); no difference (under
//!   0.5 µs) leaves the link unmodelled (0);
//! - `command_overhead_us` = the 4 KB random write minus its link time (a write is
//!   acknowledged from the write cache: command + link);
//! - `flash.read_us` = 4 KB random read − 4 KB random write (a read also senses the page);
//! - `flash.program_us` = the sync's cost (a sync waits for the write cache to be
//!   programmed: the model's only cost that a flush of the drive can stand for);
//! - the flash page: 2 KB when a random 2 KB write takes at most 1.25 times a 4 KB one
//!   (the drive writes half pages without reading them first), else 4 KB ([`flash_page`]);
//! - dies: a power of two with room for 8 times the programs in flight at the fastest
//!   measured write rate (so programs neither limit the write rate nor often delay reads),
//!   8 channels, a write cache of one page per die; transfers over channels not modelled.
//! - `seq_read_saving_us` and `seq_write_saving_us`: what a sequential 4 KB read or write
//!   takes less than the model's random one, at most the command overhead
//!   ([`fit_seq_saving`]; a drive, or the host below it, that reads ahead or merges
//!   sequential writes).
//!
//! A second candidate is a write-through drive: `command_overhead_us` from the
//! queue-depth-N rate, `read_us` and `program_us` the rest of a 4 KB read and write, and
//! `flush_us` the rest of the sync (a flush's round trip, which does not hold the
//! controller); the candidate whose probe rates are closer to the drive's is kept
//! ([`fit_ssd`]).
//!
//! Then three rounds of correction: the probes are run on the model, and
//! `command_overhead_us`, `read_us` and `program_us` (write-back) or `read_us`,
//! `program_us` and `flush_us` (write-through) are moved by the model's error on the
//! 4 KB random write, 4 KB random read and sync probes. Parameters are rounded to
//! 0.01 µs (0.01 MB/s) so the written file says exactly what was used.
//!
//! **HDD**: the `hdd-7200` preset with the drive's capacity, its three seek times scaled
//! by one factor, found by bisection so that the model's 4 KB random read at queue depth
//! 1 takes what the drive's took. Nothing else is fitted.
//!
//! The residuals compare every probe's rate (IOPS) and, at queue depth 1, its mean request
//! time, measured vs the model's prediction ([`predict`]).

use std::time::Duration;

use serde::Serialize;

use super::probe::sync_probe;
use super::{ProbeFigure, ProbeFigures, ProbeKind, HALF, SMALL};
use crate::device::flash::FlashConfig;
use crate::device::hdd::HddConfig;
use crate::device::ssd::SsdConfig;
use crate::device::DeviceConfig;
use crate::iotest::{self, IoTestOptions, Prefill};
use crate::{Error, Result};

/// Which model was fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// The SSD model ([`SsdConfig`]).
    Ssd,
    /// The hard-disk model ([`HddConfig`]).
    Hdd,
}

/// One compared figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Residual {
    /// The probe.
    pub probe: &'static str,
    /// What is compared: `iops` or `mean_us`.
    pub figure: &'static str,
    /// Measured on the drive.
    pub measured: f64,
    /// The model's prediction.
    pub predicted: f64,
    /// (predicted − measured) / measured, percent.
    pub error_pct: f64,
}

/// The result of a fit.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The model chosen.
    pub kind: ModelKind,
    /// Why it was chosen (the rule with this drive's figures).
    pub reason: String,
    /// The fitted device.
    pub config: DeviceConfig,
    /// The probes run on the fitted model.
    pub predicted: ProbeFigures,
    /// Measured vs predicted, per probe.
    pub residuals: Vec<Residual>,
}

/// Most requests a model runs per probe when predicting (the model's figures settle long
/// before; the cost of the final sync is then about 1 % of a write probe).
const MODEL_OPS: u64 = 4000;
/// Largest span a model lays out when its reads depend on what was written (flash: the
/// SSD model's timing does not depend on addresses, so a small span predicts a large one).
const MODEL_SPAN: u64 = 32 << 20;
/// Correction rounds of the SSD fit.
const ROUNDS: usize = 3;

/// The seek rule: (whether seeks dominate, the explanation with these figures).
pub fn seeks_dominate(f: &ProbeFigures) -> Result<(bool, String)> {
    let rand = f.mean_us(ProbeKind::RandRead4k)?;
    let seq = f.mean_us(ProbeKind::SeqRead4k)?;
    let yes = rand >= 1000.0 && rand >= 4.0 * seq;
    let reason = format!(
        "random 4 KB reads take {rand:.1} us on average, sequential ones {seq:.1} us: {} (the hdd model when a random read takes at least 1 ms and 4 times a sequential one)",
        if yes { "seeks dominate, hdd model" } else { "seeks do not dominate, ssd model" }
    );
    Ok((yes, reason))
}

/// Fits a model to `f`: the same figures always give the same fit.
pub fn fit(f: &ProbeFigures) -> Result<Fit> {
    f.validate()?;
    let (hdd, reason) = seeks_dominate(f)?;
    let config = if hdd {
        DeviceConfig::Hdd(fit_hdd(f)?)
    } else {
        DeviceConfig::Ssd(fit_ssd(f)?)
    };
    let predicted = predict(&config, f)?;
    let residuals = residuals(f, &predicted)?;
    Ok(Fit {
        kind: if hdd { ModelKind::Hdd } else { ModelKind::Ssd },
        reason,
        config,
        predicted,
        residuals,
    })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// How the fitted SSD acknowledges writes: the two candidates of the fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WritePolicy {
    /// From a write cache (command + link); a sync waits for the programs.
    WriteBack,
    /// When programmed (command + link + program, parallel over the dies); a sync costs a
    /// command and the flush's round trip (`flush_us`).
    WriteThrough,
}

/// Link time per byte in µs from the medians of the 4 KB and page-size random probes
/// (medians: one slow request in a hundred must not make the link look slow).
fn link_us_per_byte(f: &ProbeFigures) -> Result<f64> {
    let extra = (f.page_size - SMALL) as f64;
    if extra <= 0.0 {
        return Ok(0.0);
    }
    let p50 = |k| -> Result<f64> {
        let p = f.get(k)?;
        Ok(p.latency.map_or(1e6 / p.iops, |l| l.p50_us))
    };
    let d = (p50(ProbeKind::RandReadPage)? - p50(ProbeKind::RandRead4k)?
        + p50(ProbeKind::RandWritePage)?
        - p50(ProbeKind::RandWrite4k)?)
        / 2.0;
    Ok(if d > 0.5 { d / extra } else { 0.0 })
}

/// The fitted SSD's flash page: 2 KB when the drive writes half a 4 KB page at most a
/// quarter slower than a whole one (it does not read the page first), else 4 KB, whose
/// half-page writes the model reads first (a read-modify-write); 4 KB when the figures
/// have no 2 KB probe.
fn flash_page(f: &ProbeFigures) -> Result<usize> {
    if f.get(ProbeKind::RandWrite2k).is_err() {
        return Ok(SMALL);
    }
    let half = f.mean_us(ProbeKind::RandWrite2k)?;
    let whole = f.mean_us(ProbeKind::RandWrite4k)?;
    Ok(if half <= 1.25 * whole { HALF } else { SMALL })
}

/// The SSD model's first guess for `policy` (see the module documentation).
fn ssd_initial(f: &ProbeFigures, policy: WritePolicy) -> Result<SsdConfig> {
    let w4 = f.mean_us(ProbeKind::RandWrite4k)?;
    let r4 = f.mean_us(ProbeKind::RandRead4k)?;
    let sync = f.mean_us(ProbeKind::Sync4k)?;
    let per_byte = link_us_per_byte(f)?;
    let host_mb_s = if per_byte > 0.0 {
        round2((1.0 / per_byte).clamp(1.0, 100_000.0))
    } else {
        0.0
    };
    let link = if host_mb_s > 0.0 {
        SMALL as f64 / host_mb_s
    } else {
        0.0
    };
    let qd_peak = f
        .get(ProbeKind::RandReadQd)?
        .iops
        .max(f.get(ProbeKind::RandWriteQd)?.iops);
    let (command, read_us, program_us, busy_us, cache, flush_us) = match policy {
        WritePolicy::WriteBack => {
            let cmd = (w4 - link).max(0.5);
            (cmd, r4 - w4, sync, sync, true, 0.0)
        }
        WritePolicy::WriteThrough => {
            let cmd = (1e6 / qd_peak).min(0.9 * r4.min(w4) - link).max(0.5);
            let read = r4 - cmd - link;
            let program = w4 - cmd - link;
            (
                cmd,
                read,
                program,
                read.max(program),
                false,
                (sync - cmd).max(0.0),
            )
        }
    };
    let read_us = round2(read_us.max(0.5));
    let program_us = round2(program_us.max(1.0));
    let flash_page = flash_page(f)?;
    let peak = (1e6 / w4).max(qd_peak);
    let dies = ((8.0 * peak * busy_us.max(1.0) / 1e6).ceil() as u32)
        .next_power_of_two()
        .clamp(8, 1024);
    let capacity = f.capacity.max(f.span).max(1 << 30);
    Ok(SsdConfig {
        flash: FlashConfig {
            page_size: flash_page,
            pages_per_block: 256,
            read_us,
            program_us,
            erase_us: 3800.0,
            transfer_mb_s: 0.0,
            capacity: capacity / (1 << 20) * (1 << 20),
            overprovisioning: 0.07,
            gc_reserved_blocks: 2,
            wear_level_threshold: 100,
            erase_limit: 3000,
            seed: 42,
        },
        channels: 8,
        dies_per_channel: dies / 8,
        channel_mb_s: 0.0,
        host_mb_s,
        command_overhead_us: round2(command),
        write_cache: if cache {
            u64::from(dies) * flash_page as u64
        } else {
            0
        },
        queue_depth: 1,
        flush_us: round2(flush_us),
        seq_read_saving_us: 0.0,
        seq_write_saving_us: 0.0,
    })
}

/// Fits both write policies and keeps the one whose probe rates are closer to the drive's
/// (smaller mean |ln(model / drive)| over every probe; write-back on a tie).
fn fit_ssd(f: &ProbeFigures) -> Result<SsdConfig> {
    let mut best: Option<(f64, SsdConfig)> = None;
    for policy in [WritePolicy::WriteBack, WritePolicy::WriteThrough] {
        let c = fit_ssd_policy(f, policy)?;
        let p = predict(&DeviceConfig::Ssd(c.clone()), f)?;
        let mut score = 0.0;
        for kind in f.kinds() {
            score += (p.get(kind)?.iops / f.get(kind)?.iops).ln().abs();
        }
        if best.as_ref().is_none_or(|(s, _)| score < *s) {
            best = Some((score, c));
        }
    }
    Ok(best.expect("two candidates").1)
}

/// The first guess for `policy`, then corrected by the model's own errors on the 4 KB
/// random write and read probes (and the sync, write-back only).
fn fit_ssd_policy(f: &ProbeFigures, policy: WritePolicy) -> Result<SsdConfig> {
    let mut c = ssd_initial(f, policy)?;
    let (w, r, s) = (
        f.mean_us(ProbeKind::RandWrite4k)?,
        f.mean_us(ProbeKind::RandRead4k)?,
        f.mean_us(ProbeKind::Sync4k)?,
    );
    let only = [
        ProbeKind::RandWrite4k,
        ProbeKind::RandRead4k,
        ProbeKind::Sync4k,
    ];
    for _ in 0..ROUNDS {
        let p = predict_some(&DeviceConfig::Ssd(c.clone()), f, &only)?;
        let dw = w - p.mean_us(ProbeKind::RandWrite4k)?;
        let dr = r - p.mean_us(ProbeKind::RandRead4k)?;
        let ds = s - p.mean_us(ProbeKind::Sync4k)?;
        match policy {
            WritePolicy::WriteBack => {
                c.command_overhead_us = round2((c.command_overhead_us + dw).max(0.5));
                c.flash.read_us = round2((c.flash.read_us + dr - dw).max(0.5));
                c.flash.program_us = round2((c.flash.program_us + ds).max(1.0));
            }
            WritePolicy::WriteThrough => {
                c.flash.read_us = round2((c.flash.read_us + dr).max(0.5));
                c.flash.program_us = round2((c.flash.program_us + dw).max(1.0));
                c.flush_us = round2((c.flush_us + ds).max(0.0));
            }
        }
    }
    fit_seq_saving(f, &mut c, ProbeKind::SeqRead4k, |c| {
        &mut c.seq_read_saving_us
    })?;
    fit_seq_saving(f, &mut c, ProbeKind::SeqWrite4k, |c| {
        &mut c.seq_write_saving_us
    })?;
    Ok(c)
}

/// Sets the saving `field` of `c` to what the drive's sequential 4 KB requests of `probe`
/// save against the model's (which pay the random ones' cost), within 0 and the command
/// overhead, then corrects it by the model's error on that probe ([`ROUNDS`] times). A
/// saving under 0.5 µs, or under 2 % of the request, is noise and left at 0.
fn fit_seq_saving(
    f: &ProbeFigures,
    c: &mut SsdConfig,
    probe: ProbeKind,
    field: fn(&mut SsdConfig) -> &mut f64,
) -> Result<()> {
    let measured = f.mean_us(probe)?;
    for _ in 0..ROUNDS {
        let p = predict_some(&DeviceConfig::Ssd(c.clone()), f, &[probe])?;
        let saving = *field(c) + p.mean_us(probe)? - measured;
        let most = c.command_overhead_us;
        *field(c) = round2(saving.clamp(0.0, most));
    }
    let saving = field(c);
    if *saving < 0.5 || *saving < 0.02 * measured {
        *saving = 0.0;
    }
    Ok(())
}

fn fit_hdd(f: &ProbeFigures) -> Result<HddConfig> {
    let base = HddConfig::desktop_7200();
    let capacity = (f.capacity.max(f.span).max(1 << 30) / 512 * 512).min(1 << 50);
    let at = |k: f64| HddConfig {
        capacity,
        track_to_track_ms: round2(base.track_to_track_ms * k).max(0.01),
        avg_seek_ms: round2(base.avg_seek_ms * k).max(0.02),
        full_stroke_ms: round2(base.full_stroke_ms * k).max(0.03),
        ..base.clone()
    };
    let target = f.mean_us(ProbeKind::RandRead4k)?;
    let only = [ProbeKind::RandRead4k];
    let (mut lo, mut hi) = (0.01f64, 10.0f64);
    for _ in 0..24 {
        let mid = (lo * hi).sqrt();
        let p = predict_some(&DeviceConfig::Hdd(at(mid)), f, &only)?;
        if p.mean_us(ProbeKind::RandRead4k)? < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let c = at((lo * hi).sqrt());
    c.validate()?;
    Ok(c)
}

/// The probes of `setup` run on the model `config`: the same requests, spans (at most
/// 32 MB for a flash model) and queue depths; at most 4,000 requests per probe.
pub fn predict(config: &DeviceConfig, setup: &ProbeFigures) -> Result<ProbeFigures> {
    predict_some(config, setup, &setup.kinds())
}

fn predict_some(
    config: &DeviceConfig,
    setup: &ProbeFigures,
    kinds: &[ProbeKind],
) -> Result<ProbeFigures> {
    let mut probes = Vec::new();
    for (i, &kind) in kinds.iter().enumerate() {
        let measured = setup.get(kind)?;
        probes.push(predict_one(config, setup, measured, 100 + i as u64)?);
    }
    Ok(ProbeFigures {
        probes,
        ..setup.clone()
    })
}

fn predict_one(
    config: &DeviceConfig,
    setup: &ProbeFigures,
    measured: &ProbeFigure,
    seed: u64,
) -> Result<ProbeFigure> {
    let kind = measured.probe;
    let mut config = config.clone();
    let qd = if kind.parallel() { setup.threads } else { 1 };
    if let DeviceConfig::Ssd(c) = &mut config {
        c.queue_depth = qd;
    }
    let request = measured.request;
    let mut dev = config.open(request, None)?;
    let span = if dev.read_time_ignores_contents() {
        setup.span
    } else {
        setup.span.min(MODEL_SPAN)
    };
    let span_pages = (span / request as u64).min(dev.capacity_pages());
    let ops = measured.ops.clamp(1, MODEL_OPS);
    let Some(pattern) = kind.pattern() else {
        let mut p = sync_probe(dev.as_mut(), ops.min(500), span_pages, seed, Duration::MAX)?;
        p.probe = kind;
        return Ok(p);
    };
    let prefill = if dev.read_time_ignores_contents() {
        Prefill::Never
    } else {
        Prefill::Always
    };
    let r = iotest::run(
        dev.as_mut(),
        &IoTestOptions {
            pattern,
            ops,
            span_pages,
            seed,
            read_fraction: 0.5,
            prefill,
            layout_budget: None,
            time_limit: None,
        },
    )?;
    let iops = r.iops.ok_or_else(|| {
        Error::invalid(
            "model",
            format!("the model took no time on probe {}", kind.name()),
        )
    })?;
    Ok(ProbeFigure {
        probe: kind,
        request,
        queue_depth: qd,
        ops: r.ops,
        iops,
        latency: if qd == 1 { r.latency } else { None },
    })
}

/// Measured vs predicted: every probe's rate, and the mean request time at queue depth 1.
pub fn residuals(measured: &ProbeFigures, predicted: &ProbeFigures) -> Result<Vec<Residual>> {
    let mut out = Vec::new();
    let err = |m: f64, p: f64| (p - m) / m * 100.0;
    for kind in measured.kinds() {
        let (m, p) = (measured.get(kind)?, predicted.get(kind)?);
        out.push(Residual {
            probe: kind.name(),
            figure: "iops",
            measured: m.iops,
            predicted: p.iops,
            error_pct: err(m.iops, p.iops),
        });
        if !kind.parallel() {
            let (m, p) = (measured.mean_us(kind)?, predicted.mean_us(kind)?);
            out.push(Residual {
                probe: kind.name(),
                figure: "mean_us",
                measured: m,
                predicted: p,
                error_pct: err(m, p),
            });
        }
    }
    Ok(out)
}
