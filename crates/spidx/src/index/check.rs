//! The invariant checker and shape report of a tree (`spidx check`).
//!
//! Invariants: every page verifies (checksum, level), every node's MBR in its parent is
//! exactly the union of its entries, non-root nodes hold between min and max entries, an
//! internal root has at least two children, all leaves are at level 0, no page is reached
//! twice, and every object is reachable exactly once (leaf entries = the object count,
//! distinct ids). The shape: height, nodes and entries per level, coverage (sum of node
//! areas), overlap (between sibling nodes) and dead space (node area covered by none of
//! its children; computed exactly in 2-D).
//!
//! Nodes spanning several pages (the FOR-tree's overflow nodes, through
//! [`super::strategy::NodePages`]): a node's pages are read in order and none may be named
//! twice (no loop), every further page is reached exactly once in the whole tree, the
//! parent entry covers the entries of all pages, a node holds at most max × pages entries
//! and spans no more pages than its entries need (every page but the last is full).
//!
//! Auxiliary keys ([`crate::node::Entry::aux`]): every parent entry holds the largest key
//! of its child's entries (the Hilbert R-tree's LHV correctness). For variants that order
//! entries by key: every leaf entry holds its object's key, internal entries are in
//! non-decreasing key order, and each child's subtree holds no key below the key of the
//! sibling before it (the LHV order: the leaves, left to right, follow the curve).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::Tree;
use crate::geom::Rect;
use crate::node::PageId;
use crate::store::NodeStore;
use crate::Result;

/// Shape of one level of the tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelShape {
    /// Level (0 = leaves).
    pub level: u32,
    /// Nodes at this level.
    pub nodes: u64,
    /// Entries held by those nodes.
    pub entries: u64,
    /// Mean fill (entries / (nodes × max entries)).
    pub fill: f64,
    /// Sum of the nodes' MBR areas.
    pub coverage: f64,
    /// Sum over parents of the pairwise overlap areas of their children at this level.
    pub overlap: f64,
    /// Sum of node area covered by none of the node's entries (2-D only).
    pub dead_space: Option<f64>,
}

/// Result of checking a tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// Levels of the tree.
    pub height: u32,
    /// Objects recorded in the metadata.
    pub objects: u64,
    /// Leaf entries found.
    pub leaf_entries: u64,
    /// Total nodes.
    pub nodes: u64,
    /// Per-level shape, leaves first.
    pub levels: Vec<LevelShape>,
    /// Every invariant violation found (empty when the tree is sound).
    pub violations: Vec<String>,
    /// A digest of the whole tree as the walk meets it (each node's page, level, and its
    /// entries' boxes, pointers and keys; FNV-1a, cut to 48 bits so that it is exact as a
    /// metric): two trees with one entry placed differently differ here. The golden-count
    /// test (`tests/golden_counts.rs`) compares it.
    #[serde(default)]
    pub digest: u64,
    /// The pages the walk reached (nodes and their further pages), sorted: what the
    /// store's page accounting is checked against (`spidx check --deep`).
    #[serde(skip)]
    pub pages: Vec<PageId>,
}

impl CheckReport {
    /// Whether no invariant failed.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

const MAX_REPORTED: usize = 100;

/// FNV-1a over 64-bit words, for [`CheckReport::digest`].
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, word: u64) {
        for b in word.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The MBR and key a node's parent entry records (none for the root).
type ParentEntry<const D: usize> = Option<(Rect<D>, u64)>;

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Checks every invariant and measures the shape. Unreadable pages are reported as
    /// violations (the check goes on with the rest of the tree).
    pub fn check(&mut self) -> Result<CheckReport> {
        let meta = self.meta;
        let mut rep = CheckReport {
            height: meta.height,
            objects: meta.objects,
            ..Default::default()
        };
        rep.levels = (0..meta.height)
            .map(|level| LevelShape {
                level,
                ..Default::default()
            })
            .collect();
        let mut seen_pages = HashSet::new();
        let mut seen_ids = HashSet::new();
        let fail = |rep: &mut CheckReport, msg: String| {
            if rep.violations.len() < MAX_REPORTED {
                rep.violations.push(msg);
            }
        };
        let mut digest = Fnv::default();
        let mut stack: Vec<(PageId, u32, ParentEntry<D>)> =
            vec![(meta.root, meta.height - 1, None)];
        while let Some((id, level, parent_entry)) = stack.pop() {
            if !seen_pages.insert(id) {
                fail(&mut rep, format!("page {id} is reached more than once"));
                continue;
            }
            let (node, stored) = match self.read_spanned(id, level) {
                Ok(n) => n,
                Err(e) => {
                    fail(&mut rep, e.to_string());
                    continue;
                }
            };
            for &p in &stored.pages {
                if !seen_pages.insert(p) {
                    fail(
                        &mut rep,
                        format!("page {p} (a further page of node {id}) is reached more than once"),
                    );
                }
            }
            digest.add(id);
            digest.add(u64::from(level));
            for &p in &stored.pages {
                digest.add(p);
            }
            for e in &node.entries {
                for d in 0..D {
                    digest.add(e.mbr.min[d].to_bits());
                    digest.add(e.mbr.max[d].to_bits());
                }
                digest.add(e.ptr);
                digest.add(e.aux);
            }
            let pages = 1 + stored.pages.len();
            let mbr = node.mbr();
            let n = node.entries.len();
            let is_root = id == meta.root;
            if let Some((pm, pa)) = parent_entry {
                if pm != mbr {
                    fail(&mut rep, format!("node {id} (level {level}): parent entry {pm:?} is not the union of its entries {mbr:?}"));
                }
                if pa != node.aux_max() {
                    fail(&mut rep, format!("node {id} (level {level}): parent entry's key {pa} is not the largest key of its entries ({})", node.aux_max()));
                }
            }
            let (min, max) = (self.cap.min(level), self.cap.max(level));
            if n > max * pages || (!is_root && n < min) {
                fail(
                    &mut rep,
                    format!(
                        "node {id} (level {level}) holds {n} entries, allowed {min}..={}",
                        max * pages
                    ),
                );
            }
            if pages > 1 && n <= max * (pages - 1) {
                fail(
                    &mut rep,
                    format!("node {id} (level {level}) spans {pages} pages, but its {n} entries fit in fewer"),
                );
            }
            if is_root && level > 0 && n < 2 {
                fail(&mut rep, format!("internal root {id} has {n} children"));
            }
            let shape = &mut rep.levels[level as usize];
            shape.nodes += 1;
            shape.entries += n as u64;
            if n > 0 {
                shape.coverage += mbr.area();
            }
            if D == 2 && n > 0 {
                let covered = union_area_2d(node.entries.iter().map(|e| (e.mbr.min, e.mbr.max)));
                *shape.dead_space.get_or_insert(0.0) += (mbr.area() - covered).max(0.0);
            }
            if level == 0 {
                rep.leaf_entries += n as u64;
                for e in &node.entries {
                    if e.mbr.validate().is_err() {
                        fail(
                            &mut rep,
                            format!("leaf {id}: malformed box {:?} for object {}", e.mbr, e.ptr),
                        );
                    }
                    if !seen_ids.insert(e.ptr) {
                        fail(
                            &mut rep,
                            format!("object {} is indexed more than once", e.ptr),
                        );
                    }
                }
            } else {
                let child = &mut rep.levels[level as usize - 1];
                for i in 0..n {
                    for j in i + 1..n {
                        child.overlap += node.entries[i].mbr.overlap(&node.entries[j].mbr);
                    }
                }
                for e in &node.entries {
                    stack.push((e.ptr, level - 1, Some((e.mbr, e.aux))));
                }
            }
        }
        if rep.leaf_entries != meta.objects {
            let msg = format!(
                "{} leaf entries but the metadata records {} objects",
                rep.leaf_entries, meta.objects
            );
            fail(&mut rep, msg);
        }
        let mut empty_levels = Vec::new();
        for l in &mut rep.levels {
            let cap = self.cap.max(l.level) as f64;
            l.fill = if l.nodes == 0 {
                0.0
            } else {
                l.entries as f64 / (l.nodes as f64 * cap)
            };
            if l.nodes == 0 {
                empty_levels.push(format!("level {} has no nodes", l.level));
            }
        }
        for msg in empty_levels {
            fail(&mut rep, msg);
        }
        rep.nodes = rep.levels.iter().map(|l| l.nodes).sum();
        rep.pages = seen_pages.into_iter().collect();
        rep.pages.sort_unstable();
        rep.digest = digest.0 & ((1 << 48) - 1);
        if rep.violations.is_empty() && self.strategy.choose.orders_by_key() {
            let (root, level) = (meta.root, meta.height - 1);
            self.check_key_order(root, level, &mut |msg| fail(&mut rep, msg))?;
        }
        Ok(rep)
    }

    /// The key-order invariants (see the module documentation) of the subtree of node
    /// `id`, whose structure is already checked; returns its smallest and largest key.
    fn check_key_order(
        &mut self,
        id: PageId,
        level: u32,
        fail: &mut dyn FnMut(String),
    ) -> Result<(u64, u64)> {
        let node = self.read_node(id, level)?;
        let mut range = (u64::MAX, 0);
        let mut prev: Option<u64> = None;
        for (i, e) in node.entries.iter().enumerate() {
            let (lo, hi) = if level == 0 {
                let want = self.strategy.choose.object_key(&e.mbr);
                if e.aux != want {
                    fail(format!(
                        "leaf {id}: object {} holds key {}, its box's key is {want}",
                        e.ptr, e.aux
                    ));
                }
                (e.aux, e.aux)
            } else {
                if let Some(p) = prev {
                    if e.aux < p {
                        fail(format!(
                            "node {id} (level {level}): entry {i}'s key {} is below the key {p} before it",
                            e.aux
                        ));
                    }
                    let (lo, _) = self.check_key_order(e.ptr, level - 1, fail)?;
                    if lo < p {
                        fail(format!(
                            "node {id} (level {level}): child {i}'s subtree holds key {lo}, below its left sibling's largest key {p}"
                        ));
                    }
                    (lo, e.aux)
                } else {
                    (self.check_key_order(e.ptr, level - 1, fail)?.0, e.aux)
                }
            };
            prev = Some(e.aux);
            range = (range.0.min(lo), range.1.max(hi));
        }
        Ok(range)
    }
}

/// Area of the union of 2-D boxes (coordinate compression; boxes given as min/max arrays
/// of any dimension, only the first two axes used).
fn union_area_2d<const D: usize>(boxes: impl Iterator<Item = ([f64; D], [f64; D])>) -> f64 {
    let boxes: Vec<(f64, f64, f64, f64)> = boxes.map(|(a, b)| (a[0], a[1], b[0], b[1])).collect();
    let mut xs: Vec<f64> = boxes.iter().flat_map(|b| [b.0, b.2]).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut area = 0.0;
    let mut spans: Vec<(f64, f64)> = Vec::with_capacity(boxes.len());
    for w in xs.windows(2) {
        let (x0, x1) = (w[0], w[1]);
        if x1 <= x0 {
            continue;
        }
        spans.clear();
        spans.extend(
            boxes
                .iter()
                .filter(|b| b.0 <= x0 && b.2 >= x1)
                .map(|b| (b.1, b.3)),
        );
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut covered = 0.0;
        let mut cur: Option<(f64, f64)> = None;
        for &(lo, hi) in &spans {
            match cur {
                Some((a, b)) if lo <= b => cur = Some((a, b.max(hi))),
                Some((a, b)) => {
                    covered += b - a;
                    cur = Some((lo, hi));
                }
                None => cur = Some((lo, hi)),
            }
        }
        if let Some((a, b)) = cur {
            covered += b - a;
        }
        area += covered * (x1 - x0);
    }
    area
}

impl<S: NodeStore<D>, const D: usize> Tree<S, D> {
    /// Pages the root node spans (1 unless the variant's nodes may span several, e.g. the
    /// FOR-tree's root with overflow nodes).
    pub fn root_pages(&mut self) -> Result<usize> {
        let (root, level) = (self.meta.root, self.meta.height - 1);
        Ok(1 + self.read_spanned(root, level)?.1.pages.len())
    }

    /// The most pages any node of the tree spans (reads the whole tree).
    pub fn max_node_pages(&mut self) -> Result<usize> {
        let mut most = 1;
        let mut stack = vec![(self.meta.root, self.meta.height - 1)];
        while let Some((id, level)) = stack.pop() {
            let (node, stored) = self.read_spanned(id, level)?;
            most = most.max(1 + stored.pages.len());
            if level > 0 {
                stack.extend(node.entries.iter().map(|e| (e.ptr, level - 1)));
            }
        }
        Ok(most)
    }
}

#[cfg(test)]
mod tests {
    use super::union_area_2d;

    #[test]
    fn union_area() {
        let b = |x0: f64, y0: f64, x1: f64, y1: f64| ([x0, y0], [x1, y1]);
        assert_eq!(
            union_area_2d([b(0., 0., 2., 2.), b(1., 1., 3., 3.)].into_iter()),
            7.0
        );
        assert_eq!(
            union_area_2d([b(0., 0., 1., 1.), b(5., 5., 6., 6.)].into_iter()),
            2.0
        );
        assert_eq!(
            union_area_2d([b(0., 0., 4., 4.), b(1., 1., 2., 2.)].into_iter()),
            16.0
        );
        assert_eq!(
            union_area_2d(std::iter::empty::<([f64; 2], [f64; 2])>()),
            0.0
        );
    }
}
