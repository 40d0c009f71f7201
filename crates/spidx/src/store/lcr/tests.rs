//! The LCR-tree's rules on small stores: a node's delta goes to its one log page, a read
//! costs at most two pages, an overflowing delta merges the node, deleted nodes free their
//! log page, the mapping table survives a reopen (header and log), damage is refused.

use super::*;
use crate::device::shared::SharedDevice;
use crate::node::Entry;
use crate::store::buffered::tests::{damage_page, modify, open_on, read_error, reads, PS};
use crate::store::buffered::tests::{entries, entry, layout, mem};
use crate::store::{NodeChange, NodeStore, StoreControl, StoreHeader, StoreReport};

fn params() -> LcrOptions {
    LcrOptions {
        log_size: Some(8 << 20),
        log_sync: LogSync::EachOp,
        ..LcrOptions::new(1 << 20)
    }
}

fn open(nodes: &SharedDevice, log: &SharedDevice, reopen: bool) -> LcrStore {
    open_with(params(), nodes, log, reopen)
}

/// Creates (or reopens) an LCR store with options `p` on `nodes` and `log`.
fn open_with(p: LcrOptions, nodes: &SharedDevice, log: &SharedDevice, reopen: bool) -> LcrStore {
    open_on(LcrPolicy::new(p), layout(), (nodes, log), reopen)
}

/// Options with a `write_buffer` and the smallest log they allow (compactions are frequent).
fn smallest_log(write_buffer: u64) -> LcrOptions {
    LcrOptions {
        log_size: Some(crate::store::buffered::sizing::min_log_size(
            write_buffer,
            1,
            PS,
        )),
        log_sync: LogSync::EachOp,
        ..LcrOptions::new(write_buffer)
    }
}

#[test]
fn deltas_go_to_one_log_page_reads_cost_two_pages_and_overflow_merges() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open(&nodes, &log, false);
    let first: Vec<Entry<2>> = (0..3).map(entry).collect();
    let id = NodeStore::<2>::create(&mut s, 0, &first).unwrap();
    NodeStore::<2>::end_operation(&mut s).unwrap();
    StoreControl::write_back(&mut s).unwrap();
    let st = s.policy().policy.lcr_stats();
    assert_eq!(
        (st.node_page_writes, st.log_page_writes),
        (1, 0),
        "a new node's page"
    );
    // One change: its delta is written to a newly allocated log page, not the node page.
    modify(
        &mut s,
        id,
        NodeChange::Set {
            pos: 1,
            entry: entry(50),
        },
    );
    StoreControl::write_back(&mut s).unwrap();
    let lp = *s.policy().policy.log_pages().get(&id).expect("a log page");
    assert_ne!(lp, id);
    let st = s.policy().policy.lcr_stats();
    assert_eq!((st.node_page_writes, st.log_page_writes), (1, 1));
    let before = reads(&s);
    assert_eq!(entries(&mut s, id), vec![entry(0), entry(50), entry(2)]);
    assert_eq!(reads(&s) - before, 2, "node page + log page");
    // More changes merge with the log page (newest wins); still one log page.
    modify(
        &mut s,
        id,
        NodeChange::Set {
            pos: 1,
            entry: entry(51),
        },
    );
    modify(&mut s, id, NodeChange::Push(entry(60)));
    StoreControl::write_back(&mut s).unwrap();
    assert_eq!(s.policy().policy.log_pages().get(&id), Some(&lp));
    let want = vec![entry(0), entry(51), entry(2), entry(60)];
    assert_eq!(entries(&mut s, id), want);
    let r = s.report();
    assert_eq!(r.policy_report::<LcrStats>().unwrap().gauges.log_pages, 1);
    assert_eq!(r.gauges.pages_in_use, 2, "the node and its log page");
    // Overflow: more changed slots than a log page holds -> the node is merged.
    let cap = log_page::capacity(PS, layout().entry_size());
    let mut want = want;
    for k in 0..cap as u64 {
        let e = entry(100 + k);
        if want.len() < layout().fits() {
            want.push(e);
            NodeStore::<2>::modify(&mut s, id, 0, &[NodeChange::Push(e)]).unwrap();
        }
    }
    for (pos, w) in want.iter_mut().enumerate().take(4) {
        *w = entry(200 + pos as u64);
        let c = NodeChange::Set { pos, entry: *w };
        NodeStore::<2>::modify(&mut s, id, 0, &[c]).unwrap();
    }
    NodeStore::<2>::end_operation(&mut s).unwrap();
    StoreControl::write_back(&mut s).unwrap();
    let st = s.policy().policy.lcr_stats();
    assert_eq!(
        (st.merges, st.log_pages_freed, st.node_page_writes),
        (1, 1, 2)
    );
    assert!(s.policy().policy.log_pages().is_empty());
    assert_eq!(s.report().gauges.pages_in_use, 1, "the log page was freed");
    let before = reads(&s);
    assert_eq!(entries(&mut s, id), want);
    assert_eq!(reads(&s) - before, 1, "a merged node is one page");
}

#[test]
fn deleting_a_node_frees_its_log_page_and_the_mapping_survives_reopening() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open(&nodes, &log, false);
    let mut ids = Vec::new();
    for n in 0..6u64 {
        ids.push(NodeStore::<2>::create(&mut s, 0, &[entry(n)]).unwrap());
        NodeStore::<2>::end_operation(&mut s).unwrap();
    }
    StoreControl::write_back(&mut s).unwrap();
    for &id in &ids {
        modify(&mut s, id, NodeChange::Push(entry(10 + id)));
    }
    StoreControl::write_back(&mut s).unwrap();
    assert_eq!(s.policy().policy.log_pages().len(), 6);
    NodeStore::<2>::delete(&mut s, ids[2], 0).unwrap();
    NodeStore::<2>::end_operation(&mut s).unwrap();
    assert_eq!(s.policy().policy.log_pages().len(), 5);
    assert_eq!(s.policy().policy.lcr_stats().log_pages_freed, 1);
    assert_eq!(s.report().gauges.pages_in_use, 5 + 5);
    // Buffered changes on top of log pages, then a crash (no checkpoint): the log rebuilds
    // the mapping and the buffer.
    modify(
        &mut s,
        ids[0],
        NodeChange::Set {
            pos: 0,
            entry: entry(90),
        },
    );
    let mapping = s.policy().policy.log_pages().clone();
    drop(s);
    let mut s = open(&nodes, &log, true);
    assert_eq!(s.policy().policy.log_pages(), &mapping);
    assert_eq!(entries(&mut s, ids[0]), vec![entry(90), entry(10)]);
    assert_eq!(entries(&mut s, ids[5]), vec![entry(5), entry(15)]);
    // A checkpoint compacts the log into a snapshot holding the mapping; reopen again.
    NodeStore::<2>::flush(&mut s).unwrap();
    drop(s);
    let mut s = open(&nodes, &log, true);
    assert_eq!(s.policy().policy.log_pages(), &mapping);
    assert_eq!(entries(&mut s, ids[0]), vec![entry(90), entry(10)]);
    assert_eq!(s.report().recovery.unwrap().buffered_nodes, 0);
}

/// The LCR-tree's part of the shared round trip of its table through `store.json`
/// (`store/lcr_rftl_tests.rs`): four nodes, one log page each.
pub(in crate::store) fn saved_table(saved: &StoreHeader, r: &StoreReport) {
    let state: super::LcrState =
        serde_json::from_value(saved.policy_state.clone().unwrap()).unwrap();
    assert_eq!(state.log_pages.len(), 4, "{saved:?}");
    assert_eq!(
        r.policy_report::<LcrStats>().unwrap().gauges.mapping_bytes,
        4 * 16
    );
}

#[test]
fn a_damaged_log_page_is_refused_naming_it() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open(&nodes, &log, false);
    let id = NodeStore::<2>::create(&mut s, 0, &[entry(1)]).unwrap();
    NodeStore::<2>::end_operation(&mut s).unwrap();
    StoreControl::write_back(&mut s).unwrap();
    modify(&mut s, id, NodeChange::Push(entry(2)));
    StoreControl::write_back(&mut s).unwrap();
    let lp = s.policy().policy.log_pages()[&id];
    damage_page(&nodes, lp);
    // The node assembled before the damage is served from the cache of assembled nodes
    // (its reads are unused reads, not verified): the damage is found at its next assembly.
    NodeStore::<2>::read(&mut s, id, 0).unwrap();
    StoreControl::drop_caches(&mut s).unwrap();
    let e = read_error(&mut s, id);
    assert!(
        e.contains(&format!("LCR-tree log page {lp}")) && e.contains("checksum"),
        "{e}"
    );
}

/// A flush-all logs the image of every modified node (its whole entry list, however small
/// its buffered change), so its images can outgrow the log region many times over: 700 full
/// nodes with one small change each fit a 64 KB write buffer, but their images (~600 KB)
/// do not fit beside the log's other records in the smallest log the options allow. The
/// flush-all is written in batches with the log compacted between them; every node reads
/// back changed, also after a reopen.
#[test]
fn a_flush_all_whose_images_outgrow_the_log_is_written_in_batches() {
    let p = smallest_log(64 << 10);
    let (nodes, log) = (mem(8 << 20), mem(p.log_size.unwrap() + (64 << 10)));
    let open = |reopen: bool| open_with(p.clone(), &nodes, &log, reopen);
    let mut s = open(false);
    let fits = layout().fits() as u64;
    let n = 700u64;
    let mut want: Vec<Vec<Entry<2>>> = Vec::new();
    for i in 0..n {
        let es: Vec<Entry<2>> = (0..fits).map(|k| entry(i * 1000 + k)).collect();
        assert_eq!(NodeStore::<2>::create(&mut s, 0, &es).unwrap(), i);
        NodeStore::<2>::end_operation(&mut s).unwrap();
        want.push(es);
    }
    StoreControl::write_back(&mut s).unwrap();
    let flushes = s.report().buffered.unwrap().flushes;
    for i in 0..n {
        let e = entry(900_000 + i);
        modify(&mut s, i, NodeChange::Set { pos: 1, entry: e });
        want[i as usize][1] = e;
    }
    assert_eq!(
        s.report().buffered.unwrap().flushes,
        flushes,
        "every change still buffered"
    );
    StoreControl::write_back(&mut s).unwrap();
    let b = s.report().buffered.unwrap();
    assert!(b.flushes > flushes + 1, "more than one batch: {b:?}");
    assert!(
        b.image_bytes > p.log_size.unwrap(),
        "the images outgrew the log: {b:?}"
    );
    for i in 0..n {
        assert_eq!(entries(&mut s, i), want[i as usize], "node {i}");
    }
    drop(s);
    let mut s = open(true);
    for i in 0..n {
        assert_eq!(entries(&mut s, i), want[i as usize], "node {i} reopened");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

    /// Random changes, deletions and write-backs over a tiny buffer and the smallest log, so
    /// that flush-alls are written in batches with compactions between them while the
    /// mapping table changes (log pages allocated, freed by merges, empty deltas and
    /// deletions): every node reads back as the model says, also after a crash (reopened
    /// from the log). Debug builds check each compaction's snapshot (the encoded table and
    /// records) and every mapping lookup (the hashed table) against the straightforward
    /// computation.
    #[test]
    fn random_changes_read_back_and_recover_through_compactions(
        ops in proptest::collection::vec((0u8..7, 0u64..10, 0u64..1000), 1..300),
    ) {
        let p = smallest_log(1 << 10);
        let (nodes, log) = (mem(4 << 20), mem(p.log_size.unwrap() + (64 << 10)));
        let open = |reopen: bool| open_with(p.clone(), &nodes, &log, reopen);
        let mut s = open(false);
        let mut model: Vec<Option<Vec<Entry<2>>>> = Vec::new();
        for i in 0..10u64 {
            let es: Vec<Entry<2>> = (0..3).map(|k| entry(i * 100 + k)).collect();
            assert_eq!(NodeStore::<2>::create(&mut s, 0, &es).unwrap(), i);
            NodeStore::<2>::end_operation(&mut s).unwrap();
            model.push(Some(es));
        }
        StoreControl::write_back(&mut s).unwrap();
        let fits = layout().fits();
        for (op, node, v) in ops {
            let Some(es) = model[node as usize].as_mut() else {
                continue;
            };
            let len = es.len();
            let change = match op {
                0 | 1 if len < fits => Some(NodeChange::Push(entry(v))),
                // Many pushes at once: deltas that overflow their log page.
                2 if len + 8 <= fits => {
                    let cs: Vec<NodeChange<2>> =
                        (0..8).map(|k| NodeChange::Push(entry(v + k))).collect();
                    NodeStore::<2>::modify(&mut s, node, 0, &cs).unwrap();
                    es.extend((0..8).map(|k| entry(v + k)));
                    None
                }
                3 if len > 0 => {
                    let pos = (v as usize) % len;
                    Some(NodeChange::Set { pos, entry: entry(v) })
                }
                4 if len > 1 => Some(NodeChange::Remove { pos: (v as usize) % len }),
                5 if v % 4 == 0 => {
                    NodeStore::<2>::delete(&mut s, node, 0).unwrap();
                    model[node as usize] = None;
                    None
                }
                6 if v % 8 == 0 => {
                    StoreControl::write_back(&mut s).unwrap();
                    None
                }
                _ => None,
            };
            if let Some(c) = change {
                NodeStore::<2>::modify(&mut s, node, 0, std::slice::from_ref(&c)).unwrap();
                let es = model[node as usize].as_mut().expect("alive");
                match c {
                    NodeChange::Push(e) => es.push(e),
                    NodeChange::Set { pos, entry } => es[pos] = entry,
                    NodeChange::Remove { pos } => {
                        es.remove(pos);
                    }
                }
            }
            NodeStore::<2>::end_operation(&mut s).unwrap();
        }
        for (i, want) in model.iter().enumerate() {
            if let Some(want) = want {
                proptest::prop_assert_eq!(&entries(&mut s, i as u64), want, "node {}", i);
            }
        }
        drop(s);
        let mut s = open(true);
        for (i, want) in model.iter().enumerate() {
            if let Some(want) = want {
                proptest::prop_assert_eq!(&entries(&mut s, i as u64), want, "node {} reopened", i);
            }
        }
    }
}

/// The LCR-tree's own `LogPage` records keep the bytes of the record kind the shared codec
/// had for them (kind 13, page ids, a flag), so logs written before stay readable.
#[test]
fn log_page_records_keep_their_bytes() {
    use crate::store::buffered::{Record, RecordFormat};
    let f = RecordFormat::Fixed;
    let mut want = vec![13u8];
    want.extend_from_slice(&9u64.to_le_bytes());
    want.push(1);
    want.extend_from_slice(&(1u64 << 33).to_le_bytes());
    assert_eq!(
        super::log_page_record(9, Some(1 << 33), f)
            .encode(f)
            .unwrap(),
        want
    );
    let none = super::log_page_record(9, None, f).encode(f).unwrap();
    assert_eq!(none, [&[13u8][..], &9u64.to_le_bytes(), &[0]].concat());
    assert_eq!(
        Record::decode(&want, f, 40).unwrap(),
        super::log_page_record(9, Some(1 << 33), f)
    );
}
