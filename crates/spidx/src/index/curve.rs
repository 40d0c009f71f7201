//! The Hilbert curve in `D` dimensions (Skilling, "Programming the Hilbert curve", 2004):
//! grid cells of `order` bits per axis mapped to their position along the curve, as used by
//! Hilbert packing (Kamel & Faloutsos 1993) and the Hilbert R-tree (1994).
//!
//! The position has `D · order` bits and is returned as a `u128`, so `D · order <= 128`:
//! 2-D up to order 64 (the coordinates are `u64`, so at most 32 in practice is useful),
//! 4-D up to 32, 8-D up to 16, 32-D up to 4. [`HilbertGrid`] checks this limit.

use crate::geom::Rect;
use crate::{Error, Result};

/// Maps boxes to the Hilbert value of their centres on a `2^order` grid per axis laid over
/// an extent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HilbertGrid<const D: usize> {
    order: u32,
    lo: [f64; D],
    scale: [f64; D],
}

impl<const D: usize> HilbertGrid<D> {
    /// A grid of `order` bits per axis over `extent` (centres outside it are clamped to
    /// its border cells). Errors if `D · order` exceeds 128 bits or `order` is 0.
    pub fn new(order: u32, extent: &Rect<D>) -> Result<Self> {
        if order == 0 || order > 64 || D as u64 * order as u64 > 128 {
            return Err(Error::invalid(
                "hilbert order",
                format!(
                    "{order} bits per axis in {D} dimensions; the Hilbert value must fit in 128 bits (order 1 to {})",
                    (128 / D).min(64)
                ),
            ));
        }
        let cells = (order as f64).exp2();
        let mut lo = [0.0; D];
        let mut scale = [0.0; D];
        for d in 0..D {
            let (a, b) = (extent.min[d], extent.max[d]);
            lo[d] = if a.is_finite() { a } else { 0.0 };
            let w = b - a;
            scale[d] = if w.is_finite() && w > 0.0 {
                cells / w
            } else {
                0.0
            };
        }
        Ok(HilbertGrid { order, lo, scale })
    }

    /// Bits per axis.
    pub fn order(&self) -> u32 {
        self.order
    }

    /// The Hilbert value of the centre of `r`.
    pub fn value(&self, r: &Rect<D>) -> u128 {
        let max_cell = if self.order == 64 {
            u64::MAX
        } else {
            (1u64 << self.order) - 1
        };
        let mut cell = [0u64; D];
        for d in 0..D {
            let c = (r.min[d] + r.max[d]) * 0.5;
            let x = ((c - self.lo[d]) * self.scale[d]).floor();
            cell[d] = if x.is_nan() || x <= 0.0 {
                0
            } else if x >= max_cell as f64 {
                max_cell
            } else {
                x as u64
            };
        }
        hilbert_index(cell, self.order)
    }
}

/// The position along the Hilbert curve of grid cell `x` (each coordinate below
/// `2^order`), with `D · order <= 128`.
pub(crate) fn hilbert_index<const D: usize>(mut x: [u64; D], order: u32) -> u128 {
    debug_assert!(D as u32 * order <= 128);
    if D == 0 || order == 0 {
        return 0;
    }
    // Skilling's AxesToTranspose: inverse undo of the excess work, then Gray encoding.
    let m = 1u64 << (order - 1);
    let mut q = m;
    while q > 1 {
        let p = q - 1;
        for i in 0..D {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    for i in 1..D {
        x[i] ^= x[i - 1];
    }
    let mut t = 0;
    let mut q = m;
    while q > 1 {
        if x[D - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for v in x.iter_mut() {
        *v ^= t;
    }
    // The transposed form interleaved: bit b of axis i is bit (b·D + D-1-i) of the index.
    let mut h: u128 = 0;
    for b in (0..order).rev() {
        for v in x.iter() {
            h = (h << 1) | u128::from((v >> b) & 1);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Consecutive positions along the curve are grid neighbours, and every cell is
    /// visited once (2-D and 3-D, small orders).
    fn walk<const D: usize>(order: u32) {
        let side = 1u64 << order;
        let cells = side.pow(D as u32);
        let mut by_index = vec![None; cells as usize];
        for n in 0..cells {
            let mut c = [0u64; D];
            let mut r = n;
            for v in c.iter_mut() {
                *v = r % side;
                r /= side;
            }
            let h = hilbert_index(c, order) as usize;
            assert!(
                by_index[h].is_none(),
                "{c:?} and {:?} share {h}",
                by_index[h]
            );
            by_index[h] = Some(c);
        }
        for w in by_index.windows(2) {
            let (a, b) = (w[0].unwrap(), w[1].unwrap());
            let dist: u64 = (0..D).map(|d| a[d].abs_diff(b[d])).sum();
            assert_eq!(dist, 1, "{a:?} -> {b:?}");
        }
    }

    #[test]
    fn curve_is_a_hamiltonian_path_of_neighbours() {
        for order in 1..=5 {
            walk::<2>(order);
        }
        for order in 1..=3 {
            walk::<3>(order);
        }
        walk::<4>(2);
    }

    #[test]
    fn first_order_two_cells_in_2d() {
        // The classic order-1 curve visits (0,0), (0,1), (1,1), (1,0).
        let seq: Vec<u128> = [[0, 0], [0, 1], [1, 1], [1, 0]]
            .iter()
            .map(|c| hilbert_index::<2>(*c, 1))
            .collect();
        assert_eq!(seq, vec![0, 1, 2, 3]);
    }

    #[test]
    fn grid_limits() {
        let e = Rect::<2> {
            min: [0.0, 0.0],
            max: [1.0, 1.0],
        };
        assert!(HilbertGrid::new(0, &e).is_err());
        assert!(HilbertGrid::new(65, &e).is_err());
        assert!(HilbertGrid::<32>::new(5, &Rect::empty()).is_err());
        assert!(HilbertGrid::<32>::new(4, &Rect::empty()).is_ok());
        let g = HilbertGrid::new(16, &e).unwrap();
        assert_eq!(g.value(&Rect::point([-5.0, -5.0])), 0);
        let far = g.value(&Rect::point([1.0, 0.0]));
        assert_eq!(far, (1u128 << 32) - 1, "the last cell of the curve");
    }
}
