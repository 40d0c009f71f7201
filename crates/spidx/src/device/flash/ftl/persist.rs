//! How an FTL is saved: its large tables in pages, only what changed.
//!
//! The FTL's tables grow with the device, not with what it holds: for the `ssd-v300`
//! preset (480 GB, 524 288 erase blocks) the per-block tables alone are 2 MB, rewritten
//! whole and decoded whole by every checkpoint and open when they lived in the state file.
//! They are now saved as *table pages* of [`TABLE_PAGE`] bytes in a second
//! [`PageStore`] of the device's state file (`<state file>.ftl-<generation>`, the same
//! append-only, CRC-checked, generation-compacted pages file as the data's), and the state
//! file keeps a small header ([`FtlHeader`]: geometry, per-die lists, counters) and the
//! page index:
//!
//! * six tables of 32-bit words, laid out one after the other in page numbers: the erase
//!   count, valid-page count, state and bucket position of every block, the
//!   physical→logical map (up to the blocks ever opened) and the logical→physical map.
//!   Values are stored so that a never-used entry is 0 (maps store `value + 1`, an unmapped
//!   page 0), and a page holding only zeros is never written: the pages saved are those of
//!   the blocks and logical pages the device ever used;
//! * every mutation of a table marks its page dirty (a bit per page); a save encodes and
//!   appends only the dirty pages ([`Ftl::save_tables`]), so a checkpoint of an unchanged
//!   device writes no table page;
//! * opening reads the header, then the saved table pages (each checked against its
//!   CRC-32) into the in-memory tables, and runs the FTL checker over them. It reads every
//!   saved page, not only those a query will touch: the checker, and garbage collection's
//!   choice of victims, need the tables of every block used. What it reads is what the
//!   device used (about 100 pages for a 1 M-object index on `ssd-v300`), not its capacity;
//! * crash safety is the pages file's: a save appends past the committed length the old
//!   state file names, and a new generation leaves the one the state backup names.
//!
//! The state files of the previous format (the whole FTL in the state file, [`WholeFtl`])
//! still open; their next save writes the paged form.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::sparse::SparseMap;
use super::{BlockState, Counters, Die, Ftl, FtlGeometry, NONE};
use crate::device::paged::peek_second_pages_file;
use crate::device::paged::table::{TablePages, TABLE_PAGE};
use crate::device::paged::{PageStore, SaveReport};
use crate::{Error, Result};

/// 32-bit words per table page.
const WORDS: u64 = (TABLE_PAGE / 4) as u64;
/// The tables' pages file is `<state file>.ftl-<generation>`.
const SUFFIX: &str = "ftl";

/// The FTL's paged tables, in the order of their pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Erase,
    Valid,
    State,
    Pos,
    P2l,
    L2p,
}

const TABLES: [Table; 6] = [
    Table::Erase,
    Table::Valid,
    Table::State,
    Table::Pos,
    Table::P2l,
    Table::L2p,
];

/// The saved table pages, which of them changed since the last save, and where each
/// table starts.
#[derive(Debug)]
pub(crate) struct Tables {
    pages: TablePages,
    /// First page of each table; the last entry is the number of pages.
    base: [u64; 7],
}

impl Tables {
    pub(super) fn new(geo: &FtlGeometry) -> Tables {
        Tables::with_pages(geo, TablePages::new())
    }

    fn with_pages(geo: &FtlGeometry, mut pages: TablePages) -> Tables {
        let blocks = geo.blocks() as u64;
        let lens = [
            blocks,
            blocks,
            blocks,
            blocks,
            blocks * geo.pages_per_block as u64,
            geo.logical_pages as u64,
        ];
        let mut base = [0u64; 7];
        for (i, len) in lens.iter().enumerate() {
            base[i + 1] = base[i] + len.div_ceil(WORDS);
        }
        pages.reserve(base[6]);
        Tables { pages, base }
    }

    /// Marks the page of entry `i` of table `t` changed.
    #[inline]
    pub(super) fn mark(&mut self, t: Table, i: u32) {
        self.pages.mark(self.base[t as usize] + i as u64 / WORDS);
    }

    /// The table and first entry of page `p` (which must be below the page count).
    fn locate(&self, p: u64) -> (Table, u64) {
        let t = (0..6)
            .rfind(|&t| self.base[t] <= p)
            .expect("page 0 is in a table");
        (TABLES[t], (p - self.base[t]) * WORDS)
    }

    /// Table pages changed since the last save.
    pub(crate) fn dirty_pages(&self) -> u64 {
        self.pages.dirty_pages()
    }
}

/// The small part of a saved FTL: everything but the data and the paged tables.
#[derive(Serialize, Deserialize)]
pub(crate) struct FtlHeader<D = Vec<Die>, H = Vec<u64>> {
    geo: FtlGeometry,
    /// Length of the physical→logical map (the blocks ever opened × pages per block).
    p2l_len: u64,
    dies: D,
    next_die: u32,
    erase_hist: H,
    erase_min: u32,
    mapped: u64,
    counters: Counters,
}

/// A whole FTL as the previous state format ([`crate::device::pages::PAGED_FORMAT`])
/// stored it: every table in the state file (the fields in that format's order).
#[derive(Serialize, Deserialize)]
pub(crate) struct WholeFtl {
    geo: FtlGeometry,
    l2p: SparseMap,
    p2l: Vec<u32>,
    erase: Vec<u32>,
    valid: Vec<u32>,
    state: Vec<BlockState>,
    pos: Vec<u32>,
    dies: Vec<Die>,
    next_die: u32,
    erase_hist: Vec<u64>,
    erase_min: u32,
    mapped: u64,
    counters: Counters,
}

fn state_code(s: BlockState) -> u32 {
    match s {
        BlockState::Free => 0,
        BlockState::Active => 1,
        BlockState::Sealed => 2,
        BlockState::Victim => 3,
        BlockState::Retired => 4,
    }
}

fn state_of(code: u32) -> Option<BlockState> {
    Some(match code {
        0 => BlockState::Free,
        1 => BlockState::Active,
        2 => BlockState::Sealed,
        3 => BlockState::Victim,
        4 => BlockState::Retired,
        _ => return None,
    })
}

fn corrupted(path: &Path, msg: String) -> Error {
    Error::corrupted(format!("device state {}", path.display()), msg)
}

impl Ftl {
    /// The header to save in the device's state file (after [`Ftl::save_tables`]).
    pub(crate) fn header(&self) -> FtlHeader<&[Die], &[u64]> {
        FtlHeader {
            geo: self.geo.clone(),
            p2l_len: self.p2l.len() as u64,
            dies: &self.dies,
            next_die: self.next_die,
            erase_hist: &self.erase_hist,
            erase_min: self.erase_min,
            mapped: self.mapped,
            counters: self.counters,
        }
    }

    /// The index of the saved table pages, to save in the device's state file after
    /// [`Ftl::save_tables`].
    pub(crate) fn tables_store(&self) -> &PageStore {
        self.tables.pages.store()
    }

    /// Table pages changed since the last save.
    pub fn dirty_table_pages(&self) -> u64 {
        self.tables.dirty_pages()
    }

    /// Entry `i` of table `t` as stored (0 = never used).
    fn stored(&self, t: Table, i: u64) -> u32 {
        let i = i as usize;
        match t {
            Table::Erase => self.erase.get(i).copied().unwrap_or(0),
            Table::Valid => self.valid.get(i).copied().unwrap_or(0),
            Table::State => self.state.get(i).map_or(0, |&s| state_code(s)),
            Table::Pos => self.pos.get(i).copied().unwrap_or(0),
            Table::P2l => self.p2l.get(i).map_or(0, |&l| l.wrapping_add(1)),
            Table::L2p if i < self.geo.logical_pages as usize => {
                self.l2p.get(i as u32).wrapping_add(1)
            }
            Table::L2p => 0,
        }
    }

    /// Sets entry `i` of table `t` from its stored value `v`; false if `v` cannot be
    /// there (past the table's end, past the opened blocks, an unknown block state).
    fn restore(&mut self, t: Table, i: u64, v: u32) -> bool {
        let blocks = self.geo.blocks() as u64;
        let block_table = |tab: &mut Vec<u32>| {
            if i < blocks {
                tab[i as usize] = v;
                true
            } else {
                v == 0
            }
        };
        match t {
            Table::Erase => block_table(&mut self.erase),
            Table::Valid => block_table(&mut self.valid),
            Table::Pos => block_table(&mut self.pos),
            Table::State => match state_of(v) {
                Some(s) if i < blocks => {
                    self.state[i as usize] = s;
                    true
                }
                _ => v == 0,
            },
            Table::P2l if v == 0 => true,
            Table::P2l => match self.p2l.get_mut(i as usize) {
                Some(e) => {
                    *e = v - 1;
                    true
                }
                None => false,
            },
            Table::L2p if v == 0 => true,
            Table::L2p if i < self.geo.logical_pages as u64 => {
                self.l2p.set(i as u32, v - 1);
                true
            }
            Table::L2p => false,
        }
    }

    /// Writes the table pages changed since the last save to the tables' pages file of
    /// the state file at `state` (appending them, or writing a new generation; see
    /// [`PageStore::save`]) and makes them durable. A page holding only never-used entries
    /// that was never saved is not written. The state file (with [`Ftl::header`] and
    /// [`Ftl::tables_store`]) must be saved afterwards.
    pub fn save_tables(&mut self, state: &Path) -> Result<SaveReport> {
        let mut buf = vec![0u8; TABLE_PAGE];
        for p in self.tables.pages.take_dirty() {
            let (t, first) = self.tables.locate(p);
            for (k, w) in buf.chunks_exact_mut(4).enumerate() {
                w.copy_from_slice(&self.stored(t, first + k as u64).to_le_bytes());
            }
            self.tables.pages.put(p, &buf);
        }
        self.tables
            .pages
            .commit(state, SUFFIX, peek_second_pages_file)
    }

    /// An FTL of geometry `geo` with every table never used, the data `data` and the
    /// header's small state (the tables are filled by the caller).
    fn empty_like(
        path: &Path,
        geo: &FtlGeometry,
        saved_geo: &FtlGeometry,
        data: PageStore,
        tables: PageStore,
    ) -> Result<Ftl> {
        if saved_geo != geo {
            return Err(corrupted(
                path,
                "the saved flash geometry does not match its configuration".into(),
            ));
        }
        if data.page_size() != geo.flash_page_size || tables.page_size() != TABLE_PAGE {
            return Err(corrupted(
                path,
                format!(
                    "its pages are of {} bytes and its table pages of {}, expected {} and \
                     {TABLE_PAGE}",
                    data.page_size(),
                    tables.page_size(),
                    geo.flash_page_size
                ),
            ));
        }
        let blocks = geo.blocks() as usize;
        Ok(Ftl {
            tables: Tables::with_pages(geo, TablePages::with_store(tables)),
            l2p: SparseMap::new(geo.logical_pages),
            p2l: Vec::new(),
            data,
            erase: vec![0; blocks],
            valid: vec![0; blocks],
            state: vec![BlockState::Free; blocks],
            pos: vec![0; blocks],
            dies: Vec::new(),
            next_die: 0,
            erase_hist: Vec::new(),
            erase_min: 0,
            mapped: 0,
            counters: Counters::default(),
            geo: geo.clone(),
        })
    }

    /// Restores an FTL of geometry `geo` saved by a device in the state file at `path`:
    /// attaches the data and table pages files the state names, reads every saved table
    /// page (CRC-checked). The caller runs [`Ftl::check_loaded`] afterwards.
    pub(crate) fn from_header(
        path: &Path,
        geo: &FtlGeometry,
        h: FtlHeader,
        mut data: PageStore,
        mut tables: PageStore,
    ) -> Result<Ftl> {
        let ppb = geo.pages_per_block as u64;
        let p2l_max = geo.blocks() as u64 * ppb;
        if h.p2l_len > p2l_max || !h.p2l_len.is_multiple_of(ppb) {
            return Err(corrupted(
                path,
                format!(
                    "its physical map length {} is not a whole number of blocks up to {p2l_max}",
                    h.p2l_len
                ),
            ));
        }
        data.attach(path)?;
        data.use_paged_index();
        tables.attach(path)?;
        let mut ftl = Ftl::empty_like(path, geo, &h.geo, data, tables)?;
        ftl.p2l = vec![NONE; h.p2l_len as usize];
        ftl.dies = h.dies;
        ftl.next_die = h.next_die;
        ftl.erase_hist = h.erase_hist;
        ftl.erase_min = h.erase_min;
        ftl.mapped = h.mapped;
        ftl.counters = h.counters;
        let total = ftl.tables.base[6];
        let mut buf = vec![0u8; TABLE_PAGE];
        let store = ftl.tables.pages.store_mut();
        let (saved, file) = (store.saved_pages()?, store.pages_file().unwrap_or_default());
        for p in saved {
            let bad =
                |msg: String| Error::corrupted(format!("FTL tables file {}", file.display()), msg);
            if p >= total {
                return Err(bad(format!("page {p} is past the {total} table pages")));
            }
            ftl.tables.pages.store_mut().read(p, &mut buf)?;
            let (t, first) = ftl.tables.locate(p);
            for (k, w) in buf.chunks_exact(4).enumerate() {
                let v = u32::from_le_bytes(w.try_into().expect("4 bytes"));
                if !ftl.restore(t, first + k as u64, v) {
                    return Err(bad(format!(
                        "page {p}: entry {} of the {t:?} table holds {v}, which cannot be there",
                        first + k as u64
                    )));
                }
            }
        }
        ftl.tables.pages.store_mut().drop_clean();
        Ok(ftl)
    }

    /// Restores an FTL saved whole in the previous state format; every table page holding
    /// a used entry is marked changed, so the next save writes the paged form. Checks the
    /// FTL's invariants (table sizes first).
    pub(crate) fn from_whole(
        path: &Path,
        geo: &FtlGeometry,
        w: WholeFtl,
        mut data: PageStore,
    ) -> Result<Ftl> {
        data.attach(path)?;
        data.use_paged_index();
        let mut ftl = Ftl::empty_like(path, geo, &w.geo, data, PageStore::new(TABLE_PAGE))?;
        ftl.l2p = w.l2p;
        ftl.p2l = w.p2l;
        ftl.erase = w.erase;
        ftl.valid = w.valid;
        ftl.state = w.state;
        ftl.pos = w.pos;
        ftl.dies = w.dies;
        ftl.next_die = w.next_die;
        ftl.erase_hist = w.erase_hist;
        ftl.erase_min = w.erase_min;
        ftl.mapped = w.mapped;
        ftl.counters = w.counters;
        ftl.check_invariants()
            .map_err(|e| corrupted(path, format!("inconsistent flash state: {e}")))?;
        for p in 0..ftl.tables.base[6] {
            let (t, first) = ftl.tables.locate(p);
            let unused = match t {
                Table::P2l => first >= ftl.p2l.len() as u64,
                Table::L2p => ftl.l2p.chunk_is_empty(first as u32),
                _ => false,
            };
            if !unused && (first..first + WORDS).any(|i| ftl.stored(t, i) != 0) {
                ftl.tables.mark(t, first as u32);
            }
        }
        Ok(ftl)
    }

    /// The FTL in the previous state format (for the tests of its loading).
    #[cfg(test)]
    pub(crate) fn to_whole(&self) -> WholeFtl {
        WholeFtl {
            geo: self.geo.clone(),
            l2p: self.l2p.clone(),
            p2l: self.p2l.clone(),
            erase: self.erase.clone(),
            valid: self.valid.clone(),
            state: self.state.clone(),
            pos: self.pos.clone(),
            dies: self.dies.clone(),
            next_die: self.next_die,
            erase_hist: self.erase_hist.clone(),
            erase_min: self.erase_min,
            mapped: self.mapped,
            counters: self.counters,
        }
    }
}

#[cfg(test)]
mod tests;
