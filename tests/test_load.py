"""Serving under load (docs/model.md Part E): the mixed step, the simulator against queueing
theory and the steady-batch model, memory admission and preemption, determinism, and the
capacity search."""

import copy
import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.errors import InfeasibleError, SpecError
from inference_econ.load.arrivals import Arrivals, load_trace, make_traffic
from inference_econ.load.deployment import Deployment, simulate_deployment
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.lengths import parse_lengths
from inference_econ.load.records import RunRecord
from inference_econ.load.results import Percentiles, RequestLatencies, summarise
from inference_econ.load.simulate import simulate
from inference_econ.load.targets import Targets
from inference_econ.model.latency import StepModel, prefill_step_model
from inference_econ.model.mixed_step import EngineLayout, StepTable, mixed_step_s, run_reaching_s
from inference_econ.model.workload import compile_workload
from inference_econ.optimise.capacity import cheapest_deployment
from inference_econ.optimise.load_search import find_knee, knee_of
from inference_econ.serving.prefill import prefill
from inference_econ.serving.setting import make_setting

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def llama8b():
    return make_setting("Llama 3 8B", "H100")


# --- the mixed step (§E1) -------------------------------------------------------------------
@pytest.mark.parametrize(
    "model, preset, layout",
    [
        ("Llama 3 70B", "paper", EngineLayout(8, 1, 1.0, False)),
        ("Llama 3 70B", "refined", EngineLayout(8, 2, 2.0, True)),
        ("Mixtral 8x7B", "refined", EngineLayout(4, 1, 1.0, False)),
        ("gpt-oss-120b", "refined", EngineLayout(2, 1, 1.0, False)),
    ],
)
def test_step_table_is_the_mixed_step(model, preset, layout):
    """The table's split (tokens, KV positions, attended positions) reproduces the step
    evaluated on StepModel, for dense, MoE and sliding-window models, with pipelines."""
    s = make_setting(model, "H100", assumptions=preset)
    step = StepModel(compile_workload(s.model, s.assumptions), s.gpu, s.assumptions, True)
    pre = prefill_step_model(s.model, s.gpu, s.assumptions, True).work
    table = StepTable(step, layout, 4096)
    rng = np.random.default_rng(3)
    D, n = rng.integers(0, 300, 40), rng.uniform(0, 5000, 40)
    P, c = rng.integers(0, 2000, 40), rng.uniform(0, 5000, 40)
    exact = mixed_step_s(step, pre, layout, D, n, P, c)
    w = step.work
    fast = [
        table.time_s(
            int(d + p),
            float(d * w.layer_positions(nn) + (p > 0) * w.layer_positions(cc)),
            float(d * w.layer_positions(nn) + p * w.layer_positions(cc + (p - 1) / 2)),
            int(d + (p > 0)),  # decoding requests and the prompt: the bubbles' sequences (§B12)
            max(int(p), 1),  # the prompt's chunk
        )
        for d, nn, p, cc in zip(D, n, P, c)
    ]
    np.testing.assert_allclose(fast, exact, rtol=1e-12, atol=0)
    # a pure decode step is the step model's own latency for that layout
    part = step.pipeline_part(float(layout.gpus), np.array([64.0]), 1.0, 1000.0, layout.pipeline)
    lat2, lat1 = step.latency_by_dims(part, layout.attention_divisor)
    assert mixed_step_s(step, pre, layout, 64, 1000.0, 0) == pytest.approx(
        (lat2 if layout.two_d else lat1)[0], rel=1e-12
    )


def test_a_prompt_alone_is_the_prefill_pass(llama8b):
    step = StepModel(
        compile_workload(llama8b.model, llama8b.assumptions), llama8b.gpu, llama8b.assumptions
    )
    pre = prefill_step_model(llama8b.model, llama8b.gpu, llama8b.assumptions).work
    alone = float(mixed_step_s(step, pre, EngineLayout(1), 0, 0.0, 1000))
    assert alone == pytest.approx(prefill(llama8b, 1, 1000).latency_s, rel=1e-12)


def test_closed_form_run_time_is_the_sum_of_its_steps(llama8b):
    inst = build_instance(llama8b, 1)
    t = inst.table
    for D, q0, growth, k in [
        (1, 1e3, 32, 500),
        (200, 32 * 200 * 5000, 32 * 200, 3000),
        (64, 0.0, 2048, 777),
    ]:
        q = q0 + growth * np.arange(k)
        assert t.run_time_s(D, q0, growth, k) == pytest.approx(t.times_s(D, q).sum(), rel=1e-12)
    # a run where compute binds first and memory takes over (the two lines cross)
    D = 512
    cross = [
        q
        for q in np.linspace(0, 4e8, 200)
        if t.memory_s[D] + t.kv_s * q > t.compute_s[D] + t.attention_s * q
    ]
    q0 = cross[0] * 0.5
    growth = cross[0] / 100
    q = q0 + growth * np.arange(300)
    assert t.run_time_s(D, q0, growth, 300) == pytest.approx(t.times_s(D, q).sum(), rel=1e-12)


@pytest.mark.parametrize("floor", [False, True])
def test_the_run_that_reaches_a_time_is_the_fewest_steps_that_do(llama8b, floor):
    """``run_reaching_s`` (the step count at which a run of decode steps reaches a deadline: an
    arrival) is the first whose summed steps reach it, counted step by step, with and without
    a host floor that binds the first steps of the run; its seconds are that run's."""
    t = build_instance(llama8b, 1).table
    if floor:  # a floor above the first steps' GPU time, below the last ones'
        t = copy.copy(t)
        t.host_floor_s = float(t.times_s(64, np.array([32 * 64 * 3000.0]))[0])
        t.host_sequence_s = 1e-9
    rng = np.random.default_rng(3)
    for _ in range(200):
        D = int(rng.integers(1, 300))
        k = int(rng.integers(1, 400))
        q0 = float(32 * D * rng.uniform(0, 8000))
        growth = float(32 * D * rng.choice([0.0, 1.0, 4.0]))
        cum = np.cumsum(t.times_s(D, q0 + growth * np.arange(k)))
        deadline = float(rng.uniform(0, cum[-1]))
        n, seconds = run_reaching_s(t, D, q0, growth, k, deadline, t.run_time_s(D, q0, growth, k))
        assert n == int(np.searchsorted(cum, deadline * (1 - 1e-12))) + 1
        assert seconds == t.run_time_s(D, q0, growth, n) >= deadline * (1 - 1e-12)
        assert n == 1 or t.run_time_s(D, q0, growth, n - 1) < deadline


# --- what a run measures, as MLPerf LoadGen measures it (§F9) ------------------------------------
def test_request_latencies_are_loadgens_ttft_and_tpot():
    """LoadGen's TPOT of a query is (latency - first-token latency) / (tokens - 1), both from the
    query's scheduled time, a one-token query has none, and mean TPOT is the mean over queries,
    not over tokens (mlcommons/inference loadgen/logging.cc ``RecordSampleCompletion``,
    results.cc ``time_per_output_token_mean``; docs/model.md §F9)."""
    a = Arrivals(np.array([0.0, 1.0, 2.0]), np.array([100, 100, 100]), np.array([2, 11, 1]))
    record = RunRecord(
        arrivals=a,
        first_token_s=np.array([0.5, 1.2, 2.3]),
        finish_s=np.array([0.7, 2.2, 2.3]),
        admitted_s=np.array([0.0, 1.0, 2.0]),
        preemptions=np.zeros(3),
        rejected=np.zeros(3, dtype=bool),
        busy_s=0.0,
        prefill_s=0.0,
        flop=0.0,
        steps=0,
        end_s=2.3,
        batch_seconds=0.0,
        peak_kv_fraction=0.0,
    )
    lat = RequestLatencies.of(record)
    # by hand: TTFT 0.5, 0.2, 0.3 s; TPOT (0.7 - 0.5) / 1 = 0.2 s and (2.2 - 1.2) / 10 = 0.1 s
    np.testing.assert_allclose(lat.ttft_s, [0.5, 0.2, 0.3])
    np.testing.assert_allclose(lat.tpot_s[:2], [0.2, 0.1])
    assert np.isnan(lat.tpot_s[2])
    # the mean over queries (0.15 s), not the token-weighted 1.2 s / 11 tokens = 0.109 s
    assert Percentiles.of(lat.tpot_s).mean == pytest.approx(0.15)
    assert Percentiles.of(lat.ttft_s).mean == pytest.approx(1.0 / 3.0)


# --- the simulator against theory (§E3) ---------------------------------------------------------
def test_light_load_ttft_is_the_prefill_and_tpot_the_batch_1_step(llama8b):
    """Requests far apart: TTFT is one prefill pass, TPOT the batch-1 decode step at the mean
    context of the response (steps are linear in context)."""
    traffic = make_traffic(0.001, "1000", "200", requests=100, seed=0)
    r = simulate_deployment(llama8b, Deployment(1), traffic)
    assert r.ttft_s.p50 == pytest.approx(prefill(llama8b, 1, 1000).latency_s, rel=1e-9)
    step = ie.point(llama8b.replace(context_tokens=1000 + (200 - 2) / 2), gpus=1, batch=1)
    assert r.tpot_s.p50 == pytest.approx(step.latency_s, rel=1e-9)
    assert r.preemptions == 0 and r.goodput_fraction == 1.0


def test_single_server_waiting_time_is_md1(llama8b):
    """One request at a time, one-token answers: a single server with deterministic service S.
    Poisson arrivals at rho = 0.5: mean wait = lambda S^2 / (2 (1 - rho)) (Pollaczek-Khinchine)."""
    inst = build_instance(llama8b, 1, EngineConfig(max_batch_requests=1), 1000)
    service = inst.table.time_s(1000, 0.0, 1000 * float(inst.positions(999 / 2)))
    rate = 0.5 / service
    stream = make_traffic(rate, "1000", "1", requests=20000, seed=0).stream()
    record = simulate(inst, stream)
    wait = (record.first_token_s - stream.arrival_s - service).mean()
    theory = rate * service**2 / (2 * (1 - 0.5))
    assert wait == pytest.approx(theory, rel=0.05)
    assert (record.first_token_s - stream.arrival_s).min() == pytest.approx(service, rel=1e-9)


def test_throughput_never_exceeds_the_steady_batch_frontier(llama8b):
    """Overloaded, the engine's output rate stays below the best steady batch of the same GPUs
    at the shortest context it ever decodes at (B/T from the step model, every integer B)."""
    traffic = make_traffic(1000, "20", "500", requests=2000, seed=1)
    config = EngineConfig(max_batch_requests=1024, step_token_budget=4096)
    r = simulate_deployment(llama8b, Deployment(1), traffic, config=config)
    steady = ie.points(llama8b.replace(context_tokens=20.0), gpus=1, batch=np.arange(1, 1025))
    best = (steady["batch"] / steady["latency_s"]).max()
    assert 0.6 * best < r.output_tokens_per_s < best  # close to it, never above
    assert (
        r.usd_per_m_output_tokens_all_in > steady["usd_per_mtok"].min()
    )  # all-in above the decode-only floor


# --- memory: admission and preemption -----------------------------------------------------------
def test_admission_waits_for_memory_and_preemption_recomputes(llama8b):
    """A cache of 250 tokens: two 100-token prompts fit, the third waits; as the two grow the
    later one is preempted (its cache dropped, recomputed later), and the same happens to the
    third. A request that could never fit (300 + 50 tokens) is rejected."""
    inst = build_instance(llama8b, 1)
    small = dataclasses.replace(inst, kv_capacity=32 * 250.0)  # 32 layers
    rec = simulate(small, Arrivals(np.zeros(3), np.array([100, 100, 100]), np.array([50, 50, 50])))
    assert rec.preemptions.tolist() == [0, 1, 1]
    assert rec.first_token_s[0] == rec.first_token_s[1] < rec.first_token_s[2]
    assert rec.finish_s[0] < rec.finish_s[1] < rec.finish_s[2]
    assert np.isfinite(rec.finish_s).all() and rec.peak_kv_fraction <= 1.0 + 1e-12
    rec = simulate(small, Arrivals(np.zeros(2), np.array([100, 300]), np.array([50, 50])))
    assert rec.rejected.tolist() == [False, True] and np.isnan(rec.finish_s[1])


def test_batch_limit_serialises_requests(llama8b):
    inst = build_instance(llama8b, 1, EngineConfig(max_batch_requests=1))
    rec = simulate(inst, Arrivals(np.zeros(3), np.full(3, 200), np.full(3, 20)))
    assert (np.diff(rec.finish_s) > 0).all()
    assert rec.first_token_s[1] > rec.finish_s[0] - 1e-12


def test_window_runs_match_the_closed_form(llama8b, monkeypatch):
    """The array path (used for sliding windows) gives the closed form's results."""
    stream = make_traffic(
        30, "lognormal:800:0.7", "lognormal:150:0.5", requests=600, seed=2
    ).stream()
    inst = build_instance(llama8b, 1)
    closed = simulate(inst, stream)
    monkeypatch.setattr(type(inst), "windowed", property(lambda self: True))
    arrays = simulate(inst, stream)
    np.testing.assert_allclose(arrays.finish_s, closed.finish_s, rtol=1e-9)
    np.testing.assert_allclose(arrays.first_token_s, closed.first_token_s, rtol=1e-9)


def test_sliding_window_model_runs():
    s = make_setting("gpt-oss-120b", "H100", assumptions="refined")
    r = simulate_deployment(s, Deployment(2), make_traffic(5, "2000", "200", requests=300, seed=0))
    assert r.completed == 300 and r.tpot_s.p99 > 0


# --- determinism and results ---------------------------------------------------------------------
@pytest.mark.parametrize("admission", ["recompute", "no_evict"])
def test_a_finished_run_leaves_no_cycles_to_collect(llama8b, admission):
    """A run's engine and its per-request lists are freed when it ends, by reference counting:
    nothing of it is left for the cyclic collector (whose passes over a run's engines, kept
    alive until one through their policies, would cost a compare-measured run about a second
    and 90 MB). What lived before the run is frozen (``gc.freeze``), so the count is of the
    run's objects alone, and the collector does not walk the session's heap to give it."""
    import gc

    inst = build_instance(llama8b, 1, EngineConfig(admission=admission))
    arrivals = make_traffic(20, "500", "100", requests=200, seed=1).stream()
    simulate(inst, arrivals)
    gc.freeze()
    gc.disable()
    try:
        record = simulate(inst, arrivals)
        assert gc.collect() == 0
    finally:
        gc.enable()
        gc.unfreeze()
    assert np.isfinite(record.finish_s).all()


def test_seeded_runs_are_reproducible(llama8b):
    t = make_traffic(20, "lognormal:1000:0.8", "lognormal:200:0.6", requests=800, seed=7)
    a = simulate_deployment(llama8b, Deployment(1, 2), t).to_dataframe()
    b = simulate_deployment(llama8b, Deployment(1, 2), t).to_dataframe()
    assert a.equals(b)
    c = simulate_deployment(
        llama8b, Deployment(1, 2), dataclasses.replace(t, seed=8)
    ).to_dataframe()
    assert c["ttft_p99_s"].iloc[0] != a["ttft_p99_s"].iloc[0]


def test_progress_is_reported(llama8b):
    seen = []
    ie.simulate_load(
        llama8b,
        gpus=1,
        arrival_rate_per_s=20,
        input_lengths="500",
        output_lengths="50",
        requests=500,
        progress=lambda d, n: seen.append((d, n)),
    )
    assert seen and seen[-1] == (500, 500) and all(n == 500 for _, n in seen)


def test_result_accounting(llama8b):
    t = make_traffic(10, "1000", "200", requests=1000, seed=0)
    r = simulate_deployment(llama8b, Deployment(1, 3), t, Targets(ttft_p99_s=1.0, tpot_p99_s=0.05))
    assert r.gpus == 3 and r.usd_per_hour == pytest.approx(3 * 2.1)
    # and a month of it beside the hour: 730 hours (8,760 / 12) x $6.30 = $4,599
    row = r.row()
    assert row["monthly_usd"] == pytest.approx(4599.0, rel=1e-12)
    assert list(row).index("monthly_usd") == list(row).index("usd_per_hour") + 1
    # a deployment that keeps up serves the offered load: 10 req/s of 1,000 + 200 tokens, so
    # its rates are exactly those, whatever seed drew the sample (the sample's realised rate
    # over the service window, 2,068 output tokens/s with seed 0 and 1,966 with seed 1, had
    # been reported beside a price made at the offered 2,000: the seed's luck, not the model)
    assert r.throughput_requests_per_s == pytest.approx(10, rel=1e-12)
    assert r.output_tokens_per_s == pytest.approx(2000, rel=1e-12)
    assert r.input_tokens_per_s == pytest.approx(10000, rel=1e-12)
    assert r.input_tokens_per_output_token == pytest.approx(5, rel=1e-12)
    assert r.stable and r.backlog_growth < 1.3
    # all-in cost per output token: the deployment's dollars an hour over the output tokens
    # the offered load brings, 10 req/s x 200 tokens: 1e6 x $6.30 / 3600 s / 2000 = $0.875
    assert r.usd_per_m_output_tokens_all_in == pytest.approx(0.875, rel=1e-12)
    other = simulate_deployment(
        llama8b, Deployment(1, 3), dataclasses.replace(t, seed=1), Targets(ttft_p99_s=1.0)
    )
    assert other.output_tokens_per_s == pytest.approx(2000, rel=1e-12)
    assert other.usd_per_m_output_tokens_all_in == pytest.approx(0.875, rel=1e-12)
    # the input and output halves split the same dollars: r·input + output is the all-in price
    assert (
        r.input_tokens_per_output_token * r.usd_per_m_input_tokens + r.usd_per_m_output_tokens
        == pytest.approx(r.usd_per_m_output_tokens_all_in, rel=1e-9)
    )
    assert r.usd_per_m_input_tokens < r.usd_per_m_output_tokens
    assert 0 < r.mfu < r.busy_fraction <= 1 and r.meets_targets and r.goodput_fraction == 1.0
    tight = r.with_targets(Targets(ttft_p99_s=r.ttft_s.p50))
    assert not tight.meets_targets and 0.4 < tight.goodput_fraction < 0.6
    # overloaded: the backlog grows and no target can be met, however loose
    over = simulate_deployment(
        llama8b, Deployment(1), make_traffic(200, "1000", "200", requests=1000, seed=0)
    )
    assert not over.stable and not over.with_targets(Targets(ttft_p99_s=1e6)).meets_targets
    assert any("outgrows" in n for n in over.notes)


def test_a_short_run_of_long_requests_that_falls_far_behind_reads_as_overloaded():
    """80 prompts of 120,000 tokens at 0.2 req/s on 4 H100 are served at 0.037 req/s, yet the
    in-system count (37 at the middle arrival, 68 at the last) stayed inside the count test's
    slack (10 + 3 sigma) and the run read as kept up. Over the second half the deployment
    served under half of what arrived, over longer than a request's service, and began under
    half: overloaded. At 0.03 req/s the same run keeps up."""
    setting = make_setting("Llama 3.1 70B", "H100", assumptions="achievable")
    load = dict(gpus=4, input_lengths="120000", output_lengths="1000", requests=80)
    with pytest.warns(ie.InferenceEconWarning, match="outgrows"):
        over = ie.simulate_load(setting, arrival_rate_per_s=0.2, **load)
    assert not over.stable and over.backlog_growth > 1.5
    assert over.throughput_requests_per_s < 0.25 * 0.2
    # five times as fast, its second half of arrivals (36 s) is shorter than a request's
    # service (110 s): the queue in front of the engine still tells
    with pytest.warns(ie.InferenceEconWarning, match="outgrows"):
        faster = ie.simulate_load(setting, arrival_rate_per_s=1.0, **load)
    assert not faster.stable
    kept = ie.simulate_load(setting, arrival_rate_per_s=0.03, **load)
    assert kept.stable and kept.overloaded_note is None


def test_a_queue_behind_a_large_batch_reads_as_overloaded():
    """One H100 serves about 23.6 req/s of these requests. At 31.75 req/s a run of 2,000 has its
    in-system count rise from 513 to 774 over the second half of its arrivals, inside 1.3 times
    the batch: by that count alone it keeps up. The requests waiting for a first token grow by
    over 250 (three sigmas of the 1,000 arrivals' noise: about 100): overloaded, as 20,000
    requests say (p99 TTFT 240 s). At 22 req/s the queue stays level: kept up."""
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    traffic = make_traffic(31.75, "lognormal:1000:0.6", "lognormal:200:0.5", requests=2000, seed=0)
    over = simulate_deployment(setting, Deployment(1), traffic)
    assert not over.stable and "waiting for a first token grew by" in over.overloaded_note
    assert over.throughput_requests_per_s < 25
    kept = simulate_deployment(setting, Deployment(1), dataclasses.replace(traffic, rate_per_s=22))
    assert kept.stable and kept.overloaded_note is None


def test_a_slow_queue_of_long_prompts_reads_as_overloaded():
    """Prompts of 30,000 tokens on one H100 are begun at about 0.63 a second. At 0.734 req/s a
    run of 1,000 keeps up by its in-system count (1.28-fold, inside the slack), while its p99
    TTFT is 250 s and grows with the run (1,835 s at 8,000 requests): the queue in front of
    the engine grows past its noise. At 0.6 req/s it stays level."""
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    load = dict(gpus=1, input_lengths="30000", output_lengths="200", requests=1000)
    with pytest.warns(ie.InferenceEconWarning, match="outgrows"):
        over = ie.simulate_load(setting, arrival_rate_per_s=0.734, **load)
    assert not over.stable and over.window.backlog.queue
    assert over.throughput_requests_per_s < 0.65
    kept = ie.simulate_load(setting, arrival_rate_per_s=0.6, **load)
    assert kept.stable and kept.overloaded_note is None


def test_bursts_read_at_their_peaks_not_at_one_instant(tmp_path):
    """16 bursts of 500 requests in 10 s, 40 s apart (10 req/s on average), on one H100: every
    burst is served before the next (p99 TTFT about 9.5 s at 4 bursts and at 16). The middle
    arrival opens a burst, with the engine empty: against the count at that instant the last
    arrival's hundreds are growth. Read against the most the engine held over the second
    quarter of the arrivals, and the queue by its means: kept up."""
    rng = np.random.default_rng(0)
    times = np.concatenate([b * 50 + np.sort(rng.uniform(0, 10, 500)) for b in range(16)])
    traffic = make_traffic(trace=_trace(tmp_path / "bursts.csv", times))
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    result = simulate_deployment(setting, Deployment(1), traffic)
    assert result.stable and result.overloaded_note is None
    assert result.ttft_s.p99 < 30


def _trace(path, times):
    path.write_text(
        "arrival_time_s,prompt_tokens,output_tokens\n"
        + "".join(f"{t:.4f},1000,200\n" for t in np.sort(times))
    )
    return str(path)


def test_a_batch_sent_at_once_then_an_overload_reads_as_overloaded(tmp_path):
    """1,001 requests sent at once, then 999 at 60 req/s, on one H100 (which serves about 23):
    a quarter of the requests and the middle one share the first instant, so the arrivals
    after it are read alone, their later half against their earlier: the queue grows (p99
    TTFT 68 s; at 20,000 requests 584 s)."""
    rng = np.random.default_rng(0)
    times = np.concatenate([np.zeros(1001), np.cumsum(rng.exponential(1 / 60, 999))])
    traffic = make_traffic(trace=_trace(tmp_path / "t.csv", times))
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    result = simulate_deployment(setting, Deployment(1), traffic)
    assert not result.stable and result.window.backlog.queue


def test_a_changing_rate_is_not_read_as_a_growing_backlog(tmp_path):
    """2,000 requests whose rate switches between 4 and 20 req/s every 300 s or so (7.6 on
    average) on one H100 (which serves about 23): its in-system count follows the rate (92 at
    the second quarter's peak, 191 at the last arrival), 1.8-fold growth against a Poisson
    stream's noise. The arrivals swing far more than a Poisson stream's, and the noise the
    readings allow grows with them: kept up (p99 TTFT 0.24 s), and the run says how large an
    overload it cannot tell."""
    rng = np.random.default_rng(0)
    times, t, high = [], 0.0, False
    while len(times) < 2000:
        d = rng.exponential(300.0)
        times += list(t + rng.uniform(0, d, rng.poisson((20 if high else 4) * d)))
        t, high = t + d, not high
    traffic = make_traffic(trace=_trace(tmp_path / "t.csv", np.array(times[:2000])))
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    result = simulate_deployment(setting, Deployment(1), traffic)
    assert result.stable and result.window.backlog.resolution > 1.1
    assert any("reads as kept up in a run this short" in n for n in result.notes)


def test_a_run_whose_longest_request_outlasts_half_its_arrivals_says_so():
    """Uncapped heavy-tailed outputs (lognormal, mean 500, sigma 1.5) at 6.25 req/s on one
    H100: 10,000 requests keep up, but the longest stays 1,045 s of 1,571 s of arrivals, so
    the long requests a steady run holds at once are not all there (over 100,000 requests the
    deployment serves 5.0 req/s, p99 TTFT 4,349 s): the run says so. Lognormal outputs of
    mean 200 and sigma 0.5 at 20 req/s (the longest 41 s of 500) say nothing."""
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    load = dict(gpus=1, input_lengths="lognormal:1000:0.6", requests=10000)
    heavy = ie.simulate_load(
        setting, arrival_rate_per_s=6.25, output_lengths="lognormal:500:1.5", **load
    )
    assert heavy.stable and any("its longest request stays 1,045 s" in n for n in heavy.notes)
    light = ie.simulate_load(
        setting, arrival_rate_per_s=20, output_lengths="lognormal:200:0.5", **load
    )
    assert light.stable and not any(n.startswith("only ") for n in light.notes)


def test_a_run_still_filling_its_engine_is_not_read_as_fallen_behind():
    """40 requests of 1,000 + 1,000 tokens at 4 req/s on one H100 arrive over 10 s, each served
    in about 11 s: at the last arrival most of the second half's are still in the system, as
    they would be at any load, and the served share cannot judge the run (it would read 1.9).
    The count test reads it: kept up, as 3,000 requests at that load are (p99 TTFT 0.1 s)."""
    setting = make_setting("Llama 3 8B", "H100", assumptions="achievable")
    traffic = make_traffic(4, "1000", "1000", requests=40, seed=1)
    short = simulate_deployment(setting, Deployment(1), traffic)
    assert short.stable and short.backlog_growth < 1.0 and short.overloaded_note is None
    long = simulate_deployment(setting, Deployment(1), dataclasses.replace(traffic, requests=3000))
    assert long.stable and long.ttft_s.p99 < 0.2


def test_saturated_engine_serves_at_its_own_pace(llama8b):
    """Past saturation the engine works through its queue at its own pace: throughput, token
    rates and $/Mtok are measured over the service window (§E4) and stay flat as the offered
    rate rises 100-fold. (Up to the last arrival they fell: 38.7, 0 and 0 req/s and 3,868, 626
    and 81 output tokens/s at 100, 1,000 and 10,000 req/s offered, $/Mtok 0.15, 0.93, 7.2.)"""
    traffic = make_traffic(100, "1000", "100", requests=1000, seed=0)
    runs = [
        simulate_deployment(llama8b, Deployment(1), dataclasses.replace(traffic, rate_per_s=rate))
        for rate in (100, 1000, 10000)
    ]
    base = runs[0]
    assert base.throughput_requests_per_s == pytest.approx(38.6, rel=0.02)  # 166 at a time
    for r in runs:
        assert not r.stable and r.meets_targets is None and r.busy_fraction > 0.99
        for name in (
            "throughput_requests_per_s",
            "output_tokens_per_s",
            "usd_per_m_output_tokens_all_in",
        ):
            assert getattr(r, name) == pytest.approx(getattr(base, name), rel=0.01), name
        # 100 tokens per answer; every request served is good when there are no targets
        assert r.output_tokens_per_s == pytest.approx(100 * r.throughput_requests_per_s, rel=0.01)
        assert r.goodput_requests_per_s == r.throughput_requests_per_s and r.goodput_fraction == 1
    # a target half the requests meet: goodput is its share of the throughput
    judged = base.with_targets(Targets(ttft_p99_s=base.ttft_s.p50))
    assert 0 < judged.goodput_fraction < 1 and judged.meets_targets is False
    assert judged.goodput_requests_per_s == pytest.approx(
        judged.goodput_fraction * judged.throughput_requests_per_s, rel=1e-12
    )


def test_no_targets_claim_nothing_and_stability_is_reported(llama8b, tmp_path):
    """Without targets a run neither meets nor misses them; whether it keeps up is ``stable``,
    the same for Poisson arrivals and for a trace of them."""
    calm = simulate_deployment(llama8b, Deployment(1), make_traffic(5, "500", "50", requests=200))
    assert calm.stable and calm.meets_targets is None and calm.row()["meets_targets"] is None
    assert calm.with_targets(Targets(ttft_p99_s=10.0)).meets_targets is True
    stream = make_traffic(200, "500", "50", requests=400, seed=0).stream()
    trace = tmp_path / "burst.csv"
    trace.write_text(
        "arrival_time_s,prompt_tokens,output_tokens\n"
        + "".join(f"{t:.6f},500,50\n" for t in stream.arrival_s)
    )
    for source in (("--rate", "200", "--prompt-tokens", "500", "--output-tokens", "50"),
                   ("--trace", str(trace))):  # fmt: skip
        code, out, err = _run(
            "simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--requests", "400", *source
        )
        assert code == 0 and "requests served" not in err  # a fast run prints no progress
        fields = dict(re.findall(r"^(\w+)  +(.*)$", out, flags=re.M))
        assert fields["stable"] == "no" and fields["meets_targets"] == "n/a (no targets)"


def test_progress_lines_are_throttled(monkeypatch):
    """``every_s``: nothing until that long has passed, then at most one line per period."""
    from inference_econ.cli import common

    clock = iter([0.0, 0.5, 1.9, 2.1, 3.0, 4.0, 4.2, 4.3])
    monkeypatch.setattr(common.time, "perf_counter", lambda: next(clock))
    lines = []
    monkeypatch.setattr(common.click, "echo", lambda text, err=False: lines.append(text))
    say = common.Progress(every_s=2.0)  # started at 0.0
    for i in range(7):
        say(f"step {i}")
    assert lines == ["[  2.1s] step 2", "[  4.2s] step 5"]


# --- inputs -----------------------------------------------------------------------------------------
def test_truncated_log_normal_keeps_its_mean_by_hand():
    """A log-normal of mu = 7, sigma = 0.5 truncated at its median e^7 has the mean
    exp(7 + 0.125) Phi(-0.5) / Phi(0) = 1242.65 x 0.308538 / 0.5 = 766.81 tokens: the mu that
    gives that mean under that cap is 7; with no cap it is ln(mean) - sigma^2/2."""
    from inference_econ.load.lengths import truncated_mu

    assert truncated_mu(766.81, 0.5, math.exp(7.0)) == pytest.approx(7.0, abs=1e-4)
    assert truncated_mu(1000.0, 0.5) == pytest.approx(math.log(1000.0) - 0.125, abs=1e-12)
    assert truncated_mu(1000.0, 0.5, 1e9) == truncated_mu(1000.0, 0.5)  # a cap too far out
    assert truncated_mu(1000.0, 0.5, 1000.0) == pytest.approx(math.log(1000.0))  # all at the cap


def test_lengths_parse_and_draw():
    rng = np.random.default_rng(0)
    assert parse_lengths("300").draw(rng, 3).tolist() == [300, 300, 300]
    u = parse_lengths("uniform:10:20").draw(rng, 5000)
    assert u.min() == 10 and u.max() == 20
    ln = parse_lengths("lognormal:1000:0.5").draw(rng, 200000)
    assert ln.mean() == pytest.approx(1000, rel=0.01)
    capped = parse_lengths("lognormal:1000:1.5:4000").draw(rng, 200000)
    assert capped.max() <= 4000 and capped.mean() == pytest.approx(1000, rel=0.01)  # mean kept
    assert parse_lengths("lognormal:1000:0.8:4096").describe() == (
        "log-normal (mean 1000 tokens, sigma 0.8, at most 4096)"
    )
    for bad in (
        "",
        "-5",
        "uniform:20:10",
        "lognormal:1000:0",
        "normal:5",
        "1e12",
        "12.5",
        "trace:3",
    ):
        with pytest.raises(SpecError):
            parse_lengths(bad)


def test_trace_file_is_validated(tmp_path):
    good = tmp_path / "t.csv"
    good.write_text(
        "arrival_time_s,prompt_tokens,output_tokens,user\n2.0,100,10,a\n0.5,200,20,b\n1.0,300,30,c\n"
    )
    tr = load_trace(good)
    assert tr.arrival_s.tolist() == [0.5, 1.0, 2.0] and tr.prompt_tokens.tolist() == [200, 300, 100]
    assert tr.rate_per_s == pytest.approx(2 / 1.5)
    replay = make_traffic(trace=good).stream()
    assert replay.arrival_s.tolist() == [0.0, 0.5, 1.5] and replay.output_tokens.tolist() == [
        20,
        30,
        10,
    ]
    doubled = make_traffic(rate_per_s=2 * tr.rate_per_s, trace=good).stream()
    assert doubled.arrival_s.tolist() == pytest.approx([0.0, 0.25, 0.75])
    # one of two instances served in turn: every second row, at the trace's own times
    turn = make_traffic(trace=good).stream(2, in_turn=True)
    assert turn.arrival_s.tolist() == [0.0, 1.5] and turn.prompt_tokens.tolist() == [200, 100]
    cases = {
        "arrival_time_s,prompt_tokens\n1,2\n2,3\n": "output_tokens",
        "arrival_time_s,prompt_tokens,output_tokens\n1,2,3\n-1,2,3\n": "line 3",
        "arrival_time_s,prompt_tokens,output_tokens\n1,2.5,3\n2,2,3\n": "prompt_tokens",
        "arrival_time_s,prompt_tokens,output_tokens\nx,2,3\n2,2,3\n": "expected a number",
        "arrival_time_s,prompt_tokens,output_tokens\n1,2,0\n2,2,3\n": "output_tokens",
        "arrival_time_s,prompt_tokens,output_tokens\n1,2,3\n": "at least 2",
    }
    for i, (text, needle) in enumerate(cases.items()):
        bad = tmp_path / f"bad{i}.csv"
        bad.write_text(text)
        with pytest.raises(SpecError, match=needle) as err:
            load_trace(bad)
        assert str(bad) in str(err.value)
    with pytest.raises(SpecError, match="no such file"):
        load_trace(tmp_path / "missing.csv")


def test_a_bad_trace_row_is_left_out_and_the_simulation_says_so(tmp_path):
    """One unreadable row (text, a ragged row) stopped the whole trace (exit 2): now each is
    reported on one line of stderr (file, line, field, fix), the other rows are simulated,
    and the result's notes say how many rows were left out, since that changes the load."""
    good = [f"{0.5 * i:g},{100 + 10 * i},{10 + i}" for i in range(8)]
    rows = [*good[:2], "1.0,abc,12", *good[2:5], "3.0,100,10,extra", *good[5:]]
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_time_s,prompt_tokens,output_tokens\n" + "\n".join(rows) + "\n")
    with pytest.warns(ie.InferenceEconWarning) as caught:
        tr = load_trace(trace)
    assert len(tr.arrival_s) == 8 and tr.prompt_tokens.tolist() == [100 + 10 * i for i in range(8)]
    assert tr.output_tokens.sum() == sum(10 + i for i in range(8))
    assert [r[0] for r in tr.left_out.reasons] == [4, 8]  # the header is line 1
    assert f"{trace}: line 4: field 'prompt_tokens': expected a number" in str(caught[0].message)
    code, out, err = _run(
        "simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--trace", str(trace),
        "--format", "json",
    )  # fmt: skip
    payload = json.loads(out)
    assert code == 0 and payload["rows"][0]["requests"] == 8  # 10 rows, 2 unreadable
    (note,) = [n for n in payload["notes"] if "left out" in n]
    assert note.startswith(f"2 of 10 trace rows of {trace} left out (unreadable): line 4: ")
    assert "line 8: has 4 cells for the header's 3 columns" in note
    warned = [x for x in err.splitlines() if "the row is left out" in x]
    assert warned == [
        f"warning: {trace}: line 4: field 'prompt_tokens': expected a number in tokens, got "
        "'abc' (expected a whole number >= 1 and <= 1e+07); the row is left out",
        f"warning: {trace}: line 8: has 4 cells for the header's 3 columns (quote cells that "
        "hold commas); the row is left out",
    ]
    # every row unreadable: one clear line, exit 2
    trace.write_text("arrival_time_s,prompt_tokens,output_tokens\n1,x,2\n2,3,-1\n")
    code, out, err = _run(
        "simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--trace", str(trace)
    )
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {trace}: line 2: field 'prompt_tokens': expected a number")
    assert "none of its 2 trace rows can be read" in err


def test_refusals(llama8b):
    with pytest.raises(InfeasibleError, match="no room"):
        build_instance(make_setting("Llama 3 70B", "H100"), 1)
    with pytest.raises(SpecError, match="arrival_rate_per_s"):
        make_traffic(None, "100", "10")
    with pytest.raises(SpecError, match="output_lengths"):
        make_traffic(1.0, "100", None)
    with pytest.raises(SpecError, match="trace"):
        make_traffic(1.0, "trace", "10")
    with pytest.raises(SpecError, match="slo_ttft_p99_s"):
        ie.capacity(llama8b, arrival_rate_per_s=1, input_lengths="100", output_lengths="10")
    with pytest.raises(SpecError, match="unknown setting"):
        ie.simulate_load(
            "Llama 3 8B",
            "H100",
            gpus=1,
            arrival_rate_per_s=1,
            input_lengths="100",
            output_lengths="10",
            slo_ttft=1,
        )


# --- the load search and capacity planning (§E6) -------------------------------------------------
@dataclasses.dataclass
class _Curve:
    """A made-up simulation whose p99 TTFT is 1 s per req/s."""

    rate_per_s: float
    targets: Targets = Targets()
    rejected: int = 0
    undecided: bool = False

    @property
    def p99(self):
        return {"ttft": self.rate_per_s, "tpot": math.nan, "e2e": self.rate_per_s}

    @property
    def meets_targets(self):
        return self.targets.met(self.p99)

    def with_targets(self, targets):
        return dataclasses.replace(self, targets=targets)


def test_knee_search_finds_the_boundary_of_a_monotone_curve():
    knee = find_knee(_Curve, Targets(ttft_p99_s=7.0), start=1.0)
    assert 7.0 * 0.98 < knee.max_rate_per_s <= 7.0
    assert [r.rate_per_s for r in knee.evaluated] == sorted(r.rate_per_s for r in knee.evaluated)
    none = find_knee(_Curve, Targets(ttft_p99_s=1e-6), start=1.0)
    assert none.max_rate_per_s == 0.0 and "even at" in none.reason


def test_a_load_no_rate_holds_is_refused_at_the_lightest_rate_its_table_shows(monkeypatch):
    """When no load meets the targets, max_load's table runs its curve from 15 % of the
    search's lightest run (1 / 256 req/s for a search started at 1: its curve reaches down
    to 0.000586 req/s); the reason had named the search's lightest run (0.0039 req/s), not the
    table's first row."""
    from inference_econ.optimise import load_search as ls

    targets = Targets(ttft_p99_s=1e-6)
    monkeypatch.setattr(ls, "knee_of", lambda *a, **k: find_knee(_Curve, targets, start=1.0))
    monkeypatch.setattr(ls, "probe_for", lambda *a, **k: _Curve)
    found = ls.max_load(None, None, make_traffic(1.0, "100", "10", requests=10), targets)
    rates = sorted(r.rate_per_s for r in (*found.knee.evaluated, *found.curve))
    lightest_searched = min(r.rate_per_s for r in found.knee.evaluated)
    assert found.max_rate_per_s == 0.0 and lightest_searched == pytest.approx(1 / 256)
    assert rates[0] == pytest.approx(0.15 / 256)
    assert found.knee.reason.startswith(f"even at {rates[0]:.3g} req/s: p99 TTFT 0.000586 s")


def test_tighter_targets_are_never_cheaper(llama8b):
    """Same traffic, nested targets: the cheapest deployment's cost never falls as targets
    tighten, and the most load an instance holds never rises."""
    traffic = make_traffic(40, "lognormal:1500:0.6", "lognormal:200:0.5", requests=300, seed=3)
    targets = [Targets(4.0, 0.08), Targets(0.5, 0.03), Targets(0.25, 0.02)]
    plans = [cheapest_deployment([llama8b], traffic, t, sizes=[1, 2]) for t in targets]
    costs = [p.result.usd_per_hour for p in plans]
    assert costs == sorted(costs) and costs[-1] > costs[0]
    knees = [
        knee_of("deployment", llama8b, Deployment(1), traffic, t, EngineConfig()).max_rate_per_s
        for t in targets
    ]
    assert knees == sorted(knees, reverse=True)
    for p in plans:
        assert p.result.meets_targets and p.max_rate_per_s >= 40 and p.load_headroom >= 0
        assert p.candidates["chosen"].sum() == 1


def test_capacity_reports_the_answer_and_every_candidate(llama8b):
    plan = ie.capacity(
        llama8b,
        arrival_rate_per_s=25,
        input_lengths="1000",
        output_lengths="150",
        slo_ttft_p99_s=1.0,
        slo_tpot_p99_s=0.03,
        requests=300,
        sizes=[1, 2],
    )
    s = plan.summary()
    assert s["gpus"] == plan.deployment.gpus and s["usd_per_m_output_tokens_all_in"] > 0
    assert {"ttft_headroom", "tpot_headroom", "load_headroom"} <= set(s.index)
    df = plan.to_dataframe()
    assert df["usd_per_hour"].is_monotonic_increasing
    with pytest.raises(InfeasibleError, match="no deployment meets"):
        ie.capacity(
            llama8b,
            arrival_rate_per_s=5,
            input_lengths="1000",
            output_lengths="10",
            slo_ttft_p99_s=1e-4,
            requests=200,
            sizes=[1],
        )


def test_simulate_runs_a_closed_loop_of_clients():
    """simulate --concurrency C: C clients, each sending its next request when its last one
    finishes (the load engine had them; simulate had no option). Little's law holds: the
    rate the clients reach is C over the mean end-to-end latency; over K instances each
    holds C/K requests at most. Refused with a rate or a trace, and by the searches."""
    # 400 requests: whole prompts (TensorRT-LLM's default, the load preset's engine) make the
    # window of a 100-request run too short for Little's law to hold within 1 %
    load = dict(input_lengths="1000", output_lengths="100", requests=400)
    one = ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, concurrency=8, **load)
    assert one.traffic.startswith("closed loop of 8 clients") and one.stable
    assert one.rate_per_s == pytest.approx(8 / one.e2e_s.mean, rel=0.01)
    assert 6 < one.mean_batch <= 8 and one.rate_per_s == one.throughput_requests_per_s
    two = ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, instances=2, concurrency=8, **load)
    assert 3 < two.mean_batch <= 4 and two.rate_per_s == pytest.approx(8 / two.e2e_s.mean, rel=0.01)
    with pytest.raises(SpecError, match="concurrency.*arrival rate or a trace"):
        ie.simulate_load(
            "Llama 3.1 8B", "H100", gpus=1, concurrency=8, arrival_rate_per_s=2, **load
        )
    with pytest.raises(SpecError, match="concurrency.*only simulate_load"):
        ie.capacity("Llama 3.1 8B", "H100", concurrency=8, slo_tpot_p99_s=0.1, **load)
    args = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--concurrency", "8"]
    args += ["--prompt-tokens", "1000", "--output-tokens", "100"]
    for extra, said in (
        (["--rate", "2"], "--concurrency: cannot be given with --rate"),
        (["--trace", str(EXAMPLES / "trace.csv")], "--concurrency: cannot be given with --trace"),
        (["--instances", "3"], "--concurrency: 8 clients do not spread evenly over 3 instances"),
    ):
        code, _, err = _run(*args, *extra)
        assert code == 2 and err.startswith(f"error: {said}") and err.count("\n") == 1, err


def test_capacity_skips_instance_sizes_the_weights_do_not_fit():
    """Under the engine profile (the load default), an instance size whose 16-bit weights
    leave no room for a KV cache (Llama 3.3 70B: 141 GB on one 80 GB H100) raised
    InfeasibleError for the whole plan; it is a candidate excluded with the reason."""
    plan = ie.capacity(
        "Llama 3.3 70B",
        "H100",
        arrival_rate_per_s=2,
        input_lengths="1000",
        output_lengths="100",
        slo_tpot_p99_s=0.1,
        requests=100,
        sizes=[1, 2],
    )
    assert plan.setting.assumptions.achievable and plan.deployment.gpus_per_instance == 2
    one = plan.candidates.set_index("gpus_per_instance").loc[1]
    assert one["excluded"] and not one["chosen"] and math.isnan(one["max_rate_per_instance"])
    assert "141.1 GB of weights) leaves no room for a KV cache on 1 x H100-SXM" in one["note"]


def test_excluded_candidates_are_marked_not_priced_at_infinity(llama8b):
    """A size that meets the targets at no load has no instance count, GPUs or price (blank,
    not 0 and inf); one that needs more than --max-gpus keeps its real figures. Both are
    marked excluded, listed last, with the reason."""
    from inference_econ.cli.capacity_commands import _plan_text

    said = []
    plan = ie.capacity(
        llama8b.replace(max_gpus=3),
        arrival_rate_per_s=5,
        input_lengths="1000",
        output_lengths="100",
        slo_tpot_p99_s=0.006,  # 1 GPU: 6.8 ms even alone; TP2: 4.6 ms at 5 req/s
        requests=100,
        sizes=[1, 2, 4],
        progress=said.append,
    )
    assert said[0] == "H100-SXM, deployment instances of 1 GPU: no load meets the targets"
    assert said[1].startswith(
        "H100-SXM, deployment instances of 2 GPUs: 17.05 req/s each -> 1 instance"
    )
    assert said[2].endswith("-> 1 instance (excluded)")
    assert Deployment(1, 3).describe() == "3 x 1 GPU" and plan.result.layout.startswith("2 GPUs:")
    assert Deployment(1, 51126977).describe() == "51,126,977 x 1 GPU"  # a count read at a glance
    df = plan.candidates.set_index("gpus_per_instance")
    assert df["excluded"].tolist() == [False, True, True] and df.index.tolist() == [2, 4, 1]
    assert df.loc[2, "chosen"] and df.loc[2, "usd_per_hour"] == pytest.approx(4.2)
    assert df.loc[4, "usd_per_hour"] == pytest.approx(8.4) and df.loc[4, "gpus"] == 4
    assert "needs 4 GPUs > --max-gpus 3" in df.loc[4, "note"]
    assert df.loc[1, ["instances", "gpus"]].isna().all() and math.isnan(df.loc[1, "usd_per_hour"])
    text = _plan_text(plan, "table")
    assert "inf" not in text.split("Every candidate")[1]
    assert "H100-SXM x1 (deployment): excluded, even at" in text
    assert text.count("p99 values are rough") == 1
    rows = __import__("json").loads(_plan_text(plan, "json"))["rows"]
    assert rows[2]["usd_per_hour"] is None and rows[2]["instances"] is None


def test_max_load_and_its_figure(llama8b):
    ml = ie.max_load(
        llama8b,
        gpus=1,
        input_lengths="1000",
        output_lengths="100",
        slo_tpot_p99_s=0.02,
        requests=300,
        curve_points=3,
    )
    at = ml.at_max
    assert at.meets_targets and at.tpot_s.p99 <= 0.02
    df = ml.to_dataframe()
    assert (
        df["knee"].sum() == 1
        and not df[df.rate_per_s > ml.max_rate_per_s * 1.02]["meets_targets"].all()
    )
    fig = ie.latency_load_figure(ml, offered_rate_per_s=ml.max_rate_per_s / 2)
    axes = fig.axes
    assert len(axes) == 2
    tpot_ax = axes[1]
    hlines = [
        ln.get_ydata()[0]
        for ln in tpot_ax.get_lines()
        if len(set(ln.get_xdata())) == 1 or ln.get_linestyle() == "--"
    ]
    assert any(abs(y - 20.0) < 1e-9 for y in hlines)  # the 20 ms target line
    # p90 and p99 differ in colour and marker, not only in dashes a short handle hides
    handles, labels = tpot_ax.get_legend_handles_labels()
    style = {lab: (h.get_color(), h.get_marker()) for h, lab in zip(handles, labels)}
    assert len({style["p50"], style["p90"], style["p99"]}) == 3
    assert len({style[p][0] for p in ("p50", "p90", "p99")}) == 3
    assert "target: p99 ≤ 20 ms" in labels
    vlines = [
        ln.get_xdata()[0]
        for ln in tpot_ax.get_lines()
        if len(set(np.atleast_1d(ln.get_xdata()))) == 1
    ]
    assert any(abs(x - ml.max_rate_per_s) < 1e-9 for x in vlines)  # the knee
    # the engine chooses each load's layout: where the sweep ran two, each is its own curve
    # (a line through both showed one layout's latencies at loads the other was measured at)
    high = {r.rate_per_s for r in ml.curve if r.rate_per_s > ml.max_rate_per_s}
    relabel = lambda r: dataclasses.replace(r, layout="B") if r.rate_per_s in high else r  # noqa: E731
    mixed = dataclasses.replace(
        ml,
        knee=dataclasses.replace(ml.knee, evaluated=tuple(map(relabel, ml.knee.evaluated))),
        curve=tuple(map(relabel, ml.curve)),
    )
    rates = mixed.to_dataframe().groupby("layout")["rate_per_s"].apply(set).to_dict()
    assert len(rates) == 2 and rates["B"] == high
    fig = ie.latency_load_figure(mixed)
    ax = fig.axes[1]
    # each percentile once in a panel's legend, each layout once in the figure's, not 3 x 2
    panel = [text.get_text() for text in ax.get_legend().get_texts()]
    assert [lab for lab in panel if lab.startswith("p") and "interval" not in lab] == [
        "p50",
        "p90",
        "p99",
    ]
    assert sorted(text.get_text() for text in fig.legends[0].get_texts()) == sorted(rates)
    drawn = {
        lab: set(ln.get_xdata())
        for ln, lab in zip(*ax.get_legend_handles_labels())
        if lab.startswith("p")
    }
    (first,) = (name for name in rates if name != "B")
    assert drawn == {f"{p}, {name}": rates[name] for p in ("p50", "p90", "p99") for name in rates}
    assert drawn[f"p99, {first}"] and first == at.layout


def test_disaggregated_deployment(llama8b):
    t = make_traffic(10, "2000", "200", requests=500, seed=0)
    r = simulate_deployment(llama8b, Deployment(1, 1, 1, 1), t, Targets(1.0, 0.05))
    assert r.gpus == 2 and r.prefill_instances == 1 and "prefill" in r.layout
    pre = prefill(llama8b, 1, 2000).latency_s
    assert r.ttft_s.p50 >= pre * (1 - 1e-9)
    co = simulate_deployment(llama8b, Deployment(1, 2), t, Targets(1.0, 0.05))
    assert r.tpot_s.p50 < co.tpot_s.p50  # decode steps are never stalled by prompts
    assert r.usd_per_hour == co.usd_per_hour


def test_a_prefill_pool_behind_a_router_queues_less_than_random_shares(llama8b):
    """A prefill pool of four instances: with ``--router least_outstanding`` each prompt goes
    to the instance with the fewest outstanding (simulated together, §E10), which at the same
    load waits less than four random shares (join-the-shortest-queue); the default is the
    random split, and the result says which."""
    t = make_traffic(30, "lognormal:3000:0.8", "lognormal:200:0.6", requests=800, seed=0)
    d = Deployment(1, 2, 1, 4)
    rand = simulate_deployment(llama8b, d, t)
    jsq = simulate_deployment(llama8b, d, t, config=EngineConfig(router="least_outstanding"))
    assert rand.router == "random" and jsq.router == "least_outstanding"
    assert jsq.ttft_s.p99 < 0.8 * rand.ttft_s.p99 and jsq.ttft_s.mean < rand.ttft_s.mean
    assert abs(jsq.tpot_s.p50 / rand.tpot_s.p50 - 1.0) < 0.1  # the decode side alike


def test_a_prefill_pool_is_run_as_far_as_a_decode_instance_takes_its_first_tokens(
    llama8b, monkeypatch
):
    """A group of four prefill instances behind ``least_outstanding`` receives four times a
    decode instance's requests, whose first tokens are those of the group's first prompts: the
    pool run only as far as those need (``taken_only``, as a measured row's replay runs it)
    gives exactly the whole run's first tokens and hand-over, over fewer prompts. Near the
    pool's capacity prompts that arrive after the 800th share its last steps, so a run cut at
    the 800th moves four of their first tokens: with no margin the rule runs 800 prompts, then
    the 864 that arrive by the last first token it needs, then the 867 that arrive by that
    one's, where the first prompt left out arrives after it."""
    from inference_econ.load import run

    t = make_traffic(65, "lognormal:2500:0.3", "200", requests=800, seed=0)
    pre = build_instance(llama8b, 1)
    args = (pre, llama8b, llama8b, 1, t, 4, 2, "least_outstanding")
    whole = run.prefill_handoff(*args)
    monkeypatch.setattr(run, "POOL_RUN_FLOOR", 0)
    monkeypatch.setattr(run, "POOL_RUN_MARGIN", 0.0)
    taken = run.prefill_handoff(*args, taken_only=True)
    assert len(whole.prefill_run.first_token_s) == 3200 and len(whole.stream.arrival_s) == 800
    assert len(taken.prefill_run.first_token_s) == 867
    assert np.array_equal(taken.ttft_s, whole.ttft_s) and np.isfinite(whole.ttft_s).all()
    assert np.array_equal(taken.order, whole.order)
    assert np.array_equal(taken.handed.arrival_s, whole.handed.arrival_s)
    # prompts out of the order they arrive: the cut cannot be read, so the whole stream runs
    ps = t.stream(4, 4)
    backwards = Arrivals(ps.arrival_s[::-1], ps.prompt_tokens[::-1], ps.output_tokens[::-1])
    routed = run.Run(t, 4, 4, "least_outstanding")
    assert len(run._pool_run(pre, routed, backwards, 800).first_token_s) == 3200


def test_summarise_is_what_the_result_reports(llama8b):
    inst = build_instance(llama8b, 1)
    t = make_traffic(5, "100", "10", requests=200, seed=0)
    rec = simulate(inst, t.stream())
    r = summarise(inst, rec, t, Targets(), instances=1)
    assert (
        r.completed == 200
        and r.rejected == 0
        and r.to_dataframe().iloc[0]["layout"] == inst.layout.describe()
    )


def test_rates_are_the_offered_loads_only_where_a_run_keeps_up_with_one():
    """One rule says whose rates a run states (``offered_rates``), and the intervals follow it:
    Poisson arrivals at 2 req/s that one H100 keeps up with state the offered load's rates
    (2 req/s exactly, no interval); the same requests all queued at once (a decode pool's
    handover, ``Run.requests``) and an overloaded rate state what the window served, each
    with its 80 % and 90 % interval."""
    from inference_econ.load import run
    from inference_econ.serving.intervals import LOAD_RATES, load_intervals

    setting = make_setting("Llama 3 8B", "H100", assumptions="achievable")
    inst = build_instance(setting, 1)
    t = make_traffic(2, "300", "50", requests=200, seed=0)
    kept = run.serve(inst, run.Run(t, 1)).result
    assert kept.stable and kept.offered_rates and kept.throughput_requests_per_s == 2.0
    assert not set(LOAD_RATES) & {k.rsplit("_", 1)[0] for k in load_intervals(kept)}
    burst = t.stream()
    burst = Arrivals(np.zeros(len(burst.arrival_s)), burst.prompt_tokens, burst.output_tokens)
    queued = run.serve(inst, run.Run(t, 1, requests=burst)).result
    over = run.serve(inst, run.Run(make_traffic(400, "300", "50", requests=400, seed=0), 1))
    for result in (queued, over.result):
        assert not result.offered_rates and result.throughput_requests_per_s != 2.0
        assert "throughput_requests_per_s_low80" in load_intervals(result)
    assert not over.result.stable


def test_a_request_holds_its_whole_length_where_the_engine_reserves_it():
    """The batch a layout is chosen at counts what each request holds (§E6): 1,000-token
    prompts and outputs at a mean context of 1,500 tokens on Llama 3 8B's 32 layers: 32 x
    2,000 layer-positions under TensorRT-LLM's no-evict admission, which reserves the whole
    request; 32 x 1,500 where the cache holds the context alone (recompute admission), and
    where the load states no lengths of its own (``SATURATED``)."""
    from inference_econ.load import engine, layout_choice

    setting = make_setting("Llama 3 8B", "H100", assumptions="achievable")
    trtllm = engine.engine_config(engine.EngineConfig(engine_own=engine.ENGINE_OWN), setting)
    model = engine.layout_search(setting, 1).model
    load = layout_choice.OfferedLoad(5.0, 1000.0, 1000.0)
    held = layout_choice.held_per_request
    assert trtllm.admission == "no_evict"
    assert held(model, trtllm, 1500.0, load) == 32 * 2000
    assert held(model, engine.DEFAULT_ENGINE, 1500.0, load) == 32 * 1500
    assert held(model, trtllm, 1500.0, layout_choice.SATURATED) == 32 * 1500


def test_attention_ranks_prompts_are_charged_as_their_own_chunks():
    """DeepSeek-R1 (FP8) on 8 B200 under TensorRT-LLM, 1,000-token prompts and outputs: its
    8 attention ranks each prefill their own prompts, so the chosen layout's step charges
    prompts of 1,000 tokens, not one causal chunk of the ranks' whole 65,536-token budget
    (which made the layout look overloaded at 10 req/s and lose to tensor-parallel
    attention at every rate). Tensor-parallel attention is faster at 10 req/s, data-parallel
    attention from 14 req/s, where the former falls behind."""
    from inference_econ.load import engine
    from inference_econ.load.deployment import budget_sized
    from inference_econ.load.layout_choice import OfferedLoad

    setting = make_setting("DeepSeek-R1", "B200", assumptions="achievable", weight_bits=8)
    config = engine.engine_config(engine.EngineConfig(engine_own=engine.ENGINE_OWN), setting)
    search = engine.layout_search(budget_sized(setting, config), 8)
    chosen = [
        search.choose(config, 1448.15, OfferedLoad(rate, 1000.0, 1000.0))
        for rate in (10.0, 14.0, 20.0)
    ]
    assert [layout.attention_divisor for layout in chosen] == [1.0, 8.0, 8.0]


def test_the_kernel_clocks_layout_choice_reads_the_step_tables_its_instances_run_on():
    """Under the kernel clock the layout estimate reads each layout's step table (§E6), the
    one its instance then runs on: DeepSeek-R1 (FP8) on 8 B200 under TensorRT-LLM at
    1,000/1,000 takes tensor-parallel attention at 10 req/s and DEP8 from 12 req/s, where the
    kernel clock's TP8 falls behind (the engine clock's estimate had kept TP8 to 16 req/s)."""
    from inference_econ.load import engine
    from inference_econ.load.deployment import budget_sized
    from inference_econ.load.layout_choice import OfferedLoad
    from inference_econ.model.assumptions import ACHIEVABLE

    kernels = ACHIEVABLE.replace(kernel_tables=True)
    setting = make_setting("DeepSeek-R1", "B200", assumptions=kernels, weight_bits=8)
    config = engine.EngineConfig(engine_own=engine.ENGINE_OWN)
    setting = budget_sized(setting, engine.engine_config(config, setting))
    search = engine.layout_search(setting, 8)
    chosen = [search.choose(config, 1448.15, OfferedLoad(r, 1e3, 1e3)) for r in (10.0, 12.0, 16.0)]
    assert [layout.attention_divisor for layout in chosen] == [1.0, 8.0, 8.0]
    load = OfferedLoad(16.0, 1e3, 1e3)
    inst = engine.build_instance(setting, 8, config, 1448.15, load=load, search=search)
    kept = (inst.layout, engine.table_tokens(inst.config, inst.layout), 1e3)
    assert inst.layout == chosen[-1] and kept in search.tables  # the table the choice read


def test_the_bound_beside_a_plan_holds_the_profiles_batch_on_every_rank():
    """The ideal engine's scheduler beside an engine profile's plan: TensorRT-LLM's 2,048
    requests a rank on each of 8 GPUs (16,384; the ideal engine's own 256 had held DeepSeek-R1
    on DEP8 below the engine it bounds), a cap the user gave on each of the ranks where the
    profile's limits hold per rank (TensorRT-LLM's) and kept where they hold per instance
    (SGLang's), no profile no change."""
    from inference_econ.load import engine

    trtllm = make_setting("DeepSeek-R1", "B200", assumptions="achievable", weight_bits=8)
    config = engine.EngineConfig(engine_own=engine.ENGINE_OWN)
    assert engine.bound_config(config, trtllm, 8).max_batch_requests == 2048 * 8
    given = engine.EngineConfig(max_batch_requests=64)
    assert engine.bound_config(given, trtllm, 8).max_batch_requests == 64 * 8
    sglang = make_setting(
        "DeepSeek-R1", "B200", assumptions="achievable", engine="sglang", weight_bits=8
    )
    assert engine.bound_config(given, sglang, 8).max_batch_requests == 64
    refined = make_setting("DeepSeek-R1", "B200", weight_bits=8)
    assert engine.bound_config(config, refined, 8) == config


# --- the command line -----------------------------------------------------------------------------
def _run(*args):
    from click.testing import CliRunner

    from inference_econ.cli import main

    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


LOAD = ("--prompt-tokens", "1000", "--output-tokens", "100", "--requests", "200")


def test_cli_simulate_and_capacity(tmp_path):
    code, out, _ = _run(
        "simulate",
        "Llama 3 8B",
        "-H",
        "H100",
        "--gpus",
        "1",
        "--rate",
        "5",
        *LOAD,
        "--slo-ttft-p99",
        "1",
    )
    assert code == 0 and "ttft_p99_ms" in out and "usd_per_m_output_tokens" in out
    assert out.startswith("Expected figures: achievable preset, engine profile trtllm")
    assert "Assumptions: achievable preset, engine trtllm" in out
    code, out, _ = _run(
        "capacity",
        "Llama 3 8B",
        "-H",
        "H100",
        "--rate",
        "30",
        *LOAD,
        "--slo-ttft-p99",
        "1",
        "--slo-tpot-p99",
        "0.03",
        "--max-gpus",
        "2",
        "--format",
        "csv",
    )
    header = next(line for line in out.splitlines() if not line.startswith("#"))
    assert code == 0 and header.startswith("hardware,pool,gpus_per_instance")
    figure = tmp_path / "load.png"
    from inference_econ.output.files import write_atomic

    # an earlier output (the tool's own: a user's file is refused) is replaced, not an input
    write_atomic(figure, b"an earlier figure")
    code, out, _ = _run(
        "capacity",
        "Llama 3 8B",
        "-H",
        "H100",
        "--gpus",
        "1",
        *LOAD,
        "--slo-tpot-p99",
        "0.02",
        "--figure",
        str(figure),
    )
    assert (
        code == 0 and "holds" in out and "output tokens/s" in out and figure.stat().st_size > 10000
    )


def test_the_most_load_says_which_loads_miss_by_falling_behind():
    """With a TTFT limit of ten minutes every p99 of a short run is within it, so the loads
    above the most a GPU holds miss by falling behind alone: the table's "no" is explained."""
    from inference_econ.cli.capacity_commands import _max_load_text

    result = ie.max_load(
        "Llama 3 8B", "H100", gpus=1, input_lengths="500", output_lengths="50",
        slo_ttft_p99_s=600, requests=200,
    )  # fmt: skip
    runs = [*result.knee.evaluated, *result.curve]
    behind = sorted({r.rate_per_s for r in runs if not r.stable})
    assert behind and all(r.targets.met(r.p99) for r in runs)  # no p99 says why
    assert min(behind) > result.max_rate_per_s
    note = next(t for t in _max_load_text(result, "table").splitlines() if "falling behind" in t)
    assert note.startswith(f"At {', '.join(f'{x:.3g}' for x in behind)} req/s the runs miss")


def test_a_tpot_limit_that_reads_as_milliseconds_is_warned_of_and_kept():
    """'--slo-tpot-p99 50' is 50 s a token: kept as given (a run meets it), with a warning
    that names the reading the user more likely meant; 2 s is not warned of."""
    load = dict(gpus=1, arrival_rate_per_s=2.0, input_lengths="500", output_lengths="50")
    with pytest.warns(ie.InferenceEconWarning, match=r"did you mean 0\.05, 50 ms\?"):
        run = ie.simulate_load("Llama 3 8B", "H100", **load, requests=100, slo_tpot_p99_s=50)
    assert run.targets.tpot_p99_s == 50 and run.meets_targets
    assert ie.Targets(tpot_p99_s=2.0).implausible() == ""
    assert ie.Targets(tpot_p99_s=math.inf).implausible() == ""


def test_a_ttft_limit_that_reads_as_milliseconds_is_warned_of_and_kept():
    """'--slo-ttft-p99 2000' is 2000 s: capacity had said nothing and simulate had warned of
    the TPOT limit alone. Over ten minutes it is warned of beside the TPOT limit, kept as
    given; ten minutes itself (a deliberately loose limit) is not."""
    load = ["--rate", "2", "--prompt-tokens", "500", "--output-tokens", "50", "--requests", "100"]
    code, _, err = _run("capacity", "Llama 3 8B", "-H", "H100", *load, "--slo-ttft-p99", "2000")
    said = (
        "warning: the p99 TTFT limit (--slo-ttft-p99, slo_ttft_p99_s) is 2000 s, over 600 s: "
        "limits are seconds (did you mean 2, 2000 ms?)\n"
    )
    assert code == 0 and err.count("warning:") == 1 and said in err
    both = ie.Targets(ttft_p99_s=2000, tpot_p99_s=50).implausible()
    assert "did you mean 2, 2000 ms?" in both and "did you mean 0.05, 50 ms?" in both
    assert ie.Targets(ttft_p99_s=600, e2e_p99_s=1e5).implausible() == ""
    assert ie.Targets(ttft_p99_s=math.inf).implausible() == ""


def test_a_frontier_under_load_of_one_deployment_says_so_in_the_singular():
    """ "1 deployments on the frontier": one instance of one GPU meets a 20 ms TPOT."""
    code, out, _ = _run("frontier", "Llama 3 8B", "-H", "H100", "--rate", "2", "--prompt-tokens",
                        "500", "--output-tokens", "50", "--requests", "100", "--slo-tpot-p99",
                        "0.02", "--max-gpus", "1", "-q")  # fmt: skip
    title = out.splitlines()[1]
    assert code == 0 and title.startswith("1 deployment on the frontier for 2 req/s within")


def test_cli_frontier_under_load():
    code, out, _ = _run(
        "frontier",
        "Llama 3 8B",
        "-H",
        "H100",
        "--rate",
        "20",
        *LOAD,
        "--slo-ttft-p99",
        "1",
        "--slo-tpot-p99",
        "0.03",
        "--max-gpus",
        "2",
        "--format",
        "csv",
    )
    assert code == 0
    df = __import__("pandas").read_csv(__import__("io").StringIO(out), comment="#")
    assert len(df) >= 2 and (df["tpot_p99_s"] <= 0.03).all() and (df["ttft_p99_s"] <= 1).all()
    assert (
        df["tokens_per_s"].is_monotonic_increasing
        and df["usd_per_m_output_tokens_all_in"].is_monotonic_increasing
    )


def test_cli_bad_input_and_infeasible(tmp_path):
    for args, needle in [
        (("--prompt-tokens", "lognormal:abc:1"), "--prompt-tokens"),
        (("--prompt-tokens", "100", "--trace", str(tmp_path / "none.csv")), "no such file"),
        (("--prompt-tokens", "100", "--rate", "-1"), "--rate"),
        (("--prompt-tokens", "100", "--slo-tpot-p99", "0"), "--slo-tpot-p99"),
    ]:
        code, _, err = _run(
            "simulate",
            "Llama 3 8B",
            "-H",
            "H100",
            "--gpus",
            "1",
            "--rate",
            "1",
            "--output-tokens",
            "10",
            *args,
        )
        assert (
            code == 2
            and needle in err
            and "Traceback" not in err
            and len(err.strip().splitlines()) == 1
        )
    code, _, err = _run(
        "capacity",
        "Llama 3 8B",
        "-H",
        "H100",
        "--rate",
        "1",
        *LOAD,
        "--slo-ttft-p99",
        "0.0001",
        "--max-gpus",
        "1",
    )
    assert code == 1 and "no deployment meets" in err


def test_mlperf_server_h100_is_below_the_bound():
    """MLPerf v4.1 Server, Llama 2 70B on 8 H100s: the median measured throughput is below the
    ideal prediction (4 instances of 2 GPUs), and not far below it (docs/validation.md)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "mlperf_server.py"
    spec = importlib.util.spec_from_file_location("mlperf_server", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    rows = m.measured()
    h100 = rows[(rows["gpu"] == "H100-SXM") & (rows["n_gpus"] == 8)]
    assert len(h100) == 10 and rows["gpu"].isna().sum() == 0  # every system in the catalog
    setting = make_setting(
        "Llama 2 70B", "H100", weight_bits=8, kv_cache_bits=8, assumptions="refined"
    )
    # 5,000 requests: a run of 1,000 cannot tell a slow overload from a steady queue, and its
    # knee sits 10-12 % higher (43,982 output tokens/s against 38,987)
    traffic = make_traffic(1.0, m.INPUT, m.OUTPUT, requests=5000, seed=0)
    knee = knee_of(
        "deployment", setting, Deployment(2), traffic, Targets(*m.MLPERF_SERVER), m.ENGINE
    )
    predicted = 4 * knee.at_max.output_tokens_per_s
    # 49 % of the bound: its FP8 GEMMs run at the best measured FP8 GEMM's 1,633 TFLOPS
    # (vLLM 0.19.0's, §B15; 55 % at 0.7 of the datasheet's 1,979)
    assert 0.45 * predicted < h100["measured"].median() < 0.55 * predicted


# --- the layout is chosen for the load (§E7) --------------------------------------------------
def test_the_layout_chosen_is_the_fastest_at_the_simulated_load():
    """On 4 H200s (Llama 3 70B, 8-bit) the layout fastest at the largest batch (attention TP1)
    is about 1.5x slower at the batches the engine runs; the layout chosen for the load has the
    lowest simulated mean TPOT of every candidate it chooses from at light, middling and heavy
    load, and a larger batch limit does not change it. Its weights fit on 2 of the GPUs, so the
    candidates are the 6 layouts that do not pipeline (copies of a smaller instance would)."""
    from inference_econ.load.deployment import (
        _search,
        offered_load,
        reference_context,
    )

    s = make_setting("Llama 3 70B", "H200", weight_bits=8)
    search = _search(s, 4)
    assert len(search.options) == 11
    assert search.chosen_from == tuple(lay for lay in search.options if lay.pipeline == 1)
    assert len(search.chosen_from) == 6
    mean_tpot = {}
    for rate in (6, 12, 16):
        traffic = make_traffic(rate, "lognormal:1000:0.8", "lognormal:300:0.6", requests=400)
        ctx, load = reference_context(traffic), offered_load(traffic, 1)
        chosen = search.choose(EngineConfig(), ctx, load)
        assert search.choose(EngineConfig(max_batch_requests=200), ctx, load) == chosen
        for lay in search.chosen_from:
            inst = build_instance(s, 4, EngineConfig(), ctx, lay, search=search)
            run = summarise(inst, simulate(inst, traffic.stream()), traffic, Targets())
            mean_tpot[rate, lay] = run.tpot_s.mean
        best = min(mean_tpot[rate, lay] for lay in search.chosen_from)
        assert mean_tpot[rate, chosen] == pytest.approx(best, rel=1e-12)
    dp_attention = EngineLayout(4, 1, 4.0, False)  # the layout chosen before at batch 256
    assert mean_tpot[12, dp_attention] / mean_tpot[12, EngineLayout(4, 1, 1.0, False)] > 1.4


def test_a_larger_batch_limit_or_a_faster_gpu_holds_no_less():
    """capacity --gpus 4 (short runs): H200 with --max-batch 256 held 29 % less than with 200
    and less than H100 when the layout was chosen at the largest batch."""
    kw = dict(
        input_lengths="lognormal:1000:0.8",
        output_lengths="lognormal:300:0.6",
        slo_ttft_p99_s=2,
        slo_tpot_p99_s=0.05,
        requests=300,
        weight_bits=8,
        curve_points=0,
    )
    held = {
        (gpu, mb): ie.max_load("Llama 3 70B", gpu, gpus=4, max_batch_requests=mb, **kw)
        for gpu, mb in (("H200", 256), ("H200", 200), ("H100", 256))
    }
    rate = {k: m.max_rate_per_s for k, m in held.items()}
    assert rate["H200", 256] >= 0.99 * rate["H200", 200]  # the search's resolution
    assert rate["H200", 256] >= rate["H100", 256] > 5
    assert "attention TP1" not in held["H200", 256].at_max.layout


# --- refusals, warnings and what load outputs state --------------------------------------------
def test_load_work_too_large_is_refused_up_front_with_its_estimate():
    """A capacity search over 10 million requests per simulation would run for hours: refused
    before it starts with the estimate and the largest request count that would do."""
    from inference_econ.optimise.load_search import check_budget

    with pytest.raises(SpecError) as err:
        ie.capacity(
            "Llama 3 8B",
            "H100",
            arrival_rate_per_s=5,
            input_lengths="1000",
            output_lengths="200",
            requests=10_000_000,
            slo_tpot_p99_s=0.05,
        )
    text = str(err.value)
    # 4 sizes x 20 + 1, twice: the expected plan and the ideal bound beside it
    assert "10,000,000 requests about 162 times: about 48,600 s" in text
    assert "use requests <= 123,456" in text
    traffic = make_traffic(5, "1000", "200", requests=10_000)
    check_budget(traffic, 81, "the capacity search")  # the default passes (about 24 s)
    check_budget(make_traffic(5, "1000", "200", requests=1_000_000), 1, "simulate")


def test_simulate_where_no_request_fits_exits_1_and_a_partial_rejection_is_stated():
    code, out, err = _run(
        "simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "5",
        "--prompt-tokens", "1e6", "--output-tokens", "200", "--requests", "20",
    )  # fmt: skip
    lines = [x for x in err.splitlines() if not x.startswith("warning: a context")]
    assert code == 1 and out == "" and len(lines) == 1
    assert lines[0].startswith("error: no request fits in one instance's KV cache: all 20")
    code, out, err = _run(
        "simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "1",
        "--prompt-tokens", "lognormal:100000:1.5", "--output-tokens", "20", "--requests", "20",
    )  # fmt: skip
    fields = dict(re.findall(r"^(\w+)  +(.*)$", out, flags=re.M))
    assert code == 0 and 0 < int(fields["rejected"].split()[0]) < 20
    assert f"{fields['rejected'].split()[0]} of 20 requests never fit in the KV cache" in out


def test_a_burst_trace_has_no_rate_and_never_prints_inf(tmp_path):
    trace = tmp_path / "burst.csv"
    trace.write_text("arrival_time_s,prompt_tokens,output_tokens\n" + "0,500,50\n" * 30)
    base = ("simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--trace", str(trace))
    code, out, _ = _run(*base)
    fields = dict(re.findall(r"^(\w+)  +(.*)$", out, flags=re.M))
    assert code == 0 and "inf" not in out.lower() and "all at once" in out.splitlines()[1]
    assert "rate_per_s" not in fields or fields["rate_per_s"] in ("", "nan")
    assert "every request arrives at once" in out
    code, out, _ = _run(*base, "--format", "json")
    import json

    payload = json.loads(out)
    assert (
        payload["rows"][0]["rate_per_s"] is None
        and float(payload["rows"][0]["throughput_requests_per_s"]) > 0
    )
    code, out, _ = _run(*base, "--format", "csv")
    assert "inf" not in out.lower()


def test_overload_is_a_warning_and_a_note_in_every_format():
    args = ("simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "200")
    args += ("--prompt-tokens", "500", "--output-tokens", "50", "--requests", "400")
    code, out, err = _run(*args)
    assert code == 0 and err.count("warning: the load outgrows the deployment") == 1
    assert "one instance serves every request" in out and "Poisson stream" not in out
    code, out, _ = _run(*args, "--format", "csv")
    assert "\n# the load outgrows the deployment: over the second half of the arrivals" in out
    code, out, _ = _run(*args, "--format", "json")
    import json

    assert any(n.startswith("the load outgrows") for n in json.loads(out)["notes"])
    code, out, _ = _run(*args[:-5], "5", *args[-4:], "--instances", "2")
    assert "share the load at random (each sees a Poisson stream" in out
    code, out, _ = _run(*args[:-5], "5", *args[-4:], "--instances", "2", "--router", "round_robin")
    assert "each sees one in 2 of the Poisson stream's requests, one simulated for all" in out


def test_load_outputs_state_bits_files_seed_and_the_frontier_cap():
    load = ("--prompt-tokens", "500", "--output-tokens", "50", "--requests", "100")
    code, out, _ = _run(
        "simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "5", "--weight-bits",
        "8", "--seed", "3", *load, "--format", "csv",
    )  # fmt: skip
    first = out.splitlines()[0]
    assert code == 0 and "(models/llama-3-8b.yaml) on H100-SXM (hardware/h100_sxm.yaml)" in first
    assert "8-bit weights, 16-bit activations, 16-bit KV cache" in first and "seed 3" in first
    code, out, _ = _run(
        "frontier", "Llama 3 8B", "-H", "H100", "--rate", "5", "--slo-tpot-p99", "0.05",
        "--max-gpus", "1", *load,
    )  # fmt: skip
    last = out.splitlines()[-1]
    assert code == 0 and last.startswith("Computed with: Llama 3 8B (models/llama-3-8b.yaml)")
    assert "at most 1 GPU;" in last and "requests_per_instance 100" in last


def test_disagg_says_one_gpu():
    code, out, _ = _run(
        "disagg", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--batch", "8",
        "--output-tokens", "200", "--prompt-tokens", "1000",
    )  # fmt: skip
    assert code == 0 and "decode on 1 GPU at batch 8; prefill pool 1 GPU, 17 prompts" in out
    assert "1 GPUs" not in out


def test_a_search_refuses_runs_too_short_for_a_p99():
    """10 requests never fill an engine: every rate looked held (54,528 req/s was once printed
    on one H100). A search needs 100 requests a run; simulating one deployment does not."""
    base = ("Llama 3 8B", "-H", "H100", "--prompt-tokens", "100", "--output-tokens", "100")
    code, _, err = _run(
        "capacity", *base, "--rate", "4", "--slo-tpot-p99", "0.05", "--requests", "10"
    )
    assert code == 2 and "--requests" in err and "at least 100" in err
    with pytest.raises(ie.SpecError, match="at least 100"):
        ie.max_load("Llama 3 8B", "H100", gpus=1, input_lengths="100", output_lengths="100",
                    slo_tpot_p99_s=0.05, requests=99)  # fmt: skip


def test_a_prompt_that_fills_the_cache_to_its_last_position_is_served(llama8b):
    """A one-token answer whose prompt fills the KV cache exactly fits at its peak, so it is
    not rejected; an empty engine must take it (a prefill pool under the ideal bound waited
    forever for room for a next token it never needs)."""
    inst = build_instance(llama8b, 1, EngineConfig(max_batch_requests=4), 1000)
    layers = float(inst.positions(1))
    prompt = int(inst.kv_capacity // layers)  # positions(prompt) <= cap < positions(prompt + 1)
    assert inst.positions(prompt) <= inst.kv_capacity < inst.positions(prompt + 1)
    one = np.ones(3, dtype=np.int64)
    record = simulate(inst, Arrivals(np.array([0.0, 0.1, 0.2]), prompt * one, one))
    assert np.isfinite(record.first_token_s).all()  # all three served, one after another
    assert np.all(np.diff(record.first_token_s) > 0)


def test_load_commands_run_the_engine_profiles_own_scheduler():
    """simulate and capacity run one engine model with compare-measured's replay: under an
    engine profile an instance takes the engine's own limits on its GPU (TensorRT-LLM: 2,048
    requests, 8,192 tokens per step, no eviction, whole prompts; vLLM V1 on an H100: 1,024 and
    8,192, recompute, chunked: engines/*.yaml with their sources), a limit the user gives
    stays theirs, and the ideal engine keeps 256 / 2,048. Where the engine's limits hold per
    data-parallel attention rank, an attention-DP layout holds ``ranks`` times as many."""
    from inference_econ.load.engine import EngineConfig, engine_config
    from inference_econ.model.mixed_step import EngineLayout

    load = dict(input_lengths="1000", output_lengths="100", requests=100, arrival_rate_per_s=2)
    trt = ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, assumptions="achievable", **load)
    assert (trt.engine.max_batch_requests, trt.engine.step_token_budget) == (2048, 8192)
    assert (trt.engine.admission, trt.engine.prefill) == ("no_evict", "whole")
    vllm = ie.simulate_load(
        "Llama 3.1 8B", "H100", gpus=1, assumptions="achievable", engine="vllm", **load
    )
    assert (vllm.engine.max_batch_requests, vllm.engine.step_token_budget) == (1024, 8192)
    assert (vllm.engine.admission, vllm.engine.prefill) == ("recompute", "chunked")
    mine = ie.simulate_load(
        "Llama 3.1 8B",
        "H100",
        gpus=1,
        assumptions="achievable",
        engine="vllm",
        max_batch_requests=64,
        **load,
    )
    assert (mine.engine.max_batch_requests, mine.engine.step_token_budget) == (64, 8192)
    ideal = ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, assumptions="paper", **load)
    assert (ideal.engine.max_batch_requests, ideal.engine.step_token_budget) == (256, 2048)
    # per attention rank: TensorRT-LLM's limits are a rank's, SGLang's the instance's
    own = EngineConfig(engine_own=("max_batch_requests", "step_token_budget"))
    dp4 = EngineLayout(8, 1, 4.0)
    for engine, batch in (("trtllm", 4 * 2048), ("sglang", 1024)):
        setting = ie.make_setting("DeepSeek-V3", "H200", assumptions="achievable", engine=engine)
        assert engine_config(own, setting).on_layout(dp4).max_batch_requests == batch
    # limits stated per instance (the replay spreads a row's over its ranks itself) stay so
    stated = EngineConfig(512, 8192, per_attention_rank=False)
    assert engine_config(stated, setting).on_layout(dp4).max_batch_requests == 512


def test_a_cap_far_out_moves_nothing_without_scipys_root():
    """A cap 9 standard deviations of the log or more above the log-mean moves neither the
    log-mean (``truncated_mu``'s root test, ln of the truncated mean over the mean, is above
    -1e-15 there) nor the draws (P(X <= cap) is 1.0 in floats): the short cut that skips
    scipy there gives what the full computation gives."""
    from scipy.special import log_ndtr, ndtr

    from inference_econ.load.lengths import NEGLIGIBLE, Lengths, truncated_mu

    for mean, sigma in ((1000.0, 0.8), (300.0, 0.6), (50.0, 2.0), (4000.0, 4.0)):
        plain = math.log(mean) - sigma**2 / 2.0
        for extra in (0.0, 1e-9, 0.5):
            top = plain + sigma**2 + (NEGLIGIBLE + extra) * sigma
            a, b = (top - plain - sigma**2) / sigma, (top - plain) / sigma
            excess = plain + sigma**2 / 2.0 + float(log_ndtr(a) - log_ndtr(b)) - math.log(mean)
            assert excess >= -1e-12  # the full computation keeps the plain log-mean too
            assert float(ndtr(b)) == 1.0  # and redraws nothing
            assert truncated_mu(mean, sigma, math.exp(top)) == plain
    # the CLI's default cap (MAX_TOKENS) on the user guide's lengths: the uncapped draws
    capped = Lengths("lognormal", 1000.0, math.inf, 0.8).draw(np.random.default_rng(3), 1000)
    z = np.random.default_rng(3).standard_normal(1000)
    plain = np.clip(np.rint(np.exp(math.log(1000.0) - 0.8**2 / 2.0 + 0.8 * z)), 1, None)
    assert capped.tolist() == plain.astype(np.int64).tolist()


# --- multi-step scheduling (§E1) ----------------------------------------------------------------
@pytest.mark.parametrize("steps", [1, 4, 8])
def test_an_arrival_waits_for_the_window_of_decode_steps_to_end(llama8b, steps):
    """vLLM V0's ``num_scheduler_steps``: a prompt that arrives while one request decodes is
    prefilled only when the window of ``steps`` decode steps in flight ends, so its prefill
    starts after the first multiple of ``steps`` decode steps past its arrival (2.5 steps after
    the first request's first token: 3 steps with one-step scheduling, 4 or 8 with windows)."""
    k, idle_wait, t0 = _second_prompt_waits(
        llama8b, EngineConfig(prefill="separate", scheduler_steps=steps)
    )
    assert k == pytest.approx(steps * math.ceil(3 / steps), abs=0.01)
    # an engine with nothing to do schedules an arrival at once, whatever its window
    assert idle_wait == pytest.approx(t0, rel=1e-12)


def _second_prompt_waits(llama8b, config):
    """On one GPU under ``config``: the decode steps of the first request (100-token prompt,
    50 tokens out) between its first token and the start of the prompt step of a second one
    arriving 2.5 steps after that token; an idle engine's first token after an arrival, and the
    first request's when alone."""
    inst = build_instance(llama8b, 1, config)
    alone = simulate(inst, Arrivals(np.zeros(1), np.array([100]), np.array([50])))
    step = (alone.finish_s[0] - alone.first_token_s[0]) / 49  # 49 decode steps at batch 1
    t0 = alone.first_token_s[0]
    rec = simulate(
        inst, Arrivals(np.array([0.0, t0 + 2.5 * step]), np.full(2, 100), np.full(2, 50))
    )
    assert rec.first_token_s[0] == t0
    start = rec.first_token_s[1] - prefill(llama8b, 1, 100).latency_s  # its prompt's step alone
    idle = simulate(inst, Arrivals(np.array([5.0]), np.array([100]), np.array([50])))
    return (start - t0) / step, idle.first_token_s[0] - 5.0, t0


def _under_poisson_load(llama8b, configs):
    """One GPU of ``llama8b`` under each engine config, the same 3,000 Poisson requests at 20 a
    second (500-token prompts, 200 out)."""
    traffic = make_traffic(20, "500", "200", requests=3000, seed=2)
    return [simulate_deployment(llama8b, Deployment(1), traffic, config=c) for c in configs]


def test_windows_of_decode_steps_lengthen_ttft_not_throughput(llama8b):
    """The same Poisson load with 9-step windows (AMD's MLPerf harness): an arrival waits for
    the window in flight, so the mean TTFT grows by more than a quarter of a window of decode
    steps and less than a whole one (a prompt's step ends a window early), while the output
    rate stays within 3 %."""
    one, nine = _under_poisson_load(
        llama8b,
        [
            EngineConfig(max_batch_requests=512, prefill="separate", scheduler_steps=n)
            for n in (1, 9)
        ],
    )
    extra = (nine.ttft_s.mean - one.ttft_s.mean) / one.tpot_s.mean
    assert 9 / 4 < extra < 9
    assert nine.output_tokens_per_s == pytest.approx(one.output_tokens_per_s, rel=0.03)


# --- a prefill-admission cadence (§E1) --------------------------------------------------------
@pytest.mark.parametrize(
    ("cadence", "steps"),
    [((0, 0), 3), ((1, 0), 3), ((2, 0), 5), ((4, 0), 4), ((6, 0), 6), ((6, 2), 3)],
)
def test_an_arrival_waits_for_the_admitting_call_of_the_cadence(llama8b, cadence, steps):
    """AMD's vLLM V1 patch (``VLLM_SUBSEQUENT_DECODE_STEPS`` n, ``VLLM_MIN_REQUEST_DECODE_STEP``
    m): waiting requests are admitted on one scheduler call in n + 1, the first request's
    prompt step being the first of the cycle (call 0). A prompt arriving 2.5 decode steps
    after that request's first token is admitted at the first call after its arrival whose
    place in the cycle is 0: after decode step j >= 3 with (1 + j) a multiple of n + 1 (3, 3,
    5, 4, 6 steps); with fewer than m requests running every call admits (3)."""
    config = EngineConfig(prefill="separate", admission_cadence=cadence)
    k, idle_wait, t0 = _second_prompt_waits(llama8b, config)
    assert k == pytest.approx(steps, abs=0.01)
    # an engine with nothing to do runs its empty calls to the admitting one at once
    assert idle_wait == pytest.approx(t0, rel=1e-12)


def test_an_admission_cadence_lengthens_ttft_and_refuses_what_it_cannot_read(llama8b):
    """The same Poisson load with prompts admitted on every 7th call (the Llama 2 70B
    Interactive configuration of AMD's MLPerf v6.0 harness): an arrival waits for the
    admitting call, so the mean TTFT grows by more than one decode step and less than seven,
    while the output rate stays within 3 %; a cadence that is not two whole numbers >= 0 is
    one error naming the field."""
    one, seventh = _under_poisson_load(
        llama8b,
        [EngineConfig(max_batch_requests=512, admission_cadence=c) for c in ((0, 0), (6, 0))],
    )
    extra = (seventh.ttft_s.mean - one.ttft_s.mean) / one.tpot_s.mean
    assert 1 < extra < 7
    assert seventh.output_tokens_per_s == pytest.approx(one.output_tokens_per_s, rel=0.03)
    for bad in ((6,), (6, -1), (6.0, 0), [6, 0], (True, 0)):
        with pytest.raises(SpecError, match="admission_cadence"):
            EngineConfig(admission_cadence=bad)
    text = EngineConfig(admission_cadence=(2, 1216)).describe()
    assert text.endswith("prompts admitted every 3rd schedule while 1,216 or more requests run")


def test_cli_scheduler_steps_lengthen_ttft_and_are_stated():
    """``--scheduler-steps 9`` (multi-step scheduling) on the same load: the mean TTFT grows by
    more than two decode steps, the output rate stays within 1 %, the run's metadata states the
    window; 0 steps is refused with the flag named."""
    one_gpu = ("simulate", "Llama 3 8B", "-H", "H100", "--gpus", "1", "--rate", "20")
    lengths = ("--prompt-tokens", "500", "--output-tokens", "200", "--requests", "2000")
    runs = {}
    for n in ("1", "9"):
        code, out, _ = _run(*one_gpu, *lengths, "--scheduler-steps", n, "--format", "json")
        assert code == 0
        runs[n] = json.loads(out)
    one, nine = (runs[n]["rows"][0] for n in ("1", "9"))
    assert nine["ttft_mean_s"] > one["ttft_mean_s"] + 2 * one["tpot_mean_s"]
    assert nine["output_tokens_per_s"] == pytest.approx(one["output_tokens_per_s"], rel=0.01)
    assert runs["9"]["metadata"]["scheduler_steps"] == 9
    assert "scheduler_steps" not in runs["1"]["metadata"]
    code, _, err = _run(
        "simulate", "Llama 3 8B", "-H", "H100", "--rate", "5", "--scheduler-steps", "0"
    )
    assert code == 2 and "--scheduler-steps" in err and ">= 1" in err


def test_the_load_functions_take_typed_objects_or_flat_settings():
    """``simulate_load`` and ``max_load`` take the load as ``Traffic``, ``Targets`` and
    ``EngineConfig`` objects, or as flat settings that ``ie.load_inputs`` (the one converter)
    turns into the same objects: the results are the same. An object given with the flat
    settings it is built from is refused, and so is a typed closed loop in a search."""
    flat = dict(input_lengths="1000", output_lengths="100", requests=400, arrival_rate_per_s=4.0)
    flat.update(slo_tpot_p99_s=0.05, max_batch_requests=64)
    typed = ie.load_inputs(flat, closed_loop=True)
    assert (
        typed.problem == {}
        and typed.traffic.requests == 400
        and typed.config.max_batch_requests == 64
    )
    objects = dict(traffic=typed.traffic, targets=typed.targets, config=typed.config)
    run = ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, **flat)
    assert ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, **objects) == run
    with pytest.raises(SpecError, match="'arrival_rate_per_s': is given together with traffic"):
        ie.simulate_load("Llama 3.1 8B", "H100", gpus=1, arrival_rate_per_s=4.0, **objects)
    loop = ie.load_inputs(
        dict(input_lengths="1000", output_lengths="100", concurrency=8), closed_loop=True
    )
    with pytest.raises(SpecError, match="concurrency.*only simulate_load"):
        ie.max_load("Llama 3.1 8B", "H100", gpus=1, traffic=loop.traffic, targets=typed.targets)


def test_a_hybrid_models_step_table_under_an_engine_profile_builds():
    """Jamba's recurrent layers hide part of a request's KV read: the table takes the step's
    own slope per request and still matches the step model at every row (it raised before)."""
    from inference_econ.load.engine import EngineConfig, build_instance
    from inference_econ.serving.setting import make_setting

    setting = make_setting("Jamba 1.5 Mini", "H100", assumptions="achievable")
    table = build_instance(setting, 2, EngineConfig(), 1000.0).table
    alone = table.fixed_s[1] + table.sequence_s + table.request_s
    assert table.time_s(1, 0.0, 0.0, 1, 1) == pytest.approx(alone, rel=1e-12)
    assert 0.0 < table.request_s < table.fixed_s[1]


def test_a_load_search_takes_no_rate_its_run_cannot_tell_as_held():
    """200 requests of 3-turn sessions never reach a steady state: read by the requests
    waiting for a first token alone, a load many times what one H100 serves reads as kept
    up: 4,275 req/s of Llama 3.1 8B at 500/100 tokens within p99 TPOT 100 ms, where 20,000
    requests hold 44.7. A run that cannot tell an overload of twice the load it
    serves (``Backlog.undecided``) is not taken as held: the search stops below it."""
    from inference_econ.load.backlog import UNTOLD_LIMIT

    kw = dict(input_lengths="500", output_lengths="100", session_turns=3, requests=200)
    found = ie.max_load(
        "Llama 3.1 8B", "H100", gpus=1, assumptions="achievable", slo_tpot_p99_s=0.1, **kw
    )
    held = found.knee.at_max
    assert 0 < found.max_rate_per_s < 200
    assert held.meets_targets and held.window.backlog.resolution <= UNTOLD_LIMIT
    run = ie.simulate_load(
        "Llama 3.1 8B", "H100", gpus=1, assumptions="achievable", slo_tpot_p99_s=0.1,
        arrival_rate_per_s=4275, **kw,
    )  # fmt: skip
    assert run.undecided and run.stable and run.meets_targets and run.row()["undecided"]
    assert any("reads as kept up in a run this short" in n for n in run.notes)
    none = ie.max_load(
        "Llama 3.1 8B", "H100", gpus=1, assumptions="achievable", slo_tpot_p99_s=0.1,
        **{**kw, "session_turns": 8, "think_time_s": 30, "requests": 100},
    )  # fmt: skip
    assert none.max_rate_per_s == 0.0
    assert "cannot tell whether even" in none.knee.reason and "raise requests" in none.knee.reason


def test_a_load_search_of_sessions_apart_holds_what_a_steady_run_serves():
    """Eight-turn sessions 30 s apart (Llama 3.1 8B, 500/100 tokens, p99 TPOT 100 ms, one
    H100): a steady load of R req/s holds 26 R sessions between turns. Runs that started
    empty never held them, and the search held 57.08 req/s at 500 requests and 1,074 at 2,000
    while serving about 1 and 4 (their output 106 and 407 tokens/s). Started with them and
    with those being answered (a warm start), 2,000 requests hold 14.8 req/s, and serve it
    (5,000 hold 13.3)."""
    kw = dict(input_lengths="500", output_lengths="100", session_turns=8, think_time_s=30)
    found = ie.max_load(
        "Llama 3.1 8B", "H100", gpus=1, assumptions="achievable", slo_tpot_p99_s=0.1,
        requests=2000, **kw,
    )  # fmt: skip
    held = found.knee.at_max
    assert 11 < found.max_rate_per_s < 17 and held.meets_targets and not held.undecided
    assert held.output_tokens_per_s > 0.8 * 100 * found.max_rate_per_s  # it serves what it holds
    assert not any("steady state" in n for n in held.notes)


def test_a_trace_of_bursts_is_searched_by_its_p99s_and_backlog(tmp_path):
    """25 bursts of 80 requests in 2 s, 20 s apart, on one H100: the bursts swing the queue so
    that the run cannot tell an overload of 2.09 times what it serves (undecided), at any
    rate. Every row of a trace is simulated and no more can be, so a load search reads its
    runs by their p99s and backlog alone, and holds 26.5 req/s within p99 TTFT 10 s."""
    rng = np.random.default_rng(0)
    times = np.concatenate([b * 20 + np.sort(rng.uniform(0, 2, 80)) for b in range(25)])
    trace = _trace(tmp_path / "bursts.csv", times)
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    run = simulate_deployment(setting, Deployment(1), make_traffic(trace=trace))
    assert run.undecided and run.stable
    found = ie.max_load(setting, gpus=1, trace=trace, slo_ttft_p99_s=10)
    assert 20 < found.max_rate_per_s < 40


def test_a_full_load_run_of_a_trace_adds_instances_only_for_what_it_misses():
    """20 req/s of examples/trace.csv on H100s: the search sizes 5 instances, and the run at
    the full load, each instance with a fifth of the trace's rows (too few to tell an
    overload of twice what it serves: ``undecided``), meets every p99; the plan stays 5
    (instances added for a run too short to tell had given 14, past --max-gpus 8). A closed
    loop has no offered load to fall short of telling: its short runs are never undecided."""
    trace = dict(trace=str(EXAMPLES / "trace.csv"), slo_ttft_p99_s=2, slo_tpot_p99_s=0.05)
    plan = ie.capacity(
        "Llama 3.1 8B", "H100", arrival_rate_per_s=20, sizes=[1], max_gpus=8, **trace
    )
    assert plan.deployment.instances == 5 and plan.result.instances == 5
    assert plan.result.undecided and plan.result.meets_targets
    assert not any("still misses" in n for n in plan.notes)
    closed = ie.simulate_load(
        "Llama 3.1 8B", "H100", gpus=1, assumptions="achievable", concurrency=16,
        input_lengths="1000", output_lengths="200", requests=200, slo_tpot_p99_s=0.1,
    )  # fmt: skip
    assert closed.meets_targets and not closed.undecided
    assert not any("reads as kept up" in n for n in closed.notes)


def test_count_ends_are_made_when_read_once_and_as_the_eager_runs_give_them():
    """A run's count interval ends (four runs at the step time's interval ends) are made when
    first read: ``repr`` does not make them, two threads reading at once make them once, the
    interval table swapped after the run does not move them (their step factors are taken
    with the run), and they equal the four runs made at once; pickled as a tuple."""
    import pickle
    import threading

    from inference_econ.load import deployment as dep
    from inference_econ.serving import support as sp

    load = dict(gpus=1, arrival_rate_per_s=20.0, input_lengths="500", output_lengths="50")
    run = ie.simulate_load("Llama 3 8B", "H100", **load, requests=150, slo_tpot_p99_s=0.02)
    ends = run.count_ends
    assert isinstance(ends, dep.CountEnds) and "made when first read" in repr(ends)
    made = []
    real = dep._runs_at
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dep, "_runs_at", lambda *a: made.append(1) or real(*a))
        wide = sp.parse_classes({"widening": 1.0, "pooled": {}}, "empty")  # no band at all
        patch.setattr(sp, "classes", lambda: wide)
        readers = [threading.Thread(target=lambda: ends.pairs) for _ in range(2)]
        for t in readers:
            t.start()
        for t in readers:
            t.join()
    assert made == [1] and "goodput_fraction_low80" in dict(ends)
    setting, traffic = run.setting, ie.make_traffic(20.0, "500", "50", requests=150)
    args = (setting, ie.Deployment(1, 1), traffic, run.targets, ie.EngineConfig(), run)
    eager = dep._runs_at(dep._step_factors(run), *args)
    assert dict(ends) == eager and pickle.loads(pickle.dumps(ends)) == tuple(eager.items())


def test_a_short_run_of_sessions_on_two_instances_counts_one_instances_requests():
    """Sessions on two instances simulated together: the short-run note counts the requests
    of one instance (about half the run's), where it had given the run's total as "per
    instance"."""
    run = ie.simulate_load(
        "Llama 3 8B", "H100", gpus=1, instances=2, arrival_rate_per_s=4.0,
        input_lengths="300", output_lengths="30", session_turns=3, think_time_s=2.0,
        requests=120,
    )  # fmt: skip
    note = next(n for n in run.notes if n.startswith("only "))
    each = int(note.split()[1])
    assert run.requests > 150 and each == round(run.requests / 2), (run.requests, note)


def test_a_load_frontier_over_several_gpus_says_each_rows_gpu_and_each_gpus_price():
    """Searched over two GPUs, each row names its GPU and the metadata prices each GPU at its
    own rate (it had stated the first GPU's price for rows on the other)."""
    load = ("--prompt-tokens", "500", "--output-tokens", "50", "--requests", "100")
    code, out, _ = _run(
        "frontier", "Llama 3 8B", "-H", "H100,H200", "--rate", "5", "--slo-tpot-p99", "0.05",
        "--max-gpus", "1", *load, "--format", "csv",
    )  # fmt: skip
    lines = out.splitlines()
    header = next(line for line in lines if not line.startswith("#")).split(",")
    assert code == 0 and "hardware" in header
    rows = [line.split(",") for line in lines[lines.index(",".join(header)) + 1 :]]
    assert rows and {row[header.index("hardware")] for row in rows} <= {"H100-SXM", "H200-SXM"}
    first = lines[0]
    h100, h200 = (ie.load_hardware(g).price_usd_per_hour for g in ("H100", "H200"))
    assert f"price_usd_per_gpu_hour H100-SXM {h100:g}; H200-SXM {h200:g}" in first


def test_a_gpu_no_deployment_of_which_meets_the_targets_is_still_priced_as_itself():
    """L4 holds none of these loads within 20 ms a token: the frontier's rows are all H100's,
    and its metadata still states each GPU's own file and price, not H100's for both."""
    code, out, _ = _run(
        "frontier", "Llama 3 8B", "-H", "H100,L4", "--rate", "5", "--slo-tpot-p99", "0.02",
        "--max-gpus", "2", "--requests", "100", "--prompt-tokens", "500", "--output-tokens",
        "50", "--format", "csv",
    )  # fmt: skip
    first = out.splitlines()[0]
    assert code == 0 and "(H100-SXM hardware/h100_sxm.yaml; L4 hardware/l4.yaml)" in first
    h100, l4 = (ie.load_hardware(g).price_usd_per_hour for g in ("H100", "L4"))
    assert f"price_usd_per_gpu_hour H100-SXM {h100:g}; L4 {l4:g};" in first


def test_a_run_kept_under_a_slower_engine_is_not_taken_for_the_engines_own():
    """The kept simulations are keyed by what ``slower_engines`` and ``fixed_layout`` set: a
    run at an interval's slow end is not returned for the engine as modelled."""
    from inference_econ.load.deployment import Deployment, slower_engines
    from inference_econ.load.engine import EngineConfig
    from inference_econ.optimise.load_search import clear_runs, run_at

    setting = ie.make_setting("Llama 3.1 8B", "H100", assumptions="achievable", engine="vllm")
    traffic = make_traffic(4.0, "500", "100", requests=400, seed=1)
    clear_runs()
    with slower_engines(2.0):
        slow = run_at("deployment", setting, Deployment(1, 1), traffic, EngineConfig())
    own = run_at("deployment", setting, Deployment(1, 1), traffic, EngineConfig())
    assert own is not slow
    assert own.tpot_s.mean < 0.75 * slow.tpot_s.mean  # each step twice as long under the first
