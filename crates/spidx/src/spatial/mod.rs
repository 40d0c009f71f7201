//! A spatial index as users see it (architecture §2 and §7): one directory holding a
//! tree, its node pages, the objects' exact geometries and the device state, reopenable by
//! another process.
//!
//! Files of an index directory:
//! * `index.json` — the manifest: every option the index was built with, the device
//!   description and the spidx version;
//! * `store.json` — the node store's header (root, height, page allocation);
//! * `objects.dir`, `objects.dir.pages-<n>` — the object store's directory (2-D geometry
//!   indices): a small state file and the pages it names, read on demand (see
//!   [`crate::objects::directory`]);
//! * `device.state` — the simulated device's state (data, mapping, wear, clock); a `file:`
//!   device keeps its pages in its own file;
//! * `log.uncounted`, `log-device.state` — a FAST or eFIND log placed outside the device
//!   (`log_device = "uncounted"`, or a simulated `separate:` device's state; see
//!   [`crate::store::buffered::placement`]).
//!
//! The device is split in two partitions: node pages in the first half, object records in
//! the second, so filter and refinement I/O land on the same device model.
//!
//! Crash safety: every file is created (durably, with the directory synced) before the
//! manifest, so an index whose `index.json` exists can always be reopened. Writers
//! ([`SpatialIndex::create`], [`SpatialIndex::open`]) lock the directory and the device
//! file exclusively and repair what a crash left; readers ([`SpatialIndex::open_read_only`])
//! lock them shared and never write a byte: a recovery they need happens in memory only (see
//! [`owner`] and `docs/stores.md`).

pub(crate) mod check;
pub(crate) mod construct;
pub mod host;
pub(crate) mod measure;
pub(crate) mod owner;
pub mod query;
mod update;

use std::path::{Path, PathBuf};

use geo::Geometry;
use serde::{Deserialize, Serialize};

use crate::cache::CacheConfig;
use crate::device::file::FileAccess;
use crate::device::files::write_atomically;
use crate::device::partition::Partition;
use crate::device::{Device, DeviceConfig};
use crate::geom::Rect;
use crate::index::bulk::{BulkOptions, BulkReport};
use crate::index::{IndexKind, Tree};
use crate::node::{Capacity, LayoutKind, Occupancy};
use crate::objects::ObjectStore;
use crate::store::{AnyStore, NodeStore, StoreConfig, StoreControl, StoreFiles};
use crate::{Error, Result};

pub use check::{CheckDepth, ObjectCheck};
pub use construct::{Construction, ConstructionReport, Step};
pub use host::{HostChoice, HostOps, HostProfile};
pub use measure::{PhaseClock, PhaseReport};

const MANIFEST: &str = "index.json";
const OBJECTS: &str = "objects.dir";
const DEVICE_STATE: &str = "device.state";
/// The manifest format written: 2 = sealed (a `"checksum"` member, strict members; see
/// [`crate::store::header::seal_json`]); 1 = unsealed, written by older versions and
/// refused with a request to rebuild (its content cannot be verified).
const FORMAT: u32 = 2;

/// Everything that defines an index, as chosen by the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// The manifest saved as `index.json`, sealed (format, checksum, strict members; see
/// [`crate::store::header::seal_json`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The UUID claiming a `file:` device (also in `<device file>.owner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_uuid: Option<String>,
    /// The UUID claiming a separate log device's file (`log_device = "separate:file:…"`;
    /// also in `<log file>.owner`), claimed and checked as the device file is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_device_uuid: Option<String>,
}

/// The file of the separate `file:` log device of `o`'s store, if it has one.
fn log_file(o: &IndexOptions) -> Option<&Path> {
    match o.store.log_placement()? {
        crate::store::buffered::placement::LogPlacement::Separate { config, .. } => {
            config.file_path()
        }
        _ => None,
    }
}

/// How an index is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// To change or recover it: exclusive locks; a crash's leftovers are repaired on disk.
    Write,
    /// To read it (`check`, `query`): shared locks, no file written or created; what a
    /// recovery would do happens in memory only.
    ReadOnly,
}

/// An open index directory. See the module documentation.
pub struct SpatialIndex<const D: usize> {
    dir: PathBuf,
    manifest: Manifest,
    tree: Tree<AnyStore, D>,
    objects: Option<ObjectStore>,
    /// Whether the device keeps writes across a crash of the process (`file:`).
    persistent: bool,
    mode: OpenMode,
    /// The host profile that prices a phase on a simulated device (see [`host`]).
    host: HostProfile,
    /// The host's counts this layer keeps: operations, candidates, records, results (the
    /// tree and the devices count the rest).
    tally: HostOps,
    /// The directory lock, held while the index is open.
    _lock: std::fs::File,
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
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(no_manifest(dir, &path));
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    parse_manifest(&bytes, &path)
}

/// Why a directory without `index.json` is not an index: empty, or a build killed before
/// its manifest was written (nothing in it was ever acknowledged).
fn no_manifest(dir: &Path, path: &Path) -> Error {
    let empty = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none());
    if empty {
        return Error::invalid(
            "index directory",
            format!("{} is empty: it holds no index", dir.display()),
        );
    }
    Error::corrupted(
        format!("index {}", dir.display()),
        format!(
            "its manifest {} is missing: the build that created it was interrupted before \
             the index existed (nothing in it was acknowledged). Delete the directory and \
             build again",
            path.display()
        ),
    )
}

/// Parses the bytes of an `index.json` (`path` names it in errors): checksum, format and
/// strict members are checked.
pub fn parse_manifest(bytes: &[u8], path: &Path) -> Result<Manifest> {
    let what = || format!("index manifest {}", path.display());
    // Format 1 manifests had no checksum: say so rather than "no checksum".
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_slice(bytes) {
        if !m.contains_key("checksum") && m.get("format").and_then(|f| f.as_u64()) == Some(1) {
            return Err(Error::corrupted(
                what(),
                "format 1 (written by an older spidx, without a checksum) cannot be verified; \
                 rebuild the index with this version",
            ));
        }
    }
    let v = crate::store::header::unseal_json(bytes, &what())?;
    let m: Manifest =
        serde_json::from_value(v).map_err(|e| Error::corrupted(what(), e.to_string()))?;
    if m.format != FORMAT {
        return Err(Error::corrupted(
            what(),
            format!("format {} is not {FORMAT}", m.format),
        ));
    }
    Ok(m)
}

/// Refuses a write-back page buffer under FAST or eFIND: those stores write nodes only as
/// flushing units, and a unit always reaches the device at once (its log relies on it, see
/// [`PageCache::write_run`](crate::cache::PageCache::write_run)), so no page would ever be
/// held dirty and the run would be labelled write-back while behaving as write-through.
pub(crate) fn check_buffer_with_store(buffer: &CacheConfig, store: &StoreConfig) -> Result<()> {
    if buffer.is_write_back() && !matches!(store, StoreConfig::Direct { .. }) {
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
    pub fn create(dir: &Path, options: IndexOptions, objects: bool) -> Result<Self> {
        Self::create_wrapped(dir, options, objects, |d| d)
    }

    /// [`SpatialIndex::create`] with the opened device passed through `wrap` first (the
    /// experiment runner puts a [`Tap`](crate::device::tap::Tap) there to record the
    /// requests of queries; the wrapper must forward every call).
    pub(crate) fn create_wrapped(
        dir: &Path,
        mut options: IndexOptions,
        objects: bool,
        wrap: impl FnOnce(Box<dyn Device>) -> Box<dyn Device>,
    ) -> Result<Self> {
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
        options.store.check_device(&options.device)?;
        if dir.exists() {
            let mut entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
            if entries.next().is_some() {
                let why = if dir.join(MANIFEST).exists() {
                    "holds an index"
                } else {
                    "holds the files of a build interrupted before its index existed (no \
                     index.json: nothing in it was acknowledged; delete it to build there)"
                };
                return Err(Error::invalid(
                    "output directory",
                    format!(
                        "{} exists and is not empty ({why}); choose a new directory",
                        dir.display()
                    ),
                ));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let lock = owner::lock_dir(dir, false)?;
        let device = wrap(options.device.open_with(
            options.page_size,
            state_path(dir, &options.device).as_deref(),
            FileAccess::Create,
        )?);
        let needed = if objects { 2 } else { 1 };
        if device.capacity_pages() < needed {
            return Err(Error::invalid(
                "device capacity",
                format!(
                    "the device {} holds {} page(s) of {} bytes; an index{} needs at least {needed}: \
                     give it a capacity of at least {} bytes",
                    options.device_name,
                    device.capacity_pages(),
                    options.page_size,
                    if objects { " with its objects' records" } else { "" },
                    needed * options.page_size as u64
                ),
            ));
        }
        let device_uuid = match options.device.file_path() {
            Some(f) => Some(owner::claim(f, dir)?),
            None => None,
        };
        let persistent = !options.device.is_simulated();
        let total = device.capacity_pages();
        let node_pages = if objects { total / 2 } else { total };
        let (node_dev, obj_dev) = split(device, node_pages, objects)?;
        let files = StoreFiles {
            dir: Some(dir),
            persistent_device: persistent,
            read_only: false,
            accept_loss: false,
        };
        let mut store = options
            .store
            .create_in(node_dev, &options.buffer, layout, files)?;
        // The store opened (created) its log device's file: claimed as the device file is.
        let log_device_uuid = match log_file(&options) {
            Some(f) => Some(owner::claim(f, dir)?),
            None => None,
        };
        // Every file exists before the manifest does: a crash from here on leaves an index
        // that reopens (empty until its first checkpoint or logged operation).
        store.save_header()?;
        store.persist_device()?;
        let mut objects = obj_dev.map(|d| ObjectStore::create(d, Some(&dir.join(OBJECTS))));
        if let Some(o) = &mut objects {
            o.save_directory()?;
        }
        let manifest = Manifest {
            format: FORMAT,
            spidx_version: env!("CARGO_PKG_VERSION").to_string(),
            dims: D,
            objects: objects.is_some(),
            node_pages,
            capacity,
            options,
            device_uuid,
            log_device_uuid,
        };
        save_manifest(dir, &manifest)?;
        let tree = Tree::create(store, capacity, manifest.options.kind)?;
        Ok(SpatialIndex {
            dir: dir.to_path_buf(),
            manifest,
            tree,
            objects,
            persistent,
            mode: OpenMode::Write,
            host: HostProfile::default(),
            tally: HostOps::default(),
            _lock: lock,
        })
    }

    /// Opens the index in `dir` to change or recover it (see [`OpenMode::Write`]).
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_with(dir, OpenMode::Write)
    }

    /// Opens the index in `dir` to read it, never writing a file (see
    /// [`OpenMode::ReadOnly`]).
    pub fn open_read_only(dir: &Path) -> Result<Self> {
        Self::open_with(dir, OpenMode::ReadOnly)
    }

    /// Opens the index in `dir` as `mode` says.
    pub fn open_with(dir: &Path, mode: OpenMode) -> Result<Self> {
        Self::open_wrapped(dir, mode, |d| d)
    }

    /// [`SpatialIndex::open_with`] with the opened device passed through `wrap` first (the
    /// experiment runner puts a page cache shared by several read-only handles there, see
    /// [`crate::experiment`]; the wrapper must forward every call it does not serve).
    pub(crate) fn open_wrapped(
        dir: &Path,
        mode: OpenMode,
        wrap: impl FnOnce(Box<dyn Device>) -> Box<dyn Device>,
    ) -> Result<Self> {
        Self::open_inner(dir, mode, false, wrap)
    }

    /// Opens the index in `dir` to recover it ([`OpenMode::Write`]) keeping what precedes
    /// the damage of a log or journal damaged in its middle, instead of failing (`spidx
    /// recover --accept-loss`); [`SpatialIndex::recovery_state`] says what was lost.
    pub fn open_accepting_loss(dir: &Path) -> Result<Self> {
        Self::open_inner(dir, OpenMode::Write, true, |d| d)
    }

    fn open_inner(
        dir: &Path,
        mode: OpenMode,
        accept_loss: bool,
        wrap: impl FnOnce(Box<dyn Device>) -> Box<dyn Device>,
    ) -> Result<Self> {
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
        let read_only = mode == OpenMode::ReadOnly;
        let lock = owner::lock_dir(dir, read_only)?;
        let interrupted = checkpoint_interrupted(dir);
        undo_interrupted_checkpoint(dir, &manifest, mode)?;
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
        let access = if read_only {
            FileAccess::Read
        } else {
            FileAccess::Write
        };
        let device = wrap(o.device.open_with(o.page_size, state.as_deref(), access)?);
        if let (Some(f), Some(uuid)) = (o.device.file_path(), &manifest.device_uuid) {
            owner::verify(f, uuid, dir)?;
        }
        // Before the store opens (and may replay into) it.
        if let (Some(f), Some(uuid)) = (log_file(o), &manifest.log_device_uuid) {
            owner::verify(f, uuid, dir)?;
        }
        let persistent = !o.device.is_simulated();
        let (node_dev, obj_dev) = split(device, manifest.node_pages, manifest.objects)?;
        let files = StoreFiles {
            dir: Some(dir),
            persistent_device: persistent,
            read_only,
            accept_loss,
        };
        let store = o.store.open_in(node_dev, &o.buffer, layout, files)?;
        // A store that has no tree yet was killed before its first checkpoint or logged
        // operation: it reopens as the empty index it was created as.
        let tree = if NodeStore::<D>::meta(&store).is_none() {
            Tree::create(store, manifest.capacity, o.kind)?
        } else {
            Tree::open(store, manifest.capacity, o.kind)?
        };
        // Objects appended after the last checkpoint are found again by scanning the record
        // area past it: they belong to durable operations when the store makes operations
        // durable between checkpoints (a log, or a direct store syncing), and to the tree a
        // checkpoint interrupted after the node store's seal left (a journaled direct
        // store's new header stays; the object directory put back is the older one).
        // Records no tree entry names are dropped by `spidx recover`.
        let scan_tail = interrupted
            || !matches!(
                o.store,
                StoreConfig::Direct {
                    log_sync: crate::store::log::LogSync::None,
                    ..
                }
            );
        let objects = match obj_dev {
            Some(d) => Some(ObjectStore::open(d, &dir.join(OBJECTS), scan_tail)?),
            None => None,
        };
        Ok(SpatialIndex {
            dir: dir.to_path_buf(),
            manifest,
            tree,
            objects,
            persistent,
            mode,
            host: HostProfile::default(),
            tally: HostOps::default(),
            _lock: lock,
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

    /// The simulated device's state file (`device.state`, written by [`SpatialIndex::flush`]);
    /// `None` on a real device.
    pub(crate) fn device_state(&self) -> Option<PathBuf> {
        state_path(&self.dir, &self.manifest.options.device)
    }

    /// Whether the device is simulated.
    pub fn simulated(&self) -> bool {
        self.manifest.options.device.is_simulated()
    }

    /// The log's own device, when a FAST or eFIND store writes its log to a second device
    /// (measured apart from [`device`](Self::device)).
    pub fn log_device(&self) -> Option<&dyn Device> {
        self.tree.store().log_device()
    }

    /// Starts measuring a phase on this index's device (and its log device, if it has
    /// one); end it with [`stop_phase`](Self::stop_phase).
    pub fn phase(&self) -> PhaseClock {
        let host = self.simulated().then_some(&self.host);
        PhaseClock::start_with_log(self.device(), self.log_device(), self.host_ops(), host)
    }

    /// Ends a phase started with [`phase`](Self::phase).
    pub fn stop_phase(&self, clock: PhaseClock) -> PhaseReport {
        clock.stop_with_log(self.device(), self.log_device(), self.host_ops())
    }

    /// The host profile that prices phases on a simulated device.
    pub fn host_profile(&self) -> &HostProfile {
        &self.host
    }

    /// Sets the host profile (it prices the phases measured from now on).
    pub fn set_host_profile(&mut self, profile: HostProfile) -> Result<()> {
        profile.validate()?;
        self.host = profile;
        Ok(())
    }

    /// What the host has done since the index was opened (device requests are counted by
    /// the devices, per phase).
    pub fn host_ops(&self) -> HostOps {
        let t = self.tree.stats();
        HostOps {
            node_reads: t.reads_per_level.iter().sum(),
            entries_read: t.entries_read,
            node_writes: t.writes_per_level.iter().sum(),
            ..self.tally
        }
    }

    /// Stores the exact geometry of object `id` (2-D indices with objects).
    pub fn put_object(&mut self, id: u64, geometry: &Geometry<f64>) -> Result<()> {
        let store = self
            .objects
            .as_mut()
            .ok_or_else(|| Error::invalid("index", "this index keeps no geometries"))?;
        store.put(id, &query::encode(geometry)?)?;
        self.tally.records += 1;
        Ok(())
    }

    /// Inserts object `id` with bounding box `mbr` into the tree. On a persistent device
    /// the object records stored so far are made durable first (once after a load phase),
    /// so they are as durable as the tree's operation.
    pub fn insert(&mut self, mbr: Rect<D>, id: u64) -> Result<()> {
        self.sync_objects()?;
        self.tally.operations += 1;
        self.tree.insert(mbr, id)
    }

    fn sync_objects(&mut self) -> Result<()> {
        match &mut self.objects {
            Some(o) if self.persistent => o.sync_pending(),
            _ => Ok(()),
        }
    }

    /// How the index was opened.
    pub fn mode(&self) -> OpenMode {
        self.mode
    }

    /// What opening found: whether the index was left by a crash (what needs `spidx
    /// recover`: a journal to roll back, operations logged past the last checkpoint,
    /// object records past it) and any damage accepted by
    /// [`SpatialIndex::open_accepting_loss`]. Read-only commands refuse a crashed index
    /// rather than answer from a recovery made in memory only.
    pub fn recovery_state(&self) -> crate::store::report::RecoveryState {
        let mut state = self.tree.store().recovery_state();
        let records = self.objects.as_ref().map_or(0, |o| o.recovered_records());
        if state.crashed.is_none() && records > 0 {
            state.crashed = Some(format!(
                "its object store holds {records} records written after its last checkpoint"
            ));
        }
        // A checkpoint taken between storing geometries and inserting them (a build's load
        // phase, then its insertions with `--checkpoint-every`) keeps records of objects the
        // tree does not index yet: killed there, the build left them behind.
        let stored = self.objects.as_ref().map_or(0, |o| o.len() as u64);
        let indexed = self.tree.meta().objects;
        if state.crashed.is_none() && stored > indexed {
            state.crashed = Some(format!(
                "its object store holds geometries of {stored} objects but the tree indexes \
                 {indexed}: a build or insertion was interrupted after storing them"
            ));
        }
        state
    }

    /// Forgets object records the tree does not index (a `put_object` whose insert never
    /// completed before a crash); returns their ids. `spidx recover` calls it after the
    /// tree passed its checks.
    pub fn drop_unindexed_objects(&mut self) -> Result<Vec<u64>> {
        let Some(store) = &mut self.objects else {
            return Ok(Vec::new());
        };
        let mut indexed = std::collections::HashSet::new();
        let any = Rect::point([0.0; D]);
        self.tree
            .search(crate::index::MbrPredicate::All, &any, |e| {
                indexed.insert(e.ptr);
            })?;
        let orphans: Vec<u64> = store
            .ids()?
            .into_iter()
            .filter(|id| !indexed.contains(id))
            .collect();
        for id in &orphans {
            store.remove(*id)?;
        }
        Ok(orphans)
    }

    /// Builds the (empty) tree over `objects` by a bulk-loading algorithm (see
    /// [`crate::index::bulk`]); nodes are written level by level, in page order.
    pub fn bulk_load(
        &mut self,
        objects: Vec<(Rect<D>, u64)>,
        opts: &BulkOptions,
    ) -> Result<BulkReport> {
        self.tally.operations += objects.len() as u64;
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

    /// Makes everything durable (a checkpoint): objects, node store, device state,
    /// manifest. An index opened read-only refuses.
    pub fn flush(&mut self) -> Result<()> {
        if self.mode == OpenMode::ReadOnly {
            return Err(Error::invalid(
                "index",
                format!("{} was opened read-only", self.dir.display()),
            ));
        }
        let files = checkpoint_files(&self.dir, &self.manifest);
        let pending = begin_checkpoint(&self.dir, &files)?;
        if let Some(o) = &mut self.objects {
            o.flush()?;
        }
        self.tree.flush()?;
        save_manifest(&self.dir, &self.manifest)?;
        end_checkpoint(&self.dir, &files, pending)
    }
}

/// Marks a checkpoint in progress: its files are replaced one after the other, so until
/// the marker is removed a crash leaves a mix of old and new ones.
const CHECKPOINT_PENDING: &str = "checkpoint.pending";

/// The files a checkpoint replaces (by atomic renames) and an interrupted one puts back.
/// Not the header of a journaled direct store: its journal is emptied right after the new
/// header is saved, so the new header is the one that matches the device from then on.
fn checkpoint_files(dir: &Path, manifest: &Manifest) -> Vec<PathBuf> {
    let o = &manifest.options;
    let journaled =
        matches!(o.store, StoreConfig::Direct { journal: true, .. }) && !o.device.is_simulated();
    let mut v = Vec::new();
    if !journaled {
        v.push(dir.join(crate::store::any::STORE_HEADER));
    }
    if manifest.objects {
        v.push(dir.join(OBJECTS));
    }
    if let Some(s) = state_path(dir, &manifest.options.device) {
        v.push(s);
    }
    // A log with a file of its own that a checkpoint rewrites: an uncounted log on a
    // simulated device (saved whole), a simulated separate log device's state.
    use crate::store::buffered::placement::{LogPlacement, LOG_DEVICE_STATE, UNCOUNTED_LOG_FILE};
    match o.store.log_placement() {
        Some(LogPlacement::Uncounted) if o.device.is_simulated() => {
            v.push(dir.join(UNCOUNTED_LOG_FILE))
        }
        Some(LogPlacement::Separate { config, .. }) if config.is_simulated() => {
            v.push(dir.join(LOG_DEVICE_STATE))
        }
        _ => {}
    }
    v
}

fn backup_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".bak");
    PathBuf::from(s)
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// Keeps the checkpoint's files as they are (hard links, which the renames that replace the
/// files leave pointing at the old contents), then writes the marker. Returns the marker.
fn begin_checkpoint(dir: &Path, files: &[PathBuf]) -> Result<PathBuf> {
    for f in files {
        let bak = backup_of(f);
        match std::fs::remove_file(&bak) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&bak, e)),
        }
        if f.exists() {
            std::fs::hard_link(f, &bak).map_err(|e| Error::io(&bak, e))?;
        }
    }
    let marker = dir.join(CHECKPOINT_PENDING);
    {
        // Never through a link planted at the marker's name.
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&marker)
            .map_err(|e| Error::io(&marker, e))?;
    }
    sync_dir(dir)?;
    Ok(marker)
}

/// The checkpoint is complete: the marker goes first, then the backups.
fn end_checkpoint(dir: &Path, files: &[PathBuf], marker: PathBuf) -> Result<()> {
    std::fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))?;
    sync_dir(dir)?;
    for f in files {
        let _ = std::fs::remove_file(backup_of(f));
    }
    Ok(())
}

/// Whether the last checkpoint of the index in `dir` was interrupted by a crash (its
/// marker is still there): the index is crashed and `spidx recover` puts the previous
/// checkpoint back; read-only opens refuse it.
pub fn checkpoint_interrupted(dir: &Path) -> bool {
    dir.join(CHECKPOINT_PENDING).exists()
}

/// After a crash during a checkpoint (the marker exists), puts the previous checkpoint's
/// files back (writers), or refuses with a clear error (readers never write).
fn undo_interrupted_checkpoint(dir: &Path, manifest: &Manifest, mode: OpenMode) -> Result<()> {
    let marker = dir.join(CHECKPOINT_PENDING);
    if !marker.exists() {
        return Ok(());
    }
    if mode == OpenMode::ReadOnly {
        return Err(Error::corrupted(
            format!("index {}", dir.display()),
            "its last checkpoint was interrupted (checkpoint.pending exists); `spidx recover` \
             restores the checkpoint before it",
        ));
    }
    for f in checkpoint_files(dir, manifest) {
        let bak = backup_of(&f);
        if bak.exists() {
            std::fs::rename(&bak, &f).map_err(|e| Error::io(&f, e))?;
        }
    }
    sync_dir(dir)?;
    std::fs::remove_file(&marker).map_err(|e| Error::io(&marker, e))?;
    sync_dir(dir)
}

fn save_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    let v =
        serde_json::to_value(manifest).map_err(|e| Error::invalid("manifest", e.to_string()))?;
    write_atomically(&dir.join(MANIFEST), &crate::store::header::seal_json(v)?)
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

/// Dimensions an index can have (declared with [`crate::with_dims!`] in [`crate::geom`]).
pub use crate::geom::SUPPORTED_DIMS;
