//! `spidx::calibrate`: the fit recovers the parameters of a known model from the figures
//! that model produces, is deterministic, and its device file loads back as the same
//! device; bad figures and options are refused; the probes run on a real direct-I/O file.

use std::time::Duration;

use spidx::calibrate::fit::{self, predict, ModelKind};
use spidx::calibrate::probe::{self, ProbeOptions};
use spidx::calibrate::{render, ProbeFigure, ProbeFigures, ProbeKind};
use spidx::device::file::direct_io_supported;
use spidx::device::flash::FlashConfig;
use spidx::device::hdd::HddConfig;
use spidx::device::ssd::SsdConfig;
use spidx::device::{DeviceConfig, DeviceSpec};

/// The probe setup (span, sizes, queue depth, requests per probe) with placeholder figures:
/// what [`predict`] needs to run the probes on a model.
fn setup(span: u64, capacity: u64, ops: u64) -> ProbeFigures {
    ProbeFigures {
        span,
        page_size: 16384,
        threads: 8,
        capacity,
        probes: ProbeKind::ALL
            .iter()
            .map(|&k| ProbeFigure {
                probe: k,
                request: k.request(16384),
                queue_depth: if k.parallel() { 8 } else { 1 },
                ops,
                iops: 1.0,
                latency: None,
            })
            .collect(),
    }
}

/// A write-back SSD the fit can represent exactly: no channel transfers, many dies.
fn known_ssd() -> SsdConfig {
    SsdConfig {
        flash: FlashConfig {
            page_size: 4096,
            pages_per_block: 256,
            read_us: 60.0,
            program_us: 900.0,
            erase_us: 3800.0,
            transfer_mb_s: 0.0,
            capacity: 4 << 30,
            overprovisioning: 0.07,
            gc_reserved_blocks: 2,
            wear_level_threshold: 100,
            erase_limit: 3000,
            seed: 42,
        },
        channels: 8,
        dies_per_channel: 32,
        channel_mb_s: 0.0,
        host_mb_s: 500.0,
        command_overhead_us: 25.0,
        write_cache: 256 * 4096,
        queue_depth: 1,
        flush_us: 0.0,
        seq_read_saving_us: 0.0,
        seq_write_saving_us: 0.0,
    }
}

fn within(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol * want.abs(),
        "{what}: fitted {got}, true {want} (tolerance {:.0} %)",
        tol * 100.0
    );
}

#[test]
fn ssd_fit_recovers_a_known_model_and_is_deterministic() {
    let truth = known_ssd();
    let figures = predict(
        &DeviceConfig::Ssd(truth.clone()),
        &setup(32 << 20, 4 << 30, 1500),
    )
    .unwrap();
    let f = fit::fit(&figures).unwrap();
    assert_eq!(f.kind, ModelKind::Ssd, "{}", f.reason);
    let DeviceConfig::Ssd(c) = &f.config else {
        panic!("not an ssd: {:?}", f.config)
    };
    within(
        "command_overhead_us",
        c.command_overhead_us,
        truth.command_overhead_us,
        0.10,
    );
    within("read_us", c.flash.read_us, truth.flash.read_us, 0.10);
    within(
        "program_us",
        c.flash.program_us,
        truth.flash.program_us,
        0.10,
    );
    within("host_mb_s", c.host_mb_s, truth.host_mb_s, 0.15);
    assert_eq!(
        c.seq_write_saving_us, 0.0,
        "no merging of sequential writes"
    );
    assert_eq!(c.seq_read_saving_us, 0.0, "no read-ahead");
    assert!(
        c.write_cache > 0,
        "the write-back candidate wins on write-back figures"
    );
    // Every queue-depth-1 probe within 5 % but the 2 KB writes: a write-back drive
    // acknowledges them from its cache, and their reads before writing show only as cache
    // pressure, which the fit does not model (docs/devices.md, "What it cannot").
    for r in &f.residuals {
        if r.probe.ends_with("qd1") && r.probe != "randwrite-2k-qd1" {
            assert!(r.error_pct.abs() <= 5.0, "{r:?}");
        }
    }
    // Figures saved before the 2 KB probe existed still fit (a 4 KB flash page).
    let mut older = figures.clone();
    older.probes.retain(|p| p.probe != ProbeKind::RandWrite2k);
    let o = fit::fit(&older).unwrap();
    let DeviceConfig::Ssd(oc) = &o.config else {
        panic!("not an ssd: {:?}", o.config)
    };
    assert_eq!(oc.flash.page_size, 4096);
    assert!(o.residuals.iter().all(|r| r.probe != "randwrite-2k-qd1"));
    // Determinism: the same figures give the same device file, byte for byte.
    let a = render::device_file("mine", &figures, &f).unwrap();
    let b = render::device_file("mine", &figures, &fit::fit(&figures).unwrap()).unwrap();
    assert_eq!(a, b);
    // And figures moved by 20 % give another model.
    let mut slower = figures.clone();
    for p in &mut slower.probes {
        p.iops /= 1.2;
        if let Some(l) = &mut p.latency {
            l.mean_us *= 1.2;
            l.p50_us *= 1.2;
        }
    }
    assert_ne!(fit::fit(&slower).unwrap().config, f.config);
}

/// A write-through drive whose flush is a round trip of its own (a virtual disk: requests
/// in parallel over a fast controller, a sync as slow as a write), that reads ahead and
/// merges sequential writes: the write-through candidate wins and recovers the flush, the
/// sequential reads' and writes' savings and the flash page (2 KB: half-page writes cost what whole
/// ones do; 4 KB: they read the page first); every queue-depth-1 probe, the sync and the
/// sequential requests included, comes out within 5 %.
#[test]
fn ssd_fit_recovers_a_write_through_drive_with_a_costly_flush() {
    for page_size in [2048, 4096] {
        let truth = SsdConfig {
            flash: FlashConfig {
                page_size,
                read_us: 60.0,
                program_us: 55.0,
                ..known_ssd().flash
            },
            host_mb_s: 0.0,
            command_overhead_us: 20.0,
            write_cache: 0,
            flush_us: 60.0,
            seq_read_saving_us: 8.0,
            seq_write_saving_us: 15.0,
            ..known_ssd()
        };
        let figures = predict(
            &DeviceConfig::Ssd(truth.clone()),
            &setup(32 << 20, 4 << 30, 1500),
        )
        .unwrap();
        let f = fit::fit(&figures).unwrap();
        let DeviceConfig::Ssd(c) = &f.config else {
            panic!("not an ssd: {:?}", f.config)
        };
        assert_eq!(c.write_cache, 0, "the write-through candidate wins: {c:?}");
        assert_eq!(c.flash.page_size, page_size);
        within("flush_us", c.flush_us, truth.flush_us, 0.10);
        within(
            "seq_write_saving_us",
            c.seq_write_saving_us,
            truth.seq_write_saving_us,
            0.10,
        );
        within(
            "seq_read_saving_us",
            c.seq_read_saving_us,
            truth.seq_read_saving_us,
            0.10,
        );
        within("read_us", c.flash.read_us, truth.flash.read_us, 0.10);
        for r in &f.residuals {
            if r.probe.ends_with("qd1") {
                assert!(r.error_pct.abs() <= 5.0, "{page_size}: {r:?}");
            }
        }
        // The device file names the flush and the saving.
        let text = render::device_file("mine", &figures, &f).unwrap();
        assert!(text.contains("\nflush_us = "), "{text}");
        assert!(text.contains("\nseq_write_saving_us = "), "{text}");
        assert!(text.contains("\nseq_read_saving_us = "), "{text}");
    }
}

#[test]
fn hdd_fit_recovers_the_seek_times() {
    let truth = HddConfig::desktop_7200();
    let figures = predict(
        &DeviceConfig::Hdd(truth.clone()),
        &setup(256 << 20, truth.capacity, 300),
    )
    .unwrap();
    let (seeks, reason) = fit::seeks_dominate(&figures).unwrap();
    assert!(seeks, "{reason}");
    let f = fit::fit(&figures).unwrap();
    assert_eq!(f.kind, ModelKind::Hdd);
    let DeviceConfig::Hdd(c) = &f.config else {
        panic!("not an hdd")
    };
    within("avg_seek_ms", c.avg_seek_ms, truth.avg_seek_ms, 0.10);
    let r = f
        .residuals
        .iter()
        .find(|r| r.probe == "randread-4k-qd1" && r.figure == "mean_us")
        .unwrap();
    assert!(r.error_pct.abs() <= 5.0, "{r:?}");
}

#[test]
fn the_device_file_loads_back_and_reproduces_the_figures() {
    let figures = predict(
        &DeviceConfig::Ssd(known_ssd()),
        &setup(16 << 20, 4 << 30, 800),
    )
    .unwrap();
    let f = fit::fit(&figures).unwrap();
    let text = render::device_file("my-drive", &figures, &f).unwrap();
    assert!(text.contains("# randread-4k-qd1"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("my-drive.toml");
    std::fs::write(&path, &text).unwrap();
    let loaded = DeviceSpec::new(path.to_str().unwrap()).resolve().unwrap();
    assert_eq!(loaded.name, "my-drive");
    assert_eq!(loaded.config, f.config);
    assert_eq!(predict(&loaded.config, &figures).unwrap(), f.predicted);
}

#[test]
fn bad_figures_and_options_are_refused() {
    let mut figures = predict(
        &DeviceConfig::Ssd(known_ssd()),
        &setup(16 << 20, 4 << 30, 200),
    )
    .unwrap();
    figures.probes[0].iops = 0.0;
    let err = fit::fit(&figures).unwrap_err().to_string();
    assert!(err.contains("randread-4k-qd1"), "{err}");
    figures.probes.remove(0);
    let err = fit::fit(&figures).unwrap_err().to_string();
    assert!(err.contains("no randread-4k-qd1 probe"), "{err}");
    // Memory takes no time: nothing to model.
    let err = predict(
        &DeviceConfig::Memory(Default::default()),
        &setup(16 << 20, 4 << 30, 10),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("took no time"), "{err}");

    let good = ProbeOptions {
        path: "x.bin".into(),
        size: 4 << 20,
        page_size: 16384,
        threads: 4,
        time_budget: Duration::from_secs(2),
        max_ops: 100,
        seed: 1,
        capacity: 1 << 30,
    };
    probe::validate(&good).unwrap();
    for (bad, needle) in [
        (
            ProbeOptions {
                size: 3 << 19,
                ..good.clone()
            },
            "size",
        ),
        (
            ProbeOptions {
                size: 0,
                ..good.clone()
            },
            "size",
        ),
        (
            ProbeOptions {
                page_size: 6000,
                ..good.clone()
            },
            "page size",
        ),
        (
            ProbeOptions {
                page_size: 2 << 20,
                ..good.clone()
            },
            "page size",
        ),
        (
            ProbeOptions {
                threads: 1,
                ..good.clone()
            },
            "threads",
        ),
        (
            ProbeOptions {
                time_budget: Duration::ZERO,
                ..good.clone()
            },
            "time budget",
        ),
        (
            ProbeOptions {
                max_ops: 0,
                ..good.clone()
            },
            "max ops",
        ),
    ] {
        let err = probe::validate(&bad).unwrap_err().to_string();
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

#[test]
fn probes_a_real_direct_io_file_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_supported(dir.path()) {
        spidx::test_support::skip(&format!(
            "no O_DIRECT on the temporary directory's filesystem ({}): calibrate probes with direct I/O only",
            dir.path().display()
        ));
        return;
    }
    let path = dir.path().join("probe.bin");
    std::fs::File::create(&path).unwrap();
    let opts = ProbeOptions {
        path,
        size: 4 << 20,
        page_size: 8192,
        threads: 2,
        time_budget: Duration::from_secs(2),
        max_ops: 200,
        seed: 7,
        capacity: 1 << 30,
    };
    let mut steps = Vec::new();
    let start = std::time::Instant::now();
    let figures = probe::run(&opts, &mut |p| steps.push((p.done, p.remaining))).unwrap();
    // Bounded: the budget plus the probes' final syncs and opening the file.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(steps.len(), probe::STEPS + 1);
    assert!(steps
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1));
    assert_eq!(steps.last().unwrap().1, Duration::ZERO);
    figures.validate().unwrap();
    assert_eq!(
        figures.span,
        4 << 20,
        "the 4 MB layout fits in its share of 2 s"
    );
    let qd = figures.get(ProbeKind::RandReadQd).unwrap();
    assert_eq!(qd.queue_depth, 2);
    assert!(qd.ops > 0 && qd.latency.is_some());
    assert_eq!(figures.get(ProbeKind::RandReadPage).unwrap().request, 8192);
    assert_eq!(figures.get(ProbeKind::RandWrite2k).unwrap().request, 2048);
    let f = fit::fit(&figures).unwrap();
    // Rate and mean time of the 9 queue-depth-1 probes, the rate of the 2 others.
    assert_eq!(f.residuals.len(), 20);
}

/// The checked-in model of the development machine's disk (`bench/validation/drive.toml`)
/// is what the fit makes of its checked-in figures (`drive-figures.json`), byte for byte:
/// a change of the fit must come with the refitted file (`spidx calibrate --from-figures
/// bench/validation/drive-figures.json --out bench/validation/drive.toml --force`).
#[test]
fn the_checked_in_drive_model_is_the_fit_of_its_figures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/validation");
    let text = std::fs::read_to_string(dir.join("drive-figures.json")).unwrap();
    let figures: ProbeFigures = serde_json::from_str(&text).unwrap();
    let fitted = fit::fit(&figures).unwrap();
    let want = render::device_file("drive", &figures, &fitted).unwrap();
    let have = std::fs::read_to_string(dir.join("drive.toml")).unwrap();
    assert!(
        have == want,
        "bench/validation/drive.toml is stale:\n{want}"
    );
    // The fitted model's queue-depth-1 probe figures are within 10 % of the disk's.
    for r in &fitted.residuals {
        if r.probe.ends_with("qd1") {
            assert!(r.error_pct.abs() <= 10.0, "{r:?}");
        }
    }
}
