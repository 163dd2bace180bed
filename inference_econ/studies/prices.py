"""What output tokens cost relative to input tokens (paper §4.3; docs/model.md §B8)."""

from __future__ import annotations

import math

import pandas as pd

from .. import settings as table
from ..errors import InfeasibleError, SpecError, article, expect
from ..optimise.method import GRID, Method
from ..optimise.optimiser import frontier
from ..serving.derived_intervals import ratio_intervals, renamed_intervals
from ..serving.prefill import prefill, prefill_intervals
from ..serving.setting import make_setting
from ..serving.support import DEGREES
from ..specs.schema import check_number


def price_ratio(
    model,
    hardware,
    context_tokens: float,
    prompt_tokens: float | None = None,
    output_tokens: float = table.default("output_tokens", "prices"),
    min_prefill_tokens: float = 8192,
    method: Method = GRID,
    **kwargs,
) -> pd.Series:
    """Output/input price ratio at the decode frontier's preference point (paper §4.3).

    Decode runs at ``context_tokens``; the prompt (default: the context, at least 1000 tokens)
    is prefilled on the same GPUs, batching prompts until a pass holds ``min_prefill_tokens``
    tokens so the prefill is efficient. ``method`` searches the decode frontier (default: the
    paper's grid).
    """
    checked = table.check_each(  # normalised: a number given as text read as its number
        {
            "context_tokens": context_tokens,
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
        }
    )
    context_tokens, prompt_tokens = checked["context_tokens"], checked["prompt_tokens"]
    if context_tokens is None:
        raise SpecError("argument", "context_tokens", "is missing", "give the decode context")
    expect(method, Method, "method", "a Method", "e.g. ie.Method('grid'), or leave it out")
    min_prefill_tokens = check_number(
        min_prefill_tokens, "argument", "min_prefill_tokens", minimum=1, maximum=1e9
    )  # text that reads as a number is read as it
    setting = make_setting(model, hardware, context_tokens=context_tokens, **kwargs)
    point = frontier(setting, method).preference_point()
    prompt = float(prompt_tokens or max(context_tokens, 1000.0))
    pb = max(1.0, math.ceil(min_prefill_tokens / prompt))
    pre = prefill(setting, point.gpus, prompt, batch=pb)
    if not math.isfinite(pre.latency_s):
        raise InfeasibleError(
            f"{setting.name} at context {context_tokens:g}: {article(prompt)} {prompt:g}-token prefill does not fit "
            f"on the {point.gpus:.3g} GPUs of the decode preference point"
        )
    # expected figures' intervals (§F12): the decode point's from its frontier, the input
    # price a prefill time's (TTFT); the ratio's from both, end against opposite end
    pre = prefill_intervals(pre, setting, point.gpus)
    out = pd.Series(
        {
            "model": setting.model.name,
            "hardware": setting.gpu.name,
            "context_tokens": float(context_tokens),
            "attention": setting.model.attention.kind,
            "gpus": point.gpus,
            "decode_batch": point.batch,
            **{name: float(point[name]) for name in DEGREES},  # the decode layout
            "decode_tokens_per_s": point.tokens_per_s,
            "decode_mfu": point.mfu,
            "usd_per_m_output_tokens": point.usd_per_mtok,
            "prefill_batch": pb,
            **{f"prefill_{name}": float(pre[name]) for name in DEGREES},  # the prefill's
            "prefill_mfu": pre.mfu,
            "usd_per_m_input_tokens": pre.usd_per_m_input_tokens,
            "output_to_input_price_ratio": point.usd_per_mtok / pre.usd_per_m_input_tokens,
            **renamed_intervals(point, "tokens_per_s", "decode_tokens_per_s"),
            **renamed_intervals(point, "usd_per_mtok", "usd_per_m_output_tokens"),
            **renamed_intervals(pre, "usd_per_m_input_tokens", "usd_per_m_input_tokens"),
            **renamed_intervals(point, "mfu", "decode_mfu"),
            **renamed_intervals(pre, "mfu", "prefill_mfu"),
        }
    )
    ratio = ratio_intervals(
        out, "usd_per_m_output_tokens", "usd_per_m_input_tokens", "output_to_input_price_ratio"
    )
    return pd.concat([out, pd.Series(ratio, dtype=float)]) if ratio else out
