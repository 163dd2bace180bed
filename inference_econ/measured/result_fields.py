"""The fields of a benchmark tool's result file, read one way for every tool
(``tool_results``, ``inferencex``): a number as the file holds it (``number``), a part that must
be an object or a list (``section``), and a run's rows in the measured CSV's columns
(``rows_of``), where a field the rows cannot use is their ``unresolved`` reason (``Unusable``).
A field of the wrong JSON type is the file's error: one line naming the file and the field."""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import SpecError, short


class Unusable(SpecError):
    """A number of the right type that the rows cannot use (NaN, an infinity, not above zero,
    not given): the rows it feeds are read as ``unresolved`` with this reason, and the file's
    other rows go on. Every other ``SpecError`` of this module (a number written as a list or
    as words, a section that is not an object) is the file's: one line, exit 2."""


def number(
    value,
    path: Path,
    field: str,
    *,
    zero: bool = False,
    infinite: bool = False,
    required: bool = False,
) -> float | None:
    """The one place a result file's numbers are read: ``value`` (as the JSON holds it) as a
    float, None when it is absent or null. Anything but a number (a list, an object,
    true/false, text that is not a number) is the file's error, naming ``path`` and
    ``field``; NaN, an infinity (unless ``infinite``), a number not above zero (below zero
    with ``zero``) or, when ``required``, no number at all is ``Unusable``."""
    if value is None:
        if required:
            raise Unusable(str(path), field, "is not given", "the tool writes it: rerun it")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SpecError(str(path), field, f"expected a number, got {short(value)}", AS_WRITTEN)
    try:
        number = float(value)
    except ValueError:
        raise SpecError(
            str(path), field, f"expected a number, got {short(value)}", AS_WRITTEN
        ) from None
    except OverflowError:  # a whole number beyond a float's range
        number = math.inf if value > 0 else -math.inf  # copysign would overflow again
    bound = ">= 0" if zero else "> 0"
    if math.isnan(number) or (math.isinf(number) and not infinite):
        raise Unusable(str(path), field, f"is {short(value)}", f"expected a finite number {bound}")
    if number < 0 or (number == 0 and not zero):
        raise Unusable(str(path), field, f"is {short(value)}", f"expected a number {bound}")
    return number


#: The fix of a field of the wrong type: the tools write numbers as JSON numbers.
AS_WRITTEN = "give the file as the tool wrote it: a JSON number"


def section(value, path: Path, field: str, kind: type):
    """A part of a result file that must be a JSON object (``dict``) or array (``list``);
    None when absent or null. Any other type is the file's error."""
    if value is None or isinstance(value, kind):
        return value
    word = "an object" if kind is dict else "a list"
    raise SpecError(
        str(path),
        field,
        f"expected {word}, got {short(value)}",
        "give the file as the tool wrote it",
    )


def checked(read, *args, **kwargs):
    """``read(*args, **kwargs)``, or the ``Unusable`` it raised (kept, so every field is read
    and a field of the wrong type is the file's error, whichever field is unusable first)."""
    try:
        return read(*args, **kwargs)
    except Unusable as exc:
        return exc


def usable(value):
    """A value of ``checked``; its ``Unusable`` raised (the rows it feeds are unresolved)."""
    if isinstance(value, Unusable):
        raise value
    return value


def rows_of(
    base: dict,
    metrics: list,
    lengths: tuple,
    concurrency: str,
    note: str,
    where: str,
    requests: float | None = None,
) -> list:
    """The run's rows, one per metric it measured (``metrics``: (metric, ``checked`` value,
    unit)); a value it cannot use is its row's unresolved reason. ``requests``: how many the
    run completed (its replay draws as many: a closed loop's figures depend on its length)."""
    n_in, n_out = lengths
    out = []
    for metric, value, unit in metrics:
        row = {
            **base,
            "metric": metric,
            "unit": unit,
            "batch_or_concurrency": concurrency,
            "input_len": n_in if isinstance(n_in, str) else f"{n_in:.6g}",
            "output_len": n_out if isinstance(n_out, str) else f"{n_out:.6g}",
            "notes": "; ".join(x for x in (base.get("notes"), note) if x)
            + f"; context from {where}",
        }
        if requests:
            row["requests"] = f"{requests:.0f}"
        if isinstance(value, Unusable):
            row.update(value=reason(value), notes=f"{reason(value)}; context from {where}")
        else:
            row["value"] = f"{value:.6g}"
        out.append(row)
    return out


def unresolved_rows(base: dict, metrics: list, why: Unusable, where: str) -> list:
    """The rows of a run whose lengths or load cannot be read: each is unresolved with
    ``why`` (the measured CSV reader reads the text in its value as the row's reason)."""
    text = reason(why)
    return [
        {
            **base,
            "metric": metric,
            "unit": unit,
            "value": text,
            "notes": f"{text}; context from {where}",
        }
        for metric, _, unit in metrics
    ]


#: How a result row states why a field cannot be used, in place of its value: the
#: measured-rows reader (``reading``) makes the row unresolved with that reason.
UNUSABLE = "unusable: "


def reason(exc: SpecError) -> str:
    """An unusable field as the text of its row's value: the measured-rows reader makes it the
    row's status (``unresolved: <field> <problem>``)."""
    fix = f" ({exc.fix})" if exc.fix else ""
    return f"{UNUSABLE}{exc.field} {exc.problem}{fix}"
