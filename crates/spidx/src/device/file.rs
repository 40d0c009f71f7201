//! The file device: a real file on the host's storage, read and written with `pread` and
//! `pwrite` at 64-bit offsets, optionally with `O_DIRECT` (aligned bounce buffers) so the
//! OS page cache is bypassed. Its times are measured, not modelled.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::stats::{DeviceStats, HostCounters};
use super::{check_request, validate_page_size, Device};
use crate::{Error, Result};

/// Alignment of direct-I/O buffers (covers 512-byte and 4 KB logical sectors).
const DIRECT_ALIGN: usize = 4096;

/// Parameters of a file device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Path of the file (created if missing).
    pub path: PathBuf,
    /// Use `O_DIRECT`: bypass the OS page cache (the seeds' cold-cache protocol).
    pub direct: bool,
    /// Addressable bytes; the file is extended (sparsely) to this size.
    pub capacity: u64,
}

impl FileConfig {
    /// A direct-I/O file of 4 GB at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileConfig {
            path: path.into(),
            direct: true,
            capacity: 4 << 30,
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        if self.path.as_os_str().is_empty() {
            return Err(Error::invalid("file device", "empty path"));
        }
        if self.capacity == 0 {
            return Err(Error::invalid("capacity", "must be greater than 0"));
        }
        Ok(())
    }
}

/// How a [`FileDevice`] opens its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAccess {
    /// Read and write; the file is created if missing (a new index).
    Create,
    /// Read and write an existing file (reopening an index to change or recover it).
    Write,
    /// Read an existing file only (`check`, `query`).
    Read,
}

/// Takes a non-blocking `flock` on `file` (shared for readers, exclusive for writers),
/// held until the file is closed; a conflict is a clear error naming `what` and `path`.
pub(crate) fn lock_file(file: &File, path: &Path, shared: bool, what: &str) -> Result<()> {
    let op = if shared { libc::LOCK_SH } else { libc::LOCK_EX };
    // SAFETY: plain syscall on an open descriptor.
    let rc = unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Err(Error::invalid(
            what,
            format!(
                "{} is in use by another spidx process ({}); wait for it to finish",
                path.display(),
                if shared {
                    "a writer holds it"
                } else {
                    "another reader or writer holds it"
                }
            ),
        ));
    }
    Err(Error::io(path, e))
}

/// A page-aligned heap buffer for direct I/O.
struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is exclusively owned memory, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn new(len: usize) -> Self {
        let layout =
            Layout::from_size_align(len.max(DIRECT_ALIGN), DIRECT_ALIGN).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    fn slice(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.layout.size());
        // SAFETY: ptr is valid for layout.size() bytes and uniquely borrowed through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// A device backed by a real file; every I/O is timed with a monotonic clock.
pub struct FileDevice {
    file: File,
    config: FileConfig,
    page_size: usize,
    capacity_pages: u64,
    bounce: AlignedBuf,
    host: HostCounters,
    device_ns: u64,
}

impl FileDevice {
    /// Opens (creating if needed) the file described by `config` with pages of `page_size`,
    /// for writing ([`FileAccess::Create`]).
    pub fn open(config: &FileConfig, page_size: usize) -> Result<Self> {
        Self::open_with(config, page_size, FileAccess::Create)
    }

    /// Opens the file described by `config` as `access` says: creating it (and extending it
    /// sparsely to its capacity) only for [`FileAccess::Create`]; an existing file only,
    /// read-only, for [`FileAccess::Read`]. Writers hold an exclusive `flock` on the file,
    /// readers a shared one, for as long as the device is open: a second writer, or a
    /// writer next to a reader, gets a clear error instead of sharing pages.
    pub fn open_with(config: &FileConfig, page_size: usize, access: FileAccess) -> Result<Self> {
        config.validate()?;
        validate_page_size(page_size)?;
        let path = &config.path;
        let mut opts = OpenOptions::new();
        match access {
            FileAccess::Create => opts.read(true).write(true).create(true).truncate(false),
            FileAccess::Write => opts.read(true).write(true),
            FileAccess::Read => opts.read(true),
        };
        if config.direct {
            opts.custom_flags(libc::O_DIRECT);
        }
        let file = opts.open(path).map_err(|e| {
            if e.raw_os_error() == Some(libc::EINVAL) {
                Error::invalid(
                    "file device",
                    format!(
                        "{}: the filesystem does not support O_DIRECT; set direct=false",
                        path.display()
                    ),
                )
            } else if e.kind() == std::io::ErrorKind::NotFound && access != FileAccess::Create {
                Error::corrupted(
                    format!("device file {}", path.display()),
                    "is missing (deleted or moved); the index's node pages and object records \
                     were in it, so the index cannot be opened",
                )
            } else {
                Error::io(path, e)
            }
        })?;
        lock_file(&file, path, access == FileAccess::Read, "device file")?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len < config.capacity {
            // Only a new device's file is grown: an existing index's file already has its
            // capacity, and growing a file named by (possibly edited) metadata before the
            // index's records vouch for it would change a file spidx may not own.
            if access != FileAccess::Create {
                return Err(Error::corrupted(
                    format!("device file {}", path.display()),
                    format!(
                        "holds {len} bytes but the device has {} (the file was truncated)",
                        config.capacity
                    ),
                ));
            }
            file.set_len(config.capacity)
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(FileDevice {
            file,
            config: config.clone(),
            page_size,
            capacity_pages: config.capacity / page_size as u64,
            bounce: AlignedBuf::new(page_size),
            host: HostCounters::default(),
            device_ns: 0,
        })
    }

    /// Another device on the same open file (the same lock), with its own counters and
    /// clock: lets several threads drive one file at once (`spidx calibrate` probes a
    /// drive at queue depth N with N threads so).
    pub(crate) fn try_clone(&self) -> Result<FileDevice> {
        Ok(FileDevice {
            file: self
                .file
                .try_clone()
                .map_err(|e| Error::io(&self.config.path, e))?,
            config: self.config.clone(),
            page_size: self.page_size,
            capacity_pages: self.capacity_pages,
            bounce: AlignedBuf::new(self.page_size),
            host: HostCounters::default(),
            device_ns: 0,
        })
    }

    fn io_error(&self, e: std::io::Error, what: &str, page: u64) -> Error {
        let hint = if e.raw_os_error() == Some(libc::EINVAL) && self.config.direct {
            " (direct I/O needs the page size to be a multiple of the disk's logical sector size)"
        } else {
            ""
        };
        Error::io(
            &self.config.path,
            std::io::Error::new(e.kind(), format!("{what} at page {page}: {e}{hint}")),
        )
    }

    fn grow_bounce(&mut self, len: usize) {
        if self.bounce.layout.size() < len {
            self.bounce = AlignedBuf::new(len);
        }
    }
}

fn is_aligned(buf: &[u8]) -> bool {
    (buf.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN)
}

impl Device for FileDevice {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn capacity_pages(&self) -> u64 {
        self.capacity_pages
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        let n = check_request(page, buf.len(), self.page_size, self.capacity_pages)?;
        self.host.record_read(page, n, self.page_size);
        let offset = page * self.page_size as u64;
        let start = Instant::now();
        let result = if self.config.direct && !is_aligned(buf) {
            self.grow_bounce(buf.len());
            let bounce = self.bounce.slice(buf.len());
            let r = self.file.read_exact_at(bounce, offset);
            if r.is_ok() {
                buf.copy_from_slice(bounce);
            }
            r
        } else {
            self.file.read_exact_at(buf, offset)
        };
        self.device_ns += start.elapsed().as_nanos() as u64;
        result.map_err(|e| self.io_error(e, "read", page))
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        let n = check_request(page, data.len(), self.page_size, self.capacity_pages)?;
        self.host.record_write(page, n, self.page_size);
        let offset = page * self.page_size as u64;
        let start = Instant::now();
        let result = if self.config.direct && !is_aligned(data) {
            self.grow_bounce(data.len());
            let bounce = self.bounce.slice(data.len());
            bounce.copy_from_slice(data);
            self.file.write_all_at(bounce, offset)
        } else {
            self.file.write_all_at(data, offset)
        };
        self.device_ns += start.elapsed().as_nanos() as u64;
        result.map_err(|e| self.io_error(e, "write", page))
    }

    fn sync(&mut self) -> Result<()> {
        self.host.record_sync();
        let start = Instant::now();
        let r = self.file.sync_data();
        self.device_ns += start.elapsed().as_nanos() as u64;
        r.map_err(|e| Error::io(&self.config.path, e))
    }

    fn drop_caches(&mut self) -> Result<()> {
        self.host.record_cache_drop();
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.config.path, e))?;
        // SAFETY: plain syscall on an open descriptor.
        let rc =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(Error::io(
                &self.config.path,
                std::io::Error::from_raw_os_error(rc),
            ));
        }
        Ok(())
    }

    fn device_ns(&self) -> u64 {
        self.device_ns
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            kind: "file".into(),
            page_size: self.page_size,
            host: self.host,
            device_ns: self.device_ns,
            ..Default::default()
        }
    }

    fn persist(&mut self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::io(&self.config.path, e))
    }
}

/// Whether `path`'s filesystem accepts `O_DIRECT` (tests skip direct I/O where it does not).
pub fn direct_io_supported(dir: &Path) -> bool {
    let probe = dir.join(".spidx-odirect-probe");
    let ok = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(direct: bool) {
        let dir = tempfile::tempdir().unwrap();
        if direct && !direct_io_supported(dir.path()) {
            crate::test_support::skip(&format!(
                "no O_DIRECT on the temporary directory's filesystem ({})",
                dir.path().display()
            ));
            return;
        }
        let cfg = FileConfig {
            path: dir.path().join("dev.bin"),
            direct,
            capacity: 8 << 30,
        };
        let mut d = FileDevice::open(&cfg, 4096).unwrap();
        // Offsets past 2 GiB and 4 GiB work (64-bit offsets).
        let far = (5u64 << 30) / 4096;
        let data: Vec<u8> = (0..3 * 4096).map(|i| (i * 7 % 256) as u8).collect();
        d.write(far, &data).unwrap();
        d.write(1, &data[..4096]).unwrap();
        d.sync().unwrap();
        d.drop_caches().unwrap();
        let mut back = vec![0u8; 3 * 4096];
        d.read(far, &mut back).unwrap();
        assert_eq!(back, data);
        // A misaligned caller buffer is bounced.
        let mut odd = vec![0u8; 4096 + 1];
        d.read(1, &mut odd[1..]).unwrap();
        assert_eq!(&odd[1..], &data[..4096]);
        assert!(d.read(d.capacity_pages(), &mut back[..4096]).is_err());
        let s = d.stats();
        assert_eq!(s.host.write_ops, 2);
        assert_eq!(s.host.read_ops, 2);
        assert!(s.device_ns > 0);
        drop(d);
        // Reopen in another "process": data is there.
        let mut e = FileDevice::open(&cfg, 4096).unwrap();
        let mut again = vec![0u8; 4096];
        e.read(far + 2, &mut again).unwrap();
        assert_eq!(again, data[2 * 4096..]);
    }

    #[test]
    fn buffered_round_trip_past_4gib() {
        roundtrip(false);
    }

    #[test]
    fn direct_round_trip_past_4gib() {
        roundtrip(true);
    }

    #[test]
    fn bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = FileConfig::new(dir.path().join("x.bin"));
        assert!(FileDevice::open(&cfg, 0).is_err());
        assert!(FileDevice::open(&cfg, 1000).is_err());
        let missing = FileConfig::new(dir.path().join("no/such/dir/x.bin"));
        let err = FileDevice::open(&missing, 4096).err().unwrap().to_string();
        assert!(err.contains("no/such/dir"), "{err}");
    }
}
