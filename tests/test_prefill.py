"""Prefill, time to first token, input-token prices, context parallelism and disaggregation."""

import numpy as np
import pytest
from click.testing import CliRunner

import inference_econ as ie
from inference_econ.cli import main
from inference_econ.model.assumptions import PAPER
from inference_econ.model.latency import ADDITIVE_PARTS, StepModel, prefill_step_model
from inference_econ.model.workload import compile_workload
from inference_econ.serving import context_parallel as cp
from inference_econ.serving import disaggregation as disagg
from inference_econ.serving import prefill, requests
from inference_econ.serving.support import DEGREES
from inference_econ.studies import prices

LLAMA = ie.make_setting("Llama 3 70B", "H100-paper", context_tokens=0)  # the paper's (§5.1)


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
    assert cached.latency_s < 0.5 * one.latency_s
    # the input price is per prompt token (8 GPUs x latency x $2.1/h over all 32000), the
    # computed price over the 8000 computed tokens: cached tokens are read, not computed
    assert cached.computed_tokens == 8000
    assert cached.usd_per_m_input_tokens == pytest.approx(
        1e6 * 8 * cached.latency_s * 2.1 / 3600 / 32000, rel=1e-12
    )
    assert cached.usd_per_m_computed_input_tokens == pytest.approx(
        1e6 * 8 * cached.latency_s * 2.1 / 3600 / 8000, rel=1e-12
    )
    assert cached.input_tokens_per_s == pytest.approx(4 * cached.computed_input_tokens_per_s)
    # each computed token attends to a longer prefix, so costs more, but the prompt costs less
    assert cached.usd_per_m_computed_input_tokens > one.usd_per_m_computed_input_tokens
    assert cached.usd_per_m_input_tokens < one.usd_per_m_input_tokens
    assert one.usd_per_m_input_tokens == one.usd_per_m_computed_input_tokens
    huge = prefill.prefill(ie.make_setting("Llama 3 70B", "H100-paper"), 2, 200000)
    assert huge.chunks > 1 or not np.isfinite(huge.latency_s)


def test_a_prefix_cache_makes_input_tokens_cheaper():
    # a new user's case: 8 x H100-paper, an 8000-token prompt. Per prompt token the
    # price falls with the cached share; per computed token it rises (each computed token
    # attends to a longer prefix, and the weights are read for fewer tokens)
    rows = {
        q: prefill.prefill(LLAMA, 8, 8000, cached_tokens=prefill.cached_prompt_tokens(8000, q))
        for q in (0.0, 0.9, 1.0)
    }
    assert rows[0.0].usd_per_m_input_tokens == pytest.approx(0.1801, rel=1e-3)
    assert rows[0.9].usd_per_m_input_tokens == pytest.approx(0.02211, rel=1e-3)
    assert rows[0.9].usd_per_m_computed_input_tokens == pytest.approx(0.2211, rel=1e-3)
    # a fully cached prompt still computes its last token: 7,999 cached, 1 computed
    full = rows[1.0]
    assert (full.cached_tokens, full.computed_tokens) == (7999, 1)
    assert full.usd_per_m_computed_input_tokens == pytest.approx(50.81, rel=1e-3)
    assert full.usd_per_m_input_tokens == pytest.approx(50.81 / 8000, rel=1e-3)
    prices_in = [rows[q].usd_per_m_input_tokens for q in (0.0, 0.9, 1.0)]
    assert prices_in == sorted(prices_in, reverse=True)
    assert prefill.cache_note(8000, 0.9) is None
    result = CliRunner().invoke(
        main,
        [
            "prefill",
            "Llama 3 70B",
            "-H",
            "H100-paper",
            "--gpus",
            "8",
            "--prompt-tokens",
            "8000",
            "--cached-fraction",
            "1",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "# cached fraction 1: 7,999 of 8,000 prompt tokens come from the cache" in result.output
    # the request view prices input per prompt token too, and so does its price ratio
    plain = requests.request(LLAMA, 8, 32, 2000, 500)
    cached = requests.request(LLAMA, 8, 32, 2000, 500, cached_fraction=0.9)
    assert cached.cached_tokens == 1800
    assert cached.usd_per_m_input_tokens < plain.usd_per_m_input_tokens
    assert cached.output_to_input_price_ratio == pytest.approx(
        cached.usd_per_m_output_tokens / cached.usd_per_m_input_tokens
    )
    assert cached.output_to_input_price_ratio > 5 * plain.output_to_input_price_ratio
    # dollars per request: every prompt token at the prompt price, or the computed ones at theirs
    assert cached.usd_per_request == pytest.approx(
        (cached.usd_per_m_input_tokens * 2000 + cached.usd_per_m_output_tokens * 500) / 1e6
    )
    assert cached.usd_per_request == pytest.approx(
        (cached.usd_per_m_computed_input_tokens * 200 + cached.usd_per_m_output_tokens * 500) / 1e6
    )


def layout_of(row):
    """(p, attention divisor, 2-D) of a result row, as arrays of one point."""
    p = row.pipeline_degree
    adiv = row.tensor_degree / row.attention_degree
    return np.array([p]), np.array([adiv]), np.array([row.tp_dims == "2D"])


def test_request_view_adds_up():
    r = requests.request(LLAMA, 8, 32, 2000, 500)
    # a serving engine prefills each arriving prompt on its own (not the decode batch of 32)
    assert r.prefill_batch == 1 and r.ttft_s == pytest.approx(0.092, rel=0.02)
    assert r.ttft_s == pytest.approx(r.prefill_s + r.first_step_s, rel=1e-12)
    # the first decode step runs at the prompt's length, on the instance's own layout
    decode = StepModel(compile_workload(LLAMA.model, LLAMA.assumptions), LLAMA.gpu, PAPER)
    first = decode.breakdown(np.array([8.0]), np.array([32.0]), 1, 2000.0, *layout_of(r))
    assert r.first_step_s == pytest.approx(float(first.latency_s[0]), rel=1e-12)
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


def test_the_price_ratio_states_the_decode_and_prefill_layouts_it_prices():
    """Llama 3 70B at 1,000 tokens on H100-paper: the preference point decodes 99.15 requests
    on 12.92 GPUs as 1.63 stages of TP 7.94 (the paper's Table 3 point); its 9 prompts of
    1,000 tokens are prefilled on those GPUs as 9 stages of TP 1.44. Each degree is the one
    the price was computed on: the frontier point's and ``prefill``'s."""
    row = prices.price_ratio("Llama 3 70B", "H100-paper", 1000, weight_bits=8)
    setting = ie.make_setting("Llama 3 70B", "H100-paper", context_tokens=1000, weight_bits=8)
    point = ie.frontier(setting).preference_point()
    pre = prefill.prefill(setting, point.gpus, 1000, batch=row.prefill_batch)
    for name in DEGREES:
        assert row[name] == point[name] and row[f"prefill_{name}"] == pre[name]
    assert row.gpus == pytest.approx(12.92, abs=0.005) and row.prefill_batch == 9
    assert row.pipeline_degree == pytest.approx(1.63, abs=0.005)
    assert row.tensor_degree == pytest.approx(7.94, abs=0.005)
    assert row.prefill_pipeline_degree == 9 and row.expert_degree == 1


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


def test_kv_runahead_device_time_has_one_hop_latency():
    # each device's time is its compute plus receiving its prefix: one link latency, not one
    # per hop of the chain before it
    small = ie.make_setting("Llama 3 8B", "A100-paper")
    base = cp.chain_costs(small, link_bytes_per_s=10e9, link_latency_s=0.0)
    slow = cp.chain_costs(small, link_bytes_per_s=10e9, link_latency_s=1e-3)
    bounds = cp.equal_chunks(16000, 4)
    extra = cp.device_times(slow, bounds) - cp.device_times(base, bounds)
    assert extra == pytest.approx([0.0, 1e-3, 1e-3, 1e-3])


def test_context_parallel_honours_sliding_windows():
    windowed = ie.make_setting("gpt-oss-120b", "H100", assumptions="refined")
    costs = cp.chain_costs(windowed)
    groups = {g.window: g.layers for g in costs.model.work.groups}
    window = min(groups)
    assert np.isfinite(window) and np.isinf(max(groups))
    # the prefix a device receives: all of it from full layers, the last `window` positions
    # from windowed ones
    s, e = 100000.0, 101000.0
    kv = costs.kv_bytes_per_position_per_layer
    assert costs.prefix_bytes(s) == pytest.approx(
        kv * (groups[np.inf] * s + groups[window] * window)
    )
    # the same preset with every layer attending to the whole context
    unwindowed = windowed.replace(assumptions=ie.preset("refined").replace(sliding_windows=False))
    full = cp.chain_costs(unwindowed)
    assert costs.compute_s(s, e) < full.compute_s(s, e)
    assert (
        cp.compare(windowed, [64000], 4).kv_runahead_balanced_s.iloc[0]
        < cp.compare(unwindowed, [64000], 4).kv_runahead_balanced_s.iloc[0]
    )


def test_disaggregation_trades_ttft_for_steady_decode():
    setting = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    df = disagg.compare(setting, 4000, 500, 8, 64).set_index("serving")
    co, dis = df.loc["co-located"], df.loc["disaggregated"]
    assert dis.decode_latency_s < co.decode_latency_s  # no prefill stalls
    assert dis.kv_transfer_s > 0 and dis.ttft_s > dis.kv_transfer_s
    assert dis.gpus == 16 and co.gpus == 8
    # co-located: 8 GPUs x 500 steps of 24.0 ms (decode plus the prompts' chunks riding in the
    # engine's steps, §B10; 26.2 ms when each prompt stopped the decodes) / 64 requests; the
    # stall already carries each request's own prompt, which must not be added again
    assert co.decode_latency_s == pytest.approx(24.04e-3, rel=0.01)
    assert co.gpu_s_per_request == pytest.approx(8 * 500 * co.decode_latency_s / 64, rel=1e-12)
    assert co.gpu_s_per_request == pytest.approx(1.50, rel=0.01)
    assert co.usd_per_m_output_tokens_all_in == pytest.approx(1.75, rel=0.01)
    # disaggregation saves 15 % (22 % against the stop-the-world baseline: overstated)
    assert 1 - dis.gpu_s_per_request / co.gpu_s_per_request == pytest.approx(0.15, abs=0.01)
    # busy time only (perfect utilisation); at the decode pool's 64 / (500 x 13.2 ms) = 9.69
    # req/s the prefill pool is busy 55 % of the time, and paying for its idle time too makes
    # the disaggregated cost higher than co-located's (1.65 against 1.50 GPU-s)
    rate = 64 / (500 * dis.decode_latency_s)
    assert rate == pytest.approx(9.69, rel=0.01) and dis.decode_pool_busy_fraction == 1.0
    prefill_s = dis.gpu_s_per_request / 8 - 500 * dis.decode_latency_s / 64
    assert dis.prefill_pool_busy_fraction == pytest.approx(rate * prefill_s, rel=1e-12)
    assert dis.prefill_pool_busy_fraction == pytest.approx(0.553, abs=0.005)
    assert dis.gpu_s_per_request_idle_charged == pytest.approx(16 / rate, rel=1e-12)
    assert dis.gpu_s_per_request_idle_charged == pytest.approx(1.65, abs=0.01)
    assert dis.usd_per_request_idle_charged > dis.usd_per_request
    assert co.gpu_s_per_request_idle_charged == co.gpu_s_per_request
    assert np.isnan(co.prefill_pool_busy_fraction)
    # a slow prefill pool (1 GPU) sets the pace instead: the decode pool then idles
    slow = disagg.compare(setting, 4000, 500, 8, 64, prefill_gpus=1).set_index("serving")
    one = slow.loc["disaggregated"]
    assert one.prefill_pool_busy_fraction == 1.0 and 0 < one.decode_pool_busy_fraction < 1
    assert one.gpu_s_per_request_idle_charged > one.gpu_s_per_request


def test_disaggregation_states_the_layouts_of_its_instance_and_pools():
    """DeepSeek-R1 on 16 H200 as DEP16 at 512 requests of 4,000 / 1,000 tokens: both rows
    state the decode instance's degrees, the disaggregated one also its prefill pool's (the
    layout ``prefill`` prices the pool's 5-prompt passes on); the co-located row has no pool."""
    setting = ie.make_setting("DeepSeek-R1", "H200", assumptions="refined")
    df = disagg.compare(setting, 4000, 1000, 16, 512, discrete=True).set_index("serving")
    co, dis = df.loc["co-located"], df.loc["disaggregated"]
    decode = df.attrs["decode_layout"]
    pool = prefill.prefill(setting, 16, 4000, batch=5, discrete=True)
    for name in DEGREES:
        assert co[name] == dis[name] == decode[name]
        assert dis[f"prefill_{name}"] == pool[name] and np.isnan(co[f"prefill_{name}"])
    assert [dis[name] for name in DEGREES] == [1.0, 16.0, 1.0, 16.0]  # DEP16
    args = ["disagg", "DeepSeek-R1", "-H", "H200", "--assumptions", "refined", "--discrete"]
    args += ["--gpus", "16", "--batch", "512", "--prompt-tokens", "4000", "--output-tokens", "1000"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    header = out.stdout.splitlines()[2]
    assert "  PP  TP  attn TP  EP  prefill PP  prefill TP  prefill attn TP  prefill EP  " in header


#: Llama 3 70B in 8 bits, 8000-token prompts and contexts: the TTFT tests' problem.
TTFT_CASE = dict(weight_bits=8, context_tokens=8000, prompt_tokens=8000)


@pytest.fixture(scope="module")
def ttft_limited():
    """The frontier of TTFT_CASE within a TTFT of 0.2 s (two tests read it)."""
    return ie.frontier("Llama 3 70B", "H100-paper", ttft_max_s=0.2, **TTFT_CASE)


def test_ttft_limited_frontier(ttft_limited):
    free = ie.frontier("Llama 3 70B", "H100-paper", **TTFT_CASE)
    tight = ttft_limited
    assert (tight.points.ttft_s <= 0.2 + 1e-12).all() and (free.points.ttft_s > 0.2).any()
    speeds = np.linspace(20, 140, 7)
    assert np.all(tight.cost_at_speed(speeds) >= free.cost_at_speed(speeds) * (1 - 1e-9))
    # empty on any grid (the prefill alone is too slow): a coarse one
    impossible = ie.frontier(
        "Llama 3 70B", "H100-paper", ttft_max_s=1e-3, grid_points=20, **TTFT_CASE
    )
    assert impossible.empty and "fastest prefill alone takes" in impossible.notes[0]


def test_ttft_is_computed_on_the_layout_the_instance_has():
    # context 0, prompts of 8000 tokens: each point's TTFT is one prompt through its own
    # pipeline stages (p prompts in flight, one per micro-batch) plus the first decode step at
    # 8000 tokens on the same layout, every request's cache at that length fitting in HBM
    setting = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8, prompt_tokens=8000)
    front = ie.frontier(setting, grid_points=60)
    pre = prefill_step_model(setting.model, setting.gpu, PAPER)
    dec = StepModel(compile_workload(setting.model, PAPER), setting.gpu, PAPER)
    pts = front.points
    assert (pts.pipeline_degree > 2).any()
    for _, row in pts.iloc[:: max(1, len(pts) // 12)].iterrows():
        N, B = np.array([row.gpus]), np.array([row.batch])
        p, adiv, two = layout_of(row)
        prefill_s = pre.breakdown(N, p, 8000.0, 0.0, p, adiv, two).latency_s[0]
        first_s = dec.breakdown(N, B, 1, 8000.0, p, adiv, two).latency_s[0]
        if np.isfinite(row.ttft_s):
            assert row.ttft_s == pytest.approx(prefill_s + first_s, rel=1e-9)
        else:
            assert not dec.fits(N, B, p, 8000.0)[0]


def test_ttft_limited_frontier_checks_the_prompt_cache_and_uses_deployable_layouts(
    ttft_limited,
):
    front = ttft_limited
    cheapest = front.cheapest()
    # not a 594-GPU, 80-stage instance whose TTFT was computed on another layout
    assert cheapest.gpus < 100 and cheapest.pipeline_degree < 8
    dec = StepModel(
        compile_workload(ie.load_model("Llama 3 70B").with_precision(8), PAPER),
        ie.load_hardware("H100-paper"),
        PAPER,
    )
    pts = front.points
    assert dec.fits(
        pts.gpus.to_numpy(), pts.batch.to_numpy(), pts.pipeline_degree.to_numpy(), 8000.0
    ).all()
    # long prompts: the cache of every request at the prompt's length must fit too
    long = ie.frontier(
        "Llama 3 70B",
        "H100-paper",
        weight_bits=8,
        prompt_tokens=100000,
        ttft_max_s=60.0,
        grid_points=40,
    )
    pts = long.points
    assert dec.fits(
        pts.gpus.to_numpy(), pts.batch.to_numpy(), pts.pipeline_degree.to_numpy(), 100000.0
    ).all()


def test_ttft_limit_on_discrete_layouts_with_a_draft():
    kwargs = dict(weight_bits=8, context_tokens=8000, prompt_tokens=8000, draft="Llama 3 8B")
    kwargs.update(max_draft_tokens=2, ttft_max_s=0.2)
    tight = ie.frontier("Llama 3 70B", "H100", discrete=True, grid_points=12, **kwargs)
    assert len(tight) > 10 and (tight.points.ttft_s <= 0.2).all()
    # where the draft runs (γ > 1) its prefill counts too: TTFT above the target's alone
    setting = ie.make_setting("Llama 3 70B", "H100", **kwargs)
    pre = prefill_step_model(setting.model, setting.gpu, PAPER, integer_layouts=True)
    dec = StepModel(compile_workload(setting.model, PAPER), setting.gpu, PAPER, True)
    spec = tight.points[tight.points.draft_tokens > 1]
    assert len(spec)
    for _, row in spec.iterrows():
        N, B = np.array([row.gpus]), np.array([row.batch])
        p, adiv, two = layout_of(row)
        target = (
            pre.breakdown(N, p, 8000.0, 0.0, p, adiv, two).latency_s[0]
            + dec.breakdown(N, B, 1, 8000.0, p, adiv, two).latency_s[0]
        )
        assert row.ttft_s > target * 1.001


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
    assert result.exit_code == 2 and "--prompt-tokens" in result.output
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
            "--grid-points",
            "20",  # infeasible at any grid: the prefill alone is too slow
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


def test_context_parallel_uses_the_prefill_step_model():
    # one device is `prefill` on one GPU (weights read, overheads,
    # roofline), so a 1-token prompt takes 6.49 ms on an H100, not 0.023 ms of FLOP, and gains
    # nothing from a second device (zero-token chunks are not devices used)
    setting = ie.make_setting("Llama 3.1 8B", "H100")
    df = cp.compare(setting, [1, 100, 4000], 1024)
    for row in df.itertuples():
        one = prefill.prefill(setting, 1, row.prompt_tokens).latency_s
        assert row.single_device_s == pytest.approx(one, rel=1e-12)
    assert df.single_device_s[0] == pytest.approx(6.4877e-3, rel=1e-4)
    assert df.speedup_kv_runahead[0] == 1.0 and df.devices_used[0] == 1
    assert df.chunk_tokens[0] == "1" and df.devices_used[1] <= 100
    assert (df.kv_runahead_balanced_s <= df.kv_runahead_equal_s).all()
    # every device reads the weights: a chunk costs at least one weight read
    weights = prefill.prefill_model(setting).weights_total_bytes / (3.35e12 * 0.75)
    chunks = [float(c) for c in df.chunk_tokens[2].split(", ")]
    assert df.kv_runahead_balanced_s[2] > weights and sum(chunks) == 4000


def test_context_parallel_refuses_a_model_that_does_not_fit_a_device():
    from inference_econ.errors import InfeasibleError

    with pytest.raises(InfeasibleError, match="--device-gpus"):
        cp.compare(ie.make_setting("DeepSeek-V3", "H100"), [1000], 4)
    fp8 = ie.make_setting("DeepSeek-V3", "H200", weight_bits=8)
    eight = cp.compare(fp8, [1000], 2, devices_gpus=8)
    one = prefill.prefill(fp8, 8, 1000).latency_s
    assert np.isfinite(one)
    assert eight.single_device_s[0] == pytest.approx(one, rel=1e-12)


def test_an_empty_prompt_has_no_cached_tokens():
    assert prefill.cached_prompt_tokens(0, 0.5) == 0 and prefill.cached_prompt_tokens(10, 1.0) == 9


def test_prefill_and_request_rows_state_the_expert_degree():
    # a MoE layout is traceable only with its expert degree: §A5's rule on a pass's tokens
    r1 = ie.make_setting("DeepSeek-R1", "H100")
    wide = prefill.prefill(r1, 32, 2000, batch=16, discrete=True)
    assert wide.expert_degree == 32 and wide.tensor_degree == 32
    # 20 tokens are below the 2 x sparsity a micro-batch needs for expert parallelism
    assert prefill.prefill(r1, 32, 20, batch=1, discrete=True).expert_degree == 1
    assert prefill.prefill(LLAMA, 8, 2000).expert_degree == 1  # dense
    view = requests.request(ie.make_setting("DeepSeek-R1", "H200"), 8, 8, 2000, 500, discrete=True)
    # eight decoding requests keep the experts tensor-parallel; a 2,000-token prompt does not
    assert (view.expert_degree, view.prefill_expert_degree) == (1, 8)
    out = CliRunner().invoke(
        main,
        ["prefill", "DeepSeek-R1", "-H", "H100", "--gpus", "32", "--prompt-tokens", "2000"]
        + ["--batch", "16", "--discrete", "--format", "csv"],
    )
    assert out.exit_code == 0, out.output
    assert "expert_degree" in out.output.splitlines()[2].split(",")


def test_a_lone_prompt_on_more_stages_states_the_expert_degree_it_is_priced_with():
    """DeepSeek-R1 (achievable) on 64 x H100, one 100-token prompt: the search takes PP2 x TP32
    (§B12), one prompt a micro-batch crossing both stages, priced as two prompts' step. Its
    micro-batch is the whole prompt, 100 tokens, above the 2 x 32 = 64 that expert parallelism
    needs: EP32, as with two prompts in flight on the same layout at the same latency."""
    r1 = ie.make_setting("DeepSeek-R1", "H100", assumptions="achievable")
    alone, pair = (prefill.prefill(r1, 64, 100, batch=b) for b in (1, 2))
    assert (alone.pipeline_degree, alone.tensor_degree) == (2, 32)
    assert alone.latency_s == pytest.approx(pair.latency_s, rel=1e-12)
    assert alone.expert_degree == pair.expert_degree == 32
