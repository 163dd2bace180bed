"""Decoding configurations: a setting compiled into step models, and given (GPUs, batch)
configurations described in full - layout, speed, cost, MFU and where the time goes
(docs/model.md §A5-§A7).

``Decoder`` is what the optimiser searches over and what ``point`` evaluates. ``describe``
returns one row per configuration with the columns of ``DETAIL_COLUMNS`` (and a few more);
these columns are the same for the API, the command line and every table.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..errors import SpecError
from ..model.economics import mfu, usd_per_mtok
from ..model.latency import ADDITIVE_PARTS, Breakdown, StepModel, expert_degree
from ..model.layouts import Layout, best_layout
from ..model.workload import compile_workload
from .prefill import prefill_latency_s
from .setting import Setting, check_values
from .speculative import combine, expected_tokens

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
#: Everything that explains a point: its summary, latency and where the latency goes.
DETAIL_COLUMNS = SUMMARY_COLUMNS + ["latency_s", *ADDITIVE_PARTS]
#: Both sides of the roofline, besides the additive parts.
SIDES = ("memory_time_s", "compute_time_s")


class Decoder:
    """A setting compiled: the target's (and the draft's) step models."""

    def __init__(self, setting: Setting, integer_layouts: bool = False) -> None:
        self.setting = setting
        a = setting.assumptions
        self.integer_layouts = integer_layouts
        self.work = compile_workload(setting.model, a)
        self.target = StepModel(self.work, setting.gpu, a, integer_layouts)
        self.draft = None
        if setting.spec is not None:
            dwork = compile_workload(setting.spec.draft, a)
            self.draft = StepModel(dwork, setting.gpu, a, integer_layouts)

    @property
    def min_gpus(self) -> float:
        """The fewest GPUs whose HBM holds the weights (§A7's grid start)."""
        return self.target.weights_total_bytes / self.setting.gpu.hbm_capacity_bytes

    def gamma_values(self) -> list[int]:
        """Target passes needed: S = 1 (no speculation) and every draft length (§A6)."""
        return [1] + (list(self.setting.spec.draft_lengths) if self.setting.spec else [])

    def layouts(self, N, B) -> tuple[dict[int, Layout], Layout | None]:
        """The best layout of every target pass and of the draft at the points (N, B)."""
        s = self.setting
        ctx, pipe = s.context_tokens, s.pipeline
        target = {g: best_layout(self.target, N, B, g, ctx, pipe) for g in self.gamma_values()}
        draft = best_layout(self.draft, N, B, 1, ctx, pipe) if self.draft else None
        return target, draft

    def describe(self, N, B, layouts=None, draft_layout=None) -> pd.DataFrame:
        """Layouts, breakdowns and economics of configurations (N, B) (1-D arrays).

        ``layouts`` ({γ: Layout}) and ``draft_layout`` give the layouts when they are already
        known (discrete search); otherwise the search of §A5 finds them.
        """
        N = np.atleast_1d(np.asarray(N, dtype=float))
        B = np.atleast_1d(np.asarray(B, dtype=float))
        if layouts is None:
            layouts, draft_layout = self.layouts(N, B)
        draft_lat = draft_layout.latency_s if draft_layout is not None else None
        latency, gamma = combine(
            {g: lay.latency_s for g, lay in layouts.items()}, draft_lat, self.setting.spec
        )
        bd = self._breakdown(N, B, gamma, layouts, draft_layout)
        chosen = _chosen_layout(layouts, gamma)
        df = self._frame(N, B, latency, gamma, chosen, bd)
        if self.setting.prompt_tokens is not None:
            df["ttft_s"] = prefill_latency_s(self.setting, N, self.integer_layouts) + latency
        return df

    def _breakdown(self, N, B, gamma, layouts, draft_layout) -> Breakdown:
        """The breakdown per generated token of the chosen draft length at every point: for
        γ > 1 the target pass and γ draft passes, divided by the tokens a cycle yields."""
        ctx = self.setting.context_tokens
        out = None
        for g, lay in layouts.items():
            sel = gamma == g
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
            if g > 1:
                d = draft_layout.select(sel)
                draft = self.draft.breakdown(
                    N[sel], B[sel], 1, ctx, d.pipeline, d.attention_divisor, d.two_d
                )
                scale = 1.0 / expected_tokens(self.setting.spec.acceptance, g)
                part = _combine(part, draft, g, scale)
            out = _scatter(out, sel, part)
        return out if out is not None else _empty_breakdown(N.shape)

    def _frame(self, N, B, latency, gamma, layout: Layout, bd: Breakdown) -> pd.DataFrame:
        s = self.setting
        p = layout.pipeline
        t = N / p
        b = B / p
        expert = np.ones(N.shape)
        moe = [g for g in self.work.groups if g.experts > 1]
        if moe:
            g0 = moe[0]
            ep_min = s.assumptions.expert_parallel_min_batch_per_sparsity
            expert = expert_degree(
                b, t, g0.experts, ep_min * g0.sparsity, self.integer_layouts
            ) + np.zeros(N.shape)
        flop = self.work.total_flop(B, 1, s.context_tokens)
        parts = {name: getattr(bd, name) for name in (*ADDITIVE_PARTS, *SIDES)}
        with np.errstate(divide="ignore", invalid="ignore"):
            df = pd.DataFrame(
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
                    "tp_dims": np.where(layout.two_d, "2D", "1D"),
                    "micro_batch": b,
                    "draft_tokens": gamma,
                    "mfu": mfu(flop, N, self.target.machine.peak_flop_per_s, latency),
                    "throughput_tokens_per_s": B / latency,
                    "tokens_per_s_per_gpu": B / latency / N,
                    **parts,
                }
            )
        df["bound"] = np.where(df["memory_time_s"] >= df["compute_time_s"], "memory", "compute")
        return df


def _chosen_layout(layouts: dict[int, Layout], gamma) -> Layout:
    """The target layout of the chosen draft length at every point."""
    shape = np.shape(gamma)
    p, a, two = np.ones(shape), np.ones(shape), np.ones(shape, dtype=bool)
    for g, lay in layouts.items():
        sel = gamma == g
        p[sel], a[sel], two[sel] = lay.pipeline[sel], lay.attention_divisor[sel], lay.two_d[sel]
    return Layout(None, p, a, two)


def _combine(target: Breakdown, draft: Breakdown, gamma: int, scale: float) -> Breakdown:
    """Per generated token of a speculative cycle: scale·(target pass + γ·draft pass)."""
    return Breakdown(
        **{
            f.name: scale * (getattr(target, f.name) + gamma * getattr(draft, f.name))
            for f in dataclasses.fields(Breakdown)
        }
    )


def _empty_breakdown(shape) -> Breakdown:
    return Breakdown(**{f.name: np.zeros(shape) for f in dataclasses.fields(Breakdown)})


def _scatter(out: Breakdown | None, sel, part: Breakdown) -> Breakdown:
    """``out`` with the points ``sel`` taken from ``part`` (a new zero breakdown if None)."""
    out = out if out is not None else _empty_breakdown(np.shape(sel))
    for f in dataclasses.fields(Breakdown):
        getattr(out, f.name)[sel] = getattr(part, f.name)
    return out


def decode_step(setting: Setting, gpus: float, batch: float, context_tokens: float) -> pd.Series:
    """One decode step at a context length: the best layout, its latency and breakdown."""
    check_values("gpus", gpus), check_values("batch", batch)
    check_values("context_tokens", context_tokens)
    decoder = Decoder(setting.replace(context_tokens=float(context_tokens)))
    return decoder.describe(np.array([float(gpus)]), np.array([float(batch)])).iloc[0]


def evaluate(setting: Setting, gpus, batch) -> pd.DataFrame:
    """Latency, speed, cost, MFU, layout and breakdown of given (GPUs, batch) configurations
    (``gpus`` and ``batch`` broadcast against each other)."""
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
    return Decoder(setting).describe(gpus, batch)
