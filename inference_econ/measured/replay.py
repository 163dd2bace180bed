"""Benchmarks replayed on the load engine (docs/model.md §F9): every latency of a Server,
Interactive or closed-loop row, and the throughput of a run whose steady state is not exact,
comes out of a simulated schedule (load: chunked or whole prompts batched with
decoding, queueing, the batch that actually forms), never from the row's limits.

* **Server / Interactive**: the most Poisson load whose p99 TTFT and p99 TPOT meet the row's
  limits (the load search of ``optimise.load_search``, as ``capacity`` runs it); throughput,
  mean and p99 TTFT and TPOT are those of a run at ``SUBMITTED_LOAD_SHARE`` of that load for
  an expected figure (a submitter's target rate sits a little below the most its run holds),
  at that load itself for the ideal bound.
* **Closed loop**: ``C`` clients, each sending its next request when its last one finishes
  (``simulate(..., clients=C)``), spread evenly over the row's instances.
* **Offline** (when the steady state is not exact: recompute admission with a batch the KV
  cache bounds, where preemption shapes the run): every request queued at t = 0, the
  throughput over the run.

A case (``LoadCase``) is everything a prediction depends on; rows with the same case share
one simulation, and cases whose instances differ only in a batch limit the run never reaches
(or in what the simulation does not read) share their runs (``_any_limit``). Lengths are
drawn the same way every time (seeded): a length with a standard deviation is log-normal with
that mean and deviation, truncated at the dataset's longest sample where it is known (its
mean kept: ``load.lengths``) and at the model's context window, one without is fixed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from array import array
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InfeasibleError
from ..load.arrivals import Arrivals, Traffic
from ..load.engine import PROMPTS_FIRST, EngineConfig, Instance
from ..load.lengths import Lengths
from ..load.results import LoadResult
from ..load.routing import RouterPolicy
from ..load.run import Run, instance_in, prefill_handoff, simulate_run, summarise_run
from ..load.targets import Targets
from ..model.mixed_step import EngineLayout
from ..optimise.load_search import (
    find_knee_from,
    grid_at_least,
    grid_at_most,
    grid_index,
    grid_nearest,
    grid_rate,
)
from ..serving.disaggregation import kv_transfer_s
from ..serving.setting import Setting
from .run_span import RunSpan, saturated_rate

#: Requests one instance serves in a Server run of the load search: enough for the run's
#: middle arrival to come ``FILL_TIMES`` times the time a request spends in the engine after
#: the first (the engine has filled by then: the keep-up test of §E4 compares the requests in
#: the system there and at the last arrival), at least the arrivals of ``SERVER_DURATION_S``
#: at the estimated rate, and at least its share of the requests the benchmark's run issues
#: (``LoadCase.issued``), within these bounds (p99s from at least 2,000 requests: the
#: 20th-largest value; at most ``SERVER_REQUESTS[1]`` for the CPU it costs).
SERVER_REQUESTS = (2000, 24000)
FILL_TIMES = 3.0
#: An MLPerf Server run lasts at least 10 minutes (LoadGen's ``mlperf.conf``:
#: ``*.Server.min_duration = 600000`` ms) and issues every sample of the benchmark's
#: performance set equally often (``sample_concatenate_permutation = 1`` for the LLM
#: benchmarks: at least ``performance_sample_count_override`` requests, ``LoadCase.issued``;
#: 8,313 for Llama 3.1 405B, hours at its load), its p99s over the whole run. A compute-bound
#: engine fills slowly near its most load, so a short run judges a load the benchmark holds as
#: one it cannot keep up with. A load is held when the run's p99s meet the limits
#: (``MLPerfRun``): LoadGen's rule, not the keep-up test of §E4.
SERVER_DURATION_S = 600.0
#: A Server or Interactive row's figures are read from a run at this share of the most load its
#: search held, where the p99 TTFT is ill-conditioned (MLPerf v5.1 Llama 2 70B Server on 8 B200:
#: 1.88 s there, 0.33 s at 0.99 of it); a submitter's target rate must pass a run whose work
#: varies by ``cv / sqrt(samples)`` (0.6 %), so it sits a little below. Chosen on the older
#: rounds' 416 Server and Interactive rows (median |error| 0.145 at 1, 0.137 at 0.995, 0.154 at
#: 0.99; ``benchmarks/server_share.py``, docs/model.md §F9) before the newer ones were predicted.
SUBMITTED_LOAD_SHARE = 0.995
#: Layouts of a Server or Offline row are simulated when their steady-state estimate is at
#: least this share of the best layout's (the others are left out: ``estimate``).
RANKING_SHARE = 0.8
#: A layout of a Server row is dropped after its load search's walk (``bracket``) when the
#: lowest load it failed at is below another layout's highest held load by this factor: its
#: answer lies below the failed load, the other's above the held one, so it serves at least
#: this much less load - more than a run's steady window can blur - and cannot be the row's
#: best layout. Its bisections (five of its seven runs) are not run.
BRACKET_MARGIN = 1.05
#: Runs of the Server load searches kept (``_run``), shared by ``bracket`` and ``replay``.
RUNS_KEPT = 512
#: Closed-loop and offline runs: this many requests per client or per running request, within
#: the bounds below (enough to reach the steady state several times over); a closed loop sends
#: at least ``FILL_PER_SLOT`` per client whatever the bound: more than 4,000 clients on an
#: instance (a decode pool of 48 attention ranks of 1,024 each) would otherwise never fill it,
#: each client sending a third of a request. An offline run's queue fills the batch anyway.
PER_SLOT, FILL_PER_SLOT = 6, 4
MIN_REQUESTS, MAX_REQUESTS = 400, 16000
#: LoadGen's Offline slack: it issues 1.1 x min_duration x the expected QPS samples
#: (``kSlack`` in loadgen/test_settings_internal.cc), so the run outlasts its minimum.
OFFLINE_SLACK = 1.1
#: The most requests per instance an MLPerf Offline row's run simulates; a longer LoadGen run
#: is this one extended by its steady middle (``RunSpan``). Not fewer: where outputs have a
#: heavy tail (DeepSeek-R1's, sd 4,868 tokens on a mean of 3,886) the batch fills with long
#: requests for as long as the run lasts, so a shorter run extended does not reach the longer
#: one's drain (MLPerf v6.0 DeepSeek-R1 Offline on 8 B200: 62.7k tok/s from 6,000 requests
#: extended to LoadGen's 9,880, 54.4k from the 9,880 themselves).
WHOLE_RUN_REQUESTS = 24000
#: Seed of every replayed run (the same draws for every row and every layout).
SEED = 0


@dataclass(frozen=True)
class LoadCase:
    """One benchmark configuration on one candidate layout: what its simulation depends on."""

    setting: Setting
    tensor: int
    pipeline: int
    replicas: int
    #: The attention's data-parallel ranks within an instance's tensor group (1: none).
    attention_ranks: int
    config: EngineConfig
    #: Prompt and output lengths: (mean, standard deviation) each, tokens.
    prompt: tuple[float, float]
    output: tuple[float, float]
    scenario: str
    limits: tuple[float, float] | None = None  # (p99 TTFT, p99 TPOT) seconds
    clients: int | None = None  # closed loop: clients per instance
    prefilled: bool = False  # disaggregated: the prompt's cache arrives from elsewhere
    #: Longest prompt and output of the row's dataset, tokens (inf: not known).
    maxima: tuple[float, float] = (math.inf, math.inf)
    #: Requests the benchmark's Server run issues at least, whole system (its performance
    #: sample count in MLPerf's equal-issue mode; 0: not known).
    issued: int = 0
    #: Share of the most load held at which a Server or Interactive row's figures are read
    #: (``SUBMITTED_LOAD_SHARE`` for an expected figure; 1 for the ideal bound).
    load_share: float = 1.0
    #: A disaggregated row's prefill instances (tensor, pipeline, replicas, attention ranks) when
    #: it states them: each prompt is prefilled there (its first token) and its KV cache sent
    #: to the decode instances (None: the decode instances alone, first tokens handed over).
    prefill: tuple[int, int, int, int] | None = None
    #: Throughput as MLPerf LoadGen measures it (an MLPerf row): every issued request's output
    #: over the run from the first issue to the last completion, its drain included
    #: (``RunSpan``); False: the engine's steady rate (``saturated_rate``, its service window).
    whole_run: bool = False
    #: The run issues exactly ``issued`` requests at t = 0 and ends at the last completion
    #: (trtllm-bench's dataset), rather than LoadGen's count for its minimum duration.
    dataset: bool = False
    #: Distinct prompts the run's requests were drawn from, each sent again (0: every prompt
    #: its own; ``Traffic.prompt_pool``): the engine's prefix cache serves the repeats.
    prompt_pool: int = 0


#: Quantities a closed-loop run's replay gives beside a loaded run's own
#: (``closed_forms.LOAD_QUANTITIES``): each request's time from its send to its last token (its
#: TTFT and its decode steps), mean and p99 over the run. A Server row's replay is a search for
#: its most load, not the run the row measured.
CLOSED_LOOP_QUANTITIES = ("e2e_latency", "e2e_latency_p99")
#: A closed loop's times (``Outcome.value``): its best layout is the one that decodes fastest.
LOOP_TIMES = ("tpot", "itl", "tpot_p99", "ttft", "ttft_p99", *CLOSED_LOOP_QUANTITIES)


@dataclass(frozen=True)
class Outcome:
    """What a replayed run measures, for the whole system (all replicas): output tokens/s,
    mean and p99 TPOT, TTFT and end-to-end latency (seconds), requests in flight; or why there
    is none."""

    throughput: float = math.nan
    tpot: float = math.nan
    tpot_p99: float = math.nan
    ttft: float = math.nan
    ttft_p99: float = math.nan
    e2e: float = math.nan
    e2e_p99: float = math.nan
    streams: float = math.nan
    rate_per_s: float = math.nan
    note: str = ""
    #: An MLPerf Offline run: its LoadGen throughput over its saturated rate (``drain_factor``).
    drain: float = math.nan

    @property
    def ok(self) -> bool:
        return math.isfinite(self.throughput) and self.throughput > 0

    def value(self, quantity: str) -> float:
        """The metric of a row's quantity (rows' units: seconds, tokens/s)."""
        return {
            "throughput": self.throughput,
            "tpot": self.tpot,
            "itl": self.tpot,
            "tpot_p99": self.tpot_p99,
            "ttft": self.ttft,
            "ttft_p99": self.ttft_p99,
            "e2e_latency": self.e2e,
            "e2e_latency_p99": self.e2e_p99,
            "user_speed": 1.0 / self.tpot if self.tpot > 0 else math.nan,
            "streams": self.streams,
        }.get(quantity, math.nan)


def lengths_of(mean: float, sd: float, cap: float) -> Lengths:
    """A fixed length, or a log-normal one of this mean and standard deviation, truncated at
    ``cap`` tokens with its mean kept (``load.lengths.truncated_mu``)."""
    if sd <= 0 or mean <= 1:
        return Lengths("fixed", float(max(1, round(mean))))
    sigma = math.sqrt(math.log1p((sd / mean) ** 2))
    return Lengths("lognormal", float(mean), float(max(cap, mean)), min(sigma, 4.0))


def traffic_of(case: LoadCase, requests: int, rate: float = 1.0) -> Traffic:
    """The case's requests: seeded lengths; Poisson arrivals at ``rate`` (unused by offline and
    closed-loop runs)."""
    window = case.setting.model.max_context_tokens or math.inf
    out_cap = case.output[0] + 4.0 * case.output[1]
    prompt = lengths_of(*case.prompt, cap=min(max(window - out_cap, 1.0), case.maxima[0]))
    output = lengths_of(*case.output, cap=min(max(window - case.prompt[0], 1.0), case.maxima[1]))
    pool = case.prompt_pool
    return Traffic(rate, prompt, output, requests=int(requests), seed=SEED, prompt_pool=pool)


@lru_cache(maxsize=256)
def instance(case: LoadCase):
    """The engine instance of a case (cached: the cases of a row's metrics share it)."""
    inst = _instance_of(case.setting, case.tensor, case.pipeline, case.attention_ranks, case.config)
    inst = _at_prompt(inst, case.prompt[0])
    if case.prefill is not None:
        try:  # a prefill pool that cannot hold the model makes the case infeasible, not the file
            _prefill_instance(case)
        except InfeasibleError as exc:
            raise InfeasibleError(f"its prefill instances: {exc}") from exc
    return inst


@lru_cache(maxsize=256)
def _instance_of(setting: Setting, tensor: int, pipeline: int, ranks: int, config: EngineConfig):
    """The engine instance of a setting on a layout under a scheduler: one for every case
    that runs it, whatever its lengths, limits or scenario (its step table is built once)."""
    layout = EngineLayout(tensor * pipeline, pipeline, float(ranks))
    return instance_in(setting, layout, config)


@lru_cache(maxsize=256)
def _at_prompt(inst: Instance, prompt: float) -> Instance:
    """An instance for a case's mean prompt (``Instance.at_prompt``), one for every case of
    that prompt (the simulations' own caches key on it)."""
    return inst.at_prompt(prompt)


@lru_cache(maxsize=4096)
def replay(case: LoadCase, requests: int | None = None) -> Outcome:
    """The outcome of a case (``requests`` per instance: the scenario's own count by default)."""
    try:
        inst = instance(case)
    except InfeasibleError as exc:
        return Outcome(note=f"infeasible: {exc}")
    if case.scenario in ("server", "interactive"):
        return _server(case, inst, requests)
    if case.scenario == "closed_loop":
        return _closed(case, inst, requests)
    return _offline(case, inst, requests)


def _scaled(case: LoadCase, result, rate: float = math.nan) -> Outcome:
    """A run of one instance as the whole system's figures (``replicas`` instances)."""
    r = case.replicas
    return Outcome(
        throughput=r * result.output_tokens_per_s,
        tpot=result.tpot_s.mean,
        tpot_p99=result.tpot_s.p99,
        ttft=result.ttft_s.mean,
        ttft_p99=result.ttft_s.p99,
        e2e=result.e2e_s.mean,
        e2e_p99=result.e2e_s.p99,
        streams=r * result.mean_batch,
        rate_per_s=rate,
    )


def _count(case: LoadCase, slots: float, requests: int | None, clients: bool = False) -> int:
    bounded = np.clip(PER_SLOT * slots, MIN_REQUESTS, MAX_REQUESTS)
    return int(requests or max(bounded, math.ceil(FILL_PER_SLOT * slots) if clients else 0))


def offline_requests(case: LoadCase, inst) -> int:
    """Requests one instance serves in an MLPerf Offline run: LoadGen issues one query of
    max(min_query_count, 1.1 x min_duration x expected QPS) samples (``kSlack`` 1.1 and
    ``*.Offline.min_duration`` 600 s; the LLM benchmarks' min_query_count is their performance
    sample count, ``LoadCase.issued``), the expected QPS here the steady-state estimate's; this
    instance's share. A trtllm-bench run (``LoadCase.dataset``) serves its dataset, this
    instance's share of ``issued`` (the busiest's, the run lasting as long as it does)."""
    if case.dataset:  # the busiest instance's: some take one fewer, or none
        return max(1, math.ceil(case.issued / case.replicas))
    rate = estimate(case).rate_per_s
    target = OFFLINE_SLACK * SERVER_DURATION_S * rate if np.isfinite(rate) else 0.0
    return max(1, int(max(float(case.issued), target) / case.replicas))


def _offline(case: LoadCase, inst, requests) -> Outcome:
    """Every request queued at t = 0 (MLPerf Offline): the output tokens per second while the
    engine is saturated - from the start until the last request is admitted, while a queue
    waits (``saturated_rate``) - or, for an MLPerf or trtllm-bench row (``whole_run``), over
    the whole run to its last completion, as many requests as it issues (``offline_requests``)."""
    slots = inst.config.max_batch_requests
    issued = offline_requests(case, inst) if case.whole_run else 0
    if case.whole_run and requests is None:  # the run's own count, within the CPU it costs
        floor = 1 if case.dataset else MIN_REQUESTS  # a dataset's run is its own, however short
        requests = int(np.clip(issued, floor, WHOLE_RUN_REQUESTS))
    n = _count(case, slots, requests)
    run = _queued_run(inst, traffic_of(case, n), case.prefilled)
    if run is None:
        return Outcome(note="infeasible: no request fits in the KV cache of an instance")
    if case.whole_run:  # the benchmark's whole run, as many requests as it issues
        if run.span is None:
            return Outcome(note="infeasible: no request of the run finished")
        whole = run.span.tokens_per_s(issued)
        cut = (
            {"ttft": math.nan, "ttft_p99": math.nan, "note": _part_run(issued, n)}
            if issued > n
            else {}
        )
        return dataclasses.replace(
            _scaled(case, run.result),
            throughput=(case.issued / issued if case.dataset else case.replicas) * whole,
            drain=whole * run.span.per_request_s / run.span.tokens_per_request,
            **cut,  # a first token waits behind every request before it: the part run's is short
        )
    return dataclasses.replace(
        _scaled(case, run.result), throughput=case.replicas * run.saturated_tokens_per_s
    )


def _part_run(issued: int, n: int) -> str:
    """Why a TTFT of a run replayed in part is out of scope (its throughput extends; not it)."""
    return f"out of scope: the TTFT of a run of {issued:,} requests queued at once (the replay runs {n:,})"


@dataclass(frozen=True)
class QueuedRun:
    """What ``_offline`` reads of a run with every request queued at t = 0: its summary, its
    span (``RunSpan``) and its saturated rate (``saturated_rate``)."""

    result: LoadResult
    span: RunSpan | None
    saturated_tokens_per_s: float


#: Records of runs kept by all they depend on but their instance's batch limit: the most kept.
LIMIT_FREE_KEPT = 128
_LIMIT_FREE: dict[tuple, list] = {}


def _any_limit(inst, run: Run):
    """``simulate_run(inst, run)``, or the record of a run of the same requests on an instance
    that differs at most in its batch limit (``_instance_key``), the same limit or two that
    the run never reached: the limit is compared with the batch alone, so below it every
    decision is the same (``RunRecord.peak_batch``). Rows that state different batch limits,
    or assumptions the instance does not read, share their runs."""
    key = _instance_key(inst)
    arrivals = run.arrivals()
    if key is None or arrivals.sharing is not None or run.group != 1:
        return simulate_run(inst, run)
    stop = None if run.stop is None else tuple(sorted(run.stop.items()))
    key += (_digest(arrivals), run.prefilled, run.clients, stop)
    limit = inst.config.max_batch_requests
    for kept_limit, record in _LIMIT_FREE.get(key, ()):
        if kept_limit == limit or record.peak_batch < min(limit, kept_limit):
            return record
    record = simulate_run(inst, run)
    _LIMIT_FREE.setdefault(key, []).append((limit, record))
    while len(_LIMIT_FREE) > LIMIT_FREE_KEPT:
        del _LIMIT_FREE[next(iter(_LIMIT_FREE))]
    return record


@lru_cache(maxsize=256)
def _instance_key(inst) -> tuple | None:
    """What the simulation reads of an instance but its batch limit: the model (its context
    window), its workload and layout, the scheduler's other settings, the KV capacity and the
    step table's numbers; None where it reads more (a draft, KV tiers) or the limit is split
    (attention ranks)."""
    if inst.draft is not None or inst.tiers or int(round(inst.layout.attention_divisor)) >= 2:
        return None
    config = tuple(
        getattr(inst.config, f.name)
        for f in dataclasses.fields(inst.config)
        if f.name != "max_batch_requests"
    )
    table = hashlib.blake2b()
    for name, value in sorted(vars(inst.table).items()):  # its rows by their bits
        if isinstance(value, (list, array, np.ndarray)):
            value = np.asarray(value)
            value = f"{name} {value.dtype}{value.shape}".encode() + value.tobytes()
        table.update(value if isinstance(value, bytes) else f"{name} {value!r}".encode())
    return (
        inst.setting.model,
        inst.work,
        inst.layout,
        config,
        inst.kv_capacity,
        table.hexdigest(),
    )


def _digest(arrivals: Arrivals) -> str:
    """A digest of the requests' arrival times and lengths, bit for bit."""
    h = hashlib.blake2b()
    for a in (arrivals.arrival_s, arrivals.prompt_tokens, arrivals.output_tokens):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


@lru_cache(maxsize=64)
def _queued_run(inst, traffic: Traffic, prefilled: bool) -> QueuedRun | None:
    """The run of ``traffic``'s requests all queued at t = 0 on ``inst`` (None: none fits its
    KV cache), kept by what it depends on alone: the offline cases of rows that differ in
    what the run does not read (the requests LoadGen issues, the limits) share it."""
    s = traffic.stream()
    queued = Arrivals(np.zeros(len(s)), s.prompt_tokens, s.output_tokens, s.sharing)
    run = Run(traffic, prefilled=prefilled, requests=queued)
    record = _any_limit(inst, run)
    if prefilled:
        record = handed_first_tokens(inst, record)
    if record.rejected.all():
        return None
    return QueuedRun(summarise_run(inst, record, run), RunSpan.of(record), saturated_rate(record))


def drain_factor(case: LoadCase) -> float:
    """An MLPerf Offline row's LoadGen throughput over its engine's saturated rate, from one
    simulated run (``replay``): what the fit multiplies the row's steady state by, so the
    terms it fits are the steady engine's and the drain stays the simulation's."""
    return replay(case).drain


def handed_first_tokens(inst, record):
    """A decode instance's run record whose prefilled requests got their first token from a
    prefill instance of the same size, the KV cache's transfer before they arrived (as
    ``simulate_decode_pool`` reads a decode pool, §E5): each one's arrival and first token
    are moved back by that transfer, so its TPOT is LoadGen's (last - first token) / (tokens
    - 1), and its TTFT, the prefill pool's, is not simulated (zero here)."""
    a = record.arrivals
    moved = kv_transfer_s(inst.setting, a.prompt_tokens.astype(float), inst.gpus)
    sent = a.arrival_s - moved
    first = np.where(np.isnan(record.first_token_s), sent, record.first_token_s)
    arrivals = dataclasses.replace(a, arrival_s=sent)
    return dataclasses.replace(record, arrivals=arrivals, first_token_s=first)


def _closed(case: LoadCase, inst, requests) -> Outcome:
    """``clients`` closed-loop clients per instance, sending this instance's share of the
    requests the run issued where the row says (``LoadCase.issued``: its figures depend on
    how long the loop ran, its ramp-down included; at most ``WHOLE_RUN_REQUESTS``, where
    the ramp-down, about half a request a client, is a share clients / 48,000 of the run),
    else ``_count``'s."""
    share = min(round(case.issued / case.replicas), WHOLE_RUN_REQUESTS) if case.issued else 0
    n = _count(case, case.clients, requests or share or None, clients=True)
    run = Run(traffic_of(case, n), clients=case.clients, prefilled=case.prefilled)
    record = simulate_run(inst, run)
    if case.prefilled:
        record = handed_first_tokens(inst, record)
    if record.rejected.all():
        return Outcome(note="infeasible: no request fits in the KV cache of an instance")
    return _scaled(case, summarise_run(inst, record, run))


@dataclass(frozen=True)
class MLPerfRun(LoadResult):
    """A Server run judged as MLPerf LoadGen judges it: the load is held when the p99 TTFT and
    TPOT over the run (``SERVER_DURATION_S`` of arrivals) meet the limits and every request was
    served. Whether the backlog still grows at the run's end (§E4's keep-up test) is not part
    of the verdict: an engine still filling after ten minutes within its limits passes the
    benchmark, and one the load outgrows fails it through its p99 TTFT."""

    #: The run's span, for LoadGen's throughput over a run of its own length (``RunSpan``).
    span: RunSpan | None = None

    @classmethod
    def of(cls, result: LoadResult, span: RunSpan | None = None) -> MLPerfRun:
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
        return cls(**fields, span=span)

    def with_targets(self, targets: Targets) -> LoadResult:
        judged = LoadResult.with_targets(self, targets)
        # a run stopped once it certainly missed the targets fails, whatever its p99s so far
        held = judged.stopped_for is None and targets.met(judged.p99) and judged.rejected == 0
        return dataclasses.replace(judged, meets_targets=None if targets.empty else held)


def _server(case: LoadCase, inst, requests) -> Outcome:
    """The most Poisson load (requests/s of the whole system) whose p99 TTFT and TPOT meet the
    limits, searched as ``capacity`` searches it from the steady-state estimate, and the run
    at ``case.load_share`` of that load (the same requests and draws; ``SUBMITTED_LOAD_SHARE``
    for an expected figure, the most load itself for the ideal bound)."""
    if requests is None:
        requests = server_requests(case, estimate(case))
    knee = _search(case, inst, requests)
    if knee.at_max is None or knee.max_rate_per_s <= 0:
        return Outcome(note=f"infeasible: no load meets the row's limits ({knee.reason})")
    if case.load_share == 1.0:
        rate, run = knee.max_rate_per_s, knee.at_max
    else:
        rate = case.load_share * knee.max_rate_per_s
        run = _run(case, inst, requests, rate, None)
    out = _scaled(case, run, rate)
    if case.whole_run and run.span is not None:  # LoadGen's: its own run, drain included
        n = loadgen_server_requests(case, rate)
        out = dataclasses.replace(out, throughput=case.replicas * run.span.tokens_per_s(n))
    return out


def loadgen_server_requests(case: LoadCase, rate: float) -> int:
    """Requests one instance serves in an MLPerf Server run at ``rate`` (whole system): LoadGen
    issues until both ``min_duration`` (``SERVER_DURATION_S``) and min_query_count (the
    performance sample count, ``LoadCase.issued``) are met; this instance's share."""
    return max(2, int(max(float(case.issued), rate * SERVER_DURATION_S) / case.replicas))


def _search(case: LoadCase, inst, requests, refine: bool = True):
    """``_server``'s load search: ``find_knee``'s on the lattice from 0.8 x the steady-state
    estimate, found from a guess of the answer (``find_knee_from``: the same answer where the
    verdicts are monotone in the load, in fewer runs; ``_guess``). ``refine``: False
    stops at a bracket (a load held and one failed above it, not bisected)."""
    ttft, tpot = case.limits
    targets = Targets(ttft_p99_s=ttft, tpot_p99_s=tpot)
    est = estimate(case)
    if requests is None:
        requests = server_requests(case, est)
    start = float(f"{0.8 * est.rate_per_s:.3g}")
    guess, held = _guess(case, requests, targets, start, est.rate_per_s)
    # only verdicts are read, and those are the whole runs': a failing run stops once it
    # certainly misses the limits, a holding one is whole
    knee = find_knee_from(
        lambda rate: _run(case, inst, requests, rate, None),
        targets,
        start,
        guess,
        early=lambda rate: _run(case, inst, requests, rate, targets),
        held=held,
        refine=refine,
    )
    if refine and knee.max_rate_per_s > 0 and est.rate_per_s > 0:
        _SHARES[configuration(case)] = _SHARES[_alike(case)] = knee.max_rate_per_s / est.rate_per_s
    return knee


#: The guess of a Server search's answer over its estimate before any search of a like case
#: (``_alike``). Ideal engine: 0.99, the training file's median. Engine profiles: 0.97, on or
#: just below the answer (from there two runs; each point below, a held run more): the first
#: answers sat 3 points above 0.94 in 6 of the training file's 11, 23 of a newer MLPerf
#: sample's 49. Cost only.
GUESS_SHARE, GUESS_SHARE_IDEAL = 0.97, 0.99
#: The last answer over its estimate by configuration searched (``configuration``, ``_alike``).
_SHARES: dict[tuple, float] = {}


def configuration(case: LoadCase) -> tuple:
    """What the rows and layouts of one benchmark configuration share, under any preset: the
    model, the GPU, the lengths and the limits (its layouts' answers sit alike against their
    estimates)."""
    return (case.setting.model, case.setting.gpu, case.prompt, case.output, case.limits)


def _alike(case: LoadCase) -> tuple:
    """Configurations whose answers sit alike against their estimates: one model, GPU and limits,
    mean lengths in one ninth of an octave (other submitters' runs of a benchmark differ by a few
    tokens), attention DP or not. A guess from them where the case's own configuration was never
    searched: the newer MLPerf file 490 -> 473 s of CPU (ideal 451 -> 424), no answer moved."""
    bins = tuple(round(8.0 * math.log2(max(x[0], 1.0))) for x in (case.prompt, case.output))
    return (case.setting.model, case.setting.gpu, case.limits, bins, case.attention_ranks > 1)


def _guess(case: LoadCase, requests: int, targets: Targets, start: float, estimated: float):
    """(the guess of a Server search's answer, the most load a kept run of it held or None):
    the grid point nearest (the one below put 88 of the newer MLPerf file's 338 first guesses a
    point under the answer) its estimate times the last share (``_SHARES``) of its
    configuration's, else a like one's (``_alike``), else ``GUESS_SHARE``; at least a load a
    kept run held, below one it failed."""
    default = GUESS_SHARE_IDEAL if case.load_share == 1.0 else GUESS_SHARE
    share = _SHARES.get(configuration(case), _SHARES.get(_alike(case), default))
    at = grid_nearest(start, estimated * share)
    held, failed = 0.0, math.inf
    for key, run in _RUNS.items():
        if key[0] == case and key[1] == requests and run.stopped_for in (None, targets):
            if run.with_targets(targets).meets_targets:
                held = max(held, key[2])
            else:
                failed = min(failed, key[2])
    if math.isfinite(failed):
        above = grid_at_least(start, failed)
        at = min(at, above - 1) if above is not None else at
    if held > 0:
        below = grid_at_most(start, held)
        at = max(at, below) if below is not None else at
    return grid_rate(start, at), (held or None)


def server_requests(case: LoadCase, est: Outcome) -> int:
    """Requests one instance serves in a Server run of ``case`` (``SERVER_REQUESTS``): 2 x
    ``FILL_TIMES`` x the requests in the engine at the estimated load, its arrivals over
    ``SERVER_DURATION_S``, or its share of the requests the benchmark issues, the most of
    them, within the bounds."""
    rate = est.rate_per_s / case.replicas
    held = 2.0 * FILL_TIMES * rate * case.output[0] * est.tpot
    issued = case.issued / case.replicas  # the benchmark's own run, this instance's share
    return int(np.clip(max(held, rate * SERVER_DURATION_S, issued), *SERVER_REQUESTS))


_RUNS: dict[tuple, LoadResult] = {}


def _run(case: LoadCase, inst, requests: int, rate: float, stop: Targets | None) -> LoadResult:
    """One run of a Server search at ``rate`` (kept: ``bracket`` and ``replay`` share it),
    stopped once it certainly misses ``stop``; a whole run answers for a stopped one."""
    whole = (case, requests, rate, None)
    hit = _RUNS.get(whole) if stop is None else _RUNS.get(whole, _RUNS.get(whole[:3] + (stop,)))
    if hit is not None:
        return hit
    t = traffic_of(case, requests).at_rate(rate)
    # (a prefilled request's TPOT starts at its arrival, read after the run: no early stop)
    limits = None if stop is None or case.prefilled else stop.limits
    if case.prefill is not None:
        record = _through_prefill_pool(case, inst, t)
    else:
        # this instance's share of the arrivals: at random, or in turn behind a round robin
        share = Run(
            t, case.replicas, router=case.config.router, prefilled=case.prefilled, stop=limits
        )
        record = _any_limit(inst, share)
    if case.prefilled and case.prefill is None:
        record = handed_first_tokens(inst, record)
    # one instance's rates, judged as MLPerf LoadGen judges a run (``MLPerfRun``)
    summary = summarise_run(inst, record, Run(t))
    result = MLPerfRun.of(summary, RunSpan.of(record, summary.output_tokens_per_s))
    if record.stopped:
        result = dataclasses.replace(result, stopped_for=stop)
    key = whole if not record.stopped else whole[:3] + (stop,)
    _RUNS[key] = result
    while len(_RUNS) > RUNS_KEPT:
        del _RUNS[next(iter(_RUNS))]
    return result


#: How a disaggregated row's prompts reach its prefill instances (``_through_prefill_pool``):
#: the shortest queue, as workers pulling from one queue take them.
PREFILL_ROUTER: RouterPolicy = "least_outstanding"


@lru_cache(maxsize=64)
def _prefill_instance(case: LoadCase):
    """A prefill instance of a disaggregated case (``LoadCase.prefill``)."""
    tensor, pipeline, _, ranks = case.prefill
    layout = EngineLayout(tensor * pipeline, pipeline, float(ranks))
    return instance_in(case.setting, layout, case.config).at_prompt(case.prompt[0])


def _through_prefill_pool(case: LoadCase, inst, traffic: Traffic):
    """One decode instance's run record of a disaggregated case whose prefill pool is given,
    as ``simulate`` serves a disaggregated deployment (``run.prefill_handoff``,
    docs/model.md §E5). The prefill instances take the prompts from one queue, each the next
    when it has room (Dynamo's prefill workers pull remote prefill requests from one queue: its
    "Architecture Flow", v0.7-v0.8), simulated as up to ``GROUP`` instances behind a
    join-the-shortest-queue router (``PREFILL_ROUTER``). The record's arrivals are the
    requests' own and their first tokens the prefill pool's, so its TTFT and TPOT are
    LoadGen's."""
    pre = _prefill_instance(case)
    hand = prefill_handoff(
        pre,
        case.setting,
        case.setting,
        inst.gpus,
        traffic,
        case.prefill[2],
        case.replicas,
        PREFILL_ROUTER,
        taken_only=True,
    )
    record = simulate_run(inst, Run(traffic, prefilled=True, requests=hand.handed))
    sent = hand.stream.arrival_s[hand.order]
    return dataclasses.replace(
        record,
        arrivals=Arrivals(sent, hand.handed.prompt_tokens, hand.handed.output_tokens),
        first_token_s=sent + hand.ttft_s[hand.order],
    )


def fails_at(case: LoadCase, rate: float) -> bool:
    """Whether a Server case's run at the point of its search's rate grid at or below
    ``rate`` (requests/s of the whole system) misses the row's limits: one run, stopped once
    its verdict is certain and kept for the search, which reads it if it comes there. Where
    the verdicts are monotone in the rate, the case holds no load at or above that point."""
    try:
        inst = instance(case)
    except InfeasibleError:
        return True
    ttft, tpot = case.limits
    targets = Targets(ttft_p99_s=ttft, tpot_p99_s=tpot)
    est = estimate(case)
    start = float(f"{0.8 * est.rate_per_s:.3g}")
    point = grid_rate(start, grid_index(start, rate))
    if point > rate * (1 + 1e-12):  # below the grid's first point: nothing to judge
        return False
    run = _run(case, inst, server_requests(case, est), point, targets)
    return not run.with_targets(targets).meets_targets


#: The module's kept outcomes, brackets and runs by name: what ``clear`` empties, each decided
#: by the module's settings (``WHOLE_RUN_REQUESTS``, ``SERVER_REQUESTS``).
CACHES = ("replay", "bracket", "estimate", "_queued_run", "_RUNS", "_LIMIT_FREE", "_SHARES")


def clear() -> None:
    """Forget every outcome, bracket and run kept (tests that change the module's settings)."""
    for name in CACHES:
        cache = globals()[name]
        cache.cache_clear() if hasattr(cache, "cache_clear") else cache.clear()


@lru_cache(maxsize=4096)
def bracket(case: LoadCase) -> tuple[float, float]:
    """(the highest load held, the lowest load failed above it) of a Server case's load search
    after its walk, requests/s of the whole system (0 held: none; inf failed: the largest load
    searched still holds; (0, 0): the case is infeasible). ``replay`` then bisects between
    them with the same runs."""
    try:
        inst = instance(case)
    except InfeasibleError:
        return 0.0, 0.0
    knee = _search(case, inst, None, refine=False)
    lo = knee.max_rate_per_s
    failed = [r.rate_per_s for r in knee.evaluated if r.rate_per_s > lo and not r.meets_targets]
    return lo, min(failed, default=math.inf)


@lru_cache(maxsize=4096)
def estimate(case: LoadCase) -> Outcome:
    """A steady-state estimate of a served case (no simulation): the largest batch whose mean
    step - decoding requests at the mean context plus the prompts that replace them, spread
    over the steps - stays within the TPOT limit (or the largest the batch limit, the KV cache
    and, where prompts share steps with decoding, the step's token budget allow), and its
    throughput. It ranks a row's layouts and starts the load search; no prediction is read
    from it (cached: a row's search, its ranking and its layouts' walks read it many times)."""
    try:
        inst = instance(case)
    except InfeasibleError as exc:
        return Outcome(note=f"infeasible: {exc}")
    n_in, n_out = case.prompt[0], max(case.output[0], 1.0)
    ctx = n_in + n_out / 2.0
    per = float(inst.positions(ctx))
    if case.config.admission == "no_evict":
        held = inst.kv_capacity / max(float(inst.held(n_in + n_out)), 1.0)
    else:
        held = inst.kv_capacity / max(float(inst.held(ctx)), 1.0)
    top = max(1.0, min(float(case.config.max_batch_requests), held))
    if not case.prefilled and inst.config.prefill not in PROMPTS_FIRST:
        # each step takes in the prompts of the requests it finishes, beside its decoding
        top = max(1.0, min(top, inst.config.step_token_budget / (1.0 + n_in / n_out)))
    limit = case.limits[1] if case.limits else math.inf
    best = None
    for B in np.unique(np.geomspace(1.0, top, 32).round()):
        prompts = 0.0 if case.prefilled else B * n_in / n_out
        tokens = int(min(B + prompts, inst.table.max_tokens))
        q = B * per
        chunks = B / n_out if prompts else 0.0
        attended = prompts * float(inst.positions(n_in / 2.0))
        t = inst.table.time_s(tokens, q, q + attended, B + chunks, 1.0, 0.0, attended)
        if best is None or t <= limit:
            best = (B, t)
        if t > limit:
            break
    B, t = best
    rate = case.replicas * B / (n_out * t)
    return Outcome(
        throughput=rate * n_out, tpot=t, tpot_p99=t, streams=case.replicas * B, rate_per_s=rate
    )
