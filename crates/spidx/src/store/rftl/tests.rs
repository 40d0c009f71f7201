//! RFTL's rules on small stores: units of several nodes share pages, a node is assembled
//! from its units across pages (one read per page), compaction at the threshold frees the
//! pages whose units all died, the translation table survives a reopen (log and header),
//! damage is refused with an error naming the page.

use super::*;
use crate::device::shared::SharedDevice;
use crate::device::Device;
use crate::node::{Entry, LayoutKind, NodeLayout};
use crate::store::buffered::tests::{damage_page, modify, open_on, read_error, reads, PS};
use crate::store::buffered::tests::{entries, entry, layout, mem};
use crate::store::{NodeChange, NodeStore, StoreConfig, StoreControl, StoreHeader, StoreReport};

fn params(max_pages: u32) -> RftlOptions {
    RftlOptions {
        max_pages,
        log_size: Some(8 << 20),
        log_sync: LogSync::EachOp,
        ..RftlOptions::new(1 << 20)
    }
}

fn open_with(
    nodes: &SharedDevice,
    log: &SharedDevice,
    l: NodeLayout,
    max_pages: u32,
    reopen: bool,
) -> RftlStore {
    open_on(RftlPolicy::new(params(max_pages)), l, (nodes, log), reopen)
}

fn open(nodes: &SharedDevice, log: &SharedDevice, max_pages: u32, reopen: bool) -> RftlStore {
    open_with(nodes, log, layout(), max_pages, reopen)
}

fn create(s: &mut RftlStore, es: &[Entry<2>]) -> PageId {
    let id = NodeStore::<2>::create(s, 0, es).unwrap();
    NodeStore::<2>::end_operation(s).unwrap();
    id
}

fn table(s: &RftlStore, id: PageId) -> Vec<(PageId, u32)> {
    s.policy()
        .policy
        .live_units()
        .table()
        .unit_pages
        .get(&id)
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_node_is_assembled_from_its_units_on_every_page_of_its_list() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open(&nodes, &log, 8, false);
    // Two nodes created in one flush share one unit page.
    let a = create(&mut s, &[entry(1), entry(2), entry(3)]);
    let b = create(&mut s, &[entry(7)]);
    StoreControl::write_back(&mut s).unwrap();
    let (ta, tb) = (table(&s, a), table(&s, b));
    assert_eq!(ta.len(), 1);
    assert_eq!(ta[0].0, tb[0].0, "one page holds both nodes' units");
    assert_eq!(s.policy().policy.live_units().on(ta[0].0), 2);
    // Two more flushes of changes to `a`: its units span three pages.
    modify(&mut s, a, NodeChange::Push(entry(4)));
    modify(
        &mut s,
        a,
        NodeChange::Set {
            pos: 0,
            entry: entry(10),
        },
    );
    StoreControl::write_back(&mut s).unwrap();
    modify(&mut s, a, NodeChange::Remove { pos: 1 });
    modify(
        &mut s,
        a,
        NodeChange::Set {
            pos: 0,
            entry: entry(11),
        },
    );
    StoreControl::write_back(&mut s).unwrap();
    let ta = table(&s, a);
    assert_eq!(ta.iter().map(|p| p.1).collect::<Vec<_>>(), vec![1, 2, 2]);
    let st = s.policy().policy.rftl_stats();
    assert_eq!((st.unit_pages_written, st.units_written), (3, 6));
    // One read per page, in order; the newest unit wins.
    let (before, asm) = (reads(&s), st.unit_page_reads);
    let want = vec![entry(11), entry(3), entry(4)];
    assert_eq!(entries(&mut s, a), want);
    assert_eq!(reads(&s) - before, 3);
    assert_eq!(s.policy().policy.rftl_stats().unit_page_reads - asm, 3);
    assert_eq!(entries(&mut s, b), vec![entry(7)]);
    // Buffered changes apply on top of the assembled node.
    NodeStore::<2>::modify(&mut s, a, 0, &[NodeChange::Push(entry(5))]).unwrap();
    let mut more = want.clone();
    more.push(entry(5));
    assert_eq!(entries(&mut s, a), more);
    let r = s.report();
    let g = r.policy_report::<RftlStats>().unwrap().gauges;
    assert_eq!((g.unit_pages, g.live_units, g.mapped_nodes), (3, 6, 2));
    assert_eq!(g.max_node_pages, 3);
    assert_eq!(g.mapping_bytes, 2 * 8 + 4 * 12);
    assert_eq!(
        r.gauges.pages_in_use,
        2 + 3,
        "two node ids, three unit pages"
    );
}

#[test]
fn compaction_at_the_threshold_frees_the_pages_whose_units_all_died() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open(&nodes, &log, 3, false);
    let a = create(&mut s, &[entry(1)]);
    let b = create(&mut s, &[entry(2)]);
    StoreControl::write_back(&mut s).unwrap();
    let shared = table(&s, b)[0].0;
    let mut want = vec![entry(1)];
    for k in 0..2 {
        modify(&mut s, a, NodeChange::Push(entry(20 + k)));
        want.push(entry(20 + k));
        StoreControl::write_back(&mut s).unwrap();
    }
    assert_eq!(table(&s, a).len(), 3, "at the threshold, not beyond");
    assert_eq!(s.policy().policy.rftl_stats().compactions, 0);
    let old: Vec<PageId> = table(&s, a).iter().map(|p| p.0).collect();
    // One more flush would put `a` on a fourth page: it is compacted instead.
    modify(
        &mut s,
        a,
        NodeChange::Set {
            pos: 0,
            entry: entry(9),
        },
    );
    want[0] = entry(9);
    StoreControl::write_back(&mut s).unwrap();
    let st = s.policy().policy.rftl_stats();
    assert_eq!(st.compactions, 1);
    let ta = table(&s, a);
    assert_eq!(ta.len(), 1, "one fresh unit set");
    assert!(!old.contains(&ta[0].0));
    // Its two pages of its own are freed; the page shared with `b` still holds b's unit.
    assert_eq!(st.unit_pages_freed, 2);
    assert_eq!(s.policy().policy.live_units().on(shared), 1);
    assert!(s.core().header.free.contains(&old[1]) && s.core().header.free.contains(&old[2]));
    assert_eq!(s.report().gauges.pages_in_use, 2 + 2);
    let before = reads(&s);
    assert_eq!(entries(&mut s, a), want);
    assert_eq!(reads(&s) - before, 1, "a compacted node is one page");
    // Deleting `b` kills the last live unit of the shared page: freed.
    NodeStore::<2>::delete(&mut s, b, 0).unwrap();
    NodeStore::<2>::end_operation(&mut s).unwrap();
    assert_eq!(s.policy().policy.rftl_stats().unit_pages_freed, 3);
    assert_eq!(s.policy().policy.live_units().on(shared), 0);
    assert_eq!(s.report().gauges.pages_in_use, 1 + 1);
    // Freed pages are reused by later flushes.
    let c = create(&mut s, &[entry(3)]);
    StoreControl::write_back(&mut s).unwrap();
    assert!(old.contains(&table(&s, c)[0].0) || table(&s, c)[0].0 == shared);
    assert_eq!(entries(&mut s, c), vec![entry(3)]);
    assert_eq!(entries(&mut s, a), want);
}

/// With the seeds' compact layout a full node's units need more than a page: its units
/// are split (a reset and an extend) over two pages, which a compaction cannot shrink;
/// every flush still leaves the node readable and within `max(max_pages, 2)` pages.
#[test]
fn a_full_node_spans_two_pages_and_compaction_keeps_it_there() {
    let l = NodeLayout::new(LayoutKind::Seed, PS, 2).unwrap();
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open_with(&nodes, &log, l, 1, false);
    let full: Vec<Entry<2>> = (0..l.fits() as u64).map(entry).collect();
    let a = create(&mut s, &full);
    StoreControl::write_back(&mut s).unwrap();
    assert_eq!(table(&s, a).len(), 2);
    let mut want = full.clone();
    for k in 0..3 {
        want[k] = entry(100 + k as u64);
        modify(
            &mut s,
            a,
            NodeChange::Set {
                pos: k,
                entry: want[k],
            },
        );
        StoreControl::write_back(&mut s).unwrap();
        assert_eq!(table(&s, a).len(), 2, "flush {k}");
        assert_eq!(entries(&mut s, a), want);
    }
    assert_eq!(s.policy().policy.rftl_stats().compactions, 3);
}

#[test]
fn the_translation_table_survives_a_crash_and_a_checkpoint() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open(&nodes, &log, 2, false);
    let mut ids = Vec::new();
    for n in 0..6u64 {
        ids.push(create(&mut s, &[entry(n)]));
    }
    StoreControl::write_back(&mut s).unwrap();
    for round in 0..3u64 {
        for &id in &ids {
            modify(&mut s, id, NodeChange::Push(entry(10 * (round + 1) + id)));
        }
        StoreControl::write_back(&mut s).unwrap();
    }
    assert!(s.policy().policy.rftl_stats().compactions > 0);
    NodeStore::<2>::delete(&mut s, ids[2], 0).unwrap();
    NodeStore::<2>::end_operation(&mut s).unwrap();
    // Buffered changes on top, then a crash (no checkpoint): the log rebuilds the table,
    // the live units, the free list and the buffer.
    modify(
        &mut s,
        ids[0],
        NodeChange::Set {
            pos: 0,
            entry: entry(90),
        },
    );
    let want: Vec<Vec<Entry<2>>> = ids
        .iter()
        .filter(|&&i| i != ids[2])
        .map(|&i| entries(&mut s, i))
        .collect();
    let (mapping, free) = (
        s.policy().policy.live_units().table().unit_pages.clone(),
        s.core().header.free.clone(),
    );
    let live = s.policy().policy.live_units().clone();
    drop(s);
    let mut s = open(&nodes, &log, 2, true);
    assert_eq!(s.policy().policy.live_units().table().unit_pages, mapping);
    assert_eq!(s.core().header.free, free);
    assert_eq!(s.policy().policy.live_units(), &live);
    let got: Vec<Vec<Entry<2>>> = ids
        .iter()
        .filter(|&&i| i != ids[2])
        .map(|&i| entries(&mut s, i))
        .collect();
    assert_eq!(got, want);
    assert_eq!(got[0][0], entry(90));
    // A checkpoint compacts the log into a snapshot holding the table; reopen again.
    NodeStore::<2>::flush(&mut s).unwrap();
    let mapping = s.policy().policy.live_units().table().unit_pages.clone();
    drop(s);
    let mut s = open(&nodes, &log, 2, true);
    assert_eq!(s.policy().policy.live_units().table().unit_pages, mapping);
    assert_eq!(
        s.policy().policy.live_units(),
        &LiveUnits::of(s.policy().policy.live_units().table().clone())
    );
    assert_eq!(entries(&mut s, ids[0])[0], entry(90));
    assert_eq!(s.report().recovery.unwrap().buffered_nodes, 0);
}

/// RFTL's part of the shared round trip of its table through `store.json`
/// (`store/lcr_rftl_tests.rs`): four one-entry nodes packed into two unit pages.
pub(in crate::store) fn saved_table(saved: &StoreHeader, r: &StoreReport) {
    let state: super::mapping::RftlState =
        serde_json::from_value(saved.policy_state.clone().unwrap()).unwrap();
    assert_eq!(state.unit_pages.len(), 4, "{saved:?}");
    assert!(state.unit_pages.values().all(|p| p.len() == 2), "{saved:?}");
    let x = r.policy_report::<RftlStats>().unwrap();
    assert_eq!(x.gauges.mapped_nodes, 4);
    assert_eq!(x.gauges.unit_pages, 2);
    assert_eq!(x.settings.max_pages, 4);
    assert_eq!(x.settings.unit_page_bytes, (PS - unit_page::HEADER) as u64);
}

#[test]
fn a_damaged_unit_page_or_table_is_refused_naming_it() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open(&nodes, &log, 4, false);
    let id = create(&mut s, &[entry(1)]);
    StoreControl::write_back(&mut s).unwrap();
    let p = table(&s, id)[0].0;
    let good = damage_page(&nodes, p);
    let e = read_error(&mut s, id);
    assert!(
        e.contains(&format!("RFTL unit page {p}")) && e.contains("checksum"),
        "{e}"
    );
    nodes.clone().write(p, &good).unwrap();
    assert_eq!(entries(&mut s, id), vec![entry(1)]);
    // A table that does not match its pages (found when the node is assembled: a node
    // served from the assembled-node cache reads its list's pages unused).
    let (logged, core) = s.parts_mut();
    let live = &mut logged.policy.live;
    live.set(&mut core.header.free, id, vec![(p, 3)]).unwrap();
    logged.lb.nodes.clear();
    let e = read_error(&mut s, id);
    assert!(e.contains("the table says 3"), "{e}");
    let (logged, core) = s.parts_mut();
    logged
        .policy
        .live
        .set(&mut core.header.free, id, vec![])
        .unwrap();
    let e = read_error(&mut s, id);
    assert!(e.contains(&format!("RFTL node {id}")), "{e}");
}

/// RFTL's own options (the shared ones are tested over both stores in
/// `store/lcr_rftl_tests.rs`).
#[test]
fn invalid_options_are_refused_naming_the_key() {
    for (p, want) in [
        (
            RftlOptions {
                write_buffer: 512,
                ..params(4)
            },
            "less than one 1024-byte unit page",
        ),
        (params(0), "RFTL max_pages"),
    ] {
        let e = p.validate(PS).unwrap_err().to_string();
        assert!(e.contains(want), "{p:?}: {e}");
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Spec {
        store: StoreConfig,
    }
    let s: Spec = toml::from_str(r#"store = { kind = "rftl", write_buffer = "256KB" }"#).unwrap();
    let StoreConfig::Rftl(p) = &s.store else {
        panic!("{:?}", s.store)
    };
    assert_eq!(p.max_pages, 4);
    let s: Spec =
        toml::from_str(r#"store = { kind = "rftl", write_buffer = "256KB", max_pages = 8 }"#)
            .unwrap();
    assert_eq!(s.store.label(), "RFTL(max_pages=8)");
    let bad = r#"store = { kind = "lcr", write_buffer = "256KB", max_pages = 3 }"#;
    let e = toml::from_str::<Spec>(bad).unwrap_err().to_string();
    assert!(e.contains("unknown field"), "{bad}: {e}");
}

/// RFTL's own `UnitPages` records keep the bytes of the record kind the shared codec had
/// for them (kind 14, the node, then page and unit count pairs), so logs written before
/// stay readable.
#[test]
fn unit_pages_records_keep_their_bytes() {
    use crate::store::buffered::{Record, RecordFormat};
    let f = RecordFormat::Fixed;
    let rec = super::unit_pages_record(9, &[(1 << 33, 3), (4, 1)], f);
    let mut want = vec![14u8];
    want.extend_from_slice(&9u64.to_le_bytes());
    for (p, n) in [(1u64 << 33, 3u32), (4, 1)] {
        want.extend_from_slice(&p.to_le_bytes());
        want.extend_from_slice(&n.to_le_bytes());
    }
    assert_eq!(rec.encode(f).unwrap(), want);
    assert_eq!(Record::decode(&want, f, 40).unwrap(), rec);
}
