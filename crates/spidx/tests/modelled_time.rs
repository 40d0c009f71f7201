//! Modelled time on simulated devices: elapsed time = device time + the host profile's
//! price of the counted operations, never the measured CPU time (architecture §3). Two runs
//! of one spec — one of them while other threads keep every core busy — give the same
//! elapsed times to the last bit, and a spec's host profile moves only the host's share.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use spidx::experiment::Experiment;

const SPEC: &str = r#"
name = "modelled-time"
[dataset]
generate = { distribution = "buildings", count = 3000, seed = 7 }
[protocol]
repetitions = 2
HOST
[matrix]
index = [{ kind = "rtree", split = "linear" }]
page_size = ["4KB"]
device = ["ssd-v300", "hdd-wd2tb"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.1%"
queries = 20
[[workload]]
kind = "knn"
k = 10
queries = 20
"#;

/// Every workload's (elapsed, host, device, cpu) seconds and the device requests the host
/// counted (construction only; NaN elsewhere), by run and workload.
type Times = BTreeMap<String, [f64; 5]>;

fn run(host: &str) -> Times {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(&spec, SPEC.replace("HOST", host)).unwrap();
    let exp = Experiment::prepare(&spec).unwrap();
    let mut out = Times::new();
    for (i, r) in exp.runs.iter().enumerate() {
        let res = exp
            .run(r, &dir.path().join(format!("run{i}")), &mut |_| {})
            .unwrap();
        for w in &res.workloads {
            let m = |k: &str| {
                *w.metrics
                    .get(k)
                    .unwrap_or_else(|| panic!("{k} in {:?}", w.metrics.keys()))
            };
            out.insert(
                format!("{} | {}", r.name, w.name),
                [
                    m("elapsed_s"),
                    m("host_s"),
                    m("device_s"),
                    m("cpu_s"),
                    w.metrics.get("host.requests").copied().unwrap_or(f64::NAN),
                ],
            );
        }
    }
    out
}

/// Keeps every core busy until dropped.
struct Load(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Load {
    fn start() -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
        let threads = (0..n)
            .map(|_| {
                let s = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 1u64;
                    while !s.load(Ordering::Relaxed) {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        std::hint::black_box(x);
                    }
                })
            })
            .collect();
        Load(stop, threads)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for t in self.1.drain(..) {
            t.join().unwrap();
        }
    }
}

#[test]
fn two_runs_one_under_load_give_the_same_modelled_times() {
    let festival = "host = \"festival-i7-4770\"";
    let quiet = run(festival);
    let loaded = {
        let _load = Load::start();
        run(festival)
    };
    assert_eq!(quiet.len(), 6);
    for (k, q) in &quiet {
        let l = &loaded[k];
        // Elapsed, host and device time are modelled: identical bits.
        assert_eq!(q[..3], l[..3], "{k}: {q:?} vs {l:?}");
        // Elapsed = device + host, never the CPU time.
        assert!(
            (q[0] - (q[1] + q[2])).abs() <= 1e-9 * q[0].max(1.0),
            "{k}: {q:?}"
        );
        assert!(
            q[1] > 0.0,
            "{k}: the default host profile prices the work: {q:?}"
        );
        assert!(
            q[3] > 0.0,
            "{k}: the measured CPU time is still recorded: {q:?}"
        );
    }
}

#[test]
fn the_host_profile_moves_only_the_hosts_share() {
    let none = run("");
    let festival = run("host = \"festival-i7-4770\"");
    let custom = run(
        "host = { operation_us = 0.0, node_read_us = 0.0, entry_us = 0.0, node_write_us = 0.0, candidate_us = 0.0, record_us = 0.0, result_us = 0.0, request_us = 1000.0 }",
    );
    for (k, n) in &none {
        let (f, c) = (&festival[k], &custom[k]);
        assert_eq!(n[1], 0.0, "{k}: the default profile prices nothing");
        assert_eq!(
            n[0], n[2],
            "{k}: without a host cost, elapsed is the device time"
        );
        assert_eq!(
            n[2], f[2],
            "{k}: the device time does not depend on the host"
        );
        assert!(f[1] > 0.0, "{k}");
        // A millisecond per request and nothing else: the host's share is the requests.
        assert!(c[1] >= 1e-3, "{k}: {c:?}");
        if k.ends_with("| construction") {
            assert!(c[4] > 0.0, "{k}: {c:?}");
            assert!((c[1] - c[4] * 1e-3).abs() < 1e-9, "{k}: {c:?}");
        }
    }
}

#[test]
fn an_unknown_or_bad_host_profile_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(&spec, SPEC.replace("HOST", "host = \"pentium\"")).unwrap();
    let e = Experiment::prepare(&spec).err().unwrap().to_string();
    assert!(e.contains("protocol.host") && e.contains("pentium"), "{e}");
    std::fs::write(
        &spec,
        SPEC.replace(
            "HOST",
            "host = { operation_us = -1.0, node_read_us = 0.0, entry_us = 0.0, node_write_us = 0.0, candidate_us = 0.0, record_us = 0.0, result_us = 0.0, request_us = 0.0 }",
        ),
    )
    .unwrap();
    let e = Experiment::prepare(&spec).err().unwrap().to_string();
    assert!(e.contains("operation_us"), "{e}");
}
