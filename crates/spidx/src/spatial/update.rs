//! Deleting and moving objects of a [`SpatialIndex`]: the tree and the object store change
//! together (what the mixed workloads of the experiment runner do).

use geo::Geometry;

use super::SpatialIndex;
use crate::geom::Rect;
use crate::Result;

impl<const D: usize> SpatialIndex<D> {
    /// Deletes object `id` with box `mbr` from the tree and its geometry from the object
    /// store; returns whether the tree held it.
    pub fn delete(&mut self, mbr: &Rect<D>, id: u64) -> Result<bool> {
        self.tally.operations += 1;
        let found = self.tree.delete(mbr, id)?;
        if found {
            if let Some(o) = &mut self.objects {
                o.remove(id)?;
                self.tally.records += 1;
            }
        }
        Ok(found)
    }

    /// Moves object `id` from box `old` to box `new`, storing its new exact `geometry`
    /// (2-D indices with objects); returns whether the tree held it.
    pub fn update(
        &mut self,
        old: &Rect<D>,
        new: Rect<D>,
        id: u64,
        geometry: Option<&Geometry<f64>>,
    ) -> Result<bool> {
        self.tally.operations += 1;
        let found = self.tree.update(old, new, id)?;
        if found && self.objects.is_some() {
            if let Some(g) = geometry {
                self.put_object(id, g)?;
            }
        }
        Ok(found)
    }
}
