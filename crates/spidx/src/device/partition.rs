//! Partitions: several users (the node store and the object store of one index) sharing
//! one device, each seeing its own range of pages. Requests go to the same underlying
//! device, so its counters and its clock (head position, die queues, caches) reflect the
//! interleaving of both, as on a real disk holding a table and its index.

use std::ops::{Deref, DerefMut};

use super::shared::SharedDevice;
use super::wrapper::{self, ReadReq, WriteReq};
use super::{check_request, Device};
use crate::{Error, Result};

/// A range `[base, base + len)` of pages of a shared device, itself a [`Device`] whose
/// statistics are the whole shared device's.
pub struct Partition {
    shared: SharedDevice,
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
        let shared = SharedDevice::new(device);
        let part = |shared, base, len| Partition {
            shared,
            base,
            len,
            page_size,
        };
        Ok((part(shared.clone(), 0, at), part(shared, at, cap - at)))
    }

    /// First page of this partition on the shared device.
    pub fn base(&self) -> u64 {
        self.base
    }
}

impl wrapper::DeviceWrapper for Partition {
    fn inner(&self) -> impl Deref<Target = dyn Device> + '_ {
        &self.shared as &dyn Device
    }

    fn inner_mut(&mut self) -> impl DerefMut<Target = dyn Device> + '_ {
        &mut self.shared as &mut dyn Device
    }

    fn capacity_pages(&self) -> u64 {
        self.len
    }

    fn read(&mut self, page: u64, req: ReadReq<'_>) -> Result<()> {
        check_request(page, req.len(self.page_size)?, self.page_size, self.len)?;
        req.forward(&mut self.shared, self.base + page)
    }

    fn write(&mut self, page: u64, req: WriteReq<'_>) -> Result<()> {
        check_request(page, req.data.len(), self.page_size, self.len)?;
        req.forward(&mut self.shared, self.base + page)
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
