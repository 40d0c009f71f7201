//! Log compaction without re-encoding what did not change (CPU only: the compacted log is
//! byte for byte the one [`Core::compact_log`] writes, and every count is the same).
//!
//! The LCR-tree and RFTL compact their log into a snapshot: allocation and metadata, then
//! their mapping table (the LCR-tree's node → log page table, Lv et al. 2011; RFTL's node
//! translation table, Wu et al. 2003), then the records that rebuild the buffered nodes. A
//! flush-all compacts several times while it writes its batches, and each time the table
//! has some ten thousand entries of which a handful changed. So:
//! * [`EncodedTable`] keeps every table entry's record encoded, by node; the store updates
//!   it wherever it changes its table (and rebuilds it from the table after recovery);
//! * [`EncodedRecords`] holds the buffered nodes' records encoded once per flush-all: the
//!   nodes a flush-all has not yet written are always the last ones in page order, so every
//!   later compaction of the same flush-all writes a suffix of them;
//! * [`compact`] writes the snapshot as [`Core::compact_log`] does, from those payloads.

use std::collections::BTreeMap;

use crate::node::PageId;
use crate::store::buffered::{Core, Encoded, NodeRecord, Record, RecordFormat};
use crate::{Error, Result};

/// Every entry of a store's mapping table as its encoded log record, by node (page order,
/// the order of the table itself). See the module documentation.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct EncodedTable {
    records: BTreeMap<PageId, Vec<u8>>,
}

impl EncodedTable {
    /// Sets node `id`'s entry to the encoded record `payload` (`None`: the node left the
    /// table).
    pub(crate) fn set(&mut self, id: PageId, payload: Option<Vec<u8>>) {
        match payload {
            Some(p) => {
                self.records.insert(id, p);
            }
            None => {
                self.records.remove(&id);
            }
        }
    }

    /// The table of the records `entries` (node and record, any order) encoded in
    /// `format`.
    pub(crate) fn of(
        entries: impl IntoIterator<Item = (PageId, Record)>,
        format: RecordFormat,
    ) -> Result<Self> {
        let mut t = EncodedTable::default();
        for (id, r) in entries {
            t.records.insert(id, r.encode(format)?);
        }
        Ok(t)
    }

    #[cfg(test)]
    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// The encoded records in page order.
    pub(crate) fn payloads(&self) -> impl Iterator<Item = &[u8]> {
        self.records.values().map(Vec::as_slice)
    }
}

/// Encoded log records of buffered nodes, concatenated, each with its node, in page order.
/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct EncodedRecords {
    bytes: Vec<u8>,
    /// Node and end offset of each record in `bytes`.
    ends: Vec<(PageId, usize)>,
}

impl EncodedRecords {
    /// Forgets every record (keeping the memory).
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Replaces the records by `records` (records of buffered nodes, in page order, as
    /// [`WriteBuffer::snapshot`](crate::store::fast::buffer::WriteBuffer::snapshot) lends
    /// them) encoded in `format`.
    pub(crate) fn set<'a>(
        &mut self,
        records: impl IntoIterator<Item = NodeRecord<'a>>,
        format: RecordFormat,
    ) -> Result<()> {
        self.clear();
        for r in records {
            let id = r.node();
            if self.ends.last().is_some_and(|(last, _)| *last > id) {
                return Err(Error::invalid(
                    "log snapshot",
                    format!("node {id}'s record follows a later node's"),
                ));
            }
            r.encode_into(format, &mut self.bytes)?;
            self.ends.push((id, self.bytes.len()));
        }
        Ok(())
    }

    /// The records of nodes `first` and later (`None`: none), in order.
    pub(crate) fn payloads_from(&self, first: Option<PageId>) -> impl Iterator<Item = &[u8]> {
        let skip = match first {
            Some(f) => self.ends.partition_point(|(id, _)| *id < f),
            None => self.ends.len(),
        };
        let start = match skip {
            0 => 0,
            k => self.ends[k - 1].1,
        };
        let mut at = start;
        self.ends[skip..].iter().map(move |&(_, end)| {
            let p = &self.bytes[at..end];
            at = end;
            p
        })
    }
}

/// Replaces `core`'s log by a snapshot ([`Core::compact_log`], without a clock): allocation
/// and metadata, then the payloads of `table`, then `nodes`, all already encoded.
pub(crate) fn compact<'a>(
    core: &mut Core,
    table: impl Iterator<Item = &'a [u8]>,
    nodes: impl Iterator<Item = &'a [u8]>,
) -> Result<()> {
    core.compact_log(None, table.chain(nodes).map(Encoded))
}

/// Panics unless `payloads` are `records` encoded in `format`, in order. Debug builds
/// check every compaction with it against the records encoded from scratch (the
/// straightforward computation the encoded table and records replace).
pub(crate) fn assert_encodes<'a>(
    records: &[Record],
    format: RecordFormat,
    payloads: impl Iterator<Item = &'a [u8]>,
) {
    let got: Vec<&[u8]> = payloads.collect();
    assert_eq!(got.len(), records.len(), "records in the compacted log");
    for (r, g) in records.iter().zip(got) {
        let want = r.encode(format).expect("an encodable record");
        assert!(
            want == g,
            "the compacted log holds another encoding of {r:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: PageId, n: u64) -> Record {
        Record::Deleted {
            id,
            level: n as u32,
        }
    }

    #[test]
    fn a_suffix_of_the_records_is_those_of_the_later_nodes() {
        let f = RecordFormat::Fixed;
        let recs = vec![rec(2, 0), rec(2, 1), rec(5, 2), rec(9, 3)];
        let mut e = EncodedRecords::default();
        fn lend(rs: &[Record]) -> Vec<NodeRecord<'_>> {
            rs.iter().map(|r| r.as_node_record().unwrap()).collect()
        }
        e.set(lend(&recs), f).unwrap();
        let enc =
            |rs: &[Record]| -> Vec<Vec<u8>> { rs.iter().map(|r| r.encode(f).unwrap()).collect() };
        let got = |first| -> Vec<Vec<u8>> { e.payloads_from(first).map(<[u8]>::to_vec).collect() };
        assert_eq!(got(Some(0)), enc(&recs));
        assert_eq!(got(Some(2)), enc(&recs));
        assert_eq!(got(Some(3)), enc(&recs[2..]));
        assert_eq!(got(Some(9)), enc(&recs[3..]));
        assert!(got(Some(10)).is_empty());
        assert!(got(None).is_empty());
        // Out of page order: refused.
        assert!(e.set(lend(&[rec(5, 0), rec(2, 0)]), f).is_err());
    }

    #[test]
    fn the_table_holds_the_latest_record_of_each_node_in_page_order() {
        let f = RecordFormat::Fixed;
        let lp = |id, page: Option<u64>| Record::Own {
            kind: crate::store::buffered::OWN_FIRST,
            body: [id, page.unwrap_or(0)].map(u64::to_le_bytes).concat(),
        };
        let mut t = EncodedTable::of([(7, lp(7, Some(70))), (3, lp(3, Some(30)))], f).unwrap();
        t.set(7, Some(lp(7, Some(71)).encode(f).unwrap()));
        t.set(4, Some(lp(4, Some(40)).encode(f).unwrap()));
        t.set(3, None);
        let want: Vec<Vec<u8>> = [lp(4, Some(40)), lp(7, Some(71))]
            .iter()
            .map(|r| r.encode(f).unwrap())
            .collect();
        let got: Vec<Vec<u8>> = t.payloads().map(<[u8]>::to_vec).collect();
        assert_eq!(got, want);
        assert_eq!(t.len(), 2);
    }
}
