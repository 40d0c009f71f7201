//! `spidx results export --format parquet`: writes a results table as one Parquet file
//! (uncompressed) for pandas, polars, DuckDB or Spark. Every column has its declared type
//! ([`ColumnType`]), whatever the values: INT64 for integers, DOUBLE for reals, UTF-8
//! strings for text, INT64 TIMESTAMP(MILLIS, UTC) for timestamps; missing values are nulls.
//! So two exports of different experiments have the same schema and can be read together
//! (`pyarrow.dataset`, `pd.concat`) without a cast.
//!
//! Rows arrive one at a time ([`RowSink`]) and are written in row groups of bounded size
//! ([`GROUP_BYTES`], [`GROUP_ROWS`]): a table of any length is exported in memory bounded
//! by one group (a small table is one row group, as readers expect).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use parquet::basic::{LogicalType, Repetition, TimeUnit, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde_json::Value;
use spidx::experiment::db::export::ColumnType;

use crate::export_table::RowSink;

/// Bytes of values a row group collects before it is written (a row counts its text and
/// 16 bytes a value).
pub const GROUP_BYTES: usize = 8 << 20;
/// Rows a row group holds at most.
pub const GROUP_ROWS: usize = 65_536;

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Milliseconds since the Unix epoch of an ISO 8601 / RFC 3339 instant.
fn millis(column: &str, v: &Value) -> Result<i64> {
    let s = text(v);
    let t = chrono::DateTime::parse_from_rfc3339(&s)
        .with_context(|| format!("column {column}: '{s}' is not an RFC 3339 timestamp"))?;
    Ok(t.timestamp_millis())
}

/// A Parquet file being written, a bounded row group at a time.
pub struct ParquetSink {
    writer: SerializedFileWriter<File>,
    columns: Vec<(String, ColumnType)>,
    /// The rows of the next row group, and the bytes they hold.
    group: Vec<Vec<Value>>,
    group_bytes: usize,
    /// Row groups written.
    groups: u64,
    /// When a group is written: bytes, rows ([`GROUP_BYTES`], [`GROUP_ROWS`]).
    limits: (usize, usize),
}

impl ParquetSink {
    /// Creates a new Parquet file at `path` (an existing file is replaced only with
    /// `force`; see [`crate::own::create_out`]) for rows of `columns` (names and declared
    /// types).
    pub fn create(path: &Path, force: bool, columns: &[(String, ColumnType)]) -> Result<Self> {
        let mut fields = Vec::with_capacity(columns.len());
        for (name, kind) in columns {
            let builder = match kind {
                ColumnType::Int => Type::primitive_type_builder(name, PhysicalType::INT64),
                ColumnType::Real => Type::primitive_type_builder(name, PhysicalType::DOUBLE),
                ColumnType::Text => Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String)),
                ColumnType::Timestamp => Type::primitive_type_builder(name, PhysicalType::INT64)
                    .with_logical_type(Some(LogicalType::timestamp(true, TimeUnit::MILLIS))),
            };
            fields.push(Arc::new(
                builder.with_repetition(Repetition::OPTIONAL).build()?,
            ));
        }
        let schema = Arc::new(
            Type::group_type_builder("results")
                .with_fields(fields)
                .build()?,
        );
        let file = crate::own::create_out(path, force)?;
        let props = Arc::new(WriterProperties::builder().build());
        Ok(ParquetSink {
            writer: SerializedFileWriter::new(file, schema, props)?,
            columns: columns.to_vec(),
            group: Vec::new(),
            group_bytes: 0,
            groups: 0,
            limits: (GROUP_BYTES, GROUP_ROWS),
        })
    }

    /// Writes the collected rows as one row group.
    fn write_group(&mut self) -> Result<()> {
        let rows = std::mem::take(&mut self.group);
        self.group_bytes = 0;
        let mut group = self.writer.next_row_group()?;
        let mut col = 0;
        while let Some(mut cw) = group.next_column()? {
            let (name, kind) = &self.columns[col];
            let values = rows.iter().map(|r| &r[col]);
            let defs: Vec<i16> = values.clone().map(|v| i16::from(!v.is_null())).collect();
            let present: Vec<&Value> = values.filter(|v| !v.is_null()).collect();
            match kind {
                ColumnType::Int => {
                    let data = present
                        .iter()
                        .map(|v| match v.as_i64() {
                            Some(i) => Ok(i),
                            None => bail!("column {name}: {v} is not an integer"),
                        })
                        .collect::<Result<Vec<i64>>>()?;
                    cw.typed::<Int64Type>()
                        .write_batch(&data, Some(&defs), None)?;
                }
                ColumnType::Timestamp => {
                    let data = present
                        .iter()
                        .map(|v| millis(name, v))
                        .collect::<Result<Vec<i64>>>()?;
                    cw.typed::<Int64Type>()
                        .write_batch(&data, Some(&defs), None)?;
                }
                ColumnType::Real => {
                    let data = present
                        .iter()
                        .map(|v| match v.as_f64() {
                            Some(f) => Ok(f),
                            None => bail!("column {name}: {v} is not a number"),
                        })
                        .collect::<Result<Vec<f64>>>()?;
                    cw.typed::<DoubleType>()
                        .write_batch(&data, Some(&defs), None)?;
                }
                ColumnType::Text => {
                    let data: Vec<ByteArray> = present
                        .iter()
                        .map(|v| ByteArray::from(text(v).as_str()))
                        .collect();
                    cw.typed::<ByteArrayType>()
                        .write_batch(&data, Some(&defs), None)?;
                }
            }
            cw.close()?;
            col += 1;
        }
        group.close()?;
        self.groups += 1;
        Ok(())
    }
}

impl RowSink for ParquetSink {
    fn row(&mut self, cells: &[Value]) -> Result<()> {
        anyhow::ensure!(
            cells.len() == self.columns.len(),
            "a row of {} values for {} columns",
            cells.len(),
            self.columns.len()
        );
        self.group_bytes += cells
            .iter()
            .map(|v| 16 + v.as_str().map_or(0, str::len))
            .sum::<usize>();
        self.group.push(cells.to_vec());
        if self.group_bytes >= self.limits.0 || self.group.len() >= self.limits.1 {
            self.write_group()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        // The last rows; an empty table is one empty row group.
        if !self.group.is_empty() || self.groups == 0 {
            self.write_group()?;
        }
        self.writer.close()?;
        Ok(())
    }
}

/// Writes `columns` (names and declared types) × `rows` to a new Parquet file at `path`
/// (an existing file is replaced only with `force`; see [`crate::own::create_out`]).
#[cfg(test)]
fn write(
    path: &Path,
    force: bool,
    columns: &[(String, ColumnType)],
    rows: &[Vec<Value>],
) -> Result<()> {
    let mut sink = Box::new(ParquetSink::create(path, force, columns)?);
    for r in rows {
        sink.row(r)?;
    }
    sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;
    use serde_json::json;
    use std::fs::File;

    fn schema_of(path: &Path) -> Vec<String> {
        let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        schema
            .columns()
            .iter()
            .map(|c| {
                format!(
                    "{} {:?} {:?}",
                    c.name(),
                    c.physical_type(),
                    c.logical_type_ref()
                )
            })
            .collect()
    }

    #[test]
    fn declared_types_whatever_the_values() {
        let dir = tempfile::tempdir().unwrap();
        let columns = vec![
            ("run_id".to_string(), ColumnType::Int),
            ("occupancy".into(), ColumnType::Real),
            ("run".into(), ColumnType::Text),
            ("started_at".into(), ColumnType::Timestamp),
        ];
        let a = dir.path().join("a.parquet");
        let b = dir.path().join("b.parquet");
        write(
            &a,
            false,
            &columns,
            &[
                vec![
                    json!(1),
                    json!(1.0),
                    json!("R-tree · 4KB"),
                    json!("2026-11-23T09:50:49.098Z"),
                ],
                vec![Value::Null, Value::Null, Value::Null, Value::Null],
            ],
        )
        .unwrap();
        // Other values (a fraction, no text at all): the same schema.
        write(
            &b,
            false,
            &columns,
            &[vec![
                json!(2),
                json!(0.9),
                Value::Null,
                json!("2026-11-24T00:00:00.000Z"),
            ]],
        )
        .unwrap();
        assert_eq!(schema_of(&a), schema_of(&b));
        let reader = SerializedFileReader::new(File::open(&a).unwrap()).unwrap();
        let got: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert_eq!(
            got,
            vec![
                "{run_id: 1, occupancy: 1.0, run: \"R-tree · 4KB\", started_at: 2026-11-23 09:50:49.098 +00:00}",
                "{run_id: null, occupancy: null, run: null, started_at: null}",
            ]
        );
        // Rows beyond a group's limits go to further row groups, the same rows read back.
        let c = dir.path().join("c.parquet");
        let mut sink = Box::new(ParquetSink::create(&c, false, &columns).unwrap());
        sink.limits = (1 << 20, 3);
        let rows: Vec<Vec<Value>> = (0..7)
            .map(|i| {
                let name = if i == 4 {
                    "x".repeat(2 << 20)
                } else {
                    format!("r{i}")
                };
                vec![json!(i), json!(0.5), json!(name), Value::Null]
            })
            .collect();
        for r in &rows {
            sink.row(r).unwrap();
        }
        sink.finish().unwrap();
        let reader = SerializedFileReader::new(File::open(&c).unwrap()).unwrap();
        let sizes: Vec<i64> = (0..reader.num_row_groups())
            .map(|g| reader.metadata().row_group(g).num_rows())
            .collect();
        assert_eq!(
            sizes,
            [3, 2, 2],
            "3 rows, then 2 (the 2 MB name), then the rest"
        );
        let names: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().get_string(2).unwrap().clone())
            .collect();
        let want: Vec<String> = rows.iter().map(|r| text(&r[2])).collect();
        assert_eq!(names, want);
        assert_eq!(schema_of(&c), schema_of(&a));
        // A value that is not of its column's type is an error, not a silent change.
        let e = write(&a, true, &columns[..1], &[vec![json!(0.5)]]).unwrap_err();
        assert!(e.to_string().contains("run_id"), "{e}");
    }
}
