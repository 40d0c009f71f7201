//! A throw-away PostgreSQL server for tests and benchmarks of the PostgreSQL results
//! backend: a new data directory under the system's temporary directory (`initdb`), a
//! server on a free port of 127.0.0.1 (`pg_ctl start`), stopped and deleted when dropped.
//!
//! The server binaries are looked up on `PATH`, then in Debian's
//! `/usr/lib/postgresql/VERSION/bin` (the newest version). PostgreSQL refuses to run as
//! root: as root, the server runs as user `nobody` (through `runuser`), which owns the data
//! directory. When no server binary exists, [`TempPostgres::start`] returns `None` so a
//! test can say it was skipped — unless `SPIDX_REQUIRE_POSTGRES` is set (as CI sets it),
//! where a missing server is an error.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{Error, Result};

/// A running temporary server (stopped and deleted on drop).
pub struct TempPostgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    as_nobody: bool,
}

/// Set to require a server: tests fail instead of skipping.
pub const REQUIRE_VAR: &str = "SPIDX_REQUIRE_POSTGRES";

pub use crate::test_support::{skip, SKIP_LOG_VAR};

/// Why a test of the PostgreSQL backend skips when [`TempPostgres::start`] finds no server.
pub const NO_SERVER: &str =
    "no PostgreSQL server binary (initdb) found and SPIDX_REQUIRE_POSTGRES is unset";

static SERIAL: AtomicU32 = AtomicU32::new(0);

/// The directory holding `initdb`, `pg_ctl` and `postgres`, if any.
pub(crate) fn server_binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

fn failed(what: &str, out: &std::process::Output) -> Error {
    Error::invalid(
        "temporary PostgreSQL server",
        format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn io(p: &Path, e: std::io::Error) -> Error {
    Error::io(p, e)
}

impl TempPostgres {
    /// Starts a server, or `Ok(None)` when no server binary is installed and
    /// `SPIDX_REQUIRE_POSTGRES` is not set (the caller prints that it skips).
    pub fn start() -> Result<Option<TempPostgres>> {
        let Some(bin) = server_binaries() else {
            if std::env::var_os(REQUIRE_VAR).is_some() {
                return Err(Error::invalid(
                    "temporary PostgreSQL server",
                    format!("{REQUIRE_VAR} is set but no initdb was found on PATH or in /usr/lib/postgresql/*/bin (install Debian's postgresql package)"),
                ));
            }
            return Ok(None);
        };
        let dir = std::env::temp_dir().join(format!(
            "spidx-pg-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        // SAFETY: geteuid has no preconditions.
        let as_nobody = unsafe { libc::geteuid() } == 0;
        let mut server = TempPostgres {
            dir,
            bin,
            port: 0,
            as_nobody,
        };
        if as_nobody {
            server.give_to_nobody()?;
        }
        let data = server.dir.join("data");
        let out = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "spidx", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .map_err(|e| io(&server.bin, e))?;
        if !out.status.success() {
            return Err(failed("initdb", &out));
        }
        // A free port now; another process may take it before the server binds it, so try
        // a few.
        let mut last = None;
        for _ in 0..5 {
            server.port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| io(&server.dir, e))?
                .port();
            let opts = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                server.port,
                server.dir.display()
            );
            let out = server
                .command("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-o", &opts, "-l"])
                .arg(server.dir.join("server.log"))
                .args(["-w", "-t", "60", "start"])
                .output()
                .map_err(|e| io(&server.bin, e))?;
            if out.status.success() {
                return Ok(Some(server));
            }
            last = Some(failed("pg_ctl start", &out));
        }
        Err(last.expect("tried"))
    }

    /// A command running server binary `name` (as `nobody` when this process is root).
    fn command(&self, name: &str) -> Command {
        if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(self.bin.join(name));
            c
        } else {
            Command::new(self.bin.join(name))
        }
    }

    fn give_to_nobody(&self) -> Result<()> {
        let out = Command::new("chown")
            .args(["-R", "nobody"])
            .arg(&self.dir)
            .output()
            .map_err(|e| io(&self.dir, e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(failed("chown nobody", &out))
        }
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db` on this server (user `spidx`, no password).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://spidx@127.0.0.1:{}/{db}", self.port)
    }

    /// Adds login role `role` (a superuser of this throw-away server) that must give
    /// `password` over TCP, as a production server's users must: its `pg_hba.conf` line
    /// comes before the trusting ones, and the server reloads its configuration.
    pub fn add_password_role(&self, role: &str, password: &str) -> Result<()> {
        let err = |e: String| Error::invalid("temporary PostgreSQL server", e);
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .map_err(|e| err(e.to_string()))?;
        c.batch_execute(&format!(
            "SET password_encryption = 'scram-sha-256'; \
             CREATE ROLE \"{role}\" LOGIN SUPERUSER PASSWORD '{password}'"
        ))
        .map_err(|e| err(e.to_string()))?;
        let hba = self.dir.join("data").join("pg_hba.conf");
        let old = std::fs::read_to_string(&hba).map_err(|e| io(&hba, e))?;
        let line = format!("host all \"{role}\" 127.0.0.1/32 scram-sha-256\n");
        std::fs::write(&hba, line + &old).map_err(|e| io(&hba, e))?;
        let out = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("reload")
            .output()
            .map_err(|e| io(&self.bin, e))?;
        if !out.status.success() {
            return Err(failed("pg_ctl reload", &out));
        }
        // The reload is asynchronous: wait until the server asks the role for a password.
        let without = format!("postgres://{role}@127.0.0.1:{}/postgres", self.port);
        for _ in 0..100 {
            if postgres::Client::connect(&without, postgres::NoTls).is_err() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Err(err(format!(
            "role {role} still logs in without a password after the reload"
        )))
    }

    /// Creates database `name` and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String> {
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .map_err(|e| Error::invalid("temporary PostgreSQL server", e.to_string()))?;
        c.batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .map_err(|e| Error::invalid("temporary PostgreSQL server", e.to_string()))?;
        Ok(self.url(name))
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
