"""Where a closed loop's first token waits beyond the model's prompt step, judged on
AIConfigurator's measured runs (tests/data/aic_silicon_runs.csv.gz, their residuals in
docs/validation_residuals_silicon.csv, which ``silicon_runs_judge.py --residuals`` writes): the
mean TTFT of the lightest loads (``--clients`` or fewer), measured against predicted, by engine,
model, GPU and layout, and how the measured TTFT moves with the tensor degree beside the
model's. A prompt step that is GPU-bound shortens as the tensor degree grows; one held up by
the host (a step run outside a CUDA graph, its Python dispatch longer than its kernels) does
not. The runs judge the model; nothing is fitted to them.

    PYTHONPATH=. python benchmarks/closed_loop_ttft.py [--clients 4] [--prompt 1024]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "tests" / "data" / "aic_silicon_runs.csv.gz"
RESIDUALS = ROOT / "docs" / "validation_residuals_silicon.csv"
#: Columns naming one configuration apart from its tensor degree and its load.
CONFIG = ["engine_family", "model", "gpu", "input_len"]


def light_ttfts(clients: int, prompt: int | None):
    """The TTFT residuals of runs of at most ``clients`` clients (and of ``prompt`` tokens
    where given), with each run's engine family, layout, load and lengths."""
    import pandas as pd

    runs = pd.read_csv(RUNS)
    res = pd.read_csv(RESIDUALS)
    res = res[(res.file == RUNS.name) & (res.kind == "TTFT")].copy()
    at = res.row.to_numpy() - 2  # a residual's row is its line in the file, the header line 1
    for column in ("engine", "parallelism", "batch_or_concurrency", "input_len", "output_len"):
        res[column] = runs[column].to_numpy()[at]
    if not (runs.metric.to_numpy()[at] == "mean_TTFT").all():
        raise SystemExit(f"{RESIDUALS.name} does not match {RUNS.name}: rerun silicon_runs_judge")
    res["engine_family"] = res.engine.str.split().str[0]
    res["tensor"] = res.parallelism.str.extract(r"(\d+)", expand=False).astype(float)
    res["predicted_ms"] = 1e3 * res.predicted
    res["measured_ms"] = 1e3 * res.measured
    keep = res.batch_or_concurrency <= clients
    if prompt is not None:
        keep &= res.input_len == prompt
    return res[keep]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4, help="the heaviest load kept")
    parser.add_argument("--prompt", type=int, help="only runs of this many prompt tokens")
    args = parser.parse_args(argv)
    start = time.process_time()
    t = light_ttfts(args.clients, args.prompt)
    group = [*CONFIG, "parallelism"]
    by = t.groupby(group)[["predicted_ms", "measured_ms"]].median()
    by["measured_over_predicted"] = by.measured_ms / by.predicted_ms
    by["added_ms"] = by.measured_ms - by.predicted_ms
    print(f"Mean TTFT of runs of at most {args.clients} clients (median over their runs), ms")
    print(by.round(2).to_string())
    print("\nBy engine: runs, median measured/predicted, median ms added")
    t = t.assign(ratio=t.measured_ms / t.predicted_ms, added=t.measured_ms - t.predicted_ms)
    print(t.groupby("engine_family")[["ratio", "added"]].agg(["size", "median"]).round(2))
    # how TTFT moves from the narrowest to the widest tensor degree of one configuration
    rows = []
    for key, g in t.groupby(CONFIG):
        g = g.groupby("tensor")[["predicted_ms", "measured_ms"]].median()
        if len(g) < 2:
            continue
        lo, hi = g.index.min(), g.index.max()
        rows.append((*key, f"TP{lo:g}->{hi:g}", *(g.loc[hi] / g.loc[lo]).to_numpy()))
    if rows:
        import pandas as pd

        names = [*CONFIG, "degrees", "predicted_ratio", "measured_ratio"]
        moves = pd.DataFrame(rows, columns=names).set_index(CONFIG)
        print("\nTTFT at the widest tensor degree over the narrowest (1: flat in the degree)")
        print(moves.round(2).to_string())
        flat = np.median(moves.measured_ratio)
        print(f"\nmedian: predicted {np.median(moves.predicted_ratio):.2f}, measured {flat:.2f}")
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
