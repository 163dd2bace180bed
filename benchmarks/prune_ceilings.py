"""How much three more exact prunings of the grid search could skip on a study's cells (issue 28).

Each figure is a ceiling: the share of the work a pruning would still do if it knew the final
answer beforehand (a real pruning knows less, and pays for its test), measured on cells of the
worked study's 8K FP8 slice (``bench_study.py``'s slice, every ``--step``-th cell):

* protocols: a collective's time is the least over its protocols of ``latency + per_byte ·
  tokens`` (``values.affine_minimum``, about a third of the search). A protocol that is the
  least nowhere in a call's array (or in a chunk of ``--rows`` rows of it) could be left out
  exactly. Printed: the share of (protocol, point) evaluations whose protocol is the least
  somewhere in the whole array, and in each chunk of rows;
* rows: a block is searched on the smallest rectangle holding its feasible points
  (``grid._window``); the feasible points are a staircase (more GPUs hold more requests), so
  cutting a block's rows in 2 or 4 chunks, each with its own rectangle, searches fewer points.
  Printed: the feasible points, and the rectangles' points in 2 and 4 chunks, as shares of the
  one rectangle's;
* speculation: a draft cycle verifying S tokens costs at least ``(T_1 + γ·D_1) / E`` per token
  (a target pass of S tokens is no faster than one of 1, at every layout), so where that floor
  is not below ``T_1`` (no speculation) the pass of S tokens cannot be chosen and need not be
  searched. Printed per draft cell and S: the share of the feasible points where the floor is
  below ``T_1`` (the pass is needed), and the rectangle holding them; and below the final best;
* describing: the frontier's candidates are described in double precision, every pipeline
  degree's divisors at once (``layouts._best_layouts_stacked``). A (pipeline degree, pass)
  whose layouts are the fastest at no candidate could be skipped if the search told which.
  Printed: the share of those evaluations that are the fastest somewhere.

    python benchmarks/prune_ceilings.py [--step 3] [--rows 10]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

os.environ["INFERENCE_ECON_THREADS"] = "1"
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's package
sys.path.insert(0, str(HERE))

import bench_study  # noqa: E402
import numpy as np  # noqa: E402
from search_bounds import rectangle  # noqa: E402  (this folder: its one home)

from inference_econ.model import collectives, layouts, values  # noqa: E402
from inference_econ.optimise import grid  # noqa: E402
from inference_econ.optimise.optimiser import Problem  # noqa: E402
from inference_econ.serving.speculative import combine, cycle_latency  # noqa: E402
from inference_econ.studies.study import compute_cell, expand  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="studies/accelerators-models")
    parser.add_argument("--step", type=int, default=3, help="every STEP-th cell of the slice")
    parser.add_argument("--rows", type=int, default=10, help="rows per chunk (protocols)")
    args = parser.parse_args()
    cells = expand(bench_study._slice(args.study, bench_study.SLICE))[:: args.step]
    counts: collections.Counter = collections.Counter()
    real_minimum, real_window = values.affine_minimum, grid._window

    def protocols(pairs, x):
        pairs = list(pairs)
        out = real_minimum(pairs, x)
        if np.ndim(out) >= 2 and np.size(out) > 1:
            each = np.stack(np.broadcast_arrays(*[a + b * x for a, b in pairs]))
            least = np.argmin(each, axis=0)
            counts["evaluations"] += len(pairs) * least.size
            counts["whole"] += len(np.unique(least)) * least.size
            for lo in range(0, least.shape[-2], args.rows):
                chunk = least[..., lo : lo + args.rows, :]
                counts["chunks"] += len(np.unique(chunk)) * chunk.size
        return out

    def window(ok):
        ok = np.broadcast_to(ok, np.shape(ok))
        rows, cols = real_window(ok)
        sub = ok[rows, cols]
        counts["area"] += sub.size
        counts["feasible"] += int(sub.sum())
        for k in (2, 4):
            edges = np.linspace(0, sub.shape[0], k + 1).astype(int)
            counts[f"area{k}"] += sum(rectangle(sub[a:b]) for a, b in zip(edges[:-1], edges[1:]))
        return rows, cols

    real_offer, real_describe = layouts._Best.offer, layouts._best_layouts_stacked
    offered: list = []

    def offer(self, latency, *args, **kwargs):
        offered.append((self, np.array(latency)))
        return real_offer(self, latency, *args, **kwargs)

    def describe(*args, **kwargs):
        offered.clear()
        out = real_describe(*args, **kwargs)
        for best, latency in offered:
            counts["described"] += 1
            counts["fastest"] += bool(np.any(latency == best.latency))
        return out

    collectives.affine_minimum, grid._window = protocols, window
    layouts._Best.offer, layouts._best_layouts_stacked = offer, describe
    cpu = time.process_time()
    try:
        for cell in cells:
            compute_cell(cell.setting, cell.method)
    finally:
        collectives.affine_minimum, grid._window = real_minimum, real_window
        layouts._Best.offer, layouts._best_layouts_stacked = real_offer, real_describe
    print(f"{len(cells)} cells of the 8K FP8 slice ({time.process_time() - cpu:.0f} s of CPU)")
    print(
        "protocols: (protocol, point) evaluations whose protocol is the least somewhere: "
        f"{counts['whole'] / counts['evaluations']:.1%} in the whole array, "
        f"{counts['chunks'] / counts['evaluations']:.1%} in chunks of {args.rows} rows"
    )
    print(
        f"rows: feasible {counts['feasible'] / counts['area']:.1%} of the rectangles' points; "
        f"rectangles of 2 row chunks {counts['area2'] / counts['area']:.1%}, "
        f"of 4 {counts['area4'] / counts['area']:.1%}"
    )
    print(
        "describing: (pipeline degree, pass) evaluations fastest at some candidate: "
        f"{counts['fastest']} of {counts['described']}"
    )
    print("speculation: feasible points where a cycle's floor is below T_1 (rectangle) / best")
    for cell in cells:
        spec = cell.setting.spec
        if spec is None:
            continue
        problem = Problem(cell.setting, cell.method)
        T, D = problem.pass_latencies(*problem.continuous_axes())
        best, _ = combine(T, D, spec)
        feasible = np.isfinite(T[1])
        shares = []
        for cycle in spec.cycles():
            floor = cycle_latency(cycle, {cycle.verify_tokens: T[1]}, D)
            need = feasible & (floor < T[1])
            final = feasible & (floor < best)
            shares.append(
                f"S={cycle.verify_tokens} {need.sum() / feasible.sum():.0%} "
                f"({rectangle(need) / feasible.size:.0%}) / {final.sum() / feasible.sum():.0%}"
            )
        print(f"  {cell.setting.label}: " + ", ".join(shares))


if __name__ == "__main__":
    main()
