//! What happened while reading a dataset: how many records were read and kept, and every
//! skip, repair and warning counted by reason, with a few located examples.
//!
//! Real data is messy (unclosed rings, NaN coordinates, empty or mixed geometries). The
//! readers never stop at a bad *record*: they repair it or skip it and note it here, so
//! `spidx dataset import` can print an honest summary (and `--json`) and the index layer
//! knows exactly which objects it was given. Counts are numbers of *records* affected: a
//! record with three unclosed rings adds one to "ring closed".

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// How many located examples [`ImportReport`] keeps per issue.
const EXAMPLES_PER_ISSUE: usize = 3;
/// How many located examples [`ImportReport`] keeps in all.
const MAX_EXAMPLES: usize = 30;

/// What the reader did about an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The record was left out of the dataset.
    Skipped,
    /// The record was changed so that it is usable (and kept).
    Repaired,
    /// The record was kept unchanged, but it is noteworthy (e.g. invalid for refinement).
    Warning,
}

/// Every reason a record can be skipped, repaired or warned about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Issue {
    /// The record's text or bytes could not be parsed as a geometry.
    Unparsable,
    /// The record has no geometry (`null` in GeoJSON, a null shape, a missing FlatGeobuf geometry).
    MissingGeometry,
    /// The geometry has no coordinates (e.g. `POLYGON EMPTY`).
    EmptyGeometry,
    /// A coordinate is NaN or infinite.
    NonFiniteCoordinate,
    /// A polygon's outer ring has fewer than 4 points after closing it.
    RingTooShort,
    /// A polygon's outer ring encloses no area (all points on a line).
    ZeroAreaRing,
    /// A line has fewer than 2 distinct points.
    DegenerateLine,
    /// The geometry type cannot be represented (curves, surfaces, TINs).
    UnsupportedGeometry,
    /// A point or line while only polygons were asked for (`--polygons-only`).
    NotPolygonal,
    /// Invalid geometry (self-intersection, hole outside shell) with `--invalid skip`.
    Invalid,
    /// OSM: a building way whose first and last node differ.
    OpenWay,
    /// OSM: a way or relation refers to nodes or ways absent from the file.
    MissingReferences,
    /// OSM: the member ways of a multipolygon relation do not join into closed rings.
    UnassembledRings,
    /// A vector row holds NaN or infinite values.
    NonFiniteVector,
    /// A ring was not closed; its first point was appended.
    ClosedRing,
    /// Consecutive repeated points were removed.
    RepeatedVertices,
    /// A hole (inner ring) too short or without area was dropped.
    DroppedHole,
    /// A part of a multi-geometry or collection was unusable and dropped.
    DroppedPart,
    /// A ring crosses or touches itself (kept; refinement results may be unreliable).
    SelfIntersection,
    /// A hole lies outside its polygon's shell (kept).
    HoleOutsideShell,
    /// A geometry with more than [`MANY_VERTICES`] vertices (kept).
    ManyVertices,
    /// A bounding box covering more than 1 % of the dataset's extent (kept).
    HugeExtent,
    /// The same id occurs more than once (kept; use renumbering for unique ids).
    DuplicateId,
    /// The record carries no usable id; its ordinal in the source was used.
    MissingId,
}

/// Geometries with more vertices than this are reported as [`Issue::ManyVertices`].
pub(crate) const MANY_VERTICES: usize = 10_000;

impl Issue {
    /// Every issue, in report order.
    pub const ALL: [Issue; 24] = [
        Issue::Unparsable,
        Issue::MissingGeometry,
        Issue::EmptyGeometry,
        Issue::NonFiniteCoordinate,
        Issue::RingTooShort,
        Issue::ZeroAreaRing,
        Issue::DegenerateLine,
        Issue::UnsupportedGeometry,
        Issue::NotPolygonal,
        Issue::Invalid,
        Issue::OpenWay,
        Issue::MissingReferences,
        Issue::UnassembledRings,
        Issue::NonFiniteVector,
        Issue::ClosedRing,
        Issue::RepeatedVertices,
        Issue::DroppedHole,
        Issue::DroppedPart,
        Issue::SelfIntersection,
        Issue::HoleOutsideShell,
        Issue::ManyVertices,
        Issue::HugeExtent,
        Issue::DuplicateId,
        Issue::MissingId,
    ];

    /// Stable snake_case name used as the key in JSON reports.
    pub fn key(self) -> &'static str {
        match self {
            Issue::Unparsable => "unparsable",
            Issue::MissingGeometry => "missing_geometry",
            Issue::EmptyGeometry => "empty_geometry",
            Issue::NonFiniteCoordinate => "non_finite_coordinate",
            Issue::RingTooShort => "ring_too_short",
            Issue::ZeroAreaRing => "zero_area_ring",
            Issue::DegenerateLine => "degenerate_line",
            Issue::UnsupportedGeometry => "unsupported_geometry",
            Issue::NotPolygonal => "not_polygonal",
            Issue::Invalid => "invalid",
            Issue::OpenWay => "open_way",
            Issue::MissingReferences => "missing_references",
            Issue::UnassembledRings => "unassembled_rings",
            Issue::NonFiniteVector => "non_finite_vector",
            Issue::ClosedRing => "closed_ring",
            Issue::RepeatedVertices => "repeated_vertices",
            Issue::DroppedHole => "dropped_hole",
            Issue::DroppedPart => "dropped_part",
            Issue::SelfIntersection => "self_intersection",
            Issue::HoleOutsideShell => "hole_outside_shell",
            Issue::ManyVertices => "many_vertices",
            Issue::HugeExtent => "huge_extent",
            Issue::DuplicateId => "duplicate_id",
            Issue::MissingId => "missing_id",
        }
    }

    /// Whether records with this issue are skipped, repaired or only warned about.
    pub(crate) fn severity(self) -> Severity {
        use Issue::*;
        match self {
            Unparsable | MissingGeometry | EmptyGeometry | NonFiniteCoordinate | RingTooShort
            | ZeroAreaRing | DegenerateLine | UnsupportedGeometry | NotPolygonal | Invalid
            | OpenWay | MissingReferences | UnassembledRings | NonFiniteVector => Severity::Skipped,
            ClosedRing | RepeatedVertices | DroppedHole | DroppedPart => Severity::Repaired,
            SelfIntersection | HoleOutsideShell | ManyVertices | HugeExtent | DuplicateId
            | MissingId => Severity::Warning,
        }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key().replace('_', " "))
    }
}

/// Where a record sits in its source, for messages a user can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    /// 1-based line of a text file (WKT, hex WKB).
    Line(u64),
    /// 0-based feature of a GeoJSON or FlatGeobuf file.
    Feature(u64),
    /// 0-based record of a Shapefile or binary WKB file.
    Record(u64),
    /// An OpenStreetMap way id.
    Way(i64),
    /// An OpenStreetMap relation id.
    Relation(i64),
    /// 0-based row of a vector file.
    Row(u64),
    /// A record identified by its dataset id (checks done after reading).
    Id(u64),
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Line(n) => write!(f, "line {n}"),
            Loc::Feature(n) => write!(f, "feature {n}"),
            Loc::Record(n) => write!(f, "record {n}"),
            Loc::Way(n) => write!(f, "way {n}"),
            Loc::Relation(n) => write!(f, "relation {n}"),
            Loc::Row(n) => write!(f, "row {n}"),
            Loc::Id(n) => write!(f, "id {n}"),
        }
    }
}

/// The summary of one read: counts per reason and a few located examples.
///
/// Serialises to the JSON printed by `spidx dataset import --json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// The file read.
    pub source: String,
    /// The format it was read as (see [`super::Format::name`]).
    pub format: String,
    /// Records met in the source (features, lines, shapes, building ways and relations, rows).
    pub records_read: u64,
    /// Records in the resulting dataset.
    pub records_kept: u64,
    /// Skipped records by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Repaired (and kept) records by reason.
    pub repaired: BTreeMap<String, u64>,
    /// Kept records worth a warning, by reason.
    pub warnings: BTreeMap<String, u64>,
    /// Kept records by geometry kind (`polygon`, `multipolygon`, `point`, ..., or `vector`).
    pub kinds: BTreeMap<String, u64>,
    /// Records split into several objects by `explode` (each part one object; the parts are
    /// in `records_kept` and `kinds`).
    pub exploded: u64,
    /// The first few problems, each naming the record (`line 12: ring too short: ...`).
    pub examples: Vec<String>,
    /// The coordinate reference system the file names (or that was given for it), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs: Option<super::Crs>,
    #[serde(skip)]
    counts: BTreeMap<Issue, u64>,
}

impl ImportReport {
    /// An empty report for `source` read as `format`.
    pub fn new(source: impl Into<String>, format: impl Into<String>) -> Self {
        ImportReport {
            source: source.into(),
            format: format.into(),
            ..Default::default()
        }
    }

    /// Counts one record with `issue`, keeping the message as an example while there is room.
    pub fn note(&mut self, issue: Issue, loc: Loc, detail: &str) {
        let n = self.counts.entry(issue).or_insert(0);
        *n += 1;
        let map = match issue.severity() {
            Severity::Skipped => &mut self.skipped,
            Severity::Repaired => &mut self.repaired,
            Severity::Warning => &mut self.warnings,
        };
        *map.entry(issue.key().to_string()).or_insert(0) += 1;
        if *n as usize <= EXAMPLES_PER_ISSUE && self.examples.len() < MAX_EXAMPLES {
            let what = match issue.severity() {
                Severity::Skipped => "skipped",
                Severity::Repaired => "repaired",
                Severity::Warning => "warning",
            };
            if detail.is_empty() {
                self.examples.push(format!("{loc}: {what}: {issue}"));
            } else {
                self.examples
                    .push(format!("{loc}: {what}: {issue}: {detail}"));
            }
        }
    }

    /// Counts one kept record of geometry kind `kind`.
    pub fn kept(&mut self, kind: &str) {
        self.records_kept += 1;
        *self.kinds.entry(kind.to_string()).or_insert(0) += 1;
    }

    /// How many records were noted with `issue`.
    pub fn count(&self, issue: Issue) -> u64 {
        self.counts.get(&issue).copied().unwrap_or(0)
    }

    /// How many records were skipped, all reasons together.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
}

fn write_counts(
    f: &mut fmt::Formatter<'_>,
    title: &str,
    map: &BTreeMap<String, u64>,
) -> fmt::Result {
    if map.is_empty() {
        return Ok(());
    }
    writeln!(f, "  {title}:")?;
    for (k, v) in map {
        writeln!(f, "    {:<24} {v}", k.replace('_', " "))?;
    }
    Ok(())
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} ({})", self.source, self.format)?;
        if let Some(crs) = &self.crs {
            writeln!(f, "  crs {crs}")?;
        }
        writeln!(
            f,
            "  read {} records, kept {}, skipped {}",
            self.records_read,
            self.records_kept,
            self.skipped_total()
        )?;
        if self.exploded > 0 {
            writeln!(
                f,
                "  {} multi-part records exploded into their parts (each part one object)",
                self.exploded
            )?;
        }
        write_counts(f, "kept by kind", &self.kinds)?;
        write_counts(f, "skipped", &self.skipped)?;
        write_counts(f, "repaired (kept)", &self.repaired)?;
        write_counts(f, "warnings (kept)", &self.warnings)?;
        if !self.examples.is_empty() {
            writeln!(f, "  examples:")?;
            for e in &self.examples {
                writeln!(f, "    {e}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_severity_and_keeps_few_examples() {
        let mut r = ImportReport::new("x.wkt", "wkt");
        for i in 0..10 {
            r.note(Issue::ClosedRing, Loc::Line(i + 1), "ring 0");
        }
        r.note(Issue::NonFiniteCoordinate, Loc::Line(20), "NaN");
        r.note(Issue::SelfIntersection, Loc::Line(21), "");
        assert_eq!(r.count(Issue::ClosedRing), 10);
        assert_eq!(r.repaired["closed_ring"], 10);
        assert_eq!(r.skipped["non_finite_coordinate"], 1);
        assert_eq!(r.warnings["self_intersection"], 1);
        assert_eq!(r.skipped_total(), 1);
        assert_eq!(r.examples.len(), EXAMPLES_PER_ISSUE + 2);
        assert_eq!(r.examples[0], "line 1: repaired: closed ring: ring 0");
        let text = r.to_string();
        assert!(text.contains("non finite coordinate"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["repaired"]["closed_ring"], 10);
    }

    #[test]
    fn keys_are_unique() {
        let mut keys: Vec<_> = Issue::ALL.iter().map(|i| i.key()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), Issue::ALL.len());
    }
}
