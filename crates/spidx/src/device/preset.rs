//! Device presets: named, documented parameter sets for the devices of the seeds and of
//! public simulators (`DESIGN.md` section 3). `spidx devices` lists them.

use super::config::DeviceConfig;
use super::memory::MemoryConfig;

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
    vec![Preset {
        name: "memory",
        summary: "RAM, zero latency: the CPU-only baseline",
        source: "-",
        config: DeviceConfig::Memory(MemoryConfig::default()),
    }]
}

/// The preset called `name`, if any.
pub fn find(name: &str) -> Option<Preset> {
    presets().into_iter().find(|p| p.name == name)
}

/// The names of all presets (for error messages).
pub fn names() -> Vec<&'static str> {
    presets().iter().map(|p| p.name).collect()
}
