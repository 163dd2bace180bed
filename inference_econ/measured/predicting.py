"""Predicting measured rows: every row's benchmark replayed on the model (docs/model.md §F9).

Each row runs on the engine it names (``select_engine``: its family, version and platform;
the ideal engine under ``paper`` and ``refined``), whose scheduler limits and policies are
the engine's own defaults (or the row's stated caps). Rows whose benchmark is a steady state
are closed forms of step times: an offline run at the batch the engine settles at (where that
steady state is exact), a static batch (one prefill, then decode), one prompt for a batch-1
time to first token. Rows that run under load - Server and Interactive at the most load
their limits allow, closed-loop concurrency, and offline runs shaped by preemption - are
simulated on the load engine (``replay``). Where a row does not state its layout, every
tensor-parallel split of its GPUs (under the ideal engine on PCIe cards, tensor x pipeline)
is tried and the best kept (the operator tunes it).

``Plan`` holds the steady rows' steps and how each metric follows from their times, so
calibration can re-time the same steps under other efficiency terms without rebuilding them;
steps are grouped by model, GPU, precision and layout and evaluated as arrays. Rows are
predicted once per configuration: a file of many rows that repeat configurations costs what
its distinct configurations cost.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..errors import InfeasibleError, SpecError
from ..load.engine import EngineConfig
from ..model.assumptions import Assumptions, preset
from ..model.efficiency import StepWork, concatenate
from ..model.latency import StepModel, prefill_step_model, stated_experts
from ..model.mixed_step import EngineLayout, mixed_step_s, mixed_step_work
from ..model.workload import compile_workload
from ..serving.setting import Setting
from ..specs.engine import (
    RUNTIME_UNKNOWN_HOST_OVERHEAD_EXPOSED,
    EngineProfile,
    load_engine,
    select_engine,
    split_engine,
)
from . import engine_words, layouts
from . import replay as rp
from . import semantics as sem
from .reading import SHARED, MeasuredRow

#: Metrics where a larger prediction is better (throughputs, speeds); the rest are times.
HIGHER = ("throughput", "user_speed", "streams")
#: Micro-benchmark quantities where larger is better (bus bandwidth, GEMM and stream rates).
HIGHER_MICRO = ("busbw", "gemm_flops", "stream")


def larger_is_better(quantity: str) -> bool:
    """Whether a larger value of a measured quantity is the better one (a rate, not a time)."""
    return quantity in HIGHER + HIGHER_MICRO


#: Quantities measured in time (the row's unit is ms, s or us).
TIMES = ("tpot", "tpot_p99", "itl", "ttft", "ttft_p99", "ttft_single")
#: Scenarios simulated on the load engine; the others are steady states.
LOADED = ("server", "interactive", "closed_loop")
#: Scenarios an engine runs as offline work (vLLM's LLM class defaults); the rest are served.
OFFLINE_SCENARIOS = ("offline", "static")
#: The ideal engine of the paper and refined presets: every request the KV cache holds may
#: run (at most 16,384), 8,192 tokens per step, prompts in chunks next to decoding.
IDEAL_ENGINE = EngineConfig(16384, 8192, "recompute", "chunked")
#: Tokens per step the ideal engine tries on a row under latency limits (Server, Interactive),
#: keeping the best, as an operator tunes ``max_num_batched_tokens`` (``max_num_tokens``): a
#: step of 8,192 prompt tokens can outlast the TPOT limit by itself on a slow GPU (Llama 3.1
#: 8B in FP8 on an H200 NVL: ~0.12 s of arithmetic against 0.1 s), which then caps the load,
#: while smaller chunks keep decoding within it.
IDEAL_STEP_BUDGETS = (512, 2048, 8192)


@dataclass(frozen=True)
class RowEngine:
    """The engine a row runs on: its profile (None: the ideal engine), its scheduler and how
    the output names it."""

    profile: EngineProfile | None
    config: EngineConfig
    label: str


def for_layout(found: RowEngine, cand: Candidate, row: MeasuredRow | None = None) -> RowEngine:
    """A row's engine on a candidate layout: with data-parallel attention on an engine whose
    limits hold per rank (``semantics.CAP_PER_ATTENTION_RANK``: TensorRT-LLM, vLLM; SGLang's
    are the instance's), each of the ``cand.attention_ranks`` ranks schedules its own requests, so an
    engine profile's limits, stated or default, are per rank (``EngineConfig.per_instance``;
    a cap per instance would be contradicted by measured runs holding more requests than it),
    and so is the cap a row states under the ideal engine (whose own default is no cap)."""
    if not cand.attention_dp:
        return found
    if found.profile is not None:
        family = found.profile.family
    else:
        family = split_engine(row.engine)[0].lower() if row is not None and row.engine else ""
    if family not in sem.CAP_PER_ATTENTION_RANK:
        return found
    if found.profile is not None:
        return dataclasses.replace(found, config=found.config.per_instance(cand.attention_ranks))
    if row is None or not row.batch_cap:
        return found
    cap = int(row.batch_cap) * cand.attention_ranks
    return dataclasses.replace(
        found, config=dataclasses.replace(found.config, max_batch_requests=cap)
    )


def row_engine(row: MeasuredRow, base: Assumptions, engine=None) -> RowEngine | str:
    """The engine of a row under ``base``, or the status saying why there is none: under the
    achievable preset the row's engine (or ``engine``, a name, "family@version", a path or a
    profile) at the row's version on its platform; never another engine's profile."""
    offline = row.scenario in OFFLINE_SCENARIOS
    cap = int(row.batch_cap) if row.batch_cap else None
    if base.engine is None:
        return RowEngine(
            None, dataclasses.replace(IDEAL_ENGINE, max_batch_requests=cap or 16384), "ideal"
        )
    name = engine if engine is not None else row.engine
    if name is None:
        return (
            "unresolved: engine unknown (the row names no serving engine: give an engine "
            "column, or --engine NAME)"
        )
    version = getattr(row, "engine_version", None)
    platform = getattr(row, "platform", None) or engine_words.platform_of(row.gpu)
    try:
        prof = select_engine(name, version, platform)
    except SpecError as exc:
        return f"unresolved: engine {_name(name)!r}: {exc.problem}"
    batch, budget = prof.scheduler_limits(row.gpu, offline)
    if row.token_budget:  # the budget the row ran with (the ideal engine tunes its own)
        budget = int(row.token_budget)
    # an MLPerf row runs the engine under the benchmark's harness, with its scheduler flags
    model = row.arch.name if row.arch is not None else None
    sc = row.scenario
    mlperf = row.benchmark and prof.harness_applies("mlperf", version, model, sc)
    harness = "mlperf" if mlperf else None
    admission, prefill = prof.scheduler_policy(harness, version, model, sc)
    steps = prof.harness_scheduler_steps(harness, version, model, sc)
    balancing = prof.harness_adp_balancing(harness, version, model, sc)
    # the host work a step waits for depends on the runtime (§F5): a harness names the one it
    # runs the model on; a row stating no version (nor an engine given) runs one not known,
    # whose host work is charged as by an engine that waits for it
    exposed = prof.harness_host_overhead_exposed(harness, version, model, sc)
    unknown = exposed is None and not version and engine is None
    if unknown:
        exposed = RUNTIME_UNKNOWN_HOST_OVERHEAD_EXPOSED
    if exposed is not None and exposed != prof.host_overhead_exposed:
        prof = prof.with_terms(host_overhead_exposed=exposed)
    else:
        unknown = False
    if row.fused_allreduce:  # as the row states its engine was built (§F6)
        prof = prof.with_terms(gemm_allreduce_overlap=1.0)
    if row.kv_cache_fraction is not None:  # as the row states its engine was run (§F8)
        if prof.kv_cache_fraction_of != "free":
            return (
                f"unresolved: engine {prof.name!r}: the row states kvcache_free_gpu_mem_frac, "
                "TensorRT-LLM's share of the memory left after the weights, and this engine "
                "sizes its KV cache from all memory (drop the statement from this row)"
            )
        prof = prof.with_terms(kv_cache_memory_fraction=row.kv_cache_fraction)
    # per instance: ``for_layout`` spreads it over attention ranks itself; with attention DP
    # each rank schedules its own requests (``EngineConfig.rank_scheduling``)
    config = EngineConfig(
        cap or batch,
        budget,
        admission,
        prefill,
        scheduler_steps=steps,
        per_attention_rank=False,
        rank_scheduling=True,
        adp_balancing=balancing,
    )
    label = prof.name if (version or engine is not None) else f"{prof.name} (version not stated)"
    if row.token_budget:
        label += f", {budget:,} tokens a step as stated"
    if row.fused_allreduce:
        label += ", GEMM and all-reduce fused as stated"
    if row.kv_cache_fraction is not None:
        label += f", KV cache {row.kv_cache_fraction:g} of the free memory as stated"
    if unknown:
        label += ", host overheads charged"
    issued = row.lengths.issued if row.lengths is not None else 0
    if row.scenario == "closed_loop" and issued:  # the run's own count (a ``requests`` column)
        label += f", the run's {issued:,} requests replayed"
    if harness:
        multi = f", {steps} decode steps per schedule" if steps > 1 else ""
        if balancing is not None:
            multi += f", attention-DP balancing {balancing[0]}/{balancing[1]} steps"
        if exposed is not None:
            multi += ", host overheads " + ("hidden" if exposed == 0.0 else "charged")
        label += f", {harness} harness ({prefill} prompts, {admission} admission{multi})"
    return RowEngine(prof, config, label)


def resolve_engines(rows, base: Assumptions, engine=None) -> dict:
    """``row_engine`` of every resolved end-to-end row, by row index."""
    return {
        i: row_engine(r, base, engine)
        for i, r in enumerate(rows)
        if r.kind == "end-to-end" and r.resolved
    }


@dataclass(frozen=True)
class Candidate:
    """One layout tried for a row: instances of ``gpus`` GPUs (tensor x pipeline),
    ``replicas`` of them, attention data parallel or not, expert parallel or not; under the
    ideal engine, a row under load also tries its tokens per step (None: the engine's)."""

    tensor: int
    pipeline: int
    replicas: int
    #: The attention's data-parallel ranks within the tensor group (1: tensor-parallel
    #: attention; ``tensor``: each GPU attends alone).
    attention_ranks: int
    expert_parallel: bool
    step_token_budget: int | None = None

    def __post_init__(self) -> None:
        layouts.check_attention_ranks(self.tensor, self.attention_ranks)

    @property
    def attention_dp(self) -> bool:
        return self.attention_ranks > 1

    @property
    def gpus(self) -> int:
        return self.tensor * self.pipeline

    def label(self) -> str:
        text = f"TP{self.tensor}" + (f"PP{self.pipeline}" if self.pipeline > 1 else "")
        if self.expert_parallel:
            text += " EP"
        text = " ".join([text, *layouts.attention_words(self.tensor, self.attention_ranks)])
        text = f"{self.replicas} x {text}" if self.replicas > 1 else text
        if self.step_token_budget is not None:
            text += f", {self.step_token_budget} tokens/step"
        return text


@dataclass
class _Group:
    """Steps of one step model and layout, evaluated together."""

    model: StepModel
    prefill: object
    layout: EngineLayout
    D: list = field(default_factory=list)
    n: list = field(default_factory=list)
    P: list = field(default_factory=list)
    c: list = field(default_factory=list)
    R: list = field(default_factory=list)
    index: int = 0
    offset: int = 0

    seen: dict = field(default_factory=dict)

    def add(self, D, n, P, c, R) -> tuple[int, int]:
        """The step (group index, index in the group), each distinct step once."""
        key = (float(D), float(n), float(P), float(c), float(R))
        if key not in self.seen:
            self.seen[key] = len(self.D)
            self.D.append(D)
            self.n.append(n)
            self.P.append(P)
            self.c.append(c)
            self.R.append(R)
        return (self.index, self.seen[key])

    def arrays(self):
        return tuple(np.asarray(x, dtype=float) for x in (self.D, self.n, self.P, self.c, self.R))


@dataclass
class Plan:
    """Every predictable row's candidate steps (steady rows) or simulated cases (rows under
    load), and how its metric follows from them."""

    rows: list
    assumptions: Assumptions
    groups: list = field(default_factory=list)
    #: Per point: (row index, candidate index, batch, replicas, step a, weight a, step b,
    #: weight b, grid position); steps as (group index, index in the group).
    points: list = field(default_factory=list)
    candidates: dict = field(default_factory=dict)  # (row index, candidate index) -> Candidate
    engines: dict = field(default_factory=dict)  # row index -> RowEngine
    #: (row index, candidate index) -> replay.LoadCase: the pairs simulated on the load engine.
    load: dict = field(default_factory=dict)
    infeasible: dict = field(default_factory=dict)  # row index -> reason
    #: (row index, candidate index) -> requests the cache holds at once, of a closed loop's
    #: more clients: its per-token latencies depend on that count (``QUEUED``).
    queued: dict = field(default_factory=dict)
    #: (row index, candidate index) -> an MLPerf Offline row's steady state's factor in the fit
    #: (``replay.drain_factor``: LoadGen's whole run over the saturated rate, simulated once).
    drain: dict = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return sum(len(g.D) for g in self.groups)

    def step_seconds(self) -> np.ndarray:
        """Seconds of every step under the plan's assumptions."""
        out = np.empty(self.n_steps)
        for g in self.groups:
            D, n, P, c, R = g.arrays()
            out[g.offset : g.offset + len(D)] = mixed_step_s(
                g.model, g.prefill, g.layout, D, n, P, c, R
            )
        return out

    def step_work(self) -> StepWork:
        """Every step's ``StepWork`` (achievable assumptions), concatenated in step order."""
        works = []
        for g in self.groups:
            D, n, P, c, R = g.arrays()
            works.append(mixed_step_work(g.model, g.prefill, g.layout, D, n, P, c, R))
        return concatenate(works)

    def step_profiles(self) -> list:
        """The engine profile of every step (None: the ideal engine)."""
        out = []
        for g in self.groups:
            out += [g.model.profile] * len(g.D)
        return out

    def step_engines(self) -> list:
        """The engine profile name of every step (for per-engine terms in calibration)."""
        out = []
        for g in self.groups:
            name = g.model.profile.name if g.model.profile is not None else ""
            out += [name] * len(g.D)
        return out


# --- building the plan ------------------------------------------------------------------------


def _assumptions_for(base: Assumptions, profile, expert_parallel: bool) -> Assumptions:
    """A candidate's assumptions: its engine profile, and its experts split over its tensor
    group at every batch or never (``stated_experts``), as an engine launched that way runs."""
    a = base if profile is None else base.replace(engine=profile)
    return stated_experts(a, expert_parallel)


@lru_cache(maxsize=256)
def _models(arch, gpu, bits, a: Assumptions):
    """(decode step model, prefill workload) of a model at a precision on a GPU."""
    arch = arch.with_precision(*bits)
    model = StepModel(compile_workload(arch, a), gpu, a, integer_layouts=True)
    return model, prefill_step_model(arch, gpu, a, True).work


def candidates(row: MeasuredRow, ideal: bool = False) -> list[Candidate]:
    """The layouts a row may have run: the one it states, else every tensor-parallel split of
    its GPUs within a scale-up domain, and under the bound's engine (``ideal``) on cards
    without a GPU-to-GPU link every tensor x pipeline split (MoE models with and without
    expert parallelism, and with and without data-parallel attention, which shards an MLA or few-KV-head cache that
    tensor-parallel attention copies, docs/model.md §B13). A closed-loop row's clients are
    spread evenly over its instances: splits whose instances do not divide them are left out
    (one instance of all the GPUs always remains)."""
    moe = row.arch.is_moe
    lay = row.layout
    if lay is not None:
        ep = lay.expert is not None and lay.expert > 1
        options = (ep,) if (lay.expert is not None or not moe) else (False, True)
        return [
            Candidate(lay.tensor, lay.pipeline, lay.replicas, lay.attention_ranks, e)
            for e in options
        ]
    domain = max(1, row.gpu.scale_up_domain_gpus)
    gpus = row.serving_gpus
    clients = row.concurrency if row.scenario == "closed_loop" else None
    # cards whose every collective crosses PCIe are also split by pipeline stages, which send
    # one activation point to point instead of two all-reduces a layer (Intel's MLPerf v6.0
    # Arc Pro B60 Llama 2 70B runs: TP1 x PP4 Offline, TP1 x PP2 Server, docs/validation.md)
    depths = PIPELINE_DEPTHS if ideal and row.gpu.interconnect == "pcie" else (1,)
    out = []
    for tp in (1, 2, 4, 8, 16, 32, 64, 72):
        for pp in depths:
            n = tp * pp
            if n > gpus or gpus % n or (n > domain and n > 1):
                continue
            if clients is not None and n < gpus and clients % (gpus // n):
                continue
            for ep in (False, True) if moe and tp > 1 else (False,):
                for dp in (False, True) if moe and tp > 1 else (False,):
                    out.append(Candidate(tp, pp, gpus // n, tp if dp else 1, ep))
    return out or [Candidate(gpus, 1, 1, 1, False)]


#: Pipeline depths tried for a row on PCIe cards that does not state its layout.
PIPELINE_DEPTHS = (1, 2, 4, 8)


def build_plan(rows, assumptions="paper", engine=None, engines=None, for_fit=False) -> Plan:
    """The steps (steady rows) and load cases (rows under load) of every resolved end-to-end
    row whose engine is known. ``engine`` overrides the rows' engines; ``engines`` gives each
    row's ``RowEngine`` (by row index) instead. ``for_fit``: closed-loop rows as their steady
    state (calibration re-times it; ``tests/test_measured.py`` checks it against the
    simulation), and offline rows without an exact steady state left out."""
    base = preset(assumptions)
    plan = Plan(rows=list(rows), assumptions=base)
    if engines is None:
        engines = resolve_engines(plan.rows, base, engine)
    groups: dict = {}
    for i, row in enumerate(plan.rows):
        found = engines.get(i)
        if not isinstance(found, RowEngine) or not predictable(row):
            continue
        plan.engines[i] = row_found = found
        options = candidates(row, ideal=row_found.profile is None)
        for j, cand in enumerate(options):
            found = for_layout(row_found, cand, row)
            a = _assumptions_for(base, found.profile, cand.expert_parallel)
            model, prefill = _models(row.arch, row.gpu, row.bits, a)
            if _capacity(model, row, cand) < 1.0:
                gb = model.weights_total_bytes / 1e9
                plan.infeasible.setdefault(
                    i,
                    f"infeasible: {gb:.0f} GB of weights leave no room for the KV cache on "
                    f"{cand.label()}",
                )
                continue
            # closed-loop rows are simulated, except for the fit (their steady state) and
            # under the ideal engine (its bound: the fluid steady state, no scheduling losses)
            steady_loop = for_fit or found.profile is None
            loaded = row.scenario in LOADED and not (steady_loop and row.scenario == "closed_loop")
            code = f"{row.scenario}|{row.metric.quantity}"
            if not loaded and code not in _KINDS:
                continue  # no closed form (a closed-loop TTFT in the fit): left out
            # an MLPerf Offline row's throughput is LoadGen's, over the whole run and its drain:
            # simulated (the fit keeps its steady state, whose terms the drain barely moves)
            whole = (
                row.scenario == "offline"
                and _whole_run(row, found.profile is not None)
                and not for_fit
            )
            if (
                loaded
                or whole
                or (row.scenario == "offline" and not _exact(model, row, cand, found))
            ):
                if for_fit and not loaded:
                    continue  # preemption shapes the run: no closed form to re-time
                plan.load[(i, j)] = case = _case(row, cand, a, found.config)
                plan.candidates[(i, j)] = cand
                if found.profile is None and row.scenario in ("server", "interactive"):
                    for k, b in enumerate(_smaller_budgets(case), start=1):
                        tuned = dataclasses.replace(cand, step_token_budget=b)
                        plan.load[(i, j + k * len(options))] = _case(row, tuned, a, found.config)
                        plan.candidates[(i, j + k * len(options))] = tuned
                continue
            layout = EngineLayout(cand.gpus, cand.pipeline, float(cand.attention_ranks))
            key = (id(model), layout)
            if key not in groups:
                groups[key] = _Group(model, prefill, layout, index=len(groups))
            if _add_points(plan, groups[key], i, j, row, cand, model, found):
                plan.candidates[(i, j)] = cand
                if (
                    for_fit
                    and row.scenario == "offline"
                    and _whole_run(row, found.profile is not None)
                ):
                    plan.drain[(i, j)] = rp.drain_factor(_case(row, cand, a, found.config))
    offset = 0
    for g in groups.values():
        g.offset = offset
        offset += len(g.D)
    plan.groups = list(groups.values())
    return plan


def _whole_run(row: MeasuredRow, engine: bool) -> bool:
    """Whether a row's throughput is MLPerf LoadGen's, over its whole run to the last completion
    (``replay.RunSpan``): an MLPerf row under an engine profile (the ideal engine's
    bound stays the steady rate, which the drain can only lower)."""
    return row.benchmark is not None and engine


def _case(row: MeasuredRow, cand: Candidate, a: Assumptions, config: EngineConfig):
    """The load-engine case of a row on a candidate layout."""
    L = row.lengths
    sd_in, sd_out = length_sds(L)
    clients = None
    if row.scenario == "closed_loop":
        clients = max(1, int(round(row.concurrency / cand.replicas)))
    if cand.step_token_budget is not None:
        config = dataclasses.replace(config, step_token_budget=cand.step_token_budget)
    setting = Setting(row.arch.with_precision(*row.bits), row.gpu, assumptions=a)
    return rp.LoadCase(
        setting,
        cand.tensor,
        cand.pipeline,
        cand.replicas,
        cand.attention_ranks,
        config,
        (float(L.input_mean), sd_in),
        (float(L.output_mean), sd_out),
        row.scenario,
        tuple(row.limits) if row.limits else None,
        clients,
        bool(row.disaggregated),
        (float(L.input_max), float(L.output_max)),
        int(L.issued),
        # an expected figure is read where a submitter runs; the bound at its most load
        rp.SUBMITTED_LOAD_SHARE if a.engine is not None else 1.0,
        _prefill_pool(row),
        _whole_run(row, a.engine is not None),
    )


def _prefill_pool(row: MeasuredRow):
    """(tensor, pipeline, replicas, attention ranks) of a disaggregated Server or Interactive
    row's prefill instances where the row states them (None: the decode GPUs alone)."""
    pool = row.prefill_layout
    if not row.disaggregated or pool is None or row.scenario not in ("server", "interactive"):
        return None
    return (pool.tensor, pool.pipeline, pool.replicas, pool.attention_ranks)


def _smaller_budgets(case) -> tuple[int, ...]:
    """The smaller tokens per step the ideal engine tries on a row under limits
    (``IDEAL_STEP_BUDGETS``): only where a step carrying one full prompt chunk of its own
    budget would outlast the row's TPOT limit by itself (elsewhere a smaller step cannot
    raise the load the limits allow)."""
    budget = int(case.config.step_token_budget)
    if not case.limits:
        return ()
    try:
        inst = rp.instance(case)
    except InfeasibleError:
        return ()
    chunk = float(min(case.prompt[0], budget))
    attention = budget * float(inst.positions(chunk / 2.0))
    if inst.table.time_s(budget, 0.0, attention, 1, chunk) <= case.limits[1]:
        return ()
    return tuple(b for b in IDEAL_STEP_BUDGETS if b < budget)


def length_sds(L) -> tuple[float, float]:
    """Standard deviations of prompt and output lengths, recovered from a ``Lengths``'s
    contexts (E[n_in²] = 2·n_in·prefill_context; E[n_out²] = 2·n_out·(decode_context − n_in))."""
    var_in = 2.0 * L.input_mean * L.prefill_context - L.input_mean**2
    var_out = 2.0 * L.output_mean * (L.decode_context - L.input_mean) - L.output_mean**2
    tidy = lambda v, m: math.sqrt(v) if v > 1e-6 * m * m else 0.0  # noqa: E731
    return tidy(var_in, L.input_mean), tidy(var_out, L.output_mean)


def _capacity(model: StepModel, row: MeasuredRow, cand: Candidate, context=None) -> float:
    """Requests one instance holds at a context (default: the row's mean decode context, the
    time-weighted context of a running request; §F8)."""
    ctx = row.lengths.decode_context if context is None else context
    per_request = float(model.work.kv_cache_bytes(ctx, 1.0))
    room = float(model.kv_capacity_bytes(float(cand.gpus)))
    return room / per_request if per_request > 0 else math.inf


def _steady_batch(model, row, cand, found: RowEngine) -> float:
    """The batch a saturated engine settles at: its batch limit, or what the KV cache holds -
    at the time-weighted decode context (recompute admission, and the ideal engine), or of
    whole requests, prompt and output, weighted by their time in the batch (no_evict
    admission: E[(n_in + n_out)·n_out]/E[n_out] = 2·decode_context − n_in) - or what the
    step token budget sustains (``budget_batch``)."""
    L = row.lengths
    if found.config.admission == "no_evict":
        held = _capacity(model, row, cand, 2.0 * L.decode_context - L.input_mean)
    else:
        held = _capacity(model, row, cand)
    budget = budget_batch(
        float(found.config.step_token_budget),
        L.input_mean,
        L.output_mean,
        found.config.prefill != "separate" and not row.disaggregated,
    )
    return min(held, float(found.config.max_batch_requests), budget)


def budget_batch(budget: float, n_in: float, n_out: float, mixed: bool) -> float:
    """The most requests a saturated engine keeps decoding when every step holds at most
    ``budget`` tokens (docs/model.md §F9). A step's budget counts its decoding requests' tokens
    as well as its prompt tokens (TensorRT-LLM's ``max_num_tokens``, vLLM's
    ``max_num_batched_tokens``), so where prompts share the steps (``mixed``: whole or chunked
    prefill) ``D`` decoding requests, finishing D/n_out a step, need D·n_in/n_out prompt tokens a
    step beside their own D: D·(n_out + n_in)/n_out <= budget, the load engine's steady bound
    (``load/engine.py``, ``steady_step_s``). Prompts in steps of their own (or
    prefilled elsewhere): D <= budget."""
    if not mixed:
        return budget
    return budget * max(n_out, 1.0) / (max(n_out, 1.0) + n_in)


def _exact(model, row, cand, found: RowEngine) -> bool:
    """Whether an offline row's steady state is exact: nothing is ever preempted (the ideal
    engine's fluid bound, no_evict admission, or a batch limit the KV cache never reaches)."""
    if found.profile is None or found.config.admission == "no_evict":
        return True
    return _capacity(model, row, cand) >= found.config.max_batch_requests


def _add_points(plan: Plan, g: _Group, i: int, j: int, row, cand, model, found) -> bool:
    """The points of one steady row and candidate layout (``found``: the row's engine on it);
    False if it cannot serve it."""
    config = found.config
    budget = float(config.step_token_budget)
    L = row.lengths
    s = row.scenario
    q = row.metric.quantity
    if s == "single":
        a = g.add(0.0, 0.0, L.input_mean, 0.0, 1.0)
        plan.points.append((i, j, 1.0, 1, a, 1.0, a, 0.0, 0))
        return True
    if s == "static":
        B = row.concurrency / cand.replicas
        if B * model.work.kv_bytes_per_token * (L.input_mean + L.output_mean) > float(
            model.kv_capacity_bytes(float(cand.gpus))
        ):
            plan.infeasible.setdefault(
                i, f"infeasible: a static batch of {B:g} does not fit {cand.label()}"
            )
            return False
        a = g.add(0.0, 0.0, B * L.input_mean, 0.0, B)
        b = g.add(B, L.input_mean + L.output_mean / 2.0, 0.0, 0.0, 0.0)
        plan.points.append((i, j, B, cand.replicas, a, 1.0, b, max(L.output_mean - 1.0, 0.0), 0))
        return True
    top = _steady_batch(model, row, cand, found)
    if s == "closed_loop":
        clients = row.concurrency / cand.replicas
        B = min(clients, top)
        if top < clients:  # the rest wait: latencies depend on how many the cache holds
            plan.queued[(i, j)] = B * cand.replicas
        users = B if q == "throughput" else max(B - 1.0, 0.0)
        _mean_step(plan, g, i, j, row, cand, B, users, budget, config.prefill)
        return True
    _mean_step(plan, g, i, j, row, cand, top, top, budget, config.prefill)  # offline
    return True


def _mean_step(plan, g: _Group, i, j, row, cand, B, users, budget, mode) -> None:
    """A point whose time is the mean step of ``B`` decoding requests while the prompts of
    ``users`` arriving requests are prefilled (§F9): prompts per step users/n_out, in chunks
    of min(n_in, budget - B) tokens, what the budget leaves beside the decoding requests
    (whole prompts under ``whole``); fewer than one chunk a step is
    a mixture of decode-only steps and steps with one chunk. Under ``separate`` prefill the
    prompts run in steps of their own, as many whole prompts as the budget holds, while
    decoding waits. Disaggregated rows prefill elsewhere."""
    L = row.lengths
    if row.disaggregated:
        users = 0.0
    n = L.decode_context
    prompts = users / L.output_mean  # prompts arriving per decode step
    if mode == "separate":
        k = budget / L.input_mean  # prompts per prefill step (whole, or chunks of a longer one)
        k = max(1.0, math.floor(k)) if k >= 1.0 else k
        a = g.add(B, n, 0.0, 0.0, 0.0)
        chunk = min(L.input_mean, budget)
        prefix = max(0.0, L.prefill_context - (chunk - 1.0) / 2.0)
        b = g.add(0.0, 0.0, k * L.input_mean, prefix, max(k, 1.0))
        plan.points.append((i, j, B, cand.replicas, a, 1.0, b, prompts / k, 0))
        return
    # whole prompts, or chunks of what the budget leaves beside the decoding requests
    room = budget - B if mode == "chunked" and not row.disaggregated else budget
    chunk = min(L.input_mean, max(room, 1.0))
    prefix = max(0.0, L.prefill_context - (chunk - 1.0) / 2.0)
    tokens = prompts * L.input_mean  # prompt tokens per step on average
    chunks = tokens / chunk
    if chunks >= 1.0:
        a = g.add(B, n, tokens, prefix, chunks)
        plan.points.append((i, j, B, cand.replicas, a, 1.0, a, 0.0, 0))
        return
    a = g.add(B, n, 0.0, 0.0, 0.0)
    b = g.add(B, n, chunk, prefix, 1.0)
    plan.points.append((i, j, B, cand.replicas, a, 1.0 - chunks, b, chunks, 0))


# --- from step times to metrics ---------------------------------------------------------------


@dataclass(frozen=True)
class Points:
    """The plan's points as arrays, with the (row, layout) pairs and rows they belong to
    (consecutive), so metrics are array arithmetic with an optional leading trial axis."""

    row: np.ndarray
    cand: np.ndarray
    batch: np.ndarray
    replicas: np.ndarray
    a: np.ndarray
    wa: np.ndarray
    b: np.ndarray
    wb: np.ndarray
    grid: np.ndarray
    pair_start: np.ndarray  # first point of every (row, layout) pair
    pair_row: np.ndarray
    pair_cand: np.ndarray
    row_start: np.ndarray  # first pair of every row with pairs
    rows: np.ndarray  # the row index of every entry of row_start
    #: Each point's throughput factor for its run's drain (``Plan.drain``; 1: none).
    drain: np.ndarray | None = None

    @classmethod
    def of(cls, plan: Plan) -> Points:
        offsets = [g.offset for g in plan.groups]
        cols = list(zip(*plan.points)) if plan.points else [()] * 9
        row, cand, batch, reps, a, wa, b, wb, grid = cols
        glob = lambda steps: np.array([offsets[gi] + k for gi, k in steps], dtype=int)  # noqa: E731
        row = np.asarray(row, dtype=int)
        cand = np.asarray(cand, dtype=int)
        new_pair = np.ones(len(row), dtype=bool)
        new_pair[1:] = (row[1:] != row[:-1]) | (cand[1:] != cand[:-1])
        pair_start = np.flatnonzero(new_pair)
        pair_row = row[pair_start]
        new_row = np.ones(len(pair_row), dtype=bool)
        new_row[1:] = pair_row[1:] != pair_row[:-1]
        row_start = np.flatnonzero(new_row)
        return cls(
            row,
            cand,
            np.asarray(batch, float),
            np.asarray(reps, float),
            glob(a),
            np.asarray(wa, float),
            glob(b),
            np.asarray(wb, float),
            np.asarray(grid, int),
            pair_start,
            pair_row,
            cand[pair_start],
            row_start,
            pair_row[row_start],
            np.array([plan.drain.get((i, j), 1.0) for i, j in zip(row, cand)], dtype=float),
        )


def row_arrays(plan: Plan, pts: Points):
    """Per point: the per-GPU divisor and the output length of its row."""
    rows = [plan.rows[i] for i in pts.row]
    per_gpu = np.array([r.per_count for r in rows], float)
    n_out = np.array([r.lengths.output_mean for r in rows], float)
    return per_gpu, n_out


def metrics(plan: Plan, pts: Points, seconds):
    """(value, score) per (row, layout) pair of the steady rows: the row's predicted metric
    and what the operator maximises (throughput, or minus the latency). ``seconds``: step
    times, 1-D or trials x steps."""
    S = np.asarray(seconds, dtype=float)
    t = pts.wa * S[..., pts.a] + pts.wb * S[..., pts.b]
    per_gpu, n_out = _cached_rows(plan, pts)
    value = np.full(t.shape, np.nan)
    score = np.full(t.shape, -np.inf)
    for code, idx in _code_points(plan, pts).items():
        ti = t[..., idx]
        thr = pts.replicas[idx] * pts.batch[idx] / ti
        kind = _KINDS.get(code)
        if kind is None:
            continue
        if kind == "throughput":
            val, sc = thr, thr
            if pts.drain is not None:
                val = thr * pts.drain[idx]
        elif kind == "streams":
            val, sc = pts.replicas[idx] * pts.batch[idx] + 0.0 * ti, thr
        elif kind == "time":
            val, sc = ti, -ti
        elif kind == "speed":
            val, sc = 1.0 / ti, 1.0 / ti
        else:  # static batch: B·n_out tokens per pass of prefill and decode
            val = thr * n_out[idx]
            sc = val
        value[..., idx] = val
        score[..., idx] = sc
    value = value / per_gpu
    return _reduce_pairs(pts, value, score)


#: How each steady (scenario, quantity) follows from a point's time.
_KINDS = {
    "offline|throughput": "throughput",
    "offline|streams": "streams",
    "closed_loop|throughput": "throughput",
    "closed_loop|itl": "time",
    "closed_loop|tpot": "time",
    "closed_loop|user_speed": "speed",
    "static|throughput": "static",
    "single|ttft_single": "time",
    "single|ttft": "time",
}


def _code_points(plan: Plan, pts: Points) -> dict:
    key = ("code_points", id(pts))
    memo = plan.__dict__.setdefault("_memo", {})
    if key not in memo:
        codes = np.array(
            [f"{plan.rows[i].scenario}|{plan.rows[i].metric.quantity}" for i in pts.row]
        )
        memo[key] = {c: np.flatnonzero(codes == c) for c in np.unique(codes)}
    return memo[key]


#: What the load engine's runs measure, by quantity (``replay.Outcome.value``).
LOAD_QUANTITIES = (
    "throughput",
    "tpot",
    "tpot_p99",
    "itl",
    "ttft",
    "ttft_p99",
    "user_speed",
    "streams",
)


def ttft_of(row: MeasuredRow) -> bool:
    """Whether the row measures a time to first token (mean or a percentile)."""
    return row.metric.quantity in ("ttft", "ttft_p99")


def predictable(row: MeasuredRow) -> bool:
    """Whether the model predicts the row's metric in its scenario: a steady state's closed
    form (``_KINDS``), or a run of the load engine (a row may read a metric, such as a p90
    TTFT, that neither predicts: it is out of scope, not guessed)."""
    code = f"{row.scenario}|{row.metric.quantity}"
    return code in _KINDS or (row.scenario in LOADED and row.metric.quantity in LOAD_QUANTITIES)


def _cached_rows(plan: Plan, pts: Points):
    key = ("rows", id(pts))
    if key not in plan.__dict__.setdefault("_memo", {}):
        plan._memo[key] = row_arrays(plan, pts)
    return plan._memo[key]


def _reduce_pairs(pts: Points, value, score):
    """(value, score) at each pair's chosen point: points not chosen carry -inf scores."""
    best = np.maximum.reduceat(
        np.where(np.isfinite(score), score, -np.inf), pts.pair_start, axis=-1
    )
    hit = score >= np.take(best, _pair_index(pts), axis=-1)
    val = np.where(hit & np.isfinite(value), value, -np.inf)
    v = np.maximum.reduceat(val, pts.pair_start, axis=-1)
    return np.where(np.isfinite(v), v, np.nan), best


def _pair_index(pts: Points) -> np.ndarray:
    sizes = np.diff(np.append(pts.pair_start, len(pts.row)))
    return np.repeat(np.arange(len(pts.pair_start)), sizes)


def best_per_row(pts: Points, pair_value, pair_score):
    """(value, candidate index) of every row with pairs: the layout of the best score."""
    best = np.maximum.reduceat(pair_score, pts.row_start, axis=-1)
    sizes = np.diff(np.append(pts.row_start, len(pts.pair_start)))
    hit = pair_score >= np.repeat(best, sizes, axis=-1)
    val = np.where(hit & np.isfinite(pair_value), pair_value, -np.inf)
    v = np.maximum.reduceat(val, pts.row_start, axis=-1)
    return np.where(np.isfinite(v), v, np.nan), hit


# --- predicting a file ------------------------------------------------------------------------

#: A closed-loop layout whose KV cache holds fewer requests than the loop has clients says so
#: in its label: the rest queue, and its per-token latencies depend on how many it holds, which
#: an ideal engine (all its memory for the cache) may exceed - only its throughput is a bound.
QUEUED = " (the cache holds "
#: Metrics of a scenario that the ideal presets bound (a real system can only be slower).
BOUNDED = (
    "offline|throughput",
    "server|throughput",
    "interactive|throughput",
    "closed_loop|throughput",
    "closed_loop|itl",
    "closed_loop|tpot",
    "closed_loop|user_speed",
    "static|throughput",
    "single|ttft_single",
    "single|ttft",
    "micro|busbw",
    "micro|gemm_flops",
    "micro|stream",
)
#: A measured row beating an ideal prediction by more than this is reported (5 %).
BOUND_TOLERANCE = 0.05


@dataclass(frozen=True)
class Comparison:
    """Every row of a measured file with its prediction (``table``) and the median and 90th
    percentile absolute errors of the rows with status ok (``summary``)."""

    table: object  # pandas DataFrame, one row per input row
    summary: object  # pandas DataFrame
    assumptions: str
    engine: str
    source: str


def predict_rows(rows, assumptions="paper", engine=None, engines=None):
    """(predicted value, layout label, status, engine label) of every row, in SI units
    (seconds, tokens/s). ``engines`` gives rows their ``RowEngine`` (by index) instead of
    resolving them (calibration's fitted profiles). Rows that ask the same question (the same
    configuration and metric, whatever their value or source) are predicted once."""
    groups: dict = {}
    asked: dict = {}  # question -> its number
    shared: dict = {}  # id of a shared resolution's token -> its question's number
    for i, r in enumerate(rows):
        given = None if engines is None else id(engines.get(i))
        token = r.__dict__.get(SHARED)  # alive while ``rows`` is: its id is its own
        number = None if token is None else shared.get(id(token))
        if number is None:  # hashing a question's specs is the slow part: once per token
            number = asked.setdefault(_question(r), len(asked))
            if token is not None:
                shared[id(token)] = number
        groups.setdefault((number, given), []).append(i)
    if len(groups) < len(rows):
        first = [members[0] for members in groups.values()]
        sub = (
            None
            if engines is None
            else {k: engines[i] for k, i in enumerate(first) if i in engines}
        )
        once = _predict_distinct([rows[i] for i in first], assumptions, engine, sub)
        out = (np.full(len(rows), np.nan), [""] * len(rows), [""] * len(rows), [""] * len(rows))
        for k, members in enumerate(groups.values()):
            for i in members:
                out[0][i] = once[0][k]
                for n in (1, 2, 3):
                    out[n][i] = once[n][k]
        return out
    return _predict_distinct(rows, assumptions, engine, engines)


def _question(r: MeasuredRow) -> tuple:
    """What a row's prediction depends on (not its value, line, source or wording)."""
    micro = (r.model_text, r.unit, r.message_bytes, r.gemm_shape) if r.kind == "micro" else ()
    return (
        r.kind,
        r.status,
        r.arch,
        r.gpu,
        r.bits,
        r.gpus,
        r.metric,
        r.scenario,
        r.layout,
        r.lengths,
        r.concurrency,
        r.batch_cap,
        r.token_budget,
        r.fused_allreduce,
        r.kv_cache_fraction,
        r.limits,
        r.engine,
        getattr(r, "engine_version", None),
        getattr(r, "platform", None),
        r.disaggregated,
        r.decode_gpus,
        r.prefill_layout,
        r.per,
        r.per_count,
        micro,
    )


def _predict_distinct(rows, assumptions, engine, engines):
    """``predict_rows`` of rows that each ask their own question."""
    base = preset(assumptions)
    found = resolve_engines(rows, base, engine) if engines is None else engines
    plan = build_plan(rows, assumptions, engines=found)
    n = len(plan.rows)
    predicted = np.full(n, np.nan)
    labels = [""] * n
    status = [r.status for r in plan.rows]
    labels_engine = [""] * n
    for i, e in found.items():
        if isinstance(e, RowEngine):
            labels_engine[i] = e.label if base.engine is not None else ""
        elif plan.rows[i].ok or plan.rows[i].status.startswith("derived"):
            status[i] = e
    best: dict = {}  # row -> (score, value, candidate index, note)
    for (i, j), (value, score) in _steady_pairs(plan).items():
        _keep(best, i, j, value, score)
    for (i, j), (value, score, note) in _load_pairs(plan).items():
        _keep(best, i, j, value, score, note)
    for i, (_, value, j, note) in best.items():
        predicted[i] = value
        if np.isfinite(value):
            labels[i] = plan.candidates[(i, j)].label()
            if (i, j) in plan.queued:
                held = plan.queued[(i, j)]
                labels[i] += f"{QUEUED}{held:.0f} of {plan.rows[i].concurrency:g} clients at once)"
        elif plan.rows[i].ok:
            status[i] = note or "infeasible: no layout serves the row"
    for i, why in plan.infeasible.items():
        if not np.isfinite(predicted[i]) and plan.rows[i].ok:
            status[i] = why if why.startswith("infeasible") else f"infeasible: {why}"
    for i, row in enumerate(plan.rows):
        if row.kind == "end-to-end" and row.resolved and not predictable(row):
            status[i] = (
                f"out of scope: the model does not predict {row.metric_text} "
                f"in the {row.scenario} scenario"
            )
        elif (
            row.kind == "end-to-end"
            and row.resolved
            and row.disaggregated
            and ttft_of(row)
            and _prefill_pool(row) is None
        ):
            predicted[i] = np.nan  # the decode pool's replay hands each first token over
            status[i] = (
                "out of scope: the TTFT of a disaggregated row is its prefill pool's, which "
                "the row does not state (its decode GPUs are replayed alone)"
            )
        if row.kind == "micro" and row.resolved:
            predicted[i] = predict_micro(row, base, engine)
            nvls_row = row.metric.quantity == "busbw" and "nvls" in row.model_text.lower()
            if base.engine is None and nvls_row and not base.nvls:
                status[i] = f"out of scope: uses NVLS, which the {base.name} preset does not"
    return predicted, labels, status, labels_engine


def _keep(best: dict, i, j, value, score, note="") -> None:
    old = best.get(i)
    finite = np.isfinite(value) and np.isfinite(score)
    if old is None or (finite and (not np.isfinite(old[1]) or score > old[0])):
        best[i] = (score if finite else -np.inf, value if finite else np.nan, j, note)


def _steady_pairs(plan: Plan) -> dict:
    """(row, candidate) -> (value, score) of the steady rows."""
    if not plan.points:
        return {}
    pts = Points.of(plan)
    value, score = metrics(plan, pts, plan.step_seconds())
    return {
        (int(i), int(j)): (float(v), float(s))
        for i, j, v, s in zip(pts.pair_row, pts.pair_cand, value, score)
    }


#: ``compare``'s progress callback, read where the rows under load are simulated.
_PROGRESS: ContextVar[Callable[[str], None] | None] = ContextVar("progress", default=None)


def _load_pairs(plan: Plan) -> dict:
    """(row, candidate) -> (value, score, note) of the rows under load. A Server or
    Interactive row simulates the candidate layouts whose steady-state estimate is within
    ``replay.RANKING_SHARE`` of the best one's, and always the one that prefills a prompt
    fastest (the widest tensor-parallel instance: the estimate ranks decode throughput and
    cannot see the TTFT limit, which long prompts make bind first on narrower instances);
    of those, a layout whose load search's walk failed a load that another's held, less
    ``replay.BRACKET_MARGIN``, is not bisected (``replay.bracket``: it serves less and cannot
    be the row's best); rows with the same case share every simulation."""
    by_row: dict = {}
    for (i, j), case in plan.load.items():
        by_row.setdefault(i, []).append((j, case))
    out = {}
    progress = _PROGRESS.get()
    for n, (i, cases) in enumerate(by_row.items()):
        if progress is not None:
            progress(f"{n:,}/{len(by_row):,} rows under load predicted")
        row = plan.rows[i]
        q = row.metric.quantity
        per_gpu = float(row.per_count)
        if row.scenario in ("server", "interactive") and len(cases) > 1:
            guesses = [(rp.estimate(c).throughput, j, c) for j, c in cases]
            top = max((g for g, _, _ in guesses if np.isfinite(g)), default=math.nan)
            if np.isfinite(top):
                widest = max(c.tensor for _, c in cases)
                wide = [(g, j) for g, j, c in guesses if c.tensor == widest and np.isfinite(g)]
                keep = {j for g, j, _ in guesses if g >= rp.RANKING_SHARE * top}
                keep |= {max(wide)[1]} if wide else set()
                cases = [(j, c) for j, c in cases if j in keep]
            if len(cases) > 1:  # walk each search; bisect only where the answer can win
                found: dict = {}
                held = 0.0  # the most load a walked layout held
                for j, c in sorted(cases, key=lambda jc: -rp.estimate(jc[1]).throughput):
                    if held > 0 and rp.fails_at(c, held / rp.BRACKET_MARGIN):
                        continue  # it fails below what another held: one run, not a walk
                    found[j] = rp.bracket(c)
                    held = max(held, found[j][0])
                cases = [
                    (j, c)
                    for j, c in cases
                    if j in found and not (held > 0 and found[j][1] * rp.BRACKET_MARGIN <= held)
                ]
        for j, case in cases:
            o = rp.replay(case)
            value = o.value(q) / per_gpu
            if (
                q in ("tpot", "itl", "tpot_p99", "ttft", "ttft_p99")
                and row.scenario == "closed_loop"
            ):
                score = -o.tpot
            elif q == "user_speed" and row.scenario == "closed_loop":
                score = 1.0 / o.tpot if o.tpot > 0 else -math.inf
            else:
                score = o.throughput
            out[(i, j)] = (value, score if o.ok else -math.inf, o.note)
    return out


def predict_micro(row: MeasuredRow, base: Assumptions, engine=None) -> float:
    """A micro-benchmark under the assumptions: all-reduce bus bandwidth from the collective
    model (NCCL's own protocols: no engine kernels), GEMM TFLOPS and streaming TB/s. The
    ideal presets' bound is the datasheet (their sustained fractions are assumptions about
    whole models, not kernel limits); the achievable preset uses §F1-§F2 and §F6."""
    from ..model.collectives import ALLREDUCE, CollectiveCost, measured_protocols, protocols_for
    from ..model.efficiency import size_factor
    from ..model.machine import Machine

    gpu, q = row.gpu, row.metric.quantity
    # micro-benchmarks measure kernels and libraries, not a scheduler: the terms of the profile
    # given (or the preset's) whatever the platform
    name = split_engine(engine)[0] if isinstance(engine, str) else engine
    prof = None if base.engine is None else load_engine(name or base.engine)
    if q == "busbw":
        R = float(row.gpus)
        nodes = math.ceil(R / gpu.scale_up_domain_gpus)
        if prof is None:
            protocols = protocols_for(base.nccl_latency_model, base.nvls and gpu.nvls, gpu)
        else:
            protocols = tuple(p for p in measured_protocols(gpu, base.nvls, prof) if not p.custom)
        cost = CollectiveCost(np.array(R), np.array(float(nodes)), gpu, ALLREDUCE, protocols)
        seconds = float(cost.time(row.message_bytes))
        return row.message_bytes * 2.0 * (R - 1.0) / R / seconds / _scale(row.unit, "busbw")
    if q == "gemm_flops":  # the chip's own rate at the precision (a kernel, not a model)
        machine = Machine.build(gpu, row.bits[0], base.replace(native_fp4=True))
        if prof is None:
            return machine.peak_flop_per_s / _scale(row.unit, q)
        rate = machine.gemm_rate
        if row.gemm_shape is not None:
            M, N, K = row.gemm_shape
            rate = rate * float(size_factor(M * N * K, prof.gemm_half_volume))
        return rate / _scale(row.unit, q)
    bw = gpu.hbm_bandwidth_bytes_per_s * (1.0 if prof is None else prof.hbm_efficiency)
    return bw / _scale(row.unit, q)


def _scale(unit: str, quantity: str) -> float:
    """SI value of one unit of a micro-benchmark row."""
    u = unit.strip().lower()
    return {"gb/s": 1e9, "tb/s": 1e12, "tflops": 1e12, "gflops": 1e9, "pflops": 1e15}.get(u, 1.0)


def _unit_scale(row: MeasuredRow) -> float:
    """The row's unit in the model's (seconds, tokens/s): 1e-3 for ms."""
    return _scale_of(row.unit, row.metric.quantity if row.metric is not None else "")


def compare(path, assumptions="paper", engine=None, progress=None):
    """Every row of a measured CSV with the model's prediction: ``Comparison``.
    ``progress(message)``: called as the rows the load engine simulates are predicted (a
    whole MLPerf file takes tens of minutes)."""
    from ..specs.collector import gc_frozen
    from .reading import load_measured

    rows = load_measured(path)
    token = _PROGRESS.set(progress)
    try:
        with gc_frozen():  # the rows live to the end: the collector need not walk them again
            return _compared(path, rows, assumptions, engine)
    finally:
        _PROGRESS.reset(token)


def _compared(path, rows, assumptions, engine):
    """``compare`` of the rows read from ``path``."""

    from .intervals import add_intervals

    base = preset(assumptions)
    if engine is not None and base.engine is None:
        from ..errors import SpecError

        raise SpecError(
            "argument",
            "engine",
            f"an engine profile does not apply to the {base.name!r} preset (an ideal bound)",
            "use --assumptions achievable with --engine",
        )
    if engine is not None:
        select_engine(engine)  # a bad name, version or file fails before any work
    predicted, labels, status, engines = predict_rows(rows, base, engine)
    table = _table(rows, predicted, labels, status, base, engines)
    label = base.name
    if base.engine is not None:
        label += f", engine {_name(engine)}" if engine else ", each row's engine"
        table = add_intervals(table, rows)  # expected figures' intervals (§F12)
    better = np.array([r.metric is not None and larger_is_better(r.metric.quantity) for r in rows])
    summary = summarise(table, better)
    return Comparison(table, summary, label, _name(engine) if engine else "", str(path))


def _table(rows, predicted, labels, status, base, engines):
    """The output table: per row its prediction in the row's unit, the error and whether it
    beats the bound (an ideal preset; a row out of scope - a technique the model does not
    predict, e.g. speculative decoding - is predicted without it and is no test of the
    bound). Built column by column: a 100,000-row log's records as dicts cost more than its
    reading."""
    import pandas as pd

    n = len(rows)
    if n == 0:
        return pd.DataFrame.from_records([])
    scale = np.array([_scale_of(r.unit, r.metric.quantity if r.metric else "") for r in rows])
    values = np.asarray(predicted, dtype=float)
    finite = np.isfinite(values)
    pred = np.where(finite, values / np.where(finite, scale, 1.0), math.nan)
    measured = np.array([r.value if r.value is not None else math.nan for r in rows], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        error = np.where(np.isfinite(pred) & (measured > 0), pred / measured - 1.0, math.nan)
    tol = BOUND_TOLERANCE
    beats = np.zeros(n, dtype=bool)
    if base.engine is None:
        over = np.isfinite(error) & (error > tol)
        under = np.isfinite(error) & (error < -tol / (1 + tol))
        for i, r in enumerate(rows):
            if r.metric is None or not (over[i] or under[i]):
                continue
            q = r.metric.quantity
            queued = r.scenario == "closed_loop" and q != "throughput" and QUEUED in labels[i]
            if (
                f"{r.scenario}|{q}" in BOUNDED
                and not status[i].startswith("out of scope")
                and not queued
            ):
                beats[i] = under[i] if larger_is_better(q) else over[i]
    columns = {
        "row": [r.row for r in rows],
        "source": [r.source for r in rows],
        "source_group": [r.group for r in rows],
        "model": [r.arch.name if r.arch is not None else r.model_text for r in rows],
        "hardware": [r.gpu.name if r.gpu is not None else r.hardware_text for r in rows],
        "n_gpus": [r.gpus for r in rows],
        "metric": [r.metric_text for r in rows],
        "scenario": [r.scenario or ("micro" if r.kind == "micro" else "") for r in rows],
        "unit": [r.unit for r in rows],
        "measured": measured,
        "predicted": pred,
        "error": error,
        "status": list(status),
        "kind": [r.kind for r in rows],
        "layout": list(labels),
        "engine": list(engines),
        # checked under an ideal preset only: empty (NA) for an expected figure
        "beats_bound": pd.array(beats if base.engine is None else [None] * n, dtype="boolean"),
    }
    return pd.DataFrame(columns)


@lru_cache(maxsize=1024)
def _scale_of(unit: str, quantity: str) -> float:
    """``_unit_scale`` of a unit and a metric's quantity."""
    u = unit.strip().lower().split()[0] if unit.strip() else ""
    if quantity in TIMES:
        return {"ms": 1e-3, "us": 1e-6, "s": 1.0}.get(u, 1.0)
    return 1.0


def _name(engine) -> str:
    return engine if isinstance(engine, str) else getattr(engine, "name", str(engine))


def summarise(table, larger_better=None):
    """Median and 90th-percentile absolute error of the rows with status ok, end-to-end and
    micro-benchmarks apart, by source, GPU and model, and the median optimism: the signed
    error with the sign of times turned (``larger_better`` per row: whether a larger value is
    the better one; all, when not given), so that above 0 the model promised more than was
    measured (more throughput, less latency) whatever the rows mix."""
    import pandas as pd

    sign = np.ones(len(table)) if larger_better is None else np.where(larger_better, 1.0, -1.0)
    table = table.assign(optimism=sign * table["error"].to_numpy(float))
    ok = table[(table["status"] == "ok") & table["error"].notna()]
    out = []
    for kind in ("end-to-end", "micro"):
        part = ok[ok["kind"] == kind]
        if part.empty:
            continue
        out.append(_stats(part, kind, "all", "all rows"))
        for by in ("source_group", "hardware", "model"):
            for name, g in part.groupby(by, sort=True):
                out.append(_stats(g, kind, by.replace("source_group", "source"), name))
    return pd.DataFrame(
        out,
        columns=[
            "kind", "by", "name", "rows", "median_abs_error", "p90_abs_error", "median_optimism"
        ],
    )  # fmt: skip


def _stats(part, kind, by, name) -> dict:
    e = part["error"].to_numpy(float)
    return {
        "kind": kind,
        "by": by,
        "name": name,
        "rows": len(e),
        "median_abs_error": float(np.median(np.abs(e))),
        "p90_abs_error": float(np.quantile(np.abs(e), 0.9)),
        "median_optimism": float(np.median(part["optimism"].to_numpy(float))),
    }
