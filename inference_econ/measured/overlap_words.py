"""Whether a measured row states its engine ran two-batch overlap (docs/model-part-f.md §F7
"Two-batch overlap"): SGLang's ("--enable-two-batch-overlap", "enable_two_batch_overlap: true",
"two-batch overlap", "TBO") or vLLM's dual-batch overlap ("--enable-dbo", "dual-batch
overlap", "DBO"); off where the row says so ("--no-enable-dbo", "no TBO", "without two-batch
overlap", "TBO off")."""

from __future__ import annotations

import re

from ..errors import SpecError
from .semantics import scenario_part

_KEY = r"(?:two|dual)[\s_-]*batch[\s_-]*overlap|(?<![a-z0-9])[td]bo\b"
_OVERLAP = re.compile(
    rf"(?P<neg>--no-|\bno\s+|\bwithout\s+)?(?:--)?(?:enable[\s_-]*)?(?:{_KEY})"
    r"(?:['\"]?\s*[:=]\s*['\"]?(?P<value>[^\s;,)'\"|]*)|\s+(?P<word>on|off|enabled|disabled)\b)?",
    re.I,
)
_ON = ("true", "on", "yes", "1", "enabled")
_OFF = ("false", "off", "no", "0", "disabled")


def overlap_of(text, scenario: str | None, notes: str = "", where: str = "") -> bool | None:
    """Whether a row states two-batch overlap on (True) or off (False), in
    ``batch_or_concurrency`` or else the notes (the row's scenario part); None where it does
    not say. A value not read, or both for one scenario, is the row's ``SpecError``."""
    for field, cell in (("batch_or_concurrency", text), ("notes", notes)):
        found = set()
        for m in _OVERLAP.finditer(scenario_part(cell, scenario).text):
            said = (m.group("value") or m.group("word") or "true").lower()
            if said not in _ON + _OFF:
                raise SpecError(
                    where,
                    field,
                    f"two-batch overlap {said!r} is not read",
                    "give true or false (or the flag alone, --enable-two-batch-overlap or "
                    "--enable-dbo)",
                )
            found.add(not m.group("neg") and said in _ON)
        if len(found) > 1:
            raise SpecError(
                where, field, "states two-batch overlap both on and off", "keep the one it ran"
            )
        if found:
            return found.pop()
    return None
