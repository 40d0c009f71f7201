//! Helpers shared by the end-to-end tests: run the real `spidx` binary.

use assert_cmd::Command;

/// A command running the `spidx` binary built for these tests.
pub fn spidx() -> Command {
    Command::cargo_bin("spidx").unwrap()
}

/// Runs `spidx ARGS`, asserts success, and parses its standard output as JSON.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = spidx().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
