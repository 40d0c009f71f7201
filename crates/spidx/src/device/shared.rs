//! [`SharedDevice`]: a cloneable handle over one device. Every clone reaches the same
//! device, so a test can hand one handle to a store (which owns it like any device) and
//! keep another to look at — or reopen — the same medium after a simulated power cut.

use std::sync::{Arc, Mutex, MutexGuard};

use super::stats::DeviceStats;
use super::Device;
use crate::Result;

/// A cloneable handle over `Arc<Mutex<Box<dyn Device>>>`, itself a [`Device`].
#[derive(Clone)]
pub struct SharedDevice {
    inner: Arc<Mutex<Box<dyn Device>>>,
}

impl SharedDevice {
    /// Wraps `device`.
    pub fn new(device: Box<dyn Device>) -> Self {
        SharedDevice {
            inner: Arc::new(Mutex::new(device)),
        }
    }

    fn dev(&self) -> MutexGuard<'_, Box<dyn Device>> {
        // A panic while holding the lock leaves the device usable (see `Partition`).
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the device behind every handle by `device` and returns the previous one
    /// (e.g. to power a crash device off and hand its medium to recovery).
    pub fn replace(&self, device: Box<dyn Device>) -> Box<dyn Device> {
        std::mem::replace(&mut *self.dev(), device)
    }
}

impl Device for SharedDevice {
    fn page_size(&self) -> usize {
        self.dev().page_size()
    }

    fn capacity_pages(&self) -> u64 {
        self.dev().capacity_pages()
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        self.dev().read(page, buf)
    }

    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        self.dev().read_unused(page, pages)
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        self.dev().write(page, data)
    }

    fn write_changed(
        &mut self,
        page: u64,
        data: &[u8],
        changed: &[std::ops::Range<usize>],
    ) -> Result<()> {
        self.dev().write_changed(page, data, changed)
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
    fn clones_reach_the_same_device() {
        let mem = MemoryDevice::open(&MemoryConfig { capacity: 1 << 16 }, 4096, None).unwrap();
        let mut a = SharedDevice::new(Box::new(mem));
        let mut b = a.clone();
        a.write(3, &[7u8; 4096]).unwrap();
        let mut buf = vec![0u8; 4096];
        b.read(3, &mut buf).unwrap();
        assert_eq!(buf[0], 7);
        assert_eq!(b.stats().host.write_ops, 1);
        let fresh = MemoryDevice::open(&MemoryConfig { capacity: 1 << 16 }, 4096, None).unwrap();
        let old = a.replace(Box::new(fresh));
        assert_eq!(old.stats().host.write_ops, 1);
        b.read(3, &mut buf).unwrap();
        assert_eq!(buf[0], 0, "the replacement is seen by every handle");
    }
}
