"""What a replayed run's span says about a whole benchmark's throughput (MLPerf LoadGen's,
trtllm-bench's over its dataset): the run from its first issue to its last completion, and
the rate an engine serves while every request waits (docs/model.md §F9)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RunSpan:
    """What a run says about LoadGen's throughput, which counts every issued request's output
    over the time from the first issue to the last completion (``result_tokens_per_second``
    in Offline: samples over the longest latency; ``result_completed_tokens_per_second`` in
    Server, over ``final_query_all_samples_done_time``): its drain included. A run of another
    length differs only in its steady middle: each request more or fewer moves the end by
    ``per_request_s`` - the mean gap between arrivals (Server), or a request's output at the
    rate the engine serves (all issued at t = 0 in Offline, or arrivals it cannot keep up
    with), whichever is longer - the fill and the drain unchanged."""

    requests: int
    span_s: float  # first arrival to last completion
    per_request_s: float
    tokens_per_request: float
    #: The run cannot be shorter than its drain (last admission to last completion).
    drain_s: float

    @classmethod
    def of(cls, record, served_tokens_per_s: float | None = None) -> RunSpan | None:
        """The span of a run record; ``served_tokens_per_s``: the rate the engine serves at
        (its service window's; None: ``saturated_rate``, every request issued at once)."""
        done = np.isfinite(record.finish_s)
        if not done.any():
            return None
        arrival = np.asarray(record.arrivals.arrival_s, dtype=float)
        start, last = float(np.min(arrival)), float(np.max(record.finish_s[done]))
        tokens = float(np.mean(record.arrivals.output_tokens[done]))
        n = int(done.sum())
        gap = (float(np.max(arrival)) - start) / max(len(arrival) - 1, 1)
        rate = saturated_rate(record) if served_tokens_per_s is None else served_tokens_per_s
        if not rate > 0:  # every request admitted at once: no saturated stretch, the run's own
            rate = n * tokens / (last - start) if last > start else math.nan
        per = max(gap, tokens / rate) if rate > 0 else math.nan
        admitted = np.asarray(record.admitted_s, dtype=float)
        drain = last - float(np.nanmax(admitted)) if np.isfinite(admitted).any() else 0.0
        return cls(n, last - start, per, tokens, max(drain, 0.0))

    def tokens_per_s(self, issued: int | None = None) -> float:
        """LoadGen's throughput of a run of ``issued`` requests (None: this run's own)."""
        n = self.requests if issued is None else issued
        span = max(self.span_s + (n - self.requests) * self.per_request_s, self.drain_s)
        return n * self.tokens_per_request / span if span > 0 else math.nan


def saturated_rate(record) -> float:
    """Output tokens per second from t = 0 to the last admission: each request's first token
    when it came, its others spread evenly from its first token to its last."""
    end = float(np.nanmax(record.admitted_s))
    first, last = record.first_token_s, record.finish_s
    n_out = record.arrivals.output_tokens.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(last > first, (end - first) / (last - first), 1.0)
    share = np.where(np.isfinite(share), np.clip(share, 0.0, 1.0), 0.0)
    done = np.where(first <= end, 1.0 + share * (n_out - 1.0), 0.0)
    return float(np.sum(done) / end) if end > 0 else math.nan
