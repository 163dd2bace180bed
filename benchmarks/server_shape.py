"""Why replayed Server rows' mean TTFT and mean TPOT come out low while their p99s are near
(issue 21; docs/model.md §F9, "The shape of a replayed Server run"): each Server and Interactive
latency row's statistic over the whole simulated run (the prediction) next to the same statistic
over the requests that arrived in the run's second half, against the measured value, and the
simulated TPOT by arrival fifth (the run fills for most of its length).

    python benchmarks/server_shape.py tests/data/benchmarks_train.csv \\
        tests/data/benchmarks_train_mlperf_v50.csv

Runs ``compare-measured FILE --assumptions achievable`` on each file (the same simulations; each
run's per-request latencies are kept as it is read); prints one line per quantity, one line per
Server/Interactive run of the TPOT by arrival fifth, and the CPU seconds. A diagnosis, not a
prediction: MLPerf LoadGen counts every request of its run (``results.cc``), so the second-half
figures are not what a benchmark reports; they show how much of the gap the run's fill explains.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.measured import comparison, replay  # noqa: E402

#: Arrival fifths of a run whose mean TPOT is printed.
PARTS = 5


def _runs() -> list:
    """Wrap ``replay._scaled`` to keep every Server/Interactive run it reads: (case, result)."""
    kept: list = []
    scaled = replay._scaled

    def keep(case, result, rate=float("nan")):
        if case.scenario in ("server", "interactive") and result.latencies is not None:
            kept.append((case, result))
        return scaled(case, result, rate)

    replay._scaled = keep
    return kept


def _quantity(metric: str) -> tuple[str, bool] | None:
    m = metric.lower()
    which = "ttft" if "ttft" in m else "tpot" if ("tpot" in m or "itl" in m) else None
    return None if which is None else (which, "p99" in m)


def _stat(values: np.ndarray, p99: bool) -> float:
    v = values[np.isfinite(values)]
    return float(np.percentile(v, 99) if p99 else v.mean()) if v.size else float("nan")


def rows_of(path: str, kept: list, fifths: dict) -> list[dict]:
    """Each latency row of ``path`` with its whole-run and second-half statistics; ``fifths``
    takes the mean TPOT by arrival fifth over the p99 TPOT of each run a row reads."""
    kept.clear()
    table = comparison.compare(path, assumptions="achievable").table
    table = table[(table.status == "ok") & table.scenario.isin(["server", "interactive"])]
    out = []
    for _, r in table.iterrows():
        q = _quantity(str(r.metric))
        if q is None or not np.isfinite(r.predicted):
            continue
        which, p99 = q
        for case, result in kept:  # the run whose statistic is the row's prediction
            lat = getattr(result.latencies, f"{which}_s")
            whole = _stat(lat, p99)
            scale = r.predicted / whole if whole > 0 else float("nan")  # the row's unit
            if not any(abs(scale - s) <= 1e-6 * s for s in (1.0, 1e3)):
                continue
            late = scale * _stat(lat[len(lat) // 2 :], p99)
            name = f"{'p99' if p99 else 'mean'} {which.upper()}"
            out.append(dict(quantity=name, measured=r.measured, whole=r.predicted, late=late))
            key = (case.setting.model.name, case.setting.gpu.name, case.scenario)
            parts = np.array_split(result.latencies.tpot_s, PARTS)
            fifths.setdefault(key, {})["fifths"] = [
                np.nanmean(x) / result.tpot_s.p99 for x in parts
            ]
            if name == "mean TPOT":
                fifths[key]["step"] = operating_point(case, result, r.measured / scale)
            break
    return out


def step_s(case, inst, x: float) -> float:
    """Seconds of a steady Server run's step of ``x`` tokens on the case's instance: decoding
    requests ``x / (1 + n_in/n_out)`` at their mean context, the rest prompt tokens."""
    n_in, n_out = case.prompt[0], max(case.output[0], 1.0)
    B = x / (1.0 + n_in / n_out)
    kv = B * float(inst.positions(n_in + n_out / 2.0))
    att = kv + (x - B) * float(inst.positions(n_in / 2.0))
    return float(inst.table.time_s(int(round(x)), kv, att, B + 1.0))


def operating_point(case, result, measured_tpot_s: float) -> tuple:
    """(x̄, t(x̄), x_m, rate(x_m)/rate(x̄) - 1): the run's mean step tokens and their step time,
    the step tokens whose time is the measured mean TPOT, and how much more tokens per second
    the engine serves there than at x̄ (the run's step: its mean decoding batch with the prompt
    tokens that replace them)."""
    inst = replay.instance(case)
    n_in, n_out = case.prompt[0], max(case.output[0], 1.0)
    x = result.mean_batch * (1.0 + n_in / n_out)
    lo, hi = 1.0, float(inst.table.max_tokens)
    if step_s(case, inst, hi) < measured_tpot_s:
        return x, step_s(case, inst, x), float("nan"), float("nan")
    for _ in range(40):  # bisection: the step time rises with its tokens
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if step_s(case, inst, mid) < measured_tpot_s else (lo, mid)
    xm = 0.5 * (lo + hi)
    gain = (xm / step_s(case, inst, xm)) / (x / step_s(case, inst, x)) - 1.0
    return x, step_s(case, inst, x), xm, gain


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    start = time.process_time()
    kept = _runs()
    rows: list[dict] = []
    fifths: dict = {}
    for f in args.files:
        rows += rows_of(f, kept, fifths)
    d = pd.DataFrame(rows)
    for col in ("whole", "late"):
        d[f"log_{col}"] = np.log(d[col] / d.measured)
        d[f"err_{col}"] = (d[col] / d.measured - 1).abs()
    print(
        "quantity    rows  median log(pred/meas): whole run / 2nd half   median |error|: whole / 2nd half"
    )
    for q, g in d.groupby("quantity"):
        print(
            f"{q:10s} {len(g):5d}  {g.log_whole.median():+.3f} / {g.log_late.median():+.3f}"
            f"{'':24s}{g.err_whole.median():.3f} / {g.err_late.median():.3f}"
        )
    print(
        f"\n{len(fifths)} runs read: mean TPOT by arrival fifth over the run's p99 TPOT; the run's"
        " mean step (tokens, s); the step whose time is the measured mean TPOT (tokens), and the"
        " engine's tokens/s there over the run's step's"
    )
    for key, v in sorted(fifths.items()):
        line = f"  {' / '.join(key):45s} " + " ".join(f"{x:.2f}" for x in v["fifths"])
        if "step" in v:
            x, t, xm, gain = v["step"]
            line += f"   {x:6.0f} tok {t:.3f} s   {xm:6.0f} tok {gain:+.1%}"
        print(line)
    print(
        f"CPU: {time.process_time() - start:.0f} s (no compiled bytecode: "
        f"{bool(sys.flags.dont_write_bytecode)})"
    )


if __name__ == "__main__":
    main_()
