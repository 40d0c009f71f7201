//! End-to-end tests of `spidx build --bulk str|hilbert|omt [--fill P]` through the real
//! binary: every method and fill gives a tree that passes `spidx check`, is filled as
//! asked, and answers windows and kNN exactly like the one-by-one tree and brute force;
//! bad values are refused with a clear error, a non-zero exit and nothing left behind.

use predicates::str::contains;
use spidx::data::{self, Dataset};

mod common;

use common::{buildings, json_of, spidx};

fn ids(v: &serde_json::Value) -> Vec<u64> {
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// Filter-step windows and kNN distances of the index in `dir`.
fn answers(dir: &str, ext: &spidx::data::Extent) -> Vec<serde_json::Value> {
    let (x0, y0, x1, y1) = (ext.min[0], ext.min[1], ext.max[0], ext.max[1]);
    let mut out = Vec::new();
    for (i, frac) in [0.03, 0.1, 0.4].iter().enumerate() {
        let (qx, qy) = (
            x0 + (x1 - x0) * 0.2 * (i + 1) as f64,
            y0 + (y1 - y0) * 0.1 * (i + 1) as f64,
        );
        let window = format!(
            "{},{},{},{}",
            qx,
            qy,
            qx + (x1 - x0) * frac,
            qy + (y1 - y0) * frac
        );
        let v = json_of(&[
            "query",
            dir,
            "--window",
            &window,
            "--filter-only",
            "--ids",
            "--json",
        ]);
        out.push(serde_json::json!(ids(&v)));
        let v = json_of(&[
            "query",
            dir,
            "--knn",
            &format!("{qx},{qy}"),
            "--k",
            "5",
            "--ids",
            "--json",
        ]);
        out.push(v["distances"].clone());
    }
    out
}

#[test]
fn every_bulk_method_and_fill_builds_a_sound_tree_that_answers_like_insertion() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = buildings(dir.path(), "2500");
    let ds = data::open(&data_path).unwrap();
    let Dataset::Geo(recs) = &ds else {
        panic!("2-D data expected")
    };
    let ext = ds.extent().unwrap();
    let one = dir.path().join("one");
    let b = json_of(&[
        "build",
        "--data",
        &data_path,
        "--index",
        "rstar",
        "--page-size",
        "1KB",
        "--out",
        one.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(b["construction"], "one-by-one insertion");
    let want = answers(one.to_str().unwrap(), &ext);
    // The first window, by brute force over the boxes.
    let (x0, y0, x1, y1) = (ext.min[0], ext.min[1], ext.max[0], ext.max[1]);
    let (qx, qy) = (x0 + (x1 - x0) * 0.2, y0 + (y1 - y0) * 0.1);
    let (qx1, qy1) = (qx + (x1 - x0) * 0.03, qy + (y1 - y0) * 0.03);
    let mut brute: Vec<u64> = recs
        .iter()
        .filter(|r| {
            let b = r.bbox;
            b.min().x <= qx1 && b.max().x >= qx && b.min().y <= qy1 && b.max().y >= qy
        })
        .map(|r| r.id)
        .collect();
    brute.sort();
    assert_eq!(want[0], serde_json::json!(brute));
    // The Hilbert R-tree, built one by one, answers the same.
    let h = dir.path().join("hilbert");
    let b = json_of(&[
        "build",
        "--data",
        &data_path,
        "--index",
        "hilbert",
        "--index-opt=siblings=3",
        "--page-size",
        "1KB",
        "--out",
        h.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(b["index"], "Hilbert R-tree s=3", "{b}");
    assert_eq!(
        json_of(&["check", h.to_str().unwrap(), "--json"])["ok"],
        true
    );
    assert_eq!(answers(h.to_str().unwrap(), &ext), want, "Hilbert R-tree");
    for method in ["str", "hilbert", "omt"] {
        let mut variants = vec![
            ("rtree", None),
            ("rstar", Some("70")),
            ("rtree", Some("55%")),
        ];
        if method == "hilbert" {
            // The Hilbert R-tree, packed in its own key order.
            variants.extend([("hilbert", None), ("hilbert", Some("80"))]);
        }
        for (index, fill) in variants {
            let out = dir
                .path()
                .join(format!("{method}-{index}-{}", fill.unwrap_or("full")));
            let o = out.to_str().unwrap();
            let mut args = vec![
                "build",
                "--data",
                &data_path,
                "--index",
                index,
                "--page-size",
                "1KB",
                "--bulk",
                method,
                "--out",
                o,
                "--json",
            ];
            if let Some(f) = fill {
                args.extend_from_slice(&["--fill", f]);
            }
            let b = json_of(&args);
            let pct = fill.map_or(100.0, |f| f.trim_end_matches('%').parse().unwrap());
            assert_eq!(
                b["construction"],
                format!("bulk load {method} fill {pct}%"),
                "{b}"
            );
            assert_eq!(b["objects"], recs.len() as u64);
            assert!(
                b["writes"].as_u64().unwrap() > 0,
                "device writes counted: {b}"
            );
            let c = json_of(&["check", o, "--json"]);
            assert_eq!(c["ok"], true, "{method} {index} {fill:?}: {c}");
            // Leaves hold what the fill factor asks: on average ⌊fill × M⌋ entries, give or
            // take the last few of the level, which share their entries evenly.
            let leaf_max = b["capacity"]["leaf_max"].as_f64().unwrap();
            let leaves = &c["report"]["levels"][0];
            let fill_got = leaves["entries"].as_f64().unwrap()
                / (leaves["nodes"].as_f64().unwrap() * leaf_max);
            let target = (pct / 100.0 * leaf_max).floor() / leaf_max;
            assert!(
                fill_got <= target + 1.0 / leaf_max && fill_got > target * 0.9,
                "{method} {index} {fill:?}: leaf fill {fill_got}, target {target}"
            );
            assert_eq!(answers(o, &ext), want, "{method} {index} {fill:?}");
        }
    }
}

#[test]
fn bad_bulk_values_are_refused_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = buildings(dir.path(), "2500");
    let cases: &[(&[&str], &str)] = &[
        (&["--bulk", "cubic"], "unknown bulk-loading method 'cubic'"),
        (&["--bulk", ""], "unknown bulk-loading method"),
        (&["--bulk", "str", "--fill", "0"], "fill"),
        (&["--bulk", "omt", "--fill", "150%"], "fill"),
        (&["--bulk", "hilbert", "--fill", "abc"], "--fill"),
        (&["--bulk", "str", "--fill", "10"], "below the minimum"),
        (&["--fill", "70"], "--fill applies to --bulk only"),
        (
            &["--index", "hilbert", "--bulk", "str"],
            "which STR (cutting by coordinates) does not follow; bulk load it by hilbert",
        ),
        (
            &["--index", "hilbert", "--bulk", "omt"],
            "which OMT (cutting by coordinates) does not follow",
        ),
        (
            &["--index", "hilbert", "--index-opt=siblings=0"],
            "--index-opt siblings",
        ),
        (
            &["--index", "hilbert", "--index-opt=extent=5"],
            "invalid --index-opt extent",
        ),
        (
            &["--index", "rstar", "--index-opt=siblings=2"],
            "applies to --index hilbert only",
        ),
    ];
    for (n, (extra, msg)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("bad{n}"));
        let index: &[&str] = if extra.contains(&"--index") {
            &[]
        } else {
            &["--index", "rtree"]
        };
        spidx()
            .args(["build", "--data", &data_path])
            .args(index)
            .arg("--out")
            .arg(&out)
            .args(*extra)
            .assert()
            .failure()
            .stderr(contains(*msg));
        assert!(
            !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
            "{extra:?} left {} behind",
            out.display()
        );
    }
    // An existing index is never overwritten by a bulk load.
    let out = dir.path().join("kept");
    let o = out.to_str().unwrap();
    json_of(&[
        "build", "--data", &data_path, "--index", "rtree", "--out", o, "--json",
    ]);
    spidx()
        .args([
            "build", "--data", &data_path, "--index", "rtree", "--bulk", "str", "--out", o,
        ])
        .assert()
        .failure()
        .stderr(contains("not empty"));
    assert_eq!(json_of(&["check", o, "--json"])["ok"], true);
}
