//! An index as users write it: the table of a spec's `[[matrix.index]]` entry or the
//! `spidx build` flags (the CLI turns its flags into the same table), deserialised once
//! with serde into an [`IndexKind`]. The defaults of every index option live here (through
//! the variants' `Default` impls) and nowhere else.
//!
//! Keys are checked against the variants' registry ([`VARIANTS`]) first, so a key of
//! another variant gets a clear "applies to" error; each variant's table is then
//! deserialised with `deny_unknown_fields`.

use serde::{Deserialize, Deserializer};

use super::{
    ForTreeOptions, HilbertOptions, IndexKind, RStarOptions, ReinsertPolicy, SplitAlgorithm,
};
use crate::units::parse_percent;
use crate::{Error, Result};

/// Every variant users can name and the keys it accepts besides `kind`.
pub const VARIANTS: &[(&str, &[&str])] = &[
    ("rtree", &["split"]),
    (
        "rstar",
        &[
            "reinsert",
            "reinsert_internal",
            "reinsert_policy",
            "candidates",
        ],
    ),
    ("hilbert", &["order", "siblings", "extent"]),
    ("fortree", &["write_read_ratio", "root_fix"]),
];

/// How errors name keys and variants (spec keys, or CLI flags).
pub struct Naming {
    /// The name of a key, e.g. `reinsert` or `--reinsert`.
    pub key: fn(&str) -> String,
    /// The name of a variant, e.g. `kind = "rstar"` or `--index rstar`.
    pub kind: fn(&str) -> String,
}

/// Names as spec files write them.
pub const SPEC_NAMING: Naming = Naming {
    key: |k| k.to_string(),
    kind: |k| format!("kind = \"{k}\""),
};

/// Names as `spidx build` flags write them.
pub const CLI_NAMING: Naming = Naming {
    key: |k| format!("--{}", k.replace('_', "-")),
    kind: |k| format!("--index {k}"),
};

/// Parses an index written as a table: `kind` and the variant's keys.
pub fn parse_index(table: &toml::Table, naming: &Naming) -> Result<IndexKind> {
    let kind = match table.get("kind") {
        Some(toml::Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::invalid(
                (naming.key)("kind"),
                format!("{other} is not a name; use {}", names()),
            ))
        }
        None => {
            return Err(Error::invalid(
                (naming.key)("kind"),
                format!("missing; use {}", names()),
            ))
        }
    };
    let Some((_, keys)) = VARIANTS.iter().find(|(k, _)| *k == kind) else {
        return Err(Error::invalid(
            (naming.key)("kind"),
            format!("unknown index '{kind}'; use {}", names()),
        ));
    };
    let mut rest = table.clone();
    rest.remove("kind");
    for key in rest.keys() {
        if !keys.contains(&key.as_str()) {
            let msg = match VARIANTS.iter().find(|(_, ks)| ks.contains(&key.as_str())) {
                Some((owner, _)) => format!("applies to {} only", (naming.kind)(owner)),
                None => format!(
                    "unknown key for {}; it accepts {}",
                    (naming.kind)(kind),
                    keys.iter()
                        .map(|k| (naming.key)(k))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(Error::invalid((naming.key)(key), msg));
        }
    }
    let value = toml::Value::Table(rest);
    let fail = |e: toml::de::Error| Error::invalid((naming.kind)(kind), e.message().to_string());
    let parsed = match kind {
        "rtree" => {
            let w = RTreeWritten::deserialize(value).map_err(fail)?;
            if w.split == SplitAlgorithm::RStar {
                return Err(Error::invalid(
                    (naming.key)("split"),
                    format!(
                        "rstar is the R*-tree's split: use {}",
                        (naming.kind)("rstar")
                    ),
                ));
            }
            IndexKind::RTree { split: w.split }
        }
        "rstar" => {
            let w = RStarWritten::deserialize(value).map_err(fail)?;
            let d = RStarOptions::default();
            let leaf = w.reinsert.unwrap_or(d.reinsert_leaf);
            IndexKind::RStar(RStarOptions {
                reinsert_leaf: leaf,
                reinsert_internal: w.reinsert_internal.unwrap_or(leaf),
                policy: w.reinsert_policy.unwrap_or(d.policy),
                candidates: w.candidates.unwrap_or(d.candidates),
            })
        }
        "hilbert" => {
            let w = HilbertWritten::deserialize(value).map_err(fail)?;
            let d = HilbertOptions::default();
            IndexKind::Hilbert(HilbertOptions {
                order: w.order.or(d.order),
                siblings: w.siblings.unwrap_or(d.siblings),
                extent: w.extent.or(d.extent),
            })
        }
        "fortree" => {
            let w = ForTreeWritten::deserialize(value).map_err(fail)?;
            let d = ForTreeOptions::default();
            IndexKind::ForTree(ForTreeOptions {
                write_read_ratio: w.write_read_ratio.unwrap_or(d.write_read_ratio),
                root_fix: w.root_fix.unwrap_or(d.root_fix),
            })
        }
        _ => unreachable!("every registered variant is parsed above"),
    };
    parsed.check_options().map_err(|e| match e {
        Error::InvalidOption { what, message } => Error::invalid((naming.key)(&what), message),
        other => other,
    })?;
    Ok(parsed)
}

fn names() -> String {
    VARIANTS
        .iter()
        .map(|(k, _)| *k)
        .collect::<Vec<_>>()
        .join(" or ")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RTreeWritten {
    #[serde(default, deserialize_with = "split")]
    split: SplitAlgorithm,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RStarWritten {
    #[serde(default, deserialize_with = "percent")]
    reinsert: Option<f64>,
    #[serde(default, deserialize_with = "percent")]
    reinsert_internal: Option<f64>,
    #[serde(default, deserialize_with = "policy")]
    reinsert_policy: Option<ReinsertPolicy>,
    #[serde(default)]
    candidates: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HilbertWritten {
    #[serde(default)]
    order: Option<u32>,
    #[serde(default)]
    siblings: Option<usize>,
    #[serde(default)]
    extent: Option<[f64; 2]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForTreeWritten {
    #[serde(default)]
    write_read_ratio: Option<f64>,
    #[serde(default)]
    root_fix: Option<bool>,
}

/// A number or a string, as text for the unit parsers.
fn text<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum T {
        S(String),
        I(i64),
        F(f64),
    }
    Ok(match T::deserialize(d)? {
        T::S(s) => s,
        T::I(i) => i.to_string(),
        T::F(f) => f.to_string(),
    })
}

fn percent<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<f64>, D::Error> {
    let t = text(d)?;
    parse_percent("percentage", &t)
        .map(Some)
        .map_err(|e| serde::de::Error::custom(strip(&e)))
}

fn split<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<SplitAlgorithm, D::Error> {
    let t = String::deserialize(d)?;
    SplitAlgorithm::parse(&t).map_err(|e| serde::de::Error::custom(strip(&e)))
}

fn policy<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<ReinsertPolicy>, D::Error> {
    let t = String::deserialize(d)?;
    ReinsertPolicy::parse(&t)
        .map(Some)
        .map_err(|e| serde::de::Error::custom(strip(&e)))
}

fn strip(e: &Error) -> String {
    match e {
        Error::InvalidOption { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, naming: &Naming) -> Result<IndexKind> {
        parse_index(&text.parse::<toml::Table>().unwrap(), naming)
    }

    #[test]
    fn defaults_come_from_one_place() {
        assert_eq!(
            parse("kind = \"rtree\"", &SPEC_NAMING).unwrap(),
            IndexKind::RTree {
                split: SplitAlgorithm::default()
            }
        );
        assert_eq!(
            parse("kind = \"rstar\"", &SPEC_NAMING).unwrap(),
            IndexKind::RStar(RStarOptions::default())
        );
        let k = parse(
            "kind = \"rstar\"\nreinsert = \"20%\"\nreinsert_policy = \"far\"\ncandidates = 4",
            &SPEC_NAMING,
        )
        .unwrap();
        assert_eq!(
            k,
            IndexKind::RStar(RStarOptions {
                reinsert_leaf: 0.2,
                reinsert_internal: 0.2,
                policy: ReinsertPolicy::Far,
                candidates: 4,
            })
        );
        let k = parse(
            "kind = \"rstar\"\nreinsert = 30\nreinsert_internal = 10",
            &SPEC_NAMING,
        )
        .unwrap();
        let IndexKind::RStar(o) = k else { panic!() };
        assert_eq!((o.reinsert_leaf, o.reinsert_internal), (0.3, 0.1));
        assert_eq!(
            parse("kind = \"hilbert\"", &SPEC_NAMING).unwrap(),
            IndexKind::Hilbert(HilbertOptions::default())
        );
        assert_eq!(
            parse(
                "kind = \"hilbert\"\norder = 12\nsiblings = 3\nextent = [-180, 180]",
                &SPEC_NAMING
            )
            .unwrap(),
            IndexKind::Hilbert(HilbertOptions {
                order: Some(12),
                siblings: 3,
                extent: Some([-180.0, 180.0]),
            })
        );
    }

    #[test]
    fn errors_name_the_key_in_the_users_terms() {
        let e = |t: &str, n: &Naming| parse(t, n).unwrap_err().to_string();
        let s = e("kind = \"rtree\"\nreinsert = 30", &SPEC_NAMING);
        assert!(
            s.contains("reinsert") && s.contains("applies to kind = \"rstar\" only"),
            "{s}"
        );
        let s = e("kind = \"rstar\"\nsplit = \"linear\"", &CLI_NAMING);
        assert!(
            s.contains("--split") && s.contains("applies to --index rtree only"),
            "{s}"
        );
        let s = e("kind = \"rtree\"\nsplitt = \"linear\"", &SPEC_NAMING);
        assert!(s.contains("splitt") && s.contains("accepts split"), "{s}");
        let s = e("kind = \"btree\"", &CLI_NAMING);
        assert!(s.contains("unknown index 'btree'"), "{s}");
        assert!(e("split = \"linear\"", &SPEC_NAMING).contains("kind"));
        let s = e("kind = \"rtree\"\nsplit = \"cubic\"", &SPEC_NAMING);
        assert!(s.contains("unknown split 'cubic'"), "{s}");
        let s = e("kind = \"rtree\"\nsplit = \"rstar\"", &CLI_NAMING);
        assert!(s.contains("--index rstar"), "{s}");
        let s = e("kind = \"rstar\"\nreinsert = \"60%\"", &SPEC_NAMING);
        assert!(s.contains("reinsert") && s.contains("0-50"), "{s}");
        let s = e("kind = \"rstar\"\nreinsert_internal = \"x\"", &CLI_NAMING);
        assert!(s.contains("percentage"), "{s}");
        let s = e("kind = \"rstar\"\ncandidates = 0", &CLI_NAMING);
        assert!(
            s.contains("--candidates") && s.contains("at least 1"),
            "{s}"
        );
        let s = e("kind = \"rstar\"\nreinsert_policy = \"near\"", &SPEC_NAMING);
        assert!(s.contains("near"), "{s}");
        let s = e("kind = \"hilbert\"\nsiblings = 0", &CLI_NAMING);
        assert!(s.contains("--siblings") && s.contains("1 to 16"), "{s}");
        let s = e("kind = \"hilbert\"\nsiblings = 17", &SPEC_NAMING);
        assert!(s.contains("siblings") && s.contains("1 to 16"), "{s}");
        let s = e("kind = \"hilbert\"\norder = 0", &SPEC_NAMING);
        assert!(s.contains("order") && s.contains("at least 1"), "{s}");
        let s = e("kind = \"hilbert\"\nextent = [5.0, 1.0]", &SPEC_NAMING);
        assert!(s.contains("extent") && s.contains("lo < hi"), "{s}");
        let s = e("kind = \"hilbert\"\nextent = [1.0]", &SPEC_NAMING);
        assert!(s.contains("hilbert"), "{s}");
        let s = e("kind = \"hilbert\"\norder = \"x\"", &SPEC_NAMING);
        assert!(s.contains("hilbert"), "{s}");
        let s = e("kind = \"hilbert\"\nsplit = \"linear\"", &SPEC_NAMING);
        assert!(s.contains("applies to kind = \"rtree\" only"), "{s}");
        let s = e("kind = \"rstar\"\nsiblings = 3", &CLI_NAMING);
        assert!(s.contains("applies to --index hilbert only"), "{s}");
        let s = e("kind = \"rtree\"\nwrite_read_ratio = 3", &CLI_NAMING);
        assert!(
            s.contains("--write-read-ratio") && s.contains("applies to --index fortree only"),
            "{s}"
        );
        let s = e("kind = \"hilbert\"\nroot_fix = false", &SPEC_NAMING);
        assert!(s.contains("applies to kind = \"fortree\" only"), "{s}");
        let s = e("kind = \"fortree\"\nwrite_read_ratio = 0", &CLI_NAMING);
        assert!(s.contains("--write-read-ratio") && s.contains("> 0"), "{s}");
        let s = e("kind = \"fortree\"\nwrite_read_ratio = -2.5", &SPEC_NAMING);
        assert!(s.contains("write_read_ratio") && s.contains("> 0"), "{s}");
        let s = e("kind = \"fortree\"\nroot_fix = \"yes\"", &SPEC_NAMING);
        assert!(s.contains("fortree"), "{s}");
        let s = e("kind = \"fortree\"\nsplit = \"linear\"", &SPEC_NAMING);
        assert!(s.contains("applies to kind = \"rtree\" only"), "{s}");
    }

    #[test]
    fn fortree_options_and_defaults() {
        assert_eq!(
            parse("kind = \"fortree\"", &SPEC_NAMING).unwrap(),
            IndexKind::ForTree(ForTreeOptions::default())
        );
        assert_eq!(
            parse(
                "kind = \"fortree\"\nwrite_read_ratio = 8\nroot_fix = false",
                &SPEC_NAMING
            )
            .unwrap(),
            IndexKind::ForTree(ForTreeOptions {
                write_read_ratio: 8.0,
                root_fix: false,
            })
        );
    }
}
