//! `spidx recover DIR`: reopens an index after a crash, which makes its node store replay
//! its log (FAST rebuilds its write buffer), checks the tree, writes a checkpoint, and
//! reports what was replayed and dropped and how long it took.
//!
//! Recovery never makes a loss permanent silently: a log or journal damaged in its middle
//! (valid records after a damaged one: not a torn tail) fails with what would be lost and
//! what survives, and only `--accept-loss` keeps the valid prefix (said in the output).
//! After writing the checkpoint it reopens the index read-only and runs every check
//! `spidx check` runs: it exits 0 only if they pass.
//!
//! A simulated device keeps its state in process memory and persists it only at
//! checkpoints, so after `kill -9` a simulated index reopens at its last checkpoint; the
//! log is exercised across a power cut by `file:` devices and the crash tests.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use serde_json::json;
use spidx::spatial::{read_manifest, CheckDepth, SpatialIndex};
use spidx::with_dims;

/// Arguments of `spidx recover`.
#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// Index directory.
    dir: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Keep the operations (log) or page images (journal) before damage in the middle of
    /// a log or journal, making the loss of what follows it permanent. Without it such
    /// damage is an error and nothing is changed.
    #[arg(long)]
    accept_loss: bool,
}

pub fn run(a: RecoverArgs) -> Result<()> {
    let manifest = read_manifest(&a.dir)?;
    // Before anything opens the device file for writing: the index's records vouch for it.
    crate::own::check_index_devices(&a.dir, &manifest)?;
    with_dims!(manifest.dims, D => recover::<D>(&a))
}

fn recover<const D: usize>(a: &RecoverArgs) -> Result<()> {
    let mut idx = if a.accept_loss {
        SpatialIndex::<D>::open_accepting_loss(&a.dir)?
    } else {
        SpatialIndex::<D>::open(&a.dir)?
    };
    let accepted = idx.recovery_state().accepted_loss;
    let report = idx.tree().store().report();
    let check = idx.tree_mut().check()?;
    if !check.ok() {
        bail!(
            "the recovered index fails its checks: {}",
            check.violations.join("; ")
        );
    }
    // Geometries stored for objects whose insert never completed are not part of the index.
    let orphans = idx.drop_unindexed_objects()?;
    let objects_found = idx.objects().map_or(0, |o| o.recovered_records());
    // Make the recovered state the new checkpoint.
    idx.flush()?;
    drop(idx);
    // What `spidx check` would say now: recovery succeeds only if it passes.
    let mut after = SpatialIndex::<D>::open_read_only(&a.dir)?;
    if let Some(why) = after.recovery_state().crashed {
        bail!(
            "{} still needs recovery after the checkpoint recover wrote ({why})",
            a.dir.display()
        );
    }
    let (rep, _) = crate::check::verify(&mut after, CheckDepth::Normal, false)?;
    if !rep.ok() {
        bail!(
            "{} was recovered but still fails {} check(s): {}",
            a.dir.display(),
            rep.violations.len(),
            rep.violations.join("; ")
        );
    }
    drop(after);
    let log = report.recovery.clone();
    let restored = report.journal.map(|j| j.restored);
    if a.json {
        let v = json!({
            "dir": a.dir.display().to_string(),
            "store": report.kind,
            "durability": report.settings.durability,
            "objects": check.objects,
            "recovery": log,
            "journal_pages_restored": restored,
            "object_records_found": objects_found,
            "unindexed_objects_dropped": orphans.len(),
            "accepted_loss": accepted,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "recovered {}: {} store ({}), {} objects, checks pass",
        crate::term::safe(&a.dir.display().to_string()),
        report.kind,
        report.settings.durability,
        check.objects
    );
    match (log, restored) {
        (Some(r), _) => {
            println!("log       replayed in {:.3} s", r.seconds);
            println!(
                "log       {} operations, {} records replayed, {} skipped (made durable by later flushes)",
                r.operations, r.records_replayed, r.records_skipped
            );
            println!(
                "dropped   {} records, {} bytes of an unfinished operation; scan ended at: {}",
                r.records_dropped,
                r.bytes_dropped,
                crate::term::safe(&r.log_end)
            );
            println!("buffer    {} nodes rebuilt", r.buffered_nodes);
        }
        (None, Some(n)) => println!(
            "journal   {n} page images written back: the tree is as its last checkpoint saved it"
        ),
        (None, None) => println!("no log or journal: the index reopened at its last checkpoint"),
    }
    if objects_found > 0 {
        println!("objects   {objects_found} records found past the last checkpoint");
    }
    if let Some(loss) = &accepted {
        println!("LOSS ACCEPTED (--accept-loss): {}", crate::term::safe(loss));
    }
    if !orphans.is_empty() {
        println!(
            "objects   {} geometries of objects whose insert did not complete were dropped",
            orphans.len()
        );
    }
    Ok(())
}
