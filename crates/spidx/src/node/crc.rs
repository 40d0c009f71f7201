//! Updating a `checked` page's CRC-32 after a small in-place change, without reading the
//! whole page again.
//!
//! CRC-32 is affine over GF(2): for two messages of equal length, `crc(a) ^ crc(b)` depends
//! only on `a ^ b`, and equals the CRC register that `a ^ b` leaves when it is fed from a
//! zero register without the final inversion (the "linear part" `lin`). A change confined
//! to bytes `lo..hi` of the checksummed region therefore moves the checksum by
//! `lin(old[lo..hi] ^ new[lo..hi]) · x^(8·(len − hi))` (the zero bytes after the change
//! shift the register; leading zero bytes leave a zero register as it is), and
//! `lin(old ^ new) = lin(old) ^ lin(new)`. So a store that edits one entry of a 4 KB page
//! computes the CRC of about 50 bytes twice and two multiplications instead of the CRC of
//! 4 KB, and writes the very bytes a full [`NodeLayout::seal`](super::NodeLayout::seal)
//! would write (the tests compare both on random edits).
//!
//! The multiplication modulo the CRC polynomial is the one zlib's `crc32_combine` uses
//! (reflected bit order); powers `x^(8k)` come from two small tables (`k mod 256` and
//! `k div 256`), built once per page size.

use std::ops::Range;

use super::NodeLayout;

/// The CRC-32 polynomial, reflected.
const POLY: u32 = 0xedb8_8320;

/// `a(x) · b(x)` modulo the CRC polynomial, both reflected (`x^0` is the top bit): the
/// bit-at-a-time product. Two of them per change: a carry-less multiplication instruction
/// (`pclmulqdq`) was measured to make no difference to insertion.
#[inline]
fn multiply(a: u32, mut b: u32) -> u32 {
    let mut p = 0u32;
    for i in 0..32 {
        p ^= b & ((a >> (31 - i)) & 1).wrapping_neg();
        b = (b >> 1) ^ ((b & 1).wrapping_neg() & POLY);
    }
    p
}

/// The CRC register `bytes` leave when fed from a zero register, without the final
/// inversion: the linear part of CRC-32.
#[inline]
pub(crate) fn linear(bytes: &[u8]) -> u32 {
    // crc32fast's state is the inverted register: an initial state of !0 is a zero
    // register, and the final state is the inverted register again.
    let mut h = crc32fast::Hasher::new_with_initial(!0);
    h.update(bytes);
    !h.finalize()
}

/// Appends zero bytes to CRC registers quickly, for one length of checksummed region.
#[derive(Debug, Clone)]
pub(crate) struct ZeroShift {
    /// `x^(8k)` for `k` in `0..256`.
    low: Box<[u32; 256]>,
    /// `x^(8·256·k)` for `k` in `0..=len / 256`.
    high: Vec<u32>,
}

impl ZeroShift {
    /// Tables for appending up to `len` zero bytes.
    pub(crate) fn new(len: usize) -> Self {
        let x8 = 0x0080_0000; // x^8
        let mut low = Box::new([0u32; 256]);
        let mut p = 0x8000_0000; // x^0
        for slot in low.iter_mut() {
            *slot = p;
            p = multiply(x8, p);
        }
        // p is now x^(8·256).
        let step = p;
        let mut high = Vec::with_capacity(len / 256 + 1);
        let mut q = 0x8000_0000;
        for _ in 0..=len / 256 {
            high.push(q);
            q = multiply(step, q);
        }
        ZeroShift { low, high }
    }

    /// The register `state` becomes after `k` more zero bytes (`k` at most the length the
    /// tables were built for).
    #[inline]
    pub(crate) fn append_zeros(&self, state: u32, k: usize) -> u32 {
        if state == 0 {
            return 0;
        }
        let s = match k % 256 {
            0 => state,
            r => multiply(self.low[r], state),
        };
        match k / 256 {
            0 => s,
            h => multiply(self.high[h], s),
        }
    }

    /// The change of the CRC of a region `len` bytes long when its bytes `lo..hi` change
    /// from bytes whose linear CRC was `before` to bytes whose linear CRC is `after`.
    #[inline]
    pub(crate) fn delta(&self, before: u32, after: u32, hi: usize, len: usize) -> u32 {
        self.append_zeros(before ^ after, len - hi)
    }
}

/// Reseals `checked` pages after small changes (see the module documentation): the store
/// notes the linear CRCs of the bytes a change will touch ([`Self::before`]), makes the
/// change, and [`Self::seal`] moves the stored checksum by the difference.
#[derive(Debug, Clone)]
pub(crate) struct Resealer {
    layout: NodeLayout,
    shift: ZeroShift,
}

/// The linear CRCs of the spans a change touches, taken before it (see [`Resealer`]).
#[derive(Debug, Clone)]
pub(crate) struct Unsealed {
    /// The entry bytes the change touches (page offsets), or `None` to recompute the whole
    /// checksum (the span is large).
    span: Option<Range<usize>>,
    /// Linear CRC of the header fields.
    fields: u32,
    /// Linear CRC of `span`'s bytes.
    entries: u32,
}

impl Resealer {
    /// A resealer for pages of `layout`; `None` when its pages carry no checksum.
    pub(crate) fn new(layout: NodeLayout) -> Option<Self> {
        let region = layout.checksummed()?;
        Some(Resealer {
            layout,
            shift: ZeroShift::new(region.len()),
        })
    }

    /// Notes the bytes of sealed `page` that a change confined to the header fields and
    /// the entry bytes `span` will touch. A span longer than a quarter of the page is
    /// cheaper to checksum in full after the change: it is not read now.
    pub(crate) fn before(&self, page: &[u8], span: Range<usize>) -> Unsealed {
        let fields = linear(&page[self.layout.header_fields()]);
        if span.len() > self.layout.page_size() / 4 {
            return Unsealed {
                span: None,
                fields,
                entries: 0,
            };
        }
        let entries = linear(&page[span.clone()]);
        Unsealed {
            span: Some(span),
            fields,
            entries,
        }
    }

    /// Updates the checksum of `page` after the change noted in `u` (which touched no byte
    /// outside the header fields and `u`'s span): the bytes [`NodeLayout::seal`] would
    /// write.
    pub(crate) fn seal(&self, page: &mut [u8], u: Unsealed) {
        let Some(span) = u.span else {
            self.layout.seal(page);
            return;
        };
        let region = self.layout.checksummed().expect("a checked layout");
        let (start, len) = (region.start, region.len());
        let fields = self.layout.header_fields();
        let mut crc = u32::from_le_bytes(page[0..4].try_into().unwrap());
        crc ^= self.shift.delta(
            u.fields,
            linear(&page[fields.clone()]),
            fields.end - start,
            len,
        );
        if !span.is_empty() {
            crc ^= self.shift.delta(
                u.entries,
                linear(&page[span.clone()]),
                span.end - start,
                len,
            );
        }
        page[0..4].copy_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(
            crc,
            crc32fast::hash(&page[start..]),
            "patched checksum differs from the full one"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn zero_shift_appends_zero_bytes() {
        let data: Vec<u8> = (0..37u8).map(|i| i.wrapping_mul(91) ^ 0x5a).collect();
        let z = ZeroShift::new(5000);
        for k in [0usize, 1, 7, 255, 256, 257, 511, 1000, 4096, 5000] {
            let mut padded = data.clone();
            padded.extend(std::iter::repeat_n(0u8, k));
            assert_eq!(z.append_zeros(linear(&data), k), linear(&padded), "k = {k}");
        }
    }

    #[test]
    fn patched_crc_equals_the_full_crc() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for len in [100usize, 1020, 4092, 65532] {
            let z = ZeroShift::new(len);
            let mut region: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let mut crc = crc32fast::hash(&region);
            for _ in 0..200 {
                let lo = rng.gen_range(0..len);
                let hi = rng.gen_range(lo..=len.min(lo + 300));
                let before = linear(&region[lo..hi]);
                for b in &mut region[lo..hi] {
                    *b = rng.gen();
                }
                let after = linear(&region[lo..hi]);
                crc ^= z.delta(before, after, hi, len);
                assert_eq!(crc, crc32fast::hash(&region), "len {len}, {lo}..{hi}");
            }
        }
    }
}
