"""A plan's run at the full load: instances are added while it misses a target, never past
--max-gpus and at most ``MAX_BUMPS``; where the cheapest option still misses, the next one is
run, and where none holds the targets the plan is refused (docs/model-part-e.md §E6)."""

import types

import pytest

import inference_econ as ie
from inference_econ.load.deployment import Deployment
from inference_econ.load.targets import Targets
from inference_econ.optimise import capacity
from inference_econ.serving.setting import make_setting


def test_a_plan_whose_cheapest_option_keeps_missing_is_the_next_that_holds():
    """Sessions of four turns on Llama 3.1 8B: the search sizes 4 x 1 H100, whose p99 TTFT
    stays over 200 ms at the full load (a later turn's long prompt, not the load) however many
    are added; the plan had been 12 x 1 GPU, past --max-gpus 8 and still over the target."""
    kw = dict(arrival_rate_per_s=12, requests=300, input_lengths="lognormal:1000:0.6")
    kw.update(output_lengths="lognormal:200:0.5", session_turns=4, think_time_s=30)
    kw.update(shared_prefix_tokens=2000, shared_prefixes=16, max_gpus=8, router="prefix_aware")
    plan = ie.capacity("Llama 3.1 8B", "H100", slo_ttft_p99_s=0.2, slo_tpot_p99_s=0.03, **kw)
    assert (plan.deployment.instances, plan.deployment.gpus_per_instance) == (2, 2)
    assert plan.result.meets_targets and plan.result.usd_per_hour == pytest.approx(8.4)
    assert plan.result.ttft_s.p99 == pytest.approx(0.1212, abs=1e-3)
    (missed,) = [n for n in plan.notes if n.startswith("missed a target at the full load")]
    assert missed.startswith("missed a target at the full load: 8 x 1 GPU H100-SXM: p99 TTFT")


def _runs(p99_ttft_by_gpus: dict[int, float], calls: list):
    """A stand-in for ``run_at``: a run's p99 TTFT by GPUs per instance (met at <= 1 s)."""

    def run_at(pool, setting, deployment, traffic, config):
        calls.append(deployment)
        p99 = p99_ttft_by_gpus[deployment.gpus_per_instance]
        result = types.SimpleNamespace(
            meets_targets=p99 <= 1.0, ttft_s=types.SimpleNamespace(p99=p99),
            p99={"ttft": p99, "tpot": 0.0, "e2e": 0.0}, rejected=0, stable=True,
        )  # fmt: skip
        result.with_targets = lambda targets: result
        return result

    return run_at


def test_instances_are_added_only_up_to_max_gpus(monkeypatch):
    calls: list = []
    monkeypatch.setattr(capacity, "run_at", _runs({1: 2.0}, calls))
    targets = Targets(ttft_p99_s=1.0)
    d, result, missed = capacity._verify(None, Deployment(1, 3), None, targets, None, 6)
    assert [c.instances for c in calls] == [3, 4, 5, 6]
    assert d == Deployment(1, 6) and not result.meets_targets
    assert missed == "p99 TTFT 2000 ms over 1000"


def test_a_prefill_pool_on_other_gpus_keeps_them_as_instances_are_added():
    # the added instance had rebuilt the deployment without the prefill pool's GPUs
    h200 = make_setting("Llama 3.1 8B", "H200")
    d = Deployment(2, 3, 1, 2, h200)
    targets = Targets(ttft_p99_s=1.0, tpot_p99_s=0.05)
    late = types.SimpleNamespace(ttft_s=types.SimpleNamespace(p99=2.0))
    assert capacity._one_more(d, late, targets) == Deployment(2, 3, 1, 3, h200)
    on_time = types.SimpleNamespace(ttft_s=types.SimpleNamespace(p99=0.5))
    assert capacity._one_more(d, on_time, targets) == Deployment(2, 4, 1, 2, h200)


def test_a_plan_none_of_whose_options_holds_the_targets_is_refused(monkeypatch):
    calls: list = []
    h100 = make_setting("Llama 3.1 8B", "H100")
    options = [(4.2, 2, h100, Deployment(1, 2)), (8.4, 4, h100, Deployment(2, 2))]
    monkeypatch.setattr(capacity, "run_at", _runs({1: 2.0, 2: 1.5}, calls))
    monkeypatch.setattr(capacity, "screens", lambda *a: False)
    monkeypatch.setattr(capacity, "knee_rows", lambda *a: [])
    monkeypatch.setattr(capacity, "_options", lambda rows, mixed: options)
    traffic = ie.make_traffic(rate_per_s=4, input_lengths="100", output_lengths="10")
    with pytest.raises(ie.InfeasibleError) as caught:
        capacity.cheapest_deployment([h100], traffic, Targets(ttft_p99_s=1.0), max_gpus=6)
    assert str(caught.value) == (
        "no deployment meets p99 TTFT <= 1 s at 4 req/s in a run at the full load, with up to "
        "8 more instances each within --max-gpus 6 (6 x 1 GPU H100-SXM: p99 TTFT 2000 ms over "
        "1000; 3 x 2 GPUs H100-SXM: p99 TTFT 1500 ms over 1000)"
    )
    assert [(c.gpus_per_instance, c.instances) for c in calls] == [
        (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (2, 2), (2, 3)
    ]  # fmt: skip


def test_an_n_plus_one_plan_over_max_gpus_says_so():
    """Llama 3.1 8B on H100 at 10 req/s: one GPU holds 21.6 req/s within a p99 TPOT of 50 ms,
    so --max-gpus 1 plans 1 x 1 GPU; its N+1 plan is 2 x 1 GPU, over the limit, and a note
    says so rather than pricing it beside the plan as if it kept within it."""
    kw = dict(arrival_rate_per_s=10, requests=1000, input_lengths=1000, output_lengths=200)
    plan = ie.capacity("Llama 3.1 8B", "H100", slo_tpot_p99_s=0.05, failures=True, max_gpus=1, **kw)
    assert plan.deployment.gpus == 1 and plan.redundancy.deployment.gpus == 2
    (over,) = [n for n in plan.notes if n.startswith("N+1 needs")]
    assert over == (
        "N+1 needs 2 GPUs (2 x 1 GPU), over --max-gpus 1: the plan for failures is priced beyond it"
    )
