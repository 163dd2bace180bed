"""Autoscaling a demand curve (docs/model-part-e.md §E14): the day's non-homogeneous Poisson
stream, the pool's backlog and missed requests against hand-computed cases, the hourly plan
matched at zero start-up delay, a longer delay never missing fewer, start-up delays from the
published figures, and a budget no target meets refused in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from inference_econ.errors import InfeasibleError, SpecError
from inference_econ.load.autoscaling import (
    OutstandingRequests,
    Scheduled,
    SloHeadroom,
    TargetUtilisation,
    make_policy,
)
from inference_econ.load.demand import DemandCurve
from inference_econ.load.scaled_pool import ScaledPool, arrival_counts, simulate_scaled_day
from inference_econ.load.startup import given_delay, startup_delay, startup_figures
from inference_econ.load.targets import Targets
from inference_econ.optimise.autoscale import autoscale_search
from inference_econ.optimise.demand import Prices, _size_plan, instances_needed

#: Four hours at 15, 25, 35 and 25 req/s, instances holding 10 req/s each: 2, 3, 4, 3 needed,
#: every rate far from a multiple of 10 so that a minute's Poisson count never crosses one.
RATES = [15.0, 25.0, 35.0, 25.0]
PER = 10.0


@pytest.fixture(scope="module")
def arrivals():
    return arrival_counts(RATES, seed=0)


def test_the_day_is_a_poisson_stream_at_each_hours_rate(arrivals):
    assert arrivals.shape == (4 * 3600,)
    per_hour = arrivals.reshape(4, 3600)
    # each hour's count is Poisson with mean rate x 3600 (sd sqrt of it): within 4 sd
    for count, rate in zip(per_hour.sum(axis=1), RATES):
        assert abs(count - rate * 3600) < 4 * np.sqrt(rate * 3600)
    # and its one-second counts have the variance of their mean (Poisson's dispersion 1)
    assert per_hour[2].var() / per_hour[2].mean() == pytest.approx(1.0, abs=0.1)


def test_a_backlog_and_its_missed_requests_by_hand():
    # 6 requests/s; one instance of 4 req/s serving, a second asked for at the first evaluation
    # (15 s) and serving at once: the backlog grows by 2 a second for 15 s (30 requests) and
    # drains at 2 a second. A request misses when it waits over 2 s, i.e. is not served by the
    # bin 2 after its own: cumulative arrivals 6(b+1), service 4(b+1) to b = 14, 8b - 52 from
    # there until the backlog is gone at b = 29. Misses per bin: b = 4: 2, b = 5: 4, b = 6..18:
    # 6 each (78), b = 19: 4, b = 20: 2 -> 90 in all.
    counts = np.full(300, 6)
    pool = ScaledPool(per_instance=4.0, startup_s=0.0, window_s=0.0, allowance_s=2.0)
    run = simulate_scaled_day(counts, pool, Scheduled((2,)), initial=1)
    assert run.missed_requests == 90
    assert run.missed[[4, 5, 6, 18, 19, 20, 21]].tolist() == [2, 4, 6, 6, 4, 2, 0]
    assert run.served[:15].sum() == 60 and run.served[15:30].sum() == 120
    # paid: one instance 15 s, two the other 285 s
    assert run.instance_hours == pytest.approx((15 + 2 * 285) / 3600)
    # served 10 s later, the backlog grows 10 s longer: more misses, the same instance-hours
    late = simulate_scaled_day(counts, ScaledPool(4.0, 10.0, 0.0, 2.0), Scheduled((2,)), initial=1)
    assert late.missed_requests > run.missed_requests
    assert late.instance_hours == run.instance_hours


def test_zero_startup_matches_the_hourly_plans_gpu_hours(arrivals):
    needed = instances_needed(RATES, PER)
    assert needed.tolist() == [2, 3, 4, 3]
    pool = ScaledPool(per_instance=PER, startup_s=0.0, window_s=0.0)
    plan = simulate_scaled_day(arrivals, pool, Scheduled(tuple(needed)))
    assert plan.instance_hours == pytest.approx(needed.sum()) and plan.missed_requests == 0
    # an HPA at full utilisation, no tolerance and no window follows the same instances one
    # evaluation late: within one 15 s interval per change of the hourly count (3 changes)
    hpa = TargetUtilisation(target=1.0, tolerance=0.0)
    run = simulate_scaled_day(arrivals, pool, hpa)
    assert abs(run.instance_hours - needed.sum()) <= 3 * hpa.interval_s / 3600
    assert run.asked[:3600].max() == 2 and run.asked[7300:10800].min() == 4


@pytest.mark.parametrize(
    "policy",
    [TargetUtilisation(), SloHeadroom(target=0.1, lead_s=60.0), Scheduled((2, 3, 4, 3), 30.0)],
    ids=lambda p: p.name,
)
def test_a_longer_startup_never_misses_fewer(arrivals, policy):
    runs = [
        simulate_scaled_day(arrivals, ScaledPool(PER, delay, allowance_s=2.0), policy)
        for delay in (0.0, 30.0, 120.0, 600.0)
    ]
    missed = [r.missed_requests for r in runs]
    assert missed == sorted(missed) and missed[-1] > missed[0]
    # these policies see only the arrivals and what they asked for: the same instances paid
    assert len({round(r.instance_hours, 9) for r in runs}) == 1


def test_the_outstanding_requests_policy_sees_the_backlog():
    # 10 req/s, 2 s in the system at the knee of 10 req/s: 20 outstanding at full load; a
    # target of 0.5 of that (10 per instance) wants 2 instances, and a backlog of 40 four more
    from inference_econ.load.autoscaling import Observation

    obs = Observation(0.0, 10.0, (10.0,), 1, 1, 0.0, 10.0, 2.0)
    keda = OutstandingRequests(target=0.5)
    assert keda.desired(obs) == 2
    assert keda.desired(Observation(0.0, 10.0, (10.0,), 1, 1, 40.0, 10.0, 2.0)) == 6
    # the planner's line through rates 10, 20, 30 a minute apart, 60 s ahead: 40 req/s
    planner = SloHeadroom(target=0.2, lead_s=60.0)
    assert planner.predicted(Observation(0.0, 30.0, (10.0, 20.0, 30.0), 1, 1, 0, 10.0, 2.0)) == (
        pytest.approx(40.0)
    )
    with pytest.raises(SpecError, match="unknown policy 'hap'.*hpa, keda, planner"):
        make_policy("hap")
    with pytest.raises(SpecError, match=r"hpa target.*\(0, 1\]"):
        make_policy("hpa", 1.5)


def test_every_policy_starts_the_day_warm(arrivals):
    """The first hour runs at 15 req/s on instances of 10 req/s: each policy starts with what
    it wants with that load served (HPA at 0.8: ceil(15 / 8) = 2; KEDA at 0.8 of an instance's
    1 s x 10 req/s outstanding: ceil(15 / 8) = 2; the planner with 0.2 headroom: 2), not from
    an empty pool whose queue it then chases (KEDA had started with the pool's minimum, 1,
    asked for 21 at its first poll and 110 within ten minutes, and missed 2,321 requests)."""
    pool = ScaledPool(PER, startup_s=120.0, allowance_s=2.0)
    for policy in (
        TargetUtilisation(target=0.8),
        OutstandingRequests(target=0.8),
        SloHeadroom(target=0.2),
    ):
        run = simulate_scaled_day(arrivals, pool, policy)
        assert run.ready[0] == run.asked[0] == 2, policy.name
        assert run.asked[:600].max() <= 3, policy.name  # no chase of a cold queue
        assert run.missed[:600].sum() == 0, policy.name


def test_startup_delays_from_the_published_figures():
    from inference_econ.api import setting_of

    # a delay given outright reads as the seconds given, a day's with thousands separated
    assert [given_delay(s).describe() for s in (120, 97.5, 86400)] == [
        "120 s (given)", "97.5 s (given)", "86,400 s (given)",
    ]  # fmt: skip

    setting = setting_of("Llama 3 70B", "H100", weight_bits=8)
    figures = startup_figures()
    engine = (
        figures["engine_start_s"] + figures["graph_compile_s"] + figures["cuda_graph_capture_s"]
    )
    assert engine == 44 + 13 + 7  # Tensorfuse's vLLM start with its caches kept
    local = startup_delay(setting, 4, "local-ssd")
    weights = local.weight_bytes
    assert 68e9 < weights < 72e9  # 70.6 billion parameters at one byte each
    assert local.weights_s == pytest.approx(weights / 2.1e9)  # one SSD for the instance
    assert local.total_s == pytest.approx(weights / 2.1e9 + 64)
    # each GPU's shard over its own rank (1.83 GB/s) or its own 400 Gb/s NIC (50 GB/s)
    assert startup_delay(setting, 4, "network").weights_s == pytest.approx(weights / 4 / 1.83e9)
    assert startup_delay(setting, 4, "peer-gpu").weights_s == pytest.approx(weights / 4 / 50e9)
    with pytest.raises(SpecError, match="unknown weight source 'nfs'"):
        startup_delay(setting, 4, "nfs")
    assert given_delay(90).total_s == 90


def _plan(rates):
    """A demand plan on hand-given numbers: instances of 1 H100 holding 10 req/s each."""
    from inference_econ.api import setting_of

    curve = DemandCurve("test", np.arange(len(rates)), np.asarray(rates, dtype=float))
    setting = setting_of("Llama 3 8B", "H100")
    prices = Prices(1.0, 3.0, None, "owned", "on-demand")
    needed = instances_needed(rates, PER)
    return _size_plan(
        curve, Targets(ttft_p99_s=2.0), setting, 1, PER, needed, prices, None, 100.0, {}
    )


def test_the_search_picks_the_cheapest_target_within_the_budget():
    plan = _plan([15.0, 35.0])
    found = autoscale_search(plan, "hpa", given_delay(60.0), time_in_system_s=2.0, miss_budget=0.01)
    shares = [r.missed_share for r in found.tried]
    fits = [r for r in found.tried if r.missed_share <= 0.01]
    assert found.best is min(fits, key=lambda r: r.instance_hours)
    assert max(shares) > 0.0 and found.pool.allowance_s == 2.0  # the TTFT target
    row = found.summary()
    # every instance at the on-demand price; with the plan's reserved base (4 of them, at 1.0)
    assert row.usd == pytest.approx(row.gpu_hours * 3.0)
    assert found.hourly.instance_hours >= plan.needed.sum()  # asked for 60 s early
    base = plan.reserved_instances
    above = np.maximum(found.best.asked - base, 0).sum() / 3600
    assert row.usd_with_reserved == pytest.approx(base * 2 * 1.0 + above * 3.0)
    assert found.timeline()["autoscaled_usd"].iloc[-1] == pytest.approx(row.usd, rel=1e-3)


def test_a_budget_no_target_meets_is_one_line_naming_what_to_change():
    # from 15 to 45 req/s: even at half utilisation 4 instances (40 req/s) serve the first hour,
    # and the fifth serves 15 minutes into the second
    plan = _plan([15.0, 45.0])
    with pytest.raises(InfeasibleError) as err:
        autoscale_search(plan, "hpa", given_delay(900.0), time_in_system_s=2.0, miss_budget=0.0)
    text = str(err.value)
    assert "\n" not in text and "--miss-budget 0" in text
    assert "--weights-from peer-gpu" in text and "900 s start-up" in text


def test_capacity_demand_autoscale_end_to_end(tmp_path):
    from click.testing import CliRunner

    from inference_econ.cli import main

    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_s\n0,2\n1,6\n", encoding="utf-8")
    figure = tmp_path / "day.png"
    args = ["capacity", "Llama 3 8B", "-H", "H100", "--weight-bits", "8", "--demand", str(curve)]
    args += ["--prompt-tokens", "500", "--output-tokens", "100", "--slo-ttft-p99", "1"]
    args += ["--requests", "100", "--max-gpus", "1", "--autoscale", "hpa", "--startup-time", "120"]
    result = CliRunner().invoke(main, [*args, "--figure", str(figure), "-q"])
    assert result.exit_code == 0, result.output
    assert "Every target tried, and the hourly plan's day simulated the same way" in result.output
    assert "Start-up of a new instance: 120 s (given); it is paid" in result.output  # no sources
    assert "waits longer than 1 s for capacity" in result.output and figure.stat().st_size > 0
    # a weight source is an autoscaling option: refused without --autoscale
    bad = CliRunner().invoke(main, [*args[:-4], "--weights-from", "network", "-q"])
    assert bad.exit_code == 2 and "--weights-from" in bad.output


def test_a_traces_arrivals_replace_the_poisson_stream():
    from inference_econ.load.scaled_pool import trace_counts

    # times in seconds from the day's start, binned by the second; one past the hour left out
    counts = trace_counts([0.2, 0.7, 1.5, 3.9, 3600.5], hours=1)
    assert counts.shape == (3600,) and counts[:5].tolist() == [2, 1, 0, 1, 0]
    plan = _plan([15.0, 35.0])
    steady = np.full(7200, 20)  # 20 a second all day: 2 instances from the start, no misses
    found = autoscale_search(
        plan, "hpa", given_delay(60.0), time_in_system_s=2.0, targets=[1.0], arrivals=steady
    )
    assert found.best.requests == 144_000 and found.best.missed_requests == 0
    with pytest.raises(SpecError, match="has 3600 bins for 2 hours of demand"):
        autoscale_search(plan, "hpa", given_delay(60.0), time_in_system_s=2.0, arrivals=counts)


def test_the_hourly_plan_keeps_no_instance_at_an_hour_that_needs_none():
    """At zero start-up the hourly plan's day uses exactly its GPU-hours (§E14), hours of no
    demand included: its replay had kept one instance up at them (a reactive policy's floor),
    36 instance-hours where the plan bought 24 for a day idle at night."""
    plan = _plan([0.0, 15.0, 0.0, 35.0])
    assert plan.needed.tolist() == [0, 2, 0, 4]
    found = autoscale_search(plan, "hpa", given_delay(0.0), time_in_system_s=2.0, miss_budget=1.0)
    assert found.hourly.instance_hours == pytest.approx(plan.needed.sum())


def _capacity(tmp_path, *extra: str) -> dict[str, str]:
    """capacity --demand of a two-hour curve of Llama 3 8B on one-GPU H100 instances, in each
    format."""
    from click.testing import CliRunner

    from inference_econ.cli import main

    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_s\n0,2\n1,30\n", encoding="utf-8")
    args = ["capacity", "Llama 3 8B", "-H", "H100", "--weight-bits", "8", "--demand", str(curve)]
    args += ["--prompt-tokens", "500", "--output-tokens", "100", "--slo-ttft-p99", "1"]
    args += ["--requests", "100", "--max-gpus", "1", "-q", *extra]
    out = {}
    for fmt in ("table", "json", "csv"):
        result = CliRunner().invoke(main, [*args, "--format", fmt])
        assert result.exit_code == 0, result.output
        out[fmt] = result.stdout
    return out


def test_autoscale_json_and_csv_carry_the_summary_the_text_prints(tmp_path):
    """JSON and CSV had carried every target's row only; the chosen target's day beside the
    hourly plan's, which the text prints above them, is their ``summary``."""
    import json

    out = _capacity(tmp_path, "--autoscale", "hpa", "--startup-time", "120")
    d = json.loads(out["json"])
    s = d["summary"]
    chosen = next(r for r in d["rows"] if r["chosen"])
    hourly = next(r for r in d["rows"] if r["policy"] == "hourly plan")
    assert (s["gpu_hours"], s["usd"]) == (chosen["gpu_hours"], chosen["usd"])
    assert (s["hourly_plan_gpu_hours"], s["hourly_plan_usd"]) == (
        hourly["gpu_hours"],
        hourly["usd"],
    )
    summary = out["table"].split("\n\n")[0].splitlines()[3:]  # past the title, header, rule
    shown = dict(line.split(None, 1) for line in summary)
    assert s["startup_s"] == 120 and shown["startup_ms"] == "120,000"
    # counts with thousands separators, as every other figure of the text (it had printed
    # "115417"); JSON keeps them whole numbers
    assert isinstance(s["requests"], int) and s["requests"] > 100_000
    assert shown["requests"] == f"{s['requests']:,}" and "," in shown["requests"]
    assert "with the hourly plan's 1 reserved instance all day" in out["table"]  # not "instances"
    assert shown["policy"] == s["policy"]
    g = s["gpu_hours"]  # an expected figure with its interval, as every other is printed
    assert out["table"].startswith("Expected figures: achievable preset")
    assert shown["gpu_hours"] == (
        f"{g:.4g} (80 %: {s['gpu_hours_low80']:.4g}-{s['gpu_hours_high80']:.4g}; "
        f"90 %: {s['gpu_hours_low90']:.4g}-{s['gpu_hours_high90']:.4g})"
    )
    assert s["gpu_hours_low90"] <= s["gpu_hours_low80"] <= g <= s["gpu_hours_high80"]
    assert s["max_rate_per_instance_low80"] < s["max_rate_per_instance"]
    assert f"gpu_hours {s['gpu_hours']:.10g}; usd {s['usd']:.10g};" in out["csv"]
    assert f"startup_s {s['startup_s']:.10g};" in out["csv"]


def test_a_demand_plan_gives_its_hours_and_candidates_in_every_format(tmp_path):
    """The text had printed the candidates and not the hours, JSON and CSV the hours and not the
    candidates: each format now carries both, with the same numbers."""
    import io
    import json

    import pandas as pd

    from inference_econ.output.render import csv_tables

    out = _capacity(tmp_path)
    d = json.loads(out["json"])
    text = out["table"].splitlines()
    head = text.index(
        "Each hour: its load, the instances it needs, and those reserved, on demand or spot"
    )
    hours = [line.split() for line in text[head + 3 : head + 3 + len(d["rows"])]]
    assert [(int(h[0]), float(h[1]), int(h[2])) for h in hours] == [
        (r["hour"], r["requests_per_s"], r["instances"]) for r in d["rows"]
    ]
    assert len(d["rows"]) == 2 and d["rows"][1]["instances"] >= 1
    head = text.index("Every candidate: its most load per instance and the cheapest plan with it")
    shown = [line.split()[:2] for line in text[head + 3 : head + 3 + len(d["candidates"])]]
    assert len(shown) > 1 and shown == [
        [c["hardware"], str(c["gpus_per_instance"])] for c in d["candidates"]
    ]
    csv = out["csv"]
    assert pd.read_csv(io.StringIO(csv), comment="#")["instances"].tolist() == [
        r["instances"] for r in d["rows"]
    ]
    back = csv_tables(csv)["candidates"]
    assert back["max_rate_per_instance"].tolist() == pytest.approx(
        [c["max_rate_per_instance"] for c in d["candidates"]], rel=1e-9
    )
    assert d["summary"]["max_rate_per_instance"] == pytest.approx(
        d["candidates"][0]["max_rate_per_instance"]
    )


def test_a_held_load_its_sessions_run_could_not_judge_says_so_in_the_plan(tmp_path):
    """3-turn sessions of 200 requests: the knee's run never holds the sessions its load keeps
    going, so one H100 "holds" thousands of requests/s. capacity --rate prints that note, and
    so do the demand plan and the autoscaled day built on the same held load."""
    import json

    from click.testing import CliRunner

    from inference_econ.cli import main

    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_s\n0,5\n1,10\n", encoding="utf-8")
    args = ["capacity", "Llama 3 8B", "-H", "H100", "--demand", str(curve), "--turns", "3"]
    args += ["--prompt-tokens", "500", "--output-tokens", "100", "--slo-tpot-p99", "0.1"]
    args += ["--requests", "200", "--max-gpus", "1", "-q"]
    said = "one instance's held load: nine sessions in ten last at least"
    result = CliRunner().invoke(main, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    notes = json.loads(result.stdout)["notes"]
    assert any(n.startswith(said) and "raise requests" in n for n in notes), notes
    result = CliRunner().invoke(main, [*args, "--autoscale", "hpa", "--startup-time", "60"])
    assert result.exit_code == 0 and said in result.output, result.output
    steady = [*args[:6], *args[8:]]  # no sessions: no such note
    result = CliRunner().invoke(main, steady)
    assert result.exit_code == 0 and "one instance's held load" not in result.output


def test_instances_starting_together_are_counted_not_listed():
    # a scale-up of a million instances is one entry of those starting (one a bin), so a day
    # at a rate of 1e9 req/s scales as fast as one at 10; a scale-down cancels the last asked
    from inference_econ.load.scaled_pool import _State

    state = _State(ready=2, asked=2)
    state.apply(0, 1_000_002, window=0, delay=3)
    state.apply(1, 1_000_012, window=0, delay=3)
    assert [list(s) for s in state.starting] == [[3, 1_000_000], [4, 10]]
    state.apply(2, 999_997, window=0, delay=3)  # 15 fewer: the 10 asked last, then 5 more
    assert [list(s) for s in state.starting] == [[3, 999_995]]
    state.arrive(3)
    assert (state.ready, state.asked, len(state.starting)) == (999_997, 999_997, 0)
    state.apply(4, 7, window=0, delay=3)  # down with none starting: serving ones leave
    assert (state.ready, state.asked) == (7, 7)


def test_the_chosen_days_intervals_are_its_day_where_instances_hold_the_held_loads_ends():
    """The policy scales by the expected load an instance holds; where instances truly hold
    less (the held load's low end) the same policy misses more, where more, fewer. By hand: a
    flat 10 req/s for an hour, instances the policy takes to hold 2 req/s (five asked for at
    target 1) that truly hold 1.5: 7.5 served a second of 10, first come first served, so the
    backlog grows 2.5 a second and only 45 requests are served within their 1 s (seconds 0-2's
    30, then 7.5, 5 and 2.5 of the next three seconds')."""
    arrivals = np.full(3600, 10.0)
    policy = make_policy("hpa", 1.0, 0.0)
    pool = ScaledPool(per_instance=2.0, startup_s=0.0, allowance_s=1.0)
    plain = simulate_scaled_day(arrivals, pool, policy)
    slow = simulate_scaled_day(
        arrivals, dataclasses.replace(pool, serving_per_instance=1.5), policy
    )
    assert plain.missed_requests == 0 and int(plain.asked.max()) == 5
    assert (slow.asked == plain.asked).all()  # it asks for what it would: the estimate's count
    assert slow.served.sum() == pytest.approx(7.5 * 3600)
    assert slow.missed_requests == 36000 - 45


def test_spot_capacity_is_refused_beside_autoscaling(tmp_path):
    # a scaled day prices every instance on the burst basis: a spot interruption rate given
    # with --autoscale would be dropped without a word
    from inference_econ import api

    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_s\n0,2\n1,6\n", encoding="utf-8")
    with pytest.raises(SpecError, match="spot_interruption_rate.*does not apply with autoscale"):
        api.autoscale_plan(
            "Llama 3 8B", "H100", demand=curve, autoscale="hpa", spot_interruption_rate=0.05,
            input_lengths="500", output_lengths="100", slo_ttft_p99_s=1,
        )  # fmt: skip


def test_an_unused_spot_offer_says_why_no_spot_was_bought():
    from inference_econ.optimise.demand import _unused_spot

    setting = _plan([5.0]).setting
    curve = DemandCurve("test", np.arange(3), np.array([15.0, 35.0, 15.0]))
    needed = instances_needed(curve.requests_per_s, PER)  # 2, 4, 2
    # spot at 1.5 losing half an hour is 3.0 an effective instance: on-demand at 2.0 is cheaper
    prices = Prices(1.0, 2.0, 1.5, "owned", "on-demand")
    plan = _size_plan(curve, Targets(), setting, 1, PER, needed, prices, 0.5, 100.0, {})
    assert plan.reserved_instances == 2 and plan.on_demand.tolist() == [0, 2, 0]
    assert _unused_spot(plan).endswith("on-demand was cheaper per effective instance")
    # a flat day of four instances, spot at 1.2 losing 5 %: a lost share rounds up to a whole
    # spot instance, so the four reserved at 1.0 serve every hour; on-demand (6.0) was not
    # what was cheaper
    flat = DemandCurve("test", np.arange(3), np.array([35.0, 35.0, 35.0]))
    needed = instances_needed(flat.requests_per_s, PER)
    prices = Prices(1.0, 6.0, 1.2, "owned", "on-demand")
    plan = _size_plan(flat, Targets(), setting, 1, PER, needed, prices, 0.05, 100.0, {})
    assert plan.reserved_instances == 4 and not plan.on_demand.any() and not plan.spot.any()
    assert _unused_spot(plan) == (
        "spot capacity was offered but no hour needs more than the 4 reserved instances"
    )


def test_the_autoscale_texts_table_of_targets_prints_counts_with_separators():
    """Every target's missed requests and peak instances had printed as written (156119)
    beside GPU-hours and dollars with separators (2,447)."""
    import pandas as pd

    from inference_econ.cli.autoscale_commands import _counts_as_figures
    from inference_econ.output.render import render

    rows = pd.DataFrame({"usd": [2447.3], "peak_instances": [1024], "missed_requests": [156119],
                         "within_budget": [False]})  # fmt: skip
    text = render(_counts_as_figures(rows), "table")
    assert "2,447" in text and "1,024" in text and "156,119" in text and " no" in text
    assert "156119" in render(rows, "table")  # (the integers as the table writes them)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"miss_budget": 7}, "field 'miss_budget': is 7 (expected a number >= 0 and <= 1)"),
        ({"miss_budget": -0.5}, "field 'miss_budget': is -0.5"),
        ({"scale_down_window_s": -1}, "field 'scale_down_window_s': is -1 in seconds"),
        ({"search": []}, "field 'search': is empty"),
        ({"search": "0.9"}, "field 'search': is '0.9'"),
        ({"search": [0.9, "x"]}, "field 'search': holds 'x'"),
    ],
)
def test_the_api_refuses_scaling_settings_out_of_range_before_any_search(tmp_path, given, message):
    # the command line checks --miss-budget and --scale-down-window against the settings
    # table; the API had taken a budget of 7 (every target "within" it) or a negative window
    from inference_econ import api

    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_s\n0,2\n1,6\n", encoding="utf-8")
    with pytest.raises(SpecError) as err:
        api.autoscale_plan(
            "Llama 3 8B", "H100", demand=curve, autoscale="hpa", input_lengths="500",
            output_lengths="100", slo_ttft_p99_s=1, progress=pytest.fail, **given,
        )  # fmt: skip
    assert message in str(err.value)


def test_the_planner_says_how_far_its_line_reaches_past_the_rates_it_fits():
    """The planner's forecast is a line through its last four one-minute rates, extended by the
    start-up delay: a 3,000 s start-up forecasts 12.5 times the 240 s the line is fitted over,
    which its description says (a plan that chose it had printed only "3000 s ahead")."""
    from inference_econ.load.autoscaling import make_policy

    policy = make_policy("planner", 0.2, lead_s=3000.0)
    assert policy.describe() == (
        "SLO headroom 0.2 on the load predicted 3000 s ahead by a line through the last 240 s "
        "of rates (Dynamo planner)"
    )
