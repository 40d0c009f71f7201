//! The skeleton under its policies (FAST, eFIND, the LCR-tree, RFTL): the same operations reopen to the same nodes from
//! the log, the shared statistics agree with what was done, and log formats are checked.

use super::placement::LogDevices;
use super::*;
use crate::cache::CacheConfig;
use crate::device::memory::{MemoryConfig, MemoryDevice};
use crate::device::shared::SharedDevice;
use crate::device::{Device, DeviceConfig};
use crate::geom::Rect;
use crate::node::{LayoutKind, Node};
use crate::store::efind::{EfindConfig, EfindPolicy};
use crate::store::fast::{FastOptions, FastPolicy, FlushPolicy};
use crate::store::log::LogConfig;
use crate::store::{NodeStore, StoreControl};

pub(crate) const PS: usize = 1024;

pub(crate) fn mem(bytes: u64) -> SharedDevice {
    SharedDevice::new(Box::new(
        MemoryDevice::open(&MemoryConfig { capacity: bytes }, PS, None).unwrap(),
    ))
}

pub(crate) fn devs(nodes: &SharedDevice, log: &SharedDevice) -> LogDevices {
    LogDevices {
        nodes: Box::new(nodes.clone()),
        log: Box::new(log.clone()),
        placement: LogPlacement::Separate {
            name: "memory".into(),
            config: Box::new(DeviceConfig::Memory(MemoryConfig { capacity: 8 << 20 })),
        },
    }
}

pub(crate) fn layout() -> NodeLayout {
    NodeLayout::new(LayoutKind::Checked, PS, 2).unwrap()
}

pub(crate) fn entry(i: u64) -> Entry<2> {
    let x = i as f64;
    Entry {
        mbr: Rect::new([x, x], [x + 1.0, x + 2.0]).unwrap(),
        ptr: i,
        aux: 0,
    }
}

/// A new store over `policy` with layout `l` on `nodes` and `log` (its log synced at every
/// commit), or the one there reopened.
pub(crate) fn open_on<P: BufferPolicy>(
    policy: P,
    l: NodeLayout,
    (nodes, log): (&SharedDevice, &SharedDevice),
    reopen: bool,
) -> BufferedStore<P> {
    let (c, cfg, devs) = (none(), LogConfig::new(LogSync::EachOp), devs(nodes, log));
    match reopen {
        false => BufferedStore::create(devs, &c, l, cfg, policy, None).unwrap(),
        true => BufferedStore::open(devs, &c, l, cfg, policy, None).unwrap(),
    }
}

/// Node `id`'s entries as the store reads them.
pub(crate) fn entries<P: BufferPolicy>(s: &mut BufferedStore<P>, id: PageId) -> Vec<Entry<2>> {
    let page = NodeStore::<2>::read(s, id, 0).unwrap();
    s.core().layout.decode::<2>(page.bytes()).entries
}

/// Pages read from the node device so far.
pub(crate) fn reads<P: BufferPolicy>(s: &BufferedStore<P>) -> u64 {
    StoreControl::device(s).stats().host.pages_read
}

/// One operation: change `c` to node `id`.
/// Damages page `page` of `dev` (its last byte flipped) and returns its good image.
pub(crate) fn damage_page(dev: &SharedDevice, page: u64) -> Vec<u8> {
    let (mut d, mut bytes) = (dev.clone(), vec![0u8; PS]);
    d.read(page, &mut bytes).unwrap();
    let good = bytes.clone();
    bytes[PS - 1] ^= 0xff;
    d.write(page, &bytes).unwrap();
    good
}

/// The error reading leaf `id` of `s` fails with.
pub(crate) fn read_error<P: BufferPolicy>(s: &mut BufferedStore<P>, id: PageId) -> String {
    NodeStore::<2>::read(s, id, 0).err().unwrap().to_string()
}

pub(crate) fn modify<P: BufferPolicy>(s: &mut BufferedStore<P>, id: PageId, c: NodeChange<2>) {
    NodeStore::<2>::modify(s, id, 0, &[c]).unwrap();
    NodeStore::<2>::end_operation(s).unwrap();
}

/// Builds 4 one-entry nodes on a store of `cfg` in a fresh directory, writes them back,
/// adds an entry to each, checkpoints and reopens: returns the header the checkpoint saved
/// and the reopened store, whose node 3 was checked to read back with both entries.
pub(crate) fn checkpoint_and_reopen(
    cfg: &crate::store::StoreConfig,
) -> (crate::store::StoreHeader, crate::store::AnyStore) {
    let dir = tempfile::tempdir().unwrap();
    let shared = mem(16 << 20);
    let none = CacheConfig::none();
    let dev = Box::new(shared.clone());
    let mut s = cfg.create(dev, &none, layout(), Some(dir.path())).unwrap();
    for n in 0..4u64 {
        NodeStore::<2>::create(&mut s, 0, &[entry(n)]).unwrap();
        NodeStore::<2>::end_operation(&mut s).unwrap();
    }
    s.write_back().unwrap();
    for n in 0..4u64 {
        NodeStore::<2>::modify(&mut s, n, 0, &[NodeChange::Push(entry(20 + n))]).unwrap();
        NodeStore::<2>::end_operation(&mut s).unwrap();
    }
    NodeStore::<2>::flush(&mut s).unwrap();
    drop(s);
    let saved = crate::store::StoreHeader::load(&dir.path().join("store.json")).unwrap();
    let mut s = cfg
        .open(Box::new(shared), &none, layout(), dir.path())
        .unwrap();
    let page = NodeStore::<2>::read(&mut s, 3, 0).unwrap();
    let node: Node<2> = layout().decode(page.bytes());
    assert_eq!(node.entries, vec![entry(3), entry(23)]);
    (saved, s)
}

fn fast() -> Logged<FastPolicy> {
    FastPolicy::new(FastOptions {
        log_size: Some(8 << 20),
        log_sync: LogSync::EachOp,
        ..FastOptions::new(4 << 10, 2, FlushPolicy::FastStar)
    })
}

fn lcr() -> Logged<crate::store::lcr::LcrPolicy> {
    crate::store::lcr::LcrPolicy::new(crate::store::lcr::LcrOptions {
        log_size: Some(8 << 20),
        log_sync: LogSync::EachOp,
        ..crate::store::lcr::LcrOptions::new(4 << 10)
    })
}

fn rftl() -> Logged<crate::store::rftl::RftlPolicy> {
    crate::store::rftl::RftlPolicy::new(crate::store::rftl::RftlOptions {
        max_pages: 3,
        log_size: Some(8 << 20),
        log_sync: LogSync::EachOp,
        ..crate::store::rftl::RftlOptions::new(4 << 10)
    })
}

fn efind() -> EfindPolicy {
    EfindPolicy::new(&EfindConfig::with_buffer(8 << 10), PS).unwrap()
}

fn none() -> CacheConfig {
    CacheConfig::none()
}

/// Creates 40 nodes and changes them over 600 operations (flushing as the buffer fills);
/// returns the store, the nodes' ids (0 to 39, except under RFTL, whose flushes allocate
/// unit pages from the same page space) and the nodes as the direct application of the
/// changes gives them.
fn workload<P: BufferPolicy>(
    mut s: BufferedStore<P>,
) -> (BufferedStore<P>, Vec<PageId>, Vec<Vec<Entry<2>>>) {
    let mut want: Vec<Vec<Entry<2>>> = Vec::new();
    let mut ids = Vec::new();
    for n in 0..40u64 {
        let es: Vec<Entry<2>> = (0..3).map(|k| entry(n * 10 + k)).collect();
        let id = NodeStore::<2>::create(&mut s, 0, &es).unwrap();
        if s.policy().kind() != "rftl" {
            assert_eq!(id, n);
        }
        ids.push(id);
        want.push(es);
        NodeStore::<2>::end_operation(&mut s).unwrap();
    }
    for op in 0..600u64 {
        let k = ((op * 7) % 40) as usize;
        let (id, node) = (ids[k], &mut want[k]);
        let change = match op % 3 {
            0 => NodeChange::Push(entry(1000 + op)),
            1 if !node.is_empty() => NodeChange::Set {
                pos: (op as usize) % node.len(),
                entry: entry(2000 + op),
            },
            _ if node.len() > 1 => NodeChange::Remove { pos: 0 },
            _ => NodeChange::Push(entry(3000 + op)),
        };
        crate::store::apply_changes(node, &[change]).unwrap();
        NodeStore::<2>::modify(&mut s, id, 0, &[change]).unwrap();
        if op % 50 == 49 {
            let all: Vec<Entry<2>> = (0..4).map(|k| entry(5000 + op + k)).collect();
            NodeStore::<2>::rewrite(&mut s, id, 0, &all).unwrap();
            *node = all;
        }
        NodeStore::<2>::end_operation(&mut s).unwrap();
    }
    (s, ids, want)
}

fn contents<S: NodeStore<2>>(s: &mut S, ids: &[PageId]) -> Vec<Vec<Entry<2>>> {
    ids.iter()
        .map(|&id| {
            let page = s.read(id, 0).unwrap();
            let node: Node<2> = layout().decode(page.bytes());
            node.entries
        })
        .collect()
}

fn reopen_same<P: BufferPolicy>(make: impl Fn() -> P, kind: &str) {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let s = open_on(make(), layout(), (&nodes, &log), false);
    let (mut s, ids, want) = workload(s);
    assert_eq!(contents(&mut s, &ids), want, "{kind}");
    let r = s.report();
    assert_eq!(r.kind, kind);
    let b = r.buffered.clone().unwrap();
    assert!(b.flushes > 0, "{kind}: {b:?}");
    assert!(b.flushed_nodes >= b.flushes && b.flush_write_requests >= b.flushes);
    assert!(b.gauges.bytes <= b.settings.write_buffer, "{kind}: {b:?}");
    assert!(
        b.gauges.peak_bytes > b.settings.write_buffer,
        "{kind}: {b:?}"
    );
    assert!(b.log.commits >= 640, "{kind}: {b:?}");
    // RFTL writes out of place: no images, but units on pages and compactions.
    let rftl = r.policy_report::<crate::store::rftl::RftlStats>();
    let lcr = r.policy_report::<crate::store::lcr::LcrStats>();
    assert!(
        b.image_records > 0 || rftl.is_some_and(|x| x.compactions > 0 && x.units_written > 0),
        "{kind}: modified nodes were flushed: {b:?} {rftl:?}"
    );
    // The LCR-tree's log pages and RFTL's unit pages are allocated pages too.
    let log_pages = lcr.map_or(0, |l| l.gauges.log_pages);
    let unit_pages = rftl.map_or(0, |x| x.gauges.unit_pages);
    assert_eq!(r.gauges.pages_in_use, 40 + log_pages + unit_pages, "{kind}");
    // A crash now: the log rebuilds the buffer; the nodes read the same.
    drop(s);
    let mut s = open_on(make(), layout(), (&nodes, &log), true);
    assert_eq!(contents(&mut s, &ids), want, "{kind} reopened");
    let rec = s.report().recovery.unwrap();
    assert!(
        rec.operations > 0 && rec.records_replayed > 0,
        "{kind}: {rec:?}"
    );
    // Write back, reopen: nothing buffered, the same nodes.
    StoreControl::write_back(&mut s).unwrap();
    assert_eq!(s.report().buffered.unwrap().gauges.bytes, 0);
    NodeStore::<2>::flush(&mut s).unwrap();
    drop(s);
    let mut s = open_on(make(), layout(), (&nodes, &log), true);
    assert_eq!(contents(&mut s, &ids), want, "{kind} after write-back");
    assert_eq!(s.report().recovery.unwrap().buffered_nodes, 0, "{kind}");
}

#[test]
fn both_policies_rebuild_their_buffers_from_the_shared_log() {
    reopen_same(fast, "fast");
    reopen_same(efind, "efind");
    reopen_same(lcr, "lcr");
    reopen_same(rftl, "rftl");
}

/// FAST's records did not change with the shared codec: its format-1 logs are read. eFIND's
/// were postcard records: its format-1 logs are refused with a clear error, untouched.
#[test]
fn old_log_formats_are_read_or_refused_by_policy() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let (s, ids, want) = workload(open_on(fast(), layout(), (&nodes, &log), false));
    drop(s);
    crate::store::log::set_header_format(&mut log.clone(), 1);
    let mut s = open_on(fast(), layout(), (&nodes, &log), true);
    assert_eq!(contents(&mut s, &ids), want);

    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let (s, _, _) = workload(open_on(efind(), layout(), (&nodes, &log), false));
    drop(s);
    crate::store::log::set_header_format(&mut log.clone(), 1);
    let image = |d: &SharedDevice| {
        let mut all = vec![0u8; 8 << 20];
        d.clone().read(0, &mut all).unwrap();
        all
    };
    let before = image(&log);
    let log_cfg = LogConfig::new(LogSync::EachOp);
    let err = BufferedStore::open(
        devs(&nodes, &log),
        &none(),
        layout(),
        log_cfg,
        efind(),
        None,
    )
    .err()
    .expect("an eFIND log of format 1 is refused")
    .to_string();
    assert!(
        err.contains("format 1") && err.contains("rebuild the index"),
        "{err}"
    );
    assert!(before == image(&log), "the refused log is left as it was");
}

/// A modification whose later change is invalid (a position past the end, a push onto a full
/// node) fails as a whole: the node reads as before, whether it was buffered or only stored,
/// and the store goes on working (and reopens to the same nodes).
fn failed_modification_leaves_nothing<P: BufferPolicy>(make: impl Fn() -> P, kind: &str) {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open_on(make(), layout(), (&nodes, &log), false);
    let fits = layout().fits();
    let full: Vec<Entry<2>> = (0..fits as u64).map(entry).collect();
    let a = NodeStore::<2>::create(&mut s, 0, &[entry(1), entry(2)]).unwrap();
    let b = NodeStore::<2>::create(&mut s, 0, &full).unwrap();
    NodeStore::<2>::end_operation(&mut s).unwrap();
    let before = contents(&mut s, &[0, 1]);
    let bad_pos = [
        NodeChange::Set {
            pos: 0,
            entry: entry(50),
        },
        NodeChange::Remove { pos: 0 },
        NodeChange::Remove { pos: 1 },
    ];
    let bad_push = [
        NodeChange::Remove { pos: 0 },
        NodeChange::Push(entry(60)),
        NodeChange::Push(entry(61)),
    ];
    for round in 0..2 {
        let e = NodeStore::<2>::modify(&mut s, a, 0, &bad_pos)
            .expect_err(&format!("{kind} round {round}: bad position"));
        assert!(e.to_string().contains("does not exist"), "{kind}: {e}");
        let e = NodeStore::<2>::modify(&mut s, b, 0, &bad_push)
            .expect_err(&format!("{kind} round {round}: push onto a full node"));
        assert!(e.to_string().contains("full"), "{kind}: {e}");
        assert_eq!(contents(&mut s, &[0, 1]), before, "{kind} round {round}");
        // Round 2 with the nodes written back: only stored, not buffered.
        StoreControl::write_back(&mut s).unwrap();
    }
    NodeStore::<2>::modify(&mut s, a, 0, &[NodeChange::Push(entry(70))]).unwrap();
    NodeStore::<2>::end_operation(&mut s).unwrap();
    let mut want = before;
    want[0].push(entry(70));
    assert_eq!(contents(&mut s, &[0, 1]), want, "{kind}");
    drop(s);
    let mut s = open_on(make(), layout(), (&nodes, &log), true);
    assert_eq!(contents(&mut s, &[0, 1]), want, "{kind} reopened");
}

/// eFIND knows every buffered node's length, so it refuses a bad change list whole. (FAST and
/// the LCR-tree log changes without reading the node, so they cannot check positions
/// before a read of the node: their callers, the trees, only send valid changes.)
#[test]
fn a_failed_modification_leaves_nothing_under_efind() {
    failed_modification_leaves_nothing(efind, "efind");
}

/// One step of [`cached_reads_equal_assembly`] (node numbers pick among the live nodes).
#[derive(Debug, Clone)]
enum CacheOp {
    Create(u8, u32),
    Modify(u8, Vec<(u8, u8)>),
    Rewrite(u8, u8),
    Delete(u8),
    Read(u8),
    WriteBack,
    Reopen,
    Compare,
}

fn cache_op() -> impl proptest::strategy::Strategy<Value = CacheOp> {
    use proptest::prelude::*;
    prop_oneof![
        2 => (1u8..6, 0u32..3).prop_map(|(n, l)| CacheOp::Create(n, l)),
        8 => (any::<u8>(), prop::collection::vec((any::<u8>(), any::<u8>()), 1..4))
            .prop_map(|(n, c)| CacheOp::Modify(n, c)),
        1 => (any::<u8>(), 0u8..8).prop_map(|(n, k)| CacheOp::Rewrite(n, k)),
        1 => any::<u8>().prop_map(CacheOp::Delete),
        4 => any::<u8>().prop_map(CacheOp::Read),
        1 => Just(CacheOp::WriteBack),
        1 => Just(CacheOp::Reopen),
        2 => Just(CacheOp::Compare),
    ]
}

/// Node `id` read through the store: it must hold `want` at `level` in a page whose
/// checksum holds. Returns the page.
fn read_checked<P: BufferPolicy>(
    s: &mut BufferedStore<P>,
    id: PageId,
    level: u32,
    want: &[Entry<2>],
) -> Vec<u8> {
    let page = NodeStore::<2>::read(s, id, level).unwrap();
    let bytes = page.bytes().to_vec();
    layout().verify(&bytes, id).unwrap();
    let node: Node<2> = layout().decode(&bytes);
    assert_eq!(node.level, level, "node {id}");
    assert_eq!(node.entries, want, "node {id}");
    bytes
}

/// Runs `ops` on a store of policy `make` (every change valid, as the trees send them),
/// with write-backs and reopenings (recovery from the log) in between. Every read gives
/// the entries the direct application of the changes gives, sealed; `Compare` reads every
/// node, drops the caches (the cache of assembled nodes with them) and reads every node
/// again, assembled from scratch: the same bytes.
fn cached_reads_equal_assembly<P: BufferPolicy>(make: impl Fn() -> P, ops: &[CacheOp]) {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let mut s = open_on(make(), layout(), (&nodes, &log), false);
    let fits = layout().fits();
    let mut live: Vec<(PageId, u32, Vec<Entry<2>>)> = Vec::new();
    let mut serial = 0u64;
    let mut fresh = |n: usize| -> Vec<Entry<2>> {
        (0..n)
            .map(|_| {
                serial += 1;
                entry(serial)
            })
            .collect()
    };
    for op in ops {
        let pick = |k: u8, n: usize| (n > 0).then(|| k as usize % n);
        match op {
            CacheOp::Create(n, level) => {
                let es = fresh(*n as usize);
                let id = NodeStore::<2>::create(&mut s, *level, &es).unwrap();
                live.push((id, *level, es));
            }
            CacheOp::Modify(k, list) => {
                let Some(i) = pick(*k, live.len()) else {
                    continue;
                };
                let (id, level, node) = &mut live[i];
                let mut changes = Vec::new();
                for &(kind, x) in list {
                    let len = node.len();
                    let c = match kind % 3 {
                        1 if len > 0 => NodeChange::Set {
                            pos: x as usize % len,
                            entry: fresh(1)[0],
                        },
                        2 if len > 1 => NodeChange::Remove {
                            pos: x as usize % len,
                        },
                        _ if len + 1 < fits => NodeChange::Push(fresh(1)[0]),
                        _ => NodeChange::Remove { pos: 0 },
                    };
                    crate::store::apply_changes(node, &[c]).unwrap();
                    changes.push(c);
                }
                NodeStore::<2>::modify(&mut s, *id, *level, &changes).unwrap();
            }
            CacheOp::Rewrite(k, n) => {
                let Some(i) = pick(*k, live.len()) else {
                    continue;
                };
                let es = fresh(*n as usize);
                let (id, level, node) = &mut live[i];
                NodeStore::<2>::rewrite(&mut s, *id, *level, &es).unwrap();
                *node = es;
            }
            CacheOp::Delete(k) => {
                let Some(i) = pick(*k, live.len()) else {
                    continue;
                };
                let (id, level, _) = live.remove(i);
                NodeStore::<2>::delete(&mut s, id, level).unwrap();
            }
            CacheOp::Read(k) => {
                if let Some(i) = pick(*k, live.len()) {
                    let (id, level, want) = &live[i];
                    read_checked(&mut s, *id, *level, want);
                }
                continue;
            }
            CacheOp::WriteBack => {
                StoreControl::write_back(&mut s).unwrap();
                continue;
            }
            CacheOp::Reopen => {
                drop(s);
                s = open_on(make(), layout(), (&nodes, &log), true);
                continue;
            }
            CacheOp::Compare => {
                let cached: Vec<Vec<u8>> = live
                    .iter()
                    .map(|(id, level, want)| read_checked(&mut s, *id, *level, want))
                    .collect();
                StoreControl::drop_caches(&mut s).unwrap();
                for ((id, level, want), before) in live.iter().zip(&cached) {
                    let after = read_checked(&mut s, *id, *level, want);
                    assert!(
                        after == *before,
                        "node {id}: cached and assembled pages differ"
                    );
                }
                continue;
            }
        }
        NodeStore::<2>::end_operation(&mut s).unwrap();
    }
    for (id, level, want) in &live {
        read_checked(&mut s, *id, *level, want);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]

    /// The caches of assembled nodes (the LCR-tree's, RFTL's, eFIND's merged pages) give
    /// what assembling the node from scratch gives, after any valid change sequence,
    /// flushes, write-backs and recoveries (FAST, which keeps none, as a reference).
    #[test]
    fn cached_nodes_read_as_assembled_ones(
        ops in proptest::collection::vec(cache_op(), 1..160),
    ) {
        cached_reads_equal_assembly(fast, &ops);
        cached_reads_equal_assembly(lcr, &ops);
        cached_reads_equal_assembly(rftl, &ops);
        cached_reads_equal_assembly(efind, &ops);
    }
}
