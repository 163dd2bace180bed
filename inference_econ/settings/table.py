"""The table of settings, derived from the fields that declare them, and what reads it: the
row and default of a setting, the settings of a layer or group, the checks of given values
(each against its row, unknown names with a hint, combinations a row needs or excludes) and
the signature of a function that takes a layer's settings."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import SpecError, did_you_mean
from .inverse import FeasibilityOptions, OfferOptions, SizeOptions, VariantOptions
from .load import (
    DemandOptions,
    DeploymentOptions,
    FailureOptions,
    LoadOptions,
    PoolOptions,
    SchedulerOptions,
    SharingOptions,
    TargetOptions,
    TrafficOptions,
)
from .operating import ContextParallelOptions, PointOptions, SweepOptions
from .problem import PriceOptions, ScopeOptions, SearchOptions, ServedOptions, SpeculationOptions
from .row import Option, rows
from .study import ExecutionOptions, KeyPointOptions, OutputOptions

#: The sections (each a dataclass of the options read together), in the order the command line
#: lists their options.
SECTIONS = (
    ServedOptions,
    SpeculationOptions,
    ScopeOptions,
    PriceOptions,
    SearchOptions,
    PointOptions,
    ContextParallelOptions,
    SweepOptions,
    OfferOptions,
    VariantOptions,
    FeasibilityOptions,
    SizeOptions,
    LoadOptions,
    TrafficOptions,
    TargetOptions,
    SchedulerOptions,
    SharingOptions,
    PoolOptions,
    FailureOptions,
    DemandOptions,
    DeploymentOptions,
    KeyPointOptions,
    ExecutionOptions,
    OutputOptions,
)
#: Every setting, in the order the command line lists them.
SETTINGS: tuple[Option, ...] = tuple(row for cls in SECTIONS for row in rows(cls))
BY_NAME: dict[str, Option] = {o.name: o for o in SETTINGS}
_ORDER = {o.name: i for i, o in enumerate(SETTINGS)}


def option(name: str) -> Option:
    """The row of one setting."""
    return BY_NAME[name]


def default(name: str, command: str | None = None) -> Any:
    """The default of a setting, in ``command`` if that command has its own (the row's
    ``command_defaults``): the one home of every default an API function or command shows."""
    row = BY_NAME[name]
    return dict(row.command_defaults).get(command, row.default)


#: The Python type of each kind of setting, as a generated signature states it.
_ANNOTATIONS = {
    "number": "float",
    "integer": "int",
    "numbers": "str | list[float]",
    "flag": "bool",
    "text": "str",
    "name": "str",
}


def takes(*layers: str, command: str | None = None) -> Callable:
    """Decorator: the function's signature lists, after its own parameters, every setting of
    ``layers`` as a keyword-only parameter with the table's default (``command``'s own where
    it has one), so ``help()`` and editors show what it takes. The function still receives
    them in ``**kwargs`` and checks them against the table as before; the signature is
    generated from the table, so it cannot drift from it."""

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        taken = {p.name for p in own}
        extra = []
        for row in SETTINGS:
            if row.layer not in layers or row.name in taken:
                continue
            value = None if row.required else default(row.name, command)
            kind = _ANNOTATIONS.get(row.kind, "Any")
            annotation = f"{kind} | None" if row.optional or value is None else kind
            extra.append(
                inspect.Parameter(
                    row.name, inspect.Parameter.KEYWORD_ONLY, default=value, annotation=annotation
                )
            )
        fn.__signature__ = sig.replace(parameters=own + extra)
        return fn

    return wrap


def group(name: str) -> tuple[str, ...]:
    """The settings of one group (``Option.group``), in table order."""
    found = tuple(o.name for o in SETTINGS if o.group == name)
    if not found:
        raise KeyError(f"no settings in group {name!r}")
    return found


def unknown_hint(key: Any, allowed: Iterable[str]) -> str:
    """The hint for an unknown setting ``key``: the setting whose command-line flag it spells
    (``rate``: ``arrival_rate_per_s``, whose flag is --rate), else the nearest names."""
    allowed = tuple(allowed)
    flag = "--" + str(key).replace("_", "-")
    spelt = [n for n in allowed if n in BY_NAME and BY_NAME[n].cli_flag == flag]
    if spelt:
        return f"did you mean {spelt[0]!r}, the setting of {flag}?"
    return did_you_mean(str(key), allowed)


def names(*layers: str) -> tuple[str, ...]:
    """The settings read by some layers, in table order."""
    return tuple(o.name for o in SETTINGS if o.layer in layers)


def defaults(*layers: str) -> dict[str, Any]:
    """Default values of the settings of some layers (required ones left out)."""
    return {o.name: o.default for o in SETTINGS if o.layer in layers and not o.required}


def check(
    values: Mapping[str, Any],
    layers: Iterable[str],
    source: str = "argument",
    prefix: str = "",
    fill_defaults: bool = True,
) -> dict[str, Any]:
    """Validate settings of the given layers; unknown names are errors with a hint.

    Returns every setting of those layers, defaults filled in for those not given (unless
    ``fill_defaults`` is false). ``prefix`` is put before field names in messages.
    """
    layers = tuple(layers)
    allowed = names(*layers)
    for key in values:
        if key not in allowed:
            hint = unknown_hint(key, allowed)
            raise SpecError(
                source,
                f"{prefix}{key}",
                "unknown setting",
                hint or f"known settings: {', '.join(allowed)}",
            )
    out: dict[str, Any] = {}
    for name in allowed:
        row = BY_NAME[name]
        if name in values:
            out[name] = row.check(values[name], source, f"{prefix}{name}")
        elif row.required:
            raise SpecError(source, f"{prefix}{name}", "is missing", row.help)
        elif fill_defaults:
            out[name] = row.default
    return out


def unmet_needs(
    given: Iterable[str], offered: Iterable[str] | None = None, present: Iterable[str] = ()
) -> list[tuple[Option, tuple[str, ...]]]:
    """The given settings none of whose ``needs`` is given or ``present`` (set by a default,
    e.g. a command's default draft), each with the settings it needs (only those in
    ``offered``, e.g. a command's options; a row needing none of them is skipped)."""
    given = set(given)
    there = given | set(present)
    offered = None if offered is None else set(offered)
    out = []
    for name in sorted(given, key=lambda n: _ORDER.get(n, len(_ORDER))):
        row = BY_NAME.get(name)
        if row is None or not row.needs or any(n in there for n in row.needs):
            continue
        could = tuple(n for n in row.needs if offered is None or n in offered)
        if could:
            out.append((row, could))
    return out


def conflicts(given: Iterable[str]) -> list[tuple[Option, str]]:
    """Each given setting with a given setting its row ``excludes``."""
    given = set(given)
    out = []
    for name in sorted(given, key=lambda n: _ORDER.get(n, len(_ORDER))):
        row = BY_NAME.get(name)
        for other in row.excludes if row is not None else ():
            if other in given:
                out.append((row, other))
    return out


def given_names(values: Mapping[str, Any]) -> list[str]:
    """The settings of ``values`` that are given: not None, and a flag not at its default
    (``speculation=True`` changes nothing; ``speculation=False`` turns speculation off, which
    its row's ``excludes`` are about)."""
    out = []
    for key, value in values.items():
        row = BY_NAME.get(key)
        if value is None or (row is not None and row.kind == "flag" and value == row.default):
            continue
        out.append(key)
    return out


def check_needs(values: Mapping[str, Any], source: str = "argument") -> None:
    """Refuse a setting given (not None) without any of the settings it needs, or with one
    it excludes: it would be silently ignored (docs/errors.md, "Combinations")."""
    given = given_names(values)
    for row, could in unmet_needs(given):
        names = " or ".join(could)
        raise SpecError(
            source,
            row.name,
            f"is given without {names}",
            f"give {names} too, or leave {row.name} out",
        )
    for row, other in conflicts(given):
        raise SpecError(
            source,
            row.name,
            f"is given with {other}, which sets the same thing",
            f"give one of {row.name} and {other}",
        )


def check_each(values: Mapping[str, Any], source: str = "argument") -> dict[str, Any]:
    """Validate some named settings (of any layer) and return them normalised."""
    out = {}
    for key, value in values.items():
        if key not in BY_NAME:
            hint = unknown_hint(key, BY_NAME)
            raise SpecError(
                source, str(key), "unknown setting", hint or "see inference_econ/settings/"
            )
        out[key] = BY_NAME[key].check(value, source)
    return out
