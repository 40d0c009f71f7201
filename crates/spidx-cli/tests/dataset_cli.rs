//! End-to-end tests of `spidx dataset generate | import | info`.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

fn spidx() -> Command {
    Command::cargo_bin("spidx").unwrap()
}

fn json_of(cmd: &mut Command) -> Value {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("JSON output")
}

fn info(path: &Path) -> Value {
    json_of(spidx().args(["dataset", "info", "--json"]).arg(path))
}

#[test]
fn generate_buildings_then_info() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b.fgb");
    spidx()
        .args([
            "dataset",
            "generate",
            "--distribution",
            "buildings",
            "--count",
            "5k",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "generated 5000 building footprints",
        ));
    let v = info(&out);
    assert_eq!(v["format"], "flatgeobuf");
    assert_eq!(v["info"]["count"], 5000);
    assert_eq!(v["info"]["dims"], 2);
    let g = &v["info"]["geometry"];
    assert!(g["kinds"]["multipolygon"].as_u64().unwrap() > 50);
    assert!(g["holes"].as_u64().unwrap() > 100);
    assert!(g["vertices"]["min"].as_f64().unwrap() >= 5.0);
    let ext = &v["info"]["extent"];
    assert!(ext["min"][0].as_f64().unwrap() >= 0.0);
    assert!(ext["max"][1].as_f64().unwrap() <= 1e6);
    assert_eq!(v["read"]["records_kept"], 5000);
    // Text output names the essentials.
    spidx()
        .args(["dataset", "info"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("count:       5000"))
        .stdout(predicate::str::contains("holes:"))
        .stdout(predicate::str::contains("multipolygon"));
}

#[test]
fn generation_is_deterministic_per_seed() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: &str| {
        let p = dir.path().join(name);
        spidx()
            .args([
                "dataset",
                "generate",
                "--distribution",
                "clustered",
                "--count",
                "2000",
            ])
            .args(["--seed", seed, "--out"])
            .arg(&p)
            .assert()
            .success();
        std::fs::read(p).unwrap()
    };
    assert_eq!(run("a.fgb", "1"), run("b.fgb", "1"));
    assert_ne!(run("c.fgb", "1"), run("d.fgb", "2"));
    assert_eq!(run("a.geojson", "3"), run("b.geojson", "3"));
}

#[test]
fn generate_vectors_as_npy() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.npy");
    let v = json_of(
        spidx()
            .args([
                "dataset",
                "generate",
                "--distribution",
                "uniform",
                "--count",
                "1000",
            ])
            .args(["--dims", "10", "--json", "--out"])
            .arg(&out),
    );
    assert_eq!(
        (v["count"].as_u64(), v["dims"].as_u64()),
        (Some(1000), Some(10))
    );
    let i = info(&out);
    assert_eq!(i["info"]["kind"], "vectors");
    assert_eq!(i["info"]["dims"], 10);
    let mins = i["info"]["vectors"]["min"].as_array().unwrap();
    let maxs = i["info"]["vectors"]["max"].as_array().unwrap();
    assert_eq!(mins.len(), 10);
    assert!(mins.iter().all(|m| m.as_f64().unwrap() >= 0.0));
    assert!(maxs.iter().all(|m| m.as_f64().unwrap() < 1.0));
}

#[test]
fn bad_generate_options_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let fail = |args: &[&str], out: &str, needle: &str| {
        spidx()
            .args(["dataset", "generate"])
            .args(args)
            .arg("--out")
            .arg(dir.path().join(out))
            .assert()
            .failure()
            .stderr(predicate::str::contains(needle));
    };
    fail(
        &["--distribution", "uniform", "--count", "10", "--dims", "3"],
        "x.fgb",
        ".npy",
    );
    fail(
        &["--distribution", "uniform", "--count", "10"],
        "x.gpkg",
        ".fgb",
    );
    fail(
        &["--distribution", "zipf", "--count", "10"],
        "x.fgb",
        "uniform, gaussian",
    );
    fail(
        &["--distribution", "uniform", "--count", "0"],
        "x.fgb",
        "count",
    );
    fail(
        &["--distribution", "uniform", "--count", "ten"],
        "x.fgb",
        "not a count",
    );
    fail(
        &["--distribution", "buildings", "--count", "10"],
        "x.npy",
        "buildings",
    );
    fail(
        &[
            "--distribution",
            "uniform",
            "--count",
            "10",
            "--max-side",
            "2",
        ],
        "x.fgb",
        "max-side",
    );
    assert!(!dir.path().join("x.fgb").exists());
}

#[test]
fn import_messy_wkt_reports_every_skip_and_repair() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("messy.wkt");
    std::fs::write(
        &src,
        "POLYGON((0 0,10 0,10 10,0 10))\n\
         POLYGON((0 0,1 1,0 0))\n\
         POLYGON((0 0,1e999 0,1 1,0 0))\n\
         POLYGON EMPTY\n\
         POINT(3 4)\n\
         not wkt at all\n",
    )
    .unwrap();
    let out = dir.path().join("clean.fgb");
    let v = json_of(
        spidx()
            .args(["dataset", "import", "--json"])
            .arg(&src)
            .arg("--out")
            .arg(&out),
    );
    let r = &v["report"];
    assert_eq!(r["records_read"], 6);
    assert_eq!(r["records_kept"], 2);
    assert_eq!(r["repaired"]["closed_ring"], 1);
    assert_eq!(r["skipped"]["ring_too_short"], 1);
    assert_eq!(r["skipped"]["non_finite_coordinate"], 1);
    assert_eq!(r["skipped"]["empty_geometry"], 1);
    assert_eq!(r["skipped"]["unparsable"], 1);
    assert!(r["examples"][0].as_str().unwrap().starts_with("line 1"));
    assert_eq!(info(&out)["info"]["count"], 2);
    // Text summary, and only polygons on request.
    let out2 = dir.path().join("polys.geojson");
    spidx()
        .args(["dataset", "import", "--polygons-only"])
        .arg(&src)
        .arg("--out")
        .arg(&out2)
        .assert()
        .success()
        .stdout(predicate::str::contains("not polygonal"))
        .stdout(predicate::str::contains("closed ring"))
        .stdout(predicate::str::contains("wrote 1 records"));
}

#[test]
fn import_geojson_with_renumbering_and_format_override() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.txt");
    std::fs::write(
        &src,
        r#"{"type":"FeatureCollection","features":[
        {"type":"Feature","id":9,"properties":{},"geometry":{"type":"Point","coordinates":[1,2]}},
        {"type":"Feature","id":9,"properties":{},"geometry":{"type":"Point","coordinates":[3,4]}}]}"#,
    )
    .unwrap();
    let out = dir.path().join("out.wkt");
    spidx()
        .args(["dataset", "import"])
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .assert()
        .failure()
        .stderr(predicate::str::contains("in.txt"));
    spidx()
        .args(["dataset", "import", "--format", "geojson", "--renumber"])
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "POINT(1 2)\nPOINT(3 4)\n"
    );
    // Without --renumber, repeated ids are refused (an index keeps one geometry per id),
    // and the output written before is left as it was (even with --force to replace it).
    spidx()
        .args(["dataset", "import", "--format", "geojson", "--force"])
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "id 9 at feature 1, already at feature 0",
        ))
        .stderr(predicate::str::contains("--renumber"));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "POINT(1 2)\nPOINT(3 4)\n"
    );
    // `dataset info` (inspection) counts them as a warning.
    spidx()
        .args(["dataset", "info", "--format", "geojson"])
        .arg(&src)
        .assert()
        .success()
        .stdout(predicate::str::contains("duplicate id"));
    // `build --data` refuses them too, before building anything.
    let named = dir.path().join("dup.geojson");
    std::fs::copy(&src, &named).unwrap();
    spidx()
        .args(["build", "--index", "rtree", "--data"])
        .arg(&named)
        .arg("--out")
        .arg(dir.path().join("idx"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("already at feature 0"));
}

#[test]
fn unusable_inputs_exit_non_zero_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.fgb");
    // Nothing usable.
    let src = dir.path().join("empty.wkt");
    std::fs::write(&src, "POLYGON EMPTY\n").unwrap();
    spidx()
        .args(["dataset", "import"])
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .assert()
        .failure()
        .stderr(predicate::str::contains("no usable records in"))
        .stderr(predicate::str::contains("empty.wkt"));
    assert!(!out.exists());
    // Truncated file.
    let good = dir.path().join("g.fgb");
    spidx()
        .args([
            "dataset",
            "generate",
            "--distribution",
            "uniform",
            "--count",
            "100",
            "--out",
        ])
        .arg(&good)
        .assert()
        .success();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&good, &bytes[..bytes.len() - 10]).unwrap();
    spidx()
        .args(["dataset", "info"])
        .arg(&good)
        .assert()
        .failure()
        .stderr(predicate::str::contains("g.fgb"))
        .stderr(predicate::str::contains("truncated"));
    // Missing file, unknown format, unwritable output format.
    spidx()
        .args(["dataset", "info"])
        .arg(dir.path().join("nope.geojson"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("nope.geojson"));
    spidx()
        .args(["dataset", "info"])
        .arg(dir.path().join("x.kml"))
        .assert()
        .failure()
        .stderr(predicate::str::contains(".osm.pbf"));
    spidx()
        .args(["dataset", "import"])
        .arg(&src)
        .arg("--out")
        .arg(dir.path().join("x.shp"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("can read but not write"));
}

/// The memory guard reads the process's own limits: under `ulimit -v` (3 GB of address
/// space) a dataset of about 6 GB is a clear error, not an abort by the allocator.
#[test]
fn generate_respects_the_address_space_limit() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("spidx");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 3000000 && exec '{}' dataset generate --distribution uniform \
             --count 40M --out '{}'",
            bin.display(),
            dir.path().join("u.fgb").display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // A non-zero exit code, not a signal (an allocator abort has no code).
    assert!(
        out.status.code().is_some_and(|c| c != 0),
        "{:?}: {err}",
        out.status
    );
    assert!(
        err.contains("GiB of memory") && err.contains("lower the count"),
        "exit {:?}: {err}",
        out.status
    );
}
