"""The same benchmark on the same GPUs, round by round: how far measured throughput moves with
the software alone (docs/validation.md, "The software year").

Reads a measured-rows CSV of MLPerf results (default: the newer rounds,
``tests/data/benchmarks_test_mlperf_newer.csv``), keeps its system throughput rows, and prints
the median per-GPU throughput of each benchmark, GPU and scenario in each round
(``inference_results_vX.Y`` in the source), then the ratio of the newest round's figure to the
oldest one's where a benchmark ran on a GPU in two rounds or more. One model per engine predicts
one figure for all of them: the ratio is a floor under its error that no fit of older rounds
can remove.

    PYTHONPATH=. python benchmarks/round_spread.py [FILE] [--min-ratio 1.2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "data" / "benchmarks_test_mlperf_newer.csv"


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument(
        "--min-ratio", type=float, default=1.0, help="list only groups moving at least this much"
    )
    args = parser.parse_args(argv)
    if not args.file.is_file():
        fail(f"{args.file}: no such file; pass a measured-rows CSV")
    try:
        rows = pd.read_csv(args.file)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        fail(f"{args.file}: not a readable CSV ({exc.__class__.__name__})")
    missing = {"source", "model", "hardware", "n_gpus", "metric", "value"} - set(rows.columns)
    if missing:
        fail(f"{args.file}: no column {', '.join(sorted(missing))}; pass a measured-rows CSV")
    rows = rows[rows["metric"].eq("throughput_total")].copy()
    rows["round"] = rows["source"].str.extract(r"inference_results_(v[\d.]+)")[0]
    rows["scenario"] = rows["model"].str.extract(r"(Offline|Server|Interactive)\)")[0]
    rows["benchmark"] = rows["model"].str.replace(r" \(MLPerf.*", "", regex=True)
    rows["per_gpu"] = pd.to_numeric(rows["value"], errors="coerce") / pd.to_numeric(
        rows["n_gpus"], errors="coerce"
    )
    rows = rows.dropna(subset=["round", "scenario", "per_gpu"])
    if rows.empty:
        fail(f"{args.file}: no MLPerf throughput_total rows with a round in their source")
    table = (
        rows.groupby(["benchmark", "hardware", "scenario", "round"])["per_gpu"]
        .median()
        .unstack("round")
    )
    table = table[sorted(table.columns, key=lambda r: tuple(int(x) for x in r[1:].split(".")))]
    several = table.dropna(thresh=2)

    def newest_over_oldest(series):
        seen = series.dropna()
        return seen.iloc[-1] / seen.iloc[0]

    ratio = several.apply(newest_over_oldest, axis=1)
    out = several.round(0).assign(**{"newest / oldest": ratio.round(2)})
    out = out[ratio >= args.min_ratio]
    print(f"median output tokens/s per GPU by round ({args.file.name}, throughput_total rows)")
    print(out.to_string())
    print(
        f"\n{len(ratio)} groups in two rounds or more: newest / oldest median "
        f"{ratio.median():.2f}, range {ratio.min():.2f}-{ratio.max():.2f}; "
        f"{int((ratio >= 1.2).sum())} moved 20 % or more"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
