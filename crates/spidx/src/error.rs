//! The library's error type: every failure names what went wrong and where, so the
//! command line can print it and exit non-zero instead of panicking.

use std::path::PathBuf;

/// Errors raised by any layer of spidx.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An option, parameter or argument has an invalid value.
    #[error("invalid {what}: {message}")]
    InvalidOption { what: String, message: String },

    /// An I/O address lies outside the device.
    #[error(
        "access past device capacity: pages {start}..{end} but the device has {capacity} pages"
    )]
    OutOfRange { start: u64, end: u64, capacity: u64 },

    /// The device cannot accept more data (no free space, or worn out).
    #[error("device full: {0}")]
    DeviceFull(String),

    /// Stored state (a persisted simulator, a page, a log) failed validation.
    #[error("corrupted {what}: {message}")]
    Corrupted { what: String, message: String },

    /// An operating-system I/O error on a path.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidOption`].
    pub fn invalid(what: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidOption {
            what: what.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Corrupted`].
    pub fn corrupted(what: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Corrupted {
            what: what.into(),
            message: message.into(),
        }
    }

    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
