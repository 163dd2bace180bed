"""Discrete layouts (docs/model.md §B7): what one could actually deploy.

Instead of the paper's real-valued grid, the discrete search enumerates whole configurations:
integer GPU counts (every count up to one node, whole nodes beyond), integer batches, pipeline
degrees that divide the layers and the GPUs, attention tensor degrees that divide the KV heads
(the query heads when there is one KV head or MLA), expert-parallel degrees that divide the
experts and the tensor degree, and 2-D tensor splits into whole ranks.
"""

from __future__ import annotations

import numpy as np

from ..model.layouts import Layout
from ..serving.speculative import combine

#: Whole nodes beyond one node: {1, 3, 5, 7} x 2^i nodes (four counts per doubling).
NODE_MULTIPLIERS = (1, 3, 5, 7)


def divisors(n: int) -> list[int]:
    """The divisors of a positive integer, ascending."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def gpu_counts(min_gpus: float, node: int, max_gpus: int = 2**18) -> np.ndarray:
    """Integer GPU counts: 1 … node, then whole nodes ({1,3,5,7}·2^i), from the first that fits."""
    within = np.arange(1, node + 1)
    nodes = [m * 2**i for i in range(0, 19) for m in NODE_MULTIPLIERS]
    counts = np.unique(np.concatenate([within, node * np.asarray(nodes)]))
    counts = counts[counts <= max_gpus]
    return counts[counts >= np.floor(min_gpus)].astype(float)


def batch_sizes(max_batch: float, points: int) -> np.ndarray:
    """Integer batch sizes, log-spaced from 1 to ``max_batch``."""
    return np.unique(np.rint(np.logspace(0, np.log2(max_batch), points, base=2))).astype(float)


def attention_degrees(arch, t: int) -> list[int]:
    """Attention tensor degrees allowed for tensor degree ``t``: divisors of t that divide the
    KV heads (or the query heads when there is a single KV head or MLA)."""
    att = arch.attention
    heads = att.kv_heads if (att.kind != "mla" and att.kv_heads > 1) else att.query_heads
    return [d for d in divisors(t) if heads % d == 0]


def _search(model, arch, N: int, B, S, context, pipeline: bool) -> Layout:
    """Best layout over the discrete layouts of one GPU count, for every batch in ``B``."""
    layers = model.work.layers
    best = np.full(B.shape, np.inf)
    best_p = np.ones(B.shape)
    best_a = np.ones(B.shape)
    best_two = np.ones(B.shape, dtype=bool)
    for p in divisors(layers) if pipeline else [1]:
        if N % p:
            continue
        ok = model.fits(float(N), B, float(p), context)
        if not np.any(ok):
            continue
        t = N // p
        part = model.pipeline_part(float(N), B, S, context, float(p))
        for t_at in attention_degrees(arch, t):
            adiv = float(t // t_at)
            lat2, lat1 = model.latency_by_dims(part, adiv)
            for lat, two in ((lat2, True), (lat1, False)):
                lat = np.where(ok, lat, np.inf)
                better = lat < best
                best = np.where(better, lat, best)
                best_p = np.where(better, p, best_p)
                best_a = np.where(better, adiv, best_a)
                best_two = np.where(better, two, best_two)
    return Layout(best, best_p, best_a, best_two)


def _columns(model, arch, counts, batches, S, context, pipeline) -> Layout:
    """The best layouts on the whole grid (rows = batches, columns = GPU counts)."""
    cols = [_search(model, arch, n, batches, S, context, pipeline) for n in counts.astype(int)]
    return Layout(
        np.stack([c.latency_s for c in cols], axis=1),
        np.stack([c.pipeline for c in cols], axis=1),
        np.stack([c.attention_divisor for c in cols], axis=1),
        np.stack([c.two_d for c in cols], axis=1),
    )


def evaluate(problem):
    """Latency on the discrete grid: (N, B, latency, layouts) with rows = batches, cols = GPUs;
    the layouts are ({S: Layout} of the target, {S: Layout} of the draft or None)."""
    s, d = problem.setting, problem.decoder
    counts = gpu_counts(problem.min_gpus, s.gpu.scale_up_domain_gpus)
    sparsity = max(g.sparsity for g in d.work.groups)
    batches = batch_sizes(2.0 ** (18 + np.log2(sparsity)), problem.method.grid_points)
    ctx, pipe = s.context_tokens, s.pipeline
    layouts = {
        g: _columns(d.target, s.model, counts, batches, g, ctx, pipe) for g in d.gamma_values()
    }
    draft = None
    if d.draft is not None:
        head = s.spec.draft_architecture
        draft = {
            x: _columns(d.draft, head, counts, batches, x, ctx, pipe) for x in d.draft_values()
        }
    latency, _ = combine(
        {g: v.latency_s for g, v in layouts.items()},
        {x: v.latency_s for x, v in draft.items()} if draft else None,
        s.spec,
    )
    N, B = np.meshgrid(counts, batches)
    return N, B, latency, (layouts, draft)


def _flat(layout: Layout) -> Layout:
    return Layout(
        *(
            np.ravel(x)
            for x in (layout.latency_s, layout.pipeline, layout.attention_divisor, layout.two_d)
        )
    )


def describe(problem, N, B, layouts, idx):
    """The frontier rows of the discrete search, with the layouts it found."""
    per_gamma, draft = layouts
    pick = {g: _flat(v).select(idx) for g, v in per_gamma.items()}
    dpick = {x: _flat(v).select(idx) for x, v in draft.items()} if draft is not None else None
    return problem.decoder.describe(N.ravel()[idx], B.ravel()[idx], pick, dpick)
