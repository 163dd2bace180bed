"""Runs of one configuration under two engine builds in AIConfigurator's measured runs
(tests/data/aic_silicon_runs.csv.gz): how far their mean TPOT and mean TTFT lie apart, and the
model's mean TPOT against each build's (docs/validation_residuals_silicon.csv, what
``silicon_runs_judge.py --residuals`` writes), by model, GPU and build.

    PYTHONPATH=. python benchmarks/silicon_builds.py [--older BUILD] [--newer BUILD]

A configuration is everything a row states but its engine build and value: model, format,
GPU, layout, concurrency, lengths and the limits the benchmark generator set. Where a build
measures a configuration more than once its median stands for it. A decode step that got
faster while the prompt did not (TPOT down, TTFT level or up) is what a kernel change on the
decode path or a technique the rows do not state (speculative decoding) looks like: the source's
columns record neither (``silicon_sample.csv`` at 095f58a has no speculation field).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "tests" / "data" / "aic_silicon_runs.csv.gz"
RESIDUALS = ROOT / "docs" / "validation_residuals_silicon.csv"
#: What names a configuration, besides its build and value (the notes' first clause is the
#: layout and the limits the benchmark generator set).
CONFIGURATION = (
    "model", "precision", "hardware", "parallelism", "batch_or_concurrency", "input_len",
    "output_len",
)  # fmt: skip


def _configuration(runs: pd.DataFrame) -> pd.Series:
    limits = runs["notes"].str.split(";").str[0]
    return runs[list(CONFIGURATION)].astype(str).agg("|".join, axis=1) + "|" + limits


def paired(runs: pd.DataFrame, older: str, newer: str) -> pd.DataFrame:
    """(model, hardware, metric, configurations, median / min / max of older over newer) for
    the configurations both builds measured."""
    runs = runs.assign(config=_configuration(runs))
    medians: dict = defaultdict(dict)
    for (config, metric, engine), values in runs.groupby(["config", "metric", "engine"])["value"]:
        medians[(config, metric)][engine] = statistics.median(values)
    out = defaultdict(list)
    for (config, metric), by_build in medians.items():
        if older in by_build and newer in by_build and by_build[newer] > 0:
            model, _, gpu = config.split("|")[:3]
            out[(model, gpu, metric)].append(by_build[older] / by_build[newer])
    rows = [(m, g, q, len(r), statistics.median(r), min(r), max(r)) for (m, g, q), r in out.items()]
    columns = ["model", "GPU", "metric", "configurations", "median", "min", "max"]
    return pd.DataFrame(rows, columns=columns).sort_values(["model", "GPU", "metric"])


def model_by_build(runs: pd.DataFrame, residuals: pd.DataFrame, builds) -> pd.DataFrame:
    """The model's mean TPOT over the measured, median and quartiles, by model, GPU and build
    (``builds``), joined on the residual file's row numbers."""
    runs = runs.assign(row=range(2, len(runs) + 2))
    tpot = residuals[residuals["kind"] == "TPOT"]
    joined = tpot.merge(runs[["row", "engine", "hardware"]], on="row")
    joined = joined[joined["engine"].isin(builds)]
    ratio = joined["predicted"] / joined["measured"]
    grouped = ratio.groupby([joined["model"], joined["hardware"], joined["engine"]])
    out = grouped.describe()[["count", "25%", "50%", "75%"]].reset_index()
    out["count"] = out["count"].astype(int)
    return out.rename(columns={"50%": "median", "hardware": "GPU", "engine": "build"})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--older", default="TensorRT-LLM 1.2.0rc6.post2")
    parser.add_argument("--newer", default="TensorRT-LLM 1.2.0rc6.post3")
    args = parser.parse_args(argv)
    start = time.process_time()
    runs = pd.read_csv(RUNS)
    pairs = paired(runs, args.older, args.newer)
    if pairs.empty:
        print(
            f"{RUNS.name}: no configuration measured under both {args.older!r} and {args.newer!r}"
        )
        return 2
    print(f"Configurations measured under both builds: {args.older} over {args.newer}")
    print(pairs.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    residuals = pd.read_csv(RESIDUALS)
    models = set(pairs["model"])
    table = model_by_build(runs, residuals, (args.older, args.newer))
    table = table[table["model"].isin(models)]
    print("\nThe model's mean TPOT over the measured, by build (every run of the residual file)")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"\nCPU: {time.process_time() - start:.1f} s (PYTHONDONTWRITEBYTECODE=1: no bytecode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
