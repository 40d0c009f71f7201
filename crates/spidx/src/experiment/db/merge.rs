//! Merging results databases (`spidx results merge A.db B.db … --out all.db`): the shards
//! of one experiment run on several machines (`spidx run --shard K/N`), each into its own
//! SQLite file, become one database as if one process had run the whole matrix.
//!
//! Rules: experiments are matched by name and spec fingerprint; an experiment name whose
//! fingerprints differ between inputs is refused (the shards ran different specs). A run is
//! identified by its experiment and run key: the first finished copy is kept and later ones
//! are counted as duplicates; a failed run is kept only when no copy of it finished;
//! runs still marked `running` are left out and counted. Everything is written in one
//! transaction: on any error the output is left as it was (a new output file is removed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use super::{db_err, schema, ResultsDb};
use crate::{Error, Result};

/// What a merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Experiments created in the output (matched ones are not counted).
    pub experiments_added: u64,
    /// Finished runs copied.
    pub finished: u64,
    /// Failed runs copied (no finished copy of them anywhere).
    pub failed: u64,
    /// Finished runs already present (in the output or an earlier input): not copied.
    pub duplicates: u64,
    /// Runs still marked `running` in an input (interrupted or in progress): not copied.
    pub unfinished: u64,
}

/// Merges `inputs` into `out` (created if missing; an existing output must be a results
/// database and is appended to under the same rules).
pub fn merge(out: &Path, inputs: &[PathBuf]) -> Result<MergeReport> {
    if inputs.is_empty() {
        return Err(Error::invalid("results merge", "no input databases given"));
    }
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let out_c = canonical(out);
    let mut seen_inputs = BTreeSet::new();
    for p in inputs {
        let c = canonical(p);
        if c == out_c {
            return Err(Error::invalid(
                "results merge",
                format!("{} is both an input and the output", p.display()),
            ));
        }
        if !seen_inputs.insert(c) {
            return Err(Error::invalid(
                "results merge",
                format!("{} is given twice", p.display()),
            ));
        }
        // Integrity and schema version of every input before anything is written.
        ResultsDb::open_existing(p)?;
    }
    check_specs_agree(inputs)?;
    let created = !out.exists();
    let result = ResultsDb::open(out).and_then(|mut db| merge_into(&mut db, inputs));
    if result.is_err() && created {
        let _ = std::fs::remove_file(out);
    }
    result
}

/// Refuses inputs in which one experiment name has different sets of spec fingerprints.
fn check_specs_agree(inputs: &[PathBuf]) -> Result<()> {
    let mut by_name: BTreeMap<String, (BTreeSet<String>, PathBuf)> = BTreeMap::new();
    for p in inputs {
        let conn = Connection::open(p).map_err(|e| db_err(p, e))?;
        let mut hashes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        {
            let mut st = conn
                .prepare("SELECT name, spec_hash FROM experiments")
                .map_err(|e| db_err(p, e))?;
            let rows = st
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .map_err(|e| db_err(p, e))?;
            for row in rows {
                let (name, hash) = row.map_err(|e| db_err(p, e))?;
                hashes.entry(name).or_default().insert(hash);
            }
        }
        for (name, set) in hashes {
            match by_name.get(&name) {
                Some((first, first_path)) if *first != set => {
                    return Err(Error::invalid(
                        "results merge",
                        format!(
                            "experiment '{name}' ran different specs: fingerprint {} in {} but {} in {}; merge only shards of the same spec",
                            join(first),
                            first_path.display(),
                            join(&set),
                            p.display()
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    by_name.insert(name, (set, p.clone()));
                }
            }
        }
    }
    Ok(())
}

fn join(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// Column names of `table`.
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let rows = st.query_map([], |r| r.get::<_, String>(1))?;
    rows.collect()
}

/// Columns of `table` present in both the output and the input, minus `except`.
fn shared_columns(
    dst: &Connection,
    src: &Connection,
    table: &str,
    except: &[&str],
) -> rusqlite::Result<Vec<String>> {
    let in_src: BTreeSet<String> = columns(src, table)?.into_iter().collect();
    Ok(columns(dst, table)?
        .into_iter()
        .filter(|c| in_src.contains(c) && !except.contains(&c.as_str()))
        .collect())
}

/// Copies the rows of `table` in `src` where `key_col = key` into `dst`, with column
/// `set_col` set to `set_to` and `key_col` left to the output (a new row id for `id`).
fn copy_rows(
    dst: &Connection,
    src: &Connection,
    table: &str,
    (key_col, key): (&str, i64),
    set_col: &str,
    set_to: i64,
) -> rusqlite::Result<usize> {
    let cols = shared_columns(dst, src, table, &[key_col, set_col])?;
    let list = cols.join(", ");
    let mut read = src.prepare(&format!("SELECT {list} FROM {table} WHERE {key_col} = ?1"))?;
    let rows: Vec<Vec<Value>> = read
        .query_map(params![key], |r| {
            (0..cols.len()).map(|i| r.get::<_, Value>(i)).collect()
        })?
        .collect::<rusqlite::Result<_>>()?;
    let marks: Vec<String> = (0..=cols.len()).map(|i| format!("?{}", i + 1)).collect();
    let mut write = dst.prepare(&format!(
        "INSERT INTO {table} ({set_col}, {list}) VALUES ({})",
        marks.join(", ")
    ))?;
    for row in &rows {
        let mut values = vec![Value::Integer(set_to)];
        values.extend(row.iter().cloned());
        write.execute(rusqlite::params_from_iter(values))?;
    }
    Ok(rows.len())
}

fn merge_into(db: &mut ResultsDb, inputs: &[PathBuf]) -> Result<MergeReport> {
    let out = db.path.clone();
    let err = |e: rusqlite::Error| db_err(&out, e);
    let mut report = MergeReport::default();
    let sources: Vec<Connection> = inputs
        .iter()
        .map(|p| {
            Connection::open_with_flags(p, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .map_err(|e| db_err(p, e))
        })
        .collect::<Result<_>>()?;
    let tx = db.conn.transaction().map_err(err)?;
    // Two passes: every finished run first, so that a failed copy of a run is kept only
    // when no input finished it.
    for pass in ["finished", "failed"] {
        for (src, input) in sources.iter().zip(inputs) {
            copy_runs(&tx, src, pass, &mut report).map_err(|e| {
                Error::invalid(
                    "results merge",
                    format!(
                        "copying from {} into {}: {e}",
                        input.display(),
                        out.display()
                    ),
                )
            })?;
        }
    }
    tx.commit().map_err(err)?;
    Ok(report)
}

/// Copies the runs of status `pass` from `src` into `dst`.
fn copy_runs(
    dst: &Connection,
    src: &Connection,
    pass: &str,
    report: &mut MergeReport,
) -> rusqlite::Result<()> {
    let runs: Vec<(i64, i64, String, String, String, String)> = {
        let mut st = src.prepare(
            "SELECT r.id, e.id, e.name, e.spec_hash, r.run_key, r.status
             FROM runs r JOIN experiments e ON e.id = r.experiment_id ORDER BY r.id",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (src_id, src_exp, name, hash, key, status) in runs {
        if status == "running" {
            if pass == "finished" {
                report.unfinished += 1;
            }
            continue;
        }
        if status != pass {
            continue;
        }
        let exp_id: Option<i64> = dst
            .query_row(
                "SELECT id FROM experiments WHERE name = ?1 AND spec_hash = ?2",
                params![name, hash],
                |r| r.get(0),
            )
            .optional()?;
        let exp_id = match exp_id {
            Some(id) => id,
            None => {
                let cols = shared_columns(dst, src, "experiments", &["id"])?;
                let list = cols.join(", ");
                let row: Vec<Value> = src.query_row(
                    &format!("SELECT {list} FROM experiments WHERE id = ?1"),
                    params![src_exp],
                    |r| (0..cols.len()).map(|i| r.get::<_, Value>(i)).collect(),
                )?;
                let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
                dst.execute(
                    &format!(
                        "INSERT INTO experiments ({list}) VALUES ({})",
                        marks.join(", ")
                    ),
                    rusqlite::params_from_iter(row),
                )?;
                report.experiments_added += 1;
                dst.last_insert_rowid()
            }
        };
        let present: Vec<String> = {
            let mut st =
                dst.prepare("SELECT status FROM runs WHERE experiment_id = ?1 AND run_key = ?2")?;
            let rows = st.query_map(params![exp_id, key], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if pass == "finished" && present.iter().any(|s| s == "finished") {
            report.duplicates += 1;
            continue;
        }
        if pass == "failed" && !present.is_empty() {
            continue;
        }
        copy_rows(dst, src, "runs", ("id", src_id), "experiment_id", exp_id)?;
        let new_id = dst.last_insert_rowid();
        copy_rows(dst, src, "results", ("run_id", src_id), "run_id", new_id)?;
        copy_rows(dst, src, "metrics", ("run_id", src_id), "run_id", new_id)?;
        if !schema::has_metric_kinds(src)? {
            schema::type_legacy_metrics(dst, Some(new_id))?;
        }
        if pass == "finished" {
            report.finished += 1;
        } else {
            report.failed += 1;
        }
    }
    Ok(())
}
