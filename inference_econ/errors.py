"""Errors that reach users: each names where the problem is, what is wrong and how to fix it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class InferenceEconError(Exception):
    """Base class of every error the toolkit raises on purpose."""


class SpecError(InferenceEconError, ValueError):
    """A YAML spec or an argument is invalid.

    ``source`` is the file (or "argument"), ``field`` the dotted path of the offending field,
    ``problem`` what is wrong and ``fix`` what is expected instead.
    """

    def __init__(self, source: str, field: str, problem: str, fix: str = "") -> None:
        self.source = str(source)
        self.field = field
        self.problem = problem
        self.fix = fix
        where = f"{self.source}: " if self.source else ""
        at = f"field '{field}': " if field else ""
        tail = f" ({fix})" if fix else ""
        super().__init__(f"{where}{at}{problem}{tail}")


class UnknownNameError(SpecError, KeyError):
    """A model, GPU or scenario name that is not in the catalog."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]


class InfeasibleError(InferenceEconError):
    """No configuration satisfies the request (e.g. the model fits on no GPU count)."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return a ' did you mean ...?' hint for the closest names, or ''."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.5)
    if not close:
        close = [low for low in lowered if name.lower() in low or low in name.lower()][:3]
    if not close:
        return ""
    return "did you mean " + " or ".join(repr(lowered[c]) for c in close) + "?"


def shown(value) -> str:
    """A value as messages show it: numpy scalars as the plain numbers they hold (-1.0, not
    np.float64(-1.0)), everything else as its repr."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        value = item()
    return repr(value)
