//! spidx: spatial indices on real and simulated storage devices.
//!
//! The crate is organised by the layers of `DESIGN.md` (data flows down, each layer
//! knows only the one below it through a small trait):
//!
//! ```text
//!   SpatialIndex  -> NodeStore -> PageCache -> Device
//! ```
//!
//! This version provides the bottom layer, [`device`]: the storage devices (memory,
//! real files, simulated NAND flash behind an FTL, an SSD model, a hard-disk model and
//! throttled cloud disks), their presets, and [`iotest`], a small fio-like probe; and, beside
//! the stack, [`data`]: the datasets indices are built on (generation, import, file formats).

pub mod data;
pub mod device;
pub mod error;
pub mod iotest;
pub mod units;

pub use error::{Error, Result};
