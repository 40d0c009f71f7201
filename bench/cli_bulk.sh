#!/usr/bin/env bash
# Bulk loads through the command line next to the library and rstar (issue 31, item 2), on
# the same rectangles: `index_vs_libs` writes its workload (N uniform rectangles, seed 1) into
# WORKDIR, `spidx build --data WORKDIR/rects.wkt --index rstar --bulk METHOD` builds from it
# (memory device, 4 KB checked pages, fill 100 %: the library rows' tree) and reports its
# construction phase's CPU time (`--json`: the bulk load alone; reading the file and storing
# the exact geometries are the separate `load` phase), and `index_vs_libs` runs the library's
# bulk loads and rstar's `RTree::bulk_load` in child processes. ROUNDS rounds, the three
# taking turns in each; prints each one's median CPU seconds and the ratios to rstar
# (> 1: spidx faster). The command line runs twice per method: as installed and with
# MIMALLOC_ALLOW_THP=0 (mimalloc without transparent huge pages, as the benchmark binary's
# system allocator works): `spidx build --bulk` turns huge pages off itself, so the two rows
# should agree; on a build that does not, the first row shows what fresh huge pages cost.
#
#   bench/cli_bulk.sh SPIDX INDEX_VS_LIBS WORKDIR [ROUNDS] [N]
#
# SPIDX and INDEX_VS_LIBS are release binaries (`cargo build --release -p spidx-cli
# -p spidx-bench`: target/release/spidx and target/release/index_vs_libs).
set -euo pipefail
SPIDX=$1
IVL=$2
WORK=$3
ROUNDS=${4:-5}
N=${5:-1000000}
mkdir -p "$WORK"
if [ ! -f "$WORK/workload.json" ]; then
  "$IVL" --workload-dir "$WORK" --n "$N" --k 0 --reps 1 --impls rstar-bulk --no-file --no-sim \
    >/dev/null
fi
log="$WORK/cli_bulk.tsv"
: >"$log"
for round in $(seq "$ROUNDS"); do
  for method in str omt; do
    for thp in 1 0; do
      rm -rf "$WORK/idx"
      cpu=$(MIMALLOC_ALLOW_THP=$thp "$SPIDX" build --data "$WORK/rects.wkt" --index rstar \
        --bulk "$method" --out "$WORK/idx" --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["cpu_s"])')
      name="cli-$method"
      [ "$thp" = 0 ] && name="$name-nothp"
      printf '%s\t%s\n' "$name" "$cpu" >>"$log"
    done
  done
  "$IVL" --workload-dir "$WORK" --k 0 --reps 1 --no-file --no-sim --json \
    --impls rstar-bulk,spidx-bulk-str,spidx-bulk-omt 2>/dev/null |
    python3 -c 'import json,sys
for r in json.load(sys.stdin)["results"]:
    print("%s\t%s" % (r["name"], r["insert_cpu_s"]))' >>"$log"
  echo "round $round of $ROUNDS done" >&2
done
rm -rf "$WORK/idx"
python3 - "$log" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, cpu = line.split("\t")
    runs.setdefault(name, []).append(float(cpu))
ref = statistics.median(runs["rstar-bulk"])
print("bulk load of the same rectangles, CPU s (median of %d; ratio = rstar-bulk / it)" % len(runs["rstar-bulk"]))
for name in ["cli-str", "cli-str-nothp", "spidx-bulk-str", "cli-omt", "cli-omt-nothp", "spidx-bulk-omt", "rstar-bulk"]:
    m = statistics.median(runs[name])
    print("%-15s median %.3f (min %.3f, max %.3f)  %.2fx rstar-bulk" % (name, m, min(runs[name]), max(runs[name]), ref / m))
EOF
