//! The plain node store: every node change is written in place, at once, through the page
//! cache (no write buffer, no log). This is how a disk-based R-tree behaves and the
//! baseline the flash-aware stores are compared with.
//!
//! Page allocation (next unused page and a free list) and the tree metadata live in the
//! store's [`StoreHeader`] (`store.json`), saved atomically by [`NodeStore::flush`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use super::header::{check_page_size, write_atomically, StoreHeader};
use super::{
    Change, NodeChange, NodePage, NodeStore, StoreControl, StoreReport, StoreStats, TreeMeta,
};
use crate::cache::PageCache;
use crate::device::Device;
use crate::node::{Entry, NodeLayout, NodeView, PageId};
use crate::{Error, Result};

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
        Self::with_header(cache, layout, StoreHeader::new("direct"), header_path)
    }

    /// Reopens a store whose header was saved at `header_path`.
    pub fn open(cache: PageCache, layout: NodeLayout, header_path: &Path) -> Result<Self> {
        let header = StoreHeader::load(header_path)?;
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
        self.header.pages_in_use()
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
                Change::Set { pos, entry } => {
                    if pos >= count {
                        return Err(bad(pos, count));
                    }
                    layout.put_entry(&mut self.scratch, pos, &entry)?;
                }
                Change::Push(entry) => {
                    if count >= layout.fits() {
                        return Err(Error::invalid(
                            "node change",
                            format!("node {id} is full ({count} entries)"),
                        ));
                    }
                    layout.put_entry(&mut self.scratch, count, &entry)?;
                    count += 1;
                }
                Change::Remove { pos } => {
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

impl StoreControl for DirectStore {
    fn device(&self) -> &dyn Device {
        self.cache.device()
    }

    fn drop_caches(&mut self) -> Result<()> {
        self.cache.drop_caches()
    }

    fn write_back(&mut self) -> Result<()> {
        self.cache.sync()
    }

    fn pages_in_use(&self) -> u64 {
        self.header.pages_in_use()
    }

    fn report(&self) -> StoreReport {
        StoreReport {
            kind: "direct".into(),
            nodes: self.stats,
            pages_in_use: self.header.pages_in_use(),
            cache: self.cache.stats(),
            ..Default::default()
        }
    }
}
