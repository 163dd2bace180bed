"""Prediction intervals of expected figures (docs/model.md §F12): how far from the figure a
measured run lands, read from the out-of-sample error of the engine profiles.

An expected figure (one computed under an engine profile: the ``achievable`` preset) carries an
80 % and a 90 % interval. The interval is the figure times the quantiles of measured over
predicted of its *calibration class* (``serving/support.py``, the shipped table
``intervals/classes.yaml``): its kind (``throughput``, ``TPOT``, ``TTFT``), dense or MoE, its
layout class, its GPU's generation, its engine's family and its scenario (``figure_class``).
A class with enough residuals is in support and takes its own conformal band; a thinner or
empty one takes the widest of the nearest classes in support, widened per dimension away
(``support.ClassTable.support``); throughput's high end carries the software drift. Tables
state each row's ``support`` (``support_column``) and a line when it is not in support
(``coverage_note``). The table is written by ``benchmarks/interval_coverage.py
--write-classes`` from residuals the fit never saw; its coverage is measured by rolling origin
(each round from the rounds before it, docs/validation.md).

Ideal-bound figures (the ``paper`` and ``refined`` presets) have no interval: they are bounds.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import TYPE_CHECKING

import numpy as np

from ..model.breakdown import ADDITIVE_PARTS, FULL_READS
from ..model.power import board_power_w, it_power_w
from .figure_labels import LEVELS as LEVELS
from .figure_labels import expected as expected
from .figure_labels import figures_line as figures_line
from .figure_labels import interval_columns as interval_columns
from .figure_labels import interval_keys as interval_keys
from .interval_table import QUANTILES, Band, FigureKind
from .setting import Setting
from .step_floor import one_step_floor_s
from .support import Support, class_bands, layout_class, row_layouts, support_line, support_of

if TYPE_CHECKING:
    import pandas as pd

    from ..model.assumptions import Assumptions


#: The band of one configuration's step (a fixed batch on a fixed layout: ``point``,
#: ``frontier``, ``request``), in a time's orientation. Its time per output token, speed,
#: throughput, price and MFU all follow from that one step, so they share one band: the
#: envelope of its TPOT class's band and its throughput class's (inverted), the two ways the
#: residuals see a step (a time at a concurrency, a rate offline; ``step_bands``). No two
#: figures of a configuration then disagree, and the fast end stops at the ideal bound
#: (``within_bound``).
STEP = "step"
#: The residual kinds a step's band is made of.
STEP_KINDS: tuple[FigureKind, ...] = ("TPOT", "throughput")

#: Columns that carry an interval: (kind, +1 where the column is in the kind's orientation,
#: -1 where it is its inverse: a speed per request is 1/TPOT, a price per token is the GPUs'
#: price over the throughput, and in a step's band, a time's, proportional to the step).
FIGURES: dict[str, tuple[str, int]] = {
    # one configuration (point, frontier, request): its step's band
    "tokens_per_s": (STEP, -1),
    "latency_s": (STEP, 1),
    "usd_per_mtok": (STEP, 1),
    "throughput_tokens_per_s": (STEP, -1),
    "tokens_per_s_per_gpu": (STEP, -1),
    "ttft_s": ("TTFT", 1),
    "tpot_s": (STEP, 1),
    "e2e_s": (STEP, 1),
    # serving under load (simulate, capacity)
    **{f"ttft_{s}_s": ("TTFT", 1) for s in ("mean", "p50", "p90", "p99")},
    **{f"tpot_{s}_s": ("TPOT", 1) for s in ("mean", "p50", "p90", "p99")},
    **{f"e2e_{s}_s": ("TPOT", 1) for s in ("mean", "p50", "p90", "p99")},
    "decode_latency_s": (STEP, 1),  # a fixed batch's decode step (disagg, request)
    "e2e_latency_s": ("TPOT", 1),
    "usd_per_request": ("throughput", -1),
    "max_rate_per_s": ("throughput", 1),
    "max_rate_per_instance": ("throughput", 1),
    "output_tokens_per_s": ("throughput", 1),
    "input_tokens_per_s": ("throughput", 1),
    "throughput_requests_per_s": ("throughput", 1),
    "goodput_requests_per_s": ("throughput", 1),
    "usd_per_m_input_tokens": ("throughput", -1),
    "usd_per_m_output_tokens": ("throughput", -1),
    "usd_per_m_output_tokens_all_in": ("throughput", -1),
    # disaggregated against co-located serving (disagg): GPU time and price per request
    "gpu_s_per_request": ("throughput", -1),
    "gpu_s_per_request_idle_charged": ("throughput", -1),
    "usd_per_request_idle_charged": ("throughput", -1),
}
#: The breakdown of a step (``model.breakdown``) carries the step's band, scaled to each part:
#: the parts add up to the step, and the measured error of a step is not attributed to its
#: parts (no benchmark publishes them).
FIGURES.update({name: (STEP, 1) for name in (*ADDITIVE_PARTS, *FULL_READS)})
FIGURES.update({"memory_time_s": (STEP, 1), "compute_time_s": (STEP, 1)})
#: MFU is the work of the tokens a configuration serves per second over its peak: at a fixed
#: work per token it moves with the throughput, the inverse of the step's time.
FIGURES["mfu"] = (STEP, -1)
#: A run under load: the requests in the engine (Little's law: at a given rate, the time each
#: spends there), the share of time it steps and of the KV cache it fills grow with its time
#: per output token, and carry that interval (the shares at most 1, the batch at most what an
#: instance holds: ``LoadResult.batch_limit``).
FIGURES.update({n: ("TPOT", 1) for n in ("mean_batch", "busy_fraction", "peak_kv_fraction")})
#: Sessions (§E9): the later turns' TTFT carries TTFT's band; a session's price at the offered
#: rate is exact where the deployment keeps up, else it carries the throughput's, as prices do.
FIGURES["later_turn_ttft_p99_s"] = ("TTFT", 1)
FIGURES["usd_per_session"] = ("throughput", -1)
#: A run under load's figures: its MFU moves with the rate it reaches (throughput's band).
LOAD_FIGURES: dict[str, tuple[str, int]] = {**FIGURES, "mfu": ("throughput", 1)}

#: The power model's stated error (docs/model.md §G2): predicted over measured board watts,
#: from its check against ML.ENERGY v3.0's measured power (Llama 3.1 8B/70B/405B on H100,
#: vLLM 0.11.1: 0.67-0.98 seen on its 8 rows, every one low), widened to 0.60-1.10 for so few
#: rows of one GPU and one engine (``tests/test_energy.py`` holds the model to it). Too few
#: rows to calibrate quantiles: the band serves both levels and is stated, not measured for
#: coverage.
POWER_PREDICTED_OVER_MEASURED = (0.60, 1.10)
#: Energy and power figures: their intervals propagate the speed's band and the power band,
#: each term (kind, orientation), their log ends added (the errors are not assumed to cancel:
#: conservative). ``board_activity`` takes the power band through §G2's relation. One
#: configuration's energy moves with its step (``COMPOSED``), a run under load's with its
#: throughput (``LOAD_COMPOSED``).
LOAD_COMPOSED: dict[str, tuple[tuple[str, int], ...]] = {
    "joules_per_output_token": (("power", 1), ("throughput", -1)),
    "output_tokens_per_s_per_kw_it": (("throughput", 1), ("power", -1)),
    "output_tokens_per_s_per_mw_facility": (("throughput", 1), ("power", -1)),
    "gco2_per_mtok": (("power", 1), ("throughput", -1)),
    "it_power_w_per_gpu": (("power", 1),),
    "it_power_kw": (("power", 1),),
}
COMPOSED: dict[str, tuple[tuple[str, int], ...]] = {
    name: tuple((STEP, -o) if k == "throughput" else (k, o) for k, o in terms)
    for name, terms in LOAD_COMPOSED.items()
}
#: Every figure of one configuration with an interval, simple or composed.
ACTIVITY = "board_activity"

#: The figures of one prefill (``prefill``): its time is a time to first token; its speed in
#: prompt tokens/s is the inverse, and its price per input token is proportional to its time.
PREFILL_FIGURES: dict[str, tuple[FigureKind, int]] = {
    "latency_s": ("TTFT", 1),
    "input_tokens_per_s": ("TTFT", -1),
    "computed_input_tokens_per_s": ("TTFT", -1),
    "usd_per_m_input_tokens": ("TTFT", 1),
    "usd_per_m_computed_input_tokens": ("TTFT", 1),
    # a prefill's work is fixed: its MFU moves as its speed, its parts as its time
    "mfu": ("TTFT", -1),
    **{name: ("TTFT", 1) for name in (*ADDITIVE_PARTS, "memory_time_s", "compute_time_s")},
}
#: A prefill's energy per input token: the power band and the prefill time's.
PREFILL_COMPOSED: dict[str, tuple[tuple[str, int], ...]] = {
    "joules_per_input_token": (("power", 1), ("TTFT", 1)),
    "it_power_w_per_gpu": (("power", 1),),
}
#: The figures of a context-parallel prefill (``context-parallel``): each is the time to first
#: token of one prompt, on one device or on the chain (``CHAIN_FIGURES``: on all its devices).
CONTEXT_PARALLEL_FIGURES: dict[str, tuple[FigureKind, int]] = {
    "single_device_s": ("TTFT", 1),
    "ring_attention_s": ("TTFT", 1),
    "kv_runahead_equal_s": ("TTFT", 1),
    "kv_runahead_balanced_s": ("TTFT", 1),
}
CHAIN_FIGURES = ("ring_attention_s", "kv_runahead_equal_s", "kv_runahead_balanced_s")
#: The figures of a request (``request``): its prompt's prefill and input price are a time to
#: first token's, its decode step's time, output price and MFU its step's; the rest as
#: ``FIGURES``.
REQUEST_FIGURES: dict[str, tuple[str, int]] = {
    **FIGURES,
    "prefill_s": ("TTFT", 1),
    "draft_prefill_s": ("TTFT", 1),
    "usd_per_m_input_tokens": ("TTFT", 1),
    "usd_per_m_computed_input_tokens": ("TTFT", 1),
    "prefill_mfu": ("TTFT", -1),
    # its decode is one configuration's step: its time, output price and MFU share its band
    **{n: (STEP, 1) for n in ("first_step_s", "usd_per_m_output_tokens")},
    "decode_mfu": (STEP, -1),
}
#: Figures of a run under load whose intervals are its latencies'; its rates and prices
#: carry the throughput interval only when the deployment does not keep up (then they are its
#: capacity; a deployment that keeps up serves the offered load, and whether it would still
#: keep up is what ``capacity --confidence`` answers) or its clients wait for their answers (a
#: closed loop: the rates are the ones the engine reaches).
LOAD_LATENCIES = tuple(
    f"{m}_{s}_s" for m in ("ttft", "tpot", "e2e") for s in ("mean", "p50", "p90", "p99")
)
LOAD_RATES = (
    "mfu",
    "goodput_requests_per_s",
    "throughput_requests_per_s",
    "input_tokens_per_s",
    "output_tokens_per_s",
    "usd_per_m_input_tokens",
    "usd_per_m_output_tokens",
    "usd_per_m_output_tokens_all_in",
)


#: Figures of a run under load that follow its time per output token (``FIGURES``).
LOAD_OCCUPANCY = ("mean_batch", "busy_fraction", "peak_kv_fraction")


#: What a benchmark row's quantity is (docs/model.md §F9): its kind, and +1 where it is stated
#: in the kind's orientation, -1 where it is the inverse (a speed per user is 1/TPOT).
QUANTITIES: dict[str, tuple[str, int]] = {
    "throughput": ("throughput", 1),
    "request_throughput": ("throughput", 1),  # the output rate times the lengths' ratio
    "input_throughput": ("throughput", 1),
    "total_throughput": ("throughput", 1),
    "streams": ("throughput", 1),
    "tpot": ("TPOT", 1),
    "tpot_p99": ("TPOT", 1),
    "itl": ("TPOT", 1),
    "user_speed": ("TPOT", -1),
    "ttft": ("TTFT", 1),
    "ttft_p99": ("TTFT", 1),
    "ttft_single": ("TTFT", 1),
}


def bound_of_tokens(setting: Setting, tokens_per_step) -> np.ndarray:
    """Memory- or compute-bound by the tokens a step processes (``bound_on``)."""
    return bound_on(setting.gpu, setting.model.precision.weight_bits, tokens_per_step)


def bound_on(gpu, weight_bits: float, tokens_per_step) -> np.ndarray:
    """Memory- or compute-bound, by the tokens a step processes against the GPU's ridge point
    (FLOP/s per weight byte read, at the weights' precision): the rule the residuals are
    labelled with (``measured.intervals.regime``)."""
    bits = float(weight_bits)
    ridge = gpu.peak_flop_per_s(bits) * (bits / 8.0) / (2.0 * gpu.hbm_bandwidth_bytes_per_s)
    return np.where(np.asarray(tokens_per_step, dtype=float) >= ridge, "compute", "memory")


#: An MFU the bands of one kind stop at (``within_peak``): (kind, the MFU's orientation,
#: the MFU of the configuration).
PeakCap = tuple[str, int, float]


def bands(
    setting: Setting,
    kind: str,
    gpus,
    bound,
    peak: PeakCap | None = None,
    layout=None,
    scenario: str | None = None,
):
    """The band of each configuration of ``setting`` (``class_bands``: its calibration class
    with ``layout``, one layout class or one per configuration, default tensor-parallel, and
    ``scenario``, default the kind's; a step's for ``STEP``), held within the peak
    (``within_peak``) where ``peak`` names this kind. ``bound`` (memory or compute) does not
    choose a class."""
    n = np.size(gpus)
    layouts = np.broadcast_to("TP" if layout is None else layout, n)
    if kind == STEP:
        chosen = step_bands(setting, layouts, scenario)
    else:
        chosen = class_bands(setting, kind, layouts, scenario)
    if peak is None or peak[0] != kind:
        return chosen
    return within_peak(chosen, peak[1], peak[2])


def step_bands(setting: Setting, layouts, scenario: str | None = None) -> list[Band]:
    """The step's band of each configuration (``STEP``): the envelope of its TPOT class's
    band and its throughput class's, inverted into a time's orientation."""
    found: dict[str, Band] = {}
    out = []
    for layout in np.atleast_1d(layouts):
        key = str(layout)
        if key not in found:
            (time,), (rate,) = (class_bands(setting, k, [key], scenario) for k in STEP_KINDS)
            found[key] = time.envelope(rate.inverted())
        out.append(found[key])
    return out


def kinds_of(names, figures=None) -> list[str]:
    """The residual kinds behind figures ``names`` (``figures``, default ``FIGURES``): a
    step's band stands for its TPOT and throughput classes."""
    figures = FIGURES if figures is None else figures
    out: list[str] = []
    for name in names:
        if name in figures:
            kind = figures[name][0]
            out.extend(STEP_KINDS if kind == STEP else (kind,))
    return list(dict.fromkeys(out))


def within_bound(lo: np.ndarray, hi: np.ndarray, floors) -> tuple[np.ndarray, np.ndarray]:
    """A step's log ends ``lo``, ``hi`` (a time's orientation) no lower than each row's floor
    (``floors``: the log of the ideal bound's step time over the figure's, at most 0; None for
    none): no end of an interval is faster than the ideal bound of the same configuration."""
    if floors is None:
        return lo, hi
    return np.maximum(lo, floors), np.maximum(hi, floors)


def within_peak(chosen: list[Band], orientation: int, mfu: float) -> list[Band]:
    """``chosen`` with every quantile clipped where the figures it moves would put the MFU
    (``mfu``, of ``orientation`` in the kind) above 1: no end of an interval implies more
    than the hardware's peak FLOP/s, be it the MFU's end or the speed, time or price moving
    with it."""
    if not (0.0 < mfu <= 1.0):
        return chosen
    top = -math.log(mfu)  # orientation * q never above it: mfu * exp(orientation * q) <= 1

    def clip(q: float) -> float:
        return min(q, top) if orientation > 0 else max(q, -top)

    return [
        dataclasses.replace(b, q05=clip(b.q05), q10=clip(b.q10), q90=clip(b.q90), q95=clip(b.q95))
        for b in chosen
    ]


def support_column(setting: Setting, names, layouts, scenario=None) -> np.ndarray:
    """The ``support`` column of a table: for each row, the support of the least-supported
    kind among the figures ``names`` it carries intervals for (``Support.label``)."""
    kinds = kinds_of(names) or ["throughput"]
    found: dict[str, str] = {}
    out = np.empty(len(layouts), dtype=object)
    for i, layout in enumerate(layouts):
        if layout not in found:
            found[layout] = support_of(setting, kinds, layout, scenario).label()
        out[i] = found[layout]
    return out


def limits(values, orientation: int, chosen: list[Band], floors=None) -> dict[str, np.ndarray]:
    """{"low80": ..., "high80": ..., "low90": ..., "high90": ...} of figures ``values``, one
    band per value, each no faster than its floor (``within_bound``) where ``floors`` is
    given."""
    v = np.asarray(values, dtype=float)
    out = {}
    for level in LEVELS:
        lo_name, hi_name = QUANTILES[level]
        lo = np.array([getattr(b, lo_name) for b in chosen], dtype=float)
        hi = np.array([getattr(b, hi_name) for b in chosen], dtype=float)
        lo, hi = within_bound(lo, hi, floors)
        if orientation < 0:
            lo, hi = -hi, -lo
        out[f"low{level}"], out[f"high{level}"] = v * np.exp(lo), v * np.exp(hi)
    return out


def _power_log_band() -> tuple[float, float]:
    """(low, high) of log(measured / predicted) watts: the power band in a figure's terms."""
    low, high = POWER_PREDICTED_OVER_MEASURED
    return math.log(1.0 / high), math.log(1.0 / low)


def composed_limits(
    terms,
    values,
    setting: Setting,
    gpus,
    bound,
    peak: PeakCap | None = None,
    where=None,
    floors=None,
    floor_kind: str = STEP,
) -> dict[str, np.ndarray]:
    """``limits`` of a figure whose error is that of several (``COMPOSED``): each term's log
    ends, flipped where its orientation is -1, added end to end; ``floors`` hold the
    ``floor_kind`` term's within the ideal bound."""
    v = np.asarray(values, dtype=float)
    n = v.size
    gpus, bound = np.broadcast_to(gpus, n), np.broadcast_to(bound, n)
    low = {level: np.zeros(n) for level in LEVELS}
    high = {level: np.zeros(n) for level in LEVELS}
    for kind, orientation in terms:
        chosen = (
            None if kind == "power" else bands(setting, kind, gpus, bound, peak, *_where(where, n))
        )
        for level in LEVELS:
            if chosen is None:
                lo, hi = (np.full(n, e) for e in _power_log_band())
            else:
                lo_name, hi_name = QUANTILES[level]
                lo = np.array([getattr(b, lo_name) for b in chosen], dtype=float)
                hi = np.array([getattr(b, hi_name) for b in chosen], dtype=float)
                lo, hi = within_bound(lo, hi, floors if kind == floor_kind else None)
            if orientation < 0:
                lo, hi = -hi, -lo
            low[level] += lo
            high[level] += hi
    out = {}
    for level in LEVELS:
        out[f"low{level}"], out[f"high{level}"] = v * np.exp(low[level]), v * np.exp(high[level])
    return out


def activity_limits(values, setting: Setting) -> dict[str, np.ndarray]:
    """``limits`` of the boards' activity (§G2's ``a``): the board watts it gives, moved by
    the power band and read back as an activity (0 to 1); blank without a power model."""
    p = setting.gpu.power
    a = np.asarray(values, dtype=float)
    if p is None:
        return {k: np.full(a.shape, np.nan) for k in interval_keys()}
    watts = board_power_w(p, a)
    span = p.board_w - p.idle_w
    low, high = POWER_PREDICTED_OVER_MEASURED
    out = {}
    for level in LEVELS:
        for end, ratio in (("low", 1.0 / high), ("high", 1.0 / low)):
            out[f"{end}{level}"] = np.clip((watts * ratio - p.idle_w) / span, 0.0, 1.0)
    return out


def activity_of_watts(values, setting: Setting) -> np.ndarray:
    """The boards' activity at IT watts per GPU ``values`` (§G2, inverted)."""
    p = setting.gpu.power
    if p is None:
        return np.full(np.shape(values), np.nan)
    board = np.asarray(values, dtype=float) - p.host_w
    return np.clip((board - p.idle_w) / (p.board_w - p.idle_w), 0.0, 1.0)


def figure_limits(
    name: str,
    values,
    setting: Setting,
    gpus,
    bound,
    figures=None,
    composed=None,
    peak=None,
    where=None,
    floors=None,
    floor_kind: str = STEP,
) -> dict[str, np.ndarray]:
    """The interval ends (``limits``) of figure ``name``, one per value: a kind's band
    (``figures``, default ``FIGURES``), a composition (``composed``, default ``COMPOSED``)
    or the activity; ``peak`` holds one kind's bands within the peak, ``where`` is
    (layouts, scenario) of its calibration class, ``floors`` the ideal bound's time of the
    ``floor_kind`` (a step's, or a prefill's TTFT) over each figure's, logged (``bands``)."""
    figures = FIGURES if figures is None else figures
    composed = COMPOSED if composed is None else composed
    if name in figures:
        kind, orientation = figures[name]
        n = np.size(values)
        ends = limits(
            values,
            orientation,
            bands(
                setting,
                kind,
                np.broadcast_to(gpus, n),
                np.broadcast_to(bound, n),
                peak,
                *_where(where, n),
            ),
            floors if kind == floor_kind else None,
        )
        if name.endswith(("mfu", "_fraction")):  # at most the peak, the whole
            ends = {k: np.minimum(v, 1.0) for k, v in ends.items()}
        return ends
    if name == "it_power_w_per_gpu":  # the band is the board's; the server's share stays
        power = setting.gpu.power
        ends = activity_limits(activity_of_watts(values, setting), setting)
        return {k: v if power is None else it_power_w(power, v) for k, v in ends.items()}
    if name in composed:
        return composed_limits(
            composed[name], values, setting, gpus, bound, peak, where, floors, floor_kind
        )  # fmt: skip
    if name == ACTIVITY:
        return activity_limits(values, setting)
    raise KeyError(name)


def _where(where, n: int) -> tuple:
    """(layouts, scenario) for ``bands``: ``where`` padded with their defaults."""
    layouts, scenario = (*(where or ()), None, None)[:2]
    return (layouts if layouts is not None else np.broadcast_to("TP", n)), scenario


def has_interval(name: str, figures=None, composed=None) -> bool:
    """Whether figure ``name`` carries an interval under an engine profile."""
    figures = FIGURES if figures is None else figures
    return (
        name in figures
        or name in (COMPOSED if composed is None else composed)
        or (name == ACTIVITY)
    )


def add_intervals(
    df: pd.DataFrame,
    setting: Setting,
    bound=None,
    gpus=None,
    columns=None,
    layout=None,
    bound_time=None,
    time_column: str = "latency_s",
) -> pd.DataFrame:
    """``df`` with the interval columns of every figure of ``FIGURES`` it has (``columns``:
    only those) and its ``support``, for rows of ``setting`` under an engine profile;
    unchanged for a bound. ``bound`` and ``gpus`` default to the table's ``bound`` and
    ``gpus`` columns, ``layout`` (a layout class, or one per row) to the degrees it states
    (``row_layouts``); ``bound_time``: each row's ideal step, against ``time_column``."""
    if not expected(setting) or df.empty:
        return df
    out = df.copy()
    found = column_intervals(
        df, len(df), setting, bound, gpus, columns, layout, bound_time, time_column
    )
    for column, values in found.items():
        out[column] = values
    return out


def column_intervals(
    columns,
    n: int,
    setting: Setting,
    bound=None,
    gpus=None,
    names=None,
    layout=None,
    bound_time=None,
    time_column: str = "latency_s",
) -> dict[str, np.ndarray]:
    """The interval columns (in ``add_intervals``' order) of ``n`` rows given as ``columns``
    (a DataFrame or a dict of equal-length arrays: the pandas-free path), then their
    ``support`` (``support_column``); {} for a bound. ``names``: only those figures;
    ``bound_time``: each row's step time under the ideal bound, which no step's end passes
    (its ``time_column`` against it: ``within_bound``)."""
    if not expected(setting) or n == 0:
        return {}
    bound = np.asarray(columns["bound"]) if bound is None else np.broadcast_to(bound, n)
    gpus = np.asarray(columns["gpus"]) if gpus is None else np.broadcast_to(gpus, n)
    if layout is None:
        layouts = row_layouts(columns, n, setting)
    else:  # one layout class, or one per row
        layouts = np.broadcast_to(np.asarray(layout, dtype=object), n).copy()
    out: dict[str, np.ndarray] = {}
    names = [c for c in (names or [c for c in columns if has_interval(c)]) if c in columns]
    floors = None if bound_time is None else bound_floors(bound_time, columns[time_column])
    for name in names:
        values = np.asarray(columns[name], dtype=float)
        ends = figure_limits(name, values, setting, gpus, bound, where=(layouts,), floors=floors)
        for column, (_, limits) in zip(interval_columns(name), _ordered(ends)):
            out[column] = limits
    if names:
        out["support"] = support_column(setting, names, layouts)
    return out


def bound_floors(bound_time, time) -> np.ndarray:
    """log(ideal step time / expected step time) of each row, at most 0 (a bound slower than
    the figure clips nothing), -inf where the bound has no finite time."""
    b, t = np.asarray(bound_time, dtype=float), np.asarray(time, dtype=float)
    ok = np.isfinite(b) & (b > 0) & np.isfinite(t) & (t > 0)
    ratio = np.where(ok, b / np.where(ok, t, 1.0), 0.0)
    with np.errstate(divide="ignore"):
        return np.minimum(np.log(ratio), 0.0)


def _ordered(ends: dict) -> list:
    return [(k, ends[k]) for k in interval_keys()]


def load_bound(setting: Setting, mean_batch: float, input_per_output: float) -> str:
    """Memory- or compute-bound for a run under load: the tokens of its mean step (the mean
    batch of decoding requests, each with its share of prompt tokens) against the ridge."""
    tokens = mean_batch * (1.0 + input_per_output) if math.isfinite(mean_batch) else 0.0
    return str(bound_of_tokens(setting, tokens))


def load_intervals(result) -> dict:
    """The interval columns of a run under load (a ``LoadResult``): its latencies, and its
    rates and prices when it does not keep up (``LOAD_RATES``); {} for an ideal bound."""
    setting = result.setting
    if setting is None or not expected(setting):
        return {}
    row = {
        f"{m}_{s}_s": getattr(getattr(result, f"{m}_s"), s)
        for m in ("ttft", "tpot", "e2e")
        for s in ("mean", "p50", "p90", "p99")
    }
    names = [*LOAD_LATENCIES, *LOAD_OCCUPANCY]
    row.update({n: getattr(result, n) for n in LOAD_OCCUPANCY})
    sessions = ["later_turn_ttft_p99_s"] if result.requests_per_session is not None else []
    if not result.offered_rates:  # rates the engine reaches, not the offered load's: expected
        names += LOAD_RATES
        row.update({n: getattr(result, n) for n in LOAD_RATES})
        sessions += ["usd_per_session"] if sessions else []
    for name in sessions:  # a session's figures, where the run has sessions (§E9)
        if math.isfinite(getattr(result, name)):
            names.append(name)
            row[name] = getattr(result, name)
    # energy and power: a slower engine that keeps up is busier, so they carry the throughput
    # band and the power model's whether the deployment keeps up or not (``COMPOSED``)
    for name in COMPOSED:
        value = getattr(result, name, None)
        if value is not None and math.isfinite(value):
            names.append(name)
            row[name] = value
    power = None
    if "it_power_kw" in names and result.gpus > 0:  # within the GPUs' idle and full draw
        names.remove("it_power_kw")
        power = row.pop("it_power_kw") * 1e3 / result.gpus
    ratio = (
        result.input_tokens_per_s / result.output_tokens_per_s
        if result.output_tokens_per_s > 0
        else 0.0
    )
    bound = load_bound(setting, result.mean_batch, ratio)
    where = load_where(result)
    # no run steps faster than the ideal bound's one token of one request on the instance:
    # the time per token's band stops there, and the figures moving with it (§F12)
    floor = one_step_floor_s(ideal(setting), (result.gpus_per_instance,))
    floors = bound_floors([floor], [row["tpot_mean_s"]]) if floor > 0.0 else None
    out = figure_intervals(
        row, names, setting, result.gpus_per_instance, bound, LOAD_FIGURES, LOAD_COMPOSED,
        where=where, floors=floors, floor_kind="TPOT",
    )  # fmt: skip
    if result.closed_loop and math.isfinite(result.rate_per_s):  # the rate the clients reach
        reached = {"rate_per_s": FIGURES["throughput_requests_per_s"]}
        values = {"rate_per_s": result.rate_per_s}
        out.update(
            figure_intervals(
                values,
                ["rate_per_s"],
                setting,
                result.gpus_per_instance,
                bound,
                reached,
                where=where,
            )  # fmt: skip
        )
    pooled = bool(result.prefill_gpus_per_instance)  # prompts on other GPUs: TPOT's alone
    for n in (*LOAD_LATENCIES, *sessions):  # each statistic too, a median below the mean's
        if n.startswith("tpot") or (FIGURES[n][0] in ("TPOT", "TTFT") and not pooled):
            for column in (c for c in interval_columns(n) if c in out):
                out[column] = max(out[column], min(floor, row[n]))
    for column in interval_columns("mean_batch"):  # no more requests than an instance holds
        if column in out:
            out[column] = min(out[column], result.batch_limit)
    if power is not None:
        ends = figure_limits("it_power_w_per_gpu", [power], setting, [1.0], [bound], where=where)
        kw = {k: float(v[0]) * result.gpus / 1e3 for k, v in ends.items()}
        out.update(zip(interval_columns("it_power_kw"), [kw[k] for k in interval_keys()]))
    return out


def held_intervals(result, max_rate_per_s: float) -> dict:
    """The interval columns of ``max_rate_per_s``, the load a deployment holds within its
    targets (a throughput figure), read at ``result``, its run at that load; {} for a bound."""
    setting = result.setting
    if setting is None or not expected(setting):
        return {}
    out = result.output_tokens_per_s
    ratio = result.input_tokens_per_s / out if out > 0 else 0.0
    bound = load_bound(setting, result.mean_batch, ratio)
    values = {"max_rate_per_s": max_rate_per_s}
    return figure_intervals(
        values, ["max_rate_per_s"], setting, result.gpus_per_instance, bound,
        where=load_where(result),
    )  # fmt: skip


#: The degrees of an instance's layout as a run under load describes it
#: (``model.mixed_step.EngineLayout.describe``: "8 GPUs: TP2 (attention TP2), PP4, 1-D").
_LAYOUT = re.compile(r"TP(\d+) \(attention TP([\d.]+)\), PP(\d+)")


def load_where(result) -> tuple[list[str], str]:
    """([layout class], scenario) of a run under load (``described_layout``): served under
    load (server), or closed-loop where its clients are a closed loop."""
    moe = result.setting is not None and result.setting.model.is_moe
    pooled = getattr(result, "prefill_gpus_per_instance", 0) > 0
    scenario = "closed_loop" if getattr(result, "closed_loop", False) else "server"
    return [described_layout(getattr(result, "layout", ""), moe, pooled)], scenario


def described_layout(text, moe: bool, disaggregated: bool = False) -> str:
    """The layout class of an instance whose layout a run under load describes (``text``):
    disaggregated where it has a prefill pool, else by its pipeline stages and, for an MoE
    model, attention narrower than its tensor group (``support.layout_class``)."""
    found = _LAYOUT.search(str(text or ""))
    tensor, attention, pipeline = (float(g) for g in found.groups()) if found else (1, 1, 1)
    return layout_class(moe, pipeline, attention < tensor, disaggregated)


def load_support(result) -> Support | None:
    """The support of a run under load's held load and latencies (``support_of``); None for
    an ideal bound."""
    setting = result.setting
    if setting is None or not expected(setting):
        return None
    layouts, scenario = load_where(result)
    return support_of(setting, ("throughput", "TPOT", "TTFT"), layouts[0], scenario)


def figure_intervals(
    values: dict,
    names,
    setting: Setting,
    gpus,
    bound: str,
    figures=None,
    composed=None,
    peak=None,
    where=None,
    floors=None,
    floor_kind: str = STEP,
) -> dict:
    """The interval columns of single figures ``values[name]`` for ``names`` (kinds from
    ``figures``, default ``FIGURES``): one instance of ``gpus`` GPUs whose steps are
    ``bound``-bound; ``peak`` holds them within the peak, ``where`` is (layouts, scenario)
    of their calibration class (``bands``), ``floors`` within the ideal bound
    (``figure_limits``)."""
    out = {}
    for name in names:
        ends = figure_limits(
            name, [values[name]], setting, [gpus], [bound], figures, composed, peak, where,
            floors, floor_kind,
        )  # fmt: skip
        for column, (_, v) in zip(interval_columns(name), _ordered(ends)):
            out[column] = float(v[0])
    return out


def series_intervals(
    row: pd.Series,
    setting: Setting,
    gpus,
    bound: str,
    figures=None,
    composed=None,
    where=None,
    floors=None,
    floor_kind: str = STEP,
) -> pd.Series:
    """One result (``request``'s view; ``prefill``'s with ``figures=PREFILL_FIGURES``) with
    the interval entries of its figures, each after its figure, in the calibration class
    ``where`` gives (``bands``), the ``floor_kind``'s within the ideal bound by ``floors``
    (``bound_floors``); unchanged for a bound."""
    if not expected(setting):
        return row
    names = [n for n in row.index if has_interval(n, figures, composed)]
    values = row.to_dict()
    peak = _peak(values, figures)
    ends = figure_intervals(
        values, names, setting, gpus, bound, figures, composed, peak, where, floors, floor_kind
    )
    out = {}
    for key, value in row.items():
        out[key] = value
        for column in interval_columns(key) if key in names else ():
            out[column] = ends[column]
    import pandas as pd  # on first use

    return pd.Series(out)


def _peak(values: dict, figures) -> PeakCap | None:
    """The peak a result's figures stop at: its MFU's kind and orientation in ``figures``
    and its MFU (None: it states none)."""
    if figures is None or "mfu" not in figures or "mfu" not in values:
        return None
    kind, orientation = figures["mfu"]
    mfu = float(values["mfu"])
    return (kind, orientation, mfu) if math.isfinite(mfu) else None


def ideal(setting: Setting) -> Setting:
    """The setting's ideal bound: the same modelling choices with no engine profile (the
    achievable preset's bound is the refined preset) and so no engine's schedule (two-batch
    overlap: the bound charges the exchange in series, docs/model-part-f.md §F7)."""
    a = setting.assumptions
    if not a.achievable:
        return setting
    return setting.replace(assumptions=ideal_assumptions(a))


def ideal_assumptions(a: Assumptions) -> Assumptions:
    """The preset's ideal bound (``ideal``): itself without an engine profile, else the same
    choices with none (the achievable preset's bound is the refined preset)."""
    if not a.achievable:
        return a
    name = "refined" if a.name == "achievable" else a.name
    return dataclasses.replace(a, name=name, engine=None, two_batch_overlap=False, deepep=False)


def coverage_note(setting: Setting, layout: str = "TP", scenario=None, names=None) -> str | None:
    """One line when a configuration of the setting (``layout``, ``scenario``) is not in
    support: the class with the fewest residuals among its kinds (``support_of``; those of the
    figures ``names`` where given, as ``support_column`` takes them, else all three), how many
    it has, and the band its intervals take instead (docs/model.md §F12); None in support."""
    if not expected(setting):
        return None
    shown = kinds_of(names or ())
    s = support_of(setting, shown or ("throughput", "TPOT", "TTFT"), layout, scenario)
    return None if s.status == "in support" else support_line(s)
