//! Merging results databases (`spidx results merge A.db B.db … --out all.db`): the shards
//! of one experiment run on several machines (`spidx run --shard K/N`), each into its own
//! SQLite file, become one database as if one process had run the whole matrix. Inputs and
//! output may be either backend: shard files can be merged into a shared PostgreSQL
//! database (`--out postgres://…`), or a PostgreSQL database copied into one SQLite file.
//!
//! Rules: experiments are matched by name and spec fingerprint; an experiment name whose
//! fingerprints differ between inputs is refused (the shards ran different specs). A run is
//! identified by its experiment and run key: the first finished copy is kept and later ones
//! are counted as duplicates; a failed run is kept only when no copy of it finished;
//! runs still marked `running` are left out and counted. Everything is written in one
//! transaction: on any error the output is left as it was (a new output file is removed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::backend::{Conn, DbError, DbResult, Location, Param};
use super::{schema, ResultsDb, Table};
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

/// Rows per `INSERT` when copying metrics.
const ROWS_PER_INSERT: usize = 100;

/// The same database twice: the same file, or the same URL.
fn same_key(p: &Path) -> String {
    match Location::of(p) {
        Location::File(f) => std::fs::canonicalize(&f).unwrap_or(f).display().to_string(),
        Location::Postgres(url) => url,
    }
}

/// Merges `inputs` into `out` (created if missing; an existing output must be a results
/// database and is appended to under the same rules). Each may be an SQLite file or a
/// PostgreSQL URL.
pub fn merge(out: &Path, inputs: &[PathBuf]) -> Result<MergeReport> {
    if inputs.is_empty() {
        return Err(Error::invalid("results merge", "no input databases given"));
    }
    let out_key = same_key(out);
    let mut seen_inputs = BTreeSet::new();
    let mut sources = Vec::with_capacity(inputs.len());
    for p in inputs {
        let key = same_key(p);
        let shown = Location::of(p).display();
        if key == out_key {
            return Err(Error::invalid(
                "results merge",
                format!("{shown} is both an input and the output"),
            ));
        }
        if !seen_inputs.insert(key) {
            return Err(Error::invalid(
                "results merge",
                format!("{shown} is given twice"),
            ));
        }
        // Integrity and schema version of every input before anything is written.
        sources.push(ResultsDb::open_existing(p)?);
    }
    check_specs_agree(&sources)?;
    let created = matches!(Location::of(out), Location::File(ref f) if !f.exists());
    let result = ResultsDb::open(out).and_then(|db| merge_into(&db, &sources));
    if result.is_err() && created {
        let _ = std::fs::remove_file(out);
    }
    result
}

/// Refuses inputs in which one experiment name has different sets of spec fingerprints.
fn check_specs_agree(sources: &[ResultsDb]) -> Result<()> {
    let mut by_name: BTreeMap<String, (BTreeSet<String>, String)> = BTreeMap::new();
    for src in sources {
        let t = src.with(|c| c.query("SELECT name, spec_hash FROM experiments", &[]))?;
        let mut hashes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for r in &t.rows {
            hashes.entry(text(&r[0])).or_default().insert(text(&r[1]));
        }
        for (name, set) in hashes {
            match by_name.get(&name) {
                Some((first, first_src)) if *first != set => {
                    return Err(Error::invalid(
                        "results merge",
                        format!(
                            "experiment '{name}' ran different specs: fingerprint {} in {} but {} in {}; merge only shards of the same spec",
                            join(first),
                            first_src,
                            join(&set),
                            src.location()
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    by_name.insert(name, (set, src.location()));
                }
            }
        }
    }
    Ok(())
}

fn join(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join(", ")
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn merge_into(db: &ResultsDb, sources: &[ResultsDb]) -> Result<MergeReport> {
    let mut report = MergeReport::default();
    let mut dst = db.conn.borrow_mut();
    dst.begin(false).map_err(|e| db.err(e))?;
    // Two passes: every finished run first, so that a failed copy of a run is kept only
    // when no input finished it.
    let copied = (|| -> Result<()> {
        for pass in ["finished", "failed"] {
            for src in sources {
                let mut s = src.conn.borrow_mut();
                copy_runs(&mut dst, &mut s, pass, &mut report).map_err(|e| {
                    Error::invalid(
                        "results merge",
                        format!(
                            "copying from {} into {}: {e}",
                            src.location(),
                            db.location()
                        ),
                    )
                })?;
            }
        }
        Ok(())
    })();
    match copied {
        Ok(()) => dst.commit().map_err(|e| db.err(e))?,
        Err(e) => {
            dst.rollback();
            return Err(e);
        }
    }
    Ok(report)
}

/// Columns of `table` present in both the output and the input, minus `except`.
fn shared_columns(
    dst: &mut Conn,
    src: &mut Conn,
    table: &str,
    except: &[&str],
) -> DbResult<Vec<String>> {
    let in_src: BTreeSet<String> = src.columns(table)?.into_iter().collect();
    Ok(dst
        .columns(table)?
        .into_iter()
        .filter(|c| in_src.contains(c) && !except.contains(&c.as_str()))
        .collect())
}

/// Copies the rows of `table` in `src` where `key_col = key` into `dst`, with column
/// `set_col` set to `set_to` and `key_col` left to the output (a new row id for `id`);
/// returns the new row id of the last row copied when `returning` is given.
fn copy_rows(
    dst: &mut Conn,
    src: &mut Conn,
    table: &str,
    (key_col, key): (&str, i64),
    (set_col, set_to): (&str, Option<i64>),
    returning: Option<&str>,
) -> DbResult<Option<i64>> {
    let cols = shared_columns(dst, src, table, &[key_col, set_col])?;
    let list = cols.join(", ");
    let rows: Table = src.query(
        &format!("SELECT {list} FROM {table} WHERE {key_col} = ?1"),
        &[key.into()],
    )?;
    let (set_list, width) = match set_col {
        "" => (list.clone(), cols.len()),
        _ => (format!("{set_col}, {list}"), cols.len() + 1),
    };
    let ret = returning.map_or(String::new(), |r| format!(" RETURNING {r}"));
    let masked = matches!(table, "experiments" | "runs");
    let mut last = None;
    let per = if returning.is_some() {
        1
    } else {
        ROWS_PER_INSERT
    };
    for chunk in rows.rows.chunks(per) {
        let mut params = Vec::with_capacity(chunk.len() * width);
        let marks: Vec<String> = (0..chunk.len())
            .map(|j| {
                let m: Vec<String> = (1..=width).map(|i| format!("?{}", j * width + i)).collect();
                format!("({})", m.join(", "))
            })
            .collect();
        for row in chunk {
            if !set_col.is_empty() {
                params.push(Param::from(set_to));
            }
            params.extend(row.iter().map(|v| match v {
                // A database written before passwords were masked on the way in keeps
                // them in the spec's text and run errors: masked as they are copied.
                Value::String(s) if masked => Param::Text(super::mask_secrets(s).into_owned()),
                v => Param::of_json(v),
            }));
        }
        let sql = format!(
            "INSERT INTO {table} ({set_list}) VALUES {}{ret}",
            marks.join(", ")
        );
        if returning.is_some() {
            last = Some(dst.int(&sql, &params)?);
        } else {
            dst.execute(&sql, &params)?;
        }
    }
    Ok(last)
}

/// Copies the runs of status `pass` from `src` into `dst`.
fn copy_runs(dst: &mut Conn, src: &mut Conn, pass: &str, report: &mut MergeReport) -> DbResult<()> {
    let runs = src.query(
        "SELECT r.id, e.id, e.name, e.spec_hash, r.run_key, r.status
         FROM runs r JOIN experiments e ON e.id = r.experiment_id ORDER BY r.id",
        &[],
    )?;
    let src_kinds = schema::has_metric_kinds(src)?;
    for r in &runs.rows {
        let int = |v: &Value| {
            v.as_i64()
                .ok_or_else(|| DbError(format!("expected an id, found {v}")))
        };
        let (src_id, src_exp) = (int(&r[0])?, int(&r[1])?);
        let (name, hash, key, status) = (text(&r[2]), text(&r[3]), text(&r[4]), text(&r[5]));
        if status == "running" {
            if pass == "finished" {
                report.unfinished += 1;
            }
            continue;
        }
        if status != pass {
            continue;
        }
        let exp_id = match dst.value(
            "SELECT id FROM experiments WHERE name = ?1 AND spec_hash = ?2",
            &[name.as_str().into(), hash.as_str().into()],
        )? {
            Some(v) => int(&v)?,
            None => {
                report.experiments_added += 1;
                copy_rows(
                    dst,
                    src,
                    "experiments",
                    ("id", src_exp),
                    ("", None),
                    Some("id"),
                )?
                .ok_or_else(|| DbError("the experiment was not copied".into()))?
            }
        };
        let present: Vec<String> = dst
            .query(
                "SELECT status FROM runs WHERE experiment_id = ?1 AND run_key = ?2",
                &[exp_id.into(), key.as_str().into()],
            )?
            .rows
            .iter()
            .map(|r| text(&r[0]))
            .collect();
        if pass == "finished" && present.iter().any(|s| s == "finished") {
            report.duplicates += 1;
            continue;
        }
        if pass == "failed" && !present.is_empty() {
            continue;
        }
        let new_id = copy_rows(
            dst,
            src,
            "runs",
            ("id", src_id),
            ("experiment_id", Some(exp_id)),
            Some("id"),
        )?
        .ok_or_else(|| DbError("the run was not copied".into()))?;
        copy_rows(
            dst,
            src,
            "results",
            ("run_id", src_id),
            ("run_id", Some(new_id)),
            None,
        )?;
        copy_rows(
            dst,
            src,
            "metrics",
            ("run_id", src_id),
            ("run_id", Some(new_id)),
            None,
        )?;
        if !src_kinds {
            schema::type_legacy_metrics(dst, Some(new_id))?;
        }
        super::typed::fill(dst, Some(new_id))?;
        if pass == "finished" {
            report.finished += 1;
        } else {
            report.failed += 1;
        }
    }
    Ok(())
}
