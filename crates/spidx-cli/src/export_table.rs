//! The tables `spidx results export` writes (CSV, JSON, Parquet), with declared column
//! types: the results table is the library's declared export schema
//! ([`spidx::experiment::db::export`], shared with Python's `spidx.results()`), the metrics
//! table (long format) is declared here.
//!
//! Rows reach the writers one at a time ([`RowSink`]): the metrics table is streamed from
//! the results database ([`ResultsDb::metrics_each`]), never collected, because its long
//! format repeats each run's name on every row and a crafted multi-megabyte name over a few
//! thousand metrics would take gigabytes. CSV and JSON write each row as it comes; Parquet
//! buffers a bounded batch per row group (see [`crate::parquet_export`]).

use std::io::Write;

use anyhow::Result;
use serde_json::Value;
use spidx::experiment::db::export::{self, ColumnType};
use spidx::experiment::db::ResultsDb;

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

/// Column names and declared types of an export.
pub type Columns = Vec<(String, ColumnType)>;

/// The columns of the results table (see [`export::COLUMNS`]).
pub fn results_columns() -> Columns {
    export::COLUMNS
        .iter()
        .map(|c| (c.name.to_string(), c.ty))
        .collect()
}

/// The columns of the metrics table (see [`METRIC_COLUMNS`]).
pub fn metric_columns() -> Columns {
    METRIC_COLUMNS
        .iter()
        .map(|(n, t)| (n.to_string(), *t))
        .collect()
}

/// Where an export's rows go, one at a time, each value of its column's declared type or
/// null.
pub trait RowSink {
    /// Writes one row.
    fn row(&mut self, cells: &[Value]) -> Result<()>;
    /// Ends the table (closing brackets, the Parquet footer) and flushes it.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// One row per run and workload (see [`export::COLUMNS`]), handed to `f` in order. The
/// table has one row per run and workload, so it is read whole.
pub fn results_each(
    db: &ResultsDb,
    experiment: Option<&str>,
    latest: bool,
    mut f: impl FnMut(&[Value]) -> Result<()>,
) -> Result<()> {
    for r in export::results_table(db, experiment, latest)?.rows {
        f(&r)?;
    }
    Ok(())
}

/// Every metric in long format (see [`METRIC_COLUMNS`]), each row typed and handed to `f`
/// as the database streams it: memory bounded by one row.
pub fn metrics_each(
    db: &ResultsDb,
    experiment: Option<&str>,
    mut f: impl FnMut(&[Value]) -> Result<()>,
) -> Result<()> {
    let mut converted = Vec::with_capacity(METRIC_COLUMNS.len());
    db.metrics_each::<anyhow::Error>(experiment, None, |r| {
        anyhow::ensure!(
            r.len() == METRIC_COLUMNS.len(),
            "the metrics table has {} columns, expected {}",
            r.len(),
            METRIC_COLUMNS.len()
        );
        // Values already of their type are written as they are (a run's name is not
        // copied for each of its metrics); others are converted.
        if r.iter()
            .zip(METRIC_COLUMNS)
            .all(|(v, (_, ty))| is_typed(v, ty))
        {
            return f(r);
        }
        converted.clear();
        converted.extend(
            r.iter()
                .zip(METRIC_COLUMNS)
                .map(|(v, (_, ty))| export::typed(v.clone(), ty)),
        );
        f(&converted)
    })
}

/// Whether `v` is what [`export::typed`] makes of it for `ty` (so it needs no conversion).
fn is_typed(v: &Value, ty: ColumnType) -> bool {
    match (ty, v) {
        (_, Value::Null) => true,
        (ColumnType::Text | ColumnType::Timestamp, Value::String(_)) => true,
        (ColumnType::Int, Value::Number(n)) => !n.is_f64() && n.as_i64().is_some(),
        (ColumnType::Real, Value::Number(n)) => n.is_f64(),
        _ => false,
    }
}

/// CSV: a header line, then each row as it comes. On a terminal text cells are escaped as
/// every other listing is, so a crafted run name cannot drive the terminal; in a file or
/// a pipe the bytes are kept.
pub struct CsvSink<W: Write> {
    w: csv::Writer<W>,
    to_terminal: bool,
}

impl<W: Write> CsvSink<W> {
    /// Starts a CSV table of `columns` on `out`.
    pub fn new(out: W, columns: &Columns, to_terminal: bool) -> Result<Self> {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(columns.iter().map(|c| &c.0))?;
        Ok(CsvSink { w, to_terminal })
    }
}

impl<W: Write> RowSink for CsvSink<W> {
    fn row(&mut self, cells: &[Value]) -> Result<()> {
        // Floats keep their decimal point (`2.0`), so a reader infers the same type for a
        // column whatever its values.
        let to_terminal = self.to_terminal;
        let cell = |v: &Value| match v {
            Value::Number(n) if n.is_f64() => n.to_string(),
            other if to_terminal => crate::term::safe(&csv_cell(other)).into_owned(),
            other => csv_cell(other),
        };
        self.w.write_record(cells.iter().map(cell))?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<()> {
        let mut out = self.w.into_inner().map_err(|e| e.into_error())?;
        out.flush()?;
        Ok(())
    }
}

/// JSON: an array of objects (column name to value), pretty-printed, each object written
/// as it comes; the same text `serde_json::to_writer_pretty` makes of the whole array.
pub struct JsonSink<W: Write> {
    out: W,
    columns: Vec<String>,
    rows: u64,
}

impl<W: Write> JsonSink<W> {
    /// Starts a JSON array of objects with `columns` on `out`.
    pub fn new(out: W, columns: &Columns) -> Self {
        JsonSink {
            out,
            columns: columns.iter().map(|c| c.0.clone()).collect(),
            rows: 0,
        }
    }
}

impl<W: Write> RowSink for JsonSink<W> {
    fn row(&mut self, cells: &[Value]) -> Result<()> {
        let object: serde_json::Map<String, Value> = self
            .columns
            .iter()
            .cloned()
            .zip(cells.iter().cloned())
            .collect();
        let text = serde_json::to_string_pretty(&object)?;
        self.out
            .write_all(if self.rows == 0 { b"[\n" } else { b",\n" })?;
        // Each line of the object one level deeper, as inside the array.
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                self.out.write_all(b"\n")?;
            }
            self.out.write_all(b"  ")?;
            self.out.write_all(line.as_bytes())?;
        }
        self.rows += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.out
            .write_all(if self.rows == 0 { b"[]\n" } else { b"\n]\n" })?;
        self.out.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows() -> Vec<Vec<Value>> {
        vec![
            vec![json!("e"), json!(1), json!("r\n\"x\"\u{1b}"), json!(2.5)],
            vec![Value::Null, json!(-3), json!(""), json!(1.0)],
        ]
    }

    fn columns() -> Columns {
        ["a", "b", "c", "d"]
            .iter()
            .zip([
                ColumnType::Text,
                ColumnType::Int,
                ColumnType::Text,
                ColumnType::Real,
            ])
            .map(|(n, t)| (n.to_string(), t))
            .collect()
    }

    /// Row by row, the same JSON text as the whole array pretty-printed at once.
    #[test]
    fn json_rows_written_one_at_a_time_equal_the_whole_array() {
        for n in 0..=2 {
            let mut out = Vec::new();
            let mut sink: Box<dyn RowSink> = Box::new(JsonSink::new(&mut out, &columns()));
            for r in &rows()[..n] {
                sink.row(r).unwrap();
            }
            sink.finish().unwrap();
            let whole = spidx::experiment::db::Table {
                columns: columns().into_iter().map(|c| c.0).collect(),
                rows: rows()[..n].to_vec(),
            };
            let mut want = serde_json::to_vec_pretty(&whole.objects()).unwrap();
            want.push(b'\n');
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }

    #[test]
    fn csv_keeps_bytes_in_a_file_and_escapes_on_a_terminal() {
        for tty in [false, true] {
            let mut out = Vec::new();
            let mut sink: Box<dyn RowSink> =
                Box::new(CsvSink::new(&mut out, &columns(), tty).unwrap());
            for r in &rows() {
                sink.row(r).unwrap();
            }
            sink.finish().unwrap();
            let text = String::from_utf8(out).unwrap();
            let name = if tty {
                "\"r\\n\"\"x\"\"\\x1b\""
            } else {
                "\"r\n\"\"x\"\"\u{1b}\""
            };
            assert_eq!(text, format!("a,b,c,d\ne,1,{name},2.5\n,-3,,1.0\n"));
        }
    }

    #[test]
    fn typed_values_need_no_conversion() {
        for (v, ty) in [
            (json!("x"), ColumnType::Text),
            (json!(3), ColumnType::Int),
            (json!(-3), ColumnType::Int),
            (json!(2.0), ColumnType::Real),
            (Value::Null, ColumnType::Real),
        ] {
            assert!(is_typed(&v, ty), "{v} {ty:?}");
            assert_eq!(export::typed(v.clone(), ty), v);
        }
        for (v, ty) in [
            (json!(3), ColumnType::Real),
            (json!(3.0), ColumnType::Int),
            (json!(3), ColumnType::Text),
            (json!("3"), ColumnType::Int),
        ] {
            assert!(!is_typed(&v, ty), "{v} {ty:?}");
        }
    }
}
