//! Running an experiment's runs into a results database: the loop shared by `spidx run`
//! and the Python package. It sits above the runner ([`super::runner`], one run) and the
//! results database ([`super::db`]); front ends see it only through [`Event`]s, so the
//! CLI draws progress bars and the Python package stays quiet with the same loop.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use super::db::{Finished, Heartbeat, Invocation, Owner};
use super::fingerprint::{self, RunInputs};
use super::{Experiment, Machine, Progress, ResultsDb, RunConfig, RunResult};
use crate::Result;

/// What an invocation will do with one run of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run it: it has not finished before (or `--resume` was not given).
    Run,
    /// Skip it (`--resume`): it finished before over the same inputs.
    Skip {
        /// Why (`finished as run 12, same inputs`).
        why: String,
    },
    /// Run it again (`--resume`): it finished before, over other inputs.
    Rerun {
        /// Which inputs changed and how (see [`fingerprint::changes`]).
        why: Vec<String>,
    },
}

/// What an invocation will do with every run, decided before the first one starts.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// For each of the experiment's runs (same order), its action.
    pub actions: Vec<Action>,
    /// Runs kept as done that were recorded before inputs were fingerprinted (their
    /// inputs cannot be compared).
    pub unfingerprinted: usize,
    /// Runs kept as done that another spidx build ran, by build (`0.1.0+commit`).
    pub other_builds: BTreeMap<String, usize>,
}

impl Plan {
    /// What to do with `runs` given the finished runs of the experiment (`resume`), or
    /// with nothing finished (every run runs).
    pub(crate) fn of(
        runs: &[RunConfig],
        inputs: &BTreeMap<String, RunInputs>,
        finished: &HashMap<String, Finished>,
    ) -> Plan {
        let mut plan = Plan::default();
        let build = super::db::export::recorded_version();
        for r in runs {
            let now = inputs.get(&r.key);
            let action = match (finished.get(&r.key), now) {
                (None, _) => Action::Run,
                (Some(f), Some(now)) if f.inputs_hash.as_ref().is_some_and(|h| *h != now.hash) => {
                    let old = fingerprint::RunInputs::parse(f.inputs_json.as_deref().unwrap_or(""));
                    let mut why = fingerprint::changes(&old, &now.items);
                    if why.is_empty() {
                        why.push(format!(
                            "its inputs' fingerprint changed ({} → {})",
                            short(f.inputs_hash.as_deref().unwrap_or("")),
                            short(&now.hash)
                        ));
                    }
                    Action::Rerun { why }
                }
                (Some(f), _) => {
                    let mut why = format!("finished as run {}", f.run_id);
                    if f.inputs_hash.is_none() {
                        plan.unfingerprinted += 1;
                        why.push_str(", recorded before inputs were fingerprinted");
                    } else {
                        why.push_str(", same inputs");
                    }
                    if f.version != build {
                        *plan.other_builds.entry(f.version.clone()).or_default() += 1;
                        why.push_str(&format!(", by spidx {}", f.version));
                    }
                    Action::Skip { why }
                }
            };
            plan.actions.push(action);
        }
        plan
    }

    /// Runs skipped.
    pub fn skipped(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| matches!(a, Action::Skip { .. }))
            .count()
    }

    /// The reasons of reruns, each with the number of runs it applies to, most frequent
    /// first.
    pub fn rerun_reasons(&self) -> Vec<(String, usize)> {
        let mut by: BTreeMap<String, usize> = BTreeMap::new();
        for a in &self.actions {
            if let Action::Rerun { why } = a {
                *by.entry(why.join("; ")).or_default() += 1;
            }
        }
        let mut v: Vec<(String, usize)> = by.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

fn short(h: &str) -> String {
    h.chars().take(12).collect()
}

/// Each run's inputs, by run key.
pub(crate) fn run_inputs(exp: &Experiment) -> BTreeMap<String, RunInputs> {
    exp.runs
        .iter()
        .map(|r| (r.key.clone(), exp.prints.run(r)))
        .collect()
}

/// What `spidx run --dry-run` shows: the plan of an invocation on `db` (`None`: no
/// database yet, every run runs) without running or recording anything.
pub fn plan(exp: &Experiment, db: Option<&ResultsDb>, resume: bool) -> Result<Plan> {
    let finished = match db {
        Some(db) if resume => match db.find_experiment(&exp.spec.name, &exp.hash)? {
            Some(id) => db.finished_runs(id)?,
            None => HashMap::new(),
        },
        _ => HashMap::new(),
    };
    Ok(Plan::of(&exp.runs, &run_inputs(exp), &finished))
}

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
    /// What this invocation will do with every run, before the first starts.
    Planned(&'a Plan),
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
    /// What it planned to do (with resume: which runs were skipped, which run again
    /// and why).
    pub plan: Plan,
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
    let inputs = run_inputs(exp);
    let finished = if resume {
        db.finished_runs(exp_id)?
    } else {
        HashMap::new()
    };
    let plan = Plan::of(&exp.runs, &inputs, &finished);
    on_event(Event::Planned(&plan));
    // What is left when this process starts (with resume, concurrent processes may take
    // some of it: each run is claimed in the database before it starts).
    let todo: Vec<&RunConfig> = exp
        .runs
        .iter()
        .zip(&plan.actions)
        .filter(|(_, a)| !matches!(a, Action::Skip { .. }))
        .map(|(r, _)| r)
        .collect();
    let inv = Invocation {
        dataset_json: json(&exp.spec.dataset)?,
        objects: exp.dataset.len() as u64,
        machine_json: json(&Machine::detect())?,
        owner: Owner::this_process(),
        inputs,
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
        plan,
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
