//! `spidx query`: one query on an index directory — window, point, arbitrary geometry or
//! k nearest neighbours — with the filter and refinement steps measured separately.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use geo::Geometry;
use serde_json::json;
use spidx::geom::Rect;
use spidx::query::{parse_wkt, Predicate};
use spidx::spatial::query::{mbr_of, QueryReport};
use spidx::spatial::{read_manifest, SpatialIndex};
use spidx::with_dims;

use crate::numfmt::{count, secs};

/// Arguments of `spidx query`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("kind").required(true).args(["window", "point", "knn", "geometry"])))]
pub struct QueryArgs {
    /// Index directory.
    dir: PathBuf,
    /// Window: the lower corner then the upper corner, e.g. X1,Y1,X2,Y2.
    #[arg(long, allow_hyphen_values = true)]
    window: Option<String>,
    /// Point: X,Y (objects intersecting it).
    #[arg(long, allow_hyphen_values = true)]
    point: Option<String>,
    /// k nearest neighbours of this point: X,Y (or D coordinates).
    #[arg(long, allow_hyphen_values = true, requires = "k")]
    knn: Option<String>,
    /// Number of neighbours for --knn.
    #[arg(long)]
    k: Option<usize>,
    /// Query geometry as WKT, e.g. "POLYGON((0 0,10 0,10 10,0 10,0 0))".
    #[arg(long)]
    geometry: Option<String>,
    /// Predicate: intersects, contains, within, covers, covered-by, overlaps, touches, equals, disjoint.
    #[arg(long, default_value = "intersects")]
    predicate: String,
    /// Only the filter step on MBRs (no refinement on exact geometries).
    #[arg(long)]
    filter_only: bool,
    /// List the ids found.
    #[arg(long)]
    ids: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn coords(what: &str, text: &str, n: usize) -> Result<Vec<f64>> {
    let v: Vec<f64> = text
        .split(',')
        .map(|t| {
            t.trim()
                .parse::<f64>()
                .with_context(|| format!("{what}: '{t}' is not a number"))
        })
        .collect::<Result<_>>()?;
    if v.len() != n {
        bail!("{what} needs {n} comma-separated numbers, got {}", v.len());
    }
    if let Some((i, c)) = v.iter().enumerate().find(|(_, c)| !c.is_finite()) {
        bail!("{what}: coordinate {i} is {c}; every coordinate must be a finite number");
    }
    Ok(v)
}

pub fn run(a: QueryArgs) -> Result<()> {
    let manifest = read_manifest(&a.dir)?;
    if a.k.is_some() && a.knn.is_none() {
        bail!("--k applies to --knn only");
    }
    let pred = Predicate::parse(&a.predicate)?;
    if a.knn.is_some() && a.predicate != "intersects" {
        bail!("--predicate does not apply to --knn");
    }
    with_dims!(manifest.dims, D => run_dims::<D>(&a, pred))
}

fn run_dims<const D: usize>(a: &QueryArgs, pred: Predicate) -> Result<()> {
    let mut idx = SpatialIndex::<D>::open_read_only(&a.dir)?;
    // Answers come only from an index closed at a checkpoint: a crashed one is recovered
    // first (on disk, checked), never answered from a recovery made in memory.
    if let Some(why) = idx.recovery_state().crashed {
        bail!(
            "{} was left by a crash ({why}); run `spidx recover {}` first",
            a.dir.display(),
            a.dir.display()
        );
    }
    let refine = !a.filter_only;
    let (kind, rep): (&str, QueryReport) = if let Some(w) = &a.window {
        let c = coords("--window", w, 2 * D)?;
        let q = Rect::new(c[..D].try_into()?, c[D..].try_into()?).context("--window")?;
        ("window", idx.select(&q, None, pred, refine)?)
    } else if let Some(p) = &a.point {
        let c: [f64; D] = coords("--point", p, D)?.try_into().expect("length checked");
        let q = Rect::point(c);
        let g = (D == 2).then(|| Geometry::Point(geo::Point::new(c[0], c[1])));
        ("point", idx.select(&q, g.as_ref(), pred, refine)?)
    } else if let Some(p) = &a.knn {
        let c: [f64; D] = coords("--knn", p, D)?.try_into().expect("length checked");
        (
            "knn",
            idx.nearest(c, a.k.expect("clap requires --k"), refine)?,
        )
    } else {
        let text = a.geometry.as_deref().expect("clap requires one query kind");
        if D != 2 {
            bail!("--geometry needs a 2-D index; this one has {D} dimensions");
        }
        let g = parse_wkt(text)?;
        let m = mbr_of(&g)?;
        let mut q = Rect {
            min: [0.0; D],
            max: [0.0; D],
        };
        q.min[..2].copy_from_slice(&m.min);
        q.max[..2].copy_from_slice(&m.max);
        ("geometry", idx.select(&q, Some(&g), pred, refine)?)
    };
    let total = rep.total();
    let reads = rep.filter.device.host.read_ops + rep.refinement.device.host.read_ops;
    if a.json {
        let mut v = json!({
            "query": kind,
            "predicate": if kind == "knn" { "nearest".to_string() } else { pred.name().to_string() },
            "filter_only": a.filter_only,
            "candidates": rep.candidates,
            "results": rep.results,
            "cpu_s": total.cpu_s,
            "device_s": total.device_s,
            "elapsed_s": total.elapsed_s,
            "times": if idx.simulated() { "modelled" } else { "wall" },
            "reads": reads,
            "filter": rep.filter,
            "refinement": rep.refinement,
            "node_reads_per_level": rep.node_reads_per_level,
        });
        if a.ids {
            v["ids"] = json!(rep.ids);
            if kind == "knn" {
                v["distances"] = json!(rep.distances);
            }
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{kind} query ({}): {} candidates, {} results",
            if kind == "knn" {
                "nearest"
            } else {
                pred.name()
            },
            count(rep.candidates as f64),
            count(rep.results as f64)
        );
        let clock = if idx.simulated() {
            "modelled: simulated device time + host profile"
        } else {
            "wall-clock, device time measured"
        };
        println!(
            "time      elapsed {} ({clock}): filter {}, refinement {}; CPU {}, device {}",
            secs(total.elapsed_s),
            secs(rep.filter.elapsed_s),
            secs(rep.refinement.elapsed_s),
            secs(total.cpu_s),
            secs(total.device_s)
        );
        println!(
            "I/O       {} reads; node reads per level (leaves first) {:?}",
            count(reads as f64),
            rep.node_reads_per_level
        );
        if a.ids {
            if kind == "knn" {
                println!("id\tdistance");
            } else {
                println!("id");
            }
            for (i, id) in rep.ids.iter().enumerate() {
                match rep.distances.get(i) {
                    Some(d) => println!("{id}\t{d}"),
                    None => println!("{id}"),
                }
            }
        }
    }
    Ok(())
}
