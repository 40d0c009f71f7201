//! What every node store reports and is told, below the stores and the registry that
//! chooses among them ([`super::any`], architecture §2 and §6): a store's report
//! ([`StoreReport`] with its [`StoreGauges`] and [`StoreSettings`]), where its files are
//! ([`StoreFiles`]) and what opening found about a crash ([`RecoveryState`]). The stores
//! import these; this file imports no store, so the registry sits on top and every import
//! points down.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::buffered::stats::{BufferedStats, RecoveryReport};
use super::journal::JournalStats;
use super::StoreStats;
use crate::cache::CacheStats;

/// Where a store keeps its files and how it may touch them (see
/// [`StoreConfig::create_in`](super::StoreConfig::create_in)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreFiles<'a> {
    /// The index directory (header, journal); none: everything in memory.
    pub dir: Option<&'a Path>,
    /// The device keeps what is written to it across a crash of the process (`file:`
    /// devices): the direct store then keeps its rollback journal (if configured).
    pub persistent_device: bool,
    /// Opened for reading only: recovery happens on a read-only overlay of the device and
    /// no file is written.
    pub read_only: bool,
    /// A log or journal damaged in its middle is opened by keeping what precedes the
    /// damage (`spidx recover --accept-loss`) instead of failing; the loss is reported by
    /// [`AnyStore::recovery_state`](super::AnyStore::recovery_state).
    pub accept_loss: bool,
}

/// What opening a store found about the crash before it (see
/// [`AnyStore::recovery_state`](super::AnyStore::recovery_state)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryState {
    /// Why the store was not closed cleanly at its last checkpoint (a journal to roll
    /// back, logged operations past the checkpoint): `None` for a clean index.
    pub crashed: Option<String>,
    /// Damage accepted when opening with [`StoreFiles::accept_loss`]: what was lost.
    pub accepted_loss: Option<String>,
}

impl<'a> StoreFiles<'a> {
    /// Files in `dir` (none: in memory), a device that does not persist, writable.
    pub fn writable(dir: Option<&'a Path>) -> Self {
        StoreFiles {
            dir,
            persistent_device: false,
            read_only: false,
            accept_loss: false,
        }
    }
}

/// What a store reports about itself after a phase of work. Counters are plain fields
/// (`nodes`, `buffered`, the policies' extras); levels are under `gauges` and options
/// under `settings`, here and in every nested report (see `docs/stores.md`, "Statistics").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreReport {
    /// The store's kind (`direct`, `fast`, `efind`, `lcr`, `rftl`).
    pub kind: String,
    /// Node-level counters every store keeps.
    pub nodes: StoreStats,
    /// The page buffer between the store and the device.
    pub cache: CacheStats,
    /// The statistics every buffered store keeps under the same names: flushes, images,
    /// the write buffer, the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffered: Option<BufferedStats>,
    /// A buffered store's policy's own counters, gauges and settings, under the store's
    /// kind (`store.fast`, `store.efind`, `store.lcr`, `store.rftl`): opaque here, read
    /// with [`StoreReport::policy_report`].
    #[serde(flatten, default)]
    pub policy: BTreeMap<String, serde_json::Value>,
    /// What the recovery that opened a buffered store did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryReport>,
    /// The direct store's rollback journal (its own file; see [`super::journal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalStats>,
    /// The store now.
    pub gauges: StoreGauges,
    /// How the store is set up.
    pub settings: StoreSettings,
}

impl StoreReport {
    /// The policy's own report (`store.<kind>`) read as `T` (e.g.
    /// [`FastStats`](super::fast::FastStats)); `None` when the store has none or it is not
    /// a `T`.
    pub fn policy_report<T: DeserializeOwned>(&self) -> Option<T> {
        let v = self.policy.get(&self.kind)?;
        serde_json::from_value(v.clone()).ok()
    }
}

/// A store's levels (not amounts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreGauges {
    /// Node pages allocated and not freed.
    pub pages_in_use: u64,
}

/// How a store is set up (text settings are not metrics; they are reported as they are).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreSettings {
    /// What survives a crash: the unit of durability and how it is reached.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub durability: String,
    /// Where a FAST or eFIND store's log is and how its cost enters the figures (see
    /// [`LogPlacement::describe`](super::buffered::placement::LogPlacement::describe)).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub log_device: String,
}
