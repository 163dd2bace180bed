"""One entry into the load engine (docs/model.md Part E): the engine instance of a setting in a
whole layout, and one run of it - open-loop arrivals, a closed loop of clients, prefilled
requests (a disaggregated decode pool, fed by a prefill pool: ``prefill_handoff``) or a group
of instances behind a router - with the record it measured and its summary (``LoadResult``).

A deployment's simulation (``deployment``), the replay of a measured row
(``measured.replay``) and the benchmark of an exported plan (``export.launch``) all run here,
so they run one engine model the same way.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..model.mixed_step import EngineLayout
from ..serving.disaggregation import kv_transfer_s
from ..serving.setting import Setting
from .arrivals import Arrivals, Traffic
from .engine import DEFAULT_ENGINE, EngineConfig, Instance, LayoutSearch, build_instance
from .records import RunRecord
from .results import LoadResult, summarise
from .routing import GROUP, Router, RouterPolicy
from .simulate import simulate, simulate_group
from .targets import NO_TARGETS, Targets


def instance_in(
    setting: Setting,
    layout: EngineLayout,
    config: EngineConfig = DEFAULT_ENGINE,
    reference_context: float = 1024.0,
    search: LayoutSearch | None = None,
) -> Instance:
    """The engine instance of a setting in a given whole layout (as a search chose it, a
    measured row or an exported plan states it) on ``layout.gpus`` GPUs; ``search`` reuses a
    compiled setting."""
    return build_instance(setting, layout.gpus, config, reference_context, layout, search=search)


@dataclass(frozen=True, eq=False)
class Run:
    """One simulated run: the requests that ``group`` of a deployment's ``instances``
    instances receive together (``Traffic.stream``; or the ``requests`` given: every one queued
    at once, prompts alone, requests a prefill pool handed over), and how they reach the
    engine. The result's rates are those of ``instances`` instances."""

    traffic: Traffic
    instances: int = 1
    #: Instances simulated together behind a ``router`` (§E10; 1: one instance alone).
    group: int = 1
    router: RouterPolicy = "random"
    #: A closed loop: this many clients on the instance, each sending its next request when
    #: its last one finishes (None: the requests' own arrival times).
    clients: int | None = None
    #: The requests arrive with their prompt's KV cache and first token (a decode pool, §E5).
    prefilled: bool = False
    #: p99 limits by metric (``Targets.limits``): the run ends once it certainly misses one.
    stop: dict[str, float] | None = None
    requests: Arrivals | None = None

    def arrivals(self, instance: Instance | None = None) -> Arrivals:
        """The requests the run serves (with the ``instance`` that serves them, a warm start
        of sessions seeds those being answered too: ``turn_estimate``)."""
        if self.requests is not None:
            return self.requests
        in_turn = self.router == "round_robin"  # one instance of several alone: its turns
        turn_s = None if instance is None else functools.partial(turn_estimate, instance)
        return self.traffic.stream(self.instances, self.group, in_turn, turn_s)


def turn_estimate(instance: Instance, rate: float, prompt: float, output: float, context):
    """Rough seconds a turn spends being answered on ``instance`` at ``rate`` requests a
    second, ``prompt`` tokens of it to prefill: ``output + 1`` steps of the step time the load
    settles into, its decoding batch ``rate · output · step`` (Little's law) and a share
    ``rate · prompt · step / budget`` of its steps carrying a chunk of prompts (found by a few
    fixed-point steps), not more than a minute a step (a load the instance cannot keep up
    with). It leaves out prompts the cache misses and whole prompts longer than a chunk: short
    of a turn's time by some share, a warm start lacks that share of the sessions being
    answered at its start, which ebb over a session's length (Llama 3.1 8B on one H100, 8-turn
    sessions 30 s apart at 14 req/s: 1.4 s against a median 3.7 s, 7 % of its sessions)."""
    held, read = float(instance.held(context)), float(instance.positions(context))
    budget = max(int(instance.config.step_token_budget), 1)
    most = int(instance.config.max_batch_requests)
    step = instance.table.time_s(1, held, read)
    for _ in range(30):
        batch = int(min(round(max(rate * max(output, 1.0) * step, 1.0)), most))
        decode = instance.table.time_s(batch, batch * held, batch * read)
        full = max(budget, batch)  # a step carrying prompts fills the token budget: its chunk
        # reads its prefix's cache once and each of its tokens attends to about the context
        mixed = instance.table.time_s(full, (batch + 1) * held, full * read)
        share = min(rate * max(prompt, 0.0) * step / budget, 1.0)
        nxt = min((1.0 - share) * decode + share * mixed, 60.0)
        done = abs(nxt - step) <= 1e-3 * step
        step = nxt
        if done:
            break
    return (max(output, 1.0) + 1.0) * step


def simulate_run(
    instance: Instance, run: Run, progress: Callable[[int, int], None] | None = None
) -> RunRecord:
    """What one instance (or ``run.group`` copies of it behind the run's router, routed by
    the requests' sessions and shared prefixes) measured serving the run's requests."""
    arrivals = run.arrivals(instance)
    if run.group > 1:
        keys = arrivals.sharing.route_keys if arrivals.sharing is not None else None
        route = Router(run.router, run.group, keys, run.traffic.seed)
        return simulate_group([instance] * run.group, arrivals, route, progress)
    return simulate(
        instance,
        arrivals,
        prefilled=run.prefilled,
        progress=progress,
        clients=run.clients,
        stop=run.stop,
    )


def summarise_run(
    instance: Instance,
    record: RunRecord,
    run: Run,
    targets: Targets = NO_TARGETS,
    rate_per_s: float | None = None,
) -> LoadResult:
    """The ``LoadResult`` of a run's record (``results.summarise``): a group's rates count
    ``instances / group`` times in the deployment, one instance's ``instances`` times."""
    scale = run.instances / run.group if run.group > 1 else None
    offered = run.clients is None and run.requests is None  # at the traffic's own rate
    return summarise(
        instance, record, run.traffic, targets, run.instances, rate_per_s, scale, offered
    )


@dataclass(frozen=True, eq=False)
class Served:
    """A run's record (what the engine measured, request by request) and its summary."""

    record: RunRecord
    result: LoadResult


def serve(
    instance: Instance,
    run: Run,
    targets: Targets = NO_TARGETS,
    progress: Callable[[int, int], None] | None = None,
    rate_per_s: float | None = None,
) -> Served:
    """Simulate the run and summarise it (``rate_per_s``: the rate the result states, by
    default the traffic's offered rate)."""
    record = simulate_run(instance, run, progress)
    return Served(record, summarise_run(instance, record, run, targets, rate_per_s))


@dataclass(frozen=True, eq=False)
class Handoff:
    """A prefill pool's work for one decode instance (``prefill_handoff``): the prefill run,
    the decode instance's requests (``stream``, as they arrived), each one's TTFT from the
    pool, and the requests in the order they reach the decode instance (``handed``, at their
    arrival plus the pool's delay and the KV cache's transfer; ``order`` indexes ``stream``)."""

    prefill_run: RunRecord
    stream: Arrivals
    ttft_s: np.ndarray
    order: np.ndarray
    handed: Arrivals


def prefill_handoff(
    pre: Instance,
    pre_setting: Setting,
    dec_setting: Setting,
    dec_gpus: int,
    traffic: Traffic,
    prefill_instances: int,
    decode_instances: int,
    router: RouterPolicy = "random",
    taken_only: bool = False,
) -> Handoff:
    """The prefill pool's first tokens and the requests it hands one decode instance (§E5):
    its instances serve the prompts (one alone with its random share, or up to ``GROUP``
    behind ``router``, §E10), each emits a first token, and the KV cache crosses the NICs to
    the decode instance. The two pools' delays are taken as independent. ``taken_only``: the
    prefill run goes only as far as the first tokens the decode instance's requests take
    (``_pool_run``: the same first tokens, a shorter ``prefill_run``)."""
    k = int(prefill_instances)
    g = min(k, GROUP) if router != "random" else 1
    ps = traffic.stream(k, g)
    s = traffic.stream(decode_instances)
    taken = min(len(s), len(ps)) if taken_only else len(ps)
    pre_run = _pool_run(pre, Run(traffic, k, g, router), ps, taken)
    pool_ttft = pre_run.first_token_s[:taken] - ps.arrival_s[:taken]
    ttft = pool_ttft[np.arange(len(s)) % len(pool_ttft)]
    prompts = s.prompt_tokens.astype(float)
    moved = _moved_s(dec_setting, pre_setting, prompts, pre.gpus, dec_gpus)
    ready = s.arrival_s + ttft + moved
    order = np.argsort(np.where(np.isfinite(ready), ready, np.inf), kind="stable")
    handed = Arrivals(ready[order], s.prompt_tokens[order], s.output_tokens[order])
    return Handoff(pre_run, s, ttft, order, handed)


#: Prompts a shortened prefill run takes beyond those it must (``_pool_run``), as a share of
#: the prompts whose first tokens are read, and at least ``POOL_RUN_FLOOR``: those arriving
#: while the last of theirs are still prefilling, so that one run is usually enough.
POOL_RUN_MARGIN = 1.0 / 16.0
POOL_RUN_FLOOR = 64


def _pool_run(pre: Instance, run: Run, ps: Arrivals, taken: int) -> RunRecord:
    """The prefill pool's run of the prompts of ``ps`` (each one token of output) as far as
    the first ``taken`` of them need: the run is causal, so a prompt that arrives after the
    last of their first tokens cannot move them, and the run of the prompts before it gives
    those first tokens exactly as the whole run does (it warns of the longest prompt it runs,
    not of a longer one left out). The run is taken over the first ``taken`` and a margin
    (``POOL_RUN_MARGIN``, ``POOL_RUN_FLOOR``), then, where the first prompt left out arrives
    before the last of their first tokens, again over every prompt that arrives by then and
    the margin (a prompt let in may move it later), until none left out arrives before it; the
    whole stream where a prefix share of the prompts (``ps.sharing``) or a capacity counted
    over all of them (``simulate.cache_counted_in_reads``) ties each to every other, or where
    the prompts are not in the order they arrive."""
    whole = len(ps)
    tied = ps.sharing is not None or (pre.windowed and not pre.work.cache_windows)
    tied = tied or bool(np.any(np.diff(ps.arrival_s) < 0.0))
    margin = max(POOL_RUN_FLOOR, int(taken * POOL_RUN_MARGIN))
    m = taken + margin if not tied and 0 < taken < whole else whole
    while True:
        m = min(m, whole)
        part = slice(0, m)
        prompts_only = Arrivals(
            ps.arrival_s[part],
            ps.prompt_tokens[part],
            np.ones_like(ps.output_tokens[part]),
            ps.sharing,
        )
        record = simulate_run(pre, dataclasses.replace(run, requests=prompts_only))
        if m == whole:
            return record
        last = np.max(record.first_token_s[:taken])
        if ps.arrival_s[m] > last:
            return record
        # every prompt that arrives by then, and the margin: their steps may move it later
        reach = int(np.searchsorted(ps.arrival_s, last, side="right")) if last < np.inf else whole
        m = reach + margin


def _moved_s(decode: Setting, prefill: Setting, prompt_tokens, pre_gpus: int, dec_gpus: int):
    """Seconds to move each request's KV cache from the prefill pool to the decode pool over
    the NICs of the fewer GPUs, at the slower side's bandwidth (§B10, §E5)."""
    gpus = min(pre_gpus, dec_gpus)
    moved = kv_transfer_s(decode, prompt_tokens, gpus)
    if prefill is decode:
        return moved
    return np.maximum(moved, kv_transfer_s(prefill, prompt_tokens, gpus))
