//! A read-only view of a device for commands that must never write (`spidx check`,
//! `spidx query`): [`ReadOnlyOverlay`] passes reads to the device beneath and keeps every
//! write in memory, so opening an index can still replay its log or roll back its journal
//! (in memory) while the device file and the saved device state stay byte for byte as they
//! were. Only `spidx recover` (and writers) repair on the device itself.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

use super::wrapper::{self, ReadReq, WriteReq};
use super::{check_request, Device};
use crate::Result;

/// Reads from the device beneath, writes to memory. See the module documentation.
pub struct ReadOnlyOverlay {
    inner: Box<dyn Device>,
    pages: HashMap<u64, Box<[u8]>>,
}

impl ReadOnlyOverlay {
    /// A read-only view of `inner`.
    pub fn new(inner: Box<dyn Device>) -> Self {
        ReadOnlyOverlay {
            inner,
            pages: HashMap::new(),
        }
    }

    /// Pages written to the overlay (changes an open made in memory only).
    #[cfg(test)]
    pub(crate) fn overlaid_pages(&self) -> usize {
        self.pages.len()
    }
}

impl wrapper::DeviceWrapper for ReadOnlyOverlay {
    fn inner(&self) -> impl Deref<Target = dyn Device> + '_ {
        &*self.inner
    }

    fn inner_mut(&mut self) -> impl DerefMut<Target = dyn Device> + '_ {
        &mut *self.inner
    }

    /// Reads from the device beneath with the overlay's pages laid over; a read whose
    /// bytes are not used needs no overlay.
    fn read(&mut self, page: u64, req: ReadReq<'_>) -> Result<()> {
        req.forward_laid_over(&mut *self.inner, page, &self.pages)
    }

    /// Keeps the pages (whole, also for a partial-page write) in memory.
    fn write(&mut self, page: u64, req: WriteReq<'_>) -> Result<()> {
        let ps = self.inner.page_size();
        let n = check_request(page, req.data.len(), ps, self.inner.capacity_pages())?;
        for i in 0..n {
            let at = i as usize * ps;
            self.pages.insert(page + i, req.data[at..at + ps].into());
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn persist(&mut self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{MemoryConfig, MemoryDevice};

    #[test]
    fn writes_stay_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("m.state");
        let mut m =
            MemoryDevice::open(&MemoryConfig { capacity: 16 * 512 }, 512, Some(&state)).unwrap();
        m.write(2, &[7u8; 512]).unwrap();
        m.persist().unwrap();
        let before = std::fs::read(&state).unwrap();
        let mut o = ReadOnlyOverlay::new(Box::new(m));
        let mut buf = vec![0u8; 3 * 512];
        o.write(3, &[9u8; 512]).unwrap();
        o.read(1, &mut buf).unwrap();
        assert!(buf[..512].iter().all(|b| *b == 0));
        assert!(buf[512..1024].iter().all(|b| *b == 7));
        assert!(buf[1024..].iter().all(|b| *b == 9));
        o.sync().unwrap();
        o.persist().unwrap();
        assert_eq!(o.overlaid_pages(), 1);
        assert_eq!(std::fs::read(&state).unwrap(), before);
        let mut inner = vec![0u8; 512];
        o.inner.read(3, &mut inner).unwrap();
        assert!(inner.iter().all(|b| *b == 0));
        assert!(o.write(16, &[0u8; 512]).is_err());
    }
}
