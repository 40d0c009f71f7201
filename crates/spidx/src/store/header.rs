//! What every node store persists besides its node pages: page allocation (the next unused
//! page and a free list) and the tree's metadata ([`TreeMeta`]), kept in one
//! [`StoreHeader`] and saved the same way by every store, as `store.json` in the index
//! directory. Logging stores also log allocations and metadata, so a crash between two
//! checkpoints loses nothing; their header is the starting point recovery replays onto.
//!
//! # Integrity
//! `store.json` (and the index manifest `index.json`, through [`seal_json`] and
//! [`unseal_json`]) is *sealed*: the JSON object carries a `"checksum"` member, the CRC-32
//! of the object's canonical form (compact JSON of every other member), and a `"format"`
//! version. Reading checks both and parses strictly (an unknown member is refused), so a
//! flipped bit or byte anywhere in the file is an error naming it instead of a silently
//! different index. Files written before the seal (no checksum) are refused with a message
//! asking for a rebuild: their content cannot be verified.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{TreeMeta, TreeState};
use crate::device::files::write_atomically;
use crate::node::{NodeLayout, PageId};
use crate::{Error, Result};

/// The format of `store.json` written (inside the sealed object; see the module
/// documentation). Format 3 keeps a store's own state opaque in `policy_state`; format 2
/// kept the LCR-tree's and RFTL's tables as members of their own and is read only when
/// it holds no such member (every header of the other stores).
pub const STORE_HEADER_FORMAT: u64 = 3;

/// The oldest format of `store.json` read.
const OLDEST_STORE_HEADER_FORMAT: u64 = 2;

/// Page allocation and tree metadata of a node store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreHeader {
    /// The store's kind (`direct`, `fast`, `efind`, `lcr`, `rftl`); informational.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The tree's metadata.
    pub meta: Option<TreeMeta>,
    /// The tree variant's own state ([`TreeState`]; not saved for variants without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_state: Option<TreeState>,
    /// First never-used page.
    pub next_page: PageId,
    /// Pages freed by deleted nodes, reused first.
    #[serde(default)]
    pub free: Vec<PageId>,
    /// Generation of the log at the checkpoint that saved this header (logging stores;
    /// informational: the log is their source of truth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_generation: Option<u64>,
    /// Committed operations the log's generation held when this header was saved (more
    /// when the store is opened means operations after the checkpoint: a crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_operations: Option<u64>,
    /// Number of the checkpoint that saved this header (direct stores with a rollback
    /// journal: only a journal of the same checkpoint is rolled back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
    /// The state of the store of [`kind`](Self::kind) beyond allocation and metadata
    /// (e.g. the LCR-tree's mapping table, RFTL's node translation table), as the store
    /// encoded it: opaque to the header and to every other store, as [`TreeState`] is to
    /// the stores (not saved for stores without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_state: Option<serde_json::Value>,
}

impl StoreHeader {
    /// An empty header for a store of `kind`.
    pub fn new(kind: &str) -> Self {
        StoreHeader {
            kind: kind.to_string(),
            ..Default::default()
        }
    }

    /// Takes a freed page, or else the first never-used one of the `capacity` pages.
    pub fn allocate(&mut self, capacity: u64) -> Result<PageId> {
        if let Some(p) = self.free.pop() {
            return Ok(p);
        }
        let p = self.next_page;
        if p >= capacity {
            return Err(Error::DeviceFull(format!(
                "the index needs page {p} but the node partition holds {capacity} pages"
            )));
        }
        self.next_page += 1;
        Ok(p)
    }

    /// Replays a logged allocation of page `id` (recovery mirrors [`Self::allocate`]; a
    /// page already allocated, as a compacted log re-creates a buffered node, stays so).
    pub(crate) fn replay_allocate(&mut self, id: PageId) {
        if let Some(k) = self.free.iter().rposition(|p| *p == id) {
            self.free.remove(k);
        } else if id >= self.next_page {
            self.next_page = id + 1;
        }
    }

    /// Pages allocated and not freed.
    pub fn pages_in_use(&self) -> u64 {
        self.next_page - self.free.len() as u64
    }

    /// Whether page `id` is allocated and not freed.
    pub(crate) fn in_use(&self, id: PageId) -> bool {
        id < self.next_page && !self.free.contains(&id)
    }

    /// Checks that page `id` was ever allocated (a pointer past it means a damaged tree).
    #[inline]
    pub(crate) fn check_page(&self, id: PageId) -> Result<()> {
        if id >= self.next_page {
            return Err(Error::corrupted(
                format!("node page {id}"),
                "points past the last allocated page",
            ));
        }
        Ok(())
    }

    /// Saves the header as sealed JSON (format and checksum) at `path`, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut v = serde_json::to_value(self)
            .map_err(|e| Error::invalid("store header", e.to_string()))?;
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("format".into(), STORE_HEADER_FORMAT.into());
        }
        write_atomically(path, &seal_json(v)?)
    }

    /// Reads the header saved at `path`, checking its checksum and format and refusing
    /// unknown members (an error naming the file).
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::parse(&bytes, path)
    }

    /// Parses the bytes of a `store.json` (`path` names it in errors).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Self> {
        let what = || format!("store header {}", path.display());
        let mut v = unseal_json(bytes, &what())?;
        let m = v.as_object_mut().expect("unseal_json returns an object");
        let format = m.remove("format").and_then(|f| f.as_u64());
        match format {
            Some(OLDEST_STORE_HEADER_FORMAT..=STORE_HEADER_FORMAT) => {}
            f => {
                return Err(Error::corrupted(
                    what(),
                    format!(
                        "format {} is not {OLDEST_STORE_HEADER_FORMAT} to {STORE_HEADER_FORMAT}",
                        f.map_or("missing".to_string(), |f| f.to_string())
                    ),
                ))
            }
        }
        let h: StoreHeader = serde_json::from_value(v).map_err(|e| {
            let old = match format {
                Some(f) if f < STORE_HEADER_FORMAT => format!(
                    " (format {f}, written by an older spidx that kept a store's own state in \
                     members of its own: rebuild the index with this version)"
                ),
                _ => String::new(),
            };
            Error::corrupted(what(), format!("{e}{old}"))
        })?;
        h.check(&what())?;
        Ok(h)
    }

    /// Checks the header's fields against each other (`what` names the file): the tree's
    /// metadata ([`TreeMeta::check`]), and every free page allocated and listed once.
    pub fn check(&self, what: &str) -> Result<()> {
        if let Some(m) = &self.meta {
            m.check(what, Some(self.next_page))?;
        }
        if self.free.len() as u64 > self.next_page {
            return Err(Error::corrupted(
                what.to_string(),
                format!(
                    "field free lists {} pages but only {} were ever allocated (next_page)",
                    self.free.len(),
                    self.next_page
                ),
            ));
        }
        let mut free = self.free.clone();
        free.sort_unstable();
        if let Some(p) = free.iter().find(|p| **p >= self.next_page) {
            return Err(Error::corrupted(
                what.to_string(),
                format!(
                    "field free lists page {p}, never allocated (next_page = {})",
                    self.next_page
                ),
            ));
        }
        if let Some(w) = free.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::corrupted(
                what.to_string(),
                format!("field free lists page {} twice", w[0]),
            ));
        }
        if self
            .meta
            .is_some_and(|m| free.binary_search(&m.root).is_ok())
        {
            return Err(Error::corrupted(
                what.to_string(),
                "field free lists the root page",
            ));
        }
        Ok(())
    }

    /// Checks that the header was saved by a store of `kind` (a header without a kind, of
    /// an older spidx, passes); `what` names the file.
    pub fn check_kind(&self, what: &str, kind: &str) -> Result<()> {
        if !self.kind.is_empty() && self.kind != kind {
            return Err(Error::corrupted(
                what.to_string(),
                format!(
                    "field kind = \"{}\", but the index's store is {kind}",
                    self.kind
                ),
            ));
        }
        Ok(())
    }

    /// Checks that the header's pages fit the `capacity` pages of the device it is opened
    /// on (`what` names the file).
    pub fn check_capacity(&self, what: &str, capacity: u64) -> Result<()> {
        if self.next_page > capacity {
            return Err(Error::corrupted(
                what.to_string(),
                format!(
                    "field next_page = {} is past the {capacity} pages of the node device",
                    self.next_page
                ),
            ));
        }
        Ok(())
    }

    /// Reads the header saved at `path`, or an empty one for `kind` if none was saved yet
    /// (a logging store killed before its first checkpoint).
    pub(crate) fn load_or_new(path: &Path, kind: &str) -> Result<Self> {
        match std::fs::metadata(path) {
            Ok(_) => Self::load(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::new(kind)),
            Err(e) => Err(Error::io(path, e)),
        }
    }
}

/// Checks that a store's device pages (`device_page` bytes) hold exactly one node each.
pub(crate) fn check_page_size(device_page: usize, layout: &NodeLayout) -> Result<()> {
    if device_page != layout.page_size() {
        return Err(Error::invalid(
            "page size",
            format!(
                "the device pages are {} bytes but nodes are {}",
                device_page,
                layout.page_size()
            ),
        ));
    }
    Ok(())
}

/// The member of a sealed JSON object holding its checksum.
const CHECKSUM: &str = "checksum";

/// The checksum of a JSON object without its `"checksum"` member: the CRC-32 of its compact
/// serialisation (serde_json's map keeps one order for a value parsed back from the text it
/// printed, so writer and reader serialise the same bytes).
fn json_crc(v: &serde_json::Value) -> Result<u32> {
    let bytes = serde_json::to_vec(v).map_err(|e| Error::invalid("json", e.to_string()))?;
    Ok(crc32fast::hash(&bytes))
}

/// Seals a JSON object: adds a `"checksum"` member (`"crc32:xxxxxxxx"`) over its other
/// members and returns the pretty-printed bytes to save. See the module documentation.
pub(crate) fn seal_json(mut v: serde_json::Value) -> Result<Vec<u8>> {
    let crc = json_crc(&v)?;
    let serde_json::Value::Object(m) = &mut v else {
        return Err(Error::invalid("json", "only an object can be sealed"));
    };
    m.insert(CHECKSUM.into(), format!("crc32:{crc:08x}").into());
    let mut out =
        serde_json::to_vec_pretty(&v).map_err(|e| Error::invalid("json", e.to_string()))?;
    out.push(b'\n');
    Ok(out)
}

/// Checks a file sealed by [`seal_json`]: parses `bytes` as a JSON object, removes its
/// checksum and verifies it; `what` names the file in errors. A file without a checksum
/// (written before spidx sealed its files) is refused with a request to rebuild.
pub(crate) fn unseal_json(bytes: &[u8], what: &str) -> Result<serde_json::Value> {
    let mut v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| Error::corrupted(what, e.to_string()))?;
    let serde_json::Value::Object(m) = &mut v else {
        return Err(Error::corrupted(what, "is not a JSON object"));
    };
    let stored = match m.remove(CHECKSUM) {
        Some(serde_json::Value::String(s)) => s,
        Some(other) => {
            return Err(Error::corrupted(
                what,
                format!("its checksum {other} is not a \"crc32:...\" string"),
            ))
        }
        None => {
            return Err(Error::corrupted(
                what,
                "has no checksum: it was written by an older spidx (or damaged) and cannot be \
                 verified; rebuild the index with this version",
            ))
        }
    };
    let crc = json_crc(&v)?;
    if stored != format!("crc32:{crc:08x}") {
        return Err(Error::corrupted(
            what,
            format!(
                "checksum mismatch (stored {stored}, content crc32:{crc:08x}): the file was \
                 damaged or edited"
            ),
        ));
    }
    Ok(v)
}

/// Re-seals the JSON object saved at `path` after it was edited by hand (tests that
/// tamper with a member on purpose, to reach the check behind the checksum).
pub fn reseal_file(path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let mut v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::corrupted(path.display().to_string(), e.to_string()))?;
    if let serde_json::Value::Object(m) = &mut v {
        m.remove(CHECKSUM);
    }
    write_atomically(path, &seal_json(v)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header round-trips through `store.json` with and without tree state, and a header
    /// saved before tree state existed loads with none.
    #[test]
    fn headers_round_trip_with_and_without_tree_state() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        let mut h = StoreHeader::new("direct");
        h.meta = Some(TreeMeta {
            root: 3,
            height: 2,
            objects: 41,
        });
        h.next_page = 9;
        h.free = vec![4, 7];
        h.save(&path).unwrap();
        assert_eq!(StoreHeader::load(&path).unwrap(), h);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("tree_state"), "{text}");

        h.tree_state = Some(TreeState {
            format: "test/1".into(),
            bytes: (0..=255u8).collect(),
        });
        h.save(&path).unwrap();
        assert_eq!(StoreHeader::load(&path).unwrap(), h);

        let err = std::fs::write(
            &path,
            r#"{"meta":null,"next_page":0,"tree_state":{"format":"x","bytes":"**"}}"#,
        )
        .map_err(|e| e.to_string())
        .and_then(|()| StoreHeader::load(&path).map_err(|e| e.to_string()))
        .unwrap_err();
        assert!(err.contains("store header"), "{err}");
    }

    /// A store's own state round-trips opaque; a format-2 header (before the state was
    /// opaque) is read when it holds no state of its own and refused, asking for a
    /// rebuild, when it holds the LCR-tree's or RFTL's table as a member.
    #[test]
    fn policy_state_round_trips_and_old_formats_are_read_or_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        let mut h = StoreHeader::new("lcr");
        h.next_page = 5;
        h.policy_state = Some(serde_json::json!({"log_pages": {"3": 4}}));
        h.save(&path).unwrap();
        assert_eq!(StoreHeader::load(&path).unwrap(), h);

        let old = |extra: &str| {
            let text = format!(r#"{{"kind":"lcr","meta":null,"next_page":5{extra},"format":2}}"#);
            std::fs::write(&path, text).unwrap();
            reseal_file(&path).unwrap();
            StoreHeader::load(&path)
        };
        let mut plain = StoreHeader::new("lcr");
        plain.next_page = 5;
        assert_eq!(old("").unwrap(), plain);
        let e = old(r#","log_pages":{"3":4}"#).unwrap_err().to_string();
        assert!(e.contains("log_pages") && e.contains("format 2"), "{e}");
        assert!(e.contains("rebuild"), "{e}");
        std::fs::write(&path, r#"{"meta":null,"next_page":5,"format":1}"#).unwrap();
        reseal_file(&path).unwrap();
        let e = StoreHeader::load(&path).unwrap_err().to_string();
        assert!(e.contains("format 1 is not 2 to 3"), "{e}");
    }

    /// Fields that contradict each other or size what the store would allocate are refused
    /// naming the file and the field, although the checksum is valid: a height of 2^31
    /// (`check`, `query` and `recover` used to abort on it), a root or free page never
    /// allocated, a page freed twice or the root freed.
    #[test]
    fn headers_with_impossible_fields_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.json");
        let good = || {
            let mut h = StoreHeader::new("direct");
            h.meta = Some(TreeMeta {
                root: 3,
                height: 2,
                objects: 41,
            });
            h.next_page = 9;
            h.free = vec![4, 7];
            h
        };
        type Edit = Box<dyn Fn(&mut StoreHeader)>;
        let cases: Vec<(&str, Edit)> = vec![
            (
                "height = 2147483648",
                Box::new(|h| h.meta.as_mut().unwrap().height = 1 << 31),
            ),
            (
                "height = 0",
                Box::new(|h| h.meta.as_mut().unwrap().height = 0),
            ),
            ("root = 9", Box::new(|h| h.meta.as_mut().unwrap().root = 9)),
            ("page 12, never allocated", Box::new(|h| h.free.push(12))),
            ("page 4 twice", Box::new(|h| h.free.push(4))),
            ("the root page", Box::new(|h| h.free.push(3))),
            ("lists 10 pages", Box::new(|h| h.free = (0..10).collect())),
        ];
        for (want, edit) in cases {
            let mut h = good();
            edit(&mut h);
            h.save(&path).unwrap();
            let e = StoreHeader::load(&path).unwrap_err().to_string();
            assert!(e.contains("store.json") && e.contains(want), "{want}: {e}");
        }
        good().save(&path).unwrap();
        let h = StoreHeader::load(&path).unwrap();
        let e = h.check_capacity("store.json", 8).unwrap_err().to_string();
        assert!(e.contains("next_page = 9") && e.contains("8 pages"), "{e}");
        h.check_capacity("store.json", 9).unwrap();
    }
}
