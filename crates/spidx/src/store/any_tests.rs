//! The store configuration as users write it: spec tables, labels, validation.

use super::*;
use crate::store::fast::FlushPolicy;

#[derive(Debug, Deserialize)]
struct Spec {
    store: StoreConfig,
}

#[test]
fn fast_configs_read_from_spec_files_with_size_strings() {
    let s: Spec = toml::from_str(
        r#"store = { kind = "fast", write_buffer = "512KB", flushing_unit = 5, flush_policy = "fast-star" }"#,
    )
    .unwrap();
    assert_eq!(
        s.store,
        StoreConfig::Fast(FastOptions::new(512 << 10, 5, FlushPolicy::FastStar))
    );
    let o = s.store.buffered_options().unwrap();
    assert_eq!(o.log_pages(4096).unwrap(), (8 << 20) / 4096);
    s.store.validate(4096).unwrap();
    let s: Spec = toml::from_str(
        r#"store = { kind = "fast", write_buffer = 131072, flushing_unit = 1, flush_policy = "random", log_size = "4MB", log_sync = "group:8" }"#,
    )
    .unwrap();
    let json = serde_json::to_string(&s.store).unwrap();
    assert_eq!(serde_json::from_str::<StoreConfig>(&json).unwrap(), s.store);
    assert_eq!(s.store.label(), "FAST");
    for (bad, want) in [
        (
            r#"store = { kind = "fast", write_buffer = "512KB", flushing_unit = 5, flush_policy = "fast-star", buffer = 3 }"#,
            "unknown field",
        ),
        (
            r#"store = { kind = "fast", write_buffer = "lots", flushing_unit = 5, flush_policy = "fast" }"#,
            "not a size",
        ),
        (
            r#"store = { kind = "fast", write_buffer = "512KB", flushing_unit = 5, flush_policy = "lifo" }"#,
            "unknown variant",
        ),
        (
            r#"store = { kind = "fast", write_buffer = "512KB", flushing_unit = 5, flush_policy = "fast", log_sync = "sometimes" }"#,
            "each-op, group:N",
        ),
    ] {
        let e = toml::from_str::<Spec>(bad).unwrap_err().to_string();
        assert!(e.contains(want), "{bad}: {e}");
    }
    // Log placement: the default is omitted from manifests; the others are named in
    // run labels and round-trip (a separate device with its resolved description).
    for (text, label) in [
        ("same", "FAST"),
        ("uncounted", "FAST log=uncounted"),
        ("separate:hdd-7200", "FAST log=hdd-7200"),
    ] {
        let s: Spec = toml::from_str(&format!(
            r#"store = {{ kind = "fast", write_buffer = "512KB", flushing_unit = 5, flush_policy = "fast", log_device = "{text}" }}"#
        ))
        .unwrap();
        assert_eq!(s.store.label(), label);
        let json = serde_json::to_string(&s.store).unwrap();
        assert_eq!(json.contains("log_device"), text != "same", "{json}");
        assert_eq!(serde_json::from_str::<StoreConfig>(&json).unwrap(), s.store);
    }
    let s: Spec =
        toml::from_str(r#"store = { kind = "efind", buffer = "512KB", log_device = "uncounted" }"#)
            .unwrap();
    assert_eq!(s.store.label(), "eFIND(512KB,mthao) log=uncounted");
    for (bad, want) in [
        (
            r#"store = { kind = "fast", write_buffer = "512KB", flushing_unit = 5, flush_policy = "fast", log_device = "nowhere" }"#,
            "choose same, uncounted or separate",
        ),
        (
            r#"store = { kind = "efind", buffer = "512KB", log_device = "separate:floppy" }"#,
            "unknown device 'floppy'",
        ),
        (
            r#"store = { kind = "direct", log_device = "uncounted" }"#,
            "unknown field",
        ),
    ] {
        let e = toml::from_str::<Spec>(bad).unwrap_err().to_string();
        assert!(e.contains(want), "{bad}: {e}");
    }
    let tiny = StoreConfig::Fast(FastOptions::new(4096, 2, FlushPolicy::Fast));
    let e = tiny.validate(4096).unwrap_err().to_string();
    assert!(e.contains("can ever hold"), "{e}");
}

/// The written form of each store is unchanged by its options moving into the policy's own
/// struct (`kind` first, the fields in their order, the same skip rules): `store.json` of
/// existing indices opens, and is written back byte for byte.
#[test]
fn stores_are_written_as_before() {
    for (json, written) in [
        (
            r#"{"kind":"fast","write_buffer":8192,"flushing_unit":2,"flush_policy":"fast-star","log_size":1048576,"log_sync":"each-op"}"#,
            None,
        ),
        (
            r#"{"kind":"fast","write_buffer":8192,"flushing_unit":2,"flush_policy":"fast","log_sync":"none","log_device":"uncounted"}"#,
            None,
        ),
        (
            r#"{"kind":"lcr","write_buffer":8192,"log_size":1048576,"log_sync":"each-op"}"#,
            None,
        ),
        (
            r#"{"kind":"rftl","write_buffer":8192,"log_size":1048576,"log_sync":"each-op"}"#,
            Some(
                r#"{"kind":"rftl","write_buffer":8192,"max_pages":4,"log_size":1048576,"log_sync":"each-op"}"#,
            ),
        ),
        (r#"{"kind":"direct"}"#, None),
        (
            r#"{"kind":"direct","journal":false,"log_sync":"group:4"}"#,
            None,
        ),
    ] {
        let c: StoreConfig = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), written.unwrap_or(json));
    }
}
