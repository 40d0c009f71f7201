//! The object store: the exact geometries of indexed objects, kept as records on the same
//! device model as the index (architecture §7), so the refinement step's I/O is
//! counted like the filter step's.
//!
//! Records are appended into pages: `[len u32][crc32 u32][id u64][payload]`, possibly
//! spanning pages. A directory (object id → record offset and length) is saved next to the
//! index, like a heap file's tuple map, as pages sorted by id read when first needed
//! ([`directory`]): opening costs a small state file, a checkpoint writes the directory
//! pages that changed. Reading an object costs the device reads of the pages its record
//! covers. Updates append a new version; deletes drop the directory entry.
//!
//! Durability: the directory is saved at checkpoints ([`ObjectStore::flush`]). Records
//! appended after it are found again when the store is reopened with `scan_tail` (stores
//! whose unit of durability is the operation): the record area is walked past the saved end
//! while records are whole and their checksums, seeded by the store's random nonce, match —
//! a record left by another store on the same device never does. [`ObjectStore::sync_pending`]
//! writes the partly filled last page and syncs, making every record stored so far durable.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::device::Device;
use crate::{Error, Result};

pub(crate) mod directory;

use directory::Directory;

const RECORD_HEADER: usize = 16;

/// Counters of the object store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectStats {
    /// Objects read.
    pub objects_read: u64,
    /// Pages read from the device for them.
    pub pages_read: u64,
    /// Objects written.
    pub objects_written: u64,
    /// Pages written to the device.
    pub pages_written: u64,
}

/// Appends and reads object records on a device. See the module documentation.
pub struct ObjectStore {
    dev: Box<dyn Device>,
    page_size: usize,
    dir: Directory,
    /// Contents of the last, partly filled page (not yet complete on the device).
    tail: Vec<u8>,
    dir_path: Option<PathBuf>,
    stats: ObjectStats,
    buf: Vec<u8>,
    /// Records appended since the last [`Self::sync_pending`] or [`Self::flush`].
    pending: bool,
    /// Records found past the saved directory's end when the store was opened.
    recovered: u64,
}

impl ObjectStore {
    /// A new, empty store on `dev`; with `dir_path`, [`ObjectStore::flush`] saves the
    /// directory there.
    pub fn create(dev: Box<dyn Device>, dir_path: Option<&Path>) -> Self {
        let page_size = dev.page_size();
        let mut nonce = 0;
        while nonce == 0 {
            nonce = rand::random();
        }
        ObjectStore {
            dev,
            page_size,
            dir: Directory::new(nonce),
            tail: Vec::with_capacity(page_size),
            dir_path: dir_path.map(Path::to_path_buf),
            stats: ObjectStats::default(),
            buf: Vec::new(),
            pending: false,
            recovered: 0,
        }
    }

    /// Reopens a store whose directory was saved at `dir_path`; with `scan_tail`, records
    /// appended after that save are found again (see the module documentation).
    pub fn open(dev: Box<dyn Device>, dir_path: &Path, scan_tail: bool) -> Result<Self> {
        let dir = Directory::load(dir_path)?;
        let page_size = dev.page_size();
        let mut s = ObjectStore {
            dev,
            page_size,
            dir,
            tail: Vec::new(),
            dir_path: Some(dir_path.to_path_buf()),
            stats: ObjectStats::default(),
            buf: Vec::new(),
            pending: false,
            recovered: 0,
        };
        if scan_tail && s.dir.nonce != 0 {
            s.scan_past_end()?;
        }
        let mut tail = vec![0u8; page_size];
        let used = (s.dir.end % page_size as u64) as usize;
        if used > 0 {
            s.dev.read(s.dir.end / page_size as u64, &mut tail)?;
        }
        tail.truncate(used);
        s.tail = tail;
        Ok(s)
    }

    /// Walks whole, valid records from the directory's end on, adding each to the
    /// directory (a later version of an id replaces an earlier one).
    fn scan_past_end(&mut self) -> Result<()> {
        let cap = self.dev.capacity_pages() * self.page_size as u64;
        let mut offset = self.dir.end;
        while offset + RECORD_HEADER as u64 <= cap {
            let head = self.read_span(offset, RECORD_HEADER)?;
            let len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
            let id = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
            if (len as usize) < RECORD_HEADER || offset + len as u64 > cap {
                break;
            }
            let nonce = self.dir.nonce;
            let rec = self.read_span(offset, len as usize)?;
            if check_record(rec, None, cap - offset, nonce).is_err() {
                break;
            }
            let existed = self.dir.get(id)?.is_some();
            self.dir.insert(id, (offset, len), existed);
            offset += len as u64;
            self.recovered += 1;
        }
        self.dir.end = offset;
        Ok(())
    }

    /// Records found past the saved directory's end when the store was opened.
    pub fn recovered_records(&self) -> u64 {
        self.recovered
    }

    /// Number of live objects.
    pub fn len(&self) -> usize {
        self.dir.len() as usize
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.dir.is_empty()
    }

    /// Whether object `id` exists (may read a directory page).
    pub fn contains(&mut self, id: u64) -> Result<bool> {
        Ok(self.dir.get(id)?.is_some())
    }

    /// The store's counters.
    pub fn stats(&self) -> ObjectStats {
        self.stats
    }

    /// The device (shared statistics).
    pub fn device(&self) -> &dyn Device {
        self.dev.as_ref()
    }

    /// Stores `payload` as the current version of object `id`.
    pub fn put(&mut self, id: u64, payload: &[u8]) -> Result<()> {
        let len = RECORD_HEADER + payload.len();
        let len32 = u32::try_from(len)
            .map_err(|_| Error::invalid("object", format!("object {id} is larger than 4GB")))?;
        let end = self.dir.end + len as u64;
        let cap = self.dev.capacity_pages() * self.page_size as u64;
        if end > cap {
            return Err(Error::DeviceFull(format!(
                "the object store needs {end} bytes but has {cap}"
            )));
        }
        let mut rec = Vec::with_capacity(len);
        rec.extend_from_slice(&len32.to_le_bytes());
        rec.extend_from_slice(&record_crc(self.dir.nonce, id, payload).to_le_bytes());
        rec.extend_from_slice(&id.to_le_bytes());
        rec.extend_from_slice(payload);
        let existed = self.dir.get(id)?.is_some();
        let offset = self.dir.end;
        let mut rest = &rec[..];
        while !rest.is_empty() {
            let take = (self.page_size - self.tail.len()).min(rest.len());
            self.tail.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.tail.len() == self.page_size {
                let page =
                    (self.dir.end + (rec.len() - rest.len()) as u64 - 1) / self.page_size as u64;
                self.dev.write(page, &self.tail)?;
                self.stats.pages_written += 1;
                self.tail.clear();
            }
        }
        self.dir.end = end;
        self.dir.insert(id, (offset, len32), existed);
        self.stats.objects_written += 1;
        self.pending = true;
        Ok(())
    }

    /// Reads the current version of object `id`, if it exists.
    pub fn get(&mut self, id: u64) -> Result<Option<&[u8]>> {
        let Some((offset, len)) = self.dir.get(id)? else {
            return Ok(None);
        };
        if len < RECORD_HEADER as u32 || offset + len as u64 > self.dir.end {
            return Err(Error::corrupted(
                format!("object {id}"),
                format!(
                    "the directory places its record at bytes {offset}..{} but records end at byte {} (objects.dir is damaged)",
                    offset + len as u64,
                    self.dir.end
                ),
            ));
        }
        let end = self.dir.end;
        self.read_span(offset, len as usize)?;
        self.stats.objects_read += 1;
        let rec = self.buf_record(offset, len as usize);
        match check_record(rec, Some(id), end - offset, self.dir.nonce) {
            Ok(_) => Ok(Some(&rec[RECORD_HEADER..])),
            Err(msg) => Err(Error::corrupted(
                format!("object {id}"),
                format!("record at byte {offset} {msg}"),
            )),
        }
    }

    /// The bytes `offset..offset + len` of the record area: the pages they cover are read
    /// from the device, except the partly filled tail page, which is in memory.
    fn read_span(&mut self, offset: u64, len: usize) -> Result<&[u8]> {
        let ps = self.page_size as u64;
        let (first, last) = (offset / ps, (offset + len as u64 - 1) / ps);
        let tail_page = self.dir.end / ps;
        // Pages before the partly filled tail page come from the device.
        let n_dev = if self.tail.is_empty() {
            last - first + 1
        } else {
            (last + 1).min(tail_page).saturating_sub(first)
        };
        self.buf.resize(((last - first + 1) * ps) as usize, 0);
        if n_dev > 0 {
            self.dev
                .read(first, &mut self.buf[..(n_dev * ps) as usize])?;
            self.stats.pages_read += n_dev;
        }
        if last >= tail_page && !self.tail.is_empty() {
            let at = ((tail_page - first) * ps) as usize;
            self.buf[at..at + self.tail.len()].copy_from_slice(&self.tail);
        }
        Ok(self.buf_record(offset, len))
    }

    /// The record at `offset` in the buffer [`Self::read_span`] filled.
    fn buf_record(&self, offset: u64, len: usize) -> &[u8] {
        let start = (offset % self.page_size as u64) as usize;
        &self.buf[start..start + len]
    }

    /// Ids of the live objects, in record order (reads the whole directory).
    pub fn ids(&mut self) -> Result<Vec<u64>> {
        let mut ids: Vec<(u64, u64)> = self
            .dir
            .entries()?
            .into_iter()
            .map(|(id, e)| (e.0, id))
            .collect();
        ids.sort_unstable();
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }

    /// Walks the whole record area from its first byte to its end, record after record
    /// (live and superseded versions alike), and checks each one's length and checksum:
    /// what `spidx check --deep` adds to reading the live records. Stops at the first
    /// record whose length cannot be trusted (the chain is broken there).
    pub fn scan(&mut self) -> Result<ScanReport> {
        let mut rep = ScanReport::default();
        let end = self.dir.end;
        let mut offset = 0u64;
        while offset < end {
            if end - offset < RECORD_HEADER as u64 {
                rep.problems.push(format!(
                    "{} bytes at byte {offset} are too few for a record header",
                    end - offset
                ));
                break;
            }
            let head = self.read_span(offset, RECORD_HEADER)?;
            let len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
            let id = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
            if (len as usize) < RECORD_HEADER || offset + len as u64 > end {
                rep.problems.push(format!(
                    "the record at byte {offset} has length {len}, which does not fit the {end} bytes written; the chain of records is broken there"
                ));
                break;
            }
            let nonce = self.dir.nonce;
            let rec = self.read_span(offset, len as usize)?;
            if let Err(msg) = check_record(rec, None, end - offset, nonce) {
                rep.problems
                    .push(format!("the record of object {id} at byte {offset} {msg}"));
            }
            let live = self.dir.get(id)? == Some((offset, len));
            rep.records += 1;
            rep.live += u64::from(live);
            offset += len as u64;
        }
        rep.bytes = offset;
        Ok(rep)
    }

    /// Forgets object `id`; returns whether it existed (may read a directory page).
    pub fn remove(&mut self, id: u64) -> Result<bool> {
        self.dir.remove(id)
    }

    /// Writes the partly filled last page, if records were stored since the last call,
    /// and syncs the device: every record stored so far is durable (found again by a
    /// reopening with `scan_tail`).
    pub(crate) fn sync_pending(&mut self) -> Result<()> {
        if !self.pending {
            return Ok(());
        }
        self.write_tail()?;
        self.dev.sync()?;
        self.pending = false;
        Ok(())
    }

    fn write_tail(&mut self) -> Result<()> {
        if !self.tail.is_empty() {
            let mut page = self.tail.clone();
            page.resize(self.page_size, 0);
            self.dev
                .write(self.dir.end / self.page_size as u64, &page)?;
            self.stats.pages_written += 1;
        }
        Ok(())
    }

    /// Saves the directory as it is, without device I/O (a new store).
    pub(crate) fn save_directory(&mut self) -> Result<()> {
        match &self.dir_path {
            Some(p) => self.dir.save(p).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Writes the partly filled last page and saves the directory.
    pub fn flush(&mut self) -> Result<()> {
        self.pending = false;
        if !self.tail.is_empty() {
            let mut page = self.tail.clone();
            page.resize(self.page_size, 0);
            self.dev
                .write(self.dir.end / self.page_size as u64, &page)?;
            self.stats.pages_written += 1;
        }
        self.dev.sync()?;
        if let Some(p) = &self.dir_path {
            self.dir.save(p)?;
        }
        Ok(())
    }
}

/// What [`ObjectStore::scan`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ScanReport {
    /// Records walked (every version ever appended).
    pub records: u64,
    /// Of these, the current versions of live objects.
    pub live: u64,
    /// Bytes walked.
    pub bytes: u64,
    /// Problems, each naming the byte offset (and object id when it can be read).
    pub problems: Vec<String>,
}

/// Checks a whole record: its stored length, id (when `id` is given) and checksum. The
/// error completes "record at byte N ...".
fn check_record(
    rec: &[u8],
    id: Option<u64>,
    room: u64,
    nonce: u64,
) -> std::result::Result<u64, String> {
    let stored_len = u32::from_le_bytes(rec[0..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(rec[4..8].try_into().expect("4 bytes"));
    let stored_id = u64::from_le_bytes(rec[8..16].try_into().expect("8 bytes"));
    if stored_len as usize != rec.len() || stored_len as u64 > room {
        return Err(format!(
            "has length {stored_len} where {} was expected",
            rec.len()
        ));
    }
    if let Some(id) = id.filter(|id| *id != stored_id) {
        return Err(format!("holds object {stored_id}, not {id}"));
    }
    if record_crc(nonce, stored_id, &rec[RECORD_HEADER..]) != crc {
        return Err("fails its checksum".to_string());
    }
    Ok(stored_id)
}

fn record_crc(nonce: u64, id: u64, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if nonce != 0 {
        h.update(&nonce.to_le_bytes());
    }
    h.update(&id.to_le_bytes());
    h.update(payload);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{MemoryConfig, MemoryDevice};
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn dev(state: Option<&Path>) -> Box<dyn Device> {
        Box::new(MemoryDevice::open(&MemoryConfig { capacity: 4 << 20 }, 1024, state).unwrap())
    }

    proptest! {
        #[test]
        fn reads_back_every_version(ops in prop::collection::vec((0u64..40, prop::collection::vec(any::<u8>(), 0..3000), any::<bool>()), 1..120)) {
            let dir = tempfile::tempdir().unwrap();
            let (state, dpath) = (dir.path().join("dev"), dir.path().join("objects.dir"));
            let mut s = ObjectStore::create(dev(Some(&state)), Some(&dpath));
            let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
            for (id, payload, remove) in &ops {
                if *remove {
                    prop_assert_eq!(s.remove(*id).unwrap(), model.remove(id).is_some());
                } else {
                    s.put(*id, payload).unwrap();
                    model.insert(*id, payload.clone());
                }
                for (k, v) in &model {
                    let got = s.get(*k).unwrap().map(<[u8]>::to_vec);
                    prop_assert_eq!(got.as_ref(), Some(v));
                }
            }
            s.flush().unwrap();
            s.dev.persist().unwrap();
            drop(s);
            let mut s = ObjectStore::open(dev(Some(&state)), &dpath, true).unwrap();
            prop_assert_eq!(s.len(), model.len());
            for (k, v) in &model {
                let got = s.get(*k).unwrap().map(<[u8]>::to_vec);
                prop_assert_eq!(got.as_ref(), Some(v));
            }
            s.put(1000, b"after reopen").unwrap();
            prop_assert_eq!(s.get(1000).unwrap().unwrap(), b"after reopen");
        }
    }

    #[test]
    fn detects_corruption_and_full_device() {
        let mut s = ObjectStore::create(dev(None), None);
        s.put(7, &[5u8; 1500]).unwrap();
        s.flush().unwrap();
        let mut page = vec![0u8; 1024];
        s.dev.read(0, &mut page).unwrap();
        page[100] ^= 0xff;
        s.dev.write(0, &page).unwrap();
        let err = s.get(7).unwrap_err().to_string();
        assert!(err.contains("object 7"), "{err}");
        let mut small = ObjectStore::create(
            Box::new(MemoryDevice::open(&MemoryConfig { capacity: 2048 }, 1024, None).unwrap()),
            None,
        );
        assert!(small.put(1, &[0u8; 3000]).is_err());
        small.put(2, b"fits").unwrap();
        assert_eq!(small.get(2).unwrap().unwrap(), b"fits");
    }
}
