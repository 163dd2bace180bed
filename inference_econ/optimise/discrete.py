"""Discrete layouts (docs/model.md §B7): what one could actually deploy.

Instead of the paper's real-valued grid, the discrete search enumerates whole configurations:
integer GPU counts (every count up to one node, whole nodes beyond), integer batches, pipeline
degrees that divide the layers and the GPUs, attention tensor degrees that divide the KV heads
(the query heads when there is one KV head or MLA), expert-parallel degrees that divide the
experts and the tensor degree, feed-forward tensor degrees that divide every feed-forward width,
and 2-D tensor splits into whole ranks that divide the widths they split.
"""

from __future__ import annotations

import numpy as np

from ..model.layouts import Layout
from ..serving.speculative import combine
from .method import GRID_MAX_LOG2

#: Whole nodes beyond one node: {1, 3, 5, 7} x 2^i nodes (four counts per doubling).
NODE_MULTIPLIERS = (1, 3, 5, 7)


def gpu_counts(min_gpus: float, node: int, max_gpus: int = 2**GRID_MAX_LOG2) -> np.ndarray:
    """Integer GPU counts: 1 … node, then whole nodes ({1,3,5,7}·2^i), from the first that fits."""
    within = np.arange(1, node + 1)
    nodes = [m * 2**i for i in range(0, 19) for m in NODE_MULTIPLIERS]
    counts = np.unique(np.concatenate([within, node * np.asarray(nodes)]))
    counts = counts[counts <= max_gpus]
    return counts[counts >= np.floor(min_gpus)].astype(float)


def batch_sizes(max_batch: float, points: int) -> np.ndarray:
    """Integer batch sizes, log-spaced from 1 to ``max_batch``."""
    return np.unique(np.rint(np.logspace(0, np.log2(max_batch), points, base=2))).astype(float)


def _columns(layouts: list[Layout]) -> Layout:
    """Layouts of one GPU count each (over the batches) side by side: rows = batches, columns =
    GPU counts."""
    values = [c.value for c in layouts]
    known = [v for v in values if v is not None]
    return Layout(
        **{
            name: np.stack([getattr(c, name) for c in layouts], axis=1)
            for name in ("latency_s", "pipeline", "attention_divisor", "two_d")
        },
        value=None if any(v is None for v in values) else np.stack(known, axis=1),
    )


def evaluate(problem):
    """Latency on the discrete grid: (N, B, latency, layouts) with rows = batches, cols = GPUs;
    the layouts are ({S: Layout} of the target, {S: Layout} of the draft or None). With a TTFT
    limit only layouts within it are candidates (``serving.decode.Decoder.layouts``)."""
    s, d = problem.setting, problem.decoder
    counts = problem.within_cap(gpu_counts(problem.min_gpus, s.gpu.scale_up_domain_gpus))
    sparsity = max(g.sparsity for g in d.work.groups)
    batches = batch_sizes(2.0 ** (GRID_MAX_LOG2 + np.log2(sparsity)), problem.method.grid_points)
    # whole layouts one GPU count at a time (``Decoder.whole_layouts``, what a given
    # configuration with --discrete gets), side by side
    per_count = [d.whole_layouts(np.array([n]), batches) for n in counts]
    layouts = {g: _columns([t[g] for t, _ in per_count]) for g in d.gamma_values()}
    draft = None
    if d.draft is not None:
        draft = {x: _columns([dr[x] for _, dr in per_count]) for x in d.draft_values()}
    latency, _ = combine(
        {g: v.latency_s for g, v in layouts.items()},
        {x: v.latency_s for x, v in draft.items()} if draft else None,
        s.spec,
    )
    N, B = np.meshgrid(counts, batches)
    return N, B, latency, (layouts, draft)


def _flat(layout: Layout) -> Layout:
    return Layout(
        **{
            name: np.ravel(np.asarray(getattr(layout, name)))
            for name in ("latency_s", "pipeline", "attention_divisor", "two_d")
        },
        value=None if layout.value is None else np.ravel(layout.value),
    )


def describe(problem, N, B, layouts, idx):
    """The frontier rows of the discrete search, with the layouts it found (a DataFrame)."""
    import pandas as pd

    return pd.DataFrame(describe_columns(problem, N, B, layouts, idx))


def describe_columns(problem, N, B, layouts, idx):
    """``describe`` as {column: array} (``Decoder.describe_columns``), without pandas."""
    per_gamma, draft = layouts
    pick = {g: _flat(v).select(idx) for g, v in per_gamma.items()}
    dpick = {x: _flat(v).select(idx) for x, v in draft.items()} if draft is not None else None
    return problem.decoder.describe_columns(N.ravel()[idx], B.ravel()[idx], pick, dpick)
