"""The fast grid search's shortcuts change no number (issue 28, docs/model.md "The search").

Each shortcut does the same floating-point operations on the same numbers, or skips one that
cannot change a value (a factor of exactly 1, a mask keeping every point), so the pass
latencies are compared bit for bit with the search without it, and the frontiers column by
column; the fast frontier is also compared with the brute-force loop over every layout.
"""

import numpy as np
import pytest

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

#: Dense, mixture of experts, MLA with MTP heads, sliding windows, the engine preset, drafts,
#: a TTFT limit (the per-layout path), a demand cap and a GPU cap.
SETTINGS = {
    "dense": ("Llama 3 70B", "H100-paper", dict(weight_bits=8)),
    "dense-draft": (
        "Llama 3 70B",
        "H100-paper",
        dict(weight_bits=8, draft="Llama 3 8B", acceptance=0.8),
    ),
    "moe-table-5-draft": (
        "Mixtral 8x22B",
        "H100-paper",
        dict(assumptions="paper-table-5", draft="Llama 3 8B", context_tokens=4000),
    ),
    "mla-mtp-refined": (
        "DeepSeek-V3",
        "H200-SXM",
        dict(assumptions="refined", draft_heads="mtp", max_draft_tokens=2, context_tokens=32000),
    ),
    "sliding-windows-capped": (
        "gpt-oss-120b",
        "B200",
        dict(
            assumptions="refined",
            weight_bits=4,
            context_tokens=8000,
            max_gpus=64,
            max_throughput_tokens_per_s=2e5,
        ),
    ),
    "achievable-draft": (
        "Llama 3.3 70B",
        "H100-SXM",
        dict(assumptions="achievable", draft="Llama 3.1 8B", acceptance=0.7),
    ),
    "ttft-draft": (
        "Mixtral 8x22B",
        "H100-paper",
        dict(prompt_tokens=1000, ttft_max_s=0.5, draft="Llama 3 8B", context_tokens=2000),
    ),
}


def _setting(name):
    model, hardware, kwargs = SETTINGS[name]
    return ie.make_setting(model, hardware, **kwargs)


#: The settings whose frontiers are compared too (the others' describing is slow; a frontier
#: is a function of the pass latencies, compared for every setting).
FRONTIERS = {"dense", "dense-draft", "moe-table-5-draft", "sliding-windows-capped"}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_folded_passes_are_the_full_search_bit_for_bit(name, monkeypatch):
    """Sharing each collective's token-independent factors across the tokens per pass
    (``grid.FOLD_PASSES``) gives every pass latency bit for bit, and the same frontier."""
    setting = _setting(name)
    method = ie.Method(grid_points=30)
    problem = optimiser.Problem(setting, method)
    n_values, b_values = problem.continuous_axes()
    assert len(problem.decoder.gamma_values()) > 1 or setting.spec is None
    searches = []
    for fold in (True, False):
        monkeypatch.setattr(grid, "FOLD_PASSES", fold)
        monkeypatch.setattr(optimiser, "_PASSES", type(optimiser._PASSES)())
        passes = problem._pass_latencies(n_values, b_values)
        front = (
            optimiser._columns_cached.__wrapped__(setting, method) if name in FRONTIERS else None
        )
        searches.append((passes, front))
    (folded, front), (plain, reference) = searches
    for fast, full in zip(folded, plain):
        assert (fast is None) == (full is None)
        for S in full or {}:
            assert fast[S].dtype == full[S].dtype
            assert np.array_equal(fast[S], full[S]), S
    if reference is not None:
        assert len(reference.columns["latency_s"]) > 10
        assert front.columns.keys() == reference.columns.keys()
        for column, values in reference.columns.items():
            assert np.array_equal(front.columns[column], values), column


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
        log_nodes = np.where(nodes > 1.0, 1.0, 0.0)
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
