//! The raw geometry every reader produces before [`super::repair`] checks it.
//!
//! `geo_types` silently closes rings when a polygon is built, which would hide exactly the
//! problems an import must count. So readers first build a [`RawGeom`] (rings as read,
//! possibly unclosed, possibly NaN) and [`super::repair::finish`] turns it into a
//! `geo_types::Geometry` while noting each repair. [`RawBuilder`] builds a `RawGeom` from
//! any geozero source (FlatGeobuf, WKB).

use geo_types::Coord;
use geozero::error::{GeozeroError, Result as GzResult};
use geozero::GeomProcessor;

/// A sequence of points as read: a line or a (possibly unclosed) ring.
pub(crate) type Path = Vec<Coord<f64>>;

/// A geometry as read from a source, before validation and repair.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawGeom {
    /// A point; `None` is `POINT EMPTY`.
    Point(Option<Coord<f64>>),
    MultiPoint(Vec<Coord<f64>>),
    Line(Path),
    MultiLine(Vec<Path>),
    /// Rings: the first is the shell, the others holes.
    Polygon(Vec<Path>),
    MultiPolygon(Vec<Vec<Path>>),
    Collection(Vec<RawGeom>),
}

impl RawGeom {
    /// Calls `f` on every coordinate.
    pub(crate) fn for_each_coord(&self, f: &mut impl FnMut(&Coord<f64>)) {
        match self {
            RawGeom::Point(p) => p.iter().for_each(f),
            RawGeom::MultiPoint(ps) | RawGeom::Line(ps) => ps.iter().for_each(f),
            RawGeom::MultiLine(ls) | RawGeom::Polygon(ls) => ls.iter().flatten().for_each(f),
            RawGeom::MultiPolygon(ps) => ps.iter().flatten().flatten().for_each(f),
            RawGeom::Collection(gs) => gs.iter().for_each(|g| g.for_each_coord(f)),
        }
    }
}

/// One open container while a geozero source is being walked.
#[derive(Debug)]
enum Frame {
    Point(Option<Coord<f64>>),
    MultiPoint(Vec<Coord<f64>>),
    Line(Path),
    MultiLine(Vec<Path>),
    Polygon(Vec<Path>),
    MultiPolygon(Vec<Vec<Path>>),
    Collection(Vec<RawGeom>),
}

/// A geozero [`GeomProcessor`] that records one geometry as a [`RawGeom`].
#[derive(Debug, Default)]
pub(crate) struct RawBuilder {
    stack: Vec<Frame>,
    result: Option<RawGeom>,
    unsupported: Option<&'static str>,
}

fn structure(msg: &str) -> GeozeroError {
    GeozeroError::Geometry(msg.to_string())
}

impl RawBuilder {
    /// A builder ready for one geometry.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The geometry built, or why there is none. Resets the builder for the next one.
    pub(crate) fn take(&mut self) -> Result<RawGeom, (super::Issue, String)> {
        let unsupported = self.unsupported.take();
        let result = self.result.take();
        let open = !self.stack.is_empty();
        self.stack.clear();
        if let Some(kind) = unsupported {
            return Err((
                super::Issue::UnsupportedGeometry,
                format!("{kind} geometries are not supported"),
            ));
        }
        if open {
            return Err((super::Issue::Unparsable, "incomplete geometry".into()));
        }
        result.ok_or((super::Issue::MissingGeometry, String::new()))
    }

    fn emit(&mut self, g: RawGeom) -> GzResult<()> {
        match self.stack.last_mut() {
            None => {
                if self.result.is_some() {
                    return Err(structure("more than one geometry"));
                }
                self.result = Some(g);
                Ok(())
            }
            Some(Frame::Collection(gs)) => {
                gs.push(g);
                Ok(())
            }
            Some(Frame::MultiPoint(ps)) => match g {
                RawGeom::Point(Some(c)) => {
                    ps.push(c);
                    Ok(())
                }
                RawGeom::Point(None) => Ok(()),
                _ => Err(structure("multipoint member is not a point")),
            },
            Some(_) => Err(structure("unexpected nested geometry")),
        }
    }

    fn unsupported(&mut self, kind: &'static str) -> GzResult<()> {
        self.unsupported.get_or_insert(kind);
        Ok(())
    }
}

impl GeomProcessor for RawBuilder {
    fn xy(&mut self, x: f64, y: f64, _idx: usize) -> GzResult<()> {
        let c = Coord { x, y };
        match self.stack.last_mut() {
            Some(Frame::Point(p)) => *p = Some(c),
            Some(Frame::MultiPoint(ps)) | Some(Frame::Line(ps)) => ps.push(c),
            _ if self.unsupported.is_some() => {}
            _ => return Err(structure("coordinate outside a geometry")),
        }
        Ok(())
    }

    fn empty_point(&mut self, _idx: usize) -> GzResult<()> {
        self.emit(RawGeom::Point(None))
    }

    fn point_begin(&mut self, _idx: usize) -> GzResult<()> {
        self.stack.push(Frame::Point(None));
        Ok(())
    }

    fn point_end(&mut self, _idx: usize) -> GzResult<()> {
        match self.stack.pop() {
            // WKB writes an empty point as NaN NaN.
            Some(Frame::Point(Some(c))) if c.x.is_nan() && c.y.is_nan() => {
                self.emit(RawGeom::Point(None))
            }
            Some(Frame::Point(p)) => self.emit(RawGeom::Point(p)),
            _ => Err(structure("point_end without point")),
        }
    }

    fn multipoint_begin(&mut self, size: usize, _idx: usize) -> GzResult<()> {
        self.stack
            .push(Frame::MultiPoint(Vec::with_capacity(size.min(1 << 16))));
        Ok(())
    }

    fn multipoint_end(&mut self, _idx: usize) -> GzResult<()> {
        match self.stack.pop() {
            Some(Frame::MultiPoint(ps)) => self.emit(RawGeom::MultiPoint(ps)),
            _ => Err(structure("multipoint_end without multipoint")),
        }
    }

    fn linestring_begin(&mut self, _tagged: bool, size: usize, _idx: usize) -> GzResult<()> {
        self.stack
            .push(Frame::Line(Vec::with_capacity(size.min(1 << 16))));
        Ok(())
    }

    fn linestring_end(&mut self, _tagged: bool, _idx: usize) -> GzResult<()> {
        let line = match self.stack.pop() {
            Some(Frame::Line(l)) => l,
            _ if self.unsupported.is_some() => return Ok(()),
            _ => return Err(structure("linestring_end without linestring")),
        };
        match self.stack.last_mut() {
            Some(Frame::Polygon(rings)) | Some(Frame::MultiLine(rings)) => {
                rings.push(line);
                Ok(())
            }
            _ => self.emit(RawGeom::Line(line)),
        }
    }

    fn multilinestring_begin(&mut self, size: usize, _idx: usize) -> GzResult<()> {
        self.stack
            .push(Frame::MultiLine(Vec::with_capacity(size.min(1 << 16))));
        Ok(())
    }

    fn multilinestring_end(&mut self, _idx: usize) -> GzResult<()> {
        match self.stack.pop() {
            Some(Frame::MultiLine(ls)) => self.emit(RawGeom::MultiLine(ls)),
            _ => Err(structure("multilinestring_end without multilinestring")),
        }
    }

    fn polygon_begin(&mut self, _tagged: bool, size: usize, _idx: usize) -> GzResult<()> {
        self.stack
            .push(Frame::Polygon(Vec::with_capacity(size.min(1 << 16))));
        Ok(())
    }

    fn polygon_end(&mut self, _tagged: bool, _idx: usize) -> GzResult<()> {
        let rings = match self.stack.pop() {
            Some(Frame::Polygon(r)) => r,
            _ => return Err(structure("polygon_end without polygon")),
        };
        match self.stack.last_mut() {
            Some(Frame::MultiPolygon(ps)) => {
                ps.push(rings);
                Ok(())
            }
            _ => self.emit(RawGeom::Polygon(rings)),
        }
    }

    fn multipolygon_begin(&mut self, size: usize, _idx: usize) -> GzResult<()> {
        self.stack
            .push(Frame::MultiPolygon(Vec::with_capacity(size.min(1 << 16))));
        Ok(())
    }

    fn multipolygon_end(&mut self, _idx: usize) -> GzResult<()> {
        match self.stack.pop() {
            Some(Frame::MultiPolygon(ps)) => self.emit(RawGeom::MultiPolygon(ps)),
            _ => Err(structure("multipolygon_end without multipolygon")),
        }
    }

    fn geometrycollection_begin(&mut self, size: usize, _idx: usize) -> GzResult<()> {
        self.stack
            .push(Frame::Collection(Vec::with_capacity(size.min(1 << 16))));
        Ok(())
    }

    fn geometrycollection_end(&mut self, _idx: usize) -> GzResult<()> {
        match self.stack.pop() {
            Some(Frame::Collection(gs)) => self.emit(RawGeom::Collection(gs)),
            _ => Err(structure("geometrycollection_end without collection")),
        }
    }

    fn circularstring_begin(&mut self, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("circular string")
    }
    fn compoundcurve_begin(&mut self, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("compound curve")
    }
    fn curvepolygon_begin(&mut self, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("curve polygon")
    }
    fn multicurve_begin(&mut self, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("multicurve")
    }
    fn multisurface_begin(&mut self, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("multisurface")
    }
    fn triangle_begin(&mut self, _tagged: bool, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("triangle")
    }
    fn polyhedralsurface_begin(&mut self, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("polyhedral surface")
    }
    fn tin_begin(&mut self, _size: usize, _idx: usize) -> GzResult<()> {
        self.unsupported("TIN")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geo_types::{polygon, Geometry, MultiPolygon};

    fn build(g: &Geometry<f64>) -> RawGeom {
        let mut b = RawBuilder::new();
        geozero::geo_types::process_geom(g, &mut b).unwrap();
        b.take().unwrap()
    }

    #[test]
    fn builds_polygons_with_holes_and_multipolygons() {
        let p = polygon!(
            exterior: [(x: 0., y: 0.), (x: 10., y: 0.), (x: 10., y: 10.), (x: 0., y: 10.)],
            interiors: [[(x: 2., y: 2.), (x: 2., y: 4.), (x: 4., y: 4.), (x: 4., y: 2.)]],
        );
        let raw = build(&Geometry::Polygon(p.clone()));
        match &raw {
            RawGeom::Polygon(rings) => {
                assert_eq!(rings.len(), 2);
                assert_eq!(rings[0].len(), 5);
            }
            other => panic!("{other:?}"),
        }
        let mp = Geometry::MultiPolygon(MultiPolygon(vec![p.clone(), p]));
        match build(&mp) {
            RawGeom::MultiPolygon(ps) => assert_eq!(ps.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn points_and_collections() {
        let g = Geometry::GeometryCollection(geo_types::GeometryCollection(vec![
            Geometry::Point(geo_types::Point::new(1.0, 2.0)),
            Geometry::MultiPoint(vec![(1.0, 1.0), (2.0, 2.0)].into()),
        ]));
        match build(&g) {
            RawGeom::Collection(gs) => {
                assert_eq!(gs[0], RawGeom::Point(Some(Coord { x: 1.0, y: 2.0 })));
                assert!(matches!(&gs[1], RawGeom::MultiPoint(ps) if ps.len() == 2));
            }
            other => panic!("{other:?}"),
        }
        let mut b = RawBuilder::new();
        assert_eq!(
            b.take().unwrap_err().0,
            super::super::Issue::MissingGeometry
        );
    }
}
