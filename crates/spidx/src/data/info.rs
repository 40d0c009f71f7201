//! Dataset statistics for `spidx dataset info`: what a user checks before running an
//! experiment (and what a results table reports about its data): count, dimensions, extent,
//! geometry kinds, vertex and hole statistics, bounding-box sizes, and per-dimension ranges
//! of vectors.

use super::{kind_name, vertex_count, Dataset, Extent, GeoRecord, Vectors};
use geo_types::{Geometry, Polygon};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Minimum, mean and maximum of a quantity over the records.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    fn of(values: impl Iterator<Item = f64>) -> Option<Summary> {
        let (mut n, mut sum, mut min, mut max) = (0u64, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            n += 1;
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        (n > 0).then(|| Summary {
            min,
            mean: sum / n as f64,
            max,
        })
    }
}

/// Statistics of a 2-D geometry dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeoStats {
    /// Records by geometry kind.
    pub kinds: BTreeMap<String, u64>,
    /// Points per geometry (closing points included).
    pub vertices: Summary,
    /// Points in the whole dataset.
    pub total_vertices: u64,
    /// Holes (inner rings) in the whole dataset.
    pub holes: u64,
    /// Records with at least one hole.
    pub records_with_holes: u64,
    /// Polygons per multipolygon, if there are multipolygons.
    pub multipolygon_parts: Option<Summary>,
    /// Bounding-box area per record.
    pub bbox_area: Summary,
}

/// Statistics of a vector dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorStats {
    /// Smallest value per dimension.
    pub min: Vec<f64>,
    /// Largest value per dimension.
    pub max: Vec<f64>,
    /// Mean per dimension.
    pub mean: Vec<f64>,
}

/// Everything `spidx dataset info` reports about a dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetInfo {
    /// `geometries` or `vectors`.
    pub kind: &'static str,
    /// Number of records.
    pub count: u64,
    /// Dimensions (2 for geometries).
    pub dims: usize,
    /// Bounding box of all records; absent when empty.
    pub extent: Option<Extent>,
    /// Geometry statistics (geometry datasets only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geometry: Option<GeoStats>,
    /// Vector statistics (vector datasets only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors: Option<VectorStats>,
}

fn holes(g: &Geometry) -> u64 {
    let p = |p: &Polygon| p.interiors().len() as u64;
    match g {
        Geometry::Polygon(x) => p(x),
        Geometry::MultiPolygon(m) => m.0.iter().map(p).sum(),
        Geometry::GeometryCollection(c) => c.0.iter().map(holes).sum(),
        _ => 0,
    }
}

fn geo_stats(recs: &[GeoRecord]) -> Option<GeoStats> {
    let mut kinds = BTreeMap::new();
    let (mut total_holes, mut with_holes, mut total_vertices) = (0, 0, 0u64);
    for r in recs {
        *kinds.entry(kind_name(&r.geometry).to_string()).or_insert(0) += 1;
        let h = holes(&r.geometry);
        total_holes += h;
        with_holes += u64::from(h > 0);
        total_vertices += vertex_count(&r.geometry) as u64;
    }
    Some(GeoStats {
        kinds,
        vertices: Summary::of(recs.iter().map(|r| vertex_count(&r.geometry) as f64))?,
        total_vertices,
        holes: total_holes,
        records_with_holes: with_holes,
        multipolygon_parts: Summary::of(recs.iter().filter_map(|r| match &r.geometry {
            Geometry::MultiPolygon(m) => Some(m.0.len() as f64),
            _ => None,
        })),
        bbox_area: Summary::of(recs.iter().map(|r| r.bbox.width() * r.bbox.height()))?,
    })
}

fn vector_stats(v: &Vectors) -> Option<VectorStats> {
    let first = v.rows().next()?;
    let mut s = VectorStats {
        min: first.to_vec(),
        max: first.to_vec(),
        mean: vec![0.0; v.dims()],
    };
    for row in v.rows() {
        for (i, x) in row.iter().enumerate() {
            s.min[i] = s.min[i].min(*x);
            s.max[i] = s.max[i].max(*x);
            s.mean[i] += x;
        }
    }
    s.mean.iter_mut().for_each(|m| *m /= v.len() as f64);
    Some(s)
}

/// Computes the statistics of `dataset`.
pub fn info(dataset: &Dataset) -> DatasetInfo {
    DatasetInfo {
        kind: match dataset {
            Dataset::Geo(_) => "geometries",
            Dataset::Vectors(_) => "vectors",
        },
        count: dataset.len() as u64,
        dims: dataset.dims(),
        extent: dataset.extent(),
        geometry: dataset.as_geo().and_then(geo_stats),
        vectors: dataset.as_vectors().and_then(vector_stats),
    }
}

fn num(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e7 || v.abs() < 1e-3) {
        format!("{v:.4e}")
    } else {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

fn summary(s: &Summary) -> String {
    format!(
        "min {}, mean {}, max {}",
        num(s.min),
        num(s.mean),
        num(s.max)
    )
}

impl fmt::Display for DatasetInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kind:        {}", self.kind)?;
        writeln!(f, "count:       {}", self.count)?;
        writeln!(f, "dimensions:  {}", self.dims)?;
        match &self.extent {
            Some(e) if e.dims() <= 4 => {
                let lo: Vec<_> = e.min.iter().map(|v| num(*v)).collect();
                let hi: Vec<_> = e.max.iter().map(|v| num(*v)).collect();
                writeln!(f, "extent:      [{}] .. [{}]", lo.join(", "), hi.join(", "))?;
            }
            Some(_) => writeln!(f, "extent:      see per-dimension ranges")?,
            None => writeln!(f, "extent:      (empty)")?,
        }
        if let Some(g) = &self.geometry {
            let kinds: Vec<String> = g.kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
            writeln!(f, "kinds:       {}", kinds.join(", "))?;
            writeln!(
                f,
                "vertices:    {} (total {})",
                summary(&g.vertices),
                g.total_vertices
            )?;
            writeln!(
                f,
                "holes:       {} in {} records",
                g.holes, g.records_with_holes
            )?;
            if let Some(p) = &g.multipolygon_parts {
                writeln!(f, "multi parts: {}", summary(p))?;
            }
            writeln!(f, "bbox area:   {}", summary(&g.bbox_area))?;
        }
        if let Some(v) = &self.vectors {
            writeln!(f, "per dimension (min / mean / max):")?;
            for i in 0..v.min.len() {
                writeln!(
                    f,
                    "  {:>4}: {} / {} / {}",
                    i,
                    num(v.min[i]),
                    num(v.mean[i]),
                    num(v.max[i])
                )?;
            }
        }
        Ok(())
    }
}
