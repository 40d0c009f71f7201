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
