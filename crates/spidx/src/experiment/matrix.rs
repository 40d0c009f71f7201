//! Matrix expansion: the cross product of a spec's lists of values, one [`RunConfig`] per
//! combination, each with a readable name (`R*-tree 30% · 4KB · hdd-7200`) and a stable
//! key (a hash of its full configuration) that identifies it across invocations (used by
//! `--resume`). Every combination is validated here, before any run starts.

use serde::Serialize;

use std::collections::BTreeMap;

use super::spec::Spec;
use crate::node::{Capacity, NodeLayout, Occupancy};
use crate::spatial::IndexOptions;
use crate::store::StoreConfig;
use crate::units::format_size;
use crate::{Error, Result};

/// One run of an experiment: an index configuration on a device.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    /// Position in the expansion (0-based).
    pub ordinal: usize,
    /// Readable name, unique in the experiment.
    pub name: String,
    /// Hash of the name and configuration (hex), stable across invocations.
    pub key: String,
    /// The index's label, e.g. `R*-tree 30%`.
    pub index_label: String,
    /// The device's label, e.g. `hdd-7200`.
    pub device_label: String,
    /// Everything the index is created with.
    pub options: IndexOptions,
}

/// FNV-1a, 64 bits: a stable (not cryptographic) fingerprint of configurations and specs.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A stable fingerprint of a serializable value (its JSON with sorted keys).
pub fn fingerprint<T: Serialize>(v: &T) -> String {
    let json = serde_json::to_value(v)
        .map(|v| v.to_string())
        .unwrap_or_default();
    format!("{:016x}", fnv1a(json.as_bytes()))
}

fn occupancy_label(o: &Occupancy) -> String {
    let p = |f: f64| format!("{}", (f * 100.0).round());
    if o.leaf_min == o.internal_min && o.leaf_max == o.internal_max {
        format!("fill {}-{}%", p(o.internal_min), p(o.internal_max))
    } else {
        format!(
            "fill {}-{}% (leaves {}-{}%)",
            p(o.internal_min),
            p(o.internal_max),
            p(o.leaf_min),
            p(o.leaf_max)
        )
    }
}

/// Expands the matrix of `spec` into runs (index, store, page size, occupancy, layout,
/// buffer, device; the last varies fastest) and validates every combination for data of
/// `dims` dimensions.
pub fn expand(spec: &Spec, dims: usize) -> Result<Vec<RunConfig>> {
    let m = &spec.matrix;
    let store_labels = store_labels(&m.store);
    let mut runs = Vec::new();
    for index in &m.index {
        for (si, store) in m.store.iter().enumerate() {
            for &page_size in &m.page_size {
                for occupancy in &m.occupancy {
                    for &layout in &m.layout {
                        for buffer in &m.buffer {
                            for device in &m.device {
                                let mut parts = Vec::new();
                                let store_label = &store_labels[si];
                                parts.push(if store_label.is_empty() {
                                    index.label.clone()
                                } else {
                                    format!("{store_label} {}", index.label)
                                });
                                parts.push(format_size(page_size as u64));
                                if m.occupancy.len() > 1 {
                                    parts.push(occupancy_label(occupancy));
                                }
                                if m.layout.len() > 1 {
                                    parts.push(format!("{layout:?} layout").to_lowercase());
                                }
                                if m.buffer.len() > 1 {
                                    parts.push(format!("buffer {buffer}"));
                                }
                                parts.push(device.label.clone());
                                let name = parts.join(" · ");
                                let options = IndexOptions {
                                    kind: index.kind,
                                    page_size,
                                    layout,
                                    occupancy: *occupancy,
                                    buffer: buffer.clone(),
                                    store: store.clone(),
                                    device_name: device.name.clone(),
                                    device: device.config.clone(),
                                };
                                validate(&options, dims).map_err(|e| {
                                    Error::invalid(format!("run '{name}'"), e.to_string())
                                })?;
                                runs.push(RunConfig {
                                    ordinal: runs.len(),
                                    key: fingerprint(&(&name, &options)),
                                    name,
                                    index_label: index.label.clone(),
                                    device_label: device.label.clone(),
                                    options,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    for (i, r) in runs.iter().enumerate() {
        if let Some(o) = runs[..i].iter().find(|o| o.name == r.name) {
            return Err(Error::invalid(
                "matrix",
                format!(
                    "two runs are both named '{}'; give the index or device entries distinct labels",
                    o.name
                ),
            ));
        }
    }
    Ok(runs)
}

/// What `SpatialIndex::create` checks, checked up front for every combination.
fn validate(o: &IndexOptions, dims: usize) -> Result<()> {
    let layout = NodeLayout::new(o.layout, o.page_size, dims)?;
    let capacity = Capacity::new(&layout, &o.occupancy)?;
    o.kind.validate(&capacity)?;
    o.buffer.capacity_pages(o.page_size)?;
    o.store.validate(o.page_size)?;
    o.device.validate()
}

/// Each store's label in run names: the store's own label (`FAST`, empty for direct),
/// followed, when several stores of the matrix share it, by the options that tell them
/// apart (`FAST write_buffer=512KB`).
fn store_labels(stores: &[StoreConfig]) -> Vec<String> {
    let fields = |s: &StoreConfig| -> BTreeMap<String, String> {
        match serde_json::to_value(s) {
            Ok(serde_json::Value::Object(m)) => m
                .into_iter()
                .filter(|(k, _)| k != "kind")
                .map(|(k, v)| {
                    let v = match v {
                        serde_json::Value::String(s) => s,
                        serde_json::Value::Number(n)
                            if (k.contains("buffer") || k.contains("size"))
                                && n.as_u64().is_some_and(|b| b >= 1024) =>
                        {
                            format_size(n.as_u64().unwrap_or(0))
                        }
                        other => other.to_string(),
                    };
                    (k, v)
                })
                .collect(),
            _ => BTreeMap::new(),
        }
    };
    stores
        .iter()
        .map(|s| {
            let label = s.label();
            let same: Vec<&StoreConfig> = stores.iter().filter(|o| o.label() == label).collect();
            if same.len() < 2 {
                return label;
            }
            let mine = fields(s);
            let differing: Vec<String> = mine
                .iter()
                .filter(|(k, v)| same.iter().any(|o| fields(o).get(*k) != Some(*v)))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if differing.is_empty() {
                label
            } else {
                format!("{label} {}", differing.join(" "))
            }
        })
        .collect()
}
