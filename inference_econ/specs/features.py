"""The model classes an engine profile states its layouts for, and the layout features beyond
1-D tensor parallelism (docs/model.md §F11), in plain Python so that the roofline model reads
them without loading the engine-profile module (``specs/engine.py``: a frontier
under an ideal preset loads no engine profile).
"""

from __future__ import annotations

from typing import Literal, get_args

#: Model classes an engine's layouts are stated for.
ModelClass = Literal["dense", "moe", "mla"]
MODEL_CLASSES: tuple[ModelClass, ...] = get_args(ModelClass)
#: Layout features beyond 1-D tensor parallelism: pipeline stages, expert parallelism,
#: data-parallel attention inside an instance (over any divisor of the tensor group:
#: "attention_data"; over the whole group or none, every GPU attending alone, as TensorRT-LLM's
#: enable_attention_dp runs it: "attention_data_whole"), 2-D tensor parallelism. One more is
#: a condition, not a layout: "attention_data_expert", data-parallel attention only where the
#: routed experts split evenly over the whole tensor group (vLLM, whose attention data
#: parallelism needs expert-parallel MoE layers and whose --enable-expert-parallel spans every
#: GPU of the group).
LAYOUT_FEATURES = ("pipeline", "expert", "attention_data", "attention_data_whole", "tensor_2d")
CONDITIONS = ("attention_data_expert",)
#: The features under which attention runs over fewer GPUs than the tensor group: data-parallel
#: attention ranks (docs/model-part-f.md §F11).
ATTENTION_DP_FEATURES = ("attention_data", "attention_data_whole")
#: Engines that can hold their attention-DP ranks' prompts back until every rank has one, so
#: that the ranks prefill together: TensorRT-LLM (``attention_dp_config``'s
#: ``enable_balance``; py_executor ``_balance_adp_requests``; docs/model-part-f.md §F9).
ADP_BALANCING_ENGINES = ("trtllm",)
