//! The exchange formats GIS users ship, end to end through the real binary: a CSV with a WKT
//! column, a CSV of lon/lat points, a GeoPackage and a GeoParquet file, each made here.
//! Each one is built into an index and queried; the answers equal a brute-force reference
//! computed here with the `geo` crate on the geometries written to the file; the CRS and
//! every feature's id (and part, under `--explode`) come through to the query's answers.

use geo::Intersects;
use geo::{Geometry, LineString, MultiPolygon, Point, Polygon};
use predicates::str::contains;
use rand::{Rng, SeedableRng};
use spidx::data::fixtures::{self, ParquetCrs};
use spidx::data::{explode, GeoRecord};
use std::collections::BTreeSet;
use std::path::Path;

mod common;

use common::{json_of, spidx};

const WKT_3857: &str = r#"PROJCS["WGS 84 / Pseudo-Mercator",AUTHORITY["EPSG","3857"]]"#;

fn square(x: f64, y: f64, s: f64) -> Polygon {
    Polygon::new(
        LineString::from(vec![(x, y), (x + s, y), (x + s, y + s), (x, y + s), (x, y)]),
        vec![],
    )
}

/// 400 features with sparse ids (feature ids 10, 17, 24, ...): squares, triangles, points
/// and two-part multipolygons in [0, 1000]².
fn features() -> Vec<GeoRecord> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(50);
    (0..400u64)
        .map(|i| {
            let (x, y) = (rng.gen_range(0.0..990.0), rng.gen_range(0.0..990.0));
            let s = rng.gen_range(0.5..8.0);
            let g = match i % 4 {
                0 => Geometry::Polygon(square(x, y, s)),
                1 => Geometry::Polygon(Polygon::new(
                    LineString::from(vec![(x, y), (x + s, y), (x, y + s), (x, y)]),
                    vec![],
                )),
                2 => Geometry::Point(Point::new(x, y)),
                _ => Geometry::MultiPolygon(MultiPolygon(vec![
                    square(x, y, s),
                    square((x + 40.0) % 990.0, (y + 25.0) % 990.0, s),
                ])),
            };
            GeoRecord::new(10 + 7 * i, g).unwrap()
        })
        .collect()
}

fn windows() -> Vec<geo::Rect> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    (0..12)
        .map(|_| {
            let (x, y) = (rng.gen_range(0.0..900.0), rng.gen_range(0.0..900.0));
            let (w, h) = (rng.gen_range(5.0..150.0), rng.gen_range(5.0..150.0));
            geo::Rect::new((x, y), (x + w, y + h))
        })
        .collect()
}

fn window_arg(r: &geo::Rect) -> String {
    format!("{},{},{},{}", r.min().x, r.min().y, r.max().x, r.max().y)
}

fn build(data: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "build",
        "--index",
        "rstar",
        "--data",
        data.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    json_of(&args)
}

fn query(index: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["query", index.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    json_of(&all)
}

fn u64s(v: &serde_json::Value) -> BTreeSet<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// Builds `data`, queries every window, and checks the answers against brute force over
/// `recs`; then checks the index's CRS.
fn answers_equal_brute_force(data: &Path, recs: &[GeoRecord], crs: Option<&str>, extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("idx");
    let b = build(data, &idx, extra);
    assert_eq!(b["objects"], recs.len() as u64, "{b}");
    assert_eq!(b["crs"]["id"].as_str(), crs, "{b}");
    for w in windows() {
        let v = query(&idx, &["--window", &window_arg(&w), "--ids"]);
        let want: BTreeSet<u64> = recs
            .iter()
            .filter(|r| r.geometry.intersects(&w))
            .map(|r| r.id)
            .collect();
        assert_eq!(u64s(&v["ids"]), want, "{} window {w:?}", data.display());
        assert!(v.get("warnings").is_none(), "{v}");
    }
    // A query geometry (a triangle) too.
    let tri = "POLYGON((100 100,700 150,300 800,100 100))";
    let tg = spidx::query::parse_wkt(tri).unwrap();
    let v = query(&idx, &["--geometry", tri, "--ids"]);
    let want: BTreeSet<u64> = recs
        .iter()
        .filter(|r| r.geometry.intersects(&tg))
        .map(|r| r.id)
        .collect();
    assert_eq!(u64s(&v["ids"]), want, "{} triangle", data.display());
}

#[test]
fn csv_gpkg_and_geoparquet_answer_like_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let recs = features();
    let csv = dir.path().join("f.csv");
    fixtures::write_csv_wkt(&csv, &recs);
    answers_equal_brute_force(&csv, &recs, None, &[]);
    answers_equal_brute_force(&csv, &recs, Some("EPSG:3857"), &["--crs", "EPSG:3857"]);

    let gpkg = dir.path().join("f.gpkg");
    fixtures::write_gpkg(
        &gpkg,
        &[("features", &recs)],
        Some((3857, "EPSG", 3857, WKT_3857)),
    );
    answers_equal_brute_force(&gpkg, &recs, Some("EPSG:3857"), &[]);

    let pq = dir.path().join("f.parquet");
    fixtures::write_geoparquet(&pq, &recs, "WKB", ParquetCrs::Absent);
    answers_equal_brute_force(&pq, &recs, Some("EPSG:4326"), &[]);

    // `dataset info` names the CRS.
    spidx()
        .args(["dataset", "info", gpkg.to_str().unwrap()])
        .assert()
        .success()
        .stdout(contains("crs:         EPSG:3857"));
    let v = json_of(&["dataset", "info", pq.to_str().unwrap(), "--json"]);
    assert_eq!(v["crs"]["id"], "EPSG:4326", "{v}");
}

#[test]
fn csv_points_from_lon_lat_columns() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("p.csv");
    let mut text = String::from("name,latitude,longitude\n");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let pts: Vec<(f64, f64)> = (0..300)
        .map(|_| (rng.gen_range(-10.0..10.0), rng.gen_range(40.0..50.0)))
        .collect();
    for (i, (lon, lat)) in pts.iter().enumerate() {
        text.push_str(&format!("\"place {i}, somewhere\",{lat},{lon}\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let idx = dir.path().join("idx");
    build(&csv, &idx, &["--crs", "EPSG:4326"]);
    let w = geo::Rect::new((-3.0, 42.0), (4.5, 47.5));
    let v = query(
        &idx,
        &["--window", &window_arg(&w), "--ids", "--source-ids"],
    );
    let want: BTreeSet<u64> = pts
        .iter()
        .enumerate()
        .filter(|(_, p)| w.intersects(&Point::new(p.0, p.1)))
        .map(|(i, _)| i as u64)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(u64s(&v["ids"]), want);
    // Row numbers are the ids and the source ids.
    let src: BTreeSet<u64> = v["source_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    assert_eq!(src, want);
}

#[test]
fn exploded_parts_report_their_feature_and_part() {
    let dir = tempfile::tempdir().unwrap();
    let recs = features();
    let gpkg = dir.path().join("f.gpkg");
    fixtures::write_gpkg(
        &gpkg,
        &[("features", &recs)],
        Some((3857, "EPSG", 3857, WKT_3857)),
    );
    let idx = dir.path().join("idx");
    build(&gpkg, &idx, &["--explode", "--order", "shuffled:5"]);
    // Brute force over the parts: (feature id, part number).
    let parts: Vec<(u64, u32, Geometry)> = recs
        .iter()
        .flat_map(|r| {
            explode(r.geometry.clone())
                .into_iter()
                .enumerate()
                .map(move |(k, g)| (r.id, k as u32, g))
        })
        .collect();
    let mut multi_seen = false;
    for w in windows() {
        let v = query(&idx, &["--window", &window_arg(&w), "--source-ids"]);
        let got: BTreeSet<(u64, u32)> = v["source_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let part = s["part"].as_u64().unwrap_or(0) as u32;
                (s["id"].as_u64().unwrap(), part)
            })
            .collect();
        let want: BTreeSet<(u64, u32)> = parts
            .iter()
            .filter(|p| p.2.intersects(&w))
            .map(|p| (p.0, p.1))
            .collect();
        assert_eq!(got, want, "window {w:?}");
        multi_seen |= got.iter().any(|p| p.1 == 1);
    }
    assert!(multi_seen, "some window should meet a second part");
    // Text output: an id and a source id column, `FEATURE#PART` for parts.
    let out = spidx()
        .args([
            "query",
            idx.to_str().unwrap(),
            "--window",
            "0,0,1000,1000",
            "--source-ids",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("id\tsource_id\n"), "{text}");
    assert!(text.lines().any(|l| l.ends_with("#1")), "{text}");
}

#[test]
fn queries_in_another_crs_or_outside_the_extent_are_not_silent() {
    let dir = tempfile::tempdir().unwrap();
    let recs = features();
    let pq = dir.path().join("f.parquet");
    let pj = serde_json::json!({"type": "ProjectedCRS", "name": "WGS 84 / Pseudo-Mercator",
        "id": {"authority": "EPSG", "code": 3857}});
    fixtures::write_geoparquet(&pq, &recs, "WKB", ParquetCrs::Json(pj));
    let idx = dir.path().join("idx");
    build(&pq, &idx, &[]);
    let ix = idx.to_str().unwrap();
    // Another CRS: refused, naming both.
    for args in [
        vec!["--window", "0,0,10,10", "--crs", "EPSG:4326"],
        vec!["--geometry", "SRID=4326;POINT(1 1)"],
    ] {
        let mut all = vec!["query", ix];
        all.extend(args);
        spidx()
            .args(&all)
            .assert()
            .failure()
            .stderr(contains("EPSG:4326").and(contains("EPSG:3857")))
            .stderr(contains("does not reproject"));
    }
    // The same CRS, spelled as a URN: answered.
    let v = query(
        &idx,
        &[
            "--window",
            "0,0,10,10",
            "--crs",
            "urn:ogc:def:crs:EPSG::3857",
        ],
    );
    assert!(v["results"].is_u64());
    // Outside the extent: a warning, not a silent 0.
    let v = query(&idx, &["--window", "5000,5000,6000,6000"]);
    assert_eq!(v["results"], 0);
    let w = v["warnings"][0].as_str().unwrap();
    assert!(
        w.contains("outside the extent") && w.contains("f.parquet"),
        "{w}"
    );
    spidx()
        .args(["query", ix, "--point", "-50,-50"])
        .assert()
        .success()
        .stderr(contains("warning: the point"));
    // An index made before datasets were described (no dataset.json): queries as before,
    // its ids are the source ids.
    std::fs::remove_file(idx.join("dataset.json")).unwrap();
    let v = query(
        &idx,
        &[
            "--window",
            "0,0,1000,1000",
            "--source-ids",
            "--crs",
            "EPSG:4326",
        ],
    );
    assert_eq!(v["results"], recs.len() as u64);
    let src: BTreeSet<u64> = v["source_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_u64().unwrap())
        .collect();
    assert_eq!(src, u64s(&v["ids"]));
}

use predicates::prelude::PredicateBooleanExt;
