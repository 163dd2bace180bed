"""The kernel clock's step held against the newer MLPerf rounds, before and after
(docs/model.md "A step as operations"): ``compare-measured`` under ``achievable`` with the
engine profiles' per-class efficiencies, and with ``kernel_tables`` (each operation at its
measured kernel's time, ``model/kernel_clock.py``), on a subset of runs fixed before any
number was seen: every Interactive run and a random tenth (seed 0) of the others
(``tests/data/benchmarks_test_mlperf_newer.csv``; a run is the rows of one log summary).

Prints, by kind (throughput, TPOT, TTFT) and clock, the rows predicted and the median and
90th-percentile |predicted/measured - 1|, and the Interactive TTFT rows that miss by more
than 35 %.

    PYTHONPATH=. python benchmarks/kernel_step_judge.py [--share 0.1] [--keep DIR]

With ``--keep DIR`` each clock's table is kept as DIR/<clock>.csv and read back when it is
there: run ``--clock engine`` and ``--clock kernels`` side by side, then both to print.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.measured.comparison import compare  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
NEWER = DATA / "benchmarks_test_mlperf_newer.csv"
#: A miss: |predicted/measured - 1| above this.
MISS = 0.35
KINDS = {"throughput": "throughput", "TPOT": "TPOT", "TTFT": "TTFT"}


def subset(share: float, seed: int = 0) -> pd.DataFrame:
    """Every Interactive run's rows and a random ``share`` of the other runs' (``seed``)."""
    rows = pd.read_csv(NEWER)
    run = rows.source.str.split(" ").str[0]
    interactive = rows.model.str.contains("Interactive")
    others = sorted(set(run[~interactive]))
    rng = np.random.default_rng(seed)
    picked = set(rng.choice(others, size=round(share * len(others)), replace=False))
    return rows[interactive | run.isin(picked)]


def judged(path: str, kernel_tables: bool) -> pd.DataFrame:
    """The comparison table of the rows at ``path`` under ``achievable``."""
    a = ie.preset("achievable").replace(kernel_tables=kernel_tables)
    t = compare(path, a).table
    t = t[t.status == "ok"].copy()
    t["abs_error"] = t.error.abs()
    t["interactive"] = t.source.str.contains("Interactive")
    t["kind"] = t.metric.map(lambda m: next((k for k in KINDS if k in m), "other"))
    return t


def summary(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Rows, median and p90 |error| by kind and clock; the Interactive TTFT misses."""
    out = []
    for clock, t in tables.items():
        for kind, g in t.groupby("kind"):
            e = g.abs_error
            out.append(
                {"clock": clock, "kind": kind, "rows": len(g), "median": e.median(),
                 "p90": e.quantile(0.9)}
            )  # fmt: skip
        ttft = t[(t.kind == "TTFT") & t.interactive]
        out.append(
            {"clock": clock, "kind": "Interactive TTFT > 35 %", "rows": len(ttft),
             "median": float((ttft.abs_error > MISS).sum()), "p90": np.nan}
        )  # fmt: skip
    return pd.DataFrame(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--share", type=float, default=0.1, help="share of other runs")
    parser.add_argument("--clock", choices=("engine", "kernels", "both"), default="both")
    parser.add_argument("--keep", help="a folder to keep each clock's table in")
    args = parser.parse_args()
    rows = subset(args.share)
    clocks = {"engine": False, "kernels": True}
    if args.clock != "both":
        clocks = {args.clock: clocks[args.clock]}
    tables = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "subset.csv")
        rows.to_csv(path, index=False)
        for name, flag in clocks.items():
            kept = Path(args.keep) / f"{name}.csv" if args.keep else None
            if kept is not None and kept.exists():
                tables[name] = pd.read_csv(kept)
                continue
            start = time.time()
            tables[name] = judged(path, flag)
            print(f"{name}: {time.time() - start:.0f} s", file=sys.stderr)
            if kept is not None:
                tables[name].to_csv(kept, index=False)
    print(f"{len(rows)} rows of {rows.source.str.split(' ').str[0].nunique()} runs")
    print(summary(tables).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
