"""Prefill, time to first token and the price of input tokens (MODEL.md Part B; seeds 000, 002).

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

from .errors import SpecError
from .latency import ADDITIVE_PARTS, StepModel, prefill_step_model
from .optimiser import Problem, Setting, make_setting
from .schema import check_number
from .search import best_latency
from .workload import compile_workload


def prefill_model(setting: Setting) -> StepModel:
    """The step model of a prefill pass for a setting (see ``latency.prefill_step_model``)."""
    return prefill_step_model(
        lambda a: compile_workload(setting.model, setting.model.precision, a),
        setting.gpu,
        setting.assumptions,
        setting.discrete,
    )


def _activation_bytes_per_token(model: StepModel) -> float:
    """Working set of one token in flight: the residual stream and the widest feed-forward
    activation, in and out (an estimate used only to decide chunking)."""
    w = model.work
    widest = max(g.d_ff for g in w.groups)
    return (4.0 * w.d_model + 2.0 * widest) * w.activation_bytes


def chunk_plan(
    model: StepModel,
    gpus: float,
    batch: float,
    new_tokens: float,
    cached_tokens: float,
    chunk_tokens: float | None,
):
    """[(tokens in the pass, context before it)] for a prompt, one pass when it fits."""
    w = model.work
    if chunk_tokens is None:
        free = (
            gpus * model.machine.usable_hbm_bytes
            - model.weights_bytes
            - w.kv_cache_bytes(cached_tokens + new_tokens, batch)
        )
        per_token = _activation_bytes_per_token(model) * batch
        if free <= per_token:
            return []
        chunk_tokens = max(1.0, math.floor(free / per_token))
    chunk = min(float(chunk_tokens), new_tokens)
    plan, done = [], 0.0
    while done < new_tokens - 1e-9:
        size = min(chunk, new_tokens - done)
        plan.append((size, cached_tokens + done))
        done += size
    return plan


def _validate(prompt_tokens, cached_tokens, batch, gpus):
    check_number(prompt_tokens, "argument", "prompt_tokens", minimum=1, unit="tokens")
    check_number(cached_tokens, "argument", "cached_tokens", minimum=0, unit="tokens")
    if cached_tokens >= prompt_tokens:
        raise SpecError(
            "argument",
            "cached_tokens",
            f"{cached_tokens:g} >= prompt_tokens {prompt_tokens:g}",
            "at least one prompt token must be computed",
        )
    check_number(batch, "argument", "batch", minimum=0, exclusive_minimum=True)
    check_number(gpus, "argument", "gpus", minimum=0, exclusive_minimum=True)


def prefill(
    setting: Setting,
    gpus: float,
    prompt_tokens: float,
    batch: float = 1.0,
    cached_tokens: float = 0.0,
    chunk_tokens: float | None = None,
) -> pd.Series:
    """One prefill of ``batch`` prompts of ``prompt_tokens`` on ``gpus`` GPUs: latency, MFU,
    the layout of its largest pass, the breakdown summed over its chunks, and its cost."""
    _validate(prompt_tokens, cached_tokens, batch, gpus)
    model = prefill_model(setting)
    new = float(prompt_tokens) - float(cached_tokens)
    plan = chunk_plan(model, gpus, batch, new, float(cached_tokens), chunk_tokens)
    N, B = np.array([float(gpus)]), np.array([float(batch)])
    parts = dict.fromkeys((*ADDITIVE_PARTS, "memory_time_s", "compute_time_s"), 0.0)
    latency, flop, layout = 0.0, 0.0, None
    for S, context in plan:
        lat, p, a, two = best_latency(model, N, B, S, context, setting.pipeline, return_layout=True)
        if not np.isfinite(lat[0]):
            latency = math.inf
            break
        bd = model.breakdown(N, B, S, context, p, a, bool(two[0])).as_dict()
        for key in parts:
            parts[key] += float(bd[key][0])
        latency += float(lat[0])
        flop += float(model.work.total_flop(B[0], S, context))
        if layout is None:
            layout = (float(p[0]), float(a[0]), bool(two[0]))
    if not plan:
        latency = math.inf
    price = setting.gpu.price_usd_per_hour
    peak = model.machine.peak_flop_per_s
    p, a, two = layout or (1.0, 1.0, True)
    row = {
        "prompt_tokens": float(prompt_tokens),
        "cached_tokens": float(cached_tokens),
        "gpus": float(gpus),
        "batch": float(batch),
        "chunks": len(plan),
        "latency_s": latency,
        "tokens_per_s": float(batch) * new / latency if latency > 0 else math.inf,
        "usd_per_m_input_tokens": 1e6
        * gpus
        * latency
        / (batch * float(prompt_tokens))
        * price
        / 3600.0,
        "mfu": flop / (gpus * peak * latency) if math.isfinite(latency) else 0.0,
        "pipeline_degree": p,
        "tensor_degree": gpus / p,
        "attention_degree": gpus / p / a,
        "tp_dims": "2D" if two else "1D",
        **parts,
    }
    row["bound"] = "memory" if row["memory_time_s"] >= row["compute_time_s"] else "compute"
    return pd.Series(row)


def decode_step(setting: Setting, gpus: float, batch: float, context_tokens: float) -> pd.Series:
    """One decode step at a context length: the best layout, its latency and breakdown."""
    problem = Problem(setting.replace(context_tokens=float(context_tokens)))
    return problem.describe(np.array([float(gpus)]), np.array([float(batch)])).iloc[0]


def request(
    setting: Setting,
    gpus: float,
    batch: float,
    prompt_tokens: float,
    output_tokens: float,
    prefill_batch: float | None = None,
    cached_fraction: float = 0.0,
) -> pd.Series:
    """The request view at one configuration: time to first token, end-to-end latency, and
    what input and output tokens cost (and their ratio).

    The batch's prompts are prefilled together (``prefill_batch``, default the batch); decode
    runs at the mean context of the response, n_in + n_out/2.
    """
    check_number(output_tokens, "argument", "output_tokens", minimum=1, unit="tokens")
    check_number(cached_fraction, "argument", "cached_fraction", minimum=0, maximum=1)
    pb = float(prefill_batch or batch)
    cached = math.floor(cached_fraction * prompt_tokens)
    cached = min(cached, prompt_tokens - 1)
    pre = prefill(setting, gpus, prompt_tokens, batch=pb, cached_tokens=cached)
    dec = decode_step(setting, gpus, batch, float(prompt_tokens) + float(output_tokens) / 2.0)
    first = decode_step(setting, gpus, batch, float(prompt_tokens))
    ttft = pre.latency_s + first.latency_s
    out_cost = dec.usd_per_mtok
    in_cost = pre.usd_per_m_input_tokens
    return pd.Series(
        {
            "prompt_tokens": float(prompt_tokens),
            "output_tokens": float(output_tokens),
            "cached_fraction": float(cached_fraction),
            "gpus": float(gpus),
            "batch": float(batch),
            "prefill_batch": pb,
            "ttft_s": ttft,
            "prefill_s": pre.latency_s,
            "decode_latency_s": dec.latency_s,
            "e2e_latency_s": ttft + (float(output_tokens) - 1.0) * dec.latency_s,
            "usd_per_m_input_tokens": in_cost,
            "usd_per_m_output_tokens": out_cost,
            "output_to_input_price_ratio": out_cost / in_cost if in_cost > 0 else math.inf,
            "usd_per_request": (in_cost * prompt_tokens + out_cost * output_tokens) / 1e6,
            "prefill_mfu": pre.mfu,
            "decode_mfu": dec.mfu,
            "prefill_bound": pre.bound,
            "decode_bound": dec.bound,
        }
    )


def price_ratio(
    model,
    hardware,
    context_tokens: float,
    prompt_tokens: float | None = None,
    output_tokens: float = 512,
    min_prefill_tokens: float = 8192,
    **kwargs,
) -> pd.Series:
    """Output/input price ratio at the decode frontier's preference point (paper §4.3).

    Decode runs at ``context_tokens``; the prompt (default: the context, at least 1000 tokens)
    is prefilled on the same GPUs, batching prompts until a pass holds ``min_prefill_tokens``
    tokens so the prefill is efficient.
    """
    from .optimiser import frontier

    setting = make_setting(model, hardware, context_tokens=context_tokens, **kwargs)
    point = frontier(setting).preference_point()
    prompt = float(prompt_tokens or max(context_tokens, 1000.0))
    pb = max(1.0, math.ceil(min_prefill_tokens / prompt))
    pre = prefill(setting, point.gpus, prompt, batch=pb)
    return pd.Series(
        {
            "model": setting.model.name,
            "hardware": setting.gpu.name,
            "context_tokens": float(context_tokens),
            "attention": setting.model.attention.kind,
            "gpus": point.gpus,
            "decode_batch": point.batch,
            "decode_tokens_per_s": point.tokens_per_s,
            "decode_mfu": point.mfu,
            "usd_per_m_output_tokens": point.usd_per_mtok,
            "prefill_batch": pb,
            "prefill_mfu": pre.mfu,
            "usd_per_m_input_tokens": pre.usd_per_m_input_tokens,
            "output_to_input_price_ratio": point.usd_per_mtok / pre.usd_per_m_input_tokens,
        }
    )
