"""The efficiency terms of an engine profile (docs/model.md Part F): each term's unit, bounds
and meaning, the terms profiles no longer have, and how the KV-cache fraction is taken."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..errors import SpecError, did_you_mean
from .schema import check_number
from .versions import in_range, version_range


@dataclass(frozen=True)
class Term:
    """One efficiency term of a profile: its unit, bounds and meaning (docs/model.md Part F)."""

    name: str
    unit: str
    minimum: float
    maximum: float
    meaning: str
    integer: bool = False


#: Every numeric term, in the order docs/model.md Part F introduces them.
TERMS: tuple[Term, ...] = (
    Term(
        "hbm_efficiency",
        "fraction",
        0.05,
        1.0,
        "weights and activations stream at this fraction of the datasheet HBM bandwidth (§F1)",
    ),
    Term(
        "kv_read_efficiency",
        "fraction",
        0.05,
        1.0,
        "decode attention reads the KV cache at this fraction of the datasheet HBM bandwidth (§F3)",
    ),
    Term(
        "kv_request_positions",
        "positions",
        0.0,
        1e5,
        "fixed cost of decode attention per request, in cached positions read (§F3)",
    ),
    Term(
        "gemm_efficiency_scale",
        "fraction",
        0.05,
        1.5,
        "model GEMMs reach this multiple of the GPU's best-shape GEMM efficiency (§F2)",
    ),
    Term(
        "gemm_half_volume",
        "M*N*K",
        1e3,
        1e14,
        "GEMM volume per GPU at which a GEMM reaches half its best efficiency (§F2)",
    ),
    Term(
        "gemm_tile_tokens",
        "tokens",
        1.0,
        4096.0,
        "GEMM tile rows: the token count of a GEMM is rounded up to a multiple (§F2)",
        True,
    ),
    Term(
        "moe_gemm_efficiency",
        "fraction",
        0.05,
        1.0,
        "grouped expert GEMMs (with token permutation) relative to dense GEMMs (§F2)",
    ),
    Term(
        "moe_expert_half_params",
        "parameters",
        0.0,
        1e9,
        "one expert matrix's parameters per GPU (d·f/t_ff) at which the grouped expert GEMM reaches half its efficiency (0: none; §F7)",
    ),
    Term(
        "attention_efficiency",
        "fraction",
        0.01,
        1.0,
        "attention arithmetic (flash attention) at this fraction of the 16-bit peak (§F3)",
    ),
    Term(
        "elementwise_passes",
        "passes",
        0.0,
        200.0,
        "non-GEMM passes over a token's d-wide BF16 row per layer: norms, residuals, rotary, activation, quantisation (§F4)",
    ),
    Term(
        "layer_overhead_s",
        "seconds",
        0.0,
        1e-3,
        "fixed time per layer per step: kernel gaps and tails inside a CUDA graph (§F5)",
    ),
    Term(
        "step_overhead_s",
        "seconds",
        0.0,
        0.5,
        "fixed time per step: scheduling, input preparation, sampling launch (§F5)",
    ),
    Term(
        "sequence_overhead_s",
        "seconds",
        0.0,
        1e-3,
        "time per sequence per step: sampling, detokenisation, bookkeeping (§F5)",
    ),
    Term(
        "hidden_sequence_overhead_s",
        "seconds",
        0.0,
        1e-3,
        "host time per sequence per step of a runtime that overlaps its host work with the "
        "GPU's step: a step lasts at least the host's, step_overhead_s plus this per sequence "
        "of an instance of up to two attention-DP ranks; beyond two, twice this per sequence "
        "of each rank's even share (§F5)",
    ),
    Term(
        "host_overhead_exposed",
        "fraction",
        0.0,
        1.0,
        "share of the host's step and sequence overheads the GPU waits for: 1 an engine that "
        "prepares each step after the last, 0 one whose overlap scheduler does it while the "
        "GPU runs the step before (§F5)",
    ),
    Term(
        "eager_layer_overhead_s",
        "seconds",
        0.0,
        1e-3,
        "extra time per layer of a step too large for the captured CUDA graphs (§F5)",
    ),
    Term(
        "cuda_graph_max_batch",
        "requests",
        0.0,
        1e7,
        "largest step (tokens) run from a captured CUDA graph; 0: no CUDA graphs (§F5)",
        True,
    ),
    Term(
        "step_time_scale",
        "factor",
        0.1,
        10.0,
        "the engine's step time relative to the reference engine's kernels (§F5)",
    ),
    Term(
        "custom_allreduce_latency_s",
        "seconds",
        0.0,
        1e-3,
        "latency of the engine's own one-shot/two-shot all-reduce kernels inside a scale-up domain (§F6)",
    ),
    Term(
        "custom_allreduce_bandwidth_efficiency",
        "fraction",
        0.0,
        1.0,
        "link bandwidth the engine's own all-reduce reaches; 0: the engine has none (§F6)",
    ),
    Term(
        "collective_latency_scale",
        "factor",
        0.0,
        50.0,
        "measured NCCL/RCCL latency relative to the library's tuning tables (§F6)",
    ),
    Term(
        "collective_bandwidth_efficiency",
        "fraction",
        0.01,
        2.0,
        "measured NCCL/RCCL bus bandwidth relative to the tables' protocols (§F6)",
    ),
    Term(
        "gemm_allreduce_overlap",
        "fraction",
        0.0,
        1.0,
        "share of the tensor-parallel all-reduces' bandwidth time hidden under the row-parallel "
        "GEMMs that produce them: 1 an engine built with the GEMM and its all-reduce fused in "
        "one kernel (TensorRT-LLM's gemm_allreduce_plugin), 0 one that runs them apart (§F6)",
    ),
    Term(
        "shared_expert_overlap",
        "fraction",
        0.0,
        1.0,
        "share of the shorter of an MoE layer's shared experts and its routed experts (with "
        "their dispatch and combine) hidden under the longer in a step replayed from a CUDA "
        "graph: 1 an engine that runs the shared experts on a stream of their own, 0 one that "
        "runs them one after the other (§F14)",
    ),
    Term(
        "expert_routing_skew",
        "factor",
        1.0,
        10.0,
        "how much busier the busiest expert-parallel rank is than uniform routing makes it (§F7)",
    ),
    Term(
        "block_fp8_dispatch_quantised",
        "0 or 1",
        0,
        1,
        "1: a block-scaled FP8 MoE's expert dispatch carries FP8 values and their scales "
        "(§B11); 0: the activations, the engine quantising them inside its fused MoE (§F7)",
        integer=True,
    ),
    Term(
        "expert_exchange_by_method",
        "0 or 1",
        0,
        1,
        "1: a MoE's tokens move as the engine's communication strategy picks (§F7): nothing "
        "without attention data parallelism (an all-reduce combines), with it the NVLink "
        "one-sided all-to-all (one copy per destination rank) where the GPU has it, else an "
        "all-gather and a reduce-scatter; 0: §B11's all-to-all on every layout",
        integer=True,
    ),
    Term(
        "one_sided_exchange",
        "0, 1 or 2",
        0,
        2,
        "where an exchange by method runs the NVLink one-sided all-to-all under attention "
        "data parallelism (§F7): 2 at any expert degree (TensorRT-LLM 1.2 on), 1 only where "
        "the degree exceeds a token's top-k (TensorRT-LLM before 1.2), 0 never (an all-gather "
        "and a reduce-scatter: vLLM's default backend)",
        integer=True,
    ),
    Term(
        "deepep_exchange",
        "0 or 1",
        0,
        1,
        "1: the engine's expert all-to-all (§B11) runs DeepEP's kernels, charged inside one "
        "scale-up domain at their measured line where kernels/deepep_exchange.yaml has the "
        "part (low-latency kernels for decode steps, normal ones for prompts; §F7)",
        integer=True,
    ),
    Term(
        "gathered_tokens_quantised",
        "0 or 1",
        0,
        1,
        "1: an exchange by all-gather carries the tokens in the expert GEMMs' input format "
        "(TensorRT-LLM quantises before it); 0: in the activations' (vLLM's all-gather runs "
        "before its MoE quantises, §F7)",
        integer=True,
    ),
    Term(
        "kv_cache_memory_fraction",
        "fraction",
        0.01,
        1.0,
        "share of the memory left after the weights (or of all memory) given to the KV cache (§F8)",
    ),
    Term(
        "activation_workspace_bytes_per_gpu",
        "bytes",
        0.0,
        1e12,
        "memory per GPU set aside for the runtime and CUDA graphs, and for activations where "
        "the profile states no activation buffers (§F8)",
    ),
    Term(
        "activation_buffers_per_token",
        "buffers",
        0.0,
        1000.0,
        "16-bit buffers of the attention width a GPU without attention tensor parallelism "
        "sets aside per token of the step budget for a dense model's activations, before it "
        "sizes the KV cache (0: none beyond the workspace; §F8)",
    ),
    Term(
        "moe_activation_buffers_per_token",
        "buffers",
        0.0,
        1000.0,
        "the same for a mixture-of-experts model's activations (§F8)",
    ),
    Term(
        "max_batch_requests",
        "requests",
        1.0,
        1e7,
        "the engine's default largest batch of running requests (§F9)",
        True,
    ),
    Term(
        "step_token_budget",
        "tokens",
        1.0,
        1e7,
        "the engine's default most tokens per step: decode tokens plus prompt chunks (§F9)",
        True,
    ),
    Term(
        "scheduler_steps",
        "steps",
        1.0,
        1024.0,
        "decode steps per scheduler call (vLLM V0's num_scheduler_steps): requests are "
        "admitted only between such windows (§F9)",
        True,
    ),
)


BY_TERM = {t.name: t for t in TERMS}


#: The profile terms of each way an engine's launch moves a MoE's tokens (the kinds of
#: ``measured.overlap_words.EXCHANGE_BACKENDS``, §F7): ``gather`` - the tokens all-gathered
#: in the activations' format under attention data parallelism, nothing without it (SGLang's
#: and vLLM's default backends); ``deepep`` - §B11's all-to-all on DeepEP's kernels (their
#: measured line inside a domain); ``all_to_all`` - §B11's all-to-all on another library's.
EXCHANGE_TERMS: dict[str, dict[str, float]] = {
    "gather": {
        "expert_exchange_by_method": 1,
        "one_sided_exchange": 0,
        "gathered_tokens_quantised": 0,
    },
    "deepep": {"expert_exchange_by_method": 0, "deepep_exchange": 1},
    "all_to_all": {"expert_exchange_by_method": 0, "deepep_exchange": 0},
}


#: Terms a profile once had, with why they went: a file that still sets one is refused with
#: the reason, not with "unknown field".
REMOVED_TERMS = {
    "fp4_gemm_efficiency": (
        "removed: a 4-bit GEMM's best-shape rate is now the part's own measured figure "
        "(hardware YAML 'gemm_efficiency: {4: ...}', docs/model.md §F2); delete the line"
    ),
}


#: How the KV-cache fraction is taken: of the memory left after the weights, or of all memory.
FractionOf = Literal["free", "total"]


FRACTION_OF: tuple[FractionOf, ...] = get_args(FractionOf)


def standard_errors(value: Any, source: str) -> tuple[tuple[str, float], ...]:
    """A profile's ``standard_errors`` mapping (term: error, each error >= 0), checked."""
    if not isinstance(value, Mapping):
        raise SpecError(source, "standard_errors", f"expected a mapping, got {value!r}")
    out = []
    for key, err in value.items():
        at = f"standard_errors.{key}"
        out.append((_term_name(key, source, at), float(check_number(err, source, at, minimum=0))))
    return tuple(out)


def version_terms(value: Any, source: str) -> tuple[tuple[str, tuple[tuple[str, float], ...]], ...]:
    """A profile's ``version_terms``: a list of {versions: RANGE, term: value, ...}, the terms
    the engine's versions in RANGE run with instead of the profile's (the first entry holding
    for a stated version applies; ``select_engine`` applies it)."""
    if not isinstance(value, list):
        raise SpecError(
            source,
            "version_terms",
            f"expected a list, got {value!r}",
            'e.g. [{versions: "<1.2", one_sided_exchange: 1}]',
        )
    out = []
    for i, entry in enumerate(value):
        where = f"version_terms[{i}]"
        if not isinstance(entry, Mapping) or "versions" not in entry or len(entry) < 2:
            raise SpecError(
                source, where, f"expected a mapping, got {entry!r}", "a versions range and a term"
            )
        try:
            version_range(str(entry["versions"]), source)
        except SpecError as exc:
            raise SpecError(source, f"{where}.versions", exc.problem, exc.fix) from None
        terms = []
        for key, word in entry.items():
            if key == "versions":
                continue
            at = f"{where}.{key}"
            t = BY_TERM[_term_name(key, source, at)]
            number = check_number(
                word, source, at, minimum=t.minimum, maximum=t.maximum, integer=t.integer
            )
            terms.append((t.name, int(number) if t.integer else float(number)))
        out.append((str(entry["versions"]).strip(), tuple(terms)))
    return tuple(out)


def _term_name(key: Any, source: str, at: str) -> str:
    """``key`` where it names a profile's numeric term; a removed or unknown one is refused."""
    if key in REMOVED_TERMS:
        raise SpecError(source, at, "no longer a term", REMOVED_TERMS[key])
    if key not in BY_TERM:
        hint = did_you_mean(str(key), sorted(BY_TERM))
        raise SpecError(source, at, "not a term of a profile", hint)
    return str(key)


def at_version(profile, version):
    """``profile`` (an ``EngineProfile``) with the terms its first ``version_terms`` entry
    holding for ``version`` sets; itself for a version not stated or held by none."""
    for where, terms in profile.version_terms if version is not None else ():
        if in_range(version, where):
            return profile.with_terms(**dict(terms))
    return profile
