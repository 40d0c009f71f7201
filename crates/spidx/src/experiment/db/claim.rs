//! Claiming runs, so that several `spidx run --resume` processes on one results database
//! split the matrix between them instead of each running all of it.
//!
//! A process claims the next run inside one transaction that the claimers of one
//! experiment pass through one at a time — SQLite: `BEGIN IMMEDIATE` (one writer at a
//! time); PostgreSQL: a row lock on the experiment's row (`SELECT … FOR UPDATE`), so
//! workers on many machines claim in turn while their runs and results go on in parallel.
//! Inside it, the process reads which runs are finished or held, and inserts its own
//! `running` row carrying a *lease* (`lease_until`, Unix seconds) and its identity
//! (`owner`: host, process id and process start time). While the run goes on, a
//! [`Heartbeat`] thread renews the lease. A `running` row is held while its lease lasts and
//! its owner is not known to be gone: on the same host a dead owner is recognised at once
//! (no process with that id and start time), on another host when the lease runs out. Such
//! an abandoned row is marked `failed` and the run is claimed again, so `--resume` right
//! after a `kill -9` redoes the interrupted run. Runs that failed since this process
//! started (here or in a concurrent process) are not retried by it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::backend::{Conn, DbResult, Dialect, Param};
use super::{connect, insert_run, Invocation, ResultsDb};
use crate::experiment::matrix::RunConfig;
use crate::Result;

/// How long a claim holds without renewal (a [`Heartbeat`] renews it every 10 s).
pub const LEASE: Duration = Duration::from_secs(60);

const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Seconds since the Unix epoch.
fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// When a lease taken now ends.
pub(super) fn lease_end() -> f64 {
    now() + LEASE.as_secs_f64()
}

/// The process holding a run: `host/pid/start`, where `start` is the process's start time
/// (clock ticks since boot), so a reused process id is not taken for the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner(String);

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Field 22 of `/proc/PID/stat` (the start time), read after the command name, which may
/// hold spaces and parentheses.
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

impl Owner {
    /// This process.
    pub fn this_process() -> Owner {
        let pid = std::process::id();
        Owner(format!(
            "{}/{pid}/{}",
            host(),
            start_time(pid).unwrap_or_default()
        ))
    }

    /// The text stored in `runs.owner`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the process `owner` names is known to be gone (same host, and no process
    /// with that id and start time). `false` when it cannot be told (another host).
    pub(crate) fn is_gone(owner: &str) -> bool {
        let mut parts = owner.rsplitn(3, '/');
        let (Some(start), Some(pid), Some(h)) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            return false;
        };
        if h != host() || start.is_empty() || !Path::new("/proc/self/stat").exists() {
            return false;
        }
        start_time(pid).as_deref() != Some(start)
    }
}

/// How the error of a run whose process stopped before it finished begins.
const ABANDONED: &str = "abandoned:";

/// One row of `runs` as claiming sees it.
struct Row {
    id: i64,
    key: String,
    status: String,
    lease: Option<f64>,
    owner: Option<String>,
    started: String,
    error: String,
    inputs_hash: Option<String>,
}

/// A run claimed by [`ResultsDb::claim_next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// Its position in the list of runs given.
    pub index: usize,
    /// Its row in `runs`.
    pub run_id: i64,
}

impl ResultsDb {
    /// The database's clock now, in the format of `runs.started_at`: call it before the
    /// first [`ResultsDb::claim_next`] and pass it as `since`.
    pub fn session_start(&self) -> Result<String> {
        let v = self.with(|c| c.value("SELECT @NOW", &[]))?;
        Ok(v.and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default())
    }

    /// Claims the first of `runs` (in order) that is not finished, not held by a live
    /// process, not in `skip` (runs this process already tried), and did not fail since
    /// `since`; records it as `running` with a lease for `inv.owner`. Abandoned `running`
    /// rows met on the way are marked failed. `None` when nothing is left to claim.
    pub(crate) fn claim_next(
        &mut self,
        exp: i64,
        runs: &[RunConfig],
        skip: &HashSet<String>,
        since: &str,
        inv: &Invocation,
    ) -> Result<Option<Claim>> {
        self.with(|c| {
            c.transaction(true, |c| {
                claim_in_transaction(c, exp, runs, skip, since, inv)
            })
        })
    }
}

/// [`ResultsDb::claim_next`] inside its transaction.
fn claim_in_transaction(
    c: &mut Conn,
    exp: i64,
    runs: &[RunConfig],
    skip: &HashSet<String>,
    since: &str,
    inv: &Invocation,
) -> DbResult<Option<Claim>> {
    if c.dialect() == Dialect::Postgres {
        // Claimers of this experiment wait here for each other.
        c.query(
            "SELECT id FROM experiments WHERE id = ?1 FOR UPDATE",
            &[exp.into()],
        )?;
    }
    let table = c.query(
        "SELECT id, run_key, status, lease_until, owner, started_at, coalesce(error, ''),
           inputs_hash
         FROM runs WHERE experiment_id = ?1",
        &[exp.into()],
    )?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let rows: Vec<Row> = table
        .rows
        .iter()
        .map(|r| Row {
            id: r[0].as_i64().unwrap_or_default(),
            key: text(&r[1]),
            status: text(&r[2]),
            lease: r[3].as_f64(),
            owner: r[4].as_str().map(str::to_string),
            started: text(&r[5]),
            error: text(&r[6]),
            inputs_hash: r[7].as_str().map(str::to_string),
        })
        .collect();
    let t = now();
    let mut busy: HashSet<String> = HashSet::new();
    for Row {
        id,
        key,
        status,
        lease,
        owner,
        started,
        error,
        inputs_hash,
    } in rows
    {
        match status.as_str() {
            // Done, unless it ran over other inputs than the run has now (one recorded
            // before inputs were fingerprinted counts as done).
            "finished" => {
                let now = inv.inputs.get(&key).map(|i| i.hash.as_str());
                let same = match (inputs_hash.as_deref(), now) {
                    (Some(then), Some(now)) => then == now,
                    _ => true,
                };
                if same {
                    busy.insert(key);
                }
            }
            "running" => {
                let gone = owner.as_deref().is_some_and(Owner::is_gone);
                if !gone && lease.is_some_and(|l| l > t) {
                    busy.insert(key);
                } else {
                    c.execute(
                        "UPDATE runs SET status = 'failed', lease_until = NULL,
                           finished_at = @NOW, error = ?2 WHERE id = ?1",
                        &[
                            id.into(),
                            format!(
                                "{ABANDONED} the process running it ({}) stopped before it finished",
                                owner.as_deref().unwrap_or("unknown")
                            )
                            .into(),
                        ],
                    )?;
                }
            }
            // Failed since this process started (not merely abandoned): not retried.
            _ if started.as_str() >= since && !error.starts_with(ABANDONED) => {
                busy.insert(key);
            }
            _ => {}
        }
    }
    let pick = runs
        .iter()
        .position(|r| !busy.contains(&r.key) && !skip.contains(&r.key));
    Ok(match pick {
        Some(index) => Some(Claim {
            index,
            run_id: insert_run(c, exp, &runs[index], inv)?,
        }),
        None => None,
    })
}

/// Renews the lease of one run every 10 s from a thread of its own (with its own
/// connection), until dropped.
pub struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts renewing the lease of run `run_id` of the database at `path` (a file or a
    /// PostgreSQL URL).
    pub fn start(path: &Path, run_id: i64) -> Heartbeat {
        let (tx, rx) = mpsc::channel::<()>();
        let path: PathBuf = path.to_path_buf();
        let thread = std::thread::spawn(move || {
            let Ok(mut conn) = connect(&path) else {
                return;
            };
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(RENEW_EVERY) {
                // A failed renewal (a long lock) is retried at the next beat.
                let _ = conn.execute(
                    "UPDATE runs SET lease_until = ?2 WHERE id = ?1 AND status = 'running'",
                    &[Param::Int(run_id), Param::Real(lease_end())],
                );
            }
        });
        Heartbeat {
            stop: Some(tx),
            thread: Some(thread),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{matrix, spec};

    fn runs() -> Vec<RunConfig> {
        let text = r#"
name = "claims"
[dataset]
generate = { distribution = "uniform", count = 10 }
[matrix]
index = [{ kind = "rtree" }]
page_size = ["1KB", "2KB", "4KB", "8KB", "16KB"]
[[workload]]
kind = "construction"
"#;
        let s = spec::parse(text, "claims.toml", Path::new(".")).unwrap();
        matrix::expand(&s, 2).unwrap()
    }

    fn inv(owner: &str) -> Invocation {
        Invocation {
            dataset_json: "{}".into(),
            objects: 10,
            machine_json: "{}".into(),
            owner: Owner(owner.to_string()),
            inputs: Default::default(),
        }
    }

    #[test]
    fn two_connections_split_the_runs_and_dead_owners_lose_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        let runs = runs();
        let mut a = ResultsDb::open(&p).unwrap();
        let mut b = ResultsDb::open(&p).unwrap();
        let exp = a
            .experiment("claims", "h", "{}", "", "claims.toml")
            .unwrap();
        assert_eq!(
            b.experiment("claims", "h", "{}", "", "claims.toml")
                .unwrap(),
            exp
        );
        let since = a.session_start().unwrap();
        let me = Invocation {
            owner: Owner::this_process(),
            ..inv("")
        };
        let none = HashSet::new();
        // Alternating claims by two "processes" (both alive: this one) never collide.
        let mut got = Vec::new();
        for i in 0..runs.len() {
            let db = if i % 2 == 0 { &mut a } else { &mut b };
            let c = db
                .claim_next(exp, &runs, &none, &since, &me)
                .unwrap()
                .unwrap();
            got.push(c.index);
        }
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        assert_eq!(a.claim_next(exp, &runs, &none, &since, &me).unwrap(), None);

        // A second experiment row set: a run held by a process that is gone (a pid that
        // does not exist on this host) is abandoned and claimed again at once.
        let exp2 = a
            .experiment("claims", "h2", "{}", "", "claims.toml")
            .unwrap();
        let dead = inv(&format!("{}/{}/1", host(), u32::MAX - 7));
        let c = a
            .claim_next(exp2, &runs, &none, &since, &dead)
            .unwrap()
            .unwrap();
        assert_eq!(c.index, 0);
        let c2 = b
            .claim_next(exp2, &runs, &none, &since, &me)
            .unwrap()
            .unwrap();
        assert_eq!(c2.index, 0, "the dead owner's run is claimed again");
        let status = a
            .with(|x| {
                x.value(
                    "SELECT status || ': ' || error FROM runs WHERE id = ?1",
                    &[c.run_id.into()],
                )
            })
            .unwrap()
            .unwrap()
            .as_str()
            .unwrap()
            .to_string();
        assert!(status.starts_with("failed: abandoned"), "{status}");
        // A run held by another host is held until its lease runs out.
        let remote = inv("elsewhere/12/34");
        let c3 = a
            .claim_next(exp2, &runs, &none, &since, &remote)
            .unwrap()
            .unwrap();
        assert_eq!(c3.index, 1);
        assert_eq!(
            b.claim_next(exp2, &runs, &none, &since, &me)
                .unwrap()
                .unwrap()
                .index,
            2
        );
        a.with(|x| {
            x.execute(
                "UPDATE runs SET lease_until = 0 WHERE id = ?1",
                &[c3.run_id.into()],
            )
        })
        .unwrap();
        assert_eq!(
            b.claim_next(exp2, &runs, &none, &since, &me)
                .unwrap()
                .unwrap()
                .index,
            1
        );
        // Finished and failed-in-this-session runs are not claimed; `skip` is honoured.
        a.fail_run(c2.run_id, "boom").unwrap();
        let skip: HashSet<String> = [runs[3].key.clone()].into();
        assert_eq!(
            a.claim_next(exp2, &runs, &skip, &since, &me)
                .unwrap()
                .unwrap()
                .index,
            4
        );
        assert_eq!(a.claim_next(exp2, &runs, &skip, &since, &me).unwrap(), None);
    }

    #[test]
    fn owners_name_this_process() {
        let me = Owner::this_process();
        assert!(!Owner::is_gone(me.as_str()), "{me:?}");
        assert!(Owner::is_gone(&format!("{}/{}/1", host(), u32::MAX - 7)));
        assert!(!Owner::is_gone("another-host/1/1"));
        assert!(!Owner::is_gone("garbage"));
    }
}
