"""The most load a deployment holds under latency targets (docs/model.md §E6).

Offered load is searched on a fixed lattice of rates, ``start · √2^i``, from a start that
depends on the deployment and the traffic but not on the targets: walking up from the start
until the targets first fail (or down until they first hold), then bisecting that interval five
times (about 1 % in rate). Every simulation depends on the rate alone (seeded, with the same
random draws at every rate), so a target that is tighter everywhere fails wherever a looser one
fails: its maximum load is never higher, and the deployment it needs never cheaper.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import settings as table
from ..errors import SpecError
from ..serving.load.arrivals import Traffic
from ..serving.load.deployment import (
    Deployment,
    Pool,
    rate_estimate,
    simulate_decode_pool,
    simulate_deployment,
    simulate_prefill_pool,
)
from ..serving.load.engine import DEFAULT_ENGINE, EngineConfig
from ..serving.load.results import LoadResult
from ..serving.load.targets import Targets
from ..serving.setting import Setting
from .optimiser import GRID_MEMORY_SHARE, available_memory_bytes

RATIO = math.sqrt(2.0)
WALK_STEPS = 16  # up to 2^8 = 256 times the start either way
REFINE_STEPS = 5
#: What is simulated: the whole deployment, or one pool of a disaggregated one alone.
KINDS = ("deployment", "prefill", "decode")


#: CPU seconds per simulated request, rounded up (``python benchmarks/bench_load.py`` and a run
#: of 1,000,000 requests: 23 s, 2.3e-5 s each, on the 2-core development machine).
SECONDS_PER_REQUEST = 3e-5
#: Peak bytes per simulated request (the same run: 247 MB; rounded up).
BYTES_PER_REQUEST = 300.0
#: Simulations one load search takes (its lattice, refinement and curve; about 15 measured).
SIMULATIONS_PER_SEARCH = 20
#: Longest estimated simulation work run without ``yes`` (``settings.CONFIRM_SECONDS``).
LOAD_MAX_SECONDS = table.CONFIRM_SECONDS


def check_budget(traffic: Traffic, simulations: int, what: str, yes: bool = False) -> None:
    """Refuse, before it starts, load work estimated to take more than ``LOAD_MAX_SECONDS``
    (unless ``yes``) or half the memory available (always): the estimate and the largest
    request count that would do in the message."""
    n = traffic.simulated_requests
    seconds = n * simulations * SECONDS_PER_REQUEST
    memory = GRID_MEMORY_SHARE * available_memory_bytes()
    if (seconds <= LOAD_MAX_SECONDS or yes) and n * BYTES_PER_REQUEST <= memory:
        return
    fits = int(
        min(LOAD_MAX_SECONDS / (simulations * SECONDS_PER_REQUEST), memory / BYTES_PER_REQUEST)
    )
    trace = traffic.process == "trace"
    raise SpecError(
        "argument",
        "trace" if trace else "requests",
        f"{what} simulates {n:,} requests about {simulations:,} times: about {seconds:,.0f} s "
        f"and {n * BYTES_PER_REQUEST / 1e9:.2g} GB (limits {LOAD_MAX_SECONDS:.0f} s and "
        f"{memory / 1e9:.2g} GB)",
        (f"use a trace of at most {fits:,} rows" if trace else f"use requests <= {fits:,}")
        + ("" if n * BYTES_PER_REQUEST > memory else ", or give --yes (yes=True) to run it"),
    )


@functools.lru_cache(maxsize=256)
def run_at(
    kind: Pool, setting: Setting, deployment: Deployment, traffic: Traffic, config: EngineConfig
) -> LoadResult:
    """One simulation without targets (cached: searches under several targets share it)."""
    if kind == "prefill":
        return simulate_prefill_pool(
            setting, deployment.gpus_per_instance, deployment.instances, traffic, Targets(), config
        )
    if kind == "decode":
        return simulate_decode_pool(
            setting, deployment.gpus_per_instance, deployment.instances, traffic, Targets(), config
        )
    return simulate_deployment(setting, deployment, traffic, Targets(), config)


@dataclass(frozen=True)
class Knee:
    """The most load (requests/s) a deployment holds under some targets, and every
    simulation the search ran (ordered by rate)."""

    max_rate_per_s: float
    evaluated: tuple[LoadResult, ...]
    reason: str = ""

    @property
    def at_max(self) -> LoadResult | None:
        """The simulation at the maximum load (None when no load meets the targets)."""
        hits = [r for r in self.evaluated if r.rate_per_s == self.max_rate_per_s]
        return hits[0] if hits else None

    def to_dataframe(self) -> pd.DataFrame:
        df = pd.concat([r.to_dataframe() for r in self.evaluated], ignore_index=True)
        df["knee"] = df["rate_per_s"] == self.max_rate_per_s
        return df


def find_knee(
    probe: Callable[[float], LoadResult], targets: Targets, start: float, progress=None
) -> Knee:
    """The largest rate whose simulation meets ``targets`` (module docstring); ``probe(rate)``
    simulates at a total rate. 0 when even ``start / 256`` fails."""
    seen: dict[float, LoadResult] = {}

    def ok(rate: float) -> bool:
        if rate not in seen:
            seen[rate] = probe(rate).with_targets(targets)
            if progress:
                r = seen[rate]
                progress(
                    f"{rate:.4g} req/s: p99 TTFT {r.ttft_s.p99:.3g} s, p99 TPOT {r.tpot_s.p99 * 1e3:.3g} ms"
                )
        return bool(seen[rate].meets_targets)  # judged against targets: never None

    lattice = [start * RATIO**i for i in range(-WALK_STEPS, WALK_STEPS + 1)]
    i = WALK_STEPS
    if ok(lattice[i]):
        while i + 1 < len(lattice) and ok(lattice[i + 1]):
            i += 1
        if i + 1 == len(lattice):
            return _knee(lattice[i], seen, "the targets still hold at the largest load searched")
        lo, hi = lattice[i], lattice[i + 1]
    else:
        while True:
            if i == 0 or _unloaded(seen, lattice[i : i + 3]):
                return _knee(0.0, seen, _why_not(seen[lattice[i]], targets))
            if ok(lattice[i - 1]):
                break
            i -= 1
        lo, hi = lattice[i - 1], lattice[i]
    for _ in range(REFINE_STEPS):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return _knee(lo, seen)


def _unloaded(seen: dict, rates) -> bool:
    """The p99s barely move over the last two halvings of the load: the engine is as good as
    unloaded, and lighter loads will not help (a test on the simulations alone, not on the
    targets, so that the search stays monotone in the targets)."""
    if len(rates) < 3 or any(r not in seen for r in rates):
        return False
    p99 = [np.array([seen[r].p99[m] for m in ("ttft", "tpot", "e2e")]) for r in rates]
    with np.errstate(invalid="ignore", divide="ignore"):
        moved = [np.abs(a / b - 1) for a, b in zip(p99, p99[1:])]
    return all(np.all(~(m > 0.01)) for m in moved)


def _knee(rate: float, seen: dict, reason: str = "") -> Knee:
    return Knee(rate, tuple(seen[r] for r in sorted(seen)), reason)


def _why_not(result: LoadResult, targets: Targets) -> str:
    """Why the lightest load searched still fails."""
    if result.rejected:
        return (
            f"{result.rejected} of {result.requests} requests never fit in one instance's KV cache"
        )
    over = [
        f"p99 {name.upper() if name != 'e2e' else 'end-to-end'} {result.p99[name]:.3g} s > {limit:g} s"
        for name, limit in targets.limits.items()
        if result.p99[name] > limit
    ]
    return f"even at {result.rate_per_s:.3g} req/s: " + ", ".join(over)


def probe_for(
    kind: Pool, setting: Setting, deployment: Deployment, traffic: Traffic, config: EngineConfig
):
    """``probe(rate)`` simulating ``kind`` ("deployment", "prefill", "decode") at a rate."""
    return lambda rate: run_at(kind, setting, deployment, traffic.at_rate(rate), config)


def knee_of(
    kind: Pool,
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig,
    progress=None,
) -> Knee:
    """``find_knee`` for a deployment or one pool, started at its steady-state estimate."""
    start = 0.7 * rate_estimate(setting, deployment, traffic, config, kind)
    start = float(f"{start:.3g}")  # a round start: the lattice is easy to read
    return find_knee(
        probe_for(kind, setting, deployment, traffic, config), targets, start, progress
    )


@dataclass(frozen=True)
class MaxLoad:
    """The reverse question: the most load a given deployment holds under the targets, with
    latency percentiles along a sweep of load (for the figure)."""

    deployment: Deployment
    targets: Targets
    knee: Knee
    curve: tuple[LoadResult, ...]
    traffic: str = ""  # the traffic, without its rate

    @property
    def max_rate_per_s(self) -> float:
        return self.knee.max_rate_per_s

    @property
    def at_max(self) -> LoadResult | None:
        return self.knee.at_max

    def to_dataframe(self) -> pd.DataFrame:
        """One row per simulated load, sorted by rate; ``knee`` marks the maximum."""
        results = {r.rate_per_s: r for r in (*self.knee.evaluated, *self.curve)}
        df = pd.concat([results[k].to_dataframe() for k in sorted(results)], ignore_index=True)
        df["knee"] = df["rate_per_s"] == self.max_rate_per_s
        return df


def max_load(
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig = DEFAULT_ENGINE,
    curve_points: int = 8,
    progress=None,
) -> MaxLoad:
    """The most requests/s ``deployment`` serves within ``targets`` (§E6), and the latency
    percentiles at ``curve_points`` loads from 15 % to 150 % of it."""
    knee = knee_of("deployment", setting, deployment, traffic, targets, config, progress)
    centre = knee.max_rate_per_s or (knee.evaluated[0].rate_per_s if knee.evaluated else 1.0)
    probe = probe_for("deployment", setting, deployment, traffic, config)
    rates = centre * np.geomspace(0.15, 1.5, curve_points) if curve_points else np.empty(0)
    curve = tuple(probe(float(r)).with_targets(targets) for r in rates)
    return MaxLoad(deployment, targets, knee, curve, traffic.describe(with_rate=False))
