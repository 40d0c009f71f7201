#!/usr/bin/env python3
"""Table and chart of the HDD/SSD construction-time ratio from a results database made by
the specs in this directory (docs/devices.md, "HDD cache size vs index size").

    python3 examples/hdd_cache_sensitivity/chart.py hdd_cache.db docs/hdd_cache_sensitivity.svg

Prints a Markdown table (per dataset size and page size: index size, SSD time, and for each HDD
cache the time, the ratio HDD/SSD and the share of reads the drive's cache served) and writes an
SVG line chart of the ratio (log scale) against the dataset size, one panel per page size. Only
the Python standard library is used (sqlite3; the SVG is written by hand).
"""

import sqlite3
import sys
from collections import defaultdict

SIZES = {"30k": 30_000, "100k": 100_000, "300k": 300_000, "1m": 1_000_000}


def load(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = c.execute(
        """SELECT e.name, r.id, r.page_size, r.device, x.elapsed_s, x.reads
           FROM results x JOIN runs r ON r.id = x.run_id
           JOIN experiments e ON e.id = r.experiment_id
           WHERE e.name LIKE 'hdd-cache-%' AND r.status = 'finished'
           ORDER BY r.id"""
    ).fetchall()
    metric = lambda rid, name: (
        c.execute("SELECT value FROM metrics WHERE run_id = ? AND name = ?", (rid, name)).fetchone()
        or [None]
    )[0]
    data = {}  # (n, page) -> device -> dict; the newest run of each configuration wins
    for exp, rid, page, device, elapsed, reads in rows:
        n = SIZES[exp.removeprefix("hdd-cache-")]
        hits = metric(rid, "device.hdd.buffer_hits")
        data.setdefault((n, page), {})[device] = {
            "elapsed": elapsed,
            "reads": reads,
            "hit": None if hits is None or not reads else hits / reads,
            "index_bytes": (metric(rid, "store.pages_in_use") or 0) * page,
        }
    return data


def table(data):
    devices = sorted(
        {d for runs in data.values() for d in runs if d != "ssd-v300"},
        key=lambda d: int(d.split()[1].removesuffix("MB")),
    )
    head = ["objects", "page", "index", "ssd-v300 s"] + [
        f"{d}: s, HDD/SSD, cache-served reads" for d in devices
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (n, page), runs in sorted(data.items()):
        ssd = runs.get("ssd-v300")
        if not ssd:
            continue
        cells = [
            f"{n:,}",
            f"{page // 1024} KB",
            f"{ssd['index_bytes'] / 2**20:.1f} MB",
            f"{ssd['elapsed']:.1f}",
        ]
        for d in devices:
            h = runs.get(d)
            cells.append(
                "–"
                if h is None
                else f"{h['elapsed']:.1f}, **{h['elapsed'] / ssd['elapsed']:.2f}**, {100 * h['hit']:.1f} %"
            )
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out), devices


def svg(data, devices, path):
    import math

    pages = sorted({p for _, p in data})
    ns = sorted({n for n, _ in data})
    w, h, left, top, pw, ph, gap = 760, 380, 70, 40, 300, 260, 60
    colours = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"]
    ratios = [
        runs[d]["elapsed"] / runs["ssd-v300"]["elapsed"]
        for runs in data.values()
        if "ssd-v300" in runs
        for d in devices
        if d in runs
    ]
    lo = 10 ** math.floor(math.log10(min(ratios + [1.0])))
    hi = 10 ** math.ceil(math.log10(max(ratios + [1.0])))
    y = lambda r: top + ph * (math.log10(hi) - math.log10(r)) / (math.log10(hi) - math.log10(lo))
    s = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="14">Construction time on hdd-7200 / on ssd-v300 (R-tree linear, buildings)</text>',
    ]
    for i, page in enumerate(pages):
        x0 = left + i * (pw + gap)
        x = lambda n: x0 + 20 + (pw - 40) * ns.index(n) / max(1, len(ns) - 1)
        s.append(f'<rect x="{x0}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        s.append(f'<text x="{x0 + pw / 2}" y="{top - 6}" text-anchor="middle">{page // 1024} KB pages</text>')
        e = math.log10(lo)
        while e <= math.log10(hi) + 1e-9:
            for m in (1, 2, 5):
                r = m * 10**e
                if lo <= r <= hi:
                    s.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y(r):.1f}" y2="{y(r):.1f}" stroke="#ddd"/>')
                    s.append(f'<text x="{x0 - 4}" y="{y(r) + 4:.1f}" text-anchor="end">{r:g}</text>')
            e += 1
        s.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="#000" stroke-dasharray="4 3"/>')
        for n in ns:
            s.append(f'<text x="{x(n):.1f}" y="{top + ph + 16}" text-anchor="middle">{n // 1000}k</text>')
        s.append(f'<text x="{x0 + pw / 2}" y="{top + ph + 32}" text-anchor="middle">objects</text>')
        for j, d in enumerate(devices):
            pts = [
                (x(n), y(data[(n, page)][d]["elapsed"] / data[(n, page)]["ssd-v300"]["elapsed"]))
                for n in ns
                if (n, page) in data and d in data[(n, page)] and "ssd-v300" in data[(n, page)]
            ]
            c = colours[j % len(colours)]
            s.append(
                f'<polyline fill="none" stroke="{c}" stroke-width="2" points="'
                + " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
                + '"/>'
            )
            for px, py in pts:
                s.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{c}"/>')
    s.append(
        f'<text transform="translate(16 {top + ph / 2}) rotate(-90)" text-anchor="middle">HDD time / SSD time (log; below 1: HDD faster)</text>'
    )
    for j, d in enumerate(devices):
        lx = left + j * 170
        s.append(f'<rect x="{lx}" y="{h - 22}" width="12" height="12" fill="{colours[j % len(colours)]}"/>')
        s.append(f'<text x="{lx + 16}" y="{h - 12}">{d}</text>')
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = load(sys.argv[1])
    text, devices = table(data)
    print(text)
    svg(data, devices, sys.argv[2])


if __name__ == "__main__":
    main()
