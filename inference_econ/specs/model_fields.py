"""The fields a model YAML file may hold, mapping by mapping (``specs/architecture.py`` reads
them): a key that is none of them is refused as an unknown field, with a "did you mean", before
a required field is asked for, so ``d_modell`` is named as the misspelling it is rather than
reported as ``d_model`` missing. A field read by the model's reader belongs here too; loading
every shipped model checks that none is left out."""

from __future__ import annotations

#: A model file's top level.
MODEL = (
    "name", "aliases", "description", "source", "hf_repository", "d_model", "vocab_size",
    "max_context_tokens", "layers", "layer_groups", "attention", "ffn", "precision",
    "tied_embeddings", "parallel_attention", "published_params", "sliding_window_tokens", "mtp",
    "expert_routing", "released_format_only",
)  # fmt: skip
#: ``attention`` (MLA's ranks and head sizes among them).
ATTENTION = (
    "kind", "query_heads", "head_dim", "kv_heads", "kv_lora_rank", "q_lora_rank",
    "rope_head_dim", "value_head_dim", "output_gate",
)  # fmt: skip
#: ``ffn``, at the top level or in a layer group.
FFN = (
    "matrices", "activation", "experts", "active_experts", "d_ff", "shared_experts",
    "shared_d_ff", "expert_groups", "groups_per_token",
)  # fmt: skip
#: One entry of ``layer_groups``.
LAYER_GROUP = ("name", "layers", "ffn", "sliding_window_tokens", "mixer")
#: A layer group's recurrent ``mixer`` (Mamba's fields and the linear-attention kinds').
MIXER = (
    "kind", "state_bits", "expand", "inner", "conv_kernel", "state_dim", "dt_rank", "key_heads",
    "value_heads", "key_head_dim", "value_head_dim",
)  # fmt: skip
#: ``mtp``: multi-token prediction modules.
MTP = ("modules", "layer_group", "projection_params")
#: ``expert_routing``.
EXPERT_ROUTING = ("distribution", "source")
