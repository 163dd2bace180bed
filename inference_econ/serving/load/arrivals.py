"""Who arrives when, with how many tokens: a Poisson process or a trace file, and the requests
one engine instance of a deployment receives (docs/model.md §E2).

A trace is a CSV file with a header and one row per request:

    arrival_time_s,prompt_tokens,output_tokens
    0.000,812,240
    0.173,95,61

Rows may come in any order (they are sorted by arrival); other columns are ignored. A deployment
of ``K`` instances behind a load balancer that sends each request to a random instance gives
every instance a thinned stream: a Poisson process of rate ``rate / K``, or each trace row with
probability ``1 / K``. One instance is simulated; the others see statistically the same load.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ...errors import SpecError
from ...specs.inputs import csv_stream
from ...specs.schema import check_number
from .lengths import MAX_TOKENS, Lengths, parse_lengths

TRACE_COLUMNS = ("arrival_time_s", "prompt_tokens", "output_tokens")
PROCESSES = ("poisson", "trace")


@dataclass(frozen=True)
class Arrivals:
    """The requests of one engine instance, sorted by arrival time (seconds, tokens)."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


@dataclass(frozen=True, eq=False)
class Trace:
    """The requests of a trace file, sorted by arrival."""

    path: str
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray

    @property
    def rate_per_s(self) -> float:
        """Mean arrival rate: requests after the first over the time they span."""
        span = float(self.arrival_s[-1] - self.arrival_s[0])
        return (len(self.arrival_s) - 1) / span if span > 0 else math.inf


#: The latest arrival a trace may give (about 32 years): arrival times stay exact to well
#: under a microsecond, so latencies measured between them keep their digits.
MAX_ARRIVAL_S = 1e9


def _cell(row: dict, column: str, path: str, line: int, integer: bool) -> float:
    """One cell of a trace, checked by the one number checker (specs/schema.py)."""
    where = f"{path}: line {line}"
    text = (row.get(column) or "").strip()
    if integer:
        bounds = dict(minimum=1, maximum=MAX_TOKENS, integer=True, unit="tokens")
    else:
        bounds = dict(minimum=0, maximum=MAX_ARRIVAL_S, unit="seconds")
    return float(check_number(text, where, column, **bounds))


def load_trace(path) -> Trace:
    """Read and validate a trace CSV (columns ``arrival_time_s``, ``prompt_tokens``,
    ``output_tokens``) through the input boundary (a regular UTF-8 file of bounded size);
    errors name the file, the line and the column."""
    if isinstance(path, Trace):
        return path
    source = str(path)
    try:
        reader = csv.DictReader(csv_stream(path))
        missing = [c for c in TRACE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise SpecError(
                source,
                missing[0],
                "missing column",
                f"the header must name {', '.join(TRACE_COLUMNS)}",
            )
        rows = [
            [_cell(row, c, source, i, c != "arrival_time_s") for c in TRACE_COLUMNS]
            for i, row in enumerate(reader, start=2)
        ]
    except csv.Error as exc:
        raise SpecError(source, "", f"is not valid CSV ({exc})", "give a CSV file") from None
    if len(rows) < 2:
        raise SpecError(source, "", f"has {len(rows)} request rows", "a trace needs at least 2")
    data = np.asarray(rows, dtype=float)
    order = np.argsort(data[:, 0], kind="stable")
    data = data[order]
    return Trace(source, data[:, 0], data[:, 1].astype(np.int64), data[:, 2].astype(np.int64))


@dataclass(frozen=True)
class Traffic:
    """The offered load: an arrival process at a total rate, prompt and output lengths, how
    many requests to simulate and the seed. Seeded streams are reproducible, and a different
    rate scales the same arrival times (common random numbers: lengths do not change)."""

    rate_per_s: float | None = None
    input_lengths: Lengths | None = None
    output_lengths: Lengths | None = None
    trace: Trace | None = None
    process: str = "poisson"
    requests: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.process not in PROCESSES:
            raise SpecError(
                "argument", "arrival_process", f"unknown {self.process!r}", "poisson or trace"
            )
        if self.process == "trace" and self.trace is None:
            raise SpecError(
                "argument", "arrival_process", "'trace' needs a trace file", "give --trace"
            )
        if self.process == "poisson" and not (self.rate_per_s and self.rate_per_s > 0):
            raise SpecError(
                "argument", "arrival_rate_per_s", "is missing", "give --rate (requests/s)"
            )
        for name in ("input_lengths", "output_lengths"):
            lengths = getattr(self, name)
            if lengths is None and self.trace is None:
                raise SpecError(
                    "argument", name, "is missing", "give a length such as 1000 or a trace file"
                )
            if lengths is not None and lengths.kind == "trace" and self.trace is None:
                raise SpecError("argument", name, "'trace' needs a trace file", "give --trace")

    @property
    def simulated_requests(self) -> int:
        """Requests one simulation serves at most: every trace row, or ``requests``."""
        return len(self.trace.arrival_s) if self.process == "trace" else int(self.requests)

    @property
    def offered_rate_per_s(self) -> float:
        """Total requests per second offered to the deployment."""
        if self.rate_per_s:
            return float(self.rate_per_s)
        return self.trace.rate_per_s

    def at_rate(self, rate_per_s: float) -> Traffic:
        """The same traffic at another total rate (a trace's times are rescaled)."""
        return replace(self, rate_per_s=float(rate_per_s))

    def stream(self, instances: int = 1) -> Arrivals:
        """The requests one of ``instances`` instances receives under random load balancing."""
        gaps_rng, pick_rng, in_rng, out_rng = (
            np.random.default_rng(s) for s in np.random.SeedSequence(self.seed).spawn(4)
        )
        rate = self.offered_rate_per_s
        rows = None
        if self.process == "trace":
            times = self.trace.arrival_s - self.trace.arrival_s[0]
            if math.isfinite(self.trace.rate_per_s):
                times = times * (self.trace.rate_per_s / rate)
            rows = np.arange(len(times))
            if instances > 1:
                rows = rows[pick_rng.random(len(times)) < 1.0 / instances]
            times = times[rows]
        else:
            times = np.cumsum(gaps_rng.exponential(1.0, self.requests)) / (rate / instances)
            if self.trace is not None:  # Poisson arrivals, lengths of random trace rows
                rows = pick_rng.integers(0, len(self.trace.arrival_s), self.requests)
        prompt = self._lengths(self.input_lengths, "prompt_tokens", rows, in_rng, len(times))
        output = self._lengths(self.output_lengths, "output_tokens", rows, out_rng, len(times))
        return Arrivals(np.asarray(times, dtype=float), prompt, output)

    def _lengths(self, lengths: Lengths | None, column: str, rows, rng, count: int):
        """The trace rows' own lengths (no distribution, or ``trace``: prompt and output of a
        request stay paired), else lengths drawn from the distribution."""
        if lengths is None or lengths.kind == "trace":
            return np.asarray(getattr(self.trace, column)[rows], dtype=np.int64)
        return lengths.draw(rng, count)

    def describe(self, with_rate: bool = True) -> str:
        """The traffic in words (arrivals, prompt and output lengths)."""
        if self.process == "trace":
            name = Path(self.trace.path).name
            offered = self.offered_rate_per_s
            rate = (
                ""
                if not with_rate
                else f", {offered:.4g} req/s"
                if math.isfinite(offered)
                else ", all at once"
            )
            arrivals = f"arrivals of trace {name}{rate}"
        else:
            arrivals = (
                f"Poisson arrivals, {self.rate_per_s:.4g} req/s"
                if with_rate
                else "Poisson arrivals"
            )
        prompt = self.input_lengths.describe() if self.input_lengths else "from the trace"
        output = self.output_lengths.describe() if self.output_lengths else "from the trace"
        return f"{arrivals}; prompts {prompt}; outputs {output}"


def make_traffic(
    rate_per_s=None,
    input_lengths=None,
    output_lengths=None,
    trace=None,
    process=None,
    requests: int = 10_000,
    seed: int = 0,
) -> Traffic:
    """A ``Traffic`` from plain values: lengths as text (``lengths.parse_lengths``), a trace as a
    path; the arrival process defaults to the trace's when a trace is given, else Poisson."""
    tr = load_trace(trace) if trace is not None else None
    return Traffic(
        rate_per_s=None if rate_per_s is None else float(rate_per_s),
        input_lengths=None
        if input_lengths is None
        else parse_lengths(input_lengths, "argument", "input_lengths"),
        output_lengths=None
        if output_lengths is None
        else parse_lengths(output_lengths, "argument", "output_lengths"),
        trace=tr,
        process=process or ("trace" if tr is not None else "poisson"),
        requests=int(requests),
        seed=int(seed),
    )
