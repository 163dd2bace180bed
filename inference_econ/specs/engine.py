"""Engine efficiency profiles: what a serving engine reaches on top of a GPU's datasheet
(docs/model.md Part F), loaded from ``engines/*.yaml``.

A profile is a set of named, physically meaningful efficiency terms (the fraction of HBM
bandwidth weights stream at, the GEMM efficiency curve, per-layer and per-step overheads, the
collective curves, the scheduling policy of a serving benchmark) plus the engine's own limits
(batch, token budget, CUDA-graph sizes, KV-cache memory fraction). Only the ``achievable``
preset reads it. A profile can ``derive_from`` another and override some terms (that is what
``inference-econ calibrate`` writes); every fitted term may carry a standard error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import SpecError, did_you_mean
from . import catalog
from .schema import check_number
from .yamlfile import load_yaml


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
        "fp4_gemm_efficiency",
        "fraction",
        0.05,
        1.0,
        "4-bit GEMMs at the FP4 rate reach this fraction of the 8-bit efficiency (§F2)",
    ),
    Term(
        "moe_gemm_efficiency",
        "fraction",
        0.05,
        1.0,
        "grouped expert GEMMs (with token permutation) relative to dense GEMMs (§F2)",
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
        "expert_routing_skew",
        "factor",
        1.0,
        10.0,
        "how much busier the busiest expert-parallel rank is than uniform routing makes it (§F7)",
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
        "memory per GPU for activations, CUDA graphs and the runtime (§F8)",
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
        "server_throughput_fraction",
        "fraction",
        0.05,
        1.0,
        "benchmark Server scenario: throughput over the continuous-batching rate at the admitted batch (§F9)",
    ),
    Term(
        "p99_tpot_ratio",
        "factor",
        1.0,
        10.0,
        "benchmark Server scenario: 99th-percentile over mean time per output token (§F9)",
    ),
    Term(
        "ttft_steps",
        "steps",
        0.5,
        100.0,
        "benchmark Server scenario: mean time to first token in mean decode steps (§F9)",
    ),
)
BY_TERM = {t.name: t for t in TERMS}
#: Model classes an engine's layouts are stated for, and the layout features beyond 1-D tensor
#: parallelism (docs/model.md §F11): pipeline stages, expert parallelism, data-parallel
#: attention inside an instance, 2-D tensor parallelism.
MODEL_CLASSES = ("dense", "moe", "mla")
LAYOUT_FEATURES = ("pipeline", "expert", "attention_data", "tensor_2d")
#: How the KV-cache fraction is taken: of the memory left after the weights, or of all memory.
FRACTION_OF = ("free", "total")


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
    fp4_gemm_efficiency: float = 0.8
    moe_gemm_efficiency: float = 0.8
    attention_efficiency: float = 0.5
    elementwise_passes: float = 10.0
    layer_overhead_s: float = 30e-6
    step_overhead_s: float = 1e-3
    sequence_overhead_s: float = 4e-6
    eager_layer_overhead_s: float = 40e-6
    cuda_graph_max_batch: int = 8192
    step_time_scale: float = 1.0
    custom_allreduce_latency_s: float = 8e-6
    custom_allreduce_bandwidth_efficiency: float = 0.8
    collective_latency_scale: float = 1.0
    collective_bandwidth_efficiency: float = 1.0
    expert_routing_skew: float = 1.0
    kv_cache_memory_fraction: float = 0.9
    kv_cache_fraction_of: str = "free"
    activation_workspace_bytes_per_gpu: float = 2e9
    max_batch_requests: int = 2048
    step_token_budget: int = 8192
    server_throughput_fraction: float = 0.92
    p99_tpot_ratio: float = 1.2
    ttft_steps: float = 2.0
    #: Layout features the engine runs, by model class (§F11); empty: every layout.
    parallelism: tuple[tuple[str, tuple[str, ...]], ...] = ()
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

    def standard_error(self, name: str) -> float | None:
        return dict(self.standard_errors).get(name)

    def terms(self) -> dict[str, float]:
        """Every numeric term by name."""
        return {t.name: getattr(self, t.name) for t in TERMS}

    def layout_features(self, model_class: str) -> frozenset[str]:
        """The layout features the engine runs for a model class (§F11): every feature when
        the profile states none, or none for a class it does not list."""
        if not self.parallelism:
            return frozenset(LAYOUT_FEATURES)
        return frozenset(dict(self.parallelism).get(model_class, ()))

    def replace(self, **changes) -> EngineProfile:
        """A copy with some terms changed (checked against their bounds)."""
        values = _validated(changes, f"profile {self.name}")
        return dataclasses.replace(self, _cache={}, **values)


def _validated(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Check and normalise profile fields (numbers against their bounds)."""
    out: dict[str, Any] = {}
    known = set(BY_TERM) | {
        "name",
        "description",
        "aliases",
        "kv_cache_fraction_of",
        "parallelism",
        "standard_errors",
        "fit",
        "derive_from",
        "source_file",
        "derived_from",
    }
    for key, value in values.items():
        if key not in known:
            hint = did_you_mean(str(key), sorted(known))
            raise SpecError(source, str(key), "unknown field", hint or "see docs/model.md Part F")
        if key in BY_TERM:
            t = BY_TERM[key]
            number = check_number(
                value, source, key, minimum=t.minimum, maximum=t.maximum, integer=t.integer
            )
            out[key] = int(number) if t.integer else float(number)
        elif key == "kv_cache_fraction_of":
            if value not in FRACTION_OF:
                raise SpecError(
                    source, key, f"unknown value {value!r}", f"choose {' or '.join(FRACTION_OF)}"
                )
            out[key] = value
        elif key == "aliases":
            out[key] = tuple(str(a) for a in ([value] if isinstance(value, str) else value or ()))
        elif key == "standard_errors":
            out[key] = _standard_errors(value, source)
        elif key == "parallelism":
            out[key] = _parallelism(value, source)
        elif key == "fit":
            if not isinstance(value, Mapping):
                raise SpecError(source, key, f"expected a mapping, got {value!r}")
            out[key] = tuple((str(k), str(v)) for k, v in value.items())
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
            if f not in LAYOUT_FEATURES:
                hint = did_you_mean(str(f), LAYOUT_FEATURES) or ", ".join(LAYOUT_FEATURES)
                raise SpecError(source, f"parallelism.{cls}", f"unknown feature {f!r}", hint)
        out.append((str(cls), tuple(str(f) for f in listed)))
    return tuple(out)


def _standard_errors(value: Any, source: str) -> tuple[tuple[str, float], ...]:
    if not isinstance(value, Mapping):
        raise SpecError(source, "standard_errors", f"expected a mapping, got {value!r}")
    out = []
    for key, err in value.items():
        if key not in BY_TERM:
            hint = did_you_mean(str(key), sorted(BY_TERM))
            raise SpecError(source, f"standard_errors.{key}", "not a term of a profile", hint)
        out.append(
            (str(key), float(check_number(err, source, f"standard_errors.{key}", minimum=0)))
        )
    return tuple(out)


def profile_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> EngineProfile:
    """Build a profile from a parsed YAML mapping (``derive_from`` resolved by name)."""
    data = dict(data)
    base_name = data.pop("derive_from", None)
    values = _validated(data, source)
    values["source_file"] = source
    if base_name is not None:
        base = load_engine(str(base_name))
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
        return dataclasses.replace(base, _cache={}, **values)
    if "name" not in values:
        raise SpecError(source, "name", "is missing", "give the engine profile a name")
    return EngineProfile(**values)


@lru_cache(maxsize=64)
def _load_path(path: Path) -> EngineProfile:
    return profile_from_dict(load_yaml(path), str(path))


def load_engine(name_or_path: str | Path | EngineProfile) -> EngineProfile:
    """An engine profile by name ("trtllm", "vllm", "sglang"), alias or YAML path."""
    if isinstance(name_or_path, EngineProfile):
        return name_or_path
    return _load_path(catalog.find("engines", name_or_path).resolve())


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
