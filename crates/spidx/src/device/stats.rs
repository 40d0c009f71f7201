//! Device statistics. Every device owns its counters; [`DeviceStats`] is the snapshot the
//! runner collects. Snapshots can be subtracted to get the counts of one phase.
//!
//! Serialized (the form the runner flattens into metrics, see
//! `experiment::protocol::flatten`), counters, gauges and settings are kept apart: counters
//! are plain fields, levels and ratios sit under `gauges` (`flash.gauges.erase_max`) and
//! configured values under `settings` (`settings.page_size`). The Rust fields stay flat;
//! only the serialized shape nests them, so a phase's difference never touches a gauge or
//! a setting by name either.

use serde::{Deserialize, Serialize};

/// Host-side request counters, kept the same way by every device.
///
/// A request is *sequential* when it starts at the page where the previous request (of
/// either kind) ended, otherwise *random*.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCounters {
    /// Read requests.
    pub read_ops: u64,
    /// Write requests.
    pub write_ops: u64,
    /// Pages read (a request of n pages counts n).
    pub pages_read: u64,
    /// Pages written.
    pub pages_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Read requests that continued the previous request.
    pub seq_reads: u64,
    /// Read requests that did not.
    pub random_reads: u64,
    /// Write requests that continued the previous request.
    pub seq_writes: u64,
    /// Write requests that did not.
    pub random_writes: u64,
    /// Sync (flush) requests.
    pub syncs: u64,
    /// Cache drops requested.
    pub cache_drops: u64,
    #[serde(skip)]
    next_page: Option<u64>,
}

impl HostCounters {
    /// Records a read of `pages` pages of `page_size` bytes at `page`; returns whether it
    /// was sequential.
    pub(crate) fn record_read(&mut self, page: u64, pages: u64, page_size: usize) -> bool {
        let seq = self.next_page == Some(page);
        self.read_ops += 1;
        self.pages_read += pages;
        self.bytes_read += pages * page_size as u64;
        if seq {
            self.seq_reads += 1;
        } else {
            self.random_reads += 1;
        }
        self.next_page = Some(page + pages);
        seq
    }

    /// Records a write; returns whether it was sequential.
    pub(crate) fn record_write(&mut self, page: u64, pages: u64, page_size: usize) -> bool {
        let seq = self.next_page == Some(page);
        self.write_ops += 1;
        self.pages_written += pages;
        self.bytes_written += pages * page_size as u64;
        if seq {
            self.seq_writes += 1;
        } else {
            self.random_writes += 1;
        }
        self.next_page = Some(page + pages);
        seq
    }

    /// Records a sync.
    pub(crate) fn record_sync(&mut self) {
        self.syncs += 1;
    }

    /// Records a cache drop; the next request counts as random.
    pub(crate) fn record_cache_drop(&mut self) {
        self.cache_drops += 1;
        self.next_page = None;
    }

    /// Counter-wise difference `self - earlier`.
    pub fn since(&self, earlier: &HostCounters) -> HostCounters {
        HostCounters {
            read_ops: self.read_ops - earlier.read_ops,
            write_ops: self.write_ops - earlier.write_ops,
            pages_read: self.pages_read - earlier.pages_read,
            pages_written: self.pages_written - earlier.pages_written,
            bytes_read: self.bytes_read - earlier.bytes_read,
            bytes_written: self.bytes_written - earlier.bytes_written,
            seq_reads: self.seq_reads - earlier.seq_reads,
            random_reads: self.random_reads - earlier.random_reads,
            seq_writes: self.seq_writes - earlier.seq_writes,
            random_writes: self.random_writes - earlier.random_writes,
            syncs: self.syncs - earlier.syncs,
            cache_drops: self.cache_drops - earlier.cache_drops,
            next_page: self.next_page,
        }
    }
}

/// Counters of a NAND flash translation layer (SimFlash and the SSD model). Serialized
/// with write amplification, the erase-count spread and the retired blocks under `gauges`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "FlashStatsShape", from = "FlashStatsShape")]
pub struct FlashStats {
    /// Flash page reads, including those done by garbage collection and read-modify-write.
    pub flash_reads: u64,
    /// Flash page programs, including garbage-collection and wear-levelling copies.
    pub flash_writes: u64,
    /// Block erases.
    pub erases: u64,
    /// Valid pages copied by garbage collection.
    pub gc_copies: u64,
    /// Valid pages copied by static wear levelling.
    pub wl_copies: u64,
    /// Garbage-collection runs (victim blocks reclaimed).
    pub gc_runs: u64,
    /// Flash pages programmed on behalf of the host (before GC and wear levelling).
    pub host_flash_writes: u64,
    /// Flash programs / host flash programs (1.0 when nothing was written). A gauge.
    pub write_amplification: f64,
    /// Smallest erase count over all blocks. A gauge.
    pub erase_min: u64,
    /// Largest erase count over all blocks. A gauge.
    pub erase_max: u64,
    /// Mean erase count over all blocks. A gauge.
    pub erase_mean: f64,
    /// Blocks retired after reaching the erase limit (so far). A gauge.
    pub retired_blocks: u64,
}

/// [`FlashStats`] as serialized: counters, then the gauges apart.
#[derive(Serialize, Deserialize)]
struct FlashStatsShape {
    flash_reads: u64,
    flash_writes: u64,
    erases: u64,
    gc_copies: u64,
    wl_copies: u64,
    gc_runs: u64,
    host_flash_writes: u64,
    gauges: FlashGauges,
}

/// The levels and ratios of a flash translation layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct FlashGauges {
    /// Flash programs / host flash programs (1.0 when nothing was written).
    pub write_amplification: f64,
    /// Smallest erase count over all blocks.
    pub erase_min: u64,
    /// Largest erase count over all blocks.
    pub erase_max: u64,
    /// Mean erase count over all blocks.
    pub erase_mean: f64,
    /// Blocks retired after reaching the erase limit.
    pub retired_blocks: u64,
}

impl From<FlashStats> for FlashStatsShape {
    fn from(f: FlashStats) -> Self {
        FlashStatsShape {
            flash_reads: f.flash_reads,
            flash_writes: f.flash_writes,
            erases: f.erases,
            gc_copies: f.gc_copies,
            wl_copies: f.wl_copies,
            gc_runs: f.gc_runs,
            host_flash_writes: f.host_flash_writes,
            gauges: FlashGauges {
                write_amplification: f.write_amplification,
                erase_min: f.erase_min,
                erase_max: f.erase_max,
                erase_mean: f.erase_mean,
                retired_blocks: f.retired_blocks,
            },
        }
    }
}

impl From<FlashStatsShape> for FlashStats {
    fn from(s: FlashStatsShape) -> Self {
        FlashStats {
            flash_reads: s.flash_reads,
            flash_writes: s.flash_writes,
            erases: s.erases,
            gc_copies: s.gc_copies,
            wl_copies: s.wl_copies,
            gc_runs: s.gc_runs,
            host_flash_writes: s.host_flash_writes,
            write_amplification: s.gauges.write_amplification,
            erase_min: s.gauges.erase_min,
            erase_max: s.gauges.erase_max,
            erase_mean: s.gauges.erase_mean,
            retired_blocks: s.gauges.retired_blocks,
        }
    }
}

impl FlashStats {
    /// Difference `self - earlier`; ratios and erase-count spread are of the later snapshot
    /// except write amplification, which is recomputed for the interval.
    pub fn since(&self, earlier: &FlashStats) -> FlashStats {
        let host = self.host_flash_writes - earlier.host_flash_writes;
        let writes = self.flash_writes - earlier.flash_writes;
        FlashStats {
            flash_reads: self.flash_reads - earlier.flash_reads,
            flash_writes: writes,
            erases: self.erases - earlier.erases,
            gc_copies: self.gc_copies - earlier.gc_copies,
            wl_copies: self.wl_copies - earlier.wl_copies,
            gc_runs: self.gc_runs - earlier.gc_runs,
            host_flash_writes: host,
            write_amplification: if host == 0 {
                1.0
            } else {
                writes as f64 / host as f64
            },
            ..*self
        }
    }
}

/// Counters of the hard-disk model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HddStats {
    /// Requests that needed a head movement to another cylinder.
    pub seeks: u64,
    /// Sum of seek distances in cylinders.
    pub seek_cylinders: u64,
    /// Requests served entirely from the track/read-ahead buffer.
    pub buffer_hits: u64,
    /// Modelled time spent seeking, in nanoseconds.
    pub seek_ns: u64,
    /// Modelled rotational latency, in nanoseconds.
    pub rotation_ns: u64,
    /// Modelled media transfer time, in nanoseconds.
    pub transfer_ns: u64,
}

impl HddStats {
    /// Difference `self - earlier`.
    pub fn since(&self, earlier: &HddStats) -> HddStats {
        HddStats {
            seeks: self.seeks - earlier.seeks,
            seek_cylinders: self.seek_cylinders - earlier.seek_cylinders,
            buffer_hits: self.buffer_hits - earlier.buffer_hits,
            seek_ns: self.seek_ns - earlier.seek_ns,
            rotation_ns: self.rotation_ns - earlier.rotation_ns,
            transfer_ns: self.transfer_ns - earlier.transfer_ns,
        }
    }
}

/// Counters of a throttled (cloud) device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrottleStats {
    /// I/O units charged against the IOPS cap (large requests count several).
    pub io_units: u64,
    /// Time requests waited because of the caps, in nanoseconds.
    pub throttle_wait_ns: u64,
    /// Requests that had to wait.
    pub throttled_requests: u64,
}

impl ThrottleStats {
    /// Difference `self - earlier`.
    pub fn since(&self, earlier: &ThrottleStats) -> ThrottleStats {
        ThrottleStats {
            io_units: self.io_units - earlier.io_units,
            throttle_wait_ns: self.throttle_wait_ns - earlier.throttle_wait_ns,
            throttled_requests: self.throttled_requests - earlier.throttled_requests,
        }
    }
}

/// A snapshot of everything a device counts. Serialized with the page size under
/// `settings` (`settings.page_size`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "DeviceStatsShape", from = "DeviceStatsShape")]
pub struct DeviceStats {
    /// Device kind: `memory`, `file`, `simflash`, `ssd`, `hdd`, `throttled`.
    pub kind: String,
    /// Page size in bytes (a setting, never summed or subtracted).
    pub page_size: usize,
    /// Host request counters.
    pub host: HostCounters,
    /// Time spent on I/O in nanoseconds (measured or modelled).
    pub device_ns: u64,
    /// Flash counters, for flash-based devices.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub flash: Option<FlashStats>,
    /// Hard-disk counters, for the HDD model.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hdd: Option<HddStats>,
    /// Throttling counters, for cloud disks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub throttle: Option<ThrottleStats>,
}

/// [`DeviceStats`] as serialized: the settings apart.
#[derive(Serialize, Deserialize)]
struct DeviceStatsShape {
    kind: String,
    settings: DeviceSettings,
    host: HostCounters,
    device_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    flash: Option<FlashStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    hdd: Option<HddStats>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    throttle: Option<ThrottleStats>,
}

/// A device's configured values, as its statistics report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
struct DeviceSettings {
    /// Page size in bytes.
    pub page_size: usize,
}

impl From<DeviceStats> for DeviceStatsShape {
    fn from(d: DeviceStats) -> Self {
        DeviceStatsShape {
            kind: d.kind,
            settings: DeviceSettings {
                page_size: d.page_size,
            },
            host: d.host,
            device_ns: d.device_ns,
            flash: d.flash,
            hdd: d.hdd,
            throttle: d.throttle,
        }
    }
}

impl From<DeviceStatsShape> for DeviceStats {
    fn from(s: DeviceStatsShape) -> Self {
        DeviceStats {
            kind: s.kind,
            page_size: s.settings.page_size,
            host: s.host,
            device_ns: s.device_ns,
            flash: s.flash,
            hdd: s.hdd,
            throttle: s.throttle,
        }
    }
}

impl DeviceStats {
    /// Counter-wise difference `self - earlier` (the counts of one phase).
    pub fn since(&self, earlier: &DeviceStats) -> DeviceStats {
        fn opt<T: Copy>(a: Option<T>, b: Option<T>, f: impl Fn(&T, &T) -> T) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(f(&a, &b)),
                (a, _) => a,
            }
        }
        DeviceStats {
            kind: self.kind.clone(),
            page_size: self.page_size,
            host: self.host.since(&earlier.host),
            device_ns: self.device_ns - earlier.device_ns,
            flash: opt(self.flash, earlier.flash, FlashStats::since),
            hdd: opt(self.hdd, earlier.hdd, HddStats::since),
            throttle: opt(self.throttle, earlier.throttle, ThrottleStats::since),
        }
    }

    /// Device time in seconds.
    pub fn device_s(&self) -> f64 {
        self.device_ns as f64 * 1e-9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_classification() {
        let mut h = HostCounters::default();
        assert!(!h.record_read(10, 2, 4096));
        assert!(h.record_read(12, 1, 4096));
        assert!(h.record_write(13, 4, 4096));
        assert!(!h.record_write(0, 1, 4096));
        h.record_cache_drop();
        assert!(!h.record_read(1, 1, 4096));
        assert_eq!(
            (h.seq_reads, h.random_reads, h.seq_writes, h.random_writes),
            (1, 2, 1, 1)
        );
        assert_eq!(h.pages_read, 4);
        assert_eq!(h.bytes_written, 5 * 4096);
    }

    #[test]
    fn since_subtracts() {
        let mut a = DeviceStats {
            kind: "simflash".into(),
            flash: Some(FlashStats::default()),
            ..Default::default()
        };
        a.host.record_write(0, 1, 512);
        let mut b = a.clone();
        b.host.record_write(1, 3, 512);
        b.device_ns = 500;
        b.flash = Some(FlashStats {
            flash_writes: 6,
            host_flash_writes: 3,
            ..Default::default()
        });
        let d = b.since(&a);
        assert_eq!(d.host.write_ops, 1);
        assert_eq!(d.host.pages_written, 3);
        assert_eq!(d.device_ns, 500);
        assert_eq!(d.flash.unwrap().write_amplification, 2.0);
    }

    #[test]
    fn serialized_settings_and_gauges_are_apart_and_round_trip() {
        let d = DeviceStats {
            kind: "simflash".into(),
            page_size: 4096,
            device_ns: 7,
            flash: Some(FlashStats {
                erases: 3,
                erase_max: 2,
                write_amplification: 1.5,
                ..Default::default()
            }),
            ..Default::default()
        };
        let j = serde_json::to_value(&d).unwrap();
        assert_eq!(j["settings"]["page_size"], 4096);
        assert!(j.get("page_size").is_none(), "{j}");
        assert_eq!(j["flash"]["erases"], 3);
        assert_eq!(j["flash"]["gauges"]["erase_max"], 2);
        assert_eq!(j["flash"]["gauges"]["write_amplification"], 1.5);
        assert!(j["flash"].get("erase_max").is_none(), "{j}");
        assert_eq!(serde_json::from_value::<DeviceStats>(j).unwrap(), d);
    }
}
