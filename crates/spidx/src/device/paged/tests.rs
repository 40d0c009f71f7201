//! Round trips, incremental saves, compaction, crashes between the page append and the
//! state file, and damage to every region of the format. The scenarios both forms of the
//! page index go through (inline in the state file, [`INLINE`]; in index pages, [`PAGED`])
//! are written once here over a [`Form`] and run on each (the paged form's own rules are in
//! `index/tests.rs`).

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::*;
use crate::device::pages::{load_state_as, save_state_as, INDEX_PAGED_FORMAT, PAGED_FORMAT};

/// A form of the page index, with the page size of its stores.
pub(super) struct Form {
    /// Page size of the stores.
    pub(super) ps: usize,
    /// The index in index pages (saved as `Indexed`, format 4), else inline (format 2).
    pub(super) indexed: bool,
}

/// The index inline in the state file (format 2).
pub(super) const INLINE: Form = Form {
    ps: 512,
    indexed: false,
};

/// The index in index pages (format 4), of small pages: many index pages.
pub(super) const PAGED: Form = Form {
    ps: 64,
    indexed: true,
};

impl Form {
    /// Version `version` of page `page`'s content.
    pub(super) fn image(&self, page: u64, version: u8) -> Vec<u8> {
        (0..self.ps)
            .map(|i| (i as u64 ^ page.wrapping_mul(31)) as u8 ^ version)
            .collect()
    }

    /// A new store of this form holding version `version` of `pages`.
    pub(super) fn store_of(&self, pages: impl IntoIterator<Item = u64>, version: u8) -> PageStore {
        let mut s = match self.indexed {
            true => PageStore::new_paged(self.ps),
            false => PageStore::new(self.ps),
        };
        for p in pages {
            s.write(p, &self.image(p, version));
        }
        s
    }

    /// A checkpoint: the pages (data and index), then the state file.
    pub(super) fn persist(&self, store: &mut PageStore, state: &Path) -> SaveReport {
        let r = store.save(state).unwrap();
        match self.indexed {
            true => save_state_as(state, "test", INDEX_PAGED_FORMAT, &Indexed(&*store)),
            false => save_state_as(state, "test", PAGED_FORMAT, &*store),
        }
        .unwrap();
        r
    }

    /// The store the checkpoint at `state` saved.
    pub(super) fn open(&self, state: &Path) -> Result<PageStore> {
        let mut s = match self.indexed {
            true => load_state_as::<Indexed<PageStore>>(state, "test", INDEX_PAGED_FORMAT)?.0,
            false => load_state_as(state, "test", PAGED_FORMAT)?,
        };
        s.attach(state)?;
        Ok(s)
    }

    /// Page `page` as `store` reads it.
    pub(super) fn read(&self, store: &mut PageStore, page: u64) -> Result<Vec<u8>> {
        let mut out = vec![0xAAu8; self.ps];
        store.read(page, &mut out)?;
        Ok(out)
    }
}

const F: Form = INLINE;
const PS: usize = F.ps;

fn pages_file(dir: &Path, gen: u64) -> PathBuf {
    dir.join(format!("dev.state.pages-{gen}"))
}

pub(super) fn len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

/// Two runs of the same writes and saves give the same files, byte for byte.
pub(super) fn the_same_operations_give_the_same_bytes(f: &Form) {
    let run = |dir: &Path| {
        let state = dir.join("dev.state");
        let mut s = f.store_of((0..900u64).map(|p| p * 3), 1);
        f.persist(&mut s, &state);
        for p in 0..10u64 {
            s.write(p * 500, &f.image(p, 2));
        }
        f.persist(&mut s, &state);
        let mut files = vec!["dev.state", "dev.state.pages-1"];
        files.extend(f.indexed.then_some("dev.state.idx-1"));
        files
            .iter()
            .map(|n| std::fs::read(dir.join(n)).unwrap())
            .collect::<Vec<_>>()
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert_eq!(run(a.path()), run(b.path()));
}
/// A checkpoint that "loses power" after writing its pages (data and index) but before the
/// state file: the store reopens at the previous checkpoint, and the next save replaces the
/// unreferenced tails. `pages` are saved first; the lost checkpoint rewrites `again` and
/// writes `new`. Returns the reports of the lost save and of the next one.
pub(super) fn a_crash_before_the_state_file_keeps_the_checkpoint(
    f: &Form,
    pages: &[u64],
    again: &[u64],
    new: u64,
) -> (SaveReport, SaveReport) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = f.store_of(pages.iter().copied(), 1);
    f.persist(&mut s, &state);
    let old_state = std::fs::read(&state).unwrap();
    let (data, idx) = (
        pages_file(dir.path(), 1),
        dir.path().join("dev.state.idx-1"),
    );
    let index_len = || if f.indexed { len(&idx) } else { 0 };
    let (old_len, old_index) = (len(&data), index_len());
    let index_bytes = |r: &SaveReport| r.index_pages * table::TABLE_PAGE as u64;
    for &p in again.iter().chain([&new]) {
        s.write(p, &f.image(p, 2));
    }
    let lost = s.save(&state).unwrap();
    assert_eq!(lost.pages, again.len() as u64 + 1);
    drop(s);
    assert_eq!(std::fs::read(&state).unwrap(), old_state, "state untouched");
    assert!(len(&data) > old_len);
    assert_eq!(index_len(), old_index + index_bytes(&lost));

    let mut t = f.open(&state).unwrap();
    assert_eq!(t.written_pages(), pages.len() as u64);
    for &p in pages {
        assert_eq!(f.read(&mut t, p).unwrap(), f.image(p, 1), "page {p}");
    }
    assert!(!t.contains(new).unwrap());
    // The next save overwrites the unreferenced tails.
    let one = again[again.len() / 2];
    t.write(one, &f.image(one, 3));
    let next = f.persist(&mut t, &state);
    assert_eq!(next.pages, 1);
    assert_eq!(len(&data), old_len + f.ps as u64);
    assert_eq!(index_len(), old_index + index_bytes(&next));
    let mut u = f.open(&state).unwrap();
    assert_eq!(f.read(&mut u, one).unwrap(), f.image(one, 3));
    assert_eq!(f.read(&mut u, again[0]).unwrap(), f.image(again[0], 1));
    assert!(!u.contains(new).unwrap());
    (lost, next)
}

/// A copy of a checkpoint's state file (pages 0 to `n` - 1) reads the same pages and saves
/// to files of its own (a new generation under its own name), leaving the original's as
/// they were. Returns the report of the copy's save.
pub(super) fn a_copied_state_saves_to_files_of_its_own(f: &Form, n: u64) -> SaveReport {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = f.store_of(0..n, 1);
    f.persist(&mut s, &state);
    let mut files = vec![pages_file(dir.path(), 1)];
    files.extend(f.indexed.then(|| dir.path().join("dev.state.idx-1")));
    let originals: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let copy = dir.path().join("replay.state");
    std::fs::copy(&state, &copy).unwrap();
    let mut c = f.open(&copy).unwrap();
    assert_eq!(f.read(&mut c, 4).unwrap(), f.image(4, 1));
    c.write(5, &f.image(5, 2));
    let r = f.persist(&mut c, &copy);
    assert!(r.new_file);
    // The next generation, under the copy's own name.
    assert!(dir.path().join("replay.state.pages-2").exists());
    assert_eq!(dir.path().join("replay.state.idx-2").exists(), f.indexed);
    // The original is untouched.
    let now: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(now == originals, "the original's files changed");
    let mut o = f.open(&state).unwrap();
    assert_eq!(o.contains(5).unwrap(), 5 < n);
    let old = if 5 < n { f.image(5, 1) } else { vec![0; f.ps] };
    assert_eq!(f.read(&mut o, 5).unwrap(), old);
    assert_eq!(f.read(&mut o, 4).unwrap(), f.image(4, 1));
    assert_eq!(
        f.read(&mut f.open(&copy).unwrap(), 5).unwrap(),
        f.image(5, 2)
    );
    r
}

/// A check of what a damaged file's error names: given the byte flipped (or the length
/// the file was cut to) and the error.
pub(super) type Check<'a> = &'a dyn Fn(usize, &str);

/// Every byte of `file` damaged (one bit flipped, every bit position over the file) and the
/// file cut to each of `cuts` bytes: `try_all` fails, and `flipped(byte, error)` and
/// `cut(length, error)` check what the error names; a flip in `unread` (superseded bytes
/// nobody reads) may go unnoticed. The file is restored.
pub(super) fn damage_is_refused(
    file: &Path,
    unread: Range<usize>,
    cuts: impl IntoIterator<Item = usize>,
    try_all: &dyn Fn() -> Result<()>,
    (flipped, cut): (Check, Check),
) {
    let good = std::fs::read(file).unwrap();
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 1 << (i % 8);
        std::fs::write(file, &b).unwrap();
        match try_all() {
            Ok(()) => assert!(unread.contains(&i), "byte {i}: damage not detected"),
            Err(e) => flipped(i, &e.to_string()),
        }
    }
    for n in cuts {
        std::fs::write(file, &good[..n]).unwrap();
        cut(n, &try_all().unwrap_err().to_string());
    }
    std::fs::write(file, &good).unwrap();
    try_all().unwrap();
}

/// Every byte of the state file damaged, and every truncation: an error naming the device
/// state.
pub(super) fn state_damage_is_refused(state: &Path, try_all: &dyn Fn() -> Result<()>) {
    let named =
        |what: &str, i: usize, e: &str| assert!(e.contains("device state"), "{what} {i}: {e}");
    let whole = len(state) as usize;
    let checks: (Check, Check) = (&|i, e| named("state byte", i, e), &|n, e| {
        named("state truncated to", n, e)
    });
    damage_is_refused(state, 0..0, 0..whole, try_all, checks);
}

#[test]
fn saving_the_same_operations_gives_the_same_bytes() {
    the_same_operations_give_the_same_bytes(&F);
}

#[test]
fn a_crash_between_page_append_and_state_file_keeps_the_previous_checkpoint() {
    let again: Vec<u64> = (0..20).collect();
    a_crash_before_the_state_file_keeps_the_checkpoint(
        &F,
        &(0..40).collect::<Vec<_>>(),
        &again,
        100,
    );
}

#[test]
fn a_copied_state_reads_and_saves_to_its_own_pages_file() {
    a_copied_state_saves_to_files_of_its_own(&F, 5);
}

#[test]
fn round_trip_and_incremental_saves() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let pages: Vec<u64> = (0..300).map(|i| i * 7 + (i % 3) * 100_000).collect();
    let mut s = F.store_of(pages.iter().copied(), 1);
    let r = F.persist(&mut s, &state);
    assert!(r.new_file && r.pages == 300);
    assert_eq!(r.bytes, HEADER + 300 * PS as u64);
    assert_eq!(len(&pages_file(dir.path(), 1)), r.bytes);

    let mut t = F.open(&state).unwrap();
    assert_eq!(t.written_pages(), 300);
    for &p in &pages {
        assert_eq!(F.read(&mut t, p).unwrap(), F.image(p, 1), "page {p}");
    }
    assert_eq!(F.read(&mut t, 1).unwrap(), vec![0u8; PS], "never written");
    assert!(!t.is_written(1) && t.is_written(pages[5]));

    // Second save: only the changed and new pages are appended.
    let changed = [pages[3], pages[100], pages[299]];
    for &p in &changed {
        t.write(p, &F.image(p, 2));
    }
    t.write_ranges(5, &F.image(5, 9), &[0..10, 20..30]);
    let before = len(&pages_file(dir.path(), 1));
    let r = F.persist(&mut t, &state);
    assert_eq!((r.pages, r.bytes, r.new_file), (4, 4 * PS as u64, false));
    let after = len(&pages_file(dir.path(), 1));
    assert_eq!(after - before, 4 * PS as u64);
    // Nothing changed: nothing written.
    assert_eq!(F.persist(&mut t, &state), SaveReport::default());

    let mut u = F.open(&state).unwrap();
    assert_eq!(u.written_pages(), 301);
    for &p in &pages {
        let v = if changed.contains(&p) { 2 } else { 1 };
        assert_eq!(F.read(&mut u, p).unwrap(), F.image(p, v), "page {p}");
    }
    assert_eq!(F.read(&mut u, 5).unwrap(), F.image(5, 9));
    assert_eq!(u.verify_all().unwrap(), 0, "all in memory already");
    assert_eq!(F.open(&state).unwrap().verify_all().unwrap(), 301);
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
            s.write(p, &F.image(p, round));
        }
        let r = F.persist(&mut s, &state);
        gen_seen.push(r.new_file);
    }
    // Round 0 creates generation 1; round 1 appends (garbage = half); round 2 compacts.
    assert_eq!(gen_seen, vec![true, false, true, false]);
    assert!(pages_file(dir.path(), 2).exists());
    // Generation 1 is deleted by the save after the one that superseded it, unless the
    // checkpoint backup names it.
    assert!(!pages_file(dir.path(), 1).exists());
    let mut t = F.open(&state).unwrap();
    for p in 0..n {
        assert_eq!(F.read(&mut t, p).unwrap(), F.image(p, 3));
    }
    // A checkpoint backup naming generation 2 keeps it through the next compaction.
    let mut bak = state.as_os_str().to_owned();
    bak.push(".bak");
    std::fs::hard_link(&state, PathBuf::from(&bak)).unwrap();
    for round in 4..7u8 {
        for p in 0..n {
            t.write(p, &F.image(p, round));
        }
        F.persist(&mut t, &state);
    }
    assert!(pages_file(dir.path(), 3).exists());
    assert!(pages_file(dir.path(), 2).exists(), "named by the backup");
    // The backup still opens and reads its checkpoint.
    let mut old = F.open(Path::new(&bak)).unwrap();
    assert_eq!(F.read(&mut old, 3).unwrap(), F.image(3, 3));
}

#[test]
fn unsaved_pages_cannot_be_serialised() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = PageStore::new(PS);
    s.write(1, &F.image(1, 1));
    let e = save_state_as(&state, "test", PAGED_FORMAT, &s).unwrap_err();
    assert!(e.to_string().contains("cannot serialise"), "{e}");
}

/// Every byte of every region damaged (bit flips), and truncations: a named error, never
/// a panic, never a wrong page.
#[test]
fn damage_to_every_region_is_refused_with_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut s = F.store_of(0..4, 1);
    F.persist(&mut s, &state);
    s.write(1, &F.image(1, 2));
    F.persist(&mut s, &state);
    let expect = |p: u64| F.image(p, if p == 1 { 2 } else { 1 });
    let pages = pages_file(dir.path(), 1);
    let good_pages = std::fs::read(&pages).unwrap();

    // Opens and reads everything; Ok only if every page reads right.
    let try_all = || -> Result<()> {
        let mut t = F.open(&state)?;
        for p in 0..4u64 {
            assert_eq!(
                F.read(&mut t, p)?,
                expect(p),
                "a damaged file gave a wrong page"
            );
        }
        Ok(())
    };
    try_all().unwrap();

    // The state file: every bit position of every byte (one flip per byte), truncations.
    state_damage_is_refused(&state, &try_all);
    // The pages file: header, the live page images; the superseded image of page 1 is
    // garbage nobody reads.
    let garbage = HEADER as usize + PS..HEADER as usize + 2 * PS;
    let flipped = |i: usize, e: &str| {
        assert!(e.contains("device pages file"), "byte {i}: {e}");
        if i >= HEADER as usize {
            assert!(e.contains("fails its checksum"), "byte {i}: {e}");
        }
    };
    let cut = |n: usize, e: &str| {
        let named = e.contains("device pages file") && e.contains("truncated");
        assert!(named, "truncated to {n}: {e}");
    };
    let cuts = [0, 5, HEADER as usize, good_pages.len() - 1];
    damage_is_refused(&pages, garbage, cuts, &try_all, (&flipped, &cut));
    std::fs::remove_file(&pages).unwrap();
    let e = try_all().unwrap_err().to_string();
    assert!(e.contains("missing"), "{e}");
    std::fs::write(&pages, &good_pages).unwrap();
    try_all().unwrap();
}
