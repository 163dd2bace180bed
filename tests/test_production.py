"""Serving as it runs in production (docs/model.md §E8-§E11): speculation under load, the
prefix cache, sessions, routers, pools on different GPUs and failures, against closed forms
(the run's cycle times summed step by step, Che's LRU approximation, Pollaczek-Khinchine, the
binomial) and the production features' own acceptance figures."""

import math

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.errors import SpecError
from inference_econ.load.arrivals import Arrivals, load_trace, make_traffic
from inference_econ.load.deployment import Deployment, simulate_deployment
from inference_econ.load.engine import EngineConfig, build_instance
from inference_econ.load.failures import Failures, expected_capacity
from inference_econ.load.prefix_cache import BLOCK_TOKENS, che_check
from inference_econ.load.routing import Router
from inference_econ.load.simulate import simulate, simulate_group
from inference_econ.load.targets import Targets
from inference_econ.optimise.candidates import _options
from inference_econ.serving.setting import make_setting


@pytest.fixture(scope="module")
def llama8b():
    return make_setting("Llama 3 8B", "H100")


@pytest.fixture(scope="module")
def eagle():
    return make_setting(
        "Llama 3 8B", "H100", draft_heads="eagle", acceptance=0.8, max_draft_tokens=4
    )


# --- speculation under load (§E8) ------------------------------------------------------------
def test_light_load_tpot_is_the_cycle_time_over_its_tokens(eagle):
    """One request alone: every decode step is the fixed cycle (verification of 4 tokens and 3
    head passes) at contexts growing by E = 1 + 0.8 + 0.8² + 0.8³ tokens a step, and the
    answer takes ceil(199 / E) steps: the run's closed form equals the steps summed one by
    one."""
    inst = build_instance(eagle, 1, EngineConfig(), 600)
    d = inst.draft
    c = d.fixed_cycle
    assert c.verify_tokens == 4 and c.expected_tokens == pytest.approx(2.952)
    rec = simulate(inst, Arrivals(np.zeros(1), np.array([500]), np.array([200])))
    E, steps = c.expected_tokens, math.ceil(199 / c.expected_tokens)
    by_hand = sum(
        d.cycle_s(inst.table, 1, float(inst.positions(500 + E * j)), 500 + E * j, c)
        for j in range(steps)
    )
    assert rec.finish_s[0] - rec.first_token_s[0] == pytest.approx(by_hand, rel=1e-9)
    assert rec.spec_steps == rec.decode_steps == steps


def test_speculation_pays_at_low_load_and_never_beyond_the_switch_off_batch(llama8b, eagle):
    config = EngineConfig(speculation_max_batch=8)
    assert all(
        build_instance(eagle, 1, config, 600).draft.cycle_at(None, D, 0.0) is None
        for D in (9, 64, 256)
    )
    light = make_traffic(0.5, "500", "200", requests=300, seed=0)
    plain = simulate_deployment(llama8b, Deployment(1), light, config=config)
    spec = simulate_deployment(eagle, Deployment(1), light, config=config)
    assert spec.tpot_s.mean < 0.6 * plain.tpot_s.mean and spec.speculative_step_fraction == 1.0
    heavy = make_traffic(60, "500", "200", requests=1500, seed=0)
    plain = simulate_deployment(llama8b, Deployment(1), heavy, config=config)
    spec = simulate_deployment(eagle, Deployment(1), heavy, config=config)
    assert spec.mean_batch > 8 and spec.speculative_step_fraction < 0.05
    assert spec.tpot_s.mean >= plain.tpot_s.mean * (1 - 1e-3)  # never faster beyond it
    assert spec.output_tokens_per_s <= plain.output_tokens_per_s * (1 + 1e-3)


def test_by_batch_schedule_is_never_slower_than_plain_decoding_at_its_batch(eagle):
    inst = build_instance(eagle, 1, EngineConfig(speculation_schedule="by_batch"), 600)
    q1 = float(inst.positions(600))
    for D in (1, 16, 128, 256):
        c = inst.draft.cycle_at(inst.table, D, q1)
        plain = inst.table.time_s(D, D * q1, D * q1, D)
        if c is not None:
            spec = inst.draft.cycle_s(inst.table, D, D * q1, D * 600.0, c) / c.expected_tokens
            assert spec < plain
    assert inst.draft.cycle_at(inst.table, 1, q1) is not None  # it pays alone


# --- the prefix cache (§E9) ------------------------------------------------------------------
def test_lru_prefix_cache_matches_ches_approximation():
    """200 prefixes of 32 tokens requested with Zipf(0.8) popularity, a cache of 50 of them:
    the hit ratio is Che's approximation for LRU (Che, Tung and Wang 2002), within 0.02."""
    zipf = 1.0 / np.arange(1, 201) ** 0.8
    simulated, che = che_check(zipf, 32, 50, 40000, 10000, seed=1)
    assert simulated == pytest.approx(che, abs=0.02)


def test_shared_system_prompt_hits_in_whole_blocks(llama8b):
    """With room for every prefix, each prompt after the first finds its 1,000-token system
    prompt (62 blocks of 16: 992 tokens) cached: TTFT is then the prefill of the rest."""
    t = make_traffic(2, "200", "20", requests=200, seed=0, shared_prefix_tokens=1000)
    r = simulate_deployment(llama8b, Deployment(1), t)
    assert r.prefix_hit_rate == pytest.approx(1000 // BLOCK_TOKENS * BLOCK_TOKENS / 1200)
    off = simulate_deployment(llama8b, Deployment(1), t, config=EngineConfig(prefix_caching=False))
    assert off.prefix_hit_rate == 0.0 and r.ttft_s.p50 < 0.5 * off.ttft_s.p50


def test_sessions_wait_for_the_answer_before_and_hold_every_turn(llama8b):
    t = make_traffic(
        1, "100", "50", requests=30, seed=0, session_turns=3, think_time_s=2.0
    )  # 10 sessions of 3 turns, and the one a steady state holds between turns (1/3 x 2 x 2)
    s = t.stream()
    own, heads = ~s.sharing.warm, np.isfinite(s.arrival_s)
    assert own.sum() == 30 and (heads & own).sum() == 10 and (heads & ~own).sum() == 1
    assert heads[: heads.sum()].all()  # first turns first, the later ones sent after answers
    last = [i for i in np.flatnonzero(own) if s.sharing.answer_keys[i] is None]
    assert len(last) == 10
    assert all(s.prompt_tokens[i] == 100 + 50 + 100 + 50 + 100 for i in last)  # every turn
    rec = simulate(build_instance(llama8b, 1), s)
    follows = s.sharing.follows
    for i in np.flatnonzero(follows >= 0):
        assert rec.arrivals.arrival_s[follows[i]] >= rec.finish_s[i]
    later = ~heads
    hit = rec.cached_tokens[later].sum() / s.prompt_tokens[later].sum()
    assert hit > 0.4  # the earlier turns are found (whole blocks of them)


# --- routers (§E10) --------------------------------------------------------------------------
def test_random_router_of_two_servers_is_two_md1_queues_and_jsq_waits_less(llama8b):
    """One request at a time per instance, one-token answers: a random router splits Poisson
    arrivals into two M/D/1 queues at rho = 0.5 (Pollaczek-Khinchine); least-outstanding
    waits less."""
    inst = build_instance(llama8b, 1, EngineConfig(max_batch_requests=1), 1000)
    service = inst.table.time_s(1000, 0.0, 1000 * float(inst.positions(999 / 2)))
    rate = 2 * 0.5 / service
    s = make_traffic(rate, "1000", "1", requests=4000, seed=0).stream(2, 2)
    wait = {}
    for policy in ("random", "least_outstanding"):
        rec = simulate_group([inst, inst], s, Router(policy, 2, None, 0))
        wait[policy] = (rec.first_token_s - s.arrival_s - service).mean()
    theory = (rate / 2) * service**2 / (2 * (1 - 0.5))
    assert wait["random"] == pytest.approx(theory, rel=0.08)
    assert wait["least_outstanding"] < 0.75 * wait["random"]


def test_an_instance_served_in_turn_waits_as_a_round_robin_group_does(llama8b):
    """One instance of two that a round robin serves in turn receives every second request
    (Erlang-2 gaps, ``Traffic.stream(..., in_turn=True)``): simulated alone it waits as the two
    simulated together behind ``round_robin`` do, well under the M/D/1 wait of a random share
    (about 0.18 S against 0.5 S at rho = 0.5, docs/model.md §E10)."""
    inst = build_instance(llama8b, 1, EngineConfig(max_batch_requests=1), 1000)
    service = inst.table.time_s(1000, 0.0, 1000 * float(inst.positions(999 / 2)))
    rate = 2 * 0.5 / service
    traffic = make_traffic(rate, "1000", "1", requests=4000, seed=0)
    pair = traffic.stream(2, 2)
    rec = simulate_group([inst, inst], pair, Router("round_robin", 2, None, 0))
    group = (rec.first_token_s - pair.arrival_s - service).mean()
    alone = traffic.stream(2, in_turn=True)
    assert len(alone) == 4000 and np.mean(np.diff(alone.arrival_s)) == pytest.approx(
        2 / rate, rel=0.03
    )
    one = simulate(inst, alone)
    wait = (one.first_token_s - alone.arrival_s - service).mean()
    assert wait == pytest.approx(group, rel=0.1)
    assert 0.14 * service < wait < 0.22 * service  # 0.5 S for a random share


def test_a_warm_start_puts_each_history_where_its_next_turn_is_routed(llama8b):
    """Sessions under way at the start of a run of two instances: a prefix-aware router sends
    a session's next turn where its history is cached (nine in ten found: its bounded loads
    send the rest elsewhere); a random one sends it to either instance, its history on the
    one that served its last turn (about half found)."""
    t = make_traffic(4, "500", "100", requests=400, seed=0, session_turns=4, think_time_s=10.0)
    s = t.stream(2, 2)
    inst = build_instance(llama8b, 1)
    heads = np.flatnonzero(s.sharing.warm & np.isfinite(s.arrival_s))
    history = np.array([sum(n for _, n in s.sharing.segments[i][:-1]) for i in heads])
    found = {}
    for policy in ("prefix_aware", "random"):
        rec = simulate_group([inst, inst], s, Router(policy, 2, s.sharing.route_keys, 0))
        found[policy] = np.mean(rec.cached_tokens[heads] >= history - BLOCK_TOKENS)
    assert len(heads) == 30 and found["prefix_aware"] >= 0.8 and 0.3 < found["random"] < 0.7


@pytest.mark.parametrize("router, said", [("random", True), ("prefix_aware", False)])
def test_a_run_of_sessions_says_when_its_router_does_not_follow_them(router, said):
    from click.testing import CliRunner

    from inference_econ.cli import main

    args = ["simulate", "Llama 3.1 8B", "-H", "H100", "--gpus", "1", "--instances", "2"]
    args += ["--rate", "2", "--prompt-tokens", "300", "--output-tokens", "50", "--turns", "3"]
    args += ["--think-time", "2", "--router", router, "--requests", "60", "-q"]
    out = CliRunner().invoke(main, args).output
    assert "a random router" in out if said else "a prefix aware router" in out
    assert ("--router prefix_aware keeps a session where its history is" in out) == said


def test_prefix_aware_routing_hits_no_less_than_random_on_a_session_trace(llama8b, tmp_path):
    rng = np.random.default_rng(0)
    lines, t = (
        ["arrival_time_s,prompt_tokens,output_tokens,session_id,prefix_id,prefix_tokens"],
        0.0,
    )
    for s in range(120):
        prompt, t0 = 1500 + int(rng.integers(50, 300)), t
        for turn in range(4):
            out = int(rng.integers(50, 200))
            lines.append(f"{t0 + 3 * turn:.3f},{prompt},{out},{s},{s % 3},1500")
            prompt += out + int(rng.integers(20, 200))
        t += 0.25
    path = tmp_path / "sessions.csv"
    path.write_text("\n".join(lines) + "\n")
    trace = load_trace(path)
    assert trace.shares and trace.session_id is not None
    hit = {}
    for router in ("random", "prefix_aware"):
        r = ie.simulate_load(llama8b, gpus=1, instances=4, trace=str(path), router=router)
        assert r.instances_simulated == (1 if router == "random" else 4)
        hit[router] = r.prefix_hit_rate
    assert hit["prefix_aware"] >= hit["random"] + 0.05


# --- pools on different GPUs (§E5) -----------------------------------------------------------
def test_mixed_gpu_pools_cost_what_their_parts_cost(llama8b):
    r = ie.simulate_load(
        llama8b,
        gpus=1,
        instances=3,
        prefill_gpus=1,
        prefill_instances=2,
        prefill_hardware="H200",
        arrival_rate_per_s=4,
        input_lengths="2000",
        output_lengths="100",
        requests=400,
    )
    h100 = llama8b.gpu.price_usd_per_hour
    h200 = make_setting("Llama 3 8B", "H200").gpu.price_usd_per_hour
    assert h100 != h200 and r.usd_per_hour == pytest.approx(3 * h100 + 2 * h200)
    assert "H200" in r.hardware and "H100" in r.hardware
    # the deployment keeps up: its dollars an hour over the output tokens the offered load
    # brings, 4 req/s x 100 tokens
    assert r.stable
    # what it was computed with names both pools' GPUs (it had named the decode GPU alone)
    assert r.metadata()["pools_hardware"] == "H200-SXM (prefill) + H100-SXM (decode)"
    assert r.usd_per_m_output_tokens_all_in == pytest.approx(
        1e6 * r.usd_per_hour / 3600 / (4 * 100), rel=1e-9
    )
    # the input and output prices split those dollars: r·input + output is the all-in price
    assert (
        r.input_tokens_per_output_token * r.usd_per_m_input_tokens + r.usd_per_m_output_tokens
    ) == pytest.approx(r.usd_per_m_output_tokens_all_in, rel=1e-9)


def test_capacity_pairs_the_cheapest_pools_across_gpus(llama8b):
    other = make_setting("Llama 3 8B", "H200")
    row = dict(excluded=False, speculation="none", note="", max_rate_per_instance=5.0)
    rows = [
        dict(row, hardware="H100-SXM", pool="prefill", gpus_per_instance=1, instances=4,
             gpus=4, usd_per_hour=9.0, setting=llama8b),
        dict(row, hardware="H200-SXM", pool="prefill", gpus_per_instance=1, instances=2,
             gpus=2, usd_per_hour=6.0, setting=other),
        dict(row, hardware="H100-SXM", pool="decode", gpus_per_instance=1, instances=2,
             gpus=2, usd_per_hour=4.0, setting=llama8b),
        dict(row, hardware="H200-SXM", pool="decode", gpus_per_instance=1, instances=2,
             gpus=2, usd_per_hour=6.0, setting=other),
    ]  # fmt: skip
    cost, _, setting, d = _options(rows, mixed=True)[0]
    assert cost == 10.0 and setting is llama8b and d.prefill_setting is other
    assert _options(rows)[0][0] == 12.0  # the same GPU for both pools: H200's 6 + 6


# --- failures (§E11) -------------------------------------------------------------------------
def test_failure_model_closed_forms():
    f = Failures(50_000.0, 24.0)
    lam = 8 / 50_000.0
    assert f.unavailability(8) == pytest.approx(lam * 24 / (1 + lam * 24))
    u = f.unavailability(8)
    assert f.more_down_than(1, 10, 8) == pytest.approx(1 - (1 - u) ** 10 - 10 * u * (1 - u) ** 9)
    mean, _, _ = expected_capacity([(10, 8, 2.0)], f)
    assert mean == pytest.approx(20.0 * (1 - u))
    with pytest.raises(SpecError, match="repair_hours"):
        Failures(50_000.0, 0.0)


def test_n_plus_one_plan_holds_the_targets_with_one_instance_down(llama8b):
    plan = ie.capacity(
        llama8b,
        sizes=[1],
        arrival_rate_per_s=20,
        input_lengths="1000",
        output_lengths="100",
        slo_ttft_p99_s=1.0,
        slo_tpot_p99_s=0.02,
        requests=400,
        failures=True,
        repair_hours=48,
    )
    red = plan.redundancy
    n1 = red.deployment
    assert n1.instances == plan.deployment.instances + 1 and red.holds
    traffic = make_traffic(20, "1000", "100", requests=400)
    down = simulate_deployment(
        llama8b, Deployment(1, n1.instances - 1), traffic, Targets(1.0, 0.02)
    )
    assert down.meets_targets
    assert red.extra_usd_per_hour == pytest.approx(llama8b.gpu.price_usd_per_hour)
    u = Failures(50_000.0, 48.0).unavailability(1)
    assert red.summary()["instance_unavailability"] == pytest.approx(u)
    assert red.expected_max_rate_per_s == pytest.approx(plan.max_rate_per_s * (1 - u))


def test_a_shared_prefix_named_with_two_lengths_is_refused(tmp_path):
    """One ``prefix_id`` is one cached text: rows giving it 1,500 and 500 tokens had been read
    as the first row's length for all, a hit rate of 0.74 or 0.25 by the rows' order where at
    most half the rows share 1,500 tokens; the trace is refused, naming both lengths."""
    path = tmp_path / "trace.csv"
    rows = [f"{i * 0.5},2000,50,0,{1500 if i % 2 == 0 else 500}" for i in range(40)]
    path.write_text("arrival_time_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n"
                    + "\n".join(rows) + "\n")  # fmt: skip
    with pytest.raises(SpecError, match="prefix_id 0 is 500 tokens in one row and 1,500"):
        load_trace(path)
    path.write_text(path.read_text().replace(",0,500", ",1,500"))  # two prefixes: read
    assert len(load_trace(path).arrival_s) == 40


def _session_trace(path, session, prefix) -> None:
    """40 sessions of 3 turns (a turn 2 s after the one before), named by ``session(s)``, each
    starting with one of 3 system prompts of 1,000 tokens named by ``prefix(s)``."""
    lines = ["arrival_time_s,prompt_tokens,output_tokens,session_id,prefix_id,prefix_tokens"]
    for s in range(40):
        for turn in range(3):
            row = f"{0.3 * s + 2 * turn:.3f},{1200 + 150 * turn},100,{session(s)},{prefix(s)},1000"
            lines.append(row)
    path.write_text("\n".join(lines) + "\n")


def test_a_trace_names_sessions_and_prefixes_by_any_text(llama8b, tmp_path):
    """Real traces name sessions by strings ("s0", UUIDs): every row had been refused
    ("expected a number, got 's0'; none of its 120 trace rows can be read"). Each distinct
    id is numbered in the order it first appears, so the trace runs as its numbered twin."""
    import uuid

    texts, numbers = tmp_path / "texts.csv", tmp_path / "numbers.csv"
    names = [str(uuid.UUID(int=7919 * s + 1)) for s in range(40)]
    _session_trace(texts, lambda s: names[s], lambda s: f"sys-{(s + 2) % 3}")
    _session_trace(numbers, lambda s: s, lambda s: s % 3)  # the order "sys-2" first appears
    a, b = load_trace(texts), load_trace(numbers)
    assert list(a.session_id[:4]) == [0, 1, 2, 3] and list(a.prefix_id[:4]) == [0, 1, 2, 0]
    for column in ("session_id", "prefix_id", "prefix_tokens", "prompt_tokens"):
        assert (getattr(a, column) == getattr(b, column)).all(), column
    run = dict(gpus=1, instances=2, router="prefix_aware")
    hit = [ie.simulate_load(llama8b, trace=str(p), **run).prefix_hit_rate for p in (texts, numbers)]
    assert hit[0] == hit[1] > 0.5
    texts.write_text(texts.read_text().replace("sys-2,1000", "sys-2,900", 1))
    with pytest.raises(SpecError, match="prefix_id 'sys-2' is 900 tokens in one row and 1,000"):
        load_trace(texts)


def test_sessions_that_outgrow_the_deployment_read_as_unstable():
    """A session's later turn is sent only after the answer before it, so an overloaded run's
    last arrivals come after its backlog drained: 20 req/s of 4-turn sessions on one H100
    (served about 11 req/s, p99 TTFT 37 s at 3,000 requests and growing with the run) read as
    kept up and was priced at the offered load. Read at the sessions' starts: unstable (its
    turns, held back by their answers, fall short of its offered pace); at 8 req/s the same
    sessions keep up, and serve it over their window, which closes at the last session start
    (to the last answer, the ebbing sessions had made it 6.7 req/s)."""
    load = dict(gpus=1, session_turns=4, think_time_s=10.0, input_lengths="lognormal:1000:0.6",
                output_lengths="lognormal:200:0.5", requests=3000)  # fmt: skip
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    with pytest.warns(ie.InferenceEconWarning, match="outgrows"):
        over = ie.simulate_load(setting, arrival_rate_per_s=20, **load)
    assert not over.stable and over.falls_behind and over.backlog_growth > 1.0  # short of pace
    assert over.throughput_requests_per_s < 0.6 * 20 and over.ttft_s.p99 > 10
    kept = ie.simulate_load(setting, arrival_rate_per_s=8, **load)
    assert kept.stable and kept.ttft_s.p99 < 1
    assert kept.throughput_requests_per_s == pytest.approx(8, rel=0.1)


def test_sessions_whose_backlog_waits_inside_the_batch_read_as_unstable():
    """An engine with room for a large batch (an H200 with an 8-bit cache) admits an
    overload's backlog, which then waits for its prompts inside the batch: 4-turn sessions at
    261 req/s read as kept up when only requests not yet admitted counted as waiting. A run of
    5,000 requests (two seconds between turns) reads the overload (served 75 req/s; 130 with
    a p99 TTFT of 66 s at 30,000 requests started empty); 80 req/s keeps up. With 1,000
    requests the first half of its starts (2 s) ends before it holds its steady load: it says
    it cannot tell, and a search does not take it as held."""
    setting = make_setting("Llama 3.1 8B", "H200", assumptions="achievable", kv_cache_bits=8)
    load = dict(gpus=1, session_turns=4, think_time_s=2.0, input_lengths="lognormal:200:0.6",
                output_lengths="lognormal:50:0.5")  # fmt: skip
    with pytest.warns(ie.InferenceEconWarning, match="outgrows"):
        over = ie.simulate_load(setting, arrival_rate_per_s=261, requests=5000, **load)
    assert not over.stable and over.throughput_requests_per_s < 0.6 * 261
    assert ie.simulate_load(setting, arrival_rate_per_s=80, requests=5000, **load).stable
    short = ie.simulate_load(setting, arrival_rate_per_s=261, requests=1000, **load)
    assert short.undecided and any("holds its steady load only" in n for n in short.notes)


def test_sessions_under_way_at_the_start_hold_the_steady_load_from_it():
    """Eight-turn sessions ten seconds apart at 8 req/s on one H100: a steady load holds 70 of
    them between turns (1 a second x 7 pauses x 10 s), about 280 requests, and those being
    answered. A run starts with them (a warm start: each at a turn drawn evenly, sent a
    pause's rest later, its history in the cache): 200 requests hold less than half of them
    and say so, and 1,000 read the overload (served 5.6 req/s), where a run starting empty
    needed about 1,800 to hold its sessions and read as kept up below that."""
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    load = dict(gpus=1, session_turns=8, think_time_s=10.0, input_lengths="lognormal:1000:0.6",
                output_lengths="lognormal:200:0.5")  # fmt: skip
    traffic = make_traffic(8, "lognormal:1000:0.6", "lognormal:200:0.5", requests=1000,
                           session_turns=8, think_time_s=10.0)  # fmt: skip
    s = traffic.stream()
    warm = s.sharing.warm
    heads = warm & np.isfinite(s.arrival_s)
    assert heads.sum() == 70 and s.sharing.warm_share == 1.0
    assert 7.0 < s.arrival_s[heads].mean() < 13.0  # the rest of a 10 s pause
    h = np.flatnonzero(heads)
    turn = [s.sharing.segments[i][-1][0][2] for i in h]  # its new message's turn
    assert set(turn) == set(range(1, 8))  # a later turn, every one, its history in its prompt
    assert all(len(s.sharing.segments[i]) == 2 * k + 1 for i, k in zip(h, turn))
    # with an instance's estimate of a turn's time (5 s here), those being answered too: a
    # third of 105, sent the rest of their answer and then of a pause later
    seeded = traffic.stream(turn_s=lambda rate, prompt, output, context: 5.0)
    both = seeded.sharing.warm & np.isfinite(seeded.arrival_s)
    assert both.sum() == 105 and seeded.sharing.turn_s == 5.0  # 1 a second x 7 x (10 + 5)
    assert 9.0 < seeded.arrival_s[both].mean() < 13.0  # 10 s and a third of 2.5 s
    # the cache holds their histories as a steady run's does (never computed in the run): most
    # are found whole, the rest where the memory the running requests need left them
    rec = simulate(build_instance(setting, 1), s)
    history = np.array([sum(n for _, n in s.sharing.segments[i][:-1]) for i in h])
    assert np.mean(rec.cached_tokens[h] >= history - BLOCK_TOKENS) > 0.6
    short = ie.simulate_load(setting, arrival_rate_per_s=8, requests=200, **load)
    said = [n for n in short.notes if "holds its steady load only" in n]
    assert said and "% of the sessions" in said[0] and "raise requests" in said[0]
    assert short.undecided
    with pytest.warns(ie.InferenceEconWarning, match="outgrows"):
        longer = ie.simulate_load(setting, arrival_rate_per_s=8, requests=1000, **load)
    assert not longer.stable and longer.throughput_requests_per_s < 0.75 * 8


def test_a_turns_time_grows_with_the_load_from_one_request_alone(llama8b):
    """The seconds a warm start takes a turn to spend being answered: its output's steps at
    the step the load settles into (one request alone at no load), longer as the load grows."""
    from inference_econ.load.run import turn_estimate

    inst = build_instance(llama8b, 1)
    one = inst.table.time_s(1, float(inst.held(2600)), float(inst.positions(2600)))
    t = [turn_estimate(inst, rate, 500, 100, 2600) for rate in (0.0, 5.0, 20.0)]
    assert t[0] == pytest.approx(101 * one) and t[0] < t[1] < t[2]


def test_sessions_filling_the_batch_are_not_read_as_an_overload():
    """250 sessions of four turns a minute apart at 1.5 req/s on one H100 keep adding to the
    batch as they start (p99 TTFT 6 s, 4 s at 12,000 requests, when runs started empty):
    counted at the starts, the requests in the system read that as growth (1.37). Started with
    the sessions a steady load holds, the run holds them from the start and reads no growth
    (0.55, serving 1.45 req/s)."""
    load = dict(gpus=1, session_turns=4, think_time_s=60.0, input_lengths="lognormal:500:0.6",
                output_lengths="lognormal:1500:0.3", requests=1000)  # fmt: skip
    setting = make_setting("Llama 3.1 8B", "H100", assumptions="achievable")
    result = ie.simulate_load(setting, arrival_rate_per_s=1.5, **load)
    assert result.stable and result.backlog_growth < 1.0 and result.overloaded_note is None
    assert not any("steady state" in n for n in result.notes)
    assert any("are sessions under way at its start" in n for n in result.notes)  # how many
    assert result.throughput_requests_per_s == pytest.approx(1.5, rel=0.1)
