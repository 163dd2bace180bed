"""The screened capacity search (optimise/screening.py ``screened_rows``: short searches of
every candidate, full searches only of those that can still be the plan) finds the plan the
full search of every candidate finds: the same GPU, deployment, load held and price."""

import math

import pytest

import inference_econ.optimise.capacity as capacity
import inference_econ.optimise.confident as confident
import inference_econ.optimise.screening as screening
from inference_econ.load.arrivals import make_traffic
from inference_econ.load.targets import Targets
from inference_econ.optimise import load_search
from inference_econ.serving import support as sp
from inference_econ.serving.setting import make_setting

# small asks: probes of 50 requests screen searches of 200 (the CLI: 500 of 10,000); the
# plans differ between them (GPU, instance size, count), so a search that lost its way on one
# would show
ASKS = [
    (30, "lognormal:1000:0.8", "lognormal:200:0.6", Targets(2.0, 0.05)),
    (12, "lognormal:3000:0.5", "lognormal:300:0.5", Targets(1.0, 0.03)),
    (60, "lognormal:500:0.6", "lognormal:400:0.5", Targets(0.5, 0.025)),
    (8, "lognormal:4000:0.4", "lognormal:150:0.6", Targets(3.0, 0.04, 20.0)),
]


#: The bands these cases were set up on: the dense bands of the stratum table
#: (``intervals/achievable.yaml``, GPU and model seen; throughput with its three rounds of
#: drift, +0.0836 each), so that the cases test the search, whatever the shipped classes say.
BANDS = {
    "throughput": {"q05": -0.2313, "q10": -0.1049, "q90": 0.2481, "q95": 0.3106, "rows": 133},
    "TPOT": {"q05": -0.5847, "q10": -0.447, "q90": 0.2208, "q95": 0.3372, "rows": 30},
    "TTFT": {"q05": -0.7869, "q10": -0.5304, "q90": 1.2719, "q95": 1.4835, "rows": 30},
}
DRIFT = {"throughput": {"log_per_round": 0.0836, "rounds": 3}}


@pytest.fixture(autouse=True)
def stratum_bands(monkeypatch):
    """Every figure on ``BANDS`` (a class table of pooled bands, not widened)."""
    table = sp.parse_classes({"widening": 1.0, "pooled": BANDS, "drift": DRIFT}, "BANDS")
    monkeypatch.setattr(sp, "classes", lambda: table)


@pytest.fixture(scope="module")
def settings():
    """Under the engine profile ``capacity`` plans with (its confident plan needs intervals)."""
    return [make_setting("Llama 3 8B", g, assumptions="achievable") for g in ("H100", "H200")]


@pytest.fixture(scope="module")
def searched(settings):
    """A function of an ask: (the plan of the full search (every candidate searched in full),
    the plan of the screened search (probes of 50 requests), the requests of each run of
    either search that was not stopped once it missed the targets, {"full": [...], "fast":
    [...]}, the full search's confident plan (90 %), the traffic). Each search starts from an
    empty cache of runs; an ask is searched once, in the first test that asks (under its
    bands, ``stratum_bands``), and the tests below read the plans."""
    done = {}

    def search(ask):
        if ask not in done:
            done[ask] = _search(settings, ask)
        return done[ask]

    return search


def _search(settings, ask):
    """``searched``'s tuple of an ask."""
    rate, prompts, outputs, targets = ask
    traffic = make_traffic(rate, prompts, outputs, requests=200, seed=1)
    run = load_search.simulate_deployment
    plans, simulated = {}, {"full": [], "fast": []}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(screening, "SCREEN_REQUESTS", 50)
        for name, screen in (("full", False), ("fast", True)):

            def counted(setting, deployment, traffic, *args, _runs=simulated[name], **kwargs):
                result = run(setting, deployment, traffic, *args, **kwargs)
                if result.stopped_for is None:  # a run stopped once it missed is cheap
                    _runs.append(traffic.requests)
                return result

            patch.setattr(load_search, "simulate_deployment", counted)
            load_search.clear_runs()
            plans[name] = capacity.cheapest_deployment(
                settings, traffic, targets, sizes=[1, 2], screen=screen
            )
        patch.setattr(load_search, "simulate_deployment", run)
        odds = confident.confident_plan(plans["full"], 0.9, None, settings, traffic)
    return plans["full"], plans["fast"], simulated, odds, traffic


@pytest.mark.parametrize("rate, prompts, outputs, targets", ASKS)
def test_screened_search_finds_the_full_searchs_plan(
    settings, searched, monkeypatch, rate, prompts, outputs, targets
):
    monkeypatch.setattr(screening, "SCREEN_REQUESTS", 50)
    full, fast, runs, full_odds, traffic = searched((rate, prompts, outputs, targets))
    assert screening.screens(traffic, False, None, None)
    simulated_full, simulated = runs["full"].count(200), runs["fast"]
    assert fast.setting.gpu.name == full.setting.gpu.name
    assert fast.deployment == full.deployment
    assert fast.max_rate_per_s == full.max_rate_per_s  # bit for bit: the same lattice and probes
    assert fast.result.usd_per_m_output_tokens_all_in == full.result.usd_per_m_output_tokens_all_in
    assert fast.result.ttft_s == full.result.ttft_s
    chosen = fast.candidates[fast.candidates["chosen"]]
    assert chosen["probe_requests"].tolist() == [200]
    assert set(fast.candidates["probe_requests"]) <= {0, 50, 200}
    assert set(simulated) == {50, 200}
    if (fast.candidates["probe_requests"] < 200).any():  # it screened some out: less work
        assert simulated.count(200) < simulated_full
    # every candidate the fast search searched in full holds what the full search found
    key = ["hardware", "gpus_per_instance"]
    whole = fast.candidates[fast.candidates["probe_requests"] == 200].merge(
        full.candidates, on=key, suffixes=("", "_full")
    )
    assert len(whole) >= 1
    assert (whole["max_rate_per_instance"] == whole["max_rate_per_instance_full"]).all()
    # the confident plan (a short-screened candidate searched in full first where it could be
    # cheaper) is the one every candidate searched in full gives
    odds = [full_odds, confident.confident_plan(fast, 0.9, None, settings, traffic)]
    a, b = (o.confident for o in odds)
    assert a is not None and b is not None
    assert (a.deployment, a.hardware, a.usd_per_hour) == (b.deployment, b.hardware, b.usd_per_hour)
    assert a.max_rate_per_s == b.max_rate_per_s


def test_a_search_from_a_guess_finds_the_full_searchs_answer():
    """On a monotone made-up curve (p99 TTFT 1 s per req/s) ``find_knee_from`` gives
    ``find_knee``'s answer to the bit from guesses 20 % off either way, in fewer simulations
    when the guess is close; below the start it hands over to ``find_knee``."""
    from test_load import _Curve

    for limit in (1.7, 3.0, 9.5):
        targets = Targets(ttft_p99_s=limit)
        full = load_search.find_knee(_Curve, targets, start=1.3)
        for guess in (0.8 * limit, limit, 1.2 * limit):
            fast = load_search.find_knee_from(_Curve, targets, 1.3, guess)
            assert fast.max_rate_per_s == full.max_rate_per_s
        close = load_search.find_knee_from(_Curve, targets, 1.3, full.max_rate_per_s)
        assert len(close.evaluated) == 2 < len(full.evaluated)
    below = load_search.find_knee_from(_Curve, Targets(ttft_p99_s=0.5), 1.3, 0.5)
    assert (
        below.max_rate_per_s
        == load_search.find_knee(_Curve, Targets(ttft_p99_s=0.5), 1.3).max_rate_per_s
    )
    assert 0.49 < below.max_rate_per_s <= 0.5


def test_an_answer_just_below_the_start_is_found_from_the_guess():
    """An answer within a lattice interval below ``start`` (``start``/sqrt 2 to ``start``) is
    galloped to from the guess where ``find_knee``'s walk would begin at or below ``start``
    (a guess under sqrt 2 x ``start``): ``find_knee``'s answer to the bit, in two runs from a
    guess on it; from a guess further up, ``find_knee``'s own walk gives it."""
    from test_load import _Curve

    start = 1.3
    for limit in (0.95, 1.1, 1.29):
        targets = Targets(ttft_p99_s=limit)
        full = load_search.find_knee(_Curve, targets, start)
        assert start / math.sqrt(2.0) < full.max_rate_per_s < start
        for guess in (0.9 * limit, limit, 1.1 * limit, start, 1.2 * start, 2.0 * start):
            fast = load_search.find_knee_from(_Curve, targets, start, guess)
            assert fast.max_rate_per_s == full.max_rate_per_s
        on_it = load_search.find_knee_from(_Curve, targets, start, full.max_rate_per_s)
        assert len(on_it.evaluated) == 2 < len(full.evaluated)


def test_a_guess_takes_the_grid_point_nearest_it_in_ratio():
    """``grid_nearest``: a rate a third of the way (in ratio) from one point of the refined grid
    (2^(1/64) apart) to the next takes the lower point, two thirds of the way the upper; a
    point takes itself."""
    start = 1.3
    for rate in (0.2, 1.3, 2.71828, 40.0):
        i = load_search.grid_index(start, rate)
        lo, hi = load_search.grid_rate(start, i), load_search.grid_rate(start, i + 1)
        assert hi / lo == pytest.approx(2.0 ** (1 / 64))
        assert load_search.grid_nearest(start, lo * (hi / lo) ** (1 / 3)) == i
        assert load_search.grid_nearest(start, lo * (hi / lo) ** (2 / 3)) == i + 1
        assert load_search.grid_nearest(start, lo) == i


def test_a_search_from_a_rate_that_held_finds_the_full_searchs_answer():
    """``find_knee_from`` told of a rate a run held at (``held``: the walk starts above the
    grid point at or below it, unsimulated) gives ``find_knee``'s answer on the monotone
    made-up curve, with the answer's own run among those evaluated, in fewer simulations
    than from the guess alone when the guess lies far below; ``grid_at_least`` is the grid's
    first point at or above a rate."""
    from test_load import _Curve

    start = 1.3
    for rate in (0.2, 1.3, 2.71828, 40.0):
        at = load_search.grid_at_least(start, rate)
        assert load_search.grid_rate(start, at) >= rate > load_search.grid_rate(start, at - 1)
    assert load_search.grid_at_least(start, start * 300) is None  # above the lattice
    for limit in (1.7, 3.0, 9.5):
        targets = Targets(ttft_p99_s=limit)
        full = load_search.find_knee(_Curve, targets, start=start)
        for held in (0.9 * limit, full.max_rate_per_s, 0.5 * limit):
            fast = load_search.find_knee_from(_Curve, targets, start, 0.5 * limit, held=held)
            assert fast.max_rate_per_s == full.max_rate_per_s
            assert fast.at_max is not None and fast.at_max.rate_per_s == full.max_rate_per_s
        guessed = load_search.find_knee_from(_Curve, targets, start, 0.5 * limit)
        told = load_search.find_knee_from(_Curve, targets, start, 0.5 * limit, held=0.95 * limit)
        assert len(told.evaluated) < len(guessed.evaluated)


def test_the_confident_plan_rules_a_candidate_out_with_one_full_simulation(settings, monkeypatch):
    """On the first ask the fast search's confident plan tests H200 x 1 (never searched in full)
    at the least load that could make a confident plan as cheap; the run misses a target, so
    it is neither searched short nor in full, its row says why, and the confident plan is the
    one every candidate searched in full gives (the parametrized test above)."""
    monkeypatch.setattr(screening, "SCREEN_REQUESTS", 50)
    _, prompts, outputs, targets = ASKS[0]
    # the first ask at 29 requests/s, where one H200 falls just short of the load (at 30 it
    # holds it since the engine profiles' refit of 2026-11-23, and is then searched in full)
    rate = 29
    traffic = make_traffic(rate, prompts, outputs, requests=200, seed=1)
    load_search.clear_runs()
    plan = capacity.cheapest_deployment(settings, traffic, targets, sizes=[1, 2])
    before = plan.candidates.set_index(["hardware", "gpus_per_instance"])
    needs = []
    test = screening._test
    monkeypatch.setattr(
        screening,
        "_test",
        lambda *a, **k: needs.append((a[0].gpu.name, a[1], a[5])) or test(*a, **k),
    )
    odds = confident.confident_plan(plan, 0.9, None, settings, traffic)
    after = odds.candidates.set_index(["hardware", "gpus_per_instance"])
    row = after.loc[("H200-SXM", 1)]
    assert "misses a target" in row["note"]
    assert row["probe_requests"] == before.loc[("H200-SXM", 1), "probe_requests"] < 200
    tested = [n for n in needs if n[0] == "H200-SXM" and n[1].gpus_per_instance == 1]
    assert len(tested) == 1
    # the load it was tested at: what one instance must hold at the 90 % low end for the
    # cheapest count no dearer than the confident plan
    bar = odds.confident.usd_per_hour
    count = math.floor((bar + 1e-9) / settings[1].gpu.price_usd_per_hour)
    factor = confident._confident_factor(plan, 90, settings[1], 1, 1.0)
    assert tested[0][2] == pytest.approx(rate / (factor * count), rel=1e-5)


def test_a_run_far_above_the_answer_bisects_down_to_the_rate_that_held():
    """A made-up curve whose runs above 10 req/s stop early (having served 5 % of their
    requests above 12 req/s, 80 % up to there): from a guess of 20 req/s and a run that held
    at 6 req/s, ``find_knee_from`` bisects between them at once (its second run is their grid
    midpoint, not the point below the guess) and gives ``find_knee``'s answer."""
    import dataclasses

    import numpy as np
    from test_load import _Curve

    @dataclasses.dataclass
    class Stopping(_Curve):
        @property
        def stopped_for(self):
            return None if self.rate_per_s <= 10.0 else self.targets

        @property
        def latencies(self):
            served = 5 if self.rate_per_s > 12.0 else 80
            ttft = np.r_[np.ones(served), np.full(100 - served, np.nan)]
            return dataclasses.make_dataclass("Lat", ["ttft_s"])(ttft)

        @property
        def meets_targets(self):
            return self.rate_per_s <= 10.0

    targets, start = Targets(ttft_p99_s=10.0), 1.3
    full = load_search.find_knee(Stopping, targets, start)
    fast = load_search.find_knee_from(Stopping, targets, start, 20.0, held=6.0)
    assert fast.max_rate_per_s == full.max_rate_per_s
    rates = [r.rate_per_s for r in fast.evaluated]
    guess = load_search.grid_at_most(start, 20.0)
    known = load_search.grid_at_most(start, 6.0)
    assert load_search.grid_rate(start, (known + guess) // 2) in rates
    assert load_search.grid_rate(start, guess - 1) not in rates


def test_a_confident_candidate_tested_before_its_short_search_is_searched_from_what_held(
    settings, searched, monkeypatch
):
    """On the second ask the confident plan tests H200 x 2 (never searched: one full run at the
    least load that could make a plan as cheap), then H200 x 1 (searched short), and each
    holds; each is then searched in full, and each full search is given the rate its test held
    at (``find_knee_from``'s ``held``: its walk down stops there rather than running the
    passing loads below it again), and the confident plan is still every candidate's full
    search's."""
    monkeypatch.setattr(screening, "SCREEN_REQUESTS", 50)
    tests, fulls = [], []
    test, full_search = screening._test, screening._full_search

    def tested(*args, **kwargs):
        out = test(*args, **kwargs)
        tests.append((args[0].gpu.name, args[1].gpus_per_instance, out))
        return out

    def searched_in_full(*args, **kwargs):
        fulls.append((args[0].gpu.name, args[1].gpus_per_instance, args[7]))
        return full_search(*args, **kwargs)

    full, fast, traffic = _confident_pair(searched, ASKS[1])
    monkeypatch.setattr(screening, "_test", tested)
    monkeypatch.setattr(screening, "_full_search", searched_in_full)
    odds = confident.confident_plan(fast, 0.9, None, settings, traffic)
    assert [(gpu, n) for gpu, n, _ in tests] == [("H200-SXM", 2), ("H200-SXM", 1)]
    assert all(out[0] for _, _, out in tests)  # each held
    assert fulls == [(gpu, n, out[1]) for gpu, n, out in tests]
    a, b = full.confident, odds.confident
    assert (a.deployment, a.hardware, a.usd_per_hour) == (b.deployment, b.hardware, b.usd_per_hour)
    assert a.max_rate_per_s == b.max_rate_per_s


def _confident_pair(searched, ask):
    """The confident plan (90 %) of the full search (every candidate searched in full) on
    ``ask``, the screened search's plan and the traffic (``searched``)."""
    _, fast, _, full, traffic = searched(ask)
    return full, fast, traffic


def test_a_confident_tie_is_ruled_out_by_one_run_at_the_load_it_must_hold(
    settings, searched, monkeypatch
):
    """On the first ask the confident plan is 2 x 1 H100 ($4.20 an hour); one H100 x 2 costs
    the same, so it ranks first only holding more load at its interval's low end: its test runs
    at that load (``_confident_need``: 47.6 / f req/s, not the 30 / f its price alone asks),
    misses, and it is ruled out unsearched, where the full search finds it holds less (the tie
    is real) and gives the same confident plan."""
    monkeypatch.setattr(screening, "SCREEN_REQUESTS", 50)
    full, fast, traffic = _confident_pair(searched, ASKS[0])
    needs = []
    test = screening._test
    monkeypatch.setattr(
        screening,
        "_test",
        lambda *a, **k: (
            needs.append((a[0].gpu.name, a[1].gpus_per_instance, a[5])) or test(*a, **k)
        ),
    )
    odds = confident.confident_plan(fast, 0.9, None, settings, traffic)
    a, b = full.confident, odds.confident
    assert (b.deployment, b.hardware, b.usd_per_hour) == (a.deployment, a.hardware, a.usd_per_hour)
    assert b.max_rate_per_s == a.max_rate_per_s
    assert b.deployment == capacity.Deployment(1, 2) and b.hardware is None  # the plan's GPU
    h100 = settings[0]
    factor = confident._confident_factor(fast, 90, h100, 2, 1.0)
    # the full search: one H100 x 2 costs the same, holding less at the low end (a real tie)
    row = full.candidates.set_index(["hardware", "gpus_per_instance"]).loc[("H100-SXM", 2)]
    assert row["instances"] == 1 and row["usd_per_hour"] == pytest.approx(b.usd_per_hour)
    assert row["max_rate_per_instance"] * factor < b.max_rate_per_s
    # the screened one: tested once, at the load that holds as much as the plan, and ruled out
    tested = [n for g, s, n in needs if (g, s) == ("H100-SXM", 2)]
    assert tested == [pytest.approx(b.max_rate_per_s / factor, rel=1e-5)]
    assert tested[0] > 1.5 * traffic.offered_rate_per_s / factor
    after = odds.candidates.set_index(["hardware", "gpus_per_instance"]).loc[("H100-SXM", 2)]
    assert after["probe_requests"] < 200 and "as much holding less" in after["note"]


def test_a_confident_tie_holding_less_at_its_best_is_not_searched(settings, searched, monkeypatch):
    """On the fourth ask the confident plan is 1 x 2 H100 ($4.20 an hour, the search's own
    GPU); two H100 x 1 hope for the same price (the short answer ``SCREEN_MARGIN`` times
    higher) but, even there, hold less at their interval's low end (``_could_rank_first``): the
    candidate is neither tested nor searched in full, and the confident plan is the full
    search's."""
    monkeypatch.setattr(screening, "SCREEN_REQUESTS", 50)
    full, fast, traffic = _confident_pair(searched, ASKS[3])
    runs = []
    test, search = screening._test, screening._full_search
    monkeypatch.setattr(screening, "_test", lambda *a, **k: runs.append(a[:2]) or test(*a, **k))
    monkeypatch.setattr(
        screening, "_full_search", lambda *a, **k: runs.append(a[:2]) or search(*a, **k)
    )
    odds = confident.confident_plan(fast, 0.9, None, settings, traffic)
    a, b = full.confident, odds.confident
    assert (b.deployment, b.hardware, b.usd_per_hour) == (a.deployment, a.hardware, a.usd_per_hour)
    assert b.max_rate_per_s == a.max_rate_per_s
    assert fast.setting.gpu.name == "H100-SXM"
    assert (b.deployment, b.hardware) == (capacity.Deployment(2, 1), None)  # its own GPU
    h100 = settings[0]
    hopes = [h for h in confident._confident_hopes(odds, 90, settings) if h[1:3] == (h100, 1)]
    assert len(hopes) == 1
    usd, *_, held, _ = hopes[0]
    assert usd == pytest.approx(b.usd_per_hour) and held < b.max_rate_per_s  # a tie, less held
    assert not confident._could_rank_first(hopes[0], b)
    assert not [r for r in runs if r[0] is h100 and r[1].gpus_per_instance == 1]


def test_a_confident_tie_won_by_the_load_held_is_the_full_searchs(settings, searched, monkeypatch):
    """The first ask at 32 req/s: the confident plan, 2 x 1 H100, costs what 1 x 2 H100 does
    ($4.20 an hour) and wins on the load held at the low end; the screened search (its ties
    ranked by the load held: ``_could_rank_first``, ``_confident_need``) finds it, where
    ranking ties by price alone gives 1 x 2 H100."""
    monkeypatch.setattr(screening, "SCREEN_REQUESTS", 50)
    full, fast, traffic = _confident_pair(searched, (32, *ASKS[0][1:]))
    odds = confident.confident_plan(fast, 0.9, None, settings, traffic)
    a, b = full.confident, odds.confident
    assert (b.deployment, b.hardware, b.usd_per_hour) == (a.deployment, a.hardware, a.usd_per_hour)
    assert b.max_rate_per_s == a.max_rate_per_s
    assert (b.deployment, b.hardware) == (capacity.Deployment(1, 2), "H100-SXM")
    # the full search's rival at the same price, holding less
    rivals = [
        o
        for o in confident._confident_options(full, 90, settings)
        if (o[2], o[4]) == (capacity.Deployment(2, 1), "H100-SXM")
    ]
    assert len(rivals) == 1
    usd, held, *_ = rivals[0]
    assert usd == pytest.approx(b.usd_per_hour) and held < b.max_rate_per_s


def test_instances_added_by_the_full_load_run_are_the_tables_and_say_why():
    """One H100 instance of Llama 3.1 8B under SGLang holds 19.8 req/s in its search, but its
    300-request run at 17 req/s reads its backlog as growing (1.3-fold), so the plan runs two:
    the candidates' chosen row counts the two instances and their price (it had said one, beside
    a headline of two), and a note says which run missed and why."""
    from inference_econ import api

    plan = api.capacity(
        "Llama 3.1 8B", "H100", engine="sglang", arrival_rate_per_s=17.0, input_lengths="1000",
        output_lengths="200", slo_ttft_p99_s=2.0, slo_tpot_p99_s=0.05, requests=300, max_gpus=4,
    )  # fmt: skip
    assert plan.deployment.instances == 2 and plan.deployment.gpus_per_instance == 1
    (chosen,) = plan.candidates[plan.candidates["chosen"]].to_dict("records")
    assert (chosen["instances"], chosen["gpus"]) == (2, 2)
    assert chosen["usd_per_hour"] == pytest.approx(plan.result.usd_per_hour)
    assert any("as the search sized it, missed the targets" in n and "load outgrows" in n
               for n in plan.notes)  # fmt: skip


@pytest.mark.parametrize("max_gpus", [1, 2])
def test_a_confident_plan_past_max_gpus_says_so_and_the_screened_search_agrees(max_gpus):
    """On the first ask the expected plan is 1 x 1 H100 and the confident plan 2 x 1 H100
    (above). Within ``--max-gpus 2`` that stands; within 1 it is past the limit and no
    candidate of one GPU holds the load at the 90 % interval's low end, so the plan's note
    says so rather than the limit being passed silently; the screened search gives the full
    search's confident plan either way."""
    settings = [
        make_setting("Llama 3 8B", g, assumptions="achievable", max_gpus=max_gpus)
        for g in ("H100", "H200")
    ]
    rate, prompts, outputs, targets = ASKS[0]
    traffic = make_traffic(rate, prompts, outputs, requests=200, seed=1)
    found = []
    for screen in (False, True):
        load_search.clear_runs()
        plan = capacity.cheapest_deployment(
            settings, traffic, targets, sizes=[1, 2], max_gpus=max_gpus, screen=screen
        )
        assert plan.deployment.gpus <= max_gpus
        found.append(confident.confident_plan(plan, 0.9, None, settings, traffic).confident)
    a, b = found
    assert (a.deployment, a.hardware, a.usd_per_hour, a.note) == (
        b.deployment, b.hardware, b.usd_per_hour, b.note
    )  # fmt: skip
    assert a.deployment.gpus == 2 and a.usd_per_hour == pytest.approx(4.2)
    if max_gpus == 1:
        assert a.note == (
            "2 GPUs, over --max-gpus 1: no deployment within it (of the candidates searched in "
            "full) holds the targets at the 90 % interval's low end"
        )
    else:
        assert a.note == ""


def test_a_confident_plan_past_max_gpus_is_the_cheapest_past_it():
    """The third ask: its confident plan is 3 x 1 H100 ($6.30 an hour) without a limit; within
    ``--max-gpus 2`` none holds, and the plan past it is still 3 x 1 H100 (a size the limit
    excluded keeps its own figures), not the expected plan's copies (3 x 1 H200, $8.82)."""
    settings = [
        make_setting("Llama 3 8B", g, assumptions="achievable", max_gpus=2)
        for g in ("H100", "H200")
    ]
    rate, prompts, outputs, targets = ASKS[2]
    traffic = make_traffic(rate, prompts, outputs, requests=200, seed=1)
    load_search.clear_runs()
    plan = capacity.cheapest_deployment(settings, traffic, targets, sizes=[1, 2], max_gpus=2)
    c = confident.confident_plan(plan, 0.9, None, settings, traffic).confident
    assert plan.result.hardware == "H200-SXM" and plan.deployment.gpus == 2
    assert (c.deployment.gpus, c.hardware, c.usd_per_hour) == (3, "H100-SXM", pytest.approx(6.3))
    assert c.note.startswith("3 GPUs, over --max-gpus 2: no deployment within it")


def test_a_screened_ask_under_max_gpus_with_candidates_never_run_plans(monkeypatch):
    """Probes of 50 requests at 20 req/s under --max-gpus 1: the screened search leaves a
    candidate unrun, its note naming the limit and no instances of its own; the confident
    plan reads past it (the ranking of rows past the limit had raised on its missing count)."""
    monkeypatch.setattr(screening, "SCREEN_REQUESTS", 50)
    settings = [
        make_setting("Llama 3 8B", g, assumptions="achievable", max_gpus=1)
        for g in ("H100", "H200")
    ]
    _, prompts, outputs, targets = ASKS[0]
    traffic = make_traffic(20, prompts, outputs, requests=200, seed=1)
    load_search.clear_runs()
    plan = capacity.cheapest_deployment(settings, traffic, targets, sizes=[1, 2], max_gpus=1)
    unrun = plan.candidates[plan.candidates.note.astype(str).str.startswith("not searched")]
    assert len(unrun) and unrun.instances.isna().all()
    c = confident.confident_plan(plan, 0.9, None, settings, traffic).confident
    assert c.usd_per_hour >= plan.result.usd_per_hour


def test_a_confident_plan_within_max_gpus_ranks_before_a_cheaper_one_past_it():
    """(past --max-gpus, $/hour, -load held, GPUs): within the limit first whatever it
    costs; past it, or within, the cheapest; at one price the more load held."""
    within_dear, past_cheap = (False, 8.82, -40.0, 2), (True, 6.30, -45.0, 3)
    assert confident._placed_before(within_dear, past_cheap)
    assert not confident._placed_before(past_cheap, within_dear)
    assert confident._placed_before((True, 6.30, -45.0, 3), (True, 8.82, -50.0, 3))
    assert confident._placed_before((False, 4.2, -50.0, 2), (False, 4.2, -40.0, 2))
