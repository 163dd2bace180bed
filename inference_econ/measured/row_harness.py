"""How a measured row's engine runs: under its benchmark's harness (MLPerf's, with the scheduler
flags the harness sets), with what the row states it was built and run with over both, and how
the output names it (docs/model-part-f.md §F9, "A row's own scheduler flags")."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import short
from ..load.engine import balances_attention_dp, balancing_words, cadence_text
from ..model.overlap import overlap_problem
from ..specs.engine import EngineProfile, PrefillMode, RouterPolicy, engine_profiles
from ..specs.engine_terms import EXCHANGE_TERMS
from ..specs.versions import in_range, parse_version
from .reading import MeasuredRow

#: The prompt scheduling of a row that states its engine chunked prompts, or did not (§F9),
#: where the engine runs prompts in steps of their own: chunks of them there (SGLang), or
#: chunks beside the decoding requests (vLLM V0's chunked prefill); whole prompts there.
WITH_CHUNKING: dict[str, PrefillMode] = {
    "chunked_separate": "chunked_separate",
    "separate": "chunked",
}
WITHOUT_CHUNKING: dict[str, PrefillMode] = {"chunked_separate": "separate", "separate": "separate"}
#: The engines whose launch picks a MoE's exchange backend, which a row's statement sets.
STATED_EXCHANGE = ("sglang", "vllm")
#: SGLang's blocks a row may state on each attention rank (``MeasuredRow.rank_blocks``): the
#: flag, the profile field it sets, and how the output names them.
RANK_BLOCK_FLAGS = {"dense": "--moe-dense-tp-size 1", "vocabulary": "--enable-dp-lm-head"}
RANK_BLOCK_TERMS = {
    "dense": "dense_under_attention_dp",
    "vocabulary": "vocabulary_under_attention_dp",
}
RANK_BLOCK_WORDS = {"dense": "dense layers", "vocabulary": "embedding and output head"}
#: How the output names a stated expert exchange (``EXCHANGE_TERMS``' kinds).
EXCHANGE_WORDS = {"gather": "all-gather", "deepep": "DeepEP", "all_to_all": "all-to-all"}


def stated_exchange(row: MeasuredRow, family: str) -> str | None:
    """The MoE exchange a row runs with as it states it (§F7): SGLang's and vLLM's launch picks
    the backend; another engine's own strategy picks its exchange by layout, the statement
    left aside (None)."""
    return row.expert_exchange if family in STATED_EXCHANGE else None


@dataclass(frozen=True)
class Harness:
    """How a row's benchmark harness runs its engine: the harness (None: none applies, the
    engine's own defaults), its admission and prefill policies, its decode steps per schedule,
    its attention-DP balancing, the host overhead a step exposes (None: the profile's), the
    memory terms its runtime sets (empty: the profile's) and how it sends the queries to the
    engine's instances."""

    name: str | None
    admission: str
    prefill: str
    steps: int
    balancing: tuple | None
    exposed: float | None
    memory: tuple[tuple[str, float], ...] = ()
    router: RouterPolicy = "random"
    #: the prefill-admission cadence the row states (``EngineConfig.admission_cadence``)
    cadence: tuple[int, int] = (0, 0)
    #: the largest step its runtime takes from a CUDA graph (0: none; None: the profile's)
    graphs: int | None = None


def harness_of(prof: EngineProfile, row: MeasuredRow, version) -> Harness:
    """The harness a row's engine runs under: an MLPerf row runs the engine under the
    benchmark's harness, with its scheduler flags; any other row under the engine's own."""
    model = row.arch.name if row.arch is not None else None
    key = (version, model, row.scenario, row.benchmark_round)
    mlperf = row.benchmark and prof.harness_applies("mlperf", *key)
    harness = "mlperf" if mlperf else None
    admission, prefill = prof.scheduler_policy(harness, *key)
    steps = prof.harness_scheduler_steps(harness, *key)
    # what the row states its engine ran with (§F9) over what the harness or engine sets:
    # chunked prompts, or the engine's own unchunked mode (its profile's, else whole prompts)
    if row.chunked_prefill is not None and prefill in WITH_CHUNKING:
        prefill = (WITH_CHUNKING if row.chunked_prefill else WITHOUT_CHUNKING)[prefill]
    elif row.chunked_prefill is not None:
        unchunked = prof.prefill if prof.prefill != "chunked" else "whole"
        prefill = (
            "chunked" if row.chunked_prefill else (prefill if prefill != "chunked" else unchunked)
        )
    if row.mixed_chunk is not None and prof.family == "sglang" and prefill != "separate":
        prefill = "chunked" if row.mixed_chunk else "chunked_separate"  # SGLang's own switch
    if row.scheduler_steps is not None:
        steps = row.scheduler_steps
    balancing = prof.harness_adp_balancing(harness, *key)
    if row.adp_balancing is not None and balances_attention_dp(prof):  # as stated (§F9)
        balancing = row.adp_balancing
    exposed = prof.harness_host_overhead_exposed(harness, *key)
    memory = tuple(prof.harness_memory(harness, *key).items())
    router = prof.harness_router(harness, *key)
    cadence = row.admission_cadence or (0, 0)
    graphs = prof.harness_cuda_graphs(harness, *key)
    return Harness(
        harness, admission, prefill, steps, balancing, exposed, memory, router, cadence, graphs
    )


def as_stated(
    prof: EngineProfile, row: MeasuredRow, kernel_clock: bool = False
) -> EngineProfile | str:
    """The profile with the terms a row states its engine was built and run with (GEMM and
    all-reduce fused, §F6; the KV cache's share of the free memory, §F8; vLLM's async
    scheduling, §F5; SGLang's mixed chunks, §E3), or the status saying the engine cannot run
    as stated."""
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
    if row.async_scheduling is not None:  # vLLM's overlapped scheduler on or off (§F5)
        if prof.family != "vllm":
            return (
                f"unresolved: engine {prof.name!r}: the row states async_scheduling, vLLM's "
                "overlapped scheduler (drop the statement from this row)"
            )
        prof = prof.with_terms(host_overhead_exposed=0.0 if row.async_scheduling else 1.0)
    if row.two_batch_overlap:  # SGLang's or vLLM's micro-batches over DeepEP (§F7)
        problem = overlap_problem(prof, kernel_clock, row.gpu, row.arch.is_moe, row.arch.name)
        if problem is not None:
            why = f"the row states two-batch overlap, which {problem[0]}"
            return f"unresolved: engine {prof.name!r}: {why}"
    exchange = stated_exchange(row, prof.family)  # the MoE exchange backend it launched (§F7)
    if exchange is not None:
        prof = prof.with_terms(**EXCHANGE_TERMS[exchange])
    if row.mixed_chunk is not None and prof.family != "sglang":
        return (
            f"unresolved: engine {prof.name!r}: the row states enable_mixed_chunk, SGLang's "
            "decoding requests mixed into its prefill batches (drop the statement from this row)"
        )
    if row.rank_blocks and prof.family != "sglang":
        return (
            f"unresolved: engine {prof.name!r}: the row states {RANK_BLOCK_FLAGS[row.rank_blocks[0]]}, "
            "SGLang's blocks on each attention rank (drop the statement from this row)"
        )
    for block in row.rank_blocks:  # SGLang's dense layers or head on each attention rank (§F7)
        prof = prof.with_terms(**{RANK_BLOCK_TERMS[block]: "data_parallel"})
    return prof


def engine_label(
    prof: EngineProfile,
    row: MeasuredRow,
    named: bool,
    budget,
    unknown: bool,
    harness: Harness,
    exposed,
    version: str | None = None,
) -> str:
    """How the output names a row's engine: the profile (``named``: at a version stated or an
    engine given; what ``version`` runs otherwise than the profile), what the row states of
    it, and the harness it runs under."""
    name = prof.name
    label = name + version_words(prof, version) if named else f"{name} (version not stated)"
    if not named and row.engine_branch:  # a build of a source branch: no release to place
        label = f"{name} (branch {row.engine_branch} stated, no release version)"
    if row.precision_as_released:
        released = row.arch.precision.weight_bits
        label += (
            f", precision {short(row.precision_as_released)} read as {row.arch.name}'s only released"
            f" weights ({released:g} bits a weight)"
        )
    if row.token_budget:
        label += f", {budget:,} tokens a step as stated"
    if row.fused_allreduce:
        label += ", GEMM and all-reduce fused as stated"
    if row.kv_cache_fraction is not None:
        label += f", KV cache {row.kv_cache_fraction:g} of the free memory as stated"
    if row.async_scheduling is not None:
        label += f", {'' if row.async_scheduling else 'no '}async scheduling as stated"
    if row.arch.redundant_experts and row.copies_needed:
        slots = row.arch.routed_experts + row.arch.redundant_experts
        label += f", {row.arch.redundant_experts} redundant experts (EPLB): the fewest for {slots} slots split evenly over its expert degree"
    elif row.arch.redundant_experts:
        label += f", {row.arch.redundant_experts} redundant experts (EPLB) as stated"
    if row.two_batch_overlap:
        label += ", two-batch overlap as stated"
    label += _moe_words(row, prof.family)
    # the scheduler (§F9): the row's statement, else its harness's, else the engine's own
    said_prompts = row.chunked_prefill is not None or row.mixed_chunk is not None
    prompts = f"{harness.prefill} prompts" + (" as stated" if said_prompts else "")
    steps = f", {harness.steps} decode steps per schedule" if harness.steps > 1 else ""
    if row.scheduler_steps is not None:
        steps = f", {harness.steps} decode step{'s' if harness.steps > 1 else ''} per schedule as stated"
    if row.admission_cadence is not None and harness.cadence[0]:
        steps += f", {cadence_text(harness.cadence)} as stated"
    if row.adp_balancing is not None and not balances_attention_dp(prof):
        steps += f", attention-DP balancing as stated is TensorRT-LLM's: not run by {prof.family}"
    elif row.adp_balancing is not None and not harness.name:
        steps += f", {balancing_words(row.adp_balancing, '/')} steps as stated"
    stated = (row.chunked_prefill, row.mixed_chunk, row.scheduler_steps, row.admission_cadence)
    stated += (row.adp_balancing,)
    if not harness.name and any(v is not None for v in stated):
        label += (f", {prompts}" if said_prompts else "") + steps
    if unknown:
        label += ", host overheads charged"
    issued = row.lengths.issued if row.lengths is not None else 0
    if row.scenario == "closed_loop" and issued:  # the run's own count (a ``requests`` column)
        label += f", the run's {issued:,} requests replayed"
    if harness.name:
        multi = steps
        if harness.balancing is not None:
            said = " as stated" if row.adp_balancing is not None else ""
            multi += ", {} steps{}".format(balancing_words(harness.balancing, "/"), said)
        if exposed is not None:
            multi += ", host overheads " + ("hidden" if exposed == 0.0 else "charged")
        if harness.graphs is not None:
            most = harness.graphs
            multi += f", CUDA graphs up to {most}" if most else ", no CUDA graphs"
        if harness.router == "round_robin":
            multi += ", queries to the instances in turn"
        workspace = dict(harness.memory).get("activation_workspace_bytes_per_gpu")
        if workspace is not None:
            multi += f", {workspace / 1e9:g} GB a GPU set aside before the KV cache"
        label += f", {harness.name} harness ({prompts}, {harness.admission} admission{multi})"
    return label + _whole_prompt_note(row, budget, harness)


def _moe_words(row: MeasuredRow, family: str) -> str:
    """What the engine label says of a MoE run's stated exchange and blocks on each rank."""
    words = ""
    exchange = stated_exchange(row, family)
    if exchange is not None:
        words += f", expert exchange by {EXCHANGE_WORDS[exchange]} as stated"
    if row.rank_blocks:
        said = " and ".join(RANK_BLOCK_WORDS[b] for b in row.rank_blocks)
        words += f", {said} on each attention rank as stated"
    return words


def version_words(prof: EngineProfile, version: str | None) -> str:
    """Where ``version`` runs the step's host work otherwise than ``prof``'s newest range (its
    ``version_terms``; the row's own statements or harness, said apart, not overruling it),
    in words: vLLM 0.11.0 ", 0.11.0: host overheads charged" (the async scheduler came in
    0.14)."""
    v = parse_version(version)
    entry = dict(next((t for at, t in prof.version_terms if in_range(v, at)), ())) if v else {}
    value = entry.get("host_overhead_exposed")
    base = next((p for p in engine_profiles() if p.name == prof.name), None)
    if value is None or base is None or prof.host_overhead_exposed != value:
        return ""
    if base.host_overhead_exposed == value:
        return ""  # the profile's own (vllm-v0 waits at every version)
    return f", {version}: host overheads " + ("hidden" if value == 0.0 else "charged")


def _whole_prompt_note(row: MeasuredRow, budget, harness: Harness) -> str:
    """Where whole prompts (chunked prefill off) nearly fill the step's token budget, a prompt
    joins a step beside only the few decoding requests the rest of the budget holds (none at
    a prompt as long as the budget: the engine then serves about one request at a time), fewer
    than the row runs at once: said in the label, since a run that raised ``max_num_tokens``
    without stating it is predicted at that. A prompt longer than the budget goes in chunks
    beside the decoding requests (``scheduling.Prefill.goes``); trtllm-bench's own limits raise
    the budget above the longest prompt."""
    L = row.lengths
    if harness.prefill != "whole" or L is None or row.bench_limits or not budget:
        return ""
    if not 0.0 < L.input_mean <= budget:
        return ""
    beside = math.floor(budget - L.input_mean)  # decoding requests a prompt fits beside
    runs = row.batch_cap  # a step's requests: a rank's cap, or its share of the clients
    if row.scenario == "closed_loop" and row.concurrency:
        lay = row.layout
        runs = row.concurrency / (lay.replicas * lay.attention_ranks if lay else 1)
    if beside > 0 and (runs is None or beside >= runs):
        return ""
    where = "" if row.token_budget else " (state max_num_tokens if the run raised it)"
    if beside == 0:
        return (
            f", prompts of {L.input_mean:,.0f} tokens fill its {budget:,}-token step: each "
            f"joins only a batch with nothing decoding{where}"
        )
    return (
        f", prompts of {L.input_mean:,.0f} tokens fit its {budget:,}-token step beside at most "
        f"{beside:,} decoding requests{where}"
    )
