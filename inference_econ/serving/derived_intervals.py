"""Intervals of figures derived from others' (docs/model.md §F12): an inverse, a ratio, a
renamed figure, a plan's headroom, the ends of a rerun at its step's interval ends, and any
figure's ends held within the ideal bound's value of it. Each reads the interval columns the
figures it comes from already carry."""

from __future__ import annotations

import numpy as np

from .figure_labels import interval_columns


def inverse_intervals(row: dict, source: str, name: str) -> dict:
    """The interval columns of ``name`` = 1 / ``source`` (a speed per request from its mean
    time per output token), from those of ``source`` in ``row``; {} if it has none."""
    have = interval_columns(source)
    if not all(c in row for c in have):
        return {}
    ends = [row[c] for c in have]  # low80, high80, low90, high90
    inverse = [1.0 / ends[1], 1.0 / ends[0], 1.0 / ends[3], 1.0 / ends[2]]
    return dict(zip(interval_columns(name), inverse))


def ratio_intervals(row, numerator: str, denominator: str, name: str) -> dict:
    """The interval columns of ``name`` = ``numerator`` / ``denominator`` from theirs in
    ``row``, end against opposite end (their errors are not assumed paired: conservative);
    {} where either has none (an ideal bound)."""
    top, bottom = interval_columns(numerator), interval_columns(denominator)
    if row is None or not all(c in row for c in (*top, *bottom)):
        return {}
    t, b = [float(row[c]) for c in top], [float(row[c]) for c in bottom]
    ends = [t[0] / b[1], t[1] / b[0], t[2] / b[3], t[3] / b[2]]  # low80 high80 low90 high90
    return dict(zip(interval_columns(name), ends))


def nested_ends(at_ends, value: float) -> tuple[float, float, float, float]:
    """(low80, high80, low90, high90) of a figure propagated through a rerun or a ratio:
    ``at_ends`` its values with the engine at its step time's (or figures') low80, high80,
    low90 and high90 ends, in any order of size. Each level spans the least and the most of
    its two ends and the figure itself, and the 90 % interval holds the 80 %."""
    a = [float(x) for x in at_ends]
    low80, high80 = min(a[0], a[1], value), max(a[0], a[1], value)
    return low80, high80, min(a[2], a[3], low80), max(a[2], a[3], high80)


def paired_ratio_intervals(row, numerator: str, denominator: str, name: str) -> dict:
    """The interval columns of ``name`` = ``numerator`` / ``denominator``, two figures of one
    engine and one prompt, each at the same end of its own interval (the engine's error at the
    same quantile in both: where they fall in one stratum it cancels, and the ratio is exact),
    between the least and the most of those and the ratio itself; {} where either has none."""
    top, bottom = interval_columns(numerator), interval_columns(denominator)
    if row is None or not all(c in row for c in (*top, *bottom)):
        return {}
    value = float(row[numerator]) / float(row[denominator])
    ends = [float(row[t]) / float(row[b]) for t, b in zip(top, bottom)]
    return dict(zip(interval_columns(name), nested_ends(ends, value)))


def headroom_intervals(row, rate_per_s: float, limits: dict[str, float]) -> dict:
    """The interval columns of a plan's headrooms from those of the figures they are read
    from in ``row``: ``load_headroom`` = max rate / offered rate − 1, and ``<m>_headroom`` =
    1 − p99 / limit for each limit (``ttft``, ``tpot``, ``e2e``: the p99's high end is the
    headroom's low end; below 0 the target would be missed there); {} for a bound."""
    out: dict[str, float] = {}
    held = interval_columns("max_rate_per_s")
    if all(c in row for c in held):
        ends = [float(row[c]) / rate_per_s - 1.0 for c in held]
        out.update(zip(interval_columns("load_headroom"), ends))
    for name, limit in limits.items():
        p99 = interval_columns(f"{name}_p99_s")
        if all(c in row for c in p99):
            e = [1.0 - float(row[c]) / limit for c in p99]  # low80 high80 low90 high90 of p99
            out.update(zip(interval_columns(f"{name}_headroom"), [e[1], e[0], e[3], e[2]]))
    return out


def renamed_intervals(row, source: str, name: str) -> dict:
    """The interval columns of ``source`` in ``row`` (a mapping or a Series) under ``name``:
    a figure taken from another result (a sweep's cheapest $/Mtok from its frontier's
    cheapest point); {} if ``source`` has none there (an ideal bound)."""
    have = interval_columns(source)
    if row is None or not all(c in row for c in have):
        return {}
    return {new: float(row[old]) for old, new in zip(have, interval_columns(name))}


def within_ideal(row, ideal, figures) -> dict:
    """The interval columns of ``row``'s figures (``figures``: name -> (kind, orientation))
    with no end faster than ``ideal``, the same result under the ideal preset: a time's or a
    price's low ends at least its ideal value, a speed's or a rate's high ends at most it,
    never past the figure itself (a row of arrays, one per configuration, or of numbers)."""
    out: dict = {}
    for name, (kind, orientation) in figures.items():
        have = interval_columns(name)
        if name not in ideal or not all(c in row for c in have):
            continue
        value = np.asarray(row[name], dtype=float)
        bound = np.asarray(ideal[name], dtype=float)
        usable = np.isfinite(bound) & (bound > 0)
        low80, high80, low90, high90 = (np.asarray(row[c], dtype=float) for c in have)
        if (orientation > 0) == (kind != "throughput"):  # a time or a price: the low ends
            b = np.where(usable, np.minimum(bound, value), -np.inf)
            low80, low90 = np.maximum(low80, b), np.maximum(low90, b)
            high80, high90 = np.maximum(high80, low80), np.maximum(high90, low90)
        else:  # a speed or a rate: the high ends
            b = np.where(usable, np.maximum(bound, value), np.inf)
            high80, high90 = np.minimum(high80, b), np.minimum(high90, b)
            low80, low90 = np.minimum(low80, high80), np.minimum(low90, high90)
        ends = (low80, high80, low90, high90)
        out.update({c: (e if np.ndim(row[c]) else float(e)) for c, e in zip(have, ends)})
    return out
