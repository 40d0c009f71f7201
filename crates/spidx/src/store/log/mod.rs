//! The shared write-ahead log of the flash-aware stores (FAST, eFIND; architecture
//! §6). It sits between a store and the [`Device`]: the store hands it opaque payloads
//! (the log never looks inside them) and the log writes them sequentially into its own
//! region of the device, so its writes and syncs are counted and timed like any other I/O.
//!
//! # Layout
//! The log owns a whole device (usually a [`Partition`](crate::device::partition::Partition)
//! carved from the end of a node partition) of `P >= 4` pages:
//! * pages 0 and 1: the headers of regions 0 and 1 (`magic "SPIDXLOG"`, version, region,
//!   generation, page size, region pages, CRC-32);
//! * two equal data regions of `(P - 2) / 2` pages. The region whose header is valid and has
//!   the highest generation is the live log.
//!
//! # Records
//! The live region holds a byte stream of records `[len u32][gen u32][kind u32][crc u32]
//! [payload]`. `kind` is a data record or a commit marker. The CRC-32 is *chained*: it
//! covers the previous record's CRC (for the first record, a seed made of the generation,
//! the region and a nonce chosen when the log was created), the first three fields and the
//! payload. Records carry the low 32 bits of the region's generation. Together, stale
//! records left in a region by an older generation, an older crashed compaction or an older
//! log on the same device are never read as a continuation of the live stream.
//!
//! # Operations and durability
//! Records [`append`](Log::append)ed during an operation become valid only with the
//! operation's commit marker ([`commit`](Log::commit)): recovery never replays half an
//! operation. When a commit is durable depends on [`LogSync`]:
//! * `each-op`: every commit writes the log's tail pages and syncs the device; an operation
//!   is acknowledged (survives any later crash) when `commit` returns;
//! * `group:N`: every N-th commit writes and syncs; an operation is acknowledged once the
//!   group it belongs to has been synced (at most N − 1 acknowledged-to-the-caller operations
//!   can be lost by a crash; [`Log::unsynced_commits`] says how many are pending);
//! * `none` (the default): only full log pages are written, never synced between
//!   checkpoints; durability comes with the store's checkpoint (as for the direct store), and
//!   what reached the device is still recovered up to the last complete operation.
//!
//! [`sync`](Log::sync) forces everything out (stores call it at checkpoints and before
//! writing pages in place whose recovery depends on logged records).
//!
//! # Recovery
//! [`Log::open`] reads both headers, scans the live region and returns the payloads of every
//! committed operation in order ([`Recovered`]). A torn tail (the unsynced end a crash cut)
//! is not an error: the scan stops at the first invalid record, and what was dropped
//! (uncommitted records, bytes, the reason) is reported. A damaged record *followed by
//! valid records of the live stream* is not a torn tail (writes reach the log in order, so
//! nothing a crash cut can be followed by what was written after it): it is corruption, and
//! opening fails naming the offset, the operations that survive before it and those found
//! after it, unless [`LogConfig::accept_loss`] keeps the valid prefix explicitly. The valid
//! records after the damage are found by resynchronising on a record whose chained CRC
//! matches the damaged record's stored CRC, or on two consecutive records whose chain
//! verifies (a false match needs a 32-bit CRC collision). Invalid headers on both regions
//! are an error. A region header that is neither valid nor empty cannot come from a torn
//! write (sector writes are atomic): it is ignored in favour of the other region only if
//! its region holds no newer log (a first record chaining on the log's nonce with a
//! higher generation); otherwise opening fails unless the loss is accepted. A store that
//! saved the log's generation and operations at its last checkpoint
//! ([`LogConfig::checkpoint`]) has a log behind them (rolled back, or another index's)
//! refused before anything is written.
//! Opening always starts a new generation in the other region holding the recovered
//! payloads (one compaction), so appends never land next to stale records of a crashed run.
//!
//! # Compaction
//! [`compact`](Log::compact) writes the surviving payloads (as one committed operation) into
//! the other region with the next generation, syncs, and only then writes that region's
//! header and syncs again: a crash at any point leaves either the old log or the new one.

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::{Error, Result};
use scan::After;

const MAGIC: &[u8; 8] = b"SPIDXLOG";
/// The log format written: 2 = payloads in the shared record codec of the buffered stores
/// ([`crate::store::buffered::record`]); 1 = FAST's and eFIND's own codecs (FAST's records
/// are unchanged in format 2, eFIND's are not).
pub const LOG_FORMAT: u32 = 2;
const RECORD_HEADER: usize = 16;
const KIND_DATA: u32 = 1;
const KIND_COMMIT: u32 = 2;
/// The reason of a scan stopped at a complete record of the live stream whose generation
/// field alone is wrong: damage, never a torn write.
const GENERATION_DAMAGED: &str = "its generation field is damaged";

/// When commits reach stable storage. See the module documentation. The default is `none`:
/// every store's unit of durability is then the checkpoint, as the direct store's, so that
/// stores compared with their defaults pay for the same guarantee (their logs are still
/// written, and counted, as their pages fill).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogSync {
    /// Write and sync at every commit.
    EachOp,
    /// Write and sync at every N-th commit (group commit).
    Group(u32),
    /// Write only full pages; never sync between checkpoints (the default).
    #[default]
    None,
}

impl LogSync {
    /// Whether commits are durable only at checkpoints (the default).
    pub fn is_none(&self) -> bool {
        *self == LogSync::None
    }
}

impl std::fmt::Display for LogSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogSync::EachOp => write!(f, "each-op"),
            LogSync::Group(n) => write!(f, "group:{n}"),
            LogSync::None => write!(f, "none"),
        }
    }
}

impl std::str::FromStr for LogSync {
    type Err = Error;

    /// Parses `each-op`, `group:N` (N >= 1) or `none`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "log sync",
                format!("'{s}'; choose each-op, group:N (N >= 1) or none"),
            )
        };
        match s.trim() {
            "each-op" => Ok(LogSync::EachOp),
            "none" => Ok(LogSync::None),
            t => {
                let n = t.strip_prefix("group:").ok_or_else(bad)?;
                match n.parse::<u32>() {
                    Ok(n) if n >= 1 => Ok(LogSync::Group(n)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

impl Serialize for LogSync {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for LogSync {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Options of a [`Log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogConfig {
    /// Durability of commits.
    pub sync: LogSync,
    /// The oldest log format (see [`LOG_FORMAT`]) whose payloads the store can read:
    /// opening an older log is an error and leaves it untouched.
    pub oldest_format: u32,
    /// Open a log damaged in its middle by keeping the operations before the damage
    /// (`spidx recover --accept-loss`); otherwise opening it is an error.
    pub accept_loss: bool,
    /// The generation and the committed operations of that generation that the store's
    /// header saved at its last checkpoint, when it saved them: a log found behind them
    /// (an older generation, or fewer operations) was rolled back or replaced, and
    /// opening it is an error, before anything is written.
    pub checkpoint: Option<(u64, u64)>,
}

impl LogConfig {
    /// Options with `sync`, reading every log format.
    pub fn new(sync: LogSync) -> Self {
        LogConfig {
            sync,
            oldest_format: 1,
            accept_loss: false,
            checkpoint: None,
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig::new(LogSync::default())
    }
}

/// Counters of a [`Log`] (the device counts the I/O itself).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogStats {
    /// Data records appended.
    pub records: u64,
    /// Bytes appended (record headers included, commit markers included).
    pub bytes: u64,
    /// Operations committed.
    pub commits: u64,
    /// Page write requests the log sent to the device.
    pub write_requests: u64,
    /// Pages written by the log.
    pub pages_written: u64,
    /// Device syncs the log asked for.
    pub syncs: u64,
    /// Compactions (including the one every open does).
    pub compactions: u64,
    /// The log now.
    pub gauges: LogGauges,
}

/// The state of a [`Log`] now (levels, not amounts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogGauges {
    /// Committed operations not yet synced (lost by a crash now).
    pub unsynced_commits: u64,
    /// Bytes of records in the live region.
    pub used_bytes: u64,
}

/// Why the scan of a log stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScanEnd {
    /// The end of what was written (an empty slot or a record of an older generation).
    End,
    /// A record that failed validation (torn or corrupted), at this byte offset.
    Invalid {
        /// Byte offset in the region's record stream.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
}

/// What [`Log::open`] recovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Payloads of committed operations, in log order, grouped by operation.
    pub operations: Vec<Vec<Vec<u8>>>,
    /// Data records after the last commit marker (an unfinished operation), dropped.
    pub dropped_records: u64,
    /// Bytes from the end of the last committed operation to where the scan stopped.
    pub dropped_bytes: u64,
    /// Why the scan stopped.
    pub end: ScanEnd,
    /// The generation of the log that was recovered.
    pub generation: u64,
    /// The format of the log that was recovered (see [`LOG_FORMAT`]).
    pub format: u32,
    /// A region header that was not valid and not empty (a crash during a compaction),
    /// ignored in favour of the other region.
    pub ignored_header: Option<String>,
    /// Damage in the middle of the log that was accepted ([`LogConfig::accept_loss`]):
    /// what was lost.
    pub accepted_loss: Option<String>,
}

impl Recovered {
    /// All committed payloads in order.
    pub(crate) fn payloads(&self) -> impl Iterator<Item = &[u8]> {
        self.operations.iter().flatten().map(|p| p.as_slice())
    }
}

/// A sequential log over a device. See the module documentation.
pub struct Log {
    dev: Box<dyn Device>,
    config: LogConfig,
    page_size: usize,
    region_pages: u64,
    /// Where the record stream is and ends (saved and given back by a failed compaction).
    at: Tail,
    /// Bytes of the record stream from page `at.buf_page` (region-relative) on that may not
    /// be on the device yet (at most one partial page once written out).
    buf: Vec<u8>,
    /// Chosen at creation, kept by compactions: part of the CRC seed.
    nonce: u64,
    /// Committed operations not yet synced.
    unsynced: u64,
    /// Operations committed in the live generation (a compaction's snapshot counts one).
    generation_commits: u64,
    stats: LogStats,
    /// The tail buffer a compaction last replaced, kept for the next one (compactions are
    /// frequent; a failed one gives the old tail back).
    spare_buf: Vec<u8>,
    /// The highest generation a compaction ever wrote records with (a failed compaction
    /// may have left some in the other region): the next compaction goes above it, so
    /// stale records of a failed compaction are never of the live generation.
    burned: u64,
}

/// Where a log's record stream is and ends: the live region and its generation, the first
/// page of the in-memory tail, the stream's length, the records of the open operation and
/// the CRC chain.
#[derive(Debug, Clone, Copy, Default)]
struct Tail {
    region: u64,
    generation: u64,
    /// First page (region-relative) of the in-memory tail.
    buf_page: u64,
    /// Length of the record stream.
    used: u64,
    /// Data records appended since the last commit.
    open_records: u64,
    /// CRC of the last record appended (the chain).
    prev_crc: u32,
}

impl Log {
    /// Creates an empty log over `device` (erasing any previous one).
    pub fn create(device: Box<dyn Device>, config: LogConfig) -> Result<Log> {
        let mut log = Log::new(device, config)?;
        // Above any generation a previous log on this device (or a crashed compaction of
        // it, which writes records one generation ahead of its header) may have used.
        let mut generation = 1;
        for r in 0..2 {
            if let HeaderState::Valid(g, _, _) = log.read_header(r)? {
                generation = generation.max(g + 2);
            }
        }
        let zero = vec![0u8; log.page_size];
        log.dev.write(1, &zero)?;
        log.at.region = 0;
        log.at.generation = generation;
        log.nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ generation.rotate_left(32);
        log.at.prev_crc = log.seed();
        log.write_header()?;
        log.stats.syncs += 1;
        log.dev.sync()?;
        Ok(log)
    }

    /// Opens the log on `device`, recovering every committed operation; then starts a new
    /// generation holding them (see the module documentation).
    pub fn open(device: Box<dyn Device>, config: LogConfig) -> Result<(Log, Recovered)> {
        let mut log = Log::new(device, config)?;
        let mut best: Option<(u64, u64, u64, u32)> = None;
        let mut ignored = None;
        let mut bad = Vec::new();
        for r in 0..2 {
            match log.read_header(r)? {
                HeaderState::Valid(g, nonce, format) => {
                    if best.is_none_or(|(_, bg, _, _)| g > bg) {
                        best = Some((r, g, nonce, format));
                    }
                }
                HeaderState::Empty => {}
                HeaderState::Invalid(why) => bad.push(format!("region {r}: {why}")),
            }
        }
        let Some((region, generation, nonce, format)) = best else {
            return Err(Error::corrupted(
                "log header",
                if bad.is_empty() {
                    "no log header found (the log was never created)".to_string()
                } else {
                    bad.join("; ")
                },
            ));
        };
        if format < config.oldest_format {
            return Err(Error::invalid(
                "log format",
                format!(
                    "the log is in format {format}, written by an older spidx whose records \
                     this store no longer reads (it reads formats {} to {LOG_FORMAT}); the log \
                     was left as it is: rebuild the index with this version",
                    config.oldest_format
                ),
            ));
        }
        if !bad.is_empty() {
            // A header that is neither valid nor empty: a torn header write leaves the
            // region's older header or zeros (sector writes are atomic), so it is damage.
            // Ignoring it is safe only if its region holds no log newer than the chosen one
            // (a compaction writes its records, syncs, then the header).
            let other = 1 - region;
            if let Some(g) = log.newer_records(other, generation, nonce)? {
                let what = format!(
                    "the header of log region {other} is damaged ({}) and that region holds a \
                     newer log (generation {g}) than the region with a valid header \
                     (generation {generation})",
                    bad.join("; ")
                );
                if !config.accept_loss {
                    return Err(Error::corrupted(
                        "log header",
                        format!(
                            "{what}: opening the older one would lose every operation of the \
                             newer. `spidx recover --accept-loss` keeps the older log; \
                             otherwise restore the index from a copy"
                        ),
                    ));
                }
            }
            ignored = Some(bad.join("; "));
        }
        if let Some((saved, _)) = config.checkpoint {
            if generation < saved {
                return Err(Error::corrupted(
                    "log",
                    format!(
                        "the log is at generation {generation} but the store header saved \
                         generation {saved} at its last checkpoint: the log was rolled back, \
                         or belongs to another index; restore the index from a copy"
                    ),
                ));
            }
        }
        log.at.region = region;
        log.at.generation = generation;
        log.nonce = nonce;
        let mut rec = log.scan()?;
        if let Some((saved, saved_ops)) = config.checkpoint {
            let found = rec.operations.len() as u64;
            if generation == saved && found < saved_ops && !config.accept_loss {
                return Err(Error::corrupted(
                    "log",
                    format!(
                        "the log holds {found} committed operations of generation \
                         {generation}, but the store header saved {saved_ops} at its last \
                         checkpoint: the log lost operations it had made durable (rolled back, \
                         truncated or damaged at its end). `spidx recover --accept-loss` keeps \
                         what is left; otherwise restore the index from a copy"
                    ),
                ));
            }
        }
        if let ScanEnd::Invalid { offset, reason } = &rec.end {
            let after = match log.valid_after(*offset)? {
                Some(a) => Some(a),
                // A complete record whose generation alone is wrong was damaged, not torn.
                None if reason.starts_with(GENERATION_DAMAGED) => Some(After {
                    offset: *offset,
                    records: 0,
                    commits: 0,
                }),
                None => None,
            };
            if let Some(after) = after {
                let loss = format!(
                    "the record at log byte {offset} is damaged ({reason}) and valid records \
                     follow it (from byte {}: {} records, {} committed operations): this is \
                     damage, not a torn tail. {} committed operations before it survive; the \
                     damaged operation and the {} found after it would be lost",
                    after.offset,
                    after.records,
                    after.commits,
                    rec.operations.len(),
                    after.commits
                );
                if !config.accept_loss {
                    return Err(Error::corrupted(
                        "log",
                        format!(
                            "{loss}. `spidx recover --accept-loss` keeps the operations \
                             before the damage; otherwise restore the index from a copy"
                        ),
                    ));
                }
                rec.accepted_loss = Some(loss);
            }
        }
        rec.ignored_header = ignored;
        rec.format = format;
        let payloads: Vec<Vec<u8>> = rec.payloads().map(<[u8]>::to_vec).collect();
        log.compact(payloads.iter().map(Vec::as_slice))?;
        Ok((log, rec))
    }

    fn new(device: Box<dyn Device>, config: LogConfig) -> Result<Log> {
        let page_size = device.page_size();
        let pages = device.capacity_pages();
        if pages < 4 {
            return Err(Error::invalid(
                "log size",
                format!("the log needs at least 4 pages; it has {pages}"),
            ));
        }
        if let LogSync::Group(0) = config.sync {
            return Err(Error::invalid("log sync", "group:0; N must be at least 1"));
        }
        Ok(Log {
            dev: device,
            config,
            page_size,
            region_pages: (pages - 2) / 2,
            at: Tail::default(),
            buf: Vec::new(),
            nonce: 0,
            unsynced: 0,
            generation_commits: 0,
            stats: LogStats::default(),
            spare_buf: Vec::new(),
            burned: 0,
        })
    }

    /// The log's options.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// The current generation (incremented by every compaction).
    pub fn generation(&self) -> u64 {
        self.at.generation
    }

    /// Bytes of records in the live region.
    pub fn used_bytes(&self) -> u64 {
        self.at.used
    }

    /// Bytes one region can hold.
    pub fn capacity_bytes(&self) -> u64 {
        self.region_pages * self.page_size as u64
    }

    /// Whether the live region is more than half full: the store should compact it at its
    /// next operation boundary.
    pub(crate) fn needs_compaction(&self) -> bool {
        self.at.used * 2 > self.capacity_bytes()
    }

    /// The log's counters and gauges.
    pub fn stats(&self) -> LogStats {
        LogStats {
            gauges: LogGauges {
                unsynced_commits: self.unsynced,
                used_bytes: self.at.used,
            },
            ..self.stats
        }
    }

    /// Operations committed in the live generation (a compaction's snapshot counts one).
    pub(crate) fn generation_commits(&self) -> u64 {
        self.generation_commits
    }

    /// Committed operations not yet synced (lost by a crash now).
    pub fn unsynced_commits(&self) -> u64 {
        self.unsynced
    }

    /// The device under the log.
    pub fn device(&self) -> &dyn Device {
        self.dev.as_ref()
    }

    /// The device under the log, mutably (checkpoints persist a log device of its own).
    pub fn device_mut(&mut self) -> &mut dyn Device {
        self.dev.as_mut()
    }

    /// Appends a data record to the current operation.
    pub fn append(&mut self, payload: &[u8]) -> Result<()> {
        self.append_with(|b| {
            b.extend_from_slice(payload);
            Ok(())
        })
    }

    /// Appends a data record whose payload `encode` writes straight into the log's
    /// in-memory tail (stores encode a record at every change: no intermediate copy).
    pub(crate) fn append_with(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        self.push_with(KIND_DATA, encode)?;
        self.at.open_records += 1;
        self.stats.records += 1;
        Ok(())
    }

    /// Ends the current operation (a commit marker), making it durable per [`LogSync`].
    /// An operation that appended nothing commits nothing.
    pub fn commit(&mut self) -> Result<()> {
        if self.at.open_records == 0 {
            return Ok(());
        }
        self.push(KIND_COMMIT, &[])?;
        self.at.open_records = 0;
        self.generation_commits += 1;
        self.stats.commits += 1;
        self.unsynced += 1;
        match self.config.sync {
            LogSync::EachOp => self.sync(),
            LogSync::Group(n) if self.unsynced >= u64::from(n) => self.sync(),
            LogSync::Group(_) => Ok(()),
            LogSync::None => self.write_full_pages(),
        }
    }

    /// Writes every committed record still in memory and syncs the device.
    pub fn sync(&mut self) -> Result<()> {
        self.write_out()?;
        self.stats.syncs += 1;
        self.dev.sync()?;
        self.unsynced = 0;
        Ok(())
    }

    /// Writes every committed record still in memory without syncing (the device keeps
    /// the order of writes; stores use it before in-place writes under `none`).
    pub fn write_out(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let ps = self.page_size;
        let pages = self.buf.len().div_ceil(ps);
        let mut out = std::mem::take(&mut self.buf);
        out.resize(pages * ps, 0);
        self.write_region_pages(self.at.buf_page, &out)?;
        // Keep the partial last page: later records extend it and rewrite it.
        let full = (self.at.used as usize - self.at.buf_page as usize * ps) / ps;
        let keep = self.at.used as usize - (self.at.buf_page as usize + full) * ps;
        self.at.buf_page += full as u64;
        // Move the kept bytes to the front: the buffer keeps its capacity for the records
        // to come (no reallocation per write).
        out.copy_within(full * ps..full * ps + keep, 0);
        out.truncate(keep);
        self.buf = out;
        Ok(())
    }

    /// Replaces the log by `payloads` (the records that must survive, as one committed
    /// operation) in the other region with the next generation. Atomic: a crash leaves the
    /// old log or the new one. Records of an unfinished operation are discarded.
    pub fn compact<'a>(&mut self, payloads: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
        self.compact_with(payloads, |p, b| {
            b.extend_from_slice(p);
            Ok(())
        })
    }

    /// Like [`compact`](Self::compact), with each record's payload appended by `encode`
    /// straight into the log's tail (no copy through a caller's buffer). A record that
    /// fails to encode fails the compaction as a full region does: the old log stays.
    pub(crate) fn compact_with<T>(
        &mut self,
        records: impl IntoIterator<Item = T>,
        mut encode: impl FnMut(T, &mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        // The tail as it was, given back if the compaction fails.
        let mut spare = std::mem::take(&mut self.spare_buf);
        spare.clear();
        let old_buf = std::mem::replace(&mut self.buf, spare);
        let old = self.at;
        self.at.region = 1 - self.at.region;
        self.at.generation = self.at.generation.max(self.burned) + 1;
        self.burned = self.at.generation;
        self.at.prev_crc = self.seed();
        self.at.buf_page = 0;
        self.at.used = 0;
        self.at.open_records = 0;
        let mut committed = false;
        let result = (|| {
            let mut any = false;
            for r in records {
                self.push_with(KIND_DATA, |b| encode(r, b))?;
                any = true;
            }
            if any {
                self.push(KIND_COMMIT, &[])?;
            }
            committed = any;
            self.write_out()?;
            self.stats.syncs += 1;
            self.dev.sync()?;
            self.write_header()?;
            self.stats.syncs += 1;
            self.dev.sync()
        })();
        if let Err(e) = result {
            // The old region is still the live log on the device, and the log goes on
            // appending to it where it was (the new region's pages written so far are
            // never read: the header still names the old region).
            self.spare_buf = std::mem::replace(&mut self.buf, old_buf);
            self.at = old;
            return Err(e);
        }
        self.spare_buf = old_buf;
        self.generation_commits = u64::from(committed);
        self.stats.compactions += 1;
        self.unsynced = 0;
        Ok(())
    }

    fn push(&mut self, kind: u32, payload: &[u8]) -> Result<()> {
        self.push_with(kind, |b| {
            b.extend_from_slice(payload);
            Ok(())
        })
    }

    /// Appends a record of `kind` whose payload `encode` appends to the in-memory tail
    /// (encoded in place: no copy of the payload). A payload that does not fit the region,
    /// or fails to encode, leaves the log as it was.
    fn push_with(
        &mut self,
        kind: u32,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0u8; RECORD_HEADER]);
        if let Err(e) = encode(&mut self.buf) {
            self.buf.truncate(start);
            return Err(e);
        }
        let plen = self.buf.len() - start - RECORD_HEADER;
        let len = RECORD_HEADER + plen;
        if self.at.used + len as u64 > self.capacity_bytes() {
            self.buf.truncate(start);
            return Err(Error::DeviceFull(format!(
                "the log region holds {} bytes and {} are used; a {}-byte record does not fit \
                 (give the store a larger log size)",
                self.capacity_bytes(),
                self.at.used,
                len
            )));
        }
        let Ok(plen) = u32::try_from(plen) else {
            self.buf.truncate(start);
            return Err(Error::invalid("log record", "payload larger than 4 GB"));
        };
        let gen = self.at.generation as u32;
        let rec = &mut self.buf[start..];
        rec[0..4].copy_from_slice(&plen.to_le_bytes());
        rec[4..8].copy_from_slice(&gen.to_le_bytes());
        rec[8..12].copy_from_slice(&kind.to_le_bytes());
        let crc = record_crc(self.at.prev_crc, &rec[0..12], &rec[RECORD_HEADER..]);
        self.at.prev_crc = crc;
        rec[12..16].copy_from_slice(&crc.to_le_bytes());
        self.at.used += len as u64;
        self.stats.bytes += len as u64;
        Ok(())
    }

    /// Writes the full pages of the in-memory tail (mode `none`).
    fn write_full_pages(&mut self) -> Result<()> {
        let ps = self.page_size;
        let full = self.buf.len() / ps;
        if full == 0 {
            return Ok(());
        }
        // Written from the buffer, whose tail then moves to its front: it keeps its
        // capacity (no allocation per page written).
        let mut out = std::mem::take(&mut self.buf);
        let written = self.write_region_pages(self.at.buf_page, &out[..full * ps]);
        out.drain(..full * ps);
        self.buf = out;
        written?;
        self.at.buf_page += full as u64;
        Ok(())
    }

    fn write_region_pages(&mut self, first: u64, data: &[u8]) -> Result<()> {
        let page = 2 + self.at.region * self.region_pages + first;
        self.stats.write_requests += 1;
        self.stats.pages_written += (data.len() / self.page_size) as u64;
        self.dev.write(page, data)
    }

    fn write_header(&mut self) -> Result<()> {
        let mut page = vec![0u8; self.page_size];
        page[0..8].copy_from_slice(MAGIC);
        page[8..12].copy_from_slice(&LOG_FORMAT.to_le_bytes());
        page[12..20].copy_from_slice(&self.at.region.to_le_bytes());
        page[20..28].copy_from_slice(&self.at.generation.to_le_bytes());
        page[28..32].copy_from_slice(&(self.page_size as u32).to_le_bytes());
        page[32..40].copy_from_slice(&self.region_pages.to_le_bytes());
        page[40..48].copy_from_slice(&self.nonce.to_le_bytes());
        let crc = crc32fast::hash(&page[0..48]);
        page[48..52].copy_from_slice(&crc.to_le_bytes());
        self.stats.write_requests += 1;
        self.stats.pages_written += 1;
        self.dev.write(self.at.region, &page)
    }

    fn read_header(&mut self, region: u64) -> Result<HeaderState> {
        let mut page = vec![0u8; self.page_size];
        self.dev.read(region, &mut page)?;
        if page.iter().all(|b| *b == 0) {
            return Ok(HeaderState::Empty);
        }
        let u32_at = |o: usize| u32::from_le_bytes(page[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(page[o..o + 8].try_into().expect("8 bytes"));
        if &page[0..8] != MAGIC {
            return Ok(HeaderState::Invalid("not a spidx log header".into()));
        }
        if crc32fast::hash(&page[0..48]) != u32_at(48) {
            return Ok(HeaderState::Invalid("header checksum mismatch".into()));
        }
        let format = u32_at(8);
        if !(1..=LOG_FORMAT).contains(&format) {
            return Ok(HeaderState::Invalid(format!(
                "format {format} is unknown (this spidx reads formats 1 to {LOG_FORMAT})"
            )));
        }
        if u64_at(12) != region {
            return Ok(HeaderState::Invalid(format!(
                "says region {} but is stored as region {region}",
                u64_at(12)
            )));
        }
        if u32_at(28) as usize != self.page_size || u64_at(32) != self.region_pages {
            return Ok(HeaderState::Invalid(format!(
                "written for {}-byte pages and {}-page regions, opened with {} and {}",
                u32_at(28),
                u64_at(32),
                self.page_size,
                self.region_pages
            )));
        }
        Ok(HeaderState::Valid(u64_at(20), u64_at(40), format))
    }

    /// The CRC chain's start for the live region.
    fn seed(&self) -> u32 {
        let mut h = crc32fast::Hasher::new();
        h.update(&self.at.generation.to_le_bytes());
        h.update(&self.at.region.to_le_bytes());
        h.update(&self.nonce.to_le_bytes());
        h.finalize()
    }
}

fn record_crc(prev: u32, head: &[u8], payload: &[u8]) -> u32 {
    // The chained CRC and the 12 header bytes in one update (records are many and small).
    let mut pre = [0u8; 16];
    pre[..4].copy_from_slice(&prev.to_le_bytes());
    pre[4..4 + head.len()].copy_from_slice(head);
    let mut h = crc32fast::Hasher::new();
    h.update(&pre[..4 + head.len()]);
    h.update(payload);
    h.finalize()
}

enum HeaderState {
    /// Generation, nonce, format.
    Valid(u64, u64, u32),
    Empty,
    Invalid(String),
}

/// Rewrites the format of every written region header of the log on `dev` (checksums
/// recomputed): tests make logs of older formats with it.
#[cfg(test)]
pub(crate) fn set_header_format(dev: &mut dyn Device, format: u32) {
    let mut page = vec![0u8; dev.page_size()];
    for r in 0..2 {
        dev.read(r, &mut page).unwrap();
        if page.iter().all(|b| *b == 0) {
            continue;
        }
        page[8..12].copy_from_slice(&format.to_le_bytes());
        let crc = crc32fast::hash(&page[0..48]);
        page[48..52].copy_from_slice(&crc.to_le_bytes());
        dev.write(r, &page).unwrap();
    }
}

mod scan;

#[cfg(test)]
#[path = "../log_tests.rs"]
mod tests;
