"""How every figure draws a curve, in one place: the palette, the line style of speculative
decoding, and dollar tick labels. The PNG and SVG figures (``plots``, matplotlib) and the
interactive report (``report``, plotly) both read these, so a curve has the same colour, the
same line and the same axis in both.
"""

from __future__ import annotations

import math

from matplotlib.colors import to_hex

#: matplotlib's tab10, the colours of curves without one of their own (in order).
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
#: A curve that decodes speculatively is dashed, one that does not solid, unless it says.
SPECULATIVE, PLAIN = "dashed", "solid"
#: matplotlib's line styles as plotly names them.
PLOTLY_DASH = {"solid": "solid", "dashed": "dash", "dotted": "dot", "dashdot": "dashdot"}


def colours(labels, explicit=None) -> dict[str, str]:
    """One colour per curve (a hex string), stable across the figures of a scenario: the
    curve's own (any matplotlib colour: ``tab:green``, ``darkred``) or the palette's next."""
    explicit = explicit or {}
    return {
        label: to_hex(explicit.get(label) or PALETTE[i % len(PALETTE)])
        for i, label in enumerate(labels)
    }


def line_style(speculative: bool, explicit: str | None = None) -> str:
    """A curve's line style: its own, else dashed when it decodes speculatively."""
    return explicit or (SPECULATIVE if speculative else PLAIN)


def speculates(fields: dict) -> bool:
    """Whether a curve's settings (a scenario curve's fields, a study cell's values or key
    points) speculate: a draft model or draft heads."""
    return any(fields.get(k) not in (None, "", "none") for k in ("draft", "draft_heads"))


def dollars(value, _pos=None) -> str:
    """Readable dollar tick labels: $0.05, $0.5, $5, $50, $5k."""
    if value <= 0 or not math.isfinite(value):
        return ""
    if value >= 1000:
        return f"${value / 1000:g}k"
    if value >= 1:
        return f"${value:g}"
    return f"${value:.2g}"


#: The ticks of a dollar axis in each decade (1, 2 and 5 times a power of ten), and of a
#: latency axis in milliseconds (1, 2, 3, 5).
DOLLAR_TICKS = (1.0, 2.0, 5.0)
LATENCY_TICKS = (1.0, 2.0, 3.0, 5.0)


def log_ticks(lo: float, hi: float, subs=DOLLAR_TICKS) -> list[float]:
    """The ticks of a log axis from ``lo`` to ``hi``: ``subs`` times the powers of ten in
    between (what matplotlib's ``LogLocator(subs=...)`` gives), at least two."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= 0:
        return []
    out = [
        m * 10.0**k
        for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        for m in subs
        if lo <= m * 10.0**k <= hi
    ]
    if len(out) < 2:  # a narrow range: the powers of ten around it
        out = [10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi))]
    return out


def dollar_ticks(lo: float, hi: float) -> list[float]:
    """The ticks of a log dollar axis: 1, 2 and 5 times the powers of ten (as the PNGs)."""
    return log_ticks(lo, hi, DOLLAR_TICKS)


def parameters(value, _pos=None) -> str:
    """A parameter count as an axis reads it: 8B, 540B, 1T."""
    return f"{value / 1e12:g}T" if value >= 1e12 else f"{value / 1e9:g}B"
