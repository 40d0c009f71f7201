//! Workload inputs, generated once per experiment from the dataset and each workload's
//! seed (so every run of the matrix answers the very same queries): range windows sized
//! as a share of the dataset extent's area, query points, kNN points, and the operation
//! stream of a mixed workload. Deterministic: same spec and data, same inputs.

use geo::{Geometry, Point, Translate};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::spec::{Concurrency, Placement, Windows, Workload};
use crate::data::{self, Dataset, Extent, ReadOptions};
use crate::index::bulk::BulkOptions;
use crate::query::Predicate;
use crate::{Error, Result};

/// One selection query: a box (and the exact query geometry for refinement, if not the
/// box itself).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryInput {
    /// Lower corner.
    pub min: Vec<f64>,
    /// Upper corner.
    pub max: Vec<f64>,
    /// Exact query geometry (2-D); `None` means the box.
    pub geometry: Option<Geometry<f64>>,
}

/// One operation of a mixed workload.
#[derive(Debug, Clone, PartialEq)]
pub enum MixedOp {
    /// Insert a new object.
    Insert {
        /// New id.
        id: u64,
        /// Its box.
        mbr: QueryInput,
    },
    /// Delete a live object.
    Delete {
        /// Its id.
        id: u64,
        /// Its box.
        mbr: QueryInput,
    },
    /// Move a live object.
    Update {
        /// Its id.
        id: u64,
        /// Its box before.
        old: QueryInput,
        /// Its box after (with the moved geometry).
        new: QueryInput,
    },
    /// A window query (intersects, with refinement when the index keeps geometries).
    Query(QueryInput),
}

/// What a workload needs to run.
#[derive(Debug, Clone)]
pub enum Inputs {
    /// Construction inserts the dataset itself, one by one or by a bulk load.
    Construction(Option<BulkOptions>),
    /// Range and point queries.
    Select {
        /// The queries.
        queries: Vec<QueryInput>,
        /// Predicate.
        predicate: Predicate,
        /// Refinement.
        refine: bool,
    },
    /// kNN queries.
    Knn {
        /// Query points.
        points: Vec<Vec<f64>>,
        /// Neighbours.
        k: usize,
        /// Exact distances.
        refine: bool,
        /// A sequential scan with requests of this many bytes instead of the index.
        scan: Option<usize>,
        /// Concurrent streams to simulate.
        concurrency: Option<Concurrency>,
    },
    /// A stream of operations.
    Mixed(Vec<MixedOp>),
}

impl Inputs {
    /// Number of steps (queries or operations; objects for construction).
    pub fn steps(&self, objects: usize) -> u64 {
        match self {
            Inputs::Construction(_) => objects as u64,
            Inputs::Select { queries, .. } => queries.len() as u64,
            Inputs::Knn { points, .. } => points.len() as u64,
            Inputs::Mixed(ops) => ops.len() as u64,
        }
    }
}

/// The box of object `i` of `ds` (its MBR; a vector is a point).
pub(crate) fn object_box(ds: &Dataset, i: usize) -> (u64, Vec<f64>, Vec<f64>) {
    match ds {
        Dataset::Geo(recs) => {
            let r = &recs[i];
            let (lo, hi) = (r.bbox.min(), r.bbox.max());
            (r.id, vec![lo.x, lo.y], vec![hi.x, hi.y])
        }
        Dataset::Vectors(v) => (i as u64, v.row(i).to_vec(), v.row(i).to_vec()),
    }
}

/// Builds the inputs of `w` for dataset `ds` with extent `ext`.
pub(crate) fn inputs(w: &Workload, ds: &Dataset, ext: &Extent) -> Result<Inputs> {
    let what = format!("workload '{}'", w.name());
    match w {
        Workload::Construction { .. } => Ok(Inputs::Construction(None)),
        Workload::Bulk { bulk, .. } => Ok(Inputs::Construction(Some(*bulk))),
        Workload::Range {
            windows,
            predicate,
            refine,
            ..
        } => {
            let queries = match windows {
                Windows::Generated {
                    area,
                    queries,
                    aspect,
                    seed,
                } => {
                    let mut rng = ChaCha8Rng::seed_from_u64(*seed);
                    let sides =
                        window_sides(ext, *area, *aspect).map_err(|m| Error::invalid(&what, m))?;
                    (0..*queries)
                        .map(|_| window(&mut rng, ext, &sides))
                        .collect()
                }
                Windows::File { path } => {
                    if ds.dims() != 2 {
                        return Err(Error::invalid(&what, "windows from a file need 2-D data"));
                    }
                    // Windows are not indexed: their ids do not matter.
                    let opts = ReadOptions {
                        allow_duplicate_ids: true,
                        ..ReadOptions::default()
                    };
                    let loaded = data::read(path, &opts)?;
                    if loaded.report.skipped_total() > 0 {
                        return Err(Error::invalid(
                            &what,
                            format!(
                                "{} has unusable records:\n{}",
                                path.display(),
                                loaded.report
                            ),
                        ));
                    }
                    let recs = loaded.dataset.as_geo().ok_or_else(|| {
                        Error::invalid(
                            &what,
                            format!("{} holds vectors, not geometries", path.display()),
                        )
                    })?;
                    if recs.is_empty() {
                        return Err(Error::invalid(
                            &what,
                            format!("{} holds no window", path.display()),
                        ));
                    }
                    recs.iter()
                        .map(|r| QueryInput {
                            min: vec![r.bbox.min().x, r.bbox.min().y],
                            max: vec![r.bbox.max().x, r.bbox.max().y],
                            geometry: Some(r.geometry.clone()),
                        })
                        .collect()
                }
            };
            Ok(Inputs::Select {
                queries,
                predicate: *predicate,
                refine: *refine,
            })
        }
        Workload::Point {
            queries,
            place,
            seed,
            predicate,
            refine,
            ..
        } => {
            let mut rng = ChaCha8Rng::seed_from_u64(*seed);
            let queries = (0..*queries)
                .map(|_| {
                    let p = point(&mut rng, ds, ext, *place);
                    let geometry = (p.len() == 2).then(|| Geometry::Point(Point::new(p[0], p[1])));
                    QueryInput {
                        min: p.clone(),
                        max: p,
                        geometry,
                    }
                })
                .collect();
            Ok(Inputs::Select {
                queries,
                predicate: *predicate,
                refine: *refine,
            })
        }
        Workload::Knn {
            k,
            queries,
            place,
            seed,
            refine,
            scan,
            concurrency,
            ..
        } => {
            if scan.is_some() && *refine && ds.as_geo().is_some() {
                return Err(Error::invalid(
                    &what,
                    "access = \"scan\" compares boxes, not exact geometries; set refine = false (or use vector data)",
                ));
            }
            let mut rng = ChaCha8Rng::seed_from_u64(*seed);
            Ok(Inputs::Knn {
                points: (0..*queries)
                    .map(|_| point(&mut rng, ds, ext, *place))
                    .collect(),
                k: *k,
                refine: *refine,
                scan: *scan,
                concurrency: concurrency.clone(),
            })
        }
        Workload::Mixed {
            operations,
            shares,
            area,
            seed,
            ..
        } => {
            let sides = window_sides(ext, *area, 1.0).map_err(|m| Error::invalid(&what, m))?;
            let ops = mixed(ds, ext, *operations, shares, &sides, *seed)
                .map_err(|m| Error::invalid(&what, m))?;
            Ok(Inputs::Mixed(ops))
        }
    }
}

/// Window sides for `area` × the extent's volume: width/height = `aspect` in 2-D, equal
/// shares of every side otherwise.
pub(crate) fn window_sides(
    ext: &Extent,
    area: f64,
    aspect: f64,
) -> std::result::Result<Vec<f64>, String> {
    let lens: Vec<f64> = ext.min.iter().zip(&ext.max).map(|(a, b)| b - a).collect();
    if lens.iter().any(|l| *l <= 0.0) {
        return Err("the dataset's extent is flat (zero width on an axis): windows sized as a share of its area are empty".into());
    }
    let sides = if lens.len() == 2 {
        let a = area * lens[0] * lens[1];
        vec![(a * aspect).sqrt(), (a / aspect).sqrt()]
    } else {
        if aspect != 1.0 {
            return Err("aspect applies to 2-D data only".into());
        }
        let f = area.powf(1.0 / lens.len() as f64);
        lens.iter().map(|l| l * f).collect()
    };
    if sides.iter().zip(&lens).any(|(s, l)| s > l) {
        return Err(format!(
            "a window of {}% of the extent's area with aspect {aspect} does not fit inside the extent",
            area * 100.0
        ));
    }
    Ok(sides)
}

fn window(rng: &mut ChaCha8Rng, ext: &Extent, sides: &[f64]) -> QueryInput {
    let min: Vec<f64> = (0..sides.len())
        .map(|i| ext.min[i] + rng.gen::<f64>() * (ext.max[i] - ext.min[i] - sides[i]))
        .collect();
    let max = min.iter().zip(sides).map(|(a, s)| a + s).collect();
    QueryInput {
        min,
        max,
        geometry: None,
    }
}

fn point(rng: &mut ChaCha8Rng, ds: &Dataset, ext: &Extent, place: Placement) -> Vec<f64> {
    match place {
        Placement::Objects => {
            let (_, lo, hi) = object_box(ds, rng.gen_range(0..ds.len()));
            lo.iter().zip(&hi).map(|(a, b)| (a + b) / 2.0).collect()
        }
        Placement::Uniform => (0..ext.dims())
            .map(|i| ext.min[i] + rng.gen::<f64>() * (ext.max[i] - ext.min[i]))
            .collect(),
    }
}

/// A live object of the simulated stream: its id, the dataset object it copies and the
/// offset it was moved by.
struct Live {
    id: u64,
    source: usize,
    offset: Vec<f64>,
}

fn placed(ds: &Dataset, l: &Live) -> QueryInput {
    let (_, lo, hi) = object_box(ds, l.source);
    let shift = |v: Vec<f64>| -> Vec<f64> { v.iter().zip(&l.offset).map(|(a, o)| a + o).collect() };
    let geometry = match ds {
        Dataset::Geo(recs) => Some(recs[l.source].geometry.translate(l.offset[0], l.offset[1])),
        Dataset::Vectors(_) => None,
    };
    QueryInput {
        min: shift(lo),
        max: shift(hi),
        geometry,
    }
}

/// An offset that moves box `lo..hi` to `target` clamped inside the extent.
fn offset_to(ext: &Extent, lo: &[f64], hi: &[f64], target: &[f64]) -> Vec<f64> {
    (0..lo.len())
        .map(|i| {
            let side = hi[i] - lo[i];
            let at = target[i].clamp(ext.min[i], (ext.max[i] - side).max(ext.min[i]));
            at - lo[i]
        })
        .collect()
}

fn mixed(
    ds: &Dataset,
    ext: &Extent,
    n: u64,
    shares: &[f64; 4],
    sides: &[f64],
    seed: u64,
) -> std::result::Result<Vec<MixedOp>, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut live: Vec<Live> = (0..ds.len())
        .map(|i| Live {
            id: object_box(ds, i).0,
            source: i,
            offset: vec![0.0; ds.dims()],
        })
        .collect();
    let mut next_id = live.iter().map(|l| l.id).max().map_or(0, |m| m + 1);
    let lens: Vec<f64> = ext.min.iter().zip(&ext.max).map(|(a, b)| b - a).collect();
    let mut ops = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let u: f64 = rng.gen();
        let kind = if u < shares[0] {
            0
        } else if u < shares[0] + shares[1] {
            1
        } else if u < shares[0] + shares[1] + shares[2] {
            2
        } else {
            3
        };
        // Deletes and updates need a live object. With none left the stream cannot follow
        // its shares: an error (turning them into inserts would insert even with insert = 0).
        if (kind == 1 || kind == 2) && live.is_empty() {
            return Err(format!(
                "operation {} of {n} would be {}, but every object has been deleted by then (the dataset has {}; insert = {}%, delete = {}%); lower operations or the delete share, or raise the insert share",
                ops.len() + 1,
                if kind == 1 { "a delete" } else { "an update" },
                ds.len(),
                shares[0] * 100.0,
                shares[1] * 100.0
            ));
        }
        match kind {
            0 => {
                let source = rng.gen_range(0..ds.len());
                let (_, lo, hi) = object_box(ds, source);
                let target: Vec<f64> = (0..lo.len())
                    .map(|i| ext.min[i] + rng.gen::<f64>() * lens[i])
                    .collect();
                let l = Live {
                    id: next_id,
                    source,
                    offset: offset_to(ext, &lo, &hi, &target),
                };
                next_id += 1;
                ops.push(MixedOp::Insert {
                    id: l.id,
                    mbr: placed(ds, &l),
                });
                live.push(l);
            }
            1 => {
                let l = live.swap_remove(rng.gen_range(0..live.len()));
                ops.push(MixedOp::Delete {
                    id: l.id,
                    mbr: placed(ds, &l),
                });
            }
            2 => {
                let i = rng.gen_range(0..live.len());
                let old = placed(ds, &live[i]);
                // Move by up to 1 % of the extent's side on each axis, staying inside it.
                let target: Vec<f64> = (0..old.min.len())
                    .map(|d| old.min[d] + (rng.gen::<f64>() * 2.0 - 1.0) * 0.01 * lens[d])
                    .collect();
                let (_, lo, hi) = object_box(ds, live[i].source);
                live[i].offset = offset_to(ext, &lo, &hi, &target);
                let new = placed(ds, &live[i]);
                ops.push(MixedOp::Update {
                    id: live[i].id,
                    old,
                    new,
                });
            }
            _ => ops.push(MixedOp::Query(window(&mut rng, ext, sides))),
        }
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::generate::{generate, Distribution, GenerateOptions};

    fn ext() -> Extent {
        Extent {
            min: vec![0.0, 0.0],
            max: vec![100.0, 50.0],
        }
    }

    #[test]
    fn windows_have_the_asked_area_and_aspect_and_lie_inside() {
        let sides = window_sides(&ext(), 0.01, 4.0).unwrap();
        assert!((sides[0] * sides[1] - 50.0).abs() < 1e-9);
        assert!((sides[0] / sides[1] - 4.0).abs() < 1e-9);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..1000 {
            let w = window(&mut rng, &ext(), &sides);
            for i in 0..2 {
                assert!(w.min[i] >= 0.0 && w.max[i] <= ext().max[i] + 1e-9);
            }
        }
        assert!(window_sides(&ext(), 0.9, 100.0).is_err());
    }

    #[test]
    fn mixed_streams_are_deterministic_and_consistent() {
        let ds = generate(&GenerateOptions::new(Distribution::Uniform, 200)).unwrap();
        let e = ds.extent().unwrap();
        let sides = window_sides(&e, 0.001, 1.0).unwrap();
        let a = mixed(&ds, &e, 500, &[0.3, 0.3, 0.2, 0.2], &sides, 7).unwrap();
        let b = mixed(&ds, &e, 500, &[0.3, 0.3, 0.2, 0.2], &sides, 7).unwrap();
        assert_eq!(a, b);
        // Every delete and update names an object that is live at that point, with its box.
        let mut live: std::collections::HashMap<u64, Vec<f64>> = (0..ds.len())
            .map(|i| {
                let (id, lo, _) = object_box(&ds, i);
                (id, lo)
            })
            .collect();
        for op in &a {
            match op {
                MixedOp::Insert { id, mbr } => assert!(live.insert(*id, mbr.min.clone()).is_none()),
                MixedOp::Delete { id, mbr } => assert_eq!(live.remove(id).unwrap(), mbr.min),
                MixedOp::Update { id, old, new } => {
                    assert_eq!(live.insert(*id, new.min.clone()).unwrap(), old.min)
                }
                MixedOp::Query(_) => {}
            }
        }
    }

    #[test]
    fn a_stream_that_runs_out_of_objects_is_an_error_not_inserts() {
        // 20 objects, no inserts, half deletes: the objects run out long before 200 operations.
        let ds = generate(&GenerateOptions::new(Distribution::Uniform, 20)).unwrap();
        let e = ds.extent().unwrap();
        let sides = window_sides(&e, 0.001, 1.0).unwrap();
        let err = mixed(&ds, &e, 200, &[0.0, 0.5, 0.0, 0.5], &sides, 3).unwrap_err();
        assert!(
            err.contains("every object has been deleted") && err.contains("insert = 0%"),
            "{err}"
        );
        // While objects remain, insert = 0 never inserts.
        let ops = mixed(&ds, &e, 30, &[0.0, 0.3, 0.3, 0.4], &sides, 3).unwrap();
        assert!(ops.iter().all(|o| !matches!(o, MixedOp::Insert { .. })));
        assert!(ops.iter().any(|o| matches!(o, MixedOp::Delete { .. })));
    }
}
