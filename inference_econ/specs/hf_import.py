"""Import a Hugging Face ``config.json`` (a local file) into a model YAML.

Supported: Llama / Mistral / Qwen2-3 dense, Mixtral, Qwen-MoE (with a shared expert),
DeepSeek-V2/V3 (MLA, shared experts, first dense layers), gpt-oss (alternating sliding and
full attention), sliding windows and tied embeddings. An architecture it cannot map fails with
the list of fields it did not understand, instead of producing a wrong model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError
from .architecture import Architecture, architecture_from_dict

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
    "max_position_embeddings",
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
}

MLP = "swiglu"
MLA_TYPES = ("deepseek_v2", "deepseek_v3", "kimi_k2")
MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss")
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
)


def _need(cfg: dict, key: str, source: str) -> Any:
    if key not in cfg or cfg[key] is None:
        raise SpecError(source, key, "is missing from the config", "this architecture needs it")
    return cfg[key]


def config_to_dict(cfg: dict, source: str = "config.json", name: str | None = None) -> dict:
    """Translate a parsed config.json into the model YAML schema (a plain dict)."""
    model_type = str(cfg.get("model_type", ""))
    unknown = sorted(k for k in cfg if k not in IGNORED and not k.startswith("_"))
    if model_type not in KNOWN_TYPES:
        fields = ", ".join(unknown) or "(none)"
        raise SpecError(
            source,
            "model_type",
            f"cannot map architecture {model_type or '(missing)'!r}; unmapped fields: {fields}",
            f"supported: {', '.join(KNOWN_TYPES)}; write the model YAML by hand (docs/user-guide.md)",
        )
    if unknown:
        raise SpecError(
            source,
            unknown[0],
            f"fields the importer cannot map: {', '.join(unknown)}",
            "extend the importer or write the YAML by hand",
        )
    out: dict[str, Any] = {
        "name": name or str(cfg.get("_name_or_path") or model_type),
        "description": f"imported from {Path(source).name} ({model_type})",
        "source": str(source),
        "d_model": int(_need(cfg, "hidden_size", source)),
        "vocab_size": int(_need(cfg, "vocab_size", source)),
        "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
    }
    if model_type in MLA_TYPES:
        out.update(_mla_model(cfg, source))
    elif model_type in MOE_TYPES:
        out.update(_moe_model(cfg, source))
    else:
        out.update(_dense_model(cfg, source, model_type))
    return out


def _layers(cfg: dict, source: str) -> int:
    return int(_need(cfg, "num_hidden_layers", source))


def _gqa_attention(cfg: dict, source: str) -> dict:
    heads = int(_need(cfg, "num_attention_heads", source))
    return {
        "kind": "gqa",
        "query_heads": heads,
        "kv_heads": int(cfg.get("num_key_value_heads") or heads),
        "head_dim": int(cfg.get("head_dim") or int(_need(cfg, "hidden_size", source)) // heads),
    }


def _mla_model(cfg: dict, source: str) -> dict:
    """DeepSeek-V2/V3 and Kimi K2: MLA, shared experts, the first layers dense."""
    layers = _layers(cfg, source)
    attention = {
        "kind": "mla",
        "query_heads": int(_need(cfg, "num_attention_heads", source)),
        "head_dim": int(_need(cfg, "qk_nope_head_dim", source)),
        "kv_lora_rank": int(_need(cfg, "kv_lora_rank", source)),
        "q_lora_rank": int(cfg.get("q_lora_rank") or 0),
        "rope_head_dim": int(_need(cfg, "qk_rope_head_dim", source)),
        "value_head_dim": int(_need(cfg, "v_head_dim", source)),
    }
    dense_layers = int(cfg.get("first_k_dense_replace", 0))
    moe = {
        "d_ff": int(_need(cfg, "moe_intermediate_size", source)),
        "activation": MLP,
        "experts": int(_need(cfg, "n_routed_experts", source)),
        "active_experts": int(_need(cfg, "num_experts_per_tok", source)),
        "shared_experts": int(cfg.get("n_shared_experts") or 0),
    }
    groups = []
    if dense_layers:
        dense = {"d_ff": int(_need(cfg, "intermediate_size", source)), "activation": MLP}
        groups.append({"name": "dense", "layers": dense_layers, "ffn": dense})
    groups.append({"name": "moe", "layers": layers - dense_layers, "ffn": moe})
    return {"attention": attention, "layer_groups": groups}


def _moe_model(cfg: dict, source: str) -> dict:
    """Mixtral, Qwen-MoE and gpt-oss: routed experts, optionally a shared expert, dense-only
    layers and alternating sliding/full attention."""
    layers = _layers(cfg, source)
    experts = int(cfg.get("num_local_experts") or _need(cfg, "num_experts", source))
    ffn = {
        "d_ff": int(cfg.get("moe_intermediate_size") or _need(cfg, "intermediate_size", source)),
        "activation": MLP,
        "experts": experts,
        "active_experts": int(
            cfg.get("num_experts_per_tok") or _need(cfg, "experts_per_token", source)
        ),
    }
    if cfg.get("shared_expert_intermediate_size"):
        ffn["shared_experts"] = 1
        ffn["shared_d_ff"] = int(cfg["shared_expert_intermediate_size"])
    sparse_step = int(cfg.get("decoder_sparse_step") or 1)
    dense_only = set(cfg.get("mlp_only_layers") or [])
    moe_layers = [i for i in range(layers) if i not in dense_only and (i + 1) % sparse_step == 0]
    kinds = list(cfg.get("layer_types") or [])
    window = cfg.get("sliding_window")
    out: dict[str, Any] = {"attention": _gqa_attention(cfg, source)}
    if kinds and window:
        sliding = sum(1 for k in kinds if k == "sliding_attention")
        out["layer_groups"] = [
            {
                "name": "sliding",
                "layers": sliding,
                "ffn": ffn,
                "sliding_window_tokens": int(window),
            },
            {"name": "full", "layers": layers - sliding, "ffn": ffn},
        ]
    elif len(moe_layers) == layers:
        out["layers"] = layers
        out["ffn"] = ffn
    else:
        dense = {"d_ff": int(_need(cfg, "intermediate_size", source)), "activation": MLP}
        out["layer_groups"] = [
            {"name": "dense", "layers": layers - len(moe_layers), "ffn": dense},
            {"name": "moe", "layers": len(moe_layers), "ffn": ffn},
        ]
    return out


def _dense_model(cfg: dict, source: str, model_type: str) -> dict:
    """Llama, Mistral and Qwen dense models (Mistral with its sliding window)."""
    out: dict[str, Any] = {
        "attention": _gqa_attention(cfg, source),
        "layers": _layers(cfg, source),
        "ffn": {"d_ff": int(_need(cfg, "intermediate_size", source)), "activation": MLP},
    }
    window = cfg.get("sliding_window")
    if window and cfg.get("use_sliding_window", True) and model_type == "mistral":
        out["sliding_window_tokens"] = int(window)
    return out


def import_config(path: str | Path, name: str | None = None) -> tuple[Architecture, str]:
    """Read a config.json; return the validated Architecture and its YAML text."""
    path = Path(path)
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(str(path), "", f"cannot read the file: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise SpecError(str(path), "", f"not valid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(cfg, dict):
        raise SpecError(str(path), "", "expected a JSON object")
    data = config_to_dict(cfg, str(path), name)
    arch = architecture_from_dict(data, str(path))
    text = f"# Imported from {path.name} by 'inference-econ import-hf'. Check the figures against the model card.\n"
    text += yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
    return arch, text
