//! The page-mapping flash translation layer shared by [`super::SimFlash`] and the SSD model
//! ([`crate::device::ssd::SimSsd`]).
//!
//! The FTL owns NAND blocks of `pages_per_block` flash pages, split into `dies` groups
//! (block `b` belongs to die `b % dies`), and the data itself: the bytes of every mapped
//! logical page live in a [`PageStore`] keyed by logical page number (read lazily from the
//! saved pages file, see [`crate::device::paged`]); the mapping decides where a page is on
//! flash and what each access costs, and the checker verifies that exactly the mapped
//! pages hold data. So "reads return what was last written, across GC, wear levelling and
//! reopen" is a property the tests can check, not an assumption.
//!
//! Policies:
//! - **Out-of-place updates** through a logical→physical page map (and its reverse map):
//!   a rewrite programs a fresh page and invalidates the old one.
//! - **Dies**: host writes go round-robin over dies; each die has one active block (the
//!   write frontier shared by host writes and GC copies), its own free list and its own GC.
//!   A die that cannot take a page (full of valid data) is skipped.
//! - **Greedy garbage collection** per die: when a die needs a new block and its free
//!   blocks have fallen to `gc_reserved_blocks`, the sealed block with the fewest valid
//!   pages is the victim; its valid pages are copied to the frontier and it is erased,
//!   until the die has more free blocks than the reserve. The reserve (at least one block)
//!   guarantees GC always has somewhere to copy to.
//! - **Wear levelling**: dynamic (a new block is the free block with the lowest erase
//!   count) plus static: after a GC run, if the die's largest erase count exceeds the
//!   erase count of its least-erased data block by more than `wear_level_threshold`, that
//!   block's (cold) pages are relocated and it is erased so that it rejoins the pool.
//! - **Endurance**: a block erased `erase_limit` times is retired. When no die can take a
//!   page any more, writes fail with [`Error::DeviceFull`] ("worn out"); already stored
//!   data is never lost, because a page is only invalidated after its copy was programmed.
//!
//! **Host pages vs flash pages.** The FTL is addressed in bytes. A request covering byte
//! range `[a, b)` touches flash pages `a / F ..= (b - 1) / F` (F = flash page size). On a
//! write, a flash page fully covered by the range is simply programmed; a partially
//! covered one costs a read-modify-write: a flash read of its old version (if it was ever
//! written) plus a program of the merged page. On a read, every touched flash page that
//! was ever written costs one flash read; never-written pages read as zeros for free (the
//! FTL knows they are unmapped). So 4 KB index pages on 2 KB flash pages cost 2 programs
//! per page write, and 1 KB index pages on 2 KB flash pages cost a read and a program.
//!
//! Every request appends the physical operations it caused ([`FlashOp`]: read, program or
//! erase, tagged with die and cause) to a caller-provided vector, in the order they
//! happen, so that a timing model can charge them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::device::paged::PageStore;
use crate::device::stats::FlashStats;
use crate::{Error, Result};

mod check;
mod persist;
mod read;
mod sparse;

pub(crate) use persist::{FtlHeader, WholeFtl};
use persist::{Table, Tables};
use sparse::SparseMap;

/// Marks an unmapped logical page, an invalid physical page or "no block".
const NONE: u32 = u32::MAX;
/// Logical pages per chunk of the sparse logical→physical map.
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Most erase blocks an FTL may have (about 1 GB of per-block tables).
const MAX_BLOCKS: u64 = 1 << 26;

/// What a physical flash operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Read one flash page.
    Read,
    /// Program one flash page.
    Program,
    /// Erase one block.
    Erase,
}

/// Why a physical flash operation happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCause {
    /// A host read or write (including the read of a read-modify-write).
    Host,
    /// Garbage collection.
    Gc,
    /// Static wear levelling.
    WearLevel,
}

/// One physical operation caused by a host request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlashOp {
    /// Read, program or erase.
    pub kind: OpKind,
    /// Host request, GC or wear levelling.
    pub cause: OpCause,
    /// Die executing the operation.
    pub die: u32,
    /// Physical page number (read, program) or block number (erase).
    pub addr: u32,
    /// Logical flash page read or programmed (`u32::MAX` for erases).
    pub lpn: u32,
}

/// What the FTL is built from (a [`super::FlashConfig`] plus the number of dies).
#[derive(Debug, Clone, PartialEq)]
pub struct FtlParams {
    /// Flash page size in bytes.
    pub flash_page_size: usize,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Number of dies (parallel units), at least 1.
    pub dies: u32,
    /// Host-visible bytes.
    pub logical_bytes: u64,
    /// Extra physical space as a fraction of the host-visible space.
    pub overprovisioning: f64,
    /// Free blocks per die kept for garbage collection (at least 1).
    pub gc_reserved_blocks: u32,
    /// Static wear-levelling threshold on the erase-count spread (0 disables).
    pub wear_level_threshold: u32,
    /// Erases after which a block is retired (0 = unlimited).
    pub erase_limit: u32,
}

/// The resulting layout of the FTL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FtlGeometry {
    /// Flash page size in bytes.
    pub flash_page_size: usize,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Number of dies.
    pub dies: u32,
    /// Blocks in each die.
    pub blocks_per_die: u32,
    /// Host-visible flash pages.
    pub logical_pages: u32,
    /// Free blocks per die kept for garbage collection.
    pub gc_reserved_blocks: u32,
    /// Static wear-levelling threshold (0 disables).
    pub wear_level_threshold: u32,
    /// Erases after which a block is retired (0 = unlimited).
    pub erase_limit: u32,
}

impl FtlGeometry {
    /// Plans the layout: enough blocks per die for the logical pages plus over-provisioning,
    /// and never fewer than `ceil(logical / (dies * pages_per_block)) + reserved + 1`, the
    /// minimum with which garbage collection always finds a victim with an invalid page.
    pub fn plan(p: &FtlParams) -> Result<FtlGeometry> {
        if p.flash_page_size == 0 || p.pages_per_block == 0 || p.dies == 0 {
            return Err(Error::invalid(
                "flash geometry",
                "page size, pages per block and dies must be non-zero",
            ));
        }
        if p.gc_reserved_blocks == 0 {
            return Err(Error::invalid(
                "gc_reserved_blocks",
                "0; garbage collection needs at least one reserved block to copy to",
            ));
        }
        if !(p.overprovisioning.is_finite() && (0.0..=10.0).contains(&p.overprovisioning)) {
            return Err(Error::invalid(
                "overprovisioning",
                format!("{} is outside [0, 10]", p.overprovisioning),
            ));
        }
        let fps = p.flash_page_size as u64;
        let logical = p.logical_bytes.div_ceil(fps);
        if logical == 0 || logical >= NONE as u64 {
            return Err(Error::invalid(
                "capacity",
                format!(
                    "{} bytes gives {logical} flash pages; it must give between 1 and {} pages",
                    p.logical_bytes,
                    NONE - 1
                ),
            ));
        }
        let per_die_pages = (p.dies as u64) * (p.pages_per_block as u64);
        let with_op = ((logical as f64) * (1.0 + p.overprovisioning)).ceil() as u64;
        let min_blocks = logical.div_ceil(per_die_pages) + p.gc_reserved_blocks as u64 + 1;
        let blocks_per_die = with_op.div_ceil(per_die_pages).max(min_blocks);
        let physical = blocks_per_die * per_die_pages;
        if physical >= NONE as u64 {
            return Err(Error::invalid(
                "capacity",
                format!(
                    "{physical} physical flash pages exceed the simulator's 32-bit page addresses; \
                     use a smaller capacity or larger flash pages"
                ),
            ));
        }
        let blocks = blocks_per_die * p.dies as u64;
        if blocks > MAX_BLOCKS {
            return Err(Error::invalid(
                "capacity",
                format!(
                    "{blocks} erase blocks are more than the simulator's {MAX_BLOCKS} \
                     (its per-block tables would not fit in memory); use a smaller capacity \
                     or larger blocks"
                ),
            ));
        }
        Ok(FtlGeometry {
            flash_page_size: p.flash_page_size,
            pages_per_block: p.pages_per_block,
            dies: p.dies,
            blocks_per_die: blocks_per_die as u32,
            logical_pages: logical as u32,
            gc_reserved_blocks: p.gc_reserved_blocks,
            wear_level_threshold: p.wear_level_threshold,
            erase_limit: p.erase_limit,
        })
    }

    /// Total number of blocks.
    pub fn blocks(&self) -> u32 {
        self.blocks_per_die * self.dies
    }
}

/// Life-cycle state of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum BlockState {
    /// Erased (or never used) and available.
    Free,
    /// The die's write frontier.
    Active,
    /// Fully programmed; a garbage-collection candidate.
    Sealed,
    /// Being collected or relocated (only inside one FTL call).
    Victim,
    /// Reached the erase limit; never used again.
    Retired,
}

/// Per-die allocation state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Die {
    /// Active block (`NONE` if none) and its next page to program.
    active: u32,
    next_page: u32,
    /// Blocks of this die with local index `>= fresh_next` were never used (erase count
    /// 0); they are free and come first in dynamic wear levelling.
    fresh_next: u32,
    /// Recycled free blocks ordered by (erase count, block).
    free: BTreeSet<(u32, u32)>,
    /// Sealed blocks bucketed by valid-page count (greedy victim selection in O(1)).
    buckets: Vec<Vec<u32>>,
    /// Sealed blocks ordered by (erase count, block), for static wear levelling.
    sealed_by_erase: BTreeSet<(u32, u32)>,
    /// Largest erase count of any block of the die (retired ones included).
    max_erase: u32,
    /// Retired blocks.
    retired: u32,
}

/// Operation counters (see [`FlashStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counters {
    flash_reads: u64,
    flash_writes: u64,
    erases: u64,
    gc_copies: u64,
    wl_copies: u64,
    gc_runs: u64,
    host_flash_writes: u64,
}

/// A page-mapping FTL over NAND blocks that really stores the data (see the module docs).
/// A device saves it in three parts: the data ([`Ftl::pages_mut`]), the large tables
/// (paged, only what changed: [`Ftl::save_tables`]) and a small header
/// ([`Ftl::header`]); see `persist` for the format.
#[derive(Debug)]
pub struct Ftl {
    geo: FtlGeometry,
    l2p: SparseMap,
    /// Physical→logical map, grown as blocks are first opened (`NONE` = invalid page).
    p2l: Vec<u32>,
    /// The bytes of every mapped logical page, keyed by logical page number.
    data: PageStore,
    /// The saved form of the large tables and which of their pages changed since.
    tables: Tables,
    erase: Vec<u32>,
    valid: Vec<u32>,
    state: Vec<BlockState>,
    /// Position of a sealed block inside its die's valid-count bucket.
    pos: Vec<u32>,
    dies: Vec<Die>,
    next_die: u32,
    /// Number of blocks per erase count, and the smallest erase count with a block.
    erase_hist: Vec<u64>,
    erase_min: u32,
    mapped: u64,
    counters: Counters,
}

impl Ftl {
    /// Builds an empty (fully erased) FTL.
    pub fn new(params: &FtlParams) -> Result<Ftl> {
        let geo = FtlGeometry::plan(params)?;
        let blocks = geo.blocks() as usize;
        let die = Die {
            active: NONE,
            next_page: 0,
            fresh_next: 0,
            free: BTreeSet::new(),
            buckets: vec![Vec::new(); geo.pages_per_block as usize + 1],
            sealed_by_erase: BTreeSet::new(),
            max_erase: 0,
            retired: 0,
        };
        Ok(Ftl {
            tables: Tables::new(&geo),
            l2p: SparseMap::new(geo.logical_pages),
            p2l: Vec::new(),
            data: PageStore::new_paged(geo.flash_page_size),
            erase: vec![0; blocks],
            valid: vec![0; blocks],
            state: vec![BlockState::Free; blocks],
            pos: vec![0; blocks],
            dies: vec![die; geo.dies as usize],
            next_die: 0,
            erase_hist: vec![blocks as u64],
            erase_min: 0,
            mapped: 0,
            counters: Counters::default(),
            geo,
        })
    }

    /// [`Ftl::check_invariants`] for a state read from a file (its pages, restored with
    /// [`Ftl::set_pages`], were checked against the flash page size when attached).
    pub fn check_loaded(&mut self) -> Result<()> {
        self.check_invariants()
    }

    /// The stored pages (to save them with the device's state).
    pub fn pages_mut(&mut self) -> &mut PageStore {
        &mut self.data
    }

    /// The stored pages.
    pub fn pages(&self) -> &PageStore {
        &self.data
    }

    /// The layout in use.
    pub fn geometry(&self) -> &FtlGeometry {
        &self.geo
    }

    /// Host-visible bytes addressable through the FTL (whole flash pages).
    pub fn logical_bytes(&self) -> u64 {
        self.geo.logical_pages as u64 * self.geo.flash_page_size as u64
    }

    /// The counters as [`FlashStats`].
    pub fn stats(&self) -> FlashStats {
        let c = &self.counters;
        FlashStats {
            flash_reads: c.flash_reads,
            flash_writes: c.flash_writes,
            erases: c.erases,
            gc_copies: c.gc_copies,
            wl_copies: c.wl_copies,
            gc_runs: c.gc_runs,
            host_flash_writes: c.host_flash_writes,
            write_amplification: if c.host_flash_writes == 0 {
                1.0
            } else {
                c.flash_writes as f64 / c.host_flash_writes as f64
            },
            erase_min: self.erase_min as u64,
            erase_max: self.dies.iter().map(|d| d.max_erase).max().unwrap_or(0) as u64,
            erase_mean: c.erases as f64 / self.geo.blocks() as f64,
            retired_blocks: self.dies.iter().map(|d| d.retired as u64).sum(),
        }
    }

    /// Writes `data` at byte `offset`, appending the physical operations to `ops`.
    ///
    /// Flash pages are written in address order; if the device runs out of space (worn
    /// out) part-way, the pages before the failing one are written (like a torn write on
    /// a real drive) and every other page keeps its previous contents.
    pub fn write(&mut self, offset: u64, data: &[u8], ops: &mut Vec<FlashOp>) -> Result<()> {
        self.write_with(offset, data, ops, |_| false)
    }

    /// Like [`Ftl::write`]; the read of a read-modify-write is skipped (served by the
    /// controller) for logical pages for which `cached` returns true.
    pub fn write_with(
        &mut self,
        offset: u64,
        data: &[u8],
        ops: &mut Vec<FlashOp>,
        mut cached: impl FnMut(u32) -> bool,
    ) -> Result<()> {
        self.check_range(offset, data.len())?;
        let fps = self.geo.flash_page_size;
        let mut done = 0;
        while done < data.len() {
            let byte = offset + done as u64;
            let lpn = (byte / fps as u64) as u32;
            let off = (byte % fps as u64) as usize;
            let n = (fps - off).min(data.len() - done);
            self.write_page(lpn, off, &data[done..done + n], ops, &mut cached)?;
            done += n;
        }
        Ok(())
    }

    fn check_range(&self, offset: u64, len: usize) -> Result<()> {
        let end = offset.checked_add(len as u64);
        match end {
            Some(e) if e <= self.logical_bytes() => Ok(()),
            _ => Err(Error::invalid(
                "flash request",
                format!(
                    "bytes {offset}..+{len} exceed the {} logical bytes of the flash",
                    self.logical_bytes()
                ),
            )),
        }
    }

    fn op(&self, kind: OpKind, cause: OpCause, ppn: u32, lpn: u32) -> FlashOp {
        let block = ppn / self.geo.pages_per_block;
        FlashOp {
            kind,
            cause,
            die: block % self.geo.dies,
            addr: ppn,
            lpn,
        }
    }

    /// Programs logical page `lpn` with `src` placed at byte `off` of the flash page.
    fn write_page(
        &mut self,
        lpn: u32,
        off: usize,
        src: &[u8],
        ops: &mut Vec<FlashOp>,
        cached: &mut impl FnMut(u32) -> bool,
    ) -> Result<()> {
        let fps = self.geo.flash_page_size;
        // The new image first (reading the old one may fail on a damaged pages file, which
        // must leave the FTL unchanged). Data is keyed by logical page: GC never moves it.
        let partial = src.len() != fps;
        let mut merged = None;
        if partial {
            let mut p = vec![0u8; fps];
            if self.l2p.get(lpn) != NONE {
                self.data.read(lpn as u64, &mut p)?;
            }
            p[off..off + src.len()].copy_from_slice(src);
            merged = Some(p);
        }
        // Allocation may run GC, which may move the old version: look it up afterwards.
        let new = self.alloc_host(ops)?;
        let old = self.l2p.get(lpn);
        if old == NONE {
            self.mapped += 1;
        } else {
            if partial && !cached(lpn) {
                ops.push(self.op(OpKind::Read, OpCause::Host, old, lpn));
                self.counters.flash_reads += 1;
            }
            self.invalidate(old);
        }
        self.data
            .write(lpn as u64, merged.as_deref().unwrap_or(src));
        self.commit(new, lpn);
        ops.push(self.op(OpKind::Program, OpCause::Host, new, lpn));
        self.counters.flash_writes += 1;
        self.counters.host_flash_writes += 1;
        Ok(())
    }

    /// Free blocks of die `d` (fresh and recycled).
    fn free_count(&self, d: usize) -> u32 {
        let die = &self.dies[d];
        self.geo.blocks_per_die - die.fresh_next + die.free.len() as u32
    }

    /// Pages die `d` can still program without erasing: frontier rest plus free blocks.
    fn room(&self, d: usize) -> u64 {
        let die = &self.dies[d];
        let ppb = self.geo.pages_per_block as u64;
        let frontier = if die.active == NONE {
            0
        } else {
            ppb - die.next_page as u64
        };
        frontier + self.free_count(d) as u64 * ppb
    }

    /// A physical page for a host write: round-robin over dies, skipping full ones.
    fn alloc_host(&mut self, ops: &mut Vec<FlashOp>) -> Result<u32> {
        let n = self.geo.dies;
        for _ in 0..n {
            let d = self.next_die as usize;
            self.next_die = (self.next_die + 1) % n;
            if let Some(ppn) = self.alloc_on_die(d, ops) {
                return Ok(ppn);
            }
        }
        Err(self.full_error())
    }

    fn full_error(&self) -> Error {
        let retired: u64 = self.dies.iter().map(|d| d.retired as u64).sum();
        if retired > 0 {
            Error::DeviceFull(format!(
                "flash worn out: {retired} of {} blocks retired after {} erases each; \
                 no die can take another page (stored data is still readable)",
                self.geo.blocks(),
                self.geo.erase_limit
            ))
        } else {
            Error::DeviceFull("no free flash page on any die".into())
        }
    }

    fn alloc_on_die(&mut self, d: usize, ops: &mut Vec<FlashOp>) -> Option<u32> {
        let reserved = self.geo.gc_reserved_blocks;
        if self.dies[d].active == NONE {
            if self.free_count(d) <= reserved {
                self.collect(d, ops);
            }
            // GC copies may have opened a frontier with room left.
            if self.dies[d].active == NONE {
                if self.free_count(d) <= reserved {
                    return None;
                }
                let b = self.take_free(d)?;
                self.open(d, b);
            }
        }
        Some(self.reserve(d))
    }

    /// Takes the free block with the lowest erase count (fresh blocks first).
    fn take_free(&mut self, d: usize) -> Option<u32> {
        let dies = self.geo.dies;
        let die = &mut self.dies[d];
        if die.fresh_next < self.geo.blocks_per_die {
            let b = die.fresh_next * dies + d as u32;
            die.fresh_next += 1;
            Some(b)
        } else {
            die.free.pop_first().map(|(_, b)| b)
        }
    }

    fn open(&mut self, d: usize, b: u32) {
        let ppb = self.geo.pages_per_block as usize;
        let end = (b as usize + 1) * ppb;
        if self.p2l.len() < end {
            self.p2l.resize(end, NONE);
        }
        self.state[b as usize] = BlockState::Active;
        self.tables.mark(Table::State, b);
        self.dies[d].active = b;
        self.dies[d].next_page = 0;
    }

    /// Takes the next page of die `d`'s frontier (which must have room).
    fn reserve(&mut self, d: usize) -> u32 {
        let die = &mut self.dies[d];
        let ppn = die.active * self.geo.pages_per_block + die.next_page;
        die.next_page += 1;
        ppn
    }

    /// Maps `lpn` to the reserved page `ppn`; seals the block when it is full.
    fn commit(&mut self, ppn: u32, lpn: u32) {
        let ppb = self.geo.pages_per_block;
        let b = ppn / ppb;
        self.p2l[ppn as usize] = lpn;
        self.valid[b as usize] += 1;
        self.l2p.set(lpn, ppn);
        self.tables.mark(Table::P2l, ppn);
        self.tables.mark(Table::Valid, b);
        self.tables.mark(Table::L2p, lpn);
        let d = (b % self.geo.dies) as usize;
        if self.dies[d].active == b && self.dies[d].next_page == ppb {
            self.dies[d].active = NONE;
            self.seal(d, b);
        }
    }

    fn seal(&mut self, d: usize, b: u32) {
        let bi = b as usize;
        self.state[bi] = BlockState::Sealed;
        self.tables.mark(Table::State, b);
        self.tables.mark(Table::Pos, b);
        let bucket = &mut self.dies[d].buckets[self.valid[bi] as usize];
        self.pos[bi] = bucket.len() as u32;
        bucket.push(b);
        self.dies[d].sealed_by_erase.insert((self.erase[bi], b));
    }

    fn unseal(&mut self, d: usize, b: u32) {
        let bi = b as usize;
        self.bucket_remove(d, b);
        self.dies[d].sealed_by_erase.remove(&(self.erase[bi], b));
        self.state[bi] = BlockState::Victim;
        self.tables.mark(Table::State, b);
    }

    fn bucket_remove(&mut self, d: usize, b: u32) {
        let bi = b as usize;
        let bucket = &mut self.dies[d].buckets[self.valid[bi] as usize];
        let i = self.pos[bi] as usize;
        bucket.swap_remove(i);
        if let Some(&moved) = bucket.get(i) {
            self.pos[moved as usize] = i as u32;
            self.tables.mark(Table::Pos, moved);
        }
    }

    /// Marks physical page `ppn` invalid.
    fn invalidate(&mut self, ppn: u32) {
        let b = ppn / self.geo.pages_per_block;
        let bi = b as usize;
        self.p2l[ppn as usize] = NONE;
        self.tables.mark(Table::P2l, ppn);
        self.tables.mark(Table::Valid, b);
        if self.state[bi] == BlockState::Sealed {
            let d = (b % self.geo.dies) as usize;
            self.bucket_remove(d, b);
            self.valid[bi] -= 1;
            let bucket = &mut self.dies[d].buckets[self.valid[bi] as usize];
            self.pos[bi] = bucket.len() as u32;
            bucket.push(b);
            self.tables.mark(Table::Pos, b);
        } else {
            self.valid[bi] -= 1;
        }
    }

    /// Greedy GC on die `d` until it has more free blocks than the reserve, or no victim
    /// can be collected. Terminates: a run that does not retire its victim gains at least
    /// one free page, and only finitely many blocks can retire.
    fn collect(&mut self, d: usize, ops: &mut Vec<FlashOp>) {
        let ppb = self.geo.pages_per_block as usize;
        while self.free_count(d) <= self.geo.gc_reserved_blocks {
            let Some(v) = (0..ppb).find(|&v| !self.dies[d].buckets[v].is_empty()) else {
                return; // every sealed block is fully valid: nothing to reclaim
            };
            if v as u64 > self.room(d) {
                return; // worn out: not even the emptiest victim fits any more
            }
            let b = self.dies[d].buckets[v][0];
            if !self.relocate(d, b, OpCause::Gc, ops) {
                return;
            }
            self.counters.gc_runs += 1;
            self.static_wear_level(d, ops);
        }
    }

    /// Relocates the least-erased data block of die `d` when the erase-count spread
    /// exceeds the threshold.
    fn static_wear_level(&mut self, d: usize, ops: &mut Vec<FlashOp>) {
        let threshold = self.geo.wear_level_threshold;
        if threshold == 0 {
            return;
        }
        let Some(&(e, b)) = self.dies[d].sealed_by_erase.first() else {
            return;
        };
        if self.dies[d].max_erase - e <= threshold || self.valid[b as usize] as u64 > self.room(d) {
            return;
        }
        self.relocate(d, b, OpCause::WearLevel, ops);
    }

    /// Copies the valid pages of sealed block `b` to die `d`'s frontier and erases it.
    /// The caller has checked that the die has room for them. Returns false (leaving the
    /// block sealed and consistent) if a page could not be placed after all.
    fn relocate(&mut self, d: usize, b: u32, cause: OpCause, ops: &mut Vec<FlashOp>) -> bool {
        let ppb = self.geo.pages_per_block;
        self.unseal(d, b);
        for ppn in b * ppb..(b + 1) * ppb {
            let lpn = self.p2l[ppn as usize];
            if lpn == NONE {
                continue;
            }
            if self.dies[d].active == NONE {
                match self.take_free(d) {
                    Some(nb) => self.open(d, nb),
                    None => {
                        self.seal(d, b);
                        return false;
                    }
                }
            }
            let new = self.reserve(d);
            ops.push(self.op(OpKind::Read, cause, ppn, lpn));
            ops.push(self.op(OpKind::Program, cause, new, lpn));
            self.invalidate(ppn);
            self.commit(new, lpn);
            self.counters.flash_reads += 1;
            self.counters.flash_writes += 1;
            match cause {
                OpCause::WearLevel => self.counters.wl_copies += 1,
                _ => self.counters.gc_copies += 1,
            }
        }
        self.erase_block(d, b, cause, ops);
        true
    }

    fn erase_block(&mut self, d: usize, b: u32, cause: OpCause, ops: &mut Vec<FlashOp>) {
        let bi = b as usize;
        ops.push(FlashOp {
            kind: OpKind::Erase,
            cause,
            die: d as u32,
            addr: b,
            lpn: NONE,
        });
        self.counters.erases += 1;
        let e = self.erase[bi] as usize;
        self.erase_hist[e] -= 1;
        if self.erase_hist.len() <= e + 1 {
            self.erase_hist.push(0);
        }
        self.erase_hist[e + 1] += 1;
        while self.erase_hist[self.erase_min as usize] == 0 {
            self.erase_min += 1;
        }
        self.erase[bi] += 1;
        self.tables.mark(Table::Erase, b);
        self.tables.mark(Table::State, b);
        let count = self.erase[bi];
        let die = &mut self.dies[d];
        die.max_erase = die.max_erase.max(count);
        if self.geo.erase_limit > 0 && count >= self.geo.erase_limit {
            self.state[bi] = BlockState::Retired;
            die.retired += 1;
        } else {
            self.state[bi] = BlockState::Free;
            die.free.insert((count, b));
        }
    }
}
