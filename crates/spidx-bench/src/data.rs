//! The workload: `n` small rectangles placed uniformly in a square extent, and square query
//! windows of 0.01 % of the extent's area placed uniformly inside it. Both are generated
//! deterministically from a seed with ChaCha8 (data on stream 0, windows on stream 1), so
//! every child process of the benchmark rebuilds exactly the same workload.
//!
//! Every coordinate is an integer below 2^24, exactly representable in `f32`: SQLite's
//! R*Tree module stores 32-bit floats, and with such coordinates its answers can match the
//! other implementations' exactly.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use spidx::geom::Rect;

/// Side of the square extent `[0, EXTENT] x [0, EXTENT]`.
pub const EXTENT: u32 = 1_000_000;
/// Rectangle sides are integers drawn uniformly from `MIN_SIDE..=MAX_SIDE`.
pub const MIN_SIDE: u32 = 1;
/// See [`MIN_SIDE`].
pub const MAX_SIDE: u32 = 100;
/// Side of a query window: 1 % of the extent's side, so 0.01 % of its area.
pub const WINDOW_SIDE: u32 = EXTENT / 100;

/// A readable description of the workload, for reports.
pub fn describe() -> String {
    format!(
        "extent [0, {EXTENT}]^2; rectangles with integer sides uniform in {MIN_SIDE}..={MAX_SIDE} \
         and integer lower corners uniform so that they lie inside the extent; query windows \
         {WINDOW_SIDE} x {WINDOW_SIDE} (0.01 % of the extent's area), lower corners uniform \
         integers inside the extent"
    )
}

/// `n` rectangles; rectangle `i` has id `i`.
pub fn rects(n: usize, seed: u64) -> Vec<Rect<2>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(0);
    (0..n)
        .map(|_| {
            let w = rng.gen_range(MIN_SIDE..=MAX_SIDE);
            let h = rng.gen_range(MIN_SIDE..=MAX_SIDE);
            let x = rng.gen_range(0..=EXTENT - w);
            let y = rng.gen_range(0..=EXTENT - h);
            Rect {
                min: [f64::from(x), f64::from(y)],
                max: [f64::from(x + w), f64::from(y + h)],
            }
        })
        .collect()
}

/// `q` query windows.
pub fn windows(q: usize, seed: u64) -> Vec<Rect<2>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1);
    (0..q)
        .map(|_| {
            let x = rng.gen_range(0..=EXTENT - WINDOW_SIDE);
            let y = rng.gen_range(0..=EXTENT - WINDOW_SIDE);
            Rect {
                min: [f64::from(x), f64::from(y)],
                max: [f64::from(x + WINDOW_SIDE), f64::from(y + WINDOW_SIDE)],
            }
        })
        .collect()
}

/// `q` kNN query points, integers uniform in the extent (stream 2).
pub fn points(q: usize, seed: u64) -> Vec<[f64; 2]> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(2);
    (0..q)
        .map(|_| {
            [
                f64::from(rng.gen_range(0..=EXTENT)),
                f64::from(rng.gen_range(0..=EXTENT)),
            ]
        })
        .collect()
}

/// The workload as files, so that any implementation (another library, another language)
/// can run it and have its answers checked: in one directory,
///
/// * `workload.json`: what the files hold ([`Manifest`]);
/// * `rects.f64`: the rectangles, rectangle `i` (its id) as four little-endian `f64`
///   `min_x, min_y, max_x, max_y`;
/// * `windows.f64`: the query windows, in the same layout;
/// * `points.f64`: the kNN query points, two little-endian `f64` `x, y` each;
/// * `rects.wkt`: the rectangles again as WKT polygons, one per line (line `i` is id `i`),
///   for `spidx build --data` (the same data through the command line);
/// * `answers.windows`: per window, the ids of the rectangles it intersects (closed boxes),
///   sorted: a little-endian `u64` count, then the ids as `u64`;
/// * `answers.knn`: per point, the squared distances of its `k` nearest rectangles,
///   nearest first: a `u64` count, then the distances as `f64` (ties make the ids
///   ambiguous, the distances are not). An answer file of ids (nearest first, the format of
///   `answers.windows`) is checked against them by `index_vs_libs --check-knn`.
pub struct Files {
    /// What the files hold.
    pub manifest: Manifest,
    /// The rectangles (id = position).
    pub rects: Vec<Rect<2>>,
    /// The query windows.
    pub windows: Vec<Rect<2>>,
    /// The kNN query points.
    pub points: Vec<[f64; 2]>,
}

/// `workload.json` of a workload directory (see [`Files`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// `spidx-bench-workload/1`.
    pub format: String,
    /// How the data were made.
    pub description: String,
    /// Rectangles.
    pub n: usize,
    /// Windows.
    pub queries: usize,
    /// kNN points.
    pub knn_queries: usize,
    /// Neighbours per kNN point in `answers.knn`.
    pub k: usize,
    /// The seed they were generated from.
    pub seed: u64,
}

/// The format tag of [`Manifest`].
pub const FORMAT: &str = "spidx-bench-workload/1";

fn write_f64s(path: &Path, values: impl Iterator<Item = f64>) -> Result<()> {
    let bytes: Vec<u8> = values.flat_map(f64::to_le_bytes).collect();
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn read_f64s(path: &Path, per: usize, count: usize) -> Result<Vec<f64>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() != count * per * 8 {
        bail!(
            "{}: {} bytes, expected {count} records of {per} f64 ({} bytes)",
            path.display(),
            bytes.len(),
            count * per * 8
        );
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

fn boxes(values: &[f64], path: &Path) -> Result<Vec<Rect<2>>> {
    values
        .chunks_exact(4)
        .enumerate()
        .map(|(i, c)| {
            Rect::new([c[0], c[1]], [c[2], c[3]])
                .with_context(|| format!("{}: record {i}", path.display()))
        })
        .collect()
}

/// Writes lists (a `u64` count, then the values' 8-byte little-endian images) to `path`.
pub fn write_lists(path: &Path, lists: &[Vec<u64>]) -> Result<()> {
    let mut bytes = Vec::new();
    for l in lists {
        bytes.extend_from_slice(&(l.len() as u64).to_le_bytes());
        for v in l {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

impl Files {
    /// The workload generated from `seed` (see [`rects`], [`windows`], [`points`]).
    pub fn generate(n: usize, queries: usize, knn_queries: usize, k: usize, seed: u64) -> Self {
        Files {
            manifest: Manifest {
                format: FORMAT.into(),
                description: describe(),
                n,
                queries,
                knn_queries,
                k,
                seed,
            },
            rects: rects(n, seed),
            windows: windows(queries, seed),
            points: points(knn_queries, seed),
        }
    }

    /// Writes the manifest and the input files into `dir` (created if needed).
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let corners = |r: &Rect<2>| [r.min[0], r.min[1], r.max[0], r.max[1]];
        write_f64s(&dir.join("rects.f64"), self.rects.iter().flat_map(corners))?;
        write_f64s(
            &dir.join("windows.f64"),
            self.windows.iter().flat_map(corners),
        )?;
        write_f64s(
            &dir.join("points.f64"),
            self.points.iter().flatten().copied(),
        )?;
        let mut wkt = String::with_capacity(self.rects.len() * 80);
        for r in &self.rects {
            let (a, b, c, d) = (r.min[0], r.min[1], r.max[0], r.max[1]);
            wkt.push_str(&format!(
                "POLYGON(({a} {b}, {c} {b}, {c} {d}, {a} {d}, {a} {b}))\n"
            ));
        }
        let path = dir.join("rects.wkt");
        std::fs::write(&path, wkt).with_context(|| format!("writing {}", path.display()))?;
        let path = dir.join("workload.json");
        std::fs::write(&path, serde_json::to_string_pretty(&self.manifest)?)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Reads the workload of `dir` (written by [`Self::write`] or by anyone following
    /// the format); every file's size must match the manifest.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join("workload.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let manifest: Manifest =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        if manifest.format != FORMAT {
            bail!(
                "{}: format '{}', expected '{FORMAT}'",
                path.display(),
                manifest.format
            );
        }
        let (rp, wp, pp) = (
            dir.join("rects.f64"),
            dir.join("windows.f64"),
            dir.join("points.f64"),
        );
        let rects = boxes(&read_f64s(&rp, 4, manifest.n)?, &rp)?;
        let windows = boxes(&read_f64s(&wp, 4, manifest.queries)?, &wp)?;
        let points = read_f64s(&pp, 2, manifest.knn_queries)?
            .chunks_exact(2)
            .map(|c| [c[0], c[1]])
            .collect::<Vec<_>>();
        if let Some(bad) = points.iter().flatten().find(|v| !v.is_finite()) {
            bail!("{}: a coordinate is {bad}", pp.display());
        }
        Ok(Files {
            manifest,
            rects,
            windows,
            points,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_files_round_trip_and_damage_is_refused() {
        let dir = std::env::temp_dir().join(format!("spidx-bench-files-{}", std::process::id()));
        let f = Files::generate(50, 7, 5, 3, 9);
        f.write(&dir).unwrap();
        let g = Files::read(&dir).unwrap();
        assert_eq!(g.manifest, f.manifest);
        assert_eq!(
            (g.rects, g.windows, g.points),
            (f.rects, f.windows, f.points)
        );
        // A truncated file is refused with its name.
        let rp = dir.join("rects.f64");
        let bytes = std::fs::read(&rp).unwrap();
        std::fs::write(&rp, &bytes[..bytes.len() - 8]).unwrap();
        let e = Files::read(&dir).err().unwrap().to_string();
        assert!(e.contains("rects.f64"), "{e}");
        // An inverted box is refused.
        let mut bad = bytes.clone();
        bad[0..8].copy_from_slice(&1e9f64.to_le_bytes());
        std::fs::write(&rp, &bad).unwrap();
        assert!(Files::read(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn deterministic_inside_and_f32_exact() {
        let a = rects(1000, 7);
        assert_eq!(a, rects(1000, 7));
        assert_ne!(a, rects(1000, 8));
        let ext = f64::from(EXTENT);
        for r in a.iter().chain(windows(100, 7).iter()) {
            for d in 0..2 {
                assert!(r.min[d] >= 0.0 && r.max[d] <= ext && r.min[d] < r.max[d]);
                assert_eq!(f64::from(r.min[d] as f32), r.min[d]);
                assert_eq!(f64::from(r.max[d] as f32), r.max[d]);
            }
        }
        let w = windows(3, 7)[0];
        assert_eq!(
            (w.max[0] - w.min[0]) * (w.max[1] - w.min[1]),
            ext * ext * 1e-4
        );
    }
}
