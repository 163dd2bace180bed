"""The latency limits a run is stopped at (``simulate``'s ``stop``, docs/model.md §E3): a load
search reads only the verdict of most of its runs, so a run that certainly misses one of its
p99 limits ends there (``Watch``).
"""

from __future__ import annotations

import math

import numpy as np


class Watch:
    """The latency limits a run is stopped at (``simulate``'s ``stop``): it counts the requests
    whose time to first token, time per output token or end-to-end latency breaks its limit as
    each becomes known, and says when so many do that the p99 is certainly above the limit. A
    time to first token is known to break its limit once the limit has passed since the request
    arrived (``overdue``: its first token came late, or is still to come); the others at the
    request's last token.

    A p99 is ``np.percentile``'s linear interpolation at the virtual index 0.99 (n - 1) of the
    n measured values sorted: at least the value at its floor ``k``, which exceeds the limit
    once ``n - k`` values do. One more value is asked for, so that the rounding of the index
    cannot matter. A run with a request that never fits is certain at once (``verdict``)."""

    def __init__(
        self, limits: dict[str, float], sent: np.ndarray, fits: np.ndarray, output_tokens, prefilled
    ) -> None:
        """``limits`` by metric; per request: when it was sent, whether it fits the KV cache,
        its output tokens, whether it arrives prefilled (a first token not its own)."""
        inf = math.inf
        self.ttft = limits.get("ttft", inf)
        self.tpot = limits.get("tpot", inf)
        self.e2e = limits.get("e2e", inf)
        self.sent = sent.tolist()  # open loop: the arrival times
        fresh = fits & ~np.asarray(prefilled, dtype=bool)  # a first token of its own
        many = fresh & (output_tokens > 1)  # a time per output token
        self.left = [self._need(int(m.sum())) for m in (fresh, many, fits)]
        self.certain = not fits.all()
        # the requests with a first token of their own, by arrival (``overdue``)
        fresh_ids = np.flatnonzero(fresh) if math.isfinite(self.ttft) else np.empty(0, int)
        self.by_arrival = fresh_ids[np.argsort(sent[fresh_ids], kind="stable")].tolist()
        self.next = 0
        #: when the next request by arrival came (inf: none left): the scheduler calls
        #: ``overdue`` only once ``t - next_sent > ttft`` (its first test), not every turn
        self.next_sent = self.sent[self.by_arrival[0]] if self.by_arrival else inf

    def overdue(self, t: float, first: list) -> None:
        """Count the requests whose TTFT limit has passed by ``t`` since they arrived: each whose
        first token came after it, or has not come (it comes after ``t``), breaks it."""
        queue, sent, limit = self.by_arrival, self.sent, self.ttft
        j, n = self.next, len(queue)
        while j < n:
            i = queue[j]
            if not t - sent[i] > limit:
                break
            f = first[i]
            if f != f or f - sent[i] > limit:  # NaN: no first token yet
                self.count(0)
            j += 1
        self.next = j
        self.next_sent = sent[queue[j]] if j < n else math.inf

    @staticmethod
    def _need(n: int) -> int:
        """Values above a limit that put the p99 of ``n`` values above it."""
        return n - math.floor(0.99 * (n - 1)) + 1 if n > 0 else 1 << 62

    def finished(self, done, t: float, first: list, n_out: list) -> None:
        """The requests ``done`` finished at ``t`` (``first``: first-token times; ``n_out``:
        output tokens; per request). A time per output token exists for a request with a
        first token and more than one output token (a NaN first token compares false)."""
        tpot, e2e = self.tpot, self.e2e
        if tpot < math.inf:  # (a time per output token is never above an infinite limit)
            for i in done:
                n = n_out[i]
                if n > 1 and (t - first[i]) / (n - 1) > tpot:
                    self.count(1)
        if e2e < math.inf:
            sent = self.sent
            for i in done:
                if t - sent[i] > e2e:
                    self.count(2)

    def count(self, metric: int) -> None:
        """One more request broke the limit of ``metric`` (0 TTFT, 1 TPOT, 2 end-to-end)."""
        self.left[metric] -= 1
        if self.left[metric] <= 0:
            self.certain = True
