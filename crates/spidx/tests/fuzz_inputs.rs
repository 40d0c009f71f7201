//! Fuzz targets, driven by proptest so they run in `cargo test` (briefly: 64 cases each;
//! `SPIDX_LONG_TESTS=1` runs 2,000): every importer and the experiment spec parser, fed
//! arbitrary bytes and mutations (bit flips, truncation, splices) of valid inputs. Nothing
//! may panic (a panic fails the test); an importer's error must carry a message, and a spec
//! error must name the spec file. Every reader's memory is bounded by what the input holds:
//! the bytes it allocates at its peak (counted per thread by this binary's allocator, see
//! [`meter`]) stay under [`meter::FIXED`] plus [`meter::PER_BYTE`] times the input's size,
//! so a header that claims more than the file holds (a count of 2^60 features, a length of
//! 4 GB) can never size an allocation.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use spidx::data::generate::{generate, Distribution, GenerateOptions};
use spidx::data::{self, Format, ReadOptions};

/// Bytes allocated by the current thread, counted by this test binary's global allocator:
/// what one reader allocates at its peak, whatever other tests do on other threads.
mod meter {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// What any reader may allocate beyond its input: read buffers (1 MB) and the
    /// decoders' tables.
    pub const FIXED: usize = 4 << 20;
    /// What a reader may allocate per byte of input (records, their geometries, the id
    /// index, vectors growing by doubling).
    pub const PER_BYTE: usize = 64;

    thread_local! {
        static NOW: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn add(delta: isize) {
        let _ = NOW.try_with(|n| {
            let v = n.get() + delta;
            n.set(v);
            let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
        });
    }

    /// The system allocator, counting each thread's bytes.
    pub struct Counting;

    // SAFETY: every call is forwarded to the system allocator unchanged; the counting
    // only reads and writes thread-local cells (const-initialised, without destructors).
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            // SAFETY: forwarded as given.
            let p = unsafe { System.alloc(l) };
            if !p.is_null() {
                add(l.size() as isize);
            }
            p
        }

        unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
            // SAFETY: forwarded as given.
            let p = unsafe { System.alloc_zeroed(l) };
            if !p.is_null() {
                add(l.size() as isize);
            }
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            // SAFETY: forwarded as given.
            unsafe { System.dealloc(p, l) };
            add(-(l.size() as isize));
        }

        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            // SAFETY: forwarded as given.
            let q = unsafe { System.realloc(p, l, new) };
            if !q.is_null() {
                add(new as isize - l.size() as isize);
            }
            q
        }
    }

    /// Runs `f`; asserts that at its peak it allocated at most [`FIXED`] +
    /// [`PER_BYTE`] × `input` bytes more than when it started (`what` names the reader).
    pub fn bounded<T>(what: &str, input: usize, f: impl FnOnce() -> T) -> T {
        let start = NOW.with(Cell::get);
        PEAK.with(|p| p.set(start));
        let out = f();
        let peak = (PEAK.with(Cell::get) - start).max(0) as usize;
        let bound = FIXED + PER_BYTE * input;
        assert!(
            peak <= bound,
            "{what}: allocated {peak} bytes at its peak for {input} bytes of input (bound {bound})"
        );
        out
    }
}

#[global_allocator]
static ALLOCATOR: meter::Counting = meter::Counting;

/// The counting allocator sees a large allocation, and the bound refuses it.
#[test]
fn the_meter_catches_an_allocation_beyond_the_bound() {
    let big = std::panic::catch_unwind(|| {
        meter::bounded("a 64 MB buffer", 100, || vec![1u8; 64 << 20].len())
    });
    assert!(big.is_err(), "a 64 MB allocation passed the bound");
    assert_eq!(
        meter::bounded("a small buffer", 100, || vec![1u8; 1000].len()),
        1000
    );
}

fn cases() -> u32 {
    if std::env::var("SPIDX_LONG_TESTS").is_ok_and(|v| v == "1") {
        2000
    } else {
        64
    }
}

/// A small valid file of each writable format, as bytes.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let geo = generate(&GenerateOptions::new(Distribution::Buildings, 12)).unwrap();
    let mut v = GenerateOptions::new(Distribution::Uniform, 8);
    v.dims = 3;
    let vecs = generate(&v).unwrap();
    let mut out = Vec::new();
    for (ext, ds) in [
        ("fgb", &geo),
        ("geojson", &geo),
        ("wkt", &geo),
        ("wkb", &geo),
        ("npy", &vecs),
    ] {
        let p = dir.path().join(format!("seed.{ext}"));
        data::write(&p, ds).unwrap();
        out.push((ext, std::fs::read(&p).unwrap()));
    }
    // The exchange formats spidx reads but does not write, made by the test fixtures as
    // GIS tools make them: a CSV with a WKT column, a GeoPackage (an SQLite file) and a
    // Snappy-compressed GeoParquet file.
    {
        use spidx::data::fixtures::{self, ParquetCrs};
        let recs = geo.as_geo().unwrap();
        let csv = dir.path().join("seed.csv");
        fixtures::write_csv_wkt(&csv, recs);
        out.push(("csv", std::fs::read(&csv).unwrap()));
        let gpkg = dir.path().join("seed.gpkg");
        fixtures::write_gpkg(&gpkg, &[("buildings", recs)], None);
        out.push(("gpkg", std::fs::read(&gpkg).unwrap()));
        let pq = dir.path().join("seed.parquet");
        fixtures::write_geoparquet(&pq, recs, "WKB", ParquetCrs::Absent);
        out.push(("parquet", std::fs::read(&pq).unwrap()));
    }
    // Binary WKB too (the writer emits hex lines).
    out.push(("wkb", {
        use geozero::{CoordDimensions, ToWkb};
        let mut b = Vec::new();
        for r in geo.as_geo().unwrap() {
            b.extend(r.geometry.to_wkb(CoordDimensions::xy()).unwrap());
        }
        b
    }));
    out
}

/// Reads `bytes` as a file named `name` (every format by extension, and each format
/// forced); asserts no panic and that errors carry a message.
fn read_all_ways(dir: &Path, name: &str, bytes: &[u8]) {
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let mut formats: Vec<Option<Format>> = vec![None];
    formats.extend(Format::ALL.into_iter().map(Some));
    for format in formats {
        for renumber in [false, true] {
            let opts = ReadOptions {
                format,
                renumber,
                ..Default::default()
            };
            let what = format!("reading {name} as {format:?}");
            if let Err(e) = meter::bounded(&what, bytes.len(), || data::read(&path, &opts)) {
                let msg = e.to_string();
                assert!(!msg.is_empty());
            }
        }
    }
}

fn mutate(seed: &[u8], flips: &[(usize, u8)], cut: usize, splice: &[u8]) -> Vec<u8> {
    let mut b = seed.to_vec();
    if b.is_empty() {
        return splice.to_vec();
    }
    for (at, x) in flips {
        let i = at % b.len();
        b[i] ^= x;
    }
    let cut = cut % (b.len() + 1);
    b.truncate(cut.max(b.len() / 2));
    let at = cut % (b.len() + 1);
    b.splice(at..at, splice.iter().copied());
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn importers_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600), ext in 0usize..11) {
        let dir = tempfile::tempdir().unwrap();
        let name = ["x.geojson", "x.wkt", "x.wkb", "x.fgb", "x.npy", "x.shp", "x.osm.pbf", "x.json", "x.csv", "x.gpkg", "x.parquet"][ext];
        read_all_ways(dir.path(), name, &bytes);
    }

    #[test]
    fn importers_never_panic_on_damaged_valid_files(
        which in 0usize..9,
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..6),
        cut in any::<usize>(),
        splice in prop::collection::vec(any::<u8>(), 0..12),
    ) {
        let seeds = seeds();
        let (ext, seed) = &seeds[which % seeds.len()];
        let dir = tempfile::tempdir().unwrap();
        read_all_ways(dir.path(), &format!("x.{ext}"), &mutate(seed, &flips, cut, &splice));
    }

    #[test]
    fn the_spec_parser_never_panics(
        text in "[ -~\n]{0,300}",
        flips in prop::collection::vec((any::<usize>(), 1u8..=127), 0..4),
        cut in any::<usize>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let good = r#"name = "t"
[dataset]
generate = { distribution = "uniform", count = 100 }
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rstar", reinsert = "30%" }]
page_size = ["2KB", "4KB"]
device = ["ssd-v300", { device = "hdd-7200", params = { rpm = 5400 }, label = "hdd" }]
store = [{ kind = "fast", write_buffer = "256KB" }]
[[workload]]
kind = "construction"
[[workload]]
kind = "mixed"
operations = 10
insert = 50
delete = 50
"#;
        for candidate in [text.clone(), {
            let m = mutate(good.as_bytes(), &flips, cut, text.as_bytes());
            String::from_utf8_lossy(&m).into_owned()
        }] {
            if let Err(e) = spidx::experiment::spec::parse(&candidate, "fuzz.toml", dir.path()) {
                let msg = e.to_string();
                prop_assert!(msg.contains("fuzz.toml"), "{}", msg);
            }
        }
    }
}

/// The readers of every on-disk format of an index: the manifest (`index.json`), the store
/// header (`store.json`), the direct store's journal, the shared log, a simulated device's
/// state, the object store's directory and the results database. Fed mutations of valid
/// files (and arbitrary bytes), none may panic, and where the format has a checksum a read
/// that succeeds must give the original content (or, for the journal and the log, a prefix
/// of it: a torn tail).
mod on_disk {
    use std::path::Path;

    use proptest::prelude::*;
    use spidx::device::memory::{MemoryConfig, MemoryDevice};
    use spidx::device::pages::{load_state, save_state, PageArray};
    use spidx::device::shared::SharedDevice;
    use spidx::device::Device;
    use spidx::spatial::parse_manifest;
    use spidx::store::journal::Journal;
    use spidx::store::log::{Log, LogConfig, LogSync};
    use spidx::store::StoreHeader;

    use super::{cases, meter, mutate};

    /// The sealed files of a small index: (index.json, store.json).
    fn index_files() -> (Vec<u8>, Vec<u8>) {
        use spidx::geom::Rect;
        use spidx::spatial::{IndexOptions, SpatialIndex};
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("idx");
        let options = IndexOptions {
            kind: spidx::index::IndexKind::RStar(Default::default()),
            page_size: 1024,
            layout: spidx::node::LayoutKind::Checked,
            occupancy: Default::default(),
            buffer: spidx::cache::CacheConfig::none(),
            store: serde_json::from_str(r#"{"kind":"lcr","write_buffer":8192,"log_size":1048576}"#)
                .unwrap(),
            device_name: "memory".into(),
            device: spidx::device::DeviceConfig::Memory(MemoryConfig { capacity: 8 << 20 }),
        };
        let mut idx = SpatialIndex::<2>::create(&dir, options, false).unwrap();
        for i in 0..60u64 {
            let x = (i * 37 % 100) as f64;
            idx.insert(Rect::new([x, x], [x + 1.0, x + 2.0]).unwrap(), i)
                .unwrap();
        }
        idx.flush().unwrap();
        (
            std::fs::read(dir.join("index.json")).unwrap(),
            std::fs::read(dir.join("store.json")).unwrap(),
        )
    }

    /// A journal of three entries, and the images it holds.
    fn journal_file(dir: &Path) -> (Vec<u8>, Vec<(u64, Vec<u8>)>) {
        let p = dir.join("seed.journal");
        let mut j = Journal::create(&p, 512, 7).unwrap();
        let images: Vec<(u64, Vec<u8>)> = (0..3u64)
            .map(|i| {
                (
                    i * 5 + 1,
                    (0..512).map(|k| (k as u64 * 7 + i) as u8).collect(),
                )
            })
            .collect();
        for (id, image) in &images {
            j.save(*id, image).unwrap();
        }
        (std::fs::read(&p).unwrap(), images)
    }

    const LOG_PAGES: u64 = 24;

    /// A log device image holding `ops` committed operations.
    fn log_image() -> (Vec<u8>, Vec<Vec<Vec<u8>>>) {
        let mem = MemoryDevice::open(
            &MemoryConfig {
                capacity: LOG_PAGES * 512,
            },
            512,
            None,
        )
        .unwrap();
        let dev = SharedDevice::new(Box::new(mem));
        let mut log = Log::create(Box::new(dev.clone()), LogConfig::new(LogSync::EachOp)).unwrap();
        let ops: Vec<Vec<Vec<u8>>> = (0..8u8)
            .map(|i| {
                (0..1 + i % 3)
                    .map(|j| vec![i ^ j; 40 + 30 * j as usize])
                    .collect()
            })
            .collect();
        for op in &ops {
            for p in op {
                log.append(p).unwrap();
            }
            log.commit().unwrap();
        }
        drop(log);
        let mut bytes = vec![0u8; (LOG_PAGES * 512) as usize];
        dev.clone().read(0, &mut bytes).unwrap();
        (bytes, ops)
    }

    fn log_from(bytes: &[u8]) -> SharedDevice {
        let mem = MemoryDevice::open(
            &MemoryConfig {
                capacity: LOG_PAGES * 512,
            },
            512,
            None,
        )
        .unwrap();
        let mut dev = SharedDevice::new(Box::new(mem));
        let mut b = bytes.to_vec();
        b.resize((LOG_PAGES * 512) as usize, 0);
        dev.write(0, &b).unwrap();
        dev
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        #[test]
        fn sealed_json_never_reads_back_different_content(
            which in 0usize..2,
            flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..4),
            cut in any::<usize>(),
            splice in prop::collection::vec(any::<u8>(), 0..8),
        ) {
            let (manifest, header) = index_files();
            let p = Path::new("x.json");
            if which == 0 {
                let good = parse_manifest(&manifest, p).unwrap();
                let bad = mutate(&manifest, &flips, cut, &splice);
                match meter::bounded("index.json", bad.len(), || parse_manifest(&bad, p)) {
                    Ok(m) => prop_assert_eq!(m, good),
                    Err(e) => prop_assert!(e.to_string().contains("x.json"), "{}", e),
                }
            } else {
                let good = StoreHeader::parse(&header, p).unwrap();
                let bad = mutate(&header, &flips, cut, &splice);
                match meter::bounded("store.json", bad.len(), || StoreHeader::parse(&bad, p)) {
                    Ok(h) => prop_assert_eq!(h, good),
                    Err(e) => prop_assert!(e.to_string().contains("x.json"), "{}", e),
                }
            }
        }

        #[test]
        fn a_damaged_journal_never_gives_a_wrong_image(
            flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..4),
            cut in any::<usize>(),
            splice in prop::collection::vec(any::<u8>(), 0..8),
            arbitrary in prop::collection::vec(any::<u8>(), 0..200),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let (bytes, images) = journal_file(tmp.path());
            let p = tmp.path().join("x.journal");
            for candidate in [mutate(&bytes, &flips, cut, &splice), arbitrary.clone()] {
                std::fs::write(&p, &candidate).unwrap();
                if let Ok(c) = meter::bounded("a journal", candidate.len(), || Journal::read(&p, 512)) {
                    prop_assert!(c.images.len() <= images.len());
                    prop_assert_eq!(&c.images[..], &images[..c.images.len()]);
                }
            }
        }

        #[test]
        fn a_damaged_log_recovers_a_prefix_or_fails(
            flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..3),
            cut in any::<usize>(),
        ) {
            let (bytes, ops) = log_image();
            let bad = mutate(&bytes, &flips, cut, &[]);
            if let Ok((_, rec)) = Log::open(Box::new(log_from(&bad)), LogConfig::new(LogSync::EachOp)) {
                let n = rec.operations.len();
                prop_assert!(n <= ops.len());
                prop_assert_eq!(&rec.operations[..], &ops[..n]);
            }
        }

        #[test]
        fn a_damaged_device_state_is_refused_or_identical(
            flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..4),
            cut in any::<usize>(),
            splice in prop::collection::vec(any::<u8>(), 0..8),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let p = tmp.path().join("dev.state");
            let mut a = PageArray::new(64);
            for i in 0..5u64 {
                a.write(i * 3, &[i as u8 + 1; 64]);
            }
            save_state(&p, "memory", &a).unwrap();
            let good = std::fs::read(&p).unwrap();
            let bad = mutate(&good, &flips, cut, &splice);
            std::fs::write(&p, &bad).unwrap();
            let loaded = meter::bounded("a device state", bad.len(), || load_state::<PageArray>(&p, "memory"));
            if let Ok(b) = loaded {
                save_state(&p, "memory", &b).unwrap();
                prop_assert_eq!(std::fs::read(&p).unwrap(), good);
            }
        }

        /// The object store (its directory file or its record pages damaged): every read
        /// returns the object's own bytes or a named error, never another object's or
        /// damaged bytes, opened with and without the scan past the directory's end.
        #[test]
        fn a_damaged_object_store_never_returns_a_wrong_record(
            in_directory in any::<bool>(),
            scan_tail in any::<bool>(),
            flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..4),
            cut in any::<usize>(),
            splice in prop::collection::vec(any::<u8>(), 0..8),
        ) {
            use spidx::objects::ObjectStore;
            const PAGES: u64 = 64;
            let tmp = tempfile::tempdir().unwrap();
            let dir_file = tmp.path().join("objects.dir");
            let mem = |bytes: Option<&[u8]>| {
                let m = MemoryDevice::open(&MemoryConfig { capacity: PAGES * 512 }, 512, None)
                    .unwrap();
                let mut d = SharedDevice::new(Box::new(m));
                if let Some(b) = bytes {
                    let mut b = b.to_vec();
                    b.resize((PAGES * 512) as usize, 0);
                    d.write(0, &b).unwrap();
                }
                d
            };
            let dev = mem(None);
            let mut store = ObjectStore::create(Box::new(dev.clone()), Some(&dir_file));
            let mut want = std::collections::BTreeMap::new();
            for i in 0..30u64 {
                let id = i % 20;
                let payload: Vec<u8> = (0..(20 + i * 13) as usize).map(|k| (k as u64 * 31 + i) as u8).collect();
                store.put(id, &payload).unwrap();
                want.insert(id, payload);
            }
            store.flush().unwrap();
            drop(store);
            let mut pages = vec![0u8; (PAGES * 512) as usize];
            dev.clone().read(0, &mut pages).unwrap();
            if in_directory {
                let good = std::fs::read(&dir_file).unwrap();
                std::fs::write(&dir_file, mutate(&good, &flips, cut, &splice)).unwrap();
            } else {
                // Flipped bytes in the pages the records fill.
                for (at, x) in &flips {
                    pages[at % (8 * 1024)] ^= x;
                }
            }
            let Ok(mut reopened) = ObjectStore::open(Box::new(mem(Some(&pages))), &dir_file, scan_tail)
            else {
                return Ok(());
            };
            let ids = match reopened.ids() {
                Ok(ids) => ids,
                Err(e) => {
                    prop_assert!(e.to_string().contains("object"), "{}", e);
                    return Ok(());
                }
            };
            for id in ids {
                match reopened.get(id) {
                    Ok(Some(bytes)) => prop_assert_eq!(Some(&bytes.to_vec()), want.get(&id), "object {}", id),
                    Ok(None) => {}
                    Err(e) => prop_assert!(e.to_string().contains("object"), "{}", e),
                }
            }
        }

        #[test]
        fn the_results_database_open_never_panics(
            bytes in prop::collection::vec(any::<u8>(), 0..4096),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let p = tmp.path().join("r.db");
            std::fs::write(&p, &bytes).unwrap();
            if let Err(e) = spidx::experiment::ResultsDb::open(&p) {
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}
