//! The scorecards' findings (`examples/seeds/findings.toml`, `examples/defaults/findings.toml`)
//! select runs by the workload labels their specs produce. A spec that renames a workload
//! (e.g. `knn` becoming `knn streams=30`) would leave a finding "not measured", or let it
//! mix other workloads into its groups, without any count changing. This test reads the
//! workload labels every shipped spec produces from the golden-count references
//! (`tests/golden/*.txt`, headers `[run | workload]`, kept current by `golden_counts`) and
//! fails when a finding names a workload no spec of its experiments produces.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root")
}

/// Every spec under `examples/` (not the findings files): its experiment name → its path
/// relative to the repository.
fn specs_by_name() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml")
                && p.file_name().is_some_and(|n| n != "findings.toml")
            {
                out.push(p);
            }
        }
    }
    let root = root();
    let mut files = Vec::new();
    walk(&root.join("examples"), &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let v: toml::Value = toml::from_str(&std::fs::read_to_string(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        if let Some(name) = v.get("name").and_then(|n| n.as_str()) {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.insert(name.to_string(), rel);
        }
    }
    out
}

/// The workload labels of a spec's runs, from its golden-count reference.
fn workloads_of(rel: &str) -> BTreeSet<String> {
    let name = rel
        .trim_start_matches("examples/")
        .trim_end_matches(".toml")
        .replace('/', "__");
    let path = root().join(format!("crates/spidx/tests/golden/{name}.txt"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{rel}: no golden reference {}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix('[')?.strip_suffix(']'))
        .filter_map(|h| h.rsplit_once(" | ").map(|(_, w)| w.to_string()))
        .collect()
}

/// The workload values a selector table names (one string or a list).
fn named_workloads(sel: Option<&toml::Value>) -> Vec<String> {
    match sel.and_then(|s| s.get("workload")) {
        Some(toml::Value::String(s)) => vec![s.clone()],
        Some(toml::Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().expect("a workload label").to_string())
            .collect(),
        Some(other) => panic!("workload selector {other}"),
        None => Vec::new(),
    }
}

#[test]
fn every_workload_a_finding_names_is_produced_by_its_specs() {
    let specs = specs_by_name();
    let mut checked = 0;
    for file in [
        "examples/seeds/findings.toml",
        "examples/defaults/findings.toml",
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        for f in v["finding"].as_array().expect("[[finding]] tables") {
            let id = f["id"].as_str().unwrap();
            let mut produced = BTreeSet::new();
            for exp in f["experiments"].as_array().unwrap() {
                let exp = exp.as_str().unwrap();
                let rel = specs
                    .get(exp)
                    .unwrap_or_else(|| panic!("{file}: {id}: no spec of experiment {exp}"));
                produced.extend(workloads_of(rel));
            }
            for key in ["select", "a", "b"] {
                for w in named_workloads(f.get(key)) {
                    assert!(
                        produced.contains(&w),
                        "{file}: {id}: {key}.workload = {w:?}, but its specs produce {produced:?}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} workload selectors checked");
}
