//! Synthetic datasets, deterministic for a seed (ChaCha8 from `rand_chacha`).
//!
//! 2-D data live in the square [`extent()`] = [0, 1 000 000]² (think metres: a 1000 km ×
//! 1000 km region, so the seeds' query windows of 0.001 %–1 % of the extent's area are
//! 3.2–100 km squares). D-dimensional vectors live in the unit cube [0, 1]^D, as in the kNN
//! experiments of Emrich et al. (uniform 10-d vectors).
//!
//! | distribution | 2-D geometries | vectors |
//! |---|---|---|
//! | `uniform` | rectangle centres uniform in the extent | uniform in [0,1]^D |
//! | `gaussian` | centres ~ N(centre, (side/8)²) per axis, redrawn until inside | N(0.5, 0.125²) per axis, redrawn until in [0,1] |
//! | `clustered` | K gaussian clusters (centres uniform in the middle 90 %, σ = 0.5–3 % of the side, Zipf-like sizes) | same in [0,1]^D with σ = 2–8 % |
//! | `buildings` | city-like building footprints, see [`buildings`] | — |
//!
//! Rectangles have sides drawn uniformly in (0, `max_side` × side] (default `max_side`
//! = 0.0001, i.e. up to 100 units) and are shifted, not clipped, to lie inside the extent.
//! They are written as closed counter-clockwise polygons. Ids are 0..N in generation order.

pub(crate) mod buildings;

use super::{Dataset, GeoRecord, Vectors};
use crate::{Error, Result};
use geo_types::{coord, Coord, Geometry, LineString, Polygon, Rect};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::str::FromStr;

/// Side length of the square 2-D extent.
pub const SIDE: f64 = 1_000_000.0;

/// The 2-D extent every generated geometry lies in: [0, [`SIDE`]]².
pub fn extent() -> Rect<f64> {
    Rect::new(Coord { x: 0.0, y: 0.0 }, Coord { x: SIDE, y: SIDE })
}

/// Default `--max-side`: the largest rectangle side as a fraction of the extent's side.
pub const DEFAULT_MAX_SIDE: f64 = 0.0001;

/// Default seed.
pub const DEFAULT_SEED: u64 = 42;

/// Largest number of dimensions accepted.
pub const MAX_DIMS: usize = 1024;

/// Largest number of values (objects × dimensions) generated in one go.
pub const MAX_VALUES: u64 = 2_000_000_000;

/// How objects are spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Uniformly over the extent.
    Uniform,
    /// One gaussian blob around the centre.
    Gaussian,
    /// Several gaussian clusters of different sizes.
    Clustered,
    /// City-like building footprints (2-D only).
    Buildings,
}

impl Distribution {
    /// Every distribution.
    pub const ALL: [Distribution; 4] = [
        Distribution::Uniform,
        Distribution::Gaussian,
        Distribution::Clustered,
        Distribution::Buildings,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Gaussian => "gaussian",
            Distribution::Clustered => "clustered",
            Distribution::Buildings => "buildings",
        }
    }
}

impl FromStr for Distribution {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        Distribution::ALL
            .into_iter()
            .find(|d| d.name() == t)
            .ok_or_else(|| {
                Error::invalid(
                    "distribution",
                    format!(
                        "unknown distribution '{s}'; use uniform, gaussian, clustered or buildings"
                    ),
                )
            })
    }
}

impl std::fmt::Display for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// How objects are spread.
    pub distribution: Distribution,
    /// Number of objects (at least 1).
    pub count: u64,
    /// Dimensions: 2 gives geometries (unless `vectors`), anything else point vectors.
    pub dims: usize,
    /// Seed of the random generator: the same options give the same data.
    pub seed: u64,
    /// Largest rectangle side as a fraction of the extent's side, in (0, 1].
    pub max_side: f64,
    /// Number of clusters for `clustered`; `None` picks N / 10 000 clamped to 10..=1000.
    pub clusters: Option<usize>,
    /// Produce point vectors even when `dims` is 2.
    pub vectors: bool,
}

impl GenerateOptions {
    /// Options with the defaults: 2-D geometries, seed [`DEFAULT_SEED`], [`DEFAULT_MAX_SIDE`].
    pub fn new(distribution: Distribution, count: u64) -> Self {
        GenerateOptions {
            distribution,
            count,
            dims: 2,
            seed: DEFAULT_SEED,
            max_side: DEFAULT_MAX_SIDE,
            clusters: None,
            vectors: false,
        }
    }

    /// Whether these options produce vectors (rather than geometries).
    pub fn produces_vectors(&self) -> bool {
        self.vectors || self.dims != 2
    }

    fn validate(&self) -> Result<()> {
        if self.count == 0 {
            return Err(Error::invalid("count", "must be at least 1"));
        }
        if self.dims == 0 || self.dims > MAX_DIMS {
            return Err(Error::invalid(
                "dims",
                format!("{} is outside 1..={MAX_DIMS}", self.dims),
            ));
        }
        let values = self.count.saturating_mul(self.dims as u64);
        if values > MAX_VALUES {
            return Err(Error::invalid(
                "count",
                format!(
                    "{} objects × {} dimensions exceed the limit of {MAX_VALUES} values",
                    self.count, self.dims
                ),
            ));
        }
        if !(self.max_side > 0.0 && self.max_side <= 1.0) {
            return Err(Error::invalid(
                "max-side",
                format!(
                    "{} is not in (0, 1] (a fraction of the extent's side)",
                    self.max_side
                ),
            ));
        }
        if self.clusters == Some(0) {
            return Err(Error::invalid("clusters", "must be at least 1"));
        }
        if self.distribution == Distribution::Buildings && self.produces_vectors() {
            return Err(Error::invalid(
                "distribution",
                "buildings are 2-D polygons; they cannot be generated as vectors (use --dims 2 and a geometry format)",
            ));
        }
        Ok(())
    }
}

/// Generates a dataset. Same options, same data.
pub fn generate(opts: &GenerateOptions) -> Result<Dataset> {
    opts.validate()?;
    check_memory(opts, available_memory())?;
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    if opts.produces_vectors() {
        return Ok(Dataset::Vectors(vectors(opts, &mut rng)?));
    }
    let n = opts.count as usize;
    if opts.distribution == Distribution::Buildings {
        return Ok(Dataset::Geo(buildings::generate(n, &mut rng)));
    }
    let mut centres = Sampler::new(opts, 2, &mut rng);
    let max = opts.max_side * SIDE;
    let mut recs = Vec::new();
    recs.try_reserve_exact(n)
        .map_err(|_| too_large(opts, None))?;
    let mut p = [0.0; 2];
    for id in 0..n as u64 {
        centres.sample(&mut rng, &mut p);
        let w = max * (1.0 - rng.gen::<f64>());
        let h = max * (1.0 - rng.gen::<f64>());
        let x0 = (p[0] * SIDE - w / 2.0).clamp(0.0, SIDE - w);
        let y0 = (p[1] * SIDE - h / 2.0).clamp(0.0, SIDE - h);
        let rect = Rect::new(coord! { x: x0, y: y0 }, coord! { x: x0 + w, y: y0 + h });
        let ring = vec![
            coord! { x: x0, y: y0 },
            coord! { x: x0 + w, y: y0 },
            coord! { x: x0 + w, y: y0 + h },
            coord! { x: x0, y: y0 + h },
            coord! { x: x0, y: y0 },
        ];
        recs.push(GeoRecord {
            id,
            geometry: Geometry::Polygon(Polygon::new(LineString(ring), Vec::new())),
            bbox: rect,
            source: None,
        });
    }
    Ok(Dataset::Geo(recs))
}

fn vectors(opts: &GenerateOptions, rng: &mut ChaCha8Rng) -> Result<Vectors> {
    let d = opts.dims;
    let n = opts.count as usize;
    let mut sampler = Sampler::new(opts, d, rng);
    let mut data = Vec::new();
    data.try_reserve_exact(n * d)
        .map_err(|_| too_large(opts, None))?;
    data.resize(n * d, 0.0);
    for row in data.chunks_exact_mut(d) {
        sampler.sample(rng, row);
    }
    Vectors::new(d, data)
}

/// A standard normal variate (Box–Muller).
/// Bytes of memory a generated dataset takes, estimated from the size of its records: a
/// rectangle is a [`GeoRecord`] plus its 5-vertex ring (and the allocator's overhead); a
/// building averages under 12 vertices (see [`buildings`]), counted as 24; a vector is
/// its `dims` values.
pub(crate) fn memory_needed(opts: &GenerateOptions) -> u64 {
    let vertex = std::mem::size_of::<Coord<f64>>() as u64;
    let per_object = if opts.produces_vectors() {
        opts.dims as u64 * std::mem::size_of::<f64>() as u64
    } else {
        let record = std::mem::size_of::<GeoRecord>() as u64 + 32;
        match opts.distribution {
            Distribution::Buildings => record + 24 * vertex + 64,
            _ => record + 5 * vertex,
        }
    };
    opts.count.saturating_mul(per_object)
}

/// Memory this process can still get: the least of the machine's `MemAvailable` (plus
/// free swap), what the process's address-space limit (`ulimit -v`) leaves beside its
/// current size, and what its cgroup's `memory.max` leaves (a container's limit); `None`
/// where none of them is told.
pub fn available_memory() -> Option<u64> {
    let kb = |text: &str, key: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|k| k * 1024)
    };
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            Some(kb(&info, "MemAvailable:")?.saturating_add(kb(&info, "SwapFree:").unwrap_or(0)))
        });
    let address_space = address_space_limit().map(|limit| {
        let used = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| kb(&s, "VmSize:"))
            .unwrap_or(0);
        limit.saturating_sub(used)
    });
    let cgroup = cgroup_memory_left();
    [machine, address_space, cgroup].into_iter().flatten().min()
}

/// The soft `RLIMIT_AS` of this process, if one is set.
fn address_space_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct passed.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// What the cgroup (v2) of this process may still allocate: `memory.max` minus
/// `memory.current`, if a limit is set.
fn cgroup_memory_left() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = cg.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let dir = std::path::Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?;
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// Refuses, with a clear error, a dataset that cannot fit in `available` bytes of memory
/// (instead of letting the allocation abort the process).
pub(crate) fn check_memory(opts: &GenerateOptions, available: Option<u64>) -> Result<()> {
    match available {
        Some(avail) if memory_needed(opts) > avail => Err(too_large(opts, Some(avail))),
        _ => Ok(()),
    }
}

fn too_large(opts: &GenerateOptions, available: Option<u64>) -> Error {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let needed = memory_needed(opts);
    let what = if opts.produces_vectors() {
        format!("{}-d vectors", opts.dims)
    } else {
        format!("{} objects", opts.distribution)
    };
    let room = match available {
        Some(a) => format!(
            "only {:.1} GiB are available, enough for about {} of them",
            gib(a),
            (a as f64 / needed.max(1) as f64 * opts.count as f64) as u64
        ),
        None => "the allocation failed".to_string(),
    };
    Error::invalid(
        "count",
        format!(
            "{} {what} need about {:.1} GiB of memory, but {room}; lower the count",
            opts.count,
            gib(needed)
        ),
    )
}

pub(crate) fn normal(rng: &mut impl Rng) -> f64 {
    let u1 = 1.0 - rng.gen::<f64>(); // (0, 1]
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A normal variate with `mean` and `sd`, redrawn until it falls in [0, 1].
fn truncated_normal(rng: &mut impl Rng, mean: f64, sd: f64) -> f64 {
    for _ in 0..64 {
        let v = mean + sd * normal(rng);
        if (0.0..=1.0).contains(&v) {
            return v;
        }
    }
    mean.clamp(0.0, 1.0)
}

/// Draws positions in the unit cube [0,1]^d for the point distributions.
struct Sampler {
    kind: Distribution,
    centres: Vec<f64>,
    sds: Vec<f64>,
    cumulative: Vec<f64>,
}

impl Sampler {
    fn new(opts: &GenerateOptions, d: usize, rng: &mut ChaCha8Rng) -> Self {
        let mut s = Sampler {
            kind: opts.distribution,
            centres: Vec::new(),
            sds: Vec::new(),
            cumulative: Vec::new(),
        };
        if s.kind == Distribution::Clustered {
            let auto = (opts.count / 10_000).clamp(10, 1000) as usize;
            let k = opts.clusters.unwrap_or(auto);
            let (lo, hi) = if d == 2 && !opts.vectors {
                (0.005, 0.03)
            } else {
                (0.02, 0.08)
            };
            let mut total = 0.0;
            for i in 0..k {
                for _ in 0..d {
                    s.centres.push(0.05 + 0.9 * rng.gen::<f64>());
                }
                s.sds.push(rng.gen_range(lo..hi));
                total += 1.0 / ((i + 1) as f64).powf(0.8);
                s.cumulative.push(total);
            }
            for c in &mut s.cumulative {
                *c /= total;
            }
        }
        s
    }

    fn sample(&mut self, rng: &mut ChaCha8Rng, out: &mut [f64]) {
        match self.kind {
            Distribution::Uniform | Distribution::Buildings => {
                out.iter_mut().for_each(|v| *v = rng.gen());
            }
            Distribution::Gaussian => {
                out.iter_mut()
                    .for_each(|v| *v = truncated_normal(rng, 0.5, 0.125));
            }
            Distribution::Clustered => {
                let u: f64 = rng.gen();
                let k = self
                    .cumulative
                    .partition_point(|c| *c < u)
                    .min(self.sds.len() - 1);
                let d = out.len();
                let sd = self.sds[k];
                for (i, v) in out.iter_mut().enumerate() {
                    *v = truncated_normal(rng, self.centres[k * d + i], sd);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
