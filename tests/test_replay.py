"""Benchmarks replayed on the load engine (docs/model.md §F9): latencies come out of the
simulated schedule and depend on the hardware; no time to first token beats the prompt's own
prefill; the steady-state shortcut the fit uses agrees with the simulation; versioned engine
profiles; closed-loop clients and the engines' admission policies (§E3). Small request counts:
every simulation here takes milliseconds."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from inference_econ.load.arrivals import Arrivals
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.simulate import simulate
from inference_econ.load.targets import Targets
from inference_econ.measured import closed_forms, comparison
from inference_econ.measured import predicting as pr
from inference_econ.measured import replay as rp
from inference_econ.measured.reading import load_measured
from inference_econ.model.assumptions import preset
from inference_econ.optimise import load_search
from inference_econ.serving.prefill import prefill_latency_s
from inference_econ.serving.setting import make_setting
from inference_econ.specs.catalog import resolve_system_name
from inference_econ.specs.engine import load_engine, select_engine
from inference_econ.specs.hardware import load_hardware

DATA = Path(__file__).resolve().parent / "data"
HEADER = (
    "source,model,precision,hardware,n_gpus,parallelism,batch_or_concurrency,input_len,"
    "output_len,metric,value,unit,notes,scenario"
)
#: A Server row of Llama 3.1 8B (MLPerf's limits written in the notes), on one GPU.
SERVER = (
    "s,Llama-3.1-8B,FP8,{gpu},1,TP1,n/a,1000,200,{metric},{value},{unit},"
    '"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=100ms",server'
)


def rows_of(tmp_path, *lines):
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    return load_measured(path)


def test_server_latencies_depend_on_the_gpus_bandwidth(tmp_path, small_runs):
    """The same Server row on H100 (3.35 TB/s) and H200 (4.8 TB/s, the same compute): the
    simulated TPOT differs, and the faster memory serves more at the knee."""
    rows = rows_of(
        tmp_path,
        SERVER.format(gpu="H100 SXM", metric="mean_TPOT", value=50, unit="ms"),
        SERVER.format(gpu="H200 SXM", metric="mean_TPOT", value=50, unit="ms"),
        SERVER.format(gpu="H100 SXM", metric="throughput_total", value=9000, unit="tok/s"),
        SERVER.format(gpu="H200 SXM", metric="throughput_total", value=9000, unit="tok/s"),
    )
    predicted, _, status, engines = comparison.predict_rows(rows, "achievable")
    assert status == ["ok"] * 4 and engines[0].startswith("trtllm")
    tpot_h100, tpot_h200, thr_h100, thr_h200 = predicted
    assert abs(tpot_h200 / tpot_h100 - 1.0) > 0.02  # not one constant whatever the GPU
    assert tpot_h100 < 0.1 and tpot_h200 < 0.1  # the p99 limit holds, so the mean is below it
    assert thr_h200 > thr_h100


def test_a_server_row_is_read_a_little_below_the_most_load_held(tmp_path, small_runs):
    """A Server row's figures come from a run at ``SUBMITTED_LOAD_SHARE`` of the most load its
    search held (a submitter's target rate sits below the knee, where the p99 TTFT is
    ill-conditioned): the same requests at that rate, so it carries no more load than the knee
    and meets the row's limits."""
    rows = rows_of(tmp_path, SERVER.format(gpu="H100 SXM", metric="p99_TTFT", value=900, unit="ms"))
    plan = pr.build_plan(rows, "achievable")
    case = next(iter(plan.load.values()))
    inst = rp.instance(case)
    knee = rp._search(case, inst, None)
    got = rp.replay(case)
    assert case.load_share == rp.SUBMITTED_LOAD_SHARE and 0 < case.load_share < 1
    bound = pr.build_plan(rows, "refined")  # the ideal bound: at the most load held
    assert {c.load_share for c in bound.load.values()} == {1.0}
    assert got.rate_per_s == pytest.approx(rp.SUBMITTED_LOAD_SHARE * knee.max_rate_per_s, rel=1e-12)
    at_knee = rp._scaled(case, knee.at_max, knee.max_rate_per_s)
    assert got.ttft_p99 < at_knee.ttft_p99  # the same draws, each arriving a little later
    assert got.ttft_p99 <= 2.0 and got.tpot_p99 <= 0.1  # the row's limits hold there
    # less load, less queueing (a short run's output rate over its window is not a load: the
    # window ends at the last finish, which the queue moves either way)
    assert got.ttft < at_knee.ttft


def test_a_stopped_server_run_never_holds_its_load(tmp_path, small_runs):
    """A Server run stopped once it certainly missed the limits fails, whatever the p99s of
    the requests it had served (they may still meet the limits: the requests that break them
    are still waiting); the load search's answer is always a whole run. Before this was so,
    MLPerf v5.1 Llama 2 70B Server on 8 H200 (ASUSTeK ESC N8) was read at a load whose whole
    run has a p99 TTFT of 2.46 s against the 2 s limit (1.96 s over the stopped part)."""
    rows = rows_of(tmp_path, SERVER.format(gpu="H100 SXM", metric="p99_TTFT", value=900, unit="ms"))
    case = next(iter(pr.build_plan(rows, "achievable").load.values()))
    inst = rp.instance(case)
    targets = Targets(ttft_p99_s=2.0, tpot_p99_s=0.1)
    knee = rp._search(case, inst, None)
    assert knee.at_max.stopped_for is None and knee.at_max.with_targets(targets).meets_targets
    assert all(not r.meets_targets for r in knee.evaluated if r.stopped_for is not None)
    held = knee.at_max.with_targets(targets)
    assert held.p99["ttft"] <= 2.0 and held.p99["tpot"] <= 0.1
    cut = dataclasses.replace(held, stopped_for=targets)  # the same p99s, from a stopped run
    assert cut.with_targets(targets).meets_targets is False


def lone_prompt_prefill_s() -> float:
    """``prefill`` of the SERVER rows' 1,000-token prompt alone on one H100 under TensorRT-LLM
    (its fastest layout there: a lower bound on any TTFT of that prompt)."""
    setting = make_setting(
        "Llama 3.1 8B",
        "H100-SXM",
        weight_bits=8,
        kv_cache_bits=8,
        prompt_tokens=1000,
        assumptions="achievable",
        engine=select_engine("trtllm", None, "cuda"),
    )
    return float(prefill_latency_s(setting, [1], integer_layouts=True)[0])


def test_cases_share_the_instance_and_the_offline_run_they_do_not_tell_apart(tmp_path, monkeypatch):
    """Cases that differ only in what a simulation does not read share it: the instance of
    one setting, layout and scheduler whatever the limits, and an MLPerf Offline run whatever
    the requests LoadGen issues beyond the run's own (each case still extends it to its own
    count: 30,000 requests take longer than 20,000, over the same drain)."""
    monkeypatch.setattr(rp, "WHOLE_RUN_REQUESTS", 400)
    rp.clear()
    runs = []
    simulate_run = rp.simulate_run
    monkeypatch.setattr(rp, "simulate_run", lambda *a: runs.append(a) or simulate_run(*a))
    rows = rows_of(tmp_path, SERVER.format(gpu="H100 SXM", metric="p99_TTFT", value=900, unit="ms"))
    case = next(iter(pr.build_plan(rows, "achievable").load.values()))
    assert rp.instance(dataclasses.replace(case, limits=(1.0, 0.05))) is rp.instance(case)
    capped = dataclasses.replace(case.config, max_batch_requests=64)  # a queue waits
    offline = dataclasses.replace(
        case, scenario="offline", limits=None, whole_run=True, config=capped
    )
    few, many = (dataclasses.replace(offline, issued=n) for n in (20_000, 30_000))
    a, b = rp.replay(few), rp.replay(many)
    assert len(runs) == 1 and len(runs[0][1].requests) == 400
    assert a.ok and b.ok and a.throughput != b.throughput
    rp.clear()


def test_runs_under_batch_limits_they_never_reach_are_one_run():
    """A run's peak batch is the most requests decoding and prefilling at once: 12 requests
    of 200 + 400 tokens at t = 0 on a cache of 3,200 tokens (32 layers). No-evict admission
    holds 5 of them (3,200 // 599 positions at their peak): the same run under a batch limit
    of 6 or 64, which ``_any_limit`` shares, and another under 3. Recompute admission takes
    all 12 prompts at once (200 positions each, and one for each request's next token)."""
    setting = make_setting("Llama 3.1 8B", "H100-SXM", weight_bits=8, kv_cache_bits=8)
    inst = build_instance(setting, 1, EngineConfig(64, 2048))
    small = lambda config: type(inst)(  # noqa: E731
        inst.setting, inst.layout, config, inst.table, inst.work, 32 * 3200.0
    )
    burst = Arrivals(np.zeros(12), np.full(12, 200), np.full(12, 400))
    assert simulate(small(EngineConfig(64, 2048)), burst).peak_batch == 12
    wide, six, three = (small(EngineConfig(b, 2048, "no_evict")) for b in (64, 6, 3))
    records = [simulate(i, burst) for i in (wide, six, three)]
    assert [r.peak_batch for r in records] == [5, 5, 3]
    assert np.array_equal(records[0].finish_s, records[1].finish_s)
    assert not np.array_equal(records[0].finish_s, records[2].finish_s)
    rp.clear()
    run = rp.Run(None, requests=burst)
    shared = rp._any_limit(wide, run)
    assert rp._any_limit(six, run) is shared and rp._any_limit(three, run) is not shared
    assert np.array_equal(shared.finish_s, records[0].finish_s)
    rp.clear()


def test_no_time_to_first_token_beats_the_prompts_prefill(tmp_path, small_runs):
    """Every simulated request's TTFT is at least its prompt's pass alone on the instance, and
    the row's predicted mean TTFT at least ``prefill`` of the mean prompt on its GPUs (the
    fastest layout: a lower bound)."""
    rows = rows_of(tmp_path, SERVER.format(gpu="H100 SXM", metric="mean_TTFT", value=90, unit="ms"))
    predicted, _, status, _ = comparison.predict_rows(rows, "achievable")
    alone = lone_prompt_prefill_s()
    assert status[0] == "ok" and predicted[0] >= alone > 0
    plan = pr.build_plan(rows, "achievable")
    case = next(iter(plan.load.values()))
    inst = rp.instance(case)
    stream = rp.traffic_of(case, 300, rate=40.0).stream()
    rec = simulate(inst, stream)
    n = stream.prompt_tokens
    lone = np.array(
        [inst.table.time_s(int(k), 0.0, k * float(inst.positions((k - 1) / 2.0)), 1) for k in n]
    )
    ttft = rec.first_token_s - stream.arrival_s
    assert np.all(ttft >= lone * (1 - 1e-9))


def test_steady_state_shortcut_equals_the_simulation(tmp_path):
    """The closed forms of offline and closed-loop rows (docs/model.md §F9: what the fit
    re-times) against the load engine's runs of the same rows (Llama 3.1 8B on one H100 as
    TensorRT-LLM, prompts 1000 (sd 400), outputs 200 (sd 80) tokens): a closed-loop sweep of
    64 clients within 2 %; an offline run within 5 % - the closed form leaves out the
    reservation a prompt holds while it waits for its step (no-evict admission)."""
    lengths = "1000 mean (sd 400),200 mean (sd 80)"
    line = (
        "s,Llama-3.1-8B,FP8,H100 SXM,1,TP1,{c},"
        + lengths
        + ",throughput_total,1,tok/s,TensorRT-LLM,{s}"
    )
    rows = rows_of(
        tmp_path, line.format(c="max load", s="offline"), line.format(c=64, s="closed_loop")
    )
    fit_plan = pr.build_plan(rows, "achievable", for_fit=True)
    steady, _ = closed_forms.metrics(
        fit_plan, closed_forms.Points.of(fit_plan), fit_plan.step_seconds()
    )
    plan = pr.build_plan(rows, "achievable")
    assert list(plan.load) == [(1, 0)]  # the offline row's steady state is used as it is
    found = plan.engines[0]
    a = pr._assumptions_for(preset("achievable"), found, plan.candidates[(0, 0)])
    offline = pr._case(rows[0], plan.candidates[(0, 0)], a, found.config)
    assert rp.replay(offline, 2000).throughput == pytest.approx(steady[0], rel=0.05)
    assert rp.replay(plan.load[(1, 0)], 640).throughput == pytest.approx(steady[1], rel=0.02)


def test_engine_profiles_by_version_platform_and_gpu():
    """vLLM before and after its V1 engine, on ROCm; TensorRT-LLM 0.x and 1.x; defaults by GPU
    class; an unknown version takes the newest range; another engine is never borrowed."""
    assert select_engine("vllm", "0.4.3+rocm614", "rocm").name == "vllm-v0-rocm"
    assert select_engine("vllm@0.10", None, "cuda").name == "vllm"
    assert select_engine("vLLM", None, "rocm").name == "vllm-rocm"
    assert select_engine("TensorRT-LLM", "0.17.0", "cuda").name == "trtllm-0"
    assert select_engine("NIM", None, "cuda").name == "trtllm"
    with pytest.raises(Exception, match="no trtllm profile"):
        select_engine("trtllm", None, "rocm")
    # no platform: any platform's profile (compare-measured checks --engine trtllm this way
    # before reading rows, and the default engine must pass its own check)
    assert select_engine("trtllm").name == "trtllm"
    assert select_engine("trtllm@0.17").name == "trtllm-0"
    vllm, v0, trt = load_engine("vllm"), load_engine("vllm-v0"), load_engine("trtllm")
    h100, a100, l40s = (
        load_hardware(resolve_system_name(g).path) for g in ("H100-SXM", "A100-SXM-80GB", "L40S")
    )
    assert vllm.scheduler_limits(h100, offline=False) == (1024, 8192)
    assert vllm.scheduler_limits(h100, offline=True) == (1024, 16384)
    assert vllm.scheduler_limits(a100, offline=False) == (256, 2048)  # A100 keeps the small ones
    assert vllm.scheduler_limits(l40s, offline=True) == (256, 8192)
    assert v0.scheduler_limits(h100, offline=False) == (256, 4096) and v0.prefill == "separate"
    assert (trt.admission, vllm.admission) == ("no_evict", "recompute")


def test_a_row_without_an_engine_says_so(tmp_path):
    rows = rows_of(
        tmp_path,
        "s,Llama-3.1-8B,FP8,H100 SXM,1,TP1,8,1000,200,throughput_total,900,tok/s,,closed_loop",
    )
    predicted, _, status, _ = comparison.predict_rows(rows, "achievable")
    assert status[0].startswith("unresolved: engine unknown") and math.isnan(predicted[0])
    predicted, _, status, _ = comparison.predict_rows(
        rows, "refined"
    )  # the ideal engine needs none
    assert status[0] == "ok" and predicted[0] > 0


def test_closed_loop_clients_and_admission_policies():
    """C clients keep at most C requests in the engine and send each next one when one
    finishes; no-evict admission never preempts where recompute admission must; separate
    prefill stops decoding while a prompt runs."""
    setting = make_setting("Llama 3.1 8B", "H100-SXM", weight_bits=8, kv_cache_bits=8)
    n = 40
    arrivals = Arrivals(np.zeros(n), np.full(n, 300), np.full(n, 60))
    inst = build_instance(setting, 1, EngineConfig(64, 2048))
    rec = simulate(inst, arrivals, clients=4)
    sent, done = rec.arrivals.arrival_s, rec.finish_s
    assert np.all(sent[:4] == 0) and np.all(np.isfinite(done))
    for t in sent[4:]:  # each later request arrives exactly when an earlier one finished
        assert np.any(np.isclose(done, t, rtol=0, atol=1e-12))
    in_flight = [np.sum((sent <= t) & (done > t)) for t in np.unique(sent)]
    assert max(in_flight) <= 4
    small = lambda config: type(inst)(  # noqa: E731 - a cache of 3,200 tokens (32 layers)
        inst.setting, inst.layout, config, inst.table, inst.work, 32 * 3200.0
    )
    burst = Arrivals(np.zeros(12), np.full(12, 200), np.full(12, 400))
    assert simulate(small(EngineConfig(64, 2048)), burst).preemptions.sum() > 0
    safe = simulate(small(EngineConfig(64, 2048, "no_evict")), burst)
    assert safe.preemptions.sum() == 0 and np.all(np.isfinite(safe.finish_s))
    two = Arrivals(np.array([0.0, 0.05]), np.array([200, 1500]), np.array([400, 10]))
    sep = simulate(small(EngineConfig(64, 2048, prefill="separate")), two)
    mixed = simulate(small(EngineConfig(64, 2048)), two)
    assert sep.finish_s[0] > mixed.finish_s[0]  # decoding waited for the second prompt's step


def test_with_attention_dp_the_engines_limits_are_per_rank(tmp_path):
    """TensorRT-LLM's max_batch_size and max_num_tokens (vLLM's max_num_seqs) hold per
    data-parallel attention rank: MLPerf v5.1 DeepSeek-R1 Server on 8 B200 with
    ``max batch 512`` measured 13,913 tok/s at 61.0 ms mean TPOT, 849 requests decoding at
    once (Dell XE9680L, tests/data/benchmarks_test_mlperf_newer.csv): more than a cap of 512
    per instance allows."""
    assert 13913.33 * 0.061003 > 512
    config = EngineConfig(512, 8192, "no_evict", "whole")
    assert config.per_instance(8) == EngineConfig(4096, 65536, "no_evict", "whole")
    assert config.per_instance(1) is config
    row = (
        's,DeepSeek-R1,FP4,B200,8,"TP8 (EP8, attn-DP)",max batch 512,800,3700,throughput,'
        '14000,tokens/s,"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=80ms",server'
    )
    path = tmp_path / "rows.csv"
    path.write_text(f"{HEADER}\n{row}\n")
    (r,) = load_measured(path)
    found = pr.row_engine(r, preset("achievable"))
    (cand,) = pr.candidates(r)
    assert found.config.max_batch_requests == 512
    assert pr.for_layout(found, cand, r).config.max_batch_requests == 4096
    tp = pr.Candidate(8, 1, 1, 1, True)  # tensor-parallel attention: one scheduler
    assert pr.for_layout(found, tp, r) is found


def test_the_layout_that_prefills_fastest_is_always_simulated(tmp_path, monkeypatch):
    """The layout ranking estimates decode throughput and cannot see the TTFT limit: MLPerf
    v5.0 Llama 3.1 405B Server on 8 H200 (9,429-token prompts, p99 TTFT <= 6 s) ranked 2 x TP4
    first, whose long prefills bind TTFT at 66 tok/s where the submissions measured 276-294
    on one TP8 instance. The widest instance is simulated whatever its estimate."""
    row = (
        "s,Llama-3.1-405B-Instruct,FP8,H200,8,n/a,n/a,9428.64 mean (sd 4066.94),"
        "647.5 mean (sd 260.8),throughput,291.37,tokens/s,"
        '"TensorRT-LLM; constraints p99 TTFT<=6000ms, p99 TPOT<=175ms",server'
    )
    path = tmp_path / "rows.csv"
    path.write_text(f"{HEADER}\n{row}\n")
    plan = pr.build_plan(load_measured(path), "achievable")
    simulated = []  # the cases whose load search walks (``bracket``)
    monkeypatch.setattr(rp, "bracket", lambda case: simulated.append(case) or (0.0, math.inf))
    monkeypatch.setattr(rp, "replay", lambda case: rp.Outcome())
    pr._load_pairs(plan)
    widest = max(c.tensor for c in plan.load.values())
    assert widest == 8 and any(c.tensor == 8 for c in simulated)
    assert len(simulated) < len(plan.load) or len(plan.load) <= 2


def test_a_server_load_is_held_by_its_p99s_over_the_run(tmp_path, monkeypatch):
    """MLPerf LoadGen judges a Server run by its p99 TTFT and TPOT over at least ten minutes
    (``mlperf.conf``: ``*.Server.min_duration = 600000``), not by whether the engine's batch is
    still growing. MLPerf v4.1 Mixtral 8x7B Server on one GH200 (NVIDIA, TensorRT-LLM; the
    training file, tests/data/benchmarks_train.csv) measured mean TPOT 145.48 ms, p99 TPOT
    190.03 ms and mean TTFT 245.1 ms at 7,450 tok/s: submitters load the engine until a limit
    nearly binds. Judged by the keep-up test of a shorter run, the knee stopped where the
    batch was still filling (mean TPOT 85 ms, p99 122 ms); judged as LoadGen does, a p99 limit
    is what breaks just above it."""
    train = (DATA / "benchmarks_train.csv").read_text().splitlines()
    lines = [ln for ln in train if "GH200-144GB_aarch64x1_TRT/mixtral-8x7b/Server" in ln]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([train[0], *lines]) + "\n")
    rows = load_measured(path)
    seen = []
    search = rp.find_knee_from
    monkeypatch.setattr(
        rp, "find_knee_from", lambda *a, **k: seen.append(search(*a, **k)) or seen[-1]
    )
    rp.clear()
    predicted, _, status, _ = comparison.predict_rows(rows, "achievable")
    rp.clear()
    got = {r.metric_text: p for r, p, s in zip(rows, predicted, status) if s == "ok"}
    assert got["mean_TPOT"] == pytest.approx(0.14548, rel=0.25)
    assert got["p99_TPOT"] == pytest.approx(0.19003, rel=0.15)
    assert got["throughput_total"] == pytest.approx(7450.27, rel=0.15)
    for knee in seen:  # just above each knee a p99 breaks its limit (2 s TTFT, 200 ms TPOT)
        above = [r for r in knee.evaluated if r.rate_per_s > knee.max_rate_per_s]
        if above:
            r = min(above, key=lambda r: r.rate_per_s)
            assert r.ttft_s.p99 > 2.0 or r.tpot_s.p99 > 0.2


def test_a_layout_is_bisected_only_where_it_can_be_the_rows_best(tmp_path, small_runs, monkeypatch):
    """A Server row's layouts walk their load searches first (``replay.bracket``: the highest
    load held, the lowest failed above it); one whose failed load is below another's held
    load by ``BRACKET_MARGIN`` serves less whatever its bisections find, so they are not
    run; one that fails at once below another's held load less the margin is not walked at
    all. Llama 2 70B at 8 bits on 8 x L40S (MLPerf's Server limits): TP8 fails 1.36 req/s
    where 4 x TP2 held 1.72; the row's prediction and layout are those of the search that
    bisects every layout."""
    row = (
        "s,Llama-2-70b,FP8,L40S,8,n/a,n/a,1000,300,throughput,700,tokens/s,"
        '"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=200ms",server'
    )
    plan = pr.build_plan(rows_of(tmp_path, row), "achievable")
    walked = []
    bracket = rp.bracket
    monkeypatch.setattr(rp, "bracket", lambda c: walked.append(c) or bracket(c))
    pruned = pr._load_pairs(plan)
    monkeypatch.setattr(rp, "bracket", bracket)
    # the layouts ranked after the first are asked first whether they fail below its held load
    # less the margin (``fails_at``: one run); TP8 does, so it is not even walked
    assert all(c.tensor != 8 for c in walked) and len(walked) < len(plan.load)
    for c in plan.load.values():  # each search's answer lies in its walk's bracket
        lo, hi = rp.bracket(c)
        assert lo * c.load_share <= rp.replay(c).rate_per_s < hi
    monkeypatch.setattr(rp, "BRACKET_MARGIN", math.inf)  # every layout bisected
    full = pr._load_pairs(plan)
    assert set(pruned) < set(full)
    best = max(full, key=lambda k: full[k][1])
    assert best in pruned and pruned[best] == full[best]
    held = rp.bracket(plan.load[best])[0]
    for k in set(full) - set(pruned):
        assert plan.load[k].tensor == 8
        assert rp.bracket(plan.load[k])[1] * 1.05 <= held


def test_an_offline_row_replays_the_layouts_that_can_serve_most(tmp_path, monkeypatch):
    """An Offline row whose layout is not stated replays the candidate layouts whose
    steady-state estimate is within ``RANKING_SHARE`` of the best one's: MLPerf v4.1 Llama 2
    70B Offline on 8 L40S (Fujitsu, the training file) has three, estimated at 0.42, 0.71
    and 1 of the best; the one replayed is the one that serves most when all three are, with
    the same figures."""
    train = (DATA / "benchmarks_train.csv").read_text().splitlines()
    line = next(ln for ln in train if "CDI_L40Sx8_TRT/llama2-70b-99/Offline" in ln)
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([train[0], line]) + "\n")
    rows = load_measured(path)
    rp.clear()
    plan = pr.build_plan(rows, "achievable")
    estimates = {k: rp.estimate(c).throughput for k, c in plan.load.items()}
    top = max(estimates.values())
    assert len(plan.load) == 3
    assert sorted(round(v / top, 2) for v in estimates.values()) == [0.42, 0.71, 1.0]
    replayed = []
    replay = rp.replay
    monkeypatch.setattr(rp, "replay", lambda c: replayed.append(c) or replay(c))
    pruned = pr._load_pairs(plan)
    assert len(replayed) == 1 and set(pruned) == {max(estimates, key=estimates.get)}
    monkeypatch.setattr(rp, "RANKING_SHARE", 0.0)  # every layout replayed
    full = pr._load_pairs(plan)
    monkeypatch.undo()
    rp.clear()
    best = max(full, key=lambda k: full[k][1])
    assert len(full) == 3 and pruned == {best: full[best]}


def _full_search(probe, targets, start, guess, early=None, held=None, refine=True):
    """``find_knee_from``'s question asked as ``find_knee`` asks it: the walk from ``start``
    and five bisections, whatever the guess (or the walk alone for a bracket)."""
    return load_search.find_knee(probe, targets, start, early=early, refine=5 if refine else 0)


def test_a_like_configuration_searched_first_guesses_the_next_ones_answer(
    tmp_path, small_runs, monkeypatch
):
    """Two submitters' runs of one benchmark differ in their measured output lengths by a few
    tokens, so they are two configurations; the second's search starts from the share of its
    estimate the first's answer was (``replay._alike``): on the answer, in the held run there,
    the failed one above it and the run read below it, where alone it walks from the default
    guess; the same prediction either way. Llama 3.1 8B on one H200, 3,000 / 100 and 103
    tokens."""
    line = (
        "s,Llama-3.1-8B,FP8,H200,1,TP1,n/a,3000,{out},throughput,2000,tokens/s,"
        '"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=400ms",server'
    )
    first, second = (rows_of(tmp_path, line.format(out=n)) for n in (100, 103))
    runs = []
    counted = rp._any_limit
    monkeypatch.setattr(rp, "_any_limit", lambda inst, run: runs.append(1) or counted(inst, run))
    alone = comparison.predict_rows(second, "achievable")
    n_alone = len(runs)
    rp.clear()
    comparison.predict_rows(first, "achievable")
    del runs[:]
    after = comparison.predict_rows(second, "achievable")
    assert len(runs) <= 3 < n_alone
    assert np.isfinite(alone[0]).all()
    assert np.array_equal(alone[0], after[0]) and alone[1:] == after[1:]


def test_the_guessed_search_answers_as_the_full_search(tmp_path, small_runs, monkeypatch):
    """Server rows' load searches start from a guess of their answer (their estimate times a
    share, what kept runs say) and gallop to it (``find_knee_from``): every row's prediction,
    layout and status are those of the full walk-and-bisect search from 0.8 x the estimate,
    whatever the guess: Llama 2 70B on one H100, whose answer lies below its estimate, and
    Mixtral 8x7B on one H100, 1.7 times above it (the row of 8 L40S of the test above checks a
    pruned layout; every row of the training file, and the runs saved there:
    ``benchmarks/benchmark_path_speed.py``)."""
    lines = [
        "s,Llama-2-70b,FP8,H100,1,TP1,n/a,1000,300,throughput,700,tokens/s,"
        '"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=200ms",server',
        "s,Mixtral-8x7B,FP8,H100,1,TP1,n/a,600,150,tpot_p99,0.15,s,"
        '"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=200ms",server',
    ]
    rows = rows_of(tmp_path, *lines)
    guessed = comparison.predict_rows(rows, "achievable")
    rp.clear()
    monkeypatch.setattr(rp, "find_knee_from", _full_search)
    full = comparison.predict_rows(rows, "achievable")
    assert np.isfinite(full[0]).all() and full[2] == ["ok", "ok"]
    assert np.array_equal(guessed[0], full[0]) and guessed[1:] == full[1:]


def test_the_estimate_takes_only_the_batch_whose_prompts_its_steps_take_in(
    tmp_path, small_runs, monkeypatch
):
    """A Server row of 3,000-token prompts and 100 output tokens on one H200: each finished
    request's prompt enters the same steps, 31 step tokens a request, so TensorRT-LLM's
    8,192-token steps hold a batch of at most 8,192 / 31 = 264 (the KV cache and the TPOT
    limit allow more). The steady-state estimate is that batch's, near the search's answer,
    which is the full search's; under an engine that runs prompts in steps of their own the
    budget bounds no batch."""
    rows = rows_of(
        tmp_path,
        "s,Llama-3.1-8B,FP8,H200,1,TP1,n/a,3000,100,throughput,2000,tokens/s,"
        '"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=400ms",server',
    )
    seen: dict = {}
    search = rp._search

    def searched(case, inst, requests, refine=True):
        knee = search(case, inst, requests, refine)
        seen.update(case=case, inst=inst, knee=knee.max_rate_per_s)
        return knee

    monkeypatch.setattr(rp, "_search", searched)
    guessed = comparison.predict_rows(rows, "achievable")
    case, inst = seen["case"], seen["inst"]
    est = rp.estimate(case)
    assert inst.config.step_token_budget == 8192 and case.replicas == 1
    assert est.streams == 264  # round(8192 / 31): the budget, not the cache or the limit, binds
    assert 0.7 * est.rate_per_s < seen["knee"] < 1.3 * est.rate_per_s
    rp.clear()
    monkeypatch.setattr(rp, "find_knee_from", _full_search)
    full = comparison.predict_rows(rows, "achievable")
    assert np.isfinite(full[0]).all() and full[2] == ["ok"]
    assert np.array_equal(guessed[0], full[0]) and guessed[1:] == full[1:]
    # SGLang runs its prompts in steps of their own: its budget does not bound the batch
    sglang = rows_of(
        tmp_path,
        "s,Llama-3.1-8B,FP8,H200,1,TP1,n/a,3000,100,throughput,2000,tokens/s,"
        '"SGLang; constraints p99 TTFT<=2000ms, p99 TPOT<=400ms",server',
    )
    comparison.predict_rows(sglang, "achievable")
    case, inst = seen["case"], seen["inst"]
    assert inst.config.prefill == "chunked_separate" and rp.estimate(case).streams > 300


def test_a_server_run_issues_at_least_the_benchmarks_samples(tmp_path):
    """MLPerf's LLM benchmarks run their latency scenarios in equal-issue mode (LoadGen's
    mlperf.conf: ``llama3_1-405b.*.sample_concatenate_permutation = 1``): a Server run issues
    every one of the performance set's samples equally often, at least
    ``performance_sample_count_override`` = 8,313 requests for Llama 3.1 405B, hours at its
    load, where 600 s of arrivals are about 250. Each instance's run holds its share."""
    row = (
        "mlcommons/inference_results_v5.0/closed/X/results/Y/llama3.1-405b/Server,"
        "Llama-3.1-405B-Instruct,FP8,H200,8,TP8,n/a,n/a,n/a,throughput,291.37,tokens/s,"
        '"TensorRT-LLM; constraints p99 TTFT<=6000ms, p99 TPOT<=175ms",server'
    )
    plan = pr.build_plan(rows_of(tmp_path, row), "achievable")
    (case,) = plan.load.values()
    assert case.issued == 8313 and case.replicas == 1
    est = rp.estimate(case)
    assert est.rate_per_s * rp.SERVER_DURATION_S < 2000  # ten minutes of arrivals: far fewer
    assert rp.server_requests(case, est) == 8313
    split = dataclasses.replace(case, tensor=4, replicas=2)  # two instances share the run
    assert rp.server_requests(split, est) == 4156  # 8,313 / 2, whole requests
    other = pr.build_plan(
        rows_of(
            tmp_path,
            SERVER.format(gpu="H100 SXM", metric="throughput_total", value=9000, unit="tok/s"),
        ),
        "achievable",
    )
    assert all(c.issued == 0 for c in other.load.values())  # not an MLPerf dataset's row


def test_an_mlperf_row_runs_tensorrt_llm_under_the_harness_scheduler(tmp_path):
    """MLPerf Inference runs TensorRT-LLM through NVIDIA's harness, which chunks prompts
    (``enable_chunked_context``); the engine's own default is whole prompts (the admission
    stays GUARANTEED_NO_EVICT: engines/trtllm.yaml says why). The same row without MLPerf in
    its text keeps the defaults, and a profile that states no harness (vLLM) keeps its own
    scheduler on an MLPerf row."""
    mlperf = (
        "mlcommons/inference_results_v5.0/closed/NVIDIA/results/x,"
        "Llama-3.1-405B-Instruct (MLPerf v5.0 llama3.1-405b Server),FP8,H200,8,TP8,n/a,"
        "{L},{O},throughput,291.37,tokens/s,{engine},server"
    )
    lengths = dict(L="9428.64 mean (sd 4066.94)", O="647.5 mean (sd 260.8)")
    path = tmp_path / "rows.csv"
    lines = [
        mlperf.format(engine="TensorRT-LLM", **lengths),
        mlperf.format(engine="TensorRT-LLM", **lengths)
        .replace("mlcommons/inference_results_v5.0/closed/NVIDIA/results/x", "lab")
        .replace(" (MLPerf v5.0 llama3.1-405b Server)", ""),
        mlperf.format(engine="vLLM", **lengths),
    ]
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    harness, own, vllm = load_measured(path)
    assert harness.benchmark and own.benchmark is None
    base = preset("achievable")
    found = pr.row_engine(harness, base)
    assert (found.config.prefill, found.config.admission) == ("chunked", "no_evict")
    assert "mlperf harness" in found.label
    trt = load_engine("trtllm")
    assert pr.row_engine(own, base).config.prefill == trt.prefill == "whole"
    v = pr.row_engine(vllm, base)
    assert (v.config.prefill, v.config.admission) == (v.profile.prefill, v.profile.admission)
    assert "harness" not in v.label


def test_deepseek_r1_interactive_under_the_mlperf_harness_speculates(tmp_path):
    """Every DeepSeek-R1 Interactive configuration of NVIDIA's MLPerf harness read runs its MTP
    head (engines/trtllm.yaml), so a row of it that does not say so is out of scope as one
    that does, under every preset (the run speculated whatever the model assumes): still
    predicted, left out of summaries and fits. Its Server rows do not speculate."""
    line = (
        "mlcommons/inference_results_v6.1/closed/NVIDIA/results/x,"
        "DeepSeek-R1 (MLPerf v6.1 deepseek-r1 {s}),FP4,GB300,72,n/a,n/a,"
        "804,3886,throughput,250000,tokens/s,TensorRT-LLM,"
    )
    path = tmp_path / "rows.csv"
    path.write_text(
        HEADER + "\n" + "\n".join(line.format(s=s) for s in ("Interactive", "Server")) + "\n"
    )
    interactive, server = load_measured(path)
    assert interactive.status.startswith(
        "out of scope: uses speculative decoding / multi-token prediction"
    )
    assert "MTP" in interactive.status and "MLPerf's harness" in interactive.status
    assert server.ok
    # predicted all the same, as a row stating MTP is: an engine under the achievable preset,
    # the ideal one under the bounds'
    for name in ("achievable", "paper"):
        found = pr.row_engine(interactive, preset(name))
        assert isinstance(found, pr.RowEngine)
    trt = load_engine("trtllm")
    assert trt.harness_speculative("mlperf", None, "DeepSeek-R1", "interactive") == "MTP"
    assert trt.harness_speculative("mlperf", None, "DeepSeek-R1", "server") is None
    assert trt.harness_speculative(None, None, "DeepSeek-R1", "interactive") is None


def test_an_mlperf_interactive_run_reaches_its_instances_in_turn(tmp_path):
    """NVIDIA's harness sends an Interactive run's queries to the engine instances in turn (its
    default traffic distribution outside Server, engines/trtllm.yaml): each of the 8 instances
    receives every 8th query, Erlang gaps whose spread is 1/sqrt(8) of the Poisson stream's; a
    Server run's instances, and MLPerf v5.0's Interactive ones (its harness sent each query to
    the instance with the fewest in flight, not modelled), each take a random share. A harness
    entry naming another router is one line naming the field."""
    from inference_econ.errors import SpecError
    from inference_econ.specs.engine import profile_from_dict

    line = (
        "mlcommons/inference_results_v5.1/closed/NVIDIA/results/x,"
        "Llama-2-70B-chat (MLPerf v5.1 llama2-70b {s}),FP4,B200,8,TP1 x8,n/a,"
        "222.33 mean (sd 171.5),274.3,throughput,60000,tokens/s,TensorRT-LLM,"
    )
    path = tmp_path / "rows.csv"
    older = line.replace("v5.1", "v5.0")
    path.write_text(
        HEADER
        + "\n"
        + "\n".join(
            (line.format(s="Interactive"), line.format(s="Server"), older.format(s="Interactive"))
        )
        + "\n"
    )
    interactive, server, earlier = load_measured(path)
    assert (interactive.benchmark_round, earlier.benchmark_round) == ("5.1", "5.0")
    base = preset("achievable")
    turn, share = pr.row_engine(interactive, base), pr.row_engine(server, base)
    assert (turn.config.router, share.config.router) == ("round_robin", "random")
    assert pr.row_engine(earlier, base).config.router == "random"
    assert "queries to the instances in turn" in turn.label and "in turn" not in share.label
    plan = pr.build_plan([interactive], "achievable")
    (case,) = plan.load.values()
    assert case.replicas == 8 and case.config.router == "round_robin"
    t = rp.traffic_of(case, 4000).at_rate(8.0)
    gaps = np.diff(t.stream(8, in_turn=True).arrival_s)
    assert gaps.mean() == pytest.approx(1.0, rel=0.03)  # 8 queries/s over 8 instances
    assert gaps.std() / gaps.mean() == pytest.approx(8**-0.5, rel=0.05)
    poisson = np.diff(t.stream(8).arrival_s)
    assert poisson.std() / poisson.mean() == pytest.approx(1.0, rel=0.05)
    bad = {"name": "x", "harnesses": {"mlperf": [{"router": "fastest"}]}}
    with pytest.raises(SpecError, match=r"harnesses\.mlperf\[0\]\.router"):
        profile_from_dict(bad, "x.yaml")
    late = {"name": "x", "harnesses": {"mlperf": [{"rounds": "after five", "prefill": "whole"}]}}
    with pytest.raises(SpecError, match=r"harnesses\.mlperf\[0\]\.rounds"):
        profile_from_dict(late, "x.yaml")


def test_a_row_runs_the_runtime_its_harness_or_version_names(tmp_path):
    """The host overheads a step waits for follow the runtime (docs/model.md §F5): NVIDIA's
    MLPerf harness builds TensorRT engines (its C++ executor waits for the host work; from
    v5.1 on, whose code was read, it captures no CUDA graphs) for Llama 3.1 405B and runs DeepSeek-R1 on the PyTorch backend
    (its overlap scheduler hides it), whatever the round; outside a harness TensorRT-LLM 1.x
    runs the PyTorch backend and 0.x TensorRT engines, and a row stating no version runs a
    runtime not known: charged."""
    mlperf = (
        "mlcommons/inference_results_v5.1/closed/NVIDIA/results/x,"
        "{model} (MLPerf v5.1 {bench} Server),FP8,B200,8,TP8,n/a,"
        "2000,600,throughput,3000,tokens/s,{engine},server"
    )
    l405 = dict(model="Llama-3.1-405B-Instruct", bench="llama3.1-405b")
    r1 = dict(model="DeepSeek-R1", bench="deepseek-r1")
    lab = "lab,Llama-3.1-405B-Instruct,FP8,B200,8,TP8,n/a,2000,600,throughput,3000,tokens/s,{engine},server"
    lines = [
        mlperf.format(engine="TensorRT-LLM", **l405),
        mlperf.format(engine="TensorRT-LLM", **r1),
        lab.format(engine="TensorRT-LLM"),
        lab.format(engine="TensorRT-LLM 1.0"),
        lab.format(engine="TensorRT-LLM 0.17"),
    ]
    path = tmp_path / "rows.csv"
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    base = preset("achievable")
    found = [pr.row_engine(r, base) for r in load_measured(path)]
    exposed = [f.profile.host_overhead_exposed for f in found]
    assert exposed == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert [f.profile.name for f in found] == ["trtllm"] * 4 + ["trtllm-0"]
    assert "host overheads charged" in found[0].label and "mlperf harness" in found[0].label
    assert "host overheads hidden" in found[1].label
    assert found[2].label == "trtllm (version not stated), host overheads charged"
    assert (found[3].label, found[4].label) == (
        "trtllm, each operation priced from the measured kernel tables",
        "trtllm-0",
    )
    # only the row stating 1.x on a part with tables reads them (the tables time 1.x kernels)
    assert [f.kernel_tables for f in found] == [False, False, False, True, False]
    # the same profile object for every row of one runtime: one set of step models
    again = pr.row_engine(load_measured(path)[0], base)
    assert again.profile is found[0].profile
    # the TensorRT engines the harness builds set their memory aside as a 0.x build does
    # (docs/model.md §F8), the PyTorch backend as the profile's measured terms say
    trt = load_engine("trtllm")
    memory = ("activation_workspace_bytes_per_gpu", "activation_buffers_per_token")
    assert [getattr(found[0].profile, k) for k in memory] == [2e9, 0.0]
    assert [getattr(found[1].profile, k) for k in memory] == [3758096384, 11.0]
    assert "2 GB a GPU set aside before the KV cache" in found[0].label
    # the C++ executor runs its engines without CUDA graphs (from v5.1, whose code was read);
    # the PyTorch backend captures the profile's
    graphs = [f.profile.cuda_graph_max_batch for f in found[:3]]
    assert graphs == [0, trt.cuda_graph_max_batch, trt.cuda_graph_max_batch]
    assert "no CUDA graphs" in found[0].label and "CUDA graphs" not in found[1].label
    # everything else of the profile is the engine's own
    own = dict(activation_buffers_per_token=11.0, moe_activation_buffers_per_token=22.0)
    own.update(cuda_graph_max_batch=trt.cuda_graph_max_batch)
    assert (
        found[0].profile.replace(
            host_overhead_exposed=0.0, activation_workspace_bytes_per_gpu=3758096384, **own
        )
        == trt
    )


def test_whole_prompts_wait_for_room_in_the_step_where_chunks_do_not():
    """Without chunked context a prompt joins a step only whole, within the token budget with
    the decoding requests: a 2,000-token prompt behind 100 decoding requests under a budget of
    2,048 waits until at most 48 of them are left (head-of-line blocking, the TTFT tail of long
    prompts); chunked, it starts on the next step."""
    setting = make_setting("Llama 3.1 8B", "H100-SXM", weight_bits=8, kv_cache_bits=8)
    n = 100
    prompt = np.r_[np.full(n, 10), 2000]
    output = np.r_[np.linspace(20, 400, n).round(), 5]
    arrivals = Arrivals(np.r_[np.zeros(n), 0.5], prompt, output)
    ttft = {}
    for mode in ("whole", "chunked"):
        inst = build_instance(setting, 1, EngineConfig(256, 2048, "no_evict", mode))
        rec = simulate(inst, arrivals)
        ttft[mode] = rec.first_token_s[-1] - 0.5
        if mode == "whole":  # it went once at most 48 decoders were left
            left = np.sum(
                (rec.first_token_s[:n] < rec.first_token_s[-1])
                & (rec.finish_s[:n] > rec.first_token_s[-1])
            )
            assert left <= 48
    assert ttft["chunked"] < 0.1 < ttft["whole"]


def test_an_mlperf_row_on_rocm_runs_vllm_in_windows_of_decode_steps(tmp_path):
    """AMD's MLPerf harness runs vLLM V0 with 9 decode steps per schedule and whole prompts
    (engines/vllm-rocm.yaml cites its configs): an MI300X MLPerf row with a V0-capable or
    unstated vLLM version runs so, one on vLLM 0.22 (no V0 engine left) keeps V1's own
    scheduler, and an arrival's TTFT includes the window it waits for."""
    row = (
        "mlcommons/inference_results_v5.1/closed/AMD/results/x,"
        "Llama-2-70B-chat (MLPerf v5.1 llama2-70b-99 Server),FP8,MI300X,8,TP1 x8,n/a,"
        "1000,300,throughput,24000,tokens/s,{engine},server"
    )
    path = tmp_path / "rows.csv"
    engines = ("vLLM", "vLLM 0.9.0.2.dev108+g71faa1880", "vLLM 0.22.0")
    path.write_text(HEADER + "\n" + "\n".join(row.format(engine=e) for e in engines) + "\n")
    base = preset("achievable")
    unstated, old, new = (pr.row_engine(r, base) for r in load_measured(path))
    for found in (unstated, old):
        assert found.profile.name == "vllm-rocm"
        assert (found.config.prefill, found.config.scheduler_steps) == ("separate", 9)
        assert "9 decode steps per schedule" in found.label
    assert (new.config.prefill, new.config.scheduler_steps) == ("chunked", 1)
    assert "harness" not in new.label


#: A disaggregated Server row of Llama 3.1 8B: one prefill GPU and one decode GPU, or its
#: decode GPU alone (the row says no more).
DISAGGREGATED = (
    "s,Llama-3.1-8B,FP8,H100 SXM,2,prefill: TP1 x1; decode: TP1 x1,n/a,1000,200,{metric},"
    '{value},{unit},"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<={tpot}ms",server'
)
DECODE_ONLY = (
    "s,Llama-3.1-8B,FP8,H100 SXM,1,TP1,n/a,1000,200,{metric},{value},{unit} per decode GPU,"
    '"TensorRT-LLM, disaggregated; constraints p99 TTFT<=2000ms, p99 TPOT<={tpot}ms",server'
)


def test_a_disaggregated_row_decodes_within_its_tpot_limit(tmp_path, small_runs):
    """The decode GPUs of a disaggregated Server row whose prefill pool is not stated are
    replayed with each first token handed over at its arrival: their TPOT runs from there, so
    the load search holds the row's TPOT limit (a tighter limit serves less; before, no
    prefilled request had a TPOT and every load passed, the throughput being the saturated one
    whatever the limit), and the TTFT, the prefill pool's, is out of scope, not a guess."""
    row = lambda metric, value, unit, tpot: DECODE_ONLY.format(  # noqa: E731
        metric=metric, value=value, unit=unit, tpot=tpot
    )
    rows = rows_of(
        tmp_path,
        row("throughput_total", 9000, "tok/s", 100),
        row("throughput_total", 9000, "tok/s", 10),
        row("p99_TPOT", 50, "ms", 100),
        row("p99_TPOT", 8, "ms", 10),
        row("mean_TTFT", 300, "ms", 100),
    )
    assert all(r.disaggregated and r.decode_gpus == 1 and r.prefill_layout is None for r in rows)
    predicted, _, status, _ = comparison.predict_rows(rows, "achievable")
    assert status[:4] == ["ok"] * 4
    loose, tight, p99_loose, p99_tight = predicted[:4]
    assert tight < 0.9 * loose  # the TPOT limit binds on the decode GPUs
    assert 0.0 < p99_loose <= 0.100 and 0.0 < p99_tight <= 0.010
    assert status[4].startswith("out of scope: the TTFT of a disaggregated row")
    assert math.isnan(predicted[4])


def test_a_disaggregated_row_with_its_prefill_pool_is_replayed_through_it(tmp_path, small_runs):
    """A row that states its prefill instances is replayed through them, as ``simulate``
    serves a disaggregated deployment: each prompt is prefilled on the prefill GPU (its first
    token), its KV cache sent to the decode GPU. Its TTFT is then predicted and is never
    below the prompt's own prefill on the prefill instance; its TPOT meets the limit."""
    row = lambda metric, value, unit: DISAGGREGATED.format(  # noqa: E731
        metric=metric, value=value, unit=unit, tpot=100
    )
    rows = rows_of(
        tmp_path,
        row("mean_TTFT", 300, "ms"),
        row("p99_TPOT", 50, "ms"),
        row("throughput_total", 9000, "tok/s"),
    )
    assert rows[0].prefill_layout.label() == "TP1" and rows[0].decode_gpus == 1
    predicted, _, status, _ = comparison.predict_rows(rows, "achievable")
    assert status == ["ok"] * 3
    ttft, p99_tpot, throughput = predicted
    alone = lone_prompt_prefill_s()
    assert ttft >= alone > 0 and 0.0 < p99_tpot <= 0.100 and throughput > 0


def test_a_prefill_pool_that_cannot_hold_the_model_leaves_only_its_row_infeasible(
    tmp_path, small_runs
):
    """Llama 3.1 405B's 405.8 GB of weights on one H100 prefill instance: that row is
    infeasible, saying so, and the file's other rows are predicted (before, the error
    stopped the whole file; the runs of 300 requests of the test before, whose row the
    second is)."""
    rows = rows_of(
        tmp_path,
        "s,Llama-3.1-405B,FP8,H100 SXM,9,prefill: TP1 x1; decode: TP8 x1,n/a,1000,200,"
        'mean_TTFT,900,ms,"TensorRT-LLM; constraints p99 TTFT<=6000ms, p99 TPOT<=175ms",server',
        DISAGGREGATED.format(metric="p99_TPOT", value=50, unit="ms", tpot=100),
    )
    predicted, _, status, _ = comparison.predict_rows(rows, "achievable")
    assert status[0].startswith("infeasible: its prefill instances: Llama 3.1 405B")
    assert "leaves no room for a KV cache on 1 x H100-SXM" in status[0]
    assert math.isnan(predicted[0]) and status[1] == "ok" and 0 < predicted[1] <= 0.100


def test_loadgen_throughput_of_a_run_by_hand():
    """LoadGen's throughput: every completed request's output over the span from the first
    arrival to the last completion (``result_completed_tokens_per_second`` over
    ``final_query_all_samples_done_time``). Requests arriving at 1, 2, 3 and 4 s with 100,
    300, 50 and 999 output tokens, finishing at 5, 11 and 6 s (the last never): 450 tokens
    over 10 s, 45 tok/s. A run of 6 requests adds 3 arrival gaps of 1 s to its middle (the
    engine serving faster than they come): 6 x 150 tokens over 13 s; a run of one, 2 s shorter,
    150 over 8 s; no run ends before its drain, the last admission (4 s) to the last completion
    (11 s). An engine serving 50 tok/s paces its middle at a request's 150 tokens, 3 s."""
    arrivals = Arrivals(
        np.array([1.0, 2.0, 3.0, 4.0]),
        np.array([10, 10, 10, 10]),
        np.array([100, 300, 50, 999]),
    )
    record = dataclasses.make_dataclass("Record", ["arrivals", "finish_s", "admitted_s"])(
        arrivals, np.array([5.0, 11.0, 6.0, np.nan]), np.array([1.0, 2.0, 3.0, 4.0])
    )
    span = rp.RunSpan.of(record, served_tokens_per_s=300.0)  # kept up: the gap sets the pace
    assert rp.RunSpan.of(record, served_tokens_per_s=50.0).per_request_s == 3.0  # 150 / 50
    assert (span.requests, span.span_s, span.per_request_s, span.drain_s) == (3, 10.0, 1.0, 7.0)
    assert span.tokens_per_s() == pytest.approx(45.0, rel=1e-12)
    assert span.tokens_per_s(6) == pytest.approx(900.0 / 13.0, rel=1e-12)
    assert span.tokens_per_s(1) == pytest.approx(150.0 / 8.0, rel=1e-12)
    assert span.tokens_per_s(-5) == pytest.approx(-750.0 / 7.0, rel=1e-12)  # the drain floor


def test_an_mlperf_rows_throughput_counts_its_runs_drain(tmp_path, small_runs):
    """An MLPerf row's throughput is LoadGen's, to the last completion: the same Offline and
    Server rows of Llama 2 70B (OpenOrca lengths) on 8 H200 run as TensorRT-LLM, once as
    MLPerf rows and once as plain rows: the MLPerf Offline row is simulated for LoadGen's
    1.1 x 600 s of samples (capped here) and comes out below the steady rate, never above;
    the Server row's latencies do not move."""
    mlperf = (
        "mlcommons/inference_results_v5.0/closed/X/results/Y/llama2-70b-99/{s},"
        "Llama-2-70B-chat,FP8,H200,8,TP1 x8,n/a,n/a,n/a,throughput,30000,tokens/s,"
        '"TensorRT-LLM; constraints p99 TTFT<=2000ms, p99 TPOT<=200ms",{s}'
    )
    plain = mlperf.replace("mlcommons/inference_results_v5.0/closed/X/results/Y/", "z/").replace(
        "n/a,n/a,throughput", "222 mean (sd 172),294 mean (sd 232),throughput"
    )
    rows = rows_of(
        tmp_path,
        mlperf.format(s="offline"),
        plain.format(s="offline"),
        mlperf.format(s="server"),
        plain.format(s="server"),
    )
    plan = pr.build_plan(rows, "achievable")
    assert rows[0].benchmark == "llama2-70b" and rows[1].benchmark is None
    assert (0, 0) in plan.load and (1, 0) not in plan.load  # simulated / steady closed form
    offline = plan.load[(0, 0)]
    assert offline.whole_run and offline.replicas == 8
    inst = rp.instance(offline)
    n = rp.offline_requests(offline, inst)
    assert n >= offline.issued / 8  # at least its share of the 24,576 samples
    whole = rp.replay(offline).throughput
    steady = rp.replay(dataclasses.replace(offline, whole_run=False)).throughput
    assert whole <= steady and whole > 0.8 * steady
    # the shortcut: a run of 1,000 extended by its steady middle to 2,000 requests, against
    # the run of 2,000 itself
    from inference_econ.load.simulate import simulate as sim

    def run(n):
        s = rp.traffic_of(offline, n).stream()
        return rp.RunSpan.of(sim(inst, Arrivals(np.zeros(n), s.prompt_tokens, s.output_tokens)))

    assert run(1000).tokens_per_s(2000) == pytest.approx(run(2000).tokens_per_s(), rel=0.02)
    server, flat = plan.load[(2, 0)], plan.load[(3, 0)]
    assert server.whole_run and not flat.whole_run
    a, b = rp.replay(server), rp.replay(dataclasses.replace(server, whole_run=False))
    assert (a.tpot, a.ttft_p99) == (b.tpot, b.ttft_p99)
    assert a.throughput <= b.throughput * 1.02  # fill and drain: never much above the window


def test_an_mlperf_run_issues_the_samples_its_loadgen_log_counts(tmp_path):
    """LoadGen issues at least a configuration's min_query_count whatever the run's rate, and
    the newer MLPerf file states each run's count from its own mlperf_log_detail.txt
    (``generated_query_count`` x ``generated_samples_per_query``, the ``requests`` column):
    Cisco's v6.0 DeepSeek-R1 Offline run on 8 B300 issued 105,312 samples (its configuration's
    min_query_count, 24 times the dataset's 4,388), so its replay is one DEP8 instance serving
    all of them, where LoadGen's rule at the estimated rate alone gives far fewer. Every stated
    count is at least its benchmark's performance sample count."""
    newer = DATA / "benchmarks_test_mlperf_newer.csv"
    lines = newer.read_text().splitlines()
    row = next(
        x for x in lines if "Cisco/results/C880A_M8_B300_288GBx8_TRT/deepseek-r1/Offline" in x
    )
    assert row.endswith(",105312")
    path = tmp_path / "rows.csv"
    path.write_text(f"{lines[0]}\n{row}\n")
    stated = pr.build_plan(load_measured(path), "achievable")
    (case,) = stated.load.values()
    assert case.issued == 105312 and case.replicas == 1 and case.whole_run
    assert rp.offline_requests(case, rp.instance(case)) == 105312
    path.write_text(f"{lines[0]}\n{row.removesuffix('105312')}\n")
    (unstated,) = pr.build_plan(load_measured(path), "achievable").load.values()
    assert unstated.issued == 4388  # the dataset's performance sample count
    assert rp.offline_requests(unstated, rp.instance(unstated)) < 105312 / 3
    import pandas as pd

    from inference_econ.measured.mlperf import benchmarks

    table = pd.read_csv(newer, dtype=str, keep_default_na=False)
    given = table[table["requests"] != ""]
    # every v5.1 and v6.0 run, and the 308 of v6.1 whose logs a copy of its results holds
    assert len(given) == 1901 + 308
    name = given["model"].str.extract(r"MLPerf v\S+ (\S+?)(?:-99(?:\.9)?)? ")[0]
    for bench, counts in given.groupby(name):
        assert counts["requests"].astype(int).min() >= benchmarks()[bench].samples, bench
