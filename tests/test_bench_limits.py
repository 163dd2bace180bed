"""trtllm-bench's own engine limits, and the KV cache of MX checkpoints on chips without 4-bit
tensor cores, as measured rows run them."""

from __future__ import annotations

import csv

import pytest

from inference_econ.measured.bench_limits import UNTUNED_LIMITS, bench_limits, runs_own_limits
from inference_econ.measured.comparison import compare
from inference_econ.measured.reading import load_measured
from inference_econ.measured.resolving import hardware_of, resolve_model
from inference_econ.model.assumptions import preset

DEEPSEEK = resolve_model("DeepSeek-R1")


def _gpu(name):
    return hardware_of(name)[0]


def test_deepseek_fp8_on_eight_h200_gets_the_older_estimates_384_requests_a_rank():
    # By hand: 8 x 140.40 GiB less 671e9 FP8 weights (624.92 GiB) = 498.29 GiB, x 0.90 =
    # 448.46 GiB; the older estimate's bytes a token, 2 x 61 layers x 128 "KV heads" x head
    # size 7168/128 = 56 x 1 byte = 874,496 B; x 2,048 tokens = 1.668 GiB a request: 268.9
    # requests, rounded up to 128 -> 384; tokens 268.9 x 2 = 538 -> the floor, 2,048.
    got = bench_limits(DEEPSEEK, _gpu("H200"), (8, 16, 8), 8, 1, True, 1024, 1024, "1.2")
    assert (got.max_batch_requests, got.step_token_budget) == (384, 2048)
    assert "older" in got.how


def test_the_newer_estimate_sizes_mla_latents_and_one_ranks_memory():
    # NVFP4 on 4 B200 under attention DP: the older estimate gives 384 a rank; the newer one
    # (from NEWER_ESTIMATE_FROM) sizes 61 x 576 latent bytes a token on one rank's 179 GiB
    # less a quarter of the weights, which holds more than the 4,096 cap: 2,048 a rank.
    old = bench_limits(DEEPSEEK, _gpu("B200"), (4, 16, 8), 4, 1, True, 1024, 1024, "1.2")
    new = bench_limits(DEEPSEEK, _gpu("B200"), (4, 16, 8), 4, 1, True, 1024, 1024, "1.4")
    assert old.max_batch_requests == 384
    assert new.max_batch_requests == 2048 and new.step_token_budget == 3840


def test_a_format_the_tool_does_not_tune_runs_at_the_api_defaults():
    gpt_oss = resolve_model("gpt-oss-120b")
    got = bench_limits(gpt_oss, _gpu("B200"), (4.25, 16, 8), 2, 1, True, 1024, 1024, "1.2")
    assert (got.max_batch_requests, got.step_token_budget) == UNTUNED_LIMITS == (2048, 8192)


def test_limits_round_as_the_tool_rounds_them():
    llama = resolve_model("Llama-3.1-8B")
    # 128/128 on one H200: far more requests fit than the 4,096 cap; tokens 4,096 x 2 = 8,192.
    short = bench_limits(llama, _gpu("H200"), (8, 16, 8), 1, 1, False, 128, 128, "1.0")
    assert (short.max_batch_requests, short.step_token_budget) == (4096, 8192)
    # 20000/2000: (140.40 - 7.45 GiB) x 0.90 / (65,536 B x 22,000) = 89.1 requests -> 96
    # (multiples of 32 below 256); tokens 89.1 x 11 = 980 -> the 2,048 floor. Two pipeline
    # stages hold twice the memory and split the requests between them: 91.6 each -> 96.
    one = bench_limits(llama, _gpu("H200"), (8, 16, 8), 1, 1, False, 20000, 2000, "1.0")
    two = bench_limits(llama, _gpu("H200"), (8, 16, 8), 1, 2, False, 20000, 2000, "1.0")
    assert (one.max_batch_requests, one.step_token_budget) == (96, 2048)
    assert two.max_batch_requests == 96


@pytest.mark.parametrize(
    ("source", "notes", "cell", "budget", "own"),
    [
        ("perf-overview.md (trtllm-bench throughput)", "", "max load (batch auto)", None, True),
        ("x", "TensorRT-LLM 1.2; trtllm-bench", "CUDA graphs up to 8192", None, True),
        ("x (trtllm-bench)", "max_batch_size 384", "", None, False),
        ("x (trtllm-bench)", "", "max batch 256", None, False),
        ("x (trtllm-bench)", "", "", 4096.0, False),
        ("MLPerf v5.1", "TensorRT-LLM", "max load", None, False),
    ],
)
def test_a_row_runs_the_tools_own_limits_only_where_it_states_none(
    source, notes, cell, budget, own
):
    assert runs_own_limits(source, notes, cell, budget) is own


ROW = {
    "source": "TensorRT-LLM performance overview (trtllm-bench throughput, PyTorch backend)",
    "batch_or_concurrency": "max load (batch auto, CUDA graphs up to 8192)",
    "input_len": "1024",
    "output_len": "1024",
    "metric": "throughput_per_gpu",
    "value": "1620",
    "unit": "output tok/s per GPU",
    "notes": "TensorRT-LLM 1.2 (PyTorch backend)",
}


def _write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def test_a_bench_row_runs_at_the_tools_limits_and_is_never_faster_for_them(tmp_path):
    bench = dict(
        ROW, model="DeepSeek-R1", precision="FP8", hardware="H200", n_gpus="8", parallelism="DEP8"
    )
    plain = dict(bench, source="TensorRT-LLM performance overview")
    a = preset("achievable")
    own = compare(_write(tmp_path / "bench.csv", [bench]), assumptions=a).table.iloc[0]
    other = compare(_write(tmp_path / "plain.csv", [plain]), assumptions=a).table.iloc[0]
    assert (own.status, other.status) == ("ok", "ok")
    assert "the limits trtllm-bench picks itself" in own.engine
    assert "trtllm-bench" not in other.engine
    # the same run held to 384 requests a rank (not the 2,048 default) is slower, never faster
    assert own.predicted < 0.9 * other.predicted


@pytest.mark.parametrize(
    ("hardware", "precision", "kv_bits"),
    [
        ("H200", "MXFP4", 16.0),  # Hopper: no 4-bit tensor cores, the checkpoint's BF16 cache
        ("B200", "MXFP4", 8.0),  # Blackwell: FP8, as the engine's options set it
        ("H200", "MXFP4 (KV cache fp8)", 8.0),  # a stated format stays
        ("H200", "FP8", 8.0),  # not an MX format
    ],
)
def test_an_mx_checkpoints_kv_cache_follows_the_chip(tmp_path, hardware, precision, kv_bits):
    row = dict(
        ROW,
        model="gpt-oss-120b",
        precision=precision,
        hardware=hardware,
        n_gpus="1",
        parallelism="TP1",
    )
    (read,) = load_measured(_write(tmp_path / "r.csv", [row]))
    assert read.bits[2] == kv_bits
