"""Figures: frontiers on a log-dollar axis, MFU along them, and where the time goes.

Every function takes computed results (``Frontier`` objects keyed by label) and returns the
matplotlib ``Figure``, so tests can inspect what was drawn and callers can save it. Colours,
line styles and dollar ticks come from ``style``, which the HTML report reads too. Figures
are saved as 200 dpi PNG and SVG; titles wrap to the figure's width, legends sit below the
axes (never beside them, where they would squeeze the plot), every panel has both axis
labels, and every frontier marks its preference point.
"""

from __future__ import annotations

import io
import math
import textwrap

import matplotlib

matplotlib.use("Agg")  # files only; no screen needed
matplotlib.rcParams["svg.hashsalt"] = "inference-econ"  # reproducible SVG ids

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

from ..model.breakdown import ENGINE_PARTS  # noqa: E402
from ..optimise.frontier import Frontier  # noqa: E402
from ..serving.toy import square_root_law  # noqa: E402
from .files import write_atomic  # noqa: E402
from .style import DOLLAR_TICKS, LATENCY_TICKS, PALETTE, colours, dollars, parameters  # noqa: E402

#: Breakdown parts in stacking order, with their legend labels and colours. Reads and
#: arithmetic overlap (the step takes the larger of the two): figures split their time in
#: proportion to each side's full time (``breakdown_shares``).
BREAKDOWN = (
    ("arithmetic_s", "arithmetic", "#4c72b0"),
    ("weight_read_s", "weight reads", "#55a868"),
    ("kv_read_s", "KV-cache reads", "#c44e52"),
    ("activation_read_s", "activation reads", "#8172b2"),
    ("collective_latency_s", "collective latency", "#ccb974"),
    ("collective_bandwidth_s", "collective bandwidth", "#64b5cd"),
    ("gemm_fixed_s", "GEMM fixed cost", "#dd8452"),
    ("kernel_launch_s", "kernel launches", "#8c8c8c"),
    ("host_s", "host and scheduling", "#b5b5b5"),
)
#: The full time of each overlapped part (the memory side by kind, and the compute side).
OVERLAPPED = {
    "arithmetic_s": "compute_time_s",
    "weight_read_s": "weight_read_full_s",
    "kv_read_s": "kv_read_full_s",
    "activation_read_s": "activation_read_full_s",
}
DPI = 200


def wrap(title: str, width: int = 80) -> str:
    return "\n".join(textwrap.wrap(title, width)) or title


def title_width(fig, fontsize: float = 11) -> int:
    """Characters of a title that fit the figure's width (about 0.55 em per character)."""
    return max(30, int(fig.get_figwidth() * 72 / (0.55 * fontsize)) - 4)


def _legend_below(fig, handles, labels) -> None:
    """The legend under the axes, in as many columns as fit: it takes height, never the
    plot's width, and never hides data."""
    if not handles:
        return
    longest = max(len(label) for label in labels)
    cols = max(1, min(len(labels), int(fig.get_figwidth() * 72 / (6.0 * (longest + 4)))))
    fig.legend(handles, labels, loc="outside lower center", ncols=cols, fontsize=8, frameon=False)


def _axes(ax, figsize: tuple[float, float]):
    """(figure, axes) to draw on: a new figure of ``figsize``, or the given ``ax``'s own (a
    notebook's panel)."""
    if ax is None:
        return plt.subplots(figsize=figsize, layout="constrained")
    return ax.figure, ax


def _finish(fig, ax, title: str, own: bool = True) -> None:
    """Title, grid and legend: above and below the figure when it is the function's own, on
    the axes when they were given (other panels may share the figure)."""
    ax.grid(True, which="major", alpha=0.3)
    if not own:
        ax.set_title(wrap(title, 60), fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, frameon=False)
        return
    fig.suptitle(wrap(title, title_width(fig)), fontsize=11)
    _legend_below(fig, *ax.get_legend_handles_labels())


def _lines(ax, fronts: dict[str, Frontier], column: str, colors: dict, styles: dict) -> None:
    """One line of ``column`` against tokens/s per request for each non-empty frontier."""
    for label, front in fronts.items():
        if front.empty:
            continue
        pts = front.points
        ax.plot(
            pts["tokens_per_s"],
            pts[column],
            label=label,
            color=colors[label],
            lw=1.8,
            ls=styles.get(label, "solid"),
        )


#: More groups of measured points than this are drawn as one (a legend that long is unreadable).
MAX_LEGEND_GROUPS = 20


def _scatter_groups(ax, points, colors=None) -> None:
    """Operating points drawn as one scatter per (label, colour, marker): one legend entry
    each, and fast for thousands of points. A point of a ``curve`` takes that curve's colour
    (``colors``), others their own ``color`` or black."""
    colors = colors or {}
    groups: dict[tuple, list] = {}
    for point in points:
        key = (
            point.get("label", "measured"),
            point.get("color") or colors.get(point.get("curve"), "black"),
            point.get("marker", "o"),
        )
        groups.setdefault(key, []).append(point)
    if len(groups) > MAX_LEGEND_GROUPS:  # thousands of labels: one scatter, one legend entry
        labels = len({label for label, _, _ in groups})
        every = [p for pts in groups.values() for p in pts]
        groups = {(f"measured ({len(every)} points, {labels} labels)", "black", "o"): every}
    for (label, color, marker), pts in groups.items():
        ax.scatter(
            [p["tokens_per_s"] for p in pts],
            [p["usd_per_mtok"] for p in pts],
            marker=marker,
            s=40,
            color=color,
            zorder=5,
            label=label,
        )


def _bands(ax, fronts: dict[str, Frontier], colors: dict) -> None:
    """Under an engine profile, each frontier's 80 % and 90 % intervals of the price at each
    speed, shaded in its colour (docs/model.md §F12)."""
    for label, front in fronts.items():
        pts = front.points
        if front.empty or "usd_per_mtok_low90" not in pts:
            continue
        x = pts["tokens_per_s"]
        for level, alpha in ((90, 0.12), (80, 0.18)):
            ax.fill_between(
                x,
                pts[f"usd_per_mtok_low{level}"],
                pts[f"usd_per_mtok_high{level}"],
                color=colors[label],
                alpha=alpha,
                lw=0,
                label=f"{label}: {level} % interval",
            )


def _preference_marks(ax, fronts: dict[str, Frontier], colors: dict, sampling=None) -> None:
    """A star in the curve's colour at each curve's preference point (max speed^3/price), and
    one neutral legend entry for them all."""
    star = dict(marker="*", s=110, edgecolors="black", linewidths=0.6, zorder=6)
    drawn = False
    for label, front in fronts.items():
        if front.empty:
            continue
        point = front.preference_point(sampling=sampling)
        if "usd_per_mtok_low90" in point:  # an expected point: its 90 % intervals both ways,
            # each from its own ends (a class measured biased puts one beside the point)
            x, y = point["tokens_per_s"], point["usd_per_mtok"]
            bar = dict(colors=colors[label], lw=1.0, zorder=5)
            ax.hlines(y, point["tokens_per_s_low90"], point["tokens_per_s_high90"], **bar)
            ax.vlines(x, point["usd_per_mtok_low90"], point["usd_per_mtok_high90"], **bar)
        ax.scatter([point["tokens_per_s"]], [point["usd_per_mtok"]], color=colors[label], **star)
        drawn = True
    if drawn:  # an empty scatter: a legend entry without a point
        ax.scatter([], [], color="white", label="preference point (max speed³/price)", **star)


def frontier_figure(
    fronts: dict[str, Frontier],
    title: str,
    colors=None,
    measured=(),
    max_speed=None,
    styles=None,
    preference_sampling=None,
    not_frontiers=(),
    ax=None,
):
    """Cost ($/M tokens, log axis) against tokens/s per request, one line per curve, each
    frontier with its preference point marked (``not_frontiers``: curves that are not); on
    ``ax`` when given."""
    colors = colours(list(fronts), colors)
    styles = styles or {}
    own = ax is None
    fig, ax = _axes(ax, (9, 5.6))
    _bands(ax, fronts, colors)
    _lines(ax, fronts, "usd_per_mtok", colors, styles)
    marked = {k: v for k, v in fronts.items() if k not in not_frontiers}
    _preference_marks(ax, marked, colors, preference_sampling)
    _scatter_groups(ax, measured, colors)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=DOLLAR_TICKS))
    ax.yaxis.set_major_formatter(FuncFormatter(dollars))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    ax.set_xlabel("tokens per second per request")
    ax.set_ylabel("cost per million output tokens")
    if max_speed:
        ax.set_xlim(0, max_speed)
    else:
        ax.set_xlim(left=0)
    _finish(fig, ax, title, own)
    return fig


def mfu_figure(fronts: dict[str, Frontier], title: str, colors=None, styles=None, ax=None):
    """Model FLOP utilisation along each frontier (on ``ax`` when given)."""
    colors = colours(list(fronts), colors)
    styles = styles or {}
    own = ax is None
    fig, ax = _axes(ax, (9, 5.6))
    _lines(ax, fronts, "mfu", colors, styles)
    ax.set_xlabel("tokens per second per request")
    ax.set_ylabel("model FLOP utilisation (MFU)")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    _finish(fig, ax, title, own)
    return fig


def power_figure(
    fronts: dict[str, Frontier], title: str, colors=None, styles=None, pue=None, ax=None
):
    """Cost ($/M output tokens) against output tokens/s per MW of facility power along each
    frontier (docs/model.md §G2), both on log axes: a frontier point further right serves more
    tokens from the same power; lower costs less (on ``ax`` when given)."""
    colors = colours(list(fronts), colors)
    styles = styles or {}
    own = ax is None
    fig, ax = _axes(ax, (9, 5.6))
    for label, front in fronts.items():
        pts = front.points
        if front.empty or "output_tokens_per_s_per_mw_facility" not in pts:
            continue
        ax.plot(
            pts["output_tokens_per_s_per_mw_facility"],
            pts["usd_per_mtok"],
            label=label,
            color=colors[label],
            lw=1.8,
            ls=styles.get(label, "solid"),
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(dollars))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    at = f" at PUE {pue:g}" if pue else ""
    ax.set_xlabel(f"output tokens per second per MW of facility power{at}")
    ax.set_ylabel("cost per million output tokens")
    _finish(fig, ax, title, own)
    return fig


def breakdown_shares(points) -> dict[str, np.ndarray]:
    """Each part's share of the token latency along a frontier, for drawing.

    Kernel launches and collectives are their own shares. Reads and arithmetic overlap (the
    step takes the larger, §A5), so the overlapped time is split between weight, KV-cache and
    activation reads and arithmetic in proportion to each one's full time: the shares vary
    smoothly where the binding side flips from point to point, and still add up to 1.
    """
    total = points["latency_s"].to_numpy()
    full = {part: points[col].to_numpy() for part, col in OVERLAPPED.items()}
    both = points["memory_time_s"].to_numpy() + points["compute_time_s"].to_numpy()
    overlapped = sum(points[part].to_numpy() for part in OVERLAPPED)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = {
            col: (full[col] / both * overlapped if col in full else points[col].to_numpy()) / total
            for col, _, _ in BREAKDOWN
        }
    return {col: np.nan_to_num(share) for col, share in shares.items()}


def _panel_grid(n: int) -> tuple[int, int]:
    """(rows, columns) for n panels: at most 4 columns, as few empty cells as possible, then as
    square as possible."""
    square = math.ceil(math.sqrt(n))
    best = min(
        range(1, min(n, 4) + 1), key=lambda c: (math.ceil(n / c) * c - n, abs(c - square), -c)
    )
    return math.ceil(n / best), best


def breakdown_figure(fronts: dict[str, Frontier], title: str):
    """Where the time of a token goes along each frontier (shares of the latency, stacked),
    one panel per curve with a frontier; no empty panels."""
    live = {k: v for k, v in fronts.items() if not v.empty}
    rows, cols = _panel_grid(max(len(live), 1))
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(3.6 * cols + 0.6, 2.9 * rows + 1.4),
        squeeze=False,
        layout="constrained",
    )
    shares_of = {label: breakdown_shares(front.points) for label, front in live.items()}
    # an engine's own parts that no curve has (a roofline's host work and GEMM fixed cost)
    # are not drawn
    parts = [
        part
        for part in BREAKDOWN
        if part[0] not in ENGINE_PARTS
        or any(np.any(np.nan_to_num(s[part[0]]) > 0.0) for s in shares_of.values())
    ]
    for ax, (label, front) in zip(axes.ravel(), live.items()):
        speed = front.points["tokens_per_s"].to_numpy()
        shares = shares_of[label]
        # rasterized: thousands of filled polygons would make the SVG tens of megabytes
        ax.stackplot(
            speed,
            [shares[col] for col, _, _ in parts],
            labels=[name for _, name, _ in parts],
            colors=[c for _, _, c in parts],
            alpha=0.9,
            rasterized=True,
        )
        ax.set_title(wrap(label, 44), fontsize=9)
        ax.set_xlim(speed.min(), speed.max())
        ax.set_ylim(0, 1)
        ax.set_xlabel("tokens/s per request", fontsize=8)
        ax.set_ylabel("share of token latency", fontsize=8)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
        ax.tick_params(labelsize=8)
    for ax in axes.ravel()[len(live) :]:
        fig.delaxes(ax)
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    _legend_below(fig, handles[::-1], labels[::-1])
    note = "reads and arithmetic overlap: their time is split in proportion to each one's full time"
    fig.suptitle(
        wrap(f"{title}: where the time of a token goes ({note})", title_width(fig)), fontsize=11
    )
    return fig


def square_root_figure(points: list[dict], title: str, ax=None):
    """Best latency against parameters (log-log) with the square-root law through the first
    (on ``ax`` when given)."""
    own = ax is None
    fig, ax = _axes(ax, (7.5, 5.0))
    params = np.array([p["params"] for p in points], dtype=float)
    latency_ms = np.array([p["latency_ms"] for p in points], dtype=float)
    grid = np.logspace(np.log10(params.min() / 2), np.log10(params.max() * 2), 50)
    law = square_root_law(grid, params[0], latency_ms[0])
    ax.plot(grid, law, color="gray", ls="--", label="square-root law through the smallest model")
    ax.scatter(params, latency_ms, color="black", zorder=5, label="measured best latency")
    for p, lat, point in zip(params, latency_ms, points):
        ax.annotate(
            point.get("label", ""),
            (p, lat),
            textcoords="offset points",
            xytext=(6, -10),
            fontsize=8,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=LATENCY_TICKS))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    ax.xaxis.set_major_formatter(FuncFormatter(parameters))
    ax.set_xlabel("parameters")
    ax.set_ylabel("best token latency (ms)")
    _finish(fig, ax, title, own)
    return fig


def tornado_title(setting, at_speed: float, default_speed: bool = True) -> str:
    """The tornado chart's title: model, precision, GPU and the speed costs are compared at."""
    p = setting.precision
    how = " (half the fastest)" if default_speed else ""
    return (
        f"What moves the frontier: {setting.model.name}, {p.weight_bits:g}-bit weights, on "
        f"{setting.gpu.name}; cost at {at_speed:.0f} tok/s per request{how}"
    )


def tornado_figure(table, title: str):
    """Horizontal bars of the elasticities of the fastest speed and of the cost at a speed."""
    order = table.reindex(table.fastest_speed_elasticity.abs().sort_values().index)
    fig, axes = plt.subplots(
        1, 2, figsize=(10, 0.5 * len(order) + 2.2), sharey=True, layout="constrained"
    )
    y = np.arange(len(order))
    axes[0].barh(y, order.fastest_speed_elasticity, color="tab:blue")
    axes[1].barh(y, order.cost_at_speed_elasticity, color="tab:red")
    axes[0].set_yticks(y, [wrap(d, 26) for d in order.description])
    speed = (
        float(order["at_speed_tokens_per_s"].iloc[0]) if "at_speed_tokens_per_s" in order else None
    )
    axes[0].set_xlabel("elasticity of the fastest\ntokens/s per request")
    at = f"at {speed:.0f} tok/s per request" if speed else "at a fixed speed"
    axes[1].set_xlabel(f"elasticity of $/M tokens\n{at}")
    axes[0].set_ylabel("factor, x0.5 to x2")
    axes[1].set_ylabel("factor, x0.5 to x2")
    axes[1].tick_params(labelleft=True)
    for ax, column in zip(axes, ("fastest_speed_elasticity", "cost_at_speed_elasticity")):
        ax.axvline(0, color="black", lw=0.8)
        ax.grid(True, axis="x", alpha=0.3)
        for k in np.flatnonzero(~np.isfinite(order[column].to_numpy(dtype=float))):
            # no elasticity (a factor's run never reaches the speed): said, not a zero bar
            ax.text(0, y[k], " n/a (does not reach the speed)", va="center", fontsize=8)
    fig.suptitle(wrap(title, title_width(fig)), fontsize=11)
    return fig


def quantity(unit: str) -> str:
    """The quantity a measured row's unit measures, and so the panel it is drawn in: values
    of one panel share a dimension and a unit (``measured_figure``)."""
    text = str(unit).strip()
    first = text.split()[0] if text else ""
    if first in ("ms", "s", "us"):
        return f"latency ({first})"
    if "tok/s" in text:
        return "token rate (tok/s)"
    return first or "value"


def measured_figure(
    comparison,
    title: str | None = None,
    column: str = "predicted",
    kind: str = "end-to-end",
    units: str | None = None,
):
    """Measured against predicted, log-log, one panel per quantity (token rates, latencies in
    ms, ...: never two units on one axis; ``quantity``), one colour per source, for the rows
    with status ok of one ``kind`` (end-to-end or micro; a
    ``measured.comparison.Comparison``, or a table with its columns); the diagonal and
    the 15 % and 35 % bands. ``column``: which prediction to draw (``held_out`` for a
    calibration's left-out predictions); ``units``: how the values were converted, when they
    were (the default: each row's own unit, which its panel names)."""
    table = getattr(comparison, "table", comparison)
    ok = table[(table["status"] == "ok") & np.isfinite(table[column]) & (table["measured"] > 0)]
    if "kind" in ok:
        ok = ok[ok["kind"] == kind]
    panels = (
        ok["unit"].map(quantity)
        if "unit" in ok and units is None
        else np.full(len(ok), units or "value")
    )
    names = sorted(set(panels), key=lambda q: (-int((panels == q).sum()), q)) or ["value"]
    fig, axes = plt.subplots(
        1, len(names), figsize=(5.0 * len(names) + 0.6, 7.2), squeeze=False, layout="constrained"
    )
    groups = sorted(
        ok["source_group"].unique(), key=lambda g: -int((ok["source_group"] == g).sum())
    )
    style = {
        g: dict(color=PALETTE[i % len(PALETTE)], marker="os^vD<>ph*"[(i // len(PALETTE)) % 10])
        for i, g in enumerate(groups)
    }
    for ax, name in zip(axes[0], names):
        _measured_panel(ax, ok[np.asarray(panels) == name], name, groups, style, column)
    _measured_legend(fig, ok, groups, style)
    label = getattr(comparison, "assumptions", "")
    fig.suptitle(
        wrap(title or f"Measured against predicted ({label}), {len(ok)} rows", 100), fontsize=11
    )
    return fig


def _measured_panel(ax, part, name: str, groups, style: dict, column: str) -> None:
    """One quantity's panel of ``measured_figure``: each source's rows (their 90 % intervals
    as bars where the predictions are expected figures: from each interval's own ends, which
    need not hold the expected figure where its class measured it biased), the diagonal and
    the 15 % and 35 % bands, on equal log-log axes."""
    for group in groups:
        rows = part[part["source_group"] == group]
        if not len(rows):
            continue
        if f"{column}_low90" in rows:  # expected figures: their 90 % intervals as bars
            ax.vlines(
                rows["measured"],
                rows[f"{column}_low90"],
                rows[f"{column}_high90"],
                colors=style[group]["color"],
                alpha=0.25,
                lw=0.8,
            )
        ax.scatter(rows["measured"], rows[column], s=18, alpha=0.8, **style[group])
    if len(part):
        lo = 0.5 * float(min(part["measured"].min(), part[column].min()))
        hi = 2.0 * float(max(part["measured"].max(), part[column].max()))
        x = np.geomspace(lo, hi, 50)
        ax.plot(x, x, color="black", lw=1.0)
        for band, dash in ((0.15, "--"), (0.35, ":")):
            ax.plot(x, x * (1 + band), color="grey", lw=0.8, ls=dash)
            ax.plot(x, x * (1 - band), color="grey", lw=0.8, ls=dash)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"measured, {name}")
    ax.set_ylabel(f"predicted, {name}")
    ax.set_title(f"{name}: {len(part)} rows", fontsize=9)
    ax.grid(True, which="both", alpha=0.2)
    ax.set_aspect("equal")


def _measured_legend(fig, ok, groups, style: dict) -> None:
    """The legend below ``measured_figure``'s panels: each source with its row count, then
    the diagonal and the bands."""
    handles = [
        plt.Line2D(
            [], [], ls="", markersize=5, label=wrap(f"{_short_source(g)} ({n})", 48), **style[g]
        )
        for g, n in ((g, int((ok["source_group"] == g).sum())) for g in groups)
    ]
    handles += [
        plt.Line2D([], [], color="black", lw=1.0, label="predicted = measured"),
        plt.Line2D([], [], color="grey", lw=0.8, ls="--", label="±15%"),
        plt.Line2D([], [], color="grey", lw=0.8, ls=":", label="±35%"),
    ]
    cols = max(1, min(3, int(fig.get_figwidth() // 3.4)))
    fig.legend(handles=handles, loc="outside lower center", ncols=cols, fontsize=7, frameon=False)


def _short_source(group: str) -> str:
    """ "mlcommons/inference_results_v4.1/closed/NVIDIA" -> "MLPerf v4.1 closed: NVIDIA"."""
    import re

    return re.sub(r"^mlcommons/inference_results_v([\d.]+)/(\w+)/", r"MLPerf v\1 \2: ", group)


def release(fig) -> None:
    """Stop pyplot holding a figure a result keeps: it stays drawable and savable, and is
    freed with the result (pyplot keeps every figure it made until it is closed)."""
    plt.close(fig)


#: What each format's writer leaves out of the file, so that the same figure is the same
#: bytes: SVG its date, PNG, PDF and PostScript the matplotlib version; the formats written
#: through Pillow (JPEG, TIFF, WebP, ...) and raw RGBA take no metadata (matplotlib refuses any).
_NO_METADATA = {
    "svg": {"Date": None},
    "svgz": {"Date": None},
    **{fmt: {"Software": None} for fmt in ("png", "pdf", "ps", "eps")},
}


def save(fig, stem, formats=("png", "svg")) -> list:
    """Write a figure in each of ``formats`` (``output.files.figure_formats``: png, svg, ...)
    next to each other (atomically); close it."""
    written = []
    for fmt in formats:
        buf = io.BytesIO()
        meta = _NO_METADATA.get(fmt.lower())
        fig.savefig(buf, format=fmt, dpi=DPI, **({"metadata": meta} if meta else {}))
        written.append(write_atomic(f"{stem}.{fmt}", buf.getvalue()))
    plt.close(fig)
    return written
