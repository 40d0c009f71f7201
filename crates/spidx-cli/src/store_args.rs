//! The node store's flags of `spidx build`: `--store KIND`, `--store-opt KEY=VALUE` and the
//! common flags (`--write-buffer`, `--log-size`, `--log-sync`, `--log-device`, short for the
//! `--store-opt` of the same key). They are parsed by the library's store parser
//! ([`spidx::store::written`]): the options struct of each store (its fields and serde
//! defaults) is the one declaration of its keys, so nothing here lists a store's options.
//! An unknown key or a bad value is an error naming it, never silently ignored.

use anyhow::Result;
use clap::Args;
use spidx::index::written::Naming;
use spidx::store::written::parse_opts;
use spidx::store::StoreConfig;

/// The node store and its options.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Node store: direct (changes written in place), fast (FAST: write buffer, flushing
    /// units, log; needs write_buffer, flushing_unit and flush_policy), efind (eFIND: needs
    /// write_buffer; see docs/efind.md), lcr (the LCR-tree: one log page per node,
    /// flush-all; needs write_buffer) or rftl (RFTL: index units packed into shared pages,
    /// flush-all, nodes assembled from their units; needs write_buffer; see max_pages).
    #[arg(long, default_value = "direct")]
    pub store: String,
    /// An option of the store (repeatable): a key of a spec's `store` table and its value,
    /// e.g. flushing_unit=5 and flush_policy=fast-star (fast), read_policy=2q (efind),
    /// max_pages=8 (rftl), journal=false (direct); see docs/stores.md and docs/efind.md.
    /// VALUE is a TOML value or a bare word; an unknown key or a bad value is an error
    /// naming the key.
    #[arg(long = "store-opt", value_name = "KEY=VALUE")]
    pub store_opts: Vec<String>,
    /// Same as --store-opt write_buffer=SIZE: the write buffer's capacity (eFIND: the total
    /// buffer, write plus read), e.g. 512KB. Every store but direct.
    #[arg(long)]
    pub write_buffer: Option<String>,
    /// Same as --store-opt log_size=SIZE: bytes of the device given to the log (FAST default:
    /// 16 x the write buffer, >= 1MB; LCR-tree, RFTL: >= 4MB; eFIND: see docs/efind.md).
    /// Every store but direct.
    #[arg(long)]
    pub log_size: Option<String>,
    /// Same as --store-opt log_sync=MODE: when operations become durable: none (default: at
    /// checkpoints), group:N or each-op (buffered stores: the log synced; direct: the pages
    /// synced and, on a file: device, the journal restarted). Every store.
    #[arg(long)]
    pub log_sync: Option<String>,
    /// Same as --store-opt log_device=PLACEMENT: where the log is written: same (default:
    /// the end of the device, counted, crash-safe), separate:DEVICE (a second device, e.g.
    /// separate:ssd-v300 or separate:ssd-v300{queue_depth=8}, counted apart) or uncounted
    /// (the papers' testbed: a plain file, not counted, never synced: NOT crash-safe).
    /// Every store but direct.
    #[arg(long, value_name = "PLACEMENT")]
    pub log_device: Option<String>,
}

/// Names keys as the user may have given them: a common flag or `--store-opt`.
const NAMING: Naming = Naming {
    key: |k| match k {
        "write_buffer" | "log_size" | "log_sync" | "log_device" => {
            format!("--{} (--store-opt {k})", k.replace('_', "-"))
        }
        _ => format!("--store-opt {k}"),
    },
    kind: |k| format!("--store {k}"),
};

impl StoreArgs {
    /// The store and its options, validated by serde (not yet against the page size).
    pub fn config(&self) -> Result<StoreConfig> {
        let common = [
            ("write_buffer", &self.write_buffer),
            ("log_size", &self.log_size),
            ("log_sync", &self.log_sync),
            ("log_device", &self.log_device),
        ];
        let mut opts: Vec<String> = common
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
            .collect();
        opts.extend(self.store_opts.iter().cloned());
        Ok(parse_opts(
            &self.store,
            opts.iter().map(String::as_str),
            &NAMING,
        )?)
    }
}
