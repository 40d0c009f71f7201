//! SimFlash: one raw NAND flash chip behind the page-mapping [`Ftl`], with a serial
//! virtual clock. It is the flash simulator of the seeds (Flash-DBSim style): it counts
//! reads, writes and erases and charges each flash operation its latency.
//!
//! Timing: the chip does one thing at a time. Each flash read costs `read_us` plus the
//! transfer of one flash page over the bus, each program the transfer plus `program_us`,
//! each erase `erase_us`; transfers take `page_size / transfer_mb_s` (0 = not modelled).
//! The clock is kept in integer nanoseconds, so runs are exactly reproducible. Reading a
//! never-written page costs nothing (the FTL knows it is unmapped); sync is free (there is
//! no volatile cache).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ftl::{FlashOp, Ftl, FtlGeometry, FtlHeader, FtlParams, OpKind, WholeFtl};
use crate::device::paged::{Indexed, PageStore};
use crate::device::pages::{
    decode_state, load_state_payload, save_state_as, FTL_PAGED_FORMAT, INDEX_PAGED_FORMAT,
    PAGED_FORMAT,
};
use crate::device::stats::{DeviceStats, HostCounters};
use crate::device::{check_request, request_len, validate_page_size, Device, SECTOR};
use crate::{Error, Result};

/// Parameters of a simulated NAND flash chip and its FTL.
///
/// Presets: [`FlashConfig::flashdbsim`], [`FlashConfig::seed_table2`],
/// [`FlashConfig::x25m`], [`FlashConfig::mlc`] (see architecture §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlashConfig {
    /// Flash page size in bytes (the unit of read and program).
    pub page_size: usize,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Page read latency (array to page register), microseconds.
    pub read_us: f64,
    /// Page program latency, microseconds.
    pub program_us: f64,
    /// Block erase latency, microseconds.
    pub erase_us: f64,
    /// Bus transfer rate between chip and controller in MB/s (10^6 bytes per second);
    /// 0 means transfers are not modelled (as in the simulators the presets come from).
    pub transfer_mb_s: f64,
    /// Host-visible capacity in bytes (memory is only used for pages actually written).
    pub capacity: u64,
    /// Extra physical space beyond `capacity`, as a fraction (0.07 = 7 %); in [0, 10].
    pub overprovisioning: f64,
    /// Free blocks (per die) kept for garbage collection; at least 1.
    pub gc_reserved_blocks: u32,
    /// Static wear levelling starts when the erase-count spread exceeds this (0 = off).
    pub wear_level_threshold: u32,
    /// Erases after which a block is retired (0 = unlimited endurance).
    pub erase_limit: u32,
    /// Seed of the simulation. The FTL policies are deterministic, so the seed does not
    /// change results today; it is recorded with the device so that randomised policies
    /// (and workloads derived from the device spec) stay reproducible.
    pub seed: u64,
}

/// Defaults shared by the presets, chosen for experiments rather than taken from one
/// device: 1 GB host-visible (the seeds' indices are hundreds of MB at most); 7 % spare
/// area, the classic consumer-drive over-provisioning (the gap between GB and GiB); two
/// reserved blocks (one to copy into, one in hand); static wear levelling once the erase
/// counts of a die spread by more than 100 erases (about 1-3 % of MLC endurance).
const DEFAULT_CAPACITY: u64 = 1 << 30;
const DEFAULT_OP: f64 = 0.07;
const DEFAULT_RESERVED: u32 = 2;
const DEFAULT_WL_THRESHOLD: u32 = 100;
const DEFAULT_SEED: u64 = 42;

impl FlashConfig {
    /// The Flash-DBSim example chip: 2 KB pages, 64 pages per block, read 25 µs, program
    /// 200 µs, erase 1500 µs (the Samsung K9F1G08 SLC datasheet values). SLC endurance:
    /// 100 000 erases. Flash-DBSim charges latencies only, so transfers are off.
    pub fn flashdbsim() -> FlashConfig {
        FlashConfig {
            page_size: 2048,
            pages_per_block: 64,
            read_us: 25.0,
            program_us: 200.0,
            erase_us: 1500.0,
            transfer_mb_s: 0.0,
            capacity: DEFAULT_CAPACITY,
            overprovisioning: DEFAULT_OP,
            gc_reserved_blocks: DEFAULT_RESERVED,
            wear_level_threshold: DEFAULT_WL_THRESHOLD,
            erase_limit: 100_000,
            seed: DEFAULT_SEED,
        }
    }

    /// The emulated flash memory of the flash-simulator paper's table 2 (Carniel et al.,
    /// `seeds/carniel-flash-simulator-vs-ssd.txt`): 2 KB pages, 64 pages (128 KB) per
    /// block, read 30 µs, write 300 µs, erase 2500 µs, 512 MB of flash (taken as the
    /// host-visible capacity). Latencies only, like the paper.
    pub fn seed_table2() -> FlashConfig {
        FlashConfig {
            read_us: 30.0,
            program_us: 300.0,
            erase_us: 2500.0,
            capacity: 512 << 20,
            ..FlashConfig::flashdbsim()
        }
    }

    /// FlashSim's default chip (modelled on the Intel X25-M): 4 KB pages, 256 pages per
    /// block, read 50 µs, program 900 µs, erase 2000 µs. Its MLC NAND is rated for about
    /// 10 000 erases; the ONFI 1.0 asynchronous bus of that generation moves ~40 MB/s.
    pub fn x25m() -> FlashConfig {
        FlashConfig {
            page_size: 4096,
            pages_per_block: 256,
            read_us: 50.0,
            program_us: 900.0,
            erase_us: 2000.0,
            transfer_mb_s: 40.0,
            erase_limit: 10_000,
            ..FlashConfig::flashdbsim()
        }
    }

    /// MQSim's default MLC chip: 8 KB pages, 256 pages per block, read 75 µs, program
    /// 750 µs, erase 3800 µs; its ONFI channel runs at 333 MT/s × 8 bit ≈ 333 MB/s.
    /// Modern MLC endurance: 3000 erases.
    pub fn mlc() -> FlashConfig {
        FlashConfig {
            page_size: 8192,
            pages_per_block: 256,
            read_us: 75.0,
            program_us: 750.0,
            erase_us: 3800.0,
            transfer_mb_s: 333.0,
            erase_limit: 3000,
            ..FlashConfig::flashdbsim()
        }
    }

    /// Checks every parameter, naming the offending one.
    pub fn validate(&self) -> Result<()> {
        let p = |name: &str| format!("flash {name}");
        if self.page_size == 0 || !self.page_size.is_multiple_of(SECTOR) || self.page_size > 1 << 20
        {
            return Err(Error::invalid(
                p("page_size"),
                format!(
                    "{} bytes; it must be a non-zero multiple of {SECTOR} bytes, at most 1MB",
                    self.page_size
                ),
            ));
        }
        if self.pages_per_block == 0 || self.pages_per_block > 8192 {
            return Err(Error::invalid(
                p("pages_per_block"),
                format!("{}; it must be between 1 and 8192", self.pages_per_block),
            ));
        }
        for (name, v) in [
            ("read_us", self.read_us),
            ("program_us", self.program_us),
            ("erase_us", self.erase_us),
            ("transfer_mb_s", self.transfer_mb_s),
        ] {
            if !v.is_finite() || !(0.0..=1e9).contains(&v) {
                return Err(Error::invalid(
                    p(name),
                    format!("{v}; it must be a finite number between 0 and 1e9"),
                ));
            }
        }
        if !(self.overprovisioning.is_finite() && (0.0..=10.0).contains(&self.overprovisioning)) {
            return Err(Error::invalid(
                p("overprovisioning"),
                format!(
                    "{}; it must be a fraction between 0 and 10 (0.07 = 7 %)",
                    self.overprovisioning
                ),
            ));
        }
        let block_bytes = self.page_size as u64 * self.pages_per_block as u64;
        if self.capacity < block_bytes {
            return Err(Error::invalid(
                p("capacity"),
                format!(
                    "{} bytes is smaller than one {block_bytes}-byte erase block",
                    self.capacity
                ),
            ));
        }
        if self.gc_reserved_blocks == 0 {
            return Err(Error::invalid(
                p("gc_reserved_blocks"),
                "0; garbage collection needs at least one reserved block to copy into",
            ));
        }
        Ok(())
    }

    /// The FTL parameters for this chip with `dies` dies.
    pub(crate) fn ftl_params(&self, dies: u32, logical_bytes: u64) -> FtlParams {
        FtlParams {
            flash_page_size: self.page_size,
            pages_per_block: self.pages_per_block,
            dies,
            logical_bytes,
            overprovisioning: self.overprovisioning,
            gc_reserved_blocks: self.gc_reserved_blocks,
            wear_level_threshold: self.wear_level_threshold,
            erase_limit: self.erase_limit,
        }
    }
}

impl Default for FlashConfig {
    fn default() -> Self {
        FlashConfig::flashdbsim()
    }
}

/// Nanoseconds for a latency in microseconds.
pub(crate) fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

/// Nanoseconds to move `bytes` at `mb_s` MB/s (0 when the rate is 0 = not modelled).
pub(crate) fn transfer_ns(bytes: u64, mb_s: f64) -> u64 {
    if mb_s > 0.0 {
        (bytes as f64 * 1000.0 / mb_s).round() as u64
    } else {
        0
    }
}

/// Validates a flash configuration and a host page size for a device with `dies` dies;
/// returns the number of host pages and the FTL geometry they need.
pub(crate) fn host_geometry(
    config: &FlashConfig,
    page_size: usize,
    dies: u32,
) -> Result<(u64, FtlGeometry)> {
    validate_page_size(page_size)?;
    config.validate()?;
    let capacity_pages = config.capacity / page_size as u64;
    if capacity_pages == 0 {
        return Err(Error::invalid(
            "page size",
            format!(
                "{page_size} bytes is larger than the {}-byte flash capacity",
                config.capacity
            ),
        ));
    }
    let geo = FtlGeometry::plan(&config.ftl_params(dies, capacity_pages * page_size as u64))?;
    Ok((capacity_pages, geo))
}

/// The saved state of a [`SimFlash`] (format [`INDEX_PAGED_FORMAT`], `D` an [`Indexed`]
/// store; format [`FTL_PAGED_FORMAT`], `D` a [`PageStore`]).
#[derive(Serialize, Deserialize)]
struct SavedFlash<D, P, F> {
    /// First, so that the pages file it names can be found (see [`crate::device::paged`]).
    pages: D,
    /// Second: the index of the FTL's table pages.
    tables: P,
    config: FlashConfig,
    page_size: usize,
    host: HostCounters,
    clock_ns: u64,
    ftl: F,
}

/// The saved state of a [`SimFlash`] in format [`PAGED_FORMAT`] (the whole FTL in it).
#[derive(Deserialize)]
struct SavedFlashV2 {
    pages: PageStore,
    config: FlashConfig,
    page_size: usize,
    host: HostCounters,
    clock_ns: u64,
    ftl: WholeFtl,
}

const KIND: &str = "simflash";

/// A raw NAND flash chip behind a page-mapping FTL, with a serial virtual clock.
pub struct SimFlash {
    config: FlashConfig,
    page_size: usize,
    capacity_pages: u64,
    ftl: Ftl,
    host: HostCounters,
    clock_ns: u64,
    /// Cost of a read (latency + transfer), a program and an erase, in ns.
    cost: [u64; 3],
    /// Reused buffer of the physical operations of the current request.
    ops: Vec<FlashOp>,
    state_path: Option<PathBuf>,
}

impl std::fmt::Debug for SimFlash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimFlash")
            .field("config", &self.config)
            .field("page_size", &self.page_size)
            .field("geometry", self.ftl.geometry())
            .field("clock_ns", &self.clock_ns)
            .finish_non_exhaustive()
    }
}

impl SimFlash {
    /// Opens a flash device of `page_size`-byte host pages (any multiple of 512 bytes,
    /// smaller, equal or larger than the flash page). With `state`, an existing state file
    /// saved by [`Device::persist`] is loaded (it must have been saved with the same
    /// configuration and page size) and later persists go there.
    pub fn open(config: &FlashConfig, page_size: usize, state: Option<&Path>) -> Result<SimFlash> {
        let (capacity_pages, geo) = host_geometry(config, page_size, 1)?;
        let (ftl, host, clock_ns) = match state {
            Some(path) if path.exists() => {
                let (version, payload) = load_state_payload(
                    path,
                    KIND,
                    &[PAGED_FORMAT, FTL_PAGED_FORMAT, INDEX_PAGED_FORMAT],
                )?;
                let (mut ftl, host, clock_ns) = if version == PAGED_FORMAT {
                    let s: SavedFlashV2 = decode_state(path, &payload)?;
                    check_saved(path, &s.config, s.page_size, config, page_size)?;
                    let ftl = Ftl::from_whole(path, &geo, s.ftl, s.pages)?;
                    (ftl, s.host, s.clock_ns)
                } else if version == FTL_PAGED_FORMAT {
                    let s: SavedFlash<PageStore, PageStore, FtlHeader> =
                        decode_state(path, &payload)?;
                    check_saved(path, &s.config, s.page_size, config, page_size)?;
                    let ftl = Ftl::from_header(path, &geo, s.ftl, s.pages, s.tables)?;
                    (ftl, s.host, s.clock_ns)
                } else {
                    let s: SavedFlash<Indexed<PageStore>, PageStore, FtlHeader> =
                        decode_state(path, &payload)?;
                    check_saved(path, &s.config, s.page_size, config, page_size)?;
                    let ftl = Ftl::from_header(path, &geo, s.ftl, s.pages.0, s.tables)?;
                    (ftl, s.host, s.clock_ns)
                };
                check_loaded_ftl(path, &mut ftl, &geo)?;
                (ftl, host, clock_ns)
            }
            _ => (
                Ftl::new(&config.ftl_params(1, capacity_pages * page_size as u64))?,
                HostCounters::default(),
                0,
            ),
        };
        let xfer = transfer_ns(config.page_size as u64, config.transfer_mb_s);
        Ok(SimFlash {
            cost: [
                us_to_ns(config.read_us) + xfer,
                xfer + us_to_ns(config.program_us),
                us_to_ns(config.erase_us),
            ],
            config: config.clone(),
            page_size,
            capacity_pages,
            ftl,
            host,
            clock_ns,
            ops: Vec::new(),
            state_path: state.map(Path::to_path_buf),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &FlashConfig {
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

    fn charge(&mut self) {
        let mut t = 0;
        for op in &self.ops {
            t += self.cost[match op.kind {
                OpKind::Read => 0,
                OpKind::Program => 1,
                OpKind::Erase => 2,
            }];
        }
        self.clock_ns += t;
    }
}

/// Checks that a loaded state was saved with the configuration and page size in use.
pub(crate) fn check_saved<C: PartialEq + std::fmt::Debug>(
    path: &Path,
    saved: &C,
    saved_page_size: usize,
    config: &C,
    page_size: usize,
) -> Result<()> {
    if saved_page_size != page_size {
        return Err(Error::invalid(
            "page size",
            format!(
                "{page_size} bytes, but the device saved in {} uses {saved_page_size}-byte pages",
                path.display()
            ),
        ));
    }
    if saved != config {
        return Err(Error::invalid(
            "device configuration",
            format!(
                "the device saved in {} was created with a different configuration \
                 (saved: {saved:?}; requested: {config:?})",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Checks a loaded FTL against the planned geometry and its own invariants.
pub(crate) fn check_loaded_ftl(path: &Path, ftl: &mut Ftl, geo: &FtlGeometry) -> Result<()> {
    if ftl.geometry() != geo {
        return Err(Error::corrupted(
            format!("device state {}", path.display()),
            "the saved flash geometry does not match its configuration",
        ));
    }
    ftl.check_loaded().map_err(|e| {
        Error::corrupted(
            format!("device state {}", path.display()),
            format!("inconsistent flash state: {e}"),
        )
    })
}

impl Device for SimFlash {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn capacity_pages(&self) -> u64 {
        self.capacity_pages
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        let n = check_request(page, buf.len(), self.page_size, self.capacity_pages)?;
        self.host.record_read(page, n, self.page_size);
        self.ops.clear();
        let offset = page * self.page_size as u64;
        let res = self.ftl.read(offset, buf, &mut self.ops);
        self.charge();
        res
    }

    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        let len = request_len(pages, self.page_size)?;
        let n = check_request(page, len, self.page_size, self.capacity_pages)?;
        self.host.record_read(page, n, self.page_size);
        self.ops.clear();
        let offset = page * self.page_size as u64;
        let res = self
            .ftl
            .read_unused_with(offset, len, &mut self.ops, |_| false);
        self.charge();
        res
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        let n = check_request(page, data.len(), self.page_size, self.capacity_pages)?;
        self.host.record_write(page, n, self.page_size);
        self.ops.clear();
        let offset = page * self.page_size as u64;
        // Charge whatever was done, also when the flash wore out part-way.
        let res = self.ftl.write(offset, data, &mut self.ops);
        self.charge();
        res
    }

    fn sync(&mut self) -> Result<()> {
        self.host.record_sync();
        Ok(())
    }

    fn drop_caches(&mut self) -> Result<()> {
        self.host.record_cache_drop();
        Ok(())
    }

    fn device_ns(&self) -> u64 {
        self.clock_ns
    }

    /// The chip serves one operation at a time (a serial clock).
    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        self.clock_ns = self.clock_ns.max(at_ns);
        Ok(())
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            kind: KIND.into(),
            page_size: self.page_size,
            host: self.host,
            device_ns: self.clock_ns,
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
        let saved = SavedFlash {
            pages: Indexed(self.ftl.pages()),
            tables: self.ftl.tables_store(),
            config: self.config.clone(),
            page_size: self.page_size,
            host: self.host,
            clock_ns: self.clock_ns,
            ftl: self.ftl.header(),
        };
        save_state_as(path, KIND, INDEX_PAGED_FORMAT, &saved)
    }
}
