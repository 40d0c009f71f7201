//! Support for tests that cannot run everywhere (no PostgreSQL server, no Chromium, a
//! filesystem without `O_DIRECT`): such a test says so through [`skip`] and returns, and
//! `scripts/test` counts it as skipped, not as passed.
//!
//! Behind the `test-fixtures` feature (not `cfg(test)`) because the integration tests of
//! several crates and the library's own unit tests share it.

use std::path::Path;

/// Names a file each skipped test appends a line to (`scripts/test` sets it and counts the
/// lines), so that a test that could not run is reported as skipped, not as passed.
pub const SKIP_LOG_VAR: &str = "SPIDX_SKIP_LOG";

/// Tells that the calling test does not run (it returns right after): prints `SKIPPED` with
/// the reason, and appends `TEST<TAB>REASON` to the file named by [`SKIP_LOG_VAR`] when that
/// is set. The test's name is its thread's (the test harness names each test's thread).
pub fn skip(reason: &str) {
    skip_to(
        std::env::var_os(SKIP_LOG_VAR).as_deref().map(Path::new),
        reason,
    );
}

/// [`skip`] with the log file given (`None`: only the message).
fn skip_to(log: Option<&Path>, reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("an unnamed test")
        .to_string();
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(log) = log {
        use std::io::Write;
        let line = format!("{test}\t{reason}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!("cannot record the skip in {}: {e}", log.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_logged_with_the_test_and_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skipped");
        let first = std::thread::Builder::new()
            .name("a::first".into())
            .spawn({
                let log = log.clone();
                move || skip_to(Some(&log), "no server")
            })
            .unwrap();
        first.join().unwrap();
        let second = std::thread::Builder::new()
            .name("b::second".into())
            .spawn({
                let log = log.clone();
                move || skip_to(Some(&log), "no O_DIRECT")
            })
            .unwrap();
        second.join().unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "a::first\tno server\nb::second\tno O_DIRECT\n"
        );
    }
}
