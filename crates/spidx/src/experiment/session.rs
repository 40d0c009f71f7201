//! Running an experiment's runs into a results database: the loop shared by `spidx run`
//! and the Python package. It sits above the runner ([`super::runner`], one run) and the
//! results database ([`super::db`]); front ends see it only through [`Event`]s, so the
//! CLI draws progress bars and the Python package stays quiet with the same loop.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use super::db::{Heartbeat, Invocation, Owner};
use super::{Experiment, Machine, Progress, ResultsDb, RunConfig, RunResult};
use crate::Result;

/// What happens during [`execute`], for a front end to show.
pub enum Event<'a> {
    /// A run starts: the `position`-th (from 0) of the `todo` runs this call has left.
    Started {
        /// Position among this call's runs.
        position: usize,
        /// Runs this call has to do (with resume: at most this many).
        todo: usize,
        /// The run.
        run: &'a RunConfig,
    },
    /// Progress within the current run.
    Progress(Progress<'a>),
    /// A run ended (its row is written).
    Ended(&'a Outcome),
}

/// How one run ended.
pub struct Outcome {
    /// The run's name.
    pub name: String,
    /// Its row in the results database.
    pub run_id: i64,
    /// Its figures, or the error that stopped it (recorded as failed).
    pub result: std::result::Result<RunResult, String>,
    /// Wall seconds of the run outside the runner (recording, scratch set-up).
    pub outside_s: f64,
}

/// What [`execute`] did.
pub struct Summary {
    /// The experiment's row id.
    pub experiment_id: i64,
    /// Runs skipped because they had finished before (resume).
    pub skipped: usize,
    /// Runs of this call that another process claimed and ran (resume).
    pub run_elsewhere: usize,
    /// The runs this call ran, in order.
    pub outcomes: Vec<Outcome>,
}

impl Summary {
    /// Runs that failed.
    pub fn failed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.result.is_err()).count()
    }
}

/// Runs `exp.runs` and records each in `db`, one transaction per finished run. With
/// `resume`, runs of the same experiment that finished before are skipped and each run is
/// claimed in the database before it starts (with a lease), so that several processes
/// resuming at once split the remaining runs. A failing run is recorded as failed and
/// the loop goes on; only an error of the database itself stops it.
pub fn execute(
    exp: &Experiment,
    db: &mut ResultsDb,
    spec_path: &Path,
    resume: bool,
    on_event: &mut dyn FnMut(Event),
) -> Result<Summary> {
    let spec_json = json(&exp.spec)?;
    let exp_id = db.experiment(
        &exp.spec.name,
        &exp.hash,
        &spec_json,
        &exp.spec_text,
        &spec_path.display().to_string(),
    )?;
    let done: HashSet<String> = if resume {
        db.finished_keys(exp_id)?
    } else {
        HashSet::new()
    };
    // What is left when this process starts (with resume, concurrent processes may take
    // some of it: each run is claimed in the database before it starts).
    let todo: Vec<&RunConfig> = exp.runs.iter().filter(|r| !done.contains(&r.key)).collect();
    let inv = Invocation {
        dataset_json: json(&exp.spec.dataset)?,
        objects: exp.dataset.len() as u64,
        machine_json: json(&Machine::detect())?,
        owner: Owner::this_process(),
    };
    let since = db.session_start()?;
    let mut tried: HashSet<String> = HashSet::new();
    remove_stale_scratch();
    let mut outcomes = Vec::new();
    let mut next = 0;
    for position in 0.. {
        let (run, run_id) = if resume {
            match db.claim_next(exp_id, &exp.runs, &tried, &since, &inv)? {
                Some(c) => (&exp.runs[c.index], c.run_id),
                None => break,
            }
        } else {
            let Some(run) = todo.get(next) else { break };
            next += 1;
            (*run, db.start_run(exp_id, run, &inv)?)
        };
        tried.insert(run.key.clone());
        let _lease = Heartbeat::start(db.path(), run_id);
        let t0 = Instant::now();
        on_event(Event::Started {
            position,
            todo: todo.len(),
            run,
        });
        let dir = scratch_dir(run.ordinal);
        // The runner creates the scratch directory and removes it at the end.
        let result = exp.run(run, &dir, &mut |p| on_event(Event::Progress(p)));
        let outcome = match result {
            Ok(r) => {
                let outside_s = t0.elapsed().as_secs_f64() - r.wall_s;
                db.finish_run(run_id, &r, outside_s)?;
                Outcome {
                    name: run.name.clone(),
                    run_id,
                    result: Ok(r),
                    outside_s,
                }
            }
            Err(e) => {
                let msg = e.to_string();
                db.fail_run(run_id, &msg)?;
                Outcome {
                    name: run.name.clone(),
                    run_id,
                    result: Err(msg),
                    outside_s: t0.elapsed().as_secs_f64(),
                }
            }
        };
        on_event(Event::Ended(&outcome));
        outcomes.push(outcome);
    }
    Ok(Summary {
        experiment_id: exp_id,
        skipped: exp.runs.len() - todo.len(),
        run_elsewhere: todo.len() - outcomes.len(),
        outcomes,
    })
}

/// `v` as JSON for the results database.
fn json(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| crate::Error::invalid("results record", e.to_string()))
}

/// The scratch directory of a run of this process (removed after the run).
fn scratch_dir(ordinal: usize) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("spidx-run-{}-{ordinal}", std::process::id()))
}

/// Removes the scratch directories (`spidx-run-PID-N` in the temporary directory) that
/// killed invocations left behind: those whose process no longer exists.
fn remove_stale_scratch() {
    let tmp = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = name
            .strip_prefix("spidx-run-")
            .and_then(|r| r.split_once('-'))
            .and_then(|(p, _)| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
