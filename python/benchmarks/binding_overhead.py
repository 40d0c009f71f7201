"""Python binding overhead per query: the same queries on the same index through the
Python package, through the Rust library directly, and through the command line.

    python python/benchmarks/binding_overhead.py --dir /tmp/spidx-bo \
        --library target/release/binding_overhead --cli target/release/spidx

Builds (once) an R*-tree of ``--count`` random rectangles in ``DIR/index`` (memory device,
direct store, 4 KB pages) with the Python package, writes the window and kNN queries
(``DIR/windows.json``, ``DIR/points.json``), times them through ``spidx.Index.query`` and
``spidx.Index.knn`` (median of ``--passes`` passes), runs the library binary
(``crates/spidx-bench/src/bin/binding_overhead.rs``) on the same directory, checks that both
found the same number of answers, and prints a table: time per query, and the binding's
overhead (Python − library) per query. ``--cli`` adds one ``spidx query`` process per query
for ``--cli-queries`` queries (a process start, an index open and one query each).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import spidx


def build(dir: Path, count: int, queries: int, k: int, seed: int) -> None:
    rng = random.Random(seed)
    side = 0.001
    items = []
    for i in range(count):
        x, y = rng.random(), rng.random()
        w, h = rng.random() * side, rng.random() * side
        items.append((i, (x, y), (x + w, y + h)))
    with spidx.create(dir / "index", index="rstar", page_size="4KB", device="memory") as idx:
        idx.insert_many(items)
    windows = []
    for _ in range(queries):
        x, y = rng.random() * 0.99, rng.random() * 0.99
        windows.append([x, y, x + 0.01, y + 0.01])
    points = [[rng.random(), rng.random()] for _ in range(queries)]
    (dir / "windows.json").write_text(json.dumps(windows))
    (dir / "points.json").write_text(json.dumps(points))
    (dir / "params.json").write_text(json.dumps({"count": count, "k": k, "seed": seed}))


def time_python(dir: Path, passes: int) -> dict:
    windows = json.loads((dir / "windows.json").read_text())
    points = json.loads((dir / "points.json").read_text())
    k = json.loads((dir / "params.json").read_text())["k"]
    window_ns, knn_ns = [], []
    with spidx.open(dir / "index", read_only=True) as idx:
        for _ in range(passes):
            answers = 0
            t = time.perf_counter_ns()
            for w in windows:
                answers += len(idx.query(w[:2], w[2:]))
            window_ns.append((time.perf_counter_ns() - t) / len(windows))
            window_answers = answers
            answers = 0
            t = time.perf_counter_ns()
            for p in points:
                answers += len(idx.knn(p, k))
            knn_ns.append((time.perf_counter_ns() - t) / len(points))
            knn_answers = answers
    return {
        "window_ns_per_query": statistics.median(window_ns),
        "window_answers": window_answers,
        "knn_ns_per_query": statistics.median(knn_ns),
        "knn_answers": knn_answers,
    }


def time_cli(cli: str, dir: Path, n: int) -> float:
    windows = json.loads((dir / "windows.json").read_text())[:n]
    times = []
    for w in windows:
        t = time.perf_counter_ns()
        subprocess.run(
            [cli, "query", str(dir / "index"), "--window", ",".join(map(str, w)), "--filter-only"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--library", help="the binding_overhead binary of spidx-bench")
    ap.add_argument("--cli", help="the spidx binary")
    ap.add_argument("--cli-queries", type=int, default=50)
    a = ap.parse_args()
    if a.count < 1 or a.queries < 1 or a.k < 1 or a.passes < 1:
        ap.error("--count, --queries, --k and --passes must be at least 1")
    a.dir.mkdir(parents=True, exist_ok=True)
    if not (a.dir / "index").exists():
        build(a.dir, a.count, a.queries, a.k, a.seed)
    py = time_python(a.dir, a.passes)
    rows = [("python", py["window_ns_per_query"], py["knn_ns_per_query"])]
    out = {"python": py}
    if a.library:
        done = subprocess.run(
            [a.library, str(a.dir), str(a.passes)], check=True, capture_output=True, text=True
        )
        lib = json.loads(done.stdout)
        for what in ("window_answers", "knn_answers"):
            if lib[what] != py[what]:
                print(f"library and Python differ in {what}: {lib[what]} vs {py[what]}", file=sys.stderr)
                return 1
        out["library"] = lib
        rows.append(("library", lib["window_ns_per_query"], lib["knn_ns_per_query"]))
        out["overhead_ns"] = {
            "window": py["window_ns_per_query"] - lib["window_ns_per_query"],
            "knn": py["knn_ns_per_query"] - lib["knn_ns_per_query"],
        }
    if a.cli:
        cli = time_cli(a.cli, a.dir, a.cli_queries)
        out["cli_ns_per_query"] = cli
        rows.append(("cli (one process per query)", cli, None))
    print(json.dumps(out, indent=2))
    print(f"\n{'path':<30} {'window µs/query':>16} {'kNN µs/query':>14}")
    for name, w, k in rows:
        knn = "-" if k is None else f"{k / 1000:.2f}"
        print(f"{name:<30} {w / 1000:>16.2f} {knn:>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
