"""Measured operating points overlaid on figures: a CSV of tokens/s per request and a cost
(USD per million tokens, or tokens/s per GPU priced at a GPU's $/hour), read and checked
column by column; a row that cannot be read is reported with its line and left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import SpecError
from ..model.economics import usd_per_mtok_at_throughput
from ..specs.inputs import Rows, csv_rows, left_out, row_cells
from ..specs.schema import check_number

#: Bounds of the numbers of an overlay CSV (as the ``measured`` points of a scenario file).
OVERLAY_NUMBERS = {
    "tokens_per_s": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="tokens/s"),
    "usd_per_mtok": dict(
        minimum=0, exclusive_minimum=True, maximum=1e12, unit="USD per million tokens"
    ),
    "tokens_per_s_per_gpu": dict(minimum=0, exclusive_minimum=True, maximum=1e12, unit="tokens/s"),
}


class _Where:
    """Where each row of a file is ("file: line N"), made only for the rows asked about."""

    def __init__(self, source: str, lines: list) -> None:
        self.source, self.lines = source, lines

    def __getitem__(self, i: int) -> str:
        return f"{self.source}: line {self.lines[i][0]}"


def _overlay_column(texts: list[str], column: str, where: _Where, problems: dict) -> np.ndarray:
    """One numeric column, every value checked at once; each bad value is its row's problem
    (``problems``: row index -> SpecError, the first of each row kept), told by the one
    checker of numbers (``check_number``) with the row's ``where``."""
    values = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(dtype=float)
    bounds = OVERLAY_NUMBERS[column]
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values <= bounds["minimum"]) | (values > bounds["maximum"])
    for i in np.flatnonzero(bad).tolist():
        if i in problems:
            continue
        raw = texts[i]
        try:
            check_number(raw, where[i], column, **bounds)
            problems[i] = SpecError(where[i], column, f"is {raw!r}", "write a positive number")
        except SpecError as exc:
            problems[i] = exc
    return values


def _row_prices(names: list[str], price, where: _Where, problems: dict) -> np.ndarray:
    """The $/GPU-hour of each row: the one price, or each row's ``hardware`` column priced by
    ``price`` (a function of a GPU name); a GPU it cannot price is its rows' problem."""
    if not callable(price):
        return np.full(len(names), float(price))
    prices: dict[str, float | SpecError] = {}
    out = np.full(len(names), np.nan)
    for i, name in enumerate(names):
        if name not in prices:
            try:
                prices[name] = float(price(name))
            except SpecError as exc:
                prices[name] = exc
        known = prices[name]
        if isinstance(known, SpecError):
            problems.setdefault(i, SpecError(where[i], "hardware", known.problem, known.fix))
        else:
            out[i] = known
    return out


def load_overlay_points(path, price_usd_per_hour=None) -> Rows:
    """Measured operating points from a CSV: tokens_per_s and either usd_per_mtok or
    tokens_per_s_per_gpu, converted to $ at ``price_usd_per_hour`` (one price, or a function
    of a GPU name for files with a ``hardware`` column: each row at its own GPU's price).

    Read and checked column by column (10,000 points in well under a second). A row that
    cannot be read (text or a non-positive number, more cells than the header, a GPU without
    a price) is reported with its line, field and fix, and left out (the result's
    ``left_out``, ``specs.inputs.Rows``); an empty file, a missing column or no readable row
    is an error naming the file.
    """
    source = str(path)
    header, lines = csv_rows(path, skipinitialspace=True)
    if not header:
        raise SpecError(source, "", "is empty", "give a header and one row per point")
    if "tokens_per_s" not in header:
        raise SpecError(
            source, "tokens_per_s", "column is missing", "give the measured tokens/s per request"
        )
    if not lines:
        raise SpecError(source, "", "has a header but no rows", "give one row per point")
    cost_column = _cost_column(source, header, price_usd_per_hour)
    wanted = ["tokens_per_s", cost_column, *(c for c in ("label", "hardware") if c in header)]
    at = [header.index(c) for c in wanted]
    problems: dict[int, SpecError] = {}
    width = len(header)
    for i, (line, row) in enumerate(lines):  # (a row's cells past the header: its problem)
        if len(row) > width:
            try:
                row_cells(source, line, row, width, at)
            except SpecError as exc:
                problems[i] = exc
    # columns at C speed (zip), not cell by cell: 100,000 points in a few hundredths of a second
    table = list(
        zip(*(row if len(row) == width else (row + [""] * width)[:width] for _, row in lines))
    )
    columns = {c: list(table[i]) for c, i in zip(wanted, at)}
    for c in ("label", "hardware"):
        if c in columns:
            columns[c] = [text.strip() for text in columns[c]]
    where = _Where(source, lines)
    speed = _overlay_column(columns["tokens_per_s"], "tokens_per_s", where, problems)
    cost = _overlay_column(columns[cost_column], cost_column, where, problems)
    if cost_column == "tokens_per_s_per_gpu":
        names = columns.get("hardware", [""] * len(lines))
        prices = _row_prices(names, price_usd_per_hour, where, problems)
        with np.errstate(divide="ignore", invalid="ignore"):  # rows left out: 0 or NaN
            cost = usd_per_mtok_at_throughput(cost, prices)
    labels = columns.get("label", [""] * len(lines))
    skipped = left_out(
        source,
        "point row",
        len(lines),
        [(lines[i][0], problems[i]) for i in sorted(problems)],
    )
    return Rows(
        (
            {"label": label or "measured", "tokens_per_s": v, "usd_per_mtok": c}
            for i, (label, v, c) in enumerate(
                zip(labels, speed.tolist(), np.asarray(cost, dtype=float).tolist())
            )
            if i not in problems
        ),
        skipped,
    )


def _cost_column(source: str, header: list, price) -> str:
    """The column an overlay file's cost is read from: ``usd_per_mtok``, else
    ``tokens_per_s_per_gpu`` where a price is given (a price by GPU needs a ``hardware``
    column); a file with neither is an error naming the file."""
    if "usd_per_mtok" in header:
        return "usd_per_mtok"
    if "tokens_per_s_per_gpu" in header and price:
        if callable(price) and "hardware" not in header:
            raise SpecError(
                source,
                "tokens_per_s_per_gpu",
                "cannot be priced: the curves run on GPUs of different prices",
                "add a hardware column (the GPU of each row) or give usd_per_mtok",
            )
        return "tokens_per_s_per_gpu"
    raise SpecError(
        source,
        "usd_per_mtok",
        "no cost column",
        "give usd_per_mtok, or tokens_per_s_per_gpu and a GPU price",
    )
