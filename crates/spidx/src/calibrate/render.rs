//! The device file `spidx calibrate` writes: a complete device description (`kind` and
//! every parameter, loadable by `--device FILE.toml`), preceded by comments with the rule
//! that chose the model, the residuals and the raw probe figures. Only the parameters are
//! read back; the comments are for the reader and may be deleted.

use std::fmt::Write as _;

use super::fit::Fit;
use super::ProbeFigures;
use crate::{Error, Result};

/// The text of the device file for `fit` of `figures`, named `name`: a pure function of
/// its inputs (the same figures give the same bytes).
pub fn device_file(name: &str, figures: &ProbeFigures, fit: &Fit) -> Result<String> {
    let mut s = String::new();
    let w = &mut s;
    // Writing to a String cannot fail.
    let _ = writeln!(
        w,
        "# Device model fitted by `spidx calibrate` to probes of a real drive."
    );
    let _ = writeln!(
        w,
        "# Edit the parameters below freely; the comments are not read back."
    );
    let _ = writeln!(w, "#");
    let _ = writeln!(w, "# Model: {}", fit.reason);
    let _ = writeln!(
        w,
        "# Probes: {} of the drive addressed, page-size probes of {} bytes, queue depth N = {} threads.",
        crate::units::format_size(figures.span),
        figures.page_size,
        figures.threads
    );
    let _ = writeln!(w, "#");
    let _ = writeln!(w, "# Residuals (model vs drive):");
    let _ = writeln!(
        w,
        "# {:<20} {:<8} {:>12} {:>12} {:>8}",
        "probe", "figure", "measured", "model", "error"
    );
    for r in &fit.residuals {
        let _ = writeln!(
            w,
            "# {:<20} {:<8} {:>12.1} {:>12.1} {:>7.1}%",
            r.probe, r.figure, r.measured, r.predicted, r.error_pct
        );
    }
    let _ = writeln!(w, "#");
    let _ = writeln!(w, "# Raw probe figures (latency per request, us):");
    let _ = writeln!(
        w,
        "# {:<20} {:>8} {:>3} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "probe", "request", "qd", "ops", "iops", "mean", "p50", "p90", "p99", "max"
    );
    for p in &figures.probes {
        let lat = match p.latency {
            Some(l) => format!(
                "{:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
                l.mean_us, l.p50_us, l.p90_us, l.p99_us, l.max_us
            ),
            None => format!("{:>9} {:>9} {:>9} {:>9} {:>9}", "-", "-", "-", "-", "-"),
        };
        let _ = writeln!(
            w,
            "# {:<20} {:>8} {:>3} {:>8} {:>10.1} {lat}",
            p.probe.name(),
            p.request,
            p.queue_depth,
            p.ops,
            p.iops
        );
    }
    let _ = writeln!(w);
    let name = toml::Value::String(name.to_string());
    let _ = writeln!(w, "name = {name}");
    let body = toml::to_string(&fit.config)
        .map_err(|e| Error::invalid("device file", format!("cannot write the model: {e}")))?;
    s.push_str(&body);
    Ok(s)
}
