"""The memory an engine sets aside before its KV cache (docs/model.md §F8): TensorRT-LLM's
runtime, a step's activations by its token budget and attention tensor degree, NCCL's buffers
and an MLA model's dispatch scales, by hand and against TensorRT-LLM's measured KV-cache
capacity (tests/data/trtllm_kv_capacity.csv)."""

import csv
from pathlib import Path

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.measured.predicting import (
    _assumptions_for,
    candidates,
    for_layout,
    resolve_engines,
)
from inference_econ.measured.reading import load_measured
from inference_econ.model.assumptions import preset
from inference_econ.model.latency import StepModel
from inference_econ.model.workload import compile_workload

DATA = Path(__file__).parent / "data"
TRTLLM = ie.load_engine("trtllm")


def _model(name, gpu, engine=TRTLLM, **bits):
    arch = ie.load_model(name)
    if bits:
        arch = arch.with_precision(**bits)
    a = preset("achievable").replace(engine=engine)
    return StepModel(compile_workload(arch, a), ie.load_hardware(gpu), a)


def test_activation_memory_by_hand():
    """2 bytes x the 8,192-token budget x the attention width x the buffers at the tensor
    degree N / (attention replicas), NCCL's buffers with tensor peers, and an MLA model's
    4-byte scale per 128 values of each of a rank's tokens' k routed copies."""
    qwen = _model("Qwen3-235B-A22B", "H200", weight_bits=8).engine
    # four attention ranks (degree 1): 22 MoE buffers of 64 x 128 values, no NCCL buffers
    assert qwen.activation_bytes_per_gpu(4.0, 4.0) == pytest.approx(2 * 8192 * 8192 * 22)
    # one attention group of four: 10 of the 22, and NCCL's 392 MiB
    assert qwen.activation_bytes_per_gpu(4.0, 1.0) == pytest.approx(
        2 * 8192 * 8192 * 10 + 411041792
    )
    # DeepSeek-R1 on eight attention ranks: its hidden width 7,168 and 256 experts, k = 8
    ds = _model("DeepSeek-R1", "H200", weight_bits=8).engine
    assert ds.activation_bytes_per_gpu(8.0, 8.0) == pytest.approx(
        2 * 8192 * 7168 * 22 + 8192 * 7168 * 256 * 8 / 128 * 4
    )
    # a dense model on a tensor group of eight: 5 of 11 buffers (degree 4 and above)
    llama = _model("Llama 3.1 8B", "H100").engine
    assert llama.activation_bytes_per_gpu(8.0) == pytest.approx(2 * 8192 * 4096 * 5 + 411041792)
    # arrays of GPU counts, and a profile that states no activation buffers
    got = llama.activation_bytes_per_gpu(np.array([1.0, 2.0]))
    assert got == pytest.approx([2 * 8192 * 4096 * 11, 2 * 8192 * 4096 * 6.5 + 358612992])
    assert (
        _model("Llama 3.1 8B", "H100", ie.load_engine("vllm")).engine.activation_bytes_per_gpu(1.0)
        == 0.0
    )


def test_a_larger_step_budget_leaves_less_kv_cache():
    small = _model("Llama 3.1 8B", "H100", TRTLLM.replace(step_token_budget=2048))
    large = _model("Llama 3.1 8B", "H100", TRTLLM.replace(step_token_budget=16384))
    gap = float(small.kv_capacity_bytes(1.0)) - float(large.kv_capacity_bytes(1.0))
    assert gap == pytest.approx(0.9 * 2 * (16384 - 2048) * 4096 * 11)


def test_trtllm_kv_capacity_matches_its_measured_most_sequences():
    """TensorRT-LLM's measured largest batch of sequences of max_seq_len tokens (72 runs,
    H100 and GB300, Qwen3-32B FP8 and Llama 3.1 8B, tensor degrees 1-4, memory fractions 0.8
    and 0.9; AIConfigurator's benchmark-anchored tests): the profile's KV cache, sized at each
    run's fraction and max_num_tokens, holds within -3 % and +15 % of each, +1.6 % at the
    median (AIConfigurator's 1.5 % block-allocator reserve, not taken; a 2 GB workspace and no
    activations hold +2.7 %, up to +20.4 %)."""
    with open(DATA / "trtllm_kv_capacity.csv", newline="") as f:
        runs = list(csv.DictReader(f))
    assert len(runs) == 72
    ratios = []
    for r in runs:
        bits = {"FP8": 8, "BF16": 16}[r["precision"]]
        engine = TRTLLM.replace(
            kv_cache_memory_fraction=float(r["free_gpu_memory_fraction"]),
            step_token_budget=int(r["max_num_tokens"]),
        )
        model = _model(r["model"], r["hardware"], engine, weight_bits=bits, kv_cache_bits=16)
        per_sequence = model.work.kv_bytes_per_token * int(r["max_seq_len"])
        held = float(model.kv_capacity_bytes(float(r["tensor_parallel"]))) / per_sequence
        ratios.append(held / int(r["measured_max_sequences"]))
    ratios = np.array(ratios)
    assert 0.995 <= np.median(ratios) <= 1.022
    assert ratios.min() >= 0.97 and ratios.max() <= 1.15


def test_a_row_sizes_activations_at_one_attention_ranks_budget(tmp_path):
    """A DEP8 row's engine limits are the instance's (eight ranks' 8,192 tokens); its
    activation memory is one rank's, at 8,192 tokens, not 65,536."""
    path = tmp_path / "rows.csv"
    path.write_text(
        "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
        "output_len,metric,value,unit,notes\n"
        "a blog,DeepSeek-R1,FP8,H200,8,DEP8,max load,1024,8192,throughput_per_gpu,1218,"
        "output tok/s per GPU,TensorRT-LLM 1.2\n"
    )
    row = load_measured(path)[0]
    base = preset("achievable")
    found = resolve_engines([row], base).get(0)
    cand = next(c for c in candidates(row) if c.attention_dp)
    layout = for_layout(found, cand, row)
    assert layout.config.step_token_budget == 8 * 8192
    assert _assumptions_for(base, layout, cand).profile().step_token_budget == 8192


def test_a_harness_sets_its_runtimes_memory_and_refuses_a_bad_value():
    """NVIDIA's MLPerf harness runs Llama-class models as TensorRT engines (a flat 2 GB set
    aside) and DeepSeek-R1 on the PyTorch backend (the profile's measured terms); a harness
    entry's memory term out of bounds is one line naming the field."""
    from inference_econ.errors import SpecError
    from inference_econ.specs.engine import profile_from_dict

    assert TRTLLM.harness_memory("mlperf", None, "Llama 2 70B", "offline") == {
        "activation_workspace_bytes_per_gpu": 2e9,
        "activation_buffers_per_token": 0.0,
        "moe_activation_buffers_per_token": 0.0,
    }
    assert TRTLLM.harness_memory("mlperf", None, "DeepSeek-R1", "server") == {}
    assert TRTLLM.harness_memory(None, None, "Llama 2 70B", "offline") == {}
    bad = {"name": "x", "harnesses": {"mlperf": [{"activation_buffers_per_token": -1}]}}
    with pytest.raises(SpecError, match=r"harnesses\.mlperf\[0\]\.activation_buffers_per_token"):
        profile_from_dict(bad, "x.yaml")


def test_a_capacity_export_launches_each_attention_rank_with_its_own_limits():
    """TensorRT-LLM's max_batch_size and max_num_tokens hold per attention-DP rank: a plan of
    DeepSeek-R1 on 8 H200 as DEP8 writes the engine's 2,048 and 8,192 (not the instance's
    eight times as many) and checks its memory at 8,192 tokens a step, the KV cache the
    simulation planned with (8-GPU instances only, the size the plan has)."""
    from inference_econ import api
    from inference_econ.load.deployment import fixed_layout
    from inference_econ.model.mixed_step import EngineLayout

    load = dict(
        weight_bits=8,
        arrival_rate_per_s=4.0,
        input_lengths="1000",
        output_lengths="1000",
        slo_ttft_p99_s=5.0,
        slo_tpot_p99_s=0.1,
        requests=100,
        sizes=[8],
    )
    with fixed_layout(8, EngineLayout(8, 1, 8.0)):
        ex = api.export("DeepSeek-R1", ["H200"], engine="trtllm", plan="capacity", **load)
    (w,) = ex.workers
    assert (w.attention_dp, w.batch, w.token_budget) == (8, 2048, 8192)
    model = _model("DeepSeek-R1", "H200", weight_bits=8)
    planned = float(model.kv_capacity_bytes(8.0, 8.0)) / 8
    assert w.memory.kv_capacity_bytes_per_gpu == pytest.approx(planned, rel=1e-9)


def test_a_load_that_states_its_step_budget_sizes_the_cache_at_it():
    """A simulation or capacity search stating --step-tokens runs TensorRT-LLM with that
    max_num_tokens, which sizes its activations: the instance's KV cache is the profile's at
    that budget (the engine's own 8,192 when none is stated)."""
    from inference_econ.load.deployment import instance_for
    from inference_econ.load.engine import ENGINE_OWN, EngineConfig
    from inference_econ.serving.setting import make_setting

    s = make_setting(
        "Llama 3.1 8B", "H100", assumptions="achievable", engine="trtllm", weight_bits=8
    )
    stated = tuple(x for x in ENGINE_OWN if x != "step_token_budget")
    own = instance_for(s, 1, EngineConfig(engine_own=ENGINE_OWN), 1024.0)
    large = instance_for(s, 1, EngineConfig(step_token_budget=65536, engine_own=stated), 1024.0)
    at_8192 = _model("Llama 3.1 8B", "H100", weight_bits=8)
    at_65536 = _model(
        "Llama 3.1 8B", "H100", TRTLLM.replace(step_token_budget=65536), weight_bits=8
    )
    assert large.kv_capacity / own.kv_capacity == pytest.approx(
        float(at_65536.kv_capacity_bytes(1.0)) / float(at_8192.kv_capacity_bytes(1.0)), rel=1e-12
    )
    assert large.kv_capacity < 0.95 * own.kv_capacity


def test_a_budget_whose_activations_fill_the_gpu_is_one_line_naming_it():
    """A step budget whose activations leave no room for a KV cache is refused in one line
    that says so and what to lower (exit 1: the simulation cannot run)."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "2"]
    args += ["--prompt-tokens", "1000", "--output-tokens", "100", "--requests", "50"]
    result = CliRunner().invoke(main, [*args, "--step-tokens", "4000000"])
    assert result.exit_code == 1
    assert "a step of 4,000,000 tokens sets 360.4 GB aside for its activations" in result.output
    assert "lower --step-tokens" in result.output and "Traceback" not in result.output
    # where the weights alone do not fit, the budget is not what to lower
    big = CliRunner().invoke(main, ["simulate", "Llama 3.1 405B", *args[2:]])
    assert big.exit_code == 1 and "no room for a KV cache" in big.output
    assert "step-tokens" not in big.output


def test_an_instances_limits_are_each_attention_ranks_where_the_engine_schedules_per_rank():
    """TensorRT-LLM's and vLLM's limits hold per attention-DP rank, SGLang's per instance: an
    instance of 8 ranks holds 8 times a rank's, and a rank is launched with its own."""
    from inference_econ.load.engine import EngineConfig
    from inference_econ.model.mixed_step import EngineLayout

    dep8, tp8 = EngineLayout(8, 1, 8.0), EngineLayout(8, 1, 1.0)
    rank = EngineConfig(max_batch_requests=2048, step_token_budget=8192, per_attention_rank=True)
    assert rank.on_layout(dep8).rank_limits(dep8) == (2048, 8192)
    assert rank.on_layout(dep8).step_token_budget == 8 * 8192
    assert rank.on_layout(tp8).rank_limits(tp8) == (2048, 8192)
    shared = EngineConfig(max_batch_requests=2048, step_token_budget=8192, per_attention_rank=False)
    assert shared.on_layout(dep8).rank_limits(dep8) == (2048, 8192)
