"""Token latency and its breakdown (docs/model.md §A5)."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.model.latency import ADDITIVE_PARTS


def test_breakdown_adds_up_to_the_latency():
    df = ie.points(
        "Llama 3 70B",
        "H100-paper",
        gpus=[1, 8, 24, 64, 300],
        batch=[1, 64, 8, 512, 2000],
        weight_bits=8,
    )
    parts = df[list(ADDITIVE_PARTS)].sum(axis=1)
    assert np.allclose(parts, df["latency_s"], rtol=1e-9)
    assert set(df["bound"]) <= {"memory", "compute"}


def test_breakdown_with_speculation_adds_up():
    df = ie.points(
        "Llama 3 70B",
        "H100-paper",
        gpus=[8, 16],
        batch=[32, 128],
        weight_bits=8,
        draft="Llama 3 8B",
    )
    assert (df["draft_tokens"] >= 1).all()
    assert np.allclose(df[list(ADDITIVE_PARTS)].sum(axis=1), df["latency_s"], rtol=1e-9)


def test_single_gpu_by_hand():
    # Llama 3 8B, 1 GPU, batch 1: kernels 4·32·4 µs + weights read at 75 % of 3.3 TB/s; the
    # input embedding is a lookup, so HBM reads count V·d once (A2) while P counts 2·V·d
    row = ie.point("Llama 3 8B", "H100-paper", gpus=1, batch=1)
    w = ie.model_summary("Llama 3 8B")["weights_total_bytes"] - 128256 * 4096 * 2
    assert row.collective_latency_s == 0 and row.pipeline_degree == 1
    assert row.kernel_launch_s == pytest.approx(4 * 32 * 4e-6)
    assert row.weight_read_s == pytest.approx(w / (0.75 * 3.3e12), rel=1e-6)
    assert row.latency_s == pytest.approx(
        row.kernel_launch_s + row.weight_read_s + row.activation_read_s
    )


def test_long_context_adds_kv_reads():
    short = ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=16, weight_bits=8)
    long = ie.point(
        "Llama 3 70B", "H100-paper", gpus=8, batch=16, weight_bits=8, context_tokens=10000
    )
    kv = 327680 * 10000 * 16
    assert long.kv_read_s == pytest.approx(kv / (8 * 0.75 * 3.3e12), rel=1e-6)
    assert long.latency_s > short.latency_s


def test_model_that_does_not_fit_is_infinitely_slow():
    row = ie.point("Llama 3.1 405B (paper)", "H100-paper", gpus=2, batch=1)
    assert np.isinf(row.latency_s) and row.tokens_per_s == 0


@pytest.mark.parametrize(
    "field", ["hbm_bandwidth_bytes_per_s", "nvlink_bandwidth_bytes_per_s", "flop_per_s"]
)
def test_better_hardware_is_never_slower(field):
    h100 = ie.load_hardware("H100-paper")
    better = ie.derive(h100, scale={field: 2})
    gpus = np.array([1, 4, 8, 16, 40, 100, 400.0])
    batch = np.array([1, 16, 64, 256, 32, 1000, 8.0])
    base = ie.points("Llama 3 70B", h100, gpus=gpus, batch=batch, weight_bits=8)
    fast = ie.points("Llama 3 70B", better, gpus=gpus, batch=batch, weight_bits=8)
    assert np.all(fast["latency_s"].to_numpy() <= base["latency_s"].to_numpy() * (1 + 1e-12))


def test_bad_configuration_arguments():
    with pytest.raises(ie.SpecError, match="gpus"):
        ie.point("Llama 3 70B", "H100-paper", gpus=-1, batch=1)
    with pytest.raises(ie.SpecError, match="context_tokens"):
        ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=1, context_tokens=-5)
