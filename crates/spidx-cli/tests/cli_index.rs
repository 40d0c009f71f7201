//! End-to-end tests of `spidx build`, `query` and `check` through the real binary, with
//! answers compared against brute force over the dataset.

use geo::{Distance, Euclidean};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;
use spidx::data::{self, Dataset};
use spidx::query::Predicate;

mod common;

use common::{assert_build_refused, generate, json_of, spidx};

fn ids(v: &serde_json::Value) -> Vec<u64> {
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn build_query_check_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = generate(
        dir.path(),
        "b.fgb",
        &[
            "--distribution",
            "buildings",
            "--count",
            "3000",
            "--dims",
            "2",
        ],
    );
    let ds = data::open(&data_path).unwrap();
    let Dataset::Geo(recs) = &ds else {
        panic!("2-D data expected")
    };
    let ext = ds.extent().unwrap();
    let (x0, y0, x1, y1) = (ext.min[0], ext.min[1], ext.max[0], ext.max[1]);
    let configs: &[&[&str]] = &[
        &[
            "--index",
            "rtree",
            "--index-opt=split=linear",
            "--device",
            "memory",
        ],
        &[
            "--index",
            "rtree",
            "--index-opt=split=greene",
            "--page-size",
            "1KB",
            "--device",
            "hdd-7200",
            "--buffer",
            "lru:64KB",
        ],
        &[
            "--index",
            "rstar",
            "--index-opt=reinsert=30",
            "--device",
            "flashdbsim",
            "--buffer",
            "2q:128KB",
        ],
        &[
            "--index",
            "rstar",
            "--index-opt=reinsert=20%",
            "--index-opt=reinsert_policy=far",
            "--layout",
            "seed",
            "--page-size",
            "2KB",
            "--device",
            "ssd-v300",
        ],
    ];
    for (n, cfg) in configs.iter().enumerate() {
        let out = dir.path().join(format!("idx{n}"));
        let mut args = vec![
            "build",
            "--data",
            &data_path,
            "--out",
            out.to_str().unwrap(),
            "--json",
        ];
        args.extend_from_slice(cfg);
        let b = json_of(&args);
        for key in [
            "objects",
            "height",
            "nodes",
            "cpu_s",
            "device_s",
            "elapsed_s",
            "reads",
            "writes",
            "device",
            "final_flush",
            "store",
        ] {
            assert!(b.get(key).is_some(), "build JSON lacks {key}: {b}");
        }
        assert_eq!(b["store"]["kind"], "direct", "{b}");
        assert_eq!(b["store"]["gauges"]["pages_in_use"], b["nodes"], "{b}");
        assert_eq!(b["objects"], recs.len() as u64);
        let c = json_of(&["check", out.to_str().unwrap(), "--json"]);
        assert_eq!(c["ok"], true, "{c}");
        let dirs = out.to_str().unwrap();
        for (i, frac) in [0.05, 0.2, 0.5].iter().enumerate() {
            let (w, h) = ((x1 - x0) * frac, (y1 - y0) * frac);
            let (qx, qy) = (
                x0 + (x1 - x0) * 0.1 * (i + 1) as f64,
                y0 + (y1 - y0) * 0.15 * (i + 1) as f64,
            );
            let q = geo::Rect::new((qx, qy), (qx + w, qy + h));
            let window = format!("{},{},{},{}", qx, qy, qx + w, qy + h);
            for pred in ["intersects", "within", "contains", "disjoint", "touches"] {
                let v = json_of(&[
                    "query",
                    dirs,
                    "--window",
                    &window,
                    "--predicate",
                    pred,
                    "--ids",
                    "--json",
                ]);
                let p = Predicate::parse(pred).unwrap();
                let qg = geo::Geometry::Rect(q);
                let mut want: Vec<u64> = recs
                    .iter()
                    .filter(|r| p.eval(&r.geometry, &qg).unwrap())
                    .map(|r| r.id)
                    .collect();
                want.sort();
                assert_eq!(ids(&v), want, "config {n}, {pred} {window}");
                assert_eq!(v["results"], want.len() as u64);
                assert!(v["candidates"].as_u64().unwrap() >= want.len() as u64);
            }
            let v = json_of(&[
                "query",
                dirs,
                "--window",
                &window,
                "--filter-only",
                "--ids",
                "--json",
            ]);
            let mut want: Vec<u64> = recs
                .iter()
                .filter(|r| {
                    let b = r.bbox;
                    b.min().x <= qx + w && b.max().x >= qx && b.min().y <= qy + h && b.max().y >= qy
                })
                .map(|r| r.id)
                .collect();
            want.sort();
            assert_eq!(ids(&v), want, "filter-only, config {n}");
        }
        // Point queries: a vertex of an object is on it.
        let r = &recs[recs.len() / 2];
        let c = r.bbox.center();
        let v = json_of(&[
            "query",
            dirs,
            "--point",
            &format!("{},{}", c.x, c.y),
            "--ids",
            "--json",
        ]);
        let pt = geo::Geometry::Point(geo::Point::new(c.x, c.y));
        let mut want: Vec<u64> = recs
            .iter()
            .filter(|o| Predicate::Intersects.eval(&o.geometry, &pt).unwrap())
            .map(|o| o.id)
            .collect();
        want.sort();
        assert_eq!(ids(&v), want);
        // kNN with exact distances.
        let (px, py) = ((x0 + x1) / 2.0, (y0 + y1) / 3.0);
        let v = json_of(&[
            "query",
            dirs,
            "--knn",
            &format!("{px},{py}"),
            "--k",
            "7",
            "--ids",
            "--json",
        ]);
        let p = geo::Geometry::Point(geo::Point::new(px, py));
        let mut all: Vec<(f64, u64)> = recs
            .iter()
            .map(|o| (Euclidean.distance(&p, &o.geometry), o.id))
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let got: Vec<f64> = v["distances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_f64().unwrap())
            .collect();
        let want: Vec<f64> = all[..7].iter().map(|x| x.0).collect();
        assert_eq!(got, want, "kNN distances, config {n}");
    }
}

#[test]
fn vectors_knn_matches_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = generate(
        dir.path(),
        "v.npy",
        &[
            "--distribution",
            "uniform",
            "--count",
            "2000",
            "--dims",
            "10",
        ],
    );
    let out = dir.path().join("vidx");
    let b = json_of(&[
        "build",
        "--data",
        &data_path,
        "--index",
        "rstar",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(b["dims"], 10);
    assert_eq!(
        json_of(&["check", out.to_str().unwrap(), "--json"])["ok"],
        true
    );
    let ds = data::open(&data_path).unwrap();
    let v = ds.as_vectors().unwrap();
    let q = [0.5; 10];
    let qs = q
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let r = json_of(&[
        "query",
        out.to_str().unwrap(),
        "--knn",
        &qs,
        "--k",
        "5",
        "--ids",
        "--json",
    ]);
    let mut all: Vec<(f64, u64)> = v
        .rows()
        .enumerate()
        .map(|(i, row)| {
            (
                row.iter()
                    .zip(q)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
                    .sqrt(),
                i as u64,
            )
        })
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    assert_eq!(ids(&r), all[..5].iter().map(|x| x.1).collect::<Vec<_>>());
}

#[test]
fn bad_input_fails_clearly_and_corruption_names_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = generate(
        dir.path(),
        "u.fgb",
        &[
            "--distribution",
            "uniform",
            "--count",
            "1500",
            "--dims",
            "2",
        ],
    );
    let out = dir.path().join("x");
    let o = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--index", "btree"], "unknown index 'btree'"),
        (
            &["--index", "rstar", "--index-opt=split=linear"],
            "invalid --index-opt split: applies to --index rtree only",
        ),
        (
            &["--index", "rtree", "--index-opt=reinsert=30"],
            "invalid --index-opt reinsert: applies to --index rstar only",
        ),
        (
            &["--index", "rtree", "--index-opt=split=cubic"],
            "invalid --index-opt split: unknown variant `cubic`",
        ),
        (&["--index", "rtree", "--page-size", "3000"], "page size"),
        (
            &["--index", "rtree", "--page-size", "512KB"],
            "1KB to 256KB",
        ),
        (&["--index", "rtree", "--min-fill", "70"], "above 50"),
        (&["--index", "rtree", "--buffer", "mru:1MB"], "mru"),
        (
            &["--index", "rtree", "--device", "tape"],
            "unknown device 'tape'",
        ),
        (
            &["--index", "rtree", "--index-opt=split=exponential"],
            "exponential",
        ),
        (
            &["--index", "rstar", "--index-opt=reinsert_policy=near"],
            "invalid --index-opt reinsert_policy: unknown variant `near`",
        ),
        (
            &["--index", "rstar", "--index-opt=reinsrt=3"],
            "unknown key for --index rstar",
        ),
        (
            &["--index", "hilbert", "--index-opt=order=x"],
            "invalid --index-opt order",
        ),
        (
            &["--index", "rtree", "--store", "lsm"],
            "invalid --store lsm: unknown variant `lsm`, expected one of",
        ),
    ];
    for (extra, needle) in cases {
        assert_build_refused(&data_path, o, extra, needle);
    }
    spidx()
        .args([
            "build",
            "--data",
            "/nonexistent.fgb",
            "--index",
            "rtree",
            "--out",
            o,
        ])
        .assert()
        .failure()
        .stderr(contains("nonexistent.fgb"));
    let full = dir.path().join("full");
    spidx()
        .args([
            "build", "--data", &data_path, "--index", "rtree", "--device", "memory",
        ])
        .args(["--device-param", "capacity=64KB", "--out"])
        .arg(&full)
        .assert()
        .failure()
        .stderr(contains("device full"));
    spidx()
        .args(["query", "/nonexistent-index", "--point", "1,2"])
        .assert()
        .failure()
        .stderr(contains("nonexistent-index"));
    spidx()
        .args(["check", "/nonexistent-index"])
        .assert()
        .failure()
        .stderr(contains("nonexistent-index"));

    // An index on a real file: flip one byte of a node page and the checker names the page.
    let pages = dir.path().join("pages.bin");
    let dev = format!("file:{}", pages.display());
    spidx()
        .args([
            "build", "--data", &data_path, "--index", "rtree", "--out", o, "--device", &dev,
        ])
        .args([
            "--device-param",
            "capacity=32MB",
            "--device-param",
            "direct=false",
        ])
        .assert()
        .success();
    spidx()
        .args([
            "build", "--data", &data_path, "--index", "rtree", "--out", o,
        ])
        .assert()
        .failure()
        .stderr(contains("not empty"));
    spidx().args(["check", o]).assert().success();
    spidx()
        .args(["query", o, "--window", "1,2,3", "--json"])
        .assert()
        .failure()
        .stderr(contains("4 comma-separated"));
    spidx()
        .args(["query", o, "--window", "5,5,1,1"])
        .assert()
        .failure()
        .stderr(contains("inverted"));
    // A non-finite coordinate is named, never shown as a debug dump of the box.
    for (flag, value, named) in [
        ("--window", "0,NaN,1,1", "--window: coordinate 1 is NaN"),
        ("--knn", "inf,0", "--knn: coordinate 0 is inf"),
    ] {
        let mut q = spidx();
        q.args(["query", o, flag, value]);
        if flag == "--knn" {
            q.args(["--k", "3"]);
        }
        q.assert()
            .failure()
            .stderr(contains(named))
            .stderr(contains("Rect").not());
    }
    spidx()
        .args(["query", o, "--point", "1,2", "--predicate", "near"])
        .assert()
        .failure()
        .stderr(contains("near"));
    spidx()
        .args(["query", o, "--geometry", "POLYGON((0 0, 1"])
        .assert()
        .failure()
        .stderr(contains("WKT"));
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[2 * 4096 + 200] ^= 0x10;
    std::fs::write(&pages, &bytes).unwrap();
    spidx()
        .args(["check", o])
        .assert()
        .failure()
        .stderr(contains("node page 2"))
        .stderr(contains("checksum"));
    // A damaged store header is an error, not a panic.
    std::fs::write(out.join("store.json"), b"{ not json").unwrap();
    spidx()
        .args(["check", o])
        .assert()
        .failure()
        .stderr(contains("store header"));
}

#[test]
fn relative_file_device_paths_survive_a_change_of_directory() {
    let dir = tempfile::tempdir().unwrap();
    generate(
        dir.path(),
        "u.fgb",
        &["--distribution", "uniform", "--count", "300", "--dims", "2"],
    );
    spidx()
        .current_dir(dir.path())
        .args([
            "build",
            "--data",
            "u.fgb",
            "--index",
            "rstar",
            "--out",
            "idx",
            "--device",
            "file:pages.bin",
        ])
        .args([
            "--device-param",
            "capacity=16MB",
            "--device-param",
            "direct=false",
        ])
        .assert()
        .success();
    let idx = dir.path().join("idx");
    let v = json_of(&[
        "query",
        idx.to_str().unwrap(),
        "--window",
        "0,0,1000000,1000000",
        "--json",
    ]);
    assert_eq!(v["results"], 300);
    spidx().arg("check").arg(&idx).assert().success();
}

/// `--log-sync` applies to the direct store too: each operation durable (the device synced
/// once per insertion), a killed build keeping every insertion; a bad mode is named.
#[test]
fn the_direct_store_takes_log_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let data = generate(
        tmp.path(),
        "u.fgb",
        &["--distribution", "uniform", "--count", "400"],
    );
    let dev = format!("file:{}", tmp.path().join("p.bin").display());
    let out = tmp.path().join("idx");
    let v = json_of(&[
        "build",
        "--data",
        &data,
        "--index",
        "rtree",
        "--store",
        "direct",
        "--log-sync",
        "each-op",
        "--device",
        &dev,
        "--device-param",
        "capacity=16MB",
        "--device-param",
        "direct=false",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let syncs = v.pointer("/device/host/syncs").and_then(|s| s.as_u64());
    assert!(syncs.is_some_and(|s| s >= 400), "{v}");
    let check = json_of(&["check", out.to_str().unwrap(), "--json"]);
    assert_eq!(check["ok"], true, "{check}");
    assert_build_refused(
        &data,
        tmp.path().join("bad").to_str().unwrap(),
        &[
            "--index",
            "rtree",
            "--store",
            "direct",
            "--log-sync",
            "sometimes",
        ],
        "sometimes",
    );
}

/// `--index-opt` reaches the stored index (`index.json`) as the library parses it, for every
/// variant, and an index built without options holds exactly the library's defaults (each
/// option's one default).
#[test]
fn index_opts_round_trip_every_variant_and_defaults() {
    use spidx::index::written::{parse_opts, CLI_NAMING};
    let dir = tempfile::tempdir().unwrap();
    let data = generate(
        dir.path(),
        "u.fgb",
        &["--distribution", "uniform", "--count", "300"],
    );
    let cases: [&[&str]; 4] = [
        &["split=greene"],
        &[
            "reinsert=20%",
            "reinsert_internal=10",
            "reinsert_policy=far",
            "candidates=4",
        ],
        &["order=12", "siblings=3", "extent=[-10, 1010]"],
        &["write_read_ratio=8", "root_fix=false"],
    ];
    for (opts, default) in cases.into_iter().zip(spidx::index::IndexKind::registered()) {
        let kind = spidx::index::written::name(&default);
        let parsed = parse_opts(&kind, opts.iter().copied(), &CLI_NAMING).unwrap();
        assert_ne!(parsed, default);
        for (opts, want) in [(opts, parsed), (&[][..], default)] {
            let out = dir.path().join(format!("{kind}{}", opts.len()));
            let o = out.to_str().unwrap();
            let mut args = vec!["build", "--data", &data, "--index", &kind, "--out", o];
            args.extend(opts.iter().flat_map(|x| ["--index-opt", x]));
            json_of(&[&args[..], &["--json"]].concat());
            let m: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("index.json")).unwrap()).unwrap();
            assert_eq!(m["options"]["kind"], serde_json::to_value(want).unwrap());
            assert_eq!(json_of(&["check", o, "--json"])["ok"], true, "{kind}");
        }
    }
}
