//! Unit tests of the shared log: round trips, torn tails at every write and sector,
//! compaction crash points, sync modes' write counts, corruption.

use super::*;
use crate::device::crash::{CrashDevice, Tear};
use crate::device::memory::{MemoryConfig, MemoryDevice};
use crate::device::shared::SharedDevice;

const PS: usize = 1024;

fn medium(pages: u64) -> SharedDevice {
    let mem = MemoryDevice::open(
        &MemoryConfig {
            capacity: pages * PS as u64,
        },
        PS,
        None,
    )
    .unwrap();
    SharedDevice::new(Box::new(mem))
}

fn cfg(sync: LogSync) -> LogConfig {
    LogConfig::new(sync)
}

/// Operation `i` of the test workload: 1 to 3 records of varied sizes (some span pages).
fn op(i: usize) -> Vec<Vec<u8>> {
    (0..1 + i % 3)
        .map(|j| {
            let len = (i * 37 + j * 301) % 1500;
            (0..len).map(|k| (i + j + k) as u8).collect()
        })
        .collect()
}

fn run_ops(log: &mut Log, range: std::ops::Range<usize>) {
    for i in range {
        for p in op(i) {
            log.append(&p).unwrap();
        }
        log.commit().unwrap();
    }
}

#[test]
fn committed_operations_round_trip_and_unfinished_ones_are_dropped() {
    let m = medium(200);
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    run_ops(&mut log, 0..20);
    log.append(b"half an operation").unwrap();
    log.write_out().unwrap();
    drop(log);
    let (mut log, rec) = Log::open(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    let want: Vec<Vec<Vec<u8>>> = (0..20).map(op).collect();
    assert_eq!(rec.operations, want);
    assert_eq!(rec.dropped_records, 1);
    assert!(rec.dropped_bytes > 0);
    // Reopened logs continue: the recovered operations (compacted into one) and new ones.
    run_ops(&mut log, 20..25);
    drop(log);
    let (_, rec) = Log::open(Box::new(m), cfg(LogSync::EachOp)).unwrap();
    let all: Vec<Vec<u8>> = (0..25).flat_map(op).collect();
    assert_eq!(rec.payloads().map(<[u8]>::to_vec).collect::<Vec<_>>(), all);
    assert_eq!(rec.dropped_records, 0);
    assert_eq!(rec.end, ScanEnd::End);
}

/// Runs the workload on a crash device cut at write `cut`; returns how many operations
/// were acknowledged (their commit returned before the cut) and the medium.
fn crash_run(cut: u64, tear: Tear, sync: LogSync, n: usize) -> (usize, usize, SharedDevice) {
    let m = medium(200);
    let crash = CrashDevice::new(Box::new(m.clone()), cut, tear);
    let watch = crash.watch();
    let mut log = Log::create(Box::new(crash), cfg(sync)).unwrap();
    let mut acked = 0;
    for i in 0..n {
        run_ops(&mut log, i..i + 1);
        if !watch.is_cut() && log.unsynced_commits() == 0 {
            acked = i + 1;
        }
    }
    (acked, watch.writes() as usize, m)
}

#[test]
fn a_power_cut_at_any_write_keeps_every_acknowledged_operation_and_no_half_one() {
    let n = 30;
    for sync in [LogSync::EachOp, LogSync::Group(4), LogSync::None] {
        let (_, total, _) = crash_run(u64::MAX, Tear::Lost, sync, n);
        for cut in 0..total as u64 {
            for tear in [
                Tear::Lost,
                Tear::Sectors(1),
                Tear::Sectors(2),
                Tear::Sectors(3),
            ] {
                let (acked, _, m) = crash_run(cut, tear, sync, n);
                let opened = Log::open(Box::new(m), cfg(sync));
                if cut < 2 {
                    // The creation itself (zeroing the second header, writing the first)
                    // was cut: no log exists (a clear error), or an empty one.
                    if let Ok((_, rec)) = opened {
                        assert!(rec.operations.is_empty());
                    }
                    continue;
                }
                let (_, rec) = opened.unwrap_or_else(|e| panic!("{sync} cut {cut} {tear:?}: {e}"));
                let got = rec.operations.len();
                assert!(got >= acked, "{sync} cut {cut} {tear:?}: {got} < {acked}");
                let want: Vec<Vec<Vec<u8>>> = (0..got).map(op).collect();
                assert_eq!(rec.operations, want, "{sync} cut {cut} {tear:?}");
            }
        }
    }
}

#[test]
fn a_crash_during_compaction_leaves_the_old_or_the_new_log() {
    let old: Vec<Vec<u8>> = (0..10).flat_map(op).collect();
    let new: Vec<Vec<u8>> = vec![b"survivor one".to_vec(), vec![9u8; 2000]];
    let prepare = || {
        let m = medium(100);
        let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
        run_ops(&mut log, 0..10);
        drop(log);
        m
    };
    let mut saw = (false, false);
    for cut in 0..8 {
        for tear in [Tear::Lost, Tear::Sectors(1)] {
            let m = prepare();
            // Open (itself a compaction) and compact again, under a power cut.
            let crash = CrashDevice::new(Box::new(m.clone()), cut, tear);
            if let Ok((mut log, _)) = Log::open(Box::new(crash), cfg(LogSync::EachOp)) {
                let _ = log.compact(new.iter().map(Vec::as_slice));
            }
            let (_, rec) = Log::open(Box::new(m), cfg(LogSync::EachOp)).unwrap();
            let got: Vec<Vec<u8>> = rec.payloads().map(<[u8]>::to_vec).collect();
            assert!(got == old || got == new, "cut {cut} {tear:?}");
            saw.0 |= got == old;
            saw.1 |= got == new;
        }
    }
    assert!(saw.0 && saw.1, "both outcomes are exercised");
}

#[test]
fn sync_modes_trade_writes_for_durability() {
    let count = |sync| {
        let m = medium(400);
        let mut log = Log::create(Box::new(m.clone()), cfg(sync)).unwrap();
        let before = m.stats().host;
        for _ in 0..100 {
            log.append(&[1u8; 100]).unwrap();
            log.commit().unwrap();
        }
        let after = m.stats().host;
        (
            after.write_ops - before.write_ops,
            after.syncs - before.syncs,
            log.stats(),
        )
    };
    let (w_each, s_each, st) = count(LogSync::EachOp);
    assert_eq!(
        (w_each, s_each),
        (100, 100),
        "one write and one sync per commit"
    );
    assert_eq!(st.commits, 100);
    assert_eq!(st.records, 100);
    assert_eq!(st.gauges.unsynced_commits, 0);
    let (w_group, s_group, st) = count(LogSync::Group(10));
    assert_eq!((w_group, s_group), (10, 10));
    assert_eq!(st.gauges.unsynced_commits, 0);
    let (w_none, s_none, st) = count(LogSync::None);
    // 100 x (116 + 16) bytes = 13,200 bytes = 12 full 1 KB pages.
    assert_eq!((w_none, s_none), (12, 0));
    assert_eq!(st.gauges.unsynced_commits, 100);
    assert_eq!(st.bytes, 13_200);
}

/// Byte offset in the record stream where operation `i` of [`op`] ends (its commit
/// marker included), for the first `n` operations.
fn op_ends(n: usize) -> Vec<u64> {
    let mut at = 0u64;
    (0..n)
        .map(|i| {
            at += op(i)
                .iter()
                .map(|p| (RECORD_HEADER + p.len()) as u64)
                .sum::<u64>()
                + RECORD_HEADER as u64;
            at
        })
        .collect()
}

#[test]
fn corruption_in_the_middle_is_an_error_unless_the_loss_is_accepted() {
    let m = medium(200);
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    run_ops(&mut log, 0..20);
    drop(log);
    // Flip a byte in the third data page of region 0 (pages 2.. hold its records).
    let mut dev = m.clone();
    let mut page = vec![0u8; PS];
    dev.read(4, &mut page).unwrap();
    page[100] ^= 0xff;
    dev.write(4, &page).unwrap();
    let e = Log::open(Box::new(m.clone()), cfg(LogSync::EachOp))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("damaged") && e.contains("not a torn tail") && e.contains("--accept-loss"),
        "{e}"
    );
    // Nothing was changed: the same error again.
    let again = Log::open(Box::new(m.clone()), cfg(LogSync::EachOp))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(e, again);
    let accept = LogConfig {
        accept_loss: true,
        ..cfg(LogSync::EachOp)
    };
    let (_, rec) = Log::open(Box::new(m), accept).unwrap();
    let got = rec.operations.len();
    assert!(got > 0 && got < 20, "{got}");
    assert_eq!(rec.operations, (0..got).map(op).collect::<Vec<_>>());
    assert!(
        matches!(&rec.end, ScanEnd::Invalid { reason, .. } if reason.contains("checksum")),
        "{:?}",
        rec.end
    );
    let loss = rec.accepted_loss.unwrap();
    assert!(
        loss.contains(&format!("{got} committed operations before it survive")),
        "{loss}"
    );
}

/// One flipped bit anywhere in a synced log: opening fails naming the damage, or recovers
/// every operation, or (a flip in the last operation, which a torn write could also
/// produce) every operation but the last. Never a shorter prefix without an error.
#[test]
fn a_flipped_bit_anywhere_is_never_a_silent_loss() {
    let n = 12;
    let ends = op_ends(n);
    let m = medium(200);
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    run_ops(&mut log, 0..n);
    drop(log);
    let mut image = vec![0u8; 200 * PS];
    m.clone().read(0, &mut image).unwrap();
    let (mut errors, mut whole) = (0, 0);
    for at in (0..ends[n - 1] as usize).step_by(13) {
        // A fresh medium per case (opening compacts into the other region).
        let mut dev = medium(200);
        let mut flipped = image.clone();
        flipped[2 * PS + at] ^= 1 << (at % 8);
        dev.write(0, &flipped).unwrap();
        match Log::open(Box::new(dev), cfg(LogSync::EachOp)) {
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("log") && e.contains("damaged"), "{at}: {e}");
                errors += 1;
            }
            Ok((_, rec)) => {
                let got = rec.operations.len();
                assert_eq!(rec.operations, (0..got).map(op).collect::<Vec<_>>(), "{at}");
                let in_last = at as u64 >= ends[n - 2];
                assert!(
                    got == n || (got == n - 1 && in_last),
                    "flip at {at}: {got} ops"
                );
                whole += usize::from(got == n);
            }
        }
    }
    assert!(errors > 100, "{errors} errors, {whole} whole");
}

#[test]
fn corrupted_headers_are_a_clear_error() {
    let m = medium(50);
    let log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    drop(log);
    let mut dev = m.clone();
    let mut page = vec![0u8; PS];
    dev.read(0, &mut page).unwrap();
    page[21] ^= 1;
    dev.write(0, &page).unwrap();
    let err = Log::open(Box::new(m), cfg(LogSync::EachOp))
        .err()
        .expect("no valid header")
        .to_string();
    assert!(
        err.contains("log header") && err.contains("checksum"),
        "{err}"
    );
    let err = Log::open(Box::new(medium(50)), cfg(LogSync::EachOp))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("never created"), "{err}");
}

#[test]
fn a_full_log_is_a_clear_error_and_compaction_makes_room() {
    let m = medium(10); // two regions of 4 pages
    let mut log = Log::create(Box::new(m), cfg(LogSync::EachOp)).unwrap();
    assert_eq!(log.capacity_bytes(), 4 * PS as u64);
    let mut n = 0;
    let err = loop {
        match log.append(&[3u8; 500]) {
            Ok(()) => {
                log.commit().unwrap();
                n += 1;
            }
            Err(e) => break e.to_string(),
        }
        if n > 1 {
            assert!(log.needs_compaction() || log.used_bytes() * 2 <= log.capacity_bytes());
        }
    };
    assert!(err.contains("larger log size"), "{err}");
    log.compact([&b"x"[..]]).unwrap();
    assert_eq!(log.used_bytes(), 17 + 16);
    assert!(!log.needs_compaction());
    assert_eq!(log.stats().compactions, 1);
}

#[test]
fn a_recreated_log_never_reads_the_old_ones_records() {
    let m = medium(100);
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    run_ops(&mut log, 0..10);
    drop(log);
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    run_ops(&mut log, 0..1);
    drop(log);
    let (_, rec) = Log::open(Box::new(m), cfg(LogSync::EachOp)).unwrap();
    assert_eq!(rec.operations, vec![op(0)]);
}

#[test]
fn log_sync_parses_and_rejects_bad_values() {
    assert_eq!("each-op".parse::<LogSync>().unwrap(), LogSync::EachOp);
    assert_eq!("group:8".parse::<LogSync>().unwrap(), LogSync::Group(8));
    assert_eq!("none".parse::<LogSync>().unwrap(), LogSync::None);
    for bad in ["group:0", "group:", "always", ""] {
        let e = bad.parse::<LogSync>().unwrap_err().to_string();
        assert!(e.contains("each-op, group:N"), "{e}");
    }
    assert_eq!(LogSync::Group(3).to_string(), "group:3");
    assert!(Log::create(Box::new(medium(3)), cfg(LogSync::EachOp)).is_err());
}

#[test]
fn a_log_truncated_at_any_byte_recovers_exactly_the_operations_before_it() {
    // Write 8 operations, note where each commit ends, then cut the stream at every byte.
    let m = medium(40);
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    let mut ends = Vec::new();
    for i in 0..8 {
        run_ops(&mut log, i..i + 1);
        ends.push(log.used_bytes());
    }
    drop(log);
    let total = *ends.last().unwrap() as usize;
    let mut image = vec![0u8; total.div_ceil(PS) * PS];
    m.clone().read(2, &mut image).unwrap();
    for cut in 0..=total {
        let copy = medium(40);
        let mut dev = copy.clone();
        let mut hdr = vec![0u8; PS];
        m.clone().read(0, &mut hdr).unwrap();
        dev.write(0, &hdr).unwrap();
        let mut cut_image = image.clone();
        cut_image[cut..].fill(0);
        dev.write(2, &cut_image).unwrap();
        let (_, rec) = Log::open(Box::new(copy), cfg(LogSync::EachOp)).unwrap();
        // Zeroing from `cut` changes nothing up to a commit whose remaining bytes are zero
        // already (a CRC, seeded by the log's random nonce, can end in 0x00 bytes): that
        // operation is intact and must be recovered.
        let intact = |e: usize| e <= cut || image[cut..e].iter().all(|b| *b == 0);
        let want = ends.iter().filter(|e| intact(**e as usize)).count();
        assert_eq!(
            rec.operations,
            (0..want).map(op).collect::<Vec<_>>(),
            "cut at byte {cut}"
        );
        let committed = if want == 0 { 0 } else { ends[want - 1] };
        // Records (uncommitted ones too) may be read intact past `cut` as far as the bytes
        // there were zero already: the scan can drop up to there (a CRC ending in 0x00
        // followed by a payload of zeros, about one run in 256).
        let unchanged = cut + image[cut..].iter().take_while(|b| **b == 0).count();
        assert!(
            rec.dropped_bytes <= (unchanged as u64).saturating_sub(committed),
            "cut at byte {cut}"
        );
    }
}

/// Log formats: an older format opens (and is rewritten in the current one) for stores
/// that read it, is refused untouched by stores that do not, and an unknown format is an
/// invalid header.
#[test]
fn log_formats_are_checked_on_open() {
    let m = medium(50);
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    run_ops(&mut log, 0..5);
    drop(log);
    let mut dev = m.clone();
    set_header_format(&mut dev, 1);
    let snapshot = |d: &mut SharedDevice| {
        let mut all = vec![0u8; 50 * PS];
        d.read(0, &mut all).unwrap();
        all
    };
    let before = snapshot(&mut dev);
    let strict = LogConfig {
        oldest_format: LOG_FORMAT,
        ..cfg(LogSync::EachOp)
    };
    let err = Log::open(Box::new(m.clone()), strict)
        .err()
        .expect("format 1 refused")
        .to_string();
    assert!(
        err.contains("format 1") && err.contains("rebuild the index"),
        "{err}"
    );
    assert!(
        before == snapshot(&mut dev),
        "a refused log is left untouched"
    );
    let (_, rec) = Log::open(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    assert_eq!(rec.format, 1);
    assert_eq!(rec.operations, (0..5).map(op).collect::<Vec<_>>());
    // Reopening finds the recovered log rewritten in the current format.
    let (_, rec) = Log::open(Box::new(m.clone()), strict).unwrap();
    assert_eq!(rec.format, LOG_FORMAT);
    assert_eq!(
        rec.operations.concat(),
        (0..5).flat_map(op).collect::<Vec<_>>()
    );
    set_header_format(&mut dev, LOG_FORMAT + 1);
    let err = Log::open(Box::new(m), cfg(LogSync::EachOp))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("unknown"), "{err}");
}

#[test]
fn a_failed_compaction_leaves_the_log_as_it_was() {
    let m = medium(40); // two regions of 19 pages
    let mut log = Log::create(Box::new(m.clone()), cfg(LogSync::EachOp)).unwrap();
    run_ops(&mut log, 0..10);
    let used = log.used_bytes();
    // A record that fails to encode, after some that were written out.
    let big = vec![7u8; 3 * PS];
    let err = log
        .compact_with(0..5, |i, b| match i {
            3 => Err(Error::invalid("test record", "cannot encode")),
            _ => {
                b.extend_from_slice(&big);
                Ok(())
            }
        })
        .unwrap_err();
    assert!(err.to_string().contains("cannot encode"), "{err}");
    // A snapshot larger than a region.
    let err = log.compact((0..8).map(|_| &big[..])).unwrap_err();
    assert!(err.to_string().contains("larger log size"), "{err}");
    assert_eq!(log.used_bytes(), used);
    assert_eq!(log.stats().compactions, 0);
    // The log goes on where it was: nothing committed before is lost.
    run_ops(&mut log, 10..15);
    drop(log);
    let (_, rec) = Log::open(Box::new(m), cfg(LogSync::EachOp)).unwrap();
    let want: Vec<Vec<Vec<u8>>> = (0..15).map(op).collect();
    assert_eq!(rec.operations, want);
    assert_eq!(rec.end, ScanEnd::End);
}
