"""How the engine step ranks the layouts of one model on one GPU against published measurements
(tests/data/layout_rankings.csv; docs/validation.md "Layout rankings").

For every group of the file (one model, GPU, engine, lengths and load; several layouts) it
prints each layout's measured and predicted figure (output tok/s per GPU for throughputs, ms for
TPOT) and the ratio, the measured and predicted orders, and the pairs the prediction sets the
other way round from the measurement by more than ``rankings.TOLERANCE``; then the groups
ordered and the median |predicted/measured - 1| of attention-DP layouts and of the others.

    PYTHONPATH=. python benchmarks/layout_ranking.py [--assumptions achievable]
        [--clock rows|engine|kernels] [FILE]

``--clock``: each row on the clock ``compare-measured`` prices it by (``rows``, the default:
the kernel clock where it states an engine version the kernel tables time, docs/model.md
"Which clock prices a measured row"), every row on the engine profile's terms (``engine``) or
every row at its measured kernels' times (``kernels``).

Run it from an older checkout (with this file and ``measured/rankings.py`` copied in) for the
ranking before a change.

``--silicon RESIDUALS`` ranks AIConfigurator's measured runs instead, from the predictions
``silicon_runs_judge.py --residuals`` wrote (``docs/validation_residuals_silicon.csv``, each
row of ``tests/data/aic_silicon_runs.csv.gz``): a group is one model, GPU, engine version,
precision, lengths and batch a rank (``max_batch_size``) run under two or more layouts; per
figure (mean TPOT, and the throughput per GPU derived from TPOT and TTFT) the pairs measured
apart by more than the tolerance and those the prediction sets the other way round by more
than it, by model and GPU generation, and every misordered pair.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from inference_econ.measured.rankings import TOLERANCE, misordered, ranked_rows  # noqa: E402

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "data" / "layout_rankings.csv"
#: ``--clock`` -> the preset's ``kernel_tables``.
CLOCKS = {"rows": None, "engine": False, "kernels": True}


def _figure(x: float, better: int) -> str:
    return f"{x * 1e3:9.2f} ms" if better < 0 else f"{x:9.0f} /GPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DEFAULT))
    parser.add_argument("--assumptions", default="achievable")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="rows")
    parser.add_argument("--silicon", metavar="RESIDUALS", help="rank AIConfigurator's runs")
    args = parser.parse_args()
    start = time.process_time()
    if args.silicon:
        silicon(args.silicon)
        print(f"CPU {time.process_time() - start:.1f} s")
        return 0
    from inference_econ.model.assumptions import preset

    assumptions = preset(args.assumptions)
    if CLOCKS[args.clock] is not None:  # (an older checkout's Assumptions may lack the field)
        assumptions = assumptions.replace(kernel_tables=CLOCKS[args.clock])
    rows = ranked_rows(args.file, assumptions=assumptions)
    groups = list(dict.fromkeys(r.group for r in rows))
    ordered = 0
    errors: dict[bool, list[float]] = {True: [], False: []}
    for g in groups:
        members = [r for r in rows if r.group == g]
        wrong = misordered(members)
        ordered += not wrong
        print(f"{g}  {'ordered' if not wrong else 'MISORDERED'}")
        for r in members:
            ratio = r.predicted / r.measured
            errors["DEP" in r.layout].append(abs(ratio - 1.0))
            print(
                f"    {r.layout:10s} measured {_figure(r.measured, r.better)}  "
                f"predicted {_figure(r.predicted, r.better)}  ratio {ratio:5.2f}"
            )

        def order(key, members=members):
            best = sorted(members, key=lambda r: -r.better * key(r))
            return " > ".join(r.layout for r in best)

        print(f"    measured:  {order(lambda r: r.measured)}")
        print(f"    predicted: {order(lambda r: r.predicted)}")
        for a, b in wrong:
            print(f"    reversed beyond {TOLERANCE:.0%}: {a.layout} over {b.layout}")
    print(f"\n{ordered} of {len(groups)} groups ordered as measured (tolerance {TOLERANCE:.0%})")
    for dp, label in ((True, "attention-DP layouts"), (False, "other layouts")):
        e = errors[dp]
        print(f"median |predicted/measured - 1|, {label}: {np.median(e):.3f} ({len(e)} rows)")
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


SILICON = Path(__file__).resolve().parent.parent / "tests" / "data" / "aic_silicon_runs.csv.gz"
#: Residual kinds ranked, and whether larger is better.
SILICON_KINDS = {"TPOT": -1, "throughput": 1}


def silicon_groups(residuals: str):
    """(kind, group key, architecture, generation, [Ranked, ...]) of every group of
    AIConfigurator's runs with two or more layouts, from ``residuals`` joined to the runs file
    by row. A layout is its sizes (tensor, pipeline, attention-DP, expert tensor and expert
    degrees, as the notes state them), named by its ``parallelism`` and, where two layouts of
    a group share that name, its sizes; a layout measured more than once is the mean of its
    runs (measured and predicted)."""
    import pandas as pd

    from inference_econ.measured.rankings import Ranked
    from inference_econ.serving.support import generation

    res = pd.read_csv(residuals)
    runs = pd.read_csv(
        SILICON,
        usecols=[
            *("model", "parallelism", "engine", "precision", "input_len", "output_len"),
            "notes",
        ],
    )
    runs["row"] = np.arange(len(runs)) + 2  # a residual's row: its line in the runs file
    runs["batch"] = runs["notes"].str.extract(r"max_batch_size (\d+)")[0]
    runs["sizes"] = runs["notes"].str.extract(
        r"(tp_size \d+, pp_size \d+, attention_dp_size \d+, moe_tp_size \d+, moe_ep_size \d+)"
    )[0]
    res = res[res.file.str.startswith("aic_silicon_runs") & res.kind.isin(list(SILICON_KINDS))]
    res = res.drop(columns=["notes", "model"]).merge(runs, on="row", how="left")
    res["generation"] = res.gpu.map(generation)
    keys = ["kind", "model", "gpu", "engine", "precision", "input_len", "output_len", "batch"]
    out = []
    for key, g in res.groupby(keys, dropna=False, sort=True):
        layouts = g.groupby(["parallelism", "sizes"], dropna=False, sort=True).agg(
            measured=("measured", "mean"), predicted=("predicted", "mean")
        )
        if len(layouts) < 2:
            continue
        names = layouts.index.get_level_values(0)
        shared = set(names[names.duplicated()])
        better = SILICON_KINDS[key[0]]
        ranked = [
            Ranked(str(key), f"{p} ({z})" if p in shared else p, float(m), float(q), better)
            for (p, z), m, q in zip(layouts.index, layouts.measured, layouts.predicted)
        ]
        out.append((key[0], key, g.architecture.iloc[0], g.generation.iloc[0], ranked))
    return out


def silicon(residuals: str) -> None:
    """Print the ranking of AIConfigurator's runs (``--silicon``)."""
    import collections

    groups = silicon_groups(residuals)
    stats: dict = collections.defaultdict(lambda: [0, 0, 0, 0])  # groups, pairs, wrong, bad
    wrong_lines = []
    for kind, key, arch, gen, ranked in groups:
        wrong = misordered(ranked)
        apart = sum(
            abs(a.measured / b.measured - 1.0) > TOLERANCE
            for i, a in enumerate(ranked)
            for b in ranked[i + 1 :]
        )
        for k in ((kind, "all", ""), (kind, key[1], gen), (kind, arch, gen)):
            s = stats[k]
            s[0], s[1], s[2], s[3] = s[0] + 1, s[1] + apart, s[2] + len(wrong), s[3] + bool(wrong)
        for a, b in wrong:
            wrong_lines.append(
                f"    {kind}: {key[1]} on {key[2]} ({key[3]}, {key[4]}, {key[5]}/{key[6]}, "
                f"{key[7]} a rank): {a.layout} measured {a.measured:.4g} against {b.layout}'s "
                f"{b.measured:.4g}, predicted {a.predicted:.4g} against {b.predicted:.4g}"
            )
    print(f"AIConfigurator's runs by layout ({residuals}; tolerance {TOLERANCE:.0%})")
    print(f"{'figure':10s} {'model or architecture':22s} {'generation':10s} "
          f"{'groups':>6s} {'pairs apart':>11s} {'misordered':>10s}")  # fmt: skip
    for (kind, name, gen), (n, pairs, wrong, _) in sorted(stats.items()):
        print(f"{kind:10s} {name:22s} {gen:10s} {n:6d} {pairs:11d} {wrong:10d}")
    print("misordered pairs (measured better first):")
    print("\n".join(wrong_lines) or "    none")


if __name__ == "__main__":
    raise SystemExit(main())
