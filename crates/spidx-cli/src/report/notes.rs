//! Notes that explain what the figures alone would leave puzzling, derived from the
//! recorded metrics (never written in advance): a device cache that served most requests
//! (why a simulated HDD can build faster than a simulated SSD), a page buffer that did, and
//! query sums dominated by a few expensive queries.

use super::data::{Data, Row};
use crate::numfmt::{count, percent, secs};

/// Shares at or above this are worth a note.
const MOST: f64 = 0.5;

/// Device-level caches the devices count: metric suffix and what serves the hits.
const DEVICE_CACHES: [(&str, &str); 1] = [(
    "device.hdd.buffer_hits",
    "the drive's track/read-ahead buffer",
)];

/// Notes for one workload on one device; `rows` are that workload's rows on that device,
/// `all` every row of the workload (to compare devices).
pub fn notes(data: &Data, rows: &[&Row], all: &[&Row]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(first) = rows.first() else {
        return out;
    };
    if let Some(note) = mixed_durability(rows) {
        out.push(note);
    }
    let (w, d) = (&first.workload, &first.device);
    let reads: f64 = rows.iter().map(|r| r.val("reads")).sum();
    for (metric, what) in DEVICE_CACHES {
        let hits: f64 = rows.iter().map(|r| data.metric(r, metric)).sum();
        if reads > 0.0 && hits / reads >= MOST {
            let mut note = format!(
                "On {d}, {what} served {} of the {} read requests of {w} ({}, summed over the {} runs shown): \
                 those reads cost no seek and no rotational delay, only the transfer",
                count(hits),
                count(reads),
                percent(hits / reads),
                rows.len()
            );
            if let Some(cmp) = faster_than_others(rows, all) {
                note.push_str(&format!(
                    "; this is how {w} can take less modelled time on {d} than {cmp}"
                ));
            }
            note.push('.');
            if first.kind != "construction" {
                note.push_str(
                    " Device caches are dropped before every measured repetition, so these hits \
                     come from within one query.",
                );
            }
            out.push(note);
        }
    }
    let hits: f64 = rows
        .iter()
        .map(|r| data.metric(r, "store.cache.hits"))
        .sum();
    let faults: f64 = rows
        .iter()
        .map(|r| data.metric(r, "store.cache.faults"))
        .sum();
    if hits + faults > 0.0 && hits / (hits + faults) >= MOST {
        out.push(format!(
            "On {d}, the page buffer served {} of {} node reads of {w} ({}): most node reads never reached the device.",
            count(hits),
            count(hits + faults),
            percent(hits / (hits + faults))
        ));
    }
    // Query sums that a few queries dominate.
    let worst = rows
        .iter()
        .filter_map(|r| {
            let (sum, max) = (r.get("elapsed_s")?, r.get("elapsed_max_s")?);
            (sum > 0.0 && r.val("queries") > 1.0).then_some((max / sum, *r))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((share, r)) = worst {
        if share >= MOST {
            out.push(format!(
                "In {w} on {d}, one query's mean makes up to {} of a configuration's sum over {} queries \
                 ({}: the most expensive query {} of {} in total; median query {}): the sums compare a \
                 few expensive queries more than the indices; see the per-query chart.",
                percent(share),
                count(r.val("queries")),
                r.config_page(),
                secs(r.val("elapsed_max_s")),
                secs(r.val("elapsed_s")),
                secs(r.val("elapsed_median_s")),
            ));
        }
    }
    out
}

/// "on X for k of n configurations" when `rows` (one device) beat another device's rows of
/// the same configurations.
/// A warning when the runs shown differ in their unit of durability or log placement: a
/// store synced at every operation, or whose log is not counted, does not pay for what the
/// others pay for, so their writes and times do not compare like with like.
/// (A store without a log and one whose log is counted on the device under test compare
/// alike: both pay for all their I/O there.)
pub fn mixed_durability(rows: &[&Row]) -> Option<String> {
    let class = |d: &str| d.replace("log: no log", "log: same device");
    let mut kinds: Vec<(String, Vec<&str>)> = Vec::new();
    for r in rows.iter().filter(|r| !r.durability.is_empty()) {
        let key = class(&r.durability);
        match kinds.iter_mut().find(|(d, _)| *d == key) {
            Some((_, configs)) => {
                if !configs.contains(&r.config.as_str()) {
                    configs.push(&r.config);
                }
            }
            None => kinds.push((key, vec![&r.config])),
        }
    }
    if kinds.len() < 2 {
        return None;
    }
    let list = kinds
        .iter()
        .map(|(d, configs)| format!("{d} ({})", configs.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    Some(format!(
        "Compare with care: these runs differ in their unit of durability or in where their \
         log goes — {list}. A store that syncs at every operation pays for a guarantee the \
         others do not give, and an uncounted log costs nothing here."
    ))
}

fn faster_than_others(rows: &[&Row], all: &[&Row]) -> Option<String> {
    let d = &rows.first()?.device;
    let mut others: Vec<&String> = all.iter().map(|r| &r.device).filter(|o| *o != d).collect();
    others.sort();
    others.dedup();
    let mut parts = Vec::new();
    for o in others {
        let (mut wins, mut n) = (0, 0);
        for r in rows {
            if let Some(x) = all
                .iter()
                .find(|x| &x.device == o && x.config == r.config && x.page == r.page)
            {
                n += 1;
                if r.val("elapsed_s") < x.val("elapsed_s") {
                    wins += 1;
                }
            }
        }
        if wins > 0 {
            parts.push(format!("on {o} for {wins} of {n} configurations"));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(config: &str, durability: &str) -> Row {
        Row {
            run_id: 0,
            ordinal: 0,
            config: config.into(),
            page: "4KB".into(),
            page_size: 4096,
            simulated: true,
            device: "seed-table2".into(),
            workload: "construction".into(),
            kind: "construction".into(),
            workload_ordinal: 0,
            figures: Default::default(),
            direct: config == "plain",
            plain_key: String::new(),
            durability: durability.into(),
            dims: None,
        }
    }

    #[test]
    fn runs_that_differ_in_durability_get_a_warning_naming_them() {
        let plain = row("plain", "checkpoint; log: no log");
        let fast = row("FAST", "checkpoint; log: same device");
        let synced = row("FAST sync", "each operation; log: same device");
        let uncounted = row(
            "FAST festival",
            "checkpoint (log not crash-safe); log: uncounted",
        );
        // The defaults compare like with like: no note.
        assert_eq!(mixed_durability(&[&plain, &fast]), None);
        let note = mixed_durability(&[&plain, &fast, &synced]).unwrap();
        assert!(
            note.contains("each operation; log: same device (FAST sync)"),
            "{note}"
        );
        assert!(note.contains("(plain, FAST)"), "{note}");
        let note = mixed_durability(&[&plain, &uncounted]).unwrap();
        assert!(note.contains("log: uncounted (FAST festival)"), "{note}");
    }
}
