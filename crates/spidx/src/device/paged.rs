//! Page data of a simulated device that opens lazily and saves incrementally.
//!
//! A [`PageStore`] holds the pages of a simulated device (the memory device's pages, the
//! FTL's logical pages, the hard disk's pages). Saved, they live in an append-only *pages
//! file* next to the device's state file; the state file (written atomically by
//! [`save_state_as`](super::pages::save_state_as), checksummed) holds the pages file's name,
//! its committed length and an index giving, for every saved page, its offset in the pages
//! file and the CRC-32 of its image: inline in the state file for the small stores (the
//! FTL's tables, the object directory, state files of the formats before
//! [`INDEX_PAGED_FORMAT`](super::pages::INDEX_PAGED_FORMAT)), itself in pages for a device's
//! data ([`index`]: only the index pages changed are written by a save). Opening a device
//! reads the state file only; a page is read from the pages file (one `pread`, its CRC
//! checked) the first time it is used, and kept in memory from then on. Saving appends only
//! the pages written since the last save and then the state file is replaced, so:
//!
//! * a crash after the pages were appended but before the state file was replaced leaves
//!   the previous state file, which names only bytes below its committed length: the
//!   previous checkpoint stays readable (the next save truncates the unreferenced tail);
//! * when more than half of the pages file is superseded page images (and it is larger
//!   than [`COMPACT_MIN`]), a save writes the live pages to a new pages file of the next
//!   generation (`<state file>.pages-<generation>`) instead; older generations are deleted
//!   by a later save, except the one the checkpoint backup `<state file>.bak` names (a
//!   checkpoint in progress can still put it back; see `crate::spatial`);
//! * a state file copied under another name (the experiment runner's replay copies) reads
//!   the pages file it names; saving it writes a pages file of its own.
//!
//! Pages file layout: a 32-byte header (magic `SPIDXPGS`, format version, page size,
//! generation, CRC-32 of the header), then page images of `page_size` bytes each. Every
//! damage is named: a missing or truncated pages file, a bad header, an index entry past
//! the committed length and a page failing its CRC are [`Error::Corrupted`] errors, never a
//! panic or a silently zeroed page.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use self::index::PagedIndex;
use super::pages::{
    checked_payload, PageArray, FTL_PAGED_FORMAT, INDEXED_FORMATS, INDEX_PAGED_FORMAT,
    SSD_SEQ_WRITE_FORMAT,
};
use crate::{Error, Result};

pub(crate) mod index;
mod saved;
pub(crate) mod table;

pub(crate) use self::saved::Indexed;

const MAGIC: &[u8; 8] = b"SPIDXPGS";
const VERSION: u32 = 1;
/// Bytes of the pages file's header.
pub(crate) const HEADER: u64 = 32;
/// A pages file smaller than this is never compacted (its garbage costs little).
pub(crate) const COMPACT_MIN: u64 = 4 << 20;

/// One saved page: where its image is and its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Slot {
    page: u64,
    offset: u64,
    crc: u32,
}

/// The index of a pages file: inline in the state file (the small stores: the FTL's
/// tables, the index pages themselves, and the state formats before
/// [`super::pages::INDEX_PAGED_FORMAT`]), or paged ([`index`]).
#[derive(Debug)]
enum Index {
    Inline(Vec<Slot>),
    Paged(Box<PagedIndex>),
}

impl Index {
    fn len(&self) -> u64 {
        match self {
            Index::Inline(v) => v.len() as u64,
            Index::Paged(p) => p.live(),
        }
    }

    fn all(&self) -> Result<Vec<Slot>> {
        match self {
            Index::Inline(v) => Ok(v.clone()),
            Index::Paged(p) => p.all(),
        }
    }
}

/// The saved pages file: its name (in the state file's directory), generation, committed
/// length, superseded bytes and the index of the pages it holds, sorted by page.
#[derive(Debug)]
struct Base {
    name: String,
    generation: u64,
    len: u64,
    garbage: u64,
    index: Index,
    /// The opened file and its path, once [`PageStore::attach`] ran.
    file: Option<(File, PathBuf)>,
    writable: bool,
}

impl Base {
    fn find(&self, page: u64) -> Result<Option<Slot>> {
        match &self.index {
            Index::Inline(v) => Ok(v.binary_search_by_key(&page, |s| s.page).ok().map(|i| v[i])),
            Index::Paged(p) => p.get(page),
        }
    }
}

/// What a save wrote (for tests and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaveReport {
    /// Page images written.
    pub pages: u64,
    /// Bytes written to the pages file (header included when a new file was written).
    pub bytes: u64,
    /// Whether a new pages file (generation) was written: first save, compaction, or a
    /// state saved under a new name.
    pub new_file: bool,
    /// Index pages written (a store with a paged index; see [`index`]).
    pub index_pages: u64,
    /// Bytes written to the index pages file.
    pub index_bytes: u64,
}

/// The pages of a simulated device, read lazily from a pages file and saved incrementally
/// (see the module documentation).
#[derive(Debug, Default)]
pub struct PageStore {
    page_size: usize,
    /// Pages read from the pages file or written since opening.
    mem: PageArray,
    /// Pages written since the last save.
    dirty: BTreeSet<u64>,
    base: Option<Base>,
    /// Whether the index is paged ([`index`]) rather than saved inline.
    paged: bool,
}

impl PageStore {
    /// An empty store of pages of `page_size` bytes.
    pub fn new(page_size: usize) -> Self {
        PageStore {
            page_size,
            mem: PageArray::new(page_size),
            dirty: BTreeSet::new(),
            base: None,
            paged: false,
        }
    }

    /// An empty store whose page index is paged (saved with [`Indexed`]; see [`index`]).
    pub fn new_paged(page_size: usize) -> Self {
        PageStore {
            paged: true,
            ..PageStore::new(page_size)
        }
    }

    /// Makes the page index paged: the next save writes every index page, and the store
    /// must then be saved with [`Indexed`] (a store loaded from a state format before
    /// [`super::pages::INDEX_PAGED_FORMAT`]).
    pub fn use_paged_index(&mut self) {
        if self.paged {
            return;
        }
        self.paged = true;
        if let Some(b) = &mut self.base {
            if let Index::Inline(slots) = &b.index {
                let ix = PagedIndex::build(
                    table::TablePages::new(),
                    slots,
                    self.page_size as u64,
                    b.len,
                );
                b.index = Index::Paged(Box::new(ix));
            }
        }
    }

    fn paged_index(&self) -> Option<&PagedIndex> {
        match &self.base.as_ref()?.index {
            Index::Paged(p) => Some(p),
            Index::Inline(_) => None,
        }
    }

    /// Index pages read from the index pages file so far (0 for an inline index).
    pub fn loaded_index_pages(&self) -> usize {
        self.paged_index().map_or(0, PagedIndex::loaded_pages)
    }

    /// Index pages changed since the last save (0 for an inline index).
    pub fn dirty_index_pages(&self) -> u64 {
        self.paged_index().map_or(0, PagedIndex::dirty_pages)
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Pages written since the last save.
    pub fn dirty_pages(&self) -> usize {
        self.dirty.len()
    }

    /// The pages file in use, once saved or attached.
    pub fn pages_file(&self) -> Option<PathBuf> {
        self.base
            .as_ref()
            .and_then(|b| b.file.as_ref().map(|(_, p)| p.clone()))
    }

    /// Whether page `idx` holds written data; an error if the index page that would say
    /// cannot be read (a damaged index).
    pub fn contains(&self, idx: u64) -> Result<bool> {
        if self.mem.is_written(idx) {
            return Ok(true);
        }
        match &self.base {
            Some(b) => Ok(b.find(idx)?.is_some()),
            None => Ok(false),
        }
    }

    /// Whether page `idx` holds written data ([`PageStore::contains`]; a page whose index
    /// page is damaged counts as written, so that reading it names the damage).
    pub fn is_written(&self, idx: u64) -> bool {
        self.contains(idx).unwrap_or(true)
    }

    /// The highest page number saved in the pages file, if any.
    pub fn last_page(&self) -> Result<Option<u64>> {
        match &self.base.as_ref().map(|b| &b.index) {
            None => Ok(None),
            Some(Index::Inline(v)) => Ok(v.last().map(|s| s.page)),
            Some(Index::Paged(p)) => p.last(),
        }
    }

    /// Number of pages holding data.
    pub fn written_pages(&self) -> u64 {
        match &self.base {
            None => self.mem.written_pages() as u64,
            Some(b) => {
                let new = self
                    .dirty
                    .iter()
                    .filter(|&&p| !self.is_written_base(b, p))
                    .count();
                b.index.len() + new as u64
            }
        }
    }

    fn is_written_base(&self, b: &Base, p: u64) -> bool {
        b.find(p).map_or(true, |s| s.is_some())
    }

    /// Copies page `idx` into `out` (one page; zeros if never written).
    pub fn read(&mut self, idx: u64, out: &mut [u8]) -> Result<()> {
        self.read_part(idx, 0, out)
    }

    /// Copies `out.len()` bytes of page `idx` starting at byte `off` into `out`.
    pub fn read_part(&mut self, idx: u64, off: usize, out: &mut [u8]) -> Result<()> {
        if !self.mem.is_written(idx) && !self.load(idx)? {
            out.fill(0);
            return Ok(());
        }
        self.mem.read_part(idx, off, out);
        Ok(())
    }

    /// Brings page `idx` from the pages file into memory; false if it was never saved.
    fn load(&mut self, idx: u64) -> Result<bool> {
        let Some(b) = &self.base else {
            return Ok(false);
        };
        let Some(slot) = b.find(idx)? else {
            return Ok(false);
        };
        let page = read_slot(b, slot, self.page_size)?;
        self.mem.put(idx, page);
        Ok(true)
    }

    /// The saved image of page `idx` (CRC-checked), read from the pages file without
    /// keeping it; `None` if it was never saved.
    pub(crate) fn read_saved(&self, idx: u64) -> Result<Option<Box<[u8]>>> {
        let Some(b) = &self.base else {
            return Ok(None);
        };
        match b.find(idx)? {
            Some(slot) => read_slot(b, slot, self.page_size).map(Some),
            None => Ok(None),
        }
    }

    /// Copies `data` (one page) into page `idx`.
    pub fn write(&mut self, idx: u64, data: &[u8]) {
        debug_assert_eq!(data.len(), self.page_size);
        self.mem.write(idx, data);
        self.dirty.insert(idx);
    }

    /// Copies the byte ranges `ranges` of `data` (one whole page image) into page `idx`;
    /// a page not in memory takes the whole image (its other bytes equal `data`'s).
    pub fn write_ranges(&mut self, idx: u64, data: &[u8], ranges: &[std::ops::Range<usize>]) {
        if self.mem.is_written(idx) {
            self.mem.write_ranges(idx, data, ranges);
        } else {
            self.mem.write(idx, data);
        }
        self.dirty.insert(idx);
    }

    /// Opens the pages file the index loaded from the state file at `state` names (in the
    /// same directory), checking its header, its length and the index. Read-only: nothing
    /// is written until [`PageStore::save`].
    pub fn attach(&mut self, state: &Path) -> Result<()> {
        let ps = self.page_size as u64;
        let Some(b) = &mut self.base else {
            return Ok(());
        };
        let path = dir_of(state).join(&b.name);
        let what = || format!("device pages file {}", path.display());
        if b.name.is_empty() || b.name.contains('/') || b.name.starts_with('.') {
            return Err(Error::corrupted(
                format!("device state {}", state.display()),
                format!("invalid pages file name {:?}", b.name),
            ));
        }
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corrupted(
                    what(),
                    format!("missing (the device state {} names it)", state.display()),
                ))
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let flen = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        if flen < b.len {
            return Err(Error::corrupted(
                what(),
                format!("truncated: {flen} of {} committed bytes", b.len),
            ));
        }
        check_header(&file, &path, self.page_size, b.generation)?;
        let what = format!("device state {}", state.display());
        let slots: &[Slot] = match &mut b.index {
            Index::Inline(v) => v,
            Index::Paged(p) => {
                p.attach(state, &what)?;
                &[]
            }
        };
        let mut prev = None;
        for s in slots {
            let in_range = s.offset >= HEADER
                && (s.offset - HEADER).is_multiple_of(ps)
                && s.offset.checked_add(ps).is_some_and(|e| e <= b.len);
            if !in_range || prev.is_some_and(|p| p >= s.page) {
                return Err(Error::corrupted(
                    format!("device state {}", state.display()),
                    format!(
                        "its page index is inconsistent at page {} (offset {}, {} committed bytes)",
                        s.page, s.offset, b.len
                    ),
                ));
            }
            prev = Some(s.page);
        }
        let live = b.index.len() * ps;
        if b.len < HEADER || b.garbage.checked_add(live) != Some(b.len - HEADER) {
            return Err(Error::corrupted(
                what,
                format!(
                    "its page index does not account for the pages file ({} live pages, {} \
                     superseded bytes, {} committed bytes)",
                    b.index.len(),
                    b.garbage,
                    b.len
                ),
            ));
        }
        b.file = Some((file, path));
        b.writable = false;
        Ok(())
    }

    /// The numbers of the pages saved in the pages file, ascending (reads a paged index
    /// whole).
    pub(crate) fn saved_pages(&self) -> Result<Vec<u64>> {
        match &self.base {
            None => Ok(Vec::new()),
            Some(b) => Ok(b.index.all()?.iter().map(|s| s.page).collect()),
        }
    }

    /// Forgets the in-memory copies of the pages when every page is saved (they are read
    /// again from the pages file when used); a no-op while pages are unsaved.
    pub(crate) fn drop_clean(&mut self) {
        if self.dirty.is_empty() && self.base.as_ref().is_some_and(|b| b.file.is_some()) {
            self.mem = PageArray::new(self.page_size);
        }
    }

    /// Reads and checks every saved page not yet in memory (a full verification).
    pub fn verify_all(&mut self) -> Result<u64> {
        let pages = self.saved_pages()?;
        let mut n = 0;
        for p in pages {
            if !self.mem.is_written(p) {
                self.load(p)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Saves the pages written since the last save to the pages file of the state file at
    /// `state` (appending them, or writing a new generation; see the module docs) and makes
    /// them durable. The state file must be saved afterwards (it serialises the index).
    pub fn save(&mut self, state: &Path) -> Result<SaveReport> {
        self.save_named(state, "pages", super::pages::peek_pages_file)
    }

    /// [`PageStore::save`] for a second store of the same state file: its pages file is
    /// `<state file>.<suffix>-<generation>`, and `peek` finds the name of the pages file of
    /// this store that a state file (the checkpoint backup `<state file>.bak`) names, so
    /// that the backup's generation is kept.
    pub(crate) fn save_named(
        &mut self,
        state: &Path,
        suffix: &str,
        peek: fn(&Path) -> Option<String>,
    ) -> Result<SaveReport> {
        let ps = self.page_size as u64;
        let own = format!("{}.{suffix}-", file_name(state)?);
        let dir = dir_of(state);
        if self.base.is_none() && self.dirty.is_empty() {
            return Ok(SaveReport::default());
        }
        let compact = match &self.base {
            None => true,
            Some(b) if !b.name.starts_with(&own) || b.file.is_none() => true,
            Some(b) => {
                let mut rewritten = 0u64;
                for &p in &self.dirty {
                    rewritten += b.find(p)?.is_some() as u64;
                }
                let len = b.len + self.dirty.len() as u64 * ps;
                let garbage = b.garbage + rewritten * ps;
                len > COMPACT_MIN && garbage * 2 > len
            }
        };
        let mut report = SaveReport::default();
        if compact || !self.dirty.is_empty() {
            let current = self.base.as_ref().map(|b| b.name.clone());
            remove_stale(&dir, &own, current.as_deref(), state, peek)?;
            report = if compact {
                self.write_generation(&dir, &own)?
            } else {
                self.append()?
            };
            self.dirty.clear();
        }
        if let Some(Base {
            index: Index::Paged(ix),
            ..
        }) = &mut self.base
        {
            let r = ix.save(state)?;
            report.index_pages = r.pages;
            report.index_bytes = r.bytes;
        }
        Ok(report)
    }

    /// Appends the dirty pages to the current pages file and updates the index.
    fn append(&mut self) -> Result<SaveReport> {
        let ps = self.page_size as u64;
        let b = self.base.as_mut().expect("append needs a pages file");
        let (file, path) = b.file.take().expect("attached");
        let file = if b.writable {
            file
        } else {
            drop(file);
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| Error::io(&path, e))?
        };
        b.writable = true;
        let io = |e| Error::io(&path, e);
        // An interrupted save may have left bytes past the committed length.
        file.set_len(b.len).map_err(io)?;
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        w.seek(SeekFrom::Start(b.len)).map_err(io)?;
        let mut added = Vec::with_capacity(self.dirty.len());
        let mut off = b.len;
        let mut buf = vec![0u8; self.page_size];
        for &p in &self.dirty {
            self.mem.read(p, &mut buf);
            w.write_all(&buf).map_err(io)?;
            added.push(Slot {
                page: p,
                offset: off,
                crc: crc32fast::hash(&buf),
            });
            off += ps;
        }
        w.flush().map_err(io)?;
        drop(w);
        file.sync_data().map_err(io)?;
        let bytes = off - b.len;
        b.len = off;
        b.file = Some((file, path));
        let old = match &mut b.index {
            Index::Inline(v) => std::mem::take(v),
            Index::Paged(ix) => {
                ix.set_len(off);
                for &s in &added {
                    if ix.set(s)? {
                        b.garbage += ps;
                    }
                }
                return Ok(SaveReport {
                    pages: added.len() as u64,
                    bytes,
                    ..SaveReport::default()
                });
            }
        };
        // Merge the new slots into the inline index (both sorted by page).
        let mut merged = Vec::with_capacity(old.len() + added.len());
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < added.len() {
            if j == added.len() || (i < old.len() && old[i].page < added[j].page) {
                merged.push(old[i]);
                i += 1;
            } else {
                if i < old.len() && old[i].page == added[j].page {
                    b.garbage += ps;
                    i += 1;
                }
                merged.push(added[j]);
                j += 1;
            }
        }
        b.index = Index::Inline(merged);
        Ok(SaveReport {
            pages: added.len() as u64,
            bytes,
            ..SaveReport::default()
        })
    }

    /// Writes every live page to a new pages file of the next generation.
    fn write_generation(&mut self, dir: &Path, own: &str) -> Result<SaveReport> {
        let ps = self.page_size as u64;
        let generation = self.base.as_ref().map_or(1, |b| b.generation + 1);
        let name = format!("{own}{generation}");
        let path = dir.join(&name);
        let io = |e| Error::io(&path, e);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io)?;
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        w.write_all(&header(self.page_size, generation))
            .map_err(io)?;
        let mut pages: BTreeSet<u64> = self.dirty.clone();
        if let Some(b) = &self.base {
            pages.extend(b.index.all()?.iter().map(|s| s.page));
        }
        let mut index = Vec::with_capacity(pages.len());
        let mut off = HEADER;
        let mut buf = vec![0u8; self.page_size];
        for p in pages {
            if self.mem.is_written(p) {
                self.mem.read(p, &mut buf);
            } else {
                // Not in memory: copied (checked) from the old pages file, not kept.
                let b = self.base.as_ref().expect("a saved page has a pages file");
                let slot = b.find(p)?.expect("a saved page is indexed");
                buf.copy_from_slice(&read_slot(b, slot, self.page_size)?);
            }
            w.write_all(&buf).map_err(io)?;
            index.push(Slot {
                page: p,
                offset: off,
                crc: crc32fast::hash(&buf),
            });
            off += ps;
        }
        w.flush().map_err(io)?;
        drop(w);
        file.sync_data().map_err(io)?;
        super::files::sync_parent(&path).map_err(io)?;
        let pages = index.len() as u64;
        let index = match self.base.take().map(|b| b.index) {
            _ if !self.paged => Index::Inline(index),
            Some(Index::Paged(mut ix)) => {
                ix.rebuild(&index, off);
                Index::Paged(ix)
            }
            _ => Index::Paged(Box::new(PagedIndex::build(
                table::TablePages::new(),
                &index,
                ps,
                off,
            ))),
        };
        self.base = Some(Base {
            name,
            generation,
            len: off,
            garbage: 0,
            index,
            file: Some((file, path)),
            writable: true,
        });
        Ok(SaveReport {
            pages,
            bytes: off,
            new_file: true,
            ..SaveReport::default()
        })
    }
}

fn dir_of(state: &Path) -> PathBuf {
    match state.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn file_name(state: &Path) -> Result<String> {
    state
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| {
            Error::invalid(
                "device state",
                format!("{} has no UTF-8 file name", state.display()),
            )
        })
}

fn header(page_size: usize, generation: u64) -> [u8; HEADER as usize] {
    let mut h = [0u8; HEADER as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(page_size as u32).to_le_bytes());
    h[16..24].copy_from_slice(&generation.to_le_bytes());
    let crc = crc32fast::hash(&h[..24]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

fn check_header(file: &File, path: &Path, page_size: usize, generation: u64) -> Result<()> {
    let mut h = [0u8; HEADER as usize];
    file.read_exact_at(&mut h, 0)
        .map_err(|e| Error::io(path, e))?;
    let what = format!("device pages file {}", path.display());
    if &h[..8] != MAGIC {
        return Err(Error::corrupted(what, "not a spidx pages file (bad magic)"));
    }
    if h != header(page_size, generation) {
        let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
        let ps = u32::from_le_bytes(h[12..16].try_into().unwrap());
        let g = u64::from_le_bytes(h[16..24].try_into().unwrap());
        return Err(Error::corrupted(
            what,
            format!(
                "header (format {version}, {ps}-byte pages, generation {g}) does not match \
                 the device state (format {VERSION}, {page_size}-byte pages, generation \
                 {generation}) or fails its checksum"
            ),
        ));
    }
    Ok(())
}

/// Reads the page image of `slot` from the attached pages file and checks its CRC.
fn read_slot(b: &Base, slot: Slot, page_size: usize) -> Result<Box<[u8]>> {
    let Some((file, path)) = &b.file else {
        return Err(Error::corrupted(
            "device pages",
            "a saved page was read before its pages file was opened",
        ));
    };
    let mut page = vec![0u8; page_size].into_boxed_slice();
    file.read_exact_at(&mut page, slot.offset)
        .map_err(|e| Error::io(path, e))?;
    if crc32fast::hash(&page) != slot.crc {
        return Err(Error::corrupted(
            format!("device pages file {}", path.display()),
            format!(
                "page {} (at byte {}) fails its checksum",
                slot.page, slot.offset
            ),
        ));
    }
    Ok(page)
}

/// Deletes pages files of older generations of the state at `state` (names starting with
/// `own`): all but `current` and the one the checkpoint backup `<state>.bak` names. When
/// the backup exists but cannot be read, nothing is deleted.
fn remove_stale(
    dir: &Path,
    own: &str,
    current: Option<&str>,
    state: &Path,
    peek: fn(&Path) -> Option<String>,
) -> Result<()> {
    let mut bak = state.as_os_str().to_owned();
    bak.push(".bak");
    let bak = PathBuf::from(bak);
    let backed = if bak.exists() {
        match peek(&bak) {
            Some(name) => Some(name),
            None => return Ok(()),
        }
    } else {
        None
    };
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for e in entries {
        let e = e.map_err(|e| Error::io(dir, e))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(gen) = name.strip_prefix(own) else {
            continue;
        };
        if gen.is_empty()
            || !gen.bytes().all(|c| c.is_ascii_digit())
            || Some(name) == current
            || Some(name) == backed.as_deref()
        {
            continue;
        }
        let p = e.path();
        std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
    }
    Ok(())
}

/// The name of the second pages file (the FTL tables') a flash device's state file at
/// `path` names (format [`FTL_PAGED_FORMAT`]: its payload starts with two [`PageStore`]s;
/// format [`INDEX_PAGED_FORMAT`]: with an [`Indexed`] store and a [`PageStore`]), or `None`
/// if the file cannot be read or checked. Here, beside the stores it decodes, so that
/// `pages.rs` (below this file) never imports it back.
pub(crate) fn peek_second_pages_file(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let (version, payload) = checked_payload(
        &bytes,
        path,
        None,
        &[FTL_PAGED_FORMAT, INDEX_PAGED_FORMAT, SSD_SEQ_WRITE_FORMAT],
    )
    .ok()?;
    let rest = if INDEXED_FORMATS.contains(&version) {
        postcard::take_from_bytes::<Indexed<PageStore>>(payload)
            .ok()?
            .1
    } else {
        postcard::take_from_bytes::<PageStore>(payload).ok()?.1
    };
    postcard::take_from_bytes::<String>(rest)
        .ok()
        .map(|(name, _)| name)
}

#[cfg(test)]
mod tests;
