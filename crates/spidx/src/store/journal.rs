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

use crate::device::files::sync_parent;
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
    /// The last entry is complete but fails its checksum: (page, stored checksum). It is
    /// a torn write only if the page still holds the image it was saving (checked by the
    /// store with [`entry_matches`]); otherwise the journal is damaged.
    pub torn: Option<(PageId, u32)>,
    /// A damaged entry followed by valid ones (or several damaged entries): what is lost
    /// and what survives. Rolling back only the valid entries is a loss the user must
    /// accept explicitly.
    pub damage: Option<String>,
}

/// Whether `image`, the device's content of page `page` now, is the image that a journal
/// entry of checkpoint `checkpoint` with checksum `crc` was saving.
pub(crate) fn entry_matches(checkpoint: u64, page: PageId, crc: u32, image: &[u8]) -> bool {
    entry_crc(checkpoint, page, image) == crc
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
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a symbolic link planted at the journal's name.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
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

    /// Reads the journal at `path` without changing it. A journal is expected there (the
    /// store keeps one): a missing or empty file, a header that is not a journal's, or a
    /// damaged entry that is not the last one are errors naming the file. See
    /// [`JournalContents::torn`] for a damaged last entry.
    pub fn read(path: &Path, page_size: usize) -> Result<JournalContents> {
        let what = || format!("journal {}", path.display());
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corrupted(
                    what(),
                    "is missing: the index keeps a rollback journal, so the pages changed \
                     since its last checkpoint cannot be rolled back",
                ))
            }
            Err(e) => return Err(Error::io(path, e)),
        };
        if bytes.is_empty() {
            // Never a state the store leaves (its header is written in place, never
            // after truncating the file to nothing).
            return Err(Error::corrupted(
                what(),
                "is empty (0 bytes) where the index expects a journal: the page images \
                 that roll the tree back to its last checkpoint are lost",
            ));
        }
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
        let entry = ENTRY_HEADER + page_size;
        let full = (bytes.len() - HEADER) / entry;
        let slot = |i: usize| {
            let pos = HEADER + i * entry;
            let page = u64_at(&bytes, pos);
            let crc = u32_at(&bytes, pos + 8);
            (page, crc, &bytes[pos + ENTRY_HEADER..pos + entry])
        };
        let valid = |i: usize, c: u64| {
            let (page, crc, image) = slot(i);
            entry_crc(c, page, image) == crc
        };
        let good = (0..full).take_while(|i| valid(*i, checkpoint)).count();
        let images: Vec<(PageId, Vec<u8>)> = (0..good)
            .map(|i| {
                let (page, _, image) = slot(i);
                (page, image.to_vec())
            })
            .collect();
        let mut contents = JournalContents {
            checkpoint,
            images,
            ignored_bytes: (bytes.len() - HEADER - good * entry) as u64,
            torn: None,
            damage: None,
        };
        if good == full {
            // At most a partial entry after the valid ones: torn by a crash before it was
            // synced, so its page was never overwritten.
            return Ok(contents);
        }
        // Entries left by the previous checkpoint (a crash between writing the new header
        // and cutting the file): stale, not damaged.
        if checkpoint > 0 && valid(good, checkpoint - 1) {
            return Ok(contents);
        }
        let later_valid = (good + 1..full).filter(|i| valid(*i, checkpoint)).count();
        let partial = !(bytes.len() - HEADER).is_multiple_of(entry);
        let (page, crc, _) = slot(good);
        if later_valid == 0 && good + 1 == full && !partial {
            // The last entry is damaged: torn if its page still holds the image it was
            // saving (the page is overwritten only after its entry is synced).
            contents.torn = Some((page, crc));
            return Ok(contents);
        }
        contents.damage = Some(format!(
            "entry {} of {} (page {page}) is damaged and {} valid entries follow it: this is \
             damage, not a torn write; the first {good} page images can be rolled back, \
             the checkpoint images of the damaged entries are lost",
            good + 1,
            full,
            later_valid
        ));
        Ok(contents)
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
        // The header is written over the old one (one sector: all or nothing), then the
        // file is cut after it: no crash leaves an empty journal, and entries of the old
        // checkpoint left by a crash in between fail their checksum for the new one.
        let io = |f: &mut File| -> std::io::Result<()> {
            f.write_all_at(&head, 0)?;
            f.set_len(HEADER as u64)?;
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
    pub(crate) fn set_restored(&mut self, n: u64) {
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

    fn entry_len() -> usize {
        ENTRY_HEADER + 512
    }

    #[test]
    fn round_trip_torn_tail_and_reset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(JOURNAL_FILE);
        let e = Journal::read(&p, 512).unwrap_err().to_string();
        assert!(e.contains("is missing"), "{e}");
        let mut j = Journal::create(&p, 512, 3).unwrap();
        j.save(7, &[1u8; 512]).unwrap();
        j.save(2, &[2u8; 512]).unwrap();
        assert!(j.has(7) && !j.has(3));
        // A torn (partial) third entry is ignored.
        append_raw(&p, &[9u8; 100]);
        let c = Journal::read(&p, 512).unwrap();
        assert_eq!(c.checkpoint, 3);
        assert_eq!(c.images, vec![(7, vec![1u8; 512]), (2, vec![2u8; 512])]);
        assert_eq!(c.ignored_bytes, 100);
        assert_eq!((c.torn, c.damage), (None, None));
        // A flipped bit in the last complete entry (no partial one after it): a torn
        // candidate the store verifies against the device.
        let mut clean = std::fs::read(&p).unwrap();
        clean.truncate(clean.len() - 100);
        let mut b = clean.clone();
        b[HEADER + entry_len() + ENTRY_HEADER + 20] ^= 1;
        std::fs::write(&p, &b).unwrap();
        let c = Journal::read(&p, 512).unwrap();
        assert_eq!(c.images.len(), 1);
        let (page, crc) = c.torn.unwrap();
        assert_eq!(page, 2);
        assert!(entry_matches(3, page, crc, &[2u8; 512]));
        assert!(!entry_matches(3, page, crc, &[5u8; 512]));
        assert_eq!(c.damage, None);
        // A flipped bit in the first entry, followed by a valid one: damage, named.
        let mut b = clean.clone();
        b[HEADER + ENTRY_HEADER + 20] ^= 1;
        std::fs::write(&p, &b).unwrap();
        let c = Journal::read(&p, 512).unwrap();
        assert!(c.images.is_empty());
        let d = c.damage.unwrap();
        assert!(
            d.contains("entry 1 of 2") && d.contains("1 valid entries follow"),
            "{d}"
        );
        std::fs::write(&p, &clean).unwrap();
        j.reset(4).unwrap();
        let c = Journal::read(&p, 512).unwrap();
        assert_eq!((c.checkpoint, c.images.len()), (4, 0));
        assert_eq!(j.stats().images, 2);
        assert!(Journal::read(&p, 1024).is_err());
        std::fs::write(&p, b"garbage that is not a journal header at all").unwrap();
        let e = Journal::read(&p, 512).unwrap_err().to_string();
        assert!(
            e.contains("direct.journal") && e.contains("not a spidx journal"),
            "{e}"
        );
        // Truncated to nothing: never a state the store leaves.
        std::fs::write(&p, b"").unwrap();
        let e = Journal::read(&p, 512).unwrap_err().to_string();
        assert!(e.contains("is empty (0 bytes)"), "{e}");
    }

    /// A crash between writing a new header and cutting the file leaves entries of the
    /// previous checkpoint: stale, not damage.
    #[test]
    fn entries_of_the_previous_checkpoint_are_stale() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(JOURNAL_FILE);
        let mut j = Journal::create(&p, 512, 3).unwrap();
        j.save(7, &[1u8; 512]).unwrap();
        j.save(2, &[2u8; 512]).unwrap();
        let old = std::fs::read(&p).unwrap();
        j.reset(4).unwrap();
        let mut b = std::fs::read(&p).unwrap();
        b.extend_from_slice(&old[HEADER..]);
        std::fs::write(&p, &b).unwrap();
        let c = Journal::read(&p, 512).unwrap();
        assert_eq!((c.checkpoint, c.images.len()), (4, 0));
        assert_eq!((c.torn, c.damage), (None, None));
    }
}
