"""The model's two clocks of one kernel against the measured kernel: the roofline charge (the
``refined`` preset) and the engine charge (``achievable``, TensorRT-LLM's profile) of each row
of the shipped AIConfigurator tables (kernels/README.md), over its measured time.

For each GPU with tables (H100, H200, B200, GB200, B300, GB300) and format it prints, per op
class, the number of rows, the median, 10th and 90th percentiles of roofline / measured, the share of rows where the
roofline is slower than the kernel (a bound the kernel beats: 0 % everywhere, as
tests/test_roofline_bound.py holds it), and the same percentiles of engine / measured.

The roofline side is the model's own (docs/model.md §B15): each row's work as
``inference_econ.measured.kernel_rows`` counts it, charged by ``Machine.kernel_s`` and
``Machine.collective`` (``kernel_roofline_s``, ``collective_roofline_s``). The engine side:

* GEMM, ``m`` <= 64 ("decode"), 64 < ``m`` < 1,024 (a large batch's decode, an attention-DP
  rank's) and ``m`` >= 1,024 ("prefill"): ``EngineStep.gemm``'s ideal
  seconds (tokens padded to the profile's tile) charged by ``efficiency.combine`` as one dense
  kernel: the larger of its memory and arithmetic sides plus its fixed cost.
* generation and context attention (by the KV cache's format, the rate the model charges
  attention at): ``combine``'s KV read and attention arithmetic, with the profile's
  per-request positions in decode.
* the fused MoE: no engine charge here (its fitted term is a whole layer's, §F7): "-".
* custom all-reduce (<= 64 KB and larger, BF16 elements) and NCCL's all-reduce, all-gather,
  reduce-scatter and all-to-all: the engine's collective cost on one node of ``num_gpus`` ranks
  (for the NCCL table its library protocols alone), times its ``step_time_scale``.

Then the engine clock (``model/kernel_prices.py``) per op class, GPU and variant, scored two
honest ways: its interpolation with every other grid value of one axis left out of the table
(GEMM's ``n``, generation attention's positions, context attention's and MoE's and the passes'
tokens, the collectives' bytes) and priced from the rest, and its physics form with the
parameters fitted to the other GPUs' tables only (what a GPU without tables gets); and, for
the classes whose tables hold groups (attention's heads, head size and window; the
collectives' ranks; MoE's widths, experts and split), every other group left out and priced
from the nearest remaining group scaled by the physics: median, 10th and 90th percentiles of
price / measured over the left-out rows (over every row for the physics).

Neither charge is a prediction of a table row: a step's time takes one maximum over its
kernels, not one a kernel, and adds the launch and host overheads this leaves out.

    PYTHONPATH=. python benchmarks/kernel_clocks.py
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import inference_econ as ie  # noqa: E402
from inference_econ.measured.kernel_rows import (  # noqa: E402
    GEMM_FORMATS,
    collective_roofline_s,
    kernel_roofline_s,
    part_rows,
)
from inference_econ.model.achievable import EngineStep  # noqa: E402
from inference_econ.model.efficiency import StepWork, combine  # noqa: E402
from inference_econ.model.kernel_fit import FIT_DISTRIBUTION, fit_all  # noqa: E402
from inference_econ.model.kernel_physics import Sheet, physics_s  # noqa: E402
from inference_econ.model.kernel_prices import AXES, Clock, table_rows, table_variants  # noqa: E402
from inference_econ.model.machine import Machine  # noqa: E402
from inference_econ.specs.kernel_tables import KERNEL_FOLDERS, kernel_table  # noqa: E402

#: kernels/ folder -> the catalogue's part.
GPUS = {folder: name for name, folder in KERNEL_FOLDERS.items()}
#: Op class -> (the axis every other value of which is left out, its variants).
HELD_OUT = {
    "gemm": ("n", ("bfloat16", "fp8", "fp8_block", "nvfp4")),
    "generation_attention": ("positions", ("bfloat16", "fp8")),
    "context_attention": ("tokens", ("bfloat16", "fp8")),
    "allreduce": ("nbytes", ("custom",)),
    "collective": ("nbytes", ("all_reduce", "all_gather", "reduce_scatter", "alltoall")),
    "moe": ("tokens", ("bfloat16", "fp8", "fp8_block", "nvfp4", "w4a16_mxfp4", "w4a8_mxfp4_mxfp8")),
    "pass": ("tokens", ("add_rmsnorm", "silu_mul", "rope", "sample_greedy")),
}
KV_BYTES = {"bfloat16": 2.0, "fp8": 1.0}
KV_BITS = {"bfloat16": 16, "fp8": 8}
SMALL_MESSAGE = 64 * 1024  # bytes
NCCL_LABELS = {
    "all_reduce": "NCCL all-reduce",
    "all_gather": "NCCL all-gather",
    "reduce_scatter": "NCCL reduce-scat",
    "alltoall": "NCCL all-to-all",
}


@dataclasses.dataclass(frozen=True)
class Engine:
    """The engine machine of one part at one GEMM format, and its profile."""

    machine: Machine
    profile: object

    @classmethod
    def of(cls, gpu, bits: float, attention_bits: float | None = None) -> Engine:
        engine = ie.preset("achievable")
        machine = Machine.build(gpu, bits, engine, attention_bits=attention_bits)
        return cls(machine, engine.profile())

    def work(self, **seconds) -> StepWork:
        """A StepWork of the given ideal seconds and nothing else (no layers, no sequences)."""
        m = self.machine
        values = dict.fromkeys((f.name for f in dataclasses.fields(StepWork)), 0.0)
        values.update(expert_imbalance=1.0, expert_size=1.0, moe_share=m.moe_plateau_share)
        values.update(power_derating=m.gemm_power_derating)
        values.update(small_batch_fixed_s=m.small_batch_fixed_s)
        values.update(small_batch_stream_share=m.small_batch_stream_share)
        values.update(seconds)
        return StepWork(**values)


def gemm_engine(engine: Engine, per_weight: float, m, n, k):
    """The engine's seconds of GEMMs of ``m`` tokens, ``n`` outputs, ``k`` inputs."""
    eng = engine.machine
    # EngineStep is built from a whole Workload; its gemm reads only the tile and the machine
    shape = SimpleNamespace(tile=float(engine.profile.gemm_tile_tokens), machine=eng)
    seconds, volume = EngineStep.gemm(shape, n * k, m, n * k, 1.0)
    bw = eng.gpu.hbm_bandwidth_bytes_per_s
    work = engine.work(
        weight_read_s=n * k * per_weight / bw,
        activation_read_s=2.0 * m * (k + n) / bw,
        dense_gemm_s=seconds,
        dense_volume=volume,
        dense_kernels=1.0,
    )
    times = combine(work, engine.profile)
    return np.maximum(times.gemm_memory_s, times.gemm_compute_s) + times.gemm_fixed_s


def attention_engine(engine: Engine, nbytes, request_bytes, flop):
    """The engine's seconds of attention moving ``nbytes`` and doing ``flop``;
    ``request_bytes``: one cached position of each request (the engine's per-request cost)."""
    eng = engine.machine
    bw = eng.gpu.hbm_bandwidth_bytes_per_s
    work = engine.work(
        kv_read_s=nbytes / bw,
        kv_request_read_s=request_bytes / bw,
        attention_s=flop / eng.attention_flop_per_s,
    )
    times = combine(work, engine.profile)
    return np.maximum(times.kv_s, times.attention_compute_s)


def generation_engine(t, gpu):
    """{kv format: engine seconds} of a generation attention table (``generation_rows``'
    rows, in their order)."""
    positions = (t["isl"] + t["step"]).astype(float)
    positions = np.where(t["window_size"] > 0, np.minimum(positions, t["window_size"]), positions)
    b, h, d = t["batch_size"] * 1.0, t["num_heads"] * 1.0, t["head_dim"] * 1.0
    out = {}
    engine = Engine.of(gpu, 16)
    for fmt, width in KV_BYTES.items():
        at = t["kv_cache_dtype"] == fmt
        per_position = 2.0 * t["num_key_value_heads"][at] * d[at] * width  # K and V
        out[fmt] = attention_engine(
            engine,
            b[at] * positions[at] * per_position,
            b[at] * per_position,
            4.0 * b[at] * h[at] * d[at] * positions[at],
        )
    return out


def context_engine(t, gpu, rows):
    """{kv format: engine seconds} of a context attention table: ``rows``' work (by the
    KV cache's format) at the engine's attention rate of that format."""
    out = {}
    for fmt, bits in KV_BITS.items():
        out[fmt] = attention_engine(Engine.of(gpu, 16, bits), rows[fmt].nbytes, 0.0, rows[fmt].flop)
    return out


def collective_engine(engine: Engine, rows, library_only: bool):
    """The engine's seconds of collective ``rows`` inside one node (its library's protocols
    alone for the NCCL table), times its ``step_time_scale``."""
    eng = engine.machine
    protocols = tuple(p for p in eng.protocols if not p.custom) if library_only else None
    return collective_roofline_s(eng, rows, protocols) * engine.profile.step_time_scale


def rows_of(folder: str, gpu):
    """(class, format, roofline, engine, measured seconds) of every class of one part; the
    engine's seconds are NaN where it has no charge of one kernel (the fused MoE)."""
    refined = ie.preset("refined")
    kernels, collectives = part_rows(folder)
    kernels = [r for r in kernels if not r.source]  # the engine clock prices TensorRT-LLM's
    by = {(r.op, r.fmt): r for r in kernels}
    gemm = kernel_table(folder, "gemm")
    for fmt, (bits, per_weight) in GEMM_FORMATS.items():
        if ("gemm", fmt) not in by:
            continue
        rows = by["gemm", fmt]
        at = (gemm["gemm_dtype"] == fmt) & (gemm["m"] > 0)  # as gemm_rows keeps them
        m, n, k = (gemm[c][at] * 1.0 for c in ("m", "n", "k"))
        roof = kernel_roofline_s(gpu, rows, refined)
        eng = gemm_engine(Engine.of(gpu, bits), per_weight, m, n, k)
        for label, keep in (
            ("GEMM m<=64", m <= 64),
            ("GEMM 64<m<1024", (m > 64) & (m < 1024)),
            ("GEMM m>=1024", m >= 1024),
        ):
            yield label, fmt, roof[keep], eng[keep], rows.seconds[keep]
    engine = generation_engine(kernel_table(folder, "generation_attention"), gpu)
    for fmt in KV_BYTES:
        rows = by["generation_attention", fmt]
        roof = kernel_roofline_s(gpu, rows, refined)
        yield "gen attention", f"kv {fmt}", roof, engine[fmt], rows.seconds
    context = {fmt: by["context_attention", fmt] for fmt in KV_BITS}
    engine = context_engine(kernel_table(folder, "context_attention"), gpu, context)
    for fmt, rows in context.items():
        roof = kernel_roofline_s(gpu, rows, refined)
        yield "ctx attention", f"kv {fmt}", roof, engine[fmt], rows.seconds
    for rows in kernels:
        if rows.op in ("moe", "passes"):
            label = "fused MoE" if rows.op == "moe" else "passes"
            roof = kernel_roofline_s(gpu, rows, refined)
            yield label, rows.fmt or "-", roof, np.full_like(roof, np.nan), rows.seconds
    engine = Engine.of(gpu, 16)
    roofline = Machine.build(gpu, 16, refined)
    for rows in collectives:
        roof = collective_roofline_s(roofline, rows)
        eng = collective_engine(engine, rows, library_only=rows.op != "custom_allreduce")
        if rows.op == "custom_allreduce":
            small = rows.nbytes <= SMALL_MESSAGE
            yield "custom AR <=64KB", rows.fmt, roof[small], eng[small], rows.seconds[small]
            yield "custom AR >64KB", rows.fmt, roof[~small], eng[~small], rows.seconds[~small]
        else:
            yield NCCL_LABELS[rows.op], rows.fmt, roof, eng, rows.seconds


def spread(ratio) -> str:
    if np.isnan(ratio).all():
        return f"{'-':>7s} {'-':>6s} {'-':>6s}"
    p10, p50, p90 = np.quantile(ratio, [0.1, 0.5, 0.9])
    return f"{p50:7.2f} {p10:6.2f} {p90:6.2f}"


def held_out(folder: str, sheet: Sheet, op: str, variant: str, axis: str):
    """price / measured of the rows at every other value of ``axis``, priced by a Clock built
    from the other rows."""
    rows = table_rows(folder, op, variant, FIT_DISTRIBUTION)
    values = np.unique(rows.shape[axis])
    out = np.isin(rows.shape[axis], values[1::2])
    clock = Clock(op, variant, sheet, rows.take(~out))
    left = rows.take(out)
    return clock(left.shape) / left.seconds


def held_out_groups(folder: str, sheet: Sheet, op: str, variant: str):
    """price / measured of the rows of every other measured group (heads, head size and
    window; ranks; an MoE's widths, experts and split), priced from the nearest other group
    scaled by the physics; None for a class without groups."""
    group = AXES[op][1]
    if not group:
        return None
    rows = table_rows(folder, op, variant, FIT_DISTRIBUTION)
    keys = np.stack([rows.shape[g] for g in group], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    out = np.isin(inverse.reshape(-1), np.arange(len(unique))[1::2])
    clock = Clock(op, variant, sheet, rows.take(~out))
    left = rows.take(out)
    return clock(left.shape) / left.seconds


def engine_clock_rows(folder: str, gpu):
    """(class, variant, rows, held-out interpolation ratios, held-out group ratios, other-GPU
    physics ratios)."""
    sheet = Sheet.of(gpu)
    for op, (axis, variants) in HELD_OUT.items():
        for variant in variants:
            if variant not in table_variants(folder, op):
                continue
            rows = table_rows(folder, op, variant, FIT_DISTRIBUTION)
            params = fit_all(op, variant, exclude=folder)
            physics = None
            if params is not None:
                physics = physics_s(op, variant, sheet, rows.shape, params) / rows.seconds
            table = held_out(folder, sheet, op, variant, axis)
            yield (
                op,
                variant,
                len(rows),
                table,
                held_out_groups(folder, sheet, op, variant),
                physics,
            )


def print_engine_clock() -> None:
    """The engine clock's two scores per class, GPU and variant."""
    print()
    heads = ("held-out sizes", "held-out groups", "other-GPU physics")
    print(
        f"{'gpu':9s} {'engine clock':20s} {'variant':16s} {'rows':>6s}  "
        + "  ".join(f"{h:>20s}" for h in heads)
    )
    print(f"{'':54s}" + "  ".join(f"{'median    p10    p90':>20s}" for _ in heads))
    for folder, name in GPUS.items():
        gpu = ie.load_hardware(name)
        for op, variant, count, *scores in engine_clock_rows(folder, gpu):
            cells = [spread(r) if r is not None else f"{'-':>20s}" for r in scores]
            print(f"{folder:9s} {op:20s} {variant:16s} {count:6d}  " + "  ".join(cells))


def main() -> int:
    start = time.process_time()
    print(
        f"{'gpu':9s} {'class':17s} {'format':16s} {'rows':>6s}  "
        f"{'roofline/measured':>21s} {'roof>meas':>9s}  {'engine/measured':>21s}"
    )
    print(f"{'':52s}{'median    p10    p90':>21s} {'':9s}  {'median    p10    p90':>21s}")
    for folder, name in GPUS.items():
        gpu = ie.load_hardware(name)
        for label, fmt, roof, eng, measured in rows_of(folder, gpu):
            if not len(measured):
                continue
            slower = float(np.mean(roof > measured))
            print(
                f"{folder:9s} {label:17s} {fmt:16s} {len(measured):6d}  "
                f"{spread(roof / measured)} {slower:9.1%}  {spread(eng / measured)}"
            )
    print_engine_clock()
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
