//! The page cache over a memory device: reads return what was last written, the counters
//! add up, runs are one device request, and cache specifications parse and print back.

// In a module named `cache` so that `cargo test -p spidx cache` runs these tests.
mod cache {
    use std::collections::HashMap;
    use std::sync::Arc;

    use proptest::prelude::*;
    use spidx::cache::{CacheConfig, CachePolicy, PageCache};
    use spidx::device::memory::{MemoryConfig, MemoryDevice};
    use spidx::device::Device;

    const PS: usize = 512;
    const PAGES: u64 = 24;

    fn device() -> Box<dyn Device> {
        let cfg = MemoryConfig {
            capacity: PAGES * PS as u64,
        };
        Box::new(MemoryDevice::open(&cfg, PS, None).unwrap())
    }

    fn cache(spec: &str) -> PageCache {
        PageCache::new(device(), &spec.parse().unwrap()).unwrap()
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
        Clear,
        Keep,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            30 => (0..PAGES, 0u32..3).prop_map(|(p, l)| Op::Read(p, l)),
            10 => (0..4u64, 2u32..4).prop_map(|(p, l)| Op::Read(p, l)),
            10 => (0..PAGES, 0u32..3, any::<u8>()).prop_map(|(p, l, v)| Op::Write(p, l, v)),
            4 => (0..PAGES - 4, 1usize..5, any::<u8>()).prop_map(|(p, n, v)| Op::Run(p, n, v)),
            2 => (0..PAGES).prop_map(Op::Invalidate),
            1 => Just(Op::Clear),
            3 => Just(Op::Keep),
        ];
        prop::collection::vec(op, 0..200)
    }

    fn specs() -> impl Strategy<Value = String> {
        (0usize..5, 1u64..10, 0u32..=100, 0u32..=200).prop_map(|(p, pages, kin, kout)| {
            let size = pages * PS as u64;
            match CachePolicy::ALL[p] {
                CachePolicy::None => "none".to_string(),
                CachePolicy::S2q => format!("s2q:{size},kin={kin}%"),
                CachePolicy::TwoQ => format!("2q:{size},kin={kin}%,kout={kout}%"),
                other => format!("{other}:{size}"),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        #[test]
        fn reads_return_the_last_write(spec in specs(), trace in ops()) {
            let mut c = cache(&spec);
            let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
            let mut reads = 0u64;
            // Pages the test keeps while the cache changes, with their contents then.
            let mut kept: Vec<(Arc<[u8]>, Vec<u8>)> = Vec::new();
            let mut last: Option<Arc<[u8]>> = None;
            for op in &trace {
                match *op {
                    Op::Read(p, l) => {
                        let got = c.read(p, l).unwrap();
                        reads += 1;
                        let want = model.get(&p).cloned().unwrap_or_else(|| vec![0; PS]);
                        prop_assert_eq!(&got[..], &want[..], "page {} with {}", p, spec);
                        last = Some(got);
                    }
                    Op::Write(p, l, v) => {
                        c.write(p, &page(p, v), l).unwrap();
                        model.insert(p, page(p, v));
                    }
                    Op::Run(p, n, v) => {
                        let data: Vec<u8> = (0..n as u64).flat_map(|i| page(p + i, v)).collect();
                        let levels: Vec<u32> = (0..n as u32).collect();
                        c.write_run(p, &data, &levels).unwrap();
                        for i in 0..n as u64 {
                            model.insert(p + i, page(p + i, v));
                        }
                    }
                    Op::Invalidate(p) => {
                        let was = c.is_cached(p);
                        prop_assert_eq!(c.invalidate(p), was);
                        prop_assert!(!c.is_cached(p));
                    }
                    Op::Clear => {
                        c.clear().unwrap();
                        prop_assert_eq!(c.stats().resident_pages, 0);
                    }
                    Op::Keep => {
                        if let Some(a) = last.take() {
                            let copy = a.to_vec();
                            kept.push((a, copy));
                        }
                    }
                }
                let s = c.stats();
                prop_assert!(s.resident_pages <= s.capacity_pages);
            }
            for (a, copy) in &kept {
                prop_assert_eq!(&a[..], &copy[..], "a page held by a reader changed");
            }
            let s = c.stats();
            let d = c.device().stats().host;
            prop_assert_eq!(s.hits + s.faults, reads);
            prop_assert_eq!(d.read_ops, s.faults, "one device read per fault");
            prop_assert_eq!(d.write_ops, s.write_requests);
            prop_assert_eq!(d.pages_written, s.pages_written);
            if spec == "none" {
                prop_assert_eq!(s.hits, 0);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        /// `read_checked_ref` (lent pages) and `read_unused` (no bytes) make exactly the
        /// decisions, counts and device requests of `read`; lent pages have its contents.
        #[test]
        fn lent_and_unused_reads_behave_like_shared_reads(spec in specs(), trace in ops()) {
            let mut shared = cache(&spec);
            let mut lent = cache(&spec);
            let mut unused = cache(&spec);
            for op in &trace {
                match *op {
                    Op::Read(p, l) => {
                        let a = shared.read(p, l).unwrap();
                        let b = lent.read_checked_ref(p, l, |_| Ok(())).unwrap();
                        prop_assert_eq!(&a[..], b, "page {} with {}", p, spec);
                        unused.read_unused(p, l, |_| Ok(())).unwrap();
                    }
                    Op::Write(p, l, v) => {
                        for c in [&mut shared, &mut lent, &mut unused] {
                            c.write(p, &page(p, v), l).unwrap();
                        }
                    }
                    Op::Run(p, n, v) => {
                        let data: Vec<u8> = (0..n as u64).flat_map(|i| page(p + i, v)).collect();
                        let levels: Vec<u32> = (0..n as u32).collect();
                        for c in [&mut shared, &mut lent, &mut unused] {
                            c.write_run(p, &data, &levels).unwrap();
                        }
                    }
                    Op::Invalidate(p) => {
                        let was = shared.invalidate(p);
                        prop_assert_eq!(was, lent.invalidate(p));
                        prop_assert_eq!(was, unused.invalidate(p));
                    }
                    Op::Clear => {
                        for c in [&mut shared, &mut lent, &mut unused] {
                            c.clear().unwrap();
                        }
                    }
                    Op::Keep => {}
                }
                for c in [&lent, &unused] {
                    prop_assert_eq!(shared.stats(), c.stats(), "after {:?} with {}", op, spec);
                    prop_assert_eq!(shared.device().stats(), c.device().stats());
                    for p in 0..PAGES {
                        prop_assert_eq!(shared.is_cached(p), c.is_cached(p));
                    }
                }
            }
            // What `read_unused` left cached is what the device holds.
            for p in 0..PAGES {
                let l = 0;
                prop_assert_eq!(&shared.read(p, l).unwrap()[..], &unused.read(p, l).unwrap()[..]);
            }
        }
    }

    #[test]
    fn a_failed_verification_lends_nothing() {
        let mut c = cache("lru:4KB");
        c.write(3, &page(3, 1), 0).unwrap();
        c.invalidate(3);
        let err = c
            .read_checked_ref(3, 0, |_| Err(spidx::Error::corrupted("page 3", "bad")))
            .unwrap_err();
        assert!(err.to_string().contains("bad"), "{err}");
        assert!(!c.is_cached(3));
        assert_eq!(
            c.read_checked_ref(3, 0, |_| Ok(())).unwrap(),
            &page(3, 1)[..]
        );
        let mut none = cache("none");
        none.write(5, &page(5, 2), 0).unwrap();
        assert_eq!(
            none.read_checked_ref(5, 0, |_| Ok(())).unwrap(),
            &page(5, 2)[..]
        );
        assert_eq!(
            none.read_checked_ref(6, 0, |_| Ok(())).unwrap(),
            &[0u8; PS][..]
        );
        assert_eq!((none.stats().faults, none.stats().hits), (2, 0));
    }

    #[test]
    fn hits_faults_and_drop_caches() {
        let mut c = cache("lru:2KB"); // 4 pages
        assert_eq!(c.page_size(), PS);
        c.write(1, &page(1, 7), 0).unwrap();
        assert_eq!(&c.read(1, 0).unwrap()[..], &page(1, 7)[..]);
        assert_eq!(c.stats().hits, 1, "a written page is cached");
        assert_eq!(&c.read(2, 0).unwrap()[..], &[0u8; PS][..]);
        c.read(2, 0).unwrap();
        let s = c.stats();
        assert_eq!(
            (s.hits, s.faults, s.resident_pages, s.capacity_pages),
            (2, 1, 2, 4)
        );
        c.drop_caches().unwrap();
        assert_eq!(c.stats().resident_pages, 0);
        assert_eq!(c.device().stats().host.cache_drops, 1);
        c.read(1, 0).unwrap();
        let later = c.stats().since(&s);
        assert_eq!((later.hits, later.faults), (0, 1));
        assert!((c.stats().hit_ratio() - 0.5).abs() < 1e-9);
        c.sync().unwrap();
        assert_eq!(c.device_mut().stats().host.syncs, 1);
        c.persist().unwrap();
        assert_eq!(c.config().to_string(), "lru:2KB");
        let dev = c.into_device();
        assert_eq!(dev.stats().host.write_ops, 1);
    }

    #[test]
    fn a_held_page_keeps_its_contents_across_writes() {
        let mut c = cache("lru:4KB");
        c.write(3, &page(3, 1), 0).unwrap();
        let held = c.read(3, 0).unwrap();
        c.write(3, &page(3, 2), 0).unwrap();
        assert_eq!(&held[..], &page(3, 1)[..]);
        assert_eq!(&c.read(3, 0).unwrap()[..], &page(3, 2)[..]);
    }

    #[test]
    fn a_run_is_one_device_request() {
        let mut c = cache("2q:8KB");
        let before = c.device().stats().host;
        let data: Vec<u8> = (0..4).flat_map(|i| page(10 + i, 9)).collect();
        c.write_run(10, &data, &[0, 0, 1, 2]).unwrap();
        let host = c.device().stats().host.since(&before);
        assert_eq!((host.write_ops, host.pages_written), (1, 4));
        assert_eq!(c.stats().write_requests, 1);
        for i in 0..4 {
            assert_eq!(&c.read(10 + i, 0).unwrap()[..], &page(10 + i, 9)[..]);
        }
        assert_eq!(c.device().stats().host.read_ops, 0, "the run was cached");
        // Malformed runs are rejected before reaching the device.
        assert!(c.write_run(0, &data, &[0, 0, 0]).is_err());
        assert!(c.write_run(0, &data[..PS + 1], &[0, 0]).is_err());
        assert!(c.write_run(0, &[], &[]).is_err());
        assert!(c.write(0, &data[..PS - 1], 0).is_err());
        assert_eq!(c.device().stats().host.write_ops, 1);
    }

    #[test]
    fn device_errors_leave_no_stale_page() {
        let mut c = cache("lru:4KB");
        c.write(PAGES - 1, &page(PAGES - 1, 1), 0).unwrap();
        assert!(c.is_cached(PAGES - 1));
        let run: Vec<u8> = (0..2).flat_map(|_| page(0, 2)).collect();
        assert!(
            c.write_run(PAGES - 1, &run, &[0, 0]).is_err(),
            "past the end"
        );
        assert!(
            !c.is_cached(PAGES - 1),
            "a failed write drops the cached copy"
        );
        assert!(c.read(PAGES, 0).is_err());
        assert!(!c.is_cached(PAGES));
        assert_eq!(&c.read(PAGES - 1, 0).unwrap()[..], &page(PAGES - 1, 1)[..]);
    }

    #[test]
    fn hlru_cache_keeps_upper_levels_under_leaf_scans() {
        let mut c = cache("hlru:1KB"); // 2 pages
        c.read(0, 3).unwrap(); // root
        c.read(1, 2).unwrap();
        for leaf in 2..20 {
            c.read(leaf, 0).unwrap();
        }
        assert!(c.is_cached(0) && c.is_cached(1));
        let s = c.stats();
        assert_eq!((s.refused, s.evictions), (18, 0));
        let mut lru = cache("lru:1KB");
        lru.read(0, 3).unwrap();
        for leaf in 2..20 {
            lru.read(leaf, 0).unwrap();
        }
        assert!(!lru.is_cached(0));
    }

    #[test]
    fn specifications_parse_and_print_back() {
        for (text, shown) in [
            ("none", "none"),
            ("NONE", "none"),
            ("lru:512KB", "lru:512KB"),
            ("LRU:512kb", "lru:512KB"),
            ("hlru:1MB", "hlru:1MB"),
            ("s2q:256KB", "s2q:256KB"),
            ("s2q:256KB,kin=10%", "s2q:256KB,kin=10%"),
            ("2q:4MB", "2q:4MB"),
            ("2q:4MB,kin=25%,kout=50%", "2q:4MB"),
            ("2q:4MB,kout=200,kin=12.5", "2q:4MB,kin=12.5%,kout=200%"),
            ("lru:1.5MB", "lru:1536KB"),
            ("lru:1000", "lru:1000B"),
            (" lru : 4KB ", "lru:4KB"),
        ] {
            let c: CacheConfig = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(c.to_string(), shown, "{text}");
            assert_eq!(shown.parse::<CacheConfig>().unwrap(), c, "{shown}");
        }
        let c: CacheConfig = "2q:4MB,kin=10%".parse().unwrap();
        assert_eq!(
            (c.policy, c.capacity_bytes, c.kin_pct, c.kout_pct),
            (CachePolicy::TwoQ, 4 << 20, 10.0, 50.0)
        );
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, "\"2q:4MB,kin=10%\"");
        assert_eq!(serde_json::from_str::<CacheConfig>(&json).unwrap(), c);
        assert!(serde_json::from_str::<CacheConfig>("\"lru\"").is_err());
        assert_eq!(CacheConfig::default(), CacheConfig::none());
    }

    #[test]
    fn bad_specifications_are_rejected_clearly() {
        for (text, expect) in [
            ("", "not a policy"),
            ("fifo:1MB", "not a policy"),
            ("lru", "no size"),
            ("2q", "no size"),
            ("lru:", "not a size"),
            ("lru:0", "non-zero size"),
            ("lru:0KB", "non-zero size"),
            ("lru:4XB", "not a size"),
            ("none:1MB", "none takes no size"),
            ("lru:1MB,kin=5%", "unknown parameter 'kin' for policy lru"),
            ("s2q:1MB,kout=5%", "unknown parameter 'kout' for policy s2q"),
            ("2q:1MB,foo=1", "unknown parameter 'foo'"),
            ("2q:1MB,kin", "not KEY=VALUE"),
            ("2q:1MB,kin=150%", "outside 0-100%"),
            ("2q:1MB,kout=5000%", "outside 0-1000%"),
            ("2q:1MB,kin=-1", "outside"),
            ("2q:1MB,kout=x", "not a percentage"),
            ("2q:1MB,kin=5%,kin=6%", "given twice"),
        ] {
            let err = text.parse::<CacheConfig>().expect_err(text).to_string();
            assert!(err.contains(expect), "{text:?}: {err}");
        }
        let small: CacheConfig = "lru:256B".parse().unwrap();
        let err = PageCache::new(device(), &small).err().unwrap().to_string();
        assert!(err.contains("less than one"), "{err}");
        let mut zero = CacheConfig::new(CachePolicy::Hlru, 0);
        assert!(PageCache::new(device(), &zero).is_err());
        zero.kin_pct = 200.0;
        assert!(zero.validate().is_err());
        assert_eq!(
            CacheConfig::new(CachePolicy::Lru, 1536)
                .capacity_pages(PS)
                .unwrap(),
            3
        );
    }
}
