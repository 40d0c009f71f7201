//! What every node store persists besides its node pages: page allocation (the next unused
//! page and a free list) and the tree's metadata ([`TreeMeta`]), kept in one
//! [`StoreHeader`] and saved the same way by every store, as `store.json` in the index
//! directory. Logging stores also log allocations and metadata, so a crash between two
//! checkpoints loses nothing; their header is the starting point recovery replays onto.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{TreeMeta, TreeState};
use crate::node::{NodeLayout, PageId};
use crate::{Error, Result};

/// Page allocation and tree metadata of a node store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreHeader {
    /// The store's kind (`direct`, `fast`, `efind`, `lcr`, `rftl`); informational.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The tree's metadata.
    pub meta: Option<TreeMeta>,
    /// The tree variant's own state ([`TreeState`]; not saved for variants without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_state: Option<TreeState>,
    /// First never-used page.
    pub next_page: PageId,
    /// Pages freed by deleted nodes, reused first.
    #[serde(default)]
    pub free: Vec<PageId>,
    /// Generation of the log at the checkpoint that saved this header (logging stores;
    /// informational: the log is their source of truth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_generation: Option<u64>,
    /// Number of the checkpoint that saved this header (direct stores with a rollback
    /// journal: only a journal of the same checkpoint is rolled back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
    /// The LCR-tree's mapping table: node page -> its log page
    /// ([`crate::store::lcr`]; empty and not saved for other stores).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub log_pages: BTreeMap<PageId, PageId>,
    /// RFTL's node translation table: node page -> the unit pages holding its index
    /// units, in the order they were written, each with the number of the node's units on
    /// it ([`crate::store::rftl`]; empty and not saved for other stores).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unit_pages: BTreeMap<PageId, Vec<(PageId, u32)>>,
}

impl StoreHeader {
    /// An empty header for a store of `kind`.
    pub fn new(kind: &str) -> Self {
        StoreHeader {
            kind: kind.to_string(),
            ..Default::default()
        }
    }

    /// Takes a freed page, or else the first never-used one of the `capacity` pages.
    pub fn allocate(&mut self, capacity: u64) -> Result<PageId> {
        if let Some(p) = self.free.pop() {
            return Ok(p);
        }
        let p = self.next_page;
        if p >= capacity {
            return Err(Error::DeviceFull(format!(
                "the index needs page {p} but the node partition holds {capacity} pages"
            )));
        }
        self.next_page += 1;
        Ok(p)
    }

    /// Replays a logged allocation of page `id` (recovery mirrors [`Self::allocate`]; a
    /// page already allocated, as a compacted log re-creates a buffered node, stays so).
    pub fn replay_allocate(&mut self, id: PageId) {
        if let Some(k) = self.free.iter().rposition(|p| *p == id) {
            self.free.remove(k);
        } else if id >= self.next_page {
            self.next_page = id + 1;
        }
    }

    /// Pages allocated and not freed.
    pub fn pages_in_use(&self) -> u64 {
        self.next_page - self.free.len() as u64
    }

    /// Whether page `id` is allocated and not freed.
    pub fn in_use(&self, id: PageId) -> bool {
        id < self.next_page && !self.free.contains(&id)
    }

    /// Checks that page `id` was ever allocated (a pointer past it means a damaged tree).
    #[inline]
    pub fn check_page(&self, id: PageId) -> Result<()> {
        if id >= self.next_page {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "points past the last allocated page",
            ));
        }
        Ok(())
    }

    /// Saves the header as JSON at `path`, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::invalid("store header", e.to_string()))?;
        write_atomically(path, &json)
    }

    /// Reads the header saved at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| {
            Error::corrupted(format!("store header {}", path.display()), e.to_string())
        })
    }

    /// Reads the header saved at `path`, or an empty one for `kind` if none was saved yet
    /// (a logging store killed before its first checkpoint).
    pub fn load_or_new(path: &Path, kind: &str) -> Result<Self> {
        match std::fs::metadata(path) {
            Ok(_) => Self::load(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::new(kind)),
            Err(e) => Err(Error::io(path, e)),
        }
    }
}

/// Checks that a store's device pages (`device_page` bytes) hold exactly one node each.
pub fn check_page_size(device_page: usize, layout: &NodeLayout) -> Result<()> {
    if device_page != layout.page_size() {
        return Err(Error::invalid(
            "page size",
            format!(
                "the device pages are {} bytes but nodes are {}",
                device_page,
                layout.page_size()
            ),
        ));
    }
    Ok(())
}

/// Writes a small file atomically: temporary file, fsync, rename, fsync of the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let run = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_parent(path)
    };
    run().map_err(|e| Error::io(path, e))
}

/// Fsyncs the directory holding `path`, so a file created or renamed there survives a
/// power cut (the rename itself is only durable once its directory is).
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header round-trips through `store.json` with and without tree state, and a header
    /// saved before tree state existed loads with none.
    #[test]
    fn headers_round_trip_with_and_without_tree_state() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        let mut h = StoreHeader::new("direct");
        h.meta = Some(TreeMeta {
            root: 3,
            height: 2,
            objects: 41,
        });
        h.next_page = 9;
        h.free = vec![4, 7];
        h.save(&path).unwrap();
        assert_eq!(StoreHeader::load(&path).unwrap(), h);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("tree_state"), "{text}");

        h.tree_state = Some(TreeState {
            format: "test/1".into(),
            bytes: (0..=255u8).collect(),
        });
        h.save(&path).unwrap();
        assert_eq!(StoreHeader::load(&path).unwrap(), h);

        let err = std::fs::write(
            &path,
            r#"{"meta":null,"next_page":0,"tree_state":{"format":"x","bytes":"**"}}"#,
        )
        .map_err(|e| e.to_string())
        .and_then(|()| StoreHeader::load(&path).map_err(|e| e.to_string()))
        .unwrap_err();
        assert!(err.contains("store header"), "{err}");
    }
}
