//! A node store as users write it: `spidx build --store KIND --store-opt KEY=VALUE` (and the
//! common flags), Python's `store` dict. Every one is deserialised by serde into
//! [`StoreConfig`]: the store's options struct (its field names and serde defaults) is the
//! one declaration of its options, so no list of keys or defaults is kept here.
//!
//! When the options do not deserialise, the error names the key at fault: each key is
//! deserialised alone beside `kind` (a bad value or an unknown key fails alone; a good one
//! fails only for the required keys it lacks), else the store (a required key missing).
//!
//! [`Naming`] and [`opts_table`] serve the index's written form too
//! ([`crate::index::written`], a layer above, imports them from here).

use serde::Deserialize;
use toml::{Table, Value};

use super::StoreConfig;
use crate::{Error, Result};

/// How errors name keys and variants (spec keys, or CLI flags).
pub struct Naming {
    /// The name of a key, e.g. `reinsert` or `--index-opt reinsert`.
    pub key: fn(&str) -> String,
    /// The name of a variant, e.g. `kind = "rstar"` or `--index rstar`.
    pub kind: fn(&str) -> String,
}

/// The table of `kind` and its `KEY=VALUE` options (`--index-opt`, `--store-opt`): VALUE
/// is a TOML value, or else a bare word taken as a string. A malformed option, `kind` or
/// a key given twice is refused, naming the key (`example` shows the form, `thing` is
/// what the kind names: `index`, `store`).
pub(crate) fn opts_table<'a>(
    kind: &str,
    opts: impl IntoIterator<Item = &'a str>,
    naming: &Naming,
    example: &str,
    thing: &str,
) -> Result<Table> {
    let mut table = Table::from_iter([("kind".to_string(), Value::from(kind))]);
    for opt in opts {
        let Some((k, v)) = opt.split_once('=') else {
            return Err(Error::invalid(
                (naming.key)(opt),
                format!("write KEY=VALUE (e.g. {example})"),
            ));
        };
        let k = k.trim();
        let value = format!("v = {v}")
            .parse::<Table>()
            .ok()
            .and_then(|mut t| (t.len() == 1).then(|| t.remove("v")).flatten())
            .unwrap_or_else(|| Value::from(v.trim()));
        if k == "kind" || table.insert(k.to_string(), value).is_some() {
            return Err(Error::invalid(
                (naming.key)(k),
                format!("given twice (the {thing} is named once, by its kind)"),
            ));
        }
    }
    Ok(table)
}

/// Names as `spidx build`'s `--store` and `--store-opt` write them.
pub const CLI_NAMING: Naming = Naming {
    key: |k| format!("--store-opt {k}"),
    kind: |k| format!("--store {k}"),
};

/// Deserialises a store from its written table, serde's message as the error.
fn from_table(t: &Table) -> std::result::Result<StoreConfig, String> {
    StoreConfig::deserialize(Value::Table(t.clone())).map_err(|e| e.message().to_string())
}

/// Parses a store written as a table: `kind` and the store's keys. Errors name the key.
pub fn parse_store(table: &Table, naming: &Naming) -> Result<StoreConfig> {
    let kind = match table.get("kind") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(Error::invalid(
                (naming.key)("kind"),
                format!("{other} is not a store name"),
            ))
        }
        None => return Err(Error::invalid((naming.key)("kind"), "missing")),
    };
    let whole = match from_table(table) {
        Ok(c) => return Ok(c),
        Err(e) => e,
    };
    if whole.starts_with(&format!("unknown variant `{kind}`")) {
        return Err(Error::invalid((naming.kind)(&kind), whole));
    }
    for (k, v) in table.iter().filter(|(k, _)| *k != "kind") {
        let one = Table::from_iter([("kind".into(), kind.clone().into()), (k.clone(), v.clone())]);
        match from_table(&one) {
            Err(e) if !e.starts_with("missing field") => {
                return Err(Error::invalid((naming.key)(k), e))
            }
            _ => {}
        }
    }
    Err(Error::invalid((naming.kind)(&kind), whole))
}

/// Parses a store given as its kind and `KEY=VALUE` options (`spidx build --store-opt`).
/// VALUE is a TOML value (`4`, `false`, `"512KB"`), or else a bare word taken as a string
/// (`512KB`, `fast-star`, `group:8`, `separate:ssd-v300`).
pub fn parse_opts<'a>(
    kind: &str,
    opts: impl IntoIterator<Item = &'a str>,
    naming: &Naming,
) -> Result<StoreConfig> {
    let table = opts_table(kind, opts, naming, "write_buffer=512KB", "store")?;
    parse_store(&table, naming)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::written::SPEC_NAMING;
    use crate::store::fast::{FastOptions, FlushPolicy};
    use crate::store::log::LogSync;

    fn opts(kind: &str, o: &[&str]) -> Result<StoreConfig> {
        parse_opts(kind, o.iter().copied(), &CLI_NAMING)
    }

    /// Options written as flags are the struct users write in specs and `store.json`.
    #[test]
    fn options_are_the_structs_fields_with_their_defaults() {
        let c = opts(
            "fast",
            &[
                "write_buffer=512KB",
                "flushing_unit=5",
                "flush_policy=fast-star",
            ],
        )
        .unwrap();
        let want = FastOptions::new(512 << 10, 5, FlushPolicy::FastStar);
        assert_eq!(c, StoreConfig::Fast(want));
        let c = opts("direct", &["journal=false", "log_sync=group:8"]).unwrap();
        assert_eq!(
            c,
            StoreConfig::Direct {
                journal: false,
                log_sync: LogSync::Group(8)
            }
        );
        assert_eq!(opts("direct", &[]).unwrap(), StoreConfig::direct());
        let e = opts("efind", &["write_buffer=64KB", "read_buffer_perc=25"]).unwrap();
        let StoreConfig::Efind(e) = e else { panic!() };
        assert_eq!((e.buffer.0, e.read_buffer_perc), (64 << 10, Some(25.0)));
        let r = opts("rftl", &["write_buffer=64KB", "max_pages=8"]).unwrap();
        assert_eq!(r.label(), "RFTL(max_pages=8)");
    }

    /// Every error names the key at fault (or the store, for a required key missing).
    #[test]
    fn errors_name_the_key() {
        let fast = ["write_buffer=512KB", "flushing_unit=5", "flush_policy=fast"];
        for (kind, extra, want) in [
            ("fast", "flush_policy=lifo", "--store-opt flush_policy"),
            ("fast", "write_buffer=lots", "--store-opt write_buffer"),
            ("fast", "max_pages=3", "--store-opt max_pages"),
            ("fast", "log_sync=sometimes", "--store-opt log_sync"),
            ("fast", "flushing_unit", "--store-opt flushing_unit"),
            ("fast", "kind=lcr", "--store-opt kind"),
            ("lcr", "flushing_unit=3", "--store-opt flushing_unit"),
            ("direct", "log_device=uncounted", "--store-opt log_device"),
            ("nosuch", "log_sync=none", "--store nosuch"),
        ] {
            let mut o: Vec<&str> = if kind == "fast" {
                fast.to_vec()
            } else {
                vec![]
            };
            o.retain(|x| x.split('=').next() != extra.split('=').next());
            o.push(extra);
            let e = opts(kind, &o).unwrap_err().to_string();
            assert!(e.contains(want), "{kind} {extra}: {e}");
        }
        let e = opts("fast", &["write_buffer=1MB", "write_buffer=2MB"]).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
        let e = opts("fast", &["write_buffer=512KB"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--store fast") && e.contains("flushing_unit"),
            "{e}"
        );
        let t: Table =
            toml::from_str("kind = \"rftl\"\nwrite_buffer = \"64KB\"\nmax_pages = -1").unwrap();
        let e = parse_store(&t, &SPEC_NAMING).unwrap_err().to_string();
        assert!(e.contains("max_pages"), "{e}");
    }
}
