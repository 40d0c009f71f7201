//! An index as users write it: a spec's `[[matrix.index]]` table, `spidx build --index
//! KIND --index-opt KEY=VALUE`, Python's `index` table and the bench's variants. Every one
//! is deserialised by serde into its variant's options, the very struct (its field names,
//! its `#[serde(default)]` and its `Default` impl) that `index.json` stores: an option is
//! declared once, as one field of its variant's struct, and every front end takes it, with
//! its one default, from there. No list of keys is kept by hand: a variant's keys are the
//! fields of its default options ([`IndexKind::registered`]).
//!
//! Keys are checked against every registered variant's first, so a key of another variant
//! gets a clear "applies to" error; each key is then deserialised alone, so that a bad
//! value's error names its key.
//!
//! The R*-tree alone is written otherwise than it is stored (its stored form is kept so
//! that existing indexes open): `reinsert` and `reinsert_internal` are percentages (`30`,
//! `"30%"`; `reinsert_internal` defaults to `reinsert`) stored as the fractions
//! `reinsert_leaf` and `reinsert_internal`, and `reinsert_policy` is stored as `policy`.

use serde::Deserialize;
use toml::{Table, Value};

use super::IndexKind;
use crate::store::written::opts_table;
pub use crate::store::written::Naming;
use crate::units::parse_percent;
use crate::{Error, Result};

/// The R*-tree's keys that users write under another name than the stored one:
/// (written, stored).
const RSTAR_NAMES: [(&str, &str); 2] =
    [("reinsert", "reinsert_leaf"), ("reinsert_policy", "policy")];

/// Names as spec files write them.
pub const SPEC_NAMING: Naming = Naming {
    key: |k| k.to_string(),
    kind: |k| format!("kind = \"{k}\""),
};

/// Names as `spidx build` flags write them.
pub const CLI_NAMING: Naming = Naming {
    key: |k| format!("--index-opt {k}"),
    kind: |k| format!("--index {k}"),
};

/// The stored form of `kind`'s options, as a JSON object (`index` and the fields).
fn stored(kind: &IndexKind) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::Object(m)) => m,
        other => unreachable!("an index kind is stored as an object, not {other:?}"),
    }
}

/// The name users give `kind`'s variant (`rtree`, `rstar`, ...): its stored `index` tag.
pub fn name(kind: &IndexKind) -> String {
    stored(kind)["index"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The keys users write for the options of `kind`'s variant (sorted).
pub fn keys(kind: &IndexKind) -> Vec<String> {
    let rstar = matches!(kind, IndexKind::RStar(_));
    let written = |k: String| match RSTAR_NAMES.iter().find(|(_, s)| rstar && *s == k) {
        Some((w, _)) => w.to_string(),
        None => k,
    };
    let mut keys: Vec<String> = stored(kind)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k != "index")
        .map(written)
        .collect();
    keys.sort();
    keys
}

/// Parses an index written as a table: `kind` and the variant's keys.
pub fn parse_index(table: &Table, naming: &Naming) -> Result<IndexKind> {
    let registered = IndexKind::registered();
    let names: Vec<String> = registered.iter().map(name).collect();
    let use_names = || format!("use {}", names.join(" or "));
    let key = |k: &str| (naming.key)(k);
    let kind = match table.get("kind") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Error::invalid(
                key("kind"),
                format!("{other} is not a name; {}", use_names()),
            ))
        }
        None => {
            return Err(Error::invalid(
                key("kind"),
                format!("missing; {}", use_names()),
            ))
        }
    };
    let Some(default) = registered.iter().find(|k| name(k) == kind) else {
        return Err(Error::invalid(
            key("kind"),
            format!("unknown index '{kind}'; {}", use_names()),
        ));
    };
    let accepted = keys(default);
    let mut rest = table.clone();
    rest.remove("kind");
    for (k, v) in &rest {
        if !accepted.contains(k) {
            let msg = match registered.iter().find(|r| keys(r).contains(k)) {
                Some(owner) => format!("applies to {} only", (naming.kind)(&name(owner))),
                None => format!(
                    "unknown key for {}; it accepts {}",
                    (naming.kind)(kind),
                    accepted.join(", ")
                ),
            };
            return Err(Error::invalid(key(k), msg));
        }
        // Alone first, so that its error names it.
        let mut one = Table::from_iter([(k.clone(), v.clone())]);
        to_stored(kind, &mut one, naming)?;
        from_table(kind, one).map_err(|e| Error::invalid(key(k), e))?;
    }
    to_stored(kind, &mut rest, naming)?;
    let parsed = from_table(kind, rest).map_err(|e| Error::invalid((naming.kind)(kind), e))?;
    parsed.check_options().map_err(|e| match e {
        Error::InvalidOption { what, message } => Error::invalid(key(&what), message),
        other => other,
    })?;
    Ok(parsed)
}

/// Parses an index given as its name and `KEY=VALUE` options (`spidx build --index-opt`,
/// the bench's variants). VALUE is a TOML value (`4`, `true`, `[0, 1000]`, `"far"`), or
/// else a bare word taken as a string (`linear`, `30%`).
pub fn parse_opts<'a>(
    kind: &str,
    opts: impl IntoIterator<Item = &'a str>,
    naming: &Naming,
) -> Result<IndexKind> {
    let table = opts_table(kind, opts, naming, "split=linear", "index")?;
    parse_index(&table, naming)
}

/// Deserialises the stored form of variant `kind` from its keys.
fn from_table(kind: &str, mut t: Table) -> std::result::Result<IndexKind, String> {
    t.insert("index".into(), kind.into());
    IndexKind::deserialize(Value::Table(t)).map_err(|e| e.message().to_string())
}

/// Turns the R*-tree's written keys into its stored ones (see the module documentation);
/// the other variants are stored as written.
fn to_stored(kind: &str, t: &mut Table, naming: &Naming) -> Result<()> {
    if kind != "rstar" {
        return Ok(());
    }
    let mut share = |k: &str| -> Result<Option<Value>> {
        let Some(v) = t.remove(k) else {
            return Ok(None);
        };
        let text = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        parse_percent(&(naming.key)(k), &text).map(|f| Some(Value::Float(f)))
    };
    let leaf = share("reinsert")?;
    let internal = share("reinsert_internal")?.or_else(|| leaf.clone());
    for (k, v) in [("reinsert_leaf", leaf), ("reinsert_internal", internal)] {
        if let Some(v) = v {
            t.insert(k.into(), v);
        }
    }
    for (written, stored) in RSTAR_NAMES {
        if let Some(v) = t.remove(written) {
            t.insert(stored.into(), v);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{
        ForTreeOptions, HilbertOptions, RStarOptions, ReinsertPolicy, SplitAlgorithm,
    };

    fn parse(text: &str, naming: &Naming) -> Result<IndexKind> {
        parse_index(&text.parse::<toml::Table>().unwrap(), naming)
    }

    fn opts(kind: &str, o: &[&str]) -> Result<IndexKind> {
        parse_opts(kind, o.iter().copied(), &CLI_NAMING)
    }

    /// Every variant written without options (spec, `--index-opt`, a stored form without
    /// them) is its registered default, stored exactly as before; the stored form is strict.
    #[test]
    fn bare_variants_are_their_defaults_stored_as_before() {
        let stored = [
            r#"{"index":"rtree","split":"quadratic"}"#,
            r#"{"index":"rstar","reinsert_leaf":0.3,"reinsert_internal":0.3,"policy":"close","candidates":32}"#,
            r#"{"index":"hilbert","order":null,"siblings":2,"extent":null}"#,
            r#"{"index":"fortree","write_read_ratio":10.0,"root_fix":true}"#,
        ];
        for (d, json) in IndexKind::registered().into_iter().zip(stored) {
            assert_eq!(serde_json::to_string(&d).unwrap(), json);
            let n = name(&d);
            assert_eq!(parse(&format!("kind = \"{n}\""), &SPEC_NAMING).unwrap(), d);
            assert_eq!(opts(&n, &[]).unwrap(), d);
            let bare = serde_json::json!({ "index": n });
            assert_eq!(serde_json::from_value::<IndexKind>(bare).unwrap(), d);
        }
        for bad in [
            r#"{"index":"rtree","reinsert":0.3}"#,
            r#"{"index":"rstar","reinsert":0.3}"#,
        ] {
            assert!(serde_json::from_str::<IndexKind>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_are_the_fields_of_the_options() {
        let keys: Vec<String> = IndexKind::registered()
            .iter()
            .map(|k| format!("{}: {}", name(k), keys(k).join(" ")))
            .collect();
        assert_eq!(
            keys,
            [
                "rtree: split",
                "rstar: candidates reinsert reinsert_internal reinsert_policy",
                "hilbert: extent order siblings",
                "fortree: root_fix write_read_ratio",
            ]
        );
    }

    /// `--index-opt` and the spec's keys give the same options, and they round-trip through
    /// the stored form.
    #[test]
    fn index_opts_round_trip_every_variant() {
        let cases: [(&str, &[&str], IndexKind); 4] = [
            (
                "rtree",
                &["split=\"greene\""],
                IndexKind::RTree {
                    split: SplitAlgorithm::Greene,
                },
            ),
            (
                "rstar",
                &[
                    "reinsert = \"20%\"",
                    "reinsert_internal=10",
                    "reinsert_policy=\"far\"",
                    "candidates=4",
                ],
                IndexKind::RStar(RStarOptions {
                    reinsert_leaf: 0.2,
                    reinsert_internal: 0.1,
                    policy: ReinsertPolicy::Far,
                    candidates: 4,
                }),
            ),
            (
                "hilbert",
                &["order=12", "siblings=3", "extent=[-180, 180]"],
                IndexKind::Hilbert(HilbertOptions {
                    order: Some(12),
                    siblings: 3,
                    extent: Some([-180.0, 180.0]),
                }),
            ),
            (
                "fortree",
                &["write_read_ratio=8", "root_fix=false"],
                IndexKind::ForTree(ForTreeOptions {
                    write_read_ratio: 8.0,
                    root_fix: false,
                }),
            ),
        ];
        for (kind, o, want) in cases {
            assert_eq!(opts(kind, o).unwrap(), want, "{kind} {o:?}");
            let spec = format!("kind = \"{kind}\"\n{}", o.join("\n"));
            assert_eq!(parse(&spec, &SPEC_NAMING).unwrap(), want, "{spec}");
            let json = serde_json::to_string(&want).unwrap();
            assert_eq!(serde_json::from_str::<IndexKind>(&json).unwrap(), want);
        }
        // Bare words are strings; `reinsert_internal` defaults to `reinsert`.
        let k = opts("rstar", &["reinsert=20%", "reinsert_policy=far"]).unwrap();
        let IndexKind::RStar(o) = k else { panic!() };
        assert_eq!((o.reinsert_internal, o.policy), (0.2, ReinsertPolicy::Far));
    }

    #[test]
    fn index_opts_errors_name_the_key() {
        let e = |k: &str, o: &[&str]| opts(k, o).unwrap_err().to_string();
        let s = e("rstar", &["reinsrt=3"]);
        assert!(
            s.contains("--index-opt reinsrt")
                && s.contains("unknown key for --index rstar")
                && s.contains("accepts candidates, reinsert, reinsert_internal, reinsert_policy"),
            "{s}"
        );
        for (kind, o, key) in [
            ("rstar", "candidates=many", "candidates"),
            ("hilbert", "siblings=-1", "siblings"),
            ("fortree", "root_fix=maybe", "root_fix"),
            ("rstar", "reinsert=lots", "reinsert"),
        ] {
            let s = e(kind, &[o]);
            assert!(s.contains(&format!("invalid --index-opt {key}:")), "{s}");
        }
        assert!(e("rtree", &["split"]).contains("KEY=VALUE"));
        let s = e("rtree", &["split=linear", "split=greene"]);
        assert!(
            s.contains("--index-opt split") && s.contains("twice"),
            "{s}"
        );
        assert!(e("rtree", &["kind=rstar"]).contains("--index-opt kind"));
        assert!(e("quadtree", &[]).contains("unknown index 'quadtree'"));
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
            s.contains("--index-opt split") && s.contains("applies to --index rtree only"),
            "{s}"
        );
        let s = e("kind = \"rtree\"\nsplitt = \"linear\"", &SPEC_NAMING);
        assert!(s.contains("splitt") && s.contains("accepts split"), "{s}");
        let s = e("kind = \"btree\"", &CLI_NAMING);
        assert!(s.contains("unknown index 'btree'"), "{s}");
        assert!(e("split = \"linear\"", &SPEC_NAMING).contains("kind"));
        let s = e("kind = \"rtree\"\nsplit = \"cubic\"", &SPEC_NAMING);
        assert!(s.contains("invalid split") && s.contains("cubic"), "{s}");
        let s = e("kind = \"rtree\"\nsplit = \"rstar\"", &CLI_NAMING);
        assert!(
            s.contains("--index-opt split") && s.contains("the R*-tree's split"),
            "{s}"
        );
        let s = e("kind = \"rstar\"\nreinsert = \"60%\"", &SPEC_NAMING);
        assert!(s.contains("reinsert") && s.contains("0-50"), "{s}");
        let s = e("kind = \"rstar\"\nreinsert_internal = \"x\"", &CLI_NAMING);
        assert!(s.contains("percentage"), "{s}");
        let s = e("kind = \"rstar\"\ncandidates = 0", &CLI_NAMING);
        assert!(
            s.contains("--index-opt candidates") && s.contains("at least 1"),
            "{s}"
        );
        let s = e("kind = \"rstar\"\nreinsert_policy = \"near\"", &SPEC_NAMING);
        assert!(s.contains("near"), "{s}");
        let s = e("kind = \"hilbert\"\nsiblings = 0", &CLI_NAMING);
        assert!(
            s.contains("--index-opt siblings") && s.contains("1 to 16"),
            "{s}"
        );
        let s = e("kind = \"hilbert\"\nsiblings = 17", &SPEC_NAMING);
        assert!(s.contains("siblings") && s.contains("1 to 16"), "{s}");
        let s = e("kind = \"hilbert\"\norder = 0", &SPEC_NAMING);
        assert!(s.contains("order") && s.contains("at least 1"), "{s}");
        let s = e("kind = \"hilbert\"\nextent = [5.0, 1.0]", &SPEC_NAMING);
        assert!(s.contains("extent") && s.contains("lo < hi"), "{s}");
        let s = e("kind = \"hilbert\"\nextent = [1.0]", &SPEC_NAMING);
        assert!(s.contains("invalid extent") && s.contains("length"), "{s}");
        let s = e("kind = \"hilbert\"\norder = \"x\"", &SPEC_NAMING);
        assert!(s.contains("invalid order") && s.contains("\"x\""), "{s}");
        let s = e("kind = \"hilbert\"\nsplit = \"linear\"", &SPEC_NAMING);
        assert!(s.contains("applies to kind = \"rtree\" only"), "{s}");
        let s = e("kind = \"rstar\"\nsiblings = 3", &CLI_NAMING);
        assert!(s.contains("applies to --index hilbert only"), "{s}");
        let s = e("kind = \"rtree\"\nwrite_read_ratio = 3", &CLI_NAMING);
        assert!(
            s.contains("--index-opt write_read_ratio")
                && s.contains("applies to --index fortree only"),
            "{s}"
        );
        let s = e("kind = \"hilbert\"\nroot_fix = false", &SPEC_NAMING);
        assert!(s.contains("applies to kind = \"fortree\" only"), "{s}");
        let s = e("kind = \"fortree\"\nwrite_read_ratio = 0", &CLI_NAMING);
        assert!(
            s.contains("--index-opt write_read_ratio") && s.contains("> 0"),
            "{s}"
        );
        let s = e("kind = \"fortree\"\nwrite_read_ratio = -2.5", &SPEC_NAMING);
        assert!(s.contains("write_read_ratio") && s.contains("> 0"), "{s}");
        let s = e("kind = \"fortree\"\nroot_fix = \"yes\"", &SPEC_NAMING);
        assert!(s.contains("invalid root_fix") && s.contains("yes"), "{s}");
        let s = e("kind = \"fortree\"\nsplit = \"linear\"", &SPEC_NAMING);
        assert!(s.contains("applies to kind = \"rtree\" only"), "{s}");
    }
}
