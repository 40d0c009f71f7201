//! The page index of a [`PageStore`], itself paged: read on demand, saved only where it
//! changed.
//!
//! For every saved data page the index holds a 12-byte record (offset of its image in the
//! pages file, 0 for no image; CRC-32 of the image). Record `p` lives in index page
//! `p / RECS` of [`TABLE_PAGE`] bytes ([`RECS`] = 341 records, 4 spare bytes that must be
//! zero), and the index pages are [`TablePages`] in `<state file>.idx-<generation>`, the
//! same machinery as the FTL's tables. The state file keeps the index of the index pages
//! (13 bytes a page) and the number of records of each, so that:
//!
//! * opening reads only the state file; an index page is read (one `pread`, its CRC
//!   checked, every record checked against the pages file's committed length and the
//!   page's record count) the first time a page it covers is looked up, and kept decoded;
//! * a save writes the index pages holding a record changed since the last save: none
//!   for an unchanged store, at most one per page written otherwise (all of them after a
//!   compaction of the pages file, which moves every page);
//! * a crash after index pages were appended but before the state file was replaced
//!   leaves the previous state file, which names only the index pages below its committed
//!   length: the previous checkpoint stays readable.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::table::{TablePages, TABLE_PAGE};
use super::{PageStore, SaveReport, Slot, HEADER};
use crate::device::pages::peek_index_file;
use crate::{Error, Result};

/// Bytes of a record.
const REC: usize = 12;
/// Records per index page.
pub(crate) const RECS: u64 = (TABLE_PAGE / REC) as u64;
/// The index pages file is `<state file>.idx-<generation>`.
const SUFFIX: &str = "idx";

/// A record: offset of the page image (0 = none) and its CRC-32.
type Rec = (u64, u32);

/// An index page holding records: how many, and the records once read.
#[derive(Debug)]
struct Entry {
    count: u32,
    /// The decoded records, or why the saved page could not be read.
    recs: OnceLock<std::result::Result<Box<[Rec]>, String>>,
}

impl Entry {
    fn loaded(recs: Box<[Rec]>, count: u32) -> Entry {
        Entry {
            count,
            recs: OnceLock::from(Ok(recs)),
        }
    }
}

/// The paged index of a pages file (see the module documentation).
#[derive(Debug)]
pub(crate) struct PagedIndex {
    pages: TablePages,
    entries: BTreeMap<u64, Entry>,
    live: u64,
    /// Data page size and committed length of the pages file: what a record may point at.
    page_size: u64,
    len: u64,
    /// Why a restored saved form does not hold together ([`PagedIndex::attach`] says).
    bad: Option<String>,
}

impl PagedIndex {
    /// The index of `slots` (sorted by page; offsets into a pages file of `len` committed
    /// bytes), every index page marked changed; its index pages go to `pages`.
    pub(super) fn build(
        mut pages: TablePages,
        slots: &[Slot],
        page_size: u64,
        len: u64,
    ) -> PagedIndex {
        let mut entries: BTreeMap<u64, Entry> = BTreeMap::new();
        for s in slots {
            let k = s.page / RECS;
            let e = entries.entry(k).or_insert_with(|| {
                Entry::loaded(vec![(0, 0); RECS as usize].into_boxed_slice(), 0)
            });
            if let Some(Ok(recs)) = e.recs.get_mut() {
                recs[(s.page % RECS) as usize] = (s.offset, s.crc);
            }
            e.count += 1;
        }
        for &k in entries.keys() {
            pages.mark(k);
        }
        PagedIndex {
            pages,
            entries,
            live: slots.len() as u64,
            page_size,
            len,
            bad: None,
        }
    }

    /// Replaces every record by `slots` (after a compaction wrote a new pages file): every
    /// index page is rewritten, to the same index pages file.
    pub(super) fn rebuild(&mut self, slots: &[Slot], len: u64) {
        let pages = std::mem::take(&mut self.pages);
        *self = PagedIndex::build(pages, slots, self.page_size, len);
    }

    /// Number of records.
    pub(super) fn live(&self) -> u64 {
        self.live
    }

    /// Sets the committed length of the pages file (after an append).
    pub(super) fn set_len(&mut self, len: u64) {
        self.len = len;
    }

    fn recs<'a>(&self, k: u64, e: &'a Entry) -> Result<&'a [Rec]> {
        let r = e.recs.get_or_init(|| self.decode(k, e.count));
        r.as_deref().map_err(|m| self.corrupted(m.clone()))
    }

    fn corrupted(&self, msg: String) -> Error {
        let file = self.pages.store().pages_file().unwrap_or_default();
        Error::corrupted(format!("device page index {}", file.display()), msg)
    }

    /// Reads and checks index page `k`, which holds `count` records.
    fn decode(&self, k: u64, count: u32) -> std::result::Result<Box<[Rec]>, String> {
        let img = match self.pages.store().read_saved(k) {
            Ok(Some(img)) => img,
            Ok(None) => return Err(format!("index page {k} is not saved")),
            Err(e) => return Err(format!("index page {k} cannot be read: {e}")),
        };
        let mut recs = Vec::with_capacity(RECS as usize);
        for (i, r) in img.chunks_exact(REC).enumerate() {
            let off = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
            let crc = u32::from_le_bytes(r[8..].try_into().expect("4 bytes"));
            let fits = off >= HEADER
                && (off - HEADER).is_multiple_of(self.page_size)
                && off
                    .checked_add(self.page_size)
                    .is_some_and(|e| e <= self.len);
            if !(fits || (off == 0 && crc == 0)) {
                return Err(format!(
                    "index page {k}: the record of page {} (offset {off}) is outside the \
                     {} committed bytes of the pages file",
                    k * RECS + i as u64,
                    self.len
                ));
            }
            recs.push((off, crc));
        }
        let n = recs.iter().filter(|r| r.0 != 0).count();
        if n != count as usize || img[RECS as usize * REC..].iter().any(|&b| b != 0) {
            return Err(format!(
                "index page {k} holds {n} records, the state file says {count}"
            ));
        }
        Ok(recs.into_boxed_slice())
    }

    /// The record of page `page`, if it was saved.
    pub(super) fn get(&self, page: u64) -> Result<Option<Slot>> {
        let Some(e) = self.entries.get(&(page / RECS)) else {
            return Ok(None);
        };
        let (offset, crc) = self.recs(page / RECS, e)?[(page % RECS) as usize];
        Ok((offset != 0).then_some(Slot { page, offset, crc }))
    }

    /// Records `slot`; true if it replaced a record of the same page.
    pub(super) fn set(&mut self, slot: Slot) -> Result<bool> {
        let k = slot.page / RECS;
        if let Some(e) = self.entries.get(&k) {
            self.recs(k, e)?;
        }
        let e = self
            .entries
            .entry(k)
            .or_insert_with(|| Entry::loaded(vec![(0, 0); RECS as usize].into_boxed_slice(), 0));
        let Some(Ok(recs)) = e.recs.get_mut() else {
            unreachable!("loaded above");
        };
        let r = &mut recs[(slot.page % RECS) as usize];
        let replaced = r.0 != 0;
        *r = (slot.offset, slot.crc);
        if !replaced {
            e.count += 1;
            self.live += 1;
        }
        self.pages.mark(k);
        Ok(replaced)
    }

    /// The highest page with a record.
    pub(super) fn last(&self) -> Result<Option<u64>> {
        let Some((&k, e)) = self.entries.last_key_value() else {
            return Ok(None);
        };
        let recs = self.recs(k, e)?;
        Ok(recs
            .iter()
            .rposition(|r| r.0 != 0)
            .map(|i| k * RECS + i as u64))
    }

    /// Every record, by page (reads every index page).
    pub(super) fn all(&self) -> Result<Vec<Slot>> {
        let mut out = Vec::with_capacity(self.live as usize);
        for (&k, e) in &self.entries {
            for (i, &(offset, crc)) in self.recs(k, e)?.iter().enumerate() {
                if offset != 0 {
                    out.push(Slot {
                        page: k * RECS + i as u64,
                        offset,
                        crc,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Index pages changed since the last save.
    pub(crate) fn dirty_pages(&self) -> u64 {
        self.pages.dirty_pages()
    }

    /// Index pages read from the index pages file so far (for tests and benchmarks).
    pub(crate) fn loaded_pages(&self) -> usize {
        self.entries
            .values()
            .filter(|e| e.recs.get().is_some())
            .count()
    }

    /// Opens the index pages file the state file at `state` names and checks that the
    /// state's record counts match its index pages; `what` names the state file.
    pub(super) fn attach(&mut self, state: &Path, what: &str) -> Result<()> {
        if let Some(bad) = &self.bad {
            return Err(Error::corrupted(what, bad.clone()));
        }
        let store = self.pages.store_mut();
        store.attach(state)?;
        let saved = store.saved_pages()?;
        if !saved.iter().eq(self.entries.keys())
            || self
                .entries
                .values()
                .any(|e| e.count == 0 || e.count as u64 > RECS)
            || self.entries.values().map(|e| e.count as u64).sum::<u64>() != self.live
        {
            return Err(Error::corrupted(
                what,
                format!(
                    "its page index names {} index pages with {} records that do not match \
                     the {} index pages saved",
                    self.entries.len(),
                    self.live,
                    saved.len()
                ),
            ));
        }
        Ok(())
    }

    /// Writes the index pages changed since the last save to the index pages file of the
    /// state file at `state` and makes them durable (the state file must be saved after).
    pub(super) fn save(&mut self, state: &Path) -> Result<SaveReport> {
        let mut buf = vec![0u8; TABLE_PAGE];
        for k in self.pages.take_dirty() {
            let e = self
                .entries
                .get(&k)
                .expect("a changed index page has records");
            let recs = self.recs(k, e)?;
            for (r, out) in recs.iter().zip(buf.chunks_exact_mut(REC)) {
                out[..8].copy_from_slice(&r.0.to_le_bytes());
                out[8..].copy_from_slice(&r.1.to_le_bytes());
            }
            self.pages.put(k, &buf);
        }
        let report = self.pages.commit(state, SUFFIX, peek_index_file)?;
        // Decoded records stay; the images were only needed to write them.
        Ok(report)
    }

    /// The saved form (after [`PagedIndex::save`]).
    pub(super) fn saved(&self) -> (&PageStore, Vec<u32>) {
        let counts = self.entries.values().map(|e| e.count).collect();
        (self.pages.store(), counts)
    }

    /// The index restored from its saved form: the index pages' store (attach it with
    /// [`PagedIndex::attach`], which also reports a saved form that does not hold together)
    /// and the record count of each saved index page, in order.
    pub(super) fn restore(
        store: PageStore,
        counts: Vec<u32>,
        page_size: u64,
        len: u64,
    ) -> PagedIndex {
        let keys = store.saved_pages().unwrap_or_default();
        let mut bad = None;
        if store.page_size() != TABLE_PAGE {
            bad = Some(format!(
                "its index pages are of {} bytes, not {TABLE_PAGE}",
                store.page_size()
            ));
        } else if keys.len() != counts.len() {
            bad = Some(format!(
                "its page index names {} index pages but {} record counts",
                keys.len(),
                counts.len()
            ));
        }
        let live = counts.iter().map(|&c| c as u64).sum();
        let entries = keys
            .into_iter()
            .zip(counts)
            .map(|(k, count)| {
                let e = Entry {
                    count,
                    recs: OnceLock::new(),
                };
                (k, e)
            })
            .collect();
        PagedIndex {
            pages: TablePages::with_store(store),
            entries,
            live,
            page_size,
            len,
            bad,
        }
    }
}

/// The saved form of a [`PageStore`] with a paged index (see [`super::Indexed`]). Its first
/// member is the pages file's name and its second the index pages file's (the first
/// member of a [`PageStore`]), so that `peek_pages_file` and `peek_index_file` find them.
#[derive(Serialize)]
pub(super) struct SavedRef<'a> {
    pub file: &'a str,
    pub index: &'a PageStore,
    pub counts: Vec<u32>,
    pub page_size: u64,
    pub generation: u64,
    pub len: u64,
    pub garbage: u64,
}

/// [`SavedRef`], owned.
#[derive(Deserialize)]
pub(super) struct Saved {
    pub file: String,
    pub index: PageStore,
    pub counts: Vec<u32>,
    pub page_size: u64,
    pub generation: u64,
    pub len: u64,
    pub garbage: u64,
}

#[cfg(test)]
mod tests;
