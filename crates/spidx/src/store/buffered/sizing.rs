//! The log and write-buffer sizes every logged store's options (FAST, the LCR-tree, RFTL)
//! check the same way: the default log size, the smallest log that always has room, and
//! the errors that name the option.

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

/// The log size of a flush-all policy (the LCR-tree, RFTL): `given`, or else 16 times the
/// write buffer, at least 4MB (a compacted log also holds the policy's mapping table).
pub(crate) fn flush_all_log_size(write_buffer: u64, given: Option<u64>) -> u64 {
    given.unwrap_or_else(|| default_log_size(write_buffer, 4 << 20))
}

/// Refuses a write buffer of less than `least` bytes (at least 1), naming store `name`'s
/// key (`"LCR-tree write_buffer"`).
pub(crate) fn check_write_buffer(name: &str, write_buffer: u64, least: u64) -> Result<()> {
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
    Ok(())
}

/// Refuses a log of `log_size` bytes without room for a write buffer of `write_buffer`
/// bytes flushed in units of `flushing_unit` pages (1 for the flush-all policies), naming
/// store `name`'s key (`"FAST log_size"`).
pub(crate) fn check_log(
    name: &str,
    (write_buffer, flushing_unit): (u64, u32),
    log_size: u64,
    page_size: usize,
) -> Result<()> {
    let min = min_log_size(write_buffer, flushing_unit, page_size);
    if log_size < min {
        let of = match flushing_unit {
            1 => "this write buffer",
            _ => "this write buffer and flushing unit",
        };
        return Err(Error::invalid(
            format!("{name} log_size"),
            format!(
                "{log_size} bytes is too small for {of}; give at least {min} bytes ({})",
                crate::units::format_size(min)
            ),
        ));
    }
    Ok(())
}
