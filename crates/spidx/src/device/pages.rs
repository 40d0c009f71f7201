//! In-memory page storage shared by the simulated devices, and the persisted-state file
//! format that lets another process reopen a simulated device.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Pages per chunk of the sparse array's directory.
const CHUNK: usize = 1024;

type Chunk = Vec<Option<Box<[u8]>>>;

/// A sparse, growable array of fixed-size pages. Never-written pages read as zeros and
/// cost no memory (the directory is allocated in chunks of 1024 slots, only where pages
/// were written); moving a page (as flash garbage collection does) moves a pointer.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PageArray {
    page_size: usize,
    chunks: Vec<Option<Chunk>>,
}

impl PageArray {
    /// An empty array of pages of `page_size` bytes.
    pub fn new(page_size: usize) -> Self {
        PageArray {
            page_size,
            chunks: Vec::new(),
        }
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    #[inline]
    fn get(&self, idx: u64) -> Option<&[u8]> {
        let (c, i) = ((idx / CHUNK as u64) as usize, (idx % CHUNK as u64) as usize);
        self.chunks.get(c)?.as_ref()?[i].as_deref()
    }

    /// Copies page `idx` into `out` (zeros if never written). `out` is one page long.
    pub fn read(&self, idx: u64, out: &mut [u8]) {
        match self.get(idx) {
            Some(p) => out.copy_from_slice(p),
            None => out.fill(0),
        }
    }

    /// Copies `out.len()` bytes of page `idx` from byte `off` into `out` (zeros if never
    /// written).
    pub fn read_part(&self, idx: u64, off: usize, out: &mut [u8]) {
        match self.get(idx) {
            Some(p) => out.copy_from_slice(&p[off..off + out.len()]),
            None => out.fill(0),
        }
    }

    /// Copies `data` (one page) into page `idx`.
    pub fn write(&mut self, idx: u64, data: &[u8]) {
        let slot = self.slot(idx);
        match slot {
            Some(p) => p.copy_from_slice(data),
            None => *slot = Some(data.into()),
        }
    }

    /// Copies the byte ranges `ranges` of `data` (one page) into page `idx`, whose other
    /// bytes already equal `data`'s (checked in debug builds); a page never written is
    /// written whole.
    pub fn write_ranges(&mut self, idx: u64, data: &[u8], ranges: &[std::ops::Range<usize>]) {
        let slot = self.slot(idx);
        match slot {
            Some(p) => {
                for r in ranges {
                    p[r.clone()].copy_from_slice(&data[r.clone()]);
                }
                debug_assert!(
                    p[..] == data[..],
                    "page {idx}: bytes outside the changed ranges differ from the stored page"
                );
            }
            None => *slot = Some(data.into()),
        }
    }

    /// Removes page `idx` and returns its contents, if it was written.
    pub fn take(&mut self, idx: u64) -> Option<Box<[u8]>> {
        let (c, i) = ((idx / CHUNK as u64) as usize, (idx % CHUNK as u64) as usize);
        self.chunks.get_mut(c)?.as_mut()?[i].take()
    }

    /// Stores `page` (one page long) at `idx`.
    pub fn put(&mut self, idx: u64, page: Box<[u8]>) {
        *self.slot(idx) = Some(page);
    }

    /// Whether page `idx` holds written data.
    pub fn is_written(&self, idx: u64) -> bool {
        self.get(idx).is_some()
    }

    /// Number of pages holding data.
    pub fn written_pages(&self) -> usize {
        self.chunks
            .iter()
            .flatten()
            .map(|c| c.iter().filter(|p| p.is_some()).count())
            .sum()
    }

    fn slot(&mut self, idx: u64) -> &mut Option<Box<[u8]>> {
        let (c, i) = ((idx / CHUNK as u64) as usize, (idx % CHUNK as u64) as usize);
        if c >= self.chunks.len() {
            self.chunks.resize_with(c + 1, || None);
        }
        &mut self.chunks[c].get_or_insert_with(|| vec![None; CHUNK])[i]
    }
}

const MAGIC: &[u8; 8] = b"SPIDXDEV";
const FORMAT_VERSION: u32 = 1;
/// The format of the state files of devices whose pages live in a pages file
/// ([`super::paged::PageStore`]): the payload starts with the page index.
pub const PAGED_FORMAT: u32 = 2;
/// The format of the state files of flash devices (SimFlash, SSD) whose FTL tables live in
/// a second pages file (see `crate::device::flash::ftl::persist`): the payload starts with
/// the page index of the data, then the page index of the FTL tables. Their format
/// [`PAGED_FORMAT`] (the FTL tables inside the state file) still opens.
pub const FTL_PAGED_FORMAT: u32 = 3;
/// The format of the state files of paged devices (memory, hard disk, SimFlash, SSD) whose
/// page index is itself paged (see `crate::device::paged::index`): the payload starts
/// with the data's [`super::paged::Indexed`] store (the pages file's name, then the index
/// pages file's), then, for flash devices, the page index of the FTL tables; the SSD's saved
/// configuration has `flush_us` since this format. The formats [`PAGED_FORMAT`] and
/// [`FTL_PAGED_FORMAT`] still open (an SSD's with `flush_us = 0`).
pub const INDEX_PAGED_FORMAT: u32 = 4;
/// The format of an SSD's state file whose saved configuration has `seq_read_saving_us`
/// and `seq_write_saving_us`; laid out as [`INDEX_PAGED_FORMAT`], which still opens (with
/// savings of 0). Memory and SimFlash devices save [`INDEX_PAGED_FORMAT`].
pub const SSD_SEQ_WRITE_FORMAT: u32 = 5;
/// The format of a hard disk's state file whose saved configuration has
/// `write_overhead_us`; laid out as [`INDEX_PAGED_FORMAT`], which still opens (with the
/// write overhead of a buffer hit, as the model had it before). The same number as
/// [`SSD_SEQ_WRITE_FORMAT`]: a state file's kind says which device's layout it is.
pub const HDD_WRITE_OVERHEAD_FORMAT: u32 = 5;
/// The formats whose payload starts with an [`super::paged::Indexed`] store.
pub(crate) const INDEXED_FORMATS: [u32; 2] = [INDEX_PAGED_FORMAT, SSD_SEQ_WRITE_FORMAT];
const HEADER: usize = 8 + 4 + 4 + 4 + 8;

/// Saves a simulated device's state to `path` atomically (write a temporary file, fsync,
/// rename), framed by a magic number, the device kind, a format version, the length and a
/// CRC-32 of the payload so that truncation and corruption are detected on load.
pub fn save_state<T: Serialize>(path: &Path, kind: &str, state: &T) -> Result<()> {
    save_state_as(path, kind, FORMAT_VERSION, state)
}

/// Loads a state saved by [`save_state`], checking magic, kind, version, length and CRC.
pub fn load_state<T: DeserializeOwned>(path: &Path, kind: &str) -> Result<T> {
    load_state_as(path, kind, FORMAT_VERSION)
}

/// [`save_state`] with format `version` ([`PAGED_FORMAT`] for paged devices).
pub fn save_state_as<T: Serialize>(path: &Path, kind: &str, version: u32, state: &T) -> Result<()> {
    let payload = postcard::to_stdvec(state)
        .map_err(|e| Error::invalid("device state", format!("cannot serialise: {e}")))?;
    let mut file_bytes = Vec::with_capacity(HEADER + payload.len());
    file_bytes.extend_from_slice(MAGIC);
    file_bytes.extend_from_slice(&version.to_le_bytes());
    file_bytes.extend_from_slice(&kind_tag(kind).to_le_bytes());
    file_bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    file_bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    file_bytes.extend_from_slice(&payload);
    super::files::write_atomically(path, &file_bytes)
}

/// [`load_state`] of a state written with format `version`.
pub fn load_state_as<T: DeserializeOwned>(path: &Path, kind: &str, expected: u32) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let (_, payload) = checked_payload(&bytes, path, Some(kind), &[expected])?;
    decode_state(path, payload)
}

/// The checked payload of the state file at `path` of a `kind` device and its format
/// version, one of `accepted` (checked like [`load_state`]); decode it with
/// [`decode_state`].
pub fn load_state_payload(path: &Path, kind: &str, accepted: &[u32]) -> Result<(u32, Vec<u8>)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let (version, payload) = checked_payload(&bytes, path, Some(kind), accepted)?;
    Ok((version, payload.to_vec()))
}

/// Decodes a payload returned by [`load_state_payload`] for the state file at `path`.
pub fn decode_state<T: DeserializeOwned>(path: &Path, payload: &[u8]) -> Result<T> {
    let what = format!("device state {}", path.display());
    postcard::from_bytes(payload).map_err(|e| Error::corrupted(what, format!("cannot decode: {e}")))
}

/// The name of the pages file a paged device's state file at `path` names (its payload
/// starts with a [`super::paged::PageStore`]), or `None` if the file cannot be read or
/// checked.
pub fn peek_pages_file(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let (_, payload) = checked_payload(
        &bytes,
        path,
        None,
        &[
            PAGED_FORMAT,
            FTL_PAGED_FORMAT,
            INDEX_PAGED_FORMAT,
            SSD_SEQ_WRITE_FORMAT,
        ],
    )
    .ok()?;
    postcard::take_from_bytes::<String>(payload)
        .ok()
        .map(|(name, _)| name)
}

/// The name of the index pages file (see `crate::device::paged::index`) a state file of
/// format [`INDEX_PAGED_FORMAT`] at `path` names (the second string of its payload), or
/// `None` if the file cannot be read or checked.
pub fn peek_index_file(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let (_, payload) = checked_payload(&bytes, path, None, &INDEXED_FORMATS).ok()?;
    let (_, rest) = postcard::take_from_bytes::<String>(payload).ok()?;
    postcard::take_from_bytes::<String>(rest)
        .ok()
        .map(|(name, _)| name)
}

pub(crate) fn checked_payload<'a>(
    bytes: &'a [u8],
    path: &Path,
    kind: Option<&str>,
    accepted: &[u32],
) -> Result<(u32, &'a [u8])> {
    let what = format!("device state {}", path.display());
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(Error::corrupted(
            what,
            "not a spidx device state file (bad magic or too short)",
        ));
    }
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let version = u32_at(8);
    if !accepted.contains(&version) {
        let expected = accepted.iter().max().copied().unwrap_or(0);
        let hint = if version < expected {
            " (written by an older spidx: rebuild the index)"
        } else {
            ""
        };
        return Err(Error::corrupted(
            what,
            format!("format version {version}, expected {expected}{hint}"),
        ));
    }
    if let Some(kind) = kind {
        if u32_at(12) != kind_tag(kind) {
            return Err(Error::corrupted(
                what,
                format!("the state is not of a '{kind}' device"),
            ));
        }
    }
    let crc = u32_at(16);
    let len = u64::from_le_bytes(bytes[20..28].try_into().unwrap());
    let payload = &bytes[HEADER..];
    if payload.len() as u64 != len {
        return Err(Error::corrupted(
            what,
            format!("truncated: {} of {len} payload bytes", payload.len()),
        ));
    }
    if crc32fast::hash(payload) != crc {
        return Err(Error::corrupted(what, "checksum mismatch"));
    }
    Ok((version, payload))
}

fn kind_tag(kind: &str) -> u32 {
    crc32fast::hash(kind.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_array_reads_what_was_written() {
        let mut a = PageArray::new(4);
        let mut out = [9u8; 4];
        a.read(7, &mut out);
        assert_eq!(out, [0; 4]);
        a.write(7, &[1, 2, 3, 4]);
        a.read(7, &mut out);
        assert_eq!(out, [1, 2, 3, 4]);
        let p = a.take(7).unwrap();
        assert!(!a.is_written(7));
        a.put(2, p);
        a.read(2, &mut out);
        assert_eq!(out, [1, 2, 3, 4]);
        assert_eq!(a.written_pages(), 1);
        // A page far away costs one chunk, not a directory up to it.
        a.write(1 << 28, &[9, 9, 9, 9]);
        assert_eq!(a.chunks.iter().flatten().count(), 2);
        assert!(a.is_written(1 << 28) && !a.is_written((1 << 28) - 1));
    }

    #[test]
    fn state_round_trip_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.state");
        let mut a = PageArray::new(512);
        a.write(3, &[7u8; 512]);
        save_state(&path, "memory", &a).unwrap();
        let b: PageArray = load_state(&path, "memory").unwrap();
        let mut out = vec![0u8; 512];
        b.read(3, &mut out);
        assert_eq!(out, vec![7u8; 512]);
        assert!(load_state::<PageArray>(&path, "hdd")
            .unwrap_err()
            .to_string()
            .contains("not of a 'hdd'"));

        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        assert!(load_state::<PageArray>(&path, "memory")
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        assert!(load_state::<PageArray>(&path, "memory")
            .unwrap_err()
            .to_string()
            .contains("truncated"));
        std::fs::write(&path, b"garbage").unwrap();
        assert!(load_state::<PageArray>(&path, "memory").is_err());
    }
}
