//! The torture test: `spidx build` killed with SIGKILL at seeded moments, for every store
//! (direct with periodic checkpoints, FAST, eFIND, LCR-tree, RFTL), 2-D geometries and 3-D
//! vectors, on `file:` and simulated devices. After each kill:
//! * `spidx check` (read-only) exits 0 (clean) or 3 (crashed, recoverable) and changes no
//!   byte of the device file or the directory; `spidx query` refuses a crashed index;
//! * `spidx recover` succeeds, then `spidx check` passes (the invariant checker);
//! * the index holds a prefix of the dataset's insertion order (for the direct store, a
//!   multiple of its checkpoint interval), and window queries return exactly what a
//!   brute-force scan of that prefix returns (3-D vectors: computed here from the `.npy`;
//!   2-D geometries: a reference index built without a crash, restricted to the prefix).
//!
//! Then the recovered index is damaged, a seeded number of times: one bit flipped, or a
//! file truncated, in a seeded choice of file (manifest, store header, object directory,
//! journal, device file — its log region included — or device state). After each damage:
//! * `check`, `query` and `recover` end by themselves (exit 0, 1 or 3; never a panic or a
//!   signal);
//! * a `query` that exits 0 answers exactly what brute force over the acknowledged
//!   objects answers (`wrong answers with exit 0`, must be 0);
//! * a `recover` that exits 0 leaves an index that `check` passes and that holds every
//!   acknowledged object (`lost without a named error`, must be 0).
//!
//! The default run is bounded (about a minute or two); `SPIDX_LONG_TESTS=1` runs ten
//! times as many cases. The test prints its counts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const CHECKPOINT_EVERY: u64 = 250;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("spidx")
}

fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// Asserts the command ended by itself with 0, 1 or 3 (no panic, no signal).
fn no_crash(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 3)) && !err.contains("panicked"),
        "{what}: {:?} {err}",
        out.status
    );
}

fn ok_json(args: &[&str], what: &str) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{what}: {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

struct Config {
    name: &'static str,
    store: &'static [&'static str],
    file: bool,
    geo: bool,
}

const CONFIGS: &[Config] = &[
    Config {
        name: "direct 2-D file",
        store: &["--store", "direct", "--checkpoint-every", "250"],
        file: true,
        geo: true,
    },
    Config {
        name: "FAST 2-D file",
        store: &[
            "--store",
            "fast",
            "--write-buffer",
            "32KB",
            "--store-opt",
            "flushing_unit=3",
            "--store-opt",
            "flush_policy=fast-star",
        ],
        file: true,
        geo: true,
    },
    Config {
        name: "eFIND 2-D file",
        store: &["--store", "efind", "--write-buffer", "32KB"],
        file: true,
        geo: true,
    },
    Config {
        name: "direct 3-D file",
        store: &["--store", "direct", "--checkpoint-every", "250"],
        file: true,
        geo: false,
    },
    Config {
        name: "FAST 3-D file group:4",
        store: &[
            "--store",
            "fast",
            "--write-buffer",
            "32KB",
            "--store-opt",
            "flushing_unit=5",
            "--store-opt",
            "flush_policy=fast",
            "--log-sync",
            "group:4",
        ],
        file: true,
        geo: false,
    },
    Config {
        name: "eFIND 3-D file",
        store: &["--store", "efind", "--write-buffer", "32KB"],
        file: true,
        geo: false,
    },
    Config {
        name: "LCR-tree 2-D file",
        store: &["--store", "lcr", "--write-buffer", "32KB"],
        file: true,
        geo: true,
    },
    Config {
        name: "RFTL 3-D file",
        store: &["--store", "rftl", "--write-buffer", "32KB"],
        file: true,
        geo: false,
    },
    Config {
        name: "FAST 2-D simulated",
        store: &[
            "--store",
            "fast",
            "--write-buffer",
            "32KB",
            "--store-opt",
            "flushing_unit=2",
            "--store-opt",
            "flush_policy=fast-star",
        ],
        file: false,
        geo: true,
    },
    Config {
        name: "direct 3-D simulated",
        store: &["--store", "direct", "--checkpoint-every", "250"],
        file: false,
        geo: false,
    },
];

/// The 3-D points of a `.npy` file written by `spidx dataset generate` (f64, C order).
fn read_npy(path: &Path) -> Vec<[f64; 3]> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"\x93NUMPY");
    let (hlen, start) = if b[6] == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10)
    } else {
        (
            u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize,
            12,
        )
    };
    let header = String::from_utf8_lossy(&b[start..start + hlen]);
    assert!(
        header.contains("<f8") && header.contains("False"),
        "{header}"
    );
    b[start + hlen..]
        .chunks_exact(24)
        .map(|c| {
            let f = |i: usize| f64::from_le_bytes(c[i * 8..i * 8 + 8].try_into().unwrap());
            [f(0), f(1), f(2)]
        })
        .collect()
}

struct Data {
    path: String,
    n: u64,
    points: Option<Vec<[f64; 3]>>,
    /// 2-D: the reference index (built without a crash).
    reference: Option<String>,
}

fn ids_of(v: &serde_json::Value) -> BTreeSet<u64> {
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

fn window(rng: &mut ChaCha8Rng, geo: bool) -> (String, [f64; 6]) {
    if geo {
        // The buildings generator places objects in [0, 1e6]^2: a window of a fifth per
        // side, anywhere.
        let (x, y) = (rng.gen_range(-1e5..1e6), rng.gen_range(-1e5..1e6));
        let w = [x, y, x + 2e5, y + 2e5, 0.0, 0.0];
        (format!("{},{},{},{}", w[0], w[1], w[2], w[3]), w)
    } else {
        let c: [f64; 3] = [rng.gen(), rng.gen(), rng.gen()];
        let w = [c[0], c[1], c[2], c[0] + 0.3, c[1] + 0.3, c[2] + 0.3];
        (
            w.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(","),
            w,
        )
    }
}

fn everything(geo: bool) -> &'static str {
    if geo {
        "-1e12,-1e12,1e12,1e12"
    } else {
        "-1e12,-1e12,-1e12,1e12,1e12,1e12"
    }
}

fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[derive(Default, Debug)]
struct Counts {
    cases: u64,
    kills: u64,
    completed: u64,
    crashed_reported: u64,
    journal_rollbacks: u64,
    flips: u64,
    truncations: u64,
    damage_detected: u64,
    queries_refused: u64,
    queries_answered: u64,
    recovers_refused: u64,
    wrong_answers_exit_0: u64,
    lost_without_named_error: u64,
}

fn build_args<'a>(cfg: &'a Config, data: &'a str, out: &'a str, dev: &'a str) -> Vec<&'a str> {
    let mut a = vec![
        "build",
        "--data",
        data,
        "--index",
        "rtree",
        "--page-size",
        "1KB",
        "--out",
        out,
    ];
    a.extend_from_slice(cfg.store);
    if cfg.file {
        a.extend_from_slice(&[
            "--device",
            dev,
            "--device-param",
            "capacity=16MB",
            "--device-param",
            "direct=false",
        ]);
    } else {
        a.extend_from_slice(&["--device", "memory"]);
    }
    a
}

fn one_case(cfg: &Config, data: &Data, seed: u64, full_s: f64, tmp: &Path, counts: &mut Counts) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let out = tmp.join(format!("idx-{seed}"));
    let o = out.to_str().unwrap().to_string();
    let dev_path = tmp.join(format!("dev-{seed}.bin"));
    let dev = format!("file:{}", dev_path.display());
    let what = format!("{} seed {seed}", cfg.name);
    // Kill at a seeded moment of the build (a tenth of the cases never get killed).
    let delay = Duration::from_secs_f64(full_s * rng.gen_range(0.05..1.1));
    let mut child = Command::new(bin())
        .args(build_args(cfg, &data.path, &o, &dev))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let finished = loop {
        if let Some(s) = child.try_wait().unwrap() {
            assert!(s.success(), "{what}: the build failed on its own");
            break true;
        }
        if start.elapsed() >= delay {
            child.kill().unwrap();
            child.wait().unwrap();
            break false;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    counts.cases += 1;
    if finished {
        counts.completed += 1;
    } else {
        counts.kills += 1;
    }
    if !out.join("index.json").exists() {
        // Killed before the manifest: no index was ever announced.
        return;
    }
    // A read-only check changes nothing, whatever it finds; it says clean (0) or crashed
    // (3), and a query refuses a crashed index.
    let before_dir = files_of(&out);
    let before_dev = cfg.file.then(|| std::fs::read(&dev_path).unwrap());
    let c = run(&["check", &o, "--json"]);
    no_crash(&c, &format!("{what}: check after the kill"));
    let code = c.status.code();
    assert!(
        matches!(code, Some(0 | 3)),
        "{what}: check after a kill: {code:?} {}",
        String::from_utf8_lossy(&c.stderr)
    );
    if code == Some(3) {
        counts.crashed_reported += 1;
        let q = run(&["query", &o, "--window", everything(cfg.geo), "--json"]);
        assert!(
            !q.status.success(),
            "{what}: a query answered a crashed index"
        );
        assert!(
            String::from_utf8_lossy(&q.stderr).contains("spidx recover"),
            "{what}: {}",
            String::from_utf8_lossy(&q.stderr)
        );
    }
    assert!(files_of(&out) == before_dir, "{what}: check wrote a file");
    if let Some(b) = &before_dev {
        assert!(
            std::fs::read(&dev_path).unwrap() == *b,
            "{what}: check wrote the device file"
        );
    }
    let r = ok_json(&["recover", &o, "--json"], &what);
    if r["journal_pages_restored"].as_u64().unwrap_or(0) > 0 {
        counts.journal_rollbacks += 1;
    }
    let c = ok_json(&["check", &o, "--json"], &what);
    assert_eq!(c["ok"], true, "{what}: {c}");
    // A prefix of the insertion order.
    let all = ids_of(&ok_json(
        &[
            "query",
            &o,
            "--window",
            everything(cfg.geo),
            "--ids",
            "--json",
        ],
        &what,
    ));
    let k = all.len() as u64;
    assert!(
        all.iter().copied().eq(0..k),
        "{what}: the recovered ids are not a prefix"
    );
    if cfg.store[1] == "direct" {
        assert!(
            k.is_multiple_of(CHECKPOINT_EVERY) || k == data.n,
            "{what}: {k} objects is no checkpoint"
        );
    }
    if finished {
        assert_eq!(k, data.n, "{what}: a completed build lost objects");
    }
    for _ in 0..3 {
        let (wtext, w) = window(&mut rng, cfg.geo);
        let got = ids_of(&ok_json(
            &["query", &o, "--window", &wtext, "--ids", "--json"],
            &what,
        ));
        assert_eq!(
            got,
            expected(data, k, &wtext, &w, &what),
            "{what}: window {wtext}"
        );
    }
    let damages = if long_run() { 3 } else { 2 };
    for _ in 0..damages {
        let sound = damage(
            &out,
            cfg.file.then_some(dev_path.as_path()),
            (data, k, cfg.geo),
            &mut rng,
            &what,
            counts,
        );
        if !sound {
            break;
        }
    }
}

fn long_run() -> bool {
    std::env::var_os("SPIDX_LONG_TESTS").is_some()
}

/// What brute force answers for window `w` over the first `k` objects of `data`.
fn expected(data: &Data, k: u64, wtext: &str, w: &[f64; 6], what: &str) -> BTreeSet<u64> {
    match (&data.points, &data.reference) {
        (Some(pts), _) => pts[..k as usize]
            .iter()
            .enumerate()
            .filter(|(_, p)| (0..3).all(|d| p[d] >= w[d] && p[d] <= w[d + 3]))
            .map(|(i, _)| i as u64)
            .collect(),
        (None, Some(reference)) => ids_of(&ok_json(
            &["query", reference, "--window", wtext, "--ids", "--json"],
            what,
        ))
        .into_iter()
        .filter(|id| *id < k)
        .collect(),
        _ => unreachable!(),
    }
}

/// Damages the index (one bit flipped, or a file truncated) in a seeded choice of its
/// files, then runs check, query and recover: each must end by itself; a query that exits
/// 0 must answer what brute force over the `k` acknowledged objects answers, and a recover
/// that exits 0 must leave a checked index holding all of them. Returns whether the index
/// is sound again (recovered, or the damaged file put back after a refused recover).
fn damage(
    out: &Path,
    dev: Option<&Path>,
    (data, k, geo): (&Data, u64, bool),
    rng: &mut ChaCha8Rng,
    what: &str,
    counts: &mut Counts,
) -> bool {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).map(|m| m.len() > 0).unwrap_or(false))
        .collect();
    candidates.sort();
    if let Some(d) = dev {
        // The device file holds most of what matters (nodes, log, objects): twice the odds.
        candidates.push(d.to_path_buf());
        candidates.push(d.to_path_buf());
    }
    let target = candidates[rng.gen_range(0..candidates.len())].clone();
    let mut bytes = std::fs::read(&target).unwrap();
    let original = bytes.clone();
    let is_dev = Some(target.as_path()) == dev;
    // In a device file, damage a written block (most of the file is never written).
    let pick = |rng: &mut ChaCha8Rng| {
        if is_dev {
            let used: Vec<usize> = bytes
                .chunks(4096)
                .enumerate()
                .filter(|(_, c)| c.iter().any(|b| *b != 0))
                .map(|(i, _)| i)
                .collect();
            let block = used[rng.gen_range(0..used.len())];
            block * 4096 + rng.gen_range(0..4096.min(bytes.len() - block * 4096))
        } else {
            rng.gen_range(0..bytes.len())
        }
    };
    let at = pick(rng);
    // A truncated device file is refused by its size check alone: truncate only the
    // directory's files.
    let truncate = !is_dev && rng.gen_bool(0.25);
    if truncate {
        bytes.truncate(at);
        counts.truncations += 1;
    } else {
        bytes[at] ^= 1 << rng.gen_range(0..8);
        counts.flips += 1;
    }
    std::fs::write(&target, &bytes).unwrap();
    let o = out.to_str().unwrap();
    let name = target.file_name().unwrap().to_string_lossy().into_owned();
    let how = if truncate { "truncated to" } else { "bit flip" };
    let what = format!("{what}: {how} {name} at byte {at}");
    let c = run(&["check", o]);
    no_crash(&c, &what);
    if !c.status.success() {
        counts.damage_detected += 1;
    }
    // A query answers right or refuses.
    let (wtext, w) = window(rng, geo);
    let q = run(&["query", o, "--window", &wtext, "--ids", "--json"]);
    no_crash(&q, &what);
    if q.status.success() {
        counts.queries_answered += 1;
        let v: serde_json::Value = serde_json::from_slice(&q.stdout).unwrap();
        if ids_of(&v) != expected(data, k, &wtext, &w, &what) {
            counts.wrong_answers_exit_0 += 1;
            eprintln!("WRONG ANSWER with exit 0: {what}: window {wtext}");
        }
    } else {
        counts.queries_refused += 1;
    }
    // A recover that succeeds leaves a sound index holding every acknowledged object.
    let r = run(&["recover", o]);
    no_crash(&r, &what);
    if r.status.success() {
        let c = run(&["check", o]);
        assert!(
            c.status.success(),
            "{what}: recover exited 0 but check fails: {}",
            String::from_utf8_lossy(&c.stderr)
        );
        let all = run(&["query", o, "--window", everything(geo), "--ids", "--json"]);
        let held = if all.status.success() {
            ids_of(&serde_json::from_slice(&all.stdout).unwrap())
        } else {
            BTreeSet::new()
        };
        if !held.iter().copied().eq(0..k) {
            counts.lost_without_named_error += 1;
            eprintln!(
                "LOST without a named error: {what}: recover exited 0 with {} of {k} objects",
                held.len()
            );
            return false;
        }
        true
    } else {
        counts.recovers_refused += 1;
        // Put the file back: the next damage starts from a sound index, if the refusal
        // came before recover wrote anything.
        std::fs::write(&target, &original).unwrap();
        run(&["check", o]).status.success()
    }
}

fn generate(tmp: &Path, geo: bool, n: u64) -> Data {
    let n_s = n.to_string();
    if geo {
        let p = tmp.join("b.fgb");
        let ps = p.to_str().unwrap().to_string();
        let g = run(&[
            "dataset",
            "generate",
            "--distribution",
            "buildings",
            "--count",
            &n_s,
            "--seed",
            "11",
            "--out",
            &ps,
        ]);
        assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
        let r = tmp.join("reference");
        let rs = r.to_str().unwrap().to_string();
        let b = run(&[
            "build",
            "--data",
            &ps,
            "--index",
            "rtree",
            "--page-size",
            "1KB",
            "--out",
            &rs,
        ]);
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        Data {
            path: ps,
            n,
            points: None,
            reference: Some(rs),
        }
    } else {
        let p = tmp.join("v.npy");
        let ps = p.to_str().unwrap().to_string();
        let g = run(&[
            "dataset",
            "generate",
            "--dims",
            "3",
            "--distribution",
            "uniform",
            "--count",
            &n_s,
            "--seed",
            "11",
            "--out",
            &ps,
        ]);
        assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
        let pts = read_npy(&p);
        assert_eq!(pts.len() as u64, n);
        Data {
            path: ps,
            n,
            points: Some(pts),
            reference: None,
        }
    }
}

#[test]
fn killed_builds_recover_a_prefix_and_damage_never_answers_wrong() {
    let long = long_run();
    let per_config: u64 = if long { 20 } else { 2 };
    let n = if long { 6000 } else { 2000 };
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let geo = generate(tmp.path(), true, n);
    let vec3 = generate(tmp.path(), false, n);
    let mut counts = Counts::default();
    for (ci, cfg) in CONFIGS.iter().enumerate() {
        let data = if cfg.geo { &geo } else { &vec3 };
        // How long a full build takes (kills are placed within it).
        let t = Instant::now();
        let probe = tmp.path().join(format!("probe-{ci}"));
        let pdev = format!(
            "file:{}",
            tmp.path().join(format!("probe-{ci}.bin")).display()
        );
        let b = run(&build_args(cfg, &data.path, probe.to_str().unwrap(), &pdev));
        assert!(
            b.status.success(),
            "{}: {}",
            cfg.name,
            String::from_utf8_lossy(&b.stderr)
        );
        let full_s = t.elapsed().as_secs_f64();
        for s in 0..per_config {
            let case_dir = tmp.path().join(format!("c{ci}-{s}"));
            std::fs::create_dir_all(&case_dir).unwrap();
            one_case(
                cfg,
                data,
                ci as u64 * 1000 + s,
                full_s,
                &case_dir,
                &mut counts,
            );
            std::fs::remove_dir_all(&case_dir).unwrap();
        }
    }
    eprintln!(
        "torture ({:.0} s wall): {counts:?}",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(counts.cases, per_config * CONFIGS.len() as u64);
    assert!(counts.kills > 0 && counts.flips > 0, "{counts:?}");
    assert_eq!(counts.wrong_answers_exit_0, 0, "{counts:?}");
    assert_eq!(counts.lost_without_named_error, 0, "{counts:?}");
}
