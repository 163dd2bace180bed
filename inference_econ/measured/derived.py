"""Rows of a measured file derived from another row (a figure computed from the same run:
"= 1000/mean_TPOT", "derived from row 12"): which row each is derived from, and the record it
is read from (the columns it does not state, and its notes, taken from its parent).
"""

from __future__ import annotations

import bisect
import re

from . import semantics as sem

#: Columns a derived row takes from the row it is derived from when it does not state them.
INHERITED = (
    "parallelism",
    "batch_or_concurrency",
    "engine",
    "scenario",
    "disaggregated",
    "decode_gpus",
    "precision",
    "requests",
    "distinct_prompts",
)
#: Columns that must agree between a derived row and its parent.
_SAME_RUN = ("model", "hardware", "n_gpus", "input_len", "output_len")


def is_derived(rec: dict) -> bool:
    """Whether a row's notes say it is derived from another row ("derived = total/n_gpus")."""
    notes = str(rec.get("notes", "")).strip().lower()
    return notes.startswith("derived") or "derived from" in notes


def parents_of(records: list[dict]) -> dict[int, int]:
    """The row each derived row is derived from (index -> index): the row its notes name
    ("derived from row 12"), else a row of the same source, model, hardware, GPUs and lengths
    that is not derived and agrees with what the derived row states of ``INHERITED``: one whose
    metric the notes name ("= 1000/mean_TPOT"), else the nearest."""
    derived = [is_derived(rec) for rec in records]
    if not any(derived):  # a log of measured rows only (a fleet's): nothing to look up
        return {}
    by_run: dict[tuple, list[int]] = {}
    for i, rec in enumerate(records):
        if not derived[i]:
            by_run.setdefault(_run_key(rec), []).append(i)
    out: dict[int, int] = {}
    # (run, columns a derived row states) -> those columns' values -> the run's rows with them
    index: dict[tuple, dict[tuple, _Rows]] = {}
    for i, rec in enumerate(records):
        if not derived[i]:
            continue
        named = re.search(r"\b(?:row|line)\s*#?\s*(\d+)", str(rec.get("notes", "")), re.I)
        if named and 0 <= int(named.group(1)) - 2 < len(records):
            j = int(named.group(1)) - 2
            if j != i and not is_derived(records[j]):
                out[i] = j
                continue
        stated = {c: str(rec[c]).strip() for c in INHERITED if not sem.is_missing(rec.get(c))}
        run, columns = _run_key(rec), tuple(stated)
        if (run, columns) not in index:  # once per run and columns, not per derived row
            index[(run, columns)] = _by_values(records, by_run.get(run, ()), columns)
        fits = index[(run, columns)].get(tuple(stated.values()))
        if fits is not None:
            out[i] = fits.nearest(i, str(rec.get("notes", "")).lower())
    return out


class _Rows:
    """The rows a derived row may be derived from (indices, ascending), by their metric: the
    nearest to a row, among those whose metric its notes name if any do, found by bisection
    (a log repeats its runs: a scan of every row for each derived row is quadratic)."""

    def __init__(self) -> None:
        self.all: list[int] = []
        self.by_metric: dict[str, list[int]] = {}

    def add(self, j: int, metric: str) -> None:
        self.all.append(j)
        self.by_metric.setdefault(metric, []).append(j)

    def nearest(self, i: int, notes: str) -> int:
        """The row nearest to ``i`` (the lower on a tie) among those whose metric ``notes``
        names, else among all."""
        named = [rows for metric, rows in self.by_metric.items() if metric in notes]
        near = [j for rows in named or [self.all] for j in _around(rows, i)]
        return min(near, key=lambda j: (abs(j - i), j))


def _around(rows: list[int], i: int) -> list[int]:
    """The entries of ascending ``rows`` just below and just above ``i``."""
    k = bisect.bisect_left(rows, i)
    return rows[max(k - 1, 0) : k + 1]


def _by_values(records: list[dict], rows, columns: tuple) -> dict[tuple, _Rows]:
    """The ``rows`` (indices, in order) by their values of ``columns`` (as text, stripped)."""
    out: dict[tuple, _Rows] = {}
    for j in rows:
        key = tuple(str(records[j].get(c, "")).strip() for c in columns)
        if key not in out:
            out[key] = _Rows()
        out[key].add(j, str(records[j]["metric"]).lower())
    return out


def _run_key(rec: dict) -> tuple:
    """What a derived row and its parent share: the source and ``_SAME_RUN``'s columns."""
    return (sem.source_group(rec),) + tuple(str(rec.get(c, "")).strip() for c in _SAME_RUN)


def context_of(rec: dict, parent: dict | None) -> dict:
    """The record a row is read from: a derived row takes the ``INHERITED`` columns it does
    not state from its parent, and reads its notes followed by its parent's (engine, limits,
    layout); ``_notes`` keeps its own."""
    out = dict(rec)
    out["_notes"] = str(rec.get("notes", ""))
    out["_context"] = out["_notes"]
    if parent is not None:
        for column in INHERITED:
            if sem.is_missing(out.get(column)) and not sem.is_missing(parent.get(column)):
                out[column] = parent[column]
        out["_context"] = f"{out['_notes']} ; {parent.get('notes', '')}"
    return out
