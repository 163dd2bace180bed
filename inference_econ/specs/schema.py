"""Reading typed fields out of parsed YAML or arguments, with errors that name the source and
the field. Plain Python: the command line validates its options without importing numpy."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from ..errors import SpecError, control_character, did_you_mean, short

#: Text fields that are prose: they may span lines (``Reader._one_line``); a plot's title or
#: curve label may be two lines on purpose.
PROSE = ("description", "notes", "title", "label")


class Reader:
    """Typed access to one mapping of a spec; remembers which keys were used.

    ``reader.finish()`` rejects keys nobody asked for, with a "did you mean" hint, so a typo in
    a YAML file is an error rather than a silently ignored field.
    """

    def __init__(self, data: Mapping, source: str, prefix: str = "") -> None:
        if not isinstance(data, Mapping):
            raise SpecError(
                source,
                prefix,
                f"expected a mapping of fields, got {short(data)}",
                "write 'field: value' pairs",
            )
        self.data = data
        self.source = source
        self.prefix = prefix
        self.used: set[str] = set()

    def path(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def raw(self, key: str, default: Any = ...) -> Any:
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if default is ...:
                raise SpecError(self.source, self.path(key), "is missing", "this field is required")
            return default
        return self.data[key]

    def number(
        self,
        key: str,
        default: Any = ...,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
        integer: bool = False,
        unit: str = "",
    ) -> Any:
        if not self.has(key):
            return self.raw(key, default)
        return check_number(
            self.raw(key),
            self.source,
            self.path(key),
            minimum=minimum,
            maximum=maximum,
            exclusive_minimum=exclusive_minimum,
            integer=integer,
            unit=unit,
        )

    def string(self, key: str, default: Any = ..., choices: tuple[str, ...] | None = None) -> Any:
        if not self.has(key):
            return self.raw(key, default)
        value = self.raw(key)
        if not isinstance(value, str):
            raise SpecError(
                self.source, self.path(key), f"expected text, got {short(value)}", "write a string"
            )
        self._one_line(key, value)
        if choices is not None and value not in choices:
            hint = did_you_mean(value, choices)
            raise SpecError(
                self.source,
                self.path(key),
                f"unknown value {short(value)}",
                f"{hint + ' ' if hint else ''}expected one of {', '.join(choices)}",
            )
        return value

    def boolean(self, key: str, default: Any = ...) -> Any:
        if not self.has(key):
            return self.raw(key, default)
        value = self.raw(key)
        if not isinstance(value, bool):
            raise SpecError(
                self.source,
                self.path(key),
                f"expected true or false, got {short(value)}",
                "write true or false",
            )
        return value

    def mapping(self, key: str, default: Any = ...) -> Any:
        if not self.has(key):
            return self.raw(key, default)
        value = self.raw(key)
        if not isinstance(value, Mapping):
            raise SpecError(
                self.source,
                self.path(key),
                f"expected a mapping of fields, got {short(value)}",
                "write 'field: value' pairs",
            )
        return value

    def text_list(self, key: str) -> tuple[str, ...]:
        """A string or a list of strings (names, aliases, notes); numbers are read as text."""
        if not self.has(key):
            self.raw(key, None)
            return ()
        value = self.raw(key)
        items = [value] if isinstance(value, (str, int, float)) else value
        if not isinstance(items, list) or not all(
            isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in items
        ):
            raise SpecError(
                self.source,
                self.path(key),
                f"expected text or a list of text, got {short(value)}",
                "e.g. [name one, name two]",
            )
        for x in items:
            self._one_line(key, str(x))
        return tuple(str(x) for x in items)

    def _one_line(self, key: str, value: str) -> None:
        """Text fields hold no line break or control character: names and sources go into the
        comments of files the toolkit writes (a launch script's, a CSV's), where one would end
        the comment and run or be read as what follows it. Prose (``PROSE``: a description,
        notes) may run over lines and hold tabs (a YAML block scalar); it is printed with
        ``errors.one_line`` wherever a line break would matter."""
        value = value.rstrip("\r\n")  # a YAML block scalar's final line break
        if key in PROSE:
            value = value.replace("\n", " ").replace("\t", " ").replace("\r", " ")
        bad = control_character(value)
        if bad is not None:
            raise SpecError(
                self.source,
                self.path(key),
                f"holds the control character {bad} in {short(value)}",
                "write it on one line, without line breaks or control characters",
            )

    def sub(self, key: str, default: Any = ...) -> Reader | None:
        value = self.mapping(key, default)
        if value is None:
            return None
        return Reader(value, self.source, self.path(key))

    def only(self, fields: tuple[str, ...]) -> None:
        """Refuse a key that is none of ``fields`` (every field the mapping may hold) before
        any field is read: a misspelt field (``d_modell``) is named as unknown, with a "did
        you mean", not reported as the required field it was meant to be (``d_model`` is
        missing). ``finish`` still refuses a known field that this mapping's kind ignores."""
        for key in self.data:
            if key not in fields:
                name = key if isinstance(key, str) and len(key) <= 60 else short(key)
                hint = did_you_mean(str(name), fields)
                raise SpecError(
                    self.source,
                    self.path(str(name)),
                    "unknown field",
                    hint or f"known fields: {', '.join(sorted(fields))}",
                )

    def finish(self, allowed_extra: tuple[str, ...] = ()) -> None:
        known = set(self.used) | set(allowed_extra)
        for key in self.data:
            if key not in known:
                name = key if isinstance(key, str) and len(key) <= 60 else short(key)
                hint = did_you_mean(name, sorted(known))
                raise SpecError(
                    self.source,
                    self.path(name),
                    "unknown field",
                    hint or f"known fields: {', '.join(sorted(known))}",
                )


def check_number(
    value: Any,
    source: str,
    field: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    integer: bool = False,
    unit: str = "",
) -> float | int:
    """Validate one number from any source (an option, YAML, JSON, CSV, a keyword argument).

    The one checker every number passes: text that reads as a number is accepted (YAML 1.1
    reads "1e15" as text); bool, other text, NaN and infinities are errors; an ``integer``
    field needs a whole number; the bounds come from the caller (for settings: the row of
    ``inference_econ/settings/``). Errors say what was given, the unit and the range.
    """
    unit_hint = f" in {unit}" if unit else ""
    number = _as_number(value)
    if number is None:
        raise SpecError(
            source,
            field,
            f"expected a number{unit_hint}, got {short(value)}",
            _range_hint(minimum, maximum, exclusive_minimum, integer) or "write a number",
        )
    if math.isnan(number) or math.isinf(number):
        hint = _range_hint(minimum, maximum, exclusive_minimum, integer)
        raise SpecError(
            source, field, f"is {short(value)}", hint or f"write a finite number{unit_hint}"
        )
    if integer:
        if number != math.floor(number):  # the fix says "expected a whole number": once
            hint = _range_hint(minimum, maximum, exclusive_minimum, integer)
            fix = hint or f"expected a whole number{unit_hint}"
            raise SpecError(source, field, f"is {short(value)}", fix)
        number = int(number)
    low = minimum is not None and (number <= minimum if exclusive_minimum else number < minimum)
    high = maximum is not None and number > maximum
    if low or high:
        raise SpecError(
            source,
            field,
            f"is {short(number)}{unit_hint}",
            _range_hint(minimum, maximum, exclusive_minimum, integer),
        )
    return number


def _as_number(value: Any) -> float | int | None:
    """``value`` as a Python int or float, or None when it is not a number at all."""
    if type(value) is float:  # the common case first (a CSV of 100,000 values)
        return value
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":
        return None
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        digits = text.lstrip("+-")
        if digits.isascii() and digits.isdigit() and len(text) - len(digits) <= 1:
            # a whole number of any length: beyond a float's range it is infinite (refused
            # by the caller as such), never an OverflowError or Python's digit limit
            if len(digits.lstrip("0")) > 300:
                return -math.inf if text.startswith("-") else math.inf
            return int(text)
        try:
            return float(text)
        except (ValueError, OverflowError):
            return None
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:  # numpy scalars
        value = value.item()
        if isinstance(value, bool):
            return None
    if isinstance(value, int):
        return value if abs(value) < 1e300 else (math.inf if value > 0 else -math.inf)
    if isinstance(value, numbers.Real):
        try:
            return float(value)
        except OverflowError:  # a Fraction beyond a float's range
            return math.inf if value > 0 else -math.inf
        except ValueError:
            return None
    return None


def _bound(x: float) -> str:
    """A bound as a reader writes it: 1048576, 64, 0.5, 1e+09."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e7 else f"{x:g}"


def _range_hint(minimum, maximum, exclusive_minimum: bool, integer: bool) -> str:
    """'expected a whole number >= 1 and <= 64' and such."""
    kind = "a whole number" if integer else "a number"
    parts = []
    if minimum is not None:
        parts.append(f"{'>' if exclusive_minimum else '>='} {_bound(minimum)}")
    if maximum is not None:
        parts.append(f"<= {_bound(maximum)}")
    return f"expected {kind} {' and '.join(parts)}" if parts else ""
