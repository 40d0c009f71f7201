//! Queries on a [`SpatialIndex`]: the filter step through the tree on MBRs, then the
//! refinement step on the exact geometries read from the object store (architecture
//! §7), each measured separately. Kinds: window (range), point, arbitrary geometry
//! selection, and k nearest neighbours.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use geo::{BoundingRect, Distance as _, Euclidean, Geometry, MapCoords, Point};
use geozero::{wkb::Wkb, CoordDimensions, ToGeo, ToWkb};
use serde::{Deserialize, Serialize};

use super::{PhaseReport, SpatialIndex};
use crate::geom::{Distance, Rect};
use crate::query::Predicate;
use crate::{Error, Result};

/// Encodes a geometry as WKB (the object store's record format).
pub(crate) fn encode(g: &Geometry<f64>) -> Result<Vec<u8>> {
    g.to_wkb(CoordDimensions::xy())
        .map_err(|e| Error::invalid("geometry", e.to_string()))
}

/// Decodes a WKB record of object `id`.
pub(crate) fn decode(id: u64, bytes: &[u8]) -> Result<Geometry<f64>> {
    Wkb(bytes.to_vec())
        .to_geo()
        .map_err(|e| Error::corrupted(format!("object {id}"), format!("bad WKB: {e}")))
}

/// The MBR of a 2-D geometry (an error for an empty one).
pub fn mbr_of(g: &Geometry<f64>) -> Result<Rect<2>> {
    let r = g
        .bounding_rect()
        .ok_or_else(|| Error::invalid("geometry", "empty geometry"))?;
    Rect::new([r.min().x, r.min().y], [r.max().x, r.max().y])
}

/// What a query found and what it cost, phase by phase.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QueryReport {
    /// Entries that passed the filter step.
    pub candidates: u64,
    /// Objects in the answer.
    pub results: u64,
    /// The answer's object ids (sorted by id; by distance for kNN).
    pub ids: Vec<u64>,
    /// Distances of kNN answers, in the order of `ids`.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub distances: Vec<f64>,
    /// Filter step (index traversal).
    pub filter: PhaseReport,
    /// Refinement step (reading and testing exact geometries); zero in filter-only mode.
    pub refinement: PhaseReport,
    /// Node reads per level during the query (index 0 = leaves).
    pub node_reads_per_level: Vec<u64>,
}

impl QueryReport {
    /// Total of both phases.
    pub fn total(&self) -> PhaseReport {
        let mut t = self.filter.clone();
        t.add(&self.refinement);
        t.device = self.refinement.device.clone();
        t
    }
}

fn reads_since(before: &[u64], after: &[u64]) -> Vec<u64> {
    after
        .iter()
        .enumerate()
        .map(|(i, a)| a - before.get(i).copied().unwrap_or(0))
        .collect()
}

impl<const D: usize> SpatialIndex<D> {
    /// Selects the objects whose MBR satisfies `pred`'s filter against box `q`, and with
    /// `refine`, whose exact geometry satisfies `pred` against `query` (the geometry `q`
    /// bounds; a window's polygon when `None`).
    pub fn select(
        &mut self,
        q: &Rect<D>,
        query: Option<&Geometry<f64>>,
        pred: Predicate,
        refine: bool,
    ) -> Result<QueryReport> {
        let reads0 = self.tree.stats().reads_per_level.clone();
        let clock = self.phase();
        self.tally.operations += 1;
        let mut cands = Vec::new();
        self.tree.search(pred.filter(), q, |e| cands.push(e.ptr))?;
        let refining = refine && self.objects.is_some();
        self.tally.candidates += cands.len() as u64;
        if !refining {
            self.tally.results += cands.len() as u64;
        }
        let filter = self.stop_phase(clock);
        let node_reads_per_level = reads_since(&reads0, &self.tree.stats().reads_per_level);
        cands.sort_unstable();
        let mut rep = QueryReport {
            candidates: cands.len() as u64,
            filter,
            node_reads_per_level,
            ..Default::default()
        };
        if !refining {
            rep.results = cands.len() as u64;
            rep.ids = cands;
            return Ok(rep);
        }
        let window;
        let qgeom = match query {
            Some(g) => g,
            None => {
                if D != 2 {
                    return Err(Error::invalid("query", "refinement needs 2-D data"));
                }
                window = Geometry::Rect(geo::Rect::new((q.min[0], q.min[1]), (q.max[0], q.max[1])));
                &window
            }
        };
        let clock = self.phase();
        let store = self.objects.as_mut().expect("checked above");
        let tested = cands.len() as u64;
        for id in cands {
            let bytes = store.get(id)?.ok_or_else(|| {
                Error::corrupted(
                    format!("object {id}"),
                    "indexed but missing from the object store",
                )
            })?;
            let g = decode(id, bytes)?;
            let holds = pred.eval(&g, qgeom).map_err(|e| match e {
                Error::InvalidOption { message, .. } => {
                    Error::invalid(format!("object {id}"), message)
                }
                e => e,
            })?;
            if holds {
                rep.ids.push(id);
            }
        }
        self.tally.records += tested;
        self.tally.results += rep.ids.len() as u64;
        rep.refinement = self.stop_phase(clock);
        rep.results = rep.ids.len() as u64;
        Ok(rep)
    }

    /// The `k` objects nearest to `point`: by exact geometry distance with `refine` (2-D
    /// indices with objects), by MBR distance otherwise. Ties are broken by id.
    pub fn nearest(&mut self, point: [f64; D], k: usize, refine: bool) -> Result<QueryReport> {
        if k == 0 {
            return Err(Error::invalid("k", "must be at least 1"));
        }
        let reads0 = self.tree.stats().reads_per_level.clone();
        let exact = refine && self.objects.is_some() && D == 2;
        let clock = self.phase();
        self.tally.operations += 1;
        // By MBR distance the caller takes the first k entries (and ties): the traversal
        // need not queue what cannot be among them. Exact distances may reorder them.
        let mut it = if exact {
            self.tree.nearest_iter(point)?
        } else {
            self.tree.nearest_iter_first(point, k)?
        };
        // Max-heap of the best k so far: (distance, id).
        let mut best: BinaryHeap<Cand> = BinaryHeap::new();
        let mut candidates = 0u64;
        let mut refine_clock: Option<PhaseReport> = None;
        let qpoint = Geometry::Point(Point::new(point[0], point.get(1).copied().unwrap_or(0.0)));
        let mut next = self.tree.nearest_next(&mut it);
        while let Ok(Some(n)) = next {
            if best.len() == k && n.dist > best.peek().expect("k > 0").key {
                break;
            }
            candidates += 1;
            self.tally.candidates += 1;
            let key = if exact {
                let c = self.phase();
                self.tally.records += 1;
                let store = self.objects.as_mut().expect("exact implies objects");
                let bytes = store.get(n.entry.ptr)?.ok_or_else(|| {
                    Error::corrupted(
                        format!("object {}", n.entry.ptr),
                        "indexed but missing from the object store",
                    )
                })?;
                let g = decode(n.entry.ptr, bytes)?;
                let d = exact_distance(&qpoint, &g);
                let r = self.stop_phase(c);
                refine_clock
                    .get_or_insert_with(PhaseReport::default)
                    .add(&r);
                d
            } else {
                n.dist
            };
            best.push(Cand {
                key,
                id: n.entry.ptr,
            });
            if best.len() > k {
                best.pop();
            }
            next = self.tree.nearest_next(&mut it);
        }
        next?;
        self.tree.nearest_done(it);
        self.tally.results += best.len() as u64;
        let mut filter = self.stop_phase(clock);
        let refinement = refine_clock.unwrap_or_default();
        // The refinement time was measured inside the traversal: take it out of the filter.
        filter.cpu_s = (filter.cpu_s - refinement.cpu_s).max(0.0);
        filter.device_s = (filter.device_s - refinement.device_s).max(0.0);
        filter.host_s = (filter.host_s - refinement.host_s).max(0.0);
        filter.elapsed_s = (filter.elapsed_s - refinement.elapsed_s).max(0.0);
        filter.host = filter.host.since(&refinement.host);
        let found = best.into_sorted_vec();
        Ok(QueryReport {
            candidates,
            results: found.len() as u64,
            ids: found.iter().map(|c| c.id).collect(),
            distances: found.iter().map(|c| c.key.get()).collect(),
            filter,
            refinement,
            node_reads_per_level: reads_since(&reads0, &self.tree.stats().reads_per_level),
        })
    }
}

/// The exact distance from a point to a geometry, for any finite coordinates: beyond
/// about ±1e154 (or below ±1e-154) the `geo` crate's distance overflows (underflows), so
/// both are scaled by a power of two first, as the predicates are
/// ([`crate::query::predicate::exact_scale`]).
fn exact_distance(point: &Geometry<f64>, g: &Geometry<f64>) -> Distance {
    match crate::query::predicate::exact_scale(point, g) {
        None => Distance::from_f64(Euclidean.distance(point, g)),
        Some(f) => {
            let scale = |g: &Geometry<f64>| {
                g.map_coords(|c| geo::Coord {
                    x: c.x * f,
                    y: c.y * f,
                })
            };
            Distance::from_scaled(Euclidean.distance(&scale(point), &scale(g)), f)
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Cand {
    key: Distance,
    id: u64,
}

impl PartialEq for Cand {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key.cmp(&o.key).then(self.id.cmp(&o.id))
    }
}
