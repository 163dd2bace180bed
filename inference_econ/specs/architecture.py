"""Model architectures loaded from ``models/*.yaml`` into frozen dataclasses.

The schema covers what docs/model.md Part B needs even where Part A ignores it: several layer groups
(DeepSeek-V3: 3 dense + 58 MoE layers), shared experts, MLA with its rope / nope / value head
dimensions, sliding-window attention, tied embeddings and a default precision per tensor kind.
Part C adds hybrids (§C2: layer groups whose mixer is a recurrent layer with a fixed-size state,
Mamba or Gated DeltaNet, instead of attention), gated attention outputs and the multi-token
prediction modules some models ship (§C3).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

from ..errors import SpecError, short
from . import catalog, model_fields
from .features import ModelClass
from .inputs import record
from .schema import Reader, check_number
from .yamlfile import load_yaml

#: The most redundant experts (EPLB copies) a MoE layer is served with: the
#: ``--redundant-experts`` setting's bound, and a measured row's.
MOST_REDUNDANT_EXPERTS = 4096

ACTIVATIONS = {"swiglu": (2, 1), "geglu": (2, 1), "gelu": (1, 1), "relu": (1, 1), "mlp": (1, 1)}
#: Recurrent mixers a layer group may use instead of attention (docs/model.md §C2).
#: Recurrent mixers a layer group may use instead of attention (docs/model.md §C2).
MixerKind = Literal["mamba", "gated_deltanet"]
MIXERS: tuple[MixerKind, ...] = get_args(MixerKind)
#: How attention is stored: grouped-query (MHA and MQA are its two ends) or MLA (§B3).
AttentionKind = Literal["gqa", "mla"]


def _whole(minimum: int, maximum: int, unit: str = "") -> dict:
    return dict(minimum=minimum, maximum=maximum, integer=True, unit=unit)


#: Bounds of every numeric field of a model file (and of the dataclasses built in Python):
#: far beyond any real model, and small enough that no count or loop over them explodes.
BOUNDS = {
    "d_model": _whole(1, 2**20),
    "vocab_size": _whole(1, 2**30, "tokens"),
    "query_heads": _whole(1, 2**16),
    "kv_heads": _whole(1, 2**16),
    "head_dim": _whole(1, 2**16),
    "kv_lora_rank": _whole(1, 2**20),
    "q_lora_rank": _whole(0, 2**20),
    "rope_head_dim": _whole(0, 2**16),
    "value_head_dim": _whole(0, 2**16),
    "experts": _whole(1, 2**16),
    "active_experts": _whole(1, 2**16),
    "shared_experts": _whole(0, 2**16),
    "d_ff": _whole(1, 2**24),
    "shared_d_ff": _whole(0, 2**24),
    "matrices": _whole(1, 8),
    "layers": _whole(1, 100_000),
    "sliding_window_tokens": _whole(1, 10**9, "tokens"),
    "max_context_tokens": _whole(1, 10**10, "tokens"),
    "weight_bits": dict(minimum=1, maximum=32, unit="bits"),
    "activation_bits": dict(minimum=1, maximum=32, unit="bits"),
    "kv_cache_bits": dict(minimum=1, maximum=32, unit="bits"),
    "gemm_activation_bits": dict(minimum=1, maximum=32, unit="bits"),
    "dense_weight_bits": dict(minimum=1, maximum=32, unit="bits"),
    "embedding_bits": dict(minimum=1, maximum=32, unit="bits"),
    "expert_groups": _whole(1, 2**16),
    "groups_per_token": _whole(0, 2**16),
    "total": dict(minimum=0, exclusive_minimum=True, maximum=1e16, unit="parameters"),
    "active": dict(minimum=0, exclusive_minimum=True, maximum=1e16, unit="parameters"),
}


#: Most layer groups of one model.
MAX_LAYER_GROUPS = 64


def _check_fields(obj, names: tuple[str, ...], source: str = "") -> None:
    """Check fields of a spec dataclass built in Python against ``BOUNDS``: finite and in
    range. Whole numbers are required of YAML files only: a model family scaled in Python
    (``studies/inverse/size.py``, docs/model.md §D5) has real-valued widths, as the paper's
    continuous grid has real-valued GPU counts."""
    source = source or type(obj).__name__
    for name in names:
        value = getattr(obj, name)
        if value is not None:
            bounds = {k: v for k, v in BOUNDS[name].items() if k != "integer"}
            check_number(value, source, name, **bounds)


@dataclass(frozen=True)
class Precision:
    """Bits per weight, per activation (collectives, matmul I/O) and per KV-cache element, and
    the format of the activations a GEMM multiplies (docs/model.md §B5)."""

    weight_bits: float = 16
    activation_bits: float = 16
    kv_cache_bits: float | None = None  # None: the activation precision (the paper's choice)
    #: Bits of the activation operand of the GEMMs: 8 for W8A8 (FP8 deployments quantise the
    #: activations on the fly), 16 for weight-only W8A16/W4A16 (AWQ, GPTQ, Marlin kernels), 4
    #: for NVFP4 W4A4. None: the weights' element format (the paper's rule: a GEMM runs at the
    #: weights' rate).
    gemm_activation_bits: float | None = None
    #: Bits of the weights outside the routed experts (attention, router, embeddings, shared
    #: experts and dense layers) of a checkpoint that quantises only its experts: gpt-oss's
    #: MXFP4 experts beside BF16 everywhere else. None: ``weight_bits`` (one format).
    dense_weight_bits: float | None = None
    #: The 8-bit weights carry a scale per 128 x 128 block (DeepSeek-V3's released FP8, read by
    #: the engines' block-scaled FP8 kernels, slower than per-tensor FP8's on Hopper); False:
    #: one scale per tensor (ModelOpt's FP8) or not 8-bit. Cleared by ``with_precision`` when
    #: the weights' bits change (another checkpoint).
    weight_block_scaled: bool = False
    #: Bits of the embedding table and output head where the checkpoint keeps them in another
    #: format than the weights around them (AWQ and GPTQ: 16, beside 4-bit layers). None: the
    #: dense weights' bits.
    embedding_bits: float | None = None

    def __post_init__(self) -> None:
        names = (
            "weight_bits",
            "activation_bits",
            "kv_cache_bits",
            "gemm_activation_bits",
            "dense_weight_bits",
            "embedding_bits",
        )
        _check_fields(self, names, "precision")
        if not isinstance(self.weight_block_scaled, bool):
            raise SpecError(
                "precision",
                "weight_block_scaled",
                f"expected true or false, got {self.weight_block_scaled!r}",
                "write true for weights scaled per 128 x 128 block, false otherwise",
            )
        if self.weight_block_scaled and int(self.weight_bits) != 8:
            raise SpecError(
                "precision",
                "weight_block_scaled",
                f"block scales are for 8-bit weights, got weight_bits {self.weight_bits:g}",
                "set weight_bits: 8 or drop weight_block_scaled",
            )

    @property
    def bytes_per_weight(self) -> float:
        return self.weight_bits / 8

    @property
    def bytes_per_activation(self) -> float:
        return self.activation_bits / 8

    @property
    def bytes_per_kv_element(self) -> float:
        bits = self.activation_bits if self.kv_cache_bits is None else self.kv_cache_bits
        return bits / 8

    def label(self) -> str:
        kv = "" if self.kv_cache_bits is None else f"/kv{self.kv_cache_bits:g}"
        gemm = "" if self.gemm_activation_bits is None else f"/gemm-a{self.gemm_activation_bits:g}"
        dense = "" if self.dense_weight_bits is None else f"/dense-w{self.dense_weight_bits:g}"
        block = "/block-scaled" if self.weight_block_scaled else ""
        emb = "" if self.embedding_bits is None else f"/emb{self.embedding_bits:g}"
        return f"w{self.weight_bits:g}a{self.activation_bits:g}{kv}{gemm}{dense}{block}{emb}"


@dataclass(frozen=True)
class Attention:
    """Attention block shared by all layers.

    ``kind`` is "gqa" (MHA when ``kv_heads == query_heads``, MQA when 1) or "mla". For MLA,
    ``head_dim`` is the no-rope query/key head dimension, ``kv_lora_rank`` the cached latent
    ``c``, ``q_lora_rank`` the query latent ``cq`` (0: no query compression).
    """

    kind: AttentionKind
    query_heads: int
    kv_heads: int
    head_dim: int
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    rope_head_dim: int = 0
    value_head_dim: int = 0
    #: A sigmoid gate on the attention output, computed by the query projection (Qwen3-Next):
    #: H·dh·d more weights (§C2).
    output_gate: bool = False

    def __post_init__(self) -> None:
        names = ("query_heads", "kv_heads", "head_dim", "q_lora_rank", "rope_head_dim")
        _check_fields(self, (*names, "value_head_dim"), "attention")
        if self.kind == "mla":
            _check_fields(self, ("kv_lora_rank",), "attention")

    @property
    def kv_vectors(self) -> float:
        """Keys and values counted together (``kv = 2H/g``, §A1)."""
        return 2.0 * self.kv_heads

    @property
    def v_dim(self) -> int:
        return self.value_head_dim or self.head_dim


@dataclass(frozen=True)
class FeedForward:
    """Feed-forward block of one layer group (dense when ``experts == 1``)."""

    d_ff: int
    matrices_in: int = 2
    matrices_out: int = 1
    experts: int = 1
    active_experts: int = 1
    shared_experts: int = 0
    shared_d_ff: int = 0  # 0: same width as a routed expert
    #: Node-limited routing (DeepSeek-V3's n_group / topk_group): the routed experts form
    #: ``expert_groups`` groups and a token chooses its experts in at most
    #: ``groups_per_token`` of them (0: no limit).
    expert_groups: int = 1
    groups_per_token: int = 0

    def __post_init__(self) -> None:
        names = ("d_ff", "experts", "active_experts", "shared_experts", "shared_d_ff")
        names += ("expert_groups", "groups_per_token")
        _check_fields(self, names, "ffn")
        for name in ("matrices_in", "matrices_out"):
            check_number(getattr(self, name), "ffn", name, **BOUNDS["matrices"])

    @property
    def matrices(self) -> int:
        return self.matrices_in + self.matrices_out

    @property
    def is_moe(self) -> bool:
        return self.experts > 1


@dataclass(frozen=True)
class RecurrentMixer:
    """A token mixer with a fixed-size state per sequence instead of a growing KV cache
    (docs/model.md §C2): Mamba (selective state space) or Gated DeltaNet (linear attention
    with a delta-rule state). Its weights, state and per-token work follow from the dims.

    * ``mamba``: ``inner`` channels (expand x d), ``state_dim`` per channel, a causal
      convolution of ``conv_kernel`` taps, a ``dt_rank`` step projection;
    * ``gated_deltanet``: ``key_heads`` x ``key_head_dim`` queries/keys, ``value_heads`` x
      ``value_head_dim`` values, a ``conv_kernel``-tap convolution on q, k and v.
    """

    kind: MixerKind
    conv_kernel: int
    inner: int = 0
    state_dim: int = 0
    dt_rank: int = 0
    key_heads: int = 0
    value_heads: int = 0
    key_head_dim: int = 0
    value_head_dim: int = 0
    #: Bits per element of the state (None: the KV-cache precision).
    state_bits: float | None = None


@dataclass(frozen=True)
class LayerGroup:
    """Consecutive (or interleaved) layers that share a feed-forward block, a window and a
    token mixer (the architecture's attention unless ``mixer`` is a recurrent one)."""

    name: str
    layers: int
    ffn: FeedForward
    sliding_window_tokens: int | None = None
    mixer: RecurrentMixer | None = None

    def __post_init__(self) -> None:
        _check_fields(self, ("layers", "sliding_window_tokens"), f"layer group {self.name}")

    @property
    def is_attention(self) -> bool:
        return self.mixer is None


@dataclass(frozen=True)
class MultiTokenPrediction:
    """Multi-token prediction modules shipped with a model (DeepSeek-V3, Qwen3-Next; §C3).

    Each module is one decoder layer shaped like the layers of ``layer_group`` (its mixer and
    feed-forward block) plus a projection of ``projection_params`` weights from the previous
    hidden state and the next token's embedding (2·d x d); it shares the target's embedding and
    output head. Used as draft heads for speculative decoding.
    """

    modules: int
    layer_group: str
    projection_params: int


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer as the cost model sees it."""

    name: str
    d_model: int
    vocab_size: int
    attention: Attention
    layer_groups: tuple[LayerGroup, ...]
    precision: Precision = Precision()
    tied_embeddings: bool = False
    parallel_attention: bool = False
    description: str = ""
    aliases: tuple[str, ...] = ()
    source: str = ""
    #: The Hugging Face repository of the model's weights ("org/name"), what an export's
    #: engine loads; None for a model without public weights (an export needs --checkpoint).
    hf_repository: str | None = None
    published_total_params: float | None = None
    published_active_params: float | None = None
    source_file: str = ""
    mtp: MultiTokenPrediction | None = None
    #: The longest context the model was trained for (its config's max_position_embeddings);
    #: None when unknown. Longer contexts are computed with a warning.
    max_context_tokens: int | None = None
    #: How unevenly real tokens pick its routed experts, as the measured MoE tables name it
    #: (``EXPERT_ROUTINGS``), where the model file states it; None: its class's
    #: (``model.moe.routing_of``).
    expert_routing: str | None = None
    #: Bits per weight of the checkpoint ``hf_repository`` names: the file's precision, kept
    #: when a setting runs other bits (``with_precision``), which need another checkpoint; None:
    #: ``precision``'s.
    checkpoint_weight_bits: float | None = None
    #: The weights are published in ``precision``'s format only and every engine loads that
    #: checkpoint (gpt-oss: MXFP4 experts), so a result labelled with wider weights ("FP8",
    #: "BF16") ran it (``measured.resolving.as_released``).
    released_format_only: bool = False
    #: Redundant copies of routed experts a deployment holds in each MoE layer beside its
    #: experts, which the engine's expert-parallel load balancer (EPLB) places on the ranks the
    #: hottest experts load most (docs/model-part-f.md §F7 "Redundant experts"); 0: none. A
    #: serving option (``with_redundant_experts``), not a model file's field.
    redundant_experts: int = 0

    @property
    def checkpoint_bits(self) -> float:
        """Bits per weight of the checkpoint ``hf_repository`` names."""
        held = self.checkpoint_weight_bits
        return self.precision.weight_bits if held is None else held

    @property
    def layers(self) -> int:
        return sum(g.layers for g in self.layer_groups)

    @property
    def attention_layers(self) -> int:
        """Layers whose mixer is attention (all of them unless the model is a hybrid)."""
        return sum(g.layers for g in self.layer_groups if g.is_attention)

    def group(self, name: str) -> LayerGroup:
        """The layer group called ``name``."""
        for g in self.layer_groups:
            if g.name == name:
                return g
        raise SpecError(
            self.source_file or self.name,
            "layer_group",
            f"no layer group named {name!r}",
            f"groups: {', '.join(g.name for g in self.layer_groups)}",
        )

    @property
    def is_moe(self) -> bool:
        return any(g.ffn.is_moe for g in self.layer_groups)

    @property
    def model_class(self) -> ModelClass:
        """The class an engine profile states its layouts for (``features.ModelClass``): MLA
        attention, else a mixture of experts, else dense."""
        return "mla" if self.attention.kind == "mla" else "moe" if self.is_moe else "dense"

    @property
    def routed_experts(self) -> int:
        """Routed experts in each MoE layer (the most where groups differ; 1 for a dense model)."""
        return int(max(g.ffn.experts for g in self.layer_groups))

    def with_precision(
        self, weight_bits=None, activation_bits=None, kv_cache_bits=None, gemm_activation_bits=None
    ) -> Architecture:
        """The same architecture with some precisions replaced (None keeps the current one);
        other weight bits are another checkpoint, so its block scaling goes."""
        p = self.precision
        bits = p.weight_bits if weight_bits is None else weight_bits
        new = Precision(
            bits,
            p.activation_bits if activation_bits is None else activation_bits,
            p.kv_cache_bits if kv_cache_bits is None else kv_cache_bits,
            p.gemm_activation_bits if gemm_activation_bits is None else gemm_activation_bits,
            p.dense_weight_bits,
            p.weight_block_scaled and bits == p.weight_bits,
            p.embedding_bits,
        )
        return dataclasses.replace(self, precision=new, checkpoint_weight_bits=self.checkpoint_bits)

    def with_redundant_experts(self, count: int) -> Architecture:
        """The same architecture served with ``count`` redundant experts in each MoE layer
        (EPLB); refused (SpecError) for a model without routed experts or a count that is not
        a whole number from 0 to ``MOST_REDUNDANT_EXPERTS``."""
        real = isinstance(count, numbers.Real) and not isinstance(count, bool)
        within = real and math.isfinite(count) and 0 <= count <= MOST_REDUNDANT_EXPERTS
        if not (within and count == int(count)):
            raise SpecError(
                "--redundant-experts",
                "",
                f"is {short(count)}",
                f"give a whole number from 0 to {MOST_REDUNDANT_EXPERTS}",
            )
        if count and not self.is_moe:
            raise SpecError(
                "--redundant-experts",
                "",
                f"is {count} but {self.name} has no routed experts to copy",
                "leave it out for a dense model",
            )
        return dataclasses.replace(self, redundant_experts=int(count))

    def with_block_scaled_fp8(self) -> Architecture:
        """The same architecture from an 8-bit checkpoint whose weights carry block scales (a
        measured row's "FP8 (block-scaled)": Qwen3's own FP8 releases, DeepSeek-V3's), so the
        engines' block-scaled kernels run it; its other precisions as they are."""
        p = dataclasses.replace(self.precision, weight_bits=8, weight_block_scaled=True)
        return dataclasses.replace(self, precision=p)


# --- YAML -------------------------------------------------------------------------------------

#: The top-level fields of a model file (what ``architecture_from_dict`` reads; ``specs.kinds``
#: tells a model file from a GPU or engine-profile file by them).
MODEL_FIELDS = (
    "name",
    "aliases",
    "description",
    "source",
    "hf_repository",
    "d_model",
    "vocab_size",
    "attention",
    "ffn",
    "layers",
    "layer_groups",
    "sliding_window_tokens",
    "precision",
    "tied_embeddings",
    "parallel_attention",
    "published_params",
    "mtp",
    "max_context_tokens",
    "expert_routing",
    "released_format_only",
)

#: The routings of real tokens over a model's experts that the measured fused-MoE tables time
#: (NVIDIA AIConfigurator's ``workload_distribution``: every expert the same count, or a power
#: law of that exponent; github.com/ai-dynamo/aiconfigurator @095f58a).
EXPERT_ROUTINGS = ("balanced", "power_law_1.01", "power_law_1.2")


def _attention(r: Reader, d_model: int) -> Attention:
    r.only(model_fields.ATTENTION)
    kind = r.string("kind", "gqa", choices=("gqa", "mha", "mqa", "mla"))
    heads = r.number("query_heads", **BOUNDS["query_heads"])
    head_dim = r.number("head_dim", 0, **BOUNDS["head_dim"]) or d_model // heads
    if head_dim < 1:
        raise SpecError(
            r.source,
            r.path("head_dim"),
            f"d_model {d_model} over {heads} query heads leaves no head dimension",
            "give head_dim",
        )
    if kind == "mla":
        att = Attention(
            kind="mla",
            query_heads=heads,
            kv_heads=r.number("kv_heads", heads, **BOUNDS["kv_heads"]),
            head_dim=head_dim,
            kv_lora_rank=r.number("kv_lora_rank", **BOUNDS["kv_lora_rank"]),
            q_lora_rank=r.number("q_lora_rank", 0, **BOUNDS["q_lora_rank"]),
            rope_head_dim=r.number("rope_head_dim", 0, **BOUNDS["rope_head_dim"]),
            value_head_dim=r.number("value_head_dim", 0, **BOUNDS["value_head_dim"]),
        )
    else:
        default_kv = {"mha": heads, "mqa": 1}.get(kind)
        kv = r.number(
            "kv_heads", default_kv if default_kv is not None else ..., **BOUNDS["kv_heads"]
        )
        if heads % kv:
            raise SpecError(
                r.source,
                r.path("kv_heads"),
                f"{kv} does not divide query_heads={heads}",
                "each KV head serves a whole group of query heads",
            )
        att = Attention(
            kind="gqa",
            query_heads=heads,
            kv_heads=kv,
            head_dim=head_dim,
            output_gate=r.boolean("output_gate", False),
        )
    r.finish()
    return att


def _ffn(r: Reader) -> FeedForward:
    r.only(model_fields.FFN)
    if r.has("matrices"):
        m = r.raw("matrices")
        if not isinstance(m, list) or len(m) != 2:
            raise SpecError(
                r.source,
                r.path("matrices"),
                f"expected [in, out] counts, got {short(m)}",
                "e.g. [2, 1] for SwiGLU",
            )
        m_in, m_out = (
            check_number(x, r.source, r.path("matrices"), **BOUNDS["matrices"]) for x in m
        )
        r.raw("activation", None)
    else:
        act = r.string("activation", "swiglu", choices=tuple(ACTIVATIONS))
        m_in, m_out = ACTIVATIONS[act]
    experts = r.number("experts", 1, **BOUNDS["experts"])
    active = r.number("active_experts", 1 if experts == 1 else ..., **BOUNDS["active_experts"])
    if active > experts:
        raise SpecError(
            r.source,
            r.path("active_experts"),
            f"{active} > experts={experts}",
            "at most the number of experts",
        )
    ffn = FeedForward(
        d_ff=r.number("d_ff", **BOUNDS["d_ff"]),
        matrices_in=m_in,
        matrices_out=m_out,
        experts=experts,
        active_experts=active,
        shared_experts=r.number("shared_experts", 0, **BOUNDS["shared_experts"]),
        shared_d_ff=r.number("shared_d_ff", 0, **BOUNDS["shared_d_ff"]),
        expert_groups=r.number("expert_groups", 1, **BOUNDS["expert_groups"]),
        groups_per_token=r.number("groups_per_token", 0, **BOUNDS["groups_per_token"]),
    )
    if ffn.groups_per_token > ffn.expert_groups or ffn.expert_groups > ffn.experts:
        raise SpecError(
            r.source,
            r.path("groups_per_token"),
            f"{ffn.groups_per_token} of {ffn.expert_groups} expert groups for "
            f"{ffn.experts} experts",
            "at most expert_groups groups per token, at most one group per expert",
        )
    r.finish()
    return ffn


def _mixer(r: Reader | None, d_model: int) -> RecurrentMixer | None:
    """A recurrent mixer block (§C2), its dims checked for the kind."""
    if r is None:
        return None
    r.only(model_fields.MIXER)
    kind = r.string("kind", choices=MIXERS)
    whole = dict(minimum=1, integer=True)
    bits = r.number("state_bits", None, minimum=1, maximum=32)
    if kind == "mamba":
        expand = r.number("expand", None, **whole)
        inner = r.number("inner", expand * d_model if expand else ..., **whole)
        mixer = RecurrentMixer(
            kind=kind,
            conv_kernel=r.number("conv_kernel", **whole),
            inner=inner,
            state_dim=r.number("state_dim", **whole),
            dt_rank=r.number("dt_rank", -(-d_model // 16), **whole),
            state_bits=bits,
        )
    else:
        mixer = RecurrentMixer(
            kind=kind,
            conv_kernel=r.number("conv_kernel", **whole),
            key_heads=r.number("key_heads", **whole),
            value_heads=r.number("value_heads", **whole),
            key_head_dim=r.number("key_head_dim", **whole),
            value_head_dim=r.number("value_head_dim", **whole),
            state_bits=bits,
        )
        if mixer.value_heads % mixer.key_heads:
            raise SpecError(
                r.source,
                r.path("value_heads"),
                f"{mixer.value_heads} is not a multiple of key_heads={mixer.key_heads}",
                "each key head serves a whole group of value heads",
            )
    r.finish()
    return mixer


def _mtp(r: Reader | None, d_model: int, groups: list[LayerGroup]) -> MultiTokenPrediction | None:
    if r is None:
        return None
    r.only(model_fields.MTP)
    names = [g.name for g in groups]
    mtp = MultiTokenPrediction(
        modules=r.number("modules", minimum=1, integer=True),
        layer_group=r.string("layer_group", names[-1], choices=tuple(names)),
        projection_params=r.number(
            "projection_params", 2 * d_model * d_model, minimum=0, integer=True
        ),
    )
    r.finish()
    return mtp


def _precision(r: Reader | None) -> Precision:
    if r is None:
        return Precision()
    fields = dict(
        weight_bits=r.number("weight_bits", 16, **BOUNDS["weight_bits"]),
        activation_bits=r.number("activation_bits", 16, **BOUNDS["activation_bits"]),
        kv_cache_bits=r.number("kv_cache_bits", None, **BOUNDS["kv_cache_bits"]),
        gemm_activation_bits=r.number(
            "gemm_activation_bits", None, **BOUNDS["gemm_activation_bits"]
        ),
        dense_weight_bits=r.number("dense_weight_bits", None, **BOUNDS["dense_weight_bits"]),
        weight_block_scaled=r.boolean("weight_block_scaled", False),
        embedding_bits=r.number("embedding_bits", None, **BOUNDS["embedding_bits"]),
    )
    r.finish()
    try:
        return Precision(**fields)
    except SpecError as exc:  # a rule across fields (``Precision.__post_init__``), in the file
        raise SpecError(r.source, r.path(exc.field), exc.problem, exc.fix) from None


def architecture_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Architecture:
    """Validate a parsed model YAML and build the Architecture."""
    r = Reader(data, source)
    r.only(model_fields.MODEL)
    name = r.string("name")
    d_model = r.number("d_model", **BOUNDS["d_model"])
    attention = _attention(r.sub("attention"), d_model)
    groups = _layer_groups(r, source, d_model)
    total_layers = sum(g.layers for g in groups)
    if total_layers > BOUNDS["layers"]["maximum"]:
        raise SpecError(
            source, "layer_groups", f"{total_layers} layers in all", "at most 100000 layers"
        )
    published = r.sub("published_params", None)
    total = active = None
    if published is not None:
        total = published.number("total", None, **BOUNDS["total"])
        active = published.number("active", None, **BOUNDS["active"])
        published.string("source", "")
        published.finish()
    aliases = r.text_list("aliases")
    arch = Architecture(
        name=name,
        d_model=d_model,
        vocab_size=r.number("vocab_size", **BOUNDS["vocab_size"]),
        attention=attention,
        layer_groups=tuple(groups),
        precision=_precision(r.sub("precision", None)),
        tied_embeddings=r.boolean("tied_embeddings", False),
        parallel_attention=r.boolean("parallel_attention", False),
        description=r.string("description", ""),
        aliases=aliases,
        source=r.string("source", ""),
        hf_repository=_hf_repository(r),
        published_total_params=total,
        published_active_params=active,
        source_file=source,
        mtp=_mtp(r.sub("mtp", None), d_model, groups),
        max_context_tokens=r.number("max_context_tokens", None, **BOUNDS["max_context_tokens"]),
        expert_routing=_expert_routing(r),
        released_format_only=r.boolean("released_format_only", False),
    )
    r.finish()
    if arch.precision.dense_weight_bits is not None and not arch.is_moe:
        raise SpecError(
            source,
            "precision.dense_weight_bits",
            "is set on a model without routed experts (every weight is then a dense one)",
            "weight_bits alone",
        )
    if arch.expert_routing is not None and not arch.is_moe:
        raise SpecError(
            source,
            "expert_routing",
            "is set on a model without routed experts",
            "leave it out, or give a layer group experts",
        )
    return arch


def _expert_routing(r: Reader) -> str | None:
    """The model file's ``expert_routing``: its ``distribution`` (one of ``EXPERT_ROUTINGS``)
    with the ``source`` that states it, or None (absent)."""
    sub = r.sub("expert_routing", None)
    if sub is None:
        return None
    sub.only(model_fields.EXPERT_ROUTING)
    distribution = sub.string("distribution", choices=EXPERT_ROUTINGS)
    sub.string("source")
    sub.finish()
    return distribution


#: A Hugging Face Hub repository id: "org/name" (letters, digits, '_', '.', '-').
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _hf_repository(r: Reader) -> str | None:
    """The model file's ``hf_repository``: an "org/name" Hub repository id, or None (absent)."""
    repo = r.string("hf_repository", None)
    if repo is not None and not REPO_ID.match(repo):
        raise SpecError(
            r.source,
            "hf_repository",
            f"{short(repo)} is not a Hugging Face repository id",
            "write org/name (e.g. meta-llama/Llama-3.1-8B), or leave it out",
        )
    return repo


def _layer_groups(r: Reader, source: str, d_model: int) -> list[LayerGroup]:
    """A model's ``layer_groups`` (each its layers, FFN, sliding window and mixer), or one
    group ``all`` of its top-level ``layers``, ``ffn`` and ``sliding_window_tokens``."""
    groups: list[LayerGroup] = []
    if r.has("layer_groups"):
        raw = r.raw("layer_groups")
        if not isinstance(raw, list) or not raw or len(raw) > MAX_LAYER_GROUPS:
            raise SpecError(
                source,
                "layer_groups",
                f"expected a list of 1 to {MAX_LAYER_GROUPS} groups, got {short(raw)}",
                "",
            )
        for i, item in enumerate(raw):
            g = Reader(item, source, f"layer_groups[{i}]")
            g.only(model_fields.LAYER_GROUP)
            window = g.number("sliding_window_tokens", None, **BOUNDS["sliding_window_tokens"])
            mixer = _mixer(g.sub("mixer", None), d_model)
            if mixer is not None and window is not None:
                raise SpecError(
                    source,
                    f"layer_groups[{i}].sliding_window_tokens",
                    "given for a recurrent mixer",
                    "a recurrent layer keeps a fixed state, not a window of positions",
                )
            groups.append(
                LayerGroup(
                    name=g.string("name", f"group{i}"),
                    layers=g.number("layers", **BOUNDS["layers"]),
                    ffn=_ffn(g.sub("ffn")),
                    sliding_window_tokens=window,
                    mixer=mixer,
                )
            )
            g.finish()
        for key in ("layers", "ffn"):
            if r.has(key):
                raise SpecError(
                    source, key, "given together with layer_groups", "put it inside each group"
                )
    else:
        groups.append(
            LayerGroup(
                name="all",
                layers=r.number("layers", **BOUNDS["layers"]),
                ffn=_ffn(r.sub("ffn")),
                sliding_window_tokens=r.number(
                    "sliding_window_tokens", None, **BOUNDS["sliding_window_tokens"]
                ),
            )
        )
    return groups


@lru_cache(maxsize=256)
def _load_path(path: Path) -> Architecture:
    return architecture_from_dict(load_yaml(path), str(path))


def load_model(name_or_path: str | Path) -> Architecture:
    """Load a model architecture by name, alias (case-insensitive) or path to a YAML file."""
    if isinstance(name_or_path, Architecture):
        return name_or_path
    path = catalog.resolved(catalog.find("models", name_or_path))
    record(path)
    return _load_path(path)
