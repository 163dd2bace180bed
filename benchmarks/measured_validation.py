"""The achievable preset against the project's 590 public results (docs/validation.md,
"Achievable preset: measured against predicted"): leave-one-source-out errors by source,
metric, GPU and model, the coarser leave-one-publication-out split, the priors alone and the
ideal presets, the measured-vs-predicted figure of the held-out predictions, and (--nested) a
nested cross-validation of the prior weight.

    python benchmarks/measured_validation.py                      # tables (about 10 s)
    python benchmarks/measured_validation.py --figure docs/img/measured-vs-predicted.png
    python benchmarks/measured_validation.py --nested             # + nested CV (a few minutes)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from inference_econ.output.render import render
from inference_econ.studies.measured import calibration as cal
from inference_econ.studies.measured.predicting import compare
from inference_econ.studies.measured.reading import load_measured
from inference_econ.studies.measured.semantics import TIMES

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "benchmarks_train.csv"
#: Prior weights the nested cross-validation chooses among (fixed before running it).
WEIGHTS = (0.05, 0.15, 0.5, 1.5)


def _stats(e) -> dict:
    a = np.abs(np.asarray(e, float))
    return {
        "rows": len(a),
        "median |error|": float(np.median(a)),
        "p90 |error|": float(np.quantile(a, 0.9)),
        "median error": float(np.median(e)),
    }


def breakdown(table: pd.DataFrame, column: str) -> dict:
    """Tables of the held-out errors by held-out source, metric, GPU and model."""
    e = table[column] / table.measured - 1.0
    out = {}
    for by in ("source", "metric", "GPU", "model"):
        rows = [{by: name, **_stats(e[g.index])} for name, g in table.groupby(by, sort=True)]
        rows.append({by: "all rows", **_stats(e)})
        out[by] = pd.DataFrame(rows)
    return out


def annotated(result) -> pd.DataFrame:
    rows = {r.row: r for r in load_measured(DATA)}
    t = result.predictions.copy()
    t["metric"] = [f"{rows[i].scenario} {rows[i].metric.quantity}" for i in t.row]
    t["GPU"] = [rows[i].gpu.name for i in t.row]
    t["model"] = [rows[i].arch.name for i in t.row]
    return t


def nested(progress) -> pd.DataFrame:
    """Outer leave-one-source-out; inside every outer fold the prior weight is chosen by
    leave-one-source-out on the remaining sources (median |error|, then p90), then refitted."""
    notes: list = []
    problem, micro = cal.prepare(DATA, "trtllm", lambda m: None, notes)
    priors = cal._usable_priors(problem, notes, lambda m: None, {k for k in micro if "." not in k})
    values, errors = cal._fit(problem, priors)
    priors, values, _ = cal._drop_unconstrained(
        problem, priors, values, errors, notes, lambda m: None
    )
    keys = [p.key for p in priors]
    groups = problem.groups
    held = np.full(len(groups), np.nan)
    chosen = []
    for k, name in enumerate(sorted(set(groups)), 1):
        test = groups == name
        inner = ~test & ~cal._duplicates(problem, test)
        scores = {}
        for w in WEIGHTS:
            problem.prior_weight = w
            h, _, _ = cal.leave_one_out(problem, priors, values, groups, subset=inner)
            err = np.abs(h[inner] / problem.measured[inner] - 1.0)
            scores[w] = (np.median(err), np.quantile(err, 0.9))
        best = min(WEIGHTS, key=lambda w: scores[w])
        problem.prior_weight = best
        v, _ = cal._fit(problem, priors, subset=inner, x0=values)
        held[test] = problem.predict(v, keys)[0][test]
        chosen.append({"held-out source": name, "prior weight chosen": best})
        progress(f"outer fold {k}: {name}: weight {best}")
    problem.prior_weight = cal.PRIOR_WEIGHT
    e = held / problem.measured - 1.0
    summary = pd.DataFrame(chosen)
    return summary, _stats(e)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", help="write the measured-vs-predicted figure here (PNG)")
    parser.add_argument("--nested", action="store_true", help="also nested CV of the prior weight")
    parser.add_argument("--format", default="markdown", choices=("table", "markdown"))
    args = parser.parse_args()
    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    by_source = cal.calibrate(DATA, progress=say)
    by_publication = cal.calibrate(DATA, progress=say, split="publication")
    t = annotated(by_source)
    print(f"Command: python benchmarks/measured_validation.py {' '.join(sys.argv[1:])}\n")
    head = pd.DataFrame(
        [
            {"": "paper preset (ideal bound)", **_paper_stats(t)},
            {"": "achievable, priors only (no fit)", **_stats(t.prior / t.measured - 1)},
            {"": "achievable, fitted to all rows (in sample)", **_stats(t.fitted / t.measured - 1)},
            {"": "achievable, leave one source out", **_stats(t.held_out / t.measured - 1)},
            {
                "": "achievable, leave one publication out",
                **_stats(
                    by_publication.predictions.held_out / by_publication.predictions.measured - 1
                ),
            },
        ]
    )
    print(render(head, args.format, title=f"{len(t)} end-to-end rows with status ok"))
    for by, table in breakdown(t, "held_out").items():
        print(render(table, args.format, title=f"Left out one source at a time, by {by}"))
    pub = annotated(by_publication)
    print(
        render(
            breakdown(pub, "held_out")["source"],
            args.format,
            title="Left out one publication at a time (MLPerf v4.1's submitters held out together)",
        )
    )
    if args.figure:
        from inference_econ.output.plots import measured_figure, save

        # the fit's values are in SI units: latencies in seconds, the rest tokens/s (streams)
        quantity = t.metric.str.split().str[-1]
        unit = np.where(
            quantity.isin(TIMES), "s", np.where(quantity == "streams", "streams", "tok/s")
        )
        table = t.assign(status="ok", source_group=t.source, predicted=t.held_out, unit=unit)
        fig = measured_figure(
            table,
            title=f"Achievable preset, each source predicted by a fit on the others ({len(t)} rows)",
        )
        stem = str(Path(args.figure).with_suffix(""))
        save(fig, stem, ("png",))
        say(f"wrote {args.figure}")
    if args.nested:
        chosen, stats = nested(say)
        print(
            render(
                chosen, args.format, title="Nested cross-validation: prior weight per outer fold"
            )
        )
        print(
            f"Nested leave-one-source-out: median {stats['median |error|']:.3f}, p90 {stats['p90 |error|']:.3f}\n"
        )
    return 0


def _paper_stats(t: pd.DataFrame) -> dict:
    """The paper preset's errors on the same rows (its predictions are in the rows' units)."""
    paper = compare(DATA, "paper").table.set_index("row")
    return _stats(paper.loc[t.row, "error"].to_numpy())


if __name__ == "__main__":
    sys.exit(main())
