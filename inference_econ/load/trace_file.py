"""A trace file read: a CSV with a header and one row per request (``arrival_time_s``,
``prompt_tokens``, ``output_tokens``; optional ``session_id``, ``prefix_id`` and
``prefix_tokens``: what prompts share, §E9), every cell checked, a row that cannot be read left
out with its line and reason (``load.arrivals`` describes the format and replays it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SpecError, plural
from ..settings import option
from ..specs.inputs import LeftOut, csv_rows, left_out, row_cells
from ..specs.schema import check_number
from .lengths import MAX_TOKENS

TRACE_COLUMNS = ("arrival_time_s", "prompt_tokens", "output_tokens")
#: Optional trace columns of shared prefixes and sessions (§E9).
SHARING_COLUMNS = ("session_id", "prefix_id", "prefix_tokens")


@dataclass(frozen=True, eq=False)
class Trace:
    """The requests of a trace file, sorted by arrival."""

    path: str
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    #: The optional sharing columns (-1, or 0 tokens, where a row gives none); text ids
    #: numbered from 0 in the order they first appear in the file (``_ids``).
    session_id: np.ndarray | None = None
    prefix_id: np.ndarray | None = None
    prefix_tokens: np.ndarray | None = None
    #: The rows left out because they could not be read (None: every row was read).
    left_out: LeftOut | None = None

    @property
    def shares(self) -> bool:
        """The trace gives sessions or shared prefixes."""
        return self.session_id is not None or self.prefix_id is not None

    @property
    def rate_per_s(self) -> float:
        """Mean arrival rate: requests after the first over the time they span."""
        span = float(self.arrival_s[-1] - self.arrival_s[0])
        return (len(self.arrival_s) - 1) / span if span > 0 else math.inf


#: The latest arrival a trace may give (about 32 years): arrival times stay exact to well
#: under a microsecond, so latencies measured between them keep their digits.
MAX_ARRIVAL_S = 1e9


_TIME: dict[str, Any] = dict(minimum=0, maximum=MAX_ARRIVAL_S, unit="seconds")
_TOKENS: dict[str, Any] = dict(minimum=1, maximum=MAX_TOKENS, integer=True, unit="tokens")


def _trace_row(
    cells: list[str], at: list[int], width: int, extra: list[str], path: str, line: int
) -> tuple[list[float], list[str]]:
    """One row of a trace (``at``: where its columns are among the header's ``width``): its
    numbers, each cell checked by the one number checker (specs/schema.py), and the text of
    its ``ID_COLUMNS`` (``_ids`` reads them once every row is read); a SpecError names the
    line."""
    where = f"{path}: line {line}"
    texts = row_cells(path, line, cells, width, at)
    row = [float(check_number(texts[0], where, TRACE_COLUMNS[0], **_TIME))]
    row += [
        float(check_number(t, where, c, **_TOKENS)) for t, c in zip(texts[1:3], TRACE_COLUMNS[1:])
    ]
    given = dict(zip(extra, texts[3:]))
    if "prefix_tokens" in given:
        prefix = _prefix_tokens(given["prefix_tokens"], where)
        if prefix > row[1]:
            raise SpecError(
                where,
                "prefix_tokens",
                f"is {prefix:g}, more than the prompt's {row[1]:g} tokens",
                "a shared prefix is part of the prompt",
            )
        row.append(prefix)
    return row, [given[c] for c in ID_COLUMNS if c in given]


def _one_length_a_prefix(source: str, ids, tokens, lines, names=None) -> None:
    """Refuse a shared prefix named with two lengths: one ``prefix_id`` is one cached text, so
    its rows' ``prefix_tokens`` agree (the cache keeps one length a prefix; the rows' order
    would pick which). ``names``: the ids' texts, where the trace gives text ids (``_ids``)."""
    if ids is None or tokens is None:
        return
    shared = ids >= 0
    if not shared.any():
        return
    order = np.lexsort((tokens[shared], ids[shared]))
    i, t, at = ids[shared][order], tokens[shared][order], lines[shared][order]
    clash = np.flatnonzero((i[1:] == i[:-1]) & (t[1:] != t[:-1]))
    if len(clash):
        k = clash[0]
        first, second = sorted((int(at[k]), int(at[k + 1])))
        raise SpecError(
            f"{source}: line {second}",
            "prefix_tokens",
            f"prefix_id {i[k] if names is None else repr(names[i[k]])} is {t[k]:,} tokens in "
            f"one row and {t[k + 1]:,} in another "
            f"(lines {first} and {second})",
            "give each shared prefix one length (a prefix of another length is another prefix_id)",
        )


def _two_rows(source: str, rows: int, problems: list[tuple[int, SpecError]]) -> None:
    """Refuse a trace of fewer than 2 request rows: where its row was refused, that row's
    line and field first, then the count rule."""
    if rows < 2 and problems:
        first = problems[0][1]
        fix = f"{first.fix}; a trace also needs at least 2 request rows, and it has {rows}"
        raise SpecError(first.source, first.field, first.problem, fix)
    if rows < 2:
        counted = f"has {rows} request {plural(rows, 'row')}"
        raise SpecError(source, "", counted, "a trace needs at least 2")


def load_trace(path) -> Trace:
    """Read and validate a trace CSV (columns ``arrival_time_s``, ``prompt_tokens``,
    ``output_tokens``) through the input boundary (a regular UTF-8 file of bounded size);
    errors name the file, the line and the column.

    Parameters
    ----------
    path : str or path
        The CSV; optional columns ``session_id``, ``prefix_id`` and ``prefix_tokens`` give
        sessions and shared prefixes (§E9). A session or prefix id is any text (``s0``, a
        UUID; blank: none), numbered in the order it first appears.

    Returns
    -------
    Trace
        Arrival times, prompt and output tokens (arrays), and the sharing columns if given.

    Raises
    ------
    SpecError
        An unreadable file, a missing column, or no readable row.

    Examples
    --------
    >>> import inference_econ as ie
    >>> trace = ie.load_trace("examples/trace.csv")  # from the repository's root
    >>> len(trace.arrival_s), round(trace.rate_per_s, 2)
    (174, 3.2)
    """
    if isinstance(path, Trace):
        return path
    source = str(path)
    header, lines = csv_rows(path)
    missing = [c for c in TRACE_COLUMNS if c not in header]
    if missing and header and header[0].lstrip().startswith(("{", "[")):
        raise SpecError(
            source,
            "",
            "is JSON (one object a line, or a list), not a CSV: a trace is a CSV file",
            f"write it as a CSV whose header names {', '.join(TRACE_COLUMNS)}, one row per "
            "request, as examples/trace.csv is",
        )
    if missing:
        raise SpecError(
            source,
            missing[0],
            "missing column",
            f"the header must name {', '.join(TRACE_COLUMNS)}",
        )
    extra = [c for c in SHARING_COLUMNS if c in header]
    if ("prefix_id" in extra) != ("prefix_tokens" in extra):
        have, lack = ("prefix_id", "prefix_tokens")[:: 1 if "prefix_id" in extra else -1]
        raise SpecError(source, lack, "missing column", f"{have} needs {lack}")
    data, texts, skipped = _rows(source, header, lines, extra)
    order = np.argsort(data[:, 0], kind="stable")
    data = data[order]
    named = [c for c in ID_COLUMNS if c in extra]  # numbered in file order, then sorted
    ids = {c: _ids([t[k] for t in texts]) for k, c in enumerate(named)}
    _within_rate(source, data[:, 0])
    cols = {c: numbered[order] for c, (numbered, _) in ids.items()}
    if "prefix_tokens" in extra:
        cols["prefix_tokens"] = data[:, 3].astype(np.int64)
    names = ids["prefix_id"][1] if "prefix_id" in ids else None
    _one_length_a_prefix(
        source, cols.get("prefix_id"), cols.get("prefix_tokens"), data[:, -1], names
    )
    return Trace(
        source,
        data[:, 0],
        data[:, 1].astype(np.int64),
        data[:, 2].astype(np.int64),
        cols.get("session_id"),
        cols.get("prefix_id"),
        cols.get("prefix_tokens"),
        skipped,
    )


def _rows(source: str, header: list, lines: list, extra: list) -> tuple:
    """(numbers of the rows read, each with its line last; their ids' texts; the rows left
    out): a row that cannot be read is left out with its line and reason (fewer than 2 read
    is the file's error)."""
    at = [header.index(c) for c in TRACE_COLUMNS + tuple(extra)]
    rows, texts, problems = [], [], []
    for line, cells in lines:
        try:
            row, ids = _trace_row(cells, at, len(header), extra, source, line)
        except SpecError as exc:
            problems.append((line, exc))
            continue
        rows.append([*row, line])
        texts.append(ids)
    _two_rows(source, len(lines), problems)
    skipped = left_out(source, "trace row", len(lines), problems, need=2)
    return np.asarray(rows, dtype=float), texts, skipped


def _within_rate(source: str, arrivals: np.ndarray) -> None:
    """Refuse sorted arrival times faster than the most ``--rate`` a simulation takes (times
    in milliseconds, say); a span of 0 is a burst, every request at once."""
    span = float(arrivals[-1] - arrivals[0])
    most = option("arrival_rate_per_s").maximum
    assert most is not None  # (the settings table gives it)
    if span > 0 and (len(arrivals) - 1) / span > most:
        raise SpecError(
            source,
            "arrival_time_s",
            f"spans {span:g} s for {len(arrivals):,} requests: {(len(arrivals) - 1) / span:.3g} "
            f"requests/s, more than the {most:g} the toolkit simulates",
            "give the arrival times in seconds (a burst: every request at the same time)",
        )


#: Largest whole-number session or prefix id read as a number (exact as a float).
MAX_ID = 2**53
#: The sharing columns that name a session or a shared prefix: any text (blank: none).
ID_COLUMNS = ("session_id", "prefix_id")


def _prefix_tokens(text: str, where: str) -> float:
    """A ``prefix_tokens`` cell: a whole number of tokens >= 0 (blank: 0, no shared prefix)."""
    if not text:
        return 0.0
    return float(check_number(text, where, "prefix_tokens", **(_TOKENS | dict(minimum=0))))


def _ids(texts: list[str]) -> tuple[np.ndarray, list[str] | None]:
    """A session or prefix column as integers (blank: -1, none) and the texts they number.
    A column of whole numbers from 0 to ``MAX_ID`` keeps them (None); any other text (``s0``,
    a UUID) numbers each distinct id from 0 in the order it first appears in the file."""
    numbers = [_whole(t) for t in texts]
    if all(n is not None for n in numbers):
        return np.array(numbers, dtype=np.int64), None
    first: dict[str, int] = {}
    ids = [first.setdefault(t, len(first)) if t else -1 for t in texts]
    return np.array(ids, dtype=np.int64), list(first)


def _whole(text: str) -> int | None:
    """An id cell as a whole number from 0 to ``MAX_ID`` (blank: -1), else None (text)."""
    if not text:
        return -1
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() and 0 <= value <= MAX_ID else None
