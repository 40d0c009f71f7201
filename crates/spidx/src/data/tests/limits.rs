//! Hostile inputs: deep nesting, huge files, repeated ids. Each must end in a clear error
//! (or a skipped, counted record), never a stack overflow, an allocation abort or a file
//! read whole into memory.

use super::*;
use std::io::{Seek, SeekFrom, Write};

fn nested_wkt(levels: usize) -> String {
    format!(
        "{}POINT(1 2){}",
        "GEOMETRYCOLLECTION(".repeat(levels),
        ")".repeat(levels)
    )
}

#[test]
fn deeply_nested_wkt_lines_are_skipped_with_a_reason() {
    let dir = tmp();
    let path = file(&dir, "deep.wkt");
    let text = format!("POINT(0 0)\n{}\n{}\n", nested_wkt(7000), nested_wkt(3));
    std::fs::write(&path, text).unwrap();
    let (recs, report) = read_report(&path);
    assert_eq!(recs.len(), 2, "{report}");
    assert_eq!(report.count(Issue::Unparsable), 1);
    let shown = report.to_string();
    assert!(
        shown.contains("line 2") && shown.contains("7001 levels deep"),
        "{shown}"
    );
}

#[test]
fn deeply_nested_wkb_is_an_error_or_a_skipped_line() {
    let dir = tmp();
    // Binary: 7000 collections, each holding the next, then a point.
    let mut bytes = Vec::new();
    for _ in 0..7000 {
        bytes.extend_from_slice(&[1, 7, 0, 0, 0, 1, 0, 0, 0]);
    }
    bytes.extend_from_slice(&[1, 1, 0, 0, 0]);
    bytes.extend_from_slice(&1f64.to_le_bytes());
    bytes.extend_from_slice(&2f64.to_le_bytes());
    let path = file(&dir, "deep.wkb");
    std::fs::write(&path, &bytes).unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(
        e.contains("deep.wkb") && e.contains("nested more than"),
        "{e}"
    );
    // Hex lines: the deep line is skipped, the others kept.
    let hex: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
    let path = file(&dir, "deep-hex.wkb");
    std::fs::write(
        &path,
        format!("0101000000000000000000F03F0000000000000040\n{hex}\n"),
    )
    .unwrap();
    let (recs, report) = read_report(&path);
    assert_eq!(recs.len(), 1, "{report}");
    assert_eq!(report.count(Issue::Unparsable), 1);
}

#[test]
fn deeply_nested_geojson_is_a_clear_error() {
    let dir = tmp();
    let path = file(&dir, "deep.geojson");
    let inner = r#"{"type":"Point","coordinates":[1,2]}"#;
    let mut g = inner.to_string();
    for _ in 0..7000 {
        g = format!(r#"{{"type":"GeometryCollection","geometries":[{g}]}}"#);
    }
    std::fs::write(
        &path,
        format!(r#"{{"type":"FeatureCollection","features":[{{"type":"Feature","properties":{{}},"geometry":{g}}}]}}"#),
    )
    .unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(
        e.contains("deep.geojson") && e.contains("nested more than 128 levels"),
        "{e}"
    );
}

/// Peak memory of this process so far (`VmHWM`), in bytes.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A 2 GiB sparse file that starts with `head`.
fn sparse(dir: &tempfile::TempDir, name: &str, head: &[u8]) -> std::path::PathBuf {
    let path = file(dir, name);
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(head).unwrap();
    f.seek(SeekFrom::Start((2u64 << 30) - 1)).unwrap();
    f.write_all(b"\n").unwrap();
    path
}

#[test]
fn two_gigabyte_text_files_are_not_read_whole() {
    let dir = tmp();
    let cases = [
        sparse(
            &dir,
            "big.geojson",
            br#"{"type":"FeatureCollection","features":["#,
        ),
        sparse(&dir, "big.wkt", b"POINT(1 2)\n"),
        sparse(
            &dir,
            "big.wkb",
            &[
                1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40,
            ],
        ),
    ];
    let before = peak_memory();
    for path in &cases {
        let e = open(path).unwrap_err().to_string();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(e.contains(&name), "{e}");
        if name.ends_with(".wkt") {
            assert!(e.contains("line 2 is longer than 256 MiB"), "{e}");
        }
    }
    if let (Some(a), Some(b)) = (before, peak_memory()) {
        // Reading any of them whole would take 2 GiB; a record is capped at 256 MiB.
        assert!(b - a < 1 << 30, "peak memory grew by {} MiB", (b - a) >> 20);
    }
}

#[test]
fn duplicate_ids_are_refused_or_renumbered() {
    let dir = tmp();
    let path = file(&dir, "dup.wkt");
    std::fs::write(&path, "5\tPOINT(0 0)\n6\tPOINT(1 1)\n5\tPOINT(2 2)\n").unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(
        e.contains("dup.wkt")
            && e.contains("1 records reuse")
            && e.contains("id 5 at line 3, already at line 1"),
        "{e}"
    );
    let l = read(
        &path,
        &ReadOptions {
            renumber: true,
            ..Default::default()
        },
    )
    .unwrap();
    let ids: Vec<u64> = geo(l.dataset).iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![0, 1, 2], "every geometry kept, with new ids");
}

/// A FlatGeobuf of `n` points whose header's feature count (found as the one u64 equal to
/// `n` in the header) is replaced by `count`; the file's bytes and where its features start.
fn fgb_with_count(path: &std::path::Path, n: u64, count: u64) -> Vec<u8> {
    let records: Vec<GeoRecord> = (0..n)
        .map(|i| GeoRecord::new(i, Geometry::Point(Point::new(i as f64, 1.0))).unwrap())
        .collect();
    // Dataset writers write only new files: the previous case's file goes first.
    let _ = std::fs::remove_file(path);
    write(path, &Dataset::Geo(records)).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let header_end = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let at: Vec<usize> = (12..header_end - 8)
        .filter(|&i| bytes[i..i + 8] == n.to_le_bytes())
        .collect();
    assert_eq!(at.len(), 1, "the feature count is found once in the header");
    bytes[at[0]..at[0] + 8].copy_from_slice(&count.to_le_bytes());
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// A header declaring 2^60 features, or a feature declaring 4 GB, is refused by name
/// before anything is allocated from it (it used to abort the process).
#[test]
fn flatgeobuf_sizes_beyond_the_file_are_refused() {
    let dir = tmp();
    let path = file(&dir, "lying.fgb");
    fgb_with_count(&path, 37, 1 << 60);
    let e = open(&path).unwrap_err().to_string();
    assert!(
        e.contains("lying.fgb") && e.contains("features_count = 1152921504606846976"),
        "{e}"
    );
    // The true count reads.
    let bytes = fgb_with_count(&path, 37, 37);
    assert_eq!(geo(open(&path).unwrap()).len(), 37);
    // The first feature's length prefix says 4 GB.
    let first = 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let mut bad = bytes.clone();
    bad[first..first + 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    std::fs::write(&path, &bad).unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(
        e.contains("lying.fgb") && e.contains("feature 0") && e.contains("4294967280"),
        "{e}"
    );
}

/// The bytes of a version-`major` `.npy` file with header dictionary `dict` and `data`.
fn npy_bytes(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let mut text = dict.as_bytes().to_vec();
    let pre = if major == 1 { 10 } else { 12 };
    while !(pre + text.len() + 1).is_multiple_of(64) {
        text.push(b' ');
    }
    text.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&text);
    out.extend_from_slice(data);
    out
}

/// NPY headers that lie: a 4 GB header length, a shape whose product overflows 64 bits
/// (it used to wrap and import "successfully"), a shape larger than the data. Each is an
/// error naming the file and the field; a well-formed crafted file reads.
#[test]
fn npy_headers_beyond_the_file_are_refused() {
    let dir = tmp();
    let path = file(&dir, "lying.npy");
    let data: Vec<u8> = (0..4).flat_map(|i| f64::from(i).to_le_bytes()).collect();
    let dict =
        |shape: &str| format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    std::fs::write(&path, npy_bytes(1, &dict("(2, 2)"), &data)).unwrap();
    assert_eq!(open(&path).unwrap().len(), 2);
    let mut long = npy_bytes(2, &dict("(2, 2)"), &data);
    long[8..12].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    let cases = [
        ("header length", long),
        (
            "overflow",
            npy_bytes(1, &dict("(4294967296, 4294967296, 16)"), &data),
        ),
        (
            "only 32 bytes of data",
            npy_bytes(1, &dict("(1000000, 1000000)"), &data),
        ),
        (
            "only 32 bytes of data",
            npy_bytes(1, &dict("(5, 2)"), &data),
        ),
    ];
    for (want, bytes) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let e = open(&path).unwrap_err().to_string();
        assert!(e.contains("lying.npy") && e.contains(want), "{want}: {e}");
    }
}

/// Mutated real files of every reader with a header (FlatGeobuf, NPY): byte flips,
/// truncations and overwritten length fields never panic or abort; each is read or
/// refused. Bounded here; `SPIDX_LONG_TESTS=1` runs 20,000 mutations per format.
#[test]
fn mutated_headered_files_never_panic() {
    use rand::{Rng, SeedableRng};
    let cases = if std::env::var_os("SPIDX_LONG_TESTS").is_some() {
        20_000
    } else {
        300
    };
    let dir = tmp();
    let fgb = file(&dir, "real.fgb");
    write(&fgb, &Dataset::Geo(mixed_fgb())).unwrap();
    let npy = file(&dir, "real.npy");
    let vectors = Vectors::new(3, (0..60).map(f64::from).collect()).unwrap();
    write(&npy, &Dataset::Vectors(vectors)).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(52);
    for real in [fgb, npy] {
        let clean = std::fs::read(&real).unwrap();
        let target = file(
            &dir,
            &format!("mutated.{}", real.extension().unwrap().to_str().unwrap()),
        );
        for case in 0..cases {
            let mut b = clean.clone();
            match rng.gen_range(0..4) {
                0 => {
                    for _ in 0..rng.gen_range(1..4) {
                        let i = rng.gen_range(0..b.len());
                        b[i] ^= rng.gen_range(1..=255u8);
                    }
                }
                1 => b.truncate(rng.gen_range(0..b.len())),
                _ => {
                    // A length-like field: 4 or 8 bytes near the front set to a huge value.
                    let i = rng.gen_range(0..b.len().min(256).saturating_sub(8));
                    let v: u64 = [u64::MAX, 1 << 60, 0xFFFF_FFF0, 1 << 31][rng.gen_range(0..4)];
                    let w = if rng.gen_bool(0.5) { 4 } else { 8 };
                    b[i..i + w].copy_from_slice(&v.to_le_bytes()[..w]);
                }
            }
            std::fs::write(&target, &b).unwrap();
            let got = std::panic::catch_unwind(|| open(&target).map(|_| ()));
            assert!(
                got.is_ok(),
                "{} case {case}: reading panicked",
                target.display()
            );
        }
    }
}
