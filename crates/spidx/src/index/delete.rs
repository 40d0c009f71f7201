//! The deletion engine (Guttman 1984): find the leaf holding the entry, remove it, hand
//! every non-root node left underfull to the variant's [`UnderflowTreatment`] at its
//! parent (condense and reinsert, or borrow and merge), reinsert what it set aside, and
//! shorten the tree while the root is an internal node with a single child.
//!
//! [`UnderflowTreatment`]: super::strategy::UnderflowTreatment

use super::strategy::InsertCtx;
use super::strategy::{Spanned, Underfull};
use super::Tree;
use crate::geom::Rect;
use crate::node::{Node, PageId};
use crate::store::{apply_changes, NodeChange, NodeStore, TreeMeta};
use crate::Result;

/// What a deletion did to a subtree.
enum Removal<const D: usize> {
    /// The subtree's MBR and largest auxiliary key are now these.
    Shrunk(Rect<D>, u64),
    /// The (non-root) node holds fewer entries than its minimum; nothing written yet: the
    /// parent treats it.
    Underfull(Node<D>),
}

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Deletes object `id` whose bounding box is `mbr`; returns whether it was found
    /// (one store operation).
    pub fn delete(&mut self, mbr: &Rect<D>, id: u64) -> Result<bool> {
        let found = self.delete_object(mbr, id)?;
        self.store.end_operation()?;
        Ok(found)
    }

    /// Deletes an object without ending the store operation (shared by delete and update).
    fn delete_object(&mut self, mbr: &Rect<D>, id: u64) -> Result<bool> {
        Self::check_box(mbr, id)?;
        let mut ctx = InsertCtx::new();
        let (root, root_level) = (self.meta.root, self.root_level());
        if self
            .delete_rec(root, root_level, mbr, id, &mut ctx)?
            .is_none()
        {
            return Ok(false);
        }
        self.drain(&mut ctx)?;
        self.shorten()?;
        let meta = TreeMeta {
            objects: self.meta.objects.saturating_sub(1),
            ..self.meta
        };
        self.set_meta(meta)?;
        Ok(true)
    }

    /// Replaces object `id`'s box `old` by `new`; returns whether the object was found
    /// (one store operation: a crash never leaves the object deleted but not reinserted).
    pub fn update(&mut self, old: &Rect<D>, new: Rect<D>, id: u64) -> Result<bool> {
        Self::check_box(&new, id)?;
        let found = self.delete_object(old, id)?;
        if found {
            self.insert_object(new, id)?;
        }
        self.store.end_operation()?;
        Ok(found)
    }

    fn delete_rec(
        &mut self,
        id: PageId,
        level: u32,
        mbr: &Rect<D>,
        obj: u64,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Option<Removal<D>>> {
        let (mut node, stored) = match self.strategy.pages.clone() {
            Some(np) => {
                let (node, stored) = self.read_spanned(id, level)?;
                np.visited(id, level, 1 + stored.pages.len(), false);
                (node, Some(stored))
            }
            None => (self.read_node(id, level)?, None),
        };
        let change = if level == 0 {
            match node
                .entries
                .iter()
                .position(|e| e.ptr == obj && e.mbr == *mbr)
            {
                Some(pos) => {
                    node.entries.remove(pos);
                    NodeChange::Remove { pos }
                }
                None => return Ok(None),
            }
        } else {
            let mut found = None;
            for i in 0..node.entries.len() {
                let child = node.entries[i];
                if !child.mbr.contains(mbr) {
                    continue;
                }
                if let Some(r) = self.delete_rec(child.ptr, level - 1, mbr, obj, ctx)? {
                    found = Some((i, r));
                    break;
                }
            }
            match found {
                None => return Ok(None),
                Some((i, Removal::Underfull(child))) => {
                    let underflow = std::sync::Arc::clone(&self.strategy.underflow);
                    let at = Underfull {
                        id: node.entries[i].ptr,
                        node: child,
                        parent: &node.entries,
                        pos: i,
                    };
                    let changes = underflow.treat(self, at, ctx)?;
                    apply_changes(&mut node.entries, &changes)?;
                    return self.after_removal(id, node, &changes, stored);
                }
                Some((i, Removal::Shrunk(m, a))) => {
                    if m == node.entries[i].mbr && a == node.entries[i].aux {
                        return Ok(Some(Removal::Shrunk(node.mbr(), node.aux_max())));
                    }
                    node.entries[i].mbr = m;
                    node.entries[i].aux = a;
                    NodeChange::Set {
                        pos: i,
                        entry: node.entries[i],
                    }
                }
            }
        };
        self.after_removal(id, node, &[change], stored)
    }

    /// Node `id` now holds `node`'s entries after `changes`: reported underfull to the
    /// parent (non-root nodes below their minimum) or written as one update. A node of a
    /// variant with [`super::strategy::NodePages`] (`stored` is what its pages hold) is
    /// written through the variant, its surplus pages freed, before it may be reported
    /// underfull.
    fn after_removal(
        &mut self,
        id: PageId,
        node: Node<D>,
        changes: &[NodeChange<D>],
        stored: Option<Spanned<D>>,
    ) -> Result<Option<Removal<D>>> {
        let level = node.level;
        if let (Some(np), Some(stored)) = (self.strategy.pages.clone(), stored) {
            let underfull = id != self.meta.root && node.entries.len() < self.cap.min(level);
            if underfull && stored.pages.is_empty() {
                return Ok(Some(Removal::Underfull(node)));
            }
            if node.entries != stored.entries {
                np.write(self, id, level, Some(&stored), &node.entries)?;
            }
            if underfull {
                return Ok(Some(Removal::Underfull(node)));
            }
            return Ok(Some(Removal::Shrunk(node.mbr(), node.aux_max())));
        }
        if id != self.meta.root && node.entries.len() < self.cap.min(level) {
            return Ok(Some(Removal::Underfull(node)));
        }
        if changes.is_empty() {
            return Ok(Some(Removal::Shrunk(node.mbr(), node.aux_max())));
        }
        self.store.modify(id, level, changes)?;
        self.note_write(level);
        Ok(Some(Removal::Shrunk(node.mbr(), node.aux_max())))
    }

    /// While the root is internal with one child, makes that child the root.
    fn shorten(&mut self) -> Result<()> {
        while self.meta.height > 1 {
            let (root, level) = (self.meta.root, self.root_level());
            let node = self.read_node(root, level)?;
            if node.entries.len() != 1 {
                break;
            }
            self.store.delete(root, level)?;
            let meta = TreeMeta {
                root: node.entries[0].ptr,
                height: self.meta.height - 1,
                ..self.meta
            };
            self.set_meta(meta)?;
        }
        Ok(())
    }
}
