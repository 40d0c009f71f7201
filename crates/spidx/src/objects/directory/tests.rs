//! The paged directory against a `BTreeMap` model (random inserts, deletes, saves and
//! reopenings), incremental saves, the format-1 state file, and damage to its files.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::*;

/// Checks `d` against `model`: length, every entry, lookups of absent ids, the full list.
fn agrees(d: &mut Directory, model: &BTreeMap<u64, Entry>) -> std::result::Result<(), String> {
    if d.len() != model.len() as u64 {
        return Err(format!("len {} != {}", d.len(), model.len()));
    }
    for (k, v) in model {
        let got = d.get(*k).map_err(|e| e.to_string())?;
        if got != Some(*v) {
            return Err(format!("id {k}: {got:?} != {v:?}"));
        }
    }
    for k in [u64::MAX, 1 << 40] {
        if !model.contains_key(&k) && d.get(k).map_err(|e| e.to_string())?.is_some() {
            return Err(format!("absent id {k} found"));
        }
    }
    let all = d.entries().map_err(|e| e.to_string())?;
    let want: Vec<(u64, Entry)> = model.iter().map(|(k, v)| (*k, *v)).collect();
    if all != want {
        return Err("entries() differ from the model".into());
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Op {
    Put(u64, u64),
    Remove(u64),
    Save,
    Reopen,
}

fn op(ids: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..ids, any::<u64>()).prop_map(|(i, v)| Op::Put(i, v)),
        4 => (0..ids).prop_map(Op::Remove),
        1 => Just(Op::Save),
        1 => Just(Op::Reopen),
    ]
}

fn bulk(ops: &[Op]) -> Vec<Op> {
    // Runs of consecutive ids so that pages fill, split and empty.
    let mut v = Vec::new();
    for o in ops {
        if let Op::Put(i, x) = o {
            for k in 0..(x % 300) {
                v.push(Op::Put(i * 97 + k, *x ^ k));
            }
        } else if let Op::Remove(i) = o {
            for k in 0..(i % 250) {
                v.push(Op::Remove(i * 97 + k));
            }
        } else {
            v.push(o.clone());
        }
    }
    v
}

fn run(ops: &[Op], path: &Path) -> std::result::Result<(), TestCaseError> {
    let mut d = Directory::new(7);
    let mut model: BTreeMap<u64, Entry> = BTreeMap::new();
    for o in ops {
        match *o {
            Op::Put(id, v) => {
                let e = (v >> 8, v as u32);
                let existed = d.get(id).unwrap().is_some();
                prop_assert_eq!(existed, model.contains_key(&id));
                d.insert(id, e, existed);
                model.insert(id, e);
            }
            Op::Remove(id) => {
                prop_assert_eq!(d.remove(id).unwrap(), model.remove(&id).is_some());
            }
            Op::Save => {
                d.save(path).unwrap();
            }
            Op::Reopen => {
                d.save(path).unwrap();
                d = Directory::load(path).unwrap();
            }
        }
    }
    agrees(&mut d, &model).map_err(TestCaseError::fail)?;
    d.save(path).unwrap();
    let mut again = Directory::load(path).unwrap();
    agrees(&mut again, &model).map_err(TestCaseError::fail)?;
    prop_assert_eq!(again.nonce, 7);
    // Saved pages hold what the table says, each page at most full.
    prop_assert!(again.table.iter().all(|r| r.count as usize <= PER_PAGE));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_operations_match_a_btreemap(ops in prop::collection::vec(op(600), 1..400)) {
        let tmp = tempfile::tempdir().unwrap();
        run(&ops, &tmp.path().join("objects.dir"))?;
    }

    #[test]
    fn runs_of_ids_fill_split_and_empty_pages(ops in prop::collection::vec(op(40), 1..40)) {
        let tmp = tempfile::tempdir().unwrap();
        run(&bulk(&ops), &tmp.path().join("objects.dir"))?;
    }
}

fn filled(n: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("objects.dir");
    let mut d = Directory::new(3);
    for id in 0..n {
        d.insert(id * 2, (id * 100, 40), false);
    }
    d.end = n * 100;
    d.save(&path).unwrap();
    (tmp, path)
}

#[test]
fn a_save_writes_only_the_pages_that_changed() {
    let (_tmp, path) = filled(10_000);
    let mut d = Directory::load(&path).unwrap();
    let pages = 10_000usize.div_ceil(PER_PAGE) as u64;
    // Opening read no page.
    assert!(d.decoded.iter().all(Option::is_none));
    assert_eq!(d.get(5000).unwrap(), Some((250_000, 40)));
    assert_eq!(d.decoded.iter().filter(|p| p.is_some()).count(), 1);
    assert_eq!(
        d.save(&path).unwrap(),
        DirSaveReport {
            pages: 0,
            total_pages: pages
        }
    );
    // Two changes in one page, one in another, one new id past the end.
    d.insert(10, (1, 20), true);
    assert!(d.remove(12).unwrap());
    d.insert(19_000, (2, 20), true);
    d.insert(1_000_001, (3, 20), false);
    let r = d.save(&path).unwrap();
    assert_eq!(r.pages, 3, "{r:?}");
    let mut d = Directory::load(&path).unwrap();
    assert_eq!(d.len(), 10_000);
    assert_eq!(d.get(10).unwrap(), Some((1, 20)));
    assert_eq!(d.get(12).unwrap(), None);
    assert_eq!(d.get(1_000_001).unwrap(), Some((3, 20)));
}

#[test]
fn a_format_1_state_file_still_opens_and_is_rewritten_paged() {
    #[derive(Serialize)]
    struct Whole1 {
        entries: HashMap<u64, Entry>,
        end: u64,
        nonce: u64,
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("objects.dir");
    let entries: HashMap<u64, Entry> = (0..1000).map(|i| (i * 3, (i * 10, 16))).collect();
    let old = Whole1 {
        entries: entries.clone(),
        end: 10_000,
        nonce: 9,
    };
    crate::device::pages::save_state(&path, KIND, &old).unwrap();
    let mut d = Directory::load(&path).unwrap();
    let model: BTreeMap<u64, Entry> = entries.into_iter().collect();
    agrees(&mut d, &model).unwrap();
    assert_eq!((d.end, d.nonce), (10_000, 9));
    d.save(&path).unwrap();
    assert_eq!(state_version(&path).unwrap(), PAGED_FORMAT);
    let mut d = Directory::load(&path).unwrap();
    agrees(&mut d, &model).unwrap();
}

/// Every damage to the pages file or the state file is a named error on open or on the
/// lookup that reads the damaged page, never a panic or a wrong entry.
#[test]
fn damage_is_a_named_error() {
    let (tmp, path) = filled(3000);
    let pages_file = tmp.path().join("objects.dir.pages-1");
    let good_pages = std::fs::read(&pages_file).unwrap();
    let good_state = std::fs::read(&path).unwrap();
    let lookup_all = |path: &Path| -> Result<()> {
        let mut d = Directory::load(path)?;
        for id in 0..3000 {
            assert_eq!(d.get(id * 2)?, Some((id * 100, 40)), "a wrong entry");
        }
        Ok(())
    };
    lookup_all(&path).unwrap();
    // A flipped byte in a page: that page's lookup fails, naming the pages file.
    for at in [32 + 5, 32 + 4096 * 3 + 100, good_pages.len() - 1] {
        let mut bad = good_pages.clone();
        bad[at] ^= 0x40;
        std::fs::write(&pages_file, &bad).unwrap();
        let e = lookup_all(&path).unwrap_err().to_string();
        assert!(
            e.contains("objects.dir.pages-1") && e.contains("checksum"),
            "{e}"
        );
    }
    // A truncated pages file: opening fails, naming it.
    std::fs::write(&pages_file, &good_pages[..good_pages.len() - 10]).unwrap();
    let e = Directory::load(&path).unwrap_err().to_string();
    assert!(
        e.contains("objects.dir.pages-1") && e.contains("truncated"),
        "{e}"
    );
    // A missing pages file.
    std::fs::remove_file(&pages_file).unwrap();
    let e = Directory::load(&path).unwrap_err().to_string();
    assert!(
        e.contains("objects.dir.pages-1") && e.contains("missing"),
        "{e}"
    );
    std::fs::write(&pages_file, &good_pages).unwrap();
    // A damaged or truncated state file.
    for cut in [5, good_state.len() / 2, good_state.len() - 1] {
        std::fs::write(&path, &good_state[..cut]).unwrap();
        let e = Directory::load(&path).unwrap_err().to_string();
        assert!(e.contains("objects.dir"), "{e}");
    }
    let mut bad = good_state.clone();
    let n = bad.len();
    bad[n - 3] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    let e = Directory::load(&path).unwrap_err().to_string();
    assert!(e.contains("objects.dir") && e.contains("checksum"), "{e}");
    std::fs::write(&path, &good_state).unwrap();
    lookup_all(&path).unwrap();
}

/// A page whose CRC matches but whose content disagrees with the table (a page image
/// written for another table) is refused by the order checks.
#[test]
fn a_page_disagreeing_with_the_table_is_refused() {
    let r = PageRef {
        first: 10,
        page: 0,
        count: 3,
    };
    let mut buf = vec![0u8; DIR_PAGE];
    encode_page(&[(10, (0, 1)), (12, (1, 1)), (11, (2, 1))], &mut buf);
    assert!(decode_page(&buf, r, None)
        .unwrap_err()
        .contains("out of order"));
    encode_page(&[(10, (0, 1)), (12, (1, 1)), (20, (2, 1))], &mut buf);
    assert!(decode_page(&buf, r, Some(20)).is_err());
    assert!(decode_page(&buf, r, Some(21)).is_ok());
    encode_page(&[(10, (0, 1)), (12, (1, 1))], &mut buf);
    assert!(decode_page(&buf, r, None)
        .unwrap_err()
        .contains("table says 3"));
}
