"""Load searches read only verdicts from most of their runs, so a failing run may stop once its
verdict is certain (load/watch.py ``Watch``, optimise/load_search.py
``run_until``): the verdicts, and so every knee, are those of the whole runs."""

import math

import numpy as np
import pytest

from inference_econ.load.arrivals import make_traffic
from inference_econ.load.deployment import Deployment, rejects_alike
from inference_econ.load.engine import DEFAULT_ENGINE
from inference_econ.load.targets import Targets
from inference_econ.load.watch import Watch
from inference_econ.optimise import load_search
from inference_econ.optimise.load_search import find_knee, knee_of, run_at, run_until
from inference_econ.serving.setting import make_setting


@pytest.mark.parametrize("n", [1, 2, 50, 99, 100, 101, 200, 1999, 2000, 10_000])
def test_the_watch_is_certain_only_when_the_p99_is_above_the_limit(n):
    """``Watch`` calls a p99 certain once ``_need(n)`` of n values break the limit: with that
    many (the rest just under it) ``np.percentile`` is above it; with two fewer it need not
    be (the watch asks one value more than the floor of the index needs)."""
    need = Watch._need(n)
    limit = 1.0

    def p99(bad: int) -> float:
        values = np.r_[np.full(bad, limit + 0.5), np.full(n - bad, limit - 0.5)]
        return float(np.percentile(values, 99))

    if need <= n:
        assert p99(need) > limit
    if n >= 100:  # 1 % of them and a bit: the watch is not lax either
        assert need <= math.ceil(0.01 * n) + 2
        assert p99(need - 2) <= limit


@pytest.fixture(scope="module")
def setting():
    return make_setting("Llama 3 8B", "H100", assumptions="achievable")


def test_a_run_stops_only_where_it_fails_and_says_so(setting):
    """At loads below and above what one H100 holds, the stopped run's verdict is the whole
    run's; a run far above stops early (it served fewer requests) and is marked."""
    traffic = make_traffic(10, "lognormal:1500:0.6", "lognormal:200:0.5", requests=400, seed=2)
    targets = Targets(1.0, 0.03)
    d = Deployment(1)
    knee = knee_of("deployment", setting, d, traffic, targets, DEFAULT_ENGINE, stop_early=False)
    verdicts = []
    for factor in (0.5, 0.9, 1.02, 1.1, 1.5, 4.0):
        t = traffic.at_rate(knee.max_rate_per_s * factor)
        load_search.clear_runs()
        fast = run_until("deployment", setting, d, t, DEFAULT_ENGINE, targets)
        whole = run_at("deployment", setting, d, t, DEFAULT_ENGINE).with_targets(targets)
        verdict = fast.with_targets(targets).meets_targets
        assert verdict == whole.meets_targets
        verdicts.append(verdict)
        if fast.stopped_for is not None:
            assert fast.stopped_for == targets and not verdict
            assert fast.completed < whole.completed
        if verdict:
            assert fast.stopped_for is None
    assert verdicts[0] and not verdicts[-1]
    load_search.clear_runs()
    far = run_until("deployment", setting, d, traffic.at_rate(4 * knee.max_rate_per_s),
                    DEFAULT_ENGINE, targets)  # fmt: skip
    assert far.stopped_for == targets and far.completed < 0.5 * far.requests
    with pytest.raises(Exception, match="judged only"):
        far.with_targets(Targets(5.0, 0.1))


def test_a_search_that_stops_runs_finds_the_same_knee(setting):
    traffic = make_traffic(10, "lognormal:1500:0.6", "lognormal:200:0.5", requests=300, seed=4)
    for targets in (Targets(1.0, 0.03), Targets(0.3, 0.02), Targets(4.0, 0.06, 30.0)):
        load_search.clear_runs()
        whole = knee_of("deployment", setting, Deployment(1), traffic, targets, DEFAULT_ENGINE,
                        stop_early=False)  # fmt: skip
        load_search.clear_runs()
        fast = knee_of("deployment", setting, Deployment(1), traffic, targets, DEFAULT_ENGINE)
        assert fast.max_rate_per_s == whole.max_rate_per_s > 0
        assert fast.at_max.stopped_for is None
        assert fast.at_max.ttft_s == whole.at_max.ttft_s


def test_early_runs_are_used_only_above_a_load_that_held():
    """The walk down reads failing runs' p99s (``_unloaded``): the early probe is never used
    before some load held (a made-up curve: p99 TTFT 1 s per req/s)."""
    from test_load import _Curve

    early_rates = []

    def early(rate):
        early_rates.append(rate)
        return _Curve(rate)

    for limit, start in ((7.0, 1.0), (0.5, 1.3), (1e-6, 1.0)):
        early_rates.clear()
        full = find_knee(_Curve, Targets(ttft_p99_s=limit), start)
        fast = find_knee(_Curve, Targets(ttft_p99_s=limit), start, early=early)
        assert fast.max_rate_per_s == full.max_rate_per_s and fast.reason == full.reason
        held = [r.rate_per_s for r in fast.evaluated if r.meets_targets]
        assert all(held and rate > min(held) for rate in early_rates)


def test_a_walk_down_ends_where_every_load_rejects_the_same_requests():
    """One H100 holds Llama 3.3 70B's 8-bit weights with little KV cache: some requests never
    fit, at any load (one layout: ``rejects_alike``). The search says so after one run, with
    the reason the whole walk down gives."""
    s = make_setting("Llama 3.3 70B", "H100", weight_bits=8, assumptions="refined")
    assert rejects_alike(s, 1)
    traffic = make_traffic(1, "lognormal:4000:0.8", "lognormal:300:0.6", requests=200, seed=0)
    targets = Targets(2.0, 0.05)
    load_search.clear_runs()
    walk = knee_of("deployment", s, Deployment(1), traffic, targets, DEFAULT_ENGINE,
                   stop_early=False)  # fmt: skip
    fast = knee_of("deployment", s, Deployment(1), traffic, targets, DEFAULT_ENGINE)
    assert walk.max_rate_per_s == fast.max_rate_per_s == 0.0
    assert fast.reason == walk.reason and "never fit" in fast.reason
    assert len(fast.evaluated) == 1 < len(walk.evaluated)
