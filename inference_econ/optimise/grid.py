"""The fast search over the (GPUs, batch) grid (docs/model.md §A5, §A7; docs/model.md "The search").

``grid_latency`` computes, on an outer grid of batches x GPU counts, the same minimum over
layouts as ``model.layouts.best_layout``, with less work: rows with B >= L share their pipeline
degrees, rows are split where expert parallelism switches on, so quantities that depend on the
tensor degree are computed once per column; the collective structures of a block, and each
collective call's factors that do not depend on the tokens, are shared across the tokens per
pass; a small block's attention divisors are evaluated as one stacked array; blocks run on a
thread pool in float32.
"""

from __future__ import annotations

import functools

import numpy as np

from ..model.latency import StepModel
from ..model.layouts import attention_divisors, within_budget
from ..model.step_calls import StepCache
from ..model.values import Floats, minimum_into

#: Relative margin within which the frontier's candidates are taken from the single-precision
#: search (``frontier.near_pareto_indices``), to be described in double precision: twice the
#: search's relative error and more (docs/model.md "The search": rounding ~40 single-precision
#: operations deep is < 3e-6; the largest error measured against the double-precision brute
#: force, 1.5e-5, is a node count rounded the other way at N ~ 2e5 GPUs).
SEARCH_MARGIN = 1e-4

#: Whether a block computes each collective call's factors that do not depend on the tokens
#: per pass once for all its passes (``StepCache.fold``): the same operations on the same
#: numbers, so the same latencies bit for bit (tests/test_search_exact.py compares both).
FOLD_PASSES = True

#: Whether a block's attention divisors are evaluated stacked, several to one array
#: (``_divisor_groups``): fewer, larger operations on small blocks (a study's 100 x 100 grid),
#: the same numbers bit for bit (tests/test_search_exact.py compares both).
STACK_DIVISORS = True
#: The most elements of a stacked array (divisors x points): an operation costs about twice as
#: much per element above ~128,000 single-precision elements on the benchmarks' machine.
STACK_ELEMENTS = 1 << 18


def _row_blocks(b_rows, thresholds):
    """Split rows (sorted by micro-batch) where b < threshold changes, for each threshold."""
    cuts = sorted({int(np.searchsorted(b_rows, thr, side="left")) for thr in thresholds})
    edges = [0] + [c for c in cuts if 0 < c < len(b_rows)] + [len(b_rows)]
    return [(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


def _block_min(model: StepModel, N_row, B_col, p, S_values, context, per_layout=None, budgets=None):
    """Minimum latency over attention divisors and 1-D/2-D TP for one pipeline degree, for
    each tokens-per-pass value in ``S_values`` (the collective structures are shared).

    Returns None if no point of the block is feasible, else ``(rows, cols, out)``: the
    slices of the block (``window``) its results ``out`` cover, every point outside them
    infeasible. With ``per_layout`` (a value of each candidate layout, e.g. its time to first token) the
    value at the chosen layout is returned too, and ``budgets`` ({S: limit}) keeps only the
    layouts whose value is within the limit. Returns (latencies, values or None) per S."""
    ok = model.fits(N_row, B_col, p, context, adiv=None)  # KV copies: in the step (§B13)
    if not np.any(ok):
        return None
    # only the rectangle of the block holding its feasible points is evaluated (``window``)
    rows, cols = _window(ok)
    ok = ok[rows, cols]
    N_row, B_col = N_row[:, cols], B_col[rows]
    p = p if np.ndim(p) == 0 else p[rows]
    budgets = {S: v if np.ndim(v) < 2 else v[rows, cols] for S, v in (budgets or {}).items()}
    divisors = attention_divisors(
        N_row / p, model.assumptions.attention_divisor_count, model.extra_attention_degrees
    )
    area = (rows.stop - rows.start) * (cols.stop - cols.start)
    groups = _divisor_groups(divisors, area) if per_layout is None else []
    # the tokens of a pass filled in at every point for the divisors taken one by one
    # (``StepCache.at_points``); a stacked group's arrays are small, where it does not pay
    cache = StepCache(
        {},
        fold=FOLD_PASSES and len(S_values) > 1,
        feasible=ok,
        points=all(len(group) == 1 for group in groups),
    )
    out: list[tuple[np.ndarray, Floats | None]] = []
    if per_layout is None:
        for S in S_values:
            part = model.pipeline_part(N_row, B_col, S, context, p, cache=cache)
            lats = [_group_min(model, part, divisors, group, cache) for group in groups]
            out.append((np.where(ok, functools.reduce(minimum_into, lats), np.inf), None))
        return rows, cols, out
    values = per_layout(N_row, B_col, p, divisors, cache)
    for S in S_values:
        part = model.pipeline_part(N_row, B_col, S, context, p, cache=cache)
        budget = budgets.get(S)
        best: Floats = np.inf
        best_v: Floats = np.inf
        for j, adiv in enumerate(divisors):
            lat2, lat1 = model.latency_by_dims(part, adiv, cache, j)
            lats = within_budget(lat2, lat1, values[j], budget)
            for lat, value in zip(lats, values[j]):
                better = lat < best
                best = np.where(better, lat, best)
                best_v = np.where(better, value, best_v)
        out.append((np.where(ok, best, np.inf), best_v))
    return rows, cols, out


def _divisor_groups(divisors, area: int) -> list[tuple[int, ...]]:
    """The attention divisors of a block in groups, each evaluated as one stacked array: all
    of them at once when the stacked array (divisors x the block's ``area`` points) has at
    most ``STACK_ELEMENTS`` elements, else one by one."""
    one_by_one: list[tuple[int, ...]] = [(j,) for j in range(len(divisors))]
    if not STACK_DIVISORS or len(divisors) * area > STACK_ELEMENTS:
        return one_by_one
    shape = np.shape(divisors[0])  # they broadcast from the tensor degrees: one shape
    if any(np.shape(d) != shape for d in divisors):
        return one_by_one
    return [tuple(range(len(divisors)))]


def _group_min(model: StepModel, part, divisors, group: tuple[int, ...], cache: StepCache):
    """The least latency over a group of attention divisors (``_divisor_groups``). A group of
    several is one stacked array (divisors x the block's points): every quantity of a step is
    elementwise, so each slice holds the same numbers as that divisor alone, and the minimum
    over the slices is the same as taken one by one (docs/model.md "The search")."""
    if len(group) == 1:
        return model.latency(part, divisors[group[0]], cache=cache, key=group[0])
    adiv = np.stack([divisors[j] for j in group])  # (divisors, rows or 1, columns)
    lat = model.latency(part, adiv, cache=cache, key=("stack",) + group)
    return np.minimum.reduce(lat, axis=0) if np.ndim(lat) == adiv.ndim else lat


def _window(ok) -> tuple[slice, slice]:
    """The smallest (rows, columns) rectangle of the mask ``ok`` holding all its True points.

    Evaluating a block only there is exact: every point outside is infeasible, and the block
    gives it inf whatever its layouts' latencies (``_block_min`` masks with ``ok``); every
    quantity of the search is elementwise over the points (broadcast over rows and columns),
    so a point's value does not depend on which others are computed with it. On the paper's
    grid the low GPU counts, where the weights and KV cache do not fit or the pipeline degree
    exceeds the GPUs, are 20-50 % of a block.
    """
    ok = np.broadcast_to(ok, np.shape(ok))
    any_row = np.flatnonzero(ok.any(axis=1))
    any_col = np.flatnonzero(ok.any(axis=0))
    return (
        slice(int(any_row[0]), int(any_row[-1]) + 1),
        slice(int(any_col[0]), int(any_col[-1]) + 1),
    )


def _pipeline_blocks(model: StepModel, b_values, pipeline: bool):
    """(row range, pipeline degree) blocks covering the pipeline degrees of §A5 for every row.

    Rows with B < L have their own degrees (a column of values); rows with B >= L share them.
    """
    count = model.assumptions.pipeline_degree_count if pipeline else 1
    layers = model.work.layers
    rows = len(b_values)
    split = int(np.searchsorted(b_values, layers, side="left"))  # rows [split:] have B >= L
    if model.assumptions.pipeline_degrees_up_to_layers:
        split = 0  # every row takes the degrees L^(i/9)
    B_col = b_values[:, None]
    blocks = [((0, rows), 1.0)]
    for i in range(1, max(count, 1)):
        frac = i / (count - 1)
        if split > 0:
            blocks.append(((0, split), B_col[:split] ** frac))
        if split < rows:
            blocks.append(((split, rows), float(layers) ** frac))
    if pipeline:  # the whole degrees of node-aligned layouts, every row
        blocks += [((0, rows), float(p)) for p in model.extra_pipeline_degrees if p > 1]
        for d in model.idle_stage_degrees:  # §B12: stages above the batch, rows with B < d
            below = int(np.searchsorted(b_values, d, side="left"))
            if below > 0:
                blocks.append(((0, below), float(d)))
    return blocks


def _tasks(model: StepModel, b_values, pipeline: bool):
    """(rows, pipeline degree) tasks: each block cut where expert parallelism switches on."""
    a = model.assumptions
    thresholds = [
        a.expert_parallel_min_batch_per_sparsity * g.sparsity
        for g in model.work.groups
        if g.experts > 1
    ]
    tasks = []
    for (lo, hi), p in _pipeline_blocks(model, b_values, pipeline):
        b_rows = b_values[lo:hi] / (p if np.ndim(p) == 0 else p[:, 0])
        for r0, r1 in _row_blocks(b_rows, thresholds):
            p_sub = p if np.ndim(p) == 0 else p[r0:r1]
            tasks.append((slice(lo + r0, lo + r1), p_sub))
    return tasks


def grid_latency(
    model: StepModel,
    n_values,
    b_values,
    S_values=(1,),
    context=0.0,
    pipeline=True,
    executor=None,
    dtype=np.float32,
    per_layout=None,
    budgets=None,
):
    """``best_latency`` on the outer grid ``b_values`` (rows) x ``n_values`` (columns), fast:
    one array of shape (len(b_values), len(n_values)) per tokens-per-pass value in
    ``S_values`` (they share the work that does not depend on S). Blocks run on ``executor``.

    With ``per_layout`` returns (latencies, values at the chosen layouts), and ``budgets``
    ({S: limit, a number or an array of the grid's shape}) restricts the layouts as in
    ``model.layouts.best_layout``.
    """
    n_values = np.asarray(n_values, dtype=dtype)
    b_values = np.asarray(b_values, dtype=dtype)
    N_row = n_values[None, :]
    B_col = b_values[:, None]
    S_list = list(S_values)

    def run(task):
        rows, p = task
        local = {S: (v[rows] if np.ndim(v) == 2 else v) for S, v in (budgets or {}).items()}
        return rows, _block_min(model, N_row, B_col[rows], p, S_list, context, per_layout, local)

    tasks = _tasks(model, b_values, pipeline)
    results = executor.map(run, tasks) if executor is not None else map(run, tasks)
    shape = (len(b_values), len(n_values))
    best = [np.full(shape, np.inf, dtype=dtype) for _ in S_list]
    vals = [np.full(shape, np.inf) for _ in S_list]
    for rows, block in results:
        if block is None:
            continue
        sub_rows, cols, parts = block
        where = (slice(rows.start + sub_rows.start, rows.start + sub_rows.stop), cols)
        for b, v, (lat, value) in zip(best, vals, parts):
            if value is not None:
                better = lat < b[where]
                v[where] = np.where(better, value, v[where])
            np.minimum(b[where], lat, out=b[where])
    return (best, vals) if per_layout is not None else best
