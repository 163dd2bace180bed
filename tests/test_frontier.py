"""Frontier extraction and the optimiser: invariants, brute force, speculation, discrete."""

import collections
import math

import numpy as np
import pandas as pd
import pytest
from conftest import fewer_pipeline_degrees

import inference_econ as ie
from inference_econ.optimise.frontier import Frontier, domination_factor, pareto_indices


def test_pareto_indices_by_hand():
    lat = np.array([1.0, 2.0, 3.0, 2.0, 4.0, np.inf])
    cost = np.array([5.0, 3.0, 3.0, 4.0, 1.0, 0.1])
    assert list(pareto_indices(lat, cost)) == [0, 1, 4]


def assert_frontier_invariants(front: Frontier):
    pts = front.points
    speed, cost = pts["tokens_per_s"].to_numpy(), pts["usd_per_mtok"].to_numpy()
    assert np.all(np.diff(speed) >= 0), "sorted by speed"
    assert np.all(np.diff(cost) >= 0), "faster is never cheaper on a frontier"
    for s, c in zip(speed, cost):
        beaten = (speed >= s) & (cost <= c) & ((speed > s) | (cost < c))
        assert not beaten.any(), "no point is beaten on both axes"


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(model="Llama 3 70B", weight_bits=8),
        dict(model="Mixtral 8x22B", context_tokens=4000),
        dict(
            model="DeepSeek-V3 (paper approximation)", draft="Llama 3 8B MQA", context_tokens=100000
        ),
    ],
    ids=["dense", "moe-context", "mla-spec-long"],
)
def test_frontier_invariants(kwargs):
    model = kwargs.pop("model")
    front = ie.frontier(model, "H100-paper", **kwargs)
    assert len(front) > 50
    assert_frontier_invariants(front)
    assert front.fastest().tokens_per_s == front.points.tokens_per_s.max()
    assert front.cheapest().usd_per_mtok == front.points.usd_per_mtok.min()


def test_fast_search_matches_brute_force_on_a_coarse_grid():
    """The fast search against the loop over every layout, on fewer pipeline degrees than the
    presets' (``conftest.fewer_pipeline_degrees``): both offer the same layouts."""
    for model, kwargs in [
        ("Llama 3 70B", dict(weight_bits=8)),
        ("Mixtral 8x22B", dict(draft="Llama 3 8B")),
        ("Mixtral 8x22B", dict(assumptions="paper-table-5")),
    ]:
        setting = ie.make_setting(model, "H100-paper", **fewer_pipeline_degrees(kwargs))
        fast = ie.frontier(setting, grid_points=60)
        brute = ie.frontier(setting, method="exhaustive", grid_points=60)
        # at least as good as brute force at every speed (within 0.5 %) and no better than it
        assert domination_factor(brute, fast) <= 1.005
        assert domination_factor(fast, brute) <= 1.005


@pytest.mark.parametrize(
    "model, hardware, kwargs",
    [
        ("Llama 3 70B", "H100-paper", dict(weight_bits=8)),
        ("Llama 3 70B", "H100-paper", dict(weight_bits=8, draft="Llama 3 8B", acceptance=0.8)),
        ("Mixtral 8x22B", "H100-paper", dict(assumptions="paper-table-5")),
        ("Llama 3 8B", "H100", dict(weight_bits=4, context_tokens=8000)),
        ("Llama 3 70B", "H100", dict(assumptions="achievable")),
        # the per-layout path: layouts within a TTFT limit, a draft, mixture of experts
        (
            "Mixtral 8x22B",
            "H100-paper",
            dict(prompt_tokens=1000, ttft_max_s=0.5, draft="Llama 3 8B"),
        ),
    ],
)
def test_search_on_the_feasible_window_is_the_full_search_bit_for_bit(
    model, hardware, kwargs, monkeypatch
):
    """Each block of the fast search is evaluated only on the rectangle of its feasible points
    (``grid._window``, docs/model.md "The search"): every pass latency is the same, bit for
    bit, as evaluating the whole block (a block is one pipeline degree's: fewer of them than
    the presets', ``conftest.fewer_pipeline_degrees``)."""
    from inference_econ.optimise import grid, optimiser

    setting = ie.make_setting(model, hardware, **fewer_pipeline_degrees(kwargs))
    problem = optimiser.Problem(setting, ie.Method(grid_points=60))
    n_values, b_values = problem.continuous_axes()
    windowed = problem._pass_latencies(n_values, b_values)
    calls, window = [], grid._window

    def whole(ok):
        calls.append(window(ok))
        return slice(0, ok.shape[0]), slice(0, ok.shape[1])

    monkeypatch.setattr(grid, "_window", whole)
    full = problem._pass_latencies(n_values, b_values)
    # the window does cut some blocks here (else this test would compare a thing with itself)
    assert any(r.stop - r.start < 60 or c.stop - c.start < 60 for r, c in calls)
    for part_w, part_f in zip(windowed, full):
        assert (part_w is None) == (part_f is None)
        for S in part_w or {}:
            assert part_w[S].dtype == part_f[S].dtype
            assert np.array_equal(part_w[S], part_f[S]), S


def test_threads_give_the_same_frontier(monkeypatch):
    """The suite runs the grid on one thread (conftest); two threads must give the very same
    frontier, and a bad thread count is one clear error."""
    from inference_econ.errors import SpecError
    from inference_econ.optimise import optimiser

    setting = ie.make_setting("Mixtral 8x22B", "H100-paper", draft="Llama 3 8B")
    method = ie.Method(grid_points=60)
    one = optimiser._search(setting, method).to_frontier()
    monkeypatch.setenv("INFERENCE_ECON_THREADS", "2")
    assert optimiser._executor() is not None
    monkeypatch.setattr(optimiser, "_PASSES", collections.OrderedDict())  # searched again
    two = optimiser._search(setting, method).to_frontier()
    assert one.points.equals(two.points)
    monkeypatch.setenv("INFERENCE_ECON_THREADS", "two")
    with pytest.raises(SpecError, match="INFERENCE_ECON_THREADS"):
        optimiser.search_threads()


def test_acceptance_and_demand_cap_reuse_the_pass_latencies(monkeypatch):
    """Pass latencies do not depend on the acceptance rate or the demand cap: a setting that
    differs only there reuses them, and gets the frontier a search from scratch gives."""
    from inference_econ.optimise import optimiser

    searches = []
    search = optimiser.Problem._pass_latencies
    monkeypatch.setattr(
        optimiser.Problem, "_pass_latencies", lambda *a: searches.append(1) or search(*a)
    )
    monkeypatch.setattr(optimiser, "_PASSES", collections.OrderedDict())
    method = ie.Method(grid_points=30)
    base = ie.make_setting("Llama 3 70B", "H100-paper", draft="Llama 3 8B", acceptance=0.8)
    optimiser._search(base, method).to_frontier()
    other = base.replace(spec=base.spec.with_acceptance(0.3), max_throughput_tokens_per_s=1e5)
    reused = optimiser._search(other, method).to_frontier()
    assert len(searches) == 1
    monkeypatch.setattr(optimiser, "_PASSES", collections.OrderedDict())
    fresh = optimiser._search(other, method).to_frontier()
    assert len(searches) == 2 and reused.points.equals(fresh.points)
    plain = optimiser._search(base.replace(spec=None), method).to_frontier()
    assert len(searches) == 3 and (plain.points.draft_tokens == 1).all()


def test_tighter_demand_cap_is_never_cheaper():
    fronts = [
        ie.frontier("Llama 3 8B", "H100-paper", context_tokens=1, max_throughput_tokens_per_s=cap)
        for cap in (math.inf, 1e6, 1e4)
    ]
    speeds = np.linspace(20, 300, 15)
    costs = [f.cost_at_speed(speeds) for f in fronts]
    assert np.all(costs[1] >= costs[0] * (1 - 1e-9)) and np.all(costs[2] >= costs[1] * (1 - 1e-9))
    throughput = fronts[2].points["throughput_tokens_per_s"]
    assert (throughput <= 1e4 * (1 + 1e-9)).all()


def test_speculation_never_hurts_and_zero_acceptance_is_plain(bound_agrees_with_parts):
    # whole frontiers: each one's own speed range would cut them at different speeds; a
    # 200-point grid (a quarter of the default's CPU) shows the same: a speed-up of 1.39
    whole = dict(all_points=True, grid_points=200)
    plain = ie.frontier("Llama 3 70B", "H100-paper", **whole)
    spec = ie.frontier("Llama 3 70B", "H100-paper", draft="Llama 3 8B", acceptance=0.8, **whole)
    none = ie.frontier("Llama 3 70B", "H100-paper", draft="Llama 3 8B", acceptance=0.0, **whole)
    assert domination_factor(plain, spec) == pytest.approx(1.0, abs=1e-6)
    assert spec.fastest().tokens_per_s > 1.3 * plain.fastest().tokens_per_s
    assert (none.points["draft_tokens"] == 1).all()
    assert none.fastest().tokens_per_s == pytest.approx(plain.fastest().tokens_per_s)
    # every row's bound agrees with its breakdown: verification and draft passes that bind on
    # different sides make a mixed cycle (54 of the 434 points; 87 of 743 on 400 points)
    assert all(bound_agrees_with_parts(row) for row in spec.points.itertuples())
    assert (spec.points.bound == "mixed").mean() > 0.1


def test_frontier_api():
    front = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)
    df = front.to_dataframe()
    for col in (
        "tokens_per_s",
        "usd_per_mtok",
        "gpus",
        "batch",
        "pipeline_degree",
        "tensor_degree",
        "attention_degree",
        "expert_degree",
        "tp_dims",
        "draft_tokens",
        "mfu",
        "kv_read_s",
    ):
        assert col in df
    pref = front.preference_point()
    score = df.tokens_per_s**3 / df.usd_per_mtok
    assert pref.tokens_per_s**3 / pref.usd_per_mtok == pytest.approx(score.max())
    hit = front.cheapest_at_speed(100.0)
    assert (
        hit.tokens_per_s >= 100
        and hit.usd_per_mtok == df[df.tokens_per_s >= 100].usd_per_mtok.min()
    )
    assert front.cheapest_at_speed(1e6) is None
    assert front.cost_at_speed(100.0) == pytest.approx(hit.usd_per_mtok)


def test_model_that_fits_nowhere_says_so():
    front = ie.frontier("Llama 3 70B", "H100-paper", context_tokens=1e12)
    assert front.empty and "no configuration fits" in front.notes[0]
    with pytest.raises(ie.InfeasibleError, match="frontier is empty"):
        front.fastest()


def test_discrete_frontier_is_whole_and_no_better_than_continuous():
    aligned = ie.preset("paper").replace(node_aligned_layouts=True, name="aligned")
    for model, kwargs in [
        ("Llama 3 70B", dict(weight_bits=8)),
        ("DeepSeek-V3 (paper approximation)", {}),
    ]:
        cont = ie.frontier(model, "H100-paper", assumptions=aligned, **kwargs)
        disc = ie.frontier(model, "H100-paper", assumptions=aligned, discrete=True, **kwargs)
        pts = disc.points
        assert np.all(pts.gpus == np.round(pts.gpus)) and np.all(pts.batch == np.round(pts.batch))
        assert np.all((pts.gpus <= 8) | (pts.gpus % 8 == 0))
        layers = ie.load_model(model).layers
        assert np.all(layers % pts.pipeline_degree == 0) and np.all(
            pts.gpus % pts.pipeline_degree == 0
        )
        kv_heads = ie.load_model(model).attention.kv_heads
        heads = kv_heads if kv_heads > 1 else ie.load_model(model).attention.query_heads
        assert np.all(heads % pts.attention_degree == 0)
        assert_layouts_divide(model, pts)
        assert domination_factor(disc, cont) <= 1.005


def assert_layouts_divide(model, pts):
    """Every discrete layout divides the dimensions it splits: the feed-forward tensor degree
    t/e divides every feed-forward width, and 2-D splits divide what they split."""
    from inference_econ.model.machine import square_split

    arch = ie.load_model(model)
    widths = [g.ffn.d_ff for g in arch.layer_groups]
    for _, row in pts.iterrows():
        t_ff = int(round(row.tensor_degree / row.expert_degree))
        assert all(w % t_ff == 0 for w in widths), (model, row.gpus, row.tensor_degree)
        if row.tp_dims == "2D":
            r = int(square_split(t_ff))
            assert all((w % r == 0) and (w % (t_ff // r) == 0) for w in [arch.d_model, *widths])


def test_discrete_fastest_llama_70b_divides_its_widths():
    # 28,672 is not divisible by 40: TP 40 is not deployable
    front = ie.frontier("Llama 3 70B", "H100", discrete=True, grid_points=30)
    assert_layouts_divide("Llama 3 70B", front.points)
    assert 28672 % front.fastest().tensor_degree == 0


def test_discrete_expert_parallel_divides_experts():
    front = ie.frontier("Mixtral 8x22B", "H100-paper", discrete=True)
    e = front.points.expert_degree
    assert np.all(8 % e == 0) and (e > 1).any()


def test_dataframe_is_a_copy():
    # the setting of conftest's llama70_8bit_frontier: a cached frontier, as the copy must be
    f1 = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)
    f1.points.loc[:, "gpus"] = -1
    f2 = ie.frontier("Llama 3 70B", "H100-paper", weight_bits=8)
    assert (f2.points.gpus > 0).all()
    assert isinstance(f2.to_dataframe(), pd.DataFrame)


def test_a_label_names_a_frontier_without_computing_it_again():
    """``reproduce all`` computes one setting under several labels: the cache ignores the
    label, and each frontier is still named by its own."""
    from inference_econ.optimise import optimiser

    setting = ie.make_setting("Llama 3 70B", "H100-paper", weight_bits=8)
    first = optimiser.frontier(setting.replace(label="first"), ie.Method())
    before = optimiser._frontier_cached.cache_info()
    second = optimiser.frontier(setting.replace(label="second"), ie.Method())
    after = optimiser._frontier_cached.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
    assert (first.label, second.label) == ("first", "second")
    assert optimiser.frontier(setting, ie.Method()).label == "Llama 3 70B on H100-paper"
    assert first.points.equals(second.points) and first.metadata == second.metadata


@pytest.mark.parametrize(
    "model, bits",
    [
        ("Mistral Large 2", 16),
        ("DeepSeek-V3 (paper approximation)", 8),
        ("Mixtral 8x22B", 16),
        ("GPT-4 (reported)", 16),
    ],
)
def test_no_frontier_point_where_the_weights_exactly_fill_hbm(model, bits):
    # the grid starts at P·wb/C GPUs: weights fill HBM exactly, no room for anything else;
    # rounding the grid to float32 must not make that count feasible (the paper never has it)
    from inference_econ.model.workload import compile_workload

    setting = ie.make_setting(model, "H100-paper", weight_bits=bits)
    weight_bytes = compile_workload(setting.model, setting.assumptions).weights_total_bytes
    first = weight_bytes / setting.gpu.hbm_capacity_bytes
    for grid_points in (60, 400):
        front = ie.frontier(setting, grid_points=grid_points)
        assert front.points.gpus.min() > first * (1 + 1e-6)


def test_a_setting_asked_for_its_columns_and_its_frame_is_searched_once(monkeypatch):
    """The text table's columns and the DataFrame frontier of one setting come from one search
    (the frame had searched again)."""
    from inference_econ.optimise import optimiser

    calls = []
    search = optimiser._search
    monkeypatch.setattr(optimiser, "_search", lambda s, m: calls.append(1) or search(s, m))
    optimiser._columns_cached.cache_clear()
    optimiser._frontier_cached.cache_clear()
    setting = ie.make_setting("Llama 3 8B", "H100", weight_bits=8)
    columns = optimiser.frontier_columns(setting)
    frame = optimiser.frontier(setting)
    assert len(calls) == 1
    assert len(frame.points) == len(columns.to_frontier().points) > 0
