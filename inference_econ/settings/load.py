"""The options of serving under load (docs/model.md Part E): the offered load and its
requests, latency targets, the engine's scheduler, shared prefixes and routing, and the
deployment or capacity plan that serves it."""

from __future__ import annotations

from ..columns import INTERVAL_LEVELS
from ..specs.bases import PRICE_BASES
from .limits import MAX_SECONDS
from .problem import SPECULATING
from .row import LOAD, section, setting

#: The options that put a load on a deployment, one of which every traffic, target and engine
#: option needs.
UNDER_LOAD = ("arrival_rate_per_s", "trace", "demand", "concurrency")
#: Scaling policies a demand curve may be served by (``load.autoscaling.POLICIES``).
AUTOSCALERS = ("hpa", "keda", "planner")
#: Where a new instance's weights come from (``load/startup.yaml``).
WEIGHT_SOURCES = ("local-ssd", "network", "peer-gpu")


@section(LOAD)
class LoadOptions:
    """How the load is offered: requests per second (open loop) or clients (closed loop), and a
    layout fixed for the instances of one simulated deployment."""

    arrival_rate_per_s: float | None = setting(
        None,
        help="Requests per second offered to the whole deployment (Poisson, or a trace rescaled).",
        unit="requests/s",
        # one request in about 17 minutes: simulated times stay within 1e10 s (10 million
        # requests), exact to microseconds, so latencies keep their digits
        minimum=1e-3,
        maximum=1e9,
        flag="--rate",
        group="traffic",
    )

    layout: str | None = setting(
        None,
        help="The instances' layout as engines and benchmark results state it (TP8, TP2PP4, 'TP8"
        " attention-DP'), fixed instead of the one the engine model chooses for the load"
        " (docs/model.md §E6); capacity prints the layout of its plan.",
    )

    concurrency: int | None = setting(
        None,
        help="Closed loop instead of --rate: this many clients, each sending its next request when"
        " its last one finishes (vllm bench serve --max-concurrency), spread evenly over the"
        " instances.",
        unit="clients",
        minimum=1,
        maximum=1_000_000,
        excludes=("arrival_rate_per_s", "trace", "arrival_process"),
    )


@section(LOAD, group="traffic")
class TrafficOptions:
    """The requests of a load: their lengths, a trace, their arrival times, how many, and the seed
    (``load.arrivals.make_traffic``)."""

    input_lengths: str | None = setting(
        None,
        help="Prompt tokens per request: N, uniform:LO:HI, lognormal:MEAN:SIGMA[:CAP] or trace.",
        # one name per concept: a request's prompt length is --prompt-tokens in every command
        flag="--prompt-tokens",
        needs=UNDER_LOAD,
        number_as_text=True,  # input_lengths=500: a fixed length, as --prompt-tokens 500
    )

    output_lengths: str | None = setting(
        None,
        help="Output tokens per request: N, uniform:LO:HI, lognormal:MEAN:SIGMA[:CAP] or trace.",
        flag="--output-tokens",
        needs=UNDER_LOAD,
        number_as_text=True,
    )

    trace: str | None = setting(
        None,
        help="CSV of requests (columns arrival_time_s, prompt_tokens, output_tokens).",
    )

    arrival_process: str | None = setting(
        None,
        help="Arrival times: poisson, or trace (the trace's own; default when a trace is given).",
        choices=("poisson", "trace"),
        flag="--arrivals",
        needs=("arrival_rate_per_s", "trace", "demand"),
    )

    requests: int = setting(
        10000,
        help="Requests simulated per instance (with a trace: every row is).",
        unit="requests",
        minimum=10,
        maximum=10_000_000,
        needs=UNDER_LOAD,
    )

    seed: int = setting(
        0,
        help="Seed of the random arrivals and lengths.",
        minimum=0,
        maximum=2**32 - 1,
        needs=UNDER_LOAD,
    )


@section(LOAD, group="target")
class TargetOptions:
    """Latency targets of a deployment under load (``load.targets.Targets``)."""

    slo_ttft_p99_s: float | None = setting(
        None,
        help="Target: 99th percentile of the time to first token.",
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_SECONDS,
        flag="--slo-ttft-p99",
        needs=UNDER_LOAD,
    )

    slo_tpot_p99_s: float | None = setting(
        None,
        help="Target: 99th percentile of the time per output token (after the first).",
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_SECONDS,
        flag="--slo-tpot-p99",
        needs=UNDER_LOAD,
    )

    slo_e2e_p99_s: float | None = setting(
        None,
        help="Target: 99th percentile of the end-to-end latency of a request.",
        unit="seconds",
        minimum=0,
        exclusive_minimum=True,
        maximum=MAX_SECONDS,
        flag="--slo-e2e-p99",
        needs=UNDER_LOAD,
    )


@section(LOAD, group="engine")
class SchedulerOptions:
    """The engine's scheduler: its limits, speculation under load and the prefix cache
    (``load.engine.EngineConfig``; docs/model.md §E1, §E8, §E9)."""

    max_batch_requests: int | None = setting(
        None,
        help="Engine: most requests batched at once (vLLM max_num_seqs; default: the engine"
        " profile's own on the GPU, e.g. TensorRT-LLM 2,048, vLLM V1 256-1,024 by GPU memory; 256"
        " for the ideal engine). With attention data parallelism, each attention rank's under"
        " TensorRT-LLM and vLLM (as they read max_batch_size and max_num_seqs), the instance's"
        " under SGLang.",
        unit="requests",
        minimum=1,
        maximum=65536,
        flag="--max-batch",
        needs=UNDER_LOAD,
    )

    step_token_budget: int | None = setting(
        None,
        help="Engine: most tokens per step, decode plus prompt chunks (vLLM"
        " max_num_batched_tokens; default: the engine profile's own on the GPU, e.g. TensorRT-LLM"
        " 8,192, vLLM V1 2,048-8,192 by GPU memory; 2,048 for the ideal engine).",
        unit="tokens",
        minimum=1,
        maximum=1 << 22,  # the step table of an instance holds at most 2^22 entries
        flag="--step-tokens",
        needs=UNDER_LOAD,
    )

    adp_balance: str | None = setting(
        None,
        help="Engine: TensorRT-LLM's attention-DP balancing as 'WAIT,TIMEOUT' steps"
        " (attention_dp_config: enable_balance, batching_wait_iters, timeout_iters): the ranks'"
        " prompts are held until every rank has one, at most TIMEOUT steps, and WAIT steps more"
        " while every rank decodes, so that the ranks prefill together (TensorRT-LLM's"
        " performance overview runs DeepSeek-R1 with 0,60; each at most 100,000; 'on': the"
        " engine's own, 10,50; default: off, as the engine). Needs --engine trtllm; the export"
        " writes it.",
        needs=UNDER_LOAD,
    )

    tune_engine: bool = setting(
        False,
        help="Capacity (and its export): tune the engine's settings: also plan with steps of"
        " 2,048, 4,096, 8,192 and 16,384 tokens (an attention rank's under attention data"
        " parallelism with TensorRT-LLM and vLLM; the instance's with SGLang) beside the engine's"
        " own and, under TensorRT-LLM with a MoE model and no --adp-balance, each with"
        " attention-DP balancing 0,60 too; keep the cheapest plan, which the export launches"
        " (max_num_tokens, max_num_batched_tokens, --chunked-prefill-size, attention_dp_config)."
        " Each setting tried is one more whole search (about 4 times the CPU for DeepSeek-R1"
        " under TensorRT-LLM).",
        excludes=("step_token_budget",),
    )

    scheduler_steps: int | None = setting(
        None,
        help="Engine: decode steps per scheduler call (vLLM V0's num_scheduler_steps, multi-step"
        " scheduling): requests are admitted and prompts scheduled only between windows of this"
        " many steps (default: the engine profile's own, 1 for every shipped profile).",
        unit="steps",
        minimum=1,
        maximum=1024,
        flag="--scheduler-steps",
        needs=UNDER_LOAD,
    )

    speculation_max_batch: int | None = setting(
        None,
        help="Engine: switch speculation off above this many running requests (vLLM"
        " disable_by_batch_size, TensorRT-LLM max_concurrency; default: never).",
        unit="requests",
        minimum=1,
        maximum=65536,
        flag="--spec-max-batch",
        needs=SPECULATING,
    )

    speculation_schedule: str = setting(
        "fixed",
        help="Engine: speculate with the longest draft (--max-draft) at every batch (fixed, as"
        " vLLM and SGLang), or with the fastest draft length at each batch (by_batch, as"
        " TensorRT-LLM's draft_len_schedule).",
        choices=("fixed", "by_batch"),
        flag="--spec-schedule",
        needs=SPECULATING,
    )

    prefix_caching: bool = setting(
        True,
        help="Engine: keep finished prompts' and answers' KV cache in the memory the running"
        " requests leave (LRU) and reuse it for prompts that start with them (vLLM, SGLang"
        " default).",
    )

    kv_offload_gb: float | None = setting(
        None,
        help="Engine: host memory per GPU that keeps the KV cache of prefixes the GPU evicts,"
        " loaded back for prompts that start with them (LMCache's CPU offload, vLLM's and"
        " SGLang's hierarchical caches; at most the server's host memory per GPU; docs/model.md"
        " §E13; default: none).",
        unit="GB",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e6,
        flag="--kv-offload-gb",
        needs=UNDER_LOAD,
    )

    kv_offload_bandwidth_gb_per_s: float | None = setting(
        None,
        help="Engine: the host tier's bandwidth to each GPU, one direction (default: the GPU's"
        " host link: PCIe Gen5 x16 64 GB/s on HGX parts, NVLink-C2C on Grace ones).",
        unit="GB/s",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e6,
        flag="--kv-offload-bandwidth",
        needs=("kv_offload_gb",),
    )

    kv_disk_gb: float | None = setting(
        None,
        help="Engine: local disk per GPU below the host tier (LMCache's local disk backend,"
        " SGLang's storage tier): prefixes the host tier evicts wait there (docs/model.md §E13).",
        unit="GB",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e7,
        flag="--kv-disk-gb",
        needs=("kv_offload_gb",),
    )

    kv_disk_bandwidth_gb_per_s: float | None = setting(
        None,
        help="Engine: the disk tier's read bandwidth to each GPU (e.g. four NVMe Gen4 drives of"
        " ~7 GB/s read shared by 8 GPUs: 3.5); required with --kv-disk-gb.",
        unit="GB/s",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e6,
        flag="--kv-disk-bandwidth",
        needs=("kv_disk_gb",),
    )

    kv_offload_overlap: bool = setting(
        True,
        help="Engine: a prefix loaded from the host tier overlaps the step it is for, layer by"
        " layer (LMCache's layerwise mode); --no-kv-offload-overlap: the step waits for it.",
        needs=("kv_offload_gb",),
    )


#: The KV-cache tiers' settings (§E13): priced under load; no engine launch ``export`` writes
#: sets them, so it does not take them.
KV_TIER_SETTINGS = (
    "kv_offload_gb",
    "kv_offload_bandwidth_gb_per_s",
    "kv_disk_gb",
    "kv_disk_bandwidth_gb_per_s",
    "kv_offload_overlap",
)


@section(LOAD, group="traffic")
class SharingOptions:
    """Prompts that share a prefix, sessions of several turns, and how the load balancer routes them
    (docs/model.md §E9, §E10)."""

    shared_prefix_tokens: int | None = setting(
        None,
        help="Traffic: every prompt starts with a shared system prompt of this many tokens"
        " (--prompt-tokens is then the rest of the prompt).",
        unit="tokens",
        minimum=1,
        maximum=10_000_000,
        flag="--shared-prefix",
        needs=("arrival_rate_per_s", "demand"),
    )

    shared_prefixes: int = setting(
        1,
        help="Traffic: how many different shared system prompts there are (each session or request"
        " starts with one, at random).",
        minimum=1,
        maximum=1_000_000,
        needs=("shared_prefix_tokens",),
    )

    session_turns: int = setting(
        1,
        help="Traffic: requests per session; each next one is sent after the answer before it"
        " (plus --think-time) and its prompt holds every earlier turn (--prompt-tokens: each new"
        " message).",
        unit="requests",
        minimum=1,
        maximum=1000,
        flag="--turns",
        needs=("arrival_rate_per_s", "demand"),
    )

    think_time_s: float = setting(
        0.0,
        help="Traffic: mean time (exponential) between an answer and the session's next request.",
        unit="seconds",
        minimum=0,
        maximum=MAX_SECONDS,
        flag="--think-time",
        needs=("session_turns",),
    )

    router: str = setting(
        "random",
        help="How the load balancer sends requests to the instances: random, round_robin,"
        " least_outstanding, or prefix_aware (consistent hashing of the session or shared prefix,"
        " with bounded loads).",
        choices=("random", "round_robin", "least_outstanding", "prefix_aware"),
        needs=UNDER_LOAD,
        group="engine",
    )


@section(LOAD, group="plan")
class PoolOptions:
    """The GPUs of the pools of disaggregated serving."""

    prefill_hardware: str | None = setting(
        None,
        help="Disaggregated serving: GPUs of the prefill pool (names, comma-separated; default:"
        " --hardware).",
        needs=("disaggregated", "prefill_gpus", "prefill_instances"),
    )

    decode_hardware: str | None = setting(
        None,
        help="Disaggregated serving: GPUs of the decode pool (names, comma-separated; default:"
        " --hardware).",
        needs=("disaggregated",),
    )


@section(LOAD, group="plan")
class FailureOptions:
    """GPU failures: the capacity they cost and the spare instance that holds the targets
    (``load.failures``; docs/model.md §E11)."""

    failures: bool = setting(
        False,
        help="Capacity: price the expected capacity lost to GPU failures and add the instances"
        " that hold the targets with one instance (a GPU's whole parallel group) down (N+1).",
    )

    gpu_mtbf_hours: float = setting(
        50_000.0,
        help="Mean time between failures of one GPU, hours (default: Llama 3's 419 unexpected"
        " interruptions in 54 days on 16,384 H100s).",
        unit="hours",
        minimum=1,
        maximum=1e9,
        flag="--gpu-mtbf",
        needs=("failures",),
    )

    repair_hours: float = setting(
        24.0,
        help="Hours an instance stays down after one of its GPUs fails (an assumption: give"
        " yours).",
        unit="hours",
        minimum=0,
        exclusive_minimum=True,
        maximum=1e6,
        flag="--repair-time",
        needs=("failures",),
    )


@section(LOAD, group="demand")
class DemandOptions:
    """Capacity for a demand curve: reserved, on-demand and spot capacity by the hour
    (``load.demand``; docs/model.md §G5)."""

    demand: str | None = setting(
        None,
        help="CSV of requests per second by hour (columns hour, requests_per_s): the cheapest mix"
        " of reserved and on-demand (or spot) capacity meeting the targets at every hour.",
        excludes=("arrival_rate_per_s", "trace"),
    )

    reserved_basis: str = setting(
        "owned",
        help="Price basis of the reserved capacity of a demand plan (owned, or a committed rate).",
        choices=PRICE_BASES,
        needs=("demand",),
    )

    burst_basis: str = setting(
        "on-demand",
        help="Price basis of the capacity a demand plan buys by the hour above its reserved base.",
        choices=PRICE_BASES,
        needs=("demand",),
    )

    spot_interruption_rate: float | None = setting(
        None,
        help="Also buy spot capacity (the hardware file's spot price) above the reserved base;"
        " this share of it is lost to interruptions each hour and bought again.",
        minimum=0,
        maximum=0.99,
        flag="--spot-interruption",
        needs=("demand",),
    )

    autoscale: str | None = setting(
        None,
        help="Serve the curve with instances that scale (hpa: target utilisation; keda:"
        " outstanding requests; planner: SLO headroom on the predicted load), each new one"
        " paid from when it is asked for and serving after its start-up: the policy's best"
        " target beside the hourly plan.",
        choices=AUTOSCALERS,
        needs=("demand",),
    )

    weights_source: str = setting(
        "local-ssd",
        help="Where a new instance's weights come from (published bandwidths: load/startup.yaml).",
        choices=WEIGHT_SOURCES,
        flag="--weights-from",
        needs=("autoscale",),
    )

    startup_s: float | None = setting(
        None,
        help="A new instance's start-up delay, instead of the published figures'.",
        unit="seconds",
        minimum=0,
        maximum=86_400,
        flag="--startup-time",
        needs=("autoscale",),
    )

    scale_down_window_s: float = setting(
        300.0,
        help="Scale-down stabilisation window: scale down only to the most instances wished"
        " for over this time (Kubernetes HPA's default, 300 s).",
        unit="seconds",
        minimum=0,
        maximum=86_400,
        flag="--scale-down-window",
        needs=("autoscale",),
    )

    miss_budget: float = setting(
        0.01,
        help="Largest share of the day's requests that may miss their targets while capacity"
        " arrives (the search's limit).",
        minimum=0,
        maximum=1,
        flag="--miss-budget",
        needs=("autoscale",),
    )


@section(LOAD)
class DeploymentOptions:
    """The instances of a given deployment, and the interval a capacity plan is sized for
    (docs/model.md §F12)."""

    instances: int = setting(
        1,
        help="Engine instances of the deployment (behind a random load balancer).",
        minimum=1,
        maximum=100_000,
        needs=("gpus",),
    )

    prefill_instances: int | None = setting(
        None,
        help="Instances of a separate prefill pool (disaggregated serving).",
        minimum=1,
        maximum=100_000,
        needs=("gpus",),
    )

    disaggregated: bool = setting(
        False,
        help="Also consider separate prefill and decode pools.",
    )

    confidence: float = setting(
        0.9,
        help="Also size the plan for the targets to hold at the pessimistic end of this interval"
        f" of the expected figures ({' or '.join(f'{v / 100:g}' for v in INTERVAL_LEVELS)};"
        " docs/model.md §F12).",
        levels=tuple(level / 100 for level in INTERVAL_LEVELS),
    )
