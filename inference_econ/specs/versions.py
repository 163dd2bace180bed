"""Engine version ranges (a profile's ``versions``: ">=0.8", "<1.0", ">=0.6,<0.8"): reading a
version's release numbers and whether a version lies within a range."""

from __future__ import annotations

import re

from ..errors import SpecError

_VERSION = re.compile(r"^\s*v?(\d+(?:\.\d+){0,3})")


_BOUND = re.compile(r"^\s*(>=|<=|==|>|<)\s*(\S+)\s*$")


def parse_version(text) -> tuple[int, ...] | None:
    """The release numbers of a version ("0.4.3+rocm614" -> (0, 4, 3); "v1.0.0rc2" -> (1, 0,
    0)); None when there is none, or for 0.0.0 (a development build's placeholder, as
    "0.0.0.dev1+mlperf50")."""
    if text is None:
        return None
    m = _VERSION.match(str(text))
    if not m:
        return None
    parts = tuple(int(p) for p in m.group(1).split("."))
    return None if not any(parts) else parts


def version_range(text: str, source: str = "argument") -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The bounds of a ``versions`` range (">=0.8", "<1.0", ">=0.6,<0.8"; "" for all)."""
    out = []
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        m = _BOUND.match(part)
        version = parse_version(m.group(2)) if m else None
        if version is None:
            raise SpecError(
                source, "versions", f"cannot read {part!r}", 'write bounds such as ">=0.8,<1.0"'
            )
        out.append((m.group(1), version))
    return tuple(out)


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def in_range(version: tuple[int, ...], text: str) -> bool:
    """Whether ``version`` lies within a ``versions`` range."""
    ok = {">=": (0, 1), "<=": (-1, 0), "==": (0,), ">": (1,), "<": (-1,)}
    return all(_cmp(version, bound) in ok[op] for op, bound in version_range(text))


def open_ended(text: str) -> bool:
    """A range without an upper bound (the newest versions)."""
    return not any(op in ("<", "<=", "==") for op, _ in version_range(text))


def split_engine(text: str) -> tuple[str, str | None]:
    """``vllm@0.10`` -> ("vllm", "0.10"); a name or path without "@" -> (it, None)."""
    name, at, version = str(text).partition("@")
    return name.strip(), (version.strip() or None) if at else None
