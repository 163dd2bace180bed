"""The time split's per-row residuals, from ``compare-measured`` outputs of the shipped profiles
(docs/validation.md; what ``benchmarks/interval_coverage.py`` calibrates and measures on).

The shipped engine profiles are the time split's fit (``fit_engines.py`` fits them to the
training file alone, as ``measured_validation.py`` does), so ``inference-econ compare-measured
FILE --assumptions achievable`` predicts a newer file exactly as the time split does, up to the
five significant digits the profiles are written with (MLPerf v5.0: 302 figures, median
difference below 10⁻⁵, largest 0.6 % on a p99 TTFT). Its outputs can be run in parallel (in
pieces of a file) and reused, where ``measured_validation.py --no-loso --residuals`` spends
about 5,800 s of CPU in one process predicting them again beside the priors-only and in-sample
tables. This writes the same columns as its ``--residuals``.

    inference-econ compare-measured tests/data/benchmarks_train_mlperf_v50.csv \\
        --assumptions achievable -o v50.csv
    inference-econ compare-measured tests/data/benchmarks_test_mlperf_newer.csv \\
        --assumptions achievable -o newer.csv
    PYTHONPATH=. python benchmarks/compare_residuals.py \\
        tests/data/benchmarks_train_mlperf_v50.csv v50.csv \\
        tests/data/benchmarks_test_mlperf_newer.csv newer.csv -o residuals.csv

Arguments come in pairs: a measured-rows CSV and its ``compare-measured`` CSV output (joined
on the row number; the output must be of the whole file, not a piece of it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts, however run

from measured_files import compare_output, fail, measured_rows, write_csv  # noqa: E402
from measured_validation import KINDS  # noqa: E402  (the kinds of figure by quantity)

from inference_econ.measured import comparison  # noqa: E402
from inference_econ.measured.intervals import regime  # noqa: E402
from inference_econ.serving import interval_table as ivt  # noqa: E402

COLUMNS = {"row", "measured", "predicted", "status", "kind"}


def residuals(path: Path, compare: Path, gpus: set, models: set) -> pd.DataFrame:
    """One line per end-to-end row predicted with status ok (SI units)."""
    out = compare_output(compare, COLUMNS)
    rows = {r.row: r for r in measured_rows(path)}
    out = out[(out.status == "ok") & (out.kind == "end-to-end")]
    lines = []
    for o in out.itertuples():
        r = rows.get(int(o.row))
        if r is None or r.metric is None or r.kind != "end-to-end":
            fail(f"{compare}: row {o.row} is not an end-to-end row of {path}; pair each "
                 "compare-measured output with the file it was made from")  # fmt: skip
        if not (np.isfinite(o.predicted) and np.isfinite(o.measured) and o.measured > 0):
            continue
        if r.value is None or abs(o.measured / r.value - 1.0) > 1e-6:
            fail(f"{compare}: row {o.row}'s measured value {o.measured:g} is not {path}'s "
                 f"({r.value:g}); pair each output with the file it was made from")  # fmt: skip
        q = r.metric.quantity
        arch, bound, nodes = regime(r)
        scale = comparison._unit_scale(r)
        lines.append(
            {
                "file": path.name,
                "row": r.row,
                "source": r.group,
                "kind": KINDS.get(q, "other"),
                "scenario": r.scenario or "",
                "quantity": q,
                "architecture": arch,
                "bound": bound,
                "nodes": nodes,
                "gpu": r.gpu.name,
                "model": r.arch.name,
                "gpu_in_fit": r.gpu.name in gpus,
                "model_in_fit": r.arch.name in models,
                "predicted": o.predicted * scale,
                "measured": o.measured * scale,
                "log_residual": float(np.log(o.predicted / o.measured)),
            }
        )
    return pd.DataFrame(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", nargs="+", type=Path, metavar="FILE COMPARE.csv")
    parser.add_argument("-o", "--out", type=Path, required=True, help="residuals CSV to write")
    args = parser.parse_args(argv)
    if len(args.pairs) % 2:
        fail("give pairs: a measured-rows CSV, then its compare-measured output")
    for f in args.pairs:
        if not f.is_file():
            fail(f"{f}: no such file")
    if args.out.exists() and args.out.resolve() in {p.resolve() for p in args.pairs}:
        fail(f"{args.out}: is one of the inputs; write the residuals elsewhere")
    # the GPUs and models of the fit, as the shipped interval table lists them (written there
    # from the fit's rows by interval_coverage.py --write, which also recomputes them itself)
    listed = yaml.safe_load(Path(ivt.table().path).read_text())
    gpus, models = set(listed["fitted_gpus"]), set(listed["fitted_models"])
    it = iter(args.pairs)
    frames = [residuals(f, c, gpus, models) for f, c in zip(it, it)]
    table = pd.concat(frames, ignore_index=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    write_csv(table, tmp, float_format="%.6g")
    tmp.replace(args.out)
    print(f"wrote {args.out}: {len(table)} residuals", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
