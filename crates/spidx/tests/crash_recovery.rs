//! Crash tests of the logging stores, generic over `StoreConfig` (see `stores/mod.rs`):
//! random operation sequences on a `CrashDevice` that stops persisting at a random write
//! (seeded), with the write at the cut lost or torn after some sectors; then the store is
//! reopened on what the medium kept. Every operation acknowledged before the cut (per the
//! log's sync mode) must be present, nothing after it half-applied: the recovered tree
//! passes the checker and holds exactly the objects of some prefix of the operations that
//! is at least as long as the acknowledged one.
//!
//! CI runs a few seeds per configuration; `SPIDX_LONG_TESTS=1` runs many more.

mod stores;

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spidx::cache::CacheConfig;
use spidx::device::crash::{CrashDevice, Tear};
use spidx::device::memory::{MemoryConfig, MemoryDevice};
use spidx::device::partition::Partition;
use spidx::device::shared::SharedDevice;
use spidx::device::Device;
use spidx::geom::Rect;
use spidx::index::{IndexKind, MbrPredicate, RStarOptions, SplitAlgorithm, Tree};
use spidx::node::{Capacity, LayoutKind, NodeLayout, Occupancy};
use spidx::store::{AnyStore, NodeStore, StoreConfig, StoreControl, StoreFiles, StoreReport};
use stores::{crash_configs, long_cases, PAGE};

type Live = BTreeMap<u64, Rect<2>>;

enum Op {
    Insert(Rect<2>),
    Delete(usize),
    Update(usize, Rect<2>),
}

fn ops(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let rect = |rng: &mut ChaCha8Rng| {
        let (x, y) = (rng.gen_range(0.0..1000.0f64), rng.gen_range(0.0..1000.0f64));
        let (w, h) = (rng.gen_range(0.0..40.0f64), rng.gen_range(0.0..40.0f64));
        Rect {
            min: [x, y],
            max: [x + w, y + h],
        }
    };
    (0..n)
        .map(|_| match rng.gen_range(0..10) {
            0..=5 => Op::Insert(rect(&mut rng)),
            6..=7 => Op::Delete(rng.gen()),
            _ => Op::Update(rng.gen(), rect(&mut rng)),
        })
        .collect()
}

fn layout_cap() -> (NodeLayout, Capacity) {
    let layout = NodeLayout::new(LayoutKind::Checked, PAGE, 2).unwrap();
    let cap = Capacity::new(&layout, &Occupancy::default()).unwrap();
    (layout, cap)
}

fn cache() -> CacheConfig {
    "lru:4KB".parse().unwrap()
}

/// Applies `op` to the tree and the model.
fn apply(t: &mut Tree<AnyStore, 2>, live: &mut Live, next: &mut u64, op: &Op) {
    match op {
        Op::Insert(r) => {
            t.insert(*r, *next).unwrap();
            live.insert(*next, *r);
            *next += 1;
        }
        Op::Delete(i) if !live.is_empty() => {
            let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
            assert!(t.delete(&r, id).unwrap());
            live.remove(&id);
        }
        Op::Update(i, new) if !live.is_empty() => {
            let (&id, &r) = live.iter().nth(i % live.len()).unwrap();
            assert!(t.update(&r, *new, id).unwrap());
            live.insert(id, *new);
        }
        _ => {}
    }
}

/// Creates or reopens (`reopen`) a store of `cfg` on `medium`. A log placed on a separate
/// device gets the second half of the medium as that device, so one power cut hits the
/// node pages and the log at the same moment, as it would two drives of one machine.
fn place(
    cfg: &StoreConfig,
    medium: Box<dyn Device>,
    dir: &Path,
    reopen: bool,
) -> spidx::Result<AnyStore> {
    let (layout, _) = layout_cap();
    if cfg.log_placement().is_none_or(|p| p.is_same()) {
        return if reopen {
            cfg.open(medium, &cache(), layout, dir)
        } else {
            cfg.create(medium, &cache(), layout, Some(dir))
        };
    }
    let half = medium.capacity_pages() / 2;
    let (nodes, log) = Partition::split(medium, half)?;
    let files = StoreFiles::writable(Some(dir));
    cfg.with_log_device(
        Box::new(nodes),
        Box::new(log),
        &cache(),
        layout,
        files,
        reopen,
    )
}

/// Whether every operation so far is durable (acknowledged per the sync mode).
fn all_durable(t: &Tree<AnyStore, 2>) -> bool {
    let r = t.store().report();
    r.buffered
        .is_some_and(|b| b.log.gauges.unsynced_commits == 0)
}

/// The last recovery's (operations replayed, records dropped), whatever the store.
fn recovery(r: &StoreReport) -> Option<(u64, u64)> {
    r.recovery
        .as_ref()
        .map(|x| (x.operations, x.records_dropped))
}

/// Runs the workload with a power cut at write `cut` (`u64::MAX`: none). Returns the
/// models after each prefix, how many operations were acknowledged before the cut (None:
/// not even the tree's creation), the number of device writes, and the medium.
fn run(
    cfg: &StoreConfig,
    kind: IndexKind,
    ops: &[Op],
    cut: u64,
    tear: Tear,
    dir: &Path,
) -> (Vec<Live>, Option<usize>, u64, SharedDevice) {
    run_observed(cfg, kind, ops, cut, tear, dir, &mut |_, _| {})
}

/// [`run`], calling `observe(i, medium)` after the `i`-th operation (the damaged-log fuzz
/// keeps earlier versions of the log with it).
fn run_observed(
    cfg: &StoreConfig,
    kind: IndexKind,
    ops: &[Op],
    cut: u64,
    tear: Tear,
    dir: &Path,
    observe: &mut dyn FnMut(usize, &SharedDevice),
) -> (Vec<Live>, Option<usize>, u64, SharedDevice) {
    let (_, cap) = layout_cap();
    let mem = MemoryDevice::open(&MemoryConfig { capacity: 4 << 20 }, PAGE, None).unwrap();
    let medium = SharedDevice::new(Box::new(mem));
    let crash = CrashDevice::new(Box::new(medium.clone()), cut, tear);
    let watch = crash.watch();
    let store = place(cfg, Box::new(crash), dir, false).unwrap();
    let mut t = Tree::create(store, cap, kind).unwrap();
    let mut acked = (!watch.is_cut() && all_durable(&t)).then_some(0);
    let mut models = vec![Live::new()];
    let (mut live, mut next) = (Live::new(), 0u64);
    for (i, op) in ops.iter().enumerate() {
        apply(&mut t, &mut live, &mut next, op);
        models.push(live.clone());
        if !watch.is_cut() && all_durable(&t) {
            acked = Some(i + 1);
        }
        observe(i + 1, &medium);
    }
    // The power goes off: the store is dropped without a checkpoint.
    drop(t);
    (models, acked, watch.writes(), medium)
}

fn recover_and_check(
    cfg: &StoreConfig,
    kind: IndexKind,
    models: &[Live],
    acked: Option<usize>,
    medium: SharedDevice,
    dir: &Path,
    what: &str,
) {
    let (_, cap) = layout_cap();
    let opened = place(cfg, Box::new(medium), dir, true);
    let store = match (opened, acked) {
        (Ok(s), _) => s,
        (Err(_), None) => return, // the creation itself was not durable
        (Err(e), Some(_)) => panic!("{what}: recovery failed: {e}"),
    };
    let Ok(mut t) = Tree::open(store, cap, kind) else {
        assert!(
            acked.is_none(),
            "{what}: the tree's creation was acknowledged"
        );
        return;
    };
    let rep = t.check().unwrap();
    assert!(
        rep.ok(),
        "{what}: checker after recovery: {:?}",
        rep.violations
    );
    let mut got = Live::new();
    let all = Rect {
        min: [-1e9, -1e9],
        max: [1e9, 1e9],
    };
    t.search(MbrPredicate::All, &all, |e| {
        got.insert(e.ptr, e.mbr);
    })
    .unwrap();
    let from = acked.unwrap_or(0);
    assert!(
        models[from..].contains(&got),
        "{what}: the recovered tree ({} objects) is no prefix of the operations from the \
         acknowledged {from} on",
        got.len()
    );
    assert!(
        recovery(&t.store().report()).is_some(),
        "{what}: recovery is reported"
    );
    // The recovered index keeps working.
    t.insert(
        Rect {
            min: [1.0, 1.0],
            max: [2.0, 2.0],
        },
        1 << 40,
    )
    .unwrap();
    assert!(t.check().unwrap().ok(), "{what}: after a new insert");
}

fn crash_cases(seeds: u64, n_ops: usize) {
    for (ci, cfg) in crash_configs().iter().enumerate() {
        for seed in 0..seeds {
            crash_case(ci, cfg, seed, n_ops);
        }
    }
}

/// One power cut: configuration `ci` of [`crash_configs`], seeded by `seed`.
fn crash_case(ci: usize, cfg: &StoreConfig, seed: u64, n_ops: usize) {
    let kinds = [
        IndexKind::RStar(RStarOptions::default()),
        IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        },
    ];
    let kind = kinds[(seed as usize + ci) % 2];
    let workload = ops(seed * 1000 + ci as u64, n_ops);
    let dir = tempfile::tempdir().unwrap();
    let (_, _, total, _) = run(cfg, kind, &workload, u64::MAX, Tear::Lost, dir.path());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cut = rng.gen_range(0..total);
    let tear = match seed % 3 {
        0 => Tear::Lost,
        1 => Tear::Sectors(1),
        _ => Tear::Sectors(rng.gen_range(1..PAGE * 4 / 512)),
    };
    let dir = tempfile::tempdir().unwrap();
    let (models, acked, _, medium) = run(cfg, kind, &workload, cut, tear, dir.path());
    let what = format!("{cfg:?} {kind:?} seed {seed} cut {cut}/{total} {tear:?}");
    recover_and_check(cfg, kind, &models, acked, medium, dir.path(), &what);
}

/// Found by a long run (`SPIDX_LONG_TESTS=1`): FAST* with unit 2 and group commits of 4,
/// a power cut at device write 35 of 42 (or write 34 torn after 4 or more sectors). A
/// flush wrote a node whose buffered state was an image (a rewrite) in place without
/// making the log durable first (no new image to log); the cut lost the unsynced commits
/// that described the new page, and recovery replayed the node's older changes onto it
/// ("corrupted write buffer of node 1: entry 20 does not exist (16 entries)"). Every
/// committed record is now durable before a unit's in-place writes.
#[test]
fn fast_group_commit_power_cut_seed_323_recovers() {
    let configs = crash_configs();
    let cfg = &configs[5];
    let text = format!("{cfg:?}");
    assert!(text.contains("Group(4)"), "configuration 5 changed: {text}");
    crash_case(5, cfg, 323, 150);
}

#[test]
fn power_cuts_at_random_writes_lose_nothing_acknowledged() {
    crash_cases(u64::from(long_cases(40, 1000)), 150);
}

#[test]
fn recovery_without_a_cut_restores_everything_and_reports_it() {
    // No power cut at all, but no checkpoint either: the log alone rebuilds the buffer.
    for cfg in crash_configs() {
        let kind = IndexKind::RStar(RStarOptions::default());
        let workload = ops(7, 300);
        let dir = tempfile::tempdir().unwrap();
        let (models, acked, _, medium) =
            run(&cfg, kind, &workload, u64::MAX, Tear::Lost, dir.path());
        let n = models.len() - 1;
        let what = format!("{cfg:?} without a cut");
        let (_, cap) = layout_cap();
        let store = place(&cfg, Box::new(medium.clone()), dir.path(), true).unwrap();
        let (operations, dropped) = recovery(&store.report()).expect("recovery reported");
        assert!(operations > 0, "{what}");
        // Every operation synced: nothing is left over. Otherwise (`log_sync = "none"`, an
        // unfinished group) the end of the run is a power cut for the unsynced tail: a page
        // of the log written out when it filled can hold records of an operation whose
        // commit never reached the device; they are dropped, and what the acknowledged
        // prefix promises is checked below as after any cut.
        if acked == Some(n) {
            assert_eq!(dropped, 0, "{what}");
        }
        drop(Tree::<AnyStore, 2>::open(store, cap, kind).unwrap());
        recover_and_check(&cfg, kind, &models, acked, medium, dir.path(), &what);
    }
}

#[test]
fn a_corrupted_log_tail_recovers_the_valid_prefix_and_reports_the_rest() {
    let cfg = &crash_configs()[0];
    let kind = IndexKind::RStar(RStarOptions::default());
    let workload = ops(3, 120);
    let dir = tempfile::tempdir().unwrap();
    let (models, _, _, medium) = run(cfg, kind, &workload, u64::MAX, Tear::Lost, dir.path());
    // Damage the log region's last written page: the log is the end of the device.
    let mut dev = medium.clone();
    let cap = dev.capacity_pages();
    let options = cfg.buffered_options().unwrap();
    let log_first = cap - options.log_pages(PAGE).unwrap();
    let mut page = vec![0u8; PAGE];
    let mut last_written = None;
    for p in log_first + 2..cap {
        dev.read(p, &mut page).unwrap();
        if page.iter().any(|b| *b != 0) {
            last_written = Some(p);
        }
    }
    let p = last_written.expect("the log holds records");
    dev.read(p, &mut page).unwrap();
    // From byte 100 to the end of the last written page: nothing valid follows the damage,
    // so it is a torn tail (a damaged record with valid ones after it is damage, which
    // `a_flip_in_the_middle_of_a_log_is_damage_for_every_logging_store` covers).
    for b in &mut page[100..] {
        *b ^= 0x5a;
    }
    dev.write(p, &page).unwrap();
    let (layout, cap) = layout_cap();
    let store = cfg
        .open(Box::new(medium), &cache(), layout, dir.path())
        .unwrap();
    let rec = store.report().recovery.unwrap();
    assert!(rec.log_end.contains("invalid record"), "{rec:?}");
    let mut t = Tree::open(store, cap, kind).unwrap();
    assert!(t.check().unwrap().ok());
    let mut got = Live::new();
    t.search(
        MbrPredicate::All,
        &Rect {
            min: [-1e9, -1e9],
            max: [1e9, 1e9],
        },
        |e| {
            got.insert(e.ptr, e.mbr);
        },
    )
    .unwrap();
    assert!(models.contains(&got), "a prefix of the operations survives");
}

/// Copies of the direct store's files, taken before a checkpoint: a power cut during the
/// checkpoint's device writes kills the process before it saves `store.json` and empties
/// the journal (the crash device cuts only device writes, so the test undoes those saves).
fn backup(dir: &Path) -> Vec<(std::path::PathBuf, Option<Vec<u8>>)> {
    ["store.json", "direct.journal"]
        .iter()
        .map(|n| {
            let p = dir.join(n);
            let b = std::fs::read(&p).ok();
            (p, b)
        })
        .collect()
}

fn restore(files: Vec<(std::path::PathBuf, Option<Vec<u8>>)>) {
    for (p, b) in files {
        match b {
            Some(b) => std::fs::write(&p, b).unwrap(),
            None => {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
}

/// The direct store with its rollback journal under a power cut at write `cut`, with a
/// checkpoint every `every` operations; the process dies at the end of the operation (or
/// checkpoint) during which the power went off. Returns the models after each prefix, the
/// operations the last completed checkpoint covers, and the medium.
fn direct_run(
    kind: IndexKind,
    ops: &[Op],
    every: usize,
    cut: u64,
    tear: Tear,
    dir: &Path,
) -> (Vec<Live>, usize, u64, SharedDevice) {
    let (layout, cap) = layout_cap();
    let mem = MemoryDevice::open(&MemoryConfig { capacity: 4 << 20 }, PAGE, None).unwrap();
    let medium = SharedDevice::new(Box::new(mem));
    let crash = CrashDevice::new(Box::new(medium.clone()), cut, tear);
    let watch = crash.watch();
    let files = StoreFiles {
        dir: Some(dir),
        persistent_device: true,
        read_only: false,
        accept_loss: false,
    };
    let mut store = StoreConfig::direct()
        .create_in(Box::new(crash), &cache(), layout, files)
        .unwrap();
    store.save_header().unwrap();
    let mut t = Tree::create(store, cap, kind).unwrap();
    let mut models = vec![Live::new()];
    let (mut live, mut next, mut checkpoint) = (Live::new(), 0u64, 0);
    for (i, op) in ops.iter().enumerate() {
        if watch.is_cut() {
            break;
        }
        apply(&mut t, &mut live, &mut next, op);
        models.push(live.clone());
        if (i + 1) % every == 0 && !watch.is_cut() {
            let saved = backup(dir);
            NodeStore::<2>::flush(t.store_mut()).unwrap();
            if watch.is_cut() {
                restore(saved);
                break;
            }
            checkpoint = i + 1;
        }
    }
    drop(t);
    (models, checkpoint, watch.writes(), medium)
}

fn direct_cases(seeds: u64, n_ops: usize) -> u64 {
    let kinds = [
        IndexKind::RStar(RStarOptions::default()),
        IndexKind::RTree {
            split: SplitAlgorithm::Quadratic,
        },
    ];
    let mut restored_total = 0;
    for seed in 0..seeds {
        let kind = kinds[seed as usize % 2];
        let every = 10 + (seed as usize * 7) % 40;
        let workload = ops(seed * 77 + 5, n_ops);
        let dir = tempfile::tempdir().unwrap();
        let (_, _, total, _) = direct_run(kind, &workload, every, u64::MAX, Tear::Lost, dir.path());
        let mut rng = ChaCha8Rng::seed_from_u64(seed + 1000);
        let cut = rng.gen_range(0..total);
        let tear = match seed % 3 {
            0 => Tear::Lost,
            1 => Tear::Sectors(1),
            _ => Tear::Sectors(rng.gen_range(1..PAGE / 512)),
        };
        let dir = tempfile::tempdir().unwrap();
        let (models, checkpoint, _, medium) =
            direct_run(kind, &workload, every, cut, tear, dir.path());
        let what = format!("direct {kind:?} seed {seed} every {every} cut {cut}/{total} {tear:?}");
        let (layout, cap) = layout_cap();
        let files = StoreFiles {
            dir: Some(dir.path()),
            persistent_device: true,
            read_only: false,
            accept_loss: false,
        };
        let store = StoreConfig::direct()
            .open_in(Box::new(medium), &cache(), layout, files)
            .unwrap_or_else(|e| panic!("{what}: reopening failed: {e}"));
        restored_total += store.report().journal.unwrap().restored;
        let mut t = if NodeStore::<2>::meta(&store).is_none() {
            Tree::create(store, cap, kind).unwrap()
        } else {
            Tree::open(store, cap, kind).unwrap()
        };
        let rep = t.check().unwrap();
        assert!(rep.ok(), "{what}: checker: {:?}", rep.violations);
        let mut got = Live::new();
        let all = Rect {
            min: [-1e9, -1e9],
            max: [1e9, 1e9],
        };
        t.search(MbrPredicate::All, &all, |e| {
            got.insert(e.ptr, e.mbr);
        })
        .unwrap();
        assert!(
            got == models[checkpoint],
            "{what}: the recovered tree ({} objects) is not the last checkpoint's ({} \
             operations, {} objects)",
            got.len(),
            checkpoint,
            models[checkpoint].len()
        );
    }
    restored_total
}

#[test]
fn direct_store_power_cuts_roll_back_to_the_last_checkpoint() {
    let restored = direct_cases(u64::from(long_cases(24, 1000)), 200);
    assert!(restored > 0, "some cuts needed the journal");
}

// ---------------------------------------------------------------------------------------
// The damaged-log fuzz: recovery over logs and journals damaged by byte flips, truncations
// and tail rollbacks (earlier contents of the log's pages put back) must never panic, and
// must either recover an index that passes the checker and holds exactly the objects of a
// prefix of the operations, or fail with an error. CI runs a bounded sample per store;
// `SPIDX_LONG_TESTS=1` runs 10,000 damages per store, `SPIDX_DAMAGE_CASES=N` N of them.

/// The damages per store: `SPIDX_DAMAGE_CASES`, else 10,000 with `SPIDX_LONG_TESTS`, else
/// `short`.
fn damage_cases(short: u32) -> u32 {
    match std::env::var("SPIDX_DAMAGE_CASES") {
        Ok(n) => n.parse().expect("SPIDX_DAMAGE_CASES is a number"),
        Err(_) => long_cases(short, 10_000),
    }
}

/// The pages of `medium` holding the log of `cfg` (placed on the same device: the end of
/// the node partition).
fn log_pages(cfg: &StoreConfig, medium: &dyn Device) -> std::ops::Range<u64> {
    assert!(cfg.log_placement().is_some_and(|p| p.is_same()));
    let cap = medium.capacity_pages();
    cap - cfg.buffered_options().unwrap().log_pages(PAGE).unwrap()..cap
}

/// All bytes of `dev`.
fn image(dev: &mut dyn Device) -> Vec<u8> {
    let mut b = vec![0u8; dev.capacity_pages() as usize * dev.page_size()];
    dev.read(0, &mut b).unwrap();
    b
}

/// A memory device holding `bytes`.
fn memory_with(bytes: &[u8]) -> SharedDevice {
    let mut mem = MemoryDevice::open(
        &MemoryConfig {
            capacity: bytes.len() as u64,
        },
        PAGE,
        None,
    )
    .unwrap();
    mem.write(0, bytes).unwrap();
    SharedDevice::new(Box::new(mem))
}

/// A copy of the files of directory `from` in a new temporary directory.
fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.path().join(e.file_name())).unwrap();
        }
    }
    to
}

/// What a damaged recovery gave.
#[derive(Debug, Default)]
struct Outcomes {
    /// Recovered, checker passing, a prefix of the operations.
    recovered: u32,
    /// Refused with an error (opening, the tree, or the checker's violations, which make
    /// `spidx recover` fail).
    refused: u32,
}

/// Opens the store of `cfg` over a damaged `medium` and judges it (see the section
/// comment); panics (the test fails) on a panic inside recovery or a wrong answer.
fn judge(
    cfg: &StoreConfig,
    kind: IndexKind,
    models: &[Live],
    medium: SharedDevice,
    dir: &Path,
    what: &str,
    out: &mut Outcomes,
) {
    let (_, cap) = layout_cap();
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let store = place(cfg, Box::new(medium), dir, true)?;
        let mut t = Tree::<AnyStore, 2>::open(store, cap, kind)?;
        let rep = t.check()?;
        if !rep.ok() {
            return Ok(None);
        }
        let mut got = Live::new();
        let all = Rect {
            min: [-1e9, -1e9],
            max: [1e9, 1e9],
        };
        t.search(MbrPredicate::All, &all, |e| {
            got.insert(e.ptr, e.mbr);
        })?;
        Ok::<_, spidx::Error>(Some(got))
    }));
    match opened {
        Err(p) => panic!(
            "{what}: recovery panicked: {}",
            p.downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("?")
        ),
        Ok(Ok(Some(got))) => {
            assert!(
                models.contains(&got),
                "{what}: recovery succeeded with {} objects, the state after no prefix of the \
                 operations",
                got.len()
            );
            out.recovered += 1;
        }
        Ok(Ok(None) | Err(_)) => out.refused += 1,
    }
}

/// One damage of the log bytes `log` (the log's pages of the medium): a flip of 1 to 3
/// bytes (mostly in written pages), a truncation (zeros from a byte on), or a rollback of
/// the last written pages to an earlier version of the log (`earlier`).
fn damage(rng: &mut ChaCha8Rng, log: &mut [u8], earlier: &[Vec<u8>]) -> String {
    let written: Vec<usize> = (0..log.len() / PAGE)
        .filter(|p| log[p * PAGE..(p + 1) * PAGE].iter().any(|b| *b != 0))
        .collect();
    let in_written = |rng: &mut ChaCha8Rng| {
        let p = written[rng.gen_range(0..written.len())];
        p * PAGE + rng.gen_range(0..PAGE)
    };
    match rng.gen_range(0..8) {
        0..=3 => {
            let mut at = Vec::new();
            for _ in 0..rng.gen_range(1..=3) {
                let i = if rng.gen_range(0..10) < 8 {
                    in_written(rng)
                } else {
                    rng.gen_range(0..log.len())
                };
                log[i] ^= rng.gen_range(1..=255u8);
                at.push(i);
            }
            format!("flip at log bytes {at:?}")
        }
        4 | 5 => {
            let from = in_written(rng);
            log[from..].fill(0);
            format!("truncation at log byte {from}")
        }
        _ => {
            let old = &earlier[rng.gen_range(0..earlier.len())];
            let changed: Vec<usize> = (0..log.len() / PAGE)
                .filter(|p| log[p * PAGE..(p + 1) * PAGE] != old[p * PAGE..(p + 1) * PAGE])
                .collect();
            if changed.is_empty() {
                return "rollback to an identical log".into();
            }
            // The last `k` pages that changed since (by address: the tail of the stream,
            // and the region headers when every page is rolled back).
            let k = rng.gen_range(1..=changed.len());
            for &p in &changed[changed.len() - k..] {
                log[p * PAGE..(p + 1) * PAGE].copy_from_slice(&old[p * PAGE..(p + 1) * PAGE]);
            }
            format!("rollback of {k} of {} changed log pages", changed.len())
        }
    }
}

/// Damages the log of a crashed store of every logging kind `cases` times and judges each
/// recovery.
fn damaged_log_cases(cfg: &StoreConfig, ci: usize, cases: u32) -> Outcomes {
    let kind = IndexKind::RStar(RStarOptions::default());
    let mut out = Outcomes::default();
    let mut seed = 0u64;
    let mut done = 0;
    while done < cases {
        let workload = ops(seed * 7919 + ci as u64, 150);
        let dir = tempfile::tempdir().unwrap();
        let (_, _, total, _) = run(cfg, kind, &workload, u64::MAX, Tear::Lost, dir.path());
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xda3a6e);
        // A crash at a random write, or none (killed without a checkpoint).
        let cut = if seed % 3 == 2 {
            u64::MAX
        } else {
            rng.gen_range(total / 2..total)
        };
        let dir = tempfile::tempdir().unwrap();
        let mut earlier = Vec::new();
        let mut keep = |i: usize, m: &SharedDevice| {
            if i.is_multiple_of(10) {
                let mut m = m.clone();
                let range = log_pages(cfg, &m);
                let mut b = vec![0u8; (range.end - range.start) as usize * PAGE];
                m.read(range.start, &mut b).unwrap();
                earlier.push(b);
            }
        };
        let (models, _, _, mut medium) = run_observed(
            cfg,
            kind,
            &workload,
            cut,
            Tear::Sectors(1),
            dir.path(),
            &mut keep,
        );
        let clean = image(&mut medium);
        let range = log_pages(cfg, &medium);
        let (lo, hi) = (range.start as usize * PAGE, range.end as usize * PAGE);
        // Many damages of one crashed store (each on a copy of the medium and directory).
        for _ in 0..cases.min(50) {
            let mut bytes = clean.clone();
            let how = damage(&mut rng, &mut bytes[lo..hi], &earlier);
            let what = format!("{cfg:?} seed {seed} cut {cut}: {how}");
            let copy = copy_dir(dir.path());
            judge(
                cfg,
                kind,
                &models,
                memory_with(&bytes),
                copy.path(),
                &what,
                &mut out,
            );
            done += 1;
            if done == cases {
                break;
            }
        }
        seed += 1;
    }
    out
}

/// The logging stores of the damaged-log fuzz: FAST, eFIND, the LCR-tree and RFTL, each
/// with its log synced at every operation, and FAST and eFIND with the default (`none`).
fn damage_configs() -> Vec<StoreConfig> {
    let c = crash_configs();
    let pick = |k: &str, sync: &str| {
        c.iter()
            .find(|x| {
                let t = format!("{x:?}");
                t.starts_with(k) && t.contains(sync) && !t.contains("Separate")
            })
            .unwrap_or_else(|| panic!("no {k} {sync} crash configuration"))
            .clone()
    };
    vec![
        pick("Fast", "EachOp"),
        pick("Efind", "EachOp"),
        pick("Lcr", "EachOp"),
        pick("Rftl", "EachOp"),
        pick("Fast", "sync: None"),
        pick("Efind", "sync: None"),
    ]
}

#[test]
fn damaged_logs_never_panic_nor_recover_a_wrong_index() {
    let cases = damage_cases(150);
    for (ci, cfg) in damage_configs().iter().enumerate() {
        let out = damaged_log_cases(cfg, ci, cases);
        eprintln!("{cfg:?}: {out:?}");
        assert_eq!(out.recovered + out.refused, cases);
    }
}
