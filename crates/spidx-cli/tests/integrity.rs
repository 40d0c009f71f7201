//! End-to-end integrity checks: `spidx check` verifies object records, concurrent
//! `spidx run --resume`s split the work, and a results database of an unknown schema or
//! failing SQLite's integrity check is refused and left untouched.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{buildings, json_of, spidx};
use predicates::str::contains;

#[test]
fn check_verifies_every_object_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = buildings(dir.path(), "2000");
    let out = dir.path().join("idx");
    let o = out.to_str().unwrap();
    let pages = dir.path().join("pages.bin");
    let dev = format!("file:{}", pages.display());
    spidx()
        .args([
            "build", "--data", &data, "--index", "rtree", "--out", o, "--device", &dev,
        ])
        .args([
            "--device-param",
            "capacity=32MB",
            "--device-param",
            "direct=false",
        ])
        .assert()
        .success();
    let v = json_of(&["check", o, "--json"]);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["objects"]["verified"], 2000, "{v}");
    assert_eq!(v["objects"]["indexed"], 2000, "{v}");
    let v = json_of(&["check", o, "--deep", "--json"]);
    assert_eq!(v["objects"]["scan"]["records"], 2000, "{v}");
    assert_eq!(v["depth"], "deep", "{v}");

    // Flip one byte inside the object records (the second half of the device): the check
    // names the object and the checksum, where before it passed and queries failed later.
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[(16 << 20) + 300] ^= 0x04;
    std::fs::write(&pages, &bytes).unwrap();
    spidx()
        .args(["check", o])
        .assert()
        .failure()
        .stderr(contains("object"))
        .stderr(contains("fails its checksum"));
    spidx()
        .args(["check", o, "--deep"])
        .assert()
        .failure()
        .stderr(contains("fails its checksum"));
}

fn claims_spec(dir: &Path) -> String {
    // Six runs of a few hundred milliseconds each on simulated devices.
    let text = r#"
name = "split"
[dataset]
generate = { distribution = "uniform", count = 6000 }
[protocol]
repetitions = 1
check = false
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rtree", split = "quadratic" }, { kind = "rstar" }]
page_size = ["2KB", "4KB"]
device = ["ssd-v300"]
[[workload]]
kind = "construction"
"#;
    let p = dir.join("split.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn two_concurrent_resumes_split_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = claims_spec(dir.path());
    let db = dir.path().join("r.db").display().to_string();
    let bin = assert_cmd::cargo::cargo_bin("spidx");
    let start = || {
        Command::new(&bin)
            .args([
                "run",
                &spec,
                "--results",
                &db,
                "--quiet",
                "--resume",
                "--json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    let mut ran = 0;
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        ran += v["runs"].as_array().unwrap().len();
    }
    // Every run once, in all: not twice (each process running all six).
    assert_eq!(ran, 6);
    let list = json_of(&["results", "list", "--results", &db, "--json"]);
    let mut finished: HashMap<String, usize> = HashMap::new();
    for r in list["runs"].as_array().unwrap() {
        assert_eq!(r["status"], "finished", "{r}");
        *finished
            .entry(r["name"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(finished.len(), 6, "{finished:?}");
    assert!(finished.values().all(|n| *n == 1), "{finished:?}");
    // A third resume finds nothing left to do.
    let v = json_of(&[
        "run",
        &spec,
        "--results",
        &db,
        "--quiet",
        "--resume",
        "--json",
    ]);
    assert_eq!(v["runs"].as_array().unwrap().len(), 0, "{v}");
}

#[test]
fn a_results_database_of_unknown_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let spec = claims_spec(dir.path());
    let db = dir.path().join("r.db");
    drop(spidx::experiment::ResultsDb::open(&db).unwrap());
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    spidx()
        .args(["run", &spec, "--quiet", "--results"])
        .arg(&db)
        .assert()
        .failure()
        .stderr(contains("schema_version '99'"))
        .stderr(contains("r.db"));
    spidx()
        .args(["results", "list", "--results"])
        .arg(&db)
        .assert()
        .failure()
        .stderr(contains("schema_version '99'"));
    assert_eq!(std::fs::read(&db).unwrap(), before, "nothing appended");
    // Not SQLite at all.
    let text = dir.path().join("notes.db");
    std::fs::write(
        &text,
        "plain text, not a database; long enough to fill a header line",
    )
    .unwrap();
    spidx()
        .args(["run", &spec, "--quiet", "--results"])
        .arg(&text)
        .assert()
        .failure()
        .stderr(contains("not an SQLite database"));
}

/// A crashed index on a `file:` device, made through the library: `n` rectangles inserted,
/// a checkpoint after `checkpointed` of them, then dropped without a checkpoint (a kill).
fn crashed_direct_index(dir: &Path, dev: &Path, checkpointed: u64, n: u64) {
    use spidx::geom::Rect;
    use spidx::spatial::{IndexOptions, SpatialIndex};
    let options = IndexOptions {
        kind: spidx::index::IndexKind::RStar(Default::default()),
        page_size: 1024,
        layout: spidx::node::LayoutKind::Checked,
        occupancy: Default::default(),
        buffer: spidx::cache::CacheConfig::none(),
        store: spidx::store::StoreConfig::direct(),
        device_name: "file".into(),
        device: spidx::device::DeviceConfig::File(spidx::device::file::FileConfig {
            path: dev.to_path_buf(),
            direct: false,
            capacity: 8 << 20,
        }),
    };
    let mut idx = SpatialIndex::<2>::create(dir, options, false).unwrap();
    for i in 0..n {
        if i == checkpointed {
            idx.flush().unwrap();
        }
        let (x, y) = ((i * 37 % 1000) as f64, (i * 91 % 1000) as f64);
        idx.insert(Rect::new([x, y], [x + 3.0, y + 2.0]).unwrap(), i)
            .unwrap();
    }
}

fn exit_code(args: &[&str]) -> (i32, String) {
    let out = spidx().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `check` exits 3 on a crashed index (recoverable) and 1 on a damaged one; `query`
/// refuses both, pointing to `spidx recover`; `recover` refuses damage unless
/// `--accept-loss`, and exits 0 only when `check` then passes.
#[test]
fn crashed_and_damaged_indices_are_refused_and_told_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let dev = tmp.path().join("pages.bin");
    crashed_direct_index(&dir, &dev, 300, 600);
    let o = dir.to_str().unwrap();
    let (code, err) = exit_code(&["check", o]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("crash") && err.contains("spidx recover"),
        "{err}"
    );
    let (code, err) = exit_code(&["query", o, "--window", "0,0,1000,1000"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("spidx recover"), "{err}");
    // A damaged journal: every command refuses, recover names the loss and the option.
    let journal = dir.join("direct.journal");
    let clean = std::fs::read(&journal).unwrap();
    let mut bytes = clean.clone();
    bytes[32 + 16 + 7] ^= 0x20;
    std::fs::write(&journal, &bytes).unwrap();
    let (code, err) = exit_code(&["check", o]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("direct.journal"), "{err}");
    let (code, err) = exit_code(&["query", o, "--window", "0,0,1000,1000"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("direct.journal"), "{err}");
    let (code, err) = exit_code(&["recover", o]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--accept-loss"), "{err}");
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        bytes,
        "recover changed the journal"
    );
    // Accepting the loss: recover exits 0 only if check passes afterwards.
    let out = spidx()
        .args(["recover", o, "--accept-loss"])
        .output()
        .unwrap();
    let (code, _) = exit_code(&["check", o]);
    if out.status.success() {
        assert!(String::from_utf8_lossy(&out.stdout).contains("LOSS ACCEPTED"));
        assert_eq!(code, 0);
    } else {
        assert_ne!(code, 0);
    }

    // The intact journal: recover, then check passes and queries answer.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    crashed_direct_index(&dir, &tmp.path().join("pages.bin"), 300, 600);
    let o = dir.to_str().unwrap();
    spidx().args(["recover", o]).assert().success();
    spidx().args(["check", o]).assert().success();
    let v = json_of(&["query", o, "--window", "-1e9,-1e9,1e9,1e9", "--json"]);
    assert_eq!(v["results"], 300, "{v}");
}

/// `recover` exits non-zero while `check` fails (a flipped byte in the object store used
/// to be recovered with exit 0); a directory a build left before its manifest existed is
/// named as such.
#[test]
fn recover_never_succeeds_while_check_fails() {
    let dir = tempfile::tempdir().unwrap();
    let data = buildings(dir.path(), "500");
    let out = dir.path().join("idx");
    let o = out.to_str().unwrap();
    let pages = dir.path().join("pages.bin");
    let dev = format!("file:{}", pages.display());
    spidx()
        .args([
            "build", "--data", &data, "--index", "rtree", "--out", o, "--device", &dev,
        ])
        .args([
            "--device-param",
            "capacity=32MB",
            "--device-param",
            "direct=false",
        ])
        .assert()
        .success();
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[(16 << 20) + 300] ^= 0x04;
    std::fs::write(&pages, &bytes).unwrap();
    spidx().args(["check", o]).assert().failure();
    spidx()
        .args(["recover", o])
        .assert()
        .failure()
        .stderr(contains("fails its checksum"));

    // Killed before index.json existed.
    let half = dir.path().join("half");
    std::fs::create_dir_all(&half).unwrap();
    std::fs::write(half.join("store.json"), b"{}").unwrap();
    let h = half.to_str().unwrap();
    for cmd in ["recover", "check", "query"] {
        let mut args = vec![cmd, h];
        if cmd == "query" {
            args.extend(["--window", "0,0,1,1"]);
        }
        spidx()
            .args(&args)
            .assert()
            .failure()
            .stderr(contains("interrupted before the index existed"));
    }
}
