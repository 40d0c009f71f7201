//! `spidx results export --format parquet`: writes a results table as one Parquet file
//! (uncompressed, one row group) for pandas, polars, DuckDB or Spark. Each column gets the
//! narrowest type holding all its values: INT64 when every value is an integer, DOUBLE when
//! every value is a number, UTF-8 strings otherwise; missing values are nulls.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde_json::Value;

/// The Parquet type chosen for a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Double,
    Text,
}

fn kind_of(rows: &[Vec<Value>], col: usize) -> Kind {
    let mut kind = Kind::Int;
    for v in rows.iter().map(|r| &r[col]) {
        match v {
            Value::Null => {}
            Value::Number(n) if n.is_i64() => {}
            Value::Number(_) => kind = Kind::Double,
            _ => return Kind::Text,
        }
    }
    kind
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Writes `columns` × `rows` to a new Parquet file at `path`.
pub fn write(path: &Path, columns: &[String], rows: &[Vec<Value>]) -> Result<()> {
    let kinds: Vec<Kind> = (0..columns.len()).map(|c| kind_of(rows, c)).collect();
    let mut fields = Vec::with_capacity(columns.len());
    for (name, kind) in columns.iter().zip(&kinds) {
        let builder = match kind {
            Kind::Int => Type::primitive_type_builder(name, PhysicalType::INT64),
            Kind::Double => Type::primitive_type_builder(name, PhysicalType::DOUBLE),
            Kind::Text => Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
                .with_logical_type(Some(LogicalType::String)),
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
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let props = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(file, schema, props)?;
    let mut group = writer.next_row_group()?;
    let mut col = 0;
    while let Some(mut cw) = group.next_column()? {
        let values = rows.iter().map(|r| &r[col]);
        let defs: Vec<i16> = values.clone().map(|v| i16::from(!v.is_null())).collect();
        let present = values.filter(|v| !v.is_null());
        match kinds[col] {
            Kind::Int => {
                let data: Vec<i64> = present.filter_map(Value::as_i64).collect();
                cw.typed::<Int64Type>()
                    .write_batch(&data, Some(&defs), None)?;
            }
            Kind::Double => {
                let data: Vec<f64> = present.filter_map(Value::as_f64).collect();
                cw.typed::<DoubleType>()
                    .write_batch(&data, Some(&defs), None)?;
            }
            Kind::Text => {
                let data: Vec<ByteArray> =
                    present.map(|v| ByteArray::from(text(v).as_str())).collect();
                cw.typed::<ByteArrayType>()
                    .write_batch(&data, Some(&defs), None)?;
            }
        }
        cw.close()?;
        col += 1;
    }
    group.close()?;
    writer.close()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use serde_json::json;

    #[test]
    fn round_trip_keeps_types_values_and_nulls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.parquet");
        let columns = vec!["run_id".to_string(), "elapsed_s".into(), "run".into()];
        let rows = vec![
            vec![json!(1), json!(0.5), json!("R-tree · 4KB")],
            vec![json!(2), Value::Null, json!("R*-tree · 4KB")],
            vec![Value::Null, json!(2), Value::Null],
        ];
        write(&path, &columns, &rows).unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), 3);
        let schema = meta.file_metadata().schema_descr();
        assert_eq!(schema.column(0).physical_type(), PhysicalType::INT64);
        assert_eq!(schema.column(1).physical_type(), PhysicalType::DOUBLE);
        assert_eq!(schema.column(2).physical_type(), PhysicalType::BYTE_ARRAY);
        let got: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert_eq!(
            got,
            vec![
                "{run_id: 1, elapsed_s: 0.5, run: \"R-tree · 4KB\"}",
                "{run_id: 2, elapsed_s: null, run: \"R*-tree · 4KB\"}",
                "{run_id: null, elapsed_s: 2.0, run: null}",
            ]
        );
    }
}
