//! Guttman's R-tree (1984) as a [`Strategy`]: ChooseLeaf by least area enlargement, a
//! node split by one of the algorithms of [`super::split`] on overflow, condense and
//! reinsert on underflow.

use std::sync::Arc;

use super::insert::InsertCtx;
use super::split::{split, SplitAlgorithm};
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
        least_enlargement((0..v.len()).map(|i| v.mbr(i)), mbr)
    }
}

/// The position of the box needing least area enlargement to include `mbr` (ties: the
/// smaller area, then the first).
pub(crate) fn least_enlargement<const D: usize>(
    boxes: impl Iterator<Item = Rect<D>>,
    mbr: &Rect<D>,
) -> usize {
    let mut best = (f64::INFINITY, f64::INFINITY, 0);
    for (i, b) in boxes.enumerate() {
        let area = b.area();
        let enl = b.union(mbr).area() - area;
        if enl < best.0 || (enl == best.0 && area < best.1) {
            best = (enl, area, i);
        }
    }
    best.2
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
