//! Geometry and seek model of the simulated hard disk ([`super::SimHdd`]).
//!
//! The drive is described by cylinders, heads (recording surfaces) and zones. Sectors are
//! numbered track by track: all sectors of head 0 of cylinder 0, then head 1, ..., then
//! cylinder 1, from the outer edge inwards. A zone is a band of cylinders with the same
//! number of sectors per track; with several zones the outer ones hold more sectors per
//! track and therefore transfer faster (zoned bit recording).
//!
//! Angular positions are kept in nanoseconds of a revolution: sector `s` of a track with
//! `spt` sectors starts `s * rev / spt` ns after the track's index, and each track's index
//! is *skewed* by the track-switch time relative to the previous track, so a sequential
//! transfer that runs into the next track finds its first sector under the head right after
//! the switch instead of losing a revolution (as real drives lay out their tracks).

use super::HddConfig;
use crate::{Error, Result};

/// The seek-time curve: `a + b·√d` for short seeks (d below a boundary) and `c + e·d` for
/// long ones (Ruemmler and Wilkes' classic model), with d the distance in cylinders.
///
/// The curve is fitted to three datasheet figures: the track-to-track time (d = 1), the
/// full-stroke time (d = cylinders − 1), and the average over uniformly random start and
/// end cylinders. The two branches meet at the boundary with equal value and slope, so the
/// curve is continuous, smooth and increasing; the boundary is the free parameter that is
/// solved (by bisection) to reproduce the average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeekCurve {
    // Coefficients in nanoseconds over the normalised distance x = d / max_d.
    a: f64,
    b: f64,
    c: f64,
    e: f64,
    /// Boundary between the two branches, as a fraction of the full stroke.
    beta: f64,
    /// Longest seek distance in cylinders.
    max_d: f64,
}

impl SeekCurve {
    /// Fits the curve for a drive of `cylinders` cylinders. Fails, naming the parameter,
    /// when the average cannot be reached with the given track-to-track and full-stroke
    /// times (it must lie between about a third and a half of the way between them).
    pub fn fit(t2t_ms: f64, avg_ms: f64, full_ms: f64, cylinders: u64) -> Result<SeekCurve> {
        if cylinders < 3 {
            return Err(Error::invalid(
                "hdd geometry",
                format!(
                    "{cylinders} cylinders; the seek model needs at least 3 \
                     (increase capacity or lower heads)"
                ),
            ));
        }
        let (t2t, avg, full) = (t2t_ms * 1e6, avg_ms * 1e6, full_ms * 1e6);
        let max_d = (cylinders - 1) as f64;
        let (mut lo, mut hi) = (1.0 / max_d, 1.0);
        let (m_lo, m_hi) = (
            Self::shaped(t2t, full, lo, max_d).mean_ns(),
            Self::shaped(t2t, full, hi, max_d).mean_ns(),
        );
        if !(m_lo..=m_hi).contains(&avg) {
            return Err(Error::invalid(
                "hdd avg_seek_ms",
                format!(
                    "{avg_ms} ms cannot be produced by a seek curve from {t2t_ms} ms \
                     (track_to_track_ms) to {full_ms} ms (full_stroke_ms); it must lie \
                     between {:.3} and {:.3} ms",
                    m_lo / 1e6,
                    m_hi / 1e6
                ),
            ));
        }
        // The mean grows with the boundary (more of the stroke on the concave branch).
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if Self::shaped(t2t, full, mid, max_d).mean_ns() < avg {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Self::shaped(t2t, full, 0.5 * (lo + hi), max_d))
    }

    /// The curve through (1, t2t) and (max_d, full) with the boundary at `beta`.
    fn shaped(t2t: f64, full: f64, beta: f64, max_d: f64) -> SeekCurve {
        let sx1 = (1.0 / max_d).sqrt();
        let sb = beta.sqrt();
        // Equal slope at the boundary: e = b / (2√β); equal value: c = a + b√β / 2.
        let b = (full - t2t) / (0.5 * sb + 0.5 / sb - sx1);
        let a = t2t - b * sx1;
        SeekCurve {
            a,
            b,
            c: a + 0.5 * b * sb,
            e: 0.5 * b / sb,
            beta,
            max_d,
        }
    }

    /// Mean seek time in nanoseconds over uniformly random start and end positions (the
    /// normalised distance then has density 2(1 − x) on [0, 1]), computed in closed form.
    pub(crate) fn mean_ns(&self) -> f64 {
        let SeekCurve {
            a, b, c, e, beta, ..
        } = *self;
        let b2 = beta * beta;
        a * (2.0 * beta - b2)
            + b * 2.0 * (2.0 / 3.0 * beta.powf(1.5) - 0.4 * beta.powf(2.5))
            + c * (1.0 - beta) * (1.0 - beta)
            + e * (1.0 / 3.0 - b2 + 2.0 / 3.0 * b2 * beta)
    }

    /// Seek time in nanoseconds over `distance` cylinders (0 for no movement).
    pub fn time_ns(&self, distance: u64) -> u64 {
        if distance == 0 {
            return 0;
        }
        let x = distance as f64 / self.max_d;
        let t = if x < self.beta {
            self.a + self.b * x.sqrt()
        } else {
            self.c + self.e * x
        };
        t.round() as u64
    }

    /// Distance in cylinders where the square-root branch hands over to the linear one.
    pub fn boundary_cylinders(&self) -> f64 {
        self.beta * self.max_d
    }
}

/// Physical location of a sector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Loc {
    pub cyl: u64,
    pub head: u64,
    /// Global track number (`cyl * heads + head`), used for the skew.
    pub track: u64,
    /// Sector within the track.
    pub sector: u64,
    /// Sectors per track in this zone.
    pub spt: u64,
}

#[derive(Debug, Clone, Copy)]
struct Zone {
    start_lba: u64,
    spt: u64,
}

/// Mapping of sector addresses (LBAs) to cylinders, heads and angular positions.
#[derive(Debug, Clone)]
pub(super) struct Geometry {
    /// One revolution in nanoseconds.
    pub rev_ns: u64,
    /// Time to switch to the next track (head switch or one-cylinder seek).
    pub switch_ns: u64,
    skew_ns: u64,
    heads: u64,
    cyl_per_zone: u64,
    zones: Vec<Zone>,
    /// Number of cylinders.
    pub cylinders: u64,
}

impl Geometry {
    /// Lays out `config.capacity` bytes. Sectors per track follow from the sustained media
    /// rate of each zone: a track plus the switch to the next one must deliver the rate,
    /// `spt = rate · (rev + switch) / 512`, so a long sequential transfer runs at exactly
    /// the configured rate. Zones have equal numbers of cylinders; their rates fall
    /// linearly from `outer_mb_s` to `inner_mb_s`.
    pub(super) fn new(config: &HddConfig) -> Result<Geometry> {
        let rev_ns = (60e9 / config.rpm as f64).round() as u64;
        let switch_ns = (config.track_to_track_ms * 1e6).round() as u64;
        let per_track_ns = (rev_ns + switch_ns) as f64;
        let z = config.zones as u64;
        let mut zones = Vec::with_capacity(z as usize);
        let mut sum_spt = 0u64;
        for i in 0..z {
            let rate = if z == 1 {
                config.outer_mb_s
            } else {
                config.outer_mb_s
                    - (config.outer_mb_s - config.inner_mb_s) * i as f64 / (z - 1) as f64
            };
            let spt = (rate * 1e6 * per_track_ns * 1e-9 / 512.0).floor() as u64;
            if spt == 0 {
                return Err(Error::invalid(
                    "hdd inner_mb_s",
                    format!("{rate} MB/s is too slow: a track would hold no sector"),
                ));
            }
            zones.push(Zone { start_lba: 0, spt });
            sum_spt += spt;
        }
        let heads = config.heads as u64;
        let sectors = config.capacity / 512;
        let cyl_per_zone = sectors.div_ceil(heads * sum_spt).max(1);
        let mut lba = 0;
        for zone in &mut zones {
            zone.start_lba = lba;
            lba += cyl_per_zone * heads * zone.spt;
        }
        Ok(Geometry {
            rev_ns,
            switch_ns,
            skew_ns: switch_ns % rev_ns,
            heads,
            cyl_per_zone,
            zones,
            cylinders: cyl_per_zone * z,
        })
    }

    /// Where sector `lba` lies.
    pub(super) fn locate(&self, lba: u64) -> Loc {
        let zi = if self.zones.len() == 1 {
            0
        } else {
            self.zones.partition_point(|z| z.start_lba <= lba) - 1
        };
        let zone = self.zones[zi];
        let rel = lba - zone.start_lba;
        let per_cyl = self.heads * zone.spt;
        let cyl = zi as u64 * self.cyl_per_zone + rel / per_cyl;
        let r = rel % per_cyl;
        let head = r / zone.spt;
        Loc {
            cyl,
            head,
            track: cyl * self.heads + head,
            sector: r % zone.spt,
            spt: zone.spt,
        }
    }

    /// Angle (ns into a revolution) at which sector `loc` starts passing under the head.
    pub(super) fn angle(&self, loc: &Loc) -> u64 {
        let skew = (loc.track as u128 * self.skew_ns as u128 % self.rev_ns as u128) as u64;
        (skew + self.offset(loc.sector, loc.spt)) % self.rev_ns
    }

    /// Time for sectors `sector..sector + n` of a track to pass under the head.
    pub(super) fn span_ns(&self, sector: u64, n: u64, spt: u64) -> u64 {
        self.offset(sector + n, spt) - self.offset(sector, spt)
    }

    fn offset(&self, sector: u64, spt: u64) -> u64 {
        (sector as u128 * self.rev_ns as u128 / spt as u128) as u64
    }

    /// Number of heads (tracks per cylinder).
    pub(super) fn heads(&self) -> u64 {
        self.heads
    }

    /// Time one track takes in a long sequential transfer (a revolution plus a switch).
    pub(super) fn track_period_ns(&self) -> u64 {
        self.rev_ns + self.switch_ns
    }
}
