//! Measuring a phase of work (a construction, a query's filter or refinement step): the
//! process CPU time, the device's time and counters, and the elapsed time — wall time on
//! real devices, CPU + device time on simulated ones (whose clock is virtual).

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
    /// Elapsed time: wall time on real devices, `cpu_s + device_s` on simulated ones.
    pub elapsed_s: f64,
    /// The device's counters during the phase.
    pub device: DeviceStats,
}

impl PhaseReport {
    /// Adds another phase's figures to this one (for totals over several phases).
    pub fn add(&mut self, o: &PhaseReport) {
        self.cpu_s += o.cpu_s;
        self.device_s += o.device_s;
        self.elapsed_s += o.elapsed_s;
    }
}

/// A running measurement; [`PhaseClock::stop`] gives the [`PhaseReport`].
pub struct PhaseClock {
    before: DeviceStats,
    cpu0: u64,
    wall0: Instant,
    simulated: bool,
}

impl PhaseClock {
    /// Starts measuring work on `dev`; `simulated` selects how elapsed time is computed.
    pub fn start(dev: &dyn Device, simulated: bool) -> Self {
        PhaseClock {
            before: dev.stats(),
            cpu0: process_cpu_ns(),
            wall0: Instant::now(),
            simulated,
        }
    }

    /// Ends the measurement.
    pub fn stop(self, dev: &dyn Device) -> PhaseReport {
        let cpu_s = process_cpu_ns().saturating_sub(self.cpu0) as f64 * 1e-9;
        let wall = self.wall0.elapsed().as_secs_f64();
        let device = dev.stats().since(&self.before);
        let device_s = device.device_s();
        let elapsed_s = if self.simulated {
            cpu_s + device_s
        } else {
            wall
        };
        PhaseReport {
            cpu_s,
            device_s,
            elapsed_s,
            device,
        }
    }
}
