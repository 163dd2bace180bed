"""How a command states a result: a first line saying whether its figures are an ideal bound
or expected (an engine profile), expected figures' intervals as ranges in text tables (their
``_low80`` ... columns in CSV and JSON), one result as a field/value table; a text result's tables and notes emitted together, and a
figure saved where ``--figure`` names it."""

from __future__ import annotations

import click

from .. import settings as table
from .common import FigureFile, emit


def stated_table(
    df, fmt: str, under, title: str = "", meta=None, notes=(), intervals: bool = True
) -> str:
    """A table whose first line says whether its figures are an ideal bound or expected
    (``serving.intervals.figures_line``; CSV and JSON: the first note), as every command
    states it. ``under``: the setting or preset label the figures were computed under, or
    several (a study's cells): one line for each kind of figure. Expected figures' intervals
    are ranges in a text table (``output.ranges.ranged_columns``) and their ``_low80`` ...
    columns in CSV and JSON; ``intervals=False``: the table has none (its line says so)."""
    from ..output.ranges import ranged_columns
    from ..output.render import render

    line, covered = first_line(under, intervals)
    notes = [*covered, *notes]
    if fmt in ("csv", "json"):
        return render(df, fmt, title=title, meta=meta, notes=[line, *notes])
    shown = ranged_columns(df)
    return line + "\n" + render(shown, fmt, title=title, meta=meta, notes=list(notes))


def first_line(under, intervals: bool = True, parts: str = "Cells") -> tuple[str, list[str]]:
    """The line saying whether figures computed under ``under`` (a setting or preset label, or
    several: a study's cells, a fleet's models, named by ``parts``) are an ideal bound or
    expected, and the notes of those outside what the measured data covers."""
    from .. import api

    labels = list(under) if isinstance(under, (list, tuple)) else [under]
    covered = (api.coverage_note(u) for u in labels if isinstance(u, api.Setting) and intervals)
    return api.figures_line(labels, intervals, parts), list(dict.fromkeys(n for n in covered if n))


def vertical(series, fmt: str, title: str, meta=None, notes=()) -> str:
    """One result (a Series, or a dict: then without pandas) as a field/value table,
    durations in milliseconds under ``_ms`` names (or one CSV/JSON row in seconds, under the
    API's names), with ``notes`` below it."""
    from ..output.render import (
        format_number,
        is_duration,
        milliseconds_name,
        render_cells,
        row_text,
    )

    fmt = table.option("format").check(fmt, "argument", "format")
    if fmt in ("json", "csv"):
        return row_text(dict(series.items()), fmt, title=title, notes=notes, meta=meta)
    cells = []
    for key, value in series.items():
        if is_duration(key) and isinstance(value, (int, float)):
            key, value = milliseconds_name(key), value * 1e3
        cells.append([key, format_number(value)])
    return render_cells(["field", "value"], cells, [False, False], fmt, title, notes, meta)


def stated(row, fmt: str, title: str, setting, meta=None, notes=(), kinds_of=None) -> str:
    """``vertical`` for a result computed under ``setting``: a first line saying whether its
    figures are expected (an engine profile) or an ideal bound; expected figures with their
    80 % and 90 % intervals as ranges (CSV and JSON: their ``_low80`` ... columns), and a line
    when the case is outside what the data covers (``kinds_of``: the figures whose kinds it
    names, as ``serving.intervals.FIGURES`` reads them; default every kind)."""
    from .. import api
    from ..output.ranges import ranged

    line = api.figures_line(setting)
    cover = None
    if api.expected_figures(setting) and kinds_of is None:  # expected figures only
        cover = api.coverage_note(setting)
    elif api.expected_figures(setting):  # the row's own layout, as its support reads it
        cover = api.rows_coverage_note(setting, {k: [row[k]] for k in kinds_of}, 1)
    notes = [*filter(None, [cover]), *notes]
    if fmt in ("csv", "json"):
        return vertical(row, fmt, title, meta, [line, *notes])
    return line + "\n" + vertical(ranged(row), fmt, title, meta, notes)


def emit_tables(head: str, body: str, notes, meta: dict, fmt: str, out: str | None) -> None:
    """``emit`` a text result: its head, its tables, then its notes and what it was computed
    with, a line each (a blank line before them in Markdown)."""
    from ..output.render import meta_lines

    gap = "\n" if fmt == "markdown" else ""
    lines = [*notes, *meta_lines(meta)]
    emit(head + "\n" + body + gap + "".join(f"{n}\n" for n in lines), out)


def save_figure(fig, path: str) -> None:
    """Save ``fig`` where ``--figure PATH`` names (its format by the suffix) and say where."""
    from ..output.plots import save

    for written in save(fig, *FigureFile.target(path)):
        click.echo(f"wrote {written}", err=True)
