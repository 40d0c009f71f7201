//! The `spidx` command: a testbed for spatial indices on real and simulated devices.

mod dataset;

use clap::Parser;

/// Spatial indices on real and simulated storage devices.
#[derive(Debug, Parser)]
#[command(name = "spidx", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Generate, import and inspect datasets.
    #[command(subcommand)]
    Dataset(dataset::DatasetCmd),
}

fn main() {
    let result = match Cli::parse().command {
        Command::Dataset(cmd) => dataset::run(cmd),
    };
    if let Err(e) = result {
        eprintln!("error: {}", message(&e));
        std::process::exit(1);
    }
}

/// The error and its causes on one line, without a backtrace, leaving out causes whose
/// text the message already contains (library errors often embed their source).
fn message(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !text.contains(&c) {
            text = format!("{text}: {c}");
        }
    }
    text
}
