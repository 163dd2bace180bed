"""Exported launch scripts run as written: each multi-instance script is run by ``bash`` with
stand-in engine, router and benchmark executables first on ``PATH`` that record their
arguments and the GPUs they were shown (``CUDA_VISIBLE_DEVICES``), and the records are checked:
every instance on GPUs of its own, the router's backends the instances' ports, the benchmark
aimed at the router. AMD plans: the ROCm image and AMD's device resource. And an export of a
capacity plan deploys the plan ``capacity`` gives for the same question."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inference_econ import api
from inference_econ.export import bundle

LLAMA_FP8 = dict(weight_bits=8, prompt_tokens=2000, output_tokens=500)
#: TensorRT-LLM quantizes no checkpoint online: its 8-bit plans load NVIDIA's FP8 release.
TRT_FP8 = {"checkpoint": "nvidia/Llama-3.3-70B-Instruct-FP8"}

#: A stand-in: one file per call holding the program, the GPUs it sees and each argument.
RECORDER = """#!/bin/bash
f=$(mktemp "$CALLS/call.XXXXXX")
{ printf 'PROG %s\\n' "$PROG"; printf 'GPUS %s\\n' "${CUDA_VISIBLE_DEVICES-unset}"
  for a in "$@"; do printf 'ARG %s\\n' "$a"; done; } > "$f"
"""


def _stand_ins(folder: Path) -> dict:
    """A bin folder of stand-ins (vllm, trtllm-serve, and python/python3 wrappers that record
    ``-m module ...`` and hand anything else to this Python) and the environment to run in."""
    bin_ = folder / "bin"
    bin_.mkdir()
    for name in ("vllm", "trtllm-serve"):
        (bin_ / name).write_text(RECORDER.replace('"$PROG"', name))
    for name in ("python", "python3"):
        body = RECORDER.replace('"$PROG"', '"-m $2"').replace('"$@"', '"${@:3}"')
        wrapper = (
            '#!/bin/bash\nif [ "$1" != "-m" ]; then exec '
            + shlex.quote(sys.executable)
            + ' "$@"; fi\n'
            + body.split("\n", 1)[1]
        )
        (bin_ / name).write_text(wrapper)
    for p in bin_.iterdir():
        p.chmod(0o755)
    calls = folder / "calls"
    calls.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    return env | {"PATH": f"{bin_}{os.pathsep}{env['PATH']}", "CALLS": str(calls)}


def _calls(env: dict) -> list[dict]:
    """The recorded calls: program, GPUs seen (None: every GPU), arguments."""
    out = []
    for f in sorted(Path(env["CALLS"]).iterdir()):
        lines = f.read_text().splitlines()
        prog, gpus = lines[0][5:], lines[1][5:]
        out.append(
            {
                "prog": prog,
                "gpus": None if gpus == "unset" else gpus,
                "args": [line[4:] for line in lines[2:]],
            }
        )
    return out


def _run(tmp_path: Path, plan, addrs: tuple[str, ...] = ()) -> list[dict]:
    """Run the plan's launch.sh (once a node, with NODE_RANK and NODE_ADDRS, where ``addrs``
    gives the nodes' addresses), then its benchmark.md's ``vllm bench serve``, under the
    stand-ins; their calls."""
    env = _stand_ins(tmp_path)
    files = api.launch_files(plan)
    (tmp_path / "launch.sh").write_text(files["launch.sh"])
    bench = next(
        line for line in files["benchmark.md"].splitlines() if line.startswith("vllm bench serve")
    )
    (tmp_path / "bench.sh").write_text(bench + "\n")
    nodes = [{"NODE_RANK": str(k), "NODE_ADDRS": " ".join(addrs)} for k in range(len(addrs))]
    for script, extra in [*(("launch.sh", n) for n in nodes or [{}]), ("bench.sh", {})]:
        r = subprocess.run(
            ["bash", script],
            cwd=tmp_path,
            env=env | extra,
            timeout=60,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
    return _calls(env)


def _value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def _values(args: list[str], flag: str) -> list[str]:
    """The words after ``flag`` up to the next flag."""
    i, out = args.index(flag) + 1, []
    while i < len(args) and not args[i].startswith("--"):
        out.append(args[i])
        i += 1
    return out


def _instance_gpus(call: dict, gpus: int) -> set[int]:
    """The GPU ids an engine instance runs on: SGLang's from --base-gpu-id (its GPUs follow
    it), the others' from CUDA_VISIBLE_DEVICES."""
    if "--base-gpu-id" in call["args"]:
        assert call["gpus"] is None
        first = int(_value(call["args"], "--base-gpu-id"))
        return set(range(first, first + gpus))
    assert call["gpus"] is not None, f"{call['prog']} sees every GPU of the node"
    ids = {int(g) for g in call["gpus"].split(",")}
    assert len(ids) == gpus
    return ids


def _copies(plan, count: int):
    (w,) = plan.workers
    return dataclasses.replace(plan, workers=(dataclasses.replace(w, count=count),))


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_copy_on_its_own_gpus_behind_a_router_the_benchmark_targets(tmp_path, engine):
    """Three TP2 copies of Llama 3.3 70B FP8 on H100s: GPUs 0-1, 2-3 and 4-5, ports 8001-8003,
    the router on 8000 with those three backends, and the benchmark sent to 8000."""
    fp8 = TRT_FP8 if engine == "trtllm" else {}
    point = api.export("Llama 3.3 70B", "H100", engine=engine, gpus=2, batch=64, **LLAMA_FP8, **fp8)
    plan = _copies(point, 3)
    calls = _run(tmp_path, plan)
    servers = [c for c in calls if c["prog"] in ("vllm", "trtllm-serve", "-m sglang.launch_server")]
    servers = [c for c in servers if c["args"][:2] != ["bench", "serve"]]
    assert len(servers) == 3
    taken = [_instance_gpus(c, 2) for c in servers]
    assert sorted(map(sorted, taken)) == [[0, 1], [2, 3], [4, 5]]
    ports = sorted(int(_value(c["args"], "--port")) for c in servers)
    assert ports == [8001, 8002, 8003]
    (router,) = [c for c in calls if c["prog"] == "-m sglang_router.launch_router"]
    backends = _values(router["args"], "--worker-urls")
    assert sorted(backends) == [f"http://localhost:{p}" for p in ports]
    front = int(_value(router["args"], "--port"))
    (bench,) = [c for c in calls if c["prog"] == "vllm" and c["args"][:2] == ["bench", "serve"]]
    assert (
        _value(bench["args"], "--base-url")
        == f"http://localhost:{front}"
        == "http://localhost:8000"
    )
    # no Dynamo frontend: it reaches only workers that register with it (dynamo.vllm)
    assert not any(c["prog"] == "-m dynamo.frontend" for c in calls)


def test_disaggregated_pools_each_copy_on_its_own_gpus(tmp_path):
    """SGLang pools: two TP4 prefill workers on GPUs 0-3 and 4-7 of node 0 (the TP8 decode
    worker fills node 1), each with a bootstrap port of its own (two on one node would both
    take SGLang's default, 8998), and the router's backends every worker at its node's
    address, a prefill worker with its bootstrap port."""
    plan = api.export(
        "Llama 3.3 70B", "H100", engine="sglang", plan="disagg", gpus=8, batch=64,
        prefill_gpus=4, **LLAMA_FP8,
    )  # fmt: skip
    prefill, decode = plan.workers
    plan = dataclasses.replace(plan, workers=(dataclasses.replace(prefill, count=2), decode))
    calls = _run(tmp_path, plan, addrs=("10.0.0.1", "10.0.0.2"))
    servers = [c for c in calls if c["prog"] == "-m sglang.launch_server"]
    pre = [c for c in servers if _value(c["args"], "--disaggregation-mode") == "prefill"]
    assert sorted(map(sorted, (_instance_gpus(c, 4) for c in pre))) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    (router,) = [c for c in calls if c["prog"] == "-m sglang_router.launch_router"]
    backends = [
        router["args"][i + 1]
        for i, a in enumerate(router["args"])
        if a in ("--prefill", "--decode")
    ]
    assert backends == ["http://10.0.0.1:8001", "http://10.0.0.1:8002", "http://10.0.0.2:8003"]
    assert sorted(_value(c["args"], "--port") for c in servers) == ["8001", "8002", "8003"]
    boot = {
        _value(c["args"], "--port"): _value(c["args"], "--disaggregation-bootstrap-port")
        for c in pre
    }
    assert boot == {"8001": "8998", "8002": "8999"}
    args = router["args"]
    told = [args[i + 1 : i + 3] for i, a in enumerate(args) if a == "--prefill"]
    assert told == [["http://10.0.0.1:8001", "8998"], ["http://10.0.0.1:8002", "8999"]]


def test_amd_plans_use_rocm_images_and_amds_device_resource():
    """A vLLM plan on MI300X: its manifest runs vLLM's ROCm image and asks for amd.com/gpu
    (vLLM's docs, deployment/k8s.md, "AMD GPU"), never NVIDIA's image or resource; an H100
    plan keeps Dynamo's CUDA image and manifest. vLLM pools (Dynamo workers: CUDA builds
    only) are refused on AMD parts."""
    plan = _copies(
        api.export("Llama 3.3 70B", "MI300X", engine="vllm", gpus=1, batch=64, **LLAMA_FP8), 2
    )
    files = bundle.render(plan)
    assert "k8s-dynamo.yaml" not in files
    text = files["k8s-vllm-rocm.yaml"]
    assert "nvidia" not in text.lower() and "nvcr.io" not in text
    deployment, service = yaml.safe_load_all(text)
    assert deployment["spec"]["replicas"] == 2
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"].startswith("rocm/vllm:") and "vllm_0.11" in container["image"]
    assert container["resources"]["limits"] == {"amd.com/gpu": "1"}
    assert container["command"] == ["vllm", "serve"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    nvidia = api.export("Llama 3.3 70B", "H100", engine="vllm", gpus=2, batch=64, **LLAMA_FP8)
    assert "nvcr.io/nvidia/ai-dynamo/vllm-runtime" in bundle.render(nvidia)["k8s-dynamo.yaml"]
    pools = api.export(
        "Llama 3.3 70B", "MI300X", engine="vllm", plan="disagg", gpus=1, batch=64,
        prefill_gpus=1, **LLAMA_FP8,
    )  # fmt: skip
    with pytest.raises(Exception, match="CUDA builds"):
        bundle.render(pools)


def test_an_exported_capacity_plan_is_the_plan_capacity_gives():
    """Llama 3.3 70B FP8 on MI300X (its weights fit one 192 GB card): ``export --plan capacity``
    deploys the GPU, instances and layout ``capacity`` chose for the same load and targets
    under the same engine (the export calls ``api.capacity`` and builds each instance in the
    layout the plan's simulation ran it in)."""
    load = dict(
        weight_bits=8, arrival_rate_per_s=4.0, input_lengths="1000", output_lengths="200",
        slo_ttft_p99_s=2.0, slo_tpot_p99_s=0.05, requests=200,
    )  # fmt: skip
    plan = api.capacity("Llama 3.3 70B", ["MI300X"], engine="vllm", **load)
    export = api.export("Llama 3.3 70B", ["MI300X"], engine="vllm", plan="capacity", **load)
    (w,) = export.workers
    d = plan.deployment
    assert export.setting.gpu.name == plan.setting.gpu.name == "MI300X"
    assert (w.count, w.gpus) == (d.instances, d.gpus_per_instance)
    tp, pp = (int(re.search(rf"\b{k}(\d+)", plan.result.layout)[1]) for k in ("TP", "PP"))
    assert (w.tensor, w.pipeline) == (tp, pp)
    assert export.gpus == plan.result.gpus


def test_a_model_that_fits_one_card_is_never_pipelined_across_eight():
    """Mistral Large 2 FP8 (122.6 GB of weights) fits one 192 GB MI300X with 61 GB of KV
    cache to spare, so at 20 req/s neither ``capacity`` nor ``export --plan capacity`` may
    plan eight pipeline stages where each GPU could serve alone: an instance pipelines only
    where the weights do not fit on fewer GPUs (§E7). Both answer with the same GPU,
    instances and a layout without a pipeline. Runs of 200 requests: every candidate's layout
    is chosen by where the weights fit, whatever a run's length (runs of 500 gave the same
    plan, 11 x 1 GPU, and the same candidates)."""
    load = dict(
        weight_bits=8, arrival_rate_per_s=20.0, input_lengths="1000", output_lengths="200",
        slo_ttft_p99_s=5.0, slo_tpot_p99_s=0.1, requests=200,
    )  # fmt: skip
    plan = api.capacity("Mistral Large 2", ["MI300X"], engine="vllm", **load)
    export = api.export("Mistral Large 2", ["MI300X"], engine="vllm", plan="capacity", **load)
    (w,) = export.workers
    d = plan.deployment
    assert export.setting.gpu.name == plan.setting.gpu.name == "MI300X"
    assert (w.count, w.gpus) == (d.instances, d.gpus_per_instance)
    assert round(w.memory.weights_bytes_per_gpu * w.gpus / 1e9, 1) == 122.6
    assert w.pipeline == 1 and ", PP1" in plan.result.layout
    assert not plan.candidates["layout"].str.contains(r"PP[2-9]", na=False).any()


def test_a_prefill_pool_on_other_gpus_is_exported_on_them():
    """A capacity plan whose prefill pool runs on H100s beside MI300X decode workers: the
    export plans and checks its prefill workers on the H100s the simulation ran them on
    (85.5 GB of HBM each, ``hbm_capacity_bytes`` of hardware/h100_sxm.yaml), its decode
    workers on MI300X (206.1 GB). The plan, six 1-GPU prefill instances and one decode
    instance, is searched on 1-GPU instances only, where the search over every size finds it."""
    from inference_econ.api.load_setup import load_inputs
    from inference_econ.export import capacity_launch
    from inference_econ.serving.setting import make_setting

    load = dict(
        weight_bits=8, arrival_rate_per_s=4.0, input_lengths="4000", output_lengths="300",
        slo_ttft_p99_s=2.0, slo_tpot_p99_s=0.05, requests=200,
    )  # fmt: skip
    plan = api.capacity(
        "Llama 3.3 70B", ["MI300X"], engine="vllm", disaggregated=True, sizes=[1], **load
    )
    assert (plan.deployment.instances, plan.deployment.prefill_instances) == (1, 6)
    assert plan.deployment.disaggregated and plan.deployment.prefill_setting is None
    h100 = plan.setting.replace(gpu=make_setting("Llama 3.3 70B", "H100").gpu)
    d = dataclasses.replace(plan.deployment, prefill_setting=h100)
    mixed = dataclasses.replace(plan, deployment=d)
    inputs = load_inputs({k: v for k, v in load.items() if k != "weight_bits"}, sized=True)
    export = capacity_launch.capacity_plan(mixed, "vllm", inputs.traffic, inputs.config)
    prefill, decode = export.workers
    assert round(prefill.memory.hbm_bytes_per_gpu / 1e9, 1) == 85.5
    assert round(decode.memory.hbm_bytes_per_gpu / 1e9, 1) == 206.1
