"""A launch plan written as the engines take it: ``vllm serve`` (copies behind sglang-router;
NVIDIA Dynamo's workers for prefill/decode pools, and its DynamoGraphDeployment manifest for
Kubernetes on NVIDIA parts, a Deployment of the ROCm image on AMD ones), ``python -m
sglang.launch_server`` (with sglang-router for copies and pools), ``trtllm-serve`` with its
extra LLM-API YAML (and ``trtllm-serve disaggregated``). Every copy of a worker runs on GPUs of
its own, on the nodes ``export.nodes`` places it on; a copy larger than a node starts as its
engine starts one over several. Every flag and field name comes from ``launch_flags.yaml``.

``commands(plan)`` gives each worker's argument vector (what the tests check against the
engines' own argument definitions); ``export.bundle.render`` the files an export writes.
"""

from __future__ import annotations

import json

from ..errors import SpecError
from ..measured.layouts import attention_words
from .eplb import sglang_arguments, trtllm_balancer, vllm_arguments
from .experts import trtllm_moe_backend, uneven_experts
from .launch import LaunchPlan, Worker, engine_names
from .nodes import (
    Command,
    Place,
    address,
    marked,
    node_count,
    places,
    script,
    shown,
)
from .overlap import sglang_arguments as sglang_overlap
from .overlap import sglang_graph_arguments, vllm_environment
from .overlap import vllm_arguments as vllm_overlap
from .refusals import online_quantization

#: The port the front (router, disaggregated server, Dynamo frontend) listens on; workers
#: take the ports after it.
FRONT_PORT = 8000
#: Dynamo release whose workers and manifest the vLLM export writes (its vllm-runtime image
#: runs vLLM 0.11; components/backends/vllm/deploy/disagg.yaml of ai-dynamo/dynamo 0.6.1).
DYNAMO_VERSION = "0.6.1"
#: The port of the rendezvous a copy spanning nodes meets at on its first node (SGLang's
#: ``--dist-init-addr``, vLLM's ``--data-parallel-rpc-port``; Ray's head listens on 6379).
RENDEZVOUS_PORT = 20000
RAY_PORT = 6379
#: The first prefill copy's bootstrap port (SGLang's default, ``disaggregation_bootstrap_port``);
#: each further copy takes the next, and the router is told each copy's.
BOOTSTRAP_PORT = 8998
#: The Kubernetes device resource of each platform's GPUs (NVIDIA's and AMD's device plugins).
DEVICE_RESOURCE = {"cuda": "nvidia.com/gpu", "rocm": "amd.com/gpu"}


def _kv_dtype(names: dict, plan: LaunchPlan) -> str:
    bits = int(round(plan.setting.precision.bytes_per_kv_element * 8))
    table = {int(k): v for k, v in names["kv_cache_dtype"].items()}
    if bits not in table:
        raise SpecError(
            "argument",
            "kv_cache_bits",
            f"{bits}-bit KV cache",
            f"{plan.engine} takes {sorted(table)} bits",
        )
    return str(table[bits])


def _quantization(names: dict, plan: LaunchPlan) -> str | None:
    """The flag value of the engine's online quantization (``refusals.online_quantization``)."""
    return online_quantization(plan.setting, plan.checkpoint, names)


def _fraction(plan: LaunchPlan) -> str:
    from ..specs.engine import load_engine

    return f"{load_engine(plan.engine).kv_cache_memory_fraction:g}"


def _port(i: int) -> int:
    return FRONT_PORT + 1 + i


def _fronted(plan: LaunchPlan) -> bool:
    """Whether requests reach the workers through a front (pools, or several copies)."""
    return plan.disaggregated or sum(w.count for w in plan.workers) > 1


def _ports(plan: LaunchPlan) -> dict:
    """The ports of every copy of every worker, in order (a lone server takes the front's)."""
    if not _fronted(plan):
        return {plan.workers[0].role: [FRONT_PORT]}
    out, i = {}, 0
    for w in plan.workers:
        out[w.role] = [_port(i + k) for k in range(w.count)]
        i += w.count
    return out


def placements(plan: LaunchPlan) -> dict[str, list[Place]]:
    """Where every copy of every worker runs, in the order of ``_ports`` (``nodes.places``):
    under vLLM a data-parallel rank (its tensor and pipeline GPUs) stays on one node."""
    return places(plan.workers, plan.setting.gpu, _fronted(plan), _node_share(plan.engine))


def _node_share(engine: str):
    """Whether ``engine`` starts a copy of worker ``w`` with ``g`` GPUs on each of its nodes:
    vLLM keeps a data-parallel rank (an engine of its own) on its node's GPUs; SGLang 0.5.3
    gives each node whole pipeline stages (``--pp-size`` / ``--nnodes`` of them) or an equal
    share of one stage's tensor group, reading its ranks as nnodes_per_tp_group = nnodes //
    pp_size and pp_size_per_node = pp_size // nnodes (sgl-project/sglang v0.5.3,
    python/sglang/srt/entrypoints/engine.py:782-801, managers/data_parallel_controller.py:
    267-303): TP12 PP2 over three nodes of 8 would start twelve ranks on each, and a third
    stage; TensorRT-LLM's MPI ranks take any even split."""
    if engine == "vllm":
        return lambda w, g: (
            w.attention_dp <= 1 or g % (w.tensor // w.attention_dp * w.pipeline) == 0
        )
    if engine == "sglang":
        return lambda w, g: g % w.tensor == 0 or w.tensor % g == 0
    return lambda w, g: True


def _visible(ids) -> tuple[tuple[str, str], ...]:
    """The environment that shows a copy only its GPUs (vLLM reads CUDA_VISIBLE_DEVICES on
    ROCm too: the device control variable of its ROCm platform, vllm/platforms/rocm.py)."""
    return () if ids is None else (("CUDA_VISIBLE_DEVICES", ",".join(map(str, ids))),)


def platform(plan: LaunchPlan) -> str:
    """The software platform of the plan's GPUs: ``rocm`` (AMD Instinct) or ``cuda``."""
    from ..specs.platforms import platform_of

    return platform_of(plan.setting.gpu)


def _refuse_layout(plan: LaunchPlan, w: Worker, why: str, fix: str = ""):
    raise SpecError(
        "argument",
        "--engine",
        f"{plan.engine} {plan.version} cannot run the {w.role} layout TP{w.tensor} PP{w.pipeline} "
        f"attention-DP{w.attention_dp} EP{w.expert} the plan chose: {why}",
        fix
        or "export for another engine, or plan under the achievable preset, which chooses "
        "layouts the engine runs",
    )


#: Where a layout larger than a node is refused: the engines whose copies span nodes.
_SPANNING_FIX = "export for sglang or trtllm, whose copies span nodes, or plan copies of one node"


def _limits(names: dict, plan: LaunchPlan, w: Worker) -> list[str]:
    """The worker's batch, token budget, max model length, memory fraction, KV-cache type and
    (online) quantization, as vLLM and SGLang take them."""
    f = names["flags"]
    out = [
        f["max_batch"], str(w.batch),
        f["token_budget"], str(w.token_budget),
        f["max_model_len"], str(plan.max_model_len),
        f["memory_fraction"], _fraction(plan),
        f["kv_cache_dtype"], _kv_dtype(names, plan),
    ]  # fmt: skip
    quant = _quantization(names, plan)
    off = [] if plan.prefix_caching else [f["prefix_caching_off"]]  # the plan's cache reuse
    return out + ([f["quantization"], quant] if quant else []) + off


# --- vLLM (with Dynamo for pools and Kubernetes) -----------------------------------------------
def vllm_args(plan: LaunchPlan, w: Worker) -> list[str]:
    names = engine_names("vllm")
    f = names["flags"]
    tp = w.tensor
    args = []
    if w.attention_dp > 1:
        if w.expert <= 1:
            _refuse_layout(
                plan,
                w,
                "attention data parallelism needs expert-parallel MoE layers"
                + uneven_experts(plan.setting, w.tensor),
                "export for sglang or trtllm, which launch part of the group, or choose a point"
                " whose tensor degree divides the experts",
            )
        tp = w.tensor // w.attention_dp
        args += [f["data_attention"], str(w.attention_dp)]
    args += [f["tensor"], str(tp), f["pipeline"], str(w.pipeline)]
    if w.expert > 1:
        args.append(f["expert_switch"])
    args += vllm_arguments(plan, names)  # EPLB and its redundant experts (eplb.py)
    args += vllm_overlap(plan, names)  # two-batch overlap (overlap.py; its env: _overlap_env)
    args += _limits(names, plan, w)
    if plan.speculation:
        kind, draft, tokens = plan.speculation
        spec = {"method": names["speculative_method"][kind], "num_speculative_tokens": int(tokens)}
        if draft:
            spec["model"] = draft
        args += [f["speculative"], json.dumps(spec, separators=(",", ":"))]
    return args


def _vllm(plan: LaunchPlan) -> list[Command]:
    """Pools: Dynamo's own workers (``dynamo.vllm``, which register with its frontend); copies
    of a server: plain ``vllm serve`` on ports of their own, behind sglang-router; a copy
    spanning nodes: vLLM's data-parallel ranks on each node, or a Ray cluster."""
    names = engine_names("vllm")
    f = names["flags"]
    ports, placed = _ports(plan), placements(plan)
    nodes = node_count(placed)
    if plan.disaggregated and platform(plan) != "cuda":
        raise SpecError(
            "argument",
            "engine",
            f"vLLM's prefill/decode pools run as NVIDIA Dynamo {DYNAMO_VERSION} workers, "
            f"whose images are CUDA builds: none runs on {plan.setting.gpu.name}",
            "export the pools for sglang, or a plan without them",
        )
    out = []
    for w in plan.workers:
        if plan.disaggregated:
            argv = ["python3", "-m", "dynamo.vllm", "--model", plan.checkpoint]
            argv += vllm_args(plan, w)
            if w.role == "prefill":
                argv.append("--is-prefill-worker")
            for place in placed[w.role]:
                if place.nodes > 1:
                    why = (
                        f"a Dynamo {DYNAMO_VERSION} vLLM worker of {w.gpus} GPUs spans nodes "
                        f"of {plan.setting.gpu.gpus_per_host}, which this export does not launch"
                    )
                    _refuse_layout(plan, w, why, _SPANNING_FIX)
                env = _visible(place.ids) + _overlap_env(plan, w) + _dynamo_env(place.node, nodes)
                out.append(Command(w.role, 1, tuple(argv), env=env, node=place.node))
            continue
        argv = vllm_serve(plan, w)
        for port, place in zip(ports[w.role], placed[w.role]):
            at = (f["port"], str(port))
            if place.nodes == 1:
                env = _visible(place.ids) + _overlap_env(plan, w)
                out.append(Command(w.role, 1, (*argv, *at), env=env, node=place.node))
            elif w.attention_dp > 1:
                out += _vllm_data_parallel_nodes(plan, w, argv, at, place, nodes)
            else:
                out += _vllm_ray_nodes(plan, w, argv, at, place, nodes)
    if plan.disaggregated:
        front = ("python3", "-m", "dynamo.frontend")  # listens on its default port, 8000
        out.insert(0, Command("frontend", 1, front))
    elif _fronted(plan):
        out.insert(0, _router(names["router"], _urls(plan, placed, "server", nodes)))
    return out


def _overlap_env(plan: LaunchPlan, w: Worker) -> tuple[tuple[str, str], ...]:
    """The environment of a vLLM worker's DeepEP kernels under two-batch overlap (none
    without it: ``overlap.vllm_environment``)."""
    return vllm_environment(plan, w.role, engine_names("vllm"))


def _dynamo_env(node: int, nodes: int) -> tuple[tuple[str, str], ...]:
    """Where a Dynamo process off node 0 finds etcd and NATS (Dynamo's runtime reads
    ``ETCD_ENDPOINTS`` and ``NATS_SERVER``, defaults on localhost)."""
    if node == 0:
        return ()
    head = address(0, nodes)
    return (("ETCD_ENDPOINTS", f"http://{head}:2379"), ("NATS_SERVER", f"nats://{head}:4222"))


def _vllm_data_parallel_nodes(plan, w: Worker, argv, at, place: Place, nodes: int) -> list:
    """A copy of attention-DP ranks over whole nodes: each node runs its share of the ranks,
    the first with the API server, the others ``--headless`` from their first rank on; all
    meet at the first node's address (vLLM 0.11's docs, serving/data_parallel_deployment.md)."""
    f = engine_names("vllm")["flags"]
    if w.attention_dp % place.nodes:  # a rank larger than a node: no placement keeps it whole
        tp = w.tensor // w.attention_dp
        why = (
            f"its {w.attention_dp} data-parallel ranks of TP{tp}"
            + (f" PP{w.pipeline}" if w.pipeline > 1 else "")
            + f" do not split over {place.nodes} nodes of {place.gpus_per_node} GPUs: vLLM "
            "runs each rank on one node"
        )
        _refuse_layout(plan, w, why, _SPANNING_FIX)
    local = w.attention_dp // place.nodes
    meet = [
        f["data_local"], str(local),
        f["data_address"], address(place.node, nodes),
        f["data_rpc_port"], str(RENDEZVOUS_PORT),
    ]  # fmt: skip
    env = _overlap_env(plan, w)
    out = [Command(w.role, 1, (*argv, *meet, *at), env=env, node=place.node)]
    for k in range(1, place.nodes):
        rest = (f["headless"], f["data_start_rank"], str(k * local))
        out.append(
            Command(
                f"{w.role} (ranks of node {k} of the copy)",
                1,
                (*argv, *meet, *rest),
                env=env,
                node=place.node + k,
            )
        )
    return out


def _vllm_ray_nodes(plan, w: Worker, argv, at, place: Place, nodes: int) -> list:
    """A copy of tensor and pipeline stages over whole nodes: a Ray cluster of its nodes,
    headed on the first, where ``vllm serve`` runs its workers (vLLM 0.11's docs,
    serving/parallelism_scaling.md); vLLM waits for every node's GPUs to join."""
    ray = engine_names("vllm")["ray"]
    r = ray["flags"]
    head = address(place.node, nodes)

    def here(k: int) -> tuple[str, str]:  # the node's own address, as Ray and vLLM see it
        return (r["node_ip"], address(place.node + k, nodes))

    start = (*ray["launch"], r["head"], r["port"], str(RAY_PORT), *here(0))
    host = ((ray["host_ip_env"], head), *_overlap_env(plan, w))
    out = [
        Command("Ray head", 1, start, node=place.node, foreground=True),
        Command(w.role, 1, (*argv, *on_ray(), *at), env=host, node=place.node),
    ]
    for k in range(1, place.nodes):
        join = (*ray["launch"], r["address"], f"{head}:{RAY_PORT}", *here(k), r["block"])
        out.append(Command("Ray worker", 1, join, node=place.node + k))
    return out


def vllm_serve(plan: LaunchPlan, w: Worker) -> list[str]:
    """``vllm serve`` of the plan's checkpoint with the worker's arguments (no port)."""
    return [*engine_names("vllm")["launch"], plan.checkpoint, *vllm_args(plan, w)]


def on_ray() -> tuple[str, str]:
    """The argument that runs a ``vllm serve`` copy's stages on Ray's cluster of its nodes."""
    return (engine_names("vllm")["flags"]["executor"], "ray")


def _urls(plan: LaunchPlan, placed: dict, role: str, nodes: int) -> list[str]:
    """The URLs of every copy of ``role``, in order."""
    return [
        f"http://{address(p.node, nodes)}:{port}"
        for port, p in zip(_ports(plan)[role], placed[role])
    ]


def _router(r: dict, urls: list[str]) -> Command:
    """sglang-router on the front port (node 0), in front of servers at ``urls``."""
    argv = [*r["launch"], r["flags"]["workers"], *urls]
    argv += [r["flags"]["host"], "0.0.0.0", r["flags"]["port"], str(FRONT_PORT)]
    return Command("router", 1, tuple(argv))


# --- SGLang (with sglang-router for pools) -----------------------------------------------------
def _sglang(plan: LaunchPlan) -> list[Command]:
    names = engine_names("sglang")
    f = names["flags"]
    ports, placed = _ports(plan), placements(plan)
    nodes = node_count(placed)
    out = []
    for w in plan.workers:
        if w.tensor % w.expert:  # moe_tp_size = tp_size // ep_size (parallel_state.py)
            _refuse_layout(plan, w, "its expert-parallel size divides the tensor-parallel size")
        argv = [*names["launch"], names["model"], plan.checkpoint, f["tensor"], str(w.tensor)]
        if w.pipeline > 1:
            argv += [f["pipeline"], str(w.pipeline)]
        if w.attention_dp > 1:
            argv += [f["attention_dp_switch"], f["data_attention"], str(w.attention_dp)]
        if w.expert > 1:
            argv += [f["expert"], str(w.expert)]
        argv += sglang_arguments(plan, names)  # EPLB and its redundant experts (eplb.py)
        argv += sglang_overlap(plan, names)  # two-batch overlap over DeepEP (overlap.py)
        argv += sglang_graph_arguments(plan, w, names)  # its CUDA graphs under DeepEP
        argv += _limits(names, plan, w)
        if plan.speculation:
            kind, draft, tokens = plan.speculation
            argv += [
                f["spec_algorithm"], names["speculative_algorithm"][kind],
                f["spec_steps"], str(tokens),
                f["spec_topk"], "1",
                f["spec_draft_tokens"], str(tokens + 1),
            ]  # fmt: skip
            if draft:
                argv += [f["spec_draft_model"], draft]
        if w.role != "server":
            argv += [f["disagg_mode"], w.role, f["disagg_backend"], names["disagg_backend"]]
        if w.role == "decode" and w.attention_dp > 1:  # asserted at start (server_args.py)
            argv.append(f["prefill_round_robin"])
        for i, (port, place) in enumerate(zip(ports[w.role], placed[w.role])):
            # its GPUs: ids[0] onwards
            first = [f["base_gpu"], str(place.ids[0])] if place.ids else []
            at = (f["host"], "0.0.0.0", f["port"], str(port))
            if w.role == "prefill":  # copies on one node each need their own bootstrap server
                first += [f["bootstrap_port"], str(BOOTSTRAP_PORT + i)]
            if place.nodes == 1:
                out.append(Command(w.role, 1, (*argv, *first, *at), node=place.node))
                continue
            # every node of the copy runs the same command but its rank; node 0 of the copy
            # serves HTTP (SGLang's docs: multi-node deployment)
            meet = f"{address(place.node, nodes)}:{RENDEZVOUS_PORT}"
            for k in range(place.nodes):
                ranks = (
                    f["dist_init"],
                    meet,
                    f["nnodes"],
                    str(place.nodes),
                    f["node_rank"],
                    str(k),
                )
                role = w.role if k == 0 else f"{w.role} (node {k} of the copy)"
                out.append(Command(role, 1, (*argv, *first, *ranks, *at), node=place.node + k))
    r = names["router"]
    if plan.disaggregated:
        argv = [*r["launch"], r["flags"]["pd"]]
        for i, url in enumerate(_urls(plan, placed, "prefill", nodes)):
            argv += [r["flags"]["prefill"], url, str(BOOTSTRAP_PORT + i)]
        for url in _urls(plan, placed, "decode", nodes):
            argv += [r["flags"]["decode"], url]
        argv += [r["flags"]["host"], "0.0.0.0", r["flags"]["port"], str(FRONT_PORT)]
        out.insert(0, Command("router", 1, tuple(argv)))
    elif _fronted(plan):
        out.insert(0, _router(r, _urls(plan, placed, "server", nodes)))
    return out


# --- TensorRT-LLM ------------------------------------------------------------------------------
def trtllm_options(plan: LaunchPlan, w: Worker) -> dict:
    """The extra LLM-API options (``--config``) of one worker: TorchLlmArgs fields and their
    nested configs (tensorrt_llm/llmapi/llm_args.py of TensorRT-LLM 1.2.1)."""
    from ..specs.engine import load_engine

    names = engine_names("trtllm")
    api = names["llm_api"]
    if 1 < w.attention_dp < w.tensor:
        _refuse_layout(
            plan, w, "its attention data parallelism spans the whole tensor group or none"
        )
    kv, graph = names["kv_cache_config"], names["cuda_graph_config"]
    out: dict = {
        api["attention_dp"]: w.attention_dp > 1,
        # graphs up to the batch, padded up to the nearest (CudaGraphConfig: the sizes are
        # generated from max_batch_size; enable_padding rounds a batch up to one)
        api["cuda_graph"]: {
            graph["max_batch"]: int(min(w.batch, load_engine("trtllm").cuda_graph_max_batch)),
            graph["padding"]: True,
        },
        api["chunked_prefill"]: chunked_prefill(plan, w),
        api["kv_cache"]: {
            kv["free_fraction"]: float(_fraction(plan)),
            kv["block_reuse"]: bool(plan.prefix_caching),  # reuse as the plan priced it
            kv["dtype"]: _kv_dtype(names, plan),
        },
    }
    if plan.speculation:
        out[api["speculative"]] = _trtllm_speculation(plan, names)
    if plan.adp_balancing is not None and w.attention_dp > 1:  # the balancing the plan ran
        adp = names["attention_dp_config"]
        wait, timeout = plan.adp_balancing
        out[api["adp_balance"]] = {adp["enable"]: True, adp["wait"]: wait, adp["timeout"]: timeout}
    if w.role != "server":  # the KV cache's transfer between the pools
        c = names["cache_transceiver_config"]
        out[api["cache_transceiver"]] = {
            c["backend"]: names["cache_transceiver_backend"],
            c["buffer_tokens"]: plan.max_model_len,
        }
    if w.role == "prefill":  # disaggregated context servers run without it (1.2.1's docs)
        out[api["overlap_off"]] = True
    moe: dict = {}
    balancer = trtllm_balancer(plan, names)
    backend = trtllm_moe_backend(plan.setting, names)  # the priced kernel's (MXFP4 experts)
    if backend:
        moe[names["moe_config"]["backend"]] = backend
    if balancer:  # MoeConfig.load_balancer takes the MoeLoadBalancerConfig inline
        moe[names["moe_config"]["load_balancer"]] = balancer
    if moe:
        out[api["moe"]] = moe
    return out


def chunked_prefill(plan: LaunchPlan, w: Worker) -> bool:
    """Whether a TensorRT-LLM worker chunks its prompts: as the plan's engine profile priced
    them (``EngineProfile.prefill``: TensorRT-LLM's default is whole prompts, as
    ``enable_chunked_prefill`` defaults to False), and also where a prompt may be longer than
    a step's tokens (``max_num_tokens``), which the engine refuses without chunking."""
    prof = plan.setting.assumptions.profile()
    mode = prof.prefill if prof is not None else "chunked"  # the ideal engine chunks
    return mode in ("chunked", "chunked_separate") or _longest_prompt(plan) > w.token_budget


def _longest_prompt(plan: LaunchPlan) -> int:
    return plan.longest_prompt or plan.max_model_len


def _chunking_note(plan: LaunchPlan) -> list[str]:
    """A line where a TensorRT-LLM worker chunks prompts the plan priced whole."""
    prof = plan.setting.assumptions.profile()
    if plan.engine != "trtllm" or prof is None or prof.prefill not in ("whole", "separate"):
        return []
    over = [w for w in plan.workers if chunked_prefill(plan, w)]
    if not over:
        return []
    return [
        f"enable_chunked_prefill is on: a prompt of up to {_longest_prompt(plan):,} tokens is "
        f"longer than a step's {over[0].token_budget:,} (max_num_tokens), which TensorRT-LLM "
        "takes only in chunks; the plan priced prompts that fit a step whole, so the "
        "engine's chunks of them may move its TTFT and TPOT a little"
    ]


def _trtllm_speculation(plan: LaunchPlan, names: dict) -> dict:
    """The speculative_config of the plan's speculation (DecodingBaseConfig.from_dict picks the
    class by decoding_type): MTP's layers, else the draft length, and the draft's or EAGLE
    head's folder (``speculative_model``)."""
    kind, draft, tokens = plan.speculation  # type: ignore[misc]
    f = names["speculative_config"]
    spec: dict = {f["type"]: names["speculative_type"][kind]}
    spec[f["mtp_layers"] if kind == "mtp" else f["draft_len"]] = int(tokens)
    if draft:  # read from the local folder the script downloads it to (``_trtllm``)
        spec[f["model"]] = f"./{TRTLLM_DRAFT_DIR}"
    return spec


#: Where a TensorRT-LLM launch puts its draft model: ``speculative_model``
#: takes a Hub id or a local folder (DecodingBaseConfig, tensorrt_llm/llmapi/llm_args.py of
#: 1.2.1); the script fetches it into this folder on each node before the servers start, so
#: that every rank of a copy finds it there.
TRTLLM_DRAFT_DIR = "draft-model"


def _draft_fetches(plan: LaunchPlan, placed: dict) -> list[Command]:
    """The draft model's download on every node a worker of ``plan`` runs on (none without a
    draft), with huggingface_hub's ``snapshot_download``, which TensorRT-LLM installs (a copy
    over several nodes is refused with a draft: ``refusals.speculation_launches``)."""
    if plan.speculation is None or not plan.speculation[1]:
        return []
    on = sorted({n for ps in placed.values() for p in ps for n in range(p.node, p.node + p.nodes)})
    code = (
        "from huggingface_hub import snapshot_download; "
        f"snapshot_download({json.dumps(plan.speculation[1])}, "
        f"local_dir={json.dumps(TRTLLM_DRAFT_DIR)})"  # (double quotes: one shell quoting)
    )
    return [Command("draft model", 1, ("python3", "-c", code), node=n, foreground=True) for n in on]


def _trtllm(plan: LaunchPlan) -> list[Command]:
    import yaml

    names = engine_names("trtllm")
    f = names["flags"]
    ports, placed = _ports(plan), placements(plan)
    nodes = node_count(placed)
    out = _draft_fetches(plan, placed)
    for w in plan.workers:
        file = f"trtllm-{w.role}.yaml"
        argv = [
            *names["launch"],
            plan.checkpoint,
            f["backend"],
            "pytorch",
            f["tensor"],
            str(w.tensor),
        ]
        argv += [f["pipeline"], str(w.pipeline)]
        if w.expert > 1:
            argv += [f["expert"], str(w.expert)]
        argv += [
            f["max_batch"], str(w.batch),
            f["token_budget"], str(w.token_budget),
            f["max_model_len"], str(plan.max_model_len),
            f["memory_fraction"], _fraction(plan),
            f["extra"], file,
        ]  # fmt: skip
        files = {file: yaml.safe_dump(trtllm_options(plan, w), sort_keys=False)}
        for port, place in zip(ports[w.role], placed[w.role]):
            full = (*argv, f["host"], "0.0.0.0", f["port"], str(port))
            if place.nodes > 1:  # MPI starts every rank of the copy from its first node
                full = (
                    *_mpi(plan, place, nodes),
                    *full,
                    f["gpus_per_node"],
                    str(place.gpus_per_node),
                )
            out.append(Command(w.role, 1, full, dict(files), _visible(place.ids), place.node))
    if plan.disaggregated:
        config = {
            "hostname": "localhost",
            "port": FRONT_PORT,
            "backend": "pytorch",
            "context_servers": {
                "num_instances": len(ports["prefill"]),
                "urls": [
                    shown(u.removeprefix("http://")) for u in _urls(plan, placed, "prefill", nodes)
                ],
            },
            "generation_servers": {
                "num_instances": len(ports["decode"]),
                "urls": [
                    shown(u.removeprefix("http://")) for u in _urls(plan, placed, "decode", nodes)
                ],
            },
        }
        # written with the addresses as the script names them, then marked for it to fill in
        # (YAML would escape the marks; nothing else in this file is a user's text)
        files = {"trtllm-disagg.yaml": marked(yaml.safe_dump(config, sort_keys=False))}
        out.insert(
            0,
            Command(
                "disaggregated server", 1, (*names["disaggregated"], "trtllm-disagg.yaml"), files
            ),
        )
    elif _fronted(plan):
        out.insert(0, _router(names["router"], _urls(plan, placed, "server", nodes)))
    return out


def _mpi(plan: LaunchPlan, place: Place, nodes: int) -> tuple[str, ...]:
    """The launcher of a TensorRT-LLM copy over whole nodes: Open MPI's ``mpirun`` with one
    rank a GPU on each of its nodes, through ``trtllm-llmapi-launch`` (TensorRT-LLM's docs:
    multi-node serving); the other nodes need only be reachable by ``mpirun`` (ssh)."""
    mpi = engine_names("trtllm")["multi_node"]
    per = place.gpus_per_node
    hosts = ",".join(f"{address(place.node + k, nodes)}:{per}" for k in range(place.nodes))
    return (
        *mpi["launch"], mpi["root"], mpi["hosts"], hosts, mpi["ranks"], str(per * place.nodes),
        *mpi["wrapper"],
    )  # fmt: skip


def commands(plan: LaunchPlan) -> list[Command]:
    """Every process of the plan, front first."""
    return {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}[plan.engine](plan)


def _header(plan: LaunchPlan) -> list[str]:
    s = plan.setting
    lines = [
        f"{plan.engine} {plan.version}: {s.model.name} on {plan.gpus} x {s.gpu.name}, from a {plan.source} plan",
        f"checkpoint {plan.checkpoint}; weights {s.precision.weight_bits:g}-bit, KV cache "
        f"{s.precision.bytes_per_kv_element * 8:g}-bit; max model length {plan.max_model_len:,} tokens",
        "memory check (the model's accounting under the engine's profile, docs/model.md §F8):",
        *[f"  {w.count} x {w.memory.describe()}" for w in plan.workers],
        *plan.notes,
        *_chunking_note(plan),
    ]
    if plan.disaggregated and plan.engine == "vllm":
        lines += [
            f"pools run as NVIDIA Dynamo {DYNAMO_VERSION} workers (dynamo.vllm takes vLLM's engine arguments)",
            "Dynamo's etcd and NATS run on node 0 first (`docker compose -f deploy/docker-compose.yml "
            "up -d` in Dynamo's repository)",
        ]
    placed = placements(plan)
    if any(p.nodes > 1 for ps in placed.values() for p in ps):
        lines.append(_spanning_note(plan))
    per, taken = plan.setting.gpu.gpus_per_host, node_count(placed)
    used = sum(w.count * w.gpus for w in plan.workers)
    if taken > 1 and taken * per > used:  # whole servers, beside the GPUs the plan prices
        lines.append(
            f"its {used} GPUs take {taken} nodes of {per}: {taken * per - used} "
            f"GPU{'s' * (taken * per - used > 1)} left idle, which the plan's cost does not count"
        )
    if plan.checkpoint != s.model.hf_repository:
        lines.append(
            f"{s.precision.weight_bits:g}-bit weights: {plan.checkpoint} must hold them (the "
            "engine reads its format)"
        )
    return lines


def _spanning_note(plan: LaunchPlan) -> str:
    """How the plan's copies larger than a node start, for its engine."""
    how = {
        "sglang": "each of its nodes runs the copy's command with its own --node-rank",
        "trtllm": "mpirun on its first node starts every rank over ssh (Open MPI on each node)",
        "vllm": "its nodes run their share of its data-parallel ranks, or join a Ray cluster "
        "headed on its first node (Ray >= 2.48, which vLLM 0.11 installs; vLLM waits up to 30 "
        "minutes for the other nodes' GPUs)",
    }[plan.engine]
    return f"a copy larger than a node of {plan.setting.gpu.gpus_per_host} GPUs takes whole nodes: {how}"


def launch_script(plan: LaunchPlan, notes: tuple[str, ...] = (), processes=None) -> str:
    """The shell script of every process (``processes``: ``commands(plan)``, given where the
    caller has them): one node's, or every node's under its NODE_RANK; ``notes`` end its
    header."""
    return script(
        [*_header(plan), *notes],
        commands(plan) if processes is None else processes,
        node_count(placements(plan)),
        plan.setting.gpu.gpus_per_host,
        FRONT_PORT,
    )


def parallelism(w: Worker, moe: bool = False) -> str:
    """The layout as the measured-results format writes it ("TP8", "TP4PP2", "TP8 (EP8,
    attn-DP)", "TP8 (EP8, DP2 attn-DP)": attention over two ranks of TP4), read back by
    ``compare-measured`` as the same layout; a mixture of experts (``moe``) always states its
    expert degree ("TP12PP2 (EP4, DP6 attn-DP)", "TP8 (EP1)"): a layout without one is read as
    splitting the experts once batches are large, which a launch does not."""
    text = f"TP{w.tensor}" + (f"PP{w.pipeline}" if w.pipeline > 1 else "")
    extra = [f"EP{w.expert}"] if w.expert > 1 or moe else []
    words = attention_words(w.tensor, w.attention_dp)
    if words:
        extra.append(" ".join(words))
    return text + (f" ({', '.join(extra)})" if extra else "")
