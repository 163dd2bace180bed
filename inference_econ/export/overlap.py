"""Two-batch overlap (``--two-batch-overlap``, docs/model-part-f.md §F7) as each engine's export
launches it: two micro-batches a step over DeepEP's token exchange (``sglang_arguments``;
``vllm_arguments`` and the worker's ``vllm_environment``), or a refusal naming why that engine
version would not run it as the plan priced it (``overlap_launches``). ``plan`` is an
``export.launch.LaunchPlan``; ``names`` its engine's section of launch_flags.yaml.

What each engine version runs, from its source:

* SGLang 0.5.3: ``--enable-two-batch-overlap`` with ``--moe-a2a-backend deepep``. DeepEP sets
  the expert-parallel size to the tensor-parallel size (``_handle_deepep_moe``,
  sglang/srt/server_args.py) and, without attention data parallelism, still gathers each
  step's micro-batch split over the tensor group (``require_attn_tp_gather``,
  sglang/srt/utils/common.py), so no ``--enable-dp-attention`` is needed; ``--deepep-mode``
  stays ``auto`` (low-latency kernels for decode batches, normal ones for prompts, which the
  split needs: ``TboDPAttentionPreparer``, sglang/srt/two_batch_overlap.py).
* vLLM 0.11.0: ``--enable-dbo`` with ``VLLM_ALL2ALL_BACKEND`` deepep_low_latency or
  deepep_high_throughput (asserted by VllmConfig, vllm/config/__init__.py).
* TensorRT-LLM 1.2.1: none (no TorchLlmArgs field or trtllm-serve option splits a step in
  two micro-batches, tensorrt_llm/llmapi/llm_args.py, tensorrt_llm/commands/serve.py).
"""

from __future__ import annotations

from ..errors import SpecError
from ..model.overlap import FLAG, MIN_TOKENS
from ..serving.support import generation
from .eplb import architecture

#: The engines an export launches two-batch overlap on (the families ``model.overlap`` prices).
ENGINES = tuple(MIN_TOKENS)

#: The architectures SGLang 0.5.3 runs in two micro-batches: a model's forward splits a batch
#: through ``model_forward_maybe_tbo``, whose ``OperationsStrategy.init_new_tbo`` takes a
#: DeepseekV2DecoderLayer or a Qwen3MoeDecoderLayer only, by class name, and raises
#: NotImplementedError for any other (sglang/srt/operations_strategy.py): DeepSeek-V2/V3
#: (deepseek_v2.py; Kimi K2 is DeepseekV3ForCausalLM) and Qwen3 MoE (qwen3_moe.py). GLM-4.5's
#: Glm4MoeDecoderLayer (glm4_moe.py) and Qwen2-MoE's Qwen2MoeDecoderLayer (qwen2_moe.py) reach
#: that call and are refused there.
SGLANG_SPLITS = frozenset({"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM"})

#: GPU generations below Hopper: SGLang 0.5.3's DeepEP MoE layer asserts DeepGEMM
#: (``DeepEPMoE``, sglang/srt/layers/moe/ep_moe/layer.py), which it enables on SM 90 and later
#: only (sglang/srt/layers/quantization/deep_gemm_wrapper/configurer.py).
BEFORE_DEEPGEMM = ("Volta", "Ampere", "Turing", "Ada")

#: vLLM's DeepEP kernels by worker role: low-latency ones for decode steps (a decode worker,
#: or one serving prompts and decodes together), high-throughput ones for a prefill worker
#: (under which vLLM turns CUDA graphs off with data parallelism, vllm/platforms/cuda.py).
VLLM_KERNELS = {"server": "low_latency", "decode": "low_latency", "prefill": "high_throughput"}


def overlapped(plan) -> bool:
    """Whether the plan was priced with two micro-batches a step."""
    return bool(plan.setting.assumptions.two_batch_overlap)


def sglang_arguments(plan, names: dict) -> list[str]:
    """SGLang's two-batch overlap over DeepEP (none without it)."""
    if not overlapped(plan):
        return []
    f = names["flags"]
    return [f["tbo_switch"], f["moe_a2a_backend"], names["moe_a2a_backend"]]


def vllm_arguments(plan, names: dict) -> list[str]:
    """vLLM's dual batch overlap (none without it)."""
    return [names["flags"]["dbo_switch"]] if overlapped(plan) else []


def vllm_environment(plan, role: str, names: dict) -> tuple[tuple[str, str], ...]:
    """The environment that selects a vLLM worker's DeepEP kernels (none without overlap)."""
    if not overlapped(plan):
        return ()
    backend = names["all2all_backend"][VLLM_KERNELS[role]]
    return ((names["environment"]["all2all"], backend),)


def _refuse(problem: str, fix: str):
    raise SpecError("argument", FLAG, problem, fix)


def overlap_launches(plan, names: dict) -> tuple[str, ...]:
    """Refuse two-batch overlap the plan's engine version would not run as the plan priced
    it: an engine without it, or other than the one whose schedule priced it; under SGLang, a
    model whose layers it does not split, experts other than FP8 (DeepEP's MoE layer asserts
    FP8 weights and DeepGEMM) or a part before Hopper; a worker without expert parallelism
    (DeepEP exchanges tokens between expert-parallel ranks), under SGLang one whose
    expert-parallel degree is not its tensor degree, under vLLM one without attention data
    parallelism. Returns the note saying which flags carry it; () without it."""
    if not overlapped(plan):
        return ()
    s, version = plan.setting, f"{plan.engine} {names['version']}"
    if plan.engine not in ENGINES:
        _refuse(
            f"{version} has no two-batch overlap (only SGLang's and vLLM's)",
            f"export for sglang or vllm, or drop {FLAG}",
        )
    profile = s.assumptions.profile()
    priced = getattr(profile, "family", None)
    if priced != plan.engine:
        _refuse(
            f"the plan's figures price {priced}'s two micro-batches, and the export launches "
            f"{version}, which splits steps at other sizes",
            f"plan and export under one engine (--engine {plan.engine})",
        )
    if plan.engine == "sglang":
        _sglang_limits(plan, version)
    for w in plan.workers:
        _worker_launches(plan, w, version)
    return (_note(plan, names, version),)


def _sglang_limits(plan, version: str) -> None:
    """SGLang 0.5.3's own: the model's layers split (``SGLANG_SPLITS``), FP8 experts and a
    part DeepGEMM runs on (``BEFORE_DEEPGEMM``)."""
    s = plan.setting
    arch = architecture(s)
    if arch is None:
        _refuse(
            f"the export cannot tell whether {version} splits {s.model.name}'s batches in two: "
            "its file names no checkpoint (hf_repository) of a family whose Hugging Face "
            "architecture the export knows",
            f"drop {FLAG}",
        )
    if arch not in SGLANG_SPLITS:
        _refuse(
            f"{version} splits a batch in two for DeepSeek-V2/V3 and Qwen3 MoE layers only, not "
            f"{arch}, {s.model.name}'s architecture",
            f"drop {FLAG}, or export for vllm",
        )
    bits = float(s.precision.weight_bits)
    if bits != 8.0:
        _refuse(
            f"{version} runs it over DeepEP, whose MoE layer takes FP8 experts only, not the "
            f"plan's {bits:g}-bit ones",
            f"plan 8-bit weights (--weight-bits 8), or drop {FLAG}",
        )
    derived = tuple(getattr(s.gpu, "derived_from", ()))
    part = derived[-1] if derived else s.gpu.name  # a derived part is its base's generation
    if generation(part) in BEFORE_DEEPGEMM:
        _refuse(
            f"{version} runs it over DeepEP, whose MoE layer needs DeepGEMM, which runs on "
            f"Hopper and later GPUs, not {s.gpu.name}",
            f"drop {FLAG}",
        )


def _worker_launches(plan, w, version: str) -> None:
    """One worker's layout: expert-parallel; under SGLang at its tensor degree (DeepEP's
    ep_size = tp_size); under vLLM with attention data parallelism: it micro-batches a step
    only where every data-parallel rank agrees to, and never at a data-parallel size of 1
    (``get_dp_padding_ubatch``, vllm/v1/worker/ubatch_splitting.py), and its DeepEP kernels
    run only with data parallelism and expert parallelism (``use_all2all_kernels``,
    vllm/model_executor/layers/fused_moe/config.py)."""
    s = plan.setting
    layout = f"the plan's {w.role} worker (TP{w.tensor}, EP{w.expert})"
    if w.expert <= 1:
        _refuse(
            f"{layout} launches no expert parallelism, and {version} overlaps DeepEP's token "
            "exchange between expert-parallel ranks",
            f"drop {FLAG}, or plan a layout whose tensor degree divides {s.model.name}'s "
            f"{s.model.routed_experts} experts",
        )
    if plan.engine == "sglang" and w.expert != w.tensor:
        _refuse(
            f"{version} under DeepEP sets the expert-parallel size to the tensor-parallel "
            f"size, and {layout} splits its experts over part of its tensor group",
            f"drop {FLAG}, or plan a layout whose tensor degree divides {s.model.name}'s "
            f"{s.model.routed_experts} experts",
        )
    if plan.engine == "vllm" and w.attention_dp <= 1:
        _refuse(
            f"{version} splits a step in two only over data-parallel ranks, and {layout} has "
            "no attention data parallelism",
            f"drop {FLAG}"
            + ("" if w.role == "prefill" else ", or plan a larger batch (attention data-parallel)")
            + ", or export for sglang",
        )


def _note(plan, names: dict, version: str) -> str:
    """Which flags and environment carry the overlap, and when the engine splits a step."""
    head = f"Two-batch overlap: {version} runs each step as two micro-batches over DeepEP, "
    if plan.engine == "sglang":
        return (
            f"{head}one's expert dispatch and combine under the other's work: "
            f"{' '.join(sglang_arguments(plan, names))} (DeepEP must be installed where the "
            "workers run; its expert-parallel size is the tensor-parallel size, as planned)."
        )
    env = "; ".join(
        f"{k}={v} ({w.role})"
        for w in plan.workers
        for k, v in vllm_environment(plan, w.role, names)
    )
    return (
        f"{head}where every data-parallel rank holds at least "
        f"{int(MIN_TOKENS['vllm'])} decode tokens (512 with prompts): "
        f"{' '.join(vllm_arguments(plan, names))} with {env} (DeepEP must be installed where "
        "the workers run)."
    )
