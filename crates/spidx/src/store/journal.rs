//! The direct store's rollback journal: what makes an index on a `file:` device crash-safe
//! without a log. The direct store writes node pages in place; before it overwrites, for the
//! first time since the last checkpoint, a page that was in use at that checkpoint, the page's
//! image (as the checkpoint left it on the device) is appended to `direct.journal` and the
//! journal is synced. A checkpoint syncs the device, saves `store.json` with the next
//! checkpoint number, and only then empties the journal. Recovery after a crash writes every
//! image of the journal of the current checkpoint back: the tree is exactly what the last
//! checkpoint saved. The durability unit of the direct store is therefore the checkpoint;
//! its cost is one journal write and one sync for each page first modified in a checkpoint
//! interval, plus a device read of that page's old image.
//!
//! # Format
//! A 32-byte header `[magic "SPIDXJNL"][version u32][page size u32][checkpoint u64]
//! [crc32 u32][0 u32]`, then entries `[page u64][crc32 u32][0 u32][image]`; the CRC of an
//! entry covers the checkpoint number, the page number and the image, so an entry torn by a
//! crash (its page was then never overwritten) or left by an older checkpoint is not applied.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::header::sync_parent;
use crate::node::PageId;
use crate::{Error, Result};

/// File name of the journal in an index directory.
pub const JOURNAL_FILE: &str = "direct.journal";

const MAGIC: &[u8; 8] = b"SPIDXJNL";
const VERSION: u32 = 1;
const HEADER: usize = 32;
const ENTRY_HEADER: usize = 16;

/// Counters of the journal (its own file: its I/O is not the device's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalStats {
    /// Page images saved before a first overwrite.
    pub images: u64,
    /// Bytes written to the journal file.
    pub bytes: u64,
    /// Syncs of the journal file.
    pub syncs: u64,
    /// Wall time spent writing and syncing the journal, in nanoseconds.
    pub ns: u64,
    /// Page images written back by the last recovery.
    pub restored: u64,
}

/// What a journal file holds (see [`Journal::read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalContents {
    /// The checkpoint whose pages the images restore.
    pub checkpoint: u64,
    /// Valid page images, in the order they were saved.
    pub images: Vec<(PageId, Vec<u8>)>,
    /// Bytes after the last valid entry (an entry torn by a crash), ignored.
    pub ignored_bytes: u64,
}

/// The open journal of a direct store. See the module documentation.
pub struct Journal {
    path: PathBuf,
    file: File,
    page_size: usize,
    checkpoint: u64,
    len: u64,
    saved: HashSet<PageId>,
    stats: JournalStats,
}

impl Journal {
    /// Creates (or empties) the journal at `path` for checkpoint `checkpoint`, durably.
    pub fn create(path: &Path, page_size: usize, checkpoint: u64) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let mut j = Journal {
            path: path.to_path_buf(),
            file,
            page_size,
            checkpoint,
            len: 0,
            saved: HashSet::new(),
            stats: JournalStats::default(),
        };
        j.reset(checkpoint)?;
        sync_parent(path).map_err(|e| Error::io(path, e))?;
        Ok(j)
    }

    /// Reads the journal at `path` without changing it; `None` if there is none. A header
    /// that is not a journal's is an error naming the file.
    pub fn read(path: &Path, page_size: usize) -> Result<Option<JournalContents>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        if bytes.is_empty() {
            // Created but its header never reached the disk: nothing was saved after it.
            return Ok(None);
        }
        let what = || format!("journal {}", path.display());
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(Error::corrupted(what(), "is not a spidx journal"));
        }
        let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4"));
        let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8"));
        if crc32fast::hash(&bytes[..24]) != u32_at(&bytes, 24) {
            return Err(Error::corrupted(what(), "header checksum mismatch"));
        }
        if u32_at(&bytes, 8) != VERSION || u32_at(&bytes, 12) as usize != page_size {
            return Err(Error::corrupted(
                what(),
                format!(
                    "version {} with {}-byte pages; expected version {VERSION} with {page_size}",
                    u32_at(&bytes, 8),
                    u32_at(&bytes, 12)
                ),
            ));
        }
        let checkpoint = u64_at(&bytes, 16);
        let mut images = Vec::new();
        let mut pos = HEADER;
        while pos + ENTRY_HEADER + page_size <= bytes.len() {
            let page = u64_at(&bytes, pos);
            let crc = u32_at(&bytes, pos + 8);
            let image = &bytes[pos + ENTRY_HEADER..pos + ENTRY_HEADER + page_size];
            if entry_crc(checkpoint, page, image) != crc {
                break;
            }
            images.push((page, image.to_vec()));
            pos += ENTRY_HEADER + page_size;
        }
        Ok(Some(JournalContents {
            checkpoint,
            images,
            ignored_bytes: (bytes.len() - pos) as u64,
        }))
    }

    /// Empties the journal and starts checkpoint `checkpoint` (after a checkpoint was saved).
    pub fn reset(&mut self, checkpoint: u64) -> Result<()> {
        let start = Instant::now();
        let mut head = [0u8; HEADER];
        head[..8].copy_from_slice(MAGIC);
        head[8..12].copy_from_slice(&VERSION.to_le_bytes());
        head[12..16].copy_from_slice(&(self.page_size as u32).to_le_bytes());
        head[16..24].copy_from_slice(&checkpoint.to_le_bytes());
        let crc = crc32fast::hash(&head[..24]);
        head[24..28].copy_from_slice(&crc.to_le_bytes());
        let io = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.write_all_at(&head, 0)?;
            f.sync_data()
        };
        io(&mut self.file).map_err(|e| Error::io(&self.path, e))?;
        self.checkpoint = checkpoint;
        self.len = HEADER as u64;
        self.saved.clear();
        self.stats.bytes += HEADER as u64;
        self.stats.syncs += 1;
        self.stats.ns += start.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// Whether page `id`'s image was saved in this checkpoint interval.
    pub fn has(&self, id: PageId) -> bool {
        self.saved.contains(&id)
    }

    /// Saves `image`, the checkpoint's content of page `id`, and syncs the journal: only
    /// then may the page be overwritten.
    pub fn save(&mut self, id: PageId, image: &[u8]) -> Result<()> {
        let start = Instant::now();
        let mut entry = Vec::with_capacity(ENTRY_HEADER + image.len());
        entry.extend_from_slice(&id.to_le_bytes());
        entry.extend_from_slice(&entry_crc(self.checkpoint, id, image).to_le_bytes());
        entry.extend_from_slice(&[0u8; 4]);
        entry.extend_from_slice(image);
        let io = |f: &mut File| -> std::io::Result<()> {
            f.write_all_at(&entry, self.len)?;
            f.sync_data()
        };
        io(&mut self.file).map_err(|e| Error::io(&self.path, e))?;
        self.len += entry.len() as u64;
        self.saved.insert(id);
        self.stats.images += 1;
        self.stats.bytes += entry.len() as u64;
        self.stats.syncs += 1;
        self.stats.ns += start.elapsed().as_nanos() as u64;
        Ok(())
    }

    /// The checkpoint the journal belongs to.
    pub fn checkpoint(&self) -> u64 {
        self.checkpoint
    }

    /// The journal's counters.
    pub fn stats(&self) -> JournalStats {
        self.stats
    }

    /// Records how many images the recovery that opened the store wrote back.
    pub fn set_restored(&mut self, n: u64) {
        self.stats.restored = n;
    }
}

fn entry_crc(checkpoint: u64, page: PageId, image: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&checkpoint.to_le_bytes());
    h.update(&page.to_le_bytes());
    h.update(image);
    h.finalize()
}

/// Appends raw bytes (tests tear the journal with it).
#[cfg(test)]
fn append_raw(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_torn_tail_and_reset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(JOURNAL_FILE);
        assert_eq!(Journal::read(&p, 512).unwrap(), None);
        let mut j = Journal::create(&p, 512, 3).unwrap();
        j.save(7, &[1u8; 512]).unwrap();
        j.save(2, &[2u8; 512]).unwrap();
        assert!(j.has(7) && !j.has(3));
        // A torn third entry is ignored.
        append_raw(&p, &[9u8; 100]);
        let c = Journal::read(&p, 512).unwrap().unwrap();
        assert_eq!(c.checkpoint, 3);
        assert_eq!(c.images, vec![(7, vec![1u8; 512]), (2, vec![2u8; 512])]);
        assert_eq!(c.ignored_bytes, 100);
        // A flipped bit ends the valid entries there.
        let mut b = std::fs::read(&p).unwrap();
        b[HEADER + ENTRY_HEADER + 512 + 20] ^= 1;
        std::fs::write(&p, &b).unwrap();
        assert_eq!(Journal::read(&p, 512).unwrap().unwrap().images.len(), 1);
        j.reset(4).unwrap();
        let c = Journal::read(&p, 512).unwrap().unwrap();
        assert_eq!((c.checkpoint, c.images.len()), (4, 0));
        assert_eq!(j.stats().images, 2);
        assert!(Journal::read(&p, 1024).is_err());
        std::fs::write(&p, b"garbage that is not a journal header at all").unwrap();
        let e = Journal::read(&p, 512).unwrap_err().to_string();
        assert!(
            e.contains("direct.journal") && e.contains("not a spidx journal"),
            "{e}"
        );
    }
}
