"""The Section 2 toy models and Table 1 (docs/model.md §A8)."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.serving import toy
from inference_econ.studies.tables import run_table


def test_table_1_matches_the_paper():
    t = run_table("table-1")
    assert np.allclose(t["tokens_per_s"], t["paper_tokens_per_s"], rtol=0.01)
    assert np.all(np.abs(t["gpus"] - t["paper_gpus"]) <= np.maximum(0.1 * t["paper_gpus"], 0.5))


def test_closed_form_is_the_minimum_of_the_latency_curve():
    r = toy.model_optimum(ie.load_model("Llama 3 70B"), 3.3e12)
    n = np.linspace(1, 200, 200001)
    t = toy.multi_device_latency_s(n, r.params, r.layers, 2.0, 3.3e12)
    assert n[np.argmin(t)] == pytest.approx(r.optimal_gpus, rel=1e-3)
    assert t.min() == pytest.approx(r.latency_s, rel=1e-6)


def test_tiny_model_uses_one_gpu():
    r = toy.optimum(params=1e6, layers=4, bytes_per_weight=2, bandwidth_bytes_per_s=3.3e12)
    assert r.optimal_gpus == 1.0


def test_critical_batch_balances_reads_and_arithmetic():
    b = toy.critical_batch(2.0, 3.3e12, 1e15)
    assert b == pytest.approx(1e15 * 2 / (2 * 3.3e12))
    # Eq. 1 by hand for an 8B model: at B* the arithmetic 2·P·B/F takes as long as the
    # weight reads wb·P/BW
    assert 2 * 8e9 * b / 1e15 == pytest.approx(2.0 * 8e9 / 3.3e12)


def test_scaling_law_eq_18_19():
    # large N*: t* ≈ 1.5 (L·A·c)^(2/3) (2·wb·P/BW)^(1/3) (Eq. 18); with L ∝ P^(1/3) the
    # exponent is 2/9 + 1/3 = 5/9, which the paper rounds to the square-root law of Eq. 19
    lats = []
    for scale in (1.0, 8.0, 64.0):
        p, layers = 1e11 * scale, 80 * scale ** (1 / 3)
        # t* + L·A·c drops the "-1" of sqrt(N) - 1, leaving the pure power law
        lats.append(toy.optimum(p, layers, 2.0, 3.3e12).latency_s + layers * 4 * 2e-6)
    exponent = np.log(lats[2] / lats[0]) / np.log(64)
    assert exponent == pytest.approx(5 / 9, abs=1e-6)
    # exactly √P needs L ∝ P^(1/4) (2/3 · 1/4 + 1/3 = 1/2), as the module says
    quarter = []
    for scale in (1.0, 16.0):
        p, layers = 1e11 * scale, 80 * scale ** (1 / 4)
        quarter.append(toy.optimum(p, layers, 2.0, 3.3e12).latency_s + layers * 4 * 2e-6)
    assert np.log(quarter[1] / quarter[0]) / np.log(16) == pytest.approx(0.5, abs=1e-6)
    assert "P^(1/4)" in toy.__doc__ and "P^(5/9)" in toy.__doc__
    # the paper's empirical check (Figure 2): PaLM 8B/62B/540B at 4/13/32 ms follow √P
    assert toy.square_root_law(540e9, 8e9, 4e-3) == pytest.approx(32e-3, rel=0.05)


def test_figure_2_states_what_the_law_predicts_for_the_stored_sizes():
    from inference_econ.studies.scenario import load_scenario

    scenario = load_scenario("paper/figure-2")
    points = {p["label"]: p for p in scenario.measured}
    small = points["PaLM 8B"]
    predicted = [
        toy.square_root_law(points[name]["params"], small["params"], small["latency_ms"])
        for name in ("PaLM 62B", "PaLM 540B")
    ]
    assert [round(x, 1) for x in predicted] == [10.8, 31.7]
    assert "predicts 10.8 and 31.7 ms" in scenario.description


def test_toy_frontier_of_a_mixture_of_experts():
    from inference_econ.model.assumptions import PAPER
    from inference_econ.model.workload import compile_workload
    from inference_econ.optimise.toy import toy_frontier

    arch = ie.load_model("Mixtral 8x22B")
    gpu = ie.load_hardware("H100-paper")
    work = compile_workload(arch, PAPER)
    front = toy_frontier(arch, gpu, points=60, all_points=True)
    pts = front.points
    # batches reach 2^(18 + log2 s) like the main optimiser (s = 4: 2^20)
    assert pts.batch.max() > 2**18 * 1.5
    # MFU counts the active parameters' FLOP: at most the sustained FLOP cap, and by hand
    peak = gpu.peak_flop_per_s(16)
    expected = 2 * work.active_params * pts.batch / (pts.gpus * peak * pts.latency_s)
    assert np.allclose(pts.mfu, expected) and pts.mfu.max() <= gpu.sustained_flop_fraction + 1e-9
    assert work.active_params < 0.3 * work.total_params


def test_figure_2_key_points_are_the_law_against_the_measured_latencies():
    from inference_econ.runs.runner import law_points
    from inference_econ.studies.scenario import load_scenario

    table = law_points(load_scenario("paper/figure-2").measured)
    assert list(table["model"]) == ["PaLM 8B", "PaLM 62B", "PaLM 540B"]
    # the law through PaLM 8B (4 ms at 8.63e9): 4 * sqrt(62.5 / 8.63) and 4 * sqrt(540.35 / 8.63)
    assert table["law_latency_ms"].tolist() == pytest.approx([4.0, 10.7645, 31.6513], rel=1e-4)
    assert table["measured_over_law"].tolist() == pytest.approx([1.0, 1.2077, 1.0110], rel=1e-3)
