//! Page layouts of nodes.
//!
//! * `checked` (default): 16-byte header `[crc32 u32][magic u16][level u16][count u32]
//!   [reserved u32]`, entries of `2·D` little-endian f64 coordinates (all minima, then all
//!   maxima) and an 8-byte pointer. The CRC-32 covers the page after its first 4 bytes, so a
//!   torn or bit-flipped page is detected and reported with its page id.
//! * `seed`: the layout behind the seeds' capacity table (FESTIval's): a 4-byte header
//!   `[level u16][count u16]`, entries of `2·D` f64 and a 4-byte pointer, no checksum
//!   (2-D entry = 36 bytes). Pointers must fit in 32 bits.
//!
//! A layout made [`NodeLayout::with_aux`] appends an 8-byte little-endian auxiliary key
//! to every entry (the variants that order their entries by a key, e.g. the Hilbert
//! R-tree, ask for it through `IndexKind::aux_bytes`); the layouts of the other variants,
//! and so their capacities, are unchanged.

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::Node;
use super::{Entry, PageId};
use crate::geom::Rect;
use crate::{Error, Result};

const MAGIC: u16 = 0x5258; // "RX"

/// Which page layout nodes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LayoutKind {
    /// Checksummed header, 8-byte pointers.
    Checked,
    /// The seeds' compact layout: 4-byte header, 4-byte pointers, no checksum.
    Seed,
}

impl LayoutKind {
    /// Parses `checked` or `seed`.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "checked" => Ok(LayoutKind::Checked),
            "seed" => Ok(LayoutKind::Seed),
            o => Err(Error::invalid(
                "layout",
                format!("unknown layout '{o}'; use checked or seed"),
            )),
        }
    }
}

/// Encodes and decodes nodes of `dims` dimensions in pages of `page_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLayout {
    kind: LayoutKind,
    page_size: usize,
    dims: usize,
    header: usize,
    ptr_bytes: usize,
    aux_bytes: usize,
    entry: usize,
}

impl NodeLayout {
    /// A layout; errors if not even one entry fits or the page size is unsupported
    /// (1 KB to 256 KB; the `seed` layout counts entries in 16 bits).
    pub fn new(kind: LayoutKind, page_size: usize, dims: usize) -> Result<Self> {
        if !(1024..=256 * 1024).contains(&page_size) {
            return Err(Error::invalid(
                "page size",
                format!("{page_size} bytes; node pages must be 1KB to 256KB"),
            ));
        }
        if dims == 0 || dims > 64 {
            return Err(Error::invalid(
                "dimensions",
                format!("{dims}; supported: 1 to 64"),
            ));
        }
        let (header, ptr_bytes) = match kind {
            LayoutKind::Checked => (16, 8),
            LayoutKind::Seed => (4, 4),
        };
        let entry = 16 * dims + ptr_bytes;
        let l = NodeLayout {
            kind,
            page_size,
            dims,
            header,
            ptr_bytes,
            aux_bytes: 0,
            entry,
        };
        l.check_fit()
    }

    /// The same layout with `bytes` of auxiliary key per entry (0 or 8); errors if fewer
    /// than 3 entries then fit.
    pub fn with_aux(self, bytes: usize) -> Result<Self> {
        if bytes != 0 && bytes != 8 {
            return Err(Error::invalid(
                "layout",
                format!("{bytes} bytes of auxiliary data per entry; supported: 0 or 8"),
            ));
        }
        let l = NodeLayout {
            aux_bytes: bytes,
            entry: 16 * self.dims + self.ptr_bytes + bytes,
            ..self
        };
        l.check_fit()
    }

    fn check_fit(self) -> Result<Self> {
        let (kind, page_size, dims) = (self.kind, self.page_size, self.dims);
        let l = self;
        if l.fits() < 3 {
            return Err(Error::invalid(
                "page size",
                format!(
                    "{page_size} bytes holds only {} entries of {dims} dimensions",
                    l.fits()
                ),
            ));
        }
        if kind == LayoutKind::Seed && l.fits() > u16::MAX as usize {
            return Err(Error::invalid(
                "page size",
                "too large for the seed layout's 16-bit entry count",
            ));
        }
        Ok(l)
    }

    /// The layout kind.
    pub fn kind(&self) -> LayoutKind {
        self.kind
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Bytes of auxiliary key per entry (0: none).
    pub(crate) fn aux_bytes(&self) -> usize {
        self.aux_bytes
    }

    /// Bytes of one entry.
    pub fn entry_size(&self) -> usize {
        self.entry
    }

    /// How many entries fit in one page.
    pub fn fits(&self) -> usize {
        (self.page_size - self.header) / self.entry
    }

    /// Byte offset of entry `i` in a page.
    #[inline]
    pub(crate) fn entry_offset(&self, i: usize) -> usize {
        self.header + i * self.entry
    }

    /// Writes `node` into `page` (exactly one page long).
    #[cfg(test)]
    pub(crate) fn encode<const D: usize>(&self, node: &Node<D>, page: &mut [u8]) -> Result<()> {
        self.encode_entries(node.level, &node.entries, page)
    }

    /// Writes a node of `level` holding `entries` into `page` (exactly one page long), as
    /// `encode` does for a [`Node`](super::Node), without making one first.
    pub(crate) fn encode_entries<const D: usize>(
        &self,
        level: u32,
        entries: &[Entry<D>],
        page: &mut [u8],
    ) -> Result<()> {
        debug_assert_eq!(D, self.dims);
        debug_assert_eq!(page.len(), self.page_size);
        if entries.len() > self.fits() {
            return Err(Error::invalid(
                "node",
                format!(
                    "{} entries do not fit in a page ({} fit)",
                    entries.len(),
                    self.fits()
                ),
            ));
        }
        if level > u16::MAX as u32 {
            return Err(Error::invalid("node", format!("level {level} too large")));
        }
        page.fill(0);
        for (i, e) in entries.iter().enumerate() {
            self.put_entry(page, i, e)?;
        }
        self.put_header(page, level, entries.len());
        Ok(())
    }

    /// Writes entry `i` of a page (the header is not updated; call [`Self::seal`] after).
    pub(crate) fn put_entry<const D: usize>(
        &self,
        page: &mut [u8],
        i: usize,
        e: &Entry<D>,
    ) -> Result<()> {
        self.check_pointer(e.ptr)?;
        self.write_entry(page, i, e);
        Ok(())
    }

    /// Whether pointer `ptr` fits this layout's pointers (the seed layout's are 32-bit).
    pub(crate) fn check_pointer(&self, ptr: u64) -> Result<()> {
        if self.ptr_bytes == 4 && u32::try_from(ptr).is_err() {
            return Err(Error::invalid(
                "pointer",
                format!("{ptr} does not fit the seed layout's 32-bit pointers"),
            ));
        }
        Ok(())
    }

    /// [`put_entry`](Self::put_entry) for an entry whose pointer was checked
    /// ([`check_pointer`](Self::check_pointer)): a pointer too wide is truncated.
    pub(crate) fn write_entry<const D: usize>(&self, page: &mut [u8], i: usize, e: &Entry<D>) {
        let mut o = self.entry_offset(i);
        for v in e.mbr.min.iter().chain(e.mbr.max.iter()) {
            page[o..o + 8].copy_from_slice(&v.to_le_bytes());
            o += 8;
        }
        if self.ptr_bytes == 8 {
            page[o..o + 8].copy_from_slice(&e.ptr.to_le_bytes());
        } else {
            page[o..o + 4].copy_from_slice(&(e.ptr as u32).to_le_bytes());
        }
        if self.aux_bytes == 8 {
            let o = o + self.ptr_bytes;
            page[o..o + 8].copy_from_slice(&e.aux.to_le_bytes());
        }
    }

    /// Writes the header (level and entry count) and, for `checked`, the checksum.
    pub(crate) fn put_header(&self, page: &mut [u8], level: u32, count: usize) {
        self.put_header_fields(page, level, count);
        self.seal(page);
    }

    /// Writes the header's fields (level and entry count; the magic of `checked`) but not
    /// the checksum: the page is sealed afterwards ([`Self::seal`], or a
    /// [`Resealer`](super::Resealer) after a small change). The fields lie in
    /// [`Self::header_fields`].
    pub(crate) fn put_header_fields(&self, page: &mut [u8], level: u32, count: usize) {
        match self.kind {
            LayoutKind::Checked => {
                page[4..6].copy_from_slice(&MAGIC.to_le_bytes());
                page[6..8].copy_from_slice(&(level as u16).to_le_bytes());
                page[8..12].copy_from_slice(&(count as u32).to_le_bytes());
            }
            LayoutKind::Seed => {
                page[0..2].copy_from_slice(&(level as u16).to_le_bytes());
                page[2..4].copy_from_slice(&(count as u16).to_le_bytes());
            }
        }
    }

    /// The bytes of a page [`Self::put_header_fields`] writes.
    pub(crate) fn header_fields(&self) -> std::ops::Range<usize> {
        match self.kind {
            LayoutKind::Checked => 4..12,
            LayoutKind::Seed => 0..4,
        }
    }

    /// The bytes of a page the checksum covers (`None`: the layout has no checksum).
    pub(crate) fn checksummed(&self) -> Option<std::ops::Range<usize>> {
        match self.kind {
            LayoutKind::Checked => Some(4..self.page_size),
            LayoutKind::Seed => None,
        }
    }

    /// Recomputes the checksum after in-place changes (no-op for `seed`).
    pub fn seal(&self, page: &mut [u8]) {
        if self.kind == LayoutKind::Checked {
            let crc = crc32fast::hash(&page[4..]);
            page[0..4].copy_from_slice(&crc.to_le_bytes());
        }
    }

    /// Checks a page read from storage: checksum (for `checked`), magic and entry count.
    /// The error names the page.
    pub fn verify(&self, page: &[u8], id: PageId) -> Result<()> {
        let what = || format!("node page {id}");
        if page.len() != self.page_size {
            return Err(Error::corrupted(
                what(),
                format!("{} bytes, expected {}", page.len(), self.page_size),
            ));
        }
        if self.kind == LayoutKind::Checked {
            let stored = u32::from_le_bytes(page[0..4].try_into().unwrap());
            if crc32fast::hash(&page[4..]) != stored {
                return Err(Error::corrupted(
                    what(),
                    "checksum mismatch (torn write or bit flip)",
                ));
            }
            if u16::from_le_bytes(page[4..6].try_into().unwrap()) != MAGIC {
                return Err(Error::corrupted(what(), "not a node page (bad magic)"));
            }
        }
        let count = NodeView::<1>::raw_count(self, page);
        if count > self.fits() {
            return Err(Error::corrupted(
                what(),
                format!("entry count {count} exceeds the {} that fit", self.fits()),
            ));
        }
        Ok(())
    }

    /// Decodes a page (after [`Self::verify`]) into an owned node.
    #[cfg(test)]
    pub(crate) fn decode<const D: usize>(&self, page: &[u8]) -> Node<D> {
        let v = self.view::<D>(page);
        Node {
            level: v.level(),
            entries: (0..v.len()).map(|i| v.entry(i)).collect(),
        }
    }

    /// The entry count a (verified) page's header holds, whatever the dimensions.
    pub(crate) fn entry_count(&self, page: &[u8]) -> usize {
        NodeView::<1>::raw_count(self, page)
    }

    /// An in-place view of a (verified) page.
    #[inline]
    pub fn view<'a, const D: usize>(&self, page: &'a [u8]) -> NodeView<'a, D> {
        debug_assert_eq!(D, self.dims);
        NodeView {
            page,
            layout: *self,
        }
    }
}

/// Reads a node page in place, without decoding it.
#[derive(Clone, Copy)]
pub struct NodeView<'a, const D: usize> {
    page: &'a [u8],
    layout: NodeLayout,
}

#[inline]
fn f64_at(b: &[u8], o: usize) -> f64 {
    f64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

impl<'a, const D: usize> NodeView<'a, D> {
    fn raw_count(layout: &NodeLayout, page: &[u8]) -> usize {
        match layout.kind {
            LayoutKind::Checked => u32::from_le_bytes(page[8..12].try_into().unwrap()) as usize,
            LayoutKind::Seed => u16::from_le_bytes(page[2..4].try_into().unwrap()) as usize,
        }
    }

    /// Level of the node (0 = leaf).
    #[inline]
    pub fn level(&self) -> u32 {
        let o = if self.layout.kind == LayoutKind::Checked {
            6
        } else {
            0
        };
        u16::from_le_bytes(self.page[o..o + 2].try_into().unwrap()) as u32
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        Self::raw_count(&self.layout, self.page)
    }

    /// Whether the node has no entries.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// MBR of entry `i`.
    #[inline]
    pub fn mbr(&self, i: usize) -> Rect<D> {
        let o = self.layout.entry_offset(i);
        // One bounds check for the whole box; the fixed-size sub-slices below need none.
        let b = &self.page[o..o + 16 * D];
        let mut r = Rect {
            min: [0.0; D],
            max: [0.0; D],
        };
        for d in 0..D {
            r.min[d] = f64_at(b, 8 * d);
            r.max[d] = f64_at(b, 8 * (D + d));
        }
        r
    }

    /// Calls `f(i)` for every entry `i` whose MBR intersects `q` (closed boxes), in entry
    /// order: the entries for which `self.mbr(i).intersects(q)` holds. Made for scans of
    /// whole nodes: one bounds check per entry and, in up to 4 dimensions, a test without
    /// branches per axis (the comparisons are those of [`Rect::intersects`]).
    #[inline]
    pub(crate) fn for_each_intersecting(&self, q: &Rect<D>, mut f: impl FnMut(usize)) {
        let es = self.layout.entry;
        let start = self.layout.header;
        let body = &self.page[start..start + self.len() * es];
        for (i, e) in body.chunks_exact(es).enumerate() {
            let b = &e[..16 * D];
            let hit = if D <= 4 {
                let mut hit = true;
                for d in 0..D {
                    let apart = (f64_at(b, 8 * d) > q.max[d]) | (q.min[d] > f64_at(b, 8 * (D + d)));
                    hit &= !apart;
                }
                hit
            } else {
                (0..D).all(|d| !(f64_at(b, 8 * d) > q.max[d] || q.min[d] > f64_at(b, 8 * (D + d))))
            };
            if hit {
                f(i);
            }
        }
    }

    /// The entries' MBRs in entry order (the boxes [`Self::mbr`] gives), read with one
    /// bounds check per entry: for scans of whole nodes.
    #[inline]
    pub(crate) fn mbrs(&self) -> impl ExactSizeIterator<Item = Rect<D>> + 'a {
        let es = self.layout.entry;
        let start = self.layout.header;
        let body = &self.page[start..start + self.len() * es];
        body.chunks_exact(es).map(|e| {
            let b = &e[..16 * D];
            let mut r = Rect {
                min: [0.0; D],
                max: [0.0; D],
            };
            for d in 0..D {
                r.min[d] = f64_at(b, 8 * d);
                r.max[d] = f64_at(b, 8 * (D + d));
            }
            r
        })
    }

    /// Pointer of entry `i`.
    #[inline]
    pub fn ptr(&self, i: usize) -> u64 {
        let o = self.layout.entry_offset(i) + 16 * D;
        if self.layout.ptr_bytes == 8 {
            u64::from_le_bytes(self.page[o..o + 8].try_into().unwrap())
        } else {
            u32::from_le_bytes(self.page[o..o + 4].try_into().unwrap()) as u64
        }
    }

    /// Auxiliary key of entry `i` (0 if the layout stores none).
    #[inline]
    pub fn aux(&self, i: usize) -> u64 {
        if self.layout.aux_bytes == 0 {
            return 0;
        }
        let o = self.layout.entry_offset(i) + 16 * D + self.layout.ptr_bytes;
        u64::from_le_bytes(self.page[o..o + 8].try_into().unwrap())
    }

    /// The largest auxiliary key of the entries (0 if none or the layout stores none).
    pub(crate) fn aux_max(&self) -> u64 {
        if self.layout.aux_bytes == 0 {
            return 0;
        }
        (0..self.len()).map(|i| self.aux(i)).max().unwrap_or(0)
    }

    /// Entry `i`.
    #[inline]
    pub fn entry(&self, i: usize) -> Entry<D> {
        Entry {
            mbr: self.mbr(i),
            ptr: self.ptr(i),
            aux: self.aux(i),
        }
    }

    /// Union of all entries' MBRs.
    pub(crate) fn mbr_all(&self) -> Rect<D> {
        let mut r = Rect::empty();
        for i in 0..self.len() {
            r.expand(&self.mbr(i));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(level: u32, n: usize) -> Node<2> {
        let entries = (0..n)
            .map(|i| Entry {
                mbr: Rect::new([i as f64, -(i as f64)], [i as f64 + 0.5, 1.0]).unwrap(),
                ptr: 1000 + i as u64,
                aux: 0,
            })
            .collect();
        Node { level, entries }
    }

    #[test]
    fn round_trip_both_layouts() {
        for kind in [LayoutKind::Checked, LayoutKind::Seed] {
            for page_size in [1024, 2048, 4096, 65536, 256 * 1024] {
                let l = NodeLayout::new(kind, page_size, 2).unwrap();
                let mut page = vec![0u8; page_size];
                for n in [0, 1, l.fits()] {
                    let nd = node(3, n);
                    l.encode(&nd, &mut page).unwrap();
                    l.verify(&page, 9).unwrap();
                    assert_eq!(l.decode::<2>(&page), nd);
                    assert_eq!(l.view::<2>(&page).len(), n);
                    let v = l.view::<2>(&page);
                    assert!(v.mbrs().eq((0..n).map(|i| v.mbr(i))));
                }
                assert!(l.encode(&node(0, l.fits() + 1), &mut page).is_err());
            }
        }
    }

    #[test]
    fn auxiliary_keys_round_trip_and_grow_only_their_layout() {
        for kind in [LayoutKind::Checked, LayoutKind::Seed] {
            let plain = NodeLayout::new(kind, 2048, 2).unwrap();
            let l = plain.with_aux(8).unwrap();
            assert_eq!(l.entry_size(), plain.entry_size() + 8);
            assert_eq!(plain.with_aux(0).unwrap(), plain);
            assert!(plain.with_aux(4).is_err());
            let mut nd = node(1, l.fits());
            for (i, e) in nd.entries.iter_mut().enumerate() {
                e.aux = u64::MAX - i as u64 * 977;
            }
            let mut page = vec![0u8; 2048];
            l.encode(&nd, &mut page).unwrap();
            l.verify(&page, 1).unwrap();
            assert_eq!(l.decode::<2>(&page), nd);
            assert_eq!(l.view::<2>(&page).aux_max(), u64::MAX);
            assert_eq!(
                plain.view::<2>(&page).aux(0),
                0,
                "a plain layout reads no key"
            );
        }
        // 21-D entries in 1 KB seed pages: 3 fit without the key, 2 with it.
        assert!(NodeLayout::new(LayoutKind::Seed, 1024, 21)
            .unwrap()
            .with_aux(8)
            .is_err());
    }

    #[test]
    fn detects_corruption_and_names_the_page() {
        let l = NodeLayout::new(LayoutKind::Checked, 4096, 2).unwrap();
        let mut page = vec![0u8; 4096];
        l.encode(&node(0, 10), &mut page).unwrap();
        page[200] ^= 1;
        let err = l.verify(&page, 77).unwrap_err().to_string();
        assert!(
            err.contains("node page 77") && err.contains("checksum"),
            "{err}"
        );
        assert!(
            l.verify(&vec![0u8; 4096], 3).is_err(),
            "all-zero page is not a node"
        );
        assert!(l.verify(&page[..100], 3).is_err());
    }

    #[test]
    fn seed_layout_limits() {
        let l = NodeLayout::new(LayoutKind::Seed, 2048, 2).unwrap();
        assert_eq!(l.entry_size(), 36);
        let mut page = vec![0u8; 2048];
        let mut n = node(0, 1);
        n.entries[0].ptr = u64::from(u32::MAX) + 1;
        assert!(l
            .encode(&n, &mut page)
            .unwrap_err()
            .to_string()
            .contains("32-bit"));
        let mut bad = vec![0u8; 2048];
        bad[2..4].copy_from_slice(&1000u16.to_le_bytes());
        assert!(l.verify(&bad, 1).is_err());
        assert!(NodeLayout::new(LayoutKind::Checked, 512, 2).is_err());
        assert!(NodeLayout::new(LayoutKind::Checked, 1024, 40).is_err());
        assert!(LayoutKind::parse("fancy").is_err());
    }
}
