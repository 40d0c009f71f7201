"""FlatGeobuf written by `spidx dataset import` read back by GDAL (through pyogrio, whose
wheel bundles GDAL): ids beyond 2^53, such as OSM relation ids with their flag (2^62 + n),
come back as exact 64-bit integers, not as float64 that would lose their low bits."""

import json
import os
import pathlib
import shutil
import subprocess

import pyogrio
import pyogrio.raw
import pytest

# 2^62 + 1: a float64 cannot hold it (it would read 2^62).
BIG = 2**62 + 1
IDS = [BIG, 5, BIG + 2, 2**53 + 1]


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


def test_gdal_reads_flatgeobuf_ids_exactly(tmp_path):
    cli = _cli()
    if cli is None:
        pytest.skip("no spidx command line found (set SPIDX_CLI)")
    assert float(BIG) != BIG, "the id must be one a float64 cannot hold"
    features = [
        {
            "type": "Feature",
            "id": i,
            "properties": {},
            "geometry": {
                "type": "Polygon",
                "coordinates": [[[k, k], [k + 1, k], [k + 1, k + 1], [k, k + 1], [k, k]]],
            },
        }
        for k, i in enumerate(IDS)
    ]
    src = tmp_path / "osm.geojson"
    # Python's json writes big integers exactly.
    src.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    fgb = tmp_path / "osm.fgb"
    subprocess.run([cli, "dataset", "import", str(src), "--out", str(fgb)], check=True)

    info = pyogrio.read_info(fgb)
    assert info["driver"] == "FlatGeobuf"
    assert info["features"] == len(IDS)
    fields = list(info["fields"])
    assert "id" in fields, fields
    # GDAL's Integer64, not Real.
    assert str(info["dtypes"][fields.index("id")]) == "int64"

    meta, _fids, geometry, field_data = pyogrio.raw.read(fgb)
    ids = field_data[list(meta["fields"]).index("id")]
    assert str(ids.dtype) == "int64"
    # Exact, in the order written.
    assert [int(v) for v in ids] == IDS
    assert len(geometry) == len(IDS)
