//! The paged page index: round trips, saves that write only the changed index pages, the
//! previous (inline) format, compaction of both pages files, crashes between the pages and
//! the state file, and damage to the index pages file.

use std::path::{Path, PathBuf};

use super::super::{Indexed, PageStore, SaveReport, COMPACT_MIN, HEADER};
use super::{Saved, SavedRef, RECS};
use crate::device::pages::{load_state_as, save_state_as, INDEX_PAGED_FORMAT, PAGED_FORMAT};
use crate::Result;

const PS: usize = 64;
const IDX: u64 = super::TABLE_PAGE as u64;

fn image(page: u64, version: u8) -> Vec<u8> {
    (0..PS)
        .map(|i| (i as u64 ^ page.wrapping_mul(31)) as u8 ^ version)
        .collect()
}

/// A checkpoint: the pages (data and index), then the state file.
fn persist(store: &mut PageStore, state: &Path) -> SaveReport {
    let r = store.save(state).unwrap();
    save_state_as(state, "test", INDEX_PAGED_FORMAT, &Indexed(&*store)).unwrap();
    r
}

fn open(state: &Path) -> Result<PageStore> {
    let mut s = load_state_as::<Indexed<PageStore>>(state, "test", INDEX_PAGED_FORMAT)?.0;
    s.attach(state)?;
    Ok(s)
}

fn read(store: &mut PageStore, page: u64) -> Result<Vec<u8>> {
    let mut out = vec![0xAAu8; PS];
    store.read(page, &mut out)?;
    Ok(out)
}

fn idx_file(dir: &Path, gen: u64) -> PathBuf {
    dir.join(format!("dev.state.idx-{gen}"))
}

fn len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

/// Pages spread over many index pages: runs in some, single pages in others, a gap.
fn spread() -> Vec<u64> {
    let mut v: Vec<u64> = (0..1000).collect();
    v.extend((0..40).map(|i| 5000 + i * 97));
    v.extend([RECS * 100, RECS * 100 + 1, RECS * 1000 - 1]);
    v
}

fn index_pages_of(pages: &[u64]) -> u64 {
    let mut k: Vec<u64> = pages.iter().map(|p| p / RECS).collect();
    k.dedup();
    k.len() as u64
}

#[test]
fn round_trip_reads_every_page_and_only_the_index_pages_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let pages = spread();
    let mut s = PageStore::new_paged(PS);
    for &p in &pages {
        s.write(p, &image(p, 1));
    }
    let r = persist(&mut s, &state);
    let n = index_pages_of(&pages);
    assert!(n > 10, "{n} index pages");
    assert_eq!((r.pages, r.new_file), (pages.len() as u64, true));
    assert_eq!((r.index_pages, r.index_bytes), (n, HEADER + n * IDX));
    assert_eq!(len(&idx_file(dir.path(), 1)), r.index_bytes);
    // The state file holds the index of the index pages, not a record per data page.
    assert!(len(&state) < 40 * n + 200, "{} bytes", len(&state));

    let mut t = open(&state).unwrap();
    assert_eq!(t.loaded_index_pages(), 0, "opening reads no index page");
    assert_eq!(t.written_pages(), pages.len() as u64);
    assert_eq!(read(&mut t, 5000).unwrap(), image(5000, 1));
    assert_eq!(t.loaded_index_pages(), 1);
    assert_eq!(t.last_page().unwrap(), Some(RECS * 1000 - 1));
    assert_eq!(t.saved_pages().unwrap(), pages);
    for &p in &pages {
        assert!(t.contains(p).unwrap(), "page {p}");
        assert_eq!(read(&mut t, p).unwrap(), image(p, 1), "page {p}");
    }
    for p in [1000, 5001, RECS * 100 + 2, RECS * 1000, RECS * 100_000] {
        assert!(!t.contains(p).unwrap(), "page {p}");
        assert_eq!(read(&mut t, p).unwrap(), vec![0u8; PS], "never written");
    }
    assert_eq!(t.loaded_index_pages() as u64, n);
    assert_eq!(
        open(&state).unwrap().verify_all().unwrap(),
        pages.len() as u64
    );
}

#[test]
fn a_save_writes_only_the_changed_index_pages() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let pages = spread();
    let mut s = PageStore::new_paged(PS);
    for &p in &pages {
        s.write(p, &image(p, 1));
    }
    persist(&mut s, &state);
    let idx = idx_file(dir.path(), 1);
    let state_len = len(&state);

    // Unchanged (the same store, and a reopened one): nothing written.
    assert_eq!(persist(&mut s, &state), SaveReport::default());
    let mut t = open(&state).unwrap();
    assert_eq!(persist(&mut t, &state), SaveReport::default());
    assert_eq!(
        t.loaded_index_pages(),
        0,
        "a save of nothing reads no index page"
    );
    let before = len(&idx);

    // Three pages rewritten in two index pages, one new page in a third: three index
    // pages, of the reopened store that had read none of them.
    for p in [3, 7, RECS + 2, 2 * RECS * 1000] {
        t.write(p, &image(p, 2));
    }
    assert_eq!(t.dirty_index_pages(), 0, "marked when the pages are saved");
    let r = persist(&mut t, &state);
    assert_eq!((r.pages, r.bytes, r.new_file), (4, 4 * PS as u64, false));
    assert_eq!((r.index_pages, r.index_bytes), (3, 3 * IDX));
    assert_eq!(len(&idx) - before, 3 * IDX);
    assert_eq!(t.dirty_index_pages(), 0);
    assert!(
        len(&state) <= state_len + 40,
        "{} -> {}",
        state_len,
        len(&state)
    );

    let mut u = open(&state).unwrap();
    assert_eq!(u.written_pages(), pages.len() as u64 + 1);
    for &p in &pages {
        let v = if [3, 7, RECS + 2].contains(&p) { 2 } else { 1 };
        assert_eq!(read(&mut u, p).unwrap(), image(p, v), "page {p}");
    }
    assert_eq!(
        read(&mut u, 2 * RECS * 1000).unwrap(),
        image(2 * RECS * 1000, 2)
    );
    assert_eq!(persist(&mut u, &state), SaveReport::default());
}

#[test]
fn saving_the_same_operations_gives_the_same_bytes() {
    let run = |dir: &Path| {
        let state = dir.join("dev.state");
        let mut s = PageStore::new_paged(PS);
        for p in 0..900u64 {
            s.write(p * 3, &image(p, 1));
        }
        persist(&mut s, &state);
        for p in 0..10u64 {
            s.write(p * 500, &image(p, 2));
        }
        persist(&mut s, &state);
        ["dev.state", "dev.state.pages-1", "dev.state.idx-1"]
            .map(|f| std::fs::read(dir.join(f)).unwrap())
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert_eq!(run(a.path()), run(b.path()));
}

/// A state of the previous format (the index inline in the state file, format 2) opens,
/// reads every page, and its next save writes every index page once and the new format.
#[test]
fn an_inline_index_of_the_previous_format_opens_and_is_saved_paged() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let pages = spread();
    let mut old = PageStore::new(PS);
    for &p in &pages {
        old.write(p, &image(p, 1));
    }
    old.save(&state).unwrap();
    save_state_as(&state, "test", PAGED_FORMAT, &old).unwrap();

    let mut s: PageStore = load_state_as(&state, "test", PAGED_FORMAT).unwrap();
    s.attach(&state).unwrap();
    s.use_paged_index();
    let n = index_pages_of(&pages);
    assert_eq!(s.dirty_index_pages(), n);
    s.read(7, &mut [0; PS]).unwrap();
    s.write(7, &image(7, 2));
    let r = persist(&mut s, &state);
    assert_eq!(
        (r.pages, r.new_file),
        (1, false),
        "data appended, not rewritten"
    );
    assert_eq!((r.index_pages, r.index_bytes), (n, HEADER + n * IDX));
    let mut t = open(&state).unwrap();
    for &p in &pages {
        let v = if p == 7 { 2 } else { 1 };
        assert_eq!(read(&mut t, p).unwrap(), image(p, v), "page {p}");
    }
    assert_eq!(persist(&mut t, &state), SaveReport::default());
}

#[test]
fn a_crash_between_the_pages_and_the_state_file_keeps_the_previous_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let pages = spread();
    let mut s = PageStore::new_paged(PS);
    for &p in &pages {
        s.write(p, &image(p, 1));
    }
    persist(&mut s, &state);
    let old_state = std::fs::read(&state).unwrap();
    let idx = idx_file(dir.path(), 1);
    let old_idx = len(&idx);
    // The next checkpoint writes its data and index pages, then "loses power" before the
    // state file.
    for p in [0, 1, 500, 5000, RECS * 5000] {
        s.write(p, &image(p, 2));
    }
    let r = s.save(&state).unwrap();
    assert_eq!((r.pages, r.index_pages), (5, 4));
    drop(s);
    assert_eq!(std::fs::read(&state).unwrap(), old_state, "state untouched");
    assert_eq!(len(&idx), old_idx + 4 * IDX);

    let mut t = open(&state).unwrap();
    assert_eq!(t.written_pages(), pages.len() as u64);
    for &p in &pages {
        assert_eq!(read(&mut t, p).unwrap(), image(p, 1), "page {p}");
    }
    assert!(!t.contains(RECS * 5000).unwrap());
    // The next save replaces the unreferenced tails.
    t.write(500, &image(500, 3));
    let r = persist(&mut t, &state);
    assert_eq!((r.pages, r.index_pages), (1, 1));
    assert_eq!(len(&idx), old_idx + IDX);
    let mut u = open(&state).unwrap();
    assert_eq!(read(&mut u, 500).unwrap(), image(500, 3));
    assert_eq!(read(&mut u, 0).unwrap(), image(0, 1));
    assert!(!u.contains(RECS * 5000).unwrap());
}

/// A compaction of the pages file moves every page, so it rewrites every index page;
/// the index pages file is compacted by the same rule as a pages file; the checkpoint
/// backup keeps the generations it names, and still opens.
#[test]
fn compactions_of_both_files_keep_every_page_and_the_backup() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let n = (COMPACT_MIN / PS as u64) / 2 + 10;
    let index_pages = n.div_ceil(RECS);
    let mut version = vec![0u8; n as usize];
    let mut s = PageStore::new_paged(PS);
    let mut seen = vec![];
    for round in 0..4u8 {
        for p in 0..n {
            s.write(p, &image(p, round));
            version[p as usize] = round;
        }
        let r = persist(&mut s, &state);
        assert_eq!(r.index_pages, index_pages, "round {round}");
        seen.push(r.new_file);
    }
    // The pages file: generation 1, appended to, compacted (2), appended to.
    assert_eq!(seen, vec![true, false, true, false]);
    let mut t = open(&state).unwrap();
    for p in (0..n).step_by(97) {
        assert_eq!(read(&mut t, p).unwrap(), image(p, 3));
    }
    // One page rewritten in every index page until the index pages file is over
    // COMPACT_MIN and half superseded: its generation 2.
    let mut bak = state.as_os_str().to_owned();
    bak.push(".bak");
    let bak = PathBuf::from(bak);
    std::fs::hard_link(&state, &bak).unwrap();
    let mut round = 4u8;
    while !idx_file(dir.path(), 2).exists() {
        for p in (0..n).step_by(RECS as usize) {
            t.write(p, &image(p, round));
            version[p as usize] = round;
        }
        let r = persist(&mut t, &state);
        assert_eq!(r.index_pages, index_pages, "round {round}");
        round += 1;
        assert!(round < 40, "the index pages file was never compacted");
    }
    assert!(len(&idx_file(dir.path(), 2)) < COMPACT_MIN);
    // The save after deletes generation 1, unless the backup names it.
    t.write(1, &image(1, round));
    version[1] = round;
    assert_eq!(persist(&mut t, &state).index_pages, 1);
    assert!(idx_file(dir.path(), 1).exists(), "named by the backup");
    let mut old = open(&bak).unwrap();
    for p in (0..n).step_by(RECS as usize / 2) {
        assert_eq!(read(&mut old, p).unwrap(), image(p, 3), "backup, page {p}");
    }
    std::fs::remove_file(&bak).unwrap();
    t.write(2, &image(2, round));
    version[2] = round;
    persist(&mut t, &state);
    assert!(!idx_file(dir.path(), 1).exists());
    let mut u = open(&state).unwrap();
    for p in 0..n {
        assert_eq!(
            read(&mut u, p).unwrap(),
            image(p, version[p as usize]),
            "page {p}"
        );
    }
}

#[test]
fn a_copied_state_saves_to_index_pages_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new_paged(PS);
    for p in 0..700 {
        s.write(p, &image(p, 1));
    }
    persist(&mut s, &state);
    let copy = dir.path().join("replay.state");
    std::fs::copy(&state, &copy).unwrap();
    let mut c = open(&copy).unwrap();
    c.write(5, &image(5, 2));
    let r = persist(&mut c, &copy);
    assert!(r.new_file && r.index_pages == 3);
    assert!(dir.path().join("replay.state.idx-2").exists());
    let original = std::fs::read(idx_file(dir.path(), 1)).unwrap();
    let mut o = open(&state).unwrap();
    assert_eq!(read(&mut o, 5).unwrap(), image(5, 1));
    let mut d = open(&copy).unwrap();
    assert_eq!(read(&mut d, 5).unwrap(), image(5, 2));
    assert_eq!(std::fs::read(idx_file(dir.path(), 1)).unwrap(), original);
}

#[test]
fn unsaved_index_pages_cannot_be_serialised() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new_paged(PS);
    s.write(1, &image(1, 1));
    persist(&mut s, &state);
    s.write(2, &image(2, 1));
    let e = save_state_as(&state, "test", INDEX_PAGED_FORMAT, &Indexed(&s)).unwrap_err();
    assert!(e.to_string().contains("cannot serialise"), "{e}");
    // An inline store is not saved as a paged one, nor a paged one inline.
    let e = save_state_as(
        &state,
        "test",
        INDEX_PAGED_FORMAT,
        &Indexed(&PageStore::new(PS)),
    );
    assert!(e.is_err());
    s.save(&state).unwrap();
    assert!(save_state_as(&state, "test", PAGED_FORMAT, &s).is_err());
}

/// Every byte of the index pages file damaged (bit flips) and truncations: an error
/// naming the file and what is wrong, never a panic, never a wrong page.
#[test]
fn damage_to_the_index_pages_is_refused_with_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let pages: Vec<u64> = (0..400).chain([RECS * 7 + 3]).collect();
    let mut s = PageStore::new_paged(PS);
    for &p in &pages {
        s.write(p, &image(p, 1));
    }
    persist(&mut s, &state);
    s.write(1, &image(1, 2));
    persist(&mut s, &state);
    let expect = |p: u64| image(p, if p == 1 { 2 } else { 1 });
    let idx = idx_file(dir.path(), 1);
    let good = std::fs::read(&idx).unwrap();
    // Header, index pages 0, 1 and 7, then index page 0 again (superseded the first).
    assert_eq!(good.len() as u64, HEADER + 4 * IDX);
    let superseded = HEADER as usize..(HEADER + IDX) as usize;

    // Opens and reads every page; Ok only if every page reads right.
    let try_all = || -> Result<()> {
        let mut t = open(&state)?;
        for &p in &pages {
            assert_eq!(
                read(&mut t, p)?,
                expect(p),
                "a damaged index gave a wrong page"
            );
        }
        Ok(())
    };
    try_all().unwrap();
    // The state file (the index of the index pages): every byte, and truncations.
    let good_state = std::fs::read(&state).unwrap();
    for i in 0..good_state.len() {
        let mut b = good_state.clone();
        b[i] ^= 1 << (i % 8);
        std::fs::write(&state, &b).unwrap();
        let e = try_all().unwrap_err().to_string();
        assert!(e.contains("device state"), "state byte {i}: {e}");
    }
    for cut in 0..good_state.len() {
        std::fs::write(&state, &good_state[..cut]).unwrap();
        let e = try_all().unwrap_err().to_string();
        assert!(e.contains("device state"), "state truncated to {cut}: {e}");
    }
    std::fs::write(&state, &good_state).unwrap();
    // The index pages file: one flip per byte, every bit position over the file.
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 1 << (i % 8);
        std::fs::write(&idx, &b).unwrap();
        match try_all() {
            Ok(()) => assert!(superseded.contains(&i), "byte {i}: damage not detected"),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("dev.state.idx-1"), "byte {i}: {e}");
                if i >= HEADER as usize {
                    assert!(
                        e.contains("index page") && e.contains("checksum"),
                        "byte {i}: {e}"
                    );
                } else {
                    assert!(e.contains("header") || e.contains("magic"), "byte {i}: {e}");
                }
            }
        }
    }
    for cut in [0, 5, HEADER as usize, good.len() - 1] {
        std::fs::write(&idx, &good[..cut]).unwrap();
        let e = try_all().unwrap_err().to_string();
        assert!(
            e.contains("dev.state.idx-1") && e.contains("truncated"),
            "truncated to {cut}: {e}"
        );
    }
    std::fs::remove_file(&idx).unwrap();
    let e = try_all().unwrap_err().to_string();
    assert!(
        e.contains("dev.state.idx-1") && e.contains("missing"),
        "{e}"
    );
    std::fs::write(&idx, &good).unwrap();
    try_all().unwrap();
}

/// A state file whose checksums hold but whose index of the index pages disagrees with
/// them (record counts swapped, a count or the committed length changed): a named error.
#[test]
fn an_index_of_index_pages_that_disagrees_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new_paged(PS);
    for p in (0..RECS).chain([RECS + 1, 3 * RECS + 2, 3 * RECS + 3]) {
        s.write(p, &image(p, 1));
    }
    persist(&mut s, &state);
    let good = std::fs::read(&state).unwrap();
    let rewrite = |f: &dyn Fn(&mut Saved)| {
        let mut v: Saved = load_state_as(&state, "test", INDEX_PAGED_FORMAT).unwrap();
        f(&mut v);
        let r = SavedRef {
            file: &v.file,
            index: &v.index,
            counts: v.counts.clone(),
            page_size: v.page_size,
            generation: v.generation,
            len: v.len,
            garbage: v.garbage,
        };
        save_state_as(&state, "test", INDEX_PAGED_FORMAT, &r).unwrap();
        let e = open(&state).and_then(|mut t| {
            for p in [0, RECS + 1, 3 * RECS + 2] {
                read(&mut t, p)?;
            }
            Ok(())
        });
        std::fs::write(&state, &good).unwrap();
        e.unwrap_err().to_string()
    };
    let e = rewrite(&|v| v.counts.swap(0, 1));
    assert!(
        e.contains("index page 0 holds 341 records, the state file says 1"),
        "{e}"
    );
    let e = rewrite(&|v| v.counts[2] = 3);
    assert!(
        e.contains("do not match") || e.contains("does not account"),
        "{e}"
    );
    let e = rewrite(&|v| v.counts.push(1));
    assert!(e.contains("index pages but 4 record counts"), "{e}");
    let e = rewrite(&|v| v.len -= PS as u64);
    assert!(e.contains("device state"), "{e}");
    let e = rewrite(&|v| v.file = String::new());
    assert!(e.contains("device state") && e.contains("decode"), "{e}");
    open(&state).unwrap();
}
