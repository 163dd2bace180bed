"""Discrete layouts (MODEL.md Part B): what one could actually deploy.

Instead of the paper's real-valued grid, the discrete search enumerates whole configurations:
integer GPU counts (every count up to one node, whole nodes beyond), integer batches, pipeline
degrees that divide the layers and the GPUs, attention tensor degrees that divide the KV heads
(the query heads when there is one KV head or MLA), expert-parallel degrees that divide the
experts and the tensor degree, and 2-D tensor splits into whole ranks.
"""

from __future__ import annotations

import numpy as np

from .specdec import combine

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


def _search(model, arch, N: int, B, S, context, pipeline: bool):
    """Best latency over the discrete layouts of one GPU count, for every batch in ``B``."""
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
            lat2, lat1 = model.latency_by_dims(part, float(N), float(p), adiv)
            for lat, two in ((lat2, True), (lat1, False)):
                lat = np.where(ok, lat, np.inf)
                better = lat < best
                best = np.where(better, lat, best)
                best_p = np.where(better, p, best_p)
                best_a = np.where(better, adiv, best_a)
                best_two = np.where(better, two, best_two)
    return best, best_p, best_a, best_two


def evaluate(problem):
    """Latency on the discrete grid: (N, B, latency, layouts) with rows = batches, cols = GPUs."""
    s = problem.setting
    node = s.gpu.scale_up_domain_gpus
    counts = gpu_counts(problem.min_gpus, node)
    sparsity = max(g.sparsity for g in problem.work.groups)
    batches = batch_sizes(2.0 ** (18 + np.log2(sparsity)), s.grid_points)
    shape = (len(batches), len(counts))
    gammas = problem.gamma_values()
    layouts = {
        g: [np.empty(shape), np.ones(shape), np.ones(shape), np.ones(shape, dtype=bool)]
        for g in gammas
    }
    draft = (
        [np.empty(shape), np.ones(shape), np.ones(shape), np.ones(shape, dtype=bool)]
        if problem.draft
        else None
    )
    for j, n in enumerate(counts.astype(int)):
        for g in gammas:
            for arr, col in zip(
                layouts[g],
                _search(problem.target, s.model, n, batches, g, s.context_tokens, s.pipeline),
            ):
                arr[:, j] = col
        if draft is not None:
            for arr, col in zip(
                draft,
                _search(problem.draft, s.spec.draft, n, batches, 1, s.context_tokens, s.pipeline),
            ):
                arr[:, j] = col
    latency, _ = combine({g: v[0] for g, v in layouts.items()}, draft[0] if draft else None, s.spec)
    N, B = np.meshgrid(counts, batches)
    return N, B, latency, (layouts, draft)


def describe(problem, N, B, layouts, idx):
    """The frontier rows of the discrete search, with the layouts it found."""
    per_gamma, draft = layouts
    pick = {g: tuple(x.ravel()[idx] for x in v) for g, v in per_gamma.items()}
    dpick = tuple(x.ravel()[idx] for x in draft) if draft is not None else None
    return problem.describe(N.ravel()[idx], B.ravel()[idx], layouts=pick, draft_layout=dpick)
