//! Measuring a phase of work (a construction, a query's filter or refinement step): the
//! process CPU time, the device's time and counters, and the elapsed time — wall time on
//! real devices, CPU + device time on simulated ones (whose clock is virtual). A FAST or
//! eFIND log on a second device (`log_device = "separate:..."`) is measured apart
//! (`log_device`, `log_device_s`) and its time is part of a simulated run's elapsed time.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::clock::process_cpu_ns;
use crate::device::{Device, DeviceStats};

/// What one phase cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Process CPU time, seconds.
    pub cpu_s: f64,
    /// Device time (modelled or measured), seconds.
    pub device_s: f64,
    /// Elapsed time: wall time on real devices, `cpu_s + device_s (+ log_device_s)` on
    /// simulated ones.
    pub elapsed_s: f64,
    /// The device's counters during the phase.
    pub device: DeviceStats,
    /// Time of the log's own device (modelled or measured), seconds; only when the log is
    /// on a second device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_device_s: Option<f64>,
    /// The log device's counters during the phase; only when the log is on a second
    /// device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_device: Option<DeviceStats>,
}

impl PhaseReport {
    /// Adds another phase's figures to this one (for totals over several phases).
    pub fn add(&mut self, o: &PhaseReport) {
        self.cpu_s += o.cpu_s;
        self.device_s += o.device_s;
        self.elapsed_s += o.elapsed_s;
        if let Some(l) = o.log_device_s {
            *self.log_device_s.get_or_insert(0.0) += l;
        }
    }
}

/// A running measurement; [`PhaseClock::stop`] gives the [`PhaseReport`].
pub struct PhaseClock {
    before: DeviceStats,
    log_before: Option<DeviceStats>,
    cpu0: u64,
    wall0: Instant,
    simulated: bool,
}

impl PhaseClock {
    /// Starts measuring work on `dev`; `simulated` selects how elapsed time is computed.
    pub fn start(dev: &dyn Device, simulated: bool) -> Self {
        Self::start_with_log(dev, None, simulated)
    }

    /// Starts measuring work on `dev` and on the log's own device `log`, if any (stop the
    /// clock with [`stop_with_log`](Self::stop_with_log), or through
    /// [`SpatialIndex::stop_phase`](super::SpatialIndex::stop_phase)).
    pub(crate) fn start_with_log(
        dev: &dyn Device,
        log: Option<&dyn Device>,
        simulated: bool,
    ) -> Self {
        PhaseClock {
            log_before: log.map(|l| l.stats()),
            before: dev.stats(),
            cpu0: process_cpu_ns(),
            wall0: Instant::now(),
            simulated,
        }
    }

    /// Ends the measurement of a clock started without a log device.
    pub(crate) fn stop(self, dev: &dyn Device) -> PhaseReport {
        self.stop_with_log(dev, None)
    }

    /// Ends the measurement; `log` must be the log device the clock started with.
    pub(crate) fn stop_with_log(self, dev: &dyn Device, log: Option<&dyn Device>) -> PhaseReport {
        let cpu_s = process_cpu_ns().saturating_sub(self.cpu0) as f64 * 1e-9;
        let wall = self.wall0.elapsed().as_secs_f64();
        let device = dev.stats().since(&self.before);
        let device_s = device.device_s();
        let log_device = match (log, &self.log_before) {
            (Some(l), Some(b)) => Some(l.stats().since(b)),
            _ => None,
        };
        let log_device_s = log_device.as_ref().map(DeviceStats::device_s);
        let elapsed_s = if self.simulated {
            cpu_s + device_s + log_device_s.unwrap_or(0.0)
        } else {
            wall
        };
        PhaseReport {
            cpu_s,
            device_s,
            elapsed_s,
            device,
            log_device_s,
            log_device,
        }
    }
}
