//! A device that fills up during `spidx build` (issue 11): a clear "device full" error and
//! a non-zero exit, and the index keeps its last checkpoint, which opens and checks clean —
//! on a simulated device and on a `file:` device, with the direct store and with FAST.

use predicates::prelude::*;
use predicates::str::contains;

mod common;

use common::{json_of, spidx};

#[test]
fn a_full_device_stops_the_build_and_keeps_the_last_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("v.npy");
    spidx()
        .args([
            "dataset",
            "generate",
            "--dims",
            "3",
            "--distribution",
            "uniform",
        ])
        .args(["--count", "20000", "--out"])
        .arg(&data)
        .assert()
        .success();
    let file_dev = format!("file:{}", tmp.path().join("pages.bin").display());
    let stores: [&[&str]; 2] = [
        &["--store", "direct"],
        &[
            "--store",
            "fast",
            "--write-buffer",
            "8KB",
            "--store-opt",
            "flushing_unit=2",
            "--store-opt",
            "flush_policy=fast-star",
            "--log-size",
            "128KB",
        ],
    ];
    for (di, device) in ["memory", file_dev.as_str()].into_iter().enumerate() {
        for (si, store) in stores.iter().enumerate() {
            let out = tmp.path().join(format!("idx-{di}-{si}"));
            let what = format!("{device} {store:?}");
            // 640 KB of 1 KB pages hold a few thousand of the 20,000 points.
            spidx()
                .args(["build", "--data"])
                .arg(&data)
                .args(["--index", "rtree", "--page-size", "1KB", "--device", device])
                .args([
                    "--device-param",
                    "capacity=640KB",
                    "--checkpoint-every",
                    "500",
                ])
                .args(*store)
                .arg("--out")
                .arg(&out)
                .assert()
                .failure()
                .stderr(
                    contains("device full")
                        .and(contains("keeps its last checkpoint"))
                        .and(contains("panicked").not()),
                );
            // The failed build left either its last checkpoint (clean) or changes after it
            // that a recovery rolls back (a journal: crashed, recoverable, exit 3), never
            // damage.
            let first = spidx()
                .args(["check", "--json"])
                .arg(&out)
                .output()
                .unwrap();
            let code = first.status.code();
            assert!(
                code == Some(0) || code == Some(3),
                "{what}: check exit {code:?}: {}",
                String::from_utf8_lossy(&first.stderr)
            );
            spidx()
                .args(["recover"])
                .arg(&out)
                .assert()
                .success()
                .stdout(contains("checks pass"));
            let check = json_of(&["check", out.to_str().unwrap(), "--json"]);
            assert_eq!(check["ok"], true, "{what}: {check}");
            let n = check["report"]["objects"].as_u64().unwrap();
            assert!(n >= 500, "{what}: {n} objects");
            if si == 0 {
                // The direct store's unit of durability is the checkpoint.
                assert_eq!(n % 500, 0, "{what}: {n} objects");
            }
            if device.starts_with("file:") {
                // The device file belongs to the failed index, which still exists.
                std::fs::remove_dir_all(&out).unwrap();
            }
        }
    }
}

/// A device too small for one page is refused up front, naming the capacity, instead of
/// failing inside the partition of node and object pages.
#[test]
fn a_device_smaller_than_a_page_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("u.fgb");
    spidx()
        .args(["dataset", "generate", "--distribution", "uniform"])
        .args(["--count", "100", "--out"])
        .arg(&data)
        .assert()
        .success();
    for device in [
        "memory".to_string(),
        format!("file:{}", tmp.path().join("p.bin").display()),
    ] {
        spidx()
            .args(["build", "--index", "rtree", "--device", &device])
            .args(["--device-param", "capacity=1", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(tmp.path().join(format!("idx-{}", device.len())))
            .assert()
            .failure()
            .stderr(contains("device capacity").and(contains("holds 0 page(s)")));
    }
}
