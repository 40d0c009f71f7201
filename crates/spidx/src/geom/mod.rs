//! Geometry used by the index layer: axis-aligned boxes ([`Rect`]) in `D` dimensions,
//! the minimum bounding rectangles (MBRs) that tree nodes store. Exact geometries (polygons
//! with holes) live in the object store and are tested with the `geo` crate.

mod dist;
mod rect;

pub use dist::Distance;
pub use rect::Rect;
