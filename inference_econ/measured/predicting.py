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

Here: the engine each row runs on (``row_engine``), the layouts it may have run
(``candidates``), the plan of every row (``build_plan``) and the runs of rows under load
(``_load_pairs``). The steady rows' closed forms and their ``Plan`` are ``steady``'s; a whole
file compared with its predictions, each configuration predicted once, is ``comparison``'s.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InfeasibleError, SpecError
from ..load.engine import EngineConfig, trtllm_graph_sizes
from ..model.assumptions import Assumptions, preset
from ..model.latency import StepModel, prefill_step_model, stated_experts
from ..model.mixed_step import EngineLayout
from ..model.workload import compile_workload
from ..serving.setting import Setting
from ..specs.engine import (
    RUNTIME_UNKNOWN_HOST_OVERHEAD_EXPOSED,
    EngineProfile,
    select_engine,
    split_engine,
)
from ..specs.kernel_tables import AUTO_CLOCK_FOLDERS, kernel_folder
from ..specs.platforms import platform_of
from ..specs.versions import in_range, parse_version
from . import layouts
from . import replay as rp
from . import semantics as sem
from .bench_limits import bench_limits, overview_requests
from .closed_forms import (
    LOADED,
    STEADY_KINDS,
    Plan,
    StepGroup,
    add_points,
    exact_steady_state,
    no_room,
    offline_latency,
    predictable,
    requests_held,
    split_heads,
)
from .reading import MeasuredRow
from .row_harness import as_stated, engine_label, harness_of

#: Scenarios an engine runs as offline work (vLLM's LLM class defaults); the rest are served.
OFFLINE_SCENARIOS = ("offline", "static")
#: The ideal engine a measured row is replayed on under the paper and refined presets: every
#: request the KV cache holds may run (at most 16,384, or the row's stated cap), 8,192 tokens
#: per step, prompts in chunks next to decoding. Unlike the ideal engine a deployment gets by
#: default (``EngineConfig()``: vLLM V1's 256 requests and 2,048 tokens, specs/engine.py
#: ``IDEAL_MAX_BATCH_REQUESTS``) it is unbounded by a served engine's default limits: it
#: gives the bound on what the row's hardware serves.
REPLAY_IDEAL_ENGINE = EngineConfig(16384, 8192, "recompute", "chunked")
#: Tokens per step the ideal engine tries on a row under latency limits (Server, Interactive),
#: keeping the best, as an operator tunes ``max_num_batched_tokens`` (``max_num_tokens``): a
#: step of 8,192 prompt tokens can outlast the TPOT limit by itself on a slow GPU (Llama 3.1
#: 8B in FP8 on an H200 NVL: ~0.12 s of arithmetic against 0.1 s), which then caps the load,
#: while smaller chunks keep decoding within it.
IDEAL_STEP_BUDGETS = (512, 2048, REPLAY_IDEAL_ENGINE.step_token_budget)
#: How an engine label names the limits trtllm-bench picks itself (``bench_limits``); the
#: output adds their figures on the layout predicted (``tool_limits_text``).
TOOL_LIMITS = "the limits trtllm-bench picks itself"


@dataclass(frozen=True)
class RowEngine:
    """The engine a row runs on: its profile (None: the ideal engine), its scheduler, how the
    output names it, whether its steps are priced from the measured kernel tables
    (``kernel_tables``: the kernel clock, ``reads_kernel_tables``) or by the profile's terms,
    and whether it runs two micro-batches as the row states (§F7)."""

    profile: EngineProfile | None
    config: EngineConfig
    label: str
    kernel_tables: bool = False
    two_batch_overlap: bool = False


def reads_kernel_tables(profile: EngineProfile, version, gpu) -> bool:
    """Whether a row of ``profile`` stating ``version`` on ``gpu`` is priced by the kernel
    clock: the tables of kernels/ time that version's kernels
    (``EngineProfile.kernel_table_versions``) and were measured on that part, one the clock
    prices unasked (``AUTO_CLOCK_FOLDERS``). A row stating no version runs kernels not known
    (MLPerf's harness, an older build): the profile's terms, fitted to such rows, price it."""
    stated = parse_version(version) if version else None
    return (
        stated is not None
        and bool(profile.kernel_table_versions)
        and in_range(stated, profile.kernel_table_versions)
        and kernel_folder(gpu.name) in AUTO_CLOCK_FOLDERS
    )


def for_layout(found: RowEngine, cand: Candidate, row: MeasuredRow | None = None) -> RowEngine:
    """A row's engine on a candidate layout: with data-parallel attention on an engine whose
    limits hold per rank (``semantics.CAP_PER_ATTENTION_RANK``: TensorRT-LLM, vLLM; SGLang's
    are the instance's), each of the ``cand.attention_ranks`` ranks schedules its own requests, so an
    engine profile's limits, stated or default, are per rank (``EngineConfig.per_instance``;
    a cap per instance would be contradicted by measured runs holding more requests than it),
    and so is the cap a row states under the ideal engine (whose own default is no cap). A row
    trtllm-bench ran with the limits it picks itself runs with those (``bench_limits``)."""
    found = _bench_limited(found, cand, row)
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


def _tool_limits(found: RowEngine, cand: Candidate, row: MeasuredRow | None):
    """The ``BenchLimits`` trtllm-bench picks for a row it ran without stated limits on a
    candidate layout (one attention rank's where the attention is data parallel); None for
    any other row."""
    if row is None or not row.bench_limits or found.profile is None:
        return None
    if found.profile.family != "trtllm" or row.lengths is None or row.bits is None:
        return None
    L = row.lengths
    return bench_limits(
        row.arch, row.gpu, row.bits, cand.tensor, cand.pipeline, cand.attention_dp,
        float(L.input_mean), float(L.output_mean), row.engine_version, row.kv_cache_fraction,
        float(L.input_max), found.config.prefill == "chunked",
    )  # fmt: skip


def tool_limits_text(found: RowEngine, cand: Candidate, row: MeasuredRow) -> str:
    """The limits trtllm-bench picked for a row on the layout it was predicted on, as the
    engine label states them ("96 requests and 2,048 tokens a step a rank: its older memory
    estimate"); empty for a row that states its own or was not run by the tool."""
    lim = _tool_limits(found, cand, row)
    if lim is None:
        return ""
    rank = " a rank" if cand.attention_dp else ""
    return (
        f"{lim.max_batch_requests:,} requests and {lim.step_token_budget:,} tokens a step"
        f"{rank}: {lim.how}"
    )


def _bench_limited(found: RowEngine, cand: Candidate, row: MeasuredRow | None) -> RowEngine:
    """A TensorRT-LLM row trtllm-bench ran without stated limits, on a candidate layout: the
    ``max_batch_size`` and ``max_num_tokens`` its memory estimate picks for that layout (one
    attention rank's where the attention is data parallel; ``bench_limits``)."""
    lim = _tool_limits(found, cand, row)
    if lim is None:
        return found
    # unless the run's options name the sizes, the tool turns CUDA-graph padding on up to its
    # own batch limit (``bench/benchmark/utils/general.py``, ``get_settings``) and the LLM API
    # generates the sizes (``trtllm_graph_sizes``)
    graphs = found.config.graph_batch_sizes or trtllm_graph_sizes(lim.max_batch_requests)
    config = dataclasses.replace(
        found.config,
        max_batch_requests=lim.max_batch_requests,
        step_token_budget=lim.step_token_budget,
        graph_batch_sizes=graphs,
    )
    return dataclasses.replace(found, config=config)


def row_engine(row: MeasuredRow, base: Assumptions, engine=None) -> RowEngine | str:
    """The engine of a row under ``base``, or the status saying why there is none: under the
    achievable preset the row's engine (or ``engine``, a name, "family@version", a path or a
    profile) at the row's version on its platform; never another engine's profile."""
    offline = row.scenario in OFFLINE_SCENARIOS
    cap = int(row.batch_cap) if row.batch_cap else None
    if base.engine is None:
        return RowEngine(None, REPLAY_IDEAL_ENGINE.capped(cap), "ideal")
    name = engine if engine is not None else row.engine
    if name is None:
        return (
            "unresolved: engine unknown (the row names no serving engine: give an engine "
            "column, or --engine NAME)"
        )
    version = getattr(row, "engine_version", None)
    # "trtllm@1.2" runs that version's kernels whatever the row says (the harness and the
    # tool's limits stay the row's own)
    kernels_at = (split_engine(name)[1] if isinstance(name, str) else None) or version
    platform = getattr(row, "platform", None) or platform_of(row.gpu)
    try:
        prof = select_engine(name, version, platform)
    except SpecError as exc:
        return f"unresolved: engine {engine_name(name)!r}: {exc.problem}"
    batch, budget = prof.scheduler_limits(row.gpu, offline)
    if row.token_budget:  # the budget the row ran with (the ideal engine tunes its own)
        budget = int(row.token_budget)
    harness = harness_of(prof, row, version)
    # the host work a step waits for depends on the runtime (§F5): a harness names the one it
    # runs the model on; a row stating no version (nor an engine given) runs one not known,
    # whose host work is charged as by an engine that waits for it
    exposed = harness.exposed
    unknown = exposed is None and not version and engine is None
    if unknown:
        exposed = RUNTIME_UNKNOWN_HOST_OVERHEAD_EXPOSED
    if exposed is not None and exposed != prof.host_overhead_exposed:
        prof = prof.with_terms(host_overhead_exposed=exposed)
    else:
        unknown = False
    if harness.memory:  # the memory the harness's runtime sets aside (§F8)
        prof = prof.with_terms(**dict(harness.memory))
    if harness.graphs is not None:  # the CUDA graphs of the harness's runtime (§F5)
        prof = prof.with_terms(cuda_graph_max_batch=harness.graphs)
    prof = as_stated(prof, row, bool(base.kernel_tables))
    if isinstance(prof, str):
        return prof
    # per instance: ``for_layout`` spreads it over attention ranks itself; with attention DP
    # each rank schedules its own requests (``EngineConfig.rank_scheduling``)
    config = EngineConfig(
        cap or batch,
        budget,
        harness.admission,
        harness.prefill,
        scheduler_steps=harness.steps,
        admission_cadence=harness.cadence,
        per_attention_rank=False,
        rank_scheduling=True,
        router=harness.router,
        adp_balancing=harness.balancing,
        graph_batch_sizes=row.graph_batch_sizes if prof.family == "trtllm" else (),
    )
    named = bool(version or engine is not None)
    label = engine_label(prof, row, named, budget, unknown, harness, exposed, kernels_at)
    if row.bench_limits and prof.family == "trtllm":
        label += f", {TOOL_LIMITS}"
    if config.graph_batch_sizes:
        label += f", decode steps padded to CUDA graphs of up to {max(config.graph_batch_sizes)}"
    elif row.bench_limits and prof.family == "trtllm":  # ``_bench_limited``: the tool's own
        label += ", decode steps padded to CUDA graphs up to its batch limit"
    n = _dataset_requests(row)
    if n:  # the run's own count (a ``requests`` column), else the overview's
        whose = "its" if row.lengths.issued else "the performance overview's"
        label += f", over {whose} dataset of {n:,} requests queued at once"
    tables = base.kernel_tables is None and reads_kernel_tables(prof, kernels_at, row.gpu)
    if tables:
        label += ", each operation priced from the measured kernel tables"
    return RowEngine(prof, config, label, tables, bool(row.two_batch_overlap))


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
        if self.expert_parallel:  # the experts split over the tensor group
            text += f" EP{self.tensor}"
        text = " ".join([text, *layouts.attention_words(self.tensor, self.attention_ranks)])
        text = f"{self.replicas} x {text}" if self.replicas > 1 else text
        if self.step_token_budget is not None:
            text += f", {self.step_token_budget} tokens/step"
        return text


# --- building the plan ------------------------------------------------------------------------
def _assumptions_for(base: Assumptions, found: RowEngine, cand: Candidate) -> Assumptions:
    """A candidate's assumptions: its engine profile (with the kernel clock where the row's
    engine reads the tables), and its experts split over its tensor group at every batch or
    never (``stated_experts``), as an engine launched that way runs. A profile that sizes its
    activation memory by the step budget (§F8) takes the row's budget, one attention rank's
    (``for_layout`` made the config's the instance's where each rank schedules its own)."""
    profile, budget = found.profile, found.config.step_token_budget
    if cand.attention_dp and profile is not None and profile.family in sem.CAP_PER_ATTENTION_RANK:
        budget = max(budget // max(cand.attention_ranks, 1), 1)
    a = base if profile is None else base.replace(engine=profile.at_step_budget(budget))
    stated = {k: True for k in ("kernel_tables", "two_batch_overlap") if getattr(found, k)}
    return stated_experts(a.replace(**stated) if stated else a, cand.expert_parallel)


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
        if for_fit and found.kernel_tables:  # a fit times the profile's terms
            found = dataclasses.replace(found, kernel_tables=False)
        plan.engines[i] = row_found = found
        options = candidates(row, ideal=row_found.profile is None)
        for j, cand in enumerate(options):
            found = for_layout(row_found, cand, row)
            a = _assumptions_for(base, found, cand)
            if cand.tensor // cand.attention_ranks > row.arch.attention.query_heads:
                plan.infeasible.setdefault(i, split_heads(row, cand))  # no engine splits a head
                continue
            model, prefill = _models(row.arch, row.gpu, row.bits, a)
            if requests_held(model, row, cand) < 1.0:
                plan.infeasible.setdefault(i, no_room(row, model, cand))
                continue
            # closed-loop rows are simulated, except for the fit (their steady state) and
            # under the ideal engine (its bound: the fluid steady state, no scheduling losses)
            steady_loop = for_fit or found.profile is None
            loaded = row.scenario in LOADED and not (steady_loop and row.scenario == "closed_loop")
            code = f"{row.scenario}|{row.metric.quantity}"
            # an MLPerf Offline row's throughput is LoadGen's, over the whole run and its drain:
            # simulated (the fit keeps its steady state, whose terms the drain barely moves);
            # so are a whole dataset's latencies (trtllm-bench reports them at maximum load)
            whole = (
                row.scenario == "offline"
                and _whole_run(row, found.profile is not None)
                and not for_fit
            )
            if not loaded and code not in STEADY_KINDS and not (whole and offline_latency(row)):
                continue  # no closed form (a closed-loop TTFT in the fit): left out
            if (
                loaded
                or whole
                or (row.scenario == "offline" and not exact_steady_state(model, row, cand, found))
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
                groups[key] = StepGroup(model, prefill, layout, index=len(groups))
            if add_points(plan, groups[key], i, j, row, cand, model, found):
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
    """Whether a row's throughput is over its whole run to the last completion
    (``replay.RunSpan``) under an engine profile (the ideal engine's bound stays the steady
    rate, which the drain can only lower): MLPerf LoadGen's, or trtllm-bench's over its
    dataset (``_dataset_requests``)."""
    return engine and (row.benchmark is not None or _dataset_requests(row) > 0)


def _dataset_requests(row: MeasuredRow) -> int:
    """Requests of an offline row's dataset, all queued at once, its throughput over the whole
    run (0: a steady rate): the count a ``requests`` column states, any engine's; else, for a
    trtllm-bench row, the performance overview's for its lengths (``overview_requests``). An
    MLPerf row's run is LoadGen's (``replay.offline_requests``)."""
    if row.scenario != "offline" or row.lengths is None or row.benchmark is not None:
        return 0
    L = row.lengths
    if L.issued:
        return int(L.issued)
    if row.bench_limits and row.engine == "trtllm":
        return overview_requests(L.input_mean, L.output_mean)
    return 0


def _case(row: MeasuredRow, cand: Candidate, a: Assumptions, config: EngineConfig):
    """The load-engine case of a row on a candidate layout."""
    L = row.lengths
    dataset = _dataset_requests(row)
    sd_in, sd_out = length_sds(L)
    loop = row.scenario == "closed_loop"
    clients = max(1, int(round(row.concurrency / cand.replicas))) if loop else None
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
        dataset or int(L.issued),
        # an expected figure is read where a submitter runs; the bound at its most load
        rp.SUBMITTED_LOAD_SHARE if a.engine is not None else 1.0,
        prefill_pool(row),
        _whole_run(row, a.engine is not None),
        dataset > 0,
        int(L.distinct_prompts),
    )


def prefill_pool(row: MeasuredRow):
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


#: ``compare``'s progress callback, read where the rows under load are simulated.
_PROGRESS: ContextVar[Callable[[str], None] | None] = ContextVar("progress", default=None)


def _load_pairs(plan: Plan) -> dict:
    """(row, candidate) -> (value, score, note) of the rows under load (``_row_pairs``), in
    this process, on ``_JOBS`` worker processes (``_on_processes``) or on a Dask cluster
    (``_DASK``, ``_on_dask``): the same numbers, in the same order."""
    by_row: dict = {}
    for (i, j), case in plan.load.items():
        by_row.setdefault(i, []).append((j, case))
    tasks = [
        (
            i,
            plan.rows[i].metric.quantity,
            float(plan.rows[i].per_count),
            plan.rows[i].scenario,
            cases,
        )
        for i, cases in by_row.items()
    ]
    progress = _PROGRESS.get()
    jobs, dask = _JOBS.get(), _DASK.get()
    if dask is not None and tasks:
        done = _on_dask(tasks, dask, jobs, progress)
    elif jobs > 1 and len(tasks) > 1:
        done = _on_processes(tasks, jobs, progress)
    else:
        done = []
        for n, task in enumerate(tasks):
            if progress is not None:
                progress(f"{n:,}/{len(tasks):,} rows under load predicted")
            done.append(_row_pairs(*task))
    return {key: value for pairs in done for key, value in pairs.items()}


def _row_pairs(i: int, q: str, per_gpu: float, scenario: str, cases: list) -> dict:
    """(i, candidate) -> (value, score, note) of one row under load, metric ``q``. A Server or
    Interactive row simulates the candidate layouts whose steady-state estimate is within
    ``replay.RANKING_SHARE`` of the best one's, and always the one that prefills a prompt
    fastest (the widest tensor-parallel instance: the estimate ranks decode throughput and
    cannot see the TTFT limit, which long prompts make bind first on narrower instances);
    of those, a layout whose load search's walk failed a load that another's held, less
    ``replay.BRACKET_MARGIN``, is not bisected (``replay.bracket``: it serves less and cannot
    be the row's best). An Offline row replays the layouts whose estimate is within
    ``replay.RANKING_SHARE`` of the best one's (``_worth_replaying``). Rows with the same case
    share every simulation."""
    if scenario in ("server", "interactive") and len(cases) > 1:
        cases = _worth_searching(cases)
    elif scenario == "offline" and len(cases) > 1:
        cases = _worth_replaying(cases)
    out = {}
    for j, case in cases:
        o = rp.replay(case)
        value = o.value(q) / per_gpu
        if q in rp.LOOP_TIMES and scenario == "closed_loop":
            score = -o.tpot
        elif q == "user_speed" and scenario == "closed_loop":
            score = 1.0 / o.tpot if o.tpot > 0 else -math.inf
        else:
            score = o.throughput
        out[(i, j)] = (value, score if o.ok else -math.inf, o.note)
    return out


def _ranked(cases: list, extra=lambda ranked: set()) -> list:
    """The candidate layouts whose steady-state estimate is within ``RANKING_SHARE`` of the
    best one's, and those ``extra`` picks from the (estimate, index, case) of the finitely
    estimated; all of them where no estimate is finite."""
    guesses = [(rp.estimate(c).throughput, j, c) for j, c in cases]
    ranked = [g for g in guesses if np.isfinite(g[0])]
    if not ranked:
        return cases
    top = max(g for g, _, _ in ranked)
    keep = {j for g, j, _ in guesses if g >= rp.RANKING_SHARE * top} | extra(ranked)
    return [(j, c) for j, c in cases if j in keep]


def _worth_replaying(cases: list) -> list:
    """The candidate layouts of an Offline row worth replaying (``_row_pairs``): those whose
    steady-state estimate is within ``RANKING_SHARE`` of the best one's (``_ranked``). The
    replay of an Offline row is its engine at its most load, which the estimate ranks: of the
    distinct Offline rows with several layouts that the training file (30) and the newer
    MLPerf rounds (129) predict, the layout whose replay serves most was the estimate's best
    or within 0.89 of it."""
    return _ranked(cases)


#: The load each kind of layout (attention-DP or not) held in this process's walks over its
#: estimate, the last ``KIND_SHARES_KEPT`` of each (``_kind_share``).
_KIND_SHARES: dict[bool, list[float]] = {}
KIND_SHARES_KEPT = 64


def _kind_share(case) -> float:
    """The median of ``_KIND_SHARES`` of ``case``'s kind (1 before any): ``_worth_searching``
    walks the likeliest winner first and cuts the others at its load. Cost only: with monotone
    verdicts the answer is the same in any order. (Attention-DP walks held 0.6-0.8 of the
    estimate, which sees no rank's imbalance, on the newer MLPerf rows; the others 0.94-0.98.)"""
    shares = _KIND_SHARES.get(case.attention_ranks > 1)
    return float(np.median(shares)) if shares else 1.0


def _worth_searching(cases: list) -> list:
    """The candidate layouts of a Server or Interactive row worth a full load search
    (``_row_pairs``): within ``RANKING_SHARE`` of the best estimate or the widest
    (``_ranked``), and not bracketed below another's held load by ``BRACKET_MARGIN``."""
    widest = max(c.tensor for _, c in cases)

    def the_widest(ranked: list) -> set:
        wide = [(g, j) for g, j, c in ranked if c.tensor == widest]
        return {max(wide)[1]} if wide else set()

    cases = _ranked(cases, the_widest)
    if len(cases) < 2:
        return cases
    found: dict = {}  # walk each search; bisect only where the answer can win
    held = 0.0  # the most load a walked layout held
    for j, c in sorted(cases, key=lambda jc: -rp.estimate(jc[1]).throughput * _kind_share(jc[1])):
        if held > 0 and rp.fails_at(c, held / rp.BRACKET_MARGIN):
            continue  # it fails below what another held: one run, not a walk
        found[j] = rp.bracket(c)
        held = max(held, found[j][0])
        if found[j][0] > 0 and (est := rp.estimate(c).rate_per_s) > 0:
            kind = _KIND_SHARES.setdefault(c.attention_ranks > 1, [])
            kind[:] = [*kind[-(KIND_SHARES_KEPT - 1) :], found[j][0] / est]
    return [
        (j, c)
        for j, c in cases
        if j in found and not (held > 0 and found[j][1] * rp.BRACKET_MARGIN <= held)
    ]


#: Worker processes ``_load_pairs`` replays rows on (``compare``'s ``jobs``; 1: this one).
_JOBS: ContextVar[int] = ContextVar("jobs", default=1)
#: The Dask scheduler ``_load_pairs`` replays rows on (``compare``'s ``dask``: an address, or
#: ``local`` for a local cluster of ``_JOBS`` workers; None: processes of this machine).
_DASK: ContextVar[str | None] = ContextVar("dask", default=None)
#: A Server or Interactive row's layout costs about this many runs of any other row's (its
#: load search, a gallop and a bisection, and the replay at its answer: the newer MLPerf
#: file's 468 Interactive rows ran 825 in 119 searches): how the batches are ordered,
#: largest first. It orders the work only; the table is the same.
SEARCH_RUNS = 7


def _batches(tasks: list) -> list[list[int]]:
    """The tasks' indices in batches for workers: the rows of one configuration
    (``replay.configuration``) in one batch, so they share their runs and guesses as they do
    in one process (what a process keeps of other configurations moves no answer), the
    largest batches first, so the workers finish together rather than one waiting on a large
    batch drawn last."""
    groups: dict = {}
    for k, task in enumerate(tasks):
        groups.setdefault(rp.configuration(task[4][0][1]), []).append(k)

    def runs(k: int) -> int:  # the simulations a task asks for, about
        searched = tasks[k][3] in ("server", "interactive")
        return len(tasks[k][4]) * (SEARCH_RUNS if searched else 1)

    return sorted(groups.values(), key=lambda b: -sum(map(runs, b)))  # stable: ties in order


def _collected(tasks: list, futures: dict, finishing, progress) -> list:
    """Each task's ``_row_pairs`` from the batches' ``futures`` (future -> its indices), in
    the tasks' order, as ``finishing`` yields them done. A batch whose worker was lost or
    raised is reported in its rows' status (``_failed_pairs``); the others go on."""
    done: list = [None] * len(tasks)
    finished = 0
    for future in finishing:
        batch = futures[future]
        try:
            results = future.result()
        except Exception as exc:  # a lost worker (or its batch raised): its rows say so
            results = [_failed_pairs(tasks[k], exc) for k in batch]
        for k, pairs in zip(batch, results):
            done[k] = pairs
        finished += len(batch)
        if progress is not None:
            progress(f"{finished:,}/{len(tasks):,} rows under load predicted")
    return done


#: The status of a row whose replay's worker failed (a lost process, its batch raised): the
#: row has no prediction, whatever its other layouts' closed forms give (``_failed_pairs``).
WORKER_FAILED = "unresolved: the worker replaying it failed"


def _failed_pairs(task: tuple, exc: BaseException) -> dict:
    """``_row_pairs``'s answer for a row whose worker failed: no prediction, and why."""
    i, cases = task[0], task[4]
    lines = str(exc).strip().splitlines()
    why = type(exc).__name__ + (f": {lines[0].strip()[:200]}" if lines else "")
    note = f"{WORKER_FAILED} ({why}); run it again"
    return {(i, j): (math.nan, -math.inf, note) for j, _ in cases}


def _on_processes(tasks: list, jobs: int, progress) -> list:
    """``_row_pairs`` of every task on ``jobs`` spawned processes (``studies.execution``'s
    pool), in the tasks' order, a batch (``_batches``) at a time."""
    from concurrent.futures import as_completed

    from ..studies.execution import process_pool

    batches = _batches(tasks)
    with process_pool(min(jobs, len(batches))) as pool:
        futures = {pool.submit(_batch_pairs, [tasks[k] for k in b]): b for b in batches}
        try:
            return _collected(tasks, futures, as_completed(futures), progress)
        except BaseException:  # an interrupt: the batches not started are not waited for
            for future in futures:
                future.cancel()
            raise


def _on_dask(tasks: list, address: str, jobs: int, progress) -> list:
    """``_row_pairs`` of every task on a Dask cluster (``studies.execution.dask_client``: a
    local one of ``jobs`` worker processes, or a running scheduler's workers), in the tasks'
    order, a batch (``_batches``) a task: the same table as one process's."""
    from distributed import as_completed

    from ..studies.execution import dask_client

    with dask_client(address, jobs, progress) as client:
        futures = {
            client.submit(_batch_pairs, [tasks[k] for k in b], pure=False): b
            for b in _batches(tasks)
        }
        return _collected(tasks, futures, as_completed(futures), progress)


#: Held while a worker replays a batch: a Dask worker runs tasks on several threads of one
#: process, whose replays share the module's kept runs and guesses (``replay``), so its batches
#: run one at a time (pure Python, they gain nothing from threads: its processes use the cores).
_REPLAYING = threading.Lock()


def _batch_pairs(tasks: list) -> list:
    """``_row_pairs`` of a batch of tasks, in a worker (one batch at a time a process)."""
    with _REPLAYING:
        return [_row_pairs(*task) for task in tasks]


def engine_name(engine) -> str:
    """How the output names an engine given as a name or as a profile."""
    return engine if isinstance(engine, str) else getattr(engine, "name", str(engine))
