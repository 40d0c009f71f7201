//! [`PageCache`]: a write-through or write-back page cache over a device.

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::buffer::Buffer;
use super::queues::KeyMap;
use super::CacheConfig;
use crate::device::Device;
use crate::{Error, Result};

/// How many evicted page buffers are kept for reuse by later faults.
const SPARE_BUFFERS: usize = 8;

/// Counters of a [`PageCache`]. Reads are counted per page request: every
/// [`PageCache::read`] is either a hit or a fault, and every fault is one device read.
/// Serialized with the levels (resident and dirty pages) under `gauges` and the capacity
/// under `settings` (the Rust fields stay flat).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "CacheStatsShape", from = "CacheStatsShape")]
pub struct CacheStats {
    /// Reads served from the cache.
    pub hits: u64,
    /// Reads that went to the device.
    pub faults: u64,
    /// Pages that entered the cache (after a fault or a write).
    pub admissions: u64,
    /// Pages the policy refused to keep (always, for `none`; HLRU when every resident
    /// page is of a higher level).
    pub refused: u64,
    /// Pages evicted to make room.
    pub evictions: u64,
    /// Write requests sent to the device (a [`PageCache::write_run`] is one).
    pub write_requests: u64,
    /// Pages written through to the device (write-back: only the pages the policy refused
    /// to keep).
    pub pages_written: u64,
    /// Pages resident now (a gauge).
    pub resident_pages: u64,
    /// Capacity in pages (a setting).
    pub capacity_pages: u64,
    /// Write-back: page writes kept in the cache as dirty pages instead of written.
    #[serde(default)]
    pub deferred_writes: u64,
    /// Write-back: deferred writes superseded before reaching the device, by a later write
    /// of the same page (device writes saved).
    #[serde(default)]
    pub dirty_overwrites: u64,
    /// Write-back: dirty pages evicted by the policy, each written to the device as one
    /// request at eviction.
    #[serde(default)]
    pub dirty_evictions: u64,
    /// Write-back: dirty pages written by a sync, a cache drop or a persist (the final
    /// write-back), one request each, in page order.
    #[serde(default)]
    pub flush_writebacks: u64,
    /// Write-back: dirty pages dropped unwritten because their page was invalidated
    /// (freed by the store).
    #[serde(default)]
    pub dirty_discarded: u64,
    /// Write-back: dirty pages resident now (a gauge).
    #[serde(default)]
    pub dirty_pages: u64,
}

/// [`CacheStats`] as serialized: counters, then gauges and settings apart.
#[derive(Serialize, Deserialize)]
struct CacheStatsShape {
    hits: u64,
    faults: u64,
    admissions: u64,
    refused: u64,
    evictions: u64,
    write_requests: u64,
    pages_written: u64,
    #[serde(default)]
    deferred_writes: u64,
    #[serde(default)]
    dirty_overwrites: u64,
    #[serde(default)]
    dirty_evictions: u64,
    #[serde(default)]
    flush_writebacks: u64,
    #[serde(default)]
    dirty_discarded: u64,
    gauges: CacheGauges,
    settings: CacheSettings,
}

/// A page cache's levels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
struct CacheGauges {
    /// Pages resident now.
    pub resident_pages: u64,
    /// Write-back: dirty pages resident now.
    #[serde(default)]
    pub dirty_pages: u64,
}

/// A page cache's configured values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
struct CacheSettings {
    /// Capacity in pages.
    pub capacity_pages: u64,
}

impl From<CacheStats> for CacheStatsShape {
    fn from(c: CacheStats) -> Self {
        CacheStatsShape {
            hits: c.hits,
            faults: c.faults,
            admissions: c.admissions,
            refused: c.refused,
            evictions: c.evictions,
            write_requests: c.write_requests,
            pages_written: c.pages_written,
            deferred_writes: c.deferred_writes,
            dirty_overwrites: c.dirty_overwrites,
            dirty_evictions: c.dirty_evictions,
            flush_writebacks: c.flush_writebacks,
            dirty_discarded: c.dirty_discarded,
            gauges: CacheGauges {
                resident_pages: c.resident_pages,
                dirty_pages: c.dirty_pages,
            },
            settings: CacheSettings {
                capacity_pages: c.capacity_pages,
            },
        }
    }
}

impl From<CacheStatsShape> for CacheStats {
    fn from(s: CacheStatsShape) -> Self {
        CacheStats {
            hits: s.hits,
            faults: s.faults,
            admissions: s.admissions,
            refused: s.refused,
            evictions: s.evictions,
            write_requests: s.write_requests,
            pages_written: s.pages_written,
            resident_pages: s.gauges.resident_pages,
            capacity_pages: s.settings.capacity_pages,
            deferred_writes: s.deferred_writes,
            dirty_overwrites: s.dirty_overwrites,
            dirty_evictions: s.dirty_evictions,
            flush_writebacks: s.flush_writebacks,
            dirty_discarded: s.dirty_discarded,
            dirty_pages: s.gauges.dirty_pages,
        }
    }
}

impl CacheStats {
    /// Counter-wise difference `self - earlier` (the resident and capacity figures are
    /// `self`'s), to get the counts of one phase of a run.
    pub fn since(&self, earlier: &CacheStats) -> CacheStats {
        CacheStats {
            hits: self.hits - earlier.hits,
            faults: self.faults - earlier.faults,
            admissions: self.admissions - earlier.admissions,
            refused: self.refused - earlier.refused,
            evictions: self.evictions - earlier.evictions,
            write_requests: self.write_requests - earlier.write_requests,
            pages_written: self.pages_written - earlier.pages_written,
            deferred_writes: self.deferred_writes - earlier.deferred_writes,
            dirty_overwrites: self.dirty_overwrites - earlier.dirty_overwrites,
            dirty_evictions: self.dirty_evictions - earlier.dirty_evictions,
            flush_writebacks: self.flush_writebacks - earlier.flush_writebacks,
            dirty_discarded: self.dirty_discarded - earlier.dirty_discarded,
            ..*self
        }
    }

    /// Pages the cache wrote to the device: written through, written back at eviction and
    /// written back by syncs.
    pub fn device_page_writes(&self) -> u64 {
        self.pages_written + self.dirty_evictions + self.flush_writebacks
    }

    /// Hits over reads (0 when nothing was read).
    pub fn hit_ratio(&self) -> f64 {
        let reads = self.hits + self.faults;
        if reads == 0 {
            0.0
        } else {
            self.hits as f64 / reads as f64
        }
    }
}

/// A page cache over a [`Device`]: the layer node stores read and write pages through.
///
/// - **Reads** ([`read`](Self::read)) return the cached copy on a hit; on a fault they
///   read the page from the device (one request) and offer it to the policy.
/// - **Write-through** (the default; [`write`](Self::write), [`write_run`](Self::write_run)):
///   the device is written at once, so the cache never holds dirty pages and needs no
///   flush; the new copy replaces the cached one if the page is resident, or is offered
///   to the policy like a fault would be (a store that writes a node usually reads it
///   again soon). A write counts as an access for the policy but neither as a hit nor as
///   a fault. If the device write fails, the cached copies of the pages are dropped.
/// - **Write-back** ([`WritePolicy::WriteBack`](super::WritePolicy)): a written page is
///   kept as above but marked dirty instead of written; a page the policy refuses (HLRU)
///   is written through, and so are runs ([`write_run`](Self::write_run): a flash-aware
///   store's explicit flush of a unit, which its log relies on being on the device). A dirty page is written (one request) when the policy evicts it,
///   after the request that caused the eviction; [`sync`](Self::sync),
///   [`drop_caches`](Self::drop_caches), [`clear`](Self::clear) and
///   [`persist`](Self::persist) write every dirty page, one request each in page order.
///   [`invalidate`](Self::invalidate) drops a dirty page unwritten (its page was freed).
///   Dirty pages exist only in memory: a crash, or dropping the cache without a sync,
///   loses them. [`CacheStats`] counts deferred writes, dirty evictions and the final
///   write-back apart from write-through writes.
/// - Pages are shared as `Arc<[u8]>`: a caller may keep a page while the cache evicts or
///   replaces it; the cache never changes a copy someone else holds.
///
/// Every read and write carries a *level* hint, the height of the node in the page (leaf
/// = 0), used by HLRU and ignored by the other policies.
pub struct PageCache {
    device: Box<dyn Device>,
    config: CacheConfig,
    page_size: usize,
    buffer: Buffer<Arc<[u8]>>,
    spare: Vec<Arc<[u8]>>,
    /// The last page [`read_checked_ref`](Self::read_checked_ref) read from the device.
    lent: Option<Arc<[u8]>>,
    /// An empty page offered to a `none` policy, which refuses it: the refusal is counted
    /// without a page copied or allocated.
    no_page: Arc<[u8]>,
    write_requests: u64,
    pages_written: u64,
    /// Write-back: the resident pages the device does not hold yet.
    dirty: KeyMap<()>,
    /// Write-back: dirty pages just evicted, to be written before the call returns.
    evicted: Vec<(u64, Arc<[u8]>)>,
    wb: WriteBackCounts,
}

/// The write-back counters of a [`PageCache`] (see [`CacheStats`]).
#[derive(Debug, Clone, Copy, Default)]
struct WriteBackCounts {
    deferred: u64,
    overwrites: u64,
    evictions: u64,
    flushed: u64,
    discarded: u64,
}

impl PageCache {
    /// A cache described by `config` over `device`, whose page size is the cache's. Fails
    /// if the configuration is invalid or holds less than one page.
    pub fn new(device: Box<dyn Device>, config: &CacheConfig) -> Result<PageCache> {
        let page_size = device.page_size();
        let policy = config.build_policy(page_size)?;
        Ok(PageCache {
            device,
            config: config.clone(),
            page_size,
            buffer: Buffer::new(policy),
            spare: Vec::new(),
            lent: None,
            no_page: Arc::from(&[][..]),
            write_requests: 0,
            pages_written: 0,
            dirty: KeyMap::default(),
            evicted: Vec::new(),
            wb: WriteBackCounts::default(),
        })
    }

    /// Whether the cache writes back (keeps written pages dirty) instead of through.
    pub fn is_write_back(&self) -> bool {
        self.config.is_write_back()
    }

    /// Whether `page` is resident and dirty (written in the cache, not yet on the device).
    pub fn is_dirty(&self, page: u64) -> bool {
        self.dirty.contains_key(&page)
    }

    /// Page size in bytes (the device's).
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The configuration the cache was built from.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// The device below the cache.
    pub fn device(&self) -> &dyn Device {
        self.device.as_ref()
    }

    /// The device below the cache, for operations the cache does not offer. Pages written
    /// directly through it bypass the cache: [`invalidate`](Self::invalidate) them
    /// afterwards. A write-back cache's dirty pages are not on the device: read or sync
    /// the device directly only after [`sync`](Self::sync).
    pub fn device_mut(&mut self) -> &mut dyn Device {
        self.device.as_mut()
    }

    /// Gives the device back, dropping the cache. A write-back cache's dirty pages are
    /// lost, as in a crash: [`sync`](Self::sync) first to keep them.
    pub fn into_device(self) -> Box<dyn Device> {
        self.device
    }

    /// Whether `page` is cached (no effect on the policy or the counters).
    pub fn is_cached(&self, page: u64) -> bool {
        self.buffer.contains(page)
    }

    /// Reads one page holding a node of `level`: the cached copy on a hit, otherwise one
    /// device read whose result the policy may keep.
    pub fn read(&mut self, page: u64, level: u32) -> Result<Arc<[u8]>> {
        self.read_checked(page, level, |_| Ok(()))
    }

    /// Like [`PageCache::read`], but a page coming from the device is first passed to
    /// `verify` (e.g. a checksum test); a page that fails is neither cached nor returned.
    /// Cached copies are not verified again.
    pub(crate) fn read_checked(
        &mut self,
        page: u64,
        level: u32,
        verify: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<Arc<[u8]>> {
        if let Some(data) = self.buffer.get(page, level) {
            return Ok(Arc::clone(data));
        }
        self.fault(page, level, verify)
    }

    /// The miss path of the reads (the miss is already counted): one device read, the
    /// verification, and the policy's decision whether to keep the page.
    fn fault(
        &mut self,
        page: u64,
        level: u32,
        verify: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<Arc<[u8]>> {
        let mut data = self.fresh_page();
        let buf = Arc::get_mut(&mut data).expect("a fresh page buffer is not shared");
        if let Err(e) = self.device.read(page, buf).and_then(|()| verify(buf)) {
            self.recycle(data);
            return Err(e);
        }
        let (spare, dirty, evicted) = (&mut self.spare, &mut self.dirty, &mut self.evicted);
        let _ = self
            .buffer
            .insert_with(page, level, Arc::clone(&data), |k, v| {
                evict(spare, dirty, evicted, k, v)
            });
        self.write_evicted()?;
        Ok(data)
    }

    /// Like [`read_checked`](Self::read_checked) (the same policy decisions, counters and
    /// device requests), but lends the page instead of sharing it: no reference count is
    /// taken on a hit. The page stays borrowed until the next call on the cache. A page
    /// the policy did not keep is held by the cache until the next such read.
    pub fn read_checked_ref(
        &mut self,
        page: u64,
        level: u32,
        verify: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<&[u8]> {
        if self.buffer.touch(page, level) {
            return Ok(self.buffer.peek(page).expect("a touched page is resident"));
        }
        let data = self.fault(page, level, verify)?;
        if self.buffer.contains(page) {
            // Admitted: lend the cached copy, so that it stays unshared (later writes of
            // the page update it in place).
            drop(data);
            if let Some(old) = self.lent.take() {
                recycle(&mut self.spare, old);
            }
            return Ok(self.buffer.peek(page).expect("resident"));
        }
        // The page lent before is free again (unless a caller kept it): reuse its buffer.
        if let Some(old) = self.lent.replace(data) {
            recycle(&mut self.spare, old);
        }
        Ok(self.lent.as_deref().expect("just lent"))
    }

    /// A read of `page` for a caller that does not use its bytes (a store that already
    /// holds the node they encode, but whose model reads the page): exactly the policy
    /// accesses, counters and device requests of [`read_checked_ref`](Self::read_checked_ref).
    /// A cache that keeps no pages (`none`) asks the device for the page without its bytes
    /// ([`Device::read_unused`]: a device in memory copies nothing) and so does not verify
    /// them; any other reads and verifies it as `read_checked_ref` does, since its policy
    /// may keep it.
    pub fn read_unused(
        &mut self,
        page: u64,
        level: u32,
        verify: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if self.buffer.capacity() != 0 {
            return self.read_checked_ref(page, level, verify).map(|_| ());
        }
        if self.buffer.touch(page, level) {
            return Ok(());
        }
        self.device.read_unused(page, 1)?;
        // `none`: count the refusal without a page, as `store` does.
        self.buffer.insert(page, level, Arc::clone(&self.no_page));
        Ok(())
    }

    /// Reads `page` and writes it back changed by `edit`, with exactly the effects of
    /// [`read_checked_ref`](Self::read_checked_ref) followed by [`write`](Self::write) of
    /// the edited bytes (the same counters, policy accesses and device requests), but
    /// without copying a resident page: its cached copy is edited in place (copied first
    /// only if someone else holds it). `edit` returns the byte ranges it changed (the
    /// device may copy only those, [`Device::write_changed`]); an `edit` that fails must
    /// leave the bytes as they were: nothing is written then and its error is returned. A
    /// failed device write drops the cached copy, as `write` does.
    pub fn update(
        &mut self,
        page: u64,
        level: u32,
        verify: impl FnOnce(&[u8]) -> Result<()>,
        edit: impl FnOnce(&mut [u8]) -> Result<[Range<usize>; 2]>,
    ) -> Result<()> {
        if !self.buffer.touch(page, level) {
            // A fault: the page was not resident, so there is nothing to edit in place.
            let data = self.fault(page, level, verify)?;
            let mut copy = self.fresh_page();
            let buf = Arc::get_mut(&mut copy).expect("a fresh page buffer is not shared");
            buf.copy_from_slice(&data);
            drop(data);
            self.lent = None;
            let result = edit(buf).and_then(|_| self.write(page, &copy, level));
            self.recycle(copy);
            return result;
        }
        // The write's access to the resident page (`store` makes the same one).
        let slot = self
            .buffer
            .get_mut(page, level)
            .expect("a touched page is resident");
        if Arc::get_mut(slot).is_none() {
            *slot = Arc::from(&slot[..]);
        }
        let buf = Arc::get_mut(slot).expect("the cached copy was just made unshared");
        let changed = edit(buf)?;
        if self.config.is_write_back() {
            self.wb.deferred += 1;
            if self.dirty.insert(page, ()).is_some() {
                self.wb.overwrites += 1;
            }
            return Ok(());
        }
        // A resident page of a write-through cache is what the device holds, so only the
        // changed bytes differ.
        if let Err(e) = self.device.write_changed(page, buf, &changed) {
            self.invalidate(page);
            return Err(e);
        }
        self.write_requests += 1;
        self.pages_written += 1;
        Ok(())
    }

    /// Writes one page holding a node of `level`: through to the device (one request),
    /// keeping the new copy if the page is resident or the policy admits it; or, in a
    /// write-back cache, into the cache as a dirty page (written through if the policy
    /// refuses it).
    pub fn write(&mut self, page: u64, data: &[u8], level: u32) -> Result<()> {
        if data.len() != self.page_size {
            return Err(Error::invalid(
                "page write",
                format!(
                    "{} bytes written to page {page}; a page is {} bytes",
                    data.len(),
                    self.page_size
                ),
            ));
        }
        if self.is_write_back() {
            return self.write_deferred(page, data, level);
        }
        self.write_through(page, data, 1)?;
        self.store(page, level, data);
        self.write_evicted()
    }

    /// Writes consecutive pages `first_page..first_page + n` from `data` (`n` pages, one
    /// level per page in `levels`) as **one** device request, as flash-aware stores flush
    /// their units sequentially; then updates the cache as [`write`](Self::write) does for
    /// each page. A run is a store's explicit flush of a unit (the buffered stores): it reaches the
    /// device at once in a write-back cache too, and its pages are clean afterwards.
    pub fn write_run(&mut self, first_page: u64, data: &[u8], levels: &[u32]) -> Result<()> {
        let ps = self.page_size;
        if data.is_empty() || !data.len().is_multiple_of(ps) || data.len() / ps != levels.len() {
            return Err(Error::invalid(
                "page run write",
                format!(
                    "{} bytes with {} levels; give n whole {ps}-byte pages and n levels (n > 0)",
                    data.len(),
                    levels.len()
                ),
            ));
        }
        self.write_through(first_page, data, levels.len() as u64)?;
        // Deferred writes of these pages are superseded by the run, now on the device; mark
        // the pages clean before storing, so that no stale dirty copy is written back.
        for page in first_page..first_page + levels.len() as u64 {
            if self.dirty.remove(&page).is_some() {
                self.wb.overwrites += 1;
            }
        }
        for (i, (chunk, &level)) in data.chunks_exact(ps).zip(levels).enumerate() {
            self.store(first_page + i as u64, level, chunk);
        }
        self.write_evicted()
    }

    /// The write-back path of a one-page write: keep the page dirty if the policy keeps
    /// it, else write it through; then write what the admission evicted.
    fn write_deferred(&mut self, page: u64, data: &[u8], level: u32) -> Result<()> {
        if self.store(page, level, data) {
            self.wb.deferred += 1;
            if self.dirty.insert(page, ()).is_some() {
                self.wb.overwrites += 1;
            }
            self.write_evicted()
        } else {
            self.write_evicted()?;
            self.write_through(page, data, 1)
        }
    }

    /// Writes the dirty pages the last admission evicted, one request each. On a device
    /// error the page being written and those after it are lost from the cache (the error
    /// says which); this only happens when the device itself fails.
    fn write_evicted(&mut self) -> Result<()> {
        let mut evicted = std::mem::take(&mut self.evicted);
        let mut result = Ok(());
        for (i, (page, data)) in evicted.iter().enumerate() {
            if let Err(e) = self.device.write(*page, data) {
                let lost: Vec<String> = evicted[i..].iter().map(|(p, _)| p.to_string()).collect();
                result = Err(Error::corrupted(
                    "write-back cache",
                    format!(
                        "writing back evicted dirty page {page} failed ({e}); the newest \
                         contents of page(s) {} were lost",
                        lost.join(", ")
                    ),
                ));
                break;
            }
            self.wb.evictions += 1;
        }
        for (_, data) in evicted.drain(..) {
            self.recycle(data);
        }
        self.evicted = evicted;
        result
    }

    /// Writes every dirty page to the device, one request each in page order; a page whose
    /// write fails stays dirty (nothing is lost).
    fn write_back_dirty(&mut self) -> Result<()> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        let mut pages: Vec<u64> = self.dirty.keys().copied().collect();
        pages.sort_unstable();
        for page in pages {
            let data = self.buffer.peek(page).expect("a dirty page is resident");
            self.device.write(page, data)?;
            self.dirty.remove(&page);
            self.wb.flushed += 1;
        }
        Ok(())
    }

    /// Drops the cached copy of `page` (and the policy's memory of it, such as a 2Q ghost
    /// entry), e.g. after the page was freed; returns whether it was cached. A dirty copy
    /// is dropped unwritten (counted in `dirty_discarded`).
    pub fn invalidate(&mut self, page: u64) -> bool {
        if self.dirty.remove(&page).is_some() {
            self.wb.discarded += 1;
        }
        match self.buffer.remove(page) {
            Some(v) => {
                self.recycle(v);
                true
            }
            None => false,
        }
    }

    /// Empties the cache and the policy's history, as between query repetitions, after
    /// writing back the dirty pages of a write-back cache (an error leaves the cache as
    /// it was). The device's own caches are kept; see [`drop_caches`](Self::drop_caches).
    pub fn clear(&mut self) -> Result<()> {
        self.write_back_dirty()?;
        self.buffer.clear();
        self.lent = None;
        Ok(())
    }

    /// Empties the cache (writing back dirty pages first) and asks the device to forget
    /// its cached data too, so that the next reads are cold.
    pub fn drop_caches(&mut self) -> Result<()> {
        self.clear()?;
        self.device.drop_caches()
    }

    /// Makes every write durable on the device: writes back the dirty pages of a
    /// write-back cache (the final write-back) and syncs the device.
    pub fn sync(&mut self) -> Result<()> {
        self.write_back_dirty()?;
        self.device.sync()
    }

    /// Writes back the dirty pages, then syncs and saves the device's state (see
    /// [`Device::persist`]).
    pub fn persist(&mut self) -> Result<()> {
        self.write_back_dirty()?;
        self.device.persist()
    }

    /// The cache's counters (the device's are in `device().stats()`).
    pub fn stats(&self) -> CacheStats {
        let b = self.buffer.stats();
        CacheStats {
            hits: b.hits,
            faults: b.misses,
            admissions: b.admissions,
            refused: b.refused,
            evictions: b.evictions,
            write_requests: self.write_requests,
            pages_written: self.pages_written,
            resident_pages: self.buffer.len() as u64,
            capacity_pages: self.buffer.capacity() as u64,
            deferred_writes: self.wb.deferred,
            dirty_overwrites: self.wb.overwrites,
            dirty_evictions: self.wb.evictions,
            flush_writebacks: self.wb.flushed,
            dirty_discarded: self.wb.discarded,
            dirty_pages: self.dirty.len() as u64,
        }
    }

    fn write_through(&mut self, page: u64, data: &[u8], pages: u64) -> Result<()> {
        if let Err(e) = self.device.write(page, data) {
            for p in page..page.saturating_add(pages) {
                self.invalidate(p);
            }
            return Err(e);
        }
        self.write_requests += 1;
        self.pages_written += pages;
        Ok(())
    }

    /// Puts a just-written copy of `page` in the cache if it is resident or admitted;
    /// returns whether it is resident now. Dirty pages the admission evicts wait in
    /// `evicted` for [`write_evicted`](Self::write_evicted).
    fn store(&mut self, page: u64, level: u32, data: &[u8]) -> bool {
        if let Some(slot) = self.buffer.get_mut(page, level) {
            match Arc::get_mut(slot) {
                Some(buf) => buf.copy_from_slice(data),
                None => *slot = Arc::from(data),
            }
            return true;
        }
        if self.buffer.capacity() == 0 {
            // `none`: count the refusal without copying the page.
            self.buffer.insert(page, level, Arc::clone(&self.no_page));
            return false;
        }
        let mut copy = self.fresh_page();
        Arc::get_mut(&mut copy)
            .expect("a fresh page buffer is not shared")
            .copy_from_slice(data);
        let (spare, dirty, evicted) = (&mut self.spare, &mut self.dirty, &mut self.evicted);
        match self
            .buffer
            .insert_with(page, level, copy, |k, v| evict(spare, dirty, evicted, k, v))
        {
            Ok(()) => true,
            Err(v) => {
                recycle(spare, v);
                false
            }
        }
    }

    /// A page buffer nobody else holds, for a caller that fills every byte of it: a
    /// recycled one (its old contents left as they were) or a new one.
    pub(crate) fn fresh_page(&mut self) -> Arc<[u8]> {
        self.spare
            .pop()
            .unwrap_or_else(|| std::iter::repeat_n(0u8, self.page_size).collect())
    }

    fn recycle(&mut self, page: Arc<[u8]>) {
        recycle(&mut self.spare, page);
    }

    /// Takes back a page buffer this cache handed out and the caller no longer needs (a
    /// store's own read buffer evicted it), so that a later read fills it instead of
    /// allocating and zeroing a new one. Kept only if nobody else holds it.
    pub fn reuse(&mut self, page: Arc<[u8]>) {
        if page.len() == self.page_size {
            self.recycle(page);
        }
    }
}

/// Handles a page the policy evicted: a dirty one waits in `evicted` to be written, a
/// clean one is recycled.
fn evict(
    spare: &mut Vec<Arc<[u8]>>,
    dirty: &mut KeyMap<()>,
    evicted: &mut Vec<(u64, Arc<[u8]>)>,
    page: u64,
    data: Arc<[u8]>,
) {
    if dirty.remove(&page).is_some() {
        evicted.push((page, data));
    } else {
        recycle(spare, data);
    }
}

/// Keeps an evicted page buffer for reuse if nobody else holds it.
fn recycle(spare: &mut Vec<Arc<[u8]>>, mut page: Arc<[u8]>) {
    if spare.len() < SPARE_BUFFERS && Arc::get_mut(&mut page).is_some() {
        spare.push(page);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialized_levels_and_capacity_are_apart_and_round_trip() {
        let c = CacheStats {
            hits: 4,
            resident_pages: 9,
            capacity_pages: 64,
            dirty_pages: 2,
            ..Default::default()
        };
        let j = serde_json::to_value(c).unwrap();
        assert_eq!(j["hits"], 4);
        assert_eq!(j["gauges"]["resident_pages"], 9);
        assert_eq!(j["gauges"]["dirty_pages"], 2);
        assert_eq!(j["settings"]["capacity_pages"], 64);
        for flat in ["resident_pages", "dirty_pages", "capacity_pages"] {
            assert!(j.get(flat).is_none(), "{j}");
        }
        assert_eq!(serde_json::from_value::<CacheStats>(j).unwrap(), c);
    }
}
