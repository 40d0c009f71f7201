//! What an index directory remembers of the dataset it was built from: the file and format,
//! its CRS, its extent, and each object's source id when the build gave objects new ids
//! (`--renumber`, `--explode`). `spidx build` saves it; `spidx query` uses it to refuse a
//! query in another CRS, to warn about a window outside the data, and to report the
//! source ids of its answers.
//!
//! Two files beside the index's own (the index layer never reads them):
//! - `dataset.json`: a [`DatasetSource`];
//! - `source_ids.bin`, only when ids were changed: a header (`SPIDXSRC`, format version
//!   u32, entry count u64) and then one fixed-size entry per object, sorted by object id:
//!   object id u64, source id u64, part u32 (`u32::MAX`: none), little-endian. A lookup is a
//!   binary search reading a few entries, so a query never loads the whole table.
//!
//! An index made before these files existed simply has none: it opens as before, with no
//! CRS, no extent and its object ids as source ids.

use super::{Crs, Dataset, Extent, Loaded, SourceId};
use crate::device::files::write_atomically;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The dataset description file in an index directory.
pub const DATASET_FILE: &str = "dataset.json";
/// The source-id table in an index directory.
pub const SOURCE_IDS_FILE: &str = "source_ids.bin";
const MAGIC: &[u8; 8] = b"SPIDXSRC";
const VERSION: u32 = 1;
const HEADER: u64 = 20;
const ENTRY: u64 = 20;

/// What an index keeps of its dataset (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSource {
    /// The dataset file as given to the build.
    pub path: String,
    /// Its format name.
    pub format: String,
    /// Its CRS, when the file names one (or one was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crs: Option<Crs>,
    /// The extent of the objects built into the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extent: Option<Extent>,
    /// Objects built into the index.
    pub count: u64,
    /// Whether the objects got new ids (then `source_ids.bin` maps them back).
    pub renumbered: bool,
}

impl DatasetSource {
    /// The description of `loaded`, read from `path`.
    pub fn of(path: &Path, loaded: &Loaded) -> DatasetSource {
        let renumbered = loaded
            .dataset
            .as_geo()
            .is_some_and(|r| r.iter().any(|r| r.source.is_some()));
        DatasetSource {
            path: path.display().to_string(),
            format: loaded.report.format.clone(),
            crs: loaded.report.crs.clone(),
            extent: loaded.dataset.extent(),
            count: loaded.dataset.len() as u64,
            renumbered,
        }
    }

    /// Saves the description and, when ids were changed, the source-id table of `dataset`
    /// into the index directory `dir` (each written atomically: a temporary file synced and renamed into place).
    pub fn save(&self, dir: &Path, dataset: &Dataset) -> Result<()> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::invalid("dataset description", e.to_string()))?;
        write_atomically(&dir.join(DATASET_FILE), &json)?;
        let Some(recs) = dataset.as_geo().filter(|_| self.renumbered) else {
            return Ok(());
        };
        let mut entries: Vec<(u64, SourceId)> =
            recs.iter().map(|r| (r.id, r.source_id())).collect();
        entries.sort_unstable_by_key(|e| e.0);
        let mut bytes = Vec::with_capacity((HEADER + ENTRY * entries.len() as u64) as usize);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for (id, s) in entries {
            bytes.extend_from_slice(&id.to_le_bytes());
            bytes.extend_from_slice(&s.id.to_le_bytes());
            bytes.extend_from_slice(&s.part.unwrap_or(u32::MAX).to_le_bytes());
        }
        write_atomically(&dir.join(SOURCE_IDS_FILE), &bytes)
    }

    /// The description saved in the index directory `dir`, or `None` for an index built
    /// without one.
    pub fn load(dir: &Path) -> Result<Option<DatasetSource>> {
        let path = dir.join(DATASET_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::corrupted(path.display().to_string(), e.to_string()))
    }
}

/// Looks up the source ids of objects in an index directory (see the module documentation).
pub struct SourceIds {
    table: Option<(std::fs::File, u64, std::path::PathBuf)>,
}

impl SourceIds {
    /// Opens the table of the index directory `dir`; without one (ids were not changed, or
    /// an index made before source ids were kept) every object's id is its source id.
    pub fn open(dir: &Path) -> Result<SourceIds> {
        let path = dir.join(SOURCE_IDS_FILE);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(SourceIds { table: None })
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let bad = |m: String| Error::corrupted(path.display().to_string(), m);
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let mut head = [0u8; HEADER as usize];
        if len < HEADER {
            return Err(bad(format!("{len} bytes are too few for its header")));
        }
        file.read_exact_at(&mut head, 0)
            .map_err(|e| Error::io(&path, e))?;
        let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        let count = u64::from_le_bytes(head[12..20].try_into().expect("8 bytes"));
        if &head[..8] != MAGIC || version != VERSION {
            return Err(bad(format!(
                "not a source-id table of format {VERSION} (magic {:?}, version {version})",
                String::from_utf8_lossy(&head[..8])
            )));
        }
        if count.checked_mul(ENTRY).and_then(|b| b.checked_add(HEADER)) != Some(len) {
            return Err(bad(format!(
                "{len} bytes do not hold the {count} entries its header counts"
            )));
        }
        Ok(SourceIds {
            table: Some((file, count, path)),
        })
    }

    /// The source id of object `id`: from the table when there is one (`None` for an object
    /// it does not list, e.g. one inserted after the build), else `id` itself.
    pub fn get(&self, id: u64) -> Result<Option<SourceId>> {
        let Some((file, count, path)) = &self.table else {
            return Ok(Some(SourceId { id, part: None }));
        };
        let (mut lo, mut hi) = (0u64, *count);
        let mut e = [0u8; ENTRY as usize];
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            file.read_exact_at(&mut e, HEADER + mid * ENTRY)
                .map_err(|err| Error::io(path, err))?;
            let obj = u64::from_le_bytes(e[0..8].try_into().expect("8 bytes"));
            match obj.cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let src = u64::from_le_bytes(e[8..16].try_into().expect("8 bytes"));
                    let part = u32::from_le_bytes(e[16..20].try_into().expect("4 bytes"));
                    return Ok(Some(SourceId {
                        id: src,
                        part: (part != u32::MAX).then_some(part),
                    }));
                }
            }
        }
        Ok(None)
    }
}

/// Whether the window `[min, max]` (2 or more dimensions) misses `extent` entirely.
pub fn outside(extent: &Extent, min: &[f64], max: &[f64]) -> bool {
    extent
        .min
        .iter()
        .zip(&extent.max)
        .zip(min.iter().zip(max))
        .any(|((lo, hi), (a, b))| b < lo || a > hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{GeoRecord, ImportReport};
    use geo_types::{Geometry, Point};

    #[test]
    fn saves_and_looks_up_source_ids() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DatasetSource::load(dir.path()).unwrap().is_none());
        let ids = SourceIds::open(dir.path()).unwrap();
        assert_eq!(ids.get(42).unwrap(), Some(SourceId { id: 42, part: None }));

        let recs: Vec<GeoRecord> = (0..50u64)
            .map(|i| {
                let mut r = GeoRecord::new(i, Geometry::Point(Point::new(i as f64, 1.0))).unwrap();
                r.source = Some(SourceId {
                    id: 1000 + i / 3,
                    part: Some((i % 3) as u32),
                });
                r
            })
            .rev()
            .collect();
        let mut report = ImportReport::new("x.csv", "csv");
        report.crs = Some(Crs::code("EPSG", 3857));
        let loaded = Loaded {
            dataset: Dataset::Geo(recs),
            report,
        };
        let src = DatasetSource::of(Path::new("x.csv"), &loaded);
        assert!(src.renumbered);
        src.save(dir.path(), &loaded.dataset).unwrap();
        let back = DatasetSource::load(dir.path()).unwrap().unwrap();
        assert_eq!(back, src);
        assert_eq!(back.extent.as_ref().unwrap().max, vec![49.0, 1.0]);
        let ids = SourceIds::open(dir.path()).unwrap();
        for i in 0..50u64 {
            let s = ids.get(i).unwrap().unwrap();
            assert_eq!((s.id, s.part), (1000 + i / 3, Some((i % 3) as u32)));
        }
        assert_eq!(ids.get(50).unwrap(), None);
        // A damaged table is an error naming it, not a wrong answer.
        let p = dir.path().join(SOURCE_IDS_FILE);
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 1]).unwrap();
        let e = SourceIds::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains(SOURCE_IDS_FILE), "{e}");
    }

    #[test]
    fn window_outside_an_extent() {
        let e = Extent {
            min: vec![0.0, 0.0],
            max: vec![10.0, 10.0],
        };
        assert!(!outside(&e, &[5.0, 5.0], &[20.0, 20.0]));
        assert!(!outside(&e, &[10.0, 10.0], &[20.0, 20.0]));
        assert!(outside(&e, &[11.0, 0.0], &[20.0, 5.0]));
        assert!(outside(&e, &[-5.0, -5.0], &[-1.0, 5.0]));
    }
}
