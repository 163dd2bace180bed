"""The options of a serving problem (``serving.setting.Setting``: what is served, on what,
under which assumptions, and how it is priced) and of the method that searches its frontier
(``optimise.method.Method``)."""

from __future__ import annotations

from ..model.assumptions import CLOCKS, PRESETS
from ..specs.bases import DEFAULT_PRICE_BASIS, PRICE_BASES
from .limits import BITS, GEMM_BITS, MAX_GPUS, MAX_SECONDS, MAX_TOKENS
from .row import INFER, METHOD, PROBLEM, Name, Numbers, section, setting

#: The preset of serving under load (simulate, capacity, frontier --rate and their API
#: functions): their figures are expected ones, under an engine profile (the achievable
#: preset's, trtllm unless --engine says otherwise), each with its interval; the ideal bound
#: is asked for with --assumptions refined (docs/model.md §F12).
LOAD_ASSUMPTIONS = "achievable"
#: The options that speculate: a draft model or draft heads.
SPECULATING = ("draft", "draft_heads")


@section(PROBLEM)
class ServedOptions:
    """What one instance holds and serves: the context of its requests, the precisions of its
    weights, activations and KV cache, a cap on its demand (``serving.setting.Setting``)."""

    context_tokens: float = setting(
        # A context a deployment has: 0 read no KV cache and let the cheapest
        # point batch 5,000-17,000 requests. 1,000 tokens is the paper's own middle context
        # (figure-context's "Context of 1K tokens") and the order of MLPerf's chat benchmarks'
        # decode contexts (datasets/mlperf.yaml: 438 and 555 tokens for Llama 2 70B and
        # Mixtral 8x7B; 9,585 for Llama 3.1 405B's long-context set). Paper tables and figures
        # that use an empty context say context_tokens: 0 in their scenario files.
        1000.0,
        help="Tokens already in the KV cache of every request (default 1,000: the paper's Figure 7"
        " middle context; 0 reads no KV cache, as the paper's short-context tables do).",
        unit="tokens",
        minimum=0,
        flag="--context",
        maximum=MAX_TOKENS,
    )

    weight_bits: float | None = setting(
        None,
        help="Bits per weight (default: the model file's). 4 alone keeps the activations'"
        " bits (W4A16 for a 16-bit model); NVFP4 is --weight-bits 4 --activation-bits 4.",
        **GEMM_BITS,
    )

    activation_bits: float | None = setting(
        None,
        help="Bits per activation (default: the model file's); the KV cache takes them too"
        " unless --kv-bits is given (NVFP4 serving usually keeps an FP8 cache: --kv-bits 8).",
        **GEMM_BITS,
    )

    kv_cache_bits: float | None = setting(
        None,
        help="Bits per KV-cache element (default: the activation bits).",
        flag="--kv-bits",
        **BITS,
    )

    redundant_experts: int = setting(
        0,
        help="Redundant copies of routed experts in each MoE layer, which the engine's"
        " expert-parallel load balancer (EPLB) places where the hottest experts load a rank most:"
        " they take memory, and under an engine profile lower the busiest rank's load where"
        " experts are parallel and the slots split evenly over their ranks, else the output says"
        " they take memory only (default 0: none; TensorRT-LLM's wide-EP guide runs DeepSeek-R1's"
        " 256 experts in 288 slots, 32 copies).",
        unit="experts",
        minimum=0,
        maximum=4096,  # specs.architecture.MOST_REDUNDANT_EXPERTS (not loaded with the CLI)
    )

    max_throughput_tokens_per_s: float | None = setting(
        None,
        help="Demand cap: total tokens/s of one instance (default: none).",
        unit="tokens/s",
        minimum=0,
        exclusive_minimum=True,
        flag="--max-throughput",
        maximum=1e12,
        no_limit=True,
    )


@section(PROBLEM, group="speculation")
class SpeculationOptions:
    """Speculative decoding: a draft model, or heads on the target's features (MTP, EAGLE) drafting
    a chain or a tree (docs/model.md §A6, §C3)."""

    draft: Name | None = setting(
        None,
        help="Draft model for speculative decoding (a name or a YAML file).",
        # the inverse analyses try the paper's draft model (§4.1) unless told otherwise
        command_defaults=((INFER, "Llama 3 8B"),),
    )

    acceptance: float = setting(
        0.8,
        help="Probability that the target accepts each draft token.",
        minimum=0,
        maximum=1,
        needs=SPECULATING,
    )

    max_draft_tokens: int = setting(
        5,
        help="Longest draft tried: the most tokens one speculative cycle may yield, as in the"
        " draft_tokens column (draft heads draft one token fewer); 1 would mean no speculation, so"
        " with a draft it is refused.",
        unit="tokens",
        minimum=1,
        maximum=64,
        flag="--max-draft",
        needs=SPECULATING,
    )

    draft_weight_bits: float | None = setting(
        None,
        help="Bits per weight of the draft model (default: its file's).",
        needs=("draft",),
        **GEMM_BITS,
        group="",
    )

    draft_heads: str | None = setting(
        None,
        help="Speculate with heads on the target's features: mtp (the model's multi-token"
        " prediction modules) or eagle (an EAGLE head).",
        choices=("mtp", "eagle"),
    )

    acceptance_by_position: Numbers | None = setting(
        None,
        help="Draft heads: top-1 acceptance at depths 1, 2, ... (the last repeats; default:"
        " --acceptance at every depth).",
        minimum=0,
        maximum=1,
        excludes=("acceptance",),
    )

    tree_branching: int = setting(
        1,
        help="Draft heads: candidates per node of a top-k tree draft (1: a chain).",
        unit="tokens",
        minimum=1,
        maximum=16,
    )

    eagle_layers: int = setting(
        1,
        help="Decoder layers of an EAGLE head.",
        unit="layers",
        minimum=1,
        maximum=8,
        needs=("draft_heads",),
    )


@section(PROBLEM)
class ScopeOptions:
    """How the problem is modelled and which configurations it admits: pipelining, the assumption
    preset and engine profile (docs/model.md Part F), a time-to-first-token limit at a prompt
    length, a cap on GPUs; and the setting's label."""

    pipeline: bool = setting(
        True,
        help="Allow pipeline parallelism.",
    )

    assumptions: str = setting(
        "paper",
        help="Assumption preset (docs/model.md: paper is the paper's model, refined every"
        " refinement, achievable every kernel at a serving engine's efficiency).",
        choices=tuple(PRESETS),
        # serving under load gives expected figures (LOAD_ASSUMPTIONS)
        command_defaults=(
            ("simulate", LOAD_ASSUMPTIONS),
            ("capacity", LOAD_ASSUMPTIONS),
            ("export", LOAD_ASSUMPTIONS),  # an export's figures are its engine's
        ),
    )

    engine: Name | None = setting(
        None,
        help="Engine efficiency profile for the achievable preset: trtllm, vllm, sglang or a"
        " profile YAML (such as calibrate writes); default trtllm.",
        # calibrate fits the terms of a profile, TensorRT-LLM's unless one is given (rows
        # naming no engine are the given one's, and left out without one)
        command_defaults=(("calibrate", "trtllm"),),
    )

    clock: str = setting(
        "auto",
        help="How an engine profile prices a step: engine (the profile's per-class"
        " efficiencies), kernel (each operation at its measured kernel's time, TensorRT-LLM"
        " 1.3's tables; a frontier then needs --discrete) or auto (kernel for a measured row"
        " stating an engine version the tables time, on a GPU they were measured on; engine"
        " otherwise, and for every plan).",
        choices=("auto", *CLOCKS),
    )

    two_batch_overlap: bool = setting(
        False,
        help="Run each step as two micro-batches, one's MoE token exchange under the other's"
        " work, as SGLang's --enable-two-batch-overlap and vLLM's --enable-dbo do over DeepEP:"
        " needs --engine sglang or vllm, a MoE model, NVIDIA GPUs on an NVLink switch and the"
        " engine clock (default: one batch a step).",
    )

    deepep: bool = setting(
        False,
        help="Exchange a MoE's tokens over DeepEP's all-to-all kernels, as SGLang's"
        " --moe-a2a-backend deepep and vLLM's deepep backends do, instead of the engine's"
        " default (an all-gather and a reduce-scatter under attention data parallelism):"
        " needs --engine sglang or vllm, a MoE model, NVIDIA GPUs on an NVLink switch and the"
        " engine clock; --two-batch-overlap runs over it (default: the engine's backend).",
    )

    prompt_tokens: float | None = setting(
        None,
        help="Prompt length of a request.",
        unit="tokens",
        minimum=1,
        maximum=MAX_TOKENS,
        # under a load the prompts' lengths are input_lengths (frontier --rate)
        excludes=("input_lengths",),
    )

    ttft_max_s: float | None = setting(
        None,
        help="Keep only configurations whose time to first token is within this.",
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        flag="--ttft-max",
        maximum=MAX_SECONDS,
        no_limit=True,
        needs=("prompt_tokens",),
    )

    label: str = setting(
        "",
        help="A name for the setting in tables and legends.",
    )

    # a cap on the GPUs of a deployment: the frontier's instance, the load frontier's and
    # capacity's whole deployment
    max_gpus: int | None = setting(
        None,
        help="Consider only deployments of at most this many GPUs in all.",
        unit="GPUs",
        minimum=1,
        maximum=MAX_GPUS,
    )


@section(PROBLEM, group="price")
class PriceOptions:
    """How a GPU-hour is priced (rented or owned) and what its power costs in carbon (docs/model.md
    Part G)."""

    price_basis: str = setting(
        DEFAULT_PRICE_BASIS,
        help="Kind of GPU-hour price: paper (the paper's discounted long-term rental), on-demand,"
        " reserved-1y, reserved-3y, spot, market (as the hardware file lists them) or owned (the"
        " cost of owning, from --costs).",
        choices=PRICE_BASES,
    )

    costs: Name | None = setting(
        None,
        help="Cost file of owning: purchase prices, depreciation, power price, PUE, hosting (a"
        " name or a YAML file; default owned-2025).",
    )

    pue: float | None = setting(
        None,
        help="Power usage effectiveness: facility power over IT power (default: the cost file's).",
        minimum=1,
        maximum=5,
    )

    grid_intensity_g_per_kwh: float | None = setting(
        None,
        help="Carbon intensity of the grid, for gCO2 per million tokens.",
        unit="gCO2/kWh",
        minimum=0,
        maximum=5000,
        flag="--grid-intensity",
        excludes=("grid_region",),
    )

    grid_region: str | None = setting(
        None,
        help="Carbon intensity of a named grid's published average: a country (France, FRA) or a"
        " cloud region (gcp:us-central1); needs the carbon extra (CodeCarbon's data).",
    )


@section(METHOD)
class SearchOptions:
    """How the frontier is searched (``optimise.method.Method``): the grid or whole deployable
    configurations, its points per axis, and the range of speeds kept."""

    discrete: bool = setting(
        False,
        help="Whole GPUs, nodes, batches and layouts one could deploy (else the paper's grid).",
    )

    grid_points: int = setting(
        400,
        help="Points per axis of the search grid.",
        minimum=4,
        maximum=2000,
        # the inverse analyses read every offer off every variant's frontier, with and without
        # speculation, and bisect model sizes on it: 100 points per axis keep an analysis to
        # seconds (docs/model.md Part D)
        command_defaults=((INFER, 100),),
    )

    all_points: bool = setting(
        False,
        help="Keep the whole frontier, down to its slowest points (default: the paper's range,"
        " from 1/100 of the fastest speed to the fastest).",
    )
