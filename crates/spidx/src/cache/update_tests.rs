//! [`PageCache::update`] against what it stands for: a read of the page, a copy, the edit
//! and a write. Both paths run side by side over their own memory devices under every
//! policy and write policy; after each step the cache counters, the device counters, the
//! device's pages and the cached pages must be the same.

use std::ops::Range;
use std::sync::Arc;

use proptest::prelude::*;

use super::{CacheConfig, PageCache};
use crate::device::memory::{MemoryConfig, MemoryDevice};
use crate::{Error, Result};

const PAGE: usize = 512;
const PAGES: u64 = 24;

fn cache(config: &str) -> PageCache {
    let dev = MemoryDevice::open(&MemoryConfig::default(), PAGE, None).unwrap();
    PageCache::new(Box::new(dev), &config.parse::<CacheConfig>().unwrap()).unwrap()
}

/// One step: write a whole page, or edit `len` bytes at `at` of a page to `byte`.
#[derive(Debug, Clone)]
enum Step {
    Write {
        page: u64,
        byte: u8,
    },
    Edit {
        page: u64,
        at: usize,
        len: usize,
        byte: u8,
    },
    Read {
        page: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..PAGES, any::<u8>()).prop_map(|(page, byte)| Step::Write { page, byte }),
        (0..PAGES, 0..PAGE, 0..64usize, any::<u8>()).prop_map(|(page, at, len, byte)| {
            Step::Edit {
                page,
                at,
                len: len.min(PAGE - at),
                byte,
            }
        }),
        (0..PAGES).prop_map(|page| Step::Read { page }),
    ]
}

fn edit(buf: &mut [u8], at: usize, len: usize, byte: u8) -> Result<[Range<usize>; 2]> {
    buf[at..at + len].fill(byte);
    Ok([at..at + len, 0..0])
}

fn level(page: u64) -> u32 {
    (page % 3) as u32
}

/// The same state in both caches: counters, device counters and pages, cached pages.
fn assert_same(a: &mut PageCache, b: &mut PageCache) {
    assert_eq!(a.stats(), b.stats());
    assert_eq!(a.device().stats(), b.device().stats());
    for p in 0..PAGES {
        assert_eq!(a.is_cached(p), b.is_cached(p), "page {p} resident");
        assert_eq!(a.is_dirty(p), b.is_dirty(p), "page {p} dirty");
        let (mut x, mut y) = (vec![0u8; PAGE], vec![0u8; PAGE]);
        a.device_mut().read(p, &mut x).unwrap();
        b.device_mut().read(p, &mut y).unwrap();
        assert_eq!(x, y, "page {p} on the device");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn update_has_the_effects_of_a_read_and_a_write(
        config in prop::sample::select(vec![
            "none", "lru:4KB", "hlru:4KB", "s2q:4KB", "2q:4KB",
            "lru:4KB:write-back", "2q:4KB:write-back", "lru:64KB",
        ]),
        steps in prop::collection::vec(step(), 1..120),
    ) {
        let (mut a, mut b) = (cache(config), cache(config));
        for s in steps {
            match s {
                Step::Write { page, byte } => {
                    let data = vec![byte; PAGE];
                    a.write(page, &data, level(page)).unwrap();
                    b.write(page, &data, level(page)).unwrap();
                }
                Step::Read { page } => {
                    let x = a.read(page, level(page)).unwrap();
                    let y = b.read(page, level(page)).unwrap();
                    prop_assert_eq!(&x[..], &y[..]);
                }
                Step::Edit { page, at, len, byte } => {
                    a.update(page, level(page), |_| Ok(()), |buf| edit(buf, at, len, byte))
                        .unwrap();
                    let mut copy = b.read_checked_ref(page, level(page), |_| Ok(())).unwrap().to_vec();
                    edit(&mut copy, at, len, byte).unwrap();
                    b.write(page, &copy, level(page)).unwrap();
                }
            }
            assert_same(&mut a, &mut b);
        }
        // What the write-back caches still hold reaches the devices alike.
        a.sync().unwrap();
        b.sync().unwrap();
        assert_same(&mut a, &mut b);
    }
}

#[test]
fn a_failed_edit_writes_nothing_and_a_shared_page_is_copied_first() {
    for config in ["lru:4KB", "lru:4KB:write-back", "none"] {
        let mut c = cache(config);
        c.write(3, &[7u8; PAGE], 0).unwrap();
        let held: Arc<[u8]> = c.read(3, 0).unwrap();
        let before = (c.stats(), c.device().stats());
        let err = c
            .update(3, 0, |_| Ok(()), |_| Err(Error::invalid("edit", "refused")))
            .unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        assert_eq!(
            c.stats().device_page_writes(),
            before.0.device_page_writes()
        );
        // (Without a cache the page is read from the device again: only writes matter.)
        let (now, then) = (c.device().stats().host, before.1.host);
        assert_eq!(
            (now.write_ops, now.pages_written),
            (then.write_ops, then.pages_written),
            "{config}"
        );
        assert!(!c.is_dirty(3) || config.ends_with("write-back"));
        c.update(3, 0, |_| Ok(()), |buf| edit(buf, 0, 4, 9))
            .unwrap();
        assert_eq!(
            &held[..4],
            &[7u8; 4],
            "{config}: a page someone holds changed"
        );
        assert_eq!(&c.read(3, 0).unwrap()[..5], &[9, 9, 9, 9, 7], "{config}");
    }
}

#[test]
fn a_page_that_fails_verification_is_not_edited() {
    let mut c = cache("lru:4KB");
    c.device_mut().write(5, &[1u8; PAGE]).unwrap();
    let err = c
        .update(
            5,
            0,
            |_| Err(Error::corrupted("page 5", "bad checksum")),
            |buf| edit(buf, 0, 8, 0),
        )
        .unwrap_err();
    assert!(err.to_string().contains("bad checksum"), "{err}");
    let mut x = vec![0u8; PAGE];
    c.device_mut().read(5, &mut x).unwrap();
    assert_eq!(x, vec![1u8; PAGE]);
    assert!(!c.is_cached(5));
}
