//! Safe with files from strangers, end to end: no password in any output, results database
//! or report; control characters from a database escaped on the terminal; a multi-megabyte
//! run name listed, shown, exported and reported without blowing up; every
//! `--device-param` error naming its key and range; and no file spidx did not create
//! changed by any command without `--force`.

mod common;

use std::path::{Path, PathBuf};

use common::spidx;

/// The password every secret test hides.
const PW: &str = "hunter2-s3cret";

fn spec(dir: &Path, name: &str, description: &str, device: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            r#"name = "{name}"
description = "{description}"
results = "postgres://u:{PW}@127.0.0.1:1/db"
[dataset]
generate = {{ distribution = "uniform", count = 300, seed = 1 }}
[protocol]
repetitions = 1
[matrix]
index = [ {{ kind = "rtree", split = "linear" }} ]
page_size = ["4KB"]
device = ["{device}"]
[[workload]]
kind = "construction"
"#
        ),
    )
    .unwrap();
    p
}

/// Runs `spidx ARGS` and returns (success, stdout + stderr).
fn run(args: &[&str]) -> (bool, String) {
    let out = spidx().args(args).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn ok(args: &[&str]) -> String {
    let (success, text) = run(args);
    assert!(success, "{args:?}: {text}");
    text
}

fn refused(args: &[&str], needle: &str) {
    let (success, text) = run(args);
    assert!(!success, "{args:?} succeeded: {text}");
    assert!(text.contains(needle), "{args:?}: {text}");
}

/// A results database with one finished run of `spec`.
fn results_db(dir: &Path, description: &str) -> String {
    let s = spec(dir, "exp", description, "memory");
    let db = dir.join("r.db").display().to_string();
    let out = ok(&["run", s.to_str().unwrap(), "--results", &db]);
    assert!(!out.contains(PW), "spidx run printed the password: {out}");
    db
}

#[test]
fn no_password_in_any_output_database_or_report() {
    let dir = tempfile::tempdir().unwrap();
    let description = format!(
        "PGPASSWORD={PW} psql postgres://h/db?sslmode=disable&password={PW}; password = '{PW}'"
    );
    let db = results_db(dir.path(), &description);
    let report = dir.path().join("report");
    let mut outputs = vec![
        ok(&["results", "list", "--results", &db]),
        ok(&["results", "list", "--wide", "--results", &db]),
        ok(&["results", "list", "--json", "--results", &db]),
        ok(&["results", "show", "1", "--wide", "--results", &db]),
        ok(&["results", "show", "1", "--json", "--results", &db]),
        ok(&["results", "export", "--format", "json", "--results", &db]),
        ok(&[
            "results",
            "export",
            "--format",
            "csv",
            "--metrics",
            "--results",
            &db,
        ]),
        ok(&[
            "report",
            "--results",
            &db,
            "--out",
            report.to_str().unwrap(),
        ]),
    ];
    // A URL with the password in either place, in an error.
    for url in [
        format!("postgres://u:{PW}@127.0.0.1:1/db"),
        format!("postgresql://u@127.0.0.1:1/db?sslmode=disable&password={PW}"),
    ] {
        let (success, text) = run(&["results", "list", "--results", &url]);
        assert!(!success);
        assert!(text.contains("***"), "{text}");
        outputs.push(text);
    }
    for o in &outputs {
        assert!(!o.contains(PW), "the password was printed: {o}");
    }
    let stored = std::fs::read(&db).unwrap();
    assert!(
        !stored.windows(PW.len()).any(|w| w == PW.as_bytes()),
        "the results database holds the password"
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let text: String = c
        .query_row("SELECT spec_text FROM experiments", [], |r| r.get(0))
        .unwrap();
    assert!(text.contains("postgres://u:***@127.0.0.1:1/db"), "{text}");
    assert!(text.contains("PGPASSWORD=***"), "{text}");
    for f in std::fs::read_dir(&report).unwrap() {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        assert!(!bytes.windows(PW.len()).any(|w| w == PW.as_bytes()));
    }
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(html.contains("PGPASSWORD=***"), "the spec is shown, masked");
}

#[test]
fn control_characters_from_a_database_are_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = results_db(dir.path(), "plain");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE runs SET name = 'evil' || char(27) || ']0;pwned' || char(7) || char(27) || '[2J' || char(155) || 'x'",
        [],
    )
    .unwrap();
    c.execute(
        "UPDATE experiments SET name = 'e' || char(27) || '[31m'",
        [],
    )
    .unwrap();
    drop(c);
    let report = dir.path().join("report");
    for out in [
        ok(&["results", "list", "--results", &db]),
        ok(&["results", "list", "--wide", "--results", &db]),
        ok(&["results", "show", "1", "--results", &db]),
        ok(&["results", "show", "1", "--wide", "--results", &db]),
        ok(&[
            "report",
            "--results",
            &db,
            "--out",
            report.to_str().unwrap(),
        ]),
    ] {
        assert!(
            !out.chars().any(|ch| ch.is_control() && ch != '\n'),
            "a control character reached the terminal: {out:?}"
        );
        assert!(out.contains("e\\x1b[31m"), "{out}");
    }
    let out = ok(&["results", "list", "--results", &db]);
    assert!(
        out.contains("evil\\x1b]0;pwned\\x07\\x1b[2J\\u{9b}x"),
        "{out}"
    );
}

/// `results export --format csv` keeps a run name's bytes in a pipe (data stays data) and
/// escapes them on a terminal (a pseudo-terminal from util-linux's `script`, which every
/// Debian system has).
#[test]
fn csv_on_a_terminal_is_escaped_and_in_a_pipe_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = results_db(dir.path(), "plain");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE runs SET name = 'evil' || char(27) || ']0;pwned' || char(7)",
        [],
    )
    .unwrap();
    drop(c);
    let piped = ok(&["results", "export", "--format", "csv", "--results", &db]);
    assert!(piped.contains("evil\u{1b}]0;pwned\u{7}"), "{piped:?}");
    let cmd = format!(
        "{} results export --format csv --results {db}",
        env!("CARGO_BIN_EXE_spidx")
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("util-linux's `script` runs the export on a pseudo-terminal");
    assert!(out.status.success(), "{out:?}");
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(tty.contains("evil\\x1b]0;pwned\\x07"), "{tty:?}");
    assert!(
        !tty.chars()
            .any(|ch| ch.is_control() && !matches!(ch, '\n' | '\r')),
        "a control character reached the terminal: {tty:?}"
    );
}

#[test]
fn a_four_megabyte_run_name_is_listed_shown_exported_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = results_db(dir.path(), "plain");
    let name = "n".repeat(4 << 20);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute("UPDATE runs SET name = ?1", [&name]).unwrap();
    drop(c);
    for args in [
        vec!["results", "list"],
        vec!["results", "list", "--wide"],
        vec!["results", "show", "1"],
        vec!["results", "show", "1", "--wide"],
    ] {
        let mut a = args.clone();
        a.extend(["--results", &db]);
        let out = ok(&a);
        // Shown, cut (a table wraps the cut name and its note over several lines).
        assert!(out.contains(&"n".repeat(10)), "{args:?}: {out}");
        assert!(out.len() < 1 << 20, "{args:?}: {} bytes", out.len());
    }
    let json = ok(&["results", "export", "--format", "json", "--results", &db]);
    assert!(json.contains(&name), "an export keeps the name whole");
    let report = dir.path().join("report");
    let out = ok(&[
        "report",
        "--results",
        &db,
        "--out",
        report.to_str().unwrap(),
    ]);
    assert!(out.contains("index.html"), "{out}");
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(html.len() < 4 << 20, "the report labels cut the name");
}

#[test]
fn device_param_errors_name_the_key_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let data = common::generate(
        dir.path(),
        "d.fgb",
        &["--distribution", "uniform", "--count", "100"],
    );
    let out = dir.path().join("idx").display().to_string();
    let build = |device: &str, param: &str, needle: &str| {
        refused(
            &[
                "build",
                "--index",
                "rtree",
                "--data",
                &data,
                "--out",
                &out,
                "--device",
                device,
                "--device-param",
                param,
            ],
            needle,
        )
    };
    build(
        "hdd-7200",
        "rpm=-7200",
        "'rpm' = -7200: out of range: expected an integer from 0 to 4294967295",
    );
    build(
        "ssd-v300",
        "queue_depth=-1",
        "'queue_depth' = -1: out of range",
    );
    build(
        "ssd-v300",
        "flash.read_us=fast",
        "'flash.read_us' expects a number",
    );
    build("hdd-7200", "rpm=500", "rpm");
    refused(
        &[
            "iotest",
            "--device",
            "hdd-7200",
            "--device-param",
            "heads=-2",
            "--pattern",
            "randread",
            "--ops",
            "10",
        ],
        "'heads' = -2: out of range",
    );
}

/// A file spidx did not create, and its contents.
fn foreign(dir: &Path, name: &str) -> (PathBuf, Vec<u8>) {
    let p = dir.join(name);
    let bytes = format!("not spidx's: {name}\n").into_bytes();
    std::fs::write(&p, &bytes).unwrap();
    (p, bytes)
}

#[test]
fn files_spidx_did_not_create_are_unchanged_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::generate(d, "d.fgb", &["--distribution", "uniform", "--count", "100"]);
    let db = results_db(d, "plain");
    let (theirs, bytes) = foreign(d, "theirs.bin");
    let t = theirs.to_str().unwrap();
    let device = format!("file:{t}");
    let idx = d.join("idx").display().to_string();
    let findings = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seeds/findings.toml"
    );
    let file_spec = spec(d, "onfile", "plain", &device);
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "build",
                "--index",
                "rtree",
                "--data",
                &data,
                "--out",
                &idx,
                "--device",
                &device,
                "--device-param",
                "direct=false",
                "--device-param",
                "capacity=4MB",
            ],
            "--force",
        ),
        (
            vec![
                "iotest",
                "--device",
                &device,
                "--device-param",
                "direct=false",
                "--pattern",
                "randwrite",
                "--ops",
                "10",
            ],
            "--force",
        ),
        (
            vec!["run", file_spec.to_str().unwrap(), "--results", &db],
            "--force",
        ),
        (
            vec![
                "results",
                "export",
                "--format",
                "csv",
                "--results",
                &db,
                "--out",
                t,
            ],
            "--force",
        ),
        (
            vec![
                "results",
                "export",
                "--format",
                "parquet",
                "--results",
                &db,
                "--out",
                t,
            ],
            "--force",
        ),
        (
            vec![
                "reproduce",
                "--findings",
                findings,
                "--results",
                &db,
                "--out",
                t,
            ],
            "--force",
        ),
    ];
    // The output file is a symlink to theirs: refused, --force or not.
    let link = d.join("link.csv");
    std::os::unix::fs::symlink(&theirs, &link).unwrap();
    let l = link.to_str().unwrap();
    cases.push((
        vec![
            "results",
            "export",
            "--format",
            "csv",
            "--results",
            &db,
            "--out",
            l,
            "--force",
        ],
        "symbolic link",
    ));
    for (args, needle) in &cases {
        refused(args, needle);
        assert_eq!(
            std::fs::read(&theirs).unwrap(),
            bytes,
            "{args:?} changed the file"
        );
    }
    // Format-named outputs.
    let (fgb, fgb_bytes) = foreign(d, "theirs.fgb");
    let f = fgb.to_str().unwrap();
    for args in [
        vec![
            "dataset",
            "generate",
            "--distribution",
            "uniform",
            "--count",
            "10",
            "--out",
            f,
        ],
        vec!["dataset", "import", &data, "--out", f],
    ] {
        refused(&args, "--force");
        assert_eq!(std::fs::read(&fgb).unwrap(), fgb_bytes);
    }
    // A report directory holding someone else's files.
    let rep = d.join("rep");
    std::fs::create_dir(&rep).unwrap();
    let (page, page_bytes) = foreign(&rep, "index.html");
    refused(
        &["report", "--results", &db, "--out", rep.to_str().unwrap()],
        "--force",
    );
    assert_eq!(std::fs::read(&page).unwrap(), page_bytes);
    // With --force, it is used.
    ok(&[
        "results",
        "export",
        "--format",
        "csv",
        "--results",
        &db,
        "--out",
        t,
        "--force",
    ]);
    assert_ne!(std::fs::read(&theirs).unwrap(), bytes);
}

/// CRC-32 (IEEE), as index.json's seal uses.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn recover_leaves_a_file_the_index_does_not_vouch_for_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = common::generate(d, "d.fgb", &["--distribution", "uniform", "--count", "100"]);
    let idx = d.join("idx");
    let device = format!("file:{}", d.join("dev.bin").display());
    ok(&[
        "build",
        "--index",
        "rtree",
        "--data",
        &data,
        "--out",
        idx.to_str().unwrap(),
        "--device",
        &device,
        "--device-param",
        "direct=false",
        "--device-param",
        "capacity=4MB",
    ]);
    let (theirs, bytes) = foreign(d, "theirs.bin");
    // index.json edited to name their file, with a valid checksum.
    let manifest = idx.join("index.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let m = v.as_object_mut().unwrap();
    m.remove("checksum");
    m["options"]["device"]["path"] = theirs.display().to_string().into();
    let crc = crc32(&serde_json::to_vec(&v).unwrap());
    v["checksum"] = format!("crc32:{crc:08x}").into();
    std::fs::write(&manifest, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    refused(&["recover", idx.to_str().unwrap()], "not vouched for");
    assert_eq!(
        std::fs::read(&theirs).unwrap(),
        bytes,
        "recover changed the file"
    );
}

#[test]
fn a_rewritten_report_leaves_no_stale_chart() {
    let dir = tempfile::tempdir().unwrap();
    let db = results_db(dir.path(), "plain");
    let rep = dir.path().join("rep");
    let r = rep.to_str().unwrap();
    ok(&["report", "--results", &db, "--out", r]);
    assert!(rep.join(".spidx-report").is_file());
    // A chart of an earlier report that this one does not draw.
    let marker = std::fs::read_to_string(rep.join(".spidx-report")).unwrap();
    std::fs::write(rep.join("stale_chart.svg"), "<svg/>").unwrap();
    std::fs::write(
        rep.join(".spidx-report"),
        format!("{marker}stale_chart.svg\n"),
    )
    .unwrap();
    std::fs::write(rep.join("notes.txt"), "mine").unwrap();
    ok(&["report", "--results", &db, "--out", r]);
    assert!(
        !rep.join("stale_chart.svg").exists(),
        "the stale chart is removed"
    );
    assert_eq!(
        std::fs::read_to_string(rep.join("notes.txt")).unwrap(),
        "mine"
    );
    assert!(rep.join("index.html").is_file());
}

/// Peak resident memory, in KB, of `spidx ARGS` run to success (its own peak, read with
/// `wait4`, not that of other tests' children); its output is discarded.
// The child is reaped by `wait4` (which also gives its peak memory), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn peak_rss_kb(args: &[&str]) -> i64 {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_spidx"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for the child `pid`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid for writes; `pid` is our unwaited child.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{args:?}: exit status {status}"
    );
    usage.ru_maxrss
}

/// The metrics export as the whole table used to be written (every row collected from
/// `ResultsDb::metrics`, typed, then written at once): what the streamed export must equal.
fn collected_metrics_export(db: &str, format: &str) -> String {
    use serde_json::Value;
    use spidx::experiment::db::export::{cell_text, typed, ColumnType as T};
    let types = [T::Text, T::Int, T::Text, T::Text, T::Text, T::Text, T::Real];
    let rdb = spidx::experiment::db::ResultsDb::open_existing(Path::new(db)).unwrap();
    let mut t = rdb.metrics(None, None).unwrap();
    for r in &mut t.rows {
        for (v, ty) in r.iter_mut().zip(types) {
            *v = typed(std::mem::take(v), ty);
        }
    }
    if format == "json" {
        return serde_json::to_string_pretty(&t.objects()).unwrap() + "\n";
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&t.columns).unwrap();
    for r in &t.rows {
        w.write_record(r.iter().map(|v| match v {
            Value::Number(n) if n.is_f64() => n.to_string(),
            other => cell_text(other),
        }))
        .unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

/// `results export --metrics` streams its rows: the output is the table the collected
/// export wrote (two runs, CSV and JSON), and over a run named with 4 MB whose 40 metrics
/// each repeat the name (160 MB of output) CSV, JSON and Parquet each stay under
/// `BOUND_MB` of resident memory (collecting the table took 200 MB for CSV and 370 MB for
/// JSON and Parquet; streamed, a debug build peaks at 26, 34 and 53 MB).
#[test]
fn metrics_export_streams_in_memory_bounded_by_a_row() {
    const BOUND_MB: i64 = 96;
    let dir = tempfile::tempdir().unwrap();
    let db = results_db(dir.path(), "plain");
    let s = dir.path().join("exp.toml");
    ok(&["run", s.to_str().unwrap(), "--results", &db]);
    for format in ["csv", "json"] {
        let streamed = ok(&[
            "results",
            "export",
            "--metrics",
            "--format",
            format,
            "--results",
            &db,
        ]);
        let want = collected_metrics_export(&db, format);
        assert!(want.lines().count() > 100, "{format}: two runs' metrics");
        assert!(streamed == want, "{format}: the streamed export differs");
    }
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "DELETE FROM metrics WHERE run_id > 1 OR rowid NOT IN (SELECT rowid FROM metrics WHERE run_id = 1 ORDER BY rowid LIMIT 40)",
        [],
    )
    .unwrap();
    c.execute("UPDATE runs SET name = ?1", [&"n".repeat(4 << 20)])
        .unwrap();
    drop(c);
    for format in ["csv", "json", "parquet"] {
        let out = dir.path().join(format!("m.{format}"));
        let mut args = vec![
            "results",
            "export",
            "--metrics",
            "--format",
            format,
            "--results",
            &db,
        ];
        let out_arg = out.to_str().unwrap();
        if format == "parquet" {
            args.extend(["--out", out_arg]);
        }
        let kb = peak_rss_kb(&args);
        eprintln!("results export --metrics --format {format}: peak RSS {kb} KB");
        assert!(
            kb < BOUND_MB << 10,
            "{format}: peak RSS {kb} KB, over {BOUND_MB} MB"
        );
    }
    let pq = std::fs::metadata(dir.path().join("m.parquet")).unwrap();
    assert!(pq.len() > 4 << 20, "the Parquet file holds the name");
}

/// `dataset generate` writes a temporary file beside `--out` and renames it: a link
/// planted at the temporary name is neither followed (its target, existing or not, is
/// untouched) nor removed, and the command fails naming it.
#[test]
fn dataset_generate_never_writes_through_a_link_at_its_temporary_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (theirs, bytes) = foreign(d, "theirs.txt");
    let out = d.join("g.fgb");
    let tmp = d.join(".g.fgb.partial");
    let nowhere = d.join("nowhere");
    for target in [&theirs, &nowhere] {
        std::os::unix::fs::symlink(target, &tmp).unwrap();
        refused(
            &[
                "dataset",
                "generate",
                "--distribution",
                "uniform",
                "--count",
                "100",
                "--out",
                out.to_str().unwrap(),
            ],
            ".g.fgb.partial",
        );
        assert!(std::fs::symlink_metadata(&tmp).unwrap().is_symlink());
        std::fs::remove_file(&tmp).unwrap();
    }
    assert_eq!(std::fs::read(&theirs).unwrap(), bytes);
    assert!(!nowhere.exists() && !out.exists());
    common::generate(d, "g.fgb", &["--distribution", "uniform", "--count", "100"]);
    assert!(out.is_file() && !tmp.exists());
}
