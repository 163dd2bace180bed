"""Import a Hugging Face ``config.json`` (a local file or a Hub repository) into a model YAML.

Supported: Llama / Mistral / Qwen2-3 dense, Mixtral, Qwen-MoE (with a shared expert),
DeepSeek-V2/V3 (MLA, shared experts, first dense layers), gpt-oss (alternating sliding and
full attention), Llama 4 and Gemma 2/3 (multimodal configs nest the text model under
``text_config``), GLM-4.5/4.6 (GQA, first dense layers, shared experts), Qwen3-Next (Gated
DeltaNet and gated attention layers), sliding windows and tied embeddings. The weight precision comes from
``quantization_config`` (or a ModelOpt ``hf_quant_config.json``), the name from the repository
or ``_name_or_path``. An architecture it cannot map fails with the list of fields it did not
understand, and a field that is not a usable number fails with its name, instead of producing a
wrong model. Repositories are read with ``huggingface_hub`` (``pip install
"inference-econ[hub]"``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError, control_character, short
from .architecture import EXPERT_ROUTINGS, REPO_ID, Architecture, architecture_from_dict
from .hf_quant import precision_of
from .inputs import read_json
from .schema import check_number

#: Fields every importer understands or deliberately ignores (they do not affect the cost).
IGNORED = {
    "architectures",
    "model_type",
    "torch_dtype",
    "dtype",
    "transformers_version",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "rms_norm_eps",
    "layer_norm_eps",
    "rope_theta",
    "rope_scaling",
    "max_position_embeddings",  # read as max_context_tokens
    "initializer_range",
    "use_cache",
    "attention_bias",
    "attention_dropout",
    "mlp_bias",
    "pretraining_tp",
    "auto_map",
    "quantization_config",
    "_name_or_path",
    "hidden_act",
    "router_aux_loss_coef",
    "output_router_logits",
    "norm_topk_prob",
    "use_sliding_window",
    "max_window_layers",
    "qkv_bias",
    "use_qk_norm",
    "n_group",
    "topk_group",
    "topk_method",
    "scoring_func",
    "routed_scaling_factor",
    "aux_loss_alpha",
    "seq_aux",
    "ep_size",
    "moe_layer_freq",
    "num_nextn_predict_layers",
    "ephemeral_config",
    "swiglu_limit",
    "experts_per_token",
    "router_jitter_noise",
    "partial_rotary_factor",
    "first_k_dense_replace",
    "shared_expert_intermediate_size",
    "decoder_sparse_step",
    "mlp_only_layers",
    "layer_types",
    "sliding_window",
    "head_dim",
    "tie_word_embeddings",
    "num_key_value_heads",
    "num_experts",
    "num_experts_per_tok",
    "num_local_experts",
    "moe_intermediate_size",
    "n_routed_experts",
    "n_shared_experts",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "vocab_size",
    "attn_implementation",
    "bias",
    "interleave_moe_layer_step",
    "intermediate_size_mlp",
    "no_rope_layers",
    "attention_chunk_size",
    "use_bias",
    "initial_context_length",
    "rope_interleave",
    "moe_aux_loss_coeff",
    # Llama 4 and Gemma 2/3 fields that do not change the cost
    "attn_temperature_tuning",
    "floor_scale",
    "attn_scale",
    "for_llm_compressor",
    "moe_layers",
    "hidden_activation",
    "query_pre_attn_scalar",
    "final_logit_softcapping",
    "attn_logit_softcapping",
    "sliding_window_pattern",
    "rope_local_base_freq",
    "cache_implementation",
}

MLP = "swiglu"
MLA_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2")
MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss")
GEMMA_TYPES = ("gemma2", "gemma3_text")
#: What transformers' config class of a type takes for a field its config.json leaves out
#: (transformers writes only the values that differ from them): Gemma 3's text model,
#: ``Gemma3TextConfig`` (huggingface/transformers,
#: src/transformers/models/gemma3/configuration_gemma3.py): a 262,208-token vocabulary, one
#: global layer in every 6, a 4,096-token window, 8 query and 4 KV heads of 256, 131,072
#: positions. The Hub's Gemma 3 configs state neither their vocabulary nor their pattern, the
#: 12B's no head size (its 3,840-wide model has 16 heads of 256, not 240) and the 4B's no
#: head counts.
TRANSFORMERS_DEFAULTS = {
    "gemma3_text": {
        "vocab_size": 262_208,
        "sliding_window_pattern": 6,
        "sliding_window": 4096,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131_072,
    },
}
KNOWN_TYPES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "gpt_oss",
    "llama4_text",
    *GEMMA_TYPES,
    "glm4_moe",
    "qwen3_next",
)
#: Fields only a type's importer reads (a config of another type that has them fails as unmapped).
TYPE_FIELDS = {
    "qwen3_next": {
        "full_attention_interval",
        "linear_conv_kernel_dim",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_num_key_heads",
        "linear_num_value_heads",
    },
}


def _need(cfg: dict, key: str, source: str) -> Any:
    if key not in cfg or cfg[key] is None:
        raise SpecError(source, key, "is missing from the config", "this architecture needs it")
    return cfg[key]


def _int(cfg: dict, key: str, source: str, default: Any = ..., minimum: int = 1) -> int:
    """A whole-number field, checked: text, NaN, fractions and values below ``minimum`` (0
    attention heads, say) are errors naming the field."""
    if default is not ... and (key not in cfg or cfg[key] is None):
        return default
    return int(check_number(_need(cfg, key, source), source, key, minimum=minimum, integer=True))


def text_model_config(cfg: dict) -> dict:
    """The text model of a config: multimodal configs (Llama 4, Gemma 3) nest it under
    ``text_config``; the outer quantization and name apply to it."""
    inner = cfg.get("text_config")
    if not isinstance(inner, dict):
        return cfg
    out = dict(inner)
    for key in ("quantization_config", "_name_or_path", "torch_dtype", "tie_word_embeddings"):
        if key in cfg and key not in out:
            out[key] = cfg[key]
    return out


def config_to_dict(
    cfg: dict, source: str = "config.json", name: str | None = None, quant: dict | None = None
) -> dict:
    """Translate a parsed config.json into the model YAML schema (a plain dict).

    ``quant`` is a ModelOpt ``hf_quant_config.json`` if the repository has one.
    """
    nested = isinstance(cfg.get("text_config"), dict)
    cfg = text_model_config(cfg)
    model_type = str(cfg.get("model_type", ""))
    cfg = {**TRANSFORMERS_DEFAULTS.get(model_type, {}), **cfg}
    understood = IGNORED | TYPE_FIELDS.get(model_type, set())
    unknown = sorted(k for k in cfg if k not in understood and not k.startswith("_"))
    if model_type not in KNOWN_TYPES:
        fields = f"; unmapped fields: {', '.join(unknown)}" if unknown else ""
        raise SpecError(
            source,
            "model_type",
            f"cannot map architecture {model_type or '(missing)'!r}{fields}",
            f"supported: {', '.join(KNOWN_TYPES)}; write the model YAML by hand (docs/user-guide.md)",
        )
    if unknown:
        raise SpecError(
            source,
            unknown[0],
            f"fields the importer cannot map: {', '.join(unknown)}",
            "extend the importer or write the YAML by hand",
        )
    text_only = ", text model only (the vision encoder is not modelled)" if nested else ""
    tied_default = model_type in GEMMA_TYPES
    out: dict[str, Any] = {
        "name": name or model_name(cfg, source),
        "description": f"imported from {source} ({model_type}{text_only})",
        "source": str(source),
        "d_model": _int(cfg, "hidden_size", source),
        "vocab_size": _int(cfg, "vocab_size", source),
        "tied_embeddings": bool(cfg.get("tie_word_embeddings", tied_default)),
    }
    if model_type in MLA_TYPES:
        out.update(_mla_model(cfg, source))
    elif model_type in MOE_TYPES:
        out.update(_moe_model(cfg, source))
    elif model_type == "llama4_text":
        out.update(_llama4_model(cfg, source))
    elif model_type in GEMMA_TYPES:
        out.update(_gemma_model(cfg, source))
    elif model_type == "glm4_moe":
        out.update(_glm4_moe_model(cfg, source))
    elif model_type == "qwen3_next":
        out.update(_qwen3_next_model(cfg, source))
    else:
        out.update(_dense_model(cfg, source, model_type))
    window = cfg.get("max_position_embeddings")
    if window is not None:  # the longest context trained for: longer ones get a warning
        out["max_context_tokens"] = _int(cfg, "max_position_embeddings", source)
    out["precision"] = precision_of(cfg, quant, source)
    return out


def model_name(cfg: dict, source: str) -> str:
    """A model's name: the last part of ``_name_or_path`` (the repository it was saved from),
    else the folder holding the config - never the architecture type ("llama")."""
    named = str(cfg.get("_name_or_path") or "").rstrip("/")
    bad = control_character(named)
    if bad is not None:
        raise SpecError(
            source,
            "_name_or_path",
            f"holds the control character {bad}",
            "write the repository's name on one line (org/model), or leave the field out",
        )
    if named:
        return named.split("/")[-1]
    folder = Path(source).resolve().parent.name
    return folder or Path(source).stem


def _layers(cfg: dict, source: str) -> int:
    return _int(cfg, "num_hidden_layers", source)


def _gqa_attention(cfg: dict, source: str) -> dict:
    heads = _int(cfg, "num_attention_heads", source)
    hidden = _int(cfg, "hidden_size", source)
    if cfg.get("head_dim") is None and hidden % heads:
        raise SpecError(
            source,
            "num_attention_heads",
            f"{heads} heads do not divide hidden_size {hidden} (no head_dim given)",
            "give the model's head_dim, or check num_attention_heads",
        )
    return {
        "kind": "gqa",
        "query_heads": heads,
        "kv_heads": _int(cfg, "num_key_value_heads", source, heads),
        "head_dim": _int(cfg, "head_dim", source, hidden // heads),
    }


#: The attention kinds a config's ``layer_types`` may name, one per layer.
LAYER_KINDS = ("sliding_attention", "full_attention")


def _layer_kinds(cfg: dict, source: str, layers: int) -> list[str]:
    """``layer_types``: one of ``LAYER_KINDS`` for each of the ``layers`` layers, or [] when
    the config gives none; a list of another length or with other entries is the config's
    error (it had been read as so many sliding layers and the rest full)."""
    kinds = cfg.get("layer_types")
    if kinds is None or kinds == []:
        return []
    return _checked_kinds(kinds, LAYER_KINDS, source, layers)


def _checked_kinds(kinds, allowed: tuple, source: str, layers: int) -> list[str]:
    """``layer_types`` as given: a list of ``allowed`` kinds, one per layer, or the config's
    error naming the field."""
    if not isinstance(kinds, list) or any(k not in allowed for k in kinds):
        raise SpecError(
            source,
            "layer_types",
            f"expected a list of {' or '.join(allowed)}, got {short(kinds)}",
            "give one entry per layer",
        )
    if len(kinds) != layers:
        raise SpecError(
            source,
            "layer_types",
            f"has {len(kinds)} entries for {layers} layers (num_hidden_layers)",
            "give one entry per layer",
        )
    return kinds


def _layer_indices(cfg: dict, key: str, source: str, layers: int) -> set[int]:
    """A list of layer indices (``mlp_only_layers``): whole numbers from 0 to layers - 1."""
    value = cfg.get(key)
    if value is None or value == []:
        return set()
    ok = isinstance(value, list) and all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in value
    )
    if not ok:
        raise SpecError(
            source,
            key,
            f"expected layer indices from 0 to {layers - 1}, got {short(value)}",
            "give the indices of the layers it names",
        )
    return set(value)


def _mla_model(cfg: dict, source: str) -> dict:
    """DeepSeek-V2/V3 and Kimi K2: MLA, shared experts, the first layers dense."""
    layers = _layers(cfg, source)
    attention = {
        "kind": "mla",
        "query_heads": _int(cfg, "num_attention_heads", source),
        "head_dim": _int(cfg, "qk_nope_head_dim", source),
        "kv_lora_rank": _int(cfg, "kv_lora_rank", source),
        "q_lora_rank": _int(cfg, "q_lora_rank", source, 0, minimum=0),
        "rope_head_dim": _int(cfg, "qk_rope_head_dim", source, minimum=0),
        "value_head_dim": _int(cfg, "v_head_dim", source),
    }
    moe = {
        "d_ff": _int(cfg, "moe_intermediate_size", source),
        "activation": MLP,
        "experts": _int(cfg, "n_routed_experts", source),
        "active_experts": _int(cfg, "num_experts_per_tok", source),
        "shared_experts": _int(cfg, "n_shared_experts", source, 0, minimum=0),
        **_group_limited_routing(cfg, source),
    }
    return {"attention": attention, **_dense_then_moe(cfg, source, layers, moe)}


def _dense_then_moe(cfg: dict, source: str, layers: int, moe: dict) -> dict:
    """The ``first_k_dense_replace`` dense layers, then MoE layers of ``moe``, and the
    multi-token prediction modules (``num_nextn_predict_layers``) shaped like the MoE layers
    (§C3): DeepSeek-V2/V3, Kimi K2 and GLM-4.5."""
    dense_layers = _int(cfg, "first_k_dense_replace", source, 0, minimum=0)
    if dense_layers >= layers:
        raise SpecError(
            source,
            "first_k_dense_replace",
            f"is {dense_layers}, not below num_hidden_layers {layers}",
            "give the number of dense layers before the MoE ones",
        )
    groups = []
    if dense_layers:
        dense = {"d_ff": _int(cfg, "intermediate_size", source), "activation": MLP}
        groups.append({"name": "dense", "layers": dense_layers, "ffn": dense})
    groups.append({"name": "moe", "layers": layers - dense_layers, "ffn": moe})
    out: dict[str, Any] = {"layer_groups": groups}
    modules = _int(cfg, "num_nextn_predict_layers", source, 0, minimum=0)
    if modules:
        out["mtp"] = {"modules": modules, "layer_group": "moe"}
    return out


def _group_limited_routing(cfg: dict, source: str) -> dict:
    """DeepSeek's group-limited routing: the routed experts in ``n_group`` groups, a token's
    experts chosen in at most ``topk_group`` of them (DeepSeek-V3 8 and 4: node-limited
    routing, report §2.1.2) - ``expert_groups`` and ``groups_per_token``. One group, or
    DeepSeek-V2's plain ``"greedy"`` top-k, limits nothing and writes neither."""
    groups = _int(cfg, "n_group", source, 1)
    if groups == 1 or str(cfg.get("topk_method") or "") == "greedy":
        return {}
    return {"expert_groups": groups, "groups_per_token": _int(cfg, "topk_group", source)}


def _moe_model(cfg: dict, source: str) -> dict:
    """Mixtral, Qwen-MoE and gpt-oss: routed experts, optionally a shared expert, dense-only
    layers and alternating sliding/full attention."""
    layers = _layers(cfg, source)
    ffn = _routed_ffn(cfg, source)
    moe_layers = _moe_layer_indices(cfg, source, layers)
    kinds = _layer_kinds(cfg, source, layers)
    window = cfg.get("sliding_window")
    out: dict[str, Any] = {"attention": _gqa_attention(cfg, source)}
    if kinds and window:
        sliding = sum(1 for k in kinds if k == "sliding_attention")
        groups = [
            {
                "name": "sliding",
                "layers": sliding,
                "ffn": ffn,
                "sliding_window_tokens": _int(cfg, "sliding_window", source),
            },
            {"name": "full", "layers": layers - sliding, "ffn": ffn},
        ]  # a kind no layer has is no group (every layer full: the window is unused)
        out["layer_groups"] = [g for g in groups if g["layers"]]
    elif len(moe_layers) == layers:
        out["layers"] = layers
        out["ffn"] = ffn
    else:
        dense = {"d_ff": _int(cfg, "intermediate_size", source), "activation": MLP}
        out["layer_groups"] = [
            {"name": "dense", "layers": layers - len(moe_layers), "ffn": dense},
            {"name": "moe", "layers": len(moe_layers), "ffn": ffn},
        ]
    return out


def _routed_ffn(cfg: dict, source: str) -> dict:
    """The MoE block of Mixtral, Qwen-MoE, gpt-oss and Qwen3-Next: routed experts and, where
    ``shared_expert_intermediate_size`` is given, one shared expert of that width."""
    experts = _int(cfg, "num_local_experts", source, None) or _int(cfg, "num_experts", source)
    ffn = {
        "d_ff": _int(cfg, "moe_intermediate_size", source, None)
        or _int(cfg, "intermediate_size", source),
        "activation": MLP,
        "experts": experts,
        "active_experts": _int(cfg, "num_experts_per_tok", source, None)
        or _int(cfg, "experts_per_token", source),
    }
    if cfg.get("shared_expert_intermediate_size"):
        ffn["shared_experts"] = 1
        ffn["shared_d_ff"] = _int(cfg, "shared_expert_intermediate_size", source)
    return ffn


def _moe_layer_indices(cfg: dict, source: str, layers: int) -> list[int]:
    """The layers with routed experts: every ``decoder_sparse_step``-th, less ``mlp_only_layers``."""
    sparse_step = _int(cfg, "decoder_sparse_step", source, 1)
    dense_only = _layer_indices(cfg, "mlp_only_layers", source, layers)
    return [i for i in range(layers) if i not in dense_only and (i + 1) % sparse_step == 0]


def _routed(cfg: dict, source: str, width: int, experts_key: str) -> dict:
    """A MoE layer's routed experts: ``experts_key`` of them of ``width``, each token taking
    ``num_experts_per_tok``."""
    return {
        "d_ff": width,
        "activation": MLP,
        "experts": _int(cfg, experts_key, source),
        "active_experts": _int(cfg, "num_experts_per_tok", source),
    }


def _glm4_moe_model(cfg: dict, source: str) -> dict:
    """GLM-4.5/4.6 (and -Air): GQA attention (its ``head_dim`` wider than hidden/heads; QKV
    bias, QK-norm and partial RoPE do not change the cost), then the DeepSeek-V3 layout: the
    first ``first_k_dense_replace`` layers dense, the rest ``n_routed_experts`` routed and
    ``n_shared_experts`` shared experts of ``moe_intermediate_size`` (transformers'
    ``Glm4MoeMoE``: one shared block that many times as wide), group-limited routing and the
    MTP layer (``num_nextn_predict_layers``)."""
    width = _int(cfg, "moe_intermediate_size", source)
    moe = _routed(cfg, source, width, "n_routed_experts")
    shared = _int(cfg, "n_shared_experts", source, 0, minimum=0)
    if shared:
        moe.update(shared_experts=shared, shared_d_ff=width)
    moe.update(_group_limited_routing(cfg, source))
    layers = _layers(cfg, source)
    return {"attention": _gqa_attention(cfg, source), **_dense_then_moe(cfg, source, layers, moe)}


#: The token mixers a Qwen3-Next config's ``layer_types`` may name, one per layer.
HYBRID_KINDS = ("linear_attention", "full_attention")


def _hybrid_kinds(cfg: dict, source: str, layers: int) -> list[str]:
    """Each layer's mixer (``HYBRID_KINDS``): ``layer_types``, else full attention on every
    ``full_attention_interval``-th layer (transformers' default 4); a list of another length
    or with other entries is the config's error."""
    kinds = cfg.get("layer_types")
    if kinds is None or kinds == []:
        interval = _int(cfg, "full_attention_interval", source, 4)
        return [HYBRID_KINDS[(i + 1) % interval == 0] for i in range(layers)]
    return _checked_kinds(kinds, HYBRID_KINDS, source, layers)


def _qwen3_next_model(cfg: dict, source: str) -> dict:
    """Qwen3-Next: Gated DeltaNet layers (``linear_*``: a fixed state, no KV cache, §C2) with a
    gated full-attention layer every ``full_attention_interval``-th (transformers'
    ``Qwen3NextConfig`` default 4; or ``layer_types``), its query projection also emitting
    the output gate; routed experts plus a shared one in every layer but ``mlp_only_layers``.
    The MTP module is imported where the config states ``num_nextn_predict_layers``."""
    layers = _layers(cfg, source)
    kinds = _hybrid_kinds(cfg, source, layers)
    mixer = {
        "kind": "gated_deltanet",
        "key_heads": _int(cfg, "linear_num_key_heads", source),
        "value_heads": _int(cfg, "linear_num_value_heads", source),
        "key_head_dim": _int(cfg, "linear_key_head_dim", source),
        "value_head_dim": _int(cfg, "linear_value_head_dim", source),
        "conv_kernel": _int(cfg, "linear_conv_kernel_dim", source),
    }
    moe_layers = set(_moe_layer_indices(cfg, source, layers))
    routed = _routed_ffn(cfg, source)
    dense = {"d_ff": _int(cfg, "intermediate_size", source), "activation": MLP}
    counts: dict[tuple[str, bool], int] = {}
    for i, kind in enumerate(kinds):
        counts[(kind, i in moe_layers)] = counts.get((kind, i in moe_layers), 0) + 1
    mixed = len({is_moe for _, is_moe in counts}) > 1
    groups = []
    for (kind, is_moe), n in sorted(
        counts.items(), key=lambda kv: (kv[0][0] != HYBRID_KINDS[0], not kv[0][1])
    ):
        name = "linear" if kind == HYBRID_KINDS[0] else "full"
        group: dict[str, Any] = {
            "name": f"{name}-{'moe' if is_moe else 'dense'}" if mixed else name,
            "layers": n,
        }
        if kind == HYBRID_KINDS[0]:
            group["mixer"] = mixer
        group["ffn"] = routed if is_moe else dense
        groups.append(group)
    out: dict[str, Any] = {
        "attention": {**_gqa_attention(cfg, source), "output_gate": True},
        "layer_groups": groups,
    }
    modules = _int(cfg, "num_nextn_predict_layers", source, 0, minimum=0)
    full = [g["name"] for g in groups if "mixer" not in g]
    if modules and full:  # a gated-attention MoE layer, as vLLM's Qwen3NextMTP builds it
        out["mtp"] = {"modules": modules, "layer_group": full[0]}
    return out


def _dense_model(cfg: dict, source: str, model_type: str) -> dict:
    """Llama, Mistral and Qwen dense models (Mistral with its sliding window)."""
    out: dict[str, Any] = {
        "attention": _gqa_attention(cfg, source),
        "layers": _layers(cfg, source),
        "ffn": {"d_ff": _int(cfg, "intermediate_size", source), "activation": MLP},
    }
    window = cfg.get("sliding_window")
    if window and cfg.get("use_sliding_window", True) and model_type == "mistral":
        out["sliding_window_tokens"] = _int(cfg, "sliding_window", source)
    return out


#: Llama 4's experts' routing (``Architecture.expert_routing``): AIConfigurator's HYBRIDMOE family,
#: read at a power law of alpha 1.01 (github.com/ai-dynamo/aiconfigurator @095f58a,
#: aic-core/src/aiconfigurator_core/sdk/common.py and sdk/models/hybrid_moe.py).
LLAMA4_ROUTING = {
    "distribution": EXPERT_ROUTINGS[1],
    "source": "AIConfigurator @095f58a: Llama 4 is its HYBRIDMOE family, alpha 1.01",
}


def _llama4_model(cfg: dict, source: str) -> dict:
    """Llama 4 text models: MoE on every ``interleave_moe_layer_step``-th layer (routed experts
    of ``intermediate_size`` plus one shared expert), dense layers of ``intermediate_size_mlp``;
    chunked attention on the RoPE layers (approximated as a window), full attention on the NoPE
    layers (every 4th); its experts' routing as AIConfigurator reads Llama 4's."""
    layers = _layers(cfg, source)
    step = _int(cfg, "interleave_moe_layer_step", source, 1)
    width = _int(cfg, "intermediate_size", source)
    moe = {**_routed(cfg, source, width, "num_local_experts"), "shared_experts": 1}
    moe["shared_d_ff"] = width
    dense = {"d_ff": _int(cfg, "intermediate_size_mlp", source, width), "activation": MLP}
    rope = cfg.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(layers)]
    if not isinstance(rope, list) or len(rope) != layers:  # one entry a layer, as layer_types
        raise SpecError(
            source,
            "no_rope_layers",
            f"has {len(rope)} entries for {layers} layers (num_hidden_layers)"
            if isinstance(rope, list)
            else f"expected a list of 0 and 1, one a layer, got {short(rope)}",
            "give one entry per layer (1: the layer uses RoPE and chunked attention)",
        )
    chunk = _int(cfg, "attention_chunk_size", source, None)
    counts: dict[tuple[bool, bool], int] = {}
    for i in range(layers):
        key = ((i + 1) % step == 0, bool(rope[i]) if i < len(rope) else True)
        counts[key] = counts.get(key, 0) + 1
    groups = []
    for (is_moe, chunked), n in sorted(counts.items()):
        group: dict[str, Any] = {
            "name": f"{'moe' if is_moe else 'dense'}-{'chunked' if chunked else 'global'}",
            "layers": n,
        }
        if chunked and chunk:
            group["sliding_window_tokens"] = chunk
        group["ffn"] = moe if is_moe else dense
        groups.append(group)
    return {
        "attention": _gqa_attention(cfg, source),
        "layer_groups": groups,
        "expert_routing": LLAMA4_ROUTING,
    }


def _gemma_model(cfg: dict, source: str) -> dict:
    """Gemma 2 and 3 text models: GeGLU, local sliding-window layers interleaved with global
    ones (``layer_types``, else every ``sliding_window_pattern``-th layer global: Gemma 3's
    default 6, ``TRANSFORMERS_DEFAULTS``; Gemma 2 alternates)."""
    layers = _layers(cfg, source)
    kinds = _layer_kinds(cfg, source, layers)
    if not kinds:
        pattern = _int(cfg, "sliding_window_pattern", source, 2)
        kinds = [
            "full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
            for i in range(layers)
        ]
    local = sum(1 for k in kinds if k == "sliding_attention")
    ffn = {"d_ff": _int(cfg, "intermediate_size", source), "activation": "geglu"}
    groups = [{"name": "global", "layers": layers - local, "ffn": ffn}] if local < layers else []
    if local:
        window = _int(cfg, "sliding_window", source)
        groups.insert(
            0, {"name": "local", "layers": local, "sliding_window_tokens": window, "ffn": ffn}
        )
    return {"attention": _gqa_attention(cfg, source), "layer_groups": groups}


def _read_json(path: Path, required: bool = True) -> dict | None:
    """A config file through the input boundary (a regular file, at most 64 MB, UTF-8 JSON);
    None for an optional file that is not there."""
    if not required and not os.path.lexists(path):
        return None
    cfg = read_json(path)
    if not isinstance(cfg, dict):
        raise SpecError(str(path), "", f"expected a JSON object, got {short(cfg)}")
    return cfg


class _Unaliased(yaml.SafeDumper):
    """Writes a mapping shared by several groups (gpt-oss's, Gemma's and Llama 4's ``ffn``) in
    full under each, never as a YAML anchor and aliases (``&id001`` ... ``*id001``), where
    editing the first group's would silently change the others'."""

    def ignore_aliases(self, data) -> bool:
        return True


def _finish(data: dict, source: str, label: str) -> tuple[Architecture, str]:
    arch = architecture_from_dict(data, source)
    text = f"# Imported from {label} by 'inference-econ import-hf'. Check the figures against the model card.\n"
    text += yaml.dump(data, Dumper=_Unaliased, sort_keys=False, default_flow_style=None)
    return arch, text


def import_config(path, name: str | None = None) -> tuple[Architecture, str]:
    """Read a config.json (or a folder holding one, with its ``hf_quant_config.json`` if
    any), or take a config already parsed (a mapping); return the validated Architecture
    and its YAML text."""
    if name is not None and not isinstance(name, str):
        raise SpecError("argument", "name", f"expected text, got {short(name)}", "write a string")
    if isinstance(path, dict):
        data = config_to_dict(path, "argument", name)
        return _finish(data, "argument", "a parsed config")
    if not isinstance(path, (str, os.PathLike)):
        raise SpecError(
            "argument",
            "path",
            f"expected the path of a config.json (or its folder) or a parsed config, got "
            f"{short(path)}",
            "give a path or a dict",
        )
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
    cfg = _read_json(path)
    quant = _read_json(path.with_name("hf_quant_config.json"), required=False)
    data = config_to_dict(cfg, str(path), name, quant)
    return _finish(data, str(path), path.name)


#: A Hub repository id: "org/name" (letters, digits, '-', '_', '.').


def import_repo(
    repo_id: str, name: str | None = None, revision: str | None = None
) -> tuple[Architecture, str]:
    """Read ``config.json`` (and ``hf_quant_config.json`` if present) of a Hugging Face Hub
    repository; the model is named after the repository, which is also an alias."""
    if not REPO_ID.match(str(repo_id)):
        raise SpecError(
            "argument",
            "repo",
            f"{repo_id!r} is not a Hub repository id",
            "write org/name (e.g. deepseek-ai/DeepSeek-V3) or give a local config.json",
        )
    cfg = _read_json(Path(_download(repo_id, "config.json", revision, required=True)))
    quant_path = _download(repo_id, "hf_quant_config.json", revision, required=False)
    quant = _read_json(Path(quant_path)) if quant_path else None
    label = f"{repo_id}@{revision}" if revision else repo_id
    data = config_to_dict(cfg, label, name or repo_id.split("/")[-1], quant)
    data["aliases"] = [repo_id]
    data["hf_repository"] = repo_id
    data["source"] = f"Hugging Face Hub {label} config.json"
    return _finish(data, label, label)


def _download(repo_id: str, filename: str, revision: str | None, required: bool) -> str | None:
    """A file of a Hub repository, through huggingface_hub's cache; None when an optional
    file is absent. Any failure is one SpecError naming the repository and the file."""
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise SpecError(
            "argument",
            "repo",
            "reading a Hub repository needs the huggingface_hub package",
            'pip install "inference-econ[hub]", or download config.json and give its path',
        ) from None
    try:
        return hf_hub_download(repo_id, filename, revision=revision)
    except Exception as exc:  # the hub's errors do not share a base class across versions
        kind = type(exc).__name__
        if not required and "EntryNotFound" in kind:
            return None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise SpecError(
            repo_id,
            filename,
            f"cannot download it ({kind}{': ' + first if first else ''})",
            "check the repository name and revision, log in (HF_TOKEN) for a gated model, "
            "or give a local config.json",
        ) from None
