"""Disaggregated serving: prefill and decode on separate pools (docs/model.md §B10; "Prefill-Decode
Disaggregation"), against serving both on the same instance.

For requests of ``n_in`` prompt and ``n_out`` output tokens:

* **co-located**: one instance (N GPUs, batch B) prefills each arriving prompt between decode
  steps, on its own layout and in the engine's chunks. Per request it spends the prefill plus
  1/B of its n_out decode steps; the decode steps of everyone stall for the prefills of the
  B / n_out requests that arrive per step.
* **disaggregated**: a prefill pool (N_p GPUs, prompts batched to at least ``min_prefill_tokens``
  tokens) hands the KV cache to a decode pool (N_d GPUs, batch B) over the scale-out network;
  decode steps are never interrupted, TTFT adds the KV transfer.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import settings as table
from ..errors import SpecError
from ..model.workload import compile_workload
from ..specs.schema import check_number
from .prefill import ENGINE_CHUNK_TOKENS, prefill
from .requests import check_request_context, instance_layout
from .setting import Setting


def kv_transfer_s(
    setting: Setting, prompt_tokens: float, gpus: float, latency_s: float = 20e-6
) -> float:
    """Seconds to move one request's KV cache between pools: each of ``gpus`` GPUs sends its
    shard over its own NIC."""
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
) -> pd.DataFrame:
    """Co-located against disaggregated serving of one request mix at a decode configuration."""
    table.check_each(
        {
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "gpus": decode_gpus,
            "batch": decode_batch,
            "prefill_gpus": prefill_gpus,
        }
    )
    if prompt_tokens is None:
        raise SpecError("argument", "prompt_tokens", "is missing", "give the prompt length")
    check_number(min_prefill_tokens, "argument", "min_prefill_tokens", minimum=1, maximum=1e9)
    check_request_context(setting, float(prompt_tokens), float(output_tokens))
    price_s = setting.gpu.price_usd_per_s
    row, layout, _, decoder, _ = instance_layout(
        setting, decode_gpus, decode_batch, prompt_tokens + output_tokens / 2.0
    )
    step = row.latency_s
    on_layout = (
        float(layout.pipeline[0]),
        float(layout.attention_divisor[0]),
        bool(layout.two_d[0]),
    )
    N, B = np.array([float(decode_gpus)]), np.array([float(decode_batch)])
    first = decoder.target.breakdown(
        N, B, 1, float(prompt_tokens), *(np.array([x]) for x in on_layout)
    )
    first_step = float(first.latency_s[0])

    # co-located: each arriving prompt is prefilled alone on the decode instance's layout
    solo = prefill(
        setting,
        decode_gpus,
        prompt_tokens,
        batch=1,
        chunk_tokens=ENGINE_CHUNK_TOKENS,
        layout=on_layout,
    )
    stall = decode_batch / output_tokens * solo.latency_s  # prefills per decode step x their time
    co_step = step + stall
    # the stall already charges every step for the prefills that arrive during it (B / n_out
    # per step): over a request's n_out steps that is its own prefill, so it is not added again
    co_gpu_s = decode_gpus * output_tokens * co_step / decode_batch
    # disaggregated: prompts batched on a prefill pool, KV shipped to the decode pool
    n_p = float(prefill_gpus or decode_gpus)
    batch_p = max(1.0, math.ceil(min_prefill_tokens / prompt_tokens))
    pooled = prefill(setting, n_p, prompt_tokens, batch=batch_p)
    transfer = kv_transfer_s(setting, prompt_tokens, min(n_p, decode_gpus))
    dis_gpu_s = n_p * pooled.latency_s / batch_p + decode_gpus * output_tokens * step / decode_batch
    rows = [
        {
            "serving": "co-located",
            "gpus": float(decode_gpus),
            "ttft_s": solo.latency_s + first_step,
            "decode_latency_s": co_step,
            "tokens_per_s": 1.0 / co_step,
            "gpu_s_per_request": co_gpu_s,
            "usd_per_request": co_gpu_s * price_s,
            "usd_per_m_output_tokens_all_in": 1e6 * co_gpu_s * price_s / output_tokens,
            "kv_transfer_s": 0.0,
        },
        {
            "serving": "disaggregated",
            "gpus": float(decode_gpus + n_p),
            "ttft_s": pooled.latency_s + transfer + first_step,
            "decode_latency_s": step,
            "tokens_per_s": 1.0 / step,
            "gpu_s_per_request": dis_gpu_s,
            "usd_per_request": dis_gpu_s * price_s,
            "usd_per_m_output_tokens_all_in": 1e6 * dis_gpu_s * price_s / output_tokens,
            "kv_transfer_s": transfer,
        },
    ]
    df = pd.DataFrame(rows)
    df.attrs["note"] = (
        f"{setting.model.name} on {setting.gpu.name}: {prompt_tokens:g} prompt + {output_tokens:g} output tokens; "
        f"decode on {decode_gpus:g} GPUs at batch {decode_batch:g}; prefill pool {n_p:g} GPUs, {batch_p:g} prompts per pass"
    )
    return df
