//! The CLI's and the Python module's release builds share their compiled dependencies in one
//! `target/` (README, "Python"). Two conditions, checked here:
//! - the Python package (`python/`, its own Cargo workspace for maturin) locks every crate it
//!   shares with the main workspace at the main workspace's version. After `cargo update` in
//!   the root, bring `python/Cargo.lock` along:
//!   `cp Cargo.lock python/ && (cd python && cargo metadata --format-version 1 >/dev/null)`;
//! - both builds resolve every shared crate with the same features, which the feature union
//!   `crates/spidx-build-union` (a dependency of both) arranges. When this fails after a
//!   dependency change, add the features it names to that crate's `Cargo.toml`.
//!
//! The test suites share theirs the same way: `scripts/test-python` builds the module in
//! `python/`'s dev profile, whose settings must be those of the main workspace's test
//! profile (what `cargo test` compiles with), checked here too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// name → versions of every package in a `Cargo.lock`.
fn packages(path: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let lock: toml::Table = toml::from_str(&text).unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in lock["package"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        let version = p["version"].as_str().unwrap().to_string();
        out.entry(name).or_default().push(version);
    }
    out
}

#[test]
fn the_python_lock_uses_the_workspace_versions_of_shared_crates() {
    let root = root();
    let main = packages(&root.join("Cargo.lock"));
    let python = packages(&root.join("python/Cargo.lock"));
    let differ: Vec<String> = python
        .iter()
        .filter_map(|(name, v)| {
            let m = main.get(name)?;
            // A crate locked at several versions (e.g. two majors) may have fewer in Python.
            (!v.iter().all(|x| m.contains(x)))
                .then(|| format!("{name}: python {v:?}, workspace {m:?}"))
        })
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
    assert!(python.contains_key("spidx") && python.contains_key("pyo3"));
}

/// `crate vX.Y.Z` → the feature lists it is compiled with (one per variant: a crate built
/// for the host and for the target may differ), as `cargo tree` resolves them for the normal
/// and build dependencies of one package (what its release build compiles).
fn features(manifest: &Path, package: &str) -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "--prefix", "none"])
        .args(["-e", "normal,build", "--format", "{p}|{f}", "-p", package])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        // `name vX.Y.Z (path) (*)`: the name and version identify it in both workspaces.
        let id: Vec<&str> = package.split_whitespace().take(2).collect();
        // A repeated crate ends in ` (*)` after its features.
        map.entry(id.join(" "))
            .or_default()
            .insert(features.trim_end_matches(" (*)").to_string());
    }
    map
}

#[test]
fn the_cli_and_the_python_module_resolve_shared_crates_with_the_same_features() {
    let root = root();
    let cli = features(&root.join("Cargo.toml"), "spidx-cli");
    let python = features(&root.join("python/Cargo.toml"), "spidx-py");
    let differ: Vec<String> = python
        .iter()
        .filter(|(name, _)| !name.starts_with("spidx"))
        .filter_map(|(name, py)| {
            let c = cli.get(name)?;
            (c != py).then(|| {
                let only_cli: Vec<_> = c.difference(py).collect();
                let only_py: Vec<_> = py.difference(c).collect();
                format!("{name}: CLI only {only_cli:?}, Python only {only_py:?}")
            })
        })
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
    // The comparison saw the crates both builds compile (serde, SQLite, geo, ...).
    let shared = python.keys().filter(|k| cli.contains_key(*k)).count();
    assert!(shared > 100, "only {shared} shared crates: {python:?}");
}

/// The `[profile.NAME]` table of a `Cargo.toml`, with `package` overrides.
fn profile(manifest: &Path, name: &str) -> toml::Table {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    doc.get("profile")
        .and_then(|p| p.get(name))
        .and_then(|p| p.as_table())
        .cloned()
        .unwrap_or_default()
}

#[test]
fn the_python_dev_profile_has_the_settings_of_the_workspace_test_profile() {
    let root = root();
    let main = root.join("Cargo.toml");
    let python = root.join("python/Cargo.toml");
    // The test profile inherits the dev profile's settings it does not set (Cargo's rule).
    let mut test = profile(&main, "dev");
    test.extend(profile(&main, "test"));
    let dev = profile(&python, "dev");
    assert!(
        !test.is_empty(),
        "the main workspace sets no test or dev profile"
    );
    assert_eq!(
        dev, test,
        "python/Cargo.toml's [profile.dev] (left) must equal the settings of the main \
         workspace's [profile.test] over its [profile.dev] (right), or scripts/test-python \
         compiles every dependency again"
    );
}
