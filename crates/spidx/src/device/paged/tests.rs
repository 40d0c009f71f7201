//! Round trips, incremental saves, compaction, crashes between the page append and the
//! state file, and damage to every region of the format.

use std::path::{Path, PathBuf};

use super::*;
use crate::device::pages::{load_state_as, save_state_as, PAGED_FORMAT};

const PS: usize = 512;

fn image(page: u64, version: u8) -> Vec<u8> {
    (0..PS)
        .map(|i| (i as u64 ^ page.wrapping_mul(31)) as u8 ^ version)
        .collect()
}

fn persist(store: &mut PageStore, state: &Path) -> SaveReport {
    let r = store.save(state).unwrap();
    save_state_as(state, "test", PAGED_FORMAT, &*store).unwrap();
    r
}

fn open(state: &Path) -> Result<PageStore> {
    let mut s: PageStore = load_state_as(state, "test", PAGED_FORMAT)?;
    s.attach(state)?;
    Ok(s)
}

fn read(store: &mut PageStore, page: u64) -> Result<Vec<u8>> {
    let mut out = vec![0xAAu8; PS];
    store.read(page, &mut out)?;
    Ok(out)
}

fn pages_file(dir: &Path, gen: u64) -> PathBuf {
    dir.join(format!("dev.state.pages-{gen}"))
}

#[test]
fn round_trip_and_incremental_saves() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new(PS);
    let pages: Vec<u64> = (0..300).map(|i| i * 7 + (i % 3) * 100_000).collect();
    for &p in &pages {
        s.write(p, &image(p, 1));
    }
    let r = persist(&mut s, &state);
    assert!(r.new_file && r.pages == 300);
    assert_eq!(r.bytes, HEADER + 300 * PS as u64);
    assert_eq!(
        std::fs::metadata(pages_file(dir.path(), 1)).unwrap().len(),
        r.bytes
    );

    let mut t = open(&state).unwrap();
    assert_eq!(t.written_pages(), 300);
    for &p in &pages {
        assert_eq!(read(&mut t, p).unwrap(), image(p, 1), "page {p}");
    }
    assert_eq!(read(&mut t, 1).unwrap(), vec![0u8; PS], "never written");
    assert!(!t.is_written(1) && t.is_written(pages[5]));

    // Second save: only the changed and new pages are appended.
    let changed = [pages[3], pages[100], pages[299]];
    for &p in &changed {
        t.write(p, &image(p, 2));
    }
    t.write_ranges(5, &image(5, 9), &[0..10, 20..30]);
    let before = std::fs::metadata(pages_file(dir.path(), 1)).unwrap().len();
    let r = persist(&mut t, &state);
    assert_eq!((r.pages, r.bytes, r.new_file), (4, 4 * PS as u64, false));
    let after = std::fs::metadata(pages_file(dir.path(), 1)).unwrap().len();
    assert_eq!(after - before, 4 * PS as u64);
    // Nothing changed: nothing written.
    assert_eq!(persist(&mut t, &state), SaveReport::default());

    let mut u = open(&state).unwrap();
    assert_eq!(u.written_pages(), 301);
    for &p in &pages {
        let v = if changed.contains(&p) { 2 } else { 1 };
        assert_eq!(read(&mut u, p).unwrap(), image(p, v), "page {p}");
    }
    assert_eq!(read(&mut u, 5).unwrap(), image(5, 9));
    assert_eq!(u.verify_all().unwrap(), 0, "all in memory already");
    assert_eq!(open(&state).unwrap().verify_all().unwrap(), 301);
}

#[test]
fn saving_the_same_operations_gives_the_same_bytes() {
    let run = |dir: &Path| {
        let state = dir.join("dev.state");
        let mut s = PageStore::new(PS);
        for p in 0..50u64 {
            s.write(p * 3, &image(p, 1));
        }
        persist(&mut s, &state);
        for p in 0..10u64 {
            s.write(p * 5, &image(p, 2));
        }
        persist(&mut s, &state);
        (
            std::fs::read(&state).unwrap(),
            std::fs::read(pages_file(dir, 1)).unwrap(),
        )
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert_eq!(run(a.path()), run(b.path()));
}

#[test]
fn a_crash_between_page_append_and_state_file_keeps_the_previous_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new(PS);
    for p in 0..40u64 {
        s.write(p, &image(p, 1));
    }
    persist(&mut s, &state);
    let old_state = std::fs::read(&state).unwrap();
    let old_len = std::fs::metadata(pages_file(dir.path(), 1)).unwrap().len();
    // The next checkpoint appends its pages, then "loses power" before the state file.
    for p in 0..20u64 {
        s.write(p, &image(p, 2));
    }
    s.write(100, &image(100, 2));
    let r = s.save(&state).unwrap();
    assert_eq!(r.pages, 21);
    drop(s);
    assert_eq!(std::fs::read(&state).unwrap(), old_state, "state untouched");
    assert!(std::fs::metadata(pages_file(dir.path(), 1)).unwrap().len() > old_len);

    let mut t = open(&state).unwrap();
    for p in 0..40u64 {
        assert_eq!(read(&mut t, p).unwrap(), image(p, 1), "page {p}");
    }
    assert!(!t.is_written(100));
    // The next save overwrites the unreferenced tail.
    t.write(7, &image(7, 3));
    persist(&mut t, &state);
    assert_eq!(
        std::fs::metadata(pages_file(dir.path(), 1)).unwrap().len(),
        old_len + PS as u64
    );
    let mut u = open(&state).unwrap();
    assert_eq!(read(&mut u, 7).unwrap(), image(7, 3));
    assert_eq!(read(&mut u, 8).unwrap(), image(8, 1));
}

#[test]
fn compaction_writes_a_new_generation_and_removes_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let n = (COMPACT_MIN / PS as u64) / 2 + 10;
    let mut s = PageStore::new(PS);
    let mut gen_seen = vec![];
    for round in 0..4u8 {
        for p in 0..n {
            s.write(p, &image(p, round));
        }
        let r = persist(&mut s, &state);
        gen_seen.push(r.new_file);
    }
    // Round 0 creates generation 1; round 1 appends (garbage = half); round 2 compacts.
    assert_eq!(gen_seen, vec![true, false, true, false]);
    assert!(pages_file(dir.path(), 2).exists());
    // Generation 1 is deleted by the save after the one that superseded it, unless the
    // checkpoint backup names it.
    assert!(!pages_file(dir.path(), 1).exists());
    let mut t = open(&state).unwrap();
    for p in 0..n {
        assert_eq!(read(&mut t, p).unwrap(), image(p, 3));
    }
    // A checkpoint backup naming generation 2 keeps it through the next compaction.
    let mut bak = state.as_os_str().to_owned();
    bak.push(".bak");
    std::fs::hard_link(&state, PathBuf::from(&bak)).unwrap();
    for round in 4..7u8 {
        for p in 0..n {
            t.write(p, &image(p, round));
        }
        persist(&mut t, &state);
    }
    assert!(pages_file(dir.path(), 3).exists());
    assert!(pages_file(dir.path(), 2).exists(), "named by the backup");
    // The backup still opens and reads its checkpoint.
    let mut old = open(Path::new(&bak)).unwrap();
    assert_eq!(read(&mut old, 3).unwrap(), image(3, 3));
}

#[test]
fn a_copied_state_reads_and_saves_to_its_own_pages_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new(PS);
    s.write(4, &image(4, 1));
    persist(&mut s, &state);
    let copy = dir.path().join("replay.state");
    std::fs::copy(&state, &copy).unwrap();
    let mut c = open(&copy).unwrap();
    assert_eq!(read(&mut c, 4).unwrap(), image(4, 1));
    c.write(5, &image(5, 1));
    let r = persist(&mut c, &copy);
    assert!(r.new_file);
    // The next generation, under the copy's own name.
    assert!(dir.path().join("replay.state.pages-2").exists());
    // The original is untouched.
    let mut o = open(&state).unwrap();
    assert!(!o.is_written(5));
    assert_eq!(read(&mut o, 4).unwrap(), image(4, 1));
}

#[test]
fn unsaved_pages_cannot_be_serialised() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new(PS);
    s.write(1, &image(1, 1));
    let e = save_state_as(&state, "test", PAGED_FORMAT, &s).unwrap_err();
    assert!(e.to_string().contains("cannot serialise"), "{e}");
}

/// Every byte of every region damaged (bit flips), and truncations: a named error, never
/// a panic, never a wrong page.
#[test]
fn damage_to_every_region_is_refused_with_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new(PS);
    for p in 0..4u64 {
        s.write(p, &image(p, 1));
    }
    persist(&mut s, &state);
    s.write(1, &image(1, 2));
    persist(&mut s, &state);
    let expect = |p: u64| image(p, if p == 1 { 2 } else { 1 });
    let pages = pages_file(dir.path(), 1);
    let good_state = std::fs::read(&state).unwrap();
    let good_pages = std::fs::read(&pages).unwrap();

    // Opens and reads everything; Ok only if every page reads right.
    let try_all = || -> Result<()> {
        let mut t = open(&state)?;
        for p in 0..4u64 {
            assert_eq!(
                read(&mut t, p)?,
                expect(p),
                "a damaged file gave a wrong page"
            );
        }
        Ok(())
    };
    try_all().unwrap();

    // The state file: every bit position of every byte (one flip per byte).
    for i in 0..good_state.len() {
        let mut b = good_state.clone();
        b[i] ^= 1 << (i % 8);
        std::fs::write(&state, &b).unwrap();
        let e = try_all().unwrap_err().to_string();
        assert!(e.contains("device state"), "byte {i}: {e}");
    }
    for len in 0..good_state.len() {
        std::fs::write(&state, &good_state[..len]).unwrap();
        let e = try_all().unwrap_err().to_string();
        assert!(e.contains("device state"), "truncated to {len}: {e}");
    }
    std::fs::write(&state, &good_state).unwrap();

    // The pages file: header, the live page images; the superseded image of page 1 is
    // garbage nobody reads.
    let garbage = HEADER as usize + PS..HEADER as usize + 2 * PS;
    for i in 0..good_pages.len() {
        let mut b = good_pages.clone();
        b[i] ^= 1 << (i % 8);
        std::fs::write(&pages, &b).unwrap();
        match try_all() {
            Ok(()) => assert!(garbage.contains(&i), "byte {i}: damage not detected"),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("device pages file"), "byte {i}: {e}");
                if i >= HEADER as usize {
                    assert!(e.contains("fails its checksum"), "byte {i}: {e}");
                }
            }
        }
    }
    for len in [0, 5, HEADER as usize, good_pages.len() - 1] {
        std::fs::write(&pages, &good_pages[..len]).unwrap();
        let e = try_all().unwrap_err().to_string();
        assert!(
            e.contains("device pages file") && (e.contains("truncated")),
            "truncated to {len}: {e}"
        );
    }
    std::fs::remove_file(&pages).unwrap();
    let e = try_all().unwrap_err().to_string();
    assert!(e.contains("missing"), "{e}");
    std::fs::write(&pages, &good_pages).unwrap();
    try_all().unwrap();
}
