"""Prefill, time to first token, input-token prices, context parallelism and disaggregation."""

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.model.latency import ADDITIVE_PARTS
from inference_econ.serving import context_parallel as cp
from inference_econ.serving import disaggregation as disagg
from inference_econ.serving import prefill, requests
from inference_econ.studies import prices

LLAMA = ie.make_setting("Llama 3 70B", "H100-paper")


@pytest.mark.parametrize("tokens", [2000, 8000, 32000])
def test_llama_70b_prefill_is_compute_bound_with_high_mfu(tokens):
    row = prefill.prefill(LLAMA, 8, tokens)
    assert row.bound == "compute" and row.chunks == 1
    assert row.arithmetic_s > row.collective_latency_s + row.collective_bandwidth_s
    assert np.isclose(sum(row[p] for p in ADDITIVE_PARTS), row.latency_s)
    # paper §5.1 takeaway 6: decode MFU at practical speeds is 3 to 5 times below prefill's
    practical = ie.frontier(LLAMA).preference_point()
    assert 3.0 <= row.mfu / practical.mfu <= 5.5, (row.mfu, practical.mfu)


def test_causal_attention_flop():
    # 2·dh·H·L·n² of attention (mean context n/2) on top of 2·P per token
    model = prefill.prefill_model(LLAMA)
    n = 10000.0
    ff, ctx, proj = model.work.flop(1.0, n, 0.0)
    assert ctx == pytest.approx(4 * 128 * 64 * 80 * (n - 1) / 2 * n)


def test_chunked_and_cached_prefill():
    one = prefill.prefill(LLAMA, 8, 32000)
    chunked = prefill.prefill(LLAMA, 8, 32000, chunk_tokens=4000)
    assert chunked.chunks == 8 and chunked.latency_s >= one.latency_s * 0.999
    assert chunked.latency_s == pytest.approx(one.latency_s, rel=0.15)  # same work, more passes
    cached = prefill.prefill(LLAMA, 8, 32000, cached_tokens=24000)
    assert (
        cached.latency_s < 0.5 * one.latency_s
        and cached.usd_per_m_input_tokens < one.usd_per_m_input_tokens
    )
    huge = prefill.prefill(ie.make_setting("Llama 3 70B", "H100-paper"), 2, 200000)
    assert huge.chunks > 1 or not np.isfinite(huge.latency_s)


def test_request_view_adds_up():
    r = requests.request(LLAMA, 8, 32, 2000, 500)
    assert r.ttft_s > r.prefill_s > 0
    assert r.e2e_latency_s == pytest.approx(r.ttft_s + 499 * r.decode_latency_s)
    assert r.output_to_input_price_ratio == pytest.approx(
        r.usd_per_m_output_tokens / r.usd_per_m_input_tokens
    )
    assert r.prefill_bound == "compute" and r.decode_bound == "memory"


def test_input_output_price_ratio():
    short = prices.price_ratio("Llama 3 70B", "H100-paper", 1000, weight_bits=16)
    # the paper (§4.3) argues about 3x at short context from ~15 % decode and ~50 % prefill MFU
    assert 3.0 <= short.output_to_input_price_ratio <= 10.0
    mistral = prices.price_ratio("Mistral Large 2", "H100-paper", 100000, weight_bits=16)
    deepseek = prices.price_ratio(
        "DeepSeek-V3 (paper approximation)", "H100-paper", 100000, weight_bits=8
    )
    assert mistral.output_to_input_price_ratio > short.output_to_input_price_ratio
    assert (
        np.isfinite(deepseek.output_to_input_price_ratio)
        and deepseek.decode_mfu > mistral.decode_mfu
    )


def test_kv_runahead_chunk_balancing():
    costs = cp.chain_costs(ie.make_setting("Llama 3 8B", "A100-paper"), link_bytes_per_s=10e9)
    _, bounds, times = cp.kv_runahead_ttft_s(costs, 16000, 4, balanced=False)
    assert int(np.argmax(times)) == 3  # equal chunks: the last device is the bottleneck
    _, bounds, times = cp.kv_runahead_ttft_s(costs, 16000, 4, balanced=True)
    assert times.max() / times.min() <= 1.05
    sizes = np.diff(bounds)
    assert np.all(np.diff(sizes) < 0)  # later chunks are shorter


def test_kv_runahead_qualitative_results_of_the_paper():
    setting = ie.make_setting("Llama 3 8B", "A100-paper")
    fast = cp.compare(setting, [1000, 4000, 16000, 64000], 4, link_bytes_per_s=10e9)
    slow = cp.compare(setting, [1000, 4000, 16000, 64000], 4, link_bytes_per_s=1e9)
    assert np.all(np.diff(fast.speedup_kv_runahead) > 0)  # grows with context length
    assert np.all(slow.speedup_kv_runahead <= fast.speedup_kv_runahead)  # shrinks on slow links
    single, equal = slow.single_device_s.iloc[0], slow.kv_runahead_equal_s.iloc[0]
    assert single / equal < 1.0  # short prompt, slow link, all 4 devices: slower than one
    assert (fast.kv_runahead_balanced_s <= fast.allgather_s).all()


def test_kv_runahead_device_time_has_one_hop_latency():
    # each device's time is its compute plus receiving its prefix: one link latency, not one
    # per hop of the chain before it
    base = cp.chain_costs(LLAMA, link_bytes_per_s=10e9, link_latency_s=0.0)
    slow = cp.chain_costs(LLAMA, link_bytes_per_s=10e9, link_latency_s=1e-3)
    bounds = cp.equal_chunks(16000, 4)
    extra = cp.device_times(slow, bounds) - cp.device_times(base, bounds)
    assert extra == pytest.approx([0.0, 1e-3, 1e-3, 1e-3])


def test_context_parallel_honours_sliding_windows():
    windowed = ie.make_setting("gpt-oss-120b", "H100", assumptions="refined")
    costs = cp.chain_costs(windowed)
    groups = dict((w, n) for n, w in costs.layer_windows)
    window = min(groups)
    assert np.isfinite(window) and np.isinf(max(groups))
    # a chunk far beyond the window: windowed layers attend to `window` positions per token,
    # full layers to everything before; the prefix a device receives is cut the same way
    s, e = 100000.0, 101000.0
    pairs = groups[np.inf] * (e * e - s * s) / 2 + groups[window] * window * (e - s)
    flop = costs.flop_per_token * (e - s) + costs.attention_flop_per_pair_per_layer * pairs
    assert costs.compute_s(s, e) == pytest.approx(flop / costs.flop_per_s, rel=1e-12)
    kv = costs.kv_bytes_per_position_per_layer
    assert costs.prefix_bytes(s) == pytest.approx(kv * (groups[np.inf] * s + groups[window] * window))
    full = cp.chain_costs(windowed.replace(assumptions=ie.preset("paper")))
    assert costs.compute_s(s, e) < full.compute_s(s, e)
    assert (
        cp.compare(windowed, [64000], 4).kv_runahead_balanced_s.iloc[0]
        < cp.compare(windowed.replace(assumptions=ie.preset("paper")), [64000], 4)
        .kv_runahead_balanced_s.iloc[0]
    )


def test_disaggregation_trades_ttft_for_steady_decode():
    setting = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    df = disagg.compare(setting, 4000, 500, 8, 64).set_index("serving")
    co, dis = df.loc["co-located"], df.loc["disaggregated"]
    assert dis.decode_latency_s < co.decode_latency_s  # no prefill stalls
    assert dis.kv_transfer_s > 0 and dis.ttft_s > dis.kv_transfer_s
    assert dis.gpus == 16 and co.gpus == 8
    # co-located: 8 GPUs x 500 steps of 26.2 ms (decode plus prefill stalls) / 64 requests; the
    # stall already carries each request's own prefill, which must not be added again
    assert co.decode_latency_s == pytest.approx(26.2e-3, rel=0.01)
    assert co.gpu_s_per_request == pytest.approx(8 * 500 * co.decode_latency_s / 64, rel=1e-12)
    assert co.gpu_s_per_request == pytest.approx(1.64, rel=0.01)
    assert co.usd_per_m_output_tokens_all_in == pytest.approx(1.91, rel=0.01)
    assert 1 - dis.gpu_s_per_request / co.gpu_s_per_request == pytest.approx(0.22, abs=0.01)


def test_ttft_limited_frontier():
    kwargs = dict(weight_bits=8, context_tokens=8000, prompt_tokens=8000)
    free = ie.frontier("Llama 3 70B", "H100-paper", **kwargs)
    tight = ie.frontier("Llama 3 70B", "H100-paper", ttft_max_s=0.2, **kwargs)
    assert (tight.points.ttft_s <= 0.2 + 1e-12).all() and (free.points.ttft_s > 0.2).any()
    speeds = np.linspace(20, 140, 7)
    assert np.all(tight.cost_at_speed(speeds) >= free.cost_at_speed(speeds) * (1 - 1e-9))
    impossible = ie.frontier("Llama 3 70B", "H100-paper", ttft_max_s=1e-3, **kwargs)
    assert impossible.empty and "fastest prefill alone takes" in impossible.notes[0]


def test_bad_prefill_input():
    with pytest.raises(ie.SpecError, match="prompt_tokens"):
        prefill.prefill(LLAMA, 8, -10)
    with pytest.raises(ie.SpecError, match="cached_tokens"):
        prefill.prefill(LLAMA, 8, 1000, cached_tokens=1000)
    with pytest.raises(ie.SpecError, match="prompt_tokens"):
        ie.make_setting("Llama 3 70B", "H100-paper", ttft_max_s=1.0)
    result = CliRunner().invoke(
        main, ["frontier", "Llama 3 70B", "-H", "H100-paper", "--prompt-tokens", "-5"]
    )
    assert result.exit_code == 2 and "prompt_tokens" in result.output
    result = CliRunner().invoke(
        main,
        [
            "frontier",
            "Llama 3 70B",
            "-H",
            "H100-paper",
            "--prompt-tokens",
            "8000",
            "--ttft-max",
            "0.001",
        ],
    )
    assert result.exit_code == 1 and "fastest prefill alone takes" in result.output


def test_prefill_commands():
    for args in (
        [
            "prefill",
            "Llama 3 70B",
            "-H",
            "H100-paper",
            "--gpus",
            "8",
            "--prompt-tokens",
            "8000",
            "--format",
            "json",
        ],
        [
            "request",
            "Llama 3 70B",
            "-H",
            "H100-paper",
            "--gpus",
            "8",
            "--batch",
            "16",
            "--prompt-tokens",
            "2000",
            "--output-tokens",
            "200",
        ],
        ["context-parallel", "Llama 3 8B", "-H", "A100-paper", "--prompt-tokens", "1000,8000"],
        [
            "disagg",
            "Llama 3 70B",
            "-H",
            "H100-paper",
            "--gpus",
            "8",
            "--batch",
            "32",
            "--prompt-tokens",
            "4000",
            "--output-tokens",
            "500",
        ],
        ["prices", "Llama 3 70B", "-H", "H100-paper", "--contexts", "1000"],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
