"""The ideal bound is never slower than a measured kernel (docs/model.md §B15): the ``refined``
roofline clock's charge for every row of every shipped kernel table (GEMMs of every format,
both attention tables, the fused MoE, the per-token passes, TensorRT-LLM's all-reduce and
NCCL's four collectives) is at or below its measured time, each charge from the model's own
``Machine.kernel_s`` (each op's FLOP at its own class's rate: dense GEMMs, the fused MoE's
experts, attention) and ``Machine.collective``; the hardware files' ``kernel_ceilings`` are
the tables' best figures (so they cannot drift from them), none above its datasheet peak once
a MoE row counts what the one timed GPU computes; the ``paper`` preset reads none of it; and
the raised rates are the tables' figures, not more.

Every row is checked, not a sample: the tables are read once a process (``kernel_table``'s
cache, which tests/test_kernel_tables.py fills in the same run) and the rows' work once a part
(``part_rows``), so in the suite this module costs about 0.7 s of CPU beyond those reads
(alone, about 2 s with them, 1.7 s of it the reads)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import inference_econ as ie
from inference_econ.measured.kernel_rows import (
    balanced_counts,
    collective_ceiling,
    collective_roofline_s,
    kernel_roofline_s,
    measured_ceilings,
    part_rows,
    rank_zero_routing,
)
from inference_econ.model.latency import StepModel
from inference_econ.model.machine import Machine
from inference_econ.model.workload import compile_workload
from inference_econ.specs.measured_rates import CollectiveCeiling

#: kernels/ folder -> the part's name in the catalogue.
PARTS = {
    "h100_sxm": "H100-SXM",
    "h200_sxm": "H200-SXM",
    "b200_sxm": "B200",
    "gb200": "GB200",
    "b300_sxm": "B300",
    "gb300": "GB300",
}
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
    assert ("passes", "") in classes or folder not in ("h100_sxm", "h200_sxm")
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
    for field in ("gemm_flop_per_s", "moe_flop_per_s", "attention_flop_per_s"):
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
    """Published figures, by hand from the tables: the best BF16 GEMM (vLLM 0.24.0's: m 3,329,
    n 1,536, k 51,200 in 0.5477 ms, 0.97 of the 989.4 TFLOP/s datasheet; TensorRT-LLM
    1.3.0rc20's best, m 3,328, n 2,560, k 65,536 in 1.307 ms, is 0.86); the best BF16 fused MoE
    (16,384 tokens, top 2 of 8 experts of 6,144 x 16,384, gated, 4-way expert parallel: the
    timed GPU holds experts 0 and 1, which balanced routing gives half the tokens, 8,192
    rows of 3 GEMMs, in 5.853 ms, 0.85 of it); the custom all-reduce's fastest call (2 GPUs,
    2.6 us)."""
    c = ie.load_hardware("H100-SXM").kernel_ceilings
    gemm = 2 * 3329 * 1536 * 51200 / 0.5477289e-3
    assert c.gemm(16) == pytest.approx(gemm, rel=ROUNDING)
    assert c.gemm(16) > 2 * 3328 * 2560 * 65536 / 1.307003e-3 * 1.1
    moe = 6 * 8192 * 6144 * 16384 / 5.853408e-3
    assert c.moe(16) == pytest.approx(moe, rel=ROUNDING)
    assert 2.6e-6 < c.custom_allreduce.latency_s < 2.65e-6
    # the paper's part derives from the H100 SXM and keeps its figures (as it keeps STREAM's)
    assert ie.load_hardware("H100-paper").kernel_ceilings == c


def test_the_collective_ceiling_is_the_fastest_line_under_every_call():
    """Hand-made calls: 4 us at 0 bytes, 5 us at 1 MB, 12 us at 8 MB of bus bytes: the best
    bandwidth above the 4 us floor is 1 MB/us; its line leaves 4 us of latency."""
    ceiling = collective_ceiling(
        np.array([0.0, 1e6, 8e6]), np.array([4e-6, 5e-6, 12e-6]), np.array([2.0, 4.0, 4.0])
    )
    assert ceiling.bus_bytes_per_s == pytest.approx(1e12)
    assert ceiling.latency_s == pytest.approx(4e-6)
    assert ceiling.max_ranks == 4  # measured on up to 4 GPUs: not a line for more
    assert ceiling == dataclasses.replace(ceiling)
    assert CollectiveCeiling() == CollectiveCeiling(0.0, 0.0, 0)


@pytest.mark.parametrize("nbytes", [1024.0, 64 * 1024.0, 8e6])
def test_a_measured_line_stands_as_a_floor_beyond_the_ranks_it_was_measured_on(nbytes):
    """GB200's tables measure all-reduces on 2-4 GPUs, the expected clock prices 8-72 ranks of
    one NVL72 domain from them (5.5-8.3 µs at 64 KB), and B200's, on the same NVLink
    generation, measure 8 at a 4.6 µs line: the bound keeps the 4-GPU line over more ranks
    (no faster than at 4, the ring's bytes growing as 2(R-1)/R), where the NCCL model alone
    gave 15-25 µs, slower than the operation it bounds."""
    from inference_econ.model import kernel_prices
    from inference_econ.model.machine import Machine

    gb200 = ie.load_hardware("GB200")
    assert gb200.kernel_ceilings.custom_allreduce.max_ranks == 4
    refined = Machine.build(gb200, 16, ie.preset("refined"))
    model = Machine.build(gb200, 16, ie.preset("refined").replace(measured_kernel_rates=False))
    at_four = refined.collective(4.0, 1.0).time(nbytes)
    assert at_four < model.collective(4.0, 1.0).time(nbytes)
    for ranks in (8.0, 16.0, 72.0):
        bound = refined.collective(ranks, 1.0).time(nbytes)
        assert at_four <= bound < model.collective(ranks, 1.0).time(nbytes)
        assert bound < float(kernel_prices.allreduce_s(gb200, ranks, nbytes))
    if nbytes <= 64 * 1024.0:  # the latency: 3.75 µs measured over 4, kept (NCCL's 15 at 8)
        assert refined.collective(8.0, 1.0).time(nbytes) < 0.3 * model.collective(8.0, 1.0).time(
            nbytes
        )


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
    """H200: BF16 GEMMs at the GEMM table's best and the routed experts at the fused MoE's
    (both above 0.7 of the peak, below the datasheet), FP8 attention stays
    at 0.7 of the FP8 peak (no kernel beat it), HBM at the best decode attention's bytes/s
    (above STREAM's 0.933), a 2-GPU all-reduce of 64 KB at the custom kernel's line."""
    gpu = ie.load_hardware("H200-SXM")
    c = gpu.kernel_ceilings
    refined = ie.preset("refined")
    machine = Machine.build(gpu, 16, refined, attention_bits=8)
    assert 989.4e12 > machine.flop_per_s == c.gemm(16) > 0.7 * 989.4e12
    assert 989.4e12 > machine.expert_flop_per_s == c.moe(16) > 0.7 * 989.4e12
    assert machine.kernel_s(1e12, 0.0, "expert") == 1e12 / c.moe(16)
    assert machine.attention_flop_per_s == pytest.approx(0.7 * 1978.9e12)
    assert machine.hbm_bandwidth_bytes_per_s == c.hbm_bytes_per_s > 0.933 * 4.8e12
    off = Machine.build(gpu, 16, refined.replace(measured_kernel_rates=False), attention_bits=8)
    assert off.flop_per_s == off.expert_flop_per_s == pytest.approx(0.7 * 989.4e12)
    custom = c.custom_allreduce
    expected = custom.latency_s + 65536 * 2 * (2 - 1) / 2 / custom.bus_bytes_per_s
    assert machine.collective(2.0, 1.0).time(65536.0) == pytest.approx(expected)
    assert off.collective(2.0, 1.0).time(65536.0) > 2 * expected
    # across nodes the measured protocols do not apply
    across = machine.collective(16.0, 2.0).time(65536.0)
    assert across == off.collective(16.0, 2.0).time(65536.0)


def test_no_measured_flop_ceiling_is_above_the_datasheet(part):
    """A kernel faster than its datasheet peak would mean its FLOP were overcounted: the fused
    MoE's non-gated (ReLU², two GEMMs) rows counted as three GEMMs reached 1.07-1.09 times
    the H100's and H200's BF16 peak. Counted as the timed GPU does them, every GEMM, MoE and
    attention figure is below its tensor-core rate's datasheet peak."""
    folder, gpu, _ = part
    c = gpu.kernel_ceilings
    for field in ("gemm_flop_per_s", "moe_flop_per_s", "attention_flop_per_s"):
        for bits, rate in getattr(c, field):
            assert rate < gpu.peak_flop_per_s(bits), (field, bits, rate / gpu.peak_flop_per_s(bits))


def test_the_fused_moe_rows_count_the_timed_gpus_work():
    """AIConfigurator's balanced routing by hand: 2 tokens over 8 experts, top 2 (stride 4,
    fewer tokens than the stride): token 0 takes experts 0 and 4, token 1 (0.5·4 = 2) experts
    2 and 6; 16,384 tokens top 2 of 8: 4,096 each. The timed GPU holds expert-parallel rank
    0's experts: of 8 on 4 ranks, experts 0 and 1, 8,192 rows. A power-law row has at least
    the mean (its generator makes rank 0 the most loaded), a min-latency row under expert
    parallelism (DeepSeek-V3's grouped gate) nothing known. The H100's non-gated BF16 row
    of 16,384 tokens, top 22 of 512 experts of 8,192 x 5,120 on 4 ranks (21.481 ms), two
    GEMMs a row: 0.71 of the datasheet, not the 1.07 three GEMMs made of it."""
    assert balanced_counts(2, 8, 2).tolist() == [1, 0, 1, 0, 1, 0, 1, 0]
    assert balanced_counts(16384, 8, 2).tolist() == [4096] * 8
    assert balanced_counts(16384, 512, 22).sum() == 16384 * 22
    column = np.array
    table = {
        "num_tokens": column([16384, 2, 100, 100]),
        "num_experts": column([8, 8, 256, 256]),
        "topk": column([2, 2, 8, 8]),
        "moe_ep_size": column([4, 4, 8, 8]),
        "distribution": column(["balanced", "balanced", "power_law_1.2", "balanced"]),
        "kernel_source": column(["cutlass", "cutlass", "cutlass", "moe_torch_flow_min_latency"]),
    }
    rows, experts = rank_zero_routing(table)
    assert rows.tolist() == [8192, 1, 100, 0]
    assert experts.tolist() == [2, 1, 1, 0]
    h100 = next(r for r in part_rows("h100_sxm")[0] if (r.op, r.fmt) == ("moe", "bfloat16"))
    relu2 = 4 * (16384 * 22 / 4) * 8192 * 5120 / 21.48131e-3
    assert np.isclose(h100.flop / h100.seconds, relu2, rtol=1e-9).sum() == 1
    assert relu2 == pytest.approx(0.711 * 989.4e12, rel=1e-3)


def test_the_routed_experts_alone_run_at_the_fused_moes_rate():
    """``refined``: a MoE model's step charges its routed experts' FLOP at the MoE ceiling and
    every other FLOP at the GEMM ceiling (by hand from ``Workload.routed_expert_flop``); a
    dense model has no routed FLOP, so the MoE ceiling leaves its step as it was; ``paper``
    charges one rate."""
    gpu = ie.load_hardware("H100-SXM")
    c = gpu.kernel_ceilings
    refined = ie.preset("refined").replace(precision_formats=False)
    moe = compile_workload(ie.load_model("Llama 4 Maverick"), refined)
    step = StepModel(moe, gpu, refined)
    m = step.machine
    assert (m.flop_per_s, m.expert_flop_per_s) == (c.gemm(16), c.moe(16))
    ff, ctx, _ = moe.flop(64.0, 1.0, 4096.0)
    experts = moe.routed_expert_flop(64.0, 1.0)
    assert 0 < experts == 2 * 64 * moe.routed_active_params < ff  # shared and dense FF besides
    part = step.pipeline_part(8.0, 64.0, 1.0, 4096.0, 1.0)
    expected = (ff - experts) / c.gemm(16) + experts / c.moe(16) + ctx / m.attention_flop_per_s
    assert part.ff_context_compute_s == pytest.approx(expected / 8.0, rel=1e-12)
    dense = compile_workload(ie.load_model("Llama 3 70B"), refined)
    assert dense.routed_expert_flop(64.0, 1.0) == 0.0
    one_rate = dataclasses.replace(m, expert_flop_per_s=m.flop_per_s)
    base = StepModel(dense, gpu, refined)
    part = base.pipeline_part(8.0, 64.0, 1.0, 4096.0, 1.0)
    base.machine = one_rate
    again = base.pipeline_part(8.0, 64.0, 1.0, 4096.0, 1.0).ff_context_compute_s
    assert again == pytest.approx(part.ff_context_compute_s, rel=1e-12)
    paper = Machine.build(gpu, 16, ie.preset("paper"))
    assert paper.expert_flop_per_s == paper.flop_per_s


def test_every_engines_fastest_gemms_are_read_and_empty_calls_are_not():
    """Each part's every-engine file holds rows of all three engines AIConfigurator times
    (they set the GEMM ceilings: vLLM's BF16 GEMMs run 12-26 % above TensorRT-LLM 1.3.0rc20's
    best), and a call of no tokens (``m`` 0, which TensorRT-LLM 1.2.0rc5's H100 table times
    at 0.5 us for any n and k) is no GEMM and sets no rate."""
    from inference_econ.measured.kernel_rows import (
        every_engine_gemm_rows,
        gemm_rows,
        table_gemm_rows,
    )
    from inference_econ.specs.kernel_tables import KernelTable

    for folder in PARTS:
        rows = every_engine_gemm_rows(folder)
        assert {r.source.split()[0] for r in rows} == {"TRTLLM", "VLLM", "SGLang"}, folder
        best = max(
            (r.flop / r.seconds).max() for r in rows if r.source.startswith("VLLM") and r.bits == 16
        )
        own = next(r for r in gemm_rows(folder) if r.fmt == "bfloat16")
        assert 1.11 < best / (own.flop / own.seconds).max() < 1.26, folder
    table = KernelTable(
        "hand-made",
        {},
        {
            "gemm_dtype": np.array(["bfloat16"] * 2, dtype=object),
            "m": np.array([0, 16]),
            "n": np.array([65536, 4096]),
            "k": np.array([16384, 4096]),
            "latency_ms": np.array([0.0005, 0.01]),
        },
    )
    (only,) = table_gemm_rows(table)
    assert only.size.tolist() == [16.0] and only.flop.tolist() == [2.0 * 16 * 4096 * 4096]
