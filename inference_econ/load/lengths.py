"""Distributions of prompt and output lengths (docs/model.md §E2).

A length is written as text, the same in the API, scenario files and on the command line:

* ``1000`` - every request has 1000 tokens;
* ``uniform:500:1500`` - whole numbers drawn uniformly from 500 to 1500;
* ``lognormal:1000:0.8`` - log-normal with mean 1000 tokens and log-standard deviation 0.8,
  rounded, at least 1; ``lognormal:1000:0.8:4096`` is the log-normal truncated at 4096 tokens
  (no draw above it, as a dataset's longest sample bounds its lengths) whose mean is still 1000
  (``truncated_mu``);
* ``trace`` - the lengths of the requests of a trace file, drawn at random (empirical).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from ..errors import SpecError
from ..specs.schema import check_number

LengthsKind = Literal["fixed", "uniform", "lognormal", "trace"]
KINDS: tuple[LengthsKind, ...] = get_args(LengthsKind)
#: Longest length accepted, tokens (a guard against typos such as 1e12).
MAX_TOKENS = 10_000_000
#: Standard deviations of the log past which a cap moves nothing: the normal tail there,
#: 1.1e-19, is below half a float's spacing at 1.0 (the mass kept rounds to 1.0, and the
#: log-mean moves by less than 1e-15).
NEGLIGIBLE = 9.0
EXAMPLES = "1000, uniform:500:1500, lognormal:1000:0.8, lognormal:1000:0.8:4096 or trace"


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts per request."""

    kind: LengthsKind
    low: float = 0.0  # fixed: the length; uniform: the lowest; lognormal: the mean
    high: float = 0.0  # uniform: the highest; lognormal: the cap (inf for none)
    sigma: float = 0.0  # lognormal: standard deviation of the log

    def draw(self, rng: np.random.Generator, count: int, empirical=None) -> np.ndarray:
        """``count`` whole lengths; ``empirical`` holds the trace's lengths for ``trace``."""
        if self.kind == "fixed":
            return np.full(count, int(self.low), dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(int(self.low), int(self.high) + 1, count)
        if self.kind == "lognormal":
            cap = min(self.high, MAX_TOKENS)
            z = rng.standard_normal(count)  # rng.lognormal's own draws: exp(mu + sigma z)
            mu = truncated_mu(self.low, self.sigma, cap)
            # the same draws, by inverse CDF, on the truncated law (a cap NEGLIGIBLE
            # standard deviations out leaves P(X <= cap) at 1.0 in floats: nothing to redraw)
            if math.isfinite(cap) and (math.log(cap) - mu) / self.sigma < NEGLIGIBLE:
                from scipy.special import ndtr, ndtri

                below = float(ndtr((math.log(cap) - mu) / self.sigma))  # P(X <= cap)
                if below < 1.0:
                    z = ndtri(ndtr(z) * below)
            x = np.rint(np.exp(mu + self.sigma * z))
            return np.clip(x, 1, cap).astype(np.int64)
        if empirical is None or len(empirical) == 0:
            raise SpecError("argument", "lengths", "'trace' needs a trace file", "give --trace")
        return np.asarray(empirical, dtype=np.int64)[rng.integers(0, len(empirical), count)]

    def longest(self) -> float:
        """The most tokens a request may draw: the fixed length, the uniform's highest, the
        log-normal's cap; inf where nothing caps it (an uncapped log-normal, a trace's)."""
        if self.kind == "fixed":
            return float(self.low)
        if self.kind in ("uniform", "lognormal"):
            return float(self.high)
        return math.inf

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.low:g} tokens"
        if self.kind == "uniform":
            return f"{self.low:g}-{self.high:g} tokens (uniform)"
        if self.kind == "lognormal":
            cap = f", at most {self.high:g}" if math.isfinite(self.high) else ""
            return f"log-normal (mean {self.low:g} tokens, sigma {self.sigma:g}{cap})"
        return "from the trace"


def truncated_mu(mean: float, sigma: float, cap: float = math.inf) -> float:
    """The log-mean ``mu`` of a log-normal of log-standard deviation ``sigma`` truncated at
    ``cap`` (no mass above it) whose mean is ``mean`` tokens.

    Untruncated, ``mu = ln(mean) - sigma²/2``. Truncated at ``c``, the mean is
    ``exp(mu + sigma²/2) Φ((ln c - mu - sigma²)/sigma) / Φ((ln c - mu)/sigma)``, which rises
    with ``mu`` towards ``c``; the root is found by Brent's method (scipy). A cap at or below
    the mean leaves no such law: ``mu = ln(cap)`` then (every draw is the cap).

    >>> round(truncated_mu(1000.0, 0.5), 4)  # ln 1000 - 0.125
    6.7828
    """
    plain = math.log(mean) - sigma**2 / 2.0
    if not math.isfinite(cap):
        return plain
    if cap <= mean:
        return math.log(cap)
    top = math.log(cap)
    if (top - plain - sigma**2) / sigma >= NEGLIGIBLE:
        return plain  # excess(plain) below is > -1e-15 there (no scipy import: 0.1 s)
    from scipy.special import log_ndtr

    def excess(mu: float) -> float:  # ln(truncated mean) - ln(mean)
        a, b = (top - mu - sigma**2) / sigma, (top - mu) / sigma
        return mu + sigma**2 / 2.0 + float(log_ndtr(a) - log_ndtr(b)) - math.log(mean)

    if excess(plain) >= -1e-12:  # the cap is too far out to move the mean
        return plain
    from scipy.optimize import brentq  # here: 0.3 s to import, and most caps never need it

    high = plain + sigma
    while excess(high) < 0.0:
        high += 2.0 * sigma
    return float(brentq(excess, plain, high, xtol=1e-12))


def parse_lengths(text, source: str = "argument", field: str = "lengths") -> Lengths:
    """A ``Lengths`` from its text form (see the module docstring); a clear error otherwise."""
    if isinstance(text, Lengths):
        return text
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str) or not text.strip():
        raise SpecError(source, field, f"expected a length, got {text!r}", f"write {EXAMPLES}")
    parts = [p.strip() for p in text.strip().split(":")]
    head = parts[0].lower()

    def number(value, what, minimum=1.0, integer=True):
        return check_number(
            value,
            source,
            f"{field} ({what})",
            minimum=minimum,
            maximum=MAX_TOKENS,
            integer=integer,
            unit="tokens" if integer else "",
        )

    if head == "trace" and len(parts) == 1:
        return Lengths("trace")
    if head == "uniform" and len(parts) == 3:
        low, high = number(parts[1], "lowest"), number(parts[2], "highest")
        if low > high:
            raise SpecError(source, field, f"uniform {low} > {high}", "write uniform:LOW:HIGH")
        return Lengths("uniform", float(low), float(high))
    if head == "lognormal" and len(parts) in (3, 4):
        mean = number(parts[1], "mean", integer=False)
        sigma = check_number(
            parts[2], source, f"{field} (sigma)", minimum=0, exclusive_minimum=True, maximum=4
        )
        cap = float(number(parts[3], "cap")) if len(parts) == 4 else math.inf
        if cap < mean:
            raise SpecError(source, field, f"cap {cap:g} is below the mean {mean:g}", "raise it")
        return Lengths("lognormal", float(mean), cap, float(sigma))
    if len(parts) == 1:
        try:
            float(parts[0])
        except ValueError:
            pass
        else:
            return Lengths("fixed", float(number(parts[0], "tokens")))
    raise SpecError(source, field, f"cannot read {text!r}", f"write {EXAMPLES}")
