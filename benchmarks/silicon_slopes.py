"""How the engine step grows with its batch, judged on AIConfigurator's measured runs
(tests/data/aic_silicon_runs.csv.gz): for every sweep of one model, precision, GPU, layout,
lengths and TensorRT-LLM version measured at two or more loads of ``--from`` clients and more,
the mean TPOT each client adds between its lightest and heaviest load (microseconds a client),
measured against predicted. A step whose fixed part is too large and whose part per request is
too small cancels at one load and errs at the others: this prints the slope apart from the
level. The runs judge the model; nothing is fitted to them.

    PYTHONPATH=. python benchmarks/silicon_slopes.py [--from 64] [--moe | --dense]
        [--clock kernels] [--rows]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "data" / "aic_silicon_runs.csv.gz"
#: A sweep: the runs that differ only in their clients.
SWEEP = ["model", "precision", "hardware", "parallelism", "input_len", "output_len", "engine"]


def sweeps(table, lightest: int, moe: bool | None):
    """The TensorRT-LLM mean-TPOT runs of ``lightest`` clients and more whose sweep holds two
    or more loads (``moe``: only MoE models, only dense ones, or both for None)."""
    t = table[
        (table.metric == "mean_TPOT")
        & (table.batch_or_concurrency >= lightest)
        & table.engine.str.contains("TensorRT")
    ]
    if moe is not None:
        t = t[t.group.ne("dense") == moe]
    loads = t.groupby(SWEEP).batch_or_concurrency.transform("nunique")
    return t[loads >= 2].reset_index(drop=True)


def slopes(runs):
    """One line per sweep: its lightest and heaviest load, measured and predicted TPOT at
    each, and the TPOT a client adds between them (microseconds), measured and predicted."""
    out = []
    for key, s in runs.groupby(SWEEP, sort=True):
        s = s.sort_values("batch_or_concurrency").drop_duplicates("batch_or_concurrency")
        lo, hi = s.iloc[0], s.iloc[-1]
        clients = float(hi.batch_or_concurrency - lo.batch_or_concurrency)
        measured = (hi.value - lo.value) / clients * 1e3
        predicted = (hi.predicted - lo.predicted) / clients * 1e3
        out.append((key, lo, hi, measured, predicted))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT))
    parser.add_argument("--from", dest="lightest", type=int, default=64, help="fewest clients")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--moe", action="store_true", help="MoE models only")
    which.add_argument("--dense", action="store_true", help="dense models only")
    parser.add_argument("--clock", choices=("engine", "kernels"), default="engine")
    parser.add_argument("--rows", action="store_true", help="print every sweep")
    args = parser.parse_args(argv)
    import pandas as pd

    from inference_econ.measured.comparison import compare
    from inference_econ.model.assumptions import preset

    start = time.process_time()
    moe = True if args.moe else False if args.dense else None
    runs = sweeps(pd.read_csv(args.file), args.lightest, moe)
    if runs.empty:
        print(f"{args.file}: no sweep of two loads of {args.lightest} clients or more")
        return 2
    base = preset("achievable").replace(kernel_tables=args.clock == "kernels")
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        runs.to_csv(f, index=False)
    got = compare(f.name, assumptions=base).table
    Path(f.name).unlink()
    runs["predicted"] = got["predicted"].to_numpy()
    runs = runs[got["status"].to_numpy() == "ok"]
    lines = slopes(runs)
    print(f"{args.file}: {len(lines)} sweeps ({args.clock} clock), TPOT a client adds, us")
    by_group: dict[str, list[tuple[float, float, float]]] = {}
    for key, lo, hi, measured, predicted in lines:
        group = "dense" if lo.group == "dense" else "MoE"
        if measured > 0:
            level = (lo.predicted / lo.value, hi.predicted / hi.value)
            by_group.setdefault(group, []).append((predicted / measured, *level))
        if args.rows:
            model, precision, gpu, layout, n_in, n_out, _ = key
            print(
                f"  {model[:16]:16s} {precision[:8]:8s} {gpu:9s} {layout:10s} "
                f"{n_in:>5}/{n_out:<5} {int(lo.batch_or_concurrency):>4}-"
                f"{int(hi.batch_or_concurrency):<4} measured {measured:7.1f}  "
                f"predicted {predicted:7.1f}"
            )
    for group, ratios in sorted(by_group.items()):
        r = np.asarray(ratios)
        print(
            f"  {group:6s} sweeps {len(r):4d}  predicted/measured: slope median "
            f"{np.median(r[:, 0]):.2f} (10th-90th percentile {np.quantile(r[:, 0], 0.1):.2f}-"
            f"{np.quantile(r[:, 0], 0.9):.2f}); TPOT at the lightest load "
            f"{np.median(r[:, 1]):.2f}, at the heaviest {np.median(r[:, 2]):.2f}"
        )
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
