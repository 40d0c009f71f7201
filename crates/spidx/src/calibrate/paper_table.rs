//! The seeds' device table as probes: Carniel et al. (2017, Table I) list what Iometer
//! measured on their drives — 4 KB random reads and writes, in MB/s. `spidx calibrate
//! --paper-table` runs the same probes on the presets that model those drives and prints
//! model against table, so that a reader sees how far each model is from the figures the
//! papers give of its drive. Table I is device data: it is never a finding the scorecard
//! scores.
//!
//! The paper does not give Iometer's settings. Iometer's defaults are one outstanding I/O
//! and the whole disk as the test span; the probes run at queue depth 1 over the whole
//! hard disk, and over a 1 GB written span of the SSD (an SSD's never-written pages cost
//! nothing to read), and at queue depth 32 on the SSD as well (the queue depth the
//! `ssd-v300` calibration assumed for the same figures).

use serde::Serialize;

use crate::device::preset;
use crate::device::ssd::SsdConfig;
use crate::device::DeviceConfig;
use crate::iotest::{self, IoTestOptions, Pattern, Prefill};
use crate::{Error, Result};

/// One probe of the table.
#[derive(Debug, Clone, Serialize)]
pub struct TableRow {
    /// The preset probed.
    pub preset: &'static str,
    /// `randread` or `randwrite`, 4 KB.
    pub probe: &'static str,
    /// Requests outstanding.
    pub queue_depth: u32,
    /// Bytes addressed.
    pub span_bytes: u64,
    /// What the model gives, MB/s (10⁶ bytes).
    pub model_mb_s: f64,
    /// What Table I gives, MB/s.
    pub table_mb_s: f64,
}

/// Carniel et al. 2017, Table I: (preset, probe, MB/s).
pub const TABLE_I: [(&str, &str, f64); 4] = [
    ("hdd-wd2tb", "randread", 0.185),
    ("hdd-wd2tb", "randwrite", 0.441),
    ("ssd-v300", "randread", 285.156),
    ("ssd-v300", "randwrite", 109.375),
];

const PAGE: usize = 4096;
const SSD_SPAN: u64 = 1 << 30;

/// Runs every probe of Table I with `ops` requests each.
pub fn table_i(ops: u64) -> Result<Vec<TableRow>> {
    let mut rows = Vec::new();
    for (name, probe, table) in TABLE_I {
        let p = preset::find(name)
            .ok_or_else(|| Error::invalid("preset", format!("{name} is not a preset")))?;
        let depths: &[u32] = match p.config {
            DeviceConfig::Ssd(_) => &[1, 32],
            _ => &[1],
        };
        for &qd in depths {
            let config = match &p.config {
                DeviceConfig::Ssd(s) => DeviceConfig::Ssd(SsdConfig {
                    queue_depth: qd,
                    ..s.clone()
                }),
                c => c.clone(),
            };
            let mut dev = config.open(PAGE, None)?;
            let (span_pages, prefill) = match config {
                DeviceConfig::Ssd(_) => (SSD_SPAN / PAGE as u64, Prefill::Auto),
                _ => (dev.capacity_pages(), Prefill::Never),
            };
            let rep = iotest::run(
                dev.as_mut(),
                &IoTestOptions {
                    pattern: Pattern::parse(probe)?,
                    ops,
                    span_pages,
                    seed: 42,
                    read_fraction: 1.0,
                    prefill,
                    layout_budget: None,
                    time_limit: None,
                },
            )?;
            rows.push(TableRow {
                preset: name,
                probe,
                queue_depth: qd,
                span_bytes: span_pages * PAGE as u64,
                model_mb_s: rep.mb_s.unwrap_or(0.0),
                table_mb_s: table,
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_of_the_table_runs_on_its_preset() {
        let rows = table_i(300).unwrap();
        assert_eq!(rows.len(), 6);
        for r in &rows {
            assert!(r.model_mb_s > 0.0, "{r:?}");
        }
        // The hard disk's mechanics bound random reads over the whole disk: one seek and
        // half a revolution per request, about 75 per second (0.3 MB/s), above Table I's
        // 0.185 MB/s, which no 7200 rpm drive serves one request at a time.
        let hdd_read = &rows[0];
        assert!((0.2..0.45).contains(&hdd_read.model_mb_s), "{hdd_read:?}");
    }
}
