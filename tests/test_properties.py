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
