//! The cluster recipes of `examples/cluster/` run as written: the Slurm array script for
//! every task id of its `--array` (with the variables Slurm sets), then the merge script;
//! the Kubernetes Indexed Job's container command for every completion index. The merged
//! database holds every run of the matrix exactly once.
//!
//! No scheduler runs here: the scripts' bodies run locally with `bash`/`sh`, with the test's
//! `spidx` first on PATH. What is not exercised: Slurm and Kubernetes themselves, the image.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::Connection;

/// 16 runs (4 indices × 2 page sizes × 2 devices), so each of 16 shards has one.
const MATRIX: &str = r#"
name = "cluster"
[dataset]
generate = { distribution = "uniform", count = 300, seed = 3 }
[protocol]
repetitions = 1
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rtree", split = "quadratic" }, { kind = "rstar" }, { kind = "hilbert" }]
page_size = ["1KB", "2KB"]
device = ["ssd-v300", "seed-table2"]
[[workload]]
kind = "construction"
"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// PATH with the directory of the `spidx` built for these tests first.
fn path_with_spidx() -> String {
    let bin = assert_cmd::cargo::cargo_bin("spidx");
    let dir = bin.parent().unwrap().display().to_string();
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run keys of the finished runs in `db`, sorted, and the number of runs in all.
fn run_keys(db: &Path) -> (Vec<String>, usize) {
    let c = Connection::open(db).unwrap();
    let mut st = c
        .prepare("SELECT run_key FROM runs WHERE status = 'finished' ORDER BY run_key")
        .unwrap();
    let keys: Vec<String> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let all: i64 = c
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    (keys, all as usize)
}

/// The array range `A-B` of the script's `#SBATCH --array=A-B` line.
fn array_of(script: &str) -> (u32, u32) {
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array="))
        .expect("the script declares its array");
    let (a, b) = line.trim().split_once('-').expect("a range A-B");
    (a.parse().unwrap(), b.parse().unwrap())
}

#[test]
fn slurm_array_runs_every_task_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("matrix.toml"), MATRIX).unwrap();
    let script_path = repo().join("examples/cluster/slurm-matrix.sh");
    let script = std::fs::read_to_string(&script_path).unwrap();
    let (first, last) = array_of(&script);
    let count = last - first + 1;
    assert_eq!(
        count, 16,
        "the matrix above is sized for the recipe's array"
    );
    assert!(!d.join("results").exists(), "the script must create it");
    for task in first..=last {
        run(
            Command::new("bash")
                .arg(&script_path)
                .current_dir(d)
                .env("PATH", path_with_spidx())
                .env("SLURM_ARRAY_TASK_ID", task.to_string())
                .env("SLURM_ARRAY_TASK_COUNT", count.to_string()),
            &format!("task {task}"),
        );
        let (keys, _) = run_keys(&d.join(format!("results/shard-{task}.db")));
        assert_eq!(keys.len(), 1, "task {task}: one run of 16 per shard");
    }
    run(
        Command::new("bash")
            .arg(repo().join("examples/cluster/slurm-merge.sh"))
            .current_dir(d)
            .env("PATH", path_with_spidx()),
        "merge",
    );
    let (keys, all) = run_keys(&d.join("results/all.db"));
    assert_eq!(all, 16, "every run once");
    let mut unique = keys.clone();
    unique.dedup();
    assert_eq!(unique.len(), 16, "{keys:?}");
}

/// The Job's header tells how to create the ConfigMap its pods read the spec from: the
/// `kubectl create configmap` line names the ConfigMap the Job mounts and, as the key, the
/// file its command reads from that mount.
#[test]
fn kubernetes_job_header_creates_the_configmap_it_mounts() {
    let yaml = std::fs::read_to_string(repo().join("examples/cluster/k8s-job.yaml")).unwrap();
    let name = yaml
        .split("configMap: { name: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .expect("a configMap volume");
    let volume = yaml
        .lines()
        .find(|l| l.contains(&format!("configMap: {{ name: {name} }}")))
        .and_then(|l| l.split("name: ").nth(1))
        .and_then(|r| r.split(',').next())
        .expect("the volume's name");
    let mount = yaml
        .split(&format!("{{ name: {volume}, mountPath: "))
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .expect("where the ConfigMap is mounted");
    let args = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("args: [\""))
        .expect("args line");
    let key = args
        .split(&format!("{mount}/"))
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .expect("the command reads a file from the mount");
    let create = format!("#   kubectl create configmap {name} --from-file={key}=");
    assert!(
        yaml.contains(&create),
        "the header lacks `{create}...`:\n{yaml}"
    );
    // Created before the Job starts.
    let apply = yaml.find("kubectl apply -f examples/cluster/k8s-job.yaml");
    assert!(
        apply.is_some_and(|a| a > yaml.find(&create).unwrap()),
        "{yaml}"
    );
}

#[test]
fn kubernetes_job_command_runs_every_index() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let yaml = std::fs::read_to_string(repo().join("examples/cluster/k8s-job.yaml")).unwrap();
    // What the issue with a local image and a shared volume was: both stated.
    assert!(yaml.contains("imagePullPolicy: IfNotPresent"), "{yaml}");
    assert!(yaml.contains("accessModes: [ReadWriteMany]"), "{yaml}");
    let completions: u32 = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("completions:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The container's `sh -c` command, with the pod's mounts moved under the test's dir.
    let args_line = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("args: [\""))
        .expect("args line");
    let command = args_line
        .trim_end_matches("\"]")
        .replace("/specs/", &format!("{}/specs/", d.display()))
        .replace("/out", &format!("{}/out", d.display()));
    std::fs::create_dir_all(d.join("specs")).unwrap();
    std::fs::write(d.join("specs/matrix.toml"), MATRIX).unwrap();
    for index in 0..completions {
        run(
            Command::new("sh")
                .args(["-c", &command])
                .current_dir(d)
                .env("PATH", path_with_spidx())
                .env("JOB_COMPLETION_INDEX", index.to_string()),
            &format!("index {index}"),
        );
    }
    let shards: Vec<String> = (0..completions)
        .map(|i| d.join(format!("out/shard-{i}.db")).display().to_string())
        .collect();
    let merged = d.join("out/all.db");
    let mut merge = common::spidx();
    merge
        .args(["results", "merge"])
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .assert()
        .success();
    let (keys, all) = run_keys(&merged);
    assert_eq!((keys.len(), all), (16, 16));
}

#[test]
fn a_missing_results_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("matrix.toml"), MATRIX).unwrap();
    let out = common::spidx()
        .current_dir(d)
        .args(["run", "matrix.toml", "--shard", "0/16", "--quiet"])
        .args(["--results", "nowhere/shard-0.db"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("directory nowhere does not exist") && err.contains("mkdir -p nowhere"),
        "{err}"
    );
}
