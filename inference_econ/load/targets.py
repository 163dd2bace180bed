"""Latency targets ("service-level objectives"): limits on the 99th percentiles of time to first
token, time per output token and end-to-end latency (docs/model.md §E4)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, short

#: MLPerf Inference's Llama 2 70B limits (p99 TTFT, p99 TPOT), seconds.
MLPERF_SERVER = (2.0, 0.2)
MLPERF_INTERACTIVE = (0.45, 0.04)


#: A p99 time per output token above which a limit is more likely milliseconds written as
#: seconds ("--slo-tpot-p99 50") than meant: ten times MLPerf's loosest (Server, 0.2 s).
TPOT_LIMIT_WARN_S = 2.0
#: The same for the p99 time to first token ("--slo-ttft-p99 2000"): ten minutes. MLPerf's
#: TTFT limits are 0.45 s to 6 s (Llama 3.1 405B Server), so written in milliseconds they read
#: as 450 s to 6000 s; ten minutes is a hundred times the loosest and still passes a deliberate
#: "no TTFT limit to speak of" (600 s), while any millisecond limit from 0.6 s up is caught. No
#: end-to-end threshold: a response's time grows with its length (32k tokens at MLPerf's
#: 0.2 s a token is over 6000 s), so no number tells seconds from milliseconds there.
TTFT_LIMIT_WARN_S = 600.0


@dataclass(frozen=True)
class Targets:
    """Upper limits on p99 latencies, seconds; ``None`` means no limit on that metric."""

    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    e2e_p99_s: float | None = None

    def __post_init__(self) -> None:
        # a limit is a positive number of seconds (inf: none); -1 or NaN had been taken as
        # given, and made every run miss, or none
        for field in ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s"):
            value = getattr(self, field)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise SpecError("argument", field, f"expected seconds, got {short(value)}", "")
            if isinstance(value, int) and abs(value) > 2**1023:  # beyond a float's range
                raise SpecError(
                    "argument", field, f"is {short(value)}", "expected seconds (inf: no limit)"
                )
            if not float(value) > 0:
                raise SpecError(
                    "argument", field, f"is {short(value)}", "expected seconds > 0 (None: no limit)"
                )

    @property
    def limits(self) -> dict[str, float]:
        """The given limits by metric name (``ttft``, ``tpot``, ``e2e``)."""
        pairs = (("ttft", self.ttft_p99_s), ("tpot", self.tpot_p99_s), ("e2e", self.e2e_p99_s))
        return {name: float(v) for name, v in pairs if v is not None}

    @property
    def empty(self) -> bool:
        return not self.limits

    def implausible(self) -> str:
        """A line where the TTFT or TPOT limit is so long (over ``TTFT_LIMIT_WARN_S``,
        ``TPOT_LIMIT_WARN_S``) that it reads as milliseconds given as seconds; "" otherwise.
        The limits are kept as given."""
        lines = []
        for name, value, most, per in (
            ("ttft", self.ttft_p99_s, TTFT_LIMIT_WARN_S, ""),
            ("tpot", self.tpot_p99_s, TPOT_LIMIT_WARN_S, " a token"),
        ):
            if value is not None and most < value < math.inf:
                lines.append(
                    f"the p99 {name.upper()} limit (--slo-{name}-p99, slo_{name}_p99_s) is "
                    f"{value:g} s{per}, over {most:g} s: limits are seconds (did you mean "
                    f"{value / 1000:g}, {value:g} ms?)"
                )
        return "; ".join(lines)

    def met(self, p99: dict[str, float]) -> bool:
        """Whether every given limit holds for these p99 values (NaN p99: nothing measured,
        e.g. TPOT when every response is one token long, meets the limit)."""
        return all(not (p99[name] > limit) for name, limit in self.limits.items())

    def headroom(self, p99: dict[str, float]) -> dict[str, float]:
        """1 − p99/limit for each given limit: the share of the limit left unused."""
        return {name: 1.0 - p99[name] / limit for name, limit in self.limits.items()}

    def each_request(self, ttft, tpot, e2e) -> np.ndarray:
        """Which requests met every limit themselves (goodput); a request without a TPOT (one
        output token) meets the TPOT limit."""
        ok = np.isfinite(ttft) & np.isfinite(e2e)
        values = {"ttft": ttft, "tpot": tpot, "e2e": e2e}
        for name, limit in self.limits.items():
            with np.errstate(invalid="ignore"):
                ok &= ~(values[name] > limit)
        return ok

    def describe(self) -> str:
        if self.empty:
            return "no latency targets"
        names = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "end-to-end"}
        return ", ".join(f"p99 {names[k]} <= {_ms(v)}" for k, v in self.limits.items())


def _ms(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "inf"
    return f"{seconds * 1e3:g} ms" if seconds < 1 else f"{seconds:g} s"


#: No targets: every run meets them.
NO_TARGETS = Targets()
