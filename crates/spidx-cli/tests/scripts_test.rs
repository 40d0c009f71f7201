//! `scripts/test` (the README's and CI's test command) summarises honestly: it runs every
//! test binary (`--no-fail-fast`), prints the passed/failed/skipped summary even when a test
//! failed or the build broke, and exits non-zero then.
//!
//! The script runs here against a stand-in `cargo` (first on `PATH`) that prints what
//! `cargo test` prints and exits with a chosen status, so no real test suite runs twice.

use std::path::{Path, PathBuf};
use std::process::Output;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test")
}

/// Runs `scripts/test` (Rust part only) with a `cargo` that prints `output`, records one
/// skipped test when `skip`, and exits with `status`; returns the run and cargo's arguments.
fn run(output: &str, status: i32, skip: bool) -> (Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("cargo");
    std::fs::write(dir.path().join("output"), output).unwrap();
    let skip_line = if skip {
        r#"printf 'db::pg_tests::roundtrip\tno PostgreSQL server\n' >> "$SPIDX_SKIP_LOG""#
    } else {
        ""
    };
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"$*\" > '{args}'\ncat '{out}'\n{skip_line}\nexit {status}\n",
            args = dir.path().join("args").display(),
            out = dir.path().join("output").display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .arg(script())
        .env("PATH", path)
        .env("SPIDX_TEST_PYTHON", "0")
        .output()
        .unwrap();
    let args = std::fs::read_to_string(dir.path().join("args"))
        .expect("scripts/test ran the stand-in cargo, not the real one");
    (out, args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const FAILING: &str = "\
running 4 tests
test a::ok ... ok
test a::broken ... FAILED
test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out

running 7 tests
test result: ok. 5 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out
";

#[test]
fn a_failing_test_still_gets_the_summary_and_a_nonzero_exit() {
    let (out, args) = run(FAILING, 101, true);
    let text = stdout(&out);
    assert!(args.contains("--no-fail-fast"), "cargo ran with: {args}");
    // 8 passed by cargo's count, one of them a skip.
    assert!(
        text.contains("Rust: 7 passed, 1 failed, 1 skipped, 2 ignored"),
        "{text}"
    );
    assert!(text.contains("Failed:\n  a::broken\n"), "{text}");
    assert!(
        text.contains("db::pg_tests::roundtrip\tno PostgreSQL server"),
        "{text}"
    );
    assert!(
        text.contains("all: 7 passed, 1 failed, 1 skipped"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
}

#[test]
fn a_build_error_is_a_failure_named_in_the_summary() {
    let (out, _) = run(
        "error[E0425]: cannot find value `x` in this scope\n",
        101,
        false,
    );
    let text = stdout(&out);
    assert!(
        text.contains("Rust: 0 passed, 0 failed, 0 skipped"),
        "{text}"
    );
    assert!(
        text.contains("exited with status 101 without a failed test"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
}

#[test]
fn a_clean_run_exits_zero() {
    let ok = "test result: ok. 5 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out\n";
    let (out, _) = run(ok, 0, true);
    let text = stdout(&out);
    assert!(
        text.contains("all: 4 passed, 0 failed, 1 skipped"),
        "{text}"
    );
    assert!(!text.contains("Failed:"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}
