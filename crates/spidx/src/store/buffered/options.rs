//! What every buffered store's options answer ([`PolicyOptions`]), so that
//! [`StoreConfig`](crate::store::StoreConfig) registers a store with one variant over its
//! options struct and one arm, and writes everything else (validation, labels, the log's
//! placement and durability, building the store) once.
//!
//! A policy's options struct is declared once, in the policy's module: its fields, with
//! their serde defaults, are both what users write (a spec's `store` table, `spidx build
//! --store-opt KEY=VALUE`, Python's `store` dict, `store.json`) and what the policy is built
//! from.

use super::placement::LogPlacement;
use super::BufferPolicy;
use crate::store::log::LogSync;
use crate::Result;

/// Where a buffered store's log is written and when its operations become durable: the
/// two log options every buffered store has. [`logged_options!`] implements it for the
/// logged stores' options.
pub trait LogOptions {
    /// When logged operations become durable.
    fn log_sync(&self) -> LogSync;

    /// Where the log is written.
    fn log_device(&self) -> &LogPlacement;
}

/// What [`StoreConfig`](crate::store::StoreConfig) asks of a buffered store's options.
pub trait PolicyOptions: LogOptions {
    /// The store's name in messages (`"FAST"`).
    fn name(&self) -> &'static str;

    /// Checks the options against the node page size; errors name the key.
    fn validate(&self, page_size: usize) -> Result<()>;

    /// Pages of `page_size` bytes given to the log (the default size resolved).
    fn log_pages(&self, page_size: usize) -> Result<u64>;

    /// The store's part of run and index names (`"FAST"`, `"RFTL(max_pages=8)"`); the log's
    /// placement is added by the caller.
    fn label(&self) -> String;

    /// The policy object, built from these options (validated against `page_size`).
    fn policy(&self, page_size: usize) -> Result<Box<dyn BufferPolicy>>;
}

/// Declares the options struct of a store over the logged write buffer (FAST, the LCR-tree,
/// RFTL): the four options they share are declared here once, `write_buffer` first, then the
/// store's own fields, then `log_size`, `log_sync` and `log_device` (the order `store.json`
/// has always kept), and [`LogOptions`] is implemented over them. The struct stays flat, so
/// the keys users write (a spec's `store` table, `--store-opt`, Python's `store` dict) and
/// `store.json` are unchanged and `deny_unknown_fields` still refuses a stray key (serde's
/// `flatten` of a nested struct would lose that).
macro_rules! logged_options {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$fmeta:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Write buffer capacity in bytes (`"512KB"` or a number).
            #[serde(with = "crate::store::buffered::options::size_bytes")]
            pub write_buffer: u64,
            $($(#[$fmeta])* pub $field: $ty,)*
            /// Bytes of the device given to the write-ahead log (default: 16 x the write
            /// buffer, at least 1MB for FAST and 4MB for the LCR-tree and RFTL, whose
            /// compacted log also holds their table).
            #[serde(
                default,
                with = "crate::store::buffered::options::opt_size_bytes",
                skip_serializing_if = "Option::is_none"
            )]
            pub log_size: Option<u64>,
            /// `none` (default: durable at checkpoints), `group:N` or `each-op`.
            #[serde(default)]
            pub log_sync: crate::store::log::LogSync,
            /// Where the log is written: `same` (default), `separate:<device>` or
            /// `uncounted` (the papers' set-up: not crash-safe, log I/O not counted; see
            /// [`LogPlacement`](crate::store::buffered::placement::LogPlacement)).
            #[serde(
                default,
                skip_serializing_if = "crate::store::buffered::placement::LogPlacement::is_same"
            )]
            pub log_device: crate::store::buffered::placement::LogPlacement,
        }

        impl crate::store::buffered::options::LogOptions for $name {
            fn log_sync(&self) -> crate::store::log::LogSync {
                self.log_sync
            }

            fn log_device(&self) -> &crate::store::buffered::placement::LogPlacement {
                &self.log_device
            }
        }
    };
}
pub(crate) use logged_options;

/// Sizes written as numbers of bytes or strings such as "512KB" (serde `with`).
pub(crate) mod size_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(super) enum Size {
        Bytes(u64),
        Text(String),
    }

    impl Size {
        pub(super) fn bytes<E: serde::de::Error>(self) -> Result<u64, E> {
            match self {
                Size::Bytes(b) => Ok(b),
                Size::Text(t) => crate::units::parse_size("size", &t).map_err(E::custom),
            }
        }
    }

    /// Writes the size as a number of bytes.
    pub(crate) fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*v)
    }

    /// Reads a number of bytes or a size string.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        Size::deserialize(d)?.bytes()
    }
}

/// Optional sizes (see [`size_bytes`]).
pub(crate) mod opt_size_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the size as a number of bytes.
    pub(crate) fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => s.serialize_u64(*b),
            None => s.serialize_none(),
        }
    }

    /// Reads a number of bytes or a size string.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Option::<super::size_bytes::Size>::deserialize(d)?
            .map(|s| s.bytes())
            .transpose()
    }
}
