//! `spidx calibrate --host`: fits a host profile (the modelled host cost per operation of
//! simulated runs) to this machine and writes it as a `[protocol.host]` table to paste into
//! a spec (see `spidx::calibrate::host` and docs/devices.md, "Host profiles").

use std::path::Path;

use anyhow::{Context, Result};
use spidx::calibrate::host::{fit_host, HostFit, HostFitOptions};

/// Runs the fit in the directory of `out` and writes the profile there.
pub fn run(out: &Path, write: impl FnOnce(&str) -> Result<()>) -> Result<()> {
    let work = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::env::current_dir().context("the current directory")?,
    };
    let work = tempfile::Builder::new()
        .prefix(".spidx-host-fit-")
        .tempdir_in(&work)
        .with_context(|| format!("a work directory in {}", work.display()))?;
    eprintln!("fitting the host profile (in-memory indices, about a minute)...");
    let fit = fit_host(&HostFitOptions::default(), work.path())?;
    let text = render(&fit)?;
    write(&text)?;
    print!("{text}");
    Ok(())
}

/// The profile as a spec's `[protocol.host]` table, with what was measured as comments.
pub fn render(fit: &HostFit) -> Result<String> {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    let mut s = String::new();
    s.push_str(
        "# Host profile fitted by `spidx calibrate --host` (docs/devices.md, \"Host profiles\").\n",
    );
    s.push_str(&format!(
        "# spidx {}; load average {load} when it finished; {} filter, {} refinement and {} construction phases\n",
        env!("CARGO_PKG_VERSION"),
        fit.phases[0],
        fit.phases[1],
        fit.phases[2]
    ));
    s.push_str(&format!(
        "# over {} objects at page sizes {:?}; fitted total within {:.1} % of the measured CPU time.\n",
        fit.options.objects,
        fit.options.page_sizes,
        fit.total_error * 100.0
    ));
    s.push_str(&format!(
        "# Request paths (CPU per call): pread of a cached page {:.3} us (request_us); open + lseek + read + close {:.3} us.\n",
        fit.syscalls.pread_us, fit.syscalls.open_seek_read_close_us
    ));
    s.push_str("[protocol.host]\n");
    for (k, v) in fit.profile.fields() {
        s.push_str(&format!("{k} = {v:.4}\n"));
    }
    Ok(s)
}

/// `spidx calibrate --paper-table`: Table I's probes on the presets, model against table.
pub fn paper_table() -> Result<()> {
    eprintln!("running Table I's probes (4 KB random reads and writes) on the presets...");
    let rows = spidx::calibrate::paper_table::table_i(2000)?;
    println!("Carniel et al. 2017, Table I (Iometer, settings not given) against the models:");
    println!(
        "{:<11} {:<10} {:>3} {:>10} {:>12} {:>10} {:>7}",
        "preset", "probe", "QD", "span", "model MB/s", "table MB/s", "ratio"
    );
    for r in rows {
        println!(
            "{:<11} {:<10} {:>3} {:>10} {:>12.3} {:>10.3} {:>7.2}",
            r.preset,
            r.probe,
            r.queue_depth,
            spidx::units::format_size(r.span_bytes),
            r.model_mb_s,
            r.table_mb_s,
            r.model_mb_s / r.table_mb_s
        );
    }
    Ok(())
}
