//! Which results database `spidx results` and `spidx report` read when `--results` is not
//! given: the newest spidx results database (by modification time) among `./*.db` and
//! `./*/results.db` (so `quickstart/results.db`, which `scripts/quickstart` writes, is
//! found), announced on standard error; an error saying where it looked when there is none.
//! Also the check that a named experiment exists.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{bail, Result};
use spidx::experiment::db::Location;
use spidx::experiment::ResultsDb;

/// `given`, or the newest results database near the current directory.
pub fn resolve(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let cwd = std::env::current_dir()?;
    let mut found: Vec<(SystemTime, PathBuf)> = candidates(&cwd)
        .into_iter()
        .filter(|p| ResultsDb::open_existing(p).is_ok())
        .filter_map(|p| {
            let t = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((t, p))
        })
        .collect();
    found.sort();
    let Some((_, newest)) = found.pop() else {
        bail!(
            "no results database given and none found in {}: looked for ./*.db and ./*/results.db. \
             Give one with --results PATH (`spidx run SPEC --results PATH` writes it; scripts/quickstart \
             writes quickstart/results.db)",
            cwd.display()
        );
    };
    let shown = newest.strip_prefix(&cwd).unwrap_or(&newest).to_path_buf();
    if found.is_empty() {
        eprintln!(
            "results database: {}",
            crate::term::safe(&shown.display().to_string())
        );
    } else {
        eprintln!(
            "results database: {} (the newest of {} found; choose one with --results)",
            crate::term::safe(&shown.display().to_string()),
            found.len() + 1
        );
    }
    Ok(shown)
}

fn candidates(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            let r = p.join("results.db");
            if r.is_file() {
                out.push(r);
            }
        } else if p.extension().is_some_and(|x| x == "db") {
            out.push(p);
        }
    }
    out
}

/// Fails unless `db` (read from `path`) holds an experiment named `name`, listing those it
/// holds.
pub fn check_experiment(db: &ResultsDb, path: &Path, name: &str) -> Result<()> {
    let exps = db.experiments()?;
    let names: Vec<String> = exps
        .objects()
        .iter()
        .filter_map(|o| o.get("name").and_then(|v| v.as_str()).map(str::to_string))
        .collect();
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    let mut known = names.clone();
    known.dedup();
    if known.is_empty() {
        bail!(
            "no experiment '{name}' in {}: it holds none yet",
            Location::of(path).display()
        );
    }
    bail!(
        "no experiment '{name}' in {}; it holds: {}",
        Location::of(path).display(),
        known.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_db_files_and_results_db_in_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.db"), b"").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"").unwrap();
        std::fs::create_dir(dir.path().join("quickstart")).unwrap();
        std::fs::write(dir.path().join("quickstart/results.db"), b"").unwrap();
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        let mut c = candidates(dir.path());
        c.sort();
        assert_eq!(
            c,
            vec![
                dir.path().join("a.db"),
                dir.path().join("quickstart/results.db")
            ]
        );
    }
}
