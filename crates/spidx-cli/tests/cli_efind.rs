//! `spidx build --store efind` end to end: the index answers window queries like brute
//! force and passes the checker after reopening, the report carries eFIND's statistics, and
//! bad eFIND options fail with clear errors.

use spidx::data::{self, Dataset};

mod common;

use common::{assert_build_refused, buildings, json_of};

#[test]
fn efind_index_matches_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = buildings(dir.path(), "3000");
    let ds = data::open(&data_path).unwrap();
    let Dataset::Geo(recs) = &ds else {
        panic!("2-D data expected")
    };
    let ext = ds.extent().unwrap();
    let configs: &[&[&str]] = &[
        &[
            "--index",
            "rtree",
            "--write-buffer",
            "16KB",
            "--page-size",
            "1KB",
        ],
        &[
            "--index",
            "rstar",
            "--write-buffer",
            "32KB",
            "--store-opt",
            "read_buffer_perc=30",
            "--store-opt",
            "read_policy=2q",
            "--store-opt",
            "read_kin=20",
            "--store-opt",
            "temporal_control=writes",
            "--store-opt",
            "stride=32",
            "--store-opt",
            "timestamp_perc=70",
            "--store-opt",
            "flushing_unit=3",
            "--store-opt",
            "flush_policy=mth",
            "--log-size",
            "4MB",
            "--log-sync",
            "group:8",
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
            "--store",
            "efind",
            "--json",
        ];
        args.extend_from_slice(cfg);
        let b = json_of(&args);
        assert_eq!(b["store"]["kind"], "efind", "{b}");
        assert!(b["store"]["efind"].is_object(), "{b}");
        let e = &b["store"]["buffered"];
        assert!(e["flushes"].as_u64().unwrap() > 0, "{b}");
        assert_eq!(e["gauges"]["bytes"], 0, "written back at the end: {b}");
        let c = json_of(&["check", out.to_str().unwrap(), "--json"]);
        assert_eq!(c["ok"], true, "{c}");
        let (x0, y0, x1, y1) = (ext.min[0], ext.min[1], ext.max[0], ext.max[1]);
        let (qx, qy, w, h) = (
            x0 + (x1 - x0) * 0.2,
            y0 + (y1 - y0) * 0.3,
            (x1 - x0) * 0.3,
            (y1 - y0) * 0.2,
        );
        let window = format!("{},{},{},{}", qx, qy, qx + w, qy + h);
        let v = json_of(&[
            "query",
            out.to_str().unwrap(),
            "--window",
            &window,
            "--filter-only",
            "--ids",
            "--json",
        ]);
        let mut got: Vec<u64> = v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        got.sort();
        let mut want: Vec<u64> = recs
            .iter()
            .filter(|r| {
                let b = r.bbox;
                b.min().x <= qx + w && b.max().x >= qx && b.min().y <= qy + h && b.max().y >= qy
            })
            .map(|r| r.id)
            .collect();
        want.sort();
        assert_eq!(got, want, "config {n}");
    }
}

#[test]
fn bad_efind_options_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let data_path = buildings(dir.path(), "200");
    let out = dir.path().join("x");
    let o = out.to_str().unwrap();
    let e = [
        "--index",
        "rtree",
        "--store",
        "efind",
        "--write-buffer",
        "512KB",
    ];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--index", "rtree", "--store", "efind"],
            "--store efind: missing field `buffer`",
        ),
        (
            vec!["--index", "rtree", "--write-buffer", "512KB"],
            "--write-buffer (--store-opt write_buffer): unknown field",
        ),
        (
            vec!["--index", "rtree", "--store-opt", "flush_policy=m"],
            "--store-opt flush_policy: unknown field",
        ),
        (
            [&e[..], &["--store-opt", "read_buffer_perc=150"]].concat(),
            "outside 0-100",
        ),
        (
            [&e[..], &["--store-opt", "read_buffer_perc=100"]].concat(),
            "no write buffer",
        ),
        (
            [&e[..], &["--store-opt", "timestamp_perc=-5"]].concat(),
            "outside 0-100",
        ),
        (
            [&e[..], &["--store-opt", "read_policy=mru"]].concat(),
            "--store-opt read_policy",
        ),
        (
            [&e[..], &["--store-opt", "flush_policy=fast"]].concat(),
            "--store-opt flush_policy",
        ),
        (
            [&e[..], &["--store-opt", "temporal_control=always"]].concat(),
            "--store-opt temporal_control",
        ),
        (
            [&e[..], &["--store-opt", "flushing_unit=0"]].concat(),
            "flushing_unit = 0",
        ),
        (
            [&e[..], &["--store-opt", "flushing_unit=100000"]].concat(),
            "flushing_unit = 100000",
        ),
        (
            [&e[..], &["--store-opt", "read_kout=10"]].concat(),
            "read_kout applies to read_policy 2q",
        ),
        (
            [
                &e[..],
                &[
                    "--store-opt",
                    "temporal_control=reads",
                    "--store-opt",
                    "stride=9",
                ],
            ]
            .concat(),
            "stride applies",
        ),
        (
            [
                &e[..],
                &[
                    "--store-opt",
                    "flush_policy=m",
                    "--store-opt",
                    "timestamp_perc=50",
                ],
            ]
            .concat(),
            "timestamp_perc does not apply",
        ),
        (
            vec![
                "--index",
                "rtree",
                "--store",
                "efind",
                "--write-buffer",
                "4KB",
                "--page-size",
                "4KB",
            ],
            "less than one",
        ),
        (
            vec![
                "--index",
                "rtree",
                "--store",
                "efind",
                "--write-buffer",
                "lots",
            ],
            "not a size",
        ),
        (
            [&e[..], &["--log-size", "64KB"]].concat(),
            "log_size = 64KB is too small",
        ),
        (
            [&e[..], &["--log-sync", "sometimes"]].concat(),
            "each-op, group:N",
        ),
        (
            vec!["--index", "rtree", "--log-device", "uncounted"],
            "--log-device (--store-opt log_device): unknown field",
        ),
    ];
    for (extra, needle) in cases {
        assert_build_refused(&data_path, o, &extra, needle);
    }
}
