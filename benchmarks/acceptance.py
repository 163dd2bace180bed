"""The accuracy goal's figures on the newer rounds, from ``compare-measured`` outputs of the
shipped profiles (docs/validation.md, "The accuracy today").

For each measured-rows CSV it reads two ``compare-measured --format csv`` outputs of the whole
file: one under ``achievable`` (the expected figures) and one under ``refined`` (the ideal
bound), and prints what the acceptance asks, in the tables ``measured_validation.py`` prints:

* median and 90th-percentile |error| of the expected figures (rows with status ok), throughput
  and latency rows apart, and by scenario and kind;
* the share of end-to-end rows given a prediction (status ok or derived) under ``achievable``;
* the rows that beat the ``refined`` bound by more than 5 % (``compare-measured``'s own check).

The shipped profiles are the time split's fit (``fit_engines.py`` fits them to the training file
alone), so on a file newer than the training file these are the time split's figures. The
priors-only, in-sample and leave-one-source-out tables are ``measured_validation.py``'s, which
predicts every row again.

    inference-econ compare-measured tests/data/benchmarks_test_mlperf_newer.csv \\
        --assumptions achievable --format csv -q > newer.csv
    inference-econ compare-measured tests/data/benchmarks_test_mlperf_newer.csv \\
        --assumptions refined --format csv -q > newer_refined.csv
    PYTHONPATH=. python benchmarks/acceptance.py \\
        tests/data/benchmarks_test_mlperf_newer.csv newer.csv newer_refined.csv

Arguments come in threes: a measured-rows CSV, its ``achievable`` output, its ``refined`` output
(each of the whole file; joined on the row number).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling scripts, however run

from measured_files import compare_output, computed_with, fail, measured_rows  # noqa: E402
from measured_validation import KINDS, by_kind, resolved_share, stats  # noqa: E402

from inference_econ.measured import comparison  # noqa: E402
from inference_econ.output.render import render  # noqa: E402

COLUMNS = {"row", "measured", "predicted", "status", "kind"}
GOAL_MEDIAN, GOAL_P90, GOAL_RESOLVED = 0.12, 0.35, 0.85


#: The engine each preset's output must name: the shipped profiles, row by row, or none.
ENGINES = {"achievable": "each row's engine", "refined": "none"}


def output(path: Path, preset: str, rows: dict, source: Path) -> pd.DataFrame:
    """The end-to-end lines of a ``compare-measured`` output of the whole of ``source`` under
    ``preset``, one per row, or one line and exit 2."""
    frame = compare_output(path, COLUMNS | ({"beats_bound"} if preset == "refined" else set()))
    named, engine = computed_with(path)
    if named != preset:
        fail(f"{path}: is an output of {named or 'no stated preset'}, not {preset}; pass "
             f"compare-measured --assumptions {preset} --format csv of {source.name}")  # fmt: skip
    if engine != ENGINES[preset]:
        fail(f"{path}: was run with engine {engine or 'unstated'}, not the shipped profiles "
             f"({ENGINES[preset]}); rerun compare-measured without --engine")  # fmt: skip
    ends = frame[frame.kind == "end-to-end"]
    rows_of = pd.to_numeric(ends.row, errors="coerce")
    if rows_of.isna().any() or rows_of.duplicated().any() or set(rows_of.astype(int)) != set(rows):
        fail(f"{path}: its end-to-end rows are not {source.name}'s, once each ({len(ends)} "
             f"lines against {len(rows)} rows); pass an output of the whole file")  # fmt: skip
    for row, measured in zip(rows_of.astype(int), ends.measured):
        value = rows[row].value
        same = (value is None and not np.isfinite(measured)) or (
            value is not None and abs(measured / value - 1.0) <= 1e-6
        )
        if not same:
            fail(f"{path}: row {row} measured {measured:g}, not {source.name}'s {value}; pass "
                 "an output of that file")  # fmt: skip
    return ends.assign(row=rows_of.astype(int).to_numpy())


def table(path: Path, achievable: Path, refined: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one line per end-to-end row of ``path``: its status and expected figure, in SI units,
    an unreadable row with its reason; the ``refined`` output's end-to-end lines)."""
    if computed_with(path)[0]:
        fail(f"{path}: is a compare-measured output; each three starts with the measured-rows CSV "
             "it was made from")  # fmt: skip
    rows = {r.row: r for r in measured_rows(path) if r.kind == "end-to-end"}
    if not rows:
        fail(f"{path}: has no end-to-end row (a throughput or latency of a served model)")
    out = output(achievable, "achievable", rows, path)
    bound = output(refined, "refined", rows, path)
    lines = []
    for o in out.itertuples():
        r = rows[o.row]
        q = r.metric.quantity if r.metric is not None else ""
        scale = comparison._unit_scale(r) if r.metric is not None else 1.0
        lines.append(
            {
                "row": r.row,
                "scenario": r.scenario or "",
                "quantity": q,
                "kind": KINDS.get(q, "other"),
                "status": o.status,
                "measured": o.measured * scale,
                "predicted": o.predicted * scale,
            }
        )
    return pd.DataFrame(lines), bound


def _true(value) -> bool:
    """A ``beats_bound`` cell read back from CSV: True, or text that says so."""
    return value is True or str(value).strip().lower() == "true"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("triples", nargs="+", type=Path, metavar="FILE ACHIEVABLE.csv REFINED.csv")
    parser.add_argument("--format", default="markdown", choices=("table", "markdown"))
    parser.error = lambda message: fail(f"{message}; see --help")  # type: ignore[method-assign]
    args = parser.parse_args(argv)
    if len(args.triples) % 3:
        fail("give threes: a measured-rows CSV, its achievable output, its refined output")
    it = iter(args.triples)
    for path, achievable, refined in zip(it, it, it):
        t, bound = table(path, achievable, refined)
        label = "expected (achievable, the shipped profiles)"
        title = f"{path.name} predicted by the shipped profiles (fitted to benchmarks_train.csv)"
        print(render(pd.DataFrame(by_kind(t, "predicted", label)), args.format, title=title))
        s = stats(t, "predicted")
        share = resolved_share(t)
        beats = int(bound.beats_bound.map(_true).sum())
        ok = int((bound.status == "ok").sum())

        def met(good: bool) -> str:
            return "met" if good else "not met"

        print(
            f"Acceptance on {path.name}: median abs. error {s['median abs. error']:.4f} (goal <= "
            f"{GOAL_MEDIAN}, {met(s['median abs. error'] <= GOAL_MEDIAN)}), p90 "
            f"{s['p90 abs. error']:.4f} (goal <= {GOAL_P90}, {met(s['p90 abs. error'] <= GOAL_P90)}), "
            f"rows resolved {share:.1%} of {len(t)} (goal >= {GOAL_RESOLVED:.0%}, "
            f"{met(share >= GOAL_RESOLVED)}), "
            f"rows beating the refined bound by more than 5 %: {beats} of {ok} (goal 0, "
            f"{met(beats == 0)})\n"
        )
        parts = []
        for (scenario, kind), g in t.groupby(["scenario", "kind"], sort=True):
            s = stats(g, "predicted")
            if s["rows"]:
                parts.append({"scenario": scenario, "kind": kind, **s})
        print(render(pd.DataFrame(parts), args.format, title=f"{path.name}, by scenario and kind"))
        why = t.status[~t.status.str.split(":").str[0].isin(["ok", "derived"])]
        if len(why):
            reasons = why.str.split(":").str[0].value_counts().rename("rows").reset_index()
            print(render(reasons, args.format, title=f"Rows of {path.name} without a prediction"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
