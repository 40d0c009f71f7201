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

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Dataset(cmd) => dataset::run(cmd),
    }
}
