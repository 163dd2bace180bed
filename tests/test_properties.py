"""Property-based checks of the cost model over random configurations (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import inference_econ as ie
from inference_econ.model.latency import ADDITIVE_PARTS

MODELS = ["Llama 3 70B", "Mixtral 8x22B", "DeepSeek-V3 (paper approximation)", "Llama 3 8B"]
configs = st.tuples(
    st.sampled_from(MODELS),
    st.floats(min_value=1, max_value=4096),  # GPUs
    st.floats(min_value=1, max_value=1e5),  # batch
    st.sampled_from([0.0, 1000.0, 32000.0]),  # context
    st.sampled_from([4, 8, 16]),  # weight bits
)


@settings(max_examples=60, deadline=None)
@given(configs)
def test_breakdown_adds_up_and_is_non_negative(config):
    model, gpus, batch, context, bits = config
    row = ie.point(
        model, "H100-paper", gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits
    )
    if not np.isfinite(row.latency_s):
        return
    parts = np.array([row[p] for p in ADDITIVE_PARTS])
    assert np.all(parts >= 0)
    assert np.isclose(parts.sum(), row.latency_s, rtol=1e-9)
    assert 0 < row.mfu <= 0.7 + 1e-9  # never above the sustained FLOP/s cap
    assert row.usd_per_mtok > 0 and row.tokens_per_s > 0


@settings(max_examples=40, deadline=None)
@given(
    configs,
    st.sampled_from(
        [
            "hbm_bandwidth_bytes_per_s",
            "nvlink_bandwidth_bytes_per_s",
            "nic_bandwidth_bytes_per_s",
            "flop_per_s",
        ]
    ),
)
def test_better_hardware_is_never_slower(config, field):
    model, gpus, batch, context, bits = config
    base_gpu = ie.load_hardware("H100-paper")
    better = ie.derive(base_gpu, scale={field: 1.7})
    base = ie.point(
        model, base_gpu, gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits
    )
    fast = ie.point(model, better, gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits)
    assert fast.latency_s <= base.latency_s * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(configs)
def test_longer_context_is_never_faster(config):
    model, gpus, batch, context, bits = config
    short = ie.point(
        model, "H100-paper", gpus=gpus, batch=batch, context_tokens=context, weight_bits=bits
    )
    long = ie.point(
        model, "H100-paper", gpus=gpus, batch=batch, context_tokens=context + 5000, weight_bits=bits
    )
    assert long.latency_s >= short.latency_s * (1 - 1e-12)


@settings(max_examples=8, deadline=None)
@given(
    st.sampled_from(MODELS),
    st.sampled_from([0.0, 8000.0, 100000.0]),
    st.sampled_from([4, 8, 16]),
    st.sampled_from([1.05, 1.25, 2.0, 4.0]),
)
def test_more_hbm_capacity_never_makes_the_fastest_point_slower(model, context, bits, scale):
    """The GPU-count grid does not move with the capacity (optimise/optimiser.gpu_lattice): a
    GPU with more memory searches every configuration a smaller one does."""
    base = ie.load_hardware("H100-paper")
    big = ie.derive(base, scale={"hbm_capacity_bytes": scale})
    kwargs = dict(context_tokens=context, weight_bits=bits, grid_points=40)
    small_front = ie.frontier(model, base, **kwargs)
    big_front = ie.frontier(model, big, **kwargs)
    if small_front.empty:
        return
    assert not big_front.empty
    fastest = small_front.fastest().tokens_per_s
    assert big_front.fastest().tokens_per_s >= fastest * (1 - 1e-12)
    # and the cheapest point at any speed the smaller GPU reaches is no dearer
    speeds = small_front.points.tokens_per_s.to_numpy()
    assert np.all(big_front.cost_at_speed(speeds) <= small_front.cost_at_speed(speeds) * (1 + 1e-9))


def test_the_gpu_axis_is_a_lattice_that_does_not_move_with_memory():
    from inference_econ.optimise.optimiser import gpu_lattice

    weights = 70e9
    small = gpu_lattice(weights, weights / 80e9, 400)
    big = gpu_lattice(weights, weights / 160e9, 400)
    assert np.allclose(small[0], weights / 80e9) and len(small) == 400  # the paper's grid at 80 GB
    assert np.allclose(small[-1], 2.0**18)
    assert set(np.round(np.log2(small[1:]), 9)) <= set(np.round(np.log2(big), 9))
