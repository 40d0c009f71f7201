//! Golden counts: every deterministic figure of reduced runs of every shipped spec (the
//! quickstart, `examples/`, the seeds' specs) and of every store × index variant
//! (`tests/golden/specs/`), compared with the reference checked in under `tests/golden/`.
//!
//! A change that moves one split, one flush choice, one device model's count or one answer
//! fails here with a diff naming the spec, the run, the workload and the metric
//! (`old → new`). Counts are reads and writes by kind, flash reads/writes/erases and GC
//! copies, modelled device time, modelled host and elapsed time (the host profile's price
//! of the counted operations), tree shape and digest, answers — everything a run records
//! except what depends on the machine (measured CPU and wall time, and the times derived
//! from them; see [`machine_dependent`]).
//!
//! When a change is meant to move counts, regenerate the reference and say why in the
//! commit message:
//!
//! ```sh
//! SPIDX_BLESS=1 cargo test -p spidx --test golden_counts
//! ```
//!
//! The runs are reduced so that the whole suite takes a few minutes of CI (see [`Reduce`]):
//! at most `count` objects, at most `queries` queries per workload, one repetition, and
//! the buffers (write buffers, page buffers) divided by `buffer_divisor` so that the
//! buffered stores still flush, evict and compact on the smaller data.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use spidx::experiment::Experiment;

/// How a spec is reduced for the golden run.
#[derive(Clone, Copy)]
struct Reduce {
    /// Most objects of a generated dataset.
    count: i64,
    /// Most queries of a range, point or kNN workload.
    queries: i64,
    /// Most operations of a mixed workload.
    operations: i64,
    /// Write buffers and page buffers are divided by this (sizes written `512KB`).
    buffer_divisor: u64,
}

const DEFAULT: Reduce = Reduce {
    count: 5000,
    queries: 10,
    operations: 300,
    buffer_divisor: 8,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository's root")
}

fn golden_dir() -> PathBuf {
    root().join("crates/spidx/tests/golden")
}

/// Whether a metric is left out of the reference: configured values (`settings`: they
/// restate the spec), the device details of the object store's load and the final
/// write-back beyond their host and flash counts and device time, and anything that
/// depends on the machine (see [`machine_dependent`]).
fn left_out(name: &str) -> bool {
    if name.contains("settings.") {
        return true;
    }
    if let Some(rest) = name
        .strip_prefix("load.")
        .or_else(|| name.strip_prefix("final_flush."))
    {
        let kept = rest == "device_s"
            || rest.starts_with("device.host.")
            || rest.starts_with("device.flash.flash_")
            || rest == "device.flash.erases";
        return !kept;
    }
    machine_dependent(name) && !kept_phase_metric(name)
}

/// Whether a metric depends on the machine (CPU or wall time): those are left out.
/// Modelled device, host and elapsed time (`device_s`, `host_s`, `elapsed_s` on simulated
/// devices) are deterministic and kept.
fn machine_dependent(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    name.contains("cpu_s")
        || name.contains("wall")
        || name.starts_with("filter.")
        || name.starts_with("refinement.")
        || name.starts_with("gauges.latency")
        || name.starts_with("gauges.throughput")
        || name.starts_with("makespan")
        || matches!(last, "cpu_s" | "index_s" | "overhead_s")
}

/// Keeps the modelled parts of the phases the filter excluded wholesale.
fn kept_phase_metric(name: &str) -> bool {
    (name.starts_with("filter.") || name.starts_with("refinement.")) && !name.contains("cpu_s")
}

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("KB") {
        (n, 1024)
    } else if let Some(n) = s.strip_suffix("MB") {
        (n, 1024 * 1024)
    } else if let Some(n) = s.strip_suffix("GB") {
        (n, 1024 * 1024 * 1024)
    } else {
        (s, 1)
    };
    num.trim().parse::<u64>().ok().map(|n| n * mul)
}

fn format_size(b: u64) -> String {
    if b.is_multiple_of(1024) {
        format!("{}KB", b / 1024)
    } else {
        b.to_string()
    }
}

fn scale_size(v: &mut toml::Value, div: u64, floor: u64) {
    let bytes = match v {
        toml::Value::String(s) => parse_size(s),
        toml::Value::Integer(i) => u64::try_from(*i).ok(),
        _ => None,
    };
    if let Some(b) = bytes {
        // Whole KB, at least 16KB and at least what the store needs (a flushing unit of the
        // largest page, outside the read buffer's share), never more than written.
        let scaled = ((b / div) / 1024 * 1024).max(floor).max(16 * 1024).min(b);
        *v = toml::Value::String(format_size(scaled));
    }
}

/// The spec's text with the reduction applied.
fn reduce(text: &str, r: Reduce) -> String {
    let mut spec: toml::Table = text.parse().expect("spec parses as TOML");
    if let Some(toml::Value::Table(ds)) = spec.get_mut("dataset") {
        if let Some(toml::Value::Table(g)) = ds.get_mut("generate") {
            if let Some(toml::Value::Integer(c)) = g.get_mut("count") {
                *c = (*c).min(r.count);
            }
        }
    }
    let protocol = spec
        .entry("protocol")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if let toml::Value::Table(p) = protocol {
        p.insert("repetitions".into(), toml::Value::Integer(1));
        p.insert("warmup".into(), toml::Value::Integer(0));
    }
    if let Some(toml::Value::Table(m)) = spec.get_mut("matrix") {
        let max_page = match m.get("page_size") {
            Some(toml::Value::Array(ps)) => ps
                .iter()
                .filter_map(|p| p.as_str().and_then(parse_size))
                .max()
                .unwrap_or(4096),
            _ => 4096,
        };
        if let Some(toml::Value::Array(stores)) = m.get_mut("store") {
            for s in stores {
                if let toml::Value::Table(t) = s {
                    let unit = t
                        .get("flushing_unit")
                        .and_then(toml::Value::as_integer)
                        .unwrap_or(1) as u64;
                    let efind = t.get("kind").and_then(toml::Value::as_str) == Some("efind");
                    // eFIND's read buffer (20 % by default) must hold a page too.
                    let read_perc = t
                        .get("read_buffer_perc")
                        .and_then(toml::Value::as_integer)
                        .map_or(if efind { 20 } else { 0 }, |p| p as u64);
                    let floor = (unit * max_page * 100).div_ceil(100 - read_perc.min(90));
                    let floor = match read_perc {
                        0 => floor,
                        p => floor.max((max_page * 100).div_ceil(p)),
                    };
                    // FAST's default log (16 × the buffer) must hold its minimum
                    // (2 × (4 × buffer + 2 × unit × page + 16 × page) + 2 × page).
                    let log_floor = ((4 * unit + 34) * max_page).div_ceil(8);
                    let floor = floor.max(log_floor).div_ceil(1024) * 1024;
                    for key in ["write_buffer", "buffer"] {
                        if let Some(v) = t.get_mut(key) {
                            scale_size(v, r.buffer_divisor, floor);
                        }
                    }
                }
            }
        }
        if let Some(toml::Value::Array(buffers)) = m.get_mut("buffer") {
            for b in buffers {
                if let toml::Value::String(s) = b {
                    if let Some((policy, size)) = s.split_once(':') {
                        let (size, rest) = match size.split_once(':') {
                            Some((a, b)) => (a.to_string(), format!(":{b}")),
                            None => (size.to_string(), String::new()),
                        };
                        let mut v = toml::Value::String(size);
                        scale_size(&mut v, r.buffer_divisor, 0);
                        if let toml::Value::String(scaled) = v {
                            *s = format!("{policy}:{scaled}{rest}");
                        }
                    }
                }
            }
        }
    }
    if let Some(toml::Value::Array(ws)) = spec.get_mut("workload") {
        for w in ws {
            let toml::Value::Table(t) = w else { continue };
            let kind = t.get("kind").and_then(|k| k.as_str()).unwrap_or("");
            match kind {
                "range" | "point" | "knn" if !t.contains_key("windows") => {
                    let q = t
                        .get("queries")
                        .and_then(toml::Value::as_integer)
                        .unwrap_or(100);
                    t.insert("queries".into(), toml::Value::Integer(q.min(r.queries)));
                }
                "mixed" => {
                    let o = t
                        .get("operations")
                        .and_then(toml::Value::as_integer)
                        .unwrap_or(1000);
                    t.insert(
                        "operations".into(),
                        toml::Value::Integer(o.min(r.operations)),
                    );
                }
                _ => {}
            }
        }
    }
    emit(&spec)
}

/// TOML text of a spec: top-level keys, then each table with its nested tables inline
/// (`generate = { ... }`, as spec files write them), then the arrays of tables.
fn emit(spec: &toml::Table) -> String {
    let is_tables = |v: &toml::Value| matches!(v, toml::Value::Array(a) if !a.is_empty() && a.iter().all(toml::Value::is_table));
    let mut out = String::new();
    for (k, v) in spec {
        if !v.is_table() && !is_tables(v) {
            writeln!(out, "{k} = {v}").unwrap();
        }
    }
    for (k, v) in spec {
        if let toml::Value::Table(t) = v {
            writeln!(out, "\n[{k}]").unwrap();
            for (k2, v2) in t {
                writeln!(out, "{k2} = {v2}").unwrap();
            }
        }
    }
    for (k, v) in spec {
        if let (toml::Value::Array(a), true) = (v, is_tables(v)) {
            for t in a {
                writeln!(out, "\n[[{k}]]").unwrap();
                for (k2, v2) in t.as_table().expect("a table") {
                    writeln!(out, "{k2} = {v2}").unwrap();
                }
            }
        }
    }
    out
}

/// One reduced spec's figures: run → workload → metric → value.
type Figures = BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>>;

fn run_spec(rel: &str, r: Reduce) -> (String, Figures) {
    let path = root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let reduced = reduce(&text, r);
    let tmp = tempfile::tempdir().unwrap();
    // The reduced spec sits beside the original, so that its relative paths still resolve.
    let dir = path.parent().unwrap();
    let spec_path = dir.join(format!(
        ".golden-{}-{}.toml",
        std::process::id(),
        path.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(&spec_path, &reduced).unwrap();
    let exp = Experiment::prepare(&spec_path);
    std::fs::remove_file(&spec_path).ok();
    let exp = exp.unwrap_or_else(|e| panic!("{rel} (reduced): {e}"));
    let mut figures = Figures::new();
    for (i, run) in exp.runs.iter().enumerate() {
        let scratch = tmp.path().join(format!("run{i}"));
        let res = exp
            .run(run, &scratch, &mut |_| {})
            .unwrap_or_else(|e| panic!("{rel}: run '{}': {e}", run.name));
        let per_run = figures.entry(run.name.clone()).or_default();
        for w in &res.workloads {
            let m = per_run.entry(w.name.clone()).or_default();
            for (name, value) in &w.metrics {
                if !left_out(name) {
                    m.insert(name.clone(), *value);
                }
            }
        }
    }
    let header = format!(
        "# golden counts of {rel}, reduced: at most {} objects, {} queries, {} mixed operations, 1 repetition, buffers / {}\n# regenerate: SPIDX_BLESS=1 cargo test -p spidx --test golden_counts\n",
        r.count, r.queries, r.operations, r.buffer_divisor
    );
    (header, figures)
}

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:e}")
    }
}

/// The reference's text: a `[run | workload]` line, then its `metric = value` lines.
fn render(header: &str, f: &Figures) -> String {
    let mut out = header.to_string();
    for (run, ws) in f {
        for (w, ms) in ws {
            writeln!(out, "[{run} | {w}]").unwrap();
            for (m, v) in ms {
                writeln!(out, "{m} = {}", format_value(*v)).unwrap();
            }
        }
    }
    out
}

fn parse(text: &str) -> Figures {
    let mut f = Figures::new();
    let mut at: Option<(String, String)> = None;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(head) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let (run, w) = head
                .rsplit_once(" | ")
                .expect("golden line: [RUN | WORKLOAD]");
            at = Some((run.to_string(), w.to_string()));
            continue;
        }
        let (run, w) = at
            .as_ref()
            .expect("golden metric before any [RUN | WORKLOAD]");
        let (m, value) = line
            .rsplit_once(" = ")
            .expect("golden line: METRIC = VALUE");
        let v: f64 = value.parse().expect("golden value");
        f.entry(run.clone())
            .or_default()
            .entry(w.clone())
            .or_default()
            .insert(m.to_string(), v);
    }
    f
}

/// Equal up to the last bits of a float printed and read back.
fn same(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

/// The differences of `new` from `old`, one readable line each.
fn diff(rel: &str, old: &Figures, new: &Figures) -> Vec<String> {
    let mut out = Vec::new();
    for run in old.keys().filter(|r| !new.contains_key(*r)) {
        out.push(format!("{rel} | {run}: run gone"));
    }
    for (run, ws) in new {
        let Some(ows) = old.get(run) else {
            out.push(format!("{rel} | {run}: new run"));
            continue;
        };
        for w in ows.keys().filter(|w| !ws.contains_key(*w)) {
            out.push(format!("{rel} | {run} | {w}: workload gone"));
        }
        for (w, ms) in ws {
            let Some(oms) = ows.get(w) else {
                out.push(format!("{rel} | {run} | {w}: new workload"));
                continue;
            };
            for (m, ov) in oms {
                match ms.get(m) {
                    None => out.push(format!(
                        "{rel} | {run} | {w} | {m}: {} → gone",
                        format_value(*ov)
                    )),
                    Some(nv) if !same(*ov, *nv) => out.push(format!(
                        "{rel} | {run} | {w} | {m}: {} → {}",
                        format_value(*ov),
                        format_value(*nv)
                    )),
                    _ => {}
                }
            }
            for (m, nv) in ms.iter().filter(|(m, _)| !oms.contains_key(*m)) {
                out.push(format!(
                    "{rel} | {run} | {w} | {m}: new = {}",
                    format_value(*nv)
                ));
            }
        }
    }
    out
}

fn golden_file(rel: &str) -> PathBuf {
    let name = rel
        .trim_start_matches("examples/")
        .trim_start_matches("crates/spidx/tests/golden/specs/")
        .trim_end_matches(".toml")
        .replace('/', "__");
    golden_dir().join(format!("{name}.txt"))
}

fn check(rel: &str, r: Reduce) {
    let (header, figures) = run_spec(rel, r);
    let file = golden_file(rel);
    if std::env::var_os("SPIDX_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&file, render(&header, &figures)).unwrap();
        eprintln!("wrote {}", file.display());
        return;
    }
    let old = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\nno golden reference for {rel}: generate it with\n  SPIDX_BLESS=1 cargo test -p spidx --test golden_counts",
            file.display()
        )
    });
    let lines = diff(rel, &parse(&old), &figures);
    if !lines.is_empty() {
        const SHOWN: usize = 60;
        let mut msg = format!(
            "{} golden counts of {rel} changed (spec | run | workload | metric: old → new):\n",
            lines.len()
        );
        for l in lines.iter().take(SHOWN) {
            msg.push_str(l);
            msg.push('\n');
        }
        if lines.len() > SHOWN {
            writeln!(msg, "... and {} more", lines.len() - SHOWN).unwrap();
        }
        msg.push_str("If the change is meant to move counts: SPIDX_BLESS=1 cargo test -p spidx --test golden_counts, and say why in the commit.");
        panic!("{msg}");
    }
}

/// Every spec the golden suite covers (paths from the repository's root).
const SPECS: &[&str] = &[
    "examples/quickstart.toml",
    "examples/efind_vs_fast.toml",
    "examples/fast_vs_plain.toml",
    "examples/flash_aware.toml",
    "examples/large.toml",
    "examples/write_back_buffer.toml",
    "examples/python/small_matrix.toml",
    "examples/defaults/stores.toml",
    "examples/hdd_cache_sensitivity/n30k.toml",
    "examples/hdd_cache_sensitivity/n100k.toml",
    "examples/hdd_cache_sensitivity/n300k.toml",
    "examples/hdd_cache_sensitivity/n1m.toml",
    "examples/seeds/efind-fig2.toml",
    "examples/seeds/emrich_dims.toml",
    "examples/seeds/emrich_k.toml",
    "examples/seeds/emrich_pagesize.toml",
    "examples/seeds/emrich_threads.toml",
    "examples/seeds/flashsim-fast.toml",
    "examples/seeds/flashsim-plain.toml",
    "examples/seeds/jidm-cloud-construction.toml",
    "examples/seeds/jidm-cloud-queries.toml",
    "examples/seeds/jidm-local-construction.toml",
    "examples/seeds/jidm-local-queries.toml",
    "examples/seeds/jidm-matrix.toml",
    "examples/seeds/order-effect/fast-as-stored.toml",
    "examples/seeds/order-effect/fast-clustered.toml",
    "examples/seeds/order-effect/plain-as-stored.toml",
    "examples/seeds/order-effect/plain-clustered.toml",
    "examples/seeds/order-effect/fast-clustered-16384.toml",
    "examples/seeds/order-effect/plain-clustered-16384.toml",
    "examples/seeds/order-effect/fast-clustered-65536.toml",
    "examples/seeds/order-effect/plain-clustered-65536.toml",
    "examples/seeds/order-effect/fast-clustered-262144.toml",
    "examples/seeds/order-effect/plain-clustered-262144.toml",
    "examples/seeds/papers-accounting/fast.toml",
    "examples/seeds/papers-accounting/plain.toml",
    "examples/seeds/sensitivity/jidm-construction-hdd-overheads.toml",
    "examples/seeds/sensitivity/jidm-queries-drive-cache.toml",
    "examples/seeds/sensitivity/jidm-cloud-latency.toml",
    "crates/spidx/tests/golden/specs/stores.toml",
    "crates/spidx/tests/golden/specs/bulk.toml",
    "crates/spidx/tests/golden/specs/bulk-hilbert.toml",
    "crates/spidx/tests/golden/specs/bulk-omt.toml",
    "crates/spidx/tests/golden/specs/vectors.toml",
];

/// Every spec file shipped under `examples/` is in [`SPECS`]: a new spec gets golden
/// counts too.
#[test]
fn every_shipped_spec_is_covered() {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml")
                && !p.file_name().unwrap().to_string_lossy().starts_with('.')
                && p.file_name().unwrap() != "findings.toml"
            {
                let rel = p
                    .strip_prefix(root())
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push(rel.trim_start_matches("./").to_string());
            }
        }
    }
    let mut found = Vec::new();
    walk(&root().join("examples"), &mut found);
    walk(&golden_dir().join("specs"), &mut found);
    let missing: Vec<_> = found
        .iter()
        .filter(|f| !SPECS.contains(&f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "spec files without golden counts (add them to SPECS in tests/golden_counts.rs): {missing:?}"
    );
}

/// The reduction keeps what makes a spec a spec and only shrinks it.
#[test]
fn reduction_shrinks_sizes_only() {
    let text = r#"
name = "x"
[dataset]
generate = { distribution = "buildings", count = 100000, seed = 42 }
[matrix]
index = [{ kind = "rtree", split = "linear" }]
store = [{ kind = "fast", write_buffer = "512KB", flushing_unit = 1, flush_policy = "fast-star" }]
buffer = ["lru:512KB:write-back", "none"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.01%"
"#;
    let r: toml::Table = reduce(text, DEFAULT).parse().unwrap();
    assert_eq!(r["dataset"]["generate"]["count"].as_integer(), Some(5000));
    assert_eq!(
        r["matrix"]["store"][0]["write_buffer"].as_str(),
        Some("64KB")
    );
    assert_eq!(
        r["matrix"]["buffer"][0].as_str(),
        Some("lru:64KB:write-back")
    );
    assert_eq!(r["matrix"]["buffer"][1].as_str(), Some("none"));
    assert_eq!(r["workload"][1]["queries"].as_integer(), Some(10));
    assert_eq!(r["protocol"]["repetitions"].as_integer(), Some(1));
    assert_eq!(
        r["matrix"]["store"][0]["flushing_unit"].as_integer(),
        Some(1)
    );
}

/// The diff names what changed and the check fails on one changed count.
#[test]
fn diff_names_spec_run_workload_metric() {
    let mut old = Figures::new();
    old.entry("run A".into())
        .or_default()
        .entry("construction".into())
        .or_default()
        .insert("device.host.write_ops".into(), 100.0);
    let mut new = old.clone();
    assert!(diff("s.toml", &old, &new).is_empty());
    new.get_mut("run A")
        .unwrap()
        .get_mut("construction")
        .unwrap()
        .insert("device.host.write_ops".into(), 101.0);
    assert_eq!(
        diff("s.toml", &old, &new),
        vec!["s.toml | run A | construction | device.host.write_ops: 100 → 101".to_string()]
    );
    let text = render("# h\n", &new);
    assert!(diff("s.toml", &parse(&text), &new).is_empty());
}

macro_rules! golden {
    ($($name:ident => $spec:expr),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check($spec, DEFAULT);
            }
        )*
        /// The specs the generated tests cover, in the order of [`SPECS`].
        const GENERATED: &[&str] = &[$($spec),*];
    };
}

#[test]
fn every_spec_has_a_test() {
    assert_eq!(GENERATED, SPECS);
}

golden! {
    quickstart => "examples/quickstart.toml",
    efind_vs_fast => "examples/efind_vs_fast.toml",
    fast_vs_plain => "examples/fast_vs_plain.toml",
    flash_aware => "examples/flash_aware.toml",
    large => "examples/large.toml",
    write_back_buffer => "examples/write_back_buffer.toml",
    python_small_matrix => "examples/python/small_matrix.toml",
    defaults_stores => "examples/defaults/stores.toml",
    hdd_cache_n30k => "examples/hdd_cache_sensitivity/n30k.toml",
    hdd_cache_n100k => "examples/hdd_cache_sensitivity/n100k.toml",
    hdd_cache_n300k => "examples/hdd_cache_sensitivity/n300k.toml",
    hdd_cache_n1m => "examples/hdd_cache_sensitivity/n1m.toml",
    seeds_efind_fig2 => "examples/seeds/efind-fig2.toml",
    seeds_emrich_dims => "examples/seeds/emrich_dims.toml",
    seeds_emrich_k => "examples/seeds/emrich_k.toml",
    seeds_emrich_pagesize => "examples/seeds/emrich_pagesize.toml",
    seeds_emrich_threads => "examples/seeds/emrich_threads.toml",
    seeds_flashsim_fast => "examples/seeds/flashsim-fast.toml",
    seeds_flashsim_plain => "examples/seeds/flashsim-plain.toml",
    seeds_jidm_cloud_construction => "examples/seeds/jidm-cloud-construction.toml",
    seeds_jidm_cloud_queries => "examples/seeds/jidm-cloud-queries.toml",
    seeds_jidm_local_construction => "examples/seeds/jidm-local-construction.toml",
    seeds_jidm_local_queries => "examples/seeds/jidm-local-queries.toml",
    seeds_jidm_matrix => "examples/seeds/jidm-matrix.toml",
    seeds_order_fast_as_stored => "examples/seeds/order-effect/fast-as-stored.toml",
    seeds_order_fast_clustered => "examples/seeds/order-effect/fast-clustered.toml",
    seeds_order_plain_as_stored => "examples/seeds/order-effect/plain-as-stored.toml",
    seeds_order_plain_clustered => "examples/seeds/order-effect/plain-clustered.toml",
    seeds_order_fast_clustered_16384 => "examples/seeds/order-effect/fast-clustered-16384.toml",
    seeds_order_plain_clustered_16384 => "examples/seeds/order-effect/plain-clustered-16384.toml",
    seeds_order_fast_clustered_65536 => "examples/seeds/order-effect/fast-clustered-65536.toml",
    seeds_order_plain_clustered_65536 => "examples/seeds/order-effect/plain-clustered-65536.toml",
    seeds_order_fast_clustered_262144 => "examples/seeds/order-effect/fast-clustered-262144.toml",
    seeds_order_plain_clustered_262144 => "examples/seeds/order-effect/plain-clustered-262144.toml",
    seeds_papers_accounting_fast => "examples/seeds/papers-accounting/fast.toml",
    seeds_papers_accounting_plain => "examples/seeds/papers-accounting/plain.toml",
    seeds_sensitivity_construction => "examples/seeds/sensitivity/jidm-construction-hdd-overheads.toml",
    seeds_sensitivity_queries => "examples/seeds/sensitivity/jidm-queries-drive-cache.toml",
    seeds_sensitivity_cloud_latency => "examples/seeds/sensitivity/jidm-cloud-latency.toml",
    stores_x_variants => "crates/spidx/tests/golden/specs/stores.toml",
    bulk_loads => "crates/spidx/tests/golden/specs/bulk.toml",
    bulk_hilbert => "crates/spidx/tests/golden/specs/bulk-hilbert.toml",
    bulk_omt => "crates/spidx/tests/golden/specs/bulk-omt.toml",
    vectors => "crates/spidx/tests/golden/specs/vectors.toml",
}
