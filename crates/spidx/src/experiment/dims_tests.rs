//! The `matrix.dims` axis end to end: one generated dataset per dimensionality, runs named
//! and keyed by it, every run's kNN answers (index and scan, on that run's own data and
//! query points) equal to brute force, and whole runs of both workloads completing.

use std::path::Path;

use super::scan::ScanTable;
use super::workload::{object_box, Inputs};
use super::Experiment;
use crate::data::Dataset;
use crate::device::memory::{MemoryConfig, MemoryDevice};
use crate::geom::Rect;
use crate::spatial::HostProfile;
use crate::spatial::SpatialIndex;
use crate::with_dims;

const SPEC: &str = r#"
name = "dims"
[dataset]
generate = { distribution = "uniform", count = 1500, vectors = true, seed = 11 }
[protocol]
check = false
repetitions = 1
[matrix]
index = [{ kind = "rstar" }]
page_size = ["4KB"]
device = ["ssd-v300"]
dims = [2, 4, 8]
[[workload]]
kind = "construction"
[[workload]]
kind = "knn"
name = "index"
k = 7
queries = 12
place = "uniform"
[[workload]]
kind = "knn"
name = "scan"
k = 7
queries = 12
place = "uniform"
access = "scan"
request = "16KB"
"#;

fn prepare(dir: &Path) -> Experiment {
    let path = dir.join("spec.toml");
    std::fs::write(&path, SPEC).unwrap();
    Experiment::prepare(&path).unwrap()
}

fn brute<const D: usize>(ds: &Dataset, p: &[f64; D], k: usize) -> Vec<u64> {
    let mut all: Vec<(f64, u64)> = (0..ds.len())
        .map(|i| {
            let (id, lo, hi) = object_box(ds, i);
            let r = Rect::<D>::new(lo.try_into().unwrap(), hi.try_into().unwrap()).unwrap();
            (r.min_dist2(p).sqrt(), id)
        })
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.into_iter().take(k).map(|x| x.1).collect()
}

/// Every query point of the run's kNN workloads: the index's and the scan's answers
/// both equal brute force on the run's own dataset.
fn check_answers<const D: usize>(exp: &Experiment, ordinal: usize, dir: &Path) {
    let run = &exp.runs[ordinal];
    let (ds, inputs) = exp.data(run).unwrap();
    assert_eq!(ds.dims(), D, "{}", run.name);
    let mut idx = SpatialIndex::<D>::create(dir, run.options.clone(), false).unwrap();
    for i in 0..ds.len() {
        let (id, lo, hi) = object_box(ds, i);
        idx.insert(
            Rect::new(lo.try_into().unwrap(), hi.try_into().unwrap()).unwrap(),
            id,
        )
        .unwrap();
    }
    let mem = Box::new(MemoryDevice::open(&MemoryConfig::default(), 4096, None).unwrap());
    let mut table =
        ScanTable::<D>::create(mem, ds, 4 * 4096, Some(HostProfile::default())).unwrap();
    let mut checked = 0;
    for input in inputs {
        let Inputs::Knn { points, k, .. } = input else {
            continue;
        };
        for p in points {
            let p: [f64; D] = p.as_slice().try_into().unwrap();
            let want = brute(ds, &p, *k);
            assert_eq!(idx.nearest(p, *k, false).unwrap().ids, want, "{}", run.name);
            assert_eq!(table.nearest(p, *k).unwrap().ids, want, "{}", run.name);
            checked += 1;
        }
    }
    assert_eq!(checked, 24, "{}", run.name);
}

#[test]
fn each_dimensionality_runs_on_its_own_data_and_answers_equal_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = prepare(tmp.path());
    let names: Vec<&str> = exp.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "R*-tree 30% · 4KB · d=2 · ssd-v300",
            "R*-tree 30% · 4KB · d=4 · ssd-v300",
            "R*-tree 30% · 4KB · d=8 · ssd-v300"
        ]
    );
    let keys: std::collections::HashSet<&str> = exp.runs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys.len(), 3);
    for (i, run) in exp.runs.iter().enumerate() {
        let d = run.dims.unwrap();
        let dir = tmp.path().join(format!("idx{i}"));
        with_dims!(d, D => {
            check_answers::<D>(&exp, i, &dir);
            Ok::<(), crate::Error>(())
        })
        .unwrap();
        let (ds, _) = exp.data(run).unwrap();
        assert_eq!(ds.len(), 1500);
        // Deterministic from the seed: preparing again gives the same vectors.
        let again_dir = tmp.path().join(format!("again{i}"));
        std::fs::create_dir_all(&again_dir).unwrap();
        let again = prepare(&again_dir);
        assert_eq!(
            object_box(again.data(&again.runs[i]).unwrap().0, 77),
            object_box(ds, 77)
        );
        // The whole run: construction, then both kNN workloads.
        let result = exp
            .run(run, &tmp.path().join(format!("run{i}")), &mut |_| {})
            .unwrap();
        let names: Vec<&str> = result.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["construction", "index", "scan"]);
        assert_eq!(result.workloads[1].get("results"), 7.0 * 12.0);
        assert_eq!(result.workloads[2].get("results"), 7.0 * 12.0);
    }
    // The datasets differ between dimensionalities.
    assert_ne!(
        exp.data(&exp.runs[0]).unwrap().0.dims(),
        exp.data(&exp.runs[2]).unwrap().0.dims()
    );
}

/// Into a results database: each run's row carries its dimensionality (in its name and
/// its dataset description), and resuming finds every run finished by its key.
#[test]
fn results_carry_the_dimensionality_and_resume_skips_finished_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = prepare(tmp.path());
    let spec = tmp.path().join("spec.toml");
    let mut db = super::ResultsDb::open(&tmp.path().join("r.db")).unwrap();
    let first = super::session::execute(&exp, &mut db, &spec, false, &mut |_| {}).unwrap();
    assert_eq!(first.failed(), 0);
    assert_eq!(first.outcomes.len(), 3);
    for (o, d) in first.outcomes.iter().zip([2, 4, 8]) {
        let row = db.run(o.run_id).unwrap().objects().remove(0);
        let dataset: serde_json::Value =
            serde_json::from_str(row["dataset_json"].as_str().unwrap()).unwrap();
        assert_eq!(dataset["generate"]["dims"], d, "{}", o.name);
        assert!(row["name"].as_str().unwrap().contains(&format!("d={d}")));
    }
    let again = super::session::execute(&exp, &mut db, &spec, true, &mut |_| {}).unwrap();
    assert_eq!(again.skipped, 3);
    assert!(again.outcomes.is_empty());
}
