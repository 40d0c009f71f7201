#!/usr/bin/env bash
# spidx next to its same-capacity peers: Boost.Geometry's rtree and libspatialindex (built
# from crates/spidx-bench/peers/ by scripts/build-peers when their headers are installed;
# skipped with a message otherwise) and the rstar crate, all run by `index_vs_libs` in
# turns (A B C ... A B C ...) over one workload, every answer checked against brute force.
# Prints the header of the table (command, machine, load, date) and the Markdown table of
# CPU-time ratios peer / spidx (> 1: spidx faster), median (min–max) over ROUNDS rounds.
#
#   bench/peers.sh [N] [ROUNDS] [IMPLS]
#
# N rectangles (default 1000000), ROUNDS interleaved rounds (default 3), IMPLS the
# implementations (default: the pairs of the table). Needs the release binary:
# cargo build --release -p spidx-bench --bin index_vs_libs
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1000000}
rounds=${2:-3}
impls=${3:-spidx-linear,boost-linear102,boost-linear100,spidx-quadratic,boost-quadratic102,spidx-rstar30,boost-rstar102,rstar,spidx-hilbert,spidx-bulk-str,boost-pack102,boost-pack100}
ivl=${INDEX_VS_LIBS:-$here/target/release/index_vs_libs}
"$here/scripts/build-peers" >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cmd=("$ivl" --n "$n" --rounds "$rounds" --reps 5 --impls "$impls" --no-file --no-sim
  --peers-dir "$here/target/peers" --ratios "$out/ratios.md" --json)
"${cmd[@]}" >"$out/report.json" 2>"$out/log.txt" || { cat "$out/log.txt" >&2; exit 1; }
echo "command: bench/peers.sh $n $rounds $impls"
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))," \
  "$(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo)"
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"load average: {r['load'][0]} before, {r['load'][1]} after")
PY
echo "date: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$here" rev-parse --short HEAD)"
echo
cat "$out/ratios.md"
echo
python3 - "$out/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = [x for x in r["results"] if x.get("knn_node_reads")]
if rows:
    print("| spidx variant | kNN node reads per query | kNN CPU ns per node read |")
    print("|---|---|---|")
    for x in rows:
        q = x["knn_queries"]
        cpu = sorted(x["knn_cpu_s"])[len(x["knn_cpu_s"]) // 2]
        reads = x["knn_node_reads"]
        print(f"| {x['name']} | {reads / q:.2f} | {cpu * 1e9 / reads:.0f} |")
PY
