//! Insertion order: the order in which a dataset's objects reach one-by-one index
//! construction.
//!
//! The order matters as much as the data: a page buffer or a flash-aware write buffer
//! (FAST, eFIND, the LCR-tree, RFTL) absorbs the changes of spatially close insertions, so a spatially local
//! order makes far fewer page writes than a random one. Real extracts are not random: an
//! OpenStreetMap file lists objects by id, and ids are handed out as mappers trace one area
//! at a time, so consecutive objects are mostly near each other. This module reorders a
//! loaded [`Dataset`] before it is handed to the index layer (it sits in the data layer,
//! beside the readers and generators; it borrows only the Hilbert curve of
//! [`crate::index::curve`], which is plain geometry).
//!
//! | order | written | what it is |
//! |---|---|---|
//! | as stored | `as-stored` | the file's (or generator's) order, untouched (the default) |
//! | shuffled | `shuffled[:SEED]` | a uniformly random permutation (ChaCha8, deterministic per seed) |
//! | Hilbert | `hilbert` | by the Hilbert value of each object's box centre (2^16 cells per axis over the extent) |
//! | x | `x` | by the x (first) coordinate of each object's box centre |
//! | clustered | `clustered[:WINDOW[:SEED]]` | Hilbert order, then shuffled within consecutive windows of WINDOW objects: spatially local runs, random inside a run (OSM-like) |
//!
//! Sorts are stable (ties keep the stored order). Geometries keep their ids; vectors have no
//! stored ids (row `i` has id `i`), so reordered vectors are renumbered by their new rows.

use std::fmt;
use std::str::FromStr;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Serialize, Serializer};

use super::{Dataset, Vectors};
use crate::geom::Rect;
use crate::index::curve::HilbertGrid;
use crate::{Error, Result};

/// Seed of `shuffled` and `clustered` when none is written.
pub(crate) const DEFAULT_ORDER_SEED: u64 = 42;

/// Window of `clustered` when none is written: objects per spatially local run.
pub(crate) const DEFAULT_WINDOW: usize = 4096;

/// Bits per axis of the Hilbert grid for 2-D data (2^16 = 65 536 cells per axis).
const HILBERT_BITS_2D: u32 = 16;

/// The order in which objects are inserted (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InsertionOrder {
    /// As read or generated.
    #[default]
    AsStored,
    /// A random permutation.
    Shuffled {
        /// Seed of the permutation.
        seed: u64,
    },
    /// By the Hilbert value of the box centres.
    Hilbert,
    /// By the x coordinate of the box centres.
    X,
    /// Hilbert order shuffled within consecutive windows.
    Clustered {
        /// Objects per window (at least 1).
        window: usize,
        /// Seed of the shuffles.
        seed: u64,
    },
}

impl InsertionOrder {
    /// Whether this is the default, [`InsertionOrder::AsStored`] (left out of run names and
    /// spec fingerprints).
    pub fn is_as_stored(&self) -> bool {
        *self == InsertionOrder::AsStored
    }

    /// The permutation this order applies to `ds`: position `i` of the result is the index
    /// (in `ds`) of the object inserted `i`-th.
    pub(crate) fn permutation(&self, ds: &Dataset) -> Result<Vec<usize>> {
        let n = ds.len();
        let mut perm: Vec<usize> = (0..n).collect();
        match *self {
            InsertionOrder::AsStored => {}
            InsertionOrder::Shuffled { seed } => {
                perm.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
            }
            InsertionOrder::X => {
                let keys = centres_x(ds);
                perm.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
            }
            InsertionOrder::Hilbert => {
                let keys = hilbert_keys(ds)?;
                perm.sort_by_key(|&i| keys[i]);
            }
            InsertionOrder::Clustered { window, seed } => {
                if window == 0 {
                    return Err(window_zero());
                }
                let keys = hilbert_keys(ds)?;
                perm.sort_by_key(|&i| keys[i]);
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                for run in perm.chunks_mut(window) {
                    run.shuffle(&mut rng);
                }
            }
        }
        Ok(perm)
    }

    /// Reorders `ds` in place (nothing is done for `as-stored`).
    pub fn apply(&self, ds: &mut Dataset) -> Result<()> {
        if self.is_as_stored() {
            return Ok(());
        }
        let perm = self.permutation(ds)?;
        match ds {
            Dataset::Geo(recs) => {
                let mut old: Vec<Option<super::GeoRecord>> =
                    std::mem::take(recs).into_iter().map(Some).collect();
                *recs = perm
                    .iter()
                    .map(|&i| old[i].take().expect("a permutation names each object once"))
                    .collect();
            }
            Dataset::Vectors(v) => {
                let d = v.dims();
                let mut data = Vec::with_capacity(v.as_slice().len());
                for &i in &perm {
                    data.extend_from_slice(v.row(i));
                }
                *v = Vectors::new(d, data)?;
            }
        }
        Ok(())
    }
}

fn window_zero() -> Error {
    Error::invalid(
        "order",
        "clustered window 0: a window holds at least 1 object (e.g. clustered:4096)",
    )
}

fn centres_x(ds: &Dataset) -> Vec<f64> {
    match ds {
        Dataset::Geo(recs) => recs
            .iter()
            .map(|r| (r.bbox.min().x + r.bbox.max().x) * 0.5)
            .collect(),
        Dataset::Vectors(v) => v.rows().map(|r| r[0]).collect(),
    }
}

/// The Hilbert value of every object's box centre, on a grid over the dataset's extent.
fn hilbert_keys(ds: &Dataset) -> Result<Vec<u128>> {
    let Some(ext) = ds.extent() else {
        return Ok(Vec::new());
    };
    match ds {
        Dataset::Geo(recs) => {
            let extent = Rect::<2> {
                min: [ext.min[0], ext.min[1]],
                max: [ext.max[0], ext.max[1]],
            };
            let grid = HilbertGrid::<2>::new(HILBERT_BITS_2D, &extent)?;
            Ok(recs
                .iter()
                .map(|r| {
                    grid.value(&Rect::<2> {
                        min: [r.bbox.min().x, r.bbox.min().y],
                        max: [r.bbox.max().x, r.bbox.max().y],
                    })
                })
                .collect())
        }
        Dataset::Vectors(v) => crate::with_dims!(v.dims(), D => {
            // As many bits per axis as fit in 128 (at most 16): 8 for 16-d, 4 for 32-d.
            let bits = (128 / D as u32).min(HILBERT_BITS_2D);
            let mut lo = [0.0; D];
            let mut hi = [0.0; D];
            lo.copy_from_slice(&ext.min);
            hi.copy_from_slice(&ext.max);
            let grid = HilbertGrid::<D>::new(bits, &Rect::<D> { min: lo, max: hi })?;
            let mut p = [0.0; D];
            Ok(v
                .rows()
                .map(|r| {
                    p.copy_from_slice(r);
                    grid.value(&Rect::<D> { min: p, max: p })
                })
                .collect())
        }),
    }
}

impl fmt::Display for InsertionOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InsertionOrder::AsStored => f.write_str("as-stored"),
            InsertionOrder::Shuffled { seed } => write!(f, "shuffled:{seed}"),
            InsertionOrder::Hilbert => f.write_str("hilbert"),
            InsertionOrder::X => f.write_str("x"),
            InsertionOrder::Clustered { window, seed } => write!(f, "clustered:{window}:{seed}"),
        }
    }
}

impl Serialize for InsertionOrder {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

const USAGE: &str = "use as-stored, shuffled[:SEED], hilbert, x or clustered[:WINDOW[:SEED]]";

impl FromStr for InsertionOrder {
    type Err = Error;

    /// Parses `as-stored`, `shuffled[:SEED]`, `hilbert`, `x`, `clustered[:WINDOW[:SEED]]`.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        let mut parts = t.split(':');
        let name = parts.next().unwrap_or_default();
        let args: Vec<&str> = parts.collect();
        let number = |what: &str, v: &str| -> Result<u64> {
            v.trim().replace('_', "").parse::<u64>().map_err(|_| {
                Error::invalid(
                    "order",
                    format!("'{s}': {what} '{v}' is not a whole non-negative number"),
                )
            })
        };
        let no_args = |order: InsertionOrder| -> Result<InsertionOrder> {
            if args.is_empty() {
                Ok(order)
            } else {
                Err(Error::invalid(
                    "order",
                    format!("'{s}': {name} takes no parameter; {USAGE}"),
                ))
            }
        };
        match name {
            "as-stored" | "stored" => no_args(InsertionOrder::AsStored),
            "hilbert" => no_args(InsertionOrder::Hilbert),
            "x" => no_args(InsertionOrder::X),
            "shuffled" => match args.as_slice() {
                [] => Ok(InsertionOrder::Shuffled {
                    seed: DEFAULT_ORDER_SEED,
                }),
                [seed] => Ok(InsertionOrder::Shuffled {
                    seed: number("seed", seed)?,
                }),
                _ => Err(Error::invalid(
                    "order",
                    format!("'{s}': shuffled takes one parameter, the seed (shuffled:7)"),
                )),
            },
            "clustered" => {
                let (window, seed) = match args.as_slice() {
                    [] => (DEFAULT_WINDOW as u64, DEFAULT_ORDER_SEED),
                    [w] => (number("window", w)?, DEFAULT_ORDER_SEED),
                    [w, seed] => (number("window", w)?, number("seed", seed)?),
                    _ => {
                        let message = format!(
                            "'{s}': clustered takes at most a window and a seed (clustered:4096:7)"
                        );
                        return Err(Error::invalid("order", message));
                    }
                };
                if window == 0 {
                    return Err(window_zero());
                }
                let window = usize::try_from(window)
                    .map_err(|_| Error::invalid("order", format!("'{s}': window too large")))?;
                Ok(InsertionOrder::Clustered { window, seed })
            }
            _ => Err(Error::invalid(
                "order",
                format!("unknown insertion order '{s}'; {USAGE}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests;
