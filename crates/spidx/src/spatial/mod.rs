//! A spatial index as users see it (architecture §2 and §7): one directory holding a
//! tree, its node pages, the objects' exact geometries and the device state, reopenable by
//! another process.
//!
//! Files of an index directory:
//! * `index.json` — the manifest: every option the index was built with, the device
//!   description and the spidx version;
//! * `store.json` — the node store's header (root, height, page allocation);
//! * `objects.dir` — the object store's directory (2-D geometry indices);
//! * `device.state` — the simulated device's state (data, mapping, wear, clock); a `file:`
//!   device keeps its pages in its own file.
//!
//! The device is split in two partitions: node pages in the first half, object records in
//! the second, so filter and refinement I/O land on the same device model.

pub mod check;
pub mod measure;
pub mod query;
mod update;

use std::path::{Path, PathBuf};

use geo::Geometry;
use serde::{Deserialize, Serialize};

use crate::cache::CacheConfig;
use crate::device::partition::Partition;
use crate::device::{Device, DeviceConfig};
use crate::geom::Rect;
use crate::index::bulk::{BulkOptions, BulkReport};
use crate::index::{IndexKind, Tree};
use crate::node::{Capacity, LayoutKind, Occupancy};
use crate::objects::ObjectStore;
use crate::store::direct::write_atomically;
use crate::store::{AnyStore, StoreConfig};
use crate::{Error, Result};

pub use check::{CheckDepth, ObjectCheck};
pub use measure::{PhaseClock, PhaseReport};

const MANIFEST: &str = "index.json";
const OBJECTS: &str = "objects.dir";
const DEVICE_STATE: &str = "device.state";
const FORMAT: u32 = 1;

/// Everything that defines an index, as chosen by the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexOptions {
    /// Tree algorithm and its options.
    pub kind: IndexKind,
    /// Node page size in bytes.
    pub page_size: usize,
    /// Node page layout.
    pub layout: LayoutKind,
    /// Occupancy of leaves and internal nodes.
    pub occupancy: Occupancy,
    /// Page buffer between the node store and the device.
    pub buffer: CacheConfig,
    /// Node store (direct, or a flash-aware store) and its options.
    #[serde(default)]
    pub store: StoreConfig,
    /// The device's display name (preset name, file, ...).
    pub device_name: String,
    /// The device.
    pub device: DeviceConfig,
}

/// The manifest saved as `index.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Manifest format version.
    pub format: u32,
    /// spidx version that created the index.
    pub spidx_version: String,
    /// Dimensions of the indexed boxes.
    pub dims: usize,
    /// Whether exact geometries are stored (2-D geometry data).
    pub objects: bool,
    /// Pages of the device's node partition.
    pub node_pages: u64,
    /// Capacities derived from the options.
    pub capacity: Capacity,
    /// The options.
    pub options: IndexOptions,
}

/// An open index directory. See the module documentation.
pub struct SpatialIndex<const D: usize> {
    dir: PathBuf,
    manifest: Manifest,
    tree: Tree<AnyStore, D>,
    objects: Option<ObjectStore>,
}

/// Reads the manifest of the index in `dir` (to learn its dimensions before opening it).
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    if !dir.is_dir() {
        return Err(Error::invalid(
            "index directory",
            format!("{} does not exist or is not a directory", dir.display()),
        ));
    }
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| {
        Error::corrupted(format!("index manifest {}", path.display()), e.to_string())
    })?;
    if m.format != FORMAT {
        return Err(Error::corrupted(
            format!("index manifest {}", path.display()),
            format!("format {} is not {FORMAT}", m.format),
        ));
    }
    Ok(m)
}

/// Refuses a write-back page buffer under FAST or eFIND: those stores write nodes only as
/// flushing units, and a unit always reaches the device at once (its log relies on it, see
/// [`PageCache::write_run`](crate::cache::PageCache::write_run)), so no page would ever be
/// held dirty and the run would be labelled write-back while behaving as write-through.
pub fn check_buffer_with_store(buffer: &CacheConfig, store: &StoreConfig) -> Result<()> {
    if buffer.is_write_back() && !matches!(store, StoreConfig::Direct) {
        return Err(Error::invalid(
            "buffer",
            format!(
                "a write-back page buffer ({buffer}) has no effect under the {} store: it writes nodes only as flushing units, which always reach the device at once; use a write-through buffer (drop ':write-back') or the direct store",
                store.label()
            ),
        ));
    }
    Ok(())
}

fn state_path(dir: &Path, config: &DeviceConfig) -> Option<PathBuf> {
    config.is_simulated().then(|| dir.join(DEVICE_STATE))
}

impl<const D: usize> SpatialIndex<D> {
    /// Creates a new, empty index in `dir` (which must not exist or be empty).
    pub fn create(dir: &Path, mut options: IndexOptions, objects: bool) -> Result<Self> {
        options.device.absolutize_paths()?;
        if objects && D != 2 {
            return Err(Error::invalid(
                "index",
                "exact geometries are stored for 2-D data only",
            ));
        }
        let layout = options.kind.layout(options.layout, options.page_size, D)?;
        let capacity = Capacity::new(&layout, &options.occupancy)?;
        options.kind.validate(&capacity)?;
        options.buffer.capacity_pages(options.page_size)?;
        options.store.validate(options.page_size)?;
        check_buffer_with_store(&options.buffer, &options.store)?;
        options.device.validate()?;
        if dir.exists() {
            let mut entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
            if entries.next().is_some() {
                return Err(Error::invalid(
                    "output directory",
                    format!(
                        "{} exists and is not empty; choose a new directory",
                        dir.display()
                    ),
                ));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let device = options.device.open(
            options.page_size,
            state_path(dir, &options.device).as_deref(),
        )?;
        let total = device.capacity_pages();
        let node_pages = if objects { total / 2 } else { total };
        let (node_dev, obj_dev) = split(device, node_pages, objects)?;
        let store = options
            .store
            .create(node_dev, &options.buffer, layout, Some(dir))?;
        let tree = Tree::create(store, capacity, options.kind)?;
        let objects = obj_dev.map(|d| ObjectStore::create(d, Some(&dir.join(OBJECTS))));
        let manifest = Manifest {
            format: FORMAT,
            spidx_version: env!("CARGO_PKG_VERSION").to_string(),
            dims: D,
            objects: objects.is_some(),
            node_pages,
            capacity,
            options,
        };
        let mut idx = SpatialIndex {
            dir: dir.to_path_buf(),
            manifest,
            tree,
            objects,
        };
        idx.save_manifest()?;
        Ok(idx)
    }

    /// Opens the index in `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        let manifest = read_manifest(dir)?;
        if manifest.dims != D {
            return Err(Error::invalid(
                "index",
                format!(
                    "{} holds {}-dimensional data, not {D}",
                    dir.display(),
                    manifest.dims
                ),
            ));
        }
        let o = &manifest.options;
        let layout = o.kind.layout(o.layout, o.page_size, D)?;
        let state = state_path(dir, &o.device);
        if let Some(s) = &state {
            if !s.exists() {
                return Err(Error::corrupted(
                    format!("index {}", dir.display()),
                    "the device state file device.state is missing",
                ));
            }
        }
        let device = o.device.open(o.page_size, state.as_deref())?;
        let (node_dev, obj_dev) = split(device, manifest.node_pages, manifest.objects)?;
        let store = o.store.open(node_dev, &o.buffer, layout, dir)?;
        let tree = Tree::open(store, manifest.capacity, o.kind)?;
        let objects = match obj_dev {
            Some(d) => Some(ObjectStore::open(d, &dir.join(OBJECTS))?),
            None => None,
        };
        Ok(SpatialIndex {
            dir: dir.to_path_buf(),
            manifest,
            tree,
            objects,
        })
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The tree.
    pub fn tree(&self) -> &Tree<AnyStore, D> {
        &self.tree
    }

    /// The tree, mutably (inserts, deletes, checks).
    pub fn tree_mut(&mut self) -> &mut Tree<AnyStore, D> {
        &mut self.tree
    }

    /// The object store, if the index keeps geometries.
    pub fn objects(&self) -> Option<&ObjectStore> {
        self.objects.as_ref()
    }

    /// The device (shared by nodes and objects; its statistics cover both).
    pub fn device(&self) -> &dyn Device {
        self.tree.store().device()
    }

    /// Whether the device is simulated.
    pub fn simulated(&self) -> bool {
        self.manifest.options.device.is_simulated()
    }

    /// Starts measuring a phase on this index's device.
    pub fn phase(&self) -> PhaseClock {
        PhaseClock::start(self.device(), self.simulated())
    }

    /// Stores the exact geometry of object `id` (2-D indices with objects).
    pub fn put_object(&mut self, id: u64, geometry: &Geometry<f64>) -> Result<()> {
        let store = self
            .objects
            .as_mut()
            .ok_or_else(|| Error::invalid("index", "this index keeps no geometries"))?;
        store.put(id, &query::encode(geometry)?)
    }

    /// Inserts object `id` with bounding box `mbr` into the tree.
    pub fn insert(&mut self, mbr: Rect<D>, id: u64) -> Result<()> {
        self.tree.insert(mbr, id)
    }

    /// Builds the (empty) tree over `objects` by a bulk-loading algorithm (see
    /// [`crate::index::bulk`]); nodes are written level by level, in page order.
    pub fn bulk_load(
        &mut self,
        objects: Vec<(Rect<D>, u64)>,
        opts: &BulkOptions,
    ) -> Result<BulkReport> {
        self.tree.bulk_load(objects, opts)
    }

    /// Empties page buffers and device caches (between query repetitions).
    pub fn drop_caches(&mut self) -> Result<()> {
        self.tree.store_mut().drop_caches()
    }

    /// Writes every change a store still buffers to the device (end of a workload).
    pub fn write_back(&mut self) -> Result<()> {
        self.tree.store_mut().write_back()
    }

    /// Makes everything durable: node store, objects, device state, manifest.
    pub fn flush(&mut self) -> Result<()> {
        if let Some(o) = &mut self.objects {
            o.flush()?;
        }
        crate::store::NodeStore::<D>::flush(self.tree.store_mut())?;
        self.save_manifest()
    }

    fn save_manifest(&mut self) -> Result<()> {
        let json = serde_json::to_vec_pretty(&self.manifest)
            .map_err(|e| Error::invalid("manifest", e.to_string()))?;
        write_atomically(&self.dir.join(MANIFEST), &json)
    }
}

/// The node store's device and, for indices that keep geometries, the object store's.
type Devices = (Box<dyn Device>, Option<Box<dyn Device>>);

fn split(device: Box<dyn Device>, node_pages: u64, objects: bool) -> Result<Devices> {
    if !objects {
        return Ok((device, None));
    }
    let (a, b) = Partition::split(device, node_pages)?;
    Ok((Box::new(a), Some(Box::new(b))))
}

/// Dimensions an index can have (each is a separate compiled instance of the trees).
pub const SUPPORTED_DIMS: [usize; 12] = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32];

/// Runs `$body` with a constant `$D` equal to the runtime dimension `$dims`, which must
/// be one of [`SUPPORTED_DIMS`]; otherwise evaluates to an error (converted with `.into()`).
#[macro_export]
macro_rules! with_dims {
    ($dims:expr, $D:ident => $body:expr) => {{
        macro_rules! arm {
            ($n:literal) => {{
                const $D: usize = $n;
                $body
            }};
        }
        match $dims {
            2 => arm!(2),
            3 => arm!(3),
            4 => arm!(4),
            5 => arm!(5),
            6 => arm!(6),
            8 => arm!(8),
            10 => arm!(10),
            12 => arm!(12),
            16 => arm!(16),
            20 => arm!(20),
            24 => arm!(24),
            32 => arm!(32),
            d => Err($crate::Error::invalid(
                "dimensions",
                format!(
                    "{d} is not supported; supported: {:?}",
                    $crate::spatial::SUPPORTED_DIMS
                ),
            )
            .into()),
        }
    }};
}
