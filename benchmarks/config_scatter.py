"""How far apart submitters of the same configuration measure: a floor under any prediction
that sees only what a row states (docs/validation.md, "What a row does not say").

Rows are grouped when everything the toolkit reads from them is the same: the publication
round, model, GPU and count, bits, scenario, metric and its unit, stated layout, engine, batch
and token caps, and latency limits. Within a group each row is "predicted" by the median of the
rows of *other* submitters (``source_group``): an oracle that knows every other measurement of
the row's exact configuration, but not the submitter's own tuning (its target load, scheduler
settings, kernels). Its error is the spread that no function of the row's stated inputs can
remove; printed beside it, where ``--compare`` gives ``compare-measured`` outputs of the same
files, the model's error on the same rows. Last, the fewest rows that any prediction from the
rows' stated inputs must miss by more than 0.12 and 0.35 (one value per configuration, the best
one): the floor that submitters' spread puts under the accuracy goals; and, with ``--compare``,
how many rows the model misses by more than 0.35 against how many the other submitters' rate of
missing would give on the same rows; ``--by-configuration KIND``: the shared rows of that kind
one line per configuration, to see which configurations the misses come from.

    PYTHONPATH=. python benchmarks/config_scatter.py [FILE ...] [--compare OUT.csv ...]
        [--by-configuration KIND]

FILE: measured-rows CSVs (default ``tests/data/benchmarks_test_mlperf_newer.csv``), read
together so that a group spans them; ``--compare``: ``inference-econ compare-measured FILE
--format csv`` outputs, one per FILE in the same order (joined on the row number).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts, however run

from measured_files import compare_output, fail, measured_rows  # noqa: E402
from measured_validation import KINDS  # noqa: E402  (the kinds of figure by quantity)

from inference_econ.measured import comparison  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests" / "data" / "benchmarks_test_mlperf_newer.csv"


def publication_round(source: str) -> str:
    """``inference_results_v5.1`` -> ``v5.1``; a source without a round is its own round."""
    m = re.search(r"inference_results_(v\d+\.\d+)", source)
    return m.group(1) if m else source


def configuration(r) -> tuple:
    """Everything the toolkit reads from a resolved row that a prediction depends on."""
    layout = r.layout.label() if r.layout is not None else ""
    L = r.lengths
    return (
        publication_round(r.source), r.arch.name, r.gpu.name, r.gpus, r.bits, r.scenario,
        r.metric.quantity, r.per, layout, r.engine, r.engine_version, r.batch_cap,
        r.token_budget, r.fused_allreduce, r.kv_cache_fraction, r.scheduler_steps, r.chunked_prefill,
        r.mixed_chunk, r.admission_cadence, r.async_scheduling,
        r.limits, r.concurrency, r.disaggregated,
        round(L.input_mean) if L is not None else None,
    )  # fmt: skip


def frame(path: Path, compare: Path | None) -> pd.DataFrame:
    rows = measured_rows(path)
    out = []
    for r in rows:
        if r.kind != "end-to-end" or not r.resolved or r.value is None or r.metric is None:
            continue
        value = r.value * comparison._unit_scale(r) * r.per_count  # the system's figure, SI
        if not (math.isfinite(value) and value > 0):
            continue
        out.append(
            {
                "file": path.name,
                "row": r.row,
                "submitter": r.group,
                "config": configuration(r),
                "kind": KINDS.get(r.metric.quantity, "other"),
                "scenario": r.scenario,
                "measured": value,
                "value": r.value,
            }
        )
    t = pd.DataFrame(out)
    if compare is not None:
        c = compare_output(compare, ("row", "measured", "error", "status"))
        c = c[c.status == "ok"][["row", "measured", "error"]]
        pair = c.merge(t[["row", "value"]], on="row", how="left")
        off = pair[~((pair.measured / pair.value - 1.0).abs() <= 1e-6)]
        if len(off):  # a row the file lacks, or measured otherwise: not this file's output
            fail(f"{compare}: row {int(off.row.iloc[0])} is not the same row of {path}; pair each "
                 "compare-measured output with the file it was made from")  # fmt: skip
        c = c.drop(columns="measured").rename(columns={"error": "model_error"})
        t = t.merge(c, on="row", how="left")
    return t


def oracle(t: pd.DataFrame) -> pd.DataFrame:
    """Each row with another submitter of its configuration: the others' median / measured - 1."""
    parts = []
    for _, g in t.groupby("config", sort=False):
        if g.submitter.nunique() < 2:
            continue
        v, who = g.measured.to_numpy(), g.submitter.to_numpy()
        err = [np.median(v[who != s]) / x - 1.0 for x, s in zip(v, who)]
        parts.append(g.assign(oracle_error=err))
    return pd.concat(parts, ignore_index=True) if parts else t.iloc[:0].assign(oracle_error=[])


def fewest_missed(t: pd.DataFrame, tolerance: float) -> int:
    """The fewest rows any function of the rows' stated inputs must miss by more than
    ``tolerance`` (|predicted / measured - 1|): it predicts one value per configuration, and
    the best one lies inside the most of the rows' windows [(1 - tol) m, (1 + tol) m]."""
    missed = 0
    for _, g in t.groupby("config", sort=False):
        m = g.measured.to_numpy()
        lo, hi = (1.0 - tolerance) * m, (1.0 + tolerance) * m
        # the most windows holding one point: some window's end is such a point
        held = max(int(((lo <= x) & (x <= hi)).sum()) for x in np.concatenate([lo, hi]))
        missed += len(m) - held
    return missed


#: The issue's p90 goal: a figure off by more than this is a miss, and at most a tenth may be.
MISS = 0.35


def line(name: str, p: pd.DataFrame) -> dict:
    a = p.oracle_error.abs()
    out = {
        "rows": name,
        "n": len(p),
        "other submitters: median": a.median(),
        "p90": a.quantile(0.9),
        "misses": int((a > MISS).sum()),
    }
    if "model_error" in p and p.model_error.notna().any():
        m = p.model_error.dropna().abs()
        out |= {
            "model: median": m.median(),
            "model p90": m.quantile(0.9),
            "model misses": int((m > MISS).sum()),
        }
    return out


def misses_at_the_oracles_rate(t: pd.DataFrame, o: pd.DataFrame) -> tuple[int, float, int]:
    """(the model's misses on every row it predicted; the misses expected there at the other
    submitters' rate of each scenario and kind, measured on the shared rows; the most the p90
    goal allows). The rate is assumed to hold on rows no other submitter shares."""
    predicted = t[t.model_error.notna()]
    rate = o.groupby(["scenario", "kind"]).oracle_error.apply(
        lambda e: float((e.abs() > MISS).mean())
    )
    counts = predicted.groupby(["scenario", "kind"]).size()
    expected = float(sum(n * rate.get(key, 0.0) for key, n in counts.items()))
    return int((predicted.model_error.abs() > MISS).sum()), expected, int(0.1 * len(predicted))


def by_configuration(o: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The shared rows of ``kind``, one line per configuration (its round, model, GPUs,
    quantity and engine): rows, submitters, the other submitters' median |error|, and the
    model's median error (signed) and misses, most misses first."""
    p = o[o.kind == kind]
    if not len(p) or "model_error" not in p:
        return pd.DataFrame()
    name = p.config.map(lambda c: f"{c[0]} {c[1]} {c[2]} x{c[3]} {c[6]} {c[9]}")
    g = p.assign(configuration=name, miss=p.model_error.abs() > MISS).groupby("configuration")
    out = g.agg(
        rows=("miss", "size"),
        submitters=("submitter", "nunique"),
        others=("oracle_error", lambda e: e.abs().median()),
        model=("model_error", "median"),
        misses=("miss", "sum"),
    )
    return out.sort_values(["misses", "rows"], ascending=False).reset_index()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, default=[DEFAULT])
    parser.add_argument("--compare", nargs="*", type=Path, default=[], metavar="OUT.csv")
    parser.add_argument(
        "--by-configuration",
        choices=("throughput", "TPOT", "TTFT"),
        help="also list the shared rows of this kind by configuration (with --compare)",
    )
    args = parser.parse_args(argv)
    for f in [*args.files, *args.compare]:
        if not f.is_file():
            fail(f"{f}: no such file")
    if args.compare and len(args.compare) != len(args.files):
        fail(f"--compare: {len(args.compare)} files for {len(args.files)} measured files; one each")
    pairs = zip(args.files, args.compare or [None] * len(args.files))
    t = pd.concat([frame(f, c) for f, c in pairs], ignore_index=True)
    o = oracle(t)
    print(
        f"{len(t)} resolved end-to-end rows; {len(o)} share their configuration with another "
        f"submitter ({o.config.nunique() if len(o) else 0} configurations)\n"
    )
    table = [line("all", o)]
    table += [line(k, o[o.kind == k]) for k in ("throughput", "TPOT", "TTFT")]
    table += [line("latency (TPOT and TTFT)", o[o.kind != "throughput"])]
    for (sc, k), p in o.groupby(["scenario", "kind"]):
        table.append(line(f"  {sc} {k}", p))
    print(pd.DataFrame(table).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    # a floor under the goals (median 0.12, p90 0.35) that holds for any predictor
    print("\nThe fewest rows any prediction from the rows' stated inputs misses (all rows):")
    for tol in (0.12, 0.35):
        n = fewest_missed(t, tol)
        kinds = ", ".join(
            f"{k} {fewest_missed(t[t.kind == k], tol)}" for k in ("throughput", "TPOT", "TTFT")
        )
        print(f"  by more than {tol:.2f}: {n} of {len(t)} ({n / len(t):.1%}; {kinds})")
    if "model_error" in t and t.model_error.notna().any():
        model, expected, allowed = misses_at_the_oracles_rate(t, o)
        print(
            f"\nMisses by more than {MISS} on the {int(t.model_error.notna().sum())} rows the model "
            f"predicted: the model {model}; at the other submitters' rate of each scenario and kind "
            f"(measured on the shared rows, assumed on the others) {expected:.0f}; the p90 goal "
            f"allows {allowed}"
        )
    if args.by_configuration:
        shown = by_configuration(o, args.by_configuration)
        if not len(shown):
            fail("--by-configuration: no shared row of that kind with a prediction (--compare)")
        print(f"\nShared {args.by_configuration} rows by configuration (others: the other "
              f"submitters' median |error|; model: its median error, signed):")  # fmt: skip
        print(shown.to_string(index=False, formatters={"others": "{:.3f}".format,
                                                        "model": "{:+.3f}".format}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
