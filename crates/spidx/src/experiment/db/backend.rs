//! The two backends of the results database behind [`ResultsDb`](super::ResultsDb): one
//! SQLite file (the embedded, zero-setup default) or a PostgreSQL database
//! (`postgres://…`), which many workers on many machines append to at once.
//!
//! Statements are written once, in SQLite's dialect with `?N` parameters, `@NOW` for the
//! current UTC time as text and `@REAL` for the floating-point column type; [`Conn`]
//! translates them for PostgreSQL (`$N`, `to_char(clock_timestamp() …)`,
//! `DOUBLE PRECISION`). Parameters are [`Param`]s and rows come back as JSON values, so the
//! code above (runs, claims, merges) is the same for both.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Table;

/// Where a results database is: a file, or a PostgreSQL URL given where a path is expected
/// (`--results postgres://user@host:5432/db`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    File(PathBuf),
    /// A PostgreSQL connection URL (`postgres://` or `postgresql://`).
    Postgres(String),
}

impl Location {
    /// The location a `--results` argument names: a `postgres://` or `postgresql://` URL,
    /// otherwise a file path.
    pub fn of(path: &Path) -> Location {
        match path.to_str() {
            Some(s) if is_postgres_url(s) => Location::Postgres(s.to_string()),
            _ => Location::File(path.to_path_buf()),
        }
    }

    /// For messages: the file, or the URL with its password (if any, in the user-info part
    /// or as a `password=` parameter) replaced by `***`.
    pub fn display(&self) -> String {
        match self {
            Location::File(p) => p.display().to_string(),
            Location::Postgres(url) => redact(url),
        }
    }
}

/// Whether `s` is a PostgreSQL connection URL.
pub(crate) fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// `url` with its password (user-info part or `password=` parameter) replaced by `***`.
fn redact(url: &str) -> String {
    super::mask_secrets(url).into_owned()
}

/// The SQL dialect of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A statement parameter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}

impl From<f64> for Param {
    fn from(v: f64) -> Self {
        Param::Real(v)
    }
}

impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Param::Text(v.to_string())
    }
}

impl From<String> for Param {
    fn from(v: String) -> Self {
        Param::Text(v)
    }
}

impl From<&String> for Param {
    fn from(v: &String) -> Self {
        Param::Text(v.clone())
    }
}

impl<T: Into<Param>> From<Option<T>> for Param {
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

impl Param {
    /// A JSON value read from a row, as a parameter (to copy rows between databases).
    pub(crate) fn of_json(v: &Value) -> Param {
        match v {
            Value::Null => Param::Null,
            Value::Bool(b) => Param::Int(i64::from(*b)),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Param::Int(i),
                None => Param::Real(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Param::Text(s.clone()),
            other => Param::Text(other.to_string()),
        }
    }
}

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as V};
        Ok(ToSqlOutput::Owned(match self {
            Param::Null => V::Null,
            Param::Int(v) => V::Integer(*v),
            Param::Real(v) => V::Real(*v),
            Param::Text(s) => V::Text(s.clone()),
        }))
    }
}

type PgResult<T> = std::result::Result<T, Box<dyn std::error::Error + Sync + Send>>;

impl postgres::types::ToSql for Param {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> PgResult<postgres::types::IsNull> {
        use postgres::types::{IsNull, Type};
        match self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::FLOAT8 => (*v as f64).to_sql(ty, out),
                Type::FLOAT4 => (*v as f32).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                Type::BOOL => (*v != 0).to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Param::Real(v) => match *ty {
                Type::INT8 | Type::INT4 | Type::INT2 if v.fract() == 0.0 => {
                    Param::Int(*v as i64).to_sql(ty, out)
                }
                Type::FLOAT4 => (*v as f32).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Param::Text(s) => s.as_str().to_sql(ty, out),
        }
    }

    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// An error of the database, as text (the caller names the database).
#[derive(Debug)]
pub(crate) struct DbError(pub String);

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError(e.to_string())
    }
}

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> Self {
        // The server's message (`db error: ERROR: ...` says little without it).
        match e.as_db_error() {
            Some(d) => DbError(format!("{}: {}", d.severity(), d.message())),
            // The client's text names the kind only ("error connecting to server"); its
            // causes say what happened ("Connection refused (os error 111)").
            None => {
                let mut text = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    text.push_str(": ");
                    text.push_str(&s.to_string());
                    source = s.source();
                }
                DbError(text)
            }
        }
    }
}

/// Results of backend calls.
pub(crate) type DbResult<T> = std::result::Result<T, DbError>;

/// An open connection to either backend.
pub(crate) enum Conn {
    /// SQLite.
    Sqlite(rusqlite::Connection),
    /// PostgreSQL.
    Postgres(Box<postgres::Client>),
}

/// SQLite's `@NOW`.
const SQLITE_NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
/// PostgreSQL's `@NOW` (the same text format as SQLite's).
const PG_NOW: &str =
    "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')";

impl Conn {
    /// Connects to the PostgreSQL database at `url` (no TLS: a results server is reached
    /// on a trusted network or through a tunnel). A URL without a password takes the one
    /// in `PGPASSWORD`, as libpq's tools do, so that specs and job scripts need not carry it.
    pub(crate) fn postgres(url: &str) -> DbResult<Conn> {
        let mut config: postgres::Config = url.parse()?;
        if config.get_password().is_none() {
            if let Some(pw) = std::env::var_os("PGPASSWORD") {
                config.password(pw.as_encoded_bytes());
            }
        }
        let client = config.connect(postgres::NoTls)?;
        Ok(Conn::Postgres(Box::new(client)))
    }

    /// The connection's dialect.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    /// `sql` in this connection's dialect.
    pub(crate) fn sql<'a>(&self, sql: &'a str) -> Cow<'a, str> {
        match self.dialect() {
            Dialect::Sqlite => {
                if sql.contains('@') {
                    Cow::Owned(sql.replace("@NOW", SQLITE_NOW).replace("@REAL", "REAL"))
                } else {
                    Cow::Borrowed(sql)
                }
            }
            Dialect::Postgres => Cow::Owned(to_postgres(sql)),
        }
    }

    /// Runs one statement; returns the rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[Param]) -> DbResult<u64> {
        let sql = self.sql(sql).into_owned();
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql)?;
                Ok(st.execute(rusqlite::params_from_iter(params))? as u64)
            }
            Conn::Postgres(c) => {
                let refs = pg_params(params);
                Ok(c.execute(sql.as_str(), &refs)?)
            }
        }
    }

    /// Runs several statements without parameters.
    pub(crate) fn batch(&mut self, sql: &str) -> DbResult<()> {
        let sql = self.sql(sql).into_owned();
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch(&sql)?),
            Conn::Postgres(c) => Ok(c.batch_execute(&sql)?),
        }
    }

    /// Runs a query; its rows as JSON values.
    pub(crate) fn query(&mut self, sql: &str, params: &[Param]) -> DbResult<Table> {
        let sql = self.sql(sql).into_owned();
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql)?;
                let columns: Vec<String> =
                    st.column_names().iter().map(|c| c.to_string()).collect();
                let n = columns.len();
                let mut rows = Vec::new();
                let mut q = st.query(rusqlite::params_from_iter(params))?;
                while let Some(row) = q.next()? {
                    let mut out = Vec::with_capacity(n);
                    for i in 0..n {
                        out.push(sqlite_value(row.get_ref(i)?));
                    }
                    rows.push(out);
                }
                Ok(Table { columns, rows })
            }
            Conn::Postgres(c) => {
                let refs = pg_params(params);
                let st = c.prepare(&sql)?;
                let columns: Vec<String> =
                    st.columns().iter().map(|c| c.name().to_string()).collect();
                let rows = c
                    .query(&st, &refs)?
                    .iter()
                    .map(|r| (0..r.len()).map(|i| pg_value(r, i)).collect())
                    .collect();
                Ok(Table { columns, rows })
            }
        }
    }

    /// Runs a query and hands its rows to `f` one at a time, as JSON values, without
    /// collecting them: memory is bounded by one row whatever the size of the result (a
    /// PostgreSQL result is read from the server as it streams in). Stops at the first row
    /// `f` refuses; its error is the inner `Err`, a database error the outer one.
    pub(crate) fn query_each<E>(
        &mut self,
        sql: &str,
        params: &[Param],
        mut f: impl FnMut(&[Value]) -> std::result::Result<(), E>,
    ) -> DbResult<std::result::Result<(), E>> {
        let sql = self.sql(sql).into_owned();
        let mut out = Vec::new();
        match self {
            Conn::Sqlite(c) => {
                let mut st = c.prepare_cached(&sql)?;
                let n = st.column_count();
                let mut q = st.query(rusqlite::params_from_iter(params))?;
                while let Some(row) = q.next()? {
                    out.clear();
                    for i in 0..n {
                        out.push(sqlite_value(row.get_ref(i)?));
                    }
                    if let Err(e) = f(&out) {
                        return Ok(Err(e));
                    }
                }
            }
            Conn::Postgres(c) => {
                use postgres::fallible_iterator::FallibleIterator;
                let refs = pg_params(params);
                let st = c.prepare(&sql)?;
                let mut rows = c.query_raw(&st, refs)?;
                while let Some(row) = rows.next()? {
                    out.clear();
                    out.extend((0..row.len()).map(|i| pg_value(&row, i)));
                    if let Err(e) = f(&out) {
                        return Ok(Err(e));
                    }
                }
            }
        }
        Ok(Ok(()))
    }

    /// The first column of the first row, if any.
    pub(crate) fn value(&mut self, sql: &str, params: &[Param]) -> DbResult<Option<Value>> {
        let t = self.query(sql, params)?;
        Ok(t.rows.into_iter().next().and_then(|r| r.into_iter().next()))
    }

    /// The first column of the first row as an integer (an error when there is none).
    pub(crate) fn int(&mut self, sql: &str, params: &[Param]) -> DbResult<i64> {
        match self.value(sql, params)? {
            Some(v) => v
                .as_i64()
                .ok_or_else(|| DbError(format!("expected an integer, found {v}"))),
            None => Err(DbError("the query returned no row".into())),
        }
    }

    /// Starts a transaction. `exclusive`: SQLite takes the write lock at once (`BEGIN
    /// IMMEDIATE`, so two processes' read-then-write transactions run in turn); PostgreSQL
    /// locks rows itself where the statements say so (`FOR UPDATE`).
    pub(crate) fn begin(&mut self, exclusive: bool) -> DbResult<()> {
        match (self.dialect(), exclusive) {
            (Dialect::Sqlite, true) => self.batch("BEGIN IMMEDIATE"),
            _ => self.batch("BEGIN"),
        }
    }

    /// Commits the transaction.
    pub(crate) fn commit(&mut self) -> DbResult<()> {
        self.batch("COMMIT")
    }

    /// Rolls the transaction back (errors ignored: the connection may be gone).
    pub(crate) fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK");
    }

    /// Runs `f` in a transaction (see [`Conn::begin`]): committed when it succeeds, rolled
    /// back when it fails.
    pub(crate) fn transaction<T>(
        &mut self,
        exclusive: bool,
        f: impl FnOnce(&mut Conn) -> DbResult<T>,
    ) -> DbResult<T> {
        self.begin(exclusive)?;
        match f(self) {
            Ok(v) => {
                self.commit()?;
                Ok(v)
            }
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }

    /// The column names of `table`, in order (empty when it does not exist).
    pub(crate) fn columns(&mut self, table: &str) -> DbResult<Vec<String>> {
        let t = match self.dialect() {
            Dialect::Sqlite => self.query(
                "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
                &[table.into()],
            )?,
            Dialect::Postgres => self.query(
                "SELECT column_name::text FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name::text = ?1
                 ORDER BY ordinal_position",
                &[table.into()],
            )?,
        };
        Ok(t.rows
            .into_iter()
            .filter_map(|r| r.into_iter().next())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect())
    }

    /// The tables of the database (of the connection's schema, for PostgreSQL).
    pub(crate) fn tables(&mut self) -> DbResult<Vec<String>> {
        let t = match self.dialect() {
            Dialect::Sqlite => self.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
                &[],
            )?,
            Dialect::Postgres => self.query(
                "SELECT table_name::text FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
                 ORDER BY table_name",
                &[],
            )?,
        };
        Ok(t.rows
            .into_iter()
            .filter_map(|r| r.into_iter().next())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect())
    }
}

/// `sql` (SQLite's dialect, `?N` parameters, `@NOW`, `@REAL`) in PostgreSQL's.
fn to_postgres(sql: &str) -> String {
    let sql = sql
        .replace("@NOW", PG_NOW)
        .replace("@REAL", "DOUBLE PRECISION");
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted && chars.peek().is_some_and(|d| d.is_ascii_digit()) => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

fn pg_params(params: &[Param]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|p| p as &(dyn postgres::types::ToSql + Sync))
        .collect()
}

fn sqlite_value(v: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => v.into(),
        ValueRef::Real(v) => serde_json::Number::from_f64(v)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
        ValueRef::Blob(b) => format!("<{} bytes>", b.len()).into(),
    }
}

fn pg_value(row: &postgres::Row, i: usize) -> Value {
    use postgres::types::Type;
    let ty = row.columns()[i].type_().clone();
    let num = |f: Option<f64>| {
        f.and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number)
    };
    match ty {
        Type::INT8 => row
            .try_get::<_, Option<i64>>(i)
            .ok()
            .flatten()
            .map_or(Value::Null, Value::from),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .ok()
            .flatten()
            .map_or(Value::Null, Value::from),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .ok()
            .flatten()
            .map_or(Value::Null, Value::from),
        Type::FLOAT8 => num(row.try_get::<_, Option<f64>>(i).ok().flatten()),
        Type::FLOAT4 => num(row
            .try_get::<_, Option<f32>>(i)
            .ok()
            .flatten()
            .map(f64::from)),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .ok()
            .flatten()
            .map_or(Value::Null, Value::from),
        _ => row
            .try_get::<_, Option<String>>(i)
            .ok()
            .flatten()
            .map_or(Value::Null, Value::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_translate_to_postgres() {
        assert_eq!(
            to_postgres("SELECT ?1, '?2' FROM t WHERE a = ?12 AND b = @NOW"),
            format!("SELECT $1, '?2' FROM t WHERE a = $12 AND b = {PG_NOW}")
        );
        assert_eq!(
            to_postgres("ALTER TABLE x ADD COLUMN y @REAL"),
            "ALTER TABLE x ADD COLUMN y DOUBLE PRECISION"
        );
    }

    #[test]
    fn locations_and_redaction() {
        assert_eq!(
            Location::of(Path::new("postgres://u:secret@h:5/db")),
            Location::Postgres("postgres://u:secret@h:5/db".into())
        );
        assert_eq!(
            Location::of(Path::new("postgres://u:secret@h:5/db")).display(),
            "postgres://u:***@h:5/db"
        );
        assert_eq!(
            Location::of(Path::new("postgresql://h/db")).display(),
            "postgresql://h/db"
        );
        assert_eq!(
            Location::of(Path::new("results.db")),
            Location::File("results.db".into())
        );
    }

    #[test]
    fn sqlite_round_trips_parameters() {
        let mut c = Conn::Sqlite(rusqlite::Connection::open_in_memory().unwrap());
        c.batch("CREATE TABLE t (a INTEGER, b @REAL, c TEXT, d TEXT)")
            .unwrap();
        c.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            &[7i64.into(), 1.5.into(), "x".into(), Param::Null],
        )
        .unwrap();
        let t = c
            .query("SELECT a, b, c, d, @NOW AS now FROM t", &[])
            .unwrap();
        assert_eq!(t.columns, ["a", "b", "c", "d", "now"]);
        assert_eq!(
            t.rows[0][..4],
            [7.into(), 1.5.into(), "x".into(), Value::Null]
        );
        assert!(t.rows[0][4].as_str().unwrap().ends_with('Z'));
        assert_eq!(c.columns("t").unwrap(), ["a", "b", "c", "d"]);
        assert_eq!(c.tables().unwrap(), ["t"]);
        // Row by row: the same rows as `query`, and a refused row stops the query.
        let mut seen = Vec::new();
        let done = c
            .query_each("SELECT a, b, c, d FROM t", &[], |r| {
                seen.push(r.to_vec());
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(done, Ok(()));
        assert_eq!(seen, c.query("SELECT a, b, c, d FROM t", &[]).unwrap().rows);
        let stopped = c
            .query_each("SELECT a FROM t", &[], |_| Err("stop"))
            .unwrap();
        assert_eq!(stopped, Err("stop"));
        assert_eq!(Param::of_json(&serde_json::json!(3)), Param::Int(3));
        assert_eq!(Param::of_json(&serde_json::json!(0.5)), Param::Real(0.5));
    }
}
