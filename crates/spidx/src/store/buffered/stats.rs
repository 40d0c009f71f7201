//! The one statistics vocabulary of the buffered stores: what every one of
//! them counts under the same name, reported as `store.buffered.*`. Counters (amounts that
//! add up over operations) are plain fields; the buffer's and the log's levels are under
//! `gauges`; the options that shape the numbers are under `settings` (the "metric kinds"
//! convention of every report: the runner sums counters and keeps the last value of
//! gauges and settings). A policy's own extras are reported apart (`store.fast.*`,
//! `store.efind.*`).

use serde::{Deserialize, Serialize};

use super::buffer::BufferGauges;
use crate::store::log::LogStats;

/// Counters, gauges and settings every buffered store reports. See the module
/// documentation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BufferedStats {
    /// Flushing operations: units written (the end-of-workload write-back and checkpoints
    /// count theirs).
    pub flushes: u64,
    /// Node pages written by flushes.
    pub flushed_nodes: u64,
    /// Device write requests of flushes (one per run of consecutive pages).
    pub flush_write_requests: u64,
    /// Full node images logged before in-place writes (torn-write protection).
    pub image_records: u64,
    /// Entry bytes of those images.
    pub image_bytes: u64,
    /// The log's counters (with its gauges under `log.gauges`).
    pub log: LogStats,
    /// The write buffer now (bytes, peak, nodes by status).
    pub gauges: BufferGauges,
    /// The options behind the numbers.
    pub settings: BufferSettings,
}

/// The options of a buffered store that shape its statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferSettings {
    /// Capacity of the write buffer in bytes.
    pub write_buffer: u64,
    /// Nodes per flushing unit.
    pub flushing_unit: u64,
    /// The flushing policy (`fast-star`, `mthao`, ...).
    pub flush_policy: String,
    /// When log commits are synced (`each-op`, `group:N`, `none`).
    pub log_sync: String,
    /// Pages of the log (both regions and their headers).
    pub log_pages: u64,
}
