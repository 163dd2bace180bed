"""What a simulated deployment yields: latency distributions, throughput, goodput, utilisation
and the price of input and output tokens at that load (docs/model.md §E4).

A deployment is ``instances`` copies of one engine instance behind a random load balancer; one
instance is simulated and the deployment's rates are that instance's times ``instances``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..columns import HOURS_PER_MONTH, SECONDS_PER_HOUR
from ..errors import InfeasibleError
from ..model.economics import usd_per_mtok
from ..serving.intervals import load_intervals, load_support
from ..serving.setting import Setting, requests_metadata
from .arrivals import CLOSED_LOOP, Arrivals, Traffic
from .backlog import (
    OVERLOAD,
    Backlog,
    SessionPace,
    backlog_of,
    overload_note,
    session_pace,
    sessions_notes,
    short_run_note,
    unsteady_note,
)
from .engine import EngineConfig, Instance
from .kv_tiers import session_figures
from .records import RunRecord
from .routing import RouterPolicy
from .targets import Targets
from .timeline import Timeline

METRICS = ("ttft", "tpot", "e2e")


@dataclass(frozen=True)
class Percentiles:
    """Mean and percentiles of one latency over the requests, seconds (NaN: none measured)."""

    mean: float
    p50: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values) -> Percentiles:
        v = np.asarray(values, dtype=float)
        v = v[np.isfinite(v)]
        if v.size == 0:
            return cls(math.nan, math.nan, math.nan, math.nan)
        p50, p90, p99 = np.percentile(v, [50, 90, 99])
        return cls(float(v.mean()), float(p50), float(p90), float(p99))


@dataclass(frozen=True)
class RequestLatencies:
    """Per request: time to first token, time per output token (after the first, MLPerf's
    definition) and end-to-end latency, seconds; NaN where not defined."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray

    @classmethod
    def of(cls, record: RunRecord) -> RequestLatencies:
        a = record.arrivals
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = (record.finish_s - record.first_token_s) / (a.output_tokens - 1)
        tpot = np.where(a.output_tokens > 1, tpot, np.nan)
        return cls(record.first_token_s - a.arrival_s, tpot, record.finish_s - a.arrival_s)


@dataclass(frozen=True)
class LoadResult:
    """One deployment under one load: what every printed number was computed from is here."""

    model: str
    hardware: str
    assumptions: str
    layout: str
    gpus_per_instance: int
    instances: int
    traffic: str
    targets: Targets
    rate_per_s: float  # offered to the whole deployment
    requests: int  # simulated on one instance
    completed: int
    rejected: int
    preemptions: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    e2e_s: Percentiles
    throughput_requests_per_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    #: Those three are the offered load's, which the deployment keeps up with (``_rates``).
    offered_rates: bool
    goodput_requests_per_s: float
    goodput_fraction: float
    busy_fraction: float
    mfu: float
    mean_batch: float
    peak_kv_fraction: float
    usd_per_hour: float
    usd_per_m_input_tokens: float
    usd_per_m_output_tokens: float
    #: All-in: the deployment's whole cost per million output tokens (columns.ALL_IN), at the
    #: traffic's input:output ratio (``input_tokens_per_output_token``).
    usd_per_m_output_tokens_all_in: float
    #: Every limited p99 within its limit, nothing rejected, and the deployment keeps up; None
    #: when there are no targets (``stable`` says whether it keeps up).
    meets_targets: bool | None
    notes: tuple[str, ...] = field(default=())
    #: The reading the keeping-up verdict comes from (§E4, ``backlog.Backlog.rate``): the
    #: requests in the system at the last arrival against their peak over the second quarter
    #: (at most 1.3 when the deployment keeps up, about 2 when the load outgrows it, 0 where
    #: the count fell); where the queue in front of the engine grew, how many times as fast
    #: requests arrived as they were begun; for steady sessions short of their pace, the
    #: requests the offered rate brings over those they sent.
    backlog_growth: float = 1.0
    #: Its backlog grew over that half past a steady run's noise (``stable`` is the opposite).
    falls_behind: bool = False
    #: It reads as kept up, but the run is too short to tell an overload of more than
    #: ``backlog.UNTOLD_LIMIT`` times from that (``Backlog.undecided``): a load search does not
    #: take its rate as held (§E4).
    undecided: bool = False
    #: Disaggregated serving: the prefill pool (the fields above describe the decode pool).
    prefill_gpus_per_instance: int = 0
    prefill_instances: int = 0
    #: What goodput is recomputed from under other targets (``with_targets``).
    latencies: RequestLatencies | None = field(default=None, repr=False, compare=False)
    scale: float = field(default=1.0, repr=False, compare=False)
    window: Window | None = field(default=None, repr=False, compare=False)
    #: What the run was computed with (``metadata``): the setting, the engine's limits, the seed.
    setting: Setting | None = field(default=None, repr=False, compare=False)
    engine: EngineConfig | None = field(default=None, repr=False, compare=False)
    seed: int | None = None
    #: Energy over the service window (docs/model.md §G2): IT energy per output token, output
    #: tokens/s per kW of IT power and per MW of facility power, the deployment's IT power,
    #: and with a grid intensity gCO2 per million output tokens (NaN: no power figures).
    joules_per_output_token: float = math.nan
    output_tokens_per_s_per_kw_it: float = math.nan
    output_tokens_per_s_per_mw_facility: float = math.nan
    it_power_kw: float = math.nan
    gco2_per_mtok: float | None = None
    #: Prompt tokens served from the prefix cache over the prompt tokens of the requests
    #: admitted in the service window (§E9; None: the prompts share nothing).
    prefix_hit_rate: float | None = None
    #: Of those prompt tokens, the shares loaded back from host memory and from local disk
    #: (§E13; None: no such tier).
    host_hit_rate: float | None = None
    disk_hit_rate: float | None = None
    #: Sessions (§E9): the p99 TTFT of their later turns and requests per session (None: none).
    later_turn_ttft_p99_s: float | None = None
    requests_per_session: float | None = None
    #: Share of the decode steps that speculated (§E8; None: no draft).
    speculative_step_fraction: float | None = None
    #: The most requests one instance holds at once: its engine's batch cap, and a closed
    #: loop's clients per instance (the mean batch's interval ends stay within it).
    batch_limit: float = math.inf
    #: How requests reach the instances (§E10) and how many were simulated together.
    router: RouterPolicy = "random"
    instances_simulated: int = 1
    #: The targets a run was stopped at once it certainly missed them (``simulate``'s
    #: ``stop``; None: the run is whole). Its figures cover the requests served by then, and
    #: it is judged only against those targets (``with_targets``).
    stopped_for: Targets | None = None
    #: The interval columns of the simulated counts (``deployment.counted_ends``: runs at
    #: the ends of the step time's band, made when first read), as (column, value) pairs.
    count_ends: Sequence[tuple[str, float]] = ()
    #: The simulated schedule step by step (``timeline.Timeline``), where it was asked for.
    timeline: Timeline | None = field(default=None, compare=False, repr=False)

    def with_targets(self, targets: Targets) -> LoadResult:
        """The same run judged against other targets (goodput, headroom, whether met)."""
        lat, w = self.latencies, self.window
        if self.stopped_for is not None and targets != self.stopped_for:
            raise InfeasibleError(
                "this run stopped once it missed its targets: it is judged only against those"
            )
        if lat is None or w is None:
            raise InfeasibleError(
                "this load result keeps no per-request latencies to judge other targets by"
            )
        good = targets.each_request(lat.ttft_s, lat.tpot_s, lat.e2e_s)
        return dataclasses.replace(
            self,
            targets=targets,
            goodput_requests_per_s=self.scale * np.sum(w.weight * good) / w.seconds,
            goodput_fraction=w.share(good),
            meets_targets=self.stopped_for is None
            and verdict(targets, self.p99, self.rejected, self.falls_behind),
        )

    def metadata(self) -> dict:
        """What the run was computed with, for the ``#`` lines of a CSV, JSON's metadata and
        the text's "Computed with" line: model and GPU (names and files), preset, precisions,
        traffic, targets, requests, seed and the engine's limits."""
        meta: dict[str, object] = {
            "model": self.model,
            "hardware": self.hardware,
            "assumptions": self.assumptions,
        }
        if self.setting is not None:
            meta = requests_metadata(self.setting)
        if self.setting is not None and self.hardware != self.setting.gpu.name:
            meta["pools_hardware"] = self.hardware  # a pool on other GPUs (§E5), priced so
        meta.update(traffic=self.traffic, targets=self.targets.describe())
        if self.instances_simulated > 1:  # a group behind a router (§E10)
            meta["requests_simulated"] = self.requests
            meta["instances_simulated"] = self.instances_simulated
        else:
            meta["requests_per_instance"] = self.requests
        if self.seed is not None:
            meta["seed"] = self.seed
        if self.engine is not None:
            speculating = self.setting is not None and self.setting.spec is not None
            meta.update(self.engine.metadata(speculating))
        return meta

    @property
    def overloaded_note(self) -> str | None:
        """The note saying the load outgrows the deployment, if it does."""
        return next((n for n in self.notes if n.startswith(OVERLOAD)), None)

    @property
    def unsteady_notes(self) -> list[str]:
        """The note of a run of sessions too short to reach a steady state (``unsteady_note``),
        as plans built on its held load state it (``capacity --demand``, ``--fleet``)."""
        pace = self.window.pace if self.window is not None else None
        notes = unsteady_note(pace, self.requests, self.instances_simulated)
        return [f"one instance's held load: {note}" for note in notes]

    @property
    def closed_loop(self) -> bool:
        """Clients send when answered: the rates are the ones they reach, not an offered load's."""
        return self.traffic.startswith(CLOSED_LOOP)

    @property
    def stable(self) -> bool:
        """The deployment keeps up with the load, targets or not: its backlog does not grow (§E4)."""
        return not self.falls_behind

    @property
    def gpus(self) -> int:
        return (
            self.gpus_per_instance * self.instances
            + self.prefill_gpus_per_instance * self.prefill_instances
        )

    @property
    def input_tokens_per_output_token(self) -> float:
        """The traffic's input:output token ratio, at which the all-in price blends the input
        and output prices (columns.RATIO)."""
        if not self.output_tokens_per_s > 0:
            return math.nan
        return self.input_tokens_per_s / self.output_tokens_per_s

    @property
    def usd_per_session(self) -> float:
        """Dollars a session costs at the offered rate: the deployment's hour over the
        sessions it serves in an hour (NaN: no sessions, or no rate)."""
        per = self.requests_per_session
        if per is None or not self.rate_per_s > 0:
            return math.nan
        return self.usd_per_hour * per / (self.rate_per_s * SECONDS_PER_HOUR)

    @property
    def monthly_usd(self) -> float:
        """The deployment's cost a month (``columns.HOURS_PER_MONTH`` hours of it)."""
        return self.usd_per_hour * HOURS_PER_MONTH

    @property
    def p99(self) -> dict[str, float]:
        return {"ttft": self.ttft_s.p99, "tpot": self.tpot_s.p99, "e2e": self.e2e_s.p99}

    @property
    def headroom(self) -> dict[str, float]:
        """1 − p99/target for each target."""
        return self.targets.headroom(self.p99)

    def row(self) -> dict:
        """One flat row: deployment, latencies (mean/p50/p90/p99), rates, utilisation, prices."""
        out = {
            "model": self.model,
            "hardware": self.hardware,
            "gpus": self.gpus,
            "gpus_per_instance": self.gpus_per_instance,
            "instances": self.instances,
            "prefill_gpus_per_instance": self.prefill_gpus_per_instance,
            "prefill_instances": self.prefill_instances,
            "layout": self.layout,
            "rate_per_s": self.rate_per_s,
        }
        for name in METRICS:
            stats = getattr(self, f"{name}_s")
            for stat in ("mean", "p50", "p90", "p99"):
                out[f"{name}_{stat}_s"] = getattr(stats, stat)
        out.update(
            {
                "throughput_requests_per_s": self.throughput_requests_per_s,
                "input_tokens_per_s": self.input_tokens_per_s,
                "output_tokens_per_s": self.output_tokens_per_s,
                "goodput_requests_per_s": self.goodput_requests_per_s,
                "goodput_fraction": self.goodput_fraction,
                "busy_fraction": self.busy_fraction,
                "mfu": self.mfu,
                "mean_batch": self.mean_batch,
                "peak_kv_fraction": self.peak_kv_fraction,
                "preemptions": self.preemptions,
                "rejected": self.rejected,
                "usd_per_hour": self.usd_per_hour,
                "monthly_usd": self.monthly_usd,
                "usd_per_m_input_tokens": self.usd_per_m_input_tokens,
                "usd_per_m_output_tokens": self.usd_per_m_output_tokens,
                "usd_per_m_output_tokens_all_in": self.usd_per_m_output_tokens_all_in,
                "input_tokens_per_output_token": self.input_tokens_per_output_token,
                "joules_per_output_token": self.joules_per_output_token,
                "output_tokens_per_s_per_kw_it": self.output_tokens_per_s_per_kw_it,
                "output_tokens_per_s_per_mw_facility": self.output_tokens_per_s_per_mw_facility,
                "it_power_kw": self.it_power_kw,
                "stable": self.stable,
                "undecided": self.undecided,
                "meets_targets": self.meets_targets,
                "requests": self.requests,
                "assumptions": self.assumptions,
                "traffic": self.traffic,
                "targets": self.targets.describe(),
            }
        )
        if self.gco2_per_mtok is not None:
            out["gco2_per_mtok"] = self.gco2_per_mtok
        if self.prefix_hit_rate is not None:
            out["prefix_hit_rate"] = self.prefix_hit_rate
        for name in ("host_hit_rate", "disk_hit_rate"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.requests_per_session is not None:
            out["later_turn_ttft_p99_s"] = self.later_turn_ttft_p99_s
            out["usd_per_session"] = self.usd_per_session
        if self.speculative_step_fraction is not None:
            out["speculative_step_fraction"] = self.speculative_step_fraction
        if self.instances > 1:
            out["router"] = self.router
        for name, value in self.headroom.items():
            out[f"{name}_headroom"] = value
        out.update(load_intervals(self))  # an expected figure's interval (§F12)
        support = load_support(self)  # and the support of the class it is sized on
        if support is not None:
            out["support"] = support.label()
        out.update(self.count_ends)
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """The result as a one-row DataFrame (``row``)."""
        return pd.DataFrame([self.row()])


#: Share of the requests (by arrival) left out at the start: the engine is still filling up.
WARMUP = 0.1


def verdict(targets: Targets, p99: dict, rejected: int, behind: bool) -> bool | None:
    """Whether a run meets the targets (§E4): every limited p99 within its limit, nothing
    rejected, keeping up (not ``behind``); None without targets: there is nothing to meet."""
    if targets.empty:
        return None
    return targets.met(p99) and rejected == 0 and not behind


@dataclass(frozen=True)
class Window:
    """The steady part of a run: its service window (§E4). It opens when the engine has filled
    up (one p90 service time, admission to completion, after the first admission; at least a
    tenth, at most half of the admissions in) and closes when the drain begins: at the first
    completion after the last admission, when a request leaves and none takes its place. A
    deployment that keeps up admits each request as it arrives, so the window ends near the
    last arrival; an overloaded one works through its queue at full speed until late in the
    run. A steady run of sessions' closes at its last session start (``_sessions_window``).
    Each request counts the share of its output span (first token to last) inside the
    window (a one-token request counts if it finished inside), and its output tokens alike;
    prompts count when their first token came inside. Requests rejected on arriving inside
    count against goodput."""

    seconds: float
    weight: np.ndarray  # each request's share of its output span inside the window
    dropped: int  # rejected requests that arrived inside the window
    input_tokens: float
    output_tokens: float
    backlog: Backlog
    opens_s: float = 0.0
    closes_s: float = math.inf
    #: A run of sessions' pace toward its offered load (``backlog.SessionPace``; None: none).
    pace: SessionPace | None = None

    @classmethod
    def of(cls, arrivals, lat: RequestLatencies, run_s: float, admitted_s) -> Window:
        first = arrivals.arrival_s + lat.ttft_s
        last = arrivals.arrival_s + lat.e2e_s
        lo, hi = cls._bounds(last, np.asarray(admitted_s, dtype=float), run_s)
        pace = session_pace(arrivals, lat.e2e_s)
        lo, hi = _sessions_window(pace, lo, hi)
        with np.errstate(invalid="ignore", divide="ignore"):
            inside = (last >= lo) & (last <= hi)
            started = (first >= lo) & (first <= hi)
            overlap = np.clip(np.minimum(last, hi) - np.maximum(first, lo), 0.0, None)
            weight = np.where(last > first, overlap / (last - first), inside)
        weight = np.where(np.isfinite(weight), weight, 0.0)
        dropped = ~np.isfinite(last) & (arrivals.arrival_s >= lo) & (arrivals.arrival_s <= hi)
        return cls(
            seconds=float(hi - lo),
            weight=weight,
            dropped=int(dropped.sum()),
            input_tokens=float(arrivals.prompt_tokens[started].sum()),
            output_tokens=float(started.sum() + np.sum((arrivals.output_tokens - 1) * weight)),
            backlog=backlog_of(arrivals, lat.e2e_s, admitted_s, lat.ttft_s, pace),
            opens_s=float(lo),
            closes_s=float(hi),
            pace=pace,
        )

    @staticmethod
    def _bounds(last: np.ndarray, admitted: np.ndarray, run_s: float) -> tuple[float, float]:
        """(opens, closes) of the service window; the whole run when it is too short."""
        entered = np.sort(admitted[np.isfinite(admitted)])
        service = last - admitted
        if len(entered) < 20 or not np.isfinite(service).any():
            return 0.0, run_s
        fill = entered[0] + float(np.percentile(service[~np.isnan(service)], 90))  # = nanpercentile
        lo = max(entered[int(WARMUP * len(entered))], min(entered[len(entered) // 2], fill))
        with np.errstate(invalid="ignore"):
            after = last[last > entered[-1]]
        hi = float(after.min()) if after.size else entered[-1]
        return (lo, hi) if hi > lo else (0.0, run_s)

    def share(self, good: np.ndarray) -> float:
        """The good requests' share of those judged here (NaN: none judged)."""
        judged = float(self.weight.sum()) + self.dropped
        return float(np.sum(self.weight * good) / judged) if judged > 0 else math.nan


def _sessions_window(pace: SessionPace | None, lo: float, hi: float) -> tuple[float, float]:
    """The service window of a steady run of sessions: from when it holds its steady load
    (``SessionPace.settles_s``) to the last start, within ``(lo, hi)``. After the last start
    no session begins and the load ebbs, one session at a time, until the last one's last
    answer, where a run without sessions drains at once: counted, it lowered the rates a run
    of sessions serves (4-turn sessions at 8 req/s on one H100, kept up, served 6.7)."""
    if pace is None or not pace.steady:
        return lo, hi
    opens, closes = max(lo, pace.first_s + pace.settles_s), min(hi, pace.last_s)
    return (opens, closes) if closes > opens else (lo, hi)


@dataclass(frozen=True)
class RunSetup:
    """What a run was: the engine instance simulated, the deployment whose rates its requests
    stand for (``scale`` times; ``gpus``: GPUs per instance, instances, and a prefill pool's
    alike), the traffic (described) and targets it is judged by, and what the result states of
    it. ``pools``: ``((setting, GPUs), ...)`` of a deployment whose pools run on different
    GPUs, priced and powered each on its own."""

    instance: Instance
    targets: Targets
    traffic: str
    rate_per_s: float
    scale: float
    gpus: tuple[int, int, int, int]
    seed: int | None = None
    layout: str | None = None
    batch_limit: float = math.inf
    notes: tuple[str, ...] = ()
    router: RouterPolicy = "random"
    instances_simulated: int = 1
    pools: tuple | None = None
    #: The requests arrived at ``rate_per_s`` (not a closed loop's, nor all at once).
    offered: bool = True

    @property
    def total_gpus(self) -> int:
        per_instance, count, prefill_per_instance, prefill_count = self.gpus
        return per_instance * count + prefill_per_instance * prefill_count

    @property
    def usd_per_gpu_hour(self) -> float:
        """The deployment's cost per GPU-hour: its GPU's price, or its pools' by GPUs."""
        if self.pools is None:
            return self.instance.setting.gpu.price_usd_per_hour
        return sum(s.gpu.price_usd_per_hour * n for s, n in self.pools) / self.total_gpus

    @property
    def hardware(self) -> str:
        """The GPU's name, or each pool's where they differ."""
        pools = self.pools
        if pools is None or len({s.gpu.name for s, _ in pools}) == 1:
            return self.instance.setting.gpu.name
        return " + ".join(
            f"{s.gpu.name} ({role})" for (s, _), role in zip(pools, ("prefill", "decode"))
        )


@dataclass(frozen=True, eq=False)
class Measured:
    """What a run measured: per-request latencies of its requests (``arrivals``, those of one
    simulated instance or group; ``admitted_s`` when each entered the engine that finished
    it), and the engine's time over the run of ``window_s`` (``input_share`` of it on prompt
    tokens), counts and utilisation. ``cached_tokens``: each request's prompt tokens found in
    the prefix cache (§E9)."""

    latencies: RequestLatencies
    arrivals: Arrivals
    window_s: float
    admitted_s: np.ndarray
    input_share: float
    rejected: int
    preemptions: int
    busy_fraction: float
    mfu: float
    mean_batch: float
    peak_kv_fraction: float
    cached_tokens: np.ndarray | None = None
    tier_cached_tokens: tuple[np.ndarray, ...] | None = None
    speculative_step_fraction: float | None = None


def summarise(
    instance: Instance,
    record: RunRecord,
    traffic: Traffic,
    targets: Targets,
    instances: int = 1,
    rate_per_s: float | None = None,
    scale: float | None = None,
    offered: bool = True,
) -> LoadResult:
    """Latency distributions, rates, utilisation and prices of one simulated run (§E4): one
    instance of ``instances``, or a group (``record.instances``) whose rates count ``scale``
    times in the deployment."""
    setup = RunSetup(
        instance,
        targets,
        traffic=traffic.describe(),
        rate_per_s=float(rate_per_s if rate_per_s is not None else traffic.offered_rate_per_s),
        seed=traffic.seed,
        scale=instances if scale is None else scale,
        gpus=(instance.gpus, instances, 0, 0),
        batch_limit=min(
            float(instance.config.max_batch_requests),
            traffic.clients / instances if traffic.clients else math.inf,
        ),
        router=instance.config.router,
        instances_simulated=record.instances,
        notes=traffic.input_notes,
        offered=offered,
    )
    return assemble(setup, measured_of(instance, record))


def measured_of(instance: Instance, record: RunRecord) -> Measured:
    """What one simulated instance's (or group's) record measured, to its last completion."""
    window_s = max(record.end_s, 1e-12)
    return Measured(
        RequestLatencies.of(record),
        record.arrivals,
        window_s=window_s,
        admitted_s=record.admitted_s,
        input_share=record.prefill_s / record.busy_s if record.busy_s > 0 else 0.0,
        rejected=int(record.rejected.sum()),
        preemptions=int(record.preemptions.sum()),
        busy_fraction=record.busy_s / window_s,
        mfu=record.flop / (instance.table.peak_flop_per_s * window_s),
        mean_batch=record.batch_seconds / record.busy_s if record.busy_s > 0 else 0.0,
        peak_kv_fraction=record.peak_kv_fraction,
        cached_tokens=record.cached_tokens,
        tier_cached_tokens=record.tier_cached_tokens,
        speculative_step_fraction=(
            record.spec_steps / record.decode_steps
            if instance.draft is not None and record.decode_steps
            else None
        ),
    )


def assemble(setup: RunSetup, measured: Measured) -> LoadResult:
    """A ``LoadResult`` from what a run measured and what it was: the deployment's rates,
    prices and energy over its service window (``Window``; the whole run of ``window_s`` when
    it is too short), latencies, and whether it meets the targets."""
    lat, arrivals = measured.latencies, measured.arrivals
    window = Window.of(arrivals, lat, measured.window_s, measured.admitted_s)
    if setup.traffic.startswith(CLOSED_LOOP):  # clients send as they are answered: no load
        told = dataclasses.replace(window.backlog, resolution=1.0)  # to fall short of telling
        window = dataclasses.replace(window, backlog=told)
    good = setup.targets.each_request(lat.ttft_s, lat.tpot_s, lat.e2e_s)
    stats = {m: Percentiles.of(getattr(lat, f"{m}_s")) for m in METRICS}
    p99 = {m: s.p99 for m, s in stats.items()}
    instance, scale = setup.instance, setup.scale
    per_instance, count, prefill_per_instance, prefill_count = setup.gpus
    rate_per_s, notes = _rate_and_notes(setup, measured, window)
    backlog = window.backlog
    requests_s, input_s, output_s, offered = _rates(setup, measured, window)
    return LoadResult(
        model=instance.setting.model.name,
        hardware=setup.hardware,
        assumptions=instance.setting.assumptions.label,
        layout=setup.layout or instance.described(),
        gpus_per_instance=per_instance,
        instances=count,
        traffic=setup.traffic,
        targets=setup.targets,
        rate_per_s=rate_per_s,
        requests=len(arrivals),
        completed=int(np.isfinite(lat.e2e_s).sum()),
        rejected=measured.rejected,
        preemptions=measured.preemptions,
        ttft_s=stats["ttft"],
        tpot_s=stats["tpot"],
        e2e_s=stats["e2e"],
        throughput_requests_per_s=requests_s,
        input_tokens_per_s=input_s,
        output_tokens_per_s=output_s,
        offered_rates=offered,
        goodput_requests_per_s=requests_s * _good_share(window, good),
        goodput_fraction=window.share(good),
        busy_fraction=measured.busy_fraction,
        mfu=measured.mfu,
        mean_batch=measured.mean_batch,
        batch_limit=setup.batch_limit,
        peak_kv_fraction=measured.peak_kv_fraction,
        meets_targets=verdict(setup.targets, p99, measured.rejected, backlog.behind),
        notes=notes,
        backlog_growth=backlog.rate,
        falls_behind=backlog.behind,
        undecided=backlog.undecided,
        prefill_gpus_per_instance=prefill_per_instance,
        prefill_instances=prefill_count,
        latencies=lat,
        scale=scale,
        window=window,
        setting=instance.setting,
        engine=instance.config,
        seed=setup.seed,
        prefix_hit_rate=_hit_rate(measured.cached_tokens, arrivals, window),
        **_tier_hit_rates(measured.tier_cached_tokens, arrivals, window),
        **session_figures(arrivals.sharing, lat.ttft_s),
        speculative_step_fraction=measured.speculative_step_fraction,
        router=setup.router,
        instances_simulated=setup.instances_simulated,
        **_prices(setup, measured, input_s, output_s),
        **_run_energy(setup, measured, output_s),
    )


def _rate_and_notes(setup: RunSetup, measured: Measured, window: Window):
    """The rate the result states (NaN: every request arrived at once) and its notes: the
    traffic's, then whether the load outgrows the deployment, rejected requests and a short
    run."""
    rate_per_s, notes = setup.rate_per_s, [*setup.notes, *setup.instance.idle_copies_notes()]
    if setup.gpus[2] == 0:  # the instance is every one run (in pools, the decode pool's only)
        notes += setup.instance.balancing_notes()
    n, backlog, rejected = len(measured.arrivals), window.backlog, measured.rejected
    if not math.isfinite(rate_per_s):
        rate_per_s = math.nan
        notes.append(
            "every request arrives at once (the trace's arrival times are all equal): "
            "there is no arrival rate; rates are measured over the service window"
        )
    if backlog.behind:
        notes.append(overload_note(window.pace, backlog))
    notes += sessions_notes(window.pace, n, setup.instances_simulated)
    if rejected:
        notes.append(
            f"{rejected} of {n} requests never fit in the KV cache of one instance: "
            "they are rejected and count against goodput"
        )
    each = max(1, round(n / max(setup.instances_simulated, 1)))  # one instance's requests
    notes += short_run_note(each, backlog, measured.arrivals.arrival_s, measured.latencies.e2e_s)
    return rate_per_s, tuple(notes)


def _rates(setup: RunSetup, measured: Measured, window: Window) -> tuple[float, float, float, bool]:
    """Requests, prompt and output tokens a second served, and whether they are the offered
    rate's (where the deployment keeps up), not the window's realised rate (the seed's luck)."""
    rate, arrivals = setup.rate_per_s, measured.arrivals
    opened = setup.offered and not setup.traffic.startswith(CLOSED_LOOP) and len(arrivals) > 0
    offered = opened and math.isfinite(rate) and rate > 0 and not window.backlog.behind
    if offered:
        served = np.isfinite(measured.latencies.e2e_s)
        each = rate / len(served)
        tokens = (np.sum(arrivals.prompt_tokens[served]), np.sum(arrivals.output_tokens[served]))
        counts = (served.sum(), *tokens)
    else:
        each = setup.scale / window.seconds
        counts = (window.weight.sum(), window.input_tokens, window.output_tokens)
    requests, prompts, outputs = (each * float(count) for count in counts)
    return requests, prompts, outputs, offered


def _good_share(window: Window, good: np.ndarray) -> float:
    """The share of the requests served in the service window that met the targets."""
    return float(np.sum(window.weight * good)) / max(float(window.weight.sum()), 1e-300)


def _prices(setup: RunSetup, measured: Measured, n_in: float, n_out: float) -> dict:
    """Cost per hour and per million input, output and all-in output tokens at the rates
    served (``_rates``), the GPU time split by the share that went to prompts."""
    price, gpus, share = setup.usd_per_gpu_hour, setup.total_gpus, measured.input_share

    def dollars(seconds, tokens):
        return usd_per_mtok(seconds, 1.0, tokens, price) if tokens else math.nan

    return {
        "usd_per_hour": gpus * price,
        "usd_per_m_input_tokens": dollars(gpus * share, n_in),
        "usd_per_m_output_tokens": dollars(gpus * (1.0 - share), n_out),
        "usd_per_m_output_tokens_all_in": dollars(float(gpus), n_out),
    }


def _run_energy(setup: RunSetup, measured: Measured, out_per_s: float) -> dict:
    """The energy fields (§G2) at the output rate served: the deployment's GPUs or pools'."""
    busy, mfu = measured.busy_fraction, measured.mfu
    if setup.pools is not None:
        return _pools_energy(setup.pools, out_per_s, busy, mfu)
    return _energy(setup.instance.setting, setup.total_gpus, out_per_s, busy, mfu)


def _tier_hit_rates(tier_tokens, arrivals: Arrivals, window: Window) -> dict:
    """``host_hit_rate`` and ``disk_hit_rate`` of the tiers a run had (§E13)."""
    names = ("host_hit_rate", "disk_hit_rate")
    return {n: _hit_rate(t, arrivals, window) for n, t in zip(names, tier_tokens or ())}


def _hit_rate(cached_tokens, arrivals: Arrivals, window: Window) -> float | None:
    """Prompt tokens found in the prefix cache over the prompt tokens of the requests that
    arrived in the service window (all of them where none did; None: no prefix cache)."""
    if cached_tokens is None:
        return None
    a = np.asarray(arrivals.arrival_s, dtype=float)
    judged = np.isfinite(cached_tokens) & (a >= window.opens_s) & (a <= window.closes_s)
    if not judged.any():
        judged = np.isfinite(cached_tokens)
    prompts = float(np.sum(arrivals.prompt_tokens[judged]))
    return float(np.sum(cached_tokens[judged]) / prompts) if prompts else 0.0


def _pools_energy(pools, output_tokens_per_s: float, busy: float, mfu: float) -> dict:
    """The energy fields of a deployment whose pools run on different GPUs: each pool's power
    at the run's busy time and MFU, added (per output token, per kW and per MW alike)."""
    parts = [_energy(s, n, output_tokens_per_s, busy, mfu) for s, n in pools]
    out = {
        "joules_per_output_token": sum(p["joules_per_output_token"] for p in parts),
        "it_power_kw": sum(p["it_power_kw"] for p in parts),
    }
    for name in ("output_tokens_per_s_per_kw_it", "output_tokens_per_s_per_mw_facility"):
        out[name] = 1.0 / sum(1.0 / p[name] for p in parts)
    if all("gco2_per_mtok" in p for p in parts):
        out["gco2_per_mtok"] = sum(p["gco2_per_mtok"] for p in parts)
    return out


def _energy(setting: Setting, gpus: int, output_tokens_per_s: float, busy: float, mfu: float):
    """The energy fields of a run (§G2) from what the engine measured: over the window the
    tensor cores work ``mfu / sustained fraction`` of the time, HBM the rest of the busy time."""
    from ..serving.energy import energy_columns

    compute = min(mfu / setting.gpu.sustained_flop_fraction, busy)
    cols = energy_columns(
        setting, float(gpus), output_tokens_per_s, 1.0, compute, max(busy - compute, 0.0)
    )
    out = {
        name: float(cols[name])
        for name in (
            "joules_per_output_token",
            "output_tokens_per_s_per_kw_it",
            "output_tokens_per_s_per_mw_facility",
        )
    }
    out["it_power_kw"] = float(cols["it_power_w_per_gpu"]) * gpus / 1e3
    if "gco2_per_mtok" in cols:
        out["gco2_per_mtok"] = float(cols["gco2_per_mtok"])
    return out
