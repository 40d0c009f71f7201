//! [`DeviceWrapper`]: the one forwarding mechanism of devices that wrap another device
//! (partitions, shared handles, crash, tap, read-only overlay, throttle). A wrapper names
//! its inner device and overrides only what it changes; every [`Device`] method reaches
//! the inner device through the blanket `impl<W: DeviceWrapper> Device for W`, so a
//! wrapper cannot drop one (as hand-written forwarding did with
//! [`Device::write_changed`]).
//!
//! Reads and writes reach a wrapper as one request each ([`ReadReq`], [`WriteReq`]): a
//! wrapper that changes how writes are handled sees the partial-page writes
//! ([`Device::write_changed`]) as well and passes them on with [`WriteReq::forward`],
//! which keeps the fast path.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut, Range};

use super::{request_len, Device, DeviceStats};
use crate::Result;

/// A read request as a wrapper sees it.
pub enum ReadReq<'a> {
    /// [`Device::read`]: the pages' bytes into this buffer.
    Into(&'a mut [u8]),
    /// [`Device::read_unused`]: this many pages, for a caller that does not use their bytes.
    Unused(u64),
}

impl ReadReq<'_> {
    /// Bytes the request covers on a device of `page_size`-byte pages.
    pub fn len(&self, page_size: usize) -> Result<usize> {
        match self {
            ReadReq::Into(buf) => Ok(buf.len()),
            ReadReq::Unused(pages) => request_len(*pages, page_size),
        }
    }

    /// Makes the same request of `dev` at page `page`.
    pub(crate) fn forward(self, dev: &mut dyn Device, page: u64) -> Result<()> {
        match self {
            ReadReq::Into(buf) => dev.read(page, buf),
            ReadReq::Unused(pages) => dev.read_unused(page, pages),
        }
    }

    /// Makes the same request of `dev`, then lays the page images of `over` (by page
    /// number) over the bytes read: for a wrapper that keeps some pages apart (a crash's
    /// volatile cache, a read-only overlay). A read whose bytes are not used needs none.
    pub(crate) fn forward_laid_over(
        self,
        dev: &mut dyn Device,
        page: u64,
        over: &HashMap<u64, Box<[u8]>>,
    ) -> Result<()> {
        let ReadReq::Into(buf) = self else {
            return self.forward(dev, page);
        };
        dev.read(page, buf)?;
        if over.is_empty() {
            return Ok(());
        }
        let ps = dev.page_size();
        for (i, chunk) in buf.chunks_exact_mut(ps).enumerate() {
            if let Some(p) = over.get(&(page + i as u64)) {
                chunk.copy_from_slice(p);
            }
        }
        Ok(())
    }
}

/// A write request as a wrapper sees it.
#[derive(Clone, Copy)]
pub struct WriteReq<'a> {
    /// The pages' new bytes.
    pub data: &'a [u8],
    /// For [`Device::write_changed`] (one page): the byte ranges that differ from what the
    /// device holds; `None` for [`Device::write`].
    pub changed: Option<&'a [Range<usize>]>,
}

impl WriteReq<'_> {
    /// Makes the same request of `dev` at page `page`.
    pub(crate) fn forward(self, dev: &mut dyn Device, page: u64) -> Result<()> {
        match self.changed {
            Some(changed) => dev.write_changed(page, self.data, changed),
            None => dev.write(page, self.data),
        }
    }
}

/// A device that wraps another. Required: the inner device; every other method has a
/// default that forwards to it (see the module documentation). The methods are those of
/// [`Device`] with reads and writes merged into one request each.
pub trait DeviceWrapper: Send {
    /// The wrapped device.
    fn inner(&self) -> impl Deref<Target = dyn Device> + '_;

    /// The wrapped device, mutably.
    fn inner_mut(&mut self) -> impl DerefMut<Target = dyn Device> + '_;

    /// See [`Device::capacity_pages`].
    fn capacity_pages(&self) -> u64 {
        self.inner().capacity_pages()
    }

    /// [`Device::read`] and [`Device::read_unused`].
    fn read(&mut self, page: u64, req: ReadReq<'_>) -> Result<()> {
        req.forward(&mut *self.inner_mut(), page)
    }

    /// [`Device::write`] and [`Device::write_changed`].
    fn write(&mut self, page: u64, req: WriteReq<'_>) -> Result<()> {
        req.forward(&mut *self.inner_mut(), page)
    }

    /// See [`Device::sync`].
    fn sync(&mut self) -> Result<()> {
        self.inner_mut().sync()
    }

    /// See [`Device::drop_caches`].
    fn drop_caches(&mut self) -> Result<()> {
        self.inner_mut().drop_caches()
    }

    /// See [`Device::device_ns`].
    fn device_ns(&self) -> u64 {
        self.inner().device_ns()
    }

    /// See [`Device::stats`].
    fn stats(&self) -> DeviceStats {
        self.inner().stats()
    }

    /// See [`Device::persist`].
    fn persist(&mut self) -> Result<()> {
        self.inner_mut().persist()
    }

    /// See [`Device::submit_at`].
    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        self.inner_mut().submit_at(at_ns)
    }

    /// See [`Device::completed_ns`].
    fn completed_ns(&self) -> u64 {
        self.inner().completed_ns()
    }
}

impl<W: DeviceWrapper> Device for W {
    fn page_size(&self) -> usize {
        self.inner().page_size()
    }

    fn capacity_pages(&self) -> u64 {
        DeviceWrapper::capacity_pages(self)
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        DeviceWrapper::read(self, page, ReadReq::Into(buf))
    }

    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        DeviceWrapper::read(self, page, ReadReq::Unused(pages))
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        let req = WriteReq {
            data,
            changed: None,
        };
        DeviceWrapper::write(self, page, req)
    }

    fn write_changed(&mut self, page: u64, data: &[u8], changed: &[Range<usize>]) -> Result<()> {
        let changed = Some(changed);
        DeviceWrapper::write(self, page, WriteReq { data, changed })
    }

    fn sync(&mut self) -> Result<()> {
        DeviceWrapper::sync(self)
    }

    fn drop_caches(&mut self) -> Result<()> {
        DeviceWrapper::drop_caches(self)
    }

    fn device_ns(&self) -> u64 {
        DeviceWrapper::device_ns(self)
    }

    fn stats(&self) -> DeviceStats {
        DeviceWrapper::stats(self)
    }

    fn persist(&mut self) -> Result<()> {
        DeviceWrapper::persist(self)
    }

    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        DeviceWrapper::submit_at(self, at_ns)
    }

    fn completed_ns(&self) -> u64 {
        DeviceWrapper::completed_ns(self)
    }

    fn read_time_ignores_contents(&self) -> bool {
        self.inner().read_time_ignores_contents()
    }
}

#[cfg(test)]
mod tests;
