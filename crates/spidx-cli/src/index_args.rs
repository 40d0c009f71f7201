//! Options shared by the commands that create indices (`spidx build`): the tree, its
//! pages, its buffer and its device. Every value is validated; options that do not apply
//! to the chosen index are errors, never silently ignored.

use anyhow::Result;
use clap::Args;
use spidx::cache::CacheConfig;
use spidx::device::DeviceSpec;
use spidx::index::written::{parse_opts, CLI_NAMING};
use spidx::index::IndexKind;
use spidx::node::{LayoutKind, Occupancy};
use spidx::spatial::IndexOptions;
use spidx::units::{parse_percent, parse_size};

use crate::store_args::StoreArgs;

/// Index, page, buffer and device options.
#[derive(Args, Debug)]
pub struct IndexArgs {
    /// Index: rtree, rstar, hilbert (the Hilbert R-tree) or fortree (the FOR-tree).
    #[arg(long)]
    pub index: String,
    /// An option of the index (repeatable): a key of a spec's `[[matrix.index]]` entry and
    /// its value, e.g. split=linear (rtree), reinsert=20% (rstar), order=12 (hilbert),
    /// write_read_ratio=8 (fortree); see docs/indexes.md. VALUE is a TOML value or a bare
    /// word; an unknown key or a bad value is an error naming the key.
    #[arg(long = "index-opt", value_name = "KEY=VALUE")]
    pub index_opts: Vec<String>,
    /// Node page size, 1KB to 256KB.
    #[arg(long, default_value = "4KB")]
    pub page_size: String,
    /// Node page layout: checked (checksums, 8-byte pointers) or seed (the seeds' 36-byte entries).
    #[arg(long, default_value = "checked")]
    pub layout: String,
    /// Minimum fill of nodes, relative to their maximum (leaves and internal nodes).
    #[arg(long, default_value = "50")]
    pub min_fill: String,
    /// Maximum fill of nodes, relative to what fits in a page.
    #[arg(long, default_value = "100")]
    pub max_fill: String,
    /// Minimum fill of leaves only (overrides --min-fill).
    #[arg(long)]
    pub leaf_min_fill: Option<String>,
    /// Maximum fill of leaves only (overrides --max-fill).
    #[arg(long)]
    pub leaf_max_fill: Option<String>,
    /// Page buffer: none, or lru|hlru|s2q|2q:SIZE[:write-back] (e.g. lru:512KB). Write-through
    /// by default; with :write-back dirty pages are written at eviction and at the end of
    /// the build (like the seeds' LRU buffer; not crash-safe), direct store only.
    #[arg(long, default_value = "none")]
    pub buffer: String,
    /// The node store and its options.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Device: a preset (see `spidx devices`), file:PATH, or a device .toml file.
    #[arg(long, default_value = "memory")]
    pub device: String,
    /// Override a device parameter (repeatable), e.g. queue_depth=4.
    #[arg(long = "device-param", value_name = "KEY=VALUE")]
    pub device_params: Vec<String>,
}

impl IndexArgs {
    /// The tree and its options: `--index` and the `--index-opt`s, parsed by the spec's
    /// parser ([`spidx::index::written`]), which holds the defaults.
    pub fn kind(&self) -> Result<IndexKind> {
        let opts = self.index_opts.iter().map(String::as_str);
        Ok(parse_opts(&self.index, opts, &CLI_NAMING)?)
    }

    /// Validates everything and builds the index options.
    pub fn options(&self) -> Result<IndexOptions> {
        let kind = self.kind()?;
        let page_size = usize::try_from(parse_size("--page-size", &self.page_size)?)?;
        let min = parse_percent("--min-fill", &self.min_fill)?;
        let max = parse_percent("--max-fill", &self.max_fill)?;
        let occupancy = Occupancy {
            leaf_min: self
                .leaf_min_fill
                .as_deref()
                .map(|p| parse_percent("--leaf-min-fill", p))
                .transpose()?
                .unwrap_or(min),
            leaf_max: self
                .leaf_max_fill
                .as_deref()
                .map(|p| parse_percent("--leaf-max-fill", p))
                .transpose()?
                .unwrap_or(max),
            internal_min: min,
            internal_max: max,
        };
        let buffer: CacheConfig = self.buffer.parse()?;
        let store = self.store.config()?;
        store.validate(page_size)?;
        let device = DeviceSpec::new(&self.device)
            .with_params(&self.device_params)?
            .resolve()?;
        Ok(IndexOptions {
            kind,
            page_size,
            layout: LayoutKind::parse(&self.layout)?,
            occupancy,
            buffer,
            store,
            device_name: device.name,
            device: device.config,
        })
    }
}
