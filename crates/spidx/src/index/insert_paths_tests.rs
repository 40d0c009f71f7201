//! The FOR-tree's insertion on page images (one-page nodes and nodes of several pages,
//! [`Tree::insert_spanned`]) against the decoded path at every node
//! ([`Tree::insert_decoded`]): two trees take the same random inserts and deletes, one on
//! each path, and after every operation every page holds the same bytes, the tree and
//! store counters are equal (the same reads and writes per level, the same entry-level
//! changes), and so are the access counts. Thresholds run from "merge at once" to "never
//! merge", with the published defect on and off (its root collects a chain of more pages
//! than one page can name, so pages after the first name pages too).

use proptest::prelude::*;

use super::DECODED_ONLY;
use crate::cache::{CacheConfig, PageCache};
use crate::device::memory::{MemoryConfig, MemoryDevice};
use crate::geom::Rect;
use crate::index::{ForTreeOptions, IndexKind, Tree};
use crate::node::{Capacity, LayoutKind, Occupancy};
use crate::store::direct::DirectStore;
use crate::store::NodeStore;

const PAGE: usize = 1024;

fn tree(o: ForTreeOptions) -> Tree<DirectStore, 2> {
    let kind = IndexKind::ForTree(o);
    let layout = kind.layout(LayoutKind::Checked, PAGE, 2).unwrap();
    let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
    let dev = MemoryDevice::open(&MemoryConfig::default(), PAGE, None).unwrap();
    let cache = PageCache::new(Box::new(dev), &CacheConfig::none()).unwrap();
    Tree::create(DirectStore::create(cache, layout, None).unwrap(), cap, kind).unwrap()
}

/// Every page the store may have written, as the device holds it (no cache).
fn pages(t: &mut Tree<DirectStore, 2>) -> Vec<Vec<u8>> {
    let created = NodeStore::<2>::stats(&t.store).nodes_created;
    let dev = t.store.cache_mut().device_mut();
    let end = (created + 1).min(dev.capacity_pages());
    (0..end)
        .map(|p| {
            let mut buf = vec![0u8; PAGE];
            dev.read(p, &mut buf).unwrap();
            buf
        })
        .collect()
}

fn state(t: &Tree<DirectStore, 2>) -> Vec<u8> {
    t.strategy.state.as_ref().unwrap().save()
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Rect<2>),
    /// Delete the `i % live`-th live object.
    Delete(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let rect = (0.0..1000.0f64, 0.0..1000.0f64, 0.0..30.0f64, 0.0..30.0f64)
        .prop_map(|(x, y, w, h)| Rect::new([x, y], [x + w, y + h]).unwrap());
    prop_oneof![
        8 => rect.prop_map(Op::Insert),
        1 => any::<usize>().prop_map(Op::Delete),
    ]
}

fn options() -> impl Strategy<Value = ForTreeOptions> {
    (
        prop_oneof![Just(0.1), Just(1.0), Just(10.0), Just(1e9)],
        any::<bool>(),
    )
        .prop_map(|(write_read_ratio, root_fix)| ForTreeOptions {
            write_read_ratio,
            root_fix,
        })
}

/// Runs `ops` on two trees, one on each path, comparing them after every operation;
/// returns the tree of the page paths.
fn same_paths(o: ForTreeOptions, ops: &[Op]) -> Tree<DirectStore, 2> {
    let (mut fast, mut decoded) = (tree(o), tree(o));
    let mut live: Vec<(Rect<2>, u64)> = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        let what = format!("{o:?}, operation {k} ({op:?})");
        let run = |t: &mut Tree<DirectStore, 2>, only: bool| {
            DECODED_ONLY.set(only);
            let r = match op {
                Op::Insert(r) => t.insert(*r, k as u64).map(|()| true),
                Op::Delete(i) => {
                    let (r, id) = live[i % live.len().max(1)];
                    t.delete(&r, id)
                }
            };
            DECODED_ONLY.set(false);
            r.unwrap()
        };
        if matches!(op, Op::Delete(_)) && live.is_empty() {
            continue;
        }
        let (a, b) = (run(&mut fast, false), run(&mut decoded, true));
        assert_eq!(a, b, "{what}: outcome");
        match op {
            Op::Insert(r) => live.push((*r, k as u64)),
            Op::Delete(i) => {
                live.remove(i % live.len());
            }
        }
        assert_eq!(fast.stats, decoded.stats, "{what}: tree counters");
        assert_eq!(
            NodeStore::<2>::stats(&fast.store),
            NodeStore::<2>::stats(&decoded.store),
            "{what}: store counters"
        );
        assert_eq!(fast.meta, decoded.meta, "{what}: tree metadata");
        assert_eq!(state(&fast), state(&decoded), "{what}: access counts");
        assert!(
            pages(&mut fast) == pages(&mut decoded),
            "{what}: page bytes"
        );
    }
    let rep = fast.check().unwrap();
    assert!(rep.ok(), "{:?}", rep.violations);
    fast
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn page_paths_write_what_the_decoded_path_writes(
        o in options(),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        same_paths(o, &ops);
    }
}

/// The published defect's root chain: longer than one page names (pages after the first
/// name further pages), every insertion through the page paths.
#[test]
fn a_root_chain_longer_than_one_page_names() {
    let o = ForTreeOptions {
        write_read_ratio: 10.0,
        root_fix: false,
    };
    let ops: Vec<Op> = (0..700u64)
        .map(|i| {
            let (x, y) = ((i * 37 % 1000) as f64, (i * 91 % 1000) as f64);
            Op::Insert(Rect::new([x, y], [x + 3.0, y + 3.0]).unwrap())
        })
        .collect();
    let mut t = same_paths(o, &ops);
    let m = t.capacity().max(0);
    let pages = t.root_pages().unwrap();
    assert!(pages > m + 1, "{pages} pages, {m} named by the first");
}
