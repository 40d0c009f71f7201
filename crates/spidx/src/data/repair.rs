//! Validation and repair: turns a [`RawGeom`] as read into a `geo_types::Geometry`, or
//! says why the record must be skipped.
//!
//! The rules (they are the contract of every reader, and `spidx dataset import` documents
//! them to users):
//!
//! | problem | action |
//! |---|---|
//! | NaN or infinite coordinate anywhere | skip the record (`non_finite_coordinate`) |
//! | no coordinates at all | skip (`empty_geometry`) |
//! | consecutive repeated points | remove them (`repeated_vertices`) |
//! | unclosed ring | close it by appending its first point (`closed_ring`) |
//! | shell with < 4 points after closing / without area | skip (`ring_too_short` / `zero_area_ring`) |
//! | such a hole | drop the hole (`dropped_hole`) |
//! | unusable part of a multi-geometry | drop the part (`dropped_part`); skip if none is left |
//! | line with < 2 distinct points | skip (`degenerate_line`) |
//! | self-intersecting ring, hole outside its shell | keep and warn, or skip with [`Policy::skip_invalid`] |
//! | more than [`MANY_VERTICES`] vertices | keep and warn (`many_vertices`) |
//!
//! Self-intersections are *kept* by default: the index layer works on bounding boxes, which
//! are well defined for any ring, and real datasets (OSM buildings) contain a few such
//! polygons that PostGIS-based experiments also kept. Skipping them silently would change
//! the dataset; the warning tells the user that exact-geometry refinement on those records
//! may be unreliable. Points, lines and collections are kept (they have bounding boxes and
//! refinement predicates) unless [`Policy::polygons_only`] is set.

use super::raw::{Path, RawGeom};
use super::report::{Issue, MANY_VERTICES};
use geo_types::{
    Coord, Geometry, GeometryCollection, LineString, MultiLineString, MultiPoint, MultiPolygon,
    Point, Polygon,
};

/// What to do with records that are readable but questionable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Policy {
    /// Skip (rather than keep with a warning) self-intersecting polygons and holes outside shells.
    pub skip_invalid: bool,
    /// Skip everything that is not a polygon or multipolygon.
    pub polygons_only: bool,
}

/// Why a record is skipped: the issue and a detail for the message.
pub(crate) type Skip = (Issue, String);

/// Repairs notes on a kept record.
pub(crate) type Notes = Vec<(Issue, String)>;

/// Checks and repairs `raw`. `notes` receives repairs and warnings of a kept record.
pub(crate) fn finish(raw: RawGeom, policy: &Policy, notes: &mut Notes) -> Result<Geometry, Skip> {
    let mut bad = None;
    let mut any = false;
    raw.for_each_coord(&mut |c| {
        any = true;
        if bad.is_none() && !(c.x.is_finite() && c.y.is_finite()) {
            bad = Some(*c);
        }
    });
    if let Some(c) = bad {
        return Err((
            Issue::NonFiniteCoordinate,
            format!("coordinate ({}, {})", c.x, c.y),
        ));
    }
    if !any {
        return Err((Issue::EmptyGeometry, String::new()));
    }
    let polygonal = matches!(raw, RawGeom::Polygon(_) | RawGeom::MultiPolygon(_));
    if policy.polygons_only && !polygonal {
        return Err((Issue::NotPolygonal, kind_of_raw(&raw).to_string()));
    }
    let g = convert(raw, policy, notes)?;
    let n = vertex_count(&g);
    if n > MANY_VERTICES {
        notes.push((Issue::ManyVertices, format!("{n} vertices")));
    }
    Ok(g)
}

fn kind_of_raw(raw: &RawGeom) -> &'static str {
    match raw {
        RawGeom::Point(_) => "point",
        RawGeom::MultiPoint(_) => "multipoint",
        RawGeom::Line(_) => "linestring",
        RawGeom::MultiLine(_) => "multilinestring",
        RawGeom::Polygon(_) => "polygon",
        RawGeom::MultiPolygon(_) => "multipolygon",
        RawGeom::Collection(_) => "geometrycollection",
    }
}

fn convert(raw: RawGeom, policy: &Policy, notes: &mut Notes) -> Result<Geometry, Skip> {
    let empty = || (Issue::EmptyGeometry, String::new());
    Ok(match raw {
        RawGeom::Point(None) => return Err(empty()),
        RawGeom::Point(Some(c)) => Geometry::Point(Point(c)),
        RawGeom::MultiPoint(ps) if ps.is_empty() => return Err(empty()),
        RawGeom::MultiPoint(ps) => {
            Geometry::MultiPoint(MultiPoint(ps.into_iter().map(Point).collect()))
        }
        RawGeom::Line(l) => Geometry::LineString(fix_line(l, notes)?),
        RawGeom::MultiLine(ls) => {
            let ls = fix_parts(ls, notes, fix_line)?;
            Geometry::MultiLineString(MultiLineString(ls))
        }
        RawGeom::Polygon(rings) => Geometry::Polygon(fix_polygon(rings, policy, notes)?),
        RawGeom::MultiPolygon(ps) => {
            let ps = fix_parts(ps, notes, |p, n| fix_polygon(p, policy, n))?;
            Geometry::MultiPolygon(MultiPolygon(ps))
        }
        RawGeom::Collection(gs) => {
            let gs = fix_parts(gs, notes, |g, n| convert(g, policy, n))?;
            Geometry::GeometryCollection(GeometryCollection(gs))
        }
    })
}

/// Fixes every part; drops the unusable ones; fails with the first failure if none is left.
fn fix_parts<R, T>(
    parts: Vec<R>,
    notes: &mut Notes,
    mut fix: impl FnMut(R, &mut Notes) -> Result<T, Skip>,
) -> Result<Vec<T>, Skip> {
    if parts.is_empty() {
        return Err((Issue::EmptyGeometry, String::new()));
    }
    let mut out = Vec::with_capacity(parts.len());
    let mut first_err = None;
    let mut dropped = 0;
    for (i, p) in parts.into_iter().enumerate() {
        match fix(p, notes) {
            Ok(t) => out.push(t),
            Err((issue, detail)) => {
                dropped += 1;
                first_err.get_or_insert((issue, format!("part {i}: {detail}")));
            }
        }
    }
    match first_err {
        Some(e) if out.is_empty() => Err(e),
        Some((issue, detail)) => {
            notes.push((
                Issue::DroppedPart,
                format!("{dropped} part(s) dropped, first: {issue}: {detail}"),
            ));
            Ok(out)
        }
        None => Ok(out),
    }
}

/// Removes consecutive repeated points, noting it.
fn dedup(mut path: Path, notes: &mut Notes) -> Path {
    let before = path.len();
    path.dedup();
    if path.len() != before {
        notes.push((
            Issue::RepeatedVertices,
            format!("{} repeated point(s)", before - path.len()),
        ));
    }
    path
}

fn fix_line(line: Path, notes: &mut Notes) -> Result<LineString, Skip> {
    if line.is_empty() {
        return Err((Issue::EmptyGeometry, String::new()));
    }
    let line = dedup(line, notes);
    if line.len() < 2 {
        return Err((Issue::DegenerateLine, "fewer than 2 distinct points".into()));
    }
    Ok(LineString(line))
}

/// Closes and checks one ring. Errors name the problem for the caller to classify.
fn fix_ring(ring: Path, which: &str, notes: &mut Notes) -> Result<LineString, Skip> {
    let mut ring = dedup(ring, notes);
    if ring.len() >= 2 && ring.first() != ring.last() {
        ring.push(ring[0]);
        notes.push((Issue::ClosedRing, format!("{which} was not closed")));
    }
    if ring.len() < 4 {
        return Err((
            Issue::RingTooShort,
            format!(
                "{which} has {} point(s), a ring needs at least 4",
                ring.len()
            ),
        ));
    }
    if collinear(&ring) {
        return Err((Issue::ZeroAreaRing, format!("{which} encloses no area")));
    }
    Ok(LineString(ring))
}

fn fix_polygon(rings: Vec<Path>, policy: &Policy, notes: &mut Notes) -> Result<Polygon, Skip> {
    let mut it = rings.into_iter();
    let shell = match it.next() {
        Some(r) if !r.is_empty() => r,
        _ => return Err((Issue::EmptyGeometry, String::new())),
    };
    let shell = fix_ring(shell, "shell", notes)?;
    let mut holes = Vec::new();
    for (i, r) in it.enumerate() {
        if r.is_empty() {
            continue;
        }
        match fix_ring(r, &format!("hole {i}"), notes) {
            Ok(h) => holes.push(h),
            Err((_, detail)) => notes.push((Issue::DroppedHole, detail)),
        }
    }
    let mut problems = Vec::new();
    if ring_self_intersects(&shell.0) {
        problems.push((Issue::SelfIntersection, "shell crosses itself".to_string()));
    }
    for (i, h) in holes.iter().enumerate() {
        if ring_self_intersects(&h.0) {
            problems.push((Issue::SelfIntersection, format!("hole {i} crosses itself")));
        }
        if !point_in_ring(h.0[0], &shell.0) {
            problems.push((
                Issue::HoleOutsideShell,
                format!("hole {i} is outside the shell"),
            ));
        }
    }
    if let Some((issue, detail)) = problems.first() {
        if policy.skip_invalid {
            return Err((Issue::Invalid, format!("{issue}: {detail}")));
        }
    }
    notes.extend(problems);
    Ok(Polygon::new(shell, holes))
}

/// Twice the signed area of a closed ring (positive when counter-clockwise).
pub(crate) fn signed_area(ring: &[Coord]) -> f64 {
    ring.windows(2)
        .map(|w| w[0].x * w[1].y - w[1].x * w[0].y)
        .sum()
}

/// Whether all points of `ring` lie on one line (the ring encloses no area). The offsets
/// from the first point are divided by their largest magnitude first, so a ring whose
/// coordinates are tiny (1e-300) or huge (1e300) is not called flat because its
/// products underflow or overflow.
fn collinear(ring: &[Coord]) -> bool {
    let a = ring[0];
    let scale = ring
        .iter()
        .map(|p| (p.x - a.x).abs().max((p.y - a.y).abs()))
        .fold(0.0, f64::max);
    if scale == 0.0 || !scale.is_finite() {
        return scale == 0.0;
    }
    let rel = |p: &Coord| Coord {
        x: (p.x - a.x) / scale,
        y: (p.y - a.y) / scale,
    };
    let origin = Coord { x: 0.0, y: 0.0 };
    match ring.iter().map(rel).find(|p| *p != origin) {
        None => true,
        Some(b) => ring.iter().all(|p| orient(origin, b, rel(p)) == 0.0),
    }
}

/// Whether `p` lies inside the closed `ring` or on its boundary (even-odd rule).
pub(crate) fn point_in_ring(p: Coord, ring: &[Coord]) -> bool {
    let mut inside = false;
    for w in ring.windows(2) {
        let (a, b) = (w[0], w[1]);
        if orient(a, b, p) == 0.0 && within(a.x, b.x, p.x) && within(a.y, b.y, p.y) {
            return true;
        }
        if (a.y > p.y) != (b.y > p.y) {
            let x = a.x + (p.y - a.y) * (b.x - a.x) / (b.y - a.y);
            if p.x < x {
                inside = !inside;
            }
        }
    }
    inside
}

fn orient(a: Coord, b: Coord, c: Coord) -> f64 {
    (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
}

fn within(a: f64, b: f64, v: f64) -> bool {
    a.min(b) <= v && v <= a.max(b)
}

/// Whether closed segments `p1p2` and `q1q2` share any point.
fn segments_intersect(p1: Coord, p2: Coord, q1: Coord, q2: Coord) -> bool {
    let d1 = orient(q1, q2, p1);
    let d2 = orient(q1, q2, p2);
    let d3 = orient(p1, p2, q1);
    let d4 = orient(p1, p2, q2);
    if ((d1 > 0.0 && d2 < 0.0) || (d1 < 0.0 && d2 > 0.0))
        && ((d3 > 0.0 && d4 < 0.0) || (d3 < 0.0 && d4 > 0.0))
    {
        return true;
    }
    let on = |a: Coord, b: Coord, c: Coord| within(a.x, b.x, c.x) && within(a.y, b.y, c.y);
    (d1 == 0.0 && on(q1, q2, p1))
        || (d2 == 0.0 && on(q1, q2, p2))
        || (d3 == 0.0 && on(p1, p2, q1))
        || (d4 == 0.0 && on(p1, p2, q2))
}

/// Whether two non-adjacent edges of the closed `ring` cross or touch.
///
/// A sweep over the x-sorted edges keeps it near O(n log n) for the long rings of real
/// data (coastlines, big buildings) while staying exact for small ones.
pub(crate) fn ring_self_intersects(ring: &[Coord]) -> bool {
    let n = ring.len().saturating_sub(1); // number of edges
    if n < 4 {
        return false;
    }
    let adjacent = |a: usize, b: usize| {
        let d = a.abs_diff(b);
        d == 1 || d == n - 1
    };
    let edge = |i: usize| (ring[i], ring[i + 1]);
    let min_x = |i: usize| ring[i].x.min(ring[i + 1].x);
    let max_x = |i: usize| ring[i].x.max(ring[i + 1].x);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| min_x(a).total_cmp(&min_x(b)));
    let mut active: Vec<usize> = Vec::new();
    for &s in &order {
        let sx = min_x(s);
        active.retain(|&a| max_x(a) >= sx);
        let (p1, p2) = edge(s);
        let (sy0, sy1) = (p1.y.min(p2.y), p1.y.max(p2.y));
        for &a in &active {
            if adjacent(a, s) {
                continue;
            }
            let (q1, q2) = edge(a);
            if q1.y.max(q2.y) < sy0 || q1.y.min(q2.y) > sy1 {
                continue;
            }
            if segments_intersect(p1, p2, q1, q2) {
                return true;
            }
        }
        active.push(s);
    }
    false
}

/// The geometry kind's name as used in reports (`polygon`, `multipolygon`, ...).
pub(crate) fn kind_name(g: &Geometry) -> &'static str {
    match g {
        Geometry::Point(_) => "point",
        Geometry::Line(_) => "line",
        Geometry::LineString(_) => "linestring",
        Geometry::Polygon(_) => "polygon",
        Geometry::MultiPoint(_) => "multipoint",
        Geometry::MultiLineString(_) => "multilinestring",
        Geometry::MultiPolygon(_) => "multipolygon",
        Geometry::GeometryCollection(_) => "geometrycollection",
        Geometry::Rect(_) => "rect",
        Geometry::Triangle(_) => "triangle",
    }
}

/// Number of stored points of a geometry (closing points included, as PostGIS counts them).
pub(crate) fn vertex_count(g: &Geometry) -> usize {
    match g {
        Geometry::Point(_) => 1,
        Geometry::Line(_) => 2,
        Geometry::LineString(l) => l.0.len(),
        Geometry::Polygon(p) => polygon_vertices(p),
        Geometry::MultiPoint(m) => m.0.len(),
        Geometry::MultiLineString(m) => m.0.iter().map(|l| l.0.len()).sum(),
        Geometry::MultiPolygon(m) => m.0.iter().map(polygon_vertices).sum(),
        Geometry::GeometryCollection(c) => c.0.iter().map(vertex_count).sum(),
        Geometry::Rect(_) => 5,
        Geometry::Triangle(_) => 4,
    }
}

fn polygon_vertices(p: &Polygon) -> usize {
    p.exterior().0.len() + p.interiors().iter().map(|r| r.0.len()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(x: f64, y: f64) -> Coord {
        Coord { x, y }
    }

    fn square(x0: f64, y0: f64, s: f64) -> Path {
        vec![
            c(x0, y0),
            c(x0 + s, y0),
            c(x0 + s, y0 + s),
            c(x0, y0 + s),
            c(x0, y0),
        ]
    }

    fn run(raw: RawGeom) -> (Result<Geometry, Skip>, Notes) {
        let mut notes = Vec::new();
        let r = finish(raw, &Policy::default(), &mut notes);
        (r, notes)
    }

    #[test]
    fn closes_unclosed_rings() {
        let mut ring = square(0.0, 0.0, 1.0);
        ring.pop();
        let (g, notes) = run(RawGeom::Polygon(vec![ring]));
        let g = g.unwrap();
        assert_eq!(vertex_count(&g), 5);
        assert_eq!(notes[0].0, Issue::ClosedRing);
    }

    #[test]
    fn skips_short_rings_nan_and_empty() {
        let (g, _) = run(RawGeom::Polygon(vec![vec![
            c(0., 0.),
            c(1., 0.),
            c(0., 0.),
        ]]));
        assert_eq!(g.unwrap_err().0, Issue::RingTooShort);
        let (g, _) = run(RawGeom::Polygon(vec![vec![
            c(0., 0.),
            c(1., f64::NAN),
            c(1., 1.),
        ]]));
        assert_eq!(g.unwrap_err().0, Issue::NonFiniteCoordinate);
        let (g, _) = run(RawGeom::Polygon(vec![]));
        assert_eq!(g.unwrap_err().0, Issue::EmptyGeometry);
        let (g, _) = run(RawGeom::Point(None));
        assert_eq!(g.unwrap_err().0, Issue::EmptyGeometry);
        let (g, _) = run(RawGeom::Polygon(vec![vec![
            c(0., 0.),
            c(1., 1.),
            c(2., 2.),
            c(0., 0.),
        ]]));
        assert_eq!(g.unwrap_err().0, Issue::ZeroAreaRing);
        let (g, _) = run(RawGeom::Line(vec![c(1., 1.), c(1., 1.)]));
        assert_eq!(g.unwrap_err().0, Issue::DegenerateLine);
    }

    /// Flatness is judged on the ring's own scale: a square of side 1e-300 (or at 1e300)
    /// encloses area, a line of such points does not.
    #[test]
    fn tiny_and_huge_rings_keep_their_area() {
        for (side, at) in [
            (1e-300, 0.0),
            (1e-300, 1e-290),
            (1e290, -1e300),
            (1e300, 0.0),
        ] {
            let (g, _) = run(RawGeom::Polygon(vec![square(at, at, side)]));
            assert!(g.is_ok(), "a square of side {side} at {at}: {:?}", g.err());
        }
        for side in [1e-300, 1e300] {
            let (g, _) = run(RawGeom::Polygon(vec![vec![
                c(0.0, 0.0),
                c(side, side),
                c(side / 2.0, side / 2.0),
                c(0.0, 0.0),
            ]]));
            assert_eq!(g.unwrap_err().0, Issue::ZeroAreaRing, "side {side}");
        }
    }

    #[test]
    fn drops_bad_holes_and_parts() {
        let bad_hole = vec![c(0.2, 0.2), c(0.3, 0.3)];
        let (g, notes) = run(RawGeom::Polygon(vec![square(0., 0., 1.), bad_hole]));
        match g.unwrap() {
            Geometry::Polygon(p) => assert!(p.interiors().is_empty()),
            other => panic!("{other:?}"),
        }
        assert!(notes.iter().any(|n| n.0 == Issue::DroppedHole));
        let (g, notes) = run(RawGeom::MultiPolygon(vec![
            vec![square(0., 0., 1.)],
            vec![vec![c(5., 5.)]],
        ]));
        match g.unwrap() {
            Geometry::MultiPolygon(m) => assert_eq!(m.0.len(), 1),
            other => panic!("{other:?}"),
        }
        assert!(notes.iter().any(|n| n.0 == Issue::DroppedPart));
    }

    #[test]
    fn self_intersections_are_kept_with_warning_or_skipped() {
        let bowtie = vec![c(0., 0.), c(1., 1.), c(1., 0.), c(0., 1.), c(0., 0.)];
        let (g, notes) = run(RawGeom::Polygon(vec![bowtie.clone()]));
        assert!(g.is_ok());
        assert_eq!(notes[0].0, Issue::SelfIntersection);
        let policy = Policy {
            skip_invalid: true,
            ..Default::default()
        };
        let r = finish(RawGeom::Polygon(vec![bowtie]), &policy, &mut Vec::new());
        assert_eq!(r.unwrap_err().0, Issue::Invalid);
        // A hole outside its shell.
        let (g, notes) = run(RawGeom::Polygon(vec![
            square(0., 0., 1.),
            square(5., 5., 1.),
        ]));
        assert!(g.is_ok());
        assert_eq!(notes[0].0, Issue::HoleOutsideShell);
    }

    #[test]
    fn polygons_only_skips_points() {
        let policy = Policy {
            polygons_only: true,
            ..Default::default()
        };
        let r = finish(RawGeom::Point(Some(c(1., 2.))), &policy, &mut Vec::new());
        assert_eq!(r.unwrap_err().0, Issue::NotPolygonal);
    }

    #[test]
    fn sweep_agrees_with_brute_force() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..500 {
            let n = rng.gen_range(4..12);
            let mut ring: Path = (0..n)
                .map(|_| c(rng.gen_range(0..5) as f64, rng.gen_range(0..5) as f64))
                .collect();
            ring.dedup();
            if ring.len() < 3 {
                continue;
            }
            ring.push(ring[0]);
            let e = ring.len() - 1;
            let mut brute = false;
            for i in 0..e {
                for j in i + 1..e {
                    let d = j - i;
                    if e >= 4 && (d == 1 || d == e - 1) {
                        continue;
                    }
                    if e < 4 {
                        continue;
                    }
                    if segments_intersect(ring[i], ring[i + 1], ring[j], ring[j + 1]) {
                        brute = true;
                    }
                }
            }
            assert_eq!(ring_self_intersects(&ring), brute, "{ring:?}");
        }
        assert!(!ring_self_intersects(&square(0., 0., 1.)));
    }

    #[test]
    fn point_in_ring_works() {
        let sq = square(0., 0., 2.);
        assert!(point_in_ring(c(1., 1.), &sq));
        assert!(point_in_ring(c(0., 1.), &sq));
        assert!(!point_in_ring(c(3., 1.), &sq));
    }
}
