"""Reading typed fields out of parsed YAML or arguments, with errors that name the source and
the field. Plain Python: the command line validates its options without importing numpy."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from ..errors import SpecError, did_you_mean


class Reader:
    """Typed access to one mapping of a spec; remembers which keys were used.

    ``reader.finish()`` rejects keys nobody asked for, with a "did you mean" hint, so a typo in
    a YAML file is an error rather than a silently ignored field.
    """

    def __init__(self, data: Mapping, source: str, prefix: str = "") -> None:
        if not isinstance(data, Mapping):
            raise SpecError(source, prefix, f"expected a mapping, got {type(data).__name__}")
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
        value = self.raw(key, default)
        if value is default and default is not ...:
            return value
        return check_number(
            value,
            self.source,
            self.path(key),
            minimum=minimum,
            maximum=maximum,
            exclusive_minimum=exclusive_minimum,
            integer=integer,
            unit=unit,
        )

    def string(self, key: str, default: Any = ..., choices: tuple[str, ...] | None = None) -> Any:
        value = self.raw(key, default)
        if value is default and default is not ...:
            return value
        if not isinstance(value, str):
            raise SpecError(
                self.source, self.path(key), f"expected text, got {value!r}", "write a string"
            )
        if choices is not None and value not in choices:
            hint = did_you_mean(value, choices)
            raise SpecError(
                self.source,
                self.path(key),
                f"unknown value {value!r}",
                f"{hint + ' ' if hint else ''}expected one of {', '.join(choices)}",
            )
        return value

    def boolean(self, key: str, default: Any = ...) -> Any:
        value = self.raw(key, default)
        if value is default and default is not ...:
            return value
        if not isinstance(value, bool):
            raise SpecError(
                self.source, self.path(key), f"expected true or false, got {value!r}", ""
            )
        return value

    def mapping(self, key: str, default: Any = ...) -> Any:
        value = self.raw(key, default)
        if value is default and default is not ...:
            return value
        if not isinstance(value, Mapping):
            raise SpecError(self.source, self.path(key), f"expected a mapping, got {value!r}", "")
        return value

    def sub(self, key: str, default: Any = ...) -> Reader | None:
        value = self.mapping(key, default)
        if value is None:
            return None
        return Reader(value, self.source, self.path(key))

    def finish(self, allowed_extra: tuple[str, ...] = ()) -> None:
        known = set(self.used) | set(allowed_extra)
        for key in self.data:
            if key not in known:
                hint = did_you_mean(str(key), sorted(known))
                raise SpecError(
                    self.source,
                    self.path(str(key)),
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
    """Validate one number; bool, text, NaN and out-of-range values are errors."""
    unit_hint = f" in {unit}" if unit else ""
    if isinstance(value, numbers.Number) and not isinstance(value, (int, float, bool)):
        value = value.item() if hasattr(value, "item") else value  # numpy scalars
    if isinstance(value, str):
        try:
            value = float(value)  # YAML 1.1 reads "1e15" as text
        except ValueError:
            raise SpecError(
                source, field, f"expected a number{unit_hint}, got {value!r}", "write a number"
            ) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(
            source, field, f"expected a number{unit_hint}, got {value!r}", "write a number"
        )
    if isinstance(value, float) and math.isnan(value):
        raise SpecError(source, field, "is NaN", f"write a number{unit_hint}")
    if integer:
        if float(value) != int(value):
            raise SpecError(source, field, f"expected a whole number, got {value!r}", "")
        value = int(value)
    if minimum is not None:
        bad = value <= minimum if exclusive_minimum else value < minimum
        if bad:
            op = ">" if exclusive_minimum else ">="
            raise SpecError(source, field, f"is {value!r}", f"expected a value {op} {minimum}")
    if maximum is not None and value > maximum:
        raise SpecError(source, field, f"is {value!r}", f"expected a value <= {maximum}")
    return value


def field_names(cls) -> tuple[str, ...]:
    """Names of a dataclass's fields, for override validation."""
    return tuple(f.name for f in fields(cls))
