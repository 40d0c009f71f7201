//! Fuzz targets, driven by proptest so they run in `cargo test` (briefly: 64 cases each;
//! `SPIDX_LONG_TESTS=1` runs 2,000): every importer and the experiment spec parser, fed
//! arbitrary bytes and mutations (bit flips, truncation, splices) of valid inputs. Nothing
//! may panic (a panic fails the test); an importer's error must carry a message, and a spec
//! error must name the spec file.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use spidx::data::generate::{generate, Distribution, GenerateOptions};
use spidx::data::{self, Format, ReadOptions};

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
            if let Err(e) = data::read(&path, &opts) {
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
    fn importers_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600), ext in 0usize..8) {
        let dir = tempfile::tempdir().unwrap();
        let name = ["x.geojson", "x.wkt", "x.wkb", "x.fgb", "x.npy", "x.shp", "x.osm.pbf", "x.json"][ext];
        read_all_ways(dir.path(), name, &bytes);
    }

    #[test]
    fn importers_never_panic_on_damaged_valid_files(
        which in 0usize..6,
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
