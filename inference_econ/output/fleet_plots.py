"""Figures of fleet economics (docs/model.md §G6): a fleet's pools beside each model planned
alone, and what a site power budget buys as the budget grows."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..errors import InfeasibleError, expect, plural  # noqa: E402
from ..optimise.fleet import FleetPlan  # noqa: E402
from ..optimise.power_cap import PowerPlan  # noqa: E402
from .plots import wrap  # noqa: E402

#: Caps the power figure evaluates, from a tenth to 1.5 x the uncapped plan's facility MW.
CAP_POINTS = 60


def _gpus_by_model(parts, bins) -> dict[str, tuple[float, float]]:
    """Per model: (GPUs of its dedicated instances, GPUs of the shares it holds)."""
    out: dict[str, list[float]] = {}
    for p in parts:
        if not p.shared:
            out.setdefault(p.model, [0.0, 0.0])[0] += p.instances * p.option.gpus_per_instance
    for _, held in bins:
        for model, share in held:
            out.setdefault(model, [0.0, 0.0])[1] += share
    return {m: (d, s) for m, (d, s) in out.items()}


def fleet_figure(plan: FleetPlan, title: str = ""):
    """Two bars, the fleet and each model planned alone: the GPUs each model takes (solid:
    dedicated instances; hatched: its shares of shared GPUs, whose idle rest is grey), with
    each bar's dollars an hour."""
    expect(plan, FleetPlan, "plan", "a FleetPlan", "the result of ie.fleet_plan(...)")
    rows = [("fleet", plan.parts, plan.bins, plan.usd_per_hour)]
    rows.append(("each model alone", plan.alone, plan.alone_bins, plan.alone_usd_per_hour))
    models = sorted({p.model for p in plan.parts})
    colours = dict(zip(models, plt.get_cmap("tab10").colors))
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.9 * len(rows)))
    for y, (_, parts, bins, usd) in enumerate(rows):
        left = 0.0
        used = _gpus_by_model(parts, bins)
        for m in models:
            dedicated, shares = used.get(m, (0.0, 0.0))
            for width, hatch in ((dedicated, None), (shares, "//")):
                if width > 0:
                    ax.barh(y, width, left=left, color=colours[m], hatch=hatch, ec="white")
                    left += width
        idle = len(bins) - sum(s for _, held in bins for _, s in held)
        if idle > 1e-9:
            ax.barh(y, idle, left=left, color="0.85", hatch="//", ec="white")
            left += idle
        gpus = f"{left:g}"  # the count as printed: whole GPUs, a sum of shares
        ax.text(left, y, f"  {gpus} {plural(float(gpus), 'GPU')}, ${usd:,.4g}/h", va="center",
                fontsize=9)  # fmt: skip
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("GPUs (hatched: shares of a shared GPU; grey: its unused share)")
    ax.set_xlim(0, max(1.0, ax.get_xlim()[1] * 1.35))
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[m]) for m in models]
    ax.legend(handles, models, fontsize=8, loc="upper right")
    ax.set_title(wrap(title or "The fleet's GPUs by model"), fontsize=10)
    fig.tight_layout()
    return fig


def power_figure(plan: PowerPlan, title: str = ""):
    """Output tokens/s served (left axis) and all-in $ per million output tokens (right axis)
    of the plan at each site budget, from a tenth to 1.5 x the uncapped plan's facility power;
    the budget asked for and the uncapped plan's draw marked."""
    expect(plan, PowerPlan, "plan", "a PowerPlan", "the result of ie.power_plan(...)")
    uncapped = plan.at_cap(None)
    top = uncapped.facility_mw
    if not (math.isfinite(top) and top > 0):
        raise ValueError("the plan has no power figures: its GPU's file states no power")
    caps = np.linspace(0.1 * top, 1.5 * top, CAP_POINTS)
    tokens, dollars = [], []
    for cap in caps:
        try:
            capped = plan.at_cap(float(cap))
        except InfeasibleError:  # below one instance: nothing served
            tokens.append(0.0)
            dollars.append(math.nan)
            continue
        served = capped.output_tokens_per_s if capped.instances else 0.0
        tokens.append(served)
        dollars.append(capped.usd_per_hour / (served * 3600.0) * 1e6 if served else math.nan)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.step(caps, tokens, where="post", color="#2171b5", label="output tokens/s served")
    ax.set_xlabel("site power budget (MW of facility power)")
    ax.set_ylabel("output tokens/s served within the targets")
    right = ax.twinx()
    right.step(caps, dollars, where="post", color="#cb181d", ls="--", label="$/M output tokens")
    right.set_ylabel("all-in $ per million output tokens")
    finite = [d for d in dollars if math.isfinite(d)]
    right.set_ylim(0.0, 1.3 * max(finite) if finite else 1.0)  # from 0: a price, not its noise
    ax.axvline(top, color="0.4", ls=":", lw=1)
    ax.text(top, 0, " uncapped plan's draw", rotation=90, va="bottom", fontsize=8, color="0.3")
    if plan.cap_mw is not None:
        ax.axvline(plan.cap_mw, color="black", lw=1)
        ax.text(plan.cap_mw, 0, " the budget", rotation=90, va="bottom", fontsize=8)
    lines = ax.get_lines()[:1] + right.get_lines()[:1]
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper left")
    ax.set_title(wrap(title or "What a power budget buys"), fontsize=10)
    fig.tight_layout()
    return fig
