//! Every wrapper passes every [`Device`] method on (or handles it on purpose), and reports
//! the inner device's statistics.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use crate::device::crash::{CrashDevice, Tear};
use crate::device::memory::{MemoryConfig, MemoryDevice};
use crate::device::overlay::ReadOnlyOverlay;
use crate::device::partition::Partition;
use crate::device::shared::SharedDevice;
use crate::device::tap::{Tap, TapLog};
use crate::device::throttled::{ThrottleConfig, Throttled};
use crate::device::{Device, DeviceStats};
use crate::Result;

const PS: usize = 512;

/// Puts a device inside one wrapper.
type Wrap = fn(Box<dyn Device>) -> Box<dyn Device>;

type Calls = Arc<Mutex<BTreeMap<&'static str, u64>>>;

/// A memory device that counts the calls of each [`Device`] method made on it.
struct Counting {
    mem: MemoryDevice,
    calls: Calls,
}

impl Counting {
    fn boxed() -> (Box<dyn Device>, Calls) {
        let calls = Calls::default();
        let mem = MemoryDevice::open(
            &MemoryConfig {
                capacity: 64 * PS as u64,
            },
            PS,
            None,
        )
        .unwrap();
        let c = Counting {
            mem,
            calls: Arc::clone(&calls),
        };
        (Box::new(c), calls)
    }

    fn note(&self, name: &'static str) {
        *self.calls.lock().unwrap().entry(name).or_default() += 1;
    }
}

impl Device for Counting {
    fn page_size(&self) -> usize {
        self.mem.page_size()
    }
    fn capacity_pages(&self) -> u64 {
        self.mem.capacity_pages()
    }
    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        self.note("read");
        self.mem.read(page, buf)
    }
    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        self.note("read_unused");
        self.mem.read_unused(page, pages)
    }
    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        self.note("write");
        self.mem.write(page, data)
    }
    fn write_changed(&mut self, page: u64, data: &[u8], changed: &[Range<usize>]) -> Result<()> {
        self.note("write_changed");
        self.mem.write_changed(page, data, changed)
    }
    fn sync(&mut self) -> Result<()> {
        self.note("sync");
        self.mem.sync()
    }
    fn drop_caches(&mut self) -> Result<()> {
        self.note("drop_caches");
        self.mem.drop_caches()
    }
    fn device_ns(&self) -> u64 {
        self.mem.device_ns()
    }
    fn stats(&self) -> DeviceStats {
        self.mem.stats()
    }
    fn persist(&mut self) -> Result<()> {
        self.note("persist");
        self.mem.persist()
    }
    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        self.note("submit_at");
        self.mem.submit_at(at_ns)
    }
    fn completed_ns(&self) -> u64 {
        self.note("completed_ns");
        self.mem.completed_ns()
    }
    fn read_time_ignores_contents(&self) -> bool {
        self.note("read_time_ignores_contents");
        self.mem.read_time_ignores_contents()
    }
}

/// Makes each request of the [`Device`] interface once through `dev` and returns what
/// reached the counting device beneath, and `dev`'s statistics.
fn exercise(mut dev: Box<dyn Device>, calls: &Calls) -> (BTreeMap<&'static str, u64>, DeviceStats) {
    let page = vec![3u8; PS];
    let mut buf = vec![0u8; PS];
    dev.write(1, &page).unwrap();
    let mut changed = page.clone();
    changed[10..20].fill(9);
    dev.write_changed(1, &changed, std::slice::from_ref(&(10..20)))
        .unwrap();
    dev.read(1, &mut buf).unwrap();
    assert_eq!(buf, changed, "a read returns the partial-page write");
    dev.read_unused(1, 1).unwrap();
    dev.sync().unwrap();
    dev.drop_caches().unwrap();
    dev.persist().unwrap();
    let _ = dev.submit_at(0);
    dev.completed_ns();
    dev.read_time_ignores_contents();
    assert_eq!(dev.page_size(), PS);
    let stats = dev.stats();
    let seen = calls.lock().unwrap().clone();
    (seen, stats)
}

fn every_call() -> BTreeMap<&'static str, u64> {
    [
        "read",
        "read_unused",
        "write",
        "write_changed",
        "sync",
        "drop_caches",
        "persist",
        "submit_at",
        "completed_ns",
        "read_time_ignores_contents",
    ]
    .into_iter()
    .map(|m| (m, 1))
    .collect()
}

/// The same requests made of the counting device itself: what a transparent wrapper's
/// statistics must equal.
fn bare_stats() -> DeviceStats {
    let (dev, calls) = Counting::boxed();
    exercise(dev, &calls).1
}

#[test]
fn transparent_wrappers_forward_every_method_and_report_the_inner_stats() {
    let wrappers: Vec<(&str, Wrap)> = vec![
        ("shared", |d| Box::new(SharedDevice::new(d))),
        ("tap", |d| Box::new(Tap::new(d, TapLog::new()))),
        ("partition", |d| Box::new(Partition::split(d, 1).unwrap().1)),
        ("crash before its cut", |d| {
            Box::new(CrashDevice::new(d, 100, Tear::Lost))
        }),
    ];
    for (name, wrap) in wrappers {
        let (dev, calls) = Counting::boxed();
        let (seen, stats) = exercise(wrap(dev), &calls);
        assert_eq!(seen, every_call(), "{name}");
        assert_eq!(stats, bare_stats(), "{name}");
    }
}

#[test]
fn a_partition_moves_every_request_by_its_base() {
    let (dev, _) = Counting::boxed();
    let shared = SharedDevice::new(dev);
    let (_, mut second) = Partition::split(Box::new(shared.clone()), 8).unwrap();
    second
        .write_changed(0, &[4u8; PS], std::slice::from_ref(&(0..PS)))
        .unwrap();
    let mut buf = vec![0u8; PS];
    let mut whole = shared;
    whole.read(8, &mut buf).unwrap();
    assert_eq!(buf, vec![4u8; PS]);
    assert!(second
        .write_changed(56, &[4u8; PS], std::slice::from_ref(&(0..1)))
        .is_err());
    assert!(second.read_unused(55, 2).is_err());
}

#[test]
fn the_throttle_charges_partial_page_writes_and_keeps_its_own_clock() {
    let (dev, calls) = Counting::boxed();
    let t = Throttled::new(dev, &ThrottleConfig::azure_standard_hdd()).unwrap();
    let (seen, stats) = exercise(Box::new(t), &calls);
    let mut want = every_call();
    want.remove("submit_at");
    want.remove("completed_ns");
    assert_eq!(seen, want);
    assert_eq!(stats.kind, "throttled");
    let throttle = stats.throttle.unwrap();
    assert_eq!(throttle.io_units, 4, "two writes and two reads charged");
    assert_eq!(
        DeviceStats {
            kind: "memory".into(),
            device_ns: 0,
            throttle: None,
            ..stats
        },
        bare_stats()
    );
}

#[test]
fn the_read_only_overlay_and_a_cut_crash_device_keep_writes_from_the_medium() {
    let wrappers: [(&str, Wrap); 2] = [
        ("overlay", |d| Box::new(ReadOnlyOverlay::new(d))),
        ("crash", |d| Box::new(CrashDevice::new(d, 0, Tear::Lost))),
    ];
    for (name, wrap) in wrappers {
        let (dev, calls) = Counting::boxed();
        let (seen, _) = exercise(wrap(dev), &calls);
        let mut want = every_call();
        for kept in ["write", "write_changed", "sync", "persist"] {
            want.remove(kept);
        }
        assert_eq!(seen, want, "{name}");
    }
}
