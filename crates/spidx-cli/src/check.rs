//! `spidx check`: verifies every invariant of an index directory and prints its shape.
//! Exits non-zero when any invariant fails.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde_json::json;
use spidx::geom::Rect;
use spidx::index::MbrPredicate;
use spidx::spatial::{read_manifest, SpatialIndex};
use spidx::with_dims;

/// Arguments of `spidx check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Index directory.
    dir: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: CheckArgs) -> Result<()> {
    let manifest = read_manifest(&a.dir)?;
    with_dims!(manifest.dims, D => check::<D>(&a))
}

fn check<const D: usize>(a: &CheckArgs) -> Result<()> {
    let mut idx = SpatialIndex::<D>::open(&a.dir)?;
    let mut rep = idx.tree_mut().check()?;
    // Every indexed object must have its geometry in the object store, and vice versa.
    if let Some(stored) = idx.objects().map(|o| o.len() as u64) {
        let mut ids = Vec::new();
        let any = Rect::point([0.0; D]);
        if rep.ok() {
            idx.tree_mut()
                .search(MbrPredicate::All, &any, |e| ids.push(e.ptr))?;
        }
        let objects = idx.objects().expect("checked above");
        let missing = ids.iter().filter(|id| !objects.contains(**id)).count();
        if missing > 0 {
            rep.violations.push(format!(
                "{missing} indexed objects have no geometry in the object store"
            ));
        }
        if stored != rep.objects {
            rep.violations.push(format!(
                "the object store holds {stored} geometries for {} indexed objects",
                rep.objects
            ));
        }
    }
    let m = idx.manifest();
    if a.json {
        let v = json!({
            "ok": rep.ok(),
            "index": m.options.kind.label(),
            "dims": m.dims,
            "page_size": m.options.page_size,
            "capacity": m.capacity,
            "report": rep,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{}: {} over {} objects, height {}, {} nodes, page {} bytes",
            a.dir.display(),
            m.options.kind.label(),
            rep.objects,
            rep.height,
            rep.nodes,
            m.options.page_size
        );
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED).set_header([
            "level",
            "nodes",
            "entries",
            "fill",
            "coverage",
            "overlap",
            "dead space",
        ]);
        for l in rep.levels.iter().rev() {
            t.add_row(vec![
                l.level.to_string(),
                l.nodes.to_string(),
                l.entries.to_string(),
                format!("{:.1}%", l.fill * 100.0),
                format!("{:.6e}", l.coverage),
                format!("{:.6e}", l.overlap),
                l.dead_space.map_or("-".into(), |d| format!("{d:.6e}")),
            ]);
        }
        println!("{t}");
        if rep.ok() {
            println!("all invariants hold");
        }
        for v in &rep.violations {
            eprintln!("violation: {v}");
        }
    }
    if !rep.ok() {
        bail!(
            "{} invariant violation(s) in {}",
            rep.violations.len(),
            a.dir.display()
        );
    }
    Ok(())
}
