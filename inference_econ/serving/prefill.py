"""Prefill, time to first token and the price of input tokens (docs/model.md §B8).

A prefill is one forward pass over the prompt: ``S = n_in`` tokens per request at context 0,
each token attending to the tokens before it (causal attention FLOP ≈ 2·x·H·L·n_in²). It
uses the same layouts, collectives and breakdown as a decode step, so it reuses ``StepModel``
with the mean context of the pass. Prompts whose activations do not fit run in chunks that
attend to the chunks before them; a cached prefix (prefix caching) is not recomputed, only
read.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import settings as table
from ..errors import SpecError, expect
from ..model.economics import mfu, usd_per_mtok
from ..model.latency import (
    ADDITIVE_PARTS,
    StepModel,
    bound_label,
    prefill_step_model,
    stage_busy_share,
    step_batch,
)
from ..model.layouts import (
    best_latency,
    best_layout,
    check_whole_batch,
    check_whole_gpus,
    tp_dims,
    whole_layout,
)
from ..model.step_calls import NO_CACHE, expert_degree
from ..model.values import Floats
from ..specs.schema import check_number
from .energy import energy_columns
from .setting import Setting, check_context

if TYPE_CHECKING:
    import pandas as pd


def prefill_model(setting: Setting, integer_layouts: bool = False) -> StepModel:
    """The step model of a prefill pass for a setting (see ``latency.prefill_step_model``)."""
    return prefill_step_model(setting.model, setting.gpu, setting.assumptions, integer_layouts)


#: Tokens of one prefill pass of a long prompt: serving engines prefill in chunks of a token
#: budget (SGLang's chunked_prefill_size and vLLM's max_num_batched_tokens, 8192 on 80 GB GPUs).
ENGINE_CHUNK_TOKENS = 8192


def engine_chunks(prompt_tokens: float, chunk_tokens: float = ENGINE_CHUNK_TOKENS):
    """[(tokens in the pass, context before it)] of a prompt cut into engine-sized chunks; a
    prompt of more than ``MAX_CHUNKS`` of them is refused (a 1e12-token prompt in chunks of
    8,128 had looped for minutes)."""
    passes = math.ceil(float(prompt_tokens) / float(chunk_tokens) - 1e-9)
    if passes > MAX_CHUNKS:
        raise SpecError(
            "argument",
            "prompt_tokens",
            f"a prompt of {float(prompt_tokens):g} tokens in an engine's chunks of "
            f"{float(chunk_tokens):,.0f} would take {passes:,} passes (at most {MAX_CHUNKS:,})",
            f"use prompts of at most {MAX_CHUNKS * float(chunk_tokens):,.0f} tokens",
        )
    plan, done = [], 0.0
    while done < prompt_tokens - 1e-9:
        size = min(float(chunk_tokens), prompt_tokens - done)
        plan.append((size, done))
        done += size
    return plan


def prefill_latency_s(setting: Setting, n_values, integer_layouts: bool = False):
    """The fastest prefill of one prompt of ``setting.prompt_tokens`` on each GPU count, in
    engine-sized chunks, whatever the layout (inf where it does not fit; 0 without a prompt
    length): a lower bound of the time to first token on those GPUs."""
    if setting.prompt_tokens is None:
        return np.zeros(np.shape(n_values))
    model = prefill_model(setting, integer_layouts)
    n = np.asarray(n_values, dtype=float)
    total = np.zeros(n.shape)
    for S, context in engine_chunks(float(setting.prompt_tokens)):
        total = total + best_latency(model, n, np.ones_like(n), S, context, setting.pipeline)
    return total


class FirstToken:
    """Time to first token on the layout an instance actually has (docs/model.md §B8).

    A new prompt is prefilled on the instance's own GPUs and layout (pipeline degree p,
    attention divisor, 1-D or 2-D), in engine-sized chunks, passing through the p stages one
    after another; then the batch takes one decode step at the prompt's length, which must fit
    in HBM with every request at that context. The draft model of speculative decoding, if
    any, prefills the prompt too, on its own layout.
    """

    def __init__(self, setting: Setting, decode: StepModel, integer_layouts: bool = False):
        a = setting.assumptions
        if setting.prompt_tokens is None:
            raise SpecError(
                "argument", "prompt_tokens", "is needed for a time to first token", "give it"
            )
        self.prompt_tokens = float(setting.prompt_tokens)
        self.chunks = engine_chunks(self.prompt_tokens)
        self.decode = decode
        self.prefill = prefill_step_model(setting.model, setting.gpu, a, integer_layouts)
        spec = setting.spec
        self.draft_prefill = (
            prefill_step_model(spec.draft_architecture, setting.gpu, a, integer_layouts)
            if spec
            else None
        )

    def _prefill_by_dims(self, model: StepModel, N, p, divisors):
        """[(2-D, 1-D) seconds] per attention divisor of one prompt through the layout: p
        prompts in flight, one per micro-batch, is one prompt passing the p stages (§A5),
        chunk after chunk."""
        out: list[tuple[Floats, Floats]] = [(0.0, 0.0) for _ in divisors]
        for S, context in self.chunks:
            part = model.pipeline_part(N, p, S, context, p)
            ok = model.fits(N, p, p, context, adiv=None)
            for j, adiv in enumerate(divisors):
                c2, c1 = model.latency_by_dims(part, adiv)
                out[j] = (
                    out[j][0] + np.where(ok, c2, np.inf),
                    out[j][1] + np.where(ok, c1, np.inf),
                )
        return out

    def target_by_dims(self, N, B, p, divisors, cache=NO_CACHE):
        """[(2-D, 1-D) TTFT] of the target on layouts (p, adiv) for each divisor: its prefill
        plus the first decode step of the batch at the prompt's length (inf where that does
        not fit). ``cache`` is the decode model's (``StepCache``), keyed by divisor index."""
        pre = self._prefill_by_dims(self.prefill, N, p, divisors)
        part = self.decode.pipeline_part(N, B, 1, self.prompt_tokens, p, cache)
        ok = self.decode.fits(N, B, p, self.prompt_tokens, adiv=None)
        out = []
        for j, adiv in enumerate(divisors):
            first2, first1 = self.decode.latency_by_dims(part, adiv, cache, j)
            out.append(
                (np.where(ok, pre[j][0] + first2, np.inf), np.where(ok, pre[j][1] + first1, np.inf))
            )
        return out

    def draft_by_dims(self, N, B, p, divisors, cache=None):
        """[(2-D, 1-D) seconds] of the draft model's prefill on its layouts (p, adiv)."""
        zero = np.zeros(np.broadcast_shapes(np.shape(N), np.shape(B)))
        assert self.draft_prefill is not None, "asked only of a setting with a draft"
        return [
            (v2 + zero, v1 + zero)
            for v2, v1 in self._prefill_by_dims(self.draft_prefill, N, p, divisors)
        ]

    def target_s(self, N, B, layout):
        """TTFT of the target on given layouts (arrays of points)."""
        ((v2, v1),) = self.target_by_dims(N, B, layout.pipeline, [layout.attention_divisor])
        return np.where(layout.two_d, v2, v1)

    def draft_s(self, N, B, layout):
        """The draft's prefill on given layouts."""
        ((v2, v1),) = self.draft_by_dims(N, B, layout.pipeline, [layout.attention_divisor])
        return np.where(layout.two_d, v2, v1)


def _activation_bytes_per_token(model: StepModel) -> float:
    """Working set of one token in flight: the residual stream and the widest feed-forward
    activation, in and out (an estimate used only to decide chunking)."""
    w = model.work
    widest = max(g.d_ff for g in w.groups)
    return (4.0 * w.d_model + 2.0 * widest) * w.bytes_per_activation


#: Most passes of one chunked prefill (all are evaluated at once, as arrays).
MAX_CHUNKS = 100_000


def chunk_plan(
    model: StepModel,
    gpus: float,
    batch: float,
    new_tokens: float,
    cached_tokens: float,
    chunk_tokens: float | None,
):
    """(tokens in each pass, context before it) as two arrays, one pass when it fits; empty
    when the activations of even one token do not fit beside the weights and KV cache (or
    would need more than ``MAX_CHUNKS`` passes)."""
    w = model.work
    empty = (np.array([]), np.array([]))
    if chunk_tokens is None:
        free = model.free_hbm_bytes(gpus) - w.kv_held_bytes(cached_tokens + new_tokens, batch)
        per_token = _activation_bytes_per_token(model) * batch
        if not free > per_token:
            return empty
        chunk = math.floor(min(free / per_token, new_tokens))
        if new_tokens / chunk > MAX_CHUNKS:
            return empty
    else:
        chunk = min(float(chunk_tokens), new_tokens)
        if new_tokens / chunk > MAX_CHUNKS:
            raise SpecError(  # (the prompt's field: a command without --chunk has a default)
                "argument",
                "prompt_tokens",
                f"{new_tokens:g} tokens in chunks of {chunk:g} would take "
                f"{math.ceil(new_tokens / chunk):,} passes (at most {MAX_CHUNKS:,})",
                f"use prompts of at most {MAX_CHUNKS * chunk:,.0f} tokens, or chunks of at least "
                f"{math.ceil(new_tokens / MAX_CHUNKS):,} tokens where the command takes --chunk",
            )
    count = math.ceil(new_tokens / chunk - 1e-9)
    starts = np.arange(count) * float(chunk)
    sizes = np.minimum(float(chunk), new_tokens - starts)
    return sizes, cached_tokens + starts


def chunk_time_s(model: StepModel, gpus: float, pipeline: bool, cached, total) -> np.ndarray:
    """Seconds to prefill tokens [cached, total) of one prompt on ``gpus`` GPUs with the KV of
    [0, cached) already in memory, at the best layout, chunked as ``prefill`` chunks them (inf
    where the weights and KV cache leave no room): ``prefill(..).latency_s`` for arrays of
    (cached, total) at once (docs/model.md §B8, §B9)."""
    cached, total = np.broadcast_arrays(np.asarray(cached, float), np.asarray(total, float))
    new = total - cached
    free = model.free_hbm_bytes(gpus) - model.work.kv_held_bytes(total, 1.0)
    room = free / _activation_bytes_per_token(model)
    one_pass = (np.floor(room) >= new) & (room > 1.0)
    out = np.full(cached.shape, np.inf)
    if np.any(one_pass):
        c, n = cached[one_pass], new[one_pass]
        out[one_pass] = best_latency(model, np.full(c.shape, float(gpus)), 1.0, n, c, pipeline)
    for i in zip(*np.nonzero(~one_pass & (room > 1.0))):  # rare: prompts past the activations
        S, context = chunk_plan(model, gpus, 1.0, float(new[i]), float(cached[i]), None)
        if S.size:
            N = np.full(S.shape, float(gpus))
            out[i] = float(np.sum(best_latency(model, N, np.ones_like(S), S, context, pipeline)))
    return out


def cached_prompt_tokens(prompt_tokens: float, cached_fraction: float) -> int:
    """Prompt tokens served from a prefix cache for a cached share ``q``: ⌊q·n_in⌋, but at most
    n_in - 1. A fully cached prompt still computes its last token, whose logits give the first
    output token (vLLM and SGLang recompute it on a full cache hit); docs/model.md §B8."""
    cached = min(math.floor(float(cached_fraction) * float(prompt_tokens)), prompt_tokens - 1)
    return int(max(cached, 0))


def cache_note(prompt_tokens: float, cached_fraction: float) -> str | None:
    """The line an output states when a cached share leaves only the last token to compute
    (None otherwise)."""
    if cached_fraction and math.floor(cached_fraction * prompt_tokens) > prompt_tokens - 1:
        return (
            f"cached fraction {cached_fraction:g}: {cached_prompt_tokens(prompt_tokens, cached_fraction):,} "
            f"of {prompt_tokens:,.0f} prompt tokens come from the cache; the last is computed all "
            "the same (its logits give the first output token)"
        )
    return None


def _validate(prompt_tokens, cached_tokens, batch, gpus, chunk_tokens) -> tuple:
    """The numbers of a prefill, checked against the rows of the table of settings and
    normalised (a number given as text read as its number): (prompt tokens, cached tokens,
    batch, gpus, chunk tokens)."""
    checked = []
    for name, value in (
        ("prompt_tokens", prompt_tokens),
        ("prefill_batch", batch),
        ("gpus", gpus),
    ):
        if value is None:
            raise SpecError("argument", name, "is missing", table.option(name).help)
        checked.append(table.option(name).check(value))
    prompt_tokens, batch, gpus = checked
    chunk_tokens = table.option("chunk_tokens").check(chunk_tokens)
    cached_tokens = check_number(
        cached_tokens,
        "argument",
        "cached_tokens",
        minimum=0,
        maximum=float(prompt_tokens) - 1,
        unit="tokens",
    )
    return prompt_tokens, float(cached_tokens), batch, gpus, chunk_tokens


def _run_passes(model: StepModel, setting: Setting, gpus, N, B, S, context, layout, whole: bool):
    """Every pass of a prefill at once, on ``layout`` or each on its best (whole with
    ``whole``): (the breakdown's parts summed over the passes, latency, FLOP, the layout of
    its largest pass); an infinite latency where a pass has no layout."""
    parts = dict.fromkeys((*ADDITIVE_PARTS, "memory_time_s", "compute_time_s"), 0.0)
    latency, flop, chosen = math.inf, 0.0, layout
    found = True  # a searched layout exists for every pass
    if S.size:
        if layout is None:
            if whole:  # whole GPUs: whole degrees, what an engine launches (§B7)
                lay = whole_layout(model, setting.model, int(gpus), B, S, context, setting.pipeline)
            else:
                lay = best_layout(model, N, B, S, context, setting.pipeline)
            p, adiv = np.asarray(lay.pipeline), np.asarray(lay.attention_divisor)
            two = np.asarray(lay.two_d)
            found = bool(np.all(np.isfinite(np.asarray(lay.latency_s))))
        else:
            p, adiv = np.full(S.shape, layout[0]), np.full(S.shape, layout[1])
            two = np.full(S.shape, bool(layout[2]))
        bd = model.breakdown(N, B, S, context, p, adiv, two)
        if found and np.all(np.isfinite(bd.latency_s)):
            for key in parts:
                parts[key] = float(np.sum(getattr(bd, key)))
            latency = float(np.sum(bd.latency_s))
            flop = float(np.sum(model.work.total_flop(B, S, context)))
            if chosen is None:
                chosen = (float(p[0]), float(adiv[0]), bool(two[0]))
    return parts, latency, flop, chosen


def prefill(
    setting: Setting,
    gpus: float,
    prompt_tokens: float,
    batch: float = table.default("prefill_batch", "prefill"),
    cached_tokens: float = 0.0,
    chunk_tokens: float | None = None,
    layout: tuple[float, float, bool] | None = None,
    discrete: bool = False,
) -> pd.Series:
    """One prefill of ``batch`` prompts of ``prompt_tokens`` on ``gpus`` GPUs: latency, MFU,
    the layout of its largest pass, the breakdown summed over its chunks, and the price of
    input tokens (§B8): per prompt token (``usd_per_m_input_tokens``, what a prompt's input
    costs, cached tokens included, so a prefix cache makes input cheaper) and per computed
    token (``usd_per_m_computed_input_tokens``; cached tokens are read, not computed). Every
    pass is evaluated at once (arrays over the passes).

    Without ``layout`` every pass takes its best layout with the ``batch`` prompts in flight:
    §A5's continuous one, or with ``discrete`` a whole one (§B7; whole GPUs).
    With ``layout = (pipeline degree p, attention divisor, 2-D)`` the prefill runs on that
    layout (an instance's own): the batch's prompts are one micro-batch passing the p stages,
    so p such batches are in flight (B = batch·p) and the latency is the time of one.

    Parameters
    ----------
    setting : Setting
        The problem (``make_setting``).
    gpus : float
        GPUs of the instance (whole with ``discrete``).
    prompt_tokens : float
        Tokens of each prompt.
    batch : float
        Prompts prefilled together.
    cached_tokens : float
        Tokens of each prompt read from a prefix cache instead of computed.
    chunk_tokens : float or None
        The engine's token budget per pass (None: the whole prompt in one pass).
    layout : tuple of (float, float, bool) or None
        (pipeline degree, attention divisor, 2-D tensor parallelism) to run on; None: the best.
    discrete : bool
        Whole layouts (§B7) instead of §A5's continuous degrees.

    Returns
    -------
    pandas.Series
        ``latency_s``, ``input_tokens_per_s``, ``usd_per_m_input_tokens``, ``mfu``, the layout and
        the breakdown of the prefill.

    Examples
    --------
    >>> import inference_econ as ie
    >>> s = ie.make_setting("Llama 3 70B", "H100", weight_bits=8, context_tokens=8192)
    >>> round(float(ie.prefill_pass(s, gpus=8, prompt_tokens=8192)["latency_s"]), 2)
    0.21
    """
    expect(
        setting, Setting, "setting", "a Setting", "build one with ie.make_setting(model, hardware)"
    )
    prompt_tokens, cached_tokens, batch, gpus, chunk_tokens = _validate(
        prompt_tokens, cached_tokens, batch, gpus, chunk_tokens
    )
    check_context(setting.model, float(prompt_tokens))
    whole = layout is None and discrete
    if whole:
        check_whole_gpus(gpus)
        check_whole_batch(batch)
    model = prefill_model(setting, integer_layouts=whole)
    new = float(prompt_tokens) - float(cached_tokens)
    in_flight = float(batch) * (layout[0] if layout else 1.0)
    S, context = chunk_plan(model, gpus, in_flight, new, float(cached_tokens), chunk_tokens)
    N, B = np.full(S.shape, float(gpus)), np.full(S.shape, in_flight)
    parts, latency, flop, chosen = _run_passes(
        model, setting, gpus, N, B, S, context, layout, whole
    )
    expert = prefill_expert_degree(model, gpus, in_flight, S, chosen)
    return _prefill_row(
        setting, model, prompt_tokens, cached_tokens, gpus, batch, int(S.size), in_flight,
        latency, flop, chosen, parts, expert,
    )  # fmt: skip


def prefill_expert_degree(model: StepModel, gpus, in_flight, S, chosen) -> float:
    """The expert-parallel degree of the largest pass on ``chosen`` (its first MoE layer
    group's, as a decode point states it; 1 for a dense model): §A5's rule on the tokens of a
    micro-batch, ``in_flight / p`` prompts of the pass's ``S[0]`` tokens each (§B12: at least
    one prompt, as the step is priced, ``step_batch``)."""
    moe = [g for g in model.work.groups if g.experts > 1]
    if not moe or chosen is None or not np.size(S):
        return 1.0
    p, g = float(chosen[0]), moe[0]
    tokens = float(step_batch(model.assumptions, float(in_flight), p)) / p * float(np.ravel(S)[0])
    floor = model.assumptions.expert_parallel_min_batch_per_sparsity * g.sparsity
    integer, copies = model.machine.integer_layouts, model.work.redundant_experts
    return float(expert_degree(tokens, float(gpus) / p, g.experts, floor, integer, copies))


def _prefill_row(
    setting, model, prompt_tokens, cached_tokens, gpus, batch, chunks, in_flight, latency,
    flop, chosen, parts, expert=1.0,
) -> pd.Series:  # fmt: skip
    """A prefill's row (``prefill``): its tokens, latency, input speed and prices per prompt
    and per computed token, MFU, layout (``expert``: its expert degree), summed breakdown,
    bound and energy."""
    new = float(prompt_tokens) - float(cached_tokens)
    price = setting.gpu.price_usd_per_hour
    peak = model.machine.peak_flop_per_s
    p, adiv, two = chosen or (1.0, 1.0, True)
    row = {
        "prompt_tokens": float(prompt_tokens),
        "cached_tokens": float(cached_tokens),
        "computed_tokens": new,
        "gpus": float(gpus),
        "batch": float(batch),
        "chunks": chunks,
        "latency_s": latency,
        # prompt tokens per second of the pass (not a request's output speed, tokens_per_s)
        "input_tokens_per_s": in_flight * float(prompt_tokens) / latency
        if latency > 0
        else math.inf,
        "computed_input_tokens_per_s": in_flight * new / latency if latency > 0 else math.inf,
        "usd_per_m_input_tokens": usd_per_mtok(
            gpus, latency, in_flight * float(prompt_tokens), price
        ),
        "usd_per_m_computed_input_tokens": usd_per_mtok(gpus, latency, in_flight * new, price),
        "mfu": mfu(flop, gpus, peak, latency) if math.isfinite(latency) else 0.0,
        "pipeline_degree": p,
        "tensor_degree": gpus / p,
        "attention_degree": gpus / p / adiv,
        "expert_degree": expert,
        "tp_dims": tp_dims(two, gpus / p),
        **parts,
    }
    reads = [row[k] for k in ("weight_read_s", "kv_read_s", "activation_read_s", "arithmetic_s")]
    row["bound"] = str(bound_label(*reads))
    energy = energy_columns(
        setting,
        float(gpus),
        row["input_tokens_per_s"],
        latency,
        row["compute_time_s"],
        row["memory_time_s"],
        row["collective_bandwidth_s"],
        float(
            stage_busy_share(model.assumptions, in_flight, p)
        ),  # §B12: stages idle with fewer prompts
    )
    row["joules_per_input_token"] = float(energy["joules_per_output_token"])
    row["it_power_w_per_gpu"] = float(energy["it_power_w_per_gpu"])
    import pandas as pd  # on first use: a point's output needs no pandas

    return pd.Series(row)


def prefill_intervals(row, setting: Setting, gpus, chunk_tokens=None, discrete=False) -> pd.Series:
    """A prefill's row (``prefill``'s, of the same ``gpus``, ``chunk_tokens`` and
    ``discrete``) with its figures' intervals (docs/model-part-f.md §F12): each a time to
    first token's band, no end faster than the same prompts' prefill under the ideal bound
    (the refined preset, its best layout on those GPUs) nor past the peak (MFU 1)."""
    from .intervals import (
        PREFILL_COMPOSED,
        PREFILL_FIGURES,
        bound_floors,
        expected,
        ideal,
        series_intervals,
    )

    floors = None
    if expected(setting):
        fastest = prefill(
            ideal(setting), gpus, float(row["prompt_tokens"]), batch=float(row["batch"]),
            cached_tokens=float(row["cached_tokens"]), chunk_tokens=chunk_tokens,
            discrete=discrete,
        )  # fmt: skip
        floors = bound_floors([fastest["latency_s"]], [row["latency_s"]])
    return series_intervals(
        row, setting, gpus, row["bound"], PREFILL_FIGURES, PREFILL_COMPOSED,
        floors=floors, floor_kind="TTFT",
    )  # fmt: skip
