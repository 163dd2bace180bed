"""Exported plans larger than a node launch as written on every node they take: each node runs
the one launch.sh told its place (``NODE_RANK``) and the nodes' addresses (``NODE_ADDRS``),
under stand-in executables that record their arguments; the records are checked against the
engines' multi-node launches (SGLang's ranks, TensorRT-LLM under mpirun, vLLM on Ray or its
data-parallel ranks) and every flag against the tools' own argument records."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from test_launch_scripts import LLAMA_FP8, RECORDER, TRT_FP8, _calls, _stand_ins, _value

from inference_econ import api
from inference_econ.errors import SpecError
from inference_econ.export import bundle, nodes
from inference_econ.export import engine_configs as ec
from inference_econ.specs.hardware import load_hardware

FLAGS = Path(__file__).parent / "data" / "engine_flags"
ADDRS = ("10.0.0.1", "10.0.0.2")


def record(name: str) -> dict:
    return json.loads((FLAGS / name).read_text())


def _run_nodes(tmp_path: Path, plan, addrs=ADDRS) -> list[list[dict]]:
    """Run the plan's launch.sh on each node (a folder of its own) under the stand-ins, with
    ray and mpirun among them; each node's calls, and the files each node's script wrote."""
    out = []
    for rank in range(len(addrs)):
        folder = tmp_path / f"node{rank}"
        folder.mkdir()
        env = _stand_ins(folder)
        for name in ("ray", "mpirun"):
            tool = folder / "bin" / name
            tool.write_text(RECORDER.replace('"$PROG"', name))
            tool.chmod(0o755)
        for name, text in bundle.render(plan).items():
            (folder / name).write_text(text)
        env |= {"NODE_RANK": str(rank), "NODE_ADDRS": " ".join(addrs)}
        r = subprocess.run(
            ["sh", "launch.sh"], cwd=folder, env=env, timeout=60, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        out.append(_calls(env))
    return out


@functools.cache
def _llama16(engine: str):
    """Llama 3.3 70B's point on 16 H100s exported for ``engine`` (exported once: the tests
    read the plan, or a copy changed with ``dataclasses.replace``)."""
    fp8 = TRT_FP8 if engine == "trtllm" else {}  # TensorRT-LLM quantizes no checkpoint online
    return api.export("Llama 3.3 70B", "H100", engine=engine, gpus=16, batch=64, **LLAMA_FP8, **fp8)


@functools.cache
def _deepseek16():
    """DeepSeek-V3's point on 16 H200s exported for vLLM (exported once, read by the tests)."""
    return api.export(
        "DeepSeek-V3", "H200", engine="vllm", gpus=16, batch=256, weight_bits=8,
        prompt_tokens=2000, output_tokens=500,
    )  # fmt: skip


def test_sglang_runs_the_copy_on_each_node_with_its_rank(tmp_path):
    """TP8 x PP2 on two 8-GPU nodes: the same launch_server on both, --nnodes 2, each its own
    --node-rank, both meeting at node 0's address (SGLang's multi-node deployment)."""
    plan = _llama16("sglang")
    (w,) = plan.workers
    assert (w.tensor, w.pipeline) == (8, 2)
    first, second = _run_nodes(tmp_path, plan)
    (a,), (b,) = first, second
    assert a["prog"] == b["prog"] == "-m sglang.launch_server"
    for call, rank in ((a, "0"), (b, "1")):
        assert _value(call["args"], "--node-rank") == rank
        assert _value(call["args"], "--nnodes") == "2"
        assert _value(call["args"], "--dist-init-addr") == "10.0.0.1:20000"
        assert call["gpus"] is None  # every GPU of its node
    rank_at = a["args"].index("--node-rank") + 1
    assert a["args"][:rank_at] == b["args"][:rank_at]
    assert a["args"][rank_at + 1 :] == b["args"][rank_at + 1 :]


def test_tensorrt_llm_starts_every_rank_from_the_first_node_under_mpirun(tmp_path):
    """TP8 x PP2 under TensorRT-LLM: node 0 runs mpirun with 8 slots on each node's address
    and 16 ranks through trtllm-llmapi-launch; node 1 starts nothing of its own."""
    plan = _llama16("trtllm")
    first, second = _run_nodes(tmp_path, plan)
    (call,) = first
    assert second == []
    args = call["args"]
    assert call["prog"] == "mpirun" and "--allow-run-as-root" in args
    assert _value(args, "-H") == "10.0.0.1:8,10.0.0.2:8"
    assert _value(args, "-n") == "16"
    serve = args.index("trtllm-llmapi-launch") + 1
    assert args[serve] == "trtllm-serve"
    tp, pp = int(_value(args, "--tp_size")), int(_value(args, "--pp_size"))
    assert tp * pp == 16 and _value(args, "--gpus_per_node") == "8"


def test_vllm_stages_run_on_a_ray_cluster_of_the_copys_nodes(tmp_path):
    """TP8 x PP2 under vLLM 0.11 (no node ranks of its own): node 0 starts Ray's head, then
    vllm serve on Ray (told node 0's address, as Ray knows it); node 1 joins the head at node
    0's address and stays."""
    plan = _llama16("vllm")
    first, second = _run_nodes(tmp_path, plan)
    head, serve = sorted(first, key=lambda c: c["prog"])
    assert head["prog"] == "ray"
    assert head["args"] == ["start", "--head", "--port", "6379", "--node-ip-address", "10.0.0.1"]
    assert serve["prog"] == "vllm" and serve["args"][0] == "serve"
    assert _value(serve["args"], "--distributed-executor-backend") == "ray"
    (vllm,) = [c for c in ec.commands(plan) if c.argv[0] == "vllm"]
    assert [(k, nodes.shown(v)) for k, v in vllm.env] == [("VLLM_HOST_IP", "${NODE0}")]
    tp = int(_value(serve["args"], "--tensor-parallel-size"))
    assert tp * int(_value(serve["args"], "--pipeline-parallel-size")) == 16
    (join,) = second
    assert join["prog"] == "ray"
    assert join["args"] == [
        "start", "--address", "10.0.0.1:6379", "--node-ip-address", "10.0.0.2", "--block",
    ]  # fmt: skip
    assert "k8s-dynamo.yaml" not in bundle.render(plan)  # no pod holds a copy of two nodes


def test_vllm_copies_over_nodes_deploy_on_kubernetes_as_a_leader_worker_set():
    """Two TP8 x PP2 copies on 8-GPU nodes: a LeaderWorkerSet of two groups of two pods of 8
    GPUs, in vLLM 0.11's documented form (its docs, deployment/frameworks/lws.md): the leader
    starts Ray's head for the group through the script vLLM's image ships, then the same
    ``vllm serve`` launch.sh runs; the workers join the leader; a Service in front of the
    leaders. A copy of data-parallel ranks over nodes gets no manifest, and says so."""
    import shlex

    rec = record("lws-vllm-0.11.0.json")
    point = _llama16("vllm")
    (w,) = point.workers
    plan = dataclasses.replace(point, workers=(dataclasses.replace(w, count=2),))
    files = bundle.render(plan)
    assert "k8s-dynamo.yaml" not in files
    group, service = yaml.safe_load_all(files["k8s-vllm-lws.yaml"])
    assert (group["apiVersion"], group["kind"]) == (rec["apiVersion"], rec["kind"])
    assert set(group["spec"]) == set(rec["spec_fields"]) and group["spec"]["replicas"] == 2
    t = group["spec"]["leaderWorkerTemplate"]
    assert set(t) == set(rec["template_fields"]) and t["size"] == 2
    assert t["restartPolicy"] in rec["restart_policies"]
    (lead,) = t["leaderTemplate"]["spec"]["containers"]
    (work,) = t["workerTemplate"]["spec"]["containers"]
    for c in (lead, work):
        assert set(c) <= set(rec["container_fields"])
        assert c["resources"]["limits"] == {"nvidia.com/gpu": "8"}
        assert c["image"] == "vllm/vllm-openai:v0.11.0" and c["command"][:2] == ["sh", "-c"]
    start, serve = lead["command"][2].split("; ")
    assert shlex.split(start) == ["bash", rec["script"], *rec["leader_arguments"]]
    assert shlex.split(work["command"][2]) == ["bash", rec["script"], *rec["worker_arguments"]]
    (vllm,) = [c for c in ec.commands(plan) if c.argv[0] == "vllm" and c.node == 0]
    assert tuple(shlex.split(serve)) == vllm.argv[:-2] + ("--port", "8000")
    assert set(service["spec"]["selector"]) == set(rec["service_selector"])
    name = group["metadata"]["name"]
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": name,
        "role": "leader",
    }
    # LWS names the pods' headless Service after the group and skips it if that name is taken
    assert service["metadata"]["name"] == name + "-leader"
    deepseek = _deepseek16()
    files = bundle.render(deepseek)
    assert not any(name.startswith("k8s-") for name in files)
    assert "# no Kubernetes manifest: a copy spans nodes" in files["launch.sh"]


def test_vllm_attention_data_parallel_ranks_split_over_the_nodes(tmp_path):
    """DeepSeek-V3 on 16 H200s with eight attention-DP ranks of TP2: four ranks a node, node 0
    with the API server, node 1 headless from rank 4, both meeting at node 0's address."""
    plan = _deepseek16()
    (w,) = plan.workers
    assert (w.gpus, w.attention_dp, w.tensor // w.attention_dp) == (16, 8, 2)
    (a,), (b,) = _run_nodes(tmp_path, plan)
    for call in (a, b):
        assert _value(call["args"], "--data-parallel-size") == "8"
        assert _value(call["args"], "--data-parallel-size-local") == "4"
        assert _value(call["args"], "--data-parallel-address") == "10.0.0.1"
        assert "--enable-expert-parallel" in call["args"]
    assert "--headless" not in a["args"] and _value(a["args"], "--port") == "8000"
    assert "--headless" in b["args"] and _value(b["args"], "--data-parallel-start-rank") == "4"


def test_copies_on_other_nodes_are_reached_at_their_addresses(tmp_path):
    """Three TP4 copies on 8-GPU nodes: two on node 0 (GPUs 0-3, 4-7), one on node 1 (GPUs
    0-3); the router on node 0 reaches each at its node's address."""
    point = api.export("Llama 3.3 70B", "H100", engine="vllm", gpus=4, batch=64, **LLAMA_FP8)
    (w,) = point.workers
    plan = dataclasses.replace(point, workers=(dataclasses.replace(w, count=3),))
    first, second = _run_nodes(tmp_path, plan)
    (router,) = [c for c in first if c["prog"] == "-m sglang_router.launch_router"]
    urls = router["args"][router["args"].index("--worker-urls") + 1 :]
    urls = urls[: urls.index("--host")]
    assert urls == ["http://10.0.0.1:8001", "http://10.0.0.1:8002", "http://10.0.0.2:8003"]
    assert sorted(c["gpus"] for c in first if c["prog"] == "vllm") == ["0,1,2,3", "4,5,6,7"]
    (other,) = second
    assert other["gpus"] == "0,1,2,3" and _value(other["args"], "--port") == "8003"


def test_tensorrt_llm_pools_on_two_nodes_name_their_addresses(tmp_path):
    """TensorRT-LLM pools (TP4 prefill, TP8 decode: 12 GPUs, two nodes): node 0's script
    writes the disaggregated server's configuration with each pool's node address."""
    plan = api.export(
        "Llama 3.3 70B", "H100", engine="trtllm", plan="disagg", gpus=8, batch=64,
        prefill_gpus=4, **LLAMA_FP8, **TRT_FP8,
    )  # fmt: skip
    assert "trtllm-disagg.yaml" not in bundle.render(plan)  # launch.sh writes it, addresses in
    _run_nodes(tmp_path, plan)
    config = yaml.safe_load((tmp_path / "node0" / "trtllm-disagg.yaml").read_text())
    assert config["context_servers"]["urls"] == ["10.0.0.1:8001"]
    assert config["generation_servers"]["urls"] == ["10.0.0.2:8002"]


def test_a_gb200_tray_is_a_node_of_four():
    """GB200 NVL72 runs one host a compute tray of 4 GPUs (hardware/gb200_nvl72.yaml): TP8
    takes two trays, mpirun gives each 4 slots and trtllm-serve 4 GPUs a node."""
    assert load_hardware("GB200").gpus_per_host == 4
    assert (
        load_hardware("H100").gpus_per_host == 8 and load_hardware("GH200-144GB").gpus_per_host == 1
    )
    plan = api.export(
        "Llama 3.3 70B", "GB200", engine="trtllm", gpus=8, batch=64, **LLAMA_FP8, **TRT_FP8
    )
    (c,) = ec.commands(plan)
    assert nodes.shown(c.argv[c.argv.index("-H") + 1]) == "${NODE0}:4,${NODE1}:4"
    assert c.argv[c.argv.index("--gpus_per_node") + 1] == "4"


def test_a_copy_of_twelve_gpus_runs_six_on_each_of_two_nodes():
    """Llama 3.1 405B FP8 at TP4 x PP3 on 8-GPU nodes: 12 GPUs split evenly as 6 on each of
    two nodes (the engines' launches want the same share on each), mpirun giving each node 6
    slots and trtllm-serve 6 GPUs a node; the header says the 4 GPUs left idle, which the
    plan's cost does not count."""
    plan = api.export(
        "Llama 3.1 405B", "H100", engine="trtllm", gpus=12, batch=16, **LLAMA_FP8,
        checkpoint="nvidia/Llama-3.1-405B-Instruct-FP8",
    )  # fmt: skip
    (w,) = plan.workers
    assert (w.tensor, w.pipeline) == (4, 3)
    (place,) = nodes.places(plan.workers, plan.setting.gpu, fronted=False)["server"]
    assert (place.node, place.nodes, place.gpus_per_node) == (0, 2, 6)
    (c,) = ec.commands(plan)
    assert "its 12 GPUs take 2 nodes of 8: 4 GPUs left idle" in bundle.render(plan)["launch.sh"]
    assert nodes.shown(c.argv[c.argv.index("-H") + 1]) == "${NODE0}:6,${NODE1}:6"
    assert c.argv[c.argv.index("-n") + 1] == "12"
    assert c.argv[c.argv.index("--gpus_per_node") + 1] == "6"


def test_vllm_data_parallel_ranks_of_pipeline_stages_stay_whole_on_their_nodes():
    """Four attention-DP ranks of TP2 x PP2 (16 GPUs): each rank is an engine of 4 GPUs on one
    node, two a node (vLLM's ranks are TP x PP x DP); three ranks of TP1 x PP2 on GB200's
    4-GPU trays take three trays of 2 GPUs, one rank each (two trays of 3 would split one)."""
    plan = _llama16("vllm")
    (w,) = plan.workers
    four = dataclasses.replace(w, tensor=8, pipeline=2, attention_dp=4, expert=8)
    commands = ec.commands(dataclasses.replace(plan, workers=(four,)))
    assert [c.node for c in commands] == [0, 1]
    for c in commands:
        assert c.argv[c.argv.index("--data-parallel-size-local") + 1] == "2"
        assert c.argv[c.argv.index("--tensor-parallel-size") + 1] == "2"
        assert c.argv[c.argv.index("--pipeline-parallel-size") + 1] == "2"
    assert commands[1].argv[commands[1].argv.index("--data-parallel-start-rank") + 1] == "2"
    three = dataclasses.replace(w, gpus=6, tensor=3, pipeline=2, attention_dp=3, expert=3)
    gb200 = dataclasses.replace(plan, setting=plan.setting.replace(gpu=load_hardware("GB200")))
    (place,) = nodes.places((three,), gb200.setting.gpu, False, lambda w, g: g % 2 == 0)["server"]
    assert (place.nodes, place.gpus_per_node) == (3, 2)
    commands = ec.commands(dataclasses.replace(gb200, workers=(three,)))
    assert [c.node for c in commands] == [0, 1, 2]
    starts = [c.argv[c.argv.index("--data-parallel-start-rank") + 1] for c in commands[1:]]
    assert starts == ["1", "2"]


def _sglang_node_ranks(tp: int, pp: int, nnodes: int, node_rank: int) -> list[tuple]:
    """The (pipeline rank, tensor rank, GPU id) SGLang 0.5.3 starts on node ``node_rank`` of
    a copy: a node holds pp // nnodes whole stages, or tp // (nnodes // pp) ranks of one
    (python/sglang/srt/entrypoints/engine.py, managers/data_parallel_controller.py)."""
    per_group = max(nnodes // pp, 1)
    tp_here, pp_here = tp // per_group, max(pp // nnodes, 1)
    tps = range(tp_here * (node_rank % per_group), tp_here * (node_rank % per_group + 1))
    pps = range(pp_here * (node_rank // per_group), pp_here * (node_rank // per_group + 1))
    return [(p, t, (p % pp_here) * tp_here + t % tp_here) for p in pps for t in tps]


def test_sglang_pipeline_stages_nest_in_the_copys_nodes():
    """Qwen3-235B-A22B at TP12 x PP2 with attention data parallelism (24 H200s): SGLang 0.5.3
    gives each node whole stages or an equal share of one, so the copy takes four nodes of 6
    GPUs (three of 8 would start 12 ranks on each, on GPUs 8-11 a node lacks, and a third
    stage): every rank starts once, on a GPU of its node. The header counts the idle GPUs."""
    plan = api.export(
        "Qwen3-235B-A22B", "H200", weight_bits=8, engine="sglang", gpus=24, batch=508,
        prompt_tokens=1000, output_tokens=200, checkpoint="./q8",
    )  # fmt: skip
    (w,) = plan.workers
    assert (w.tensor, w.pipeline, w.attention_dp) == (12, 2, 6)
    (place,) = ec.placements(plan)["server"]
    assert (place.nodes, place.gpus_per_node) == (4, 6)
    commands = ec.commands(plan)
    assert [c.argv[c.argv.index("--nnodes") + 1] for c in commands] == ["4"] * 4
    started = [r for k in range(place.nodes) for r in _sglang_node_ranks(12, 2, place.nodes, k)]
    assert sorted((p, t) for p, t, _ in started) == [(p, t) for p in range(2) for t in range(12)]
    assert max(gpu for *_, gpu in started) < place.gpus_per_node
    three = _sglang_node_ranks(12, 2, 3, 0)  # the split the export had written
    assert max(gpu for *_, gpu in three) >= 8
    assert "its 24 GPUs take 4 nodes of 8: 8 GPUs left idle" in bundle.render(plan)["launch.sh"]


def test_vllm_data_parallel_ranks_larger_than_a_node_are_refused():
    """DeepSeek-V3 on 16 GB200s (trays of 4) at batch 8: SGLang's plan over DeepEP is two
    attention-DP ranks of TP8, launched as one node rank a tray. The same layout with its experts over all
    16 GPUs under vLLM 0.11, which runs each rank on one node: the export says so and names
    the engines whose copies span nodes."""
    plan = api.export(
        "DeepSeek-V3", "GB200", engine="sglang", gpus=16, batch=8, weight_bits=8,
        prompt_tokens=2000, output_tokens=500, deepep=True,
    )  # fmt: skip
    (w,) = plan.workers
    assert (w.attention_dp, w.tensor // w.attention_dp) == (2, 8)
    assert sum(c.argv[0] == "python" for c in ec.commands(plan)) == 4  # a node rank each
    vllm = dataclasses.replace(plan, engine="vllm", workers=(dataclasses.replace(w, expert=16),))
    with pytest.raises(SpecError, match="do not split over 4 nodes of 4 GPUs.*sglang or trtllm"):
        bundle.render(vllm)


def test_a_checkpoint_that_looks_like_an_address_stays_its_own_word(tmp_path):
    """A checkpoint of ``a/${NODE0}"; touch PWNED`` in a two-node plan: written as one quoted
    word, never read as a node's address nor run (the launch script's addresses are marked by
    the tool, not found in text)."""
    plan = dataclasses.replace(_llama16("sglang"), checkpoint='a/${NODE0}"; touch PWNED')
    (a,), (b,) = _run_nodes(tmp_path, plan)
    assert _value(a["args"], "--model-path") == _value(b["args"], "--model-path")
    assert _value(a["args"], "--model-path") == 'a/${NODE0}"; touch PWNED'
    assert not any(tmp_path.rglob("PWNED"))


def test_the_script_refuses_to_start_without_its_place(tmp_path):
    """Without NODE_RANK and NODE_ADDRS, with the wrong number of addresses or a rank past the
    last node: one line naming the variable, exit 2, nothing started."""
    (tmp_path / "launch.sh").write_text(bundle.render(_llama16("sglang"))["launch.sh"])
    cases = [
        ({}, "set NODE_RANK"),
        ({"NODE_RANK": "0", "NODE_ADDRS": "10.0.0.1"}, "NODE_ADDRS: give 2 addresses"),
        ({"NODE_RANK": "5", "NODE_ADDRS": "a b"}, "NODE_RANK: a number from 0 to 1"),
    ]
    for extra, said in cases:
        env = {"PATH": "/usr/bin:/bin", **extra}
        r = subprocess.run(
            ["sh", "launch.sh"], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert r.returncode == 2 and said in r.stderr and r.stderr.count("\n") == 1


def _check(argv, flags: dict) -> set:
    """Every option of ``argv`` is in ``flags``, a switch alone, any other with one value
    (the launches here give each option one); the options seen."""
    seen, i = set(), 0
    while i < len(argv):
        flag = argv[i]
        assert flag in flags, f"{flag} is not an argument ({argv[:i]})"
        seen.add(flag)
        if flags[flag].get("kind") == "switch":
            i += 1
            continue
        assert i + 1 < len(argv) and not argv[i + 1].startswith("-"), f"{flag} takes a value"
        choices = flags[flag].get("choices")
        assert not choices or argv[i + 1] in choices, (flag, argv[i + 1], choices)
        i += 2
    return seen


def test_multi_node_flags_are_the_tools_own_arguments():
    """Every flag the multi-node launches write is in its tool's record: SGLang 0.5.3, vLLM
    0.11.0 and the Ray it requires, TensorRT-LLM's trtllm-serve and Open MPI's mpirun."""
    sgl, vll = record("sglang-0.5.3.json"), record("vllm-0.11.0.json")
    ray, trt, mpi = (
        record("ray-2.48.0.json"),
        record("trtllm-1.2.1.json"),
        record("openmpi-4.1.json"),
    )
    seen = set()
    deepseek = _deepseek16()
    for plan in (_llama16("sglang"), _llama16("vllm"), deepseek, _llama16("trtllm")):
        for c in ec.commands(plan):
            a = c.argv
            if a[:3] == ("python", "-m", "sglang.launch_server"):
                seen |= _check(a[3:], sgl["flags"])
            elif a[:2] == ("vllm", "serve"):
                seen |= _check(a[3:], vll["flags"])
            elif a[:2] == ("ray", "start"):
                seen |= _check(a[2:], ray["flags"])
            else:
                wrap = a.index("trtllm-llmapi-launch")
                assert a[0] == "mpirun" and a[wrap + 1] == "trtllm-serve"
                seen |= _check(a[1:wrap], mpi["flags"])
                seen |= _check(a[wrap + 3 :], trt["flags"])
    assert {
        "--nnodes", "--node-rank", "--dist-init-addr", "--headless",
        "--data-parallel-size-local", "--data-parallel-start-rank", "--head", "--block",
        "-H", "-n", "--gpus_per_node", "--distributed-executor-backend",
    } <= seen  # fmt: skip
