//! The report's pairing of each flash-aware store with its plain tree: the seeds' gain
//! figures (flash-simulator paper Figs. 3-4, JIDM Figs. 3 and 5) compare, for the same tree,
//! page size and device, the FAST (or eFIND) version with the plain one, in time and in the
//! device's reads, writes and erases. Gain of A over B = (B − A) / B; a negative gain is a
//! loss. Rows are paired by their configuration with the store set to direct and the page
//! buffer left out (`Row::plain_key`), so a plain tree with an LRU buffer pairs with its
//! FAST version without one, as in the papers.

use std::fmt::Write;

use super::data::{Data, Row};
use super::html::{esc, gain};

/// The device operation counted for `what` (`reads`, `writes`): flash page operations on a
/// flash device (what a flash simulator counts; a node larger than a flash page costs
/// several), else host requests.
pub(super) fn ops(r: &Row, what: &str) -> f64 {
    match r.get(&format!("flash_{what}")) {
        Some(v) if v > 0.0 || r.get("erases").is_some() => v,
        _ => r.val(what),
    }
}

/// The section's HTML; empty when no run of a non-direct store has a plain counterpart.
pub fn store_gains(
    data: &Data,
    workloads: &[String],
    devices: &[String],
    pages: &[String],
) -> String {
    let mut body = String::new();
    for w in workloads {
        for d in devices {
            for p in pages {
                for a in data
                    .rows
                    .iter()
                    .filter(|r| !r.direct && &r.workload == w && &r.device == d && &r.page == p)
                {
                    let Some(b) = data.rows.iter().find(|r| {
                        r.direct
                            && r.workload == a.workload
                            && r.plain_key == a.plain_key
                            && r.device == a.device
                    }) else {
                        continue;
                    };
                    let erases = match (a.get("erases"), b.get("erases")) {
                        (Some(x), Some(y)) => gain(x, y),
                        _ => String::new(),
                    };
                    let _ = write!(
                        body,
                        "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{erases}</td></tr>",
                        esc(w),
                        esc(d),
                        esc(p),
                        esc(&a.config),
                        esc(&b.config),
                        gain(a.val("elapsed_s"), b.val("elapsed_s")),
                        gain(ops(a, "reads"), ops(b, "reads")),
                        gain(ops(a, "writes"), ops(b, "writes")),
                    );
                }
            }
        }
    }
    if body.is_empty() {
        return body;
    }
    format!(
        "<section id=\"store-gains\"><h2>Gains of each flash-aware store over its plain tree</h2>\
         <p>For the same tree, page size and device: gain of A (the store) over B (the plain tree, \
         direct store, whatever its page buffer) = (B − A) / B, in elapsed time and in the device's \
         reads, writes and block erases (flash page reads and writes on a flash device, as a flash \
         simulator counts them; requests elsewhere). Positive: A needs less; negative: a loss. \
         The seeds' Figs. 3-4 (flash-simulator paper) and 3, 5 (JIDM) in numbers.</p>\
         <div class=\"wide\"><table><tr><th>workload</th><th>device</th><th>page</th><th>A</th><th>B</th>\
         <th>elapsed</th><th>reads</th><th>writes</th><th>erases</th></tr>{body}</table></div></section>"
    )
}
