"""What a setting's figures are, an ideal bound or expected figures (docs/model.md §F12), the
line every output opens with to say so, and the names of the expected figures' interval
columns: in a module of their own, so that an output of ideal-bound figures (a frontier under
the paper's preset) does not load the interval table's code (``serving/intervals.py``, which
re-exports these names).
"""

from __future__ import annotations

from ..columns import INTERVAL_LEVELS as LEVELS
from .setting import Setting


def interval_columns(name: str) -> list[str]:
    """The interval columns of a figure: ``name_low80, name_high80, name_low90, name_high90``."""
    return [f"{name}_{end}{level}" for level in LEVELS for end in ("low", "high")]


def interval_keys() -> list[str]:
    """The keys of ``intervals.limits`` in column order: low80, high80, low90, high90."""
    return [f"{e}{level}" for level in LEVELS for e in ("low", "high")]


def expected(setting: Setting) -> bool:
    """Whether the setting's figures are expected (an engine profile) rather than bounds."""
    return setting.assumptions.achievable


def figures_line(setting_or_label, intervals: bool = True, parts: str = "Cells") -> str:
    """The first line of every command's output: whether its figures are an ideal bound or
    expected, under which preset and engine profile (``intervals``: whether the output shows
    the expected figures' intervals; a table without them says where to find them). Several
    settings or labels (a study's cells, a fleet's models: ``parts``) give one line where they
    agree, else each's after "<parts> differ: "."""
    if isinstance(setting_or_label, (list, tuple)):
        lines = list(dict.fromkeys(figures_line(u, intervals) for u in setting_or_label))
        if len(lines) <= 1:
            return "".join(lines)  # none given: no line
        return f"{parts} differ: " + " / ".join(lines)
    label = setting_or_label
    if isinstance(setting_or_label, Setting):
        label = setting_or_label.assumptions.label
    name, _, rest = str(label).partition(", ")
    if rest.startswith("engine ") or name == "achievable":
        if rest.startswith("engine "):  # the profile's whole name: "trtllm (calibrated)"
            engine = f"engine profile {rest[len('engine ') :].split(' + ')[0]}"
        else:
            engine = rest or "engine profile trtllm"
        if not intervals:
            return (
                f"Expected figures: {name} preset, {engine}; this table leaves out their 80 % and "
                "90 % intervals (out-of-sample error: docs/validation.md)."
            )
        return (
            f"Expected figures: {name} preset, {engine}; 80 % and 90 % intervals from "
            "out-of-sample error (docs/validation.md)."
        )
    return (
        f"Ideal bound: {label} preset (what a perfect engine would reach; no interval). "
        "Expected figures: --assumptions achievable."
    )
