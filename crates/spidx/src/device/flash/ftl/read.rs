//! The FTL's host reads: mapped logical pages are read from flash (one flash read each,
//! unless a controller cache serves them), unmapped ones read as zeros without touching a
//! die; a reader that does not use the bytes gets the same operations without the copies.

use super::{FlashOp, Ftl, OpCause, OpKind, NONE};
use crate::Result;

impl Ftl {
    /// Reads `buf.len()` bytes at byte `offset`, appending the flash reads to `ops`.
    pub fn read(&mut self, offset: u64, buf: &mut [u8], ops: &mut Vec<FlashOp>) -> Result<()> {
        self.read_with(offset, buf, ops, |_| false)
    }

    /// Like [`Ftl::read`], but logical pages for which `cached` returns true are served
    /// from a controller cache: same bytes, no flash read.
    pub fn read_with(
        &mut self,
        offset: u64,
        buf: &mut [u8],
        ops: &mut Vec<FlashOp>,
        cached: impl FnMut(u32) -> bool,
    ) -> Result<()> {
        let len = buf.len();
        self.read_bytes(offset, len, Some(buf), ops, cached)
    }

    /// Like [`Ftl::read_with`] for a reader that does not use the bytes: the same flash
    /// reads, operations and counters, nothing copied.
    pub fn read_unused_with(
        &mut self,
        offset: u64,
        len: usize,
        ops: &mut Vec<FlashOp>,
        cached: impl FnMut(u32) -> bool,
    ) -> Result<()> {
        self.read_bytes(offset, len, None, ops, cached)
    }

    /// Reads `len` bytes at byte `offset` into `buf` if given.
    fn read_bytes(
        &mut self,
        offset: u64,
        len: usize,
        mut buf: Option<&mut [u8]>,
        ops: &mut Vec<FlashOp>,
        mut cached: impl FnMut(u32) -> bool,
    ) -> Result<()> {
        self.check_range(offset, len)?;
        let fps = self.geo.flash_page_size;
        let mut done = 0;
        while done < len {
            let byte = offset + done as u64;
            let lpn = (byte / fps as u64) as u32;
            let off = (byte % fps as u64) as usize;
            let n = (fps - off).min(len - done);
            let out = buf.as_deref_mut().map(|b| &mut b[done..done + n]);
            let ppn = self.l2p.get(lpn);
            if ppn == NONE {
                if let Some(out) = out {
                    out.fill(0);
                }
            } else {
                if !cached(lpn) {
                    ops.push(self.op(OpKind::Read, OpCause::Host, ppn, lpn));
                    self.counters.flash_reads += 1;
                }
                if let Some(out) = out {
                    self.data.read_part(lpn as u64, off, out)?;
                }
            }
            done += n;
        }
        Ok(())
    }
}
