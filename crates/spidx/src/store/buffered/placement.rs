//! Where a buffered store's log lives (`log_device` of FAST and eFIND), and the device the
//! log is written to in each case:
//!
//! * `same` (default): the last pages of the node partition, split off as a partition of
//!   their own, so the log's I/O is counted and timed by the device under test and is as
//!   durable as the node pages;
//! * `separate:<device>`: the first pages of a second device instance (a preset, a `.toml`
//!   device file or `file:PATH`, with `{key=value,...}` overrides): its own counters and
//!   modelled time, reported apart (`log_device.*`), as durable as that device;
//! * `uncounted`: the seeds' testbed (Sarwat et al. 2013; Carniel et al. 2019 wrote their
//!   logs with buffered `write()` to a separate file, never synced): a plain file
//!   `log.uncounted` in the index directory, outside the device under test, whose I/O is
//!   neither counted nor timed and never synced between checkpoints — not crash-safe.
//!
//! The store sees only a [`Device`] for its log; everything placement-specific is here.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::device::file::FileAccess;
use crate::device::files::write_atomically;
use crate::device::overlay::ReadOnlyOverlay;
use crate::device::partition::Partition;
use crate::device::{check_request, Device, DeviceConfig, DeviceSpec, DeviceStats};
use crate::store::report::StoreFiles;
use crate::{Error, Result};

/// File of an index directory holding an uncounted log.
pub(crate) const UNCOUNTED_LOG_FILE: &str = "log.uncounted";
/// File of an index directory holding a separate simulated log device's state.
pub(crate) const LOG_DEVICE_STATE: &str = "log-device.state";

/// Where the log of a FAST or eFIND store is written. See the module documentation.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LogPlacement {
    /// A partition at the end of the node partition (counted; crash-safe).
    #[default]
    Same,
    /// A second device.
    Separate {
        /// The device as named (display name, e.g. `ssd-v300{queue_depth=32}`).
        name: String,
        /// Its resolved description.
        config: Box<DeviceConfig>,
    },
    /// A plain file outside the device under test: not counted, not synced.
    Uncounted,
}

/// How a [`LogPlacement`] is written in manifests: the resolved device travels with a
/// separate log, so an index reopens without the preset or device file it was named by.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Repr {
    Text(String),
    Separate(SeparateRepr),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeparateRepr {
    separate: String,
    device: DeviceConfig,
}

impl Serialize for LogPlacement {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            LogPlacement::Same => s.serialize_str("same"),
            LogPlacement::Uncounted => s.serialize_str("uncounted"),
            LogPlacement::Separate { name, config } => SeparateRepr {
                separate: name.clone(),
                device: (**config).clone(),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for LogPlacement {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match Repr::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "log_device must be \"same\", \"uncounted\" or \"separate:<device>\"",
            )
        })? {
            Repr::Text(t) => t.parse().map_err(serde::de::Error::custom),
            Repr::Separate(r) => {
                r.device.validate().map_err(serde::de::Error::custom)?;
                Ok(LogPlacement::Separate {
                    name: r.separate,
                    config: Box::new(r.device),
                })
            }
        }
    }
}

impl std::str::FromStr for LogPlacement {
    type Err = Error;

    /// Parses `same`, `uncounted` or `separate:<device>`, where `<device>` is what
    /// `--device` takes (a preset, `file:PATH`, a `.toml` device file) optionally followed
    /// by overrides in braces: `separate:ssd-v300{queue_depth=32,capacity=1GB}`.
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        match s {
            "same" => return Ok(LogPlacement::Same),
            "uncounted" => return Ok(LogPlacement::Uncounted),
            _ => {}
        }
        let Some(dev) = s.strip_prefix("separate:") else {
            return Err(Error::invalid(
                "log device",
                format!(
                    "'{s}'; choose same, uncounted or separate:<device> (e.g. separate:ssd-v300)"
                ),
            ));
        };
        let dev = dev.trim();
        let (base, params) = match dev.split_once('{') {
            Some((base, rest)) => {
                let inner = rest.strip_suffix('}').ok_or_else(|| {
                    Error::invalid(
                        "log device",
                        format!("'{s}': overrides go in braces, e.g. separate:ssd-v300{{queue_depth=32}}"),
                    )
                })?;
                let params: Vec<&str> = inner
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .collect();
                (base.trim(), params)
            }
            None => (dev, Vec::new()),
        };
        if base.is_empty() {
            return Err(Error::invalid(
                "log device",
                format!(
                    "'{s}' names no device; e.g. separate:ssd-v300 or separate:file:/mnt/log.bin"
                ),
            ));
        }
        let resolved = DeviceSpec::new(base)
            .with_params(&params)
            .and_then(|d| d.resolve())
            .map_err(|e| Error::invalid("log device", format!("'{s}': {e}")))?;
        let mut config = resolved.config;
        config.absolutize_paths()?;
        Ok(LogPlacement::Separate {
            name: resolved.name,
            config: Box::new(config),
        })
    }
}

impl LogPlacement {
    /// Whether this is the default placement (`same`).
    pub fn is_same(&self) -> bool {
        *self == LogPlacement::Same
    }

    /// What run names add to the store's label ("" for `same`).
    pub fn label(&self) -> String {
        match self {
            LogPlacement::Same => String::new(),
            LogPlacement::Separate { name, .. } => format!("log={name}"),
            LogPlacement::Uncounted => "log=uncounted".into(),
        }
    }

    /// Where the log is and how its cost enters a run's figures (a setting, reported as
    /// `store.log_device`).
    pub fn describe(&self) -> String {
        match self {
            LogPlacement::Same => "same: the end of the node partition; its I/O is counted and timed with the device's (device.*, device_s)".into(),
            LogPlacement::Separate { name, .. } => format!(
                "separate: device {name}; its I/O is counted and timed apart (log_device.*); elapsed_s = device_s + log_device.device_s + host_s on simulated devices"
            ),
            LogPlacement::Uncounted => "uncounted: a plain file (log.uncounted) outside the device under test, never synced between checkpoints; its I/O is neither counted nor timed (only its CPU is in cpu_s)".into(),
        }
    }

    /// The durability the placement allows, overriding the log's sync mode's where it is
    /// weaker (`None`: the sync mode's).
    pub fn durability(&self) -> Option<&'static str> {
        match self {
            LogPlacement::Uncounted => Some(
                "NOT crash-safe: the log is a plain file never synced between checkpoints; a power loss or OS crash can lose or damage it and leave a damaged index; a killed process is recovered on file: devices; simulated devices reopen at the last checkpoint",
            ),
            _ => None,
        }
    }

    /// Checks the placement against the device under test `main`: a log must keep what
    /// it holds exactly as long as the node pages do, or recovery would replay a log that
    /// does not match them.
    pub(crate) fn check_device(&self, main: &DeviceConfig) -> Result<()> {
        let LogPlacement::Separate { name, config } = self else {
            return Ok(());
        };
        config.validate()?;
        if config.is_simulated() != main.is_simulated() {
            let (sim, real) = if main.is_simulated() {
                (
                    "the index's device is simulated",
                    format!("the log device {name} is a real file"),
                )
            } else {
                (
                    "the log device is simulated",
                    "the index's device is a real file".to_string(),
                )
            };
            return Err(Error::invalid(
                "log device",
                format!(
                    "{sim} and {real}: a simulated device keeps its pages only at checkpoints, a file keeps every write, so after a crash the log and the node pages would not match; use a simulated log device with a simulated device, a file with a file"
                ),
            ));
        }
        let (a, b) = (main.file_path(), config.file_path());
        if let (Some(a), Some(b)) = (a, b) {
            if std::path::absolute(a).ok() == std::path::absolute(b).ok() {
                return Err(Error::invalid(
                    "log device",
                    format!(
                        "{} is the index's own device file; use log_device = \"same\" or another file",
                        b.display()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The node device and the log's device of a buffered store, as [`attach`] made them.
pub struct LogDevices {
    /// The node pages.
    pub nodes: Box<dyn Device>,
    /// The log's device (`log_pages` pages).
    pub log: Box<dyn Device>,
    /// Where the log is.
    pub placement: LogPlacement,
}

/// Gives a store of kind `store` its log of `log_pages` pages as `placement` says:
/// carved from the end of `device` (`same`), opened from the placement's device
/// description or taken from `explicit` (`separate`), or an uncounted file (`uncounted`;
/// `explicit`, if given, stands for the file). `files` says where the index's files are
/// and whether it is opened read-only; `create` whether the store is new.
pub(crate) fn attach(
    placement: &LogPlacement,
    device: Box<dyn Device>,
    explicit: Option<Box<dyn Device>>,
    log_pages: u64,
    store: &str,
    files: StoreFiles<'_>,
    create: bool,
) -> Result<LogDevices> {
    let page_size = device.page_size();
    let log = match (placement, explicit) {
        (LogPlacement::Same, Some(_)) => {
            return Err(Error::invalid(
                format!("{store} log device"),
                "a log device was given for log_device = \"same\"",
            ))
        }
        (LogPlacement::Same, None) => return split_log(device, log_pages, store),
        (_, Some(dev)) => dev,
        (LogPlacement::Separate { name, config }, None) => {
            let state = match files.dir {
                Some(d) if config.is_simulated() => Some(d.join(LOG_DEVICE_STATE)),
                _ => None,
            };
            if let (Some(s), false) = (&state, create) {
                if !s.exists() {
                    return Err(Error::corrupted(
                        format!("{store} log device"),
                        format!("its state file {} is missing", s.display()),
                    ));
                }
            }
            let access = match (files.read_only, create) {
                (true, _) => FileAccess::Read,
                (false, true) => FileAccess::Create,
                (false, false) => FileAccess::Write,
            };
            config
                .open_with(page_size, state.as_deref(), access)
                .map_err(|e| Error::invalid(format!("{store} log device {name}"), e.to_string()))?
        }
        (LogPlacement::Uncounted, None) => {
            let path = files.dir.map(|d| d.join(UNCOUNTED_LOG_FILE));
            let dev = UncountedLog::open(
                path.as_deref(),
                page_size,
                log_pages,
                files.persistent_device && !files.read_only,
                create,
            )?;
            let dev: Box<dyn Device> = Box::new(dev);
            if files.read_only {
                Box::new(ReadOnlyOverlay::new(dev))
            } else {
                dev
            }
        }
    };
    let cap = log.capacity_pages();
    if cap < log_pages {
        return Err(Error::invalid(
            format!("{store} log device"),
            format!(
                "the log needs {log_pages} pages of {page_size} bytes but the log device has only {cap}"
            ),
        ));
    }
    let log: Box<dyn Device> = if cap > log_pages {
        Box::new(Partition::split(log, log_pages)?.0)
    } else {
        log
    };
    Ok(LogDevices {
        nodes: device,
        log,
        placement: placement.clone(),
    })
}

/// Splits `device` into the node pages and a log of `log_pages` pages at its end; `store`
/// names the store in errors.
pub(crate) fn split_log(
    device: Box<dyn Device>,
    log_pages: u64,
    store: &str,
) -> Result<LogDevices> {
    let cap = device.capacity_pages();
    if log_pages >= cap {
        return Err(Error::invalid(
            format!("{store} log size"),
            format!("the log needs {log_pages} pages but the node partition has only {cap}"),
        ));
    }
    let (nodes, log) = Partition::split(device, cap - log_pages)?;
    Ok(LogDevices {
        nodes: Box::new(nodes),
        log: Box::new(log),
        placement: LogPlacement::Same,
    })
}

/// The uncounted log: pages in memory, backed by a plain file. On a persistent (`file:`)
/// index every write also goes to the file with a plain buffered write, never synced (a
/// killed process leaves it in the OS cache; a power loss may not); on a simulated one the
/// file is written at checkpoints only ([`Device::persist`]), like the simulated device's
/// own state, so both reopen at the same checkpoint. Nothing is counted or timed.
pub(crate) struct UncountedLog {
    data: Vec<u8>,
    page_size: usize,
    pages: u64,
    path: Option<PathBuf>,
    /// Written through at every write (persistent indices).
    file: Option<File>,
}

impl UncountedLog {
    /// Opens the log file `path` (none: memory only) of `pages` pages; `write_through`
    /// on persistent indices; `create` for a new store (a missing file is an error
    /// otherwise).
    pub(crate) fn open(
        path: Option<&Path>,
        page_size: usize,
        pages: u64,
        write_through: bool,
        create: bool,
    ) -> Result<Self> {
        let len = pages as usize * page_size;
        let mut data = vec![0u8; len];
        if let Some(p) = path {
            match std::fs::read(p) {
                Ok(bytes) if !create => {
                    let n = bytes.len().min(len);
                    data[..n].copy_from_slice(&bytes[..n]);
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::corrupted(
                        "uncounted log",
                        format!(
                            "{} is missing (an uncounted log is never synced: a power loss can lose it)",
                            p.display()
                        ),
                    ))
                }
                Err(e) => return Err(Error::io(p, e)),
            }
        }
        let file = match path {
            Some(p) if write_through => {
                use std::os::unix::fs::OpenOptionsExt;
                // Never through a symbolic link planted at the log's name.
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(create)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(p)
                    .map_err(|e| Error::io(p, e))?;
                Some(f)
            }
            _ => None,
        };
        Ok(UncountedLog {
            data,
            page_size,
            pages,
            path: path.map(Path::to_path_buf),
            file,
        })
    }
}

impl Device for UncountedLog {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn capacity_pages(&self) -> u64 {
        self.pages
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        check_request(page, buf.len(), self.page_size, self.pages)?;
        let at = page as usize * self.page_size;
        buf.copy_from_slice(&self.data[at..at + buf.len()]);
        Ok(())
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        check_request(page, data.len(), self.page_size, self.pages)?;
        let at = page as usize * self.page_size;
        self.data[at..at + data.len()].copy_from_slice(data);
        if let (Some(f), Some(p)) = (&self.file, &self.path) {
            f.write_all_at(data, at as u64)
                .map_err(|e| Error::io(p, e))?;
        }
        Ok(())
    }

    /// Never synced: the seeds' testbed wrote its log with plain buffered writes.
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn drop_caches(&mut self) -> Result<()> {
        Ok(())
    }

    fn device_ns(&self) -> u64 {
        0
    }

    /// Nothing is counted.
    fn stats(&self) -> DeviceStats {
        DeviceStats {
            kind: "uncounted".into(),
            page_size: self.page_size,
            ..Default::default()
        }
    }

    /// A checkpoint: the file is synced (written whole on simulated indices), so the log
    /// matches the checkpoint's node pages; between checkpoints it never is.
    fn persist(&mut self) -> Result<()> {
        match (&self.file, &self.path) {
            (Some(f), Some(p)) => f.sync_data().map_err(|e| Error::io(p, e)),
            (None, Some(p)) => write_atomically(p, &self.data),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse_print_and_refuse_bad_values() {
        assert_eq!("same".parse::<LogPlacement>().unwrap(), LogPlacement::Same);
        assert_eq!(
            " uncounted ".parse::<LogPlacement>().unwrap(),
            LogPlacement::Uncounted
        );
        let sep: LogPlacement = "separate:ssd-v300{queue_depth=8}".parse().unwrap();
        match &sep {
            LogPlacement::Separate { name, config } => {
                assert_eq!(name, "ssd-v300{queue_depth=8}");
                assert_eq!(config.kind(), "ssd");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(sep.label(), "log=ssd-v300{queue_depth=8}");
        let json = serde_json::to_string(&sep).unwrap();
        assert_eq!(serde_json::from_str::<LogPlacement>(&json).unwrap(), sep);
        for p in [LogPlacement::Same, LogPlacement::Uncounted] {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<LogPlacement>(&json).unwrap(), p);
        }
        for (bad, want) in [
            ("elsewhere", "choose same, uncounted or separate"),
            ("separate:", "names no device"),
            ("separate:no-such-drive", "unknown device"),
            ("separate:ssd-v300{queue_depth=8", "braces"),
            ("separate:ssd-v300{no_such_key=1}", "no_such_key"),
            ("separate:file:", "needs a path"),
        ] {
            let e = bad.parse::<LogPlacement>().unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn a_separate_log_must_persist_like_the_device_under_test() {
        let sim = DeviceSpec::new("ssd-v300").resolve().unwrap().config;
        let file: LogPlacement = "separate:file:/tmp/spidx-log-test.bin".parse().unwrap();
        let e = file.check_device(&sim).unwrap_err().to_string();
        assert!(e.contains("would not match"), "{e}");
        let main = DeviceSpec::new("file:/tmp/spidx-main.bin")
            .resolve()
            .unwrap()
            .config;
        let e = "separate:hdd-7200"
            .parse::<LogPlacement>()
            .unwrap()
            .check_device(&main)
            .unwrap_err()
            .to_string();
        assert!(e.contains("would not match"), "{e}");
        let e = "separate:file:/tmp/spidx-main.bin"
            .parse::<LogPlacement>()
            .unwrap()
            .check_device(&main)
            .unwrap_err()
            .to_string();
        assert!(e.contains("own device file"), "{e}");
        "separate:hdd-7200"
            .parse::<LogPlacement>()
            .unwrap()
            .check_device(&sim)
            .unwrap();
        LogPlacement::Uncounted.check_device(&main).unwrap();
    }

    #[test]
    fn the_uncounted_log_counts_nothing_and_keeps_its_pages_in_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(UNCOUNTED_LOG_FILE);
        let mut d = UncountedLog::open(Some(&p), 512, 8, true, true).unwrap();
        d.write(3, &[7u8; 1024]).unwrap();
        d.sync().unwrap();
        assert_eq!(d.stats().host.write_ops, 0);
        assert_eq!(d.device_ns(), 0);
        drop(d);
        // Written through (not synced): another open sees it.
        let mut d = UncountedLog::open(Some(&p), 512, 8, true, false).unwrap();
        let mut buf = vec![0u8; 512];
        d.read(4, &mut buf).unwrap();
        assert_eq!(buf, vec![7u8; 512]);
        assert!(d.write(8, &buf).is_err());
        // At checkpoints only (simulated indices): nothing reaches the file before persist.
        let q = dir.path().join("ckpt.log");
        let mut d = UncountedLog::open(Some(&q), 512, 8, false, true).unwrap();
        d.write(0, &[1u8; 512]).unwrap();
        assert!(!q.exists());
        d.persist().unwrap();
        let mut d = UncountedLog::open(Some(&q), 512, 8, false, false).unwrap();
        d.read(0, &mut buf).unwrap();
        assert_eq!(buf, vec![1u8; 512]);
        std::fs::remove_file(&q).unwrap();
        let e = UncountedLog::open(Some(&q), 512, 8, false, false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
