//! eFIND's write buffer (Carniel et al., "A generic and efficient framework for flash-aware
//! spatial indexing", Information Systems 2019, section 4.1; the PhD summary in
//! `shared/seeds/carniel-2018-vldb-phd-efind.txt`, "Buffer Manager"): a hash of buffered
//! nodes, each with a status (new / modified), a modification count, its height, the
//! logical time of its last change and the changed entries, kept ordered by key, a newer
//! version of an entry replacing the older one.
//!
//! The trees express changes by position ([`Change`](crate::store::Change):
//! set / push / remove at a position of the node as they read it). eFIND keys entry versions
//! by the entry's pointer; in spidx a pointer is not unique inside a leaf (an object id may
//! be indexed twice), so the key of an entry is its *identity*: `slot` for the entry stored at
//! that slot of the page on the device, `NEW_KEY + n` for the `n`-th entry appended since the
//! node entered the buffer. Keys are ordered (slots first, appended entries after) and the
//! merged node lists the surviving stored entries in slot order (a `Set` replaces an entry in
//! place) followed by the appended ones in order. That is exactly the order the in-place
//! (direct) store produces: its `Remove` keeps the relative order and its `Push` appends, so a
//! node read through eFIND equals, entry for entry, what the direct store would hold.
//!
//! Entries are kept as their encoded bytes (the node layout's entry format), so the buffer is
//! independent of the number of dimensions and merging a node is a sequence of copies. The
//! nodes live in the skeleton's [`NodeBuffer`](crate::store::buffered::NodeBuffer) (by page
//! id), which counts their bytes ([`BufferedNode`]).

use crate::node::{NodeLayout, PageId};
pub(crate) use crate::store::buffered::record::NodeState;
use crate::store::buffered::{BufferedNode, NodeStatus, RawChange};
use crate::store::Change;
use crate::{Error, Result};

/// Key of the first entry appended after a node entered the buffer (slots are below).
pub(crate) const NEW_KEY: u64 = 1 << 32;

/// Bytes a buffered node costs besides its entry versions (id, status, count, height,
/// time, stored length, map header), as counted against the write-buffer capacity.
pub(crate) const NODE_BYTES: usize = 48;

// The tag of a `State` record in the shared record codec (`buffered::Record`);
// `BufNode::encode_state` writes it.
use crate::store::buffered::record::STATE as STATE_TAG;

/// Bytes an entry version costs besides the entry itself (its key and map bookkeeping).
pub(crate) const VERSION_BYTES: usize = 16;

/// A node in the write buffer.
#[derive(Debug, Clone)]
pub(crate) struct BufNode {
    /// New or modified.
    pub status: NodeStatus,
    /// Modifications since the node entered the buffer (creation counts one, each entry
    /// change one), the "M" of the flushing policies.
    pub mods: u64,
    /// The node's level (0 = leaf): its height in the eFIND papers' sense.
    pub level: u32,
    /// Logical time of the last change.
    pub stamp: u64,
    /// Entries on the stored page (0 for a new node).
    pub base_len: u32,
    /// Entry versions by key: `Some(bytes)` the newest version, `None` a removed stored entry.
    versions: Versions,
    next_new: u64,
    removed_base: u32,
    live_bytes: usize,
    appended: usize,
}

/// A buffered node's scores for the MTHA and MTHAO flushing policies: the area of the union
/// of its live versions' boxes and (MTHAO) the sum of their pairwise overlaps; `None`
/// when it has no live version (or the overlap was not asked for).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scores {
    /// Area of the union of the boxes.
    pub area: Option<f64>,
    /// Sum of the pairwise overlaps of the boxes.
    pub overlap: Option<f64>,
}

/// A buffered node's entry versions, ordered by key (stored slots, then appended entries):
/// a sorted vector, since a node holds few versions and they are read in order far more
/// often than changed.
#[derive(Debug, Clone, Default)]
struct Versions(Vec<(u64, Option<Box<[u8]>>)>);

impl Versions {
    fn len(&self) -> usize {
        self.0.len()
    }

    /// Sets the version of `key`; returns the one it replaced.
    fn insert(&mut self, key: u64, value: Option<Box<[u8]>>) -> Option<Option<Box<[u8]>>> {
        // Appended keys grow: the common case is a push at the end.
        if self.0.last().is_none_or(|(k, _)| *k < key) {
            self.0.push((key, value));
            return None;
        }
        match self.0.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes the version of `key`; returns it.
    fn remove(&mut self, key: u64) -> Option<Option<Box<[u8]>>> {
        let i = self.0.binary_search_by_key(&key, |(k, _)| *k).ok()?;
        Some(self.0.remove(i).1)
    }

    fn clear(&mut self) {
        self.0.clear();
    }

    fn split(&self) -> usize {
        self.0.partition_point(|(k, _)| *k < NEW_KEY)
    }

    /// The versions of stored slots, by slot.
    fn stored(&self) -> &[(u64, Option<Box<[u8]>>)] {
        &self.0[..self.split()]
    }

    /// The versions of appended entries, in the order they were appended.
    fn appended(&self) -> &[(u64, Option<Box<[u8]>>)] {
        &self.0[self.split()..]
    }
}

impl BufferedNode for BufNode {
    fn status(&self) -> NodeStatus {
        self.status
    }

    /// Bytes the node costs in the write buffer: [`NODE_BYTES`], [`VERSION_BYTES`] per
    /// entry version and the live versions' entries.
    fn bytes(&self) -> usize {
        NODE_BYTES + self.versions.len() * VERSION_BYTES + self.live_bytes
    }
}

impl BufNode {
    /// A node created with `entries` (encoded).
    pub(crate) fn new_node(level: u32, stamp: u64, entries: Vec<Box<[u8]>>) -> BufNode {
        let mut n = BufNode::modified(level, stamp, 0);
        n.status = NodeStatus::New;
        n.mods = 1;
        for e in entries {
            n.push(e);
        }
        n
    }

    /// A stored node of `base_len` entries entering the buffer with no change yet.
    pub(crate) fn modified(level: u32, stamp: u64, base_len: u32) -> BufNode {
        BufNode {
            status: NodeStatus::Modified,
            mods: 0,
            level,
            stamp,
            base_len,
            versions: Versions::default(),
            next_new: 0,
            removed_base: 0,
            live_bytes: 0,
            appended: 0,
        }
    }

    /// Number of entries of the merged node.
    pub(crate) fn len(&self) -> usize {
        self.base_len as usize - self.removed_base as usize + self.appended
    }

    /// The key of the entry at position `pos` of the merged node.
    fn key_at(&self, pos: usize) -> Option<u64> {
        let survivors = self.base_len as usize - self.removed_base as usize;
        if pos >= survivors {
            return self
                .versions
                .appended()
                .get(pos - survivors)
                .map(|(k, _)| *k);
        }
        // Walk the stored slots, skipping removed ones.
        let mut removed = self
            .versions
            .stored()
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| *k)
            .peekable();
        let mut left = pos;
        for slot in 0..u64::from(self.base_len) {
            if removed.peek() == Some(&slot) {
                removed.next();
                continue;
            }
            if left == 0 {
                return Some(slot);
            }
            left -= 1;
        }
        None
    }

    fn put(&mut self, key: u64, value: Option<Box<[u8]>>) {
        let new_bytes = value.as_ref().map_or(0, |v| v.len());
        let new_removed = value.is_none() && key < NEW_KEY;
        match self.versions.insert(key, value) {
            Some(Some(old)) => self.live_bytes -= old.len(),
            Some(None) => self.removed_base -= 1,
            None => self.appended += usize::from(key >= NEW_KEY),
        }
        self.live_bytes += new_bytes;
        self.removed_base += u32::from(new_removed);
    }

    fn push(&mut self, entry: Box<[u8]>) {
        let key = NEW_KEY + self.next_new;
        self.next_new += 1;
        self.put(key, Some(entry));
    }

    /// Checks that `changes`, applied in order, name existing positions and never push past
    /// `fits` entries: after it passes, [`apply`](Self::apply) cannot fail on them, so a
    /// modification needs no copy of the node to roll back.
    pub(crate) fn validate(&self, id: PageId, changes: &[RawChange], fits: usize) -> Result<()> {
        let mut len = self.len();
        for change in changes {
            match *change {
                Change::Set { pos, .. } | Change::Remove { pos } if pos >= len => {
                    return Err(Error::invalid(
                        "node change",
                        format!("node {id}: entry {pos} does not exist ({len} entries)"),
                    ));
                }
                Change::Set { .. } => {}
                Change::Remove { .. } => len -= 1,
                Change::Push(_) if len >= fits => {
                    return Err(Error::invalid(
                        "node change",
                        format!("node {id} is full ({len} entries)"),
                    ));
                }
                Change::Push(_) => len += 1,
            }
        }
        Ok(())
    }

    /// Applies one positional change (a newer version replaces the older one).
    pub(crate) fn apply(&mut self, id: PageId, change: &RawChange) -> Result<()> {
        let missing = |pos: usize, len: usize| {
            Error::invalid(
                "node change",
                format!("node {id}: entry {pos} does not exist ({len} entries)"),
            )
        };
        match *change {
            Change::Set { pos, ref entry } => {
                let key = self.key_at(pos).ok_or_else(|| missing(pos, self.len()))?;
                self.put(key, Some(entry.clone()));
            }
            Change::Push(ref entry) => self.push(entry.clone()),
            Change::Remove { pos } => {
                let key = self.key_at(pos).ok_or_else(|| missing(pos, self.len()))?;
                if key >= NEW_KEY {
                    if let Some(old) = self.versions.remove(key).flatten() {
                        self.live_bytes -= old.len();
                    }
                    self.appended -= 1;
                } else {
                    self.put(key, None);
                }
            }
        }
        self.mods += 1;
        Ok(())
    }

    /// Replaces all entries (a rewrite after a split or reinsertion): the stored slots get
    /// the first entries (or are removed), the rest are appended.
    pub(crate) fn rewrite(&mut self, entries: Vec<Box<[u8]>>) {
        self.versions.clear();
        self.live_bytes = 0;
        self.removed_base = 0;
        self.appended = 0;
        self.next_new = 0;
        self.mods += entries.len().max(1) as u64;
        let mut it = entries.into_iter();
        for slot in 0..u64::from(self.base_len) {
            let v = it.next();
            self.put(slot, v);
        }
        for e in it {
            self.push(e);
        }
    }

    /// Writes the merged node into `out` (one page): the stored page `base` (for a modified
    /// node) with the buffered versions applied, then the header. A node whose entries do
    /// not fit, or whose stored page does not hold the `base_len` entries its versions were
    /// made over (a damaged or stale log replayed over a newer page), is an error before
    /// anything is written.
    pub(crate) fn merge_into(
        &self,
        layout: &NodeLayout,
        base: Option<&[u8]>,
        out: &mut [u8],
    ) -> Result<()> {
        let es = layout.entry_size();
        let len = self.len();
        if len > layout.fits() || out.len() < layout.page_size() {
            return Err(Error::invalid(
                "node change",
                format!("{len} entries do not fit in a page ({} fit)", layout.fits()),
            ));
        }
        let base = if self.status == NodeStatus::Modified && self.base_len > 0 {
            let base = base.ok_or_else(|| {
                Error::invalid("eFIND merge", "a modified node needs its stored page")
            })?;
            let stored = if base.len() >= layout.page_size() {
                layout.entry_count(base)
            } else {
                0
            };
            if stored != self.base_len as usize {
                return Err(Error::corrupted(
                    "eFIND write buffer",
                    format!(
                        "a buffered node's changes were made over a stored page of {} entries, \
                         but its page holds {stored}: the log does not match the node pages \
                         (damaged, rolled back or from another index)",
                        self.base_len
                    ),
                ));
            }
            Some(base)
        } else {
            None
        };
        out.fill(0);
        let mut count = 0usize;
        let mut put = |bytes: &[u8], count: &mut usize| {
            let o = layout.entry_offset(*count);
            out[o..o + es].copy_from_slice(bytes);
            *count += 1;
        };
        if let Some(base) = base {
            let mut versions = self.versions.stored().iter().peekable();
            for slot in 0..self.base_len as usize {
                let o = layout.entry_offset(slot);
                match versions.peek() {
                    Some((k, v)) if *k == slot as u64 => {
                        if let Some(b) = v {
                            put(b, &mut count);
                        }
                        versions.next();
                    }
                    _ => put(&base[o..o + es], &mut count),
                }
            }
        }
        for b in self
            .versions
            .appended()
            .iter()
            .filter_map(|(_, v)| v.as_deref())
        {
            put(b, &mut count);
        }
        debug_assert_eq!(count, len);
        layout.put_header(out, self.level, count);
        Ok(())
    }

    /// The node's state for a compacted log.
    pub(crate) fn state(&self) -> NodeState {
        NodeState {
            new: self.status == NodeStatus::New,
            mods: self.mods,
            level: self.level,
            stamp: self.stamp,
            base_len: self.base_len,
            next_new: self.next_new,
            versions: self
                .versions
                .0
                .iter()
                .map(|(k, v)| (*k, v.as_deref().map(<[u8]>::to_vec)))
                .collect(),
        }
    }

    /// Appends the node's compacted-log record (`Record::State { id, state: self.state() }`
    /// in the compact record format, eFIND's) to `out`, encoded straight from the versions
    /// with no [`NodeState`] copy of them. Debug builds check it against the shared codec.
    pub(crate) fn encode_state(&self, id: PageId, out: &mut Vec<u8>) {
        #[cfg(debug_assertions)]
        let from = out.len();
        let varint = |out: &mut Vec<u8>, mut v: u64| {
            while v >= 0x80 {
                out.push((v as u8) | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        };
        out.reserve(32 + self.versions.len() * 12 + self.live_bytes);
        out.push(STATE_TAG);
        varint(out, id);
        out.push(u8::from(self.status == NodeStatus::New));
        varint(out, self.mods);
        varint(out, u64::from(self.level));
        varint(out, self.stamp);
        varint(out, u64::from(self.base_len));
        varint(out, self.next_new);
        varint(out, self.versions.len() as u64);
        for (key, v) in &self.versions.0 {
            let key = *key;
            varint(out, key);
            match v {
                Some(e) => {
                    out.push(1);
                    varint(out, e.len() as u64);
                    out.extend_from_slice(e);
                }
                None => out.push(0),
            }
        }
        #[cfg(debug_assertions)]
        {
            let mut want = Vec::new();
            crate::store::buffered::Record::State {
                id,
                state: self.state(),
            }
            .encode_into(crate::store::buffered::RecordFormat::Compact, &mut want)
            .expect("a state encodes");
            assert_eq!(out[from..], want[..], "node {id}: state encoding");
        }
    }

    /// The node a [`NodeState`] describes (read from a log), validated first: versions in
    /// increasing key order, stored slots below `base_len`, appended keys below
    /// `next_new`, only stored entries removed, every entry `entry_size` bytes and at most
    /// `fits` entries in the merged node. A state that breaks any of them is damage.
    pub(crate) fn from_state(
        id: PageId,
        s: NodeState,
        entry_size: usize,
        fits: usize,
    ) -> Result<BufNode> {
        let bad = |why: String| Error::corrupted("eFIND log", format!("state of node {id}: {why}"));
        if s.next_new > u64::from(u32::MAX) {
            return Err(bad(format!("{} appended entries", s.next_new)));
        }
        if s.new && s.base_len > 0 {
            return Err(bad(format!(
                "a new node over {} stored entries",
                s.base_len
            )));
        }
        let mut prev: Option<u64> = None;
        for (k, v) in &s.versions {
            if prev.is_some_and(|p| p >= *k) {
                return Err(bad(format!("version keys out of order at key {k}")));
            }
            prev = Some(*k);
            let stored = *k < u64::from(s.base_len);
            let appended = (NEW_KEY..NEW_KEY + s.next_new).contains(k);
            if !stored && !appended {
                return Err(bad(format!(
                    "key {k} is neither one of its {} stored entries nor one of its {} \
                     appended ones",
                    s.base_len, s.next_new
                )));
            }
            match v {
                None if appended => return Err(bad(format!("appended entry {k} removed"))),
                Some(e) if e.len() != entry_size => {
                    return Err(bad(format!(
                        "a {}-byte entry in a layout of {entry_size}-byte entries",
                        e.len()
                    )))
                }
                _ => {}
            }
        }
        let mut n = BufNode::modified(s.level, s.stamp, s.base_len);
        if s.new {
            n.status = NodeStatus::New;
        }
        n.mods = s.mods;
        n.next_new = s.next_new;
        for (k, v) in s.versions {
            n.put(k, v.map(Vec::into_boxed_slice));
        }
        if n.len() > fits {
            return Err(bad(format!("{} entries ({fits} fit in a page)", n.len())));
        }
        Ok(n)
    }

    /// The encoded entries of the node's live versions (for the area/overlap scores).
    pub(crate) fn live_versions(&self) -> impl Iterator<Item = &[u8]> {
        self.versions.0.iter().filter_map(|(_, v)| v.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Rect;
    use crate::node::{Entry, LayoutKind, Node};
    use crate::store::{apply_changes, NodeChange};

    fn enc(layout: &NodeLayout, e: &Entry<2>) -> Box<[u8]> {
        let mut page = vec![0u8; layout.page_size()];
        layout.put_entry(&mut page, 0, e).unwrap();
        let o = layout.entry_offset(0);
        page[o..o + layout.entry_size()].into()
    }

    fn entry(i: u64) -> Entry<2> {
        let x = i as f64;
        Entry {
            mbr: Rect::new([x, x], [x + 1.0, x + 2.0]).unwrap(),
            ptr: i % 7,
            aux: 0,
        }
    }

    /// Random positional changes applied through the buffer equal the direct application.
    #[test]
    fn merged_node_equals_in_place_application() {
        let layout = NodeLayout::new(LayoutKind::Checked, 1024, 2).unwrap();
        let mut seed = 12345u64;
        let mut rnd = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n.max(1)
        };
        for round in 0..200 {
            let base_n = rnd(10);
            let base: Vec<Entry<2>> = (0..base_n as u64).map(entry).collect();
            let mut page = vec![0u8; 1024];
            layout
                .encode(
                    &Node {
                        level: 1,
                        entries: base.clone(),
                    },
                    &mut page,
                )
                .unwrap();
            let mut want = base.clone();
            let mut node = if round % 3 == 0 {
                want.clear();
                BufNode::new_node(1, 0, Vec::new())
            } else {
                BufNode::modified(1, 0, base_n as u32)
            };
            for step in 0..30 {
                let c = match rnd(4) {
                    0 | 1 => NodeChange::Push(entry(100 + step)),
                    2 if !want.is_empty() => NodeChange::Set {
                        pos: rnd(want.len()),
                        entry: entry(200 + step),
                    },
                    _ if !want.is_empty() => NodeChange::Remove {
                        pos: rnd(want.len()),
                    },
                    _ => NodeChange::Push(entry(300 + step)),
                };
                if want.len() >= layout.fits() && matches!(c, NodeChange::Push(_)) {
                    continue;
                }
                apply_changes(&mut want, &[c]).unwrap();
                let ec = c.try_map(|e| Ok::<_, ()>(enc(&layout, e))).unwrap();
                node.apply(7, &ec).unwrap();
                if rnd(10) == 0 {
                    want = (0..rnd(8) as u64).map(|i| entry(500 + i)).collect();
                    node.rewrite(want.iter().map(|e| enc(&layout, e)).collect());
                }
                assert_eq!(node.len(), want.len());
                let mut out = vec![0u8; 1024];
                node.merge_into(&layout, Some(&page), &mut out).unwrap();
                layout.verify(&out, 7).unwrap();
                assert_eq!(
                    layout.decode::<2>(&out).entries,
                    want,
                    "round {round} step {step}"
                );
            }
        }
    }

    #[test]
    fn bad_positions_are_errors() {
        let mut n = BufNode::modified(0, 0, 2);
        assert!(n.apply(3, &Change::Remove { pos: 2 }).is_err());
        n.apply(3, &Change::Remove { pos: 0 }).unwrap();
        assert!(n.apply(3, &Change::Remove { pos: 1 }).is_err());
        assert_eq!(n.len(), 1);
    }
}
