//! The scenarios the LCR-tree and RFTL share, written once and run over both stores: their
//! options as users write them (the keys, the errors naming them, the label and log size of
//! the defaults, the round trip through JSON) and their table's round trip through
//! `store.json`. What only one of them does is tested in its own `tests.rs`.

use crate::store::buffered::tests::{checkpoint_and_reopen, PS};
use crate::store::{StoreConfig, StoreHeader, StoreReport};

/// One of the two stores, as users and messages name it.
struct Store {
    /// Its `kind` in specs and `--store`.
    kind: &'static str,
    /// Its name in error messages.
    name: &'static str,
    /// Its label in run and index names.
    label: &'static str,
    /// Checks its table in a header saved at a checkpoint after four nodes were written
    /// (see [`the_table_round_trips_through_store_json`]), and in the reopened store's report.
    saved_table: fn(&StoreHeader, &StoreReport),
}

const BOTH: [Store; 2] = [
    Store {
        kind: "lcr",
        name: "LCR-tree",
        label: "LCR",
        saved_table: super::lcr::tests::saved_table,
    },
    Store {
        kind: "rftl",
        name: "RFTL",
        label: "RFTL",
        saved_table: super::rftl::tests::saved_table,
    },
];

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct Spec {
    store: StoreConfig,
}

/// The store as a spec writes it: `kind` and `keys` (TOML), or serde's error.
fn written(s: &Store, keys: &str) -> Result<StoreConfig, String> {
    let text = format!(r#"store = {{ kind = "{}"{keys} }}"#, s.kind);
    toml::from_str::<Spec>(&text)
        .map(|spec| spec.store)
        .map_err(|e| e.to_string())
}

#[test]
fn invalid_options_are_refused_naming_the_key() {
    for s in &BOTH {
        for (keys, key, says) in [
            (", write_buffer = 0", "write_buffer", ""),
            (
                r#", write_buffer = "1MB", log_size = 4096"#,
                "log_size",
                "at least",
            ),
        ] {
            let e = written(s, keys)
                .unwrap()
                .validate(PS)
                .unwrap_err()
                .to_string();
            let key = format!("{} {key}", s.name);
            assert!(
                e.contains(&key) && e.contains(says),
                "{}{keys}: {e}",
                s.kind
            );
        }
        let store = written(s, r#", write_buffer = "256KB", log_device = "uncounted""#).unwrap();
        assert_eq!(store.label(), format!("{} log=uncounted", s.label));
        let o = store.buffered_options().unwrap();
        assert_eq!(o.log_pages(4096).unwrap(), (4 << 20) / 4096);
        let json = serde_json::to_string(&store).unwrap();
        assert_eq!(serde_json::from_str::<StoreConfig>(&json).unwrap(), store);
        for (bad, want) in [
            (
                r#", write_buffer = "256KB", flushing_unit = 3"#,
                "unknown field",
            ),
            ("", "missing field `write_buffer`"),
        ] {
            let e = written(s, bad).unwrap_err();
            assert!(e.contains(want), "{}{bad}: {e}", s.kind);
        }
    }
}

#[test]
fn the_table_round_trips_through_store_json() {
    for s in &BOTH {
        let cfg = written(s, r#", write_buffer = 8192, log_sync = "each-op""#).unwrap();
        let (saved, store) = checkpoint_and_reopen(&cfg);
        assert_eq!(saved.kind, s.kind);
        let report = store.report();
        assert_eq!(report.kind, s.kind);
        (s.saved_table)(&saved, &report);
    }
}
