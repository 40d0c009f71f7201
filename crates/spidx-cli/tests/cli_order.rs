//! End-to-end tests of insertion orders (`--order` of `spidx build` and `spidx dataset
//! generate`) and of the write-back buffer's validation, through the real binary.

use predicates::str::contains;
use spidx::data::{self, Dataset, InsertionOrder};

mod common;

use common::{json_of, spidx};

/// Writes `count` generated objects of `distribution` to `path`.
fn generate(path: &str, distribution: &str, count: &str) {
    spidx()
        .args(["dataset", "generate", "--distribution", distribution])
        .args(["--count", count, "--out", path])
        .assert()
        .success();
}

fn ids(ds: &Dataset) -> Vec<u64> {
    ds.as_geo().unwrap().iter().map(|r| r.id).collect()
}

#[test]
fn generate_writes_the_objects_in_the_chosen_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let gen = |order: &str, out: &str| {
        json_of(&[
            "dataset",
            "generate",
            "--distribution",
            "buildings",
            "--count",
            "2000",
            "--order",
            order,
            "--json",
            "--out",
            &path(out),
        ])
    };
    gen("as-stored", "a.fgb");
    let v = gen("clustered:100:3", "c.fgb");
    assert_eq!(v["order"], "clustered:100:3");
    let stored = data::open(path("a.fgb")).unwrap();
    let clustered = data::open(path("c.fgb")).unwrap();
    // The same objects, in the order the library computes for the stored dataset.
    let mut expected = stored.clone();
    "clustered:100:3"
        .parse::<InsertionOrder>()
        .unwrap()
        .apply(&mut expected)
        .unwrap();
    assert_eq!(ids(&clustered), ids(&expected));
    assert_ne!(ids(&clustered), ids(&stored));
    let mut sorted = ids(&clustered);
    sorted.sort_unstable();
    assert_eq!(sorted, (0..2000).collect::<Vec<u64>>());
}

#[test]
fn build_reports_its_order_and_refuses_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = dir.path().join("b.fgb");
    let d = data_path.to_str().unwrap();
    generate(d, "buildings", "3000");
    let out = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let build = |order: &str, o: &str| {
        json_of(&[
            "build",
            "--data",
            d,
            "--index",
            "rtree",
            "--index-opt=split=linear",
            "--device",
            "memory",
            "--buffer",
            "lru:64KB",
            "--order",
            order,
            "--json",
            "--out",
            &out(o),
        ])
    };
    let stored = build("as-stored", "i1");
    let hilbert = build("hilbert", "i2");
    assert_eq!(stored["order"], "as-stored");
    assert_eq!(hilbert["order"], "hilbert");
    assert_eq!(stored["objects"], 3000);
    assert_eq!(hilbert["objects"], 3000);
    // A spatially local order makes the page buffer absorb most node writes' reads.
    assert!(
        hilbert["reads"].as_u64().unwrap() < stored["reads"].as_u64().unwrap(),
        "{} vs {}",
        hilbert["reads"],
        stored["reads"]
    );
    for (order, msg) in [
        ("zorder", "unknown insertion order 'zorder'"),
        ("clustered:0", "clustered window 0"),
        ("hilbert:5", "takes no parameter"),
        ("shuffled:x", "seed 'x'"),
    ] {
        spidx()
            .args([
                "build", "--data", d, "--index", "rtree", "--order", order, "--out",
            ])
            .arg(out("bad"))
            .assert()
            .failure()
            .stderr(contains(msg));
    }
    assert!(!dir.path().join("bad").exists());
}

#[test]
fn write_back_buffer_under_fast_is_refused_and_help_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = dir.path().join("b.fgb");
    let d = data_path.to_str().unwrap();
    generate(d, "uniform", "500");
    spidx()
        .args([
            "build",
            "--data",
            d,
            "--index",
            "rtree",
            "--store",
            "fast",
            "--write-buffer",
            "64KB",
            "--store-opt",
            "flushing_unit=2",
            "--store-opt",
            "flush_policy=fast-star",
            "--buffer",
            "lru:256KB:write-back",
            "--out",
        ])
        .arg(dir.path().join("i"))
        .assert()
        .failure()
        .stderr(contains(
            "write-back page buffer (lru:256KB:write-back) has no effect under the FAST store",
        ));
    spidx()
        .args(["build", "--help"])
        .assert()
        .success()
        .stdout(contains("[:write-back]"));
}
