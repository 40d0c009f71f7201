//! Running the probes on a real file with direct I/O: the [`crate::iotest`] protocol per
//! probe, each bounded in wall time, on a probe file laid out once at the start.
//!
//! Queue depth N is N threads, each with its own handle on the file
//! ([`FileDevice::try_clone`]) and one synchronous request outstanding at a time; their
//! rate is the requests of all threads over the wall time of the parallel phase.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{ProbeFigure, ProbeFigures, ProbeKind, SMALL};
use crate::device::file::{FileAccess, FileConfig, FileDevice};
use crate::device::Device;
use crate::iotest::{self, latency_histogram, IoTestOptions, Latency, Pattern, Prefill};
use crate::{Error, Result};

/// Request size of the layout that writes the probe file before the probes.
pub const LAYOUT_REQUEST: usize = 1 << 20;

/// Share of the time budget the layout may use; the probes share the rest equally.
pub const LAYOUT_SHARE: f64 = 0.3;

/// What and how long to probe.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The probe file (it must exist, at least `size` bytes; the caller owns it).
    pub path: PathBuf,
    /// Bytes of the file to probe (a multiple of [`LAYOUT_REQUEST`]).
    pub size: u64,
    /// Request size of the page-size probes.
    pub page_size: usize,
    /// Threads of the queue-depth-N probes.
    pub threads: u32,
    /// Wall time for the layout and all probes.
    pub time_budget: Duration,
    /// Most requests per probe (per thread at queue depth N).
    pub max_ops: u64,
    /// Seed of the random addresses.
    pub seed: u64,
    /// Capacity recorded for the model (the drive's size).
    pub capacity: u64,
}

/// Where the probes are, for a progress display.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Steps done (the layout is step 0, then one per probe).
    pub done: usize,
    /// Steps in all.
    pub total: usize,
    /// What runs next (`None` when finished).
    pub next: Option<&'static str>,
    /// Upper bound of the time still to run.
    pub remaining: Duration,
}

/// Steps of a calibration: the layout plus one per probe.
pub const STEPS: usize = 1 + ProbeKind::ALL.len();

/// Lays out the probe file and runs every probe on it; `progress` hears before each step
/// and at the end.
pub fn run(opts: &ProbeOptions, progress: &mut dyn FnMut(Progress)) -> Result<ProbeFigures> {
    validate(opts)?;
    let budget = opts.time_budget.as_secs_f64();
    let per_probe =
        Duration::from_secs_f64(budget * (1.0 - LAYOUT_SHARE) / ProbeKind::ALL.len() as f64);
    let remaining = |done: usize| {
        let left_probes = (STEPS - done.max(1)) as u32;
        let layout_left = if done == 0 {
            opts.time_budget.mul_f64(LAYOUT_SHARE)
        } else {
            Duration::ZERO
        };
        layout_left + per_probe * left_probes
    };
    progress(Progress {
        done: 0,
        total: STEPS,
        next: Some("layout"),
        remaining: remaining(0),
    });
    let span = layout(opts)?;
    let mut probes = Vec::new();
    for (i, kind) in ProbeKind::ALL.into_iter().enumerate() {
        progress(Progress {
            done: i + 1,
            total: STEPS,
            next: Some(kind.name()),
            remaining: remaining(i + 1),
        });
        let seed = opts.seed.wrapping_add(i as u64);
        probes.push(probe(opts, kind, span, per_probe, seed)?);
    }
    progress(Progress {
        done: STEPS,
        total: STEPS,
        next: None,
        remaining: Duration::ZERO,
    });
    Ok(ProbeFigures {
        span,
        page_size: opts.page_size,
        threads: opts.threads,
        capacity: opts.capacity,
        probes,
    })
}

/// Checks the options (the CLI checks them too, with its option names).
pub fn validate(opts: &ProbeOptions) -> Result<()> {
    if opts.size < LAYOUT_REQUEST as u64 || !opts.size.is_multiple_of(LAYOUT_REQUEST as u64) {
        return Err(Error::invalid(
            "size",
            format!(
                "{} bytes; it must be a whole number of MiB, at least 1MiB",
                opts.size
            ),
        ));
    }
    if opts.page_size < SMALL
        || !opts.page_size.is_multiple_of(SMALL)
        || opts.page_size > LAYOUT_REQUEST
    {
        return Err(Error::invalid(
            "page size",
            format!(
                "{} bytes; it must be a multiple of 4KB between 4KB and 1MB",
                opts.page_size
            ),
        ));
    }
    if opts.threads < 2 || opts.threads > 256 {
        return Err(Error::invalid(
            "threads",
            format!(
                "{}; the queue depth N probes need between 2 and 256 threads",
                opts.threads
            ),
        ));
    }
    if opts.time_budget < Duration::from_secs(1) {
        return Err(Error::invalid("time budget", "must be at least 1s"));
    }
    if opts.max_ops == 0 {
        return Err(Error::invalid("max ops", "must be at least 1"));
    }
    Ok(())
}

fn open(opts: &ProbeOptions, request: usize) -> Result<FileDevice> {
    let cfg = FileConfig {
        path: opts.path.clone(),
        direct: true,
        capacity: opts.size,
    };
    FileDevice::open_with(&cfg, request, FileAccess::Create)
}

fn io_opts(
    pattern: Pattern,
    ops: u64,
    span_pages: u64,
    seed: u64,
    limit: Duration,
) -> IoTestOptions {
    IoTestOptions {
        pattern,
        ops,
        span_pages,
        seed,
        read_fraction: 0.5,
        prefill: Prefill::Never,
        layout_budget: None,
        time_limit: Some(limit),
    }
}

/// Writes the probe file sequentially in 1 MiB requests, within its share of the budget;
/// returns the bytes laid out (the span the probes address).
fn layout(opts: &ProbeOptions) -> Result<u64> {
    let mut dev = open(opts, LAYOUT_REQUEST)?;
    let pages = opts.size / LAYOUT_REQUEST as u64;
    let limit = opts.time_budget.mul_f64(LAYOUT_SHARE);
    let r = iotest::run(
        &mut dev,
        &io_opts(Pattern::SeqWrite, pages, pages, opts.seed, limit),
    )?;
    Ok(r.ops * LAYOUT_REQUEST as u64)
}

fn probe(
    opts: &ProbeOptions,
    kind: ProbeKind,
    span: u64,
    limit: Duration,
    seed: u64,
) -> Result<ProbeFigure> {
    let request = kind.request(opts.page_size);
    let span_pages = span / request as u64;
    let mut dev = open(opts, request)?;
    let Some(pattern) = kind.pattern() else {
        return sync_probe(&mut dev, opts.max_ops, span_pages, seed, limit);
    };
    let io = io_opts(pattern, opts.max_ops, span_pages, seed, limit);
    if !kind.parallel() {
        let r = iotest::run(&mut dev, &io)?;
        return Ok(ProbeFigure {
            probe: kind,
            request,
            queue_depth: 1,
            ops: r.ops,
            iops: r.iops.unwrap_or(0.0),
            latency: r.latency,
        });
    }
    let mut devs = vec![dev];
    for _ in 1..opts.threads {
        let d = devs[0].try_clone()?;
        devs.push(d);
    }
    let wall = Instant::now();
    let results: Vec<Result<_>> = std::thread::scope(|s| {
        let handles: Vec<_> = devs
            .iter_mut()
            .enumerate()
            .map(|(t, d)| {
                let mut io = io.clone();
                io.seed = seed.wrapping_mul(1000).wrapping_add(t as u64);
                s.spawn(move || iotest::run_with_histogram(d, &io))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::invalid("probe", "a probe thread panicked")))
            })
            .collect()
    });
    let wall = wall.elapsed().as_secs_f64();
    let mut hist = latency_histogram();
    let mut ops = 0;
    for r in results {
        let (report, h) = r?;
        ops += report.ops;
        hist.add(&h)
            .map_err(|e| Error::invalid("probe", format!("merging latency histograms: {e}")))?;
    }
    Ok(ProbeFigure {
        probe: kind,
        request,
        queue_depth: opts.threads,
        ops,
        iops: ops as f64 / wall,
        latency: Latency::from_histogram(&hist),
    })
}

/// One random write then a sync, repeated: the histogram of the syncs' device times.
/// Shared by the probes of a file and of a model ([`super::fit::predict`]).
pub(crate) fn sync_probe(
    dev: &mut dyn Device,
    max_ops: u64,
    span_pages: u64,
    seed: u64,
    limit: Duration,
) -> Result<ProbeFigure> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut buf = vec![0x5Au8; dev.page_size()];
    let mut hist = latency_histogram();
    let wall = Instant::now();
    let mut ops = 0;
    while ops < max_ops && (ops == 0 || wall.elapsed() < limit) {
        dev.write(rng.gen_range(0..span_pages), &buf)?;
        buf[0] = buf[0].wrapping_add(1);
        let t = dev.device_ns();
        dev.sync()?;
        hist.saturating_record(dev.device_ns().saturating_sub(t));
        ops += 1;
    }
    let latency = Latency::from_histogram(&hist);
    Ok(ProbeFigure {
        probe: ProbeKind::Sync4k,
        request: dev.page_size(),
        queue_depth: 1,
        ops,
        iops: latency.map_or(0.0, |l| 1e6 / l.mean_us),
        latency,
    })
}
