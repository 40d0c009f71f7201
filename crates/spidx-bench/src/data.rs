//! The workload: `n` small rectangles placed uniformly in a square extent, and square query
//! windows of 0.01 % of the extent's area placed uniformly inside it. Both are generated
//! deterministically from a seed with ChaCha8 (data on stream 0, windows on stream 1), so
//! every child process of the benchmark rebuilds exactly the same workload.
//!
//! Every coordinate is an integer below 2^24, exactly representable in `f32`: SQLite's
//! R*Tree module stores 32-bit floats, and with such coordinates its answers can match the
//! other implementations' exactly.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spidx::geom::Rect;

/// Side of the square extent `[0, EXTENT] x [0, EXTENT]`.
pub const EXTENT: u32 = 1_000_000;
/// Rectangle sides are integers drawn uniformly from `MIN_SIDE..=MAX_SIDE`.
pub const MIN_SIDE: u32 = 1;
/// See [`MIN_SIDE`].
pub const MAX_SIDE: u32 = 100;
/// Side of a query window: 1 % of the extent's side, so 0.01 % of its area.
pub const WINDOW_SIDE: u32 = EXTENT / 100;

/// A readable description of the workload, for reports.
pub fn describe() -> String {
    format!(
        "extent [0, {EXTENT}]^2; rectangles with integer sides uniform in {MIN_SIDE}..={MAX_SIDE} \
         and integer lower corners uniform so that they lie inside the extent; query windows \
         {WINDOW_SIDE} x {WINDOW_SIDE} (0.01 % of the extent's area), lower corners uniform \
         integers inside the extent"
    )
}

/// `n` rectangles; rectangle `i` has id `i`.
pub fn rects(n: usize, seed: u64) -> Vec<Rect<2>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(0);
    (0..n)
        .map(|_| {
            let w = rng.gen_range(MIN_SIDE..=MAX_SIDE);
            let h = rng.gen_range(MIN_SIDE..=MAX_SIDE);
            let x = rng.gen_range(0..=EXTENT - w);
            let y = rng.gen_range(0..=EXTENT - h);
            Rect {
                min: [f64::from(x), f64::from(y)],
                max: [f64::from(x + w), f64::from(y + h)],
            }
        })
        .collect()
}

/// `q` query windows.
pub fn windows(q: usize, seed: u64) -> Vec<Rect<2>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1);
    (0..q)
        .map(|_| {
            let x = rng.gen_range(0..=EXTENT - WINDOW_SIDE);
            let y = rng.gen_range(0..=EXTENT - WINDOW_SIDE);
            Rect {
                min: [f64::from(x), f64::from(y)],
                max: [f64::from(x + WINDOW_SIDE), f64::from(y + WINDOW_SIDE)],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_inside_and_f32_exact() {
        let a = rects(1000, 7);
        assert_eq!(a, rects(1000, 7));
        assert_ne!(a, rects(1000, 8));
        let ext = f64::from(EXTENT);
        for r in a.iter().chain(windows(100, 7).iter()) {
            for d in 0..2 {
                assert!(r.min[d] >= 0.0 && r.max[d] <= ext && r.min[d] < r.max[d]);
                assert_eq!(f64::from(r.min[d] as f32), r.min[d]);
                assert_eq!(f64::from(r.max[d] as f32), r.max[d]);
            }
        }
        let w = windows(3, 7)[0];
        assert_eq!(
            (w.max[0] - w.min[0]) * (w.max[1] - w.min[1]),
            ext * ext * 1e-4
        );
    }
}
