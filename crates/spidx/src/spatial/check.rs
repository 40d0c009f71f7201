//! Checking what an index directory holds beyond the tree's own invariants (those are
//! [`Tree::check`](crate::index::Tree::check)): the object records of 2-D indices.
//!
//! `spidx check` reads every live object record, verifies its checksum, decodes its
//! geometry and compares the geometry's MBR with the tree entry that indexes it; every
//! indexed object must have a record and every record an entry. With [`CheckDepth::Deep`]
//! it also walks the whole record area, superseded versions included (see
//! [`ObjectStore::scan`](crate::objects::ObjectStore::scan)). The node store's page
//! accounting (every allocated page a tree page, free, or the store's own, exactly once:
//! [`SpatialIndex::check_pages`]) is part of the deep check too.

use std::collections::HashMap;

use serde::Serialize;

use super::query::{decode, mbr_of};
use super::SpatialIndex;
use crate::geom::Rect;
use crate::index::MbrPredicate;
use crate::objects::ScanReport;
use crate::{Error, Result};

/// How much `check` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckDepth {
    /// Every node of the tree and every live object record.
    #[default]
    Normal,
    /// Everything: caches are dropped first so every page comes from the device, and the
    /// whole object record area is walked, superseded records included.
    Deep,
}

/// How many problems of each kind [`ObjectCheck`] lists (all are counted).
const EXAMPLES: usize = 10;

/// What the check of the object records found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ObjectCheck {
    /// Live object records.
    pub records: u64,
    /// Records that passed their checksum and decoded to a geometry.
    pub verified: u64,
    /// Entries of the tree (objects indexed), when the tree could be searched.
    pub indexed: Option<u64>,
    /// Records failing their checksum or not decoding.
    pub corrupt: u64,
    /// Indexed objects without a record.
    pub missing: u64,
    /// Records of objects the tree does not index.
    pub unindexed: u64,
    /// Records the tree does not index, of an index left by a crash: the inserts after its
    /// last checkpoint that did not reach the tree, which `spidx recover` drops. Expected,
    /// not violations (recover's own check then finds any that remain).
    pub unindexed_after_crash: u64,
    /// Objects whose geometry's MBR differs from their tree entry's.
    pub mbr_mismatch: u64,
    /// Objects indexed by more than one tree entry.
    pub indexed_twice: u64,
    /// The walk over the whole record area (deep check only).
    pub scan: Option<ScanReport>,
    /// The problems, each naming the object (the first few of each kind).
    pub violations: Vec<String>,
}

impl ObjectCheck {
    /// Whether every record and entry is consistent.
    pub fn ok(&self) -> bool {
        self.corrupt + self.missing + self.unindexed + self.mbr_mismatch + self.indexed_twice == 0
            && self.scan.as_ref().is_none_or(|s| s.problems.is_empty())
    }

    fn note(count: &mut u64, list: &mut Vec<String>, text: impl FnOnce() -> String) {
        *count += 1;
        if *count <= EXAMPLES as u64 {
            list.push(text());
        }
    }
}

impl<const D: usize> SpatialIndex<D> {
    /// The node store's page accounting against the pages the tree check `rep` reached
    /// ([`PageAccounting::violations`](crate::store::PageAccounting::violations)): every
    /// allocated page is a tree page, free, or one of the store's own, exactly once. Part
    /// of the complete check ([`CheckDepth::Deep`]).
    pub fn check_pages(&self, rep: &crate::index::CheckReport) -> Vec<String> {
        use crate::store::StoreControl;
        self.tree()
            .store()
            .page_accounting()
            .violations(&rep.pages, EXAMPLES)
    }

    /// Checks the object records (see the module documentation); `None` for an index
    /// that keeps no geometries. With `tree_ok` false (the tree failed its own check) the
    /// records are verified but not compared with the tree's entries.
    pub fn check_objects(
        &mut self,
        depth: CheckDepth,
        tree_ok: bool,
    ) -> Result<Option<ObjectCheck>> {
        if self.objects.is_none() {
            return Ok(None);
        }
        let mut rep = ObjectCheck::default();
        // The tree's entries: id → MBR (2-D: indices with objects are 2-D).
        let mut entries: Option<HashMap<u64, Rect<D>>> = None;
        if tree_ok {
            let mut map = HashMap::new();
            let mut twice = Vec::new();
            let any = Rect::point([0.0; D]);
            self.tree.search(MbrPredicate::All, &any, |e| {
                if map.insert(e.ptr, e.mbr).is_some() {
                    twice.push(e.ptr);
                }
            })?;
            for id in twice {
                ObjectCheck::note(&mut rep.indexed_twice, &mut rep.violations, || {
                    format!("object {id} is indexed by more than one tree entry")
                });
            }
            rep.indexed = Some(map.len() as u64);
            entries = Some(map);
        }
        let crashed = self.recovery_state().crashed.is_some();
        let store = self.objects.as_mut().expect("checked above");
        let ids = store.ids()?;
        rep.records = ids.len() as u64;
        for id in &ids {
            let geometry = match store.get(*id) {
                Ok(Some(bytes)) => decode(*id, bytes),
                Ok(None) => unreachable!("ids() lists live objects"),
                Err(e) => Err(e),
            };
            let g = match geometry {
                Ok(g) => g,
                Err(e @ Error::Corrupted { .. }) => {
                    ObjectCheck::note(&mut rep.corrupt, &mut rep.violations, || e.to_string());
                    continue;
                }
                Err(e) => return Err(e),
            };
            rep.verified += 1;
            let Some(map) = &entries else { continue };
            match map.get(id) {
                None if crashed => rep.unindexed_after_crash += 1,
                None => ObjectCheck::note(&mut rep.unindexed, &mut rep.violations, || {
                    format!("object {id} has a geometry record but no tree entry")
                }),
                Some(mbr) => {
                    let exact = mbr_of(&g).ok();
                    let same = exact
                        .is_some_and(|m| m.min[..] == mbr.min[..2] && m.max[..] == mbr.max[..2]);
                    if !same {
                        ObjectCheck::note(&mut rep.mbr_mismatch, &mut rep.violations, || {
                            format!(
                                "object {id}: its tree entry's MBR {:?}–{:?} is not its geometry's {}",
                                &mbr.min[..],
                                &mbr.max[..],
                                exact.map_or("(none)".to_string(), |m| format!("{:?}–{:?}", m.min, m.max))
                            )
                        });
                    }
                }
            }
        }
        if let Some(map) = &entries {
            let mut missing = Vec::new();
            for id in map.keys() {
                if !store.contains(*id)? {
                    missing.push(*id);
                }
            }
            missing.sort_unstable();
            for id in missing {
                ObjectCheck::note(&mut rep.missing, &mut rep.violations, || {
                    format!("object {id} is indexed but has no geometry record")
                });
            }
        }
        if depth == CheckDepth::Deep {
            let scan = store.scan()?;
            for p in scan.problems.iter().take(EXAMPLES) {
                rep.violations.push(p.clone());
            }
            rep.scan = Some(scan);
        }
        Ok(Some(rep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{matrix, spec};
    use geo::{polygon, Geometry};

    fn index(dir: &std::path::Path) -> SpatialIndex<2> {
        let text = r#"
name = "c"
[dataset]
generate = { distribution = "uniform", count = 10 }
[matrix]
index = [{ kind = "rtree" }]
[[workload]]
kind = "construction"
"#;
        let s = spec::parse(text, "c.toml", std::path::Path::new(".")).unwrap();
        let run = matrix::expand(&s, 2).unwrap().remove(0);
        SpatialIndex::<2>::create(dir, run.options, true).unwrap()
    }

    fn square(x: f64) -> Geometry<f64> {
        polygon!((x: x, y: 0.), (x: x + 1., y: 0.), (x: x + 1., y: 1.), (x: x, y: 1.), (x: x, y: 0.)).into()
    }

    fn mbr(x: f64) -> Rect<2> {
        Rect::new([x, 0.0], [x + 1.0, 1.0]).unwrap()
    }

    #[test]
    fn records_are_compared_with_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir.path().join("i"));
        for i in 0..50u64 {
            idx.put_object(i, &square(i as f64 * 2.0)).unwrap();
            idx.insert(mbr(i as f64 * 2.0), i).unwrap();
        }
        // Superseded versions stay in the record area; only the last counts.
        idx.put_object(3, &square(6.0)).unwrap();
        let rep = idx.check_objects(CheckDepth::Deep, true).unwrap().unwrap();
        assert!(rep.ok(), "{rep:?}");
        assert_eq!((rep.records, rep.verified, rep.indexed), (50, 50, Some(50)));
        let scan = rep.scan.unwrap();
        assert_eq!((scan.records, scan.live), (51, 50));

        // An object whose geometry moved without its entry, one without entry, one
        // indexed without geometry.
        idx.put_object(7, &square(100.0)).unwrap();
        idx.put_object(99, &square(1.0)).unwrap();
        idx.insert(mbr(500.0), 500).unwrap();
        let rep = idx
            .check_objects(CheckDepth::Normal, true)
            .unwrap()
            .unwrap();
        assert!(!rep.ok());
        assert_eq!(
            (rep.mbr_mismatch, rep.unindexed, rep.missing),
            (1, 1, 1),
            "{rep:?}"
        );
        let all = rep.violations.join("\n");
        assert!(
            all.contains("object 7: its tree entry's MBR")
                && all.contains("object 99 has a geometry record but no tree entry")
                && all.contains("object 500 is indexed but has no geometry record"),
            "{all}"
        );
        // Without the tree (it failed its own check), records are still verified.
        let rep = idx
            .check_objects(CheckDepth::Normal, false)
            .unwrap()
            .unwrap();
        assert_eq!((rep.verified, rep.indexed), (51, None));
        assert!(rep.ok());
    }
}
