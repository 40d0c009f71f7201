//! Content fingerprints of every input of a run, as Snakemake and DVC keep them: the
//! dataset, the windows files, the device (preset and parameters), the spec file and the
//! spidx build. Each is identified by its *bytes* (XXH3-128 of a file's content, or of the
//! canonical JSON of generated data's and devices' parameters), not by its name, and the
//! list is stored with each run (`runs.inputs_json`), with a hash of the inputs that decide
//! what a run measures (`runs.inputs_hash`). `spidx run --resume` counts a finished run as
//! done only when its `inputs_hash` is the one the spec's inputs have now, and tells which
//! input changed ([`changes`]).
//!
//! Hashing a 1 GB dataset at every invocation would cost seconds, so file hashes are
//! cached ([`HashCache`]) by path, device, inode, size, modification and change time: a
//! small JSON file in the user's cache folder, not a table of the results database, since
//! the database may be a PostgreSQL server shared by many machines, where one path names a
//! different file on each host and a cached hash of one host's file means nothing on
//! another; the cache is an optimisation only (a missing, damaged or unwritable cache file
//! means hashing again, never a wrong hash).
//!
//! Which inputs decide a rerun: the dataset, the windows files and the device. The spec's
//! text and the spidx build are recorded (and shown by `spidx results inputs`) but do not
//! by themselves make a finished run stale: a comment in the spec changes nothing measured
//! (a changed *meaning* of the spec is another spec fingerprint, so another experiment),
//! and a rebuilt spidx resuming an interrupted matrix keeps what the earlier build
//! finished (`spidx run --resume` says when it keeps runs of another build).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::matrix::RunConfig;
use super::spec::{DatasetSpec, Windows, Workload};
use super::workload::Inputs;
use crate::units::format_size;
use crate::{Error, Result};

/// The hash of a byte string: XXH3-128, 32 hex digits.
pub fn hash_bytes(bytes: &[u8]) -> String {
    format!("{:032x}", twox_hash::XxHash3_128::oneshot(bytes))
}

/// One input of a run, fingerprinted by its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputPrint {
    /// What it is: `dataset`, `windows NAME` (a range workload's windows file),
    /// `device LABEL`, `spec` or `spidx` (the build).
    pub role: String,
    /// The file (as the spec resolved it), or a description of an input that is no file
    /// (`generated uniform`, a device's name, the spidx version).
    pub path: String,
    /// The file's size in bytes (files only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// XXH3-128 (hex) of the file's bytes, or of the parameters' canonical JSON; the
    /// version and commit for the build.
    pub hash: String,
    /// Records read from it: objects of the dataset, windows of a windows file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
}

impl InputPrint {
    /// Whether this input decides what a run measures (and so whether a finished run is
    /// still valid): everything but the spec's text and the build.
    pub fn decides(&self) -> bool {
        self.role != "spec" && self.role != "spidx"
    }
}

/// The inputs of one run and the hash of those that decide what it measures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunInputs {
    /// Every input, in a fixed order (dataset, windows, device, spec, spidx).
    pub items: Vec<InputPrint>,
    /// XXH3-128 over the deciding inputs' roles and hashes.
    pub hash: String,
}

impl RunInputs {
    /// From the list of inputs.
    pub fn new(items: Vec<InputPrint>) -> RunInputs {
        let deciding: Vec<(&str, &str)> = items
            .iter()
            .filter(|i| i.decides())
            .map(|i| (i.role.as_str(), i.hash.as_str()))
            .collect();
        let json = serde_json::to_string(&deciding).unwrap_or_default();
        RunInputs {
            hash: hash_bytes(json.as_bytes()),
            items,
        }
    }

    /// The list as stored in `runs.inputs_json`.
    pub fn json(&self) -> String {
        serde_json::to_string(&self.items).unwrap_or_default()
    }

    /// The list stored as `json` (empty when it cannot be read).
    pub fn parse(json: &str) -> Vec<InputPrint> {
        serde_json::from_str(json).unwrap_or_default()
    }
}

/// The fingerprints of every input of an experiment, from which each run's
/// [`RunInputs`] is taken.
#[derive(Debug, Clone, Default)]
pub struct ExperimentInputs {
    /// The dataset: one entry, or one per dimensionality of a `matrix.dims` axis.
    datasets: Vec<(Option<usize>, InputPrint)>,
    /// The windows files of range workloads.
    windows: Vec<InputPrint>,
    /// The devices of the matrix by label.
    devices: BTreeMap<String, InputPrint>,
    /// The spec file.
    spec: Option<InputPrint>,
    /// The build.
    build: Option<InputPrint>,
}

/// What [`ExperimentInputs::of`] fingerprints.
pub(crate) struct Sources<'a> {
    /// The dataset spec.
    pub dataset: &'a DatasetSpec,
    /// Objects loaded per dimensionality (`None`: the dataset's own).
    pub objects: Vec<(Option<usize>, u64)>,
    /// The spec's workloads and their prepared inputs.
    pub workloads: &'a [Workload],
    /// Prepared inputs, same order.
    pub inputs: &'a [Inputs],
    /// The matrix's devices.
    pub devices: &'a [super::spec::DeviceChoice],
    /// The spec file and its text.
    pub spec: (&'a Path, &'a str),
}

impl ExperimentInputs {
    /// Fingerprints every input of an experiment (file hashes through `cache`).
    pub(crate) fn of(s: Sources, cache: &mut HashCache) -> Result<ExperimentInputs> {
        let mut datasets = Vec::new();
        for (dims, objects) in &s.objects {
            let print = match s.dataset {
                DatasetSpec::File { path, .. } => {
                    let mut p = cache.file("dataset", path)?;
                    // Reading options (skip_invalid, renumber, explode, order) are in the
                    // spec's fingerprint; the bytes are here.
                    p.records = Some(*objects);
                    p
                }
                DatasetSpec::Generate(g) => {
                    let g = super::spec::GenerateSpec {
                        dims: dims.unwrap_or(g.dims),
                        ..g.clone()
                    };
                    let json = serde_json::to_string(&g).unwrap_or_default();
                    InputPrint {
                        role: "dataset".into(),
                        path: format!("generated {} d={}", g.distribution, g.dims),
                        bytes: None,
                        hash: hash_bytes(json.as_bytes()),
                        records: Some(*objects),
                    }
                }
            };
            datasets.push((*dims, print));
        }
        let mut windows = Vec::new();
        for (w, inp) in s.workloads.iter().zip(s.inputs) {
            if let Workload::Range {
                name,
                windows: Windows::File { path },
                ..
            } = w
            {
                let mut p = cache.file(&format!("windows {name}"), path)?;
                if let Inputs::Select { queries, .. } = inp {
                    p.records = Some(queries.len() as u64);
                }
                windows.push(p);
            }
        }
        let devices = s
            .devices
            .iter()
            .map(|d| {
                let json = serde_json::to_string(&(&d.name, &d.config)).unwrap_or_default();
                (
                    d.label.clone(),
                    InputPrint {
                        role: format!("device {}", d.label),
                        path: d.name.clone(),
                        bytes: None,
                        hash: hash_bytes(json.as_bytes()),
                        records: None,
                    },
                )
            })
            .collect();
        let (spec_path, spec_text) = s.spec;
        Ok(ExperimentInputs {
            datasets,
            windows,
            devices,
            spec: Some(InputPrint {
                role: "spec".into(),
                path: spec_path.display().to_string(),
                bytes: Some(spec_text.len() as u64),
                hash: hash_bytes(spec_text.as_bytes()),
                records: None,
            }),
            build: Some(InputPrint {
                role: "spidx".into(),
                path: crate::VERSION.into(),
                bytes: None,
                hash: super::db::export::recorded_version(),
                records: None,
            }),
        })
    }

    /// The inputs of `run`: its dimensionality's dataset, every windows file, its device,
    /// the spec and the build.
    pub fn run(&self, run: &RunConfig) -> RunInputs {
        let mut items = Vec::new();
        let dataset = self
            .datasets
            .iter()
            .find(|(d, _)| run.dims.is_some() && *d == run.dims)
            .or(self.datasets.first());
        if let Some((_, p)) = dataset {
            items.push(p.clone());
        }
        items.extend(self.windows.iter().cloned());
        if let Some(d) = self.devices.get(&run.device_label) {
            items.push(d.clone());
        }
        items.extend(self.spec.iter().cloned());
        items.extend(self.build.iter().cloned());
        RunInputs::new(items)
    }
}

/// `3000` → `3,000`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What tells two versions of one input apart, for messages: records, size, hash.
fn difference(old: &InputPrint, new: &InputPrint) -> String {
    let mut parts = Vec::new();
    let noun = if old.role == "dataset" {
        "objects"
    } else {
        "records"
    };
    if let (Some(a), Some(b)) = (old.records, new.records) {
        if a != b {
            parts.push(format!("{} → {} {noun}", thousands(a), thousands(b)));
        }
    }
    if let (Some(a), Some(b)) = (old.bytes, new.bytes) {
        if a != b {
            parts.push(format!("{} → {}", format_size(a), format_size(b)));
        }
    }
    let short = |h: &str| h.chars().take(12).collect::<String>();
    parts.push(format!("hash {} → {}", short(&old.hash), short(&new.hash)));
    parts.join(", ")
}

/// Why a finished run over inputs `old` (as stored) is stale with inputs `new`: one
/// phrase per deciding input that differs (`dataset data.geojson changed: 3,000 → 5,000
/// objects, 1.2 MB → 2 MB, hash … → …`), or one that was added or removed.
pub fn changes(old: &[InputPrint], new: &[InputPrint]) -> Vec<String> {
    let mut out = Vec::new();
    let name = |p: &InputPrint| {
        let file = Path::new(&p.path)
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_else(|| p.path.clone());
        format!("{} {file}", p.role)
    };
    for n in new.iter().filter(|p| p.decides()) {
        match old.iter().find(|o| o.role == n.role) {
            Some(o) if o.hash == n.hash => {}
            Some(o) if o.path != n.path => out.push(format!(
                "{} is now {} ({})",
                name(o),
                n.path,
                difference(o, n)
            )),
            Some(o) => out.push(format!("{} changed: {}", name(n), difference(o, n))),
            None => out.push(format!("{} is new", name(n))),
        }
    }
    for o in old.iter().filter(|p| p.decides()) {
        if !new.iter().any(|n| n.role == o.role) {
            out.push(format!("{} is no longer an input", name(o)));
        }
    }
    out
}

/// One cached file hash and what identifies the file's version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Cached {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    hash: String,
    /// When it was last used (a counter), to keep the newest entries.
    used: u64,
}

/// Cached file hashes, by canonical path, valid while the file's device, inode, size,
/// modification and change times are the same (any write changes the change time).
pub struct HashCache {
    /// The cache file, or `None` for a cache kept in memory only.
    file: Option<PathBuf>,
    entries: BTreeMap<String, Cached>,
    clock: u64,
    dirty: bool,
    /// Files hashed (read) by this cache, for tests and messages.
    pub hashed: u64,
}

/// At most this many files are remembered (the least recently used are dropped).
const CACHE_ENTRIES: usize = 1000;

impl HashCache {
    /// The cache of this user: `$SPIDX_CACHE_DIR/input-hashes.json`, else
    /// `$XDG_CACHE_HOME/spidx/…`, else `$HOME/.cache/spidx/…`; in memory only when none
    /// is set.
    pub fn user() -> HashCache {
        let dir = std::env::var_os("SPIDX_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("spidx")))
            .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache/spidx")));
        match dir {
            Some(d) => HashCache::at(&d.join("input-hashes.json")),
            None => HashCache::in_memory(),
        }
    }

    /// A cache kept in `file` (read now if it exists; a damaged file is ignored).
    pub fn at(file: &Path) -> HashCache {
        let entries = std::fs::read(file)
            .ok()
            .and_then(|b| serde_json::from_slice::<BTreeMap<String, Cached>>(&b).ok())
            .unwrap_or_default();
        let clock = entries.values().map(|c| c.used).max().unwrap_or(0);
        HashCache {
            file: Some(file.to_path_buf()),
            entries,
            clock,
            dirty: false,
            hashed: 0,
        }
    }

    /// A cache that is not kept.
    pub fn in_memory() -> HashCache {
        HashCache {
            file: None,
            entries: BTreeMap::new(),
            clock: 0,
            dirty: false,
            hashed: 0,
        }
    }

    /// The fingerprint of file `path` in role `role` (hashed, or from the cache).
    pub fn file(&mut self, role: &str, path: &Path) -> Result<InputPrint> {
        let key = std::fs::canonicalize(path)
            .map_err(|e| Error::io(path, e))?
            .display()
            .to_string();
        let stat = Stat::of(path)?;
        self.clock += 1;
        let hash = match self.entries.get_mut(&key) {
            Some(c) if stat.matches(c) => {
                c.used = self.clock;
                self.dirty = true;
                c.hash.clone()
            }
            _ => {
                let hash = hash_file(path)?;
                self.hashed += 1;
                // A file that changed while it was read is hashed again next time.
                if Stat::of(path)? == stat {
                    self.entries
                        .insert(key, stat.cached(hash.clone(), self.clock));
                    self.dirty = true;
                }
                hash
            }
        };
        Ok(InputPrint {
            role: role.to_string(),
            path: path.display().to_string(),
            bytes: Some(stat.size),
            hash,
            records: None,
        })
    }

    /// Writes the cache file (atomically: a temporary file renamed over it), keeping the
    /// [`CACHE_ENTRIES`] most recently used entries. Errors are ignored: the cache only
    /// saves time.
    pub fn save(&mut self) {
        let Some(file) = &self.file else {
            return;
        };
        if !self.dirty {
            return;
        }
        if self.entries.len() > CACHE_ENTRIES {
            let mut used: Vec<u64> = self.entries.values().map(|c| c.used).collect();
            used.sort_unstable();
            let cut = used[used.len() - CACHE_ENTRIES];
            self.entries.retain(|_, c| c.used >= cut);
        }
        let Some(dir) = file.parent() else {
            return;
        };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let tmp = dir.join(format!(".input-hashes.{}.tmp", std::process::id()));
        let Ok(text) = serde_json::to_vec(&self.entries) else {
            return;
        };
        if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, file).is_ok() {
            self.dirty = false;
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// What identifies a version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stat {
    fn of(path: &Path) -> Result<Stat> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Ok(Stat {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        })
    }

    fn matches(&self, c: &Cached) -> bool {
        (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
            == (c.dev, c.ino, c.size, c.mtime_ns, c.ctime_ns)
    }

    fn cached(&self, hash: String, used: u64) -> Cached {
        Cached {
            dev: self.dev,
            ino: self.ino,
            size: self.size,
            mtime_ns: self.mtime_ns,
            ctime_ns: self.ctime_ns,
            hash,
            used,
        }
    }
}

/// XXH3-128 of a file's bytes, read in 1 MiB pieces.
fn hash_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = twox_hash::XxHash3_128::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.write(&buf[..n]);
    }
    Ok(format!("{:032x}", h.finish_128()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_hashes_follow_the_bytes_and_are_cached_by_stat() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data.csv");
        std::fs::write(&data, "a,b\n1,2\n").unwrap();
        let cache_file = dir.path().join("cache/input-hashes.json");
        let mut cache = HashCache::at(&cache_file);
        let first = cache.file("dataset", &data).unwrap();
        assert_eq!(first.hash, hash_bytes(b"a,b\n1,2\n"));
        assert_eq!(first.bytes, Some(8));
        assert_eq!(cache.hashed, 1);
        cache.save();
        // Read back: a hit, the file is not read again. Prove it by planting another hash.
        let text = std::fs::read_to_string(&cache_file).unwrap();
        std::fs::write(&cache_file, text.replace(&first.hash, &"0".repeat(32))).unwrap();
        let mut cache = HashCache::at(&cache_file);
        assert_eq!(cache.file("dataset", &data).unwrap().hash, "0".repeat(32));
        assert_eq!(cache.hashed, 0);
        // A new version of the file (other bytes, even of the same size) is hashed again.
        std::fs::write(&data, "a,b\n3,4\n").unwrap();
        let again = cache.file("dataset", &data).unwrap();
        assert_eq!(again.hash, hash_bytes(b"a,b\n3,4\n"));
        assert_eq!(cache.hashed, 1);
        // A damaged cache file is ignored.
        std::fs::write(&cache_file, "not json").unwrap();
        let mut cache = HashCache::at(&cache_file);
        assert_eq!(cache.file("dataset", &data).unwrap().hash, again.hash);
        // A missing file is an error naming it.
        let e = cache
            .file("dataset", &dir.path().join("gone.csv"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gone.csv"), "{e}");
    }

    #[test]
    fn changes_name_the_input_and_how_it_differs() {
        let p = |role: &str, path: &str, hash: &str, bytes, records| InputPrint {
            role: role.into(),
            path: path.into(),
            bytes,
            hash: hash.into(),
            records,
        };
        let old = vec![
            p("dataset", "/d/data.geojson", "aaaa", Some(1000), Some(3000)),
            p("spec", "/d/e.toml", "s1", Some(10), None),
        ];
        let new = vec![
            p("dataset", "/d/data.geojson", "bbbb", Some(2000), Some(5000)),
            p("spec", "/d/e.toml", "s2", Some(11), None),
        ];
        let c = changes(&old, &new);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(
            c[0].starts_with("dataset data.geojson changed: 3,000 → 5,000 objects"),
            "{c:?}"
        );
        assert!(c[0].contains("hash aaaa → bbbb"), "{c:?}");
        // The spec's text and the build do not decide.
        assert_eq!(RunInputs::new(old.clone()).hash, {
            let mut o = old.clone();
            o[1].hash = "other".into();
            RunInputs::new(o).hash
        });
        assert_ne!(RunInputs::new(old.clone()).hash, RunInputs::new(new).hash);
        assert!(changes(&old, &old).is_empty());
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
