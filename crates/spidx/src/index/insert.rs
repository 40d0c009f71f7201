//! The insertion engine: descend by the variant's [`ChooseSubtree`], add the entry, and on
//! the way back up hand every overflowing node to the variant's [`OverflowTreatment`]
//! (split, forced reinsertion, cooperative split) at its parent. Every node change goes to
//! the store as one entry-level update per node.
//!
//! [`ChooseSubtree`]: super::strategy::ChooseSubtree
//! [`OverflowTreatment`]: super::strategy::OverflowTreatment

use super::strategy::{
    mbr_of, InsertCtx, NodePages, OnPage, OnePageChange, Overflowing, Spanned, Treated,
};
use super::Tree;
use crate::geom::Rect;
use crate::node::{Entry, Node, NodeView, PageId};
use crate::store::{apply_changes, NodeChange, NodePage, NodeStore, TreeMeta};
use crate::{Error, Result};

/// What an insertion did to a subtree, reported to its parent.
enum Outcome<const D: usize> {
    /// Nothing the parent stores changed.
    Unchanged,
    /// The subtree's MBR and largest auxiliary key are now these.
    Changed(Rect<D>, u64),
    /// The node holds one entry too many, or a multi-page node asks for its treatment
    /// (nothing written yet; with what is stored for a multi-page variant): the parent
    /// treats it. Last: what the node's page holds now.
    Overflow(Node<D>, Option<Spanned<D>>, OnPage<D>),
}

#[cfg(test)]
thread_local! {
    /// Tests: insertions of a variant with [`NodePages`] take the decoded path at every
    /// node ([`Tree::insert_decoded`]).
    pub(super) static DECODED_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
#[path = "insert_paths_tests.rs"]
mod paths_tests;

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Inserts object `id` with bounding box `mbr` (one store operation).
    pub fn insert(&mut self, mbr: Rect<D>, id: u64) -> Result<()> {
        self.insert_object(mbr, id)?;
        self.store.end_operation()
    }

    /// Inserts an object without ending the store operation (shared by insert and update).
    pub(crate) fn insert_object(&mut self, mbr: Rect<D>, id: u64) -> Result<()> {
        Self::check_box(&mbr, id)?;
        if self.kind_is_seed_layout_limited(id) {
            return Err(Error::invalid(
                "object id",
                format!("{id} does not fit the seed layout's 32-bit pointers"),
            ));
        }
        let mut ctx = InsertCtx::new();
        let aux = self.strategy.choose.object_key(&mbr);
        self.insert_at(Entry { mbr, ptr: id, aux }, 0, &mut ctx)?;
        self.drain(&mut ctx)?;
        let meta = TreeMeta {
            objects: self.meta.objects + 1,
            ..self.meta
        };
        self.set_meta(meta)
    }

    fn kind_is_seed_layout_limited(&self, id: u64) -> bool {
        self.store.layout().kind() == crate::node::LayoutKind::Seed && id > u32::MAX as u64
    }

    /// Inserts every pending entry (forced reinsertion, condensed nodes).
    pub(crate) fn drain(&mut self, ctx: &mut InsertCtx<D>) -> Result<()> {
        while let Some((e, level)) = ctx.pending.pop_front() {
            self.stats.reinserted_entries += 1;
            self.insert_at(e, level, ctx)?;
        }
        Ok(())
    }

    /// Inserts `e` into a node at `level` (0 = leaf). An overflowing root is treated with
    /// a one-entry parent; if that parent ends with more than one entry, it becomes the
    /// new root (the tree grows by one level).
    pub(crate) fn insert_at(
        &mut self,
        e: Entry<D>,
        level: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<()> {
        let root_level = self.root_level();
        if level > root_level {
            return Err(Error::invalid(
                "insert",
                format!("level {level} is above the root (level {root_level})"),
            ));
        }
        let root = self.meta.root;
        if let Outcome::Overflow(node, stored, on_page) =
            self.insert_rec(root, root_level, None, e, level, ctx)?
        {
            let mut parent = vec![Entry {
                mbr: node.mbr(),
                ptr: root,
                aux: node.aux_max(),
            }];
            if let Treated::Parent(changes) =
                self.treat_overflow(root, node, &parent, 0, (stored, on_page), ctx)?
            {
                apply_changes(&mut parent, &changes)?;
            }
            if parent.len() > 1 {
                let new_root = self.store.create(root_level + 1, &parent)?;
                self.note_write(root_level + 1);
                let meta = TreeMeta {
                    root: new_root,
                    height: self.meta.height + 1,
                    ..self.meta
                };
                self.set_meta(meta)?;
            }
        }
        Ok(())
    }

    /// Hands overflowing node `id` to the variant's treatment, with its parent's entries.
    fn treat_overflow(
        &mut self,
        id: PageId,
        node: Node<D>,
        parent: &[Entry<D>],
        pos: usize,
        (spanned, on_page): (Option<Spanned<D>>, OnPage<D>),
        ctx: &mut InsertCtx<D>,
    ) -> Result<Treated<D>> {
        let overflow = std::sync::Arc::clone(&self.strategy.overflow);
        let at = Overflowing {
            id,
            node,
            parent,
            pos,
            is_root: id == self.meta.root,
            spanned,
            on_page,
        };
        overflow.treat(self, at, ctx)
    }

    /// Inserts `e` into the subtree of node `id` (at `level`), at `target`. `known` is the
    /// node's entry in its parent (`None` for the root): its box and key are the node's
    /// MBR and largest key (the tree keeps them tight, [`Tree::check`] verifies it).
    ///
    /// The node is read once and kept as a page image (not decoded) while the insertion
    /// goes down: the subtree choice, the new MBR and the entry-level change are computed
    /// on the page; the entries are decoded only when a child or the node overflows.
    /// (Nothing below a node changes the node itself during the descent, so the image
    /// stays current.) The node's new MBR comes from `known` when the entry only grows
    /// (min and max are exact, so the union with the parent's box equals the fold over
    /// the entries); only the root, and a node whose child shrank (forced reinsertion),
    /// fold their entries.
    fn insert_rec(
        &mut self,
        id: PageId,
        level: u32,
        known: Option<(Rect<D>, u64)>,
        e: Entry<D>,
        target: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        if let Some(np) = self.strategy.pages.clone() {
            return self.insert_spanned(&*np, (id, level, known), e, target, ctx);
        }
        let max = self.cap.max(level);
        if level == target {
            // Nothing to keep across a descent here: look at the page without sharing it.
            let full = self.with_node(id, level, |v| {
                if v.len() + 1 > max {
                    let mut node = decode(v, level);
                    node.entries.push(e);
                    Err(node)
                } else {
                    Ok(match known {
                        Some((mbr, aux)) => (mbr.union(&e.mbr), aux.max(e.aux)),
                        None => (v.mbr_all().union(&e.mbr), v.aux_max().max(e.aux)),
                    })
                }
            })?;
            return match full {
                Err(node) => Ok(Outcome::Overflow(node, None, OnPage::AllButLast)),
                Ok((mbr, aux)) => {
                    self.store.modify(id, level, &[NodeChange::Push(e)])?;
                    self.note_write(level);
                    Ok(Outcome::Changed(mbr, aux))
                }
            };
        }
        let page = self.read(id, level)?;
        if page.view::<D>().is_empty() {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "internal node without entries",
            ));
        }
        let i = self
            .strategy
            .choose
            .choose_entry(page.view::<D>(), level, &e);
        let child = page.view::<D>().entry(i);
        let (m, a) = match self.insert_rec(
            child.ptr,
            level - 1,
            Some((child.mbr, child.aux)),
            e,
            target,
            ctx,
        )? {
            Outcome::Unchanged => return Ok(Outcome::Unchanged),
            Outcome::Changed(m, a) => (m, a),
            Outcome::Overflow(node, stored, on_page) => {
                let parent = decode(page.view::<D>(), level).entries;
                match self.treat_overflow(child.ptr, node, &parent, i, (stored, on_page), ctx)? {
                    Treated::Resized(m) => (m, child.aux),
                    Treated::Parent(changes) => {
                        drop(page);
                        return self.change_node(
                            id,
                            Node {
                                level,
                                entries: parent,
                            },
                            &changes,
                        );
                    }
                }
            }
        };
        if m == child.mbr && a == child.aux {
            return Ok(Outcome::Unchanged);
        }
        let (mbr, aux) = match known {
            // The child only grew: the node grows by the same union.
            Some((k, ka)) if m.contains(&child.mbr) && a >= child.aux => (k.union(&m), ka.max(a)),
            _ => {
                // The node's MBR with entry `i`'s box replaced by `m` (entries in order,
                // as `Node::mbr` folds them).
                let v = page.view::<D>();
                let mut mbr = Rect::empty();
                for j in 0..v.len() {
                    if j == i {
                        mbr.expand(&m);
                    } else {
                        mbr.expand(&v.mbr(j));
                    }
                }
                let aux = if a == 0 && child.aux == 0 {
                    v.aux_max() // 0 for layouts without keys, without a scan
                } else {
                    (0..v.len())
                        .map(|j| if j == i { a } else { v.aux(j) })
                        .max()
                        .unwrap_or(0)
                };
                (mbr, aux)
            }
        };
        drop(page);
        let set = NodeChange::Set {
            pos: i,
            entry: Entry {
                mbr: m,
                ptr: child.ptr,
                aux: a,
            },
        };
        self.store.modify(id, level, &[set])?;
        self.note_write(level);
        Ok(Outcome::Changed(mbr, aux))
    }

    /// [`Self::insert_rec`] for a variant whose nodes may span several pages
    /// ([`NodePages`]). A one-page node is worked on its page
    /// ([`Self::insert_one_page`]), a node of several pages on its pages
    /// ([`Self::insert_multi_page`]); either is decoded (its entries in a vector, written
    /// back through [`NodePages::write`]) only where the node changes shape. A node holding
    /// more entries than its pages, or one the variant asks for, goes to the overflow
    /// treatment at its parent.
    fn insert_spanned(
        &mut self,
        np: &dyn NodePages<D>,
        (id, level, known): (PageId, u32, Option<(Rect<D>, u64)>),
        e: Entry<D>,
        target: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        let page = self.read(id, level)?;
        let mut further = Vec::new();
        np.further_pages(page.view::<D>(), &mut further);
        #[cfg(test)]
        if DECODED_ONLY.get() {
            return self.insert_decoded(np, page, further, (id, level, known), e, target, ctx);
        }
        if further.is_empty() {
            return self.insert_one_page(np, page, (id, level, known), e, target, ctx);
        }
        // All pages read in order (as `read_spanned` reads them), kept as page images.
        let mut imgs = Vec::with_capacity(1 + further.len());
        imgs.push(page);
        self.walk_further_pages(id, &mut further, |t, p, pages| {
            let img = t.read(p, level)?;
            np.further_pages(img.view::<D>(), pages);
            imgs.push(img);
            Ok(())
        })?;
        np.visited(id, level, imgs.len(), true);
        let mut ids = Vec::with_capacity(imgs.len());
        ids.push(id);
        ids.extend_from_slice(&further);
        self.insert_multi_page(np, imgs, &ids, (level, known), e, target, ctx)
    }

    /// Tests: [`Self::insert_spanned`] on the decoded node at every node (all its pages
    /// read and decoded, the subtree chosen among its entries, the node written back
    /// through [`NodePages::write`]): the reference the page paths are checked against.
    #[cfg(test)]
    #[allow(clippy::too_many_arguments)]
    fn insert_decoded(
        &mut self,
        np: &dyn NodePages<D>,
        page: NodePage,
        further: Vec<PageId>,
        (id, level, _known): (PageId, u32, Option<(Rect<D>, u64)>),
        e: Entry<D>,
        target: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        let mut entries = Vec::new();
        np.extend_entries(page.view::<D>(), &mut entries);
        drop(page);
        let (mut node, stored) = self.read_further_pages(np, id, level, further, entries)?;
        np.visited(id, level, 1 + stored.pages.len(), true);
        if level == target {
            node.entries.push(e);
        } else {
            if node.entries.is_empty() {
                return Err(Error::corrupted(
                    format!("node page {id}"),
                    "internal node without entries",
                ));
            }
            let i = np.choose(&node.entries, level, &e);
            let child = node.entries[i];
            let out = self.insert_rec(
                child.ptr,
                level - 1,
                Some((child.mbr, child.aux)),
                e,
                target,
                ctx,
            )?;
            self.take_child_outcome(&mut node.entries, i, child, out, ctx)?;
        }
        self.finish_spanned(np, id, node, stored, None)
    }

    /// [`Self::insert_spanned`] for node `ids[0]` stored on pages `ids` (`imgs`, read in
    /// order): as [`Self::insert_one_page`], the node stays page images while the
    /// insertion goes down, the subtree is chosen across the pages
    /// ([`NodePages::choose_on_pages`]) and, when every page but the last is full (the
    /// layout [`NodePages::write`] keeps), the entry that changes or the one appended to
    /// the last page is written to its page alone ([`NodePages::write_in_place`]). An
    /// overflow (of the node or its child), the variant's treatment or any other layout
    /// take the decoded path, with the same calls to the variant and the store.
    #[allow(clippy::too_many_arguments)]
    fn insert_multi_page(
        &mut self,
        np: &dyn NodePages<D>,
        imgs: Vec<NodePage>,
        ids: &[PageId],
        (level, known): (u32, Option<(Rect<D>, u64)>),
        e: Entry<D>,
        target: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        let id = ids[0];
        let pages = imgs.len();
        let max = self.cap.max(level);
        let lens: Vec<usize> = imgs.iter().map(|p| p.view::<D>().len()).collect();
        let n: usize = lens.iter().sum();
        let in_place =
            lens[..pages - 1].iter().all(|&l| l == max) && (1..=max).contains(&lens[pages - 1]);
        // The decoded node and what is stored, for the general path; the images are
        // dropped first, so that the writes edit the cached pages in place.
        let decoded = |imgs: Vec<NodePage>| decode_pages(np, &imgs, ids, level);
        if level == target {
            if !in_place || n + 1 > max * pages || np.treat_anyway(id, level, pages) {
                let (mut node, stored) = decoded(imgs);
                node.entries.push(e);
                return self.finish_spanned(np, id, node, stored, None);
            }
            let change = OnePageChange::Push(e);
            return self.finish_in_place(np, imgs, (ids, level, pages - 1), known, change);
        }
        if n == 0 {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "internal node without entries",
            ));
        }
        let i = np.choose_on_pages(&imgs, level, &e);
        let (mut q, mut pos) = (0, i);
        while pos >= lens[q] {
            pos -= lens[q];
            q += 1;
        }
        let child = np.entry(imgs[q].view::<D>(), pos);
        let out = self.insert_rec(
            child.ptr,
            level - 1,
            Some((child.mbr, child.aux)),
            e,
            target,
            ctx,
        )?;
        let changed = match out {
            Outcome::Unchanged => None,
            Outcome::Changed(m, a) => Some((m, a)),
            out => {
                let (mut node, stored) = decoded(imgs);
                self.take_child_outcome(&mut node.entries, i, child, out, ctx)?;
                return self.finish_spanned(np, id, node, stored, None);
            }
        };
        if !in_place || n > max * pages || np.treat_anyway(id, level, pages) {
            let (mut node, stored) = decoded(imgs);
            if let Some((m, a)) = changed {
                node.entries[i].mbr = m;
                node.entries[i].aux = a;
            }
            return self.finish_spanned(np, id, node, stored, None);
        }
        let Some(change) = OnePageChange::child_set(pos, child, changed) else {
            return Ok(Outcome::Unchanged);
        };
        self.finish_in_place(np, imgs, (ids, level, q), known, change)
    }

    /// [`Self::insert_spanned`] for a one-page node: as [`Self::insert_rec`], the node
    /// stays a page image (not decoded) while the insertion goes down and is written as
    /// one entry-level change through [`NodePages::write_in_place`]; it is decoded only
    /// when it or its child overflows, or the variant asks for its treatment. The same
    /// calls reach the variant and the store as through the decoded path.
    fn insert_one_page(
        &mut self,
        np: &dyn NodePages<D>,
        page: NodePage,
        (id, level, known): (PageId, u32, Option<(Rect<D>, u64)>),
        e: Entry<D>,
        target: u32,
        ctx: &mut InsertCtx<D>,
    ) -> Result<Outcome<D>> {
        np.visited(id, level, 1, true);
        let decoded = |page: &NodePage| decode_pages(np, std::slice::from_ref(page), &[id], level);
        let v = page.view::<D>();
        if level == target {
            // Nothing changes the node between here and its write: the variant's say
            // whether to treat it is asked now, as the decoded path asks it after the push.
            if v.len() + 1 > self.cap.max(level) || np.treat_anyway(id, level, 1) {
                let (mut node, stored) = decoded(&page);
                node.entries.push(e);
                return Ok(Outcome::Overflow(node, Some(stored), OnPage::Unknown));
            }
            let change = OnePageChange::Push(e);
            return self.finish_in_place(np, [page], (&[id], level, 0), known, change);
        }
        if v.is_empty() {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "internal node without entries",
            ));
        }
        let i = np.choose_on_page(v, level, &e);
        let child = np.entry(v, i);
        let out = self.insert_rec(
            child.ptr,
            level - 1,
            Some((child.mbr, child.aux)),
            e,
            target,
            ctx,
        )?;
        let changed = match out {
            Outcome::Unchanged => None,
            Outcome::Changed(m, a) => Some((m, a)),
            out => {
                let (mut node, stored) = decoded(&page);
                drop(page);
                self.take_child_outcome(&mut node.entries, i, child, out, ctx)?;
                return self.finish_spanned(np, id, node, stored, None);
            }
        };
        if np.treat_anyway(id, level, 1) {
            let (mut node, stored) = decoded(&page);
            drop(page);
            if let Some((m, a)) = changed {
                node.entries[i].mbr = m;
                node.entries[i].aux = a;
            }
            return self.finish_spanned(np, id, node, stored, Some(true));
        }
        let Some(change) = OnePageChange::child_set(i, child, changed) else {
            return Ok(Outcome::Unchanged);
        };
        self.finish_in_place(np, [page], (&[id], level, 0), known, change)
    }

    /// The end of an in-place insertion through a node held as page images `imgs` (of
    /// pages `ids`): the node's new MBR and largest key (grown from the `known` ones when
    /// `change` only grows the node, else folded over the pages), then, the images
    /// released so that the write edits the cached pages in place, `change` written to
    /// page `q` alone.
    fn finish_in_place<P: AsRef<[NodePage]>>(
        &mut self,
        np: &dyn NodePages<D>,
        imgs: P,
        (ids, level, q): (&[PageId], u32, usize),
        known: Option<(Rect<D>, u64)>,
        change: OnePageChange<D>,
    ) -> Result<Outcome<D>> {
        let (at, m, a, grows) = match &change {
            OnePageChange::Push(e) => (usize::MAX, e.mbr, e.aux, true),
            OnePageChange::Set { pos, old, new } => {
                let before: usize = imgs.as_ref()[..q].iter().map(|p| p.view::<D>().len()).sum();
                let grows = new.mbr.contains(&old.mbr) && new.aux >= old.aux;
                (before + pos, new.mbr, new.aux, grows)
            }
        };
        let (mbr, aux) = match known {
            // The node only grew: it grows by the same union.
            Some((k, ka)) if grows => (k.union(&m), ka.max(a)),
            _ => fold_pages(np, imgs.as_ref(), at, (m, a)),
        };
        drop(imgs);
        np.write_in_place(self, ids, level, q, change)?;
        Ok(Outcome::Changed(mbr, aux))
    }

    /// Applies what the insertion did below entry `i` (`child`) of a decoded node's
    /// `entries`: the child's new box and key, or its overflow treated here.
    fn take_child_outcome(
        &mut self,
        entries: &mut Vec<Entry<D>>,
        i: usize,
        child: Entry<D>,
        out: Outcome<D>,
        ctx: &mut InsertCtx<D>,
    ) -> Result<()> {
        match out {
            Outcome::Unchanged => {}
            Outcome::Changed(m, a) => {
                entries[i].mbr = m;
                entries[i].aux = a;
            }
            Outcome::Overflow(cnode, cstored, on_page) => {
                let parent = entries.clone();
                match self.treat_overflow(child.ptr, cnode, &parent, i, (cstored, on_page), ctx)? {
                    Treated::Resized(m) => entries[i].mbr = m,
                    Treated::Parent(changes) => apply_changes(entries, &changes)?,
                }
            }
        }
        Ok(())
    }

    /// The end of a decoded node's insertion: an overflow (more entries than its pages
    /// hold, or the variant's `treat_anyway`, asked unless `anyway` gives its answer) goes
    /// to the parent; otherwise the node is written through the variant if it changed.
    fn finish_spanned(
        &mut self,
        np: &dyn NodePages<D>,
        id: PageId,
        node: Node<D>,
        stored: Spanned<D>,
        anyway: Option<bool>,
    ) -> Result<Outcome<D>> {
        let level = node.level;
        let pages = 1 + stored.pages.len();
        if node.entries.len() > self.cap.max(level) * pages
            || anyway.unwrap_or_else(|| np.treat_anyway(id, level, pages))
        {
            return Ok(Outcome::Overflow(node, Some(stored), OnPage::Unknown));
        }
        if node.entries == stored.entries {
            return Ok(Outcome::Unchanged);
        }
        np.write(self, id, level, Some(&stored), &node.entries)?;
        Ok(Outcome::Changed(node.mbr(), node.aux_max()))
    }

    /// Applies `changes` to `node` (page `id`): written as one update if the node still
    /// fits, reported as an overflow otherwise.
    fn change_node(
        &mut self,
        id: PageId,
        mut node: Node<D>,
        changes: &[NodeChange<D>],
    ) -> Result<Outcome<D>> {
        if changes.is_empty() {
            return Ok(Outcome::Unchanged);
        }
        let before = node.entries.clone();
        apply_changes(&mut node.entries, changes)?;
        if node.entries.len() > self.cap.max(node.level) {
            return Ok(Outcome::Overflow(node, None, OnPage::Entries(before)));
        }
        self.store.modify(id, node.level, changes)?;
        self.note_write(node.level);
        Ok(Outcome::Changed(mbr_of(&node.entries), node.aux_max()))
    }
}

/// A node held as page images `imgs` (of pages `ids`, in order) decoded, with what is
/// stored of it: the general path's input.
fn decode_pages<const D: usize>(
    np: &dyn NodePages<D>,
    imgs: &[NodePage],
    ids: &[PageId],
    level: u32,
) -> (Node<D>, Spanned<D>) {
    let mut entries = Vec::new();
    for img in imgs {
        np.extend_entries(img.view::<D>(), &mut entries);
    }
    let stored = Spanned {
        pages: ids[1..].to_vec(),
        entries: entries.clone(),
    };
    (Node { level, entries }, stored)
}

/// The MBR and largest key of a node held as page images `imgs` with entry `i` as
/// `(m, a)` (a new entry when `i` is past the last), folded over the pages in entry order
/// as `Node::mbr` does.
fn fold_pages<const D: usize>(
    np: &dyn NodePages<D>,
    imgs: &[NodePage],
    i: usize,
    (m, a): (Rect<D>, u64),
) -> (Rect<D>, u64) {
    let (mut mbr, mut aux) = (Rect::empty(), 0);
    let mut g = 0;
    for img in imgs {
        let v = img.view::<D>();
        for j in 0..v.len() {
            let (b, k) = if g == i {
                (m, a)
            } else {
                let x = np.entry(v, j);
                (x.mbr, x.aux)
            };
            mbr.expand(&b);
            aux = aux.max(k);
            g += 1;
        }
    }
    if i >= g {
        mbr.expand(&m);
        aux = aux.max(a);
    }
    (mbr, aux)
}

/// The node of a page image, decoded.
pub(crate) fn decode<const D: usize>(v: NodeView<'_, D>, level: u32) -> Node<D> {
    Node {
        level,
        entries: (0..v.len()).map(|i| v.entry(i)).collect(),
    }
}
