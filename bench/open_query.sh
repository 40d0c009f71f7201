#!/usr/bin/env bash
# Open + one window query on simulated indices (issue 31, item 1): builds a 100 k and a 1 M
# uniform-rectangle index on the ssd-v300 preset (bulk STR, geometries stored) with the
# spidx binary BIN, then times `spidx query` (a whole process: open the index, one window
# of 0.01 % of the extent, print the ids) RUNS times, and a checkpoint of the unchanged
# 1 M index (`spidx recover`, which writes one), with /usr/bin/time. Prints the state
# files' sizes and the medians.
#
#   bench/open_query.sh BIN WORKDIR [RUNS]
#
# Run it once per binary (e.g. built at two commits) and compare; WORKDIR keeps the
# datasets and indices (built once, reused).
set -euo pipefail
BIN=$1
WORK=$2
RUNS=${3:-9}
mkdir -p "$WORK"
tag=$(basename "$BIN")
for n in 100k 1M; do
  data="$WORK/u$n.fgb"
  [ -f "$data" ] || "$BIN" dataset generate --distribution uniform --count "$n" --out "$data"
  idx="$WORK/$tag-$n"
  if [ ! -f "$idx/index.json" ]; then
    rm -rf "$idx"
    /usr/bin/time -f "build $n: wall %e s, user %U s, sys %S s" \
      "$BIN" build --data "$data" --index rtree --bulk str --device ssd-v300 --out "$idx" >/dev/null
  fi
  echo "$tag $n: state files: $(cd "$idx" && ls -l device.state* | awk '{printf "%s %d B; ", $NF, $5}')"
  # A window of 0.01 % of the [0, 1e6]^2 extent in its middle.
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %U %S" "$BIN" query "$idx" --window 495000,495000,505000,505000 --ids \
      2>&1 >/dev/null | tail -1
  done | sort -n | awk -v t="$tag $n query" '{w[NR]=$1; c[NR]=$2+$3} END {
      m=int((NR+1)/2); printf "%s: median wall %.3f s (min %.3f, max %.3f), CPU of that run %.3f s\n",
      t, w[m], w[1], w[NR], c[m] }'
done
# Bytes a process writes (every write/pwrite system call, stdout included), with strace.
written() {
  local log="$WORK/strace.log"
  strace -f -e trace=write,pwrite64,writev,pwritev -o "$log" "$@" >/dev/null
  awk '/= [0-9]+$/ {s += $NF} END {print s+0}' "$log"
  rm -f "$log"
}
if command -v strace >/dev/null; then
  tmpidx="$WORK/$tag-1M-strace"
  rm -rf "$tmpidx"
  echo "$tag 1M build: $(written "$BIN" build --data "$WORK/u1M.fgb" --index rtree --bulk str \
    --device ssd-v300 --out "$tmpidx") bytes written"
  echo "$tag 1M checkpoint of the unchanged index (spidx recover): $(written "$BIN" recover "$tmpidx") bytes written"
  rm -rf "$tmpidx"
fi
