"""How much of the grid search an exact pruning could skip (issue 28, docs/model.md "The search").

A point can be skipped when a floor under its latency (hence under its price) is already
dominated by the frontier; a layout when its floor is not below the point's least latency.
This measures both against the *final* answers (the exact frontier and the exact minimum,
which a real search only has at its end), so the shares printed are the most any pruning
with these floors could skip:

* points: the share of feasible points whose floor is not dominated by the exact frontier,
  for a floor with no collectives (kernels + max(memory, compute) of the cheapest layout), the
  floor of each pipeline block (kernels, the collectives that do not depend on the attention
  divisor, max(memory without attention, feed-forward arithmetic)), and the exact latencies;
* layouts: for every (pipeline block, attention divisor, 1-D/2-D), the share of points, and of
  the block's area in the smallest rectangle holding them, where the layout's latency without
  its attention collectives is below the point's least latency.

    python benchmarks/search_bounds.py [--model "Llama 3 70B"] [--hardware H100-paper]
        [--weight-bits 8] [--assumptions paper] [--grid-points 400] [--context TOKENS]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.model.economics import priced_grid  # noqa: E402
from inference_econ.model.layouts import attention_divisors  # noqa: E402
from inference_econ.model.step_calls import StepCache  # noqa: E402
from inference_econ.optimise import grid, optimiser  # noqa: E402
from inference_econ.optimise.frontier import pareto_indices  # noqa: E402


def rectangle(mask) -> int:
    """Points in the smallest rectangle holding every True point of ``mask``."""
    if not mask.any():
        return 0
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    return int((rows[-1] - rows[0] + 1) * (cols[-1] - cols[0] + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Llama 3 70B")
    parser.add_argument("--hardware", default="H100-paper")
    parser.add_argument("--weight-bits", type=int, default=8)
    parser.add_argument("--assumptions", default="paper")
    parser.add_argument("--grid-points", type=int, default=400)
    parser.add_argument("--context", type=float, default=None, help="context tokens")
    args = parser.parse_args()
    extra = {} if args.context is None else {"context_tokens": args.context}
    setting = ie.make_setting(
        args.model,
        args.hardware,
        weight_bits=args.weight_bits,
        assumptions=args.assumptions,
        **extra,
    )
    problem = optimiser.Problem(setting, ie.Method(grid_points=args.grid_points))
    n, b = problem.continuous_axes()
    model, ctx = problem.decoder.target, setting.context_tokens
    if model.engine is not None:
        sys.exit("search_bounds.py: the floors are the roofline step's; give an ideal preset")
    lat = grid.grid_latency(model, n, b, [1], ctx, setting.pipeline).pop()
    N, B = np.meshgrid(n, b)
    price = setting.gpu.price_usd_per_hour

    def cost(latency):
        return priced_grid(N, latency, B, price, setting.max_throughput_tokens_per_s)

    front = pareto_indices(lat, cost(lat.astype(float)))
    f_lat = lat.ravel()[front].astype(float)
    f_cost = cost(lat.astype(float)).ravel()[front]
    order = np.argsort(f_lat)
    f_lat, cheapest = f_lat[order], np.minimum.accumulate(f_cost[order])
    feasible = np.isfinite(lat)

    def undominated(floor):
        """Feasible points no frontier point beats on both axes, given only their floor."""
        k = np.searchsorted(f_lat, floor, side="left")  # frontier points strictly faster
        best = np.where(k > 0, cheapest[np.maximum(k - 1, 0)], np.inf)
        return feasible & ~(best <= cost(floor))

    nf, bf = n.astype(np.float32)[None, :], b.astype(np.float32)
    one = model.pipeline_part(N, B, 1, ctx, 1.0)
    weights, _ = model.attention_reads(one, 1.0)
    no_collectives = model.kernel_s + np.maximum(
        one.kv_read_s + one.ff_weight_read_s + weights, model.compute_time(one, 1.0)
    )
    block_floor = np.full(lat.shape, np.inf)
    pairs = area = points = 0
    for rows, p in grid._tasks(model, bf, setting.pipeline):
        B_col = bf[:, None][rows]
        ok = model.fits(nf, B_col, p, ctx, adiv=None)
        if not ok.any():
            continue
        r, c = grid._window(ok)
        ok, p_w = ok[r, c], p if np.ndim(p) == 0 else p[r]
        cache = StepCache({})
        part = model.pipeline_part(nf[:, c], B_col[r], 1, ctx, p_w, cache=cache)
        floor = model.kernel_s + np.minimum(part.collective_2d_s, part.collective_1d_s)
        floor = floor + np.maximum(part.memory_base_s, part.ff_context_compute_s)
        sub = block_floor[rows][r, c]
        block_floor[rows.start + r.start : rows.start + r.stop, c] = np.where(
            ok, np.minimum(sub, floor), sub
        )
        least = lat[rows][r, c]
        divisors = attention_divisors(
            nf[:, c] / p_w, model.assumptions.attention_divisor_count, model.extra_attention_degrees
        )
        for j, adiv in enumerate(divisors):
            aw, aa = model.attention_reads(part, adiv, cache, j)
            rest = np.maximum(part.memory_base_s + (aw + aa), model.compute_time(part, adiv))
            for collectives in (part.collective_2d_s, part.collective_1d_s):
                need = ok & (model.kernel_s + collectives + rest < least)
                pairs += ok.size
                points += int(need.sum())
                area += rectangle(need)
    share = feasible.sum()
    print(
        f"{setting.name}, {args.assumptions}, {len(b)} x {len(n)} grid: {front.size} frontier points"
    )
    print("feasible points a frontier-based pruning would still search (exact frontier known):")
    for label, floor in (
        ("floor without collectives", no_collectives),
        ("floor of each pipeline block", block_floor),
        ("exact latencies", lat.astype(float)),
    ):
        print(f"  {label:<30} {undominated(np.where(feasible, floor, np.inf)).sum() / share:6.1%}")
    print(
        "layouts whose floor without their attention collectives is below the least latency "
        f"(final minimum known): {points / pairs:.1%} of (layout, point) pairs, "
        f"{area / pairs:.1%} of the blocks' area in their rectangles"
    )


if __name__ == "__main__":
    main()
