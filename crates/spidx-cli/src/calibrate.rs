//! `spidx calibrate`: probes a real drive through a probe file with direct I/O, fits a
//! device model to the figures and writes an editable device file (see
//! `spidx::calibrate` and docs/devices.md, "Calibrating a model from your drive").

use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use spidx::calibrate::probe::{self, ProbeOptions, Progress, LAYOUT_REQUEST, STEPS};
use spidx::calibrate::{fit, render, ProbeFigures};
use spidx::units::{format_size, parse_size};

/// Arguments of `spidx calibrate`.
#[derive(Args)]
pub struct CalibrateArgs {
    /// The drive to probe, as file:PATH: a probe file on that drive's filesystem, created
    /// (and deleted afterwards) by calibrate. Not used with --from-figures.
    target: Option<String>,
    /// The device file to write (.toml; load it with --device); with --host, the host
    /// profile. Not used with --paper-table.
    #[arg(long, required_unless_present = "paper_table")]
    out: Option<PathBuf>,
    /// Overwrite --out if it exists.
    #[arg(long)]
    force: bool,
    /// Size of the probe file (the span the probes address), a whole number of MiB.
    #[arg(long, default_value = "256MiB")]
    size: String,
    /// Wall time for the whole calibration (layout and probes), e.g. 60s, 2m.
    #[arg(long, default_value = "60s")]
    time_budget: String,
    /// Request size of the page-size probes, a multiple of 4KB up to 1MB.
    #[arg(long, default_value = "16KB")]
    page_size: String,
    /// Queue depth N of the queue-depth-N probes: N threads, one request each.
    #[arg(long, default_value_t = 8)]
    threads: u32,
    /// Most requests per probe (per thread at queue depth N).
    #[arg(long, default_value_t = 20_000)]
    max_ops: u64,
    /// Seed of the probes' random addresses.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Probe an existing file (its contents are destroyed; it is kept afterwards).
    #[arg(long)]
    overwrite_target: bool,
    /// Keep the probe file calibrate created.
    #[arg(long)]
    keep: bool,
    /// Name of the device in results (default: the --out file's name).
    #[arg(long)]
    name: Option<String>,
    /// Also save the raw probe figures as JSON here (refit them with --from-figures).
    #[arg(long)]
    save_figures: Option<PathBuf>,
    /// Fit probe figures saved by --save-figures instead of probing a drive.
    #[arg(long, conflicts_with = "target")]
    from_figures: Option<PathBuf>,
    /// Fit a host profile (the modelled host cost per operation of simulated runs) to this
    /// machine instead of a drive model; --out gets a spec's [protocol.host] table.
    #[arg(long, conflicts_with_all = ["target", "from_figures", "save_figures"])]
    host: bool,
    /// Run the seeds' device table (Carniel et al. 2017, Table I: 4 KB random reads and
    /// writes) on the presets of those drives and print model against table.
    #[arg(long, conflicts_with_all = ["target", "from_figures", "save_figures", "host", "out"])]
    paper_table: bool,
}

pub fn run(a: CalibrateArgs) -> Result<()> {
    if a.paper_table {
        return crate::calibrate_host::paper_table();
    }
    let out = a.out.clone().context("give --out FILE.toml")?;
    check_out(&out, a.force)?;
    if a.host {
        return crate::calibrate_host::run(&out, |text| write_out(&out, a.force, text));
    }
    let name = match &a.name {
        Some(n) if n.trim().is_empty() => bail!("invalid --name: it is empty"),
        Some(n) => n.clone(),
        None => out
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("calibrated")
            .to_string(),
    };
    let figures = match (&a.target, &a.from_figures) {
        (_, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading --from-figures {}", path.display()))?;
            let f: ProbeFigures = serde_json::from_str(&text)
                .with_context(|| format!("invalid --from-figures {}", path.display()))?;
            f.validate()?;
            f
        }
        (Some(target), None) => probe_target(&a, target)?,
        (None, None) => bail!("give the drive to probe as file:PATH, or --from-figures FILE"),
    };
    if let Some(path) = &a.save_figures {
        let text = serde_json::to_string_pretty(&figures)? + "\n";
        crate::own::write_out(path, text.as_bytes(), a.force)
            .with_context(|| format!("writing --save-figures {}", path.display()))?;
    }
    let fitted = fit::fit(&figures)?;
    let text = render::device_file(&name, &figures, &fitted)?;
    write_out(&out, a.force, &text)?;
    println!("{}", fitted.reason);
    println!(
        "{:<20} {:<8} {:>12} {:>12} {:>8}",
        "probe", "figure", "measured", "model", "error"
    );
    for r in &fitted.residuals {
        println!(
            "{:<20} {:<8} {:>12.1} {:>12.1} {:>7.1}%",
            r.probe, r.figure, r.measured, r.predicted, r.error_pct
        );
    }
    println!(
        "wrote {} ({} model)",
        out.display(),
        serde_json::to_value(fitted.kind)?.as_str().unwrap_or("?")
    );
    Ok(())
}

/// `--out` must be a .toml path (what --device loads as a device file), new unless --force.
fn check_out(out: &Path, force: bool) -> Result<()> {
    if out.extension().and_then(|e| e.to_str()) != Some("toml") {
        bail!(
            "invalid --out {}: a device file must end in .toml (that is how --device recognises one)",
            out.display()
        );
    }
    if out.exists() && !force {
        bail!(
            "invalid --out {}: it exists; pass --force to overwrite it",
            out.display()
        );
    }
    Ok(())
}

/// Writes `--out` as every `--out` is written ([`crate::own::write_out`]): a new file, or
/// with `--force` an existing one replaced; never through a symbolic link.
fn write_out(out: &Path, force: bool, text: &str) -> Result<()> {
    crate::own::write_out(out, text.as_bytes(), force)
}

/// Parses a duration: a number of seconds, or a number followed by ms, s, m or h.
pub fn parse_duration(what: &str, text: &str) -> Result<Duration> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .with_context(|| {
            format!("invalid {what}: '{text}' is not a duration (e.g. 90, 90s, 2m)")
        })?;
    Ok(Duration::from_secs_f64(v * scale))
}

/// Removes the probe file calibrate created when dropped (unless it is to be kept).
struct ProbeFile {
    path: PathBuf,
    remove: bool,
}

impl Drop for ProbeFile {
    fn drop(&mut self) {
        if self.remove {
            if let Err(e) = std::fs::remove_file(&self.path) {
                eprintln!(
                    "warning: could not delete the probe file {}: {e}",
                    self.path.display()
                );
            }
        }
    }
}

/// (total, available) bytes of the filesystem holding `dir`.
fn filesystem_space(dir: &Path) -> Result<(u64, u64)> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .with_context(|| format!("{}: a path with a NUL byte", dir.display()))?;
    // SAFETY: statvfs fills a zeroed struct from a valid NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut s) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("reading the free space of {}", dir.display()));
    }
    let frsize = s.f_frsize as u64;
    Ok((s.f_blocks as u64 * frsize, s.f_bavail as u64 * frsize))
}

fn probe_target(a: &CalibrateArgs, target: &str) -> Result<ProbeFigures> {
    let Some(path) = target.strip_prefix("file:") else {
        bail!("invalid TARGET '{target}': give a probe file on the drive as file:PATH (e.g. file:/mnt/ssd/spidx-calibrate.bin)");
    };
    if path.is_empty() {
        bail!("invalid TARGET 'file:': it needs a path, e.g. file:/mnt/ssd/spidx-calibrate.bin");
    }
    let path = PathBuf::from(path);
    let size = parse_size("--size", &a.size)?;
    if size < LAYOUT_REQUEST as u64 || !size.is_multiple_of(LAYOUT_REQUEST as u64) {
        bail!(
            "invalid --size {}: it must be a whole number of MiB, at least 1MiB",
            a.size
        );
    }
    let page_size = usize::try_from(parse_size("--page-size", &a.page_size)?)
        .context("--page-size too large")?;
    if page_size < 4096 || !page_size.is_multiple_of(4096) || page_size > LAYOUT_REQUEST {
        bail!(
            "invalid --page-size {}: it must be a multiple of 4KB between 4KB and 1MB",
            a.page_size
        );
    }
    if !(2..=256).contains(&a.threads) {
        bail!(
            "invalid --threads {}: queue depth N must be between 2 and 256",
            a.threads
        );
    }
    let budget = parse_duration("--time-budget", &a.time_budget)?;
    if budget < Duration::from_secs(1) || budget > Duration::from_secs(3600) {
        bail!(
            "invalid --time-budget {}: it must be between 1s and 1h",
            a.time_budget
        );
    }
    if a.max_ops == 0 {
        bail!("invalid --max-ops 0: it must be at least 1");
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        bail!(
            "invalid TARGET {}: the directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    let (total, avail) = filesystem_space(&dir)?;
    let existing = std::fs::symlink_metadata(&path).ok();
    let created = match existing {
        Some(m) => {
            if !m.is_file() {
                bail!(
                    "invalid TARGET {}: it exists and is not a regular file (calibrate probes through a file on the drive's filesystem, never a device node or directory)",
                    path.display()
                );
            }
            if !a.overwrite_target {
                bail!(
                    "invalid TARGET {}: the file exists and calibrate did not create it; its contents would be overwritten. Pass --overwrite-target to probe it anyway, or name a new file",
                    path.display()
                );
            }
            false
        }
        None => {
            if size > avail {
                bail!(
                    "invalid --size {}: the filesystem of {} has only {} free",
                    a.size,
                    dir.display(),
                    format_size(avail)
                );
            }
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .with_context(|| format!("creating the probe file {}", path.display()))?;
            true
        }
    };
    let _guard = ProbeFile {
        path: path.clone(),
        remove: created && !a.keep,
    };
    let opts = ProbeOptions {
        path: path.clone(),
        size,
        page_size,
        threads: a.threads,
        time_budget: budget,
        max_ops: a.max_ops,
        seed: a.seed,
        capacity: total,
    };
    let bar = ProgressBar::new(STEPS as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {bar:30} {pos}/{len} {msg}")
            .expect("valid progress template"),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let mut on_progress = |p: Progress| {
        bar.set_position(p.done as u64);
        match p.next {
            Some(next) => bar.set_message(format!(
                "{next}; at most {}s left",
                p.remaining.as_secs_f64().ceil()
            )),
            None => bar.finish_and_clear(),
        }
    };
    let figures = probe::run(&opts, &mut on_progress).map_err(|e| {
        bar.abandon();
        anyhow::Error::from(e).context(format!(
            "probing {} (calibrate needs direct I/O on a file of the drive's filesystem)",
            path.display()
        ))
    })?;
    Ok(figures)
}
