//! generate → write → read gives back the same ids and coordinates, for every writable format.

use super::*;
use crate::data::generate::{generate, Distribution, GenerateOptions};
use proptest::prelude::*;

const GEO_FORMATS: [&str; 6] = ["fgb", "geojson", "geojsonl", "geojsons", "wkt", "wkb"];

fn roundtrip(recs: &[GeoRecord], ext: &str) -> (Vec<GeoRecord>, ImportReport) {
    let dir = tmp();
    let path = file(&dir, &format!("data.{ext}"));
    let ds = Dataset::Geo(recs.to_vec());
    let f = write(&path, &ds).unwrap();
    assert_eq!(f, Format::from_path(&path).unwrap());
    read_report(&path)
}

#[test]
fn generated_geometries_survive_every_format() {
    let mut data = geo(generate(&GenerateOptions::new(Distribution::Buildings, 3000)).unwrap());
    data.extend(
        geo(generate(&GenerateOptions::new(Distribution::Uniform, 500)).unwrap())
            .into_iter()
            .map(|mut r| {
                r.id += 3000;
                r
            }),
    );
    for ext in GEO_FORMATS {
        let (back, report) = roundtrip(&data, ext);
        assert_eq!(back.len(), data.len(), "{ext}");
        assert_eq!(back, data, "{ext}");
        assert_eq!(report.records_read, data.len() as u64);
        assert_eq!(report.skipped_total(), 0, "{ext}: {report}");
        assert!(report.repaired.is_empty(), "{ext}: {report}");
    }
}

#[test]
fn every_geometry_kind_and_arbitrary_ids_survive() {
    for ext in GEO_FORMATS {
        let data = if ext == "fgb" { mixed_fgb() } else { mixed() };
        let (back, report) = roundtrip(&data, ext);
        assert_eq!(back, data, "{ext}");
        assert_eq!(report.kinds.len(), data.len(), "{ext}: {report}");
    }
    // FlatGeobuf: collections alone are fine, mixed with other kinds they are refused.
    let only: Vec<GeoRecord> = mixed()
        .into_iter()
        .filter(|r| matches!(r.geometry, Geometry::GeometryCollection(_)))
        .collect();
    assert_eq!(roundtrip(&only, "fgb").0, only);
    let dir = tmp();
    let e = write(&file(&dir, "m.fgb"), &Dataset::Geo(mixed()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("geometry collections") && e.contains("m.fgb"),
        "{e}"
    );
}

#[test]
fn vectors_survive_npy() {
    let dir = tmp();
    for dims in [1, 2, 10, 32] {
        let mut o = GenerateOptions::new(Distribution::Gaussian, 777);
        o.dims = dims;
        o.vectors = true;
        let ds = generate(&o).unwrap();
        let path = file(&dir, &format!("v{dims}.npy"));
        assert_eq!(write(&path, &ds).unwrap(), Format::Npy);
        let back = open(&path).unwrap();
        assert_eq!(back, ds, "dims {dims}");
    }
    // The header is what numpy writes for float64 (N, D) C-order arrays.
    let bytes = std::fs::read(file(&dir, "v10.npy")).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let header = String::from_utf8_lossy(&bytes[10..80]);
    assert!(
        header.contains("'descr': '<f8'") && header.contains("(777, 10"),
        "{header}"
    );
}

#[test]
fn writing_checks_format_and_kind() {
    let dir = tmp();
    let geo = Dataset::Geo(mixed());
    let vectors = Dataset::Vectors(Vectors::new(3, vec![0.0; 9]).unwrap());
    let err = |p: &str, d: &Dataset| write(&file(&dir, p), d).unwrap_err().to_string();
    assert!(err("x.fgb", &vectors).contains("only be written as .npy"));
    assert!(err("x.npy", &geo).contains("cannot be written as npy"));
    assert!(err("x.shp", &geo).contains("can read but not write"));
    let e = err("x.gpkg", &geo);
    assert!(
        e.contains("x.gpkg") && e.contains(".fgb") && e.contains(".geojson"),
        "{e}"
    );
    let nan = Dataset::Geo(vec![GeoRecord {
        id: 5,
        geometry: Geometry::Point(Point::new(f64::NAN, 1.0)),
        bbox: geo_types::Rect::new(coord! {x: 0.0, y: 0.0}, coord! {x: 1.0, y: 1.0}),
        source: None,
    }]);
    let e = err("x.geojson", &nan);
    assert!(e.contains("record id 5") && e.contains("not finite"), "{e}");
}

/// A writer creates only a new file: an existing file, or a link planted at the name (to
/// an existing file or to none), is refused and left as it was, never followed.
#[test]
fn writers_refuse_an_existing_file_or_link() {
    let dir = tmp();
    let ds = generate(&GenerateOptions::new(Distribution::Uniform, 20)).unwrap();
    let theirs = file(&dir, "theirs.txt");
    std::fs::write(&theirs, b"precious").unwrap();
    let nowhere = file(&dir, "nowhere.txt");
    for ext in GEO_FORMATS {
        let existing = file(&dir, &format!("existing.{ext}"));
        std::fs::copy(&theirs, &existing).unwrap();
        let link = file(&dir, &format!("link.{ext}"));
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        let dangling = file(&dir, &format!("dangling.{ext}"));
        std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
        for p in [&existing, &link, &dangling] {
            let e = write(p, &ds).unwrap_err().to_string();
            assert!(e.contains("already exists"), "{}: {e}", p.display());
        }
        assert_eq!(std::fs::read(&existing).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }
    assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
    assert!(!nowhere.exists(), "a dangling link was followed");
    let npy = file(&dir, "v.npy");
    std::os::unix::fs::symlink(&theirs, &npy).unwrap();
    let vectors = Dataset::Vectors(Vectors::new(3, vec![0.0; 9]).unwrap());
    assert!(write(&npy, &vectors).is_err());
    assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
}

#[test]
fn empty_datasets_round_trip() {
    let dir = tmp();
    for ext in GEO_FORMATS {
        let path = file(&dir, &format!("empty.{ext}"));
        write(&path, &Dataset::Geo(Vec::new())).unwrap();
        assert!(open(&path).unwrap().is_empty(), "{ext}");
    }
}

fn arb_coord() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e6f64..1e6,
        -180.0f64..180.0,
        (-1e-6f64..1e-6),
        Just(0.0),
        Just(-0.0),
        (-1e300f64..1e300),
    ]
}

fn arb_polygon() -> impl Strategy<Value = Geometry> {
    (arb_coord(), arb_coord(), 1e-4f64..1.0, 3usize..20).prop_map(|(x, y, f, n)| {
        // A star-shaped ring (simple), counter-clockwise, sized relative to its position so
        // that its vertices stay distinct in floating point.
        let r = f * x.abs().max(y.abs()).max(1.0);
        let ring: Vec<_> = (0..n)
            .map(|i| {
                let a = i as f64 / n as f64 * std::f64::consts::TAU;
                let rr = r * (1.0 + (i % 3) as f64 * 0.1);
                coord! { x: x + rr * a.cos(), y: y + rr * a.sin() }
            })
            .collect();
        Geometry::Polygon(Polygon::new(LineString(ring), vec![]))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn arbitrary_coordinates_round_trip_exactly(
        geoms in proptest::collection::vec(arb_polygon(), 1..20),
        ids in proptest::collection::vec(any::<u64>(), 20),
    ) {
        let recs: Vec<GeoRecord> = geoms
            .into_iter()
            .zip(ids)
            .filter_map(|(g, id)| GeoRecord::new(id, g))
            .collect();
        for ext in GEO_FORMATS {
            let dir = tmp();
            let path = file(&dir, &format!("p.{ext}"));
            write(&path, &Dataset::Geo(recs.clone())).unwrap();
            let back = geo(open(&path).unwrap());
            prop_assert_eq!(&back, &recs, "{}", ext);
        }
    }
}
