//! The C++ peers (Boost.Geometry's `rtree`, libspatialindex) and the spidx-vs-peer ratio
//! table.
//!
//! A peer is a small program of `crates/spidx-bench/peers/`, built by `scripts/build-peers`
//! into `target/peers` when its library is installed. `index_vs_libs` runs it in turns with
//! the Rust implementations (`PEER WORKDIR CONFIG REPS K IDS_OUT`, see
//! `peers/common.hpp`): it reads the workload files of the run's workload directory, prints
//! a [`RunResult`] as JSON and writes its answers in the format of [`crate::runs::read_ids`],
//! so its answers are checked against brute force like every other implementation's.
//!
//! [`ratio_table`] pairs each spidx variant with its same-capacity peer and reports, per
//! operation, the median over rounds of the per-round CPU-time ratio peer / spidx (> 1: spidx
//! faster): within one round the two ran one after the other, so a ratio compares them
//! under the same load.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::runs::{median, RunParams, RunResult};

/// A peer implementation: its name in `index_vs_libs`, its program and its configuration.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    /// Implementation name (`boost-linear100`, ...).
    pub name: &'static str,
    /// Program in the peers directory.
    pub program: &'static str,
    /// The program's CONFIG argument.
    pub config: &'static str,
    /// Built by a bulk load (compared with the bulk loads).
    pub bulk: bool,
}

/// Every peer, in the order they run. Boost.Geometry's `…102` configurations have the node
/// capacity of a spidx 4 KB `checked` page in 2-D (at most 102 entries) and spidx's default
/// minimum (51, 50 %): the same parameters as the spidx rows; its `…100` ones are Boost's
/// defaults at about that capacity (at most 100, at least 30).
pub const PEERS: [Peer; 12] = [
    peer("boost-linear102", "boost_peer", "linear102", false),
    peer("boost-quadratic102", "boost_peer", "quadratic102", false),
    peer("boost-rstar102", "boost_peer", "rstar102", false),
    peer("boost-pack102", "boost_peer", "pack102", true),
    peer("boost-linear100", "boost_peer", "linear100", false),
    peer("boost-quadratic100", "boost_peer", "quadratic100", false),
    peer("boost-rstar100", "boost_peer", "rstar100", false),
    peer("boost-pack100", "boost_peer", "pack100", true),
    peer("lsi-linear100", "lsi_peer", "linear100", false),
    peer("lsi-quadratic100", "lsi_peer", "quadratic100", false),
    peer("lsi-rstar100", "lsi_peer", "rstar100", false),
    peer("lsi-str100", "lsi_peer", "str100", true),
];

const fn peer(name: &'static str, program: &'static str, config: &'static str, bulk: bool) -> Peer {
    Peer {
        name,
        program,
        config,
        bulk,
    }
}

/// The pairs of the ratio table: a spidx implementation and the peer it is measured
/// against (same split rule or loader, same node capacity where the peer has one).
pub const PAIRS: [(&str, &str); 14] = [
    ("spidx-linear", "boost-linear102"),
    ("spidx-quadratic", "boost-quadratic102"),
    ("spidx-rstar30", "boost-rstar102"),
    ("spidx-bulk-str", "boost-pack102"),
    ("spidx-linear", "boost-linear100"),
    ("spidx-quadratic", "boost-quadratic100"),
    ("spidx-rstar30", "boost-rstar100"),
    ("spidx-bulk-str", "boost-pack100"),
    ("spidx-linear", "lsi-linear100"),
    ("spidx-quadratic", "lsi-quadratic100"),
    ("spidx-rstar30", "lsi-rstar100"),
    ("spidx-bulk-str", "lsi-str100"),
    ("spidx-rstar30", "rstar"),
    ("spidx-hilbert", "rstar"),
];

/// The peer named `name`, if it is one.
pub fn find(name: &str) -> Option<&'static Peer> {
    PEERS.iter().find(|p| p.name == name)
}

/// The default peers directory: `target/peers` beside the running binary's profile
/// directory (`target/release/index_vs_libs` → `target/peers`).
pub fn default_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.parent()?.join("peers")))
        .unwrap_or_else(|| PathBuf::from("target/peers"))
}

/// The program of `peer` in `dir`; an error saying how to build it when it is missing.
pub fn program(peer: &Peer, dir: &Path) -> Result<PathBuf> {
    let p = dir.join(peer.program);
    if !p.is_file() {
        bail!(
            "{}: {} not found (build the peers with scripts/build-peers, which needs the \
             library's headers, or pass --peers-dir)",
            peer.name,
            p.display()
        );
    }
    Ok(p)
}

/// Runs `peer` over the workload in `p.workload_dir`, writing its answers to `ids`.
pub fn spawn(peer: &Peer, dir: &Path, p: &RunParams, ids: &Path) -> Result<RunResult> {
    let exe = program(peer, dir)?;
    let work = p
        .workload_dir
        .as_deref()
        .context("a peer needs the workload's files (a workload directory)")?;
    let out = Command::new(&exe)
        .arg(work)
        .arg(peer.config)
        .arg(p.reps.max(1).to_string())
        .arg(p.k.to_string())
        .arg(ids)
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", exe.display()))?;
    if !out.status.success() {
        bail!("{} {} failed ({})", exe.display(), peer.config, out.status);
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "parsing the result of {}: {}",
            peer.name,
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// One row of the ratio table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ratio {
    /// The spidx implementation.
    pub spidx: String,
    /// Its peer.
    pub peer: String,
    /// Per round: peer build CPU / spidx build CPU.
    pub build: Vec<f64>,
    /// Per round: median window-phase CPU, peer / spidx.
    pub windows: Vec<f64>,
    /// Per round: median kNN-phase CPU, peer / spidx (empty without kNN on either side).
    pub knn: Vec<f64>,
    /// Both returned the brute-force answers in every round.
    pub answers_equal: bool,
}

/// The ratios of every pair of [`PAIRS`] whose two sides ran: `rounds[r][i]` is the
/// result of `names[i]` in round `r`, `ok[i]` whether its answers matched.
pub fn ratio_table(names: &[String], rounds: &[Vec<RunResult>], ok: &[bool]) -> Vec<Ratio> {
    let idx = |n: &str| names.iter().position(|x| x == n);
    let mut out = Vec::new();
    for (s, q) in PAIRS {
        let (Some(a), Some(b)) = (idx(s), idx(q)) else {
            continue;
        };
        let per = |f: &dyn Fn(&RunResult) -> f64| -> Vec<f64> {
            rounds
                .iter()
                .map(|r| f(&r[b]) / f(&r[a]))
                .filter(|x| x.is_finite())
                .collect()
        };
        out.push(Ratio {
            spidx: s.into(),
            peer: q.into(),
            build: per(&|r| r.insert_cpu_s),
            windows: per(&|r| median(&r.query_cpu_s)),
            knn: per(&|r| {
                if r.knn_queries > 0 {
                    median(&r.knn_cpu_s)
                } else {
                    f64::NAN
                }
            }),
            answers_equal: ok[a] && ok[b],
        });
    }
    out
}

/// `median (min–max)` of per-round ratios, or `-`.
fn cell(v: &[f64]) -> String {
    match v.len() {
        0 => "-".into(),
        1 => format!("{:.2}", v[0]),
        _ => {
            let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = v.iter().cloned().fold(0.0, f64::max);
            format!("{:.2} ({lo:.2}–{hi:.2})", median(v))
        }
    }
}

/// The ratio table as Markdown.
pub fn markdown(rows: &[Ratio]) -> String {
    let mut s = String::from(
        "| spidx | peer | build | windows | kNN | answers equal |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.spidx,
            r.peer,
            cell(&r.build),
            cell(&r.windows),
            cell(&r.knn),
            if r.answers_equal { "yes" } else { "NO" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_names_known_implementations() {
        for (s, q) in PAIRS {
            assert!(
                crate::runs::spidx_kind(s).is_some() || crate::runs::spidx_bulk(s).is_some(),
                "{s}"
            );
            assert!(find(q).is_some() || q == "rstar", "{q}");
        }
    }

    #[test]
    fn a_missing_program_says_how_to_build_it() {
        let e = program(&PEERS[0], Path::new("/nonexistent")).unwrap_err();
        assert!(e.to_string().contains("scripts/build-peers"), "{e}");
    }
}
