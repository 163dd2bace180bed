"""Redundant experts (``--redundant-experts``) as each engine's export launches them: the
engine's expert-parallel load balancer (EPLB) holding the plan's copies (``vllm_arguments``,
``sglang_arguments``, ``trtllm_balancer``), or a refusal naming why that engine version would
not run them as the plan priced them (``balancer_launches``). ``plan`` is an
``export.launch.LaunchPlan``; ``names`` its engine's section of launch_flags.yaml."""

from __future__ import annotations

import json
import re

from ..errors import SpecError
from .experts import trtllm_moe_backend

#: The Hugging Face architecture (config.json's ``architectures[0]``, what each engine picks
#: its model class by) of each family of mixtures of experts the catalog holds, by the model
#: file's checkpoint (``hf_repository``, lower case, matched from its start): model files
#: record no architecture, and every checkpoint of a family names the same one.
ARCHITECTURES = (
    (r"deepseek-ai/deepseek-v2", "DeepseekV2ForCausalLM"),
    (r"deepseek-ai/deepseek-(v3|r1)", "DeepseekV3ForCausalLM"),
    (r"moonshotai/kimi-k2", "DeepseekV3ForCausalLM"),
    (r"zai-org/glm-4\.[56]", "Glm4MoeForCausalLM"),
    (r"openai/gpt-oss", "GptOssForCausalLM"),
    (r"ai21labs/ai21-jamba", "JambaForCausalLM"),
    (r"meta-llama/llama-4", "Llama4ForConditionalGeneration"),
    (r"mistralai/mixtral", "MixtralForCausalLM"),
    (r"qwen/qwen3-next", "Qwen3NextForCausalLM"),
    (r"qwen/qwen3-\d+b-a\d+b", "Qwen3MoeForCausalLM"),
)

#: The architectures whose expert-parallel load balancer each engine version runs.
#: vLLM 0.11.0 builds its EPLB state only for a model that is a ``MixtureOfExperts``
#: (gpu_model_runner.py; vllm/model_executor/models/interfaces.py, a runtime protocol: the
#: classes of deepseek_v2.py, mixtral.py, qwen3_moe.py, qwen3_next.py, hunyuan_v1.py; GLM-4.5's
#: Glm4MoeForCausalLM lacks update_physical_experts_metadata) and asserts it at every step.
#: SGLang 0.5.3 records experts' loads only for a model class with
#: ``get_model_config_for_expert_location`` (eplb/expert_location.py; its recorder asserts
#: one, eplb/expert_distribution.py): DeepseekV2ForCausalLM and its subclasses (DeepSeek-V3,
#: GLM-4.5), gpt_oss.py, qwen2_moe.py, qwen3_moe.py, qwen3_next.py (sglang/srt/models).
#: TensorRT-LLM creates its MoE load balancer only for the architectures of
#: ``moe_model_arch_list`` (tensorrt_llm/_torch/modules/fused_moe/moe_load_balancer.py) and
#: ignores the configuration elsewhere. The list as of commit 0e626045 (December 2025, the 1.2
#: line; the v1.2.1 tag itself was not read): DeepseekV3, DeepseekV32, GptOss, Mixtral, Llama4,
#: Qwen2Moe, Qwen3Moe. GptOssForCausalLM came with NVIDIA/TensorRT-LLM PR #8886, "Enable EPLB
#: for trtllm-gen and cutlass backend", which TensorRT-LLM's release notes list under
#: 1.2; the catalog holds no DeepSeek-V3.2.
BALANCED = {
    "vllm": frozenset(
        {
            "DeepseekV2ForCausalLM",
            "DeepseekV3ForCausalLM",
            "HunYuanMoEV1ForCausalLM",
            "MixtralForCausalLM",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
        }
    ),
    "sglang": frozenset(
        {
            "DeepseekV2ForCausalLM",
            "DeepseekV3ForCausalLM",
            "Glm4MoeForCausalLM",
            "GptOssForCausalLM",
            "Qwen2MoeForCausalLM",
            "Qwen3MoeForCausalLM",
            "Qwen3NextForCausalLM",
        }
    ),
    "trtllm": frozenset(
        {
            "DeepseekV3ForCausalLM",
            "GptOssForCausalLM",
            "Llama4ForConditionalGeneration",
            "MixtralForCausalLM",
            "Qwen2MoeForCausalLM",
            "Qwen3MoeForCausalLM",
        }
    ),
}

#: Weight bits whose experts vLLM 0.11.0 balances: its FusedMoE raises "EPLB is only supported
#: for FP8 quantization for now" for any MoE method but Fp8MoEMethod and the unquantized one
#: (vllm/model_executor/layers/fused_moe/layer.py), so MXFP4 (gpt-oss), NVFP4, AWQ and GPTQ
#: experts are refused at start.
VLLM_BALANCED_BITS = (8.0, 16.0)

#: TensorRT-LLM's MoE backends that run no load balancer: create_moe asserts one only beside
#: WideEPMoE, CutlassFusedMoE, TRTLLMGenFusedMoE, CuteDslFusedMoE and DeepGemmFusedMoE
#: (tensorrt_llm/_torch/modules/fused_moe/create_moe.py, "MoE Load Balance is only supported
#: in ..."; TritonFusedMoE is in none of the stored versions of the 1.x line, the v1.2.1 tag
#: itself not read), so gpt-oss on Hopper, whose experts the export runs on TRITON
#: (``experts.trtllm_moe_backend``), is balanced by no launch it writes.
TRTLLM_UNBALANCED_BACKENDS = ("TRITON",)

#: TensorRT-LLM's balancer moves one layer's experts a step (online); 0 would be a static
#: balancer, which needs each layer's initial_global_assignments from a recorded load.
TRTLLM_LAYER_UPDATES = 1

FLAG = "--redundant-experts"


def architecture(setting) -> str | None:
    """The Hugging Face architecture of the setting's model (``ARCHITECTURES``), or None."""
    repo = (setting.model.hf_repository or "").lower()
    return next((a for pattern, a in ARCHITECTURES if re.match(pattern, repo)), None)


def vllm_arguments(plan, names: dict) -> list[str]:
    """vLLM's EPLB and the plan's copies: ``--enable-eplb --eplb-config {...}`` (none at 0)."""
    r = int(plan.setting.model.redundant_experts)
    if not r:
        return []
    f = names["flags"]
    config = json.dumps({names["eplb_config"]["redundant"]: r}, separators=(",", ":"))
    return [f["eplb_switch"], f["eplb_config"], config]


def sglang_arguments(plan, names: dict) -> list[str]:
    """SGLang's EPLB and the plan's copies (none at 0)."""
    r = int(plan.setting.model.redundant_experts)
    if not r:
        return []
    f = names["flags"]
    return [f["eplb_switch"], f["redundant_experts"], str(r)]


def trtllm_balancer(plan, names: dict) -> dict:
    """TensorRT-LLM's MoeLoadBalancerConfig of the plan's slots, balanced online ({} at 0):
    ``moe_config.load_balancer`` of the worker's extra options takes it inline (MoeConfig,
    tensorrt_llm/llmapi/llm_args.py of 1.2.1)."""
    r = int(plan.setting.model.redundant_experts)
    if not r:
        return {}
    c = names["moe_load_balancer_config"]
    return {c["slots"]: plan.setting.model.routed_experts + r, c["updates"]: TRTLLM_LAYER_UPDATES}


def _refuse(problem: str, fix: str):
    raise SpecError("argument", FLAG, problem, fix)


def _nearest(experts: int, r: int, ep: int) -> str:
    """The redundant-expert counts nearest ``r`` whose slots split evenly over ``ep`` ranks."""
    below = r - (experts + r) % ep
    counts = [c for c in (below, below + ep) if c >= 0]
    return " or ".join(f"{c}" + (" (none)" if c == 0 else "") for c in counts)


def balancer_launches(plan, names: dict) -> tuple[str, ...]:
    """Refuse redundant experts the plan's engine version would not balance as the plan
    priced them: a model architecture its balancer does not run, weights it does not balance
    (vLLM), a worker without expert parallelism (balancers move experts between EP ranks
    only), without attention data parallelism (TensorRT-LLM), or whose slots do not split
    evenly over its EP ranks (every engine places as many on each). Returns the note saying
    where the copies are and which flags carry them; () without copies."""
    s = plan.setting
    r = int(s.model.redundant_experts)
    if not r:
        return ()
    version = f"{plan.engine} {names['version']}"
    arch = architecture(s)
    if arch is None:
        _refuse(
            f"is {r}, but the export cannot tell whether {version} balances {s.model.name}: "
            "its file names no checkpoint (hf_repository) of a family whose Hugging Face "
            "architecture the export knows",
            f"leave {FLAG} out",
        )
    if arch not in BALANCED[plan.engine]:
        _refuse(
            f"is {r}, but {version}'s expert-parallel load balancer does not run {arch}, "
            f"{s.model.name}'s architecture",
            f"leave {FLAG} out{_elsewhere(plan.engine, arch)}",
        )
    _engine_limits(plan, names, r)
    experts = s.model.routed_experts
    for w in plan.workers:
        _worker_launches(plan, w, experts, r, version)
    return (_note(plan, names, experts, r),)


def _elsewhere(engine: str, arch: str | None, skip: tuple[str, ...] = ()) -> str:
    """The fix's end naming the other engines whose balancer runs ``arch`` ("" if none)."""
    others = [e for e in sorted(BALANCED) if e not in (engine, *skip) and arch in BALANCED[e]]
    return f", or export for {' or '.join(others)}" if others else ""


def _engine_limits(plan, names: dict, r: int) -> None:
    """vLLM 0.11.0's own: EPLB on CUDA only (ParallelConfig: "Expert parallelism load
    balancing is only supported on CUDA devices now", vllm/config/parallel.py), of FP8 or
    unquantized experts (``VLLM_BALANCED_BITS``). TensorRT-LLM's: none on a MoE backend
    without a balancer (``TRTLLM_UNBALANCED_BACKENDS``), where the plan's experts run on one."""
    if plan.engine == "trtllm":
        s, backend = plan.setting, trtllm_moe_backend(plan.setting, names)
        if backend in TRTLLM_UNBALANCED_BACKENDS:
            _refuse(
                f"is {r}, but trtllm {names['version']} runs {s.model.name}'s MXFP4 experts on "
                f"{s.gpu.name} on its {backend} MoE backend, whose kernel the plan is priced "
                "with, and that backend runs no load balancer",
                f"leave {FLAG} out{_elsewhere('trtllm', architecture(s))}",
            )
    if plan.engine != "vllm":
        return
    from ..specs.platforms import platform_of

    s, version = plan.setting, f"vllm {names['version']}"
    elsewhere = _elsewhere("vllm", architecture(s))
    if platform_of(s.gpu) != "cuda":  # (TensorRT-LLM runs on CUDA only)
        _refuse(
            f"is {r}, but {version} balances experts on CUDA GPUs only, not {s.gpu.name}",
            f"leave {FLAG} out{_elsewhere('vllm', architecture(s), skip=('trtllm',))}",
        )
    bits = float(s.precision.weight_bits)
    if bits not in VLLM_BALANCED_BITS:
        _refuse(
            f"is {r}, but {version} balances FP8 or 16-bit experts only, not the plan's "
            f"{bits:g}-bit ones",
            f"plan 8- or 16-bit weights, or leave {FLAG} out{elsewhere}",
        )


def _worker_launches(plan, w, experts: int, r: int, version: str) -> None:
    """One worker's layout under the balancer: expert-parallel, attention data-parallel
    (TensorRT-LLM's; its MoE asserts "Load Balancer should be only used with ADP and EP > 1"
    in the stored later versions of tensorrt_llm/_torch/modules/fused_moe), and its slots,
    the experts and their copies, as many on every EP rank: SGLang 0.5.3 asserts
    num_physical_experts % ep_size == 0 (eplb/expert_location.py) and its FusedMoE
    num_experts % moe_ep_size == 0, vLLM 0.11.0's FusedMoE "EPLB currently only supports even
    distribution of experts across ranks", TensorRT-LLM's MoeLoadBalancerConfig num_slots //
    ep_size a rank."""
    layout = f"the plan's {w.role} worker (TP{w.tensor}, EP{w.expert})"
    if w.expert <= 1:
        _refuse(
            f"is {r}, but {layout} launches no expert parallelism, and {version} balances "
            "experts only between expert-parallel ranks",
            f"leave {FLAG} out, or plan a layout whose tensor degree divides "
            f"{plan.setting.model.name}'s {experts} experts",
        )
    if plan.engine == "trtllm" and w.attention_dp <= 1:
        _refuse(
            f"is {r}, but {layout} has no attention data parallelism, without which {version} "
            "runs no MoE load balancer",
            f"leave {FLAG} out"  # (a prefill worker's attention spans its tensor group)
            + ("" if w.role == "prefill" else ", or plan a larger batch (attention data-parallel)")
            + _elsewhere(plan.engine, architecture(plan.setting)),
        )
    if (experts + r) % w.expert:
        _refuse(
            f"is {r}: {plan.setting.model.name}'s {experts} experts and {r} copies make "
            f"{experts + r} slots, which do not split evenly over the {w.expert} "
            f"expert-parallel ranks of {layout}, as {version} places them",
            f"give {FLAG} {_nearest(experts, r, w.expert)}",
        )


def _note(plan, names: dict, experts: int, r: int) -> str:
    """Where the plan's copies are, and the flags or fields that carry them."""
    s, version = plan.setting, f"{plan.engine} {names['version']}"
    ranks = sorted({w.expert for w in plan.workers})
    spread = ", ".join(f"{(experts + r) // e} on each of EP{e}'s ranks" for e in ranks)
    held = (
        f"Redundant experts: {r} copies of {s.model.name}'s routed experts in each MoE layer "
        f"({experts + r} slots for its {experts} experts, {spread}), placed by "
    )
    if plan.engine == "trtllm":
        field = f"{names['llm_api']['moe']}.{names['moe_config']['load_balancer']}"
        config = ", ".join(f"{k}: {v}" for k, v in trtllm_balancer(plan, names).items())
        files = ", ".join(f"trtllm-{w.role}.yaml" for w in plan.workers)
        return f"{held}{version}'s MoE load balancer, online: {field} in {files} ({config})."
    args = (vllm_arguments if plan.engine == "vllm" else sglang_arguments)(plan, names)
    return f"{held}{version}'s EPLB: {' '.join(args)}."
