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

from ..model.latency import expert_degree
from ..model.layouts import Layout, within_budget
from ..model.machine import square_split
from ..serving.speculative import combine
from .method import GRID_MAX_LOG2

#: Whole nodes beyond one node: {1, 3, 5, 7} x 2^i nodes (four counts per doubling).
NODE_MULTIPLIERS = (1, 3, 5, 7)


def divisors(n: int) -> list[int]:
    """The divisors of a positive integer, ascending."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


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


def attention_degrees(arch, t: int) -> list[int]:
    """Attention tensor degrees allowed for tensor degree ``t``: divisors of t that divide the
    KV heads (or the query heads when there is a single KV head or MLA)."""
    att = arch.attention
    heads = att.kv_heads if (att.kind != "mla" and att.kv_heads > 1) else att.query_heads
    return [d for d in divisors(t) if heads % d == 0]


def _sides(degree: int) -> tuple[int, int]:
    """The two sides (R, degree/R) of the whole 2-D split of a tensor degree (§B7)."""
    r = int(square_split(degree))
    return r, degree // r


def _divides(degree: int, *widths) -> bool:
    return all(int(w) % degree == 0 for w in widths)


def ff_splits_evenly(model, t: int, micro_batch, two_d: bool):
    """Where (per micro-batch) the feed-forward tensor degree t_ff = t/e divides every
    feed-forward width it splits, e being the expert degree at that micro-batch; for 2-D both
    sides of the split divide the model width and the feed-forward widths."""
    w = model.work
    ok = np.ones(np.shape(micro_batch), dtype=bool)
    ep_min = model.assumptions.expert_parallel_min_batch_per_sparsity
    for g in w.groups:
        widths = (g.d_ff, g.shared_d_ff) if g.shared else (g.d_ff,)
        e = expert_degree(micro_batch, float(t), g.experts, ep_min * g.sparsity, integer=True)
        e = np.broadcast_to(np.asarray(e, dtype=float), ok.shape)
        for value in np.unique(e):
            t_ff = max(1, int(round(t / value)))
            if two_d:
                good = all(_divides(side, w.d_model, *widths) for side in _sides(t_ff))
            else:
                good = _divides(t_ff, *widths)
            if not good:
                ok &= e != value
    return ok


def attention_splits_evenly(model, t_at: int, two_d: bool) -> bool:
    """Attention on t_at GPUs splits the heads (attention_degrees); in 2-D both sides of the
    split also divide the model width and the heads."""
    if not two_d:
        return True
    return all(_divides(side, model.work.d_model, model.work.tp_heads) for side in _sides(t_at))


def _search(
    model, arch, N: int, B, S, context, pipeline: bool, per_layout=None, budget=None
) -> Layout:
    """Best layout over the discrete layouts of one GPU count, for every batch in ``B``
    (``per_layout`` and ``budget`` as in ``model.layouts.best_layout``)."""
    layers = model.work.layers
    best = np.full(B.shape, np.inf)
    best_p = np.ones(B.shape)
    best_a = np.ones(B.shape)
    best_two = np.ones(B.shape, dtype=bool)
    best_v = None if per_layout is None else np.full(B.shape, np.inf)
    for p in divisors(layers) if pipeline else [1]:
        if N % p:
            continue
        ok = model.fits(float(N), B, float(p), context, adiv=None)
        if not np.any(ok):
            continue
        t = N // p
        even = {two: ok & ff_splits_evenly(model, t, B / p, two) for two in (True, False)}
        if not (even[True].any() or even[False].any()):
            continue
        part = model.pipeline_part(float(N), B, S, context, float(p))
        for t_at in attention_degrees(arch, t):
            adiv = float(t // t_at)
            values = per_layout(float(N), B, float(p), [adiv])[0] if per_layout else None
            lats = within_budget(*model.latency_by_dims(part, adiv), values, budget)
            for j, (lat, two) in enumerate(zip(lats, (True, False))):
                if not attention_splits_evenly(model, t_at, two):
                    continue
                lat = np.where(even[two], lat, np.inf)
                better = lat < best
                best = np.where(better, lat, best)
                best_p = np.where(better, p, best_p)
                best_a = np.where(better, adiv, best_a)
                best_two = np.where(better, two, best_two)
                if values is not None:
                    best_v = np.where(better, values[j], best_v)
    return Layout(best, best_p, best_a, best_two, best_v)


def _columns(
    model, arch, counts, batches, S, context, pipeline, per_layout=None, budget=None
) -> Layout:
    """The best layouts on the whole grid (rows = batches, columns = GPU counts)."""
    cols = [
        _search(
            model,
            arch,
            n,
            batches,
            S,
            context,
            pipeline,
            per_layout,
            budget[:, i] if np.ndim(budget) == 2 else budget,
        )
        for i, n in enumerate(counts.astype(int))
    ]
    return Layout(
        *(
            np.stack([getattr(c, name) for c in cols], axis=1)
            for name in ("latency_s", "pipeline", "attention_divisor", "two_d")
        ),
        np.stack([c.value for c in cols], axis=1) if per_layout is not None else None,
    )


def evaluate(problem):
    """Latency on the discrete grid: (N, B, latency, layouts) with rows = batches, cols = GPUs;
    the layouts are ({S: Layout} of the target, {S: Layout} of the draft or None). With a TTFT
    limit only layouts within it are candidates (``serving.decode.Decoder.layouts``)."""
    s, d = problem.setting, problem.decoder
    counts = problem.within_cap(gpu_counts(problem.min_gpus, s.gpu.scale_up_domain_gpus))
    sparsity = max(g.sparsity for g in d.work.groups)
    batches = batch_sizes(2.0 ** (GRID_MAX_LOG2 + np.log2(sparsity)), problem.method.grid_points)
    ctx, pipe = s.context_tokens, s.pipeline
    draft = None
    if d.draft is not None:
        head = s.spec.draft_architecture
        draft = {
            x: _columns(d.draft, head, counts, batches, x, ctx, pipe, d.draft_terms)
            for x in d.draft_values()
        }
    layouts = {
        g: _columns(
            d.target, s.model, counts, batches, g, ctx, pipe, d.target_terms, d.budget(g, draft)
        )
        for g in d.gamma_values()
    }
    latency, _ = combine(
        {g: v.latency_s for g, v in layouts.items()},
        {x: v.latency_s for x, v in draft.items()} if draft else None,
        s.spec,
    )
    N, B = np.meshgrid(counts, batches)
    return N, B, latency, (layouts, draft)


def whole_layouts(decoder, N, B):
    """The best whole layouts of configurations (N, B) of one GPU count — what an engine
    launches — as ``Decoder.layouts`` gives §A5's: ({S: Layout} of the target, {S: Layout} of
    the draft or None)."""
    s, d = decoder.setting, decoder
    n = int(np.ravel(N)[0])
    B = np.asarray(B, dtype=float)
    ctx, pipe = s.context_tokens, s.pipeline
    draft = None
    if d.draft is not None:
        head = s.spec.draft_architecture
        draft = {
            x: _search(d.draft, head, n, B, x, ctx, pipe, d.draft_terms) for x in d.draft_values()
        }
    target = {
        g: _search(d.target, s.model, n, B, g, ctx, pipe, d.target_terms, d.budget(g, draft))
        for g in d.gamma_values()
    }
    return target, draft


def _flat(layout: Layout) -> Layout:
    return Layout(
        *(
            np.ravel(x)
            for x in (layout.latency_s, layout.pipeline, layout.attention_divisor, layout.two_d)
        ),
        None if layout.value is None else np.ravel(layout.value),
    )


def describe(problem, N, B, layouts, idx):
    """The frontier rows of the discrete search, with the layouts it found."""
    per_gamma, draft = layouts
    pick = {g: _flat(v).select(idx) for g, v in per_gamma.items()}
    dpick = {x: _flat(v).select(idx) for x, v in draft.items()} if draft is not None else None
    return problem.decoder.describe(N.ravel()[idx], B.ravel()[idx], pick, dpick)
