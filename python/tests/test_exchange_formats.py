"""CSV (WKT), GeoPackage and GeoParquet files written by GDAL (through pyogrio, whose wheel
bundles GDAL; GeoParquet by pyarrow as geopandas writes it when that GDAL has no Parquet
driver) are built into spidx indices with the `spidx` command line, and the answers
of window and geometry queries equal shapely's on the same geometries; the CRS GDAL wrote
comes through, and every answer's source id is the feature id GDAL wrote.

Skipped, with the reason, when shapely, pyogrio or the command line is missing."""

import json
import os
import pathlib
import random
import shutil
import subprocess

import pytest

shapely = pytest.importorskip("shapely", reason="shapely is not installed")
pyogrio = pytest.importorskip("pyogrio", reason="pyogrio (GDAL) is not installed")
import numpy as np  # noqa: E402  (pyogrio depends on numpy)
import pyogrio.raw  # noqa: E402


def _cli():
    """The `spidx` command line built from this checkout (SPIDX_CLI, else target/)."""
    named = os.environ.get("SPIDX_CLI")
    if named:
        return named
    root = pathlib.Path(__file__).resolve().parents[2]
    for profile in ("release", "debug"):
        p = root / "target" / profile / "spidx"
        if p.is_file():
            return str(p)
    return shutil.which("spidx")


def _geometries(n=300, seed=50):
    """Squares, triangles, points and two-part multipolygons in [0, 1000]²."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        x, y, s = rnd.uniform(0, 990), rnd.uniform(0, 990), rnd.uniform(0.5, 8)
        kind = i % 4
        if kind == 0:
            g = shapely.box(x, y, x + s, y + s)
        elif kind == 1:
            g = shapely.Polygon([(x, y), (x + s, y), (x, y + s)])
        elif kind == 2:
            g = shapely.Point(x, y)
        else:
            g = shapely.MultiPolygon(
                [shapely.box(x, y, x + s, y + s), shapely.box((x + 40) % 990, (y + 25) % 990, (x + 40) % 990 + s, (y + 25) % 990 + s)]
            )
        out.append(g)
    return out


def _run(cli, *args):
    r = subprocess.run([cli, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout) if "--json" in args else r.stdout


def _write_geoparquet_pyarrow(path, geoms, fids):
    """GeoParquet 1.0 as geopandas writes it: pyarrow (Snappy by default), a WKB `geometry`
    column and the `geo` metadata with a PROJJSON `crs`."""
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    import pyarrow.parquet as pq

    geo = {
        "version": "1.0.0",
        "primary_column": "geometry",
        "columns": {
            "geometry": {
                "encoding": "WKB",
                "geometry_types": [],
                "crs": {
                    "type": "ProjectedCRS",
                    "name": "WGS 84 / Pseudo-Mercator",
                    "id": {"authority": "EPSG", "code": 3857},
                },
            }
        },
    }
    table = pa.table(
        {
            "id": pa.array(fids, type=pa.int64()),
            "geometry": pa.array([shapely.to_wkb(g) for g in geoms], type=pa.binary()),
        }
    ).replace_schema_metadata({b"geo": json.dumps(geo).encode()})
    pq.write_table(table, str(path))


def _write(path, driver, geoms, fids):
    if driver == "Parquet" and driver not in pyogrio.list_drivers():
        return _write_geoparquet_pyarrow(path, geoms, fids)
    wkb = np.array([shapely.to_wkb(g) for g in geoms], dtype=object)
    kwargs = {}
    if driver == "CSV":
        kwargs["layer_options"] = {"GEOMETRY": "AS_WKT"}
    if driver == "GPKG":
        # The `id` field becomes the feature table's primary key (the features' FIDs).
        kwargs["layer_options"] = {"FID": "id"}
    pyogrio.raw.write(
        str(path),
        wkb,
        [np.array(fids, dtype=np.int64)],
        ["id"],
        driver=driver,
        geometry_type="Unknown",
        crs="EPSG:3857",
        **kwargs,
    )


@pytest.mark.parametrize(
    "name,driver",
    [("f.csv", "CSV"), ("f.gpkg", "GPKG"), ("f.parquet", "Parquet")],
)
def test_answers_equal_shapely(tmp_path, name, driver):
    cli = _cli()
    if cli is None:
        pytest.skip("no spidx command line found (set SPIDX_CLI)")
    if driver not in pyogrio.list_drivers() and driver != "Parquet":
        pytest.skip(f"this GDAL has no {driver} driver")
    geoms = _geometries()
    fids = [10 + 7 * i for i in range(len(geoms))]
    path = tmp_path / name
    _write(path, driver, geoms, fids)
    idx = tmp_path / "idx"
    b = _run(cli, "build", "--data", str(path), "--index", "rstar", "--out", str(idx), "--explode", "--json")
    if driver != "CSV":  # CSV carries no CRS
        assert b["crs"]["id"] == "EPSG:3857", b
    tree = shapely.STRtree(geoms)
    rnd = random.Random(7)
    queries = []
    for _ in range(10):
        x, y = rnd.uniform(0, 900), rnd.uniform(0, 900)
        w, h = rnd.uniform(5, 150), rnd.uniform(5, 150)
        queries.append(("--window", f"{x},{y},{x + w},{y + h}", shapely.box(x, y, x + w, y + h)))
    tri = "POLYGON((100 100,700 150,300 800,100 100))"
    queries.append(("--geometry", tri, shapely.from_wkt(tri)))
    for flag, arg, q in queries:
        v = _run(cli, "query", str(idx), flag, arg, "--source-ids", "--json")
        got = {(s["id"], s.get("part", 0)) for s in v["source_ids"]}
        # shapely's answer, part by part (the index holds the exploded parts).
        want = set()
        for i in tree.query(q, predicate="intersects"):
            g = geoms[i]
            parts = list(g.geoms) if hasattr(g, "geoms") else [g]
            for k, p in enumerate(parts):
                if p.intersects(q):
                    want.add((fids[i], k))
        # The source id is the `id` column (CSV, GeoParquet) or the FID (GeoPackage).
        assert got == want, (flag, arg)
