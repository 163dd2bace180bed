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
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import settings as table
from ..errors import SpecError
from ..load.arrivals import Traffic
from ..load.backlog import UNTOLD_LIMIT
from ..load.deployment import (
    Deployment,
    Pool,
    instance_context,
    rate_estimate,
    rejects_alike,
    simulate_decode_pool,
    simulate_deployment,
    simulate_prefill_pool,
)
from ..load.engine import DEFAULT_ENGINE, EngineConfig
from ..load.results import LoadResult
from ..load.targets import Targets
from ..serving.setting import Setting
from .optimiser import GRID_MEMORY_SHARE, available_memory_bytes

RATIO = math.sqrt(2.0)
WALK_STEPS = 16  # up to 2^8 = 256 times the start either way
REFINE_STEPS = 5
#: Screening (``capacity``): requests of a short probe, its bisections, and how far above a
#: short search's answer the full one may lie (a short run fills less and sees fewer long
#: requests; its answer is also up to 2^(1/8) coarse). On the user guide's walk-through the
#: short answers were 0.96-1.38 times the full ones (``benchmarks/bench_capacity.py``); on
#: tests/test_capacity_screen.py's asks (probes of 50 requests screening searches of 200) a
#: full answer reaches 1.27 times the short one (one H200 at 12 req/s).
SCREEN_REQUESTS = 500
SCREEN_REFINE = 2
SCREEN_MARGIN = 1.3
#: The fewest requests a search simulates per probe: a p99 needs at least 100 requests, and a
#: shorter run never fills an engine, so any rate looks held (10 requests "held" 54,528 req/s
#: on one H100).
SEARCH_MIN_REQUESTS = 100
#: What is simulated: the whole deployment, or one pool of a disaggregated one alone.
KINDS = ("deployment", "prefill", "decode")


#: CPU seconds per simulated request, rounded up (``python benchmarks/bench_load.py`` and a run
#: of 1,000,000 requests: 23 s, 2.3e-5 s each, on the 2-core development machine).
SECONDS_PER_REQUEST = 3e-5
#: Peak bytes per simulated request, rounded up: the scheduler keeps its per-request state in
#: Python lists (``simulate``), 363 bytes a request (``simulate "Llama 3 8B" -H H100 --gpus 1
#: --rate 20 --requests 400000``: 271 MB peak, 126 MB with 1,000 requests).
BYTES_PER_REQUEST = 450.0
#: Simulations one load search takes (its lattice, refinement and curve; about 15 measured).
SIMULATIONS_PER_SEARCH = 20
#: Longest estimated simulation work run without ``yes`` (``settings.CONFIRM_SECONDS``).
LOAD_MAX_SECONDS = table.CONFIRM_SECONDS


def check_budget(traffic: Traffic, simulations: int, what: str, yes: bool = False) -> None:
    """Refuse, before it starts, load work estimated to take more than ``LOAD_MAX_SECONDS``
    (unless ``yes``) or half the memory available (always): the estimate and the largest
    request count that would do in the message."""
    n = traffic.most_simulated_requests
    seconds = n * simulations * SECONDS_PER_REQUEST
    memory = GRID_MEMORY_SHARE * available_memory_bytes()
    if (seconds <= LOAD_MAX_SECONDS or yes) and n * BYTES_PER_REQUEST <= memory:
        return
    fits = int(
        min(LOAD_MAX_SECONDS / (simulations * SECONDS_PER_REQUEST), memory / BYTES_PER_REQUEST)
    ) // max(n // max(traffic.simulated_requests, 1), 1)  # a warm start's requests come on top
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


#: Simulations kept (``run_at``, ``run_until``): searches under several targets, the
#: expected plan's search and its check at the full load, and rows of a measured file that ask
#: the same question share them.
RUNS_KEPT = 256
_RUNS: OrderedDict[tuple, LoadResult] = OrderedDict()


def clear_runs() -> None:
    """Forget the simulations kept (tests count simulations from a clean start)."""
    _RUNS.clear()


def _kept(key: tuple) -> LoadResult | None:
    hit = _RUNS.get(key)
    if hit is not None:
        _RUNS.move_to_end(key)
    return hit


def _keep(key: tuple, result: LoadResult) -> LoadResult:
    _RUNS[key] = result
    _RUNS.move_to_end(key)
    while len(_RUNS) > RUNS_KEPT:
        _RUNS.popitem(last=False)
    return result


def run_at(
    kind: Pool, setting: Setting, deployment: Deployment, traffic: Traffic, config: EngineConfig
) -> LoadResult:
    """One whole simulation without targets (kept: searches under several targets share it)."""
    key = (kind, setting, deployment, traffic, config, instance_context())
    hit = _kept(key)
    if hit is not None and hit.stopped_for is None:
        return hit
    if kind == "prefill":
        result = simulate_prefill_pool(
            setting, deployment.gpus_per_instance, deployment.instances, traffic, Targets(), config
        )
    elif kind == "decode":
        result = simulate_decode_pool(
            setting, deployment.gpus_per_instance, deployment.instances, traffic, Targets(), config
        )
    else:
        result = simulate_deployment(setting, deployment, traffic, Targets(), config)
    return _keep(key, result)


def run_until(
    kind: Pool,
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    config: EngineConfig,
    targets: Targets,
) -> LoadResult:
    """``run_at`` for a verdict under ``targets``: a deployment's run ends as soon as it
    certainly misses them (``simulate_deployment``'s ``stop``: a p99 certainly above its
    limit). The verdict is the whole run's; a stopped run's other figures are not (its
    ``stopped_for``), and it is kept for the same question only."""
    key = (kind, setting, deployment, traffic, config, instance_context())
    hit = _kept(key)
    if hit is not None and hit.stopped_for in (None, targets):
        return hit
    if kind != "deployment" or targets.empty:
        return run_at(kind, setting, deployment, traffic, config)
    result = simulate_deployment(setting, deployment, traffic, Targets(), config, stop=targets)
    return _keep(key, result)


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
        df = pd.DataFrame([r.row() for r in self.evaluated])  # one frame: not fragmented
        return df.assign(knee=df["rate_per_s"] == self.max_rate_per_s)


def find_knee(
    probe: Callable[[float], LoadResult],
    targets: Targets,
    start: float,
    progress=None,
    near: float | None = None,
    refine: int = REFINE_STEPS,
    early: Callable[[float], LoadResult] | None = None,
    hopeless: Callable[[LoadResult], bool] | None = None,
) -> Knee:
    """The largest rate whose simulation meets ``targets`` (module docstring); ``probe(rate)``
    simulates at a total rate. 0 when even ``start / 256`` fails. ``near`` (a guess of the
    answer) begins the walk at the lattice point at or below it instead of at ``start``: the
    lattice is the same, so where the verdicts are monotone in the rate the answer is too, in
    fewer simulations. ``refine`` bisections of the last interval (5: about 1 % in rate).
    ``early(rate)``: the same simulation, stopped once it certainly misses ``targets``
    (``run_until``), used once a rate has held: from then on only verdicts are read (the walk
    down, which reads the p99s of failing runs, comes before any rate holds).
    ``hopeless(result)``: a failing run says every load fails alike (``rejects_alike``: the
    same requests never fit at any load), so the walk down ends there with the reason it
    would have ended with."""
    seen: dict[float, LoadResult] = {}
    held = [False]

    def ok(rate: float) -> bool:
        if rate not in seen:
            run = early if early is not None and held[0] else probe
            seen[rate] = run(rate).with_targets(targets)
            held[0] = held[0] or search_holds(seen[rate])
            if progress:
                r = seen[rate]
                progress(
                    f"{rate:.4g} req/s: p99 TTFT {r.ttft_s.p99:.3g} s, p99 TPOT {r.tpot_s.p99 * 1e3:.3g} ms"
                )
        return search_holds(seen[rate])  # judged against targets: never None

    lattice = _lattice(start)
    i = _walk_start(lattice, near)
    if ok(lattice[i]):
        while i + 1 < len(lattice) and ok(lattice[i + 1]):
            i += 1
        if i + 1 == len(lattice):
            return _knee(lattice[i], seen, "the targets still hold at the largest load searched")
        lo, hi = lattice[i], lattice[i + 1]
    else:
        while True:
            # (only from the start down: above it a saturated engine's p99s barely move too)
            if (
                i == 0
                or (i <= WALK_STEPS and _unloaded(seen, lattice[i : i + 3]))
                or (hopeless is not None and hopeless(seen[lattice[i]]))
            ):
                return _knee(0.0, seen, _why_not(seen[lattice[i]], targets))
            if ok(lattice[i - 1]):
                break
            i -= 1
        lo, hi = lattice[i - 1], lattice[i]
    for _ in range(refine):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return _knee(lo, seen)


def _lattice(start: float) -> list[float]:
    return [start * RATIO**i for i in range(-WALK_STEPS, WALK_STEPS + 1)]


def _walk_start(lattice: list[float], near: float | None) -> int:
    """The lattice point ``find_knee``'s walk begins at: the last at or below ``near``
    (``start`` without one)."""
    if near is None or not near > 0:
        return WALK_STEPS
    below = [j for j, rate in enumerate(lattice) if rate <= near * (1 + 1e-9)]
    return below[-1] if below else 0


def grid_rate(start: float, index: int) -> float:
    """The rate ``find_knee`` answers when its answer is point ``index`` of the refined grid
    (``2^REFINE_STEPS`` points per lattice interval, from ``start / 256``): the same float,
    bisected the same way."""
    lattice = _lattice(start)
    j, m = divmod(index, 2**REFINE_STEPS)
    if j + 1 >= len(lattice):
        return lattice[-1] * 2.0 ** (index - (len(lattice) - 1) * 2**REFINE_STEPS)
    lo, hi = lattice[j], lattice[j + 1]
    for bit in reversed(range(REFINE_STEPS)):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if m >> bit & 1 else (lo, mid)
    return lo


def grid_index(start: float, rate: float) -> int:
    """The refined grid's last point at or below ``rate`` (0 below the lattice)."""
    lattice = _lattice(start)
    j = max([i for i, r in enumerate(lattice[:-1]) if r <= rate * (1 + 1e-12)], default=0)
    lo, hi, m = lattice[j], lattice[j + 1], 0
    for _ in range(REFINE_STEPS):
        mid = math.sqrt(lo * hi)
        up = mid <= rate * (1 + 1e-12)
        lo, hi, m = (mid, hi, 2 * m + 1) if up else (lo, mid, 2 * m)
    return j * 2**REFINE_STEPS + m


def grid_nearest(start: float, rate: float) -> int:
    """The refined grid's point nearest ``rate`` in ratio (``grid_index`` or the point above
    it, whichever ``rate`` is geometrically nearer)."""
    index = grid_index(start, rate)
    below, above = grid_rate(start, index), grid_rate(start, index + 1)
    return index + 1 if rate * rate > below * above else index


def grid_at_least(start: float, rate: float) -> int | None:
    """The refined grid's first point at or above ``rate`` (``grid_rate``), None outside the
    lattice. A search's answer is a point of this grid (or 0), so where the verdicts are
    monotone in the rate it is at least ``rate`` exactly when a run at that point holds: a
    test there answers the same question as one at ``rate``, and its run is one the search
    may reuse."""
    lattice = _lattice(start)
    if not lattice[0] <= rate <= lattice[-1]:
        return None
    index = grid_index(start, rate)
    while grid_rate(start, index) < rate:
        index += 1
    while index > 0 and grid_rate(start, index - 1) >= rate:
        index -= 1
    return index


def grid_at_most(start: float, rate: float) -> int | None:
    """The refined grid's last point at or below ``rate``, None outside the lattice."""
    above = grid_at_least(start, rate)
    if above is None:
        return None
    return above if grid_rate(start, above) == rate else above - 1


def find_knee_from(
    probe: Callable[[float], LoadResult],
    targets: Targets,
    start: float,
    guess: float,
    early: Callable[[float], LoadResult] | None = None,
    held: float | None = None,
    refine: bool = True,
) -> Knee:
    """``find_knee``'s answer found from a good ``guess`` of it: a galloping search on the
    refined grid from the guess for the point that meets the targets next to one that does
    not. Where the verdicts are monotone in the rate that point is ``find_knee``'s answer
    (its walk up from ``start`` holds up to it and fails just above; every bisection agrees),
    in about 2 + 2·log2(grid points the guess is off) simulations instead of 7 or more. An
    answer more than a lattice interval below ``start``, or below ``start`` where
    ``find_knee``'s walk would begin above it, or at the lattice's top is left to
    ``find_knee`` (begun near it), whose walk down and top differ: a walk down from at most
    ``start`` stops at the first lattice point that holds, as this search does (its test of
    an unloaded engine needs two points above the one it stands on, which such a walk never
    runs, and a load that holds is never hopeless). ``early``: ``find_knee``'s; only
    verdicts are read here, so every probe may stop early. ``held``: a rate a simulation of
    the same size held at (the answer is at least the grid point at or below it,
    unsimulated: a walk down from the guess stops there, and a run that missed its targets
    by far (``_far_above``) bisects down to it at once; a guess no higher than the point
    above it starts the walk two points above it). ``refine``: False stops once a point
    that holds and a point above it that fails are known (a bracket; ``find_knee``'s walk
    alone where the answer is left to it), answering the point that holds: a later call
    bisects it with the same runs."""
    seen: dict[float, LoadResult] = {}
    run = early or probe

    def ok(index: int) -> bool:
        rate = grid_rate(start, index)
        if rate not in seen:
            seen[rate] = run(rate).with_targets(targets)
        return search_holds(seen[rate])

    first, top = WALK_STEPS * 2**REFINE_STEPS, 2 * WALK_STEPS * 2**REFINE_STEPS
    # the lowest point searched here: a lattice interval below ``start`` where ``find_knee``
    # would walk from at most ``start`` (the same answer, above), else ``start``
    bottom = first - 2**REFINE_STEPS if _walk_start(_lattice(start), guess) <= WALK_STEPS else first
    lo, hi, step = None, None, 1
    at = min(max(grid_index(start, guess), bottom), top - 1)
    known = None  # a grid point that holds, unsimulated (``held``)
    if held is not None:
        floor = grid_at_most(start, held)
        if floor is not None and first <= floor < top - 2:
            known = floor
            if at <= floor + 1:
                # the walk up from it begins two points above (the one just above lies
                # within 1.1 % of a rate that held: it would hold but for a knee in between)
                lo, at, step = floor, floor + 2, 2
    while lo is None or hi is None:
        if at < bottom or at >= top:
            break
        if known is not None and lo is None and at <= known:
            lo = known  # the walk down reached the point known to hold
            break
        if ok(at):
            lo = at
            if hi is None:
                at, step = at + step, 2 * step
        else:
            hi = at
            if lo is None and known is not None and _far_above(seen[grid_rate(start, at)]):
                lo = known  # far above the answer: bisect down to the point known to hold
                break
            if lo is None:
                at, step = at - step, 2 * step
    steps = REFINE_STEPS if refine else 0
    if lo is None or hi is None:
        return find_knee(probe, targets, start, near=guess, early=early, refine=steps)
    while refine and hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    if grid_rate(start, lo) not in seen and not ok(lo):  # ``held``'s point: its own run
        return find_knee(probe, targets, start, near=guess, early=early, refine=steps)
    return _knee(grid_rate(start, lo), seen)


def _far_above(result: LoadResult) -> bool:
    """A run stopped before it had served half its requests (``run_until``): it missed its
    targets by far, so the answer lies well below it (a run near the answer stops late, or
    not at all)."""
    lat = getattr(result, "latencies", None)
    if getattr(result, "stopped_for", None) is None or lat is None or not len(lat.ttft_s):
        return False
    return float(np.mean(np.isfinite(lat.ttft_s))) < 0.5


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
    if result.undecided and targets.met(result.p99):
        return (
            f"a run of {result.requests} requests cannot tell whether even "
            f"{result.rate_per_s:.3g} req/s keeps up (an overload of more than "
            f"{UNTOLD_LIMIT:g} times what it serves would read as kept up): raise requests"
        )
    over = [
        f"p99 {name.upper() if name != 'e2e' else 'end-to-end'} {result.p99[name]:.3g} s > {limit:g} s"
        for name, limit in targets.limits.items()
        if result.p99[name] > limit
    ]
    return f"even at {result.rate_per_s:.3g} req/s: " + ", ".join(over)


def probe_for(
    kind: Pool,
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    config: EngineConfig,
    until: Targets | None = None,
):
    """``probe(rate)`` simulating ``kind`` ("deployment", "prefill", "decode") at a rate (with
    ``until``: stopped once it certainly misses those targets, ``run_until``). A trace's runs
    are read without ``search_holds``'s test of what they can tell: every row of it is simulated,
    and no more requests can be (a trace of bursts reads as undecided at any rate)."""
    if until is not None:
        probe = lambda rate: run_until(  # noqa: E731
            kind, setting, deployment, traffic.at_rate(rate), config, until
        )
    else:
        probe = lambda rate: run_at(  # noqa: E731
            kind, setting, deployment, traffic.at_rate(rate), config
        )
    return without_undecided(probe) if traffic.process == "trace" else probe


def search_holds(result: LoadResult) -> bool:
    """A load search takes ``result``'s rate as held: it meets its targets, and the run can
    tell that it keeps up (not ``LoadResult.undecided``, §E4)."""
    return bool(result.meets_targets) and not result.undecided


def without_undecided(probe: Callable[[float], LoadResult]) -> Callable[[float], LoadResult]:
    """``probe`` read by its p99s and backlog alone (``search_holds`` without its test of what the
    run can tell): a screen's short probes, since the full search that follows decides, and a
    trace's runs (``probe_for``)."""
    return lambda rate: replace(probe(rate), undecided=False)


def knee_of(
    kind: Pool,
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig,
    progress=None,
    near: float | None = None,
    refine: int = REFINE_STEPS,
    stop_early: bool = True,
) -> Knee:
    """``find_knee`` for a deployment or one pool on the lattice started at its steady-state
    estimate (``near`` and ``refine``: ``find_knee``). With ``stop_early`` (unless ``progress``
    reports each run) a failing run above a rate that held stops once its verdict is certain:
    the answer is the same, but such runs in ``evaluated`` are partial (``stopped_for``)."""
    start = lattice_start(kind, setting, deployment, traffic, config)
    probe = probe_for(kind, setting, deployment, traffic, config)
    early = None
    if stop_early and progress is None:
        early = probe_for(kind, setting, deployment, traffic, config, targets)
    hopeless = hopeless_for(kind, setting, deployment) if stop_early else None
    return find_knee(probe, targets, start, progress, near, refine, early, hopeless)


def hopeless_for(kind: Pool, setting: Setting, deployment: Deployment):
    """``find_knee``'s ``hopeless`` for one instance of a deployment (None for pools and
    groups): a run that rejected requests, where every layout the instance may take holds the
    same KV cache (``rejects_alike``), rejects the same requests at every load."""
    if kind != "deployment" or deployment.disaggregated or deployment.instances != 1:
        return None
    if not rejects_alike(setting, deployment.gpus_per_instance):
        return None
    return lambda result: result.rejected > 0


@functools.lru_cache(maxsize=256)
def lattice_start(
    kind: Pool, setting: Setting, deployment: Deployment, traffic: Traffic, config: EngineConfig
) -> float:
    """Where a load search's lattice starts: 0.7 times the steady-state estimate, rounded."""
    start = 0.7 * rate_estimate(setting, deployment, traffic, config, kind)
    return float(f"{start:.3g}")  # a round start: the lattice is easy to read


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
        df = pd.DataFrame([results[k].row() for k in sorted(results)])  # not fragmented
        return df.assign(knee=df["rate_per_s"] == self.max_rate_per_s)


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
    # every run of the search is shown (the figure, the table): whole runs only
    knee = knee_of(
        "deployment", setting, deployment, traffic, targets, config, progress, stop_early=False
    )
    centre = knee.max_rate_per_s or (knee.evaluated[0].rate_per_s if knee.evaluated else 1.0)
    probe = probe_for("deployment", setting, deployment, traffic, config)
    rates = centre * np.geomspace(0.15, 1.5, curve_points) if curve_points else np.empty(0)
    curve = tuple(probe(float(r)).with_targets(targets) for r in rates)
    shown = (*knee.evaluated, *curve)
    if not knee.max_rate_per_s and shown:  # why not: at the lightest load the table shows
        lightest = min(shown, key=lambda r: r.rate_per_s)
        if not lightest.meets_targets:
            knee = replace(knee, reason=_why_not(lightest, targets))
    return MaxLoad(deployment, targets, knee, curve, traffic.describe(with_rate=False))
