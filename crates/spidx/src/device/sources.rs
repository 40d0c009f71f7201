//! Where each parameter of each device preset comes from (architecture §3: every device
//! parameter names its source — a device table, datasheet or validated model — or says
//! that it is assumed). `spidx devices NAME` prints every value with its source, and
//! `docs/devices.md` quotes the same table; a test checks that no parameter of a preset is
//! left without an entry.
//!
//! Keys are the parameters' paths in the device-file form (`flash.read_us`,
//! `limits.iops`, `inner.hit_overhead_us`). A source starting with "assumed" marks a value
//! no source gives.

/// The Hitachi Deskstar 7K3000 OEM specification's command overheads (the class
/// stand-in for the seeds' WD drives, whose datasheets omit them).
const DESKSTAR_7K3000: &str = "Hitachi Deskstar 7K3000 OEM specification, §4.5.1 Table 5 'Command overhead' (typical, quiescent, no NCQ); a 7200 rpm, 2 TB, 64 MB, SATA 6 Gb/s drive standing in for the seeds' WD drive (same class)";

/// Parameters every hard-disk preset shares, with their sources.
const HDD_COMMON: &[(&str, &str)] = &[
    ("rpm", "the seeds: 7200 rpm (Emrich et al. 2010, §4; Carniel et al. 2016, 2017, §5.1)"),
    ("avg_seek_ms", "Emrich et al. 2010, Table 1 (8.9 ms), the same in WD Caviar desktop datasheets"),
    ("track_to_track_ms", "WD Caviar desktop datasheets of the WD2500AAJS family (2.0 ms)"),
    ("full_stroke_ms", "WD Caviar desktop datasheets of the WD2500AAJS family (21 ms)"),
    ("write_settle_ms", "WD Caviar desktop datasheets: write average seek 10.9 ms vs 8.9 ms read"),
    ("hit_overhead_us", DESKSTAR_7K3000),
    ("miss_overhead_us", DESKSTAR_7K3000),
    ("write_overhead_us", DESKSTAR_7K3000),
    ("segments", "assumed: 16 (DiskSim 4.0's validated drives have 3-10; a sensitivity sweep is in docs/devices.md)"),
    ("read_ahead_kb", "assumed: 512 KiB after every miss (real drives read ahead adaptively)"),
    ("write_cache", "desktop drives ship with write caching on; FESTIval never flushes it (no fsync in accarniel/FESTIval)"),
    ("seed", "a setting: the initial platter angle"),
];

/// `hdd-7200`'s own parameters.
const HDD_7200: &[(&str, &str)] = &[
    (
        "capacity",
        "Carniel et al. 2016, 2017: 2 TB (IDEMA LBA count)",
    ),
    (
        "heads",
        "assumed: 8 (only sets how many cylinders the address space spans)",
    ),
    ("zones", "assumed: 1 zone (Emrich et al. give one rate)"),
    ("outer_mb_s", "Emrich et al. 2010, Table 1: 93.5 MB/s"),
    (
        "inner_mb_s",
        "Emrich et al. 2010, Table 1: 93.5 MB/s (one zone)",
    ),
    (
        "interface_mb_s",
        "SATA 3 Gb/s, the interface of Emrich et al.'s drive",
    ),
    ("cache_kb", "Emrich et al. 2010, §4: 8 MB cache"),
];

/// `hdd-wd2tb`'s own parameters (Carniel et al.'s drive).
const HDD_WD2TB: &[(&str, &str)] = &[
    ("capacity", "Carniel et al. 2016, 2017, §5.1: 2 TB (IDEMA LBA count)"),
    ("heads", "assumed: 6 (three platters)"),
    ("zones", "assumed: 16 zones"),
    ("outer_mb_s", "WD 2 TB 7200 rpm datasheets of 2015-2016 (WD Black WD2003FZEX, WD RE WD2000FYYZ): 164 MB/s sustained"),
    ("inner_mb_s", "assumed: half the outer rate (Hitachi Deskstar 7K500 spec, Table 10: inner/outer 0.48)"),
    ("interface_mb_s", "SATA 6 Gb/s (the WD datasheets above)"),
    ("cache_kb", "WD datasheets above: 64 MB"),
];

/// `hdd-wd2500aajs`'s own parameters (Emrich et al.'s drive).
const HDD_WD2500AAJS: &[(&str, &str)] = &[
    (
        "capacity",
        "Emrich et al. 2010, §4: 250 GB (IDEMA LBA count)",
    ),
    ("heads", "assumed: 2 (one platter)"),
    ("zones", "assumed: 1 zone (the paper gives one rate)"),
    ("outer_mb_s", "Emrich et al. 2010, Table 1: 93.5 MB/s"),
    (
        "inner_mb_s",
        "Emrich et al. 2010, Table 1: 93.5 MB/s (one zone)",
    ),
    (
        "interface_mb_s",
        "assumed: SATA 3 Gb/s (the paper says SATA)",
    ),
    ("cache_kb", "Emrich et al. 2010, §4: 8 MB cache"),
];

/// `ssd-v300`'s parameters (module documentation of `device::ssd`).
const SSD_V300: &[(&str, &str)] = &[
    ("channels", "SandForce SF-2281 controller of the Kingston V300: 8 channels"),
    ("dies_per_channel", "assumed: 4 (32 dies for 480 GB of MLC)"),
    ("channel_mb_s", "assumed: 200 MB/s per channel (ONFI/Toggle of the era)"),
    ("host_mb_s", "SATA 6 Gb/s, about 550 MB/s usable"),
    ("command_overhead_us", "fitted to Carniel et al. 2017 Table I (Iometer: 285.156 MB/s 4 KB random reads; queue depth 32 assumed)"),
    ("write_cache", "assumed: 1 MiB (the SF-2281 has no DRAM cache)"),
    ("queue_depth", "a setting: one request outstanding (FESTIval's synchronous I/O)"),
    ("flush_us", "0: a local SATA drive's flush is the drain itself"),
    ("seq_read_saving_us", "0: not modelled in the preset (spidx calibrate fits it for a user's drive)"),
    ("seq_write_saving_us", "0: not modelled in the preset (spidx calibrate fits it for a user's drive)"),
    ("flash.page_size", "assumed: 4 KB flash pages (the FTL's mapping unit)"),
    ("flash.pages_per_block", "assumed: 256 pages per block"),
    ("flash.read_us", "assumed: 50 us MLC page read"),
    ("flash.program_us", "fitted to Carniel et al. 2017 Table I (Iometer: 109.375 MB/s 4 KB random writes)"),
    ("flash.erase_us", "assumed: 3.8 ms MLC block erase (MQSim's MLC default)"),
    ("flash.transfer_mb_s", "0: the channel rate applies"),
    ("flash.capacity", "Carniel et al. 2017, §5.1: 480 GB"),
    ("flash.overprovisioning", "480 GB of 512 GiB raw: 14.5 %"),
    ("flash.gc_reserved_blocks", "a setting of the FTL"),
    ("flash.wear_level_threshold", "a setting of the FTL"),
    ("flash.erase_limit", "assumed: 3000 MLC program/erase cycles"),
    ("flash.seed", "a setting: the FTL's random choices"),
];

/// Raw NAND presets: every value is the named simulator's or paper's configuration.
fn flash(source: &'static str) -> Vec<(String, &'static str)> {
    [
        "page_size",
        "pages_per_block",
        "read_us",
        "program_us",
        "erase_us",
        "transfer_mb_s",
        "capacity",
        "overprovisioning",
        "gc_reserved_blocks",
        "wear_level_threshold",
        "erase_limit",
        "seed",
    ]
    .iter()
    .map(|k| (k.to_string(), source))
    .collect()
}

fn hdd(own: &[(&'static str, &'static str)]) -> Vec<(String, &'static str)> {
    own.iter()
        .chain(HDD_COMMON)
        .map(|(k, s)| (k.to_string(), *s))
        .collect()
}

fn prefixed(prefix: &str, v: Vec<(String, &'static str)>) -> Vec<(String, &'static str)> {
    v.into_iter()
        .map(|(k, s)| (format!("{prefix}.{k}"), s))
        .collect()
}

/// Azure disk limits as Microsoft documented them when the seeds ran (early 2017).
const AZURE_STANDARD: &[(&str, &str)] = &[
    ("limits.iops", "Microsoft Azure docs, 'Standard Storage' (ms.date 02/06/2017), standard-tier disk limits: up to 500 IOPS (stated for 8 KB I/Os)"),
    ("limits.mb_s", "same page: up to 60 MB/s per disk"),
    ("limits.io_unit", "assumed: 256 KiB as for Premium Storage (the standard-disk limit is stated for 8 KB I/Os; no unit is documented)"),
    ("limits.latency_us", "assumed: 1 ms (the 2017 docs give no latency; later docs: reads under 20 ms, writes under 10 ms)"),
    ("limits.burst", "a setting: one I/O of credit"),
];
const AZURE_PREMIUM: &[(&str, &str)] = &[
    (
        "limits.iops",
        "Microsoft Azure docs, 'Premium Storage' (ms.date 02/06/2017): a P30 disk, 5,000 IOPS",
    ),
    (
        "limits.mb_s",
        "same page: P30, 200 MB/s (a DS12 v2 VM caps uncached I/O at 192 MB/s)",
    ),
    (
        "limits.io_unit",
        "same page: 'The input/output (I/O) unit size is 256 KB'",
    ),
    (
        "limits.latency_us",
        "assumed: 1 ms (the 2017 docs give no latency; later docs: 'single-digit millisecond')",
    ),
    ("limits.burst", "a setting: one I/O of credit"),
];

/// The source of every parameter of preset `name` (keys as in the device file), or
/// `None` for a preset without parameters to source (`memory`).
pub fn of(name: &str) -> Option<Vec<(String, &'static str)>> {
    Some(match name {
        "flashdbsim" => flash("Flash-DBSim's example configuration"),
        "seed-table2" => flash("Table 2 of the flash-simulator paper (seeds/carniel-flash-simulator-vs-ssd); capacity 512 MB as the paper's simulated flash"),
        "x25m" => flash("FlashSim's default configuration (Intel X25-M class SLC)"),
        "mlc" => flash("MQSim's default MLC configuration"),
        "ssd-v300" => SSD_V300.iter().map(|(k, s)| (k.to_string(), *s)).collect(),
        "hdd-7200" => hdd(HDD_7200),
        "hdd-wd2tb" => hdd(HDD_WD2TB),
        "hdd-wd2500aajs" => hdd(HDD_WD2500AAJS),
        "azure-standard-hdd" => AZURE_STANDARD
            .iter()
            .map(|(k, s)| (k.to_string(), *s))
            .chain(prefixed("inner", hdd(HDD_7200)))
            .collect(),
        "azure-premium-ssd" => AZURE_PREMIUM
            .iter()
            .map(|(k, s)| (k.to_string(), *s))
            .chain(prefixed(
                "inner",
                SSD_V300.iter().map(|(k, s)| (k.to_string(), *s)).collect(),
            ))
            .collect(),
        _ => return None,
    })
}

/// The device-file keys of a configuration (its TOML form), with the table they sit in.
pub fn keys(config: &super::DeviceConfig) -> Vec<String> {
    fn walk(prefix: &str, t: &toml::Table, out: &mut Vec<String>) {
        for (k, v) in t {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                toml::Value::Table(inner) => walk(&key, inner, out),
                _ if k == "kind" => {}
                _ => out.push(key),
            }
        }
    }
    let mut out = Vec::new();
    if let Ok(toml::Value::Table(t)) = toml::Value::try_from(config) {
        walk("", &t, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::preset::presets;

    #[test]
    fn every_parameter_of_every_preset_names_its_source() {
        for p in presets() {
            let Some(sources) = of(p.name) else {
                assert_eq!(p.name, "memory", "preset {} has no sources", p.name);
                continue;
            };
            let keys = keys(&p.config);
            assert!(!keys.is_empty(), "{}", p.name);
            for k in &keys {
                assert!(
                    sources.iter().any(|(s, _)| s == k),
                    "preset {}: parameter {k} has no source",
                    p.name
                );
            }
            for (s, _) in &sources {
                assert!(
                    keys.contains(s),
                    "preset {}: a source for {s}, which it does not have",
                    p.name
                );
            }
        }
    }
}
