//! Who may use an index directory and its device file: an index owns them.
//!
//! * Writers (building, inserting, `spidx recover`) hold an exclusive `flock` on the index
//!   directory, readers (`spidx check`, `spidx query`) a shared one; a `file:` device's file
//!   is locked the same way by [`crate::device::file::FileDevice`]. A conflicting command
//!   gets a clear error instead of reading half-written pages.
//! * A `file:` device is claimed by one index: a random device UUID is written in the
//!   index's manifest and in a sidecar `<device file>.owner` next to the device file. A new
//!   index on a device file another live index claims is refused, and an index whose device
//!   file was since claimed by another is refused (its pages were overwritten).
//! * The claim follows the file, not the name: the device path is resolved through
//!   symlinks before the sidecar is looked up or written, and a device file with more than
//!   one hard link is refused for a new index (another name could reach another index's
//!   pages without passing its sidecar). A bind mount of the same file under another
//!   directory is not detected.

use std::fs::File;
use std::path::{Path, PathBuf};

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::device::file::lock_file;
use crate::device::files::write_atomically;
use crate::{Error, Result};

/// The sidecar recording which index owns a device file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeviceOwner {
    /// The device UUID (also in the owning index's manifest).
    pub uuid: String,
    /// The owning index directory (absolute).
    pub index: PathBuf,
}

/// Locks the index directory `dir`: shared for readers, exclusive for writers. The lock
/// lasts as long as the returned file is open.
pub(crate) fn lock_dir(dir: &Path, shared: bool) -> Result<File> {
    let f = File::open(dir).map_err(|e| Error::io(dir, e))?;
    lock_file(&f, dir, shared, "index directory")?;
    Ok(f)
}

fn sidecar(device: &Path) -> PathBuf {
    let mut s = device.as_os_str().to_owned();
    s.push(".owner");
    PathBuf::from(s)
}

/// The device file's real path: every symlink on the way resolved (the file exists, it
/// was just opened).
fn resolve(device: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(device).map_err(|e| Error::io(device, e))
}

/// How many names (hard links) reach the device file.
fn hard_links(device: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(device)
        .map_err(|e| Error::io(device, e))?
        .nlink())
}

fn read_owner(device: &Path) -> Result<Option<DeviceOwner>> {
    let path = sidecar(device);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map(Some).map_err(|e| {
            Error::corrupted(
                format!("device owner record {}", path.display()),
                e.to_string(),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Claims `device` for the new index `dir` (the caller holds the device file's exclusive
/// lock); returns the new device UUID. Refused if another index that still exists claims
/// the file.
pub(crate) fn claim(device: &Path, dir: &Path) -> Result<String> {
    let dir = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
    let given = device;
    let device = &resolve(device)?;
    let links = hard_links(device)?;
    if links > 1 {
        return Err(Error::invalid(
            "file device",
            format!(
                "{} has {links} hard links: another name may reach another index's pages; \
                 use a device file that only one name reaches",
                given.display()
            ),
        ));
    }
    if let Some(old) = read_owner(device)? {
        if old.index != dir {
            let manifest = old.index.join(super::MANIFEST);
            // A manifest that exists but does not verify may still be that index's (damaged):
            // it keeps its claim.
            let claimed = std::fs::read(&manifest).ok().is_some_and(|t| {
                super::parse_manifest(&t, &manifest).map_or(true, |m| {
                    m.device_uuid.as_deref() == Some(old.uuid.as_str())
                })
            });
            if claimed {
                return Err(Error::invalid(
                    "file device",
                    format!(
                        "{} belongs to the index {} (device {}); two indices on one device \
                         file would overwrite each other's pages: choose another file, or \
                         delete that index first",
                        device.display(),
                        old.index.display(),
                        old.uuid
                    ),
                ));
            }
        }
    }
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    let uuid: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let owner = DeviceOwner {
        uuid: uuid.clone(),
        index: dir,
    };
    let json = serde_json::to_vec_pretty(&owner)
        .map_err(|e| Error::invalid("device owner record", e.to_string()))?;
    write_atomically(&sidecar(device), &json)?;
    Ok(uuid)
}

/// Checks that `device` is still owned by the index whose manifest holds `uuid`.
pub(crate) fn verify(device: &Path, uuid: &str, dir: &Path) -> Result<()> {
    let what = || format!("index {}", dir.display());
    // The sidecar sits beside the resolved file; an index claimed through a symlinked
    // path before claims were resolved keeps its sidecar beside the name it was given.
    let resolved = resolve(device)?;
    let owner = match read_owner(&resolved)? {
        Some(o) => Some(o),
        None => read_owner(device)?,
    };
    match owner {
        None => Err(Error::corrupted(
            what(),
            format!(
                "the owner record {} of its device file is missing; the device file may \
                 have been replaced",
                sidecar(device).display()
            ),
        )),
        Some(o) if o.uuid != uuid => Err(Error::corrupted(
            what(),
            format!(
                "its device file {} now belongs to the index {} (device {}, this index has \
                 device {uuid}); its pages were overwritten",
                device.display(),
                o.index.display(),
                o.uuid
            ),
        )),
        Some(_) => Ok(()),
    }
}
