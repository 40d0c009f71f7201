//! Guttman's R-tree (1984) as a [`Strategy`]: ChooseLeaf by least area enlargement, a
//! node split by one of the algorithms of [`super::split`] on overflow, condense and
//! reinsert on underflow.

use std::sync::Arc;

use super::split::{split, SplitAlgorithm};
use super::strategy::InsertCtx;
use super::strategy::{
    split_in_two, ChooseSubtree, CondenseReinsert, NodeAccess, OverflowTreatment, Overflowing,
    Strategy, Treated,
};
use crate::geom::Rect;
use crate::node::NodeView;
use crate::Result;

/// The R-tree's parts with split algorithm `algo`.
pub(crate) fn strategy<const D: usize>(algo: SplitAlgorithm) -> Strategy<D> {
    Strategy {
        choose: Box::new(LeastEnlargement),
        overflow: Arc::new(Split(algo)),
        underflow: Arc::new(CondenseReinsert),
        pages: None,
        state: None,
    }
}

/// Guttman's ChooseLeaf step: least area enlargement, ties by smallest area.
pub(crate) struct LeastEnlargement;

impl<const D: usize> ChooseSubtree<D> for LeastEnlargement {
    #[inline]
    fn choose(&mut self, v: NodeView<'_, D>, _level: u32, mbr: &Rect<D>) -> usize {
        least_enlargement(v.mbrs(), mbr)
    }
}

/// The position of the box needing least area enlargement to include `mbr` (ties: the
/// smaller area, then the first).
pub(crate) fn least_enlargement<const D: usize>(
    boxes: impl Iterator<Item = Rect<D>>,
    mbr: &Rect<D>,
) -> usize {
    if plain_union_applies(mbr) {
        least_enlargement_by(boxes, |b| union_plain(b, mbr))
    } else {
        least_enlargement_by(boxes, |b| b.union(mbr))
    }
}

/// [`least_enlargement`] with `grow(b)` the union of box `b` with the box to include.
#[inline(always)]
fn least_enlargement_by<const D: usize>(
    boxes: impl Iterator<Item = Rect<D>>,
    grow: impl Fn(&Rect<D>) -> Rect<D>,
) -> usize {
    let mut best = (f64::INFINITY, f64::INFINITY, 0);
    for (i, b) in boxes.enumerate() {
        let area = b.area();
        let enl = grow(&b).area() - area;
        if enl < best.0 || (enl == best.0 && area < best.1) {
            best = (enl, area, i);
        }
    }
    best.2
}

/// Whether [`union_plain`] with `m` gives exactly [`Rect::union`]: no coordinate of `m`
/// is NaN or zero.
#[inline]
pub(crate) fn plain_union_applies<const D: usize>(m: &Rect<D>) -> bool {
    (0..D).all(|d| {
        let (a, b) = (m.min[d], m.max[d]);
        !a.is_nan() && a != 0.0 && !b.is_nan() && b != 0.0
    })
}

/// `b.union(m)` by plain comparisons (one `minpd`/`maxpd` per pair of axes instead of
/// `f64::min`'s NaN handling), for an `m` of which [`plain_union_applies`]. It is then
/// bit for bit [`Rect::union`]: where `b`'s coordinate is NaN both give `m`'s, where the
/// two differ both give the lesser (greater), and where they are equal they are the same
/// bits (equal floats other than zeros have one encoding).
#[inline(always)]
pub(crate) fn union_plain<const D: usize>(b: &Rect<D>, m: &Rect<D>) -> Rect<D> {
    let mut r = *b;
    for d in 0..D {
        r.min[d] = if b.min[d] < m.min[d] {
            b.min[d]
        } else {
            m.min[d]
        };
        r.max[d] = if b.max[d] > m.max[d] {
            b.max[d]
        } else {
            m.max[d]
        };
    }
    r
}

/// Overflow treated by splitting the node in two with a split algorithm.
pub(crate) struct Split(pub SplitAlgorithm);

impl<const D: usize> OverflowTreatment<D> for Split {
    fn treat(
        &self,
        tree: &mut dyn NodeAccess<D>,
        at: Overflowing<'_, D>,
        _ctx: &mut InsertCtx<D>,
    ) -> Result<Treated<D>> {
        split_in_two(tree, at, |es, min| split(self.0, es, min))
    }
}

#[cfg(test)]
mod tests {
    use super::{plain_union_applies, union_plain, Rect};
    use proptest::prelude::*;

    /// Coordinates with many ties, both zeros, infinities and NaN.
    fn coord() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-3i32..4).prop_map(f64::from),
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            any::<f64>(),
        ]
    }

    fn rect() -> impl Strategy<Value = Rect<2>> {
        [coord(), coord(), coord(), coord()].prop_map(|c| Rect {
            min: [c[0], c[1]],
            max: [c[2], c[3]],
        })
    }

    fn bits(r: &Rect<2>) -> [u64; 4] {
        [r.min[0], r.min[1], r.max[0], r.max[1]].map(f64::to_bits)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 20_000, ..ProptestConfig::default() })]

        /// Where it applies, the plain union is `Rect::union` bit for bit.
        #[test]
        fn plain_union_is_the_union(b in rect(), m in rect()) {
            if plain_union_applies(&m) {
                prop_assert_eq!(bits(&union_plain(&b, &m)), bits(&b.union(&m)));
            }
        }
    }
}
