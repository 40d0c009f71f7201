//! The hard-disk model's parameters ([`HddConfig`]): what a drive's datasheet gives, with
//! their validation and the geometry and seek curve derived from them for [`super::SimHdd`].

use serde::{Deserialize, Serialize};

use super::geometry::{Geometry, SeekCurve};
use crate::{Error, Result};

/// Parameters of the hard-disk model. Rates are in MB/s with MB = 10⁶ bytes, as drive
/// datasheets give them; sizes of the buffer in KiB. Missing fields take the values of
/// [`HddConfig::desktop_7200`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HddConfig {
    /// Capacity in bytes (memory is only used for pages actually written).
    pub capacity: u64,
    /// Spindle speed in revolutions per minute.
    pub rpm: u32,
    /// Recording surfaces (tracks per cylinder).
    pub heads: u32,
    /// Recording zones; 1 gives the same media rate everywhere.
    pub zones: u32,
    /// Sustained media rate of the outermost zone (the start of the address space), MB/s.
    pub outer_mb_s: f64,
    /// Sustained media rate of the innermost zone, MB/s (not above `outer_mb_s`).
    pub inner_mb_s: f64,
    /// Seek time to the adjacent cylinder, ms; also the time of a head or track switch.
    pub track_to_track_ms: f64,
    /// Average seek time over random start and end positions, ms.
    pub avg_seek_ms: f64,
    /// Seek time across the whole stroke, ms.
    pub full_stroke_ms: f64,
    /// Extra settling time of a write after a seek, ms (datasheets list write seeks longer).
    pub write_settle_ms: f64,
    /// Command overhead of a read the buffer serves (a cache hit), and of a cache flush, µs.
    pub hit_overhead_us: f64,
    /// Command overhead when the media must be accessed (until the seek starts), µs.
    pub miss_overhead_us: f64,
    /// Interface (buffer to host) transfer rate, MB/s.
    pub interface_mb_s: f64,
    /// Size of the drive buffer in KiB (0: no buffer).
    pub cache_kb: u64,
    /// Number of buffer segments the read cache is divided into.
    pub segments: u32,
    /// How far the drive reads ahead past the last request, KiB (at most one segment).
    pub read_ahead_kb: u64,
    /// Write-back caching in the drive buffer (on in desktop drives). The drive starts
    /// writing back once more than half of the buffer is dirty.
    pub write_cache: bool,
    /// Seed of the initial platter angle.
    pub seed: u64,
    /// Command overhead of a write the buffer takes (write caching on), µs; absent: the
    /// read hit's `hit_overhead_us` (what the model charged before drive specifications
    /// were found that list the two apart).
    #[serde(default)]
    pub write_overhead_us: Option<f64>,
}

impl Default for HddConfig {
    fn default() -> Self {
        HddConfig::desktop_7200()
    }
}

impl HddConfig {
    /// The seeds' 7200 rpm desktop drive.
    ///
    /// - `capacity` 2,000,398,934,016 bytes (3,907,029,168 sectors, the IDEMA count for
    ///   2 TB): the "2TB Western Digital with 7200RPM" of Carniel et al. (2016, 2017).
    /// - `rpm` 7200: both seeds; average rotational latency is half a revolution, 4.17 ms,
    ///   the 4.2 ms of Emrich et al. (2010), Table 1.
    /// - `avg_seek_ms` 8.9 and media rate 93.5 MB/s: Emrich et al., Table 1 (WD Caviar
    ///   Blue WD2500AAJS). One zone, so the seed's rate holds over the whole disk.
    /// - `track_to_track_ms` 2.0, `full_stroke_ms` 21 and `write_settle_ms` 2.0 (write
    ///   average seek 10.9 ms vs 8.9 ms for reads): Western Digital Caviar desktop
    ///   datasheets of the same family, which list the same 8.9 ms read seek and 4.2 ms
    ///   latency. Not in the seeds.
    /// - Command overheads, from the one OEM specification of a drive of this class that
    ///   publishes them (WD's datasheets do not): the Hitachi Deskstar 7K3000 (7200 rpm,
    ///   2 TB, 64 MB, SATA 6 Gb/s), "Deskstar 7K3000 Hard Disk Drive Specification", §4.5.1,
    ///   Table 5 "Command overhead", typical, quiescent, without NCQ: read cache hit 0.1 ms
    ///   (`hit_overhead_us` 100), read cache miss 0.5 ms to the start of the seek
    ///   (`miss_overhead_us` 500), write 0.015 ms (`write_overhead_us` 15). A stand-in of
    ///   the same class: the seeds' drives are Western Digital's. DiskSim's validated
    ///   drives (DiskSim 4.0 `valid/*.diskspecs`) have read-hit overheads of 66-374 µs.
    /// - `interface_mb_s` 300: SATA 3 Gb/s, the interface of Emrich's drive.
    /// - `cache_kb` 8192: Emrich's drive has an 8 MB cache.
    /// - `heads` 8, `segments` 16, `read_ahead_kb` 512: assumed (typical of drives of that
    ///   era; `heads` only sets how many cylinders the address space spans).
    /// - `write_cache` on: desktop drives ship with write caching enabled.
    ///
    /// Resulting behaviour (see the tests and `examples/bench_hdd.rs`): about 75 random
    /// 4 KB reads per second over the whole disk (Carniel et al.'s Table 1 lists 0.185 MB/s,
    /// about 45/s, for their drive), sequential reads and writes at about the media rate,
    /// and cached random 4 KB writes at about 120/s including the final sync, faster than
    /// reads thanks to the elevator write-back (their table: 0.441 MB/s, about 108/s).
    pub fn desktop_7200() -> Self {
        HddConfig {
            capacity: 3_907_029_168 * 512,
            rpm: 7200,
            heads: 8,
            zones: 1,
            outer_mb_s: 93.5,
            inner_mb_s: 93.5,
            track_to_track_ms: 2.0,
            avg_seek_ms: 8.9,
            full_stroke_ms: 21.0,
            write_settle_ms: 2.0,
            hit_overhead_us: 100.0,
            miss_overhead_us: 500.0,
            interface_mb_s: 300.0,
            cache_kb: 8192,
            segments: 16,
            read_ahead_kb: 512,
            write_cache: true,
            seed: 0,
            write_overhead_us: Some(15.0),
        }
    }

    /// Checks every parameter; errors name the parameter and say what is allowed.
    pub fn validate(&self) -> Result<()> {
        self.build().map(|_| ())
    }

    pub(super) fn build(&self) -> Result<(Geometry, SeekCurve)> {
        fn range(what: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<()> {
            if v.is_finite() && v >= lo && v <= hi {
                Ok(())
            } else {
                let u = if unit.is_empty() {
                    String::new()
                } else {
                    format!(" {unit}")
                };
                Err(Error::invalid(
                    format!("hdd {what}"),
                    format!("{v}{u}; must be between {lo} and {hi}{u}"),
                ))
            }
        }
        let big = |what: &str, msg: String| Err(Error::invalid(format!("hdd {what}"), msg));
        if self.capacity < 1 << 20 || self.capacity > 1 << 50 {
            return big(
                "capacity",
                format!("{} bytes; must be between 1 MiB and 1 PiB", self.capacity),
            );
        }
        range("rpm", self.rpm as f64, 1000.0, 30000.0, "rpm")?;
        range("heads", self.heads as f64, 1.0, 64.0, "")?;
        range("zones", self.zones as f64, 1.0, 1024.0, "")?;
        range("outer_mb_s", self.outer_mb_s, 0.001, 100_000.0, "MB/s")?;
        range(
            "inner_mb_s",
            self.inner_mb_s,
            0.001,
            self.outer_mb_s,
            "MB/s",
        )?;
        range(
            "track_to_track_ms",
            self.track_to_track_ms,
            0.001,
            1000.0,
            "ms",
        )?;
        range("full_stroke_ms", self.full_stroke_ms, 0.001, 10_000.0, "ms")?;
        if !(self.track_to_track_ms < self.avg_seek_ms && self.avg_seek_ms < self.full_stroke_ms) {
            return big(
                "avg_seek_ms",
                format!(
                    "{} ms; must lie between track_to_track_ms ({}) and full_stroke_ms ({})",
                    self.avg_seek_ms, self.track_to_track_ms, self.full_stroke_ms
                ),
            );
        }
        range("write_settle_ms", self.write_settle_ms, 0.0, 1000.0, "ms")?;
        range("hit_overhead_us", self.hit_overhead_us, 0.0, 1e6, "µs")?;
        if let Some(w) = self.write_overhead_us {
            range("write_overhead_us", w, 0.0, 1e6, "µs")?;
        }
        range("miss_overhead_us", self.miss_overhead_us, 0.0, 1e6, "µs")?;
        range("interface_mb_s", self.interface_mb_s, 0.001, 1e6, "MB/s")?;
        if self.cache_kb > 1 << 30 {
            return big("cache_kb", format!("{} KiB is over 1 TiB", self.cache_kb));
        }
        range("segments", self.segments as f64, 1.0, 4096.0, "")?;
        let segment_kb = self.cache_kb / self.segments as u64;
        if self.read_ahead_kb > segment_kb {
            return big(
                "read_ahead_kb",
                format!(
                    "{} KiB is larger than a buffer segment (cache_kb / segments = {segment_kb} KiB)",
                    self.read_ahead_kb
                ),
            );
        }
        let geo = Geometry::new(self)?;
        let curve = SeekCurve::fit(
            self.track_to_track_ms,
            self.avg_seek_ms,
            self.full_stroke_ms,
            geo.cylinders,
        )?;
        Ok((geo, curve))
    }
}

/// [`HddConfig`] as state files before [`super::super::pages::HDD_WRITE_OVERHEAD_FORMAT`]
/// saved it (no `write_overhead_us`): the same fields in the same order.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct HddConfigV4 {
    capacity: u64,
    rpm: u32,
    heads: u32,
    zones: u32,
    outer_mb_s: f64,
    inner_mb_s: f64,
    track_to_track_ms: f64,
    avg_seek_ms: f64,
    full_stroke_ms: f64,
    write_settle_ms: f64,
    hit_overhead_us: f64,
    miss_overhead_us: f64,
    interface_mb_s: f64,
    cache_kb: u64,
    segments: u32,
    read_ahead_kb: u64,
    write_cache: bool,
    seed: u64,
}

impl From<HddConfigV4> for HddConfig {
    fn from(c: HddConfigV4) -> Self {
        HddConfig {
            capacity: c.capacity,
            rpm: c.rpm,
            heads: c.heads,
            zones: c.zones,
            outer_mb_s: c.outer_mb_s,
            inner_mb_s: c.inner_mb_s,
            track_to_track_ms: c.track_to_track_ms,
            avg_seek_ms: c.avg_seek_ms,
            full_stroke_ms: c.full_stroke_ms,
            write_settle_ms: c.write_settle_ms,
            hit_overhead_us: c.hit_overhead_us,
            miss_overhead_us: c.miss_overhead_us,
            interface_mb_s: c.interface_mb_s,
            cache_kb: c.cache_kb,
            segments: c.segments,
            read_ahead_kb: c.read_ahead_kb,
            write_cache: c.write_cache,
            seed: c.seed,
            write_overhead_us: None,
        }
    }
}
