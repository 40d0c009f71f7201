//! Raw NAND flash behind a flash translation layer (the `SimFlash` device of architecture
//! §3).
//!
//! - [`ftl`]: the page-mapping FTL (dies, out-of-place updates, greedy GC, wear
//!   levelling, over-provisioning, endurance). It stores the data itself and reports the
//!   physical operations each request causes; both flash devices are built on it.
//! - [`simflash`]: [`SimFlash`], one flash chip with a serial virtual clock, and
//!   [`FlashConfig`] with the presets.
//!
//! The SSD model ([`crate::device::ssd`]) puts the same FTL behind channels, dies, a write
//! cache and a host link.

pub(crate) mod ftl;
pub(crate) mod simflash;

pub use ftl::{FlashOp, Ftl, FtlGeometry, FtlParams, OpCause, OpKind};
pub use simflash::{FlashConfig, SimFlash};
