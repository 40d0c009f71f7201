//! Partitions: several users (the node store and the object store of one index) sharing
//! one device, each seeing its own range of pages. Requests go to the same underlying
//! device, so its counters and its clock (head position, die queues, caches) reflect the
//! interleaving of both, as on a real disk holding a table and its index.

use std::sync::{Arc, Mutex, MutexGuard};

use super::stats::DeviceStats;
use super::{check_request, request_len, Device};
use crate::{Error, Result};

/// A range `[base, base + len)` of pages of a shared device, itself a [`Device`].
pub struct Partition {
    shared: Arc<Mutex<Box<dyn Device>>>,
    base: u64,
    len: u64,
    page_size: usize,
}

impl Partition {
    /// Splits `device` at page `at`: the first partition covers `[0, at)`, the second the rest.
    pub fn split(device: Box<dyn Device>, at: u64) -> Result<(Partition, Partition)> {
        let cap = device.capacity_pages();
        if at == 0 || at >= cap {
            return Err(Error::invalid(
                "partition",
                format!("split point {at} must lie inside the device's {cap} pages"),
            ));
        }
        let page_size = device.page_size();
        let shared = Arc::new(Mutex::new(device));
        Ok((
            Partition {
                shared: Arc::clone(&shared),
                base: 0,
                len: at,
                page_size,
            },
            Partition {
                shared,
                base: at,
                len: cap - at,
                page_size,
            },
        ))
    }

    /// First page of this partition on the shared device.
    pub fn base(&self) -> u64 {
        self.base
    }

    fn dev(&self) -> MutexGuard<'_, Box<dyn Device>> {
        // A panic while holding the lock cannot leave the device half-updated in a way
        // the counters care about, so a poisoned lock is still usable.
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Device for Partition {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn capacity_pages(&self) -> u64 {
        self.len
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        check_request(page, buf.len(), self.page_size, self.len)?;
        let base = self.base;
        self.dev().read(base + page, buf)
    }

    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        check_request(
            page,
            request_len(pages, self.page_size)?,
            self.page_size,
            self.len,
        )?;
        let base = self.base;
        self.dev().read_unused(base + page, pages)
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        check_request(page, data.len(), self.page_size, self.len)?;
        let base = self.base;
        self.dev().write(base + page, data)
    }

    fn write_changed(
        &mut self,
        page: u64,
        data: &[u8],
        changed: &[std::ops::Range<usize>],
    ) -> Result<()> {
        check_request(page, data.len(), self.page_size, self.len)?;
        let base = self.base;
        self.dev().write_changed(base + page, data, changed)
    }

    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        self.dev().submit_at(at_ns)
    }

    fn completed_ns(&self) -> u64 {
        self.dev().completed_ns()
    }

    fn read_time_ignores_contents(&self) -> bool {
        self.dev().read_time_ignores_contents()
    }

    fn sync(&mut self) -> Result<()> {
        self.dev().sync()
    }

    fn drop_caches(&mut self) -> Result<()> {
        self.dev().drop_caches()
    }

    fn device_ns(&self) -> u64 {
        self.dev().device_ns()
    }

    /// The statistics of the whole shared device.
    fn stats(&self) -> DeviceStats {
        self.dev().stats()
    }

    fn persist(&mut self) -> Result<()> {
        self.dev().persist()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{MemoryConfig, MemoryDevice};

    #[test]
    fn partitions_are_disjoint_views_of_one_device() {
        let dev = MemoryDevice::open(
            &MemoryConfig {
                capacity: 64 * 1024,
            },
            4096,
            None,
        )
        .unwrap();
        let (mut a, mut b) = Partition::split(Box::new(dev), 10).unwrap();
        assert_eq!((a.capacity_pages(), b.capacity_pages()), (10, 6));
        a.write(0, &[1u8; 4096]).unwrap();
        b.write(0, &[2u8; 4096]).unwrap();
        let mut buf = vec![0u8; 4096];
        a.read(0, &mut buf).unwrap();
        assert_eq!(buf[0], 1);
        b.read(0, &mut buf).unwrap();
        assert_eq!(buf[0], 2);
        assert!(a.read(10, &mut buf).is_err());
        assert!(b.write(6, &buf).is_err());
        assert_eq!(
            a.stats().host.write_ops,
            2,
            "statistics are the shared device's"
        );
        assert!(Partition::split(
            Box::new(MemoryDevice::open(&MemoryConfig { capacity: 8192 }, 4096, None).unwrap()),
            2
        )
        .is_err());
    }
}
