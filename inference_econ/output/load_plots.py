"""The figure of serving under load: latency percentiles against offered load, with the latency
targets and the knee (the most load that meets them) marked (docs/model.md Part E)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..errors import expect  # noqa: E402
from ..optimise.load_search import MaxLoad  # noqa: E402
from .plots import wrap  # noqa: E402

#: (metric, axis label, unit, scale from seconds)
PANELS = (
    ("ttft", "time to first token (s)", "s", 1.0),
    ("tpot", "time per output token (ms)", "ms", 1e3),
    ("e2e", "end-to-end latency (s)", "s", 1.0),
)
#: Each percentile its own colour (light to dark), marker and dash, so that a legend's short
#: handle tells them apart.
STATS = (
    ("p50", "p50", ":", "o", "#9ecae1"),
    ("p90", "p90", "--", "s", "#4292c6"),
    ("p99", "p99", "-", "^", "#08306b"),
)


def latency_load_figure(result: MaxLoad, title: str = "", offered_rate_per_s: float | None = None):
    """Percentiles (p50, p90, p99: light to dark blue, circles, squares, triangles) of TTFT and
    TPOT (and end-to-end latency when it has a target) against requests/s, target lines dashed
    red, the knee dotted black (and the load a plan was made for, dash-dotted green)."""
    expect(result, MaxLoad, "result", "a MaxLoad", "the result of ie.max_load(...)")
    df = result.to_dataframe()
    limits = result.targets.limits
    panels = [p for p in PANELS if p[0] != "e2e" or "e2e" in limits]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    rate = df["rate_per_s"].to_numpy()
    knee = result.max_rate_per_s
    layouts = _layouts(df)
    for ax, (name, label, unit, scale) in zip(axes[0], panels):
        for (layout, part), fill in zip(layouts, FILLS * len(layouts)):
            for stat, text, style, marker, colour in STATS:
                ax.plot(
                    part["rate_per_s"].to_numpy(),
                    part[f"{name}_{stat}_s"] * scale,
                    ls=style,
                    marker=marker,
                    ms=4,
                    fillstyle=fill,
                    color=colour,
                    label=text if len(layouts) == 1 else f"{text}, {layout}",
                )
        if f"{name}_p99_s_low90" in df:  # expected figures: p99's 90 % interval, shaded
            ax.fill_between(
                rate,
                df[f"{name}_p99_s_low90"] * scale,
                df[f"{name}_p99_s_high90"] * scale,
                color=STATS[-1][-1],
                alpha=0.12,
                lw=0,
                label="p99: 90 % interval",
            )
        if name in limits:
            ax.axhline(
                limits[name] * scale,
                color="#c44e52",
                ls="--",
                lw=1.2,
                label=f"target: p99 ≤ {limits[name] * scale:g} {unit}",
            )
        if knee > 0:
            ax.axvline(knee, color="black", ls=":", lw=1.2, label=f"knee: {knee:.3g} req/s")
            at_knee = df.loc[df["knee"], f"{name}_p99_s"].to_numpy() * scale
            ax.plot([knee] * len(at_knee), at_knee, "*", color="black", ms=10)
        if offered_rate_per_s:
            ax.axvline(
                offered_rate_per_s,
                color="#55a868",
                ls="-.",
                lw=1.2,
                label=f"offered: {offered_rate_per_s:.3g} req/s",
            )
        values = df[[f"{name}_{s[0]}_s" for s in STATS]].to_numpy(dtype=float) * scale
        top = np.nanmax(values[np.isfinite(values)]) if np.isfinite(values).any() else 1.0
        low = np.nanmin(values[np.isfinite(values) & (values > 0)]) if (values > 0).any() else 1e-3
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_tick))
        ax.yaxis.set_minor_formatter(FuncFormatter(_tick))
        ax.set_ylim(low / 1.5, max(top, limits.get(name, 0.0) * scale) * 1.5)
        ax.set_xlabel("offered load (requests/s)")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(
            handles=_legend_handles(ax, layouts), fontsize=7, loc="upper left", handlelength=3.5
        )
    at = result.at_max or result.curve[0] if (result.at_max or result.curve) else None
    head = title or (f"{at.model}: {result.deployment.describe()} {at.hardware}" if at else "")
    sub = (
        f"{result.targets.describe()}; {result.traffic}; {at.assumptions} assumptions"
        if at
        else result.targets.describe()
    )
    fig.suptitle("\n".join(filter(None, [wrap(head, 110), wrap(sub, 130)])), fontsize=10)
    _layout_legend(fig, layouts)
    return fig


def _layout_legend(fig, layouts) -> None:
    """Lay the figure out, with the layouts once under the panels when the sweep ran several
    (their marker fill tells them apart)."""
    if len(layouts) == 1:
        fig.tight_layout()
        return
    fig.legend(
        handles=_layout_handles(layouts),
        loc="lower center",
        ncol=min(len(layouts), 2),
        fontsize=8,
        title="instance layout the engine chose at each load (marker fill)",
        title_fontsize=8,
        frameon=False,
    )
    rows = -(-len(layouts) // 2)
    fig.tight_layout(rect=(0, 0.05 + 0.045 * rows, 1, 1))


def _legend_handles(ax, layouts) -> list:
    """A panel's legend: each percentile once (its colour, marker and dash) and the reference
    lines; with several layouts the curves' own labels (\"p99, <layout>\") stay on the lines,
    and the layouts go in the figure's legend."""
    handles, labels = ax.get_legend_handles_labels()
    if len(layouts) == 1:
        return handles
    stats = [
        Line2D([], [], ls=style, marker=marker, ms=4, color=colour, label=text)
        for _, text, style, marker, colour in STATS
    ]
    rest = [h for h, lab in zip(handles, labels) if not lab.startswith(("p50,", "p90,", "p99,"))]
    return stats + rest


def _layout_handles(layouts) -> list:
    """One grey marker a layout, filled as its curves are."""
    return [
        Line2D([], [], ls="", marker="o", ms=6, color="#555555", fillstyle=fill, label=layout)
        for (layout, _), fill in zip(layouts, FILLS * len(layouts))
    ]


#: The markers of each layout a sweep ran, in order: filled, hollow, half-filled.
FILLS = ("full", "none", "left", "bottom")


def _layouts(df) -> list:
    """(layout, its rows) of each instance layout the sweep's loads ran, in order of the
    load first run on it: the engine chooses the layout fastest at each load (docs/model.md
    §E6), and each is its own deployment, drawn as its own curve (one line through points of
    different layouts would show one deployment's latencies where another's were measured)."""
    if "layout" not in df or df["layout"].nunique() <= 1:
        return [("", df)]
    return [(str(name), part) for name, part in df.groupby("layout", sort=False)]


def _tick(value: float, _pos=None) -> str:
    """Log-axis labels at 1, 2, 3 and 5 times a power of ten."""
    if value <= 0:
        return ""
    mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
    return f"{value:g}" if round(mantissa, 6) in (1.0, 2.0, 3.0, 5.0) else ""


def demand_figure(plan, title: str = ""):
    """A demand plan hour by hour (docs/model.md §G5): the GPUs each hour uses as stacked
    layers, the reserved base in use (dark blue) and idle (light blue) under the capacity bought
    by the hour (on demand: orange; spot: green), with the demand in requests/s on a second
    axis (black line)."""
    from ..optimise.demand import DemandPlan

    expect(plan, DemandPlan, "plan", "a DemandPlan", "the result of ie.demand_plan(...)")
    hourly = plan.hourly()
    n = plan.gpus_per_instance
    hours = hourly["hour"].to_numpy()
    fig, ax = plt.subplots(figsize=(9.0, 4.2))
    in_use = hourly["reserved_in_use"].to_numpy()
    layers = [
        (in_use * n, "#1f4e79", f"reserved, in use ({plan.prices.reserved_basis})"),
        ((plan.reserved_instances - in_use) * n, "#a9c4e0", "reserved, idle"),
        (hourly["on_demand"].to_numpy() * n, "#dd8452", f"by the hour ({plan.prices.burst_basis})"),
        (hourly["spot"].to_numpy() * n, "#55a868", "spot"),
    ]
    bottom = np.zeros(len(hours))
    for values, colour, label in layers:
        if values.any() or label.startswith("reserved, in"):
            ax.bar(hours, values, bottom=bottom, width=1.0, align="edge", color=colour, label=label)
            bottom = bottom + values
    base = plan.reserved_instances * n
    ax.axhline(base, color="#1f4e79", ls="--", lw=1.0, label=f"reserved base: {base} GPUs")
    ax.set_xlabel("hour")
    ax.set_ylabel(f"GPUs ({plan.setting.gpu.name}, {n} per instance)")
    ax.set_xlim(hours[0], hours[-1] + 1)
    rate_ax = ax.twinx()
    rates = hourly["requests_per_s"].to_numpy()
    rate_ax.step(
        np.append(hours, hours[-1] + 1),
        np.append(rates, rates[-1]),
        where="post",
        color="black",
        lw=1.2,
    )
    rate_ax.set_ylabel("demand (requests/s, black line)")
    rate_ax.set_ylim(0, None)
    ax.set_ylim(0, None)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    summary = plan.summary()
    ax.set_title(
        wrap(
            title
            or f"{plan.setting.model.name} on {plan.setting.gpu.name}: {summary['total_usd']:,.0f} USD"
            f" over {plan.hours} h (all {plan.prices.burst_basis}: {plan.all_on_demand_usd:,.0f} USD)"
        ),
        fontsize=10,
    )
    fig.tight_layout()
    return fig
