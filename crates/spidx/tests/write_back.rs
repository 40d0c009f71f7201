//! Write-back page caches: under random operations a write-back cache returns the newest
//! data on every read, leaves the device after a sync exactly as a write-through cache of
//! the same policy and size leaves it, makes the same replacement decisions, and its
//! counters add up; a tree built through one survives a flush and a reopen.

// In a module named `cache` so that `cargo test -p spidx cache` runs these tests.
mod cache {
    use std::collections::{BTreeMap, HashMap, HashSet};

    use proptest::prelude::*;
    use spidx::cache::{CacheConfig, CachePolicy, CacheStats, PageCache, WritePolicy};
    use spidx::device::memory::{MemoryConfig, MemoryDevice};
    use spidx::device::Device;
    use spidx::geom::Rect;
    use spidx::index::{IndexKind, MbrPredicate, RStarOptions, SplitAlgorithm, Tree};
    use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
    use spidx::store::direct::DirectStore;

    const PS: usize = 512;
    const PAGES: u64 = 24;

    fn device() -> Box<dyn Device> {
        let cfg = MemoryConfig {
            capacity: PAGES * PS as u64,
        };
        Box::new(MemoryDevice::open(&cfg, PS, None).unwrap())
    }

    /// Page contents identifying the page and a version.
    fn page(id: u64, version: u8) -> Vec<u8> {
        let mut v = vec![version; PS];
        v[..8].copy_from_slice(&id.to_le_bytes());
        v
    }

    #[derive(Debug, Clone)]
    enum Op {
        Read(u64, u32),
        Write(u64, u32, u8),
        Run(u64, usize, u8),
        Invalidate(u64),
        Sync,
        DropCaches,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            25 => (0..PAGES, 0u32..3).prop_map(|(p, l)| Op::Read(p, l)),
            8 => (0..4u64, 2u32..4).prop_map(|(p, l)| Op::Read(p, l)),
            20 => (0..PAGES, 0u32..3, any::<u8>()).prop_map(|(p, l, v)| Op::Write(p, l, v)),
            8 => (0..6u64, 0u32..4, any::<u8>()).prop_map(|(p, l, v)| Op::Write(p, l, v)),
            4 => (0..PAGES - 4, 1usize..5, any::<u8>()).prop_map(|(p, n, v)| Op::Run(p, n, v)),
            3 => (0..PAGES).prop_map(Op::Invalidate),
            1 => Just(Op::Sync),
            1 => Just(Op::DropCaches),
        ];
        prop::collection::vec(op, 0..250)
    }

    /// A policy with a size (every policy but `none`, which cannot write back).
    fn specs() -> impl Strategy<Value = String> {
        (1usize..5, 1u64..12, 0u32..=100, 0u32..=200).prop_map(|(p, pages, kin, kout)| {
            let size = pages * PS as u64;
            match CachePolicy::ALL[p] {
                CachePolicy::S2q => format!("s2q:{size},kin={kin}%"),
                CachePolicy::TwoQ => format!("2q:{size},kin={kin}%,kout={kout}%"),
                other => format!("{other}:{size}"),
            }
        })
    }

    fn cache(spec: &str, policy: WritePolicy) -> PageCache {
        let cfg: CacheConfig = spec.parse().unwrap();
        PageCache::new(device(), &cfg.with_write_policy(policy)).unwrap()
    }

    /// The write-back counters' identities: every deferred write either dirtied a clean
    /// page or overwrote a dirty one, and every dirtied page was evicted (and written),
    /// written by a sync, discarded, or is still dirty; the device saw exactly the
    /// through-writes and the write-backs.
    fn check_counts(s: &CacheStats, c: &PageCache) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            s.deferred_writes,
            s.dirty_overwrites
                + s.dirty_evictions
                + s.flush_writebacks
                + s.dirty_discarded
                + s.dirty_pages,
            "{:?}",
            s
        );
        prop_assert!(s.dirty_pages <= s.resident_pages);
        let host = c.device().stats().host;
        prop_assert_eq!(
            host.write_ops,
            s.write_requests + s.dirty_evictions + s.flush_writebacks
        );
        prop_assert_eq!(host.pages_written, s.device_page_writes());
        prop_assert_eq!(host.read_ops, s.faults);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn write_back_matches_write_through(spec in specs(), trace in ops()) {
            let mut wb = cache(&spec, WritePolicy::WriteBack);
            let mut wt = cache(&spec, WritePolicy::WriteThrough);
            prop_assert!(wb.is_write_back() && !wt.is_write_back());
            prop_assert!(wb.config().to_string().ends_with(":write-back"));
            let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
            // Pages invalidated since their last write: freed, so their contents on the
            // device do not matter (a write-back cache drops them unwritten).
            let mut freed: HashSet<u64> = HashSet::new();
            let mut page_writes = 0u64;
            for op in &trace {
                match *op {
                    Op::Read(p, l) => {
                        let want = model.get(&p).cloned().unwrap_or_else(|| vec![0; PS]);
                        if !freed.contains(&p) {
                            let got = wb.read(p, l).unwrap();
                            prop_assert_eq!(&got[..], &want[..], "page {} with {}", p, spec);
                            let lent = wb.read_checked_ref(p, l, |_| Ok(())).unwrap();
                            prop_assert_eq!(lent, &want[..]);
                            let got = wt.read(p, l).unwrap();
                            prop_assert_eq!(&got[..], &want[..]);
                            prop_assert_eq!(wt.read_checked_ref(p, l, |_| Ok(())).unwrap(), &want[..]);
                        }
                    }
                    Op::Write(p, l, v) => {
                        wb.write(p, &page(p, v), l).unwrap();
                        wt.write(p, &page(p, v), l).unwrap();
                        model.insert(p, page(p, v));
                        freed.remove(&p);
                        page_writes += 1;
                    }
                    Op::Run(p, n, v) => {
                        let data: Vec<u8> = (0..n as u64).flat_map(|i| page(p + i, v)).collect();
                        let levels: Vec<u32> = (0..n as u32).collect();
                        wb.write_run(p, &data, &levels).unwrap();
                        wt.write_run(p, &data, &levels).unwrap();
                        for i in 0..n as u64 {
                            model.insert(p + i, page(p + i, v));
                            freed.remove(&(p + i));
                        }
                        page_writes += n as u64;
                    }
                    Op::Invalidate(p) => {
                        prop_assert_eq!(wb.invalidate(p), wt.invalidate(p));
                        prop_assert!(!wb.is_dirty(p));
                        freed.insert(p);
                    }
                    Op::Sync => {
                        wb.sync().unwrap();
                        wt.sync().unwrap();
                        prop_assert_eq!(wb.stats().dirty_pages, 0);
                    }
                    Op::DropCaches => {
                        wb.drop_caches().unwrap();
                        wt.drop_caches().unwrap();
                        prop_assert_eq!(wb.stats().resident_pages, 0);
                        prop_assert_eq!(wb.stats().dirty_pages, 0);
                    }
                }
                // The same replacement decisions in both modes.
                let (a, b) = (wb.stats(), wt.stats());
                prop_assert_eq!(
                    (a.hits, a.faults, a.admissions, a.refused, a.evictions, a.resident_pages),
                    (b.hits, b.faults, b.admissions, b.refused, b.evictions, b.resident_pages),
                    "after {:?} with {}", op, spec
                );
                check_counts(&a, &wb)?;
                prop_assert_eq!(b.deferred_writes + b.dirty_pages + b.dirty_evictions, 0);
                prop_assert_eq!(a.pages_written + a.deferred_writes, page_writes);
                prop_assert_eq!(b.pages_written, page_writes);
            }
            wb.sync().unwrap();
            wt.sync().unwrap();
            let a = wb.stats();
            check_counts(&a, &wb)?;
            prop_assert_eq!(a.dirty_pages, 0);
            // Never more device writes than write-through.
            prop_assert!(a.device_page_writes() <= wt.stats().device_page_writes());
            let (mut x, mut y) = (vec![0u8; PS], vec![0u8; PS]);
            for p in (0..PAGES).filter(|p| !freed.contains(p)) {
                wb.device_mut().read(p, &mut x).unwrap();
                wt.device_mut().read(p, &mut y).unwrap();
                prop_assert_eq!(&x, &y, "page {} on the device after sync with {}", p, spec);
            }
        }
    }

    #[test]
    fn dirty_pages_are_written_at_eviction_and_at_sync() {
        let mut c = cache("lru:1KB", WritePolicy::WriteBack); // two pages
        c.write(1, &page(1, 1), 0).unwrap();
        c.write(1, &page(1, 2), 0).unwrap();
        c.write(2, &page(2, 1), 0).unwrap();
        assert_eq!(c.device().stats().host.write_ops, 0, "nothing written yet");
        assert!(c.is_dirty(1) && c.is_dirty(2));
        c.read(3, 0).unwrap(); // evicts page 1, dirty
        let s = c.stats();
        assert_eq!(
            (s.deferred_writes, s.dirty_overwrites, s.dirty_evictions),
            (3, 1, 1)
        );
        let mut buf = vec![0u8; PS];
        c.device_mut().read(1, &mut buf).unwrap();
        assert_eq!(buf, page(1, 2), "the newest version was written back");
        c.invalidate(2);
        assert_eq!(c.stats().dirty_discarded, 1);
        c.write(4, &page(4, 9), 1).unwrap();
        c.sync().unwrap();
        let s = c.stats();
        assert_eq!((s.flush_writebacks, s.dirty_pages), (1, 0));
        c.device_mut().read(4, &mut buf).unwrap();
        assert_eq!(buf, page(4, 9));
        assert_eq!(c.device().stats().host.write_ops, 2);
        c.sync().unwrap();
        assert_eq!(
            c.stats().flush_writebacks,
            1,
            "a clean cache writes nothing"
        );
        // Dropping the cache without a sync loses the dirty pages, as a crash would.
        c.write(5, &page(5, 5), 0).unwrap();
        let mut dev = c.into_device();
        dev.read(5, &mut buf).unwrap();
        assert_eq!(buf, vec![0u8; PS]);
    }

    #[test]
    fn runs_go_through_and_supersede_dirty_copies() {
        let mut c = cache("lru:1KB", WritePolicy::WriteBack); // two pages
        c.write(5, &page(5, 1), 0).unwrap();
        c.write(6, &page(6, 1), 0).unwrap();
        // Storing page 4 of the run evicts page 5, which the run itself rewrites: its old
        // dirty copy must not be written over the run's.
        let data: Vec<u8> = [page(4, 2), page(5, 2)].concat();
        c.write_run(4, &data, &[0, 0]).unwrap();
        let mut buf = vec![0u8; PS];
        c.device_mut().read(5, &mut buf).unwrap();
        assert_eq!(buf, page(5, 2));
        c.device_mut().read(6, &mut buf).unwrap();
        assert_eq!(buf, page(6, 1), "page 6 was evicted dirty and written back");
        let s = c.stats();
        assert_eq!(
            (
                s.write_requests,
                s.pages_written,
                s.dirty_overwrites,
                s.dirty_evictions
            ),
            (1, 2, 1, 1)
        );
        assert_eq!(s.dirty_pages, 0);
    }

    #[test]
    fn hlru_refusals_are_written_through() {
        let mut c = cache("hlru:512", WritePolicy::WriteBack); // one page
        c.write(1, &page(1, 1), 3).unwrap();
        c.write(2, &page(2, 1), 0).unwrap(); // a leaf may not evict level 3
        let s = c.stats();
        assert_eq!((s.deferred_writes, s.pages_written, s.refused), (1, 1, 1));
        assert!(c.is_dirty(1) && !c.is_cached(2));
        let mut buf = vec![0u8; PS];
        c.device_mut().read(2, &mut buf).unwrap();
        assert_eq!(buf, page(2, 1));
    }

    #[test]
    fn write_policy_specifications_parse_and_print_back() {
        for (text, shown) in [
            ("lru:512KB:write-back", "lru:512KB:write-back"),
            ("LRU:512KB:Write-Back", "lru:512KB:write-back"),
            ("lru:512KB:write-through", "lru:512KB"),
            ("hlru:1MB:write-back", "hlru:1MB:write-back"),
            (
                "s2q:256KB,kin=10%:write-back",
                "s2q:256KB,kin=10%:write-back",
            ),
            ("2q:4MB,kout=200:write-back", "2q:4MB,kout=200%:write-back"),
            (" lru : 4KB : write-back ", "lru:4KB:write-back"),
        ] {
            let c: CacheConfig = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(c.to_string(), shown, "{text}");
            assert_eq!(shown.parse::<CacheConfig>().unwrap(), c, "{shown}");
        }
        let c: CacheConfig = "lru:512KB:write-back".parse().unwrap();
        assert_eq!(c.write_policy, WritePolicy::WriteBack);
        assert!(c.is_write_back());
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, "\"lru:512KB:write-back\"");
        assert_eq!(serde_json::from_str::<CacheConfig>(&json).unwrap(), c);
        assert!(!"lru:512KB".parse::<CacheConfig>().unwrap().is_write_back());
    }

    #[test]
    fn bad_write_policies_are_rejected_clearly() {
        for (text, expect) in [
            ("lru:512KB:writeback", "'writeback' is not a write policy"),
            ("lru:512KB:", "'' is not a write policy"),
            ("lru:512KB:write-back:write-back", "too many ':'"),
            (
                "lru:write-back",
                "has no size; write e.g. lru:512KB:write-back",
            ),
            (
                "lru:512KB,write-back",
                "follows a ':', e.g. lru:512KB:write-back",
            ),
            ("none:write-back", "none keeps no pages"),
            ("none:1MB:write-back", "none keeps no pages"),
            ("2q:1MB:kin=5%", "not a write policy"),
        ] {
            let err = text.parse::<CacheConfig>().expect_err(text).to_string();
            assert!(err.contains(expect), "{text:?}: {err}");
        }
        let none = CacheConfig::none().with_write_policy(WritePolicy::WriteBack);
        let err = none.validate().unwrap_err().to_string();
        assert!(err.contains("none keeps no pages"), "{err}");
        assert!(PageCache::new(device(), &none).is_err());
    }

    type T = Tree<DirectStore, 2>;

    fn open_tree(dir: &std::path::Path, buffer: &str, create: bool) -> T {
        let layout = NodeLayout::new(LayoutKind::Checked, 1024, 2).unwrap();
        let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
        let state = dir.join("device.state");
        let dev =
            MemoryDevice::open(&MemoryConfig { capacity: 1 << 30 }, 1024, Some(&state)).unwrap();
        let cache = PageCache::new(Box::new(dev), &buffer.parse().unwrap()).unwrap();
        let header = dir.join("store.json");
        let kind = IndexKind::RStar(RStarOptions::default());
        if create {
            Tree::create(
                DirectStore::create(cache, layout, Some(&header)).unwrap(),
                cap,
                kind,
            )
            .unwrap()
        } else {
            Tree::open(
                DirectStore::open(cache, layout, &header).unwrap(),
                cap,
                kind,
            )
            .unwrap()
        }
    }

    fn rects() -> impl Strategy<Value = Vec<(Rect<2>, bool)>> {
        let r = (0.0..1000.0f64, 0.0..1000.0f64, 0.0..40.0f64, 0.0..40.0f64).prop_map(
            |(x, y, w, h)| Rect {
                min: [x.round(), y.round()],
                max: [(x + w).round(), (y + h).round()],
            },
        );
        // (box, then delete the object inserted just before)
        prop::collection::vec((r, prop::bool::weighted(0.2)), 1..400)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// A tree built through a write-back buffer answers as brute force does while the
        /// buffer holds dirty pages, after a flush and after a reopen from the device,
        /// with no more device writes than the same build through a write-through buffer.
        #[test]
        fn trees_survive_flush_and_reopen(ops in rects(), pages in 1u64..20, policy in 1usize..5) {
            let buffer = format!("{}:{}KB", CachePolicy::ALL[policy], pages);
            let mut writes = Vec::new();
            for mode in ["", ":write-back"] {
                let dir = tempfile::tempdir().unwrap();
                let mut t = open_tree(dir.path(), &format!("{buffer}{mode}"), true);
                let mut live: BTreeMap<u64, Rect<2>> = BTreeMap::new();
                for (id, (r, delete_previous)) in ops.iter().enumerate() {
                    t.insert(*r, id as u64).unwrap();
                    live.insert(id as u64, *r);
                    if *delete_previous && id > 0 {
                        if let Some(prev) = live.remove(&(id as u64 - 1)) {
                            prop_assert!(t.delete(&prev, id as u64 - 1).unwrap());
                        }
                    }
                }
                let q = Rect { min: [200.0, 100.0], max: [800.0, 700.0] };
                let want: Vec<u64> =
                    live.iter().filter(|(_, r)| r.intersects(&q)).map(|(id, _)| *id).collect();
                let search = |t: &mut T| {
                    let mut got = Vec::new();
                    t.search(MbrPredicate::Intersects, &q, |e| got.push(e.ptr)).unwrap();
                    got.sort();
                    got
                };
                prop_assert_eq!(&search(&mut t), &want);
                let store = t.into_store().unwrap();
                let s = store.cache().stats();
                prop_assert_eq!(s.dirty_pages, 0, "flushed");
                writes.push(store.cache().device().stats().host.pages_written);
                drop(store);
                let mut t = open_tree(dir.path(), &format!("{buffer}{mode}"), false);
                let rep = t.check().unwrap();
                prop_assert!(rep.ok(), "{} after reopen: {:?}", mode, rep.violations);
                prop_assert_eq!(rep.leaf_entries, live.len() as u64);
                prop_assert_eq!(&search(&mut t), &want);
            }
            prop_assert!(writes[1] <= writes[0], "write-back {} vs write-through {}", writes[1], writes[0]);
        }
    }

    #[test]
    fn linear_rtree_build_writes_less_with_write_back() {
        let kind = IndexKind::RTree {
            split: SplitAlgorithm::Linear,
        };
        let mut pages = Vec::new();
        for buffer in ["lru:64KB", "lru:64KB:write-back"] {
            let dir = tempfile::tempdir().unwrap();
            let layout = NodeLayout::new(LayoutKind::Checked, 1024, 2).unwrap();
            let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
            let dev = MemoryDevice::open(&MemoryConfig { capacity: 1 << 30 }, 1024, None).unwrap();
            let cache = PageCache::new(Box::new(dev), &buffer.parse().unwrap()).unwrap();
            let store =
                DirectStore::create(cache, layout, Some(&dir.path().join("s.json"))).unwrap();
            let mut t = Tree::create(store, cap, kind).unwrap();
            for i in 0..3000u64 {
                let x = (i * 7919 % 1000) as f64;
                let y = (i * 104_729 % 1000) as f64;
                t.insert(
                    Rect {
                        min: [x, y],
                        max: [x + 1.0, y + 1.0],
                    },
                    i,
                )
                .unwrap();
            }
            let store = t.into_store().unwrap();
            pages.push(store.cache().device().stats().host.pages_written);
        }
        // Every insertion rewrites its leaf; a 64-page buffer absorbs most rewrites.
        assert!(
            pages[1] * 3 < pages[0],
            "write-back {} vs write-through {}",
            pages[1],
            pages[0]
        );
    }
}
