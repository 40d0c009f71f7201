//! `spidx iotest`: drives one device with an access pattern and prints what it did.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use spidx::device::{DeviceSpec, SECTOR};
use spidx::iotest::{self, IoTestOptions, IoTestReport, Pattern, Prefill};
use spidx::units::{format_size, parse_percent, parse_size};

/// Arguments of `spidx iotest`.
#[derive(Args)]
pub struct IotestArgs {
    /// Device: a preset (see `spidx devices`), file:PATH, or a device .toml file.
    #[arg(long)]
    device: String,
    /// Override a device parameter, e.g. `queue_depth=32` or `flash.read_us=40` (repeatable).
    #[arg(long = "device-param", value_name = "KEY=VALUE")]
    device_params: Vec<String>,
    /// Access pattern: seqread, seqwrite, randread, randwrite or mixed.
    #[arg(long)]
    pattern: String,
    /// Size of each request (one page), e.g. 4KB.
    #[arg(long, default_value = "4KB")]
    page_size: String,
    /// Number of operations to measure.
    #[arg(long)]
    ops: u64,
    /// Region addressed, from the start of the device (default: the device, at most 1GB).
    #[arg(long)]
    span: Option<String>,
    /// Seed of random addresses (and of the device model).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Share of reads for the mixed pattern, e.g. 70 or 70%.
    #[arg(long, default_value = "50")]
    read_pct: String,
    /// Write the whole span before measuring, even for write patterns (overwrite a full device).
    #[arg(long, conflicts_with = "no_prefill")]
    prefill: bool,
    /// Never write the span before measuring (reads then hit never-written pages).
    #[arg(long)]
    no_prefill: bool,
    /// Load the simulated device's state from this file if it exists, and save it afterwards.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Use a device file (file:PATH) that exists and that spidx did not create: write
    /// patterns overwrite it and it is grown to the device's capacity.
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: IotestArgs) -> Result<()> {
    let pattern = Pattern::parse(&a.pattern)?;
    let page_size = parse_size("--page-size", &a.page_size)?;
    let page_size = usize::try_from(page_size).context("--page-size too large")?;
    spidx::device::validate_page_size(page_size)
        .with_context(|| format!("--page-size must be a multiple of {SECTOR} bytes"))?;
    let read_fraction = parse_percent("--read-pct", &a.read_pct)?;
    let resolved = DeviceSpec::new(&a.device)
        .with_params(&a.device_params)?
        .resolve()?;
    crate::own::check_devices(&resolved.config, a.force)?;
    let mut dev = resolved.config.open(page_size, a.state.as_deref())?;
    let span_pages = match &a.span {
        Some(s) => {
            let bytes = parse_size("--span", s)?;
            if bytes % page_size as u64 != 0 {
                anyhow::bail!(
                    "invalid --span: {s} is not a whole number of {}-byte pages",
                    page_size
                );
            }
            bytes / page_size as u64
        }
        None => dev.capacity_pages().min((1u64 << 30) / page_size as u64),
    };
    let prefill = match (a.prefill, a.no_prefill) {
        (true, _) => Prefill::Always,
        (_, true) => Prefill::Never,
        _ => Prefill::Auto,
    };
    // Simulated devices keep written pages in memory: bound the layout by half of it.
    let layout_budget = resolved
        .config
        .is_simulated()
        .then(|| available_memory() / 2);
    let opts = IoTestOptions {
        pattern,
        ops: a.ops,
        span_pages,
        seed: a.seed,
        read_fraction,
        prefill,
        layout_budget,
        time_limit: None,
    };
    let report = iotest::run(dev.as_mut(), &opts)?;
    dev.persist()?;
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        v["device_name"] = resolved.name.clone().into();
        v["device_kind"] = resolved.config.kind().into();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_human(&resolved.name, resolved.config.kind(), &report);
    }
    Ok(())
}

/// Memory available to new allocations (MemAvailable), or 4 GB if it cannot be read.
fn available_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(4 << 30, |kb| kb * 1024)
}

fn print_human(name: &str, kind: &str, r: &IoTestReport) {
    let pattern = serde_json::to_value(r.pattern)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    println!(
        "device    {name} ({kind}), page {}, span {}",
        format_size(r.page_size as u64),
        format_size(r.span_pages * r.page_size as u64)
    );
    println!(
        "pattern   {pattern}, {} ops, {:.2} MB",
        r.ops,
        r.bytes as f64 / 1e6
    );
    println!(
        "time      device {:.6} s, cpu {:.3} s, wall {:.3} s",
        r.device_s, r.cpu_s, r.elapsed_s
    );
    match (r.iops, r.mb_s) {
        (Some(iops), Some(mb_s)) => println!("rate      {iops:.0} IOPS, {mb_s:.1} MB/s"),
        _ => println!("rate      - (the device takes no time)"),
    }
    if let Some(l) = &r.latency {
        println!(
            "latency   mean {:.1} us, p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us",
            l.mean_us, l.p50_us, l.p90_us, l.p99_us, l.max_us
        );
    }
    println!("host      {} reads, {} writes", r.host_reads, r.host_writes);
    if let Some(f) = &r.device.flash {
        println!(
            "flash     {} reads, {} writes, {} erases, {} GC copies, write amplification {:.2}",
            f.flash_reads, f.flash_writes, f.erases, f.gc_copies, f.write_amplification
        );
    }
    if let Some(h) = &r.device.hdd {
        println!("hdd       {} seeks, {} buffer hits", h.seeks, h.buffer_hits);
    }
    if let Some(t) = &r.device.throttle {
        println!(
            "throttle  {} requests waited, {:.3} s waiting",
            t.throttled_requests,
            t.throttle_wait_ns as f64 * 1e-9
        );
    }
}
