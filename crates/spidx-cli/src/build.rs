//! `spidx build`: builds an index by one-by-one insertion of a dataset's objects and
//! reports what the construction cost.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use spidx::data::{self, Dataset, InsertionOrder, ReadOptions};
use spidx::index::bulk::BulkOptions;
use spidx::spatial::{Construction, IndexOptions, PhaseReport, SpatialIndex, Step};
use spidx::units::parse_percent;
use spidx::with_dims;

use crate::index_args::IndexArgs;
use crate::numfmt::{count, secs};

/// Arguments of `spidx build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Dataset: any format `spidx dataset import` reads (.fgb, .geojson, .wkt, .wkb, .shp,
    /// .osm.pbf, .npy, .csv, .gpkg, .parquet).
    #[arg(long)]
    data: PathBuf,
    #[command(flatten)]
    columns: crate::columns::ColumnArgs,
    /// Give the objects new ids 0, 1, 2, ... (unique even if the source's are not), as
    /// `spidx dataset import --renumber` does.
    #[arg(long)]
    renumber: bool,
    /// Index each part of a multi-part geometry (MultiPolygon, MultiLineString,
    /// MultiPoint, and every member of a GeometryCollection) as an object of its own, as
    /// `spidx dataset import --explode` does. Ids: 0, 1, 2, ... in kept order, the parts of
    /// one record consecutive in their order within it.
    #[arg(long)]
    explode: bool,
    /// Insertion order of the objects: as-stored (default), shuffled[:SEED], hilbert, x, or
    /// clustered[:WINDOW[:SEED]] (Hilbert order shuffled within windows of WINDOW objects,
    /// default 4096: spatially local runs like an OpenStreetMap extract).
    #[arg(long, default_value = "as-stored", value_parser = parse_order)]
    order: InsertionOrder,
    #[command(flatten)]
    index: IndexArgs,
    /// Build by bulk loading instead of one-by-one insertion: str (Sort-Tile-Recursive),
    /// hilbert (Hilbert packing) or omt (Overlap Minimising Top-down).
    #[arg(long)]
    bulk: Option<String>,
    /// Bulk load: entries per node relative to its maximum, e.g. 70 or 70% (default 100).
    #[arg(long)]
    fill: Option<String>,
    /// Write a checkpoint (make everything durable, empty the direct store's journal or a
    /// logging store's log) after every N insertions; its I/O counts in the construction.
    /// The direct store's unit of durability is the checkpoint: a killed build recovers
    /// to its last one. Default: one checkpoint, at the end.
    #[arg(long, value_name = "N")]
    checkpoint_every: Option<u64>,
    /// Index directory to create (must not exist, or be empty).
    #[arg(long)]
    out: PathBuf,
    /// Use a device file (file:PATH, or a file log device) that exists and that spidx did
    /// not create: its contents are overwritten and it is grown to the device's capacity.
    #[arg(long)]
    force: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: BuildArgs) -> Result<()> {
    let opts = a.index.options()?;
    crate::own::check_devices(&opts, a.force)?;
    let bulk = match (&a.bulk, &a.fill) {
        (None, Some(_)) => bail!("--fill applies to --bulk only"),
        (None, None) => None,
        (Some(m), f) => Some(BulkOptions {
            method: m.parse()?,
            fill: match f {
                Some(f) => parse_percent("--fill", f)?,
                None => BulkOptions::DEFAULT_FILL,
            },
        }),
    };
    if bulk.is_some() {
        without_huge_pages();
    }
    if a.out.exists()
        && std::fs::read_dir(&a.out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!(
            "{} exists and is not empty; choose a new index directory",
            a.out.display()
        );
    }
    let (columns, crs) = a.columns.options()?;
    let read = ReadOptions {
        renumber: a.renumber,
        explode: a.explode,
        columns,
        crs,
        ..ReadOptions::default()
    };
    let mut loaded =
        data::read(&a.data, &read).with_context(|| format!("reading {}", a.data.display()))?;
    if loaded.report.skipped_total() > 0 && !a.json {
        eprintln!("{}", crate::term::safe_lines(&loaded.report.to_string()));
    }
    if loaded.dataset.is_empty() {
        bail!("{} holds no usable object", a.data.display());
    }
    if a.checkpoint_every == Some(0) {
        bail!("--checkpoint-every must be at least 1");
    }
    if a.checkpoint_every.is_some() && bulk.is_some() {
        bail!("--checkpoint-every applies to one-by-one insertion, not --bulk");
    }
    let every = a.checkpoint_every;
    a.order.apply(&mut loaded.dataset)?;
    let simulated = opts.device.is_simulated();
    let existed = a.out.exists();
    let mut checkpointed = 0u64;
    let cp = &mut checkpointed;
    let built = match &loaded.dataset {
        Dataset::Geo(_) => build::<2>(&a.out, opts, bulk.as_ref(), every, &loaded.dataset, cp),
        Dataset::Vectors(v) => {
            with_dims!(v.dims(), D => build::<D>(&a.out, opts, bulk.as_ref(), every, &loaded.dataset, cp))
        }
    };
    let (load, construction, summary) = match built {
        Ok(b) => b,
        // A checkpoint was written: the index holds what it covers (e.g. after the device
        // filled up); keep it and say so.
        Err(e) if checkpointed > 0 => {
            return Err(e.context(format!(
                "the build stopped; {} keeps its last checkpoint ({checkpointed} insertions):                  `spidx check {0}` opens it, `spidx recover {0}` makes it writable again",
                a.out.display()
            )));
        }
        Err(e) => {
            // The directory did not exist or was empty (checked above): a failed build
            // (e.g. a bulk load refusing its fill factor) leaves it as it was.
            let _ = std::fs::remove_dir_all(&a.out);
            if existed {
                let _ = std::fs::create_dir(&a.out);
            }
            return Err(e);
        }
    };
    // What the index keeps of its dataset: CRS, extent, source ids (`spidx query` uses them).
    let source = data::provenance::DatasetSource::of(&a.data, &loaded);
    source
        .save(&a.out, &loaded.dataset)
        .with_context(|| format!("saving the dataset description in {}", a.out.display()))?;
    let mut out = summary;
    out["data"] = json!(a.data.display().to_string());
    out["crs"] = json!(source.crs);
    out["skipped_objects"] = json!(loaded.report.skipped_total());
    out["exploded_records"] = json!(loaded.report.exploded);
    out["order"] = json!(a.order.to_string());
    out["cpu_s"] = json!(construction.cpu_s);
    out["device_s"] = json!(construction.device_s);
    out["elapsed_s"] = json!(construction.elapsed_s);
    out["reads"] = json!(construction.device.host.read_ops);
    out["writes"] = json!(construction.device.host.write_ops);
    out["device"] = serde_json::to_value(&construction.device)?;
    if let Some(l) = &construction.log_device {
        out["log_device_s"] = json!(construction.log_device_s);
        out["log_device"] = serde_json::to_value(l)?;
    }
    out["load"] = serde_json::to_value(&load)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_human(&out, &construction, simulated);
    }
    Ok(())
}

/// Parses `--order` (shared with `spidx dataset generate`).
pub fn parse_order(s: &str) -> std::result::Result<InsertionOrder, String> {
    s.parse().map_err(|e: spidx::Error| e.to_string())
}

fn progress(n: u64) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(n), target);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// Turns transparent huge pages off for this process (Linux). A bulk build allocates its
/// memory once, fresh (the dataset, the boxes, the sorted entries, the pages), and the kernel
/// zeroing a fresh 2 MB huge page at each first touch made the bulk load itself 2x slower
/// than with 4 KB pages, the whole command 14 % (bench/cli_bulk.sh, docs/benchmarks.md);
/// one-by-one builds reuse their memory and keep mimalloc's huge pages.
fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag of the calling process; no memory is
    // touched. A kernel that refuses leaves huge pages on, which only costs time.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Builds the index by the library's construction protocol ([`SpatialIndex::construct`]:
/// objects, insertion or bulk load, final write-back), with a checkpoint every `every`
/// insertions; returns (load, construction, summary).
fn build<const D: usize>(
    out: &Path,
    opts: IndexOptions,
    bulk: Option<&BulkOptions>,
    every: Option<u64>,
    ds: &Dataset,
    checkpointed: &mut u64,
) -> Result<(PhaseReport, PhaseReport, serde_json::Value)> {
    let mut idx = SpatialIndex::<D>::create(out, opts, ds.as_geo().is_some())?;
    let n = ds.len() as u64;
    let index_work = if bulk.is_some() {
        "bulk load"
    } else {
        "insert"
    };
    let bar = progress(n);
    bar.set_message(if ds.as_geo().is_some() {
        "objects"
    } else {
        index_work
    });
    let how = Construction {
        bulk,
        final_flush: true,
    };
    // The bar moves every TICK objects: one update per object (a lock and a clock read)
    // cost ~0.17 s per million, counted in the phase it interrupts.
    const TICK: u64 = 4096;
    let mut stored = 0u64;
    let built = idx.construct(ds, how, &mut |idx, step| {
        match step {
            Step::Stored => {
                stored += 1;
                if stored == n {
                    bar.set_position(0);
                    bar.set_message(index_work);
                } else if stored.is_multiple_of(TICK) {
                    bar.set_position(stored);
                }
            }
            Step::Inserted(done) => {
                if done.is_multiple_of(TICK) || done == n {
                    bar.set_position(done);
                }
                if every.is_some_and(|e| done.is_multiple_of(e)) {
                    idx.flush().map_err(|e| {
                        e.context(format_args!("checkpoint after {done} insertions"))
                    })?;
                    *checkpointed = done;
                }
            }
            Step::BulkLoaded(k) => bar.inc(k),
        }
        Ok(())
    });
    bar.finish_and_clear();
    let report = built?;
    idx.flush()?;
    let summary = summary(&idx, out, bulk, report.final_flush.unwrap_or_default());
    Ok((
        report.load.unwrap_or_default(),
        report.construction,
        summary,
    ))
}

/// What `spidx build` prints about the index it built.
fn summary<const D: usize>(
    idx: &SpatialIndex<D>,
    out: &Path,
    bulk: Option<&BulkOptions>,
    final_flush: PhaseReport,
) -> serde_json::Value {
    let tree = idx.tree();
    json!({
        "index": tree.kind().label(),
        "construction": match bulk {
            // Rounded to 6 decimals: 0.55 is shown as 55%, not 55.00000000000001%.
            Some(b) => format!(
                "bulk load {} fill {}%",
                b.method.name(),
                (b.fill * 1e8).round() / 1e6
            ),
            None => "one-by-one insertion".to_string(),
        },
        "dims": D,
        "objects": tree.meta().objects,
        "height": tree.meta().height,
        "nodes": tree.store().pages_in_use(),
        "page_size": idx.manifest().options.page_size,
        "capacity": idx.manifest().capacity,
        "buffer": idx.manifest().options.buffer.to_string(),
        "device_name": idx.manifest().options.device_name,
        "store_kind": idx.manifest().options.store,
        "tree": tree.stats(),
        "store": tree.store().report(),
        "final_flush": final_flush,
        "out": out.display().to_string(),
    })
}

fn print_human(v: &serde_json::Value, c: &PhaseReport, simulated: bool) {
    // Labels and paths may come from files (a device's `.toml`, a directory's name).
    let safe = |v: &serde_json::Value| crate::term::safe(v.as_str().unwrap_or("?")).into_owned();
    println!(
        "built {} over {} objects ({}-D) in {}",
        safe(&v["index"]),
        v["objects"],
        v["dims"],
        safe(&v["out"])
    );
    if v["order"].as_str() != Some("as-stored") {
        println!("order     {}", safe(&v["order"]));
    }
    println!(
        "shape     height {}, {} nodes, page {} bytes",
        v["height"], v["nodes"], v["page_size"]
    );
    println!(
        "device    {} (buffer {})",
        v["device_name"].as_str().unwrap_or("?"),
        v["buffer"].as_str().unwrap_or("?")
    );
    if let (true, Some(l)) = (simulated, c.log_device_s) {
        println!(
            "time      elapsed {} (modelled) = CPU {} + simulated device {} + simulated log device {}",
            secs(c.elapsed_s),
            secs(c.cpu_s),
            secs(c.device_s),
            secs(l)
        );
    } else if simulated {
        println!(
            "time      elapsed {} (modelled) = CPU {} + simulated device {}",
            secs(c.elapsed_s),
            secs(c.cpu_s),
            secs(c.device_s)
        );
    } else if let Some(l) = c.log_device_s {
        println!(
            "time      elapsed {} (wall); CPU {}, device {}, log device {} (measured)",
            secs(c.elapsed_s),
            secs(c.cpu_s),
            secs(c.device_s),
            secs(l)
        );
    } else {
        println!(
            "time      elapsed {} (wall); CPU {}, device {} (measured)",
            secs(c.elapsed_s),
            secs(c.cpu_s),
            secs(c.device_s)
        );
    }
    println!(
        "I/O       {} reads, {} writes",
        count(c.device.host.read_ops as f64),
        count(c.device.host.write_ops as f64)
    );
    if let Some(f) = &c.device.flash {
        println!(
            "flash     {} reads, {} writes, {} erases, write amplification {:.2}",
            f.flash_reads, f.flash_writes, f.erases, f.write_amplification
        );
    }
    if let Some(l) = &c.log_device {
        println!(
            "log I/O   {} reads, {} writes on the log device (not in the I/O line above)",
            count(l.host.read_ops as f64),
            count(l.host.write_ops as f64)
        );
    }
    if let Some(placement) = v["store"]["settings"]["log_device"].as_str() {
        if !placement.starts_with("same") {
            println!("log dev   {}", crate::term::safe(placement));
        }
    }
    if let Some(d) = v["store"]["settings"]["durability"].as_str() {
        if d.starts_with("NOT crash-safe") {
            println!("WARNING   this index is {}", crate::term::safe(d));
        }
    }
    let f = &v["final_flush"];
    println!(
        "flush     {:.3} s ({} writes) to write back what the store buffered at the end",
        f["elapsed_s"].as_f64().unwrap_or(0.0),
        f["device"]["host"]["write_ops"]
    );
    println!(
        "tree      {} splits, {} forced reinsertions",
        v["tree"]["splits"], v["tree"]["forced_reinserts"]
    );
    // Each store's own figures (the buffered stores' write buffer and log, a policy's
    // counters), generically: one line per section of the store's report.
    if let Some(store) = v["store"].as_object() {
        for (section, figures) in store {
            if matches!(
                section.as_str(),
                "kind" | "nodes" | "cache" | "gauges" | "settings"
            ) || !figures.is_object()
            {
                continue;
            }
            let mut flat = Vec::new();
            flatten_figures("", figures, &mut flat);
            println!(
                "{:<9} {}",
                crate::term::safe(section),
                crate::term::safe(&flat.join(", "))
            );
        }
    }
}

/// `figures` as "name value" items, nested names joined with dots (`log.syncs 3`).
fn flatten_figures(prefix: &str, figures: &serde_json::Value, out: &mut Vec<String>) {
    match figures {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_figures(&name, v, out);
            }
        }
        serde_json::Value::Null => {}
        v => out.push(format!("{prefix} {v}")),
    }
}
