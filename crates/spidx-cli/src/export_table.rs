//! Plain typed columns for `spidx results export` (CSV, JSON, Parquet): the options the
//! database keeps as JSON text (`store`, `occupancy`, `layout`) become one column per
//! option (`store_kind`, `store_write_buffer`, `occupancy_min_fill`, ...; a JSON string
//! becomes plain text), and columns of counts hold integers, not `4512.0`. Times (`*_s`)
//! and ratios stay floating point.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use spidx::experiment::db::Table as Rows;

/// Columns of `run_results` that hold JSON text.
const JSON_COLUMNS: [&str; 3] = ["store", "occupancy", "layout"];

/// Columns that stay floating point even when every value happens to be integral.
fn is_real(column: &str) -> bool {
    column.ends_with("_s") || column == "write_amplification" || column == "value"
}

/// `rows` with JSON option columns expanded and count columns as integers.
pub fn typed(rows: &Rows) -> Rows {
    let mut columns = Vec::new();
    // For each output column: where its value comes from.
    enum Source {
        Plain(usize),
        Option(usize, String),
    }
    let mut sources = Vec::new();
    for (i, c) in rows.columns.iter().enumerate() {
        if JSON_COLUMNS.contains(&c.as_str()) {
            let mut keys: Vec<String> = Vec::new();
            let mut plain = false;
            for r in &rows.rows {
                match parse(&r[i]) {
                    Value::Object(m) => {
                        for k in flatten(&m).into_keys() {
                            if !keys.contains(&k) {
                                keys.push(k);
                            }
                        }
                    }
                    Value::Null => {}
                    _ => plain = true,
                }
            }
            if plain || keys.is_empty() {
                columns.push(c.clone());
                sources.push(Source::Option(i, String::new()));
            }
            for k in keys {
                columns.push(format!("{c}_{k}"));
                sources.push(Source::Option(i, k));
            }
        } else {
            columns.push(c.clone());
            sources.push(Source::Plain(i));
        }
    }
    let mut out: Vec<Vec<Value>> = rows
        .rows
        .iter()
        .map(|r| {
            sources
                .iter()
                .map(|s| match s {
                    Source::Plain(i) => r[*i].clone(),
                    Source::Option(i, k) => match parse(&r[*i]) {
                        Value::Object(m) if !k.is_empty() => {
                            flatten(&m).remove(k).unwrap_or(Value::Null)
                        }
                        Value::Object(_) => Value::Null,
                        other if k.is_empty() => other,
                        _ => Value::Null,
                    },
                })
                .collect()
        })
        .collect();
    for (c, name) in columns.iter().enumerate() {
        if is_real(name) {
            continue;
        }
        let integral = out.iter().all(|r| match &r[c] {
            Value::Null => true,
            Value::Number(n) => n
                .as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9e15),
            _ => false,
        });
        if integral {
            for r in out.iter_mut() {
                if let Some(f) = r[c].as_f64() {
                    r[c] = Value::from(f as i64);
                }
            }
        }
    }
    Rows { columns, rows: out }
}

/// A JSON text cell parsed (a plain string when it is not JSON).
fn parse(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// Nested keys joined with `_`; arrays as JSON text.
fn flatten(m: &Map<String, Value>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (k, v) in m {
        match v {
            Value::Object(inner) => {
                for (k2, v2) in flatten(inner) {
                    out.insert(format!("{k}_{k2}"), v2);
                }
            }
            Value::Array(_) => {
                out.insert(k.clone(), Value::String(v.to_string()));
            }
            other => {
                out.insert(k.clone(), other.clone());
            }
        }
    }
    out
}

/// A cell as CSV text: numbers without a trailing `.0` when integral, strings unquoted,
/// nulls empty.
pub fn csv_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9e15 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// An option cell (JSON text) for people: `direct`, `kind=fast write_buffer=524288`.
pub fn option_text(v: &Value) -> String {
    match parse(v) {
        Value::Object(m) => flatten(&m)
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{k}={}", csv_cell(&v)))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => csv_cell(&other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_become_columns_and_counts_integers() {
        let rows = Rows {
            columns: vec![
                "store".into(),
                "layout".into(),
                "reads".into(),
                "elapsed_s".into(),
            ],
            rows: vec![
                vec![
                    json!(r#"{"kind":"direct"}"#),
                    json!(r#""checked""#),
                    json!(4512.0),
                    json!(2.0),
                ],
                vec![
                    json!(r#"{"kind":"fast","write_buffer":524288,"policy":{"name":"fast-star"}}"#),
                    json!(r#""seed""#),
                    json!(7.0),
                    json!(0.5),
                ],
            ],
        };
        let t = typed(&rows);
        assert_eq!(
            t.columns,
            [
                "store_kind",
                "store_policy_name",
                "store_write_buffer",
                "layout",
                "reads",
                "elapsed_s"
            ]
        );
        assert_eq!(
            t.rows[0],
            vec![
                json!("direct"),
                Value::Null,
                Value::Null,
                json!("checked"),
                json!(4512),
                json!(2.0)
            ]
        );
        assert_eq!(t.rows[1][1], json!("fast-star"));
        assert_eq!(t.rows[1][2], json!(524288));
        assert!(t.rows[0][4].is_i64());
        assert!(t.rows[0][5].is_f64(), "times stay floats");
        assert_eq!(csv_cell(&json!(4512.0)), "4512");
        assert_eq!(csv_cell(&json!(0.869)), "0.869");
        assert_eq!(
            option_text(&json!(r#"{"kind":"fast","write_buffer":524288}"#)),
            "kind=fast write_buffer=524288"
        );
    }
}
