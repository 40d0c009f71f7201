//! Throttled devices: cloud disks, modelled as caps on IOPS and throughput on top of
//! another device (a [`super::memory::MemoryDevice`], a simulated HDD or SSD, or a real
//! file).
//!
//! Cloud providers meter a disk with token buckets: every request spends I/O tokens (a
//! request of up to `io_unit` bytes counts as one I/O, a larger one as
//! `ceil(bytes / io_unit)`) and byte tokens, both refilled at the provisioned rate. The
//! throttled device keeps its own virtual clock: a request arriving at time `a` whose inner
//! device needs `s` ns (the inner `device_ns()` delta: modelled or measured) completes at
//!
//! ```text
//!   max(a + s, earliest time both token buckets allow it) + latency
//! ```
//!
//! Tokens are spent at completion, so over any stretch of the run the device never exceeds
//! the caps (with `burst` = 1; a larger `burst` lets up to that many I/Os saved up while the
//! disk was under-used go through at once). A slow inner device is never sped up.
//!
//! Requests are issued one at a time (queue depth 1, as a single index does), so when the
//! latency exceeds the time one I/O token costs, the latency and not the cap bounds the
//! rate: 1 ms of latency allows at most 1,000 requests per second. The inner device keeps
//! its own clock, which does not see the time spent waiting for tokens (a simulated HDD's
//! platters do not turn while the throttle holds a request back).

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::pages::{load_state, save_state};
use super::stats::{DeviceStats, ThrottleStats};
use super::wrapper::{self, ReadReq, WriteReq};
use super::{no_virtual_clock, Device};
use crate::{Error, Result};

/// Parameters of a throttled (cloud) disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottleConfig {
    /// Cap on I/O operations per second.
    pub iops: u64,
    /// Cap on throughput in MB/s (MB = 10⁶ bytes).
    pub mb_s: f64,
    /// Bytes counted as one I/O for the IOPS cap; larger requests count
    /// `ceil(bytes / io_unit)` I/Os.
    pub io_unit: u64,
    /// Fixed latency added to every request (the network round trip), µs; may be 0.
    pub latency_us: f64,
    /// Token-bucket depth in I/Os: how many I/Os may go through at once after the disk was
    /// under-used. 1 (the default) means no burst.
    #[serde(default = "one")]
    pub burst: u32,
}

fn one() -> u32 {
    1
}

impl ThrottleConfig {
    /// Azure Standard HDD disk: 500 IOPS and 60 MB/s (Carniel et al. 2017, from the Azure
    /// documentation of the time). Azure counts I/Os of up to 256 KiB as one. The 1 ms
    /// latency is our assumption for the round trip from the VM to the storage service; it
    /// is meant to sit on top of a simulated HDD, which supplies the mechanical latency
    /// (about 13 ms per random read, within Azure's stated "reads under 20 ms").
    pub fn azure_standard_hdd() -> Self {
        ThrottleConfig {
            iops: 500,
            mb_s: 60.0,
            io_unit: 256 * 1024,
            latency_us: 1000.0,
            burst: 1,
        }
    }

    /// Azure Premium SSD disk: 5,000 IOPS and 200 MB/s (Carniel et al. 2017). I/Os of up
    /// to 256 KiB count as one. The 1 ms latency is our assumption for the network round
    /// trip; over a simulated SSD it gives the low-millisecond latency Azure advertises.
    pub fn azure_premium_ssd() -> Self {
        ThrottleConfig {
            iops: 5000,
            mb_s: 200.0,
            io_unit: 256 * 1024,
            latency_us: 1000.0,
            burst: 1,
        }
    }

    /// Checks every parameter; errors name the parameter.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str, msg: String| Err(Error::invalid(format!("throttle {what}"), msg));
        if self.iops == 0 || self.iops > 1_000_000_000 {
            return bad("iops", format!("{}; must be between 1 and 10^9", self.iops));
        }
        if !(self.mb_s.is_finite() && self.mb_s >= 0.001 && self.mb_s <= 1e7) {
            return bad(
                "mb_s",
                format!("{} MB/s; must be between 0.001 and 10^7", self.mb_s),
            );
        }
        if self.io_unit < 512 || self.io_unit > 1 << 30 {
            return bad(
                "io_unit",
                format!(
                    "{} bytes; must be between 512 bytes and 1 GiB",
                    self.io_unit
                ),
            );
        }
        if !(self.latency_us.is_finite() && self.latency_us >= 0.0 && self.latency_us <= 1e7) {
            return bad(
                "latency_us",
                format!("{} µs; must be between 0 and 10^7 µs", self.latency_us),
            );
        }
        if self.burst == 0 || self.burst > 1_000_000 {
            return bad(
                "burst",
                format!("{} I/Os; must be between 1 and 10^6", self.burst),
            );
        }
        Ok(())
    }
}

/// The throttle's clock and buckets, persisted next to the inner device's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct Clock {
    /// The throttled device's virtual clock, ns.
    now: u64,
    /// Each bucket is kept as the time its tokens are paid up to: the bucket holds
    /// `min(depth, (t - paid) / cost_per_token)` tokens at time `t`.
    io_paid: u64,
    bytes_paid: u64,
    stats: ThrottleStats,
}

/// A device whose requests are held back to given IOPS and throughput caps.
pub struct Throttled {
    inner: Box<dyn Device>,
    config: ThrottleConfig,
    latency_ns: u64,
    bytes_per_s: u64,
    clock: Clock,
    state_path: Option<PathBuf>,
}

impl Throttled {
    /// Wraps `inner` with the caps of `config`.
    pub fn new(inner: Box<dyn Device>, config: &ThrottleConfig) -> Result<Throttled> {
        Self::new_with_state(inner, config, None)
    }

    /// Like [`Throttled::new`]; with `state`, restores the throttle clock saved there by a
    /// previous [`Device::persist`] (if the file exists) and saves to it. The inner device
    /// persists its own state.
    pub(crate) fn new_with_state(
        inner: Box<dyn Device>,
        config: &ThrottleConfig,
        state: Option<&Path>,
    ) -> Result<Throttled> {
        config.validate()?;
        let clock: Clock = match state {
            Some(p) if p.exists() => load_state(p, "throttled")?,
            _ => Clock::default(),
        };
        if clock.now >= 1 << 62 || clock.io_paid > clock.now || clock.bytes_paid > clock.now {
            return Err(Error::corrupted(
                format!("device state {}", state.unwrap_or(Path::new("")).display()),
                "inconsistent throttle clock",
            ));
        }
        Ok(Throttled {
            inner,
            config: config.clone(),
            latency_ns: (config.latency_us * 1e3).round() as u64,
            bytes_per_s: (config.mb_s * 1e6).round() as u64,
            clock,
            state_path: state.map(Path::to_path_buf),
        })
    }

    /// The caps.
    pub fn config(&self) -> &ThrottleConfig {
        &self.config
    }

    /// The wrapped device.
    pub fn inner(&self) -> &dyn Device {
        self.inner.as_ref()
    }

    /// Earliest time (≥ `arrival`) the buckets let a request of `bytes` complete; spends
    /// its tokens.
    fn admit(&mut self, arrival: u64, bytes: u64) -> u64 {
        let c = &self.config;
        let units = bytes.div_ceil(c.io_unit).max(1);
        let (iops, bps) = (c.iops, self.bytes_per_s);
        let io = Bucket::new(self.clock.io_paid, arrival, units, c.burst as u64, iops);
        let by = Bucket::new(
            self.clock.bytes_paid,
            arrival,
            bytes,
            c.burst as u64 * c.io_unit,
            bps,
        );
        let t = io.allowed.max(by.allowed);
        self.clock.io_paid = io.paid_after(t);
        self.clock.bytes_paid = by.paid_after(t);
        self.clock.stats.io_units += units;
        t
    }

    /// Charges a completed inner request that took `inner_ns` and moved `bytes`.
    fn charge(&mut self, inner_ns: u64, bytes: u64) {
        let arrival = self.clock.now;
        let allowed = self.admit(arrival, bytes);
        let served = arrival + inner_ns;
        if allowed > served {
            self.clock.stats.throttled_requests += 1;
            self.clock.stats.throttle_wait_ns += allowed - served;
        }
        self.clock.now = served.max(allowed) + self.latency_ns;
    }
}

/// One token bucket evaluated for one request.
struct Bucket {
    /// Paid-up time after letting the bucket fill to its depth until the arrival.
    paid: u64,
    /// Cost of the request's tokens, ns.
    cost: u64,
    /// Cost of a full bucket (at least the request), ns.
    depth_cost: u64,
    /// Earliest completion the bucket allows.
    allowed: u64,
}

impl Bucket {
    fn new(paid: u64, arrival: u64, tokens: u64, depth: u64, per_s: u64) -> Bucket {
        // Rounding costs up keeps the long-run rate at or below the cap.
        let cost_of = |n: u64| (n as u128 * 1_000_000_000).div_ceil(per_s as u128) as u64;
        let cost = cost_of(tokens);
        let depth_cost = cost_of(depth.max(tokens));
        let paid = paid.max(arrival.saturating_sub(depth_cost));
        Bucket {
            paid,
            cost,
            depth_cost,
            allowed: arrival.max(paid + cost),
        }
    }

    /// The bucket's paid-up time after the request's tokens are spent at time `t`.
    fn paid_after(&self, t: u64) -> u64 {
        (self.paid + self.cost).max(t.saturating_sub(self.depth_cost - self.cost))
    }
}

impl wrapper::DeviceWrapper for Throttled {
    fn inner(&self) -> impl Deref<Target = dyn Device> + '_ {
        &*self.inner
    }

    fn inner_mut(&mut self) -> impl DerefMut<Target = dyn Device> + '_ {
        &mut *self.inner
    }

    fn read(&mut self, page: u64, req: ReadReq<'_>) -> Result<()> {
        let len = req.len(self.inner.page_size())?;
        let before = self.inner.device_ns();
        req.forward(&mut *self.inner, page)?;
        let ns = self.inner.device_ns().saturating_sub(before);
        self.charge(ns, len as u64);
        Ok(())
    }

    fn write(&mut self, page: u64, req: WriteReq<'_>) -> Result<()> {
        let before = self.inner.device_ns();
        req.forward(&mut *self.inner, page)?;
        let ns = self.inner.device_ns().saturating_sub(before);
        self.charge(ns, req.data.len() as u64);
        Ok(())
    }

    /// Syncs the inner device; the flush costs its time plus one round trip.
    fn sync(&mut self) -> Result<()> {
        let before = self.inner.device_ns();
        self.inner.sync()?;
        let ns = self.inner.device_ns().saturating_sub(before);
        self.clock.now += ns + self.latency_ns;
        Ok(())
    }

    fn drop_caches(&mut self) -> Result<()> {
        let before = self.inner.device_ns();
        self.inner.drop_caches()?;
        self.clock.now += self.inner.device_ns().saturating_sub(before);
        Ok(())
    }

    fn device_ns(&self) -> u64 {
        self.clock.now
    }

    /// The inner device's statistics (host counters, flash or HDD counters) with kind
    /// `throttled`, the throttled clock and the throttle counters.
    fn stats(&self) -> DeviceStats {
        let mut s = self.inner.stats();
        s.kind = "throttled".into();
        s.device_ns = self.clock.now;
        s.throttle = Some(self.clock.stats);
        s
    }

    fn persist(&mut self) -> Result<()> {
        self.inner.persist()?;
        match &self.state_path {
            Some(p) => save_state(p, "throttled", &self.clock),
            None => Ok(()),
        }
    }

    /// Refused: the buckets model one host's stream of requests.
    fn submit_at(&mut self, _at_ns: u64) -> Result<()> {
        Err(no_virtual_clock("throttled"))
    }

    fn completed_ns(&self) -> u64 {
        self.clock.now
    }
}

#[cfg(test)]
mod tests;
