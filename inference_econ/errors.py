"""Errors that reach users: each names where the problem is, what is wrong and how to fix it."""

from __future__ import annotations

import difflib
import math
import os
import reprlib
import unicodedata
from collections.abc import Callable, Iterable

#: How errors name a spec file: ``specs/catalog.py`` installs its ``display_path`` (a shipped
#: spec relative to the package data, wherever it is installed; a user's file as given), so
#: every error about a file names it the same way, whichever module raised it.
_display_source: Callable[[str], str] | None = None


def display_sources_with(display: Callable[[str], str]) -> None:
    """Name the files of every later error with ``display`` (set once, by specs/catalog.py)."""
    global _display_source
    _display_source = display


def _shown(source: str) -> str:
    """``source`` as errors show it: a file path through the installed display, other text
    (``argument``, ``derived from H100-SXM``) as it is."""
    text = str(source)
    if _display_source is None or not (os.sep in text or "/" in text):
        return text
    return _display_source(text)


class InferenceEconError(Exception):
    """Base class of every error the toolkit raises on purpose."""


class SpecError(InferenceEconError, ValueError):
    """A YAML spec or an argument is invalid.

    ``source`` is the file (or "argument"), ``field`` the dotted path of the offending field,
    ``problem`` what is wrong and ``fix`` what is expected instead.
    """

    def __init__(self, source: str, field: str, problem: str, fix: str = "") -> None:
        self.source = one_line(_shown(source))
        self.field = one_line(field)
        self.problem = one_line(problem)
        self.fix = one_line(fix)
        source, field, problem, fix = self.source, self.field, self.problem, self.fix
        where = f"{self.source}: " if self.source else ""
        at = f"field '{field}': " if field else ""
        tail = f" ({fix})" if fix else ""
        super().__init__(f"{where}{at}{problem}{tail}")

    def inside(self, source: str, field: str = "") -> SpecError:
        """The same error seen from an enclosing file: ``source`` and ``field`` are where the
        outer file points at this one (e.g. a scenario's curve and its ``model``); the inner
        file and field stay in the message."""
        inner = f"{self.source}: " if self.source not in ("", "argument") else ""
        at = f"field '{self.field}': " if self.field and inner else ""
        return type(self)(source, field, f"{inner}{at}{self.problem}", self.fix)


class UnknownNameError(SpecError, KeyError):
    """A model, GPU or scenario name that is not in the catalog."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]


class InfeasibleError(InferenceEconError):
    """No configuration satisfies the request (e.g. the model fits on no GPU count)."""


class InferenceEconWarning(UserWarning):
    """Input the toolkit accepts but a user should know about (a draft that is the target, a
    context beyond the model's window): the numbers are computed, and the warning says what
    they rest on. The command line prints each one once, on one line of stderr."""


def warn(message: str) -> None:
    """Issue an ``InferenceEconWarning`` (one line; Python shows it once per place and text)."""
    import warnings

    warnings.warn(one_line(message), InferenceEconWarning, stacklevel=3)


def short(value, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages about values of any size.

    ``reprlib`` stops at a few levels and items, so a huge (or alias-expanded) value is never
    rendered in full; floats (numpy's too) print as ``inf``, ``nan``, ``1e-300``, and whole
    numbers of 16 digits or more as floats do (``1e+308``).
    """
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        value = item()  # numpy scalars as the plain numbers they hold
    if isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15
    ):  # a huge whole number (1e308 read as a count) as 1e+308, not 300 digits cut short
        try:
            return f"{float(value):g}"
        except OverflowError:  # beyond a float's range: its digits in the same form (1e+400),
            magnitude = abs(value)  # counted without str(), which stops at 4,300 digits
            exponent = int(math.log10(magnitude))
            exponent += (10 ** (exponent + 1) <= magnitude) - (10**exponent > magnitude)
            lead = str(magnitude // 10 ** max(exponent - 5, 0))
            mantissa = f"{lead[0]}.{lead[1:6]}".rstrip("0").rstrip(".")
            return f"{'-' if value < 0 else ''}{mantissa}e+{exponent}"
        except (TypeError, ValueError):
            pass
    try:
        text = _REPR.repr(value)
    except Exception:  # a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 50, 50
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_REPR.maxlong = 40


def one_line(text) -> str:
    """Text on one line: newlines and other unprintable characters become spaces (messages,
    and names the toolkit writes into a comment of a file it writes: a shell script's or a
    CSV's '#' line ends at a line break, so what followed one would run or be read as data)."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else " " for ch in text)


def control_character(text: str) -> str | None:
    """The first line break or other control character of ``text`` (its repr), or None: a name,
    a source or a path with one is refused where it is read (docs/errors.md)."""
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return repr(ch)
    return None


def expect(value, kind, field: str, what: str, fix: str):
    """``value`` when it is a ``kind`` (a type or a tuple of them); else one ``SpecError``
    naming the argument: a Python caller's None or wrong object at the public API's boundary,
    instead of an AttributeError or TypeError from deep inside."""
    if isinstance(value, kind) and not (isinstance(value, bool) and bool not in _kinds(kind)):
        return value
    raise SpecError("argument", field, f"expected {what}, got {short(value)}", fix)


def _kinds(kind) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


def plural(count, noun: str) -> str:
    """``noun`` for a count of one, ``noun + "s"`` otherwise ("1 GPU", "2 GPUs", "1.5 GPUs")."""
    return noun if count == 1 else noun + "s"


def article(count) -> str:
    """ "a" or "an" before a number said aloud: an 8-, 11-, 18-, 80- or 8,000-token prompt."""
    value = float(count)
    if not value.is_integer() or value < 0:
        return "a"
    digits = str(int(value))
    if digits[0] == "8" or (len(digits) % 3 == 2 and digits[:2] in ("11", "18")):
        return "an"
    return "a"


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
