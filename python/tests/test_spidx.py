"""Tests of the Python package against brute force and the library's own checks."""

import json
import os
import random
import sqlite3
import textwrap

import pytest

import spidx


def boxes(n, dims=2, seed=1):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lo = [rng.random() for _ in range(dims)]
        hi = [x + rng.random() * 0.05 for x in lo]
        out.append((i, lo, hi))
    return out


def intersects(a_lo, a_hi, b_lo, b_hi):
    return all(al <= bh and bl <= ah for al, ah, bl, bh in zip(a_lo, a_hi, b_lo, b_hi))


def box_distance(lo, hi, p):
    return sum(max(l - x, 0.0, x - h) ** 2 for l, h, x in zip(lo, hi, p)) ** 0.5


@pytest.mark.parametrize(
    "index,store,device",
    [
        ("rstar", "direct", "memory"),
        (
            {"kind": "rtree", "split": "linear"},
            {"kind": "fast", "write_buffer": "64KB", "flushing_unit": 4, "flush_policy": "fast-star"},
            "ssd-v300",
        ),
        (
            "hilbert",
            {
                "kind": "efind", "buffer": "64KB", "read_buffer_perc": 20, "read_policy": "lru",
                "temporal_control": "both", "timestamp_perc": 50, "flushing_unit": 5,
                "flush_policy": "mthao",
            },
            "seed-table2",
        ),
    ],
)
def test_queries_equal_brute_force_and_survive_reopen(tmp_path, index, store, device):
    data = boxes(3000, seed=7)
    path = tmp_path / "idx"
    with spidx.create(path, index=index, store=store, device=device, page_size="1KB") as idx:
        idx.insert_many(data[:2000])
        for i, lo, hi in data[2000:]:
            idx.insert(i, lo, hi)
        # Delete every third entry; a missing entry is reported, not an error.
        for i, lo, hi in data[::3]:
            assert idx.delete(i, lo, hi)
        assert not idx.delete(10**9, [0, 0], [1, 1])
        report = idx.check()
        assert report["violations"] == [], report
    kept = [d for d in data if d[0] % 3 != 0]
    rng = random.Random(3)
    with spidx.open(path) as idx:
        assert idx.check()["violations"] == []
        for _ in range(50):
            lo = [rng.random(), rng.random()]
            hi = [lo[0] + 0.1, lo[1] + 0.1]
            want = sorted(i for i, a, b in kept if intersects(a, b, lo, hi))
            assert idx.query(lo, hi) == want
        p = [0.5, 0.5]
        got = idx.knn(p, 10)
        want = sorted((box_distance(a, b, p), i) for i, a, b in kept)[:10]
        assert [i for i, _ in got] == [i for _, i in want]
        assert [d for _, d in got] == pytest.approx([d for d, _ in want])


def test_queries_in_memory_equal_brute_force(tmp_path):
    data = boxes(2000, dims=3, seed=11)
    with spidx.create(tmp_path / "m", dims=3, index="rstar") as idx:
        idx.insert_many(data)
        assert idx.dims == 3
        lo, hi = [0.2, 0.2, 0.2], [0.5, 0.6, 0.4]
        assert idx.query(lo, hi) == sorted(i for i, a, b in data if intersects(a, b, lo, hi))
        stats = idx.stats()
        assert stats["store"]["nodes"]["nodes_created"] > 0, stats
        assert idx.manifest()["dims"] == 3


@pytest.mark.parametrize(
    "index,stored",
    [
        ({"kind": "rtree", "split": "greene"}, {"index": "rtree", "split": "greene"}),
        (
            {"kind": "rstar", "reinsert": "20%", "reinsert_internal": 10, "reinsert_policy": "far", "candidates": 4},
            {"index": "rstar", "reinsert_leaf": 0.2, "reinsert_internal": 0.1, "policy": "far", "candidates": 4},
        ),
        (
            {"kind": "hilbert", "order": 12, "siblings": 3, "extent": [-1, 2]},
            {"index": "hilbert", "order": 12, "siblings": 3, "extent": [-1.0, 2.0]},
        ),
        (
            {"kind": "fortree", "write_read_ratio": 8, "root_fix": False},
            {"index": "fortree", "write_read_ratio": 8.0, "root_fix": False},
        ),
        # Unwritten options take the library's defaults (the options structs' `Default`).
        ("hilbert", {"index": "hilbert", "order": None, "siblings": 2, "extent": None}),
    ],
)
def test_index_options_are_the_spec_keys_and_reach_the_manifest(tmp_path, index, stored):
    with spidx.create(tmp_path / "i", index=index) as idx:
        assert idx.manifest()["options"]["kind"] == stored


def test_invalid_options_raise_value_error_naming_the_option(tmp_path):
    with pytest.raises(ValueError, match="split"):
        spidx.create(tmp_path / "a", index={"kind": "rtree", "split": "nosuch"})
    with pytest.raises(ValueError, match="nosuchkey"):
        spidx.create(tmp_path / "b", index={"kind": "rstar", "nosuchkey": 1})
    with pytest.raises(ValueError, match="candidates"):
        spidx.create(tmp_path / "b", index={"kind": "rstar", "candidates": "many"})
    with pytest.raises(ValueError, match="device"):
        spidx.create(tmp_path / "c", device="nosuch-device")
    with pytest.raises(ValueError, match="store"):
        spidx.create(tmp_path / "d", store="nosuch")
    # FAST's required options are required here as in a spec.
    with pytest.raises(ValueError, match="write_buffer"):
        spidx.create(tmp_path / "f", store="fast")
    with pytest.raises(ValueError, match="dimensions"):
        spidx.create(tmp_path / "e", dims=7)


def test_bad_input_raises_and_keeps_the_index(tmp_path):
    path = tmp_path / "idx"
    dev = tmp_path / "dev.bin"
    with spidx.create(path, device=f"file:{dev}") as idx:
        idx.insert(1, [0, 0], [1, 1])
        with pytest.raises(ValueError):
            idx.insert(2, [float("nan"), 0], [1, 1])
        with pytest.raises(ValueError):
            idx.insert(3, [2, 2], [1, 1])  # inverted box
        with pytest.raises(ValueError):
            idx.insert(4, [0, 0, 0], [1, 1, 1])  # wrong dimension
        with pytest.raises(ValueError):
            idx.knn([0, 0], 0)
    with spidx.open(path, read_only=True) as idx:
        assert idx.query([0, 0], [5, 5]) == [1]
    idx.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        idx.query([0, 0], [1, 1])
    with pytest.raises(Exception):
        spidx.open(tmp_path / "nothing-here")


SPEC = """
name = "py-small"
[dataset]
generate = { distribution = "uniform", count = 2000, seed = 5 }
[protocol]
repetitions = 2
[matrix]
index = [{ kind = "rtree", split = "linear" }, { kind = "rstar" }]
page_size = ["1KB", "4KB"]
device = ["ssd-v300"]
[[workload]]
kind = "construction"
[[workload]]
kind = "range"
area = "0.1%"
queries = 20
"""


def test_run_a_spec_and_load_results(tmp_path):
    spec = tmp_path / "small.toml"
    spec.write_text(textwrap.dedent(SPEC))
    db = tmp_path / "results.db"
    summary = spidx.run(spec, db)
    assert summary["experiment"] == "py-small"
    assert [r["status"] for r in summary["runs"]] == ["finished"] * 4
    columns, rows = spidx.results_table(db)
    assert len(rows) == 4 * 2  # runs x workloads
    # The table is the results database's own: the same runs as its runs table.
    with sqlite3.connect(db) as con:
        (n,) = con.execute("select count(*) from runs where status = 'finished'").fetchone()
    assert n == 4
    pd = pytest.importorskip("pandas")
    df = spidx.results(db, experiment="py-small")
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == columns and len(df) == 8
    # Typed as declared: nullable integers stay integers, timestamps are timestamps.
    schema = dict(spidx.results_schema())
    assert list(schema) == columns
    assert str(df["reads"].dtype) == "Int64" and str(df["run_id"].dtype) == "Int64"
    assert str(df["erases"].dtype) == "Int64"  # null on an SSD model without erases counted
    assert str(df["elapsed_s"].dtype) == "float64"
    assert str(df["occupancy_leaf_max"].dtype) == "float64"
    assert str(df["started_at"].dtype).startswith("datetime64") and "UTC" in str(df["started_at"].dtype)
    assert set(df["time_basis"]) == {"modelled"}
    assert set(df["git_commit"]) == {spidx.git_commit()}
    # Resume skips what finished.
    again = spidx.run(spec, db, resume=True)
    assert again["skipped"] == 4 and again["runs"] == []


def test_run_refuses_a_bad_spec(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text(SPEC.replace('distribution = "uniform"', 'distribution = "nosuch"'))
    with pytest.raises(ValueError, match="nosuch"):
        spidx.run(spec, tmp_path / "r.db")
    # The spec is checked before the results database is created.
    assert not (tmp_path / "r.db").exists()


def test_run_writes_where_the_spec_says_unless_told_otherwise(tmp_path):
    spec = tmp_path / "keyed.toml"
    spec.write_text(
        textwrap.dedent(SPEC).replace('name = "py-small"', 'name = "py-small"\nresults = "keyed.db"', 1)
    )
    summary = spidx.run(spec)
    assert summary["results"] == str(tmp_path / "keyed.db")
    assert len(spidx.results_table(tmp_path / "keyed.db")[1]) == 8
    other = tmp_path / "other.db"
    assert spidx.run(spec, other)["results"] == str(other)
    assert len(spidx.results_table(other)[1]) == 8
    assert len(spidx.results_table(tmp_path / "keyed.db")[1]) == 8


def test_bad_ids_raise_value_error(tmp_path):
    with spidx.create(tmp_path / "ids", index="rtree", device="memory") as idx:
        for bad in [-1, 2**64, 1.5, "7", True]:
            with pytest.raises(ValueError, match="id"):
                idx.insert(bad, [0, 0], [1, 1])
        with pytest.raises(ValueError, match="id"):
            idx.insert_many([(0, [0, 0], [1, 1]), (-3, [0, 0], [1, 1])])
        with pytest.raises(ValueError, match="id"):
            idx.delete(-1, [0, 0], [1, 1])
        idx.insert(2**64 - 1, [0, 0], [1, 1])
        assert idx.query([0, 0], [1, 1]) == [2**64 - 1]


def _cli():
    """The `spidx` command line built from this checkout (SPIDX_CLI, else target/)."""
    import pathlib
    import shutil

    named = os.environ.get("SPIDX_CLI")
    if named:
        return named
    root = pathlib.Path(__file__).resolve().parents[2]
    for profile in ("release", "debug"):
        p = root / "target" / profile / "spidx"
        if p.is_file():
            return str(p)
    return shutil.which("spidx")


def test_results_equal_the_cli_export_and_parquet_exports_concatenate(tmp_path):
    import subprocess

    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cli = _cli()
    if cli is None:
        pytest.skip("no spidx command line found (set SPIDX_CLI)")
    # Two specs whose values differ in kind: occupancy 1 vs 0.9, counts present vs null.
    a = tmp_path / "a.toml"
    a.write_text(textwrap.dedent(SPEC))
    b = tmp_path / "b.toml"
    b.write_text(
        textwrap.dedent(SPEC)
        .replace('name = "py-small"', 'name = "py-other"', 1)
        .replace('device = ["ssd-v300"]', 'device = ["memory"]\noccupancy = [{ max_fill = "90%" }]', 1)
    )
    exports = []
    for spec in (a, b):
        db = tmp_path / (spec.stem + ".db")
        assert all(r["status"] == "finished" for r in spidx.run(spec, db)["runs"])
        out = tmp_path / (spec.stem + ".parquet")
        subprocess.run([cli, "results", "export", "--format", "parquet", "--results", str(db), "--out", str(out)], check=True)
        js = subprocess.run(
            [cli, "results", "export", "--format", "json", "--results", str(db)], check=True, capture_output=True, text=True
        ).stdout
        exports.append(out)
        # spidx.results() is the CLI's export: same columns, same values.
        df = spidx.results(db)
        cli_rows = json.loads(js)
        # (The JSON export's objects list their keys alphabetically; the table's order is the
        # declared schema's, checked against Parquet below.)
        assert sorted(df.columns) == sorted(cli_rows[0].keys())
        assert len(df) == len(cli_rows)
        columns, rows = spidx.results_table(db)
        assert [dict(zip(columns, r)) for r in rows] == cli_rows
        # And the Parquet file read by pandas holds the same table.
        back = pq.read_table(out)
        assert back.column_names == list(df.columns)
        assert back.column("reads").to_pylist() == [None if pd.isna(x) else int(x) for x in df["reads"]]
    ta, tb = (pq.read_table(p) for p in exports)
    assert ta.schema.equals(tb.schema), (ta.schema, tb.schema)
    both = pa.concat_tables([ta, tb])  # no cast, no schema promotion
    assert both.num_rows == ta.num_rows + tb.num_rows
    assert both.schema.field("occupancy_internal_max").type == pa.float64()
    assert both.schema.field("erases").type == pa.int64()
    assert both.schema.field("started_at").type == pa.timestamp("ms", tz="UTC")
    assert sorted(set(both.column("occupancy_leaf_max").to_pylist())) == [0.9, 1.0]
    # pyarrow.dataset reads the two files as one.
    import pyarrow.dataset as ds

    assert ds.dataset([str(p) for p in exports], format="parquet").to_table().num_rows == both.num_rows


def _geojson(path, items):
    feats = [
        {
            "type": "Feature",
            "id": i,
            "properties": {},
            "geometry": {
                "type": "Polygon",
                "coordinates": [[[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]], [lo[0], lo[1]]]],
            },
        }
        for i, lo, hi in items
    ]
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))


@pytest.mark.parametrize("bulk,fill", [(None, None), ("str", "70%"), ("omt", 100), ("hilbert", None)])
def test_build_from_a_file_equals_brute_force(tmp_path, bulk, fill):
    data = boxes(2000, seed=11)
    src = tmp_path / "objects.geojson"
    _geojson(src, data)
    fast = {"kind": "fast", "write_buffer": "64KB", "flushing_unit": 4, "flush_policy": "fast-star"}
    idx = spidx.build(tmp_path / "idx", src, bulk=bulk, fill=fill, store=fast, device="ssd-v300", page_size="1KB")
    with idx:
        assert idx.check()["violations"] == []
        c = idx.construction
        assert set(c) == {"load", "construction", "final_flush"}
        assert c["construction"]["cpu_s"] > 0
        # The final write-back emptied FAST's write buffer onto the device.
        assert c["final_flush"]["device"]["host"]["write_ops"] > 0
        rng = random.Random(3)
        for _ in range(30):
            lo = [rng.random() * 0.9, rng.random() * 0.9]
            hi = [lo[0] + 0.1, lo[1] + 0.1]
            expected = sorted(i for i, a, b in data if intersects(a, b, lo, hi))
            assert idx.query(lo, hi) == expected
    with spidx.open(tmp_path / "idx", read_only=True) as again:
        assert again.manifest()["options"]["store"]["kind"] == "fast"
        assert len(again.query([-1, -1], [2, 2])) == len(data)


def test_a_failed_build_raises_and_leaves_no_directory(tmp_path):
    src = tmp_path / "objects.geojson"
    _geojson(src, boxes(100))
    with pytest.raises(ValueError, match="fill"):
        spidx.build(tmp_path / "a", src, fill=70)
    with pytest.raises(ValueError, match="150"):
        spidx.build(tmp_path / "b", src, bulk="str", fill=150)
    with pytest.raises(ValueError, match="bulk"):
        spidx.build(tmp_path / "c", src, bulk="quick")
    with pytest.raises(RuntimeError, match="missing.geojson"):
        spidx.build(tmp_path / "d", tmp_path / "missing.geojson")
    for name in "abcd":
        assert not (tmp_path / name).exists()
