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
    args = parser.parse_args()
    start = time.process_time()
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


if __name__ == "__main__":
    raise SystemExit(main())
