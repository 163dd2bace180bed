"""The search over layouts for each (GPUs, batch) point (MODEL.md A5).

For each point the latency is the minimum over pipeline degrees ``p`` (1 and log-spaced
values up to min(B, L)), attention divisors ``a`` (log-spaced from 1 to N/p) and 1-D or 2-D
tensor parallelism. ``pipeline_lower_bound`` bounds every layout with ``p > 1`` from below
cheaply, so callers can skip pipelined layouts where they cannot matter.
"""

from __future__ import annotations

import numpy as np

from .latency import StepModel


def _arrays(N, B):
    """Broadcast N and B to one shape, keeping float32 if both are float32 (faster search)."""
    N, B = np.asarray(N), np.asarray(B)
    dtype = np.result_type(N.dtype, B.dtype, np.float32)
    return np.broadcast_arrays(N.astype(dtype, copy=False), B.astype(dtype, copy=False))


def pipeline_degrees(B, layers: int, count: int, allowed: bool, extra=()):
    """The pipeline degrees of A5 for batch ``B``: [1] + logspace(0, log2 min(B, L), count)[1:],
    plus the whole degrees ``extra`` (node-aligned layouts)."""
    if not allowed:
        return [1.0]
    top = np.minimum(np.asarray(B), layers)
    # i = 0 repeats p = 1, which is already the first candidate
    logs = [top ** (i / (count - 1)) for i in range(1, count)] if count > 1 else []
    return [1.0] + logs + [float(p) for p in extra if p > 1]


def attention_divisors(t, count: int, extra_degrees=()):
    """The attention divisors of A5 for tensor degree ``t``: logspace(0, log2 max(t, 1), count),
    plus ``t / d`` for each whole attention degree ``d`` in ``extra_degrees``.

    MODEL.md leaves a < 1 undefined when t = N/p < 1 (a fraction of one GPU); the divisor is
    kept at 1 or more, so attention is never cheaper than on the whole instance.
    """
    base = np.maximum(np.asarray(t), 1.0)
    out = [base ** (j / (count - 1)) for j in range(count)] if count > 1 else [np.ones_like(base)]
    return out + [np.maximum(base / d, 1.0) for d in extra_degrees if d > 1]


def best_latency(
    model: StepModel,
    N,
    B,
    S=1,
    context=0.0,
    pipeline=True,
    return_layout=False,
):
    """Minimum token latency over the layouts of A5 at every (N, B); inf where nothing fits.

    With ``return_layout`` also
    returns the (p, a, two_d) arrays of the best layout.
    """
    a = model.assumptions
    N, B = _arrays(N, B)
    best = np.full(N.shape, np.inf, dtype=N.dtype)
    if return_layout:
        best_p = np.ones(N.shape)
        best_a = np.ones(N.shape)
        best_2d = np.ones(N.shape, dtype=bool)
    degrees = pipeline_degrees(
        B, model.work.layers, a.pipeline_degree_count, pipeline, model.extra_pipeline_degrees
    )
    for p in degrees:
        ok = model.fits(N, B, p, context)
        if not np.any(ok):
            continue
        part = model.pipeline_part(N, B, S, context, p)
        for adiv in attention_divisors(
            N / p, a.attention_divisor_count, model.extra_attention_degrees
        ):
            lat = np.where(ok, model.latency_from_part(part, N, p, adiv), np.inf)
            if return_layout:
                better = lat < best
                best = np.where(better, lat, best)
                best_p = np.where(better, p, best_p)
                best_a = np.where(better, adiv, best_a)
                att2, _ = model.attention_part(part, adiv, True)
                att1, _ = model.attention_part(part, adiv, False)
                two = (att2 + part["coll"][True]) <= (att1 + part["coll"][False])
                best_2d = np.where(better, two, best_2d)
            else:
                np.minimum(best, lat, out=best)
    if return_layout:
        return best, best_p, best_a, best_2d
    return best


def _row_blocks(b_rows, thresholds):
    """Split rows (sorted by micro-batch) where b < threshold changes, for each threshold."""
    cuts = sorted({int(np.searchsorted(b_rows, thr, side="left")) for thr in thresholds})
    edges = [0] + [c for c in cuts if 0 < c < len(b_rows)] + [len(b_rows)]
    return [(lo, hi) for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


def _block_min(model: StepModel, N_row, B_col, p, S_values, context):
    """Minimum latency over attention divisors and 1-D/2-D TP for one pipeline degree, for
    each tokens-per-pass value in ``S_values`` (the collective structures are shared)."""
    ok = model.fits(N_row, B_col, p, context)
    if not np.any(ok):
        return None
    cache: dict = {}
    divisors = attention_divisors(
        N_row / p, model.assumptions.attention_divisor_count, model.extra_attention_degrees
    )
    out = []
    for S in S_values:
        part = model.pipeline_part(N_row, B_col, S, context, p, cache=cache)
        best = None
        for j, adiv in enumerate(divisors):
            lat = model.latency_from_part(part, N_row, p, adiv, cache=cache, key=j)
            best = lat if best is None else np.minimum(best, lat)
        out.append(np.where(ok, best, np.inf))
    return out


def grid_latency(
    model: StepModel,
    n_values,
    b_values,
    S=1,
    context=0.0,
    pipeline=True,
    dtype=np.float32,
    executor=None,
    S_values=None,
):
    """``best_latency`` on the outer grid ``b_values`` (rows) x ``n_values`` (columns), fast.

    Rows with B >= L share their pipeline degrees, and within a block of rows the expert
    parallel degree depends on the GPU count only; quantities that depend on the tensor degree
    are then computed once per column instead of once per point. Blocks run on ``executor``.
    Returns an array of shape (len(b_values), len(n_values)); with ``S_values`` a list of
    such arrays, one per tokens-per-pass value (sharing the work that does not depend on S).
    """
    a = model.assumptions
    n_values = np.asarray(n_values, dtype=dtype)
    b_values = np.asarray(b_values, dtype=dtype)
    N_row = n_values[None, :]
    B_col = b_values[:, None]
    layers = model.work.layers
    count = a.pipeline_degree_count if pipeline else 1
    split = int(np.searchsorted(b_values, layers, side="left"))  # rows [split:] have B >= L
    ep_thresholds = [
        a.expert_parallel_min_batch_per_sparsity * g.sparsity
        for g in model.work.groups
        if g.experts > 1
    ]
    tasks = []
    for i in range(max(count, 1)):
        if i == 0:
            blocks = [((0, len(b_values)), 1.0)]
        else:
            frac = i / (count - 1)
            blocks = []
            if split > 0:
                blocks.append(((0, split), B_col[:split] ** frac))
            if split < len(b_values):
                blocks.append(((split, len(b_values)), float(layers) ** frac))
        if i == count - 1 and pipeline:  # the whole degrees of node-aligned layouts, every row
            blocks += [
                ((0, len(b_values)), float(p)) for p in model.extra_pipeline_degrees if p > 1
            ]
        for (lo, hi), p in blocks:
            b_rows = b_values[lo:hi] / (p if np.ndim(p) == 0 else p[:, 0])
            for r0, r1 in _row_blocks(b_rows, ep_thresholds):
                p_sub = p if np.ndim(p) == 0 else p[r0:r1]
                tasks.append((slice(lo + r0, lo + r1), p_sub))

    many = S_values is not None
    S_list = list(S_values) if many else [S]

    def run(task):
        rows, p = task
        return rows, _block_min(model, N_row, B_col[rows], p, S_list, context)

    results = executor.map(run, tasks) if executor is not None else map(run, tasks)
    best = [np.full((len(b_values), len(n_values)), np.inf, dtype=dtype) for _ in S_list]
    for rows, lats in results:
        if lats is not None:
            for b, lat in zip(best, lats):
                np.minimum(b[rows], lat, out=b[rows])
    return best if many else best[0]
