//! The paged tables against the whole ones: round trips through saves and loads under
//! random workloads, incremental saves, crashes between the table pages and the state
//! file, the previous format, and damage to the tables' pages file.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::device::flash::ftl::FtlParams;
use crate::device::paged::Indexed;
use crate::device::pages::{load_state_as, save_state_as, INDEX_PAGED_FORMAT};

const FPS: usize = 512;

fn params(logical_pages: u64, erase_limit: u32) -> FtlParams {
    FtlParams {
        flash_page_size: FPS,
        pages_per_block: 4,
        dies: 2,
        logical_bytes: logical_pages * FPS as u64,
        overprovisioning: 0.25,
        gc_reserved_blocks: 1,
        wear_level_threshold: 3,
        erase_limit,
    }
}

fn image(lpn: u64, version: u64) -> Vec<u8> {
    (0..FPS)
        .map(|i| (i as u64 ^ lpn.wrapping_mul(131) ^ version.wrapping_mul(7)) as u8)
        .collect()
}

/// Everything but the data, in the previous (whole) format: equal bytes, equal FTLs.
fn whole_bytes(f: &Ftl) -> Vec<u8> {
    postcard::to_stdvec(&f.to_whole()).unwrap()
}

/// Saves like a device: data, table pages, then the state file. Returns the table report.
fn save(f: &mut Ftl, state: &Path) -> SaveReport {
    f.pages_mut().save(state).unwrap();
    let r = f.save_tables(state).unwrap();
    save_header(f, state);
    r
}

fn save_header(f: &Ftl, state: &Path) {
    save_state_as(
        state,
        "test",
        INDEX_PAGED_FORMAT,
        &(Indexed(f.pages()), f.tables_store(), f.header()),
    )
    .unwrap();
}

fn load(state: &Path, geo: &FtlGeometry) -> Result<Ftl> {
    let (data, tables, h): (Indexed<PageStore>, PageStore, FtlHeader) =
        load_state_as(state, "test", INDEX_PAGED_FORMAT)?;
    let mut f = Ftl::from_header(state, geo, h, data.0, tables)?;
    f.check_loaded()?;
    Ok(f)
}

fn write(f: &mut Ftl, lpn: u64, version: u64) -> Result<()> {
    let mut ops = Vec::new();
    f.write(lpn * FPS as u64, &image(lpn, version), &mut ops)
}

fn read(f: &mut Ftl, lpn: u64) -> Vec<u8> {
    let mut out = vec![0u8; FPS];
    f.read(lpn * FPS as u64, &mut out, &mut Vec::new()).unwrap();
    out
}

fn tables_file(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("dev.state.ftl-{generation}"))
}

#[derive(Debug, Clone)]
enum Step {
    Write(u64),
    Save,
}

fn steps(logical: u64) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            12 => (0..logical).prop_map(Step::Write),
            1 => Just(Step::Save),
        ],
        1..400,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A reference FTL that is never saved and one saved and reloaded at random points
    /// run the same writes (garbage collection, wear levelling, retired blocks included):
    /// after every reload both agree on every table (compared in the whole format) and on
    /// every page's bytes, and every save wrote exactly the pages marked changed.
    #[test]
    fn paged_tables_round_trip(steps in steps(40), limit in prop_oneof![Just(0u32), Just(12u32)]) {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("dev.state");
        let p = params(40, limit);
        let mut reference = Ftl::new(&p).unwrap();
        let mut saved = Ftl::new(&p).unwrap();
        let geo = reference.geometry().clone();
        for (version, step) in steps.iter().enumerate() {
            match *step {
                Step::Write(lpn) => {
                    let a = write(&mut reference, lpn, version as u64);
                    let b = write(&mut saved, lpn, version as u64);
                    prop_assert_eq!(a.is_ok(), b.is_ok());
                }
                Step::Save => {
                    let dirty = saved.dirty_table_pages();
                    let before = saved.tables_store().written_pages();
                    let r = save(&mut saved, &state);
                    prop_assert!(r.new_file || r.pages <= dirty);
                    prop_assert_eq!(saved.dirty_table_pages(), 0);
                    prop_assert!(saved.tables_store().written_pages() >= before);
                    saved = load(&state, &geo).unwrap();
                    prop_assert_eq!(whole_bytes(&saved), whole_bytes(&reference));
                    for lpn in 0..40 {
                        prop_assert_eq!(read(&mut saved, lpn), read(&mut reference, lpn));
                    }
                }
            }
        }
        reference.check_invariants().unwrap();
        save(&mut saved, &state);
        let loaded = load(&state, &geo).unwrap();
        prop_assert_eq!(whole_bytes(&loaded), whole_bytes(&reference));
    }
}

#[test]
fn incremental_saves_write_only_changed_pages() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut f = Ftl::new(&params(4096, 0)).unwrap();
    let geo = f.geometry().clone();
    for lpn in 0..3000 {
        write(&mut f, lpn, 1).unwrap();
    }
    let first = save(&mut f, &state);
    assert!(first.new_file);
    assert_eq!(first.bytes, 32 + first.pages * TABLE_PAGE as u64);
    let len = std::fs::metadata(tables_file(dir.path(), 1)).unwrap().len();
    assert_eq!(len, first.bytes);

    // Unchanged: nothing written, the pages file keeps its length.
    let r = save(&mut f, &state);
    assert_eq!((r.pages, r.bytes, r.new_file), (0, 0, false));
    assert_eq!(
        std::fs::metadata(tables_file(dir.path(), 1)).unwrap().len(),
        len
    );

    // One rewrite dirties at most the pages of its tables' entries (new and old p2l,
    // valid counts and bucket positions of two blocks, the l2p entry).
    let mut f = load(&state, &geo).unwrap();
    write(&mut f, 5, 2).unwrap();
    let dirty = f.dirty_table_pages();
    assert!((2..=8).contains(&dirty), "{dirty} dirty table pages");
    let r = save(&mut f, &state);
    assert_eq!(r.pages, dirty);
    assert_eq!(r.bytes, dirty * TABLE_PAGE as u64);
    assert_eq!(
        std::fs::metadata(tables_file(dir.path(), 1)).unwrap().len(),
        len + r.bytes
    );
    let mut g = load(&state, &geo).unwrap();
    assert_eq!(whole_bytes(&g), whole_bytes(&f));
    assert_eq!(read(&mut g, 5), image(5, 2));
    assert_eq!(read(&mut g, 6), image(6, 1));
}

#[test]
fn a_crash_between_the_table_pages_and_the_state_file_keeps_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut f = Ftl::new(&params(256, 0)).unwrap();
    let geo = f.geometry().clone();
    for lpn in 0..200 {
        write(&mut f, lpn, 1).unwrap();
    }
    save(&mut f, &state);
    let checkpoint = whole_bytes(&f);
    // More writes (with garbage collection), their pages and table pages saved, then
    // the "crash": the state file is not replaced.
    for i in 0..600 {
        write(&mut f, (i * 7) % 256, 2).unwrap();
    }
    f.pages_mut().save(&state).unwrap();
    let r = f.save_tables(&state).unwrap();
    assert!(r.pages > 0 && !r.new_file);
    drop(f);
    let mut g = load(&state, &geo).unwrap();
    assert_eq!(whole_bytes(&g), checkpoint);
    for lpn in 0..256 {
        let want = if lpn < 200 {
            image(lpn, 1)
        } else {
            vec![0; FPS]
        };
        assert_eq!(read(&mut g, lpn), want, "page {lpn}");
    }
    // The next save of the recovered state overwrites the unreferenced tail.
    write(&mut g, 3, 3).unwrap();
    save(&mut g, &state);
    let mut h = load(&state, &geo).unwrap();
    assert_eq!(whole_bytes(&h), whole_bytes(&g));
    assert_eq!(read(&mut h, 3), image(3, 3));
}

#[test]
fn the_whole_format_loads_and_saves_paged() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut f = Ftl::new(&params(256, 0)).unwrap();
    let geo = f.geometry().clone();
    for i in 0..700 {
        write(&mut f, (i * 13) % 256, i).unwrap();
    }
    // The data as the previous formats saved it: an inline page index.
    let mut inline = PageStore::new(FPS);
    for lpn in 0..256 {
        if f.pages().is_written(lpn) {
            inline.write(lpn, &read(&mut f, lpn));
        }
    }
    inline.save(&state).unwrap();
    let whole = f.to_whole();
    let expect = whole_bytes(&f);
    let data: PageStore = postcard::from_bytes(&postcard::to_stdvec(&inline).unwrap()).unwrap();
    let mut g = Ftl::from_whole(&state, &geo, whole, data).unwrap();
    assert_eq!(whole_bytes(&g), expect);
    assert!(g.dirty_table_pages() > 0);
    save(&mut g, &state);
    let mut h = load(&state, &geo).unwrap();
    assert_eq!(whole_bytes(&h), expect);
    for lpn in 0..256 {
        assert_eq!(read(&mut h, lpn), read(&mut f, lpn));
    }
}

#[test]
fn damaged_tables_files_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("dev.state");
    let mut f = Ftl::new(&params(256, 0)).unwrap();
    let geo = f.geometry().clone();
    for lpn in 0..256 {
        write(&mut f, lpn, 1).unwrap();
    }
    save(&mut f, &state);
    let file = tables_file(dir.path(), 1);
    let good = std::fs::read(&file).unwrap();
    let err = |bytes: Option<&[u8]>| {
        match bytes {
            Some(b) => std::fs::write(&file, b).unwrap(),
            None => std::fs::remove_file(&file).unwrap(),
        }
        let e = load(&state, &geo).unwrap_err().to_string();
        assert!(e.contains("dev.state.ftl-1"), "{e}");
        e
    };
    assert!(err(Some(&good[..good.len() - 1])).contains("truncated"));
    let mut flipped = good.clone();
    let n = flipped.len();
    flipped[n - 100] ^= 1;
    assert!(err(Some(&flipped)).contains("checksum"));
    let mut header = good.clone();
    header[17] ^= 1;
    assert!(err(Some(&header)).contains("header"));
    assert!(err(Some(b"SPIDX")).contains("truncated"));
    assert!(err(None).contains("missing"));
    std::fs::write(&file, &good).unwrap();
    load(&state, &geo).unwrap();
}
