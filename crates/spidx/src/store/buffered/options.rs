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

/// What [`StoreConfig`](crate::store::StoreConfig) asks of a buffered store's options.
pub trait PolicyOptions {
    /// The store's name in messages (`"FAST"`).
    fn name(&self) -> &'static str;

    /// When logged operations become durable.
    fn log_sync(&self) -> LogSync;

    /// Where the log is written.
    fn log_device(&self) -> &LogPlacement;

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
