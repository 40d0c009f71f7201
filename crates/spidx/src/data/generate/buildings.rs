//! City-like building footprints: a stand-in for the OSM buildings of Brazil that the seed
//! papers index, with the properties that matter to a spatial index (strong clustering,
//! small objects, a heavy tail of large ones, varied vertex counts, holes, multipolygons).
//!
//! The model (all lengths in extent units, think metres):
//!
//! - **Cities**: `clamp(N / 20 000, 3, 300)` centres uniform in the middle 90 % of the extent,
//!   with Zipf sizes (city *i* gets a share ∝ 1/(i+1)). 5 % of the buildings are rural,
//!   uniform over the whole extent.
//! - **Density**: the distance from the centre follows a Gamma(2, r₀) law (dense centre,
//!   sparse suburbs), r₀ chosen so the core holds about 2 000 buildings per km².
//! - **Streets**: each city has a street grid (rotation uniform in [0°, 90°), blocks of
//!   80–160 m, streets 10–20 m wide); 85 % of the buildings are aligned with the grid (±2°),
//!   and every building that fits in a block is pushed off the streets into it, leaving
//!   street-shaped gaps.
//! - **Sizes**: typical side 12 m × e^{0.35·N(0,1)} (×1.3 downtown, 10 m × e^{0.3·N(0,1)}
//!   rural), 0.3 % large buildings of 40–120 m (warehouses, stadiums); courtyard blocks are
//!   two to three times the typical side.
//! - **Shapes** (share): rectangle 42 %, L 14 %, T 4 %, U 4 %, chamfered rectangle 10 %,
//!   irregular star-shaped polygon with 5–12 corners 12 %, round with 12–32 vertices 4 %,
//!   courtyard block (one hole) 6 %, block with two courtyards 1 %, multipolygon of 2–3
//!   detached parts (sometimes one with a courtyard) 3 %.
//!
//! Every polygon is valid by construction: shells counter-clockwise, holes clockwise and
//! strictly inside, parts of a multipolygon disjoint. Footprints of neighbouring buildings
//! may overlap, as they sometimes do in real data.

use super::{normal, SIDE};
use crate::data::GeoRecord;
use geo_types::{Coord, Geometry, LineString, MultiPolygon, Polygon};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::f64::consts::{FRAC_PI_2, PI, TAU};

/// Share of rural buildings, uniform over the extent.
const RURAL: f64 = 0.05;
/// Share of large buildings (warehouses, stadiums: 40–120 m), which ignore the streets.
const LARGE: f64 = 0.003;
/// Buildings per square metre in a city's core.
const CORE_DENSITY: f64 = 0.002;

struct City {
    centre: Coord,
    r0: f64,
    angle: f64,
    block: f64,
    street: f64,
}

#[derive(Clone, Copy)]
enum Kind {
    Rect,
    L,
    T,
    U,
    Chamfered,
    Irregular,
    Round,
    Courtyard,
    TwoCourtyards,
    Multi,
}

const MIX: [(Kind, f64); 10] = [
    (Kind::Rect, 0.42),
    (Kind::L, 0.14),
    (Kind::T, 0.04),
    (Kind::U, 0.04),
    (Kind::Chamfered, 0.10),
    (Kind::Irregular, 0.12),
    (Kind::Round, 0.04),
    (Kind::Courtyard, 0.06),
    (Kind::TwoCourtyards, 0.01),
    (Kind::Multi, 0.03),
];

/// Generates `n` buildings with ids 0..n.
pub(crate) fn generate(n: usize, rng: &mut ChaCha8Rng) -> Vec<GeoRecord> {
    let n_cities = (n / 20_000).clamp(3, 300);
    let weights: Vec<f64> = (0..n_cities).map(|i| 1.0 / (i + 1) as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut cumulative = Vec::with_capacity(n_cities);
    let mut acc = 0.0;
    let mut cities = Vec::with_capacity(n_cities);
    for w in &weights {
        acc += w / total;
        cumulative.push(acc);
        let pop = (n as f64 * (1.0 - RURAL) * w / total).max(1.0);
        cities.push(City {
            centre: Coord {
                x: SIDE * (0.05 + 0.9 * rng.gen::<f64>()),
                y: SIDE * (0.05 + 0.9 * rng.gen::<f64>()),
            },
            r0: (pop / (TAU * CORE_DENSITY)).sqrt().max(150.0),
            angle: rng.gen_range(0.0..FRAC_PI_2),
            block: rng.gen_range(80.0..160.0),
            street: rng.gen_range(10.0..20.0),
        });
    }
    let mut out = Vec::with_capacity(n);
    for id in 0..n as u64 {
        let rural = rng.gen::<f64>() < RURAL;
        let large = rng.gen::<f64>() < LARGE;
        let city = if rural {
            None
        } else {
            let u: f64 = rng.gen();
            Some(&cities[cumulative.partition_point(|x| *x < u).min(n_cities - 1)])
        };
        let (pos, downtown) = match city {
            None => (
                Coord {
                    x: SIDE * rng.gen::<f64>(),
                    y: SIDE * rng.gen::<f64>(),
                },
                false,
            ),
            Some(c) => city_position(c, rng),
        };
        let mut size = if large {
            rng.gen_range(40.0..120.0)
        } else if rural {
            10.0 * (0.3 * normal(rng)).exp()
        } else {
            12.0 * (0.35 * normal(rng)).exp()
        };
        if downtown && !large {
            size *= 1.3;
        }
        let kind = pick_kind(rng);
        let polys = shape(kind, size, rng);
        let aligned = rng.gen::<f64>() < 0.85;
        let (pos, angle) = match city {
            Some(c) if aligned => {
                let (hx, hy) = half_extents(&polys);
                let angle = c.angle + (2.0f64).to_radians() * normal(rng);
                (off_street(c, pos, hx + 1.0, hy + 1.0), angle)
            }
            Some(c) => {
                let r = radius(&polys);
                (off_street(c, pos, r, r), rng.gen_range(0.0..PI))
            }
            None => (pos, rng.gen_range(0.0..PI)),
        };
        let geometry = transform(polys, matches!(kind, Kind::Multi), pos, angle);
        if let Some(r) = GeoRecord::new(id, geometry) {
            out.push(r);
        }
    }
    out
}

/// A position in city `c`, and whether it is downtown (within r0 of the centre).
fn city_position(c: &City, rng: &mut ChaCha8Rng) -> (Coord, bool) {
    let mut p = c.centre;
    let mut dist = 0.0;
    for _ in 0..8 {
        let u1 = 1.0 - rng.gen::<f64>();
        let u2 = 1.0 - rng.gen::<f64>();
        dist = c.r0 * -(u1.ln() + u2.ln()); // Gamma(2, r0)
        let phi = rng.gen_range(0.0..TAU);
        p = Coord {
            x: c.centre.x + dist * phi.cos(),
            y: c.centre.y + dist * phi.sin(),
        };
        if (0.0..=SIDE).contains(&p.x) && (0.0..=SIDE).contains(&p.y) {
            break;
        }
    }
    (p, dist < c.r0)
}

/// Moves `p` so that a footprint reaching `hu` / `hv` from its centre along the street grid's
/// axes stays inside its block, off the streets (axes where it does not fit are left alone).
fn off_street(c: &City, p: Coord, hu: f64, hv: f64) -> Coord {
    let (s, co) = c.angle.sin_cos();
    let (dx, dy) = (p.x - c.centre.x, p.y - c.centre.y);
    let (u, v) = (dx * co + dy * s, -dx * s + dy * co);
    let snap = |w: f64, h: f64| {
        if c.block - c.street - 2.0 * h <= 0.0 {
            return w;
        }
        let b = (w / c.block).floor() * c.block;
        b + (w - b).clamp(c.street + h, c.block - h)
    };
    let (u, v) = (snap(u, hu), snap(v, hv));
    Coord {
        x: c.centre.x + u * co - v * s,
        y: c.centre.y + u * s + v * co,
    }
}

/// Largest |x| and |y| of a building's local (unrotated) rings.
fn half_extents(polys: &[Vec<Ring>]) -> (f64, f64) {
    polys
        .iter()
        .flatten()
        .flatten()
        .fold((0.0, 0.0), |(hx, hy), p| {
            (f64::max(hx, p.x.abs()), f64::max(hy, p.y.abs()))
        })
}

/// Largest distance of a building's local vertex from its centre.
fn radius(polys: &[Vec<Ring>]) -> f64 {
    polys
        .iter()
        .flatten()
        .flatten()
        .fold(0.0, |r, p| f64::max(r, p.x.hypot(p.y)))
}

fn pick_kind(rng: &mut ChaCha8Rng) -> Kind {
    let mut u: f64 = rng.gen();
    for (k, share) in MIX {
        if u < share {
            return k;
        }
        u -= share;
    }
    Kind::Rect
}

type Ring = Vec<Coord>;

fn c(x: f64, y: f64) -> Coord {
    Coord { x, y }
}

fn rect(x0: f64, y0: f64, x1: f64, y1: f64) -> Ring {
    vec![c(x0, y0), c(x1, y0), c(x1, y1), c(x0, y1)]
}

/// A clockwise rectangle (a hole).
fn hole(x0: f64, y0: f64, x1: f64, y1: f64) -> Ring {
    vec![c(x0, y0), c(x0, y1), c(x1, y1), c(x1, y0)]
}

/// The local (unrotated, centred) rings of each polygon of a building of kind `k`.
fn shape(k: Kind, s: f64, rng: &mut ChaCha8Rng) -> Vec<Vec<Ring>> {
    let w = s;
    let h = s * rng.gen_range(0.5..1.0);
    let (x0, y0, x1, y1) = (-w / 2.0, -h / 2.0, w / 2.0, h / 2.0);
    let one = |r: Ring| vec![vec![r]];
    match k {
        Kind::Rect => one(rect(x0, y0, x1, y1)),
        Kind::L => {
            let a = w * rng.gen_range(0.3..0.6);
            let b = h * rng.gen_range(0.3..0.6);
            one(vec![
                c(x0, y0),
                c(x1, y0),
                c(x1, y1 - b),
                c(x1 - a, y1 - b),
                c(x1 - a, y1),
                c(x0, y1),
            ])
        }
        Kind::T => {
            let a = w * rng.gen_range(0.15..0.3);
            let b = h * rng.gen_range(0.3..0.6);
            one(vec![
                c(-a, y0),
                c(a, y0),
                c(a, y1 - b),
                c(x1, y1 - b),
                c(x1, y1),
                c(x0, y1),
                c(x0, y1 - b),
                c(-a, y1 - b),
            ])
        }
        Kind::U => {
            let a = w * rng.gen_range(0.15..0.3);
            let b = h * rng.gen_range(0.3..0.6);
            one(vec![
                c(x0, y0),
                c(x1, y0),
                c(x1, y1),
                c(a, y1),
                c(a, y1 - b),
                c(-a, y1 - b),
                c(-a, y1),
                c(x0, y1),
            ])
        }
        Kind::Chamfered => {
            let a = w.min(h) * rng.gen_range(0.1..0.3);
            one(vec![
                c(x0 + a, y0),
                c(x1, y0),
                c(x1, y1 - a),
                c(x1 - a, y1),
                c(x0, y1),
                c(x0, y0 + a),
            ])
        }
        Kind::Irregular => {
            let n = rng.gen_range(5..=12);
            let steps: Vec<f64> = (0..n).map(|_| 0.5 + rng.gen::<f64>()).collect();
            let total: f64 = steps.iter().sum();
            let mut a = rng.gen_range(0.0..TAU);
            let mut ring = Vec::with_capacity(n);
            for st in steps {
                let r = s / 2.0 * (0.65 + 0.35 * rng.gen::<f64>());
                ring.push(c(r * a.cos(), r * a.sin()));
                a += st / total * TAU;
            }
            one(ring)
        }
        Kind::Round => {
            let n = rng.gen_range(12..=32);
            let r = s / 2.0;
            one((0..n)
                .map(|i| {
                    let a = i as f64 / n as f64 * TAU;
                    let j = r * rng.gen_range(0.97..1.03);
                    c(j * a.cos(), j * a.sin())
                })
                .collect())
        }
        Kind::Courtyard => {
            let w = (2.0 * s).max(20.0);
            let h = w * rng.gen_range(0.6..1.0);
            let (fw, fh) = (w * rng.gen_range(0.3..0.55), h * rng.gen_range(0.3..0.55));
            let ox = rng.gen_range(-1.0..1.0) * ((w - fw) / 2.0 - 0.1 * w).max(0.0) * 0.5;
            let oy = rng.gen_range(-1.0..1.0) * ((h - fh) / 2.0 - 0.1 * h).max(0.0) * 0.5;
            vec![vec![
                rect(-w / 2.0, -h / 2.0, w / 2.0, h / 2.0),
                hole(ox - fw / 2.0, oy - fh / 2.0, ox + fw / 2.0, oy + fh / 2.0),
            ]]
        }
        Kind::TwoCourtyards => {
            let w = (3.0 * s).max(30.0);
            let h = w * rng.gen_range(0.4..0.7);
            let (m, g, fh) = (0.12 * w, 0.1 * w, 0.5 * h);
            vec![vec![
                rect(-w / 2.0, -h / 2.0, w / 2.0, h / 2.0),
                hole(-w / 2.0 + m, -fh / 2.0, -g / 2.0, fh / 2.0),
                hole(g / 2.0, -fh / 2.0, w / 2.0 - m, fh / 2.0),
            ]]
        }
        Kind::Multi => {
            let k = rng.gen_range(2..=3);
            let parts: Vec<(f64, f64)> = (0..k)
                .map(|_| (s * rng.gen_range(0.6..1.0), s * rng.gen_range(0.5..1.0)))
                .collect();
            let gaps: Vec<f64> = (1..k).map(|_| rng.gen_range(2.0..6.0)).collect();
            let total = parts.iter().map(|p| p.0).sum::<f64>() + gaps.iter().sum::<f64>();
            let with_hole = rng.gen::<f64>() < 0.2;
            let mut x = -total / 2.0;
            let mut polys = Vec::with_capacity(k);
            for (i, (pw, ph)) in parts.into_iter().enumerate() {
                let mut rings = vec![rect(x, -ph / 2.0, x + pw, ph / 2.0)];
                if with_hole && i == 0 {
                    let (fw, fh) = (pw * 0.4, ph * 0.4);
                    let cx = x + pw / 2.0;
                    rings.push(hole(cx - fw / 2.0, -fh / 2.0, cx + fw / 2.0, fh / 2.0));
                }
                polys.push(rings);
                x += pw + gaps.get(i).copied().unwrap_or(0.0);
            }
            polys
        }
    }
}

/// Rotates by `angle`, moves to `pos`, keeps the building inside the extent, closes rings.
fn transform(polys: Vec<Vec<Ring>>, multi: bool, pos: Coord, angle: f64) -> Geometry {
    let (s, co) = angle.sin_cos();
    let mut polys: Vec<Vec<Ring>> = polys
        .into_iter()
        .map(|rings| {
            rings
                .into_iter()
                .map(|r| {
                    r.into_iter()
                        .map(|p| c(pos.x + p.x * co - p.y * s, pos.y + p.x * s + p.y * co))
                        .collect()
                })
                .collect()
        })
        .collect();
    let (mut lo, mut hi) = (c(f64::MAX, f64::MAX), c(f64::MIN, f64::MIN));
    for p in polys.iter().flatten().flatten() {
        lo = c(lo.x.min(p.x), lo.y.min(p.y));
        hi = c(hi.x.max(p.x), hi.y.max(p.y));
    }
    let dx = (-lo.x).max(0.0) - (hi.x - SIDE).max(0.0);
    let dy = (-lo.y).max(0.0) - (hi.y - SIDE).max(0.0);
    let mut out: Vec<Polygon> = Vec::with_capacity(polys.len());
    for rings in polys.iter_mut() {
        let mut ls: Vec<LineString> = rings
            .iter_mut()
            .map(|r| {
                r.iter_mut().for_each(|p| {
                    p.x += dx;
                    p.y += dy;
                });
                r.push(r[0]);
                LineString(std::mem::take(r))
            })
            .collect();
        let shell = ls.remove(0);
        out.push(Polygon::new(shell, ls));
    }
    if multi {
        Geometry::MultiPolygon(MultiPolygon(out))
    } else {
        Geometry::Polygon(out.remove(0))
    }
}
