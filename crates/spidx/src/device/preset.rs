//! Device presets: named, documented parameter sets for the devices of the seeds and of
//! public simulators (`DESIGN.md` section 3). `spidx devices` lists them.

use super::config::{DeviceConfig, ThrottledConfig};
use super::hdd::HddConfig;
use super::memory::MemoryConfig;
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
    vec![
        Preset {
            name: "memory",
            summary: "RAM, zero latency: the CPU-only baseline",
            source: "-",
            config: DeviceConfig::Memory(MemoryConfig::default()),
        },
        Preset {
            name: "hdd-7200",
            summary: "7200 rpm desktop hard disk (2 TB, 8.9 ms average seek, 93.5 MB/s)",
            source: "the seeds' WD 2 TB drive; Emrich et al. 2010 Table 1; WD datasheet seek extremes",
            config: hdd.clone(),
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
