//! Device presets: named, documented parameter sets for the devices of the seeds and of
//! public simulators (architecture §3). `spidx devices` lists them.

use super::config::{DeviceConfig, ThrottledConfig};
use super::flash::FlashConfig;
use super::hdd::HddConfig;
use super::memory::MemoryConfig;
use super::ssd::SsdConfig;
use super::throttled::ThrottleConfig;

/// A named device description with a one-line summary and where its numbers come from.
#[derive(Debug, Clone)]
pub struct Preset {
    /// The name users type (`--device NAME`).
    pub name: &'static str,
    /// What the preset models.
    pub summary: &'static str,
    /// Where the parameter values come from.
    pub source: &'static str,
    /// The parameters.
    pub config: DeviceConfig,
}

/// All presets, in the order `spidx devices` lists them.
pub fn presets() -> Vec<Preset> {
    let hdd = DeviceConfig::Hdd(HddConfig::desktop_7200());
    let ssd = DeviceConfig::Ssd(SsdConfig::v300());
    vec![
        Preset {
            name: "memory",
            summary: "RAM, zero latency: the CPU-only baseline",
            source: "-",
            config: DeviceConfig::Memory(MemoryConfig::default()),
        },
        Preset {
            name: "flashdbsim",
            summary: "raw NAND: 2 KB pages, 64 pages/block, read 25 / program 200 / erase 1500 us",
            source: "Flash-DBSim's example configuration",
            config: DeviceConfig::Simflash(FlashConfig::flashdbsim()),
        },
        Preset {
            name: "seed-table2",
            summary: "raw NAND: 2 KB pages, 64 pages/block, read 30 / program 300 / erase 2500 us",
            source: "Table 2 of the flash-simulator paper (seeds/carniel-flash-simulator-vs-ssd)",
            config: DeviceConfig::Simflash(FlashConfig::seed_table2()),
        },
        Preset {
            name: "x25m",
            summary: "raw NAND: 4 KB pages, 256 pages/block, read 50 / program 900 / erase 2000 us",
            source: "FlashSim's default (Intel X25-M class SLC)",
            config: DeviceConfig::Simflash(FlashConfig::x25m()),
        },
        Preset {
            name: "mlc",
            summary: "raw NAND: 8 KB pages, 256 pages/block, read 75 / program 750 / erase 3800 us, 333 MB/s bus",
            source: "MQSim's default MLC configuration",
            config: DeviceConfig::Simflash(FlashConfig::mlc()),
        },
        Preset {
            name: "ssd-v300",
            summary: "SATA SSD: 8 channels x 4 dies, 1 MB write cache; 4 KB random QD32 285 MB/s read, 109 MB/s write",
            source: "calibrated to the seeds' Kingston V300 measurements (docs/devices.md)",
            config: ssd.clone(),
        },
        Preset {
            name: "hdd-7200",
            summary: "7200 rpm desktop hard disk (2 TB, 8 MB cache, 8.9 ms average seek, 93.5 MB/s)",
            source: "a mix of the seeds' drives: Carniel et al.'s 2 TB capacity with Emrich et al.'s Table 1 and 8 MB cache; WD datasheet seek extremes; command overheads of the Hitachi Deskstar 7K3000 specification (class stand-in); per parameter: spidx devices hdd-7200",
            config: hdd.clone(),
        },
        Preset {
            name: "hdd-wd2tb",
            summary: "Carniel et al.'s 2 TB 7200 rpm WD drive: 64 MB cache, 164-82 MB/s in 16 zones, SATA 6 Gb/s",
            source: "seeds (2 TB, 7200 rpm); WD 2 TB 7200 rpm datasheets (64 MB, 164 MB/s; model assumed); seeks as hdd-7200; command overheads of the Hitachi Deskstar 7K3000 specification (class stand-in); per parameter: spidx devices hdd-wd2tb",
            config: DeviceConfig::Hdd(HddConfig::carniel_wd_2tb()),
        },
        Preset {
            name: "hdd-wd2500aajs",
            summary: "Emrich et al.'s WD Caviar Blue WD2500AAJS: 250 GB, 7200 rpm, 8 MB cache, 8.9 ms seek, 93.5 MB/s",
            source: "Emrich et al. 2010, section 4 and Table 1; other figures as hdd-7200 (WD Caviar datasheets; Hitachi Deskstar 7K3000 command overheads, class stand-in); per parameter: spidx devices hdd-wd2500aajs",
            config: DeviceConfig::Hdd(HddConfig::wd2500aajs()),
        },
        Preset {
            name: "azure-standard-hdd",
            summary: "cloud disk: hdd-7200 capped at 500 IOPS and 60 MB/s, 1 ms network latency",
            source: "Azure Standard HDD limits quoted by the seeds (Carniel et al. 2017); latency assumed",
            config: DeviceConfig::Throttled(ThrottledConfig {
                limits: ThrottleConfig::azure_standard_hdd(),
                inner: Box::new(hdd),
            }),
        },
        Preset {
            name: "azure-premium-ssd",
            summary: "cloud disk: ssd-v300 capped at 5,000 IOPS and 200 MB/s, 1 ms network latency",
            source: "Azure Premium SSD limits quoted by the seeds (Carniel et al. 2017); latency assumed",
            config: DeviceConfig::Throttled(ThrottledConfig {
                limits: ThrottleConfig::azure_premium_ssd(),
                inner: Box::new(ssd),
            }),
        },
    ]
}

/// The preset called `name`, if any.
pub fn find(name: &str) -> Option<Preset> {
    presets().into_iter().find(|p| p.name == name)
}

/// The names of all presets (for error messages).
pub fn names() -> Vec<&'static str> {
    presets().iter().map(|p| p.name).collect()
}
