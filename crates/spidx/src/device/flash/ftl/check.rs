//! The FTL's invariant checker, used by the tests after every step and when a saved
//! device state is loaded (a state with a valid checksum but inconsistent tables is
//! rejected instead of causing wrong reads or panics later).

use super::{BlockState, Die, Ftl, CHUNK, NONE};
use crate::{Error, Result};

impl Ftl {
    /// Checks the FTL's internal consistency (used by tests and after loading a state):
    /// each logical page is mapped at most once and the reverse map agrees; exactly the
    /// valid pages hold data; valid counts match the mapped pages of each block; free
    /// lists hold only erased blocks; per-die block accounting adds up; sealed blocks are
    /// in the right valid-count bucket; erase-count statistics match the blocks.
    pub fn check_invariants(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::corrupted("flash translation layer", msg));
        let g = &self.geo;
        let ppb = g.pages_per_block as usize;
        let blocks = g.blocks() as usize;
        if self.erase.len() != blocks
            || self.valid.len() != blocks
            || self.state.len() != blocks
            || self.pos.len() != blocks
            || self.dies.len() != g.dies as usize
            || !self.p2l.len().is_multiple_of(ppb)
            || self.p2l.len() > blocks * ppb
            || self.data.page_size() != g.flash_page_size
            || self.next_die >= g.dies
            || self.l2p.chunks.len() != (g.logical_pages as usize).div_ceil(CHUNK)
            || self.l2p.chunks.iter().flatten().any(|c| c.len() != CHUNK)
            || self.dies.iter().any(|d| {
                d.buckets.len() != ppb + 1
                    || d.fresh_next > g.blocks_per_die
                    || (d.active != NONE && d.next_page >= g.pages_per_block)
            })
        {
            return bad("table sizes do not match the geometry".into());
        }
        let mut mapped = 0u64;
        for (lpn, ppn) in self.l2p.mapped() {
            if lpn >= g.logical_pages
                || self.p2l.get(ppn as usize) != Some(&lpn)
                || !self.data.contains(lpn as u64)?
            {
                return bad(format!(
                    "logical page {lpn} -> physical {ppn} is inconsistent"
                ));
            }
            mapped += 1;
        }
        if mapped != self.mapped || self.data.written_pages() != mapped {
            return bad(format!(
                "{mapped} mapped pages, {} recorded, {} pages hold data",
                self.mapped,
                self.data.written_pages()
            ));
        }
        let mut valid = vec![0u32; blocks];
        for (ppn, &lpn) in self.p2l.iter().enumerate() {
            if lpn != NONE {
                if self.l2p.get(lpn) != ppn as u32 {
                    return bad(format!("physical page {ppn} claims logical page {lpn}"));
                }
                valid[ppn / ppb] += 1;
            }
        }
        if valid != self.valid {
            return bad("per-block valid counts differ from the mapped pages".into());
        }
        let mut hist = vec![0u64; self.erase_hist.len()];
        for (bi, &e) in self.erase.iter().enumerate() {
            match hist.get_mut(e as usize) {
                Some(h) => *h += 1,
                None => return bad(format!("block {bi} erase count {e} beyond the histogram")),
            }
        }
        if hist != self.erase_hist
            || (blocks > 0 && self.erase_hist.get(self.erase_min as usize).copied() == Some(0))
            || self.erase.iter().any(|&e| e < self.erase_min)
        {
            return bad("erase-count histogram differs from the blocks".into());
        }
        for (d, die) in self.dies.iter().enumerate() {
            self.check_die(d, die)
                .or_else(|m| bad(format!("die {d}: {m}")))?;
        }
        Ok(())
    }

    fn check_die(&self, d: usize, die: &Die) -> std::result::Result<(), String> {
        let g = &self.geo;
        let ppb = g.pages_per_block;
        let (mut free, mut sealed, mut retired, mut active) = (0u32, 0usize, 0u32, 0u32);
        for local in 0..g.blocks_per_die {
            let b = local * g.dies + d as u32;
            let bi = b as usize;
            let (e, v) = (self.erase[bi], self.valid[bi]);
            if e > die.max_erase {
                return Err(format!("block {b} erase count above the die maximum"));
            }
            let fresh = local >= die.fresh_next;
            if fresh && (e != 0 || self.state[bi] != BlockState::Free) {
                return Err(format!("fresh block {b} was used"));
            }
            match self.state[bi] {
                BlockState::Free => {
                    free += 1;
                    if v != 0 || (!fresh && !die.free.contains(&(e, b))) {
                        return Err(format!("free block {b} not erased or not listed"));
                    }
                }
                BlockState::Active => {
                    active += 1;
                    let first_unwritten = (b * ppb + die.next_page) as usize;
                    let holds = |i: usize| self.p2l.get(i).is_some_and(|&l| l != NONE);
                    if die.active != b || (first_unwritten..((b + 1) * ppb) as usize).any(holds) {
                        return Err(format!("active block {b} inconsistent"));
                    }
                }
                BlockState::Sealed => {
                    sealed += 1;
                    let in_bucket = die.buckets[v as usize].get(self.pos[bi] as usize) == Some(&b);
                    if !in_bucket || !die.sealed_by_erase.contains(&(e, b)) {
                        return Err(format!("sealed block {b} not indexed"));
                    }
                }
                BlockState::Retired => {
                    retired += 1;
                    if v != 0 || g.erase_limit == 0 || e < g.erase_limit {
                        return Err(format!("retired block {b} inconsistent"));
                    }
                }
                BlockState::Victim => return Err(format!("block {b} left as a GC victim")),
            }
        }
        let listed = die.free.len() as u32 + (g.blocks_per_die - die.fresh_next);
        let bucketed: usize = die.buckets.iter().map(Vec::len).sum();
        if free != listed
            || free != self.free_count(d)
            || bucketed != sealed
            || die.sealed_by_erase.len() != sealed
            || retired != die.retired
            || active != u32::from(die.active != NONE)
            || free + sealed as u32 + retired + active != g.blocks_per_die
        {
            return Err(format!(
                "block accounting: {free} free ({listed} listed), {sealed} sealed \
                 ({bucketed} bucketed), {retired} retired, {active} active"
            ));
        }
        if die.free.iter().any(|&(_, b)| b % g.dies != d as u32) {
            return Err("free list holds another die's block".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FtlParams, OpKind};
    use super::*;

    fn filled() -> Ftl {
        let mut ftl = Ftl::new(&FtlParams {
            flash_page_size: 512,
            pages_per_block: 4,
            dies: 2,
            logical_bytes: 32 * 512,
            overprovisioning: 0.2,
            gc_reserved_blocks: 1,
            wear_level_threshold: 2,
            erase_limit: 0,
        })
        .unwrap();
        let mut ops = Vec::new();
        for i in 0..200u64 {
            ftl.write((i * 7 % 32) * 512, &[i as u8; 512], &mut ops)
                .unwrap();
        }
        assert!(ops.iter().any(|o| o.kind == OpKind::Erase));
        ftl.check_loaded().unwrap();
        ftl
    }

    fn broken(f: impl FnOnce(&mut Ftl)) -> String {
        let mut ftl = filled();
        f(&mut ftl);
        ftl.check_loaded().unwrap_err().to_string()
    }

    #[test]
    fn checker_detects_tampering() {
        let (lpn, ppn) = filled().l2p.mapped().next().unwrap();
        assert!(broken(|f| f.l2p.set(lpn, NONE)).contains("mapped"));
        assert!(broken(|f| f.p2l[ppn as usize] = NONE).contains("inconsistent"));
        assert!(broken(|f| f.valid[0] += 1).contains("valid counts"));
        assert!(broken(|f| f.erase[3] += 1).contains("histogram"));
        assert!(broken(|f| {
            let b = (0..f.state.len()).find(|&b| f.state[b] == BlockState::Sealed);
            f.state[b.unwrap()] = BlockState::Free;
        })
        .contains("die"));
        assert!(broken(|f| f.dies[1].fresh_next = u32::MAX).contains("table sizes"));
        assert!(broken(|f| f.next_die = 9).contains("table sizes"));
        assert!(broken(|f| f.data.write(NONE as u64 - 1, &[0; 512])).contains("hold data"));
    }

    #[test]
    fn absurd_geometries_are_refused() {
        let p = FtlParams {
            flash_page_size: 512,
            pages_per_block: 1,
            dies: 1,
            logical_bytes: 1 << 40,
            overprovisioning: 0.0,
            gc_reserved_blocks: 1,
            wear_level_threshold: 0,
            erase_limit: 0,
        };
        assert!(Ftl::new(&p).unwrap_err().to_string().contains("capacity"));
        let p = FtlParams {
            logical_bytes: 1 << 35,
            ..p
        };
        assert!(Ftl::new(&p)
            .unwrap_err()
            .to_string()
            .contains("erase blocks"));
    }
}
