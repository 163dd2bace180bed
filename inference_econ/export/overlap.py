"""DeepEP's token exchange (``--deepep``) and two-batch overlap over it (``--two-batch-overlap``,
docs/model-part-f.md §F7) as each engine's export launches them (``sglang_arguments``;
``vllm_arguments`` and the worker's ``vllm_environment``), or a refusal naming why that engine
version would not run them as the plan priced them (``overlap_launches``). Without either the
export launches the engine's default backend, which gathers, as the plan priced it. ``plan`` is
an ``export.launch.LaunchPlan``; ``names`` its engine's section of launch_flags.yaml.

What each engine version runs, from its source:

* SGLang 0.5.3: ``--moe-a2a-backend deepep``, with ``--enable-two-batch-overlap`` for the
  overlap. DeepEP's MoE layer takes FP8 experts and DeepGEMM (``DeepEPMoE``). DeepEP sets
  the expert-parallel size to the tensor-parallel size (``_handle_deepep_moe``,
  sglang/srt/server_args.py) and, without attention data parallelism, still gathers each
  step's micro-batch split over the tensor group (``require_attn_tp_gather``,
  sglang/srt/utils/common.py), so no ``--enable-dp-attention`` is needed; ``--deepep-mode``
  stays ``auto`` (low-latency kernels for decode batches, normal ones for prompts, which the
  split needs: ``TboDPAttentionPreparer``, sglang/srt/two_batch_overlap.py).
* vLLM 0.11.0: ``VLLM_ALL2ALL_BACKEND`` deepep_low_latency or deepep_high_throughput, with
  ``--enable-dbo`` for the overlap (which VllmConfig asserts needs them,
  vllm/config/__init__.py); its DeepEP kernels run only over data-parallel ranks.
* TensorRT-LLM 1.2.1: none (no TorchLlmArgs field or trtllm-serve option splits a step in
  two micro-batches, tensorrt_llm/llmapi/llm_args.py, tensorrt_llm/commands/serve.py).
"""

from __future__ import annotations

from ..errors import SpecError
from ..model.overlap import DEEPEP_FLAG, FLAG, MIN_TOKENS
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

#: The tokens SGLang 0.5.3's DeepEP low-latency kernels dispatch from one GPU at most: its
#: buffer's ``num_max_dispatch_tokens_per_rank``, SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK
#: unless set (sglang/srt/layers/moe/token_dispatcher/deepep.py); DeepEP asserts a dispatch
#: holds no more. Decode batches run those kernels (``DeepEPMode.resolve``, deepep_mode auto,
#: sglang/srt/layers/moe/utils.py), each GPU dispatching its share of its attention rank's
#: batch (the MoE input scattered over the attention group, ``_compute_mlp_mode``,
#: sglang/srt/layers/communicator.py).
SGLANG_LOW_LATENCY_TOKENS = 128

#: vLLM's DeepEP kernels by worker role: low-latency ones for decode steps (a decode worker,
#: or one serving prompts and decodes together), high-throughput ones for a prefill worker
#: (under which vLLM turns CUDA graphs off with data parallelism, vllm/platforms/cuda.py).
VLLM_KERNELS = {"server": "low_latency", "decode": "low_latency", "prefill": "high_throughput"}


def overlapped(plan) -> bool:
    """Whether the plan was priced with two micro-batches a step."""
    return bool(plan.setting.assumptions.two_batch_overlap)


def over_deepep(plan) -> bool:
    """Whether the plan was priced with DeepEP's exchange (``--deepep``, or two micro-batches
    a step, which run over it)."""
    return overlapped(plan) or bool(plan.setting.assumptions.deepep)


def _flag(plan) -> str:
    """The options a refusal of DeepEP's exchange names: those the plan was given."""
    given = [FLAG] * overlapped(plan) + [DEEPEP_FLAG] * bool(plan.setting.assumptions.deepep)
    return " and ".join(given)


def _it(plan) -> str:
    """What a refusal says the engine runs over DeepEP: the overlap, or the exchange itself."""
    return "it" if overlapped(plan) else "the exchange"


def sglang_arguments(plan, names: dict) -> list[str]:
    """SGLang's DeepEP exchange (``--moe-a2a-backend deepep``) and two-batch overlap over it
    (none without them: the default backend, which gathers)."""
    if not over_deepep(plan):
        return []
    f = names["flags"]
    tbo = [f["tbo_switch"]] if overlapped(plan) else []
    return [*tbo, f["moe_a2a_backend"], names["moe_a2a_backend"]]


def rank_requests(w) -> int:
    """The requests each of a SGLang worker's attention ranks runs at most: its
    ``--max-running-requests`` divided by its data-parallel size, rounded down
    (``TpModelWorker``, sglang/srt/managers/tp_worker.py)."""
    return int(w.batch) // max(int(w.attention_dp), 1)


def sglang_graph_arguments(plan, w, names: dict) -> list[str]:
    """The CUDA graphs a SGLang worker with attention data parallelism captures under DeepEP:
    up to the batch one attention rank runs (``--cuda-graph-max-bs``). Left out, SGLang 0.5.3
    captures each rank's graphs up to its whole ``--max-running-requests`` (its request pool,
    model_executor/cuda_graph_runner.py) or 512 (server_args.py), whose decode dispatch
    outgrows DeepEP's low-latency buffer (``SGLANG_LOW_LATENCY_TOKENS``) and fails the
    capture at start. None for a prefill worker (no graphs) or without DeepEP."""
    if not over_deepep(plan) or w.role == "prefill" or w.attention_dp <= 1:
        return []
    return [names["flags"]["graph_max_batch"], str(rank_requests(w))]


def vllm_arguments(plan, names: dict) -> list[str]:
    """vLLM's dual batch overlap (none without it)."""
    return [names["flags"]["dbo_switch"]] if overlapped(plan) else []


def vllm_environment(plan, role: str, names: dict) -> tuple[tuple[str, str], ...]:
    """The environment that selects a vLLM worker's DeepEP kernels (none without them: the
    default all-gather backend)."""
    if not over_deepep(plan):
        return ()
    backend = names["all2all_backend"][VLLM_KERNELS[role]]
    return ((names["environment"]["all2all"], backend),)


def _refuse(problem: str, fix: str, flag: str = FLAG):
    """One line naming the first of the options ``flag`` names, the problem and the fix."""
    raise SpecError("argument", flag.split(" and ")[0], problem, fix)


def overlap_launches(plan, names: dict) -> tuple[str, ...]:
    """Refuse DeepEP's exchange, or two-batch overlap over it, where the plan's engine
    version would not run them as the plan priced them: an engine without them, or other
    than the one whose profile priced them; under SGLang, experts other than FP8 (DeepEP's
    MoE layer asserts FP8 weights and DeepGEMM) or a part before Hopper, and for overlap a
    model whose layers it does not split; a worker without expert parallelism (DeepEP
    exchanges tokens between expert-parallel ranks), under SGLang one whose expert-parallel
    degree is not its tensor degree, under vLLM one without attention data parallelism.
    Returns the note saying which flags carry them; () without them."""
    if not over_deepep(plan):
        return ()
    s, version, flag = plan.setting, f"{plan.engine} {names['version']}", _flag(plan)
    what = "two-batch overlap" if overlapped(plan) else "DeepEP's exchange"
    priced_as, otherwise = (
        ("two micro-batches", "splits steps at other sizes")
        if overlapped(plan)
        else ("DeepEP exchange", "runs it on other layouts")
    )
    if plan.engine not in ENGINES:
        _refuse(
            f"{version} has no {what} (only SGLang's and vLLM's)",
            f"export for sglang or vllm, or drop {flag}",
            flag,
        )
    profile = s.assumptions.profile()
    priced = getattr(profile, "family", None)
    if priced != plan.engine:
        _refuse(
            f"the plan's figures price {priced}'s {priced_as}, and the export launches "
            f"{version}, which {otherwise}",
            f"plan and export under one engine (--engine {plan.engine})",
            flag,
        )
    if plan.engine == "sglang":
        _sglang_limits(plan, version, flag)
    for w in plan.workers:
        _worker_launches(plan, w, version, flag)
    return (_note(plan, names, version),)


def _sglang_limits(plan, version: str, flag: str) -> None:
    """SGLang 0.5.3's own: FP8 experts and a part DeepGEMM runs on (``BEFORE_DEEPGEMM``), and
    under two-batch overlap the model's layers split (``SGLANG_SPLITS``)."""
    s = plan.setting
    if overlapped(plan):
        arch = architecture(s)
        if arch is None:
            _refuse(
                f"the export cannot tell whether {version} splits {s.model.name}'s batches in "
                "two: its file names no checkpoint (hf_repository) of a family whose Hugging "
                "Face architecture the export knows",
                f"drop {FLAG}",
                flag,
            )
        if arch not in SGLANG_SPLITS:
            _refuse(
                f"{version} splits a batch in two for DeepSeek-V2/V3 and Qwen3 MoE layers only, "
                f"not {arch}, {s.model.name}'s architecture",
                f"drop {FLAG}, or export for vllm",
                flag,
            )
    bits = float(s.precision.weight_bits)
    if bits != 8.0:
        _refuse(
            f"{version} runs {_it(plan)} over DeepEP, whose MoE layer takes FP8 experts only, not "
            f"the plan's {bits:g}-bit ones",
            f"plan 8-bit weights (--weight-bits 8), or drop {flag}",
            flag,
        )
    derived = tuple(getattr(s.gpu, "derived_from", ()))
    part = derived[-1] if derived else s.gpu.name  # a derived part is its base's generation
    if generation(part) in BEFORE_DEEPGEMM:
        _refuse(
            f"{version} runs {_it(plan)} over DeepEP, whose MoE layer needs DeepGEMM, which runs "
            f"on Hopper and later GPUs, not {s.gpu.name}",
            f"drop {flag}",
            flag,
        )


def _worker_launches(plan, w, version: str, flag: str) -> None:
    """One worker's layout: expert-parallel; under SGLang at its tensor degree (DeepEP's
    ep_size = tp_size); under vLLM with attention data parallelism: its DeepEP kernels run
    only with data parallelism and expert parallelism (``use_all2all_kernels``,
    vllm/model_executor/layers/fused_moe/config.py), and it micro-batches a step only where
    every data-parallel rank agrees to, never at a data-parallel size of 1
    (``get_dp_padding_ubatch``, vllm/v1/worker/ubatch_splitting.py)."""
    s = plan.setting
    layout = f"the plan's {w.role} worker (TP{w.tensor}, EP{w.expert})"
    fix = (
        f"drop {flag}, or plan a layout whose tensor degree divides {s.model.name}'s "
        f"{s.model.routed_experts} experts"
    )
    if w.expert <= 1:
        _refuse(
            f"{layout} launches no expert parallelism, and {version} "
            f"{'overlaps' if overlapped(plan) else 'runs'} DeepEP's token exchange between "
            "expert-parallel ranks",
            fix,
            flag,
        )
    if plan.engine == "sglang" and w.expert != w.tensor:
        _refuse(
            f"{version} under DeepEP sets the expert-parallel size to the tensor-parallel "
            f"size, and {layout} splits its experts over part of its tensor group",
            fix,
            flag,
        )
    if plan.engine == "sglang" and w.role != "prefill":
        _sglang_dispatch(w, version, flag)
    if plan.engine == "vllm" and w.attention_dp <= 1:
        _refuse(
            f"{version} {'splits a step in two' if overlapped(plan) else 'runs its DeepEP kernels'}"
            f" only over data-parallel ranks, and {layout} has no attention data parallelism",
            f"drop {flag}"
            + ("" if w.role == "prefill" else ", or plan a larger batch (attention data-parallel)")
            + ", or export for sglang",
            flag,
        )


def _sglang_dispatch(w, version: str, flag: str) -> None:
    """Refuse a SGLang worker whose decode batch a GPU dispatches is more than DeepEP's
    low-latency kernels take (``SGLANG_LOW_LATENCY_TOKENS``): its attention rank's requests
    (``rank_requests``) over the GPUs of that rank (its tensor degree over its data-parallel
    size), as it runs them and captures its CUDA graphs (``sglang_graph_arguments``)."""
    group = max(w.tensor // max(w.attention_dp, 1), 1)
    tokens = -(-rank_requests(w) // group)
    if tokens <= SGLANG_LOW_LATENCY_TOKENS:
        return
    most = SGLANG_LOW_LATENCY_TOKENS * group * max(w.attention_dp, 1)
    raise SpecError(
        "argument", "--batch", f"is {w.batch} on the {w.role} worker (TP{w.tensor}, "
        f"{w.attention_dp} attention ranks): each GPU dispatches up to {tokens} decode tokens "
        f"a step, and {version}'s DeepEP low-latency kernels take at most "
        f"{SGLANG_LOW_LATENCY_TOKENS} (the engine fails when it captures its CUDA graphs)",
        f"plan a batch of at most {most} on this layout, or drop {flag}",
    )  # fmt: skip


def _note(plan, names: dict, version: str) -> str:
    """Which flags and environment carry DeepEP's exchange and the overlap, and when the
    engine splits a step."""
    if not overlapped(plan):
        head = f"DeepEP's exchange: {version} moves a MoE's tokens with DeepEP's all-to-all, "
    else:
        head = f"Two-batch overlap: {version} runs each step as two micro-batches over DeepEP, "
    if plan.engine == "sglang":
        when = (
            "one's expert dispatch and combine under the other's work: " if overlapped(plan) else ""
        )
        return (
            f"{head}{when}{' '.join(sglang_arguments(plan, names))} (DeepEP must be installed "
            "where the workers run; its expert-parallel size is the tensor-parallel size, as "
            "planned)."
        )
    env = "; ".join(
        f"{k}={v} ({w.role})"
        for w in plan.workers
        for k, v in vllm_environment(plan, w.role, names)
    )
    if not overlapped(plan):
        return f"{head}selected by {env} (DeepEP must be installed where the workers run)."
    return (
        f"{head}where every data-parallel rank holds at least "
        f"{int(MIN_TOKENS['vllm'])} decode tokens (512 with prompts): "
        f"{' '.join(vllm_arguments(plan, names))} with {env} (DeepEP must be installed where "
        "the workers run)."
    )
