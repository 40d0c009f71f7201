//! `iotest`: a small fio-like probe. It drives one device with an access pattern and
//! reports what the device did (operations, bytes, time, IOPS, MB/s and the device's own
//! counters), so users can see how a preset or a real file behaves before running indices
//! on it.
//!
//! Protocol: read patterns (and `mixed`) first lay out the span sequentially (like fio's
//! layout phase) so reads hit written data, then drop the caches; that preparation is not
//! counted. The measured phase ends with a `sync`, whose cost (draining write caches) is
//! counted, so write figures include getting the data to the medium.
//!
//! Every measured request's device time (the growth of [`Device::device_ns`] across it:
//! the measured system call on a `file:` device, the request's latency on a model at queue
//! depth 1) goes into a histogram ([`hdrhistogram`]), reported as [`Latency`] percentiles.
//! An optional wall-time limit ends the measured phase early (`spidx calibrate` bounds
//! each of its probes so).

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::clock::process_cpu_ns;
use crate::device::{Device, DeviceStats};
use crate::{Error, Result};

/// The access pattern of an iotest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Consecutive one-page reads from the start of the span.
    SeqRead,
    /// Consecutive one-page writes from the start of the span (wrapping around).
    SeqWrite,
    /// One-page reads at uniformly random pages of the span.
    RandRead,
    /// One-page writes at uniformly random pages of the span.
    RandWrite,
    /// Random reads and writes interleaved, `read_fraction` of them reads.
    Mixed,
}

impl Pattern {
    /// Parses `seqread|seqwrite|randread|randwrite|mixed`.
    pub fn parse(text: &str) -> Result<Pattern> {
        Ok(match text {
            "seqread" => Pattern::SeqRead,
            "seqwrite" => Pattern::SeqWrite,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "mixed" => Pattern::Mixed,
            other => {
                return Err(Error::invalid(
                    "pattern",
                    format!("unknown pattern '{other}'; use seqread, seqwrite, randread, randwrite or mixed"),
                ))
            }
        })
    }

    fn needs_layout(self) -> bool {
        matches!(self, Pattern::SeqRead | Pattern::RandRead | Pattern::Mixed)
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct IoTestOptions {
    /// The access pattern.
    pub pattern: Pattern,
    /// Number of one-page operations to measure.
    pub ops: u64,
    /// Number of pages addressed (from page 0).
    pub span_pages: u64,
    /// Seed of the random addresses.
    pub seed: u64,
    /// Share of reads in the `mixed` pattern, in [0, 1].
    pub read_fraction: f64,
    /// Whether to lay out (write) the span before the measured phase.
    pub prefill: Prefill,
    /// Largest span, in bytes, that may be laid out (simulated devices hold their data in
    /// memory, so the CLI bounds it by the memory available); `None` for no bound.
    pub layout_budget: Option<u64>,
    /// Wall time after which the measured phase stops (the report then counts the
    /// operations done); `None` runs all `ops`.
    pub time_limit: Option<Duration>,
}

/// Whether the span is written before the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefill {
    /// For read patterns and `mixed` only.
    Auto,
    /// Always, so writes are overwrites of a full span (what makes flash collect garbage).
    Always,
    /// Never: reads of never-written pages cost what the device charges for them (nothing
    /// on flash, whose FTL has no mapping for them, like a trimmed SSD).
    Never,
}

/// What an iotest measured.
#[derive(Debug, Clone, Serialize)]
pub struct IoTestReport {
    /// The access pattern.
    pub pattern: Pattern,
    /// Page (request) size in bytes.
    pub page_size: usize,
    /// Pages addressed.
    pub span_pages: u64,
    /// Operations measured.
    pub ops: u64,
    /// Bytes moved by the measured operations.
    pub bytes: u64,
    /// Device time of the measured phase (modelled or measured), seconds.
    pub device_s: f64,
    /// Process CPU time of the measured phase, seconds.
    pub cpu_s: f64,
    /// Wall time of the measured phase, seconds.
    pub elapsed_s: f64,
    /// Operations per device second (absent when the device takes no time).
    pub iops: Option<f64>,
    /// Megabytes (10^6 bytes) per device second (absent when the device takes no time).
    pub mb_s: Option<f64>,
    /// Host read requests.
    pub host_reads: u64,
    /// Host write requests.
    pub host_writes: u64,
    /// Flash page reads (flash devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flash_reads: Option<u64>,
    /// Flash page programs (flash devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flash_writes: Option<u64>,
    /// Block erases (flash devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erases: Option<u64>,
    /// Pages copied by garbage collection (flash devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_copies: Option<u64>,
    /// Flash writes per host flash write (flash devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_amplification: Option<f64>,
    /// Distribution of the measured requests' device times (absent when the device takes
    /// no time); the final `sync` is not in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// Every counter of the device for the measured phase.
    pub device: DeviceStats,
}

/// Percentiles of per-request device time, in microseconds (3 significant digits).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Latency {
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl Latency {
    /// Summarises a histogram of nanoseconds; `None` when it is empty or all zero.
    pub fn from_histogram(h: &Histogram<u64>) -> Option<Latency> {
        if h.is_empty() || h.max() == 0 {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1e3;
        Some(Latency {
            mean_us: h.mean() / 1e3,
            p50_us: us(h.value_at_quantile(0.5)),
            p90_us: us(h.value_at_quantile(0.9)),
            p99_us: us(h.value_at_quantile(0.99)),
            max_us: us(h.max()),
        })
    }
}

/// An empty histogram of nanoseconds: 1 ns to an hour, 3 significant digits.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Runs an iotest on `dev`.
pub fn run(dev: &mut dyn Device, opts: &IoTestOptions) -> Result<IoTestReport> {
    run_with_histogram(dev, opts).map(|(report, _)| report)
}

/// [`run`], also returning the histogram of per-request device times in ns (so that the
/// histograms of several concurrent runs can be merged).
pub fn run_with_histogram(
    dev: &mut dyn Device,
    opts: &IoTestOptions,
) -> Result<(IoTestReport, Histogram<u64>)> {
    if opts.ops == 0 {
        return Err(Error::invalid("ops", "must be at least 1"));
    }
    if opts.span_pages == 0 {
        return Err(Error::invalid("span", "must cover at least one page"));
    }
    if opts.span_pages > dev.capacity_pages() {
        return Err(Error::invalid(
            "span",
            format!(
                "{} pages but the device has only {} pages of {} bytes",
                opts.span_pages,
                dev.capacity_pages(),
                dev.page_size()
            ),
        ));
    }
    if !(0.0..=1.0).contains(&opts.read_fraction) {
        return Err(Error::invalid("read fraction", "must be within 0-100%"));
    }
    let ps = dev.page_size();
    let mut buf = vec![0u8; ps];
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let lay_out = match opts.prefill {
        Prefill::Auto => opts.pattern.needs_layout(),
        Prefill::Always => true,
        Prefill::Never => false,
    };
    if lay_out {
        let bytes = opts.span_pages * ps as u64;
        if let Some(budget) = opts.layout_budget.filter(|b| bytes > *b) {
            return Err(Error::invalid(
                "span",
                format!(
                    "laying out {} on a simulated device needs that much memory, more than the {} allowed; use a smaller --span, or --no-prefill",
                    crate::units::format_size(bytes),
                    crate::units::format_size(budget)
                ),
            ));
        }
        layout(dev, opts.span_pages, &mut rng)?;
        dev.sync()?;
        dev.drop_caches()?;
    }
    let before = dev.stats();
    let mut hist = latency_histogram();
    let (cpu0, wall0) = (process_cpu_ns(), Instant::now());
    let mut done = 0;
    for i in 0..opts.ops {
        if done > 0 && opts.time_limit.is_some_and(|t| wall0.elapsed() >= t) {
            break;
        }
        let t0 = dev.device_ns();
        let (page, is_read) = match opts.pattern {
            Pattern::SeqRead => (i % opts.span_pages, true),
            Pattern::SeqWrite => (i % opts.span_pages, false),
            Pattern::RandRead => (rng.gen_range(0..opts.span_pages), true),
            Pattern::RandWrite => (rng.gen_range(0..opts.span_pages), false),
            Pattern::Mixed => (
                rng.gen_range(0..opts.span_pages),
                rng.gen_bool(opts.read_fraction),
            ),
        };
        if is_read {
            dev.read(page, &mut buf)?;
        } else {
            stamp(&mut buf, page, i);
            dev.write(page, &buf)?;
        }
        hist.saturating_record(dev.device_ns().saturating_sub(t0));
        done += 1;
    }
    dev.sync()?;
    let cpu_s = (process_cpu_ns() - cpu0) as f64 * 1e-9;
    let elapsed_s = wall0.elapsed().as_secs_f64();
    let d = dev.stats().since(&before);
    let device_s = d.device_s();
    let bytes = done * ps as u64;
    let rate = |x: f64| (device_s > 0.0).then(|| x / device_s);
    let report = IoTestReport {
        pattern: opts.pattern,
        page_size: ps,
        span_pages: opts.span_pages,
        ops: done,
        bytes,
        device_s,
        cpu_s,
        elapsed_s,
        iops: rate(done as f64),
        mb_s: rate(bytes as f64 / 1e6),
        host_reads: d.host.read_ops,
        host_writes: d.host.write_ops,
        flash_reads: d.flash.map(|f| f.flash_reads),
        flash_writes: d.flash.map(|f| f.flash_writes),
        erases: d.flash.map(|f| f.erases),
        gc_copies: d.flash.map(|f| f.gc_copies),
        write_amplification: d.flash.map(|f| f.write_amplification),
        latency: Latency::from_histogram(&hist),
        device: d,
    };
    Ok((report, hist))
}

/// Writes the whole span sequentially, in runs of up to 64 pages.
fn layout(dev: &mut dyn Device, span_pages: u64, rng: &mut ChaCha8Rng) -> Result<()> {
    let ps = dev.page_size();
    let run = 64u64.min(span_pages);
    let mut buf = vec![0u8; ps * run as usize];
    rng.fill(&mut buf[..]);
    let mut page = 0;
    while page < span_pages {
        let n = run.min(span_pages - page);
        dev.write(page, &buf[..n as usize * ps])?;
        page += n;
    }
    Ok(())
}

/// Marks a page buffer with its address and operation number (cheap, non-constant data).
fn stamp(buf: &mut [u8], page: u64, op: u64) {
    buf[..8].copy_from_slice(&page.to_le_bytes());
    buf[8..16].copy_from_slice(&op.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{MemoryConfig, MemoryDevice};

    fn opts(pattern: Pattern) -> IoTestOptions {
        IoTestOptions {
            pattern,
            ops: 100,
            span_pages: 50,
            seed: 1,
            read_fraction: 0.5,
            prefill: Prefill::Auto,
            layout_budget: None,
            time_limit: None,
        }
    }

    #[test]
    fn counts_only_the_measured_phase() {
        let mut d = MemoryDevice::open(&MemoryConfig { capacity: 1 << 20 }, 4096, None).unwrap();
        let r = run(&mut d, &opts(Pattern::RandRead)).unwrap();
        assert_eq!((r.ops, r.host_reads, r.host_writes), (100, 100, 0));
        assert_eq!(r.bytes, 100 * 4096);
        assert!(r.iops.is_none(), "memory takes no device time");
        let r = run(&mut d, &opts(Pattern::SeqWrite)).unwrap();
        assert_eq!((r.host_reads, r.host_writes), (0, 100));
        assert_eq!(
            r.device.host.seq_writes, 98,
            "random at the start and at the wrap to page 0"
        );
        let r = run(&mut d, &opts(Pattern::Mixed)).unwrap();
        assert_eq!(r.host_reads + r.host_writes, 100);
        assert!(r.host_reads > 25 && r.host_writes > 25);
    }

    #[test]
    fn rejects_bad_options() {
        let mut d = MemoryDevice::open(&MemoryConfig { capacity: 1 << 20 }, 4096, None).unwrap();
        let mut o = opts(Pattern::RandRead);
        o.span_pages = 1000;
        assert!(run(&mut d, &o)
            .unwrap_err()
            .to_string()
            .contains("only 256 pages"));
        o.span_pages = 0;
        assert!(run(&mut d, &o).is_err());
        let mut o = opts(Pattern::RandRead);
        o.ops = 0;
        assert!(run(&mut d, &o).is_err());
        let mut o = opts(Pattern::RandRead);
        o.layout_budget = Some(4096 * 10);
        assert!(run(&mut d, &o)
            .unwrap_err()
            .to_string()
            .contains("--no-prefill"));
        o.prefill = Prefill::Never;
        assert_eq!(run(&mut d, &o).unwrap().host_writes, 0);
        assert!(Pattern::parse("randrw").is_err());
        assert_eq!(Pattern::parse("mixed").unwrap(), Pattern::Mixed);
    }
}
