//! The object store's directory (object id → where its current record is), saved as pages
//! sorted by id that open lazily and save incrementally.
//!
//! Saved, the directory is two files: the *state file* (`objects.dir`, written atomically
//! and checksummed by [`save_state_as`]) and a *pages file* (`objects.dir.pages-<n>`)
//! managed by the device layer's [`PageStore`] (append-only, every page image with a
//! CRC-32 kept in the state file, compacted when mostly superseded; see
//! [`crate::device::paged`]). The state file holds the page store's index, a table giving
//! for every directory page its first id, its page number and its entry count, and the
//! record area's end, the records' nonce and the number of live objects. Opening reads the
//! state file only; a lookup binary-searches the table, reads that one page (its CRC and
//! its order checked) the first time it is needed and keeps it decoded.
//!
//! Changes since the last save are kept in memory (an id → entry or deletion map) and
//! merged into the pages they fall in when the directory is saved: only those pages are
//! written (a page that overflows is split into evenly filled pages, an emptied page's
//! number is reused later). A crash before the state file is replaced leaves the previous
//! state file, which names only the pages file's committed bytes: the previous directory
//! stays readable, as the checkpoint's recovery needs.
//!
//! Directory page layout (4 KB): `[count u32][0 u32]` then `count` entries of
//! `[id u64][record offset u64][record length u32]`, ids strictly increasing.
//!
//! A state file of format 1 (the whole directory as one map, written by older versions)
//! is still read: its entries are held in memory as changes, and the next save writes the
//! paged format.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::device::paged::PageStore;
use crate::device::pages::{load_state, load_state_as, save_state_as, PAGED_FORMAT};
use crate::{Error, Result};

/// Bytes of a directory page.
pub const DIR_PAGE: usize = 4096;
const PAGE_HEADER: usize = 8;
const ENTRY: usize = 20;
/// Entries a directory page holds.
pub const PER_PAGE: usize = (DIR_PAGE - PAGE_HEADER) / ENTRY;
const KIND: &str = "objects";

/// Where an object's current record is: byte offset and length.
pub type Entry = (u64, u32);

/// A directory page's entries, decoded (sorted by id).
type DecodedPage = Box<[(u64, Entry)]>;

/// One directory page in the table: its first id, page number and entry count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct PageRef {
    first: u64,
    page: u64,
    count: u32,
}

/// The state file's payload (its first member is the page store, so that the device
/// layer's `peek_pages_file` finds the pages file's name in it).
#[derive(Serialize)]
struct SavedRef<'a> {
    pages: &'a PageStore,
    table: &'a [PageRef],
    free: &'a [u64],
    next_page: u64,
    len: u64,
    end: u64,
    nonce: u64,
}

#[derive(Deserialize)]
struct Saved {
    pages: PageStore,
    table: Vec<PageRef>,
    free: Vec<u64>,
    next_page: u64,
    len: u64,
    end: u64,
    nonce: u64,
}

/// The directory as format 1 saved it: one map of every entry.
#[derive(Deserialize)]
struct Whole {
    entries: HashMap<u64, Entry>,
    end: u64,
    nonce: u64,
}

/// What a save wrote (for tests and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirSaveReport {
    /// Directory pages written.
    pub pages: u64,
    /// Directory pages in all.
    pub total_pages: u64,
}

/// The directory of an object store. See the module documentation.
#[derive(Debug)]
pub struct Directory {
    pages: PageStore,
    table: Vec<PageRef>,
    /// Decoded pages, parallel to `table`.
    decoded: Vec<Option<DecodedPage>>,
    free: Vec<u64>,
    next_page: u64,
    /// Entries changed since the last save (`None`: deleted).
    changes: BTreeMap<u64, Option<Entry>>,
    len: u64,
    /// Bytes appended to the record area so far.
    pub end: u64,
    /// Seeds the records' checksums (0 for stores saved before it existed).
    pub nonce: u64,
    /// The state file it was loaded from (named in errors).
    path: Option<PathBuf>,
}

impl Directory {
    /// An empty directory.
    pub fn new(nonce: u64) -> Self {
        Directory {
            pages: PageStore::new(DIR_PAGE),
            table: Vec::new(),
            decoded: Vec::new(),
            free: Vec::new(),
            next_page: 0,
            changes: BTreeMap::new(),
            len: 0,
            end: 0,
            nonce,
            path: None,
        }
    }

    /// Opens the directory saved at `path`: reads its state file and opens its pages file
    /// (pages are read when first looked up). Never writes.
    pub fn load(path: &Path) -> Result<Self> {
        if state_version(path)? == 1 {
            let whole: Whole = load_state(path, KIND)?;
            let mut d = Directory::new(whole.nonce);
            d.end = whole.end;
            d.len = whole.entries.len() as u64;
            d.changes = whole
                .entries
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect();
            d.path = Some(path.to_path_buf());
            return Ok(d);
        }
        let s: Saved = load_state_as(path, KIND, PAGED_FORMAT)?;
        let mut pages = s.pages;
        pages.attach(path)?;
        let bad = |msg: String| {
            Err(Error::corrupted(
                format!("object directory {}", path.display()),
                msg,
            ))
        };
        if pages.page_size() != DIR_PAGE {
            return bad(format!(
                "pages of {} bytes, not {DIR_PAGE}",
                pages.page_size()
            ));
        }
        let mut used = std::collections::HashSet::new();
        let mut total = 0u64;
        for (i, r) in s.table.iter().enumerate() {
            if i > 0 && s.table[i - 1].first >= r.first {
                return bad(format!("its page table is not sorted at entry {i}"));
            }
            if r.count == 0 || r.count as usize > PER_PAGE {
                return bad(format!(
                    "page {} holds {} entries (1 to {PER_PAGE})",
                    r.page, r.count
                ));
            }
            if r.page >= s.next_page || !used.insert(r.page) || !pages.is_written(r.page) {
                return bad(format!(
                    "page {} of its table is not a saved page or is named twice",
                    r.page
                ));
            }
            total += u64::from(r.count);
        }
        for p in &s.free {
            if *p >= s.next_page || !used.insert(*p) {
                return bad(format!("free page {p} is out of range or in use"));
            }
        }
        if total != s.len {
            return bad(format!(
                "its pages hold {total} entries but it counts {}",
                s.len
            ));
        }
        Ok(Directory {
            pages,
            decoded: vec![None; s.table.len()],
            table: s.table,
            free: s.free,
            next_page: s.next_page,
            changes: BTreeMap::new(),
            len: s.len,
            end: s.end,
            nonce: s.nonce,
            path: Some(path.to_path_buf()),
        })
    }

    /// Number of live objects.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the directory holds no live object.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entry of object `id`, if it exists.
    pub fn get(&mut self, id: u64) -> Result<Option<Entry>> {
        if let Some(c) = self.changes.get(&id) {
            return Ok(*c);
        }
        self.saved(id)
    }

    /// The entry of `id` in the saved pages (ignoring changes).
    fn saved(&mut self, id: u64) -> Result<Option<Entry>> {
        let Some(i) = self.page_of(id) else {
            return Ok(None);
        };
        let page = self.decode(i)?;
        Ok(page
            .binary_search_by_key(&id, |e| e.0)
            .ok()
            .map(|k| page[k].1))
    }

    /// The table index of the page whose id range holds `id` (`None`: below the first).
    fn page_of(&self, id: u64) -> Option<usize> {
        self.table.partition_point(|r| r.first <= id).checked_sub(1)
    }

    /// Sets the entry of `id`; `existed` says whether it had one ([`Self::get`]).
    pub fn insert(&mut self, id: u64, entry: Entry, existed: bool) {
        self.changes.insert(id, Some(entry));
        if !existed {
            self.len += 1;
        }
    }

    /// Deletes the entry of `id`; returns whether it existed.
    pub fn remove(&mut self, id: u64) -> Result<bool> {
        if self.get(id)?.is_none() {
            return Ok(false);
        }
        if self.saved(id)?.is_some() {
            self.changes.insert(id, None);
        } else {
            self.changes.remove(&id);
        }
        self.len -= 1;
        Ok(true)
    }

    /// Every live entry, sorted by id (reads every page).
    pub fn entries(&mut self) -> Result<Vec<(u64, Entry)>> {
        let mut out = Vec::with_capacity(self.len as usize);
        for i in 0..self.table.len() {
            out.extend_from_slice(self.decode(i)?);
        }
        if !self.changes.is_empty() {
            let changes: Vec<(u64, Option<Entry>)> =
                self.changes.iter().map(|(k, v)| (*k, *v)).collect();
            out = merge(&out, &changes);
        }
        Ok(out)
    }

    /// Page `i` of the table, decoded and checked (read from the pages file once).
    fn decode(&mut self, i: usize) -> Result<&[(u64, Entry)]> {
        if self.decoded[i].is_none() {
            let r = self.table[i];
            let mut buf = vec![0u8; DIR_PAGE];
            self.pages.read(r.page, &mut buf)?;
            let next = self.table.get(i + 1).map(|n| n.first);
            let entries = decode_page(&buf, r, next).map_err(|msg| {
                let file = self
                    .pages
                    .pages_file()
                    .or_else(|| self.path.clone())
                    .unwrap_or_default();
                Error::corrupted(
                    format!("object directory pages file {}", file.display()),
                    format!("page {}: {msg}", r.page),
                )
            })?;
            self.decoded[i] = Some(entries);
        }
        Ok(self.decoded[i].as_deref().expect("decoded above"))
    }

    /// Merges the changes into the pages they fall in (in memory; written by
    /// [`Self::save`]). Returns the directory pages written.
    fn merge_changes(&mut self) -> Result<u64> {
        if self.changes.is_empty() {
            return Ok(0);
        }
        // Read every page a change falls in first: a damaged page fails the save before
        // anything changes.
        let mut touched = Vec::new();
        for id in self.changes.keys() {
            let i = self.page_of(*id).unwrap_or(0);
            if touched.last() != Some(&i) {
                touched.push(i);
            }
        }
        for &i in &touched {
            if i < self.table.len() {
                self.decode(i)?;
            }
        }
        let changes: Vec<(u64, Option<Entry>)> =
            std::mem::take(&mut self.changes).into_iter().collect();
        let old_table = std::mem::take(&mut self.table);
        let mut old_decoded = std::mem::take(&mut self.decoded);
        let mut written = 0;
        if old_table.is_empty() {
            let run = merge(&[], &changes);
            written += self.write_run(None, run);
            return Ok(written);
        }
        let mut at = 0;
        for (i, r) in old_table.iter().enumerate() {
            let upper = old_table.get(i + 1).map(|n| n.first);
            let from = at;
            while at < changes.len() && upper.is_none_or(|u| changes[at].0 < u) {
                at += 1;
            }
            let page = old_decoded[i].take();
            if from == at {
                self.table.push(*r);
                self.decoded.push(page);
                continue;
            }
            let page = page.expect("touched pages were decoded");
            let run = merge(&page, &changes[from..at]);
            written += self.write_run(Some(r.page), run);
        }
        Ok(written)
    }

    /// Writes `run` (sorted entries) as evenly filled pages appended to the table, the
    /// first one reusing page `reuse`; an empty run frees `reuse`.
    fn write_run(&mut self, reuse: Option<u64>, run: Vec<(u64, Entry)>) -> u64 {
        if run.is_empty() {
            self.free.extend(reuse);
            return 0;
        }
        let n = run.len().div_ceil(PER_PAGE);
        let mut reuse = reuse;
        let mut buf = vec![0u8; DIR_PAGE];
        for k in 0..n {
            let (a, b) = (run.len() * k / n, run.len() * (k + 1) / n);
            let chunk = &run[a..b];
            let page = match reuse.take().or_else(|| self.free.pop()) {
                Some(p) => p,
                None => {
                    self.next_page += 1;
                    self.next_page - 1
                }
            };
            encode_page(chunk, &mut buf);
            self.pages.write(page, &buf);
            self.table.push(PageRef {
                first: chunk[0].0,
                page,
                count: chunk.len() as u32,
            });
            self.decoded.push(Some(chunk.into()));
        }
        n as u64
    }

    /// Merges the changes and saves the directory at `path`: the changed pages are
    /// appended to its pages file (made durable), then the state file is replaced.
    pub fn save(&mut self, path: &Path) -> Result<DirSaveReport> {
        let pages = self.merge_changes()?;
        self.pages.save(path)?;
        let saved = SavedRef {
            pages: &self.pages,
            table: &self.table,
            free: &self.free,
            next_page: self.next_page,
            len: self.len,
            end: self.end,
            nonce: self.nonce,
        };
        save_state_as(path, KIND, PAGED_FORMAT, &saved)?;
        self.path = Some(path.to_path_buf());
        Ok(DirSaveReport {
            pages,
            total_pages: self.table.len() as u64,
        })
    }
}

/// The format version of the state file at `path` (its bytes 8..12).
fn state_version(path: &Path) -> Result<u32> {
    use std::io::Read;
    let mut head = [0u8; 12];
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    match f.read_exact(&mut head) {
        Ok(()) => Ok(u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"))),
        // Too short: the checked load names the damage.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(PAGED_FORMAT),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// `base` (sorted) with `changes` (sorted) applied.
fn merge(base: &[(u64, Entry)], changes: &[(u64, Option<Entry>)]) -> Vec<(u64, Entry)> {
    let mut out = Vec::with_capacity(base.len() + changes.len());
    let (mut i, mut j) = (0, 0);
    while i < base.len() || j < changes.len() {
        if j == changes.len() || (i < base.len() && base[i].0 < changes[j].0) {
            out.push(base[i]);
            i += 1;
        } else {
            if i < base.len() && base[i].0 == changes[j].0 {
                i += 1;
            }
            if let Some(e) = changes[j].1 {
                out.push((changes[j].0, e));
            }
            j += 1;
        }
    }
    out
}

fn encode_page(entries: &[(u64, Entry)], buf: &mut [u8]) {
    buf.fill(0);
    buf[..4].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    for (k, (id, (off, len))) in entries.iter().enumerate() {
        let at = PAGE_HEADER + k * ENTRY;
        buf[at..at + 8].copy_from_slice(&id.to_le_bytes());
        buf[at + 8..at + 16].copy_from_slice(&off.to_le_bytes());
        buf[at + 16..at + 20].copy_from_slice(&len.to_le_bytes());
    }
}

/// Decodes page `r`, checking its count, its ids' order and range (`next`: the next
/// page's first id).
fn decode_page(
    buf: &[u8],
    r: PageRef,
    next: Option<u64>,
) -> std::result::Result<DecodedPage, String> {
    let u32_at = |o: usize| u32::from_le_bytes(buf[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(buf[o..o + 8].try_into().expect("8 bytes"));
    let count = u32_at(0);
    if count != r.count || u32_at(4) != 0 {
        return Err(format!(
            "holds {count} entries where the table says {}",
            r.count
        ));
    }
    let mut out = Vec::with_capacity(count as usize);
    for k in 0..count as usize {
        let at = PAGE_HEADER + k * ENTRY;
        let id = u64_at(at);
        let ok = match out.last() {
            None => id == r.first,
            Some(&(prev, _)) => id > prev,
        } && next.is_none_or(|n| id < n);
        if !ok {
            return Err(format!("its entry {k} (object {id}) is out of order"));
        }
        out.push((id, (u64_at(at + 8), u32_at(at + 16))));
    }
    Ok(out.into_boxed_slice())
}

#[cfg(test)]
mod tests;
