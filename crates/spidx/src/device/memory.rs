//! The memory device: pages held in RAM with zero latency. It is the baseline that shows
//! CPU cost alone, and the device the index benchmarks use to compare with in-memory
//! libraries.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::paged::{Indexed, PageStore};
use super::pages::{
    decode_state, load_state_payload, save_state_as, INDEX_PAGED_FORMAT, PAGED_FORMAT,
};
use super::stats::{DeviceStats, HostCounters};
use super::{check_request, request_len, validate_page_size, Device};
use crate::Result;

/// Parameters of the memory device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Capacity in bytes (memory is only used for pages actually written).
    pub capacity: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { capacity: 64 << 30 }
    }
}

/// A zero-latency device backed by RAM; its state can be persisted to a file (the pages in
/// a pages file read on demand, see [`super::paged`]).
pub struct MemoryDevice {
    pages: PageStore,
    capacity_pages: u64,
    host: HostCounters,
    state_path: Option<PathBuf>,
    /// Latest submission time of a simulation ([`Device::submit_at`]); requests take no time.
    submitted_ns: u64,
}

impl MemoryDevice {
    /// Opens a memory device of pages of `page_size` bytes; with `state`, opens the pages
    /// saved there by a previous [`Device::persist`] (if the file exists; pages are read
    /// from its pages file when first used) and saves to it.
    pub fn open(config: &MemoryConfig, page_size: usize, state: Option<&Path>) -> Result<Self> {
        validate_page_size(page_size)?;
        let capacity_pages = config.capacity / page_size as u64;
        let pages = match state {
            Some(p) if p.exists() => {
                let (version, payload) =
                    load_state_payload(p, "memory", &[PAGED_FORMAT, INDEX_PAGED_FORMAT])?;
                let mut pages = if version == PAGED_FORMAT {
                    decode_state::<PageStore>(p, &payload)?
                } else {
                    decode_state::<Indexed<PageStore>>(p, &payload)?.0
                };
                if pages.page_size() != page_size {
                    return Err(crate::Error::invalid(
                        "page size",
                        format!(
                            "{page_size} bytes, but the saved memory device uses {}",
                            pages.page_size()
                        ),
                    ));
                }
                pages.attach(p)?;
                pages.use_paged_index();
                pages
            }
            _ => PageStore::new_paged(page_size),
        };
        Ok(MemoryDevice {
            pages,
            capacity_pages,
            host: HostCounters::default(),
            state_path: state.map(Path::to_path_buf),
            submitted_ns: 0,
        })
    }
}

impl Device for MemoryDevice {
    fn page_size(&self) -> usize {
        self.pages.page_size()
    }

    fn capacity_pages(&self) -> u64 {
        self.capacity_pages
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        let ps = self.page_size();
        let n = check_request(page, buf.len(), ps, self.capacity_pages)?;
        self.host.record_read(page, n, ps);
        for (i, chunk) in buf.chunks_exact_mut(ps).enumerate() {
            self.pages.read(page + i as u64, chunk)?;
        }
        Ok(())
    }

    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        let ps = self.page_size();
        let n = check_request(page, request_len(pages, ps)?, ps, self.capacity_pages)?;
        self.host.record_read(page, n, ps);
        Ok(())
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        let ps = self.page_size();
        let n = check_request(page, data.len(), ps, self.capacity_pages)?;
        self.host.record_write(page, n, ps);
        for (i, chunk) in data.chunks_exact(ps).enumerate() {
            self.pages.write(page + i as u64, chunk);
        }
        Ok(())
    }

    fn write_changed(
        &mut self,
        page: u64,
        data: &[u8],
        changed: &[std::ops::Range<usize>],
    ) -> Result<()> {
        let ps = self.page_size();
        check_request(page, data.len(), ps, self.capacity_pages)?;
        if data.len() != ps || changed.iter().any(|r| r.start > r.end || r.end > ps) {
            return self.write(page, data);
        }
        self.host.record_write(page, 1, ps);
        self.pages.write_ranges(page, data, changed);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.host.record_sync();
        Ok(())
    }

    fn drop_caches(&mut self) -> Result<()> {
        self.host.record_cache_drop();
        Ok(())
    }

    fn device_ns(&self) -> u64 {
        0
    }

    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        self.submitted_ns = self.submitted_ns.max(at_ns);
        Ok(())
    }

    fn completed_ns(&self) -> u64 {
        self.submitted_ns
    }

    fn read_time_ignores_contents(&self) -> bool {
        true
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            kind: "memory".into(),
            page_size: self.page_size(),
            host: self.host,
            ..Default::default()
        }
    }

    fn persist(&mut self) -> Result<()> {
        match &self.state_path {
            Some(p) => {
                self.pages.save(p)?;
                save_state_as(p, "memory", INDEX_PAGED_FORMAT, &Indexed(&self.pages))
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("mem.state");
        let cfg = MemoryConfig { capacity: 1 << 20 };
        let mut d = MemoryDevice::open(&cfg, 4096, Some(&state)).unwrap();
        assert_eq!(d.capacity_pages(), 256);
        let data: Vec<u8> = (0..8192).map(|i| (i % 251) as u8).collect();
        d.write(10, &data).unwrap();
        let mut back = vec![0u8; 8192];
        d.read(10, &mut back).unwrap();
        assert_eq!(back, data);
        assert!(d.read(255, &mut back).is_err(), "read past capacity");
        assert!(d.write(0, &data[..100]).is_err(), "partial page");
        d.persist().unwrap();
        let mut e = MemoryDevice::open(&cfg, 4096, Some(&state)).unwrap();
        let mut again = vec![1u8; 8192];
        e.read(10, &mut again).unwrap();
        assert_eq!(again, data);
        assert!(MemoryDevice::open(&cfg, 2048, Some(&state)).is_err());
        assert!(MemoryDevice::open(&cfg, 1000, None).is_err());
        let s = d.stats();
        assert_eq!(
            (s.host.write_ops, s.host.read_ops, s.host.pages_written),
            (1, 1, 2)
        );
    }
}
