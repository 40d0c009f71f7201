//! Small file-system helpers of the device layer, below every layer that writes a file of
//! its own (architecture §2): atomic writes of small files and directory syncs. The saved
//! states of simulated devices (`device/pages.rs`, `device/paged.rs`), the stores' headers,
//! logs and journals (`store/`) and the index manifest and device claims (`spatial/`) all
//! write through here, so none of them imports another for it.

use std::path::Path;

use crate::{Error, Result};

/// Writes a small file atomically: temporary file, fsync, rename, fsync of the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let run = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
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
