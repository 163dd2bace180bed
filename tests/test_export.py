"""Exported launch configurations against the engines' own argument definitions (records in
tests/data/engine_flags/, README.md there says where each came from), the memory check that
refuses a worker which does not fit, and benchmark tools' result files read back."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import yaml

from inference_econ import api
from inference_econ.errors import InfeasibleError, SpecError
from inference_econ.export import benchmark_commands as bc
from inference_econ.export import bundle, kubernetes, nodes
from inference_econ.export import engine_configs as ec
from inference_econ.export.launch import launch_flags
from inference_econ.measured.reading import load_measured
from inference_econ.measured.tool_results import tool_frame
from inference_econ.serving.memory import check_worker
from inference_econ.serving.setting import make_setting

DATA = Path(__file__).parent / "data"
FLAGS = DATA / "engine_flags"
RESULTS = DATA / "benchmark_results"
LLAMA = dict(model="Llama 3.3 70B", hardware="H100", weight_bits=8)
#: TensorRT-LLM quantizes no checkpoint online: an 8-bit plan loads NVIDIA's FP8 release.
TRT_FP8 = {"checkpoint": "nvidia/Llama-3.3-70B-Instruct-FP8"}


def record(name: str) -> dict:
    return json.loads((FLAGS / name).read_text())


@pytest.fixture(scope="module")
def plans():
    """Per engine: a dense point, an MoE point with attention data parallelism and MTP, a
    draft-model point and a disaggregated plan (the layouts and options an export writes)."""
    out = {}
    for engine in ("vllm", "sglang", "trtllm"):
        common = dict(engine=engine, prompt_tokens=2000, output_tokens=500)
        fp8 = TRT_FP8 if engine == "trtllm" else {}
        dense = api.export(**LLAMA, **common, **fp8, gpus=8, batch=64)
        moe = api.export(  # batch 32: attention data parallelism pays off (at 16 it does not)
            "DeepSeek-V3", "H200", **common, gpus=8, batch=32, weight_bits=8, draft_heads="mtp"
        )
        if engine == "trtllm":  # its attention data parallelism spans the tensor group or none
            w = moe.workers[0]
            moe = dataclasses.replace(moe, workers=(dataclasses.replace(w, attention_dp=w.tensor),))
        draft = dataclasses.replace(
            dense, speculation=("draft", "meta-llama/Llama-3.1-8B-Instruct", 3)
        )
        disagg = api.export(
            **LLAMA, **common, **fp8, plan="disagg", gpus=8, batch=64, prefill_gpus=4
        )
        out[engine] = [dense, moe, draft, disagg]
    return out


def check_argv(argv, flags: dict, start: int) -> list[str]:
    """Every flag of ``argv[start:]`` is one the record has, a switch takes no value, a value
    flag takes one (within its choices); returns the flags seen."""
    seen, i = [], start
    while i < len(argv):
        flag = argv[i]
        assert flag.startswith("--"), f"{flag!r} is not a flag (after {argv[i - 1]!r})"
        assert flag in flags, f"{flag} is not an argument of {argv[:start]}"
        entry = flags[flag]
        seen.append(flag)
        if entry.get("kind") == "switch":
            i += 1
            continue
        values = []
        i += 1
        while i < len(argv) and not argv[i].startswith("--"):
            values.append(argv[i])
            i += 1
        assert values, f"{flag} takes a value"
        if "choices" in entry:
            assert all(v in entry["choices"] for v in values), (
                f"{flag} {values} not in {entry['choices']}"
            )
    return seen


def test_vllm_flags_and_fields_are_vllm_0_11_arguments(plans, overlapped):
    rec, dynamo = record("vllm-0.11.0.json"), record("dynamo-0.6.1.json")
    worker_flags = {
        **rec["flags"],
        **{
            f: {"kind": "switch" if f == "--is-prefill-worker" else "value"}
            for f in dynamo["worker"]["flags"]
        },
    }
    seen = set()
    for plan in [*plans["vllm"], overlapped["vllm"]]:
        assert plan.version == rec["version"] == "0.11.0"
        for c in ec.commands(plan):
            argv = list(c.argv)
            for name, value in c.env:  # vLLM's own variables (vllm/envs.py)
                if name.startswith("VLLM_"):  # (CUDA's and Dynamo's are not vLLM's)
                    entry = rec["environment"][name]
                    assert value in entry.get("choices", [value]), (name, value)
            if argv[:2] == ["vllm", "serve"]:
                seen |= set(check_argv(argv, rec["flags"], 3))
            elif argv[:3] == ["python3", "-m", "dynamo.vllm"]:
                seen |= set(check_argv(argv, worker_flags, 3))
            elif argv[:3] == ["python", "-m", "sglang_router.launch_router"]:
                seen |= set(check_argv(argv, record("sglang-router-0.2.0.json")["flags"], 3))
            else:  # Dynamo's frontend: in front of its own workers only
                assert tuple(argv) == tuple(dynamo["frontend"]["command"]) and plan.disaggregated
            if "--speculative-config" in argv:
                spec = json.loads(argv[argv.index("--speculative-config") + 1])
                fields = rec["json_fields"]["--speculative-config"]
                assert set(spec) <= set(fields["fields"]) and spec["method"] in fields["method"]
    assert {
        "--data-parallel-size",
        "--enable-expert-parallel",
        "--speculative-config",
        "--is-prefill-worker",
        "--enable-dbo",
    } <= seen


def test_vllm_kubernetes_manifest_is_dynamos_form(plans):
    m = record("dynamo-0.6.1.json")["manifest"]
    for plan in plans["vllm"]:
        doc = yaml.safe_load(kubernetes.dynamo_manifest(plan))
        assert (doc["apiVersion"], doc["kind"]) == (m["apiVersion"], m["kind"])
        for name, service in doc["spec"]["services"].items():
            assert set(service) <= set(m["service_fields"]), name
            assert service["componentType"] in m["component_types"]
            assert service.get("subComponentType", "decode") in m["sub_component_types"]
            assert set(service["extraPodSpec"]["mainContainer"]) <= set(m["container_fields"])
        gpus = sum(
            s["replicas"] * int(s.get("resources", {}).get("limits", {}).get("gpu", 0))
            for s in doc["spec"]["services"].values()
        )
        assert gpus == plan.gpus


def test_sglang_flags_are_sglang_0_5_3_and_router_arguments(plans, overlapped):
    rec, router = record("sglang-0.5.3.json"), record("sglang-router-0.2.0.json")
    seen = set()
    for plan in [*plans["sglang"], overlapped["sglang"]]:
        for c in ec.commands(plan):
            argv = list(c.argv)
            if argv[:3] == ["python", "-m", "sglang.launch_server"]:
                seen |= set(check_argv(argv, rec["flags"], 3))
            else:
                assert argv[:3] == ["python", "-m", "sglang_router.launch_router"]
                seen |= set(check_argv(argv, router["flags"], 3))
    assert {
        "--enable-dp-attention",
        "--ep-size",
        "--speculative-algorithm",
        "--disaggregation-mode",
        "--pd-disaggregation",
        "--enable-two-batch-overlap",
        "--moe-a2a-backend",
    } <= seen
    # pools on two nodes (TP4 prefill, TP8 decode): the script asks each node for its place
    # and reaches the other's worker at its address; one server on one node: no such thing
    dense, *_, disagg = plans["sglang"]
    assert 'case "$NODE_RANK" in' in bundle.render(disagg)["launch.sh"]
    assert 'http://"${NODE1}":8002' in bundle.render(disagg)["launch.sh"]
    assert "NODE_RANK" not in bundle.render(dense)["launch.sh"]


TRT_RECORD = "trtllm-1.2.1.json"


def check_trtllm_options(options: dict, api_fields: dict) -> None:
    """Every key of a worker's extra LLM-API YAML, nested ones too, is a field TensorRT-LLM
    1.2.1 reads there, each value within the values its record holds."""
    values = api_fields["values"]
    assert set(options) <= set(api_fields["TorchLlmArgs"])
    assert set(options["kv_cache_config"]) <= set(api_fields["KvCacheConfig"])
    assert options["kv_cache_config"]["dtype"] in values["KvCacheConfig.dtype"]
    assert set(options["cuda_graph_config"]) <= set(api_fields["CudaGraphConfig"])
    transceiver = options.get("cache_transceiver_config", {})
    assert set(transceiver) <= set(api_fields["CacheTransceiverConfig"])
    if transceiver:
        assert transceiver["backend"] in values["CacheTransceiverConfig.backend"]
    assert set(options.get("attention_dp_config", {})) <= set(api_fields["AttentionDpConfig"])
    moe = options.get("moe_config", {})
    assert set(moe) <= set(api_fields["MoeConfig"])
    assert moe.get("backend", "CUTLASS") in values["MoeConfig.backend"]
    if "load_balancer" in moe:
        assert set(moe["load_balancer"]) <= set(api_fields["MoeLoadBalancerConfig"])
    spec = options.get("speculative_config")
    if spec:
        assert spec["decoding_type"] in api_fields["speculative_config"]["decoding_type"]
        assert set(spec) <= set(api_fields["speculative_config"][spec["decoding_type"]])


def test_trtllm_flags_and_llm_api_fields(plans):
    rec = record(TRT_RECORD)
    api_fields = rec["llm_api"]
    for plan in plans["trtllm"]:
        for c in ec.commands(plan):
            argv = list(c.argv)
            if argv[1] == "disaggregated":
                check_argv(argv, rec["disaggregated_flags"], 2)
                config = yaml.safe_load(nodes.shown(c.files[argv[-1]]))  # addresses marked
                assert set(config) <= set(rec["disaggregated_config"]["top"]) | set(
                    api_fields["TorchLlmArgs"]
                )
                for section in ("context_servers", "generation_servers"):
                    assert set(config[section]) <= set(
                        rec["disaggregated_config"]["servers"]
                    ) | set(api_fields["TorchLlmArgs"])
                    assert config[section]["num_instances"] == len(config[section]["urls"])
                continue
            if c.role == "draft model":  # the script's download of the draft, before the servers
                assert argv[:2] == ["python3", "-c"] and "snapshot_download(" in argv[2]
                continue
            check_argv(argv, rec["flags"], 2)
            check_trtllm_options(
                yaml.safe_load(c.files[argv[argv.index("--config") + 1]]), api_fields
            )


def test_trtllm_chunks_prompts_as_the_plan_priced_them(plans):
    """TensorRT-LLM's profile prices whole prompts (``enable_chunked_prefill`` defaults to
    False): the dense point (2,000-token prompts, max model length 2,500 within the 8,192
    tokens of a step) launches without chunking, and so does one of 7,000-token prompts and
    2,000-token answers (its requests pass a step's tokens, its prompts do not). A plan whose
    prompts pass a step's tokens (12,000) launches with it, as the engine refuses them whole,
    and says so in its header."""
    dense = plans["trtllm"][0]
    assert dense.max_model_len < dense.workers[0].token_budget
    assert ec.trtllm_options(dense, dense.workers[0])["enable_chunked_prefill"] is False
    assert not any("enable_chunked_prefill" in line for line in ec._header(dense))
    answers = api.export(
        "Llama 3.1 8B", "H100", engine="trtllm", gpus=1, batch=4,
        prompt_tokens=7000, output_tokens=2000,
    )  # fmt: skip
    assert answers.max_model_len > answers.workers[0].token_budget
    assert ec.trtllm_options(answers, answers.workers[0])["enable_chunked_prefill"] is False
    long = api.export(
        "Llama 3.1 8B", "H100", engine="trtllm", gpus=1, batch=4,
        prompt_tokens=12000, output_tokens=500,
    )  # fmt: skip
    w = long.workers[0]
    assert long.max_model_len > w.token_budget == 8192
    assert ec.trtllm_options(long, w)["enable_chunked_prefill"] is True
    note = [line for line in ec._header(long) if "enable_chunked_prefill is on" in line]
    assert len(note) == 1 and "8,192 (max_num_tokens)" in note[0]


def test_every_name_in_launch_flags_yaml_is_in_its_record():
    data = launch_flags()
    for engine, names in data["engines"].items():
        rec = record(names["record"])
        for concept, flag in names["flags"].items():
            assert flag in rec["flags"], (engine, concept, flag)
        if "router" in names:
            router = record(names["router"]["record"])
            assert set(names["router"]["flags"].values()) <= set(router["flags"])
    trtllm = data["engines"]["trtllm"]
    trt = record(trtllm["record"])["llm_api"]
    assert set(trtllm["llm_api"].values()) <= set(trt["TorchLlmArgs"])
    for section, fields in (("kv_cache_config", "KvCacheConfig"),
                            ("cuda_graph_config", "CudaGraphConfig"),
                            ("moe_config", "MoeConfig"),
                            ("attention_dp_config", "AttentionDpConfig"),
                            ("moe_load_balancer_config", "MoeLoadBalancerConfig"),
                            ("cache_transceiver_config", "CacheTransceiverConfig")):  # fmt: skip
        assert set(trtllm[section].values()) <= set(trt[fields]), section
    assert set(trtllm["mxfp4_moe_backend"].values()) <= set(trt["values"]["MoeConfig.backend"])
    spec = trt["speculative_config"]
    assert set(trtllm["speculative_type"].values()) <= set(spec["decoding_type"])
    assert set(trtllm["speculative_config"].values()) <= set().union(
        *(spec[t] for t in trtllm["speculative_type"].values())
    )
    assert trtllm["cache_transceiver_backend"] in trt["values"]["CacheTransceiverConfig.backend"]
    assert set(map(str, trtllm["kv_cache_dtype"].values())) <= set(
        trt["values"]["KvCacheConfig.dtype"]
    )
    eplb = record(data["engines"]["vllm"]["record"])["json_fields"]["--eplb-config"]["fields"]
    assert set(data["engines"]["vllm"]["eplb_config"].values()) <= set(eplb)
    sglang = data["engines"]["sglang"]
    a2a = record(sglang["record"])["flags"][sglang["flags"]["moe_a2a_backend"]]["choices"]
    assert sglang["moe_a2a_backend"] in a2a
    vllm = data["engines"]["vllm"]
    env = record(vllm["record"])["environment"]  # the variables vLLM reads (vllm/envs.py)
    assert vllm["ray"]["host_ip_env"] in env
    backends = env[vllm["environment"]["all2all"]]["choices"]
    assert set(vllm["all2all_backend"].values()) <= set(backends)
    lws = data["engines"]["vllm"]["lws"]
    assert (lws["apiVersion"], lws["script"]) == tuple(
        record(lws["record"])[k] for k in ("apiVersion", "script")
    )
    assert lws["name_label"] in record(lws["record"])["service_selector"]
    ray, mpi = data["engines"]["vllm"]["ray"], data["engines"]["trtllm"]["multi_node"]
    assert set(ray["flags"].values()) <= set(record(ray["record"])["flags"])
    assert {mpi["hosts"], mpi["ranks"], mpi["root"]} <= set(record(mpi["record"])["flags"])
    for tool, names in data["benchmarks"].items():
        assert set(names["flags"].values()) <= set(record(names["record"])["flags"]), tool


def test_benchmark_commands_are_the_tools_arguments(plans):
    vb, ai = record("vllm-bench-0.11.0.json"), record("aiperf-0.13.0.json")
    for plan in plans["vllm"][::3]:
        argv = bc.vllm_bench(plan)
        check_argv(argv, vb["flags"], 3)
        assert argv[argv.index("--max-concurrency") + 1] == str(plan.load.concurrency)
        aiperf = bc.aiperf_profile(plan)
        names = [a for a in aiperf if a.startswith("--")]
        assert set(names) <= set(ai["flags"])
        # completions, as vllm bench sends them: a base checkpoint (Llama 3.1 8B's) has no
        # chat template, and a template's tokens would lengthen every prompt
        assert aiperf[aiperf.index("--endpoint-type") + 1] == "completions"
        # a distinct prompt per request: aiperf's 100 synthetic prompts, sent again in turn,
        # would be served from the engine's prefix cache, which the plan did not price
        entries = aiperf[aiperf.index("--num-dataset-entries") + 1]
        assert entries == aiperf[aiperf.index("--request-count") + 1] == str(plan.load.requests)


def test_a_capacity_exports_longest_request_is_its_traffics_cap_not_its_samples():
    """Prompts log-normal with a cap of 8,000 tokens and outputs capped at 2,000: the engine
    takes 10,240-token requests (the caps, rounded up) whatever the run drew; it had taken
    the longest request of the simulated sample, shorter than the cap and moving with
    --requests, so the exported engine refused requests of the plan's own traffic. (Each plan
    is one GPU an instance, as the search over every size gives it: ``sizes=[1]``.)"""
    lengths = dict(input_lengths="lognormal:1000:0.8:8000", output_lengths="lognormal:300:0.6:2000")
    load = dict(plan="capacity", arrival_rate_per_s=5.0, slo_ttft_p99_s=2.0, slo_tpot_p99_s=0.05)
    load.update(sizes=[1])
    plan = api.export("Llama 3.1 8B", "H100", engine="sglang", **load, **lengths, requests=200)
    assert plan.max_model_len == 10240
    # a law without a cap keeps the longest the run drew (a given --max-model-len caps it)
    plain = api.export(
        "Llama 3.1 8B", "H100", engine="sglang", **load, input_lengths="lognormal:1000:0.8",
        output_lengths="300", requests=200,
    )  # fmt: skip
    assert 300 < plain.max_model_len < 10240 and plain.max_model_len % 256 == 0
    # a session's later turns carry its history: longer than the law's cap, and held
    sessions = api.export(
        "Llama 3.1 8B", "H100", engine="sglang", **load, input_lengths="lognormal:1000:0.3:1100",
        output_lengths="200", session_turns=3, requests=200,
    )  # fmt: skip
    assert sessions.max_model_len > 1100 + 200 + 1000, sessions.max_model_len


def test_capacity_export_replays_the_plans_rate_and_targets():
    plan = api.export(
        "Llama 3.3 70B", "H200", weight_bits=8, engine="vllm", plan="capacity", arrival_rate_per_s=4.0, input_lengths="1000",
        output_lengths="200", slo_ttft_p99_s=2.0, slo_tpot_p99_s=0.1, requests=200, max_gpus=2,
    )  # fmt: skip
    argv = bc.vllm_bench(plan)
    assert argv[argv.index("--request-rate") + 1] == "4"
    goodput = argv[argv.index("--goodput") + 1 : argv.index("--save-result")]
    assert goodput == ["ttft:2000", "tpot:100"]
    assert plan.expected["ttft_p99_s"] <= 2.0 and plan.max_model_len == 1280
    ends = json.loads(bundle.render(plan)["plan.json"])["intervals"]  # expected: with intervals
    for name in ("ttft_p99_s", "tpot_p99_s", "max_rate_per_s"):
        lo90, lo80, hi80, hi90 = (
            ends[f"{name}_{k}"] for k in ("low90", "low80", "high80", "high90")
        )
        assert 0 < lo90 <= lo80 < hi80 <= hi90
        assert lo90 <= plan.expected[name] <= hi90
    # the held load's interval and the simulated share within the targets; the
    # offered load's rate and price carry none, and a note says so
    assert "goodput_fraction_low90" in ends
    assert "output_tokens_per_s_low80" not in ends
    assert any("offered load's" in n for n in plan.notes)
    assert "Intervals of the expected figures (80 % and 90 %" in bc.benchmark_text(plan)
    # capacity's headline price, the deployment's whole cost per million output tokens
    all_in = plan.expected["usd_per_m_output_tokens_all_in"]
    assert all_in > plan.expected["usd_per_m_output_tokens"] > 0
    assert f"| usd_per_m_output_tokens_all_in | {all_in:.4g} |" in bc.benchmark_text(plan)


def test_memory_check_refuses_aiconfigurator_kimi_decode_worker():
    """aiconfigurator chose a vLLM decode worker of Kimi-K2.5 NVFP4 on 4 B200 at batch 96 per
    rank (384 requests), ISL 8192 / OSL 1024, whose KV cache did not fit: vLLM admitted about
    29 of them (github.com/ai-dynamo/aiconfigurator/issues/1396, fixed by its pull request 1423). The export
    refuses it with the numbers."""
    with pytest.raises(
        InfeasibleError, match=r"decode worker on 4 GPUs .*batch 384.*lower the batch to"
    ):
        api.export(
            "Kimi K2", "B200-HGX", engine="vllm", plan="disagg", gpus=4, batch=384,
            prompt_tokens=8192, output_tokens=1024, prefill_gpus=4, weight_bits=4, kv_cache_bits=16,
            checkpoint="./kimi-k2-nvfp4",  # 4-bit weights: a checkpoint of them (weights_launch)
        )  # fmt: skip
    s = make_setting("Kimi K2", "B200-HGX", weight_bits=4, kv_cache_bits=16)
    c = check_worker(s, "vllm", 4, 384, 8192 + 512, 9216, "decode worker")
    # by hand: 61 MLA layers x (512 latent + 64 rope) x 2 bytes = 70,272 B per token, at
    # 8,704 tokens (prompt + half the output); MLA's one latent cannot be split over the 4
    # tensor-parallel ranks, so each holds a copy (docs/model.md §B13): 4 copies in all
    per_request = c.kv_needed_bytes_per_gpu * c.gpus / c.batch
    assert per_request == pytest.approx(4 * 61 * 576 * 2 * 8704, rel=1e-9)
    per_gpu = 384 * 61 * 576 * 2 * 8704
    assert c.kv_needed_bytes_per_gpu == pytest.approx(per_gpu, rel=1e-9)
    # vLLM: 0.9 of the B200's 183,359 MiB (nvidia-smi), less 2 GB workspace, less the
    # weights, is the KV cache
    assert c.kv_capacity_bytes_per_gpu == pytest.approx(
        0.9 * 183359 * 2**20 - 2e9 - c.weights_bytes_per_gpu, rel=1e-9
    )
    assert c.admitted_requests == int(c.kv_capacity_bytes_per_gpu // (per_request / 4)) < 384
    # vLLM admitted about 29; with the copies the check admits 43 (207 when it spread the cache;
    # 25 when it took the B200 for 180e9 bytes): the rest is vLLM's profiled activation peak,
    # which the check takes as the profile's 2 GB workspace (an assumption, engines/vllm.yaml)
    assert 20 <= c.admitted_requests <= 50
    assert c.hbm_bytes_per_gpu == pytest.approx(
        c.weights_bytes_per_gpu + c.reserve_bytes_per_gpu + c.kv_capacity_bytes_per_gpu
    )


def test_attention_data_parallel_replicas_hold_their_attention_weights():
    """Under attention DP each replica holds all the attention weights: DeepSeek-R1 (FP8)
    on 8 H200 over 8 replicas holds its 61 layers' MLA matrices (187.1 MB each) seven more
    times, 79.9 GB, and, TensorRT-LLM running the dense blocks with the attention, its three
    dense layers' (three FP8 matrices of 7,168 x 18,432, 1.19 GB a layer) and its 58 shared
    experts' (three of 7,168 x 2,048, 44 MB a layer) seven more times, 8.3 and 17.9 GB, and
    each rank its own embedding table and output head (two of 129,280 x 7,168) in BF16, eight
    16-bit copies for the one FP8 copy the weights count, 27.8 GB; so its KV cache (0.9 of the
    memory left) is 0.9 x 133.9 GB smaller than one replica's, and 0.9 x
    8 x 4.29 GB more for each rank's activations at its own degree (22 buffers and whole
    dispatch scales a GPU, against 10, NCCL's and an eighth; docs/model.md §F8); the ideal
    bound (refined) keeps one copy."""
    import inference_econ as ie
    from inference_econ.model.latency import StepModel, replicated_weight_bytes
    from inference_econ.model.workload import compile_workload

    def model(preset):
        a = ie.preset(preset)
        arch = ie.load_model("DeepSeek-R1")
        return StepModel(compile_workload(arch, a), ie.load_hardware("H200"), a)

    engine = model("achievable")
    attention = 7 * 61 * engine.work.attention_matrix_weight_bytes
    assert attention == pytest.approx(79.89e9, rel=1e-3)
    replicas = attention + 7 * 3 * (3 * 7168 * 18432 * 1.0) + 7 * 58 * (3 * 7168 * 2048 * 1.0)
    assert replicas == pytest.approx(106.09e9, rel=1e-3)
    replicas += (8 * 2.0 - 1.0) * 2 * 129280 * 7168
    assert replicas == pytest.approx(133.90e9, rel=1e-3)
    assert replicated_weight_bytes(engine, 8, 8) == pytest.approx(replicas, rel=1e-12)
    scales = 8192 * 7168 * 256 * 8 / 128 * 4
    ranks = 2 * 8192 * 7168 * 22 + scales
    group = 2 * 8192 * 7168 * 10 + 411041792 + scales / 8
    assert engine.kv_capacity_bytes(8) - engine.kv_capacity_bytes(8, 8) == pytest.approx(
        0.9 * (replicas + 8 * (ranks - group)), rel=1e-9
    )
    ideal = model("refined")
    assert ideal.kv_capacity_bytes(8, 8) == ideal.kv_capacity_bytes(8)
    s = make_setting("DeepSeek-R1", "H200")
    one, dp = (check_worker(s, "trtllm", 8, 64, 2048, 4096, attention_dp=a) for a in (1, 8))
    assert dp.weights_bytes_per_gpu - one.weights_bytes_per_gpu == pytest.approx(replicas / 8)
    assert dp.kv_capacity_bytes_per_gpu < one.kv_capacity_bytes_per_gpu


def test_memory_check_refuses_a_max_model_len_no_kv_cache_holds():
    """A prefill worker configured for 131,072-token requests without the memory for one
    request's KV cache crash-loops at start (github.com/ai-dynamo/dynamo/issues/10104, Llama 3.1 70B under
    vLLM): refused. By hand: 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 327,680 B per
    token, 42.9 GB for one request, against 0.9 x 85.5 GB - 2 GB - 35.3 GB of 4-bit weights."""
    llama4 = dict(model="Llama 3.3 70B", hardware="H100", weight_bits=4)
    with pytest.raises(
        InfeasibleError, match="prefill worker on 1 GPU.*one request of 131,072 tokens"
    ):
        api.export(**llama4, engine="vllm", plan="disagg", gpus=2, batch=8, prompt_tokens=2000,
                   output_tokens=500, prefill_gpus=1, max_model_len=131072,
                   checkpoint="./llama-3.3-70b-w4")  # fmt: skip
    c = check_worker(make_setting(**llama4), "vllm", 1, 1, 2000, 131072)
    assert c.kv_capacity_bytes_per_gpu == pytest.approx(
        0.9 * 81559 * 2**20 - 2e9 - c.weights_bytes_per_gpu  # the H100's 81,559 MiB
    )
    assert 327_680 * 131072 > c.kv_capacity_bytes_per_gpu > 0 and not c.longest_fits


def test_layouts_an_engine_cannot_run_are_refused(plans):
    dense = plans["vllm"][0]
    w = dataclasses.replace(dense.workers[0], attention_dp=2)
    with pytest.raises(SpecError, match="attention data parallelism needs expert-parallel"):
        ec.commands(dataclasses.replace(dense, workers=(w,)))
    with pytest.raises(SpecError, match="point, frontier, capacity, disagg"):
        api.export(**LLAMA, engine="vllm", plan="nope")
    # a batch counts requests: it said "--batch: is 2.5, not a whole number of GPUs"
    from click.testing import CliRunner

    from inference_econ.cli import main

    for plan in (["--plan", "point"], ["--plan", "disagg", "--prefill-gpus", "2"]):
        r = CliRunner().invoke(main, ["export", "Llama 3 8B", "-H", "H100", "--engine", "vllm",
                                      "--gpus", "2", "--batch", "2.5", "--prompt-tokens", "100",
                                      "--output-tokens", "10", *plan])  # fmt: skip
        assert r.exit_code == 2 and r.output.startswith("error: --batch: is 2.5"), r.output
        assert "whole number of requests" in r.output and "GPUs" not in r.output, r.output


def test_export_takes_speculation_as_point_does(tmp_path):
    """``export`` takes draft heads and their acceptance from the command line, as ``point``
    and ``frontier`` do: DeepSeek-V3's MTP with at most 3 tokens a cycle launches its MTP
    module for 2 (heads draft one token fewer than a cycle yields)."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    out = tmp_path / "mtp"
    r = CliRunner().invoke(main, ["export", "DeepSeek-V3", "-H", "H200", "--engine", "trtllm",
                                  "--gpus", "8", "--batch", "4", "--prompt-tokens", "200",
                                  "--output-tokens", "50", "--weight-bits", "8",
                                  "--draft-heads", "mtp", "--acceptance", "0.7",
                                  "--max-draft", "3", "--out", str(out), "-q"])  # fmt: skip
    assert r.exit_code == 0, r.output
    options = yaml.safe_load((out / "trtllm-server.yaml").read_text())
    assert options["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 2}


def test_export_refuses_speculation_it_would_not_launch_as_priced():
    """A tree of draft tokens is launched as a chain, and a draft at other weight bits than its
    checkpoint's as the checkpoint: both refused, naming the option. A capacity plan's export
    names the speculation option given (it had said --draft for --draft-heads)."""
    small = dict(engine="trtllm", gpus=8, batch=1, prompt_tokens=200, output_tokens=50)
    with pytest.raises(SpecError, match=r"tree_branching'?: is 2: .*as a chain"):
        api.export("DeepSeek-V3", "H200", **small, weight_bits=8, draft_heads="mtp",
                   tree_branching=2, max_draft_tokens=3)  # fmt: skip
    with pytest.raises(SpecError, match=r"draft_weight_bits.*is 8, but .*16-bit weights"):
        api.export(**LLAMA, engine="sglang", gpus=4, batch=8, prompt_tokens=200,
                   output_tokens=50, draft="Llama 3.1 8B", draft_weight_bits=8)  # fmt: skip
    with pytest.raises(SpecError, match=r"draft_heads.*launches no speculation"):
        api.export("DeepSeek-V3", "H200", engine="trtllm", plan="capacity", weight_bits=8,
                   draft_heads="mtp", arrival_rate_per_s=1, input_lengths="200", output_lengths="50",
                   slo_tpot_p99_s=0.1)  # fmt: skip


# --- reading benchmark tools' result files ------------------------------------------------------
def test_vllm_bench_files_read_as_measured_rows():
    run = json.loads((RESULTS / "vllm-bench-concurrency.json").read_text())
    df = tool_frame(RESULTS / "vllm-bench-concurrency.json")
    by = dict(zip(df.metric, df.value.astype(float)))
    assert by["throughput"] == pytest.approx(run["output_throughput"], rel=1e-5)
    assert by["mean_TPOT"] == pytest.approx(run["mean_tpot_ms"], rel=1e-5)
    assert set(df.batch_or_concurrency) == {"8"} and set(df.hardware) == {"H100-SXM"}
    # the first token's and the end-to-end latencies, as a measured CSV names them
    for metric, key in (("mean_TTFT", "mean_ttft_ms"), ("p99_TTFT", "p99_ttft_ms")):
        assert by[metric] == pytest.approx(run[key], rel=1e-5)
    for metric, key in (("mean_e2el", "mean_e2el_ms"), ("p99_e2el", "p99_e2el_ms")):
        assert by[metric] == pytest.approx(run[key], rel=1e-5)
    rate = json.loads((RESULTS / "vllm-bench-rate.json").read_text())
    little = rate["request_throughput"] * rate["mean_e2el_ms"] / 1e3  # Little's law
    c = float(tool_frame(RESULTS / "vllm-bench-rate.json").batch_or_concurrency.iloc[0])
    assert c == pytest.approx(little, rel=1e-3)
    rows = load_measured(RESULTS / "vllm-bench-sweep.json")
    assert len(rows) == 42 and all(r.ok for r in rows)
    assert sorted({r.concurrency for r in rows}) == [1, 2, 4, 8, 16, 32]


def test_aiperf_files_read_with_the_plan_beside_them(tmp_path):
    rows = load_measured(RESULTS / "aiperf-concurrency" / "profile_export_aiperf.json")
    # its output throughput, TPOT, and mean and p99 TTFT and end-to-end latency, as vllm's
    assert [r.metric_text for r in rows] == [
        "throughput",
        "mean_TPOT",
        "mean_TTFT",
        "p99_TTFT",
        "mean_e2el",
        "p99_e2el",
    ]
    assert all(r.ok for r in rows)
    assert (
        rows[0].gpu.name == "H100-SXM" and rows[0].layout.tensor == 8 and rows[0].concurrency == 8
    )
    data = json.loads((RESULTS / "aiperf-concurrency" / "profile_export_aiperf.json").read_text())
    assert rows[0].value == pytest.approx(data["output_token_throughput"]["avg"], rel=1e-5)
    # the first tokens and whole requests had been dropped without a word
    ttft, p99 = data["time_to_first_token"]["avg"], data["request_latency"]["p99"]
    assert rows[2].value == pytest.approx(ttft, rel=1e-5)  # in the file's ms
    assert rows[5].value == pytest.approx(p99, rel=1e-5)
    alone = tmp_path / "profile_export_aiperf.json"
    shutil.copy(RESULTS / "aiperf-rate" / "profile_export_aiperf.json", alone)
    lone = load_measured(alone)
    assert all(r.status.startswith("unresolved") and "not stated" in r.status for r in lone)


def test_compare_measured_reads_a_result_file():
    from inference_econ.measured.comparison import compare

    out = compare(RESULTS / "aiperf-rate" / "profile_export_aiperf.json", "achievable")
    t = out.table
    # the end-to-end latencies too: the closed loop's replay times each request's
    assert list(t.status) == ["ok"] * 6 and (t.predicted > 0).all()


def test_a_json_that_is_no_tools_result_is_left_to_the_csv_reader(tmp_path):
    other = tmp_path / "x.json"
    other.write_text('{"a": 1}')
    assert tool_frame(other) is None
    # it was "cannot read the CSV: Error tokenizing data. C error: ..." with no fix
    with pytest.raises(
        SpecError, match="is JSON, but not a result of vllm bench serve, aiperf or InferenceX"
    ):
        load_measured(other)
    other.write_text('{\n "model_type": "llama",\n "hidden_size": 4096\n}\n')  # a config.json
    with pytest.raises(SpecError, match="give a measured CSV"):
        load_measured(other)
    # a .json file of one value: it had been read as a CSV missing its columns
    for value in ("null", "42", '"text"'):
        other.write_text(value)
        with pytest.raises(SpecError, match="is JSON, but not a result"):
            load_measured(other)
    plain = tmp_path / "rows.csv"
    plain.write_text("42\n")  # a CSV of one cell is still the CSV reader's
    with pytest.raises(SpecError, match="columns missing"):
        load_measured(plain)


def test_a_result_file_nested_too_deeply_is_one_clear_line(tmp_path):
    """tool_results read JSON with a bare json.loads: a deeply nested file (one object, or a
    line of an appended file) was a RecursionError traceback; the input boundary's reader
    makes it one line naming the file (and the line), exit 2."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    one, appended = tmp_path / "one.json", tmp_path / "appended.json"
    one.write_text(deep)
    appended.write_text('{"completed": 1}\n' + deep + "\n")
    for path, field in ((one, ""), (appended, "field 'line 2': ")):
        result = CliRunner().invoke(main, ["compare-measured", str(path)])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"error: {path}: {field}not valid JSON: nested too deeply (flatten the file)\n"
        )


def test_export_command_writes_the_files_and_refuses_with_exit_1(tmp_path):
    from click.testing import CliRunner

    from inference_econ.cli import main

    out = tmp_path / "plan"
    args = ["export", "Llama 3.3 70B", "-H", "H100", "--engine", "sglang", "--weight-bits", "8"]
    point = ["--gpus", "8", "--batch", "64", "--prompt-tokens", "2000", "--output-tokens", "500"]
    r = CliRunner().invoke(main, [*args, *point, "--out", str(out)])
    assert r.exit_code == 0, r.output
    # and the folder's record of what the tool wrote (output/files.MANIFEST)
    assert sorted(p.name for p in out.iterdir()) == [
        ".inference-econ-files.json", "benchmark.md", "launch.sh", "plan.json"
    ]  # fmt: skip
    assert "sglang 0.5.3" in (out / "launch.sh").read_text()
    bad = ["--plan", "disagg", "--gpus", "1", "--batch", "8", "--prompt-tokens", "2000",
           "--output-tokens", "500", "--prefill-gpus", "1"]  # fmt: skip
    r = CliRunner().invoke(main, [*args[:6], "--weight-bits", "16", *bad])
    assert r.exit_code == 1 and "memory check failed" in r.output
    # multi-step scheduling: no engine version an export targets has it (vLLM dropped it with V0)
    load = ["--plan", "capacity", "--rate", "5", "--slo-ttft-p99", "1", "--scheduler-steps", "9"]
    r = CliRunner().invoke(main, [*args, *load, "--out", str(tmp_path / "multi")])
    assert r.exit_code == 2 and "--scheduler-steps" in r.output and "drop" in r.output
    assert not (tmp_path / "multi").exists()


def test_point_and_disagg_exports_give_every_expected_figure_its_interval(plans):
    """Under an engine profile every figure a point or disaggregated plan states
    carries ordered ends around it - the speeds from the time per output token's, swapped
    (1 / TPOT per request, the batch's over it) - and the disaggregated plan its pools' own."""
    dense, disagg = plans["vllm"][0], plans["vllm"][3]
    for plan in (dense, disagg):
        for name, value in plan.expected.items():
            lo90, lo80, hi80, hi90 = (
                plan.intervals[f"{name}_{k}"] for k in ("low90", "low80", "high80", "high90")
            )
            assert lo90 <= lo80 <= value <= hi80 <= hi90, name
            assert lo90 < hi90, name
        speed = "output_tokens_per_s_per_request"
        assert plan.intervals[f"{speed}_low80"] == pytest.approx(
            1.0 / plan.intervals["tpot_s_high80"]
        )


def measured_as_planned(plan, model_id: str, meta: dict) -> dict:
    """A ``vllm bench serve`` result of the plan's closed loop that measured exactly the plan's
    expected figures (every latency's mean and median at its expected value; no p99, which the
    plan does not give)."""
    e, n = plan.expected, plan.load.requests
    prompt, output = plan.load.input_mean, plan.load.output_mean
    ms = {"ttft": 1e3 * e["ttft_s"], "tpot": 1e3 * e["tpot_s"], "e2el": 1e3 * e["e2e_latency_s"]}
    return {
        "backend": "openai-chat",
        "model_id": model_id,
        **meta,
        "num_prompts": n,
        "request_rate": "inf",
        "max_concurrency": plan.load.concurrency,
        "completed": n,
        "total_input_tokens": prompt * n,
        "total_output_tokens": output * n,
        "duration": output * n / e["output_tokens_per_s"],
        "request_throughput": e["output_tokens_per_s"] / output,
        "output_throughput": e["output_tokens_per_s"],
        **{f"{s}_{m}_ms": v for m, v in ms.items() for s in ("mean", "median")},
    }


def test_a_tensorrt_llm_result_is_read_at_the_version_its_export_names(tmp_path):
    """DeepSeek-R1 on 8 H200 at batch 256 under TensorRT-LLM: the export names 1.2.1, whose
    kernels the tables time on the H200, so its plan is priced on the kernel clock, as
    compare-measured prices a result stating that version; the result's metadata carries the
    version (``ie_engine_version``), so a result read far from its plan.json, with no
    --engine, is predicted as the plan (it had been read as "trtllm (version not stated),
    host overheads charged": TPOT 82.3 ms against the plan's 73.1 ms). --clock engine keeps
    the profile's terms, and no line says otherwise."""
    from inference_econ.measured.comparison import compare

    kw = dict(engine="trtllm", gpus=8, batch=256, prompt_tokens=1000, output_tokens=1000)
    plan = api.export("DeepSeek-R1", "H200", **kw)
    assert plan.setting.assumptions.kernel_tables is True
    assert plan.notes[1].startswith("Priced on the kernel clock: trtllm 1.2.1's kernels")
    meta = bc.metadata(plan)
    assert meta["ie_engine_version"] == "1.2.1"
    path = tmp_path / "elsewhere" / "vllm-bench.json"
    path.parent.mkdir()
    path.write_text(json.dumps(measured_as_planned(plan, "deepseek-ai/DeepSeek-R1", meta)))
    t = compare(path, "achievable").table
    assert list(t.metric) == ["throughput", "mean_TPOT", "mean_TTFT", "mean_e2el"]
    assert list(t.status) == ["ok"] * 4
    assert all("version not stated" not in e and "kernel tables" in e for e in t.engine)
    assert (t.predicted / t.measured - 1).abs().max() < 0.01, t[["metric", "measured", "predicted"]]
    engine_clock = api.export("DeepSeek-R1", "H200", clock="engine", **kw)
    assert engine_clock.setting.assumptions.kernel_tables is False
    assert not any("kernel clock" in n for n in engine_clock.notes)
    # vLLM's version is not in the tables: its plan stays on the engine clock
    assert not api.export(
        "DeepSeek-R1", "H200", **{**kw, "engine": "vllm"}
    ).setting.assumptions.kernel_tables


def test_a_point_plans_figures_are_what_compare_measured_predicts_of_its_benchmark(tmp_path):
    """The benchmark loop runs one serving model: a point plan's expected figures are the load
    engine's run of the closed loop its benchmark.md writes, so a ``vllm bench serve`` result
    that measured exactly those figures is predicted within 1 % by compare-measured (the
    request view's closed form had said 740 output tokens/s where compare-measured predicted
    657 of the same run). Its prices charge the instance's time: input plus output dollars of
    a request are the instance's dollars over the requests it completes."""
    from inference_econ.measured.comparison import compare

    plan = api.export(**LLAMA, engine="vllm", gpus=8, batch=8, prompt_tokens=200, output_tokens=40)
    e, n = plan.expected, plan.load.requests
    assert plan.load.concurrency == 8 and n == 200
    # the closed loop: 8 requests in flight, each TTFT + 39 TPOTs long, 40 tokens out each
    assert e["output_tokens_per_s"] == pytest.approx(8 * 40 / e["e2e_latency_s"], rel=0.02)
    assert e["e2e_latency_s"] == pytest.approx(e["ttft_s"] + 39 * e["tpot_s"], rel=0.02)
    per_request = 40 * e["usd_per_m_output_tokens"] / 1e6 + 200 * e["usd_per_m_input_tokens"] / 1e6
    instance = 8 * plan.setting.gpu.price_usd_per_hour / 3600 / (e["output_tokens_per_s"] / 40)
    assert per_request == pytest.approx(instance, rel=1e-6)
    run = measured_as_planned(plan, "meta-llama/Llama-3.3-70B-Instruct", bc.metadata(plan))
    path = tmp_path / "vllm-bench.json"
    path.write_text(json.dumps(run))
    t = compare(path, "achievable", engine="vllm").table
    assert list(t.metric) == ["throughput", "mean_TPOT", "mean_TTFT", "mean_e2el"]
    assert list(t.status) == ["ok"] * 4
    assert (t.predicted / t.measured - 1).abs().max() < 1e-4, t[["metric", "measured", "predicted"]]
    # its end-to-end latency is the closed loop's, each request's TTFT and decode steps
    (e2el,) = t.predicted[t.metric == "mean_e2el"]
    assert e2el == pytest.approx(1e3 * e["e2e_latency_s"], rel=1e-4)
    # a longer loop: the result's 640 completed requests are the ones replayed (the replay drew
    # its own 400 and read TPOT 1.7 % off the plan's, its ramp-down a smaller share of the run)
    plan = api.export(
        **LLAMA, engine="vllm", gpus=8, batch=64, prompt_tokens=1000, output_tokens=200
    )
    assert plan.load.requests == 640
    path.write_text(
        json.dumps(
            measured_as_planned(plan, "meta-llama/Llama-3.3-70B-Instruct", bc.metadata(plan))
        )
    )
    assert load_measured(path)[0].lengths.issued == 640
    t = compare(path, "achievable", engine="vllm").table
    assert all("the run's 640 requests replayed" in e for e in t.engine), list(t.engine)
    assert (t.predicted / t.measured - 1).abs().max() < 1e-4, t[["metric", "measured", "predicted"]]


def test_a_plan_with_attention_over_part_of_its_tensor_group_is_read_back_as_planned(tmp_path):
    """SGLang's --dp-size below --tp (DeepSeek-V3 on 8 H200 at batch 64 over DeepEP: four
    attention ranks of TP2, its experts split EP8 from a micro-batch of 64): the result file
    names the ranks ("TP8 (EP8, DP4 attn-DP)") and the exchange ("moe_a2a_backend deepep"),
    and compare-measured replays that layout, not attention on eight ranks of TP1 (which
    would be 4 % off the plan's own throughput at 1,000/300 tokens)."""
    from inference_econ.measured.comparison import compare

    plan = api.export("DeepSeek-V3", "H200", weight_bits=8, engine="sglang", gpus=8, batch=64,
                      prompt_tokens=1000, output_tokens=100, deepep=True)  # fmt: skip
    (w,) = plan.workers
    assert (w.tensor, w.attention_dp, w.expert) == (8, 4, 8)
    # one copy on one node: nothing to place elsewhere (every SGLang plan had said so)
    assert "host names are localhost" not in bundle.render(plan)["launch.sh"]
    meta = bc.metadata(plan)  # what the benchmark records in its result file
    assert meta["ie_parallelism"] == "TP8 (EP8, DP4 attn-DP)"
    assert meta["ie_stated"] == "moe_a2a_backend deepep"
    run = measured_as_planned(plan, "deepseek-ai/DeepSeek-V3", meta)
    path = tmp_path / "sglang-bench.json"
    path.write_text(json.dumps(run))
    t = compare(path, "achievable", engine="sglang").table
    assert set(t.layout) == {"TP8 EP8 DP4 attn-DP"} and list(t.status) == ["ok"] * len(t)
    # the same engine model on both sides, the replay running the result's own 640 requests;
    # the result names its KV cache's format, 16-bit here ("FP8" alone had read as an FP8
    # cache, 2-4 % off)
    assert meta["ie_precision"] == "FP8 (KV cache bf16)"
    assert (t.predicted / t.measured - 1).abs().max() < 1e-4, t[["metric", "measured", "predicted"]]


def test_the_guide_s_partial_attention_dp_example_needs_deepep():
    """The guide's SGLang example of attention over part of the tensor group: DeepSeek-V3 on
    8 H200 at batch 32, 1,000 / 100 tokens, is two attention ranks of TP4 over DeepEP, and a
    plain tensor group with its experts tensor-split without it."""
    load = dict(weight_bits=8, engine="sglang", gpus=8, batch=32, prompt_tokens=1000,
                output_tokens=100)  # fmt: skip
    with_deepep = api.export("DeepSeek-V3", "H200", deepep=True, **load)
    assert bc.metadata(with_deepep)["ie_parallelism"] == "TP8 (EP8, DP2 attn-DP)"
    assert with_deepep.load.requests == 320
    plain = api.export("DeepSeek-V3", "H200", **load)
    assert bc.metadata(plain)["ie_parallelism"] == "TP8 (EP1)"


def test_a_tensorrt_llm_plan_attends_on_the_whole_group_or_every_gpu_alone():
    """TensorRT-LLM's enable_attention_dp is all of the tensor group or none: its point plans
    choose among those layouts, so DeepSeek-V3 on 8 H200 at batch 32 exports (it had chosen two
    attention ranks of TP4 and then refused its own plan); SGLang over DeepEP keeps two
    ranks."""
    for engine, ranks in (("trtllm", {1, 8}), ("sglang", {2})):
        plan = api.export("DeepSeek-V3", "H200", weight_bits=8, engine=engine, gpus=8, batch=32,
                          prompt_tokens=1000, output_tokens=100,
                          deepep=engine == "sglang")  # fmt: skip
        (w,) = plan.workers
        assert w.attention_dp in ranks and "launch.sh" in bundle.render(plan), (engine, w)


def test_experts_are_spread_only_as_the_engine_launches_them():
    """gpt-oss-20b's 32 experts on 3 GPUs: TensorRT-LLM and SGLang assert num_experts %
    ep_size == 0, so their workers tensor-split the experts (no EP degree, no --ep_size flag);
    vLLM would spread them unevenly (11, 11, 10), which the model does not price, and runs
    attention data parallelism only with expert-parallel MoE layers, so its point lays the
    3 GPUs out as three pipeline stages (it had chosen TP3 with three attention ranks and then
    refused its own plan); a worker with that layout is still refused with the reason. On 4
    GPUs every engine spreads them 8 a rank."""
    for engine, gpus, want, layout in (
        ("trtllm", 3, 1, "TP3"), ("sglang", 3, 1, "TP3"), ("vllm", 3, 1, "TP1PP3"),
        ("trtllm", 4, 4, "TP4"), ("vllm", 4, 4, "TP4"),
    ):  # fmt: skip
        plan = api.export("gpt-oss-20b", "H100", engine=engine, gpus=gpus, batch=32,
                          prompt_tokens=1000, output_tokens=100)  # fmt: skip
        (w,) = plan.workers
        assert w.expert == want, (engine, gpus, w)
        assert bc.metadata(plan)["ie_parallelism"].startswith(f"{layout} (EP{want}")
        text = bundle.render(plan)["launch.sh"]
        assert ("--ep_size 3" in text or "--ep-size 3" in text) is False, (engine, text)
        if (engine, gpus) == ("vllm", 3):
            assert (w.pipeline, w.tensor, w.attention_dp) == (3, 1, 1)
            tp3 = dataclasses.replace(w, pipeline=1, tensor=3, attention_dp=3)
            with pytest.raises(SpecError, match="spreading gpt-oss-20b's experts unevenly"):
                bundle.render(dataclasses.replace(plan, workers=(tp3,)))


def test_sglang_keeps_mxfp4_experts_unsplit_off_sm100():
    """SGLang 0.5.3 runs gpt-oss's MXFP4 experts off SM100 through its Triton kernel only at
    ep_size 1, and upcasts them to BF16 at any other size (server_args.py's GptOss branch,
    layers/quantization/mxfp4.py): on 8 H200 the export had launched --ep-size 8, four times
    the expert weights it planned. It launches them tensor-split there and says so; on B200
    (FlashInfer's MXFP4 kernel at any EP size) it keeps EP8."""
    for gpu, want in (("H200", 1), ("B200", 8)):
        plan = api.export("gpt-oss-120b", gpu, engine="sglang", gpus=8, batch=256,
                          prompt_tokens=1000, output_tokens=1000)  # fmt: skip
        (w,) = plan.workers
        assert w.expert == want, (gpu, w)
        text = bundle.render(plan)["launch.sh"]
        assert ("--ep-size 8" in text) is (want == 8), (gpu, text)
        assert ("upcasts them to BF16" in text) is (want == 1), (gpu, text)


def test_sglang_is_launched_to_admit_the_whole_batch_over_its_attention_ranks():
    """SGLang 0.5.3 gives each attention rank its share of --max-running-requests rounded down
    (tp_worker.py): DeepSeek-R1 at batch 250 over 4 ranks had been launched with 250, 62 a rank
    and 248 in all. The cap is the batch rounded up to whole shares, 252 (63 a rank)."""
    plan = api.export("DeepSeek-R1", "H200", engine="sglang", gpus=8, batch=250,
                      prompt_tokens=1000, output_tokens=1000)  # fmt: skip
    (w,) = plan.workers
    assert w.attention_dp == 4 and w.batch == 252
    text = bundle.render(plan)["launch.sh"]
    assert "--dp-size 4" in text and "--max-running-requests 252" in text
    assert "Batch cap 252 an instance (63 on each of its 4 attention ranks" in text


def test_an_export_launches_the_expert_degree_its_point_was_priced_with(tmp_path):
    """Qwen3-235B-A22B on 24 H200 (FP8 weights) at batch 508, 1,000 / 200 tokens: TP12 PP2 with
    six attention ranks, its 128 experts priced EP4 (gcd of 12 and 128) once batches are
    large. SGLang 0.5.3 takes --ep-size 4 of --tp-size 12 (moe_tp_size 3) and TensorRT-LLM
    --ep_size likewise: the export launches EP4 and prices it ($0.99 per million output
    tokens beside the point's own $0.98, the replay drawing its own requests). plan.json and the benchmark's metadata state EP4, read back by the measured-row
    parser as EP4 (a layout without it would read as splitting the experts by the batch)."""
    from inference_econ.measured.layouts import layout_of
    from inference_econ.serving.requests import request

    plan = api.export("Qwen3-235B-A22B", "H200", weight_bits=8, engine="sglang", gpus=24,
                      batch=508, prompt_tokens=1000, output_tokens=200,
                      checkpoint="./q8")  # fmt: skip
    (w,) = plan.workers
    assert (w.gpus, w.pipeline, w.tensor, w.attention_dp, w.expert) == (24, 2, 12, 6, 4)
    assert plan.expected["usd_per_m_output_tokens"] == pytest.approx(0.991, rel=0.01)
    point = request(plan.setting, 24, w.batch, 1000, 200, discrete=True)
    assert point["usd_per_m_output_tokens"] == pytest.approx(0.977, rel=0.01)
    files = bundle.render(plan)
    assert (
        "--tp-size 12 --pp-size 2 --enable-dp-attention --dp-size 6 --ep-size 4"
        in files["launch.sh"]
    )
    stated = json.loads(files["plan.json"])["workers"][0]["parallelism"]
    assert stated == bc.metadata(plan)["ie_parallelism"] == "TP12PP2 (EP4, DP6 attn-DP)"
    read = layout_of(stated, 24, "plan.json")
    assert (read.tensor, read.pipeline, read.attention_ranks, read.expert) == (12, 2, 6, 4)
    # a layout the export launches without expert parallelism says so: EP1, read back as EP1
    dense_experts = dataclasses.replace(w, expert=1)
    assert layout_of(ec.parallelism(dense_experts, moe=True), 24, "plan.json").expert == 1
    assert ec.parallelism(dense_experts) == "TP12PP2 (DP6 attn-DP)"  # a dense model's
    # vLLM 0.11's expert parallelism spans the whole group (EP12, unevenly): a worker it
    # launches tensor-split is priced so and says so
    from inference_econ.export.experts import expert_note, launched_degree

    assert launched_degree(plan.setting, 12, "vllm") == 1
    assert launched_degree(plan.setting, 12, "trtllm") == 4
    note = expert_note(plan.setting, 12, 1, "vllm", "0.11.0")
    assert "128 experts EP4 over TP12" in note and "figures are EP1's" in note


# --- the checkpoint every shipped model launches ---------------------------------------------

#: Shipped models without public weights (GPT-3, PaLM, GPT-4 as reported) or that are the
#: paper's variants of a real model (no weights of their own).
NO_PUBLIC_WEIGHTS = {
    "GPT-3 175B",
    "PaLM 540B",
    "GPT-4 (reported)",
    "DeepSeek-V3 (paper approximation)",
    "Llama 3 8B MQA",
    "Llama 3.1 405B (paper)",
}


def test_every_shipped_model_exports_its_hugging_face_repository():
    """An export launched ``vllm serve 'Llama 3 8B'`` (its display name, which vLLM reads as a
    local folder) for models whose file did not start its source with the repository: each
    shipped model now names it (``hf_repository``), the one its source cites, and the launch
    command loads it; a model without public weights is refused until --checkpoint names them."""
    from inference_econ.specs import catalog
    from inference_econ.specs.architecture import REPO_ID

    point = dict(
        gpus=8,
        batch=1,
        prompt_tokens=16,
        output_tokens=2,
    )  # each at its checkpoint's own precision
    refused = set()
    for entry in catalog.entries("models"):
        try:
            try:
                plan = api.export(entry.name, "H200", engine="sglang", **point)
            except SpecError as exc:  # KV heads that do not divide 8 GPUs: a small model on 1
                if exc.field != "--gpus":
                    raise
                plan = api.export(entry.name, "H200", engine="sglang", **{**point, "gpus": 1})
        except SpecError as exc:
            assert exc.field == "--checkpoint" and "give --checkpoint" in str(exc)
            refused.add(entry.name)
            continue
        arch = plan.setting.model
        assert plan.checkpoint == arch.hf_repository and REPO_ID.match(plan.checkpoint)
        assert plan.checkpoint.split("/")[1].lower() in arch.source.lower()
        assert f"--model-path {plan.checkpoint} " in api.launch_files(plan)["launch.sh"]
    assert refused == NO_PUBLIC_WEIGHTS
    named = api.export("GPT-3 175B", "H200", engine="sglang", checkpoint="./gpt3", **point)
    assert named.checkpoint == "./gpt3"
    by_name = {
        "Llama 3 8B": "meta-llama/Meta-Llama-3-8B",
        "Mixtral 8x22B": "mistralai/Mixtral-8x22B-v0.1",
    }
    for name, repo in by_name.items():
        plan = api.export(name, "H200", engine="vllm", **point)
        assert plan.checkpoint == repo


def test_a_pipelined_workers_memory_is_checked_stage_by_stage():
    """A worker of PP8 x TP2 on 16 H100s holds each stage's KV cache once (2 GPUs a stage,
    under Llama 3.3 70B's 8 KV heads), as the search's feasibility counts it: the cheapest
    frontier point's 1,460 requests at 2,250 tokens fit, where counting all 16 GPUs as one
    attention group (two copies of the cache) refused the plan ``export --plan frontier
    --pick cheapest`` had just chosen."""
    setting = make_setting("Llama 3.3 70B", "H100", weight_bits=8, assumptions="achievable")
    staged = check_worker(setting, "trtllm", 16, 1460, 2250, 2560, pipeline=8)
    flat = check_worker(setting, "trtllm", 16, 1460, 2250, 2560)
    assert staged.fits and not flat.fits
    # a GPU's cache by hand: 80 / 8 layers x 8 / 2 KV heads x 128 x (K, V) x 2 bytes a token
    assert staged.kv_needed_bytes_per_gpu == pytest.approx(10 * 4 * 128 * 2 * 2 * 2250 * 1460)
    assert flat.kv_needed_bytes_per_gpu == pytest.approx(2 * staged.kv_needed_bytes_per_gpu)
    # the export's worker of that layout is checked stage by stage (degrees: PP, TP, DP, EP)
    from inference_econ.export.launch import worker

    w = worker(setting, "trtllm", "server", 1, (8, 2, 1, 1), 1460, 8192, 2250, 2560)
    assert w.memory.fits and w.memory.kv_needed_bytes_per_gpu == staged.kv_needed_bytes_per_gpu


def test_an_export_loads_weights_of_the_plans_format_or_is_refused():
    """An engine loads the checkpoint's own format, quantizing a 16-bit one online to FP8 only
    (vLLM's and SGLang's --quantization fp8, whose engines refuse the flag on a checkpoint
    quantized otherwise): gpt-oss's MXFP4 release at 8 bits, a BF16 release at 4 bits, or at 8
    bits under TensorRT-LLM, are refused unless --checkpoint names weights of that format; an
    FP8 release (DeepSeek-V3) at 8 bits loads as it is, with no quantization flag."""
    point = dict(gpus=4, batch=32, prompt_tokens=1000, output_tokens=500)
    for model, engine, bits in (
        ("gpt-oss-120b", "vllm", 8),
        ("gpt-oss-120b", "sglang", 8),
        ("Llama 3.3 70B", "vllm", 4),
        ("Llama 3.3 70B", "trtllm", 8),
    ):
        with pytest.raises(SpecError, match="give --checkpoint naming a checkpoint quantized"):
            api.export(model, "H100", engine=engine, weight_bits=bits, **point)
    given = api.export("Llama 3.3 70B", "H100", engine="trtllm", weight_bits=8, **point, **TRT_FP8)
    assert given.checkpoint == TRT_FP8["checkpoint"]
    online = api.launch_files(
        api.export("Llama 3.3 70B", "H100", engine="vllm", weight_bits=8, **point)
    )
    assert "--quantization fp8" in online["launch.sh"]
    fp8 = api.export("DeepSeek-V3", "H200", engine="sglang", gpus=8, batch=32, prompt_tokens=1000,
                     output_tokens=500, weight_bits=8)  # fmt: skip
    assert "--quantization" not in api.launch_files(fp8)["launch.sh"]


def test_an_export_the_engine_would_refuse_at_start_is_refused():
    """vLLM 0.11 refuses a step token budget below its batch (SchedulerConfig) and a separate
    draft model (SpeculativeConfig); SGLang 0.5.3 a separate draft beside attention data
    parallelism and any speculation beside pipeline stages (ServerArgs); no engine runs an
    EAGLE head without its checkpoint; every engine refuses requests longer than its max model length,
    which cannot exceed the model's window."""
    small = api.export("Qwama 0.5B", "L40S", engine="vllm", gpus=1, batch=4096, prompt_tokens=16,
                       output_tokens=16)  # fmt: skip
    (w,) = small.workers
    assert w.batch == 4096 and w.token_budget >= 4096
    assert "--max-num-batched-tokens 4096" in api.launch_files(small)["launch.sh"]
    with pytest.raises(SpecError, match="--draft.*no separate draft model"):
        api.export("Llama 3.3 70B", "H100", engine="vllm", gpus=4, batch=8, prompt_tokens=2000,
                   output_tokens=500, draft="Llama 3.1 8B")  # fmt: skip
    with pytest.raises(SpecError, match="beside attention data parallelism"):
        api.export("Qwen3-235B-A22B", "H200", engine="sglang", gpus=8, batch=128,
                   prompt_tokens=2000, output_tokens=1000, draft="Qwen3-8B")  # fmt: skip
    with pytest.raises(SpecError, match="beside pipeline stages"):
        api.export("Llama 3.1 405B", "H100", engine="sglang", gpus=16, batch=16,
                   prompt_tokens=2000, output_tokens=500, draft="Llama 3.1 8B")  # fmt: skip
    for engine in ("vllm", "sglang", "trtllm"):  # an EAGLE head's checkpoint is not known
        with pytest.raises(SpecError, match="loads an EAGLE head from its own checkpoint"):
            api.export("Llama 3.3 70B", "H100", engine=engine, gpus=4, batch=8,
                       prompt_tokens=2000, output_tokens=500, draft_heads="eagle")  # fmt: skip
    with pytest.raises(SpecError, match="--max-model-len.*longer than Llama 2 70B's context"):
        api.export("Llama 2 70B", "H100", engine="vllm", gpus=4, batch=16, prompt_tokens=3000,
                   output_tokens=500, max_model_len=8192)  # fmt: skip
    with pytest.raises(SpecError, match="longer than Llama 2 70B's context window"):
        api.export("Llama 2 70B", "H100", engine="vllm", gpus=4, batch=16, prompt_tokens=4000,
                   output_tokens=500)  # fmt: skip


def test_a_benchmark_says_where_vllm_bench_spreads_outputs_the_plan_does_not(plans):
    """vLLM 0.11's random dataset draws prompts and outputs within mean x (1 +- r), one r for
    both: prompts of sd 500 about 2,000 (r = 0.433) spread 300-token outputs over 170-430,
    which benchmark.md says beside the command; equal spreads need no note."""
    dense = plans["vllm"][0]
    load = dataclasses.replace(dense.load, input_mean=2000.0, input_sd=500.0, output_mean=300.0)
    text = bc.benchmark_text(dataclasses.replace(dense, load=load))
    assert "--random-range-ratio 0.433" in text and "drawn within 170-430 tokens" in text
    assert "one range ratio" not in bc.benchmark_text(dense)


def test_an_export_reuses_prefixes_as_its_plan_did_and_its_benchmark_sends_them():
    """A capacity plan of prompts behind a shared system prompt priced the engine's prefix
    cache: TensorRT-LLM's block reuse is on (it had been written off whatever the plan), and
    with --no-prefix-caching vLLM's is turned off (on by default in vLLM 0.11); the benchmark
    sends the prefix before each prompt's own tokens: vllm bench serve's --random-prefix-len
    (one prefix: a note says where the plan has more) and aiperf's pool of prefix prompts.
    Each engine's plan is searched at the instance size the search over every size up to 8
    GPUs gives it (TensorRT-LLM 2 GPUs, vLLM 8)."""
    load = dict(plan="capacity", arrival_rate_per_s=2.0, input_lengths="500", output_lengths="100",
                shared_prefix_tokens=3000, shared_prefixes=4, requests=300, slo_ttft_p99_s=2.0,
                slo_tpot_p99_s=0.05, max_gpus=8)  # fmt: skip
    trt = api.export("Llama 3.3 70B", "H100", engine="trtllm", sizes=[2], **load)
    assert trt.prefix_caching and trt.load.prefix_tokens == 3000 and trt.load.prefixes == 4
    files = api.launch_files(trt)
    assert yaml.safe_load(files["trtllm-server.yaml"])["kv_cache_config"]["enable_block_reuse"]
    bench = files["benchmark.md"]
    assert "--random-input-len 500" in bench and "--random-prefix-len 3000" in bench
    assert "--prefix-prompt-length 3000 --prefix-prompt-pool-size 4" in bench
    assert "one shared prefix of 3000 tokens" in bench
    off = api.export(
        "Llama 3.3 70B", "H100", engine="vllm", prefix_caching=False, sizes=[8], **load
    )
    assert "--no-enable-prefix-caching" in api.launch_files(off)["launch.sh"]
    assert (
        "--no-enable-prefix-caching"
        not in api.launch_files(dataclasses.replace(off, prefix_caching=True))["launch.sh"]
    )


def test_a_draft_of_another_tokenizer_is_priced_but_not_exported():
    """The target verifies a draft's tokens, so engines run only a draft sharing its
    tokenizer: a Mistral 7B draft (32,000 tokens) for Llama 3 70B (128,256) is priced, as the
    paper prices cross-family drafts, but an export of it is refused; Llama 3 8B is exported
    (for SGLang, which loads a draft by name)."""
    point = dict(gpus=8, batch=1, prompt_tokens=1000, output_tokens=100)
    assert api.point("Llama 3 70B", "H100", draft="Mistral 7B", gpus=8, batch=1) is not None
    with pytest.raises(SpecError, match="vocabulary .* is not Llama 3 70B's"):
        api.export("Llama 3 70B", "H100", engine="trtllm", draft="Mistral 7B", **point)
    assert api.export("Llama 3 70B", "H100", engine="sglang", draft="Llama 3 8B", **point)


def test_a_tensorrt_llm_draft_is_fetched_to_the_folder_its_options_name():
    """TensorRT-LLM 1.2.1 loads a draft from ``speculative_model`` (DecodingBaseConfig: a Hub
    id or a local folder; ``pytorch_weights_path`` is gone): the options name the folder the
    script downloads the draft into on each node before the server starts, so every rank of
    the copy finds it there."""
    plan = api.export("Llama 3.3 70B", "H100", engine="trtllm", gpus=4, batch=8,
                      prompt_tokens=2000, output_tokens=500, draft="Llama 3.1 8B")  # fmt: skip
    first, server = ec.commands(plan)
    assert first.role == "draft model" and first.foreground and first.node == server.node
    assert 'snapshot_download("meta-llama/Llama-3.1-8B", local_dir="draft-model")' in first.argv[2]
    options = yaml.safe_load(server.files["trtllm-server.yaml"])
    assert options["speculative_config"] == {
        "decoding_type": "DraftTarget", "max_draft_len": plan.speculation[2],
        "speculative_model": "./draft-model",
    }  # fmt: skip
    script = api.launch_files(plan)["launch.sh"]
    assert script.index("snapshot_download") < script.index("trtllm-serve")
    with pytest.raises(SpecError, match="a copy over several nodes"):  # mpirun would not wait
        api.export("Llama 3.1 405B", "H100", engine="trtllm", gpus=16, batch=8, weight_bits=8,
                   checkpoint="nvidia/Llama-3.1-405B-Instruct-FP8", prompt_tokens=2000,
                   output_tokens=500, draft="Llama 3.1 8B")  # fmt: skip


def test_an_attention_dp_point_launches_each_ranks_share_of_its_batch():
    """DeepSeek-V3 on 8 H200 at batch 256: TensorRT-LLM (8 attention ranks) and vLLM (4) read
    max_batch_size / max_num_seqs per attention rank, so each worker admits its rank's share
    (32, 64; 256 an instance) and TensorRT-LLM captures CUDA graphs up to 32, not 256; memory
    is still checked at the plan's 256, and the expected figures are the closed loop of 256
    clients. SGLang's cap is the instance's: it keeps 256."""
    from inference_econ.export.engine_configs import trtllm_options

    for engine, ranks, cap, flag in (("trtllm", 8, 32, "--max_batch_size 32"),
                                     ("vllm", 4, 64, "--max-num-seqs 64"),
                                     ("sglang", None, 256, "--max-running-requests 256")):  # fmt: skip
        plan = api.export("DeepSeek-V3", "H200", weight_bits=8, engine=engine, gpus=8, batch=256,
                          prompt_tokens=1000, output_tokens=100)  # fmt: skip
        (w,) = plan.workers
        assert ranks is None or w.attention_dp == ranks, (engine, w)
        assert (w.batch, w.memory.batch) == (cap, 256), engine
        assert flag in bundle.render(plan)["launch.sh"], engine
        said = [n for n in plan.notes if "attention ranks (256 an instance" in n]
        assert len(said) == (cap != 256), (engine, plan.notes)
        assert "closed loop of 256 clients" in plan.notes[0]
        record = bundle.plan_record(plan)["workers"][0]  # plan.json says whose cap it is
        assert record["batch_per"] == ("instance" if cap == 256 else "attention rank")
        if engine == "trtllm":
            assert trtllm_options(plan, w)["cuda_graph_config"]["max_batch_size"] == 32


def test_a_capacity_plan_launches_the_experts_of_its_mean_batch_and_says_which_steps_differ():
    """A capacity plan's simulation prices each decode step's experts by its micro-batch
    (Qwen3-235B on TP2: EP2 from 32 sequences, tensor-split below); an engine runs one
    placement, so the launch takes the one at the plan's mean micro-batch and a line says the
    steps on the other side of 32 run otherwise than simulated. A plan needing expert
    parallelism (vLLM's attention DP) keeps EP2 and says why."""
    from inference_econ.export.experts import simulated_degree

    s = make_setting("Qwen3 235B", "H200", weight_bits=8, activation_bits=8,
                     assumptions="achievable")  # fmt: skip
    e, line = simulated_degree(s, (1, 2, 1, 2), 116.0, "trtllm")
    assert e == 2 and line.startswith("Experts EP2, the placement at the plan's mean decode")
    assert "its steps below a micro-batch of 32 run EP2, not tensor-split as simulated" in line
    e, line = simulated_degree(s, (1, 2, 1, 2), 2.0, "trtllm")
    assert e == 1 and "its steps from a micro-batch of 32 run tensor-split, not EP2" in line
    e, line = simulated_degree(s, (1, 2, 2, 2), 2.0, "vllm")
    assert (
        e == 2 and "expert parallelism being needed for vLLM's attention data parallelism" in line
    )
    assert simulated_degree(s, (1, 2, 1, 1), 116.0, "trtllm") == (1, "")
    stated = s.replace(assumptions=s.assumptions.replace(expert_parallel_min_batch_per_sparsity=0))
    assert simulated_degree(stated, (1, 2, 1, 2), 2.0, "trtllm") == (2, "")


def test_a_point_launches_its_experts_as_its_decode_steps_are_priced():
    """gpt-oss-120b on 4 H100 under vLLM at batch 2: the model prices its decode steps with the
    128 experts tensor-split (EP4 only from a micro-batch of 64), so the export launches no
    expert parallelism (it had launched --enable-expert-parallel and priced EP4 at every batch:
    TPOT 9.52 ms beside the point's 6.31); its expected TPOT is the point's. At batch 256 it
    splits them EP4 under four data-parallel attention ranks, each scheduling its own 64
    requests (§F5), though vLLM's default backend gathers every rank's tokens to every rank
    (§F7). A plan that needs
    expert parallelism (redundant experts) keeps EP at a small batch, and says its figures are
    EP's."""
    from inference_econ.serving.requests import request

    kw = dict(engine="vllm", gpus=4, prompt_tokens=500, output_tokens=1000)
    small = api.export("gpt-oss-120b", "H100", batch=2, **kw)
    (w,) = small.workers
    assert (w.tensor, w.attention_dp, w.expert) == (4, 1, 1)
    assert "--enable-expert-parallel" not in bundle.render(small)["launch.sh"]
    assert any(n.startswith("Experts tensor-split (EP1), as the point's") for n in small.notes)
    point = request(small.setting, 4, 2, 500, 1000, discrete=True)
    assert small.expected["tpot_s"] == pytest.approx(point["decode_latency_s"], rel=1e-3)
    assert small.expected["tpot_s"] == pytest.approx(0.00631, rel=2e-3)
    (w,) = api.export("gpt-oss-120b", "H100", batch=256, **kw).workers
    assert (w.attention_dp, w.expert) == (4, 4)
    kept = api.export("DeepSeek-V3", "H200", weight_bits=8, engine="sglang", gpus=8, batch=32,
                      prompt_tokens=1000, output_tokens=100, redundant_experts=32)  # fmt: skip
    assert kept.workers[0].expert == 8
    assert any(
        "expert-parallel MoE layers are needed for redundant experts" in n for n in kept.notes
    )


def test_a_capacity_export_says_the_confident_plan_beside_the_expected_one():
    # 16 req/s of Llama 3.1 8B on one H100 near its knee (400 requests): the expected plan is
    # one instance and capacity's 90 % plan two; the export had written the one instance
    # without a word of the other (14 req/s: one instance either way, and no such line)
    plan = api.export(
        "Llama 3.1 8B", "H100", engine="vllm", plan="capacity", arrival_rate_per_s=16,
        input_lengths="1000", output_lengths="200", slo_ttft_p99_s=1, slo_tpot_p99_s=0.05,
        requests=400, sizes=[1],
    )  # fmt: skip
    assert plan.notes[0].startswith("Expected figures: the simulation of 1 x 1 GPU H100-SXM")
    said = [n for n in plan.notes if n.startswith("This launch is the expected plan")]
    assert len(said) == 1 and "At 90 % confidence" in said[0], plan.notes
    assert "the targets hold with 2 x 1 GPU H100-SXM ($4.20 an hour against $2.10)" in said[0]


def test_an_export_is_priced_as_the_engine_version_it_launches_runs():
    """An export launches vLLM 0.11.0, which waits for its host work each step (its async
    scheduler is off by default before 0.14): its figures are priced at that version, not at
    the newest release's profile, whose async scheduler hides the host work (docs/model.md
    §F5). By hand: the two steps differ by the host's work, one step's overhead and eight
    sequences'."""
    from inference_econ.specs.engine import select_engine

    plan = api.export(**LLAMA, engine="vllm", gpus=8, batch=8, prompt_tokens=200, output_tokens=40)
    assert plan.setting.assumptions.engine == "vllm@0.11.0"
    assert "engine vllm@0.11.0 preset" in plan.notes[0]
    step = {
        e: api.point(
            **LLAMA, gpus=8, batch=8, assumptions="achievable", engine=e, context_tokens=220
        )["latency_s"]
        for e in ("vllm@0.11.0", "vllm")
    }
    prof = select_engine("vllm", "0.11.0")
    host = prof.step_time_scale * (prof.step_overhead_s + 8 * prof.sequence_overhead_s)
    assert step["vllm@0.11.0"] - step["vllm"] == pytest.approx(host, rel=1e-6)
    assert plan.expected["tpot_s"] == pytest.approx(step["vllm@0.11.0"], rel=0.01)
