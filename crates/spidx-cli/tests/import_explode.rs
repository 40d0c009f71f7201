//! The importers end to end, at the size of real extracts: a 100,000-feature GeoJSON text
//! sequence and a 100,000-part MultiPolygon in binary WKB imported with `--explode` become
//! indices whose answers equal brute force over the objects the test wrote.
//!
//! `spidx build --data` reads with the same options (`--explode`, `--renumber`): a multi-part
//! WKB and a GeoJSON of MultiPolygons and GeometryCollections built directly answer like brute
//! force over their parts, and the options are refused where they mean nothing (NPY vectors).
//!
//! The input files are written here byte by byte (not with spidx's writers), so the readers
//! are checked against an independent encoding. Bounded: a few seconds per case in the test
//! profile.

use assert_cmd::Command;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

const N: usize = 100_000;
const QUERIES: usize = 12;

fn spidx() -> Command {
    Command::cargo_bin("spidx").unwrap()
}

fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("JSON output")
}

/// An axis-aligned box [x0, x1] × [y0, y1].
#[derive(Clone, Copy)]
struct Box2 {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Box2 {
    fn intersects(&self, o: &Box2) -> bool {
        self.x0 <= o.x1 && o.x0 <= self.x1 && self.y0 <= o.y1 && o.y0 <= self.y1
    }
    fn ring(&self) -> [(f64, f64); 5] {
        [
            (self.x0, self.y0),
            (self.x1, self.y0),
            (self.x1, self.y1),
            (self.x0, self.y1),
            (self.x0, self.y0),
        ]
    }
}

/// `n` random small boxes in [0, 1000]² (side up to 2), never touching a query window's
/// edge exactly (coordinates are random doubles), so exact and box answers agree.
fn boxes(seed: u64, n: usize) -> Vec<Box2> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let (x, y) = (rng.gen_range(0.0..1000.0), rng.gen_range(0.0..1000.0));
            let (w, h) = (rng.gen_range(0.01..2.0), rng.gen_range(0.01..2.0));
            Box2 {
                x0: x,
                y0: y,
                x1: x + w,
                y1: y + h,
            }
        })
        .collect()
}

fn windows(seed: u64) -> Vec<Box2> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..QUERIES)
        .map(|i| {
            // Sides from 1 to ~60 units: from a handful of answers to about a thousand.
            let side = 1.0 + (i as f64) * 5.0 + rng.gen_range(0.0..1.0);
            let (x, y) = (rng.gen_range(0.0..940.0), rng.gen_range(0.0..940.0));
            Box2 {
                x0: x,
                y0: y,
                x1: x + side,
                y1: y + side,
            }
        })
        .collect()
}

/// Builds an R*-tree over `data` and checks every window's ids against `expected`.
fn build_and_check(dir: &Path, data: &Path, truth: &[(u64, Box2)]) {
    let truth: Vec<(u64, Vec<Box2>)> = truth.iter().map(|(id, b)| (*id, vec![*b])).collect();
    build_with_and_check(dir, data, &[], &truth);
}

/// Builds an R*-tree over `data` with the extra `build` arguments `args` and checks every
/// window's ids against brute force over `truth`: an object (one or more boxes, the parts
/// of a multi-part geometry) answers a window when one of its parts meets it.
fn build_with_and_check(dir: &Path, data: &Path, args: &[&str], truth: &[(u64, Vec<Box2>)]) {
    let idx = dir.join("idx");
    let _ = std::fs::remove_dir_all(&idx);
    let b = json_of(
        spidx()
            .args(["build", "--index", "rstar", "--json", "--data"])
            .arg(data)
            .args(args)
            .arg("--out")
            .arg(&idx),
    );
    assert_eq!(b["objects"].as_u64(), Some(truth.len() as u64), "{b}");
    let mut nonempty = 0;
    for w in windows(7) {
        let expected: BTreeSet<u64> = truth
            .iter()
            .filter(|(_, parts)| parts.iter().any(|b| b.intersects(&w)))
            .map(|(id, _)| *id)
            .collect();
        nonempty += usize::from(!expected.is_empty());
        let window = format!("{},{},{},{}", w.x0, w.y0, w.x1, w.y1);
        let v = json_of(
            spidx()
                .arg("query")
                .arg(&idx)
                .args(["--window", &window, "--ids", "--json"]),
        );
        let got: BTreeSet<u64> = v["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|x| x.as_u64().expect("integer id"))
            .collect();
        assert_eq!(got, expected, "window {window} ({args:?})");
    }
    assert!(nonempty >= QUERIES / 2, "the windows must find objects");
}

#[test]
fn geojsonseq_of_100k_features_answers_like_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("extract.geojsonl");
    let shapes = boxes(1, N);
    // Ids as an OSM extract has them: large, sparse, some beyond 2^53 (exact as integers).
    let id_of = |i: usize| (1u64 << 62) + 3 * i as u64 + 1;
    let mut f = std::io::BufWriter::new(std::fs::File::create(&src).unwrap());
    for (i, b) in shapes.iter().enumerate() {
        let ring: Vec<String> = b.ring().iter().map(|(x, y)| format!("[{x},{y}]")).collect();
        writeln!(
            f,
            r#"{{"type":"Feature","id":{},"properties":{{"name":"f{i}"}},"geometry":{{"type":"Polygon","coordinates":[[{}]]}}}}"#,
            id_of(i),
            ring.join(",")
        )
        .unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let fgb = dir.path().join("extract.fgb");
    let v = json_of(
        spidx()
            .args(["dataset", "import", "--json"])
            .arg(&src)
            .arg("--out")
            .arg(&fgb),
    );
    assert_eq!(v["report"]["format"], "geojsonseq");
    assert_eq!(v["report"]["records_read"], N as u64);
    assert_eq!(v["report"]["records_kept"], N as u64);
    let truth: Vec<(u64, Box2)> = shapes
        .iter()
        .enumerate()
        .map(|(i, b)| (id_of(i), *b))
        .collect();
    build_and_check(dir.path(), &fgb, &truth);
}

/// Binary WKB (little endian) of one MultiPolygon whose parts are `parts`.
fn multipolygon_wkb(parts: &[Box2]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + parts.len() * 102);
    out.push(1u8);
    out.extend_from_slice(&6u32.to_le_bytes());
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for b in parts {
        out.push(1u8);
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&5u32.to_le_bytes());
        for (x, y) in b.ring() {
            out.extend_from_slice(&x.to_le_bytes());
            out.extend_from_slice(&y.to_le_bytes());
        }
    }
    out
}

#[test]
fn multipolygon_of_100k_parts_exploded_answers_like_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("landmask.wkb");
    let parts = boxes(2, N);
    std::fs::write(&src, multipolygon_wkb(&parts)).unwrap();
    // Without --explode the file is one object.
    let whole = dir.path().join("whole.fgb");
    let v = json_of(
        spidx()
            .args(["dataset", "import", "--json"])
            .arg(&src)
            .arg("--out")
            .arg(&whole),
    );
    assert_eq!(v["report"]["records_kept"], 1);
    assert_eq!(v["report"]["kinds"]["multipolygon"], 1);
    // With it, part i is object i.
    let out = dir.path().join("parts.fgb");
    let v = json_of(
        spidx()
            .args(["dataset", "import", "--explode", "--json"])
            .arg(&src)
            .arg("--out")
            .arg(&out),
    );
    assert_eq!(v["report"]["records_read"], 1);
    assert_eq!(v["report"]["records_kept"], N as u64);
    assert_eq!(v["report"]["exploded"], 1);
    assert_eq!(v["report"]["kinds"]["polygon"], N as u64);
    let truth: Vec<(u64, Box2)> = parts
        .iter()
        .enumerate()
        .map(|(i, b)| (i as u64, *b))
        .collect();
    build_and_check(dir.path(), &out, &truth);
}

/// `spidx build --data` on a binary WKB MultiPolygon: `--explode` indexes part i as object
/// i (no import step), without it the file is one object.
#[test]
fn build_explodes_a_multipart_wkb_directly() {
    const PARTS: usize = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("landmask.wkb");
    let parts = boxes(3, PARTS);
    std::fs::write(&src, multipolygon_wkb(&parts)).unwrap();
    let truth: Vec<(u64, Vec<Box2>)> = parts
        .iter()
        .enumerate()
        .map(|(i, b)| (i as u64, vec![*b]))
        .collect();
    build_with_and_check(dir.path(), &src, &["--explode"], &truth);
    let b = json_of(
        spidx()
            .args(["build", "--index", "rstar", "--json", "--data"])
            .arg(&src)
            .arg("--out")
            .arg(dir.path().join("whole")),
    );
    assert_eq!(b["objects"], 1, "{b}");
    assert_eq!(b["exploded_records"], 0, "{b}");
}

/// A GeoJSON of multi-part features, all with the same id (as a careless export has them):
/// refused as it is, built feature by feature with `--renumber`, part by part with
/// `--explode` (with or without `--renumber`, which it implies), each answering like brute
/// force.
#[test]
fn build_reads_geojson_with_renumber_and_explode() {
    const FEATURES: usize = 3_000;
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("parts.geojson");
    let all = boxes(4, FEATURES * 4);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut features: Vec<Vec<Box2>> = Vec::new();
    let mut next = 0;
    let mut json = String::from(r#"{"type":"FeatureCollection","features":["#);
    let polygon = |b: &Box2| {
        let ring: Vec<String> = b.ring().iter().map(|(x, y)| format!("[{x},{y}]")).collect();
        format!("[[{}]]", ring.join(","))
    };
    for i in 0..FEATURES {
        let n = rng.gen_range(1..=4);
        let parts = all[next..next + n].to_vec();
        next += n;
        let geometry = match i % 3 {
            0 => format!(
                r#"{{"type":"MultiPolygon","coordinates":[{}]}}"#,
                parts.iter().map(polygon).collect::<Vec<_>>().join(",")
            ),
            // A collection of a Polygon and a MultiPolygon of the rest: parts flatten.
            1 => {
                let rest: Vec<String> = parts[1..].iter().map(polygon).collect();
                let mut members = vec![format!(
                    r#"{{"type":"Polygon","coordinates":{}}}"#,
                    polygon(&parts[0])
                )];
                if !rest.is_empty() {
                    members.push(format!(
                        r#"{{"type":"MultiPolygon","coordinates":[{}]}}"#,
                        rest.join(",")
                    ));
                }
                format!(
                    r#"{{"type":"GeometryCollection","geometries":[{}]}}"#,
                    members.join(",")
                )
            }
            _ => format!(
                r#"{{"type":"MultiPolygon","coordinates":[{}]}}"#,
                parts.iter().map(polygon).collect::<Vec<_>>().join(",")
            ),
        };
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"type":"Feature","id":7,"properties":{{}},"geometry":{geometry}}}"#
        ));
        features.push(parts);
    }
    json.push_str("]}");
    std::fs::write(&src, json).unwrap();
    let multi = features.iter().filter(|p| p.len() > 1).count() as u64;
    assert!(multi > 1000);

    // As it is: one geometry per id is impossible; the error names the way out.
    spidx()
        .args(["build", "--index", "rstar", "--data"])
        .arg(&src)
        .arg("--out")
        .arg(dir.path().join("refused"))
        .assert()
        .failure()
        .stderr(predicates::str::contains("reuse the id"));
    assert!(!dir.path().join("refused").exists());

    // --renumber: feature i is object i, whole.
    let whole: Vec<(u64, Vec<Box2>)> = features
        .iter()
        .enumerate()
        .map(|(i, p)| (i as u64, p.clone()))
        .collect();
    build_with_and_check(dir.path(), &src, &["--renumber"], &whole);

    // --explode: the parts numbered in order, a feature's parts consecutive.
    let exploded: Vec<(u64, Vec<Box2>)> = features
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, b)| (i as u64, vec![*b]))
        .collect();
    assert_eq!(exploded.len(), next);
    build_with_and_check(dir.path(), &src, &["--explode"], &exploded);
    build_with_and_check(dir.path(), &src, &["--explode", "--renumber"], &exploded);
    let b = json_of(
        spidx()
            .args(["build", "--index", "rstar", "--json", "--explode", "--data"])
            .arg(&src)
            .arg("--out")
            .arg(dir.path().join("count")),
    );
    assert_eq!(b["exploded_records"], multi, "{b}");
}

/// NPY vectors have no parts: `--explode` is refused by `build` and by `dataset import`
/// with an error naming the file and the option, and nothing is created.
#[test]
fn explode_on_vectors_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("v.npy");
    spidx()
        .args(["dataset", "generate", "--distribution", "uniform"])
        .args(["--count", "200", "--dims", "3", "--out"])
        .arg(&npy)
        .assert()
        .success();
    let idx = dir.path().join("idx");
    let out = spidx()
        .args(["build", "--index", "rstar", "--explode", "--data"])
        .arg(&npy)
        .arg("--out")
        .arg(&idx)
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("v.npy") && err.contains("no parts to explode"),
        "{err}"
    );
    assert!(!idx.exists());
    let copy = dir.path().join("copy.npy");
    spidx()
        .args(["dataset", "import", "--explode"])
        .arg(&npy)
        .arg("--out")
        .arg(&copy)
        .assert()
        .failure()
        .stderr(predicates::str::contains("no parts to explode"));
    assert!(!copy.exists());
    // --renumber holds trivially (a vector's id is its row) and is accepted.
    let b = json_of(
        spidx()
            .args([
                "build",
                "--index",
                "rstar",
                "--json",
                "--renumber",
                "--data",
            ])
            .arg(&npy)
            .arg("--out")
            .arg(&idx),
    );
    assert_eq!(b["objects"], 200, "{b}");
}
