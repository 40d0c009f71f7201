//! OpenStreetMap PBF extracts: the buildings, as the seed papers used them (OSM buildings of
//! Brazil).
//!
//! - Closed ways tagged `building=*` (any value but `no`) become polygons with the way id as
//!   id. A building way whose ends differ is skipped (`open_way`).
//! - Relations tagged `type=multipolygon` and `building=*` become multipolygons: member
//!   ways with role `outer` (or an empty role) are joined end to end into shells, `inner`
//!   ways into holes, each hole given to the smallest shell containing it. Their id is the
//!   relation id with [`RELATION_ID_FLAG`] set, so it cannot clash with a way id. Rings that
//!   do not close are skipped (`unassembled_rings`).
//! - Coordinates are longitude (x) and latitude (y) in degrees. Objects referring to nodes
//!   or ways missing from the extract are skipped (`missing_references`).
//!
//! The file is read in three passes (relations, then ways, then nodes) so that only the
//! node ids buildings need are kept in memory, which scales to country extracts.

use super::{corrupted, Format};
use crate::data::raw::{Path as RawPath, RawGeom};
use crate::data::repair::{point_in_ring, signed_area};
use crate::data::{GeoSink, Issue, Loc};
use crate::Result;
use geo_types::Coord;
use osmpbf::{Element, ElementReader, RelMemberType};
use std::collections::HashMap;
use std::path::Path;

#[cfg(test)]
pub(crate) mod pbf_writer;

/// Set in the id of records made from OSM relations (ids of ways are used unchanged).
pub(crate) const RELATION_ID_FLAG: u64 = 1 << 62;

struct Relation {
    id: i64,
    /// (way id, is inner)
    members: Vec<(i64, bool)>,
}

fn is_building<'a>(mut tags: impl Iterator<Item = (&'a str, &'a str)>) -> bool {
    tags.any(|(k, v)| k == "building" && v != "no")
}

fn for_each(path: &Path, f: impl FnMut(Element)) -> Result<()> {
    let reader = ElementReader::from_path(path).map_err(|e| osm_error(path, e))?;
    reader.for_each(f).map_err(|e| osm_error(path, e))
}

fn osm_error(path: &Path, e: osmpbf::Error) -> crate::Error {
    match e.kind() {
        osmpbf::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            crate::Error::io(path, std::io::Error::new(io.kind(), io.to_string()))
        }
        _ => corrupted(
            path,
            Format::OsmPbf,
            format!("{e} (truncated or not an OSM PBF file?)"),
        ),
    }
}

/// Reads the buildings of an OSM PBF extract into `sink`.
pub(crate) fn read(path: &Path, sink: &mut GeoSink) -> Result<()> {
    // Pass 1: building multipolygon relations.
    let mut relations = Vec::new();
    for_each(path, |e| {
        if let Element::Relation(r) = e {
            let tags: Vec<(&str, &str)> = r.tags().collect();
            let mp = tags
                .iter()
                .any(|&(k, v)| k == "type" && v == "multipolygon");
            if mp && is_building(tags.iter().copied()) {
                let members = r
                    .members()
                    .filter(|m| m.member_type == RelMemberType::Way)
                    .map(|m| (m.member_id, m.role().map(|r| r == "inner").unwrap_or(false)))
                    .collect();
                relations.push(Relation {
                    id: r.id(),
                    members,
                });
            }
        }
    })?;
    let mut member_ways: HashMap<i64, Vec<i64>> = relations
        .iter()
        .flat_map(|r| r.members.iter().map(|m| (m.0, Vec::new())))
        .collect();
    // Pass 2: building ways, and the ways relations use.
    let mut ways: Vec<(i64, Vec<i64>)> = Vec::new();
    for_each(path, |e| {
        if let Element::Way(w) = e {
            let building = is_building(w.tags());
            let member = member_ways.get_mut(&w.id());
            if building || member.is_some() {
                let refs: Vec<i64> = w.refs().collect();
                if let Some(m) = member {
                    m.clone_from(&refs);
                }
                if building {
                    ways.push((w.id(), refs));
                }
            }
        }
    })?;
    // Pass 3: the coordinates of the nodes those ways use.
    let mut needed: Vec<i64> = ways
        .iter()
        .flat_map(|w| w.1.iter().copied())
        .chain(member_ways.values().flatten().copied())
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let mut coords = vec![
        Coord {
            x: f64::NAN,
            y: f64::NAN
        };
        needed.len()
    ];
    let mut found = vec![false; needed.len()];
    let mut cursor = 0usize;
    let mut last_id = i64::MIN;
    let mut put = |id: i64, lon: f64, lat: f64| {
        // Extracts are sorted by id: walk forward; fall back to a search otherwise.
        let slot = if id >= last_id {
            while cursor < needed.len() && needed[cursor] < id {
                cursor += 1;
            }
            (cursor < needed.len() && needed[cursor] == id).then_some(cursor)
        } else {
            needed.binary_search(&id).ok()
        };
        last_id = id;
        if let Some(i) = slot {
            coords[i] = Coord { x: lon, y: lat };
            found[i] = true;
        }
    };
    if !needed.is_empty() {
        for_each(path, |e| match e {
            Element::Node(n) => put(n.id(), n.lon(), n.lat()),
            Element::DenseNode(n) => put(n.id(), n.lon(), n.lat()),
            _ => {}
        })?;
    }
    let lookup = |refs: &[i64]| -> Result<RawPath, i64> {
        refs.iter()
            .map(|id| match needed.binary_search(id) {
                Ok(i) if found[i] => Ok(coords[i]),
                _ => Err(*id),
            })
            .collect()
    };
    sink.reserve(ways.len() + relations.len());
    for (id, refs) in &ways {
        let loc = Loc::Way(*id);
        if refs.len() < 2 || refs.first() != refs.last() {
            sink.reject(loc, Issue::OpenWay, "first and last node differ");
            continue;
        }
        match lookup(refs) {
            Ok(ring) => sink.push(loc, u64::try_from(*id).ok(), RawGeom::Polygon(vec![ring])),
            Err(n) => sink.reject(
                loc,
                Issue::MissingReferences,
                &format!("node {n} is not in the file"),
            ),
        }
    }
    for r in &relations {
        let loc = Loc::Relation(r.id);
        let id = u64::try_from(r.id).ok().map(|i| i | RELATION_ID_FLAG);
        match relation_geometry(r, &member_ways, &lookup) {
            Ok(raw) => sink.push(loc, id, raw),
            Err((issue, msg)) => sink.reject(loc, issue, &msg),
        }
    }
    Ok(())
}

type Bad = (Issue, String);

fn relation_geometry(
    r: &Relation,
    member_ways: &HashMap<i64, Vec<i64>>,
    lookup: &dyn Fn(&[i64]) -> Result<RawPath, i64>,
) -> Result<RawGeom, Bad> {
    let mut outer = Vec::new();
    let mut inner = Vec::new();
    for &(way, is_inner) in &r.members {
        let refs = match member_ways.get(&way) {
            Some(refs) if !refs.is_empty() => refs.clone(),
            _ => {
                return Err((
                    Issue::MissingReferences,
                    format!("member way {way} is not in the file"),
                ))
            }
        };
        if is_inner {
            inner.push(refs);
        } else {
            outer.push(refs);
        }
    }
    if outer.is_empty() {
        return Err((Issue::EmptyGeometry, "no outer member ways".into()));
    }
    let to_rings = |ways: Vec<Vec<i64>>, role: &str| -> Result<Vec<RawPath>, Bad> {
        let rings = join_rings(ways).map_err(|end| {
            (
                Issue::UnassembledRings,
                format!("{role} ways do not close into rings (open end at node {end})"),
            )
        })?;
        rings
            .iter()
            .map(|ring| {
                lookup(ring).map_err(|n| {
                    (
                        Issue::MissingReferences,
                        format!("node {n} is not in the file"),
                    )
                })
            })
            .collect()
    };
    let shells = to_rings(outer, "outer")?;
    let holes = to_rings(inner, "inner")?;
    let mut polys: Vec<Vec<RawPath>> = shells.into_iter().map(|s| vec![s]).collect();
    for h in holes {
        let target = polys
            .iter()
            .enumerate()
            .filter(|(_, p)| point_in_ring(h[0], &p[0]))
            .min_by(|a, b| {
                signed_area(&a.1[0])
                    .abs()
                    .total_cmp(&signed_area(&b.1[0]).abs())
            })
            .map(|(i, _)| i)
            .unwrap_or(0);
        polys[target].push(h);
    }
    Ok(RawGeom::MultiPolygon(polys))
}

/// Joins ways (node-id lists) end to end into closed rings; `Err(node)` names an open end.
fn join_rings(mut pending: Vec<Vec<i64>>) -> Result<Vec<Vec<i64>>, i64> {
    let mut rings = Vec::new();
    while let Some(mut cur) = pending.pop() {
        loop {
            let (first, last) = (cur[0], cur[cur.len() - 1]);
            if first == last && cur.len() >= 2 {
                rings.push(cur);
                break;
            }
            let next = pending
                .iter()
                .position(|w| w[0] == last || w[w.len() - 1] == last)
                .ok_or(last)?;
            let mut w = pending.swap_remove(next);
            if w[0] != last {
                w.reverse();
            }
            cur.extend_from_slice(&w[1..]);
        }
    }
    Ok(rings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_split_rings_in_any_direction() {
        let rings = join_rings(vec![vec![1, 2, 3], vec![5, 4, 3], vec![5, 6, 1]]).unwrap();
        assert_eq!(rings.len(), 1);
        assert_eq!(rings[0].len(), 7);
        assert_eq!(rings[0][0], rings[0][6]);
        assert_eq!(join_rings(vec![vec![1, 2, 3], vec![3, 4]]), Err(4));
        let two = join_rings(vec![vec![1, 2, 3, 1], vec![7, 8, 9, 7]]).unwrap();
        assert_eq!(two.len(), 2);
    }
}
