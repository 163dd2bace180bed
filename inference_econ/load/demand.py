"""A demand curve: requests per second, hour by hour, over a day, a week or longer (docs/model.md
§G5). A CSV with a header and one row per hour:

    hour,requests_per_s
    0,4.2
    1,3.1

Hours are whole numbers counting up by one from the first (0-23 for a day, 0-167 for a week);
other columns and lines starting with ``#`` are ignored. An unreadable row is reported with its
line and reason and the others are read (``specs.inputs.left_out``); a file with no readable
row, or with a gap in its hours, is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError, plural
from ..settings import option
from ..specs.inputs import LeftOut, csv_rows, left_out, row_cells
from ..specs.schema import check_number

COLUMNS = ("hour", "requests_per_s")
#: Most hours a curve may hold (ten years): every hour is a row of the plan.
MAX_HOURS = 87_600
_HOUR: dict[str, Any] = dict(minimum=0, maximum=1e9, integer=True)
_RATE: dict[str, Any] = dict(minimum=0, maximum=1e9, unit="requests/s")


@dataclass(frozen=True, eq=False)
class DemandCurve:
    """Requests per second in each hour (``hours`` consecutive whole numbers)."""

    source: str
    hours: np.ndarray
    requests_per_s: np.ndarray
    #: The rows left out because they could not be read (None: every row was read).
    left_out: LeftOut | None = None

    @property
    def peak_per_s(self) -> float:
        return float(self.requests_per_s.max())

    def describe(self) -> str:
        return (
            f"{len(self.hours)} {plural(len(self.hours), 'hour')} of demand from {self.source} "
            f"(mean "
            f"{self.requests_per_s.mean():.4g} req/s, peak {self.peak_per_s:.4g} req/s)"
        )


def load_demand(path) -> DemandCurve:
    r"""Read and check a demand CSV (module docstring).

    Parameters
    ----------
    path : str or path or DemandCurve
        The CSV (columns ``hour`` and ``requests_per_s``); a ``DemandCurve`` is returned as it
        is.

    Returns
    -------
    DemandCurve
        Requests per second in each consecutive hour.

    Raises
    ------
    SpecError
        A missing column, no readable row, or a gap in the hours (unreadable rows are reported
        as warnings and skipped).

    Examples
    --------
    >>> import inference_econ as ie
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "demand.csv"
    >>> _ = path.write_text("hour,requests_per_s\n0,2.5\n1,4.0\n")
    >>> ie.load_demand(path).peak_per_s
    4.0
    """
    if isinstance(path, DemandCurve):
        return path
    source = str(path)
    header, lines = csv_rows(path, comments=True)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise SpecError(
            source, missing[0], "missing column", f"the header must name {', '.join(COLUMNS)}"
        )
    if len(lines) > MAX_HOURS:
        raise SpecError(source, "hour", f"has over {MAX_HOURS:,} rows", "give at most ten years")
    rows, problems = _read_rows(source, header, lines)
    if not lines:
        raise SpecError(source, "requests_per_s", "has no readable row", "give one row per hour")
    if problems and not rows:  # (``left_out`` says so: none of them can be read)
        left_out(source, "demand row", len(lines), problems)
    data = np.asarray(sorted(rows), dtype=float)
    hours = data[:, 0].astype(np.int64)
    _check_hours(source, hours, problems)
    skipped = left_out(source, "demand row", len(lines), problems)
    _check_rates(source, data[:, 1])
    return DemandCurve(source, hours, data[:, 1], skipped)


def _read_rows(source: str, header: list, lines: list) -> tuple[list, list]:
    """(hour, requests/s) of each readable row, and (line, error) of each other."""
    at = [header.index(c) for c in COLUMNS]
    rows, problems = [], []
    for line, cells in lines:
        where = f"{source}: line {line}"
        try:
            hour, rate = row_cells(source, line, cells, len(header), at)
            hour_n = float(check_number(hour, where, "hour", **_HOUR))
            rate_n = float(check_number(rate, where, "requests_per_s", **_RATE))
            rows.append((hour_n, rate_n))
        except SpecError as exc:
            problems.append((line, exc))
    return rows, problems


def _check_hours(source: str, hours: np.ndarray, problems: list) -> None:
    """Refuse hours (sorted) that do not count up by one: with the first unreadable row as
    the reason where a row was left out, else the first jump."""
    gaps = np.nonzero(np.diff(hours) != 1)[0]
    if gaps.size and problems:  # a row that cannot be read leaves its hour out: that is why
        exc = problems[0][1]
        raise SpecError(
            exc.source, exc.field, exc.problem, "every hour needs a readable row: " + exc.fix
        )
    if gaps.size:
        at = int(gaps[0])
        raise SpecError(
            source,
            "hour",
            f"jumps from {hours[at]} to {hours[at + 1]}",
            "give every hour once, counting up by one",
        )


def _check_rates(source: str, rates: np.ndarray) -> None:
    """Refuse a curve with nothing to serve, or whose peak is below the least rate a plan
    simulates (quieter hours beside a busier one are planned)."""
    if not np.any(rates > 0):
        raise SpecError(source, "requests_per_s", "is 0 in every hour", "there is nothing to serve")
    least = option("arrival_rate_per_s").minimum  # the least rate a plan simulates
    assert least is not None  # (the settings table gives it)
    if float(np.max(rates)) < least:
        raise SpecError(
            source,
            "requests_per_s",
            f"peaks at {float(np.max(rates)):g}, below the {least:g} requests/s the "
            "toolkit simulates",
            f"give a peak of at least {least:g} requests/s",
        )
