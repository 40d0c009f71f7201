//! Options shared by the commands that create indices (`spidx build`): the tree, its
//! pages, its buffer and its device. Every value is validated; options that do not apply
//! to the chosen index are errors, never silently ignored.

use anyhow::{bail, Result};
use clap::Args;
use spidx::cache::CacheConfig;
use spidx::device::DeviceSpec;
use spidx::index::written::{parse_opts, CLI_NAMING};
use spidx::index::IndexKind;
use spidx::node::{LayoutKind, Occupancy};
use spidx::spatial::IndexOptions;
use spidx::store::buffered::placement::LogPlacement;
use spidx::store::log::LogSync;
use spidx::store::StoreConfig;
use spidx::units::{parse_percent, parse_size};

use crate::store_args::{Shared, StoreArgs};

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
    /// Node store: direct (changes written in place), fast (FAST: write buffer, flushing
    /// units, log; needs --write-buffer, --flushing-unit and --flush-policy), efind (eFIND:
    /// needs --write-buffer; see the eFIND flags), lcr (the LCR-tree: one log page per node,
    /// flush-all; needs --write-buffer) or rftl (RFTL: index units packed into shared pages,
    /// flush-all, nodes assembled from their units; needs --write-buffer; see --max-pages).
    #[arg(long, default_value = "direct")]
    pub store: String,
    /// eFIND's own options.
    #[command(flatten)]
    pub efind: StoreArgs,
    /// FAST, LCR-tree, RFTL: write buffer capacity; eFIND: total buffer (write plus read
    /// buffer), e.g. 512KB.
    #[arg(long)]
    pub write_buffer: Option<String>,
    /// FAST, eFIND: nodes per flushing unit (consecutive pages written together), e.g. 5.
    #[arg(long)]
    pub flushing_unit: Option<u32>,
    /// FAST: flushing policy: flush-all, random, fast, fast-star or fast-star-festival; eFIND: m, mt, mth, mtha or
    /// mthao (default mthao).
    #[arg(long)]
    pub flush_policy: Option<String>,
    /// FAST, eFIND, LCR-tree, RFTL: bytes of the device given to the log (FAST default: 16 x
    /// the write buffer, >= 1MB; LCR-tree, RFTL: >= 4MB; eFIND: see docs/efind.md).
    #[arg(long)]
    pub log_size: Option<String>,
    /// Every store: when operations become durable: none (default: at checkpoints), group:N
    /// or each-op (FAST, eFIND, LCR-tree, RFTL: the log synced; direct: the pages synced and,
    /// on a file: device, the journal restarted).
    #[arg(long)]
    pub log_sync: Option<String>,
    /// FAST, eFIND, LCR-tree, RFTL: where the log is written: same (default: the end of the device, counted,
    /// crash-safe), separate:DEVICE (a second device, e.g. separate:ssd-v300 or
    /// separate:ssd-v300{queue_depth=8}, counted apart) or uncounted (the papers' testbed: a
    /// plain file, not counted, never synced: NOT crash-safe).
    #[arg(long, value_name = "PLACEMENT")]
    pub log_device: Option<String>,
    /// RFTL: most unit pages a node's index units may span before a flush compacts the node
    /// into one fresh unit set (default 4).
    #[arg(long)]
    pub max_pages: Option<u32>,
    /// Direct store: keep no rollback journal on a `file:` device (the seeds' plain tree; a
    /// crash between checkpoints can then leave a damaged index). Default: journaled.
    #[arg(long)]
    pub no_journal: bool,
    /// Device: a preset (see `spidx devices`), file:PATH, or a device .toml file.
    #[arg(long, default_value = "memory")]
    pub device: String,
    /// Override a device parameter (repeatable), e.g. queue_depth=4.
    #[arg(long = "device-param", value_name = "KEY=VALUE")]
    pub device_params: Vec<String>,
}

impl IndexArgs {
    /// The flags the buffered stores share.
    fn shared(&self) -> Shared<'_> {
        Shared {
            write_buffer: self.write_buffer.as_deref(),
            flushing_unit: self.flushing_unit,
            flush_policy: self.flush_policy.as_deref(),
            log_size: self.log_size.as_deref(),
            log_sync: self.log_sync.as_deref(),
            log_device: self.log_device.as_deref(),
        }
    }

    /// The node store and its options; FAST's options are errors with another store.
    fn store_config(&self) -> Result<StoreConfig> {
        let fast_flags = [
            (self.write_buffer.is_some(), "--write-buffer"),
            (self.flushing_unit.is_some(), "--flushing-unit"),
            (self.flush_policy.is_some(), "--flush-policy"),
            (self.log_size.is_some(), "--log-size"),
            (self.log_device.is_some(), "--log-device"),
        ];
        if self.no_journal && self.store != "direct" {
            bail!("--no-journal applies to --store direct only (FAST and eFIND have --log-sync)");
        }
        if self.store != "efind" {
            if let Some(name) = self.efind.first_given() {
                bail!("{name} applies to --store efind only");
            }
        }
        if self.store != "rftl" && self.max_pages.is_some() {
            bail!("--max-pages applies to --store rftl only");
        }
        match self.store.as_str() {
            "direct" => {
                if let Some((_, name)) = fast_flags.iter().find(|(set, _)| *set) {
                    let stores = match *name {
                        "--flushing-unit" | "--flush-policy" => "fast or efind",
                        _ => "fast, efind, lcr or rftl",
                    };
                    bail!("{name} applies to --store {stores} only");
                }
                Ok(StoreConfig::Direct {
                    journal: !self.no_journal,
                    log_sync: match &self.log_sync {
                        Some(s) => s.parse()?,
                        None => LogSync::default(),
                    },
                })
            }
            "efind" => self.efind.efind(&self.shared()),
            "fast" => {
                let missing: Vec<&str> = fast_flags[..3]
                    .iter()
                    .filter(|(set, _)| !set)
                    .map(|(_, n)| *n)
                    .collect();
                if !missing.is_empty() {
                    bail!(
                        "--store fast needs {} (e.g. --write-buffer 512KB --flushing-unit 5 \
                         --flush-policy fast-star)",
                        missing.join(", ")
                    );
                }
                Ok(StoreConfig::Fast(spidx::store::fast::FastOptions {
                    write_buffer: parse_size(
                        "--write-buffer",
                        self.write_buffer.as_deref().expect("checked"),
                    )?,
                    flushing_unit: self.flushing_unit.expect("checked"),
                    flush_policy: self.flush_policy.as_deref().expect("checked").parse()?,
                    log_size: self
                        .log_size
                        .as_deref()
                        .map(|s| parse_size("--log-size", s))
                        .transpose()?,
                    log_sync: match &self.log_sync {
                        Some(s) => s.parse()?,
                        None => LogSync::default(),
                    },
                    log_device: match &self.log_device {
                        Some(s) => s.parse()?,
                        None => LogPlacement::Same,
                    },
                }))
            }
            "lcr" => crate::store_args::lcr(&self.shared()),
            "rftl" => crate::store_args::rftl(&self.shared(), self.max_pages),
            other => bail!("unknown store '{other}'; use direct, fast, efind, lcr or rftl"),
        }
    }

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
        let store = self.store_config()?;
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
