//! The memory budget of concurrent query streams run as real threads (Emrich et al. 2010
//! limited their machine to 1 GB for the OS cache): one LRU page cache shared by every
//! thread's index handle, in front of each handle's own device. It serves what the
//! simulated streams' budget serves (`experiment::concurrent`): a read whose pages are all
//! cached is answered from memory and reaches no device; otherwise the whole request goes
//! to the device and its pages are cached. Writes go through and replace cached pages.
//!
//! Every handle opens the same index file, so the cache is keyed by page address: the
//! handles share its pages (one index, several readers).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::cache::{CacheConfig, CachePolicy, ReplacementPolicy};
use crate::device::{Device, DeviceStats};
use crate::{Error, Result};

/// The shared cache: which pages are resident (LRU) and what they hold.
pub(crate) struct Budget {
    page_size: usize,
    state: Mutex<State>,
}

struct State {
    policy: Box<dyn ReplacementPolicy>,
    pages: HashMap<u64, Vec<u8>>,
    hits: u64,
    misses: u64,
    evicted: Vec<u64>,
}

impl Budget {
    /// A budget of `bytes` (at least one page of `page_size`).
    pub(crate) fn new(bytes: u64, page_size: usize) -> Result<Arc<Budget>> {
        let policy = CacheConfig::new(CachePolicy::Lru, bytes)
            .build_policy(page_size)
            .map_err(|e| Error::invalid("memory", e.to_string()))?;
        Ok(Arc::new(Budget {
            page_size,
            state: Mutex::new(State {
                policy,
                pages: HashMap::new(),
                hits: 0,
                misses: 0,
                evicted: Vec::new(),
            }),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking reader leaves the cache consistent (every change is one statement).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read requests served from memory.
    pub(crate) fn hits(&self) -> u64 {
        self.lock().hits
    }

    /// Read requests that went to a device.
    pub(crate) fn misses(&self) -> u64 {
        self.lock().misses
    }

    /// `device` behind this budget.
    pub(crate) fn wrap(self: &Arc<Self>, device: Box<dyn Device>) -> Box<dyn Device> {
        Box::new(Cached {
            inner: device,
            budget: self.clone(),
        })
    }

    /// Copies pages `page..` into `buf` if all are resident (and marks them used).
    fn serve(&self, page: u64, buf: &mut [u8]) -> bool {
        let mut s = self.lock();
        let n = (buf.len() / self.page_size) as u64;
        if !(page..page + n).all(|p| s.policy.contains(p)) {
            s.misses += 1;
            return false;
        }
        for (i, p) in (page..page + n).enumerate() {
            s.policy.touch(p, 0);
            let at = i * self.page_size;
            buf[at..at + self.page_size].copy_from_slice(&s.pages[&p]);
        }
        s.hits += 1;
        true
    }

    /// Caches the pages of `data` from `page` on.
    fn admit(&self, page: u64, data: &[u8]) {
        let mut s = self.lock();
        let s = &mut *s;
        for (i, chunk) in data.chunks(self.page_size).enumerate() {
            let p = page + i as u64;
            if s.policy.admit(p, 0, &mut s.evicted) {
                s.pages.insert(p, chunk.to_vec());
            }
            for e in s.evicted.drain(..) {
                s.pages.remove(&e);
            }
        }
    }

    /// Replaces the resident pages among those `data` overwrites.
    fn update(&self, page: u64, data: &[u8]) {
        let mut s = self.lock();
        for (i, chunk) in data.chunks(self.page_size).enumerate() {
            if let Some(v) = s.pages.get_mut(&(page + i as u64)) {
                v.copy_from_slice(chunk);
            }
        }
    }
}

/// One handle's device behind the shared budget.
struct Cached {
    inner: Box<dyn Device>,
    budget: Arc<Budget>,
}

impl Device for Cached {
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }

    fn capacity_pages(&self) -> u64 {
        self.inner.capacity_pages()
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        if self.budget.serve(page, buf) {
            return Ok(());
        }
        self.inner.read(page, buf)?;
        self.budget.admit(page, buf);
        Ok(())
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        self.inner.write(page, data)?;
        self.budget.update(page, data);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }

    /// Drops the device's caches (the OS's); the budget stands for memory the streams
    /// keep, and starts empty when it is made.
    fn drop_caches(&mut self) -> Result<()> {
        self.inner.drop_caches()
    }

    fn device_ns(&self) -> u64 {
        self.inner.device_ns()
    }

    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }

    fn persist(&mut self) -> Result<()> {
        self.inner.persist()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{MemoryConfig, MemoryDevice};

    /// Two handles over two devices holding the same pages: a page one handle read is
    /// served to the other from memory; the least recently used page leaves first; a
    /// request with one page not resident goes to the device whole; a write replaces the
    /// cached copy.
    #[test]
    fn handles_share_resident_pages_in_lru_order() {
        let ps = 512;
        let budget = Budget::new(2 * ps as u64, ps).unwrap();
        let mk = || {
            let mut d = MemoryDevice::open(&MemoryConfig::default(), ps, None).unwrap();
            for p in 0..4u64 {
                d.write(p, &vec![p as u8 + 1; ps]).unwrap();
            }
            budget.wrap(Box::new(d))
        };
        let (mut a, mut b) = (mk(), mk());
        let mut buf = vec![0; ps];
        a.read(0, &mut buf).unwrap();
        let reads = b.stats().host.read_ops;
        b.read(0, &mut buf).unwrap();
        assert_eq!(buf, vec![1; ps]);
        assert_eq!(b.stats().host.read_ops, reads, "served from memory");
        assert_eq!((budget.hits(), budget.misses()), (1, 1));
        a.read(1, &mut buf).unwrap(); // resident: 0, 1
        b.read(0, &mut buf).unwrap(); // 0 used last
        a.read(2, &mut buf).unwrap(); // evicts 1: resident 0, 2
        assert_eq!((budget.hits(), budget.misses()), (2, 3));
        let mut two = vec![0; 2 * ps];
        b.read(0, &mut two).unwrap(); // 1 is not resident: a miss, both pages read
        assert_eq!(b.stats().host.read_ops, reads + 1);
        assert_eq!((budget.hits(), budget.misses()), (2, 4));
        assert_eq!(&two[ps..], &vec![2; ps][..]);
        b.read(1, &mut buf).unwrap(); // now resident (2 left)
        assert_eq!((budget.hits(), budget.misses()), (3, 4));
        a.read(2, &mut buf).unwrap();
        assert_eq!(budget.misses(), 5, "2 was evicted by 1");
        // A write through one handle updates what the other is served.
        a.write(2, &vec![9; ps]).unwrap();
        b.read(2, &mut buf).unwrap();
        assert_eq!(buf, vec![9; ps]);
        assert_eq!(budget.hits(), 4);
    }
}
