//! The paged page index: round trips, saves that write only the changed index pages, the
//! previous (inline) format, compaction of both pages files, crashes between the pages and
//! the state file, and damage to the index pages file. The scenarios the inline form goes
//! through too are written once, in `paged/tests.rs`, and run here on the paged form.

use std::path::{Path, PathBuf};

use super::super::tests::{self as both, len, Form, PAGED};
use super::super::{Indexed, PageStore, SaveReport, COMPACT_MIN, HEADER};
use super::{Saved, SavedRef, RECS};
use crate::device::pages::{load_state_as, save_state_as, INDEX_PAGED_FORMAT, PAGED_FORMAT};
use crate::Result;

const F: Form = PAGED;
const PS: usize = F.ps;
const IDX: u64 = super::TABLE_PAGE as u64;

fn idx_file(dir: &Path, gen: u64) -> PathBuf {
    dir.join(format!("dev.state.idx-{gen}"))
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
    let mut s = F.store_of(pages.iter().copied(), 1);
    let r = F.persist(&mut s, &state);
    let n = index_pages_of(&pages);
    assert!(n > 10, "{n} index pages");
    assert_eq!((r.pages, r.new_file), (pages.len() as u64, true));
    assert_eq!((r.index_pages, r.index_bytes), (n, HEADER + n * IDX));
    assert_eq!(len(&idx_file(dir.path(), 1)), r.index_bytes);
    // The state file holds the index of the index pages, not a record per data page.
    assert!(len(&state) < 40 * n + 200, "{} bytes", len(&state));

    let mut t = F.open(&state).unwrap();
    assert_eq!(t.loaded_index_pages(), 0, "opening reads no index page");
    assert_eq!(t.written_pages(), pages.len() as u64);
    assert_eq!(F.read(&mut t, 5000).unwrap(), F.image(5000, 1));
    assert_eq!(t.loaded_index_pages(), 1);
    assert_eq!(t.last_page().unwrap(), Some(RECS * 1000 - 1));
    assert_eq!(t.saved_pages().unwrap(), pages);
    for &p in &pages {
        assert!(t.contains(p).unwrap(), "page {p}");
        assert_eq!(F.read(&mut t, p).unwrap(), F.image(p, 1), "page {p}");
    }
    for p in [1000, 5001, RECS * 100 + 2, RECS * 1000, RECS * 100_000] {
        assert!(!t.contains(p).unwrap(), "page {p}");
        assert_eq!(F.read(&mut t, p).unwrap(), vec![0u8; PS], "never written");
    }
    assert_eq!(t.loaded_index_pages() as u64, n);
    assert_eq!(
        F.open(&state).unwrap().verify_all().unwrap(),
        pages.len() as u64
    );
}

#[test]
fn a_save_writes_only_the_changed_index_pages() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let pages = spread();
    let mut s = F.store_of(pages.iter().copied(), 1);
    F.persist(&mut s, &state);
    let idx = idx_file(dir.path(), 1);
    let state_len = len(&state);

    // Unchanged (the same store, and a reopened one): nothing written.
    assert_eq!(F.persist(&mut s, &state), SaveReport::default());
    let mut t = F.open(&state).unwrap();
    assert_eq!(F.persist(&mut t, &state), SaveReport::default());
    assert_eq!(
        t.loaded_index_pages(),
        0,
        "a save of nothing reads no index page"
    );
    let before = len(&idx);

    // Three pages rewritten in two index pages, one new page in a third: three index
    // pages, of the reopened store that had read none of them.
    for p in [3, 7, RECS + 2, 2 * RECS * 1000] {
        t.write(p, &F.image(p, 2));
    }
    assert_eq!(t.dirty_index_pages(), 0, "marked when the pages are saved");
    let r = F.persist(&mut t, &state);
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

    let mut u = F.open(&state).unwrap();
    assert_eq!(u.written_pages(), pages.len() as u64 + 1);
    for &p in &pages {
        let v = if [3, 7, RECS + 2].contains(&p) { 2 } else { 1 };
        assert_eq!(F.read(&mut u, p).unwrap(), F.image(p, v), "page {p}");
    }
    assert_eq!(
        F.read(&mut u, 2 * RECS * 1000).unwrap(),
        F.image(2 * RECS * 1000, 2)
    );
    assert_eq!(F.persist(&mut u, &state), SaveReport::default());
}

#[test]
fn saving_the_same_operations_gives_the_same_bytes() {
    both::the_same_operations_give_the_same_bytes(&F);
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
        old.write(p, &F.image(p, 1));
    }
    old.save(&state).unwrap();
    save_state_as(&state, "test", PAGED_FORMAT, &old).unwrap();

    let mut s: PageStore = load_state_as(&state, "test", PAGED_FORMAT).unwrap();
    s.attach(&state).unwrap();
    s.use_paged_index();
    let n = index_pages_of(&pages);
    assert_eq!(s.dirty_index_pages(), n);
    s.read(7, &mut [0; PS]).unwrap();
    s.write(7, &F.image(7, 2));
    let r = F.persist(&mut s, &state);
    assert_eq!(
        (r.pages, r.new_file),
        (1, false),
        "data appended, not rewritten"
    );
    assert_eq!((r.index_pages, r.index_bytes), (n, HEADER + n * IDX));
    let mut t = F.open(&state).unwrap();
    for &p in &pages {
        let v = if p == 7 { 2 } else { 1 };
        assert_eq!(F.read(&mut t, p).unwrap(), F.image(p, v), "page {p}");
    }
    assert_eq!(F.persist(&mut t, &state), SaveReport::default());
}

#[test]
fn a_crash_between_the_pages_and_the_state_file_keeps_the_previous_checkpoint() {
    let (again, new) = ([0, 1, 500, 5000], RECS * 5000);
    let crash = both::a_crash_before_the_state_file_keeps_the_checkpoint;
    let (lost, next) = crash(&F, &spread(), &again, new);
    // The lost save wrote the index pages of pages 0-500, 5000 and the new page; the next
    // save the one of page 500.
    assert_eq!((lost.pages, lost.index_pages), (5, 4));
    assert_eq!(
        (next.pages, next.index_pages, next.index_bytes),
        (1, 1, IDX)
    );
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
            s.write(p, &F.image(p, round));
            version[p as usize] = round;
        }
        let r = F.persist(&mut s, &state);
        assert_eq!(r.index_pages, index_pages, "round {round}");
        seen.push(r.new_file);
    }
    // The pages file: generation 1, appended to, compacted (2), appended to.
    assert_eq!(seen, vec![true, false, true, false]);
    let mut t = F.open(&state).unwrap();
    for p in (0..n).step_by(97) {
        assert_eq!(F.read(&mut t, p).unwrap(), F.image(p, 3));
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
            t.write(p, &F.image(p, round));
            version[p as usize] = round;
        }
        let r = F.persist(&mut t, &state);
        assert_eq!(r.index_pages, index_pages, "round {round}");
        round += 1;
        assert!(round < 40, "the index pages file was never compacted");
    }
    assert!(len(&idx_file(dir.path(), 2)) < COMPACT_MIN);
    // The save after deletes generation 1, unless the backup names it.
    t.write(1, &F.image(1, round));
    version[1] = round;
    assert_eq!(F.persist(&mut t, &state).index_pages, 1);
    assert!(idx_file(dir.path(), 1).exists(), "named by the backup");
    let mut old = F.open(&bak).unwrap();
    for p in (0..n).step_by(RECS as usize / 2) {
        assert_eq!(
            F.read(&mut old, p).unwrap(),
            F.image(p, 3),
            "backup, page {p}"
        );
    }
    std::fs::remove_file(&bak).unwrap();
    t.write(2, &F.image(2, round));
    version[2] = round;
    F.persist(&mut t, &state);
    assert!(!idx_file(dir.path(), 1).exists());
    let mut u = F.open(&state).unwrap();
    for p in 0..n {
        assert_eq!(
            F.read(&mut u, p).unwrap(),
            F.image(p, version[p as usize]),
            "page {p}"
        );
    }
}

#[test]
fn a_copied_state_saves_to_index_pages_of_its_own() {
    let r = both::a_copied_state_saves_to_files_of_its_own(&F, 700);
    assert_eq!(r.index_pages, 3);
}

#[test]
fn unsaved_index_pages_cannot_be_serialised() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = F.store_of([1], 1);
    F.persist(&mut s, &state);
    s.write(2, &F.image(2, 1));
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
    let mut s = F.store_of(pages.iter().copied(), 1);
    F.persist(&mut s, &state);
    s.write(1, &F.image(1, 2));
    F.persist(&mut s, &state);
    let expect = |p: u64| F.image(p, if p == 1 { 2 } else { 1 });
    let idx = idx_file(dir.path(), 1);
    let good = std::fs::read(&idx).unwrap();
    // Header, index pages 0, 1 and 7, then index page 0 again (superseded the first).
    assert_eq!(good.len() as u64, HEADER + 4 * IDX);
    let superseded = HEADER as usize..(HEADER + IDX) as usize;

    // Opens and reads every page; Ok only if every page reads right.
    let try_all = || -> Result<()> {
        let mut t = F.open(&state)?;
        for &p in &pages {
            assert_eq!(
                F.read(&mut t, p)?,
                expect(p),
                "a damaged index gave a wrong page"
            );
        }
        Ok(())
    };
    try_all().unwrap();
    // The state file (the index of the index pages): every byte, and truncations.
    both::state_damage_is_refused(&state, &try_all);
    // The index pages file: one flip per byte, every bit position over the file.
    let flipped = |i: usize, e: &str| {
        assert!(e.contains("dev.state.idx-1"), "byte {i}: {e}");
        if i >= HEADER as usize {
            let named = e.contains("index page") && e.contains("checksum");
            assert!(named, "byte {i}: {e}");
        } else {
            assert!(e.contains("header") || e.contains("magic"), "byte {i}: {e}");
        }
    };
    let cut = |n: usize, e: &str| {
        let named = e.contains("dev.state.idx-1") && e.contains("truncated");
        assert!(named, "truncated to {n}: {e}");
    };
    let cuts = [0, 5, HEADER as usize, good.len() - 1];
    both::damage_is_refused(&idx, superseded, cuts, &try_all, (&flipped, &cut));
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
    let mut s = F.store_of((0..RECS).chain([RECS + 1, 3 * RECS + 2, 3 * RECS + 3]), 1);
    F.persist(&mut s, &state);
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
        let e = F.open(&state).and_then(|mut t| {
            for p in [0, RECS + 1, 3 * RECS + 2] {
                F.read(&mut t, p)?;
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
    F.open(&state).unwrap();
}
