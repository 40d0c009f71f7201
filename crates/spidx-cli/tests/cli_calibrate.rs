//! End-to-end tests of `spidx calibrate` through the real binary: bad options refused
//! with clear errors, files it did not create left alone, a tiny calibration of a
//! direct-I/O file whose device file `iotest` loads, and refits that are byte-identical.

use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

mod common;

use common::spidx;

#[test]
fn bad_options_are_refused_and_nothing_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let target = format!("file:{}", d("probe.bin"));
    let out = d("m.toml");
    let txt = d("m.txt");
    let bare = d("probe.bin");
    let nodir = format!("file:{}", d("no/such/dir/p.bin"));
    let (target, out, txt, bare, nodir) = (
        target.as_str(),
        out.as_str(),
        txt.as_str(),
        bare.as_str(),
        nodir.as_str(),
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![target, "--out", txt], "must end in .toml"),
        (vec![bare, "--out", out], "file:PATH"),
        (vec!["file:", "--out", out], "needs a path"),
        (
            vec![target, "--out", out, "--size", "3KB"],
            "whole number of MiB",
        ),
        (vec![target, "--out", out, "--size", "lots"], "--size"),
        (
            vec![target, "--out", out, "--page-size", "6KB"],
            "multiple of 4KB",
        ),
        (
            vec![target, "--out", out, "--threads", "1"],
            "between 2 and 256",
        ),
        (
            vec![target, "--out", out, "--time-budget", "0s"],
            "between 1s and 1h",
        ),
        (
            vec![target, "--out", out, "--time-budget", "soon"],
            "not a duration",
        ),
        (vec![target, "--out", out, "--max-ops", "0"], "at least 1"),
        (vec!["--out", out], "file:PATH, or --from-figures"),
        (vec![nodir, "--out", out], "does not exist"),
    ];
    for (args, needle) in cases {
        spidx()
            .arg("calibrate")
            .args(&args)
            .assert()
            .failure()
            .stderr(contains(needle));
    }
    assert!(!dir.path().join("probe.bin").exists());
    assert!(!dir.path().join("m.toml").exists());

    // A file calibrate did not create is neither overwritten nor deleted.
    let mine = dir.path().join("mine.bin");
    std::fs::write(&mine, b"precious").unwrap();
    spidx()
        .args([
            "calibrate",
            &format!("file:{}", mine.display()),
            "--out",
            out,
        ])
        .assert()
        .failure()
        .stderr(contains("--overwrite-target"));
    assert_eq!(std::fs::read(&mine).unwrap(), b"precious");
    // Nor is an existing --out.
    std::fs::write(out, "kept").unwrap();
    spidx()
        .args(["calibrate", target, "--out", out])
        .assert()
        .failure()
        .stderr(contains("--force"));
    assert_eq!(std::fs::read_to_string(out).unwrap(), "kept");
    assert!(!dir.path().join("probe.bin").exists());
}

#[test]
fn calibrates_a_small_file_and_the_model_loads() {
    let dir = tempfile::tempdir().unwrap();
    if !spidx::device::file::direct_io_supported(dir.path()) {
        spidx::test_support::skip(&format!(
            "no O_DIRECT on the temporary directory's filesystem ({}): calibrate needs direct I/O",
            dir.path().display()
        ));
        return;
    }
    let probe = dir.path().join("probe.bin");
    let out = dir.path().join("drive.toml");
    let figures = dir.path().join("figures.json");
    spidx()
        .args(["calibrate", &format!("file:{}", probe.display())])
        .arg("--out")
        .arg(&out)
        .args(["--size", "4MiB", "--time-budget", "2s", "--max-ops", "300"])
        .args(["--threads", "2", "--page-size", "8KB"])
        .arg("--save-figures")
        .arg(&figures)
        .assert()
        .success()
        .stdout(contains("randread-4k-qd1").and(contains("wrote")));
    assert!(!probe.exists(), "the probe file it created is deleted");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("# Residuals") && text.contains("name = \"drive\""),
        "{text}"
    );
    spidx()
        .args(["iotest", "--device"])
        .arg(&out)
        .args(["--pattern", "randread", "--ops", "200", "--span", "4MB"])
        .assert()
        .success()
        .stdout(contains("IOPS"));
    // Refitting the saved figures gives the same file, byte for byte.
    let again = dir.path().join("again.toml");
    spidx()
        .arg("calibrate")
        .arg("--from-figures")
        .arg(&figures)
        .arg("--out")
        .arg(&again)
        .args(["--name", "drive"])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&again).unwrap(), text);
    // --keep keeps the probe file; --force overwrites --out.
    spidx()
        .args(["calibrate", &format!("file:{}", probe.display())])
        .arg("--out")
        .arg(&out)
        .args(["--force", "--keep", "--size", "1MiB", "--time-budget", "1s"])
        .args(["--max-ops", "50", "--threads", "2"])
        .assert()
        .success();
    assert!(probe.exists());
    // Now the probe file exists and calibrate did not create it in this run.
    spidx()
        .args(["calibrate", &format!("file:{}", probe.display())])
        .arg("--out")
        .arg(&again)
        .args([
            "--force",
            "--size",
            "1MiB",
            "--time-budget",
            "1s",
            "--threads",
            "2",
        ])
        .assert()
        .failure()
        .stderr(contains("did not create"));
}
