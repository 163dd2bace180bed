"""The request view: time to first token, end-to-end latency and the prices of input and
output tokens at one configuration (docs/model.md §B8)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import settings as table
from ..errors import SpecError, expect
from ..model.layouts import check_whole_batch, check_whole_gpus, tp_dims
from .decode import Decoder, chosen_layout, draft_prefill_layout
from .derived_intervals import ratio_intervals, renamed_intervals, within_ideal
from .figure_labels import interval_columns, interval_keys
from .intervals import (
    REQUEST_FIGURES,
    bound_floors,
    expected,
    figure_limits,
    ideal,
    series_intervals,
)
from .prefill import ENGINE_CHUNK_TOKENS, cached_prompt_tokens, prefill
from .setting import Setting, check_context
from .speculative import combine
from .support import row_layouts


def instance_layout(
    setting: Setting,
    gpus: float,
    batch: float,
    context_tokens: float,
    discrete: bool = False,
    with_bound: bool = False,
):
    """The decode step of (gpus, batch) at a context, described, with the target's and the
    draft's layouts: the layout the instance runs with, §A5's continuous one or with
    ``discrete`` a whole one (§B7: what an engine launches; an export's); last, with
    ``with_bound``, the ideal bound's step on the same layouts (``Decoder.bound_latency``;
    NaN for a bound or when not asked)."""
    if discrete:
        check_whole_gpus(gpus)
        check_whole_batch(batch)
    decoder = Decoder(
        setting.replace(context_tokens=float(context_tokens), prompt_tokens=None), discrete
    )
    N, B = np.array([float(gpus)]), np.array([float(batch)])
    target, draft = decoder.whole_layouts(N, B) if discrete else decoder.layouts(N, B)
    row = decoder.describe(N, B, target, draft).iloc[0]
    draft_lat = {d: lay.latency_s for d, lay in draft.items()} if draft else None
    _, verify = combine({g: lay.latency_s for g, lay in target.items()}, draft_lat, setting.spec)
    bound_s = math.nan
    if with_bound and expected(setting):
        bound_s = float(decoder.bound_latency(N, B, verify, target, draft)[0])
    return row, chosen_layout(target, verify), draft, decoder, int(verify[0]), bound_s


def check_request_context(setting: Setting, prompt_tokens: float, output_tokens: float):
    """Warn when a request (prompt and output) outgrows the model's window; a prompt that
    does so alone is warned about by its prefill, so one line says it."""
    window = setting.model.max_context_tokens
    if window is not None and prompt_tokens <= window:
        check_context(setting.model, prompt_tokens + output_tokens)


def request(
    setting: Setting,
    gpus: float,
    batch: float,
    prompt_tokens: float,
    output_tokens: float,
    prefill_batch: float | None = None,
    cached_fraction: float = 0.0,
    discrete: bool = False,
) -> pd.Series:
    """The request view at one configuration: time to first token, end-to-end latency, and
    what input and output tokens cost (and their ratio). The input price is per prompt token,
    cached ones included (``cached_fraction`` of the prompt is read from a prefix cache, not
    computed; docs/model.md §B8), so a cache makes input cheaper.

    The instance's layout is the best one for its decode steps, which run at the mean context
    of a response, n_in + n_out/2. A new prompt is prefilled on that layout as a serving engine
    does: as it arrives (``prefill_batch`` prompts together, default 1), in chunks of the
    engine's token budget (8192); the first decode step then runs at the prompt's length.
    ``discrete``: the instance's layout is a whole one (``instance_layout``).

    Parameters
    ----------
    setting : Setting
        The problem (``make_setting``).
    gpus : float
        GPUs of the instance.
    batch : float
        Requests decoding together.
    prompt_tokens : float
        Tokens of each prompt.
    output_tokens : float
        Tokens of each response.
    prefill_batch : float or None
        Prompts prefilled together (None: one).
    cached_fraction : float
        Share of each prompt read from a prefix cache, 0 to 1.
    discrete : bool
        Whole layouts (§B7).

    Returns
    -------
    pandas.Series
        ``ttft_s``, ``e2e_s``, the input and output prices and their ratio, the layout and the
        decode speed of the request.

    Examples
    --------
    >>> import inference_econ as ie
    >>> s = ie.make_setting("Llama 3 70B", "H100", weight_bits=8, context_tokens=8192)
    >>> r = ie.request_view(s, gpus=8, batch=64, prompt_tokens=8192, output_tokens=1024)
    >>> round(float(r["ttft_s"]), 3)
    0.224
    """
    expect(setting, Setting, "setting", "a Setting", "make one with ie.make_setting(model, gpu)")
    if cached_fraction is None:
        cached_fraction = 0.0  # None: nothing cached, as the default
    gpus, batch, prompt_tokens, output_tokens, pb, cached_fraction = _checked_request(
        gpus, batch, prompt_tokens, output_tokens, prefill_batch, cached_fraction
    )
    cached = cached_prompt_tokens(prompt_tokens, cached_fraction)
    n_in, n_out = float(prompt_tokens), float(output_tokens)
    check_request_context(setting, n_in, n_out)
    dec, layout, draft, decoder, verify, _ = instance_layout(
        setting, gpus, batch, n_in + n_out / 2.0, discrete
    )
    on_layout = (
        float(layout.pipeline[0]),
        float(layout.attention_divisor[0]),
        bool(layout.two_d[0]),
    )
    pre, draft_s, first_s = _first_token(
        setting, gpus, batch, n_in, pb, cached, on_layout, decoder, draft, verify
    )
    row = _request_row(
        setting, n_in, n_out, cached_fraction, cached, gpus, batch, pb, on_layout, dec, pre,
        draft_s, first_s,
    )  # fmt: skip
    asked = (gpus, batch, prompt_tokens, output_tokens, prefill_batch, cached_fraction, discrete)
    return _bounded(row, setting, dec, decoder, on_layout, asked) if expected(setting) else row


def _bounded(row: pd.Series, setting: Setting, dec, decoder, on_layout: tuple, asked: tuple):
    """An expected request's row with its decode step's band (``_step_intervals``) and every
    end within the same request under the ideal bound (``asked``: ``request``'s arguments)."""
    gpus, batch, n_in = asked[0], asked[1], float(asked[2])
    N, B = np.array([float(gpus)]), np.array([float(batch)])
    bound = decoder.bound_decoder().target.breakdown(
        N, B, 1, n_in, *(np.array([x]) for x in on_layout)
    )  # the first step's ideal bound, on its layout
    row = _step_intervals(row, setting, dec, float(np.ravel(bound.latency_s)[0]))
    # no end faster than the same request under the ideal bound (on its own best layout)
    at_ideal = request(ideal(setting), *asked)
    out = {**row.to_dict(), **within_ideal(row, at_ideal, REQUEST_FIGURES)}
    out.update(  # the prices' ratio from their ends as they now stand
        ratio_intervals(
            out, "usd_per_m_output_tokens", "usd_per_m_input_tokens", "output_to_input_price_ratio"
        )
    )
    return pd.Series(out)


def _step_intervals(row: pd.Series, setting: Setting, dec, first_bound_s: float) -> pd.Series:
    """The request row with its decode figures' intervals those of its decode step (``dec``,
    the configuration's row: its step band, in its layout's class, no end past the ideal
    bound), its first step's the same band at the prompt's length stopped at that step's
    bound (``first_bound_s``), and the end-to-end latency's and the price per request's the
    sums of their parts' like ends (the errors of a prompt and a step are not assumed to
    cancel)."""
    out = row.to_dict()
    for source, name in (
        ("latency_s", "decode_latency_s"),
        ("usd_per_mtok", "usd_per_m_output_tokens"),
        ("mfu", "decode_mfu"),
    ):
        out.update(renamed_intervals(dec, source, name))
    layouts = row_layouts(dec, 1, setting)
    floors = bound_floors([first_bound_s], [row["first_step_s"]])
    ends = figure_limits(
        "first_step_s", [row["first_step_s"]], setting, [row["gpus"]], [row["decode_bound"]],
        REQUEST_FIGURES, where=(layouts,), floors=floors,
    )  # fmt: skip
    out.update({k: float(v[0]) for k, v in zip(interval_columns("first_step_s"), _ends(ends))})
    steps, n_in, n_out = row["output_tokens"] - 1.0, row["prompt_tokens"], row["output_tokens"]
    for name, parts in (
        ("e2e_latency_s", (("ttft_s", 1.0), ("decode_latency_s", steps))),
        ("usd_per_request", (("usd_per_m_input_tokens", n_in / 1e6),
                             ("usd_per_m_output_tokens", n_out / 1e6))),
    ):  # fmt: skip
        for column, ends_of in zip(interval_columns(name), zip(*(
            [w * out[c] for c in interval_columns(part)] for part, w in parts
        ))):  # fmt: skip
            out[column] = float(sum(ends_of))
    return pd.Series({k: out[k] for k in _ordered_keys(row, out)})


def _ends(ends: dict) -> list:
    return [ends[k] for k in interval_keys()]


def _ordered_keys(row: pd.Series, out: dict) -> list[str]:
    """The row's keys, each figure's interval columns after it."""
    keys: list[str] = []
    for key in row.index:
        keys.append(key)
        keys += [c for c in interval_columns(key) if c in out and c not in row.index]
    return keys + [k for k in out if k not in keys]


def _checked_request(
    gpus, batch, prompt_tokens, output_tokens, prefill_batch, cached_fraction
) -> tuple:
    """The request view's arguments checked and normalised (a number given as text read as
    its number): (gpus, batch, prompt tokens, output tokens, prompts prefilled together,
    default 1, cached fraction), a prompt length given and no more prompts prefilled together
    than decode."""
    checked = table.check_each(
        {
            "gpus": gpus,
            "batch": batch,
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "prefill_batch": prefill_batch,
            "cached_fraction": cached_fraction,
        }
    )
    if checked["prompt_tokens"] is None:
        raise SpecError("argument", "prompt_tokens", "is missing", "give the prompt length")
    batch = checked["batch"]
    pb = float(checked["prefill_batch"] or 1.0)
    if pb > float(batch):  # the prompts prefilled together then decode in the batch
        raise SpecError(
            "argument",
            "prefill_batch",
            f"is {pb:g}, more prompts than the decode batch of {float(batch):g} holds",
            f"prompts prefilled together go on to decode together: give at most {float(batch):g}",
        )
    return (
        checked["gpus"], batch, checked["prompt_tokens"], checked["output_tokens"], pb,
        checked["cached_fraction"],
    )  # fmt: skip


def _first_token(setting, gpus, batch, n_in, pb, cached, on_layout, decoder, draft, verify):
    """What the first token waits for: the prompt's prefill on the decode layout
    ``on_layout`` (in chunks of the engine's token budget), the draft model's prefill where
    speculation runs one, and the first decode step at the prompt's length:
    (prefill, draft prefill seconds, first step seconds)."""
    pre = prefill(
        setting, gpus, n_in, pb, cached, chunk_tokens=ENGINE_CHUNK_TOKENS, layout=on_layout
    )
    N, B = np.array([float(gpus)]), np.array([float(batch)])
    first = decoder.target.breakdown(N, B, 1, n_in, *(np.array([x]) for x in on_layout))
    first_s = float(first.latency_s[0])
    draft_s = 0.0
    prefill_layout = draft_prefill_layout(draft) if draft is not None else None
    if prefill_layout is not None and setting.spec is not None and verify > 1:
        d = prefill_layout.select(0)
        draft_pre = prefill(
            setting.replace(model=setting.spec.draft_architecture),
            gpus,
            n_in,
            pb,
            cached,
            chunk_tokens=ENGINE_CHUNK_TOKENS,
            layout=(
                float(np.asarray(d.pipeline)),
                float(np.asarray(d.attention_divisor)),
                bool(np.asarray(d.two_d)),
            ),
        )
        draft_s = draft_pre.latency_s
    return pre, draft_s, first_s


def _request_row(
    setting, n_in, n_out, cached_fraction, cached, gpus, batch, pb, on_layout, dec, pre,
    draft_s, first_s,
) -> pd.Series:  # fmt: skip
    """The request view's row: its lengths, layout, times to the first token and to the last,
    the input and output prices and their ratio, with the intervals of its expected figures
    (§F12; the ratio's from the two prices', end against opposite end)."""
    p, adiv, two = on_layout
    ttft = pre.latency_s + draft_s + first_s
    out_cost = dec.usd_per_mtok
    in_cost = pre.usd_per_m_input_tokens  # per prompt token: a prefix cache makes it cheaper
    row = pd.Series(
        {
            "prompt_tokens": n_in,
            "output_tokens": n_out,
            "cached_fraction": float(cached_fraction),
            "cached_tokens": float(cached),
            "gpus": float(gpus),
            "batch": float(batch),
            "prefill_batch": pb,
            "pipeline_degree": p,
            "tensor_degree": float(gpus) / p,
            "attention_degree": float(gpus) / p / adiv,
            "expert_degree": float(dec.expert_degree),
            "prefill_expert_degree": float(pre.expert_degree),
            "tp_dims": tp_dims(two, float(gpus) / p),
            "draft_tokens": int(dec.draft_tokens),
            "ttft_s": ttft,
            "prefill_s": pre.latency_s,
            "draft_prefill_s": draft_s,
            "first_step_s": first_s,
            "decode_latency_s": dec.latency_s,
            "e2e_latency_s": ttft + (n_out - 1.0) * dec.latency_s,
            "usd_per_m_input_tokens": in_cost,
            "usd_per_m_computed_input_tokens": pre.usd_per_m_computed_input_tokens,
            "usd_per_m_output_tokens": out_cost,
            "output_to_input_price_ratio": out_cost / in_cost
            if 0 < in_cost < math.inf and math.isfinite(out_cost)
            else math.inf,
            "usd_per_request": (in_cost * n_in + out_cost * n_out) / 1e6,
            "prefill_mfu": pre.mfu,
            "decode_mfu": dec.mfu,
            "prefill_bound": pre.bound,
            "decode_bound": dec.bound,
        }
    )
    where = (row_layouts(dec, 1, setting),)  # the configuration's calibration class
    row = series_intervals(row, setting, float(gpus), dec.bound, REQUEST_FIGURES, where=where)
    ratio = ratio_intervals(  # the two prices' intervals, end against opposite end
        row, "usd_per_m_output_tokens", "usd_per_m_input_tokens", "output_to_input_price_ratio"
    )
    return pd.concat([row, pd.Series(ratio, dtype=float)]) if ratio else row
