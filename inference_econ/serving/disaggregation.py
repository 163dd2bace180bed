"""Disaggregated serving: prefill and decode on separate pools (docs/model.md §B10; "Prefill-Decode
Disaggregation"), against serving both on the same instance.

For requests of ``n_in`` prompt and ``n_out`` output tokens:

* **co-located**: one instance (N GPUs, batch B) prefills each arriving prompt between decode
  steps, on its own layout and in the engine's chunks. Per request it spends the prefill plus
  1/B of its n_out decode steps; the decode steps of everyone stall for the prefills of the
  B / n_out requests that arrive per step.
* **disaggregated**: a prefill pool (N_p GPUs, prompts batched to at least ``min_prefill_tokens``
  tokens) hands the KV cache to a decode pool (N_d GPUs, batch B) over the scale-out network;
  decode steps are never interrupted, TTFT adds the KV transfer. GPU-seconds and dollars per
  request charge each pool for its busy time only (perfect utilisation); the pools' busy
  fractions at the rate the pair serves, and the cost when their idle time is charged too (the
  all-in price: every all-in price charges idle time), are reported beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .. import settings as table
from ..columns import RATIO
from ..errors import SpecError, plural
from ..model.economics import usd_per_mtok
from ..model.latency import prefill_step_model
from ..model.mixed_step import EngineLayout, mixed_step_s
from ..model.values import Floats
from ..model.workload import compile_workload
from ..specs.engine import IDEAL_STEP_TOKEN_BUDGET
from ..specs.schema import check_number
from .derived_intervals import nested_ends, within_ideal
from .intervals import (
    FIGURES,
    LEVELS,
    add_intervals,
    expected,
    figure_limits,
    ideal,
    interval_columns,
)
from .prefill import engine_chunks, prefill
from .requests import check_request_context, instance_layout
from .setting import Setting, whole_batch_kv_note
from .support import DEGREES, row_layouts


def kv_transfer_s(
    setting: Setting, prompt_tokens: Floats, gpus: float, latency_s: float = 20e-6
) -> Floats:
    """Seconds to move one request's KV cache between pools: each of ``gpus`` GPUs sends its
    shard over its own NIC (per request, for an array of prompt lengths)."""
    work = compile_workload(setting.model, setting.assumptions)
    nbytes = work.kv_cache_bytes(prompt_tokens, 1.0)
    return latency_s + nbytes / (max(gpus, 1.0) * setting.gpu.nic_bandwidth_bytes_per_s)


def compare(
    setting: Setting,
    prompt_tokens: float,
    output_tokens: float,
    decode_gpus: float,
    decode_batch: float,
    prefill_gpus: float | None = None,
    min_prefill_tokens: float = 16384,
    discrete: bool = False,
) -> pd.DataFrame:
    """Co-located against disaggregated serving of one request mix at a decode configuration:
    the decode instance at §A5's continuous layout, or with ``discrete`` a whole one (§B7), and
    so the prefill pool's passes. ``attrs["decode_layout"]`` is the decode instance's row."""
    checked = table.check_each(  # normalised: a number given as text read as its number
        {
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "gpus": decode_gpus,
            "batch": decode_batch,
            "prefill_gpus": prefill_gpus,
        }
    )
    prompt_tokens, output_tokens = checked["prompt_tokens"], checked["output_tokens"]
    decode_gpus, decode_batch = checked["gpus"], checked["batch"]
    prefill_gpus = checked["prefill_gpus"]
    if prompt_tokens is None:
        raise SpecError("argument", "prompt_tokens", "is missing", "give the prompt length")
    min_prefill_tokens = check_number(
        min_prefill_tokens, "argument", "min_prefill_tokens", minimum=1, maximum=1e9
    )  # text that reads as a number is read as it
    check_request_context(setting, float(prompt_tokens), float(output_tokens))
    row, layout, _, decoder, _, bound_s = instance_layout(
        setting, decode_gpus, decode_batch, prompt_tokens + output_tokens / 2.0, discrete, True
    )
    step = row.latency_s
    on_layout = (
        float(layout.pipeline[0]),
        float(layout.attention_divisor[0]),
        bool(layout.two_d[0]),
    )
    mix = (prompt_tokens, output_tokens, decode_gpus, decode_batch)
    colocated = _colocated(setting, mix, decoder, on_layout, step)
    # disaggregated: prompts batched on a prefill pool, KV shipped to the decode pool
    n_p = float(prefill_gpus or decode_gpus)
    batch_p = max(1.0, math.ceil(min_prefill_tokens / prompt_tokens))
    pooled = prefill(setting, n_p, prompt_tokens, batch=batch_p, discrete=discrete)
    disaggregated, pools, dis_gpu_s = _disaggregated(
        setting, mix, decoder, on_layout, step, n_p, batch_p, pooled
    )
    # expected figures' intervals (§F12), in the decode instance's class (co-located, then
    # disaggregated): TTFT for the time to first token, the step's band for the decode step
    # and speed, no end past the ideal step; throughput's for the pools' GPU time and prices,
    # and the co-located instance's the step's (they are its step's time, scaled)
    df = add_intervals(
        pd.DataFrame([colocated, disaggregated]),
        setting,
        bound=row["bound"],
        gpus=float(decode_gpus),
        layout=[row_layouts(row, 1, setting)[0], "disaggregated"],
        bound_time=[_colocated_bound(setting, mix, decoder, on_layout, bound_s), bound_s],
        time_column="decode_latency_s",
    )
    _scaled_with_step(df, COLOCATED_STEP_FIGURES)
    _with_layouts(df, row, pooled)
    if expected(setting):  # no end faster than the same rows under the ideal bound
        at_ideal = compare(
            ideal(setting), prompt_tokens, output_tokens, decode_gpus, decode_batch,
            prefill_gpus, min_prefill_tokens, discrete,
        )  # fmt: skip
        for i in (0, 1):
            for column, value in within_ideal(df.loc[i], at_ideal.loc[i], FIGURES).items():
                df.loc[i, column] = value
    prefill_s, decode_s = pooled.latency_s / batch_p, output_tokens * step / decode_batch
    for name, ends in busy_intervals(setting, row["bound"], decode_gpus, prefill_s, decode_s):
        df.loc[1, name] = ends
    df.attrs["note"], df.attrs["notes"] = _compare_notes(
        setting, mix, n_p, batch_p, pools, dis_gpu_s
    )
    df.attrs["decode_layout"] = row
    return df


def _with_layouts(df: pd.DataFrame, decode: pd.Series, pooled: pd.Series) -> None:
    """``df`` with the layouts its figures were priced on, after ``gpus``: the decode
    instance's degrees in both rows (co-located, its prompts ride in its steps on that layout;
    disaggregated, the decode pool's) and the prefill pool's in the disaggregated row (blank
    in the co-located one, which has none)."""
    at = list(df.columns).index("gpus") + 1
    for i, name in enumerate(DEGREES):
        df.insert(at + i, name, float(decode[name]))
    for i, name in enumerate(DEGREES):
        df.insert(at + len(DEGREES) + i, f"prefill_{name}", [math.nan, float(pooled[name])])


#: The co-located row's figures proportional to its step (its GPU time and prices per request).
COLOCATED_STEP_FIGURES = (
    "gpu_s_per_request",
    "usd_per_request",
    "usd_per_m_output_tokens_all_in",
    "gpu_s_per_request_idle_charged",
    "usd_per_request_idle_charged",
)


def _colocated_bound(setting: Setting, mix: tuple, decoder, on_layout: tuple, bound_s: float):
    """The co-located step under the ideal bound on the same layout (its decode step
    ``bound_s`` and the prompts' chunks riding in it); NaN for a bound."""
    if not math.isfinite(bound_s):
        return math.nan
    return _colocated(ideal(setting), mix, decoder.bound_decoder(), on_layout, bound_s)[
        "decode_latency_s"
    ]


def _scaled_with_step(df: pd.DataFrame, names) -> None:
    """Give the co-located row's (the first) figures ``names`` the interval of its decode
    step, scaled: each is its step's time times a constant."""
    step = float(df.loc[0, "decode_latency_s"])
    have = interval_columns("decode_latency_s")
    if not step > 0 or not all(c in df for c in have):
        return
    for name in names:
        if name not in df:
            continue
        for theirs, mine in zip(have, interval_columns(name)):
            df.loc[0, mine] = float(df.loc[0, name]) * float(df.loc[0, theirs]) / step


def _colocated(setting: Setting, mix: tuple, decoder, on_layout: tuple, step: float) -> dict:
    """The co-located row of ``compare`` for ``mix`` (prompt and output tokens, decode GPUs
    and batch): the load engine's step (§E1, as ``simulate`` runs it), each arriving prompt
    riding in the decode steps in chunks of the step's token budget, sharing their reads."""
    prompt_tokens, output_tokens, decode_gpus, decode_batch = mix
    price, price_s = setting.gpu.price_usd_per_hour, setting.gpu.price_usd_per_s
    prompt = colocated_prompt(
        setting, decoder.target, on_layout, decode_gpus, decode_batch, prompt_tokens, output_tokens
    )
    stall = decode_batch / output_tokens * prompt.added_s
    co_step = step + stall  # prompts per decode step x the time their chunks add to it
    # the stall already charges every step for the prompts that arrive during it (B / n_out
    # per step): over a request's n_out steps that is its own prefill, so it is not added again
    co_gpu_s = decode_gpus * output_tokens * co_step / decode_batch
    return {
        "serving": "co-located",
        "gpus": float(decode_gpus),
        "ttft_s": prompt.ttft_s,
        "decode_latency_s": co_step,
        "tokens_per_s": 1.0 / co_step,
        "gpu_s_per_request": co_gpu_s,
        "usd_per_request": co_gpu_s * price_s,
        "usd_per_m_output_tokens_all_in": usd_per_mtok(co_gpu_s, 1.0, output_tokens, price),
        RATIO: prompt_tokens / output_tokens,  # the all-in price's blend (docs/glossary.md)
        "kv_transfer_s": 0.0,
        "prefill_pool_busy_fraction": math.nan,
        "decode_pool_busy_fraction": math.nan,
        "gpu_s_per_request_idle_charged": co_gpu_s,  # one instance, never idle
        "usd_per_request_idle_charged": co_gpu_s * price_s,
    }


def _disaggregated(
    setting: Setting, mix: tuple, decoder, on_layout: tuple, step: float, n_p, batch_p, pooled
):
    """The disaggregated row of ``compare`` (prompts prefilled ``batch_p`` at a time on a pool
    of ``n_p`` GPUs, ``pooled``, their KV shipped to the decode pool), the pools' balance and
    the GPU-seconds a request keeps them busy."""
    prompt_tokens, output_tokens, decode_gpus, decode_batch = mix
    price, price_s = setting.gpu.price_usd_per_hour, setting.gpu.price_usd_per_s
    transfer = kv_transfer_s(setting, prompt_tokens, min(n_p, decode_gpus))
    N, B = np.array([float(decode_gpus)]), np.array([float(decode_batch)])
    first = decoder.target.breakdown(
        N, B, 1, float(prompt_tokens), *(np.array([x]) for x in on_layout)
    )
    first_step = float(first.latency_s[0])
    dis_gpu_s = n_p * pooled.latency_s / batch_p + decode_gpus * output_tokens * step / decode_batch
    pools = pool_balance(
        n_p, pooled.latency_s / batch_p, decode_gpus, output_tokens * step / decode_batch
    )
    row = {
        "serving": "disaggregated",
        "gpus": float(decode_gpus + n_p),
        "ttft_s": pooled.latency_s + transfer + first_step,
        "decode_latency_s": step,
        "tokens_per_s": 1.0 / step,
        "gpu_s_per_request": dis_gpu_s,
        "usd_per_request": dis_gpu_s * price_s,
        # all-in: every GPU-second of both pools, idle ones too (docs/glossary.md)
        "usd_per_m_output_tokens_all_in": usd_per_mtok(
            pools.gpu_s_per_request, 1.0, output_tokens, price
        ),
        RATIO: prompt_tokens / output_tokens,
        "kv_transfer_s": transfer,
        "prefill_pool_busy_fraction": pools.prefill_busy_fraction,
        "decode_pool_busy_fraction": pools.decode_busy_fraction,
        "gpu_s_per_request_idle_charged": pools.gpu_s_per_request,
        "usd_per_request_idle_charged": pools.gpu_s_per_request * price_s,
    }
    return row, pools, dis_gpu_s


def _compare_notes(setting: Setting, mix: tuple, n_p, batch_p, pools, dis_gpu_s):
    """``compare``'s note (the mix and the two instances) and notes: what the disaggregated
    prices charge, the pools' balance, and the decode instance's KV at the whole batch."""
    prompt_tokens, output_tokens, decode_gpus, decode_batch = mix
    price, price_s = setting.gpu.price_usd_per_hour, setting.gpu.price_usd_per_s
    note = (
        f"{setting.model.name} on {setting.gpu.name}: {prompt_tokens:g} prompt + {output_tokens:g} output tokens; "
        f"decode on {decode_gpus:g} {plural(decode_gpus, 'GPU')} at batch {decode_batch:g}; prefill pool "
        f"{n_p:g} {plural(n_p, 'GPU')}, {batch_p:g} {plural(batch_p, 'prompt')} per pass"
    )
    idle_usd = pools.gpu_s_per_request * price_s
    notes = (
        "Disaggregated: gpu_s_per_request and usd_per_request charge each pool for its busy "
        "time only (perfect utilisation: an idle pool's GPUs do other work); the all-in price, "
        "as every all-in price, charges all their time, idle too (docs/glossary.md).",
        f"The pools serve {pools.rate_per_s:.4g} req/s (the {pools.bottleneck} pool's rate); at it "
        f"the {n_p:g}-GPU prefill pool is busy {pools.prefill_busy_fraction:.0%} and the "
        f"{decode_gpus:g}-GPU decode pool {pools.decode_busy_fraction:.0%} of the time. Charging "
        f"idle time too: {pools.gpu_s_per_request:.3g} GPU-s, ${idle_usd:.3g} per request, "
        f"${usd_per_mtok(pools.gpu_s_per_request, 1.0, output_tokens, price):.3g} per million "
        f"output tokens (the all-in price); busy time alone "
        f"${usd_per_mtok(dis_gpu_s, 1.0, output_tokens, price):.3g} (docs/model.md §B10).",
    )
    # both pools' decode instance: the whole batch at the decode step's mean context (§B10)
    kv = whole_batch_kv_note(
        setting, decode_gpus, decode_batch, prompt_tokens + output_tokens / 2.0
    )
    return note, notes + ((kv,) if kv else ())


@dataclass(frozen=True)
class ColocatedPrompt:
    """The engine steps that carry one prompt's chunks beside a decode batch (seconds each),
    and that batch's decode-only step."""

    steps_s: np.ndarray
    decode_s: float

    @property
    def ttft_s(self) -> float:
        """From its first chunk to its first token: the step of the last chunk emits it."""
        return float(np.sum(self.steps_s))

    @property
    def added_s(self) -> float:
        """What its chunks add to the decode steps they ride in (NaN where the steps cannot
        run: inf less inf, refused by the callers)."""
        with np.errstate(invalid="ignore"):
            return float(np.sum(self.steps_s - self.decode_s))


def colocated_prompt(
    setting: Setting, model, on_layout, gpus, batch, prompt_tokens, output_tokens
) -> ColocatedPrompt:
    """The steps of the load engine (docs/model.md §E1, `simulate`'s) that prefill one prompt
    beside ``batch`` decoding requests on the decode layout ``on_layout`` (p, divisor, 2-D):
    the prompt is cut into chunks of what the step's token budget leaves beside the decodes
    (``IDEAL_STEP_TOKEN_BUDGET``), each a mixed step at the context already
    prefilled."""
    p, adiv, two = on_layout
    layout = EngineLayout(gpus, p, adiv, two)
    pre = prefill_step_model(setting.model, setting.gpu, setting.assumptions).work
    room = max(IDEAL_STEP_TOKEN_BUDGET - batch, 1.0)
    sizes = [size for size, _ in engine_chunks(float(prompt_tokens), room)]
    done = np.concatenate([[0.0], np.cumsum(sizes)[:-1]])
    context = float(prompt_tokens) + float(output_tokens) / 2.0
    steps = mixed_step_s(model, pre, layout, batch, context, np.asarray(sizes), done)
    decode = float(mixed_step_s(model, pre, layout, batch, context, 0.0))
    return ColocatedPrompt(np.asarray(steps, dtype=float), decode)


@dataclass(frozen=True)
class PoolBalance:
    """Two pools in series at the rate the slower one sets: each one's busy fraction, and the
    GPU-seconds per request when both are paid for all the time (docs/model.md §B10)."""

    rate_per_s: float
    bottleneck: Literal["prefill", "decode"]  # the pool that sets the rate
    prefill_busy_fraction: float
    decode_busy_fraction: float
    gpu_s_per_request: float


def busy_intervals(setting: Setting, bound: str, gpus: float, prefill_s: float, decode_s: float):
    """(column, value) pairs of the interval ends of the pools' busy fractions under an engine
    profile (docs/model.md §F12; none for an ideal bound): the prefill pool's time per request
    at the ends of a prompt's band (TTFT) and the decode pool's at those of its step's band,
    each fraction at the opposite ends (the errors of the two kinds are not assumed paired)
    and the value itself between them."""
    if not expected(setting):
        return []
    where = (["disaggregated"], None)  # the pools' class (``support``)
    ends_p = figure_limits("ttft_s", [prefill_s], setting, [gpus], [bound], where=where)
    ends_d = figure_limits("decode_latency_s", [decode_s], setting, [gpus], [bound], where=where)
    runs = [  # low80 high80 low90 high90: the prefill at that end, the decode at the other
        pool_balance(
            1.0, float(ends_p[f"{end}{level}"][0]), 1.0, float(ends_d[f"{other}{level}"][0])
        )
        for level in LEVELS
        for end, other in (("low", "high"), ("high", "low"))
    ]
    nominal = pool_balance(1.0, prefill_s, 1.0, decode_s)
    out = []
    for pool in ("prefill", "decode"):
        field = f"{pool}_busy_fraction"
        ends = nested_ends([getattr(b, field) for b in runs], getattr(nominal, field))
        out += list(zip(interval_columns(f"{pool}_pool_busy_fraction"), ends))
    return out


def pool_balance(
    prefill_gpus: float, prefill_s: float, decode_gpus: float, decode_s: float
) -> PoolBalance:
    """Pools whose busy time per request is ``prefill_s`` (one pass over a prompt batch, per
    prompt) and ``decode_s`` (a request's share of its decode steps): each completes requests
    at 1/busy time; the pair serves the slower rate."""
    slower = max(prefill_s, decode_s)  # seconds per request of the pair
    # a pool that cannot run (inf) makes the fractions NaN: its callers refuse such a pair,
    # so numpy's warning about it is noise on the one line they print
    with np.errstate(invalid="ignore", divide="ignore"):
        return PoolBalance(
            rate_per_s=1.0 / slower,
            bottleneck="decode" if decode_s >= prefill_s else "prefill",
            prefill_busy_fraction=prefill_s / slower,
            decode_busy_fraction=decode_s / slower,
            gpu_s_per_request=(prefill_gpus + decode_gpus) * slower,
        )
