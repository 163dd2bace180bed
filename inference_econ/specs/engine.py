"""Engine efficiency profiles: what a serving engine reaches on top of a GPU's datasheet
(docs/model.md Part F), loaded from ``engines/*.yaml``.

A profile is a set of named, physically meaningful efficiency terms (the fraction of HBM
bandwidth weights stream at, the GEMM efficiency curve, per-layer and per-step overheads, the
collective curves) plus the engine's own scheduler (its default batch and token budget, by GPU
class; how it admits requests and schedules prompts), CUDA-graph sizes and KV-cache memory
fraction. Only the ``achievable`` preset reads the efficiency terms. A profile can
``derive_from`` another and override some terms (that is what ``inference-econ calibrate``
writes); every fitted term may carry a standard error.

A profile describes one engine (``engine``: its family, e.g. ``vllm``) over a range of its
versions (``versions``: ``"<0.8"``, ``">=1.0"``; empty: every version) on a platform
(``platform``: ``cuda``, ``rocm`` or ``any``). ``select_engine`` picks the profile of an engine,
a version and a platform (``vllm@0.10`` on the command line), with the terms that version runs
with where they differ (``version_terms``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

from ..errors import SpecError, did_you_mean, short
from . import catalog, engine_terms
from .engine_terms import BY_TERM, FRACTION_OF, REMOVED_TERMS, TERMS, FractionOf
from .features import CONDITIONS, LAYOUT_FEATURES, MODEL_CLASSES, ModelClass
from .schema import Reader, check_number
from .versions import in_range, open_ended, parse_version, split_engine, version_range
from .yamlfile import load_yaml

#: Engines whose scheduler limits hold per data-parallel attention rank, not per instance:
#: TensorRT-LLM's ``max_batch_size`` and ``max_num_tokens`` (each attention-DP rank runs its
#: own executor and scheduler; its DeepSeek-R1 guide runs ``--max_batch_size 384`` at
#: concurrency 3072 on TP8 EP8 with attention DP; ai-dynamo/dynamo#11982) and vLLM's
#: ``--max-num-seqs`` (an engine core per data-parallel rank; vllm-project/vllm#13923).
#: SGLang's ``--max-running-requests`` is the instance's (divided by its DP size).
LIMITS_PER_ATTENTION_RANK = ("trtllm", "vllm")


#: The ideal engine's scheduler (no engine profile): concurrent requests and tokens per step,
#: decode tokens plus prompt tokens (vLLM V1's defaults, ``max_num_seqs`` and
#: ``max_num_batched_tokens``). The load engine's ``EngineConfig`` and the prefill beside
#: decoding of a disaggregated pool read them here.
IDEAL_MAX_BATCH_REQUESTS = 256
IDEAL_STEP_TOKEN_BUDGET = 2048

#: Platforms a profile runs on.
Platform = Literal["cuda", "rocm", "any"]
PLATFORMS: tuple[Platform, ...] = get_args(Platform)
#: How a scheduler admits a request (docs/model.md §E3; load.engine runs it):
#: ``recompute`` when the KV cache holds its prompt, preempting the request admitted last when
#: the cache fills (vLLM, SGLang); ``no_evict`` only when the cache holds its prompt and every
#: token it will generate, on top of what the running requests will reach, so nothing is ever
#: preempted (TensorRT-LLM's GUARANTEED_NO_EVICT).
Admission = Literal["recompute", "no_evict"]
ADMISSIONS: tuple[Admission, ...] = get_args(Admission)
#: How prompts share steps with decoding (§E3): ``chunked`` fills each step's token budget with
#: prompt chunks next to the decoding requests (vLLM V1); ``whole`` adds whole prompts
#: next to the decoding requests while they fit the budget (TensorRT-LLM without chunked
#: context); ``separate`` runs whole prompts in steps of their own while decoding waits (vLLM
#: V0 without chunked prefill); ``chunked_separate`` fills steps of their own with chunks of
#: the prompts, first, while decoding waits (SGLang without ``--enable-mixed-chunk``).
PrefillMode = Literal["chunked", "whole", "separate", "chunked_separate"]
PREFILL_MODES: tuple[PrefillMode, ...] = get_args(PrefillMode)
#: What a sliding-window layer keeps of a request's KV cache (§E2): ``window`` its window's
#: positions, the blocks beyond it freed (vLLM's hybrid allocator, SGLang's SWA pool); ``full``
#: the whole context, as a full-attention layer does, while its attention still reads only the
#: window (TensorRT-LLM's KVCacheManager, whose every layer's window is ``max_seq_len`` unless
#: a launch sets ``kv_cache_config.max_attention_window``).
SlidingWindowCache = Literal["window", "full"]
SLIDING_WINDOW_CACHES: tuple[SlidingWindowCache, ...] = get_args(SlidingWindowCache)
#: Where a dense feed-forward block (a MoE model's dense layers), or the vocabulary matrices,
#: run under attention data parallelism (§F7, §F8): with the attention (``data_parallel``: each
#: attention replica on its own tokens with the weights at the replica's tensor degree, nothing
#: exchanged between replicas) or tensor-parallel over every GPU of the stage
#: (``tensor_parallel``: the replicas' tokens gathered before it and scattered after).
DenseLayout = Literal["data_parallel", "tensor_parallel"]
DENSE_LAYOUTS: tuple[DenseLayout, ...] = get_args(DenseLayout)
#: How a deployment's load balancer, or a benchmark's harness, sends requests to its instances
#: (docs/model.md §E10; load.routing runs it): at random, in turn, to the one with the fewest
#: outstanding, or by a session's or prefix's hash with bounded loads.
RouterPolicy = Literal["random", "round_robin", "least_outstanding", "prefix_aware"]
ROUTERS: tuple[RouterPolicy, ...] = get_args(RouterPolicy)


@dataclass(frozen=True)
class SchedulerLimits:
    """An engine's default batch and token budget where it differs by GPU or benchmark: on
    GPUs of at least ``min_hbm_gb`` GB whose name contains none of ``not_gpus``, for offline
    runs only (``offline`` True), served ones only (False) or both (None). A part derived
    from another (``derive_from``) is the GPU its base is to the engine: named by either."""

    max_batch_requests: int
    step_token_budget: int
    min_hbm_gb: float = 0.0
    not_gpus: tuple[str, ...] = ()
    offline: bool | None = None

    def applies(self, gpu, offline: bool) -> bool:
        names = [n.lower() for n in (gpu.name, *getattr(gpu, "derived_from", ()))]
        return (
            gpu.hbm_capacity_bytes >= self.min_hbm_gb * 1e9
            and not any(g.lower() in n for g in self.not_gpus for n in names)
            and (self.offline is None or self.offline == offline)
        )


@dataclass(frozen=True)
class EngineProfile:
    """A serving engine's efficiency terms on top of a GPU (docs/model.md Part F)."""

    name: str
    hbm_efficiency: float = 0.85
    kv_read_efficiency: float = 0.8
    kv_request_positions: float = 0.0
    gemm_efficiency_scale: float = 1.0
    gemm_half_volume: float = 4.3e9
    gemm_tile_tokens: int = 64
    moe_gemm_efficiency: float = 0.8
    moe_expert_half_params: float = 0.0
    attention_efficiency: float = 0.5
    elementwise_passes: float = 10.0
    layer_overhead_s: float = 30e-6
    step_overhead_s: float = 1e-3
    sequence_overhead_s: float = 4e-6
    hidden_sequence_overhead_s: float = 0.0
    host_overhead_exposed: float = 1.0
    eager_layer_overhead_s: float = 40e-6
    cuda_graph_max_batch: int = 8192
    step_time_scale: float = 1.0
    custom_allreduce_latency_s: float = 8e-6
    custom_allreduce_bandwidth_efficiency: float = 0.8
    collective_latency_scale: float = 1.0
    collective_bandwidth_efficiency: float = 1.0
    gemm_allreduce_overlap: float = 0.0
    shared_expert_overlap: float = 0.0
    expert_routing_skew: float = 1.0
    block_fp8_dispatch_quantised: int = 1
    expert_exchange_by_method: int = 0
    one_sided_exchange: int = 2
    gathered_tokens_quantised: int = 1
    deepep_exchange: int = 0
    kv_cache_memory_fraction: float = 0.9
    kv_cache_fraction_of: FractionOf = "free"
    activation_workspace_bytes_per_gpu: float = 2e9
    activation_buffers_per_token: float = 0.0
    moe_activation_buffers_per_token: float = 0.0
    max_batch_requests: int = 2048
    step_token_budget: int = 8192
    scheduler_steps: int = 1
    #: Layout features the engine runs, by model class (§F11); empty: every layout.
    parallelism: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: The engine this profile describes (its family: trtllm, vllm, sglang; empty: the name),
    #: the range of its versions ("" every version) and the platform (cuda, rocm or any).
    engine: str = ""
    versions: str = ""
    platform: Platform = "any"
    #: The engine's versions whose kernels the measured tables of kernels/ time (a range as
    #: ``versions``; empty: none): a measured row stating such a version, on a part with
    #: tables, is priced by the kernel clock (``kernel_tables``), every other by the terms here.
    #: Not inherited through ``derive_from``: a derived profile's terms price its rows.
    kernel_table_versions: str = ""
    #: How the scheduler admits requests and schedules prompts (``ADMISSIONS`` and
    #: ``PREFILL_MODES``: recompute or no_evict; chunked, whole, separate or chunked_separate).
    admission: Admission = "recompute"
    prefill: PrefillMode = "chunked"
    #: What a sliding-window layer keeps of the KV cache (``SLIDING_WINDOW_CACHES``).
    sliding_window_cache: SlidingWindowCache = "window"
    #: Where dense feed-forward blocks run under attention data parallelism (``DENSE_LAYOUTS``).
    dense_under_attention_dp: DenseLayout = "tensor_parallel"
    #: Where the embedding table and output head live under it (each replica's in 16 bits, §F8).
    vocabulary_under_attention_dp: DenseLayout = "tensor_parallel"
    #: The engine's default batch and token budget on some GPUs or benchmarks (first match;
    #: otherwise max_batch_requests and step_token_budget).
    limits: tuple[SchedulerLimits, ...] = ()
    #: How a benchmark's own harness runs the engine where it sets the scheduler otherwise
    #: than the engine's defaults: (benchmark, (entry, ...)), each entry ((field, value), ...)
    #: with the fields ``admission``, ``prefill``, ``router``, ``scheduler_steps``,
    #: ``host_overhead_exposed`` (the runtime it runs the model on) and the attention-DP
    #: balancing (``ADP_BALANCING``) and the ``versions``, ``models`` and ``scenarios`` it
    #: holds for; the first entry that holds for a run applies (e.g. MLPerf
    #: Inference's harness runs TensorRT-LLM with chunked prompts, the engine's default being
    #: whole ones, but DeepSeek-R1 with whole prompts).
    harnesses: tuple[tuple[str, tuple[tuple[tuple[str, Any], ...], ...]], ...] = ()
    #: The terms some of the engine's versions run with instead of these: (range, ((term,
    #: value), ...)), the first holding for a stated version (``select_engine``) applies.
    version_terms: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    #: Standard errors of the fitted terms (terms not listed were set, not fitted).
    standard_errors: tuple[tuple[str, float], ...] = ()
    #: How the profile was made: data, fit error, command (free text per key).
    fit: tuple[tuple[str, str], ...] = ()
    description: str = ""
    aliases: tuple[str, ...] = ()
    source_file: str = ""
    derived_from: str = ""
    #: Cache of the profile resolved for one GPU and precision (not part of equality).
    _cache: dict = field(default_factory=dict, compare=False, repr=False, hash=False)

    def value(self, name: str) -> float:
        return getattr(self, name)

    @property
    def family(self) -> str:
        """The engine this profile describes (its ``engine``, else its name)."""
        return self.engine or self.name

    def scheduler_limits(self, gpu, offline: bool) -> tuple[int, int]:
        """(max_batch_requests, step_token_budget) the engine defaults to on ``gpu`` for an
        offline run (``offline``) or a served one: the first of ``limits`` that applies."""
        for rule in self.limits:
            if rule.applies(gpu, offline):
                return rule.max_batch_requests, rule.step_token_budget
        return self.max_batch_requests, self.step_token_budget

    def harness_fields(
        self,
        harness: str | None,
        version: str | None = None,
        model: str | None = None,
        scenario: str | None = None,
        benchmark_round: str | None = None,
    ) -> dict | None:
        """The fields ``harness`` sets on the engine at ``version`` (not stated or unreadable:
        any) for ``model`` (a model's name; None: not known, so only an entry for every model
        holds) in ``scenario`` (one of ``HARNESS_SCENARIOS``; None: not known, so only an entry
        for every scenario holds) of the benchmark's ``benchmark_round`` (its publication round,
        "5.1": the harness code of that round; None: not known, so only an entry for every
        round holds): its first entry that holds for them, or None where the profile names no
        such harness or none of its entries holds."""
        if not harness:
            return None
        parsed = parse_version(str(version)) if version else None
        for entry in dict(self.harnesses).get(harness, ()):
            fields = dict(entry)
            bounds, models = fields.get("versions"), fields.get("models")
            if models and model not in models:
                continue
            if fields.get("scenarios") and scenario not in fields["scenarios"]:
                continue
            if bounds and parsed is not None and not in_range(parsed, str(bounds)):
                continue
            rounds = fields.get("rounds")
            if rounds and not (
                benchmark_round and in_range(parse_version(benchmark_round), str(rounds))
            ):
                continue
            return fields
        return None

    # The accessors below read one field of the entry that holds for a run: ``run`` is the
    # engine version, model, scenario and benchmark round ``harness_fields`` reads.
    def harness_applies(self, harness: str, *run: str | None) -> bool:
        """Whether the profile names ``harness`` and one of its entries sets the scheduler on
        the engine for the run (a version not stated or unreadable: it does)."""
        return self.harness_fields(harness, *run) is not None

    def scheduler_policy(
        self, harness: str | None = None, *run: str | None
    ) -> tuple[Admission, PrefillMode]:
        """(admission, prefill) the engine runs with under a benchmark's ``harness`` (one of
        ``HARNESSES``; None: the engine's own defaults) for the run."""
        changes = self.harness_fields(harness, *run) or {}
        return changes.get("admission", self.admission), changes.get("prefill", self.prefill)

    def harness_scheduler_steps(self, harness: str | None = None, *run: str | None) -> int:
        """Decode steps per scheduler call under a benchmark's ``harness`` for the run (None:
        the engine's own, ``scheduler_steps``)."""
        changes = self.harness_fields(harness, *run) or {}
        return int(changes.get("scheduler_steps", self.scheduler_steps))

    def harness_router(self, harness: str | None = None, *run: str | None) -> RouterPolicy:
        """How a benchmark's ``harness`` sends the queries of the run to the engine's instances
        (``ROUTERS``); ``random`` where it does not say (each instance a random share, as the
        engine's own deployments are simulated)."""
        changes = self.harness_fields(harness, *run) or {}
        return changes.get("router", "random")

    def harness_adp_balancing(
        self, harness: str | None = None, *run: str | None
    ) -> tuple[int, int] | None:
        """(batching wait, timeout) steps of the attention-DP balancing under a benchmark's
        ``harness`` for the run (``ADP_BALANCING``); None: no balancing."""
        changes = self.harness_fields(harness, *run) or {}
        if ADP_BALANCING[0] not in changes:
            return None
        return int(changes[ADP_BALANCING[0]]), int(changes[ADP_BALANCING[1]])

    def harness_host_overhead_exposed(
        self, harness: str | None = None, *run: str | None
    ) -> float | None:
        """The share of the host overheads a step waits for (``host_overhead_exposed``) under a
        benchmark's ``harness`` for the run: the runtime the harness runs that model on
        (docs/model.md §F5); None: the harness does not say."""
        changes = self.harness_fields(harness, *run) or {}
        share = changes.get("host_overhead_exposed")
        return None if share is None else float(share)

    def harness_cuda_graphs(self, harness: str | None = None, *run: str | None) -> int | None:
        """The largest step the runtime a benchmark's ``harness`` runs the run's model on takes
        from a captured CUDA graph (``cuda_graph_max_batch``; 0: none); None: the profile's."""
        changes = self.harness_fields(harness, *run) or {}
        most = changes.get("cuda_graph_max_batch")
        return None if most is None else int(most)

    def harness_memory(self, harness: str | None = None, *run: str | None) -> dict[str, float]:
        """The memory terms (``HARNESS_MEMORY_TERMS``) a benchmark's ``harness`` sets for the
        runtime it runs the run's model on; empty: the profile's."""
        changes = self.harness_fields(harness, *run) or {}
        return {k: float(changes[k]) for k in HARNESS_MEMORY_TERMS if k in changes}

    def harness_speculative(self, harness: str | None = None, *run: str | None) -> str | None:
        """The speculative decoding a benchmark's ``harness`` runs the run's model with (such
        as "MTP"), which the load engine does not model for measured rows; None: it does not
        speculate."""
        changes = self.harness_fields(harness, *run) or {}
        method = changes.get("speculative")
        return None if method is None else str(method)

    def standard_error(self, name: str) -> float | None:
        return dict(self.standard_errors).get(name)

    def terms(self) -> dict[str, float]:
        """Every numeric term by name."""
        return {t.name: getattr(self, t.name) for t in TERMS}

    def layout_features(self, model_class: ModelClass) -> frozenset[str]:
        """The layout features the engine runs for a model class (§F11): every feature when
        the profile states none, or none for a class it does not list."""
        if not self.parallelism:
            return frozenset(LAYOUT_FEATURES)
        return frozenset(dict(self.parallelism).get(model_class, ()))

    def replace(self, **changes) -> EngineProfile:
        """A copy with some terms changed (checked against their bounds)."""
        values = _validated(changes, f"profile {self.name}")
        return dataclasses.replace(self, _cache={}, **values)

    def at_step_budget(self, tokens: int) -> EngineProfile:
        """The profile run with ``tokens`` a step (one attention rank's), where its activation
        memory is sized by the step budget (docs/model.md §F8) and no per-GPU limit rule
        overrides the budget; itself otherwise."""
        sized = self.activation_buffers_per_token > 0 or self.moe_activation_buffers_per_token > 0
        if not sized or self.limits or int(tokens) == self.step_token_budget:
            return self
        return self.with_terms(step_token_budget=int(tokens))

    def with_terms(self, **changes: float | str) -> EngineProfile:
        """``replace`` kept once per set of changes: the same object (and its cache of
        resolved profiles) for every run that changes the same terms the same way."""
        key = ("with_terms", tuple(sorted(changes.items())))
        if key not in self._cache:
            self._cache[key] = self.replace(**changes)
        return self._cache[key]


#: A profile's fields besides its numeric terms (``BY_TERM``).
_OTHER_FIELDS = frozenset(
    {
        *("name", "description", "aliases", "kv_cache_fraction_of", "parallelism", "engine"),
        *("versions", "kernel_table_versions", "platform", "admission", "prefill", "derived_from"),
        *("sliding_window_cache", "dense_under_attention_dp", "vocabulary_under_attention_dp"),
        *("limits", "harnesses", "standard_errors", "fit", "derive_from", "source_file"),
        "version_terms",
    }
)


def _validated(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Check and normalise profile fields (numbers against their bounds)."""
    out: dict[str, Any] = {}
    known = set(BY_TERM) | _OTHER_FIELDS
    for key, value in values.items():
        if key in REMOVED_TERMS:
            raise SpecError(source, str(key), "no longer a term", REMOVED_TERMS[key])
        if key not in known:
            hint = did_you_mean(str(key), sorted(known))
            raise SpecError(source, str(key), "unknown field", hint or "see docs/model.md Part F")
        if key in BY_TERM:
            t = BY_TERM[key]
            number = check_number(
                value, source, key, minimum=t.minimum, maximum=t.maximum, integer=t.integer
            )
            out[key] = int(number) if t.integer else float(number)
        elif key in CHOICES:
            if value not in CHOICES[key]:
                raise SpecError(
                    source, key, f"unknown value {value!r}", f"choose {', '.join(CHOICES[key])}"
                )
            out[key] = value
        elif key in ("versions", "kernel_table_versions"):
            none = key == "kernel_table_versions" and value is None  # null: no version
            out[key] = "" if none else str(value).strip()
            try:  # a bad range fails when the file is read
                version_range(out[key], source)
            except SpecError as exc:
                raise SpecError(source, key, exc.problem, exc.fix) from None
        elif key == "limits":
            out[key] = _limits(value, source)
        elif key == "harnesses":
            out[key] = _harnesses(value, source)
        elif key == "version_terms":
            out[key] = engine_terms.version_terms(value, source)
        elif key == "aliases":
            out[key] = tuple(str(a) for a in ([value] if isinstance(value, str) else value or ()))
        elif key == "standard_errors":
            out[key] = engine_terms.standard_errors(value, source)
        elif key == "parallelism":
            out[key] = _parallelism(value, source)
        elif key == "fit":
            if not isinstance(value, Mapping):
                raise SpecError(source, key, f"expected a mapping, got {value!r}")
            out[key] = tuple((str(k), str(v)) for k, v in value.items())
        elif key == "name":  # shown and matched as text: None or a list is no name
            if not isinstance(value, str):
                raise SpecError(
                    source, key, f"expected text, got {short(value)}", "write the profile's name"
                )
            out[key] = Reader(values, source).string(key)  # one line
            if not value.strip():
                raise SpecError(source, key, "is empty", "give the engine profile a name")
        elif key != "derive_from":
            out[key] = str(value)
    return out


def _parallelism(value: Any, source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{model class: [layout features]}`` checked against the known classes and features."""
    if not isinstance(value, Mapping):
        raise SpecError(
            source, "parallelism", f"expected a mapping, got {value!r}", "e.g. {moe: [expert]}"
        )
    out = []
    for cls, features in value.items():
        if cls not in MODEL_CLASSES:
            hint = did_you_mean(str(cls), MODEL_CLASSES) or f"one of {', '.join(MODEL_CLASSES)}"
            raise SpecError(source, f"parallelism.{cls}", "unknown model class", hint)
        listed = [features] if isinstance(features, str) else list(features or ())
        for f in listed:
            if f not in LAYOUT_FEATURES + CONDITIONS:
                known = LAYOUT_FEATURES + CONDITIONS
                hint = did_you_mean(str(f), known) or ", ".join(known)
                raise SpecError(source, f"parallelism.{cls}", f"unknown feature {f!r}", hint)
        out.append((str(cls), tuple(str(f) for f in listed)))
    return tuple(out)


#: Fields that take one of a few words.
CHOICES = {
    "platform": PLATFORMS,
    "admission": ADMISSIONS,
    "prefill": PREFILL_MODES,
    "sliding_window_cache": SLIDING_WINDOW_CACHES,
    "dense_under_attention_dp": DENSE_LAYOUTS,
    "vocabulary_under_attention_dp": DENSE_LAYOUTS,
    "kv_cache_fraction_of": FRACTION_OF,
}


def _limits(value: Any, source: str) -> tuple[SchedulerLimits, ...]:
    """The ``limits`` list: mappings of max_batch_requests, step_token_budget and the
    conditions min_hbm_gb, not_gpus, offline."""
    if not isinstance(value, list):
        raise SpecError(source, "limits", f"expected a list, got {value!r}")
    out = []
    for k, item in enumerate(value):
        where = f"limits[{k}]"
        if not isinstance(item, Mapping):
            raise SpecError(source, where, f"expected a mapping, got {item!r}")
        extra = set(item) - {
            "max_batch_requests",
            "step_token_budget",
            "min_hbm_gb",
            "not_gpus",
            "offline",
        }
        if extra:
            raise SpecError(
                source, f"{where}.{sorted(extra)[0]}", "unknown field", "see engines/vllm.yaml"
            )
        numbers = {}
        for key in ("max_batch_requests", "step_token_budget"):
            if key not in item:
                raise SpecError(source, f"{where}.{key}", "is missing", "give the engine's default")
            t = BY_TERM[key]
            numbers[key] = int(
                check_number(
                    item[key],
                    source,
                    f"{where}.{key}",
                    minimum=t.minimum,
                    maximum=t.maximum,
                    integer=True,
                )
            )
        gb = float(
            check_number(
                item.get("min_hbm_gb", 0), source, f"{where}.min_hbm_gb", minimum=0, maximum=1e5
            )
        )
        offline = item.get("offline")
        if offline is not None and not isinstance(offline, bool):
            raise SpecError(
                source, f"{where}.offline", f"is {offline!r}", "true, false or leave it out"
            )
        not_gpus = item.get("not_gpus", ())
        not_gpus = (not_gpus,) if isinstance(not_gpus, str) else tuple(str(g) for g in not_gpus)
        out.append(
            SchedulerLimits(
                numbers["max_batch_requests"], numbers["step_token_budget"], gb, not_gpus, offline
            )
        )
    return tuple(out)


#: ``host_overhead_exposed`` of a run whose runtime is not known (a measured row stating no
#: engine version and no harness that names the runtime): its host work is charged, as by an
#: engine that prepares each step after the last ends (docs/model.md §F5).
RUNTIME_UNKNOWN_HOST_OVERHEAD_EXPOSED = 1.0
#: The memory terms a harness entry may set for the runtime it runs a model on (docs/model.md
#: §F8): what it sets aside before the KV cache, where that runtime is not the one the
#: profile's terms were measured on.
HARNESS_MEMORY_TERMS = (
    "activation_workspace_bytes_per_gpu",
    "activation_buffers_per_token",
    "moe_activation_buffers_per_token",
)
#: The runtime terms a harness entry may set for the runtime it runs a model on (§F5): the
#: host work a step waits for, decode steps a schedule, and its CUDA graphs (0: none).
HARNESS_RUNTIME_TERMS = ("host_overhead_exposed", "scheduler_steps", "cuda_graph_max_batch")
#: Benchmark harnesses a profile can say it runs under (``EngineProfile.harnesses``).
HARNESSES = ("mlperf",)
#: The scenarios a harness entry can be restricted to (``scenarios``: MLPerf Inference's).
HARNESS_SCENARIOS = ("offline", "server", "interactive")
#: A harness entry's TensorRT-LLM attention-DP balancing (``AttentionDpConfig``: batching wait
#: and timeout, steps; both or neither, neither: off, the engine's default ``enable_balance``
#: False), as the harness's configurations name them (docs/model.md §F9, "Attention DP").
ADP_BALANCING = ("adp_balancing_batching_wait_iters", "adp_balancing_timeout_iters")


def _harnesses(value: Any, source: str) -> tuple:
    """The ``harnesses`` mapping: {benchmark: entry or [entry, ...]}, an entry {admission: ...,
    prefill: ..., scheduler_steps: ..., versions: ..., models: [...]} (``versions``: the engine
    versions the harness sets these on, ``models`` the benchmark models it does so for; the
    first entry that holds for a run applies, and a run none holds for runs the engine's own
    defaults)."""
    if not isinstance(value, Mapping):
        raise SpecError(
            source,
            "harnesses",
            f"expected a mapping, got {value!r}",
            "e.g. {mlperf: {prefill: chunked}}",
        )
    out = []
    for name, entries in value.items():
        where = f"harnesses.{name}"
        if name not in HARNESSES:
            hint = did_you_mean(str(name), HARNESSES) or f"one of {', '.join(HARNESSES)}"
            raise SpecError(source, where, "unknown benchmark harness", hint)
        if isinstance(entries, list) and entries:
            parsed = tuple(
                _harness_entry(e, source, f"{where}[{k}]") for k, e in enumerate(entries)
            )
        else:
            parsed = (_harness_entry(entries, source, where),)
        out.append((str(name), parsed))
    return tuple(out)


def _harness_entry(changes: Any, source: str, where: str) -> tuple[tuple[str, Any], ...]:
    """One entry of a harness (``_harnesses``): its fields, checked."""
    if not isinstance(changes, Mapping) or not changes:
        raise SpecError(
            source, where, f"expected a mapping, got {changes!r}", "e.g. {prefill: chunked}"
        )
    given = [k for k in ADP_BALANCING if k in changes]
    if len(given) == 1:
        missing = next(k for k in ADP_BALANCING if k not in changes)
        raise SpecError(
            source, f"{where}.{missing}", "is missing", f"{given[0]} needs it (both or neither)"
        )
    fields: list[tuple[str, Any]] = []
    for key, word in changes.items():
        at = f"{where}.{key}"
        if key in ("models", "scenarios"):  # the benchmark models or scenarios it holds for
            fields.append((key, _harness_names(key, word, source, at)))
        elif key in ("versions", "rounds"):  # the engine versions the harness runs them
            # this way on, or the benchmark's rounds whose harness code does so
            try:
                version_range(str(word), source)
            except SpecError as exc:
                raise SpecError(source, at, exc.problem, exc.fix) from None
            fields.append((key, str(word).strip()))
        elif key in (*ADP_BALANCING, *HARNESS_RUNTIME_TERMS):
            fields.append((key, _harness_number(key, word, source, at)))
        elif key in HARNESS_MEMORY_TERMS:  # the memory the harness's runtime sets aside (§F8)
            t = BY_TERM[key]
            bounded = check_number(word, source, at, minimum=t.minimum, maximum=t.maximum)
            fields.append((key, float(bounded)))
        elif key == "speculative":  # the harness speculates (the method it names): out of scope
            if not isinstance(word, str) or not word.strip():
                raise SpecError(
                    source, at, f"expected the method's name, got {word!r}", "e.g. MTP or EAGLE3"
                )
            fields.append((key, word.strip()))
        else:
            fields.append((str(key), _harness_choice(key, word, source, at)))
    return tuple(fields)


def _harness_names(key: str, word: Any, source: str, at: str) -> tuple[str, ...]:
    """A harness entry's ``models`` (the benchmark models whose harness configurations say so)
    or ``scenarios`` (the benchmark scenarios whose configurations say so): one or a list."""
    names = [word] if isinstance(word, str) else list(word or ())
    if key == "models":
        if not names or not all(isinstance(n, str) and n.strip() for n in names):
            raise SpecError(
                source, at, f"expected a list of model names, got {word!r}", 'e.g. ["Llama 2 70B"]'
            )
        return tuple(n.strip() for n in names)
    if not names or not all(n in HARNESS_SCENARIOS for n in names):
        raise SpecError(
            source,
            at,
            f"expected a list of scenarios, got {word!r}",
            f"any of {', '.join(HARNESS_SCENARIOS)}",
        )
    return tuple(names)


def _harness_number(key: str, word: Any, source: str, at: str) -> int | float:
    """A harness entry's number: TensorRT-LLM's attention-DP balancing steps (its flags'
    names), the share of host work the harness's runtime exposes (``host_overhead_exposed``),
    its ``scheduler_steps`` or its ``cuda_graph_max_batch``, within the term's bounds."""
    if key in ADP_BALANCING:
        minimum = 0 if key == ADP_BALANCING[0] else 1
        return int(check_number(word, source, at, minimum=minimum, maximum=100000, integer=True))
    t = BY_TERM[key]
    if key == "host_overhead_exposed":  # the runtime the harness runs the model on
        return float(check_number(word, source, at, minimum=t.minimum, maximum=t.maximum))
    steps = check_number(word, source, at, minimum=t.minimum, maximum=t.maximum, integer=True)
    return int(steps)


def _harness_choice(key: Any, word: Any, source: str, at: str) -> str:
    """A harness entry's ``admission`` or ``prefill`` (one of the profile's own choices) or
    ``router`` (how the harness sends a run's queries to the engine's instances); any other
    field is unknown."""
    if key not in ("admission", "prefill", "router"):
        raise SpecError(
            source,
            at,
            "unknown field",
            f"admission, prefill, router, speculative, {', '.join(HARNESS_RUNTIME_TERMS)}, "
            f"{', '.join((*ADP_BALANCING, *HARNESS_MEMORY_TERMS))}, versions, rounds, models "
            "or scenarios",
        )
    choices = ROUTERS if key == "router" else CHOICES[key]
    if word not in choices:
        raise SpecError(source, at, f"unknown value {word!r}", f"choose {', '.join(choices)}")
    return str(word)


def profile_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> EngineProfile:
    """Build a profile from a parsed YAML mapping (``derive_from`` resolved by name)."""
    data = dict(data)
    base_name = data.pop("derive_from", None)
    values = _validated(data, source)
    values["source_file"] = source
    if base_name is not None:
        if not isinstance(base_name, str):
            raise SpecError(
                source,
                "derive_from",
                f"expected an engine profile's name or file, got {short(base_name)}",
                "e.g. derive_from: vllm",
            )
        base = load_engine(base_name)
        if "name" not in values:
            values["name"] = f"{base.name} (derived)"
        errors = dict(base.standard_errors)
        for key in values:
            if key in BY_TERM and key not in dict(values.get("standard_errors", ())):
                errors.pop(key, None)  # a new value without its own error has none
        errors.update(dict(values.get("standard_errors", ())))
        values["standard_errors"] = tuple(errors.items())
        values["derived_from"] = base.name
        values.setdefault("aliases", ())
        # the tables time the base engine's own kernels: a profile derived from it (another
        # engine, a fitted or what-if one) is priced by its own terms unless it says otherwise
        values.setdefault("kernel_table_versions", "")
        if values.get("engine", base.engine) != base.engine:
            # another engine's profile: a harness's flags and a version's terms are the base
            # engine's own
            values.setdefault("harnesses", ())
            values.setdefault("version_terms", ())
        return dataclasses.replace(base, _cache={}, **values)
    if "name" not in values:
        raise SpecError(source, "name", "is missing", "give the engine profile a name")
    return EngineProfile(**values)


@lru_cache(maxsize=64)
def _load_path(path: Path) -> EngineProfile:
    return profile_from_dict(load_yaml(path), str(path))


def load_engine(name_or_path: str | Path | EngineProfile) -> EngineProfile:
    """An engine profile by name ("trtllm", "vllm", "sglang"), alias or YAML path; a name at
    a version ("trtllm@1.1") is that version's (``select_engine``)."""
    if isinstance(name_or_path, EngineProfile):
        return name_or_path
    text, version = split_engine(str(name_or_path))
    if version is not None and not Path(name_or_path).is_file():
        if parse_version(version) is None:
            raise SpecError(
                "argument", "engine", f"{version!r} in {short(name_or_path)} is not a version",
                f"write the engine's release after '@', e.g. {text}@1.1",
            )  # fmt: skip
        return select_engine(name_or_path)
    path = catalog.resolved(catalog.find("engines", name_or_path))
    with catalog.deriving("engines", path):  # a cycle or too long a chain: one line
        return _load_path(path)


def profile_yaml(profile: EngineProfile, base: str, header: list[str], fitted: dict) -> str:
    """A YAML file deriving from ``base`` with the ``fitted`` terms (name -> (value, error)),
    a comment per term and the header lines as comments (what ``calibrate`` writes)."""
    import json

    import yaml

    lines = [f"# {h}" for h in header]
    lines.append(
        yaml.safe_dump({"name": profile.name, "derive_from": base}, sort_keys=False).strip()
    )
    for key, (value, err) in fitted.items():
        t = BY_TERM[key]
        lines.append(
            f"{key}: {value:.6g}   # fitted, standard error {err:.2g} {t.unit}; {t.meaning}"
        )
    lines.append("standard_errors:")
    for key, (_, err) in fitted.items():
        lines.append(f"  {key}: {err:.3g}")
    fit = dict(profile.fit)
    if fit:
        lines.append("fit:")
        for key, text in fit.items():
            lines.append(f"  {key}: {json.dumps(text)}")
    return "\n".join(lines) + "\n"


# --- the choice of a profile ----------------------------------------------------------------------


@lru_cache(maxsize=1)
def engine_profiles() -> tuple[EngineProfile, ...]:
    """The catalog's engine profiles (engines/)."""
    return tuple(load_engine(e.path) for e in catalog.entries("engines"))


def select_engine(engine, version=None, platform=None) -> EngineProfile:
    """The profile of ``engine`` (a family, a profile name or alias, a path or a profile; or
    "family@version") at ``version`` on ``platform`` (cuda, rocm; None: any). Among the
    profiles of the engine's family, those for the platform come before those for any, and the
    one whose range holds the version is taken; a version not stated (or unreadable) takes
    the newest range. A path or a name without a version and without other profiles of its
    family is that profile. Unknown engines raise (``UnknownNameError``)."""
    if isinstance(engine, EngineProfile):
        return engine
    text, at = split_engine(engine)
    version = at if at is not None else version
    named = load_engine(text)
    family = [p for p in engine_profiles() if p.family == named.family]
    if named not in family and at is None:  # a file of its own (calibrate's): its version_terms
        return engine_terms.at_version(named, parse_version(version))
    if platform is None and named.platform != "any":
        platform = named.platform  # "vllm-rocm@0.18" is a ROCm profile at that version
    v = parse_version(version)
    # a platform not given (a name checked before any row is read) admits every platform
    for where in (platform, "any") if platform else ("any", None):
        options = [p for p in family if where is None or p.platform == where]
        if v is not None:
            hits = [p for p in options if in_range(v, p.versions)]
        else:
            hits = [p for p in options if open_ended(p.versions)]
        if hits:
            return engine_terms.at_version(hits[0], v)
    versions = ", ".join(f"{p.name} ({p.versions or 'all'}, {p.platform})" for p in family)
    raise SpecError(
        "argument",
        "engine",
        f"no {named.family} profile for version {version or '(not stated)'} on "
        f"{platform or 'any platform'}",
        f"the {named.family} profiles are {versions}",
    )
