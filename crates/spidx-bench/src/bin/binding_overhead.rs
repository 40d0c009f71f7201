//! The library side of the Python binding's overhead benchmark (docs/benchmarks.md,
//! "Python binding overhead"): opens the index directory `DIR/index` that
//! `python/benchmarks/binding_overhead.py` built, runs the same window queries
//! (`DIR/windows.json`) and kNN queries (`DIR/points.json`, k from `DIR/params.json`)
//! through `spidx::spatial::SpatialIndex` directly, and prints JSON: the median over
//! `PASSES` passes of the time per query, and the answers found (so the Python side can
//! check that both did the same work).
//!
//! Usage: binding_overhead DIR [PASSES (5)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use spidx::geom::Rect;
use spidx::query::Predicate;
use spidx::spatial::{OpenMode, SpatialIndex};

fn read_json<T: serde::de::DeserializeOwned>(p: &Path) -> Result<T> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        bail!("usage: binding_overhead DIR [PASSES]");
    };
    let passes: usize = match args.next() {
        Some(p) => p
            .parse()
            .with_context(|| format!("PASSES: {p} is not a count"))?,
        None => 5,
    };
    if passes == 0 {
        bail!("PASSES must be at least 1");
    }
    let windows: Vec<[f64; 4]> = read_json(&dir.join("windows.json"))?;
    let points: Vec<[f64; 2]> = read_json(&dir.join("points.json"))?;
    let params: serde_json::Value = read_json(&dir.join("params.json"))?;
    let k = params["k"].as_u64().context("params.json: k")? as usize;
    let rects = windows
        .iter()
        .map(|w| Rect::new([w[0], w[1]], [w[2], w[3]]))
        .collect::<spidx::Result<Vec<Rect<2>>>>()?;
    let mut idx = SpatialIndex::<2>::open_with(&dir.join("index"), OpenMode::ReadOnly)?;
    let (mut window_ns, mut knn_ns) = (Vec::new(), Vec::new());
    let (mut window_answers, mut knn_answers) = (0usize, 0usize);
    for _ in 0..passes {
        window_answers = 0;
        let t = Instant::now();
        for r in &rects {
            window_answers += idx.select(r, None, Predicate::Intersects, false)?.ids.len();
        }
        window_ns.push(t.elapsed().as_nanos() as f64 / rects.len() as f64);
        knn_answers = 0;
        let t = Instant::now();
        for p in &points {
            knn_answers += idx.nearest(*p, k, false)?.ids.len();
        }
        knn_ns.push(t.elapsed().as_nanos() as f64 / points.len() as f64);
    }
    let out = serde_json::json!({
        "passes": passes,
        "window_queries": rects.len(),
        "window_ns_per_query": median(window_ns),
        "window_answers": window_answers,
        "knn_queries": points.len(),
        "k": k,
        "knn_ns_per_query": median(knn_ns),
        "knn_answers": knn_answers,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
