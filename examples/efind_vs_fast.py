#!/usr/bin/env python3
"""eFIND R-tree vs FAST R-tree (and the direct store) with the same 512 KB total buffer:
construction by one-by-one insertion and 100 intersection range queries with windows of
0.001 % of the dataset extent's area, page sizes 2-32 KB, on the simulated `ssd-v300` and
`seed-table2` devices (the seeds' headline; results in `docs/benchmarks.md`).

Usage: examples/efind_vs_fast.py SPIDX_BINARY WORKDIR [N_OBJECTS]

Each query runs in a fresh `spidx query` process (the index reopened: read buffers and device
caches cold). Times are modelled elapsed times (process CPU + simulated device time).
Prints one JSON line per configuration, then Markdown tables of the gains
(time_FAST - time_eFIND) / time_FAST.
"""
import json, math, os, random, subprocess, sys

spidx, work = sys.argv[1], sys.argv[2]
n = sys.argv[3] if len(sys.argv) > 3 else "20000"
os.makedirs(work, exist_ok=True)
data = os.path.join(work, f"buildings-{n}.fgb")
if not os.path.exists(data):
    subprocess.run([spidx, "dataset", "generate", "--distribution", "buildings", "--count", n,
                    "--dims", "2", "--seed", "7", "--out", data], check=True,
                   capture_output=True)


def run(args):
    out = subprocess.run([spidx] + args + ["--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


info = run(["dataset", "info", data])["info"]["extent"]
(x0, y0), (x1, y1) = info["min"], info["max"]
side = math.sqrt(0.00001)  # 0.001 % of the extent's area
w, h = (x1 - x0) * side, (y1 - y0) * side
rng = random.Random(2026)
windows = []
for _ in range(100):
    qx, qy = rng.uniform(x0, x1 - w), rng.uniform(y0, y1 - h)
    windows.append(f"{qx},{qy},{qx + w},{qy + h}")

STORES = {
    "direct": ["--store", "direct"],
    "fast": ["--store", "fast", "--write-buffer", "512KB", "--flushing-unit", "5",
             "--flush-policy", "fast-star"],
    "efind": ["--store", "efind", "--write-buffer", "512KB", "--read-buffer-perc", "20",
              "--read-policy", "lru", "--temporal-control", "both", "--timestamp-perc", "50",
              "--flushing-unit", "5", "--flush-policy", "mthao"],
}
DEVICES = ["ssd-v300", "seed-table2"]
PAGES = ["2KB", "4KB", "8KB", "16KB", "32KB"]
res = {}
for device in DEVICES:
    for page in PAGES:
        for store, flags in STORES.items():
            out = os.path.join(work, f"{device}-{page}-{store}")
            subprocess.run(["rm", "-rf", out])
            b = run(["build", "--data", data, "--out", out, "--index", "rtree", "--split",
                     "quadratic", "--page-size", page, "--device", device] + flags)
            q = 0.0
            for win in windows:
                v = run(["query", out, "--window", win, "--filter-only"])
                q += v["elapsed_s"]
            r = {"device": device, "page": page, "store": store,
                 "construction_s": b["elapsed_s"],
                 "final_flush_s": b["final_flush"]["elapsed_s"],
                 "reads": b["reads"], "writes": b["writes"], "queries_s": q}
            res[(device, page, store)] = r
            print(json.dumps(r), flush=True)


def gain(a, b):
    return (b - a) / b * 100 if b else float("nan")


for device in DEVICES:
    print(f"\n{device}: construction (insertions + final write-back) and 100 queries, seconds")
    print("| page | direct build | FAST build | eFIND build | gain vs FAST | direct q | FAST q | eFIND q | gain vs FAST |")
    print("|---|---|---|---|---|---|---|---|---|")
    for page in PAGES:
        c = {s: res[(device, page, s)]["construction_s"] + res[(device, page, s)]["final_flush_s"]
             for s in STORES}
        q = {s: res[(device, page, s)]["queries_s"] for s in STORES}
        print(f"| {page} | {c['direct']:.3f} | {c['fast']:.3f} | {c['efind']:.3f} | "
              f"{gain(c['efind'], c['fast']):.0f} % | {q['direct']:.4f} | {q['fast']:.4f} | "
              f"{q['efind']:.4f} | {gain(q['efind'], q['fast']):.0f} % |")
