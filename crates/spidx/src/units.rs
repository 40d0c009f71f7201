//! Parsing and printing of the units users type: sizes (`4KB`, `512KB`, `1GB`) and
//! percentages (`30` or `30%`). Sizes are binary (1 KB = 1024 bytes), as page sizes are.

use crate::{Error, Result};

const UNITS: [(&str, u64); 5] = [
    ("TB", 1 << 40),
    ("GB", 1 << 30),
    ("MB", 1 << 20),
    ("KB", 1 << 10),
    ("B", 1),
];

/// Parses a size such as `4096`, `4KB`, `4 KiB`, `1.5MB` or `1GB` into bytes.
///
/// `what` names the option in the error message.
pub fn parse_size(what: &str, text: &str) -> Result<u64> {
    let t = text.trim();
    let bad = |why: &str| {
        Error::invalid(
            what,
            format!("'{text}' is not a size ({why}); write e.g. 4096, 4KB, 512KB, 1GB"),
        )
    };
    if t.is_empty() {
        return Err(bad("empty"));
    }
    let upper = t.to_ascii_uppercase().replace("IB", "B");
    let split = upper
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(upper.len());
    let (num, unit) = upper.split_at(split);
    let unit = unit.trim();
    let mult = if unit.is_empty() {
        1
    } else {
        let u = if unit.len() == 1 && unit != "B" {
            format!("{unit}B")
        } else {
            unit.to_string()
        };
        UNITS
            .iter()
            .find(|(name, _)| *name == u)
            .map(|(_, m)| *m)
            .ok_or_else(|| bad(&format!("unknown unit '{unit}'")))?
    };
    if num.is_empty() {
        return Err(bad("no number"));
    }
    let bytes = if num.contains('.') {
        let v: f64 = num.parse().map_err(|_| bad("bad number"))?;
        let b = v * mult as f64;
        if b.fract() != 0.0 {
            return Err(bad("not a whole number of bytes"));
        }
        if !b.is_finite() || b > u64::MAX as f64 {
            return Err(bad("too large"));
        }
        b as u64
    } else {
        let v: u64 = num.parse().map_err(|_| bad("bad number"))?;
        v.checked_mul(mult).ok_or_else(|| bad("too large"))?
    };
    Ok(bytes)
}

/// Parses a percentage written `30` or `30%` (0 to 100 inclusive) into a fraction in [0, 1].
pub fn parse_percent(what: &str, text: &str) -> Result<f64> {
    let t = text.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = num.parse().map_err(|_| {
        Error::invalid(
            what,
            format!("'{text}' is not a percentage; write e.g. 30 or 30%"),
        )
    })?;
    if !(0.0..=100.0).contains(&v) {
        return Err(Error::invalid(what, format!("{text} is outside 0-100%")));
    }
    Ok(v / 100.0)
}

/// Formats bytes the way users type them: `4KB`, `1.5MB`, `1GB`, or plain bytes.
pub fn format_size(bytes: u64) -> String {
    for (name, mult) in UNITS {
        if mult > 1 && bytes >= mult {
            if bytes.is_multiple_of(mult) {
                return format!("{}{name}", bytes / mult);
            }
            if bytes.is_multiple_of((mult / 1024).max(1)) || bytes >= mult * 10 {
                return format!("{:.1}{name}", bytes as f64 / mult as f64);
            }
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("s", "4096").unwrap(), 4096);
        assert_eq!(parse_size("s", "4KB").unwrap(), 4096);
        assert_eq!(parse_size("s", "4kb").unwrap(), 4096);
        assert_eq!(parse_size("s", "4 KiB").unwrap(), 4096);
        assert_eq!(parse_size("s", "4K").unwrap(), 4096);
        assert_eq!(parse_size("s", "512KB").unwrap(), 512 * 1024);
        assert_eq!(parse_size("s", "1GB").unwrap(), 1 << 30);
        assert_eq!(parse_size("s", "1.5MB").unwrap(), 3 << 19);
        assert_eq!(parse_size("s", "3TB").unwrap(), 3 << 40);
        for bad in [
            "",
            "KB",
            "4XB",
            "-4KB",
            "1.3B",
            "99999999999999999999TB",
            "4 K B",
        ] {
            assert!(parse_size("s", bad).is_err(), "{bad} should be rejected");
        }
        let msg = parse_size("--page-size", "4XB").unwrap_err().to_string();
        assert!(msg.contains("--page-size") && msg.contains("4XB"), "{msg}");
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("p", "30").unwrap(), 0.3);
        assert_eq!(parse_percent("p", "30%").unwrap(), 0.3);
        assert_eq!(parse_percent("p", "0").unwrap(), 0.0);
        assert_eq!(parse_percent("p", "100%").unwrap(), 1.0);
        for bad in ["101", "-1", "x", "", "30%%", "NaN"] {
            assert!(parse_percent("p", bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn format_round_trips() {
        for b in [512u64, 2048, 4096, 65536, 1 << 20, 3 << 30, 1536 * 1024] {
            assert_eq!(
                parse_size("s", &format_size(b)).unwrap(),
                b,
                "{}",
                format_size(b)
            );
        }
        assert_eq!(format_size(4096), "4KB");
        assert_eq!(format_size(1 << 30), "1GB");
    }
}
