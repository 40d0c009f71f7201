#!/bin/bash
# One shard of matrix.toml per Slurm array task (docs/experiments.md, "Many machines").
# Submit from the directory holding matrix.toml:   sbatch examples/cluster/slurm-matrix.sh
# Afterwards, once:                                 bash examples/cluster/slurm-merge.sh
# Slurm's task ids are 0-based with --array=0-N; the shard count is the array's size.
#SBATCH --array=0-15
#SBATCH --cpus-per-task=1
#SBATCH --job-name=spidx-matrix
set -euo pipefail
mkdir -p results
spidx run matrix.toml --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
  --results "results/shard-$SLURM_ARRAY_TASK_ID.db" --quiet
