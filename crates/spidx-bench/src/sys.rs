//! Process measurements and machine facts (Linux).

use serde::{Deserialize, Serialize};

/// A field of `/proc/self/status` in kB (`VmHWM`, `VmRSS`), if readable.
pub fn proc_status_kb(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// `getrusage(RUSAGE_SELF).ru_maxrss` in kB.
pub fn maxrss_kb() -> u64 {
    // SAFETY: getrusage fills the struct we own.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut u) == 0 {
            u.ru_maxrss.max(0) as u64
        } else {
            0
        }
    }
}

/// The machine the benchmark ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    /// Logical CPUs available to the process (`nproc`).
    pub nproc: usize,
    /// `model name` of the first CPU in `/proc/cpuinfo`.
    pub cpu_model: String,
    /// `MemTotal` of `/proc/meminfo`, in GiB.
    pub mem_gib: f64,
}

impl Machine {
    /// Reads the facts of this machine.
    pub fn detect() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let mem_kb: u64 = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("MemTotal:")
                        .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0))
                })
            })
            .unwrap_or(0);
        Machine {
            nproc: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model,
            mem_gib: mem_kb as f64 / (1024.0 * 1024.0),
        }
    }
}

/// The 1-, 5- and 15-minute load averages of `/proc/loadavg`, as it prints them.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}
