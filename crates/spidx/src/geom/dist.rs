//! [`Distance`]: the minimum distance from a point to a box ([`Rect::min_dist`]) as a
//! totally ordered key that is right for every finite coordinate.
//!
//! The plain computation (the sum of squared gaps, then its square root) overflows once
//! gaps pass about 1e154 (their squares exceed `f64::MAX`) and underflows to zero below
//! about 1e-162, so far-apart or very close boxes would all tie. Those inputs are computed
//! again with the gaps scaled by a power of two (exact in binary floating point, as the
//! window predicates scale geometries), so the order of distances stays right across the
//! whole range of `f64`; ordinary inputs take the plain path and get the same value as
//! `min_dist2(p).sqrt()`.

use super::Rect;

/// Bits of `+inf`: keys from here up are distances beyond `f64::MAX` (see [`Distance`]).
const INF_BITS: u64 = 0x7FF0_0000_0000_0000;
/// 2^500 and 2^-500: the largest gap below which squares cannot overflow (in up to 2^23
/// dimensions), the smallest above which they do not underflow.
const BIG: f64 = 3.273_390_607_896_142e150;
const SMALL: f64 = 3.054_936_363_499_605e-151;
/// 2^-1000: below it the plain sum of squares may have underflowed.
const SUM_MIN: f64 = 9.332_636_185_032_189e-302;
/// 2^-600 and 2^600: the scales of gaps that are huge or tiny.
const DOWN: f64 = 2.409_919_865_102_884e-181;
const UP: f64 = 4.149_515_568_880_993e180;

/// A distance (finite or beyond `f64::MAX`) as a key ordered like the exact values.
///
/// Keys order as the distances they stand for; [`Self::get`] gives the distance as a
/// number (`+inf` for the distances beyond `f64::MAX`, which are still told apart by the
/// key: it holds them scaled down by 2^600).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Distance(u64);

impl Distance {
    /// Distance zero (a point inside the box).
    pub const ZERO: Distance = Distance(0);

    /// The key of a distance given as a number (`>= 0`; `+inf` ranks above every finite
    /// distance, NaN is taken as `+inf`).
    pub fn from_f64(d: f64) -> Self {
        if d > 0.0 && d.is_finite() {
            Distance(d.to_bits())
        } else if d > 0.0 || d.is_nan() {
            Distance(INF_BITS)
        } else {
            Distance::ZERO
        }
    }

    /// The key of the distance `v / scale`, for a distance `v` measured on inputs
    /// multiplied by `scale` (a power of two, as
    /// [`exact_scale`](crate::query::predicate::exact_scale) picks): right also when the
    /// distance itself is beyond `f64::MAX`.
    pub fn from_scaled(v: f64, scale: f64) -> Self {
        let d = v / scale;
        if d.is_finite() || !v.is_finite() {
            return Distance::from_f64(d);
        }
        // Beyond f64::MAX: the key holds the distance times 2^-600.
        Distance(INF_BITS + ((v * DOWN) / scale).to_bits())
    }

    /// The distance as a number (`+inf` beyond `f64::MAX`).
    #[inline]
    pub fn get(self) -> f64 {
        if self.0 < INF_BITS {
            f64::from_bits(self.0)
        } else {
            f64::INFINITY
        }
    }

    /// The key as an integer (ordered as the distances).
    #[inline]
    pub fn bits(self) -> u64 {
        self.0
    }

    /// The distance of a key given by [`Self::bits`].
    #[inline]
    pub(crate) fn from_bits(bits: u64) -> Self {
        Distance(bits)
    }
}

impl<const D: usize> Rect<D> {
    /// Minimum Euclidean distance from `p` to this box (MINDIST, zero inside), as a key
    /// that orders right for every finite coordinate (see [`Distance`]). For ordinary
    /// inputs its value is `self.min_dist2(p).sqrt()`.
    #[inline]
    pub fn min_dist(&self, p: &[f64; D]) -> Distance {
        let s = self.min_dist2(p);
        if (SUM_MIN..f64::INFINITY).contains(&s) {
            return Distance(s.sqrt().to_bits());
        }
        scaled(self, p)
    }
}

/// [`Rect::min_dist`] for sums of squares that overflowed or may have underflowed: the
/// gaps are scaled by a power of two first.
#[cold]
#[inline(never)]
fn scaled<const D: usize>(r: &Rect<D>, p: &[f64; D]) -> Distance {
    // A gap (upper minus lower) halved when the difference itself overflows: halving is
    // exact for every value that does not become subnormal.
    let gap = |d: usize, half: bool| -> f64 {
        let (hi, lo) = if p[d] < r.min[d] {
            (r.min[d], p[d])
        } else if p[d] > r.max[d] {
            (p[d], r.max[d])
        } else {
            return 0.0;
        };
        if half {
            hi * 0.5 - lo * 0.5
        } else {
            hi - lo
        }
    };
    let mut g = [0.0; D];
    let mut half = false;
    for (d, v) in g.iter_mut().enumerate() {
        *v = gap(d, false);
        half |= v.is_infinite();
    }
    if half {
        for (d, v) in g.iter_mut().enumerate() {
            *v = gap(d, true);
        }
    }
    let m = g.iter().fold(0.0f64, |a, &b| a.max(b));
    if m == 0.0 {
        return Distance::ZERO;
    }
    let scale = if m > BIG {
        DOWN
    } else if m < SMALL {
        UP
    } else {
        1.0
    };
    let mut s = 0.0;
    for v in g {
        let v = v * scale;
        s += v * v;
    }
    // The distance times `scale`.
    let root = s.sqrt() * if half { 2.0 } else { 1.0 };
    if scale == DOWN {
        let d = root * UP;
        if d.is_finite() {
            Distance(d.to_bits())
        } else {
            Distance(INF_BITS + root.to_bits())
        }
    } else if scale == UP {
        Distance((root * DOWN).to_bits())
    } else {
        Distance(root.to_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(lo: [f64; 2], hi: [f64; 2]) -> Rect<2> {
        Rect { min: lo, max: hi }
    }

    #[test]
    fn the_constants_are_the_powers_of_two_they_name() {
        assert_eq!(BIG, 2f64.powi(500));
        assert_eq!(SMALL, 2f64.powi(-500));
        assert_eq!(SUM_MIN, 2f64.powi(-1000));
        assert_eq!(DOWN, 2f64.powi(-600));
        assert_eq!(UP, 2f64.powi(600));
    }

    #[test]
    fn ordinary_distances_are_the_square_root_of_min_dist2() {
        let r = b([0.0, 0.0], [2.0, 1.0]);
        for p in [
            [3.0, 5.0],
            [1.0, 0.5],
            [-1.5, 0.25],
            [0.1, -7.0],
            [2.0, 1.0],
        ] {
            assert_eq!(r.min_dist(&p).get(), r.min_dist2(&p).sqrt(), "{p:?}");
        }
        assert_eq!(r.min_dist(&[5.0, 5.0]).get(), 5.0);
        assert_eq!(r.min_dist(&[1.0, 1.0]), Distance::ZERO);
    }

    #[test]
    fn huge_and_tiny_distances_keep_their_order_and_value() {
        // Gaps of 3e200 and 4e200: the sum of squares overflows; the distance is 5e200.
        let r = b([0.0, 0.0], [0.0, 0.0]);
        let d = r.min_dist(&[3e200, 4e200]).get();
        assert!((d / 5e200 - 1.0).abs() < 1e-15, "{d}");
        let near = r.min_dist(&[3e200, 4e200]);
        let far = r.min_dist(&[3e200, 4.000001e200]);
        assert!(near < far);
        // Beyond f64::MAX: the value is +inf, the order still right.
        let a = b([-1.7e308, -1.7e308], [-1.7e308, -1.7e308]);
        let x = a.min_dist(&[1.7e308, 1.0e308]);
        let y = a.min_dist(&[1.7e308, 1.1e308]);
        assert!(x < y && x.get() == f64::INFINITY);
        assert!(r.min_dist(&[1e300, 1e300]) < x);
        // Tiny: squares of 3e-170 underflow to zero.
        let t = r.min_dist(&[3e-170, 4e-170]);
        assert!((t.get() / 5e-170 - 1.0).abs() < 1e-15, "{}", t.get());
        assert!(r.min_dist(&[3e-170, 3e-170]) < t);
        assert!(Distance::ZERO < r.min_dist(&[5e-324, 0.0]));
        assert!(t < r.min_dist(&[1e-100, 0.0]));
    }

    #[test]
    fn from_f64_orders_as_the_values() {
        let v = [0.0, 1e-320, 1e-200, 1.0, 1e200, f64::MAX, f64::INFINITY];
        for w in v.windows(2) {
            assert!(Distance::from_f64(w[0]) < Distance::from_f64(w[1]), "{w:?}");
        }
        assert_eq!(Distance::from_f64(-0.0), Distance::ZERO);
        assert_eq!(Distance::from_f64(2.5).get(), 2.5);
    }
}
