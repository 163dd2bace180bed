"""The summary figure of a study: one heatmap per panel, the best value of each cell of a grid.

Rows, columns and panels are axes of the study (``summary:`` in the file, by default its first
three axes with more than one value that the file does not place, each axis in one place);
every other axis is optimised over (the best value is shown), and in each row the best column
is framed: where each option wins.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..serving.intervals import interval_columns

__all__ = ["infeasible_note", "summary_figure", "summary_table"]

#: metric -> (key point, column, higher is better, description, the summary's column name)
METRICS = {
    "cost_at_speed": (
        "at_speed",
        "usd_per_mtok",
        False,
        "cheapest $ per million tokens at {speed}",
        "cheapest_usd_per_mtok_at_{speed:g}_tokens_per_s",
    ),
    "preference_cost": (
        "preference",
        "usd_per_mtok",
        False,
        "$ per million tokens at the preference point",
        "preference_usd_per_mtok",
    ),
    "cheapest_cost": (
        "cheapest",
        "usd_per_mtok",
        False,
        "lowest $ per million tokens",
        "cheapest_usd_per_mtok",
    ),
    "fastest_speed": (
        "fastest",
        "tokens_per_s",
        True,
        "fastest tokens/s per request",
        "fastest_tokens_per_s",
    ),
}


def summary_table(
    key_points: pd.DataFrame, study, intervals: bool = False
) -> tuple[pd.DataFrame, str]:
    """The best value per (panel, row, column) of the summary, and what the value means. The
    value's column is named by what it is (``cheapest_usd_per_mtok_at_50_tokens_per_s``: the
    lowest $/Mtok among configurations at least that fast), the last column of the table;
    ``intervals``: the chosen key point's interval columns after it (an expected figure's,
    docs/model.md §F12; blank for an ideal bound's). ``attrs["value"]`` names the value."""
    s = study.summary
    point, column, higher, text, name = METRICS[s["metric"]]
    df = key_points[(key_points["point"] == point) & key_points["feasible"]]
    speed, target = "", 0.0
    if point == "at_speed":
        target = s.get("speed") or study.at_speeds[0]
        df = df[df["target_tokens_per_s"] == target]
        speed = f"≥ {target:g} tokens/s per request"
    axes = [s[k] for k in ("panels", "rows", "columns") if s.get(k)]
    axes = list(dict.fromkeys(axes))
    if column not in df:  # no cell has a feasible configuration
        df = df.assign(**{column: np.nan})
    ends = [c for c in interval_columns(column) if c in df] if intervals else []
    df = df[axes + [column] + ends].dropna(subset=axes + [column]).reset_index(drop=True)
    # the best key point of each group (its value, and its intervals where it has them)
    chosen = df.groupby(axes, sort=False)[column].agg("idxmax" if higher else "idxmin")
    best = df.loc[chosen.to_numpy()].reset_index(drop=True)
    # every combination the study computed keeps its row: NaN (n/a) where nothing is feasible
    every = key_points[axes].drop_duplicates().reset_index(drop=True)
    best = every.merge(best, on=axes, how="left")
    value = name.format(speed=target)
    renamed = dict(zip(interval_columns(column), interval_columns(value)))
    best = best.rename(columns={column: value, **renamed})
    if ends and best[renamed[ends[0]]].isna().all():  # no cell's figure is expected
        best = best.drop(columns=[renamed[c] for c in ends])
    best.attrs["value"] = value
    others = [a for a in study.axis_names if a not in axes and _varies(study, a)]
    meaning = text.format(speed=speed)
    if others:
        meaning += f", best over {', '.join(others)}"
    return best, meaning


def infeasible_note(best: pd.DataFrame, key_points: pd.DataFrame) -> str:
    """A line saying which summary rows are n/a and why (the first reason of a cell), or ""."""
    missing = int(best[best.attrs.get("value", best.columns[-1])].isna().sum())
    if not missing:
        return ""
    reasons = key_points.loc[~key_points["feasible"].astype(bool), "note"]
    reasons = [r for r in reasons if isinstance(r, str) and r]
    why = f" (first: {reasons[0]})" if reasons else ""
    return (
        f"n/a: no feasible configuration in {missing} of {len(best)} rows{why}; "
        "each cell's reason is in key_points' note column"
    )


def _varies(study, name: str) -> bool:
    return any(len(a.labels) > 1 for a in study.axes if a.name == name)


def _labels(study, name: str | None) -> list:
    if name is None:
        return [None]
    return [lab for a in study.axes if a.name == name for lab in a.labels]


def summary_figure(key_points: pd.DataFrame, study):
    """Heatmaps of the summary metric: panels side by side, the best column of a row framed."""
    # matplotlib is imported when a figure is drawn: the summary table needs none (0.4 s)
    from .plots import plt, title_width, wrap

    s = study.summary
    best, meaning = summary_table(key_points, study)
    column, higher = best.columns[-1], METRICS[s["metric"]][2]
    rows, cols, panels = (_labels(study, s.get(k)) for k in ("rows", "columns", "panels"))
    ncols = min(len(panels), 2 if len(panels) == 4 else 3)
    nrows = math.ceil(len(panels) / ncols)
    width = max(3.2, 0.95 * len(cols) + 2.6)
    height = max(2.2, 0.36 * len(rows) + 1.3)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width * ncols, height * nrows + 0.9),
        layout="constrained",
        squeeze=False,
    )
    values = best[column].to_numpy(dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    lo, hi = (np.log10(values.min()), np.log10(values.max())) if values.size else (0.0, 1.0)
    cmap = plt.get_cmap("viridis" if higher else "viridis_r")
    for ax, panel in zip(axes.ravel(), panels):
        grid = _panel_grid(best, s, column, panel, rows, cols)
        shown = np.where(np.isfinite(grid), np.log10(np.where(grid > 0, grid, np.nan)), np.nan)
        image = ax.imshow(shown, cmap=cmap, vmin=lo, vmax=hi if hi > lo else lo + 1, aspect="auto")
        _cell_labels(ax, grid, cmap, lo, hi, higher)
        ax.set_xticks(
            range(len(cols)),
            ["" if c is None else str(c) for c in cols],
            rotation=30,
            ha="right",
            fontsize=8,
        )
        ax.set_yticks(range(len(rows)), ["" if r is None else str(r) for r in rows], fontsize=8)
        if panel is not None:
            ax.set_title(f"{s['panels']} = {panel}", fontsize=9)
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    _colour_bar(fig, axes.ravel()[: len(panels)].tolist(), image, lo, hi, higher, meaning)
    note = f"{meaning}; framed: the best in each row; n/a: excluded or out of reach"
    width = title_width(fig, 10)
    fig.suptitle(wrap(study.title, width) + "\n" + wrap(note, width), fontsize=10)
    return fig


def _panel_grid(best: pd.DataFrame, s: dict, column: str, panel, rows, cols) -> np.ndarray:
    """One panel's values: the summary's ``column`` at each (row, column) label (NaN where the
    summary has no row of them)."""
    grid = np.full((len(rows), len(cols)), np.nan)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            sel = np.ones(len(best), dtype=bool)
            for name, value in (
                (s.get("panels"), panel),
                (s.get("rows"), r),
                (s.get("columns"), c),
            ):
                if name is not None:
                    sel &= (best[name] == value).to_numpy()
            if sel.any():
                grid[i, j] = best.loc[sel, column].iloc[0]
    return grid


def _cell_labels(ax, grid: np.ndarray, cmap, lo: float, hi: float, higher: bool) -> None:
    """Each cell's value written on it (white on dark colours), the best of each row in bold
    and framed; n/a where there is none."""
    from .plots import plt

    for i in range(grid.shape[0]):
        finite = np.isfinite(grid[i])
        winner = (np.nanargmax if higher else np.nanargmin)(grid[i]) if finite.any() else -1
        for j in range(grid.shape[1]):
            v = grid[i, j]
            text = "n/a" if not np.isfinite(v) else (f"{v:.0f}" if higher else f"${v:.3g}")
            frac = (np.log10(v) - lo) / (hi - lo) if np.isfinite(v) and hi > lo else 0.5
            r_, g_, b_, _ = cmap(frac)
            dark = np.isfinite(v) and 0.299 * r_ + 0.587 * g_ + 0.114 * b_ < 0.5
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=7.5,
                color="white" if dark else "black",
                fontweight="bold" if j == winner else "normal",
            )
            if j == winner:
                ax.add_patch(
                    plt.Rectangle((j - 0.48, i - 0.48), 0.96, 0.96, fill=False, lw=2, ec="#d62728")
                )


def _colour_bar(fig, axes: list, image, lo: float, hi: float, higher: bool, meaning: str) -> None:
    """One colour scale for every panel (log10 of the value): its bar reads in the value's
    units (dollars where lower is better)."""
    from matplotlib.ticker import FuncFormatter

    from .plots import wrap
    from .style import dollar_ticks, dollars

    bar = fig.colorbar(image, ax=axes, shrink=0.9, pad=0.02)
    label = dollars if not higher else (lambda v, _=None: f"{v:,.4g}")
    ticks = dollar_ticks(10.0**lo, 10.0**hi) if hi > lo else [10.0**lo]
    bar.set_ticks(np.log10(ticks))
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: label(10.0**v)))
    bar.set_label(wrap(meaning, 40), fontsize=8)
    bar.ax.tick_params(labelsize=7)
