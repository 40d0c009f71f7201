//! The query layer above the index: exact predicates ([`predicate`]) for the refinement
//! step of `DESIGN.md` section 7.

pub mod predicate;

pub use predicate::Predicate;

use geo::Geometry;

use crate::{Error, Result};

/// Parses a query geometry written as WKT (`POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))`),
/// rejecting empty geometries and non-finite coordinates.
pub fn parse_wkt(text: &str) -> Result<Geometry<f64>> {
    use wkt::TryFromWkt;
    let g = Geometry::<f64>::try_from_wkt_str(text)
        .map_err(|e| Error::invalid("query geometry", format!("'{text}' is not valid WKT: {e}")))?;
    let mut finite = true;
    let mut any = false;
    crate::data::for_each_coord(&g, &mut |c| {
        any = true;
        finite &= c.x.is_finite() && c.y.is_finite();
    });
    if !any {
        return Err(Error::invalid("query geometry", "empty geometry"));
    }
    if !finite {
        return Err(Error::invalid("query geometry", "non-finite coordinate"));
    }
    Ok(g)
}
