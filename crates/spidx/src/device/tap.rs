//! A tap on a device: forwards every call unchanged and, while recording, notes each read
//! and write request (first page, page count). The experiment runner records the requests
//! of each query this way and replays them, interleaved, in a simulation of concurrent
//! query streams ([`crate::experiment::concurrent`]). The tap changes no count or time.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use super::wrapper::{self, ReadReq, WriteReq};
use super::Device;
use crate::Result;

/// One device request as the tap saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// First page.
    pub page: u64,
    /// Number of consecutive pages.
    pub pages: u64,
    /// A write (else a read).
    pub write: bool,
}

#[derive(Debug, Default)]
struct Log {
    recording: bool,
    requests: Vec<Request>,
}

/// The handle that starts recording and takes what was recorded; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct TapLog(Arc<Mutex<Log>>);

impl TapLog {
    /// A new, idle log.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        // A panic while holding the lock leaves a log that is still consistent.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts (or restarts) recording, forgetting anything not yet taken.
    pub fn start(&self) {
        let mut l = self.lock();
        l.recording = true;
        l.requests.clear();
    }

    /// The requests recorded since [`TapLog::start`] or the last `take`; recording goes on.
    pub fn take(&self) -> Vec<Request> {
        std::mem::take(&mut self.lock().requests)
    }

    /// Stops recording and forgets what was not taken.
    pub(crate) fn stop(&self) {
        let mut l = self.lock();
        l.recording = false;
        l.requests.clear();
    }

    fn note(&self, page: u64, bytes: usize, page_size: usize, write: bool) {
        let mut l = self.lock();
        if l.recording && page_size > 0 {
            l.requests.push(Request {
                page,
                pages: (bytes / page_size) as u64,
                write,
            });
        }
    }
}

/// A device that records the requests made to the device it wraps (see [`TapLog`]).
pub struct Tap {
    inner: Box<dyn Device>,
    log: TapLog,
}

impl Tap {
    /// Wraps `inner`; `log` controls recording.
    pub fn new(inner: Box<dyn Device>, log: TapLog) -> Self {
        Tap { inner, log }
    }
}

impl wrapper::DeviceWrapper for Tap {
    fn inner(&self) -> impl Deref<Target = dyn Device> + '_ {
        &*self.inner
    }

    fn inner_mut(&mut self) -> impl DerefMut<Target = dyn Device> + '_ {
        &mut *self.inner
    }

    fn read(&mut self, page: u64, req: ReadReq<'_>) -> Result<()> {
        let ps = self.inner.page_size();
        let len = req.len(ps)?;
        req.forward(&mut *self.inner, page)?;
        self.log.note(page, len, ps, false);
        Ok(())
    }

    fn write(&mut self, page: u64, req: WriteReq<'_>) -> Result<()> {
        req.forward(&mut *self.inner, page)?;
        self.log
            .note(page, req.data.len(), self.inner.page_size(), true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{MemoryConfig, MemoryDevice};

    #[test]
    fn records_only_while_recording_and_forwards_everything() {
        let log = TapLog::new();
        let mem = MemoryDevice::open(&MemoryConfig::default(), 512, None).unwrap();
        let mut t = Tap::new(Box::new(mem), log.clone());
        t.write(3, &[7u8; 1024]).unwrap();
        assert!(log.take().is_empty());
        log.start();
        let mut buf = [0u8; 1024];
        t.read(3, &mut buf).unwrap();
        assert_eq!(buf, [7u8; 1024]);
        t.write(9, &[1u8; 512]).unwrap();
        let r = log.take();
        assert_eq!(
            r,
            vec![
                Request {
                    page: 3,
                    pages: 2,
                    write: false
                },
                Request {
                    page: 9,
                    pages: 1,
                    write: true
                }
            ]
        );
        assert_eq!(t.stats().host.read_ops, 1);
        assert_eq!(t.stats().host.write_ops, 2);
        log.stop();
        t.read(3, &mut buf).unwrap();
        assert!(log.take().is_empty());
    }
}
