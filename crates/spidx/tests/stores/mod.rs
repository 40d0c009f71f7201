//! The node-store configurations every store-generic test runs over: direct, FAST, eFIND,
//! the LCR-tree and RFTL
//! ([`store_configs`], [`crash_configs`]).

#![allow(dead_code)]

use spidx::cache::CachePolicy;
use spidx::store::efind::{self, EfindConfig, TemporalControl};
use spidx::store::fast::{FastOptions, FlushPolicy};
use spidx::store::lcr::LcrOptions;
use spidx::store::log::LogSync;
use spidx::store::rftl::RftlOptions;
use spidx::store::StoreConfig;

/// Node page size of the store tests (small pages: many nodes, many flushes).
pub const PAGE: usize = 1024;

/// A FAST configuration with a small buffer so that flushes really happen.
pub fn fast(policy: FlushPolicy, unit: u32, buffer: u64, sync: LogSync) -> StoreConfig {
    StoreConfig::Fast(FastOptions {
        log_sync: sync,
        ..FastOptions::new(buffer, unit, policy)
    })
}

/// An LCR-tree configuration with a small buffer so that flushes (and merges) really happen
/// (a 1 MB log: the test devices are small).
pub fn lcr(buffer: u64, sync: LogSync) -> StoreConfig {
    StoreConfig::Lcr(LcrOptions {
        log_size: Some(1 << 20),
        log_sync: sync,
        ..LcrOptions::new(buffer)
    })
}

/// An RFTL configuration with a small buffer and a low compaction threshold so that
/// flushes, shared unit pages and compactions really happen (a 1 MB log: the test devices
/// are small).
pub fn rftl(buffer: u64, max_pages: u32, sync: LogSync) -> StoreConfig {
    StoreConfig::Rftl(RftlOptions {
        max_pages,
        log_size: Some(1 << 20),
        log_sync: sync,
        ..RftlOptions::new(buffer)
    })
}

/// An eFIND configuration with a small total buffer so that flushes really happen.
pub fn efind(
    policy: efind::FlushPolicy,
    unit: usize,
    read: CachePolicy,
    tc: TemporalControl,
    sync: LogSync,
) -> StoreConfig {
    let mut c = EfindConfig::with_buffer(8 << 10);
    c.flush_policy = policy;
    c.flushing_unit = unit;
    c.read_policy = read;
    c.read_buffer_perc = Some(if read == CachePolicy::None { 0.0 } else { 25.0 });
    c.temporal_control = tc;
    c.log_sync = sync;
    StoreConfig::Efind(c)
}

const POLICIES: [FlushPolicy; 4] = [
    FlushPolicy::FlushAll,
    FlushPolicy::Random,
    FlushPolicy::Fast,
    FlushPolicy::FastStar,
];

/// Every store configuration the property tests run: direct, and FAST with every policy
/// and flushing units 1 to 5 over an 8 KB buffer.
pub fn store_configs() -> Vec<StoreConfig> {
    let mut v = vec![StoreConfig::direct()];
    for p in POLICIES {
        for unit in 1..=5 {
            v.push(fast(p, unit, 8 << 10, LogSync::EachOp));
        }
    }
    let reads = [
        (CachePolicy::Lru, TemporalControl::Both),
        (CachePolicy::Hlru, TemporalControl::Reads),
        (CachePolicy::S2q, TemporalControl::Writes),
        (CachePolicy::TwoQ, TemporalControl::Both),
        (CachePolicy::None, TemporalControl::None),
    ];
    for (i, p) in efind::FlushPolicy::ALL.into_iter().enumerate() {
        let (read, tc) = reads[i];
        v.push(efind(p, 1 + i % 4, read, tc, LogSync::EachOp));
    }
    v.push(lcr(4 << 10, LogSync::EachOp));
    v.push(lcr(16 << 10, LogSync::EachOp));
    v.push(rftl(4 << 10, 2, LogSync::EachOp));
    v.push(rftl(8 << 10, 4, LogSync::EachOp));
    v.push(rftl(16 << 10, 1, LogSync::EachOp));
    v
}

/// `cfg` with its log placed as `placement` says (`same`, `uncounted`, `separate:...`).
/// Set through the options' written form, as users set it.
pub fn placed(cfg: StoreConfig, placement: &str) -> StoreConfig {
    let mut v = serde_json::to_value(cfg).unwrap();
    v["log_device"] = placement.into();
    serde_json::from_value(v).unwrap()
}

/// Every log placement other than the default, over a FAST and an eFIND configuration
/// (the property tests run them besides [`store_configs`]).
pub fn placement_configs() -> Vec<StoreConfig> {
    let f = fast(FlushPolicy::FastStar, 3, 8 << 10, LogSync::EachOp);
    let e = efind(
        efind::FlushPolicy::Mthao,
        2,
        CachePolicy::Lru,
        TemporalControl::Both,
        LogSync::Group(3),
    );
    vec![
        placed(f.clone(), "uncounted"),
        placed(f, "separate:memory"),
        placed(lcr(8 << 10, LogSync::EachOp), "uncounted"),
        placed(rftl(8 << 10, 3, LogSync::EachOp), "uncounted"),
        placed(rftl(8 << 10, 3, LogSync::Group(3)), "separate:memory"),
        placed(e.clone(), "uncounted"),
        placed(e, "separate:memory"),
    ]
}

/// Crash-safe configurations (the direct store writes in place without a log and is not
/// crash-safe): every FAST policy, units 1 and 3/5, each sync mode, and a FAST and an
/// eFIND log on a separate device (an uncounted log is not crash-safe: never synced).
pub fn crash_configs() -> Vec<StoreConfig> {
    vec![
        fast(FlushPolicy::FastStar, 1, 6 << 10, LogSync::EachOp),
        fast(FlushPolicy::FastStar, 5, 6 << 10, LogSync::EachOp),
        fast(FlushPolicy::Fast, 3, 4 << 10, LogSync::EachOp),
        fast(FlushPolicy::Random, 2, 4 << 10, LogSync::EachOp),
        fast(FlushPolicy::FlushAll, 4, 8 << 10, LogSync::EachOp),
        fast(FlushPolicy::FastStar, 2, 6 << 10, LogSync::Group(4)),
        fast(FlushPolicy::Fast, 2, 6 << 10, LogSync::None),
        efind(
            efind::FlushPolicy::Mthao,
            3,
            CachePolicy::Lru,
            TemporalControl::Both,
            LogSync::EachOp,
        ),
        efind(
            efind::FlushPolicy::M,
            1,
            CachePolicy::TwoQ,
            TemporalControl::Reads,
            LogSync::EachOp,
        ),
        efind(
            efind::FlushPolicy::Mth,
            5,
            CachePolicy::None,
            TemporalControl::Writes,
            LogSync::Group(4),
        ),
        efind(
            efind::FlushPolicy::Mt,
            2,
            CachePolicy::Hlru,
            TemporalControl::None,
            LogSync::None,
        ),
        placed(
            fast(FlushPolicy::FastStar, 3, 6 << 10, LogSync::EachOp),
            "separate:memory",
        ),
        lcr(4 << 10, LogSync::EachOp),
        lcr(8 << 10, LogSync::Group(4)),
        lcr(6 << 10, LogSync::None),
        placed(lcr(6 << 10, LogSync::EachOp), "separate:memory"),
        rftl(4 << 10, 2, LogSync::EachOp),
        rftl(6 << 10, 3, LogSync::Group(4)),
        rftl(6 << 10, 2, LogSync::None),
        placed(rftl(6 << 10, 4, LogSync::EachOp), "separate:memory"),
        placed(
            efind(
                efind::FlushPolicy::Mthao,
                2,
                CachePolicy::Lru,
                TemporalControl::Both,
                LogSync::Group(3),
            ),
            "separate:memory",
        ),
    ]
}

/// Test cases: `short` normally, `long` with `SPIDX_LONG_TESTS` set.
pub fn long_cases(short: u32, long: u32) -> u32 {
    if std::env::var_os("SPIDX_LONG_TESTS").is_some() {
        long
    } else {
        short
    }
}
