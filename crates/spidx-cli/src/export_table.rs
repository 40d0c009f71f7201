//! The tables `spidx results export` writes (CSV, JSON, Parquet), with declared column
//! types: the results table is the library's declared export schema
//! ([`spidx::experiment::db::export`], shared with Python's `spidx.results()`), the metrics
//! table (long format) is declared here.

use anyhow::Result;
use spidx::experiment::db::export::{self, ColumnType};
use spidx::experiment::db::{ResultsDb, Table as Rows};

pub use spidx::experiment::db::export::{cell_text as csv_cell, option_text};

/// The columns of `spidx results export --metrics`, with their types.
pub const METRIC_COLUMNS: [(&str, ColumnType); 7] = [
    ("experiment", ColumnType::Text),
    ("run_id", ColumnType::Int),
    ("run", ColumnType::Text),
    ("workload", ColumnType::Text),
    ("name", ColumnType::Text),
    ("kind", ColumnType::Text),
    ("value", ColumnType::Real),
];

/// A table to export with the declared type of each column.
pub struct Export {
    /// Column names and types.
    pub columns: Vec<(String, ColumnType)>,
    /// The rows, each value of its column's type or null.
    pub rows: Rows,
}

/// One row per run and workload (see [`export::COLUMNS`]).
pub fn results(db: &ResultsDb, experiment: Option<&str>, latest: bool) -> Result<Export> {
    let rows = export::results_table(db, experiment, latest)?;
    Ok(Export {
        columns: export::COLUMNS
            .iter()
            .map(|c| (c.name.to_string(), c.ty))
            .collect(),
        rows,
    })
}

/// Every metric in long format (see [`METRIC_COLUMNS`]).
pub fn metrics(db: &ResultsDb, experiment: Option<&str>) -> Result<Export> {
    let mut rows = db.metrics(experiment, None)?;
    let names: Vec<&str> = METRIC_COLUMNS.iter().map(|c| c.0).collect();
    anyhow::ensure!(
        rows.columns == names,
        "the metrics table has columns {:?}, expected {names:?}",
        rows.columns
    );
    for r in &mut rows.rows {
        for (v, (_, ty)) in r.iter_mut().zip(METRIC_COLUMNS) {
            *v = export::typed(std::mem::take(v), ty);
        }
    }
    Ok(Export {
        columns: METRIC_COLUMNS
            .iter()
            .map(|(n, t)| (n.to_string(), *t))
            .collect(),
        rows,
    })
}
