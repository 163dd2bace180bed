"""The fast grid search's shortcuts change no number (docs/model.md "The search").

Each shortcut does the same floating-point operations on the same numbers, or skips one that
cannot change a value (a factor of exactly 1, a mask keeping every point), so the pass
latencies are compared bit for bit with the search without it, and the frontiers column by
column; the fast frontier is also compared with the brute-force loop over every layout.
"""

import functools

import numpy as np
import pytest
from conftest import fewer_pipeline_degrees
from search_settings import SETTINGS  # tests/ is on the path under pytest

import inference_econ as ie
from inference_econ.model.collectives import (
    ALLREDUCE,
    ALLTOALL,
    EXPERT_ALLTOALL,
    P2P,
    CollectiveCost,
    protocols_for,
)
from inference_econ.optimise import grid, optimiser


def _setting(name, settings=SETTINGS):
    """``name``'s setting (of ``settings``) on fewer pipeline degrees than its preset's: each
    shortcut acts within a block of the grid, one pipeline degree's rows
    (``conftest.fewer_pipeline_degrees``)."""
    model, hardware, kwargs = settings[name]
    return ie.make_setting(model, hardware, **fewer_pipeline_degrees(kwargs))


#: The settings whose frontiers are compared too (the others' describing is slow; a frontier
#: is a function of the pass latencies, compared for every setting).
FRONTIERS = {"dense", "dense-draft", "moe-table-5-draft", "sliding-windows-capped"}


def _search_passes(problem, fold=True, stack=True, fill=True, stack_elements=None):
    """``problem``'s pass latencies on its grid with the shortcuts ``grid.FOLD_PASSES``,
    ``grid.STACK_DIVISORS`` and ``StepCache.at_points`` (``fill``) on or off, with the groups
    of divisors each block evaluated together and how many times tokens were filled in at
    the points of a block."""
    from inference_econ.model.step_calls import StepCache

    at_points, groups, filled = StepCache.at_points, [], [0]

    def counted(self, x):
        out = at_points(self, x)
        filled[0] += out is not x
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grid, "FOLD_PASSES", fold)
        patch.setattr(grid, "STACK_DIVISORS", stack)
        if stack_elements is not None:
            patch.setattr(grid, "STACK_ELEMENTS", stack_elements)
        patch.setattr(grid, "_group_min", _counted(grid._group_min, groups))
        patch.setattr(StepCache, "at_points", counted if fill else lambda self, x: x)
        passes = problem._pass_latencies(*problem.continuous_axes())
    return passes, groups, filled[0]


@functools.cache
def _searches(name):
    """``name``'s 30 x 30 search with every shortcut, and with one or two of them off (as
    ``_search_passes`` gives them, keyed by the shortcuts switched off): each run once for
    the three tests that compare them. A shortcut the search with every shortcut never took
    switches nothing off: without it the search is that same run, which is not made again
    (stacking where no block stacked divisors, under one divisor; filling in the tokens where
    none were filled in, every block stacked)."""
    problem = optimiser.Problem(_setting(name), ie.Method(grid_points=30))
    runs = {(): _search_passes(problem), ("fold",): _search_passes(problem, fold=False)}
    stacked = any(len(g) > 1 for g in runs[()][1])
    runs[("fill",)] = _search_passes(problem, fill=False) if runs[()][2] else runs[()]
    runs[("stack",)] = _search_passes(problem, stack=False) if stacked else runs[()]
    runs[("stack", "fill")] = (
        _search_passes(problem, stack=False, fill=False) if stacked else runs[("fill",)]
    )
    return problem, runs


def _assert_same_passes(got, want, where=""):
    """Two searches' pass latencies (target and draft, by tokens per pass) bit for bit."""
    for a, b in zip(got, want):
        assert (a is None) == (b is None)
        for S in b or {}:
            assert a[S].dtype == b[S].dtype
            assert np.array_equal(a[S], b[S]), (where, S)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_folded_passes_are_the_full_search_bit_for_bit(name, monkeypatch):
    """Sharing each collective's token-independent factors across the tokens per pass
    (``grid.FOLD_PASSES``) gives every pass latency bit for bit, and the same frontier."""
    problem, searches = _searches(name)
    setting, method = problem.setting, problem.method
    assert len(problem.decoder.gamma_values()) > 1 or setting.spec is None
    _assert_same_passes(searches[()][0], searches[("fold",)][0])
    if name not in FRONTIERS:
        return
    fronts = []
    for fold in (True, False):
        monkeypatch.setattr(grid, "FOLD_PASSES", fold)
        monkeypatch.setattr(optimiser, "_PASSES", type(optimiser._PASSES)())
        fronts.append(optimiser._columns_cached.__wrapped__(setting, method))
    front, reference = fronts
    assert len(reference.columns["latency_s"]) > 10
    assert front.columns.keys() == reference.columns.keys()
    for column, values in reference.columns.items():
        assert np.array_equal(front.columns[column], values), column


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_stacked_divisors_are_the_search_one_by_one_bit_for_bit(name):
    """Evaluating a small block's attention divisors as one stacked array
    (``grid.STACK_DIVISORS``) gives every pass latency bit for bit as one divisor at a time;
    on a 30 x 30 grid every block is stacked, and with a lower ``STACK_ELEMENTS`` only the
    smaller blocks are."""
    problem, searches = _searches(name)
    target = problem.decoder.target
    several = target.assumptions.attention_divisor_count + len(target.extra_attention_degrees)
    full, singles, _ = searches[("stack",)]  # no limit applies to divisors one by one
    assert all(len(g) == 1 for g in singles)
    for limit in (grid.STACK_ELEMENTS, 3000) if name == "dense-draft" else (grid.STACK_ELEMENTS,):
        if limit == grid.STACK_ELEMENTS:
            fast, groups, _ = searches[()]
        else:
            fast, groups, _ = _search_passes(problem, stack_elements=limit)
        # one divisor (table 5's preset, the engine's), or a TTFT limit's per-layout search:
        # nothing to stack, and the same search
        if several > 1 and not problem.ttft_limited:
            assert any(len(g) > 1 for g in groups)  # the stacked path ran
            assert (limit < grid.STACK_ELEMENTS) == any(len(g) == 1 for g in groups)
        _assert_same_passes(fast, full, limit)


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_tokens_at_the_points_change_no_pass(name):
    """The tokens of a pass filled in at every point of a block (``StepCache.at_points``, for
    divisors taken one by one) give every pass latency bit for bit as the tokens broadcast
    from their column of the grid; the search does fill them in, and not for stacked
    divisors."""
    problem, searches = _searches(name)
    _assert_same_passes(searches[()][0], searches[("fill",)][0], "stacked")
    _assert_same_passes(searches[("stack",)][0], searches[("stack", "fill")][0], "one by one")
    target = problem.decoder.target
    several = target.assumptions.attention_divisor_count + len(target.extra_attention_degrees)
    filled_stacked, filled_one_by_one = searches[()][2], searches[("stack",)][2]
    assert filled_one_by_one > 0
    assert filled_stacked == 0 or several == 1 or problem.ttft_limited


#: A TTFT limit under the refined preset: each block's first decode step at the prompt's
#: length (the TTFT) shares the block's cache with the passes at the setting's context.
TTFT_REFINED = (
    "Llama 3.3 70B",
    "H100-SXM",
    dict(
        assumptions="refined",
        context_tokens=8000,
        weight_bits=8,
        prompt_tokens=2000,
        ttft_max_s=1.0,
    ),
)
#: Settings whose KV copies over wide attention groups (§B13, the refined and achievable
#: presets) leave some layouts without room (the fit that ``_if_kv_fits`` keeps per block).
KV_COPIES = {"mla-mtp-refined", "sliding-windows-capped", "achievable-draft", "ttft-refined"}


@pytest.mark.parametrize("name", sorted(SETTINGS) + ["ttft-refined"])
def test_kv_copies_shared_and_skipped_change_no_pass(name, monkeypatch):
    """A block computes the KV copies of each attention divisor, their reads and whether they
    fit (§B13) once for all its tokens per pass (and each context: a TTFT's first step), and
    skips the fit where the most copies fit at every feasible point: each pass is bit for bit
    the search of its tokens alone, and the search recomputing them for every pass and divisor
    and masking every point. The settings with copies that do not fit somewhere
    (``KV_COPIES``) do less of that work; under an engine profile, whose attention replicas
    hold their weights too (§F8), every divisor's fit is tested."""
    from inference_econ.model.latency import StepModel
    from inference_econ.model.step_calls import StepCache

    setting = _setting(name, {**SETTINGS, "ttft-refined": TTFT_REFINED})
    problem = optimiser.Problem(setting, ie.Method(grid_points=20))
    n_values, b_values = problem.continuous_axes()
    S_values = [1, 3]
    work = {"masks": 0, "points": 0}
    kv_room, get = StepModel._kv_room, StepCache.get

    def counted(self, N, kv, attention, copies, adiv=1.0, p=1.0):
        ok = kv_room(self, N, kv, attention, copies, adiv, p)
        if np.ndim(copies):
            work["masks"] += not np.all(ok)
            work["points"] += np.size(ok)
        return ok

    def uncached(self, key, make):
        return make() if key[0] in ("copies", "copies_read", "kv_fits") else get(self, key, make)

    def search(run, shortcuts=True):
        if not shortcuts:
            monkeypatch.setattr(StepCache, "get", uncached)
            monkeypatch.setattr(
                grid, "StepCache", lambda store, fold, feasible, **_: StepCache(store, fold)
            )
        before = work["points"]
        try:
            return run(), work["points"] - before
        finally:
            monkeypatch.setattr(StepCache, "get", get)
            monkeypatch.setattr(grid, "StepCache", StepCache)

    def passes(model, S_values):
        args = (model, n_values, b_values, S_values, setting.context_tokens)
        return lambda: grid.grid_latency(*args, setting.pipeline)

    monkeypatch.setattr(StepModel, "_kv_room", counted)
    models = [problem.decoder.target] + [m for m in [problem.decoder.draft] if m is not None]
    for model in models:
        for stack in (True, False):
            monkeypatch.setattr(grid, "STACK_DIVISORS", stack)
            together, points = search(passes(model, S_values))
            reference, every = search(passes(model, S_values), shortcuts=False)
            assert points <= every
            if model.engine is None:  # an engine's: every divisor's fit tested
                assert (points < every) == (name in KV_COPIES)
            for S, shared, full in zip(S_values, together, reference):
                assert shared.dtype == full.dtype
                assert np.array_equal(shared, full), (stack, S)
                if stack:
                    alone, _ = search(passes(model, [S]))
                    assert np.array_equal(shared, alone[0]), S
    assert (work["masks"] > 0) == (name in KV_COPIES)
    if problem.ttft_limited:  # the layouts within the limit: their TTFT shares the cache
        fast, _ = search(lambda: problem._pass_latencies(n_values, b_values))
        full, _ = search(lambda: problem._pass_latencies(n_values, b_values), shortcuts=False)
        for a, b in zip(fast, full):
            assert (a is None) == (b is None)
            for S in b or {}:
                assert np.array_equal(a[S], b[S]), S


def _counted(group_min, calls):
    """``grid._group_min`` recording each group of divisors it evaluates."""

    def counted(model, part, divisors, group, cache):
        calls.append(group)
        return group_min(model, part, divisors, group, cache)

    return counted


@pytest.mark.parametrize("name", ["mla-mtp-refined", "sliding-windows-capped"])
def test_fast_frontier_is_the_brute_force_frontier(name):
    """On a 24 x 24 grid the fast search's frontier is the brute-force loop's (every layout at
    every point in double precision), every column equal."""
    setting = _setting(name)
    fast = ie.frontier(setting, grid_points=24).points
    brute = ie.frontier(setting, method="exhaustive", grid_points=24).points
    assert len(fast) > 10
    assert list(fast.columns) == list(brute.columns)
    for column in fast.columns:
        assert fast[column].equals(brute[column]), column


def _reference_cost(ranks, nodes, gpu, kind, protocols, latency_scale):
    """``CollectiveCost``'s latencies and seconds per byte as §A4 writes them, every operation
    done (no shortcut): what the shortcuts must reproduce bit for bit."""
    cost = CollectiveCost(ranks, nodes, gpu, kind, protocols, latency_scale)
    hops = 2.0 if kind == ALLREDUCE else 1.0
    per_node = ranks / nodes - 1.0
    log_nodes = np.log2(np.maximum(nodes, 1.0))
    active = ranks > 1.0
    from inference_econ.model.collectives import _inside_domains

    direct = kind == EXPERT_ALLTOALL
    steps, intra = _inside_domains(gpu, ranks, nodes, per_node, ALLTOALL if direct else kind)
    if direct:
        intra = intra / np.maximum(nodes, 1.0)
        inter = (nodes - 1.0) / np.maximum(nodes, 1.0) / gpu.nic_bandwidth_bytes_per_s
        steps = np.log2(np.maximum(ranks / np.maximum(nodes, 1.0), 1.0))
        log_nodes = np.where(nodes > 1.0, 1.0, 0.0).astype(nodes.dtype)  # the search's precision
    else:
        inter = (nodes - 1.0) / (ranks * gpu.inter_node_allreduce_bandwidth_bytes_per_s)
    if kind not in (ALLREDUCE, EXPERT_ALLTOALL):
        inter = inter / 2.0
    seconds_per_byte = np.maximum(intra, inter)
    latency, per_byte = [], []
    for p in cost.protocols:
        if p.switch or p.custom:
            continue
        hop = steps * p.intra_hop_latency_s + log_nodes * p.inter_hop_latency_s
        lat = latency_scale * (hops * hop + p.base_latency_s)
        latency.append(np.where(active, lat, 0.0))
        per_byte.append(np.where(active, seconds_per_byte / p.bandwidth_factor, 0.0))
    return cost, latency, per_byte


@pytest.mark.parametrize("kind", [ALLREDUCE, ALLTOALL, P2P, EXPERT_ALLTOALL])
@pytest.mark.parametrize("scale", [1.0, 0.7])
def test_collective_cost_shortcuts_change_no_number(kind, scale):
    """The operations ``CollectiveCost`` skips on arrays (a factor of exactly 1, a mask that
    keeps every point) leave every latency and seconds per byte as the full formula gives
    them, in float32 (the search) and float64, with and without single ranks."""
    gpu = ie.load_hardware("H100-paper")
    protocols = protocols_for("paper", False, gpu)
    for dtype in (np.float32, np.float64):
        for low in (0.5, 1.5):  # with ranks of one GPU or less (inactive), and without
            ranks = np.geomspace(low, 4096.0, 97).astype(dtype)[None, :] * np.ones((3, 1), dtype)
            nodes = np.ceil(ranks / 8.0)
            cost, latency, per_byte = _reference_cost(ranks, nodes, gpu, kind, protocols, scale)
            assert len(cost.latency) == len(latency) == 3
            for got, want in zip(cost.latency + cost.per_byte, latency + per_byte):
                assert got.dtype == want.dtype
                assert np.array_equal(got, want)
            # two calls with the same count share their scaled factors: the same times
            tokens = np.geomspace(1.0, 1e4, 3).astype(dtype)[:, None]
            for calls in (80, 80, 160, 80):
                got = cost.time_linear(3.0, tokens, calls)
                want = None
                for lat, pb in zip(latency, per_byte):
                    t = calls * lat + (calls * pb * 3.0) * tokens
                    want = t if want is None else np.minimum(want, t)
                assert np.array_equal(got, want)


def test_collective_cost_where_changes_no_point_it_holds():
    """Given ``where`` (the points whose costs matter: the grid search's feasible ones),
    ``CollectiveCost`` gives every point it holds the full formula's latency and seconds per
    byte, single ranks included (zero), and skips zeroing single ranks only outside it."""
    gpu = ie.load_hardware("H100-paper")
    protocols = protocols_for("paper", False, gpu)
    ranks = np.geomspace(0.5, 4096.0, 97).astype(np.float32)[None, :] * np.ones((3, 1), np.float32)
    nodes = np.ceil(ranks / 8.0)
    full = CollectiveCost(ranks, nodes, gpu, ALLREDUCE, protocols)
    for where in (ranks > 1.0, ranks > 0.7, np.ones(ranks.shape, bool)):
        part = CollectiveCost(ranks, nodes, gpu, ALLREDUCE, protocols, where=where)
        for got, want in zip(part.latency + part.per_byte, full.latency + full.per_byte):
            assert got.dtype == want.dtype
            assert np.array_equal(got[where], want[where])
        skipped = not np.any(where & (ranks <= 1.0))
        same = all(np.array_equal(g, w) for g, w in zip(part.latency, full.latency))
        assert same != skipped  # the single ranks outside ``where`` keep their formula's value


def test_a_whole_number_of_nodes_up_to_rounding_spans_that_many():
    """A degree of 16.000000000000004 (a divisor t / (t / 16) in double precision): a 16-GPU group spans 2 nodes of 8, not 3
    (docs/model.md, the search); a group of 17 spans 3, and 8.5 GPUs span 2."""
    import inference_econ as ie
    from inference_econ.model.assumptions import REFINED
    from inference_econ.model.machine import Machine

    m = Machine.build(ie.load_hardware("H100"), 8, REFINED)
    degree = 16.000000000000004  # the brute force's t_at on a 60 x 60 refined grid
    assert degree > 16.0 and m.tensor_group(degree, False)[1] == 2.0
    groups = m.tensor_group(np.array([16.0, 17.0, 8.5, 8.0]), False)[1]
    assert groups.tolist() == [2.0, 3.0, 2.0, 1.0]


def test_near_pareto_indices_by_hand():
    """A point is a candidate unless another beats it by more than the margin in both
    latency and cost; only ``dominators`` may leave a point out."""
    from inference_econ.optimise.frontier import near_pareto_indices, pareto_indices

    lat = np.array([1.0, 1.05, 1.2, 2.0, 2.0005, 3.0, np.inf])
    cost = np.array([5.0, 4.0, 5.5, 2.0, 2.0005, 1.0, 0.1])
    # 2 is beaten by 0 (20 % faster, 10 % cheaper); 4 is within 1e-3 of 3 in both
    assert list(pareto_indices(lat, cost)) == [0, 1, 3, 5]
    assert list(near_pareto_indices(lat, cost, 1e-3)) == [0, 1, 3, 4, 5]
    # 0 beats 2 by 20 % and 10 % (1.0 · 1.1 <= 1.2 and 5.0 · 1.1 <= 5.5): out at 0.1, in at 0.2
    assert list(near_pareto_indices(lat, cost, 0.1)) == [0, 1, 3, 4, 5]
    assert list(near_pareto_indices(lat, cost, 0.2)) == [0, 1, 2, 3, 4, 5]
    # at 1e-4, 3 beats 4 (2.0 · 1.0001 <= 2.0005); not as a dominator (e.g. over the demand
    # cap), 3 is a candidate itself but leaves 4 in
    assert list(near_pareto_indices(lat, cost, 1e-4)) == [0, 1, 3, 5]
    able = np.array([True, True, True, False, True, True, True])
    assert list(near_pareto_indices(lat, cost, 1e-4, able)) == [0, 1, 3, 4, 5]


@pytest.mark.parametrize("seed", range(6))
def test_near_pareto_prefilter_changes_no_candidate(seed, monkeypatch):
    """Removing first the points a sample's candidates beat (``PREFILTER_POINTS``) gives the
    same candidates in the same order as sorting every point: random grids with ties,
    points within the margin of each other, infinite values and points not allowed to beat
    others; and it removes points before the sort."""
    from inference_econ.optimise import frontier

    rng = np.random.default_rng(seed)
    n = 30_000
    lat = np.round(rng.lognormal(0.0, 1.0, n), 3)  # rounded: many equal latencies
    cost = np.round(2.0 / lat * rng.lognormal(0.0, 0.3, n), 3)
    close = rng.choice(n, 500, replace=False)  # pairs within 1e-5 of each other
    lat[close[:250]], cost[close[:250]] = lat[close[250:]] * (1 + 1e-5), cost[close[250:]]
    lat[rng.choice(n, 300)] = np.inf
    cost[rng.choice(n, 300)] = np.inf
    able = rng.random(n) > 0.2 if seed % 2 else None
    sorted_rows = []
    real = frontier._beaten_by_a_sample_removed

    def counted(*args):
        out = real(*args)
        sorted_rows.append(len(out))
        return out

    monkeypatch.setattr(frontier, "_beaten_by_a_sample_removed", counted)
    got = frontier.near_pareto_indices(lat, cost, 1e-4, able)
    monkeypatch.setattr(frontier, "PREFILTER_POINTS", 10**9)
    want = frontier.near_pareto_indices(lat, cost, 1e-4, able)
    assert np.array_equal(got, want)
    assert len(want) > 20
    assert sorted_rows and sorted_rows[0] < n / 4


def test_candidates_within_the_error_hold_the_exact_frontier():
    """Values known within a relative error e: the candidates at margin 2.01e hold every
    point of the exact frontier, whatever the error's sign at each point (random cases with
    many near ties)."""
    from inference_econ.optimise.frontier import near_pareto_indices, pareto_indices

    rng = np.random.default_rng(28)
    e = 1e-5
    for _ in range(200):
        lat = np.round(rng.uniform(1.0, 2.0, 300), 4)  # many ties and near ties
        cost = np.round(3.0 - lat + rng.uniform(0.0, 0.01, 300), 4)
        noisy = [x * (1.0 + rng.uniform(-e, e, x.shape)) for x in (lat, cost)]
        exact = set(pareto_indices(lat, cost).tolist())
        candidates = near_pareto_indices(*noisy, 2.01 * e)
        assert exact <= set(candidates.tolist())
        assert list(candidates) == sorted(candidates, key=lambda i: (noisy[0][i], noisy[1][i]))
        # the exact frontier of the candidates is the exact frontier
        again = candidates[pareto_indices(lat[candidates], cost[candidates])]
        assert set(again.tolist()) == exact


@pytest.mark.parametrize("name", ["dense-draft", "moe-table-5-draft", "achievable-draft"])
def test_single_precision_search_is_within_its_margin(name):
    """Every pass latency of the single-precision search is within half the margin of the
    brute force's double-precision value (docs/model.md "The search"), and the search stays
    single precision throughout (a float64 term would make it double: slower)."""
    from inference_econ.model.layouts import best_latency

    setting = _setting(name)
    problem = optimiser.Problem(setting, ie.Method(grid_points=24))
    n_values, b_values = problem.continuous_axes()
    target, draft = problem._pass_latencies(n_values, b_values)
    N, B = np.meshgrid(n_values, b_values)
    d = problem.decoder
    worst = 0.0
    for model, passes in ((d.target, target), (d.draft, draft or {})):
        for S, fast in passes.items():
            exact = best_latency(model, N, B, S, setting.context_tokens, setting.pipeline)
            assert fast.dtype == np.float32
            assert np.array_equal(np.isfinite(fast), np.isfinite(exact))
            ok = np.isfinite(exact)
            worst = max(worst, float(np.max(np.abs(fast[ok] / exact[ok] - 1.0))))
    assert 1e-8 < worst < grid.SEARCH_MARGIN / 2
    part = d.target.pipeline_part(
        n_values[None, :].astype(np.float32), b_values[:, None].astype(np.float32), 1, 4000.0, 2.0
    )
    for field in ("kv_read_s", "ff_weight_read_s", "ff_context_compute_s", "collective_1d_s"):
        assert getattr(part, field).dtype == np.float32, field


@pytest.mark.parametrize("name", ["dense-draft", "dense-capped"])
def test_fast_frontier_is_the_brute_force_frontier_with_a_draft_and_a_cap(name):
    """The candidates within the margin, described in double precision and kept under the
    demand cap there, give the brute-force frontier on a 24 x 24 grid, every column equal."""
    if name == "dense-capped":
        setting = ie.make_setting(
            "Llama 3 70B", "H100-paper", weight_bits=8, max_throughput_tokens_per_s=3e4
        )
    else:
        setting = _setting(name)
    fast = ie.frontier(setting, grid_points=24).points
    brute = ie.frontier(setting, method="exhaustive", grid_points=24).points
    assert len(fast) > 10
    for column in fast.columns:
        assert fast[column].equals(brute[column]), column


def test_in_place_arithmetic_gives_the_same_numbers():
    """``values.add_into`` and its kin write into the caller's new array only when it has the
    result's shape and type (else they return a new one, never widening or narrowing a
    precision), and give every number bit for bit as the plain expression."""
    from inference_econ.model.values import (
        add_into,
        affine_minimum,
        maximum_into,
        minimum_into,
        multiply_into,
        zero_where,
    )

    rng = np.random.default_rng(7)
    row = rng.uniform(1e-6, 1e-3, (1, 50)).astype(np.float32)
    col = rng.uniform(1.0, 1e4, (40, 1)).astype(np.float32)
    grid32 = rng.uniform(1e-6, 1e-3, (40, 50)).astype(np.float32)
    cases = [
        (np.add, add_into),
        (np.multiply, multiply_into),
        (np.minimum, minimum_into),
        (np.maximum, maximum_into),
    ]
    for plain, into in cases:
        for owned, other, written in [
            (grid32, row, True),
            (grid32, 2.5, True),
            (grid32, grid32.astype(float), False),  # float64: a double-precision result
            (grid32, np.float64(2.5), False),  # a numpy float64 is double precision too
            (row, grid32, False),  # a smaller array cannot hold the result
        ]:
            want = plain(owned, other)
            mine = owned.copy()
            got = into(mine, other)
            assert got.dtype == want.dtype and np.array_equal(got, want)
            assert (got is mine) == written
    idle = grid32 < 3e-4
    mine = grid32.copy()
    got = zero_where(mine, idle)
    assert got is mine and np.array_equal(got, np.where(~idle, grid32, 0.0))
    pairs = [(row * k, row / k) for k in (1.0, 3.0, 0.3)]
    want = np.minimum(
        np.minimum(*[a + b * col for a, b in pairs[:2]]), pairs[2][0] + pairs[2][1] * col
    )
    got = affine_minimum(pairs, col)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    assert affine_minimum([(1.0, 2.0), (0.5, 3.0)], 2.0) == min(1.0 + 2.0 * 2.0, 0.5 + 3.0 * 2.0)
