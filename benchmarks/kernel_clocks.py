"""The model's two clocks of one kernel against the measured kernel: the roofline charge (the
``refined`` preset) and the engine charge (``achievable``, TensorRT-LLM's profile) of each row
of the shipped AIConfigurator tables (kernels/README.md), over its measured time.

For each GPU (H100, H200, B200, GB200) and format it prints, per op class, the number of rows,
the median, 10th and 90th percentiles of roofline / measured, the share of rows where the
roofline is slower than the kernel (a bound the kernel beats), and the same percentiles of
engine / measured. The classes and how each is charged:

* GEMM, ``m`` <= 64 ("decode") and ``m`` >= 1,024 ("prefill"): roofline, the larger of
  2·m·n·k over the preset's sustained rate at the format's bits and the weights (n·k at the
  format's bytes) plus BF16 activations in and out (2·m·(k + n)) over its streaming bandwidth
  (``Machine.build``); engine, ``EngineStep.gemm``'s ideal seconds (tokens padded to the
  profile's tile) charged by ``efficiency.combine`` as one dense kernel: the larger of its
  memory and arithmetic sides plus its fixed cost (its StepTimes' GEMM parts).
* generation attention, one decode step of ``batch_size`` caches of ``isl + step`` positions
  (capped at ``window_size`` where it is set): K and V bytes at the cache format over the
  bandwidth against 4·heads·head_dim FLOP a position (roofline), and ``combine``'s KV read and
  attention arithmetic with the profile's per-request positions (engine).
* context attention, a causal prompt of ``isl`` tokens: 4·heads·head_dim FLOP for each position
  a token attends to (the mean over the prompt), Q, K, V and the output in BF16 as bytes; the
  same two charges, at 8 bits where ``attn_dtype`` is fp8.
* custom all-reduce (<= 64 KB and larger, BF16 elements) and NCCL all-reduce (``half``): the
  roofline's and the engine's collective cost on one node of ``num_gpus`` ranks
  (``Machine.collective``: every protocol, the fastest per message; for the NCCL table the
  engine's library protocols alone), latency plus bandwidth, the engine's times its
  ``step_time_scale``.

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
from inference_econ.model.achievable import EngineStep  # noqa: E402
from inference_econ.model.collectives import ALLREDUCE, CollectiveCost  # noqa: E402
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
#: GEMM format -> (bits the model charges it at, bytes a weight: NVFP4 with an FP8 scale a 16).
GEMM_FORMATS = {
    "bfloat16": (16, 2.0),
    "fp8": (8, 1.0),
    "fp8_block": (8, 1.0),
    "nvfp4": (4, 0.5 + 1.0 / 16.0),
}
KV_BYTES = {"bfloat16": 2.0, "fp8": 1.0}
ATTENTION_BITS = {"bfloat16": 16, "fp8": 8}
SMALL_MESSAGE = 64 * 1024  # bytes


@dataclasses.dataclass(frozen=True)
class Clocks:
    """The roofline and engine machines of one part at one GEMM format."""

    roofline: Machine
    engine: Machine
    profile: object

    @classmethod
    def of(cls, gpu, bits: float, attention_bits: float | None = None) -> Clocks:
        engine = ie.preset("achievable")
        return cls(
            Machine.build(gpu, bits, ie.preset("refined"), attention_bits=attention_bits),
            Machine.build(gpu, bits, engine, attention_bits=attention_bits),
            engine.profile(),
        )

    def work(self, **seconds) -> StepWork:
        """A StepWork of the given ideal seconds and nothing else (no layers, no sequences)."""
        m = self.engine
        values = dict.fromkeys((f.name for f in dataclasses.fields(StepWork)), 0.0)
        values.update(expert_imbalance=1.0, expert_size=1.0, moe_share=m.moe_plateau_share)
        values.update(power_derating=m.gemm_power_derating)
        values.update(small_batch_fixed_s=m.small_batch_fixed_s)
        values.update(small_batch_stream_share=m.small_batch_stream_share)
        values.update(seconds)
        return StepWork(**values)


def gemm_charges(clocks: Clocks, per_weight: float, m, n, k):
    """(roofline, engine) seconds of GEMMs of ``m`` tokens, ``n`` outputs, ``k`` inputs."""
    roof, eng = clocks.roofline, clocks.engine
    flop = 2.0 * m * n * k
    nbytes = n * k * per_weight + 2.0 * m * (k + n)
    roofline = np.maximum(flop / roof.flop_per_s, nbytes / roof.hbm_bandwidth_bytes_per_s)
    # EngineStep is built from a whole Workload; its gemm reads only the tile and the machine
    shape = SimpleNamespace(tile=float(clocks.profile.gemm_tile_tokens), machine=eng)
    seconds, volume = EngineStep.gemm(shape, n * k, m, n * k, 1.0)
    bw = eng.gpu.hbm_bandwidth_bytes_per_s
    work = clocks.work(
        weight_read_s=n * k * per_weight / bw,
        activation_read_s=2.0 * m * (k + n) / bw,
        dense_gemm_s=seconds,
        dense_volume=volume,
        dense_kernels=1.0,
    )
    times = combine(work, clocks.profile)
    return roofline, np.maximum(times.gemm_memory_s, times.gemm_compute_s) + times.gemm_fixed_s


def attention_charges(clocks: Clocks, nbytes, request_bytes, flop):
    """(roofline, engine) seconds of attention moving ``nbytes`` and doing ``flop``;
    ``request_bytes``: one cached position of each request (the engine's per-request cost)."""
    roof, eng = clocks.roofline, clocks.engine
    roofline = np.maximum(nbytes / roof.hbm_bandwidth_bytes_per_s, flop / roof.attention_flop_per_s)
    bw = eng.gpu.hbm_bandwidth_bytes_per_s
    work = clocks.work(
        kv_read_s=nbytes / bw,
        kv_request_read_s=request_bytes / bw,
        attention_s=flop / eng.attention_flop_per_s,
    )
    times = combine(work, clocks.profile)
    return roofline, np.maximum(times.kv_s, times.attention_compute_s)


def generation_attention(t, gpu):
    """{kv format: (roofline, engine, measured seconds)} of a generation attention table."""
    positions = (t["isl"] + t["step"]).astype(float)
    positions = np.where(t["window_size"] > 0, np.minimum(positions, t["window_size"]), positions)
    b, h, d = t["batch_size"] * 1.0, t["num_heads"] * 1.0, t["head_dim"] * 1.0
    out = {}
    clocks = Clocks.of(gpu, 16)
    for fmt, width in KV_BYTES.items():
        at = t["kv_cache_dtype"] == fmt
        per_position = 2.0 * t["num_key_value_heads"][at] * d[at] * width  # K and V
        roof, eng = attention_charges(
            clocks,
            b[at] * positions[at] * per_position,
            b[at] * per_position,
            4.0 * b[at] * h[at] * d[at] * positions[at],
        )
        out[fmt] = (roof, eng, t["latency_ms"][at] * 1e-3)
    return out


def context_attention(t, gpu):
    """{attention format: (roofline, engine, measured seconds)} of a context attention table."""
    n = t["isl"] * 1.0
    w = np.where(t["window_size"] > 0, t["window_size"], t["isl"]) * 1.0
    # mean over a causal prompt of the positions a token attends to, min(position, window)
    attended = np.where(n <= w, (n + 1.0) / 2.0, (w * (w + 1.0) / 2.0 + (n - w) * w) / n)
    b, h, d = t["batch_size"] * 1.0, t["num_heads"] * 1.0, t["head_dim"] * 1.0
    out = {}
    for fmt, bits in ATTENTION_BITS.items():
        at = t["attn_dtype"] == fmt
        nbytes = 2.0 * b[at] * n[at] * d[at] * (2.0 * h[at] + 2.0 * t["num_key_value_heads"][at])
        flop = 4.0 * b[at] * h[at] * d[at] * n[at] * attended[at]
        roof, eng = attention_charges(Clocks.of(gpu, 16, bits), nbytes, 0.0, flop)
        out[fmt] = (roof, eng, t["latency_ms"][at] * 1e-3)
    return out


def allreduce_charges(clocks: Clocks, ranks, nbytes, library_only: bool):
    """(roofline, engine) seconds of all-reduces of ``nbytes`` over ``ranks`` GPUs of a node."""
    roofline = np.empty_like(nbytes)
    engine = np.empty_like(nbytes)
    for r in np.unique(ranks):
        at = ranks == r
        lat, bw, _ = clocks.roofline.collective(float(r), 1.0).terms(nbytes[at])
        roofline[at] = lat + bw
        eng = clocks.engine
        cost = eng.collective(float(r), 1.0)
        if library_only:
            protocols = tuple(p for p in eng.protocols if not p.custom)
            cost = CollectiveCost(float(r), 1.0, eng.gpu, ALLREDUCE, protocols, eng.latency_scale)
        lat, bw, _ = cost.terms(nbytes[at])
        engine[at] = (lat + bw) * clocks.profile.step_time_scale
    return roofline, engine


def rows_of(folder: str, gpu):
    """(class, format, roofline, engine, measured seconds) of every class of one part."""
    gemm = kernel_table(folder, "gemm")
    for fmt, (bits, per_weight) in GEMM_FORMATS.items():
        at = gemm["gemm_dtype"] == fmt
        if not at.any():
            continue
        m, n, k = (gemm[c][at] * 1.0 for c in ("m", "n", "k"))
        roof, eng = gemm_charges(Clocks.of(gpu, bits), per_weight, m, n, k)
        measured = gemm["latency_ms"][at] * 1e-3
        for label, keep in (("GEMM m<=64", m <= 64), ("GEMM m>=1024", m >= 1024)):
            yield label, fmt, roof[keep], eng[keep], measured[keep]
    for fmt, charges in generation_attention(
        kernel_table(folder, "generation_attention"), gpu
    ).items():
        yield "gen attention", f"kv {fmt}", *charges
    for fmt, charges in context_attention(kernel_table(folder, "context_attention"), gpu).items():
        yield "ctx attention", fmt, *charges
    clocks = Clocks.of(gpu, 16)
    custom = kernel_table(folder, "custom_allreduce")
    nbytes = custom["message_elements"] * 2.0  # bfloat16
    roof, eng = allreduce_charges(clocks, custom["num_gpus"], nbytes, library_only=False)
    measured = custom["latency_ms"] * 1e-3
    small = nbytes <= SMALL_MESSAGE
    yield "custom AR <=64KB", "bfloat16", roof[small], eng[small], measured[small]
    yield "custom AR >64KB", "bfloat16", roof[~small], eng[~small], measured[~small]
    nccl = kernel_table(folder, "nccl", "nccl-2.29.2")
    at = (nccl["op_name"] == "all_reduce") & (nccl["nccl_dtype"] == "half")
    nbytes = nccl["message_elements"][at] * 2.0
    roof, eng = allreduce_charges(clocks, nccl["num_gpus"][at], nbytes, library_only=True)
    yield "NCCL all-reduce", "half", roof, eng, nccl["latency_ms"][at] * 1e-3


def spread(ratio) -> str:
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
        f"{'gpu':9s} {'class':17s} {'format':10s} {'rows':>6s}  "
        f"{'roofline/measured':>21s} {'roof>meas':>9s}  {'engine/measured':>21s}"
    )
    print(f"{'':46s}{'median    p10    p90':>21s} {'':9s}  {'median    p10    p90':>21s}")
    for folder, name in GPUS.items():
        gpu = ie.load_hardware(name)
        for label, fmt, roof, eng, measured in rows_of(folder, gpu):
            if not len(measured):
                continue
            slower = float(np.mean(roof > measured))
            print(
                f"{folder:9s} {label:17s} {fmt:10s} {len(measured):6d}  "
                f"{spread(roof / measured)} {slower:9.1%}  {spread(eng / measured)}"
            )
    print_engine_clock()
    print(f"CPU {time.process_time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
