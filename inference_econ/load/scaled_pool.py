"""A day of a pool of instances that scales (docs/model-part-e.md §E14): the demand curve's hourly rates as
a non-homogeneous Poisson stream, instances that come up a start-up delay after they are asked
for, and the requests that wait for them.

The day is simulated whole at the level of the pool, in bins of one second: each bin's arrivals
are a Poisson count at its hour's rate (the counts of a Poisson process in disjoint bins are
independent, so this is the non-homogeneous stream itself, not an approximation of it). Each
ready instance serves up to ``per`` requests/s within the latency targets — the knee the engine
simulation finds (§E6), the same figure the hourly plan sizes with — so the engine is simulated
once per instance size and the day costs a loop over 86,400 bins (about 0.1 s of CPU). Requests
beyond the ready instances' capacity wait, first come first served, in a backlog; one that
waits there longer than the allowance (the TTFT target) has missed its targets.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from ..columns import SECONDS_PER_HOUR
from .autoscaling import Observation, Policy

#: Seconds per bin of the day's simulation.
BIN_S = 1.0
#: Interval rates a policy sees (the planner's line reads the last few).
RATES_KEPT = 16


def arrival_counts(requests_per_s, seed: int = 0, bin_s: float = BIN_S) -> np.ndarray:
    """Requests arriving in each bin of the hours of ``requests_per_s``: Poisson counts at each
    hour's rate (a non-homogeneous Poisson stream, binned)."""
    bins_per_hour = int(round(SECONDS_PER_HOUR / bin_s))
    mean = np.repeat(np.asarray(requests_per_s, dtype=float) * bin_s, bins_per_hour)
    return np.random.default_rng(seed).poisson(mean)


def trace_counts(arrival_times_s, hours: int, bin_s: float = BIN_S) -> np.ndarray:
    """Requests arriving in each bin of ``hours`` hours, from a trace's arrival times (seconds
    from the start of the day; those outside it left out): a measured day instead of the
    Poisson stream."""
    bins = int(round(hours * SECONDS_PER_HOUR / bin_s))
    at = np.floor(np.asarray(arrival_times_s, dtype=float) / bin_s).astype(np.int64)
    at = at[(at >= 0) & (at < bins)]
    return np.bincount(at, minlength=bins)


@dataclass(frozen=True)
class ScaledPool:
    """What the pool is: the load one instance holds within the targets, the mean time a
    request spends in an instance at that load, the start-up delay, the scale-down window, the
    longest wait a request may spend waiting for capacity, and the pool's limits."""

    per_instance: float
    startup_s: float
    window_s: float = 300.0
    allowance_s: float = 2.0
    time_in_system_s: float = 1.0
    min_instances: int = 1
    max_instances: int | None = None
    #: The load an instance truly holds, where it differs from ``per_instance``, the estimate
    #: the policy scales by (an end of the estimate's interval; None: the estimate).
    serving_per_instance: float | None = None

    def clamp(self, wanted: int) -> int:
        top = self.max_instances if self.max_instances is not None else wanted
        return max(self.min_instances, min(wanted, top))


@dataclass(frozen=True, eq=False)
class ScaledRun:
    """A day of the pool, bin by bin, and its totals."""

    policy: Policy
    pool: ScaledPool
    bin_s: float
    arrivals: np.ndarray  # requests arriving in each bin
    served: np.ndarray  # requests served in each bin (capacity permitting)
    ready: np.ndarray  # instances serving in each bin
    asked: np.ndarray  # instances paid in each bin (ready or starting)
    missed: np.ndarray  # requests arriving in each bin that waited past the allowance

    @property
    def instance_hours(self) -> float:
        return float(self.asked.sum()) * self.bin_s / SECONDS_PER_HOUR

    @property
    def requests(self) -> int:
        return int(self.arrivals.sum())

    @property
    def missed_requests(self) -> int:
        return int(round(float(self.missed.sum())))

    @property
    def missed_share(self) -> float:
        return self.missed_requests / self.requests if self.requests else 0.0

    def per_minute(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per bin) summed per minute."""
        step = max(1, int(round(60.0 / self.bin_s)))
        whole = len(values) // step * step
        return values[:whole].reshape(-1, step).sum(axis=1)


def simulate_scaled_day(
    arrivals: np.ndarray,
    pool: ScaledPool,
    policy: Policy,
    bin_s: float = BIN_S,
    initial: int | None = None,
) -> ScaledRun:
    """The day of ``arrivals`` (requests per bin) under ``policy``: evaluated every
    ``policy.interval_s`` on the last interval; scale-ups asked for at once and serving
    ``pool.startup_s`` later, scale-downs to the most wished for over the last
    ``pool.window_s`` (the stabilisation window), the instances asked for last removed first.
    ``initial`` instances serve from the start (None: what the policy wants at the first
    hour's mean rate, served: the day starts warm, not from an empty pool with a queue)."""
    counts = np.asarray(arrivals, dtype=float)
    every = max(1, int(round(policy.interval_s / bin_s)))
    delay = int(round(pool.startup_s / bin_s))
    window = int(round(pool.window_s / bin_s))
    if initial is None:
        first = float(counts[: int(SECONDS_PER_HOUR / bin_s)].mean()) / bin_s
        serving = math.ceil(first / pool.per_instance) if pool.per_instance > 0 else 0
        initial = _wish(policy, pool, 0.0, first, (first,), serving, 0, 0.0)
    state = _State(ready=initial, asked=initial)
    served, ready, asked = (np.empty(len(counts)) for _ in range(3))
    serving = pool.per_instance if pool.serving_per_instance is None else pool.serving_per_instance
    cap = serving * bin_s
    q, seen = 0.0, 0.0
    for b, a in enumerate(counts.tolist()):
        if b and b % every == 0:
            rate = seen / (every * bin_s)
            state.rates.append(rate)
            wish = _wish(
                policy, pool, b * bin_s, rate, tuple(state.rates), state.ready, state.asked, q
            )
            state.apply(b, wish, window, delay)
            seen = 0.0
        state.arrive(b)
        total = q + a
        limit = state.ready * cap
        d = total if total < limit else limit
        q = total - d
        served[b], ready[b], asked[b] = d, state.ready, state.asked
        seen += a
    missed = _missed(counts, served, q, state.ready * cap, int(pool.allowance_s / bin_s + 1e-9))
    return ScaledRun(policy, pool, bin_s, counts, served, ready, asked, missed)


def _wish(
    policy: Policy, pool: ScaledPool, t: float, rate: float, rates, ready: int, asked: int, q: float
) -> int:
    """The instances ``policy`` wants at ``t``, within the pool's limits."""
    obs = Observation(t, rate, rates, ready, asked, q, pool.per_instance, pool.time_in_system_s)
    return pool.clamp(policy.desired(obs))


class _State:
    """The instances of a pool: serving, asked for in all, and those still starting as
    [bin at which they serve, how many] (ascending: every one takes the same delay; counted,
    not one entry an instance, so a pool of millions scales as fast as one of ten)."""

    def __init__(self, ready: int, asked: int) -> None:
        self.ready, self.asked = ready, asked
        self.starting: deque[list[int]] = deque()
        self.wishes: deque[tuple[int, int]] = deque()
        self.rates: deque[float] = deque(maxlen=RATES_KEPT)

    def apply(self, b: int, wish: int, window: int, delay: int) -> None:
        """Scale to ``wish`` at bin ``b``: up at once, down to the most wished for within the
        window; removing the instances asked for last (those still starting first)."""
        while self.wishes and self.wishes[0][0] <= b - window:
            self.wishes.popleft()
        self.wishes.append((b, wish))
        target = wish if wish >= self.asked else max(w for _, w in self.wishes)
        if target > self.asked:
            at = b + delay
            if self.starting and self.starting[-1][0] == at:
                self.starting[-1][1] += target - self.asked
            else:
                self.starting.append([at, target - self.asked])
        else:
            drop = self.asked - target
            cancel = 0
            while self.starting and cancel < drop:  # the last asked for first
                take = min(drop - cancel, self.starting[-1][1])
                self.starting[-1][1] -= take
                cancel += take
                if not self.starting[-1][1]:
                    self.starting.pop()
            self.ready -= drop - cancel
        self.asked = target

    def arrive(self, b: int) -> None:
        """Instances whose start-up ends at bin ``b`` serve from it."""
        while self.starting and self.starting[0][0] <= b:
            self.ready += self.starting.popleft()[1]


def _missed(counts, served, backlog: float, last_cap: float, wait_bins: int) -> np.ndarray:
    """Requests of each bin not served within ``wait_bins`` bins of it (first come, first
    served: request ``i`` of the day leaves in the first bin whose cumulative service reaches
    ``i``); after the day the pool keeps its last capacity."""
    n = len(counts)
    arrived = np.cumsum(counts)
    done = np.cumsum(served)
    at = np.arange(n) + wait_bins
    past = np.maximum(at - (n - 1), 0)
    by = done[np.minimum(at, n - 1)] + np.minimum(backlog, past * last_cap)
    before = np.concatenate(([0.0], arrived[:-1]))
    return np.clip(arrived - np.maximum(before, by), 0.0, None)
