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

import numpy as np
import pandas as pd

from .. import settings as table
from ..errors import SpecError
from ..model.economics import mfu, usd_per_mtok
from ..model.latency import ADDITIVE_PARTS, StepModel, prefill_step_model
from ..model.layouts import best_latency, best_layout
from ..specs.schema import check_number
from .setting import Setting


def prefill_model(setting: Setting, integer_layouts: bool = False) -> StepModel:
    """The step model of a prefill pass for a setting (see ``latency.prefill_step_model``)."""
    return prefill_step_model(setting.model, setting.gpu, setting.assumptions, integer_layouts)


def prefill_latency_s(setting: Setting, n_values, integer_layouts: bool = False):
    """Prefill of one prompt of ``setting.prompt_tokens`` on each GPU count (inf where it does
    not fit; 0 without a prompt length), for the time to first token."""
    if setting.prompt_tokens is None:
        return np.zeros(np.shape(n_values))
    model = prefill_model(setting, integer_layouts)
    n = np.asarray(n_values, dtype=float)
    return best_latency(model, n, np.ones_like(n), setting.prompt_tokens, 0.0, setting.pipeline)


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
        free = (
            gpus * model.machine.usable_hbm_bytes
            - model.weights_total_bytes
            - w.kv_cache_bytes(cached_tokens + new_tokens, batch)
        )
        per_token = _activation_bytes_per_token(model) * batch
        if not free > per_token:
            return empty
        chunk = math.floor(min(free / per_token, new_tokens))
        if new_tokens / chunk > MAX_CHUNKS:
            return empty
    else:
        chunk = min(float(chunk_tokens), new_tokens)
        if new_tokens / chunk > MAX_CHUNKS:
            raise SpecError(
                "argument",
                "chunk_tokens",
                f"{new_tokens:g} tokens in chunks of {chunk:g} would take "
                f"{math.ceil(new_tokens / chunk)} passes",
                f"use chunks of at least {math.ceil(new_tokens / MAX_CHUNKS)} tokens",
            )
    count = math.ceil(new_tokens / chunk - 1e-9)
    starts = np.arange(count) * float(chunk)
    sizes = np.minimum(float(chunk), new_tokens - starts)
    return sizes, cached_tokens + starts


def _validate(prompt_tokens, cached_tokens, batch, gpus, chunk_tokens):
    """The numbers of a prefill, checked against the rows of the table of settings."""
    for name, value in (
        ("prompt_tokens", prompt_tokens),
        ("prefill_batch", batch),
        ("gpus", gpus),
    ):
        if value is None:
            raise SpecError("argument", name, "is missing", table.option(name).help)
        table.option(name).check(value)
    table.option("chunk_tokens").check(chunk_tokens)
    check_number(
        cached_tokens,
        "argument",
        "cached_tokens",
        minimum=0,
        maximum=float(prompt_tokens) - 1,
        unit="tokens",
    )


def prefill(
    setting: Setting,
    gpus: float,
    prompt_tokens: float,
    batch: float = 1.0,
    cached_tokens: float = 0.0,
    chunk_tokens: float | None = None,
) -> pd.Series:
    """One prefill of ``batch`` prompts of ``prompt_tokens`` on ``gpus`` GPUs: latency, MFU,
    the layout of its largest pass, the breakdown summed over its chunks, and its cost.
    Every pass is evaluated at once (arrays over the passes)."""
    _validate(prompt_tokens, cached_tokens, batch, gpus, chunk_tokens)
    model = prefill_model(setting)
    new = float(prompt_tokens) - float(cached_tokens)
    S, context = chunk_plan(model, gpus, batch, new, float(cached_tokens), chunk_tokens)
    N, B = np.full(S.shape, float(gpus)), np.full(S.shape, float(batch))
    parts = dict.fromkeys((*ADDITIVE_PARTS, "memory_time_s", "compute_time_s"), 0.0)
    latency, flop, layout = math.inf, 0.0, None
    if S.size:
        lay = best_layout(model, N, B, S, context, setting.pipeline)
        if np.all(np.isfinite(lay.latency_s)):
            bd = model.breakdown(N, B, S, context, lay.pipeline, lay.attention_divisor, lay.two_d)
            for key in parts:
                parts[key] = float(np.sum(getattr(bd, key)))
            latency = float(np.sum(lay.latency_s))
            flop = float(np.sum(model.work.total_flop(B, S, context)))
            layout = (float(lay.pipeline[0]), float(lay.attention_divisor[0]), bool(lay.two_d[0]))
    price = setting.gpu.price_usd_per_hour
    peak = model.machine.peak_flop_per_s
    p, adiv, two = layout or (1.0, 1.0, True)
    row = {
        "prompt_tokens": float(prompt_tokens),
        "cached_tokens": float(cached_tokens),
        "gpus": float(gpus),
        "batch": float(batch),
        "chunks": int(S.size),
        "latency_s": latency,
        "tokens_per_s": float(batch) * new / latency if latency > 0 else math.inf,
        "usd_per_m_input_tokens": usd_per_mtok(gpus, latency, batch * float(prompt_tokens), price),
        "mfu": mfu(flop, gpus, peak, latency) if math.isfinite(latency) else 0.0,
        "pipeline_degree": p,
        "tensor_degree": gpus / p,
        "attention_degree": gpus / p / adiv,
        "tp_dims": "2D" if two else "1D",
        **parts,
    }
    row["bound"] = "memory" if row["memory_time_s"] >= row["compute_time_s"] else "compute"
    return pd.Series(row)
