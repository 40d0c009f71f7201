//! Integrity of index directories under corruption (`spidx::spatial`): every file an index
//! trusts is verified, and damage is an error naming the file, never a silently different
//! index.
//! * the manifest (`index.json`) and the store header (`store.json`) are sealed: one
//!   flipped bit or a renamed key is refused naming the file;
//! * a byte flipped in the middle of a log (FAST, eFIND, LCR-tree, RFTL) is damage, not a
//!   torn tail: opening fails naming what survives and what would be lost, and only
//!   [`SpatialIndex::open_accepting_loss`] keeps the prefix;
//! * a damaged rollback journal (a damaged entry followed by valid ones, or truncated to
//!   nothing) is refused by readers and writers alike;
//! * a crashed index says so ([`SpatialIndex::recovery_state`]) and a clean one does not.

mod index_dir;

use std::path::Path;

use index_dir::{files, ids, rect, Files};
use spidx::cache::CacheConfig;
use spidx::device::file::FileConfig;
use spidx::device::DeviceConfig;
use spidx::index::{IndexKind, RStarOptions};
use spidx::node::{LayoutKind, Occupancy};
use spidx::spatial::{IndexOptions, SpatialIndex};
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

fn store(json: &str) -> StoreConfig {
    serde_json::from_str(json).unwrap()
}

/// The logging stores, with small buffers so that flushes happen, each operation synced to
/// the log (so every acknowledged operation survives a kill).
fn logging_stores() -> Vec<(&'static str, StoreConfig)> {
    vec![
        (
            "fast",
            store(
                r#"{"kind":"fast","write_buffer":8192,"flushing_unit":2,"flush_policy":"fast-star","log_size":1048576,"log_sync":"each-op"}"#,
            ),
        ),
        (
            "efind",
            store(r#"{"kind":"efind","buffer":"16KB","log_size":"1MB","log_sync":"each-op"}"#),
        ),
        (
            "lcr",
            store(r#"{"kind":"lcr","write_buffer":8192,"log_size":1048576,"log_sync":"each-op"}"#),
        ),
        (
            "rftl",
            store(r#"{"kind":"rftl","write_buffer":8192,"log_size":1048576,"log_sync":"each-op"}"#),
        ),
    ]
}

/// Builds an index of `n` objects checkpointed after `checkpointed` of them, then "killed"
/// (dropped without a checkpoint).
fn crashed(f: &Files, store: StoreConfig, checkpointed: u64, n: u64) {
    let mut idx = SpatialIndex::<2>::create(&f.dir, options(store, &f.dev), false).unwrap();
    for i in 0..n {
        if i == checkpointed {
            idx.flush().unwrap();
        }
        idx.insert(rect(i), i).unwrap();
    }
    drop(idx);
}

/// The live region's record stream of the log in `bytes` (a device file): its byte range.
/// Found by the log's header pages (magic `SPIDXLOG`, see `spidx::store::log`).
fn live_log_stream(bytes: &[u8]) -> (usize, usize) {
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let headers: Vec<usize> = (0..bytes.len() / PAGE)
        .map(|p| p * PAGE)
        .filter(|o| &bytes[*o..*o + 8] == b"SPIDXLOG")
        .collect();
    assert!(!headers.is_empty(), "no log header in the device file");
    // The header of the highest generation is the live one.
    let live = *headers.iter().max_by_key(|o| u64_at(**o + 20)).unwrap();
    let region = u64_at(live + 12) as usize;
    let first = live - region * PAGE;
    let region_pages = u64_at(live + 32) as usize;
    let gen = u64_at(live + 20) as u32;
    let base = first + (2 + region * region_pages) * PAGE;
    let mut pos = base;
    while pos + 16 <= base + region_pages * PAGE
        && u32_at(pos + 4) == gen
        && matches!(u32_at(pos + 8), 1 | 2)
    {
        pos += 16 + u32_at(pos) as usize;
    }
    (base, pos)
}

/// A byte flipped in the middle of the log of every logging store: opening (to write or
/// to read) fails naming the damage and what survives, changing nothing; accepting the
/// loss keeps a valid prefix of the insertion order and says what was lost.
#[test]
fn a_flip_in_the_middle_of_a_log_is_damage_for_every_logging_store() {
    for (name, store) in logging_stores() {
        let f = files();
        crashed(&f, store, 50, 400);
        let mut bytes = std::fs::read(&f.dev).unwrap();
        let (start, end) = live_log_stream(&bytes);
        assert!(end - start > 4000, "{name}: a log of {} bytes", end - start);
        bytes[start + (end - start) / 3] ^= 0x10;
        std::fs::write(&f.dev, &bytes).unwrap();
        for e in [
            SpatialIndex::<2>::open_read_only(&f.dir).err().unwrap(),
            SpatialIndex::<2>::open(&f.dir).err().unwrap(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains("damaged")
                    && e.contains("not a torn tail")
                    && e.contains("--accept-loss"),
                "{name}: {e}"
            );
        }
        assert_eq!(
            std::fs::read(&f.dev).unwrap(),
            bytes,
            "{name}: a refused open wrote"
        );
        // Accepting the loss keeps the prefix; pages flushed after the damage may no longer
        // match it, so the tree is then either sound with a prefix of the insertion order,
        // or an error names the damage (`spidx recover` exits non-zero then).
        let Ok(mut idx) = SpatialIndex::<2>::open_accepting_loss(&f.dir) else {
            continue;
        };
        let loss = idx.recovery_state().accepted_loss.unwrap();
        assert!(loss.contains("would be lost"), "{name}: {loss}");
        if let Ok(rep) = idx.tree_mut().check() {
            if rep.ok() {
                let got = ids(&mut idx);
                let k = got.len() as u64;
                assert!(k < 400, "{name}: {k}");
                assert!(got.iter().copied().eq(0..k), "{name}: not a prefix");
            }
        }
    }
}

/// A killed logging index reports itself as crashed (and a checkpointed one does not);
/// after a recovery (open to write, checkpoint) it is clean.
#[test]
fn crashed_and_clean_indices_are_told_apart() {
    for (name, store) in logging_stores() {
        let f = files();
        crashed(&f, store, 50, 200);
        let idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
        let why = idx.recovery_state().crashed;
        assert!(why.is_some(), "{name}: a killed index looks clean");
        drop(idx);
        let mut idx = SpatialIndex::<2>::open(&f.dir).unwrap();
        assert_eq!(ids(&mut idx), (0..200).collect::<Vec<_>>(), "{name}");
        idx.flush().unwrap();
        drop(idx);
        let idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
        assert_eq!(idx.recovery_state().crashed, None, "{name}");
    }
}

/// One renamed key or flipped bit in `index.json` or `store.json` is refused naming the
/// file (the manifest's `"store"` read as `"storm"` made a logging index open as a direct
/// one with nothing in it).
#[test]
fn a_damaged_manifest_or_store_header_is_refused_naming_the_file() {
    let (_, lcr) = logging_stores().remove(2);
    let f = files();
    let mut idx = SpatialIndex::<2>::create(&f.dir, options(lcr, &f.dev), false).unwrap();
    for i in 0..100 {
        idx.insert(rect(i), i).unwrap();
    }
    idx.flush().unwrap();
    drop(idx);
    for file in ["index.json", "store.json"] {
        let path = f.dir.join(file);
        let clean = std::fs::read(&path).unwrap();
        let text = String::from_utf8(clean.clone()).unwrap();
        let renamed = if file == "index.json" {
            text.replacen("\"store\"", "\"storm\"", 1)
        } else {
            text.replacen("\"next_page\"", "\"next_pagf\"", 1)
        };
        assert_ne!(renamed, text);
        let mut flipped = clean.clone();
        let at = clean.iter().position(|b| b.is_ascii_digit()).unwrap();
        flipped[at] ^= 1;
        for bad in [renamed.into_bytes(), flipped] {
            std::fs::write(&path, &bad).unwrap();
            for e in [
                SpatialIndex::<2>::open_read_only(&f.dir).err().unwrap(),
                SpatialIndex::<2>::open(&f.dir).err().unwrap(),
            ] {
                let e = e.to_string();
                assert!(e.contains(file), "{file}: {e}");
                assert!(e.contains("checksum"), "{file}: {e}");
            }
        }
        std::fs::write(&path, &clean).unwrap();
    }
    let mut idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    assert_eq!(ids(&mut idx), (0..100).collect::<Vec<_>>());
    // A manifest without a checksum (written by an older spidx) asks for a rebuild.
    let path = f.dir.join("index.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("checksum");
    v["format"] = 1.into();
    drop(idx);
    std::fs::write(&path, v.to_string()).unwrap();
    let e = SpatialIndex::<2>::open_read_only(&f.dir)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("rebuild"), "{e}");
}

/// The direct store's journal: a damaged entry followed by valid ones, or a journal cut to
/// nothing, is refused by readers and writers (a reader used to roll back the valid prefix
/// in memory and answer); an intact journal rolls the index back to its checkpoint.
#[test]
fn a_damaged_rollback_journal_is_refused() {
    let make = || {
        let f = files();
        crashed(&f, StoreConfig::direct(), 300, 600);
        f
    };
    // Intact: a crashed index, recovered to its checkpoint.
    let f = make();
    let idx = SpatialIndex::<2>::open_read_only(&f.dir).unwrap();
    assert!(idx.recovery_state().crashed.is_some());
    drop(idx);
    let mut idx = SpatialIndex::<2>::open(&f.dir).unwrap();
    assert_eq!(ids(&mut idx), (0..300).collect::<Vec<_>>());
    drop(idx);

    let journal = |f: &Files| f.dir.join("direct.journal");
    let f = make();
    let bytes = std::fs::read(journal(&f)).unwrap();
    let entries = (bytes.len() - 32) / (16 + PAGE);
    assert!(entries >= 3, "{entries} journal entries");
    let mut damaged = bytes.clone();
    damaged[32 + 16 + 100] ^= 0x01;
    std::fs::write(journal(&f), &damaged).unwrap();
    for e in [
        SpatialIndex::<2>::open_read_only(&f.dir).err().unwrap(),
        SpatialIndex::<2>::open(&f.dir).err().unwrap(),
    ] {
        let e = e.to_string();
        assert!(
            e.contains("direct.journal") && e.contains("entry 1 of") && e.contains("--accept-loss"),
            "{e}"
        );
    }
    assert_eq!(
        std::fs::read(journal(&f)).unwrap(),
        damaged,
        "a refused open wrote"
    );
    let idx = SpatialIndex::<2>::open_accepting_loss(&f.dir).unwrap();
    let loss = idx.recovery_state().accepted_loss.unwrap();
    assert!(loss.contains("damaged"), "{loss}");
    drop(idx);

    let f = make();
    std::fs::write(journal(&f), b"").unwrap();
    for e in [
        SpatialIndex::<2>::open_read_only(&f.dir).err().unwrap(),
        SpatialIndex::<2>::open(&f.dir).err().unwrap(),
    ] {
        let e = e.to_string();
        assert!(
            e.contains("direct.journal") && e.contains("is empty"),
            "{e}"
        );
    }
}

/// What `spidx check --deep` concludes on the index in `dir`: `Ok(())` when it would say
/// every invariant holds, else why not (an error opening it, a crash to recover, or the
/// violations of the tree, the page accounting and the object records).
fn check_deep(dir: &Path) -> Result<(), String> {
    let mut idx = SpatialIndex::<2>::open_read_only(dir).map_err(|e| e.to_string())?;
    if let Some(why) = idx.recovery_state().crashed {
        return Err(format!("crashed: {why}"));
    }
    idx.drop_caches().map_err(|e| e.to_string())?;
    let mut rep = idx.tree_mut().check().map_err(|e| e.to_string())?;
    rep.violations.extend(idx.check_pages(&rep));
    if let Some(o) = idx
        .check_objects(spidx::spatial::CheckDepth::Deep, rep.ok())
        .map_err(|e| e.to_string())?
    {
        rep.violations.extend(o.violations);
    }
    match rep.violations.is_empty() {
        true => Ok(()),
        false => Err(rep.violations.join("; ")),
    }
}

/// Every metadata field of `store.json`, corrupted with its checksum recomputed, makes the
/// complete check (`spidx check --deep`) fail, for every store: the tree's root, height and
/// object count, the allocation (next page, free list), the store's kind, the log's
/// generation and operation count, and the LCR-tree's and RFTL's own tables. A clean index
/// passes it.
#[test]
fn check_deep_fails_on_every_corrupted_store_header_field() {
    use serde_json::{json, Value};
    let mut stores = vec![("direct", StoreConfig::direct())];
    stores.extend(logging_stores());
    for (name, store) in stores {
        let f = files();
        let mut idx = SpatialIndex::<2>::create(&f.dir, options(store, &f.dev), false).unwrap();
        for i in 0..400 {
            idx.insert(rect(i), i).unwrap();
        }
        for i in (0..400).step_by(3) {
            assert!(idx.delete(&rect(i), i).unwrap());
        }
        idx.flush().unwrap();
        drop(idx);
        check_deep(&f.dir).unwrap_or_else(|e| panic!("{name}: a clean index fails: {e}"));
        let path = f.dir.join("store.json");
        let clean = std::fs::read(&path).unwrap();
        let v: Value = serde_json::from_slice(&clean).unwrap();
        let u = |p: &str| v.pointer(p).and_then(Value::as_u64);
        let (root, height, objects) = (
            u("/meta/root").unwrap(),
            u("/meta/height").unwrap(),
            u("/meta/objects").unwrap(),
        );
        let next = u("/next_page").unwrap();
        let free: Vec<u64> = v["free"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert!(!free.is_empty(), "{name}: the deletes freed pages");
        let other_kind = if name == "direct" { "fast" } else { "direct" };
        let mut edits: Vec<(String, Value)> = vec![
            ("/meta/root".into(), json!(root + 1)),
            ("/meta/root".into(), json!(free[0])),
            ("/meta/height".into(), json!(height + 1)),
            ("/meta/height".into(), json!(height - 1)),
            ("/meta/height".into(), json!(1u64 << 31)),
            ("/meta/objects".into(), json!(objects + 1)),
            ("/meta/objects".into(), json!(objects - 1)),
            ("/next_page".into(), json!(next + 1)),
            ("/next_page".into(), json!(next - 1)),
            ("/next_page".into(), json!(next + 1_000_000_000)),
            ("/free".into(), json!(free[1..])),
            ("/free".into(), json!([free.clone(), vec![root]].concat())),
            (
                "/free".into(),
                json!([free.clone(), vec![free[0]]].concat()),
            ),
            ("/kind".into(), json!(other_kind)),
        ];
        if let Some(g) = u("/log_generation") {
            edits.push(("/log_generation".into(), json!(g + 1)));
            edits.push(("/log_generation".into(), json!(g.saturating_sub(1))));
        }
        if let Some(n) = u("/log_operations") {
            edits.push(("/log_operations".into(), json!(n + 1)));
        }
        // The direct store's checkpoint: the journal's or the next (a crash mid-seal) are
        // states the store leaves; behind it or two ahead are not (see `store::direct`).
        if let Some(c) = u("/checkpoint") {
            edits.push(("/checkpoint".into(), json!(c + 2)));
            edits.push(("/checkpoint".into(), json!(c + 1_000)));
            if c > 0 {
                edits.push(("/checkpoint".into(), json!(c - 1)));
            }
        }
        if v.pointer("/policy_state").is_some() {
            edits.push(("/policy_state".into(), Value::Null));
        }
        for (field, value) in edits {
            let mut bad = v.clone();
            *bad.pointer_mut(&field).unwrap() = value.clone();
            std::fs::write(&path, bad.to_string()).unwrap();
            spidx::store::header::reseal_file(&path).unwrap();
            let got = check_deep(&f.dir);
            assert!(
                got.is_err(),
                "{name}: store.json {field} = {value} passes check --deep"
            );
        }
        std::fs::write(&path, &clean).unwrap();
        check_deep(&f.dir).unwrap();
        if name == "direct" {
            let c = u("/checkpoint").expect("a journaled direct store numbers its checkpoints");
            assert!(c > 0, "the flush sealed a checkpoint");
        }
    }
}

/// A direct store's header naming a checkpoint the journal cannot follow from is refused
/// by readers and writers (naming both files), and opened, rolling nothing back, with
/// `--accept-loss`; the legitimate "one ahead" (a crash between saving the header and
/// restarting the journal) opens.
#[test]
fn a_direct_store_checkpoint_the_journal_cannot_follow_from_is_refused() {
    use serde_json::{json, Value};
    // A crashed index (its journal holds images) whose header names checkpoint `c + delta`.
    let make = |delta: i64| {
        let f = files();
        crashed(&f, StoreConfig::direct(), 300, 600);
        let path = f.dir.join("store.json");
        let mut v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let c = v["checkpoint"].as_u64().unwrap();
        assert!(c > 0, "the flush sealed a checkpoint");
        let n = c.checked_add_signed(delta).unwrap();
        v["checkpoint"] = json!(n);
        std::fs::write(&path, v.to_string()).unwrap();
        spidx::store::header::reseal_file(&path).unwrap();
        (f, n)
    };
    for delta in [2, -1, 1000] {
        let (f, n) = make(delta);
        for e in [
            SpatialIndex::<2>::open_read_only(&f.dir).err().unwrap(),
            SpatialIndex::<2>::open(&f.dir).err().unwrap(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains("store.json")
                    && e.contains("direct.journal")
                    && e.contains(&format!("checkpoint {n}"))
                    && e.contains("--accept-loss"),
                "{e}"
            );
        }
        let idx = SpatialIndex::<2>::open_accepting_loss(&f.dir).unwrap();
        let loss = idx.recovery_state().accepted_loss.unwrap();
        assert!(
            loss.contains("the header or the journal was changed"),
            "{loss}"
        );
    }
    // One ahead: the state a crash between saving the header and restarting the journal
    // leaves, not refused for its number.
    let (f, _) = make(1);
    if let Err(e) = SpatialIndex::<2>::open_read_only(&f.dir) {
        assert!(
            !e.to_string()
                .contains("the header or the journal was changed"),
            "{e}"
        );
    }
}
