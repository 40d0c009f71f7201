//! The SSD model: the flash FTL of [`crate::device::flash`] behind what makes a drive
//! differ from a raw chip: several channels and dies working in parallel, a controller
//! that spends time on every command, a host link (SATA), a DRAM/SRAM write cache, and a
//! host that may keep several requests outstanding (queue depth).
//!
//! # Timing model
//!
//! Every resource has a *busy-until* time in virtual nanoseconds: the controller (one
//! command at a time, `command_overhead_us` each), the host link (`host_mb_s`), each
//! channel (page transfers at `channel_mb_s`, or the flash's own `transfer_mb_s` if that
//! is slower) and each die (read, program, erase). Requests are booked on the resources
//! in submission order (first come, first served), which keeps the model deterministic
//! and fast.
//!
//! - **Submission / queue depth N**: the host keeps up to N requests outstanding. A new
//!   request is submitted at the host's current time, or, when N are outstanding, when the
//!   earliest of them completes (a min-heap of completion times) — fio's `iodepth=N`.
//!   With N = 1 each request starts when the previous one completed.
//! - **Read**: command overhead (less `seq_read_saving_us` when the read starts where
//!   the previous request ended: a drive, or the host below it, that reads ahead; 0 in
//!   the presets), then for every touched flash page that was ever written:
//!   if the page is still in the write cache it comes from there (no flash access);
//!   otherwise the read waits for its die (a read behind a program or erase on that die
//!   pays for the interleaving of reads and writes), senses the page (`read_us`), and
//!   moves it over the die's channel. Pages on different dies proceed in parallel. The
//!   request completes when its bytes have crossed the host link.
//! - **Write**: command overhead (less `seq_write_saving_us` when the write starts where
//!   the previous request ended: a drive, or the host below it, that merges sequential
//!   writes; 0 in the presets), the data crosses the host link, then each programmed
//!   flash page needs a write-cache slot: if the cache is full the host waits for the
//!   earliest background program to finish. The write is acknowledged once all its pages
//!   are in the cache; each page is then transferred over its channel and programmed on
//!   the die the FTL chose, in the background. With `write_cache = 0` the write completes
//!   only when its programs do. A read-modify-write first reads the old page.
//! - **Garbage collection and wear levelling** copies (copy-back inside the die: read +
//!   program, no channel transfer) and erases occupy their die; host programs and reads
//!   on that die queue behind them.
//! - **Sync** waits for every outstanding request and for the write cache to drain (all
//!   background programs, GC included), plus one command overhead, then `flush_us` (the
//!   round trip of a cache flush, e.g. through a virtual disk's host; 0 in the presets).
//!
//! **Device time.** [`Device::device_ns`] is the time at which the host has seen every
//! request submitted so far complete (acknowledged): the maximum completion time over all
//! requests, writes counting as complete when acknowledged by the cache. Background
//! programs still running are not included until a `sync` (or until they delay a later
//! request). For queue depth 1 this is the sum of the request latencies.
//!
//! # Calibration of [`SsdConfig::v300`]
//!
//! The seeds measured their Kingston V300 (480 GB, SandForce SF-2281 controller, 8
//! channels, MLC NAND) with Iometer at 285.156 MB/s for 4 KB random reads and
//! 109.375 MB/s for 4 KB random writes (that is 73 000 and 28 000 IOPS counted in MiB/s;
//! we target 285 and 109 MB/s with MB = 10^6 bytes, as the brief of this model asked).
//! The queue depth is not reported; we assume the usual 32.
//!
//! Fixed from public facts: 8 channels × 4 dies, 4 KB flash pages with 256 pages per
//! block (mapping unit of the FTL), read 50 µs, erase 3.8 ms, 3000 erase cycles, a
//! 200 MB/s channel, a SATA 6 Gb/s link (550 MB/s usable), 480 GB with 14.5 %
//! over-provisioning (480 GB of 512 GiB raw), and a 1 MiB write buffer (the SF-2281 has
//! no DRAM cache). Calibrated:
//! - `command_overhead_us` sets the QD32 random-read rate (the controller is the
//!   bottleneck: 32 dies could serve ~450 000 reads/s); 14.4 µs gives the target.
//! - `program_us` sets the sustained random-write rate (the write cache is tiny, so
//!   writes run at the rate the 32 dies program: 32 / (program + page transfer) =
//!   32 / (1182 µs + 20.5 µs) = 26 600 pages/s); 1182 µs gives the target.
//!
//! Measured with 4 KB random requests over a 1 GB span of a fresh device (for reads the
//! touched pages are written and synced first); "sustained" is the `bench_flash` example
//! with 10^6 requests, the 20 000-request figure is the unit test `v300_calibration`
//! (writes there profit a little from the initially empty write cache):
//!
//! | workload | QD 32 | QD 1 |
//! |---|---|---|
//! | 4 KB random read (sustained and 20 000 requests) | 284.4 MB/s | 44.4 MB/s |
//! | 4 KB random write, sustained | 109.1 MB/s | 109.1 MB/s |
//! | 4 KB random write, 20 000 requests | 110.3 MB/s | 110.3 MB/s |
//!
//! QD 1 writes stay at the program rate because the small cache is full after a few
//! hundred requests; QD 1 reads pay the whole latency (command, sensing, channel, link,
//! about 92 µs) for every request.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::flash::ftl::{FlashOp, Ftl, FtlHeader, OpCause, OpKind, WholeFtl};
use super::flash::simflash::{check_loaded_ftl, check_saved, host_geometry, transfer_ns, us_to_ns};
use super::flash::FlashConfig;
use super::paged::{Indexed, PageStore};
use super::pages::{
    decode_state, load_state_payload, save_state_as, FTL_PAGED_FORMAT, INDEX_PAGED_FORMAT,
    PAGED_FORMAT, SSD_SEQ_WRITE_FORMAT,
};
use super::stats::{DeviceStats, HostCounters};
use super::{check_request, request_len, Device};
use crate::{Error, Result};

/// Parameters of the SSD model: a flash chip type plus the drive around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    /// The NAND chips and FTL policies (capacity, over-provisioning, GC, wear).
    pub flash: FlashConfig,
    /// Independent channels (buses) between controller and dies.
    pub channels: u32,
    /// Dies sharing each channel; dies = channels × dies_per_channel.
    pub dies_per_channel: u32,
    /// Channel transfer rate in MB/s (10^6 B/s). A page moves at the slower of this and
    /// `flash.transfer_mb_s` (the die's own interface); 0 leaves only the other one, and
    /// both 0 means transfers are not modelled.
    pub channel_mb_s: f64,
    /// Host link rate in MB/s (SATA 6 Gb/s ≈ 550 usable); 0 = not modelled.
    pub host_mb_s: f64,
    /// Controller/firmware time per command, serialised over all commands, µs.
    pub command_overhead_us: f64,
    /// Write cache in bytes (0 = write-through: writes complete when programmed).
    pub write_cache: u64,
    /// Requests the host keeps outstanding (1 = synchronous, 32 = fio iodepth=32).
    pub queue_depth: u32,
    /// Time a sync's flush takes after the cache has drained, µs, not holding the
    /// controller (a write-through drive's flush round trip; `spidx calibrate` fits it);
    /// 0 = none, as in the presets.
    #[serde(default)]
    pub flush_us: f64,
    /// Controller time a read saves when it continues the previous request (the drive, or
    /// the host below it, reads ahead), µs, at most `command_overhead_us` (`spidx
    /// calibrate` fits it from sequential against random reads); 0 = none, as in the
    /// presets.
    #[serde(default)]
    pub seq_read_saving_us: f64,
    /// Controller time a write saves when it continues the previous request (the drive, or
    /// the host below it, merges sequential writes), µs, at most `command_overhead_us`
    /// (`spidx calibrate` fits it from sequential against random writes); 0 = none, as in
    /// the presets.
    #[serde(default)]
    pub seq_write_saving_us: f64,
}

/// [`SsdConfig`] as state files before [`INDEX_PAGED_FORMAT`] saved it (no `flush_us`).
#[derive(Debug, Clone, Deserialize)]
struct SsdConfigV3 {
    flash: FlashConfig,
    channels: u32,
    dies_per_channel: u32,
    channel_mb_s: f64,
    host_mb_s: f64,
    command_overhead_us: f64,
    write_cache: u64,
    queue_depth: u32,
}

/// [`SsdConfig`] as state files of format [`INDEX_PAGED_FORMAT`] saved it: format 3's
/// fields, then `flush_us` (postcard writes a nested struct's fields in place, so this is
/// the flat layout that format wrote).
#[derive(Debug, Clone, Deserialize)]
struct SsdConfigV4 {
    v3: SsdConfigV3,
    flush_us: f64,
}

impl From<SsdConfigV4> for SsdConfig {
    fn from(SsdConfigV4 { v3: c, flush_us }: SsdConfigV4) -> Self {
        SsdConfig {
            flash: c.flash,
            channels: c.channels,
            dies_per_channel: c.dies_per_channel,
            channel_mb_s: c.channel_mb_s,
            host_mb_s: c.host_mb_s,
            command_overhead_us: c.command_overhead_us,
            write_cache: c.write_cache,
            queue_depth: c.queue_depth,
            flush_us,
            seq_read_saving_us: 0.0,
            seq_write_saving_us: 0.0,
        }
    }
}

impl From<SsdConfigV3> for SsdConfig {
    fn from(v3: SsdConfigV3) -> Self {
        SsdConfigV4 { v3, flush_us: 0.0 }.into()
    }
}

impl SsdConfig {
    /// A model of the seeds' Kingston V300 480 GB, calibrated to its measured 4 KB random
    /// read and write rates (see the module documentation for how and the results).
    pub fn v300() -> SsdConfig {
        SsdConfig {
            flash: FlashConfig {
                page_size: 4096,
                pages_per_block: 256,
                read_us: 50.0,
                program_us: 1182.0,
                erase_us: 3800.0,
                transfer_mb_s: 0.0,
                capacity: 480_000_000_000,
                overprovisioning: 0.145,
                gc_reserved_blocks: 2,
                wear_level_threshold: 100,
                erase_limit: 3000,
                seed: 42,
            },
            channels: 8,
            dies_per_channel: 4,
            channel_mb_s: 200.0,
            host_mb_s: 550.0,
            command_overhead_us: 14.4,
            write_cache: 1 << 20,
            queue_depth: 1,
            flush_us: 0.0,
            seq_read_saving_us: 0.0,
            seq_write_saving_us: 0.0,
        }
    }

    /// Number of dies.
    pub fn dies(&self) -> u32 {
        self.channels.saturating_mul(self.dies_per_channel)
    }

    /// Checks every parameter, naming the offending one.
    pub fn validate(&self) -> Result<()> {
        self.flash.validate()?;
        for (name, v) in [
            ("channels", self.channels),
            ("dies_per_channel", self.dies_per_channel),
            ("queue_depth", self.queue_depth),
        ] {
            if v == 0 || v > 4096 {
                return Err(Error::invalid(
                    format!("ssd {name}"),
                    format!("{v}; it must be between 1 and 4096"),
                ));
            }
        }
        if self.dies() > 1024 {
            return Err(Error::invalid(
                "ssd dies_per_channel",
                format!("{} dies in all; at most 1024", self.dies()),
            ));
        }
        for (name, v) in [
            ("channel_mb_s", self.channel_mb_s),
            ("host_mb_s", self.host_mb_s),
            ("command_overhead_us", self.command_overhead_us),
            ("flush_us", self.flush_us),
        ] {
            if !v.is_finite() || !(0.0..=1e9).contains(&v) {
                return Err(Error::invalid(
                    format!("ssd {name}"),
                    format!("{v}; it must be a finite number between 0 and 1e9"),
                ));
            }
        }
        for (name, saving) in [
            ("seq_read_saving_us", self.seq_read_saving_us),
            ("seq_write_saving_us", self.seq_write_saving_us),
        ] {
            if !saving.is_finite() || !(0.0..=self.command_overhead_us).contains(&saving) {
                return Err(Error::invalid(
                    format!("ssd {name}"),
                    format!(
                        "{saving}; it must be a finite number between 0 and command_overhead_us ({})",
                        self.command_overhead_us
                    ),
                ));
            }
        }
        let fps = self.flash.page_size as u64;
        if self.write_cache != 0 && self.write_cache < fps {
            return Err(Error::invalid(
                "ssd write_cache",
                format!(
                    "{} bytes; it must be 0 (no cache) or at least one {fps}-byte flash page",
                    self.write_cache
                ),
            ));
        }
        Ok(())
    }
}

/// Busy-until times and queues of the timing model (all in virtual ns).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Timing {
    /// Host time: submission time of the latest request.
    now: u64,
    /// Latest completion over all requests (the device clock).
    last_done: u64,
    /// Completion times of the outstanding requests (at most `queue_depth`).
    inflight: BinaryHeap<Reverse<u64>>,
    ctrl_free: u64,
    link_free: u64,
    die_free: Vec<u64>,
    chan_free: Vec<u64>,
    /// Pages in the write cache: (program completion, logical flash page).
    cache: BinaryHeap<Reverse<(u64, u32)>>,
    /// Latest program completion of each cached logical page.
    cached: HashMap<u32, u64>,
}

impl Timing {
    fn is_cached(&self, lpn: u32, at: u64) -> bool {
        self.cached.get(&lpn).is_some_and(|&done| done > at)
    }

    fn pop_cache(&mut self) -> Option<u64> {
        let Reverse((done, lpn)) = self.cache.pop()?;
        if self.cached.get(&lpn) == Some(&done) {
            self.cached.remove(&lpn);
        }
        Some(done)
    }
}

/// Precomputed costs in ns.
#[derive(Debug, Clone, Copy)]
struct Costs {
    read: u64,
    program: u64,
    erase: u64,
    /// One flash page over a channel.
    xfer: u64,
    command: u64,
    /// The command of a read continuing the previous request.
    seq_read_command: u64,
    /// The command of a write continuing the previous request.
    seq_write_command: u64,
    /// A sync's flush after the drain.
    flush: u64,
    host_mb_s: f64,
    /// Write-cache slots (flash pages).
    cache_pages: usize,
    queue_depth: usize,
}

/// The saved state of a [`SimSsd`] (format [`SSD_SEQ_WRITE_FORMAT`], `D` an [`Indexed`]
/// store; format [`INDEX_PAGED_FORMAT`], the same with `C` an [`SsdConfigV4`]; format
/// [`FTL_PAGED_FORMAT`], `D` a [`PageStore`] and `C` an [`SsdConfigV3`]).
#[derive(Serialize, Deserialize)]
struct SavedSsd<D, P, F, T, C = SsdConfig> {
    /// First, so that the pages file it names can be found (see [`crate::device::paged`]).
    pages: D,
    /// Second: the index of the FTL's table pages.
    tables: P,
    config: C,
    page_size: usize,
    host: HostCounters,
    timing: T,
    ftl: F,
}

/// The saved state of a [`SimSsd`] in format [`PAGED_FORMAT`] (the whole FTL in it).
#[derive(Deserialize)]
struct SavedSsdV2 {
    pages: PageStore,
    config: SsdConfigV3,
    page_size: usize,
    host: HostCounters,
    timing: Timing,
    ftl: WholeFtl,
}

const KIND: &str = "ssd";

/// A simulated SSD: FTL-managed flash dies on channels, a write cache, a host link and a
/// virtual clock (see the module documentation).
pub struct SimSsd {
    config: SsdConfig,
    page_size: usize,
    capacity_pages: u64,
    ftl: Ftl,
    host: HostCounters,
    timing: Timing,
    costs: Costs,
    ops: Vec<FlashOp>,
    state_path: Option<PathBuf>,
    /// The next request's submission time was set by [`Device::submit_at`] (a simulation
    /// of several hosts, each with one request outstanding) instead of the queue-depth rule.
    submit_set: bool,
    /// Completion time of the latest request.
    last_completion: u64,
}

impl std::fmt::Debug for SimSsd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimSsd")
            .field("config", &self.config)
            .field("page_size", &self.page_size)
            .field("geometry", self.ftl.geometry())
            .field("device_ns", &self.timing.last_done)
            .finish_non_exhaustive()
    }
}

impl SimSsd {
    /// A host read of `len` bytes at `page`, its bytes copied into `buf` if given: the
    /// timing is the same either way.
    fn read_bytes(&mut self, page: u64, len: usize, buf: Option<&mut [u8]>) -> Result<()> {
        let n = check_request(page, len, self.page_size, self.capacity_pages)?;
        let seq = self.host.record_read(page, n, self.page_size);
        let t0 = self.submit();
        let command = if seq {
            self.costs.seq_read_command
        } else {
            self.costs.command
        };
        let t1 = self.command(t0, command);
        self.ops.clear();
        let timing = &self.timing;
        let offset = page * self.page_size as u64;
        let cached = |lpn| timing.is_cached(lpn, t1);
        let res = match buf {
            Some(buf) => self.ftl.read_with(offset, buf, &mut self.ops, cached),
            None => self
                .ftl
                .read_unused_with(offset, len, &mut self.ops, cached),
        };
        let mut ready = t1;
        for i in 0..self.ops.len() {
            let die = self.ops[i].die as usize;
            ready = ready.max(self.flash_read(die, t1));
        }
        let done = self.link(ready, len);
        self.finish(done);
        res
    }

    /// Opens an SSD with `page_size`-byte host pages; with `state`, an existing state file
    /// saved by [`Device::persist`] is loaded (same configuration and page size required).
    pub fn open(config: &SsdConfig, page_size: usize, state: Option<&Path>) -> Result<SimSsd> {
        config.validate()?;
        let dies = config.dies();
        let (capacity_pages, geo) = host_geometry(&config.flash, page_size, dies)?;
        let (ftl, host, timing) = match state {
            Some(path) if path.exists() => {
                let (version, payload) = load_state_payload(
                    path,
                    KIND,
                    &[
                        PAGED_FORMAT,
                        FTL_PAGED_FORMAT,
                        INDEX_PAGED_FORMAT,
                        SSD_SEQ_WRITE_FORMAT,
                    ],
                )?;
                let (mut ftl, host, timing) = if version == PAGED_FORMAT {
                    let s: SavedSsdV2 = decode_state(path, &payload)?;
                    check_saved(path, &s.config.into(), s.page_size, config, page_size)?;
                    let ftl = Ftl::from_whole(path, &geo, s.ftl, s.pages)?;
                    (ftl, s.host, s.timing)
                } else if version == FTL_PAGED_FORMAT {
                    let s: SavedSsd<PageStore, PageStore, FtlHeader, Timing, SsdConfigV3> =
                        decode_state(path, &payload)?;
                    check_saved(path, &s.config.into(), s.page_size, config, page_size)?;
                    let ftl = Ftl::from_header(path, &geo, s.ftl, s.pages, s.tables)?;
                    (ftl, s.host, s.timing)
                } else if version == INDEX_PAGED_FORMAT {
                    let s: SavedSsd<Indexed<PageStore>, PageStore, FtlHeader, Timing, SsdConfigV4> =
                        decode_state(path, &payload)?;
                    check_saved(path, &s.config.into(), s.page_size, config, page_size)?;
                    let ftl = Ftl::from_header(path, &geo, s.ftl, s.pages.0, s.tables)?;
                    (ftl, s.host, s.timing)
                } else {
                    let s: SavedSsd<Indexed<PageStore>, PageStore, FtlHeader, Timing> =
                        decode_state(path, &payload)?;
                    check_saved(path, &s.config, s.page_size, config, page_size)?;
                    let ftl = Ftl::from_header(path, &geo, s.ftl, s.pages.0, s.tables)?;
                    (ftl, s.host, s.timing)
                };
                check_loaded_ftl(path, &mut ftl, &geo)?;
                let t = &timing;
                if t.die_free.len() != dies as usize
                    || t.chan_free.len() != config.channels as usize
                {
                    return Err(Error::corrupted(
                        format!("device state {}", path.display()),
                        "the saved timing state does not match the drive's geometry",
                    ));
                }
                (ftl, host, timing)
            }
            _ => {
                let logical = capacity_pages * page_size as u64;
                let ftl = Ftl::new(&config.flash.ftl_params(dies, logical))?;
                let timing = Timing {
                    die_free: vec![0; dies as usize],
                    chan_free: vec![0; config.channels as usize],
                    ..Default::default()
                };
                (ftl, HostCounters::default(), timing)
            }
        };
        let f = &config.flash;
        let chan_rate = match (config.channel_mb_s, f.transfer_mb_s) {
            (c, t) if c > 0.0 && t > 0.0 => c.min(t),
            (c, t) => c.max(t),
        };
        let costs = Costs {
            read: us_to_ns(f.read_us),
            program: us_to_ns(f.program_us),
            erase: us_to_ns(f.erase_us),
            xfer: transfer_ns(f.page_size as u64, chan_rate),
            command: us_to_ns(config.command_overhead_us),
            seq_read_command: us_to_ns(config.command_overhead_us - config.seq_read_saving_us),
            seq_write_command: us_to_ns(config.command_overhead_us - config.seq_write_saving_us),
            flush: us_to_ns(config.flush_us),
            host_mb_s: config.host_mb_s,
            cache_pages: (config.write_cache / f.page_size as u64) as usize,
            queue_depth: config.queue_depth as usize,
        };
        Ok(SimSsd {
            config: config.clone(),
            page_size,
            capacity_pages,
            ftl,
            host,
            timing,
            costs,
            ops: Vec::new(),
            state_path: state.map(Path::to_path_buf),
            submit_set: false,
            last_completion: 0,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &SsdConfig {
        &self.config
    }

    /// The FTL (geometry, counters).
    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    /// Checks the FTL's invariants (see [`Ftl::check_invariants`]).
    pub fn check_invariants(&self) -> Result<()> {
        self.ftl.check_invariants()
    }

    /// Submission time of the next request under the queue-depth limit.
    fn submit(&mut self) -> u64 {
        let t = &mut self.timing;
        if std::mem::take(&mut self.submit_set) {
            return t.now;
        }
        if t.inflight.len() >= self.costs.queue_depth {
            if let Some(Reverse(done)) = t.inflight.pop() {
                t.now = t.now.max(done);
            }
        }
        t.now
    }

    fn finish(&mut self, done: u64) {
        self.last_completion = done;
        self.timing.inflight.push(Reverse(done));
        self.timing.last_done = self.timing.last_done.max(done);
    }

    /// The controller processes a command of `cost` ns arriving at `at`; returns when it
    /// is done.
    fn command(&mut self, at: u64, cost: u64) -> u64 {
        let t = &mut self.timing;
        t.ctrl_free = at.max(t.ctrl_free) + cost;
        t.ctrl_free
    }

    /// `bytes` cross the host link, starting no earlier than `at`.
    fn link(&mut self, at: u64, bytes: usize) -> u64 {
        let t = &mut self.timing;
        t.link_free = at.max(t.link_free) + transfer_ns(bytes as u64, self.costs.host_mb_s);
        t.link_free
    }

    fn channel_of(&self, die: usize) -> usize {
        die % self.timing.chan_free.len()
    }

    /// A host page read on `die` issued at `at`: sense, then transfer over the channel.
    fn flash_read(&mut self, die: usize, at: u64) -> u64 {
        let c = self.channel_of(die);
        let t = &mut self.timing;
        let sensed = at.max(t.die_free[die]) + self.costs.read;
        let moved = sensed.max(t.chan_free[c]) + self.costs.xfer;
        t.chan_free[c] = moved;
        t.die_free[die] = moved;
        moved
    }

    /// A page program on `die` whose data is available at `at`: transfer, then program.
    fn flash_program(&mut self, die: usize, at: u64) -> u64 {
        let c = self.channel_of(die);
        let t = &mut self.timing;
        let moved = at.max(t.die_free[die]).max(t.chan_free[c]) + self.costs.xfer;
        t.chan_free[c] = moved;
        t.die_free[die] = moved + self.costs.program;
        t.die_free[die]
    }

    /// Internal work (GC copy-back, erase) occupying `die` for `ns`.
    fn die_busy(&mut self, die: usize, at: u64, ns: u64) {
        let t = &mut self.timing;
        t.die_free[die] = at.max(t.die_free[die]) + ns;
    }

    /// Time at which a page arriving at `at` gets a write-cache slot.
    fn cache_admit(&mut self, at: u64) -> u64 {
        let t = &mut self.timing;
        while t.cache.peek().is_some_and(|Reverse((done, _))| *done <= at) {
            t.pop_cache();
        }
        if t.cache.len() < self.costs.cache_pages {
            return at;
        }
        t.pop_cache().map_or(at, |done| done.max(at))
    }
}

impl Device for SimSsd {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn capacity_pages(&self) -> u64 {
        self.capacity_pages
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        let len = buf.len();
        self.read_bytes(page, len, Some(buf))
    }

    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        let len = request_len(pages, self.page_size)?;
        self.read_bytes(page, len, None)
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        let n = check_request(page, data.len(), self.page_size, self.capacity_pages)?;
        let seq = self.host.record_write(page, n, self.page_size);
        let t0 = self.submit();
        let command = if seq {
            self.costs.seq_write_command
        } else {
            self.costs.command
        };
        let t1 = self.command(t0, command);
        let arrived = self.link(t1, data.len());
        self.ops.clear();
        let timing = &self.timing;
        let offset = page * self.page_size as u64;
        let res = self.ftl.write_with(offset, data, &mut self.ops, |l| {
            timing.is_cached(l, arrived)
        });
        let (mut ack, mut rmw_ready) = (arrived, arrived);
        for i in 0..self.ops.len() {
            let op = self.ops[i];
            let die = op.die as usize;
            match (op.kind, op.cause) {
                (OpKind::Read, OpCause::Host) => {
                    rmw_ready = rmw_ready.max(self.flash_read(die, arrived));
                }
                (OpKind::Program, OpCause::Host) => {
                    let admit = self.cache_admit(arrived);
                    let done = self.flash_program(die, admit.max(rmw_ready));
                    if self.costs.cache_pages > 0 {
                        self.timing.cache.push(Reverse((done, op.lpn)));
                        self.timing.cached.insert(op.lpn, done);
                        ack = ack.max(admit);
                    } else {
                        ack = ack.max(done);
                    }
                }
                (OpKind::Read, _) => self.die_busy(die, arrived, self.costs.read),
                (OpKind::Program, _) => self.die_busy(die, arrived, self.costs.program),
                (OpKind::Erase, _) => self.die_busy(die, arrived, self.costs.erase),
            }
        }
        self.finish(ack);
        res
    }

    fn sync(&mut self) -> Result<()> {
        self.host.record_sync();
        let outstanding = self.timing.now.max(self.timing.last_done);
        let flushed = self.command(outstanding, self.costs.command);
        let t = &mut self.timing;
        let busy = t.die_free.iter().chain(&t.chan_free).copied().max();
        let done = flushed.max(busy.unwrap_or(0)).max(t.link_free) + self.costs.flush;
        t.now = done;
        t.last_done = done;
        t.inflight.clear();
        t.cache.clear();
        t.cached.clear();
        Ok(())
    }

    fn drop_caches(&mut self) -> Result<()> {
        // The write cache holds data not yet on flash; it is not a read cache to drop.
        self.host.record_cache_drop();
        Ok(())
    }

    fn device_ns(&self) -> u64 {
        self.timing.last_done
    }

    /// The request is submitted at `at_ns` whatever the configured queue depth (the
    /// simulated hosts each keep one request outstanding, so up to one per host); it is
    /// booked on controller, dies, channels and link behind the requests before it.
    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        let t = &mut self.timing;
        t.now = t.now.max(at_ns);
        while t.inflight.peek().is_some_and(|Reverse(d)| *d <= t.now) {
            t.inflight.pop();
        }
        self.submit_set = true;
        Ok(())
    }

    fn completed_ns(&self) -> u64 {
        self.last_completion
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            kind: KIND.into(),
            page_size: self.page_size,
            host: self.host,
            device_ns: self.timing.last_done,
            flash: Some(self.ftl.stats()),
            ..Default::default()
        }
    }

    fn persist(&mut self) -> Result<()> {
        let Some(path) = &self.state_path else {
            return Ok(());
        };
        self.ftl.pages_mut().save(path)?;
        self.ftl.save_tables(path)?;
        let saved = SavedSsd {
            pages: Indexed(self.ftl.pages()),
            tables: self.ftl.tables_store(),
            config: self.config.clone(),
            page_size: self.page_size,
            host: self.host,
            timing: &self.timing,
            ftl: self.ftl.header(),
        };
        save_state_as(path, KIND, SSD_SEQ_WRITE_FORMAT, &saved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// MB/s (10^6 B/s) of `ops` random 4 KB requests over a 1 GB span at queue depth `qd`
    /// on a fresh device; for reads the touched pages are written (and synced) first.
    fn random_4k(config: &SsdConfig, qd: u32, write: bool, ops: usize) -> f64 {
        let mut cfg = config.clone();
        cfg.queue_depth = qd;
        let mut d = SimSsd::open(&cfg, 4096, None).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let span = (1u64 << 30) / 4096;
        let pages: Vec<u64> = (0..ops).map(|_| rng.gen_range(0..span)).collect();
        let mut buf = vec![0xA5u8; 4096];
        if !write {
            let mut sorted = pages.clone();
            sorted.sort_unstable();
            sorted.dedup();
            for &p in &sorted {
                d.write(p, &buf).unwrap();
            }
            d.sync().unwrap();
        }
        let start = d.device_ns();
        for &p in &pages {
            if write {
                d.write(p, &buf).unwrap();
            } else {
                d.read(p, &mut buf).unwrap();
            }
        }
        let ns = d.device_ns() - start;
        (ops * 4096) as f64 * 1e3 / ns as f64
    }

    /// On the 480 GB preset (524,288 blocks), a checkpoint of an unchanged drive writes no
    /// FTL table page and the state file stays small; a reopened drive reads what was
    /// written; a damaged tables file is an error naming it.
    #[test]
    fn v300_checkpoints_write_only_changed_table_pages() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("device.state");
        let cfg = SsdConfig::v300();
        let mut d = SimSsd::open(&cfg, 4096, Some(&state)).unwrap();
        for p in 0..2000u64 {
            d.write(p * 3, &[(p % 251) as u8; 4096]).unwrap();
        }
        d.persist().unwrap();
        let tables = dir.path().join("device.state.ftl-1");
        let len = std::fs::metadata(&tables).unwrap().len();
        assert!(len < 64 * 4096, "{len} bytes of table pages");
        assert!(std::fs::metadata(&state).unwrap().len() < 64 << 10);
        d.persist().unwrap();
        assert_eq!(std::fs::metadata(&tables).unwrap().len(), len);
        d.write(3, &[7; 4096]).unwrap();
        d.persist().unwrap();
        let grown = std::fs::metadata(&tables).unwrap().len() - len;
        assert!(grown > 0 && grown <= 8 * 4096, "{grown} bytes appended");
        drop(d);
        let mut e = SimSsd::open(&cfg, 4096, Some(&state)).unwrap();
        let mut buf = vec![0u8; 4096];
        e.read(3, &mut buf).unwrap();
        assert_eq!(buf, vec![7; 4096]);
        e.read(6, &mut buf).unwrap();
        assert_eq!(buf, vec![2; 4096]);
        drop(e);
        let bytes = std::fs::read(&tables).unwrap();
        std::fs::write(&tables, &bytes[..bytes.len() - 4096]).unwrap();
        let err = SimSsd::open(&cfg, 4096, Some(&state))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("device.state.ftl-1") && err.contains("truncated"),
            "{err}"
        );
    }

    #[test]
    fn v300_calibration() {
        let cfg = SsdConfig::v300();
        let read32 = random_4k(&cfg, 32, false, 20_000);
        let write32 = random_4k(&cfg, 32, true, 20_000);
        let read1 = random_4k(&cfg, 1, false, 20_000);
        let write1 = random_4k(&cfg, 1, true, 20_000);
        eprintln!("v300 4KB random: QD32 read {read32:.1} write {write32:.1}; QD1 read {read1:.1} write {write1:.1} MB/s");
        assert!((256.0..=314.0).contains(&read32), "QD32 read {read32}");
        assert!((98.0..=120.0).contains(&write32), "QD32 write {write32}");
        assert!(
            read1 < read32 / 3.0,
            "QD1 reads pay the full latency: {read1}"
        );
        assert!(write1 <= write32 * 1.1, "QD1 write {write1}");
    }
}
