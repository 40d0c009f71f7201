//! Crash safety of whole index directories on `file:` devices (`spidx::spatial`): readers
//! never write (a damaged FAST log is reported by a read-only open and left for `recover`),
//! the direct store's rollback journal brings a crashed index back to its last checkpoint,
//! an index is openable from the moment its manifest exists, and an index owns its device
//! file (locks, device UUID).

mod index_dir;

use std::path::Path;

use index_dir::{files, ids, rect};
use spidx::cache::CacheConfig;
use spidx::device::file::FileConfig;
use spidx::device::DeviceConfig;
use spidx::index::{IndexKind, RStarOptions};
use spidx::node::{LayoutKind, Occupancy};
use spidx::spatial::{IndexOptions, SpatialIndex};
use spidx::store::fast::{FastOptions, FlushPolicy};
use spidx::store::log::LogSync;
use spidx::store::StoreConfig;

const PAGE: usize = 1024;

fn options(store: StoreConfig, device: &Path) -> IndexOptions {
    IndexOptions {
        kind: IndexKind::RStar(RStarOptions::default()),
        page_size: PAGE,
        layout: LayoutKind::Checked,
        occupancy: Occupancy::default(),
        buffer: CacheConfig::none(),
        store,
        device_name: "file".into(),
        device: DeviceConfig::File(FileConfig {
            path: device.to_path_buf(),
            direct: false,
            capacity: 8 << 20,
        }),
    }
}

fn fast() -> StoreConfig {
    StoreConfig::Fast(FastOptions {
        log_size: Some(1 << 20),
        log_sync: LogSync::EachOp,
        ..FastOptions::new(8 << 10, 2, FlushPolicy::FastStar)
    })
}

/// One bit flipped in the middle of a crashed index's log (valid records after it): every
/// open refuses, naming the damage and what would be lost, and writes nothing; only an
/// open that accepts the loss keeps the operations before it.
#[test]
fn a_damaged_log_is_refused_until_the_loss_is_accepted() {
    let f = files();
    let mut idx = SpatialIndex::<2>::create(&f.dir, options(fast(), &f.dev), false).unwrap();
    for i in 0..400 {
        idx.insert(rect(i), i).unwrap();
    }
    // Killed: no checkpoint; every insert is in the (synced) log.
    drop(idx);
    // Flip a bit in the live log: the node partition's last 1 MB, region 0 starts at its
    // page 2 (a new log writes its first generation there).
    let cap_pages = (8u64 << 20) / PAGE as u64;
    let log_first = cap_pages - (1 << 20) / PAGE as u64;
    let mut bytes = std::fs::read(&f.dev).unwrap();
    let flip = (log_first + 2) as usize * PAGE + 20 * PAGE + 77;
    bytes[flip] ^= 0x10;
    std::fs::write(&f.dev, &bytes).unwrap();
    let before = std::fs::read(&f.dev).unwrap();
    let listing = || {
        let mut v: Vec<_> = std::fs::read_dir(&f.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let dir_before = listing();
    for (what, e) in [
        ("read-only", SpatialIndex::<2>::open_read_only(&f.dir).err()),
        ("writer", SpatialIndex::<2>::open(&f.dir).err()),
    ] {
        let e = e.unwrap_or_else(|| panic!("a {what} open answered from a damaged log"));
        let e = e.to_string();
        assert!(
            e.contains("damage, not a torn tail") && e.contains("would be lost"),
            "{what}: {e}"
        );
        // Nothing was written: the device file and the directory are as they were.
        assert!(std::fs::read(&f.dev).unwrap() == before, "{what}");
        assert_eq!(listing(), dir_before, "{what}");
    }
    let mut w = SpatialIndex::<2>::open_accepting_loss(&f.dir).unwrap();
    assert!(w.recovery_state().accepted_loss.is_some());
    let seen = ids(&mut w);
    assert!(!seen.is_empty() && seen.len() < 400, "{}", seen.len());
    assert_eq!(seen, (0..seen.len() as u64).collect::<Vec<_>>());
    assert!(w.tree_mut().check().unwrap().ok());
    w.flush().unwrap();
    drop(w);
    // The accepted prefix is the new checkpoint: plain opens see it.
    let mut w = SpatialIndex::<2>::open(&f.dir).unwrap();
    assert_eq!(ids(&mut w), seen);
    assert!(w.tree_mut().check().unwrap().ok());
}

#[test]
fn the_direct_store_rolls_back_to_its_last_checkpoint() {
    let f = files();
    let idx =
        SpatialIndex::<2>::create(&f.dir, options(StoreConfig::direct(), &f.dev), false).unwrap();
    // Killed before any checkpoint: the index reopens, empty.
    drop(idx);
    let mut idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    assert!(ids(&mut idx).is_empty());
    drop(idx);
    let mut idx = SpatialIndex::<2>::open(&f.dir).unwrap();
    for i in 0..300 {
        idx.insert(rect(i), i).unwrap();
    }
    idx.flush().unwrap();
    // After the checkpoint, more inserts overwrite checkpointed pages in place (the root,
    // leaves); then the process dies.
    for i in 300..700 {
        idx.insert(rect(i), i).unwrap();
    }
    let j = idx.tree().store().report().journal.unwrap();
    assert!(j.images > 0 && j.syncs > j.images, "{j:?}");
    drop(idx);
    // A reader sees the checkpoint (rolled back in memory) and writes nothing.
    let before = std::fs::read(&f.dev).unwrap();
    let mut ro = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    assert_eq!(ids(&mut ro), (0..300).collect::<Vec<_>>());
    assert!(ro.tree_mut().check().unwrap().ok());
    assert!(
        ro.flush().is_err(),
        "a read-only index refuses to checkpoint"
    );
    drop(ro);
    assert!(std::fs::read(&f.dev).unwrap() == before);
    // The writer rolls back on the device.
    let mut w = SpatialIndex::<2>::open(&f.dir).unwrap();
    let rep = w.tree().store().report();
    assert!(rep.journal.unwrap().restored > 0, "{rep:?}");
    assert_eq!(ids(&mut w), (0..300).collect::<Vec<_>>());
    assert!(w.tree_mut().check().unwrap().ok());
    w.insert(rect(5000), 5000).unwrap();
    w.flush().unwrap();
    drop(w);
    let mut w = SpatialIndex::<2>::open(&f.dir).unwrap();
    assert_eq!(w.tree().store().report().journal.unwrap().restored, 0);
    assert_eq!(ids(&mut w).len(), 301);
}

#[test]
fn an_index_owns_its_directory_and_device_file() {
    let f = files();
    let idx = SpatialIndex::<2>::create(&f.dir, options(fast(), &f.dev), false).unwrap();
    // A second writer or a reader next to the writer: clear errors.
    let e = SpatialIndex::<2>::open(&f.dir).err().unwrap().to_string();
    assert!(e.contains("in use by another spidx process"), "{e}");
    let e = SpatialIndex::<2>::open_read_only(&f.dir)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("in use"), "{e}");
    // A second index on the same device file, while the first is open (locked) or not.
    let other = f.dir.with_file_name("other");
    let e = SpatialIndex::<2>::create(&other, options(fast(), &f.dev), false)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("in use"), "{e}");
    drop(idx);
    let e = SpatialIndex::<2>::create(&other, options(fast(), &f.dev), false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("belongs to the index") && e.contains(f.dir.to_str().unwrap()),
        "{e}"
    );
    // Two readers at once are fine.
    let a = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    let b = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    drop((a, b));
    // Once the first index is deleted, its device file may be reused; the old index, if
    // restored from a copy, is refused (its pages were overwritten).
    let manifest = std::fs::read(f.dir.join("index.json")).unwrap();
    std::fs::remove_dir_all(&f.dir).unwrap();
    let idx = SpatialIndex::<2>::create(&other, options(fast(), &f.dev), false).unwrap();
    drop(idx);
    std::fs::create_dir_all(&f.dir).unwrap();
    std::fs::write(f.dir.join("index.json"), manifest).unwrap();
    let e = SpatialIndex::<2>::open_read_only(&f.dir)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("now belongs to the index"), "{e}");
    // A deleted device file is an error, never recreated.
    std::fs::remove_file(&f.dev).unwrap();
    for e in [
        SpatialIndex::<2>::open_read_only(&other).err().unwrap(),
        SpatialIndex::<2>::open(&other).err().unwrap(),
    ] {
        let e = e.to_string();
        assert!(e.contains("pages.bin") && e.contains("is missing"), "{e}");
    }
    assert!(!f.dev.exists());
}

#[test]
fn an_index_killed_right_after_creation_reopens_with_objects() {
    for store in [StoreConfig::direct(), fast()] {
        let f = files();
        let idx = SpatialIndex::<2>::create(&f.dir, options(store.clone(), &f.dev), true).unwrap();
        drop(idx);
        for name in ["index.json", "store.json", "objects.dir"] {
            assert!(f.dir.join(name).exists(), "{store:?}: {name}");
        }
        let mut idx = SpatialIndex::<2>::open(&f.dir).unwrap();
        assert!(idx.tree_mut().check().unwrap().ok());
        assert_eq!(idx.objects().unwrap().len(), 0);
    }
}

/// The claim follows the file, not its name: a second index reaching the first one's
/// device file through a symlink (to the file or to its directory) or a hard link is
/// refused, and the first index keeps every object.
#[test]
fn a_device_file_claim_follows_symlinks_and_hard_links() {
    let f = files();
    let mut idx = SpatialIndex::<2>::create(&f.dir, options(fast(), &f.dev), false).unwrap();
    for i in 0..300 {
        idx.insert(rect(i), i).unwrap();
    }
    idx.flush().unwrap();
    drop(idx);
    let tmp = f.dir.parent().unwrap();
    let link = tmp.join("link.bin");
    std::os::unix::fs::symlink(&f.dev, &link).unwrap();
    let linked_dir = tmp.join("linked-dir");
    std::os::unix::fs::symlink(tmp, &linked_dir).unwrap();
    let through_dir = linked_dir.join("pages.bin");
    for (i, path) in [&link, &through_dir].into_iter().enumerate() {
        let other = tmp.join(format!("other-{i}"));
        let e = SpatialIndex::<2>::create(&other, options(fast(), path), false)
            .err()
            .unwrap_or_else(|| panic!("a second index through {} was accepted", path.display()))
            .to_string();
        assert!(
            e.contains("belongs to the index") && e.contains(f.dir.to_str().unwrap()),
            "{e}"
        );
    }
    let hard = tmp.join("hard.bin");
    std::fs::hard_link(&f.dev, &hard).unwrap();
    let e = SpatialIndex::<2>::create(&tmp.join("other-hard"), options(fast(), &hard), false)
        .err()
        .expect("a second index through a hard link was accepted")
        .to_string();
    assert!(e.contains("2 hard links"), "{e}");
    std::fs::remove_file(&hard).unwrap();
    let mut idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    assert_eq!(ids(&mut idx), (0..300).collect::<Vec<_>>());
}

/// The direct store's per-operation durability: with `each-op` a killed build keeps every
/// operation (the journal restarts after each one, so nothing is rolled back), with
/// `group:N` up to the last N-th operation (the tree's creation, its empty root, is the
/// first: 320 inserts make 321 operations, durable up to the 300th, the 299th insert);
/// each durable point syncs the device once.
#[test]
fn the_direct_store_syncs_each_operation_or_group_when_asked() {
    for (sync, n, kept) in [
        (LogSync::EachOp, 300u64, 300u64),
        (LogSync::Group(50), 320, 299),
        (LogSync::None, 320, 0),
    ] {
        let f = files();
        let store = StoreConfig::Direct {
            journal: true,
            log_sync: sync,
        };
        let mut idx = SpatialIndex::<2>::create(&f.dir, options(store, &f.dev), false).unwrap();
        let syncs_before = idx.device().stats().host.syncs;
        for i in 0..n {
            idx.insert(rect(i), i).unwrap();
        }
        let syncs = idx.device().stats().host.syncs - syncs_before;
        let expected_syncs = match sync {
            LogSync::EachOp => n,
            LogSync::Group(g) => (n + 1) / g as u64,
            LogSync::None => 0,
        };
        assert_eq!(syncs, expected_syncs, "{sync}");
        // Killed: no checkpoint.
        drop(idx);
        let mut idx = SpatialIndex::<2>::open(&f.dir).unwrap();
        assert_eq!(ids(&mut idx), (0..kept).collect::<Vec<_>>(), "{sync}");
        assert!(idx.tree_mut().check().unwrap().ok(), "{sync}");
    }
}

/// A checkpoint of a journaled direct store killed after the node store's seal (new
/// header, journal restarted) but before it ended: the previous object directory is put
/// back, and the records written since are found again, so the tree and its objects agree.
#[test]
fn an_interrupted_checkpoint_keeps_the_objects_of_the_sealed_tree() {
    use geo_types::{coord, Geometry, Rect as GeoRect};
    let f = files();
    let mut idx =
        SpatialIndex::<2>::create(&f.dir, options(StoreConfig::direct(), &f.dev), true).unwrap();
    let add = |idx: &mut SpatialIndex<2>, i: u64| {
        let r = rect(i);
        let g = Geometry::Rect(GeoRect::new(
            coord! { x: r.min[0], y: r.min[1] },
            coord! { x: r.max[0], y: r.max[1] },
        ));
        idx.put_object(i, &g).unwrap();
        idx.insert(r, i).unwrap();
    };
    for i in 0..100 {
        add(&mut idx, i);
    }
    idx.flush().unwrap();
    let older_directory = std::fs::read(f.dir.join("objects.dir")).unwrap();
    for i in 100..200 {
        add(&mut idx, i);
    }
    idx.flush().unwrap();
    drop(idx);
    // The state a kill between the node store's seal and the checkpoint's end leaves.
    std::fs::write(f.dir.join("objects.dir.bak"), older_directory).unwrap();
    std::fs::write(f.dir.join("checkpoint.pending"), b"").unwrap();
    assert!(spidx::spatial::checkpoint_interrupted(&f.dir));
    assert!(SpatialIndex::<2>::open_read_only(&f.dir).is_err());
    let mut idx = SpatialIndex::<2>::open(&f.dir).unwrap();
    assert!(!spidx::spatial::checkpoint_interrupted(&f.dir));
    assert_eq!(ids(&mut idx), (0..200).collect::<Vec<_>>());
    assert!(idx.tree_mut().check().unwrap().ok());
    let objects = idx
        .check_objects(spidx::spatial::CheckDepth::Normal, true)
        .unwrap()
        .unwrap();
    assert!(objects.ok(), "{objects:?}");
    assert_eq!(objects.records, 200);
}

/// Killed right after a checkpoint taken between storing geometries and inserting them
/// (a build's load phase, then a checkpoint every N insertions): the journal is empty, but
/// the object store keeps geometries the tree does not index. The index reports itself
/// crashed (not clean, not damaged), and a recovery drops those records.
#[test]
fn geometries_stored_ahead_of_their_insertion_make_a_crashed_index() {
    use geo_types::{coord, Geometry, Rect as GeoRect};
    let f = files();
    let mut idx =
        SpatialIndex::<2>::create(&f.dir, options(StoreConfig::direct(), &f.dev), true).unwrap();
    let geometry = |i: u64| {
        let r = rect(i);
        Geometry::Rect(GeoRect::new(
            coord! { x: r.min[0], y: r.min[1] },
            coord! { x: r.max[0], y: r.max[1] },
        ))
    };
    for i in 0..200 {
        idx.put_object(i, &geometry(i)).unwrap();
    }
    for i in 0..120 {
        idx.insert(rect(i), i).unwrap();
    }
    idx.flush().unwrap();
    drop(idx);
    let idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    let why = idx.recovery_state().crashed.expect("reported as crashed");
    assert!(
        why.contains("200 objects") && why.contains("indexes 120"),
        "{why}"
    );
    drop(idx);
    let mut idx = SpatialIndex::<2>::open(&f.dir).unwrap();
    assert_eq!(idx.drop_unindexed_objects().unwrap().len(), 80);
    idx.flush().unwrap();
    drop(idx);
    let mut idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    assert_eq!(idx.recovery_state().crashed, None);
    assert_eq!(ids(&mut idx), (0..120).collect::<Vec<_>>());
}
