//! Helpers shared by the tests of whole index directories (durability, integrity, log
//! placement): a temporary directory with an index and a device file beside it, the
//! rectangle of object `i`, and the ids an index holds.

#![allow(dead_code)]

use std::path::PathBuf;

use spidx::geom::Rect;
use spidx::index::MbrPredicate;
use spidx::spatial::SpatialIndex;

/// The rectangle of object `i` (spread over 1000 × 1000, 3 × 2 wide).
pub fn rect(i: u64) -> Rect<2> {
    let x = (i * 37 % 1000) as f64;
    let y = (i * 91 % 1000) as f64;
    Rect::new([x, y], [x + 3.0, y + 2.0]).unwrap()
}

/// The ids the index holds, sorted.
pub fn ids(idx: &mut SpatialIndex<2>) -> Vec<u64> {
    let mut v = Vec::new();
    let all = Rect::new([-1e9, -1e9], [1e9, 1e9]).unwrap();
    idx.tree_mut()
        .search(MbrPredicate::All, &all, |e| v.push(e.ptr))
        .unwrap();
    v.sort_unstable();
    v
}

/// An index directory and a device file in a temporary directory (removed on drop).
pub struct Files {
    pub _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub dev: PathBuf,
}

/// A fresh [`Files`]: `idx/` and `pages.bin`.
pub fn files() -> Files {
    let tmp = tempfile::tempdir().unwrap();
    Files {
        dir: tmp.path().join("idx"),
        dev: tmp.path().join("pages.bin"),
        _tmp: tmp,
    }
}
