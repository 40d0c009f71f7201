//! End-to-end tests of `spidx devices` and `spidx iotest` through the real binary.

use predicates::str::contains;

mod common;

use common::{json_of, spidx};

#[test]
fn devices_lists_presets_as_table_and_json() {
    spidx()
        .arg("devices")
        .assert()
        .success()
        .stdout(contains("memory"));
    // The table fits 100 columns; --wide adds the sources, unwrapped.
    let out = spidx().arg("devices").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} wide: {line}",
            line.chars().count()
        );
    }
    assert!(!text.contains("source"), "{text}");
    let wide = spidx().args(["devices", "--wide"]).output().unwrap();
    let wide = String::from_utf8(wide.stdout).unwrap();
    assert!(wide.contains("source"), "{wide}");
    assert!(wide.lines().map(|l| l.chars().count()).max() > Some(100));
    let v = json_of(&["devices", "--json"]);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"memory"));
    spidx()
        .args(["devices", "memory"])
        .assert()
        .success()
        .stdout(contains("kind = \"memory\""));
    spidx()
        .args(["devices", "nope"])
        .assert()
        .failure()
        .stderr(contains("unknown preset 'nope'"));
}

#[test]
fn a_shown_preset_names_the_source_of_every_value() {
    let out = spidx().args(["devices", "hdd-wd2tb"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for key in ["hit_overhead_us", "miss_overhead_us", "write_overhead_us"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in {text}"));
        assert!(line.contains("# Hitachi Deskstar 7K3000"), "{line}");
    }
    // Every parameter line carries a source (or says it is assumed or a setting).
    for l in text
        .lines()
        .filter(|l| l.contains(" = ") && !l.starts_with("name") && !l.starts_with("kind"))
    {
        assert!(l.contains("  # "), "no source: {l}");
    }
    let v = json_of(&["devices", "--json"]);
    let wd = v
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "hdd-wd2tb")
        .unwrap();
    assert!(wd["parameter_sources"]["hit_overhead_us"]
        .as_str()
        .unwrap()
        .contains("Table 5"));
}

#[test]
fn shown_preset_is_a_valid_device_file() {
    let dir = tempfile::tempdir().unwrap();
    for p in json_of(&["devices", "--json"]).as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        let out = spidx().args(["devices", name]).output().unwrap();
        let file = dir.path().join(format!("{name}.toml"));
        std::fs::write(&file, &out.stdout).unwrap();
        let v = json_of(&[
            "iotest",
            "--device",
            file.to_str().unwrap(),
            "--pattern",
            "randwrite",
            "--ops",
            "10",
            "--span",
            "1MB",
            "--json",
        ]);
        assert_eq!(v["device_name"], name);
        assert_eq!(v["ops"], 10);
    }
}

#[test]
fn iotest_json_has_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.bin");
    let dev = format!("file:{}", path.display());
    let v = json_of(&[
        "iotest",
        "--device",
        &dev,
        "--device-param",
        "direct=false",
        "--device-param",
        "capacity=16MB",
        "--pattern",
        "mixed",
        "--page-size",
        "4KB",
        "--ops",
        "200",
        "--json",
    ]);
    for key in [
        "ops",
        "bytes",
        "device_s",
        "iops",
        "mb_s",
        "host_reads",
        "host_writes",
        "cpu_s",
        "elapsed_s",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["bytes"], 200 * 4096);
    assert_eq!(
        v["span_pages"],
        16 * 256,
        "default span is the whole (small) device"
    );
    assert_eq!(
        v["host_reads"].as_u64().unwrap() + v["host_writes"].as_u64().unwrap(),
        200
    );
    assert!(v["device_s"].as_f64().unwrap() > 0.0, "file I/O is timed");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 16 << 20);
}

#[test]
fn iotest_rejects_bad_input_with_clear_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--device", "nope", "--pattern", "randread", "--ops", "5"],
            "unknown device 'nope'",
        ),
        (
            &["--device", "memory", "--pattern", "sideways", "--ops", "5"],
            "unknown pattern 'sideways'",
        ),
        (
            &[
                "--device",
                "memory",
                "--pattern",
                "randread",
                "--ops",
                "5",
                "--page-size",
                "0",
            ],
            "page size",
        ),
        (
            &[
                "--device",
                "memory",
                "--pattern",
                "randread",
                "--ops",
                "5",
                "--page-size",
                "1000",
            ],
            "multiple of 512",
        ),
        (
            &[
                "--device",
                "memory",
                "--pattern",
                "randread",
                "--ops",
                "5",
                "--page-size",
                "4QB",
            ],
            "4QB",
        ),
        (
            &["--device", "memory", "--pattern", "randread", "--ops", "0"],
            "ops",
        ),
        (
            &[
                "--device",
                "memory",
                "--device-param",
                "capacity=1MB",
                "--pattern",
                "randread",
                "--ops",
                "5",
                "--span",
                "2MB",
            ],
            "span",
        ),
        (
            &[
                "--device",
                "memory",
                "--pattern",
                "randread",
                "--ops",
                "5",
                "--span",
                "5000",
            ],
            "whole number",
        ),
        (
            &[
                "--device",
                "memory",
                "--device-param",
                "speed=9",
                "--pattern",
                "randread",
                "--ops",
                "5",
            ],
            "unknown parameter 'speed'",
        ),
        (
            &[
                "--device",
                "memory",
                "--pattern",
                "mixed",
                "--ops",
                "5",
                "--read-pct",
                "120",
            ],
            "outside 0-100",
        ),
        (
            &[
                "--device",
                "file:/nonexistent-dir/x.bin",
                "--pattern",
                "randread",
                "--ops",
                "5",
            ],
            "nonexistent-dir",
        ),
    ];
    for (args, needle) in cases {
        let mut full = vec!["iotest"];
        full.extend_from_slice(args);
        let out = spidx().args(&full).output().unwrap();
        assert!(!out.status.success(), "{full:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(needle),
            "{full:?}: expected '{needle}' in: {err}"
        );
        assert!(!err.contains("panicked"), "{full:?} panicked: {err}");
    }
}

#[test]
fn simulated_state_persists_across_processes_and_corruption_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("flash.state");
    let st = state.to_str().unwrap();
    let common = [
        "--device",
        "flashdbsim",
        "--device-param",
        "capacity=8MB",
        "--page-size",
        "4KB",
        "--span",
        "4MB",
    ];
    let mut w = vec!["iotest"];
    w.extend_from_slice(&common);
    w.extend_from_slice(&[
        "--pattern",
        "seqwrite",
        "--ops",
        "1024",
        "--state",
        st,
        "--json",
    ]);
    let v = json_of(&w);
    assert_eq!(v["flash_writes"], 2048, "4 KB pages on 2 KB flash pages");
    // A second process reads what the first wrote: mapped pages cost flash reads.
    let mut r = vec!["iotest"];
    r.extend_from_slice(&common);
    r.extend_from_slice(&[
        "--pattern",
        "randread",
        "--no-prefill",
        "--ops",
        "100",
        "--state",
        st,
        "--json",
    ]);
    let v = json_of(&r);
    assert_eq!(v["flash_reads"], 200);
    // Without the state the same reads hit never-written pages and cost nothing.
    let fresh: Vec<&str> = r
        .iter()
        .copied()
        .filter(|a| *a != "--state" && *a != st)
        .collect();
    assert_eq!(json_of(&fresh)["flash_reads"], 0);
    let mut bytes = std::fs::read(&state).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    std::fs::write(&state, &bytes).unwrap();
    spidx()
        .args(&r)
        .assert()
        .failure()
        .stderr(contains("corrupted device state"))
        .stderr(contains("checksum"));
}

#[test]
fn models_behave_like_their_devices() {
    let iops = |args: &[&str]| {
        let mut full = vec!["iotest", "--page-size", "4KB", "--json"];
        full.extend_from_slice(args);
        json_of(&full)["iops"].as_f64().unwrap()
    };
    let seq = iops(&[
        "--device",
        "hdd-7200",
        "--pattern",
        "seqread",
        "--ops",
        "5000",
        "--span",
        "256MB",
    ]);
    let rand = iops(&[
        "--device",
        "hdd-7200",
        "--pattern",
        "randread",
        "--ops",
        "500",
        "--span",
        "256MB",
    ]);
    assert!(seq > 20.0 * rand, "sequential {seq} vs random {rand}");
    let whole = iops(&[
        "--device",
        "hdd-7200",
        "--pattern",
        "randread",
        "--ops",
        "300",
        "--span",
        "1800GB",
        "--no-prefill",
    ]);
    assert!(
        (70.0..=200.0).contains(&whole),
        "random 4 KB IOPS over the disk: {whole}"
    );
    let capped = iops(&[
        "--device",
        "azure-standard-hdd",
        "--pattern",
        "seqread",
        "--ops",
        "3000",
        "--span",
        "64MB",
    ]);
    assert!(capped <= 500.0 + 1e-9, "{capped} IOPS over the 500 cap");
}
