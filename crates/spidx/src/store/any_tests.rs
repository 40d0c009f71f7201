//! The store configuration as users write it: spec tables, labels, validation.

use super::*;

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
        StoreConfig::Fast {
            write_buffer: 512 << 10,
            flushing_unit: 5,
            flush_policy: FlushPolicy::FastStar,
            log_size: None,
            log_sync: LogSync::None,
            log_device: Default::default(),
        }
    );
    let p = s.store.fast_params().unwrap();
    assert_eq!(p.log_size, 8 << 20);
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
    let tiny = StoreConfig::Fast {
        write_buffer: 4096,
        flushing_unit: 2,
        flush_policy: FlushPolicy::Fast,
        log_size: None,
        log_sync: LogSync::None,
        log_device: Default::default(),
    };
    let e = tiny.validate(4096).unwrap_err().to_string();
    assert!(e.contains("can ever hold"), "{e}");
}
