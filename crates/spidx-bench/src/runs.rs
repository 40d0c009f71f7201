//! One measured run of one implementation: build the index by inserting the rectangles one
//! by one (or, for the bulk-loading implementations, by one bulk load), then run the window queries `reps` times (intersects, counting results), then
//! once more collecting the ids of every answer (not timed) for the cross-check.
//!
//! Each run is meant to execute in its own process so that its peak RSS is its own.

use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use spidx::cache::{CacheConfig, CacheStats, PageCache};
use spidx::clock::process_cpu_ns;
use spidx::device::{DeviceSpec, DeviceStats};
use spidx::geom::Rect;
use spidx::index::bulk::{BulkMethod, BulkOptions};
use spidx::index::written::{parse_opts, SPEC_NAMING};
use spidx::index::{IndexKind, MbrPredicate, Tree};
use spidx::node::{Capacity, LayoutKind, Occupancy};
use spidx::store::direct::DirectStore;

use crate::sys;

/// Node page size of every spidx variant.
pub const PAGE: usize = 4096;
/// Buffer of the spidx variants on the memory device: large enough to hold every node.
pub const MEMORY_CACHE: &str = "lru:1GB";

/// The spidx tree variants built by one-by-one insertion.
pub const SPIDX_VARIANTS: [&str; 5] = [
    "spidx-linear",
    "spidx-quadratic",
    "spidx-rstar30",
    "spidx-hilbert",
    "spidx-fortree",
];
/// The bulk loads: spidx's STR, Hilbert packing and OMT (into an R*-tree 30 %), Hilbert
/// packing of the Hilbert R-tree (its own key order) and rstar's `RTree::bulk_load` (OMT),
/// compared with each other.
pub const BULK_VARIANTS: [&str; 5] = [
    "spidx-bulk-str",
    "spidx-bulk-hilbert",
    "spidx-bulk-omt",
    "spidx-hilbert-bulk",
    "rstar-bulk",
];
/// Runs on a real file (buffered `file:` device for spidx, an on-disk database for
/// SQLite), in the directory given by [`RunParams::file_dir`].
pub const FILE_VARIANTS: [&str; 2] = ["spidx-rstar30@file", "sqlite-file"];
/// Page buffer of spidx on the `file:` device: SQLite's default page cache (2,000 KiB).
pub const FILE_CACHE: &str = "lru:2000KB";
/// Variants also run on simulated devices.
pub const SIM_VARIANTS: [&str; 2] = ["spidx-linear", "spidx-rstar30"];
/// Simulated devices (presets), run when they exist on this build.
pub const SIM_DEVICES: [&str; 2] = ["hdd-7200", "ssd-v300"];

/// Parameters shared by every run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunParams {
    /// Rectangles inserted.
    pub n: usize,
    /// Query windows.
    pub queries: usize,
    /// Workload seed.
    pub seed: u64,
    /// Repetitions of the query phase.
    pub reps: usize,
    /// Page buffer of spidx on simulated devices.
    pub sim_cache: String,
    /// Node page size of spidx in bytes ([`PAGE`] by default).
    pub page_size: usize,
    /// Neighbours per kNN query (0: no kNN phase).
    #[serde(default)]
    pub k: usize,
    /// kNN query points per repetition.
    #[serde(default)]
    pub knn_queries: usize,
    /// Directory of the files of the file-device runs.
    #[serde(default)]
    pub file_dir: Option<std::path::PathBuf>,
    /// Directory holding the workload files (see [`crate::data::Files`]); `None`:
    /// generated from the seed.
    #[serde(default)]
    pub workload_dir: Option<std::path::PathBuf>,
}

/// Device-side counts of one phase (spidx only).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PhaseIo {
    /// Modelled (simulated devices) or measured device time, ns.
    pub device_ns: u64,
    /// Read requests that reached the device.
    pub reads: u64,
    /// Write requests that reached the device.
    pub writes: u64,
    /// Page-cache hits.
    pub cache_hits: u64,
    /// Page-cache faults.
    pub cache_faults: u64,
}

impl PhaseIo {
    fn between(d0: &DeviceStats, d1: &DeviceStats, c0: &CacheStats, c1: &CacheStats) -> Self {
        let d = d1.since(d0);
        let c = c1.since(c0);
        PhaseIo {
            device_ns: d.device_ns,
            reads: d.host.read_ops,
            writes: d.host.write_ops,
            cache_hits: c.hits,
            cache_faults: c.faults,
        }
    }
}

/// Shape of a spidx tree after the build, from its checker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TreeInfo {
    /// Levels.
    pub height: u32,
    /// Nodes (pages).
    pub nodes: u64,
    /// Mean leaf fill.
    pub leaf_fill: f64,
    /// Whether every invariant held.
    pub check_ok: bool,
    /// FNV-1a hash of the leaf entries (id and box) in the order a full-extent search
    /// visits them: it changes when the tree's structure changes, so two builds with the
    /// same digest almost surely made the same tree (used to check that optimisations of
    /// the library keep its behaviour).
    pub digest: String,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// Implementation name (`spidx-linear`, `rstar`, `spidx-rstar30@hdd-7200`, ...).
    pub name: String,
    /// Readable description.
    pub label: String,
    /// Device (spidx) or `-`.
    pub device: String,
    /// Page buffer (spidx) or `-`.
    pub cache: String,
    /// Rectangles inserted.
    pub n: usize,
    /// Query windows per repetition.
    pub queries: usize,
    /// Wall time of the build, s.
    pub insert_wall_s: f64,
    /// Process CPU time of the build, s.
    pub insert_cpu_s: f64,
    /// Wall time of each query repetition, s.
    pub query_wall_s: Vec<f64>,
    /// CPU time of each query repetition, s.
    pub query_cpu_s: Vec<f64>,
    /// Results over all windows (one repetition).
    pub results: u64,
    /// VmRSS after generating the workload, before building (kB).
    pub rss_base_kb: u64,
    /// VmHWM after the query phase (kB).
    pub peak_rss_kb: u64,
    /// getrusage ru_maxrss after the query phase (kB).
    pub maxrss_kb: u64,
    /// Device counts of the build (spidx).
    pub insert_io: Option<PhaseIo>,
    /// Device counts of the last query repetition (spidx; caches dropped before each).
    pub query_io: Option<PhaseIo>,
    /// Tree shape (spidx).
    pub tree: Option<TreeInfo>,
    /// Build wall time of every run combined into this result (see [`combine`]).
    #[serde(default)]
    pub insert_wall_s_runs: Vec<f64>,
    /// Build CPU time of every run combined into this result.
    #[serde(default)]
    pub insert_cpu_s_runs: Vec<f64>,
    /// kNN query points per repetition (0: no kNN phase).
    #[serde(default)]
    pub knn_queries: usize,
    /// Wall time of each kNN repetition, s.
    #[serde(default)]
    pub knn_wall_s: Vec<f64>,
    /// CPU time of each kNN repetition, s.
    #[serde(default)]
    pub knn_cpu_s: Vec<f64>,
    /// Nodes the tree read in one kNN repetition (spidx; `None` for the peers).
    #[serde(default)]
    pub knn_node_reads: Option<u64>,
}

impl RunResult {
    /// Inserts per second of wall time.
    pub fn insert_rate(&self) -> f64 {
        self.n as f64 / self.insert_wall_s
    }

    /// Median wall time of a query repetition.
    pub fn query_wall_median(&self) -> f64 {
        median(&self.query_wall_s)
    }

    /// Median CPU time of a query repetition.
    pub fn query_cpu_median(&self) -> f64 {
        median(&self.query_cpu_s)
    }

    /// Queries per second of wall time (median repetition).
    pub fn query_rate(&self) -> f64 {
        self.queries as f64 / self.query_wall_median()
    }

    /// Node reads per kNN query (spidx).
    pub fn knn_reads_per_query(&self) -> Option<f64> {
        let r = self.knn_node_reads?;
        (self.knn_queries > 0).then(|| r as f64 / self.knn_queries as f64)
    }

    /// Median kNN CPU time per node read, in nanoseconds (spidx).
    pub fn knn_ns_per_node_read(&self) -> Option<f64> {
        let r = self.knn_node_reads.filter(|&r| r > 0)?;
        Some(self.knn_cpu_median() * 1e9 / r as f64)
    }

    /// Median CPU time of a kNN repetition.
    pub fn knn_cpu_median(&self) -> f64 {
        median(&self.knn_cpu_s)
    }

    /// kNN queries per CPU second (median repetition).
    pub fn knn_rate(&self) -> f64 {
        self.knn_queries as f64 / self.knn_cpu_median()
    }

    /// Queries per CPU second (median repetition).
    pub fn query_cpu_rate(&self) -> f64 {
        self.queries as f64 / self.query_cpu_median()
    }

    /// Inserts per CPU second (median build).
    pub fn insert_cpu_rate(&self) -> f64 {
        self.n as f64 / self.insert_cpu_s
    }

    /// Queries per second of wall time (fastest repetition: the least disturbed by other
    /// processes on a shared machine).
    pub fn query_rate_best(&self) -> f64 {
        let best = self
            .query_wall_s
            .iter()
            .cloned()
            .fold(f64::INFINITY, f64::min);
        self.queries as f64 / best
    }
}

/// Combines several runs of one implementation: the median build time (wall and CPU)
/// over runs, every query repetition of every run, the largest peak RSS; the rest (device
/// counts, tree shape, which are the same in every run) from the first run.
pub fn combine(runs: &[RunResult]) -> RunResult {
    let mut r = runs[0].clone();
    let walls: Vec<f64> = runs.iter().map(|x| x.insert_wall_s).collect();
    r.insert_wall_s = median(&walls);
    r.insert_cpu_s = median(&runs.iter().map(|x| x.insert_cpu_s).collect::<Vec<_>>());
    r.insert_wall_s_runs = walls;
    r.insert_cpu_s_runs = runs.iter().map(|x| x.insert_cpu_s).collect();
    r.knn_wall_s = runs.iter().flat_map(|x| x.knn_wall_s.clone()).collect();
    r.knn_cpu_s = runs.iter().flat_map(|x| x.knn_cpu_s.clone()).collect();
    r.query_wall_s = runs.iter().flat_map(|x| x.query_wall_s.clone()).collect();
    r.query_cpu_s = runs.iter().flat_map(|x| x.query_cpu_s.clone()).collect();
    r.peak_rss_kb = runs.iter().map(|x| x.peak_rss_kb).max().unwrap_or(0);
    r.maxrss_kb = runs.iter().map(|x| x.maxrss_kb).max().unwrap_or(0);
    r
}

/// Median of a non-empty list (mean of the middle two for even lengths).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.is_empty() {
        f64::NAN
    } else if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// An index under test.
trait Subject {
    /// The timed build: every rectangle inserted one by one, then [`Self::finish_build`]
    /// (bulk-loading subjects load them at once instead).
    fn build(&mut self, rects: &[Rect<2>]) -> Result<()> {
        for (i, r) in rects.iter().enumerate() {
            self.insert(r, i as u64)?;
        }
        self.finish_build()
    }
    fn insert(&mut self, r: &Rect<2>, id: u64) -> Result<()>;
    /// Called after the last insert, inside the timed build (commit, flush).
    fn finish_build(&mut self) -> Result<()>;
    /// Called before each query repetition, outside the timing (drop caches).
    fn before_queries(&mut self) -> Result<()> {
        Ok(())
    }
    fn query(&mut self, w: &Rect<2>, visit: impl FnMut(u64)) -> Result<()>;
    /// The `k` entries nearest to `p`, nearest first (`None`: not supported).
    fn knn(&mut self, p: [f64; 2], k: usize, visit: impl FnMut(u64)) -> Result<Option<()>>;
    fn io(&self) -> Option<(DeviceStats, CacheStats)> {
        None
    }
    /// Nodes read so far (spidx trees).
    fn node_reads(&self) -> Option<u64> {
        None
    }
}

struct Spidx {
    tree: Tree<DirectStore, 2>,
    simulated: bool,
    /// Built by this bulk load instead of one-by-one insertion.
    bulk: Option<BulkOptions>,
}

impl Subject for Spidx {
    fn build(&mut self, rects: &[Rect<2>]) -> Result<()> {
        let Some(opts) = self.bulk else {
            for (i, r) in rects.iter().enumerate() {
                self.insert(r, i as u64)?;
            }
            return self.finish_build();
        };
        let objects: Vec<(Rect<2>, u64)> = rects
            .iter()
            .enumerate()
            .map(|(i, r)| (*r, i as u64))
            .collect();
        self.tree.bulk_load(objects, &opts)?;
        self.finish_build()
    }
    fn insert(&mut self, r: &Rect<2>, id: u64) -> Result<()> {
        Ok(self.tree.insert(*r, id)?)
    }
    fn finish_build(&mut self) -> Result<()> {
        Ok(self.tree.flush()?)
    }
    fn before_queries(&mut self) -> Result<()> {
        if self.simulated {
            self.tree.store_mut().cache_mut().drop_caches()?;
        }
        Ok(())
    }
    #[inline]
    fn query(&mut self, w: &Rect<2>, mut visit: impl FnMut(u64)) -> Result<()> {
        Ok(self
            .tree
            .search(MbrPredicate::Intersects, w, |e| visit(e.ptr))?)
    }
    #[inline]
    fn knn(&mut self, p: [f64; 2], k: usize, mut visit: impl FnMut(u64)) -> Result<Option<()>> {
        // The tree's best-first iterator, taken k times (as rstar's iterator below), told
        // that k are taken (as `Tree::nearest` and `SpatialIndex::nearest` do).
        let mut it = self.tree.nearest_iter_first(p, k)?;
        for _ in 0..k {
            match self.tree.nearest_next(&mut it)? {
                Some(n) => visit(n.entry.ptr),
                None => break,
            }
        }
        self.tree.nearest_done(it);
        Ok(Some(()))
    }
    fn io(&self) -> Option<(DeviceStats, CacheStats)> {
        let c = self.tree.store().cache();
        Some((c.device().stats(), c.stats()))
    }
    fn node_reads(&self) -> Option<u64> {
        Some(self.tree.stats().reads_per_level.iter().sum())
    }
}

type RstarItem = rstar::primitives::GeomWithData<rstar::primitives::Rectangle<[f64; 2]>, u64>;

struct Rstar(rstar::RTree<RstarItem>, bool);

impl Subject for Rstar {
    fn build(&mut self, rects: &[Rect<2>]) -> Result<()> {
        let item = |(i, r): (usize, &Rect<2>)| {
            RstarItem::new(
                rstar::primitives::Rectangle::from_corners(r.min, r.max),
                i as u64,
            )
        };
        if self.1 {
            self.0 = rstar::RTree::bulk_load(rects.iter().enumerate().map(item).collect());
        } else {
            for (i, r) in rects.iter().enumerate() {
                self.0.insert(item((i, r)));
            }
        }
        Ok(())
    }
    fn insert(&mut self, r: &Rect<2>, id: u64) -> Result<()> {
        let rect = rstar::primitives::Rectangle::from_corners(r.min, r.max);
        self.0.insert(RstarItem::new(rect, id));
        Ok(())
    }
    fn finish_build(&mut self) -> Result<()> {
        Ok(())
    }
    #[inline]
    fn query(&mut self, w: &Rect<2>, mut visit: impl FnMut(u64)) -> Result<()> {
        let env = rstar::AABB::from_corners(w.min, w.max);
        for item in self.0.locate_in_envelope_intersecting(&env) {
            visit(item.data);
        }
        Ok(())
    }
    #[inline]
    fn knn(&mut self, p: [f64; 2], k: usize, mut visit: impl FnMut(u64)) -> Result<Option<()>> {
        for item in self.0.nearest_neighbor_iter(&p).take(k) {
            visit(item.data);
        }
        Ok(Some(()))
    }
}

struct Sqlite {
    conn: &'static rusqlite::Connection,
    insert: Option<rusqlite::Statement<'static>>,
    select: rusqlite::Statement<'static>,
}

impl Sqlite {
    /// An in-memory database, or one in file `path`.
    fn new(path: Option<&Path>) -> Result<Self> {
        let conn = match path {
            Some(p) => rusqlite::Connection::open(p)?,
            None => rusqlite::Connection::open_in_memory()?,
        };
        // Leaked so that the prepared statements can live beside it; one per process.
        let conn: &'static rusqlite::Connection = Box::leak(Box::new(conn));
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING rtree(id, minx, maxx, miny, maxy); BEGIN;",
        )?;
        let insert =
            conn.prepare("INSERT INTO t (id, minx, maxx, miny, maxy) VALUES (?, ?, ?, ?, ?)")?;
        let select = conn.prepare(
            "SELECT id FROM t WHERE maxx >= ? AND minx <= ? AND maxy >= ? AND miny <= ?",
        )?;
        Ok(Sqlite {
            conn,
            insert: Some(insert),
            select,
        })
    }
}

impl Subject for Sqlite {
    fn insert(&mut self, r: &Rect<2>, id: u64) -> Result<()> {
        let st = self.insert.as_mut().expect("insert statement");
        st.execute(rusqlite::params![
            id as i64, r.min[0], r.max[0], r.min[1], r.max[1]
        ])?;
        Ok(())
    }
    fn finish_build(&mut self) -> Result<()> {
        self.insert = None;
        self.conn.execute_batch("COMMIT;")?;
        Ok(())
    }
    #[inline]
    fn query(&mut self, w: &Rect<2>, mut visit: impl FnMut(u64)) -> Result<()> {
        let mut rows = self
            .select
            .query(rusqlite::params![w.min[0], w.max[0], w.min[1], w.max[1]])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            visit(id as u64);
        }
        Ok(())
    }
    fn knn(&mut self, _p: [f64; 2], _k: usize, _visit: impl FnMut(u64)) -> Result<Option<()>> {
        // SQLite's R*Tree module has no nearest-neighbour query.
        Ok(None)
    }
}

/// The spidx index kind of a variant name, written as `spidx build --index KIND
/// --index-opt KEY=VALUE` writes it (the library's defaults for the rest).
pub fn spidx_kind(variant: &str) -> Option<IndexKind> {
    let (kind, opts): (&str, &[&str]) = match variant {
        "spidx-linear" => ("rtree", &["split=linear"]),
        "spidx-quadratic" => ("rtree", &["split=quadratic"]),
        "spidx-rstar30" => ("rstar", &["reinsert=30%"]),
        "spidx-hilbert" => ("hilbert", &[]),
        "spidx-fortree" => ("fortree", &[]),
        _ => return None,
    };
    Some(written_kind(kind, opts))
}

/// The index `kind` with `opts` (`KEY=VALUE`), parsed as `spidx build --index-opt` is.
pub fn written_kind(kind: &str, opts: &[&str]) -> IndexKind {
    parse_opts(kind, opts.iter().copied(), &SPEC_NAMING)
        .unwrap_or_else(|e| panic!("the bench's index {kind} {opts:?}: {e}"))
}

/// The spidx tree variant and bulk load of a bulk-loading implementation's name.
pub fn spidx_bulk(variant: &str) -> Option<(IndexKind, BulkOptions)> {
    let (kind, method) = match variant {
        "spidx-bulk-str" => ("spidx-rstar30", BulkMethod::Str),
        "spidx-bulk-hilbert" => ("spidx-rstar30", BulkMethod::Hilbert),
        "spidx-bulk-omt" => ("spidx-rstar30", BulkMethod::Omt),
        "spidx-hilbert-bulk" => ("spidx-hilbert", BulkMethod::Hilbert),
        _ => return None,
    };
    let opts = BulkOptions {
        method,
        fill: BulkOptions::DEFAULT_FILL,
    };
    Some((spidx_kind(kind)?, opts))
}

/// Whether a simulated device preset exists in this build (`Err` explains why not).
pub fn device_available(device: &str) -> std::result::Result<(), String> {
    DeviceSpec::new(device)
        .resolve()
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A page size as the labels print it (`4KB`, or bytes when not whole kilobytes).
pub fn page_label(bytes: usize) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{}KB", bytes / 1024)
    } else {
        format!("{bytes}B")
    }
}

fn open_spidx(
    kind: IndexKind,
    bulk: Option<BulkOptions>,
    device: &str,
    cache: &str,
    page: usize,
) -> Result<Spidx> {
    let layout = kind.layout(LayoutKind::Checked, page, 2)?;
    let cap = Capacity::new(&layout, &Occupancy::default())?;
    let mut spec = DeviceSpec::new(device);
    if device.starts_with("file:") {
        // Buffered: the OS page cache holds the file as it would a database's.
        spec = spec.with_params(&["direct=false"])?;
    }
    let resolved = spec.resolve()?;
    let simulated = !(device == "memory" || device.starts_with("file:"));
    let dev = resolved.config.open(page, None)?;
    let cache = PageCache::new(dev, &cache.parse::<CacheConfig>()?)?;
    let store = DirectStore::create(cache, layout, None)?;
    Ok(Spidx {
        tree: Tree::create(store, cap, kind)?,
        simulated,
        bulk,
    })
}

/// A fresh file `name` for a file-device run, in [`RunParams::file_dir`] (or the temporary
/// directory), named after this process.
fn run_file(p: &RunParams, name: &str) -> Result<std::path::PathBuf> {
    let dir = p.file_dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let f = dir.join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&f);
    Ok(f)
}

/// Runs implementation `name` and writes the sorted ids of every window's answer to
/// `ids_out` (per window: a little-endian u64 count, then the ids).
pub fn run(name: &str, p: &RunParams, ids_out: &Path) -> Result<RunResult> {
    let (variant, device) = match name.split_once('@') {
        Some((v, d)) => (v, d),
        None => (name, "memory"),
    };
    let (rects, windows, points) = match &p.workload_dir {
        Some(dir) => {
            let f = crate::data::Files::read(dir)?;
            (f.rects, f.windows, f.points)
        }
        None => (
            crate::data::rects(p.n, p.seed),
            crate::data::windows(p.queries, p.seed),
            crate::data::points(p.knn_queries, p.seed),
        ),
    };
    let w = Workload {
        rects: &rects,
        windows: &windows,
        points: &points,
        k: p.k,
        reps: p.reps,
    };
    let rss_base_kb = sys::proc_status_kb("VmRSS").unwrap_or(0);
    let mut result = RunResult {
        name: name.to_string(),
        label: String::new(),
        device: "-".into(),
        cache: "-".into(),
        n: p.n,
        queries: p.queries,
        insert_wall_s: 0.0,
        insert_cpu_s: 0.0,
        query_wall_s: vec![],
        query_cpu_s: vec![],
        results: 0,
        rss_base_kb,
        peak_rss_kb: 0,
        maxrss_kb: 0,
        insert_io: None,
        query_io: None,
        tree: None,
        insert_wall_s_runs: vec![],
        insert_cpu_s_runs: vec![],
        knn_queries: 0,
        knn_wall_s: vec![],
        knn_cpu_s: vec![],
        knn_node_reads: None,
    };
    match variant {
        "rstar" => {
            result.label = "rstar 0.12 RTree (R*-tree, in memory)".into();
            let mut s = Rstar(rstar::RTree::new(), false);
            measure(&mut s, &w, &mut result, ids_out)?;
        }
        "rstar-bulk" => {
            result.label = "rstar 0.12 RTree::bulk_load (OMT, in memory)".into();
            let mut s = Rstar(rstar::RTree::new(), true);
            measure(&mut s, &w, &mut result, ids_out)?;
        }
        "sqlite" => {
            result.label = format!(
                "SQLite {} R*Tree module (in-memory database)",
                rusqlite::version()
            );
            let mut s = Sqlite::new(None)?;
            measure(&mut s, &w, &mut result, ids_out)?;
        }
        "sqlite-file" => {
            result.label = format!(
                "SQLite {} R*Tree module (database file, default page cache)",
                rusqlite::version()
            );
            let file = run_file(p, "sqlite.db")?;
            result.device = file.display().to_string();
            let mut s = Sqlite::new(Some(file.as_path()))?;
            measure(&mut s, &w, &mut result, ids_out)?;
            drop(s);
            let _ = std::fs::remove_file(&file);
        }
        v => {
            let (kind, bulk) = match (spidx_kind(v), spidx_bulk(v)) {
                (Some(k), _) => (k, None),
                (None, Some((k, b))) => (k, Some(b)),
                (None, None) => bail!("unknown implementation '{name}'"),
            };
            let cache = match device {
                "memory" => MEMORY_CACHE.to_string(),
                "file" => FILE_CACHE.to_string(),
                _ => p.sim_cache.clone(),
            };
            // The file device: a buffered file in the run's directory.
            let file = if device == "file" {
                Some(run_file(p, "spidx.dev")?)
            } else {
                None
            };
            let device = match &file {
                Some(f) => format!("file:{}", f.display()),
                None => device.to_string(),
            };
            let device = device.as_str();
            result.label = match &bulk {
                Some(b) => format!(
                    "spidx {} bulk loaded by {} (fill {}%), {} checked pages",
                    kind.label(),
                    b.method.name(),
                    b.fill * 100.0,
                    page_label(p.page_size)
                ),
                None => format!(
                    "spidx {}, {} checked pages",
                    kind.label(),
                    page_label(p.page_size)
                ),
            };
            result.device = device.to_string();
            result.cache = cache.clone();
            let mut s = open_spidx(kind, bulk, device, &cache, p.page_size)
                .with_context(|| format!("opening {name} on {device}"))?;
            measure(&mut s, &w, &mut result, ids_out)?;
            let rep = s.tree.check()?;
            if let Some(f) = &file {
                let _ = std::fs::remove_file(f);
            }
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            let mut eat = |v: u64| {
                for b in v.to_le_bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
                }
            };
            let all = Rect {
                min: [f64::MIN; 2],
                max: [f64::MAX; 2],
            };
            s.tree.search(MbrPredicate::All, &all, |e| {
                eat(e.ptr);
                for v in e.mbr.min.iter().chain(e.mbr.max.iter()) {
                    eat(v.to_bits());
                }
            })?;
            result.tree = Some(TreeInfo {
                digest: format!("{h:016x}"),
                height: rep.height,
                nodes: rep.nodes,
                leaf_fill: rep.levels.first().map(|l| l.fill).unwrap_or(0.0),
                check_ok: rep.ok(),
            });
            if !rep.ok() {
                bail!("{name}: the tree checker failed: {:?}", rep.violations);
            }
        }
    }
    Ok(result)
}

/// What a run does: build over `rects`, `reps` repetitions of the window queries and of
/// the kNN queries (`k` nearest of each point; none when `k` is 0).
struct Workload<'a> {
    rects: &'a [Rect<2>],
    windows: &'a [Rect<2>],
    points: &'a [[f64; 2]],
    k: usize,
    reps: usize,
}

/// Writes one id list per query: a little-endian u64 count, then the ids.
fn write_lists(path: &Path, lists: impl Iterator<Item = Result<Vec<u64>>>) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::new(file);
    for ids in lists {
        let ids = ids?;
        w.write_all(&(ids.len() as u64).to_le_bytes())?;
        for id in &ids {
            w.write_all(&id.to_le_bytes())?;
        }
    }
    w.flush()?;
    Ok(())
}

/// The kNN answers' file beside the window answers' `ids_out`.
pub fn knn_ids_path(ids_out: &Path) -> std::path::PathBuf {
    ids_out.with_extension("knn")
}

fn measure<S: Subject>(
    s: &mut S,
    w: &Workload<'_>,
    out: &mut RunResult,
    ids_out: &Path,
) -> Result<()> {
    let io0 = s.io();
    let (t0, c0) = (Instant::now(), process_cpu_ns());
    build_phase(s, w.rects)?;
    out.insert_wall_s = t0.elapsed().as_secs_f64();
    out.insert_cpu_s = (process_cpu_ns() - c0) as f64 * 1e-9;
    if let (Some((d0, k0)), Some((d1, k1))) = (&io0, s.io()) {
        out.insert_io = Some(PhaseIo::between(d0, &d1, k0, &k1));
    }

    for _ in 0..w.reps.max(1) {
        s.before_queries()?;
        let io0 = s.io();
        let (t0, c0) = (Instant::now(), process_cpu_ns());
        let count = query_phase(s, w.windows)?;
        out.query_wall_s.push(t0.elapsed().as_secs_f64());
        out.query_cpu_s.push((process_cpu_ns() - c0) as f64 * 1e-9);
        out.results = count;
        if let (Some((d0, k0)), Some((d1, k1))) = (&io0, s.io()) {
            out.query_io = Some(PhaseIo::between(d0, &d1, k0, &k1));
        }
    }
    let knn = w.k > 0 && !w.points.is_empty() && s.knn(w.points[0], w.k, |_| {})?.is_some();
    if knn {
        out.knn_queries = w.points.len();
        for _ in 0..w.reps.max(1) {
            s.before_queries()?;
            let reads0 = s.node_reads();
            let (t0, c0) = (Instant::now(), process_cpu_ns());
            knn_phase(s, w.points, w.k)?;
            out.knn_wall_s.push(t0.elapsed().as_secs_f64());
            out.knn_cpu_s.push((process_cpu_ns() - c0) as f64 * 1e-9);
            if let (Some(a), Some(b)) = (reads0, s.node_reads()) {
                out.knn_node_reads = Some(b - a);
            }
        }
    }
    out.peak_rss_kb = sys::proc_status_kb("VmHWM").unwrap_or(0);
    out.maxrss_kb = sys::maxrss_kb();

    // Not timed: every answer's ids (windows: sorted; kNN: nearest first) for the
    // cross-check.
    write_lists(
        ids_out,
        w.windows.iter().map(|q| {
            let mut ids = Vec::new();
            s.query(q, |id| ids.push(id))?;
            ids.sort_unstable();
            Ok(ids)
        }),
    )?;
    if knn {
        write_lists(
            &knn_ids_path(ids_out),
            w.points.iter().map(|p| {
                let mut ids = Vec::new();
                s.knn(*p, w.k, |id| ids.push(id))?;
                Ok(ids)
            }),
        )?;
    }
    Ok(())
}

/// One timed repetition of the kNN queries. Not inlined (see [`build_phase`]).
#[inline(never)]
fn knn_phase<S: Subject>(s: &mut S, points: &[[f64; 2]], k: usize) -> Result<()> {
    let mut mix = 0u64;
    for p in points {
        s.knn(*p, k, |id| mix = mix.wrapping_add(id))?;
    }
    black_box(mix);
    Ok(())
}

/// The timed build (see [`Subject::build`]). Not inlined, so that profilers (e.g.
/// `valgrind --tool=callgrind`) can attribute the phase's cost to it.
#[inline(never)]
fn build_phase<S: Subject>(s: &mut S, rects: &[Rect<2>]) -> Result<()> {
    s.build(rects)
}

/// One timed repetition of the queries; returns the number of results. Not inlined (see
/// [`build_phase`]).
#[inline(never)]
fn query_phase<S: Subject>(s: &mut S, windows: &[Rect<2>]) -> Result<u64> {
    let mut count = 0u64;
    let mut mix = 0u64;
    for w in windows {
        s.query(w, |id| {
            count += 1;
            mix = mix.wrapping_add(id);
        })?;
    }
    black_box(mix);
    Ok(count)
}

/// Reads an ids file written by [`run`]: one sorted id list per window.
pub fn read_ids(path: &Path) -> Result<Vec<Vec<u64>>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut words = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()));
    let mut out = Vec::new();
    while let Some(n) = words.next() {
        let list: Vec<u64> = words.by_ref().take(n as usize).collect();
        if list.len() != n as usize {
            bail!("{}: truncated", path.display());
        }
        out.push(list);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spidx::index::SplitAlgorithm;

    #[test]
    fn the_spidx_variants_are_written_indexes_with_the_library_defaults() {
        for v in SPIDX_VARIANTS {
            assert!(spidx_kind(v).is_some(), "{v}");
        }
        for v in BULK_VARIANTS.iter().filter(|v| v.starts_with("spidx")) {
            assert!(spidx_bulk(v).is_some(), "{v}");
        }
        assert_eq!(
            spidx_kind("spidx-linear"),
            Some(IndexKind::RTree {
                split: SplitAlgorithm::Linear
            })
        );
        let [_, rstar, hilbert, fortree] = IndexKind::registered();
        assert_eq!(spidx_kind("spidx-rstar30"), Some(rstar));
        assert_eq!(spidx_kind("spidx-hilbert"), Some(hilbert));
        assert_eq!(spidx_kind("spidx-fortree"), Some(fortree));
        assert_eq!(spidx_kind("rstar"), None);
    }
}
