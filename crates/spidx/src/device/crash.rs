//! Power cuts for crash tests. [`CrashDevice`] wraps a device and, from a chosen write on,
//! stops persisting: the write at the cut may be torn (only its first sectors reach the
//! medium) and later writes reach only a volatile overlay, so the program above keeps
//! running as if nothing happened until it "loses power": the medium it wraps (shared, e.g.
//! a clone of a memory device) then holds exactly what had been persisted, for recovery to
//! open.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::wrapper::{self, ReadReq, WriteReq};
use super::{check_request, Device, SECTOR};
use crate::Result;

/// How the write at the cut reaches the medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tear {
    /// Not at all.
    Lost,
    /// Only its first `sectors` 512-byte sectors (a torn page write).
    Sectors(usize),
}

/// A device that stops persisting writes from the `cut`-th write on (0-based).
pub struct CrashDevice {
    inner: Box<dyn Device>,
    cut: u64,
    tear: Tear,
    writes: u64,
    /// Write requests seen, shared with [`CrashWatch`]es.
    seen: Arc<AtomicU64>,
    /// Pages written after the cut, as the running program sees them.
    volatile: HashMap<u64, Box<[u8]>>,
}

impl CrashDevice {
    /// Wraps `inner`; the write numbered `cut` (counting from 0) is the first one not fully
    /// persisted, and `tear` says how much of it is.
    pub fn new(inner: Box<dyn Device>, cut: u64, tear: Tear) -> Self {
        CrashDevice {
            inner,
            cut,
            tear,
            writes: 0,
            seen: Arc::new(AtomicU64::new(0)),
            volatile: HashMap::new(),
        }
    }

    /// A handle that tells whether the cut has happened, usable after the device was
    /// handed to a store (tests use it to know which operations were acknowledged before
    /// the power cut).
    pub fn watch(&self) -> CrashWatch {
        CrashWatch {
            seen: Arc::clone(&self.seen),
            cut: self.cut,
        }
    }

    /// Whether the power cut has happened.
    pub fn is_cut(&self) -> bool {
        self.writes > self.cut
    }

    /// Write requests seen so far.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// The power goes off: everything not persisted is lost; returns the medium.
    #[cfg(test)]
    pub(crate) fn power_off(self) -> Box<dyn Device> {
        self.inner
    }
}

/// Observes a [`CrashDevice`] from outside (see [`CrashDevice::watch`]).
#[derive(Debug, Clone)]
pub struct CrashWatch {
    seen: Arc<AtomicU64>,
    cut: u64,
}

impl CrashWatch {
    /// Whether the power cut has happened (the device received its `cut`-th write).
    pub fn is_cut(&self) -> bool {
        self.seen.load(Ordering::Relaxed) > self.cut
    }

    /// Write requests the device has received so far.
    pub fn writes(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }
}

impl wrapper::DeviceWrapper for CrashDevice {
    fn inner(&self) -> impl Deref<Target = dyn Device> + '_ {
        &*self.inner
    }

    fn inner_mut(&mut self) -> impl DerefMut<Target = dyn Device> + '_ {
        &mut *self.inner
    }

    /// Reads the medium with the pages written after the cut laid over; a read whose bytes
    /// are not used needs no overlay.
    fn read(&mut self, page: u64, req: ReadReq<'_>) -> Result<()> {
        req.forward_laid_over(&mut *self.inner, page, &self.volatile)
    }

    /// Counts the write (a partial-page write too); before the cut it reaches the medium
    /// as it was made, from the cut on only the volatile overlay (and a torn prefix).
    fn write(&mut self, page: u64, req: WriteReq<'_>) -> Result<()> {
        let ps = self.inner.page_size();
        let data = req.data;
        check_request(page, data.len(), ps, self.inner.capacity_pages())?;
        let n = self.writes;
        self.writes += 1;
        self.seen.store(self.writes, Ordering::Relaxed);
        if n < self.cut {
            return req.forward(&mut *self.inner, page);
        }
        if n == self.cut {
            if let Tear::Sectors(s) = self.tear {
                // The first sectors of the request reach the medium, the rest keep the old data.
                let keep = (s * SECTOR).min(data.len());
                if keep > 0 {
                    let first = page;
                    let pages = keep.div_ceil(ps);
                    let mut merged = vec![0u8; pages * ps];
                    self.inner.read(first, &mut merged)?;
                    merged[..keep].copy_from_slice(&data[..keep]);
                    self.inner.write(first, &merged)?;
                }
            }
        }
        for (i, chunk) in data.chunks_exact(ps).enumerate() {
            self.volatile.insert(page + i as u64, chunk.into());
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if self.is_cut() {
            return Ok(());
        }
        self.inner.sync()
    }

    fn persist(&mut self) -> Result<()> {
        if self.is_cut() {
            return Ok(());
        }
        self.inner.persist()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{MemoryConfig, MemoryDevice};

    fn mem() -> Box<dyn Device> {
        Box::new(MemoryDevice::open(&MemoryConfig { capacity: 1 << 20 }, 4096, None).unwrap())
    }

    #[test]
    fn writes_after_the_cut_are_seen_until_power_off_then_lost() {
        let mut d = CrashDevice::new(mem(), 2, Tear::Lost);
        for (i, b) in [1u8, 2, 3, 4].iter().enumerate() {
            d.write(i as u64, &[*b; 4096]).unwrap();
        }
        assert!(d.is_cut());
        let mut buf = vec![0u8; 4096];
        d.read(3, &mut buf).unwrap();
        assert_eq!(buf[0], 4, "the running program sees its writes");
        let mut medium = d.power_off();
        for (page, want) in [(0, 1u8), (1, 2), (2, 0), (3, 0)] {
            medium.read(page, &mut buf).unwrap();
            assert!(buf.iter().all(|b| *b == want), "page {page}");
        }
    }

    #[test]
    fn the_write_at_the_cut_can_be_torn() {
        let mut d = CrashDevice::new(mem(), 1, Tear::Sectors(3));
        d.write(5, &[7u8; 8192]).unwrap();
        d.write(5, &[9u8; 8192]).unwrap();
        let mut medium = d.power_off();
        let mut buf = vec![0u8; 8192];
        medium.read(5, &mut buf).unwrap();
        assert!(
            buf[..3 * 512].iter().all(|b| *b == 9),
            "torn prefix written"
        );
        assert!(
            buf[3 * 512..].iter().all(|b| *b == 7),
            "the rest keeps the old data"
        );
    }

    #[test]
    fn requests_are_still_validated() {
        let mut d = CrashDevice::new(mem(), 0, Tear::Lost);
        assert!(d.write(0, &[0u8; 100]).is_err());
        assert!(d.write(1 << 30, &[0u8; 4096]).is_err());
        assert_eq!(d.writes(), 0);
    }
}
