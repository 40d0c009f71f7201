//! `spidx dataset ...`: make, import and inspect the datasets indices are built on.
//!
//! A thin layer over `spidx::data`: argument parsing, progress output and exit status. Every
//! failure (bad option, unreadable file, nothing usable) ends with a message naming the file
//! and the problem and a non-zero exit.

use anyhow::{bail, Context, Result};
use spidx::data::generate::{self, Distribution, GenerateOptions};
use spidx::data::InsertionOrder;
use spidx::data::{self, info, Dataset, Format, ImportReport, Policy, ReadOptions};

use crate::columns::ColumnArgs;
use std::path::{Path, PathBuf};
use std::time::Instant;

// Output goes through `emit`, so that a closed pipe (`spidx dataset info x | head -1`) ends
// the command quietly instead of panicking like the std macros do.
macro_rules! println {
    ($($t:tt)*) => { emit(&format!("{}\n", format_args!($($t)*))) };
}
macro_rules! print {
    ($($t:tt)*) => { emit(&format!($($t)*)) };
}

fn emit(text: &str) {
    use std::io::Write;
    match std::io::stdout().write_all(text.as_bytes()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("error: cannot write to standard output: {e}");
            std::process::exit(1);
        }
    }
}

/// What to do with invalid polygons (self-intersections, holes outside their shell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InvalidArg {
    /// Keep them and report a warning (the index layer only needs bounding boxes).
    Keep,
    /// Skip them and count them.
    Skip,
}

/// `spidx dataset` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DatasetCmd {
    /// Generate a synthetic dataset (deterministic for a seed).
    ///
    /// 2-D data (--dims 2, the default) are small axis-aligned rectangles, or city-like
    /// building footprints, inside the square [0, 1000000]²; write them as .fgb, .geojson,
    /// .wkt or .wkb. With --dims other than 2, or an .npy output, the result is point vectors
    /// in [0, 1]^D written as float64 N×D NumPy arrays.
    Generate {
        /// uniform, gaussian, clustered or buildings.
        #[arg(long, value_parser = parse_distribution)]
        distribution: Distribution,
        /// Number of objects, e.g. 100000, 1_000_000, 1M, 500k.
        #[arg(long, value_parser = parse_count)]
        count: u64,
        /// Dimensions: 2 for geometries, up to 1024 for vectors.
        #[arg(long, default_value_t = 2)]
        dims: usize,
        /// Random seed: the same options give the same file.
        #[arg(long, default_value_t = generate::DEFAULT_SEED)]
        seed: u64,
        /// Largest rectangle side as a fraction of the extent's side (0.0001 = 100 units).
        #[arg(long, default_value_t = generate::DEFAULT_MAX_SIDE)]
        max_side: f64,
        /// Number of clusters for `clustered` (default: count / 10000, clamped to 10..=1000).
        #[arg(long)]
        clusters: Option<usize>,
        /// Order of the objects in the file: as-stored (the generator's order, spatially
        /// random), shuffled[:SEED], hilbert, x, or clustered[:WINDOW[:SEED]] (Hilbert order
        /// shuffled within windows of WINDOW objects: spatially local runs, OSM-like).
        #[arg(long, default_value = "as-stored", value_parser = crate::build::parse_order)]
        order: InsertionOrder,
        /// Output file; its extension selects the format (.fgb, .geojson, .wkt, .wkb, .npy).
        /// Must be new unless --force.
        #[arg(long)]
        out: PathBuf,
        /// Replace --out if it exists.
        #[arg(long)]
        force: bool,
        /// Print a JSON summary instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Import a GeoJSON, GeoJSON text sequence, WKT, WKB, Shapefile, FlatGeobuf, OSM PBF,
    /// NPY, CSV, GeoPackage or GeoParquet file.
    ///
    /// Bad records are repaired (unclosed rings closed, repeated points removed, bad holes or
    /// parts dropped) or skipped (NaN/infinite coordinates, empty geometries, rings with
    /// fewer than 4 points), and every repair and skip is counted by reason in the summary.
    /// OSM PBF: closed ways tagged building and building multipolygon relations.
    /// GeoJSON text sequences (.geojsonl, .geojsons, .ndjson, .jsonl): one Feature per line,
    /// or RFC 8142 records led by an RS byte; read as a stream.
    /// CSV (.csv, .tsv): a WKT or hex WKB column, or x/y (lon/lat) columns. GeoPackage
    /// (.gpkg): one feature table. GeoParquet (.parquet): WKB geometry column. The CRS the
    /// file names is reported; every object keeps its source id (see --explode).
    Import {
        /// The file to import (format from its extension, or --format).
        src: PathBuf,
        /// Output file; its extension selects the format (.fgb is the canonical one). Must
        /// be new unless --force.
        #[arg(long)]
        out: PathBuf,
        /// Replace --out if it exists.
        #[arg(long)]
        force: bool,
        /// Input format if the extension does not tell: flatgeobuf, geojson, geojsonseq,
        /// wkt, wkb, shapefile, osm-pbf, npy, csv, geopackage, geoparquet.
        #[arg(long)]
        format: Option<String>,
        #[command(flatten)]
        columns: ColumnArgs,
        /// Keep (with a warning) or skip self-intersecting polygons and misplaced holes.
        #[arg(long, value_enum, default_value_t = InvalidArg::Keep)]
        invalid: InvalidArg,
        /// Keep only polygons and multipolygons.
        #[arg(long)]
        polygons_only: bool,
        /// Give the records new ids 0, 1, 2, ... (unique even if the source's are not).
        #[arg(long)]
        renumber: bool,
        /// Index each part of a multi-part geometry (MultiPolygon, MultiLineString,
        /// MultiPoint, and every member of a GeometryCollection) as an object of its own.
        /// Ids: 0, 1, 2, ... in kept order, the parts of one record consecutive in their
        /// order within it.
        #[arg(long)]
        explode: bool,
        /// Print the import report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Describe a dataset file: count, dimensions, extent, geometry kinds, vertices, holes,
    /// per-dimension ranges of vectors, and any problems found while reading it.
    Info {
        /// The dataset file (any importable format).
        path: PathBuf,
        /// Input format if the extension does not tell.
        #[arg(long)]
        format: Option<String>,
        #[command(flatten)]
        columns: ColumnArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn parse_distribution(s: &str) -> Result<Distribution, String> {
    s.parse().map_err(|e: spidx::Error| e.to_string())
}

/// Parses counts such as `1000`, `1_000_000`, `1M`, `500k`, `2.5M`, `1e6`.
fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G' | 'b' | 'B') => (&t[..t.len() - 1], 1e9),
        _ => (&t[..], 1.0),
    };
    if let Ok(n) = num.parse::<u64>() {
        return n
            .checked_mul(mult as u64)
            .ok_or_else(|| format!("'{s}' is too large"));
    }
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a count; write e.g. 1000000, 1M or 500k"))?;
    let v = v * mult;
    if !(v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19) {
        return Err(format!("'{s}' is not a whole, non-negative count"));
    }
    Ok(v as u64)
}

/// Runs one `spidx dataset` subcommand.
pub fn run(cmd: DatasetCmd) -> Result<()> {
    match cmd {
        DatasetCmd::Generate {
            distribution,
            count,
            dims,
            seed,
            max_side,
            clusters,
            order,
            out,
            force,
            json,
        } => {
            let format = Format::for_output(&out)?;
            crate::own::check_out(&out, force)?;
            let opts = GenerateOptions {
                distribution,
                count,
                dims,
                seed,
                max_side,
                clusters,
                vectors: format.holds_vectors(),
            };
            if opts.produces_vectors() && !format.holds_vectors() {
                bail!(
                    "{}-dimensional vectors can only be written as .npy, not {} ({})",
                    dims,
                    format,
                    out.display()
                );
            }
            let t0 = Instant::now();
            let mut ds = generate::generate(&opts)?;
            order.apply(&mut ds)?;
            let gen_s = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            write_atomically(&out, &ds, format)?;
            let write_s = t1.elapsed().as_secs_f64();
            let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
            if json {
                let v = serde_json::json!({
                    "out": out.display().to_string(),
                    "format": format.name(),
                    "distribution": distribution.name(),
                    "count": ds.len(),
                    "dims": ds.dims(),
                    "seed": seed,
                    "max_side": max_side,
                    "order": order.to_string(),
                    "bytes": bytes,
                    "generate_s": gen_s,
                    "write_s": write_s,
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                let what = match (&ds, distribution) {
                    (Dataset::Vectors(_), d) => format!("{d} {}-d vectors", ds.dims()),
                    (_, Distribution::Buildings) => "building footprints".into(),
                    (_, d) => format!("{d} rectangles"),
                };
                let ordered = if order.is_as_stored() {
                    String::new()
                } else {
                    format!(", order {order}")
                };
                println!(
                    "generated {} {what} (seed {seed}{ordered}) in {gen_s:.2} s; \
                     wrote {} ({}, {}) in {write_s:.2} s",
                    ds.len(),
                    out.display(),
                    format,
                    spidx::units::format_size(bytes),
                );
            }
            Ok(())
        }
        DatasetCmd::Import {
            src,
            out,
            format,
            columns,
            invalid,
            polygons_only,
            renumber,
            explode,
            force,
            json,
        } => {
            let out_format = Format::for_output(&out)?;
            crate::own::check_out(&out, force)?;
            if same_file(&src, &out) {
                bail!(
                    "--out {} is the file being imported; choose another path",
                    out.display()
                );
            }
            let (columns, crs) = columns.options()?;
            let opts = ReadOptions {
                format: format.as_deref().map(Format::from_name).transpose()?,
                policy: Policy {
                    skip_invalid: invalid == InvalidArg::Skip,
                    polygons_only,
                },
                renumber,
                allow_duplicate_ids: false,
                explode,
                columns,
                crs,
            };
            let t0 = Instant::now();
            let loaded = data::read(&src, &opts)?;
            let read_s = t0.elapsed().as_secs_f64();
            if loaded.dataset.is_empty() {
                bail!(
                    "no usable records in {}: nothing written to {}\n{}",
                    src.display(),
                    out.display(),
                    loaded.report
                );
            }
            let t1 = Instant::now();
            write_atomically(&out, &loaded.dataset, out_format)?;
            let write_s = t1.elapsed().as_secs_f64();
            if json {
                let v = serde_json::json!({
                    "out": out.display().to_string(),
                    "out_format": out_format.name(),
                    "read_s": read_s,
                    "write_s": write_s,
                    "report": loaded.report,
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", crate::term::safe_lines(&loaded.report.to_string()));
                println!(
                    "wrote {} records to {} ({out_format}) — read {read_s:.2} s, write {write_s:.2} s",
                    loaded.dataset.len(),
                    out.display()
                );
            }
            Ok(())
        }
        DatasetCmd::Info {
            path,
            format,
            columns,
            json,
        } => {
            // Inspection: duplicate ids are counted as a warning, not refused.
            let (columns, crs) = columns.options()?;
            let opts = ReadOptions {
                format: format.as_deref().map(Format::from_name).transpose()?,
                allow_duplicate_ids: true,
                columns,
                crs,
                ..Default::default()
            };
            let t0 = Instant::now();
            let loaded = data::read(&path, &opts)?;
            let read_s = t0.elapsed().as_secs_f64();
            let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let stats = info::info(&loaded.dataset);
            if json {
                let v = serde_json::json!({
                    "path": path.display().to_string(),
                    "format": loaded.report.format,
                    "bytes": bytes,
                    "read_s": read_s,
                    "crs": loaded.report.crs,
                    "info": stats,
                    "read": loaded.report,
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!(
                    "file:        {} ({}, {}, read in {read_s:.2} s)",
                    path.display(),
                    loaded.report.format,
                    spidx::units::format_size(bytes)
                );
                match &loaded.report.crs {
                    // Named by the file: made safe and cut like any text from a file.
                    Some(c) => println!("crs:         {}", crate::term::cell(&c.to_string())),
                    None => println!("crs:         (none named)"),
                }
                print!("{}", crate::term::safe_lines(&stats.to_string()));
                print_problems(&loaded.report);
            }
            Ok(())
        }
    }
}

fn print_problems(r: &ImportReport) {
    if r.skipped.is_empty() && r.repaired.is_empty() && r.warnings.is_empty() {
        return;
    }
    println!("problems found while reading (see `spidx dataset import` for the rules):");
    for (title, map) in [
        ("skipped", &r.skipped),
        ("repaired", &r.repaired),
        ("warning", &r.warnings),
    ] {
        for (k, n) in map {
            println!("  {title:<9} {:<24} {n}", k.replace('_', " "));
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Writes to a temporary file beside `out`, then renames it, so that a failure never leaves
/// a half-written dataset under the final name. The temporary file is created new, never
/// through a link (the data writers open with `O_EXCL | O_NOFOLLOW`): a file or link already
/// at its name is refused and left as it is, not followed nor removed.
fn write_atomically(out: &Path, ds: &Dataset, format: Format) -> Result<()> {
    let name = out
        .file_name()
        .with_context(|| format!("--out {} has no file name", out.display()))?;
    let tmp = out.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    if std::fs::symlink_metadata(&tmp).is_ok() {
        bail!(
            "cannot write --out {}: its temporary file {} exists (left by an interrupted spidx, or not spidx's); spidx does not write through or remove it: remove it yourself, or name another --out",
            out.display(),
            tmp.display()
        );
    }
    let result = data::write_as(&tmp, ds, format);
    if let Err(e) = result {
        // Only a file this call created: not one the writer refused as already there.
        let refused =
            matches!(&e, spidx::Error::InvalidOption { what, .. } if what == "output file");
        if !refused {
            let _ = std::fs::remove_file(&tmp);
        }
        return Err(e.into());
    }
    std::fs::rename(&tmp, out)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), out.display()))
}

#[cfg(test)]
mod tests {
    use super::parse_count;

    #[test]
    fn counts_with_suffixes() {
        assert_eq!(parse_count("1000"), Ok(1000));
        assert_eq!(parse_count("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_count("1M"), Ok(1_000_000));
        assert_eq!(parse_count("2.5M"), Ok(2_500_000));
        assert_eq!(parse_count("500k"), Ok(500_000));
        assert_eq!(parse_count("1e6"), Ok(1_000_000));
        assert!(parse_count("ten").is_err());
        assert!(parse_count("-5").is_err());
        assert!(parse_count("1.5").is_err());
    }
}
