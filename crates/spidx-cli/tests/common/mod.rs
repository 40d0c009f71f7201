//! Helpers shared by the end-to-end tests: run the real `spidx` binary.

use assert_cmd::Command;

/// A command running the `spidx` binary built for these tests.
pub fn spidx() -> Command {
    Command::cargo_bin("spidx").unwrap()
}

/// Runs `spidx ARGS`, asserts success, and parses its standard output as JSON.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = spidx().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One exported result row: column name → value as written.
#[allow(dead_code)] // not every test file uses every helper
pub type ExportRow = std::collections::HashMap<String, String>;

/// `spidx results export --format csv --results DB`, asserted to succeed, parsed into rows.
#[allow(dead_code)]
pub fn export_rows(db: &str) -> Vec<ExportRow> {
    export_csv(db, &[])
}

/// `spidx results export --format csv --metrics --results DB` (every metric in long format:
/// run, workload, name, kind, value), asserted to succeed, parsed into rows.
#[allow(dead_code)]
pub fn export_metric_rows(db: &str) -> Vec<ExportRow> {
    export_csv(db, &["--metrics"])
}

fn export_csv(db: &str, extra: &[&str]) -> Vec<ExportRow> {
    let out = spidx()
        .args(["results", "export", "--format", "csv", "--results", db])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rdr = csv::Reader::from_reader(&out.stdout[..]);
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    rdr.records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

/// A number of an exported row (0 when empty), panicking on a missing column.
#[allow(dead_code)]
pub fn num(row: &ExportRow, col: &str) -> f64 {
    row.get(col)
        .unwrap_or_else(|| panic!("no column {col}"))
        .parse()
        .unwrap_or(0.0)
}

/// `spidx dataset generate ARGS --out DIR/NAME`, asserted to succeed; returns the path.
#[allow(dead_code)]
pub fn generate(dir: &std::path::Path, name: &str, args: &[&str]) -> String {
    let p = dir.join(name);
    spidx()
        .args(["dataset", "generate"])
        .args(args)
        .arg("--out")
        .arg(&p)
        .assert()
        .success();
    p.to_str().unwrap().to_string()
}

/// `COUNT` generated 2-d buildings in `DIR/b.fgb` (the default seed); returns the path.
#[allow(dead_code)]
pub fn buildings(dir: &std::path::Path, count: &str) -> String {
    generate(
        dir,
        "b.fgb",
        &["--distribution", "buildings", "--count", count],
    )
}

/// The ids `spidx query INDEX --window WINDOW --json` answers, as JSON.
#[allow(dead_code)]
pub fn window_ids(index: &str, window: &str) -> serde_json::Value {
    json_of(&["query", index, "--window", window, "--json"])["ids"].clone()
}

/// Asserts that `spidx build --data DATA --out OUT EXTRA` fails with an error containing
/// `needle`, without a panic and without creating `OUT`.
#[allow(dead_code)]
pub fn assert_build_refused(data: &str, out: &str, extra: &[&str], needle: &str) {
    let outp = spidx()
        .args(["build", "--data", data, "--out", out])
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&outp.stderr);
    assert!(
        !outp.status.success() && err.contains(needle),
        "{extra:?}: {err}"
    );
    assert!(!err.contains("panicked"), "{extra:?}: {err}");
    assert!(
        !std::path::Path::new(out).exists(),
        "{extra:?}: a refused build created {out}"
    );
}

/// Asserts that the report `html` lists every section in its navigation: each
/// `<section id="ID">` (but the context, which holds the navigation) has an `href="#ID"` in
/// the navigation paragraph, every link there leads to a section, and ids are unique.
#[allow(dead_code)]
pub fn assert_navigation_complete(html: &str) {
    let ids: Vec<&str> = html
        .split("<section id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').expect("a closing quote")])
        .collect();
    let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "section ids repeat: {ids:?}");
    let start = html
        .find("<p class=\"sections\">")
        .expect("the report has a navigation paragraph");
    let nav = &html[start..start + html[start..].find("</p>").expect("its end")];
    let links: std::collections::BTreeSet<&str> = nav
        .split("href=\"#")
        .skip(1)
        .map(|s| &s[..s.find('"').expect("a closing quote")])
        .collect();
    for id in ids.iter().filter(|id| **id != "context") {
        assert!(
            links.contains(id),
            "section {id} is missing from the navigation: {nav}"
        );
    }
    for l in &links {
        assert!(
            unique.contains(l),
            "the navigation links to no section: #{l}"
        );
    }
    assert!(ids.len() > 1, "a report has sections besides the context");
}

/// `spidx report --results DB --out OUT`, asserted to succeed; the page's HTML, with its
/// navigation checked to list every section.
#[allow(dead_code)]
pub fn report_html(db: &str, out: &std::path::Path) -> String {
    report_html_with(spidx(), db, out)
}

/// [`report_html`] run by `cmd` (the `spidx` command with, e.g., an environment set).
#[allow(dead_code)]
pub fn report_html_with(mut cmd: Command, db: &str, out: &std::path::Path) -> String {
    let run = cmd
        .args(["report", "--results", db, "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "spidx report: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_navigation_complete(&html);
    html
}

/// One store built beside the direct store on the same 3,000 buildings (2 KB pages, the
/// `seed-table2` device): [`Self::new`] builds both with `--json`, and
/// [`Self::assert_answers_like_direct`] checks the store's index against the direct one.
#[allow(dead_code)]
pub struct BesideDirect {
    pub tmp: tempfile::TempDir,
    /// The data file.
    pub data: String,
    /// `build --json` of the direct store (index `direct`).
    pub direct: serde_json::Value,
    /// `build --json` of the store (index `kind`).
    pub built: serde_json::Value,
    /// The store's kind, which names its index directory.
    pub kind: String,
}

#[allow(dead_code)]
impl BesideDirect {
    /// Builds the data with `index` (e.g. `["--index", "rstar"]`) on the direct store and
    /// with `store` (e.g. `["--store", "lcr", ...]`) on store `kind`, and checks that the
    /// store reports its kind and the same objects.
    pub fn new(kind: &str, index: &[&str], store: &[&str]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let data = buildings(tmp.path(), "3000");
        let mut base = vec!["build", "--data", &data];
        base.extend_from_slice(index);
        base.extend(["--page-size", "2KB", "--device", "seed-table2", "--json"]);
        let out = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
        let direct = json_of(&[&base[..], &["--out", &out("direct")]].concat());
        let built = json_of(&[&base[..], store, &["--out", &out(kind)]].concat());
        assert_eq!(built["store"]["kind"], kind);
        assert_eq!(built["objects"], direct["objects"]);
        BesideDirect {
            data,
            direct,
            built,
            kind: kind.to_string(),
            tmp,
        }
    }

    /// The path of index directory `name` in the test's directory.
    pub fn out(&self, name: &str) -> String {
        self.tmp.path().join(name).to_str().unwrap().to_string()
    }

    /// Asserts that `check` passes on both indices, a window query answers the same on
    /// both, and so it does after `recover` on the store's index, which names the store and
    /// drops no record; returns `recover --json`.
    pub fn assert_answers_like_direct(&self) -> serde_json::Value {
        let kind = self.kind.as_str();
        for dir in ["direct", kind] {
            spidx().args(["check", &self.out(dir)]).assert().success();
        }
        let q = |dir: &str| window_ids(&self.out(dir), "100000,100000,400000,500000");
        assert_eq!(q("direct"), q(kind));
        let rec = json_of(&["recover", &self.out(kind), "--json"]);
        assert_eq!(rec["store"], kind);
        assert_eq!(rec["recovery"]["records_dropped"], 0);
        assert_eq!(q("direct"), q(kind), "after recover");
        rec
    }
}
