//! The log and write-buffer sizes every logging policy checks the same way: the default
//! log size, the smallest log that always has room, and the errors that name the option.

use crate::{Error, Result};

/// The log size used when none is given: 16 times the write buffer, at least `floor`
/// bytes (FAST 1MB; the LCR-tree and RFTL 4MB, as their compacted log also holds their
/// mapping table).
pub(crate) fn default_log_size(write_buffer: u64, floor: u64) -> u64 {
    write_buffer.saturating_mul(16).max(floor)
}

/// The smallest log that always has room: each of its two regions must hold the compacted
/// buffer (about twice its bytes, with record headers) twice over, plus the images of a
/// flushing unit of `flushing_unit` pages (1 for the flush-all policies) and a few pages for
/// one operation's records.
pub(crate) fn min_log_size(write_buffer: u64, flushing_unit: u32, page_size: usize) -> u64 {
    let ps = page_size as u64;
    2 * (4 * write_buffer + 2 * u64::from(flushing_unit) * ps + 16 * ps) + 2 * ps
}

/// Refuses a log of `log_size` bytes smaller than `min`, naming the option `key` and what
/// the minimum depends on (`of`).
pub(crate) fn check_log_size(key: &str, log_size: u64, min: u64, of: &str) -> Result<()> {
    if log_size < min {
        return Err(Error::invalid(
            key,
            format!(
                "{log_size} bytes is too small for {of}; give at least {min} bytes ({})",
                crate::units::format_size(min)
            ),
        ));
    }
    Ok(())
}

/// The log size of a flush-all policy (the LCR-tree, RFTL): `given`, or else 16 times the
/// write buffer, at least 4MB (a compacted log also holds the policy's mapping table).
pub(crate) fn flush_all_log_size(write_buffer: u64, given: Option<u64>) -> u64 {
    given.unwrap_or_else(|| default_log_size(write_buffer, 4 << 20))
}

/// Checks a flush-all policy's sizes: a write buffer of at least `least` bytes (at least 1)
/// and a log of `log_size` bytes with room for it; errors name policy `name`'s keys
/// (`"LCR-tree write_buffer"`).
pub(crate) fn check_flush_all(
    name: &str,
    write_buffer: u64,
    least: u64,
    log_size: u64,
    page_size: usize,
) -> Result<()> {
    if write_buffer < least.max(1) {
        return Err(Error::invalid(
            format!("{name} write_buffer"),
            match least {
                0 | 1 => "0 bytes; give a size such as 512KB".to_string(),
                _ => format!(
                    "{write_buffer} bytes is less than one {least}-byte unit page (a flush packs \
                     the buffered units into pages); give at least {least} bytes, e.g. 512KB"
                ),
            },
        ));
    }
    let min = min_log_size(write_buffer, 1, page_size);
    let key = format!("{name} log_size");
    check_log_size(&key, log_size, min, "this write buffer")
}
