"""Token latency and its breakdown (docs/model.md §A5)."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.model.latency import ADDITIVE_PARTS, bound_label


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


def test_bound_label_is_read_off_the_breakdown(bound_agrees_with_parts):
    # a new user's row (Llama 3 70B 8-bit, draft Llama 3 8B, 5.01 GPUs, batch 278,
    # draft length 3): the target's verification pass is compute-bound, the draft's passes
    # memory-bound; 1.59 + 0.27 ms of reads against 6.88 ms of arithmetic is mixed, not memory
    assert bound_label(1.589e-3, 0.0, 0.266e-3, 6.882e-3) == "mixed"
    assert bound_label(1.0, 0.0, 0.0, 0.1) == "memory"  # arithmetic 9 % of the two
    assert bound_label(0.05, 0.05, 0.0, 1.0) == "compute"
    assert bound_label(0.0, 0.0, 0.0, 0.0) == "memory"
    assert list(bound_label([np.nan, 1.0], 0.0, 0.0, [0.0, 0.0])) == ["n/a", "memory"]
    df = ie.points(
        "Llama 3 70B",
        "H100-paper",
        gpus=[5.010275, 1, 8, 24, 4.278348],
        batch=[278.262115, 1, 64, 2000, 131.379288],
        weight_bits=8,
        draft="Llama 3 8B",
        context_tokens=0,  # the row's: the paper's empty context
    )
    assert list(df.draft_tokens) == [3, 5, 4, 1, 4]
    assert list(df.bound) == ["mixed", "memory", "memory", "memory", "mixed"]
    assert df.arithmetic_s[0] == pytest.approx(6.882e-3, rel=1e-3)
    achievable = ie.points(
        "Llama 3 70B",
        "H100",
        gpus=[2, 8, 8],
        batch=[30, 20, 1000],
        weight_bits=8,
        assumptions="achievable",
    )
    # small decode batches stream the weights (a GEMM's fixed cost is a part of its own, §F2);
    # at batch 1000 the GEMMs' arithmetic takes 0.76 ms beyond their 12.5 ms of weight reads,
    # beside 17.3 ms of KV reads: the reads bind (the roofline's binding side shown alone
    # had called it mixed, its weight reads 0)
    assert list(achievable.bound) == ["memory", "memory", "memory"]
    assert round(achievable.arithmetic_s[2] * 1e3, 2) == 0.76
    assert round(achievable.weight_read_s[2] * 1e3, 1) == 12.5
    for frame in (df, achievable):
        assert all(bound_agrees_with_parts(row) for row in frame.itertuples())


def test_single_gpu_by_hand():
    # Llama 3 8B, 1 GPU, batch 1: kernels 4·32·4 µs + weights read at 75 % of 3.3 TB/s; the
    # input embedding is a lookup, so HBM reads count V·d once (A2) while P counts 2·V·d
    row = ie.point("Llama 3 8B", "H100-paper", gpus=1, batch=1, context_tokens=0)  # no KV reads
    w = ie.model_summary("Llama 3 8B")["weights_total_bytes"] - 128256 * 4096 * 2
    assert row.collective_latency_s == 0 and row.pipeline_degree == 1
    assert row.kernel_launch_s == pytest.approx(4 * 32 * 4e-6)
    assert row.weight_read_s == pytest.approx(w / (0.75 * 3.3e12), rel=1e-6)
    assert row.latency_s == pytest.approx(
        row.kernel_launch_s + row.weight_read_s + row.activation_read_s
    )


def test_long_context_adds_kv_reads():
    short = ie.point("Llama 3 70B", "H100-paper", gpus=8, batch=16, weight_bits=8, context_tokens=0)
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
