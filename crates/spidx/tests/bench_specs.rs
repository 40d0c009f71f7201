//! The benchmark specs that `docs/benchmarks.md` runs (`crates/spidx-bench/specs/*.toml`) are
//! not part of the golden-count reduction (they are sized for timing), so nothing else would
//! notice one that no longer parses: every one must prepare (parse, validate, expand its
//! matrix) as `spidx run` would, and expand to at least one run.

use std::path::Path;

use spidx::experiment::Experiment;

#[test]
fn every_benchmark_spec_prepares() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spidx-bench/specs");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let exp = Experiment::prepare(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(!exp.runs.is_empty(), "{}: no run", p.display());
            n += 1;
        }
    }
    assert!(n >= 5, "only {n} specs in {}", dir.display());
}
