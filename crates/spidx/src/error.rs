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

    /// The same error (same kind, so callers still tell a full device from a bad option)
    /// with `context` — what was being done, e.g. "inserting object 17" — in front of it.
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        match self {
            Error::InvalidOption { what, message } => Error::InvalidOption {
                what: format!("{what} ({context})"),
                message,
            },
            // Its fields are the addresses; a programming error, not the user's input.
            e @ Error::OutOfRange { .. } => e,
            Error::DeviceFull(m) => Error::DeviceFull(format!("{m} ({context})")),
            Error::Corrupted { what, message } => Error::Corrupted {
                what: format!("{what} ({context})"),
                message,
            },
            Error::Io { path, source } => Error::Io {
                path,
                source: std::io::Error::new(source.kind(), format!("{context}: {source}")),
            },
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
