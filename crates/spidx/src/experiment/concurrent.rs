//! Concurrent query streams on a simulated device (Emrich et al. 2010, §4–5.1): N streams
//! each issue their queries back to back, and their page requests interleave on one
//! device, as a deterministic discrete-event simulation in virtual time. No OS thread is
//! involved: the device models keep busy-until times, so the simulation only has to
//! submit every request at the right virtual time, in time order.
//!
//! How it fits the layers: the runner first runs every query once on the index (or the
//! scan) the ordinary way, recording the device requests each query made with a
//! [`Tap`](crate::device::tap::Tap); the answers come from that run. This module then
//! replays those request sequences ("traces") on a second instance of the device, loaded
//! from the same saved state:
//!
//! * query `i` belongs to stream `i mod N`; a stream submits its next request when its
//!   previous one completes, and starts its next query when its last request completes;
//! * the request of the stream whose submission time is earliest is booked next (ties: the
//!   lower stream number), through [`Device::submit_at`]; its completion time is the
//!   device's [`Device::completed_ns`] (an HDD serves one request at a time, an SSD
//!   overlaps requests on its dies and channels);
//! * **instances**: `own` gives every stream its own copy of the index (as in the paper);
//!   `shared` lets all streams read the one index. Copies are not written: on a device whose
//!   read time does not depend on what a page holds (the disk model) every copy gets its own
//!   contiguous partition, sized by the pages the queries actually touch (index nodes and
//!   object records alike): the touched pages, in their original order, are packed without
//!   the gaps between them (see [`Layout`]), and copy `s` starts at `s · used`, so the disk
//!   seeks between copies and N copies fit wherever N times the touched pages fit; on flash
//!   models, which serve never-written pages without a die access, copy `s` reads the
//!   original's pages (an SSD's read time depends on the die holding a page, and copies
//!   written alike would be striped alike). Either way each copy has its own cache pages;
//! * **memory budget**: an LRU page cache shared by all streams stands in for the OS page
//!   cache of the paper's 1 GB machine: a read whose pages are all cached completes at
//!   once and reaches no device; otherwise the whole request goes to the device and its
//!   pages are cached. Copies do not share cache pages, so more streams mean fewer hits
//!   per stream.
//!
//! Only device time is on the virtual timeline (CPU time is measured in the recording run
//! and reported apart). With one stream and no memory budget the replay books exactly
//! the requests of the recording run at exactly the same times, so it reproduces its
//! counts and device times (tested below and in the runner's tests).

use std::collections::BinaryHeap;

use serde::Serialize;

use crate::cache::{CacheConfig, CachePolicy};
use crate::device::tap::Request;
use crate::device::{Device, DeviceStats};
use crate::{Error, Result};

/// Whether streams share one index or each query its own copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Instances {
    /// Every stream has its own copy of the index (Emrich et al.'s setting).
    Own,
    /// All streams query one index.
    Shared,
}

impl Instances {
    /// `own` or `shared`.
    pub fn name(self) -> &'static str {
        match self {
            Instances::Own => "own",
            Instances::Shared => "shared",
        }
    }
}

/// One simulation's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimConfig {
    /// Concurrent streams (at least 1).
    pub streams: usize,
    /// Own copies or one shared index.
    pub instances: Instances,
    /// Shared page cache (the memory budget) in bytes; 0 = none.
    pub memory_bytes: u64,
}

/// What a simulation measured.
#[derive(Debug, Clone, Default)]
pub struct SimResult {
    /// Virtual latency of every query in ns (from its start, when its stream finished the
    /// previous one, to the completion of its last request), in query order.
    pub latency_ns: Vec<u64>,
    /// Virtual time from the first submission to the last completion.
    pub makespan_ns: u64,
    /// The device's counters during the simulation.
    pub device: DeviceStats,
    /// Read requests served from the shared cache.
    pub cache_hits: u64,
    /// Read requests that went to the device.
    pub cache_misses: u64,
    /// Most requests outstanding on the device at once.
    pub max_outstanding: usize,
    /// Own copies were laid out apart on the device (else read at the original's pages).
    pub copies_apart: bool,
}

/// Per-query latency statistics in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean_s: f64,
    /// Median (nearest rank).
    pub p50_s: f64,
    /// 95th percentile (nearest rank).
    pub p95_s: f64,
    /// 99th percentile (nearest rank).
    pub p99_s: f64,
    /// Largest.
    pub max_s: f64,
}

impl Latency {
    /// The statistics of `ns` (nearest-rank percentiles: the smallest value with at least
    /// p % of the values at or below it).
    pub fn of(ns: &[u64]) -> Latency {
        if ns.is_empty() {
            return Latency::default();
        }
        let mut v = ns.to_vec();
        v.sort_unstable();
        let rank = |p: f64| {
            let r = ((p / 100.0) * v.len() as f64).ceil() as usize;
            v[r.clamp(1, v.len()) - 1] as f64 / 1e9
        };
        Latency {
            mean_s: v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e9,
            p50_s: rank(50.0),
            p95_s: rank(95.0),
            p99_s: rank(99.0),
            max_s: *v.last().expect("non-empty") as f64 / 1e9,
        }
    }
}

/// The pages the traces touch, packed: one copy's partition (`own` instances). Runs of
/// touched pages keep their order and their inner offsets, so a request of several pages
/// stays one contiguous request; the gaps between runs (pages no query reads, such as the
/// free space between the index's nodes and its object records) are left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Runs of touched pages: (first page, pages, offset in the partition), by first page.
    runs: Vec<(u64, u64, u64)>,
    /// Pages of one partition: the touched pages.
    used: u64,
}

impl Layout {
    /// The packed layout of the pages `traces` touch.
    pub fn of(traces: &[Vec<Request>]) -> Layout {
        let mut spans: Vec<(u64, u64)> = traces
            .iter()
            .flatten()
            .filter(|r| r.pages > 0)
            .map(|r| (r.page, r.page + r.pages))
            .collect();
        spans.sort_unstable();
        let mut layout = Layout::default();
        let mut open: Option<(u64, u64)> = None;
        let close = |l: &mut Layout, (a, b): (u64, u64)| {
            l.runs.push((a, b - a, l.used));
            l.used += b - a;
        };
        for (a, b) in spans {
            open = match open {
                Some((oa, ob)) if a <= ob => Some((oa, ob.max(b))),
                Some(run) => {
                    close(&mut layout, run);
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        if let Some(run) = open {
            close(&mut layout, run);
        }
        layout
    }

    /// Pages of one partition.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The partition offset of `page`, which a trace touched.
    pub(crate) fn offset(&self, page: u64) -> u64 {
        let i = self.runs.partition_point(|r| r.0 <= page);
        let (first, len, at) = self.runs[i.checked_sub(1).expect("a touched page")];
        debug_assert!(page < first + len, "page {page} was not touched");
        at + (page - first)
    }
}

/// A stream's position: (next submission time, stream), smallest time first.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Ready(std::cmp::Reverse<(u64, usize)>);

/// Replays `traces` (query `i`'s device requests, in order) as `cfg.streams` concurrent
/// streams on `device`, starting at its current virtual time. Traces must hold reads only.
pub fn simulate(
    device: &mut dyn Device,
    traces: &[Vec<Request>],
    cfg: &SimConfig,
) -> Result<SimResult> {
    let n = cfg.streams;
    if n == 0 {
        return Err(Error::invalid("streams", "must be at least 1"));
    }
    if traces.iter().flatten().any(|r| r.write) {
        return Err(Error::invalid(
            "concurrent streams",
            "the queries wrote to the device; only read-only queries can be replayed",
        ));
    }
    let copies = if cfg.instances == Instances::Own {
        n as u64
    } else {
        1
    };
    let layout = Layout::of(traces);
    let apart = copies > 1 && device.read_time_ignores_contents();
    if apart {
        let need = layout.used().saturating_mul(copies);
        if need > device.capacity_pages() {
            return Err(Error::invalid(
                "instances",
                format!(
                    "{copies} own copies of the {} pages the queries touch need {need} pages; the device has {}",
                    layout.used(),
                    device.capacity_pages()
                ),
            ));
        }
    }
    let page_size = device.page_size();
    let cache_config = match cfg.memory_bytes {
        0 => CacheConfig::none(),
        b => CacheConfig::new(CachePolicy::Lru, b),
    };
    let mut cache = cache_config
        .build_policy(page_size)
        .map_err(|e| Error::invalid("memory", e.to_string()))?;
    let mut evicted = Vec::new();
    let before = device.stats();
    let t0 = device.device_ns().max(device.completed_ns());
    // The queries of each stream, in order.
    let mut queue: Vec<std::collections::VecDeque<usize>> = vec![Default::default(); n];
    for q in 0..traces.len() {
        queue[q % n].push_back(q);
    }
    // Per stream: the running query, its start time and its next request.
    let mut current: Vec<Option<(usize, u64, usize)>> = vec![None; n];
    let mut res = SimResult {
        latency_ns: vec![0; traces.len()],
        ..Default::default()
    };
    let mut ready = BinaryHeap::new();
    for s in 0..n {
        ready.push(Ready(std::cmp::Reverse((t0, s))));
    }
    let mut buf = Vec::new();
    let mut in_service: BinaryHeap<std::cmp::Reverse<u64>> = BinaryHeap::new();
    let mut last = t0;
    while let Some(Ready(std::cmp::Reverse((t, s)))) = ready.pop() {
        // Start queries until one has a request (queries without any complete at once).
        let (q, start, i) = match current[s] {
            Some(c) => c,
            None => loop {
                let Some(q) = queue[s].pop_front() else {
                    break (usize::MAX, t, 0);
                };
                if traces[q].is_empty() {
                    res.latency_ns[q] = 0;
                    continue;
                }
                break (q, t, 0);
            },
        };
        if q == usize::MAX {
            continue;
        }
        let r = traces[q][i];
        // Cache pages are the copy's own; device pages are too if copies are laid out apart.
        let page = if copies > 1 {
            s as u64 * layout.used() + layout.offset(r.page)
        } else {
            r.page
        };
        let at = if apart { page } else { r.page };
        let hit = (page..page + r.pages).all(|p| cache.contains(p));
        let done = if hit {
            for p in page..page + r.pages {
                cache.touch(p, 0);
            }
            res.cache_hits += 1;
            t
        } else {
            buf.resize(r.pages as usize * page_size, 0);
            device.submit_at(t)?;
            device.read(at, &mut buf)?;
            let done = device.completed_ns();
            for p in page..page + r.pages {
                cache.admit(p, 0, &mut evicted);
            }
            evicted.clear();
            res.cache_misses += 1;
            while in_service.peek().is_some_and(|d| d.0 <= t) {
                in_service.pop();
            }
            in_service.push(std::cmp::Reverse(done));
            res.max_outstanding = res.max_outstanding.max(in_service.len());
            done
        };
        last = last.max(done);
        if i + 1 < traces[q].len() {
            current[s] = Some((q, start, i + 1));
        } else {
            res.latency_ns[q] = done - start;
            current[s] = None;
        }
        ready.push(Ready(std::cmp::Reverse((done, s))));
    }
    res.makespan_ns = last - t0;
    res.copies_apart = apart;
    res.device = device.stats().since(&before);
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::hdd::{HddConfig, SimHdd};
    use crate::device::ssd::{SimSsd, SsdConfig};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn reads(pages: &[u64]) -> Vec<Request> {
        pages
            .iter()
            .map(|&page| Request {
                page,
                pages: 1,
                write: false,
            })
            .collect()
    }

    fn random_traces(n: usize, span: u64, seed: u64) -> Vec<Vec<Request>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let len = rng.gen_range(0..12);
                reads(&(0..len).map(|_| rng.gen_range(0..span)).collect::<Vec<_>>())
            })
            .collect()
    }

    fn cfg(streams: usize, instances: Instances, memory_bytes: u64) -> SimConfig {
        SimConfig {
            streams,
            instances,
            memory_bytes,
        }
    }

    /// One stream: every request is submitted when the previous one completes, exactly as
    /// running the queries one after the other on the device does.
    #[test]
    fn one_stream_reproduces_the_sequential_run() {
        let traces = random_traces(200, 10_000, 1);
        let hdd = || SimHdd::open(&HddConfig::desktop_7200(), 4096, None).unwrap();
        let mut direct = hdd();
        let mut want = Vec::new();
        let mut buf = vec![0u8; 4096];
        for t in &traces {
            let a = direct.device_ns();
            for r in t {
                direct.read(r.page, &mut buf).unwrap();
            }
            want.push(direct.device_ns() - a);
        }
        for inst in [Instances::Own, Instances::Shared] {
            let mut dev = hdd();
            let got = simulate(&mut dev, &traces, &cfg(1, inst, 0)).unwrap();
            assert_eq!(got.latency_ns, want);
            assert_eq!(got.device, direct.stats());
            assert_eq!(got.makespan_ns, want.iter().sum::<u64>());
        }
        // The SSD model (queue depth 1 in the preset) as well.
        let ssd = || SimSsd::open(&SsdConfig::v300(), 4096, None).unwrap();
        let mut direct = ssd();
        for p in 0..10_000 {
            direct.write(p, &buf).unwrap();
        }
        direct.sync().unwrap();
        let mut replay = ssd();
        for p in 0..10_000 {
            replay.write(p, &buf).unwrap();
        }
        replay.sync().unwrap();
        let before = direct.stats();
        let mut want = Vec::new();
        for t in &traces {
            let a = direct.device_ns();
            for r in t {
                direct.read(r.page, &mut buf).unwrap();
            }
            want.push(direct.device_ns() - a);
        }
        let got = simulate(&mut replay, &traces, &cfg(1, Instances::Shared, 0)).unwrap();
        assert_eq!(got.latency_ns, want);
        assert_eq!(got.device, direct.stats().since(&before));
    }

    #[test]
    fn streams_interleave_on_the_device_deterministically() {
        let traces = random_traces(300, 10_000, 2);
        let hdd = || SimHdd::open(&HddConfig::desktop_7200(), 4096, None).unwrap();
        let one = simulate(&mut hdd(), &traces, &cfg(1, Instances::Own, 0)).unwrap();
        let ten = simulate(&mut hdd(), &traces, &cfg(10, Instances::Own, 0)).unwrap();
        let again = simulate(&mut hdd(), &traces, &cfg(10, Instances::Own, 0)).unwrap();
        assert_eq!(ten.latency_ns, again.latency_ns);
        // The same requests reach the disk; queued behind each other they take longer per
        // query, and one actuator serves them one at a time.
        assert_eq!(ten.device.host.read_ops, one.device.host.read_ops);
        let mean = |r: &SimResult| Latency::of(&r.latency_ns).mean_s;
        assert!(
            mean(&ten) > 3.0 * mean(&one),
            "{} vs {}",
            mean(&ten),
            mean(&one)
        );
        // Requests queue at the disk: up to one per stream outstanding.
        assert!(
            (2..=10).contains(&ten.max_outstanding),
            "{}",
            ten.max_outstanding
        );
        assert_eq!(one.max_outstanding, 1);
        // An SSD overlaps requests of different streams on its dies.
        let ssd = || {
            let mut d = SimSsd::open(&SsdConfig::v300(), 4096, None).unwrap();
            let buf = vec![1u8; 4096 * 100];
            for p in (0..10_000).step_by(100) {
                d.write(p, &buf).unwrap();
            }
            d.sync().unwrap();
            d
        };
        let s1 = simulate(&mut ssd(), &traces, &cfg(1, Instances::Shared, 0)).unwrap();
        let s10 = simulate(&mut ssd(), &traces, &cfg(10, Instances::Shared, 0)).unwrap();
        assert!(
            s10.makespan_ns * 3 < s1.makespan_ns,
            "{} vs {}",
            s10.makespan_ns,
            s1.makespan_ns
        );
        assert!(s10.max_outstanding > 1);
    }

    #[test]
    fn own_copies_are_placed_apart_and_a_shared_cache_serves_repeats() {
        // Every query reads the same three pages.
        let traces: Vec<_> = (0..40).map(|_| reads(&[5, 6, 7])).collect();
        let hdd = || SimHdd::open(&HddConfig::desktop_7200(), 4096, None).unwrap();
        let mut d = hdd();
        let shared = simulate(&mut d, &traces, &cfg(4, Instances::Shared, 1 << 20)).unwrap();
        // Shared: only the first touch of each page misses.
        assert_eq!(shared.cache_misses, 3);
        let own = simulate(&mut hdd(), &traces, &cfg(4, Instances::Own, 1 << 20)).unwrap();
        // Own copies: each stream misses its own three pages.
        assert_eq!(own.cache_misses, 12);
        assert_eq!(own.cache_hits, 120 - 12);
        // A cache of two pages cannot hold a query's three: LRU misses every time.
        let small = simulate(&mut hdd(), &traces, &cfg(1, Instances::Own, 2 * 4096)).unwrap();
        assert_eq!(small.cache_hits, 0);
        // No memory budget: everything reaches the device.
        let none = simulate(&mut hdd(), &traces, &cfg(4, Instances::Own, 0)).unwrap();
        assert_eq!(none.device.host.read_ops, 120);
    }

    #[test]
    fn impossible_layouts_are_refused() {
        let mut d = SimHdd::open(&HddConfig::desktop_7200(), 4096, None).unwrap();
        // Far-apart pages pack into a partition of two: 2 copies fit.
        let sparse = vec![reads(&[1, 20_000])];
        assert!(simulate(&mut d, &sparse, &cfg(2, Instances::Own, 0)).is_ok());
        // Two copies of more than half the disk do not.
        let half = d.capacity_pages() / 2 + 1;
        let big = vec![vec![Request {
            page: 0,
            pages: half,
            write: false,
        }]];
        let e = simulate(&mut d, &big, &cfg(2, Instances::Own, 0)).unwrap_err();
        assert!(e.to_string().contains("instances"), "{e}");
        assert!(e.to_string().contains("own copies"), "{e}");
        let mut ssd = SimSsd::open(&SsdConfig::v300(), 4096, None).unwrap();
        let e = simulate(&mut ssd, &[reads(&[1])], &cfg(0, Instances::Own, 0)).unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
    }

    /// Touched pages pack in order, without gaps, and multi-page requests stay contiguous.
    #[test]
    fn the_layout_packs_touched_pages_in_order() {
        let r = |page, pages| Request {
            page,
            pages,
            write: false,
        };
        let traces = vec![
            vec![r(1_000_000, 4), r(3, 1)],
            vec![r(1_000_002, 4), r(4, 1), r(7, 2)],
            vec![],
        ];
        let l = Layout::of(&traces);
        assert_eq!(l.used(), 1 + 1 + 2 + 6);
        assert_eq!(l.offset(3), 0);
        assert_eq!(l.offset(4), 1);
        assert_eq!(l.offset(7), 2);
        assert_eq!(l.offset(8), 3);
        assert_eq!(l.offset(1_000_000), 4);
        assert_eq!(l.offset(1_000_005), 9);
        assert_eq!(Layout::of(&[]).used(), 0);
    }

    /// On flash, own copies read the original's (written) pages but keep their own cache
    /// pages; on the disk they are placed apart.
    #[test]
    fn own_copies_on_flash_read_the_original_pages() {
        let traces: Vec<_> = (0..20).map(|_| reads(&[5, 6])).collect();
        let mut ssd = SimSsd::open(&SsdConfig::v300(), 4096, None).unwrap();
        ssd.write(5, &[1u8; 8192]).unwrap();
        ssd.sync().unwrap();
        let flash0 = ssd.stats().flash.unwrap().flash_reads;
        let own = simulate(&mut ssd, &traces, &cfg(4, Instances::Own, 1 << 20)).unwrap();
        assert!(!own.copies_apart);
        assert_eq!(own.cache_misses, 8);
        // Every miss read written flash pages (never-written ones would read none).
        assert!(own.device.flash.unwrap().flash_reads >= 8);
        assert!(ssd.stats().flash.unwrap().flash_reads > flash0);
        let mut hdd = SimHdd::open(&HddConfig::desktop_7200(), 4096, None).unwrap();
        let own = simulate(&mut hdd, &traces, &cfg(4, Instances::Own, 1 << 20)).unwrap();
        assert!(own.copies_apart);
        assert_eq!(own.cache_misses, 8);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let ns: Vec<u64> = (1..=100).map(|i| i * 1_000_000_000).collect();
        let l = Latency::of(&ns);
        assert_eq!(
            (l.p50_s, l.p95_s, l.p99_s, l.max_s),
            (50.0, 95.0, 99.0, 100.0)
        );
        assert!((l.mean_s - 50.5).abs() < 1e-9);
        assert_eq!(Latency::of(&[7]).p99_s, 7e-9);
    }
}
