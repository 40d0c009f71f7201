//! Spatial predicates of the refinement step, evaluated exactly on geometries with the
//! `geo` crate's DE-9IM relate, and the MBR test each one implies for the filter step.
//!
//! A predicate reads "object P query": `contains` returns the objects that contain the
//! query geometry, `within` those that lie within it, and so on (as PostGIS's
//! `ST_Contains(object, query)`).

use geo::{Geometry, Relate};
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

    /// Evaluates "object P query" exactly.
    pub fn eval(self, object: &Geometry<f64>, query: &Geometry<f64>) -> bool {
        let m = object.relate(query);
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

#[cfg(test)]
mod tests {
    use super::*;
    use geo::{polygon, Point};

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
            Predicate::Disjoint.eval(&donut, &in_hole),
            "the hole is outside"
        );
        assert!(!Predicate::Intersects.eval(&donut, &in_hole));
        assert!(Predicate::Contains.eval(&donut, &inside));
        assert!(Predicate::Touches.eval(&donut, &on_edge));
        assert!(!Predicate::Contains.eval(&donut, &on_edge));
        assert!(Predicate::Covers.eval(&donut, &on_edge));
        assert!(Predicate::Within.eval(&inside, &donut));
        assert!(Predicate::Equals.eval(&donut, &donut));
        for p in Predicate::ALL {
            assert_eq!(Predicate::parse(p.name()).unwrap(), p);
        }
        assert!(Predicate::parse("near").is_err());
    }
}
