//! [`Rect`]: a `D`-dimensional axis-aligned box, with the measures the R-tree family
//! needs (area, margin, overlap, enlargement, distances).

use crate::{Error, Result};

/// An axis-aligned box `[min, max]` in `D` dimensions (a point when `min == max`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect<const D: usize> {
    /// Lower corner.
    pub min: [f64; D],
    /// Upper corner.
    pub max: [f64; D],
}

impl<const D: usize> Rect<D> {
    /// A box from its corners; errors on NaN/infinite coordinates or `min > max`.
    pub fn new(min: [f64; D], max: [f64; D]) -> Result<Self> {
        let r = Rect { min, max };
        r.validate()?;
        Ok(r)
    }

    /// The box of a single point.
    pub fn point(p: [f64; D]) -> Self {
        Rect { min: p, max: p }
    }

    /// Checks the coordinates are finite and not inverted.
    pub fn validate(&self) -> Result<()> {
        for d in 0..D {
            for (corner, v) in [("lower", self.min[d]), ("upper", self.max[d])] {
                if !v.is_finite() {
                    return Err(Error::invalid(
                        "box",
                        format!(
                            "coordinate {d} of the {corner} corner is {v}; every coordinate must be a finite number"
                        ),
                    ));
                }
            }
            if self.min[d] > self.max[d] {
                return Err(Error::invalid(
                    "box",
                    format!(
                        "inverted on axis {d}: min {} > max {}",
                        self.min[d], self.max[d]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The empty box: union identity (min = +inf, max = -inf).
    pub fn empty() -> Self {
        Rect {
            min: [f64::INFINITY; D],
            max: [f64::NEG_INFINITY; D],
        }
    }

    /// Whether this is the empty box.
    pub fn is_empty(&self) -> bool {
        (0..D).any(|d| self.min[d] > self.max[d])
    }

    /// Smallest box containing both.
    #[inline]
    pub fn union(&self, o: &Self) -> Self {
        let mut r = *self;
        r.expand(o);
        r
    }

    /// Grows this box to contain `o`.
    #[inline]
    pub fn expand(&mut self, o: &Self) {
        for d in 0..D {
            self.min[d] = self.min[d].min(o.min[d]);
            self.max[d] = self.max[d].max(o.max[d]);
        }
    }

    /// Volume (area in 2-D).
    #[inline]
    pub fn area(&self) -> f64 {
        let mut a = 1.0;
        for d in 0..D {
            a *= self.max[d] - self.min[d];
        }
        a
    }

    /// Sum of edge lengths (half the perimeter in 2-D), the R*-tree's margin.
    #[inline]
    pub fn margin(&self) -> f64 {
        (0..D).map(|d| self.max[d] - self.min[d]).sum()
    }

    /// Whether the boxes share at least one point (closed boxes).
    #[inline]
    pub fn intersects(&self, o: &Self) -> bool {
        for d in 0..D {
            if self.min[d] > o.max[d] || o.min[d] > self.max[d] {
                return false;
            }
        }
        true
    }

    /// Whether `o` lies inside this box (boundary included).
    #[inline]
    pub fn contains(&self, o: &Self) -> bool {
        for d in 0..D {
            if o.min[d] < self.min[d] || o.max[d] > self.max[d] {
                return false;
            }
        }
        true
    }

    /// Volume of the intersection (0 when disjoint).
    #[inline]
    pub fn overlap(&self, o: &Self) -> f64 {
        let mut a = 1.0;
        for d in 0..D {
            let lo = self.min[d].max(o.min[d]);
            let hi = self.max[d].min(o.max[d]);
            if hi <= lo {
                return 0.0;
            }
            a *= hi - lo;
        }
        a
    }

    /// Volume growth needed to include `o`.
    #[inline]
    pub(crate) fn enlargement(&self, o: &Self) -> f64 {
        self.union(o).area() - self.area()
    }

    /// Centre point.
    #[inline]
    pub fn center(&self) -> [f64; D] {
        let mut c = [0.0; D];
        for d in 0..D {
            c[d] = 0.5 * (self.min[d] + self.max[d]);
        }
        c
    }

    /// Squared distance between the centres of two boxes.
    #[inline]
    pub(crate) fn center_dist2(&self, o: &Self) -> f64 {
        let (a, b) = (self.center(), o.center());
        (0..D).map(|d| (a[d] - b[d]) * (a[d] - b[d])).sum()
    }

    /// Squared minimum distance from a point to this box (MINDIST, 0 inside).
    #[inline]
    pub fn min_dist2(&self, p: &[f64; D]) -> f64 {
        let mut s = 0.0;
        for d in 0..D {
            let v = if p[d] < self.min[d] {
                self.min[d] - p[d]
            } else if p[d] > self.max[d] {
                p[d] - self.max[d]
            } else {
                0.0
            };
            s += v * v;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(a: f64, b: f64, c: f64, d: f64) -> Rect<2> {
        Rect::new([a, b], [c, d]).unwrap()
    }

    #[test]
    fn measures() {
        let a = r(0.0, 0.0, 2.0, 2.0);
        let b = r(1.0, 1.0, 3.0, 4.0);
        assert_eq!(a.area(), 4.0);
        assert_eq!(a.margin(), 4.0);
        assert_eq!(a.union(&b), r(0.0, 0.0, 3.0, 4.0));
        assert_eq!(a.overlap(&b), 1.0);
        assert_eq!(a.enlargement(&b), 8.0);
        assert!(a.intersects(&b) && !a.contains(&b));
        assert!(a.contains(&r(0.5, 0.5, 1.0, 2.0)));
        assert!(
            r(0.0, 0.0, 1.0, 1.0).intersects(&r(1.0, 1.0, 2.0, 2.0)),
            "touching boxes intersect"
        );
        assert_eq!(r(0.0, 0.0, 1.0, 1.0).overlap(&r(1.0, 0.0, 2.0, 1.0)), 0.0);
        assert_eq!(a.min_dist2(&[3.0, 4.0]), 5.0);
        assert_eq!(a.min_dist2(&[1.0, 1.0]), 0.0);
        let mut e = Rect::<2>::empty();
        assert!(e.is_empty());
        e.expand(&a);
        assert_eq!(e, a);
    }

    #[test]
    fn rejects_malformed() {
        let e = Rect::new([0.0, f64::NAN], [1.0, 1.0])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("coordinate 1 of the lower corner is NaN") && !e.contains("Rect {"),
            "{e}"
        );
        assert!(Rect::new([0.0, 0.0], [f64::INFINITY, 1.0]).is_err());
        assert!(Rect::new([2.0, 0.0], [1.0, 1.0])
            .unwrap_err()
            .to_string()
            .contains("inverted"));
    }
}
