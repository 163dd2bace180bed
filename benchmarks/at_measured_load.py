"""Server and Interactive runs simulated at the load they measured: the step physics apart from
the operating point (docs/validation.md, "What a row does not say").

``compare-measured`` predicts a Server or Interactive run at the most load the row's limits
allow (docs/model.md §F9): an error there mixes two things, how fast the engine's steps are and
where the submitter chose to run. This re-runs each run's load engine at the request rate the
run itself measured (its output tokens per second over the mean output length) and sets the
model's mean and p99 TPOT and TTFT there beside the measured ones: a TPOT that is low at the
measured load means the modelled steps are too fast on that system, whatever its operating
point. Only runs with a throughput row and a stated layout are taken (one candidate layout, as
the submitter ran it); a run whose measured load exceeds what the model's engine holds shows a
TTFT that grows without bound (its queue never drains).

``--factors 0.9,1,1.1`` runs each at those multiples of its measured load as well and prints
the median model-over-measured ratio of each latency at each: how far a figure moves when the
operating point moves, which is how ill-conditioned a prediction read at the most load the
limits allow is (docs/validation.md, "How far a latency moves with the load").

    PYTHONPATH=. python benchmarks/at_measured_load.py [FILE] [-o runs.csv] [--factors F,...]

FILE: a measured-rows CSV (default ``tests/data/benchmarks_test_mlperf_newer.csv``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts, however run

from measured_files import fail, measured_rows, write_csv  # noqa: E402

from inference_econ.errors import InferenceEconError  # noqa: E402
from inference_econ.measured import comparison  # noqa: E402
from inference_econ.measured import predicting as pr  # noqa: E402
from inference_econ.measured import replay as rp  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "data" / "benchmarks_test_mlperf_newer.csv"
LATENCIES = ("tpot", "tpot_p99", "ttft", "ttft_p99")


def runs(rows) -> dict[str, list[int]]:
    """Row indices by run (the source up to its first " ("): one benchmark run's figures."""
    out: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r.kind != "end-to-end" or r.scenario not in ("server", "interactive"):
            continue
        if r.metric is None or r.value is None or not r.resolved:
            continue
        out.setdefault(r.source.split(" (")[0], []).append(i)
    return out


def at_load(rows, plan, run: str, idx: list[int], factors=(1.0,)) -> list[dict]:
    thr = [i for i in idx if rows[i].metric.quantity == "throughput"]
    lat = [i for i in idx if rows[i].metric.quantity in LATENCIES]
    if not thr or not lat:
        return []
    r = rows[thr[0]]
    cases = [c for (i, _), c in plan.load.items() if i == thr[0]]
    if len(cases) != 1:  # no stated layout: the model would pick one
        return []
    case = cases[0]
    try:
        inst = rp.instance(case)
    except InferenceEconError:
        return []
    tokens_per_s = r.value * comparison._unit_scale(r) * r.per_count  # the system's output tokens/s
    rate = tokens_per_s / case.output[0]
    requests = rp.server_requests(case, rp.estimate(case))
    out = []
    for factor in factors:
        res = rp._run(case, inst, requests, rate * factor, None)
        got = {
            "tpot": res.tpot_s.mean,
            "tpot_p99": res.tpot_s.p99,
            "ttft": res.ttft_s.mean,
            "ttft_p99": res.ttft_s.p99,
        }
        for j in lat:
            q = rows[j].metric.quantity
            measured = rows[j].value * comparison._unit_scale(rows[j])
            out.append(
                {
                    "run": run,
                    "model": r.arch.name,
                    "gpu": r.gpu.name,
                    "bits": r.bits[0],
                    "scenario": r.scenario,
                    "quantity": q,
                    "load_factor": factor,
                    "measured": measured,
                    "at_measured_load": got[q],
                    "ratio": got[q] / measured,
                }
            )
    return out


def parse_factors(text: str) -> tuple[float, ...]:
    """``--factors``: positive finite multiples of the measured load, 1 among them."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        fail(f"--factors {text!r}: write positive numbers joined by commas, e.g. 0.9,1,1.1")
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        fail(f"--factors {text!r}: each factor must be a positive finite number, e.g. 0.9,1,1.1")
    return tuple(sorted(set(values) | {1.0}))


def summary(t: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return (
        t.groupby(by)
        .agg(
            figures=("ratio", "size"),
            median_ratio=("ratio", "median"),
            median_abs_error=("ratio", lambda s: (s - 1).abs().median()),
            p90_abs_error=("ratio", lambda s: (s - 1).abs().quantile(0.9)),
        )
        .reset_index()
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("-o", "--out", type=Path, help="write every figure here (CSV)")
    parser.add_argument(
        "--factors", default="1", help="multiples of the measured load to run at (e.g. 0.9,1,1.1)"
    )
    args = parser.parse_args(argv)
    factors = parse_factors(args.factors)
    if not args.file.is_file():
        fail(f"{args.file}: no such file; pass a measured-rows CSV")
    t0 = time.process_time()
    rows = measured_rows(args.file)
    plan = pr.build_plan(rows, "achievable")
    lines = []
    for run, idx in runs(rows).items():
        lines += at_load(rows, plan, run, idx, factors)
    if not lines:
        print("no Server or Interactive run with a throughput row and a stated layout")
        return 0
    t = pd.DataFrame(lines)
    if args.out:
        write_csv(t, args.out, float_format="%.6g")
    fmt = lambda x: f"{x:.3f}"  # noqa: E731
    if len(factors) > 1:
        by_factor = t.pivot_table(
            index=["scenario", "quantity"], columns="load_factor", values="ratio", aggfunc="median"
        )
        by_factor.columns = [f"x{f:g} load" for f in by_factor.columns]
        print("Model over measured, median, at multiples of each run's measured load:")
        print(by_factor.to_string(float_format=fmt) + "\n")
    t = t[t.load_factor == 1.0]
    print(f"{t.run.nunique()} runs, {len(t)} latency figures of {args.file.name}\n")
    print(summary(t, ["scenario", "quantity"]).to_string(index=False, float_format=fmt))
    mean_tpot = t[t.quantity == "tpot"]
    print("\nMean TPOT at the measured load, by GPU and weight bits:")
    print(summary(mean_tpot, ["gpu", "bits", "scenario"]).to_string(index=False, float_format=fmt))
    cpu = time.process_time() - t0
    print(f"\nCPU: {cpu:.0f} s (PYTHONDONTWRITEBYTECODE=1: no compiled bytecode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
