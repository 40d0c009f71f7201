//! [`DeviceConfig`]: the complete, validated description of one device, as written in
//! device files and experiment specs (`kind = "..."` plus that kind's parameters), and the
//! single place where a description becomes an open [`Device`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::file::{FileConfig, FileDevice};
use super::memory::{MemoryConfig, MemoryDevice};
use super::Device;
use crate::Result;

/// A device description. Serialised with a `kind` tag: `memory`, `file`, `simflash`,
/// `ssd`, `hdd` or `throttled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceConfig {
    /// RAM, zero latency.
    Memory(MemoryConfig),
    /// A real file, measured.
    File(FileConfig),
}

impl DeviceConfig {
    /// The `kind` tag of this description.
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceConfig::Memory(_) => "memory",
            DeviceConfig::File(_) => "file",
        }
    }

    /// Checks every parameter, naming the first invalid one.
    pub fn validate(&self) -> Result<()> {
        match self {
            DeviceConfig::Memory(_) => Ok(()),
            DeviceConfig::File(c) => c.validate(),
        }
    }

    /// Whether the device is simulated (its clock is modelled, not measured).
    pub fn is_simulated(&self) -> bool {
        !matches!(self, DeviceConfig::File(_))
    }

    /// Opens the device with pages of `page_size` bytes. With `state`, a simulated device
    /// loads its saved state from that file if it exists, and [`Device::persist`] saves it
    /// there; real devices ignore it (the file is its own state).
    pub fn open(&self, page_size: usize, state: Option<&Path>) -> Result<Box<dyn Device>> {
        self.validate()?;
        Ok(match self {
            DeviceConfig::Memory(c) => Box::new(MemoryDevice::open(c, page_size, state)?),
            DeviceConfig::File(c) => Box::new(FileDevice::open(c, page_size)?),
        })
    }
}
