//! Geometry used by the index layer: axis-aligned boxes ([`Rect`]) in `D` dimensions,
//! the minimum bounding rectangles (MBRs) that tree nodes store. Exact geometries (polygons
//! with holes) live in the object store and are tested with the `geo` crate.
//!
//! The dimensions an index can have ([`SUPPORTED_DIMS`]) and the dispatch from a runtime
//! dimension to the compiled instance ([`crate::with_dims!`]) live here, at the bottom of
//! the layers (architecture §2), so that every layer above can dispatch on them.

mod dist;
mod rect;

pub use dist::Distance;
pub use rect::Rect;

/// Dimensions an index can have (each is a separate compiled instance of the trees).
pub const SUPPORTED_DIMS: [usize; 12] = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32];

/// Runs `$body` with a constant `$D` equal to the runtime dimension `$dims`, which must
/// be one of [`SUPPORTED_DIMS`]; otherwise evaluates to an error (converted with `.into()`).
#[macro_export]
macro_rules! with_dims {
    ($dims:expr, $D:ident => $body:expr) => {{
        macro_rules! arm {
            ($n:literal) => {{
                const $D: usize = $n;
                $body
            }};
        }
        match $dims {
            2 => arm!(2),
            3 => arm!(3),
            4 => arm!(4),
            5 => arm!(5),
            6 => arm!(6),
            8 => arm!(8),
            10 => arm!(10),
            12 => arm!(12),
            16 => arm!(16),
            20 => arm!(20),
            24 => arm!(24),
            32 => arm!(32),
            d => Err($crate::Error::invalid(
                "dimensions",
                format!(
                    "{d} is not supported; supported: {:?}",
                    $crate::geom::SUPPORTED_DIMS
                ),
            )
            .into()),
        }
    }};
}
