//! spidx writes only what it owns. Every command that creates or replaces a file checks
//! here first: an existing file (or directory) that spidx did not create is refused unless
//! the user passes `--force` (the name `spidx calibrate` uses for its `--out`), and a final
//! symlink is never followed (`O_NOFOLLOW`; a symlink is refused, `--force` or not, rather
//! than written through).
//!
//! * A `file:` device's file is spidx's when it carries the owner record an index writes
//!   beside it (`<file>.owner`, see `spidx::spatial`); any other existing file would be
//!   overwritten and grown to the device's capacity.
//! * An output file (`--out` of `results export`, `reproduce`, `dataset generate|import`)
//!   must be new.
//! * A report directory must be new, empty, or marked by an earlier report
//!   ([`REPORT_MARK`], which lists the files that report wrote: they are removed before the
//!   new report is written, so no stale chart is left beside the new ones).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// The marker `spidx report` leaves in its output directory: the files it wrote, one a line.
pub const REPORT_MARK: &str = ".spidx-report";

/// Fails if `path` is a symlink (spidx never writes through one).
fn no_symlink(path: &Path, what: &str) -> Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        bail!(
            "invalid {what} {}: it is a symbolic link; spidx does not write through links. Name the file itself",
            path.display()
        );
    }
    Ok(())
}

/// The owner record an index writes beside its device file.
fn owner_record(device: &Path) -> PathBuf {
    let mut s = device.as_os_str().to_owned();
    s.push(".owner");
    PathBuf::from(s)
}

/// Whether the existing device file `path` is spidx's: an index claimed it (its owner
/// record is beside the file, or beside the file the path resolves to).
fn device_is_owned(path: &Path) -> bool {
    owner_record(path).is_file()
        || std::fs::canonicalize(path).is_ok_and(|real| owner_record(&real).is_file())
}

/// The paths of every `file` device in `v` (a serialised device or index description:
/// the index's device, a throttled device's inner one, a separate log device).
fn file_devices(v: &Value, out: &mut Vec<PathBuf>) {
    match v {
        Value::Object(m) => {
            if m.get("kind").and_then(Value::as_str) == Some("file") {
                if let Some(p) = m.get("path").and_then(Value::as_str) {
                    out.push(PathBuf::from(p));
                }
            }
            m.values().for_each(|x| file_devices(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| file_devices(x, out)),
        _ => {}
    }
}

/// Refuses the `file:` devices of `options` (an index's options: its device and any
/// separate log device; or one device description) that name an existing file spidx did
/// not create, unless `force`.
pub fn check_devices(options: &impl serde::Serialize, force: bool) -> Result<()> {
    let mut paths = Vec::new();
    file_devices(&serde_json::to_value(options)?, &mut paths);
    for p in paths {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue; // New: spidx creates it.
        };
        if !meta.file_type().is_symlink() && !meta.is_file() {
            bail!(
                "invalid device file:{}: it exists and is not a regular file (a device node or directory is never written)",
                p.display()
            );
        }
        if force || device_is_owned(&p) {
            continue;
        }
        bail!(
            "invalid device file:{}: the file exists and spidx did not create it (no owner record {}); it would be overwritten and grown to the device's capacity. Pass --force to use it anyway, or name a new file",
            p.display(),
            owner_record(&p).display()
        );
    }
    Ok(())
}

/// Fails unless every `file:` device `manifest` names is vouched for by the index's own
/// records before anything opens it: the file's owner record (`<file>.owner`) holds the
/// device UUID of the manifest. An `index.json` edited to name another file is refused
/// here, with that file untouched (opening it for writing would grow it to the device's
/// capacity and replay the log into it).
pub fn check_index_devices(dir: &Path, manifest: &spidx::spatial::Manifest) -> Result<()> {
    let options = serde_json::to_value(&manifest.options)?;
    let mut paths = Vec::new();
    file_devices(&options, &mut paths);
    // A separate log device's file (in the store's options) has its own claim.
    let mut logs = Vec::new();
    file_devices(&options["store"], &mut logs);
    for p in paths {
        let claim = if logs.contains(&p) {
            &manifest.log_device_uuid
        } else {
            &manifest.device_uuid
        };
        let Some(uuid) = claim.as_deref() else {
            bail!(
                "index {}: its manifest names the device file {} but no device UUID claiming it; spidx does not write to a file the index's records do not vouch for",
                dir.display(),
                p.display()
            );
        };
        let record = std::fs::canonicalize(&p)
            .map(|real| owner_record(&real))
            .ok()
            .filter(|r| r.is_file())
            .unwrap_or_else(|| owner_record(&p));
        let owner: Option<Value> = std::fs::read_to_string(&record)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let theirs = owner
            .as_ref()
            .and_then(|o| o.get("uuid"))
            .and_then(Value::as_str);
        if theirs != Some(uuid) {
            bail!(
                "index {}: its device file {} is not vouched for by the index's records (owner record {} {}, the manifest's device is {uuid}); nothing was changed",
                dir.display(),
                p.display(),
                record.display(),
                match theirs {
                    Some(t) => format!("names device {t}"),
                    None => "is missing or unreadable".to_string(),
                }
            );
        }
    }
    Ok(())
}

/// Refuses `--out PATH` when it exists (unless `force`) or is a symlink.
pub fn check_out(path: &Path, force: bool) -> Result<()> {
    no_symlink(path, "--out")?;
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.is_dir() {
            bail!(
                "invalid --out {}: it is a directory; name a file",
                path.display()
            );
        }
        if !force {
            bail!(
                "invalid --out {}: it exists; pass --force to replace it, or name a new file",
                path.display()
            );
        }
    }
    Ok(())
}

/// Creates `--out PATH` for writing: a new file, or with `force` an existing one
/// truncated; never through a final symlink.
pub fn create_out(path: &Path, force: bool) -> Result<File> {
    check_out(path, force)?;
    let mut o = OpenOptions::new();
    o.write(true).custom_flags(libc::O_NOFOLLOW);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    o.open(path)
        .with_context(|| format!("creating --out {}", path.display()))
}

/// Writes `bytes` to `--out PATH` as [`create_out`] opens it.
pub fn write_out(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    use std::io::Write;
    let mut f = create_out(path, force)?;
    f.write_all(bytes)
        .with_context(|| format!("writing --out {}", path.display()))
}

/// A report directory made ready for a new report: created if missing; if it exists, it
/// must be empty, hold an earlier report (its [`REPORT_MARK`]; the files that report
/// wrote are removed), or `force` be given (nothing in it is removed; same names are
/// replaced).
pub fn prepare_report_dir(dir: &Path, force: bool) -> Result<()> {
    no_symlink(dir, "--out")?;
    match std::fs::symlink_metadata(dir) {
        Err(_) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            return Ok(());
        }
        Ok(m) if !m.is_dir() => bail!(
            "invalid --out {}: it exists and is not a directory",
            dir.display()
        ),
        Ok(_) => {}
    }
    let mark = dir.join(REPORT_MARK);
    no_symlink(&mark, "report marker")?;
    if let Ok(list) = std::fs::read_to_string(&mark) {
        for name in list.lines() {
            // Only plain names the earlier report wrote, never a path out of the directory.
            if name.is_empty() || name.contains('/') || name == ".." || name == "." {
                continue;
            }
            let p = dir.join(name);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
            }
        }
        return Ok(());
    }
    let empty = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .next()
        .is_none();
    if !empty && !force {
        bail!(
            "invalid --out {}: the directory exists, is not empty and holds no earlier report (no {REPORT_MARK}); pass --force to write the report into it anyway, or name a new directory",
            dir.display()
        );
    }
    Ok(())
}

/// Writes a report file `name` into `dir` (never through a symlink; an existing file of
/// that name is replaced only when [`prepare_report_dir`] allowed it).
pub fn write_report_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let p = dir.join(name);
    no_symlink(&p, "report file")?;
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&p)
        .with_context(|| format!("writing {}", p.display()))?;
    use std::io::Write;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", p.display()))
}

/// Marks `dir` as holding a report made of `files`.
pub fn mark_report_dir(dir: &Path, files: &[String]) -> Result<()> {
    let mut text = files.join("\n");
    text.push('\n');
    write_report_file(dir, REPORT_MARK, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_devices_are_found_at_any_depth() {
        let v = serde_json::json!({
            "device": {"kind": "throttled", "inner": {"kind": "file", "path": "/a"}},
            "store": {"log": {"config": {"kind": "file", "path": "/b"}}},
            "other": {"kind": "ssd"}
        });
        let mut out = Vec::new();
        file_devices(&v, &mut out);
        out.sort();
        assert_eq!(out, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    }

    #[test]
    fn outputs_are_new_unless_forced_and_never_links() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("theirs.txt");
        std::fs::write(&theirs, b"precious").unwrap();
        assert!(write_out(&theirs, b"x", false).is_err());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        assert!(write_out(&link, b"x", true).is_err());
        assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
        write_out(&theirs, b"x", true).unwrap();
        assert_eq!(std::fs::read(&theirs).unwrap(), b"x");
        let new = dir.path().join("new.txt");
        write_out(&new, b"y", false).unwrap();
        assert_eq!(std::fs::read(&new).unwrap(), b"y");
    }

    #[test]
    fn report_dirs_are_fresh_marked_or_forced() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("rep");
        prepare_report_dir(&out, false).unwrap();
        write_report_file(&out, "old.svg", b"<svg/>").unwrap();
        std::fs::write(out.join("mine.txt"), b"user").unwrap();
        mark_report_dir(&out, &["old.svg".into()]).unwrap();
        prepare_report_dir(&out, false).unwrap();
        assert!(
            !out.join("old.svg").exists(),
            "the earlier report's chart is removed"
        );
        assert_eq!(std::fs::read(out.join("mine.txt")).unwrap(), b"user");
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("index.html"), b"theirs").unwrap();
        assert!(prepare_report_dir(&other, false).is_err());
        prepare_report_dir(&other, true).unwrap();
        assert_eq!(std::fs::read(other.join("index.html")).unwrap(), b"theirs");
    }
}
