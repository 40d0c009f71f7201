//! The LCR-tree's log page (Lv, Li, He, Zhang 2011, section 3): every node has at most one
//! log page holding its *compacted* changes, all of them merged with the newest version of
//! each entry winning. Here a node's compacted changes are a [`NodeDelta`]: its entry count
//! now and the entries that differ from its page on the device (slot and entry). Applying
//! the delta to the node page gives the node as flushed, so a node read costs at most two
//! page reads.
//!
//! Page format (little-endian): `magic "LCRL"`, CRC-32 of bytes 8.., the node's page id
//! (`u64`), its level (`u32`), its entry count (`u32`), the number of slots (`u32`), then
//! the slots in ascending order, each a `u32` position and the entry in the node layout's
//! raw encoding. A page that fails any check is refused with an error naming it.

use crate::node::{NodeLayout, PageId};
use crate::{Error, Result};

const MAGIC: &[u8; 4] = b"LCRL";
/// Bytes before the first slot.
pub(crate) const HEADER: usize = 28;

/// Slots a log page of `page_size` bytes holds for entries of `entry_size` bytes.
pub(crate) fn capacity(page_size: usize, entry_size: usize) -> usize {
    page_size.saturating_sub(HEADER) / (4 + entry_size)
}

/// The smallest log page that holds a slot for an entry of `entry_size` bytes.
pub(crate) fn min_page_size(entry_size: usize) -> usize {
    HEADER + 4 + entry_size
}

/// A node's compacted changes against its page. See the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NodeDelta {
    /// The node's entry count.
    pub count: u32,
    /// Entries that differ from the page (or lie past its entries), by ascending slot.
    pub slots: Vec<(u32, Vec<u8>)>,
}

impl NodeDelta {
    #[cfg(test)]
    /// The delta that turns node page `base` into node page `current` (same layout).
    pub(crate) fn between(layout: &NodeLayout, base: &[u8], current: &[u8]) -> NodeDelta {
        let es = layout.entry_size();
        let (bc, cc) = (layout.entry_count(base), layout.entry_count(current));
        let mut slots = Vec::new();
        for i in 0..cc {
            let o = layout.entry_offset(i);
            let now = &current[o..o + es];
            if i >= bc || base[o..o + es] != *now {
                slots.push((i as u32, now.to_vec()));
            }
        }
        NodeDelta {
            count: cc as u32,
            slots,
        }
    }

    #[cfg(test)]
    /// Whether the delta changes nothing of a page holding `base_count` entries.
    pub(crate) fn is_empty(&self, base_count: usize) -> bool {
        self.slots.is_empty() && self.count as usize == base_count
    }

    #[cfg(test)]
    /// Applies the delta to node `id`'s page `page` (its base), at `level`.
    pub(crate) fn apply(
        &self,
        layout: &NodeLayout,
        id: PageId,
        level: u32,
        page: &mut [u8],
    ) -> Result<()> {
        let slots = self.slots.iter().map(|(s, e)| (*s, e.as_slice()));
        apply_slots(layout, id, level, self.count, slots, page)?;
        layout.seal(page);
        Ok(())
    }

    #[cfg(test)]
    /// Whether the delta fits one log page.
    pub(crate) fn fits(&self, page_size: usize, entry_size: usize) -> bool {
        self.slots.len() <= capacity(page_size, entry_size)
    }

    #[cfg(test)]
    /// Writes the delta as the log page of node `node` at `level` into `page` (it must
    /// [`fit`](Self::fits)).
    pub(crate) fn encode(&self, node: PageId, level: u32, page: &mut [u8]) {
        page.fill(0);
        page[0..4].copy_from_slice(MAGIC);
        page[8..16].copy_from_slice(&node.to_le_bytes());
        page[16..20].copy_from_slice(&level.to_le_bytes());
        page[20..24].copy_from_slice(&self.count.to_le_bytes());
        page[24..28].copy_from_slice(&(self.slots.len() as u32).to_le_bytes());
        let mut o = HEADER;
        for (s, e) in &self.slots {
            page[o..o + 4].copy_from_slice(&s.to_le_bytes());
            page[o + 4..o + 4 + e.len()].copy_from_slice(e);
            o += 4 + e.len();
        }
        let crc = crc32fast::hash(&page[8..]);
        page[4..8].copy_from_slice(&crc.to_le_bytes());
    }

    /// Checks log page `at` (read from the device) as the log page of node `node`.
    pub(crate) fn verify(page: &[u8], at: PageId, node: PageId, entry_size: usize) -> Result<()> {
        DeltaView::parse(page, at, node, entry_size, true).map(|_| ())
    }

    #[cfg(test)]
    /// Reads log page `at` as the log page of node `node`: its level and delta.
    pub(crate) fn decode(
        page: &[u8],
        at: PageId,
        node: PageId,
        entry_size: usize,
    ) -> Result<(u32, NodeDelta)> {
        let v = DeltaView::parse(page, at, node, entry_size, true)?;
        let slots = v.slots().map(|(s, e)| (s, e.to_vec())).collect();
        Ok((
            v.level,
            NodeDelta {
                count: v.count,
                slots,
            },
        ))
    }
}

/// What [`encode_between`] found: whether the delta was written as a log page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoded {
    /// The delta changes nothing of the base page ([`NodeDelta::is_empty`]).
    Empty,
    /// The delta fits one log page and was written.
    Written,
    /// The delta does not fit one log page ([`NodeDelta::fits`] is false): the node is
    /// merged (Lv et al. 2011, section 3).
    Overflows,
}

/// [`NodeDelta::between`] `base` and `current`, then [`NodeDelta::encode`] as the log page of
/// node `node` at `level` into `page`, in one pass over the entries and without
/// allocating: what a flush does for every modified node. Only when the result is
/// [`Encoded::Written`] does `page` hold the log page (byte for byte what `encode` writes);
/// otherwise its content is unspecified. The scan stops at the first slot that does not
/// fit.
pub(crate) fn encode_between(
    layout: &NodeLayout,
    base: &[u8],
    current: &[u8],
    node: PageId,
    level: u32,
    page: &mut [u8],
) -> Encoded {
    let es = layout.entry_size();
    let (bc, cc) = (layout.entry_count(base), layout.entry_count(current));
    let cap = capacity(page.len(), es);
    let mut n = 0usize;
    let mut o = HEADER;
    for i in 0..cc {
        let e = layout.entry_offset(i);
        let now = &current[e..e + es];
        if i < bc && base[e..e + es] == *now {
            continue;
        }
        if n == cap {
            return Encoded::Overflows;
        }
        page[o..o + 4].copy_from_slice(&(i as u32).to_le_bytes());
        page[o + 4..o + 4 + es].copy_from_slice(now);
        o += 4 + es;
        n += 1;
    }
    if n == 0 && cc == bc {
        return Encoded::Empty;
    }
    page[o..].fill(0);
    page[0..4].copy_from_slice(MAGIC);
    page[8..16].copy_from_slice(&node.to_le_bytes());
    page[16..20].copy_from_slice(&level.to_le_bytes());
    page[20..24].copy_from_slice(&(cc as u32).to_le_bytes());
    page[24..28].copy_from_slice(&(n as u32).to_le_bytes());
    let crc = crc32fast::hash(&page[8..]);
    page[4..8].copy_from_slice(&crc.to_le_bytes());
    Encoded::Written
}

/// A log page's delta read in place, without copying its slots: what a node read applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeltaView<'a> {
    /// The node's level (the read path takes it from the node; the tests' decode checks it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub level: u32,
    /// The node's entry count.
    pub count: u32,
    /// The slots' bytes (`n` slots of `4 + es` bytes).
    raw: &'a [u8],
    es: usize,
}

impl<'a> DeltaView<'a> {
    /// Reads log page `at` (one that passed [`NodeDelta::verify`]: its checksum is not
    /// computed again) as the log page of node `node`, checking everything else
    /// [`NodeDelta::decode`] checks.
    pub(crate) fn of_verified(
        page: &'a [u8],
        at: PageId,
        node: PageId,
        entry_size: usize,
    ) -> Result<Self> {
        Self::parse(page, at, node, entry_size, false)
    }

    fn parse(
        page: &'a [u8],
        at: PageId,
        node: PageId,
        entry_size: usize,
        checksum: bool,
    ) -> Result<Self> {
        let bad = |why: String| Error::corrupted(format!("LCR-tree log page {at}"), why);
        if page.len() < HEADER || &page[0..4] != MAGIC {
            return Err(bad("not a log page (bad magic)".into()));
        }
        let u32_at = |o: usize| u32::from_le_bytes(page[o..o + 4].try_into().expect("4 bytes"));
        if checksum && crc32fast::hash(&page[8..]) != u32_at(4) {
            return Err(bad("checksum mismatch (torn write or bit flip)".into()));
        }
        let owner = u64::from_le_bytes(page[8..16].try_into().expect("8 bytes"));
        if owner != node {
            return Err(bad(format!("holds the log of node {owner}, not {node}")));
        }
        let (level, count, n) = (u32_at(16), u32_at(20), u32_at(24) as usize);
        if n > capacity(page.len(), entry_size) {
            return Err(bad(format!("{n} slots do not fit the page")));
        }
        let step = 4 + entry_size;
        let raw = &page[HEADER..HEADER + n * step];
        let mut last: Option<u32> = None;
        for o in (0..raw.len()).step_by(step) {
            let s = u32::from_le_bytes(raw[o..o + 4].try_into().expect("4 bytes"));
            if last.is_some_and(|l| l >= s) {
                return Err(bad(format!("slot {s} out of order")));
            }
            last = Some(s);
        }
        Ok(DeltaView {
            level,
            count,
            raw,
            es: entry_size,
        })
    }

    /// The slots, by ascending position: position and entry.
    pub(crate) fn slots(&self) -> impl Iterator<Item = (u32, &'a [u8])> + Clone + 'a {
        let raw = self.raw;
        raw.chunks_exact(4 + self.es).map(|c| {
            let (s, e) = c.split_at(4);
            (u32::from_le_bytes(s.try_into().expect("4 bytes")), e)
        })
    }

    /// Applies the delta to node `id`'s page `page` (its base), at `level`, as
    /// [`NodeDelta::apply`] does, but writes only the header's fields: the caller seals
    /// the page ([`NodeLayout::seal`]) once it is complete.
    pub(crate) fn apply_unsealed(
        &self,
        layout: &NodeLayout,
        id: PageId,
        level: u32,
        page: &mut [u8],
    ) -> Result<()> {
        apply_slots(layout, id, level, self.count, self.slots(), page)
    }
}

/// [`NodeDelta::apply`] over any slot list, without sealing the page.
fn apply_slots<'e>(
    layout: &NodeLayout,
    id: PageId,
    level: u32,
    count: u32,
    slots: impl Iterator<Item = (u32, &'e [u8])> + Clone,
    page: &mut [u8],
) -> Result<()> {
    let es = layout.entry_size();
    let bad = |why: String| Error::corrupted(format!("LCR-tree log of node {id}"), why);
    let (bc, c) = (layout.entry_count(page), count as usize);
    if c > layout.fits() {
        return Err(bad(format!("{c} entries do not fit a node page")));
    }
    let past_base = slots.clone().filter(|(s, _)| *s as usize >= bc).count();
    if c > bc && past_base != c - bc {
        return Err(bad(format!(
            "{c} entries over a page of {bc} but {past_base} new entries logged"
        )));
    }
    for (s, e) in slots {
        let s = s as usize;
        if s >= c || e.len() != es {
            return Err(bad(format!("slot {s} of {c} entries")));
        }
        let o = layout.entry_offset(s);
        page[o..o + es].copy_from_slice(e);
    }
    if c < bc {
        page[layout.entry_offset(c)..layout.entry_offset(bc)].fill(0);
    }
    layout.put_header_fields(page, level, c);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Rect;
    use crate::node::{Entry, LayoutKind};

    fn layout() -> NodeLayout {
        NodeLayout::new(LayoutKind::Checked, 1024, 2).unwrap()
    }

    fn page(l: &NodeLayout, ids: &[u64]) -> Vec<u8> {
        let mut p = vec![0u8; l.page_size()];
        for (i, id) in ids.iter().enumerate() {
            let x = *id as f64;
            let e = Entry::<2> {
                mbr: Rect {
                    min: [x, x],
                    max: [x + 1.0, x + 1.0],
                },
                ptr: *id,
                aux: 0,
            };
            l.put_entry(&mut p, i, &e).unwrap();
        }
        l.put_header(&mut p, 1, ids.len());
        p
    }

    #[test]
    fn delta_turns_the_base_into_the_current_node_and_round_trips_through_its_page() {
        let l = layout();
        let base = page(&l, &[1, 2, 3, 4]);
        for now in [
            vec![1, 2, 3, 4],
            vec![1, 9, 3, 4, 5, 6],
            vec![1, 2],
            vec![4, 3],
            vec![],
        ] {
            let cur = page(&l, &now);
            let d = NodeDelta::between(&l, &base, &cur);
            assert_eq!(d.is_empty(4), now == [1, 2, 3, 4]);
            let mut lp = vec![0u8; l.page_size()];
            d.encode(7, 1, &mut lp);
            let (level, back) = NodeDelta::decode(&lp, 30, 7, l.entry_size()).unwrap();
            assert_eq!((level, &back), (1, &d));
            let mut p = base.clone();
            back.apply(&l, 7, 1, &mut p).unwrap();
            assert_eq!(p, cur, "{now:?}");
            l.verify(&p, 7).unwrap();
        }
        // Only changed slots are logged.
        let d = NodeDelta::between(&l, &base, &page(&l, &[1, 9, 3, 4, 5]));
        let slots: Vec<u32> = d.slots.iter().map(|s| s.0).collect();
        assert_eq!((d.count, slots), (5, vec![1, 4]));
    }

    proptest::proptest! {
        /// The one-pass encoder agrees with the delta computed and encoded step by step:
        /// empty, overflowing, or the same log page byte for byte (over pages whose
        /// entries differ in few or many slots, grow or shrink).
        #[test]
        fn encode_between_equals_between_then_encode(
            base in proptest::collection::vec(0u64..6, 0..40),
            edits in proptest::collection::vec((0usize..48, 0u64..6), 0..40),
            len in 0usize..48,
            small in proptest::bool::ANY,
        ) {
            let l = layout();
            let ps = if small { 256 } else { l.page_size() };
            let fits = l.fits();
            let base: Vec<u64> = base.into_iter().take(fits).collect();
            let mut now: Vec<u64> = base.clone();
            now.resize(len.min(fits), 7);
            for (i, v) in edits {
                if i < now.len() {
                    now[i] = v;
                }
            }
            let (b, c) = (page(&l, &base), page(&l, &now));
            let d = NodeDelta::between(&l, &b, &c);
            let mut got = vec![0xAAu8; ps];
            let r = encode_between(&l, &b, &c, 9, 2, &mut got);
            if d.is_empty(base.len()) {
                proptest::prop_assert_eq!(r, Encoded::Empty);
            } else if !d.fits(ps, l.entry_size()) {
                proptest::prop_assert_eq!(r, Encoded::Overflows);
            } else {
                proptest::prop_assert_eq!(r, Encoded::Written);
                let mut want = vec![0u8; ps];
                d.encode(9, 2, &mut want);
                proptest::prop_assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn capacity_bounds_the_slots_a_page_holds() {
        let l = layout();
        let cap = capacity(1024, l.entry_size());
        assert_eq!(cap, (1024 - HEADER) / (4 + l.entry_size()));
        let ids: Vec<u64> = (0..cap as u64 + 1).collect();
        let cur = page(&l, &ids);
        let empty = page(&l, &[]);
        let d = NodeDelta::between(&l, &empty, &cur);
        assert!(!d.fits(1024, l.entry_size()));
        let d = NodeDelta::between(&l, &empty, &page(&l, &ids[..cap]));
        assert!(d.fits(1024, l.entry_size()));
        let least = min_page_size(l.entry_size());
        assert_eq!(capacity(least, l.entry_size()), 1);
        assert_eq!(capacity(least - 1, l.entry_size()), 0);
    }

    #[test]
    fn damaged_or_foreign_log_pages_are_refused_naming_the_page() {
        let l = layout();
        let es = l.entry_size();
        let d = NodeDelta::between(&l, &page(&l, &[1]), &page(&l, &[1, 2]));
        let mut lp = vec![0u8; 1024];
        d.encode(7, 0, &mut lp);
        let err = |p: &[u8], node| NodeDelta::decode(p, 30, node, es).unwrap_err().to_string();
        assert!(err(&lp, 8).contains("holds the log of node 7, not 8"));
        let mut torn = lp.clone();
        torn[HEADER + 6] ^= 1;
        let e = err(&torn, 7);
        assert!(e.contains("log page 30") && e.contains("checksum"), "{e}");
        assert!(err(&vec![0u8; 1024], 7).contains("bad magic"));
        assert!(err(&lp[..10], 7).contains("bad magic"));
        // A delta that does not match its base page is refused on apply.
        let mut p = page(&l, &[]);
        let e = d.apply(&l, 7, 0, &mut p).unwrap_err().to_string();
        assert!(e.contains("LCR-tree log of node 7"), "{e}");
    }
}
