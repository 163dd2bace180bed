"""Expected figures with their intervals as the text tables show them (docs/model.md §F12): a
range beside each figure; CSV and JSON keep the ``*_low80/_high80/_low90/_high90`` columns."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..serving.figure_labels import LEVELS, interval_columns
from .render import HEADERS, format_number, is_duration, is_na, milliseconds_name


def _figures(names) -> list[str]:
    """The figures among ``names`` whose four interval columns are there too."""
    names = list(names)
    return [n for n in names if all(c in names for c in interval_columns(n))]


def _text(value, key: str) -> str:
    scale = 1e3 if is_duration(key) else 1.0
    return format_number(value * scale)


def _span(low, high, key: str) -> str:
    """A range as text: ``17.3-24.6``; ``-0.05 to 0.74`` where an end is negative (a hyphen
    there reads as a minus sign)."""
    sep = " to " if low < 0 or high < 0 else "-"
    return f"{_text(low, key)}{sep}{_text(high, key)}"


def ranged(series):
    """One result (a field/value table) with each figure's intervals in its value:
    ``20.9 (80 %: 17.3-24.6; 90 %: 16.1-26.0)``, durations in milliseconds as the table shows
    them; the interval entries themselves left out. A Series, or a dict (then a dict: no
    pandas)."""
    figures = _figures(series.keys())
    if not figures:
        return series
    drop = {c for n in figures for c in interval_columns(n)}
    out = {}
    for key, value in series.items():
        if key in drop:
            continue
        if key in figures and isinstance(value, numbers.Real) and not isinstance(value, bool):
            ends = [series[c] for c in interval_columns(key)]
            parts = [
                f"{level} %: {_span(ends[2 * i], ends[2 * i + 1], key)}"
                for i, level in enumerate(LEVELS)
            ]
            name = milliseconds_name(key) if is_duration(key) else key
            out[name] = f"{_text(value, key)} ({'; '.join(parts)})"
        else:
            out[key] = value
    if isinstance(series, dict):
        return out
    import pandas as pd

    return pd.Series(out, dtype=object)


def ranged_columns(df, level: int = 90):
    """A wide table with one ``<figure> <level> %`` column of ranges after each figure that has
    intervals, and the interval columns left out. A DataFrame, or a dict of 1-D arrays (then a
    dict, without pandas: the ``frontier`` command's text table)."""
    figures = _figures(df.keys())
    if not figures:
        return df
    i = LEVELS.index(level)
    dropped = {c for n in figures for c in interval_columns(n)}
    ranges = {}
    for name in figures:
        low, high = interval_columns(name)[2 * i : 2 * i + 2]
        text = [
            _span(a, b, name) if _present(a) and _present(b) else ""
            for a, b in zip(df[low], df[high])
        ]  # blank where the figure is (a cell with no feasible point, or an ideal bound's)
        shown = HEADERS.get(name, milliseconds_name(name) if is_duration(name) else name)
        ranges[name] = (f"{shown} {level} %", text)
    if isinstance(df, dict):
        out = {}
        for name, values in df.items():
            if name not in dropped:
                out[name] = values
            if name in ranges:
                out[ranges[name][0]] = np.array(ranges[name][1], dtype=str)
        return out
    out = df.drop(columns=list(dropped))
    for name, (column, text) in ranges.items():
        out.insert(out.columns.get_loc(name) + 1, column, text)
    return out


def _present(value) -> bool:
    """Not missing (``pd.notna`` of a cell): neither None, pandas' NA nor NaN."""
    if value is None or is_na(value):
        return False
    return not (isinstance(value, (float, np.floating)) and math.isnan(value))
