//! The Python package (`python/`, its own Cargo workspace for maturin) locks every crate it
//! shares with the main workspace at the main workspace's version: the Python module runs the
//! same dependency code as the CLI, and version equality is the first condition for the two
//! release builds to share compiled crates in one `target/` (the second, equal features, does
//! not hold yet: PyO3's macros enable more of `syn`). After `cargo update` in the root, bring
//! `python/Cargo.lock` along:
//! `cp Cargo.lock python/ && (cd python && cargo metadata --format-version 1 >/dev/null)`.

use std::collections::BTreeMap;
use std::path::Path;

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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
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
