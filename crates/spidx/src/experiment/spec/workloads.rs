//! Validation of the `[[workload]]` tables: keys that apply to each kind, values, names.

use std::ops::Range;

use super::raw::{RawSpec, RawWorkload};
use super::{Concurrency, Placement, Src, Windows, Workload};
use crate::experiment::concurrent::Instances;
use crate::index::bulk::{BulkMethod, BulkOptions};
use crate::query::Predicate;
use crate::units::parse_size;
use crate::Result;

/// Keys each workload kind accepts (besides `kind` and `name`).
fn allowed(kind: &str) -> &'static [&'static str] {
    match kind {
        "construction" => &["final_flush"],
        "bulk" => &["method", "fill", "final_flush"],
        "range" => &[
            "area",
            "queries",
            "aspect",
            "windows",
            "seed",
            "predicate",
            "refine",
        ],
        "point" => &["queries", "place", "seed", "predicate", "refine"],
        "knn" => &[
            "k",
            "queries",
            "place",
            "seed",
            "refine",
            "access",
            "request",
            "streams",
            "instances",
            "memory",
        ],
        "mixed" => &[
            "operations",
            "insert",
            "delete",
            "update",
            "query",
            "area",
            "seed",
        ],
        _ => &[],
    }
}

fn present(w: &RawWorkload) -> Vec<(&'static str, Range<usize>)> {
    let mut v = Vec::new();
    macro_rules! p {
        ($($f:ident),*) => {$(
            if let Some(x) = &w.$f { v.push((stringify!($f), x.span())); }
        )*};
    }
    p!(
        area,
        queries,
        aspect,
        windows,
        seed,
        predicate,
        refine,
        k,
        place,
        operations,
        insert,
        delete,
        update,
        query,
        method,
        fill,
        access,
        request,
        streams,
        instances,
        memory,
        final_flush
    );
    v
}

pub(super) fn workloads(src: &Src, raw: &RawSpec) -> Result<Vec<Workload>> {
    let Some(list) = &raw.workload else {
        return Err(src.at(
            &raw.name,
            "workload",
            "the spec has no [[workload]]; the first must be kind = \"construction\"",
        ));
    };
    let mut out: Vec<Workload> = Vec::new();
    for (i, w) in list.get_ref().iter().enumerate() {
        let r = w.get_ref();
        let kind = r.kind.get_ref().as_str();
        let key = |k: &str| format!("workload[{i}].{k}");
        if !["construction", "bulk", "range", "point", "knn", "mixed"].contains(&kind) {
            return Err(src.at(
                &r.kind,
                &key("kind"),
                format!(
                    "unknown workload '{kind}'; use construction, bulk, range, point, knn or mixed"
                ),
            ));
        }
        for (k, span) in present(r) {
            if !allowed(kind).contains(&k) {
                return Err(src.err(
                    span,
                    &key(k),
                    format!("does not apply to kind = \"{kind}\""),
                ));
            }
        }
        if (i == 0) != (kind == "construction" || kind == "bulk") {
            return Err(src.at(
                &r.kind,
                &key("kind"),
                "the first workload, and only the first, must be kind = \"construction\" or \"bulk\" (queries run on the index it builds)",
            ));
        }
        let seed = src.seed(&r.seed, &key("seed"), 1 + i as u64)?;
        let queries = match &r.queries {
            Some(q) => Some(src.count(q, &key("queries"), 1)?),
            None => None,
        };
        let predicate = match &r.predicate {
            Some(p) => src.wrap(p, &key("predicate"), Predicate::parse(p.get_ref()))?,
            None => Predicate::Intersects,
        };
        let refine = r.refine.as_ref().map(|v| *v.get_ref()).unwrap_or(true);
        let place = match &r.place {
            None => Placement::Objects,
            Some(p) => match p.get_ref().as_str() {
                "objects" => Placement::Objects,
                "uniform" => Placement::Uniform,
                o => {
                    return Err(src.at(
                        p,
                        &key("place"),
                        format!("unknown placement '{o}'; use objects or uniform"),
                    ))
                }
            },
        };
        let area = |default: Option<f64>| -> Result<f64> {
            match &r.area {
                Some(a) => {
                    let v = src.percent(a, &key("area"))?;
                    if v <= 0.0 {
                        return Err(src.at(a, &key("area"), "must be more than 0%"));
                    }
                    Ok(v)
                }
                None => default.ok_or_else(|| {
                    src.at(&r.kind, &key("area"), "is required (e.g. area = \"0.01%\")")
                }),
            }
        };
        // `k = [1, 10, 100]`: one kNN workload per k, on the same queries.
        let ks = knn_ks(src, r, &key)?;
        let wl = match kind {
            "construction" => Workload::Construction {
                name: String::new(),
                final_flush: r.final_flush.as_ref().is_none_or(|f| *f.get_ref()),
            },
            "bulk" => {
                let method = match &r.method {
                    Some(m) => src.wrap(m, &key("method"), m.get_ref().parse::<BulkMethod>())?,
                    None => {
                        return Err(src.at(
                            &r.kind,
                            &key("method"),
                            "is required (str, hilbert or omt)",
                        ))
                    }
                };
                let fill = match &r.fill {
                    Some(f) => src.percent(f, &key("fill"))?,
                    None => BulkOptions::DEFAULT_FILL,
                };
                if fill <= 0.0 {
                    let f = r.fill.as_ref().expect("a fill of 0 was written");
                    return Err(src.at(f, &key("fill"), "must be more than 0%"));
                }
                Workload::Bulk {
                    name: String::new(),
                    bulk: BulkOptions { method, fill },
                    final_flush: r.final_flush.as_ref().is_none_or(|f| *f.get_ref()),
                }
            }
            "range" => {
                let windows = match &r.windows {
                    Some(f) => {
                        for (k, v) in [
                            ("area", r.area.is_some()),
                            ("queries", queries.is_some()),
                            ("aspect", r.aspect.is_some()),
                            ("seed", r.seed.is_some()),
                        ] {
                            if v {
                                return Err(src.at(
                                    f,
                                    &key(k),
                                    "does not apply to windows read from a file",
                                ));
                            }
                        }
                        let path = src.path(f.get_ref());
                        if !path.is_file() {
                            return Err(src.at(
                                f,
                                &key("windows"),
                                format!("{} does not exist or is not a file", path.display()),
                            ));
                        }
                        Windows::File { path }
                    }
                    None => {
                        let aspect = match &r.aspect {
                            Some(a) if !(a.get_ref().is_finite() && *a.get_ref() > 0.0) => {
                                return Err(src.at(
                                    a,
                                    &key("aspect"),
                                    "must be a positive number (width / height)",
                                ))
                            }
                            Some(a) => *a.get_ref(),
                            None => 1.0,
                        };
                        Windows::Generated {
                            area: area(None)?,
                            queries: queries.unwrap_or(100),
                            aspect,
                            seed,
                        }
                    }
                };
                Workload::Range {
                    name: String::new(),
                    windows,
                    predicate,
                    refine,
                }
            }
            "point" => Workload::Point {
                name: String::new(),
                queries: queries.unwrap_or(100),
                place,
                seed,
                predicate,
                refine,
            },
            "knn" => Workload::Knn {
                name: String::new(),
                k: ks[0],
                queries: queries.unwrap_or(100),
                place,
                seed,
                refine,
                scan: scan_access(src, r, &key)?,
                concurrency: concurrency(src, r, &key)?,
            },
            _ => {
                let mut shares = [0.0; 4];
                for (j, (v, k)) in [
                    (&r.insert, "insert"),
                    (&r.delete, "delete"),
                    (&r.update, "update"),
                    (&r.query, "query"),
                ]
                .into_iter()
                .enumerate()
                {
                    if let Some(v) = v {
                        shares[j] = src.percent(v, &key(k))?;
                    }
                }
                let total: f64 = shares.iter().sum();
                if (total - 1.0).abs() > 1e-6 {
                    return Err(src.at(
                        w,
                        &key("insert"),
                        format!(
                            "insert + delete + update + query must be 100%, not {}%",
                            total * 100.0
                        ),
                    ));
                }
                Workload::Mixed {
                    name: String::new(),
                    operations: match &r.operations {
                        Some(o) => src.count(o, &key("operations"), 1)?,
                        None => 1000,
                    },
                    shares,
                    area: area(Some(0.0001))?,
                    seed,
                }
            }
        };
        let variants: Vec<Workload> = match &wl {
            Workload::Knn { .. } if ks.len() > 1 => ks.iter().map(|&k| with_k(&wl, k)).collect(),
            _ => vec![wl],
        };
        for wl in variants {
            let name = match &r.name {
                Some(n) if n.get_ref().trim().is_empty() => {
                    return Err(src.at(n, &key("name"), "must not be empty"))
                }
                Some(n) if ks.len() > 1 => match &wl {
                    Workload::Knn { k, .. } => format!("{} k={k}", n.get_ref().trim()),
                    _ => n.get_ref().trim().to_string(),
                },
                Some(n) => n.get_ref().trim().to_string(),
                None => default_name(&wl),
            };
            if let Some(dup) = out.iter().find(|o| o.name() == name) {
                let span = r.name.as_ref().map(|n| n.span()).unwrap_or(w.span());
                return Err(src.err(
                    span,
                    &key("name"),
                    format!(
                        "'{}' names two workloads; give each a distinct name",
                        dup.name()
                    ),
                ));
            }
            out.push(with_name(wl, name));
        }
    }
    Ok(out)
}

/// `access` and `request` of a kNN workload: `None` for the index, the scan's request
/// size in bytes for `access = "scan"` (default 1 MB).
fn scan_access(src: &Src, r: &RawWorkload, key: &dyn Fn(&str) -> String) -> Result<Option<usize>> {
    let scan = match &r.access {
        None => false,
        Some(a) => match a.get_ref().as_str() {
            "index" => false,
            "scan" => true,
            o => {
                return Err(src.at(
                    a,
                    &key("access"),
                    format!("unknown access '{o}'; use index or scan"),
                ))
            }
        },
    };
    match (&r.request, scan) {
        (Some(q), false) => Err(src.at(
            q,
            &key("request"),
            "applies to access = \"scan\" only (the scan's request size)",
        )),
        (None, false) => Ok(None),
        (None, true) => Ok(Some(DEFAULT_SCAN_REQUEST)),
        (Some(q), true) => {
            let b = src.wrap(q, &key("request"), parse_size("request", &q.get_ref().0))?;
            if b == 0 || b > 1 << 30 {
                return Err(src.at(q, &key("request"), "must be between 1 byte and 1GB"));
            }
            Ok(Some(b as usize))
        }
    }
}

/// Largest k a kNN workload accepts.
const MAX_K: i64 = 100_000;

/// `k` of a kNN workload: one value or a list (one workload each), default 10.
fn knn_ks(src: &Src, r: &RawWorkload, key: &dyn Fn(&str) -> String) -> Result<Vec<usize>> {
    let Some(list) = &r.k else {
        return Ok(vec![10]);
    };
    let v = &list.get_ref().0;
    if v.is_empty() {
        return Err(src.at(list, &key("k"), "needs at least one value"));
    }
    let mut ks = Vec::new();
    for &k in v {
        if !(1..=MAX_K).contains(&k) {
            return Err(src.at(list, &key("k"), format!("{k} is not between 1 and {MAX_K}")));
        }
        if ks.contains(&(k as usize)) {
            return Err(src.at(list, &key("k"), format!("{k} is listed twice")));
        }
        ks.push(k as usize);
    }
    Ok(ks)
}

/// A copy of the kNN workload `w` with `k` neighbours.
fn with_k(w: &Workload, k: usize) -> Workload {
    let mut w = w.clone();
    if let Workload::Knn { k: old, .. } = &mut w {
        *old = k;
    }
    w
}

/// The scan's request size when `request` is not given.
pub(super) const DEFAULT_SCAN_REQUEST: usize = 1 << 20;

/// Most streams a simulation accepts.
const MAX_STREAMS: i64 = 10_000;

/// `streams`, `instances` and `memory` of a kNN workload.
fn concurrency(
    src: &Src,
    r: &RawWorkload,
    key: &dyn Fn(&str) -> String,
) -> Result<Option<Concurrency>> {
    let Some(list) = &r.streams else {
        for (k, span) in [
            ("instances", r.instances.as_ref().map(|v| v.span())),
            ("memory", r.memory.as_ref().map(|v| v.span())),
        ] {
            if let Some(span) = span {
                return Err(src.err(span, &key(k), "applies only with streams = N"));
            }
        }
        return Ok(None);
    };
    let v = &list.get_ref().0;
    if v.is_empty() {
        return Err(src.at(list, &key("streams"), "needs at least one value"));
    }
    let mut streams = Vec::new();
    for &n in v {
        if !(1..=MAX_STREAMS).contains(&n) {
            return Err(src.at(
                list,
                &key("streams"),
                format!("{n} is not between 1 and {MAX_STREAMS}"),
            ));
        }
        if streams.contains(&(n as usize)) {
            return Err(src.at(list, &key("streams"), format!("{n} is listed twice")));
        }
        streams.push(n as usize);
    }
    let instances = match &r.instances {
        None => Instances::Own,
        Some(i) => match i.get_ref().as_str() {
            "own" => Instances::Own,
            "shared" => Instances::Shared,
            o => {
                return Err(src.at(
                    i,
                    &key("instances"),
                    format!("unknown instances '{o}'; use own or shared"),
                ))
            }
        },
    };
    let memory = match &r.memory {
        None => 0,
        Some(m) => src.wrap(m, &key("memory"), parse_size("memory", &m.get_ref().0))?,
    };
    Ok(Some(Concurrency {
        streams,
        instances,
        memory,
    }))
}

fn pct(f: f64) -> String {
    let p = f * 100.0;
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn default_name(w: &Workload) -> String {
    match w {
        Workload::Construction { .. } => "construction".into(),
        Workload::Bulk { bulk, .. } => format!("bulk {} {}", bulk.method.name(), pct(bulk.fill)),
        Workload::Range {
            windows: Windows::Generated { area, .. },
            ..
        } => format!("range {}", pct(*area)),
        Workload::Range {
            windows: Windows::File { path },
            ..
        } => format!(
            "range {}",
            path.file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_default()
        ),
        Workload::Point { .. } => "point".into(),
        Workload::Knn { k, scan: None, .. } => format!("knn k={k}"),
        Workload::Knn { k, .. } => format!("scan k={k}"),
        Workload::Mixed { .. } => "mixed".into(),
    }
}

fn with_name(mut w: Workload, n: String) -> Workload {
    match &mut w {
        Workload::Construction { name, .. }
        | Workload::Bulk { name, .. }
        | Workload::Range { name, .. }
        | Workload::Point { name, .. }
        | Workload::Knn { name, .. }
        | Workload::Mixed { name, .. } => *name = n,
    }
    w
}
