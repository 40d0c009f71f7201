//! Where FAST's, eFIND's and RFTL's logs are written (`log_device`), on whole index directories:
//! what each placement counts (a separate log device's I/O is exactly what the same
//! placement adds to the device under test; an uncounted log adds nothing), how each
//! reopens after a killed process (file: devices keep the log; simulated ones reopen at
//! their last checkpoint) and what is refused with a clear error.

mod index_dir;
mod stores;

use std::path::{Path, PathBuf};

use index_dir::{ids, rect};
use spidx::cache::CacheConfig;
use spidx::device::file::FileConfig;
use spidx::device::memory::MemoryConfig;
use spidx::device::DeviceConfig;
use spidx::index::{IndexKind, RStarOptions};
use spidx::node::{LayoutKind, Occupancy};
use spidx::spatial::{IndexOptions, PhaseReport, SpatialIndex};
use spidx::store::fast::FlushPolicy;
use spidx::store::log::LogSync;
use spidx::store::StoreConfig;
use stores::{efind, fast, placed, rftl};

const PAGE: usize = 1024;

fn file_device(path: &Path) -> DeviceConfig {
    DeviceConfig::File(FileConfig {
        path: path.to_path_buf(),
        direct: false,
        capacity: 8 << 20,
    })
}

fn memory_device() -> DeviceConfig {
    DeviceConfig::Memory(MemoryConfig { capacity: 8 << 20 })
}

fn options(store: StoreConfig, device: DeviceConfig) -> IndexOptions {
    IndexOptions {
        kind: IndexKind::RStar(RStarOptions::default()),
        page_size: PAGE,
        layout: LayoutKind::Checked,
        occupancy: Occupancy::default(),
        buffer: CacheConfig::none(),
        store,
        device_name: device.kind().into(),
        device,
    }
}

fn fast_store() -> StoreConfig {
    fast(FlushPolicy::FastStar, 2, 8 << 10, LogSync::EachOp)
}

fn efind_store() -> StoreConfig {
    efind(
        spidx::store::efind::FlushPolicy::Mthao,
        3,
        spidx::cache::CachePolicy::Lru,
        spidx::store::efind::TemporalControl::Both,
        LogSync::EachOp,
    )
}

/// RFTL (its paper's behaviour is `log_device = "uncounted"`: the buffer is lost by a
/// crash; on a simulated device the index reopens at its last checkpoint).
fn rftl_store() -> StoreConfig {
    rftl(8 << 10, 3, LogSync::EachOp)
}

fn insert(idx: &mut SpatialIndex<2>, range: std::ops::Range<u64>) -> PhaseReport {
    let clock = idx.phase();
    for i in range {
        idx.insert(rect(i), i).unwrap();
    }
    idx.stop_phase(clock)
}

fn checked(idx: &mut SpatialIndex<2>) {
    let rep = idx.tree_mut().check().unwrap();
    assert!(rep.ok(), "{:?}", rep.violations);
}

struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    Dirs {
        root: tmp.path().to_path_buf(),
        _tmp: tmp,
    }
}

#[test]
fn a_separate_log_device_counts_exactly_what_the_same_placement_adds() {
    for base in [fast_store(), efind_store()] {
        let d = dirs();
        let build = |cfg: StoreConfig, name: &str| {
            let mut idx =
                SpatialIndex::<2>::create(&d.root.join(name), options(cfg, memory_device()), false)
                    .unwrap();
            let rep = insert(&mut idx, 0..1500);
            checked(&mut idx);
            rep
        };
        let same = build(base.clone(), "same");
        let sep = build(placed(base.clone(), "separate:memory"), "sep");
        let unc = build(placed(base.clone(), "uncounted"), "unc");
        let what = format!("{base:?}");
        assert!(
            same.log_device.is_none() && unc.log_device.is_none(),
            "{what}"
        );
        let log = sep
            .log_device
            .clone()
            .expect("the separate device is measured");
        assert!(log.host.write_ops > 0, "{what}: the log was written");
        // The node device sees the same requests whatever the placement, and the log's
        // requests land on the device under test only with `same`.
        assert_eq!(sep.device.host, unc.device.host, "{what}");
        assert_eq!(
            same.device.host.write_ops,
            sep.device.host.write_ops + log.host.write_ops,
            "{what}"
        );
        assert_eq!(
            same.device.host.pages_written,
            sep.device.host.pages_written + log.host.pages_written,
            "{what}"
        );
        assert_eq!(
            same.device.host.read_ops,
            sep.device.host.read_ops + log.host.read_ops,
            "{what}"
        );
        // A simulated run's elapsed time includes the log device's time (and the host
        // profile's price of the counted work, never the CPU time).
        let l = sep.log_device_s.unwrap();
        assert!(
            (sep.elapsed_s - (sep.device_s + l + sep.host_s)).abs() < 1e-9,
            "{what}: {sep:?}"
        );
    }
}

#[test]
fn a_killed_process_recovers_from_a_separate_or_uncounted_log_on_file_devices() {
    for base in [fast_store(), efind_store(), rftl_store()] {
        for placement in ["uncounted", "separate:file"] {
            let d = dirs();
            let dir = d.root.join("idx");
            let placement = match placement {
                "separate:file" => format!("separate:file:{}", d.root.join("log.bin").display()),
                p => p.to_string(),
            };
            let cfg = placed(base.clone(), &placement);
            let what = format!("{placement} {base:?}");
            let mut idx = SpatialIndex::<2>::create(
                &dir,
                options(cfg, file_device(&d.root.join("pages.bin"))),
                false,
            )
            .unwrap();
            insert(&mut idx, 0..300);
            idx.flush().unwrap();
            insert(&mut idx, 300..500);
            // The process is killed: no checkpoint.
            drop(idx);
            let log_file = if placement == "uncounted" {
                dir.join("log.uncounted")
            } else {
                d.root.join("log.bin")
            };
            let before = std::fs::read(&log_file).unwrap();
            // A reader replays the log in memory and leaves it as it was.
            let mut ro = SpatialIndex::<2>::open_read_only(&dir).unwrap();
            assert_eq!(ids(&mut ro), (0..500).collect::<Vec<_>>(), "{what}");
            checked(&mut ro);
            drop(ro);
            assert!(
                std::fs::read(&log_file).unwrap() == before,
                "{what}: read-only"
            );
            let mut w = SpatialIndex::<2>::open(&dir).unwrap();
            assert_eq!(ids(&mut w), (0..500).collect::<Vec<_>>(), "{what}");
            checked(&mut w);
            insert(&mut w, 500..520);
            w.flush().unwrap();
            drop(w);
            let mut w = SpatialIndex::<2>::open(&dir).unwrap();
            assert_eq!(ids(&mut w).len(), 520, "{what}");
            checked(&mut w);
        }
    }
}

#[test]
fn simulated_indices_reopen_at_their_last_checkpoint_whatever_the_placement() {
    for base in [fast_store(), efind_store(), rftl_store()] {
        for placement in ["uncounted", "separate:memory", "same"] {
            let d = dirs();
            let dir = d.root.join("idx");
            let cfg = placed(base.clone(), placement);
            let what = format!("{placement} {base:?}");
            let mut idx =
                SpatialIndex::<2>::create(&dir, options(cfg, memory_device()), false).unwrap();
            insert(&mut idx, 0..300);
            idx.flush().unwrap();
            insert(&mut idx, 300..500);
            drop(idx);
            // A simulated device keeps its pages only at checkpoints, and so does its log
            // (the uncounted file and the separate device's state are saved with them).
            let mut w = SpatialIndex::<2>::open(&dir).unwrap();
            assert_eq!(ids(&mut w), (0..300).collect::<Vec<_>>(), "{what}");
            checked(&mut w);
            insert(&mut w, 300..400);
            w.flush().unwrap();
            drop(w);
            let mut w = SpatialIndex::<2>::open_read_only(&dir).unwrap();
            assert_eq!(ids(&mut w), (0..400).collect::<Vec<_>>(), "{what}");
            checked(&mut w);
        }
    }
}

#[test]
fn a_lost_uncounted_log_is_a_clear_error_not_a_silent_wrong_index() {
    let d = dirs();
    let dir = d.root.join("idx");
    let cfg = placed(fast_store(), "uncounted");
    let mut idx = SpatialIndex::<2>::create(
        &dir,
        options(cfg, file_device(&d.root.join("pages.bin"))),
        false,
    )
    .unwrap();
    insert(&mut idx, 0..300);
    let durability = idx.tree().store().report().settings.durability;
    assert!(durability.starts_with("NOT crash-safe"), "{durability}");
    drop(idx);
    // A power loss: the never-synced log file is gone, or came back empty.
    std::fs::write(dir.join("log.uncounted"), b"").unwrap();
    let e = SpatialIndex::<2>::open(&dir).err().unwrap().to_string();
    assert!(e.contains("log"), "{e}");
    std::fs::remove_file(dir.join("log.uncounted")).unwrap();
    let e = SpatialIndex::<2>::open(&dir).err().unwrap().to_string();
    assert!(e.contains("log.uncounted") && e.contains("missing"), "{e}");
}

#[test]
fn bad_placements_are_refused_before_anything_is_created() {
    let d = dirs();
    let cases = [
        (
            placed(
                fast_store(),
                &format!("separate:file:{}", d.root.join("l.bin").display()),
            ),
            memory_device(),
            "would not match",
        ),
        (
            placed(fast_store(), "separate:memory"),
            file_device(&d.root.join("p.bin")),
            "would not match",
        ),
        (
            placed(
                efind_store(),
                &format!("separate:file:{}", d.root.join("p.bin").display()),
            ),
            file_device(&d.root.join("p.bin")),
            "own device file",
        ),
        (
            placed(fast_store(), "separate:memory{capacity=64KB}"),
            memory_device(),
            "log device has only",
        ),
    ];
    for (i, (cfg, dev, want)) in cases.into_iter().enumerate() {
        let dir = d.root.join(format!("idx{i}"));
        let e = SpatialIndex::<2>::create(&dir, options(cfg, dev), false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(want), "case {i}: {e}");
        assert!(!dir.join("index.json").exists(), "case {i}");
    }
}

/// A separate log device's file carries an owner record, as the device file does: written
/// when the index is created (its own UUID, in the manifest too), checked when the index
/// opens, before the log is read (a record naming another index's device is refused), so
/// that re-running a spec on the same log file needs no `--force` and an index whose log
/// file was taken over is not replayed from it.
#[test]
fn a_separate_log_file_has_an_owner_record_checked_on_open() {
    let d = dirs();
    let dir = d.root.join("idx");
    let log = d.root.join("log.bin");
    let cfg = placed(fast_store(), &format!("separate:file:{}", log.display()));
    let mut idx = SpatialIndex::<2>::create(
        &dir,
        options(cfg.clone(), file_device(&d.root.join("pages.bin"))),
        false,
    )
    .unwrap();
    insert(&mut idx, 0..50);
    idx.flush().unwrap();
    let m = idx.manifest().clone();
    drop(idx);
    let uuid = m.log_device_uuid.expect("the log file is claimed");
    assert_ne!(Some(&uuid), m.device_uuid.as_ref());
    let record = d.root.join("log.bin.owner");
    let owner: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(owner["uuid"], uuid.as_str());
    let mut w = SpatialIndex::<2>::open(&dir).unwrap();
    assert_eq!(ids(&mut w).len(), 50);
    drop(w);
    // Taken over by another index: refused, naming the log file.
    let theirs =
        serde_json::json!({"uuid": "0123456789abcdef0123456789abcdef", "index": "/elsewhere"});
    std::fs::write(&record, theirs.to_string()).unwrap();
    for e in [
        SpatialIndex::<2>::open(&dir).err().unwrap(),
        SpatialIndex::<2>::open_read_only(&dir).err().unwrap(),
    ] {
        let e = e.to_string();
        assert!(e.contains("log.bin") && e.contains("overwritten"), "{e}");
    }
    std::fs::remove_file(&record).unwrap();
    let e = SpatialIndex::<2>::open(&dir).err().unwrap().to_string();
    assert!(e.contains("log.bin.owner") && e.contains("missing"), "{e}");
    // A new index on the same files once the first is gone claims the log file anew.
    std::fs::remove_dir_all(&dir).unwrap();
    let idx = SpatialIndex::<2>::create(
        &dir,
        options(cfg, file_device(&d.root.join("pages.bin"))),
        false,
    )
    .unwrap();
    assert_ne!(idx.manifest().log_device_uuid.as_ref(), Some(&uuid));
}
