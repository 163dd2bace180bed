"""trtllm-bench's own engine limits, and the KV cache of MX checkpoints on chips without 4-bit
tensor cores, as measured rows run them."""

from __future__ import annotations

import csv

import pytest

from inference_econ.measured.bench_limits import (
    UNTUNED_LIMITS,
    bench_limits,
    overview_requests,
    runs_own_limits,
)
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
    # (multiples of 32 below 256); tokens 89.1 x 11 = 980 -> the 2,048 floor, chunked; whole
    # prompts raise it to 20,000 + 96. Two pipeline stages hold twice the memory and split
    # the requests between them: 91.6 each -> 96.
    one = bench_limits(llama, _gpu("H200"), (8, 16, 8), 1, 1, False, 20000, 2000, "1.0")
    two = bench_limits(llama, _gpu("H200"), (8, 16, 8), 1, 2, False, 20000, 2000, "1.0")
    chunked = bench_limits(
        llama, _gpu("H200"), (8, 16, 8), 1, 1, False, 20000, 2000, "1.0", chunked=True
    )
    assert (one.max_batch_requests, one.step_token_budget) == (96, 20096)
    assert (chunked.max_batch_requests, chunked.step_token_budget) == (96, 2048)
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
        ("NVIDIA/TensorRT-LLM docs/source/developer-guide/perf-overview.md", "", "", None, True),
        ("TensorRT-LLM performance overview", "", "max load", None, True),
        ("TensorRT-LLM performance overview", "", "max_batch_size 512", None, False),
        ("SGLang performance overview", "", "max load", None, False),
        ("TensorRT-LLM blog", "", "max load", None, False),
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


def _row(model, precision, hardware, gpus, layout, **more):
    """``ROW`` for one model, format and GPU count and layout, with ``more`` fields changed."""
    fields = dict(model=model, precision=precision, hardware=hardware, n_gpus=gpus)
    return dict(ROW, **fields, parallelism=layout, **more)


def _write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _predicted(tmp_path, **rows):
    """Each named row compared alone under the achievable preset: its table row, status ok."""
    out = []
    for name, row in rows.items():
        got = compare(_write(tmp_path / f"{name}.csv", [row]), assumptions=preset("achievable"))
        out.append(got.table.iloc[0])
        assert out[-1].status == "ok", (name, out[-1].status)
    return out


def test_a_bench_row_runs_at_the_tools_limits_and_is_never_faster_for_them(tmp_path):
    bench = _row("DeepSeek-R1", "FP8", "H200", "8", "DEP8", output_len="8192")
    own, other = _predicted(tmp_path, bench=bench, plain=dict(bench, source="TensorRT-LLM blog"))
    # the label states the figures on the layout predicted. By hand: 8 x 140.40 GiB less
    # 624.92 GiB of FP8 weights, x 0.90 = 448.46 GiB over 874,496 B x 9,216 tokens (7.506 GiB a
    # request) = 59.7 requests -> 64 (the floor); tokens 59.7 x (1 + 1024/8192) = 67 -> 2,048
    limits = "(64 requests and 2,048 tokens a step a rank: its older memory estimate)"
    assert f"the limits trtllm-bench picks itself {limits}" in own.engine
    assert "trtllm-bench" not in other.engine
    # the same run held to 64 requests a rank (not the 2,048 default) is slower, never faster
    assert own.predicted < 0.9 * other.predicted


@pytest.mark.parametrize(
    ("hardware", "precision", "kv_bits"),
    [
        ("H200", "MXFP4", 16.0),  # Hopper: no 4-bit tensor cores, the checkpoint's BF16 cache
        ("B200", "MXFP4", 8.0),  # Blackwell: FP8, as the engine's options set it
        ("H200", "MXFP4 (KV cache fp8)", 8.0),  # a stated format stays
        ("H200", "FP8", 16.0),  # a bare label: gpt-oss's only release, the MX checkpoint
        ("H200", "FP8 (self-quantized weights)", 8.0),  # another checkpoint, not an MX format
    ],
)
def test_an_mx_checkpoints_kv_cache_follows_the_chip(tmp_path, hardware, precision, kv_bits):
    row = _row("gpt-oss-120b", precision, hardware, "1", "TP1")
    (read,) = load_measured(_write(tmp_path / "r.csv", [row]))
    assert read.bits[2] == kv_bits


def test_whole_prompts_raise_max_num_tokens_to_the_longest_prompt_beside_a_full_batch():
    # gpt-oss-120b runs at the API defaults, 2,048 requests and 8,192 tokens; with chunked
    # prefill off (trtllm-bench's default) an 8,192-token prompt would never fit beside a
    # decoding request, so the tool raises max_num_tokens to 8,192 + 2,048 = 10,240.
    gpt_oss = resolve_model("gpt-oss-120b")
    args = (gpt_oss, _gpu("H200"), (4.25, 16, 16), 1, 1, False, 8192, 1024, "1.2")
    whole = bench_limits(*args, longest_input=8192)
    chunked = bench_limits(*args, longest_input=8192, chunked=True)
    assert (whole.max_batch_requests, whole.step_token_budget) == (2048, 10240)
    assert (chunked.max_batch_requests, chunked.step_token_budget) == (2048, 8192)
    # a dataset whose longest prompt is longer than its mean is raised to the longest
    assert bench_limits(*args, longest_input=9000).step_token_budget == 9000 + 2048


@pytest.mark.parametrize(
    ("n_in", "n_out", "requests"),
    [
        (1024, 1024, 3000),  # listed by the 1.2 overview
        (32768, 1024, 1000),
        (128, 128, 30000),  # listed by the 1.0 overview
        (20000, 2000, 1000),
        (1000, 1024, 3000),  # not listed: nearest, 1,000/1,000 and 1,024/1,024 both 3,000
        (16384, 1024, 1500),  # log2 halfway from 8,192/1,024 (1,500) to 32,768/1,024: 8,192 first
        (100000, 1000, 1000),
    ],
)
def test_a_bench_row_without_a_count_runs_the_overviews_dataset(n_in, n_out, requests):
    assert overview_requests(n_in, n_out) == requests


def test_a_bench_rows_throughput_is_over_its_whole_dataset(tmp_path):
    # trtllm-bench queues its whole dataset at once and divides the output by the time to the
    # last completion: 48 requests, fewer than one rank's batch, are one wave whose prefill
    # and drain the steady rate never pays, so they read slower than the overview's 3,000.
    gpt_oss = _row("gpt-oss-120b", "MXFP4", "H200", "1", "TP1")
    few, many = _predicted(tmp_path, few=dict(gpt_oss, requests="48"), many=gpt_oss)
    assert "over its dataset of 48 requests queued at once" in few.engine
    assert "over the performance overview's dataset of 3,000 requests" in many.engine
    assert few.predicted < 0.8 * many.predicted


def test_any_engines_offline_row_stating_its_requests_is_replayed_over_them(tmp_path):
    # a throughput benchmark's figure is its dataset's output over the whole run: 32 requests
    # on one H100 are one wave of prompts then of decoding, slower than the steady rate the
    # same row without a count is read at
    row = _row("Llama-3.1-8B", "FP8", "H100", "1", "TP1", source="vLLM blog", notes="vLLM 0.11")
    few, steady = _predicted(tmp_path, few=dict(row, requests="32"), steady=row)
    assert "over its dataset of 32 requests queued at once" in few.engine
    assert "queued at once" not in steady.engine
    assert few.predicted < 0.8 * steady.predicted
