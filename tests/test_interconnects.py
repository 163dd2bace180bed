"""Collectives by interconnect kind (docs/model.md §C1): switch, full mesh, PCIe, torus; the
kind, not the GPU's name, chooses the model, and NVIDIA switch parts keep the paper's numbers."""

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.errors import SpecError
from inference_econ.model.collectives import (
    ALLREDUCE,
    ALLTOALL,
    CollectiveCost,
    protocols_for,
    torus_group_shape,
)
from inference_econ.specs.hardware import gpu_from_dict

MiB = 1048576.0


def cost(gpu, ranks, nodes=1.0, kind=ALLREDUCE, model="paper"):
    return CollectiveCost(ranks, nodes, gpu, kind, protocols_for(model, False, gpu))


@pytest.fixture(scope="module")
def v6e():
    return ie.load_hardware("TPU-v6e")


@pytest.fixture(scope="module")
def switch16(v6e):
    """A switch of 16 with the v6e's bandwidth per chip (800 GB/s both ways)."""
    base = ie.load_hardware("H100-SXM")
    return ie.derive(
        base,
        name="switch16",
        nvlink_bandwidth_bytes_per_s=800e9,
        scale_up_domain_gpus=16,
        nvls=False,
    )


def test_ring_on_a_4x4_torus_against_a_switch_of_16(v6e, switch16):
    b = 200e9  # one ICI link, both directions
    torus = cost(v6e, 16.0)
    # 2 dimensions of 4 chips, bidirectional rings, data split over both:
    # (2·3/4 + 2·3/4/4)/2 / b = 0.9375/b seconds per byte; 2·(3 + 3) hops of 1 µs
    assert torus.per_byte[0] == pytest.approx(0.9375 / b)
    assert torus.latency[0] == pytest.approx(12e-6)
    assert torus.time(MiB) == pytest.approx(12e-6 + 0.9375 * MiB / b)
    # the switch moves the same bytes as fast (both are bandwidth-optimal: 2(R-1)/R over the
    # one-way bandwidth) but pays NCCL's latency: LL 2·15·0.6 µs + 6.8 µs
    sw = cost(switch16, 16.0)
    assert sw.per_byte[2] == pytest.approx(0.9375 / b)  # Simple, efficiency 1
    assert sw.latency[0] == pytest.approx(24.8e-6)
    assert torus.time(1e3) < sw.time(1e3)


def test_torus_groups_use_the_dimensions_they_span(v6e):
    sides, k = torus_group_shape(np.array([2.0, 4.0, 16.0, 256.0]), (16, 16))
    assert k.tolist() == [1, 2, 2, 2]
    assert sides[:, 1].tolist() == [2.0, 2.0] and sides[:, 3].tolist() == [16.0, 16.0]
    b = 200e9
    assert cost(v6e, 2.0).per_byte[0] == pytest.approx(2 * 1 / 2 / b)  # one ring of 2
    assert cost(v6e, 4.0).per_byte[0] == pytest.approx((1.0 + 0.5) / 2 / b)  # 2 x 2
    # a 3-D torus caps each side at its length: 6,144 chips of a 16 x 16 x 24 slice
    sides, _ = torus_group_shape(6144.0, (16, 16, 24))
    assert sorted(sides.tolist()) == pytest.approx([16.0, 16.0, 24.0])


def test_torus_all_to_all_pays_the_distance(v6e):
    # 16 x 16: every byte crosses 16/4 + 16/4 = 8 links on average, over 2·b of links per chip
    a2a = cost(v6e, 256.0, kind=ALLTOALL)
    assert a2a.per_byte[0] == pytest.approx(8.0 / (2 * 200e9))
    assert a2a.per_byte[0] > cost(v6e, 256.0).per_byte[0]  # worse than an all-reduce here


def test_full_mesh_group_uses_only_its_own_links():
    mi300x = ie.load_hardware("MI300X")
    # 2 GPUs share one 128 GB/s link (64 GB/s each way): bus bandwidth 32 GB/s; RCCL Simple
    # 17 µs + 2·1·2.1 µs, LL runs at 8 % of the bandwidth and loses at 1 MiB
    two = cost(mi300x, 2.0)
    assert [p.name for p in two.protocols] == ["LL", "Simple"]  # no LL128, no NVLS
    assert two.time(MiB) == pytest.approx(21.2e-6 + 0.5 * MiB / 32e9)
    # 8 GPUs use all 7 links: 224 GB/s
    eight = cost(mi300x, 8.0)
    assert eight.time(MiB) == pytest.approx(17e-6 + 2 * 7 * 2.1e-6 + 7 / 8 * MiB / 224e9)
    # per byte, a group of 4 on the mesh is slower than on a switch of the same total bandwidth
    switch = ie.derive(mi300x, interconnect="switch")
    assert cost(mi300x, 4.0).per_byte[1] == pytest.approx(3 / 4 / (3 * 32e9))
    assert cost(mi300x, 4.0).per_byte[1] > 2 * cost(switch, 4.0).per_byte[2]


def test_pcie_cards_use_the_bridge_inside_a_group_and_pcie_beyond():
    h100 = ie.load_hardware("H100-PCIe")  # bridged pairs, PCIe Gen5 between them
    pair, four = cost(h100, 2.0), cost(h100, 4.0)
    assert [p.name for p in pair.protocols] == ["LL", "Simple"]  # LL128 only over NVLink
    assert pair.per_byte[1] == pytest.approx(0.5 / (600e9 / 4))
    assert four.per_byte[1] == pytest.approx(0.75 / (128e9 / 4))
    # NCCL's PCI latency: LL 2·(R-1)·1.0 µs + 6.8 µs
    assert four.latency[0] == pytest.approx(2 * 3 * 1.0e-6 + 6.8e-6)
    l40s = ie.load_hardware("L40S")  # no NVLink at all: PCIe Gen4
    assert cost(l40s, 2.0).per_byte[1] == pytest.approx(0.5 / (64e9 / 4))


def test_more_bandwidth_is_never_slower_for_any_kind():
    sizes = np.logspace(0, 9, 19)
    for name in ("MI300X", "TPU-v5p", "H200-NVL", "L40S", "GB300-NVL72"):
        gpu = ie.load_hardware(name)
        fast = ie.derive(
            gpu,
            scale={
                "nvlink_bandwidth_bytes_per_s": 2,
                "nic_bandwidth_bytes_per_s": 2,
                "pcie_bandwidth_bytes_per_s": 2,
            },
        )
        for ranks, nodes in [(2.0, 1.0), (4.0, 1.0), (8.0, 1.0), (16.0, 2.0), (5.5, 1.0)]:
            for kind in (ALLREDUCE, ALLTOALL):
                slow_t = cost(gpu, ranks, nodes, kind).time(sizes)
                fast_t = cost(fast, ranks, nodes, kind).time(sizes)
                assert np.all(fast_t <= slow_t * (1 + 1e-12)), (name, ranks, kind)


def test_the_kind_not_the_name_chooses_the_model():
    # a made-up part with a torus is costed as a torus whatever it is called
    spec = {
        "name": "Not-A-TPU",
        "flop_per_s": {16: 1e15},
        "hbm_bandwidth_bytes_per_s": 3e12,
        "hbm_capacity_bytes": 8e10,
        "interconnect": "torus",
        "torus_dimensions": [4, 4],
        "links_per_gpu": 4,
        "link_bandwidth_bytes_per_s": 200e9,
        "link_latency_s": 1e-6,
        "nic_bandwidth_bytes_per_s": 5e10,
        "scale_up_domain_gpus": 16,
        "price_usd_per_hour": 2.0,
    }
    gpu = gpu_from_dict(spec, "made-up.yaml")
    assert gpu.nvlink_bandwidth_bytes_per_s == 800e9
    assert cost(gpu, 16.0).time(MiB) == pytest.approx(
        cost(ie.load_hardware("TPU-v6e"), 16.0).time(MiB)
    )


def test_interconnect_fields_are_checked():
    mesh = {**_base(), "interconnect": "full_mesh", "links_per_gpu": 7}
    with pytest.raises(SpecError, match="did you mean 'torus'"):
        gpu_from_dict({**_base(), "interconnect": "torous"}, "x.yaml")
    with pytest.raises(SpecError, match="NVLS needs an NVLink switch"):
        gpu_from_dict({**mesh, "link_bandwidth_bytes_per_s": 1e11, "nvls": True}, "x.yaml")
    with pytest.raises(SpecError, match="needs links_per_gpu"):
        gpu_from_dict({**_base(), "link_bandwidth_bytes_per_s": 1e11}, "x.yaml")
    with pytest.raises(SpecError) as info:
        gpu_from_dict({**_base(), "interconnect": "pcie"}, "x.yaml")
    assert info.value.field == "pcie_bandwidth_bytes_per_s" and "Gen5 x16" in str(info.value)
    torus = {
        **_base(),
        "interconnect": "torus",
        "torus_dimensions": [16, 16],
        "link_bandwidth_bytes_per_s": 1e11,
        "links_per_gpu": 4,
        "link_latency_s": 1e-6,
    }
    with pytest.raises(SpecError, match="256 chips, not scale_up_domain_gpus = 8"):
        gpu_from_dict(torus, "x.yaml")
    with pytest.raises(SpecError, match="7 links cannot join each of 15 peers"):
        gpu_from_dict(
            {**mesh, "scale_up_domain_gpus": 16, "link_bandwidth_bytes_per_s": 1e11}, "x.yaml"
        )


def _base():
    return {
        "name": "T",
        "flop_per_s": {16: 1e15},
        "hbm_bandwidth_bytes_per_s": 3e12,
        "hbm_capacity_bytes": 8e10,
        "nic_bandwidth_bytes_per_s": 5e10,
        "scale_up_domain_gpus": 8,
        "price_usd_per_hour": 2.0,
    }


def test_nvidia_switch_parts_keep_the_papers_collectives():
    h100 = ie.load_hardware("H100-paper")
    assert h100.interconnect == "switch"
    # docs/model.md §A4: 1 MiB over 8 H100s in one node, LL: 15.2 µs + 8.2 µs
    assert cost(h100, 8.0).time(MiB) == pytest.approx(
        2 * 7 * 0.6e-6 + 6.8e-6 + 7 / 8 * MiB / 225e9 / 0.5
    )
