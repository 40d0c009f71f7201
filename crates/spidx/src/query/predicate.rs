//! Spatial predicates of the refinement step, evaluated exactly on geometries with the
//! `geo` crate's DE-9IM relate, and the MBR test each one implies for the filter step.
//!
//! A predicate reads "object P query": `contains` returns the objects that contain the
//! query geometry, `within` those that lie within it, and so on (as PostGIS's
//! `ST_Contains(object, query)`).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use geo::relate::IntersectionMatrix;
use geo::{Coord, Geometry, MapCoords, Relate};
use serde::{Deserialize, Serialize};

use crate::index::MbrPredicate;
use crate::{Error, Result};

/// A topological predicate between an object and a query geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Predicate {
    /// They share at least one point.
    Intersects,
    /// The object contains the query (no query point in the object's exterior, interiors meet).
    Contains,
    /// The object lies within the query.
    Within,
    /// No query point lies outside the object.
    Covers,
    /// No object point lies outside the query.
    CoveredBy,
    /// Interiors meet, and each has points outside the other (same dimension).
    Overlaps,
    /// Boundaries meet, interiors do not.
    Touches,
    /// Topologically equal.
    Equals,
    /// No point in common.
    Disjoint,
}

impl Predicate {
    /// All predicates, in the order the documentation lists them.
    pub const ALL: [Predicate; 9] = [
        Predicate::Intersects,
        Predicate::Contains,
        Predicate::Within,
        Predicate::Covers,
        Predicate::CoveredBy,
        Predicate::Overlaps,
        Predicate::Touches,
        Predicate::Equals,
        Predicate::Disjoint,
    ];

    /// Parses a predicate name (`covered-by` and `coveredby` both work).
    pub fn parse(text: &str) -> Result<Self> {
        Ok(match text.to_ascii_lowercase().as_str() {
            "intersects" => Self::Intersects,
            "contains" => Self::Contains,
            "within" => Self::Within,
            "covers" => Self::Covers,
            "covered-by" | "coveredby" => Self::CoveredBy,
            "overlaps" => Self::Overlaps,
            "touches" | "meets" => Self::Touches,
            "equals" => Self::Equals,
            "disjoint" => Self::Disjoint,
            o => {
                return Err(Error::invalid(
                    "predicate",
                    format!("unknown predicate '{o}'; use intersects, contains, within, covers, covered-by, overlaps, touches, equals or disjoint"),
                ))
            }
        })
    }

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Self::Intersects => "intersects",
            Self::Contains => "contains",
            Self::Within => "within",
            Self::Covers => "covers",
            Self::CoveredBy => "covered-by",
            Self::Overlaps => "overlaps",
            Self::Touches => "touches",
            Self::Equals => "equals",
            Self::Disjoint => "disjoint",
        }
    }

    /// The MBR test that every object satisfying the predicate passes.
    pub fn filter(self) -> MbrPredicate {
        match self {
            Self::Intersects | Self::Overlaps | Self::Touches => MbrPredicate::Intersects,
            Self::Contains | Self::Covers => MbrPredicate::Contains,
            Self::Within | Self::CoveredBy => MbrPredicate::Within,
            Self::Equals => MbrPredicate::Equals,
            Self::Disjoint => MbrPredicate::All,
        }
    }

    /// Evaluates "object P query" exactly, for any finite coordinates.
    ///
    /// The `geo` crate's relate is exact (robust orientation tests) only while the products
    /// of coordinate differences it forms stay finite: beyond about ±1e154 they overflow to
    /// infinity and a polygon would never match. So geometries with huge (or tiny)
    /// coordinates are first scaled by a power of two, which is exact in binary floating
    /// point and preserves every topological relation (see [`exact_scale`]).
    ///
    /// Relate asserts its own invariants and panics on some invalid geometries (e.g.
    /// self-intersecting rings, georust/geo#1268); such a panic is caught and returned as an
    /// error, so one bad object fails its query with a message instead of the process.
    pub fn eval(self, object: &Geometry<f64>, query: &Geometry<f64>) -> Result<bool> {
        let m = relate_guarded(|| match exact_scale(object, query) {
            None => object.relate(query),
            Some(f) => {
                let scale = |g: &Geometry<f64>| {
                    g.map_coords(|c| Coord {
                        x: c.x * f,
                        y: c.y * f,
                    })
                };
                scale(object).relate(&scale(query))
            }
        })?;
        Ok(self.holds(&m))
    }

    /// Whether a DE-9IM matrix satisfies the predicate.
    fn holds(self, m: &IntersectionMatrix) -> bool {
        match self {
            Self::Intersects => m.is_intersects(),
            Self::Contains => m.is_contains(),
            Self::Within => m.is_within(),
            Self::Covers => m.is_covers(),
            Self::CoveredBy => m.is_coveredby(),
            Self::Overlaps => m.is_overlaps(),
            Self::Touches => m.is_touches(),
            Self::Equals => m.is_equal_topo(),
            Self::Disjoint => m.is_disjoint(),
        }
    }
}

thread_local! {
    /// Set while this thread runs a guarded relate: its panics are reported as errors, so
    /// the panic hook stays quiet for them.
    static IN_RELATE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `relate` and turns a panic inside it into an error. The process's panic hook is
/// wrapped once so that it stays silent for these panics only (every other panic is
/// reported as before).
fn relate_guarded(relate: impl FnOnce() -> IntersectionMatrix) -> Result<IntersectionMatrix> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_RELATE.with(Cell::get) {
                previous(info);
            }
        }));
    });
    IN_RELATE.with(|f| f.set(true));
    let out = catch_unwind(AssertUnwindSafe(relate));
    IN_RELATE.with(|f| f.set(false));
    out.map_err(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Error::invalid(
            "geometry",
            format!(
                "the exact predicate cannot be evaluated on it (the DE-9IM relate of the geo \
                 crate failed: {why}); such failures come from invalid geometries, e.g. a \
                 self-intersecting ring"
            ),
        )
    })
}

/// Coordinates above this magnitude (2^256, about 1.2e77) are scaled down before relate:
/// it squares and multiplies coordinate differences, which must stay below `f64::MAX`.
const HUGE: f64 = 1.157_920_892_373_162e77;
/// Coordinates all below this magnitude (2^-256) are scaled up, so products of differences
/// do not underflow to zero.
const TINY: f64 = 8.636_168_555_094_445e-78;

/// The power of two to multiply both geometries' coordinates by so that the largest
/// magnitude is about 2^256 (huge inputs) or about 1 (tiny inputs); `None` when they need
/// no scaling. Scaling by a power of two is exact unless a value underflows, which only
/// coordinates more than ~1000 binary orders of magnitude below the largest can do.
pub(crate) fn exact_scale(a: &Geometry<f64>, b: &Geometry<f64>) -> Option<f64> {
    let mut max = 0.0f64;
    for g in [a, b] {
        crate::data::for_each_coord(g, &mut |c| max = max.max(c.x.abs()).max(c.y.abs()));
    }
    if !max.is_finite() || max == 0.0 {
        return None;
    }
    let exponent = max.log2().floor() as i32;
    let target = if max > HUGE {
        256
    } else if max < TINY {
        0
    } else {
        return None;
    };
    Some(2f64.powi((target - exponent).clamp(-1000, 1000)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use geo::{polygon, Point};
    use proptest::prelude::*;

    #[test]
    fn predicates_on_a_polygon_with_a_hole() {
        let donut: Geometry<f64> = polygon!(
            exterior: [(x: 0., y: 0.), (x: 10., y: 0.), (x: 10., y: 10.), (x: 0., y: 10.), (x: 0., y: 0.)],
            interiors: [[(x: 4., y: 4.), (x: 6., y: 4.), (x: 6., y: 6.), (x: 4., y: 6.), (x: 4., y: 4.)]],
        )
        .into();
        let in_hole: Geometry<f64> = Point::new(5.0, 5.0).into();
        let inside: Geometry<f64> = Point::new(2.0, 2.0).into();
        let on_edge: Geometry<f64> = Point::new(0.0, 5.0).into();
        assert!(
            Predicate::Disjoint.eval(&donut, &in_hole).unwrap(),
            "the hole is outside"
        );
        assert!(!Predicate::Intersects.eval(&donut, &in_hole).unwrap());
        assert!(Predicate::Contains.eval(&donut, &inside).unwrap());
        assert!(Predicate::Touches.eval(&donut, &on_edge).unwrap());
        assert!(!Predicate::Contains.eval(&donut, &on_edge).unwrap());
        assert!(Predicate::Covers.eval(&donut, &on_edge).unwrap());
        assert!(Predicate::Within.eval(&inside, &donut).unwrap());
        assert!(Predicate::Equals.eval(&donut, &donut).unwrap());
        for p in Predicate::ALL {
            assert_eq!(Predicate::parse(p.name()).unwrap(), p);
        }
        assert!(Predicate::parse("near").is_err());
    }

    fn times(g: &Geometry<f64>, f: f64) -> Geometry<f64> {
        g.map_coords(|c| Coord {
            x: c.x * f,
            y: c.y * f,
        })
    }

    #[test]
    fn huge_coordinates_match() {
        // The case: a polygon beyond ±1e154 must still contain, intersect, cover.
        let big: Geometry<f64> = polygon!(
            (x: -3e300, y: -2e300), (x: 4e300, y: -2e300), (x: 4e300, y: 5e300), (x: -3e300, y: 5e300), (x: -3e300, y: -2e300)
        )
        .into();
        let inside: Geometry<f64> = Point::new(1e299, 2e299).into();
        let outside: Geometry<f64> = Point::new(5e300, 0.0).into();
        assert!(Predicate::Intersects.eval(&big, &inside).unwrap());
        assert!(Predicate::Contains.eval(&big, &inside).unwrap());
        assert!(Predicate::Within.eval(&inside, &big).unwrap());
        assert!(Predicate::Disjoint.eval(&big, &outside).unwrap());
        assert!(Predicate::Equals.eval(&big, &big).unwrap());
        let tri: Geometry<f64> =
            polygon!((x: 0., y: 0.), (x: 2e154, y: 0.), (x: 0., y: 2e154), (x: 0., y: 0.)).into();
        assert!(Predicate::Contains
            .eval(&tri, &Point::new(5e153, 5e153).into())
            .unwrap());
        assert!(Predicate::Touches
            .eval(&tri, &Point::new(1e154, 1e154).into())
            .unwrap());
        assert!(!Predicate::Intersects
            .eval(&tri, &Point::new(1.5e154, 1e154).into())
            .unwrap());
        // Tiny coordinates: products of differences must not underflow to zero.
        let small: Geometry<f64> =
            polygon!((x: 0., y: 0.), (x: 1e-300, y: 0.), (x: 0., y: 1e-300), (x: 0., y: 0.)).into();
        assert!(Predicate::Contains
            .eval(&small, &Point::new(2e-301, 2e-301).into())
            .unwrap());
        assert!(!Predicate::Intersects
            .eval(&small, &Point::new(6e-301, 6e-301).into())
            .unwrap());
        let unit: Geometry<f64> = Point::new(3.0, 4.0).into();
        assert_eq!(
            exact_scale(&unit, &unit),
            None,
            "ordinary data is not touched"
        );
    }

    fn shape() -> impl Strategy<Value = Geometry<f64>> {
        let c = || -8i32..8;
        prop_oneof![
            (c(), c()).prop_map(|(x, y)| Point::new(x as f64, y as f64).into()),
            (c(), c(), 1i32..8, 1i32..8).prop_map(|(x, y, w, h)| {
                let (x, y, w, h) = (x as f64, y as f64, w as f64, h as f64);
                polygon!((x: x, y: y), (x: x + w, y: y), (x: x + w, y: y + h), (x: x, y: y + h), (x: x, y: y)).into()
            }),
            (c(), c(), c(), c(), c(), c()).prop_filter_map("degenerate", |(a, b, c2, d, e, f)| {
                let area2 = (c2 - a) * (f - b) - (e - a) * (d - b);
                (area2 != 0).then(|| {
                    let p = |x: i32, y: i32| Coord { x: x as f64, y: y as f64 };
                    Geometry::Polygon(geo::Polygon::new(
                        geo::LineString(vec![p(a, b), p(c2, d), p(e, f), p(a, b)]),
                        vec![],
                    ))
                })
            }),
            (c(), c(), c(), c()).prop_filter_map("point line", |(a, b, c2, d)| {
                ((a, b) != (c2, d)).then(|| {
                    Geometry::LineString(geo::LineString::from(vec![
                        (a as f64, b as f64),
                        (c2 as f64, d as f64),
                    ]))
                })
            }),
        ]
    }

    #[test]
    fn a_panic_inside_relate_is_an_error_naming_its_cause() {
        let err = relate_guarded(|| panic!("node should have been labeled by now")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("node should have been labeled by now"),
            "{msg}"
        );
        assert!(msg.contains("invalid geometries"), "{msg}");
        // The guard is left: the next relate runs normally, and a formatted panic message
        // is kept too.
        let (a, b) = (Point::new(0.0, 0.0), Point::new(1.0, 1.0));
        assert!(relate_guarded(|| a.relate(&b)).unwrap().is_disjoint());
        let err = relate_guarded(|| panic!("edge {} of {}", 3, 4)).unwrap_err();
        assert!(err.to_string().contains("edge 3 of 4"), "{err}");
        assert!(!IN_RELATE.with(Cell::get));
    }

    /// Rings of up to 7 integer points in a small grid: many self-intersect, repeat points
    /// or collapse, the inputs on which relate's invariants are weakest.
    fn ring() -> impl proptest::strategy::Strategy<Value = Geometry<f64>> {
        use proptest::prelude::*;
        proptest::collection::vec((0i32..6, 0i32..6), 3..8).prop_map(|pts| {
            let mut ring: Vec<(f64, f64)> =
                pts.iter().map(|&(x, y)| (x as f64, y as f64)).collect();
            ring.push(ring[0]);
            Geometry::Polygon(geo::Polygon::new(geo::LineString::from(ring), vec![]))
        })
    }

    proptest::proptest! {
        /// Whatever the geometries (valid or not), every predicate returns an answer or an
        /// error; it never panics.
        #[test]
        fn invalid_rings_never_panic(a in ring(), b in ring()) {
            for p in Predicate::ALL {
                let _ = p.eval(&a, &b);
            }
        }

        /// Every predicate gives the same answer on small integer shapes and on the very same
        /// shapes scaled by huge or tiny powers of two (an exact reference: scaling by 2^k
        /// is exact and preserves topology).
        #[test]
        fn scaled_shapes_keep_every_relation(a in shape(), b in shape()) {
            for k in [200, 300, 520, 700, 1000, -300, -700] {
                let f = 2f64.powi(k);
                let (sa, sb) = (times(&a, f), times(&b, f));
                for p in Predicate::ALL {
                    proptest::prop_assert_eq!(p.eval(&sa, &sb).unwrap(), p.eval(&a, &b).unwrap(), "{:?} at 2^{}: {:?} / {:?}", p, k, a, b);
                }
            }
        }
    }
}
