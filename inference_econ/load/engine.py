"""One engine instance: a model on whole GPUs with a fixed layout, its KV-cache capacity, its
scheduler's limits and the table of its step times (docs/model.md §E1, §E3).

The layout is chosen once, as a deployment does: among the whole layouts of the instance
(pipeline degrees dividing the layers and the GPUs, attention tensor degrees dividing the
heads, 1-D or 2-D tensor parallelism), the one whose engine runs the offered load fastest
(docs/model.md §E6): the shortest step at the steady state the load settles into, or, when
the load outgrows every layout, the one that serves the most requests per second.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InfeasibleError, SpecError, short
from ..model.latency import StepModel, experts_placement, model_inputs, prefill_step_model
from ..model.layouts import uneven_reason
from ..model.mixed_step import (
    EngineLayout,
    StepTable,
    candidate_layouts,
    captured_sizes,
    with_graphs,
)
from ..model.step_calls import whole_expert_degrees
from ..model.workload import Workload, compile_workload
from ..serving.setting import Setting
from ..specs.engine import (
    ADMISSIONS,
    IDEAL_MAX_BATCH_REQUESTS,
    IDEAL_STEP_TOKEN_BUDGET,
    LIMITS_PER_ATTENTION_RANK,
    PREFILL_MODES,
    Admission,
    PrefillMode,
)
from ..specs.features import ADP_BALANCING_ENGINES
from .kv_tiers import KvTier, TierSpace, check_tiers, tier_space
from .layout_choice import SATURATED, OfferedLoad, choose_layout, layout_capacity
from .speculation import DraftEngine, SpecSchedule, draft_engine, resident_draft

if TYPE_CHECKING:
    from .routing import RouterPolicy


#: The most steps TensorRT-LLM's attention-DP balancing may wait or time out after
#: (``EngineConfig.adp_balancing``; TensorRT-LLM's performance overview runs 0,60 and
#: MLPerf's DeepSeek-R1 entries 2,6 and 3,9).
ADP_BALANCING_MOST = 100_000
#: The batching wait and timeout steps of a balancing switched on without them: the defaults
#: of TensorRT-LLM's ``AttentionDpConfig`` (``tensorrt_llm/llmapi/llm_args.py``,
#: ``batching_wait_iters`` 10, ``timeout_iters`` 50).
ADP_BALANCING_DEFAULTS = (10, 50)
#: How the refusal of a balancing under an engine without it begins (a fleet file's reader
#: gives its own fix for it).
NO_BALANCING = "is TensorRT-LLM's attention-DP balancing"


def balances_attention_dp(prof) -> bool:
    """Whether the engine of the profile ``prof`` (None: the ideal engine, whose ranks are
    pooled) can balance its attention-DP ranks (``features.ADP_BALANCING_ENGINES``)."""
    return prof is not None and prof.family in ADP_BALANCING_ENGINES


#: How a balancing is written (``balancing_words``), and so how a run's note on balancing it
#: does not run begins (``Instance.balancing_notes``; a load frontier lists those layouts).
BALANCING_NOT_RUN = "attention-DP balancing "


def balancing_words(pair: tuple[int, int], sep: str = ",") -> str:
    """A balancing as an export's benchmark and a label state it ("attention-DP balancing
    0,60"), which a measured row's reader takes back (``semantics.balancing_of``)."""
    return f"{BALANCING_NOT_RUN}{pair[0]}{sep}{pair[1]}"


def adp_pair(wait: str, timeout: str) -> tuple[int, int] | None:
    """(wait, timeout) steps of an attention-DP balancing written as text, or None where they
    are not whole numbers (ASCII digits), the timeout at least 1, each at most
    ``ADP_BALANCING_MOST``: one rule for a setting and a measured row."""
    digits = len(str(ADP_BALANCING_MOST))  # longer text is over it (and int() refuses 4,300+)
    texts = (str(wait).strip(), str(timeout).strip())
    if not all(t.isascii() and t.isdigit() and len(t) <= digits for t in texts):
        return None
    pair = int(texts[0]), int(texts[1])
    return pair if adp_in_range(pair) else None


def adp_in_range(pair) -> bool:
    """Whether whole-number balancing counts are in range: a wait of 0 or more, a timeout of
    1 or more, each at most ``ADP_BALANCING_MOST``."""
    return pair[0] >= 0 and pair[1] >= 1 and max(pair) <= ADP_BALANCING_MOST


#: The prompt schedulings that run prompts first in steps of their own while decoding waits
#: (§E3; the scheduler's policies, ``scheduling.PREFILL``, read it).
PROMPTS_FIRST = ("separate", "chunked_separate")


@dataclass(frozen=True)
class EngineConfig:
    """The scheduler's limits: concurrent requests (vLLM's ``max_num_seqs``) and tokens per
    step, decode tokens plus prompt tokens (``max_num_batched_tokens``); how requests are
    admitted (``ADMISSIONS``) and how prompts are scheduled (``PREFILL_MODES``)."""

    max_batch_requests: int = IDEAL_MAX_BATCH_REQUESTS
    step_token_budget: int = IDEAL_STEP_TOKEN_BUDGET
    admission: Admission = "recompute"
    prefill: PrefillMode = "chunked"
    #: Speculation (with a draft or draft heads, §E8): switched off above this many running
    #: requests (None: never), and how the cycle is chosen (``speculation.SPEC_SCHEDULES``).
    speculation_max_batch: int | None = None
    speculation_schedule: SpecSchedule = "fixed"
    #: Keep the KV cache of finished prompts and answers in the memory the running requests
    #: leave, and reuse it for prompts that start with them (§E9).
    prefix_caching: bool = True
    #: How the deployment's load balancer sends requests to its instances
    #: (``routing.ROUTERS``, §E10).
    router: RouterPolicy = "random"
    #: Limits to take from the setting's engine profile, its own defaults on the GPU
    #: (``engine_config``): any of ``ENGINE_OWN``; those not named are this config's (a user's
    #: ``--max-batch``). Without an engine profile (the ideal engine) nothing is taken.
    engine_own: tuple[str, ...] = ()
    #: Decode steps the engine runs per scheduler call (vLLM V0's ``num_scheduler_steps``,
    #: "multi-step scheduling"): requests are admitted and prompts scheduled only between
    #: windows of this many decode steps, so an arrival waits for its window to end (§E1).
    scheduler_steps: int = 1
    #: A prefill-admission cadence (AMD's vLLM V1 scheduler patch of MLPerf v6.0, the
    #: variables ``VLLM_SUBSEQUENT_DECODE_STEPS`` and ``VLLM_MIN_REQUEST_DECODE_STEP``): waiting
    #: requests are admitted on one scheduler call in ``admission_cadence[0] + 1`` only, while
    #: at least ``admission_cadence[1]`` requests run; the calls between schedule the running
    #: requests alone (§E1). (0, 0): every call admits, as vLLM does.
    admission_cadence: tuple[int, int] = (0, 0)
    #: Whether the limits hold per data-parallel attention rank (``on_layout``); None: as the
    #: engine profile's family has them (``specs.engine.LIMITS_PER_ATTENTION_RANK``), False
    #: for limits already stated per instance (the replay's, ``predicting.for_layout``).
    per_attention_rank: bool | None = None
    #: Whether each data-parallel attention rank of the layout schedules its own requests
    #: (docs/model.md §F9, "Attention DP"): an admitted request goes to the least-loaded rank
    #: and a step lasts as long as its busiest rank's prompt work (``simulate``); None: as the
    #: engine profile (``engine_config``: every engine profile; the ideal engine pools them).
    rank_scheduling: bool | None = None
    #: TensorRT-LLM's attention-DP balancing (``adp_balancing_batching_wait_iters``,
    #: ``adp_balancing_timeout_iters``): prompts are held until every rank has one, at most the
    #: timeout's steps, and when every rank also decodes, for the batching wait's steps first;
    #: None: off (TensorRT-LLM's ``AttentionDpConfig.enable_balance`` default False).
    adp_balancing: tuple[int, int] | None = None
    #: Tiers under the prefix cache, nearest first: host memory, then local disk (§E13;
    #: none: evicted prefixes are dropped).
    kv_tiers: tuple[KvTier, ...] = ()
    #: Batch sizes of the CUDA graphs a decode-only step is padded up to, per attention rank
    #: (TensorRT-LLM's ``cuda_graph_config`` with ``enable_padding``, §F5); empty: a step runs
    #: at its own batch.
    graph_batch_sizes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        from .routing import check_router
        from .speculation import SPEC_SCHEDULES

        check_router(self.router)
        for name in (
            "max_batch_requests",
            "step_token_budget",
            "speculation_max_batch",
            "scheduler_steps",
        ):
            value = getattr(self, name)
            if value is None and name == "speculation_max_batch":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise SpecError("argument", name, f"is {value!r}", "expected a whole number >= 1")
        given = self.admission_cadence
        if (
            not isinstance(given, tuple)
            or len(given) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in given)
            or min(given) < 0
        ):
            raise SpecError(
                "argument",
                "admission_cadence",
                f"is {short(given)}",
                "(decode-only calls between admitting calls >= 0, requests below which every "
                "call admits >= 0), or (0, 0) for admission on every call",
            )
        if self.adp_balancing is not None:
            pair = isinstance(self.adp_balancing, (tuple, list))
            given = tuple(self.adp_balancing) if pair else ()
            whole = [isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in given]
            if len(given) != 2 or not all(whole) or not adp_in_range(given):
                raise SpecError(
                    "argument",
                    "adp_balancing",
                    f"is {short(self.adp_balancing)}",
                    "(batching wait steps >= 0, timeout steps >= 1, each at most "
                    f"{ADP_BALANCING_MOST:,}), or None for no balancing",
                )
        check_tiers(self.kv_tiers)
        sizes = self.graph_batch_sizes
        if not isinstance(sizes, tuple) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in sizes
        ):
            raise SpecError(
                "argument",
                "graph_batch_sizes",
                f"is {short(sizes)}",
                "a tuple of whole numbers >= 1 (the CUDA graphs' batch sizes), or () for none",
            )
        if not isinstance(self.engine_own, (tuple, list, frozenset, set)):
            raise SpecError(
                "argument",
                "engine_own",
                f"expected names of limits, got {short(self.engine_own)}",
                f"a tuple of any of {', '.join(ENGINE_OWN)}",
            )
        for name in self.engine_own:
            if name not in ENGINE_OWN:
                raise SpecError(
                    "argument", "engine_own", f"names {name!r}", f"any of {', '.join(ENGINE_OWN)}"
                )
        for name, allowed in (
            ("admission", ADMISSIONS),
            ("prefill", PREFILL_MODES),
            ("speculation_schedule", SPEC_SCHEDULES),
        ):
            if getattr(self, name) not in allowed:
                raise SpecError(
                    "argument", name, f"is {getattr(self, name)!r}", f"one of {', '.join(allowed)}"
                )

    def per_instance(self, ranks: int) -> EngineConfig:
        """The limits of an instance that runs ``ranks`` data-parallel attention ranks: each
        rank schedules its own requests (TensorRT-LLM's ``max_batch_size`` and
        ``max_num_tokens`` and vLLM's ``max_num_seqs`` hold per rank), so the instance holds
        ``ranks`` times the requests and prompt tokens of one."""
        if ranks <= 1:
            return self
        return dataclasses.replace(
            self,
            max_batch_requests=int(self.max_batch_requests * ranks),
            step_token_budget=int(self.step_token_budget * ranks),
        )

    def captured_graphs(self, ranks: int) -> list[int]:
        """The CUDA graph batch sizes each of ``ranks`` attention ranks captures of
        ``graph_batch_sizes`` (``mixed_step.captured_sizes``): none above the decode batch its
        share of these limits allows."""
        cap = min(self.max_batch_requests, self.step_token_budget) // max(ranks, 1)
        return captured_sizes(self.graph_batch_sizes, cap)

    def capped(self, cap: int | None) -> EngineConfig:
        """This engine running at most ``cap`` requests at once (None or 0: its own limit)."""
        return dataclasses.replace(self, max_batch_requests=cap or self.max_batch_requests)

    def on_layout(self, layout: EngineLayout) -> EngineConfig:
        """The limits of an instance in ``layout``: ``per_instance`` of its data-parallel
        attention ranks where the engine's limits hold per rank, else these."""
        ranks = int(round(layout.attention_divisor))
        return self.per_instance(ranks) if self.per_attention_rank and ranks > 1 else self

    def rank_limits(self, layout: EngineLayout) -> tuple[int, int]:
        """(max_batch_requests, step_token_budget) one attention rank runs with, of an
        instance in ``layout`` with these limits (``on_layout``'s): what the engine is
        launched with where its limits hold per rank (TensorRT-LLM's ``max_batch_size`` and
        ``max_num_tokens``)."""
        ranks = int(round(layout.attention_divisor))
        if not (self.per_attention_rank and ranks > 1):
            return self.max_batch_requests, self.step_token_budget
        return max(self.max_batch_requests // ranks, 1), max(self.step_token_budget // ranks, 1)

    def metadata(self, speculating: bool) -> dict:
        """The limits a run states in its metadata (``LoadResult.metadata``): those set, and
        the speculation's where it speculates."""
        meta: dict[str, object] = {
            "max_batch_requests": self.max_batch_requests,
            "step_token_budget": self.step_token_budget,
        }
        if self.scheduler_steps > 1:
            meta["scheduler_steps"] = self.scheduler_steps
        if self.router != "random":
            meta["router"] = self.router
        if not self.prefix_caching:
            meta["prefix_caching"] = False
        elif self.kv_tiers:
            meta["kv_offload"] = "; ".join(t.describe() for t in self.kv_tiers)
        if self.adp_balancing is not None:
            meta["adp_balance"] = ",".join(map(str, self.adp_balancing))
        if speculating:
            meta["speculation_schedule"] = self.speculation_schedule
            if self.speculation_max_batch is not None:
                meta["speculation_max_batch"] = self.speculation_max_batch
        return meta

    def describe(self) -> str:
        """Such as "2048 requests, 8192 tokens per step, no_evict admission, whole prompts"."""
        return (
            f"{self.max_batch_requests} requests, {self.step_token_budget} tokens per step, "
            f"{self.admission} admission, {self.prefill} prompts"
            + ("" if self.prefix_caching else ", no prefix cache")
            + "".join(f", {t.describe()}" for t in self.kv_tiers)
            + (f", {self.scheduler_steps} steps per schedule" if self.scheduler_steps > 1 else "")
            + (f", {cadence_text(self.admission_cadence)}" if self.admission_cadence[0] else "")
            + (
                ", attention-DP balancing (wait {}, timeout {} steps)".format(*self.adp_balancing)
                if self.adp_balancing is not None
                else ""
            )
            + (
                f", decode steps padded to CUDA graphs of up to {max(self.graph_batch_sizes)}"
                if self.graph_batch_sizes
                else ""
            )
        )


def cadence_text(cadence: tuple[int, int]) -> str:
    """Such as "prompts admitted every 7th schedule while 1,216 or more requests run"."""
    period, floor = cadence[0] + 1, cadence[1]
    last = {1: "st", 2: "nd", 3: "rd"}.get(period % 10, "th") if period % 100 // 10 != 1 else "th"
    nth = f"{period}{last}"
    return f"prompts admitted every {nth} schedule" + (
        f" while {floor:,} or more requests run" if floor else ""
    )


#: vLLM-like defaults: 256 requests, 2,048 tokens per step.
DEFAULT_ENGINE = EngineConfig()
#: What an engine profile sets of an instance's scheduler (``EngineConfig.engine_own``).
ENGINE_OWN = (
    "max_batch_requests",
    "step_token_budget",
    "admission",
    "prefill",
    "scheduler_steps",
    "graph_batch_sizes",
)


def trtllm_graph_sizes(max_batch: int) -> tuple[int, ...]:
    """The CUDA graph batch sizes TensorRT-LLM 1.x's LLM API generates with padding on and no
    sizes given (``CudaGraphConfig._generate_cuda_graph_batch_sizes``): 1, 2, 4, the multiples
    of 8 to 128, the powers of 2 from 256 below ``max_batch``, and ``max_batch`` itself."""
    limit = max(int(max_batch), 1)
    sizes = {1, 2, 4, *range(8, 129, 8)}
    sizes |= {2**i for i in range(8, math.ceil(math.log2(max(limit, 2))))}
    out = sorted(s for s in sizes if s <= limit)
    return tuple(out if out and out[-1] == limit else [*out, limit])


def engine_config(config: EngineConfig, setting: Setting) -> EngineConfig:
    """The scheduler an instance of ``setting`` runs (docs/model.md §E1): under an engine
    profile, the limits ``config.engine_own`` names are the profile's own defaults on the
    setting's GPU for a served load (``EngineProfile.scheduler_limits``; TensorRT-LLM 2,048
    requests and 8,192 tokens per step without eviction, whole prompts; vLLM V1's by GPU
    memory), whether they hold per attention rank is the engine's, and the attention ranks of
    a data-parallel layout schedule their own requests (``rank_scheduling``, unless ``config``
    says otherwise); under the ideal engine (no profile), ``config`` as it is (its ranks
    pooled). The same rule as the replay of measured rows, so that
    ``simulate``, ``capacity`` and ``compare-measured`` run one engine model."""
    prof = setting.assumptions.profile()
    if config.adp_balancing is not None and not balances_attention_dp(prof):
        raise SpecError(
            "argument",
            "adp_balance",
            NO_BALANCING
            + ", and the engine is "
            + (
                f"{prof.family}"
                if prof is not None
                else f"the {setting.assumptions.label} preset's ideal one"
            ),
            "drop it, or give --engine trtllm, engine='trtllm' in Python",
        )
    if prof is None:
        return config
    batch, budget = prof.scheduler_limits(setting.gpu, offline=False)
    # the graphs a TensorRT-LLM launch the tool writes captures: padding on, up to its batch
    # limit (``export.engine_configs.trtllm_options``); other engines' are not modelled
    mine = batch if "max_batch_requests" in config.engine_own else config.max_batch_requests
    graphs = ()
    if prof.family == "trtllm":
        graphs = trtllm_graph_sizes(min(int(mine), int(prof.cuda_graph_max_batch)))
    own = {
        "max_batch_requests": int(batch),
        "step_token_budget": int(budget),
        "admission": prof.admission,
        "prefill": prof.prefill,
        "scheduler_steps": int(prof.scheduler_steps),
        "graph_batch_sizes": graphs,
    }
    return dataclasses.replace(
        config,
        **{name: own[name] for name in config.engine_own},
        engine_own=(),
        per_attention_rank=prof.family in LIMITS_PER_ATTENTION_RANK
        if config.per_attention_rank is None
        else config.per_attention_rank,
        rank_scheduling=True if config.rank_scheduling is None else config.rank_scheduling,
    )


def bound_config(config: EngineConfig, setting: Setting, gpus: int) -> EngineConfig:
    """The ideal engine's scheduler beside an engine profile's plan (its bound, §E6): where the
    profile sets the batch cap, one no tighter than the profile's on an instance of ``gpus``
    GPUs, each of whose attention ranks may hold the profile's cap (TensorRT-LLM: 2,048 a rank,
    16,384 over DEP8), so that a perfect engine is never held below the engine it bounds by a
    scheduler limit (a larger cap never lowers the load an instance holds). A cap the user gave
    is the profile's where its limits hold per attention rank (``--max-batch 64`` under
    TensorRT-LLM: 64 a rank, 512 over DEP8), and the instance's otherwise (kept). The ideal
    engine pools its ranks, so it has no attention-DP balancing to run (dropped)."""
    if setting.assumptions.profile() is None:
        return config
    engine = engine_config(config, setting)
    config = dataclasses.replace(config, adp_balancing=None)
    if "max_batch_requests" not in config.engine_own and not engine.per_attention_rank:
        return config
    own = engine.max_batch_requests * max(int(gpus), 1)
    return dataclasses.replace(config, max_batch_requests=max(config.max_batch_requests, own))


def budget_sized(setting: Setting, config: EngineConfig) -> Setting:
    """The setting whose engine sets its activation memory aside at the step budget ``config``
    states (one attention rank's, as a load's settings give it: before ``on_layout``; §F8);
    itself where the config takes the engine's own budget or the engine's memory does not
    depend on it (``EngineProfile.at_step_budget``), or where the config states its limits per
    instance (``per_attention_rank`` False: a rank's share is the layout's, not known here)."""
    prof = setting.assumptions.profile()
    own = "step_token_budget" in config.engine_own
    if prof is None or own or config.per_attention_rank is False:
        return setting
    sized = prof.at_step_budget(config.step_token_budget)
    if sized is prof:
        return setting
    return setting.replace(assumptions=setting.assumptions.replace(engine=sized))


#: How a run's note on redundant experts that balance nothing begins (``Instance.
#: idle_copies_notes``; a load frontier lists the layouts whose runs say it).
IDLE_COPIES = "redundant experts: "


@dataclass(frozen=True, eq=False)
class Instance:
    """An engine instance compiled for the simulator."""

    setting: Setting
    layout: EngineLayout
    config: EngineConfig
    table: StepTable
    work: Workload
    #: KV-cache capacity in layer-positions (one cached token in one layer; with a draft, a
    #: target layer-position and its share of the draft's cache).
    kv_capacity: float
    #: The draft side when the setting speculates (§E8), else None.
    draft: DraftEngine | None = None
    #: The tiers under its prefix cache, nearest first (§E13).
    tiers: tuple[TierSpace, ...] = ()
    #: The micro-batch per sparsity from which its engine splits the experts (§A5; the step
    #: model's, the engine's layout features applied, ``engine_layouts``).
    expert_min_per_sparsity: float = 0.0

    @property
    def gpus(self) -> int:
        return self.layout.gpus

    @property
    def usd_per_hour(self) -> float:
        return self.gpus * self.setting.gpu.price_usd_per_hour

    @property
    def windowed(self) -> bool:
        """Some layer group attends to a sliding window (its positions stop growing)."""
        return any(math.isfinite(g.window) for g in self.work.groups)

    def described(self) -> str:
        """The layout as a run states it (``EngineLayout.describe``), with where a mixture of
        experts places its experts (``experts_placement``)."""
        experts = experts_placement(
            self.work, self.layout.tensor_degree, self.expert_min_per_sparsity
        )
        return self.layout.describe() + (f", {experts}" if experts else "")

    def idle_copies_notes(self) -> list[str]:
        """A line where the setting holds redundant experts but this layout splits no MoE
        group's experts over GPUs (no expert parallelism): the copies then take memory and
        balance nothing (docs/model-part-f.md §F7); [] otherwise."""
        model = self.setting.model
        copies = model.redundant_experts
        groups = [g.ffn.experts for g in model.layer_groups]
        split = whole_expert_degrees(groups, self.layout.tensor_degree, copies)
        if not copies or max(split, default=1) > 1:
            return []
        return [
            f"{IDLE_COPIES}{copies} copies a MoE layer are held, but the layout "
            f"({self.layout.describe()}) does not split the experts over GPUs (each GPU holds "
            "part of every expert): the copies take memory and balance no load, and an export "
            "refuses them"
        ]

    def balancing_notes(self) -> list[str]:
        """A line where the config sets TensorRT-LLM's attention-DP balancing that this
        instance does not run: its layout has one attention group (nothing to balance; an
        export writes none), or it speculates and pools its ranks (§F9; an export writes it);
        [] otherwise. The simulator's rule (``engine_state``: ranks only without a draft)."""
        pair = self.config.adp_balancing
        if pair is None:
            return []
        said = balancing_words(pair)
        if int(round(self.layout.attention_divisor)) < 2:
            return [
                f"{said} balances nothing here: the layout ({self.layout.describe()}) runs no "
                "attention data parallelism, and an export writes no attention_dp_config for it"
            ]
        if self.draft is not None:
            return [
                f"{said} is not simulated: an engine that speculates pools its attention ranks "
                "(§F9), so these figures are without it, though an export writes it"
            ]
        return []

    def positions(self, context):
        """Layer-positions a request of this context attends to and reads (§E2)."""
        return self.work.layer_positions(context)

    def held(self, context):
        """Layer-positions a request of this context holds in the KV cache (§E2): its read
        positions where the engine keeps a sliding-window layer's window only, else every
        attention layer's whole context."""
        return self.work.held_positions(context)

    def slowed(self, factor: float) -> Instance:
        """The same instance with every step of its engine (and its draft's) ``factor`` times
        as long (``StepTable.slowed``); the KV cache and the scheduler unchanged."""
        draft = self.draft
        if draft is not None:
            draft = dataclasses.replace(draft, table=draft.table.slowed(factor))
        return dataclasses.replace(self, table=self.table.slowed(factor), draft=draft)

    def at_prompt(self, prompt: float) -> Instance:
        """The same instance for prompts of ``prompt`` tokens on average: its step table's
        (``StepTable.at_prompt``; itself where that does not change it)."""
        table = self.table.at_prompt(prompt)
        return self if table is self.table else dataclasses.replace(self, table=table)

    def max_requests_at(self, context: float) -> int:
        """How many requests of this context the KV cache holds (at least 1)."""
        return max(1, int(self.kv_capacity // max(float(self.held(context)), 1.0)))


@dataclass(frozen=True, eq=False)
class LayoutSearch:
    """A setting compiled on ``gpus`` GPUs with its candidate layouts and KV-cache capacity
    (layer-positions): what choosing a layout needs."""

    setting: Setting
    gpus: int
    model: StepModel
    prefill_work: Workload
    options: tuple
    capacity: float
    #: KV-cache bytes of one layer-position (a draft's share included).
    bytes_per_position: float = 0.0
    #: Each layout's least step time by context (``choose_layout``'s ``floors``).
    floors: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)
    #: Step tables the kernel clock's layout choice read, by layout, size and prompt.
    tables: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @functools.cached_property
    def chosen_from(self) -> tuple:
        """The layouts the engine model chooses among (§E7): every one of ``options``, less
        those that pipeline where the weights, with room for a KV cache, fit on fewer GPUs
        (``fits_on_fewer``): such an instance is copies of a smaller one, which a search
        prices on its own; a layout given by name may still pipeline."""
        if not fits_on_fewer(self.model, self.gpus):
            return self.options
        flat = tuple(lay for lay in self.options if lay.pipeline == 1)
        return flat or self.options

    def choose(self, config: EngineConfig, context: float, load: OfferedLoad) -> EngineLayout:
        prompt = offered_prompt(load)

        def tables(layout, on_layout):  # the kernel clock's steps, as the instance reads them
            small = table_tokens(on_layout, layout) <= CHOICE_TABLE_TOKENS
            return self.table(layout, on_layout, prompt) if small else None

        kernel_clock = self.model.engine is not None and self.model.assumptions.kernel_tables
        return choose_layout(
            self.model,
            self.prefill_work,
            self.chosen_from,
            engine_config(config, self.setting),
            self.capacity,
            context,
            load,
            self.floors,
            tables if kernel_clock else None,
        )

    def table(self, layout: EngineLayout, config: EngineConfig, prompt) -> StepTable:
        """The step table of ``layout`` under ``config`` (on its layout), kept for the search:
        its layout choice and the instance it builds read the same one."""
        key = (layout, table_tokens(config, layout), prompt)
        if key not in self.tables:
            self.tables[key] = step_table(self.model, layout, key[1], prompt)
        return self.tables[key]


def fits_on_fewer(model: StepModel, gpus: int) -> bool:
    """Whether the weights leave room for a KV cache on a proper divisor of ``gpus`` GPUs (the
    largest one: fewer GPUs hold less), so that a pipeline over ``gpus`` is not needed to fit
    them."""
    fewer = max((d for d in range(1, gpus) if gpus % d == 0), default=0)
    return fewer > 0 and float(model.kv_capacity_bytes(fewer)) > 0


def layout_search(setting: Setting, gpus: int) -> LayoutSearch:
    """Compile ``setting`` for an instance of ``gpus`` GPUs; refuses what the simulator cannot
    model and instances the weights do not fit."""
    if isinstance(gpus, bool) or int(gpus) != gpus or gpus < 1:
        raise SpecError(
            "argument", "gpus", f"is {gpus!r}", "an instance has a whole number of GPUs >= 1"
        )
    gpus = int(gpus)
    a = setting.assumptions
    work = compile_workload(setting.model, a)
    companion, copies = (None, 0) if setting.spec is None else resident_draft(setting.spec, a)
    model = StepModel(
        work, setting.gpu, a, integer_layouts=True, companion=companion, companion_copies=copies
    )
    free = model.kv_capacity_bytes(gpus)
    if free <= 0 or work.kv_bytes_per_position_per_layer <= 0:
        with_draft = " and its draft's" if copies else ""
        act = float(model.engine.activation_bytes_per_gpu(gpus)) if model.engine else 0.0
        steps = (  # the weights fit: TensorRT-LLM's activations at its step budget (§F8) do not
            f"; a step of {model.profile.step_token_budget:,} tokens sets {act / 1e9:.1f} GB "
            "aside for its activations: lower --step-tokens (step_token_budget)"
            if act > 0 and float(model.free_hbm_bytes(gpus)) > 0
            else ""
        )
        raise InfeasibleError(
            f"{setting.model.name} ({model.weights_total_bytes / 1e9:.1f} GB of weights{with_draft}) leaves no room for a KV "
            f"cache on {gpus} x {setting.gpu.name} ({model.machine.usable_hbm_bytes / 1e9:.1f} GB usable each{steps})"
        )
    per_position = work.kv_bytes_per_position_per_layer
    if companion is not None and copies:  # each cached token also holds the draft's cache (§E8)
        layers = sum(g.layers for g in work.groups)
        per_position += copies * companion.kv_bytes_per_token / layers
    copies_kv = model.assumptions.kv_replication
    layouts = tuple(candidate_layouts(work, gpus, setting.pipeline, model.features, copies_kv))
    if not layouts:
        raise InfeasibleError(
            uneven_reason(model, setting.model.name, gpus, setting.pipeline, False)
            or f"no layout of {gpus} GPUs that the engine launches splits {setting.model.name}"
        )
    prefill = prefill_step_model(setting.model, setting.gpu, a, True).work
    return LayoutSearch(setting, gpus, model, prefill, layouts, free / per_position, per_position)


#: The most entries of an instance's step table (one per token count a step may charge:
#: the batch plus the token budget, per attention rank where the engine's limits are, times
#: the pipeline stages with §B12's bubbles). Its build and its copies for the intervals take
#: about 750 bytes and 1 us of CPU an entry (`simulate` of Llama 3.1 8B on H100, 200 requests:
#: 2,048 GPUs per instance 2.6 M entries, 2.0 GB, 3.4 s; 8,192 GPUs 10.5 M, 7.6 GB, 11 s;
#: 65,536 GPUs ran out of memory): 2^22 entries is about 3 GB.
MAX_STEP_ENTRIES = 1 << 22


def _check_table(setting: Setting, gpus: int, layout: EngineLayout, model, max_tokens) -> None:
    """Refuse, before it is built, an instance whose step table would exceed
    ``MAX_STEP_ENTRIES`` (huge instances: many attention ranks, each with the engine's limits),
    saying what makes it large and what to lower."""
    stages = layout.pipeline if layout.pipeline > 1 and model.assumptions.pipeline_bubbles else 1
    entries = (int(max_tokens) + 1) * int(stages)
    if entries <= MAX_STEP_ENTRIES:
        return
    raise SpecError(
        "argument",
        "gpus",
        f"an instance of {gpus:,} GPUs of {setting.model.name} ({layout.describe()}) steps up to "
        f"{int(max_tokens):,} tokens"
        + (f" over {stages} pipeline stages" if stages > 1 else "")
        + f": a step table of {entries:,} entries, over the {MAX_STEP_ENTRIES:,} the simulator "
        "builds (its memory)",
        "serve the load on more, smaller instances, or lower --max-batch or --step-tokens",
    )


#: Step tables kept for the instances built next (``step_table``): at most this many, of at
#: most this many entries in all (about 130 bytes an entry: ~68 MB): searches and a measured
#: file's rows come back to more tables, and larger ones, than 16 and ~34 MB held.
STEP_TABLES_KEPT, STEP_TABLE_ENTRIES_KEPT = 64, 1 << 19
_STEP_TABLES: collections.OrderedDict = collections.OrderedDict()
_STEP_TABLES_LOCK = threading.Lock()


def step_table(model: StepModel, layout: EngineLayout, max_tokens, prompt) -> StepTable:
    """``StepTable(model, layout, max_tokens, prompt)``, the last few kept by the model's
    inputs (``model_inputs``): a table depends on them alone, and the searches of a plan, the
    rows of a measured file and the commands of one process build the same instance again (a
    table is only read; ``with_graphs``, ``slowed`` and ``at_prompt`` make copies)."""
    key = (model_inputs(model), layout, int(max_tokens), prompt)
    with _STEP_TABLES_LOCK:
        table = _STEP_TABLES.get(key)
        if table is not None:
            _STEP_TABLES.move_to_end(key)
            return table
    table = StepTable(model, layout, max_tokens, prompt)
    size = len(table.fixed_s)
    if size > STEP_TABLE_ENTRIES_KEPT // 4:  # a large table is not kept
        return table
    with _STEP_TABLES_LOCK:
        _STEP_TABLES[key] = table
        while len(_STEP_TABLES) > STEP_TABLES_KEPT or (
            sum(len(t.fixed_s) for t in _STEP_TABLES.values()) > STEP_TABLE_ENTRIES_KEPT
        ):
            _STEP_TABLES.popitem(last=False)
    return table


def table_tokens(config: EngineConfig, layout: EngineLayout) -> int:
    """The most tokens a step of an instance under ``config`` (on its layout) looks up: its
    step table's size. A data-parallel attention layout's step is looked up at its decoding
    requests plus the ranks times its busiest rank's prompt tokens (``simulate``): at most the
    batch plus the token budget, or plus one token a rank where the ranks outnumber the budget's
    tokens (each rank takes at least one, ``attention_dp.Ranks``)."""
    if config.rank_scheduling and layout.attention_divisor > 1:
        ranks = int(round(layout.attention_divisor))
        return max(config.step_token_budget, ranks) + config.max_batch_requests
    return max(config.step_token_budget, config.max_batch_requests)


def offered_prompt(load: OfferedLoad) -> float | None:
    """The prompt the kernel clock reads a table's prompt attention at
    (``StepTable.at_prompt``): the offered load's mean, where it states one."""
    return load.prompt_tokens if 0.0 < load.prompt_tokens < math.inf else None


#: The largest step table (tokens) the kernel clock's layout choice builds for a layout; a
#: larger one's steps are estimated by the step model instead (a table of 70,000 tokens of
#: DeepSeek-R1 over 8 ranks takes about a second to build).
CHOICE_TABLE_TOKENS = 1 << 17


def build_instance(
    setting: Setting,
    gpus: int,
    config: EngineConfig = DEFAULT_ENGINE,
    reference_context: float = 1024.0,
    layout: EngineLayout | None = None,
    load: OfferedLoad = SATURATED,
    search: LayoutSearch | None = None,
) -> Instance:
    """An instance of ``gpus`` GPUs with the whole layout that runs ``load`` fastest at the
    reference context (or the given ``layout``); ``search`` reuses a compiled setting."""
    search = search or layout_search(setting, gpus)
    if layout is None:
        layout = search.choose(config, reference_context, load)
    config = engine_config(config, setting).on_layout(layout)
    max_tokens = table_tokens(config, layout)
    _check_table(setting, gpus, layout, search.model, max_tokens)
    prompt = offered_prompt(load)
    key = (layout, max_tokens, prompt)
    table = search.tables.get(key)
    if table is None:
        table = step_table(search.model, layout, max_tokens, prompt)
    if config.graph_batch_sizes:  # decode-only steps padded to the CUDA graph they replay
        ranks = max(int(round(layout.attention_divisor)), 1)
        table = with_graphs(table, config.captured_graphs(ranks), ranks)
    capacity = layout_capacity(search.model, search.capacity, layout)
    draft = None
    if setting.spec is not None:
        draft = draft_engine(
            setting.spec,
            setting.gpu,
            setting.assumptions,
            gpus,
            sum(g.layers for g in search.model.work.groups),
            config.step_token_budget,
            max_tokens,
            config.speculation_schedule,
            config.speculation_max_batch,
            reference_context,
        )
    tiers: tuple[TierSpace, ...] = ()
    if config.prefix_caching:
        # bytes of one layer-position as the layout holds it (KV copies of §B13 included)
        per_position = search.bytes_per_position * search.capacity / capacity
        tiers = tuple(tier_space(t, setting.gpu, gpus, per_position) for t in config.kv_tiers)
    least = search.model.assumptions.expert_parallel_min_batch_per_sparsity
    return Instance(
        setting, layout, config, table, search.model.work, capacity, draft, tiers, least
    )
