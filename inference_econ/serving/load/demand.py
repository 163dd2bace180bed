"""A demand curve: requests per second, hour by hour, over a day, a week or longer (docs/model.md
§G5). A CSV with a header and one row per hour:

    hour,requests_per_s
    0,4.2
    1,3.1

Hours are whole numbers counting up by one from the first (0-23 for a day, 0-167 for a week);
other columns and lines starting with ``#`` are ignored. An unreadable row is reported with its line and reason and the others
are read; a file with no readable row, or with a gap in its hours, is refused.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

import numpy as np

from ...errors import SpecError, plural, warn
from ...specs.inputs import read_text

COLUMNS = ("hour", "requests_per_s")
#: Most hours a curve may hold (ten years): every hour is a row of the plan.
MAX_HOURS = 87_600


@dataclass(frozen=True, eq=False)
class DemandCurve:
    """Requests per second in each hour (``hours`` consecutive whole numbers)."""

    source: str
    hours: np.ndarray
    requests_per_s: np.ndarray

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
    text = read_text(path)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    try:
        reader = csv.DictReader(io.StringIO("\n".join(lines)))
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise SpecError(
                source, missing[0], "missing column", f"the header must name {', '.join(COLUMNS)}"
            )
        rows, skipped = [], []
        for line, row in enumerate(reader, start=2):  # lines after the header, '#' lines left out
            try:
                rows.append((_number(row, "hour", True), _number(row, "requests_per_s", False)))
            except ValueError as exc:
                skipped.append(f"line {line}: {exc}")
            if len(rows) > MAX_HOURS:
                raise SpecError(
                    source, "hour", f"has over {MAX_HOURS:,} rows", "give at most ten years"
                )
    except csv.Error as exc:
        raise SpecError(source, "", f"is not valid CSV ({exc})", "give a CSV file") from None
    for note in skipped[:5]:
        warn(f"{source}: {note}: row skipped")
    if len(skipped) > 5:
        warn(f"{source}: {len(skipped) - 5} more rows skipped")
    if not rows:
        raise SpecError(source, "requests_per_s", "has no readable row", "give one row per hour")
    data = np.asarray(sorted(rows), dtype=float)
    hours = data[:, 0].astype(np.int64)
    gaps = np.nonzero(np.diff(hours) != 1)[0]
    if gaps.size:
        at = int(gaps[0])
        raise SpecError(
            source,
            "hour",
            f"jumps from {hours[at]} to {hours[at + 1]}",
            "give every hour once, counting up by one",
        )
    if not np.any(data[:, 1] > 0):
        raise SpecError(source, "requests_per_s", "is 0 in every hour", "there is nothing to serve")
    return DemandCurve(source, hours, data[:, 1])


def _number(row: dict, column: str, whole: bool) -> float:
    text = (row.get(column) or "").strip()
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{column} is {text!r}, not a number") from None
    if not math.isfinite(value) or value < 0 or value > 1e9:
        raise ValueError(f"{column} is {text}, expected a number from 0 to 1e9")
    if whole and value != int(value):
        raise ValueError(f"{column} is {text}, expected a whole hour")
    return value
