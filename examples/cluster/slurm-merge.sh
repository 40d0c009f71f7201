#!/bin/bash
# Merges the shards written by slurm-matrix.sh into results/all.db (run once, after the
# array has finished, from the same directory).
set -euo pipefail
spidx results merge results/shard-*.db --out results/all.db
