//! What a researcher sees of `spidx run`, `spidx results` and `spidx query` on a terminal:
//! the results database found without `--results`, experiment filters that filter, CSV
//! with plain typed columns, tables within 120 columns, modelled and wall times labelled,
//! headers on every table, each path named once in an error.

mod common;

use std::path::Path;

use common::{json_of, spidx};

const SPEC: &str = r#"
name = "tiny"
[dataset]
generate = { distribution = "buildings", count = 600 }
[protocol]
repetitions = 2
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rstar", reinsert = "30%" }]
page_size = ["2KB"]
device = ["ssd-v300", "hdd-7200"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "1%"
queries = 5
"#;

/// Runs the tiny spec into `dir/sub/results.db`; returns the summary `spidx run` printed.
fn run_tiny(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("tiny.toml"), SPEC).unwrap();
    let out = spidx()
        .current_dir(dir)
        .args(["run", "tiny.toml", "--results", "sub/results.db", "--quiet"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> (String, String) {
    let out = spidx().current_dir(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn fails(dir: &Path, args: &[&str]) -> String {
    let out = spidx().current_dir(dir).args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

/// The commit checked out where these tests were built, when that is a git checkout with
/// git at hand.
fn git_head() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let head = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && head.len() == 40 && head.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(head)
}

fn assert_fits(text: &str, what: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= 120,
            "{what}: a line of {} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn results_commands_find_filter_label_and_fit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // No database anywhere: the error says where it looked and what to do.
    let err = fails(d, &["results", "list"]);
    assert!(
        err.contains("looked for ./*.db and ./*/results.db") && err.contains("--results"),
        "{err}"
    );

    let summary = run_tiny(d);
    assert!(summary.contains("modelled"), "{summary}");
    assert!(summary.contains("wall time"), "{summary}");
    assert_fits(&summary, "run summary");

    // Found without --results, and said so.
    let (out, err) = ok(d, &["results", "list"]);
    assert!(err.contains("sub/results.db"), "{err}");
    assert!(out.contains("R*-tree 30% · 2KB · hdd-7200"), "{out}");
    assert_fits(&out, "results list");

    // Filters filter; an unknown experiment is an error naming the known ones.
    for args in [
        &["results", "list", "--experiment", "nosuch"][..],
        &[
            "results",
            "export",
            "--format",
            "csv",
            "--experiment",
            "nosuch",
        ],
        &["report", "--experiment", "nosuch", "--out", "rep"],
    ] {
        let err = fails(d, args);
        assert!(
            err.contains("no experiment 'nosuch'") && err.contains("tiny"),
            "{args:?}: {err}"
        );
    }
    let v = json_of(&[
        "results",
        "list",
        "--json",
        "--experiment",
        "tiny",
        "--results",
        d.join("sub/results.db").to_str().unwrap(),
    ]);
    assert_eq!(v["experiments"].as_array().unwrap().len(), 1);
    assert_eq!(v["runs"].as_array().unwrap().len(), 4);

    // CSV: one column per option, plain text, integers as integers.
    let (csv_text, _) = ok(d, &["results", "export", "--format", "csv"]);
    let mut rdr = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    for col in [
        "store_kind",
        "layout",
        "occupancy_leaf_min",
        "reads",
        "elapsed_s",
    ] {
        assert!(header.contains(&col.to_string()), "{col} not in {header:?}");
    }
    // The declared schema: the same columns whatever the database holds.
    let declared: Vec<&str> = spidx::experiment::db::export::COLUMNS
        .iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(header, declared);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), 8);
    let head = git_head();
    for r in &records {
        assert_eq!(&r[col("store_kind")], "direct");
        assert_eq!(&r[col("store")], "kind=direct");
        assert_eq!(&r[col("time_basis")], "modelled");
        let commit = &r[col("git_commit")];
        match &head {
            // Built from a git checkout: the commit it was built from, the one checked
            // out (the build script builds again when HEAD moves).
            Some(h) => assert_eq!(commit, h, "the build's commit"),
            None => assert_eq!(commit, "unknown", "built outside a git checkout"),
        }
        // Reals keep a decimal point, so a reader infers float whatever the value.
        assert!(r[col("occupancy_leaf_max")].contains('.'), "{:?}", r);
        assert_eq!(&r[col("layout")], "checked");
        for c in ["reads", "writes", "page_size", "run_id"] {
            r[col(c)]
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{c} = '{}' is not an integer", &r[col(c)]));
        }
        assert!(r[col("elapsed_s")].parse::<f64>().unwrap() > 0.0);
    }

    // show: within 120 columns, modelled times labelled; --wide for everything.
    let (show, _) = ok(d, &["results", "show", "1"]);
    assert_fits(&show, "results show");
    assert!(show.contains("elapsed (modelled)"), "{show}");
    assert!(show.contains("per query: median (modelled)"), "{show}");
    let (wide, _) = ok(d, &["results", "show", "1", "--wide"]);
    assert!(
        wide.contains("config_json") || wide.contains("\"device\""),
        "{wide}"
    );
    let (metrics, _) = ok(d, &["results", "show", "1", "--metrics"]);
    assert!(metrics.contains("device.host.read_ops"), "{metrics}");
    assert_fits(&metrics, "results show --metrics");
}

#[test]
fn query_output_has_headers_and_labels_its_times() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("b.fgb");
    spidx()
        .args(["dataset", "generate", "--distribution", "buildings"])
        .args(["--count", "2000", "--out"])
        .arg(&data)
        .assert()
        .success();
    let idx = d.join("idx");
    spidx()
        .args([
            "build", "--index", "rstar", "--device", "ssd-v300", "--data",
        ])
        .arg(&data)
        .arg("--out")
        .arg(&idx)
        .assert()
        .success();
    let (out, _) = ok(
        d,
        &[
            "query",
            idx.to_str().unwrap(),
            "--knn",
            "500000,500000",
            "--k",
            "3",
            "--ids",
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    let h = lines.iter().position(|l| *l == "id\tdistance").expect(&out);
    assert_eq!(lines.len() - h - 1, 3, "{out}");
    assert!(
        out.contains("modelled: simulated device time + host profile"),
        "{out}"
    );

    // A missing file is named once.
    let err = fails(
        d,
        &[
            "build",
            "--index",
            "rtree",
            "--data",
            "nofile.fgb",
            "--out",
            "x",
        ],
    );
    assert_eq!(err.matches("nofile.fgb").count(), 1, "{err}");
}

/// A PostgreSQL URL whose port nobody listens on: the error says so, naming host and port,
/// and the exit is non-zero (not only the driver's "error connecting to server").
#[test]
fn a_refused_postgres_port_is_named() {
    // A port that was free a moment ago: bound, then released.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://u@127.0.0.1:{port}/x");
    let out = spidx()
        .current_dir(dir.path())
        .args(["results", "list", "--results", &url])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "succeeded: {err}");
    assert_ne!(out.status.code(), None, "killed by a signal: {err}");
    assert!(
        err.contains(&format!("nothing listens at 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
