//! The query layer above the index: exact predicates ([`predicate`]) for the refinement
//! step of architecture §7.

pub(crate) mod predicate;

pub use predicate::Predicate;

use geo::Geometry;

use crate::{Error, Result};

/// Parses a query geometry written as WKT (`POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))`),
/// rejecting empty geometries and non-finite coordinates.
pub fn parse_wkt(text: &str) -> Result<Geometry<f64>> {
    use wkt::TryFromWkt;
    let depth = crate::data::formats::text::wkt_nesting(text);
    if depth > crate::data::formats::MAX_NESTING {
        return Err(Error::invalid(
            "query geometry",
            format!(
                "parentheses are nested {depth} levels deep, more than the limit of {}",
                crate::data::formats::MAX_NESTING
            ),
        ));
    }
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
        return Err(Error::invalid(
            "query geometry",
            "a coordinate is NaN or infinite; every coordinate must be a finite number",
        ));
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_geometries_are_checked() {
        assert!(parse_wkt("POLYGON((0 0, 1 0, 1 1, 0 0))").is_ok());
        // 7,000 nested collections: a clear error, not a stack overflow.
        let deep = format!(
            "{}POINT(1 2){}",
            "GEOMETRYCOLLECTION(".repeat(7000),
            ")".repeat(7000)
        );
        let e = parse_wkt(&deep).unwrap_err().to_string();
        assert!(e.contains("nested 7001 levels deep"), "{e}");
        let e = parse_wkt("POINT(1e400 1)").unwrap_err().to_string();
        assert!(e.contains("NaN or infinite"), "{e}");
        assert!(parse_wkt("POINT EMPTY").is_err());
    }
}
