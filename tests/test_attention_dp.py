"""Attention data parallelism as TensorRT-LLM schedules it (docs/model.md §F9, "Attention DP"):
each rank schedules its own requests, a step lasts as long as its busiest rank's, and the
attention-DP balancing holds prompts until every rank has one. Hand-computed cases on the
step table of an 8-rank DeepSeek-V3 instance."""

import dataclasses

import numpy as np
import pytest
from test_overlap_scheduler import planned_after_each_step  # tests/ is on the path

from inference_econ.errors import SpecError
from inference_econ.load.arrivals import Arrivals
from inference_econ.load.engine import EngineConfig, build_instance, layout_search
from inference_econ.load.simulate import simulate
from inference_econ.model.mixed_step import EngineLayout
from inference_econ.serving.setting import make_setting
from inference_econ.specs.engine import load_engine, profile_from_dict

R = 8  # attention ranks: TP8 with attention DP8
#: 512 requests and 3,456 tokens per step per rank (NVIDIA's MLPerf DeepSeek-R1 Server
#: configuration), whole prompts, no eviction, limits stated for the instance
BASE = EngineConfig(
    R * 512, R * 3456, "no_evict", "whole", per_attention_rank=False, rank_scheduling=True
)


@pytest.fixture(scope="module")
def dsv3():
    setting = make_setting("DeepSeek-V3", "H200", assumptions="achievable", engine="trtllm")
    return setting, layout_search(setting, R)


def _instance(dsv3, **changes):
    setting, search = dsv3
    config = dataclasses.replace(BASE, **changes)
    return build_instance(setting, R, config, layout=EngineLayout(R, 1, float(R)), search=search)


def _run(inst, sent, prompt, output):
    n = len(sent)
    arrivals = Arrivals(
        np.asarray(sent, float),
        np.full(n, prompt, dtype=np.int64),
        np.asarray(np.broadcast_to(output, (n,)), dtype=np.int64),
    )
    return simulate(inst, arrivals)


def _layers(inst) -> float:
    return float(sum(g.layers for g in inst.work.groups))


def _prompt_attention(inst, tokens: int) -> float:
    """Layer-positions a whole prompt of ``tokens`` attends to (the simulator's sum)."""
    return tokens * (_layers(inst) * (tokens - 1) / 2.0)


def test_a_lone_prompt_costs_its_step_what_one_on_every_rank_would(dsv3):
    """One 800-token prompt on one rank of 8: the step waits for that rank, so it costs what 8
    such prompts, one per rank, cost the pooled step: 6,400 prompt tokens in 8 chunks, not
    800 in one. Its time to first token is that step, on the ranked instance alone and with
    all 8 prompts at once (one per rank: the least-loaded rank takes each), and equals the
    pooled engine's step of 8 prompts."""
    ranked, pooled = _instance(dsv3), _instance(dsv3, rank_scheduling=False)
    att = _prompt_attention(ranked, 800)
    step = ranked.table.time_s(R * 800, 0.0, R * att, R, 800)
    lone = _run(ranked, [0.0], 800, 1)
    assert lone.first_token_s[0] == pytest.approx(step, rel=1e-12)
    eight = _run(ranked, [0.0] * R, 800, 1)
    assert eight.first_token_s == pytest.approx(np.full(R, step), rel=1e-12)
    assert _run(pooled, [0.0] * R, 800, 1).first_token_s == pytest.approx(eight.first_token_s)
    # the pooled engine charges the lone prompt its own tokens only: several times less (2.95:
    # 200 picks an expert at 6,400 tokens pad to 237 rows on average, not 256, §F7)
    alone = pooled.table.time_s(800, 0.0, att, 1, 800)
    assert _run(pooled, [0.0], 800, 1).first_token_s[0] == pytest.approx(alone, rel=1e-12)
    assert step > 2.5 * alone


def _decode_s(inst, context_sum: float) -> float:
    """One decode step of ``R`` requests whose contexts sum to ``context_sum``."""
    q = _layers(inst) * context_sum
    return inst.table.time_s(R, q, q, R, 1)


def test_balancing_holds_a_lone_prompt_until_the_timeout(dsv3):
    """TensorRT-LLM's balancing (batching wait 2, timeout 6 steps): 8 prompts of 100 tokens at
    t = 0 go at once (no rank decodes yet), one per rank. A ninth arriving during that step
    lands on rank 0; the other ranks have no prompt and every rank decodes, so it is held: the
    count reaches 1, 2, ..., 5 on five decode steps and 6 on the sixth turn, which releases it.
    Its first token comes after the first step, five decode steps of the 8 requests (contexts
    100 + j each) and its own step beside them; without balancing right after the first step.
    The run takes 5 more steps, the held ones. The scheduler plans each step after the last
    (an overlap scheduler's step more of waiting is tests/test_overlap_scheduler.py's)."""
    P, out = 100, 50
    att = _prompt_attention(_instance(dsv3), P)
    sent = [0.0] * R + [1e-9]
    on, off = (
        planned_after_each_step(_instance(dsv3, **c)) for c in ({"adp_balancing": (2, 6)}, {})
    )
    held, free = _run(on, sent, P, out), _run(off, sent, P, out)
    first = on.table.time_s(R * P, 0.0, R * att, R, P)
    L = _layers(on)
    assert free.first_token_s[:R] == pytest.approx(np.full(R, first), rel=1e-12)
    assert held.first_token_s[:R] == pytest.approx(np.full(R, first), rel=1e-12)

    # its own step: 8 decoding requests and its 100-token prompt on every rank
    def own(steps_before: int) -> float:
        q = L * (R * P + R * steps_before)
        return on.table.time_s(R + R * P, q, q + R * att, R + R, P)

    assert free.first_token_s[R] == pytest.approx(first + own(0), rel=1e-12)
    waited = sum(_decode_s(on, R * P + R * j) for j in range(5))
    assert held.first_token_s[R] == pytest.approx(first + waited + own(5), rel=1e-9)
    assert held.steps - free.steps == 5
    assert held.admitted_s[R] == free.admitted_s[R] == pytest.approx(first, rel=1e-12)


@pytest.mark.parametrize("stop", [None, {"ttft": 0.2, "tpot": 0.05}, {"tpot": 0.02}])
def test_held_steps_taken_together_are_the_steps_taken_turn_by_turn(dsv3, monkeypatch, stop):
    """The decode steps the balancing holds prompts for, taken in one turn while nothing
    changes (``_Engine.held_steps``), give the record of one step a turn, bit for bit: Poisson
    arrivals, output lengths that end at different steps, with and without latency limits that
    stop the run."""
    from inference_econ.load import simulate as sim
    from inference_econ.load.arrivals import make_traffic

    inst = _instance(dsv3, adp_balancing=(3, 9))
    arrivals = make_traffic(40, "300", "lognormal:60:0.5", requests=150, seed=2).stream()
    together = simulate(inst, arrivals, stop=stop)
    monkeypatch.setattr(sim._Engine, "held_steps", lambda self, *a: None)
    apart = simulate(inst, arrivals, stop=stop)
    for f in ("first_token_s", "finish_s", "admitted_s"):
        assert np.array_equal(getattr(together, f), getattr(apart, f), equal_nan=True)
    assert (together.steps, together.busy_s, together.flop, together.stopped) == (
        apart.steps,
        apart.busy_s,
        apart.flop,
        apart.stopped,
    )
    assert together.stopped == (stop is not None)  # the limits stop it, the same step


def test_balancing_waits_its_batching_steps_when_every_rank_has_a_prompt(dsv3):
    """Eight more prompts arriving during the first step land one per rank: every rank has a
    prompt and decodes, so they wait the batching wait's 2 steps and go on the third turn
    (the count 1, 2, then released): 2 steps later than without balancing."""
    P, out = 100, 50
    sent = [0.0] * R + [1e-9] * R
    on, off = _instance(dsv3, adp_balancing=(2, 6)), _instance(dsv3)
    held, free = _run(on, sent, P, out), _run(off, sent, P, out)
    assert held.steps - free.steps == 2
    first = on.table.time_s(R * P, 0.0, R * _prompt_attention(on, P), R, P)
    late = held.first_token_s[R:] - free.first_token_s[R:]
    waited = sum(_decode_s(on, R * P + R * j) for j in range(2))
    assert late == pytest.approx(np.full(R, waited), rel=1e-3)  # (its step at 2 more tokens)
    assert held.first_token_s[R:].min() > first + waited


def test_prompts_first_pause_only_the_ranks_that_prefill(dsv3):
    """Where prompts run first in steps of their own (SGLang: each attention rank's scheduler
    runs its own batch, ``prepare_mlp_sync_batch``), a rank that prefills pauses its own
    decoding only: eight 100-token prompts, one a rank, 50 tokens out, and at 0.5 s a
    2,000-token prompt, which rank 0 takes. Its step carries the other seven ranks' decoding,
    so their requests finish a step before rank 0's, whose last token is a step of its own
    (one request at 100 + 48 positions); prompts beside decoding finish all eight together."""
    sent = np.r_[np.zeros(8), 0.5]
    prompts = np.r_[np.full(8, 100), 2000].astype(np.int64)
    outputs = np.r_[np.full(8, 50), 5].astype(np.int64)
    first = _instance(dsv3, prefill="chunked_separate")
    rec = simulate(first, Arrivals(sent, prompts, outputs))
    done = rec.finish_s[:8]
    assert np.all(done[1:] == done[1]) and done[0] > done[1]
    layers = _layers(first)
    step = first.table.time_s(1, layers * 148, layers * 148, 1, 1)
    assert done[0] - done[1] == pytest.approx(step, rel=1e-9)
    mixed = simulate(_instance(dsv3, prefill="chunked"), Arrivals(sent, prompts, outputs))
    assert np.all(mixed.finish_s[:8] == mixed.finish_s[0])


def test_prompts_first_move_either_side_of_the_batch_for_the_same_run(dsv3, monkeypatch):
    """In a step where only the ranks without prompts decode, the simulator moves the smaller
    side: the decoding requests a token on, or, where fewer wait, the waiting ones a token
    back while the whole batch advances. Both give the same run, every number of its record:
    600 Poisson requests at 8 a second over 8 ranks, most prompts' steps on one rank."""
    import inference_econ.load.engine_state as es

    rng = np.random.default_rng(0)
    n = 600
    arrivals = Arrivals(
        np.cumsum(rng.exponential(1.0 / 8.0, n)),
        rng.integers(200, 2000, n),
        rng.integers(20, 200, n),
    )
    inst = _instance(dsv3, prefill="chunked_separate", admission="recompute")
    moves: dict = {1: 0, -1: 0}
    shift = es.shift_some

    def counted(e, ids, step):
        moves[step] += 1
        shift(e, ids, step)

    monkeypatch.setattr(es, "shift_some", counted)
    either = simulate(inst, arrivals)
    assert moves[-1] > moves[1] > 0  # both sides moved, the waiting side most often
    monkeypatch.setattr(es, "order_free", lambda e: False)
    moves[1] = moves[-1] = 0
    decoding = simulate(inst, arrivals)
    assert moves[-1] == 0 and moves[1] > 0
    for f in dataclasses.fields(either):
        a, b = getattr(either, f.name), getattr(decoding, f.name)
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=True), f.name
        elif not dataclasses.is_dataclass(a):
            assert a == b or (a != a and b != b), f.name
    assert np.array_equal(either.finish_s, decoding.finish_s) and np.isfinite(either.finish_s).all()


def test_without_rank_scheduling_nothing_changes_and_ranks_pool(dsv3):
    """The ideal engine pools the ranks (no ``rank_scheduling``): its runs are the pooled
    engine's, and balancing needs ranks of their own (a pooled instance ignores it)."""
    pooled = _instance(dsv3, rank_scheduling=False)
    balanced = _instance(dsv3, rank_scheduling=False, adp_balancing=(2, 6))
    sent = np.linspace(0.0, 2.0, 40)
    a, b = _run(pooled, sent, 700, 30), _run(balanced, sent, 700, 30)
    assert np.array_equal(a.first_token_s, b.first_token_s)
    assert np.array_equal(a.finish_s, b.finish_s)


def test_balancing_is_a_harness_field_of_deepseek_r1_under_mlperf():
    """engines/trtllm.yaml: most MLPerf DeepSeek-R1 configurations of a scenario set the
    balancing 3/9 (Server) and 2/6 (Interactive); other models and the engine itself run
    without it (TensorRT-LLM's default off); a harness entry with only one of the two steps,
    or an unknown scenario, is refused naming the field."""
    prof = load_engine("trtllm")
    assert prof.harness_adp_balancing("mlperf", None, "DeepSeek-R1", "server") == (3, 9)
    assert prof.harness_adp_balancing("mlperf", None, "DeepSeek-R1", "interactive") == (2, 6)
    # a scenario not known takes only an entry for every scenario
    assert prof.harness_adp_balancing("mlperf", None, "DeepSeek-R1") == (2, 6)
    assert prof.scheduler_policy("mlperf", None, "DeepSeek-R1", "server") == ("no_evict", "whole")
    with pytest.raises(SpecError, match="scenarios"):
        profile_from_dict(
            {"name": "x", "harnesses": {"mlperf": {"prefill": "whole", "scenarios": ["batch"]}}}
        )
    assert prof.harness_adp_balancing("mlperf", None, "Llama 2 70B") is None
    assert prof.harness_adp_balancing(None, None, "DeepSeek-R1") is None
    with pytest.raises(SpecError, match="adp_balancing_timeout_iters"):
        profile_from_dict(
            {
                "name": "x",
                "harnesses": {
                    "mlperf": {"prefill": "whole", "adp_balancing_batching_wait_iters": 2}
                },
            }
        )
    with pytest.raises(SpecError, match="adp_balancing"):
        EngineConfig(adp_balancing=(2, 0))


def test_each_request_goes_to_the_least_loaded_rank(dsv3):
    """TensorRT-LLM's assignment (``_balance_requests_across_ranks``): among the ranks with
    fewer active requests than max(ceil((active + 1) / 8), the most on a rank), the fewest
    prompt tokens. Prompts of 500, 400, ..., 800 tokens fill ranks 0-7 one each (the count
    rule); a 50-token ninth joins rank 4 (100 tokens, the fewest; every rank may take a second);
    a 60-token tenth rank 3 (200 tokens: rank 4 holds two, the most a rank may)."""
    from inference_econ.load.simulate import _checked, _Engine

    inst = _instance(dsv3)
    prompts = [500, 400, 300, 200, 100, 600, 700, 800, 50, 60]
    n = len(prompts)
    arrivals = Arrivals(np.zeros(n), np.asarray(prompts, np.int64), np.full(n, 10, np.int64))
    engine = _Engine(inst, _checked(inst, arrivals, False), None, order=np.arange(n))
    engine.waiting.extend(range(n))
    engine.admission.admit()
    assert engine.ranks.rank_of == [0, 1, 2, 3, 4, 5, 6, 7, 4, 3]
    assert engine.ranks.act_n == [1, 1, 1, 2, 2, 1, 1, 1]
    assert engine.ranks.act_tok == [500, 400, 300, 260, 150, 600, 700, 800]


# --- choosing a layout with ranks that schedule their own requests ----------------------------


def test_busiest_rank_tokens_hand_computed():
    """``busiest_rank_tokens``: N ~ Poisson(n) chunks a step, each to the least-loaded rank,
    charged ``ranks`` times the busiest rank's ceil(N / ranks) chunks."""
    from math import ceil, exp, factorial

    from inference_econ.load.layout_choice import busiest_rank_tokens

    def by_hand(n, chunk, ranks):
        terms = (exp(-n) * n**k / factorial(k) * ceil(k / ranks) for k in range(60))
        return ranks * chunk * sum(terms)

    got = busiest_rank_tokens(np.array([0.01, 1.2, 6.0]), 1000, 8192, 2)
    assert np.allclose(got, [by_hand(n, 1000, 2) for n in (0.01, 1.2, 6.0)], rtol=1e-9)
    assert abs(got[1] - 1654.64) < 0.01  # 2 x 1000 x E[ceil(N/2)], N ~ Poisson(1.2)
    # one rank: the prompt tokens themselves; prompts longer than a rank's budget: its chunks
    assert np.allclose(busiest_rank_tokens(np.array([0.5, 3.0]), 1000, 8192, 1), [500, 3000])
    long = busiest_rank_tokens(np.array([0.1]), 10000, 4096, 4)[0]
    assert abs(long - by_hand(0.1 * 10000 / 4096, 4096, 4)) < 1e-6
    # few prompts: nearly ranks times the pooled tokens; many: nearly the pooled tokens
    assert 1.98 < busiest_rank_tokens(np.array([0.01]), 1000, 8192, 2)[0] / 10 < 2.0
    assert busiest_rank_tokens(np.array([64.0]), 1000, 8192, 2)[0] / 64000 < 1.01


def test_a_load_chooses_the_layout_its_ranks_run_fastest(dsv3):
    """``simulate``'s layout for an offered load (``LayoutSearch.choose``, §E6) counts each
    data-parallel attention layout's busiest rank, as the simulation charges it: at 8 requests
    per second of 1,000-token prompts, DeepSeek-V3 on 8 H200 takes no attention DP (pooled
    ranks made 2 ranks look fastest), and the chosen layout has the lowest simulated mean TPOT
    of the four SGLang runs (its attention DP may span part of the tensor group; TensorRT-LLM's
    spans all of it or none: two layouts)."""
    from inference_econ.load.arrivals import make_traffic
    from inference_econ.load.engine import DEFAULT_ENGINE
    from inference_econ.load.layout_choice import OfferedLoad
    from inference_econ.load.results import summarise
    from inference_econ.load.targets import Targets

    trtllm, _ = dsv3
    assert {lay.attention_divisor for lay in layout_search(trtllm, R).options} == {1.0, 8.0}
    setting = trtllm.replace(assumptions=trtllm.assumptions.replace(engine="sglang"))
    search = layout_search(setting, R)
    chosen = search.choose(DEFAULT_ENGINE, 1300.0, OfferedLoad(8.0, 1000.0, 300.0))
    assert chosen.attention_divisor == 1.0
    traffic = make_traffic(8, "lognormal:1000:0.8", "lognormal:300:0.6", requests=600, seed=0)
    tpot = {}
    for lay in search.options:
        inst = build_instance(setting, R, layout=lay, search=search)
        record = simulate(inst, traffic.stream())
        tpot[lay.attention_divisor] = summarise(inst, record, traffic, Targets()).tpot_s.mean
    assert set(tpot) == {1.0, 2.0, 4.0, 8.0}
    assert min(tpot, key=tpot.get) == chosen.attention_divisor


def test_each_attention_rank_schedules_its_own_share_of_the_sequences():
    """SGLang's DP-attention ranks each run their own scheduler: DeepSeek-R1 on 8 H200 as
    DEP8 at 2,048 requests waits for one rank's 256 sequences of host work (1 ms a step and
    6.5883 us a sequence, engines/sglang.yaml), 2.69 ms, not the instance's 14.5 ms."""
    from inference_econ import api
    from inference_econ.specs.engine import load_engine

    prof = load_engine("sglang")
    row = api.point("DeepSeek-R1", "H200", gpus=8, batch=2048, assumptions="achievable",
                    engine="sglang", discrete=True, context_tokens=2000)  # fmt: skip
    assert (row["tensor_degree"], row["attention_degree"]) == (8.0, 1.0)
    share = prof.step_overhead_s + prof.sequence_overhead_s * 2048 / 8
    assert row["host_s"] == pytest.approx(share, rel=1e-9)
    assert row["host_s"] == pytest.approx(0.0026866, rel=1e-4)


def test_a_step_table_holds_a_token_a_rank_where_the_ranks_outnumber_the_budget():
    """Each attention rank takes at least one prompt token a step (``Ranks``: its share of the
    budget, at least 1), so 65,536 ranks under an 8,192-token budget look up 65,536 tokens
    beside the batch: the table must reach them (SGLang's Qwen3-30B-A3B on 65,536 H100 had
    ended in an IndexError)."""
    from inference_econ.load.engine import table_tokens

    config = EngineConfig(rank_scheduling=True, step_token_budget=8192, max_batch_requests=1024)
    assert table_tokens(config, EngineLayout(65536, 1, 65536.0, False)) == 65536 + 1024
    assert table_tokens(config, EngineLayout(8, 1, 8.0, False)) == 8192 + 1024
    assert table_tokens(config, EngineLayout(8, 1, 1.0, False)) == 8192
