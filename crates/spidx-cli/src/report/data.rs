//! What the report reads from the results database: one [`Row`] per finished run and
//! workload (the newest run of each configuration), every metric of those runs, and the
//! [`Context`] a reader needs to judge the numbers (spec, dataset, protocol, machines,
//! versions, dates). The `run_results` view and the metrics come through the library's
//! [`ResultsDb`]; the experiment's spec and the runs' provenance are read here with a
//! read-only SQLite connection, as the library offers no query for them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use anyhow::Result;
use serde_json::{Map, Value};
use spidx::cache::CacheConfig;
use spidx::experiment::db::export::split_version;
use spidx::experiment::ResultsDb;
use spidx::spatial::IndexOptions;
use spidx::store::StoreConfig;
use spidx::units::format_size;

/// One finished run × workload.
#[derive(Debug, Clone)]
pub struct Row {
    /// Run id in the database.
    pub run_id: i64,
    /// The run's position in the matrix (orders configurations as the spec lists them).
    pub ordinal: i64,
    /// The configuration: the run's name without its page size and device.
    pub config: String,
    /// Page size as written (`4KB`).
    pub page: String,
    /// Page size in bytes.
    pub page_size: i64,
    /// Device label.
    pub device: String,
    /// Whether the device is simulated (times modelled) or real (times measured).
    pub simulated: bool,
    /// Workload name.
    pub workload: String,
    /// Workload kind (`construction`, `range`, ...).
    pub kind: String,
    /// Workload position in the spec.
    pub workload_ordinal: i64,
    /// Headline columns of `run_results` by name (numbers only; NULLs absent).
    pub figures: BTreeMap<String, f64>,
    /// Whether the run used the direct (plain) store.
    pub direct: bool,
    /// The run's configuration with the direct store and no page buffer: runs that share
    /// it are the same tree, page size and device under different stores (to pair a
    /// flash-aware store with its plain tree, as the seeds' gain figures do).
    pub plain_key: String,
    /// The store's unit of durability and where its log goes (`checkpoint; log: same
    /// device`): configurations compared side by side should share it.
    pub durability: String,
    /// The dimensionality of the run's generated dataset (`generate.dims` of its dataset
    /// description; one value per run under a `matrix.dims` axis), when recorded.
    pub dims: Option<usize>,
}

impl Row {
    /// A headline figure (`elapsed_s`, `reads`, ...), if recorded.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.figures.get(name).copied()
    }

    /// A headline figure, 0 when absent.
    pub fn val(&self, name: &str) -> f64 {
        self.get(name).unwrap_or(0.0)
    }

    /// `config · page`, the label of a run within one device's chart.
    pub fn config_page(&self) -> String {
        format!("{} · {}", self.config, self.page)
    }
}

/// Provenance of the reported runs.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The spec's description.
    pub description: String,
    /// Spec files the experiment was run from, with their fingerprints.
    pub specs: Vec<(String, String)>,
    /// The spec as written (the newest one).
    pub spec_text: String,
    /// The dataset descriptions (JSON) and object counts.
    pub datasets: BTreeSet<(String, i64)>,
    /// Repetitions, warmup, cache dropping, from the spec.
    pub protocol: Map<String, Value>,
    /// Machines (host, CPU, CPUs, memory, kernel) the runs ran on.
    pub machines: BTreeSet<String>,
    /// spidx versions that made the runs, each with the git commit it was built from
    /// (`0.1.0 (commit 1a2b...)`; `unknown` for runs that recorded none).
    pub versions: BTreeSet<String>,
    /// First start and last finish of the reported runs.
    pub started: String,
    /// Last finish.
    pub finished: String,
    /// When this report was written (UTC).
    pub now: String,
    /// Warnings that the database holds finished runs of this experiment over different
    /// contents of one input (same dataset or windows file name, other bytes).
    pub mixed_data: Vec<String>,
    /// The kNN workloads of the experiment's specs by name (as the results name them, before a
    /// ` streams=N` suffix): their k and whether they are the sequential-scan baseline.
    pub knn: BTreeMap<String, KnnSpec>,
}

/// What the report needs of one kNN workload of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnnSpec {
    /// Neighbours per query.
    pub k: usize,
    /// The sequential-scan baseline (`access = "scan"`) rather than the index.
    pub scan: bool,
}

/// Everything the report shows.
pub struct Data {
    /// Rows, in the order of the database (run, then workload).
    pub rows: Vec<Row>,
    /// Every metric of `(run_id, workload)`.
    pub metrics: HashMap<(i64, String), BTreeMap<String, f64>>,
    /// Provenance.
    pub context: Context,
    /// Parts of the run names shared by every configuration (e.g. an insertion order),
    /// left out of the charts' labels and stated once in the context block.
    pub common: Vec<String>,
}

impl Data {
    /// A metric of one row, 0 when absent. `name` is the untyped name (`shape.height`,
    /// `latency.mean_s`): results databases of schema 3 keep gauges and settings under a
    /// `gauges`/`settings` segment (`shape.gauges.height`, `gauges.latency.mean_s`), older
    /// ones without it; both are found.
    pub fn metric(&self, row: &Row, name: &str) -> f64 {
        let Some(m) = self.metrics.get(&(row.run_id, row.workload.clone())) else {
            return 0.0;
        };
        typed_names(name)
            .iter()
            .find_map(|n| m.get(n))
            .copied()
            .unwrap_or(0.0)
    }

    /// Every metric of one row.
    pub fn metrics_of(&self, row: &Row) -> Option<&BTreeMap<String, f64>> {
        self.metrics.get(&(row.run_id, row.workload.clone()))
    }
}

/// `name` as written, then with a `gauges` or `settings` segment at the front or after its
/// first part: where a typed results database keeps the same figure.
fn typed_names(name: &str) -> Vec<String> {
    let mut out = vec![name.to_string()];
    for kind in ["gauges", "settings"] {
        out.push(format!("{kind}.{name}"));
        if let Some((head, rest)) = name.split_once('.') {
            out.push(format!("{head}.{kind}.{rest}"));
        }
    }
    out
}

fn text(m: &Map<String, Value>, k: &str) -> String {
    m.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Characters a name keeps in the report's labels (charts, tables, keys).
const LABEL_CHARS: usize = 200;

/// [`text`] for a name that labels charts and tables: a longer one (a crafted database can
/// hold megabytes) is cut to [`LABEL_CHARS`] characters plus a fingerprint of the whole,
/// so labels stay distinct while every chart and table that repeats them stays small.
fn label(m: &Map<String, Value>, k: &str) -> String {
    let s = m.get(k).and_then(Value::as_str).unwrap_or_default();
    match s.char_indices().nth(LABEL_CHARS) {
        None => s.to_string(),
        Some((cut, _)) => {
            let hash = s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            format!("{}… ({} bytes, #{hash:016x})", &s[..cut], s.len())
        }
    }
}

fn int(m: &Map<String, Value>, k: &str) -> i64 {
    m.get(k).and_then(Value::as_f64).unwrap_or(0.0) as i64
}

/// Reads the newest finished run of each configuration of `experiment`.
pub fn load(path: &Path, experiment: &str) -> Result<Data> {
    let db = ResultsDb::open_existing(path)?;
    let objs = db.results(Some(experiment), true)?.objects();
    let run_ids: BTreeSet<i64> = objs.iter().map(|m| int(m, "run_id")).collect();
    let runs = run_rows(&db, &run_ids)?;
    let rows = objs
        .iter()
        .map(|m| {
            let run_id = int(m, "run_id");
            let page_size = int(m, "page_size");
            let page = format_size(page_size as u64);
            let device = label(m, "device");
            // The configuration: the run's name without its page size and device parts.
            let config = label(m, "run")
                .split(" · ")
                .filter(|p| *p != page && *p != device)
                .collect::<Vec<_>>()
                .join(" · ");
            let figures = m
                .iter()
                .filter_map(|(k, v)| v.as_f64().map(|f| (k.clone(), f)))
                .collect();
            Row {
                run_id,
                ordinal: int(m, "ordinal"),
                config,
                page,
                page_size,
                simulated: runs.get(&run_id).is_none_or(|r| r.simulated),
                device,
                workload: label(m, "workload"),
                kind: text(m, "kind"),
                workload_ordinal: int(m, "workload_ordinal"),
                figures,
                direct: runs.get(&run_id).is_none_or(|r| r.direct),
                plain_key: runs
                    .get(&run_id)
                    .map(|r| r.plain_key.clone())
                    .unwrap_or_default(),
                durability: runs
                    .get(&run_id)
                    .map(|r| r.durability.clone())
                    .unwrap_or_default(),
                dims: runs.get(&run_id).and_then(|r| dataset_dims(&r.dataset)),
            }
        })
        .collect::<Vec<_>>();
    let (rows, common) = strip_common_parts(rows);
    let mut metrics: HashMap<(i64, String), BTreeMap<String, f64>> = HashMap::new();
    for m in db.metric_values(experiment)?.objects() {
        let run_id = int(&m, "run_id");
        if !run_ids.contains(&run_id) {
            continue;
        }
        if let Some(v) = m.get("value").and_then(Value::as_f64) {
            metrics
                .entry((run_id, label(&m, "workload")))
                .or_default()
                .insert(text(&m, "name"), v);
        }
    }
    let context = context(&db, experiment, &runs)?;
    Ok(Data {
        rows,
        metrics,
        context,
        common,
    })
}

/// Removes from every row's configuration the ` · `-separated parts that every
/// configuration has, unless that would leave some configuration without a part (a
/// single configuration keeps its name); returns the rows and the removed parts.
fn strip_common_parts(mut rows: Vec<Row>) -> (Vec<Row>, Vec<String>) {
    let parts = |c: &str| -> Vec<String> { c.split(" · ").map(str::to_string).collect() };
    let Some(first) = rows.first() else {
        return (rows, Vec::new());
    };
    let common: Vec<String> = parts(&first.config)
        .into_iter()
        .filter(|p| rows.iter().all(|r| r.config.split(" · ").any(|q| q == p)))
        .collect();
    let empties = rows
        .iter()
        .any(|r| r.config.split(" · ").all(|q| common.iter().any(|c| c == q)));
    if common.is_empty() || empties {
        return (rows, Vec::new());
    }
    for r in &mut rows {
        r.config = r
            .config
            .split(" · ")
            .filter(|q| !common.iter().any(|c| c == q))
            .collect::<Vec<_>>()
            .join(" · ");
    }
    (rows, common)
}

/// What the report needs of one run's row in `runs`.
struct RunInfo {
    simulated: bool,
    direct: bool,
    plain_key: String,
    durability: String,
    dataset: String,
    objects: i64,
    version: String,
    machine: String,
    started: String,
    finished: String,
}

fn run_rows(db: &ResultsDb, ids: &BTreeSet<i64>) -> Result<BTreeMap<i64, RunInfo>> {
    let mut out = BTreeMap::new();
    for id in ids {
        let Some(r) = db.run(*id)?.objects().into_iter().next() else {
            continue;
        };
        let options = serde_json::from_str::<IndexOptions>(&text(&r, "config_json")).ok();
        let simulated = options.as_ref().is_none_or(|o| o.device.is_simulated());
        let direct = options
            .as_ref()
            .is_none_or(|o| matches!(o.store, StoreConfig::Direct { .. }));
        let durability = options
            .as_ref()
            .map(|o| {
                format!(
                    "{}; log: {}",
                    o.store.durability_unit(),
                    o.store.log_placement_name()
                )
            })
            .unwrap_or_default();
        let plain_key = match options {
            Some(mut o) => {
                o.store = StoreConfig::direct();
                o.buffer = CacheConfig::none();
                serde_json::to_string(&o).unwrap_or_default()
            }
            None => format!("run {id}"),
        };
        let info = RunInfo {
            simulated,
            direct,
            plain_key,
            durability,
            dataset: text(&r, "dataset_json"),
            objects: int(&r, "objects"),
            version: {
                let (v, commit) = split_version(&text(&r, "spidx_version"));
                format!("{v} (commit {commit})")
            },
            machine: machine_text(&text(&r, "machine_json")),
            started: text(&r, "started_at"),
            finished: text(&r, "finished_at"),
        };
        out.insert(*id, info);
    }
    Ok(out)
}

/// For every input (role and file) of which the experiment's finished runs saw more than
/// one content: a warning naming the file, each content's runs and records, and how many
/// of the runs shown (`shown`: the newest of each configuration) used each.
fn mixed_data(
    inputs: &spidx::experiment::db::Table,
    shown: &BTreeMap<i64, RunInfo>,
) -> Result<Vec<String>> {
    use spidx::experiment::fingerprint::RunInputs;
    // (role, path) → hash → (records, runs, runs shown)
    type Versions = BTreeMap<String, (Option<u64>, usize, usize)>;
    let mut by: BTreeMap<(String, String), Versions> = BTreeMap::new();
    for r in inputs.objects() {
        if r.get("status").and_then(Value::as_str) != Some("finished") {
            continue;
        }
        let id = int(&r, "run_id");
        for p in RunInputs::parse(&text(&r, "inputs_json")) {
            if !p.decides() || p.bytes.is_none() {
                continue;
            }
            let v = by
                .entry((p.role.clone(), p.path.clone()))
                .or_default()
                .entry(p.hash.clone())
                .or_insert((p.records, 0, 0));
            v.1 += 1;
            v.2 += usize::from(shown.contains_key(&id));
        }
    }
    Ok(by
        .into_iter()
        .filter(|(_, versions)| versions.len() > 1)
        .map(|((role, path), versions)| {
            let parts: Vec<String> = versions
                .iter()
                .map(|(hash, (records, runs, in_report))| {
                    let records = records
                        .map(|n| format!("{n} records, "))
                        .unwrap_or_default();
                    format!(
                        "content {} ({records}{runs} runs, {in_report} of them in this report)",
                        &hash[..hash.len().min(12)]
                    )
                })
                .collect();
            format!(
                "the results database holds runs of this experiment over {} different contents of {role} {path}: {}. Figures of runs over different data do not compare; rerun the stale ones with `spidx run SPEC --resume`.",
                versions.len(),
                parts.join("; ")
            )
        })
        .collect())
}

/// The dimensionality in a run's dataset description (`{"generate": {"dims": 16, ...}}`);
/// `None` for a dataset file, whose description does not carry it.
fn dataset_dims(json: &str) -> Option<usize> {
    let v: Value = serde_json::from_str(json).ok()?;
    v.pointer("/generate/dims")?.as_u64().map(|d| d as usize)
}

/// The spec's kNN workloads (`workloads` of its JSON form) by name.
fn knn_workloads(spec: &Value) -> BTreeMap<String, KnnSpec> {
    let Some(ws) = spec.get("workloads").and_then(Value::as_array) else {
        return BTreeMap::new();
    };
    ws.iter()
        .filter(|w| w.get("kind").and_then(Value::as_str) == Some("knn"))
        .filter_map(|w| {
            let name = w.get("name")?.as_str()?.to_string();
            let k = w.get("k")?.as_u64()? as usize;
            let scan = w.get("scan").is_some_and(|s| !s.is_null());
            Some((name, KnnSpec { k, scan }))
        })
        .collect()
}

/// `host: CPU model, N CPUs, M GiB, Linux kernel` from the recorded machine JSON.
fn machine_text(json: &str) -> String {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(json) else {
        return json.to_string();
    };
    format!(
        "{}: {}, {} CPUs, {:.1} GiB memory, Linux {}",
        text(&m, "host"),
        text(&m, "cpu"),
        int(&m, "cpus"),
        m.get("mem_gib").and_then(Value::as_f64).unwrap_or(0.0),
        text(&m, "kernel")
    )
}

fn context(db: &ResultsDb, experiment: &str, runs: &BTreeMap<i64, RunInfo>) -> Result<Context> {
    let mut c = Context::default();
    for r in db.experiment_specs(experiment)?.objects() {
        c.specs.push((text(&r, "spec_path"), text(&r, "spec_hash")));
        let spec: Value = serde_json::from_str(&text(&r, "spec_json")).unwrap_or_default();
        c.description = spec
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        c.protocol = spec
            .get("protocol")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        c.spec_text = text(&r, "spec_text");
        c.knn.extend(knn_workloads(&spec));
    }
    for r in runs.values() {
        c.datasets.insert((r.dataset.clone(), r.objects));
        c.machines.insert(r.machine.clone());
        c.versions.insert(r.version.clone());
        if c.started.is_empty() || r.started < c.started {
            c.started = r.started.clone();
        }
        if r.finished > c.finished {
            c.finished = r.finished.clone();
        }
    }
    c.mixed_data = mixed_data(&db.run_inputs(Some(experiment))?, runs)?;
    // The database's clock, `YYYY-MM-DDTHH:MM:SS.sssZ`, shown to the minute.
    let now = db.session_start()?;
    c.now = match (now.get(..10), now.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => now,
    };
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(config: &str) -> Row {
        Row {
            run_id: 0,
            ordinal: 0,
            config: config.into(),
            page: "4KB".into(),
            page_size: 4096,
            simulated: true,
            device: "memory".into(),
            workload: "construction".into(),
            kind: "construction".into(),
            workload_ordinal: 0,
            figures: BTreeMap::new(),
            direct: true,
            plain_key: String::new(),
            durability: String::new(),
            dims: None,
        }
    }

    #[test]
    fn dims_and_knn_workloads_come_from_the_recorded_json() {
        assert_eq!(
            dataset_dims(r#"{"generate":{"distribution":"uniform","dims":16}}"#),
            Some(16)
        );
        assert_eq!(dataset_dims(r#"{"file":{"path":"x.csv"}}"#), None);
        assert_eq!(dataset_dims("not json"), None);
        let spec = serde_json::json!({"workloads": [
            {"kind": "construction", "name": "construction"},
            {"kind": "knn", "name": "index", "k": 10},
            {"kind": "knn", "name": "scan", "k": 10, "scan": 1048576},
        ]});
        let knn = knn_workloads(&spec);
        assert_eq!(knn.len(), 2);
        assert_eq!(knn["index"], KnnSpec { k: 10, scan: false });
        assert_eq!(knn["scan"], KnnSpec { k: 10, scan: true });
    }

    #[test]
    fn untyped_names_find_typed_metrics() {
        let n = typed_names("shape.levels.0.fill");
        assert!(n.contains(&"shape.gauges.levels.0.fill".to_string()));
        assert!(typed_names("latency.mean_s").contains(&"gauges.latency.mean_s".to_string()));
        assert_eq!(typed_names("x")[0], "x");
    }

    #[test]
    fn parts_every_configuration_shares_leave_the_labels() {
        let (rows, common) = strip_common_parts(vec![
            row("Linear R-tree · buffer lru:512KB · order clustered:4096:42"),
            row("FAST Linear R-tree · order clustered:4096:42"),
        ]);
        assert_eq!(common, ["order clustered:4096:42"]);
        assert_eq!(rows[0].config, "Linear R-tree · buffer lru:512KB");
        assert_eq!(rows[1].config, "FAST Linear R-tree");
        // One configuration (or one made only of shared parts) keeps its whole name.
        let (rows, common) = strip_common_parts(vec![
            row("R*-tree · order x"),
            row("R*-tree · order x · buffer lru:1MB"),
        ]);
        assert!(common.is_empty());
        assert_eq!(rows[0].config, "R*-tree · order x");
    }
}
