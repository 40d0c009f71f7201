# %% [markdown]
# # A small spidx matrix from Python
#
# Runs `small_matrix.toml` (8 runs: two trees x two page sizes x two simulated devices),
# loads the results as a pandas DataFrame and plots construction writes and query time.
# Run it as a script (`python examples/python/matrix.py`) or cell by cell in Jupyter/VS Code.
# Needs: `pip install ./python[examples]` (spidx, pandas, matplotlib).

# %%
import pathlib
import sys

import matplotlib

if "ipykernel" not in sys.modules:
    matplotlib.use("Agg")  # as a script: write the figure to a file
import matplotlib.pyplot as plt

import spidx

here = pathlib.Path(__file__).resolve().parent
out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here / "out"
out.mkdir(parents=True, exist_ok=True)
db = out / "results.db"

# %% Run the matrix (a run that finished before is skipped: resume)
summary = spidx.run(here / "small_matrix.toml", db, resume=True)
failed = [r for r in summary["runs"] if r["status"] != "finished"]
print(f"{len(summary['runs'])} runs done, {summary['skipped']} skipped, {len(failed)} failed")
if failed:
    sys.exit(f"failed runs: {failed}")

# %% Load the results: one row per run and workload
df = spidx.results(db, experiment="python-example", latest=True)
print(df[["run", "workload", "elapsed_s", "reads", "writes"]].to_string(index=False))

# %% Plot: construction page writes and the range queries' (modelled) time per run
fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
build = df[df["kind"] == "construction"]
a.barh(build["run"], build["writes"], color="#0072B2")
a.set_xlabel("page writes (construction)")
queries = df[df["kind"] == "range"]
b.barh(queries["run"], queries["elapsed_s"], color="#E69F00")
b.set_xlabel("modelled seconds (50 windows, sum of per-query means)")
b.set_yticks([])
fig.suptitle("R-tree vs R*-tree on simulated devices (spidx)")
fig.savefig(out / "matrix.png", dpi=100)
print(f"figure: {out / 'matrix.png'}")
