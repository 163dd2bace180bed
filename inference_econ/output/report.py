"""The interactive report: one self-contained HTML file (plotly.js inline, no network needed).

A report has one section per study or scenario: its frontiers on a log-dollar axis, where
hovering a point shows its layout (GPUs, batch, PP/TP/EP, attention degree, draft length) and
where its latency goes; a selector for groups of curves (and the legend to toggle single ones);
the key-point table; and the assumptions the numbers were computed with. plotly is an optional
extra (``inference-econ[html]``); everything interactive is plotly's own, no JavaScript of ours.

The page is assembled here; a section's figure is drawn by ``report_figures``, the sections are
built by ``report_sections`` and a study's folder is read back by ``study_folder``.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ..errors import plural
from .files import write_atomic
from .render import table_cells
from .report_figures import MAX_POINTS, figure, require_plotly
from .report_sections import Section


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
        if section.figures:  # bound or expected, first, as every command says it
            body.append(f"<p class='figures'><strong>{html.escape(section.figures)}</strong></p>")
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
        n = len(section.key_table)
        body.append(f"<details open><summary>{n} {plural(n, 'row')}</summary>")
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
