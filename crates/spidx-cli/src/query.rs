//! `spidx query`: one query on an index directory — window, point, arbitrary geometry or
//! k nearest neighbours — with the filter and refinement steps measured separately.
//!
//! What the index keeps of its dataset (`dataset.json`, see `spidx::data::provenance`)
//! adds three things: a query in another CRS than the dataset's (`--crs`, or an EWKT
//! `SRID=n;` prefix of `--geometry`) is refused naming both; a window or point outside the
//! dataset's extent gets a warning (on standard error, and under `warnings` in JSON) instead
//! of a silent 0; and `--source-ids` reports each answer's source id (the feature id or row
//! number in the dataset file, and the part number of an exploded object).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use geo::Geometry;
use serde_json::json;
use spidx::data::provenance::{self, DatasetSource, SourceIds};
use spidx::data::{crs, Crs};
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
    /// List the ids found with each one's source id: the feature id or row number in the
    /// dataset file, and `#PART` for one part of an exploded record (`-` when unknown, e.g.
    /// an object inserted after the build).
    #[arg(long)]
    source_ids: bool,
    /// The CRS of the query's coordinates, e.g. EPSG:4326: refused when the index's dataset
    /// is in another (spidx does not reproject).
    #[arg(long, value_name = "CRS")]
    crs: Option<String>,
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

/// Splits an EWKT `SRID=n;` prefix off `text`: the CRS it names and the WKT after it.
fn split_srid(text: &str) -> Result<(Option<Crs>, &str)> {
    let t = text.trim_start();
    if t.len() > 5 && t[..5].eq_ignore_ascii_case("SRID=") {
        if let Some((srid, rest)) = t[5..].split_once(';') {
            return Ok((Some(Crs::parse(srid).context("--geometry's SRID")?), rest));
        }
    }
    Ok((None, text))
}

fn run_dims<const D: usize>(a: &QueryArgs, pred: Predicate) -> Result<()> {
    let source = DatasetSource::load(&a.dir)?;
    let dataset_crs = source.as_ref().and_then(|s| s.crs.as_ref());
    let what = || {
        source.as_ref().map_or_else(
            || "the index's dataset".to_string(),
            |s| format!("the index's dataset ({})", s.path),
        )
    };
    let mut query_crs = a.crs.as_deref().map(Crs::parse).transpose()?;
    let geometry = match &a.geometry {
        Some(text) => {
            let (srid, wkt) = split_srid(text)?;
            if let Some(s) = srid {
                crs::check_same(Some(&s), "--geometry's SRID", query_crs.as_ref(), "--crs")?;
                query_crs = Some(s);
            }
            Some(wkt)
        }
        None => None,
    };
    crs::check_same(dataset_crs, &what(), query_crs.as_ref(), "the query")?;
    let sources = if a.source_ids {
        Some(SourceIds::open(&a.dir)?)
    } else {
        None
    };
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
    let mut window: Option<(Vec<f64>, Vec<f64>)> = None;
    let (kind, rep): (&str, QueryReport) = if let Some(w) = &a.window {
        let c = coords("--window", w, 2 * D)?;
        let q = Rect::new(c[..D].try_into()?, c[D..].try_into()?).context("--window")?;
        window = Some((q.min.to_vec(), q.max.to_vec()));
        ("window", idx.select(&q, None, pred, refine)?)
    } else if let Some(p) = &a.point {
        let c: [f64; D] = coords("--point", p, D)?.try_into().expect("length checked");
        let q = Rect::point(c);
        window = Some((q.min.to_vec(), q.max.to_vec()));
        let g = (D == 2).then(|| Geometry::Point(geo::Point::new(c[0], c[1])));
        ("point", idx.select(&q, g.as_ref(), pred, refine)?)
    } else if let Some(p) = &a.knn {
        let c: [f64; D] = coords("--knn", p, D)?.try_into().expect("length checked");
        (
            "knn",
            idx.nearest(c, a.k.expect("clap requires --k"), refine)?,
        )
    } else {
        let text = geometry.expect("clap requires one query kind");
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
        window = Some((m.min.to_vec(), m.max.to_vec()));
        ("geometry", idx.select(&q, Some(&g), pred, refine)?)
    };
    // A window (point, geometry) the data cannot reach: say so rather than a silent 0.
    let mut warnings = Vec::new();
    if let (Some((lo, hi)), Some(ext)) = (&window, source.as_ref().and_then(|s| s.extent.as_ref()))
    {
        if ext.dims() == D && provenance::outside(ext, lo, hi) {
            let w = format!(
                "the {kind} [{}] .. [{}] lies outside the extent of {} ([{}] .. [{}]){}; \
                 no object can match it",
                join(lo),
                join(hi),
                what(),
                join(&ext.min),
                join(&ext.max),
                dataset_crs.map_or(String::new(), |c| format!(", in {c}"))
            );
            // The dataset's path comes from the index directory: shown safe.
            eprintln!("warning: {}", crate::term::safe(&w));
            warnings.push(w);
        }
    }
    let source_ids: Option<Vec<Option<spidx::data::SourceId>>> = match &sources {
        Some(s) => Some(
            rep.ids
                .iter()
                .map(|id| s.get(*id))
                .collect::<spidx::Result<_>>()?,
        ),
        None => None,
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
        if a.ids || a.source_ids {
            v["ids"] = json!(rep.ids);
            if kind == "knn" {
                v["distances"] = json!(rep.distances);
            }
        }
        if let Some(s) = &source_ids {
            v["source_ids"] = json!(s);
        }
        if !warnings.is_empty() {
            v["warnings"] = json!(warnings);
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
        if a.ids || a.source_ids {
            let mut head = vec!["id"];
            if source_ids.is_some() {
                head.push("source_id");
            }
            if kind == "knn" {
                head.push("distance");
            }
            println!("{}", head.join("\t"));
            for (i, id) in rep.ids.iter().enumerate() {
                let mut line = id.to_string();
                if let Some(s) = &source_ids {
                    match s[i] {
                        Some(s) => line.push_str(&format!("\t{s}")),
                        None => line.push_str("\t-"),
                    }
                }
                if let Some(d) = rep.distances.get(i) {
                    line.push_str(&format!("\t{d}"));
                }
                println!("{line}");
            }
        }
    }
    Ok(())
}

fn join(v: &[f64]) -> String {
    v.iter().map(f64::to_string).collect::<Vec<_>>().join(", ")
}
