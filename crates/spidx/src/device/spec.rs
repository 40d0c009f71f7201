//! How users name a device: a preset (`ssd-v300`), a real file (`file:PATH`) or a device
//! description file (`my-drive.toml`), each with optional parameter overrides
//! (`queue_depth=32`, `flash.read_us=40`, `capacity=2GB`). Resolving a [`DeviceSpec`]
//! validates every key and value and yields a [`DeviceConfig`]; nothing falls back silently.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Value;

use super::config::DeviceConfig;
use super::file::FileConfig;
use super::preset;
use crate::units::parse_size;
use crate::{Error, Result};

/// A device as the user named it, before resolution.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceSpec {
    /// Preset name, `file:PATH`, or a path to a `.toml` device file.
    pub base: String,
    /// Parameter overrides as `key=value` (dotted keys reach nested parameters).
    pub params: Vec<(String, String)>,
}

/// A resolved device: a display name and the full validated description.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedDevice {
    /// Readable name, e.g. `ssd-v300` or `ssd-v300{queue_depth=32}`.
    pub name: String,
    /// The parameters.
    pub config: DeviceConfig,
}

impl DeviceSpec {
    /// A spec with no overrides.
    pub fn new(base: impl Into<String>) -> Self {
        DeviceSpec {
            base: base.into(),
            params: Vec::new(),
        }
    }

    /// Adds overrides given as `key=value` strings.
    pub fn with_params<S: AsRef<str>>(mut self, params: &[S]) -> Result<Self> {
        for p in params {
            let p = p.as_ref();
            let (k, v) = p.split_once('=').ok_or_else(|| {
                Error::invalid("device parameter", format!("'{p}' is not key=value"))
            })?;
            if k.trim().is_empty() {
                return Err(Error::invalid(
                    "device parameter",
                    format!("'{p}' has an empty key"),
                ));
            }
            self.params
                .push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(self)
    }

    /// Resolves the spec into a validated device description.
    pub fn resolve(&self) -> Result<ResolvedDevice> {
        let (mut name, mut config) = if let Some(path) = self.base.strip_prefix("file:") {
            if path.is_empty() {
                return Err(Error::invalid(
                    "device",
                    "'file:' needs a path, e.g. file:/mnt/ssd/spidx.bin",
                ));
            }
            (
                self.base.clone(),
                DeviceConfig::File(FileConfig::new(PathBuf::from(path))),
            )
        } else if self.base.ends_with(".toml") {
            load_device_file(Path::new(&self.base))?
        } else if let Some(p) = preset::find(&self.base) {
            (p.name.to_string(), p.config)
        } else {
            return Err(Error::invalid(
                "device",
                format!(
                    "unknown device '{}'; use a preset ({}), file:PATH, or a .toml device file",
                    self.base,
                    preset::names().join(", ")
                ),
            ));
        };
        if !self.params.is_empty() {
            let overrides: Vec<(String, Value)> = self
                .params
                .iter()
                .map(|(k, v)| (k.clone(), parse_value(v)))
                .collect();
            config = apply_overrides(&config, &overrides, "device parameter")?;
            let list: Vec<String> = self
                .params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            name = format!("{name}{{{}}}", list.join(","));
        }
        config.validate()?;
        Ok(ResolvedDevice { name, config })
    }
}

/// Parses a command-line value as a TOML value (number, boolean, ...), else a string.
fn parse_value(text: &str) -> Value {
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_string()))
}

/// Returns `config` with the `(dotted key, value)` overrides applied. Every key must name
/// an existing parameter and every value must fit its type; sizes may be written `4KB`.
pub(crate) fn apply_overrides(
    config: &DeviceConfig,
    overrides: &[(String, Value)],
    what: &str,
) -> Result<DeviceConfig> {
    let mut root = Value::try_from(config).map_err(|e| Error::invalid(what, e.to_string()))?;
    for (key, value) in overrides {
        if key == "kind" {
            return Err(Error::invalid(
                what,
                "'kind' cannot be overridden; start from another preset",
            ));
        }
        let mut slot = &mut root;
        let mut path = String::new();
        for part in key.split('.') {
            let table = slot.as_table_mut().ok_or_else(|| {
                Error::invalid(what, format!("'{path}' has no parameter '{part}'"))
            })?;
            let valid: Vec<String> = table.keys().filter(|k| *k != "kind").cloned().collect();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(part);
            slot = table.get_mut(part).ok_or_else(|| {
                Error::invalid(
                    what,
                    format!(
                        "unknown parameter '{path}' for this device; valid here: {}",
                        valid.join(", ")
                    ),
                )
            })?;
        }
        *slot = coerce(key, slot, value.clone(), what)?;
        // The value fits the parameter's TOML type; whether it fits its Rust type (an
        // unsigned or narrower integer) shows when the description is read back: said here,
        // naming the key and its range, rather than as serde's bare "expected u32".
        if let Err(e) = DeviceConfig::deserialize(root.clone()) {
            return Err(Error::invalid(
                what,
                format!("'{key}' = {value}: {}", expected_range(e.message())),
            ));
        }
    }
    let out: DeviceConfig = root
        .try_into()
        .map_err(|e: toml::de::Error| Error::invalid(what, e.message().to_string()))?;
    out.validate()?;
    Ok(out)
}

/// Converts `value` to the type of the parameter it replaces.
fn coerce(key: &str, old: &Value, value: Value, what: &str) -> Result<Value> {
    let mismatch =
        |v: &Value| Error::invalid(what, format!("'{key}' expects {}, got {v}", type_name(old)));
    Ok(match (old, value) {
        (Value::Integer(_), Value::Integer(i)) => Value::Integer(i),
        (Value::Integer(_), Value::String(s)) => {
            let bytes = parse_size(key, &s)?;
            Value::Integer(
                i64::try_from(bytes)
                    .map_err(|_| Error::invalid(what, format!("'{key}' = {s} is too large")))?,
            )
        }
        (Value::Float(_), Value::Float(f)) => Value::Float(f),
        (Value::Float(_), Value::Integer(i)) => Value::Float(i as f64),
        (Value::Boolean(_), Value::Boolean(b)) => Value::Boolean(b),
        (Value::String(_), Value::String(s)) => Value::String(s),
        (Value::Table(_), v) => {
            return Err(Error::invalid(
                what,
                format!("'{key}' is a group of parameters, not a value (got {v})"),
            ))
        }
        (_, v) => return Err(mismatch(&v)),
    })
}

/// A serde message such as "invalid value: integer `-7200`, expected u32" in words:
/// "out of range: expected an integer from 0 to 4294967295".
fn expected_range(message: &str) -> String {
    let Some((_, ty)) = message.rsplit_once("expected ") else {
        return message.to_string();
    };
    let range = |lo: i128, hi: i128| format!("out of range: expected an integer from {lo} to {hi}");
    match ty.trim() {
        "u8" => range(0, u8::MAX.into()),
        "u16" => range(0, u16::MAX.into()),
        "u32" => range(0, u32::MAX.into()),
        // TOML integers are i64: its maximum is the largest one can write.
        "u64" | "usize" => range(0, i64::MAX.into()),
        "i8" => range(i8::MIN.into(), i8::MAX.into()),
        "i16" => range(i16::MIN.into(), i16::MAX.into()),
        "i32" => range(i32::MIN.into(), i32::MAX.into()),
        "f32" | "f64" => "expected a number".to_string(),
        _ => message.to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Integer(_) => "an integer (or a size such as 4KB)",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "true or false",
        Value::String(_) => "a string",
        Value::Table(_) => "a group of parameters",
        _ => "another type",
    }
}

/// Loads a device description file: either `base = "PRESET"` plus parameters to change
/// (nested ones as tables or dotted keys), or `kind = "..."` with every parameter.
/// An optional `name` names the device in results.
pub(crate) fn load_device_file(path: &Path) -> Result<(String, DeviceConfig)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let what = format!("device file {}", path.display());
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| Error::invalid(&what, e.to_string()))?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("device")
        .to_string();
    let name = match table.remove("name") {
        None => stem,
        Some(Value::String(s)) => s,
        Some(v) => {
            return Err(Error::invalid(
                &what,
                format!("'name' must be a string, got {v}"),
            ))
        }
    };
    let config = match table.remove("base") {
        Some(Value::String(base)) => {
            if table.contains_key("kind") {
                return Err(Error::invalid(
                    &what,
                    "give either 'base' (a preset to change) or 'kind', not both",
                ));
            }
            let preset = preset::find(&base).ok_or_else(|| {
                Error::invalid(
                    &what,
                    format!(
                        "unknown base preset '{base}'; presets: {}",
                        preset::names().join(", ")
                    ),
                )
            })?;
            let mut overrides = Vec::new();
            flatten("", &Value::Table(table), &mut overrides);
            apply_overrides(&preset.config, &overrides, &what)?
        }
        Some(v) => {
            return Err(Error::invalid(
                &what,
                format!("'base' must be a preset name, got {v}"),
            ))
        }
        None => {
            if !table.contains_key("kind") {
                return Err(Error::invalid(
                    &what,
                    "needs 'base = \"PRESET\"' or 'kind = \"...\"'",
                ));
            }
            Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| Error::invalid(&what, e.message().to_string()))?
        }
    };
    config.validate()?;
    Ok((name, config))
}

/// Flattens nested tables into dotted keys, leaving the leaves as values.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        leaf => out.push((prefix.to_string(), leaf.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::MemoryConfig;

    #[test]
    fn presets_and_files_resolve() {
        let r = DeviceSpec::new("memory").resolve().unwrap();
        assert_eq!(r.name, "memory");
        let r = DeviceSpec::new("file:/tmp/x.bin").resolve().unwrap();
        assert!(
            matches!(r.config, DeviceConfig::File(ref f) if f.direct && f.path == Path::new("/tmp/x.bin"))
        );
        let err = DeviceSpec::new("ssd-v999")
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown device 'ssd-v999'") && err.contains("memory"),
            "{err}"
        );
        assert!(DeviceSpec::new("file:").resolve().is_err());
    }

    #[test]
    fn overrides_are_validated() {
        let r = DeviceSpec::new("memory")
            .with_params(&["capacity=2GB"])
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(
            r.config,
            DeviceConfig::Memory(MemoryConfig { capacity: 2 << 30 })
        );
        assert_eq!(r.name, "memory{capacity=2GB}");
        let r = DeviceSpec::new("file:/tmp/y")
            .with_params(&["direct=false"])
            .unwrap()
            .resolve()
            .unwrap();
        assert!(matches!(r.config, DeviceConfig::File(ref f) if !f.direct));
        for (bad, needle) in [
            ("capacty=2GB", "unknown parameter 'capacty'"),
            ("capacity=fast", "not a size"),
            ("capacity=true", "expects an integer"),
            ("kind=hdd", "cannot be overridden"),
            ("capacity.x=1", "no parameter 'x'"),
        ] {
            let err = DeviceSpec::new("memory")
                .with_params(&[bad])
                .unwrap()
                .resolve()
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
        assert!(DeviceSpec::new("memory").with_params(&["novalue"]).is_err());
    }

    #[test]
    fn device_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mine.toml");
        std::fs::write(&p, "base = \"memory\"\ncapacity = \"3GB\"\n").unwrap();
        let r = DeviceSpec::new(p.to_str().unwrap()).resolve().unwrap();
        assert_eq!(r.name, "mine");
        assert_eq!(
            r.config,
            DeviceConfig::Memory(MemoryConfig { capacity: 3 << 30 })
        );

        std::fs::write(&p, "name = \"ram\"\nkind = \"memory\"\ncapacity = 1024\n").unwrap();
        let r = DeviceSpec::new(p.to_str().unwrap()).resolve().unwrap();
        assert_eq!(r.name, "ram");

        std::fs::write(&p, "kind = \"memory\"\ncapacity = 1024\nspeed = 3\n").unwrap();
        let err = DeviceSpec::new(p.to_str().unwrap())
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(err.contains("speed"), "{err}");

        std::fs::write(&p, "base = \"memory\"\ncapacty = 1\n").unwrap();
        let err = DeviceSpec::new(p.to_str().unwrap())
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("capacty") && err.contains("mine.toml"),
            "{err}"
        );

        std::fs::write(&p, "base = memory").unwrap();
        assert!(DeviceSpec::new(p.to_str().unwrap()).resolve().is_err());
        let err = DeviceSpec::new(dir.path().join("none.toml").to_str().unwrap())
            .resolve()
            .unwrap_err();
        assert!(err.to_string().contains("none.toml"));
    }
}
