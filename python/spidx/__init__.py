"""spidx from Python: spatial indices on real and simulated storage devices.

Build or open an index directory and insert, delete, query and search nearest neighbours
(:func:`create`, :func:`open`, :class:`Index`); run an experiment spec into a results
database (:func:`run`); load the results as a pandas DataFrame (:func:`results`).

Everything runs in the spidx library itself (the native module ``spidx._spidx``): the
options are parsed by the same code as spec files and the command line, so a value that a
spec rejects is rejected here with the same message (as ``ValueError``). The option names
and values are those of ``docs/experiments.md`` and ``docs/indexes.md``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _spidx

__all__ = [
    "Index",
    "create",
    "open",
    "run",
    "results",
    "results_schema",
    "results_table",
    "version",
    "git_commit",
]

PathLike = Union[str, "os.PathLike[str]"]
Box = Tuple[Sequence[float], Sequence[float]]


def version() -> str:
    """The version of the spidx library this package was built from."""
    return _spidx.version()


def git_commit() -> str:
    """The git commit this package was built from (``unknown`` outside a git checkout);
    recorded with every run (``git_commit`` column of the results)."""
    return _spidx.git_commit()


def _object_id(id: Any) -> int:
    """``id`` checked as an object id: an integer in 0 .. 2**64 - 1, else ``ValueError``
    (the native module would raise ``OverflowError`` or ``TypeError``)."""
    if isinstance(id, bool):
        raise ValueError(f"object id {id!r} is a bool, not an integer")
    if not isinstance(id, int):
        try:
            import operator

            id = operator.index(id)  # numpy integers
        except TypeError:
            raise ValueError(f"object id {id!r} is not an integer") from None
    if not 0 <= id < 2**64:
        raise ValueError(f"object id {id} is out of range: ids are integers from 0 to 2**64 - 1")
    return int(id)


class Index:
    """An open index directory. Use :func:`create` or :func:`open` to get one; close it
    with :meth:`close` or a ``with`` block (closing flushes it and releases its locks).

    Boxes are given as two sequences, the lower and the upper corner, of the index's
    dimension; ids are non-negative integers.
    """

    def __init__(self, native: "_spidx.Index") -> None:
        self._native = native
        #: The figures of each construction phase when built by :func:`build`, else None.
        self.construction: Optional[Dict[str, Any]] = None

    @property
    def dims(self) -> int:
        """Dimensions of the indexed boxes."""
        return self._native.dims

    def insert(self, id: int, lo: Sequence[float], hi: Sequence[float]) -> None:
        """Inserts the box ``lo``..``hi`` with object id ``id`` (an integer from 0 to
        2**64 - 1; anything else raises ``ValueError``)."""
        self._native.insert(_object_id(id), list(lo), list(hi))

    def insert_many(self, items: Sequence[Tuple[int, Sequence[float], Sequence[float]]]) -> None:
        """Inserts ``(id, lo, hi)`` triples one by one, in order (one call into the library)."""
        ids = [_object_id(i) for i, _, _ in items]
        los = [list(lo) for _, lo, _ in items]
        his = [list(hi) for _, _, hi in items]
        self._native.insert_many(ids, los, his)

    def delete(self, id: int, lo: Sequence[float], hi: Sequence[float]) -> bool:
        """Deletes the entry ``id`` with box ``lo``..``hi``; False if there is none."""
        return self._native.delete(_object_id(id), list(lo), list(hi))

    def query(
        self, lo: Sequence[float], hi: Sequence[float], predicate: str = "intersects"
    ) -> List[int]:
        """Ids of the entries whose box satisfies ``predicate`` (``intersects``,
        ``contains``, ``within``, ...) against the window ``lo``..``hi``, sorted by id."""
        return self._native.query(list(lo), list(hi), predicate)

    def knn(self, point: Sequence[float], k: int) -> List[Tuple[int, float]]:
        """The ``k`` entries nearest to ``point`` by box distance, as ``(id, distance)``,
        nearest first (ties by id)."""
        ids, dists = self._native.knn(list(point), k)
        return list(zip(ids, dists))

    def check(self) -> Dict[str, Any]:
        """Verifies every invariant of the tree (MBRs cover children, fill, levels) and
        returns its report: height, nodes, per-level shape and ``violations`` (empty when
        the tree is sound)."""
        return json.loads(self._native.check_json())

    def stats(self) -> Dict[str, Any]:
        """The tree's and the node store's statistics so far."""
        return json.loads(self._native.stats_json())

    def manifest(self) -> Dict[str, Any]:
        """The index's manifest (``index.json``): options, capacities, dimensions."""
        return json.loads(self._native.manifest_json())

    def flush(self) -> None:
        """Writes buffered changes to the device (a checkpoint)."""
        self._native.flush()

    def close(self) -> None:
        """Flushes (unless opened read-only) and closes the index; later calls raise
        ``RuntimeError``."""
        self._native.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _options(
    index: Union[str, Dict[str, Any]],
    store: Union[str, Dict[str, Any]],
    page_size: Union[str, int],
    layout: str,
    buffer: str,
    device: str,
) -> str:
    """The index options of :func:`create` and :func:`build` as the native module takes them."""
    return json.dumps(
        {
            "index": {"kind": index} if isinstance(index, str) else dict(index),
            "store": {"kind": store} if isinstance(store, str) else dict(store),
            "page_size": str(page_size),
            "layout": layout,
            "buffer": buffer,
            "device": device,
        }
    )


def create(
    path: PathLike,
    *,
    dims: int = 2,
    index: Union[str, Dict[str, Any]] = "rstar",
    store: Union[str, Dict[str, Any]] = "direct",
    page_size: Union[str, int] = "4KB",
    layout: str = "checked",
    buffer: str = "none",
    device: str = "memory",
) -> Index:
    """Creates an index directory at ``path`` (which must not hold an index yet).

    ``index`` is an index name (``rtree``, ``rstar``, ``hilbert``, ``fortree``) or a table
    as in a spec's ``[[matrix.index]]`` (the keys of docs/indexes.md, unwritten ones taking
    their defaults), e.g. ``{"kind": "rtree", "split": "linear"}``. ``store`` is
    ``direct`` or a table as in a spec's ``matrix.store`` with the store's required keys, e.g.
    ``{"kind": "fast", "write_buffer": "512KB", "flushing_unit": 4, "flush_policy": "fast-star"}``. ``device`` is a preset (``memory``,
    ``ssd-v300``, ``hdd-7200``, ``seed-table2``, ...) or ``file:PATH``; ``buffer`` e.g.
    ``lru:512KB``.
    """
    options = _options(index, store, page_size, layout, buffer, device)
    native = _spidx.Index.create(os.fspath(path), dims, options)
    return Index(native)


def build(
    path: PathLike,
    data: PathLike,
    *,
    bulk: Optional[str] = None,
    fill: Union[str, float, None] = None,
    explode: bool = False,
    renumber: bool = False,
    index: Union[str, Dict[str, Any]] = "rstar",
    store: Union[str, Dict[str, Any]] = "direct",
    page_size: Union[str, int] = "4KB",
    layout: str = "checked",
    buffer: str = "none",
    device: str = "memory",
) -> Index:
    """Builds an index directory at ``path`` from the dataset file ``data`` (any format
    ``spidx build --data`` reads) as ``spidx build`` does, by the same construction protocol:
    the exact geometries are stored (2-D datasets), the objects inserted one by one in file
    order or, with ``bulk`` (``str``, ``omt``, ``hilbert``), bulk loaded with ``fill`` (a
    percentage, e.g. ``70`` or ``"70%"``; default 100), and what the store buffered is
    written back. ``explode`` and ``renumber`` as ``spidx build --explode/--renumber``; the
    other options as in :func:`create` (the dimension comes from the data). The returned
    index's ``construction`` holds the figures of each phase (``load``, ``construction``,
    ``final_flush``: CPU, device and elapsed seconds, device counters). A failed build leaves
    no directory behind.
    """
    native, report = _spidx.Index.build(
        os.fspath(path),
        os.fspath(data),
        bulk,
        None if fill is None else str(fill),
        explode,
        renumber,
        _options(index, store, page_size, layout, buffer, device),
    )
    idx = Index(native)
    idx.construction = json.loads(report)
    return idx


def open(path: PathLike, *, read_only: bool = False) -> Index:  # noqa: A001 (like io.open)
    """Opens the index directory at ``path``. Read-only opens never write a byte (what a
    crash recovery would do happens in memory); others repair a crash's leftovers."""
    return Index(_spidx.Index.open(os.fspath(path), read_only))


def run(
    spec: PathLike, results: Optional[PathLike] = None, *, resume: bool = False
) -> Dict[str, Any]:
    """Runs the experiment spec file ``spec`` (see ``docs/experiments.md``) and records
    every run in the results database ``results``: an SQLite file or a ``postgres://``
    URL; by default the spec's ``results`` key, else ``results.db``. Returns a summary:
    experiment name and id, and per run its id, name, status and error. A failing run is
    recorded as failed and the others go on; check ``summary["runs"]``."""
    target = None if results is None else os.fspath(results)
    return json.loads(_spidx.run(os.fspath(spec), target, resume))


def results_schema() -> List[Tuple[str, str]]:
    """The declared columns of the results export, as ``(name, type)`` pairs with type
    ``int64``, ``float64``, ``string`` or ``timestamp`` (UTC): the same in every export
    (CSV, JSON, Parquet, here), whatever the values (``docs/results.md``)."""
    return [tuple(c) for c in json.loads(_spidx.results_schema_json())]


def results_table(
    path: PathLike, experiment: Optional[str] = None, latest: bool = True
) -> Tuple[List[str], List[List[Any]]]:
    """The results of ``path`` (an SQLite file or a ``postgres://`` URL) as
    ``(columns, rows)``: one row per finished run and workload, exactly the table
    ``spidx results export`` writes (the declared columns; no pandas needed). By default
    the newest run of each configuration, as the CLI; ``latest=False`` is its ``--all``.
    Timestamps are ISO 8601 text here."""
    t = json.loads(_spidx.results_json(os.fspath(path), experiment, latest))
    return t["columns"], t["rows"]


#: pandas dtypes of the declared column types: nullable integers stay integers.
_PANDAS_DTYPES = {"int64": "Int64", "float64": "float64", "string": "string"}


def results(path: PathLike, experiment: Optional[str] = None, latest: bool = True) -> "Any":
    """The results of ``path`` as a typed pandas DataFrame: exactly the table of
    ``spidx results export`` (one row per finished run and workload, the declared columns
    of ``docs/results.md``): counts as nullable ``Int64``, times and ratios ``float64``,
    text ``string``, ``started_at``/``finished_at`` as UTC timestamps. ``experiment``
    keeps one experiment; by default only the newest run of each configuration is kept, as
    by the CLI (``latest=False``: every finished run, the CLI's ``--all``). Needs pandas."""
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("spidx.results needs pandas: pip install pandas") from e
    t = json.loads(_spidx.results_json(os.fspath(path), experiment, latest))
    df = pd.DataFrame(t["rows"], columns=t["columns"], dtype=object)
    for name, kind in zip(t["columns"], t["types"]):
        if kind == "timestamp":
            df[name] = pd.to_datetime(df[name], utc=True)
        else:
            df[name] = df[name].astype(_PANDAS_DTYPES[kind])
    return df
