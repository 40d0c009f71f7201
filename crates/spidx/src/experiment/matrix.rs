//! Matrix expansion: the cross product of a spec's lists of values, one [`RunConfig`] per
//! combination, each with a readable name (`R*-tree 30% · 4KB · hdd-7200`) and a stable
//! key (a hash of its full configuration) that identifies it across invocations (used by
//! `--resume`). Every combination is validated here, before any run starts.

use serde::Serialize;

use std::collections::{BTreeMap, HashMap, HashSet};

pub use super::spec::MAX_RUNS;
use super::spec::{check_size, Spec};
use crate::node::{Capacity, Occupancy};
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
    /// The dimensionality of the run's generated dataset when the spec has a `matrix.dims`
    /// axis (absent otherwise, so runs of specs without it keep their keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dims: Option<usize>,
}

/// FNV-1a, 64 bits: a stable (not cryptographic) fingerprint of configurations and specs.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
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

/// Expands the matrix of `spec` into runs (dimensionality, index, store, page size,
/// occupancy, layout, buffer, device; the last varies fastest) and validates every
/// combination for data of its dimensionality: `matrix.dims` when the spec has that axis,
/// else `dims` (the dataset's).
pub fn expand(spec: &Spec, dims: usize) -> Result<Vec<RunConfig>> {
    let m = &spec.matrix;
    let total = check_size(m).map_err(|e| Error::invalid("matrix", e))?;
    let store_labels = store_labels(&m.store);
    // A non-default insertion order is always named: it changes what every run measures.
    let order = spec.dataset.order();
    let mut runs = Vec::with_capacity(total);
    let axis: Vec<Option<usize>> = if m.dims.is_empty() {
        vec![None]
    } else {
        m.dims.iter().map(|d| Some(*d)).collect()
    };
    for run_dims in axis {
        let dims = run_dims.unwrap_or(dims);
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
                                    // A write-back buffer is always named: its results must never
                                    // be mistaken for write-through ones.
                                    if m.buffer.len() > 1 || buffer.is_write_back() {
                                        parts.push(format!("buffer {buffer}"));
                                    }
                                    if !order.is_as_stored() {
                                        parts.push(format!("order {order}"));
                                    }
                                    if let Some(d) = run_dims {
                                        parts.push(dims_label(d));
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
                                        dims: run_dims,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let mut names = HashSet::with_capacity(runs.len());
    if let Some(r) = runs.iter().find(|r| !names.insert(r.name.as_str())) {
        return Err(Error::invalid(
            "matrix",
            format!(
                "two runs are both named '{}'; give the index or device entries distinct labels",
                r.name
            ),
        ));
    }
    Ok(runs)
}

/// A dimensionality's part of run names (`d=16`).
pub(crate) fn dims_label(d: usize) -> String {
    format!("d={d}")
}

/// What `SpatialIndex::create` checks, checked up front for every combination.
fn validate(o: &IndexOptions, dims: usize) -> Result<()> {
    let layout = o.kind.layout(o.layout, o.page_size, dims)?;
    let capacity = Capacity::new(&layout, &o.occupancy)?;
    o.kind.validate(&capacity)?;
    o.buffer.capacity_pages(o.page_size)?;
    o.store.validate(o.page_size)?;
    crate::spatial::check_buffer_with_store(&o.buffer, &o.store)?;
    o.device.validate()?;
    o.store.check_device(&o.device)
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
    // Linear in the number of stores: each store's fields are computed once, then for
    // every label shared by several stores the keys whose values are not all equal.
    let all: Vec<(String, BTreeMap<String, String>)> =
        stores.iter().map(|s| (s.label(), fields(s))).collect();
    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, (label, _)) in all.iter().enumerate() {
        groups.entry(label.as_str()).or_default().push(i);
    }
    let mut differing_keys: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (label, members) in &groups {
        if members.len() < 2 {
            continue;
        }
        let mut keys: HashSet<&str> = HashSet::new();
        let mut first: HashMap<&str, &str> = HashMap::new();
        for &i in members {
            for (k, v) in &all[i].1 {
                if *first.entry(k.as_str()).or_insert(v.as_str()) != v.as_str() {
                    keys.insert(k.as_str());
                }
            }
        }
        // A key some member lacks differs too.
        for &i in members {
            for k in first.keys() {
                if !all[i].1.contains_key(*k) {
                    keys.insert(k);
                }
            }
        }
        differing_keys.insert(label, keys);
    }
    all.iter()
        .map(|(label, mine)| {
            let Some(keys) = differing_keys.get(label.as_str()) else {
                return label.clone();
            };
            let differing: Vec<String> = mine
                .iter()
                .filter(|(k, _)| keys.contains(k.as_str()))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if differing.is_empty() {
                label.clone()
            } else {
                format!("{label} {}", differing.join(" "))
            }
        })
        .collect()
}
