//! The device layer: the bottom of the stack in architecture §2.
//!
//! A [`Device`] is an array of fixed-size pages (the size is chosen when the device is
//! opened, usually the index page size). Upper layers read and write runs of consecutive
//! pages; the device counts its own operations ([`DeviceStats`]) and keeps a clock of the
//! time it spent serving them: measured on real devices, modelled (a deterministic virtual
//! clock) on simulated ones. Devices know pages, never trees.
//!
//! Implementations: [`memory::MemoryDevice`], [`file::FileDevice`], [`flash::SimFlash`]
//! (raw NAND behind a page-mapping FTL), [`ssd::SimSsd`] (flash with channels, dies and a
//! write cache), [`hdd::SimHdd`] and [`throttled::Throttled`] (cloud-disk caps). They are
//! described by a [`DeviceConfig`], built from presets ([`preset`]) with overrides ([`spec`]).

pub(crate) mod config;
pub mod crash;
pub mod file;
pub mod files;
pub mod flash;
pub mod hdd;
pub mod memory;
pub mod overlay;
pub(crate) mod paged;
pub mod pages;
pub mod partition;
pub mod preset;
pub mod shared;
pub mod sources;
pub(crate) mod spec;
pub mod ssd;
pub(crate) mod stats;
pub mod tap;
pub mod throttled;
pub(crate) mod wrapper;

pub use config::DeviceConfig;
pub use spec::{DeviceSpec, ResolvedDevice};
pub use stats::{DeviceStats, FlashStats, HddStats, HostCounters, ThrottleStats};
pub use wrapper::DeviceWrapper;

use crate::{Error, Result};

/// Smallest page size and the alignment every page size must have (one disk sector).
pub const SECTOR: usize = 512;

/// A storage device addressed in pages of a fixed size.
///
/// `read` and `write` move a run of `buf.len() / page_size()` consecutive pages starting
/// at page address `page`; `buf.len()` must be a non-zero multiple of the page size.
/// Reads return what was last written (zeros for never-written pages).
pub trait Device: Send {
    /// Size in bytes of one page (the unit of addresses).
    fn page_size(&self) -> usize;

    /// Number of addressable pages.
    fn capacity_pages(&self) -> u64;

    /// Reads consecutive pages starting at `page` into `buf`.
    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()>;

    /// Writes consecutive pages starting at `page` from `data`.
    fn write(&mut self, page: u64, data: &[u8]) -> Result<()>;

    /// Reads `pages` consecutive pages starting at `page` for a caller that does not use
    /// their bytes (a store that already holds the node they encode but whose cost model
    /// reads them): the same request as [`Device::read`] in every count, clock and trace.
    /// A device keeping its pages in memory skips copying them out; the default reads them
    /// into a scratch buffer (a file device really reads them).
    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        let len = request_len(pages, self.page_size())?;
        check_request(page, len, self.page_size(), self.capacity_pages())?;
        let mut scratch = vec![0u8; len];
        self.read(page, &mut scratch)
    }

    /// Writes one page (`data`, a page long) of which only the byte ranges in `changed`
    /// differ from what the device holds: the caller knows the rest is unchanged (a page
    /// cache editing a resident copy of the page in place). It is one page write in every
    /// count and model; a device that keeps pages in memory copies only the changed
    /// bytes, every other one writes the page whole (the default).
    fn write_changed(
        &mut self,
        page: u64,
        data: &[u8],
        changed: &[std::ops::Range<usize>],
    ) -> Result<()> {
        let _ = changed;
        self.write(page, data)
    }

    /// Makes every completed write durable (fsync on files, draining a write cache on
    /// simulated drives).
    fn sync(&mut self) -> Result<()>;

    /// Forgets cached data (device read caches, the OS page cache for files) so that the
    /// next reads are cold, as the seeds' protocol does between query repetitions.
    fn drop_caches(&mut self) -> Result<()>;

    /// Total time in nanoseconds the device has spent on I/O so far: measured for real
    /// devices, the virtual clock for simulated ones.
    fn device_ns(&self) -> u64;

    /// A snapshot of the device's counters.
    fn stats(&self) -> DeviceStats;

    /// Saves the simulator's state (mapping, wear, clock, data) so that another process can
    /// reopen the device; real devices only sync. Called when an index is closed.
    fn persist(&mut self) -> Result<()>;

    /// For a discrete-event simulation of several hosts sharing this device
    /// ([`crate::experiment::concurrent`]): the next request is submitted at virtual time
    /// `at_ns` (callers submit in non-decreasing time order) and is served after the
    /// requests booked before it, overlapping them as far as the device's own parallelism
    /// allows. Devices without a virtual clock refuse.
    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        let _ = at_ns;
        Err(no_virtual_clock(&self.stats().kind))
    }

    /// Virtual completion time in ns of the latest request (with [`Device::submit_at`]).
    fn completed_ns(&self) -> u64 {
        self.device_ns()
    }

    /// Whether the time a read takes is the same whether or not its pages were ever
    /// written (true for a disk, false for flash, whose FTL serves never-written pages
    /// without touching a die). Lets a simulation place index copies it never wrote.
    fn read_time_ignores_contents(&self) -> bool {
        false
    }
}

/// The error of [`Device::submit_at`] on a device of kind `kind` that cannot take it.
pub(crate) fn no_virtual_clock(kind: &str) -> Error {
    Error::invalid(
        "device",
        format!(
            "the {kind} device has no virtual clock to simulate concurrent hosts on (memory, simflash, ssd and hdd devices have one)"
        ),
    )
}

/// Bytes of a request for `pages` pages of `page_size` bytes; an error if that overflows.
pub(crate) fn request_len(pages: u64, page_size: usize) -> Result<usize> {
    usize::try_from(pages)
        .ok()
        .and_then(|n| n.checked_mul(page_size))
        .ok_or_else(|| Error::invalid("I/O request", format!("{pages} pages is too many")))
}

/// Checks that a page size is usable by every device: non-zero and a multiple of 512.
pub fn validate_page_size(page_size: usize) -> Result<()> {
    if page_size == 0 || !page_size.is_multiple_of(SECTOR) {
        return Err(Error::invalid(
            "page size",
            format!("{page_size} bytes; a page size must be a non-zero multiple of {SECTOR} bytes"),
        ));
    }
    if page_size > 64 << 20 {
        return Err(Error::invalid(
            "page size",
            format!("{page_size} bytes is larger than 64MB"),
        ));
    }
    Ok(())
}

/// Validates a read or write request against a device's geometry and returns the number
/// of pages it covers.
pub(crate) fn check_request(
    page: u64,
    len: usize,
    page_size: usize,
    capacity_pages: u64,
) -> Result<u64> {
    if len == 0 || !len.is_multiple_of(page_size) {
        return Err(Error::invalid(
            "I/O request",
            format!("{len} bytes is not a non-zero multiple of the {page_size}-byte page size"),
        ));
    }
    let n = (len / page_size) as u64;
    let end = page.saturating_add(n);
    if end > capacity_pages {
        return Err(Error::OutOfRange {
            start: page,
            end,
            capacity: capacity_pages,
        });
    }
    Ok(n)
}
