//! The plain node store: every node change is written in place, at once, through the page
//! cache (no write buffer, no log). This is how a disk-based R-tree behaves and the
//! baseline the flash-aware stores are compared with.
//!
//! Page allocation (next unused page and a free list) and the tree metadata live in a small
//! header file (`store.json`) saved atomically by [`NodeStore::flush`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{NodeChange, NodePage, NodeStore, StoreStats, TreeMeta};
use crate::cache::PageCache;
use crate::node::{Entry, NodeLayout, NodeView, PageId};
use crate::{Error, Result};

/// What the direct store persists besides the node pages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreHeader {
    /// The tree's metadata.
    pub meta: Option<TreeMeta>,
    /// First never-used page.
    pub next_page: PageId,
    /// Pages freed by deleted nodes, reused first.
    pub free: Vec<PageId>,
}

impl StoreHeader {
    /// Takes a freed page, or else the first never-used one of the `capacity` pages.
    pub fn allocate(&mut self, capacity: u64) -> Result<PageId> {
        if let Some(p) = self.free.pop() {
            return Ok(p);
        }
        let p = self.next_page;
        if p >= capacity {
            return Err(Error::DeviceFull(format!(
                "the index needs page {p} but the device holds {capacity} pages"
            )));
        }
        self.next_page += 1;
        Ok(p)
    }

    /// Saves the header as JSON at `path`, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::invalid("store header", e.to_string()))?;
        write_atomically(path, &json)
    }

    /// Checks that page `id` was ever allocated (a pointer past it means a damaged tree).
    pub fn check_page(&self, id: PageId) -> Result<()> {
        if id >= self.next_page {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "points past the last allocated page",
            ));
        }
        Ok(())
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

/// Writes node changes in place through a [`PageCache`].
pub struct DirectStore {
    cache: PageCache,
    layout: NodeLayout,
    header: StoreHeader,
    header_path: Option<PathBuf>,
    stats: StoreStats,
    scratch: Vec<u8>,
}

impl DirectStore {
    /// A new, empty store over `cache` (whose page size must be the layout's). With
    /// `header_path`, [`NodeStore::flush`] saves the header there.
    pub fn create(
        cache: PageCache,
        layout: NodeLayout,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        Self::with_header(cache, layout, StoreHeader::default(), header_path)
    }

    /// Reopens a store whose header was saved at `header_path`.
    pub fn open(cache: PageCache, layout: NodeLayout, header_path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(header_path).map_err(|e| Error::io(header_path, e))?;
        let header: StoreHeader = serde_json::from_str(&text).map_err(|e| {
            Error::corrupted(
                format!("store header {}", header_path.display()),
                e.to_string(),
            )
        })?;
        Self::with_header(cache, layout, header, Some(header_path))
    }

    fn with_header(
        cache: PageCache,
        layout: NodeLayout,
        header: StoreHeader,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        check_page_size(cache.page_size(), &layout)?;
        Ok(DirectStore {
            scratch: vec![0u8; layout.page_size()],
            cache,
            layout,
            header,
            header_path: header_path.map(Path::to_path_buf),
            stats: StoreStats::default(),
        })
    }

    /// The page cache (and through it the device).
    pub fn cache(&self) -> &PageCache {
        &self.cache
    }

    /// The page cache, mutably (to drop caches between repetitions).
    pub fn cache_mut(&mut self) -> &mut PageCache {
        &mut self.cache
    }

    /// Pages in use (allocated and not freed).
    pub fn pages_in_use(&self) -> u64 {
        self.header.next_page - self.header.free.len() as u64
    }

    fn allocate(&mut self) -> Result<PageId> {
        let cap = self.cache.device().capacity_pages();
        self.header.allocate(cap)
    }

    fn write_scratch(&mut self, id: PageId, level: u32) -> Result<()> {
        self.stats.page_writes += 1;
        self.cache.write(id, &self.scratch, level)
    }

    fn load(&mut self, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        self.header.check_page(id)?;
        let layout = self.layout;
        self.cache
            .read_checked(id, level, |bytes| layout.verify(bytes, id))
    }
}

impl<const D: usize> NodeStore<D> for DirectStore {
    fn layout(&self) -> &NodeLayout {
        &self.layout
    }

    fn read(&mut self, id: PageId, level: u32) -> Result<NodePage> {
        self.stats.node_reads += 1;
        Ok(NodePage::new(self.load(id, level)?, self.layout))
    }

    fn with_node<R>(
        &mut self,
        id: PageId,
        level: u32,
        f: impl FnOnce(NodeView<'_, D>) -> R,
    ) -> Result<R> {
        self.stats.node_reads += 1;
        self.header.check_page(id)?;
        let layout = self.layout;
        let bytes = self
            .cache
            .read_checked_ref(id, level, |bytes| layout.verify(bytes, id))?;
        Ok(f(layout.view(bytes)))
    }

    fn create(&mut self, level: u32, entries: &[Entry<D>]) -> Result<PageId> {
        let id = self.allocate()?;
        let node = crate::node::Node {
            level,
            entries: entries.to_vec(),
        };
        self.layout.encode(&node, &mut self.scratch)?;
        self.stats.nodes_created += 1;
        self.write_scratch(id, level)?;
        Ok(id)
    }

    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()> {
        self.header.check_page(id)?;
        let layout = self.layout;
        let page = self
            .cache
            .read_checked_ref(id, level, |bytes| layout.verify(bytes, id))?;
        self.scratch.copy_from_slice(page);
        let mut count = layout.view::<D>(&self.scratch).len();
        let es = layout.entry_size();
        let bad = |pos: usize, count: usize| {
            Error::invalid(
                "node change",
                format!("node {id}: entry {pos} does not exist ({count} entries)"),
            )
        };
        for c in changes {
            match *c {
                NodeChange::Set { pos, entry } => {
                    if pos >= count {
                        return Err(bad(pos, count));
                    }
                    layout.put_entry(&mut self.scratch, pos, &entry)?;
                }
                NodeChange::Push(entry) => {
                    if count >= layout.fits() {
                        return Err(Error::invalid(
                            "node change",
                            format!("node {id} is full ({count} entries)"),
                        ));
                    }
                    layout.put_entry(&mut self.scratch, count, &entry)?;
                    count += 1;
                }
                NodeChange::Remove { pos } => {
                    if pos >= count {
                        return Err(bad(pos, count));
                    }
                    let start = layout.entry_offset(pos);
                    let end = layout.entry_offset(count);
                    self.scratch.copy_within(start + es..end, start);
                    self.scratch[end - es..end].fill(0);
                    count -= 1;
                }
            }
        }
        layout.put_header(&mut self.scratch, level, count);
        self.stats.node_updates += 1;
        self.stats.entry_changes += changes.len() as u64;
        self.write_scratch(id, level)
    }

    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()> {
        let node = crate::node::Node {
            level,
            entries: entries.to_vec(),
        };
        self.layout.encode(&node, &mut self.scratch)?;
        self.stats.node_updates += 1;
        self.stats.entry_changes += entries.len() as u64;
        self.write_scratch(id, level)
    }

    fn delete(&mut self, id: PageId, _level: u32) -> Result<()> {
        self.cache.invalidate(id);
        self.header.free.push(id);
        self.stats.nodes_deleted += 1;
        Ok(())
    }

    fn meta(&self) -> Option<TreeMeta> {
        self.header.meta
    }

    fn set_meta(&mut self, meta: TreeMeta) -> Result<()> {
        self.header.meta = Some(meta);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.cache.sync()?;
        self.cache.device_mut().persist()?;
        if let Some(path) = &self.header_path {
            self.header.save(path)?;
        }
        Ok(())
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }
}

/// Writes a small file atomically: temporary file, fsync, rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let run = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    run().map_err(|e| Error::io(path, e))
}
