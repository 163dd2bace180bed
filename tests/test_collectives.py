"""NCCL collective times (docs/model.md §A4) against hand computations."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.model.collectives import (
    ALLREDUCE,
    ALLTOALL,
    P2P,
    CollectiveCost,
)


def collective_time(ranks, nodes, nbytes, gpu, kind=ALLREDUCE):
    """Seconds of one collective, as the step model prices it (``CollectiveCost.time``)."""
    return CollectiveCost(ranks, nodes, gpu, kind).time(nbytes)


@pytest.fixture(scope="module")
def gpu():
    return ie.load_hardware("H100-paper")


def test_small_allreduce_in_one_node_is_ll_latency(gpu):
    # R = 8, M = 1: LL = 2·(7·0.6 µs) + 6.8 µs = 15.2 µs, plus 7·X/(8·225 GB/s·0.5)
    x = 1000.0
    expected = 2 * 7 * 0.6e-6 + 6.8e-6 + 7 * x / (8 * 225e9 * 0.5)
    assert collective_time(8.0, 1.0, x, gpu) == pytest.approx(expected)


def test_inter_node_latency_and_bandwidth(gpu):
    # R = 16, M = 2: LL latency 2·((8-1)·0.6 + 1·5) µs + 6.8 µs
    lat = 2 * (7 * 0.6e-6 + 5e-6) + 6.8e-6
    x = 10.0
    bw = max(2 * 7 * x / (16 * 225e9 * 0.5), 1 * x / (16 * 25e9 * 0.5))
    assert collective_time(16.0, 2.0, x, gpu) == pytest.approx(lat + bw)


def test_large_messages_switch_to_simple(gpu):
    cc = CollectiveCost(np.array([8.0]), np.array([1.0]), gpu)
    _, _, choice = cc.terms(np.array([1e3, 1e7, 1e10]))
    assert list(choice) == [0, 1, 2]  # LL, then LL128, then Simple (bandwidth factor 1)


def test_other_collectives_use_one_pass(gpu):
    x = 1e6
    ar = collective_time(8.0, 1.0, x, gpu, ALLREDUCE)
    a2a = collective_time(8.0, 1.0, x, gpu, ALLTOALL)
    assert a2a < ar
    # p2p between two nodes: LL latency 1·(0 + 1·5 µs) + 6.8 µs, bandwidth halved
    assert collective_time(2.0, 2.0, 0.0, gpu, P2P) == pytest.approx(11.8e-6)


def test_one_rank_costs_nothing(gpu):
    assert collective_time(1.0, 1.0, 1e9, gpu) == 0.0
    assert collective_time(0.5, 1.0, 1e9, gpu) == 0.0


def test_more_bandwidth_is_never_slower(gpu):
    fast = ie.derive(gpu, scale={"nvlink_bandwidth_bytes_per_s": 2, "nic_bandwidth_bytes_per_s": 2})
    sizes = np.logspace(0, 10, 30)
    for ranks, nodes in [(4.0, 1.0), (32.0, 4.0), (5.6, 1.4)]:
        assert np.all(
            collective_time(ranks, nodes, sizes, fast) <= collective_time(ranks, nodes, sizes, gpu)
        )
