"""Model architectures loaded from ``models/*.yaml`` into frozen dataclasses.

The schema covers what docs/model.md Part B needs even where Part A ignores it: several layer groups
(DeepSeek-V3: 3 dense + 58 MoE layers), shared experts, MLA with its rope / nope / value head
dimensions, sliding-window attention, tied embeddings and a default precision per tensor kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import SpecError
from . import catalog
from .schema import Reader
from .yamlfile import load_yaml

ACTIVATIONS = {"swiglu": (2, 1), "geglu": (2, 1), "gelu": (1, 1), "relu": (1, 1), "mlp": (1, 1)}


@dataclass(frozen=True)
class Precision:
    """Bits per weight, per activation (collectives, matmul I/O) and per KV-cache element."""

    weight_bits: float = 16
    activation_bits: float = 16
    kv_cache_bits: float | None = None  # None: the activation precision (the paper's choice)

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
        return f"w{self.weight_bits:g}a{self.activation_bits:g}{kv}"


@dataclass(frozen=True)
class Attention:
    """Attention block shared by all layers.

    ``kind`` is "gqa" (MHA when ``kv_heads == query_heads``, MQA when 1) or "mla". For MLA,
    ``head_dim`` is the no-rope query/key head dimension, ``kv_lora_rank`` the cached latent
    ``c``, ``q_lora_rank`` the query latent ``cq`` (0: no query compression).
    """

    kind: str
    query_heads: int
    kv_heads: int
    head_dim: int
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    rope_head_dim: int = 0
    value_head_dim: int = 0

    @property
    def group_size(self) -> float:
        """Query heads per KV head (``g`` in docs/model.md)."""
        return self.query_heads / self.kv_heads

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

    @property
    def matrices(self) -> int:
        return self.matrices_in + self.matrices_out

    @property
    def is_moe(self) -> bool:
        return self.experts > 1


@dataclass(frozen=True)
class LayerGroup:
    """Consecutive (or interleaved) layers that share a feed-forward block and window."""

    name: str
    layers: int
    ffn: FeedForward
    sliding_window_tokens: int | None = None


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
    published_total_params: float | None = None
    published_active_params: float | None = None
    source_file: str = ""

    @property
    def layers(self) -> int:
        return sum(g.layers for g in self.layer_groups)

    @property
    def is_moe(self) -> bool:
        return any(g.ffn.is_moe for g in self.layer_groups)

    def with_precision(
        self, weight_bits=None, activation_bits=None, kv_cache_bits=None
    ) -> Architecture:
        """The same architecture with some precisions replaced (None keeps the current one)."""
        p = self.precision
        new = Precision(
            p.weight_bits if weight_bits is None else weight_bits,
            p.activation_bits if activation_bits is None else activation_bits,
            p.kv_cache_bits if kv_cache_bits is None else kv_cache_bits,
        )
        return dataclasses.replace(self, precision=new)


# --- YAML -------------------------------------------------------------------------------------


def _attention(r: Reader, d_model: int) -> Attention:
    kind = r.string("kind", "gqa", choices=("gqa", "mha", "mqa", "mla"))
    heads = r.number("query_heads", minimum=1, integer=True)
    head_dim = r.number("head_dim", 0, minimum=1, integer=True) or d_model // heads
    if kind == "mla":
        att = Attention(
            kind="mla",
            query_heads=heads,
            kv_heads=r.number("kv_heads", heads, minimum=1, integer=True),
            head_dim=head_dim,
            kv_lora_rank=r.number("kv_lora_rank", minimum=1, integer=True),
            q_lora_rank=r.number("q_lora_rank", 0, minimum=0, integer=True),
            rope_head_dim=r.number("rope_head_dim", 0, minimum=0, integer=True),
            value_head_dim=r.number("value_head_dim", 0, minimum=0, integer=True),
        )
    else:
        default_kv = {"mha": heads, "mqa": 1}.get(kind)
        kv = r.number(
            "kv_heads", default_kv if default_kv is not None else ..., minimum=1, integer=True
        )
        if heads % kv:
            raise SpecError(
                r.source,
                r.path("kv_heads"),
                f"{kv} does not divide query_heads={heads}",
                "each KV head serves a whole group of query heads",
            )
        att = Attention(kind="gqa", query_heads=heads, kv_heads=kv, head_dim=head_dim)
    r.finish()
    return att


def _ffn(r: Reader) -> FeedForward:
    if r.has("matrices"):
        m = r.raw("matrices")
        if not (
            isinstance(m, list) and len(m) == 2 and all(isinstance(x, int) and x > 0 for x in m)
        ):
            raise SpecError(
                r.source,
                r.path("matrices"),
                f"expected [in, out] counts, got {m!r}",
                "e.g. [2, 1] for SwiGLU",
            )
        m_in, m_out = m
        r.raw("activation", None)
    else:
        act = r.string("activation", "swiglu", choices=tuple(ACTIVATIONS))
        m_in, m_out = ACTIVATIONS[act]
    experts = r.number("experts", 1, minimum=1, integer=True)
    active = r.number("active_experts", 1 if experts == 1 else ..., minimum=1, integer=True)
    if active > experts:
        raise SpecError(
            r.source,
            r.path("active_experts"),
            f"{active} > experts={experts}",
            "at most the number of experts",
        )
    ffn = FeedForward(
        d_ff=r.number("d_ff", minimum=1, integer=True),
        matrices_in=m_in,
        matrices_out=m_out,
        experts=experts,
        active_experts=active,
        shared_experts=r.number("shared_experts", 0, minimum=0, integer=True),
        shared_d_ff=r.number("shared_d_ff", 0, minimum=0, integer=True),
    )
    r.finish()
    return ffn


def _precision(r: Reader | None) -> Precision:
    if r is None:
        return Precision()
    p = Precision(
        weight_bits=r.number("weight_bits", 16, minimum=1, maximum=32),
        activation_bits=r.number("activation_bits", 16, minimum=1, maximum=32),
        kv_cache_bits=r.number("kv_cache_bits", None, minimum=1, maximum=32),
    )
    r.finish()
    return p


def architecture_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Architecture:
    """Validate a parsed model YAML and build the Architecture."""
    r = Reader(data, source)
    name = r.string("name")
    d_model = r.number("d_model", minimum=1, integer=True)
    attention = _attention(r.sub("attention"), d_model)
    groups: list[LayerGroup] = []
    if r.has("layer_groups"):
        raw = r.raw("layer_groups")
        if not isinstance(raw, list) or not raw:
            raise SpecError(source, "layer_groups", "expected a non-empty list of groups", "")
        for i, item in enumerate(raw):
            g = Reader(item, source, f"layer_groups[{i}]")
            window = g.number("sliding_window_tokens", None, minimum=1, integer=True)
            groups.append(
                LayerGroup(
                    name=g.string("name", f"group{i}"),
                    layers=g.number("layers", minimum=1, integer=True),
                    ffn=_ffn(g.sub("ffn")),
                    sliding_window_tokens=window,
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
                layers=r.number("layers", minimum=1, integer=True),
                ffn=_ffn(r.sub("ffn")),
                sliding_window_tokens=r.number(
                    "sliding_window_tokens", None, minimum=1, integer=True
                ),
            )
        )
    published = r.sub("published_params", None)
    total = active = None
    if published is not None:
        total = published.number("total", None, minimum=0, exclusive_minimum=True)
        active = published.number("active", None, minimum=0, exclusive_minimum=True)
        published.string("source", "")
        published.finish()
    aliases = r.raw("aliases", ())
    arch = Architecture(
        name=name,
        d_model=d_model,
        vocab_size=r.number("vocab_size", minimum=1, integer=True),
        attention=attention,
        layer_groups=tuple(groups),
        precision=_precision(r.sub("precision", None)),
        tied_embeddings=r.boolean("tied_embeddings", False),
        parallel_attention=r.boolean("parallel_attention", False),
        description=r.string("description", ""),
        aliases=tuple(str(a) for a in ([aliases] if isinstance(aliases, str) else aliases)),
        source=r.string("source", ""),
        published_total_params=total,
        published_active_params=active,
        source_file=source,
    )
    r.finish()
    return arch


@lru_cache(maxsize=256)
def _load_path(path: Path) -> Architecture:
    return architecture_from_dict(load_yaml(path), str(path))


def load_model(name_or_path: str | Path) -> Architecture:
    """Load a model architecture by name, alias (case-insensitive) or path to a YAML file."""
    if isinstance(name_or_path, Architecture):
        return name_or_path
    return _load_path(catalog.find("models", name_or_path).resolve())
