"""The interactive report: one self-contained HTML file (plotly.js inline, no network needed).

A report has one section per study or scenario: its frontiers on a log-dollar axis, where
hovering a point shows its layout (GPUs, batch, PP/TP/EP, attention degree, draft length) and
where its latency goes; a selector for groups of curves (and the legend to toggle single ones);
the key-point table; and the assumptions the numbers were computed with. plotly is an optional
extra (``inference-econ[html]``); everything interactive is plotly's own, no JavaScript of ours.
"""

from __future__ import annotations

import html
import io
import itertools
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SpecError, short
from ..model.latency import ADDITIVE_PARTS
from ..serving.decode import continuous_note
from ..serving.toy import square_root_law
from ..specs.catalog import display_path
from ..specs.inputs import read_bytes, read_json, read_text
from ..specs.schema import Reader, check_number
from .files import write_atomic
from .render import HEADERS, table_cells
from .style import (
    DOLLAR_TICKS,
    LATENCY_TICKS,
    PALETTE,
    PLOTLY_DASH,
    colours,
    dollar_ticks,
    dollars,
    line_style,
    log_ticks,
    parameters,
    speculates,
)

#: Points shown per curve at most (evenly spaced along the line; key points always kept).
MAX_POINTS = 80
#: Curves a selector entry shows at most before the page offers "all" too.
ALL_LIMIT = 40
PART_LABELS = {
    "kernel_launch_s": "kernel launches",
    "collective_latency_s": "collective latency",
    "collective_bandwidth_s": "collective bandwidth",
    "weight_read_s": "weight reads",
    "kv_read_s": "KV-cache reads",
    "activation_read_s": "activation reads",
    "arithmetic_s": "arithmetic",
}
#: Layout columns shown on hover: (column, text before it, format).
LAYOUT = (
    ("gpus", "GPUs ", ".4g"),
    ("batch", "batch ", ".4g"),
    ("pipeline_degree", "PP ", ".3g"),
    ("tensor_degree", "TP ", ".3g"),
    ("expert_degree", "EP ", ".3g"),
    ("attention_degree", "attention ", ".3g"),
    ("draft_tokens", "draft tokens ", ".0f"),
)


@dataclass
class Curve:
    """One frontier to draw: its legend name, its selector group and its points, in the colour
    and line style the PNG figures give it (``style``; None: the palette's, by name)."""

    name: str
    points: pd.DataFrame
    group: str = ""
    #: key point name -> its tokens/s per request (marked on the curve)
    marks: dict = field(default_factory=dict)
    color: str | None = None
    dash: str = "solid"


@dataclass
class Section:
    """One study or scenario of a report."""

    title: str
    curves: list[Curve]
    key_table: pd.DataFrame
    assumptions: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    description: str = ""
    notes: list[str] = field(default_factory=list)
    #: A square-root-law section (the paper's Figure 2): measured best latencies, no frontiers.
    law: list[dict] = field(default_factory=list)


def require_plotly():
    try:
        import plotly
        import plotly.graph_objects as go
    except ImportError:
        raise SpecError(
            "command line",
            "the interactive report (--html, report)",
            "needs plotly, which is not installed",
            "pip install 'inference-econ[html]'",
        ) from None
    return plotly, go


def thin(points: pd.DataFrame, keep_speeds=(), limit: int = MAX_POINTS) -> pd.DataFrame:
    """At most ``limit`` points, evenly spaced along the drawn line (linear speed, log cost),
    plus the key points' rows."""
    if len(points) <= limit:
        return points
    x = points["tokens_per_s"].to_numpy(dtype=float)
    y = np.log(points["usd_per_mtok"].to_numpy(dtype=float))
    u = (x - x.min()) / max(np.ptp(x), 1e-300)
    v = (y - y.min()) / max(np.ptp(y), 1e-300)
    length = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(u), np.diff(v)))])
    targets = np.linspace(0.0, length[-1], limit)
    pick = set(np.abs(length[None, :] - targets[:, None]).argmin(axis=1).tolist())
    for s in keep_speeds:
        pick.add(int(np.abs(x - s).argmin()))
    return points.iloc[sorted(pick)]


def _hover(points: pd.DataFrame) -> tuple[np.ndarray, str]:
    """customdata (float32) and the hover template showing layout and latency breakdown."""
    cols, lines = [], []
    layout = [(c, t, f) for c, t, f in LAYOUT if c in points]
    for i, (col, text, fmt) in enumerate(layout):
        cols.append(points[col].to_numpy(dtype=float))
        lines.append(f"{text}%{{customdata[{i}]:{fmt}}}")
    body = "<br>".join([" · ".join(lines[:2]), " · ".join(lines[2:])]) if lines else ""
    if "tp_dims" in points:
        body += " (%{text} TP)"
    extra = []
    if "latency_s" in points:
        cols.append(points["latency_s"].to_numpy(dtype=float) * 1e3)
        extra.append(f"latency %{{customdata[{len(cols) - 1}]:.4g}} ms")
    if "mfu" in points:
        cols.append(points["mfu"].to_numpy(dtype=float))
        extra.append(f"MFU %{{customdata[{len(cols) - 1}]:.1%}}")
    parts = []
    if "latency_s" in points and all(p in points for p in ADDITIVE_PARTS):
        latency = points["latency_s"].to_numpy(dtype=float)
        for part in ADDITIVE_PARTS:
            with np.errstate(divide="ignore", invalid="ignore"):
                cols.append(points[part].to_numpy(dtype=float) / latency)
            parts.append(f"  {PART_LABELS[part]} %{{customdata[{len(cols) - 1}]:.1%}}")
    template = (
        "<b>%{fullData.name}</b><br>%{x:.4g} tokens/s per request · $%{y:.4g} per M tokens<br>"
        + body
        + ("<br>" + " · ".join(extra) if extra else "")
        + ("<br>where the time goes:<br>" + "<br>".join(parts) if parts else "")
        + "<extra></extra>"
    )
    data = np.column_stack(cols).astype(np.float32) if cols else None
    return data, template


def _text(points: pd.DataFrame):
    if "tp_dims" not in points:
        return None
    return points["tp_dims"].astype(str).replace("-", "no").to_numpy()  # "(no TP)" at TP 1


def figure(section: Section, max_points: int = MAX_POINTS):
    """The plotly figure of a section: one trace per curve, a selector over groups."""
    _, go = require_plotly()
    if section.law and not section.curves:
        return _law_figure(section)
    fig = go.Figure()
    groups = list(dict.fromkeys(c.group for c in section.curves))
    first = groups[0] if groups else ""
    by_name: dict[str, str] = {}
    for curve in section.curves:
        pts = curve.points
        if len(pts) == 0:
            continue
        pts = thin(pts, curve.marks.values(), max_points)
        colour = curve.color or by_name.get(curve.name) or PALETTE[len(by_name) % len(PALETTE)]
        by_name.setdefault(curve.name, colour)
        if "usd_per_mtok_low90" in pts:  # expected figures: the 90 % interval, shaded
            x = pts["tokens_per_s"].to_numpy()
            fig.add_trace(
                go.Scatter(
                    x=np.concatenate([x, x[::-1]]),
                    y=np.concatenate(
                        [
                            pts["usd_per_mtok_low90"].to_numpy(),
                            pts["usd_per_mtok_high90"].to_numpy()[::-1],
                        ]
                    ),
                    fill="toself",
                    fillcolor=colour,
                    opacity=0.15,
                    line={"width": 0},
                    hoverinfo="skip",
                    name=f"{curve.name}: 90 % interval",
                    legendgroup=curve.name,
                    visible=curve.group == first,
                    meta=curve.group,
                )
            )
        data, template = _hover(pts)
        speeds = pts["tokens_per_s"].to_numpy()
        marked = np.isin(speeds, list(curve.marks.values()))
        fig.add_trace(
            go.Scatter(
                x=speeds,
                y=pts["usd_per_mtok"].to_numpy(),
                mode="lines+markers",
                name=curve.name,
                legendgroup=curve.name,
                line={"color": colour, "width": 2, "dash": PLOTLY_DASH[curve.dash]},
                marker={"size": np.where(marked, 10, 4).tolist(), "color": colour},
                customdata=data,
                text=_text(pts),
                hovertemplate=template,
                visible=curve.group == first,
                meta=curve.group,
            )
        )
    traces = fig.data
    templates = {t.hovertemplate for t in traces}
    if len(templates) == 1 and len(traces) > 1:  # said once, in the layout's template
        for t in traces:
            t.hovertemplate = None
        fig.update_layout(template={"data": {"scatter": [{"hovertemplate": templates.pop()}]}})
    menus = []
    if len(groups) > 1:
        buttons = [
            {
                "label": g or "(all)",
                "method": "update",
                "args": [
                    {"visible": [t.meta == g for t in traces]},
                    {"title.text": _title(section, g)},
                ],
            }
            for g in groups
        ]
        if len(traces) <= ALL_LIMIT:
            buttons.insert(
                0,
                {
                    "label": "all curves",
                    "method": "update",
                    "args": [
                        {"visible": [True] * len(traces)},
                        {"title.text": _title(section, "")},
                    ],
                },
            )
        menus = [
            {
                "buttons": buttons,
                "direction": "down",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.03,
                "yanchor": "bottom",
                "showactive": True,
                "active": 1 if len(traces) <= ALL_LIMIT else 0,
            }
        ]
    fig.update_layout(
        template=_template(fig.layout.template),
        title={"text": _title(section, first), "font": {"size": 14}, "y": 0.98, "yanchor": "top"},
        xaxis={"title": {"text": "tokens per second per request"}, "rangemode": "tozero"},
        yaxis={
            "title": {"text": "cost per million output tokens"},
            "type": "log",
            **_dollar_axis([c.points for c in section.curves]),
        },
        legend={"title": {"text": "click to hide or show"}},
        hoverlabel={"align": "left"},
        updatemenus=menus,
        margin={"t": 130},
        height=640,
    )
    return fig


def _dollar_axis(tables) -> dict:
    """A log dollar axis ticked as the PNGs are (``style.dollar_ticks``: 1, 2 and 5 times the
    powers of ten, labelled by ``style.dollars``), over every curve's range, so that no tick,
    minor ones included, lacks its dollar sign."""
    values = np.concatenate(
        [t["usd_per_mtok"].to_numpy(dtype=float) for t in tables if len(t)] or [np.array([])]
    )
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size:
        return {"tickprefix": "$"}
    ticks = dollar_ticks(values.min() / 1.5, values.max() * 1.5)
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [dollars(v) for v in ticks]}


def _law_figure(section: Section):
    """The square-root law of a section (paper Figure 2): measured best latencies against
    parameters on log-log axes, the law through the smallest model dashed, as the PNG draws."""
    _, go = require_plotly()
    params = np.array([p["params"] for p in section.law], dtype=float)
    latency = np.array([p["latency_ms"] for p in section.law], dtype=float)
    grid = np.logspace(np.log10(params.min() / 2), np.log10(params.max() * 2), 50)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=grid,
            y=square_root_law(grid, params[0], latency[0]),
            mode="lines",
            name="square-root law through the smallest model",
            line={"color": "gray", "dash": "dash"},
            hovertemplate="%{x:.3s} parameters: %{y:.3g} ms<extra>square-root law</extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=params,
            y=latency,
            mode="markers+text",
            name="measured best latency",
            text=[p.get("label", "") for p in section.law],
            textposition="bottom right",
            marker={"color": "black", "size": 9},
            hovertemplate="%{text}: %{x:.3s} parameters, %{y:.3g} ms<extra></extra>",
        )
    )
    xs = log_ticks(grid.min(), grid.max(), DOLLAR_TICKS)
    law = square_root_law(grid, params[0], latency[0])
    ys = log_ticks(min(law.min(), latency.min()), max(law.max(), latency.max()), LATENCY_TICKS)
    fig.update_layout(
        template="plotly_white",
        title={"text": _title(section, ""), "font": {"size": 14}},
        xaxis={
            "title": {"text": "parameters"},
            "type": "log",
            "tickmode": "array",
            "tickvals": xs,
            "ticktext": [parameters(v) for v in xs],
        },
        yaxis={
            "title": {"text": "best token latency (ms)"},
            "type": "log",
            "tickmode": "array",
            "tickvals": ys,
            "ticktext": [f"{v:g}" for v in ys],
        },
        height=560,
    )
    return fig


def _template(extra):
    """plotly_white, with the shared hover template (if any) as its scatter default."""
    import plotly.io as pio

    base = pio.templates["plotly_white"]
    if extra is not None and extra.data.scatter:
        base = base.to_plotly_json()
        base["data"]["scatter"] = [extra.data.scatter[0].to_plotly_json()]
    return base


def _title(section: Section, group: str) -> str:
    """The plot's title: the group shown (the page's heading already names the section)."""
    return html.escape(group or section.title)


def _table(df: pd.DataFrame, max_rows: int | None = None) -> str:
    """An HTML table, its cells as the text tables print them (``render.table_cells``: short
    headers, milliseconds, whole numbers without decimals), so that it fits the page."""
    shown = df if max_rows is None else df.head(max_rows)
    headers, cells, numeric = table_cells(shown.reset_index(drop=True))
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td class='{'num' if n else 'text'}'>{html.escape(v)}</td>"
            for v, n in zip(row, numeric)
        )
        + "</tr>"
        for row in cells
    )
    text = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    if max_rows is not None and len(df) > max_rows:
        text += f"<p>First {max_rows} of {len(df)} rows.</p>"
    return text


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 1.6em; } h3 { font-size: 1.05em; }
.scroll { max-height: 32em; overflow: auto; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.75em; }
th, td { padding: 1px 4px; white-space: nowrap; }
td.num { text-align: right; } td.text { text-align: left; }
th { position: sticky; top: 0; background: #f3f3f3; text-align: center; white-space: normal; }
tr:nth-child(even) td { background: #fafafa; }
.note { color: #555; font-size: 0.9em; }
"""


def render(sections: list[Section], title: str, max_points: int = MAX_POINTS) -> str:
    """The whole page: every section's figure, key points and assumptions; plotly.js once."""
    plotly, _ = require_plotly()
    from importlib.metadata import version

    body = [f"<h1>{html.escape(title)}</h1>"]
    for i, section in enumerate(sections):
        if len(sections) > 1:
            body.append(f"<h2 id='s{i}'>{html.escape(section.title)}</h2>")
        if section.description:
            body.append(f"<p>{html.escape(section.description)}</p>")
        fig = figure(section, max_points)
        body.append(
            fig.to_html(
                full_html=False,
                include_plotlyjs=i == 0,
                div_id=f"frontiers-{i}",
                config={"displaylogo": False, "responsive": True},
            )
        )
        shown = sum(min(len(c.points), max_points) for c in section.curves)
        total = sum(len(c.points) for c in section.curves)
        if section.curves:
            body.append(
                "<p class='note'>Each line is a Pareto frontier (no point is both faster and cheaper "
                "than another); large markers are its key points. Hover a point for its layout and "
                "where its latency goes; the menu picks a group of curves, the legend hides or shows "
                f"one. {shown} of {total} frontier points are drawn (at most {max_points} per curve, "
                "evenly spaced along the line, key points always). The table below lists the key points "
                "only: every frontier point is in a study's frontiers table (study --out) or, for one "
                "curve, in frontier --all-points.</p>"
            )
        for note in section.notes:
            body.append(f"<p class='note'>{html.escape(note)}</p>")
        body.append("<h3>Key points</h3>")
        body.append(f"<details open><summary>{len(section.key_table)} rows</summary>")
        body.append(f"<div class='scroll'>{_table(section.key_table)}</div></details>")
        if section.assumptions:
            body.append("<h3>Assumptions</h3>")
            for heading, df in section.assumptions:
                body.append(f"<details><summary>{html.escape(heading)}</summary>")
                body.append(f"<div class='scroll'>{_table(df)}</div></details>")
    try:
        ours = version("inference-econ")
    except Exception:  # pragma: no cover
        ours = "unknown"
    body.append(
        f"<p class='note'>Written by inference-econ {html.escape(ours)} with plotly "
        f"{html.escape(plotly.__version__)}; self-contained, opens without a network.</p>"
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def write_report(sections: list[Section], path, title: str, max_points: int = MAX_POINTS) -> Path:
    """Write the page atomically."""
    return write_atomic(path, render(sections, title, max_points))


# --- sections of a study's output folder and of a scenario run -----------------------------


def _varying(manifest: dict) -> list[str]:
    axes = manifest["axes"]
    return [a for a, values in axes.items() if len(values) > 1] or list(axes)


def study_section(folder, compare: str | None = None, where: dict | None = None) -> Section:
    """The section of a study's output folder (``study.json``, the key-point and frontier
    tables): one curve per cell, the selector over every axis but ``compare``. ``where``
    (axis -> values, as text) keeps only the cells with those values: a slice of the study."""
    folder = Path(folder)
    manifest = read_manifest(folder / "study.json")
    keys, fronts = _read(folder, "key_points"), _read(folder, "frontiers")
    varying = _varying(manifest)
    if compare is None:
        compare = "hardware" if "hardware" in varying else varying[-1]
    if compare not in manifest["axes"]:
        raise SpecError(
            "command line",
            "--compare",
            f"{compare!r} is not an axis",
            f"axes: {', '.join(manifest['axes'])}",
        )
    _check_cells(manifest, keys, fronts)
    cells = _slice(manifest, where or {})
    keys = keys[keys["cell"].isin([c["cell"] for c in cells])]
    varying = [a for a in varying if len({str(c["values"][a]) for c in cells}) > 1] or varying
    grouping = [a for a in varying if a != compare]
    curves = []
    by_cell = dict(tuple(fronts.groupby("cell", sort=False))) if len(fronts) else {}
    for cell in cells:
        values = cell["values"]
        pts = by_cell.get(cell["cell"], pd.DataFrame(columns=["tokens_per_s", "usd_per_mtok"]))
        marks = keys[(keys["cell"] == cell["cell"]) & keys["feasible"]]
        marks = {
            p: s
            for p, s in zip(marks["point"], marks["tokens_per_s"])
            if p in ("fastest", "preference", "cheapest")
        }
        name = str(values[compare]) if len(varying) > 1 else cell["label"]
        group = " · ".join(f"{a}: {values[a]}" for a in grouping)
        rows = keys[keys["cell"] == cell["cell"]]
        spec = speculates(rows.iloc[0].to_dict()) if len(rows) else False
        curves.append(
            Curve(name, pts.sort_values("tokens_per_s"), group, marks, dash=line_style(spec))
        )
    # the axes whose value varies among the cells shown (a slice's fixed ones are in its title)
    axes = [a for a in manifest["axes"] if len({str(c["values"][a]) for c in cells}) > 1]
    table = _key_summary(keys, axes or list(manifest["axes"]), manifest.get("at_speeds", []))
    real = continuous_note(keys[keys["feasible"].astype(bool)]) if len(keys) else None
    sliced = "; ".join(f"{a} = {', '.join(v)}" for a, v in (where or {}).items())
    return Section(
        title=manifest["title"] + (f" (the slice {sliced})" if sliced else ""),
        description=manifest.get("description", ""),
        curves=curves,
        key_table=table,
        assumptions=_study_assumptions(manifest),
        notes=[
            f"{len(manifest['cells'])} cells from {manifest['source']} "
            f"(inference-econ {manifest['package_version']}); "
            + (
                "complete."
                if manifest.get("complete", True)
                else "INCOMPLETE: some cells failed, see study.json."
            )
        ]
        + ([real] if real else []),
    )


def read_manifest(path: Path) -> dict:
    """A study's ``study.json`` through the input boundary, checked for the shape the report
    reads (``runs.study_run.manifest`` writes it): anything else is one error naming the
    file and the field, never a traceback from deep inside the report."""
    fix = "run 'inference-econ study FILE --out DIR' first"
    if not os.path.lexists(path):
        raise SpecError(str(path), "", "cannot read a study's output here (no study.json)", fix)
    data = read_json(path)
    where = str(path)
    top = Reader(data, where)
    for key in ("title", "source", "package_version"):
        top.string(key)
    top.string("description", "")
    axes = top.mapping("axes")
    if not axes:
        raise SpecError(where, "axes", "is empty", fix)
    for name, values in axes.items():
        if not isinstance(values, list) or not values:
            raise SpecError(
                where, f"axes.{name}", f"expected a list of values, got {short(values)}", fix
            )
    cells = top.raw("cells")
    if not isinstance(cells, list) or not cells:
        raise SpecError(where, "cells", f"expected a list of cells, got {short(cells)}", fix)
    for i, cell in enumerate(cells):
        item = Reader(cell, where, f"cells.{i}")
        item.number("cell", minimum=0, integer=True)
        item.string("label")
        values = item.mapping("values")
        missing = [a for a in axes if a not in values]
        if missing:
            raise SpecError(where, f"cells.{i}.values", f"has no value of axis {missing[0]!r}", fix)
    speeds = top.raw("at_speeds", [])
    if not isinstance(speeds, list):
        raise SpecError(where, "at_speeds", f"expected a list of speeds, got {short(speeds)}", fix)
    for i, speed in enumerate(speeds):
        check_number(speed, where, f"at_speeds.{i}", minimum=0, exclusive_minimum=True)
    top.boolean("complete", True)
    for key in ("assumptions", "hardware", "models"):
        for name, value in (top.mapping(key, {}) or {}).items():
            if not isinstance(value, Mapping):
                raise SpecError(
                    where, f"{key}.{name}", f"expected a mapping, got {short(value)}", fix
                )
    return data


#: The largest table of a study's folder read back (the tool's own output, larger than the
#: inputs a user gives: a frontier row per cell and point).
MAX_TABLE_BYTES = 2**31
#: Columns the report reads from a study's key-point table.
KEY_COLUMNS = (
    "cell", "point", "target_tokens_per_s", "feasible", "note",
    "tokens_per_s", "usd_per_mtok", "gpus", "batch",
)  # fmt: skip


def _read(folder: Path, name: str) -> pd.DataFrame:
    """A table of a study's folder, through the input boundary: Parquet when pyarrow can read
    it (faster), else CSV; the key points must have the columns the report reads, and every
    column it reads must hold what the study wrote (``_check_key_points``,
    ``_check_frontiers``): a table the tool wrote is refused whole, never drawn in part. The
    frame's ``attrs["source"]`` is the file read and ``attrs["first_line"]`` the line of its
    first row (0: a Parquet file, whose rows are counted from 1)."""
    parquet = folder / f"{name}.parquet"
    df = None
    source, first = str(parquet), 0
    if os.path.isfile(parquet):
        try:
            df = pd.read_parquet(io.BytesIO(read_bytes(parquet, MAX_TABLE_BYTES)))
        except ImportError:
            pass
        except (ValueError, OSError) as exc:  # pyarrow's errors derive from these
            raise SpecError(
                str(parquet), "", f"cannot read the table ({exc})", "rerun the study"
            ) from None
    if df is None:
        path = folder / f"{name}.csv"
        if not os.path.lexists(path):
            raise SpecError(str(folder), name, "the table is missing", "rerun the study")
        text = read_text(path, MAX_TABLE_BYTES)
        source = str(path)
        if text and not text.endswith("\n"):  # the study ends every row with a line break
            raise SpecError(
                source,
                "",
                "ends in the middle of a row (the file is cut short)",
                "rerun the study",
            )
        # first, '#' lines: what the table was computed with
        skip = sum(1 for _ in itertools.takewhile(lambda x: x.startswith("#"), text.splitlines()))
        first = skip + 2  # the header's line, then the first row's
        try:
            df = pd.read_csv(
                io.StringIO(text), keep_default_na=False, na_values=[""], skiprows=skip
            )
        except (ValueError, pd.errors.ParserError) as exc:
            raise SpecError(
                str(path), "", f"cannot read the table ({exc})", "rerun the study"
            ) from None
    df.attrs.update(source=source, first_line=first)
    if name == "key_points":
        missing = [c for c in KEY_COLUMNS if c not in df.columns]
        if missing:
            raise SpecError(str(folder / name), missing[0], "column missing", "rerun the study")
        _check_key_points(df)
    elif len(df) and not {"cell", "tokens_per_s", "usd_per_mtok"} <= set(df.columns):
        raise SpecError(
            str(folder / name), "", "is not a study's frontier table", "rerun the study"
        )
    else:
        _check_frontiers(df)
    return df


#: Columns of a frontier table the report draws (a point's place): finite and positive.
FRONTIER_FIGURES = ("tokens_per_s", "usd_per_mtok")
#: Columns of a frontier table the report shows on hover, where a table has them: numbers, and
#: finite and not negative where given (a column only some cells have is empty in the others).
HOVER_COLUMNS = (
    *(c for c, _, _ in LAYOUT),
    "latency_s",
    "mfu",
    *ADDITIVE_PARTS,
)
#: Columns of 90 % intervals (expected figures), drawn as a band: finite and positive where given.
INTERVAL_COLUMNS = ("usd_per_mtok_low90", "usd_per_mtok_high90")
#: Figures of a key point the report shows, where the point is feasible: finite and positive.
KEY_FIGURES = ("tokens_per_s", "usd_per_mtok", "gpus", "batch")
#: How the ``feasible`` column of a key-point table may read (CSV text or Parquet booleans).
FEASIBLE = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _bad(df: pd.DataFrame, column: str, at, problem: str) -> SpecError:
    """The error of a study table's ``column``: ``problem`` of its row at position ``at``,
    named by its line in a CSV file (its row in a Parquet one)."""
    first = df.attrs.get("first_line", 0)
    row = f"line {first + at}" if first else f"row {at + 1}"
    return SpecError(
        df.attrs.get("source", "study table"), column, f"{row}: {problem}", "rerun the study"
    )


def _numbers(df: pd.DataFrame, column: str) -> np.ndarray:
    """``column`` as floats (empty cells NaN); a cell that is not a number (text, a boolean;
    in a Parquet file, any text: its columns are typed) is an error naming the file, the
    column and the row."""
    values = df[column]
    if pd.api.types.is_bool_dtype(values.dtype):
        raise _bad(df, column, 0, f"{short(values.iloc[0])} is not a number (a boolean column)")
    if pd.api.types.is_numeric_dtype(values.dtype):
        return values.to_numpy(dtype=float)
    given = values.notna().to_numpy()
    if not df.attrs.get("first_line", 0) and given.any():  # Parquet: its columns are typed
        at = int(np.flatnonzero(given)[0])
        raise _bad(df, column, at, f"{short(values.iloc[at])} is text, not a number")
    number = pd.to_numeric(values, errors="coerce")
    text = values.notna() & number.isna()
    if text.any():
        at = int(np.flatnonzero(text.to_numpy())[0])
        raise _bad(df, column, at, f"{short(values.iloc[at])} is not a number")
    flags = values.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    if flags.any():
        at = int(np.flatnonzero(flags)[0])
        raise _bad(df, column, at, f"{short(values.iloc[at])} is not a number")
    return number.to_numpy(dtype=float)


def _check_figures(
    df: pd.DataFrame, column: str, rows=None, positive: bool = True, required: bool = True
) -> np.ndarray:
    """``column`` of ``df`` as numbers, each of ``rows`` (a mask; None: every row) finite and
    positive (``positive``; else not negative); an empty cell is refused when ``required``."""
    values = _numbers(df, column)
    mask = np.ones(len(values), bool) if rows is None else np.asarray(rows, bool)
    given = mask & ~np.isnan(values) if not required else mask
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(values) & ((values > 0) if positive else (values >= 0))
    wrong = given & ~ok
    if wrong.any():
        at = int(np.flatnonzero(wrong)[0])
        value = values[at]
        what = "empty" if np.isnan(value) else f"{short(float(value))}"
        need = "a finite number above 0" if positive else "a finite number of at least 0"
        raise _bad(df, column, at, f"is {what}, not {need}")
    return values


def _check_cell_column(df: pd.DataFrame) -> None:
    """The ``cell`` column: whole numbers of at least 0 in every row (the cell a row is of)."""
    cells = _check_figures(df, "cell", positive=False)
    whole = cells == np.round(cells)
    if not whole.all():
        at = int(np.flatnonzero(~whole)[0])
        raise _bad(df, "cell", at, f"{short(float(cells[at]))} is not a cell's index")
    df["cell"] = cells.astype(np.int64)


def _check_frontiers(df: pd.DataFrame) -> None:
    """A study's frontier table as the report draws it: every row of a cell, at a finite,
    positive speed and cost, with numbers in the columns shown on hover."""
    if not len(df):
        return
    _check_cell_column(df)
    for column in FRONTIER_FIGURES:
        df[column] = _check_figures(df, column)
    for column in INTERVAL_COLUMNS:
        if column in df:
            df[column] = _check_figures(df, column, required=False)
    for column in HOVER_COLUMNS:
        if column in df:
            df[column] = _check_figures(df, column, positive=False, required=False)


def _check_key_points(df: pd.DataFrame) -> None:
    """A study's key-point table as the report reads it: the cell of every row, whether the
    point is feasible (true or false), and a feasible point's finite, positive figures."""
    if not len(df):
        raise SpecError(df.attrs["source"], "", "has no rows", "rerun the study")
    _check_cell_column(df)
    feasible = df["feasible"]
    if not pd.api.types.is_bool_dtype(feasible.dtype):
        text = feasible.astype(str).str.strip().str.lower()
        known = text.isin(list(FEASIBLE))
        if not known.all():
            at = int(np.flatnonzero(~known.to_numpy())[0])
            raise _bad(df, "feasible", at, f"{short(feasible.iloc[at])} is not true or false")
        feasible = text.map(FEASIBLE)
    df["feasible"] = feasible.to_numpy(dtype=bool)
    for column in KEY_FIGURES:
        df[column] = _check_figures(df, column, rows=df["feasible"].to_numpy())
    at_speed = (df["point"] == "at_speed").to_numpy()
    df["target_tokens_per_s"] = _check_figures(df, "target_tokens_per_s", rows=at_speed)


def _check_cells(manifest: dict, keys: pd.DataFrame, fronts: pd.DataFrame) -> None:
    """The tables and ``study.json`` describe the same cells: every row is of a cell of the
    manifest, every cell has its key points, and every cell with a feasible key point has
    its frontier's rows."""
    cells = [int(c["cell"]) for c in manifest["cells"]]
    known = set(cells)
    for df in (keys, fronts):
        if len(df):
            strays = ~df["cell"].isin(known).to_numpy()
            if strays.any():
                at = int(np.flatnonzero(strays)[0])
                raise _bad(
                    df, "cell", at, f"{int(df['cell'].iloc[at])} is not a cell of study.json"
                )
    with_keys = set(keys["cell"].tolist())
    missing = [c for c in cells if c not in with_keys]
    if missing:
        raise SpecError(
            keys.attrs["source"], "cell", f"has no row of cell {missing[0]}", "rerun the study"
        )
    drawn = set(fronts["cell"].tolist()) if len(fronts) else set()
    feasible = keys.loc[keys["feasible"], "cell"].tolist()
    missing = [c for c in dict.fromkeys(feasible) if c not in drawn]
    if missing:
        where = fronts.attrs.get("source", "frontiers")
        raise SpecError(
            where,
            "cell",
            f"has no row of cell {missing[0]}, whose key points are feasible",
            "rerun the study",
        )


def _slice(manifest: dict, where: dict) -> list[dict]:
    """The cells whose axis values are among ``where``'s (unknown axes and values are errors)."""
    cells = manifest["cells"]
    for axis, wanted in where.items():
        if axis not in manifest["axes"]:
            raise SpecError(
                "command line",
                "--where",
                f"{axis!r} is not an axis",
                f"axes: {', '.join(manifest['axes'])}",
            )
        known = [str(v) for v in manifest["axes"][axis]]
        for value in wanted:
            if value not in known:
                raise SpecError(
                    "command line",
                    "--where",
                    f"{axis} has no value {value!r}",
                    f"values: {', '.join(known)}",
                )
        cells = [c for c in cells if str(c["values"][axis]) in wanted]
    return cells


def _key_summary(keys: pd.DataFrame, axes: list[str], speeds) -> pd.DataFrame:
    """One row per cell: the axes, then the fastest, preference and cheapest points and the
    cost at each speed."""
    head = keys.drop_duplicates("cell").set_index("cell")[axes]
    out = head.copy()
    pick = {  # the fastest point's batch is about 1 and its GPUs say its size
        "fastest": ("tokens_per_s", "usd_per_mtok", "gpus"),
        "preference": ("tokens_per_s", "usd_per_mtok", "gpus", "batch"),
        "cheapest": ("usd_per_mtok",),
    }
    for point, cols in pick.items():
        sel = keys[keys["point"] == point].set_index("cell")
        for col in cols:  # short headers, as the text tables print them
            out[f"{point} {HEADERS.get(col, col)}"] = sel[col]
    for speed in speeds:
        sel = keys[
            (keys["point"] == "at_speed") & (keys["target_tokens_per_s"] == speed)
        ].set_index("cell")
        out[f"$/Mtok at {speed:g} tok/s"] = sel["usd_per_mtok"]
    status = keys.groupby("cell")["note"].first()
    blank = status.isna() | status.astype(str).str.strip().eq("")
    if not blank.all():  # a column of blanks would only widen
        out["note"] = status.where(~blank, "")  # a cell with no note blank, never "nan"
    return out.reset_index()


def _study_assumptions(manifest: dict) -> list[tuple[str, pd.DataFrame]]:
    out = []
    study = {
        "source": manifest["source"],
        "package version": manifest["package_version"],
        "axes": "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in manifest["axes"].items()),
        "exclude": json.dumps(manifest.get("exclude", [])),
        "defaults": json.dumps(manifest.get("defaults", {})),
        "preference point k": manifest.get("preference_k"),
        "cost at speeds (tokens/s per request)": ", ".join(map(str, manifest.get("at_speeds", []))),
    }
    out.append(
        (
            "The study",
            pd.DataFrame({"field": list(study), "value": [str(v) for v in study.values()]}),
        )
    )
    presets = manifest.get("assumptions", {})
    if presets:
        out.append(("Modelling assumptions (docs/model.md), per preset", _by_field(presets)))
    if manifest.get("hardware"):
        out.append(("Hardware figures", _by_field(manifest["hardware"])))
    if manifest.get("models"):
        out.append(("Models", _by_field(manifest["models"])))
    return out


def _by_field(items: dict) -> pd.DataFrame:
    """Objects side by side: one row per field, one column per object."""
    fields = list(dict.fromkeys(k for v in items.values() for k in v))
    return pd.DataFrame(
        {"field": fields, **{name: [_short(v.get(f)) for f in fields] for name, v in items.items()}}
    )


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_short(v) for v in value)
    return "" if value is None else str(value)


def scenario_section(result) -> Section:
    """The section of a scenario run (``runs.runner.RunResult``): its frontiers in the
    colours and line styles of its PNG figures, or its square-root law (paper Figure 2)."""
    import dataclasses

    scenario = result.scenario
    palette = colours(list(result.fronts), {c.label: c.color for c in scenario.curves})
    dashes = {c.label: line_style(speculates(c.fields), c.linestyle) for c in scenario.curves}
    curves = []
    for label, front in result.fronts.items():
        marks = {}
        if not front.empty:
            marks = {
                "fastest": front.fastest()["tokens_per_s"],
                "preference": front.preference_point(sampling=scenario.preference_sampling)[
                    "tokens_per_s"
                ],
            }
        points = front.points.sort_values("tokens_per_s")
        curves.append(Curve(label, points, "", marks, palette[label], dashes.get(label, "solid")))
    presets, gpus, models = {}, {}, {}
    for curve in scenario.curves:
        if curve.toy is not None:
            continue
        s = curve.setting()
        presets.setdefault(s.assumptions.name, dataclasses.asdict(s.assumptions))
        gpus.setdefault(s.gpu.name, s.gpu.to_dict())
        models.setdefault(
            s.model.name,
            {
                "name": s.model.name,
                "precision": s.model.precision.label(),
                "source": s.model.source,
            },
        )
    curve_fields = pd.DataFrame(
        [
            {
                "curve": c.label,
                **{
                    k: _short(v) if not isinstance(v, dict) else json.dumps(v)
                    for k, v in c.fields.items()
                },
            }
            for c in scenario.curves
        ]
    )
    assumptions = [("Curves (as the scenario file sets them)", curve_fields)]
    if presets:
        assumptions.append(
            ("Modelling assumptions (docs/model.md), per preset", _by_field(presets))
        )
    if gpus:
        assumptions.append(("Hardware figures", _by_field(gpus)))
    if models:
        assumptions.append(("Models", _by_field(models)))
    return Section(
        title=scenario.title,
        description=scenario.description,
        curves=curves,
        key_table=result.key_points if result.key_points is not None else pd.DataFrame(),
        assumptions=assumptions,
        notes=[f"Scenario {scenario.name} ({display_path(scenario.source)})."]
        + list(scenario.notes)
        + list(result.notes),
        law=[m for m in scenario.measured if "params" in m],
    )
