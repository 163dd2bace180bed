"""The layouts of an instance and the best of them at given points (docs/model.md §A5).

The token latency of (N GPUs, batch B) is the minimum over pipeline degrees ``p`` (1 and
log-spaced values up to min(B, L)), attention divisors ``adiv`` (log-spaced from 1 to N/p) and
1-D or 2-D tensor parallelism. ``best_layout`` evaluates every candidate at given points; the
grid search of the optimiser (``optimise/grid.py``) computes the same minimum faster.

Both may take a ``per_layout`` function giving a value of every candidate layout (the time to
first token on it, docs/model.md §B8): the value of the chosen layout is returned, and with a
``budget`` only layouts whose value is within it are candidates.

``whole_layout`` is their twin on whole GPUs (§B7): degrees that divide the GPUs, the layers,
the heads and the feed-forward widths, what an engine can launch (the discrete search, and a
given configuration with ``discrete``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..specs.architecture import MOST_REDUNDANT_EXPERTS
from .latency import (
    StepModel,
    allowed_attention_degrees,
    divisors,
    engine_attention_degrees,
    launched_attention_degrees,
    step_batch,
)
from .machine import square_split
from .moe import fewest_copies
from .step_calls import NO_CACHE, StepCache, expert_degree


def _arrays(N, B):
    """Broadcast N and B to one shape, keeping float32 if both are float32 (faster search)."""
    N, B = np.asarray(N), np.asarray(B)
    dtype = np.result_type(N.dtype, B.dtype, np.float32)
    return np.broadcast_arrays(N.astype(dtype, copy=False), B.astype(dtype, copy=False))


def pipeline_degrees(B, layers: int, count: int, allowed: bool, extra=(), up_to_layers=False):
    """The pipeline degrees of §A5 for batch ``B``: [1] + logspace(0, log2 min(B, L), count)[1:]
    (up to L itself with ``up_to_layers``), plus the whole degrees ``extra`` (node-aligned
    layouts)."""
    if not allowed:
        return [1.0]
    top = float(layers) if up_to_layers else np.minimum(np.asarray(B), layers)
    # i = 0 repeats p = 1, which is already the first candidate
    logs = [top ** (i / (count - 1)) for i in range(1, count)] if count > 1 else []
    return [1.0] + logs + [float(p) for p in extra if p > 1]


def attention_divisors(t, count: int, extra_degrees=()):
    """The attention divisors of §A5 for tensor degree ``t``: logspace(0, log2 max(t, 1), count),
    plus ``t / d`` for each whole attention degree ``d`` in ``extra_degrees``.

    §A5 leaves a < 1 undefined when t = N/p < 1 (a fraction of one GPU); the divisor is
    kept at 1 or more, so attention is never cheaper than on the whole instance.
    """
    base = np.maximum(np.asarray(t), 1.0)
    out = [base ** (j / (count - 1)) for j in range(count)] if count > 1 else [np.ones_like(base)]
    return out + [np.maximum(base / d, 1.0) for d in extra_degrees if d > 1]


@dataclass(frozen=True)
class Layout:
    """The best layout at each of some points (arrays): its latency, pipeline degree,
    attention divisor, whether tensor parallelism is 2-D, and the ``per_layout`` value of the
    chosen layout (None when none was asked for; a layout that only carries values, such as a
    draft's prefill times, leaves the others None)."""

    latency_s: np.ndarray | None
    pipeline: np.ndarray | None
    attention_divisor: np.ndarray | None
    two_d: np.ndarray | None
    value: np.ndarray | None = None

    def tp_dims(self, gpus):
        """How tensor parallelism splits the matrices at each point: "1D", "2D", or "-" where
        there is none (tensor degree ``gpus / pipeline`` at most 1)."""
        return tp_dims(self.two_d, np.asarray(gpus, dtype=float) / np.asarray(self.pipeline))

    def select(self, which) -> Layout:
        """The layouts at some of the points (a boolean mask or indices)."""
        return Layout(
            np.asarray(self.latency_s)[which],
            np.asarray(self.pipeline)[which],
            np.asarray(self.attention_divisor)[which],
            np.asarray(self.two_d)[which],
            None if self.value is None else np.asarray(self.value)[which],
        )


#: The least tensor degree that splits the matrices to speak of: a continuous frontier's
#: 1.0007 GPUs split off 0.07 % of them (tables show the degree as 1.00), no split to name.
TP_SPLIT_MIN = 1.005


def tp_dims(two_d, tensor_degree):
    """ "1D" or "2D" tensor parallelism (§B7), "-" where the tensor degree is below
    ``TP_SPLIT_MIN`` (no matrix is split, or a negligible part of one, so the split has no
    dimensions); arrays in, arrays out, scalars as text."""
    dims = np.where(
        np.asarray(tensor_degree, dtype=float) >= TP_SPLIT_MIN, np.where(two_d, "2D", "1D"), "-"
    )
    return dims.item() if dims.ndim == 0 else dims


def within_budget(lat2, lat1, values, budget):
    """(2-D, 1-D) latencies with the layouts whose value exceeds ``budget`` removed (inf)."""
    if values is None or budget is None:
        return lat2, lat1
    v2, v1 = values
    return np.where(v2 <= budget, lat2, np.inf), np.where(v1 <= budget, lat1, np.inf)


def _degrees(model: StepModel, B, pipeline):
    """The pipeline degrees §A5 searches at batches ``B`` under the model's assumptions, and
    §B12's degrees above a batch (``StepModel.idle_stage_degrees``) where the batch is
    smaller (1 elsewhere: a candidate already searched)."""
    a = model.assumptions
    degrees = pipeline_degrees(
        B,
        model.work.layers,
        a.pipeline_degree_count,
        pipeline,
        model.extra_pipeline_degrees,
        a.pipeline_degrees_up_to_layers,
    )
    if pipeline:
        B = np.asarray(B)
        degrees += [
            np.where(d > B, float(d), 1.0) for d in model.idle_stage_degrees if np.any(d > B)
        ]
    return degrees


def _candidates(model: StepModel, N, B, S, context, pipeline):
    """Every (p, adiv, feasible mask, pipeline part) of §A5 at the points (N, B)."""
    degrees = _degrees(model, B, pipeline)
    for p in degrees:
        ok = model.fits(N, B, p, context, adiv=None)  # KV copies: per divisor, in the step
        if not np.any(ok):
            continue
        part = model.pipeline_part(N, B, S, context, p)
        for adiv in attention_divisors(
            N / p, model.assumptions.attention_divisor_count, model.extra_attention_degrees
        ):
            yield p, adiv, ok, part


def best_latency(
    model: StepModel, N, B, S=1, context=0.0, pipeline=True, per_layout=None, budget=None
):
    """Minimum token latency over the layouts of §A5 at every (N, B); inf where nothing fits
    (or, with a ``budget``, where no layout's ``per_layout`` value is within it)."""
    return best_layout(model, N, B, S, context, pipeline, per_layout, budget).latency_s


def best_layout(
    model: StepModel, N, B, S=1, context=0.0, pipeline=True, per_layout=None, budget=None
) -> Layout:
    """The fastest layout at every (N, B), with its latency.

    ``per_layout(N, B, p, divisors)`` returns a (2-D, 1-D) pair of values per divisor;
    the chosen layout's value is kept, and with ``budget`` only layouts within it count."""
    N, B = _arrays(N, B)
    if _stackable(N, per_layout):
        return _best_layouts_stacked(model, N, B, [S], context, pipeline)[0]
    best = _Best(N.shape, N.dtype, per_layout is not None)
    for p, adiv, ok, part in _candidates(model, N, B, S, context, pipeline):
        lat2, lat1 = model.latency_by_dims(part, adiv)
        values = per_layout(N, B, p, [adiv])[0] if per_layout is not None else None
        lat2, lat1 = within_budget(lat2, lat1, values, budget)
        for lat, two, j in ((lat2, True, 0), (lat1, False, 1)):
            best.offer(np.where(ok, lat, np.inf), p, adiv, two, values, j)
    return best.layout()


#: Points up to which ``best_layout`` evaluates a pipeline degree's attention divisors in one
#: stacked array (divisors x points) rather than one at a time; more points go one at a time
#: (the stacked arrays of a 400 x 400 reference grid would take hundreds of MB).
STACKED_POINTS_MAX = 20_000


def best_layouts(model: StepModel, N, B, S_values, context=0.0, pipeline=True) -> dict:
    """``best_layout`` (without ``per_layout``) for each tokens per pass in ``S_values``, as
    {S: Layout}: the same layouts, with the collective structures of a pipeline degree, which
    do not depend on S, built once for all of them (as the grid search shares them)."""
    N, B = _arrays(N, B)
    S_values = list(S_values)
    if _stackable(N, None):
        return dict(zip(S_values, _best_layouts_stacked(model, N, B, S_values, context, pipeline)))
    return {S: best_layout(model, N, B, S, context, pipeline) for S in S_values}


def _stackable(N, per_layout) -> bool:
    """Whether ``_best_layouts_stacked`` serves: float64 points, not too many, no values."""
    return per_layout is None and N.dtype == np.float64 and 0 < N.size <= STACKED_POINTS_MAX


def _best_layouts_stacked(model: StepModel, N, B, S_values, context, pipeline) -> list[Layout]:
    """``best_layout`` without ``per_layout``, in float64, for each S of ``S_values``, the
    attention divisors of each pipeline degree evaluated at once as a stacked (divisors,
    points) array: the same candidates in the same order, every quantity elementwise, so the
    same layouts bit for bit (tests/test_layouts_stacked.py), with a Python call per pipeline
    degree rather than per candidate (describing a worked-study cell's few hundred points
    took 0.05 s that way, 0.3 s with a draft; now 0.023 / 0.064 s)."""
    degrees = _degrees(model, B, pipeline)
    bests = [_Best(N.shape, N.dtype) for _ in S_values]
    for p in degrees:
        ok = model.fits(N, B, p, context, adiv=None)
        if not np.any(ok):
            continue
        divisors_ = np.stack(
            attention_divisors(
                N / p, model.assumptions.attention_divisor_count, model.extra_attention_degrees
            )
        )
        # the collective structures do not depend on S, unless expert parallelism follows
        # the tokens of a pass (prefill): then nothing is shared
        cache = NO_CACHE if model.expert_parallel_by_tokens else StepCache({})
        for S, best in zip(S_values, bests):
            part = model.pipeline_part(N, B, S, context, p, cache=cache)
            lat2, lat1 = model.latency_by_dims(part, divisors_, cache, "stacked")
            # candidates in best_layout's order: each divisor with 2-D, then 1-D
            shape = divisors_.shape
            lats = np.stack([np.broadcast_to(lat2, shape), np.broadcast_to(lat1, shape)], axis=1)
            lats = lats.reshape(-1, *N.shape)
            lats = np.where(ok & ~np.isnan(lats), lats, np.inf)  # NaN never wins, as in offer
            first = np.argmin(lats, axis=0)  # the first of the fastest, as offer keeps it
            latency = np.take_along_axis(lats, first[None], axis=0)[0]
            adiv = np.take_along_axis(divisors_, (first // 2)[None], axis=0)[0]
            best.offer(latency, p, adiv, first % 2 == 0)
    return [best.layout() for best in bests]


class _Best:
    """The fastest layout so far at every point, as candidate layouts are offered
    (``best_layout`` and ``whole_layout``): its latency, pipeline degree, attention divisor,
    1-D or 2-D, and its ``per_layout`` value."""

    def __init__(self, shape, dtype=float, values: bool = False) -> None:
        self.latency = np.full(shape, np.inf, dtype=dtype)
        self.p, self.a = np.ones(shape), np.ones(shape)
        self.two = np.ones(shape, dtype=bool)
        self.value: np.ndarray | None = np.full(shape, np.inf) if values else None

    def offer(self, latency, p, adiv, two: bool, values=None, j: int = 0) -> None:
        """A candidate's latency at every point: kept where it is faster than the best."""
        better = latency < self.latency
        self.latency = np.where(better, latency, self.latency)
        self.p = np.where(better, p, self.p)
        self.a = np.where(better, adiv, self.a)
        self.two = np.where(better, two, self.two)
        if values is not None and self.value is not None:
            self.value = np.where(better, values[j], self.value)

    def layout(self) -> Layout:
        return Layout(self.latency, self.p, self.a, self.two, self.value)


# --- whole layouts (docs/model.md §B7): what an engine can launch on whole GPUs -------------


def is_whole(values) -> np.ndarray:
    """Which values (GPU counts, degrees, batches) are whole numbers: a whole layout
    (``whole_layout``) needs whole GPUs, and outputs say when a configuration's figures are
    the continuous model's real-valued ones (§A5)."""
    values = np.asarray(values, dtype=float)
    return values == np.round(values)


def check_whole_gpus(gpus) -> None:
    """Whole layouts need whole GPUs: refuse a real-valued count."""
    _check_whole(gpus, "gpus", "GPUs")


def check_whole_batch(batch) -> None:
    """Whole layouts serve whole requests: refuse a real-valued batch (8.5 requests)."""
    _check_whole(batch, "batch", "requests")


def _check_whole(values, field: str, noun: str) -> None:
    values = np.asarray(values, dtype=float)
    if not np.all(is_whole(values)):
        bad = float(values.ravel()[np.flatnonzero(~is_whole(values.ravel()))[0]])
        raise SpecError(
            "argument",
            field,
            f"is {bad:g}; whole layouts (discrete) lay out whole {noun}",
            f"give a whole number of {noun}, or leave discrete off for the continuous model",
        )


def attention_degrees(arch, t: int, copies: bool = False) -> list[int]:
    """Attention tensor degrees allowed for tensor degree ``t`` (``allowed_attention_degrees``
    of the KV heads, or of the query heads when there is a single KV head or MLA)."""
    att = arch.attention
    heads = att.kv_heads if (att.kind != "mla" and att.kv_heads > 1) else att.query_heads
    return allowed_attention_degrees(int(heads), att.query_heads, t, copies)


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
        e = expert_degree(
            micro_batch, float(t), g.experts, ep_min * g.sparsity, True, w.redundant_experts
        )
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


def splits_evenly(model, gpus: int, pipeline: bool = True, micro_batch: float = 1.0) -> bool:
    """Whether some whole layout of ``gpus`` GPUs splits the model evenly by §B7's rules
    (a pipeline degree dividing the layers and the GPUs, a feed-forward tensor degree dividing
    every feed-forward width at ``micro_batch``, attention on one GPU at least), whatever the
    memory."""
    for p in divisors(model.work.layers) if pipeline else [1]:
        if (
            gpus % p == 0
            and any(
                ff_splits_evenly(model, gpus // p, micro_batch, two).all() for two in (False, True)
            )
            and launched_attention_degrees(
                model.work, gpus // p, model.features, model.assumptions.kv_replication
            )
        ):
            return True
    return False


def uneven_reason(
    model, arch_name: str, gpus: float, pipeline: bool = True, continuous: bool = True
) -> str | None:
    """Why ``gpus`` whole GPUs have no layout for a model, when it is that none splits it
    evenly (``splits_evenly``), with the nearest counts that do; None otherwise (then memory or
    a limit is the reason). ``continuous``: say that the continuous model lays out any count
    (where the command has --discrete to leave)."""
    if not np.all(is_whole(gpus)) or splits_evenly(model, int(gpus), pipeline):
        return None
    n = int(gpus)
    near = [m for m in range(max(1, n - 4), n + 5) if m != n and splits_evenly(model, m, pipeline)]
    listed = (
        ", ".join(map(str, near[:-1])) + f" or {near[-1]}"
        if len(near) > 1
        else "".join(map(str, near))
    )
    return (
        f"no whole layout of {n} GPUs splits {arch_name} evenly: pipeline degrees divide its "
        f"{model.work.layers} layers and the GPUs, tensor degrees every feed-forward width "
        + (
            "and the attention heads (the query heads split by it, and it divides the KV "
            "heads or they divide it, each then copied) "
            if "attention_data" not in model.features
            else ""
        )
        + (
            "and, under attention data parallelism, the routed experts (the engine runs it "
            "only with its expert parallelism over the whole group) "
            if "attention_data_expert" in model.features
            else ""
        )
        + "(docs/model.md §B7)"
        + (f"; {listed} GPUs do" if near else "")
        + _copies_hint(model, n, pipeline)
        + ("; without --discrete the continuous model lays out any count" if continuous else "")
    )


def _copies_hint(model, n: int, pipeline: bool) -> str:
    """Where redundant copies would let a MoE's routed experts split over all ``n`` GPUs (the
    fewest, ``moe.fewest_copies``) and so give a whole layout (``splits_evenly``) that the
    copies held (none, or ones whose slots ``n`` does not divide) do not: the option that gives
    them, and where copies are held, that their slots do not split."""
    work = model.work
    experts = max((int(g.experts) for g in work.groups), default=1)
    copies = fewest_copies(experts, n)
    held = int(work.redundant_experts)
    if not 0 < copies <= MOST_REDUNDANT_EXPERTS or (held and (experts + held) % n == 0):
        return ""
    if not splits_evenly(_WithCopies(model, copies), n, pipeline, _EXPERTS_PARALLEL):
        return ""  # the experts are not what leaves the count without a layout
    if held:
        return (
            f"; its {experts} experts and {held} redundant copies ({experts + held} slots) do "
            f"not split over all {n} GPUs: --redundant-experts {copies} "
            f"({experts + copies} slots) does"
        )
    return (
        f"; its {experts} experts split over all {n} GPUs only with redundant copies: "
        f"--redundant-experts {copies} ({experts + copies} slots)"
    )


#: A micro-batch at which every MoE layer's experts run parallel (``expert_degree``): where
#: the copies' split is what a whole layout needs.
_EXPERTS_PARALLEL = 1e12


class _WithCopies:
    """``model`` holding ``copies`` redundant experts (for ``splits_evenly``, which reads its
    workload, features and assumptions)."""

    def __init__(self, model, copies: int) -> None:
        self._model = model
        self.work = dataclasses.replace(model.work, redundant_experts=float(copies))

    def __getattr__(self, name):
        return getattr(self._model, name)


def whole_layout(
    model, arch, N: int, B, S, context, pipeline: bool, per_layout=None, budget=None
) -> Layout:
    """The best whole layout of ``N`` GPUs (a whole number) for every batch in ``B`` (an
    array): what an engine can launch, by §B7's rules; ``per_layout`` and ``budget`` as in
    ``best_layout``, ``arch`` the architecture whose heads attention splits."""
    layers = model.work.layers
    best = _Best(B.shape, float, per_layout is not None)
    for p in divisors(layers) if pipeline else [1]:
        if N % p:
            continue
        ok = model.fits(float(N), B, float(p), context, adiv=None)
        if not np.any(ok):
            continue
        t = N // p
        b = step_batch(model.assumptions, B, float(p)) / p
        even = {two: ok & ff_splits_evenly(model, t, b, two) for two in (True, False)}
        if not (even[True].any() or even[False].any()):
            continue
        part = model.pipeline_part(float(N), B, S, context, float(p))
        experts = [g.experts for g in model.work.groups]
        allowed = attention_degrees(arch, t, model.assumptions.kv_replication)
        for t_at in engine_attention_degrees(allowed, t, model.features, experts):
            adiv = float(t // t_at)
            values = per_layout(float(N), B, float(p), [adiv])[0] if per_layout else None
            lat2, lat1 = model.latency_by_dims(part, adiv)
            lats = within_budget(lat2, lat1, values, budget)
            for j, (lat, two) in enumerate(zip(lats, (True, False))):
                if attention_splits_evenly(model, t_at, two):
                    best.offer(np.where(even[two], lat, np.inf), p, adiv, two, values, j)
    return best.layout()
