"""Decoding configurations: a setting compiled into step models, and given (GPUs, batch)
configurations described in full - layout, speed, cost, MFU and where the time goes
(docs/model.md §A5-§A7).

``Decoder`` is what the optimiser searches over and what ``point`` evaluates. ``describe``
returns one row per configuration with the columns of ``DETAIL_COLUMNS`` (and a few more);
these columns are the same for the API, the command line and every table.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import SpecError
from ..model.economics import mfu, usd_per_mtok
from ..model.latency import (
    ADDITIVE_PARTS,
    FULL_READS,
    Breakdown,
    StepModel,
    bound_label,
    stage_busy_share,
    step_batch,
)
from ..model.layouts import (
    Layout,
    best_layout,
    best_layouts,
    check_whole_batch,
    check_whole_gpus,
    is_whole,
    uneven_reason,
    whole_layout,
)
from ..model.machine import min_gpus
from ..model.step_calls import expert_degree
from ..model.workload import compile_workload
from .energy import ENERGY_COLUMNS, energy_columns
from .figure_labels import expected
from .setting import Setting, check_values
from .speculative import combine, draft_labels, draft_tokens, target_tokens

if TYPE_CHECKING:
    import pandas as pd

    from .prefill import FirstToken

#: Columns that say what a configuration is and what it achieves, in display order.
POINT_COLUMNS = ["tokens_per_s", "usd_per_mtok", "gpus", "batch"]
LAYOUT_COLUMNS = [
    "pipeline_degree",
    "tensor_degree",
    "attention_degree",
    "expert_degree",
    "tp_dims",
    "draft_tokens",
]
SUMMARY_COLUMNS = POINT_COLUMNS + LAYOUT_COLUMNS + ["mfu", "bound"]
#: Everything that explains a point: its summary, latency, where the latency goes and the
#: energy it takes (docs/model.md §G2).
DETAIL_COLUMNS = SUMMARY_COLUMNS + ["latency_s", *ADDITIVE_PARTS, *ENERGY_COLUMNS]
#: Both sides of the roofline, besides the additive parts.
SIDES = ("memory_time_s", "compute_time_s", *FULL_READS)


class Decoder:
    """A setting compiled: the target's (and the draft's or draft heads') step models, and
    with a prompt length the time to first token on each configuration's own layout."""

    def __init__(self, setting: Setting, integer_layouts: bool = False) -> None:
        self.setting = setting
        a = setting.assumptions
        self.integer_layouts = integer_layouts
        self._bound: Decoder | None = None  # the ideal bound's (``bound_decoder``)
        self.work = compile_workload(setting.model, a)
        spec = setting.spec
        companion, copies = spec.resident(a) if spec is not None else (None, 0)
        self.target = StepModel(
            self.work, setting.gpu, a, integer_layouts, companion=companion, companion_copies=copies
        )
        self.draft = None
        if spec is not None:
            self.draft = StepModel(spec.draft_workload(a), setting.gpu, a, integer_layouts)
        #: Time to first token on each configuration's own layout, with a prompt length (§B8).
        self.first: FirstToken | None = None
        if setting.prompt_tokens is not None:  # serving/prefill.py is loaded only then
            from .prefill import FirstToken

            self.first = FirstToken(setting, self.target, integer_layouts)

    @property
    def target_terms(self):
        """The TTFT of a target layout (``model.layouts.best_layout``'s ``per_layout``)."""
        return self.first.target_by_dims if self.first is not None else None

    @property
    def draft_terms(self):
        """The draft's prefill on a draft layout, for the TTFT of speculative decoding."""
        return self.first.draft_by_dims if self.first is not None and self.draft else None

    def budget(self, verify: int, draft_layouts: dict[int, Layout] | None):
        """The TTFT left for the target's layouts verifying ``verify`` tokens (None: no
        limit): the limit, less the draft's prefill when the draft runs (verify > 1)."""
        limit = self.setting.ttft_max_s
        if self.first is None or limit is None:
            return None
        prefill = draft_prefill_layout(draft_layouts)
        if verify > 1 and prefill is not None and prefill.value is not None:
            return limit - prefill.value
        return limit

    @property
    def min_gpus(self) -> float:
        """The fewest GPUs whose HBM holds the target's weights (§A7's grid start; draft heads
        take memory too, which the capacity check charges, but the grid stays the target's so
        that settings with and without heads are compared on the same points)."""
        return min_gpus(self.work.weights_total_bytes, self.setting.gpu)

    def gamma_values(self) -> list[int]:
        """Target passes needed, tokens per request: 1 (no speculation) and every verification
        (the draft lengths of §A6, the trees of §C3)."""
        return target_tokens(self.setting.spec)

    def draft_values(self) -> list[int]:
        """Draft passes needed, tokens per request (§A6: only 1)."""
        return draft_tokens(self.setting.spec)

    def layouts(self, N, B) -> tuple[dict[int, Layout], dict[int, Layout] | None]:
        """The best layout of every target pass and of every draft pass at the points (N, B);
        with a TTFT limit, the best among the layouts within it (§B8)."""
        s = self.setting
        ctx, pipe = s.context_tokens, s.pipeline
        if self.first is None:  # no per-layout values: every pass's layouts at once
            draft = None
            if self.draft is not None:
                draft = best_layouts(self.draft, N, B, self.draft_values(), ctx, pipe)
            return best_layouts(self.target, N, B, self.gamma_values(), ctx, pipe), draft
        draft = None
        if self.draft is not None:
            draft = {
                d: best_layout(self.draft, N, B, d, ctx, pipe, self.draft_terms)
                for d in self.draft_values()
            }
        target = {
            g: best_layout(
                self.target, N, B, g, ctx, pipe, self.target_terms, self.budget(g, draft)
            )
            for g in self.gamma_values()
        }
        return target, draft

    def whole_layouts(self, N, B) -> tuple[dict[int, Layout], dict[int, Layout] | None]:
        """The best whole layouts of configurations (N, B) of one whole GPU count (§B7: what
        an engine launches), as ``layouts`` gives §A5's; the decoder is built with
        ``integer_layouts``."""
        s = self.setting
        n = int(np.ravel(N)[0])
        B = np.asarray(B, dtype=float)
        ctx, pipe = s.context_tokens, s.pipeline
        draft = None
        if self.draft is not None and s.spec is not None:
            head = s.spec.draft_architecture
            draft = {
                x: whole_layout(self.draft, head, n, B, x, ctx, pipe, self.draft_terms)
                for x in self.draft_values()
            }
        target = {
            g: whole_layout(
                self.target, s.model, n, B, g, ctx, pipe, self.target_terms, self.budget(g, draft)
            )
            for g in self.gamma_values()
        }
        return target, draft

    def describe(self, N, B, layouts=None, draft_layouts=None) -> pd.DataFrame:
        """Layouts, breakdowns and economics of configurations (N, B) (1-D arrays).

        ``layouts`` ({S: Layout}) and ``draft_layouts`` ({S: Layout}) give the layouts when
        they are already known (discrete search); otherwise the search of §A5 finds them.
        """
        import pandas as pd  # on first use: ``describe_columns`` needs none

        return pd.DataFrame(self.describe_columns(N, B, layouts, draft_layouts))

    def describe_columns(self, N, B, layouts=None, draft_layouts=None) -> dict[str, np.ndarray]:
        """``describe``'s table as {column: 1-D array}, in its order, without pandas (the
        ``point`` command's output path)."""
        N = np.atleast_1d(np.asarray(N, dtype=float))
        B = np.atleast_1d(np.asarray(B, dtype=float))
        if layouts is None:
            layouts, draft_layouts = self.layouts(N, B)
        draft_lat = (
            {d: lay.latency_s for d, lay in draft_layouts.items()} if draft_layouts else None
        )
        latency, verify = combine(
            {g: lay.latency_s for g, lay in layouts.items()}, draft_lat, self.setting.spec
        )
        bd, busy = self._breakdown(N, B, verify, layouts, draft_layouts)
        chosen = chosen_layout(layouts, verify)
        df = self._frame(N, B, latency, draft_labels(self.setting.spec, verify), chosen, bd, busy)
        if self.first is not None:
            df["ttft_s"] = np.broadcast_to(self._ttft(N, B, verify, chosen, draft_layouts), N.shape)
        first = [c for c in DETAIL_COLUMNS if c in df] + (["ttft_s"] if "ttft_s" in df else [])
        df = {c: df[c] for c in first + [c for c in df if c not in first]}
        if expected(self.setting):  # expected figures' intervals (§F12); a bound has none
            from .intervals import column_intervals

            floor = None
            if len(N):
                floor = self.bound_latency(N, B, verify, layouts, draft_layouts)
            df.update(column_intervals(df, len(N), self.setting, bound_time=floor))
            if "ttft_s" in df and len(N):  # its first token no sooner than the bound's
                from .derived_intervals import within_ideal
                from .intervals import FIGURES

                bare = dataclasses.replace(chosen, value=None)  # not this decoder's own times
                drafts = draft_layouts and {
                    k: dataclasses.replace(v, value=None) for k, v in draft_layouts.items()
                }
                first = {"ttft_s": self.bound_decoder()._ttft(N, B, verify, bare, drafts)}
                df.update(within_ideal(df, first, {"ttft_s": FIGURES["ttft_s"]}))
        return df

    def bound_decoder(self) -> Decoder:
        """The decoder of the setting's ideal bound, with this one's layout rule (made once)."""
        if self._bound is None:
            from .intervals import ideal

            self._bound = Decoder(ideal(self.setting), self.integer_layouts)
        return self._bound

    def bound_latency(self, N, B, verify, layouts, draft_layouts) -> np.ndarray:
        """Time per generated token of the setting's ideal bound at configurations (N, B) on
        the same layouts and speculation cycle (``verify``): what the engine would reach there
        with nothing lost (``intervals.within_bound``)."""
        bound = self.bound_decoder()
        return np.asarray(bound._breakdown(N, B, verify, layouts, draft_layouts)[0].latency_s)

    def _ttft(self, N, B, verify, chosen: Layout, draft_layouts):
        """Time to first token on the chosen layouts, plus the draft's prefill where the
        chosen cycle speculates."""
        first = self.first
        assert first is not None, "a decoder asked for first tokens is built with its prompts"
        ttft = first.target_s(N, B, chosen) if chosen.value is None else chosen.value
        prefill = draft_prefill_layout(draft_layouts)
        if prefill is not None:
            pre = first.draft_s(N, B, prefill) if prefill.value is None else prefill.value
            ttft = ttft + np.where(verify > 1, pre, 0.0)
        return ttft

    def _breakdown(self, N, B, verify, layouts, draft_layouts) -> tuple[Breakdown, Breakdown]:
        """The breakdown per generated token of the chosen cycle at every point: the target's
        verification pass and the cycle's draft passes, divided by the tokens a cycle yields;
        and the same with each pass's sides as its stages work them (``_working``), what
        the boards' power reads (§G2)."""
        ctx = self.setting.context_tokens
        spec, draft = self.setting.spec, self.draft
        cycles = {c.verify_tokens: c for c in spec.cycles()} if draft and spec else {}
        out = working = None
        for g, lay in layouts.items():
            sel = verify == g
            if not np.any(sel):
                continue
            part = self.target.breakdown(
                N[sel],
                B[sel],
                g,
                ctx,
                lay.pipeline[sel],
                lay.attention_divisor[sel],
                lay.two_d[sel],
            )
            busy = _working(
                part, stage_busy_share(self.target.assumptions, B[sel], lay.pipeline[sel])
            )
            if g in cycles:
                drafts, busy_drafts = [], []
                for tokens, count in cycles[g].draft_passes:
                    d = draft_layouts[tokens].select(sel)
                    assert draft is not None  # cycles come from a draft
                    bd = draft.breakdown(
                        N[sel], B[sel], tokens, ctx, d.pipeline, d.attention_divisor, d.two_d
                    )
                    drafts.append((count, bd))
                    busy_drafts.append(
                        (
                            count,
                            _working(bd, stage_busy_share(draft.assumptions, B[sel], d.pipeline)),
                        )
                    )
                part = _combine(part, drafts, 1.0 / cycles[g].expected_tokens)
                busy = _combine(busy, busy_drafts, 1.0 / cycles[g].expected_tokens)
            out, working = _scatter(out, sel, part), _scatter(working, sel, busy)
        if out is None or working is None:
            return _empty_breakdown(N.shape), _empty_breakdown(N.shape)
        return out, working

    def _frame(self, N, B, latency, gamma, layout: Layout, bd: Breakdown, busy: Breakdown) -> dict:
        s = self.setting
        p = layout.pipeline
        t = N / p
        b = (
            step_batch(self.target.assumptions, B, p) / p
        )  # a micro-batch's sequences (§B12: at least one)
        expert = np.ones(N.shape)
        moe = [g for g in self.work.groups if g.experts > 1]
        if moe:
            g0 = moe[0]
            ep_min = self.target.assumptions.expert_parallel_min_batch_per_sparsity
            expert = expert_degree(
                b,
                t,
                g0.experts,
                ep_min * g0.sparsity,
                self.integer_layouts,
                self.work.redundant_experts,
            ) + np.zeros(N.shape)
        flop = self.work.total_flop(B, 1, s.context_tokens)
        parts = {name: getattr(bd, name) for name in (*ADDITIVE_PARTS, *SIDES)}
        with np.errstate(divide="ignore", invalid="ignore"):
            df = _columns(
                {
                    "tokens_per_s": 1.0 / latency,
                    "usd_per_mtok": usd_per_mtok(N, latency, B, s.gpu.price_usd_per_hour),
                    "latency_s": latency,
                    "gpus": N,
                    "batch": B,
                    "pipeline_degree": p,
                    "tensor_degree": t,
                    "attention_degree": t / layout.attention_divisor,
                    "expert_degree": expert,
                    "tp_dims": layout.tp_dims(N),
                    "micro_batch": b,
                    "draft_tokens": gamma,
                    "mfu": mfu(flop, N, self.target.machine.peak_flop_per_s, latency),
                    "throughput_tokens_per_s": B / latency,
                    "tokens_per_s_per_gpu": B / latency / N,
                    **parts,
                },
                N.shape,
            )
        df["bound"] = np.broadcast_to(
            bound_label(bd.weight_read_s, bd.kv_read_s, bd.activation_read_s, bd.arithmetic_s),
            N.shape,
        )
        energy = energy_columns(
            s,
            N,
            B / latency,
            latency,
            busy.compute_time_s,
            busy.memory_time_s,
            busy.collective_bandwidth_s,
        )
        df.update(_columns(energy, N.shape))
        return df


def _columns(values: dict, shape) -> dict[str, np.ndarray]:
    """{name: array of ``shape``}: scalars broadcast, as a DataFrame built from ``values``
    holds them."""
    return {k: np.broadcast_to(np.asarray(v), shape) for k, v in values.items()}


def draft_prefill_layout(draft_layouts: dict[int, Layout] | None) -> Layout | None:
    """The draft layout that prefills the prompt: the one of its smallest pass."""
    return draft_layouts[min(draft_layouts)] if draft_layouts else None


def chosen_layout(layouts: dict[int, Layout], verify) -> Layout:
    """The target layout of the chosen cycle at every point (with its value)."""
    shape = np.shape(verify)
    p, a, two = np.ones(shape), np.ones(shape), np.ones(shape, dtype=bool)
    known = all(lay.value is not None for lay in layouts.values())
    value = np.full(shape, np.inf) if known else None
    for g, lay in layouts.items():
        sel = verify == g
        p[sel] = np.asarray(lay.pipeline)[sel]
        a[sel] = np.asarray(lay.attention_divisor)[sel]
        two[sel] = np.asarray(lay.two_d)[sel]
        if value is not None:
            value[sel] = np.asarray(lay.value)[sel]
    return Layout(None, p, a, two, value)


def _combine(target: Breakdown, drafts: list, scale: float) -> Breakdown:
    """Per generated token of a speculative cycle: scale·(target pass + Σ n·draft pass)."""

    def total(name):
        value = getattr(target, name)
        for count, draft in drafts:
            value = value + count * getattr(draft, name)
        return scale * value

    return Breakdown(**{f.name: total(f.name) for f in dataclasses.fields(Breakdown)})


def _working(bd: Breakdown, share) -> Breakdown:
    """``bd`` with the sides its stages work scaled by their busy ``share`` (§B12: with fewer
    requests than stages each idles the rest of the step, ``latency.stage_busy_share``)."""
    return dataclasses.replace(
        bd,
        compute_time_s=bd.compute_time_s * share,
        memory_time_s=bd.memory_time_s * share,
        collective_bandwidth_s=bd.collective_bandwidth_s * share,
    )


def _empty_breakdown(shape) -> Breakdown:
    return Breakdown(**{f.name: np.zeros(shape) for f in dataclasses.fields(Breakdown)})


def _scatter(out: Breakdown | None, sel, part: Breakdown) -> Breakdown:
    """``out`` with the points ``sel`` taken from ``part`` (a new zero breakdown if None)."""
    out = out if out is not None else _empty_breakdown(np.shape(sel))
    for f in dataclasses.fields(Breakdown):
        getattr(out, f.name)[sel] = getattr(part, f.name)
    return out


def uneven(setting: Setting, gpus, continuous: bool = True, pipeline=None) -> str | None:
    """Why no whole layout of ``gpus`` GPUs serves the setting when it is that none splits the
    model evenly (``model.layouts.uneven_reason``); None otherwise. ``pipeline``: whether the
    layouts may have pipeline stages (default: the setting's; False for a tensor-parallel
    worker such as an exported prefill worker)."""
    target = Decoder(setting, integer_layouts=True).target
    stages = setting.pipeline if pipeline is None else pipeline
    return uneven_reason(target, setting.model.name, float(gpus), stages, continuous)


def memory_reason(setting: Setting, gpus) -> str:
    """Why a configuration of ``gpus`` GPUs does not fit, in words: its weights alone past
    the GPUs' HBM (with the fix: fewer weight bits or more GPUs), else the weights with the
    batch's KV cache."""
    work = compile_workload(setting.model, setting.assumptions)
    weights, hbm = work.weights_total_bytes, float(gpus) * setting.gpu.hbm_capacity_bytes
    if weights >= hbm:
        return (
            f"its weights ({weights / 1e9:,.0f} GB at {setting.precision.weight_bits:g} bits) "
            f"exceed the {float(gpus):g} GPUs' {hbm / 1e9:,.0f} GB of HBM: fewer weight bits "
            "(--weight-bits) or more GPUs"
        )
    return "weights plus KV cache exceed HBM: a smaller batch, fewer KV-cache bits or more GPUs"


#: What every output of configurations with real-valued figures says (``continuous_note``).
CONTINUOUS_NOTE = (
    "note: real-valued GPUs, batches and degrees are the paper's continuous model "
    "(docs/model.md §A5); discrete (--discrete, or discrete: true in a scenario) gives whole "
    "ones, a layout an engine can launch (§B7)"
)


def continuous_note(rows) -> str | None:
    """``CONTINUOUS_NOTE`` when a described configuration (a row: a Series or a dict) or a
    table of them (a DataFrame, or a dict of arrays) has a GPU count, batch or degree that is
    not a whole number; None otherwise."""
    names = ("gpus", "batch", *LAYOUT_COLUMNS[:4])
    if isinstance(rows, dict):  # without pandas
        cells = [np.asarray(rows[c]).ravel().tolist() for c in names if c in rows]
        values = np.array([_number(v) for column in cells for v in column], dtype=float)
    else:
        import pandas as pd

        frame = rows.to_frame().T if isinstance(rows, pd.Series) else rows
        cols = [c for c in names if c in frame.columns]
        values = pd.to_numeric(frame[cols].stack(), errors="coerce").to_numpy(dtype=float)
    real = np.isfinite(values) & ~is_whole(np.where(np.isfinite(values), values, 0.0))
    return CONTINUOUS_NOTE if real.any() else None


def _number(value) -> float:
    """A cell as ``pd.to_numeric(errors="coerce")`` reads it: a number, else NaN."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def evaluate(setting: Setting, gpus, batch, discrete: bool = False) -> pd.DataFrame:
    """Latency, speed, cost, MFU, layout and breakdown of given (GPUs, batch) configurations
    (``gpus`` and ``batch`` broadcast against each other), each at its best layout: §A5's
    continuous ones (the paper's model, real-valued degrees), or with ``discrete`` the whole
    layouts of §B7 (whole GPUs; what an engine launches)."""
    import pandas as pd  # on first use: ``evaluate_columns`` needs none

    return pd.DataFrame(evaluate_columns(setting, gpus, batch, discrete))


def evaluate_columns(setting: Setting, gpus, batch, discrete: bool = False) -> dict:
    """``evaluate``'s table as {column: 1-D array}, in its order, without pandas."""
    gpus, batch = check_values("gpus", gpus), check_values("batch", batch)
    try:
        gpus, batch = np.broadcast_arrays(gpus, batch)
    except ValueError:
        raise SpecError(
            "argument",
            "gpus",
            f"{gpus.size} values do not pair with the {batch.size} values of batch",
            "give as many of each, or one of either",
        ) from None
    if not discrete:
        return Decoder(setting).describe_columns(gpus, batch)
    check_whole_gpus(gpus)
    check_whole_batch(batch)
    N = np.asarray(gpus, dtype=float).ravel()
    B = np.asarray(batch, dtype=float).ravel()
    decoder = Decoder(setting, integer_layouts=True)
    parts, order = [], []
    for n in np.unique(N):  # whole layouts are searched one GPU count at a time
        at = np.flatnonzero(n == N)
        layouts = decoder.whole_layouts(N[at], B[at])
        parts.append(decoder.describe_columns(N[at], B[at], *layouts))
        order.append(at)
    rank = np.argsort(np.concatenate(order), kind="stable")
    return {c: np.concatenate([part[c] for part in parts])[rank] for c in parts[0]}
