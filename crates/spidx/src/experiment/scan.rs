//! The sequential-scan baseline of Emrich et al. (2010, §3.2.3 and §5.4): the objects'
//! boxes (or vectors) stored contiguously on a device of the same model as the index's,
//! read front to back in large sequential requests, every record tested with the very
//! distance the index uses ([`Rect::min_dist`]), so its kNN answers equal the index's.
//!
//! It sits beside the index layer in the experiment runner: it talks to a [`Device`]
//! directly (no node store, no page cache: a scan reads every page once) and measures
//! itself with the same [`PhaseClock`] as an index query, so its CPU, device time and
//! device counters land in the same report fields.
//!
//! Layout: page after page from page 0, each page holding `page_size / record` whole
//! records (no record straddles a page); a record is the id (u64, little endian) and the
//! coordinates (f64): `D` for point data (vectors), `2·D` (min then max) for boxes.

use std::collections::BinaryHeap;

use super::workload::object_box;
use crate::data::Dataset;
use crate::device::Device;
use crate::geom::{Distance, Rect};
use crate::spatial::query::QueryReport;
use crate::spatial::{HostOps, HostProfile, PhaseClock};
use crate::{Error, Result};

/// Objects stored for a sequential scan on their own device.
pub(crate) struct ScanTable<const D: usize> {
    device: Box<dyn Device>,
    /// Whether records are points (`D` coordinates) rather than boxes (`2·D`).
    points: bool,
    record_bytes: usize,
    records_per_page: usize,
    records: u64,
    data_pages: u64,
    request_pages: usize,
    /// The host profile on a simulated device; `None` on a real one (wall time).
    host: Option<HostProfile>,
}

impl<const D: usize> ScanTable<D> {
    /// Writes every object of `ds` to `device` (from page 0, in requests of
    /// `request_bytes`), then syncs. Scans read in requests of `request_bytes` as well;
    /// it must be a non-zero multiple of the device's page size. `host` is the host profile
    /// on a simulated device, `None` on a real one (see [`PhaseClock`]).
    pub(crate) fn create(
        mut device: Box<dyn Device>,
        ds: &Dataset,
        request_bytes: usize,
        host: Option<HostProfile>,
    ) -> Result<Self> {
        if ds.dims() != D {
            return Err(Error::invalid(
                "scan",
                format!("the dataset has {} dimensions, not {D}", ds.dims()),
            ));
        }
        let page = device.page_size();
        if request_bytes < page || !request_bytes.is_multiple_of(page) {
            return Err(Error::invalid(
                "scan request",
                format!(
                    "{request_bytes} bytes is not a non-zero multiple of the {page}-byte page size"
                ),
            ));
        }
        let points = matches!(ds, Dataset::Vectors(_));
        let record_bytes = 8 + 8 * D * if points { 1 } else { 2 };
        let records_per_page = page / record_bytes;
        if records_per_page == 0 {
            return Err(Error::invalid(
                "page size",
                format!("{page} bytes holds no {record_bytes}-byte scan record"),
            ));
        }
        let records = ds.len() as u64;
        let data_pages = records.div_ceil(records_per_page as u64);
        if data_pages > device.capacity_pages() {
            return Err(Error::invalid(
                "scan",
                format!(
                    "{records} records need {data_pages} pages; the device has {}",
                    device.capacity_pages()
                ),
            ));
        }
        let request_pages = request_bytes / page;
        let mut buf = vec![0u8; request_pages * page];
        let mut next = 0usize;
        let mut first = 0u64;
        while first < data_pages {
            let n = (request_pages as u64).min(data_pages - first) as usize;
            let chunk = &mut buf[..n * page];
            chunk.fill(0);
            for p in 0..n {
                let bytes = &mut chunk[p * page..(p + 1) * page];
                for slot in 0..records_per_page {
                    if next == ds.len() {
                        break;
                    }
                    let (id, lo, hi) = object_box(ds, next);
                    let mut at = slot * record_bytes;
                    bytes[at..at + 8].copy_from_slice(&id.to_le_bytes());
                    at += 8;
                    let coords = lo.iter().chain(if points { [].iter() } else { hi.iter() });
                    for c in coords {
                        bytes[at..at + 8].copy_from_slice(&c.to_le_bytes());
                        at += 8;
                    }
                    next += 1;
                }
            }
            device.write(first, chunk)?;
            first += n as u64;
        }
        device.sync()?;
        Ok(ScanTable {
            device,
            points,
            record_bytes,
            records_per_page,
            records,
            data_pages,
            request_pages,
            host,
        })
    }

    /// The device holding the records.
    pub(crate) fn device(&self) -> &dyn Device {
        self.device.as_ref()
    }

    /// Takes the device back (to replay the scan's requests on it).
    pub(crate) fn into_device(self) -> Box<dyn Device> {
        self.device
    }

    #[cfg(test)]
    /// Pages the records occupy.
    pub(crate) fn data_pages(&self) -> u64 {
        self.data_pages
    }

    /// Forgets the device's caches (between measured repetitions).
    pub(crate) fn drop_caches(&mut self) -> Result<()> {
        self.device.drop_caches()
    }

    /// Reads every record in order, in requests of the configured size, handing each
    /// (id, box) to `visit`.
    fn for_each(&mut self, mut visit: impl FnMut(u64, &Rect<D>)) -> Result<()> {
        let page = self.device.page_size();
        let mut buf = vec![0u8; self.request_pages * page];
        let mut seen = 0u64;
        let mut first = 0u64;
        let mut r = Rect::point([0.0; D]);
        let coord = |b: &[u8], i: usize| f64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        while first < self.data_pages {
            let n = (self.request_pages as u64).min(self.data_pages - first) as usize;
            let chunk = &mut buf[..n * page];
            self.device.read(first, chunk)?;
            for p in 0..n {
                let bytes = &chunk[p * page..(p + 1) * page];
                for slot in 0..self.records_per_page {
                    if seen == self.records {
                        break;
                    }
                    let at = slot * self.record_bytes;
                    let id = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
                    for d in 0..D {
                        r.min[d] = coord(bytes, at + 8 + 8 * d);
                        r.max[d] = if self.points {
                            r.min[d]
                        } else {
                            coord(bytes, at + 8 + 8 * (D + d))
                        };
                    }
                    visit(id, &r);
                    seen += 1;
                }
            }
            first += n as u64;
        }
        Ok(())
    }

    /// The `k` records nearest to `point` by box distance (ties by id), as
    /// [`SpatialIndex::nearest`](crate::spatial::SpatialIndex::nearest) answers without
    /// refinement; the whole table is read.
    pub(crate) fn nearest(&mut self, point: [f64; D], k: usize) -> Result<QueryReport> {
        if k == 0 {
            return Err(Error::invalid("k", "must be at least 1"));
        }
        let clock = PhaseClock::start(self.device.as_ref(), HostOps::default(), self.host.as_ref());
        // Max-heap of the best k so far by (distance, id).
        let mut best: BinaryHeap<(Distance, u64)> = BinaryHeap::with_capacity(k + 1);
        self.for_each(|id, r| {
            let d = r.min_dist(&point);
            if best.len() < k {
                best.push((d, id));
            } else if (d, id) < *best.peek().expect("k > 0") {
                best.pop();
                best.push((d, id));
            }
        })?;
        // One operation that tests every record and answers k.
        let ops = HostOps {
            operations: 1,
            entries_read: self.records,
            candidates: self.records,
            results: best.len() as u64,
            ..HostOps::default()
        };
        let filter = clock.stop(self.device.as_ref(), ops);
        let found = best.into_sorted_vec();
        Ok(QueryReport {
            candidates: self.records,
            results: found.len() as u64,
            ids: found.iter().map(|c| c.1).collect(),
            distances: found.iter().map(|c| c.0.get()).collect(),
            filter,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::generate::{generate, Distribution, GenerateOptions};
    use crate::device::hdd::{HddConfig, SimHdd};
    use crate::device::memory::{MemoryConfig, MemoryDevice};

    /// Brute force: every object's box distance, sorted by (distance, id).
    fn brute<const D: usize>(ds: &Dataset, p: [f64; D], k: usize) -> Vec<(f64, u64)> {
        let mut all: Vec<(f64, u64)> = (0..ds.len())
            .map(|i| {
                let (id, r) = ds.object::<D>(i).unwrap();
                (r.min_dist2(&p).sqrt(), id)
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        all.truncate(k);
        all
    }

    fn vectors(n: u64, dims: usize, seed: u64) -> Dataset {
        let mut o = GenerateOptions::new(Distribution::Uniform, n);
        o.dims = dims;
        o.seed = seed;
        o.vectors = true;
        generate(&o).unwrap()
    }

    #[test]
    fn scan_answers_equal_brute_force_for_vectors_and_boxes() {
        let mem = || Box::new(MemoryDevice::open(&MemoryConfig::default(), 4096, None).unwrap());
        let ds = vectors(3000, 5, 3);
        let mut t =
            ScanTable::<5>::create(mem(), &ds, 3 * 4096, Some(HostProfile::default())).unwrap();
        for (q, k) in [
            ([0.5; 5], 1),
            ([0.1, 0.9, 0.3, 0.7, 0.2], 10),
            ([2.0; 5], 40),
        ] {
            let rep = t.nearest(q, k).unwrap();
            let want = brute::<5>(&ds, q, k);
            assert_eq!(rep.ids, want.iter().map(|w| w.1).collect::<Vec<_>>());
            assert_eq!(rep.distances, want.iter().map(|w| w.0).collect::<Vec<_>>());
            assert_eq!(rep.candidates, 3000);
        }
        // Boxes (2-D rectangles), with ties: the same object twice at the same distance.
        let boxes = generate(&GenerateOptions::new(Distribution::Uniform, 2000)).unwrap();
        let mut t =
            ScanTable::<2>::create(mem(), &boxes, 4096, Some(HostProfile::default())).unwrap();
        let q = [0.3, 0.6];
        let rep = t.nearest(q, 25).unwrap();
        let want = brute::<2>(&boxes, q, 25);
        assert_eq!(rep.ids, want.iter().map(|w| w.1).collect::<Vec<_>>());
    }

    #[test]
    fn ties_are_broken_by_id() {
        // Ten identical vectors: the k nearest are the k smallest ids.
        let ds = Dataset::Vectors(crate::data::Vectors::new(2, vec![1.0; 20]).unwrap());
        let mem = Box::new(MemoryDevice::open(&MemoryConfig::default(), 512, None).unwrap());
        let mut t = ScanTable::<2>::create(mem, &ds, 512, Some(HostProfile::default())).unwrap();
        assert_eq!(t.nearest([0.0, 0.0], 3).unwrap().ids, vec![0, 1, 2]);
    }

    #[test]
    fn reads_in_requests_of_the_configured_size_and_counts_them() {
        let ds = vectors(10_000, 10, 1);
        // 88-byte records, 46 per 4 KB page: 218 pages; 16-page requests: 14 reads.
        let hdd = |p| Box::new(SimHdd::open(&HddConfig::desktop_7200(), p, None).unwrap());
        let mut t =
            ScanTable::<10>::create(hdd(4096), &ds, 16 * 4096, Some(HostProfile::default()))
                .unwrap();
        assert_eq!(t.data_pages(), 218);
        let rep = t.nearest([0.5; 10], 10).unwrap();
        assert_eq!(rep.filter.device.host.read_ops, 14);
        assert_eq!(rep.filter.device.host.pages_read, 218);
        assert!(rep.filter.device_s > 0.0);
        // Larger requests: fewer reads, less device time on a disk.
        let mut big =
            ScanTable::<10>::create(hdd(4096), &ds, 128 * 4096, Some(HostProfile::default()))
                .unwrap();
        let rep2 = big.nearest([0.5; 10], 10).unwrap();
        assert_eq!(rep2.filter.device.host.read_ops, 2);
        assert_eq!(rep.ids, rep2.ids);
    }

    #[test]
    fn bad_request_sizes_and_dimensions_are_refused() {
        let ds = vectors(10, 3, 1);
        let mem = || Box::new(MemoryDevice::open(&MemoryConfig::default(), 4096, None).unwrap());
        let e = ScanTable::<3>::create(mem(), &ds, 5000, Some(HostProfile::default()))
            .err()
            .unwrap();
        assert!(e.to_string().contains("multiple of the 4096-byte"), "{e}");
        let e = ScanTable::<3>::create(mem(), &ds, 0, Some(HostProfile::default()))
            .err()
            .unwrap();
        assert!(e.to_string().contains("scan request"), "{e}");
        let e = ScanTable::<4>::create(mem(), &ds, 4096, Some(HostProfile::default()))
            .err()
            .unwrap();
        assert!(e.to_string().contains("3 dimensions"), "{e}");
    }
}
