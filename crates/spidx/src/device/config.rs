//! [`DeviceConfig`]: the complete, validated description of one device, as written in
//! device files and experiment specs (`kind = "..."` plus that kind's parameters), and the
//! single place where a description becomes an open [`Device`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::file::{FileAccess, FileConfig, FileDevice};
use super::flash::{FlashConfig, SimFlash};
use super::hdd::{HddConfig, SimHdd};
use super::memory::{MemoryConfig, MemoryDevice};
use super::overlay::ReadOnlyOverlay;
use super::ssd::{SimSsd, SsdConfig};
use super::throttled::{ThrottleConfig, Throttled};
use super::Device;
use crate::Result;

/// A throttled device: caps (`limits`) over another device (`inner`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottledConfig {
    /// IOPS and throughput caps, latency.
    pub limits: ThrottleConfig,
    /// The device under the caps.
    pub inner: Box<DeviceConfig>,
}

/// A device description. Serialised with a `kind` tag: `memory`, `file`, `simflash`,
/// `ssd`, `hdd` or `throttled`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceConfig {
    /// RAM, zero latency.
    Memory(MemoryConfig),
    /// A real file, measured.
    File(FileConfig),
    /// Raw NAND flash behind a page-mapping FTL.
    Simflash(FlashConfig),
    /// The SSD model: flash with channels, dies and a write cache.
    Ssd(SsdConfig),
    /// The hard-disk model.
    Hdd(HddConfig),
    /// Caps over another device (cloud disks).
    Throttled(ThrottledConfig),
}

impl DeviceConfig {
    /// The `kind` tag of this description.
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceConfig::Memory(_) => "memory",
            DeviceConfig::File(_) => "file",
            DeviceConfig::Simflash(_) => "simflash",
            DeviceConfig::Ssd(_) => "ssd",
            DeviceConfig::Hdd(_) => "hdd",
            DeviceConfig::Throttled(_) => "throttled",
        }
    }

    /// Checks every parameter, naming the first invalid one.
    pub fn validate(&self) -> Result<()> {
        match self {
            DeviceConfig::Memory(_) => Ok(()),
            DeviceConfig::File(c) => c.validate(),
            DeviceConfig::Simflash(c) => c.validate(),
            DeviceConfig::Ssd(c) => c.validate(),
            DeviceConfig::Hdd(c) => c.validate(),
            DeviceConfig::Throttled(c) => {
                c.limits.validate()?;
                c.inner.validate()
            }
        }
    }

    /// Makes the paths of `file` devices absolute (relative to the current directory), so a
    /// description saved with an index still names the same file from another directory.
    pub(crate) fn absolutize_paths(&mut self) -> Result<()> {
        match self {
            DeviceConfig::File(c) => {
                c.path = std::path::absolute(&c.path).map_err(|e| crate::Error::io(&c.path, e))?;
                Ok(())
            }
            DeviceConfig::Throttled(t) => t.inner.absolutize_paths(),
            _ => Ok(()),
        }
    }

    /// The file a `file:` device (or a throttled one over it) keeps its pages in; `None`
    /// for the simulated devices.
    pub(crate) fn file_path(&self) -> Option<&Path> {
        match self {
            DeviceConfig::File(c) => Some(&c.path),
            DeviceConfig::Throttled(t) => t.inner.file_path(),
            _ => None,
        }
    }

    /// Whether the device is simulated (its clock is modelled, not measured).
    pub fn is_simulated(&self) -> bool {
        match self {
            DeviceConfig::File(_) => false,
            DeviceConfig::Throttled(t) => t.inner.is_simulated(),
            _ => true,
        }
    }

    /// Opens the device with pages of `page_size` bytes. With `state`, a simulated device
    /// loads its saved state from that file if it exists, and [`Device::persist`] saves it
    /// there; real devices ignore it (the file is its own state).
    pub fn open(&self, page_size: usize, state: Option<&Path>) -> Result<Box<dyn Device>> {
        self.open_with(page_size, state, FileAccess::Create)
    }

    /// Opens the device as [`open`](Self::open) does, a `file` device with `access` (an
    /// existing file only unless creating; locked). With [`FileAccess::Read`] the device
    /// is wrapped in a [`ReadOnlyOverlay`]: nothing an open writes reaches the file or the
    /// saved state.
    pub fn open_with(
        &self,
        page_size: usize,
        state: Option<&Path>,
        access: FileAccess,
    ) -> Result<Box<dyn Device>> {
        let dev = self.open_inner(page_size, state, access)?;
        Ok(if access == FileAccess::Read {
            Box::new(ReadOnlyOverlay::new(dev))
        } else {
            dev
        })
    }

    fn open_inner(
        &self,
        page_size: usize,
        state: Option<&Path>,
        access: FileAccess,
    ) -> Result<Box<dyn Device>> {
        self.validate()?;
        Ok(match self {
            DeviceConfig::Memory(c) => Box::new(MemoryDevice::open(c, page_size, state)?),
            DeviceConfig::File(c) => Box::new(FileDevice::open_with(c, page_size, access)?),
            DeviceConfig::Simflash(c) => Box::new(SimFlash::open(c, page_size, state)?),
            DeviceConfig::Ssd(c) => Box::new(SimSsd::open(c, page_size, state)?),
            DeviceConfig::Hdd(c) => Box::new(SimHdd::open(c, page_size, state)?),
            DeviceConfig::Throttled(c) => {
                let inner = c.inner.open_inner(page_size, state, access)?;
                let own = state.map(|p| p.with_extension("throttle"));
                Box::new(Throttled::new_with_state(inner, &c.limits, own.as_deref())?)
            }
        })
    }
}
