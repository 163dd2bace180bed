"""The ideal bound is never slower than a measured kernel (docs/model.md §B15): the ``refined``
roofline clock's charge for every row of every shipped kernel table (GEMMs of every format,
both attention tables, the fused MoE, the per-token passes, TensorRT-LLM's all-reduce and
NCCL's four collectives) is at or below its measured time, each charge from the model's own
``Machine.kernel_s`` and ``Machine.collective``; the hardware files' ``kernel_ceilings`` are
the tables' best figures (so they cannot drift from them); the ``paper`` preset reads none of
it; and the raised rates are the tables' figures, not more."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.measured.kernel_rows import (
    collective_ceiling,
    collective_roofline_s,
    kernel_roofline_s,
    measured_ceilings,
    part_rows,
)
from inference_econ.model.machine import Machine
from inference_econ.specs.measured_rates import CollectiveCeiling

#: kernels/ folder -> the part's name in the catalogue.
PARTS = {"h100_sxm": "H100-SXM", "h200_sxm": "H200-SXM", "b200_sxm": "B200", "gb200": "GB200"}
#: A charge may match its binding row up to the float error of a different order of operations.
SLACK = 1e-9
#: The rounding of benchmarks/kernel_ceilings.py: five significant digits.
ROUNDING = 1e-4


@pytest.fixture(scope="module", params=sorted(PARTS))
def part(request):
    folder = request.param
    return folder, ie.load_hardware(PARTS[folder]), part_rows(folder)


def test_no_kernel_row_beats_the_refined_roofline(part):
    folder, gpu, (kernels, _) = part
    refined = ie.preset("refined")
    classes = {(rows.op, rows.fmt) for rows in kernels}
    assert {("gemm", "bfloat16"), ("gemm", "fp8"), ("moe", "bfloat16")} <= classes
    assert {("generation_attention", "fp8"), ("context_attention", "bfloat16")} <= classes
    assert ("passes", "") in classes or folder in ("b200_sxm", "gb200")
    for rows in kernels:
        roof = kernel_roofline_s(gpu, rows, refined)
        slower = roof > rows.seconds * (1.0 + SLACK)
        assert not slower.any(), (rows.op, rows.fmt, int(slower.sum()), len(roof))


def test_no_collective_beats_the_refined_roofline(part):
    folder, gpu, (_, collectives) = part
    machine = Machine.build(gpu, 16, ie.preset("refined"))
    ops = {rows.op for rows in collectives}
    assert ops == {"custom_allreduce", "all_reduce", "all_gather", "reduce_scatter", "alltoall"}
    for rows in collectives:
        roof = collective_roofline_s(machine, rows)
        slower = roof > rows.seconds * (1.0 + SLACK)
        assert not slower.any(), (rows.op, rows.fmt, int(slower.sum()), len(roof))


def test_the_hardware_files_hold_the_tables_best_figures(part):
    folder, gpu, _ = part
    written, exact = gpu.kernel_ceilings, measured_ceilings(gpu, folder)
    for field in ("gemm_flop_per_s", "attention_flop_per_s"):
        mine, theirs = dict(getattr(written, field)), dict(getattr(exact, field))
        assert set(mine) == set(theirs), field
        for bits, rate in theirs.items():  # rounded up, never down
            assert rate <= mine[bits] <= rate * (1 + ROUNDING), (field, bits)
    for field in ("hbm_bytes_per_s", "l2_bytes_per_s"):
        assert (
            getattr(exact, field)
            <= getattr(written, field)
            <= getattr(exact, field) * (1 + ROUNDING)
        ), field
    for field in ("custom_allreduce", "nccl"):
        mine, theirs = getattr(written, field), getattr(exact, field)
        assert theirs.latency_s * (1 - ROUNDING) <= mine.latency_s <= theirs.latency_s, field
        assert theirs.bus_bytes_per_s <= mine.bus_bytes_per_s
        assert mine.bus_bytes_per_s <= theirs.bus_bytes_per_s * (1 + ROUNDING), field


def test_the_h100_figures_as_the_tables_give_them():
    """Published figures, by hand from the tables: the fused MoE's BF16 rate (16,384 tokens,
    top 22 of 512 experts of 8,192 x 5,120, 4-way expert parallel, 21.481 ms) and the
    custom all-reduce's fastest call (2 GPUs, 2.6 us)."""
    c = ie.load_hardware("H100-SXM").kernel_ceilings
    moe = 6 * 16384 * 22 * 8192 * 5120 / 4 / 21.48131e-3
    assert c.gemm(16) == pytest.approx(moe, rel=ROUNDING)
    assert 2.6e-6 < c.custom_allreduce.latency_s < 2.65e-6
    # the paper's part derives from the H100 SXM and keeps its figures (as it keeps STREAM's)
    assert ie.load_hardware("H100-paper").kernel_ceilings == c


def test_the_collective_ceiling_is_the_fastest_line_under_every_call():
    """Hand-made calls: 4 us at 0 bytes, 5 us at 1 MB, 12 us at 8 MB of bus bytes: the best
    bandwidth above the 4 us floor is 1 MB/us; its line leaves 4 us of latency."""
    ceiling = collective_ceiling(np.array([0.0, 1e6, 8e6]), np.array([4e-6, 5e-6, 12e-6]))
    assert ceiling.bus_bytes_per_s == pytest.approx(1e12)
    assert ceiling.latency_s == pytest.approx(4e-6)
    assert ceiling == dataclasses.replace(ceiling)
    assert CollectiveCeiling() == CollectiveCeiling(0.0, 0.0)


def test_the_paper_preset_reads_no_kernel_table():
    gpu = ie.load_hardware("H100-SXM")
    bare = dataclasses.replace(gpu, kernel_ceilings=None, l2_cache_bytes=0.0)
    paper = ie.preset("paper")
    for bits in (16, 8, 4):
        without = dataclasses.replace(Machine.build(bare, bits, paper), gpu=gpu)
        assert Machine.build(gpu, bits, paper) == without
    machine = Machine.build(gpu, 16, paper)
    assert machine.flop_per_s == pytest.approx(0.7 * 989.4e12)
    assert machine.hbm_bandwidth_bytes_per_s == pytest.approx(0.75 * 3.35e12)


def test_refined_rates_rise_to_the_tables_and_no_further():
    """H200: BF16 GEMMs at the fused MoE's best (above 0.7 of the peak), FP8 attention stays
    at 0.7 of the FP8 peak (no kernel beat it), HBM at the best decode attention's bytes/s
    (above STREAM's 0.933), a 2-GPU all-reduce of 64 KB at the custom kernel's line."""
    gpu = ie.load_hardware("H200-SXM")
    c = gpu.kernel_ceilings
    refined = ie.preset("refined")
    machine = Machine.build(gpu, 16, refined, attention_bits=8)
    assert machine.flop_per_s == c.gemm(16) > 0.7 * 989.4e12
    assert machine.attention_flop_per_s == pytest.approx(0.7 * 1978.9e12)
    assert machine.hbm_bandwidth_bytes_per_s == c.hbm_bytes_per_s > 0.933 * 4.8e12
    off = Machine.build(gpu, 16, refined.replace(measured_kernel_rates=False), attention_bits=8)
    assert off.flop_per_s == pytest.approx(0.7 * 989.4e12)
    custom = c.custom_allreduce
    expected = custom.latency_s + 65536 * 2 * (2 - 1) / 2 / custom.bus_bytes_per_s
    assert machine.collective(2.0, 1.0).time(65536.0) == pytest.approx(expected)
    assert off.collective(2.0, 1.0).time(65536.0) > 2 * expected
    # across nodes the measured protocols do not apply
    across = machine.collective(16.0, 2.0).time(65536.0)
    assert across == off.collective(16.0, 2.0).time(65536.0)
