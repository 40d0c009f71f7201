//! Node capacities: how many entries a node may hold (max) and must hold (min), derived
//! from what fits in a page and the occupancy percentages, separately for leaves and
//! internal nodes. With the `seed` layout and 50 % minimum this reproduces the seeds'
//! table exactly (2 KB: 56/28, 4 KB: 113/57, ..., 64 KB: 1820/910).

use serde::{Deserialize, Serialize};

use super::NodeLayout;
use crate::{Error, Result};

/// Occupancy options, as fractions in (0, 1]: min is relative to the node's max entries,
/// max is relative to what fits in a page.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Minimum fill of leaves, relative to their max entries.
    pub leaf_min: f64,
    /// Maximum fill of leaves, relative to what fits.
    pub leaf_max: f64,
    /// Minimum fill of internal nodes, relative to their max entries.
    pub internal_min: f64,
    /// Maximum fill of internal nodes, relative to what fits.
    pub internal_max: f64,
}

impl Default for Occupancy {
    /// 50 % minimum, 100 % maximum: the seeds' setting.
    fn default() -> Self {
        Occupancy {
            leaf_min: 0.5,
            leaf_max: 1.0,
            internal_min: 0.5,
            internal_max: 1.0,
        }
    }
}

/// Max and min entries of leaves and internal nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    /// Max entries of a leaf.
    pub leaf_max: usize,
    /// Min entries of a non-root leaf.
    pub leaf_min: usize,
    /// Max entries of an internal node.
    pub internal_max: usize,
    /// Min entries of a non-root internal node.
    pub internal_min: usize,
}

impl Capacity {
    /// Derives capacities from a layout and occupancy; errors when the result cannot hold
    /// a tree (fewer than 3 entries per node, or a minimum above half the maximum, which
    /// would make splits impossible).
    pub fn new(layout: &NodeLayout, occ: &Occupancy) -> Result<Capacity> {
        let fits = layout.fits();
        let one = |what: &str, min: f64, max: f64| -> Result<(usize, usize)> {
            for (name, v) in [("minimum", min), ("maximum", max)] {
                if !(v > 0.0 && v <= 1.0) {
                    return Err(Error::invalid(
                        format!("{what} {name} fill"),
                        format!("{} % is outside (0, 100]", v * 100.0),
                    ));
                }
            }
            if min > 0.5 {
                return Err(Error::invalid(
                    format!("{what} minimum fill"),
                    format!(
                        "{} % is above 50 %: a full node could not be split into two legal nodes",
                        min * 100.0
                    ),
                ));
            }
            let mx = (fits as f64 * max + 1e-9).floor() as usize;
            if mx < 3 {
                return Err(Error::invalid(
                    format!("{what} maximum fill"),
                    format!(
                        "leaves room for {mx} entries in a {}-byte page ({fits} fit); at least 3 are needed",
                        layout.page_size()
                    ),
                ));
            }
            let mn = ((mx as f64 * min) - 1e-9).ceil().max(1.0) as usize;
            Ok((mx, mn))
        };
        let (leaf_max, leaf_min) = one("leaf", occ.leaf_min, occ.leaf_max)?;
        let (internal_max, internal_min) =
            one("internal-node", occ.internal_min, occ.internal_max)?;
        Ok(Capacity {
            leaf_max,
            leaf_min,
            internal_max,
            internal_min,
        })
    }

    /// Max entries of a node at `level`.
    #[inline]
    pub fn max(&self, level: u32) -> usize {
        if level == 0 {
            self.leaf_max
        } else {
            self.internal_max
        }
    }

    /// Min entries of a non-root node at `level`.
    #[inline]
    pub fn min(&self, level: u32) -> usize {
        if level == 0 {
            self.leaf_min
        } else {
            self.internal_min
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::LayoutKind;

    #[test]
    fn reproduces_the_seeds_capacity_table() {
        let table = [
            (2, 56, 28),
            (4, 113, 57),
            (8, 227, 114),
            (16, 455, 228),
            (32, 910, 455),
            (64, 1820, 910),
        ];
        for (kb, max, min) in table {
            let layout = NodeLayout::new(LayoutKind::Seed, kb * 1024, 2).unwrap();
            let c = Capacity::new(&layout, &Occupancy::default()).unwrap();
            assert_eq!(
                (c.leaf_max, c.leaf_min, c.internal_max, c.internal_min),
                (max, min, max, min),
                "{kb} KB"
            );
        }
    }

    #[test]
    fn occupancy_is_validated() {
        let layout = NodeLayout::new(LayoutKind::Checked, 4096, 2).unwrap();
        let c = Capacity::new(
            &layout,
            &Occupancy {
                leaf_min: 0.4,
                leaf_max: 0.7,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.leaf_max, (layout.fits() as f64 * 0.7).floor() as usize);
        assert_eq!(c.leaf_min, (c.leaf_max as f64 * 0.4).ceil() as usize);
        for bad in [
            Occupancy {
                leaf_min: 0.6,
                ..Default::default()
            },
            Occupancy {
                leaf_min: 0.0,
                ..Default::default()
            },
            Occupancy {
                internal_max: 1.5,
                ..Default::default()
            },
            Occupancy {
                internal_max: 0.01,
                ..Default::default()
            },
            Occupancy {
                leaf_max: f64::NAN,
                ..Default::default()
            },
        ] {
            assert!(Capacity::new(&layout, &bad).is_err(), "{bad:?}");
        }
    }
}
