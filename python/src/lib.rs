//! The native module of the `spidx` Python package (`spidx._spidx`): a thin layer over the
//! library's public API (`spidx::spatial` for index directories, `spidx::experiment` for
//! specs and results). Every option goes through the same parsers as specs and the CLI;
//! errors become Python exceptions carrying the library's message. The Python wrapper
//! (`spidx/__init__.py`) adds keyword arguments, type hints and pandas.

use std::path::PathBuf;
use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use spidx::data::{self, Dataset, ReadOptions};
use spidx::device::DeviceSpec;
use spidx::experiment::db::{export, Location};
use spidx::experiment::session::{self, Event};
use spidx::experiment::{Experiment, ResultsDb};
use spidx::geom::Rect;
use spidx::index::bulk::BulkOptions;
use spidx::index::written::{parse_index, SPEC_NAMING};
use spidx::node::{LayoutKind, Occupancy};
use spidx::query::Predicate;
use spidx::spatial::{read_manifest, Construction, IndexOptions, OpenMode, SpatialIndex};
use spidx::store::written::parse_store;
use spidx::units::{parse_percent, parse_size};
use spidx::with_dims;

/// A library error as a Python exception: invalid options and inputs are `ValueError`,
/// everything else (I/O, corruption, a full device) `RuntimeError`.
fn py_err(e: spidx::Error) -> PyErr {
    match e {
        spidx::Error::InvalidOption { .. } => PyValueError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

fn json_err(e: serde_json::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// `v` as a JSON value, inside the library's `Result`.
fn to_json(v: &impl serde::Serialize) -> spidx::Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| spidx::Error::invalid("report", e.to_string()))
}

/// The operations of an open index of any dimension (the library's index is generic over
/// the dimension; Python sees one class).
trait DynIndex: Send {
    fn dims(&self) -> usize;
    fn insert(&mut self, id: u64, lo: &[f64], hi: &[f64]) -> spidx::Result<()>;
    fn delete(&mut self, id: u64, lo: &[f64], hi: &[f64]) -> spidx::Result<bool>;
    fn select(&mut self, lo: &[f64], hi: &[f64], pred: Predicate) -> spidx::Result<Vec<u64>>;
    fn nearest(&mut self, point: &[f64], k: usize) -> spidx::Result<(Vec<u64>, Vec<f64>)>;
    fn check(&mut self) -> spidx::Result<serde_json::Value>;
    fn stats(&self) -> spidx::Result<serde_json::Value>;
    fn manifest(&self) -> spidx::Result<serde_json::Value>;
    fn flush(&mut self) -> spidx::Result<()>;
    fn read_only(&self) -> bool;
}

fn array<const D: usize>(what: &str, v: &[f64]) -> spidx::Result<[f64; D]> {
    v.try_into().map_err(|_| {
        spidx::Error::invalid(
            what,
            format!("{} coordinates for a {D}-dimensional index", v.len()),
        )
    })
}

fn rect<const D: usize>(lo: &[f64], hi: &[f64]) -> spidx::Result<Rect<D>> {
    Rect::new(array("lo", lo)?, array("hi", hi)?)
}

impl<const D: usize> DynIndex for SpatialIndex<D> {
    fn dims(&self) -> usize {
        D
    }
    fn insert(&mut self, id: u64, lo: &[f64], hi: &[f64]) -> spidx::Result<()> {
        SpatialIndex::insert(self, rect::<D>(lo, hi)?, id)
    }
    fn delete(&mut self, id: u64, lo: &[f64], hi: &[f64]) -> spidx::Result<bool> {
        SpatialIndex::delete(self, &rect::<D>(lo, hi)?, id)
    }
    fn select(&mut self, lo: &[f64], hi: &[f64], pred: Predicate) -> spidx::Result<Vec<u64>> {
        Ok(SpatialIndex::select(self, &rect::<D>(lo, hi)?, None, pred, false)?.ids)
    }
    fn nearest(&mut self, point: &[f64], k: usize) -> spidx::Result<(Vec<u64>, Vec<f64>)> {
        let r = SpatialIndex::nearest(self, array("point", point)?, k, false)?;
        Ok((r.ids, r.distances))
    }
    fn check(&mut self) -> spidx::Result<serde_json::Value> {
        let rep = self.tree_mut().check()?;
        to_json(&rep)
    }
    fn stats(&self) -> spidx::Result<serde_json::Value> {
        Ok(serde_json::json!({
            "tree": self.tree().stats(),
            "store": self.tree().store().report(),
        }))
    }
    fn manifest(&self) -> spidx::Result<serde_json::Value> {
        to_json(self.manifest())
    }
    fn flush(&mut self) -> spidx::Result<()> {
        SpatialIndex::flush(self)
    }
    fn read_only(&self) -> bool {
        self.mode() == OpenMode::ReadOnly
    }
}

/// Creates the index at `path` and constructs it over `ds` (with a final write-back and a
/// checkpoint); returns it with the construction report as JSON.
fn build_index<const D: usize>(
    path: &std::path::Path,
    opts: IndexOptions,
    ds: &Dataset,
    bulk: Option<&BulkOptions>,
) -> spidx::Result<(Box<dyn DynIndex>, String)> {
    let mut idx = SpatialIndex::<D>::create(path, opts, ds.as_geo().is_some())?;
    let how = Construction {
        bulk,
        final_flush: true,
    };
    let report = idx.construct(ds, how, &mut |_, _| Ok(()))?;
    idx.flush()?;
    Ok((Box::new(idx), to_json(&report)?.to_string()))
}

/// The index options of `spidx.create` and `spidx.build`, as the Python wrapper sends them
/// (one JSON object): the index as a `[[matrix.index]]` table, the store as a `store` entry,
/// the other options as their strings.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PyOptions {
    index: serde_json::Value,
    store: serde_json::Value,
    page_size: String,
    layout: String,
    buffer: String,
    device: String,
}

/// Parses [`PyOptions`] with the same parsers as specs and the CLI.
fn options(json: &str) -> spidx::Result<IndexOptions> {
    let o: PyOptions =
        serde_json::from_str(json).map_err(|e| spidx::Error::invalid("options", e.to_string()))?;
    let index: toml::Table = serde_json::from_value(o.index)
        .map_err(|e| spidx::Error::invalid("index", e.to_string()))?;
    let kind = parse_index(&index, &SPEC_NAMING)?;
    let store: toml::Table = serde_json::from_value(o.store)
        .map_err(|e| spidx::Error::invalid("store", e.to_string()))?;
    let store = parse_store(&store, &SPEC_NAMING)
        .map_err(|e| spidx::Error::invalid("store", e.to_string()))?;
    let device = DeviceSpec::new(&o.device).resolve()?;
    Ok(IndexOptions {
        kind,
        page_size: parse_size("page_size", &o.page_size)? as usize,
        layout: LayoutKind::parse(&o.layout)?,
        occupancy: Occupancy::default(),
        buffer: o.buffer.parse()?,
        store,
        device_name: device.name,
        device: device.config,
    })
}

/// An index directory, open for reading and writing (or read-only).
#[pyclass(module = "spidx._spidx")]
struct Index {
    /// The open index; `None` once closed. Behind a mutex: Python may call from any thread.
    inner: Mutex<Option<Box<dyn DynIndex>>>,
}

impl Index {
    fn new(inner: Box<dyn DynIndex>) -> Index {
        Index {
            inner: Mutex::new(Some(inner)),
        }
    }

    /// Runs `f` on the open index (an error once closed).
    fn with<T>(&self, f: impl FnOnce(&mut dyn DynIndex) -> spidx::Result<T>) -> PyResult<T> {
        let mut guard = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the index was poisoned by a panic"))?;
        let idx = guard
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("the index is closed"))?;
        f(idx.as_mut()).map_err(py_err)
    }
}

#[pymethods]
impl Index {
    /// Creates an index directory (see `spidx.create`).
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn create(path: PathBuf, dims: usize, options_json: &str) -> PyResult<Index> {
        let opts = options(options_json).map_err(py_err)?;
        let inner: spidx::Result<Box<dyn DynIndex>> = with_dims!(dims, D => {
            SpatialIndex::<D>::create(&path, opts, false).map(|i| Box::new(i) as Box<dyn DynIndex>)
        });
        Ok(Index::new(inner.map_err(py_err)?))
    }

    /// Builds an index directory from a dataset file by the library's construction protocol
    /// (see `spidx.build`): the same phases and figures as `spidx build`. Returns the index
    /// and the construction report as JSON.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn build(
        py: Python<'_>,
        path: PathBuf,
        data: PathBuf,
        bulk: Option<&str>,
        fill: Option<&str>,
        explode: bool,
        renumber: bool,
        options_json: &str,
    ) -> PyResult<(Index, String)> {
        let opts = options(options_json).map_err(py_err)?;
        let bulk = match (bulk, fill) {
            (None, Some(_)) => {
                return Err(PyValueError::new_err("fill applies to a bulk load only"));
            }
            (None, None) => None,
            (Some(m), f) => Some(BulkOptions {
                method: m.parse().map_err(py_err)?,
                fill: match f {
                    Some(f) => parse_percent("fill", f).map_err(py_err)?,
                    None => BulkOptions::DEFAULT_FILL,
                },
            }),
        };
        let built = py.detach(|| -> spidx::Result<(Box<dyn DynIndex>, String)> {
            let read = ReadOptions {
                explode,
                renumber,
                ..ReadOptions::default()
            };
            let ds = data::read(&data, &read)?.dataset;
            if ds.is_empty() {
                return Err(spidx::Error::invalid(
                    "data",
                    format!("{} holds no usable object", data.display()),
                ));
            }
            let existed = path.exists();
            let built =
                with_dims!(ds.dims(), D => build_index::<D>(&path, opts, &ds, bulk.as_ref()));
            if built.is_err() && !existed {
                // A failed build leaves no half-built directory behind.
                let _ = std::fs::remove_dir_all(&path);
            }
            built
        });
        let (inner, report) = built.map_err(py_err)?;
        Ok((Index::new(inner), report))
    }

    /// Opens an existing index directory (see `spidx.open`).
    #[staticmethod]
    fn open(path: PathBuf, read_only: bool) -> PyResult<Index> {
        let dims = read_manifest(&path).map_err(py_err)?.dims;
        let mode = if read_only {
            OpenMode::ReadOnly
        } else {
            OpenMode::Write
        };
        let inner: spidx::Result<Box<dyn DynIndex>> = with_dims!(dims, D => {
            SpatialIndex::<D>::open_with(&path, mode).map(|i| Box::new(i) as Box<dyn DynIndex>)
        });
        Ok(Index::new(inner.map_err(py_err)?))
    }

    #[getter]
    fn dims(&self) -> PyResult<usize> {
        self.with(|i| Ok(i.dims()))
    }

    fn insert(&self, id: u64, lo: Vec<f64>, hi: Vec<f64>) -> PyResult<()> {
        self.with(|i| i.insert(id, &lo, &hi))
    }

    fn insert_many(&self, ids: Vec<u64>, lo: Vec<Vec<f64>>, hi: Vec<Vec<f64>>) -> PyResult<()> {
        if ids.len() != lo.len() || ids.len() != hi.len() {
            return Err(PyValueError::new_err(format!(
                "{} ids, {} lower corners and {} upper corners: they must be as many",
                ids.len(),
                lo.len(),
                hi.len()
            )));
        }
        self.with(|idx| {
            for ((id, l), h) in ids.into_iter().zip(&lo).zip(&hi) {
                idx.insert(id, l, h)?;
            }
            Ok(())
        })
    }

    fn delete(&self, id: u64, lo: Vec<f64>, hi: Vec<f64>) -> PyResult<bool> {
        self.with(|i| i.delete(id, &lo, &hi))
    }

    fn query(&self, lo: Vec<f64>, hi: Vec<f64>, predicate: &str) -> PyResult<Vec<u64>> {
        let pred = Predicate::parse(predicate).map_err(py_err)?;
        self.with(|i| i.select(&lo, &hi, pred))
    }

    fn knn(&self, point: Vec<f64>, k: usize) -> PyResult<(Vec<u64>, Vec<f64>)> {
        self.with(|i| i.nearest(&point, k))
    }

    fn check_json(&self) -> PyResult<String> {
        let v = self.with(|i| i.check())?;
        serde_json::to_string(&v).map_err(json_err)
    }

    fn stats_json(&self) -> PyResult<String> {
        let v = self.with(|i| i.stats())?;
        serde_json::to_string(&v).map_err(json_err)
    }

    fn manifest_json(&self) -> PyResult<String> {
        let v = self.with(|i| i.manifest())?;
        serde_json::to_string(&v).map_err(json_err)
    }

    fn flush(&self) -> PyResult<()> {
        self.with(|i| i.flush())
    }

    /// Flushes (unless read-only) and closes the index, releasing its locks; later calls
    /// raise. Closing a closed index does nothing.
    fn close(&self) -> PyResult<()> {
        let taken = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the index was poisoned by a panic"))?
            .take();
        if let Some(mut idx) = taken {
            if !idx.read_only() {
                idx.flush().map_err(py_err)?;
            }
        }
        Ok(())
    }
}

/// Runs the experiment spec at `spec` into the results database `results` (else the
/// spec's `results` key, else `results.db`), as `spidx run` does; returns a JSON summary
/// (experiment id, and per run its id, name, status and error).
#[pyfunction]
#[pyo3(signature = (spec, results, resume))]
fn run(py: Python<'_>, spec: PathBuf, results: Option<PathBuf>, resume: bool) -> PyResult<String> {
    let summary = py.detach(|| -> spidx::Result<serde_json::Value> {
        let parsed = spidx::experiment::spec::load(&spec)?;
        let results = results
            .or(parsed.results)
            .unwrap_or_else(|| PathBuf::from("results.db"));
        let mut db = ResultsDb::open(&results)?;
        let exp = Experiment::prepare(&spec)?;
        let s = session::execute(&exp, &mut db, &spec, resume, &mut |_: Event| {})?;
        let runs: Vec<serde_json::Value> = s
            .outcomes
            .iter()
            .map(|o| {
                serde_json::json!({
                    "run_id": o.run_id,
                    "name": o.name,
                    "status": if o.result.is_ok() { "finished" } else { "failed" },
                    "error": o.result.as_ref().err(),
                })
            })
            .collect();
        Ok(serde_json::json!({
            "experiment": exp.spec.name,
            "experiment_id": s.experiment_id,
            "results": Location::of(&results).display(),
            "skipped": s.skipped,
            "runs": runs,
        }))
    });
    let v = summary.map_err(py_err)?;
    serde_json::to_string(&v).map_err(json_err)
}

/// One row per finished run and workload of the results database `path` (the table
/// `spidx results export` writes: the declared columns of `spidx::experiment::db::export`),
/// as JSON `{columns, types, rows}`.
#[pyfunction]
#[pyo3(signature = (path, experiment=None, latest=false))]
fn results_json(path: PathBuf, experiment: Option<String>, latest: bool) -> PyResult<String> {
    let db = ResultsDb::open_existing(&path).map_err(py_err)?;
    let t = export::results_table(&db, experiment.as_deref(), latest).map_err(py_err)?;
    let types: Vec<&str> = export::COLUMNS.iter().map(|c| c.ty.name()).collect();
    serde_json::to_string(
        &serde_json::json!({"columns": t.columns, "types": types, "rows": t.rows}),
    )
    .map_err(json_err)
}

/// The declared columns of the results export as JSON `[[name, type], ...]`.
#[pyfunction]
fn results_schema_json() -> PyResult<String> {
    let cols: Vec<(&str, &str)> = export::COLUMNS
        .iter()
        .map(|c| (c.name, c.ty.name()))
        .collect();
    serde_json::to_string(&cols).map_err(json_err)
}

/// The git commit this module was built from (`unknown` outside a git checkout).
#[pyfunction]
fn git_commit() -> &'static str {
    env!("SPIDX_GIT_COMMIT")
}

/// The spidx version this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _spidx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Index>()?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(results_json, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(git_commit, m)?)?;
    m.add_function(wrap_pyfunction!(results_schema_json, m)?)?;
    export::set_git_commit(env!("SPIDX_GIT_COMMIT"));
    Ok(())
}
