//! Measuring a phase of work (a construction, a query's filter or refinement step): the
//! process CPU time, the device's time and counters, the host's operation counts, and the
//! elapsed time — wall time on real devices; on simulated ones (whose clock is virtual)
//! the device time plus the modelled host time of [`super::host`], never the measured CPU
//! time, so the same spec gives the same elapsed time on any machine and under any load. A
//! FAST or eFIND log on a second device (`log_device = "separate:..."`) is measured apart
//! (`log_device`, `log_device_s`) and its time is part of a simulated run's elapsed time.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::host::{HostOps, HostProfile};
use crate::clock::process_cpu_ns;
use crate::device::{Device, DeviceStats};

/// What one phase cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Process CPU time, seconds (measured; never part of a simulated elapsed time).
    pub cpu_s: f64,
    /// Device time (modelled or measured), seconds.
    pub device_s: f64,
    /// Modelled host time, seconds: the host profile's price of [`host`](Self::host) on
    /// simulated devices; 0 on real ones (their elapsed time is measured).
    #[serde(default)]
    pub host_s: f64,
    /// Elapsed time: wall time on real devices, `device_s (+ log_device_s) + host_s` on
    /// simulated ones.
    pub elapsed_s: f64,
    /// What the host did (counts).
    #[serde(default)]
    pub host: HostOps,
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
        self.host_s += o.host_s;
        self.elapsed_s += o.elapsed_s;
        self.host.add(&o.host);
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
    ops0: HostOps,
    /// The host profile on a simulated device; `None` on a real one (wall time).
    host: Option<HostProfile>,
}

impl PhaseClock {
    /// Starts measuring work on `dev`, whose host has done `ops` so far; `host` is the
    /// host profile on a simulated device, `None` on a real one (elapsed = wall time).
    pub fn start(dev: &dyn Device, ops: HostOps, host: Option<&HostProfile>) -> Self {
        Self::start_with_log(dev, None, ops, host)
    }

    /// Starts measuring work on `dev` and on the log's own device `log`, if any (stop the
    /// clock with [`stop_with_log`](Self::stop_with_log), or through
    /// [`SpatialIndex::stop_phase`](super::SpatialIndex::stop_phase)).
    pub(crate) fn start_with_log(
        dev: &dyn Device,
        log: Option<&dyn Device>,
        ops: HostOps,
        host: Option<&HostProfile>,
    ) -> Self {
        PhaseClock {
            log_before: log.map(|l| l.stats()),
            before: dev.stats(),
            cpu0: process_cpu_ns(),
            wall0: Instant::now(),
            ops0: ops,
            host: host.cloned(),
        }
    }

    /// Ends the measurement of a clock started without a log device; `ops` are the host's
    /// counts now.
    pub(crate) fn stop(self, dev: &dyn Device, ops: HostOps) -> PhaseReport {
        self.stop_with_log(dev, None, ops)
    }

    /// Ends the measurement; `log` must be the log device the clock started with, `ops`
    /// the host's counts now (device requests are counted here, from the devices).
    pub(crate) fn stop_with_log(
        self,
        dev: &dyn Device,
        log: Option<&dyn Device>,
        ops: HostOps,
    ) -> PhaseReport {
        let cpu_s = process_cpu_ns().saturating_sub(self.cpu0) as f64 * 1e-9;
        let wall = self.wall0.elapsed().as_secs_f64();
        let device = dev.stats().since(&self.before);
        let device_s = device.device_s();
        let log_device = match (log, &self.log_before) {
            (Some(l), Some(b)) => Some(l.stats().since(b)),
            _ => None,
        };
        let log_device_s = log_device.as_ref().map(DeviceStats::device_s);
        let mut host = ops.since(&self.ops0);
        host.requests = requests(&device) + log_device.as_ref().map_or(0, requests);
        let (host_s, elapsed_s) = match &self.host {
            Some(p) => {
                let h = p.cost_s(&host);
                (h, device_s + log_device_s.unwrap_or(0.0) + h)
            }
            None => (0.0, wall),
        };
        PhaseReport {
            cpu_s,
            device_s,
            host_s,
            elapsed_s,
            host,
            device,
            log_device_s,
            log_device,
        }
    }
}

/// Requests a device served: reads, writes and syncs.
fn requests(d: &DeviceStats) -> u64 {
    d.host.read_ops + d.host.write_ops + d.host.syncs
}
