"""Tiers under the prefix cache: hand-computed room and load times, the cache moving segments
to host memory, on to disk and back, a free tier equal to a GPU cache with room for every prefix, a
larger tier never lowering the hit rate, slower loads never lowering TTFT, and the refusals."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.errors import SpecError
from inference_econ.load.arrivals import Traffic
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.kv_tiers import KvTier, TierSpace, tier_space
from inference_econ.load.lengths import parse_lengths
from inference_econ.load.prefix_cache import PrefixCache
from inference_econ.load.simulate import simulate
from inference_econ.serving.setting import make_setting

GB = 1e9


def test_room_and_load_time_by_hand():
    h100 = ie.load_hardware("H100")
    # Llama 3.1 8B in BF16: 8 KV heads x 128 dims x 2 (K, V) x 2 bytes = 4,096 bytes a layer
    space = tier_space(KvTier("host", 64 * GB), h100, 2, 4096.0)
    assert space.room == pytest.approx(2 * 64e9 / 4096.0)
    # each GPU loads its shard over its own PCIe Gen5 x16 link, 64 GB/s one way
    assert space.seconds_per_position == pytest.approx(4096.0 / (2 * 64e9))
    assert tier_space(KvTier("disk", 1 * GB, 10 * GB), h100, 1, 4096.0).seconds_per_position == (
        pytest.approx(4096.0 / 10e9)
    )


def _cache(room: float, seconds: float = 1.0, overlap: bool = True, disk=None) -> PrefixCache:
    tiers = (TierSpace(room, seconds, overlap),) + (() if disk is None else (disk,))
    return PrefixCache(lambda a, b: float(b - a), tiers)


def test_an_evicted_segment_moves_to_host_and_comes_back_loaded():
    cache = _cache(room=1000.0, seconds=0.001)
    a = cache.insert(((("a",), 100),), None, 0.0)
    cache.release(a, 1.0)
    assert cache.evict(100.0) == 100.0  # freed on the GPU ...
    assert cache.cached == 0.0 and cache.tier_held == [100.0]  # ... kept in host memory
    (node,) = cache.lookup(((("a",), 100), (("b",), 50)))
    assert node.level == 1 and cache.tier_tokens([node], 96) == [96]
    cache.pin([node], 2.0)  # a prompt that starts with it: loaded back
    assert node.level == 0 and cache.tier_held == [0.0]
    assert cache.pending_s == pytest.approx(0.1)  # 100 positions x 1 ms
    assert cache.charged(0.04) == pytest.approx(0.1)  # overlapped: the longer of the two
    assert cache.pending_s == 0.0 and cache.charged(0.04) == 0.04
    blocking = _cache(room=1000.0, seconds=0.001, overlap=False)
    blocking.pending_s = 0.1
    assert blocking.charged(0.04) == pytest.approx(0.14)  # the step waits, then runs


def test_a_full_host_tier_drops_its_least_recently_used_leaves():
    cache = _cache(room=150.0)
    for t, key in enumerate(("a", "b")):
        nodes = cache.insert((((key,), 100),), None, float(t))
        cache.release(nodes, float(t))
    cache.evict(200.0)  # both leave the GPU; the host holds one of them
    assert cache.tier_held == [100.0]
    assert cache.lookup(((("a",), 100),)) == []  # the older one was dropped
    assert cache.lookup(((("b",), 100),))[0].level == 1


def test_a_full_host_tier_moves_its_oldest_leaves_to_disk_which_loads_slower():
    cache = _cache(room=150.0, seconds=0.001, disk=TierSpace(1000.0, 0.01, True))
    for t, key in enumerate(("a", "b")):
        nodes = cache.insert((((key,), 100),), None, float(t))
        cache.release(nodes, float(t))
    cache.evict(200.0)  # both leave the GPU; the older one goes on to disk
    assert cache.tier_held == [100.0, 100.0]
    (a,) = cache.lookup(((("a",), 100),))
    (b,) = cache.lookup(((("b",), 100),))
    assert (a.level, b.level) == (2, 1)
    assert cache.tier_tokens([a], 64) == [0, 64]
    cache.pin([a], 3.0)
    assert cache.pending_s == pytest.approx(100 * 0.01)  # at the disk's speed
    assert cache.tier_held == [100.0, 0.0] and a.level == 0


@pytest.fixture(scope="module")
def small_cache():
    """Llama 3.1 8B on one H100 whose KV cache holds ~30 requests of a session: prefixes are
    evicted as sessions go on, while the running requests never fill it (admission is the
    same whatever the cache keeps)."""
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    traffic = Traffic(
        2.0,
        parse_lengths("lognormal:1500:0.4"),
        parse_lengths("200"),
        requests=240,
        session_turns=4,
        think_time_s=20.0,
        shared_prefix_tokens=1000,
        shared_prefixes=8,
    )
    return setting, traffic


def _run(setting, traffic, tier=None, capacity=None):
    tiers = () if tier is None else (tier,)
    inst = build_instance(setting, 1, EngineConfig(kv_tiers=tiers), 2000.0)
    if capacity is not None:
        inst = dataclasses.replace(inst, kv_capacity=capacity)
    return simulate(inst, traffic.stream())


def test_a_free_host_tier_equals_a_gpu_cache_with_room_for_every_prefix(small_cache):
    setting, traffic = small_cache
    layers = 32.0
    small = 30 * 3000 * layers  # layer-positions of ~30 requests of 3,000 tokens
    plain = _run(setting, traffic, capacity=small)
    free = _run(setting, traffic, KvTier("host", math.inf, math.inf), capacity=small)
    roomy = _run(setting, traffic, capacity=1e4 * small)  # nothing is ever evicted
    assert np.nansum(plain.cached_tokens) < np.nansum(free.cached_tokens)  # evictions cost hits
    assert np.nansum(free.tier_cached_tokens[0]) > 0
    assert np.array_equal(free.cached_tokens, roomy.cached_tokens, equal_nan=True)
    assert np.array_equal(free.first_token_s, roomy.first_token_s, equal_nan=True)
    assert np.array_equal(free.finish_s, roomy.finish_s, equal_nan=True)


def test_a_larger_tier_never_lowers_the_hit_rate_and_a_slower_link_never_speeds_ttft(
    small_cache,
):
    setting, traffic = small_cache
    small = 30 * 3000 * 32.0
    hits = []
    for size_gb in (0.05, 0.2, 1.0, 8.0):
        rec = _run(setting, traffic, KvTier("host", size_gb * GB), capacity=small)
        hits.append(np.nansum(rec.cached_tokens))
    assert hits == sorted(hits) and hits[0] < hits[-1]
    ttft = []
    for bw_gb in (math.inf, 64.0, 4.0, 0.5):
        rec = _run(setting, traffic, KvTier("host", 8 * GB, bw_gb * GB), capacity=small)
        ttft.append(float(np.nanmean(rec.first_token_s - rec.arrivals.arrival_s)))
    assert ttft == sorted(ttft) and ttft[0] < ttft[-1]


def test_sessions_report_later_turns_and_price_per_session():
    kw = dict(gpus=1, arrival_rate_per_s=2, requests=120, input_lengths="1000")
    kw.update(output_lengths="100", session_turns=4, think_time_s=10)
    result = ie.simulate_load("Llama 3.1 8B", "H100", kv_offload_gb=16, **kw)
    row = result.to_dataframe().iloc[0]
    assert 0.0 <= row["host_hit_rate"] <= row["prefix_hit_rate"] <= 1.0
    assert row["later_turn_ttft_p99_s"] > 0.0
    # 2.1 USD/h (the H100's price) over 2 req/s x 3,600 s / 4 requests a session
    assert row["usd_per_session"] == pytest.approx(2.1 * 4 / (2 * 3600))
    assert result.metadata()["kv_offload"].startswith("host KV tier 16 GB per GPU")


def test_a_prefill_pool_reports_what_its_host_tier_gave():
    """100 system prompts of 8,000 tokens outgrow one H100's cache: a prefill pool finds part
    of them in its host tier, and says so as a co-located instance does (it had printed no
    host_hit_rate at all)."""
    kw = dict(gpus=1, arrival_rate_per_s=4, requests=300, input_lengths="200")
    kw.update(output_lengths="20", shared_prefix_tokens=8000, shared_prefixes=100)
    rows = [
        ie.simulate_load("Llama 3.1 8B", "H100", kv_offload_gb=64, **kw, **pool)
        .to_dataframe()
        .iloc[0]
        for pool in ({}, dict(prefill_instances=1, prefill_gpus=1))
    ]
    together, pooled = (r["host_hit_rate"] for r in rows)
    assert together == pytest.approx(0.2602, abs=1e-3)
    assert pooled == pytest.approx(0.2611, abs=1e-3)
    assert pooled <= rows[1]["prefix_hit_rate"] == pytest.approx(0.7254, abs=1e-3)


def test_sessions_on_a_prefill_pool_are_refused_in_the_words_a_command_takes():
    # the fix had said "give session_turns 1", a keyword the command line does not take
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "2"]
    args += ["--prompt-tokens", "100", "--output-tokens", "10", "--requests", "50", "-q"]
    args += ["--turns", "3", "--prefill-instances", "1", "--prefill-gpus", "1"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1] == (
        "error: --turns: multi-turn sessions are simulated on co-located instances only "
        "(drop the prefill pool, or give sessions of one turn)"
    )


def test_a_capacity_plan_with_a_host_tier_tabulates_without_a_pandas_warning():
    # its table took the plan's 100-odd figures a column at a time, and pandas printed a
    # PerformanceWarning under the command's answer
    import warnings

    kw = dict(arrival_rate_per_s=4, requests=200, input_lengths="lognormal:1000:0.6")
    kw.update(output_lengths="lognormal:200:0.5", session_turns=4, think_time_s=10)
    kw.update(shared_prefix_tokens=2000, shared_prefixes=8, max_gpus=2, kv_offload_gb=16)
    plan = ie.capacity("Llama 3.1 8B", "H100", slo_ttft_p99_s=0.5, slo_tpot_p99_s=0.03, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = plan.to_dataframe()
    assert table.shape == (2, 122)
    chosen = table[table["chosen"]].iloc[0]
    assert (chosen["gpus"], chosen["host_hit_rate"]) == (1, 0.0)
    assert chosen["prefix_hit_rate"] == pytest.approx(0.7882, abs=1e-3)
    assert table["prefix_hit_rate"].isna().tolist() == [not c for c in table["chosen"]]


@pytest.mark.parametrize(
    "hardware, extra, field",
    [
        ("H100", dict(kv_offload_gb=300), "kv_offload_gb"),  # a DGX H100 has 256 GB a GPU
        ("L40S", dict(kv_offload_gb=10), "host_link_bytes_per_s"),  # no host link stated
        ("H100", dict(kv_offload_gb=10, session_turns=1), "kv_offload_gb"),  # nothing shared
        ("H100", dict(kv_disk_gb=100, kv_disk_bandwidth_gb_per_s=3), "kv_disk_gb"),  # no host
        ("H100", dict(kv_offload_gb=10, kv_disk_gb=100), "kv_disk_bandwidth"),  # speed unknown
    ],
)
def test_a_tier_that_cannot_work_is_refused(hardware, extra, field):
    kw = dict(gpus=1, arrival_rate_per_s=2, requests=40, input_lengths="1000")
    kw.update(output_lengths="100", session_turns=3)
    kw.update(extra)
    with pytest.raises(ie.SpecError, match=field):
        ie.simulate_load("Llama 3.1 8B", hardware, **kw)


def test_tier_options_a_command_would_not_use_are_refused_in_one_line():
    """--no-kv-offload-overlap without a host tier would be ignored, so it is refused; export
    launches no KV-cache tier, so it offers none of their options (one had pointed to --plan
    capacity, which then refused it too); a point export of part of a GPU or of a request
    says an engine launches whole ones (not "leave discrete off", which export cannot)."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    run = CliRunner().invoke
    simulate = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--rate", "2",
                "--prompt-tokens", "100", "--output-tokens", "10", "--requests", "50", "-q"]  # fmt: skip
    r = run(main, [*simulate, "--no-kv-offload-overlap"])
    assert r.exit_code == 2
    assert "--no-kv-offload-overlap: needs --kv-offload-gb" in r.output, r.output
    export = ["export", "DeepSeek-R1", "-H", "H200", "--engine", "sglang",
              "--prompt-tokens", "1000", "--output-tokens", "1000", "-q"]  # fmt: skip
    assert "--kv-offload-gb" not in run(main, ["export", "--help"]).output
    for plan in (["--gpus", "8", "--batch", "64"], ["--plan", "capacity", "--rate", "5"]):
        r = run(main, [*export, *plan, "--kv-offload-gb", "100"])
        assert r.exit_code == 2 and "No such option '--kv-offload-gb'" in r.output, r.output
    r = run(main, [*export, "--gpus", "8.5", "--batch", "64"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[-1] == (
        "error: --gpus: is 8.5; an engine launches whole GPUs (give a whole number of GPUs)"
    )


@pytest.mark.parametrize("given", [{"gpus": 10**400, "batch": 8}, {"gpus": 1, "batch": -(10**400)}])
def test_an_export_of_a_number_past_a_float_names_its_argument(given):
    # the whole-number check had raised OverflowError on an int no float holds
    from inference_econ import api

    name = next(k for k, v in given.items() if abs(v) > 1e9)
    with pytest.raises(SpecError, match=rf"field '{name}': is -?1e\+400 "):
        api.export(
            "Llama 3.1 8B", "H100", engine="vllm", prompt_tokens=1000, output_tokens=100, **given
        )
