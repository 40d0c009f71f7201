//! Spec parsing: valid specs, and errors that name the key and the line.

use super::*;

const GOOD: &str = r#"
name = "t"
[dataset]
generate = { distribution = "uniform", count = 100 }
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rstar", reinsert = "30%" }]
page_size = ["2KB", "4KB"]
device = ["ssd-v300", { device = "hdd-7200", params = { rpm = 5400 }, label = "hdd qd2" }]
store = [{ kind = "direct" }]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.01%"
queries = 5
aspect = 2.0
[[workload]]
kind = "knn"
k = 3
queries = 2
[[workload]]
kind = "mixed"
operations = 10
insert = 50
delete = 20
update = 20
query = 10
"#;

fn parse_str(text: &str) -> Result<Spec> {
    parse(text, "t.toml", Path::new("."))
}

fn err(text: &str) -> String {
    parse_str(text).unwrap_err().to_string()
}

#[test]
fn a_good_spec_parses() {
    let s = parse_str(GOOD).unwrap();
    assert_eq!(s.matrix.index.len(), 2);
    assert_eq!(s.matrix.index[1].label, "R*-tree 30%");
    assert_eq!(s.matrix.page_size, vec![2048, 4096]);
    assert_eq!(s.matrix.device[1].label, "hdd qd2");
    assert_eq!(s.protocol.repetitions, 10);
    let names: Vec<&str> = s.workloads.iter().map(|w| w.name()).collect();
    assert_eq!(names, ["construction", "range 0.01%", "knn k=3", "mixed"]);
    let runs = super::super::matrix::expand(&s, 2).unwrap();
    assert_eq!(runs.len(), 8);
    assert_eq!(runs[0].name, "R-tree (linear) · 2KB · ssd-v300");
    assert_eq!(runs[7].name, "R*-tree 30% · 4KB · hdd qd2");
    let keys: std::collections::HashSet<_> = runs.iter().map(|r| &r.key).collect();
    assert_eq!(keys.len(), 8);
}

#[test]
fn unknown_keys_name_the_key_and_line() {
    let e = err(&GOOD.replace("queries = 5", "querys = 5"));
    assert!(e.contains("line 15") && e.contains("querys"), "{e}");
    let e = err(&GOOD.replace("page_size =", "pagesize ="));
    assert!(e.contains("line 7") && e.contains("pagesize"), "{e}");
    let e = err(&GOOD.replace(
        "store = [{ kind = \"direct\" }]",
        "store = [{ kind = \"direkt\" }]",
    ));
    assert!(e.contains("line 9") && e.contains("direkt"), "{e}");
}

#[test]
fn bad_values_name_the_key_and_line() {
    let e = err(&GOOD.replace("\"2KB\"", "\"2XB\""));
    assert!(e.contains("line 7") && e.contains("page_size"), "{e}");
    let e = err(&GOOD.replace("\"ssd-v300\"", "\"ssd-v301\""));
    assert!(e.contains("line 8") && e.contains("ssd-v301"), "{e}");
    let e = err(&GOOD.replace("rpm = 5400", "rpn = 5400"));
    assert!(e.contains("line 8") && e.contains("rpn"), "{e}");
    let e = err(&GOOD.replace("reinsert = \"30%\"", "reinsert = \"60%\""));
    assert!(e.contains("line 6") && e.contains("reinsert"), "{e}");
    let e = err(&GOOD.replace("split = \"linear\"", "split = \"linear\", reinsert = 30"));
    assert!(e.contains("line 6") && e.contains("applies to kind"), "{e}");
    let e = err(&GOOD.replace("k = 3", "k = 0"));
    assert!(e.contains("line 19") && e.contains("k"), "{e}");
    let e = err(&GOOD.replace("query = 10", "query = 20"));
    assert!(e.contains("100%"), "{e}");
    let e = err(&GOOD.replace("aspect = 2.0", "k = 2"));
    assert!(e.contains("line 16") && e.contains("does not apply"), "{e}");
    let e = err(&GOOD.replace("count = 100", "count = 0"));
    assert!(e.contains("line 4") && e.contains("count"), "{e}");
}

#[test]
fn structure_errors() {
    let e = err(&GOOD.replace("kind = \"construction\"", "kind = \"point\""));
    assert!(e.contains("first workload"), "{e}");
    let e = err(&GOOD.replace(
        "generate = { distribution = \"uniform\", count = 100 }",
        "file = \"missing.fgb\"",
    ));
    assert!(
        e.contains("line 4") && e.contains("missing.fgb") && e.contains("does not exist"),
        "{e}"
    );
    let e = err("name = \"x\"\n[dataset\n");
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn stores_come_from_the_store_table_and_names_tell_them_apart() {
    let text = GOOD.replace(
        "store = [{ kind = \"direct\" }]",
        "store = [{ kind = \"direct\" }, { kind = \"fast\", write_buffer = \"256KB\", flushing_unit = 4, flush_policy = \"fast-star\" }, { kind = \"fast\", write_buffer = \"512KB\", flushing_unit = 4, flush_policy = \"fast-star\" }]",
    );
    let s = parse_str(&text).unwrap();
    assert_eq!(s.matrix.store.len(), 3);
    let runs = super::super::matrix::expand(&s, 2).unwrap();
    assert_eq!(runs.len(), 24);
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    assert!(
        names.contains(&"R-tree (linear) · 2KB · ssd-v300"),
        "{names:?}"
    );
    assert!(
        names.contains(&"FAST write_buffer=256KB R-tree (linear) · 2KB · ssd-v300"),
        "{names:?}"
    );
    assert!(
        names.contains(&"FAST write_buffer=512KB R*-tree 30% · 4KB · hdd qd2"),
        "{names:?}"
    );
    // A store option that does not exist is an error at its line.
    let e = err(&text.replace(
        "flushing_unit = 4, flush_policy = \"fast-star\" }]",
        "flushing_unit = 4, flush_polcy = \"fast-star\" }]",
    ));
    assert!(e.contains("line 9") && e.contains("flush_polcy"), "{e}");
}

#[test]
fn a_million_run_matrix_is_refused_at_once() {
    // 10 page sizes × 100 buffers × 1000 devices = 10^6 runs.
    let sizes: Vec<String> = (0..10).map(|i| format!("\"{}KB\"", 1 << (i % 8))).collect();
    let buffers: Vec<String> = (1..=100).map(|i| format!("\"lru:{i}MB\"")).collect();
    let devices: Vec<String> = (0..1000)
        .map(|i| format!("{{ device = \"memory\", label = \"m{i}\" }}"))
        .collect();
    let text = GOOD
        .replace(
            "page_size = [\"2KB\", \"4KB\"]",
            &format!("page_size = [{}]\nbuffer = [{}]", sizes.join(", "), buffers.join(", ")),
        )
        .replace(
            "device = [\"ssd-v300\", { device = \"hdd-7200\", params = { rpm = 5400 }, label = \"hdd qd2\" }]",
            &format!("device = [{}]", devices.join(", ")),
        );
    let e = err(&text);
    assert!(
        e.contains("matrix") && e.contains("2000000 runs") && e.contains("limit of 10000"),
        "{e}"
    );
}

#[test]
fn device_parameters_are_named_by_their_key() {
    let e = err(&GOOD.replace("rpm = 5400", "rpm = \"fast\""));
    assert!(
        e.contains("line 8") && e.contains("matrix.device[1].params.rpm"),
        "{e}"
    );
    let e = err(&GOOD.replace("rpm = 5400", "rpm = 5400, seek = { bogus = 1 }"));
    assert!(e.contains("matrix.device[1].params.seek.bogus"), "{e}");
    let e = err(&GOOD.replace("\"ssd-v300\"", "\"ssd-v301\""));
    assert!(e.contains("matrix.device[0].device"), "{e}");
}

#[test]
fn renumber_applies_to_dataset_files() {
    let e = err(&GOOD.replace("count = 100 }", "count = 100 }\nrenumber = true"));
    assert!(
        e.contains("dataset.renumber") && e.contains("dataset files only"),
        "{e}"
    );
}

#[test]
fn a_write_back_buffer_is_named_in_every_run_even_when_it_is_the_only_buffer() {
    let text = GOOD.replace(
        "store = [{ kind = \"direct\" }]",
        "store = [{ kind = \"direct\" }]\nbuffer = [\"lru:512KB:write-back\"]",
    );
    let s = parse_str(&text).unwrap();
    let runs = super::super::matrix::expand(&s, 2).unwrap();
    assert!(
        runs.iter().all(|r| r.name.contains("write-back")),
        "{:?}",
        runs.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    // The write-through default stays out of the names.
    let plain = super::super::matrix::expand(&parse_str(GOOD).unwrap(), 2).unwrap();
    assert!(plain.iter().all(|r| !r.name.contains("buffer")));
}

#[test]
fn insertion_order_is_parsed_named_and_fingerprinted_only_when_not_default() {
    let with =
        |order: &str| GOOD.replace("[dataset]\n", &format!("[dataset]\norder = \"{order}\"\n"));
    let plain = parse_str(GOOD).unwrap();
    assert_eq!(plain.dataset.order(), InsertionOrder::AsStored);
    // as-stored written out is the default: same fingerprint, same run names.
    let stored = parse_str(&with("as-stored")).unwrap();
    assert_eq!(
        super::super::matrix::fingerprint(&plain),
        super::super::matrix::fingerprint(&stored)
    );
    let s = parse_str(&with("clustered:1000:7")).unwrap();
    assert_eq!(
        s.dataset.order(),
        InsertionOrder::Clustered {
            window: 1000,
            seed: 7
        }
    );
    assert_ne!(
        super::super::matrix::fingerprint(&plain),
        super::super::matrix::fingerprint(&s)
    );
    let json = serde_json::to_string(&s.dataset).unwrap();
    assert!(json.contains("\"order\":\"clustered:1000:7\""), "{json}");
    let runs = super::super::matrix::expand(&s, 2).unwrap();
    assert_eq!(
        runs[0].name,
        "R-tree (linear) · 2KB · order clustered:1000:7 · ssd-v300"
    );
    assert!(err(&with("zorder")).contains("line 4"));
    assert!(err(&with("zorder")).contains("dataset.order: unknown insertion order 'zorder'"));
    assert!(err(&with("clustered:0")).contains("dataset.order: clustered window 0"));
    assert!(err(&with("hilbert:2")).contains("takes no parameter"));
}

#[test]
fn a_write_back_buffer_under_fast_or_efind_is_refused() {
    for store in [
        r#"{ kind = "fast", write_buffer = "256KB", flushing_unit = 4, flush_policy = "fast-star" }"#,
        r#"{ kind = "efind", buffer = "256KB" }"#,
    ] {
        let text = GOOD.replace(
            "store = [{ kind = \"direct\" }]",
            &format!("store = [{store}]\nbuffer = [\"lru:512KB:write-back\"]"),
        );
        let spec = parse_str(&text).unwrap();
        let e = super::super::matrix::expand(&spec, 2)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("write-back page buffer (lru:512KB:write-back) has no effect"),
            "{e}"
        );
        assert!(e.contains("flushing units"), "{e}");
    }
    // Write-through under FAST and write-back under the direct store are fine.
    let text = GOOD.replace(
        "store = [{ kind = \"direct\" }]",
        "store = [{ kind = \"direct\" }]\nbuffer = [\"lru:512KB:write-back\"]",
    );
    super::super::matrix::expand(&parse_str(&text).unwrap(), 2).unwrap();
}

/// Every spec shipped in `examples/` (and `examples/seeds/`, ...) parses, and its matrix
/// expands to valid runs.
#[test]
fn every_example_spec_is_valid() {
    fn specs(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                specs(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml")
                && p.file_name().is_some_and(|n| n != "findings.toml")
            {
                out.push(p);
            }
        }
    }
    let mut found = Vec::new();
    specs(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples"),
        &mut found,
    );
    assert!(found.len() >= 10, "{found:?}");
    for p in found {
        let spec = load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let dims = match &spec.dataset {
            DatasetSpec::Generate(g) => g.dims,
            DatasetSpec::File { .. } => 2,
        };
        super::super::matrix::expand(&spec, dims)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}

#[test]
fn a_log_placement_is_named_in_every_run_and_checked_against_the_device() {
    let fast = |extra: &str| {
        format!(
            "{{ kind = \"fast\", write_buffer = \"512KB\", flushing_unit = 1, flush_policy = \"fast-star\"{extra} }}"
        )
    };
    let text = GOOD.replace(
        "store = [{ kind = \"direct\" }]",
        &format!(
            "store = [{}, {}, {}]",
            fast(""),
            fast(", log_device = \"uncounted\""),
            fast(", log_device = \"separate:ssd-v300\"")
        ),
    );
    let runs = super::super::matrix::expand(&parse_str(&text).unwrap(), 2).unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names[0], "FAST R-tree (linear) · 2KB · ssd-v300");
    assert!(
        names.contains(&"FAST log=uncounted R-tree (linear) · 2KB · ssd-v300"),
        "{names:?}"
    );
    assert!(
        names.contains(&"FAST log=ssd-v300 R-tree (linear) · 2KB · ssd-v300"),
        "{names:?}"
    );
    // The results database keeps the placement in each run's configuration.
    let unc = runs.iter().find(|r| r.name.contains("uncounted")).unwrap();
    let json = serde_json::to_string(&unc.options).unwrap();
    assert!(json.contains("\"log_device\":\"uncounted\""), "{json}");
    // A simulated log device next to a real file device is refused, naming the run.
    let bad = GOOD
        .replace(
            "store = [{ kind = \"direct\" }]",
            &format!("store = [{}]", fast(", log_device = \"separate:ssd-v300\"")),
        )
        .replace(
            "device = [\"ssd-v300\", { device = \"hdd-7200\", params = { rpm = 5400 }, label = \"hdd qd2\" }]",
            "device = [\"file:/tmp/spidx-spec-test.bin\"]",
        );
    let e = super::super::matrix::expand(&parse_str(&bad).unwrap(), 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("run '") && e.contains("would not match"), "{e}");
}

/// The kNN workload's scan and concurrency keys.
#[test]
fn knn_access_and_streams_keys() {
    let base = GOOD.replace("k = 3\nqueries = 2\n", "k = 3\nqueries = 2\nEXTRA\n");
    let with = |extra: &str| base.replace("EXTRA", extra);
    let s = parse_str(&with("access = \"scan\"\nrequest = \"256KB\"\nstreams = [1, 10]\ninstances = \"shared\"\nmemory = \"1GB\"")).unwrap();
    match &s.workloads[2] {
        Workload::Knn {
            scan,
            concurrency,
            name,
            ..
        } => {
            assert_eq!(*scan, Some(256 << 10));
            let c = concurrency.as_ref().unwrap();
            assert_eq!(c.streams, vec![1, 10]);
            assert_eq!(
                c.instances,
                crate::experiment::concurrent::Instances::Shared
            );
            assert_eq!(c.memory, 1 << 30);
            assert_eq!(name, "scan k=3");
        }
        other => panic!("{other:?}"),
    }
    let s = parse_str(&with("access = \"scan\"\nstreams = 4")).unwrap();
    match &s.workloads[2] {
        Workload::Knn {
            scan, concurrency, ..
        } => {
            assert_eq!(*scan, Some(1 << 20));
            let c = concurrency.as_ref().unwrap();
            assert_eq!((c.streams.clone(), c.memory), (vec![4], 0));
            assert_eq!(c.instances, crate::experiment::concurrent::Instances::Own);
        }
        other => panic!("{other:?}"),
    }
    // Defaults leave the fingerprint of existing specs unchanged.
    let plain = serde_json::to_string(&parse_str(GOOD).unwrap().workloads[2]).unwrap();
    assert!(
        !plain.contains("scan") && !plain.contains("concurrency"),
        "{plain}"
    );
    for (extra, want) in [
        (
            "access = \"tree\"",
            "workload[2].access: unknown access 'tree'",
        ),
        (
            "request = \"1MB\"",
            "workload[2].request: applies to access = \"scan\" only",
        ),
        (
            "access = \"scan\"\nrequest = \"0\"",
            "workload[2].request: must be between",
        ),
        (
            "instances = \"own\"",
            "workload[2].instances: applies only with streams = N",
        ),
        (
            "memory = \"1GB\"",
            "workload[2].memory: applies only with streams = N",
        ),
        (
            "streams = 0",
            "workload[2].streams: 0 is not between 1 and 10000",
        ),
        ("streams = [2, 2]", "workload[2].streams: 2 is listed twice"),
        (
            "streams = []",
            "workload[2].streams: needs at least one value",
        ),
        (
            "streams = 2\ninstances = \"mine\"",
            "unknown instances 'mine'",
        ),
        ("streams = 2\nmemory = \"lots\"", "workload[2].memory"),
    ] {
        let e = err(&with(extra));
        assert!(e.contains(want), "{extra}: {e}");
    }
    // A list of k: one workload per k, named after it, on the same queries.
    let s = parse_str(&with("name = \"idx\"\n").replace("k = 3", "k = [1, 10, 100]")).unwrap();
    let knn: Vec<(String, usize, u64)> = s
        .workloads
        .iter()
        .filter_map(|w| match w {
            Workload::Knn { name, k, seed, .. } => Some((name.clone(), *k, *seed)),
            _ => None,
        })
        .collect();
    assert_eq!(
        knn,
        [
            ("idx k=1".to_string(), 1, 3),
            ("idx k=10".to_string(), 10, 3),
            ("idx k=100".to_string(), 100, 3)
        ]
    );
    let s = parse_str(&GOOD.replace("k = 3", "k = [2, 5]")).unwrap();
    let names: Vec<&str> = s.workloads.iter().map(|w| w.name()).collect();
    assert_eq!(names[2..4], ["knn k=2", "knn k=5"]);
    for (k, want) in [
        ("k = []", "workload[2].k: needs at least one value"),
        ("k = [1, 1]", "workload[2].k: 1 is listed twice"),
        ("k = [1, 0]", "workload[2].k: 0 is not between 1 and 100000"),
        (
            "k = \"ten\"",
            "line 19: invalid type: string \"ten\", expected an integer or a list of integers",
        ),
    ] {
        let e = err(&GOOD.replace("k = 3", k));
        assert!(e.contains(want), "{k}: {e}");
    }
    // The keys belong to knn only.
    let e = err(&GOOD.replace("aspect = 2.0", "aspect = 2.0\nstreams = 3"));
    assert!(e.contains("workload[1].streams: does not apply"), "{e}");
}

#[test]
fn results_key_names_a_file_next_to_the_spec_or_a_postgres_url() {
    let with = |v: &str| GOOD.replacen("name = \"t\"", &format!("name = \"t\"\nresults = {v}"), 1);
    let dir = Path::new("/some/specs");
    let s = parse(&with("\"out/r.db\""), "t.toml", dir).unwrap();
    assert_eq!(
        s.results.as_deref(),
        Some(Path::new("/some/specs/out/r.db"))
    );
    let s = parse(&with("\"/abs/r.db\""), "t.toml", dir).unwrap();
    assert_eq!(s.results.as_deref(), Some(Path::new("/abs/r.db")));
    let url = "postgresql://spidx@db.example:5432/results";
    let s = parse(&with(&format!("\"{url}\"")), "t.toml", dir).unwrap();
    assert_eq!(s.results.as_deref(), Some(Path::new(url)));
    assert_eq!(parse_str(GOOD).unwrap().results, None);
    // Where results go is not part of what is measured: same fingerprint.
    assert_eq!(
        super::super::matrix::fingerprint(&parse_str(GOOD).unwrap()),
        super::super::matrix::fingerprint(&s)
    );
    let e = err(&with("\"  \""));
    assert!(
        e.contains("results") && e.contains("must not be empty"),
        "{e}"
    );
    let e = err(&with("\"mysql://x/y\""));
    assert!(
        e.contains("results") && e.contains("neither a file path nor"),
        "{e}"
    );
    let e = err(&with("\".\""));
    assert!(e.contains("is a folder"), "{e}");
    let e = err(&with("3"));
    assert!(e.contains("line 3"), "{e}");
}

const DIMS: &str = r#"
name = "d"
[dataset]
generate = { distribution = "uniform", count = 100, vectors = true, seed = 3 }
[matrix]
index = [{ kind = "rstar" }]
device = ["hdd-7200", "ssd-v300"]
dims = DIMS
[[workload]]
kind = "construction"
"#;

#[test]
fn dimensions_are_a_matrix_axis() {
    let s = parse_str(&DIMS.replace("DIMS", "[2, 8, 32]")).unwrap();
    assert_eq!(s.matrix.dims, [2, 8, 32]);
    // The dataset's own dims is the axis' first value.
    let DatasetSpec::Generate(g) = &s.dataset else {
        panic!("generated")
    };
    assert_eq!(g.dims, 2);
    assert_eq!(super::run_count(&s.matrix), Some(6));
    let runs = super::super::matrix::expand(&s, 2).unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "R*-tree 30% · 4KB · d=2 · hdd-7200",
            "R*-tree 30% · 4KB · d=2 · ssd-v300",
            "R*-tree 30% · 4KB · d=8 · hdd-7200",
            "R*-tree 30% · 4KB · d=8 · ssd-v300",
            "R*-tree 30% · 4KB · d=32 · hdd-7200",
            "R*-tree 30% · 4KB · d=32 · ssd-v300"
        ]
    );
    assert_eq!(runs[4].dims, Some(32));
    // Runs of a spec without the axis have no dims and keep their keys and the spec its
    // fingerprint: the axis serializes to nothing when absent.
    let plain = parse_str(&DIMS.replace("dims = DIMS\n", "")).unwrap();
    assert!(plain.matrix.dims.is_empty());
    let json = serde_json::to_string(&plain.matrix).unwrap();
    assert!(!json.contains("dims"), "{json}");
    let runs = super::super::matrix::expand(&plain, 2).unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.dims.is_none()));
    let run_json = serde_json::to_string(&runs[0]).unwrap();
    assert!(!run_json.contains("dims"), "{run_json}");
    assert_eq!(runs[0].key, fingerprint_of(&runs[0]));
}

fn fingerprint_of(r: &super::super::RunConfig) -> String {
    super::super::matrix::fingerprint(&(&r.name, &r.options))
}

#[test]
fn bad_dimension_axes_name_the_key_and_line() {
    for (dims, want) in [
        ("[]", "matrix.dims: needs at least one value"),
        ("[2, 7]", "matrix.dims: 7 dimensions are not supported"),
        ("[0]", "matrix.dims: 0 dimensions are not supported"),
        ("[4, 4]", "matrix.dims: 4 is listed twice"),
        ("[\"4\"]", "invalid type"),
        ("4", "invalid type"),
    ] {
        let e = err(&DIMS.replace("DIMS", dims));
        assert!(e.contains(want), "{dims}: {e}");
        assert!(e.contains("line "), "{dims}: {e}");
    }
    // The dimensionality in two places.
    let e = err(&DIMS
        .replace("DIMS", "[2, 4]")
        .replace("seed = 3", "seed = 3, dims = 4"));
    assert!(
        e.contains("dataset.generate.dims") && e.contains("matrix.dims"),
        "{e}"
    );
    // A dataset file has its own dimensionality.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.csv");
    std::fs::write(&file, "id,x,y\n1,0.5,0.5\n").unwrap();
    let text = DIMS.replace("DIMS", "[2, 4]").replace(
        "generate = { distribution = \"uniform\", count = 100, vectors = true, seed = 3 }",
        &format!("file = {:?}", file.display().to_string()),
    );
    let e = parse(&text, "t.toml", dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("matrix.dims: applies to generated datasets only"),
        "{e}"
    );
    // A distribution that is 2-D only fails for the other dimensionalities.
    let e = err(&DIMS
        .replace("DIMS", "[2, 4]")
        .replace("\"uniform\"", "\"buildings\"")
        .replace(", vectors = true", ""));
    assert!(e.contains("matrix.dims"), "{e}");
}

#[test]
fn index_entries_take_the_options_structs_defaults_and_name_bad_keys() {
    let text = GOOD.replace(
        r#"index = [{ kind = "rtree", split = "linear" }, { kind = "rstar", reinsert = "30%" }]"#,
        r#"index = [{ kind = "rtree" }, { kind = "rstar" }, { kind = "hilbert" }, { kind = "fortree" }]"#,
    );
    let s = parse_str(&text).unwrap();
    let kinds: Vec<IndexKind> = s.matrix.index.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, IndexKind::registered());
    let e = err(&GOOD.replace(r#"reinsert = "30%""#, r#"candidates = "many""#));
    assert!(
        e.contains("line 6") && e.contains("matrix.index.candidates"),
        "{e}"
    );
    let e = err(&GOOD.replace(r#"reinsert = "30%""#, r#"reinsert_leaf = 0.3"#));
    assert!(
        e.contains("line 6") && e.contains("unknown key") && e.contains("reinsert_policy"),
        "{e}"
    );
}
