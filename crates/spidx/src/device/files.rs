//! Small file-system helpers of the device layer, below every layer that writes a file of
//! its own (architecture §2): atomic writes of small files and directory syncs. The saved
//! states of simulated devices (`device/pages.rs`, `device/paged.rs`), the stores' headers,
//! logs and journals (`store/`) and the index manifest and device claims (`spatial/`) all
//! write through here, so none of them imports another for it.

use std::path::Path;

use crate::{Error, Result};

/// Writes a small file atomically: temporary file, fsync, rename, fsync of the directory.
/// The temporary file (`path` with extension `tmp`) is never written through a symbolic
/// link: one planted at its name is removed (which leaves the file it points to as it
/// is) and the file created in its place (`O_NOFOLLOW`).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let open = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
    };
    let run = || -> std::io::Result<()> {
        let mut f = match open() {
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                std::fs::remove_file(&tmp)?;
                open()?
            }
            other => other?,
        };
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_parent(path)
    };
    run().map_err(|e| Error::io(path, e))
}

/// Fsyncs the directory holding `path`, so a file created or renamed there survives a
/// power cut (the rename itself is only durable once its directory is).
pub(crate) fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link planted at the temporary name is replaced, not written through: the file it
    /// points to is unchanged, and the written file is a plain file.
    #[test]
    fn a_link_at_the_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("theirs.txt");
        std::fs::write(&theirs, b"precious").unwrap();
        let path = dir.path().join("store.json");
        std::os::unix::fs::symlink(&theirs, dir.path().join("store.tmp")).unwrap();
        write_atomically(&path, b"{}").unwrap();
        assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert!(!dir.path().join("store.tmp").exists());
    }
}
