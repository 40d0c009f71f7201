//! `spidx calibrate`: a model of the user's own drive. Probes a real file on it
//! ([`probe`]), fits the SSD model's parameters (or the hard-disk model's, when seeks
//! dominate) to the probe figures ([`fit`]) and writes an editable device file with the
//! fit, its residuals and the raw figures ([`render`]).
//!
//! The fit is a pure function of the [`ProbeFigures`]: the same figures give the same
//! device file, byte for byte. It predicts the probes by running them on the candidate
//! model (the same [`crate::iotest`] protocol, on the deterministic virtual clock), so its
//! residuals are what `spidx iotest` with the written device file reports.

pub mod fit;
pub mod host;
pub mod paper_table;
pub mod probe;
pub mod render;

use serde::{Deserialize, Serialize};

use crate::iotest::{Latency, Pattern};

/// Size of the small requests of the probes (random and sequential 4 KB).
pub const SMALL: usize = 4096;

/// Size of the half-page write probe ([`ProbeKind::RandWrite2k`]).
pub const HALF: usize = 2048;

/// The probes, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProbeKind {
    /// Random 4 KB reads, one request at a time.
    RandRead4k,
    /// Random 4 KB writes, one request at a time.
    RandWrite4k,
    /// Random reads of the page size (`--page-size`), one at a time.
    RandReadPage,
    /// Random writes of the page size, one at a time.
    RandWritePage,
    /// Sequential 4 KB reads, one at a time.
    SeqRead4k,
    /// Sequential 4 KB writes, one at a time.
    SeqWrite4k,
    /// Random 4 KB reads and writes interleaved (half each), one at a time.
    Mixed4k,
    /// One random 4 KB write then a sync (`fdatasync`), repeated; the sync's cost.
    Sync4k,
    /// Random 4 KB reads at queue depth N (N threads, each with one request outstanding).
    RandReadQd,
    /// Random 4 KB writes at queue depth N (N threads).
    RandWriteQd,
    /// Random 2 KB writes, one at a time: whether the drive writes half a 4 KB page
    /// without first reading the page (the fitted model's flash page size).
    RandWrite2k,
}

impl ProbeKind {
    /// Every probe, in the order they run.
    pub const ALL: [ProbeKind; 11] = [
        ProbeKind::RandRead4k,
        ProbeKind::RandWrite4k,
        ProbeKind::RandReadPage,
        ProbeKind::RandWritePage,
        ProbeKind::SeqRead4k,
        ProbeKind::SeqWrite4k,
        ProbeKind::Mixed4k,
        ProbeKind::Sync4k,
        ProbeKind::RandReadQd,
        ProbeKind::RandWriteQd,
        ProbeKind::RandWrite2k,
    ];

    /// Probes that figures saved before they existed may lack: the fit then does without
    /// them (see [`fit`]).
    pub const OPTIONAL: [ProbeKind; 1] = [ProbeKind::RandWrite2k];

    /// The probe's name in device files and reports.
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::RandRead4k => "randread-4k-qd1",
            ProbeKind::RandWrite4k => "randwrite-4k-qd1",
            ProbeKind::RandReadPage => "randread-page-qd1",
            ProbeKind::RandWritePage => "randwrite-page-qd1",
            ProbeKind::SeqRead4k => "seqread-4k-qd1",
            ProbeKind::SeqWrite4k => "seqwrite-4k-qd1",
            ProbeKind::Mixed4k => "mixed-4k-qd1",
            ProbeKind::Sync4k => "sync-4k-qd1",
            ProbeKind::RandReadQd => "randread-4k-qdN",
            ProbeKind::RandWriteQd => "randwrite-4k-qdN",
            ProbeKind::RandWrite2k => "randwrite-2k-qd1",
        }
    }

    /// The iotest pattern (the sync probe has its own loop: `None`).
    pub fn pattern(self) -> Option<Pattern> {
        Some(match self {
            ProbeKind::RandRead4k | ProbeKind::RandReadPage | ProbeKind::RandReadQd => {
                Pattern::RandRead
            }
            ProbeKind::RandWrite4k
            | ProbeKind::RandWritePage
            | ProbeKind::RandWriteQd
            | ProbeKind::RandWrite2k => Pattern::RandWrite,
            ProbeKind::SeqRead4k => Pattern::SeqRead,
            ProbeKind::SeqWrite4k => Pattern::SeqWrite,
            ProbeKind::Mixed4k => Pattern::Mixed,
            ProbeKind::Sync4k => return None,
        })
    }

    /// Whether the probe uses the page size (else 4 KB requests, or 2 KB: [`Self::request`]).
    pub fn uses_page_size(self) -> bool {
        matches!(self, ProbeKind::RandReadPage | ProbeKind::RandWritePage)
    }

    /// The probe's request size in bytes, for page-size probes of `page_size` bytes.
    pub fn request(self, page_size: usize) -> usize {
        match self {
            _ if self.uses_page_size() => page_size,
            ProbeKind::RandWrite2k => HALF,
            _ => SMALL,
        }
    }

    /// Whether the probe runs at queue depth N.
    pub fn parallel(self) -> bool {
        matches!(self, ProbeKind::RandReadQd | ProbeKind::RandWriteQd)
    }
}

/// What one probe measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeFigure {
    /// Which probe.
    pub probe: ProbeKind,
    /// Request size in bytes.
    pub request: usize,
    /// Requests outstanding (threads on a file, the model's queue depth on a model).
    pub queue_depth: u32,
    /// Requests measured.
    pub ops: u64,
    /// Requests per second of device time (for the sync probe: syncs per second of sync
    /// time).
    pub iops: f64,
    /// Per-request device time (for the sync probe: of the sync alone); absent for a
    /// model at queue depth N, whose clock advances by completions, not latencies.
    pub latency: Option<Latency>,
}

/// Everything the probes measured, and the setup they ran with: the only input of the fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeFigures {
    /// Bytes addressed by the probes (from the start of the probe file).
    pub span: u64,
    /// The page size of the page-size probes.
    pub page_size: usize,
    /// Queue depth (threads) of the queue-depth-N probes.
    pub threads: u32,
    /// Capacity given to the fitted model, bytes (the drive's filesystem size).
    pub capacity: u64,
    /// One figure per probe, in [`ProbeKind::ALL`] order.
    pub probes: Vec<ProbeFigure>,
}

impl ProbeFigures {
    /// The figure of probe `kind`.
    pub fn get(&self, kind: ProbeKind) -> crate::Result<&ProbeFigure> {
        self.probes.iter().find(|p| p.probe == kind).ok_or_else(|| {
            crate::Error::invalid("probe figures", format!("no {} probe", kind.name()))
        })
    }

    /// The mean request time of probe `kind` in µs (from its latency, else from its rate).
    pub fn mean_us(&self, kind: ProbeKind) -> crate::Result<f64> {
        let p = self.get(kind)?;
        Ok(match p.latency {
            Some(l) => l.mean_us,
            None => 1e6 / p.iops,
        })
    }

    /// The probes present, in [`ProbeKind::ALL`] order (an optional one may be missing).
    pub fn kinds(&self) -> Vec<ProbeKind> {
        ProbeKind::ALL
            .into_iter()
            .filter(|&k| self.get(k).is_ok())
            .collect()
    }

    /// Checks that every probe is there (the optional ones may be missing), with positive
    /// finite figures.
    pub fn validate(&self) -> crate::Result<()> {
        for kind in ProbeKind::ALL {
            if ProbeKind::OPTIONAL.contains(&kind) && self.get(kind).is_err() {
                continue;
            }
            let p = self.get(kind)?;
            let lat_ok = p
                .latency
                .is_none_or(|l| l.mean_us.is_finite() && l.mean_us > 0.0);
            if p.ops == 0 || !p.iops.is_finite() || p.iops <= 0.0 || !lat_ok {
                return Err(crate::Error::invalid(
                    "probe figures",
                    format!(
                        "probe {} measured no time ({} requests, {} IOPS): the device must take time to be modelled",
                        kind.name(),
                        p.ops,
                        p.iops
                    ),
                ));
            }
        }
        if self.span < (1 << 20) || self.page_size < SMALL || self.threads == 0 {
            return Err(crate::Error::invalid(
                "probe figures",
                "the span must be at least 1MB, the page size at least 4KB and the queue depth at least 1",
            ));
        }
        Ok(())
    }
}
