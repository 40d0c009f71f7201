//! spidx: spatial indices on real and simulated storage devices.
//!
//! The crate is organised by the layers of `docs/architecture.md` (data flows down, each layer
//! knows only the one below it through a small trait):
//!
//! ```text
//!   SpatialIndex  -> NodeStore -> PageCache -> Device
//! ```
//!
//! * [`device`]: the storage devices (memory, real files, simulated NAND flash behind an
//!   FTL, an SSD model, a hard-disk model and throttled cloud disks) and their presets;
//!   [`iotest`], a small fio-like probe of a device;
//! * [`cache`]: page buffers (LRU, HLRU, S2Q, 2Q) between node stores and devices;
//! * [`store`]: the `NodeStore` seam and the plain (direct) store; [`node`]: node pages;
//! * [`index`]: the R-tree family; [`geom`]: boxes;
//! * [`objects`]: exact geometries on the device; [`query`]: exact predicates; [`spatial`]:
//!   index directories with filter and refinement queries;
//! * beside the stack, [`data`]: datasets (generation, import, file formats);
//! * on top, [`experiment`]: spec files, matrices of runs, workloads, the measurement
//!   protocol and the results database.

#![allow(clippy::needless_range_loop)] // geometry code indexes several arrays by axis

pub mod cache;
pub mod calibrate;
pub mod clock;
pub mod data;
pub mod device;
pub mod error;
pub mod experiment;
pub mod geom;
pub mod index;
pub mod iotest;
pub mod node;
pub mod objects;
pub mod query;
pub mod spatial;
pub mod store;
#[cfg(any(test, feature = "test-fixtures"))]
pub mod test_support;
pub mod units;

pub use error::{Error, Result};

/// This build's spidx version (the crate's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
