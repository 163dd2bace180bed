"""Where the fast search's CPU time goes, block by block, and what stacking divisors changes.

For each setting and grid size: the CPU seconds of the pass latencies (``Problem._pass_latencies``,
one search thread, in this process, glibc's malloc tuned as the command line tunes it, after a
warm-up; median of ``--repeat``) with the attention divisors stacked up to each of ``--limits``
elements (``grid.STACK_ELEMENTS``; 1 is one divisor at a time), and, at the shipped limit, the
blocks by kind: rows with ``B < L`` (a pipeline degree per row, so every collective structure is
a whole array) and rows sharing their degrees (structures a row of the GPU counts), with their
points and CPU microseconds per point (the blocks timed one by one, so their sum is a little
above the search's).

    python benchmarks/search_blocks.py [--settings refined-cell,refined-draft,dense,dense-draft]
        [--grids 50,100,400] [--limits 1,131072,262144] [--repeat 5]
"""

from __future__ import annotations

import argparse
import collections
import os
import runpy
import statistics
import sys
import time
from pathlib import Path

os.environ["INFERENCE_ECON_THREADS"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import numpy as np  # noqa: E402

import inference_econ as ie  # noqa: E402
from inference_econ.cli.common import tune_allocator  # noqa: E402
from inference_econ.optimise import grid, optimiser  # noqa: E402

#: The searches timed: name: (model, hardware, make_setting keywords). A study's cell is
#: frontier_identity.py's "refined-cell" (one home for it).
_IDENTITY = runpy.run_path(str(Path(__file__).with_name("frontier_identity.py")))["SETTINGS"]
SETTINGS = {
    "refined-cell": _IDENTITY["refined-cell"],
    "refined-draft": (
        "Llama 3.1 405B",
        "A100-SXM",
        dict(
            assumptions="refined",
            context_tokens=8000,
            weight_bits=8,
            draft="Llama 3.1 8B",
            acceptance=0.7,
        ),
    ),
    "moe-refined": ("DeepSeek-V3", "GB200", dict(assumptions="refined", context_tokens=8000)),
    "dense": ("Llama 3 70B", "H100-paper", dict(weight_bits=8)),
    "dense-draft": (
        "Llama 3 70B",
        "H100-paper",
        dict(weight_bits=8, draft="Llama 3 8B", acceptance=0.8),
    ),
}


def search_cpu(problem, axes, repeat: int) -> float:
    """Median CPU seconds of the pass latencies (no cache: ``_pass_latencies`` itself)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        problem._pass_latencies(*axes)
        times.append(time.process_time() - start)
    return statistics.median(times)


def by_block(problem, axes) -> dict:
    """{(model layers, kind): [blocks, CPU s, points]} of one search, each block timed."""
    real, out = grid._block_min, collections.defaultdict(lambda: [0, 0.0, 0])

    def timed(model, N_row, B_col, p, *args, **kwargs):
        start = time.process_time()
        result = real(model, N_row, B_col, p, *args, **kwargs)
        cpu = time.process_time() - start
        kind = "B < L, degree per row" if np.ndim(p) else "shared degree"
        entry = out[(model.work.layers, kind)]
        entry[0] += 1
        entry[1] += cpu
        if result is not None:
            rows, cols, _ = result
            entry[2] += (rows.stop - rows.start) * (cols.stop - cols.start)
        return result

    grid._block_min = timed
    try:
        problem._pass_latencies(*axes)
    finally:
        grid._block_min = real
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default="refined-cell,refined-draft,dense,dense-draft")
    parser.add_argument("--grids", default="50,100,400")
    parser.add_argument("--limits", default=f"1,131072,{grid.STACK_ELEMENTS}")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    names = args.settings.split(",")
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        parser.error(f"--settings: unknown {', '.join(unknown)}; choose from {', '.join(SETTINGS)}")
    limits = [int(x) for x in args.limits.split(",")]
    shipped = grid.STACK_ELEMENTS
    tune_allocator()
    print("CPU seconds of the search, one thread, median of", args.repeat, "(stacking limit: s)")
    for name in names:
        model, hardware, kwargs = SETTINGS[name]
        setting = ie.make_setting(model, hardware, **kwargs)
        for points in (int(g) for g in args.grids.split(",")):
            problem = optimiser.Problem(setting, ie.Method(grid_points=points))
            axes = problem.continuous_axes()
            problem._pass_latencies(*axes)  # warm-up
            cells = []
            for limit in limits:
                grid.STACK_ELEMENTS = limit
                cells.append(f"{limit}: {search_cpu(problem, axes, args.repeat):.3f}")
            grid.STACK_ELEMENTS = shipped
            print(f"{name} {points} x {points}: " + ", ".join(cells))
            for (layers, kind), (blocks, cpu, area) in sorted(by_block(problem, axes).items()):
                per_point = cpu / max(area, 1) * 1e6
                print(
                    f"    {layers:4d} layers, {kind:22s} {blocks:3d} blocks {cpu:7.3f} s "
                    f"{area:9,d} points {per_point:6.2f} us/point"
                )


if __name__ == "__main__":
    main()
