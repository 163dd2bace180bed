"""The request view: time to first token, end-to-end latency and the prices of input and
output tokens at one configuration (docs/model.md §B8)."""

from __future__ import annotations

import math

import pandas as pd

from .. import settings as table
from ..errors import SpecError
from .decode import decode_step
from .prefill import prefill
from .setting import Setting


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
    table.check_each(
        {
            "gpus": gpus,
            "batch": batch,
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "prefill_batch": prefill_batch,
            "cached_fraction": cached_fraction,
        }
    )
    if prompt_tokens is None:
        raise SpecError("argument", "prompt_tokens", "is missing", "give the prompt length")
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
            "output_to_input_price_ratio": out_cost / in_cost
            if 0 < in_cost < math.inf and math.isfinite(out_cost)
            else math.inf,
            "usd_per_request": (in_cost * prompt_tokens + out_cost * output_tokens) / 1e6,
            "prefill_mfu": pre.mfu,
            "decode_mfu": dec.mfu,
            "prefill_bound": pre.bound,
            "decode_bound": dec.bound,
        }
    )
