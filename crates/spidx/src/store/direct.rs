//! The plain node store: every node change is written in place, at once, through the page
//! cache (no write buffer, no log). This is how a disk-based R-tree behaves and the
//! baseline the flash-aware stores are compared with.
//!
//! Page allocation (next unused page and a free list) and the tree metadata live in the
//! store's [`StoreHeader`] (`store.json`), saved atomically by [`NodeStore::flush`] (a
//! checkpoint). With a rollback [`Journal`] (indices on `file:` devices, the default there),
//! every page in use at the last checkpoint has its old image journaled before its first
//! overwrite, and reopening a crashed store writes those images back: the store is durable
//! at checkpoint granularity (see [`super::journal`]). With `log_sync` (`group:N`,
//! `each-op`; [`DirectStore::with_sync`]) each N-th or every operation is a durable point
//! too: the same seal as a checkpoint's (pages synced, header saved, journal restarted)
//! without saving the rest of the index.
//!
//! # The header's checkpoint and the journal's
//! A seal saves the header naming checkpoint `J + 1` only after the device is synced, and
//! only then restarts the journal (of checkpoint `J`) for `J + 1`. So the header names the
//! journal's checkpoint, or the next one after a crash between the two steps; any other
//! pair (the header behind the journal, or ahead by two or more) is no state the store
//! leaves, and opening refuses it as damage (`spidx check --deep` with it). A header ahead
//! by exactly one is the legitimate crash-mid-seal state and cannot be told from a header
//! edited from `J` to `J + 1`: the files hold the same bytes in both cases (the journal
//! keeps no record of the seal it was cut short in), so no sound rule refuses it. What that
//! edit costs: over an empty journal (any cleanly closed index) nothing, the number alone
//! changed; over a journal holding images (a crash between checkpoints) the rollback is
//! skipped, and the tree checks of `check --deep` see the pages as the crash left them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use super::header::check_page_size;
pub use super::header::StoreHeader;
use super::journal::{Journal, JournalStats};
use super::log::LogSync;
use super::{
    Change, NodeChange, NodePage, NodeStore, StoreControl, StoreReport, StoreStats, TreeMeta,
    TreeState,
};
use crate::cache::PageCache;
use crate::device::Device;
use crate::node::{Entry, NodeLayout, NodeView, PageId, Resealer};
use crate::{Error, Result};

/// Writes node changes in place through a [`PageCache`].
pub struct DirectStore {
    cache: PageCache,
    layout: NodeLayout,
    header: StoreHeader,
    header_path: Option<PathBuf>,
    stats: StoreStats,
    scratch: Vec<u8>,
    /// Updates the checksum of a modified page from the bytes that changed (`None` for
    /// layouts without checksum).
    resealer: Option<Resealer>,
    /// Page images the opening recovery wrote back.
    restored: u64,
    /// The rollback journal (none: writes in place are not undoable).
    journal: Option<Journal>,
    /// The header as the last checkpoint saved it (which pages need journaling).
    checkpointed: StoreHeader,
    /// Journal damage accepted when opening (`spidx recover --accept-loss`).
    accepted_loss: Option<String>,
    /// When operations become durable between checkpoints (see [`DirectStore::with_sync`]).
    sync: LogSync,
    /// Operations ended since the last durable point (group commit).
    unsynced_ops: u32,
}

/// Whether and how a direct store keeps a rollback journal (see [`super::journal`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Journaling {
    /// No journal: a crash between checkpoints may leave a damaged tree.
    Off,
    /// A journal at this path; opening rolls back to the last checkpoint.
    On(PathBuf),
    /// Opening for reading: a journal at this path is rolled back on the device the store
    /// gets (a read-only overlay), the file is left as it is.
    ReadOnly(PathBuf),
}

impl DirectStore {
    /// A new, empty store over `cache` (whose page size must be the layout's). With
    /// `header_path`, [`NodeStore::flush`] saves the header there.
    pub fn create(
        cache: PageCache,
        layout: NodeLayout,
        header_path: Option<&Path>,
    ) -> Result<Self> {
        Self::create_with(cache, layout, header_path, Journaling::Off)
    }

    /// A new, empty store keeping a rollback journal as `journaling` says.
    pub(crate) fn create_with(
        cache: PageCache,
        layout: NodeLayout,
        header_path: Option<&Path>,
        journaling: Journaling,
    ) -> Result<Self> {
        let mut header = StoreHeader::new("direct");
        let journal = match &journaling {
            Journaling::On(p) => {
                header.checkpoint = Some(0);
                Some(Journal::create(p, layout.page_size(), 0)?)
            }
            Journaling::Off | Journaling::ReadOnly(_) => None,
        };
        let mut s = Self::with_header(cache, layout, header, header_path)?;
        s.journal = journal;
        Ok(s)
    }

    /// Reopens a store whose header was saved at `header_path`.
    pub fn open(cache: PageCache, layout: NodeLayout, header_path: &Path) -> Result<Self> {
        Self::open_with(cache, layout, header_path, Journaling::Off)
    }

    /// Reopens a store; with a journal, first writes back the page images its journal
    /// holds for the header's checkpoint (the state the last checkpoint saved). A damaged
    /// journal is an error (see [`Journal::read`]).
    pub fn open_with(
        cache: PageCache,
        layout: NodeLayout,
        header_path: &Path,
        journaling: Journaling,
    ) -> Result<Self> {
        Self::open_accepting(cache, layout, header_path, journaling, false)
    }

    /// [`DirectStore::open_with`]; with `accept_loss`, a damaged journal rolls back its
    /// valid entries instead of failing (`spidx recover --accept-loss`), and the loss is
    /// reported by [`DirectStore::accepted_loss`].
    pub(crate) fn open_accepting(
        cache: PageCache,
        layout: NodeLayout,
        header_path: &Path,
        journaling: Journaling,
        accept_loss: bool,
    ) -> Result<Self> {
        let header = StoreHeader::load(header_path)?;
        let what = format!("store header {}", header_path.display());
        header.check_capacity(&what, cache.device().capacity_pages())?;
        header.check_kind(&what, "direct")?;
        let named = header.checkpoint;
        let checkpoint = named.unwrap_or(0);
        let mut s = Self::with_header(cache, layout, header, Some(header_path))?;
        let (Journaling::On(path) | Journaling::ReadOnly(path)) = &journaling else {
            return Ok(s);
        };
        let mut restored = 0;
        let read = match Journal::read(path, layout.page_size()) {
            Ok(c) => Some(c),
            Err(e) if accept_loss => {
                s.accepted_loss = Some(e.to_string());
                None
            }
            Err(e) => return Err(e),
        };
        // The header names the journal's checkpoint or the next (see the module header).
        if let (Some(c), Some(h)) = (&read, named) {
            if h != c.checkpoint && h != c.checkpoint.saturating_add(1) {
                let d = format!(
                    "{what} names checkpoint {h} but the rollback journal {} is of checkpoint {}: \
                     a header is saved before its journal restarts, so it names the journal's \
                     checkpoint or the next one; the header or the journal was changed",
                    path.display(),
                    c.checkpoint
                );
                if !accept_loss {
                    return Err(Error::corrupted(
                        "store header",
                        format!(
                            "{d}. `spidx recover --accept-loss` opens it without rolling back; \
                             otherwise restore the index from a copy"
                        ),
                    ));
                }
                s.accepted_loss = Some(d);
            }
        }
        // A journal of an older checkpoint (a crash after the header named the next one)
        // rolls nothing back.
        if let Some(c) = read.filter(|c| c.checkpoint == checkpoint) {
            let mut damage = c.damage.clone();
            if let Some((page, crc)) = c.torn {
                let mut now = vec![0u8; layout.page_size()];
                let on_device = page < s.cache.device().capacity_pages()
                    && s.cache.device_mut().read(page, &mut now).is_ok();
                if !(on_device && super::journal::entry_matches(checkpoint, page, crc, &now)) {
                    damage = Some(format!(
                        "its last entry (page {page}) is damaged and the page no longer holds \
                         the image it saved: that page's checkpoint image is lost; the first \
                         {} page images can be rolled back",
                        c.images.len()
                    ));
                }
            }
            if let Some(d) = damage {
                let d = format!("journal {}: {d}", path.display());
                if !accept_loss {
                    return Err(Error::corrupted(
                        "rollback journal",
                        format!(
                            "{d}. `spidx recover --accept-loss` rolls back the valid entries \
                             and keeps the damaged pages as they are; otherwise restore the \
                             index from a copy"
                        ),
                    ));
                }
                s.accepted_loss = Some(d);
            }
            if !c.images.is_empty() {
                let dev = s.cache.device_mut();
                for (id, image) in &c.images {
                    dev.write(*id, image)?;
                }
                dev.sync()?;
                restored = c.images.len() as u64;
            }
        }
        if matches!(journaling, Journaling::On(_)) {
            let mut j = Journal::create(path, layout.page_size(), checkpoint)?;
            j.set_restored(restored);
            s.journal = Some(j);
        }
        s.restored = restored;
        Ok(s)
    }

    /// Damage of the journal that [`DirectStore::open_accepting`] accepted: what was lost.
    pub fn accepted_loss(&self) -> Option<&str> {
        self.accepted_loss.as_deref()
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
            resealer: Resealer::new(layout),
            cache,
            layout,
            checkpointed: header.clone(),
            header,
            header_path: header_path.map(Path::to_path_buf),
            stats: StoreStats::default(),
            journal: None,
            restored: 0,
            accepted_loss: None,
            sync: LogSync::None,
            unsynced_ops: 0,
        })
    }

    /// The journal's counters, if the store keeps one.
    /// A read-only open that rolled a journal back in memory reports only `restored`.
    pub(crate) fn journal_stats(&self) -> Option<JournalStats> {
        match &self.journal {
            Some(j) => Some(j.stats()),
            None if self.restored > 0 => Some(JournalStats {
                restored: self.restored,
                ..Default::default()
            }),
            None => None,
        }
    }

    /// Page images the opening recovery wrote back from the journal.
    pub(crate) fn restored_pages(&self) -> u64 {
        self.restored
    }

    /// Saves page `id`'s checkpointed image in the journal before its first overwrite
    /// since the last checkpoint (pages not in use at that checkpoint need none).
    fn protect(&mut self, id: PageId) -> Result<()> {
        let Some(j) = &mut self.journal else {
            return Ok(());
        };
        if j.has(id) || !self.checkpointed.in_use(id) {
            return Ok(());
        }
        let mut image = vec![0u8; self.layout.page_size()];
        self.cache.device_mut().read(id, &mut image)?;
        j.save(id, &image)
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
        self.protect(id)?;
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
        self.layout
            .encode_entries(level, entries, &mut self.scratch)?;
        self.stats.nodes_created += 1;
        self.write_scratch(id, level)?;
        Ok(id)
    }

    fn modify(&mut self, id: PageId, level: u32, changes: &[NodeChange<D>]) -> Result<()> {
        self.header.check_page(id)?;
        let layout = self.layout;
        let verify = |bytes: &[u8]| layout.verify(bytes, id);
        // Without a journal the cached page is edited in place (one device write, no page
        // copy); a journal must save the old image between reading the page and writing
        // it, so that path keeps a scratch copy. Both apply the same validated edit.
        if self.journal.is_none() {
            let resealer = self.resealer.as_ref();
            self.cache.update(id, level, verify, |page| {
                check_changes(&layout, id, page, changes)?;
                Ok(apply_checked(&layout, resealer, page, level, changes))
            })?;
            self.stats.page_writes += 1;
        } else {
            let page = self.cache.read_checked_ref(id, level, verify)?;
            check_changes(&layout, id, page, changes)?;
            self.scratch.copy_from_slice(page);
            apply_checked(
                &layout,
                self.resealer.as_ref(),
                &mut self.scratch,
                level,
                changes,
            );
            self.write_scratch(id, level)?;
        }
        self.stats.node_updates += 1;
        self.stats.entry_changes += changes.len() as u64;
        Ok(())
    }

    fn rewrite(&mut self, id: PageId, level: u32, entries: &[Entry<D>]) -> Result<()> {
        self.layout
            .encode_entries(level, entries, &mut self.scratch)?;
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

    fn tree_state(&self) -> Option<&TreeState> {
        self.header.tree_state.as_ref()
    }

    fn set_tree_state(&mut self, state: Option<TreeState>) {
        self.header.tree_state = state;
    }

    fn end_operation(&mut self) -> Result<()> {
        let due = match self.sync {
            LogSync::None => false,
            LogSync::EachOp => true,
            LogSync::Group(n) => {
                self.unsynced_ops += 1;
                self.unsynced_ops >= n
            }
        };
        if due {
            self.unsynced_ops = 0;
            // The operations' pages on the device, synced (counted); with a journal (a
            // `file:` device), the header names the state and the journal restarts from
            // it, so a crash rolls back to here and no further.
            self.cache.sync()?;
            if self.journal.is_some() {
                self.seal()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.cache.sync()?;
        self.cache.device_mut().persist()?;
        // A checkpoint is a durable point: a group counts from here.
        self.unsynced_ops = 0;
        self.seal()
    }

    fn stats(&self) -> StoreStats {
        self.stats
    }
}

impl DirectStore {
    /// Makes operations durable between checkpoints as `sync` says (`none`: only at
    /// checkpoints, the default): after every N-th (`group:N`) or every (`each-op`)
    /// operation the dirty pages are written and the device synced, and on a `file:`
    /// device the header saved and the rollback journal restarted. Per-operation
    /// durability for the plain tree, comparable with the logging stores' `log_sync`.
    pub(crate) fn with_sync(mut self, sync: LogSync) -> Self {
        self.sync = sync;
        self
    }

    /// After the device is synced: saves the header naming the next checkpoint and
    /// restarts the journal from it (the state on the device is the new rollback point).
    fn seal(&mut self) -> Result<()> {
        if let Some(path) = &self.header_path {
            // The device is synced: the new header may name the next checkpoint, and once
            // it is saved the old journal is no longer needed.
            if let Some(j) = &self.journal {
                self.header.checkpoint = Some(j.checkpoint() + 1);
            }
            self.header.save(path)?;
            if let (Some(j), Some(c)) = (&mut self.journal, self.header.checkpoint) {
                j.reset(c)?;
            }
        }
        self.checkpointed = self.header.clone();
        Ok(())
    }
}

/// Checks that `changes` can be applied to the node in `page` (every position exists,
/// pushes fit, pointers fit the layout), so that applying them cannot fail halfway.
fn check_changes<const D: usize>(
    layout: &NodeLayout,
    id: PageId,
    page: &[u8],
    changes: &[NodeChange<D>],
) -> Result<()> {
    let mut count = layout.view::<D>(page).len();
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
                layout.check_pointer(entry.ptr)?;
            }
            Change::Push(entry) => {
                if count >= layout.fits() {
                    return Err(Error::invalid(
                        "node change",
                        format!("node {id} is full ({count} entries)"),
                    ));
                }
                layout.check_pointer(entry.ptr)?;
                count += 1;
            }
            Change::Remove { pos } => {
                if pos >= count {
                    return Err(bad(pos, count));
                }
                count -= 1;
            }
        }
    }
    Ok(())
}

/// Applies `changes`, checked by [`check_changes`], to the node in `page` and reseals it
/// (the checksum moves by what the changed bytes change, see [`Resealer`]). Returns the
/// bytes that may have changed: the page header and the entries touched.
fn apply_checked<const D: usize>(
    layout: &NodeLayout,
    resealer: Option<&Resealer>,
    page: &mut [u8],
    level: u32,
    changes: &[NodeChange<D>],
) -> [std::ops::Range<usize>; 2] {
    let mut count = layout.view::<D>(page).len();
    let touched = touched_entries(layout, count, changes);
    let unsealed = resealer.map(|r| r.before(page, touched.clone()));
    let es = layout.entry_size();
    for c in changes {
        match *c {
            Change::Set { pos, entry } => layout.write_entry(page, pos, &entry),
            Change::Push(entry) => {
                layout.write_entry(page, count, &entry);
                count += 1;
            }
            Change::Remove { pos } => {
                let start = layout.entry_offset(pos);
                let end = layout.entry_offset(count);
                page.copy_within(start + es..end, start);
                page[end - es..end].fill(0);
                count -= 1;
            }
        }
    }
    layout.put_header_fields(page, level, count);
    match (unsealed, resealer) {
        (Some(u), Some(r)) => r.seal(page, u),
        _ => layout.seal(page),
    }
    [0..layout.entry_offset(0), touched]
}

/// The page bytes of the entries `changes` touch in a node of `count` entries: the
/// envelope of every entry set, pushed, or shifted by a removal (empty when none). Changes
/// at positions that do not exist are left out (`modify` refuses them).
fn touched_entries<const D: usize>(
    layout: &NodeLayout,
    mut count: usize,
    changes: &[NodeChange<D>],
) -> std::ops::Range<usize> {
    let fits = layout.fits();
    let (mut lo, mut hi) = (fits, 0);
    for c in changes {
        let (a, b) = match *c {
            Change::Set { pos, .. } => (pos, pos.saturating_add(1)),
            Change::Push(_) => {
                count += 1;
                (count - 1, count)
            }
            Change::Remove { pos } => {
                let r = (pos, count);
                count = count.saturating_sub(1);
                r
            }
        };
        let (a, b) = (a.min(fits), b.min(fits));
        if a < b {
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    if lo >= hi {
        return 0..0;
    }
    layout.entry_offset(lo)..layout.entry_offset(hi)
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

    fn page_accounting(&self) -> super::PageAccounting {
        super::PageAccounting {
            next_page: self.header.next_page,
            free: self.header.free.clone(),
            own: Vec::new(),
        }
    }

    fn save_header(&mut self) -> Result<()> {
        match &self.header_path {
            Some(p) => self.header.save(p),
            None => Ok(()),
        }
    }

    fn persist_device(&mut self) -> Result<()> {
        self.cache.device_mut().persist()
    }

    fn report(&self) -> StoreReport {
        StoreReport {
            kind: "direct".into(),
            nodes: self.stats,
            cache: self.cache.stats(),
            journal: self.journal_stats(),
            gauges: super::report::StoreGauges {
                pages_in_use: self.header.pages_in_use(),
            },
            settings: super::report::StoreSettings {
                durability: if self.journal.is_some() {
                    "checkpoint (rollback journal)".into()
                } else {
                    "checkpoint (no journal)".into()
                },
                log_device: String::new(),
            },
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheConfig;
    use crate::device::memory::{MemoryConfig, MemoryDevice};
    use crate::geom::Rect;
    use crate::node::LayoutKind;

    fn entry(i: u64, ptr: u64) -> Entry<2> {
        let v = i as f64;
        Entry {
            mbr: Rect::new([v, v], [v + 1.0, v + 1.0]).unwrap(),
            ptr,
            aux: 0,
        }
    }

    fn store(kind: LayoutKind, journal: Option<&Path>) -> DirectStore {
        let dev = MemoryDevice::open(&MemoryConfig::default(), 1024, None).unwrap();
        let cache = PageCache::new(Box::new(dev), &"lru:64KB".parse::<CacheConfig>().unwrap());
        let layout = NodeLayout::new(kind, 1024, 2).unwrap();
        let journaling = match journal {
            Some(p) => Journaling::On(p.to_path_buf()),
            None => Journaling::Off,
        };
        DirectStore::create_with(cache.unwrap(), layout, None, journaling).unwrap()
    }

    fn entries(s: &mut DirectStore, id: PageId) -> Vec<Entry<2>> {
        let page = NodeStore::<2>::read(s, id, 0).unwrap();
        let v = page.view::<2>();
        (0..v.len()).map(|i| v.entry(i)).collect()
    }

    /// A change list with one bad change is refused whole: the node and the device stay
    /// as they were, on the in-place path and on the journaled copy path alike.
    #[test]
    fn a_refused_change_list_leaves_the_node_and_the_device_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        for (kind, journal) in [
            (LayoutKind::Checked, None),
            (LayoutKind::Checked, Some(dir.path().join("journal"))),
            (LayoutKind::Seed, None),
        ] {
            let mut s = store(kind, journal.as_deref());
            let id = NodeStore::<2>::create(&mut s, 0, &[entry(1, 10), entry(2, 20)]).unwrap();
            let before = entries(&mut s, id);
            let writes = s.cache().device().stats().host.pages_written;
            let mut refused = vec![
                (
                    vec![
                        NodeChange::Set {
                            pos: 0,
                            entry: entry(5, 50),
                        },
                        NodeChange::Remove { pos: 2 },
                    ],
                    "entry 2 does not exist",
                ),
                (
                    vec![
                        NodeChange::Remove { pos: 1 },
                        NodeChange::Set {
                            pos: 1,
                            entry: entry(5, 50),
                        },
                    ],
                    "entry 1 does not exist",
                ),
            ];
            if kind == LayoutKind::Seed {
                refused.push((
                    vec![
                        NodeChange::Push(entry(3, 30)),
                        NodeChange::Push(entry(4, 1 << 40)),
                    ],
                    "32-bit pointers",
                ));
            }
            let fits = NodeStore::<2>::layout(&s).fits();
            let full: Vec<NodeChange<2>> = (0..fits)
                .map(|i| NodeChange::Push(entry(i as u64, 7)))
                .collect();
            refused.push((full, "is full"));
            for (changes, says) in refused {
                let err = s.modify(id, 0, &changes).unwrap_err().to_string();
                assert!(err.contains(says), "{kind:?}: {err}");
                assert_eq!(entries(&mut s, id), before, "{kind:?}: {says}");
                let now = s.cache().device().stats().host.pages_written;
                assert_eq!(now, writes, "{kind:?}: {says}: a page was written");
            }
            // A valid list still applies after the refusals.
            s.modify(
                id,
                0,
                &[
                    NodeChange::Remove { pos: 0 },
                    NodeChange::Push(entry(9, 90)),
                ],
            )
            .unwrap();
            assert_eq!(
                entries(&mut s, id),
                vec![before[1], entry(9, 90)],
                "{kind:?}"
            );
            s.cache_mut().clear().unwrap();
            assert_eq!(
                entries(&mut s, id),
                vec![before[1], entry(9, 90)],
                "{kind:?} on the device"
            );
        }
    }
}
