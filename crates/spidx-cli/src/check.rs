//! `spidx check`: verifies every invariant of an index directory and prints its shape:
//! the tree's invariants, and every object record (checksum, geometry, the MBR its tree
//! entry holds; see `spidx::spatial::check`). `--deep` re-reads everything from the device.
//!
//! Exit codes: 0 the index is sound; 1 it is damaged (an invariant fails, or a file it
//! trusts fails its checksum: manifest, store header, log, journal, device state, object
//! records) or cannot be read; 3 it was left by a crash and is otherwise sound: `spidx
//! recover` makes it usable (what a recovery would do was checked in memory only).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use serde_json::json;
use spidx::index::CheckReport;
use spidx::spatial::{read_manifest, CheckDepth, ObjectCheck, SpatialIndex};
use spidx::with_dims;

/// The exit code of `spidx check` on an index left by a crash that `spidx recover` can
/// repair (see the module documentation).
pub const EXIT_CRASHED: u8 = 3;

/// The error of `spidx check` on an index left by a crash and otherwise sound (exit code
/// [`EXIT_CRASHED`]).
#[derive(Debug)]
pub struct Crashed(pub String);

impl std::fmt::Display for Crashed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Crashed {}

/// Checks the tree and every object record of `idx` at `depth`; the violations of both
/// are in the returned report. `crashed`: the index was left by a crash (objects stored for
/// inserts that never completed are then expected, and dropped by `spidx recover`).
pub fn verify<const D: usize>(
    idx: &mut SpatialIndex<D>,
    depth: CheckDepth,
    crashed: bool,
) -> Result<(CheckReport, Option<ObjectCheck>)> {
    if depth == CheckDepth::Deep {
        idx.drop_caches()?;
    }
    let mut rep = idx.tree_mut().check()?;
    if depth == CheckDepth::Deep {
        // Every allocated page accounted for exactly once (tree, free, the store's own).
        let pages = idx.check_pages(&rep);
        rep.violations.extend(pages);
    }
    // Every object record: checksum, geometry, and the MBR its tree entry holds.
    let objects = idx.check_objects(depth, rep.ok())?;
    if let Some(o) = &objects {
        rep.violations.extend(o.violations.iter().cloned());
        if o.violations.is_empty() && !o.ok() {
            rep.violations
                .push("the object records are inconsistent".to_string());
        }
        if let Some(indexed) = o.indexed {
            if o.records != indexed && !(crashed && o.records > indexed) {
                rep.violations.push(format!(
                    "the object store holds {} geometries for {indexed} indexed objects",
                    o.records
                ));
            }
        }
    }
    Ok((rep, objects))
}

/// Arguments of `spidx check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Index directory.
    dir: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Re-read everything: drop caches first so every node comes from the device, and walk
    /// the whole object record area (superseded records too), not only the live records.
    #[arg(long)]
    deep: bool,
}

pub fn run(a: CheckArgs) -> Result<()> {
    let manifest = read_manifest(&a.dir)?;
    with_dims!(manifest.dims, D => check::<D>(&a))
}

fn check<const D: usize>(a: &CheckArgs) -> Result<()> {
    if spidx::spatial::checkpoint_interrupted(&a.dir) {
        return Err(Crashed(format!(
            "{} was left by a crash during a checkpoint (checkpoint.pending exists) and is \
             recoverable: run `spidx recover {}`, which puts the previous checkpoint back \
             (exit code {EXIT_CRASHED}: crashed, not damaged)",
            a.dir.display(),
            a.dir.display()
        ))
        .into());
    }
    let mut idx = SpatialIndex::<D>::open_read_only(&a.dir)?;
    let depth = if a.deep {
        CheckDepth::Deep
    } else {
        CheckDepth::Normal
    };
    let crashed = idx.recovery_state().crashed;
    let (rep, objects) = verify(&mut idx, depth, crashed.is_some())?;
    // What opening did to the node store (in memory only: check never writes): the log
    // replay of FAST/eFIND, the journal rollback of the direct store.
    let store = idx.tree().store().report();
    let m = idx.manifest();
    if a.json {
        let v = json!({
            "ok": rep.ok() && crashed.is_none(),
            "crashed": crashed,
            "index": m.options.kind.label(),
            "dims": m.dims,
            "page_size": m.options.page_size,
            "capacity": m.capacity,
            "depth": depth,
            "report": rep,
            "objects": objects,
            "store": {
                "kind": store.kind,
                "durability": store.settings.durability,
                "recovery": store.recovery,
                "journal": store.journal,
            },
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "{}: {} over {} objects, height {}, {} nodes, page {} bytes",
            crate::term::safe(&a.dir.display().to_string()),
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
        if let Some(o) = &objects {
            println!(
                "objects: {} of {} records verified (checksum, geometry, MBR of the tree entry)",
                o.verified, o.records
            );
            if let Some(s) = &o.scan {
                println!(
                    "record area: {} records ({} live) in {} bytes walked",
                    s.records, s.live, s.bytes
                );
            }
        }
        if let Some(r) = &store.recovery {
            println!(
                "log: {} committed operations ({} records) would be replayed, {} records of an \
                 unfinished operation dropped; scan ended at: {} (not modified; `spidx recover` \
                 repairs)",
                r.operations,
                r.records_replayed,
                r.records_dropped,
                crate::term::safe(&r.log_end)
            );
        }
        if let Some(j) = store.journal.filter(|j| j.restored > 0) {
            println!(
                "journal: {} page images roll the tree back to its last checkpoint (in memory; \
                 `spidx recover` writes them back)",
                j.restored
            );
        }
        if rep.ok() {
            println!("all invariants hold");
        }
        if let (Some(why), true) = (&crashed, rep.ok()) {
            println!(
                "crashed, recoverable: {}; run `spidx recover` before using it",
                crate::term::safe(why)
            );
        }
        for v in &rep.violations {
            eprintln!("violation: {}", crate::term::safe(&v.to_string()));
        }
    }
    if !rep.ok() {
        bail!(
            "{} invariant violation(s) in {}",
            rep.violations.len(),
            a.dir.display()
        );
    }
    if let Some(why) = crashed {
        return Err(Crashed(format!(
            "{} was left by a crash and is recoverable ({why}): run `spidx recover {}` \
             (exit code {EXIT_CRASHED}: crashed, not damaged)",
            a.dir.display(),
            a.dir.display()
        ))
        .into());
    }
    Ok(())
}
