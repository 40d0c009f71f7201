//! The one statistics vocabulary of the buffered stores: what every one of
//! them counts under the same name, reported as `store.buffered.*`. Counters (amounts that
//! add up over operations) are plain fields; the buffer's and the log's levels are under
//! `gauges`; the options that shape the numbers are under `settings` (the "metric kinds"
//! convention of every report: the runner sums counters and keeps the last value of
//! gauges and settings). A policy's own extras are reported apart (`store.fast.*`,
//! `store.efind.*`).

use serde::{Deserialize, Serialize};

use super::buffer::BufferGauges;
use crate::store::log::{LogStats, Recovered, ScanEnd};

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

/// What the last recovery (opening a store that holds a log) did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Wall time of the recovery (log scan, replay, new log generation) in seconds.
    pub seconds: f64,
    /// Committed operations found in the log.
    pub operations: u64,
    /// Records replayed.
    pub records_replayed: u64,
    /// Records describing nodes that a later flush made durable (not kept).
    pub records_skipped: u64,
    /// Records of an unfinished operation, dropped.
    pub records_dropped: u64,
    /// Bytes of an unfinished operation, dropped.
    pub bytes_dropped: u64,
    /// Why the log scan stopped (`end of log`, or what was invalid where).
    pub log_end: String,
    /// Nodes in the rebuilt buffer.
    pub buffered_nodes: u64,
    /// Why the log shows a crash after the last checkpoint (operations logged past it, a
    /// compaction the header does not know, an unfinished operation); none when the
    /// store was closed at a checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_checkpoint: Option<String>,
    /// Damage in the middle of the log accepted when opening (`--accept-loss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_loss: Option<String>,
}

impl RecoveryReport {
    /// The report of a log recovered as `rec`, over a header whose checkpoint saved log
    /// generation `generation` holding `operations` committed operations (none: an older
    /// header that did not save them).
    pub(super) fn of(rec: &Recovered, generation: Option<u64>, operations: Option<u64>) -> Self {
        let ops = rec.operations.len() as u64;
        let after_checkpoint = if generation != Some(rec.generation) {
            Some(format!(
                "its log is at generation {} but its last checkpoint saved generation {}",
                rec.generation,
                generation.map_or("none".to_string(), |g| g.to_string())
            ))
        } else if operations.is_some_and(|n| ops > n) {
            Some(format!(
                "its log holds {} operations logged after its last checkpoint",
                ops - operations.unwrap_or(0)
            ))
        } else if rec.dropped_records > 0 || rec.dropped_bytes > 0 {
            Some(format!(
                "its log ends in an unfinished operation ({} records, {} bytes)",
                rec.dropped_records, rec.dropped_bytes
            ))
        } else {
            None
        };
        RecoveryReport {
            after_checkpoint,
            accepted_loss: rec.accepted_loss.clone(),
            operations: rec.operations.len() as u64,
            records_dropped: rec.dropped_records,
            bytes_dropped: rec.dropped_bytes,
            log_end: match &rec.end {
                ScanEnd::End => "end of log".into(),
                ScanEnd::Invalid { offset, reason } => {
                    format!("invalid record at log byte {offset}: {reason}")
                }
            },
            ..Default::default()
        }
    }
}
