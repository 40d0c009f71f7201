//! The `spidx` command: a testbed for spatial indices on real and simulated devices.
//! Each subcommand lives in its own module; this file parses arguments and dispatches.

mod build;
mod calibrate;
mod calibrate_host;
mod check;
mod columns;
#[cfg(test)]
mod commit;
mod dataset;
mod devices;
mod export_table;
mod index_args;
mod iotest;
mod numfmt;
mod own;
mod parquet_export;
mod query;
mod recover;
mod report;
mod reproduce;
mod results;
mod results_path;
mod run;
mod store_args;
mod term;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc for every allocation of the command: the stores and the trees allocate small
/// buffers (changes, log records, pages) at every operation, and glibc's allocator was
/// 10-25 % of a build's CPU (docs/benchmarks.md). No count depends on the allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// spidx: spatial indices on real and simulated storage devices.
#[derive(Parser)]
#[command(name = "spidx", version = VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build an index by one-by-one insertion of a dataset's objects.
    Build(Box<build::BuildArgs>),
    /// Query an index: window, point, geometry or k nearest neighbours.
    Query(query::QueryArgs),
    /// Verify every invariant of an index and print its shape.
    Check(check::CheckArgs),
    /// Generate, import and inspect datasets.
    #[command(subcommand)]
    Dataset(dataset::DatasetCmd),
    /// List the device presets, or show one preset's parameters.
    Devices(devices::DevicesArgs),
    /// Fit a device model to probes of a real drive and write it as a device file.
    Calibrate(calibrate::CalibrateArgs),
    /// Probe a device with an access pattern (a small fio).
    Iotest(iotest::IotestArgs),
    /// Run an experiment spec (a matrix of index configurations, devices and workloads).
    Run(run::RunArgs),
    /// List, show and export what `spidx run` recorded.
    #[command(subcommand)]
    Results(results::ResultsCmd),
    /// Write an HTML report with charts and tables from a results database.
    Report(report::ReportArgs),
    /// Reopen an index after a crash: replay its store's log, check it, report.
    Recover(recover::RecoverArgs),
    /// The reproduction scorecard: each finding of the seeds decided from a results database.
    Reproduce(reproduce::ReproduceArgs),
}

/// `spidx --version`: the crate version and the git commit it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SPIDX_GIT_COMMIT"),
    ")"
);

fn main() -> ExitCode {
    spidx::experiment::db::export::set_git_commit(env!("SPIDX_GIT_COMMIT"));
    // Die quietly on a closed pipe (`spidx ... | head`) instead of panicking on a write.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(a) => build::run(*a),
        Command::Query(a) => query::run(a),
        Command::Check(a) => check::run(a),
        Command::Dataset(cmd) => dataset::run(cmd),
        Command::Devices(a) => devices::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Iotest(a) => iotest::run(a),
        Command::Run(a) => run::run(a),
        Command::Results(c) => results::run(c),
        Command::Report(a) => report::run(a),
        Command::Recover(a) => recover::run(a),
        Command::Reproduce(a) => reproduce::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", term::safe_lines(&message(&e)));
            if e.downcast_ref::<check::Crashed>().is_some() {
                ExitCode::from(check::EXIT_CRASHED)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The error and its causes on one line, without a backtrace, leaving out causes whose
/// text the message already contains (library errors often embed their source) and
/// leading `PATH: ` parts of a cause that the message already names, so a path is said
/// once: `reading a.fgb: No such file or directory`, not `reading a.fgb: a.fgb: No such ...`.
fn message(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let mut c = cause.to_string();
        if text.contains(&c) {
            continue;
        }
        while let Some((head, rest)) = c.split_once(": ") {
            if head.is_empty() || !text.contains(head) {
                break;
            }
            c = rest.to_string();
        }
        text = format!("{text}: {c}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::message;
    use anyhow::Context;

    #[test]
    fn a_path_is_named_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let lib = anyhow::anyhow!("nofile.fgb: {io}");
        let e = Err::<(), _>(lib).context("reading nofile.fgb").unwrap_err();
        assert_eq!(message(&e), "reading nofile.fgb: No such file or directory");
        let e = Err::<(), _>(anyhow::anyhow!("disk full"))
            .context("writing out.db")
            .unwrap_err();
        assert_eq!(message(&e), "writing out.db: disk full");
    }
}
