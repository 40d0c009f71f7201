//! A new buffered store is one module and one registration: this test module defines a toy
//! policy (a logged write buffer whose flush writes every buffered node in place, the
//! images of modified nodes logged first), registers it as a store ([`AnyStore::from`]) and
//! runs R-trees on it against a brute-force model, through a crash, a recovery and a
//! checkpoint. Nothing in the skeleton, the other policies or the trees knows of it.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::page::{apply_raw, page_from_entries};
use super::tests::{layout, mem, open_on};
use super::*;
use crate::geom::Rect;
use crate::index::{IndexKind, MbrPredicate, SplitAlgorithm, Tree};
use crate::node::{Capacity, Occupancy};
use crate::store::AnyStore;
use serde::Deserialize;

/// The toy policy: FAST's buffer without flushing units (the skeleton holds the buffer
/// and does the rest); its own state is a count of flushes.
#[derive(Default)]
struct Toy {
    flushes: u64,
}

/// The toy policy's own report (`store.toy`).
#[derive(Debug, Serialize, Deserialize)]
struct ToyStats {
    flushes: u64,
}

impl LoggedPolicy for Toy {
    const KIND: &'static str = "toy";
    const NAME: &'static str = "toy";
    const OLDEST_LOG_FORMAT: u32 = 2;
    type Watch = ();

    /// The node's page with its buffered changes applied (the cache of assembled nodes is
    /// not used: it is an optimisation a policy may leave out).
    fn node_page(&mut self, cx: Parts<'_>, id: PageId, level: u32) -> Result<Arc<[u8]>> {
        let Parts { core, lb } = cx;
        let layout = core.layout;
        let Some(n) = lb.buf.live(id)? else {
            return core.cache.read_checked(id, level, |b| layout.verify(b, id));
        };
        let mut page = vec![0u8; layout.page_size()];
        let count = match &n.image {
            Some(entries) => {
                page_from_entries(&layout, id, n.level, entries, &mut page)?;
                entries.len() / layout.entry_size()
            }
            None => {
                let base = core
                    .cache
                    .read_checked(id, level, |b| layout.verify(b, id))?;
                page.copy_from_slice(&base);
                layout.entry_count(&page)
            }
        };
        apply_raw(&layout, id, &mut page, n.level, count, &n.changes)?;
        Ok(page.into())
    }

    /// Writes every buffered node in place as one unit, images of modified nodes first.
    fn flush_all(&mut self, cx: Parts<'_>) -> Result<()> {
        let Parts { core, lb } = cx;
        let members: Vec<(PageId, NodeStatus, u32, bool)> = (lb.buf.iter())
            .map(|(id, n)| (id, n.status, n.level, n.image.is_some()))
            .collect();
        if members.is_empty() {
            return Ok(());
        }
        let mut unit = core.unit(members.len());
        for &(id, status, level, image) in &members {
            if status == NodeStatus::Deleted {
                continue;
            }
            let page = self.node_page(Parts { core, lb }, id, level)?;
            if status == NodeStatus::Modified && !image {
                core.log_image(id, level, &page)?;
            }
            unit.push(id, level, &page);
        }
        let ids: Vec<PageId> = members.iter().map(|m| m.0).collect();
        core.write_unit(&unit, UnitDurability::WrittenRecord { members: ids })?;
        core.recycle_unit(unit);
        for (id, ..) in members {
            lb.buf.remove(id);
        }
        self.flushes += 1;
        Ok(())
    }

    fn own_report(&self, _core: &Core) -> PolicyReport {
        policy_report(&ToyStats {
            flushes: self.flushes,
        })
    }
}

fn square(i: u64) -> Rect<2> {
    let (x, y) = ((i * 37 % 1000) as f64, (i * 91 % 1000) as f64);
    Rect::new([x, y], [x + (i % 13) as f64, y + (i % 7) as f64]).unwrap()
}

/// Every window answer of the tree equals a scan of `live`, and the tree's invariants hold.
fn check(t: &mut Tree<AnyStore, 2>, live: &BTreeMap<u64, Rect<2>>, what: &str) {
    for q in 0..20u64 {
        let w = Rect::new([q as f64 * 50.0, 0.0], [q as f64 * 50.0 + 120.0, 600.0]).unwrap();
        let mut got = Vec::new();
        t.search(MbrPredicate::Intersects, &w, |e| got.push(e.ptr))
            .unwrap();
        got.sort_unstable();
        let want: Vec<u64> = (live.iter())
            .filter(|(_, r)| r.intersects(&w))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(got, want, "{what}: window {w:?}");
    }
    let report = t.check().unwrap();
    assert!(report.ok(), "{what}: {report:?}");
    assert_eq!(t.meta().objects, live.len() as u64, "{what}");
}

#[test]
fn a_toy_policy_registered_in_one_line_runs_trees_through_a_crash() {
    let (nodes, log) = (mem(1 << 20), mem(8 << 20));
    let open = |reopen: bool| -> AnyStore {
        // The registration: a buffered store over the policy and a 4KB write buffer
        // (`BufferedStore::create`, or `open` after a crash), as `AnyStore` holds every one.
        let toy = Logged::new(4 << 10, (), Toy::default());
        AnyStore::from(open_on(toy, layout(), (&nodes, &log), reopen))
    };
    let kind = IndexKind::RTree {
        split: SplitAlgorithm::Quadratic,
    };
    let cap = Capacity::new(&layout(), &Occupancy::default()).unwrap();
    let mut t = Tree::<AnyStore, 2>::create(open(false), cap, kind).unwrap();
    let mut live = BTreeMap::new();
    for i in 0..600u64 {
        t.insert(square(i), i).unwrap();
        live.insert(i, square(i));
        if i % 5 == 4 {
            let gone = i - 3;
            assert!(t.delete(&square(gone), gone).unwrap(), "delete {gone}");
            live.remove(&gone);
        }
    }
    check(&mut t, &live, "built");
    let r = t.store().report();
    assert_eq!(r.kind, "toy");
    let flushes = r.policy_report::<ToyStats>().unwrap().flushes;
    let b = r.buffered.unwrap();
    assert!(flushes > 0 && b.flushes == flushes, "{b:?}");
    assert!(
        b.image_records > 0 && b.gauges.peak_bytes > (4 << 10),
        "{b:?}"
    );
    assert!(
        b.gauges.bytes > 0,
        "changes still buffered at the crash: {b:?}"
    );

    // A crash: the log rebuilds the buffer, and the tree is the one acknowledged.
    drop(t);
    let mut t = Tree::<AnyStore, 2>::open(open(true), cap, kind).unwrap();
    let rec = t.store().report().recovery.unwrap();
    assert!(
        rec.buffered_nodes > 0 && rec.records_replayed > 0,
        "{rec:?}"
    );
    check(&mut t, &live, "recovered");
    for i in 600..700u64 {
        t.insert(square(i), i).unwrap();
        live.insert(i, square(i));
    }
    // A checkpoint empties the buffer; reopened, nothing is replayed into it.
    t.flush().unwrap();
    assert_eq!(t.store().report().buffered.unwrap().gauges.bytes, 0);
    drop(t);
    let mut t = Tree::<AnyStore, 2>::open(open(true), cap, kind).unwrap();
    assert_eq!(t.store().report().recovery.unwrap().buffered_nodes, 0);
    check(&mut t, &live, "after a checkpoint");
}
