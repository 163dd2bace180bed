"""A deployment under load: instances of one size behind a load balancer (random by default,
§E10), optionally with a separate prefill pool, on the same GPUs or others (docs/model.md §E3,
§E5), simulated and summarised."""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import InfeasibleError, SpecError, plural
from ..model.mixed_step import EngineLayout
from ..serving.derived_intervals import nested_ends
from ..serving.disaggregation import kv_transfer_s
from ..serving.intervals import interval_columns, interval_keys, load_intervals
from ..serving.setting import Setting
from .arrivals import Arrivals, Traffic
from .engine import (
    DEFAULT_ENGINE,
    EngineConfig,
    Instance,
    LayoutSearch,
    budget_sized,
    layout_search,
)
from .layout_choice import SATURATED, OfferedLoad, layout_capacity
from .records import RunRecord
from .results import LoadResult, Measured, RequestLatencies, RunSetup, assemble, measured_of
from .routing import GROUP
from .run import Handoff, Run, instance_in, prefill_handoff, serve, simulate_run
from .targets import NO_TARGETS, Targets

#: What one load simulation serves (docs/model.md §E3-§E5): a whole deployment, or its prefill
#: or its decode pool alone.
Pool = Literal["deployment", "prefill", "decode"]


@dataclass(frozen=True)
class Deployment:
    """What is bought: ``instances`` engine instances of ``gpus_per_instance`` GPUs each, and
    for disaggregated serving a prefill pool of ``prefill_instances`` x
    ``prefill_gpus_per_instance`` GPUs that hands each request's KV cache to them."""

    gpus_per_instance: int
    instances: int = 1
    prefill_gpus_per_instance: int = 0
    prefill_instances: int = 0
    #: The prefill pool's setting when its GPUs differ from the decode pool's (None: the same).
    prefill_setting: Setting | None = None

    def __post_init__(self) -> None:
        for name in ("gpus_per_instance", "instances"):
            _whole(getattr(self, name), name, 1)
        _whole(self.prefill_gpus_per_instance, "prefill_gpus_per_instance", 0)
        _whole(self.prefill_instances, "prefill_instances", 0)
        if bool(self.prefill_gpus_per_instance) != bool(self.prefill_instances):
            raise SpecError(
                "argument",
                "prefill_instances",
                "a prefill pool needs both its size and its count",
                "",
            )

    @property
    def disaggregated(self) -> bool:
        return self.prefill_instances > 0

    @property
    def gpus(self) -> int:
        return (
            self.gpus_per_instance * self.instances
            + self.prefill_gpus_per_instance * self.prefill_instances
        )

    def describe(self) -> str:
        main = (
            f"{self.instances:,} x {self.gpus_per_instance} {plural(self.gpus_per_instance, 'GPU')}"
        )
        if not self.disaggregated:
            return main
        pre = f"{self.prefill_instances:,} x {self.prefill_gpus_per_instance} {plural(self.prefill_gpus_per_instance, 'GPU')}"
        if self.prefill_setting is not None:
            pre += f" {self.prefill_setting.gpu.name}"
        return f"prefill {pre} + decode {main}"


def _whole(value, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SpecError("argument", name, f"is {value!r}", f"expected a whole number >= {minimum}")


@functools.lru_cache(maxsize=64)
def mean_lengths(traffic: Traffic) -> tuple[float, float]:
    """The mean prompt and output tokens of the traffic's requests (``Traffic.stream``), drawn
    once for a run's several readers: a run of sessions takes longer to draw than to serve."""
    s = traffic.stream()
    return float(np.mean(s.prompt_tokens)), float(np.mean(s.output_tokens))


def reference_context(traffic: Traffic) -> float:
    """Mean prompt plus half the mean output of the traffic: the context the layout is chosen
    at (rounded, so that nearby traffics share instances)."""
    prompt, output = mean_lengths(traffic)
    mean = prompt + output / 2.0
    return float(2.0 ** (round(np.log2(max(mean, 1.0)) * 4) / 4))


def offered_load(traffic: Traffic, instances: int, prompts: bool = True, outputs: bool = True):
    """What one of ``instances`` instances is offered (§E6); a prefill pool sees no outputs
    beyond the first token, a decode pool no prompts."""
    prompt, output = mean_lengths(traffic)
    return OfferedLoad(
        traffic.offered_rate_per_s / instances,
        prompt if prompts else 0.0,
        output if outputs else 1.0,
    )


@functools.lru_cache(maxsize=32)
def _search(setting: Setting, gpus: int) -> LayoutSearch:
    return layout_search(setting, gpus)


@functools.lru_cache(maxsize=128)
def _instance_with(
    setting: Setting, gpus: int, config: EngineConfig, context: float, layout: EngineLayout
) -> Instance:
    return instance_in(setting, layout, config, context, search=_search(setting, gpus))


def rejects_alike(setting: Setting, gpus: int) -> bool:
    """Whether every layout an instance of ``gpus`` GPUs may take holds the same KV cache: a
    request that never fits in one never fits in any, whatever load chose the layout (the
    requests' lengths are drawn the same at every load). False where the weights do not fit."""
    try:
        search = _search(setting, gpus)
    except InfeasibleError:
        return False
    held = {layout_capacity(search.model, search.capacity, lay) for lay in search.options}
    return len(held) == 1


def instance_for(
    setting: Setting,
    gpus: int,
    config: EngineConfig,
    context: float,
    load: OfferedLoad = SATURATED,
) -> Instance:
    """The engine instance of a setting on ``gpus`` GPUs, in the layout that runs ``load``
    fastest (§E6; instances are cached: searches reuse them), its memory sized at the step
    budget ``config`` states (``budget_sized``)."""
    setting = budget_sized(setting, config)
    fixed = dict(_FIXED.get()).get(gpus)
    layout = fixed or _search(setting, gpus).choose(config, context, load)
    inst = _instance_with(setting, gpus, config, context, layout)
    factor = _SLOWER.get()
    return inst if factor == 1.0 else inst.slowed(factor)


#: The counts of a simulated schedule that carry an interval (``counted_ends``), and the
#: shares a run has only on some paths (None otherwise: prompt caching, speculation), which
#: depend on the schedule as well (what the cache still holds, how full the batches are).
COUNTS = ("preemptions", "rejected", "goodput_fraction")
SCHEDULE_SHARES = (
    "prefix_hit_rate",
    "host_hit_rate",
    "disk_hit_rate",
    "speculative_step_fraction",
)
#: Every engine step of the instances ``instance_for`` builds takes this many times as long
#: (``slower_engines``; 1: the engine as modelled).
_SLOWER: ContextVar[float] = ContextVar("slower", default=1.0)
#: Layouts given for instances of so many GPUs (``fixed_layout``), instead of chosen for the load.
_FIXED: ContextVar[tuple[tuple[int, EngineLayout], ...]] = ContextVar("fixed_layouts", default=())


@contextmanager
def fixed_layout(gpus: int, layout: EngineLayout | None):
    """Within it, every instance of ``gpus`` GPUs ``instance_for`` builds takes ``layout`` (one
    of ``instance_layouts``) instead of the one that runs its load fastest (§E6); None: chosen
    as usual."""
    token = _FIXED.set(() if layout is None else ((int(gpus), layout),))
    try:
        yield
    finally:
        _FIXED.reset(token)


def instance_layouts(setting: Setting, gpus: int) -> list[EngineLayout]:
    """The whole layouts the setting's engine runs on an instance of ``gpus`` GPUs (§F11)."""
    return list(_search(setting, gpus).options)


@contextmanager
def slower_engines(factor: float):
    """Within it, every instance ``instance_for`` builds runs each step ``factor`` times as
    long (``Instance.slowed``; its layout chosen as the engine's own): the engine at an end of
    its step time's interval, every path of ``simulate_deployment`` alike."""
    token = _SLOWER.set(float(factor))
    try:
        yield
    finally:
        _SLOWER.reset(token)


def instance_context() -> tuple:
    """What ``fixed_layout`` and ``slower_engines`` set for the instances built now: a part of
    any key of kept simulations, so a run made within one is not taken for a run outside it."""
    return _FIXED.get(), _SLOWER.get()


def _step_factors(result: LoadResult) -> tuple[float, ...] | None:
    """The engine step's factor at each interval end (low80, high80, low90, high90): the run's
    mean time per output token there over its value; None where ``counted_ends`` gives no
    ends (an ideal bound, a stopped run, no time per output token)."""
    ends, tpot = load_intervals(result), result.tpot_s.mean
    have = interval_columns("tpot_mean_s")
    if result.stopped_for is not None or not all(c in ends for c in have) or not tpot > 0:
        return None
    return tuple(ends[c] / tpot for c in have)


def _runs_at(factors, setting, deployment, traffic, targets, config, result) -> dict[str, float]:
    """The count ends of ``counted_ends`` from its step factors (``_step_factors``): the four
    runs."""
    out = {}
    for key, factor in zip(interval_keys(), factors):
        with slower_engines(factor):
            run = simulate_deployment(setting, deployment, traffic, targets, config)
        for name in _counted(result):
            out[f"{name}_{key}"] = float(getattr(run, name))
    return _ordered_counts(out, result)


def counted_ends(
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    targets: Targets,
    config: EngineConfig,
    result: LoadResult,
) -> CountEnds | None:
    """The interval columns of a run's simulated counts - preemptions, rejected requests, the
    share of requests within the targets, and where the run has them the prompt cache's hit
    rate and the share of speculative steps (docs/model.md §F12) - under an engine profile, as
    a ``LoadResult``'s ``count_ends``; None for an ideal bound or a stopped run.

    The engine's step times are uncertain by the band of its time per output token
    (``load_intervals``: the run's mean TPOT at each interval end over its value, ``k``): each
    end is the same deployment and traffic (the same draws) simulated with every engine step
    ``k`` times as long (``slower_engines``), and its counts are read as they come; a link's
    transfer between pools is not an engine step and keeps its time. The factors are taken
    now (the interval table as it is), the runs when first read (``CountEnds``)."""
    factors = _step_factors(result)
    if factors is None:
        return None
    args = (factors, setting, deployment, traffic, targets, config, result)
    return CountEnds(args, contextvars.copy_context())


class CountEnds(Sequence[tuple[str, float]]):
    """The (column, value) pairs of ``counted_ends``, its four runs made when first read:
    a caller that reads only a run's own figures does not pay for them (most of a simulation's
    work). Their step factors are taken when it is made, and the runs are made in a copy of
    the context they were asked in (a fixed layout, ``fixed_layout``), once, whichever thread
    reads first. Equality, hashing and pickling (as a tuple) read the pairs; ``repr`` does not
    make the runs; ``tuple(ends)`` gives what ``json`` takes."""

    __slots__ = ("_asked", "_pairs", "_lock")

    def __init__(self, args: tuple, context: contextvars.Context) -> None:
        self._asked: tuple | None = (args, context)
        self._pairs: tuple[tuple[str, float], ...] = ()
        self._lock = threading.Lock()

    @property
    def pairs(self) -> tuple[tuple[str, float], ...]:
        """The pairs, the runs made on the first read."""
        with self._lock:
            if self._asked is not None:
                args, context = self._asked
                self._pairs = tuple(context.copy().run(_runs_at, *args).items())
                self._asked = None
        return self._pairs

    def __getitem__(self, index):
        return self.pairs[index]

    def __len__(self) -> int:
        return len(self.pairs)

    def __bool__(self) -> bool:
        return True  # made only where the runs give columns (``counted_ends``)

    def __eq__(self, other) -> bool:
        return self.pairs == (other.pairs if isinstance(other, CountEnds) else other)

    def __hash__(self) -> int:
        return hash(self.pairs)

    def __repr__(self) -> str:
        made = self._asked is None
        return repr(self._pairs) if made else "CountEnds(<four runs, made when first read>)"

    def __reduce__(self):
        return tuple, (self.pairs,)


def _counted(result: LoadResult) -> list[str]:
    """The schedule's figures ``counted_ends`` gives ends: ``COUNTS``, and those of
    ``SCHEDULE_SHARES`` the run has."""
    return [*COUNTS, *(n for n in SCHEDULE_SHARES if getattr(result, n, None) is not None)]


def _ordered_counts(out: dict, result: LoadResult) -> dict[str, float]:
    """Each count's interval from its runs at the step time's ends (``out``, by end) and its
    own value (``nested_ends``: a slower engine may preempt more or fewer)."""
    ordered: dict[str, float] = {}
    for name in _counted(result):
        columns = interval_columns(name)
        if all(c in out for c in columns):
            ends = nested_ends([out[c] for c in columns], float(getattr(result, name)))
            ordered.update(zip(columns, ends))
    return ordered


def simulate_deployment(
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    targets: Targets = NO_TARGETS,
    config: EngineConfig = DEFAULT_ENGINE,
    progress: Callable[[int, int], None] | None = None,
    stop: Targets | None = None,
) -> LoadResult:
    """Serve the traffic on the deployment: one instance is simulated with its share of the
    requests (docs/model.md §E3) and the deployment's rates are that share times the instances.
    ``stop``: end the run once it certainly misses these targets (``simulate``; the result's
    ``stopped_for`` says so), where one instance is simulated alone with open-loop arrivals."""
    if traffic.clients is not None:
        return _closed_loop(setting, deployment, traffic, targets, config, progress)
    if deployment.disaggregated:
        return simulate_disaggregated(setting, deployment, traffic, targets, config, progress)
    K = deployment.instances
    inst = instance_for(
        setting,
        deployment.gpus_per_instance,
        config,
        reference_context(traffic),
        offered_load(traffic, K),
    )
    if K > 1 and (not _alone(config.router, traffic) or traffic.sessions):
        g = min(K, GROUP)  # the instances simulated together (§E10)
        return serve(inst, Run(traffic, K, g, config.router), targets, progress).result
    limits = stop.limits if stop is not None and not stop.empty else None
    served = serve(inst, Run(traffic, K, router=config.router, stop=limits), targets, progress)
    if not served.record.stopped:
        return served.result
    return dataclasses.replace(
        served.result, stopped_for=stop, meets_targets=None if targets.empty else False
    )


def _alone(router: str, traffic: Traffic) -> bool:
    """Whether one instance simulated alone stands for every instance behind ``router``: a
    random share, or a round robin's every ``K``-th request where no prompts share prefixes or
    sessions (``Traffic.stream``'s ``in_turn``, §E10)."""
    return router == "random" or (router == "round_robin" and not traffic.shares)


def _closed_loop(setting, deployment, traffic, targets, config, progress) -> LoadResult:
    """A closed loop (``traffic.clients``): the clients spread evenly over the instances, each
    instance simulated with its share sending its requests in order, each client its next one
    when its last one finishes (docs/model.md §E3); the rate is the one the run reaches."""
    K, C = deployment.instances, traffic.clients
    refuse = None
    if deployment.disaggregated:
        refuse = "a closed loop is simulated on co-located instances", "drop the prefill pool"
    elif C % K:
        refuse = f"{C} clients do not spread evenly over {K} instances", "give a multiple"
    elif K > 1 and (config.router != "random" or traffic.sessions):
        refuse = "a closed loop is simulated per instance (random router, no sessions)", ""
    if refuse:
        raise SpecError("argument", "concurrency", *refuse)
    inst = instance_for(
        setting,
        deployment.gpus_per_instance,
        config,
        reference_context(traffic),
        offered_load(traffic, K),  # no rate: the layout fastest when saturated
    )
    run = Run(traffic, K, clients=C // K)
    result = serve(inst, run, targets, progress, rate_per_s=0.0).result  # the rate set below
    return dataclasses.replace(
        result,
        rate_per_s=result.throughput_requests_per_s,
        notes=(
            *result.notes,
            f"closed loop: {C // K} clients per instance; the rate is the one they reach, and "
            + (
                "the layout the one given"
                if dict(_FIXED.get()).get(deployment.gpus_per_instance)
                else "the layout is the one fastest when saturated"
            ),
        ),
    )


def simulate_disaggregated(
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    targets: Targets = NO_TARGETS,
    config: EngineConfig = DEFAULT_ENGINE,
    progress: Callable[[int, int], None] | None = None,
) -> LoadResult:
    """Prefill pool and decode pool (docs/model.md §E5): a prefill instance serves its share of
    the prompts and emits the first token; the KV cache then crosses the network to a decode
    instance, whose arrivals are each request's arrival plus its prefill-pool delay and the
    transfer. The two pools' delays are taken as independent."""
    d = deployment
    if traffic.sessions:
        raise SpecError(
            "argument",
            "session_turns",
            "multi-turn sessions are simulated on co-located instances only",
            "drop the prefill pool, or give sessions of one turn",
        )
    ctx = reference_context(traffic)
    pre_setting = d.prefill_setting or setting
    pre_load = offered_load(traffic, d.prefill_instances, outputs=False)
    pre = instance_for(pre_setting, d.prefill_gpus_per_instance, config, ctx, pre_load)
    dec_load = offered_load(traffic, d.instances, prompts=False)
    dec = instance_for(setting, d.gpus_per_instance, config, ctx, dec_load)
    hand = prefill_handoff(
        pre,
        pre_setting,
        setting,
        dec.gpus,
        traffic,
        d.prefill_instances,
        d.instances,
        config.router,
    )
    handed = Run(traffic, d.instances, prefilled=True, requests=hand.handed)
    dec_run = simulate_run(dec, handed, progress)
    input_share, pools = _prefill_cost(setting, d)
    setup = RunSetup(
        dec,
        targets,
        traffic=traffic.describe(),
        rate_per_s=traffic.offered_rate_per_s,
        scale=d.instances,
        gpus=(d.gpus_per_instance, d.instances, d.prefill_gpus_per_instance, d.prefill_instances),
        layout=f"prefill [{pre.described()}] + decode [{dec.described()}]",
        seed=traffic.seed,
        notes=(*traffic.input_notes, *_disaggregated_notes(d, config)),
        router=config.router if d.prefill_instances > 1 else "random",
        pools=pools,
    )
    return assemble(setup, _handed_measured(d, hand, pre, dec, dec_run, input_share))


def _prefill_cost(setting: Setting, d: Deployment) -> tuple[float, tuple | None]:
    """The prefill pool's share of the deployment's cost (by GPUs, or by price where its GPUs
    differ) and the pools as (setting, GPUs) pairs where they differ (None: one GPU)."""
    pre_setting = d.prefill_setting or setting
    pre_gpus = d.prefill_gpus_per_instance * d.prefill_instances
    dec_gpus = d.gpus_per_instance * d.instances
    if d.prefill_setting is None:
        return pre_gpus / d.gpus, None
    pre_cost = pre_gpus * pre_setting.gpu.price_usd_per_hour
    share = pre_cost / (pre_cost + dec_gpus * setting.gpu.price_usd_per_hour)
    return share, ((pre_setting, pre_gpus), (setting, dec_gpus))


def _disaggregated_notes(d: Deployment, config: EngineConfig) -> tuple[str, ...]:
    """What a disaggregated run's result says of how its pools were simulated."""
    notes = ("prefill and decode pools: their delays are taken as independent",)
    if config.router != "random" and d.prefill_instances > 1:
        notes += (
            f"the {config.router} router sends the prompts among the prefill instances; "
            "each decode instance is simulated with its random share",
        )
    return notes


def _handed_measured(
    d: Deployment, hand: Handoff, pre: Instance, dec: Instance, dec_run: RunRecord, share: float
) -> Measured:
    """What a disaggregated deployment measured, request by request as they arrived: TTFT
    from the prefill pool, the rest from the decode instance's run; both pools' counts, and
    their FLOP over their peak. ``share``: the prefill pool's share of the cost, which the
    input tokens are charged."""
    pre_run, s, ttft, order = hand.prefill_run, hand.stream, hand.ttft_s, hand.order
    finish = np.full(len(s), np.nan)
    finish[order] = dec_run.finish_s
    admitted = np.full(len(s), np.nan)
    admitted[order] = dec_run.admitted_s
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = (finish - (s.arrival_s + ttft)) / (s.output_tokens - 1)
    lat = RequestLatencies(ttft, np.where(s.output_tokens > 1, tpot, np.nan), finish - s.arrival_s)
    window = float(np.nanmax(finish)) if np.isfinite(finish).any() else 1e-12
    peak = d.prefill_instances * pre.table.peak_flop_per_s + d.instances * dec.table.peak_flop_per_s
    flop = d.prefill_instances * pre_run.flop + d.instances * dec_run.flop
    cached, tiers = None, None
    if pre_run.cached_tokens is not None:  # the prefill pool's cache, request by request
        each = np.arange(len(s)) % len(pre_run.cached_tokens)
        cached = pre_run.cached_tokens[each]
        if pre_run.tier_cached_tokens is not None:  # and its host and disk tiers' (§E13)
            tiers = tuple(t[each] for t in pre_run.tier_cached_tokens)
    return Measured(
        lat,
        s,
        window_s=window,
        admitted_s=admitted,
        input_share=share,
        rejected=int(pre_run.rejected.sum() + dec_run.rejected.sum()),
        preemptions=int(pre_run.preemptions.sum() + dec_run.preemptions.sum()),
        busy_fraction=dec_run.busy_s / window,
        mfu=flop / (peak * window),
        mean_batch=dec_run.batch_seconds / dec_run.busy_s if dec_run.busy_s > 0 else 0.0,
        peak_kv_fraction=dec_run.peak_kv_fraction,
        cached_tokens=cached,
        tier_cached_tokens=tiers,
    )


def simulate_prefill_pool(
    setting: Setting,
    gpus: int,
    instances: int,
    traffic: Traffic,
    targets: Targets = NO_TARGETS,
    config: EngineConfig = DEFAULT_ENGINE,
) -> LoadResult:
    """A prefill pool alone (§E5): each request's prompt in, its first token out; the result's
    TTFT is the pool's, its output counts one token per request."""
    load = offered_load(traffic, instances, outputs=False)
    inst = instance_for(setting, gpus, config, reference_context(traffic), load)
    s = traffic.stream(instances)
    prompts = Arrivals(s.arrival_s, s.prompt_tokens, np.ones_like(s.output_tokens))
    result = serve(inst, Run(traffic, instances, requests=prompts), targets).result
    return dataclasses.replace(result, layout=f"prefill pool [{inst.described()}]")


def simulate_decode_pool(
    setting: Setting,
    gpus: int,
    instances: int,
    traffic: Traffic,
    targets: Targets = NO_TARGETS,
    config: EngineConfig = DEFAULT_ENGINE,
) -> LoadResult:
    """A decode pool alone (§E5): requests arrive with their prompt's KV cache, after a
    transfer from a prefill instance of the same size; TPOT counts the transfer and the wait
    (no TTFT: the first token came from the prefill pool)."""
    load = offered_load(traffic, instances, prompts=False)
    inst = instance_for(setting, gpus, config, reference_context(traffic), load)
    s = traffic.stream(instances)
    moved = kv_transfer_s(setting, s.prompt_tokens.astype(float), gpus)
    record = simulate_run(inst, Run(traffic, instances, prefilled=True, requests=s))
    took = moved + record.finish_s - s.arrival_s
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(s.output_tokens > 1, took / (s.output_tokens - 1), np.nan)
    lat = RequestLatencies(np.where(np.isfinite(took), 0.0, np.nan), tpot, took)
    setup = RunSetup(
        inst,
        targets,
        traffic=traffic.describe(),
        rate_per_s=traffic.offered_rate_per_s,
        scale=instances,
        gpus=(gpus, instances, 0, 0),
        layout=f"decode pool [{inst.described()}]",
        seed=traffic.seed,
        notes=traffic.input_notes,
    )
    # the engine's figures as the record has them; the latencies count the transfer, no GPU
    # time goes to prompts, and the pool reports no prefix cache or speculation of its own
    measured = dataclasses.replace(
        measured_of(inst, record),
        latencies=lat,
        arrivals=s,
        input_share=0.0,
        cached_tokens=None,
        speculative_step_fraction=None,
    )
    return assemble(setup, measured)


def rate_estimate(
    setting: Setting,
    deployment: Deployment,
    traffic: Traffic,
    config=DEFAULT_ENGINE,
    pool: Pool = "deployment",
) -> float:
    """A rough steady-state capacity of the deployment, requests/s (where a load search starts):
    decode at the largest batch the cache and the scheduler allow, plus prefill in full
    token-budget chunks; ``pool`` "prefill" or "decode" counts one side only."""
    prompt, output = mean_lengths(traffic)
    saturated = OfferedLoad(
        float("inf"), prompt if pool != "decode" else 0.0, output if pool != "prefill" else 1.0
    )
    inst = instance_for(
        setting, deployment.gpus_per_instance, config, reference_context(traffic), saturated
    )
    ctx = prompt + output / 2.0
    batch = min(inst.config.max_batch_requests, inst.max_requests_at(ctx))
    q = batch * float(inst.positions(ctx))
    decode_s = output * inst.table.time_s(batch, q, q) / batch
    chunk = inst.config.step_token_budget
    attended = chunk * float(inst.positions(chunk / 2.0))
    prefill_s = prompt * inst.table.time_s(chunk, 0.0, attended, 1) / chunk
    per_request = {"prefill": prefill_s, "decode": decode_s}.get(pool, prefill_s + decode_s)
    return deployment.instances / per_request
