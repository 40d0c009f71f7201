//! Coordinate reference systems: read from the formats that carry one, kept with a dataset,
//! and compared, so that a query or window in another CRS is refused instead of silently
//! answering nothing.
//!
//! spidx does not reproject: no projection library (PROJ) is linked, and coordinates are
//! indexed as read. A CRS is therefore only an identity to compare: two CRSs are the same
//! when their authority codes are (`EPSG:4326`), or, for a CRS without one, when their
//! names are. `OGC:CRS84` (longitude/latitude on WGS 84, the default of GeoJSON and
//! GeoParquet) and `EPSG:4326` count as the same: files in either store longitude first
//! in practice, and spidx never swaps axes. A dataset or query without a CRS matches any.
//!
//! Where a CRS comes from (see the format modules): GeoParquet's `crs` (PROJJSON, absent
//! means `OGC:CRS84`), GeoPackage's `gpkg_spatial_ref_sys`, a Shapefile's `.prj` (WKT),
//! GeoJSON's (2008) `crs` member, the FlatGeobuf header, and EWKT's `SRID=n;` prefix.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A coordinate reference system as a file names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crs {
    /// `AUTHORITY:CODE` (e.g. `EPSG:3857`) when the source names one, else the CRS's name.
    pub id: String,
    /// The CRS's name, when the source gives one (e.g. `WGS 84 / Pseudo-Mercator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Crs {
    /// A CRS known by authority and code.
    pub fn code(authority: &str, code: impl fmt::Display) -> Crs {
        Crs {
            id: format!("{}:{code}", authority.trim().to_ascii_uppercase()),
            name: None,
        }
        .normalised()
    }

    /// Parses what a user or a file writes to name a CRS: `EPSG:3857`, `epsg:3857`, a bare
    /// code (`3857`, taken as EPSG), an OGC URN (`urn:ogc:def:crs:EPSG::3857`,
    /// `urn:ogc:def:crs:OGC:1.3:CRS84`), an `http://www.opengis.net/def/crs/EPSG/0/3857`
    /// URL, WKT (1 or 2) or PROJJSON text.
    pub fn parse(text: &str) -> Result<Crs> {
        let t = text.trim();
        let bad = |why: &str| Error::invalid("crs", format!("'{t}' {why}"));
        if t.is_empty() {
            return Err(bad("is empty"));
        }
        if t.starts_with('{') {
            let v: serde_json::Value =
                serde_json::from_str(t).map_err(|e| bad(&format!("is not PROJJSON: {e}")))?;
            return Crs::from_projjson(&v).ok_or_else(|| bad("names no CRS"));
        }
        if t.contains('[') {
            return Crs::from_wkt(t).ok_or_else(|| bad("is WKT without a name or authority"));
        }
        if let Ok(code) = t.parse::<u32>() {
            return Ok(Crs::code("EPSG", code));
        }
        let lower = t.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix("urn:ogc:def:crs:") {
            // urn:ogc:def:crs:AUTHORITY:VERSION:CODE (the version may be empty).
            let parts: Vec<&str> = rest.split(':').collect();
            if let (Some(auth), Some(code)) = (parts.first(), parts.last()) {
                if !auth.is_empty() && !code.is_empty() {
                    return Ok(Crs::code(auth, code.to_ascii_uppercase()));
                }
            }
            return Err(bad("is not an OGC CRS URN (urn:ogc:def:crs:EPSG::CODE)"));
        }
        if let Some(pos) = lower.find("/def/crs/") {
            // http://www.opengis.net/def/crs/AUTHORITY/VERSION/CODE
            let parts: Vec<&str> = t[pos + 9..].trim_end_matches('/').split('/').collect();
            if parts.len() >= 2 {
                return Ok(Crs::code(parts[0], parts[parts.len() - 1]));
            }
            return Err(bad("is not an OGC CRS URL"));
        }
        if let Some((auth, code)) = t.split_once(':') {
            let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
            if ok(auth) && ok(code) {
                return Ok(Crs::code(auth, code.to_ascii_uppercase()));
            }
        }
        Err(bad(
            "is not a CRS spidx can identify; write AUTHORITY:CODE such as EPSG:4326",
        ))
    }

    /// The CRS a PROJJSON object describes: its `id` (authority and code) and `name`.
    pub fn from_projjson(v: &serde_json::Value) -> Option<Crs> {
        let name = v.get("name").and_then(|n| n.as_str()).map(str::to_string);
        let id = v
            .get("id")
            .or_else(|| v.get("ids").and_then(|i| i.get(0)))
            .and_then(|id| {
                let auth = id.get("authority")?.as_str()?;
                let code = match id.get("code")? {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Some(Crs::code(auth, code))
            });
        match (id, name) {
            (Some(c), name) => Some(Crs { name, ..c }.normalised()),
            (None, Some(n)) => Some(Crs::named(&n)),
            (None, None) => None,
        }
    }

    /// The CRS a WKT text (WKT 1, ESRI's WKT 1 of `.prj` files, or WKT 2) describes: the
    /// authority of the whole CRS (the last `AUTHORITY[...]` or `ID[...]` at the outer
    /// level) and its name (the first quoted string).
    pub fn from_wkt(text: &str) -> Option<Crs> {
        let name = text
            .split_once('"')
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(n, _)| n.to_string());
        let id = outer_authority(text);
        match (id, name) {
            (Some((auth, code)), name) => Some(
                Crs {
                    name,
                    ..Crs::code(&auth, code)
                }
                .normalised(),
            ),
            (None, Some(n)) => Some(Crs::named(&n)),
            (None, None) => None,
        }
    }

    /// A CRS known only by name; the names of WGS 84 longitude/latitude are recognised.
    fn named(name: &str) -> Crs {
        let key: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        let id = match key.as_str() {
            "wgs84" | "gcswgs1984" | "wgs1984" => "EPSG:4326".to_string(),
            _ => name.to_string(),
        };
        Crs {
            id,
            name: Some(name.to_string()),
        }
        .normalised()
    }

    /// Maps the identifiers that name one CRS to one spelling (`OGC:CRS84` → `EPSG:4326`).
    fn normalised(mut self) -> Crs {
        if matches!(self.id.as_str(), "OGC:CRS84" | "CRS:84" | "OGC:84") {
            self.name
                .get_or_insert_with(|| "WGS 84 (CRS84)".to_string());
            self.id = "EPSG:4326".to_string();
        }
        self
    }

    /// Whether `self` and `other` are the same CRS (see the module documentation).
    pub fn same_as(&self, other: &Crs) -> bool {
        self.id.eq_ignore_ascii_case(&other.id)
    }
}

impl fmt::Display for Crs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(n) if *n != self.id => write!(f, "{} ({n})", self.id),
            _ => f.write_str(&self.id),
        }
    }
}

/// The outer `AUTHORITY["EPSG","4326"]` (WKT 1) or `ID["EPSG",4326]` (WKT 2) of a WKT
/// text: the last one at bracket depth 1.
fn outer_authority(text: &str) -> Option<(String, String)> {
    let upper = text.to_ascii_uppercase();
    let bytes = upper.as_bytes();
    let mut depth = 0usize;
    let mut in_str = false;
    let mut found = None;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => in_str = !in_str,
            b'[' | b'(' if !in_str => depth += 1,
            b']' | b')' if !in_str => depth = depth.saturating_sub(1),
            _ if !in_str && depth == 1 => {
                for kw in ["AUTHORITY[", "ID["] {
                    let prev_ok = i == 0 || !bytes[i - 1].is_ascii_alphabetic();
                    // Bytes, not `str` slices: `i` may fall inside a multi-byte character.
                    if prev_ok && bytes[i..].starts_with(kw.as_bytes()) {
                        // The keyword is ASCII, so the byte after it starts a character.
                        let body = text.get(i + kw.len()..)?;
                        let end = body.find(']')?;
                        let mut parts = body[..end].split(',').map(|p| p.trim().trim_matches('"'));
                        if let (Some(a), Some(c)) = (parts.next(), parts.next()) {
                            found = Some((a.to_string(), c.to_string()));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// Refuses to combine data in two different CRSs: `Ok` when either has none or both are
/// the same, else an error naming both and saying that spidx does not reproject.
pub fn check_same(
    dataset: Option<&Crs>,
    dataset_what: &str,
    other: Option<&Crs>,
    other_what: &str,
) -> Result<()> {
    match (dataset, other) {
        (Some(a), Some(b)) if !a.same_as(b) => Err(Error::invalid(
            "crs",
            format!(
                "{other_what} is in {b} but {dataset_what} is in {a}; spidx does not reproject \
                 (no projection library is linked): transform one of them into the other's CRS \
                 first, e.g. `ogr2ogr -t_srs {} OUT IN`",
                a.id
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_spellings() {
        for t in [
            "EPSG:3857",
            "epsg:3857",
            "3857",
            "urn:ogc:def:crs:EPSG::3857",
            "http://www.opengis.net/def/crs/EPSG/0/3857",
        ] {
            assert_eq!(Crs::parse(t).unwrap().id, "EPSG:3857", "{t}");
        }
        let crs84 = Crs::parse("urn:ogc:def:crs:OGC:1.3:CRS84").unwrap();
        assert!(crs84.same_as(&Crs::parse("EPSG:4326").unwrap()));
        assert!(Crs::parse("not a crs at all").is_err());
        assert!(Crs::parse("").is_err());
    }

    #[test]
    fn reads_wkt_and_projjson() {
        let wkt1 = r#"PROJCS["WGS 84 / Pseudo-Mercator",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],AUTHORITY["EPSG","4326"]],PROJECTION["Mercator_1SP"],AUTHORITY["EPSG","3857"]]"#;
        let c = Crs::from_wkt(wkt1).unwrap();
        assert_eq!(c.id, "EPSG:3857");
        assert_eq!(c.name.as_deref(), Some("WGS 84 / Pseudo-Mercator"));
        let esri = r#"GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]"#;
        assert_eq!(Crs::from_wkt(esri).unwrap().id, "EPSG:4326");
        let wkt2 = r#"PROJCRS["ETRS89 / UTM zone 32N",BASEGEOGCRS["ETRS89",ID["EPSG",4258]],ID["EPSG",25832]]"#;
        assert_eq!(Crs::from_wkt(wkt2).unwrap().id, "EPSG:25832");
        // Non-ASCII text outside quotes (a hand-edited or damaged .prj) is no panic.
        let odd = "GEOGCS[\"x\",é,ÄUTHORITY[\"EPSG\",\"1\"],ID[\"EPSG\",4326]]";
        assert_eq!(Crs::from_wkt(odd).unwrap().id, "EPSG:4326");
        assert_eq!(Crs::from_wkt("X[é,ID["), None);
        let local = r#"LOCAL_CS["my grid",UNIT["metre",1]]"#;
        assert_eq!(Crs::from_wkt(local).unwrap().id, "my grid");
        let pj: serde_json::Value = serde_json::from_str(
            r#"{"type":"ProjectedCRS","name":"WGS 84 / UTM zone 31N","id":{"authority":"EPSG","code":32631}}"#,
        )
        .unwrap();
        assert_eq!(Crs::from_projjson(&pj).unwrap().id, "EPSG:32631");
    }

    #[test]
    fn refuses_two_different_crs_naming_both() {
        let a = Crs::code("EPSG", 4326);
        let b = Crs::code("EPSG", 3857);
        assert!(check_same(Some(&a), "x", None, "y").is_ok());
        assert!(check_same(None, "x", Some(&b), "y").is_ok());
        assert!(check_same(Some(&a), "x", Some(&a.clone()), "y").is_ok());
        let e = check_same(Some(&a), "the index", Some(&b), "the window")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("EPSG:4326") && e.contains("EPSG:3857") && e.contains("does not reproject"),
            "{e}"
        );
    }
}
