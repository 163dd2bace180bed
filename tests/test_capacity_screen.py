"""The screened capacity search (optimise/capacity.py ``screened_rows``: short searches of
every candidate, full searches only of those that can still be the plan) finds the plan the
full search of every candidate finds: the same GPU, deployment, load held and price."""

import pytest

import inference_econ.optimise.capacity as capacity
from inference_econ.optimise import load_search
from inference_econ.serving.load.arrivals import make_traffic
from inference_econ.serving.load.targets import Targets
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


@pytest.fixture(scope="module")
def settings():
    """Under the engine profile ``capacity`` plans with (its confident plan needs intervals)."""
    return [make_setting("Llama 3 8B", g, assumptions="achievable") for g in ("H100", "H200")]


@pytest.mark.parametrize("rate, prompts, outputs, targets", ASKS)
def test_screened_search_finds_the_full_searchs_plan(
    settings, monkeypatch, rate, prompts, outputs, targets
):
    monkeypatch.setattr(capacity, "SCREEN_REQUESTS", 50)
    simulated = []
    run = load_search.simulate_deployment

    def counted(setting, deployment, traffic, *args, **kwargs):
        result = run(setting, deployment, traffic, *args, **kwargs)
        if result.stopped_for is None:  # a run stopped once it missed the targets is cheap
            simulated.append(traffic.requests)
        return result

    monkeypatch.setattr(load_search, "simulate_deployment", counted)
    traffic = make_traffic(rate, prompts, outputs, requests=200, seed=1)
    assert capacity.screens(traffic, False, None, None)
    load_search.clear_runs()
    full = capacity.cheapest_deployment(settings, traffic, targets, sizes=[1, 2], screen=False)
    simulated_full = simulated.count(200)
    load_search.clear_runs()
    simulated.clear()
    fast = capacity.cheapest_deployment(settings, traffic, targets, sizes=[1, 2])
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
    odds = [capacity.confident_plan(p, 0.9, None, settings, traffic) for p in (full, fast)]
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
