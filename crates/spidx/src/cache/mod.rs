//! The page-buffer layer: classic page caches between the node stores and the devices
//! (architecture §2):
//!
//! ```text
//!   NodeStore -> PageCache -> Device
//! ```
//!
//! A [`PageCache`] owns the [`Device`](crate::device::Device) and keeps copies of
//! recently used pages in memory, chosen by a replacement policy: `none`, LRU, HLRU
//! (LRU protecting the upper tree levels), simplified 2Q or full 2Q. By default writes go
//! through to the device at once and the cache only saves reads; a **write-back** cache
//! ([`WritePolicy::WriteBack`]) keeps written pages dirty in memory and writes them when
//! they are evicted or when the cache is synced (a crash loses them). Its [`CacheStats`]
//! are its own; the device keeps counting the requests that reach it.
//!
//! The policies ([`ReplacementPolicy`]) and the generic [`Buffer`] that pairs one with a
//! map of values are usable on their own: eFIND's read buffer keeps nodes by node id with
//! the same policies.
//!
//! A cache is described by a [`CacheConfig`], written `none`, `lru:512KB`, `hlru:1MB`,
//! `s2q:256KB[,kin=25%]` or `2q:4MB[,kin=25%][,kout=50%]`, each but `none` optionally
//! followed by `:write-through` (the default) or `:write-back` (`lru:512KB:write-back`).

mod buffer;
mod page_cache;
mod policy;
mod queues;
mod twoq;
#[cfg(test)]
mod update_tests;

pub use buffer::{Buffer, BufferStats};
pub use page_cache::{CacheStats, PageCache};
pub use policy::{Hlru, Lru, NoCache, ReplacementPolicy, MAX_LEVEL};
pub use queues::{KeyHasher, KeyMap};
pub use twoq::{S2q, TwoQ};

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::units::{format_size, parse_size};
use crate::{Error, Result};

/// The replacement policies a cache can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CachePolicy {
    /// No cache: every read goes to the device.
    None,
    /// Least recently used.
    Lru,
    /// LRU that never evicts a page of a higher level than the incoming one.
    Hlru,
    /// Simplified 2Q.
    S2q,
    /// Full 2Q.
    #[serde(rename = "2q")]
    TwoQ,
}

impl CachePolicy {
    /// Every policy, in the order users see them.
    pub const ALL: [CachePolicy; 5] = [
        CachePolicy::None,
        CachePolicy::Lru,
        CachePolicy::Hlru,
        CachePolicy::S2q,
        CachePolicy::TwoQ,
    ];

    /// The name used in specifications.
    pub fn name(self) -> &'static str {
        match self {
            CachePolicy::None => "none",
            CachePolicy::Lru => "lru",
            CachePolicy::Hlru => "hlru",
            CachePolicy::S2q => "s2q",
            CachePolicy::TwoQ => "2q",
        }
    }

    /// The policy of a name (case-insensitive).
    pub fn from_name(name: &str) -> Result<CachePolicy> {
        let n = name.trim().to_ascii_lowercase();
        CachePolicy::ALL
            .into_iter()
            .find(|p| p.name() == n)
            .ok_or_else(|| {
                Error::invalid(
                    "cache policy",
                    format!("'{name}' is not a policy; use none, lru, hlru, s2q or 2q"),
                )
            })
    }

    /// Builds the policy for `capacity_pages` pages; `kin_pct` and `kout_pct` are the 2Q
    /// queue sizes in percent of the capacity (`kin_pct` is also S2Q's `A1` threshold).
    pub fn build(
        self,
        capacity_pages: usize,
        kin_pct: f64,
        kout_pct: f64,
    ) -> Box<dyn ReplacementPolicy> {
        let kin = twoq::share(capacity_pages, kin_pct);
        match self {
            CachePolicy::None => Box::new(NoCache),
            CachePolicy::Lru => Box::new(Lru::new(capacity_pages)),
            CachePolicy::Hlru => Box::new(Hlru::new(capacity_pages)),
            CachePolicy::S2q => Box::new(S2q::new(capacity_pages, kin)),
            CachePolicy::TwoQ => Box::new(TwoQ::new(
                capacity_pages,
                kin,
                twoq::share(capacity_pages, kout_pct),
            )),
        }
    }
}

impl fmt::Display for CachePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When a cache's written pages reach the device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    /// Every write goes to the device at once (crash-safe: the device holds every write).
    #[default]
    WriteThrough,
    /// Writes stay in the cache as dirty pages and reach the device when the policy evicts
    /// them or the cache is synced: fewer device writes when pages are rewritten while
    /// cached (the LRU buffer of the seeds' testbed), but a crash loses the dirty pages.
    WriteBack,
}

impl WritePolicy {
    /// The name used in specifications.
    pub fn name(self) -> &'static str {
        match self {
            WritePolicy::WriteThrough => "write-through",
            WritePolicy::WriteBack => "write-back",
        }
    }

    /// The write policy of a name (case-insensitive).
    pub fn from_name(name: &str) -> Result<WritePolicy> {
        let n = name.trim().to_ascii_lowercase();
        [WritePolicy::WriteThrough, WritePolicy::WriteBack]
            .into_iter()
            .find(|p| p.name() == n)
            .ok_or_else(|| {
                Error::invalid(
                    "cache",
                    format!("'{name}' is not a write policy; use write-through or write-back"),
                )
            })
    }
}

impl fmt::Display for WritePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Default `Kin`: 25 % of the capacity (Johnson & Shasha's recommendation).
pub const DEFAULT_KIN_PCT: f64 = 25.0;
/// Default `Kout`: 50 % of the capacity, in page ids.
pub const DEFAULT_KOUT_PCT: f64 = 50.0;
/// Largest accepted `Kout` (ids are cheap, but a ghost queue of many times the buffer says
/// little about recency).
pub const MAX_KOUT_PCT: f64 = 1000.0;

/// What cache to put over a device: a policy, its size in bytes and the 2Q parameters.
///
/// Written (and printed back) as `none`, `lru:512KB`, `hlru:1MB`, `s2q:256KB`,
/// `s2q:256KB,kin=10%`, `2q:4MB`, `2q:4MB,kin=25%,kout=50%`, with an optional
/// `:write-back` or `:write-through` at the end (`lru:512KB:write-back`; parameters equal
/// to their defaults, write-through included, are not printed, so a write-back cache
/// always shows in names built from this string). Serialized as that string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CacheConfig {
    /// Replacement policy.
    pub policy: CachePolicy,
    /// Capacity in bytes; the cache holds `capacity_bytes / page_size` pages (0 for `none`).
    pub capacity_bytes: u64,
    /// 2Q's `A1in` threshold (`Kin`) and S2Q's `A1` threshold, in percent of the capacity
    /// (0-100).
    pub kin_pct: f64,
    /// 2Q's `A1out` length (`Kout`) in percent of the capacity in page ids (0-1000).
    pub kout_pct: f64,
    /// When written pages reach the device.
    pub write_policy: WritePolicy,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig::none()
    }
}

impl CacheConfig {
    /// No cache.
    pub fn none() -> Self {
        CacheConfig::new(CachePolicy::None, 0)
    }

    /// A cache of `policy` and `capacity_bytes` with default 2Q parameters.
    pub fn new(policy: CachePolicy, capacity_bytes: u64) -> Self {
        CacheConfig {
            policy,
            capacity_bytes,
            kin_pct: DEFAULT_KIN_PCT,
            kout_pct: DEFAULT_KOUT_PCT,
            write_policy: WritePolicy::WriteThrough,
        }
    }

    /// The same cache with write policy `policy`.
    pub fn with_write_policy(mut self, policy: WritePolicy) -> Self {
        self.write_policy = policy;
        self
    }

    /// Whether written pages are kept dirty and written back later.
    pub fn is_write_back(&self) -> bool {
        self.write_policy == WritePolicy::WriteBack
    }

    /// Checks the values independent of the page size.
    pub fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(Error::invalid("cache", msg));
        if self.policy == CachePolicy::None {
            if self.capacity_bytes != 0 {
                return bad("policy none takes no size".into());
            }
            if self.is_write_back() {
                return bad(NONE_WRITE_BACK.into());
            }
        } else if self.capacity_bytes == 0 {
            return bad(format!(
                "policy {} needs a non-zero size, e.g. {}:512KB",
                self.policy, self.policy
            ));
        }
        if !(0.0..=100.0).contains(&self.kin_pct) {
            return bad(format!("kin={}% is outside 0-100%", self.kin_pct));
        }
        if !(0.0..=MAX_KOUT_PCT).contains(&self.kout_pct) {
            return bad(format!(
                "kout={}% is outside 0-{MAX_KOUT_PCT}%",
                self.kout_pct
            ));
        }
        Ok(())
    }

    /// The capacity in pages of `page_size` bytes; an error if a cache with a policy
    /// would hold less than one page.
    pub fn capacity_pages(&self, page_size: usize) -> Result<usize> {
        self.validate()?;
        let pages = self.capacity_bytes / page_size.max(1) as u64;
        if self.policy != CachePolicy::None && pages == 0 {
            return Err(Error::invalid(
                "cache",
                format!(
                    "{} holds less than one {} page; give at least {}",
                    self,
                    format_size(page_size as u64),
                    format_size(page_size as u64)
                ),
            ));
        }
        usize::try_from(pages).map_err(|_| Error::invalid("cache", format!("{self} is too large")))
    }

    /// Builds the replacement policy for pages of `page_size` bytes.
    pub(crate) fn build_policy(&self, page_size: usize) -> Result<Box<dyn ReplacementPolicy>> {
        let pages = self.capacity_pages(page_size)?;
        Ok(self.policy.build(pages, self.kin_pct, self.kout_pct))
    }
}

/// A size in the largest binary unit that divides it exactly (`1536KB`, not `1.5MB`), so
/// that printing and parsing round-trip.
fn exact_size(bytes: u64) -> String {
    for (unit, shift) in [("TB", 40), ("GB", 30), ("MB", 20), ("KB", 10)] {
        if bytes != 0 && bytes.trailing_zeros() >= shift {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

const NONE_WRITE_BACK: &str = "policy none keeps no pages, so it cannot write back; give a \
     policy and a size, e.g. lru:512KB:write-back";

fn parse_pct(key: &str, text: &str, max: f64) -> Result<f64> {
    let num = text.trim();
    let num = num.strip_suffix('%').unwrap_or(num).trim();
    match num.parse::<f64>() {
        Ok(v) if (0.0..=max).contains(&v) => Ok(v),
        Ok(_) => Err(Error::invalid(
            "cache",
            format!("{key}={text} is outside 0-{max}%"),
        )),
        Err(_) => Err(Error::invalid(
            "cache",
            format!("{key}={text} is not a percentage; write e.g. {key}=25%"),
        )),
    }
}

impl FromStr for CacheConfig {
    type Err = Error;

    fn from_str(text: &str) -> Result<CacheConfig> {
        let t = text.trim();
        let (name, rest) = match t.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (t, None),
        };
        let policy = CachePolicy::from_name(name)?;
        let Some(rest) = rest else {
            if policy == CachePolicy::None {
                return Ok(CacheConfig::none());
            }
            return Err(Error::invalid(
                "cache",
                format!("'{text}' has no size; write e.g. {policy}:512KB"),
            ));
        };
        let (rest, write_policy) = match rest.split_once(':') {
            None => (rest, None),
            Some((_, mode)) if mode.contains(':') => {
                return Err(Error::invalid(
                    "cache",
                    format!(
                        "'{text}' has too many ':'; write POLICY:SIZE[,KEY=VALUE...][:write-back]"
                    ),
                ))
            }
            Some((r, mode)) => (r, Some(WritePolicy::from_name(mode)?)),
        };
        if policy == CachePolicy::None {
            let msg = if write_policy.is_some() || WritePolicy::from_name(rest).is_ok() {
                format!("'{text}': {NONE_WRITE_BACK}")
            } else {
                format!("'{text}': policy none takes no size or parameters")
            };
            return Err(Error::invalid("cache", msg));
        }
        let mut parts = rest.split(',');
        let size = parts.next().unwrap_or("");
        if WritePolicy::from_name(size).is_ok() {
            return Err(Error::invalid(
                "cache",
                format!(
                    "'{text}' has no size; write e.g. {policy}:512KB:{}",
                    size.trim()
                ),
            ));
        }
        let mut cfg = CacheConfig::new(policy, parse_size("cache size", size)?);
        cfg.write_policy = write_policy.unwrap_or_default();
        let (mut seen_kin, mut seen_kout) = (false, false);
        for part in parts {
            if WritePolicy::from_name(part).is_ok() {
                return Err(Error::invalid(
                    "cache",
                    format!(
                        "'{text}': the write policy follows a ':', e.g. {policy}:{}:{}",
                        size.trim(),
                        part.trim()
                    ),
                ));
            }
            let (key, value) = part.split_once('=').ok_or_else(|| {
                Error::invalid(
                    "cache",
                    format!("'{part}' in '{text}' is not KEY=VALUE (e.g. kin=25%)"),
                )
            })?;
            let key = key.trim().to_ascii_lowercase();
            let allowed = match policy {
                CachePolicy::TwoQ => &["kin", "kout"][..],
                CachePolicy::S2q => &["kin"][..],
                _ => &[][..],
            };
            if !allowed.contains(&key.as_str()) {
                let known = if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                };
                return Err(Error::invalid(
                    "cache",
                    format!("unknown parameter '{key}' for policy {policy} (known: {known})"),
                ));
            }
            let seen = if key == "kin" {
                cfg.kin_pct = parse_pct("kin", value, 100.0)?;
                &mut seen_kin
            } else {
                cfg.kout_pct = parse_pct("kout", value, MAX_KOUT_PCT)?;
                &mut seen_kout
            };
            if std::mem::replace(seen, true) {
                return Err(Error::invalid(
                    "cache",
                    format!("parameter '{key}' given twice in '{text}'"),
                ));
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

impl fmt::Display for CacheConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.policy == CachePolicy::None {
            return f.write_str("none");
        }
        write!(f, "{}:{}", self.policy, exact_size(self.capacity_bytes))?;
        if matches!(self.policy, CachePolicy::S2q | CachePolicy::TwoQ)
            && self.kin_pct != DEFAULT_KIN_PCT
        {
            write!(f, ",kin={}%", self.kin_pct)?;
        }
        if self.policy == CachePolicy::TwoQ && self.kout_pct != DEFAULT_KOUT_PCT {
            write!(f, ",kout={}%", self.kout_pct)?;
        }
        if self.is_write_back() {
            write!(f, ":{}", self.write_policy)?;
        }
        Ok(())
    }
}

impl TryFrom<String> for CacheConfig {
    type Error = Error;
    fn try_from(s: String) -> Result<CacheConfig> {
        s.parse()
    }
}

impl From<CacheConfig> for String {
    fn from(c: CacheConfig) -> String {
        c.to_string()
    }
}
