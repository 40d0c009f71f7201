//! Checks of the dataset, protocol and matrix tables: each raw (spanned) table becomes its
//! typed part of the [`Spec`](super::Spec), or an error naming the file, line and key.

use std::path::PathBuf;

use toml::Spanned;

use crate::cache::CacheConfig;
use crate::data::generate::{self, GenerateOptions};
use crate::data::InsertionOrder;
use crate::device::DeviceSpec;
use crate::index::written::{parse_index, SPEC_NAMING};
use crate::node::{LayoutKind, Occupancy};
use crate::spatial::SUPPORTED_DIMS;
use crate::store::StoreConfig;
use crate::units::parse_size;
use crate::{Error, Result};

use super::raw::*;
use super::src::{strip_invalid, Src};
use super::{DatasetSpec, DeviceChoice, GenerateSpec, IndexChoice, Matrix, Protocol};

/// The spec's `results` key: a PostgreSQL URL as written, or a file path resolved against
/// the spec's folder.
pub(super) fn results_location(src: &Src, raw: &Spanned<String>) -> Result<PathBuf> {
    let text = raw.get_ref().trim();
    if text.is_empty() {
        return Err(src.at(
            raw,
            "results",
            "must not be empty (an SQLite file or a postgres:// URL)",
        ));
    }
    if crate::experiment::db::backend::is_postgres_url(text) {
        return Ok(PathBuf::from(text));
    }
    if text.contains("://") {
        return Err(src.at(
            raw,
            "results",
            format!("'{text}' is neither a file path nor a postgres:// or postgresql:// URL"),
        ));
    }
    let path = src.path(text);
    if path.is_dir() {
        return Err(src.at(
            raw,
            "results",
            format!("{} is a folder; name the SQLite file", path.display()),
        ));
    }
    Ok(path)
}

pub(super) fn dataset(src: &Src, raw: &Spanned<RawDataset>) -> Result<DatasetSpec> {
    let d = raw.get_ref();
    let order = match &d.order {
        Some(o) => src.wrap(o, "dataset.order", o.get_ref().parse::<InsertionOrder>())?,
        None => InsertionOrder::AsStored,
    };
    match (&d.file, &d.generate) {
        (Some(f), None) => {
            let path = src.path(f.get_ref());
            if !path.is_file() {
                return Err(src.at(
                    f,
                    "dataset.file",
                    format!("{} does not exist or is not a file", path.display()),
                ));
            }
            Ok(DatasetSpec::File {
                path,
                skip_invalid: d.skip_invalid.as_ref().is_some_and(|s| *s.get_ref()),
                renumber: d.renumber.as_ref().is_some_and(|s| *s.get_ref()),
                explode: d.explode.as_ref().is_some_and(|s| *s.get_ref()),
                order,
            })
        }
        (None, Some(g)) => {
            if let Some(s) = &d.skip_invalid {
                return Err(src.at(s, "dataset.skip_invalid", "applies to dataset files only"));
            }
            if let Some(s) = &d.renumber {
                return Err(src.at(
                    s,
                    "dataset.renumber",
                    "applies to dataset files only (generated objects have ids 0, 1, 2, ...)",
                ));
            }
            if let Some(s) = &d.explode {
                return Err(src.at(
                    s,
                    "dataset.explode",
                    "applies to dataset files only (generated objects are single-part)",
                ));
            }
            let r = g.get_ref();
            let spec = GenerateSpec {
                distribution: r.distribution.get_ref().clone(),
                count: src.count(&r.count, "dataset.generate.count", 1)?,
                dims: match &r.dims {
                    Some(v) => src.count(v, "dataset.generate.dims", 1)? as usize,
                    None => 2,
                },
                seed: src.seed(&r.seed, "dataset.generate.seed", generate::DEFAULT_SEED)?,
                max_side: r
                    .max_side
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .unwrap_or(generate::DEFAULT_MAX_SIDE),
                clusters: match &r.clusters {
                    Some(v) => Some(src.count(v, "dataset.generate.clusters", 1)? as usize),
                    None => None,
                },
                vectors: r.vectors.unwrap_or(false),
                order,
            };
            let opts = src.wrap(&r.distribution, "dataset.generate", spec.options())?;
            // The generator validates its options before generating anything.
            if opts.count > 0 {
                src.wrap(
                    g,
                    "dataset.generate",
                    generate::generate(&GenerateOptions { count: 1, ..opts }).map(|_| ()),
                )?;
            }
            Ok(DatasetSpec::Generate(spec))
        }
        (Some(_), Some(_)) => Err(src.at(raw, "dataset", "give either file or generate, not both")),
        (None, None) => Err(src.at(
            raw,
            "dataset",
            "give file = \"PATH\" or generate = { distribution = ..., count = ... }",
        )),
    }
}

/// Checks the `matrix.dims` axis against the dataset: it needs a generated dataset
/// without its own `dims` (one place says what the dimensionality is), and every value
/// must suit the generator. The dataset's `dims` becomes the axis' first value (the one
/// [`crate::experiment::Experiment::dataset`] holds).
pub(super) fn dims_axis(
    src: &Src,
    raw: &RawSpec,
    mut dataset: DatasetSpec,
    matrix: &mut Matrix,
) -> Result<DatasetSpec> {
    let Some(list) = &raw.matrix.get_ref().dims else {
        return Ok(dataset);
    };
    let DatasetSpec::Generate(g) = &mut dataset else {
        return Err(src.at(
            list,
            "matrix.dims",
            "applies to generated datasets only (a dataset file has the dimensionality it has)",
        ));
    };
    let generate = raw.dataset.get_ref().generate.as_ref();
    if let Some(d) = generate.and_then(|g| g.get_ref().dims.as_ref()) {
        return Err(src.at(
            d,
            "dataset.generate.dims",
            "the spec also has matrix.dims; give the dimensionality in one place (the axis)",
        ));
    }
    for (i, &d) in matrix.dims.iter().enumerate() {
        let opts = GenerateOptions {
            count: 1,
            dims: d,
            ..src.wrap(list, "matrix.dims", g.options())?
        };
        src.wrap(
            &list.get_ref()[i],
            "matrix.dims",
            generate::generate(&opts).map(|_| ()),
        )?;
    }
    g.dims = matrix.dims[0];
    Ok(dataset)
}

pub(super) fn protocol(src: &Src, raw: &RawProtocol) -> Result<Protocol> {
    let d = Protocol::default();
    Ok(Protocol {
        repetitions: match &raw.repetitions {
            Some(v) => src.count(v, "protocol.repetitions", 1)? as u32,
            None => d.repetitions,
        },
        warmup: match &raw.warmup {
            Some(v) => src.count(v, "protocol.warmup", 0)? as u32,
            None => d.warmup,
        },
        drop_caches: raw.drop_caches.unwrap_or(d.drop_caches),
        check: raw.check.unwrap_or(d.check),
        host: match &raw.host {
            Some(h) => {
                src.wrap(h, "protocol.host", h.get_ref().profile())?;
                h.get_ref().clone()
            }
            None => d.host,
        },
    })
}

fn nonempty<T, U>(src: &Src, v: &Spanned<Vec<T>>, key: &str, f: impl FnOnce() -> U) -> Result<U> {
    if v.get_ref().is_empty() {
        return Err(src.at(v, key, "needs at least one value"));
    }
    Ok(f())
}

pub(super) fn matrix(src: &Src, raw: &Spanned<RawMatrix>) -> Result<Matrix> {
    let m = raw.get_ref();
    nonempty(src, &m.index, "matrix.index", || ())?;
    let index = m
        .index
        .get_ref()
        .iter()
        .map(|i| index_choice(src, i))
        .collect::<Result<Vec<_>>>()?;
    let page_size = match &m.page_size {
        None => vec![4096],
        Some(list) => {
            nonempty(src, list, "matrix.page_size", || ())?;
            list.get_ref()
                .iter()
                .map(|p| {
                    let b = src.wrap(
                        p,
                        "matrix.page_size",
                        parse_size("page size", &p.get_ref().0),
                    )?;
                    usize::try_from(b).map_err(|_| src.at(p, "matrix.page_size", "too large"))
                })
                .collect::<Result<Vec<_>>>()?
        }
    };
    let device = match &m.device {
        None => vec![device_choice(
            src,
            0,
            &Spanned::new(
                0..0,
                RawDevice {
                    device: "memory".into(),
                    params: toml::Table::new(),
                    label: None,
                },
            ),
        )?],
        Some(list) => {
            nonempty(src, list, "matrix.device", || ())?;
            list.get_ref()
                .iter()
                .enumerate()
                .map(|(i, d)| device_choice(src, i, d))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let buffer = match &m.buffer {
        None => vec![CacheConfig::none()],
        Some(list) => {
            nonempty(src, list, "matrix.buffer", || ())?;
            list.get_ref()
                .iter()
                .map(|b| src.wrap(b, "matrix.buffer", b.get_ref().parse::<CacheConfig>()))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let store = match &m.store {
        None => vec![StoreConfig::default()],
        Some(list) => {
            nonempty(src, list, "matrix.store", || ())?;
            list.get_ref().iter().map(|s| s.get_ref().clone()).collect()
        }
    };
    let occupancy = match &m.occupancy {
        None => vec![Occupancy::default()],
        Some(list) => {
            nonempty(src, list, "matrix.occupancy", || ())?;
            list.get_ref()
                .iter()
                .map(|o| occupancy(src, o.get_ref()))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let layout = match &m.layout {
        None => vec![LayoutKind::Checked],
        Some(list) => {
            nonempty(src, list, "matrix.layout", || ())?;
            list.get_ref()
                .iter()
                .map(|l| src.wrap(l, "matrix.layout", LayoutKind::parse(l.get_ref())))
                .collect::<Result<Vec<_>>>()?
        }
    };
    let dims = match &m.dims {
        None => Vec::new(),
        Some(list) => {
            nonempty(src, list, "matrix.dims", || ())?;
            let mut seen = Vec::new();
            for d in list.get_ref() {
                let v = *d.get_ref();
                if !SUPPORTED_DIMS.iter().any(|s| *s as i64 == v) {
                    return Err(src.at(
                        d,
                        "matrix.dims",
                        format!("{v} dimensions are not supported; supported: {SUPPORTED_DIMS:?}"),
                    ));
                }
                if seen.contains(&(v as usize)) {
                    return Err(src.at(d, "matrix.dims", format!("{v} is listed twice")));
                }
                seen.push(v as usize);
            }
            seen
        }
    };
    let matrix = Matrix {
        index,
        page_size,
        device,
        buffer,
        store,
        occupancy,
        layout,
        dims,
    };
    super::check_size(&matrix).map_err(|e| src.at(raw, "matrix", e))?;
    Ok(matrix)
}

/// One `[[matrix.index]]` entry: an optional `label`, the rest parsed by
/// [`crate::index::written`] (the one parser of index options, shared with the CLI).
fn index_choice(src: &Src, raw: &Spanned<toml::Table>) -> Result<IndexChoice> {
    let mut table = raw.get_ref().clone();
    let label = match table.remove("label") {
        None => None,
        Some(toml::Value::String(s)) => Some(s),
        Some(other) => {
            return Err(src.at(
                raw,
                "matrix.index.label",
                format!("{other} is not a string"),
            ))
        }
    };
    let kind = parse_index(&table, &SPEC_NAMING).map_err(|e| match e {
        Error::InvalidOption { what, message } => {
            src.at(raw, &format!("matrix.index.{what}"), message)
        }
        other => other,
    })?;
    Ok(IndexChoice {
        label: label.unwrap_or_else(|| kind.label()),
        kind,
    })
}

fn device_choice(src: &Src, i: usize, raw: &Spanned<RawDevice>) -> Result<DeviceChoice> {
    let d = raw.get_ref();
    let key = format!("matrix.device[{i}]");
    let base = if d.device.ends_with(".toml") {
        src.path(&d.device).display().to_string()
    } else {
        d.device.clone()
    };
    // The device itself first, so its errors name `device`, not a parameter.
    src.wrap(
        raw,
        &format!("{key}.device"),
        DeviceSpec::new(base.clone()).resolve(),
    )?;
    let mut spec = DeviceSpec::new(base.clone());
    for (k, v) in flatten_params("", &d.params) {
        spec.params.push((k, v));
    }
    let resolved = spec.resolve().map_err(|e| {
        // Name the parameter that is wrong on its own; if each is fine alone, the
        // combination is what fails.
        let culprit = spec.params.iter().find(|p| {
            DeviceSpec {
                base: base.clone(),
                params: vec![(*p).clone()],
            }
            .resolve()
            .is_err()
        });
        match culprit {
            Some((k, _)) => src.at(raw, &format!("{key}.params.{k}"), strip_invalid(&e)),
            None => src.at(raw, &format!("{key}.params"), strip_invalid(&e)),
        }
    })?;
    let label = d.label.clone().unwrap_or_else(|| {
        if d.params.is_empty() {
            d.device.clone()
        } else {
            resolved.name.clone()
        }
    });
    Ok(DeviceChoice {
        label,
        name: resolved.name,
        config: resolved.config,
    })
}

/// `{ flash = { read_us = 40 } }` → `flash.read_us=40` (the form device overrides take).
fn flatten_params(prefix: &str, t: &toml::Table) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => out.extend(flatten_params(&key, inner)),
            toml::Value::String(s) => out.push((key, s.clone())),
            other => out.push((key, other.to_string())),
        }
    }
    out
}

fn occupancy(src: &Src, r: &RawOccupancy) -> Result<Occupancy> {
    let d = Occupancy::default();
    let get = |v: &Opt<Text>, key: &str, default: f64| -> Result<f64> {
        match v {
            Some(p) => src.percent(p, &format!("matrix.occupancy.{key}")),
            None => Ok(default),
        }
    };
    let min = get(&r.min_fill, "min_fill", d.internal_min)?;
    let max = get(&r.max_fill, "max_fill", d.internal_max)?;
    Ok(Occupancy {
        leaf_min: get(&r.leaf_min_fill, "leaf_min_fill", min)?,
        leaf_max: get(&r.leaf_max_fill, "leaf_max_fill", max)?,
        internal_min: min,
        internal_max: max,
    })
}
