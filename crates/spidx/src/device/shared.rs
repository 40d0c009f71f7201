//! [`SharedDevice`]: a cloneable handle over one device. Every clone reaches the same
//! device, so a test can hand one handle to a store (which owns it like any device) and
//! keep another to look at — or reopen — the same medium after a simulated power cut.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

use super::wrapper;
use super::Device;

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

impl wrapper::DeviceWrapper for SharedDevice {
    fn inner(&self) -> impl Deref<Target = dyn Device> + '_ {
        Locked(self.dev())
    }

    fn inner_mut(&mut self) -> impl DerefMut<Target = dyn Device> + '_ {
        Locked(self.dev())
    }
}

/// The locked device behind a [`SharedDevice`].
struct Locked<'a>(MutexGuard<'a, Box<dyn Device>>);

impl Deref for Locked<'_> {
    type Target = dyn Device;

    fn deref(&self) -> &(dyn Device + 'static) {
        &**self.0
    }
}

impl DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut (dyn Device + 'static) {
        &mut **self.0
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
